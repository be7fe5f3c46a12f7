/* The scheduler's interface: workers, run queues, switching, park/unpark,
 * create/join/exit. The design is written down at the top of
 * src/sched/sched.c; the descriptor and its states in ult.h; the join
 * protocol at the top of join.c. Lower layers' state that a worker carries
 * has its own type and header (stack/stack.h, sched/timer.h,
 * sched/registry.h). */
#ifndef WF_SCHED_H
#define WF_SCHED_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

#include "context/context.h"
#include "sched/registry.h"
#include "sched/timer.h"
#include "sched/tls.h"
#include "sched/ult.h"
#include "stack/stack.h"
#include "util/bspin.h"
#include "util/fence.h"
#include "util/util.h"

#include <weft/sched.h>

/* What the next context must do with the ULT that just switched away
 * (wf_worker.prev). Done after the switch, once nobody runs on its stack. */
enum wf_after {
	WF_AFTER_NONE = 0,
	WF_AFTER_REQUEUE, /* it yielded */
	WF_AFTER_PARK,
	WF_AFTER_JOIN,
	WF_AFTER_EXIT,
	WF_AFTER_PREEMPT, /* it gave way to a ULT that outranks it (wf_resched_point);
	                     last: trace files record these numbers */
};

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

/* A FIFO that several kernel threads put to and take from, under a
 * spinlock; n is readable without it (a hint: "anything there?"). */
typedef struct {
	WF_ALIGNED_CL wf_spinlock_t lock;
	wf_fifo_t q;
	atomic_int n;
} wf_mpfifo_t;

/* A worker's scheduler (policy.c): the table and its state, published
 * together for the workers that steal from it. */
typedef struct wf_sched_block {
	const weft_sched_ops_t *ops;
	void *state; /* inside this block, cache-line aligned */
} wf_sched_block_t;

