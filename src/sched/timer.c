/* Timers: how a ULT waits with a deadline without holding its worker.
 *
 * Each worker has a binary min-heap of timers (wf_worker.timers). A ULT that
 * waits with a deadline arms a timer on the worker it runs on; the timer
 * lives in the waiter's stack frame (src/sync/wait.c), so arming allocates nothing
 * unless the heap's array must grow.
 *
 * Who fires: the owning worker, which checks its heap's earliest deadline
 *   - every 16 scheduling decisions while it is busy (sched.c, pick_next),
 *   - on every scan while it is idle and spinning, and
 *   - when its futex sleep times out: an idle worker sleeps until its
 *     earliest deadline, not indefinitely (sched.c, find_work).
 * An owner that runs one ULT for a long time without a scheduling decision
 * (weft is not preemptive) would delay its timers, so idle workers help
 * (wf_timers_help): a spinning worker fires any worker's expired timers
 * (with a trylock: it never waits for a heap), and a sleeping worker sets
 * its futex timeout no later than WF_TIMER_BACKSTOP_NS past the earliest
 * deadline of each worker that was busy when it went to sleep. A woken
 * waiter then runs on the helping worker, which was idle anyway.
 *
 * Locking: the heap's spinlock covers the array, every timer's index and
 * the call of its fire function. Cancelling takes the same lock, so once
 * wf_timer_cancel returns, no fire function is running on the timer and
 * none will: the waiter may then drop its stack frame. Lock order: heap
 * lock before a wait bucket's lock (fire functions take bucket locks).
 */
#include <errno.h>
#include <stdlib.h>

#include "sched/sched.h"

static void heap_set(wf_timers_t *h, int i, wf_timer_t *t)
{
	h->v[i] = t;
	t->index = i;
}

static void sift_up(wf_timers_t *h, int i)
{
	wf_timer_t *t = h->v[i];
	while (i > 0) {
		int parent = (i - 1) / 2;
		if (h->v[parent]->deadline <= t->deadline)
			break;
		heap_set(h, i, h->v[parent]);
		i = parent;
	}
	heap_set(h, i, t);
}

static void sift_down(wf_timers_t *h, int i)
{
	wf_timer_t *t = h->v[i];
	for (;;) {
		int c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->v[c + 1]->deadline < h->v[c]->deadline)
			c++;
		if (t->deadline <= h->v[c]->deadline)
			break;
		heap_set(h, i, h->v[c]);
		i = c;
	}
	heap_set(h, i, t);
}

/* Remove the timer at index i. Called with h->lock held. */
static void heap_remove(wf_timers_t *h, int i)
{
	wf_timer_t *t = h->v[i];
	t->index = -1;
	h->n--;
	if (i != h->n) {
		heap_set(h, i, h->v[h->n]);
		if (i > 0 && h->v[i]->deadline < h->v[(i - 1) / 2]->deadline)
			sift_up(h, i);
		else
			sift_down(h, i);
	}
	atomic_store_explicit(&h->next, h->n ? h->v[0]->deadline : UINT64_MAX,
			      memory_order_release);
}

void wf_timers_init(wf_timers_t *h)
{
	atomic_store_explicit(&h->next, UINT64_MAX, memory_order_relaxed);
}

void wf_timers_forked(wf_timers_t *h)
{
	/* The timers were the gone ULTs' (their waits were on their stacks). */
	wf_spin_unlock(&h->lock);
	h->n = 0;
	atomic_store_explicit(&h->next, UINT64_MAX, memory_order_relaxed);
}

void wf_timers_fini(wf_timers_t *h)
{
	free(h->v);
	h->v = NULL;
	h->cap = 0;
}

int wf_timer_add(wf_timers_t *h, wf_timer_t *t, uint64_t deadline, wf_timer_fn fire)
{
	t->deadline = deadline;
	t->fire = fire;
	t->heap = h;
	wf_spin_lock(&h->lock);
	if (h->n == h->cap) {
		/* Grown by the owner only, so no other thread reallocates; the
		 * lock still covers it against cancels reading the array. */
		int cap = h->cap ? 2 * h->cap : 64;
		wf_timer_t **v = realloc(h->v, (size_t)cap * sizeof *v);
		if (!v) {
			wf_spin_unlock(&h->lock);
			t->index = -1;
			return ENOMEM;
		}
		h->v = v;
		h->cap = cap;
	}
	h->v[h->n] = t;
	sift_up(h, h->n++);
	atomic_store_explicit(&h->next, h->v[0]->deadline, memory_order_release);
	wf_spin_unlock(&h->lock);
	return 0;
}

void wf_timer_cancel(wf_timer_t *t)
{
	wf_timers_t *h = t->heap;
	wf_spin_lock(&h->lock);
	if (t->index >= 0)
		heap_remove(h, t->index);
	wf_spin_unlock(&h->lock);
}

/* Fire h's expired timers; try: give up if the lock is taken. */
static int poll_heap(wf_timers_t *h, uint64_t now, int try)
{
	/* Fire under the lock, unpark after it: an unpark may queue work and
	 * wake another worker, which need not wait for our lock. */
	enum { BATCH = 32 };
	wf_parker_t *wake[BATCH];
	int fired = 0;
	for (;;) {
		int k = 0;
		if (!try)
			wf_spin_lock(&h->lock);
		else if (!wf_spin_trylock(&h->lock))
			return fired;
		while (k < BATCH && h->n && h->v[0]->deadline <= now) {
			wf_timer_t *t = h->v[0];
			heap_remove(h, 0);
			wf_parker_t *p = t->fire(t);
			if (p)
				wake[k++] = p;
		}
		int more = h->n && h->v[0]->deadline <= now;
		wf_spin_unlock(&h->lock);
		for (int i = 0; i < k; i++)
			wf_unpark(wake[i]);
		fired += k;
		if (!more)
			return fired;
	}
}

int wf_timers_poll(wf_timers_t *h, uint64_t now)
{
	if (wf_timers_next(h) > now)
		return 0;
	return poll_heap(h, now, 0);
}

int wf_timers_help(wf_worker_t *w, uint64_t now)
{
	int fired = 0;
	for (int i = 0; i < wf_rt.nworkers; i++) {
		wf_worker_t *v = wf_rt.workers[i];
		if (v != w && wf_timers_next(&v->timers) <= now)
			fired += poll_heap(&v->timers, now, 1);
	}
	return fired;
}

uint64_t wf_timers_backstop(wf_worker_t *w)
{
	uint64_t until = UINT64_MAX;
	for (int i = 0; i < wf_rt.nworkers; i++) {
		wf_worker_t *v = wf_rt.workers[i];
		if (v == w ||
		    atomic_load_explicit(&v->sleep_state, memory_order_relaxed) == WF_SLEEPING)
			continue; /* asleep: it wakes for its own timers */
		uint64_t next = wf_timers_next(&v->timers);
		if (next < UINT64_MAX - WF_TIMER_BACKSTOP_NS && next + WF_TIMER_BACKSTOP_NS < until)
			until = next + WF_TIMER_BACKSTOP_NS;
	}
	return until;
}
