/* Read-write locks: readers share, writers exclude everyone, a thread may
 * hold several read locks, the timed (timedrdlock/timedwrlock) and clock
 * (clockrdlock/clockwrlock) variants on both clocks, the attributes, and
 * glibc's writer preference (PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP,
 * through pthread_rwlockattr_setkind_np and through
 * PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP): a waiting writer
 * blocks new readers, so readers cannot starve it. A lock left held by a
 * thread that exited is destroyed as on glibc. */
#include "ptest.h"

/* What a trylock returns in another thread (which undoes a success). */
enum op { TRYRD, TRYWR };
struct remote {
	pthread_rwlock_t *l;
	enum op op;
	int ret;
};

static void *remote_body(void *arg)
{
	struct remote *r = arg;
	r->ret = r->op == TRYRD ? pthread_rwlock_tryrdlock(r->l) : pthread_rwlock_trywrlock(r->l);
	if (r->ret == 0)
		PX_OK(pthread_rwlock_unlock(r->l));
	return NULL;
}

static int remote(pthread_rwlock_t *l, enum op op)
{
	struct remote r = {l, op, -1};
	px_join(px_start(NULL, remote_body, &r));
	return r.ret;
}

#define N_READERS 4

struct sharing {
	pthread_rwlock_t *l;
	atomic_int holding;
	atomic_int release;
};

static void *read_and_wait_for_all(void *arg)
{
	struct sharing *s = arg;
	PX_OK(pthread_rwlock_rdlock(s->l));
	atomic_fetch_add(&s->holding, 1);
	PX_WAIT(atomic_load(&s->release), 30);
	PX_OK(pthread_rwlock_unlock(s->l));
	return NULL;
}

/* N_READERS threads hold the read lock at the same time. */
static void test_readers_share(void **state)
{
	pthread_rwlock_t l;
	PX_OK(pthread_rwlock_init(&l, NULL));
	struct sharing s = {.l = &l};
	pthread_t t[N_READERS];
	for (int i = 0; i < N_READERS; i++)
		t[i] = px_start(NULL, read_and_wait_for_all, &s);
	PX_WAIT(atomic_load(&s.holding) == N_READERS, 10);
	/* Readers in, no writer waiting: another reader gets in, a writer
	 * does not. */
	PX_OK(remote(&l, TRYRD));
	PX_ERR(remote(&l, TRYWR), EBUSY);
	atomic_store(&s.release, 1);
	for (int i = 0; i < N_READERS; i++)
		px_join(t[i]);
	PX_OK(remote(&l, TRYWR));
	PX_OK(pthread_rwlock_destroy(&l));
}

/* A write lock excludes readers and writers, including static ones. */
static void test_writer_excludes(void **state)
{
	static pthread_rwlock_t s = PTHREAD_RWLOCK_INITIALIZER;
	pthread_rwlock_t d;
	PX_OK(pthread_rwlock_init(&d, NULL));
	pthread_rwlock_t *all[] = {&s, &d};
	for (int i = 0; i < 2; i++) {
		pthread_rwlock_t *l = all[i];
		PX_OK(pthread_rwlock_wrlock(l));
		PX_ERR(remote(l, TRYRD), EBUSY);
		PX_ERR(remote(l, TRYWR), EBUSY);
		PX_OK(pthread_rwlock_unlock(l));
		PX_OK(remote(l, TRYRD));
		PX_OK(remote(l, TRYWR));
		PX_OK(pthread_rwlock_trywrlock(l));
		PX_ERR(remote(l, TRYRD), EBUSY);
		PX_OK(pthread_rwlock_unlock(l));
	}
	PX_OK(pthread_rwlock_destroy(&d));
}

/* A thread may hold the read lock several times; it is free only after as
 * many unlocks. */
static void test_read_lock_nests(void **state)
{
	pthread_rwlock_t l;
	PX_OK(pthread_rwlock_init(&l, NULL));
	PX_OK(pthread_rwlock_rdlock(&l));
	PX_OK(pthread_rwlock_rdlock(&l));
	PX_OK(pthread_rwlock_tryrdlock(&l));
	for (int held = 3; held > 0; held--) {
		PX_ERR(remote(&l, TRYWR), EBUSY);
		PX_OK(pthread_rwlock_unlock(&l));
	}
	PX_OK(remote(&l, TRYWR));
	PX_OK(pthread_rwlock_destroy(&l));
}

#define STRESS_ITERS 20000

