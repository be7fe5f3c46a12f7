/* Mutexes with a waiting policy per lock, and the adaptive policy.
 *
 * The lock word (weft_mutex_t.state) follows Drepper's "Futexes are
 * tricky" mutex: 0 unlocked, 1 locked, 2 locked and perhaps waited on. Lock
 * is one CAS 0->1 when free; unlock is one exchange to 0, plus a wake when
 * the old value was 2. A blocked locker waits on the word through wf_wait,
 * so a ULT parks (its worker runs other ULTs) and a foreign thread sleeps
 * on a futex in the same queue.
 *
 * Waiting policies (seed 004, section 6):
 *   SPIN       poll until free; a ULT yields its worker every YIELD_EVERY
 *              pauses so a holder on the same worker can run.
 *   SPIN_PARK  spin for a fixed budget (spin_set, or SPIN_DEFAULT), then park.
 *   PARK       park at once.
 *   ADAPTIVE   SPIN_PARK whose budget the lock retunes itself (adapt()).
 * A budget is a time, counted in pauses (the CPU's spin-wait hint), not a
 * number of polls.
 *
 * Spinning backs off. After each poll that found the lock held the spinner
 * waits twice as many pauses as before the last one, up to WF_BACKOFF_CAP
 * (the test-and-test-and-set lock with exponential backoff of Anderson,
 * "The Performance of Spin Lock Alternatives for Shared-Memory
 * Multiprocessors", 1990). Every poll pulls the lock's cache line to the
 * spinner's core, and the holder's next lock or unlock then misses. With a
 * poll per pause, 64 ULTs taking one mutex on two workers saw the lock
 * change workers every 4-5 acquisitions (weft-bench micro's
 * mutex_hammer_64_unbound: 118-136 ns per acquisition); with the backoff,
 * the worker that holds the lock takes it many times between two polls of
 * the other (15-20 acquisitions per change): 53-63 ns. The price is
 * that a spinner sees a release up to WF_BACKOFF_CAP pauses late, while
 * the releasing worker may take the lock again - as glibc's mutex lets it.
 *
 * Adaptive tuning. After every contended acquisition the new holder records
 * whether its spin phase won the lock and after how long (in pauses) - the
 * part of the previous holder's hold time it saw. Every WINDOW contended
 * acquisitions it decides, from the share of failed spins and the longest
 * successful one:
 *   - most spins failed (over 1/2): the lock is held long, or by a ULT that
 *     is not running; spinning only burns the worker: halve the budget
 *     (down to SPIN_FLOOR, which keeps probing);
 *   - a tail failed (over 1/16), or a spin won only near the end of the
 *     budget: the releases come a little later than the budget reaches,
 *     and each miss costs a park and a wake-up: double it (up to SPIN_CEIL);
 *   - no spin failed and the longest took under 1/16 of the budget: the
 *     budget has plenty of room: halve it (a shorter budget makes a failure,
 *     when the hold times change, cheaper). With 1/4 here the budget kept
 *     shrinking into the tail of the hold times and the TSP benchmark's
 *     queue lock parked 4x as often as with a fixed budget.
 * Parking costs far more than a poll (a context switch here, a futex wake
 * and a cache-cold resume across workers), so the rules lean to spinning
 * long enough to catch the tail, not just the average.
 * The counters are written only by the holder, so they need no atomics
 * beyond relaxed stores for readers of weft_mutex_stats.
 *
 * Ownership (recursive and errorcheck types): owner is the holder's
 * wf_self_key(), written by the holder; count is its recursion depth.
 *
 * Size: weft_mutex_t is 40 bytes so that the POSIX layer can keep it in a
 * pthread_mutex_t; hence 16-bit budgets and recursion depth, 32-bit
 * counters (the statistics wrap).
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>

#include "sched/preempt.h"
#include "sched/prio.h"
#include "sync/wait.h"
#include "trace/trace.h"
#include "util/sys.h"

#define SPIN_DEFAULT 100 /* pauses: ~2-5 us with x86's pause */
#define SPIN_FLOOR   8
#define SPIN_CEIL    8192
#define WINDOW       64
#define YIELD_EVERY  128 /* SPIN policy: pauses between two yields */

static int valid_type(int t)
{
	return t == WEFT_MUTEX_NORMAL || t == WEFT_MUTEX_RECURSIVE || t == WEFT_MUTEX_ERRORCHECK;
}

/* Does m record its owner? (Type 3 is glibc's adaptive kind, which a
 * pthread_mutex_t can carry from PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP.) */
static inline int tracked(const weft_mutex_t *m)
{
	return m->type == WEFT_MUTEX_RECURSIVE || m->type == WEFT_MUTEX_ERRORCHECK;
}

static int valid_policy(int p)
{
	return p >= WEFT_LOCK_ADAPTIVE && p <= WEFT_LOCK_PARK;
}

