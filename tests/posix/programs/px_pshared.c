/* Process-shared objects between a parent and its forked child, in a
 * MAP_SHARED mapping: semaphores (unnamed with pshared = 1, and named),
 * a mutex and condition variable taking turns, a barrier, an rwlock, and
 * trylock of mutexes the other process holds (EBUSY, for a recursive one
 * too), and cancellation of threads waiting on a shared condition variable
 * and semaphore. While the parent's main thread waits for the child in the kernel,
 * its other threads must go on: on one worker, a helper thread of the
 * parent is what lets the child post. Under weft these objects are
 * glibc's, used through weft's calls inside system call sections
 * (src/posix/pshared.c). The output must be glibc's. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { ROUNDS = 300 };

struct shared {
	sem_t ping, pong, helper_done;
	pthread_mutex_t m, held, held_rec;
	pthread_cond_t turn_cv;
	pthread_barrier_t bar;
	pthread_rwlock_t rw;
	int turn, count;
	atomic_int child_holds, parent_checked;
};

static struct shared *sh;

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void take_turns(int me)
{
	for (int i = 0; i < ROUNDS; i++) {
		pthread_mutex_lock(&sh->m);
		while (sh->turn != me)
			pthread_cond_wait(&sh->turn_cv, &sh->m);
		sh->count++;
		sh->turn = !me;
		pthread_cond_broadcast(&sh->turn_cv);
		pthread_mutex_unlock(&sh->m);
	}
}

static void child(const char *name)
{
	/* 1. Unnamed semaphores: ping-pong. */
	for (int i = 0; i < ROUNDS; i++) {
		sem_wait(&sh->ping);
		sem_post(&sh->pong);
	}
	/* 2. The parent's helper thread must run while its main waits. */
	sem_wait(&sh->helper_done);
	sem_post(&sh->pong);
	/* 3. Turns under a shared mutex and condition variable. */
	take_turns(1);
	/* 4. A barrier, many times. */
	for (int i = 0; i < ROUNDS; i++)
		pthread_barrier_wait(&sh->bar);
	/* 5. Hold the rwlock and two mutexes while the parent tries them. */
	pthread_rwlock_wrlock(&sh->rw);
	pthread_mutex_lock(&sh->held);
	pthread_mutex_lock(&sh->held_rec);
	atomic_store(&sh->child_holds, 1);
	while (!atomic_load(&sh->parent_checked))
		nap_ms(1);
	pthread_mutex_unlock(&sh->held_rec);
	pthread_mutex_unlock(&sh->held);
	pthread_rwlock_unlock(&sh->rw);
	pthread_barrier_wait(&sh->bar);
	/* 6. A named semaphore. */
	sem_t *n = sem_open(name, 0);
	if (n == SEM_FAILED)
		_exit(3);
	for (int i = 0; i < ROUNDS; i++)
		sem_post(n);
	sem_close(n);
	_exit(0);
}

static void unlock_m(void *arg)
{
	pthread_mutex_unlock(arg);
}

static void *cancelled_cond_waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&sh->m);
	pthread_cleanup_push(unlock_m, &sh->m);
	for (;;)
		pthread_cond_wait(&sh->turn_cv, &sh->m);
	pthread_cleanup_pop(1);
	return NULL;
}

static void *cancelled_sem_waiter(void *arg)
{
	(void)arg;
	for (;;)
		sem_wait(&sh->ping);
	return NULL;
}

