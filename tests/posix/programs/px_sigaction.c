/* The program's signal handlers, as glibc runs them:
 *   - sigaction and signal report back the handler and flags the program
 *     installed; bad signal numbers are EINVAL; sysv_signal and
 *     SA_RESETHAND are one-shot;
 *   - a signal sent to the process while the one thread that takes it is
 *     parked in sem_wait (every running thread blocks it) runs its handler
 *     in that thread, with the siginfo it was sent with (sigqueue's value),
 *     and sem_wait returns EINTR;
 *   - raise() of a signal the calling thread blocks leaves it pending for
 *     that thread (sigpending shows it) and runs the handler there once it
 *     unblocks it;
 *   - sigsuspend with a set that unblocks what the thread blocks returns
 *     after the handler of a signal sent to the thread before the call or
 *     while it waits.
 * Under weft the kernel may deliver a process signal to a worker between
 * two ULTs, or to one whose ULT blocks it: weft holds it and gives it to a
 * ULT that takes it (src/sync/procsig.c). The output must be glibc's. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_t target;
static atomic_int handled, handled_elsewhere, got_value, got_code;
static sem_t sem;

static void on_info(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	/* The siginfo first: the sender reads it once it sees the count. */
	atomic_store(&got_code, si->si_code);
	atomic_store(&got_value, si->si_code == SI_QUEUE ? si->si_value.sival_int : -1);
	if (pthread_equal(pthread_self(), target))
		atomic_fetch_add(&handled, 1);
	else
		atomic_fetch_add(&handled_elsewhere, 1);
}

static void on_plain(int sig)
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

static void block(int how, int sig)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, sig);
	pthread_sigmask(how, &s, NULL);
}

static void report_actions(void)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_info;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR2);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR1, NULL, &old);
	printf("sigaction: handler %s, SA_SIGINFO %d, SA_RESTART %d, SA_RESETHAND %d, "
	       "mask has SIGUSR2 %d\n",
	       old.sa_sigaction == on_info ? "is the program's" : "is another",
	       !!(old.sa_flags & SA_SIGINFO), !!(old.sa_flags & SA_RESTART),
	       !!(old.sa_flags & SA_RESETHAND), sigismember(&old.sa_mask, SIGUSR2));
	errno = 0;
	int r = sigaction(0, &sa, NULL);
	printf("sigaction(0): %d %s\n", r, errno == EINVAL ? "EINVAL" : strerror(errno));
	errno = 0;
	r = sigaction(SIGKILL, &sa, NULL);
	printf("sigaction(SIGKILL): %d %s\n", r, errno == EINVAL ? "EINVAL" : strerror(errno));
	errno = 0;
	r = sigaction(65, NULL, &old);
	printf("sigaction(65): %d %s\n", r, errno == EINVAL ? "EINVAL" : strerror(errno));

	sighandler_t was = signal(SIGUSR2, on_plain);
	sighandler_t now = signal(SIGUSR2, SIG_DFL);
	printf("signal: before %s, then %s\n", was == SIG_DFL ? "SIG_DFL" : "another",
	       now == on_plain ? "the program's" : "another");
	errno = 0;
	sighandler_t bad = signal(0, on_plain);
	int bad_errno = errno;
	printf("signal(0): %s %s\n", bad == SIG_ERR ? "SIG_ERR" : "a handler",
	       bad_errno == EINVAL ? "EINVAL" : strerror(bad_errno));

	errno = 0;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	r = siginterrupt(0, 1);
#pragma GCC diagnostic pop
	printf("siginterrupt(0): %d %s\n", r, errno == EINVAL ? "EINVAL" : strerror(errno));
	errno = 0;
	r = raise(-1);
	printf("raise(-1): %d %s\n", r, errno == EINVAL ? "EINVAL" : strerror(errno));
#ifndef PX_NO_SIGSUSPEND
	/* Not in the build that runs under UBSan too (glibc declares the
	 * argument nonnull, and UBSan reports the call). */
	errno = 0;
	sigset_t *volatile no_set = NULL; /* past glibc's nonnull prototype */
	r = sigpending(no_set);
	printf("sigpending(NULL): %d %s\n", r, errno == EFAULT ? "EFAULT" : strerror(errno));
#endif

	/* One-shot handlers: the first delivery puts SIG_DFL back. */
	target = pthread_self();
	atomic_store(&handled, 0);
	sysv_signal(SIGUSR2, on_plain);
	raise(SIGUSR2);
	sigaction(SIGUSR2, NULL, &old);
	printf("sysv_signal: handled %d, then %s\n", atomic_load(&handled),
	       old.sa_handler == SIG_DFL ? "SIG_DFL" : "still the program's");
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_plain;
	sa.sa_flags = SA_RESETHAND;
	sigaction(SIGUSR2, &sa, NULL);
	kill(getpid(), SIGUSR2);
	sigaction(SIGUSR2, NULL, &old);
	printf("SA_RESETHAND: handled %d, then %s\n", atomic_load(&handled),
	       old.sa_handler == SIG_DFL ? "SIG_DFL" : "still the program's");
}