/* ---- attributes -------------------------------------------------------------- */

int weft_mutexattr_init(weft_mutexattr_t *a)
{
	if (!a)
		return EINVAL;
	memset(a, 0, sizeof *a);
	return 0;
}

int weft_mutexattr_destroy(weft_mutexattr_t *a)
{
	return a ? 0 : EINVAL;
}

int weft_mutexattr_settype(weft_mutexattr_t *a, int type)
{
	if (!a || !valid_type(type))
		return EINVAL;
	a->type = type;
	return 0;
}

int weft_mutexattr_gettype(const weft_mutexattr_t *a, int *type)
{
	if (!a || !type)
		return EINVAL;
	*type = a->type;
	return 0;
}

int weft_mutexattr_setpolicy(weft_mutexattr_t *a, int policy)
{
	if (!a || !valid_policy(policy))
		return EINVAL;
	a->policy = policy;
	return 0;
}

int weft_mutexattr_getpolicy(const weft_mutexattr_t *a, int *policy)
{
	if (!a || !policy)
		return EINVAL;
	*policy = a->policy;
	return 0;
}

int weft_mutexattr_setspin(weft_mutexattr_t *a, int spin)
{
	if (!a || spin < 1 || spin > WEFT_SPIN_MAX)
		return EINVAL;
	a->spin = spin;
	return 0;
}

int weft_mutexattr_getspin(const weft_mutexattr_t *a, int *spin)
{
	if (!a || !spin)
		return EINVAL;
	*spin = a->spin ? a->spin : SPIN_DEFAULT;
	return 0;
}

/* ---- init, destroy, tuning, stats ---------------------------------------------- */

int weft_mutex_init(weft_mutex_t *m, const weft_mutexattr_t *a)
{
	if (!m)
		return EINVAL;
	if (a && (!valid_type(a->type) || !valid_policy(a->policy) || a->spin < 0 ||
		  a->spin > WEFT_SPIN_MAX))
		return EINVAL;
	memset(m, 0, sizeof *m);
	if (a) {
		m->type = (uint16_t)a->type;
		m->policy = (uint16_t)a->policy;
		m->spin_set = (uint16_t)a->spin;
		m->spin = (uint16_t)a->spin;
	}
	return 0;
}

int weft_mutex_destroy(weft_mutex_t *m)
{
	if (!m)
		return EINVAL;
	return WF_LOAD(&m->state) ? EBUSY : 0;
}

int weft_mutex_setpolicy(weft_mutex_t *m, int policy)
{
	if (!m || !valid_policy(policy))
		return EINVAL;
	__atomic_store_n(&m->policy, (uint16_t)policy, __ATOMIC_RELAXED);
	return 0;
}

int weft_mutex_setspin(weft_mutex_t *m, int spin)
{
	if (!m || spin < 1 || spin > WEFT_SPIN_MAX)
		return EINVAL;
	__atomic_store_n(&m->spin_set, (uint16_t)spin, __ATOMIC_RELAXED);
	__atomic_store_n(&m->spin, (uint16_t)spin, __ATOMIC_RELAXED);
	return 0;
}

static int budget_of(const weft_mutex_t *m, int policy)
{
	int s = WF_LOAD_RLX(policy == WEFT_LOCK_ADAPTIVE ? &m->spin : &m->spin_set);
	return s > 0 ? s : SPIN_DEFAULT;
}

int weft_mutex_stats(const weft_mutex_t *m, weft_mutex_stats_t *out)
{
	if (!m || !out)
		return EINVAL;
	out->acquisitions = WF_LOAD_RLX(&m->n_acquired);
	out->contended = WF_LOAD_RLX(&m->n_contended);
	out->parks = WF_LOAD_RLX(&m->n_parks);
	out->policy = WF_LOAD_RLX(&m->policy);
	out->spin_budget = out->policy == WEFT_LOCK_PARK   ? 0
			   : out->policy == WEFT_LOCK_SPIN ? INT_MAX
							   : budget_of(m, out->policy);
	return 0;
}

/* ---- locking ------------------------------------------------------------------- */

/* The holder retunes the adaptive budget (see the top of the file). */
static void adapt(weft_mutex_t *m, int spun, int spent, int budget)
{
	uint32_t sample = m->sample + 1u, ok = m->spun_ok + (spun != 0);
	uint32_t longest = m->longest;
	if (spun && (uint32_t)spent > longest)
		longest = spent > UINT16_MAX ? UINT16_MAX : (uint32_t)spent;
	if (sample < WINDOW) {
		m->sample = (uint8_t)sample;
		m->spun_ok = (uint8_t)ok;
		m->longest = (uint16_t)longest;
		return;
	}
	int b = budget;
	uint32_t failed = sample - ok;
	if (failed * 2 > sample)
		b = b / 2 > SPIN_FLOOR ? b / 2 : SPIN_FLOOR;
	else if (failed * 16 > sample || longest * 4 > (uint32_t)b * 3)
		b = b * 2 < SPIN_CEIL ? b * 2 : SPIN_CEIL;
	else if (failed == 0 && longest * 16 < (uint32_t)b)
		b = b / 2 > SPIN_FLOOR ? b / 2 : SPIN_FLOOR;
	__atomic_store_n(&m->spin, (uint16_t)b, __ATOMIC_RELAXED);
	m->sample = m->spun_ok = 0;
	m->longest = 0;
}