typedef struct wf_worker {
	/* Owner-only fields: touched only by the kernel thread of this worker. */
	int id;
	wf_ult_t *current;                 /* the RUNNING ULT, or NULL in the scheduler loop */
	wf_ult_t *prev;                    /* the ULT that just switched away ... */
	int prev_action;                   /* ... and what to do with it (enum wf_after) */
	wf_parker_t *prev_parker;          /* ... and for WF_AFTER_PARK, the parker to commit */
	wf_bspin_t *prev_unlock;           /* ... and the lock it held across the switch, to
	                                      release after the commit (wf_park_unlock), or NULL */
	int maint_owed;                    /* a decision's timer and poller checks were put off
	                                      until that lock is released (pick_next) */
	int prev_unlock_how;               /* how prev_unlock was taken (util/bspin.h) */
	wf_ctx_t loop_ctx;                 /* the scheduler loop: runs when no ULT can */
	const weft_sched_ops_t *sched_ops; /* the scheduler it runs (policy.c) ... */
	void *sched_state;                 /* ... and its state */
	wf_sched_block_t *sched_block;     /* ... in this allocation */
	uint32_t tick;                     /* scheduling decisions so far (fairness) */
	int resched;                /* since the last decision, the scheduler asked that the running
	                ULT give way (WEFT_SCHED_PUT_RESCHED; wf_resched_point) */
	uint64_t rng;               /* victim selection */
	void *loop_stack;           /* the loop's stack mapping: the loop moves with the worker
	                     between kernel threads (carrier.c) */
	void *loop_uc;              /* ucontext storage of loop_ctx */
	struct wf_carrier *carrier; /* the kernel thread that carries it now (carrier.c) */
	unsigned sys_next;          /* system call sections so far (carrier.c) */
	wf_registry_cache_t slots;  /* free registry slots (registry.c) */
	wf_stack_cache_t stacks;    /* freed default-size stacks (stack/stack.c) */
	long created, exited;       /* ULTs created / exited here; owner writes, wf_live reads */
	long spin_ns;               /* current idle spin budget (tune_spin) */
	uint64_t run_start;         /* thread CPU time when current started (cpuclock.c) */
	unsigned cpu_seq;           /* odd while a switch charges CPU time (cpuclock.c) */
	clockid_t cpu_clockid;      /* its carrier's CPU clock (cpuclock.c) */
	pthread_t thread;           /* its carrier's kernel thread */
	int *errno_loc;             /* its carrier's errno (sched.c, "errno") */
	void *tp;                   /* the thread pointer of the loop and of ULTs without one of
	                   their own: its carrier's (sched.c, "Thread pointers") */
	void *cur_tp;               /* the one installed now */
	uint64_t kmask;             /* the signal mask its carrier's kernel thread has, in the
	                    bits of a ULT's sig_mask (WF_KMASK_ALL: all blocked; sched.c,
	                    "Signal masks") */
	_Atomic unsigned kmask_gen; /* the wf_kmask_gen its loop's mask was taken at; written
	                               by the owner, read by wf_kmask_tighten */
	wf_tls_cache_t tls;         /* released thread control blocks (tls.c) */

	/* Counters, written by the owner, readable by anyone (relaxed):
	 * weft_worker_stats. */
	atomic_ulong n_switches, n_steals, n_parks, n_sleeps, n_handovers, n_preempts;
	_Atomic uint64_t idle_ns, sleep_ns;

	/* Read by other workers: the scheduler for thieves (under `scanning`,
	 * policy.c), its table alone for wakers choosing whom to wake. */
	WF_ALIGNED_CL _Atomic(wf_sched_block_t *) sched_pub;
	_Atomic(const weft_sched_ops_t *) sched_domain;
	atomic_uint scan_seq;                     /* odd while this worker steals (policy.c) */
	_Atomic(struct wf_sched_req *) sched_req; /* a scheduler to install (policy.c) */

	/* Inbox: ULTs that other kernel threads make ready for this worker
	 * (bound to it, or a scheduler installed here); its owner hands them
	 * to its scheduler. */
	wf_mpfifo_t inbox;

	/* Its side for the wait queues' locks biased to it (util/bspin.h,
	 * src/sync/wait.c): entered by its carrier, revoked by others. */
	WF_ALIGNED_CL wf_bspin_side_t wait_side;

	/* The system call section its ULT is in: (count << 2) | flags; the
	 * owner and the monitor CAS it (carrier.c). */
	WF_ALIGNED_CL atomic_uint sys;
	/* A preemption signal on its way to its carrier: (generation << 2) |
	 * state; its sender and a section's begin CAS it (carrier.c,
	 * "kicks"). */
	atomic_uint kick;

	/* Sleeping: the futex word an idle worker waits on. */
	WF_ALIGNED_CL atomic_int sleep_state;
	atomic_ulong preempt_n;       /* the switch count the monitor saw last a slice ago:
	                                   its preemption is for that run only (preempt.c) */
	atomic_int preempt_owed;      /* the handler found the ULT inside weft: it gives way at
	                                 its next preemption point (preempt.c, "Owed") */
	_Atomic(wf_ult_t *) sig_kick; /* a ULT running here that has a signal to take (set by
	                                 its sender, cleared once taken: sync/signal.c); the
	                                 monitor asks it again (carrier.c) */
	atomic_int in_poll;           /* it sleeps in the I/O poller (wf_poll_hooks.sleep): wake it
	                       with .kick after the CAS of sleep_state */

	/* Timers of ULTs that wait with a deadline on this worker. */
	WF_ALIGNED_CL wf_timers_t timers;
} wf_worker_t;

/* WF_RT_FORKED: this process is the child of a fork made while the runtime
 * ran (init.c, forked_child): no worker's kernel thread came along. */
enum { WF_RT_OFF = 0, WF_RT_STARTING, WF_RT_RUNNING, WF_RT_STOPPING, WF_RT_FORKED };

