/* A thread blocked in read() on a pipe must not stop the timers of the threads
 * beside it. One thread blocks in read() on a pipe that nobody writes to
 * until the end; another sleeps 20 times for 10 ms with nanosleep() and
 * measures how late each sleep ends. main waits for the sleeper, then writes
 * to the pipe to release the reader and joins it.
 *
 * Run on one worker (WEFT_WORKERS=1), this is the case where the reader's
 * kernel thread holds the only worker: unless the worker is handed on, the
 * sleeper never runs again and the program hangs.
 *
 * stdout: the sleeps done, whether each ended less than 50 ms late, and what
 * the reader got. The largest lateness goes to stderr. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define SLEEPS      20
#define SLEEP_NS    10000000L /* 10 ms */
#define LATE_MAX_NS 50000000L /* 50 ms: generous for a loaded 2-core machine */

static int pipe_fd[2];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int reading; /* the reader is about to block in read(); under lock */

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static long long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void *reader(void *arg)
{
	char *got = arg;
	pthread_mutex_lock(&lock);
	reading = 1;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&lock);
	ssize_t n;
	do
		n = read(pipe_fd[0], got, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		die("read");
	return NULL;
}

struct sleeper_result {
	int done;              /* sleeps completed */
	int late;              /* sleeps that ended LATE_MAX_NS late or more */
	long long max_late_ns; /* the latest one */
};

static void *sleeper(void *arg)
{
	struct sleeper_result *r = arg;
	/* Start once the reader is (nearly) in read(), so the sleeps overlap its block. */
	pthread_mutex_lock(&lock);
	while (!reading)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < SLEEPS; i++) {
		struct timespec req = {0, SLEEP_NS}, rem;
		long long t0 = now_ns();
		while (nanosleep(&req, &rem) != 0) {
			if (errno != EINTR)
				die("nanosleep");
			req = rem;
		}
		long long late = now_ns() - t0 - SLEEP_NS;
		if (late < 0) {
			fprintf(stderr, "sleep %d ended %lld ns early\n", i, -late);
			exit(1);
		}
		if (late >= LATE_MAX_NS)
			r->late++;
		if (late > r->max_late_ns)
			r->max_late_ns = late;
		r->done++;
	}
	return NULL;
}

int main(void)
{
	if (pipe(pipe_fd))
		die("pipe");
	char got = 0;
	struct sleeper_result res = {0, 0, 0};
	pthread_t rt, st;
	if (pthread_create(&rt, NULL, reader, &got) || pthread_create(&st, NULL, sleeper, &res))
		die("pthread_create");
	if (pthread_join(st, NULL))
		die("pthread_join");
	/* The sleeper is done: now release the reader. */
	if (write(pipe_fd[1], "r", 1) != 1)
		die("write");
	if (pthread_join(rt, NULL))
		die("pthread_join");

	printf("sleeps done: %d\n", res.done);
	printf("every sleep less than %ld ms late: %s\n", LATE_MAX_NS / 1000000,
	       res.late == 0 ? "yes" : "no");
	printf("reader got: %c\n", got);
	fprintf(stderr, "px_sleep_beside_block: latest sleep %.3f ms late, %d of %d over %ld ms\n",
		(double)res.max_late_ns / 1e6, res.late, SLEEPS, LATE_MAX_NS / 1000000);
	return res.done == SLEEPS && res.late == 0 ? 0 : 1;
}
