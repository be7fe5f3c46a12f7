/* A library whose constructor uses pthreads: under LD_PRELOAD it runs
 * before libweft-pthread.so's own constructors (a program's libraries are
 * initialised before the preloaded one), as libgomp's does. Every call
 * must reach a working implementation then. */
#include <pthread.h>

static int result;

static void *plus_one(void *arg)
{
	return (void *)((long)arg + 1);
}

__attribute__((constructor)) static void early(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	if (pthread_mutex_lock(&m) != 0 || pthread_mutex_unlock(&m) != 0)
		return;
	if (!pthread_equal(pthread_self(), pthread_self()))
		return;
	pthread_t t;
	void *r;
	if (pthread_create(&t, NULL, plus_one, (void *)41) == 0 && pthread_join(t, &r) == 0)
		result = (int)(long)r;
}

int px_ctor_result(void)
{
	return result;
}
