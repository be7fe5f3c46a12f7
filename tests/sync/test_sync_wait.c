/* weft_wait/weft_wake (wait-on-address) and the sleeps: return values, errors,
 * deadlines on both clocks, wake-ups crossing between ULTs and foreign
 * pthreads, and sleeping ULTs leaving their worker free for others.
 *
 * Timed calls are checked against the clock they name: a call that timed out
 * must not return before its deadline, nor absurdly late (2 s). Every test
 * initialises the runtime and shuts it down. */
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

static uint32_t load32(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void store32(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* Run fn(arg) in a new pthread and wait for it without blocking the worker. */
static void *in_pthread(void *(*fn)(void *), void *arg)
{
	struct wt_pthread p;
	wt_pthread_start(&p, fn, arg);
	return wt_pthread_join(&p);
}

static const clockid_t clocks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};

/* ---- weft_wait/weft_wake: errors and immediate returns ------------------- */

static void *wait_on_differing_value(void *arg)
{
	uint32_t word = 5;
	struct timespec ts = deadline_in(CLOCK_MONOTONIC, 10 * NS_PER_S);
	WT_ERR(weft_wait(&word, 4, CLOCK_MONOTONIC, NULL), EAGAIN);
	WT_ERR(weft_wait(&word, 6, CLOCK_REALTIME, NULL), EAGAIN);
	WT_ERR(weft_wait(&word, 0, CLOCK_MONOTONIC, &ts), EAGAIN);
	return NULL;
}

static void test_wait_value_differs_eagain(void **state)
{
	wt_init(2);
	wait_on_differing_value(NULL);
	in_pthread(wait_on_differing_value, NULL);
	WT_OK(weft_shutdown());
}

static void test_wake_without_waiters_returns_zero(void **state)
{
	wt_init(2);
	uint32_t word = 0;
	WT_EQ(weft_wake(&word, 1), 0);
	WT_EQ(weft_wake(&word, INT32_MAX), 0);
	WT_OK(weft_shutdown());
}

static void *wake_nonpositive(void *arg)
{
	uint32_t word = 0;
	WT_EQ(weft_wake(&word, 0), -EINVAL);
	WT_EQ(weft_wake(&word, -1), -EINVAL);
	WT_EQ(weft_wake(&word, INT32_MIN), -EINVAL);
	return NULL;
}

static void test_wake_nonpositive_count_einval(void **state)
{
	wt_init(2);
	wake_nonpositive(NULL);
	in_pthread(wake_nonpositive, NULL);
	WT_OK(weft_shutdown());
}

static void *wait_bad_arguments(void *arg)
{
	uint32_t word = 0; /* == expected: each call would block */
	struct timespec ts = deadline_in(CLOCK_MONOTONIC, 10 * NS_PER_S);
	WT_ERR(weft_wait(&word, 0, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
	WT_ERR(weft_wait(&word, 0, CLOCK_THREAD_CPUTIME_ID, &ts), EINVAL);
	WT_ERR(weft_wait(&word, 0, (clockid_t)99, &ts), EINVAL);
	for (size_t i = 0; i < 2; i++) {
		struct timespec bad = deadline_in(clocks[i], 10 * NS_PER_S);
		bad.tv_nsec = -1;
		WT_ERR(weft_wait(&word, 0, clocks[i], &bad), EINVAL);
		bad.tv_nsec = NS_PER_S;
		WT_ERR(weft_wait(&word, 0, clocks[i], &bad), EINVAL);
	}
	return NULL;
}

static void test_wait_bad_clock_or_timespec_einval(void **state)
{
	wt_init(2);
	wait_bad_arguments(NULL);
	in_pthread(wait_bad_arguments, NULL);
	WT_OK(weft_shutdown());
}

static void *wait_past_deadline(void *arg)
{
	uint32_t word = 0;
	for (size_t i = 0; i < 2; i++) {
		struct timespec ts = deadline_in(clocks[i], -NS_PER_S);
		uint64_t t0 = wt_now_ns();
		WT_ERR(weft_wait(&word, 0, clocks[i], &ts), ETIMEDOUT);
		struct timespec zero = {0, 0};
		WT_ERR(weft_wait(&word, 0, clocks[i], &zero), ETIMEDOUT);
		WT_CMPU(wt_now_ns() - t0, <, 2 * NS_PER_S);
	}
	return NULL;
}

static void test_wait_past_deadline_etimedout(void **state)
{
	wt_init(2);
	wait_past_deadline(NULL);
	in_pthread(wait_past_deadline, NULL);
	WT_OK(weft_shutdown());
}

static void *wait_times_out(void *arg)
{
	uint32_t word = 7;
	for (size_t i = 0; i < 2; i++) {
		struct timespec ts = deadline_in(clocks[i], 50 * MS);
		WT_ERR(weft_wait(&word, 7, clocks[i], &ts), ETIMEDOUT);
		WT_RETURNED_AFTER(clocks[i], &ts);
	}
	return NULL;
}

static void test_wait_times_out_on_both_clocks(void **state)
{
	wt_init(2);
	wait_times_out(NULL);
	in_pthread(wait_times_out, NULL);
	WT_OK(weft_shutdown());
}

/* ---- waking -------------------------------------------------------------- */

/* Waiters on one word that never changes: each weft_wait may only return 0,
 * and only because of a weft_wake. */
enum { MAX_WAITERS = 64 };
struct waitset {
	uint32_t word;
	atomic_int announced; /* about to call weft_wait */
	atomic_int returned;  /* weft_wait returned (0) */
	atomic_int norder;
	int order[MAX_WAITERS]; /* indexes in the order they returned */
};
struct waiter_arg {
	struct waitset *s;
	int idx;
	clockid_t clock;
	int timed; /* wait with a far deadline instead of none */
};

static void *waiter(void *arg)
{
	struct waiter_arg *a = arg;
	struct waitset *s = a->s;
	struct timespec far = deadline_in(a->clock, 60 * NS_PER_S);
	atomic_fetch_add(&s->announced, 1);
	WT_OK(weft_wait(&s->word, 0, a->clock, a->timed ? &far : NULL));
	s->order[atomic_fetch_add(&s->norder, 1)] = a->idx;
	atomic_fetch_add(&s->returned, 1);
	return NULL;
}

static void test_wake_returns_count_woken(void **state)
{
	/* One worker: a waiter that announced itself has, by the time main
	 * runs again, blocked in weft_wait (ULTs are not preempted). */
	wt_init(1);
	static struct waitset s;
	static struct waiter_arg args[5];
	weft_t t[5];
	for (int i = 0; i < 5; i++) {
		args[i] = (struct waiter_arg){&s, i, clocks[i % 2], i % 3 == 0};
		t[i] = wt_spawn(NULL, waiter, &args[i]);
		WT_WAIT(atomic_load(&s.announced) == i + 1, 10);
	}
	WT_EQ(weft_wake(&s.word, 2), 2);
	WT_WAIT(atomic_load(&s.returned) == 2, 10);
	WT_EQ(weft_wake(&s.word, INT32_MAX), 3);
	WT_WAIT(atomic_load(&s.returned) == 5, 10);
	WT_EQ(weft_wake(&s.word, INT32_MAX), 0);
	for (int i = 0; i < 5; i++)
		wt_join(t[i]);
	WT_OK(weft_shutdown());
}

static void test_wake_is_oldest_first(void **state)
{
	wt_init(1); /* as above: announced means blocked */
	static struct waitset s;
	static struct waiter_arg args[8];
	weft_t t[8];
	for (int i = 0; i < 8; i++) {
		args[i] = (struct waiter_arg){&s, i, CLOCK_MONOTONIC, i % 2};
		t[i] = wt_spawn(NULL, waiter, &args[i]);
		WT_WAIT(atomic_load(&s.announced) == i + 1, 10);
	}
	for (int i = 0; i < 8; i++) {
		WT_EQ(weft_wake(&s.word, 1), 1);
		WT_WAIT(atomic_load(&s.returned) == i + 1, 10);
		WT_EQ(s.order[i], i);
	}
	for (int i = 0; i < 8; i++)
		wt_join(t[i]);
	WT_OK(weft_shutdown());
}

static void test_wake_n_wakes_at_most_n(void **state)
{
	/* Waiters on every worker and in pthreads. Whatever the interleaving,
	 * a wake(3) returns 0..3, exactly as many waiters return as the wakes
	 * reported, and repeated wakes reach them all. */
	wt_init(0);
	enum { ULTS = 12, PTHREADS = 3, N = ULTS + PTHREADS };
	static struct waitset s;
	static struct waiter_arg args[N];
	static struct wt_pthread p[PTHREADS];
	weft_t t[ULTS];
	int nw = weft_num_workers();
	for (int i = 0; i < N; i++)
		args[i] = (struct waiter_arg){&s, i, clocks[i % 2], i % 3 == 0};
	for (int i = 0; i < ULTS; i++)
		t[i] = i % 4 == 3 ? wt_spawn(NULL, waiter, &args[i])
				  : wt_spawn_on(i % nw, waiter, &args[i]);
	for (int i = 0; i < PTHREADS; i++)
		wt_pthread_start(&p[i], waiter, &args[ULTS + i]);
	int total = 0;
	uint64_t deadline = wt_now_ns() + 20 * NS_PER_S;
	while (total < N) {
		WT_CMPU(wt_now_ns(), <, deadline);
		int r = weft_wake(&s.word, 3);
		WT_CMP(r, >=, 0);
		WT_CMP(r, <=, 3);
		total += r;
		WT_WAIT(atomic_load(&s.returned) >= total, 10);
		WT_EQ(atomic_load(&s.returned), total);
		if (r == 0)
			weft_yield();
	}
	for (int i = 0; i < 100; i++)
		weft_yield();
	WT_EQ(atomic_load(&s.returned), N);
	for (int i = 0; i < ULTS; i++)
		wt_join(t[i]);
	for (int i = 0; i < PTHREADS; i++)
		wt_pthread_join(&p[i]);
	WT_OK(weft_shutdown());
}

/* A single waiter in one kind of thread, a waker in another. */
struct one_wait {
	uint32_t word;
	atomic_int announced;
	atomic_int returned;
};

static void *wait_once(void *arg)
{
	struct one_wait *w = arg;
	atomic_store(&w->announced, 1);
	WT_OK(weft_wait(&w->word, 0, CLOCK_MONOTONIC, NULL));
	atomic_store(&w->returned, 1);
	return NULL;
}

static void *wake_until_one_woken(void *arg)
{
	struct one_wait *w = arg;
	WT_WAIT(atomic_load(&w->announced), 10);
	uint64_t deadline = wt_now_ns() + 10 * NS_PER_S;
	int r;
	while ((r = weft_wake(&w->word, 1)) == 0) {
		WT_CMPU(wt_now_ns(), <, deadline);
		weft_yield();
	}
	WT_EQ(r, 1);
	WT_WAIT(atomic_load(&w->returned), 10);
	WT_EQ(weft_wake(&w->word, 1), 0);
	return NULL;
}

static void test_foreign_thread_wakes_ult(void **state)
{
	wt_init(2);
	for (int round = 0; round < 50; round++) {
		struct one_wait w = {0};
		weft_t t = round % 2 ? wt_spawn(NULL, wait_once, &w)
				     : wt_spawn_on(round % 4 / 2, wait_once, &w);
		in_pthread(wake_until_one_woken, &w);
		wt_join(t);
	}
	WT_OK(weft_shutdown());
}

static void test_ult_wakes_foreign_thread(void **state)
{
	wt_init(2);
	for (int round = 0; round < 50; round++) {
		struct one_wait w = {0};
		struct wt_pthread p;
		wt_pthread_start(&p, wait_once, &w);
		weft_t t = wt_spawn_on(round % 2, wake_until_one_woken, &w);
		wt_join(t);
		wt_pthread_join(&p);
	}
	WT_OK(weft_shutdown());
}

/* Ping-pong on one word: each side waits while the turn is the other's. A
 * lost wake-up hangs the test (and the timeout fails it). */
struct pingpong {
	uint32_t turn;
	int rounds;
};
struct player {
	struct pingpong *p;
	uint32_t me;
};

static void *play(void *arg)
{
	struct player *pl = arg;
	struct pingpong *p = pl->p;
	for (int i = 0; i < p->rounds; i++) {
		uint32_t t;
		while ((t = load32(&p->turn)) != pl->me) {
			int r = weft_wait(&p->turn, t, CLOCK_MONOTONIC, NULL);
			WT_TRUE(r == 0 || r == EAGAIN, "weft_wait returned %s", wt_errname(r));
		}
		store32(&p->turn, 1 - pl->me);
		WT_CMP(weft_wake(&p->turn, 1), >=, 0);
	}
	return NULL;
}

static void test_ping_pong_ult_and_pthread(void **state)
{
	wt_init(2);
	struct pingpong p = {.turn = 0, .rounds = 5000};
	struct player a = {&p, 0}, b = {&p, 1};
	struct wt_pthread th;
	wt_pthread_start(&th, play, &b);
	play(&a);
	wt_pthread_join(&th);
	WT_OK(weft_shutdown());
}

static void test_ping_pong_ults(void **state)
{
	wt_init(2);
	int placements[3][2] = {{0, 1}, {1, 1}, {-1, -1}};
	for (int k = 0; k < 3; k++) {
		struct pingpong p = {.turn = 0, .rounds = 20000};
		struct player a = {&p, 0}, b = {&p, 1};
		weft_t x = wt_spawn_on(placements[k][0], play, &a);
		weft_t y = wt_spawn_on(placements[k][1], play, &b);
		wt_join(x);
		wt_join(y);
	}
	WT_OK(weft_shutdown());
}

/* ---- sleeping ------------------------------------------------------------ */

static void *sleeps_at_least(void *arg)
{
	uint64_t t0 = wt_now_ns();
	WT_OK(weft_sleep_ns(50 * MS));
	uint64_t dt = wt_now_ns() - t0;
	WT_CMPU(dt, >=, 50 * MS);
	WT_CMPU(dt, <, 2 * NS_PER_S);

	struct timespec req = {0, 30 * MS}, rem = {123, 456};
	t0 = wt_now_ns();
	WT_OK(weft_nanosleep(&req, &rem));
	dt = wt_now_ns() - t0;
	WT_CMPU(dt, >=, 30 * MS);
	WT_CMPU(dt, <, 2 * NS_PER_S);
	WT_EQ(rem.tv_sec, 0);
	WT_EQ(rem.tv_nsec, 0);
	WT_OK(weft_nanosleep(&req, NULL));

	for (size_t i = 0; i < 2; i++) {
		/* relative */
		struct timespec start, end;
		clock_gettime(clocks[i], &start);
		rem = (struct timespec){123, 456};
		WT_OK(weft_clock_nanosleep(clocks[i], 0, &req, &rem));
		clock_gettime(clocks[i], &end);
		long long el = (long long)(end.tv_sec - start.tv_sec) * NS_PER_S +
			       (end.tv_nsec - start.tv_nsec);
		WT_CMP(el, >=, 30 * MS);
		WT_CMP(el, <, 2 * NS_PER_S);
		/* absolute */
		struct timespec abs = deadline_in(clocks[i], 30 * MS);
		WT_OK(weft_clock_nanosleep(clocks[i], TIMER_ABSTIME, &abs, NULL));
		WT_RETURNED_AFTER(clocks[i], &abs);
		/* absolute, already past: returns at once */
		abs = deadline_in(clocks[i], -NS_PER_S);
		t0 = wt_now_ns();
		WT_OK(weft_clock_nanosleep(clocks[i], TIMER_ABSTIME, &abs, NULL));
		WT_CMPU(wt_now_ns() - t0, <, 2 * NS_PER_S);
	}
	return NULL;
}

static void test_sleeps_last_at_least_the_time_asked(void **state)
{
	wt_init(2);
	sleeps_at_least(NULL);
	weft_t t = wt_spawn_on(1, sleeps_at_least, NULL);
	wt_join(t);
	in_pthread(sleeps_at_least, NULL); /* a foreign thread blocks on a futex */
	WT_OK(weft_shutdown());
}

static void *sleep_bad_arguments(void *arg)
{
	struct timespec bad[] = {{0, -1}, {0, NS_PER_S}, {-1, 0}};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		WT_ERR(weft_nanosleep(&bad[i], NULL), EINVAL);
		WT_ERR(weft_clock_nanosleep(CLOCK_MONOTONIC, 0, &bad[i], NULL), EINVAL);
	}
	struct timespec bad_abs = deadline_in(CLOCK_REALTIME, NS_PER_S);
	bad_abs.tv_nsec = NS_PER_S;
	WT_ERR(weft_clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &bad_abs, NULL), EINVAL);
	struct timespec ok = {0, 1000};
	WT_ERR(weft_clock_nanosleep(CLOCK_PROCESS_CPUTIME_ID, 0, &ok, NULL), EINVAL);
	WT_ERR(weft_clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &ok, NULL), EINVAL);
	WT_ERR(weft_clock_nanosleep((clockid_t)99, 0, &ok, NULL), EINVAL);
	return NULL;
}

