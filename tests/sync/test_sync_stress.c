/* A randomized mix of the synchronization API from ULTs (bound and unbound)
 * and foreign pthreads at once, for a bounded time: mutexes of every policy
 * (and a recursive one), a mutex+cond queue, a semaphore, a rwlock, a
 * barrier group, sleeps, wait/wake, and ULTs cancelled while blocked.
 *
 * Invariants checked at the end: every counter bumped under a lock equals the
 * number of bumps; the queue lost and duplicated nothing (count and sum);
 * semaphore units posted = taken + left; the rwlock's value equals the number
 * of writes; each barrier cycle had exactly one serial thread; every cancelled
 * ULT ran its cleanup handler. Inside the run: nobody is ever inside a lock
 * together with someone it excludes.
 *
 *   WEFT_STRESS_SECONDS  how long to run (default 5)
 *   WEFT_STRESS_SEED     the random seed (default: from the clock; printed)
 * A long run is registered separately with the "stress" label. */
#include "harness.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NS_PER_S 1000000000LL
#define MS       1000000LL
#define US       1000LL

enum {
	ULT_ACTORS = 6,
	PTHREAD_ACTORS = 2,
	BARRIER_ULTS = 3,
	BARRIER_PTHREADS = 1,
	NLOCKS = 5, /* one per policy, and a recursive one */
	QCAP = 16,
};

static uint64_t deadline;
static uint64_t seed;
static int nworkers;

static uint64_t next_rand(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* The time on clock ns nanoseconds from now. */
static struct timespec deadline_in(clockid_t clock, long long ns)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	long long t = (long long)ts.tv_sec * NS_PER_S + ts.tv_nsec + ns;
	ts.tv_sec = t / NS_PER_S;
	ts.tv_nsec = t % NS_PER_S;
	return ts;
}

static clockid_t pick_clock(uint64_t *rng)
{
	return next_rand(rng) % 2 ? CLOCK_MONOTONIC : CLOCK_REALTIME;
}

/* ---- the shared objects -------------------------------------------------- */

struct guarded {
	weft_mutex_t m;
	volatile long counter; /* under m */
	atomic_long bumps;
	atomic_int inside;
};
static struct guarded locks[NLOCKS];

static struct {
	weft_mutex_t m;
	weft_cond_t not_empty, not_full;
	uint64_t buf[QCAP];
	int head, count;
} q;
static atomic_ulong produced_n, produced_sum, consumed_n, consumed_sum;

static weft_sem_t sem;
static atomic_long sem_posts, sem_takes;

static weft_rwlock_t rw;
static atomic_int rw_readers, rw_writers;
static volatile long rw_value; /* under the write lock */
static atomic_long rw_writes, rw_reads;

static weft_barrier_t bar;
static int bar_stop; /* written by the serial thread between the two waits */
static atomic_long bar_cycles, bar_serials, bar_arrivals;

static uint32_t pulse; /* a word victims wait on; actors bump and wake it */
static atomic_long ops, sleeps, cancels, cleanups, victims_took;

/* ---- operations ---------------------------------------------------------- */

static void op_mutex(uint64_t *rng)
{
	struct guarded *g = &locks[next_rand(rng) % NLOCKS];
	unsigned how = (unsigned)(next_rand(rng) % 4);
	int r;
	if (how == 0) {
		while ((r = weft_mutex_trylock(&g->m)) == EBUSY)
			weft_yield();
	} else if (how == 1) {
		clockid_t clk = pick_clock(rng);
		do {
			struct timespec ts = deadline_in(clk, 200 * US);
			r = weft_mutex_clocklock(&g->m, clk, &ts);
		} while (r == ETIMEDOUT);
	} else {
		r = weft_mutex_lock(&g->m);
	}
	WT_OK(r);
	WT_EQ(atomic_exchange(&g->inside, 1), 0);
	bool nested = g == &locks[NLOCKS - 1] && next_rand(rng) % 2;
	if (nested) /* the recursive one */
		WT_OK(weft_mutex_lock(&g->m));
	long v = g->counter;
	if (next_rand(rng) % 16 == 0)
		weft_yield();
	g->counter = v + 1;
	atomic_fetch_add(&g->bumps, 1);
	if (nested)
		WT_OK(weft_mutex_unlock(&g->m));
	WT_EQ(atomic_exchange(&g->inside, 0), 1);
	WT_OK(weft_mutex_unlock(&g->m));
}

