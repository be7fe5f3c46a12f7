/* Worker timers: a ULT that waits with a deadline arms a timer on the
 * worker it runs on. The design (who fires, the backstop, locking) is at the
 * top of src/sched/timer.c. */
#ifndef WF_SCHED_TIMER_H
#define WF_SCHED_TIMER_H

#include <stdatomic.h>
#include <stdint.h>

#include "sched/ult.h"
#include "util/util.h"

typedef struct wf_timer wf_timer_t;

/* Called by the worker that owns the heap, with the heap locked, when the
 * deadline has passed. Returns a parker to unpark once the lock is dropped,
 * or NULL. */
typedef wf_parker_t *(*wf_timer_fn)(wf_timer_t *t);

struct wf_timer {
	uint64_t deadline; /* CLOCK_MONOTONIC ns */
	int index;         /* position in heap->v, or -1; under heap->lock */
	struct wf_timers *heap;
	wf_timer_fn fire;
};

/* A worker's timers: a binary min-heap on deadline. Only the owner adds;
 * the owner and helping idle workers fire; anyone may cancel: all under
 * the lock. */
typedef struct wf_timers {
	wf_spinlock_t lock;
	wf_timer_t **v; /* v[0] is the earliest */
	int n, cap;
	_Atomic uint64_t next; /* v[0]'s deadline, UINT64_MAX if empty */
} wf_timers_t;

struct wf_worker;

WF_HIDDEN void wf_timers_init(wf_timers_t *h);
WF_HIDDEN void wf_timers_fini(wf_timers_t *h);
/* In the child of a fork: empty (runtime/fork.c). */
WF_HIDDEN void wf_timers_forked(wf_timers_t *h);
/* Arm t on heap h, the heap of the worker the caller runs on. ENOMEM if
 * the heap cannot grow. */
WF_HIDDEN int wf_timer_add(wf_timers_t *h, wf_timer_t *t, uint64_t deadline, wf_timer_fn fire);
/* Disarm t if it has not fired. When this returns, the firing code (if any)
 * is done with t. Any thread may call it. */
WF_HIDDEN void wf_timer_cancel(wf_timer_t *t);
/* Fire h's expired timers; returns how many fired. Called by h's owner. */
WF_HIDDEN int wf_timers_poll(wf_timers_t *h, uint64_t now);
/* Idle worker w fires other workers' expired timers (trylock). */
WF_HIDDEN int wf_timers_help(struct wf_worker *w, uint64_t now);
/* The latest time idle worker w may sleep until, for the timers of workers
 * that are busy now: their earliest deadline + WF_TIMER_BACKSTOP_NS. */
#define WF_TIMER_BACKSTOP_NS 2000000ull
WF_HIDDEN uint64_t wf_timers_backstop(struct wf_worker *w);
/* h's earliest deadline, or UINT64_MAX (any thread). */
static inline uint64_t wf_timers_next(wf_timers_t *h)
{
	return atomic_load_explicit(&h->next, memory_order_acquire);
}

#endif