static void test_sleep_bad_arguments_einval(void **state)
{
	wt_init(2);
	sleep_bad_arguments(NULL);
	in_pthread(sleep_bad_arguments, NULL);
	WT_OK(weft_shutdown());
}

static void *sleep_zero(void *arg)
{
	uint64_t t0 = wt_now_ns();
	for (int i = 0; i < 1000; i++)
		WT_OK(weft_sleep_ns(0));
	struct timespec zero = {0, 0};
	WT_OK(weft_nanosleep(&zero, NULL));
	WT_OK(weft_clock_nanosleep(CLOCK_MONOTONIC, 0, &zero, NULL));
	WT_CMPU(wt_now_ns() - t0, <, 5 * NS_PER_S);
	return NULL;
}

static void test_sleep_zero_returns(void **state)
{
	wt_init(1);
	sleep_zero(NULL);
	in_pthread(sleep_zero, NULL);
	WT_OK(weft_shutdown());
}

/* One worker: a ticker keeps counting while 100 ULTs sleep. If a sleep
 * blocked the worker, the ticker could not advance during it, and the
 * sleeps would also run one after another (5 s instead of ~50 ms). */
struct ticker {
	atomic_long ticks;
	atomic_int stop;
};

static void *tick(void *arg)
{
	struct ticker *k = arg;
	while (!atomic_load(&k->stop)) {
		atomic_fetch_add(&k->ticks, 1);
		weft_yield();
	}
	return NULL;
}

