/* Sleeping: sleep, usleep, nanosleep and clock_nanosleep (relative and
 * absolute, CLOCK_MONOTONIC and CLOCK_REALTIME) sleep at least the time asked
 * for, also when many threads sleep at once, and one thread's sleep does not
 * hold up another's; a zero or past sleep returns at once; a signal ends a
 * sleep early with EINTR and the time remaining; bad arguments are errors
 * (nanosleep: -1 and errno; clock_nanosleep: the error number itself). */
#include "ptest.h"

#include <signal.h>
#include <unistd.h>

#define N_SLEEPERS 32
#define NAP_MS     20

/* nanosleep and clock_nanosleep are specified against their clock; the
 * elapsed time is read on CLOCK_MONOTONIC, which may be slewed slightly
 * against CLOCK_REALTIME: allow for that (0.1 %), never more. */
static long long slew(long long ns)
{
	return ns / 1000;
}

enum how {
	USLEEP,
	NANOSLEEP,
	CLOCK_NANOSLEEP_MONO,
	CLOCK_NANOSLEEP_REAL,
	CLOCK_NANOSLEEP_MONO_ABS,
	CLOCK_NANOSLEEP_REAL_ABS,
	N_HOW
};

static const char *const how_name[] = {"usleep",
				       "nanosleep",
				       "clock_nanosleep(MONOTONIC)",
				       "clock_nanosleep(REALTIME)",
				       "clock_nanosleep(MONOTONIC, TIMER_ABSTIME)",
				       "clock_nanosleep(REALTIME, TIMER_ABSTIME)"};

/* Sleep ns one way; fail unless at least ns passed. */
static void nap(enum how how, long long ns)
{
	if (how == USLEEP)
		ns -= ns % PX_NS_PER_US; /* what usleep can express */
	struct timespec req = {.tv_sec = ns / PX_NS_PER_S, .tv_nsec = ns % PX_NS_PER_S};
	long long t0 = px_now(CLOCK_MONOTONIC);
	clockid_t abs_clock = how == CLOCK_NANOSLEEP_REAL_ABS ? CLOCK_REALTIME : CLOCK_MONOTONIC;
	struct timespec until = px_deadline(abs_clock, ns);
	switch (how) {
	case USLEEP:
		PX_SYSOK(usleep((useconds_t)(ns / PX_NS_PER_US)));
		break;
	case NANOSLEEP:
		PX_SYSOK(nanosleep(&req, NULL));
		break;
	case CLOCK_NANOSLEEP_MONO:
		PX_OK(clock_nanosleep(CLOCK_MONOTONIC, 0, &req, NULL));
		break;
	case CLOCK_NANOSLEEP_REAL:
		PX_OK(clock_nanosleep(CLOCK_REALTIME, 0, &req, NULL));
		break;
	default:
		PX_OK(clock_nanosleep(abs_clock, TIMER_ABSTIME, &until, NULL));
		/* An absolute sleep ends no earlier than its deadline, on its
		 * own clock: exactly. */
		if (px_ns_past(abs_clock, &until) < 0)
			fail_msg("%s woke %lld ns before its deadline", how_name[how],
				 -px_ns_past(abs_clock, &until));
		break;
	}
	long long slept = px_now(CLOCK_MONOTONIC) - t0;
	long long allowed =
		how == CLOCK_NANOSLEEP_MONO || how == CLOCK_NANOSLEEP_MONO_ABS ? 0 : slew(ns);
	if (slept < ns - allowed)
		fail_msg("%s(%lld ns) returned after %lld ns", how_name[how], ns, slept);
}

static void *nap_every_way(void *arg)
{
	for (int round = 0; round < 3; round++)
		for (int how = 0; how < N_HOW; how++)
			nap((enum how)how,
			    NAP_MS * PX_NS_PER_MS + (long long)(uintptr_t)arg * 1000);
	return NULL;
}

/* Every way of sleeping, alone. */
static void test_each_way_sleeps_long_enough(void **state)
{
	for (int how = 0; how < N_HOW; how++) {
		nap((enum how)how, NAP_MS * PX_NS_PER_MS);
		nap((enum how)how, 1 * PX_NS_PER_MS);
		nap((enum how)how, 1234567);
	}
}

