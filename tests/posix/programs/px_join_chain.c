// px_join_chain: the join-chain benchmark of seed 003 (§5.1.2, Listing F.1) written as a plain
// pthread program, for weft's POSIX layer evidence, in two forms:
//
// - nested: thread i creates thread i+1 and joins it, so the whole chain is alive at once,
//   each thread waiting in pthread_join for the one below it; the last returns 1 and every
//   other returns its child's value plus one;
// - flat, as in the seed: the main thread creates all threads; thread X joins thread X-1 and
//   returns its value plus one, and the main thread joins the last one.
//
// Threads get 64 KiB stacks (pthread_attr_setstacksize) so the chain can be long.
//
// Usage: px_join_chain [length (2000)]
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STACK_SIZE (64 * 1024)
#define BROKEN     ((void *)(intptr_t)-1)

static long length;
static pthread_attr_t attr;
static pthread_t *flat; // flat chain: flat[x] is written before thread x+1 is created

// Where a chain broke; written once, by the thread that failed, before any join sees BROKEN.
static long broken_at = -1;
static int broken_rc;
static const char *broken_call;

static void *nested(void *arg)
{
	long depth = (long)(intptr_t)arg;
	if (depth == length - 1)
		return (void *)(intptr_t)1;
	pthread_t child;
	int rc = pthread_create(&child, &attr, nested, (void *)(intptr_t)(depth + 1));
	if (rc != 0) {
		broken_at = depth + 1;
		broken_rc = rc;
		broken_call = "pthread_create";
		return BROKEN;
	}
	void *ret;
	rc = pthread_join(child, &ret);
	if (rc != 0) {
		broken_at = depth + 1;
		broken_rc = rc;
		broken_call = "pthread_join";
		return BROKEN;
	}
	if (ret == BROKEN)
		return BROKEN;
	return (void *)((intptr_t)ret + 1);
}

static void *flat_link(void *arg)
{
	long x = (long)(intptr_t)arg;
	if (x == 0)
		return (void *)(intptr_t)1;
	void *ret;
	int rc = pthread_join(flat[x - 1], &ret);
	if (rc != 0) {
		broken_at = x - 1;
		broken_rc = rc;
		broken_call = "pthread_join";
		return BROKEN;
	}
	if (ret == BROKEN)
		return BROKEN;
	return (void *)((intptr_t)ret + 1);
}

static int report(const char *form, void *ret)
{
	if (ret == BROKEN) {
		fprintf(stderr, "px_join_chain: %s chain broke at thread %ld of %ld: %s: %s\n",
			form, broken_at, length, broken_call, strerror(broken_rc));
		return 1;
	}
	printf("%s chain length=%ld result=%ld\n", form, length, (long)(intptr_t)ret);
	if ((long)(intptr_t)ret != length) {
		fprintf(stderr, "px_join_chain: %s chain returned %ld, expected %ld\n", form,
			(long)(intptr_t)ret, length);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	length = 2000;
	if (argc > 1) {
		char *end;
		length = strtol(argv[1], &end, 10);
		if (*argv[1] == '\0' || *end != '\0' || length < 1 || length > 100000000) {
			fprintf(stderr, "px_join_chain: bad length '%s'\n", argv[1]);
			return 2;
		}
	}
	int rc = pthread_attr_init(&attr);
	if (rc == 0)
		rc = pthread_attr_setstacksize(&attr, STACK_SIZE);
	if (rc != 0) {
		fprintf(stderr, "px_join_chain: stack attribute: %s\n", strerror(rc));
		return 1;
	}

	pthread_t first;
	void *ret;
	rc = pthread_create(&first, &attr, nested, (void *)(intptr_t)0);
	if (rc != 0) {
		fprintf(stderr, "px_join_chain: pthread_create: %s\n", strerror(rc));
		return 1;
	}
	rc = pthread_join(first, &ret);
	if (rc != 0) {
		fprintf(stderr, "px_join_chain: pthread_join: %s\n", strerror(rc));
		return 1;
	}
	if (report("nested", ret))
		return 1;

	flat = malloc((size_t)length * sizeof *flat);
	if (!flat) {
		fprintf(stderr, "px_join_chain: out of memory\n");
		return 1;
	}
	for (long x = 0; x < length; x++) {
		rc = pthread_create(&flat[x], &attr, flat_link, (void *)(intptr_t)x);
		if (rc != 0) {
			// Threads 0..x-1 wait on each other; joining the last ends the chain.
			fprintf(stderr,
				"px_join_chain: flat chain: pthread_create #%ld of %ld: %s\n", x,
				length, strerror(rc));
			if (x > 0)
				pthread_join(flat[x - 1], NULL);
			return 1;
		}
	}
	rc = pthread_join(flat[length - 1], &ret);
	if (rc != 0) {
		fprintf(stderr, "px_join_chain: pthread_join: %s\n", strerror(rc));
		return 1;
	}
	free(flat);
	pthread_attr_destroy(&attr);
	return report("flat", ret);
}
