/* Park/unpark: the one blocking primitive.
 *
 * Every thread that can block owns a wf_parker: a ULT has one in its
 * descriptor, a foreign kernel thread one in thread-local storage. Its state
 * is a token in the style of a binary semaphore:
 *
 *   EMPTY     no token, nobody parked
 *   NOTIFIED  a token is waiting (an unpark came first)
 *   PARKED    the owner is blocked and needs waking
 *
 *   park   (owner only)   NOTIFIED -> EMPTY: return at once, token consumed.
 *                         Otherwise block: a ULT switches away with action
 *                         PARK and the next context commits EMPTY -> PARKED
 *                         once the ULT is off its stack (sched.c); if that
 *                         CAS finds NOTIFIED (the wake-before-park race), it
 *                         consumes the token and requeues the ULT instead.
 *                         A foreign thread CASes EMPTY -> PARKED itself and
 *                         futex-waits while the word is PARKED.
 *   unpark (anyone)       CAS PARKED -> EMPTY: the unparker owns the parked
 *                         thread and makes it runnable (queues the ULT on
 *                         the caller's worker, or futex-wakes the foreign
 *                         thread). Otherwise exchange the state with
 *                         NOTIFIED. Was EMPTY or NOTIFIED: a token is left,
 *                         done. Was PARKED (it parked in between): as above,
 *                         after exchanging the state to EMPTY. Always a
 *                         read-modify-write: see the comment in wf_unpark
 *                         for the race a plain load would lose.
 *
 * Ordering: the commit CAS is acq_rel and the unpark exchange is acq_rel, so the
 * parked ULT's saved context (written before the switch, on the parking
 * worker) happens-before the unparker queues it, which happens-before the
 * worker that dequeues it (queue release/acquire) resumes it.
 *
 * Who owns the parked ULT: between the commit (EMPTY -> PARKED) and the
 * unpark exchange that finds PARKED, nobody may touch it; after that, only
 * that unparker, until it has queued the ULT.
 *
 * Two cheaper forms for a wait's parker (src/sync/wait.c), which exactly
 * one party - whoever took the waiter out of its queue - unparks:
 *
 *   wf_park_unlock  a ULT parks while it holds its queue's lock, which
 *                   that party must take first; the next context commits
 *                   EMPTY -> PARKED with a store and only then releases
 *                   the lock (sched.c, WF_AFTER_PARK): no unpark can come
 *                   in between, so the commit needs no CAS. (Go's gopark
 *                   with an unlock function does the same.) The lock is
 *                   held across one switch; the decision in it defers its
 *                   timer checks, whose fire functions take such locks,
 *                   to the release (pick_next).
 *   wf_unpark_sole  the one party finds a ULT's parker PARKED: nobody
 *                   else can move it now, so a store EMPTY takes it.
 *                   Not for a foreign owner, which moves its own word
 *                   PARKED -> EMPTY when its wait times out.
 *
 * Where a parker lives: a ULT's own one in its descriptor (weft_park), a
 * foreign thread's in thread-local storage, and a wait-on-address waiter's
 * on the waiter's stack (src/sync/wait.c). A parker on a stack is safe
 * because its unparker touches it for the last time before the owner can
 * return: the exchange that leaves a token if the owner had not blocked yet
 * (the owner returns only after it sees that token), and otherwise the RMW
 * that sets EMPTY, which comes before the ULT is queued, or which a foreign
 * owner waits for (it returns only once the word is EMPTY again; the futex
 * wake after it may hit a dead address, which the kernel tolerates).
 */
#include "sched/sched.h"
#include "trace/trace.h"

static __thread wf_parker_t foreign_parker; /* .ult = NULL: foreign */

wf_parker_t *wf_foreign_parker(void)
{
	return &foreign_parker;
}

/* Consume a waiting token: NOTIFIED -> EMPTY. */
static inline int take_token(wf_parker_t *p)
{
	int e = WF_PARK_NOTIFIED;
	return atomic_compare_exchange_strong_explicit(&p->state, &e, WF_PARK_EMPTY,
						       memory_order_acquire, memory_order_relaxed);
}

void wf_park(wf_parker_t *p)
{
	/* Look before the CAS: a failed CAS costs as much as a successful one,
	 * and without a token the block below copes with one arriving late. */
	if (atomic_load_explicit(&p->state, memory_order_relaxed) == WF_PARK_NOTIFIED &&
	    take_token(p))
		return;
	if (p->ult) {
		wf_worker_t *w = wf_worker_self();
		WF_OWNER_ADD(&w->n_parks, 1);
		w->prev_parker = p;
		wf_block(w, p->ult, WF_AFTER_PARK);
		return;
	}
	wf_park_until(p, 0, 0);
}

/* Foreign threads only: park until a token arrives, or, if deadline_ns is
 * not 0, until CLOCK_MONOTONIC passes it, or, if intr, until a signal
 * handler ran on the thread. Returns 0 (token consumed), ETIMEDOUT or
 * EINTR (no token consumed, the parker is EMPTY). */
