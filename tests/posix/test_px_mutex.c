/* Mutexes: the normal, recursive and errorcheck types (and the default),
 * trylock, timedlock and clocklock, the static initializers including glibc's
 * PTHREAD_{RECURSIVE,ERRORCHECK,ADAPTIVE}_MUTEX_INITIALIZER_NP, the mutex
 * attributes (type, pshared, protocol, prioceiling) and the priority ceiling
 * of a mutex. */
#include "ptest.h"

/* Another thread's view of a mutex: run op on m in a new thread. */
enum op { TRYLOCK, UNLOCK };
struct remote {
	pthread_mutex_t *m;
	enum op op;
	int ret;
};

static void *remote_body(void *arg)
{
	struct remote *r = arg;
	if (r->op == TRYLOCK) {
		r->ret = pthread_mutex_trylock(r->m);
		if (r->ret == 0)
			PX_OK(pthread_mutex_unlock(r->m));
	} else {
		r->ret = pthread_mutex_unlock(r->m);
	}
	return NULL;
}

/* What pthread_mutex_trylock (then unlock, if it succeeded) or
 * pthread_mutex_unlock returns in another thread. */
static int remote(pthread_mutex_t *m, enum op op)
{
	struct remote r = {m, op, -1};
	px_join(px_start(NULL, remote_body, &r));
	return r.ret;
}

#define N_THREADS 4
#define N_ITERS   20000

struct exclusion {
	pthread_barrier_t start; /* so that the threads really overlap */
	pthread_mutex_t *m;
	long counter;      /* plain: only the lock protects it */
	atomic_int inside; /* threads inside the critical section */
};

static void *hammer(void *arg)
{
	struct exclusion *x = arg;
	int e = pthread_barrier_wait(&x->start);
	PX_TRUE(e == 0 || e == PTHREAD_BARRIER_SERIAL_THREAD, "barrier_wait returned %d", e);
	for (int i = 0; i < N_ITERS; i++) {
		PX_OK(pthread_mutex_lock(x->m));
		int others = atomic_fetch_add(&x->inside, 1);
		PX_EQ(others, 0);
		x->counter++;
		/* Now and then hold the lock across a yield, so waiters
		 * really block. */
		if (i % 1024 == 0)
			sched_yield();
		atomic_fetch_sub(&x->inside, 1);
		PX_OK(pthread_mutex_unlock(x->m));
	}
	return NULL;
}

/* N_THREADS threads increment a plain counter under m; none is lost and no
 * two threads are ever inside together. */
static void check_mutual_exclusion(pthread_mutex_t *m)
{
	struct exclusion x = {.m = m, .counter = 0};
	PX_OK(pthread_barrier_init(&x.start, NULL, N_THREADS));
	pthread_t t[N_THREADS];
	for (int i = 0; i < N_THREADS; i++)
		t[i] = px_start(NULL, hammer, &x);
	for (int i = 0; i < N_THREADS; i++)
		px_join(t[i]);
	PX_EQ(x.counter, (long)N_THREADS * N_ITERS);
	PX_OK(pthread_barrier_destroy(&x.start));
}

static void init_typed(pthread_mutex_t *m, int type)
{
	pthread_mutexattr_t a;
	PX_OK(pthread_mutexattr_init(&a));
	PX_OK(pthread_mutexattr_settype(&a, type));
	PX_OK(pthread_mutex_init(m, &a));
	PX_OK(pthread_mutexattr_destroy(&a));
}

static void test_mutual_exclusion_each_type(void **state)
{
	int types[] = {PTHREAD_MUTEX_DEFAULT, PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_RECURSIVE,
		       PTHREAD_MUTEX_ERRORCHECK};
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		pthread_mutex_t m;
		init_typed(&m, types[i]);
		check_mutual_exclusion(&m);
		PX_OK(pthread_mutex_destroy(&m));
	}
	pthread_mutex_t m;
	PX_OK(pthread_mutex_init(&m, NULL));
	check_mutual_exclusion(&m);
	PX_OK(pthread_mutex_destroy(&m));
}

