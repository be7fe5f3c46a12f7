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
#include <string.h>

#include "sync/wait.h"

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
	return WF_LOAD(&c->waiters) ? EBUSY : 0;
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
	WF_ADD(&c->waiters, 1);
	uint32_t seq = WF_LOAD(&c->seq);
	uint32_t depth;
	int rc = wf_mutex_unlock_for_wait(m, &depth);
	if (rc) {
		WF_SUB(&c->waiters, 1);
		return rc;
	}
	int requeued;
	rc = wf_wait_requeued(&c->seq, seq, deadline, WF_WAIT_CANCEL | WF_WAIT_FOR(WF_BLOCK_COND),
			      &requeued);
	if (rc && !requeued)
		WF_SUB(&c->waiters, 1); /* it left on its own; else its waker counted it */
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
	WF_ADD(&c->seq, 1);
	if (WF_LOAD(&c->waiters)) {
		int n = wf_wake(&c->seq, 1);
		if (n)
			WF_SUB(&c->waiters, (uint32_t)n);
	}
	return 0;
}

int weft_cond_broadcast(weft_cond_t *c)
{
	if (!c || __atomic_load_n(&c->reserved, __ATOMIC_RELAXED))
		return EINVAL; /* not a condition variable: its mutex would be garbage */
	WF_ADD(&c->seq, 1);
	if (!WF_LOAD(&c->waiters))
		return 0;
	weft_mutex_t *m = __atomic_load_n(&c->mutex, __ATOMIC_RELAXED);
	int n = m ? wf_requeue(&c->seq, 1, &m->state, INT_MAX) : wf_wake(&c->seq, INT_MAX);
	if (n)
		WF_SUB(&c->waiters, (uint32_t)n);
	return 0;
}
