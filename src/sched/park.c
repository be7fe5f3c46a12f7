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
 *   unpark (anyone)       EMPTY -> NOTIFIED: leave a token.
 *                         PARKED -> EMPTY: the winner of this CAS owns the
 *                         parked thread and makes it runnable (queues the
 *                         ULT on the caller's worker, or futex-wakes the
 *                         foreign thread). NOTIFIED: nothing to do.
 *
 * Ordering: the commit CAS is acq_rel and the unpark CAS is acq_rel, so the
 * parked ULT's saved context (written before the switch, on the parking
 * worker) happens-before the unparker queues it, which happens-before the
 * worker that dequeues it (queue release/acquire) resumes it.
 *
 * Who owns the parked ULT: between the commit (EMPTY -> PARKED) and the
 * unpark CAS (PARKED -> EMPTY) nobody may touch it but the unparker-to-be.
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
	int s = atomic_load_explicit(&p->state, memory_order_acquire);
	for (;;) {
		switch (s) {
		case WF_PARK_NOTIFIED:
			return;
		case WF_PARK_EMPTY:
			if (atomic_compare_exchange_weak_explicit(&p->state, &s, WF_PARK_NOTIFIED,
								  memory_order_acq_rel,
								  memory_order_acquire))
				return;
			break;
		case WF_PARK_PARKED:
			if (atomic_compare_exchange_weak_explicit(&p->state, &s, WF_PARK_EMPTY,
								  memory_order_acq_rel,
								  memory_order_acquire)) {
				if (p->foreign)
					wf_futex_wake(&p->state, 1);
				else
					wf_make_runnable(wf_worker_self(), wf_ult_of_parker(p));
				return;
			}
			break;
		default:
			wf_panic("parker %p in bad state %d", (void *)p, s);
		}
	}
}