static void *parked(void *arg)
{
	(void)arg;
	block(SIG_UNBLOCK, SIGUSR1);
	int r, interrupted = 0;
	while ((r = sem_wait(&sem)) != 0 && errno == EINTR)
		interrupted++;
	printf("parked: sem_wait interrupted %s\n", interrupted ? "at least once" : "never");
	return NULL;
}

static void *busy(void *arg)
{
	atomic_int *stop = arg;
	while (!atomic_load(stop))
		sched_yield();
	return NULL;
}

static void parked_taker(void)
{
	/* Every thread but the parked one blocks SIGUSR1. */
	block(SIG_BLOCK, SIGUSR1);
	sem_init(&sem, 0, 0);
	atomic_int stop = 0;
	pthread_t b[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&b[i], NULL, busy, &stop);
	atomic_store(&handled, 0);
	pthread_create(&target, NULL, parked, NULL);
	nap_ms(50); /* it waits in sem_wait by now */
	enum { ROUNDS = 50 };
	int wrong_value = 0;
	for (int i = 0; i < ROUNDS; i++) {
		union sigval v = {.sival_int = 1000 + i};
		if (i % 2)
			sigqueue(getpid(), SIGUSR1, v);
		else
			kill(getpid(), SIGUSR1);
		for (int ms = 0;
		     atomic_load(&handled) + atomic_load(&handled_elsewhere) < i + 1 && ms < 10000;
		     ms++)
			nap_ms(1);
		int want_code = i % 2 ? SI_QUEUE : SI_USER;
		if (atomic_load(&got_code) != want_code ||
		    (i % 2 && atomic_load(&got_value) != 1000 + i))
			wrong_value++;
	}
	sem_post(&sem);
	pthread_join(target, NULL);
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(b[i], NULL);
	printf("parked: %d of %d handled in the parked thread, %d elsewhere, %d with the wrong "
	       "siginfo\n",
	       atomic_load(&handled), ROUNDS, atomic_load(&handled_elsewhere), wrong_value);
	block(SIG_UNBLOCK, SIGUSR1);
}

static void *raiser(void *arg)
{
	(void)arg;
	target = pthread_self();
	block(SIG_BLOCK, SIGUSR2);
	raise(SIGUSR2);
	sigset_t p;
	sigpending(&p);
	int before = atomic_load(&handled);
	block(SIG_UNBLOCK, SIGUSR2);
	printf("raise: blocked signal %s, handler ran %s after the unblock\n",
	       sigismember(&p, SIGUSR2) ? "pending" : "not pending",
	       atomic_load(&handled) == before + 1 ? "in this thread" : "elsewhere or not at all");
	return NULL;
}

/* A thread that blocks SIGUSR1 and SIGUSR2 and waits for them in
 * sigsuspend: a SIGUSR2 sent to it before (pending) ends the first
 * sigsuspend at once, a SIGUSR1 sent while it waits ends the second. */
#ifndef PX_NO_SIGSUSPEND
static atomic_int suspender_waiting;

static void *suspender(void *arg)
{
	(void)arg;
	target = pthread_self();
	sigset_t both, none;
	sigemptyset(&both);
	sigaddset(&both, SIGUSR1);
	sigaddset(&both, SIGUSR2);
	sigemptyset(&none);
	pthread_sigmask(SIG_BLOCK, &both, NULL);
	atomic_store(&suspender_waiting, 1);
	while (atomic_load(&suspender_waiting) == 1) /* until main sent SIGUSR2 */
		sched_yield();
	int before = atomic_load(&handled);
	int r = sigsuspend(&none);
	int e = errno;
	printf("sigsuspend: pending signal: returned %d %s, handler ran %s\n", r,
	       e == EINTR ? "EINTR" : strerror(e),
	       atomic_load(&handled) == before + 1 ? "here" : "elsewhere or not at all");
	before = atomic_load(&handled);
	atomic_store(&suspender_waiting, 3);
	r = sigsuspend(&none);
	e = errno;
	printf("sigsuspend: signal sent while it waits: returned %d %s, handler ran %s\n", r,
	       e == EINTR ? "EINTR" : strerror(e),
	       atomic_load(&handled) == before + 1 ? "here" : "elsewhere or not at all");
	return NULL;
}

static void suspend_test(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_plain;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	atomic_store(&handled, 0);
	pthread_t t;
	pthread_create(&t, NULL, suspender, NULL);
	while (atomic_load(&suspender_waiting) != 1)
		nap_ms(1);
	pthread_kill(t, SIGUSR2);
	atomic_store(&suspender_waiting, 2);
	while (atomic_load(&suspender_waiting) != 3)
		nap_ms(1);
	nap_ms(50); /* in its second sigsuspend by now */
	pthread_kill(t, SIGUSR1);
	pthread_join(t, NULL);
}
#endif

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	report_actions();
	parked_taker();
	signal(SIGUSR2, on_plain);
	atomic_store(&handled, 0);
	atomic_store(&handled_elsewhere, 0);
	pthread_t t;
	pthread_create(&t, NULL, raiser, NULL);
	pthread_join(t, NULL);
#ifndef PX_NO_SIGSUSPEND
	suspend_test();
#endif
	printf("elsewhere: %d\n", atomic_load(&handled_elsewhere));
	return 0;
}
