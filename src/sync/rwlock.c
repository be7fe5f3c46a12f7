/* Read-write locks: counters under an internal word lock, two wait words.
 *
 * The fields of weft_rwlock_t other than rseq/wseq are read and written only
 * under l->lock, held for a few instructions and never across a wait.
 * Readers wait on rseq, writers on wseq; whoever makes room bumps the word
 * (under the lock) and wakes after dropping it, so a waiter that read the
 * word under the lock either sees the bump (its wait returns EAGAIN) or is
 * already queued when the wake comes.
 *
 * Who is let in:
 *   PREFER_READER  a reader enters unless a writer is inside; on release,
 *                  waiting readers are woken before a writer.
 *   PREFER_WRITER  a reader also stays out while a writer waits; on release,
 *                  one waiting writer is woken before the readers.
 * Priorities come first (POSIX, with the Thread Execution Scheduling
 * option): when a ULT under SCHED_FIFO or SCHED_RR waits, the
 * highest-priority waiter decides - a writer if one ranks at least as high
 * as every waiting reader (writers take precedence among equals), else the
 * readers - and a reader does not enter past a waiting writer of its own
 * rank or higher. The ranks are read from the wait queues (wf_wait_top_rank),
 * only when both kinds wait, or a writer waits for an arriving reader.
 * A waiter that gives up (timeout, cancellation - the lock calls are
 * cancellation points, as POSIX allows) passes on a wake it may have
 * consumed, so it cannot strand the others.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "sched/preempt.h"
#include "sched/prio.h"
#include "sync/wait.h"
#include "trace/trace.h"

enum { WAKE_NONE = 0, WAKE_WRITER = 1, WAKE_READERS = 2 };

int weft_rwlockattr_init(weft_rwlockattr_t *a)
{
	if (!a)
		return EINVAL;
	memset(a, 0, sizeof *a);
	return 0;
}

int weft_rwlockattr_destroy(weft_rwlockattr_t *a)
{
	return a ? 0 : EINVAL;
}

int weft_rwlockattr_setpref(weft_rwlockattr_t *a, int pref)
{
	if (!a || (pref != WEFT_RWLOCK_PREFER_READER && pref != WEFT_RWLOCK_PREFER_WRITER))
		return EINVAL;
	a->pref = pref;
	return 0;
}

int weft_rwlockattr_getpref(const weft_rwlockattr_t *a, int *pref)
{
	if (!a || !pref)
		return EINVAL;
	*pref = a->pref;
	return 0;
}

int weft_rwlock_init(weft_rwlock_t *l, const weft_rwlockattr_t *a)
{
	if (!l ||
	    (a && a->pref != WEFT_RWLOCK_PREFER_READER && a->pref != WEFT_RWLOCK_PREFER_WRITER))
		return EINVAL;
	memset(l, 0, sizeof *l);
	if (a)
		l->pref = (uint32_t)a->pref;
	return 0;
}

/* Not an rwlock weft made (garbage, or one freed and overwritten): its
 * internal lock word would look held for ever. */
static int bad(const weft_rwlock_t *l)
{
	return !l || __atomic_load_n(&l->lock, __ATOMIC_RELAXED) > 1 ||
	       __atomic_load_n(&l->pref, __ATOMIC_RELAXED) > WEFT_RWLOCK_PREFER_WRITER;
}

int wf_rwlock_destroy(weft_rwlock_t *l, int held_ok)
{
	if (bad(l))
		return EINVAL;
	wf_word_lock(&l->lock);
	int busy = l->rwait || l->wwait || (!held_ok && (l->writer || l->readers));
	wf_word_unlock(&l->lock);
	return busy ? EBUSY : 0;
}

int weft_rwlock_destroy(weft_rwlock_t *l)
{
	return wf_rwlock_destroy(l, 0);
}

/* Whom to wake now that the lock may have room. Called with l->lock held;
 * bumps the chosen wait word. */
static int choose_wake(weft_rwlock_t *l)
{
	if (l->writer)
		return WAKE_NONE;
	int writer_ok = l->readers == 0 && l->wwait;
	int readers_ok = l->rwait && !(l->pref == WEFT_RWLOCK_PREFER_WRITER && l->wwait);
	int prefer_writer = l->pref == WEFT_RWLOCK_PREFER_WRITER;
	if (l->rwait && l->wwait) {
		int wr = wf_wait_top_rank(&l->wseq), rr = wf_wait_top_rank(&l->rseq);
		if (wr > 0 || rr > 0) { /* priorities decide */
			prefer_writer = wr >= rr;
			readers_ok = !prefer_writer;
		}
	}
	if (writer_ok && (prefer_writer || !readers_ok)) {
		WF_ADD(&l->wseq, 1);
		return WAKE_WRITER;
	}
	if (readers_ok) {
		WF_ADD(&l->rseq, 1);
		return WAKE_READERS;
	}
	return WAKE_NONE;
}

static void do_wake(weft_rwlock_t *l, int who)
{
	if (who == WAKE_WRITER)
		wf_wake(&l->wseq, 1);
	else if (who == WAKE_READERS)
		wf_wake(&l->rseq, INT_MAX);
}

/* May the caller, of rank `rank`, enter now? Called with l->lock held.
 * The same rule as choose_wake's, or a reader it wakes would wait again
 * with nobody left to wake the writers: with priorities (a waiting writer
 * or the reader above rank 0), a reader enters only past writers it
 * outranks (writers first among equals); without, the kind decides. */