/* Process-wide runtime state. Written at init/shutdown; read everywhere. */
typedef struct wf_runtime {
	atomic_int state; /* WF_RT_* */
	int nworkers;
	const weft_sched_ops_t **sched_at_start; /* each worker's first scheduler */
	char *sched_spec;                        /* ... as the configuration wrote it */
	int pin;
	int migrate;       /* 0: a ULT stays on the worker that first runs it */
	int tls;           /* enum weft_tls: weft_config_t.tls, resolved */
	void *w0_tp;       /* a block for the first carrier when the root ULT keeps
	                      its kernel thread's (sched.c, "Thread pointers"); else NULL */
	long syscall_ns;   /* a section lasting longer loses its worker; <= 0: never */
	int spares;        /* most carriers besides one per worker (carrier.c) */
	int io;            /* enum weft_io_kind, resolved: POLL or OFF (src/io/poller.c) */
	long preempt_ns;   /* a ULT running longer without a decision is preempted
	                      (preempt.c); <= 0: never */
	size_t stack_size; /* the default (also the stack layer's) */
	long spin_ns;
	long guarded_max;
	wf_worker_t **workers;
	wf_ult_t *root;        /* the ULT that called weft_init */
	pthread_t root_thread; /* ... and its kernel thread */

	/* ULTs made ready by foreign threads: any worker takes them (runq.c). */
	wf_mpfifo_t global;

	WF_ALIGNED_CL atomic_int nspinning; /* workers looking for work */
	atomic_int one_domain;              /* every worker runs the same scheduler (policy.c) */
	atomic_int nsleeping;               /* workers asleep on their futex */
	atomic_long foreign_created;        /* ULTs created by foreign threads */
	atomic_int root_exited;             /* root called weft_exit */
	atomic_int cpu_clock;               /* per-ULT CPU time is being counted (cpuclock.c) */
} wf_runtime_t;

WF_HIDDEN extern wf_runtime_t wf_rt;

/* The I/O poller's hooks into the workers' loops (src/io/poller.c installs
 * them when its poller starts): workers take the poller's reports
 * themselves - a busy one now and then, an idle one before it spins, and
 * one sleeping worker blocked in the poller instead of on its futex - so
 * that a report wakes no thread but the ULT's worker, if any. */
typedef struct wf_poll_hooks {
	/* Take what is ready without blocking, unless another thread took
	 * less than gap_ns ago. From a worker's loop or its pick of the next
	 * ULT, never from a running ULT: it makes ULTs runnable on w, with
	 * wake-ups that never yield. */
	void (*poll)(uint64_t now, uint64_t gap_ns);
	/* w, announced SLEEPING and re-checked (find_work), sleeps in the
	 * poller until `until` (CLOCK_MONOTONIC ns; UINT64_MAX: none), a
	 * wake (wf_wake_worker: kick) or a report, which it takes. 1 if it
	 * did; 0 if another worker sleeps there (w sleeps on its futex). */
	int (*sleep)(wf_worker_t *w, uint64_t until);
	/* Make the worker that sleeps in the poller return from it. */
	void (*kick)(void);
} wf_poll_hooks_t;
WF_HIDDEN extern _Atomic(const wf_poll_hooks_t *) wf_poll_hooks;
/* ULTs waiting on the poller (src/io/poller.c counts them): the loops look
 * at it before they call the hooks. */
WF_HIDDEN extern atomic_int wf_poll_waiting;

/* The worker running the caller, NULL on a foreign thread, a spare
 * carrier or inside a system call section. Never inlined: a ULT can migrate
 * between kernel threads across any switch, and a compiler may not cache a
 * thread-local address across that. */
WF_HIDDEN wf_worker_t *wf_worker_self(void);
/* errno's address under the thread pointer installed now (sched.c,
 * "errno"). Never inlined, for the same reason: __errno_location is
 * declared const, so code that saves errno, may switch (a preemption, a
 * signal's handler) and restores it would otherwise write the errno of the
 * kernel thread it left - another ULT's. */
WF_HIDDEN int *wf_errno_here(void);
/* The variable itself, for code that knows no switch can intervene. */
WF_HIDDEN extern __thread wf_worker_t *wf_tls_worker __attribute__((tls_model("initial-exec")));

/* The side of the worker whose id is who - 1, for a lock that biases
 * itself to it (util/bspin.h). */
static inline wf_bspin_side_t *wf_worker_side(int who)
{
	return &wf_rt.workers[who - 1]->wait_side;
}

/* Carriers (the switching side; carrier.c has the protocol). */
/* w is carried from now on by the kernel thread calling this, whose loops
 * run on thread pointer tp (errno at errno_loc) and which has cur_tp
 * installed now; thread and clk are its pthread and CPU clock. */
WF_HIDDEN void wf_worker_carried(wf_worker_t *w, void *tp, void *cur_tp, int *errno_loc,
				 pthread_t thread, clockid_t clk);
