/* Condition variables: wait, timedwait and clockwait on CLOCK_MONOTONIC and
 * CLOCK_REALTIME, pthread_condattr_setclock, signal and broadcast, the mutex
 * held again whenever a wait returns, a ping-pong that would hang on a lost
 * wakeup, and a producer/consumer queue that loses and duplicates nothing.
 *
 * Waiters use errorcheck mutexes where they can, so "the mutex is held again"
 * is checked directly: relocking it must return EDEADLK. Every wait sits in a
 * loop on its predicate, since POSIX allows spurious wakeups. */
#include "ptest.h"

static void init_errorcheck(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;
	PX_OK(pthread_mutexattr_init(&a));
	PX_OK(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK));
	PX_OK(pthread_mutex_init(m, &a));
	PX_OK(pthread_mutexattr_destroy(&a));
}

static void init_cond_on(pthread_cond_t *c, clockid_t clock)
{
	pthread_condattr_t a;
	PX_OK(pthread_condattr_init(&a));
	PX_OK(pthread_condattr_setclock(&a, clock));
	PX_OK(pthread_cond_init(c, &a));
	PX_OK(pthread_condattr_destroy(&a));
}

/* The calling thread holds the errorcheck mutex m. */
#define PX_HOLDS(m) PX_ERR(pthread_mutex_lock(m), EDEADLK)

struct tokens {
	pthread_mutex_t m;
	pthread_cond_t c;
	int tokens;   /* handed out one at a time by the main thread */
	int taken[3]; /* tokens each waiter took */
	int waiting;
};

struct waiter_arg {
	struct tokens *t;
	int id;
};

static int tokens_waiting(struct tokens *t)
{
	PX_OK(pthread_mutex_lock(&t->m));
	int n = t->waiting;
	PX_OK(pthread_mutex_unlock(&t->m));
	return n;
}

static void *take_one_token(void *arg)
{
	struct waiter_arg *w = arg;
	struct tokens *t = w->t;
	PX_OK(pthread_mutex_lock(&t->m));
	t->waiting++;
	while (t->tokens == 0)
		PX_OK(pthread_cond_wait(&t->c, &t->m));
	PX_HOLDS(&t->m);
	t->tokens--;
	t->taken[w->id]++;
	t->waiting--;
	PX_OK(pthread_mutex_unlock(&t->m));
	return NULL;
}

/* Each signal lets (at least) one waiter through; three signals, three
 * tokens, three waiters that each take one. */
static void test_signal_wakes_a_waiter(void **state)
{
	struct tokens t = {.tokens = 0};
	init_errorcheck(&t.m);
	PX_OK(pthread_cond_init(&t.c, NULL));
	pthread_t th[3];
	struct waiter_arg w[3];
	for (int i = 0; i < 3; i++) {
		w[i] = (struct waiter_arg){&t, i};
		th[i] = px_start(NULL, take_one_token, &w[i]);
	}
	PX_WAIT(tokens_waiting(&t) == 3, 10);
	for (int round = 1; round <= 3; round++) {
		PX_OK(pthread_mutex_lock(&t.m));
		t.tokens++;
		PX_OK(pthread_cond_signal(&t.c));
		PX_OK(pthread_mutex_unlock(&t.m));
		/* The token is taken: a signal is not lost. */
		PX_WAIT(tokens_waiting(&t) == 3 - round, 10);
	}
	for (int i = 0; i < 3; i++)
		px_join(th[i]);
	for (int i = 0; i < 3; i++)
		PX_EQ(t.taken[i], 1);
	PX_OK(pthread_cond_destroy(&t.c));
	PX_OK(pthread_mutex_destroy(&t.m));
}

#define N_BCAST 8

struct gate {
	pthread_mutex_t m;
	pthread_cond_t c;
	int generation;
	int waiting;
};

static void *wait_for_next_generation(void *arg)
{
	struct gate *g = arg;
	PX_OK(pthread_mutex_lock(&g->m));
	int gen = g->generation;
	g->waiting++;
	while (g->generation == gen)
		PX_OK(pthread_cond_wait(&g->c, &g->m));
	PX_HOLDS(&g->m);
	g->waiting--;
	PX_OK(pthread_mutex_unlock(&g->m));
	return NULL;
}

