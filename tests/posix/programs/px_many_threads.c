// px_many_threads: N threads alive at once, written as a plain pthread program for weft's POSIX
// layer evidence. Every thread checks in under a mutex and waits on a condition variable until
// the main thread has seen all N arrive; while all are alive the main thread reports how many
// checked in (and, only with --report-kernel-threads, the kernel's count from /proc, which is
// N + 1 under glibc but the number of workers under an M:N library, so it stays out of the
// default output). The main thread then releases them; every thread and the main thread meet
// at one barrier of N + 1, which must name exactly one serial thread, and the main thread
// joins all and checks their return values.
//
// Threads get 64 KiB stacks. If creating a thread fails, the threads created so far are
// released and joined and the program exits with status 1 and a message saying how far it got.
//
// Usage: px_many_threads [--report-kernel-threads] [N (1000)]
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STACK_SIZE (64 * 1024)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t all_here = PTHREAD_COND_INITIALIZER; // main waits: arrived == n
static pthread_cond_t go = PTHREAD_COND_INITIALIZER;       // threads wait: released
static long n, arrived;
static int released, aborted; // under mu
static long serial;           // under mu: threads told PTHREAD_BARRIER_SERIAL_THREAD
static pthread_barrier_t barrier;

static void *thread_main(void *arg)
{
	uintptr_t index = (uintptr_t)arg;
	pthread_mutex_lock(&mu);
	if (++arrived == n)
		pthread_cond_signal(&all_here);
	while (!released)
		pthread_cond_wait(&go, &mu);
	int skip_barrier = aborted;
	pthread_mutex_unlock(&mu);
	if (!skip_barrier) {
		int rc = pthread_barrier_wait(&barrier);
		if (rc == PTHREAD_BARRIER_SERIAL_THREAD) {
			pthread_mutex_lock(&mu);
			serial++;
			pthread_mutex_unlock(&mu);
		} else if (rc != 0) {
			return NULL;
		}
	}
	return (void *)(2 * index + 1);
}

// The "Threads:" line of /proc/self/status, or -1.
static long kernel_threads(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	char line[256];
	long threads = -1;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "Threads:", 8) == 0) {
			threads = strtol(line + 8, NULL, 10);
			break;
		}
	}
	fclose(f);
	return threads;
}

static void release(int abort_run)
{
	pthread_mutex_lock(&mu);
	released = 1;
	aborted = abort_run;
	pthread_cond_broadcast(&go);
	pthread_mutex_unlock(&mu);
}

int main(int argc, char **argv)
{
	int report_kernel = 0;
	n = 1000;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--report-kernel-threads") == 0) {
			report_kernel = 1;
			continue;
		}
		char *end;
		n = strtol(argv[i], &end, 10);
		if (*argv[i] == '\0' || *end != '\0' || n < 1 || n > 100000000) {
			fprintf(stderr, "usage: px_many_threads [--report-kernel-threads] [N]\n");
			return 2;
		}
	}

	pthread_t *ts = malloc((size_t)n * sizeof *ts);
	if (!ts) {
		fprintf(stderr, "px_many_threads: out of memory for %ld thread ids\n", n);
		return 1;
	}
	pthread_attr_t attr;
	int rc = pthread_attr_init(&attr);
	if (rc == 0)
		rc = pthread_attr_setstacksize(&attr, STACK_SIZE);
	if (rc == 0)
		rc = pthread_barrier_init(&barrier, NULL, (unsigned)(n + 1));
	if (rc != 0) {
		fprintf(stderr, "px_many_threads: setup: %s\n", strerror(rc));
		return 1;
	}

	for (long i = 0; i < n; i++) {
		rc = pthread_create(&ts[i], &attr, thread_main, (void *)(uintptr_t)i);
		if (rc != 0) {
			fprintf(stderr,
				"px_many_threads: pthread_create failed for thread %ld of %ld: %s; "
				"releasing and joining the %ld created\n",
				i + 1, n, strerror(rc), i);
			release(1);
			for (long j = 0; j < i; j++)
				pthread_join(ts[j], NULL);
			return 1;
		}
	}
	pthread_attr_destroy(&attr);

	pthread_mutex_lock(&mu);
	while (arrived < n)
		pthread_cond_wait(&all_here, &mu);
	long alive = arrived;
	pthread_mutex_unlock(&mu);
	// Every thread is now blocked in pthread_cond_wait (or about to be): all are alive.
	long kt = report_kernel ? kernel_threads() : 0;
	printf("alive=%ld\n", alive);
	if (report_kernel)
		printf("kernel threads=%ld\n", kt);
	fflush(stdout);

	release(0);
	rc = pthread_barrier_wait(&barrier);
	if (rc == PTHREAD_BARRIER_SERIAL_THREAD) {
		pthread_mutex_lock(&mu);
		serial++;
		pthread_mutex_unlock(&mu);
	} else if (rc != 0) {
		fprintf(stderr, "px_many_threads: pthread_barrier_wait: %s\n", strerror(rc));
		return 1;
	}
	long joined = 0, bad = 0;
	for (long i = 0; i < n; i++) {
		void *ret;
		rc = pthread_join(ts[i], &ret);
		if (rc != 0) {
			fprintf(stderr, "px_many_threads: pthread_join #%ld: %s\n", i,
				strerror(rc));
			return 1;
		}
		joined++;
		bad += (uintptr_t)ret != 2 * (uintptr_t)i + 1;
	}
	pthread_barrier_destroy(&barrier);
	free(ts);
	printf("joined=%ld wrong return values=%ld barrier serial threads=%ld\n", joined, bad,
	       serial);
	return bad == 0 && serial == 1 ? 0 : 1;
}
