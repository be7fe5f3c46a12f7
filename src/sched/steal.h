/* The steal scheduler's state and its owner-side operations, inline so
 * that the switch path calls them directly (sched.c tests for this table
 * before calling through any other). The design is at the top of steal.c.
 */
#ifndef WF_STEAL_H
#define WF_STEAL_H

#include "sched/sched.h"
#include "util/bias.h"

#define WF_STEAL_RING 256 /* deque slots per worker; a power of two */
#define WF_SEEN_MAX   64  /* victims a thief remembers (a power of two) */

typedef struct wf_steal {
	/* Owner only. */
	wf_fifo_t local;            /* ULTs bound to this worker: never given away */
	uint32_t tick;              /* decisions so far (fairness between the queues) */
	int worker;                 /* the owner's id; read by thieves, set before publishing */
	long seen_top[WF_SEEN_MAX]; /* as a thief: each victim's top (+1) at the last scan */
	int seen_count;             /* as a thief: scans that saw it unchanged */

	/* The owner's end, under one owner-biased lock (util/bias.h): the
	 * owner puts and takes on its side (no locked instruction), a thief
	 * takes on the other (a membarrier), only once the deque is empty.
	 *   next     the ULT put last as new or woken: the deque's bottom
	 *            entry, kept out of the deque so that a hand-off (a wake
	 *            then a park, a create then a join) costs no locked
	 *            instruction (the deque's pop costs an exchange, and a CAS
	 *            for its last entry);
	 *   yielded  ULTs that yielded or were preempted here, behind
	 *            everything ready; n_yielded is their number, for hints.
	 * Only the owner fills either, so its own read of empty is exact. */
	WF_ALIGNED_CL wf_bias_lock_t own;
	_Atomic(wf_ult_t *) next;
	wf_fifo_t yielded;
	atomic_int n_yielded;

	/* Chase-Lev deque: the owner pushes and pops at bottom, thieves take
	 * from top. */
	WF_ALIGNED_CL atomic_long top;
	WF_ALIGNED_CL atomic_long bottom;
	_Atomic(wf_ult_t *) ring[WF_STEAL_RING];
} wf_steal_t;

/* Deque overflow: one FIFO for every worker running steal. */
WF_HIDDEN extern wf_mpfifo_t wf_steal_shared;

WF_HIDDEN wf_ult_t *wf_steal_give(wf_steal_t *victim, wf_steal_t *thief, int patient);

/* Push u at the bottom of s's deque (the shared FIFO when it is full). */
static inline void wf_steal_push(wf_steal_t *s, wf_ult_t *u)
{
	long b = atomic_load_explicit(&s->bottom, memory_order_relaxed);
	long t = atomic_load_explicit(&s->top, memory_order_acquire);
	if (unlikely(b - t >= WF_STEAL_RING)) {
		wf_mpfifo_put(&wf_steal_shared, u);
		return;
	}
	atomic_store_explicit(&s->ring[b & (WF_STEAL_RING - 1)], u, memory_order_relaxed);
	atomic_store_explicit(&s->bottom, b + 1, memory_order_release);
}

/* Pop from the bottom of s's deque. */
static inline wf_ult_t *wf_steal_pop(wf_steal_t *s)
{
	long b = atomic_load_explicit(&s->bottom, memory_order_relaxed);
	long t = atomic_load_explicit(&s->top, memory_order_relaxed);
	if (b <= t)
		return NULL; /* empty; thieves only ever make it emptier */
	b--;
	atomic_exchange_explicit(&s->bottom, b, memory_order_seq_cst);
	t = atomic_load_explicit(&s->top, memory_order_seq_cst);
	if (t > b) {
		atomic_store_explicit(&s->bottom, b + 1, memory_order_relaxed);
		return NULL;
	}
	wf_ult_t *u = atomic_load_explicit(&s->ring[b & (WF_STEAL_RING - 1)], memory_order_relaxed);
	if (t == b) {
		/* The last one: race the thieves for it. */
		if (!atomic_compare_exchange_strong_explicit(
			    &s->top, &t, t + 1, memory_order_seq_cst, memory_order_relaxed))
			u = NULL;
		atomic_store_explicit(&s->bottom, b + 1, memory_order_relaxed);
	}
	return u;
}

/* The owner's side of next: put u there (the one it held goes to the
 * deque's bottom, right below), take what is there. */
