/* A spinlock that biases itself to the thread that keeps taking it.
 *
 * A wait queue's lock (src/sync/wait.c) is taken twice per hand-off between
 * two threads: by the waker and by the next waiter. When both run on one
 * worker, each exchange on the lock word is a locked instruction that
 * guards against nobody. So once the same taker has taken the lock
 * BSPIN_AFTER times in a row, its last unlock biases the lock to it, and
 * from then on it takes the lock by entering its own side: the owner's
 * side of an owner-biased lock (bias.h) that belongs to the taker, not to
 * the lock - a store and a load, no locked instruction. Any other taker
 * first takes the bias away (revoke): the other side of the owner's lock
 * (a membarrier), which waits until the owner is out, then bias = 0. Each
 * revoke doubles the run the next bias needs (up to BSPIN_AFTER <<
 * BSPIN_MAX_SHIFT), so a lock that keeps changing hands pays a membarrier
 * only once in thousands of takes, and one that never stays with one
 * taker never biases at all.
 *
 * Takers: a small integer the caller names each one by, `who` (a worker:
 * its id plus one), with a side of its own (the caller's table, `sides`).
 * A `who` must name one kernel thread at a time, and only that thread
 * enters its side. who 0 is a taker that never biases a lock (a thread
 * that is no worker's).
 *
 *   unbiased  take: exchange on `word` (a test-and-test-and-set
 *             spinlock), then check bias: still 0, else let go and go
 *             back. The unlock, at the end of the taker's run, may set
 *             bias (to itself) before it releases the word.
 *   biased    the owner (who == bias): enter its side, then check bias
 *             again: still ours, else leave and go back. Others: revoke,
 *             then as unbiased.
 *
 * Why the checks hold: bias is set only by a holder of the word, before it
 * releases it, so a taker that gets the word sees any bias set before; and
 * no bias can be set while the word is held, so the holder's check that
 * bias is 0 stays true until it lets go. Bias is cleared only inside the
 * other side of the owner's lock, once the owner is out of its side; an
 * owner that enters after that sees it cleared (entering waits while
 * `other` is up, and the revoker drops `other` only after the clear). A
 * would-be owner whose bias was taken away and given to another taker
 * meanwhile enters and leaves its own side - not the new owner's - and
 * changes nothing. So a holder of the word and an owner never coexist.
 *
 * A taker holds at most one lock through its side, and never waits for a
 * lock meanwhile: its side stands for every lock biased to it, so a
 * revoker of another one would wait for it while it waited for the
 * revoker (or for a lock the revoker holds). Code that holds two locks at
 * once takes both as who 0, on their words (wait.c's requeue).
 *
 * Ordering: the word is taken with acquire and released with release, a
 * side with bias.h's (release out, acquire in); a revoke reads the owner's
 * exit with acquire and clears bias with release, and a taker of the word
 * reads bias with acquire, so what the owner wrote inside happens-before
 * whoever takes the word next.
 *
 * The owner must not be interrupted inside by code that takes a lock
 * biased to it (as for a spinlock: weft never does). A lock taken inside
 * a side must be released by the same `who` (it may be released by a
 * different context of it: wait.c's wait that parks holding its bucket's
 * lock); wf_bspin_lock returns how it was taken, for wf_bspin_unlock.
 */
#ifndef WF_UTIL_BSPIN_H
#define WF_UTIL_BSPIN_H

#include "util/bias.h"

#define BSPIN_AFTER     8  /* takes in a row by one taker before the first bias */
#define BSPIN_MAX_SHIFT 12 /* ... doubled by each revoke, up to 8 << 12 */

typedef struct wf_bspin {
	atomic_int word;  /* the spinlock of the unbiased mode */
	atomic_int bias;  /* 0, or the taker that enters its side instead */
	int last, streak; /* under the word: its last taker and how many in a row */
	int shift;        /* under the word or a revoke: revokes so far */
} wf_bspin_t;

/* A taker's side: an owner-biased lock whose owner is the taker. */
typedef wf_bias_lock_t wf_bspin_side_t;

/* Take the bias away from its owner b, whose side is s. */
static inline void wf_bspin_revoke(wf_bspin_t *l, int b, wf_bspin_side_t *s)
{
	wf_bias_other_lock(s);
	/* acquire: the unlock that set the bias read last, streak and shift */
	if (atomic_load_explicit(&l->bias, memory_order_acquire) == b) {
		if (l->shift < BSPIN_MAX_SHIFT)
			l->shift++;
		l->streak = 0;
		atomic_store_explicit(&l->bias, 0, memory_order_release);
	}
	wf_bias_other_unlock(s);
}

/* Take l as `who`; sides(b) is taker b's side. Returns how it was taken,
 * for the unlock: who (through its side) or 0 (the word). */
static inline int wf_bspin_lock(wf_bspin_t *l, int who, wf_bspin_side_t *(*sides)(int))
{
	for (;;) {
		int b = atomic_load_explicit(&l->bias, memory_order_relaxed);
		if (b) {
			if (b != who) {
				wf_bspin_revoke(l, b, sides(b));
				continue;
			}
			wf_bspin_side_t *s = sides(who);
			wf_bias_owner_lock(s);
			if (likely(atomic_load_explicit(&l->bias, memory_order_relaxed) == who))
				return who;
			wf_bias_owner_unlock(s); /* revoked meanwhile */
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
				return 0;
			}
			atomic_store_explicit(&l->word, 0, memory_order_release);
			continue;
		}
		while (atomic_load_explicit(&l->word, memory_order_relaxed))
			wf_cpu_relax();
	}
}

/* Release l, taken as `how` (wf_bspin_lock's result). */
static inline void wf_bspin_unlock(wf_bspin_t *l, int how, wf_bspin_side_t *(*sides)(int))
{
	if (how) {
		wf_bias_owner_unlock(sides(how));
		return;
	}
	if (l->last && l->streak >= (BSPIN_AFTER << l->shift))
		atomic_store_explicit(&l->bias, l->last, memory_order_release);
	atomic_store_explicit(&l->word, 0, memory_order_release);
}

/* Forget l's bias, when the takers' table changes: no taker but who 0
 * may hold or take l meanwhile (a taker 0 never sets a bias, and a holder
 * of the word sees none). */
static inline void wf_bspin_unbias(wf_bspin_t *l)
{
	atomic_store_explicit(&l->bias, 0, memory_order_release);
}

#endif
