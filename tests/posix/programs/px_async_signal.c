#define _DEFAULT_SOURCE /* usleep */
#define _POSIX_C_SOURCE 200809L
/* A thread that never calls anything: asynchronous cancellation ends it,
 * and a signal sent with pthread_kill runs its handler in it, promptly -
 * on weft through the preemption signal's handler (src/sched/preempt.c). */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

static atomic_int started, got;
static pthread_t handler_thread;
static volatile long spin;

static void *cancel_me(void *arg)
{
	(void)arg;
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
	atomic_store(&started, 1);
	for (;;)
		spin++;
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	handler_thread = pthread_self();
	atomic_store(&got, 1);
}

static void *wait_for_signal(void *arg)
{
	(void)arg;
	atomic_store(&started, 2);
	while (!atomic_load(&got))
		spin++;
	return pthread_equal(handler_thread, pthread_self()) ? (void *)1 : (void *)2;
}

int main(void)
{
	pthread_t t;
	void *r;
	alarm(30); /* a hang fails */
	if (pthread_create(&t, NULL, cancel_me, NULL) != 0)
		return 1;
	while (atomic_load(&started) != 1)
		usleep(1000);
	usleep(20000);
	pthread_cancel(t);
	pthread_join(t, &r);
	printf("asynchronous cancel of a spinning thread: %s\n",
	       r == PTHREAD_CANCELED ? "cancelled" : "not cancelled");

	signal(SIGUSR1, on_usr1);
	if (pthread_create(&t, NULL, wait_for_signal, NULL) != 0)
		return 1;
	while (atomic_load(&started) != 2)
		usleep(1000);
	usleep(20000);
	pthread_kill(t, SIGUSR1);
	pthread_join(t, &r);
	printf("pthread_kill to a spinning thread: handler ran %s\n",
	       r == (void *)1 ? "in that thread" : "elsewhere");
	return 0;
}
