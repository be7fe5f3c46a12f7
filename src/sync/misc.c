/* Barriers, counting semaphores, spinlocks and once. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>

#include "sync/wait.h"
#include "util/sys.h"

/* ---- barriers ---------------------------------------------------------------
 * arrived, count and inside change under the word lock b->lock. The last of
 * count arrivals starts a new phase and wakes everyone waiting on phase;
 * the others wait while phase is the one they arrived in. */

int weft_barrierattr_init(weft_barrierattr_t *a)
{
	if (!a)
		return EINVAL;
	memset(a, 0, sizeof *a);
	return 0;
}

int weft_barrierattr_destroy(weft_barrierattr_t *a)
{
	return a ? 0 : EINVAL;
}

int weft_barrier_init(weft_barrier_t *b, const weft_barrierattr_t *a, unsigned count)
{
	if (!b || count == 0 || count > INT_MAX)
		return EINVAL;
	memset(b, 0, sizeof *b);
	b->count = count;
	return 0;
}

int weft_barrier_destroy(weft_barrier_t *b)
{
	if (!b || __atomic_load_n(&b->lock, __ATOMIC_RELAXED) > 1)
		return EINVAL; /* not a barrier: its lock word would look held for ever */
	wf_word_lock(&b->lock);
	int busy = b->arrived || b->inside;
	wf_word_unlock(&b->lock);
	return busy ? EBUSY : 0;
}

int weft_barrier_wait(weft_barrier_t *b)
{
	if (!b || __atomic_load_n(&b->lock, __ATOMIC_RELAXED) > 1)
		return EINVAL;
	wf_word_lock(&b->lock);
	if (b->count == 0) {
		wf_word_unlock(&b->lock);
		return EINVAL; /* never initialised */
	}
	if (++b->arrived == b->count) {
		b->arrived = 0;
		WF_ADD(&b->phase, 1);
		wf_word_unlock(&b->lock);
		wf_wake(&b->phase, INT_MAX);
		return WEFT_BARRIER_SERIAL_THREAD;
	}
	uint32_t phase = WF_LOAD_RLX(&b->phase);
	b->inside++;
	wf_word_unlock(&b->lock);
	while (WF_LOAD(&b->phase) == phase)
		wf_wait(&b->phase, phase, 0, WF_WAIT_FOR(WF_BLOCK_BARRIER));
	wf_word_lock(&b->lock);
	b->inside--;
	wf_word_unlock(&b->lock);
	return 0;
}

/* ---- semaphores ---------------------------------------------------------------
 * value is the count of units; waiters counts threads that found it 0 and
 * may be asleep. A waiter announces itself (waiters++) before it re-checks
 * value inside wf_wait; a poster adds to value before it reads waiters.
 * The two are the halves of one 64-bit word (glibc's semaphore has the
 * same shape), so each side's write and read are one locked instruction:
 * the poster's compare-and-swap of value returns waiters, and the
 * waiter's announce returns value. A woken waiter takes its unit and
 * leaves the count in one compare-and-swap. At least one side sees the
 * other: the poster wakes, or the waiter finds the unit. (value is the
 * low half and never passes WEFT_SEM_VALUE_MAX, so it cannot carry into
 * waiters.) */

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && offsetof(weft_sem_t, value) == 0 &&
		       offsetof(weft_sem_t, waiters) == 4 && _Alignof(weft_sem_t) == 8,
	       "value and waiters are the low and high halves of one word");

#define SEM_WAITER   ((uint64_t)1 << 32)
#define SEM_VALUE(x) ((uint32_t)(x))

static inline uint64_t *sem_word(weft_sem_t *s)
{
	return (uint64_t *)(void *)s;
}

int weft_sem_init(weft_sem_t *s, int pshared, unsigned value)
{
	if (!s || pshared || value > WEFT_SEM_VALUE_MAX)
		return EINVAL;
	s->value = value;
	s->waiters = 0;
	return 0;
}

int weft_sem_destroy(weft_sem_t *s)
{
	if (!s)
		return EINVAL;
	return WF_LOAD(sem_word(s)) >> 32 ? EBUSY : 0;
}