/* The ULT that ran on w is in a section its old carrier still runs: w has
 * no current ULT any longer. Called by w's new carrier before its loop. */
WF_HIDDEN void wf_worker_takeover(wf_worker_t *w);
/* No worker runs on thread pointer tp (a carrier's) now. */
WF_HIDDEN void wf_carrier_tls_init(void *tp);
/* u, whose section outlived its worker, switches to its carrier's home
 * (home, run on home_tp), which gets u as the transfer and queues it
 * (wf_ult_requeue_detached). Returns the worker u resumes on. */
WF_HIDDEN wf_worker_t *wf_switch_home(wf_ult_t *u, wf_ctx_t *home, void *home_tp);
/* Queue u, off its stack after wf_switch_home, from a kernel thread that is
 * no worker. */
WF_HIDDEN void wf_ult_requeue_detached(wf_ult_t *u);
/* Stopping: the root ULT, running on w, leaves it for good. */
WF_HIDDEN void wf_worker_root_leaves(wf_worker_t *w);
/* Stopping: the root ULT switches to a home (run on home_tp) with transfer
 * mark and returns once the first carrier resumed it on no worker. */
WF_HIDDEN void wf_root_to_home(wf_ult_t *root, wf_ctx_t *home, void *mark, void *home_tp);
/* Stopping, the first carrier at its home: run the root ULT (thread
 * pointer tp) on this kernel thread, on no worker. Does not return. */
WF_HIDDEN _Noreturn void wf_carrier_home_to_root(wf_ult_t *root, wf_ctx_t *home, void *tp);
/* Signal masks (carrier.c): install ULT mask bits m (WF_KMASK_ALL: block
 * everything) in the calling kernel thread, which carries w, and record
 * them in w->kmask. wf_kmask_follow: self, running, changed its mask. */
#define WF_KMASK_ALL UINT64_MAX
WF_HIDDEN void wf_kmask_install(wf_worker_t *w, uint64_t m);
WF_HIDDEN void wf_kmask_follow(wf_ult_t *self);
/* Counts of live ULTs blocking each signal: m's bits gain delta (a ULT
 * made, gone, or changing its mask); reset at start. wf_kmask_idle: the
 * signals every live ULT blocks (a sleeping worker's mask). */
WF_HIDDEN void wf_kmask_reset(void);
WF_HIDDEN void wf_kmask_account(uint64_t m, long delta);
WF_HIDDEN uint64_t wf_kmask_idle(void);
/* What every live ULT but u blocks (u: a live ULT). */
WF_HIDDEN uint64_t wf_kmask_idle_but(wf_ult_t *u);
/* A ULT blocked the signals newly: if every live ULT now blocks some of
 * them, make every worker in its loop (sleeping, spinning) take the
 * mask of wf_kmask_idle before returning (bumps wf_kmask_gen; a loop
 * that sees it change takes the mask and stores it in its kmask_gen). */
WF_HIDDEN extern atomic_uint wf_kmask_gen;
WF_HIDDEN void wf_kmask_tighten(uint64_t newly);
/* Signals sent to the process that weft holds until a ULT takes one (bit
 * s-1 for signal s; sync/procsig.c has the protocol). wf_proc_repost: u
 * exits with some of them given to it and not taken - back to the process.
 * wf_sig_placing: nonzero while they are being given out (a descriptor is
 * not freed meanwhile: wf_ult_free). */
WF_HIDDEN extern _Atomic uint64_t wf_proc_pending;
WF_HIDDEN extern atomic_int wf_sig_placing;
WF_HIDDEN void wf_proc_repost(wf_ult_t *u);
WF_HIDDEN void wf_sig_placing_wait(void);
/* Does a monitor run? Then ask it to run wf_monitor_task soon. Both
 * async-signal-safe. The task is the synchronization layer's, run by the
 * monitor after every wake, asked: whether it was asked since. */
WF_HIDDEN int wf_monitor_ready(void);
WF_HIDDEN void wf_monitor_ask(void);
WF_HIDDEN extern void (*wf_monitor_task)(int asked);
/* Ask the monitor and wait (at most about a millisecond) until it ran its
 * task after the ask - so also after whatever signal its kernel thread
 * was already taking. From a ULT or foreign thread; blocks the kernel
 * thread meanwhile. */