static void op_produce(uint64_t *rng)
{
	uint64_t v = next_rand(rng) >> 20;
	WT_OK(weft_mutex_lock(&q.m));
	while (q.count == QCAP) {
		struct timespec ts = deadline_in(CLOCK_REALTIME, 2 * MS);
		int r = weft_cond_timedwait(&q.not_full, &q.m, &ts);
		WT_TRUE(r == 0 || r == ETIMEDOUT, "timedwait returned %s", wt_errname(r));
		if (r == ETIMEDOUT && q.count == QCAP) {
			WT_OK(weft_mutex_unlock(&q.m));
			return; /* full for a while: give up this time */
		}
	}
	q.buf[(q.head + q.count) % QCAP] = v;
	q.count++;
	atomic_fetch_add(&produced_n, 1);
	atomic_fetch_add(&produced_sum, v);
	WT_OK(weft_cond_signal(&q.not_empty));
	WT_OK(weft_mutex_unlock(&q.m));
}

static void op_consume(uint64_t *rng)
{
	WT_OK(weft_mutex_lock(&q.m));
	while (q.count == 0) {
		clockid_t clk = pick_clock(rng);
		struct timespec ts = deadline_in(clk, 2 * MS);
		int r = weft_cond_clockwait(&q.not_empty, &q.m, clk, &ts);
		WT_TRUE(r == 0 || r == ETIMEDOUT, "clockwait returned %s", wt_errname(r));
		if (r == ETIMEDOUT && q.count == 0) {
			WT_OK(weft_mutex_unlock(&q.m));
			return;
		}
	}
	uint64_t v = q.buf[q.head];
	q.head = (q.head + 1) % QCAP;
	q.count--;
	atomic_fetch_add(&consumed_n, 1);
	atomic_fetch_add(&consumed_sum, v);
	WT_OK(weft_cond_signal(&q.not_full));
	WT_OK(weft_mutex_unlock(&q.m));
}

static void op_sem(uint64_t *rng)
{
	unsigned how = (unsigned)(next_rand(rng) % 3);
	if (how == 0) {
		WT_OK(weft_sem_post(&sem));
		atomic_fetch_add(&sem_posts, 1);
		return;
	}
	int r;
	if (how == 1) {
		r = weft_sem_trywait(&sem);
		WT_TRUE(r == 0 || r == EAGAIN, "trywait returned %s", wt_errname(r));
	} else {
		clockid_t clk = pick_clock(rng);
		struct timespec ts = deadline_in(clk, 1 * MS);
		r = weft_sem_clockwait(&sem, clk, &ts);
		WT_TRUE(r == 0 || r == ETIMEDOUT, "clockwait returned %s", wt_errname(r));
	}
	if (r == 0)
		atomic_fetch_add(&sem_takes, 1);
}

