/* The synchronization layer's internal interface: wait-on-address (the
 * layer every weft lock blocks through; the protocol is at the top of
 * src/sync/wait.c), deadlines, signals, cancellation and exit handlers,
 * thread-specific data. Timed waits arm the scheduler's worker timers
 * (src/sched/timer.h). */
#ifndef WF_SYNC_WAIT_H
#define WF_SYNC_WAIT_H

#include <stdatomic.h>
#include <stdint.h>
#include <signal.h>
#include <time.h>

#include "sched/sched.h"
#include "sched/timer.h"

/* ---- deadlines ----------------------------------------------------------- */

/* Convert an absolute timespec on clock to a CLOCK_MONOTONIC deadline in ns
 * (1 if already past, never 0). EINVAL for a bad clock or timespec. */
WF_HIDDEN int wf_deadline(clockid_t clock, const struct timespec *abstime, uint64_t *out);

/* ---- wait-on-address (wait.c) -------------------------------------------- */

/* wf_wait flags: WF_WAIT_CANCEL or WF_WAIT_ASYNC, or'ed with
 * WF_WAIT_FOR(reason), the enum wf_block_reason a blocked ULT reports
 * (tracing, debuggers). */
enum {
	WF_WAIT_CANCEL = 1, /* a cancellation point: ECANCELED if cancelled */
	WF_WAIT_ASYNC = 2,  /* not one, but an asynchronous cancellation acts
	                       here (wf_cancel_act, no return): a program's
	                       mutex lock, as glibc's does */
};
#define WF_WAIT_FOR(reason)   ((reason) << 8)
#define WF_WAIT_REASON(flags) ((flags) >> 8)

/* Block while *addr == expected, until woken, until deadline_ns (0: none)
 * passes, or (WF_WAIT_CANCEL) until the caller is cancelled.
 * Returns 0 (woken), EAGAIN (value differed), ETIMEDOUT, ECANCELED or ENOMEM
 * (timer heap full). */
WF_HIDDEN int wf_wait(const void *addr, uint32_t expected, uint64_t deadline_ns, int flags);
/* wf_wait, and *requeued says whether a wf_requeue moved the caller to
 * another address, or woke it and moved others (cond.c needs to know).
 * A blocked ULT reports obj as what it waits on (wf_wait: addr). */
WF_HIDDEN int wf_wait_requeued(const void *addr, uint32_t expected, uint64_t deadline_ns, int flags,
			       const void *obj, int *requeued);
/* Wake up to n waiters on addr, the highest priority first (the waiting
 * ULT's rank, sched/prio.h), oldest first among equals; returns how many.
 * If a woken ULT outranks the caller on a worker running prio, the caller
 * yields to it before returning (wf_resched_point): call it with no
 * internal lock held. */
WF_HIDDEN int wf_wake(const void *addr, int n);
/* wf_wake without the yield: for the scheduler's own contexts (a worker's
 * loop, its pick of the next ULT), where the caller is no ULT that could
 * give way. */
WF_HIDDEN int wf_wake_noresched(const void *addr, int n);
/* wf_wake that also adds bump - (how many it woke) to *count (if count is
 * not NULL: wf_wake is this without one), with one
 * read-modify-write made under the bucket lock: a waiter checking addr
 * under that lock sees the update and the wake as one step. For a word
 * that holds both the waited-on value and a count of its waiters
 * (cond.c: a signal's sequence bump and its waiter count in one
 * instruction). */
WF_HIDDEN int wf_wake_counted(const void *addr, int n, uint64_t *count, uint64_t bump);
/* Forget every wait queue lock's bias (util/bspin.h): a runtime's workers
 * are gone, or new. Called only while no worker runs (foreign threads may
 * wait meanwhile). */
WF_HIDDEN void wf_wait_unbias(void);
/* Wake up to nwake waiters on from and move up to nmove of the rest to to,
 * in wf_wake's order (cond broadcast without a stampede). Returns how many
 * it took off from: woken and moved. */
WF_HIDDEN int wf_requeue(const void *from, int nwake, const void *to, int nmove);
/* The rank of the highest-priority waiter on addr, or -1 if none waits. */
WF_HIDDEN int wf_wait_top_rank(const void *addr);
/* Take ULT u out of a cancellable wait with EINTR, if it is in one (a
 * signal was sent to it). */
WF_HIDDEN void wf_wait_interrupt(wf_ult_t *u);
/* Per-ULT signals (signal.c). Masks have bit s-1 for signal s. */
static inline uint64_t wf_sig_bit(int sig)
{
	return 1ull << (sig - 1);
}
WF_HIDDEN int wf_sig_send(wf_ult_t *u, int sig);
WF_HIDDEN void wf_sig_deliver(wf_ult_t *self);
/* After a wait or yield that does not deliver itself: what was sent to
 * self meanwhile (self may be NULL: not a ULT). */
static inline void wf_sig_deliver_sent(wf_ult_t *self)
{
	if (self &&
	    __builtin_expect(atomic_load_explicit(&self->sig_pending, memory_order_relaxed), 0))
		wf_sig_deliver(self);
}
/* Would the kernel restart a call interrupted by the handlers that ran for
 * u since its sig_ran was cleared: were all installed with SA_RESTART? */
