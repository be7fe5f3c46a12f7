/* Workers, run queues and the scheduler's internal interface.
 * The design is written down at the top of src/sched/sched.c. */
#ifndef WF_SCHED_H
#define WF_SCHED_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

#include "context/context.h"
#include "sched/ult.h"
#include "util/util.h"

#define WF_RUNQ_SIZE   256 /* per-worker stealable ring; must be a power of two */
#define WF_SLOT_CACHE  64
#define WF_STACK_CACHE 64
#define WF_TSD_CACHE   16 /* thread-specific value tables a worker keeps */
#define WF_SEEN_MAX    64 /* victims a thief remembers (power of two) */

/* What the next context must do with the ULT that just switched away
 * (wf_worker.prev). Done after the switch, once nobody runs on its stack. */
enum wf_after { WF_AFTER_NONE = 0, WF_AFTER_REQUEUE, WF_AFTER_PARK, WF_AFTER_JOIN, WF_AFTER_EXIT };

/* Worker sleep states (wf_worker.sleep_state, a futex word). */
enum { WF_AWAKE = 0, WF_SLEEPING = 1 };

/* An intrusive FIFO of ULTs linked through wf_ult.next. */
typedef struct {
	wf_ult_t *head, *tail;
} wf_fifo_t;

static inline void wf_fifo_push(wf_fifo_t *q, wf_ult_t *u)
{
	u->next = NULL;
	if (q->tail)
		q->tail->next = u;
	else
		q->head = u;
	q->tail = u;
}

static inline wf_ult_t *wf_fifo_pop(wf_fifo_t *q)
{
	wf_ult_t *u = q->head;
	if (u) {
		q->head = u->next;
		if (!q->head)
			q->tail = NULL;
	}
	return u;
}

/* A worker's timers (src/sync/timer.c): a binary min-heap on deadline.
 * Only the owner adds and fires; anyone may cancel, so all under lock. */
typedef struct wf_timers {
	wf_spinlock_t lock;
	struct wf_timer **v; /* v[0] is the earliest */
	int n, cap;
	_Atomic uint64_t next; /* v[0]'s deadline, UINT64_MAX if empty */
} wf_timers_t;

typedef struct wf_worker {
	/* Owner-only fields: touched only by the kernel thread of this worker. */
	int id;
	wf_ult_t *current;        /* the RUNNING ULT, or NULL in the scheduler loop */
	wf_ult_t *prev;           /* the ULT that just switched away ... */
	int prev_action;          /* ... and what to do with it (enum wf_after) */
	wf_parker_t *prev_parker; /* ... and for WF_AFTER_PARK, the parker to commit */
	wf_ctx_t loop_ctx;        /* the scheduler loop: runs when no ULT can */
	wf_fifo_t local;          /* bound ULTs this worker queued itself; never stolen */
	uint32_t tick;            /* scheduling decisions so far (fairness) */
	uint64_t rng;             /* victim selection */
	void *loop_stack;         /* worker 0's loop stack mapping (others use their own) */
	size_t loop_stack_size;
	void *loop_uc;  /* ucontext storage of loop_ctx */
	void *altstack; /* signal stack for guard-page reports */
	uint32_t slot_cache[WF_SLOT_CACHE];
	int nslots;
	wf_ult_t *stack_cache[WF_STACK_CACHE]; /* freed default-size stacks */
	int nstacks;
	struct wf_tsd *tsd_cache; /* tables of exited ULTs, values all NULL (sync/tsd.c) */
	int ntsd;
	long seen_top[WF_SEEN_MAX]; /* thief: victim's top (+1) at the last scan */
	int seen_count;             /* thief: scans that saw it unchanged */
	long created, exited;       /* ULTs created / exited here; owner writes, wf_live reads */
	long spin_ns;               /* current idle spin budget (tune_spin) */
	uint64_t run_start;         /* thread CPU time when current started (cpu_clock) */
	clockid_t cpu_clockid;      /* this kernel thread's CPU clock (cpu_clock) */
	pthread_t thread;
	stack_t old_altstack;

	/* Counters, written by the owner, readable by anyone (relaxed):
	 * weft_worker_stats. */
	atomic_ulong n_switches, n_steals, n_parks, n_sleeps;
	_Atomic uint64_t idle_ns, sleep_ns;

	/* Chase-Lev deque (steal scheduler, runq.c): the owner pushes and pops
	 * at bottom, thieves take from top. */
	WF_ALIGNED_CL atomic_long top;
	WF_ALIGNED_CL atomic_long bottom;
	_Atomic(wf_ult_t *) ring[WF_RUNQ_SIZE];

	/* Inbox: ULTs bound to this worker, queued by other threads. */
	WF_ALIGNED_CL wf_spinlock_t inbox_lock;
	wf_fifo_t inbox;
	atomic_int inbox_n;

	/* Sleeping: the futex word an idle worker waits on. */
	WF_ALIGNED_CL atomic_int sleep_state;

	/* Timers of ULTs that wait with a deadline on this worker. */
	WF_ALIGNED_CL wf_timers_t timers;
} wf_worker_t;

