/* Wait-on-address and timers: the layer every weft lock blocks through.
 * The protocol is written down at the top of src/sync/wait.c; the timers
 * at the top of src/sync/timer.c. */
#ifndef WF_SYNC_WAIT_H
#define WF_SYNC_WAIT_H

#include <stdatomic.h>
#include <stdint.h>
#include <signal.h>
#include <time.h>

#include "sched/sched.h"

/* ---- timers (timer.c) ---------------------------------------------------- */

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

/* Arm t on worker w's heap (the caller runs on w). ENOMEM if the heap
 * cannot grow. */
WF_HIDDEN int wf_timer_add(wf_worker_t *w, wf_timer_t *t, uint64_t deadline, wf_timer_fn fire);
/* Disarm t if it has not fired. When this returns, the firing code (if any)
 * is done with t. Any thread may call it. */
WF_HIDDEN void wf_timer_cancel(wf_timer_t *t);
/* Fire w's expired timers; returns how many fired. Called by w's owner. */
WF_HIDDEN int wf_timers_poll(wf_worker_t *w, uint64_t now);
/* Idle worker w fires other workers' expired timers (trylock). */
WF_HIDDEN int wf_timers_help(wf_worker_t *w, uint64_t now);
/* The latest time idle worker w may sleep until, for the timers of workers
 * that are busy now: their earliest deadline + WF_TIMER_BACKSTOP_NS. */
#define WF_TIMER_BACKSTOP_NS 2000000ull
WF_HIDDEN uint64_t wf_timers_backstop(wf_worker_t *w);
/* w's earliest deadline, or UINT64_MAX (relaxed read, any thread). */
static inline uint64_t wf_timers_next(wf_worker_t *w)
{
	return atomic_load_explicit(&w->timers.next, memory_order_acquire);
}

/* ---- deadlines ----------------------------------------------------------- */

/* Convert an absolute timespec on clock to a CLOCK_MONOTONIC deadline in ns
 * (1 if already past, never 0). EINVAL for a bad clock or timespec. */
WF_HIDDEN int wf_deadline(clockid_t clock, const struct timespec *abstime, uint64_t *out);

/* ---- wait-on-address (wait.c) -------------------------------------------- */

/* wf_wait flags: WF_WAIT_CANCEL, or'ed with WF_WAIT_FOR(reason), the enum
 * wf_block_reason a blocked ULT reports (tracing, debuggers). */
enum { WF_WAIT_CANCEL = 1 }; /* a cancellation point: ECANCELED if cancelled */
#define WF_WAIT_FOR(reason)   ((reason) << 8)
#define WF_WAIT_REASON(flags) ((flags) >> 8)

/* Block while *addr == expected, until woken, until deadline_ns (0: none)
 * passes, or (WF_WAIT_CANCEL) until the caller is cancelled.
 * Returns 0 (woken), EAGAIN (value differed), ETIMEDOUT, ECANCELED or ENOMEM
 * (timer heap full). */
WF_HIDDEN int wf_wait(const void *addr, uint32_t expected, uint64_t deadline_ns, int flags);
/* wf_wait, and *requeued says whether a wf_requeue moved the caller to
 * another address, or woke it and moved others (cond.c needs to know). */
WF_HIDDEN int wf_wait_requeued(const void *addr, uint32_t expected, uint64_t deadline_ns, int flags,
			       int *requeued);
/* Wake up to n waiters on addr, oldest first; returns how many. */
WF_HIDDEN int wf_wake(const void *addr, int n);
/* Wake up to nwake waiters on from and move up to nmove of the rest to to,
 * oldest first (cond broadcast without a stampede). Returns how many woke. */
WF_HIDDEN int wf_requeue(const void *from, int nwake, const void *to, int nmove);
/* Take ULT u out of a cancellable wait with EINTR, if it is in one (a
 * signal was sent to it). */
