/* The scheduler: how ULTs get onto workers and off them again.
 *
 * Concepts
 *   worker   a kernel thread (glibc pthread) that runs ULTs, one per core by
 *            default. Worker 0 is the kernel thread that called weft_init
 *            (when the runtime has a root ULT, see init.c); the others are
 *            created at start-up (worker.c).
 *   ULT      a user-level thread: a descriptor and a stack (ult.h).
 *   loop     each worker's scheduler loop, a context of its own (loop_ctx)
 *            that runs only when the worker has no ULT to run: it spins,
 *            steals, and finally sleeps on a futex.
 *
 * Alternatives rejected
 *   Switching through the loop on every hand-off (QuickThreads' and seed
 *   000's structure) costs two switches per yield; the direct switch below
 *   costs one (an installed scheduler's yield still takes the loop's way,
 *   see wf_yield_to_next). Why the default run queue is a LIFO deque is in
 *   steal.c.
 *
 * Switching
 *   A ULT that stops running (yield, park, join, exit) switches *directly*
 *   to the next ULT of its worker, not through the loop: one context switch
 *   per hand-off. Only when nothing is ready does it switch to the loop.
 *
 *   The ULT that switched away is still "on its stack" until the switch
 *   completes, so it must not become visible to other workers before then -
 *   a thief could resume it while its registers are half saved. Therefore
 *   the leaving ULT does not queue itself: it records itself and an action
 *   in w->prev / w->prev_action, and the context that resumes on the same
 *   worker performs the action first thing (wf_after_switch):
 *     REQUEUE  queue it behind everything ready (yield);
 *     PARK     commit the park (on w->prev_parker, the ULT's own parker or
 *              a waiter's): CAS parker EMPTY->PARKED, or, if an unpark
 *              came in meanwhile (NOTIFIED), consume it and requeue. A
 *              wait that parks holding its queue's lock (wf_park_unlock,
 *              park.c) has no such race: a store commits, and the lock
 *              is released after it (w->prev_unlock);
 *     JOIN     register it as the joiner of its target (CAS NONE->joiner),
 *              or requeue it if the target already exited (join.c);
 *     EXIT     publish the exit to a joiner, or free a detached ULT (join.c).
 *   An exiting ULT whose joiner is registered switches straight to it.
 *   Every switch hands the worker pointer to the resumed side, so resumed
 *   code never has to trust a thread-local read cached before the switch.
 *
 *   Every path that starts a ULT running - wf_block, wf_yield_to_next,
 *   wf_park_to, wf_exit_current and the loop - ends in switch_tail, the one
 *   place that charges CPU time, records the switch, applies WEFT_MIGRATE=0
 *   (a ULT's first worker is its worker for good) and moves the ULT
 *   RUNNABLE -> RUNNING. Every other state move is checked too (WF_ULT_MOVE,
 *   ult.h).
 *
 * errno
 *   errno is a variable of the kernel thread (glibc's TLS), which every ULT
 *   of a worker shares. So each ULT keeps its own value: switch_away saves
 *   the worker's errno into the leaving ULT (saved_errno) and, once it is
 *   resumed - on whichever worker, after the after-switch action, which
 *   may make system calls - writes it back into that worker's errno; a
 *   new ULT starts with 0 (ult_entry). Two loads and two stores per
 *   switch. What this cannot fix: code that keeps errno's *address* across
 *   a call that blocks (compilers may, __errno_location being const) and
 *   then migrates writes the old worker's errno - a thread pointer of its
 *   own is the cure for that. (A ULT that has one keeps its errno there;
 *   the save and restore then touch the worker's, harmlessly.)
 *   weft's own code that keeps errno across a possible switch (the
 *   preemption handler, a signal's delivery in kill) writes it back
 *   through wf_errno_here, which finds the address afresh.
 *   Preemption makes every instruction of such a ULT a possible switch:
 *   the handler keeps the ULT on its worker (preempt.c), but a worker whose
 *   section was handed over runs on another kernel thread afterwards, so
 *   an errno or thread-local address the ULT had just computed when it was
 *   stopped names the old one's. A window of a few instructions, only with
 *   a hand-over meanwhile; storage of its own closes it.
 *
 * Thread pointers
 *   A ULT may have a thread control block of its own (tls.c; every thread
 *   of the POSIX layer has, unless WEFT_TLS=worker): its tp, which the
 *   switch tail installs whenever it runs, on whichever worker. Every other
 *   context of a worker - its loop, ULTs without one - runs on the
 *   worker's tp, its kernel thread's own. Except on worker 0 when the root
 *   ULT keeps that block for itself (WEFT_TLS=own, or a pthread program:
 *   main's thread-locals stay main's wherever it runs; init.c): worker 0
 *   then gets a block made for it (wf_workers_start). The worker pointer
 *   below is a thread-local too: the tail writes it into the block of the
 *   ULT it starts, so wf_worker_self is right under any thread pointer.
 *
 * Schedulers (policy.c)
 *   Which ready ULT a worker runs next is its scheduler's decision: a table
 *   of operations over a per-worker state (include/weft/sched.h), steal
 *   (steal.c) by default, share (share.c), or one the program installs.
 *   The core calls put when a ULT becomes ready on this worker and get at
 *   every decision, always on the owning worker; the built-in steal is
 *   called directly, any other through the table (policy.h). ULTs made
 *   ready for w by another kernel thread wait in w's inbox (bound to w) or
 *   the global queue (made ready by a foreign thread, for any worker) until
 *   w's next decision puts them (take_mail). An idle worker asks the
 *   workers running the same table for work (give).
 *
 *   A new ULT goes to its creator's worker (steal: the bottom of the
 *   deque, so a create+join runs the child next); a woken ULT goes to the
 *   waker's worker. If put says another worker could take it, and a worker
 *   of that scheduler is asleep and none is spinning, one is woken
 *   (wf_wake_one_idle); a spinning worker that finds work wakes another if
 *   it was the last spinner and more work is queued (stop_spinning), so a
 *   burst spreads over every worker.
 *
 * Idle workers (worker.c has the wake side)
 *   The loop spins looking for work (own queues, global queue, stealing) for
 *   a budget that tunes itself (tune_spin), then announces itself asleep,
 *   checks every queue once more, and waits on its futex - until its
 *   earliest timer's deadline, if it has timers (timer.c). A busy
 *   worker fires its expired timers every 16 decisions. Whoever queues
 *   work checks for sleepers after a fence, so either the sleeper sees the
 *   work or the waker sees the sleeper (the store-buffering pattern, both
 *   sides fenced). The fence is asymmetric (util/fence.h): a compiler
 *   barrier for the queuer, membarrier(2) for the worker going to sleep,
 *   which already spun for tens of microseconds.
 *
 *   While ULTs wait on the I/O poller (src/io/poller.c), the loop takes its
 *   reports through wf_poll_hooks: before it spins, while it spins, and -
 *   for one sleeping worker at a time - by sleeping in the poller instead
 *   of on its futex; a busy worker takes them in pick_next's 1-in-16 path.
 *
 * Signal masks
 *   A ULT's signal mask is its own (sync/signal.c); the switch tail and
 *   wf_after_switch give the kernel thread the mask of the ULT it starts
 *   when the two differ, and a worker about to sleep takes what every live
 *   ULT blocks, so the kernel picks the thread for a signal sent to the
 *   process among the ULTs running now, as it would among threads
 *   (carrier.c, "signal masks").
 *
 * Preemption (preempt.c) reuses the yield: its signal handler calls
 * wf_preempt_yield, a switch_away with WF_AFTER_PREEMPT from inside the
 * handler.
 */