enum { WF_RT_OFF = 0, WF_RT_STARTING, WF_RT_RUNNING, WF_RT_STOPPING };

/* Process-wide runtime state. Written at init/shutdown; read everywhere. */
typedef struct wf_runtime {
	atomic_int state; /* WF_RT_* */
	int nworkers;
	int sched; /* WEFT_SCHED_STEAL or WEFT_SCHED_SHARE */
	int pin;
	int migrate; /* 0: a ULT stays on the worker that first runs it */
	size_t stack_size;
	long spin_ns;
	long guarded_max;
	wf_worker_t **workers;
	wf_ult_t *root; /* the ULT that called weft_init */

	/* Global queue: the central ready queue of the share scheduler, and the
	 * overflow/foreign-thread queue of the steal scheduler. */
	WF_ALIGNED_CL wf_spinlock_t global_lock;
	wf_fifo_t global;
	atomic_int global_n;

	WF_ALIGNED_CL atomic_int nspinning; /* workers looking for work */
	atomic_int nsleeping;               /* workers asleep on their futex */
	atomic_long foreign_created;        /* ULTs created by foreign threads */
	atomic_int root_exited;             /* root called weft_exit */
	atomic_int cpu_clock; /* per-ULT CPU time is being counted (posix/cpuclock.c) */
} wf_runtime_t;

WF_HIDDEN extern wf_runtime_t wf_rt;

/* The worker running the caller, NULL on a foreign thread. Never inlined: a
 * ULT can migrate between kernel threads across any switch, and a compiler
 * may not cache a thread-local address across that. */
WF_HIDDEN wf_worker_t *wf_worker_self(void);
WF_HIDDEN void wf_worker_set_self(wf_worker_t *w);

/* Scheduler (sched.c). */
WF_HIDDEN void wf_after_switch(wf_worker_t *w);
WF_HIDDEN wf_worker_t *wf_block(wf_worker_t *w, wf_ult_t *self, int action);
WF_HIDDEN wf_worker_t *wf_yield_to_next(wf_worker_t *w, wf_ult_t *self);
WF_HIDDEN wf_worker_t *wf_park_to(wf_worker_t *w, wf_ult_t *self, wf_parker_t *mine,
				  wf_ult_t *next);
WF_HIDDEN _Noreturn void wf_exit_current(wf_worker_t *w, wf_ult_t *self);
WF_HIDDEN void wf_make_runnable(wf_worker_t *w, wf_ult_t *u);
WF_HIDDEN long wf_live(void);
WF_HIDDEN void wf_loop_run(wf_worker_t *w);
WF_HIDDEN void wf_wake_all(void);

/* Run queues (runq.c). */
WF_HIDDEN void wf_runq_put(wf_worker_t *w, wf_ult_t *u);
WF_HIDDEN wf_ult_t *wf_runq_get(wf_worker_t *w);
WF_HIDDEN wf_ult_t *wf_runq_steal(wf_worker_t *w, wf_worker_t *victim, int patient);
WF_HIDDEN void wf_global_put(wf_ult_t *u);
WF_HIDDEN wf_ult_t *wf_global_get(void);
WF_HIDDEN void wf_inbox_put(wf_worker_t *w, wf_ult_t *u);
WF_HIDDEN wf_ult_t *wf_inbox_get(wf_worker_t *w);

