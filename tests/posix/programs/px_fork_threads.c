/* fork in a program with threads running, as POSIX describes it: the child's
 * only thread is the one that forked, and the child may use threads again.
 *
 * Each round, with busy threads running (they lock, wait on a condition
 * variable and a semaphore, sleep) and one of them blocked on a mutex that
 * the forking thread holds:
 *   - the forking thread (main in the even rounds, another thread in the
 *     odd ones) forks while holding a mutex that its pthread_atfork prepare
 *     handler locked (the child's handler unlocks it) and one with waiters;
 *   - the child checks that it runs as the same thread with the same
 *     thread-locals, that its CPU time starts at zero, that the mutexes it held unlock and relock and a
 *     condition variable that gone threads waited on can be signalled, then
 *     creates threads that hand a token round a ring through mutex,
 *     condition variable and semaphore, joins them, forks a grandchild
 *     that does the same, and exits with a status it computed;
 *   - the parent checks the status, and that its own threads went on.
 * Last, a child whose forking thread is not main ends by pthread_exit of
 * that thread: the process ends when its last thread does.
 * Prints the same lines under glibc and every weft mode. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BUSY 4
#define RING 5
#define LAPS 200
#define CHECK(c)                                                                           \
	do {                                                                               \
		if (!(c)) {                                                                \
			fprintf(stderr, "%d: line %d: %s\n", (int)getpid(), __LINE__, #c); \
			_exit(90);                                                         \
		}                                                                          \
	} while (0)

static __thread int tv;
static pthread_mutex_t atfork_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER; /* the forker holds it; busy[0] waits */
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static sem_t sem;
static volatile int stop;
static long busy_work[BUSY];
static int prepared, in_child, in_parent;

static void at_prepare(void)
{
	pthread_mutex_lock(&atfork_m);
	prepared++;
}
static void at_parent(void)
{
	in_parent++;
	pthread_mutex_unlock(&atfork_m);
}
static void at_child(void)
{
	in_child++;
	pthread_mutex_unlock(&atfork_m);
}

static void *busy(void *arg)
{
	long i = (long)arg;
	while (!stop) {
		if (i == 0) {
			pthread_mutex_lock(&held);
			pthread_mutex_unlock(&held);
			usleep(50); /* not a spin: it would hold a lone worker */
		} else if (i == 1) {
			pthread_mutex_lock(&m);
			struct timespec t;
			clock_gettime(CLOCK_REALTIME, &t);
			t.tv_nsec += 200000;
			if (t.tv_nsec >= 1000000000) {
				t.tv_sec++;
				t.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&cv, &m, &t);
			pthread_mutex_unlock(&m);
		} else if (i == 2) {
			struct timespec t;
			clock_gettime(CLOCK_REALTIME, &t);
			t.tv_sec++;
			sem_timedwait(&sem, &t);
		} else {
			usleep(100);
		}
		busy_work[i]++;
	}
	return NULL;
}

/* A token handed round RING threads LAPS times: a mutex, a condition
 * variable and a semaphore per hop. Returns the count it reached. */
static pthread_mutex_t ring_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ring_cv = PTHREAD_COND_INITIALIZER;
static sem_t ring_sem;
static int turn;
static long hops;

static void *ring_member(void *arg)
{
	int me = (int)(long)arg;
	for (int lap = 0; lap < LAPS; lap++) {
		pthread_mutex_lock(&ring_m);
		while (turn != me)
			pthread_cond_wait(&ring_cv, &ring_m);
		hops++;
		turn = (me + 1) % RING;
		pthread_cond_broadcast(&ring_cv);
		pthread_mutex_unlock(&ring_m);
		sem_post(&ring_sem);
	}
	return NULL;
}

