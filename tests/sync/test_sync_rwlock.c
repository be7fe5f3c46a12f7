/* weft_rwlock_*: readers together, writers alone, the error paths, timed
 * locking on both clocks, both preferences, and readers and writers from ULTs
 * on every worker and foreign pthreads at once.
 *
 * The invariant under contention: a writer inside finds nobody else inside,
 * a reader inside never finds a writer, and the value a writer protects does
 * not change while a reader holds the lock. Every test initialises the
 * runtime and shuts it down. */
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

static void rwlock_init_pref(weft_rwlock_t *l, int pref)
{
	weft_rwlockattr_t a;
	WT_OK(weft_rwlockattr_init(&a));
	WT_OK(weft_rwlockattr_setpref(&a, pref));
	WT_OK(weft_rwlock_init(l, &a));
	WT_OK(weft_rwlockattr_destroy(&a));
}

static void *tryrd_result(void *l)
{
	int r = weft_rwlock_tryrdlock(l);
	if (r == 0)
		WT_OK(weft_rwlock_unlock(l));
	return (void *)(intptr_t)r;
}

static void *trywr_result(void *l)
{
	int r = weft_rwlock_trywrlock(l);
	if (r == 0)
		WT_OK(weft_rwlock_unlock(l));
	return (void *)(intptr_t)r;
}

static void *rdlock_unlock(void *l)
{
	WT_OK(weft_rwlock_rdlock(l)); /* blocking: must not block here */
	WT_OK(weft_rwlock_unlock(l));
	return NULL;
}

static void *unlock_result(void *l)
{
	return (void *)(intptr_t)weft_rwlock_unlock(l);
}

/* ---- attributes and initialisation --------------------------------------- */

static void test_rwlockattr_pref(void **state)
{
	weft_rwlockattr_t a;
	int p = -5;
	WT_OK(weft_rwlockattr_init(&a));
	WT_OK(weft_rwlockattr_getpref(&a, &p));
	WT_EQ(p, WEFT_RWLOCK_PREFER_READER);
	WT_OK(weft_rwlockattr_setpref(&a, WEFT_RWLOCK_PREFER_WRITER));
	WT_OK(weft_rwlockattr_getpref(&a, &p));
	WT_EQ(p, WEFT_RWLOCK_PREFER_WRITER);
	WT_ERR(weft_rwlockattr_setpref(&a, 99), EINVAL);
	WT_ERR(weft_rwlockattr_setpref(&a, -1), EINVAL);
	WT_OK(weft_rwlockattr_getpref(&a, &p));
	WT_EQ(p, WEFT_RWLOCK_PREFER_WRITER);
	WT_OK(weft_rwlockattr_destroy(&a));
}

static void test_zero_initialised_rwlock_works(void **state)
{
	wt_init(2);
	weft_rwlock_t l = {0};
	WT_OK(weft_rwlock_rdlock(&l));
	WT_ERR((intptr_t)in_ult(trywr_result, &l), EBUSY);
	WT_ERR((intptr_t)in_ult(tryrd_result, &l), 0);
	WT_OK(weft_rwlock_unlock(&l));
	WT_OK(weft_rwlock_wrlock(&l));
	WT_ERR((intptr_t)in_ult(tryrd_result, &l), EBUSY);
	WT_OK(weft_rwlock_unlock(&l));
	WT_OK(weft_rwlock_destroy(&l));

	weft_rwlock_t k = WEFT_RWLOCK_INITIALIZER;
	WT_OK(weft_rwlock_wrlock(&k));
	WT_OK(weft_rwlock_unlock(&k));
	WT_OK(weft_rwlock_init(&k, NULL));
	WT_OK(weft_rwlock_tryrdlock(&k));
	WT_OK(weft_rwlock_unlock(&k));
	WT_OK(weft_rwlock_destroy(&k));
	WT_OK(weft_shutdown());
}

/* ---- who may be inside together ------------------------------------------ */

