/* Barriers, semaphores, spinlocks and once: their errors, zero-initialised
 * objects, and use from ULTs on every worker and foreign pthreads at once.
 *
 * Barrier: exactly one WEFT_BARRIER_SERIAL_THREAD per cycle, and nobody
 * leaves a cycle before everybody arrived. Semaphore: units are neither lost
 * nor invented. Spinlock: mutual exclusion, and a spinning ULT lets the holder
 * run on the same worker. Once: one call, and every caller returns after it.
 * Every test that needs the runtime initialises it and shuts it down. */
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

/* Start `ults` ULTs (bound round-robin to the workers, every third unbound)
 * and `pthreads` foreign threads running fn(arg). */
enum { MAX_THREADS = 128 };
struct crowd {
	weft_t ults[MAX_THREADS];
	struct wt_pthread p[MAX_THREADS];
	int nults, npthreads;
};

static void crowd_start(struct crowd *k, int ults, int pthreads, void *(*fn)(void *), void *arg)
{
	int nw = weft_num_workers();
	k->nults = ults;
	k->npthreads = pthreads;
	for (int i = 0; i < ults; i++)
		k->ults[i] = i % 3 == 2 ? wt_spawn(NULL, fn, arg) : wt_spawn_on(i % nw, fn, arg);
	for (int i = 0; i < pthreads; i++)
		wt_pthread_start(&k->p[i], fn, arg);
}

static void crowd_join(struct crowd *k)
{
	for (int i = 0; i < k->nults; i++)
		wt_join(k->ults[i]);
	for (int i = 0; i < k->npthreads; i++)
		wt_pthread_join(&k->p[i]);
}

/* ---- barriers ------------------------------------------------------------ */

static void test_barrier_init_errors_and_count_one(void **state)
{
	wt_init(1);
	weft_barrierattr_t a;
	WT_OK(weft_barrierattr_init(&a));
	weft_barrier_t b;
	WT_ERR(weft_barrier_init(&b, NULL, 0), EINVAL);
	WT_ERR(weft_barrier_init(&b, &a, 0), EINVAL);
	WT_OK(weft_barrier_init(&b, &a, 1));
	for (int i = 0; i < 10; i++) /* alone: every wait is the serial one */
		WT_EQ(weft_barrier_wait(&b), WEFT_BARRIER_SERIAL_THREAD);
	WT_OK(weft_barrier_destroy(&b));
	WT_OK(weft_barrierattr_destroy(&a));
	WT_OK(weft_shutdown());
}

enum { MAX_CYCLES = 1000 };
struct cycles {
	weft_barrier_t b;
	int n;      /* participants */
	int cycles; /* to run */
	atomic_int arrived[MAX_CYCLES];
	atomic_int serial[MAX_CYCLES];
};

static void *cycle_through(void *arg)
{
	struct cycles *c = arg;
	for (int k = 0; k < c->cycles; k++) {
		atomic_fetch_add(&c->arrived[k], 1);
		int r = weft_barrier_wait(&c->b);
		WT_TRUE(r == 0 || r == WEFT_BARRIER_SERIAL_THREAD, "barrier_wait returned %d", r);
		if (r == WEFT_BARRIER_SERIAL_THREAD)
			atomic_fetch_add(&c->serial[k], 1);
		/* nobody leaves before all arrived */
		WT_EQ(atomic_load(&c->arrived[k]), c->n);
	}
	return NULL;
}

static void run_cycles(int ults, int pthreads, int cycles)
{
	static struct cycles c;
	memset(&c, 0, sizeof c);
	c.n = ults + pthreads;
	c.cycles = cycles;
	WT_CMP(cycles, <=, MAX_CYCLES);
	WT_OK(weft_barrier_init(&c.b, NULL, (unsigned)c.n));
	static struct crowd k;
	crowd_start(&k, ults, pthreads, cycle_through, &c);
	crowd_join(&k);
	for (int i = 0; i < cycles; i++) {
		if (atomic_load(&c.serial[i]) != 1)
			fail_msg("cycle %d had %d serial threads", i, atomic_load(&c.serial[i]));
		WT_EQ(atomic_load(&c.arrived[i]), c.n);
	}
	WT_OK(weft_barrier_destroy(&c.b));
}

