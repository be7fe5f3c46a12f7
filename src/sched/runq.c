/* Run queues.
 *
 * Per worker (steal scheduler): a bounded ring of WF_RUNQ_SIZE slots plus a
 * one-slot `runnext`, in the style of Go's per-P run queue. Only the owner
 * writes `tail` (single producer); the owner and thieves consume from `head`
 * with a CAS, so a steal never blocks the owner. When the ring is full, half
 * of it moves to the global queue. Thieves take half of a victim's ring at
 * once, which keeps stealing rare once work is spread.
 *
 * Memory ordering: a slot is written (relaxed) before the release store of
 * `tail` that publishes it; consumers load `tail` with acquire before reading
 * slots, and confirm what they read with a CAS on `head` (release, so that
 * the owner does not overwrite a slot a thief is still copying).
 *
 * Global queue: a spinlock-protected FIFO. Inbox: a spinlock-protected FIFO
 * per worker for ULTs bound to it that other threads make runnable.
 */
#include "sched/sched.h"

#define RUNQ_MASK (WF_RUNQ_SIZE - 1)

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

/* Ring full: move half of it and u to the global queue. Returns 0 if a
 * thief changed head meanwhile (the caller retries the fast path).
 * Called only by the owner. */
static int runq_put_slow(wf_worker_t *w, wf_ult_t *u, unsigned h, unsigned t)
{
	enum { N = WF_RUNQ_SIZE / 2 };
	wf_ult_t *batch[N + 1];
	for (unsigned i = 0; i < N; i++)
		batch[i] = atomic_load_explicit(&w->ring[(h + i) & RUNQ_MASK],
		                                memory_order_relaxed);
	if (!atomic_compare_exchange_strong_explicit(&w->head, &h, h + N, memory_order_release,
	                                             memory_order_relaxed))
		return 0;
	batch[N] = u;
	wf_spin_lock(&wf_rt.global_lock);
	for (unsigned i = 0; i <= N; i++)
		wf_fifo_push(&wf_rt.global, batch[i]);
	atomic_fetch_add_explicit(&wf_rt.global_n, N + 1, memory_order_relaxed);
	wf_spin_unlock(&wf_rt.global_lock);
	(void)t;
	return 1;
}

/* Queue u on w. next: u runs before the ring (it was just created or woken
 * here); whatever held runnext moves to the ring's tail.
 * Called only by the owning worker. */
void wf_runq_put(wf_worker_t *w, wf_ult_t *u, int next)
{
	if (next) {
		u = atomic_exchange_explicit(&w->runnext, u, memory_order_acq_rel);
		if (!u)
			return;
	}
	for (;;) {
		unsigned h = atomic_load_explicit(&w->head, memory_order_acquire);
		unsigned t = atomic_load_explicit(&w->tail, memory_order_relaxed);
		if (t - h < WF_RUNQ_SIZE) {
			atomic_store_explicit(&w->ring[t & RUNQ_MASK], u, memory_order_relaxed);
			atomic_store_explicit(&w->tail, t + 1, memory_order_release);
			return;
		}
		if (runq_put_slow(w, u, h, t))
			return;
	}
}

/* Next ULT from w's own queue. Called only by the owning worker. */
wf_ult_t *wf_runq_get(wf_worker_t *w)
{
	wf_ult_t *u = atomic_load_explicit(&w->runnext, memory_order_relaxed);
	if (u && atomic_compare_exchange_strong_explicit(&w->runnext, &u, NULL,
	                                                 memory_order_acquire,
	                                                 memory_order_relaxed))
		return u;
	for (;;) {
		unsigned h = atomic_load_explicit(&w->head, memory_order_acquire);
		unsigned t = atomic_load_explicit(&w->tail, memory_order_relaxed);
		if (t == h)
			return NULL;
		u = atomic_load_explicit(&w->ring[h & RUNQ_MASK], memory_order_relaxed);
		if (atomic_compare_exchange_strong_explicit(&w->head, &h, h + 1,
		                                            memory_order_release,
		                                            memory_order_relaxed))
			return u;
	}
}

int wf_runq_empty(wf_worker_t *w)
{
	unsigned h = atomic_load_explicit(&w->head, memory_order_acquire);
	unsigned t = atomic_load_explicit(&w->tail, memory_order_acquire);
	return h == t && atomic_load_explicit(&w->runnext, memory_order_acquire) == NULL;
}

/* Take about half of victim's ring into w's ring and return one ULT to run.
 * take_next: also take victim's runnext when its ring is empty (a thief
 * does that only after spinning a while, so a ULT that was just woken by
 * its partner usually stays on the partner's worker).
 * Called by w's owner; victim is any other worker. */
wf_ult_t *wf_runq_steal(wf_worker_t *w, wf_worker_t *victim, int take_next)
{
	unsigned wt = atomic_load_explicit(&w->tail, memory_order_relaxed);
	unsigned n;
	for (;;) {
		unsigned h = atomic_load_explicit(&victim->head, memory_order_acquire);
		unsigned t = atomic_load_explicit(&victim->tail, memory_order_acquire);
		n = t - h;
		n = n - n / 2;
		if (n == 0) {
			if (!take_next)
				return NULL;
			wf_ult_t *u = atomic_load_explicit(&victim->runnext, memory_order_relaxed);
			if (u && atomic_compare_exchange_strong_explicit(&victim->runnext, &u, NULL,
			                                                 memory_order_acquire,
			                                                 memory_order_relaxed))
				return u;
			return NULL;
		}
		if (n > WF_RUNQ_SIZE / 2)
			continue; /* read an inconsistent head/tail pair: retry */
		for (unsigned i = 0; i < n; i++) {
			wf_ult_t *u = atomic_load_explicit(&victim->ring[(h + i) & RUNQ_MASK],
			                                   memory_order_relaxed);
			atomic_store_explicit(&w->ring[(wt + i) & RUNQ_MASK], u,
			                      memory_order_relaxed);
		}
		if (atomic_compare_exchange_strong_explicit(&victim->head, &h, h + n,
		                                            memory_order_release,
		                                            memory_order_relaxed))
			break;
	}
	/* The last stolen one runs now; the others are published in w's ring. */
	n--;
	wf_ult_t *u = atomic_load_explicit(&w->ring[(wt + n) & RUNQ_MASK], memory_order_relaxed);
	if (n == 0)
		return u;
	unsigned h = atomic_load_explicit(&w->head, memory_order_acquire);
	if (wt - h + n >= WF_RUNQ_SIZE)
		wf_panic("stolen batch overflows the thief's ring (%u queued)", wt - h);
	atomic_store_explicit(&w->tail, wt + n, memory_order_release);
	atomic_fetch_add_explicit(&w->n_steals, 1, memory_order_relaxed);
	return u;
}
