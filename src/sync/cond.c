/* Condition variables on wait-on-address.
 *
 * seq counts signals and broadcasts. A waiter reads seq while it holds the
 * mutex, releases the mutex and waits while seq is unchanged; a signal bumps
 * seq and wakes one waiter, so a signal between the release and the wait is
 * not lost (the wait sees seq changed and returns). waiters counts the
 * threads blocked on the condition variable: a waiter adds itself before it
 * releases the mutex, and whoever ends its wait takes it off - signal and
 * broadcast for the ones they wake or move (wf_wake and wf_requeue say how
 * many; the wait queue's lock decides each waiter's fate once), the waiter
 * itself when it leaves on its own (a timeout, a cancellation, a signal's
 * interruption, seq moved before it slept). So signal and broadcast skip
 * the wake when it is zero, destroy reports EBUSY only while a thread is
 * still blocked (POSIX: a condition variable may be destroyed once a
 * broadcast woke every waiter, before they have the mutex back), and a
 * woken waiter does not touch the condition variable again.
 *
 * seq and waiters are the two halves of one 64-bit word (`word`), so each
 * change to them is one locked instruction: a wait's count and its read
 * of seq are one fetch-add, and a signal's bump and its count of the one
 * it woke are one fetch-add made under the wait queue's lock
 * (wf_wake_counted), where a waiter between its read of seq and its
 * sleep checks seq. A signal that finds no waiter does not bump seq at
 * all, as glibc's does not: a waiter counts itself before it releases the
 * mutex, so a signal made under the mutex after that release sees it; a
 * signal made without the mutex that does not see it came first. Each
 * signal then costs one locked instruction and the queue's lock, not two
 * and the lock. (waiters is the low half: a wrapping seq carries out of
 * the word, not into the count.)
 *
 * Broadcast does not wake everybody: it wakes one waiter and moves the rest
 * onto the mutex's wait queue (wf_requeue). A waiter that the requeue moved,
 * or woke while moving others, retakes the mutex as a waiter (lock word 2,
 * mutex.c), so each unlock hands the mutex to the next moved waiter: they
 * run one after another instead of stampeding. wf_wait_requeued tells each
 * waiter whether it was one of them, so the chain of hand-offs cannot
 * break; a waiter a signal woke retakes the mutex normally, and its unlock
 * skips the wake. (Not from the broadcast counter: a broadcast made without
 * the mutex held can bump it before a waiter reads it and still move that
 * waiter - left on the mutex's queue by an unlock that saw no waiters.)
 *
 * A 32-bit seq can wrap between a waiter's read and its wait only after 2^32
 * signals in that window; the waiter would then miss one signal.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "sync/wait.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && offsetof(weft_cond_t, waiters) == 0 &&
		       offsetof(weft_cond_t, seq) == 4,
	       "waiters and seq are the low and high halves of one word");

#define SEQ_ONE    ((uint64_t)1 << 32)
#define WAITERS(v) ((uint32_t)(v))

/* The word of seq and waiters. */
static inline uint64_t *word(weft_cond_t *c)
{
	return (uint64_t *)(void *)c;
}

int weft_condattr_init(weft_condattr_t *a)
{
	if (!a)
		return EINVAL;
	memset(a, 0, sizeof *a);
	return 0;
}

int weft_condattr_destroy(weft_condattr_t *a)
{
	return a ? 0 : EINVAL;
}

int weft_condattr_setclock(weft_condattr_t *a, clockid_t clock)
{
	if (!a || (clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME))
		return EINVAL;
	a->clock = clock;
	return 0;
}

int weft_condattr_getclock(const weft_condattr_t *a, clockid_t *clock)
{
	if (!a || !clock)
		return EINVAL;
	*clock = a->clock;
	return 0;
}

int weft_cond_init(weft_cond_t *c, const weft_condattr_t *a)
{
	if (!c || (a && a->clock != CLOCK_MONOTONIC && a->clock != CLOCK_REALTIME))
		return EINVAL;
	memset(c, 0, sizeof *c);
	if (a)
		c->clock = (uint32_t)a->clock;
	return 0;
}

int weft_cond_destroy(weft_cond_t *c)
{
	if (!c)
		return EINVAL;
	return WAITERS(WF_LOAD(word(c))) ? EBUSY : 0;
}

static int cond_wait(weft_cond_t *c, weft_mutex_t *m, clockid_t clock,
		     const struct timespec *abstime)
{
	if (!c || !m)
		return EINVAL;
	uint64_t deadline = 0;
	if (abstime) {
		int e = wf_deadline(clock, abstime, &deadline);
		if (e)
			return e;
	}
	wf_testcancel();
	__atomic_store_n(&c->mutex, m, __ATOMIC_RELAXED);
	uint32_t seq = (uint32_t)(__atomic_fetch_add(word(c), 1, __ATOMIC_SEQ_CST) >> 32);
	uint32_t depth;
	int rc = wf_mutex_unlock_for_wait(m, &depth);
	if (rc) {
		WF_SUB(word(c), 1);
		return rc;
	}
	int requeued;
	rc = wf_wait_requeued(&c->seq, seq, deadline, WF_WAIT_CANCEL | WF_WAIT_FOR(WF_BLOCK_COND),
			      c, &requeued);
	if (rc && !requeued)
		WF_SUB(word(c), 1); /* it left on its own; else its waker counted it */
	wf_mutex_relock(m, depth, requeued);
	if (rc == ECANCELED)
		wf_cancel_act(); /* with the mutex held, as POSIX requires */
	/* EAGAIN: seq moved before we slept - a signal for us. A requeued
	 * waiter that times out on the mutex's queue still reports the timeout. */
	return rc == ETIMEDOUT || rc == ENOMEM ? rc : 0;
}

int weft_cond_wait(weft_cond_t *c, weft_mutex_t *m)
{
	return cond_wait(c, m, CLOCK_REALTIME, NULL);
}

int weft_cond_timedwait(weft_cond_t *c, weft_mutex_t *m, const struct timespec *abstime)
{
	if (!c || !abstime)
		return EINVAL;
	return cond_wait(c, m, (clockid_t)WF_LOAD_RLX(&c->clock), abstime);
}

int weft_cond_clockwait(weft_cond_t *c, weft_mutex_t *m, clockid_t clock,
			const struct timespec *abstime)
{
	if (!abstime)
		return EINVAL;
	return cond_wait(c, m, clock, abstime);
}

int weft_cond_signal(weft_cond_t *c)
{
	if (!c)
		return EINVAL;
	if (WAITERS(WF_LOAD(word(c))))
		wf_wake_counted(&c->seq, 1, word(c), SEQ_ONE);
	return 0;
}

int weft_cond_broadcast(weft_cond_t *c)
{
	if (!c || __atomic_load_n(&c->reserved, __ATOMIC_RELAXED))
		return EINVAL; /* not a condition variable: its mutex would be garbage */
	if (!WAITERS(WF_ADD(word(c), SEQ_ONE)))
		return 0;
	weft_mutex_t *m = __atomic_load_n(&c->mutex, __ATOMIC_RELAXED);
	int n = m ? wf_requeue(&c->seq, 1, &m->state, INT_MAX) : wf_wake(&c->seq, INT_MAX);
	if (n)
		WF_SUB(word(c), (uint64_t)n);
	return 0;
}
