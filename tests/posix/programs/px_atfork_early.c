/* fork handlers that a library registered before weft was loaded: its
 * prepare handler waits for a mutex that another thread holds across the
 * fork, and its child handler creates and joins a thread (px_atfork_lib.c).
 * Both run as on glibc: the prepare handler before weft stops its
 * scheduler for the fork, the child handler after the child's runtime is
 * back. Three rounds. Prints the same lines under glibc and LD_PRELOAD. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t *px_atfork_lock(void);
const char *px_atfork_seq(int *create);

static volatile int held;

static void *hold_a_while(void *arg)
{
	pthread_mutex_lock(px_atfork_lock());
	held = 1;
	struct timespec ts = {0, 30 * 1000 * 1000};
	nanosleep(&ts, NULL);
	pthread_mutex_unlock(px_atfork_lock());
	return arg;
}

int main(void)
{
	for (int round = 0; round < 3; round++) {
		held = 0;
		pthread_t t;
		if (pthread_create(&t, NULL, hold_a_while, NULL) != 0)
			return 1;
		while (!held)
			sched_yield();
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0)
			return 2;
		if (pid == 0) {
			int create;
			const char *seq = px_atfork_seq(&create);
			printf("round %d child: handlers %s, pthread_create in the child handler "
			       "%d\n",
			       round, seq, create);
			fflush(stdout);
			_exit(create == 0 ? 0 : 3);
		}
		int status = 0;
		if (waitpid(pid, &status, 0) != pid)
			return 4;
		pthread_join(t, NULL);
		int create;
		const char *seq = px_atfork_seq(&create);
		printf("round %d parent: handlers %s, child exited %d\n", round, seq,
		       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
	return 0;
}
