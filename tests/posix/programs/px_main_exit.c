/* main ends with pthread_exit: the process goes on while other threads
 * run and ends with status 0, atexit handlers run, after the last thread.
 * Without an argument main has used no pthread function before (under
 * weft's headers the runtime has not started); with "thread" it first
 * starts a thread that outlives it. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void bye(void)
{
	puts("atexit handler ran");
}

static void *outlive(void *arg)
{
	(void)arg;
	struct timespec ts = {0, 50 * 1000 * 1000};
	nanosleep(&ts, NULL);
	puts("thread finished after main's pthread_exit");
	fflush(stdout);
	return NULL;
}

int main(int argc, char **argv)
{
	atexit(bye);
	puts("main calls pthread_exit");
	if (argc > 1 && strcmp(argv[1], "thread") == 0) {
		pthread_t t;
		if (pthread_create(&t, NULL, outlive, NULL) != 0)
			return 1;
	}
	fflush(stdout);
	pthread_exit(NULL);
}