static void test_barrier_one_serial_thread_per_cycle(void **state)
{
	wt_init(0);
	run_cycles(6, 2, 500);
	WT_OK(weft_shutdown());
}

static void test_barrier_more_ults_than_workers(void **state)
{
	wt_init(1);
	run_cycles(50, 0, 40);
	run_cycles(7, 1, 200);
	WT_OK(weft_shutdown());
}

/* ---- semaphores ---------------------------------------------------------- */

static void test_sem_init_errors(void **state)
{
	weft_sem_t s;
	int v = -1;
	WT_ERR(weft_sem_init(&s, 0, (unsigned)WEFT_SEM_VALUE_MAX + 1u), EINVAL);
	WT_ERR(weft_sem_init(&s, 0, UINT32_MAX), EINVAL);
	WT_ERR(weft_sem_init(&s, 1, 0), EINVAL);
	WT_ERR(weft_sem_init(&s, -1, 0), EINVAL);
	WT_OK(weft_sem_init(&s, 0, 3));
	WT_OK(weft_sem_getvalue(&s, &v));
	WT_EQ(v, 3);
	WT_OK(weft_sem_destroy(&s));
}

static void test_sem_post_at_max_eoverflow(void **state)
{
	wt_init(1);
	weft_sem_t s;
	int v = -1;
	WT_OK(weft_sem_init(&s, 0, WEFT_SEM_VALUE_MAX));
	WT_OK(weft_sem_getvalue(&s, &v));
	WT_EQ(v, WEFT_SEM_VALUE_MAX);
	WT_ERR(weft_sem_post(&s), EOVERFLOW);
	WT_OK(weft_sem_getvalue(&s, &v));
	WT_EQ(v, WEFT_SEM_VALUE_MAX);
	WT_OK(weft_sem_trywait(&s));
	WT_OK(weft_sem_getvalue(&s, &v));
	WT_EQ(v, WEFT_SEM_VALUE_MAX - 1);
	WT_OK(weft_sem_post(&s));
	WT_ERR(weft_sem_post(&s), EOVERFLOW);
	WT_OK(weft_sem_destroy(&s));
	WT_OK(weft_shutdown());
}

static void test_sem_zero_initialised_trywait_getvalue(void **state)
{
	wt_init(1);
	weft_sem_t s = {0};
	int v = -1;
	WT_OK(weft_sem_getvalue(&s, &v));
	WT_EQ(v, 0);
	WT_ERR(weft_sem_trywait(&s), EAGAIN);
	WT_OK(weft_sem_post(&s));
	WT_OK(weft_sem_post(&s));
	WT_OK(weft_sem_getvalue(&s, &v));
	WT_EQ(v, 2);
	WT_OK(weft_sem_wait(&s)); /* has a unit: does not block */
	WT_OK(weft_sem_trywait(&s));
	WT_ERR(weft_sem_trywait(&s), EAGAIN);
	WT_OK(weft_sem_getvalue(&s, &v));
	WT_EQ(v, 0);
	WT_OK(weft_sem_destroy(&s));
	WT_OK(weft_shutdown());
}