struct stress {
	pthread_barrier_t start; /* so that the threads really overlap */
	pthread_rwlock_t l;
	long a, b;          /* writers keep a == b */
	atomic_int readers; /* inside under the read lock */
	atomic_int writers; /* inside under the write lock */
	atomic_long reads;
};

static void *stress_writer(void *arg)
{
	struct stress *s = arg;
	int e = pthread_barrier_wait(&s->start);
	PX_TRUE(e == 0 || e == PTHREAD_BARRIER_SERIAL_THREAD, "barrier_wait returned %d", e);
	for (int i = 0; i < STRESS_ITERS; i++) {
		PX_OK(pthread_rwlock_wrlock(&s->l));
		int writers = atomic_fetch_add(&s->writers, 1);
		PX_EQ(writers, 0);
		PX_EQ(atomic_load(&s->readers), 0);
		s->a++;
		if (i % 256 == 0)
			sched_yield();
		s->b++;
		atomic_fetch_sub(&s->writers, 1);
		PX_OK(pthread_rwlock_unlock(&s->l));
	}
	return NULL;
}

static void *stress_reader(void *arg)
{
	struct stress *s = arg;
	int e = pthread_barrier_wait(&s->start);
	PX_TRUE(e == 0 || e == PTHREAD_BARRIER_SERIAL_THREAD, "barrier_wait returned %d", e);
	for (int i = 0; i < STRESS_ITERS; i++) {
		PX_OK(pthread_rwlock_rdlock(&s->l));
		atomic_fetch_add(&s->readers, 1);
		PX_EQ(atomic_load(&s->writers), 0);
		PX_EQ(s->a, s->b);
		atomic_fetch_add(&s->reads, 1);
		atomic_fetch_sub(&s->readers, 1);
		PX_OK(pthread_rwlock_unlock(&s->l));
	}
	return NULL;
}

/* Two writers and three readers: a writer is always alone, readers never
 * see a half-done write, and no write is lost. */
static void check_rw_exclusion(const pthread_rwlockattr_t *attr)
{
	struct stress s = {.a = 0, .b = 0};
	PX_OK(pthread_rwlock_init(&s.l, attr));
	PX_OK(pthread_barrier_init(&s.start, NULL, 5));
	pthread_t t[5];
	for (int i = 0; i < 5; i++)
		t[i] = px_start(NULL, i < 2 ? stress_writer : stress_reader, &s);
	for (int i = 0; i < 5; i++)
		px_join(t[i]);
	PX_EQ(s.a, 2L * STRESS_ITERS);
	PX_EQ(s.b, 2L * STRESS_ITERS);
	PX_EQ(atomic_load(&s.reads), 3L * STRESS_ITERS);
	PX_OK(pthread_rwlock_destroy(&s.l));
	PX_OK(pthread_barrier_destroy(&s.start));
}

static void test_exclusion_stress(void **state)
{
	check_rw_exclusion(NULL);
	pthread_rwlockattr_t a;
	PX_OK(pthread_rwlockattr_init(&a));
	PX_OK(pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP));
	check_rw_exclusion(&a);
	PX_OK(pthread_rwlockattr_destroy(&a));
}

/* A thread holding l (read or write) until told, then for a short moment
 * more (so the main thread is likely blocked), then unlocking. */
struct holder {
	pthread_rwlock_t *l;
	bool write;
	atomic_int locked;
	atomic_int go;
	atomic_int released; /* set just before unlocking */
};

static void *hold_until_told(void *arg)
{
	struct holder *h = arg;
	PX_OK(h->write ? pthread_rwlock_wrlock(h->l) : pthread_rwlock_rdlock(h->l));
	atomic_store(&h->locked, 1);
	PX_WAIT(atomic_load(&h->go), 30);
	px_sleep_ns(30 * PX_NS_PER_MS);
	atomic_store(&h->released, 1);
	PX_OK(pthread_rwlock_unlock(h->l));
	return NULL;
}

static pthread_t start_holder(struct holder *h, pthread_rwlock_t *l, bool write)
{
	*h = (struct holder){.l = l, .write = write};
	pthread_t t = px_start(NULL, hold_until_told, h);
	PX_WAIT(atomic_load(&h->locked), 10);
	return t;
}

