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
 *   unpark (anyone)       exchange the state with NOTIFIED. Was EMPTY or
 *                         NOTIFIED: a token is left, done. Was PARKED: the
 *                         unparker owns the parked thread; it exchanges the
 *                         state to EMPTY and makes the thread runnable (queues
 *                         the ULT on the caller's worker, or futex-wakes the
 *                         foreign thread). Always a read-modify-write: see
 *                         the comment in wf_unpark for the race a plain load
 *                         would lose.
 *
 * Ordering: the commit CAS is acq_rel and the unpark exchange is acq_rel, so the
 * parked ULT's saved context (written before the switch, on the parking
 * worker) happens-before the unparker queues it, which happens-before the
 * worker that dequeues it (queue release/acquire) resumes it.
 *
 * Who owns the parked ULT: between the commit (EMPTY -> PARKED) and the
 * unpark exchange that finds PARKED, nobody may touch it; after that, only
 * that unparker, until it has queued the ULT.
 */
#include "sched/sched.h"

static __thread wf_parker_t foreign_parker = {.foreign = 1};

wf_parker_t *wf_foreign_parker(void)
{
	return &foreign_parker;
}

void wf_park(wf_parker_t *p)
{
	int e = WF_PARK_NOTIFIED;
	if (atomic_compare_exchange_strong_explicit(&p->state, &e, WF_PARK_EMPTY,
						    memory_order_acquire, memory_order_relaxed))
		return;
	if (!p->foreign) {
		wf_worker_t *w = wf_worker_self();
		atomic_fetch_add_explicit(&w->n_parks, 1, memory_order_relaxed);
		wf_block(w, wf_ult_of_parker(p), WF_AFTER_PARK);
		return;
	}
	e = WF_PARK_EMPTY;
	if (!atomic_compare_exchange_strong_explicit(&p->state, &e, WF_PARK_PARKED,
						     memory_order_acq_rel, memory_order_acquire)) {
		atomic_store_explicit(&p->state, WF_PARK_EMPTY, memory_order_relaxed);
		return;
	}
	while (atomic_load_explicit(&p->state, memory_order_acquire) == WF_PARK_PARKED)
		wf_futex_wait(&p->state, WF_PARK_PARKED, NULL);
}

void wf_unpark(wf_parker_t *p)
{
	/* Always an exchange, never "load, see NOTIFIED, return": the caller
	 * has just published the condition its parker will re-check (a turn
	 * variable, a queue). A plain load may be performed before that store
	 * is visible (store->load reordering), and a parker consuming the old
	 * token could then miss both the condition and this wake-up. */
	int old = atomic_exchange_explicit(&p->state, WF_PARK_NOTIFIED, memory_order_acq_rel);
	if (old != WF_PARK_PARKED) {
		if (unlikely(old != WF_PARK_EMPTY && old != WF_PARK_NOTIFIED))
			wf_panic("parker %p in bad state %d", (void *)p, old);
		return;
	}
	/* We found it parked: the wake is ours. Exchange (not store) so that
	 * an unpark that came in meanwhile, and what it published, is ordered
	 * before the parked thread runs again. */
	atomic_exchange_explicit(&p->state, WF_PARK_EMPTY, memory_order_acq_rel);
	if (p->foreign)
		wf_futex_wake(&p->state, 1);
	else
		wf_make_runnable(wf_worker_self(), wf_ult_of_parker(p));
}