#include "sched/carrier.h"
#include "sched/cpuclock.h"
#include "sched/join.h"
#include "sched/policy.h"
#include "sched/preempt.h"
#include "sched/prio.h"
#include "trace/trace.h"
#include "util/fence.h"
#include "util/sys.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>

wf_runtime_t wf_rt;
_Atomic(const wf_poll_hooks_t *) wf_poll_hooks;
atomic_int wf_poll_waiting;

/* How often a worker takes the poller's reports: a busy one (pick_next)
 * at most every POLL_GAP_BUSY, a spinning one every POLL_GAP_SPIN. */
#define POLL_GAP_BUSY 50000u
#define POLL_GAP_SPIN 10000u

static inline void poll_io(uint64_t now, uint64_t gap)
{
	if (unlikely(atomic_load_explicit(&wf_poll_waiting, memory_order_relaxed))) {
		const wf_poll_hooks_t *h =
			atomic_load_explicit(&wf_poll_hooks, memory_order_acquire);
		if (h)
			h->poll(now, gap);
	}
}

__thread wf_worker_t *wf_tls_worker __attribute__((tls_model("initial-exec")));

__attribute__((noinline, noipa)) wf_worker_t *wf_worker_self(void)
{
	return wf_tls_worker;
}

__attribute__((noinline, noipa)) int *wf_errno_here(void)
{
	return &errno;
}

/* wf_tls_worker's distance from a thread pointer: the same in every block
 * (static TLS). Set before any ULT has a block of its own, by every
 * carrier as it starts (the same value: relaxed atomics). */
static ptrdiff_t tls_worker_off;

static inline wf_worker_t **tls_worker_in(void *tp)
{
	return (wf_worker_t **)((char *)tp + __atomic_load_n(&tls_worker_off, __ATOMIC_RELAXED));
}

void wf_carrier_tls_init(void *tp)
{
	__atomic_store_n(&tls_worker_off, wf_tls_offset_of(&wf_tls_worker), __ATOMIC_RELAXED);
	*tls_worker_in(tp) = NULL;
}

void wf_worker_carried(wf_worker_t *w, void *tp, void *cur_tp, int *errno_loc, pthread_t thread,
		       clockid_t clk)
{
	__atomic_store_n(&w->thread, thread, __ATOMIC_RELAXED); /* read by wf_cpu_clock_start */
	w->errno_loc = errno_loc;
	w->tp = tp;
	w->cur_tp = cur_tp;
	*tls_worker_in(tp) = w;
	*tls_worker_in(cur_tp) = w;
	wf_cpu_carrier(w, clk); /* cpuclock.c: the new clock, under w's cpu_seq ... */
	wf_cpu_account_end(w);  /* ... which this closes */
}

void wf_worker_takeover(wf_worker_t *w)
{
	wf_ult_t *u = w->current;
	if (WF_TRACING())
		wf_trace_switch(w, u, NULL, WF_AFTER_NONE);
	__atomic_store_n(&w->current, NULL, __ATOMIC_RELAXED);
	w->prev = NULL;
	w->prev_action = WF_AFTER_NONE;
	w->resched = 0;
}

