/* POSIX scheduling parameters of ULTs, and the prio scheduler that honours
 * them (prio.c has the design). Every ULT has a policy, a priority and an
 * effective rank (ult.h); the rank is what the prio scheduler and the wait
 * queues (src/sync/wait.c) order by, whichever scheduler a worker runs. */
#ifndef WF_PRIO_H
#define WF_PRIO_H

#include <sched.h>

#include "sched/sched.h"

/* Ranks: 0 for SCHED_OTHER, SCHED_BATCH and SCHED_IDLE; the priority,
 * 1..99, for SCHED_FIFO and SCHED_RR, which share one scale as POSIX
 * requires. */
#define WF_RANKS 100

static inline int wf_prio_rank(int policy, int prio)
{
	return policy == SCHED_FIFO || policy == SCHED_RR ? prio : 0;
}

/* The calling ULT's rank; 0 for a foreign thread. */
static inline int wf_self_rank(void)
{
	wf_ult_t *self = wf_self();
	return self ? __atomic_load_n(&self->rank, __ATOMIC_RELAXED) : 0;
}

/* 0 if (policy, prio) is a valid pair (the ranges sched_get_priority_min
 * and _max report on Linux), else EINVAL. */
WF_HIDDEN int wf_prio_check(int policy, int prio);

/* Set u's policy and priority (checked by the caller). Returns 1 if the
 * caller, a ULT on a worker that runs prio, lowered its own rank and
 * should yield (to the tail of its new priority); if it raised another ULT
 * above its own, asks for a wf_resched_point. Any thread. */
WF_HIDDEN int wf_prio_set(wf_ult_t *u, int policy, int prio);

/* The lock that serialises every write of a ULT's parameters and boost
 * (and, in the POSIX layer, the records of which priority-inheriting or
 * -protecting mutexes a ULT holds, src/posix/prio_mutex.c). Held for a
 * few instructions; a wait queue's bucket lock may be taken inside it. */
WF_HIDDEN void wf_prio_lock(void);
WF_HIDDEN void wf_prio_unlock(void);
/* Around a fork (enum wf_fork_phase): the lock above. */
WF_HIDDEN void wf_prio_fork(int phase);
/* Set u's boost - the rank a mutex it holds lends it (0: none) - and so
 * its effective rank, max(own, boost). Under wf_prio_lock. */
WF_HIDDEN void wf_prio_set_boost(wf_ult_t *u, int boost);

/* The ranks changed since a queue was sorted: prio.c re-sorts its queues
 * when it sees this move. */
WF_HIDDEN extern atomic_uint wf_prio_gen;

/* A point where a ULT that keeps running may be asked to give way: a wake,
 * a create, a priority change. If the worker's scheduler said that the ULT
 * it just made ready outranks the running one (put's
 * WEFT_SCHED_PUT_RESCHED), the caller yields now, and goes back to the head
 * of its priority, as POSIX puts a preempted thread. Only from a ULT or
 * foreign thread that holds no internal lock. */
WF_HIDDEN void wf_resched_now(void);
/* Has any put ever asked a ULT to give way, or a scheduler with a tick
 * been started (set once, by the worker concerned, before its own resched
 * point reads it)? Keeps the points free for programs that never use a
 * scheduler that asks: one load. */
WF_HIDDEN extern atomic_int wf_resched_used;
/* Ask w's running ULT to give way at its next resched point. Called only
 * by w's owner. */
static inline void wf_resched_ask(wf_worker_t *w)
{
	w->resched = 1;
	if (unlikely(!atomic_load_explicit(&wf_resched_used, memory_order_relaxed)))
		atomic_store_explicit(&wf_resched_used, 1, memory_order_relaxed);
}
static inline void wf_resched_point(void)
{
	if (unlikely(atomic_load_explicit(&wf_resched_used, memory_order_relaxed)))
		wf_resched_now();
}

#endif
