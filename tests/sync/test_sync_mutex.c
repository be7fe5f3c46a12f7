/* weft_mutex_*: zero-initialised and attributed mutexes, every error path of
 * the three types, timed locking on both clocks, mutual exclusion under
 * contention from ULTs on every worker and foreign pthreads at once for each
 * waiting policy, policy changes on a live mutex, and the statistics.
 *
 * Mutual exclusion is checked two ways: a plain (non-atomic) counter bumped
 * inside the lock must reach the exact total, and an "inside" flag must never
 * be found set by a thread entering. Every test initialises the runtime and
 * shuts it down. */
#include "harness.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define NS_PER_S 1000000000LL
#define MS       1000000LL

/* The time on clock ns nanoseconds from now (ns may be negative). */
static struct timespec deadline_in(clockid_t clock, long long ns)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	long long t = (long long)ts.tv_sec * NS_PER_S + ts.tv_nsec + ns;
	ts.tv_sec = t / NS_PER_S;
	ts.tv_nsec = t % NS_PER_S;
	return ts;
}

/* How far clock is past ts (negative: ts is still ahead). */
static long long ns_past(clockid_t clock, const struct timespec *ts)
{
	struct timespec now;
	clock_gettime(clock, &now);
	return (long long)(now.tv_sec - ts->tv_sec) * NS_PER_S + (now.tv_nsec - ts->tv_nsec);
}

/* A call that timed out at deadline ts returned neither early nor very late. */
#define WT_RETURNED_AFTER(clock, ts)                         \
	do {                                                 \
		long long wt_late_ = ns_past((clock), (ts)); \
		WT_CMP(wt_late_, >=, 0);                     \
		WT_CMP(wt_late_, <, 2 * NS_PER_S);           \
	} while (0)

/* Run fn(arg) in a new pthread and wait for it without blocking the worker. */
static void *in_pthread(void *(*fn)(void *), void *arg)
{
	struct wt_pthread p;
	wt_pthread_start(&p, fn, arg);
	return wt_pthread_join(&p);
}

/* Run fn(arg) in a ULT on the other worker (or unbound with one worker). */
static void *in_ult(void *(*fn)(void *), void *arg)
{
	int w = weft_num_workers() > 1 ? 1 : -1;
	return wt_join(wt_spawn_on(w, fn, arg));
}

static void mutex_init_with(weft_mutex_t *m, int type, int policy, int spin)
{
	weft_mutexattr_t a;
	WT_OK(weft_mutexattr_init(&a));
	WT_OK(weft_mutexattr_settype(&a, type));
	WT_OK(weft_mutexattr_setpolicy(&a, policy));
	if (spin)
		WT_OK(weft_mutexattr_setspin(&a, spin));
	WT_OK(weft_mutex_init(m, &a));
	WT_OK(weft_mutexattr_destroy(&a));
}

static void *trylock_result(void *m)
{
	int r = weft_mutex_trylock(m);
	if (r == 0)
		WT_OK(weft_mutex_unlock(m));
	return (void *)(intptr_t)r;
}

static void *unlock_result(void *m)
{
	return (void *)(intptr_t)weft_mutex_unlock(m);
}

/* ---- initialisation and attributes --------------------------------------- */

static void test_zero_initialised_mutex_works(void **state)
{
	wt_init(2);
	weft_mutex_t m = {0};
	WT_OK(weft_mutex_lock(&m));
	WT_ERR(weft_mutex_trylock(&m), EBUSY);
	WT_ERR((intptr_t)in_ult(trylock_result, &m), EBUSY);
	WT_ERR((intptr_t)in_pthread(trylock_result, &m), EBUSY);
	WT_OK(weft_mutex_unlock(&m));
	WT_OK(weft_mutex_trylock(&m));
	WT_OK(weft_mutex_unlock(&m));
	WT_ERR((intptr_t)in_ult(trylock_result, &m), 0);
	WT_ERR((intptr_t)in_pthread(trylock_result, &m), 0);
	WT_OK(weft_mutex_destroy(&m));

	weft_mutex_t n = WEFT_MUTEX_INITIALIZER;
	WT_OK(weft_mutex_lock(&n));
	WT_OK(weft_mutex_unlock(&n));
	WT_OK(weft_mutex_init(&n, NULL));
	WT_OK(weft_mutex_lock(&n));
	WT_OK(weft_mutex_unlock(&n));
	WT_OK(weft_mutex_destroy(&n));
	WT_OK(weft_shutdown());
}

