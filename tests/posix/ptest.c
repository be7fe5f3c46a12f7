/* The in-process runner, watchdog and helpers declared in ptest.h. */
#include "ptest.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* The test the watchdog is guarding, for its message. */
static const char *volatile px_current = "(none)";
static unsigned px_timeout_s = 60;

/* SIGALRM: a test ran past its watchdog. Only async-signal-safe calls. */
static void px_watchdog(int sig)
{
	(void)sig;
	static const char a[] = "\npx: watchdog: test ";
	static const char b[] = " did not finish in time (PX_TEST_TIMEOUT); aborting\n";
	const char *name = px_current;
	ssize_t r = write(STDERR_FILENO, a, sizeof a - 1);
	r = write(STDERR_FILENO, name, strlen(name));
	r = write(STDERR_FILENO, b, sizeof b - 1);
	(void)r;
	abort();
}

void px_prepare(int argc, char **argv)
{
	/* A failed assertion, in whatever thread, aborts with its message. */
	setenv("CMOCKA_TEST_ABORT", "1", 1);
	/* Keep cmocka's progress lines when the process aborts into a pipe. */
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
		fprintf(stderr, "usage: %s [test-name-pattern]\n", argv[0]);
		exit(2);
	}
	if (argc == 2)
		cmocka_set_test_filter(argv[1]);

	const char *t = getenv("PX_TEST_TIMEOUT");
	if (t && atoi(t) > 0)
		px_timeout_s = (unsigned)atoi(t);

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = px_watchdog;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
}

int px_setup(void **state)
{
	px_current = (const char *)*state;
	alarm(px_timeout_s);
	return 0;
}

int px_teardown(void **state)
{
	(void)state;
	alarm(0);
	px_current = "(none)";
	return 0;
}

const char *px_errname(long long e)
{
	static const struct {
		int e;
		const char *name;
	} names[] = {
		{EPERM, "EPERM"},         {ESRCH, "ESRCH"},         {EINTR, "EINTR"},
		{EAGAIN, "EAGAIN"},       {ENOMEM, "ENOMEM"},       {EFAULT, "EFAULT"},
		{EBUSY, "EBUSY"},         {EINVAL, "EINVAL"},       {ERANGE, "ERANGE"},
		{EDEADLK, "EDEADLK"},     {ENOSYS, "ENOSYS"},       {ENOTSUP, "ENOTSUP"},
		{ETIMEDOUT, "ETIMEDOUT"}, {EOVERFLOW, "EOVERFLOW"}, {ENOENT, "ENOENT"},
	};
	static _Thread_local char buf[32];
	if (e == 0)
		return "0";
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (names[i].e == e)
			return names[i].name;
	snprintf(buf, sizeof buf, "%lld", e);
	return buf;
}

long long px_ts_ns(const struct timespec *ts)
{
	return (long long)ts->tv_sec * PX_NS_PER_S + ts->tv_nsec;
}

long long px_now(clockid_t clock)
{
	struct timespec ts;
	if (clock_gettime(clock, &ts) != 0)
		fail_msg("clock_gettime(%d) failed: %s", (int)clock, px_errname(errno));
	return px_ts_ns(&ts);
}

struct timespec px_deadline(clockid_t clock, long long ns)
{
	long long t = px_now(clock) + ns;
	struct timespec ts = {.tv_sec = t / PX_NS_PER_S, .tv_nsec = t % PX_NS_PER_S};
	return ts;
}

long long px_ns_past(clockid_t clock, const struct timespec *ts)
{
	return px_now(clock) - px_ts_ns(ts);
}

void px_sleep_ns(long long ns)
{
	struct timespec ts = {.tv_sec = ns / PX_NS_PER_S, .tv_nsec = ns % PX_NS_PER_S};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

void px_relax(void)
{
	px_sleep_ns(100 * PX_NS_PER_US);
}

pthread_t px_start(const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	pthread_t t;
	PX_OK(pthread_create(&t, attr, fn, arg));
	return t;
}

void *px_join(pthread_t t)
{
	void *ret;
	PX_OK(pthread_join(t, &ret));
	return ret;
}

int px_usable_cpus(int *first)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	PX_OK(pthread_getaffinity_np(pthread_self(), sizeof set, &set));
	int n = CPU_COUNT(&set);
	if (first) {
		*first = -1;
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set)) {
				*first = c;
				break;
			}
	}
	return n;
}

void px_compute_ms(long long ms)
{
	long long end = px_now(CLOCK_MONOTONIC) + ms * PX_NS_PER_MS;
	volatile unsigned long x = 1;
	while (px_now(CLOCK_MONOTONIC) < end)
		for (int i = 0; i < 1000; i++)
			x = x * 2862933555777941757ul + 3037000493ul;
}

int px_wait_child(pid_t pid, int seconds)
{
	int status = 0;
	long long end = px_now(CLOCK_MONOTONIC) + seconds * PX_NS_PER_S;
	pid_t w;
	while ((w = waitpid(pid, &status, WNOHANG)) == 0 && px_now(CLOCK_MONOTONIC) < end)
		px_sleep_ns(PX_NS_PER_MS);
	if (w == pid)
		return status;
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}