wf_worker_t *wf_switch_home(wf_ult_t *u, wf_ctx_t *home, void *home_tp)
{
	wf_stack_check(&u->stack);
	/* errno under the installed block: u's own, or its carrier's - where
	 * the call in the section wrote it. Not read again below: its address
	 * changes with the thread pointer. */
	u->saved_errno = errno;
	if (u->tp) {
		*tls_worker_in(u->tp) = NULL;
		wf_tls_install(home_tp);
	}
	*tls_worker_in(home_tp) = NULL;
	wf_worker_t *w = wf_ctx_switch(&u->ctx, home, u);
	wf_after_switch(w);
	*w->errno_loc = u->saved_errno;
	return w;
}

void wf_worker_root_leaves(wf_worker_t *w)
{
	__atomic_store_n(&w->current, NULL, __ATOMIC_RELAXED);
	__atomic_store_n(&w->carrier, NULL, __ATOMIC_RELEASE); /* the monitor reads it */
	*tls_worker_in(w->cur_tp) = NULL;
	*tls_worker_in(w->tp) = NULL;
}

void wf_root_to_home(wf_ult_t *root, wf_ctx_t *home, void *mark, void *home_tp)
{
	if (root->tp)
		wf_tls_install(home_tp);
	void *back = wf_ctx_switch(&root->ctx, home, mark);
	WF_ASSERT(back == NULL); /* resumed by the first carrier, on no worker */
}

void wf_carrier_home_to_root(wf_ult_t *root, wf_ctx_t *home, void *tp)
{
	if (tp != wf_tls_current())
		wf_tls_install(tp);
	*tls_worker_in(tp) = NULL;
	wf_ctx_switch(home, &root->ctx, NULL);
	wf_panic("the first carrier's home resumed after the root ULT came back to it");
}

/* Put u, now RUNNABLE, where it will run, for reason `why` (enum
 * weft_sched_why): a ULT bound to another worker, or any ULT when the
 * caller is no worker, goes to a queue that worker (or any worker, for the
 * global queue) hands to its scheduler at its next decision; any other to
 * w's own scheduler. If another worker could take it, wake an idle one. */
static inline void enqueue(wf_worker_t *w, wf_ult_t *u, int why)
{
	if (u->bound_worker >= 0 && (!w || w->id != u->bound_worker)) {
		wf_worker_t *t = wf_rt.workers[u->bound_worker];
		u->why = why;
		wf_mpfifo_put(&t->inbox, u);
		wf_wake_worker(t);
	} else if (!w) {
		u->why = why;
		wf_mpfifo_put(&wf_rt.global, u);
		wf_wake_one_idle(NULL);
	} else {
		int r = wf_policy_put(w, u, why);
		if (r) {
			if (r & WEFT_SCHED_PUT_SHARED)
				wf_wake_one_idle(w->sched_ops);
			if (r & WEFT_SCHED_PUT_RESCHED)
				wf_resched_ask(w);
		}
	}
}

void wf_ult_requeue_detached(wf_ult_t *u)
{
	WF_ULT_MOVE(u, WF_RUNNING, WF_RUNNING, WF_RUNNABLE);
	enqueue(NULL, u, WEFT_SCHED_WOKEN);
}

void wf_sched_requeue(wf_worker_t *w, wf_ult_t *u, int why)
{
	enqueue(w, u, why);
}

void wf_make_runnable(wf_worker_t *w, wf_ult_t *u)
{
	int why = u->state == WF_NEW ? WEFT_SCHED_NEW : WEFT_SCHED_WOKEN;
	WF_ULT_MOVE(u, WF_NEW, WF_PARKED, WF_RUNNABLE);
	enqueue(w, u, why);
}

/* Queue a ULT that yielded or was preempted (why), or, from wf_park_to,
 * one handed over that must wait its turn. */
static void requeue_running(wf_worker_t *w, wf_ult_t *u, int why)
{
	WF_ULT_MOVE(u, WF_PARKED, WF_RUNNING, WF_RUNNABLE);
	enqueue(w, u, why);
}

long wf_live(void)
{
	long n = atomic_load_explicit(&wf_rt.foreign_created, memory_order_acquire);
	atomic_thread_fence(memory_order_seq_cst);
	for (int i = 0; i < wf_rt.nworkers; i++) {
		wf_worker_t *w = wf_rt.workers[i];
		n += __atomic_load_n(&w->created, __ATOMIC_ACQUIRE) -
		     __atomic_load_n(&w->exited, __ATOMIC_ACQUIRE);
	}
	return n;
}

/* Hand what other kernel threads queued for w - all of its inbox, and one
 * ULT of the global queue (the other workers take their share) - to w's
 * scheduler. Called only by w's owner. */
static void take_mail(wf_worker_t *w)
{
	wf_ult_t *u = wf_mpfifo_take_all(&w->inbox);
	while (u) {
		wf_ult_t *next = u->next;
		enqueue(w, u, u->why);
		u = next;
	}
	if ((u = wf_mpfifo_get(&wf_rt.global)))
		enqueue(w, u, u->why);
}

/* A busy worker's look, once in 16 decisions, at what else may have work
 * for it: expired timers make their ULTs runnable (timer.c); an install may
 * be waiting (policy.c); descriptors may be ready for ULTs parked on the
 * poller (src/io). Called only by w's owner. */
static void maintain(wf_worker_t *w)
{
	if (unlikely(wf_timers_next(&w->timers) != UINT64_MAX))
		wf_timers_poll(&w->timers, wf_now_ns());
	wf_sched_poll(w);
	if (unlikely(atomic_load_explicit(&wf_poll_waiting, memory_order_relaxed)))
		poll_io(wf_now_ns(), POLL_GAP_BUSY);
}