static void op_rwlock(uint64_t *rng)
{
	bool writer = next_rand(rng) % 4 == 0;
	unsigned how = (unsigned)(next_rand(rng) % 3);
	int r;
	if (how == 0) {
		r = writer ? weft_rwlock_wrlock(&rw) : weft_rwlock_rdlock(&rw);
	} else if (how == 1) {
		while ((r = writer ? weft_rwlock_trywrlock(&rw) : weft_rwlock_tryrdlock(&rw)) ==
		       EBUSY)
			weft_yield();
	} else {
		clockid_t clk = pick_clock(rng);
		do {
			struct timespec ts = deadline_in(clk, 500 * US);
			r = writer ? weft_rwlock_clockwrlock(&rw, clk, &ts)
				   : weft_rwlock_clockrdlock(&rw, clk, &ts);
		} while (r == ETIMEDOUT);
	}
	WT_OK(r);
	if (writer) {
		WT_EQ(atomic_fetch_add(&rw_writers, 1), 0);
		WT_EQ(atomic_load(&rw_readers), 0);
		long v = rw_value;
		if (next_rand(rng) % 8 == 0)
			weft_yield();
		rw_value = v + 1;
		atomic_fetch_add(&rw_writes, 1);
		WT_EQ(atomic_fetch_sub(&rw_writers, 1), 1);
	} else {
		atomic_fetch_add(&rw_readers, 1);
		WT_EQ(atomic_load(&rw_writers), 0);
		long v = rw_value;
		if (next_rand(rng) % 8 == 0)
			weft_yield();
		WT_EQ(rw_value, v);
		atomic_fetch_sub(&rw_readers, 1);
		atomic_fetch_add(&rw_reads, 1);
	}
	WT_OK(weft_rwlock_unlock(&rw));
}

static void op_sleep(uint64_t *rng)
{
	long long ns = (long long)(next_rand(rng) % (200 * US));
	uint64_t t0 = wt_now_ns();
	if (next_rand(rng) % 2) {
		WT_OK(weft_sleep_ns((uint64_t)ns));
	} else {
		struct timespec req = {0, ns};
		WT_OK(weft_nanosleep(&req, NULL));
	}
	WT_CMPU(wt_now_ns() - t0, >=, (uint64_t)ns);
	atomic_fetch_add(&sleeps, 1);
}

static void op_pulse(uint64_t *rng)
{
	__atomic_fetch_add(&pulse, 1, __ATOMIC_SEQ_CST);
	WT_CMP(weft_wake(&pulse, next_rand(rng) % 2 ? 1 : INT32_MAX), >=, 0);
	if (next_rand(rng) % 2) /* spurious broadcasts: waiters re-check */
		WT_OK(weft_cond_broadcast(&q.not_empty));
}

/* ---- cancelled ULTs ------------------------------------------------------ */

enum victim_kind { V_SLEEP, V_PRIVATE_SEM, V_SHARED_SEM, V_COND, V_PULSE, V_KINDS };
struct victim {
	enum victim_kind kind;
	weft_sem_t s;
	weft_mutex_t m; /* errorcheck */
	weft_cond_t c;
	atomic_int cleaned;
	int unlock_rc;
};

static void victim_cleanup(void *arg)
{
	struct victim *v = arg;
	if (v->kind == V_COND)
		v->unlock_rc = weft_mutex_unlock(&v->m);
	atomic_fetch_add(&v->cleaned, 1);
}

static void *victim(void *arg)
{
	struct victim *v = arg;
	void *ret = NULL;
	weft_cleanup_push(victim_cleanup, v);
	switch (v->kind) {
	case V_SLEEP:
		weft_sleep_ns(30 * NS_PER_S);
		break;
	case V_PRIVATE_SEM:
		weft_sem_wait(&v->s); /* nobody posts */
		break;
	case V_SHARED_SEM: { /* may take a unit: then it returns normally */
		struct timespec ts = deadline_in(CLOCK_MONOTONIC, 30 * NS_PER_S);
		if (weft_sem_clockwait(&sem, CLOCK_MONOTONIC, &ts) == 0) {
			ret = v;
			atomic_fetch_add(&victims_took, 1);
		}
		break;
	}
	case V_COND:
		WT_OK(weft_mutex_lock(&v->m));
		weft_cond_wait(&v->c, &v->m); /* nobody signals */
		WT_OK(weft_mutex_unlock(&v->m));
		break;
	case V_PULSE: /* woken often, but the value it waits for never comes */
		for (;;) {
			uint32_t p = __atomic_load_n(&pulse, __ATOMIC_SEQ_CST);
			int r = weft_wait(&pulse, p, CLOCK_MONOTONIC, NULL);
			WT_TRUE(r == 0 || r == EAGAIN, "weft_wait returned %s", wt_errname(r));
			weft_testcancel();
		}
	default:
		break;
	}
	weft_cleanup_pop(0);
	return ret;
}

