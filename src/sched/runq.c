/* Run queues.
 *
 * Per worker (steal scheduler): a Chase-Lev work-stealing deque on a fixed
 * ring of WF_RUNQ_SIZE slots. The owner pushes and pops at the bottom
 * (LIFO: a ULT just created or woken runs next, and fork-join programs run
 * depth-first, so few stacks are alive at once); thieves take from the top
 * (the oldest entry, in fork-join the biggest piece of work). A full ring
 * sends further pushes to the global queue.
 *
 * Ordering (Lê, Pop, Cohen, Zappa Nardelli, "Correct and Efficient
 * Work-Stealing for Weak Memory Models", 2013): the owner's pop publishes the
 * smaller bottom with a sequentially consistent exchange before it reads top;
 * a thief reads top, then bottom, both seq_cst, and claims its slot with a
 * CAS on top. Only when a single entry is left do owner and thief race, and
 * the CAS on top decides. The exchange replaces the paper's fence: one
 * locked instruction either way, and pushes need none.
 *
 * A thief leaves a victim's single queued ULT alone until it has seen it
 * there on STEAL_PATIENCE consecutive scans: that ULT is most likely the one
 * its worker will run next (a child about to be joined, a partner just
 * woken), and stealing it would turn a same-core hand-off into a cross-core
 * one.
 *
 * Global queue: a spinlock-protected FIFO - the central ready queue of the
 * share scheduler, and overflow / foreign-thread / yield queue of the steal
 * scheduler. Inbox: a spinlock-protected FIFO per worker for ULTs bound to it
 * that other threads make runnable.
 */
#include "sched/sched.h"

#define RUNQ_MASK      (WF_RUNQ_SIZE - 1)
#define STEAL_PATIENCE 4

void wf_global_put(wf_ult_t *u)
{
	wf_spin_lock(&wf_rt.global_lock);
	wf_fifo_push(&wf_rt.global, u);
	atomic_fetch_add_explicit(&wf_rt.global_n, 1, memory_order_relaxed);
	wf_spin_unlock(&wf_rt.global_lock);
}

wf_ult_t *wf_global_get(void)
{
	if (atomic_load_explicit(&wf_rt.global_n, memory_order_relaxed) == 0)
		return NULL;
	wf_spin_lock(&wf_rt.global_lock);
	wf_ult_t *u = wf_fifo_pop(&wf_rt.global);
	if (u)
		atomic_fetch_sub_explicit(&wf_rt.global_n, 1, memory_order_relaxed);
	wf_spin_unlock(&wf_rt.global_lock);
	return u;
}

void wf_inbox_put(wf_worker_t *w, wf_ult_t *u)
{
	wf_spin_lock(&w->inbox_lock);
	wf_fifo_push(&w->inbox, u);
	atomic_fetch_add_explicit(&w->inbox_n, 1, memory_order_relaxed);
	wf_spin_unlock(&w->inbox_lock);
}

wf_ult_t *wf_inbox_get(wf_worker_t *w)
{
	if (atomic_load_explicit(&w->inbox_n, memory_order_relaxed) == 0)
		return NULL;
	wf_spin_lock(&w->inbox_lock);
	wf_ult_t *u = wf_fifo_pop(&w->inbox);
	if (u)
		atomic_fetch_sub_explicit(&w->inbox_n, 1, memory_order_relaxed);
	wf_spin_unlock(&w->inbox_lock);
	return u;
}

/* Push u at the bottom of w's deque. Called only by the owning worker. */
void wf_runq_put(wf_worker_t *w, wf_ult_t *u)
{
	long b = atomic_load_explicit(&w->bottom, memory_order_relaxed);
	long t = atomic_load_explicit(&w->top, memory_order_acquire);
	if (unlikely(b - t >= WF_RUNQ_SIZE)) {
		wf_global_put(u);
		return;
	}
	atomic_store_explicit(&w->ring[b & RUNQ_MASK], u, memory_order_relaxed);
	atomic_store_explicit(&w->bottom, b + 1, memory_order_release);
}

/* Pop from the bottom of w's deque. Called only by the owning worker. */
wf_ult_t *wf_runq_get(wf_worker_t *w)
{
	long b = atomic_load_explicit(&w->bottom, memory_order_relaxed);
	long t = atomic_load_explicit(&w->top, memory_order_relaxed);
	if (b <= t)
		return NULL; /* empty; thieves only ever make it emptier */
	b--;
	atomic_exchange_explicit(&w->bottom, b, memory_order_seq_cst);
	t = atomic_load_explicit(&w->top, memory_order_seq_cst);
	if (t > b) {
		atomic_store_explicit(&w->bottom, b + 1, memory_order_relaxed);
		return NULL;
	}
	wf_ult_t *u = atomic_load_explicit(&w->ring[b & RUNQ_MASK], memory_order_relaxed);
	if (t == b) {
		/* The last one: race the thieves for it. */
		if (!atomic_compare_exchange_strong_explicit(
			    &w->top, &t, t + 1, memory_order_seq_cst, memory_order_relaxed))
			u = NULL;
		atomic_store_explicit(&w->bottom, b + 1, memory_order_relaxed);
	}
	return u;
}

/* Take the oldest ULT of victim's deque. patient: take a single queued ULT
 * at once (the thief is about to sleep). Called by w's owner. */
wf_ult_t *wf_runq_steal(wf_worker_t *w, wf_worker_t *victim, int patient)
{
	long t = atomic_load_explicit(&victim->top, memory_order_seq_cst);
	long b = atomic_load_explicit(&victim->bottom, memory_order_seq_cst);
	if (t >= b)
		return NULL;
	if (b - t == 1 && !patient) {
		/* Leave a lone fresh entry to its owner for a while. */
		if (w->seen_top[victim->id & (WF_SEEN_MAX - 1)] != t + 1) {
			w->seen_top[victim->id & (WF_SEEN_MAX - 1)] = t + 1;
			w->seen_count = 0;
			return NULL;
		}
		if (++w->seen_count < STEAL_PATIENCE)
			return NULL;
	}
	wf_ult_t *u = atomic_load_explicit(&victim->ring[t & RUNQ_MASK], memory_order_relaxed);
	if (!atomic_compare_exchange_strong_explicit(&victim->top, &t, t + 1, memory_order_seq_cst,
						     memory_order_relaxed))
		return NULL; /* lost to the owner or another thief */
	atomic_fetch_add_explicit(&w->n_steals, 1, memory_order_relaxed);
	return u;
}