static int gate_waiting(struct gate *g)
{
	PX_OK(pthread_mutex_lock(&g->m));
	int n = g->waiting;
	PX_OK(pthread_mutex_unlock(&g->m));
	return n;
}

/* One broadcast releases every waiter. */
static void test_broadcast_wakes_all(void **state)
{
	struct gate g = {.generation = 0};
	init_errorcheck(&g.m);
	PX_OK(pthread_cond_init(&g.c, NULL));
	pthread_t t[N_BCAST];
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < N_BCAST; i++)
			t[i] = px_start(NULL, wait_for_next_generation, &g);
		PX_WAIT(gate_waiting(&g) == N_BCAST, 10);
		PX_OK(pthread_mutex_lock(&g.m));
		g.generation++;
		PX_OK(pthread_cond_broadcast(&g.c));
		PX_OK(pthread_mutex_unlock(&g.m));
		for (int i = 0; i < N_BCAST; i++)
			px_join(t[i]);
		PX_EQ(g.waiting, 0);
	}
	PX_OK(pthread_cond_destroy(&g.c));
	PX_OK(pthread_mutex_destroy(&g.m));
}

/* POSIX: a condition variable on which no thread is blocked may be
 * destroyed - also right after a broadcast that woke every waiter, before
 * they have the mutex back (its rationale's example destroys it there). */
static void test_destroy_after_broadcast(void **state)
{
	struct gate g = {.generation = 0};
	init_errorcheck(&g.m);
	pthread_t t[N_BCAST];
	for (int round = 0; round < 20; round++) {
		PX_OK(pthread_cond_init(&g.c, NULL));
		for (int i = 0; i < N_BCAST; i++)
			t[i] = px_start(NULL, wait_for_next_generation, &g);
		PX_WAIT(gate_waiting(&g) == N_BCAST, 10);
		PX_OK(pthread_mutex_lock(&g.m));
		g.generation++;
		PX_OK(pthread_cond_broadcast(&g.c));
		PX_OK(pthread_cond_destroy(&g.c)); /* they wait for the mutex now */
		PX_OK(pthread_mutex_unlock(&g.m));
		for (int i = 0; i < N_BCAST; i++)
			px_join(t[i]);
		PX_EQ(g.waiting, 0);
	}
	PX_OK(pthread_mutex_destroy(&g.m));
}

/* Signal and broadcast with nobody waiting are harmless; so is a static
 * initializer. */
static void test_no_waiters(void **state)
{
	static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	PX_OK(pthread_cond_signal(&c));
	PX_OK(pthread_cond_broadcast(&c));
	PX_OK(pthread_mutex_lock(&m));
	struct timespec ts = px_deadline(CLOCK_REALTIME, 10 * PX_NS_PER_MS);
	PX_ERR(pthread_cond_timedwait(&c, &m, &ts), ETIMEDOUT);
	PX_OK(pthread_mutex_unlock(&m));
	for (int i = 0; i < 100; i++) {
		pthread_cond_t d;
		PX_OK(pthread_cond_init(&d, NULL));
		PX_OK(pthread_cond_signal(&d));
		PX_OK(pthread_cond_destroy(&d));
	}
}

/* A timed wait that nobody signals: ETIMEDOUT no earlier than the deadline,
 * the mutex held again; a deadline already past times out at once. */
static void check_timeout(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock, bool clockwait)
{
	PX_OK(pthread_mutex_lock(m));
	struct timespec ts = px_deadline(clock, 100 * PX_NS_PER_MS);
	int e;
	do
		e = clockwait ? pthread_cond_clockwait(c, m, clock, &ts)
			      : pthread_cond_timedwait(c, m, &ts);
	while (e == 0); /* a spurious wakeup */
	PX_ERR(e, ETIMEDOUT);
	PX_TIMED_OUT_AT(clock, &ts);
	PX_HOLDS(m);

	ts = px_deadline(clock, -PX_NS_PER_S);
	do
		e = clockwait ? pthread_cond_clockwait(c, m, clock, &ts)
			      : pthread_cond_timedwait(c, m, &ts);
	while (e == 0);
	PX_ERR(e, ETIMEDOUT);
	PX_HOLDS(m);
	PX_OK(pthread_mutex_unlock(m));
}

