/* Join: how a thread waits for a ULT to exit, and who frees it.
 *
 * The joiner word
 *   Every ULT has one word, wf_ult.joiner, that says who will collect it:
 *     NONE       nobody yet;
 *     DETACHED   nobody will: its exit frees it;
 *     a ULT      that ULT is blocked joining it (registered by the JOIN
 *                commit below);
 *     a parker   tagged with bit 0: a foreign kernel thread waits on it;
 *     EXITED     it exited and nobody has claimed it yet;
 *     CLAIMED    it exited and a joiner owns it (and will free it).
 *   Every change is a CAS, because the exit, a joiner registering, a
 *   detach, a canceller and the commit's own checks race for it; whoever
 *   moves it owns what the move implies (the exited ULT, or the right to
 *   wake the joiner).
 *
 * A ULT joining (wf_join -> join_as_ult)
 *   A joiner does not use a parker token: nothing but the target's exit
 *   may wake a registered joiner, so no wake-up can reach a joiner that has
 *   already returned and been freed. It publishes its link (joining =
 *   target), switches away with the JOIN action, and the next context on
 *   its worker - once it is off its stack - registers it with a CAS NONE ->
 *   joiner (wf_join_commit). If the target exited already (or a detach or
 *   another joiner won), the commit requeues it at once and it finds out
 *   why in join_seen.
 *
 * The exit (wf_join_claim_joiner, wf_join_publish_exit)
 *   An exiting ULT whose joiner is registered claims it (CAS joiner ->
 *   CLAIMED) and switches straight to it: the exit hand-off, no queue. Once
 *   off its stack, the exit is published: NONE -> EXITED (a joiner may
 *   claim it later), DETACHED -> CLAIMED (freed here), a registered joiner
 *   -> CLAIMED (queued, unless the hand-off already runs it), a foreign
 *   joiner's parker -> CLAIMED (futex-woken). The exit is counted
 *   (wf_live) before it is published, so a joiner that returns and calls
 *   weft_shutdown never finds the joined ULT live.
 *
 * Cycles of joins (EDEADLK)
 *   The commit follows the links from the target after its CAS on the
 *   target's joiner word. That CAS is the full fence between the joiner
 *   publishing its own link and the commit reading the next one, so of two
 *   ULTs that join each other at once at least one sees the cycle (and of a
 *   longer cycle, the last to commit). A cycle found is undone: the joiner
 *   is taken back out of the joiner word (take_back) and woken with
 *   EDEADLK. Cycles longer than JOIN_CYCLE_MAX ULTs are not looked for
 *   (POSIX: a deadlock "may" be detected).
 *
 * Memory: who may still read a ULT that is about to be freed
 *   The commit reads its target t while the joiner p - which would free t
 *   once woken - waits on p->join_checking, set before the registering CAS
 *   and cleared when the commit is done with t. Following links past t -
 *   only when t is itself joining and a ULT is already registered as p's
 *   joiner, which is rare even in chains of joins - reads ULTs that may
 *   finish their joins and free their targets at any moment. So such
 *   walkers, and cancellers (wf_join_cancel), announce themselves in
 *   join_walkers and then issue the heavy side of an asymmetric fence
 *   (util/fence.h); a joiner clears its link, issues the light side, and
 *   waits for join_walkers to drain before it frees its target
 *   (join_retire): either the walker reads the cleared link, or the joiner
 *   sees the walker and waits. The common join thus pays no locked
 *   instruction of its own.
 *
 * Cancellation
 *   A cancel before the joiner blocks is acted on by the joiner itself; one
 *   after it finds the joiner's link and takes it back out of the target's
 *   word (wf_join_cancel), or the commit sees it (it checks after its CAS).
 *   The target stays joinable, as POSIX says.
 *
 * A foreign thread joining
 *   CASes its thread-local parker (tagged) into the word and waits on the
 *   parker's futex until the exit sets NOTIFIED.
 */
#include <sched.h>

#include "sched/sched.h"
#include "trace/trace.h"
#include "util/fence.h"
#include "util/sys.h"

#define JOIN_CYCLE_MAX 64

static atomic_int join_walkers;