static pthread_mutex_t s_default = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t s_recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t s_errorcheck = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_mutex_t s_adaptive = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;

/* Statically initialized mutexes work without pthread_mutex_init and behave
 * as their type says (the _NP initializers are glibc extensions). */
static void test_static_initializers(void **state)
{
	pthread_mutex_t *all[] = {&s_default, &s_recursive, &s_errorcheck, &s_adaptive};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
		PX_OK(pthread_mutex_lock(all[i]));
		PX_ERR(remote(all[i], TRYLOCK), EBUSY);
		PX_OK(pthread_mutex_unlock(all[i]));
		PX_OK(remote(all[i], TRYLOCK));
		check_mutual_exclusion(all[i]);
	}

	/* PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP: the owner may relock. */
	PX_OK(pthread_mutex_lock(&s_recursive));
	PX_OK(pthread_mutex_lock(&s_recursive));
	PX_OK(pthread_mutex_trylock(&s_recursive));
	PX_OK(pthread_mutex_unlock(&s_recursive));
	PX_OK(pthread_mutex_unlock(&s_recursive));
	PX_ERR(remote(&s_recursive, TRYLOCK), EBUSY);
	PX_OK(pthread_mutex_unlock(&s_recursive));
	PX_OK(remote(&s_recursive, TRYLOCK));

	/* PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP: relock and foreign unlock
	 * are errors. */
	PX_OK(pthread_mutex_lock(&s_errorcheck));
	PX_ERR(pthread_mutex_lock(&s_errorcheck), EDEADLK);
	PX_ERR(remote(&s_errorcheck, UNLOCK), EPERM);
	PX_OK(pthread_mutex_unlock(&s_errorcheck));
	PX_ERR(pthread_mutex_unlock(&s_errorcheck), EPERM);
}

/* trylock returns EBUSY whenever the mutex is locked, by another thread or
 * (except for a recursive mutex) by the caller. */
static void test_trylock(void **state)
{
	int types[] = {PTHREAD_MUTEX_DEFAULT, PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_ERRORCHECK};
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		pthread_mutex_t m;
		init_typed(&m, types[i]);
		PX_OK(pthread_mutex_trylock(&m));
		PX_ERR(pthread_mutex_trylock(&m), EBUSY);
		PX_ERR(remote(&m, TRYLOCK), EBUSY);
		PX_OK(pthread_mutex_unlock(&m));
		PX_OK(remote(&m, TRYLOCK));
		PX_OK(pthread_mutex_trylock(&m));
		PX_OK(pthread_mutex_unlock(&m));
		PX_OK(pthread_mutex_destroy(&m));
	}
}

static void test_recursive(void **state)
{
	pthread_mutex_t m;
	init_typed(&m, PTHREAD_MUTEX_RECURSIVE);
	/* Unlocking a recursive mutex the caller does not own is an error. */
	PX_ERR(pthread_mutex_unlock(&m), EPERM);

	PX_OK(pthread_mutex_lock(&m));
	PX_OK(pthread_mutex_lock(&m));
	PX_OK(pthread_mutex_trylock(&m));
	struct timespec past = px_deadline(CLOCK_REALTIME, -PX_NS_PER_S);
	PX_OK(pthread_mutex_timedlock(&m, &past));
	PX_ERR(remote(&m, UNLOCK), EPERM);
	for (int held = 4; held > 0; held--) {
		PX_ERR(remote(&m, TRYLOCK), EBUSY);
		PX_OK(pthread_mutex_unlock(&m));
	}
	PX_OK(remote(&m, TRYLOCK));
	PX_ERR(pthread_mutex_unlock(&m), EPERM);
	PX_OK(pthread_mutex_destroy(&m));
}