struct signaller {
	pthread_mutex_t *m;
	pthread_cond_t *c;
	int *flag;
	atomic_int go;
};

static void *signal_when_told(void *arg)
{
	struct signaller *s = arg;
	PX_WAIT(atomic_load(&s->go), 30);
	px_sleep_ns(20 * PX_NS_PER_MS);
	PX_OK(pthread_mutex_lock(s->m));
	*s->flag = 1;
	PX_OK(pthread_cond_signal(s->c));
	PX_OK(pthread_mutex_unlock(s->m));
	return NULL;
}

/* A timed wait that is signalled before its (distant) deadline returns 0. */
static void check_woken(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock, bool clockwait)
{
	int flag = 0;
	struct signaller s = {.m = m, .c = c, .flag = &flag};
	pthread_t t = px_start(NULL, signal_when_told, &s);
	PX_OK(pthread_mutex_lock(m));
	atomic_store(&s.go, 1);
	struct timespec ts = px_deadline(clock, 30 * PX_NS_PER_S);
	while (!flag)
		PX_OK(clockwait ? pthread_cond_clockwait(c, m, clock, &ts)
				: pthread_cond_timedwait(c, m, &ts));
	PX_HOLDS(m);
	PX_CMP(px_ns_past(clock, &ts), <, 0);
	PX_OK(pthread_mutex_unlock(m));
	px_join(t);
}

/* The default clock of a condition variable is CLOCK_REALTIME. */
static void test_timedwait_realtime(void **state)
{
	pthread_mutex_t m;
	pthread_cond_t c;
	init_errorcheck(&m);
	PX_OK(pthread_cond_init(&c, NULL));
	check_timeout(&c, &m, CLOCK_REALTIME, false);
	check_woken(&c, &m, CLOCK_REALTIME, false);
	PX_OK(pthread_cond_destroy(&c));
	PX_OK(pthread_mutex_destroy(&m));
}

/* With pthread_condattr_setclock(CLOCK_MONOTONIC) the deadline is read on
 * the monotonic clock. (A monotonic deadline is decades in the past on the
 * realtime clock: a wait that used the wrong clock would return at once.) */
static void test_timedwait_monotonic(void **state)
{
	pthread_mutex_t m;
	pthread_cond_t c;
	init_errorcheck(&m);
	init_cond_on(&c, CLOCK_MONOTONIC);
	check_timeout(&c, &m, CLOCK_MONOTONIC, false);
	check_woken(&c, &m, CLOCK_MONOTONIC, false);
	PX_OK(pthread_cond_destroy(&c));
	PX_OK(pthread_mutex_destroy(&m));
}

#define N_TIMED 32

struct timed_crowd {
	pthread_mutex_t m;
	pthread_cond_t c;
	struct timespec deadline[N_TIMED];
	atomic_int timed_out;
};

struct timed_arg {
	struct timed_crowd *tc;
	int me;
};

/* Wait on a predicate that never becomes true, until my own deadline. */
static void *wait_until_my_deadline(void *arg)
{
	struct timed_arg *a = arg;
	struct timed_crowd *tc = a->tc;
	const struct timespec *ts = &tc->deadline[a->me];
	PX_OK(pthread_mutex_lock(&tc->m));
	int e;
	while ((e = pthread_cond_timedwait(&tc->c, &tc->m, ts)) == 0)
		; /* woken by a broadcast: the predicate is still false */
	PX_ERR(e, ETIMEDOUT);
	PX_HOLDS(&tc->m);
	PX_CMP(px_ns_past(CLOCK_MONOTONIC, ts), >=, 0);
	PX_OK(pthread_mutex_unlock(&tc->m));
	atomic_fetch_add(&tc->timed_out, 1);
	return NULL;
}