/* The next ready ULT for w without waiting or stealing; NULL if none.
 * Called only by w's owner. */
static wf_ult_t *pick_next(wf_worker_t *w)
{
	uint32_t tick = ++w->tick;
	if ((tick & 15) == 0) {
		/* A ULT parking under a wait queue's lock (wf_park_unlock)
		 * still holds it, and a timer's fire function takes such
		 * locks: then the look waits for the lock's release. */
		if (unlikely(w->prev_unlock))
			w->maint_owed = 1;
		else
			maintain(w);
	}
	if (unlikely(!wf_mpfifo_empty(&w->inbox)) ||
	    (tick % 61 == 0 && unlikely(!wf_mpfifo_empty(&wf_rt.global))))
		take_mail(w);
	wf_ult_t *u = wf_policy_get(w);
	if (unlikely(!u)) {
		if (wf_mpfifo_empty(&wf_rt.global))
			return NULL;
		take_mail(w);
		if (!(u = wf_policy_get(w)))
			return NULL;
	}
	if (unlikely(u->bound_worker >= 0 && u->bound_worker != w->id)) {
		/* Bound elsewhere while it was queued (pthread_setaffinity_np), or
		 * a scheduler let it out of its worker: send it home. */
		enqueue(w, u, WEFT_SCHED_WOKEN);
		return pick_next(w);
	}
	return u;
}

/* Ask the other workers that run w's scheduler for work (its give),
 * starting at a random one. patient: the steal scheduler may take a lone
 * queued ULT at once (w is about to sleep). Called only by w's owner,
 * from its loop. */
static wf_ult_t *steal_any(wf_worker_t *w, int patient)
{
	int n = wf_rt.nworkers;
	const weft_sched_ops_t *ops = w->sched_ops;
	if (n < 2 || !ops->give)
		return NULL;
	wf_ult_t *u = NULL;
	int start = (int)(wf_rand(&w->rng) % (uint64_t)n);
	wf_sched_scan_begin(w);
	for (int i = 0; i < n && !u; i++) {
		wf_worker_t *v = wf_rt.workers[(start + i) % n];
		wf_sched_block_t *b = atomic_load_explicit(&v->sched_pub, memory_order_seq_cst);
		if (v == w || b->ops != ops)
			continue;
		if (ops == &weft_sched_steal) {
			u = wf_steal_give(b->state, w->sched_state, patient);
		} else {
			weft_sched_node_t *nd = ops->give(b->state, w->sched_state);
			u = nd ? wf_ult_of_node(nd) : NULL;
		}
		if (u) {
			atomic_fetch_add_explicit(&w->n_steals, 1, memory_order_relaxed);
			if (WF_TRACING())
				wf_trace_emit(w, WF_EV_STEAL, 0, v->id, u->id, 0);
		}
	}
	wf_sched_scan_end(w);
	if (u && unlikely(u->bound_worker >= 0 && u->bound_worker != w->id)) {
		enqueue(w, u, WEFT_SCHED_WOKEN); /* give let a bound ULT out: send it home */
		u = NULL;
	}
	return u;
}

/* Perform what the ULT that just switched away on w asked for.
 * Called only by w's owner, right after every switch. */
void wf_after_switch(wf_worker_t *w)
{
	wf_ult_t *p = w->prev;
	int action = w->prev_action;
	w->prev_action = WF_AFTER_NONE;
	w->prev = NULL;
	switch (action) {
	case WF_AFTER_NONE:
		break;
	case WF_AFTER_REQUEUE:
		requeue_running(w, p, WEFT_SCHED_YIELDED);
		break;
	case WF_AFTER_PREEMPT:
		requeue_running(w, p, WEFT_SCHED_PREEMPTED);
		break;
	case WF_AFTER_PARK: {
		wf_parker_t *pk = w->prev_parker;
		WF_ULT_MOVE(p, WF_RUNNING, WF_RUNNING, WF_PARKED);
		wf_bspin_t *l = w->prev_unlock;
		if (l) {
			/* wf_park_unlock: no unpark can come before l is free,
			 * so a store commits; the release publishes it, and p's
			 * context, to whoever takes l next. */
			w->prev_unlock = NULL;
			WF_ASSERT(atomic_load_explicit(&pk->state, memory_order_relaxed) ==
				  WF_PARK_EMPTY);
			atomic_store_explicit(&pk->state, WF_PARK_PARKED, memory_order_relaxed);
			wf_bspin_unlock(l, w->prev_unlock_how, wf_worker_side);
			if (unlikely(w->maint_owed)) {
				w->maint_owed = 0;
				maintain(w);
			}
			break;
		}
		int e = WF_PARK_EMPTY;
		if (!atomic_compare_exchange_strong_explicit(&pk->state, &e, WF_PARK_PARKED,
							     memory_order_acq_rel,
							     memory_order_acquire)) {
			/* An unpark arrived while we were switching: consume it. */
			WF_ASSERT(e == WF_PARK_NOTIFIED);
			atomic_store_explicit(&pk->state, WF_PARK_EMPTY, memory_order_relaxed);
			wf_make_runnable(w, p);
		}
		break;
	}
	case WF_AFTER_JOIN:
		wf_join_commit(w, p);
		break;
	case WF_AFTER_EXIT:
		WF_ULT_MOVE(p, WF_RUNNING, WF_RUNNING, WF_EXITED);
		/* Signals sent to the process and given to p, untaken, go back
		 * (sync/procsig.c: after EXITED, against the placer's look). */
		wf_fence_light();
		if (unlikely(atomic_load_explicit(&p->sig_placed, memory_order_relaxed)))
			wf_proc_repost(p);
		/* Counted before it is published: a joiner that sees the exit,
		 * returns and calls weft_shutdown must not find it live. A
		 * detached ULT's free may then still be under way when wf_live()
		 * reads 0: weft_shutdown drains the workers' caches only after
		 * their kernel threads ended. */
		if (p != wf_rt.root) { /* the root was not made by wf_ult_spawn */
			uint64_t m = atomic_load_explicit(&p->sig_mask, memory_order_relaxed);
			if (unlikely(m))
				wf_kmask_account(m, -1); /* "Signal masks" */
			__atomic_store_n(&w->exited, w->exited + 1, __ATOMIC_RELEASE);
		}
		wf_join_publish_exit(w, p);
		if (unlikely(atomic_load_explicit(&wf_rt.root_exited, memory_order_acquire)) &&
		    wf_live() == 0)
			exit(0); /* the root ULT called weft_exit: the last one out ends it */
		break;
	default:
		wf_panic("bad after-switch action %d", action);
	}
	/* The ULT resumed here runs with its own signal mask from now on: a
	 * signal it unblocks that waited for the process arrives here, in its
	 * context ("Signal masks"). */
	wf_ult_t *cur = w->current;
	if (cur) {
		uint64_t mask = atomic_load_explicit(&cur->sig_mask, memory_order_relaxed);
		if (unlikely(mask != w->kmask))
			wf_kmask_install(w, mask);
	}
}

