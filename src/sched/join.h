/* The steps of the join protocol that run inside a switch, inline so the
 * switch path pays no call for them: the JOIN commit, the exit's claim of
 * its joiner, the publishing of an exit. The protocol - the joiner word,
 * cycles, who may read a ULT about to be freed, cancellation - is written
 * down at the top of join.c, which has the rest of it. Included only by
 * sched.c and join.c. */
#ifndef WF_SCHED_JOIN_H
#define WF_SCHED_JOIN_H

#include "sched/sched.h"
#include "trace/trace.h"

/* Would p, just registered as t's joiner, close a cycle of joins? Called
 * by the JOIN commit while p->join_checking is set (join.c). */
WF_HIDDEN int wf_join_closes_cycle(wf_ult_t *p, wf_ult_t *t);

/* Take joiner p back out of t's joiner word (p -> NONE). Fails if t's exit
 * (or another taker: a canceller, the JOIN commit) got there first. */
static inline int wf_join_take_back(wf_ult_t *t, wf_ult_t *p)
{
	uintptr_t e = (uintptr_t)p;
	return atomic_compare_exchange_strong_explicit(&t->joiner, &e, WF_JOIN_NONE,
						       memory_order_seq_cst, memory_order_seq_cst);
}

/* The JOIN commit: register p, which just switched away on w, as its
 * target's joiner. Called by w's owner after the switch. */
static inline void wf_join_commit(wf_worker_t *w, wf_ult_t *p)
{
	/* Registered, p could be woken by t's exit, run elsewhere and free t
	 * while we still read t below. join_checking, set before the CAS that
	 * any waking exit follows, makes p wait for us (join_as_ult). The CAS
	 * is also the full fence between p's join link (published by
	 * join_as_ult) and our reading of t's (a locked instruction on x86-64,
	 * an acquire-release pair on aarch64 followed by an acquire load): of
	 * two ULTs that join each other, one sees the other. */
	wf_ult_t *t = p->join_target;
	uintptr_t e = WF_JOIN_NONE, seen = 0;
	WF_ULT_MOVE(p, WF_RUNNING, WF_RUNNING, WF_PARKED);
	p->join_seen = 0;
	atomic_store_explicit(&p->join_checking, 1, memory_order_relaxed);
	if (!atomic_compare_exchange_strong_explicit(&t->joiner, &e, (uintptr_t)p,
						     memory_order_seq_cst, memory_order_acquire)) {
		seen = e;
	} else if (unlikely(wf_cancel_due(p))) {
		/* Cancelled while switching away: a canceller that read the
		 * joiner word before our CAS could not take p out; we do
		 * (racing it and t's exit, all by CAS). */
		if (wf_join_take_back(t, p))
			seen = WF_JOIN_CANCELED;
	} else if (unlikely(wf_sig_due(p))) {
		/* A signal sent while switching away, the same way: its
		 * handler runs, then the join starts again (wf_join). */
		if (wf_join_take_back(t, p))
			seen = WF_JOIN_INTERRUPTED;
	} else if (unlikely(wf_join_closes_cycle(p, t))) {
		/* Take p back out, unless t's exit claimed it first - then
		 * there was no deadlock after all. */
		if (wf_join_take_back(t, p))
			seen = WF_JOIN_DEADLK;
	}
	/* seen != 0: p is not registered (any longer) and ours to wake.
	 * seen == 0: p is t's exit's to wake, and may already run elsewhere,
	 * waiting for join_checking to drop (join_as_ult). */
	if (seen)
		p->join_seen = seen;
	atomic_store_explicit(&p->join_checking, 0, memory_order_release); /* t is done */
	if (seen)
		wf_make_runnable(w, p);
}

/* The exit hand-off: a ULT joiner registered on self that w may run, now
 * claimed (joiner word CLAIMED), or NULL. Called by self, exiting on w. */
static inline wf_ult_t *wf_join_claim_joiner(wf_worker_t *w, wf_ult_t *self)
{
	/* The registered joiner is ours to run once claimed (CAS joiner ->
	 * CLAIMED): a canceller may be taking it out of its join at this
	 * moment, and only one of us may run it. One bound elsewhere is
	 * queued there by wf_join_publish_exit instead. */
	uintptr_t j = atomic_load_explicit(&self->joiner, memory_order_acquire);
	wf_ult_t *joiner = wf_joiner_ult(j);
	if (joiner && (joiner->bound_worker < 0 || joiner->bound_worker == w->id) &&
	    atomic_compare_exchange_strong_explicit(&self->joiner, &j, WF_JOIN_CLAIMED,
						    memory_order_acq_rel, memory_order_acquire))
		return joiner;
	return NULL;
}

/* Publish u's exit to its joiner (or free it if detached). Called by w's
 * owner after u switched away for good. */
static inline void wf_join_publish_exit(wf_worker_t *w, wf_ult_t *u)
{
	/* NONE -> EXITED (a joiner may claim it later); a registered joiner or a
	 * detach -> CLAIMED (its owner is already known). CLAIMED already: the
	 * registered joiner was claimed by the exit hand-off and runs now.
	 * Always a CAS: a joiner registering, a detach, or a canceller taking a
	 * registered joiner back out (weft_cancel) may change the word. */
	uintptr_t old = atomic_load_explicit(&u->joiner, memory_order_acquire);
	while (old != WF_JOIN_CLAIMED &&
	       !atomic_compare_exchange_weak_explicit(
		       &u->joiner, &old, old == WF_JOIN_NONE ? WF_JOIN_EXITED : WF_JOIN_CLAIMED,
		       memory_order_acq_rel, memory_order_acquire))
		;
	if (old == WF_JOIN_DETACHED)
		wf_ult_free(w, u);
	if (old & 1) {
		/* A foreign thread joins: its parker (thread-local, alive while
		 * it waits) is tagged with bit 0. */
		wf_parker_t *p = (wf_parker_t *)(old & ~(uintptr_t)1);
		atomic_store_explicit(&p->state, WF_PARK_NOTIFIED, memory_order_release);
		wf_futex_wake(&p->state, 1);
	} else if (old > WF_JOIN_CLAIMED) {
		/* A ULT joiner committed its block and our CAS took it: nobody
		 * else touches it, and it does not run until we queue it. */
		if (WF_TRACING())
			wf_trace_emit(w, WF_EV_UNPARK, 0, 0, ((wf_ult_t *)old)->id, u->id);
		wf_make_runnable(w, (wf_ult_t *)old);
	}
}

#endif