static void *sleep_while_ticking(void *arg)
{
	struct ticker *k = arg;
	long before = atomic_load(&k->ticks);
	WT_OK(weft_sleep_ns(50 * MS));
	WT_CMP(atomic_load(&k->ticks), >, before);
	return NULL;
}

static void test_sleeping_ult_does_not_block_its_worker(void **state)
{
	wt_init(1);
	enum { SLEEPERS = 100 };
	struct ticker k = {0};
	weft_t tk = wt_spawn(NULL, tick, &k);
	weft_t t[SLEEPERS];
	uint64_t t0 = wt_now_ns();
	for (int i = 0; i < SLEEPERS; i++)
		t[i] = wt_spawn(NULL, sleep_while_ticking, &k);
	for (int i = 0; i < SLEEPERS; i++)
		wt_join(t[i]);
	uint64_t dt = wt_now_ns() - t0;
	atomic_store(&k.stop, 1);
	wt_join(tk);
	/* Behaviour, not speed: half of what sleeping in turn would take. */
	WT_CMPU(dt, <, SLEEPERS * 50 * MS / 2);
	WT_OK(weft_shutdown());
}

static void *sleep_100ms(void *arg)
{
	uint64_t t0 = wt_now_ns();
	WT_OK(weft_sleep_ns(100 * MS));
	WT_CMPU(wt_now_ns() - t0, >=, 100 * MS);
	return arg;
}