/* Park/unpark (park.c). */
WF_HIDDEN void wf_park(wf_parker_t *p);
WF_HIDDEN void wf_unpark(wf_parker_t *p);
WF_HIDDEN void wf_park_handoff(wf_parker_t *mine, wf_parker_t *p);
WF_HIDDEN int wf_park_until(wf_parker_t *p, uint64_t deadline_ns);
WF_HIDDEN wf_parker_t *wf_foreign_parker(void);

/* Per-ULT CPU time (src/posix/cpuclock.c): charge the ULT leaving w;
 * start counting (idempotent); u's CPU time so far. */
WF_HIDDEN void wf_cpu_account(wf_worker_t *w, wf_ult_t *leaving);
WF_HIDDEN void wf_cpu_clock_start(void);
WF_HIDDEN uint64_t wf_ult_cpu_ns(wf_ult_t *u);

/* Workers (worker.c). */
WF_HIDDEN int wf_workers_start(void);
WF_HIDDEN void wf_workers_stop(void);
WF_HIDDEN void wf_workers_free(void);
WF_HIDDEN void wf_wake_one_idle(void);
WF_HIDDEN void wf_wake_worker(wf_worker_t *w);

/* Stacks (stack/stack.c). */
/* guard: at least this many bytes of guard below the stack (0: weft's
 * default, one page while the guard budget lasts). */
WF_HIDDEN int wf_stack_alloc(wf_worker_t *w, size_t size, void *user_addr, size_t guard,
			     wf_ult_t **out);
WF_HIDDEN void wf_stack_free(wf_worker_t *w, wf_ult_t *u);
WF_HIDDEN void wf_stack_cache_drain(wf_worker_t *w);
WF_HIDDEN void wf_tsd_cache_drain(wf_worker_t *w);
WF_HIDDEN void wf_stack_global_drain(void);
WF_HIDDEN int wf_stack_signals_init(void);
WF_HIDDEN void wf_stack_signals_fini(void);
WF_HIDDEN int wf_stack_altstack_init(wf_worker_t *w);
WF_HIDDEN void wf_stack_altstack_fini(wf_worker_t *w);
WF_HIDDEN void wf_stack_canary_fail(wf_ult_t *u);
WF_HIDDEN size_t wf_page_size(void);

/* Registry: id <-> descriptor (runtime/registry.c). */
WF_HIDDEN int wf_registry_add(wf_worker_t *w, wf_ult_t *u);
WF_HIDDEN void wf_registry_remove(wf_worker_t *w, wf_ult_t *u);
WF_HIDDEN wf_ult_t *wf_registry_find(weft_t id);
/* The ULT in a registry slot now, or NULL (the low 22 bits of its id). */
WF_HIDDEN wf_ult_t *wf_registry_at(uint32_t slot);

/* Freeing an exited ULT: registry slot and stack (runtime/ult.c). */
WF_HIDDEN void wf_ult_free(wf_worker_t *w, wf_ult_t *u);
/* Would p, just registered as t's joiner, close a cycle of joins?
 * (runtime/ult.c; called by the JOIN commit while p->join_checking is set) */
WF_HIDDEN int wf_join_closes_cycle(wf_ult_t *p, wf_ult_t *t);
/* Take joiner p back out of t's joiner word (p -> NONE). Fails if t's exit
 * (or another taker: a canceller, the JOIN commit) got there first. */
static inline int wf_join_take_back(wf_ult_t *t, wf_ult_t *p)
{
	uintptr_t e = (uintptr_t)p;
	return atomic_compare_exchange_strong_explicit(&t->joiner, &e, WF_JOIN_NONE,
						       memory_order_seq_cst, memory_order_seq_cst);
}

static inline void wf_check_canary(wf_ult_t *u)
{
	if (likely(u->canary == WF_CANARY_NONE))
		return;
	const uint64_t *c = (const uint64_t *)u->ctx.stack_lo;
	if (u->canary == WF_CANARY_ZERO ? (c[0] | c[1] | c[2] | c[3]) != 0
					: c[0] != wf_canary_value(u))
		wf_stack_canary_fail(u);
}

#endif