static void test_readers_share_the_lock(void **state)
{
	wt_init(2);
	for (int pref = 0; pref < 2; pref++) {
		weft_rwlock_t l;
		rwlock_init_pref(&l, pref);
		WT_OK(weft_rwlock_rdlock(&l));
		in_ult(rdlock_unlock, &l); /* a blocking rdlock gets in at once */
		in_pthread(rdlock_unlock, &l);
		WT_ERR((intptr_t)in_ult(tryrd_result, &l), 0);
		WT_ERR((intptr_t)in_pthread(tryrd_result, &l), 0);
		struct timespec ts = deadline_in(CLOCK_REALTIME, 10 * NS_PER_S);
		WT_OK(weft_rwlock_timedrdlock(&l, &ts)); /* a second read lock by main */
		WT_OK(weft_rwlock_unlock(&l));
		/* readers hold writers off */
		WT_ERR((intptr_t)in_ult(trywr_result, &l), EBUSY);
		WT_ERR((intptr_t)in_pthread(trywr_result, &l), EBUSY);
		WT_ERR(weft_rwlock_destroy(&l), EBUSY);
		WT_OK(weft_rwlock_unlock(&l));
		WT_ERR((intptr_t)in_ult(trywr_result, &l), 0);
		WT_OK(weft_rwlock_destroy(&l));
	}
	WT_OK(weft_shutdown());
}

static void test_writer_excludes_everyone(void **state)
{
	wt_init(2);
	weft_rwlock_t l = {0};
	WT_OK(weft_rwlock_wrlock(&l));
	WT_ERR((intptr_t)in_ult(tryrd_result, &l), EBUSY);
	WT_ERR((intptr_t)in_ult(trywr_result, &l), EBUSY);
	WT_ERR((intptr_t)in_pthread(tryrd_result, &l), EBUSY);
	WT_ERR((intptr_t)in_pthread(trywr_result, &l), EBUSY);
	WT_ERR(weft_rwlock_destroy(&l), EBUSY);
	WT_OK(weft_rwlock_unlock(&l));
	WT_ERR((intptr_t)in_pthread(tryrd_result, &l), 0);
	WT_ERR((intptr_t)in_pthread(trywr_result, &l), 0);
	WT_OK(weft_rwlock_destroy(&l));
	WT_OK(weft_shutdown());
}

/* ---- errors -------------------------------------------------------------- */

static void test_wrlock_twice_edeadlk(void **state)
{
	wt_init(2);
	weft_rwlock_t l = {0};
	WT_OK(weft_rwlock_wrlock(&l));
	WT_ERR(weft_rwlock_wrlock(&l), EDEADLK);
	struct timespec ts = deadline_in(CLOCK_REALTIME, 10 * NS_PER_S);
	WT_ERR(weft_rwlock_timedwrlock(&l, &ts), EDEADLK);
	ts = deadline_in(CLOCK_MONOTONIC, 10 * NS_PER_S);
	WT_ERR(weft_rwlock_clockwrlock(&l, CLOCK_MONOTONIC, &ts), EDEADLK);
	WT_OK(weft_rwlock_unlock(&l)); /* still held once: the errors changed nothing */
	WT_ERR((intptr_t)in_ult(trywr_result, &l), 0);
	WT_OK(weft_shutdown());
}

static void test_unlock_not_held_eperm(void **state)
{
	wt_init(2);
	weft_rwlock_t l = {0};
	WT_ERR(weft_rwlock_unlock(&l), EPERM); /* never locked */
	WT_OK(weft_rwlock_rdlock(&l));
	WT_OK(weft_rwlock_unlock(&l));
	WT_ERR(weft_rwlock_unlock(&l), EPERM); /* released */
	WT_OK(weft_rwlock_wrlock(&l));
	WT_OK(weft_rwlock_unlock(&l));
	WT_ERR(weft_rwlock_unlock(&l), EPERM);
	/* held for writing by main: others hold it neither way */
	WT_OK(weft_rwlock_wrlock(&l));
	WT_ERR((intptr_t)in_ult(unlock_result, &l), EPERM);
	WT_ERR((intptr_t)in_pthread(unlock_result, &l), EPERM);
	WT_ERR((intptr_t)in_ult(tryrd_result, &l), EBUSY); /* still write-held */
	WT_OK(weft_rwlock_unlock(&l));
	WT_OK(weft_rwlock_destroy(&l));
	WT_OK(weft_shutdown());
}

/* ---- timed locking ------------------------------------------------------- */

struct timed_case {
	weft_rwlock_t *l;
	int writer_holds; /* else readers hold: only writers are kept out */
};