static void op_cancel(uint64_t *rng)
{
	struct victim *v = calloc(1, sizeof *v);
	assert_non_null(v);
	v->kind = (enum victim_kind)(next_rand(rng) % V_KINDS);
	weft_mutexattr_t a;
	WT_OK(weft_mutexattr_init(&a));
	WT_OK(weft_mutexattr_settype(&a, WEFT_MUTEX_ERRORCHECK));
	WT_OK(weft_mutex_init(&v->m, &a));
	weft_attr_t ta;
	WT_OK(weft_attr_init(&ta));
	WT_OK(weft_attr_setworker(&ta, (int)(next_rand(rng) % (unsigned)(nworkers + 1)) - 1));
	weft_t t = wt_spawn(&ta, victim, v);
	WT_OK(weft_attr_destroy(&ta));
	unsigned delay = (unsigned)(next_rand(rng) % 4);
	if (delay == 1)
		weft_yield();
	else if (delay >= 2)
		WT_OK(weft_sleep_ns(next_rand(rng) % (300 * US)));
	WT_OK(weft_cancel(t));
	void *ret = wt_join(t);
	if (ret == WEFT_CANCELED) {
		WT_EQ(atomic_load(&v->cleaned), 1);
		if (v->kind == V_COND)
			WT_ERR(v->unlock_rc, 0);
		atomic_fetch_add(&cleanups, 1);
	} else {
		/* only a victim that took a shared unit may end normally */
		WT_EQ(v->kind, V_SHARED_SEM);
		WT_EQ_PTR(ret, v);
		WT_EQ(atomic_load(&v->cleaned), 0);
	}
	atomic_fetch_add(&cancels, 1);
	WT_OK(weft_cond_destroy(&v->c));
	WT_OK(weft_sem_destroy(&v->s));
	WT_OK(weft_mutex_destroy(&v->m));
	free(v);
}

/* ---- actors -------------------------------------------------------------- */

static void *actor(void *arg)
{
	uint64_t rng = seed ^ ((uintptr_t)arg * 0x9E3779B97F4A7C15ull);
	if (!rng)
		rng = 1;
	bool foreign = weft_self() == WEFT_NULL;
	while (wt_now_ns() < deadline) {
		unsigned op = (unsigned)(next_rand(&rng) % 100);
		if (op < 20)
			op_mutex(&rng);
		else if (op < 33)
			op_produce(&rng);
		else if (op < 46)
			op_consume(&rng);
		else if (op < 60)
			op_sem(&rng);
		else if (op < 78)
			op_rwlock(&rng);
		else if (op < 86)
			op_sleep(&rng);
		else if (op < 92)
			op_pulse(&rng);
		else if (!foreign) /* weft_cancel from pthreads has its own test */
			op_cancel(&rng);
		else
			weft_yield();
		atomic_fetch_add(&ops, 1);
	}
	return arg;
}

/* The barrier group: every cycle one serial thread decides, between two
 * waits, whether to stop, so that all members leave after the same cycle. */