WF_HIDDEN void wf_monitor_sync(void);
/* worker.c: pin the calling kernel thread to worker id's CPU; the first
 * carrier's affinity before and after. */
WF_HIDDEN void wf_pin_self(int id);
WF_HIDDEN void wf_save_root_affinity(void);
WF_HIDDEN void wf_restore_root_affinity(void);
/* carrier.c: w's loop ended (the runtime stops): back to its carrier's home. */
WF_HIDDEN _Noreturn void wf_carrier_loop_ended(wf_worker_t *w);

/* Switching (sched.c). Each "called only by self, running on w" and each
 * returns the worker that resumes self, which may be another. */
WF_HIDDEN void wf_after_switch(wf_worker_t *w);
/* Switch self away with an after-switch action (enum wf_after) to the next
 * ready ULT or the loop. */
WF_HIDDEN wf_worker_t *wf_block(wf_worker_t *w, wf_ult_t *self, int action);
/* Let the next ready ULT run, if there is one. */
WF_HIDDEN wf_worker_t *wf_yield_to_next(wf_worker_t *w, wf_ult_t *self);
/* Park self on `mine` and run next (which the caller owns) in its place. */
WF_HIDDEN wf_worker_t *wf_park_to(wf_worker_t *w, wf_ult_t *self, wf_parker_t *mine,
				  wf_ult_t *next);
/* End self: switch away for good (the exit is published after the switch). */
WF_HIDDEN _Noreturn void wf_exit_current(wf_worker_t *w, wf_ult_t *self);
/* End the calling ULT, whose exit handlers have run; the root ULT's exit
 * ends the process when the last ULT is gone. */
WF_HIDDEN _Noreturn void wf_exit_self(void);
/* Queue u, which the caller owns (NEW, PARKED, or RUNNING on w and
 * switching away), from worker w (NULL: a foreign thread). */
WF_HIDDEN void wf_make_runnable(wf_worker_t *w, wf_ult_t *u);
/* ULTs created and not yet exited, the root not counted. */
WF_HIDDEN long wf_live(void);
WF_HIDDEN void wf_loop_run(wf_worker_t *w);
WF_HIDDEN void wf_wake_all(void);

/* The calling ULT, or NULL on a foreign thread or in a worker's loop. */
static inline wf_ult_t *wf_self(void)
{
	wf_worker_t *w = wf_worker_self();
	return w ? w->current : NULL;
}
/* Let another ready ULT run (a foreign thread: sched_yield). Returns the
 * ULT that yielded (NULL: none). */
WF_HIDDEN wf_ult_t *wf_yield(void);

/* Shared FIFOs (runq.c). */
WF_HIDDEN void wf_mpfifo_put(wf_mpfifo_t *f, wf_ult_t *u);
WF_HIDDEN wf_ult_t *wf_mpfifo_get(wf_mpfifo_t *f);
/* Take everything queued at once: the first ULT, linked through next. */
WF_HIDDEN wf_ult_t *wf_mpfifo_take_all(wf_mpfifo_t *f);
/* In the child of a fork: empty, whatever the threads that are gone left. */
WF_HIDDEN void wf_mpfifo_forked(wf_mpfifo_t *f);
static inline int wf_mpfifo_empty(const wf_mpfifo_t *f)
{
	return atomic_load_explicit(&f->n, memory_order_relaxed) == 0;
}

/* Park/unpark (park.c). */
WF_HIDDEN void wf_park(wf_parker_t *p);
WF_HIDDEN void wf_unpark(wf_parker_t *p);
/* The calling ULT parks on p (EMPTY) while it holds l (taken as `how`),
 * which every unparker of p takes first; l is released once the ULT is
 * parked. */
WF_HIDDEN void wf_park_unlock(wf_parker_t *p, wf_bspin_t *l, int how);
/* wf_unpark for a parker that only the caller may unpark now (park.c). */
WF_HIDDEN void wf_unpark_sole(wf_parker_t *p);
WF_HIDDEN void wf_park_handoff(wf_parker_t *mine, wf_parker_t *p);
/* A foreign thread parks on p until unparked (0), until deadline_ns passes
 * (ETIMEDOUT; 0: none) or, if intr, until a signal handler ran on it
 * (EINTR). */