/* A blocked wrlock returns once the reader unlocks, and only then. */
static void test_writer_waits_for_readers(void **state)
{
	pthread_rwlock_t l;
	PX_OK(pthread_rwlock_init(&l, NULL));
	struct holder h;
	pthread_t t = start_holder(&h, &l, false);
	atomic_store(&h.go, 1);
	PX_OK(pthread_rwlock_wrlock(&l));
	PX_EQ(atomic_load(&h.released), 1);
	PX_OK(pthread_rwlock_unlock(&l));
	px_join(t);

	t = start_holder(&h, &l, true);
	atomic_store(&h.go, 1);
	PX_OK(pthread_rwlock_rdlock(&l));
	PX_EQ(atomic_load(&h.released), 1);
	PX_OK(pthread_rwlock_unlock(&l));
	px_join(t);
	PX_OK(pthread_rwlock_destroy(&l));
}

enum timed { TIMEDRD, TIMEDWR, CLOCKRD, CLOCKWR };

static int timed_lock(pthread_rwlock_t *l, enum timed how, clockid_t c, const struct timespec *ts)
{
	switch (how) {
	case TIMEDRD:
		return pthread_rwlock_timedrdlock(l, ts);
	case TIMEDWR:
		return pthread_rwlock_timedwrlock(l, ts);
	case CLOCKRD:
		return pthread_rwlock_clockrdlock(l, c, ts);
	default:
		return pthread_rwlock_clockwrlock(l, c, ts);
	}
}

/* One timed variant on one clock: free lock and a past deadline succeed;
 * blocked, it times out at the deadline; released in time, it succeeds. */
static void check_timed(enum timed how, clockid_t c)
{
	bool write = how == TIMEDWR || how == CLOCKWR;
	pthread_rwlock_t l;
	PX_OK(pthread_rwlock_init(&l, NULL));

	struct timespec past = px_deadline(c, -PX_NS_PER_S);
	PX_OK(timed_lock(&l, how, c, &past));
	PX_OK(pthread_rwlock_unlock(&l));

	/* Blocked by a writer (both kinds) or by a reader (writers only). */
	for (int by_writer = write ? 0 : 1; by_writer < 2; by_writer++) {
		struct holder h;
		pthread_t t = start_holder(&h, &l, by_writer);
		struct timespec ts = px_deadline(c, 50 * PX_NS_PER_MS);
		PX_ERR(timed_lock(&l, how, c, &ts), ETIMEDOUT);
		PX_TIMED_OUT_AT(c, &ts);
		PX_ERR(timed_lock(&l, how, c, &past), ETIMEDOUT);
		atomic_store(&h.go, 1);
		ts = px_deadline(c, 30 * PX_NS_PER_S);
		PX_OK(timed_lock(&l, how, c, &ts));
		PX_EQ(atomic_load(&h.released), 1);
		PX_OK(pthread_rwlock_unlock(&l));
		px_join(t);
	}
	PX_OK(pthread_rwlock_destroy(&l));
}

/* timedrdlock/timedwrlock take CLOCK_REALTIME deadlines. */
static void test_timedrdlock_timedwrlock(void **state)
{
	check_timed(TIMEDRD, CLOCK_REALTIME);
	check_timed(TIMEDWR, CLOCK_REALTIME);
}

/* clockrdlock/clockwrlock (POSIX.1-2024, glibc 2.30) on both clocks. */
static void test_clockrdlock_clockwrlock(void **state)
{
	check_timed(CLOCKRD, CLOCK_MONOTONIC);
	check_timed(CLOCKWR, CLOCK_MONOTONIC);
	check_timed(CLOCKRD, CLOCK_REALTIME);
	check_timed(CLOCKWR, CLOCK_REALTIME);
}

struct wr_waiter {
	pthread_rwlock_t *l;
	atomic_int acquired;
};

static void *write_once(void *arg)
{
	struct wr_waiter *w = arg;
	PX_OK(pthread_rwlock_wrlock(w->l));
	atomic_store(&w->acquired, 1);
	PX_OK(pthread_rwlock_unlock(w->l));
	return NULL;
}

/* In another thread: try read locks until one fails with EBUSY, which on a
 * writer-preferring lock that readers hold means a writer is waiting. */