static void *helper(void *arg)
{
	(void)arg;
	nap_ms(20);
	sem_post(&sh->helper_done);
	return NULL;
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	char name[64];
	snprintf(name, sizeof name, "/px_pshared_%d", (int)getpid());
	sem_unlink(name);
	sem_t *named = sem_open(name, O_CREAT | O_EXCL, 0600, 0);
	if (named == SEM_FAILED) {
		perror("sem_open");
		return 1;
	}

	sem_init(&sh->ping, 1, 0);
	sem_init(&sh->pong, 1, 0);
	sem_init(&sh->helper_done, 1, 0);
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&sh->m, &ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&sh->held, &ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&sh->held_rec, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
	pthread_cond_init(&sh->turn_cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_barrierattr_t ba;
	pthread_barrierattr_init(&ba);
	pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
	pthread_barrier_init(&sh->bar, &ba, 2);
	pthread_barrierattr_destroy(&ba);
	pthread_rwlockattr_t ra;
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setpshared(&ra, PTHREAD_PROCESS_SHARED);
	pthread_rwlock_init(&sh->rw, &ra);
	pthread_rwlockattr_destroy(&ra);
	int ps = 0;
	pthread_mutexattr_t q;
	pthread_mutexattr_init(&q);
	pthread_mutexattr_setpshared(&q, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_getpshared(&q, &ps);
	printf("mutexattr pshared: %s\n", ps == PTHREAD_PROCESS_SHARED ? "shared" : "private");
	pthread_mutexattr_destroy(&q);

	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0)
		child(name);

	for (int i = 0; i < ROUNDS; i++) {
		sem_post(&sh->ping);
		sem_wait(&sh->pong);
	}
	printf("semaphores: %d round trips with the child\n", ROUNDS);

	pthread_t h;
	pthread_create(&h, NULL, helper, NULL);
	sem_wait(&sh->pong); /* posted by the child once the helper ran */
	pthread_join(h, NULL);
	printf("helper: ran while main waited for the child\n");

	take_turns(0);
	for (int i = 0; i < ROUNDS; i++)
		pthread_barrier_wait(&sh->bar);
	/* The child took its last turn before its first barrier wait. */
	printf("turns: count %d after %d turns each\n", sh->count, ROUNDS);
	printf("barrier: %d cycles\n", ROUNDS);

	while (!atomic_load(&sh->child_holds))
		nap_ms(1);
	int e1 = pthread_rwlock_tryrdlock(&sh->rw);
	int e2 = pthread_rwlock_trywrlock(&sh->rw);
	int e3 = pthread_mutex_trylock(&sh->held);
	int e4 = pthread_mutex_trylock(&sh->held_rec);
	printf("held by the child: tryrdlock %s, trywrlock %s, trylock %s, recursive trylock %s\n",
	       strerror(e1), strerror(e2), strerror(e3), strerror(e4));
	atomic_store(&sh->parent_checked, 1);
	pthread_barrier_wait(&sh->bar);
	e1 = pthread_rwlock_rdlock(&sh->rw);
	e2 = pthread_rwlock_unlock(&sh->rw);
	e3 = pthread_mutex_lock(&sh->held);
	e4 = pthread_mutex_unlock(&sh->held);
	printf("released: rdlock %d unlock %d lock %d unlock %d\n", e1, e2, e3, e4);

	for (int i = 0; i < ROUNDS; i++)
		sem_wait(named);
	int v = -1;
	sem_getvalue(named, &v);
	printf("named semaphore: %d posts taken, value %d\n", ROUNDS, v);
	sem_close(named);
	sem_unlink(name);

	/* Cancellation of threads waiting on shared objects (both are
	 * cancellation points): the condition wait re-takes the mutex first. */
	pthread_t cv, sw;
	pthread_create(&cv, NULL, cancelled_cond_waiter, NULL);
	pthread_create(&sw, NULL, cancelled_sem_waiter, NULL);
	nap_ms(50);
	pthread_cancel(cv);
	pthread_cancel(sw);
	void *r1, *r2;
	pthread_join(cv, &r1);
	pthread_join(sw, &r2);
	printf("cancelled: cond waiter %s (mutex %s), sem waiter %s\n",
	       r1 == PTHREAD_CANCELED ? "yes" : "no",
	       pthread_mutex_trylock(&sh->m) == 0 ? "free again" : "still held",
	       r2 == PTHREAD_CANCELED ? "yes" : "no");
	pthread_mutex_unlock(&sh->m);

	int status = 0;
	waitpid(pid, &status, 0);
	printf("child: exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	printf("destroy: %d %d %d %d %d\n", pthread_barrier_destroy(&sh->bar),
	       pthread_rwlock_destroy(&sh->rw), pthread_cond_destroy(&sh->turn_cv),
	       pthread_mutex_destroy(&sh->m), sem_destroy(&sh->ping));
	return 0;
}
