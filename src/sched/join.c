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
 *   is taken back out of the joiner word (wf_join_take_back) and woken with
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
 *   walkers, and cancellers (wf_join_take_out), announce themselves in
 *   join_walkers and then issue the heavy side of an asymmetric fence
 *   (util/fence.h); a joiner clears its link, issues the light side, and
 *   waits for join_walkers to drain before it frees its target
 *   (join_retire): either the walker reads the cleared link, or the joiner
 *   sees the walker and waits. The common join thus pays no locked
 *   instruction of its own.
 *
 * Cancellation and signals
 *   A cancel before the joiner blocks is acted on by the joiner itself; one
 *   after it finds the joiner's link and takes it back out of the target's
 *   word (wf_join_take_out), or the commit sees it (it checks after its
 *   CAS). The target stays joinable, as POSIX says. A signal sent to the
 *   joiner that it does not block takes it out the same way (the sender
 *   marks it pending, then looks for the link, sync/wait.c): the joiner's
 *   handler runs and it joins again, as a glibc thread's handler runs in
 *   the middle of its join.
 *
 * The steps that run inside a switch - the JOIN commit, the exit's claim
 * of its joiner and the publishing of the exit - are inline functions in
 * join.h, so the switch path pays no call for them.
 *
 * A foreign thread joining
 *   CASes its thread-local parker (tagged) into the word and waits on the
 *   parker's futex until the exit sets NOTIFIED.
 */
#include <sched.h>

#include "sched/join.h"
#include "sched/sched.h"
#include "trace/trace.h"
#include "util/fence.h"
#include "util/sys.h"

#define JOIN_CYCLE_MAX 64

static atomic_int join_walkers;

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

int wf_join_closes_cycle(wf_ult_t *p, wf_ult_t *t)
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

int wf_join_take_out(wf_ult_t *u, uintptr_t why)
{
	/* u's target is u->joining, read while announced as a walker, so the
	 * target is not freed meanwhile (join_retire). The CAS races with the
	 * target's exit (which claims u with a CAS too) and with the JOIN
	 * commit's own check: one of them wins. */
	atomic_fetch_add_explicit(&join_walkers, 1, memory_order_seq_cst);
	wf_fence_heavy();
	wf_ult_t *t = atomic_load_explicit(&u->joining, memory_order_seq_cst);
	int taken = t && wf_join_take_back(t, u);
	atomic_fetch_sub_explicit(&join_walkers, 1, memory_order_release);
	if (taken) {
		u->join_seen = why;
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
		 * (wf_join_take_out), or the JOIN commit sees it. */
		if (wf_cancel_due(self)) {
			join_retire(self);
			return ECANCELED;
		}
		if (wf_sig_due(self)) { /* likewise for a signal */
			join_retire(self);
			return EINTR;
		}
		self->join_target = u;
		self->block_reason = WF_BLOCK_JOIN;
		self->block_obj = u;
		wf_block(w, self, WF_AFTER_JOIN);
		self->block_reason = WF_BLOCK_NONE;
		wait_zero(&self->join_checking); /* the commit is done with u */
		j = self->join_seen;
		if (j == WF_JOIN_CANCELED || j == WF_JOIN_INTERRUPTED) {
			join_retire(self);
			return j == WF_JOIN_CANCELED ? ECANCELED : EINTR;
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

int wf_join(weft_t id, void **ret)
{
	if (atomic_load_explicit(&wf_rt.state, memory_order_acquire) != WF_RT_RUNNING)
		return ESRCH;
	wf_ult_t *u = wf_registry_find(id);
	if (!u)
		return ESRCH;
	wf_worker_t *w = wf_worker_self();
	wf_ult_t *self = w ? w->current : NULL;
	int e;
	if (!self) {
		e = join_as_foreign(u);
	} else if (unlikely(wf_cancel_due(self))) {
		return ECANCELED; /* a cancellation point: act before waiting */
	} else if (u == self) {
		return EDEADLK;
	} else {
		e = join_as_ult(w, self, u);
	}
	if (e)
		return e;
	if (ret)
		*ret = u->retval;
	wf_ult_free(wf_worker_self(), u);
	return 0;
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