static void test_mutexattr_defaults_and_bad_values(void **state)
{
	weft_mutexattr_t a;
	int v = -5;
	WT_OK(weft_mutexattr_init(&a));
	WT_OK(weft_mutexattr_gettype(&a, &v));
	WT_EQ(v, WEFT_MUTEX_DEFAULT);
	WT_OK(weft_mutexattr_getpolicy(&a, &v));
	WT_EQ(v, WEFT_LOCK_ADAPTIVE);

	WT_ERR(weft_mutexattr_settype(&a, 99), EINVAL);
	WT_ERR(weft_mutexattr_settype(&a, -1), EINVAL);
	WT_ERR(weft_mutexattr_setpolicy(&a, 99), EINVAL);
	WT_ERR(weft_mutexattr_setpolicy(&a, -1), EINVAL);
	WT_ERR(weft_mutexattr_setspin(&a, 0), EINVAL);
	WT_ERR(weft_mutexattr_setspin(&a, -1), EINVAL);
	WT_ERR(weft_mutexattr_setspin(&a, WEFT_SPIN_MAX + 1), EINVAL);
	/* a rejected value leaves the attribute as it was */
	WT_OK(weft_mutexattr_gettype(&a, &v));
	WT_EQ(v, WEFT_MUTEX_DEFAULT);
	WT_OK(weft_mutexattr_getpolicy(&a, &v));
	WT_EQ(v, WEFT_LOCK_ADAPTIVE);

	int types[] = {WEFT_MUTEX_NORMAL, WEFT_MUTEX_RECURSIVE, WEFT_MUTEX_ERRORCHECK};
	for (size_t i = 0; i < 3; i++) {
		WT_OK(weft_mutexattr_settype(&a, types[i]));
		WT_OK(weft_mutexattr_gettype(&a, &v));
		WT_EQ(v, types[i]);
	}
	int policies[] = {WEFT_LOCK_ADAPTIVE, WEFT_LOCK_SPIN, WEFT_LOCK_SPIN_PARK, WEFT_LOCK_PARK};
	for (size_t i = 0; i < 4; i++) {
		WT_OK(weft_mutexattr_setpolicy(&a, policies[i]));
		WT_OK(weft_mutexattr_getpolicy(&a, &v));
		WT_EQ(v, policies[i]);
	}
	int spins[] = {1, 77, WEFT_SPIN_MAX};
	for (size_t i = 0; i < 3; i++) {
		WT_OK(weft_mutexattr_setspin(&a, spins[i]));
		WT_OK(weft_mutexattr_getspin(&a, &v));
		WT_EQ(v, spins[i]);
	}
	WT_OK(weft_mutexattr_destroy(&a));
}

static void test_live_mutex_bad_policy_or_spin_einval(void **state)
{
	wt_init(1);
	weft_mutex_t m = {0};
	WT_ERR(weft_mutex_setpolicy(&m, 99), EINVAL);
	WT_ERR(weft_mutex_setpolicy(&m, -1), EINVAL);
	WT_ERR(weft_mutex_setspin(&m, -1), EINVAL);
	WT_ERR(weft_mutex_setspin(&m, WEFT_SPIN_MAX + 1), EINVAL);
	WT_OK(weft_mutex_setpolicy(&m, WEFT_LOCK_PARK));
	WT_OK(weft_mutex_setspin(&m, 5));
	weft_mutex_stats_t st;
	WT_OK(weft_mutex_stats(&m, &st));
	WT_EQ(st.policy, WEFT_LOCK_PARK);
	WT_OK(weft_mutex_lock(&m));
	WT_OK(weft_mutex_unlock(&m));
	WT_OK(weft_shutdown());
}

/* ---- error paths of each type -------------------------------------------- */

static void test_normal_trylock_held_ebusy(void **state)
{
	wt_init(2);
	weft_mutex_t m;
	mutex_init_with(&m, WEFT_MUTEX_NORMAL, WEFT_LOCK_ADAPTIVE, 0);
	WT_OK(weft_mutex_lock(&m));
	WT_ERR(weft_mutex_trylock(&m), EBUSY); /* by the owner too */
	WT_ERR((intptr_t)in_ult(trylock_result, &m), EBUSY);
	WT_ERR((intptr_t)in_pthread(trylock_result, &m), EBUSY);
	WT_OK(weft_mutex_unlock(&m));
	WT_OK(weft_mutex_destroy(&m));
	WT_OK(weft_shutdown());
}