/* Make tp w's thread pointer ("Thread pointers"); last before the jump:
 * from here on, the leaving side reads the next side's thread-locals. */
static inline void install_tp(wf_worker_t *w, void *tp)
{
	if (unlikely(tp != w->cur_tp)) {
		w->cur_tp = tp;
		wf_tls_install(tp);
	}
}

/* The switch tail: every switch on w - a ULT blocking, yielding, parking
 * with a hand-off or exiting, and the loop starting a ULT - ends here, just
 * before the jump. It charges the CPU time of the ULT leaving (NULL: the
 * loop), records the switch, makes next (NULL: the loop) w's current ULT
 * and moves it RUNNABLE -> RUNNING. Returns the context to jump to.
 * Called only by w's owner, with w->prev/prev_action already set. */
static inline wf_ctx_t *switch_tail(wf_worker_t *w, wf_ult_t *leaving, wf_ult_t *next)
{
	int charged = unlikely(atomic_load_explicit(&wf_rt.cpu_clock, memory_order_relaxed));
	if (charged)
		wf_cpu_account(w, leaving);
	if (WF_TRACING())
		wf_trace_switch(w, leaving, next, w->prev_action);
	/* current and last_worker are read by other kernel threads too (a
	 * ULT's CPU time, cpuclock.c): relaxed atomic stores. */
	/* "Signal masks": what next blocks is blocked before it is current;
	 * what it unblocks, once it runs (wf_after_switch). */
	if (next) {
		uint64_t mask = atomic_load_explicit(&next->sig_mask, memory_order_relaxed);
		if (unlikely(mask & ~w->kmask))
			wf_kmask_install(w, mask | w->kmask);
	}
	__atomic_store_n(&w->current, next, __ATOMIC_RELAXED);
	if (charged)
		wf_cpu_account_end(w); /* cpuclock.c: after current */
	w->resched = 0;                /* a decision was made */
	WF_OWNER_ADD(&w->n_switches, 1);
	if (!next) {
		install_tp(w, w->tp);
		return &w->loop_ctx;
	}
	/* The loop starts a ULT: the monitor must watch this worker for
	 * preemption, if it went idle (carrier.c). */
	if (!leaving)
		wf_monitor_poke();
	/* WEFT_MIGRATE=0: a ULT's first worker is its worker for good. */
	if (unlikely(next->last_worker < 0) && !wf_rt.migrate && next->bound_worker < 0)
		next->bound_worker = w->id;
	WF_ULT_MOVE(next, WF_RUNNABLE, WF_RUNNABLE, WF_RUNNING);
	__atomic_store_n(&next->last_worker, w->id, __ATOMIC_RELAXED);
	if (unlikely(next->tp != NULL))
		*tls_worker_in(next->tp) = w; /* "Thread pointers" */
	install_tp(w, next->tp ? next->tp : w->tp);
	return &next->ctx;
}

/* Switch self away to next (NULL: the loop), leaving `action` for the next
 * context; then, resumed, perform the action its predecessor left. Returns
 * the worker self resumes on. Called only by self, running on w. */
static inline wf_worker_t *switch_away(wf_worker_t *w, wf_ult_t *self, int action, wf_ult_t *next)
{
	wf_stack_check(&self->stack);
	w->prev = self;
	w->prev_action = action;
	self->saved_errno = *w->errno_loc;
	w = wf_ctx_switch(&self->ctx, switch_tail(w, self, next), w);
	wf_after_switch(w);
	*w->errno_loc = self->saved_errno;
	return w;
}

wf_worker_t *wf_preempt_yield(wf_worker_t *w, wf_ult_t *self)
{
	/* A timer that expired while self ran: its ULT is among those ready
	 * (pick_next looks at timers only once in 16 decisions). */
	if (wf_timers_next(&w->timers) != UINT64_MAX)
		wf_timers_poll(&w->timers, wf_now_ns());
	wf_ult_t *next = pick_next(w);
	if (!next)
		return NULL;
	WF_OWNER_ADD(&w->n_preempts, 1);
	return switch_away(w, self, WF_AFTER_PREEMPT, next);
}

