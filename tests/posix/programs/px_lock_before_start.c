/* main locks an error-checking mutex, a recursive one and a rwlock before
 * it creates its first thread, and unlocks them after: each unlock
 * succeeds, as on glibc. In header mode weft starts at the first
 * pthread_create, and main's identity as a lock owner must survive that
 * (the root ULT keeps its thread's lock key). A thread sees the locks held
 * meanwhile; after weft stops (returning from main) nothing is left. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t errchk, rec;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;

static const char *name(int e)
{
	return e == 0 ? "0" : e == EBUSY ? "EBUSY" : e == EPERM ? "EPERM" : strerror(e);
}

static void *other(void *arg)
{
	(void)arg;
	printf("thread: trylock errorcheck %s\n", name(pthread_mutex_trylock(&errchk)));
	printf("thread: trylock recursive %s\n", name(pthread_mutex_trylock(&rec)));
	printf("thread: tryrdlock rwlock %s\n", name(pthread_rwlock_tryrdlock(&rw)));
	printf("thread: unlock errorcheck %s\n", name(pthread_mutex_unlock(&errchk)));
	return NULL;
}

int main(void)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&errchk, &a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&rec, &a);
	pthread_mutexattr_destroy(&a);

	printf("main: lock errorcheck %s\n", name(pthread_mutex_lock(&errchk)));
	printf("main: lock recursive %s\n", name(pthread_mutex_lock(&rec)));
	printf("main: wrlock rwlock %s\n", name(pthread_rwlock_wrlock(&rw)));

	pthread_t t;
	if (pthread_create(&t, NULL, other, NULL) || pthread_join(t, NULL))
		return 1;

	printf("main: relock errorcheck %s\n", name(pthread_mutex_lock(&errchk)));
	printf("main: lock recursive again %s\n", name(pthread_mutex_lock(&rec)));
	printf("main: unlock recursive %s\n", name(pthread_mutex_unlock(&rec)));
	printf("main: unlock recursive %s\n", name(pthread_mutex_unlock(&rec)));
	printf("main: unlock errorcheck %s\n", name(pthread_mutex_unlock(&errchk)));
	printf("main: unlock rwlock %s\n", name(pthread_rwlock_unlock(&rw)));
	printf("main: unlock errorcheck again %s\n", name(pthread_mutex_unlock(&errchk)));
	return 0;
}