static inline int try_take(weft_mutex_t *m)
{
	uint32_t z = 0;
	return WF_LOAD_RLX(&m->state) == 0 && WF_CAS(&m->state, &z, 1);
}

static void yield_worker(void)
{
	if (wf_worker_self())
		wf_yield();
	else
		WF_SYS(sched_yield)();
}

/* The lock was held: wait for it by m's policy. deadline_ns 0: none.
 * Returns 0 with the lock held, ETIMEDOUT or ENOMEM. flags: WF_WAIT_ASYNC
 * (a program's lock: an asynchronous cancellation acts while it waits) or 0. */
static int contend(weft_mutex_t *m, uint64_t deadline, int flags)
{
	int policy = WF_LOAD_RLX(&m->policy);
	int spun = 0, spent = 0, budget = 0;
	uint64_t parks = 0, t0 = WF_TRACING() ? wf_now_ns() : 0;
	/* A ULT under SCHED_FIFO or SCHED_RR queues at once: the wait queue
	 * is ordered by priority, a spinner is not (sched/prio.h). */
	if (policy == WEFT_LOCK_SPIN_PARK || policy == WEFT_LOCK_ADAPTIVE)
		if (wf_self_rank() > 0)
			policy = WEFT_LOCK_PARK;
	if (policy != WEFT_LOCK_PARK) {
		budget = policy == WEFT_LOCK_SPIN ? INT_MAX : budget_of(m, policy);
		int delay = 1, since_yield = 0;
		while (spent < budget) {
			if (try_take(m)) {
				spun = 1;
				goto acquired;
			}
			int waited = wf_cpu_backoff(&delay);
			if (policy != WEFT_LOCK_SPIN) {
				spent += waited;
			} else if ((since_yield += waited) >= YIELD_EVERY) {
				/* No budget: count only towards the next yield. */
				since_yield = 0;
				yield_worker();
				if (deadline && wf_now_ns() >= deadline)
					return ETIMEDOUT;
			}
		}
	}
	/* Park: mark the lock waited-on (2) and sleep while it stays held. */
	for (uint32_t c = WF_XCHG(&m->state, 2); c != 0; c = WF_XCHG(&m->state, 2)) {
		parks++;
		int rc = wf_wait(&m->state, 2, deadline, flags | WF_WAIT_FOR(WF_BLOCK_MUTEX));
		if (rc == ETIMEDOUT || rc == ENOMEM) {
			if (WF_XCHG(&m->state, 2) == 0)
				break; /* freed just in time: ours after all */
			__atomic_store_n(&m->n_parks, WF_LOAD_RLX(&m->n_parks) + (uint32_t)parks,
					 __ATOMIC_RELAXED);
			return rc;
		}
	}
acquired:
	WF_BUMP(&m->n_acquired);
	WF_BUMP(&m->n_contended);
	if (parks)
		__atomic_store_n(&m->n_parks, WF_LOAD_RLX(&m->n_parks) + (uint32_t)parks,
				 __ATOMIC_RELAXED);
	if (policy == WEFT_LOCK_ADAPTIVE)
		adapt(m, spun, spent, budget);
	if (t0 && WF_TRACING())
		wf_trace_lock(m, WF_TRACE_LOCK_MUTEX, t0);
	return 0;
}

/* Lock a mutex that its owner may hold already (recursive, errorcheck), or
 * that the fast path found held. deadline: see contend; a deadline of
 * UINT64_MAX means "trylock". */
static int lock_slow(weft_mutex_t *m, clockid_t clock, const struct timespec *abstime, int try)
{
	if (unlikely(m->type > 3))
		return EINVAL; /* not a mutex (3 is glibc's adaptive kind, as NORMAL) */
	uint64_t me = 0;
	if (tracked(m)) {
		me = wf_self_key();
		if (WF_LOAD_RLX(&m->owner) == me) {
			if (m->type != WEFT_MUTEX_RECURSIVE)
				return try ? EBUSY : EDEADLK;
			if (m->count == UINT16_MAX)
				return EAGAIN;
			m->count++;
			WF_BUMP(&m->n_acquired);
			return 0;
		}
	}
	int rc = 0;
	if (try_take(m)) {
		WF_BUMP(&m->n_acquired);
	} else if (try) {
		return EBUSY;
	} else {
		uint64_t deadline = 0;
		if (abstime && (rc = wf_deadline(clock, abstime, &deadline)))
			return rc;
		if ((rc = contend(m, deadline, WF_WAIT_ASYNC)))
			return rc;
	}
	if (me)
		__atomic_store_n(&m->owner, me, __ATOMIC_RELAXED);
	return 0;
}