static int can_enter(const weft_rwlock_t *l, int write, int rank)
{
	if (write)
		return !l->writer && l->readers == 0;
	if (l->writer)
		return 0;
	if (!l->wwait)
		return 1;
	int wr = wf_wait_top_rank(&l->wseq);
	if (wr > 0 || rank > 0)
		return wr < rank;
	return l->pref != WEFT_RWLOCK_PREFER_WRITER;
}

/* Enter (can_enter was true). Called with l->lock held; drops it. */
static int enter(weft_rwlock_t *l, int write, uint64_t me)
{
	int rc = 0;
	if (write) {
		l->writer = 1;
		l->owner = me;
	} else if (l->readers == INT32_MAX) {
		rc = EAGAIN;
	} else {
		l->readers++;
	}
	wf_word_unlock(&l->lock);
	return rc;
}

static int lock_common(weft_rwlock_t *l, int write, int try, clockid_t clock,
		       const struct timespec *abstime)
{
	/* As glibc, a bad deadline is EINVAL before anything else (EDEADLK). */
	if (bad(l) || (abstime && ((clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME) ||
				   abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000)))
		return EINVAL;
	uint64_t me = wf_self_key(), deadline = 0, t0 = 0;
	int have_deadline = 0, rank = wf_self_rank();
	if (!try)
		wf_testcancel();
	wf_word_lock(&l->lock);
	for (;;) {
		if (can_enter(l, write, rank)) {
			int rc = enter(l, write, me);
			if (unlikely(t0) && WF_TRACING())
				wf_trace_lock(l, WF_TRACE_LOCK_RWLOCK, t0);
			return rc;
		}
		if (l->writer && l->owner == me) {
			wf_word_unlock(&l->lock);
			return EDEADLK;
		}
		if (try) {
			wf_word_unlock(&l->lock);
			return EBUSY;
		}
		if (abstime && !have_deadline) {
			int e = wf_deadline(clock, abstime, &deadline);
			if (e) {
				wf_word_unlock(&l->lock);
				return e;
			}
			have_deadline = 1;
		}
		if (!t0 && WF_TRACING())
			t0 = wf_now_ns();
		uint32_t *word = write ? &l->wseq : &l->rseq;
		uint32_t *count = write ? &l->wwait : &l->rwait;
		(*count)++;
		uint32_t seq = WF_LOAD_RLX(word);
		wf_word_unlock(&l->lock);
		int rc =
			wf_wait(word, seq, deadline, WF_WAIT_CANCEL | WF_WAIT_FOR(WF_BLOCK_RWLOCK));
		wf_word_lock(&l->lock);
		(*count)--;
		if (rc == ETIMEDOUT || rc == ENOMEM || rc == ECANCELED) {
			if (rc != ECANCELED && can_enter(l, write, rank))
				return enter(l, write, me); /* free after all: take it */
			/* Pass on a wake we may have eaten. */
			int who = choose_wake(l);
			wf_word_unlock(&l->lock);
			do_wake(l, who);
			if (rc == ECANCELED)
				wf_cancel_act();
			return rc;
		}
	}
}

int weft_rwlock_rdlock(weft_rwlock_t *l)
{
	return lock_common(l, 0, 0, CLOCK_REALTIME, NULL);
}

int weft_rwlock_tryrdlock(weft_rwlock_t *l)
{
	return lock_common(l, 0, 1, CLOCK_REALTIME, NULL);
}

int weft_rwlock_timedrdlock(weft_rwlock_t *l, const struct timespec *abstime)
{
	return abstime ? lock_common(l, 0, 0, CLOCK_REALTIME, abstime) : EINVAL;
}

int weft_rwlock_clockrdlock(weft_rwlock_t *l, clockid_t clock, const struct timespec *abstime)
{
	return abstime ? lock_common(l, 0, 0, clock, abstime) : EINVAL;
}

int weft_rwlock_wrlock(weft_rwlock_t *l)
{
	return lock_common(l, 1, 0, CLOCK_REALTIME, NULL);
}

int weft_rwlock_trywrlock(weft_rwlock_t *l)
{
	return lock_common(l, 1, 1, CLOCK_REALTIME, NULL);
}

int weft_rwlock_timedwrlock(weft_rwlock_t *l, const struct timespec *abstime)
{
	return abstime ? lock_common(l, 1, 0, CLOCK_REALTIME, abstime) : EINVAL;
}

int weft_rwlock_clockwrlock(weft_rwlock_t *l, clockid_t clock, const struct timespec *abstime)
{
	return abstime ? lock_common(l, 1, 0, clock, abstime) : EINVAL;
}

int weft_rwlock_unlock(weft_rwlock_t *l)
{
	if (bad(l))
		return EINVAL;
	wf_word_lock(&l->lock);
	if (l->writer) {
		if (l->owner != wf_self_key()) {
			wf_word_unlock(&l->lock);
			return EPERM;
		}
		l->writer = 0;
		l->owner = 0;
	} else if (l->readers > 0) {
		l->readers--;
	} else {
		wf_word_unlock(&l->lock);
		return EPERM;
	}
	int who = choose_wake(l);
	wf_word_unlock(&l->lock);
	do_wake(l, who);
	wf_preempt_point(); /* a lock loop owes its worker a slice (sched/preempt.c) */
	return 0;
}