/* 32 timed waiters on one condition variable with scrambled deadlines
 * (50..205 ms), woken now and then by broadcasts that change nothing: each
 * times out at its own deadline, none before. */
static void test_timed_waiters_scrambled_deadlines(void **state)
{
	static struct timed_crowd tc;
	memset(&tc, 0, sizeof tc);
	init_errorcheck(&tc.m);
	init_cond_on(&tc.c, CLOCK_MONOTONIC);
	long long base = px_now(CLOCK_MONOTONIC) + 50 * PX_NS_PER_MS;
	struct timed_arg a[N_TIMED];
	pthread_t t[N_TIMED];
	for (int i = 0; i < N_TIMED; i++) {
		/* 37 is prime to 32: a permutation of 0..31, 5 ms apart. */
		long long at = base + (long long)((i * 37) % N_TIMED) * 5 * PX_NS_PER_MS;
		tc.deadline[i].tv_sec = at / PX_NS_PER_S;
		tc.deadline[i].tv_nsec = at % PX_NS_PER_S;
		a[i] = (struct timed_arg){&tc, i};
		t[i] = px_start(NULL, wait_until_my_deadline, &a[i]);
	}
	long long give_up = px_now(CLOCK_MONOTONIC) + 30 * PX_NS_PER_S;
	while (atomic_load(&tc.timed_out) < N_TIMED) {
		if (px_now(CLOCK_MONOTONIC) > give_up)
			fail_msg("only %d of %d timed waits ended", atomic_load(&tc.timed_out),
				 N_TIMED);
		px_sleep_ns(7 * PX_NS_PER_MS);
		PX_OK(pthread_mutex_lock(&tc.m));
		PX_OK(pthread_cond_broadcast(&tc.c));
		PX_OK(pthread_mutex_unlock(&tc.m));
	}
	for (int i = 0; i < N_TIMED; i++)
		px_join(t[i]);
	PX_OK(pthread_cond_destroy(&tc.c));
	PX_OK(pthread_mutex_destroy(&tc.m));
}

/* pthread_cond_clockwait (POSIX.1-2024, glibc 2.30) takes the clock per call,
 * whatever the condition variable's own clock. */
static void test_clockwait(void **state)
{
	clockid_t clocks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};
	for (size_t own = 0; own < 2; own++) {
		for (size_t per_call = 0; per_call < 2; per_call++) {
			pthread_mutex_t m;
			pthread_cond_t c;
			init_errorcheck(&m);
			init_cond_on(&c, clocks[own]);
			check_timeout(&c, &m, clocks[per_call], true);
			check_woken(&c, &m, clocks[per_call], true);
			PX_OK(pthread_cond_destroy(&c));
			PX_OK(pthread_mutex_destroy(&m));
		}
	}
}

static void test_condattr(void **state)
{
	pthread_condattr_t a;
	clockid_t clock = -1;
	int v = -1;
	PX_OK(pthread_condattr_init(&a));
	PX_OK(pthread_condattr_getclock(&a, &clock));
	PX_EQ(clock, CLOCK_REALTIME);
	PX_OK(pthread_condattr_setclock(&a, CLOCK_MONOTONIC));
	PX_OK(pthread_condattr_getclock(&a, &clock));
	PX_EQ(clock, CLOCK_MONOTONIC);
	PX_OK(pthread_condattr_setclock(&a, CLOCK_REALTIME));
	PX_OK(pthread_condattr_getclock(&a, &clock));
	PX_EQ(clock, CLOCK_REALTIME);

	PX_OK(pthread_condattr_getpshared(&a, &v));
	PX_EQ(v, PTHREAD_PROCESS_PRIVATE);
	PX_OK(pthread_condattr_setpshared(&a, PTHREAD_PROCESS_SHARED));
	PX_OK(pthread_condattr_getpshared(&a, &v));
	PX_EQ(v, PTHREAD_PROCESS_SHARED);
	PX_OK(pthread_condattr_setpshared(&a, PTHREAD_PROCESS_PRIVATE));
	PX_OK(pthread_condattr_getpshared(&a, &v));
	PX_EQ(v, PTHREAD_PROCESS_PRIVATE);
	PX_OK(pthread_condattr_destroy(&a));
}