/* Take joiner p back out of t's joiner word (p -> NONE). Fails if t's exit
 * (or another taker: a canceller, the JOIN commit) got there first. */
static inline int take_back(wf_ult_t *t, wf_ult_t *p)
{
	uintptr_t e = (uintptr_t)p;
	return atomic_compare_exchange_strong_explicit(&t->joiner, &e, WF_JOIN_NONE,
						       memory_order_seq_cst, memory_order_seq_cst);
}

/* Claim an exited ULT for its joiner or detacher: EXITED -> CLAIMED. */
static int claim(wf_ult_t *u)
{
	uintptr_t e = WF_JOIN_EXITED;
	return atomic_compare_exchange_strong_explicit(&u->joiner, &e, WF_JOIN_CLAIMED,
						       memory_order_acq_rel, memory_order_acquire);
}

/* Spin until *flag is 0; yield the CPU now and then, in case the thread
 * that clears it waits for this very CPU. */
static void wait_zero(atomic_int *flag)
{
	for (unsigned i = 1; atomic_load_explicit(flag, memory_order_acquire); i++) {
		wf_cpu_relax();
		if ((i & 1023) == 0)
			WF_SYS(sched_yield)();
	}
}

/* Would p, just registered as t's joiner, close a cycle of joins? Called
 * by the JOIN commit while p->join_checking is set. */
static int closes_cycle(wf_ult_t *p, wf_ult_t *t)
{
	/* t is alive: p, its joiner, waits for us before it can free it. */
	wf_ult_t *v = atomic_load_explicit(&t->joining, memory_order_seq_cst);
	if (!v || v == p)
		return v == p;
	/* A longer cycle through p needs a ULT registered as p's joiner. If
	 * none is yet, the one that registers later finds the cycle: its CAS
	 * on p's joiner word comes after ours on t's, so its walk from p reads
	 * every link ours would. This keeps chains of joins (each ULT joining
	 * one that is itself joining) off the heavy fence. */
	if (!wf_joiner_ult(atomic_load_explicit(&p->joiner, memory_order_seq_cst)))
		return 0;
	atomic_fetch_add_explicit(&join_walkers, 1, memory_order_seq_cst);
	wf_fence_heavy();
	int found = 0;
	v = atomic_load_explicit(&t->joining, memory_order_seq_cst); /* again, announced */
	for (int depth = 0; v && depth < JOIN_CYCLE_MAX; depth++) {
		if (v == p) {
			found = 1;
			break;
		}
		v = atomic_load_explicit(&v->joining, memory_order_seq_cst);
	}
	atomic_fetch_sub_explicit(&join_walkers, 1, memory_order_release);
	return found;
}

/* self is done joining: clear its link, and let walkers that may have
 * followed it to its target finish before the target is freed. */
static void join_retire(wf_ult_t *self)
{
	atomic_store_explicit(&self->joining, NULL, memory_order_relaxed);
	wf_fence_light(); /* the walkers' side: wf_fence_heavy */
	wait_zero(&join_walkers);
}