static void test_errorcheck_errors(void **state)
{
	wt_init(2);
	weft_mutex_t m;
	mutex_init_with(&m, WEFT_MUTEX_ERRORCHECK, WEFT_LOCK_ADAPTIVE, 0);
	WT_ERR(weft_mutex_unlock(&m), EPERM); /* not locked */
	WT_OK(weft_mutex_lock(&m));
	WT_ERR(weft_mutex_lock(&m), EDEADLK);
	WT_ERR(weft_mutex_trylock(&m), EBUSY);
	struct timespec ts = deadline_in(CLOCK_REALTIME, 10 * NS_PER_S);
	WT_ERR(weft_mutex_timedlock(&m, &ts), EDEADLK);
	WT_ERR((intptr_t)in_ult(unlock_result, &m), EPERM);
	WT_ERR((intptr_t)in_pthread(unlock_result, &m), EPERM);
	WT_ERR((intptr_t)in_ult(trylock_result, &m), EBUSY);
	WT_OK(weft_mutex_unlock(&m));
	WT_ERR(weft_mutex_unlock(&m), EPERM); /* already unlocked */
	WT_ERR((intptr_t)in_ult(trylock_result, &m), 0);
	WT_ERR((intptr_t)in_ult(unlock_result, &m), EPERM);
	WT_OK(weft_mutex_destroy(&m));
	WT_OK(weft_shutdown());
}

struct foreign_owner {
	weft_mutex_t m;
	atomic_int locked;
	atomic_int release;
};

static void *errorcheck_in_foreign_thread(void *arg)
{
	struct foreign_owner *f = arg;
	WT_OK(weft_mutex_lock(&f->m));
	WT_ERR(weft_mutex_lock(&f->m), EDEADLK);
	WT_ERR(weft_mutex_trylock(&f->m), EBUSY);
	atomic_store(&f->locked, 1);
	WT_WAIT(atomic_load(&f->release), 30);
	WT_OK(weft_mutex_unlock(&f->m));
	WT_ERR(weft_mutex_unlock(&f->m), EPERM);
	return NULL;
}

static void test_errorcheck_owned_by_foreign_thread(void **state)
{
	/* A foreign thread has no weft_t, but it still owns what it locks. */
	wt_init(2);
	static struct foreign_owner f;
	mutex_init_with(&f.m, WEFT_MUTEX_ERRORCHECK, WEFT_LOCK_ADAPTIVE, 0);
	struct wt_pthread p;
	wt_pthread_start(&p, errorcheck_in_foreign_thread, &f);
	WT_WAIT(atomic_load(&f.locked), 10);
	WT_ERR(weft_mutex_trylock(&f.m), EBUSY);
	WT_ERR(weft_mutex_unlock(&f.m), EPERM);
	WT_ERR((intptr_t)in_ult(unlock_result, &f.m), EPERM);
	WT_ERR((intptr_t)in_pthread(unlock_result, &f.m), EPERM); /* another live pthread */
	atomic_store(&f.release, 1);
	wt_pthread_join(&p);
	WT_OK(weft_mutex_lock(&f.m));
	WT_OK(weft_mutex_unlock(&f.m));
	WT_OK(weft_mutex_destroy(&f.m));
	WT_OK(weft_shutdown());
}

static void *recursive_in_other(void *arg)
{
	weft_mutex_t *m = arg;
	WT_ERR(weft_mutex_trylock(m), EBUSY);
	WT_ERR(weft_mutex_unlock(m), EPERM);
	return NULL;
}

static void test_recursive_counts_relocks(void **state)
{
	wt_init(2);
	weft_mutex_t m;
	mutex_init_with(&m, WEFT_MUTEX_RECURSIVE, WEFT_LOCK_ADAPTIVE, 0);
	WT_ERR(weft_mutex_unlock(&m), EPERM); /* not locked */
	WT_OK(weft_mutex_lock(&m));
	WT_OK(weft_mutex_lock(&m));
	WT_OK(weft_mutex_trylock(&m));
	struct timespec ts = deadline_in(CLOCK_REALTIME, 10 * NS_PER_S);
	WT_OK(weft_mutex_timedlock(&m, &ts));
	/* held 4 deep: 3 unlocks do not release it */
	for (int i = 0; i < 3; i++) {
		in_ult(recursive_in_other, &m);
		in_pthread(recursive_in_other, &m);
		WT_OK(weft_mutex_unlock(&m));
	}
	WT_ERR(weft_mutex_destroy(&m), EBUSY);
	in_ult(recursive_in_other, &m);
	WT_OK(weft_mutex_unlock(&m));
	WT_ERR(weft_mutex_unlock(&m), EPERM);
	WT_ERR((intptr_t)in_ult(trylock_result, &m), 0);
	WT_ERR((intptr_t)in_pthread(trylock_result, &m), 0);
	WT_OK(weft_mutex_destroy(&m));
	WT_OK(weft_shutdown());
}