static void test_thousand_ults_sleep_concurrently(void **state)
{
	wt_init(0);
	enum { N = 1000 };
	static weft_t t[N];
	uint64_t t0 = wt_now_ns();
	for (intptr_t i = 0; i < N; i++)
		t[i] = wt_spawn(NULL, sleep_100ms, (void *)i);
	for (intptr_t i = 0; i < N; i++)
		WT_EQ_PTR(wt_join(t[i]), (void *)i);
	WT_CMPU(wt_now_ns() - t0, <, 3 * NS_PER_S);
	WT_OK(weft_shutdown());
}

static void *sleep_arg_ms(void *arg)
{
	long long ms = (intptr_t)arg;
	uint64_t t0 = wt_now_ns();
	switch (ms % 3) {
	case 0:
		WT_OK(weft_sleep_ns((uint64_t)(ms * MS)));
		break;
	case 1: {
		struct timespec req = {0, ms * MS};
		WT_OK(weft_nanosleep(&req, NULL));
		break;
	}
	default: {
		struct timespec abs = deadline_in(CLOCK_MONOTONIC, ms * MS);
		WT_OK(weft_clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &abs, NULL));
		WT_CMP(ns_past(CLOCK_MONOTONIC, &abs), >=, 0);
	}
	}
	WT_CMPU(wt_now_ns() - t0, >=, (uint64_t)(ms * MS));
	return NULL;
}

