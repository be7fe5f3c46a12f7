/* A library that registers fork handlers from its constructor, which under
 * LD_PRELOAD runs before libweft-pthread.so's (a program's libraries are
 * initialised before the preloaded one). Its prepare handler takes a mutex
 * another thread may hold, so it may have to wait for that thread; its
 * child handler makes a thread. Both need the threads of the process to
 * work when they run, as on glibc. */
#include <pthread.h>

static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;
static char seq[8];
static int n_seq;
static int child_create = -1;

static void *plus_one(void *arg)
{
	return (void *)((long)arg + 1);
}

static void prepare(void)
{
	pthread_mutex_lock(&lib_lock);
	seq[n_seq++] = 'p';
}

static void parent(void)
{
	seq[n_seq++] = 'P';
	pthread_mutex_unlock(&lib_lock);
}

static void child(void)
{
	seq[n_seq++] = 'c';
	pthread_mutex_unlock(&lib_lock);
	pthread_t t;
	void *r = NULL;
	child_create = pthread_create(&t, NULL, plus_one, (void *)41);
	if (child_create == 0 && (pthread_join(t, &r) != 0 || r != (void *)42))
		child_create = -2;
}

__attribute__((constructor)) static void early(void)
{
	pthread_atfork(prepare, parent, child);
}

/* The library's lock, for the program to hold across a fork. */
pthread_mutex_t *px_atfork_lock(void)
{
	return &lib_lock;
}

/* What the handlers did in this process: "pc" in a child, "pP" in its
 * parent; and what pthread_create returned in the child's handler. */
const char *px_atfork_seq(int *create)
{
	*create = child_create;
	seq[n_seq] = 0;
	return seq;
}