static void *barrier_member(void *arg)
{
	uint64_t rng = seed ^ ((uintptr_t)arg * 0xBF58476D1CE4E5B9ull);
	if (!rng)
		rng = 1;
	for (;;) {
		if (next_rand(&rng) % 4 == 0)
			WT_OK(weft_sleep_ns(next_rand(&rng) % (100 * US)));
		atomic_fetch_add(&bar_arrivals, 1);
		int r = weft_barrier_wait(&bar);
		WT_TRUE(r == 0 || r == WEFT_BARRIER_SERIAL_THREAD, "barrier_wait returned %d", r);
		if (r == WEFT_BARRIER_SERIAL_THREAD) {
			atomic_fetch_add(&bar_serials, 1);
			atomic_fetch_add(&bar_cycles, 1);
			__atomic_store_n(&bar_stop, wt_now_ns() >= deadline, __ATOMIC_RELEASE);
		}
		r = weft_barrier_wait(&bar);
		WT_TRUE(r == 0 || r == WEFT_BARRIER_SERIAL_THREAD, "barrier_wait returned %d", r);
		if (r == WEFT_BARRIER_SERIAL_THREAD)
			atomic_fetch_add(&bar_serials, 1);
		if (__atomic_load_n(&bar_stop, __ATOMIC_ACQUIRE))
			break;
		/* nobody writes bar_stop again before all have read it: the next
		 * write comes after the next cycle's first wait */
	}
	return arg;
}

static void make_attr(weft_attr_t *a, uint64_t *rng)
{
	WT_OK(weft_attr_init(a));
	WT_OK(weft_attr_setworker(a, (int)(next_rand(rng) % (unsigned)(nworkers + 1)) - 1));
}

static void init_objects(void)
{
	static const int policies[] = {WEFT_LOCK_ADAPTIVE, WEFT_LOCK_SPIN, WEFT_LOCK_SPIN_PARK,
				       WEFT_LOCK_PARK, WEFT_LOCK_ADAPTIVE};
	for (int i = 0; i < NLOCKS; i++) {
		weft_mutexattr_t a;
		WT_OK(weft_mutexattr_init(&a));
		WT_OK(weft_mutexattr_setpolicy(&a, policies[i]));
		if (i == NLOCKS - 1)
			WT_OK(weft_mutexattr_settype(&a, WEFT_MUTEX_RECURSIVE));
		WT_OK(weft_mutex_init(&locks[i].m, &a));
		WT_OK(weft_mutexattr_destroy(&a));
	}
	weft_condattr_t ca;
	WT_OK(weft_condattr_init(&ca));
	WT_OK(weft_condattr_setclock(&ca, CLOCK_MONOTONIC));
	WT_OK(weft_cond_init(&q.not_full, NULL));
	WT_OK(weft_cond_init(&q.not_empty, &ca));
	WT_OK(weft_condattr_destroy(&ca));
	WT_OK(weft_sem_init(&sem, 0, 0));
	weft_rwlockattr_t ra;
	WT_OK(weft_rwlockattr_init(&ra));
	WT_OK(weft_rwlockattr_setpref(&ra, seed % 2 ? WEFT_RWLOCK_PREFER_WRITER
						    : WEFT_RWLOCK_PREFER_READER));
	WT_OK(weft_rwlock_init(&rw, &ra));
	WT_OK(weft_rwlockattr_destroy(&ra));
	WT_OK(weft_barrier_init(&bar, NULL, BARRIER_ULTS + BARRIER_PTHREADS));
}

static void check_invariants(void)
{
	for (int i = 0; i < NLOCKS; i++) {
		WT_EQ(locks[i].counter, atomic_load(&locks[i].bumps));
		WT_EQ(atomic_load(&locks[i].inside), 0);
		WT_OK(weft_mutex_destroy(&locks[i].m));
	}
	/* what is still queued plus what was consumed is what was produced */
	unsigned long left_n = 0, left_sum = 0;
	for (int i = 0; i < q.count; i++) {
		left_n++;
		left_sum += q.buf[(q.head + i) % QCAP];
	}
	WT_EQU(atomic_load(&consumed_n) + left_n, atomic_load(&produced_n));
	WT_EQU(atomic_load(&consumed_sum) + left_sum, atomic_load(&produced_sum));
	WT_OK(weft_cond_destroy(&q.not_empty));
	WT_OK(weft_cond_destroy(&q.not_full));
	WT_OK(weft_mutex_destroy(&q.m));

	int v = -1;
	WT_OK(weft_sem_getvalue(&sem, &v));
	WT_EQ(v, atomic_load(&sem_posts) - atomic_load(&sem_takes) - atomic_load(&victims_took));
	WT_OK(weft_sem_destroy(&sem));

	WT_EQ(rw_value, atomic_load(&rw_writes));
	WT_OK(weft_rwlock_destroy(&rw));

	WT_EQ(atomic_load(&bar_serials), 2 * atomic_load(&bar_cycles));
	WT_EQ(atomic_load(&bar_arrivals),
	      (BARRIER_ULTS + BARRIER_PTHREADS) * atomic_load(&bar_cycles));
	WT_OK(weft_barrier_destroy(&bar));
}