wf_worker_t *wf_block(wf_worker_t *w, wf_ult_t *self, int action)
{
	return switch_away(w, self, action, pick_next(w));
}

/* Do w's scheduler's choices allow running a ULT made ready without asking
 * it (a hand-off, a yield to the first ready ULT)? Under steal and share,
 * whose order would choose it anyway or which trade a little fairness for
 * a switch; any other scheduler (a priority, a lottery) chooses itself. */
static inline int sched_direct(const wf_worker_t *w)
{
	return likely(w->sched_ops == &weft_sched_steal) || w->sched_ops == &weft_sched_share;
}

/* Park self (on its parker `mine`) and run next in its place: a directed
 * hand-off without the run-queue round trip. The caller owns next (it won
 * next's parker PARKED -> EMPTY, so next is off its stack and in no queue).
 * Under a scheduler that chooses itself (not sched_direct), next is put as
 * woken and the scheduler decides.
 *
 * Once in 16 decisions self blocks through the queues instead, so that two
 * ULTs handing a worker back and forth cannot starve anything: the
 * pick_next that follows is the one that polls the timers, the inbox and
 * the global queue. next is put as a yielding ULT would be (steal: the
 * worker's yield FIFO), behind whatever else is ready here; if nothing
 * is, pick_next takes it straight back. No idle worker is woken to take
 * it, which would only move the pair to another core. A next bound to
 * another worker is queued there.
 * Called only by self, running on w. */
wf_worker_t *wf_park_to(wf_worker_t *w, wf_ult_t *self, wf_parker_t *mine, wf_ult_t *next)
{
	w->prev_parker = mine;
	int elsewhere = next->bound_worker >= 0 && next->bound_worker != w->id;
	if (unlikely((w->tick & 15) == 15) || unlikely(!sched_direct(w)) || elsewhere) {
		WF_ULT_MOVE(next, WF_PARKED, WF_PARKED, WF_RUNNABLE);
		if (elsewhere || !sched_direct(w))
			enqueue(w, next, WEFT_SCHED_WOKEN);
		else
			wf_policy_put(w, next, WEFT_SCHED_YIELDED); /* no wake: we decide next */
		return wf_block(w, self, WF_AFTER_PARK);
	}
	++w->tick;
	WF_ULT_MOVE(next, WF_PARKED, WF_PARKED, WF_RUNNABLE);
	return switch_away(w, self, WF_AFTER_PARK, next);
}

/* A yield asks the scheduler to choose among every ready ULT, the yielder
 * included (a lottery may draw it again, a priority scheduler must run it
 * again if nothing as urgent waits). But the yielder may be put only once
 * it is off its stack, after the switch. So for an installed scheduler it
 * switches to the loop, whose after-switch puts it and whose next get
 * chooses: two switches. The built-in FIFO-ordered ones would only ever
 * choose the first other ready ULT, so they switch to it directly: one. */
wf_worker_t *wf_yield_to_next(wf_worker_t *w, wf_ult_t *self)
{
	if (unlikely(!sched_direct(w)))
		return switch_away(w, self, WF_AFTER_REQUEUE, NULL);
	wf_ult_t *next = pick_next(w);
	return next ? switch_away(w, self, WF_AFTER_REQUEUE, next) : w;
}

atomic_int wf_resched_used;

void wf_resched_now(void)
{
	wf_worker_t *w = wf_worker_self();
	if (!w || !w->current)
		return;
	if (w->sched_ops->tick &&
	    (w->sched_ops->tick(w->sched_state, wf_now_ns()) & WEFT_SCHED_PUT_RESCHED))
		w->resched = 1;
	if (unlikely(w->resched))
		switch_away(w, w->current, WF_AFTER_PREEMPT, NULL);
}

wf_ult_t *wf_yield(void)
{
	wf_worker_t *w = wf_worker_self();
	wf_ult_t *self = w ? w->current : NULL;
	if (self)
		wf_yield_to_next(w, self);
	else
		WF_SYS(sched_yield)();
	return self;
}

void wf_exit_current(wf_worker_t *w, wf_ult_t *self)
{
	wf_stack_check(&self->stack);
	/* A ULT blocked joining us runs right here, without a trip through a
	 * queue (join.c, "the exit hand-off") - unless the scheduler chooses
	 * itself (sched_direct): then the joiner is left to the exit's
	 * after-switch, which queues it once self is off its stack (queued
	 * now, another worker could run it and free self's stack under us). */
	wf_ult_t *next = likely(sched_direct(w)) ? wf_join_claim_joiner(w, self) : NULL;
	if (next) {
		if (WF_TRACING())
			wf_trace_emit(w, WF_EV_UNPARK, 0, 0, next->id, self->id);
		WF_ULT_MOVE(next, WF_PARKED, WF_PARKED, WF_RUNNABLE);
	} else {
		next = pick_next(w);
	}
	w->prev = self;
	w->prev_action = WF_AFTER_EXIT;
	wf_ctx_switch_final(&self->ctx, switch_tail(w, self, next), w);
}

void wf_exit_self(void)
{
	wf_worker_t *w = wf_worker_self();
	if (!w || !w->current)
		wf_panic("a thread that is not a ULT exits as one");
	if (w->current == wf_rt.root)
		atomic_store_explicit(&wf_rt.root_exited, 1, memory_order_release);
	wf_exit_current(w, w->current);
}