WF_HIDDEN int wf_sig_restarts(wf_ult_t *u);
WF_HIDDEN int wf_sig_mask(wf_ult_t *self, int how, const sigset_t *set, sigset_t *old);
/* A sigset_t as weft's 64-bit mask (bit s-1 for signal s), and back. */
WF_HIDDEN uint64_t wf_sig_bits(const sigset_t *set);
/* self, in a system call section about to wait for the signals of set
 * (sigwait): one of them that was sent to it and is pending, claimed (its
 * bit cleared); 0 if none. */
WF_HIDDEN int wf_sig_take(wf_ult_t *self, const sigset_t *set);
/* self, in a section about to wait in sigsuspend with the signals of
 * want unblocked that its own mask blocks: those sent to it or held for
 * the process are claimed (bits cleared) and returned; those sent while
 * it waits reach its kernel thread, as a sigwait's do. */
WF_HIDDEN uint64_t wf_sig_take_set(wf_ult_t *self, uint64_t want);
/* ... and its wait is over. */
WF_HIDDEN void wf_sig_wait_done(wf_ult_t *self);
WF_HIDDEN void wf_sig_fill(uint64_t mask, sigset_t *set);
/* The kernel thread becoming the root ULT keeps its signal mask. */
WF_HIDDEN void wf_sig_take_foreign(wf_ult_t *root);
/* If u runs on a worker now, make it look at what was sent to it
 * (preemption signal; nothing with preemption off). */
WF_HIDDEN void wf_kick_running(wf_ult_t *u);
/* Install the preemption handler's hook (wf_preempt_hook). At start. */
WF_HIDDEN void wf_signals_start(void);
/* Signals sent to the process (procsig.c). sigaction for the program: its
 * handlers run through weft's trampoline. */
WF_HIDDEN int wf_sig_action(int sig, const struct sigaction *act, struct sigaction *old);
/* self takes the held signals of want (it unblocks them, or waits for
 * them): they become pending for it. */
WF_HIDDEN void wf_proc_claim(wf_ult_t *self, uint64_t want);
/* self, on its way out and no taker any more (sig_gone), takes the
 * signals sent to the process that the kernel has not handed to a kernel
 * thread yet, or that a trampoline is about to hold: they were sent while
 * it was a taker. They become pending for it. */
WF_HIDDEN void wf_proc_exiting(wf_ult_t *self);
/* Install the monitor's task that gives held signals out. At start. */
WF_HIDDEN void wf_procsig_start(void);
/* Take ULT u out of a cancellable wait or a weft_join, if it is in one
 * (weft_cancel). */
WF_HIDDEN void wf_wait_cancel(wf_ult_t *u);

/* ---- mutex internals for condition variables (mutex.c) ---------------------- */

WF_HIDDEN int wf_mutex_unlock_for_wait(weft_mutex_t *m, uint32_t *depth);
WF_HIDDEN void wf_mutex_relock(weft_mutex_t *m, uint32_t depth, int as_waiter);

/* weft_rwlock_destroy, but (held_ok) EBUSY only while a thread waits on l,
 * not while one holds it: pthread_rwlock_destroy, as glibc's (rwlock.c). */
WF_HIDDEN int wf_rwlock_destroy(weft_rwlock_t *l, int held_ok);

/* ---- cancellation (cancel.c) ----------------------------------------------- */

/* Act on a pending cancellation of the calling ULT, if it is enabled. */
WF_HIDDEN void wf_testcancel(void);
/* Cancelled and enabled: a cancellation point must act (no return). */
WF_HIDDEN _Noreturn void wf_cancel_act(void);

/* Cleanup handlers (if run_cleanup: weft_exit, cancellation) and
 * thread-specific data destructors of an exiting ULT; runs on its stack. */
WF_HIDDEN void wf_ult_exiting(wf_ult_t *u, int run_cleanup);
/* End the calling ULT with ret: its cleanup handlers, its thread-specific
 * data destructors, then the scheduler's exit (weft_exit, pthread_exit). */
WF_HIDDEN _Noreturn void wf_exit(void *ret);
/* Start and stop the layer with the runtime (tsd.c: per-worker caches). */
WF_HIDDEN void wf_sync_start(int nworkers);
WF_HIDDEN void wf_sync_stop(void);
/* Around a fork (runtime/fork.c; enum wf_fork_phase): the locks of the
 * key table and of the signal actions; in the child, the wait queues,
 * whose waiters are gone, are emptied (wf_wait_forked), and so are the
 * caches of the workers other than kept. */
WF_HIDDEN void wf_tsd_fork(int phase, const wf_worker_t *kept);
WF_HIDDEN void wf_procsig_fork(int phase);
WF_HIDDEN void wf_wait_forked(void);
/* Jump into the newest glibc-style cleanup frame of u (no return): set by
 * the POSIX layer (src/posix/unwind.c) when it registers a frame. */
WF_HIDDEN extern void (*wf_unwind_hook)(wf_ult_t *u);
WF_HIDDEN void wf_tsd_exit(struct wf_tsd **slot);
/* The thread-specific data destructors of a ULT whose function returned
 * (wf_ult_return_hook). */
WF_HIDDEN void wf_tsd_on_return(wf_ult_t *u);
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
/* The root ULT's key: the one its kernel thread had before the runtime
 * started (set then, by init.c), so that a lock taken before the start is
 * the root's after it, and the thread's again after weft_shutdown. */
WF_HIDDEN extern uint64_t wf_root_key;

#endif