WF_HIDDEN int wf_park_until(wf_parker_t *p, uint64_t deadline_ns, int intr);
WF_HIDDEN wf_parker_t *wf_foreign_parker(void);

/* Workers (worker.c). */
WF_HIDDEN int wf_workers_start(void);
WF_HIDDEN void wf_workers_stop(void);
WF_HIDDEN void wf_workers_free(void);
/* Wake a sleeping worker that runs scheduler `domain` (NULL: any) so it
 * looks for work, unless a worker is spinning already. */
WF_HIDDEN void wf_wake_one_idle(const weft_sched_ops_t *domain);
WF_HIDDEN void wf_wake_worker(wf_worker_t *t);
/* In the child of a fork made by the ULT running on kept: empty every
 * worker, start the others' loops afresh (runtime/fork.c). */
WF_HIDDEN void wf_workers_forked(wf_worker_t *kept);

/* Descriptors (ult.c). */
/* Make a ULT that runs fn(arg) with attributes attr (NULL: defaults;
 * checked by the caller: a valid weft_attr_t whose worker exists), count it
 * as live and queue it; its id in *id before it can run. From then on it
 * may run, exit and (if detached) be freed at any moment. The runtime
 * runs. Returns 0, EAGAIN or ENOMEM. */
WF_HIDDEN int wf_ult_spawn(const weft_attr_t *attr, void *(*fn)(void *), void *arg, weft_t *id);
/* The descriptor of a ULT that runs on the calling kernel thread's own stack
 * (the root ULT), RUNNING and registered; or NULL (ENOMEM, EAGAIN in *e). */
WF_HIDDEN wf_ult_t *wf_ult_for_thread(int *e);
/* In the child of a fork made by kept: every other ULT is gone - ids and
 * stacks given back - and kept's ties to them cut (runtime/fork.c). */
WF_HIDDEN void wf_ults_forked(wf_ult_t *kept);
/* Give back an EXITED ULT's id and stack. w: the caller's worker, or NULL. */
static inline void wf_ult_free(wf_worker_t *w, wf_ult_t *u)
{
	wf_registry_remove(w ? &w->slots : NULL, u);
	/* No longer found; one being given a signal now is not freed under
	 * it (sync/procsig.c: the placer's side of the fence is heavy). */
	wf_fence_light();
	if (unlikely(atomic_load_explicit(&wf_sig_placing, memory_order_relaxed)))
		wf_sig_placing_wait();
	if (u->tp) {
		wf_tls_release(w ? &w->tls : NULL, u->tp);
		u->tp = NULL;
	}
	/* Its ULT is gone: the next ULT on this stack gets a fresh TSan fiber. */
	wf_ctx_forget(&u->ctx);
	wf_stack_free(w ? &w->stacks : NULL, &u->stack);
}
/* Called when a ULT's function returns and it has thread-specific data
 * (u->tsd) or a thread control block of its own (u->tp, every ULT of the
 * POSIX layer's): the destructors, after the signals still pending for
 * it (installed by the layer that owns them). */
WF_HIDDEN extern void (*wf_ult_return_hook)(wf_ult_t *u);
/* How the stack layer names a ULT in an overflow report. */
WF_HIDDEN extern const wf_stack_hooks_t wf_ult_stack_hooks;

/* Join (join.c): the whole protocol is written down there. */
/* Wait for ULT `id` to exit, store its value in *ret (if ret) and free
 * it. 0, ESRCH, EDEADLK, EINVAL (detached, or somebody else joins),
 * ECANCELED: the calling ULT is cancelled (before or while it waited; the
 * target stays joinable) and must act on it - a cancellation point - or
 * EINTR: a signal was sent to it that it does not block; the caller
 * delivers it and joins again (a join is not ended by a signal). */
WF_HIDDEN int wf_join(weft_t id, void **ret);
WF_HIDDEN int wf_detach(wf_ult_t *u);
/* Take ULT u out of a join it is blocked in, why: WF_JOIN_CANCELED
 * (weft_cancel; its wf_join returns ECANCELED) or WF_JOIN_INTERRUPTED (a
 * signal sent to it; EINTR). Returns 1 if it was taken out and queued. */
WF_HIDDEN int wf_join_take_out(wf_ult_t *u, uintptr_t why);

#endif