static int sem_take(weft_sem_t *s)
{
	uint64_t x = WF_LOAD_RLX(sem_word(s));
	while (SEM_VALUE(x) > 0)
		if (__atomic_compare_exchange_n(sem_word(s), &x, x - 1, 1, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return 1;
	return 0;
}

int weft_sem_trywait(weft_sem_t *s)
{
	if (!s)
		return EINVAL;
	return sem_take(s) ? 0 : EAGAIN;
}

static int sem_wait(weft_sem_t *s, clockid_t clock, const struct timespec *abstime)
{
	if (!s)
		return EINVAL;
	wf_testcancel();
	if (sem_take(s))
		return 0;
	uint64_t deadline = 0;
	if (abstime) {
		int e = wf_deadline(clock, abstime, &deadline);
		if (e)
			return e;
	}
	/* Announce ourselves, then take a unit and leave in one step. */
	uint64_t x = WF_ADD(sem_word(s), SEM_WAITER);
	int rc;
	for (;;) {
		while (SEM_VALUE(x) > 0)
			if (__atomic_compare_exchange_n(sem_word(s), &x, x - 1 - SEM_WAITER, 1,
							__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
				return 0;
		rc = wf_wait(&s->value, 0, deadline, WF_WAIT_CANCEL | WF_WAIT_FOR(WF_BLOCK_SEM));
		if (rc == ETIMEDOUT || rc == ECANCELED || rc == ENOMEM || rc == EINTR)
			break; /* EINTR: a signal handler ran, as sem_wait(3) */
		x = WF_LOAD_RLX(sem_word(s));
	}
	x = __atomic_sub_fetch(sem_word(s), SEM_WAITER, __ATOMIC_SEQ_CST);
	if (rc != ECANCELED && SEM_VALUE(x) > 0 && sem_take(s))
		return 0; /* a unit came with the timeout or the signal */
	/* A wake we were sent but did not use (timeout, cancel) goes on. */
	x = WF_LOAD(sem_word(s));
	if (SEM_VALUE(x) && x >> 32)
		wf_wake(&s->value, 1);
	if (rc == ECANCELED)
		wf_cancel_act();
	return rc;
}

int weft_sem_wait(weft_sem_t *s)
{
	return sem_wait(s, CLOCK_REALTIME, NULL);
}

int weft_sem_timedwait(weft_sem_t *s, const struct timespec *abstime)
{
	return abstime ? sem_wait(s, CLOCK_REALTIME, abstime) : EINVAL;
}

int weft_sem_clockwait(weft_sem_t *s, clockid_t clock, const struct timespec *abstime)
{
	return abstime ? sem_wait(s, clock, abstime) : EINVAL;
}

int weft_sem_post(weft_sem_t *s)
{
	if (!s)
		return EINVAL;
	uint64_t x = WF_LOAD_RLX(sem_word(s));
	do {
		if (SEM_VALUE(x) >= WEFT_SEM_VALUE_MAX)
			return EOVERFLOW;
	} while (!__atomic_compare_exchange_n(sem_word(s), &x, x + 1, 1, __ATOMIC_SEQ_CST,
					      __ATOMIC_RELAXED));
	if (x >> 32) /* waiters when value went up */
		wf_wake(&s->value, 1);
	return 0;
}

int weft_sem_getvalue(weft_sem_t *s, int *value)
{
	if (!s || !value)
		return EINVAL;
	*value = (int)WF_LOAD(&s->value);
	return 0;
}

/* ---- spinlocks ------------------------------------------------------------------ */

#define SPIN_YIELD_EVERY 256 /* pauses between two yields of a spinning thread */

int weft_spin_init(weft_spinlock_t *l, int pshared)
{
	if (!l)
		return EINVAL;
	l->locked = 0;
	return 0;
}

int weft_spin_destroy(weft_spinlock_t *l)
{
	if (!l)
		return EINVAL;
	return WF_LOAD(&l->locked) ? EBUSY : 0;
}

int weft_spin_lock(weft_spinlock_t *l)
{
	if (!l)
		return EINVAL;
	/* Polls back off exponentially, as a mutex's spinner does (mutex.c:
	 * each poll costs the holder its cache line). */
	for (int delay = 1, since_yield = 0;;) {
		if (!WF_LOAD_RLX(&l->locked) &&
		    !__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE))
			return 0;
		/* The holder may be a ULT waiting for this very worker; a
		 * signal given to us meanwhile (we spin inside weft, where
		 * no handler runs: sync/procsig.c) is taken here. */
		if ((since_yield += wf_cpu_backoff(&delay)) >= SPIN_YIELD_EVERY) {
			since_yield = 0;
			wf_sig_deliver_sent(wf_yield()); /* sched_yield if no ULT */
		}
	}
}

int weft_spin_trylock(weft_spinlock_t *l)
{
	if (!l)
		return EINVAL;
	return __atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE) ? EBUSY : 0;
}

int weft_spin_unlock(weft_spinlock_t *l)
{
	if (!l)
		return EINVAL;
	__atomic_store_n(&l->locked, 0, __ATOMIC_RELEASE);
	return 0;
}

/* ---- once -------------------------------------------------------------------------
 * state: 0 not run, 1 running, 2 done. The caller that moves 0 -> 1 runs
 * fn; the others wait while it is 1. If fn is cancelled, the state goes
 * back to 0 and a waiter takes over (as POSIX requires). */

enum { ONCE_NEW = 0, ONCE_RUNNING = 1, ONCE_DONE = 2 };

static void once_cancelled(void *arg)
{
	weft_once_t *o = arg;
	__atomic_store_n(&o->state, ONCE_NEW, __ATOMIC_RELEASE);
	wf_wake(&o->state, INT_MAX);
}

int weft_once(weft_once_t *o, void (*fn)(void))
{
	if (!o || !fn)
		return EINVAL;
	for (;;) {
		uint32_t s = WF_LOAD(&o->state);
		if (s == ONCE_DONE)
			return 0;
		if (s == ONCE_NEW && WF_CAS(&o->state, &s, ONCE_RUNNING)) {
			weft_cleanup_push(once_cancelled, o);
			fn();
			weft_cleanup_pop(0);
			__atomic_store_n(&o->state, ONCE_DONE, __ATOMIC_RELEASE);
			wf_wake(&o->state, INT_MAX);
			return 0;
		}
		if (s == ONCE_RUNNING)
			wf_wait(&o->state, ONCE_RUNNING, 0, WF_WAIT_FOR(WF_BLOCK_ONCE));
	}
}
