/* Signals sent to the process (kill), as POSIX says they are chosen among
 * the threads by their signal masks:
 *   - a signal every thread blocks stays pending for the process (sigpending
 *     shows it) and runs its handler in the first thread that unblocks it,
 *     before that thread's pthread_sigmask returns;
 *   - a signal only one thread leaves unblocked runs its handler in that
 *     thread, every time, wherever the others run;
 *   - pbzip2's pattern: main blocks SIGINT and SIGTERM before it makes its
 *     threads, one of them takes them with sigwait, and a SIGTERM sent to
 *     the process while the others compute reaches it - the default action
 *     (ending the process) must not happen.
 *   - a signal main blocks before it makes any thread, sent to the
 *     process, stays pending (the sleeping workers block it too).
 * Under weft the masks are per ULT, and several ULTs share a kernel thread:
 * the kernel thread must block what the ULT it runs blocks (src/sched/
 * carrier.c, "signal masks"). The output must be glibc's. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { ROUNDS = 200, BUSY = 4 };

static pthread_t target;
static atomic_int handled, handled_elsewhere, stop;

static void on_usr1(int sig)
{
	(void)sig;
	if (pthread_equal(pthread_self(), target))
		atomic_fetch_add(&handled, 1);
	else
		atomic_fetch_add(&handled_elsewhere, 1);
}

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void block(int how, int a, int b)
{
	sigset_t s;
	sigemptyset(&s);
	if (a)
		sigaddset(&s, a);
	if (b)
		sigaddset(&s, b);
	pthread_sigmask(how, &s, NULL);
}

/* Blocks SIGUSR1 (inherited from main) and keeps its worker busy. */
static void *busy(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		sched_yield();
	return NULL;
}

/* Computes in short steps. (The signal thread's sigwait holds its worker
 * in the header mode, where weft does not see system calls: threads that
 * never leave theirs would starve the ones queued behind it.) */
static void *napper(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		nap_ms(1);
	return NULL;
}

/* The one thread that takes SIGUSR1. */
static void *taker(void *arg)
{
	(void)arg;
	block(SIG_UNBLOCK, SIGUSR1, 0);
	while (!atomic_load(&stop))
		sched_yield();
	return NULL;
}

static void *pending_test(void *arg)
{
	(void)arg;
	/* Runs with SIGUSR2 blocked, as every other thread. */
	kill(getpid(), SIGUSR2);
	sigset_t p;
	sigpending(&p);
	printf("pending: SIGUSR2 %s while every thread blocks it\n",
	       sigismember(&p, SIGUSR2) ? "pending" : "not pending");
	target = pthread_self();
	block(SIG_UNBLOCK, SIGUSR2, 0);
	/* The handler ran here, before pthread_sigmask returned. */
	printf("pending: handler ran %s after the unblock\n",
	       atomic_load(&handled) == 1 ? "in this thread" : "elsewhere or not at all");
	return NULL;
}

static void *sig_thread(void *arg)
{
	(void)arg;
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGINT);
	sigaddset(&s, SIGTERM);
	int sig = 0;
	int e = sigwait(&s, &sig);
	printf("sigwait: returned %d with %s\n", e,
	       sig == SIGTERM  ? "SIGTERM"
	       : sig == SIGINT ? "SIGINT"
			       : "another signal");
	atomic_store(&stop, 1);
	return NULL;
}

static void *killer(void *arg)
{
	(void)arg;
	nap_ms(20);
	kill(getpid(), SIGTERM);
	while (!atomic_load(&stop))
		sched_yield();
	return NULL;
}

/* 0. Before any thread exists (the other workers asleep since the start,
 * with the mask they took then): a signal main blocks stays pending - its
 * default action (ending the process) must not happen. */
static void blocked_at_start(void)
{
	nap_ms(50);
	sigset_t s, p;
	sigemptyset(&s);
	sigaddset(&s, SIGHUP);
	sigprocmask(SIG_BLOCK, &s, NULL);
	kill(getpid(), SIGHUP);
	nap_ms(20);
	sigpending(&p);
	int sig = 0;
	if (sigismember(&p, SIGHUP))
		sigwait(&s, &sig);
	printf("at start: SIGHUP %s, sigwait took %s\n",
	       sigismember(&p, SIGHUP) ? "pending" : "not pending",
	       sig == SIGHUP ? "it" : "nothing");
	sigprocmask(SIG_UNBLOCK, &s, NULL);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	blocked_at_start();
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	pthread_t t[BUSY + 2];

	/* 1. Pending for the process until a thread unblocks it. */
	block(SIG_BLOCK, SIGUSR2, 0);
	pthread_create(&t[0], NULL, pending_test, NULL);
	pthread_join(t[0], NULL);
	block(SIG_UNBLOCK, SIGUSR2, 0);
	atomic_store(&handled, 0);

	/* 2. One taker among busy threads that all block SIGUSR1. */
	block(SIG_BLOCK, SIGUSR1, 0);
	for (int i = 0; i < BUSY; i++)
		pthread_create(&t[i], NULL, busy, NULL);
	pthread_create(&target, NULL, taker, NULL);
	for (int i = 0; i < ROUNDS; i++) {
		int want = i + 1;
		kill(getpid(), SIGUSR1);
		for (int ms = 0;
		     atomic_load(&handled) + atomic_load(&handled_elsewhere) < want && ms < 10000;
		     ms++)
			nap_ms(1);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < BUSY; i++)
		pthread_join(t[i], NULL);
	pthread_join(target, NULL);
	printf("taker: %d of %d signals handled by the one thread that takes them, %d elsewhere\n",
	       atomic_load(&handled), ROUNDS, atomic_load(&handled_elsewhere));

	/* 3. pbzip2's signal thread. */
	atomic_store(&stop, 0);
	block(SIG_BLOCK, SIGINT, SIGTERM);
	pthread_create(&t[0], NULL, sig_thread, NULL);
	for (int i = 1; i <= BUSY; i++)
		pthread_create(&t[i], NULL, napper, NULL);
	pthread_create(&t[BUSY + 1], NULL, killer, NULL);
	for (int i = 0; i < BUSY + 2; i++)
		pthread_join(t[i], NULL);
	printf("done\n");
	return 0;
}