int weft_mutex_lock(weft_mutex_t *m)
{
	if (unlikely(!m))
		return EINVAL;
	uint32_t z = 0;
	if (likely(m->type == WEFT_MUTEX_NORMAL) && WF_CAS(&m->state, &z, 1)) {
		WF_BUMP(&m->n_acquired);
		return 0;
	}
	return lock_slow(m, CLOCK_REALTIME, NULL, 0);
}

int weft_mutex_trylock(weft_mutex_t *m)
{
	if (!m)
		return EINVAL;
	return lock_slow(m, CLOCK_REALTIME, NULL, 1);
}

int weft_mutex_clocklock(weft_mutex_t *m, clockid_t clock, const struct timespec *abstime)
{
	if (!m || !abstime || (clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME))
		return EINVAL;
	return lock_slow(m, clock, abstime, 0);
}

int weft_mutex_timedlock(weft_mutex_t *m, const struct timespec *abstime)
{
	return weft_mutex_clocklock(m, CLOCK_REALTIME, abstime);
}

/* Release the word and wake one waiter if it was marked waited-on. */
static inline void release(weft_mutex_t *m)
{
	if (WF_XCHG(&m->state, 0) == 2)
		wf_wake(&m->state, 1);
}

int weft_mutex_unlock(weft_mutex_t *m)
{
	if (unlikely(!m || m->type > 3))
		return EINVAL;
	if (tracked(m)) {
		if (WF_LOAD_RLX(&m->owner) != wf_self_key())
			return EPERM;
		if (m->count) {
			m->count--;
			return 0;
		}
		__atomic_store_n(&m->owner, 0, __ATOMIC_RELAXED);
	}
	release(m);
	wf_preempt_point(); /* a lock loop owes its worker a slice (preempt.c) */
	return 0;
}

/* ---- for condition variables (cond.c) ---------------------------------------------- */

/* Check that the caller may wait with m, and release it completely. The
 * recursion depth is kept in *depth for wf_mutex_relock. */
int wf_mutex_unlock_for_wait(weft_mutex_t *m, uint32_t *depth)
{
	*depth = 0;
	if (tracked(m)) {
		if (WF_LOAD_RLX(&m->owner) != wf_self_key())
			return EPERM;
		*depth = m->count;
		m->count = 0;
		__atomic_store_n(&m->owner, 0, __ATOMIC_RELAXED);
	}
	release(m);
	return 0;
}

/* Take m back after a condition wait. Not a cancellation point, no deadline.
 * as_waiter: a broadcast moved the caller onto m's queue, or woke it and
 * moved others there; they sleep on m's word and only an unlock that sees 2
 * wakes them, so lock as a waiter (state 2) and keep the chain of hand-offs
 * going. Otherwise lock as usual (by m's policy). */
void wf_mutex_relock(weft_mutex_t *m, uint32_t depth, int as_waiter)
{
	if (!as_waiter) {
		if (!try_take(m))
			contend(m, 0, 0); /* no deadline: cannot fail */
		else
			WF_BUMP(&m->n_acquired);
	} else {
		uint64_t parks = 0, t0 = WF_TRACING() ? wf_now_ns() : 0;
		for (uint32_t c = WF_XCHG(&m->state, 2); c != 0; c = WF_XCHG(&m->state, 2)) {
			parks++;
			wf_wait(&m->state, 2, 0, WF_WAIT_FOR(WF_BLOCK_MUTEX));
		}
		if (parks && t0 && WF_TRACING())
			wf_trace_lock(m, WF_TRACE_LOCK_MUTEX, t0);
		WF_BUMP(&m->n_acquired);
		if (parks) {
			WF_BUMP(&m->n_contended);
			__atomic_store_n(&m->n_parks, WF_LOAD_RLX(&m->n_parks) + (uint32_t)parks,
					 __ATOMIC_RELAXED);
		}
	}
	if (tracked(m)) {
		__atomic_store_n(&m->owner, wf_self_key(), __ATOMIC_RELAXED);
		m->count = (uint16_t)depth;
	}
}

_Static_assert(sizeof(weft_mutex_t) == 40, "weft_mutex_t must fit in glibc's pthread_mutex_t");
_Static_assert(offsetof(weft_mutex_t, type) == 16, "type sits where glibc keeps its kind");