static void test_many_sleeps_of_mixed_lengths(void **state)
{
	/* Timers due in every order: each sleeper still sleeps its own time. */
	wt_init(0);
	enum { N = 300 };
	static weft_t t[N];
	for (int i = 0; i < N; i++)
		t[i] = wt_spawn(NULL, sleep_arg_ms, (void *)(intptr_t)(i * 7919 % 40 + 1));
	for (int i = 0; i < N; i++)
		wt_join(t[i]);
	WT_OK(weft_shutdown());
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wait_value_differs_eagain),
		cmocka_unit_test(test_wake_without_waiters_returns_zero),
		cmocka_unit_test(test_wake_nonpositive_count_einval),
		cmocka_unit_test(test_wait_bad_clock_or_timespec_einval),
		cmocka_unit_test(test_wait_past_deadline_etimedout),
		cmocka_unit_test(test_wait_times_out_on_both_clocks),
		cmocka_unit_test(test_wake_returns_count_woken),
		cmocka_unit_test(test_wake_is_oldest_first),
		cmocka_unit_test(test_wake_n_wakes_at_most_n),
		cmocka_unit_test(test_foreign_thread_wakes_ult),
		cmocka_unit_test(test_ult_wakes_foreign_thread),
		cmocka_unit_test(test_ping_pong_ult_and_pthread),
		cmocka_unit_test(test_ping_pong_ults),
		cmocka_unit_test(test_sleeps_last_at_least_the_time_asked),
		cmocka_unit_test(test_sleep_bad_arguments_einval),
		cmocka_unit_test(test_sleep_zero_returns),
		cmocka_unit_test(test_sleeping_ult_does_not_block_its_worker),
		cmocka_unit_test(test_thousand_ults_sleep_concurrently),
		cmocka_unit_test(test_many_sleeps_of_mixed_lengths),
	};
	return WT_RUN(argc, argv, tests);
}