/* Every way of sleeping, from N_SLEEPERS threads at once. */
static void test_many_threads_sleep_at_once(void **state)
{
	pthread_t t[N_SLEEPERS];
	for (uintptr_t i = 0; i < N_SLEEPERS; i++)
		t[i] = px_start(NULL, nap_every_way, (void *)i);
	for (int i = 0; i < N_SLEEPERS; i++)
		px_join(t[i]);
}

#define N_SECOND_SLEEPERS 16

struct second {
	pthread_barrier_t start;
	long long begin[N_SECOND_SLEEPERS];
	long long end[N_SECOND_SLEEPERS];
};

struct second_arg {
	struct second *s;
	int me;
};

static void *sleep_one_second(void *arg)
{
	struct second_arg *a = arg;
	int e = pthread_barrier_wait(&a->s->start);
	PX_TRUE(e == 0 || e == PTHREAD_BARRIER_SERIAL_THREAD, "barrier_wait returned %d", e);
	a->s->begin[a->me] = px_now(CLOCK_MONOTONIC);
	PX_EQ(sleep(1), 0);
	a->s->end[a->me] = px_now(CLOCK_MONOTONIC);
	return NULL;
}

/* sleep(1) from 16 threads: each sleeps at least a second (less the clock
 * slew allowance), and the sleeps overlap: every thread was asleep at one
 * common moment, so no sleep waited for another to finish. */
static void test_sleep_one_second_in_parallel(void **state)
{
	struct second s;
	struct second_arg a[N_SECOND_SLEEPERS];
	pthread_t t[N_SECOND_SLEEPERS];
	PX_OK(pthread_barrier_init(&s.start, NULL, N_SECOND_SLEEPERS));
	for (int i = 0; i < N_SECOND_SLEEPERS; i++) {
		a[i] = (struct second_arg){&s, i};
		t[i] = px_start(NULL, sleep_one_second, &a[i]);
	}
	for (int i = 0; i < N_SECOND_SLEEPERS; i++)
		px_join(t[i]);
	long long last_begin = 0, first_end = -1;
	for (int i = 0; i < N_SECOND_SLEEPERS; i++) {
		PX_CMP(s.end[i] - s.begin[i], >=, PX_NS_PER_S - slew(PX_NS_PER_S));
		if (s.begin[i] > last_begin)
			last_begin = s.begin[i];
		if (first_end < 0 || s.end[i] < first_end)
			first_end = s.end[i];
	}
	PX_CMP(last_begin, <, first_end);
	PX_OK(pthread_barrier_destroy(&s.start));
}

#define N_DEADLINES 200

static struct timespec deadlines[N_DEADLINES];

static void *sleep_until(void *arg)
{
	const struct timespec *ts = arg;
	PX_OK(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, ts, NULL));
	long long early = -px_ns_past(CLOCK_MONOTONIC, ts);
	if (early > 0)
		fail_msg("woke %lld ns before its deadline", early);
	return NULL;
}

/* 200 sleepers whose deadlines (within 50..250 ms) are handed out in a
 * scrambled order: whatever keeps the timers sorted, nobody wakes early and
 * everybody wakes. */
static void test_scrambled_deadlines(void **state)
{
	static pthread_t t[N_DEADLINES];
	long long base = px_now(CLOCK_MONOTONIC) + 50 * PX_NS_PER_MS;
	for (int i = 0; i < N_DEADLINES; i++) {
		/* 7919 is prime: i -> 7919 i mod 200 is a permutation. */
		long long at = base + (long long)((i * 7919) % N_DEADLINES) * PX_NS_PER_MS;
		deadlines[i].tv_sec = at / PX_NS_PER_S;
		deadlines[i].tv_nsec = at % PX_NS_PER_S;
	}
	for (int i = 0; i < N_DEADLINES; i++)
		t[i] = px_start(NULL, sleep_until, &deadlines[i]);
	for (int i = 0; i < N_DEADLINES; i++)
		px_join(t[i]);
}

/* Nothing to sleep, or a deadline already past: return at once, with 0. */
static void test_zero_and_past(void **state)
{
	struct timespec zero = {0, 0};
	PX_EQ(sleep(0), 0);
	PX_SYSOK(usleep(0));
	PX_SYSOK(nanosleep(&zero, NULL));
	PX_OK(clock_nanosleep(CLOCK_MONOTONIC, 0, &zero, NULL));
	PX_OK(clock_nanosleep(CLOCK_REALTIME, 0, &zero, NULL));
	struct timespec past = px_deadline(CLOCK_MONOTONIC, -PX_NS_PER_S);
	PX_OK(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &past, NULL));
	past = px_deadline(CLOCK_REALTIME, -PX_NS_PER_S);
	PX_OK(clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &past, NULL));
	/* The start of the epoch, on either clock. */
	PX_OK(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &zero, NULL));
	PX_OK(clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &zero, NULL));
}