#define PING_ROUNDS 20000

struct pingpong {
	pthread_mutex_t m;
	pthread_cond_t c;
	int turn; /* 0 or 1 */
};

static void pingpong_rounds(struct pingpong *p, int me)
{
	for (int i = 0; i < PING_ROUNDS; i++) {
		PX_OK(pthread_mutex_lock(&p->m));
		while (p->turn != me)
			PX_OK(pthread_cond_wait(&p->c, &p->m));
		p->turn = 1 - me;
		PX_OK(pthread_cond_signal(&p->c));
		PX_OK(pthread_mutex_unlock(&p->m));
	}
}

static void *play_one(void *arg)
{
	pingpong_rounds(arg, 1);
	return NULL;
}

/* Two threads hand a turn back and forth through one condition variable with
 * pthread_cond_signal. One lost wakeup hangs the game (the watchdog catches
 * it). */
static void test_pingpong_no_lost_wakeup(void **state)
{
	struct pingpong p = {.turn = 0};
	PX_OK(pthread_mutex_init(&p.m, NULL));
	PX_OK(pthread_cond_init(&p.c, NULL));
	pthread_t t = px_start(NULL, play_one, &p);
	pingpong_rounds(&p, 0);
	px_join(t);
	PX_EQ(p.turn, 0);
	PX_OK(pthread_cond_destroy(&p.c));
	PX_OK(pthread_mutex_destroy(&p.m));
}

#define QCAP         16
#define N_PRODUCERS  3
#define N_CONSUMERS  3
#define PER_PRODUCER 30000
#define N_ITEMS      (N_PRODUCERS * PER_PRODUCER)

struct queue {
	pthread_mutex_t m;
	pthread_cond_t not_full, not_empty;
	int buf[QCAP];
	int head, count;
	int produced_by[N_PRODUCERS];
	unsigned char seen[N_ITEMS];
	int consumed;
};

struct prod_arg {
	struct queue *q;
	int id;
};

static void *produce(void *arg)
{
	struct prod_arg *p = arg;
	struct queue *q = p->q;
	for (int i = 0; i < PER_PRODUCER; i++) {
		PX_OK(pthread_mutex_lock(&q->m));
		while (q->count == QCAP)
			PX_OK(pthread_cond_wait(&q->not_full, &q->m));
		q->buf[(q->head + q->count) % QCAP] = p->id * PER_PRODUCER + i;
		q->count++;
		PX_OK(pthread_cond_signal(&q->not_empty));
		PX_OK(pthread_mutex_unlock(&q->m));
	}
	return NULL;
}

/* Consumers stop at an item -1 (one per consumer, queued after all items). */
static void *consume(void *arg)
{
	struct queue *q = arg;
	for (;;) {
		PX_OK(pthread_mutex_lock(&q->m));
		while (q->count == 0)
			PX_OK(pthread_cond_wait(&q->not_empty, &q->m));
		int item = q->buf[q->head];
		q->head = (q->head + 1) % QCAP;
		q->count--;
		PX_OK(pthread_cond_signal(&q->not_full));
		if (item >= 0) {
			PX_EQ(q->seen[item], 0);
			q->seen[item] = 1;
			q->consumed++;
		}
		PX_OK(pthread_mutex_unlock(&q->m));
		if (item < 0)
			return NULL;
	}
}

/* A bounded queue between three producers and three consumers: every item
 * is consumed exactly once. */
