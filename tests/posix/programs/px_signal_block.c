/* Signals to threads blocked in the kernel, as POSIX promises them:
 *   - a thread blocked in read() gets a pthread_kill'd signal: its handler
 *     runs (installed without SA_RESTART) and read fails with EINTR;
 *   - a thread in sigwait() gets a blocked signal sent to it while it waits;
 *   - and one sent before it called sigwait (left pending until then).
 * Under weft (LD_PRELOAD), those threads wait inside system call sections
 * (src/sched/carrier.c): the signal must reach the kernel thread they wait
 * on, or be taken from what is pending for the thread. Run on one worker
 * and on two; the output must be glibc's. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int pipe_a[2], pipe_c[2];
static volatile sig_atomic_t handled;

static void on_usr1(int sig)
{
	(void)sig;
	handled++;
}

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void *reader(void *arg)
{
	(void)arg;
	char c;
	ssize_t n = read(pipe_a[0], &c, 1); /* nobody writes: only a signal ends it */
	int e = errno;
	printf("reader: read returned %zd, %s, handler ran %d time(s)\n", n,
	       n < 0 && e == EINTR ? "EINTR" : "no EINTR", (int)handled);
	return NULL;
}

static void *waiter(void *arg)
{
	(void)arg;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	int sig = 0;
	int e = sigwait(&set, &sig);
	printf("waiter: sigwait returned %d, signal %s\n", e, sig == SIGUSR2 ? "SIGUSR2" : "other");
	return NULL;
}

static void *late_waiter(void *arg)
{
	(void)arg;
	char c;
	/* Told to go on only once the signal was sent: it is pending. */
	while (read(pipe_c[0], &c, 1) < 0 && errno == EINTR)
		;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	siginfo_t info;
	int sig = sigwaitinfo(&set, &info);
	printf("late waiter: sigwaitinfo returned %s\n", sig == SIGUSR2 ? "SIGUSR2" : "other");
	return NULL;
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (pipe(pipe_a) || pipe(pipe_c))
		return 1;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1; /* no SA_RESTART: read fails with EINTR */
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL))
		return 1;
	/* SIGUSR2 is blocked in every thread (they inherit main's mask) and
	 * taken with sigwait. */
	sigset_t usr2;
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	if (pthread_sigmask(SIG_BLOCK, &usr2, NULL))
		return 1;

	pthread_t r, w, l;
	if (pthread_create(&r, NULL, reader, NULL) || pthread_create(&w, NULL, waiter, NULL) ||
	    pthread_create(&l, NULL, late_waiter, NULL))
		return 1;
	nap_ms(200); /* the reader is in read, the waiter in sigwait */
	pthread_kill(r, SIGUSR1);
	pthread_join(r, NULL);
	pthread_kill(w, SIGUSR2);
	pthread_join(w, NULL);
	pthread_kill(l, SIGUSR2);
	if (write(pipe_c[1], "g", 1) != 1)
		return 1;
	pthread_join(l, NULL);
	printf("main: done\n");
	return 0;
}
