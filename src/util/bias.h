/* An owner-biased lock: mutual exclusion between one owner thread, which
 * takes the lock all the time, and other threads, which take it rarely.
 *
 * The owner's side costs no locked instruction: it announces itself with a
 * store, issues the light side of an asymmetric fence (util/fence.h: a
 * compiler barrier), and reads whether another thread holds the lock. The
 * other side serializes the others with an exchange (a locked
 * instruction), issues the heavy side of the fence (membarrier(2):
 * microseconds), and waits for the owner to be out. This is Dekker's store-then-load on both sides; the asymmetric
 * fence guarantees that at least one of the two sees the other's store:
 *
 *   owner:  owner = 1; light fence; read other  -> 1: back off and wait
 *   other:  other = 1; heavy fence; read owner  -> 1: wait for it to leave
 *
 * A backing-off owner clears its flag before it waits, so the two never
 * wait for each other. Others wait for each other on `other`.
 *
 * Used where one worker touches a structure on every scheduling decision
 * and other workers only when they run dry (steal.h: a worker's next ULT
 * and its yield FIFO). The owner must not be interrupted inside by code that takes the
 * same lock: weft's preemption never stops a worker inside the runtime
 * (preempt.c). Who is the owner is fixed by the caller's protocol; the
 * lock does not check it.
 *
 * Ordering: unlocks are release stores and the flags are read with
 * acquire loads, so what one holder wrote happens-before the next holder
 * reads it (ThreadSanitizer sees those edges; it cannot see the fence).
 */
#ifndef WF_UTIL_BIAS_H
#define WF_UTIL_BIAS_H

#include "util/fence.h"

typedef struct wf_bias_lock {
	atomic_int owner; /* 1 while the owner is inside (or about to look at other) */
	atomic_int other; /* 1 while another thread holds the lock or waits for it */
} wf_bias_lock_t;

static inline void wf_bias_owner_lock(wf_bias_lock_t *l)
{
	for (;;) {
		atomic_store_explicit(&l->owner, 1, memory_order_relaxed);
		wf_fence_light();
		if (likely(!atomic_load_explicit(&l->other, memory_order_acquire)))
			return;
		atomic_store_explicit(&l->owner, 0, memory_order_release);
		while (atomic_load_explicit(&l->other, memory_order_relaxed))
			wf_cpu_relax();
	}
}

static inline void wf_bias_owner_unlock(wf_bias_lock_t *l)
{
	atomic_store_explicit(&l->owner, 0, memory_order_release);
}

/* Any thread but the owner. Costs a membarrier(2) each time. */
static inline void wf_bias_other_lock(wf_bias_lock_t *l)
{
	while (atomic_exchange_explicit(&l->other, 1, memory_order_acquire))
		while (atomic_load_explicit(&l->other, memory_order_relaxed))
			wf_cpu_relax();
	wf_fence_heavy();
	while (atomic_load_explicit(&l->owner, memory_order_acquire))
		wf_cpu_relax();
}

static inline void wf_bias_other_unlock(wf_bias_lock_t *l)
{
	atomic_store_explicit(&l->other, 0, memory_order_release);
}

#endif