static long ring(void)
{
	pthread_t t[RING];
	turn = 0;
	hops = 0;
	CHECK(sem_init(&ring_sem, 0, 0) == 0);
	for (long i = 0; i < RING; i++)
		CHECK(pthread_create(&t[i], NULL, ring_member, (void *)i) == 0);
	for (int i = 0; i < RING * LAPS; i++)
		while (sem_wait(&ring_sem) != 0)
			CHECK(errno == EINTR);
	for (int i = 0; i < RING; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	sem_destroy(&ring_sem);
	return hops;
}

/* The child: the forking thread, alone. Returns its exit status. */
static int child(pthread_t forker, int mark)
{
	CHECK(pthread_equal(pthread_self(), forker));
	CHECK(tv == mark);
	CHECK(in_child == 1 && prepared == 1);
	/* Its CPU time starts at zero (the parent's main spent 30 ms first). */
	struct timespec cpu;
	CHECK(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0);
	CHECK(cpu.tv_sec == 0 && cpu.tv_nsec < 25000000);
	/* Inherited locked by this thread: unlocks, and relocks. */
	CHECK(pthread_mutex_unlock(&held) == 0);
	CHECK(pthread_mutex_lock(&held) == 0);
	CHECK(pthread_mutex_unlock(&held) == 0);
	CHECK(pthread_mutex_trylock(&atfork_m) == 0);
	CHECK(pthread_mutex_unlock(&atfork_m) == 0);
	/* A condition variable a gone thread waited on (m may be held by
	 * that thread, for good: not touched). */
	CHECK(pthread_cond_broadcast(&cv) == 0);
	CHECK(pthread_cond_signal(&cv) == 0);
	long h = ring();
	CHECK(h == RING * LAPS);
	/* And again, one generation down. */
	fflush(stdout);
	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0) {
		CHECK(pthread_equal(pthread_self(), forker));
		_exit(ring() == RING * LAPS ? 7 : 8);
	}
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7);
	return (int)(h % 100) + mark; /* 0 + mark */
}

static void round_of(int r)
{
	tv = 100 + r;
	pthread_t self = pthread_self();
	struct timespec cpu = {0, 0};
	while (cpu.tv_sec == 0 && cpu.tv_nsec < 30000000) /* CPU time the child must not see */
		CHECK(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0);
	prepared = in_child = in_parent = 0;
	CHECK(pthread_mutex_lock(&held) == 0);
	usleep(2000); /* busy[0] waits for held now */
	fflush(stdout);
	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0)
		_exit(child(self, tv));
	CHECK(in_parent == 1 && prepared == 1);
	CHECK(pthread_mutex_unlock(&held) == 0);
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	if (!WIFEXITED(st))
		printf("round %d: child ended by signal %d\n", r,
		       WIFSIGNALED(st) ? WTERMSIG(st) : -1);
	else
		printf("round %d: child status %d\n", r, WEXITSTATUS(st));
}

static void *forking_thread(void *arg)
{
	round_of((int)(long)arg);
	return NULL;
}

/* The forking thread is not main and ends by pthread_exit: the child ends
 * with status 0 when its last thread is gone. */
static void *exits_in_child(void *arg)
{
	(void)arg;
	fflush(stdout);
	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0) {
		CHECK(ring() == RING * LAPS);
		pthread_exit(NULL);
	}
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	printf("pthread_exit child: %s %d\n", WIFEXITED(st) ? "status" : "signal",
	       WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	return NULL;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	CHECK(sem_init(&sem, 0, 0) == 0);
	CHECK(pthread_atfork(at_prepare, at_parent, at_child) == 0);
	pthread_t b[BUSY];
	for (long i = 0; i < BUSY; i++)
		CHECK(pthread_create(&b[i], NULL, busy, (void *)i) == 0);
	for (int r = 0; r < 6; r++) {
		if (r % 2 == 0) {
			round_of(r);
		} else {
			pthread_t t;
			CHECK(pthread_create(&t, NULL, forking_thread, (void *)(long)r) == 0);
			CHECK(pthread_join(t, NULL) == 0);
		}
		sem_post(&sem);
	}
	pthread_t t;
	CHECK(pthread_create(&t, NULL, exits_in_child, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	stop = 1;
	sem_post(&sem);
	for (int i = 0; i < BUSY; i++)
		CHECK(pthread_join(b[i], NULL) == 0);
	for (int i = 0; i < BUSY; i++)
		if (busy_work[i] == 0)
			printf("busy thread %d never ran\n", i);
	printf("parent: done\n");
	return 0;
}
