/* A signal raised before the first thread is made, while main blocks it,
 * stays pending for main alone: a new thread inherits main's mask but not
 * its pending signals, and main gets the signal once it unblocks it. In
 * the header mode the runtime starts with the first pthread_create, after
 * the raise: the signal is then pending on the kernel thread that becomes
 * a worker, and must become main's. Prints the same under glibc and weft. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static volatile sig_atomic_t handled;
static int child_blocks, child_sees_pending;

static void on_usr1(int sig)
{
	(void)sig;
	handled++;
}

static void *look(void *arg)
{
	sigset_t m, p;
	pthread_sigmask(SIG_SETMASK, NULL, &m);
	sigemptyset(&p);
	sigpending(&p);
	child_blocks = sigismember(&m, SIGUSR1);
	child_sees_pending = sigismember(&p, SIGUSR1);
	return arg;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &one, NULL);
	raise(SIGUSR1);
	pthread_t t;
	if (pthread_create(&t, NULL, look, NULL) != 0 || pthread_join(t, NULL) != 0)
		return 1;
	printf("new thread: blocks SIGUSR1 %d, sees it pending %d\n", child_blocks,
	       child_sees_pending);
	sigset_t p;
	sigemptyset(&p);
	sigpending(&p);
	printf("main: sees it pending %d, handled %d\n", sigismember(&p, SIGUSR1), (int)handled);
	pthread_sigmask(SIG_UNBLOCK, &one, NULL);
	printf("main after unblocking: handled %d\n", (int)handled);
	return 0;
}
