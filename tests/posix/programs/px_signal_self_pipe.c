/* The self-pipe trick under pthread_kill: a thread blocks in read on a
 * pipe whose byte its own SIGUSR1 handler writes, and main sends it that
 * signal while it computes, just before it reads. On glibc the handler
 * runs as soon as the signal comes, and the read returns.
 *
 * Under weft a signal sent to a running thread is weft's to deliver
 * (src/sync/signal.c): the thread is interrupted where a preemption is
 * safe - not inside the C library, where this one computes (memset) - so
 * the signal may still be pending when it enters read. It must reach the
 * thread before the call waits, or the thread waits for the byte its
 * pending handler would write: on the poller (src/io/poller.c), a wait
 * that a pending signal ends; with WEFT_IO=off, the call itself, in a
 * system call section (src/sched/carrier.c, wf_section_hook). The output
 * must be glibc's. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { ROUNDS = 200, BUF = 1 << 18 };

static int fds[2];
static atomic_int computing, sent, round_done;
static atomic_long handled;
static char buf[BUF];

static void on_usr1(int sig)
{
	(void)sig;
	char c = 'x';
	if (write(fds[1], &c, 1) != 1)
		abort();
	atomic_fetch_add(&handled, 1);
}

static void *reader(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		atomic_store(&computing, 1);
		while (!atomic_load(&sent))
			memset(buf, i, sizeof buf); /* inside the C library */
		char c;
		ssize_t r;
		do
			r = read(fds[0], &c, 1);
		while (r < 0 && errno == EINTR);
		if (r != 1) {
			perror("read");
			exit(1);
		}
		atomic_store(&computing, 0);
		atomic_store(&sent, 0);
		atomic_store(&round_done, 1);
	}
	return NULL;
}

int main(void)
{
	if (pipe(fds) != 0)
		return 1;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) != 0)
		return 1;
	pthread_t t;
	if (pthread_create(&t, NULL, reader, NULL) != 0)
		return 1;
	for (int i = 0; i < ROUNDS; i++) {
		while (!atomic_load(&computing))
			;
		pthread_kill(t, SIGUSR1);
		atomic_store(&sent, 1);
		while (!atomic_load(&round_done))
			;
		atomic_store(&round_done, 0);
	}
	pthread_join(t, NULL);
	printf("%d rounds, %ld handlers ran\n", ROUNDS, atomic_load(&handled));
	return 0;
}