WF_HIDDEN void wf_wait_interrupt(wf_ult_t *u);
/* Per-ULT signals (signal.c). */
WF_HIDDEN int wf_sig_send(wf_ult_t *u, int sig);
WF_HIDDEN void wf_sig_deliver(wf_ult_t *self);
WF_HIDDEN int wf_sig_mask(wf_ult_t *self, int how, const sigset_t *set, sigset_t *old);
/* A sigset_t as weft's 64-bit mask (bit s-1 for signal s), and back. */
WF_HIDDEN uint64_t wf_sig_bits(const sigset_t *set);
WF_HIDDEN void wf_sig_fill(uint64_t mask, sigset_t *set);
/* The kernel thread becoming the root ULT keeps its signal mask. */
WF_HIDDEN void wf_sig_take_foreign(wf_ult_t *root);
/* Take ULT u out of a cancellable wait or a weft_join, if it is in one
 * (weft_cancel). */
WF_HIDDEN void wf_wait_cancel(wf_ult_t *u);
/* Take ULT u out of a weft_join it is blocked in (runtime/ult.c). */
WF_HIDDEN int wf_join_cancel(wf_ult_t *u);

/* ---- mutex internals for condition variables (mutex.c) ---------------------- */

WF_HIDDEN int wf_mutex_unlock_for_wait(weft_mutex_t *m, uint32_t *depth);
WF_HIDDEN void wf_mutex_relock(weft_mutex_t *m, uint32_t depth, int as_waiter);

/* ---- cancellation (cancel.c) ----------------------------------------------- */

/* Act on a pending cancellation of the calling ULT, if it is enabled. */
WF_HIDDEN void wf_testcancel(void);
/* Cancelled and enabled: a cancellation point must act (no return). */
WF_HIDDEN _Noreturn void wf_cancel_act(void);

/* Cleanup handlers (if run_cleanup: weft_exit, cancellation) and
 * thread-specific data destructors of an exiting ULT; runs on its stack. */
WF_HIDDEN void wf_ult_exiting(wf_ult_t *u, int run_cleanup);
/* Jump into the newest glibc-style cleanup frame of u (no return). */
WF_HIDDEN _Noreturn void wf_px_unwind(wf_ult_t *u);
WF_HIDDEN void wf_tsd_exit(struct wf_tsd **slot);
/* Move a table to the calling thread's foreign slot (weft_shutdown). */
WF_HIDDEN void wf_tsd_adopt(struct wf_tsd **slot);
/* Move the calling thread's foreign table into *slot (the new root ULT's). */
WF_HIDDEN void wf_tsd_take_foreign(struct wf_tsd **slot);

/* ---- small atomics on the public objects' plain fields ------------------------ */

#define WF_LOAD(p)     __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define WF_LOAD_RLX(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define WF_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define WF_XCHG(p, v)  __atomic_exchange_n((p), (v), __ATOMIC_ACQ_REL)
#define WF_CAS(p, e, v) \
	__atomic_compare_exchange_n((p), (e), (v), 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
#define WF_ADD(p, v) __atomic_add_fetch((p), (v), __ATOMIC_SEQ_CST)
#define WF_SUB(p, v) __atomic_sub_fetch((p), (v), __ATOMIC_SEQ_CST)
/* A counter only its lock's holder writes; others may read it. */
#define WF_BUMP(p) WF_OWNER_ADD(p, 1)

/* An internal spinlock in a public object's uint32_t (rwlock, barrier).
 * Held only for a few instructions, never across a block. */
static inline void wf_word_lock(uint32_t *l)
{
	for (;;) {
		if (!__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
			return;
		while (__atomic_load_n(l, __ATOMIC_RELAXED))
			wf_cpu_relax();
	}
}

static inline void wf_word_unlock(uint32_t *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* The caller's identity for lock ownership: the ULT id, or for a foreign
 * thread a tagged address unique to that thread. */
WF_HIDDEN uint64_t wf_self_key(void);

#endif