static void test_destroy_locked_ebusy(void **state)
{
	wt_init(2);
	int types[] = {WEFT_MUTEX_NORMAL, WEFT_MUTEX_RECURSIVE, WEFT_MUTEX_ERRORCHECK};
	for (size_t i = 0; i < 3; i++) {
		weft_mutex_t m;
		mutex_init_with(&m, types[i], WEFT_LOCK_ADAPTIVE, 0);
		WT_OK(weft_mutex_lock(&m));
		WT_ERR(weft_mutex_destroy(&m), EBUSY);
		WT_OK(weft_mutex_unlock(&m)); /* still a working mutex */
		WT_OK(weft_mutex_lock(&m));
		WT_OK(weft_mutex_unlock(&m));
		WT_OK(weft_mutex_destroy(&m));
	}
	WT_OK(weft_shutdown());
}

/* The owner keeps the mutex across yields and a move to another worker. */
static void *hold_across_yields(void *arg)
{
	weft_mutex_t *m = arg;
	WT_OK(weft_mutex_lock(m));
	for (int i = 0; i < 1000; i++)
		weft_yield();
	WT_ERR(weft_mutex_lock(m), EDEADLK);
	WT_OK(weft_mutex_unlock(m));
	return NULL;
}

static void test_errorcheck_owner_survives_migration(void **state)
{
	wt_init(0);
	weft_mutex_t m;
	mutex_init_with(&m, WEFT_MUTEX_ERRORCHECK, WEFT_LOCK_ADAPTIVE, 0);
	weft_t t[8];
	for (int i = 0; i < 8; i++)
		t[i] = wt_spawn(NULL, hold_across_yields, &m);
	for (int i = 0; i < 8; i++)
		wt_join(t[i]);
	WT_OK(weft_mutex_destroy(&m));
	WT_OK(weft_shutdown());
}

/* ---- timed locking ------------------------------------------------------- */

