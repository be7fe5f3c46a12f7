/* One thread forks a child and blocks in waitpid() while other threads of the
 * process compute and hand a counter back and forth through a mutex and a
 * condition variable. The child sleeps about 200 ms, then waits for a byte
 * on a pipe that the parent's other threads write only once their exchange
 * is over, and exits 7; if the byte does not come within 10 s it exits 9.
 * So the status the waiter prints is 7 only if the other threads ran while
 * it was blocked in waitpid(): a runtime that keeps the waiter's worker in
 * the kernel prints 9 on one worker (after 10 s), instead of hanging.
 *
 * The child is a copy of a multithreaded process and calls only
 * async-signal-safe functions (poll, read, close, _exit).
 *
 * stdout: the child's exit status, the exchange's count and the computation's result. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXCHANGES      2000
#define CHILD_SLEEP_MS 200
#define CHILD_WAIT_MS  10000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int forked;       /* the waiter has forked: the others may start; under lock */
static int counter;      /* the ball: even for ping's turn, odd for pong's; under lock */
static int players_done; /* ping and pong that finished, under lock */
static int go_pipe[2];   /* the parent writes one byte once the exchange is over */
static unsigned long long computed;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* The child: the ~200 ms sleep, then the byte from the parent's other threads. */
static void child(void)
{
	close(go_pipe[1]);
	poll(NULL, 0, CHILD_SLEEP_MS);
	struct pollfd p = {.fd = go_pipe[0], .events = POLLIN};
	char b;
	if (poll(&p, 1, CHILD_WAIT_MS) == 1 && read(go_pipe[0], &b, 1) == 1)
		_exit(7);
	_exit(9);
}

static void *waiter(void *arg)
{
	int *status = arg;
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0)
		child();
	/* The parent keeps the pipe's read end open, so that a late write gets no SIGPIPE. */
	pthread_mutex_lock(&lock);
	forked = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	pid_t r;
	do
		r = waitpid(pid, status, 0);
	while (r < 0 && errno == EINTR);
	if (r != pid)
		die("waitpid");
	return NULL;
}

static void wait_forked(void)
{
	pthread_mutex_lock(&lock);
	while (!forked)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
}

/* ping moves the counter from even to odd, pong from odd to even, EXCHANGES times
 * each; the last one to finish tells the child to exit. */
static void *player(void *arg)
{
	int parity = (int)(long)arg;
	wait_forked();
	pthread_mutex_lock(&lock);
	for (int i = 0; i < EXCHANGES; i++) {
		while (counter % 2 != parity)
			pthread_cond_wait(&cond, &lock);
		counter++;
		pthread_cond_broadcast(&cond);
	}
	int last = ++players_done == 2;
	pthread_mutex_unlock(&lock);
	if (last) {
		ssize_t n;
		do
			n = write(go_pipe[1], "g", 1);
		while (n < 0 && errno == EINTR);
		if (n != 1)
			die("write");
	}
	return NULL;
}

/* Plain computation beside the exchange: a linear congruential walk. */
static void *compute(void *arg)
{
	(void)arg;
	wait_forked();
	unsigned long long x = 1;
	for (int i = 0; i < 3000000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	computed = x;
	return NULL;
}

int main(void)
{
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (pipe(go_pipe))
		die("pipe");
	/* Nothing buffered in stdio for the child to inherit. */
	fflush(stdout);

	int status = -1;
	pthread_t w, ping, pong, comp;
	if (pthread_create(&w, NULL, waiter, &status) ||
	    pthread_create(&ping, NULL, player, (void *)0L) ||
	    pthread_create(&pong, NULL, player, (void *)1L) ||
	    pthread_create(&comp, NULL, compute, NULL))
		die("pthread_create");
	if (pthread_join(ping, NULL) || pthread_join(pong, NULL) || pthread_join(comp, NULL) ||
	    pthread_join(w, NULL))
		die("pthread_join");
	close(go_pipe[0]);
	close(go_pipe[1]);

	if (WIFEXITED(status))
		printf("child exited with status %d\n", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		printf("child killed by signal %d\n", WTERMSIG(status));
	else
		printf("child status 0x%x\n", status);
	printf("exchanges: %d\n", counter);
	printf("computed: %llx\n", computed);

	clock_gettime(CLOCK_MONOTONIC, &t1);
	fprintf(stderr, "px_waitpid: %.3f s\n",
		(double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	return WIFEXITED(status) && WEXITSTATUS(status) == 7 ? 0 : 1;
}