static void test_errorcheck(void **state)
{
	pthread_mutex_t m;
	init_typed(&m, PTHREAD_MUTEX_ERRORCHECK);
	PX_ERR(pthread_mutex_unlock(&m), EPERM);
	PX_OK(pthread_mutex_lock(&m));
	PX_ERR(pthread_mutex_lock(&m), EDEADLK);
	struct timespec later = px_deadline(CLOCK_REALTIME, 10 * PX_NS_PER_S);
	PX_ERR(pthread_mutex_timedlock(&m, &later), EDEADLK);
	PX_ERR(remote(&m, UNLOCK), EPERM);
	PX_OK(pthread_mutex_unlock(&m));
	PX_ERR(pthread_mutex_unlock(&m), EPERM);
	PX_OK(pthread_mutex_destroy(&m));
}

/* A thread that locks m, holds it until told to let go, then (after a short
 * pause, so that the main thread is likely blocked by then) unlocks it. */
struct holder {
	pthread_mutex_t *m;
	atomic_int locked;
	atomic_int go;
	atomic_int released; /* set just before unlocking */
};

static void *hold_until_told(void *arg)
{
	struct holder *h = arg;
	PX_OK(pthread_mutex_lock(h->m));
	atomic_store(&h->locked, 1);
	PX_WAIT(atomic_load(&h->go), 30);
	px_sleep_ns(50 * PX_NS_PER_MS);
	atomic_store(&h->released, 1);
	PX_OK(pthread_mutex_unlock(h->m));
	return NULL;
}

/* A blocked lock returns once the holder unlocks, and only then. */
static void test_lock_blocks_until_unlock(void **state)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	struct holder h = {.m = &m};
	pthread_t t = px_start(NULL, hold_until_told, &h);
	PX_WAIT(atomic_load(&h.locked), 10);
	atomic_store(&h.go, 1);
	PX_OK(pthread_mutex_lock(&m));
	PX_EQ(atomic_load(&h.released), 1);
	PX_OK(pthread_mutex_unlock(&m));
	px_join(t);
}

static void test_timedlock(void **state)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

	/* Never a timeout when the lock is free, even past the deadline. */
	struct timespec past = px_deadline(CLOCK_REALTIME, -PX_NS_PER_S);
	PX_OK(pthread_mutex_timedlock(&m, &past));
	PX_OK(pthread_mutex_unlock(&m));

	/* Held elsewhere: ETIMEDOUT at the deadline, not before. */
	struct holder h = {.m = &m};
	pthread_t t = px_start(NULL, hold_until_told, &h);
	PX_WAIT(atomic_load(&h.locked), 10);
	struct timespec ts = px_deadline(CLOCK_REALTIME, 100 * PX_NS_PER_MS);
	PX_ERR(pthread_mutex_timedlock(&m, &ts), ETIMEDOUT);
	PX_TIMED_OUT_AT(CLOCK_REALTIME, &ts);
	PX_ERR(pthread_mutex_timedlock(&m, &past), ETIMEDOUT);
	/* "shall fail": a bad timespec when the call would block. */
	struct timespec bad = {.tv_sec = past.tv_sec + 100, .tv_nsec = 1000000000};
	PX_ERR(pthread_mutex_timedlock(&m, &bad), EINVAL);

	/* Released before the deadline: the lock is taken. */
	atomic_store(&h.go, 1);
	ts = px_deadline(CLOCK_REALTIME, 30 * PX_NS_PER_S);
	PX_OK(pthread_mutex_timedlock(&m, &ts));
	PX_EQ(atomic_load(&h.released), 1);
	PX_OK(pthread_mutex_unlock(&m));
	px_join(t);
}

/* pthread_mutex_clocklock (POSIX.1-2024, glibc 2.30) on both clocks. */
static void test_clocklock(void **state)
{
	clockid_t clocks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};
	for (size_t i = 0; i < 2; i++) {
		clockid_t c = clocks[i];
		pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
		struct timespec past = px_deadline(c, -PX_NS_PER_S);
		PX_OK(pthread_mutex_clocklock(&m, c, &past));
		PX_OK(pthread_mutex_unlock(&m));

		struct holder h = {.m = &m};
		pthread_t t = px_start(NULL, hold_until_told, &h);
		PX_WAIT(atomic_load(&h.locked), 10);
		struct timespec ts = px_deadline(c, 50 * PX_NS_PER_MS);
		PX_ERR(pthread_mutex_clocklock(&m, c, &ts), ETIMEDOUT);
		PX_TIMED_OUT_AT(c, &ts);
		atomic_store(&h.go, 1);
		ts = px_deadline(c, 30 * PX_NS_PER_S);
		PX_OK(pthread_mutex_clocklock(&m, c, &ts));
		PX_EQ(atomic_load(&h.released), 1);
		PX_OK(pthread_mutex_unlock(&m));
		px_join(t);
	}
}

