/* pthread_kill of a thread that waits where POSIX does not let the call
 * fail with EINTR, or that computes inside the threads library:
 *   - blocked in pthread_mutex_lock: the handler runs at once, and the
 *     thread goes on waiting for the mutex (it gets it when it is freed);
 *   - blocked in pthread_barrier_wait: the same, and the barrier opens
 *     when the last thread arrives;
 *   - looping on lock/unlock of a mutex nobody else uses: the handler runs
 *     (it stops the loop) - under weft the thread runs mostly inside weft's
 *     code, where a signal waits for a safe instruction.
 * Under weft a ULT's signals are weft's to deliver (src/sync/signal.c,
 * src/sync/wait.c). The output must be glibc's. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_int handled, stop;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER, own = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t bar;
static atomic_int entered;

static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&handled, 1);
	atomic_store(&stop, 1);
}

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Wait up to 10 s for the handler's count to reach n. */
static int handler_ran(int n)
{
	for (int i = 0; i < 10000 && atomic_load(&handled) < n; i++)
		nap_ms(1);
	return atomic_load(&handled) >= n;
}

static void *locker(void *arg)
{
	(void)arg;
	atomic_store(&entered, 1);
	int e = pthread_mutex_lock(&m);
	printf("mutex: lock returned %d after the handler ran\n", e);
	pthread_mutex_unlock(&m);
	return NULL;
}

static void *barrier_waiter(void *arg)
{
	(void)arg;
	atomic_store(&entered, 1);
	int e = pthread_barrier_wait(&bar);
	printf("barrier: wait returned %s\n",
	       e == 0 || e == PTHREAD_BARRIER_SERIAL_THREAD ? "normally" : strerror(e));
	return NULL;
}

static void *spinner(void *arg)
{
	(void)arg;
	atomic_store(&entered, 1);
	unsigned long n = 0;
	while (!atomic_load(&stop)) {
		pthread_mutex_lock(&own);
		n++;
		pthread_mutex_unlock(&own);
	}
	printf("spinner: stopped by its handler\n");
	return NULL;
}

static pthread_t start(void *(*fn)(void *))
{
	pthread_t t;
	atomic_store(&entered, 0);
	pthread_create(&t, NULL, fn, NULL);
	while (!atomic_load(&entered))
		nap_ms(1);
	nap_ms(50); /* in its wait (or loop) by now */
	return t;
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);

	pthread_mutex_lock(&m);
	pthread_t t = start(locker);
	pthread_kill(t, SIGUSR1);
	printf("mutex: handler %s while the thread waited\n",
	       handler_ran(1) ? "ran" : "did not run");
	pthread_mutex_unlock(&m);
	pthread_join(t, NULL);

	pthread_barrier_init(&bar, NULL, 2);
	t = start(barrier_waiter);
	pthread_kill(t, SIGUSR1);
	printf("barrier: handler %s while the thread waited\n",
	       handler_ran(2) ? "ran" : "did not run");
	pthread_barrier_wait(&bar);
	pthread_join(t, NULL);
	pthread_barrier_destroy(&bar);

	atomic_store(&stop, 0);
	t = start(spinner);
	pthread_kill(t, SIGUSR1);
	pthread_join(t, NULL);
	printf("handlers run: %d\n", atomic_load(&handled));
	return 0;
}