void wf_join_commit(wf_worker_t *w, wf_ult_t *p)
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
	WF_ULT_MOVE(p, WF_S(WF_RUNNING), WF_PARKED);
	p->join_seen = 0;
	atomic_store_explicit(&p->join_checking, 1, memory_order_relaxed);
	if (!atomic_compare_exchange_strong_explicit(&t->joiner, &e, (uintptr_t)p,
						     memory_order_seq_cst, memory_order_acquire)) {
		seen = e;
	} else if (unlikely(wf_cancel_due(p))) {
		/* Cancelled while switching away: a canceller that read the
		 * joiner word before our CAS could not take p out; we do
		 * (racing it and t's exit, all by CAS). */
		if (take_back(t, p))
			seen = WF_JOIN_CANCELED;
	} else if (unlikely(closes_cycle(p, t))) {
		/* Take p back out, unless t's exit claimed it first - then
		 * there was no deadlock after all. */
		if (take_back(t, p))
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

wf_ult_t *wf_join_claim_joiner(wf_worker_t *w, wf_ult_t *self)
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

void wf_join_publish_exit(wf_worker_t *w, wf_ult_t *u)
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

int wf_join_cancel(wf_ult_t *u)
{
	/* u's target is u->joining, read while announced as a walker, so the
	 * target is not freed meanwhile (join_retire). The CAS races with the
	 * target's exit (which claims u with a CAS too) and with the JOIN
	 * commit's own check: one of them wins. */
	atomic_fetch_add_explicit(&join_walkers, 1, memory_order_seq_cst);
	wf_fence_heavy();
	wf_ult_t *t = atomic_load_explicit(&u->joining, memory_order_seq_cst);
	int taken = t && take_back(t, u);
	atomic_fetch_sub_explicit(&join_walkers, 1, memory_order_release);
	if (taken) {
		u->join_seen = WF_JOIN_CANCELED;
		wf_make_runnable(wf_worker_self(), u);
	}
	return taken;
}

/* Returns 0, EDEADLK, EINVAL, or ECANCELED: self was cancelled, and the
 * caller must act on it (u stays joinable). */
static int join_as_ult(wf_worker_t *w, wf_ult_t *self, wf_ult_t *u)
{
	/* The link for cycle checks; the JOIN commit's CAS orders it before
	 * the commit's reading of u's link. Release: a walker that follows it
	 * reads u's fields. */
	atomic_store_explicit(&self->joining, u, memory_order_release);
	uintptr_t j = atomic_load_explicit(&u->joiner, memory_order_acquire);
	int e = 0;
	if (j == WF_JOIN_NONE) {
		/* A cancel that comes before this check is acted on here; one
		 * that comes after it finds self->joining and takes us out
		 * (wf_join_cancel), or the JOIN commit sees it. */
		if (wf_cancel_due(self)) {
			join_retire(self);
			return ECANCELED;
		}
		self->join_target = u;
		self->block_reason = WF_BLOCK_JOIN;
		self->block_obj = u;
		wf_block(w, self, WF_AFTER_JOIN);
		self->block_reason = WF_BLOCK_NONE;
		wait_zero(&self->join_checking); /* the commit is done with u */
		j = self->join_seen;
		if (j == WF_JOIN_CANCELED) {
			join_retire(self);
			return ECANCELED;
		}
		if (j == 0)
			j = WF_JOIN_CLAIMED; /* registered, and woken by u's exit */
		else if (j == WF_JOIN_DEADLK)
			e = EDEADLK;
		else if (j != WF_JOIN_EXITED)
			e = EINVAL; /* a detach or another joiner came first */
	} else if (j != WF_JOIN_EXITED) {
		e = EINVAL;
	}
	if (!e && j == WF_JOIN_EXITED && !claim(u))
		e = EINVAL;
	join_retire(self); /* before u may be freed: no walker may be on it */
	return e;
}

static int join_as_foreign(wf_ult_t *u)
{
	wf_parker_t *p = wf_foreign_parker();
	atomic_store_explicit(&p->state, WF_PARK_EMPTY, memory_order_relaxed);
	uintptr_t e = WF_JOIN_NONE;
	if (atomic_compare_exchange_strong_explicit(&u->joiner, &e, (uintptr_t)p | 1,
						    memory_order_acq_rel, memory_order_acquire)) {
		while (atomic_load_explicit(&p->state, memory_order_acquire) != WF_PARK_NOTIFIED)
			wf_futex_wait(&p->state, WF_PARK_EMPTY, NULL);
		return 0;
	}
	return e == WF_JOIN_EXITED && claim(u) ? 0 : EINVAL;
}

int wf_join(wf_ult_t *u)
{
	wf_worker_t *w = wf_worker_self();
	wf_ult_t *self = w ? w->current : NULL;
	if (u == self)
		return EDEADLK;
	return self ? join_as_ult(w, self, u) : join_as_foreign(u);
}

int wf_detach(wf_ult_t *u)
{
	uintptr_t e = WF_JOIN_NONE;
	if (atomic_compare_exchange_strong_explicit(&u->joiner, &e, WF_JOIN_DETACHED,
						    memory_order_acq_rel, memory_order_acquire))
		return 0;
	if (e == WF_JOIN_EXITED && claim(u)) {
		wf_ult_free(wf_worker_self(), u);
		return 0;
	}
	return EINVAL;
}