int wf_park_until(wf_parker_t *p, uint64_t deadline_ns, int intr)
{
	WF_ASSERT(p->ult == NULL);
	if (take_token(p))
		return 0;
	int e = WF_PARK_EMPTY;
	if (!atomic_compare_exchange_strong_explicit(&p->state, &e, WF_PARK_PARKED,
						     memory_order_acq_rel, memory_order_acquire)) {
		take_token(p); /* an unpark came in between: its token is ours */
		return 0;
	}
	for (;;) {
		int s = atomic_load_explicit(&p->state, memory_order_acquire);
		if (s == WF_PARK_EMPTY)
			return 0; /* the unparker is done with p */
		if (s == WF_PARK_NOTIFIED) {
			wf_cpu_relax(); /* between the unparker's two exchanges */
			continue;
		}
		struct timespec rel, *relp = NULL;
		if (deadline_ns) {
			uint64_t now = wf_now_ns();
			if (now >= deadline_ns) {
				e = WF_PARK_PARKED;
				if (atomic_compare_exchange_strong_explicit(
					    &p->state, &e, WF_PARK_EMPTY, memory_order_acquire,
					    memory_order_relaxed))
					return ETIMEDOUT;
				continue; /* an unparker won: wait for it to finish */
			}
			rel.tv_sec = (time_t)((deadline_ns - now) / 1000000000u);
			rel.tv_nsec = (long)((deadline_ns - now) % 1000000000u);
			relp = &rel;
		}
		if (wf_futex_wait(&p->state, WF_PARK_PARKED, relp) == -EINTR && intr) {
			e = WF_PARK_PARKED; /* a handler ran: stop waiting, as for a deadline */
			if (atomic_compare_exchange_strong_explicit(&p->state, &e, WF_PARK_EMPTY,
								    memory_order_acquire,
								    memory_order_relaxed))
				return EINTR;
		}
	}
}

/* Make the parked thread runnable: the wake is ours. */
static void resume(wf_parker_t *p, wf_ult_t *u)
{
	if (u) {
		wf_worker_t *w = wf_worker_self();
		if (WF_TRACING())
			wf_trace_unpark(w, u);
		wf_make_runnable(w, u);
	} else
		wf_futex_wake(&p->state, 1);
}

void wf_unpark(wf_parker_t *p)
{
	/* Read before the first RMW: after it, an owner that had not blocked
	 * yet may return, and p may be gone. */
	wf_ult_t *u = p->ult;
	/* The common case, the owner is parked: one CAS PARKED -> EMPTY takes
	 * it (and orders what we published before it runs again). */
	int old = WF_PARK_PARKED;
	if (atomic_compare_exchange_strong_explicit(&p->state, &old, WF_PARK_EMPTY,
						    memory_order_acq_rel, memory_order_acquire)) {
		resume(p, u);
		return;
	}
	/* Not parked: leave a token. Always an exchange, never "saw NOTIFIED,
	 * return": the caller has just published the condition its parker
	 * will re-check (a turn variable, a queue). A plain load may be
	 * performed before that store is visible (store->load reordering), and
	 * a parker consuming the old token could then miss both the condition
	 * and this wake-up. */
	old = atomic_exchange_explicit(&p->state, WF_PARK_NOTIFIED, memory_order_acq_rel);
	if (old != WF_PARK_PARKED) {
		if (unlikely(old != WF_PARK_EMPTY && old != WF_PARK_NOTIFIED))
			wf_panic("parker %p in bad state %d", (void *)p, old);
		return;
	}
	/* It parked between our CAS and the exchange: the wake is ours.
	 * Exchange (not store) so that an unpark that came in meanwhile, and
	 * what it published, is ordered before the parked thread runs again. */
	atomic_exchange_explicit(&p->state, WF_PARK_EMPTY, memory_order_acq_rel);
	resume(p, u);
}

void wf_park_unlock(wf_parker_t *p, wf_bspin_t *l, int how)
{
	wf_worker_t *w = wf_worker_self();
	WF_ASSERT(p->ult && p->ult == w->current);
	WF_OWNER_ADD(&w->n_parks, 1);
	w->prev_parker = p;
	w->prev_unlock = l;
	w->prev_unlock_how = how;
	wf_block(w, p->ult, WF_AFTER_PARK);
}

void wf_unpark_sole(wf_parker_t *p)
{
	wf_ult_t *u = p->ult; /* read first, as in wf_unpark */
	if (u && atomic_load_explicit(&p->state, memory_order_acquire) == WF_PARK_PARKED) {
		atomic_store_explicit(&p->state, WF_PARK_EMPTY, memory_order_relaxed);
		resume(p, u);
		return;
	}
	wf_unpark(p);
}

/* Park the calling ULT (on its parker `mine`) and unpark p's owner - the
 * same as wf_unpark(p) then wf_park(mine) - but when p's owner is a parked
 * ULT, run it on this worker in the caller's place (wf_park_to): the
 * directed hand-off of a simulation kernel passing control from one thread
 * to the next. A token already waiting on `mine`, a foreign owner, or an
 * owner not parked yet take the plain two-step path. Called only by the ULT
 * that owns `mine`. */
void wf_park_handoff(wf_parker_t *mine, wf_parker_t *p)
{
	wf_ult_t *u = p->ult; /* read before the RMW, as in wf_unpark */
	int old = WF_PARK_PARKED;
	if (!u || atomic_load_explicit(&mine->state, memory_order_relaxed) == WF_PARK_NOTIFIED ||
	    !atomic_compare_exchange_strong_explicit(&p->state, &old, WF_PARK_EMPTY,
						     memory_order_acq_rel, memory_order_acquire)) {
		wf_unpark(p);
		wf_park(mine);
		return;
	}
	/* We own u now, exactly as wf_unpark's winner would. */
	wf_worker_t *w = wf_worker_self();
	WF_OWNER_ADD(&w->n_parks, 1);
	if (WF_TRACING())
		wf_trace_unpark(w, u);
	wf_park_to(w, mine->ult, mine, u);
}