/* ---- the loop: spin, steal, sleep -------------------------------------- */

/* pause instructions between two scans of an idle worker (~1 us), doubled
 * after every scan that found nothing, up to SPIN_PAUSES << SPIN_BACKOFF
 * (~12 us): each scan reads the victims' deque ends, and the next push or
 * pop of their owners then waits for the cache line to come back - with a
 * scan every microsecond, about 15 ns on every create+join of a busy
 * neighbour. Work addressed to the spinner (inbox, global queue) is still
 * noticed between pauses (work_hint). */
#ifndef SPIN_PAUSES
#define SPIN_PAUSES 64
#endif
#define SPIN_BACKOFF 4
/* scans between two sched_yield() calls of a spinning worker (power of 2) */
#define SPIN_YIELD_EVERY 4

/* Work addressed to w or to everyone arrived? Two counters, read without
 * locking: cheap enough to poll between pauses, so a hand-off to a spinning
 * worker does not wait for its next full scan. Called only by w's owner. */
static inline int work_hint(wf_worker_t *w)
{
	return !wf_mpfifo_empty(&w->inbox) || !wf_mpfifo_empty(&wf_rt.global) ||
	       atomic_load_explicit(&w->sched_req, memory_order_relaxed) != NULL;
}

/* The idle spin budget tunes itself per worker. A futex wake of a sleeping
 * core costs tens of microseconds on a small VM - about as long as a fixed
 * budget - and once one side of a cross-worker hand-off sleeps, the other's
 * spin runs out too while it waits for the wake: both end up paying a wake
 * per hand-off. So: woken soon after falling asleep (within SPIN_SHORT
 * budgets), the budget was too small - double it, up to SPIN_MAX_FACTOR
 * times the configured one; slept long, the spin was wasted - halve it, down
 * to the configured budget. An idle process still spins only briefly.
 * Called only by w's owner. */
#define SPIN_SHORT      4
#define SPIN_MAX_FACTOR 40

static void tune_spin(wf_worker_t *w, uint64_t slept_ns)
{
	long base = wf_rt.spin_ns;
	if (base <= 0)
		return;
	if (slept_ns < (uint64_t)w->spin_ns * SPIN_SHORT) {
		if (w->spin_ns < base * SPIN_MAX_FACTOR)
			w->spin_ns *= 2;
	} else if (w->spin_ns > base) {
		w->spin_ns /= 2;
		if (w->spin_ns < base)
			w->spin_ns = base;
	}
}

/* Is there queued work besides what w just took that another idle worker
 * of its scheduler could take? (The global queue, and the other workers'
 * schedulers through their `empty`; read without locks, a hint.) */
static int more_work_visible(wf_worker_t *w)
{
	if (!wf_mpfifo_empty(&wf_rt.global))
		return 1;
	const weft_sched_ops_t *ops = w->sched_ops;
	if (!ops->empty)
		return 0;
	int more = 0;
	wf_sched_scan_begin(w);
	for (int i = 0; i < wf_rt.nworkers && !more; i++) {
		wf_sched_block_t *b =
			atomic_load_explicit(&wf_rt.workers[i]->sched_pub, memory_order_seq_cst);
		if (b->ops == ops)
			more = ops == &weft_sched_steal ? !wf_steal_empty(b->state)
							: !ops->empty(b->state);
	}
	wf_sched_scan_end(w);
	return more;
}

/* w stops spinning because it found work. If it was the last spinner and
 * more work is queued, wake a sleeper to take it: queuers wake nobody while
 * a worker spins (wf_wake_one_idle), so without this the rest of a burst
 * could wait on one busy worker while others sleep (Go's rule: the last
 * spinning M to find work wakes another). */
static void stop_spinning(wf_worker_t *w)
{
	if (atomic_fetch_sub_explicit(&wf_rt.nspinning, 1, memory_order_seq_cst) == 1 &&
	    more_work_visible(w))
		wf_wake_one_idle(w->sched_ops);
}

/* "Signal masks": the loop takes the mask every live ULT blocks when a
 * ULT's mask change asked for it (wf_kmask_tighten), and always before it
 * sleeps; then it says which request it answered. */
static inline void loop_mask(wf_worker_t *w, int sleeping)
{
	unsigned g = atomic_load_explicit(&wf_kmask_gen, memory_order_acquire);
	if (likely(g == atomic_load_explicit(&w->kmask_gen, memory_order_relaxed)) && !sleeping)
		return;
	uint64_t idle_mask = wf_kmask_idle();
	if (unlikely(idle_mask != w->kmask))
		wf_kmask_install(w, idle_mask);
	atomic_store_explicit(&w->kmask_gen, g, memory_order_release);
}

/* Look for work until some is found (returned) or the runtime stops (NULL).
 * Called only by w's owner, in its loop context. */