static void *timed_lock_errors(void *arg)
{
	struct timed_case *c = arg;
	weft_rwlock_t *l = c->l;
	static const clockid_t clocks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};
	struct timespec ts = deadline_in(CLOCK_REALTIME, 50 * MS);
	WT_ERR(weft_rwlock_timedwrlock(l, &ts), ETIMEDOUT);
	WT_RETURNED_AFTER(CLOCK_REALTIME, &ts);
	if (c->writer_holds) {
		ts = deadline_in(CLOCK_REALTIME, 50 * MS);
		WT_ERR(weft_rwlock_timedrdlock(l, &ts), ETIMEDOUT);
		WT_RETURNED_AFTER(CLOCK_REALTIME, &ts);
	}
	for (size_t i = 0; i < 2; i++) {
		ts = deadline_in(clocks[i], 50 * MS);
		WT_ERR(weft_rwlock_clockwrlock(l, clocks[i], &ts), ETIMEDOUT);
		WT_RETURNED_AFTER(clocks[i], &ts);
		uint64_t t0 = wt_now_ns();
		ts = deadline_in(clocks[i], -NS_PER_S);
		WT_ERR(weft_rwlock_clockwrlock(l, clocks[i], &ts), ETIMEDOUT);
		WT_CMPU(wt_now_ns() - t0, <, 2 * NS_PER_S);
		ts = deadline_in(clocks[i], NS_PER_S);
		ts.tv_nsec = NS_PER_S;
		WT_ERR(weft_rwlock_clockwrlock(l, clocks[i], &ts), EINVAL);
		ts.tv_nsec = -1;
		WT_ERR(weft_rwlock_clockwrlock(l, clocks[i], &ts), EINVAL);
		if (c->writer_holds) {
			ts = deadline_in(clocks[i], 50 * MS);
			WT_ERR(weft_rwlock_clockrdlock(l, clocks[i], &ts), ETIMEDOUT);
			WT_RETURNED_AFTER(clocks[i], &ts);
			ts = deadline_in(clocks[i], -NS_PER_S);
			WT_ERR(weft_rwlock_clockrdlock(l, clocks[i], &ts), ETIMEDOUT);
			ts.tv_nsec = NS_PER_S;
			WT_ERR(weft_rwlock_clockrdlock(l, clocks[i], &ts), EINVAL);
		} else {
			/* readers hold it: another reader gets in, deadline or not */
			ts = deadline_in(clocks[i], -NS_PER_S);
			WT_OK(weft_rwlock_clockrdlock(l, clocks[i], &ts));
			WT_OK(weft_rwlock_unlock(l));
		}
	}
	ts = deadline_in(CLOCK_MONOTONIC, NS_PER_S);
	WT_ERR(weft_rwlock_clockwrlock(l, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
	if (c->writer_holds)
		WT_ERR(weft_rwlock_clockrdlock(l, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
	return NULL;
}

static void test_timed_locks_time_out(void **state)
{
	wt_init(2);
	for (int pref = 0; pref < 2; pref++) {
		for (int writer = 0; writer < 2; writer++) {
			weft_rwlock_t l;
			rwlock_init_pref(&l, pref);
			struct timed_case c = {&l, writer};
			WT_OK(writer ? weft_rwlock_wrlock(&l) : weft_rwlock_rdlock(&l));
			in_ult(timed_lock_errors, &c);
			if (pref == 0)
				in_pthread(timed_lock_errors, &c);
			WT_OK(weft_rwlock_unlock(&l));
			/* the timed-out waiters left nothing behind */
			WT_ERR((intptr_t)in_ult(trywr_result, &l), 0);
			WT_OK(weft_rwlock_destroy(&l));
		}
	}
	WT_OK(weft_shutdown());
}

static void *timed_locks_on_free_lock(void *l)
{
	struct timespec past = deadline_in(CLOCK_REALTIME, -NS_PER_S);
	WT_OK(weft_rwlock_timedrdlock(l, &past));
	WT_OK(weft_rwlock_unlock(l));
	WT_OK(weft_rwlock_timedwrlock(l, &past));
	WT_OK(weft_rwlock_unlock(l));
	return NULL;
}

static void test_timed_locks_on_free_lock_succeed(void **state)
{
	wt_init(2);
	weft_rwlock_t l = {0};
	timed_locks_on_free_lock(&l);
	in_pthread(timed_locks_on_free_lock, &l);
	WT_OK(weft_shutdown());
}

/* ---- preferences --------------------------------------------------------- */

struct pending_writer {
	weft_rwlock_t *l;
	atomic_int started;
	atomic_int inside;
};

static void *write_once(void *arg)
{
	struct pending_writer *w = arg;
	atomic_store(&w->started, 1);
	WT_OK(weft_rwlock_wrlock(w->l));
	atomic_store(&w->inside, 1);
	WT_OK(weft_rwlock_unlock(w->l));
	return NULL;
}

static void test_prefer_writer_holds_back_new_readers(void **state)
{
	wt_init(2);
	weft_rwlock_t l;
	rwlock_init_pref(&l, WEFT_RWLOCK_PREFER_WRITER);
	WT_OK(weft_rwlock_rdlock(&l));
	struct pending_writer w = {.l = &l};
	weft_t t = wt_spawn_on(1, write_once, &w);
	WT_WAIT(atomic_load(&w.started), 10);
	/* Once the writer waits, new readers stay out (tried from elsewhere: a
	 * reader that already holds it may be let in again). */
	uint64_t deadline = wt_now_ns() + 10 * NS_PER_S;
	int r;
	while ((r = (intptr_t)in_pthread(tryrd_result, &l)) == 0) {
		WT_CMPU(wt_now_ns(), <, deadline);
		WT_OK(weft_sleep_ns(MS));
	}
	WT_ERR(r, EBUSY);
	WT_EQ(atomic_load(&w.inside), 0);
	WT_OK(weft_rwlock_unlock(&l));
	wt_join(t);
	WT_EQ(atomic_load(&w.inside), 1);
	WT_ERR((intptr_t)in_pthread(tryrd_result, &l), 0);
	WT_OK(weft_rwlock_destroy(&l));
	WT_OK(weft_shutdown());
}

static void test_prefer_reader_admits_readers_past_waiting_writer(void **state)
{
	wt_init(2);
	weft_rwlock_t l = {0}; /* PREFER_READER is the default */
	WT_OK(weft_rwlock_rdlock(&l));
	struct pending_writer w = {.l = &l};
	weft_t t = wt_spawn_on(1, write_once, &w);
	WT_WAIT(atomic_load(&w.started), 10);
	for (int i = 0; i < 20; i++) {
		WT_OK(weft_sleep_ns(MS));
		WT_ERR((intptr_t)in_ult(tryrd_result, &l), 0);
		in_pthread(rdlock_unlock, &l);
	}
	WT_EQ(atomic_load(&w.inside), 0);
	WT_OK(weft_rwlock_unlock(&l));
	wt_join(t);
	WT_EQ(atomic_load(&w.inside), 1);
	WT_OK(weft_rwlock_destroy(&l));
	WT_OK(weft_shutdown());
}

/* ---- contention ---------------------------------------------------------- */

struct shared {
	weft_rwlock_t l;
	int iters;
	atomic_int readers_inside;
	atomic_int writers_inside;
	atomic_int max_readers;
	volatile long value; /* written only under the write lock */
	atomic_long writes;
	atomic_int next_id;
	atomic_int go;
};

static void read_side(struct shared *s, int i)
{
	int n = atomic_fetch_add(&s->readers_inside, 1) + 1;
	int m = atomic_load(&s->max_readers);
	while (n > m && !atomic_compare_exchange_weak(&s->max_readers, &m, n))
		;
	WT_EQ(atomic_load(&s->writers_inside), 0);
	long v = s->value;
	if (i % 16 == 0)
		weft_yield();
	WT_EQ(s->value, v);
	WT_EQ(atomic_load(&s->writers_inside), 0);
	atomic_fetch_sub(&s->readers_inside, 1);
}

static void write_side(struct shared *s, int i)
{
	WT_EQ(atomic_fetch_add(&s->writers_inside, 1), 0);
	WT_EQ(atomic_load(&s->readers_inside), 0);
	long v = s->value;
	if (i % 16 == 0)
		weft_yield();
	s->value = v + 1;
	atomic_fetch_add(&s->writes, 1);
	WT_EQ(atomic_load(&s->readers_inside), 0);
	WT_EQ(atomic_fetch_sub(&s->writers_inside, 1), 1);
}

static void *reader_writer(void *arg)
{
	struct shared *s = arg;
	int id = atomic_fetch_add(&s->next_id, 1);
	while (!atomic_load(&s->go))
		weft_yield();
	for (int i = 0; i < s->iters; i++) {
		int writer = (id + i) % 4 == 0; /* a quarter of the operations write */
		int how = (id * 7 + i) % 10;    /* 0-5 blocking, 6-7 try, 8-9 timed */
		int r;
		if (how < 6) {
			r = writer ? weft_rwlock_wrlock(&s->l) : weft_rwlock_rdlock(&s->l);
		} else if (how < 8) {
			while ((r = writer ? weft_rwlock_trywrlock(&s->l)
					   : weft_rwlock_tryrdlock(&s->l)) == EBUSY)
				weft_yield();
		} else {
			clockid_t clk = how == 8 ? CLOCK_MONOTONIC : CLOCK_REALTIME;
			struct timespec ts = deadline_in(clk, MS);
			while ((r = writer ? weft_rwlock_clockwrlock(&s->l, clk, &ts)
					   : weft_rwlock_clockrdlock(&s->l, clk, &ts)) == ETIMEDOUT)
				ts = deadline_in(clk, MS);
		}
		WT_OK(r);
		if (writer)
			write_side(s, i);
		else
			read_side(s, i);
		WT_OK(weft_rwlock_unlock(&s->l));
	}
	return NULL;
}

static void run_contention(int pref, int iters)
{
	static struct shared s;
	memset(&s, 0, sizeof s);
	rwlock_init_pref(&s.l, pref);
	s.iters = iters;
	enum { ULTS = 10, PTHREADS = 2 };
	weft_t t[ULTS];
	struct wt_pthread p[PTHREADS];
	int nw = weft_num_workers();
	for (int i = 0; i < ULTS; i++)
		t[i] = i % 3 == 2 ? wt_spawn(NULL, reader_writer, &s)
				  : wt_spawn_on(i % nw, reader_writer, &s);
	for (int i = 0; i < PTHREADS; i++)
		wt_pthread_start(&p[i], reader_writer, &s);
	atomic_store(&s.go, 1);
	for (int i = 0; i < ULTS; i++)
		wt_join(t[i]);
	for (int i = 0; i < PTHREADS; i++)
		wt_pthread_join(&p[i]);
	WT_EQ(s.value, atomic_load(&s.writes));
	WT_EQ(atomic_load(&s.readers_inside), 0);
	WT_EQ(atomic_load(&s.writers_inside), 0);
	printf("pref %d: %ld writes, up to %d readers inside at once\n", pref,
	       atomic_load(&s.writes), atomic_load(&s.max_readers));
	WT_OK(weft_rwlock_destroy(&s.l));
}

static void test_contention_prefer_reader(void **state)
{
	wt_init(0);
	run_contention(WEFT_RWLOCK_PREFER_READER, 2000);
	WT_OK(weft_shutdown());
}

static void test_contention_prefer_writer(void **state)
{
	wt_init(0);
	run_contention(WEFT_RWLOCK_PREFER_WRITER, 2000);
	WT_OK(weft_shutdown());
}

static void test_contention_on_one_worker(void **state)
{
	wt_init(1);
	run_contention(WEFT_RWLOCK_PREFER_READER, 1000);
	run_contention(WEFT_RWLOCK_PREFER_WRITER, 1000);
	WT_OK(weft_shutdown());
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rwlockattr_pref),
		cmocka_unit_test(test_zero_initialised_rwlock_works),
		cmocka_unit_test(test_readers_share_the_lock),
		cmocka_unit_test(test_writer_excludes_everyone),
		cmocka_unit_test(test_wrlock_twice_edeadlk),
		cmocka_unit_test(test_unlock_not_held_eperm),
		cmocka_unit_test(test_timed_locks_time_out),
		cmocka_unit_test(test_timed_locks_on_free_lock_succeed),
		cmocka_unit_test(test_prefer_writer_holds_back_new_readers),
		cmocka_unit_test(test_prefer_reader_admits_readers_past_waiting_writer),
		cmocka_unit_test(test_contention_prefer_reader),
		cmocka_unit_test(test_contention_prefer_writer),
		cmocka_unit_test(test_contention_on_one_worker),
	};
	return WT_RUN(argc, argv, tests);
}