static void test_random_mix(void **state)
{
	const char *s = getenv("WEFT_STRESS_SECONDS");
	double secs = s ? atof(s) : 5.0;
	const char *sd = getenv("WEFT_STRESS_SEED");
	seed = sd ? strtoull(sd, NULL, 0) : wt_now_ns();
	printf("sync stress: %.0f s, WEFT_STRESS_SEED=%llu\n", secs, (unsigned long long)seed);
	wt_init(0);
	nworkers = weft_num_workers();
	init_objects();
	deadline = wt_now_ns() + (uint64_t)(secs * 1e9);

	weft_t u[ULT_ACTORS], b[BARRIER_ULTS];
	struct wt_pthread p[PTHREAD_ACTORS], bp[BARRIER_PTHREADS];
	uint64_t rng = seed + 1;
	for (intptr_t i = 0; i < ULT_ACTORS; i++) {
		weft_attr_t a;
		make_attr(&a, &rng);
		u[i] = wt_spawn(&a, actor, (void *)(i + 1));
		WT_OK(weft_attr_destroy(&a));
	}
	for (intptr_t i = 0; i < BARRIER_ULTS; i++) {
		weft_attr_t a;
		make_attr(&a, &rng);
		b[i] = wt_spawn(&a, barrier_member, (void *)(i + 1));
		WT_OK(weft_attr_destroy(&a));
	}
	for (intptr_t i = 0; i < PTHREAD_ACTORS; i++)
		wt_pthread_start(&p[i], actor, (void *)(ULT_ACTORS + i + 1));
	for (intptr_t i = 0; i < BARRIER_PTHREADS; i++)
		wt_pthread_start(&bp[i], barrier_member, (void *)(BARRIER_ULTS + i + 1));
	actor((void *)0); /* main takes part too */
	for (intptr_t i = 0; i < ULT_ACTORS; i++)
		WT_EQ_PTR(wt_join(u[i]), (void *)(i + 1));
	for (intptr_t i = 0; i < BARRIER_ULTS; i++)
		WT_EQ_PTR(wt_join(b[i]), (void *)(i + 1));
	for (intptr_t i = 0; i < PTHREAD_ACTORS; i++)
		WT_EQ_PTR(wt_pthread_join(&p[i]), (void *)(ULT_ACTORS + i + 1));
	for (intptr_t i = 0; i < BARRIER_PTHREADS; i++)
		WT_EQ_PTR(wt_pthread_join(&bp[i]), (void *)(BARRIER_ULTS + i + 1));
	check_invariants();
	printf("sync stress: %ld ops, %lu items queued, %ld sem posts, %ld rwlock reads and "
	       "%ld writes, %ld barrier cycles, %ld sleeps, %ld cancels\n",
	       atomic_load(&ops), atomic_load(&produced_n), atomic_load(&sem_posts),
	       atomic_load(&rw_reads), atomic_load(&rw_writes), atomic_load(&bar_cycles),
	       atomic_load(&sleeps), atomic_load(&cancels));
	wt_fini();
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_mix),
	};
	return WT_RUN(argc, argv, tests);
}