static wf_ult_t *find_work(wf_worker_t *w)
{
	for (;;) {
		loop_mask(w, 0);
		uint64_t t0 = wf_now_ns();
		wf_sched_poll(w);
		wf_timers_poll(&w->timers, t0);
		poll_io(t0, 0);
		if (wf_rt.nworkers > 1)
			wf_timers_help(w, t0);
		wf_ult_t *u = pick_next(w);
		if (u)
			return u;
		if (atomic_load_explicit(&wf_rt.state, memory_order_acquire) == WF_RT_STOPPING)
			return NULL;
		if (w->sched_ops->idle)
			w->sched_ops->idle(w->sched_state);

		/* Spin: cheap hand-offs while work keeps arriving. */
		atomic_fetch_add_explicit(&wf_rt.nspinning, 1, memory_order_seq_cst);
		uint64_t deadline = wf_now_ns() + (uint64_t)w->spin_ns;
		for (unsigned iter = 0; w->spin_ns > 0; iter++) {
			uint64_t now = wf_now_ns();
			loop_mask(w, 0);
			wf_sched_poll(w);
			wf_timers_poll(&w->timers, now);
			poll_io(now, POLL_GAP_SPIN);
			if (wf_rt.nworkers > 1)
				wf_timers_help(w, now);
			u = pick_next(w);
			if (!u)
				u = steal_any(w, 0);
			if (u) {
				stop_spinning(w);
				return u;
			}
			if (atomic_load_explicit(&wf_rt.state, memory_order_acquire) ==
			    WF_RT_STOPPING)
				break;
			if (WF_TRACING())
				wf_trace_help(); /* the flusher cannot have this CPU */
			if (wf_stack_prefill())
				continue; /* stacks for a creator (stack.c): look again at once */
			/* Back off between scans: every scan pulls the victims'
			 * queue cache lines over, slowing their owners down. */
			unsigned pauses = SPIN_PAUSES
					  << (iter < SPIN_BACKOFF ? iter : SPIN_BACKOFF);
			for (unsigned i = 0; i < pauses && !work_hint(w); i++)
				wf_cpu_relax();
			/* With more runnable kernel threads than CPUs, the thread
			 * that will hand us work may be waiting for this very
			 * CPU: let it run now and then. */
			if ((iter & (SPIN_YIELD_EVERY - 1)) == SPIN_YIELD_EVERY - 1)
				WF_SYS(sched_yield)();
			if (wf_now_ns() > deadline)
				break;
		}
		atomic_fetch_sub_explicit(&wf_rt.nspinning, 1, memory_order_seq_cst);
		/* Stacks a creator will want (stack.c, "prefilling"): made
		 * before sleeping, a batch at a time while no work shows. */
		while (!work_hint(w) && wf_stack_prefill())
			;

		/* Sleep with the signals every live ULT blocks blocked
		 * ("Signal masks"); announce, re-check everything, then wait. */
		loop_mask(w, 1);
		atomic_store_explicit(&w->sleep_state, WF_SLEEPING, memory_order_seq_cst);
		atomic_fetch_add_explicit(&wf_rt.nsleeping, 1, memory_order_seq_cst);
		/* Queuers fence lightly before they look for sleepers: the heavy
		 * side is ours (util/fence.h). */
		wf_fence_heavy();
		wf_sched_poll(w);
		u = pick_next(w);
		if (!u)
			u = steal_any(w, 1);
		if (!u &&
		    atomic_load_explicit(&wf_rt.state, memory_order_acquire) != WF_RT_STOPPING) {
			atomic_fetch_add_explicit(&w->n_sleeps, 1, memory_order_relaxed);
			if (WF_TRACING())
				wf_trace_emit(w, WF_EV_SLEEP, 0, 0, 0, 0);
			uint64_t slept = wf_now_ns(), now = slept;
			/* Only this worker arms timers on its heap, so the earliest
			 * deadline cannot move while it sleeps; busy workers' timers
			 * get a backstop (timer.c, "who fires"). */
			uint64_t until = wf_timers_next(&w->timers);
			uint64_t backstop = wf_timers_backstop(w);
			if (backstop < until)
				until = backstop;
			/* With ULTs parked on the poller, one sleeping worker
			 * sleeps in it and takes its reports itself. */
			const wf_poll_hooks_t *h =
				atomic_load_explicit(&wf_poll_waiting, memory_order_relaxed)
					? atomic_load_explicit(&wf_poll_hooks, memory_order_acquire)
					: NULL;
			if (h && h->sleep(w, until))
				now = wf_now_ns();
			while (atomic_load_explicit(&w->sleep_state, memory_order_acquire) ==
				       WF_SLEEPING &&
			       now < until) {
				struct timespec rel, *relp = NULL;
				if (until != UINT64_MAX) {
					rel.tv_sec = (time_t)((until - now) / 1000000000u);
					rel.tv_nsec = (long)((until - now) % 1000000000u);
					relp = &rel;
				}
				wf_futex_wait(&w->sleep_state, WF_SLEEPING, relp);
				now = wf_now_ns();
			}
			WF_OWNER_ADD(&w->sleep_ns, now - slept);
			if (now < until)
				tune_spin(w, now - slept); /* a timer is not a hand-off */
			if (WF_TRACING())
				wf_trace_emit(w, WF_EV_WAKE, 0, 0, 0, 0);
		}
		atomic_store_explicit(&w->sleep_state, WF_AWAKE, memory_order_relaxed);
		atomic_fetch_sub_explicit(&wf_rt.nsleeping, 1, memory_order_seq_cst);
		if (u) {
			if (more_work_visible(w))
				wf_wake_one_idle(w->sched_ops); /* as stop_spinning */
			return u;
		}
	}
}

/* The body of every worker's loop context. Returns when the runtime stops.
 * Called only by w's owner. */
void wf_loop_run(wf_worker_t *w)
{
	for (;;) {
		uint64_t t0 = wf_now_ns();
		wf_ult_t *u = find_work(w);
		WF_OWNER_ADD(&w->idle_ns, wf_now_ns() - t0);
		if (!u)
			return;
		w = wf_ctx_switch(&w->loop_ctx, switch_tail(w, NULL, u), w);
		wf_after_switch(w);
	}
}
