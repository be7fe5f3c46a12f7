/* glibc pthreads' synchronization: the baseline of the sync rows (sync.c).
 * Each function is the pthread twin of a weft body in sync.c, written the
 * same way so the two differ only in the library they call. See peers.h. */
#include "peers.h"
#include "report.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* Start fn(arg) on a thread pinned to cpu (-1: not pinned). */
static int start_pinned(pthread_t *t, int cpu, void *(*fn)(void *), void *arg)
{
	pthread_attr_t a;
	cpu_set_t set;
	int rc;

	pthread_attr_init(&a);
	if (cpu >= 0) {
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		pthread_attr_setaffinity_np(&a, sizeof set, &set);
	}
	rc = pthread_create(t, &a, fn, arg);
	pthread_attr_destroy(&a);
	return rc;
}

int wb_pthread_mutex_uncontended(long n, int64_t *elapsed_ns)
{
	pthread_mutex_t m;
	int rc = pthread_mutex_init(&m, NULL);

	if (rc)
		return rc;
	int64_t t0 = wb_now_ns();
	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
	}
	*elapsed_ns = wb_now_ns() - t0;
	return pthread_mutex_destroy(&m);
}

/* Two players hand a turn back and forth; `turn` is guarded by m and each
 * player waits for its turn on its own condition variable. */
struct cond_pp {
	pthread_mutex_t m;
	pthread_cond_t c[2];
	int turn;
	long n;
	int quit; /* the second thread could not start: the first gives up */
};

struct cond_player {
	struct cond_pp *pp;
	int me;
};

static void *cond_player(void *p)
{
	struct cond_player *pl = p;
	struct cond_pp *pp = pl->pp;
	int me = pl->me;

	pthread_mutex_lock(&pp->m);
	for (long i = 0; i < pp->n; i++) {
		while (pp->turn != me && !pp->quit)
			pthread_cond_wait(&pp->c[me], &pp->m);
		if (pp->quit)
			break;
		pp->turn = 1 - me;
		pthread_cond_signal(&pp->c[1 - me]);
	}
	pthread_mutex_unlock(&pp->m);
	return NULL;
}

int wb_pthread_cond_pingpong(long n, int cpu_a, int cpu_b, int64_t *elapsed_ns)
{
	struct cond_pp pp = {.n = n};
	struct cond_player pl[2] = {{&pp, 0}, {&pp, 1}};
	pthread_t t[2];
	int rc;

	pthread_mutex_init(&pp.m, NULL);
	pthread_cond_init(&pp.c[0], NULL);
	pthread_cond_init(&pp.c[1], NULL);
	int64_t t0 = wb_now_ns();
	rc = start_pinned(&t[0], cpu_a, cond_player, &pl[0]);
	if (rc == 0) {
		rc = start_pinned(&t[1], cpu_b, cond_player, &pl[1]);
		if (rc) {
			pthread_mutex_lock(&pp.m);
			pp.quit = 1;
			pthread_cond_signal(&pp.c[0]);
			pthread_mutex_unlock(&pp.m);
			pthread_join(t[0], NULL);
		} else {
			pthread_join(t[0], NULL);
			pthread_join(t[1], NULL);
			*elapsed_ns = wb_now_ns() - t0;
		}
	}
	pthread_cond_destroy(&pp.c[0]);
	pthread_cond_destroy(&pp.c[1]);
	pthread_mutex_destroy(&pp.m);
	return rc;
}

/* Semaphore ping-pong: player 0 posts s[1] and waits on s[0]; player 1
 * waits on s[1] and posts s[0]. */
struct sem_pp {
	sem_t s[2];
	long n;
};

struct sem_player {
	struct sem_pp *pp;
	int me;
};

static void *sem_player(void *p)
{
	struct sem_player *pl = p;
	struct sem_pp *pp = pl->pp;

	for (long i = 0; i < pp->n; i++) {
		if (pl->me == 0) {
			sem_post(&pp->s[1]);
			while (sem_wait(&pp->s[0]) != 0)
				; /* EINTR */
		} else {
			while (sem_wait(&pp->s[1]) != 0)
				;
			sem_post(&pp->s[0]);
		}
	}
	return NULL;
}

int wb_pthread_sem_pingpong(long n, int cpu_a, int cpu_b, int64_t *elapsed_ns)
{
	struct sem_pp pp = {.n = n};
	struct sem_player pl[2] = {{&pp, 0}, {&pp, 1}};
	pthread_t t[2];
	int rc;

	sem_init(&pp.s[0], 0, 0);
	sem_init(&pp.s[1], 0, 0);
	int64_t t0 = wb_now_ns();
	/* Player 1 first: if player 0 cannot start, nobody is left waiting
	 * except player 1, which a burst of posts lets go. */
	rc = start_pinned(&t[1], cpu_b, sem_player, &pl[1]);
	if (rc == 0) {
		rc = start_pinned(&t[0], cpu_a, sem_player, &pl[0]);
		if (rc) {
			for (long i = 0; i < n; i++)
				sem_post(&pp.s[1]);
			pthread_join(t[1], NULL);
		} else {
			pthread_join(t[0], NULL);
			pthread_join(t[1], NULL);
			*elapsed_ns = wb_now_ns() - t0;
		}
	}
	sem_destroy(&pp.s[0]);
	sem_destroy(&pp.s[1]);
	return rc;
}