static void *probe_until_busy(void *arg)
{
	pthread_rwlock_t *l = arg;
	long long end = px_now(CLOCK_MONOTONIC) + 10 * PX_NS_PER_S;
	for (;;) {
		int e = pthread_rwlock_tryrdlock(l);
		if (e == EBUSY)
			break;
		PX_OK(e);
		PX_OK(pthread_rwlock_unlock(l));
		if (px_now(CLOCK_MONOTONIC) > end)
			fail_msg("tryrdlock never saw the waiting writer");
		px_relax();
	}
	/* A blocking read lock waits behind the writer too. */
	struct timespec ts = px_deadline(CLOCK_REALTIME, 50 * PX_NS_PER_MS);
	PX_ERR(pthread_rwlock_timedrdlock(l, &ts), ETIMEDOUT);
	PX_TIMED_OUT_AT(CLOCK_REALTIME, &ts);
	return NULL;
}

/* The main thread holds a read lock; a writer comes and waits; from then on
 * new readers are refused, although only readers hold the lock. When the
 * main thread unlocks, the writer gets the lock. */
static void check_waiting_writer_blocks_readers(pthread_rwlock_t *l)
{
	PX_OK(pthread_rwlock_rdlock(l));
	struct wr_waiter w = {.l = l};
	pthread_t wt = px_start(NULL, write_once, &w);
	px_join(px_start(NULL, probe_until_busy, l));
	PX_EQ(atomic_load(&w.acquired), 0);
	PX_OK(pthread_rwlock_unlock(l));
	px_join(wt);
	PX_EQ(atomic_load(&w.acquired), 1);
	PX_OK(remote(l, TRYRD));
}

static void test_writer_preference_setkind_np(void **state)
{
	pthread_rwlockattr_t a;
	pthread_rwlock_t l;
	PX_OK(pthread_rwlockattr_init(&a));
	PX_OK(pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP));
	PX_OK(pthread_rwlock_init(&l, &a));
	PX_OK(pthread_rwlockattr_destroy(&a));
	check_waiting_writer_blocks_readers(&l);
	PX_OK(pthread_rwlock_destroy(&l));
}

static pthread_rwlock_t writer_pref = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;

static void test_writer_preference_static_initializer_np(void **state)
{
	check_waiting_writer_blocks_readers(&writer_pref);
	/* Still an ordinary read-write lock otherwise. */
	PX_OK(pthread_rwlock_wrlock(&writer_pref));
	PX_ERR(remote(&writer_pref, TRYRD), EBUSY);
	PX_OK(pthread_rwlock_unlock(&writer_pref));
}

struct churn {
	pthread_rwlock_t *l;
	atomic_int stop;
	atomic_long reads;
};

/* Readers whose read locks overlap all the time: without writer
 * preference, a writer might never find the lock free. */
static void *churn_reader(void *arg)
{
	struct churn *c = arg;
	while (!atomic_load(&c->stop)) {
		PX_OK(pthread_rwlock_rdlock(c->l));
		atomic_fetch_add(&c->reads, 1);
		px_sleep_ns(PX_NS_PER_MS);
		PX_OK(pthread_rwlock_unlock(c->l));
	}
	return NULL;
}

/* With writer preference a writer gets the lock among busy readers. */
static void test_writer_preference_no_starvation(void **state)
{
	pthread_rwlockattr_t a;
	pthread_rwlock_t l;
	PX_OK(pthread_rwlockattr_init(&a));
	PX_OK(pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP));
	PX_OK(pthread_rwlock_init(&l, &a));
	PX_OK(pthread_rwlockattr_destroy(&a));

	struct churn c = {.l = &l};
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		t[i] = px_start(NULL, churn_reader, &c);
	PX_WAIT(atomic_load(&c.reads) > 10, 10);
	for (int i = 0; i < 20; i++) {
		struct timespec ts = px_deadline(CLOCK_REALTIME, 10 * PX_NS_PER_S);
		PX_OK(pthread_rwlock_timedwrlock(&l, &ts));
		PX_OK(pthread_rwlock_unlock(&l));
		px_sleep_ns(2 * PX_NS_PER_MS);
	}
	atomic_store(&c.stop, 1);
	for (int i = 0; i < 3; i++)
		px_join(t[i]);
	PX_OK(pthread_rwlock_destroy(&l));
}