static void test_mutexattr_type(void **state)
{
	pthread_mutexattr_t a;
	int v = -1;
	PX_OK(pthread_mutexattr_init(&a));
	PX_OK(pthread_mutexattr_gettype(&a, &v));
	PX_EQ(v, PTHREAD_MUTEX_DEFAULT);
	int types[] = {PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_RECURSIVE, PTHREAD_MUTEX_ERRORCHECK,
		       PTHREAD_MUTEX_DEFAULT};
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		PX_OK(pthread_mutexattr_settype(&a, types[i]));
		PX_OK(pthread_mutexattr_gettype(&a, &v));
		PX_EQ(v, types[i]);
	}
	/* "shall fail" in POSIX. */
	PX_ERR(pthread_mutexattr_settype(&a, 12345), EINVAL);
	PX_OK(pthread_mutexattr_gettype(&a, &v));
	PX_EQ(v, PTHREAD_MUTEX_DEFAULT);
	PX_OK(pthread_mutexattr_destroy(&a));
}

static void test_mutexattr_pshared(void **state)
{
	pthread_mutexattr_t a;
	int v = -1;
	PX_OK(pthread_mutexattr_init(&a));
	PX_OK(pthread_mutexattr_getpshared(&a, &v));
	PX_EQ(v, PTHREAD_PROCESS_PRIVATE);
	PX_OK(pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED));
	PX_OK(pthread_mutexattr_getpshared(&a, &v));
	PX_EQ(v, PTHREAD_PROCESS_SHARED);
	PX_OK(pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_PRIVATE));
	PX_OK(pthread_mutexattr_getpshared(&a, &v));
	PX_EQ(v, PTHREAD_PROCESS_PRIVATE);
	PX_OK(pthread_mutexattr_destroy(&a));
}

static void test_mutexattr_protocol(void **state)
{
	pthread_mutexattr_t a;
	int v = -1;
	PX_OK(pthread_mutexattr_init(&a));
	PX_OK(pthread_mutexattr_getprotocol(&a, &v));
	PX_EQ(v, PTHREAD_PRIO_NONE);
	int protocols[] = {PTHREAD_PRIO_INHERIT, PTHREAD_PRIO_PROTECT, PTHREAD_PRIO_NONE};
	for (size_t i = 0; i < 3; i++) {
		PX_OK(pthread_mutexattr_setprotocol(&a, protocols[i]));
		PX_OK(pthread_mutexattr_getprotocol(&a, &v));
		PX_EQ(v, protocols[i]);
	}
	PX_OK(pthread_mutexattr_destroy(&a));

	/* A priority-inheritance mutex is still a mutex. */
	pthread_mutex_t m;
	PX_OK(pthread_mutexattr_init(&a));
	PX_OK(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT));
	PX_OK(pthread_mutex_init(&m, &a));
	PX_OK(pthread_mutexattr_destroy(&a));
	PX_OK(pthread_mutex_lock(&m));
	PX_ERR(remote(&m, TRYLOCK), EBUSY);
	PX_OK(pthread_mutex_unlock(&m));
	check_mutual_exclusion(&m);
	PX_OK(pthread_mutex_destroy(&m));
}

/* The ceiling attribute and the ceiling of a PTHREAD_PRIO_PROTECT mutex take
 * any SCHED_FIFO priority. (The mutex is not locked here: glibc 2.36 refuses
 * to lock a priority-protect mutex from a SCHED_OTHER thread with EINVAL.) */