static void *sem_timed_errors(void *arg)
{
	weft_sem_t *s = arg; /* value 0 */
	static const clockid_t clocks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};
	struct timespec ts = deadline_in(CLOCK_REALTIME, 50 * MS);
	WT_ERR(weft_sem_timedwait(s, &ts), ETIMEDOUT);
	WT_RETURNED_AFTER(CLOCK_REALTIME, &ts);
	for (size_t i = 0; i < 2; i++) {
		ts = deadline_in(clocks[i], 50 * MS);
		WT_ERR(weft_sem_clockwait(s, clocks[i], &ts), ETIMEDOUT);
		WT_RETURNED_AFTER(clocks[i], &ts);
		uint64_t t0 = wt_now_ns();
		ts = deadline_in(clocks[i], -NS_PER_S);
		WT_ERR(weft_sem_clockwait(s, clocks[i], &ts), ETIMEDOUT);
		ts = (struct timespec){0, 0};
		WT_ERR(weft_sem_clockwait(s, clocks[i], &ts), ETIMEDOUT);
		WT_CMPU(wt_now_ns() - t0, <, 2 * NS_PER_S);
		ts = deadline_in(clocks[i], NS_PER_S);
		ts.tv_nsec = -1;
		WT_ERR(weft_sem_clockwait(s, clocks[i], &ts), EINVAL);
		ts.tv_nsec = NS_PER_S;
		WT_ERR(weft_sem_clockwait(s, clocks[i], &ts), EINVAL);
	}
	ts.tv_nsec = NS_PER_S;
	WT_ERR(weft_sem_timedwait(s, &ts), EINVAL);
	ts = deadline_in(CLOCK_MONOTONIC, NS_PER_S);
	WT_ERR(weft_sem_clockwait(s, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
	WT_ERR(weft_sem_clockwait(s, (clockid_t)99, &ts), EINVAL);
	return NULL;
}

static void test_sem_timed_waits(void **state)
{
	wt_init(2);
	weft_sem_t s = {0};
	sem_timed_errors(&s);
	wt_join(wt_spawn_on(1, sem_timed_errors, &s));
	in_pthread(sem_timed_errors, &s);
	int v = -1;
	WT_OK(weft_sem_getvalue(&s, &v));
	WT_EQ(v, 0);
	WT_OK(weft_sem_destroy(&s)); /* the timed-out waiters left */
	/* with a unit there: taken at once, whatever the deadline */
	WT_OK(weft_sem_post(&s));
	struct timespec past = deadline_in(CLOCK_REALTIME, -NS_PER_S);
	WT_OK(weft_sem_timedwait(&s, &past));
	WT_OK(weft_sem_post(&s));
	past = deadline_in(CLOCK_MONOTONIC, -NS_PER_S);
	WT_OK(weft_sem_clockwait(&s, CLOCK_MONOTONIC, &past));
	WT_OK(weft_shutdown());
}

struct sem_waiters {
	weft_sem_t s;
	atomic_int started;
	atomic_int done;
};

static void *sem_wait_once(void *arg)
{
	struct sem_waiters *w = arg;
	atomic_fetch_add(&w->started, 1);
	WT_OK(weft_sem_wait(&w->s));
	atomic_fetch_add(&w->done, 1);
	return NULL;
}

static void *post_result(void *s)
{
	return (void *)(intptr_t)weft_sem_post(s);
}

static void test_sem_posts_wake_blocked_waiters(void **state)
{
	/* One post per waiter, from ULTs and pthreads: each post lets exactly
	 * one more waiter through; none is lost. */
	wt_init(0);
	static struct sem_waiters w;
	static struct crowd k;
	crowd_start(&k, 12, 3, sem_wait_once, &w);
	int n = k.nults + k.npthreads;
	WT_WAIT(atomic_load(&w.started) == n, 10);
	WT_OK(weft_sleep_ns(10 * MS)); /* most of them are blocked by now */
	WT_EQ(atomic_load(&w.done), 0);
	for (int i = 1; i <= n; i++) {
		if (i % 3 == 0)
			WT_ERR((intptr_t)in_pthread(post_result, &w.s), 0);
		else
			WT_OK(weft_sem_post(&w.s));
		WT_WAIT(atomic_load(&w.done) == i, 10);
	}
	crowd_join(&k);
	int v = -1;
	WT_OK(weft_sem_getvalue(&w.s, &v));
	WT_EQ(v, 0);
	WT_OK(weft_sem_destroy(&w.s));
	WT_OK(weft_shutdown());
}

static void test_sem_destroy_with_waiter_ebusy(void **state)
{
	wt_init(2);
	static struct sem_waiters w;
	weft_t t = wt_spawn_on(1, sem_wait_once, &w);
	WT_WAIT(atomic_load(&w.started), 10);
	/* EBUSY as soon as the waiter is inside the wait */
	uint64_t deadline = wt_now_ns() + 10 * NS_PER_S;
	int r;
	while ((r = weft_sem_destroy(&w.s)) == 0) {
		WT_CMPU(wt_now_ns(), <, deadline);
		weft_yield();
	}
	WT_ERR(r, EBUSY);
	WT_OK(weft_sem_post(&w.s));
	wt_join(t);
	WT_OK(weft_sem_destroy(&w.s));
	WT_OK(weft_shutdown());
}

/* Units under contention: producers post, consumers take with every kind of
 * wait; everything posted is taken exactly once. */
struct units {
	weft_sem_t s;
	int per_producer;
	int total;
	atomic_int taken;
	atomic_int posted;
	atomic_int next_id;
};

static void *post_units(void *arg)
{
	struct units *u = arg;
	for (int i = 0; i < u->per_producer; i++) {
		WT_OK(weft_sem_post(&u->s));
		atomic_fetch_add(&u->posted, 1);
		if (i % 32 == 0)
			weft_yield();
	}
	return NULL;
}

static void *take_units(void *arg)
{
	struct units *u = arg;
	int id = atomic_fetch_add(&u->next_id, 1);
	for (int i = 0;; i++) {
		/* claim a unit to take, so nobody waits for one that never comes */
		int t = atomic_fetch_add(&u->taken, 1);
		if (t >= u->total) {
			atomic_fetch_sub(&u->taken, 1);
			return NULL;
		}
		int how = (id + i) % 4;
		if (how == 0) {
			WT_OK(weft_sem_wait(&u->s));
		} else if (how == 1) {
			int r;
			while ((r = weft_sem_trywait(&u->s)) == EAGAIN)
				weft_yield();
			WT_OK(r);
		} else {
			clockid_t clk = how == 2 ? CLOCK_MONOTONIC : CLOCK_REALTIME;
			int r;
			do {
				struct timespec ts = deadline_in(clk, MS);
				r = weft_sem_clockwait(&u->s, clk, &ts);
			} while (r == ETIMEDOUT);
			WT_OK(r);
		}
	}
}

static void test_sem_units_preserved_under_contention(void **state)
{
	wt_init(0);
	static struct units u;
	u.per_producer = 4000;
	u.total = (5 + 1) * u.per_producer;
	static struct crowd prod, cons;
	crowd_start(&cons, 6, 2, take_units, &u);
	crowd_start(&prod, 5, 1, post_units, &u);
	crowd_join(&prod);
	crowd_join(&cons);
	WT_EQ(atomic_load(&u.posted), u.total);
	WT_EQ(atomic_load(&u.taken), u.total);
	int v = -1;
	WT_OK(weft_sem_getvalue(&u.s, &v));
	WT_EQ(v, 0);
	WT_ERR(weft_sem_trywait(&u.s), EAGAIN);
	WT_OK(weft_sem_destroy(&u.s));
	WT_OK(weft_shutdown());
}

/* A semaphore of one unit is a lock. */
struct sem_lock {
	weft_sem_t s;
	int iters;
	volatile long counter;
	atomic_int inside;
};

static void *sem_lock_contend(void *arg)
{
	struct sem_lock *l = arg;
	for (int i = 0; i < l->iters; i++) {
		WT_OK(weft_sem_wait(&l->s));
		WT_EQ(atomic_exchange(&l->inside, 1), 0);
		long v = l->counter;
		if (i % 64 == 0)
			weft_yield();
		l->counter = v + 1;
		WT_EQ(atomic_exchange(&l->inside, 0), 1);
		WT_OK(weft_sem_post(&l->s));
	}
	return NULL;
}

static void test_sem_as_lock(void **state)
{
	wt_init(0);
	static struct sem_lock l;
	WT_OK(weft_sem_init(&l.s, 0, 1));
	l.iters = 2000;
	static struct crowd k;
	crowd_start(&k, 8, 2, sem_lock_contend, &l);
	crowd_join(&k);
	WT_EQ(l.counter, 10L * l.iters);
	int v = -1;
	WT_OK(weft_sem_getvalue(&l.s, &v));
	WT_EQ(v, 1);
	WT_OK(weft_shutdown());
}

/* ---- spinlocks ----------------------------------------------------------- */

static void *spin_trylock_result(void *l)
{
	int r = weft_spin_trylock(l);
	if (r == 0)
		WT_OK(weft_spin_unlock(l));
	return (void *)(intptr_t)r;
}

static void test_spin_basics(void **state)
{
	wt_init(2);
	weft_spinlock_t l = {0};
	WT_OK(weft_spin_lock(&l));
	WT_ERR(weft_spin_trylock(&l), EBUSY);
	WT_ERR((intptr_t)wt_join(wt_spawn_on(1, spin_trylock_result, &l)), EBUSY);
	WT_ERR((intptr_t)in_pthread(spin_trylock_result, &l), EBUSY);
	WT_OK(weft_spin_unlock(&l));
	WT_OK(weft_spin_trylock(&l));
	WT_OK(weft_spin_unlock(&l));
	WT_ERR((intptr_t)in_pthread(spin_trylock_result, &l), 0);
	WT_OK(weft_spin_destroy(&l));

	weft_spinlock_t k;
	WT_OK(weft_spin_init(&k, 0));
	WT_OK(weft_spin_lock(&k));
	WT_OK(weft_spin_unlock(&k));
	WT_OK(weft_spin_destroy(&k));
	WT_OK(weft_spin_init(&k, 1)); /* pshared accepted */
	WT_OK(weft_spin_lock(&k));
	WT_OK(weft_spin_unlock(&k));
	WT_OK(weft_spin_destroy(&k));
	WT_OK(weft_shutdown());
}

struct spin_shared {
	weft_spinlock_t l;
	int iters;
	volatile long counter;
	atomic_int inside;
	atomic_int started;
	atomic_int locked;
};

static void *spin_contend(void *arg)
{
	struct spin_shared *s = arg;
	for (int i = 0; i < s->iters; i++) {
		if (i % 8 == 7) {
			while (weft_spin_trylock(&s->l) == EBUSY)
				weft_yield();
		} else {
			WT_OK(weft_spin_lock(&s->l));
		}
		WT_EQ(atomic_exchange(&s->inside, 1), 0);
		s->counter = s->counter + 1;
		WT_EQ(atomic_exchange(&s->inside, 0), 1);
		WT_OK(weft_spin_unlock(&s->l));
	}
	return NULL;
}

static void test_spin_mutual_exclusion(void **state)
{
	wt_init(0);
	static struct spin_shared s;
	s.iters = 5000;
	static struct crowd k;
	crowd_start(&k, 8, 2, spin_contend, &s);
	crowd_join(&k);
	WT_EQ(s.counter, 10L * s.iters);
	WT_OK(weft_shutdown());
}

static void *announce_then_spin(void *arg)
{
	struct spin_shared *s = arg;
	atomic_store(&s->started, 1);
	WT_OK(weft_spin_lock(&s->l)); /* held by main, on this same worker */
	atomic_store(&s->locked, 1);
	WT_OK(weft_spin_unlock(&s->l));
	return NULL;
}

static void test_spinning_ult_lets_holder_run_on_same_worker(void **state)
{
	wt_init(1);
	static struct spin_shared s;
	WT_OK(weft_spin_lock(&s.l));
	weft_t t = wt_spawn(NULL, announce_then_spin, &s);
	/* main runs again only if the spinner yields the one worker */
	WT_WAIT(atomic_load(&s.started), 10);
	for (int i = 0; i < 10; i++)
		weft_yield();
	WT_EQ(atomic_load(&s.locked), 0);
	WT_OK(weft_spin_unlock(&s.l));
	wt_join(t);
	WT_EQ(atomic_load(&s.locked), 1);
	s.iters = 2000; /* and many ULTs contending on the one worker */
	static struct crowd k;
	crowd_start(&k, 8, 1, spin_contend, &s);
	crowd_join(&k);
	WT_EQ(s.counter, 9L * s.iters);
	WT_OK(weft_shutdown());
}

/* ---- once ---------------------------------------------------------------- */

static atomic_int once_calls;
static atomic_int once_done;
static atomic_int once_go;
static weft_once_t the_once = WEFT_ONCE_INIT;

static void once_fn(void)
{
	atomic_fetch_add(&once_calls, 1);
	/* take a while, blocking weft's way: callers must wait for the end */
	WT_OK(weft_sleep_ns(20 * MS));
	for (int i = 0; i < 100; i++)
		weft_yield();
	atomic_store(&once_done, 1);
}

static void *call_once(void *arg)
{
	while (!atomic_load(&once_go))
		weft_yield();
	WT_OK(weft_once(&the_once, once_fn));
	WT_EQ(atomic_load(&once_done), 1);
	WT_EQ(atomic_load(&once_calls), 1);
	return NULL;
}

static void test_once_runs_once_with_concurrent_callers(void **state)
{
	wt_init(0);
	static struct crowd k;
	crowd_start(&k, 52, 12, call_once, NULL); /* 64 callers */
	atomic_store(&once_go, 1);
	crowd_join(&k);
	WT_EQ(atomic_load(&once_calls), 1);
	WT_OK(weft_once(&the_once, once_fn)); /* later calls: nothing */
	WT_EQ(atomic_load(&once_calls), 1);
	WT_OK(weft_shutdown());
}

static atomic_int a_calls, b_calls;
static void once_a(void)
{
	atomic_fetch_add(&a_calls, 1);
}
static void once_b(void)
{
	atomic_fetch_add(&b_calls, 1);
}

static void *call_zero_onces(void *arg)
{
	weft_once_t *o = arg;
	WT_OK(weft_once(&o[0], once_a));
	WT_OK(weft_once(&o[1], once_b));
	WT_OK(weft_once(&o[0], once_b)); /* o[0] is done: fn not run */
	return NULL;
}

static void test_once_zero_initialised_and_independent(void **state)
{
	wt_init(2);
	weft_once_t o[2] = {{0}, WEFT_ONCE_INIT};
	call_zero_onces(o);
	in_pthread(call_zero_onces, o);
	wt_join(wt_spawn_on(1, call_zero_onces, o));
	WT_EQ(atomic_load(&a_calls), 1);
	WT_EQ(atomic_load(&b_calls), 1);
	WT_OK(weft_shutdown());
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_barrier_init_errors_and_count_one),
		cmocka_unit_test(test_barrier_one_serial_thread_per_cycle),
		cmocka_unit_test(test_barrier_more_ults_than_workers),
		cmocka_unit_test(test_sem_init_errors),
		cmocka_unit_test(test_sem_post_at_max_eoverflow),
		cmocka_unit_test(test_sem_zero_initialised_trywait_getvalue),
		cmocka_unit_test(test_sem_timed_waits),
		cmocka_unit_test(test_sem_posts_wake_blocked_waiters),
		cmocka_unit_test(test_sem_destroy_with_waiter_ebusy),
		cmocka_unit_test(test_sem_units_preserved_under_contention),
		cmocka_unit_test(test_sem_as_lock),
		cmocka_unit_test(test_spin_basics),
		cmocka_unit_test(test_spin_mutual_exclusion),
		cmocka_unit_test(test_spinning_ult_lets_holder_run_on_same_worker),
		cmocka_unit_test(test_once_runs_once_with_concurrent_callers),
		cmocka_unit_test(test_once_zero_initialised_and_independent),
	};
	return WT_RUN(argc, argv, tests);
}
