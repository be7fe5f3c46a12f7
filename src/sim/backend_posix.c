/* The posix backend: one glibc pthread per simulation thread (the seeds'
 * PosixThreads and, with simcpus > 1, Parallel PosixThreads rows). Go posts
 * the thread's semaphore, Wait waits on it; a hand-off is a post and a wait,
 * two trips through the kernel. The kernel lock is a pthread mutex. */
#include "sim/kernel.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>

typedef struct posix_thread {
	pthread_t tid;
	sem_t go;
	int joinable;
} posix_thread_t;

static pthread_mutex_t klock = PTHREAD_MUTEX_INITIALIZER;
static sem_t done;

static inline posix_thread_t *bk(wsim_thread_t *t)
{
	return (posix_thread_t *)(void *)t->bk;
}

static void sem_wait_intr(sem_t *s)
{
	while (sem_wait(s) != 0)
		if (errno != EINTR)
			wsim_panic("sem_wait: errno %d", errno);
}

static void *entry(void *arg)
{
	wsim_thread_t *t = arg;
	sem_wait_intr(&bk(t)->go);
	wsim_thread_body(t);
	return NULL;
}

static int start(void)
{
	return sem_init(&done, 0, 0) ? errno : 0;
}

static void stop(void)
{
	sem_destroy(&done);
}

static int create(wsim_thread_t *t)
{
	posix_thread_t *b = bk(t);
	b->joinable = 0;
	if (sem_init(&b->go, 0, 0))
		return errno;
	pthread_attr_t a;
	int r = pthread_attr_init(&a);
	if (!r)
		r = pthread_attr_setstacksize(&a, wsim_k.stack_size);
	if (!r)
		r = pthread_create(&b->tid, &a, entry, t);
	pthread_attr_destroy(&a);
	if (r) {
		sem_destroy(&b->go);
		return r;
	}
	b->joinable = 1;
	return 0;
}

static void go(wsim_thread_t *t)
{
	sem_post(&bk(t)->go);
}

static void wait(wsim_thread_t *self)
{
	sem_wait_intr(&bk(self)->go);
}

static void switch_to(wsim_thread_t *self, wsim_thread_t *next)
{
	go(next);
	wait(self);
}

static void finish(wsim_thread_t *self, wsim_thread_t *next)
{
	if (next)
		go(next);
}

static void abort_self(wsim_thread_t *self)
{
	pthread_exit(NULL);
}

static void reap(wsim_thread_t *t)
{
	posix_thread_t *b = bk(t);
	if (!b->joinable)
		return;
	if (t->state != WSIM_COMPLETE)
		go(t); /* blocked or never ran: it ends itself (abort_self) */
	pthread_join(b->tid, NULL);
	sem_destroy(&b->go);
	b->joinable = 0;
}

static void lock(void)
{
	pthread_mutex_lock(&klock);
}

static void unlock(void)
{
	pthread_mutex_unlock(&klock);
}

static void run(wsim_thread_t *root)
{
	go(root);
	sem_wait_intr(&done);
}

static void end(void)
{
	sem_post(&done);
}

const wsim_backend_ops_t wsim_backend_posix = {
	.name = "posix",
	.max_simcpus = 1 << 30,
	.thread_size = sizeof(posix_thread_t),
	.cur_mode_parallel = WSIM_CUR_TLS,
	.start = start,
	.stop = stop,
	.create = create,
	.go = go,
	.wait = wait,
	.switch_to = switch_to,
	.finish = finish,
	.abort_self = abort_self,
	.reap = reap,
	.lock = lock,
	.unlock = unlock,
	.run = run,
	.end = end,
};