static void test_prioceiling(void **state)
{
	int lo = sched_get_priority_min(SCHED_FIFO);
	int hi = sched_get_priority_max(SCHED_FIFO);
	PX_CMP(lo, <=, hi);
	pthread_mutexattr_t a;
	int v = -1;
	PX_OK(pthread_mutexattr_init(&a));
	PX_OK(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_PROTECT));
	int ceilings[] = {lo, hi, (lo + hi) / 2};
	for (size_t i = 0; i < 3; i++) {
		PX_OK(pthread_mutexattr_setprioceiling(&a, ceilings[i]));
		PX_OK(pthread_mutexattr_getprioceiling(&a, &v));
		PX_EQ(v, ceilings[i]);
	}

	pthread_mutex_t m;
	PX_OK(pthread_mutex_init(&m, &a));
	PX_OK(pthread_mutexattr_destroy(&a));
	PX_OK(pthread_mutex_getprioceiling(&m, &v));
	PX_EQ(v, (lo + hi) / 2);
	int old = -1;
	PX_OK(pthread_mutex_setprioceiling(&m, lo, &old));
	PX_EQ(old, (lo + hi) / 2);
	PX_OK(pthread_mutex_getprioceiling(&m, &v));
	PX_EQ(v, lo);
	PX_OK(pthread_mutex_destroy(&m));
}

/* Errors POSIX lists under "may fail"; glibc reports them, and weft should
 * report the same. */
static void test_mutex_may_fail(void **state)
{
	pthread_mutexattr_t a;
	PX_OK(pthread_mutexattr_init(&a));
	PX_ERR(pthread_mutexattr_setpshared(&a, 12345), EINVAL);
	PX_ERR(pthread_mutexattr_setprotocol(&a, 12345), EINVAL);
	int hi = sched_get_priority_max(SCHED_FIFO);
	PX_ERR(pthread_mutexattr_setprioceiling(&a, hi + 1), EINVAL);
	PX_OK(pthread_mutexattr_destroy(&a));

	/* The ceiling of a mutex that is not PTHREAD_PRIO_PROTECT: glibc
	 * answers EINVAL to both calls and changes nothing, whether the mutex
	 * is locked or not. */
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	int v = -7, old = -7;
	PX_ERR(pthread_mutex_getprioceiling(&m, &v), EINVAL);
	PX_EQ(v, -7);
	PX_ERR(pthread_mutex_setprioceiling(&m, sched_get_priority_min(SCHED_FIFO), &old), EINVAL);
	PX_EQ(old, -7);
	PX_OK(pthread_mutex_lock(&m));
	PX_ERR(pthread_mutex_setprioceiling(&m, sched_get_priority_min(SCHED_FIFO), &old), EINVAL);
	PX_OK(pthread_mutex_unlock(&m));
	/* The mutex is untouched: still free, still a mutex. */
	PX_OK(remote(&m, TRYLOCK));

	/* A priority-inheritance mutex has no ceiling either. */
	PX_OK(pthread_mutexattr_init(&a));
	PX_OK(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT));
	PX_OK(pthread_mutex_init(&m, &a));
	PX_OK(pthread_mutexattr_destroy(&a));
	PX_ERR(pthread_mutex_getprioceiling(&m, &v), EINVAL);
	PX_OK(pthread_mutex_destroy(&m));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		PX_TEST(test_mutual_exclusion_each_type),
		PX_TEST(test_static_initializers),
		PX_TEST(test_trylock),
		PX_TEST(test_recursive),
		PX_TEST(test_errorcheck),
		PX_TEST(test_lock_blocks_until_unlock),
		PX_TEST(test_timedlock),
		PX_TEST(test_clocklock),
		PX_TEST(test_mutexattr_type),
		PX_TEST(test_mutexattr_pshared),
		PX_TEST(test_mutexattr_protocol),
		PX_TEST(test_prioceiling),
		PX_TEST(test_mutex_may_fail),
	};
	return PX_RUN(argc, argv, tests);
}