static void test_producer_consumer(void **state)
{
	static struct queue q;
	memset(&q, 0, sizeof q);
	PX_OK(pthread_mutex_init(&q.m, NULL));
	PX_OK(pthread_cond_init(&q.not_full, NULL));
	PX_OK(pthread_cond_init(&q.not_empty, NULL));
	pthread_t prod[N_PRODUCERS], cons[N_CONSUMERS];
	struct prod_arg pa[N_PRODUCERS];
	for (int i = 0; i < N_CONSUMERS; i++)
		cons[i] = px_start(NULL, consume, &q);
	for (int i = 0; i < N_PRODUCERS; i++) {
		pa[i] = (struct prod_arg){&q, i};
		prod[i] = px_start(NULL, produce, &pa[i]);
	}
	for (int i = 0; i < N_PRODUCERS; i++)
		px_join(prod[i]);
	for (int i = 0; i < N_CONSUMERS; i++) {
		PX_OK(pthread_mutex_lock(&q.m));
		while (q.count == QCAP)
			PX_OK(pthread_cond_wait(&q.not_full, &q.m));
		q.buf[(q.head + q.count) % QCAP] = -1;
		q.count++;
		PX_OK(pthread_cond_signal(&q.not_empty));
		PX_OK(pthread_mutex_unlock(&q.m));
	}
	for (int i = 0; i < N_CONSUMERS; i++)
		px_join(cons[i]);
	PX_EQ(q.consumed, N_ITEMS);
	PX_EQ(q.count, 0);
	for (int i = 0; i < N_ITEMS; i++)
		if (!q.seen[i])
			fail_msg("item %d was never consumed", i);
	PX_OK(pthread_cond_destroy(&q.not_full));
	PX_OK(pthread_cond_destroy(&q.not_empty));
	PX_OK(pthread_mutex_destroy(&q.m));
}

/* Errors POSIX lists under "may fail" (or, for clockwait, leaves to the
 * implementation); glibc reports them, and weft should report the same. */
static void test_cond_may_fail(void **state)
{
	pthread_condattr_t a;
	PX_OK(pthread_condattr_init(&a));
	/* A CPU-time clock cannot be a condition variable's clock. */
	PX_ERR(pthread_condattr_setclock(&a, CLOCK_PROCESS_CPUTIME_ID), EINVAL);
	PX_ERR(pthread_condattr_setclock(&a, CLOCK_THREAD_CPUTIME_ID), EINVAL);
	PX_ERR(pthread_condattr_setpshared(&a, 12345), EINVAL);
	PX_OK(pthread_condattr_destroy(&a));

	pthread_mutex_t m;
	pthread_cond_t c;
	init_errorcheck(&m);
	PX_OK(pthread_cond_init(&c, NULL));
	PX_OK(pthread_mutex_lock(&m));
	struct timespec bad = px_deadline(CLOCK_REALTIME, PX_NS_PER_S);
	bad.tv_nsec = 1000000000;
	PX_ERR(pthread_cond_timedwait(&c, &m, &bad), EINVAL);
	PX_HOLDS(&m);
	bad.tv_nsec = -1;
	PX_ERR(pthread_cond_timedwait(&c, &m, &bad), EINVAL);
	PX_HOLDS(&m);
	struct timespec ts = px_deadline(CLOCK_MONOTONIC, PX_NS_PER_S);
	PX_ERR(pthread_cond_clockwait(&c, &m, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
	PX_HOLDS(&m);
	PX_OK(pthread_mutex_unlock(&m));
	PX_OK(pthread_cond_destroy(&c));
	PX_OK(pthread_mutex_destroy(&m));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		PX_TEST(test_signal_wakes_a_waiter),
		PX_TEST(test_broadcast_wakes_all),
		PX_TEST(test_destroy_after_broadcast),
		PX_TEST(test_no_waiters),
		PX_TEST(test_timedwait_realtime),
		PX_TEST(test_timedwait_monotonic),
		PX_TEST(test_timed_waiters_scrambled_deadlines),
		PX_TEST(test_clockwait),
		PX_TEST(test_condattr),
		PX_TEST(test_pingpong_no_lost_wakeup),
		PX_TEST(test_producer_consumer),
		PX_TEST(test_cond_may_fail),
	};
	return PX_RUN(argc, argv, tests);
}