static void *timed_lock_errors(void *arg)
{
	weft_mutex_t *m = arg; /* held by someone else */
	static const clockid_t clocks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};
	struct timespec ts = deadline_in(CLOCK_REALTIME, 50 * MS);
	WT_ERR(weft_mutex_timedlock(m, &ts), ETIMEDOUT);
	WT_RETURNED_AFTER(CLOCK_REALTIME, &ts);
	for (size_t i = 0; i < 2; i++) {
		ts = deadline_in(clocks[i], 50 * MS);
		WT_ERR(weft_mutex_clocklock(m, clocks[i], &ts), ETIMEDOUT);
		WT_RETURNED_AFTER(clocks[i], &ts);

		uint64_t t0 = wt_now_ns();
		ts = deadline_in(clocks[i], -NS_PER_S);
		WT_ERR(weft_mutex_clocklock(m, clocks[i], &ts), ETIMEDOUT);
		ts = (struct timespec){0, 0};
		WT_ERR(weft_mutex_clocklock(m, clocks[i], &ts), ETIMEDOUT);
		WT_CMPU(wt_now_ns() - t0, <, 2 * NS_PER_S);

		ts = deadline_in(clocks[i], NS_PER_S);
		ts.tv_nsec = -1;
		WT_ERR(weft_mutex_clocklock(m, clocks[i], &ts), EINVAL);
		ts.tv_nsec = NS_PER_S;
		WT_ERR(weft_mutex_clocklock(m, clocks[i], &ts), EINVAL);
	}
	ts = deadline_in(CLOCK_REALTIME, -NS_PER_S);
	WT_ERR(weft_mutex_timedlock(m, &ts), ETIMEDOUT);
	ts.tv_nsec = NS_PER_S;
	WT_ERR(weft_mutex_timedlock(m, &ts), EINVAL);
	ts = deadline_in(CLOCK_MONOTONIC, NS_PER_S);
	WT_ERR(weft_mutex_clocklock(m, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
	WT_ERR(weft_mutex_clocklock(m, (clockid_t)99, &ts), EINVAL);
	return NULL;
}

static void test_timedlock_on_held_mutex(void **state)
{
	wt_init(2);
	int policies[] = {WEFT_LOCK_ADAPTIVE, WEFT_LOCK_SPIN, WEFT_LOCK_SPIN_PARK, WEFT_LOCK_PARK};
	for (size_t i = 0; i < 4; i++) {
		weft_mutex_t m;
		mutex_init_with(&m, WEFT_MUTEX_NORMAL, policies[i], 0);
		WT_OK(weft_mutex_lock(&m));
		in_ult(timed_lock_errors, &m);
		if (i == 0)
			in_pthread(timed_lock_errors, &m);
		WT_OK(weft_mutex_unlock(&m));
		/* nothing was left behind: the lock is free and unwaited */
		WT_OK(weft_mutex_destroy(&m));
	}
	WT_OK(weft_shutdown());
}

static void *timedlock_free_mutex(void *arg)
{
	weft_mutex_t *m = arg;
	/* Free: taken at once, whatever the deadline (as pthread_mutex_timedlock). */
	struct timespec past = deadline_in(CLOCK_REALTIME, -NS_PER_S);
	WT_OK(weft_mutex_timedlock(m, &past));
	WT_OK(weft_mutex_unlock(m));
	past = deadline_in(CLOCK_MONOTONIC, -NS_PER_S);
	WT_OK(weft_mutex_clocklock(m, CLOCK_MONOTONIC, &past));
	WT_OK(weft_mutex_unlock(m));
	return NULL;
}

static void test_timedlock_on_free_mutex_succeeds(void **state)
{
	wt_init(2);
	weft_mutex_t m = {0};
	timedlock_free_mutex(&m);
	in_pthread(timedlock_free_mutex, &m);
	WT_OK(weft_shutdown());
}

struct release_later {
	weft_mutex_t *m;
	atomic_int locked;
};

static void *lock_release_after_30ms(void *arg)
{
	struct release_later *r = arg;
	WT_OK(weft_mutex_lock(r->m));
	atomic_store(&r->locked, 1);
	WT_OK(weft_sleep_ns(30 * MS));
	WT_OK(weft_mutex_unlock(r->m));
	return NULL;
}

static void *timedlock_gets_released_mutex(void *arg)
{
	weft_mutex_t *m = arg;
	struct timespec ts = deadline_in(CLOCK_MONOTONIC, 20 * NS_PER_S);
	WT_OK(weft_mutex_clocklock(m, CLOCK_MONOTONIC, &ts));
	WT_CMP(ns_past(CLOCK_MONOTONIC, &ts), <, 0);
	WT_OK(weft_mutex_unlock(m));
	return NULL;
}

static void test_timedlock_acquires_when_released(void **state)
{
	wt_init(2);
	int policies[] = {WEFT_LOCK_ADAPTIVE, WEFT_LOCK_SPIN, WEFT_LOCK_SPIN_PARK, WEFT_LOCK_PARK};
	for (size_t i = 0; i < 8; i++) {
		weft_mutex_t m;
		mutex_init_with(&m, WEFT_MUTEX_ERRORCHECK, policies[i % 4], 0);
		struct release_later r = {.m = &m};
		weft_t h = wt_spawn_on(0, lock_release_after_30ms, &r);
		WT_WAIT(atomic_load(&r.locked), 10);
		if (i < 4)
			in_ult(timedlock_gets_released_mutex, &m);
		else
			in_pthread(timedlock_gets_released_mutex, &m);
		wt_join(h);
		WT_OK(weft_mutex_destroy(&m));
	}
	WT_OK(weft_shutdown());
}

/* ---- contention ---------------------------------------------------------- */

struct contention {
	weft_mutex_t m;
	int type;
	int iters;
	volatile long counter; /* bumped only with m held, non-atomically */
	atomic_int inside;
	atomic_long acquired; /* successful locks and trylocks, for the stats */
	atomic_int go;
	atomic_int running; /* contenders not finished yet */
};

static void enter(struct contention *c)
{
	WT_EQ(atomic_exchange(&c->inside, 1), 0);
}

static void leave(struct contention *c)
{
	WT_EQ(atomic_exchange(&c->inside, 0), 1);
}

static void *contend(void *arg)
{
	struct contention *c = arg;
	while (!atomic_load(&c->go))
		weft_yield();
	for (int i = 0; i < c->iters; i++) {
		if (i % 8 == 7) {
			int r;
			while ((r = weft_mutex_trylock(&c->m)) == EBUSY)
				weft_yield();
			WT_OK(r);
		} else {
			WT_OK(weft_mutex_lock(&c->m));
		}
		atomic_fetch_add(&c->acquired, 1);
		enter(c);
		if (c->type == WEFT_MUTEX_RECURSIVE && i % 4 == 0) {
			WT_OK(weft_mutex_lock(&c->m)); /* nested */
			c->counter = c->counter + 1;
			WT_OK(weft_mutex_unlock(&c->m));
			c->counter = c->counter - 1;
		}
		long v = c->counter;
		if (i % 64 == 0)
			weft_yield(); /* hold it across a switch (and maybe a migration) */
		c->counter = v + 1;
		leave(c);
		WT_OK(weft_mutex_unlock(&c->m));
	}
	atomic_fetch_sub(&c->running, 1);
	return NULL;
}

enum { CONT_ULTS_PER_WORKER = 3, CONT_UNBOUND = 2, CONT_PTHREADS = 2, CONT_MAX_ULTS = 64 };

/* Start contenders on c: ULTs bound to each worker, unbound ULTs, pthreads. */
struct contenders {
	weft_t ults[CONT_MAX_ULTS];
	int nults;
	struct wt_pthread p[CONT_PTHREADS];
};

static void start_contenders(struct contention *c, struct contenders *k)
{
	int nw = weft_num_workers();
	k->nults = 0;
	atomic_store(&c->running, nw * CONT_ULTS_PER_WORKER + CONT_UNBOUND + CONT_PTHREADS);
	for (int w = 0; w < nw; w++)
		for (int i = 0; i < CONT_ULTS_PER_WORKER; i++)
			k->ults[k->nults++] = wt_spawn_on(w, contend, c);
	for (int i = 0; i < CONT_UNBOUND; i++)
		k->ults[k->nults++] = wt_spawn(NULL, contend, c);
	for (int i = 0; i < CONT_PTHREADS; i++)
		wt_pthread_start(&k->p[i], contend, c);
	atomic_store(&c->go, 1);
}

static long finish_contenders(struct contention *c, struct contenders *k)
{
	for (int i = 0; i < k->nults; i++)
		wt_join(k->ults[i]);
	for (int i = 0; i < CONT_PTHREADS; i++)
		wt_pthread_join(&k->p[i]);
	return (long)(k->nults + CONT_PTHREADS) * c->iters;
}

static void check_stats(struct contention *c, int policy)
{
	weft_mutex_stats_t st;
	WT_OK(weft_mutex_stats(&c->m, &st));
	WT_EQU(st.acquisitions, (uint64_t)atomic_load(&c->acquired));
	WT_CMPU(st.contended, <=, st.acquisitions);
	WT_EQ(st.policy, policy);
	if (policy == WEFT_LOCK_SPIN)
		WT_EQU(st.parks, 0);
}

static void run_contention(int type, int policy, int spin, int iters)
{
	static struct contention c;
	static struct contenders k;
	memset(&c, 0, sizeof c);
	mutex_init_with(&c.m, type, policy, spin);
	c.type = type;
	c.iters = iters;
	start_contenders(&c, &k);
	long total = finish_contenders(&c, &k);
	WT_EQ(c.counter, total);
	WT_EQ(atomic_load(&c.inside), 0);
	if (type != WEFT_MUTEX_RECURSIVE) /* (whether a relock counts is not specified) */
		check_stats(&c, policy);
	WT_OK(weft_mutex_destroy(&c.m));
}

static void test_contention_zero_initialised(void **state)
{
	wt_init(0);
	static struct contention c; /* all zero: a default mutex */
	static struct contenders k;
	c.iters = 3000;
	start_contenders(&c, &k);
	long total = finish_contenders(&c, &k);
	WT_EQ(c.counter, total);
	check_stats(&c, WEFT_LOCK_ADAPTIVE);
	WT_OK(weft_shutdown());
}

static void test_contention_adaptive(void **state)
{
	wt_init(0);
	run_contention(WEFT_MUTEX_NORMAL, WEFT_LOCK_ADAPTIVE, 0, 3000);
	run_contention(WEFT_MUTEX_NORMAL, WEFT_LOCK_ADAPTIVE, 1, 1000);
	WT_OK(weft_shutdown());
}

static void test_contention_spin(void **state)
{
	wt_init(0);
	run_contention(WEFT_MUTEX_NORMAL, WEFT_LOCK_SPIN, 0, 2000);
	WT_OK(weft_shutdown());
}

static void test_contention_spin_park(void **state)
{
	wt_init(0);
	run_contention(WEFT_MUTEX_NORMAL, WEFT_LOCK_SPIN_PARK, 0, 3000);
	run_contention(WEFT_MUTEX_NORMAL, WEFT_LOCK_SPIN_PARK, 1, 1000);
	run_contention(WEFT_MUTEX_NORMAL, WEFT_LOCK_SPIN_PARK, WEFT_SPIN_MAX, 500);
	WT_OK(weft_shutdown());
}

static void test_contention_park(void **state)
{
	wt_init(0);
	run_contention(WEFT_MUTEX_NORMAL, WEFT_LOCK_PARK, 0, 3000);
	WT_OK(weft_shutdown());
}

static void test_contention_recursive_and_errorcheck(void **state)
{
	wt_init(0);
	run_contention(WEFT_MUTEX_RECURSIVE, WEFT_LOCK_ADAPTIVE, 0, 2000);
	run_contention(WEFT_MUTEX_RECURSIVE, WEFT_LOCK_PARK, 0, 1000);
	run_contention(WEFT_MUTEX_ERRORCHECK, WEFT_LOCK_ADAPTIVE, 0, 2000);
	run_contention(WEFT_MUTEX_ERRORCHECK, WEFT_LOCK_SPIN_PARK, 0, 1000);
	WT_OK(weft_shutdown());
}

static void test_contention_on_one_worker(void **state)
{
	/* Every ULT shares one kernel thread: a waiter that spun without
	 * yielding would never let the holder finish. */
	wt_init(1);
	int policies[] = {WEFT_LOCK_ADAPTIVE, WEFT_LOCK_SPIN, WEFT_LOCK_SPIN_PARK, WEFT_LOCK_PARK};
	for (size_t i = 0; i < 4; i++)
		run_contention(WEFT_MUTEX_NORMAL, policies[i], 0, 1000);
	WT_OK(weft_shutdown());
}

/* Change policy and spin budget while contenders hammer the mutex. */
static void test_setpolicy_and_setspin_during_contention(void **state)
{
	wt_init(0);
	static struct contention c;
	static struct contenders k;
	mutex_init_with(&c.m, WEFT_MUTEX_NORMAL, WEFT_LOCK_ADAPTIVE, 0);
	c.iters = 4000;
	start_contenders(&c, &k);
	int policies[] = {WEFT_LOCK_ADAPTIVE, WEFT_LOCK_SPIN, WEFT_LOCK_SPIN_PARK, WEFT_LOCK_PARK};
	int spins[] = {1, 10, 1000, WEFT_SPIN_MAX};
	unsigned changes = 0;
	while (atomic_load(&c.running) > 0) {
		WT_OK(weft_mutex_setpolicy(&c.m, policies[changes % 4]));
		WT_OK(weft_mutex_setspin(&c.m, spins[changes / 4 % 4]));
		changes++;
		weft_yield();
	}
	long total = finish_contenders(&c, &k);
	WT_EQ(c.counter, total);
	WT_OK(weft_mutex_setpolicy(&c.m, WEFT_LOCK_SPIN_PARK));
	WT_OK(weft_mutex_setspin(&c.m, 123));
	weft_mutex_stats_t st;
	WT_OK(weft_mutex_stats(&c.m, &st));
	WT_EQ(st.policy, WEFT_LOCK_SPIN_PARK);
	WT_EQ(st.spin_budget, 123);
	WT_EQU(st.acquisitions, (uint64_t)atomic_load(&c.acquired));
	WT_CMPU(st.contended, <=, st.acquisitions);
	printf("%u policy/spin changes during contention\n", changes);
	WT_OK(weft_mutex_destroy(&c.m));
	WT_OK(weft_shutdown());
}

/* ---- statistics ---------------------------------------------------------- */

struct locker {
	weft_mutex_t *m;
	atomic_int started;
	atomic_int locked;
};

static void *announce_then_lock(void *arg)
{
	struct locker *l = arg;
	atomic_store(&l->started, 1);
	WT_OK(weft_mutex_lock(l->m)); /* no yield in between: see below */
	atomic_store(&l->locked, 1);
	WT_OK(weft_mutex_unlock(l->m));
	return NULL;
}

/* One worker, main holds the mutex: when main runs again after the locker
 * announced itself, the locker is inside weft_mutex_lock and has found the
 * mutex held, whatever the policy (a spinning locker yields now and then). */
static void contend_once(weft_mutex_t *m, weft_mutex_stats_t *st)
{
	struct locker l = {.m = m};
	WT_OK(weft_mutex_lock(m));
	weft_t t = wt_spawn(NULL, announce_then_lock, &l);
	WT_WAIT(atomic_load(&l.started), 10);
	for (int i = 0; i < 10; i++)
		weft_yield();
	WT_EQ(atomic_load(&l.locked), 0);
	WT_OK(weft_mutex_unlock(m));
	wt_join(t);
	WT_EQ(atomic_load(&l.locked), 1);
	WT_OK(weft_mutex_stats(m, st));
}

static void test_stats_count_acquisitions_contention_parks(void **state)
{
	wt_init(1);
	weft_mutex_stats_t st;

	weft_mutex_t m = {0};
	WT_OK(weft_mutex_stats(&m, &st));
	WT_EQU(st.acquisitions, 0);
	WT_EQU(st.contended, 0);
	WT_EQU(st.parks, 0);
	WT_EQ(st.policy, WEFT_LOCK_ADAPTIVE);
	for (int i = 0; i < 10; i++) {
		WT_OK(weft_mutex_lock(&m));
		WT_ERR(weft_mutex_trylock(&m), EBUSY);
		WT_OK(weft_mutex_unlock(&m));
	}
	for (int i = 0; i < 5; i++) {
		WT_OK(weft_mutex_trylock(&m));
		WT_OK(weft_mutex_unlock(&m));
	}
	WT_OK(weft_mutex_stats(&m, &st));
	WT_EQU(st.acquisitions, 15); /* a failed trylock is no acquisition */
	WT_EQU(st.parks, 0);
	WT_CMPU(st.contended, <=, st.acquisitions);

	int policies[] = {WEFT_LOCK_ADAPTIVE, WEFT_LOCK_SPIN, WEFT_LOCK_SPIN_PARK, WEFT_LOCK_PARK};
	for (size_t i = 0; i < 4; i++) {
		weft_mutex_t p;
		mutex_init_with(&p, WEFT_MUTEX_NORMAL, policies[i],
				policies[i] == WEFT_LOCK_SPIN_PARK ? 50 : 0);
		contend_once(&p, &st);
		WT_EQU(st.acquisitions, 2);
		WT_EQU(st.contended, 1);
		WT_EQ(st.policy, policies[i]);
		if (policies[i] == WEFT_LOCK_PARK)
			WT_CMPU(st.parks, >=, 1);
		if (policies[i] == WEFT_LOCK_SPIN)
			WT_EQU(st.parks, 0);
		if (policies[i] == WEFT_LOCK_SPIN_PARK)
			WT_EQ(st.spin_budget, 50);
		WT_OK(weft_mutex_destroy(&p));
	}
	WT_OK(weft_shutdown());
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_zero_initialised_mutex_works),
		cmocka_unit_test(test_mutexattr_defaults_and_bad_values),
		cmocka_unit_test(test_live_mutex_bad_policy_or_spin_einval),
		cmocka_unit_test(test_normal_trylock_held_ebusy),
		cmocka_unit_test(test_errorcheck_errors),
		cmocka_unit_test(test_errorcheck_owned_by_foreign_thread),
		cmocka_unit_test(test_recursive_counts_relocks),
		cmocka_unit_test(test_destroy_locked_ebusy),
		cmocka_unit_test(test_errorcheck_owner_survives_migration),
		cmocka_unit_test(test_timedlock_on_held_mutex),
		cmocka_unit_test(test_timedlock_on_free_mutex_succeeds),
		cmocka_unit_test(test_timedlock_acquires_when_released),
		cmocka_unit_test(test_contention_zero_initialised),
		cmocka_unit_test(test_contention_adaptive),
		cmocka_unit_test(test_contention_spin),
		cmocka_unit_test(test_contention_spin_park),
		cmocka_unit_test(test_contention_park),
		cmocka_unit_test(test_contention_recursive_and_errorcheck),
		cmocka_unit_test(test_contention_on_one_worker),
		cmocka_unit_test(test_setpolicy_and_setspin_during_contention),
		cmocka_unit_test(test_stats_count_acquisitions_contention_parks),
	};
	return WT_RUN(argc, argv, tests);
}
