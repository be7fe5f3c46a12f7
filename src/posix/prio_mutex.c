/* Priority-inheriting and priority-protecting mutexes (PTHREAD_PRIO_INHERIT,
 * PTHREAD_PRIO_PROTECT): a ULT holding such a mutex runs at a priority it
 * borrows - the highest of its waiters', or the mutex's ceiling - so that a
 * low-priority owner cannot keep a high-priority waiter out while ULTs of
 * middle priority run (priority inversion).
 *
 * What a ULT borrows is its boost (src/sched/prio.c): its effective rank is
 * max(own rank, boost), and the prio scheduler and every wait queue order
 * by the effective rank. The boost of a ULT is the highest of, over the
 * mutexes of these two protocols it holds:
 *   PROTECT  the mutex's ceiling;
 *   INHERIT  the rank of its highest waiter (wf_wait_top_rank).
 * A ULT records the mutexes it holds in its descriptor (px_held, at most
 * WF_PX_HELD_MAX; one more is EAGAIN, as POSIX lets a lock fail when a
 * limit is reached) and recomputes its boost when it takes or releases one.
 *
 * Inheritance. A ULT that finds an INHERIT mutex held raises the owner's
 * boost to its own rank before it blocks, and, if that owner is itself
 * blocked on an INHERIT mutex (px_blocked_on), that mutex's owner, and so
 * on along the chain (at most CHAIN_MAX links: a cycle is a deadlock the
 * program made, and must not hang this walk). The owner's identity is the
 * mutex's owner word: kept by the sync layer for recursive and errorcheck
 * mutexes, and by this file for normal ones.
 *
 * Who may touch what. Every record - px_held, px_blocked_on, the owner
 * word of a normal mutex, every boost - is written under wf_prio_lock, and
 * a booster checks, under the same lock, that the owner it read still
 * lists the mutex in px_held. An owner drops the mutex from px_held (and
 * recomputes its boost) before it releases the lock word, so a booster
 * either boosts before that - and the recompute takes it back - or sees
 * the mutex gone and boosts nobody; and an owner cannot exit while a
 * mutex is in its px_held (it would have to release it first), so the
 * descriptor a booster writes is alive.
 *
 * Limits, said where a user looks (docs/posix-coverage.md): a waiter
 * boosts the owner before it is queued, and an owner that recomputes its
 * boost in that window (taking or releasing another such mutex) misses
 * that waiter until the next one comes; a condition wait releases and
 * retakes the mutex inside the sync layer, where nothing is recomputed
 * (the waiter keeps its boost while it waits); a waiter boosted while it
 * waits keeps its place in the queue it is in.
 */
#include <errno.h>
#include <sched.h>

#include "posix/posix.h"
#include "sched/prio.h"
#include "sched/registry.h"
#include "sync/wait.h"

/* Links of an inheritance chain followed at most. */
#define CHAIN_MAX 32

static int holds(const wf_ult_t *u, const weft_mutex_t *m)
{
	for (int i = 0; i < u->px_nheld; i++)
		if (u->px_held[i] == m)
			return 1;
	return 0;
}

/* The ULT that holds m by the records, or NULL. Under wf_prio_lock. */
static wf_ult_t *owner_of(const weft_mutex_t *m)
{
	uint64_t id = __atomic_load_n(&m->owner, __ATOMIC_RELAXED);
	wf_ult_t *u;
	if (id && id == wf_root_key && wf_rt.root)
		u = wf_rt.root; /* the root's key is its thread's (wf_self_key) */
	else if (!id || (id >> 63))
		return NULL; /* none, or a foreign thread */
	else
		u = wf_registry_find((weft_t)id);
	return u && holds(u, m) ? u : NULL;
}

/* u's boost from the mutexes it holds, set. Under wf_prio_lock. */
static void recompute(wf_ult_t *u)
{
	int boost = 0;
	for (int i = 0; i < u->px_nheld; i++) {
		const weft_mutex_t *m = u->px_held[i];
		int r = wf_px_protocol(m) == PTHREAD_PRIO_PROTECT ? wf_px_ceiling(m)
								  : wf_wait_top_rank(&m->state);
		if (r > boost)
			boost = r;
	}
	wf_prio_set_boost(u, boost);
}

/* The caller, of rank `rank`, is about to block on m: lend the rank along
 * the chain of owners. Under wf_prio_lock. */
static void inherit(const weft_mutex_t *m, int rank)
{
	for (int link = 0; m && link < CHAIN_MAX; link++) {
		wf_ult_t *o = owner_of(m);
		if (!o || o->rank >= rank)
			return;
		wf_prio_set_boost(o, rank > o->boost ? rank : o->boost);
		m = o->px_blocked_on;
	}
}

int wf_px_prio_lock(pthread_mutex_t *pm, int how, clockid_t clock, const struct timespec *t)
{
	weft_mutex_t *m = WF_PX_M(pm);
	wf_ult_t *self = wf_self();
	if (!self) /* a foreign thread borrows nothing and lends nothing */
		return how == WF_PX_TRY    ? weft_mutex_trylock(m)
		       : how == WF_PX_LOCK ? weft_mutex_lock(m)
					   : weft_mutex_clocklock(m, clock, t);
	int proto = wf_px_protocol(m);
	if (proto == PTHREAD_PRIO_PROTECT &&
	    wf_prio_rank(self->sched_policy, self->sched_prio) > wf_px_ceiling(m))
		return EINVAL; /* POSIX: the caller's priority is above the ceiling */
	wf_prio_lock();
	int again = holds(self, m), full = self->px_nheld == WF_PX_HELD_MAX;
	wf_prio_unlock();
	if (full && !again)
		return EAGAIN;

	int e = weft_mutex_trylock(m);
	if (e == EBUSY && how != WF_PX_TRY) {
		wf_prio_lock();
		self->px_blocked_on = proto == PTHREAD_PRIO_INHERIT ? m : NULL;
		if (proto == PTHREAD_PRIO_INHERIT)
			inherit(m, self->rank);
		wf_prio_unlock();
		e = how == WF_PX_LOCK ? weft_mutex_lock(m) : weft_mutex_clocklock(m, clock, t);
		wf_prio_lock();
		self->px_blocked_on = NULL;
		wf_prio_unlock();
	}
	if (e)
		return e;
	if (!again) {
		wf_prio_lock();
		self->px_held[self->px_nheld++] = m;
		if (m->type != WEFT_MUTEX_RECURSIVE && m->type != WEFT_MUTEX_ERRORCHECK)
			__atomic_store_n(&m->owner, self->id, __ATOMIC_RELAXED);
		recompute(self);
		wf_prio_unlock();
	}
	return 0;
}

int wf_px_prio_unlock(pthread_mutex_t *pm)
{
	weft_mutex_t *m = WF_PX_M(pm);
	wf_ult_t *self = wf_self();
	if (self) {
		wf_prio_lock();
		int i = 0;
		while (i < self->px_nheld && self->px_held[i] != m)
			i++;
		if (i < self->px_nheld && m->count == 0) { /* its last level: released now */
			self->px_held[i] = self->px_held[--self->px_nheld];
			if (m->type != WEFT_MUTEX_RECURSIVE && m->type != WEFT_MUTEX_ERRORCHECK)
				__atomic_store_n(&m->owner, 0, __ATOMIC_RELAXED);
			recompute(self);
		}
		wf_prio_unlock();
	}
	/* Wakes the highest waiter; if our rank fell below it on a worker
	 * running prio, we give way there (wf_wake's resched point). */
	return weft_mutex_unlock(m);
}
