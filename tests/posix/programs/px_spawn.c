/* Programs started from threads, as CPython's subprocess and shells do:
 * system(), popen() and posix_spawn() + waitpid() from four threads at
 * once, each several times. Under weft the threads are ULTs and the
 * child of the fork inside system and popen has one kernel thread (a
 * fork's child under weft goes on as a plain thread until it execs,
 * docs/posix-coverage.md): each call must start its program, read its
 * output and reap it, with glibc's results. */
#define _GNU_SOURCE
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

enum { THREADS = 4, ROUNDS = 5 };

struct result {
	int system_ok, popen_ok, spawn_ok;
};

static void *run(void *arg)
{
	struct result *r = arg;
	for (int i = 0; i < ROUNDS; i++) {
		int st = system("exit 3");
		if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 3)
			r->system_ok++;
		FILE *f = popen("echo popen-says-hello", "r");
		char buf[64] = {0};
		if (f && fgets(buf, sizeof buf, f) && strcmp(buf, "popen-says-hello\n") == 0 &&
		    pclose(f) == 0)
			r->popen_ok++;
		else if (f)
			pclose(f);
		pid_t pid;
		char *argv[] = {"/bin/sh", "-c", "exit 7", NULL};
		if (posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ) == 0 &&
		    waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 7)
			r->spawn_ok++;
	}
	return NULL;
}

int main(void)
{
	pthread_t t[THREADS];
	struct result r[THREADS];
	memset(r, 0, sizeof r);
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, run, &r[i]);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < THREADS; i++)
		printf("thread %d: system %d/%d, popen %d/%d, posix_spawn %d/%d\n", i,
		       r[i].system_ok, ROUNDS, r[i].popen_ok, ROUNDS, r[i].spawn_ok, ROUNDS);
	return 0;
}
