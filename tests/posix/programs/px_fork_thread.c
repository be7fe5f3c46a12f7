/* A thread (not main) forks: the child sees the thread's own thread-locals,
 * prints, and execs; then popen and system from the same thread. Under weft
 * the thread runs on a thread control block of its own, which glibc's fork
 * takes out of its list of threads in the child (src/sched/tls.c). The
 * output is the same where threads share their worker's thread-locals
 * (sanitizer builds): main does not print its own copy. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static __thread int tv = 5;

static void *body(void *arg)
{
	(void)arg;
	tv = 9;
	fflush(stdout);
	pid_t p = fork();
	if (p < 0) {
		perror("fork");
		exit(1);
	}
	if (p == 0) {
		printf("child: tv=%d\n", tv);
		fflush(stdout);
		char *argv[] = {"/bin/echo", "child: exec ok", NULL};
		execv(argv[0], argv);
		_exit(127);
	}
	int st;
	if (waitpid(p, &st, 0) != p) {
		perror("waitpid");
		exit(1);
	}
	printf("parent: child exited %d, signal %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1,
	       WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	FILE *f = popen("echo popen ok", "r");
	char buf[64];
	if (f && fgets(buf, sizeof buf, f))
		printf("%s", buf);
	if (f)
		pclose(f);
	printf("system: %d\n", system("exit 3") >> 8);
	printf("parent: tv=%d\n", tv);
	return NULL;
}

int main(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, body, NULL) || pthread_join(t, NULL))
		return 1;
	return 0;
}