/* "shall fail" in POSIX: a bad timespec, a CPU-time clock of the caller, a
 * clock that does not exist. clock_nanosleep returns the error number and
 * does not use errno. */
static void test_bad_arguments(void **state)
{
	struct timespec bad = {0, 1000000000};
	PX_ERRNO(nanosleep(&bad, NULL), EINVAL);
	bad.tv_nsec = -1;
	PX_ERRNO(nanosleep(&bad, NULL), EINVAL);
	bad.tv_nsec = 1000000000;
	errno = 0;
	PX_ERR(clock_nanosleep(CLOCK_MONOTONIC, 0, &bad, NULL), EINVAL);
	PX_ERR(clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &bad, NULL), EINVAL);
	PX_EQ(errno, 0);
	struct timespec ok = {0, 1000};
	PX_ERR(clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &ok, NULL), EINVAL);
	PX_ERR(clock_nanosleep((clockid_t)12345, 0, &ok, NULL), EINVAL);
	PX_EQ(errno, 0);
}

static void on_sigusr1(int sig)
{
	(void)sig;
}

struct interrupted {
	bool clock_variant;
	atomic_int started;
	atomic_int done;
	int ret, err;
	struct timespec rem;
};

static void *sleep_ten_seconds(void *arg)
{
	struct interrupted *s = arg;
	struct timespec req = {10, 0};
	atomic_store(&s->started, 1);
	if (s->clock_variant) {
		s->ret = clock_nanosleep(CLOCK_MONOTONIC, 0, &req, &s->rem);
		s->err = 0;
	} else {
		errno = 0;
		s->ret = nanosleep(&req, &s->rem);
		s->err = errno;
	}
	atomic_store(&s->done, 1);
	return NULL;
}

/* A signal handled by a function ends nanosleep/clock_nanosleep early (the
 * handler is installed without SA_RESTART) and reports the time left. The
 * signal is sent every 20 ms until the sleep ends: a first one may arrive
 * before the thread is asleep. */
static void test_signal_interrupts_sleep(void **state)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_sigusr1;
	sigemptyset(&sa.sa_mask);
	PX_SYSOK(sigaction(SIGUSR1, &sa, &old));
	for (int v = 0; v < 2; v++) {
		struct interrupted s = {.clock_variant = v == 1, .ret = 12345};
		pthread_t t = px_start(NULL, sleep_ten_seconds, &s);
		PX_WAIT(atomic_load(&s.started), 10);
		long long end = px_now(CLOCK_MONOTONIC) + 5 * PX_NS_PER_S;
		while (!atomic_load(&s.done) && px_now(CLOCK_MONOTONIC) < end) {
			PX_OK(pthread_kill(t, SIGUSR1));
			px_sleep_ns(20 * PX_NS_PER_MS);
		}
		px_join(t);
		if (v == 0) {
			PX_EQ(s.ret, -1);
			PX_EQ(s.err, EINTR);
		} else {
			PX_ERR(s.ret, EINTR);
		}
		long long rem = px_ts_ns(&s.rem);
		PX_CMP(rem, >, 0);
		/* Linux computes rem from the timer's expiry including the
		 * thread's timer slack (50 us by default), so a sleep cut short
		 * at once can report a little more than was asked for. */
		PX_CMP(rem, <=, 10 * PX_NS_PER_S + PX_NS_PER_MS);
	}
	PX_SYSOK(sigaction(SIGUSR1, &old, NULL));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		PX_TEST(test_each_way_sleeps_long_enough),
		PX_TEST(test_many_threads_sleep_at_once),
		PX_TEST(test_sleep_one_second_in_parallel),
		PX_TEST(test_scrambled_deadlines),
		PX_TEST(test_zero_and_past),
		PX_TEST(test_bad_arguments),
		PX_TEST(test_signal_interrupts_sleep),
	};
	return PX_RUN(argc, argv, tests);
}