static inline void wf_steal_put_next(wf_steal_t *s, wf_ult_t *u)
{
	wf_bias_owner_lock(&s->own);
	wf_ult_t *prev = atomic_load_explicit(&s->next, memory_order_relaxed);
	atomic_store_explicit(&s->next, u, memory_order_relaxed);
	wf_bias_owner_unlock(&s->own);
	if (prev)
		wf_steal_push(s, prev);
}

static inline wf_ult_t *wf_steal_take_next(wf_steal_t *s)
{
	if (!atomic_load_explicit(&s->next, memory_order_relaxed))
		return NULL;
	wf_bias_owner_lock(&s->own);
	wf_ult_t *u = atomic_load_explicit(&s->next, memory_order_relaxed);
	atomic_store_explicit(&s->next, NULL, memory_order_relaxed);
	wf_bias_owner_unlock(&s->own);
	return u;
}

/* The yield FIFO's sides: the owner's put and get, a thief's take
 * (steal.c). */
static inline void wf_steal_yield_put(wf_steal_t *s, wf_ult_t *u)
{
	wf_bias_owner_lock(&s->own);
	wf_fifo_push(&s->yielded, u);
	atomic_store_explicit(&s->n_yielded,
			      atomic_load_explicit(&s->n_yielded, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	wf_bias_owner_unlock(&s->own);
}

static inline wf_ult_t *wf_steal_yield_pop(wf_steal_t *s)
{
	wf_ult_t *u = wf_fifo_pop(&s->yielded);
	if (u)
		atomic_store_explicit(&s->n_yielded,
				      atomic_load_explicit(&s->n_yielded, memory_order_relaxed) - 1,
				      memory_order_relaxed);
	return u;
}

static inline wf_ult_t *wf_steal_yield_get(wf_steal_t *s)
{
	if (!atomic_load_explicit(&s->n_yielded, memory_order_relaxed))
		return NULL;
	wf_bias_owner_lock(&s->own);
	wf_ult_t *u = wf_steal_yield_pop(s);
	wf_bias_owner_unlock(&s->own);
	return u;
}

/* put: a bound ULT to the local FIFO (nobody else may run it); a yielding
 * or preempted one behind everything ready, in the yield FIFO; any other to
 * next, the bottom of the deque, where it runs next unless a thief takes
 * it first. Called only by the owner. */
static inline int wf_steal_put(wf_steal_t *s, wf_ult_t *u, int why)
{
	if (u->bound_worker >= 0) {
		wf_fifo_push(&s->local, u);
		return 0;
	}
	if (why == WEFT_SCHED_YIELDED || why == WEFT_SCHED_PREEMPTED)
		wf_steal_yield_put(s, u);
	else
		wf_steal_put_next(s, u);
	return 1;
}

/* The two FIFOs a worker running steal takes from besides its deque: its
 * yield FIFO and the shared one (overflow). first_shared says which one
 * is asked first; the callers alternate, so that neither starves while
 * the other never empties (yielders that spin on a flag). */
static inline wf_ult_t *wf_steal_fifos(wf_steal_t *s, int first_shared)
{
	wf_ult_t *u;
	if (first_shared)
		return (u = wf_mpfifo_get(&wf_steal_shared)) ? u : wf_steal_yield_get(s);
	return (u = wf_steal_yield_get(s)) ? u : wf_mpfifo_get(&wf_steal_shared);
}

/* get: the two FIFOs first once in 61 decisions (so that yielders and
 * overflow are not starved by a deque that never empties); bound and deque
 * ULTs (next first) in turn; then the FIFOs. Called only by the owner. */
static inline wf_ult_t *wf_steal_get(wf_steal_t *s)
{
	wf_ult_t *u;
	uint32_t tick = ++s->tick;
	if (tick % 61 == 0 && (u = wf_steal_fifos(s, (tick / 61) & 1)))
		return u;
	if (s->local.head && (tick & 1))
		return wf_fifo_pop(&s->local);
	if ((u = wf_steal_take_next(s)) || (u = wf_steal_pop(s)))
		return u;
	if ((u = wf_fifo_pop(&s->local)))
		return u;
	return wf_steal_fifos(s, tick & 1);
}

/* Nothing another worker could take? A hint, for any worker. */
static inline int wf_steal_empty(const wf_steal_t *s)
{
	return atomic_load_explicit(&s->bottom, memory_order_relaxed) -
			       atomic_load_explicit(&s->top, memory_order_relaxed) <=
		       0 &&
	       !atomic_load_explicit(&s->next, memory_order_relaxed) &&
	       !atomic_load_explicit(&s->n_yielded, memory_order_relaxed) &&
	       wf_mpfifo_empty(&wf_steal_shared);
}

#endif