/* Many threads hammer one mutex: lock, a tiny critical section, unlock.
 * They start together (after all are created) from a gate. */
struct hammer {
	pthread_mutex_t m;
	pthread_spinlock_t sl; /* instead of m: WB_HAMMER_SPIN */
	int kind;              /* WB_HAMMER_* */
	long counter;          /* guarded by m */
	uint64_t mix;          /* guarded by m: a few ns of work inside */
	long per_thread;
	atomic_int ready, go;
};

static void *hammer_thread(void *p)
{
	struct hammer *h = p;

	atomic_fetch_add(&h->ready, 1);
	while (atomic_load_explicit(&h->go, memory_order_acquire) == 0)
		sched_yield();
	if (atomic_load(&h->go) < 0)
		return NULL;
	if (h->kind == WB_HAMMER_YIELD) {
		for (long i = 0; i < h->per_thread; i++)
			sched_yield();
		__atomic_fetch_add(&h->counter, h->per_thread, __ATOMIC_RELAXED);
		return NULL;
	}
	for (long i = 0; i < h->per_thread; i++) {
		if (h->kind == WB_HAMMER_SPIN)
			pthread_spin_lock(&h->sl);
		else
			pthread_mutex_lock(&h->m);
		h->counter++;
		h->mix = h->mix * 6364136223846793005u + (uint64_t)h->counter;
		if (h->kind == WB_HAMMER_SPIN)
			pthread_spin_unlock(&h->sl);
		else
			pthread_mutex_unlock(&h->m);
	}
	return NULL;
}

int wb_pthread_mutex_hammer(int threads, long per_thread, const int *cpus, int kind, long *counter,
			    int64_t *elapsed_ns)
{
	struct hammer h = {.per_thread = per_thread, .kind = kind};
	pthread_t *t = calloc((size_t)threads, sizeof *t);
	int rc = 0, made = 0;

	if (!t)
		return ENOMEM;
	pthread_mutex_init(&h.m, NULL);
	pthread_spin_init(&h.sl, PTHREAD_PROCESS_PRIVATE);
	atomic_init(&h.ready, 0);
	atomic_init(&h.go, 0);
	for (; made < threads; made++)
		if ((rc = start_pinned(&t[made], cpus ? cpus[made] : -1, hammer_thread, &h)) != 0)
			break;
	while (atomic_load(&h.ready) < made)
		sched_yield();
	int64_t t0 = wb_now_ns();
	atomic_store_explicit(&h.go, rc ? -1 : 1, memory_order_release);
	for (int i = 0; i < made; i++)
		pthread_join(t[i], NULL);
	*elapsed_ns = wb_now_ns() - t0;
	*counter = h.counter;
	pthread_mutex_destroy(&h.m);
	pthread_spin_destroy(&h.sl);
	free(t);
	return rc;
}

static void *sleeper(void *p)
{
	const struct timespec *d = p;
	struct timespec left = *d;

	while (nanosleep(&left, &left) != 0 && errno == EINTR)
		;
	return NULL;
}

int wb_pthread_sleep_many(long n, long sleep_ns, long *created, int64_t *elapsed_ns)
{
	struct timespec d = {sleep_ns / 1000000000, sleep_ns % 1000000000};
	pthread_t *t = calloc((size_t)n, sizeof *t);
	long made = 0;
	int rc = 0;

	if (!t)
		return ENOMEM;
	int64_t t0 = wb_now_ns();
	for (; made < n; made++)
		if ((rc = pthread_create(&t[made], NULL, sleeper, &d)) != 0)
			break;
	for (long i = 0; i < made; i++)
		pthread_join(t[i], NULL);
	*elapsed_ns = wb_now_ns() - t0;
	*created = made;
	free(t);
	return rc;
}

/* n threads block on one semaphore; once all have started, n posts release
 * them and all are joined. */
struct sem_many {
	sem_t s;
	atomic_long started;
};

static void *sem_waiter(void *p)
{
	struct sem_many *sm = p;

	atomic_fetch_add(&sm->started, 1);
	while (sem_wait(&sm->s) != 0)
		;
	return NULL;
}

int wb_pthread_sem_many(long n, long *created, int64_t *block_ns, int64_t *elapsed_ns)
{
	struct sem_many sm;
	pthread_t *t = calloc((size_t)n, sizeof *t);
	long made = 0;
	int rc = 0;

	if (!t)
		return ENOMEM;
	sem_init(&sm.s, 0, 0);
	atomic_init(&sm.started, 0);
	int64_t t0 = wb_now_ns();
	for (; made < n; made++)
		if ((rc = pthread_create(&t[made], NULL, sem_waiter, &sm)) != 0)
			break;
	while (atomic_load(&sm.started) < made)
		sched_yield();
	*block_ns = wb_now_ns() - t0;
	for (long i = 0; i < made; i++)
		sem_post(&sm.s);
	for (long i = 0; i < made; i++)
		pthread_join(t[i], NULL);
	*elapsed_ns = wb_now_ns() - t0;
	*created = made;
	sem_destroy(&sm.s);
	free(t);
	return rc;
}