static void test_rwlockattr(void **state)
{
	pthread_rwlockattr_t a;
	int v = -1;
	PX_OK(pthread_rwlockattr_init(&a));
	PX_OK(pthread_rwlockattr_getpshared(&a, &v));
	PX_EQ(v, PTHREAD_PROCESS_PRIVATE);
	PX_OK(pthread_rwlockattr_setpshared(&a, PTHREAD_PROCESS_SHARED));
	PX_OK(pthread_rwlockattr_getpshared(&a, &v));
	PX_EQ(v, PTHREAD_PROCESS_SHARED);
	PX_OK(pthread_rwlockattr_setpshared(&a, PTHREAD_PROCESS_PRIVATE));
	PX_OK(pthread_rwlockattr_getpshared(&a, &v));
	PX_EQ(v, PTHREAD_PROCESS_PRIVATE);

	/* The kind (glibc extension); the default prefers readers. */
	PX_OK(pthread_rwlockattr_getkind_np(&a, &v));
	PX_EQ(v, PTHREAD_RWLOCK_PREFER_READER_NP);
	int kinds[] = {PTHREAD_RWLOCK_PREFER_WRITER_NP,
		       PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP,
		       PTHREAD_RWLOCK_PREFER_READER_NP};
	for (int i = 0; i < 3; i++) {
		PX_OK(pthread_rwlockattr_setkind_np(&a, kinds[i]));
		PX_OK(pthread_rwlockattr_getkind_np(&a, &v));
		PX_EQ(v, kinds[i]);
	}
	PX_ERR(pthread_rwlockattr_setkind_np(&a, 12345), EINVAL);
	PX_OK(pthread_rwlockattr_getkind_np(&a, &v));
	PX_EQ(v, PTHREAD_RWLOCK_PREFER_READER_NP);
	PX_OK(pthread_rwlockattr_destroy(&a));
}

/* Errors POSIX lists under "may fail"; glibc reports them, and weft should
 * report the same. */
static void *read_and_exit(void *arg)
{
	PX_OK(pthread_rwlock_rdlock(arg));
	return NULL; /* without unlocking */
}

/* A lock a reader left held when it exited is destroyed without complaint,
 * as glibc's (POSIX.1-2017: undefined, no EBUSY any more; programs such as
 * Open POSIX's timedrdlock/6-2 do it). */
static void test_destroy_held_by_gone_reader(void **state)
{
	pthread_rwlock_t l;
	PX_OK(pthread_rwlock_init(&l, NULL));
	px_join(px_start(NULL, read_and_exit, &l));
	PX_OK(pthread_rwlock_destroy(&l));
}

static void test_rwlock_may_fail(void **state)
{
	pthread_rwlockattr_t a;
	PX_OK(pthread_rwlockattr_init(&a));
	PX_ERR(pthread_rwlockattr_setpshared(&a, 12345), EINVAL);
	PX_OK(pthread_rwlockattr_destroy(&a));

	pthread_rwlock_t l;
	PX_OK(pthread_rwlock_init(&l, NULL));
	/* The write owner asking again: a deadlock, detected. */
	PX_OK(pthread_rwlock_wrlock(&l));
	PX_ERR(pthread_rwlock_wrlock(&l), EDEADLK);
	PX_ERR(pthread_rwlock_rdlock(&l), EDEADLK);
	PX_OK(pthread_rwlock_unlock(&l));

	/* Bad deadlines when the call would block. */
	struct holder h;
	pthread_t t = start_holder(&h, &l, true);
	struct timespec bad = px_deadline(CLOCK_REALTIME, PX_NS_PER_S);
	bad.tv_nsec = 1000000000;
	PX_ERR(pthread_rwlock_timedrdlock(&l, &bad), EINVAL);
	PX_ERR(pthread_rwlock_timedwrlock(&l, &bad), EINVAL);
	struct timespec ts = px_deadline(CLOCK_MONOTONIC, PX_NS_PER_S);
	PX_ERR(pthread_rwlock_clockrdlock(&l, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
	PX_ERR(pthread_rwlock_clockwrlock(&l, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
	atomic_store(&h.go, 1);
	px_join(t);
	PX_OK(pthread_rwlock_destroy(&l));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		PX_TEST(test_readers_share),
		PX_TEST(test_writer_excludes),
		PX_TEST(test_read_lock_nests),
		PX_TEST(test_exclusion_stress),
		PX_TEST(test_writer_waits_for_readers),
		PX_TEST(test_timedrdlock_timedwrlock),
		PX_TEST(test_clockrdlock_clockwrlock),
		PX_TEST(test_writer_preference_setkind_np),
		PX_TEST(test_writer_preference_static_initializer_np),
		PX_TEST(test_writer_preference_no_starvation),
		PX_TEST(test_rwlockattr),
		PX_TEST(test_rwlock_may_fail),
		PX_TEST(test_destroy_held_by_gone_reader),
	};
	return PX_RUN(argc, argv, tests);
}
