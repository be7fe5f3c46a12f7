/* A spinlock that biases itself to the thread that keeps taking it.
 *
 * A wait queue's lock (src/sync/wait.c) is taken twice per hand-off between
 * two threads: by the waker and by the next waiter. When both run on one
 * worker, each exchange on the lock word is a locked instruction that
 * guards against nobody. So once the same taker - a small integer the
 * caller names it by, `who`, one per kernel thread that may hold the lock
 * at a time (a worker: its id plus one) - has taken the lock BSPIN_AFTER
 * times in a row, its last unlock biases the lock to it, and from then on
 * it takes the lock on the owner's side of an owner-biased lock (bias.h):
 * a store and a load, no locked instruction. Any other taker first takes
 * the bias away (revoke): the other side of that lock (a membarrier),
 * which waits until the owner is out, then bias = 0; each revoke doubles
 * the run the next bias needs (up to BSPIN_AFTER << BSPIN_MAX_SHIFT), so
 * a lock that keeps changing hands pays a membarrier only once in
 * thousands of takes, and one that never stays with one taker never
 * biases at all.
 *
 *   unbiased  take: exchange on `word` (a test-and-test-and-set
 *             spinlock), then check bias: still 0, else let go and go
 *             back (see below). The unlock, in the taker's run, may set
 *             bias before it releases the word.
 *   biased    the owner (who == bias): the owner's side, then bias again:
 *             still ours, else out and back. Others: revoke, then as
 *             unbiased.
 *
 * Why the checks hold: bias is set only by a holder of the word, before it
 * releases it, so a taker that gets the word sees any bias set before; it
 * is cleared only under the other side, once the owner is out, and an
 * owner that enters after that sees it cleared (its side waits for
 * `other` to drop, which is released after the clear). So a holder of the
 * word and a holder of the owner's side never coexist: the word's holder
 * saw bias 0 after taking it, and no bias can be set while it holds it;
 * the owner saw bias == who inside its side, and a bias is taken away only
 * while the owner is outside.
 *
 * Ordering: the word is taken with acquire and released with release, the
 * owner's side is bias.h's (release out, acquire in); a revoke reads the
 * owner's exit with acquire and clears bias with release, and a taker of
 * the word reads bias with acquire, so what the owner wrote inside
 * happens-before whoever takes the word next.
 *
 * The owner must not be interrupted inside by code that takes the same
 * lock (as for the spinlock: weft never does), and `who` must name one
 * kernel thread at a time. A lock taken on the owner's side must be
 * released by the same `who` (it may be released by a different context
 * of it: the held-across-a-switch wait of wait.c); wf_bspin_lock returns
 * how it was taken, for wf_bspin_unlock. who 0: a taker that never biases
 * the lock (a thread that is no worker's).
 */
#ifndef WF_UTIL_BSPIN_H
#define WF_UTIL_BSPIN_H

#include "util/bias.h"

#define BSPIN_AFTER     8  /* takes in a row by one taker before the first bias */
#define BSPIN_MAX_SHIFT 12 /* ... doubled by each revoke, up to 8 << 12 */

typedef struct wf_bspin {
	atomic_int word; /* the spinlock of the unbiased mode */
	atomic_int bias; /* 0, or the taker that takes the owner's side */
	wf_bias_lock_t side;
	int last, streak; /* under the word: its last taker and how many in a row */
	int shift;        /* under the word or the other side: revokes so far */
} wf_bspin_t;

enum { WF_BSPIN_WORD = 0, WF_BSPIN_OWNER = 1 };

/* Take the bias away from its owner b. */
static inline void wf_bspin_revoke(wf_bspin_t *l, int b)
{
	wf_bias_other_lock(&l->side);
	if (atomic_load_explicit(&l->bias, memory_order_relaxed) == b) {
		if (l->shift < BSPIN_MAX_SHIFT)
			l->shift++;
		l->streak = 0;
		atomic_store_explicit(&l->bias, 0, memory_order_release);
	}
	wf_bias_other_unlock(&l->side);
}

/* Returns how it was taken: WF_BSPIN_OWNER or WF_BSPIN_WORD. */
static inline int wf_bspin_lock(wf_bspin_t *l, int who)
{
	for (;;) {
		int b = atomic_load_explicit(&l->bias, memory_order_relaxed);
		if (b) {
			if (b != who) {
				wf_bspin_revoke(l, b);
				continue;
			}
			wf_bias_owner_lock(&l->side);
			if (likely(atomic_load_explicit(&l->bias, memory_order_relaxed) == who))
				return WF_BSPIN_OWNER;
			wf_bias_owner_unlock(&l->side); /* revoked meanwhile */
			continue;
		}
		if (!atomic_exchange_explicit(&l->word, 1, memory_order_acquire)) {
			if (likely(!atomic_load_explicit(&l->bias, memory_order_acquire))) {
				if (l->last == who)
					l->streak++;
				else {
					l->last = who;
					l->streak = 1;
				}
				return WF_BSPIN_WORD;
			}
			atomic_store_explicit(&l->word, 0, memory_order_release);
			continue;
		}
		while (atomic_load_explicit(&l->word, memory_order_relaxed))
			wf_cpu_relax();
	}
}

static inline void wf_bspin_unlock(wf_bspin_t *l, int how)
{
	if (how == WF_BSPIN_OWNER) {
		wf_bias_owner_unlock(&l->side);
		return;
	}
	if (l->last && l->streak >= (BSPIN_AFTER << l->shift))
		atomic_store_explicit(&l->bias, l->last, memory_order_release);
	atomic_store_explicit(&l->word, 0, memory_order_release);
}

#endif
