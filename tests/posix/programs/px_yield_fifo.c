/* sched_yield gives the CPU to another process (after the Open POSIX
 * suite's sched_yield/1-1): a SCHED_FIFO process pinned to one CPU forks
 * a child that loops on sched_yield; the parent, of the same priority on
 * the same CPU, runs only if the child's sched_yield enters the kernel.
 * It then ends the child with SIGTERM. The child's alarm ends it with
 * SIGALRM after 4 s if the parent never ran. Under weft a thread with
 * nothing else of its process ready to run yielded to nobody: the child
 * died of SIGALRM. Without the right to SCHED_FIFO it says so, on glibc
 * too. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *nothing(void *arg)
{
	return arg;
}

int main(void)
{
	/* Threads first, so that weft runs in the parent (and in the child). */
	pthread_t t;
	pthread_create(&t, NULL, nothing, NULL);
	pthread_join(t, NULL);
	struct sched_param sp = {.sched_priority = sched_get_priority_min(SCHED_FIFO)};
	if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
		printf("SCHED_FIFO: not permitted here (%s)\n", errno == EPERM ? "EPERM" : "other");
		return 0;
	}
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &one);
	if (sched_setaffinity(0, sizeof one, &one) != 0) {
		printf("sched_setaffinity failed\n");
		return 1;
	}
	int fd[2];
	if (pipe(fd) != 0)
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		alarm(4);
		if (write(fd[1], "go", 2) != 2)
			_exit(2);
		for (;;)
			if (sched_yield() != 0)
				_exit(3);
	}
	char buf[2];
	if (read(fd[0], buf, 2) != 2) {
		kill(pid, SIGKILL);
		return 1;
	}
	kill(pid, SIGTERM);
	int s;
	waitpid(pid, &s, 0);
	if (WIFSIGNALED(s))
		printf("child ended by %s\n", WTERMSIG(s) == SIGTERM ? "SIGTERM"
					      : WTERMSIG(s) == SIGALRM
						      ? "SIGALRM: the parent never ran"
						      : strsignal(WTERMSIG(s)));
	else
		printf("child exited with %d\n", WEXITSTATUS(s));
	return 0;
}
