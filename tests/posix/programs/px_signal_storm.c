/* A signal storm: handlers that call sem_post run while threads wait in
 * every kind of blocking call.
 *
 *   - Two senders send SIGUSR1 and SIGUSR2 to the process (kill), each
 *     waiting for its handler's sem_post before the next kill. Only the
 *     waiters take them; main, the senders and the pacer block both.
 *   - A third sender sends SIGRTMIN to each waiter in turn (pthread_kill),
 *     and its handler checks that it runs in the thread aimed at.
 *   - The waiters each loop in one blocking call until the senders are
 *     done: a condition wait with a 1 microsecond timeout (after the Open
 *     POSIX suite's pthread_cond_timedwait/4-3: it spends most of its time
 *     inside the threads library, so the handlers interrupt it there), an
 *     untimed condition wait, sem_wait, a mutex and a write lock that the
 *     pacer holds most of the time, a barrier, nanosleep, pthread_join of a
 *     thread that sleeps a moment.
 *   - A pacer keeps every one of those calls returning now and then: it
 *     posts, broadcasts, lets go of the mutex and the lock a moment; a
 *     partner meets the barrier after a short sleep.
 * Every kill's handler must run exactly once per kill (counted), every
 * call must return only what POSIX allows it to return under signals, and
 * nothing may hang. Under weft a handler that ran inside weft's own queue
 * operations re-entered them (a lost ULT, a "bad state move" abort), and a
 * signal marked pending just before a thread entered a cancellable wait
 * was never delivered; both hung this program. Bounded: KILLS per sender. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int KILLS = 2000, DIRECTS = 1000; /* argv[1]: kills per process sender */

enum kind { K_TIMEDWAIT, K_CONDWAIT, K_SEM, K_MUTEX, K_WRLOCK, K_BARRIER, K_SLEEP, K_JOIN, K_N };
static const char *const names[K_N] = {"cond_timedwait", "cond_wait",    "sem_wait",  "mutex_lock",
				       "rwlock_wrlock",  "barrier_wait", "nanosleep", "join"};

static sem_t posted[3]; /* a handler's sem_post, one per sender */
static atomic_int senders_done;
static atomic_long handled[3], misdirected;
static atomic_int direct_to = -1; /* the waiter the direct sender aims at */
static sigset_t storm;            /* SIGUSR1, SIGUSR2, SIGRTMIN */
static atomic_int bar_last[2];    /* the barrier's waiter stops after this round */

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER; /* the condition's */
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t hot = PTHREAD_MUTEX_INITIALIZER; /* contended */
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_barrier_t bar;
static sem_t paced;
static pthread_t waiters[K_N];
static atomic_long unexpected[K_N];

static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&handled[0], 1);
	sem_post(&posted[0]);
}

static void on_usr2(int sig)
{
	(void)sig;
	atomic_fetch_add(&handled[1], 1);
	sem_post(&posted[1]);
}

static void on_direct(int sig)
{
	(void)sig;
	int k = atomic_load(&direct_to);
	if (k < 0 || !pthread_equal(pthread_self(), waiters[k]))
		atomic_fetch_add(&misdirected, 1);
	atomic_fetch_add(&handled[2], 1);
	sem_post(&posted[2]);
}

static int done(void)
{
	return atomic_load(&senders_done) == 3;
}

static void wait_posted(int i)
{
	while (sem_wait(&posted[i]) != 0)
		if (errno != EINTR)
			atomic_fetch_add(&unexpected[0], 1);
}

static void *sender(void *arg)
{
	int i = (int)(long)arg;
	for (int n = 0; n < KILLS; n++) {
		wait_posted(i);
		kill(getpid(), i ? SIGUSR2 : SIGUSR1);
	}
	wait_posted(i); /* the last kill's handler */
	atomic_fetch_add(&senders_done, 1);
	return NULL;
}

static void *direct_sender(void *arg)
{
	(void)arg;
	for (int n = 0; n < DIRECTS; n++) {
		wait_posted(2);
		int k = n % K_N;
		atomic_store(&direct_to, k);
		pthread_kill(waiters[k], SIGRTMIN);
	}
	wait_posted(2);
	atomic_fetch_add(&senders_done, 1);
	return NULL;
}

static void nap_us(long us)
{
	struct timespec t = {0, us * 1000};
	while (nanosleep(&t, &t) != 0 && errno == EINTR)
		;
}

static void *napper(void *arg)
{
	nap_us(50);
	return arg;
}

/* The pacer's rounds: a lock waiter takes the lock once per round, so
 * that it waits for the pacer's hold rather than looping on a free lock
 * (a loop that would keep its worker where nothing preempts: sanitizer
 * builds). */
static atomic_long rounds;

static void next_round(long *seen)
{
	while (atomic_load(&rounds) == *seen && !done())
		sched_yield();
	*seen = atomic_load(&rounds);
}

static void note(int k, int ok)
{
	if (!ok)
		atomic_fetch_add(&unexpected[k], 1);
}

static void *waiter(void *arg)
{
	int k = (int)(long)arg;
	long seen = -1;
	pthread_sigmask(SIG_UNBLOCK, &storm, NULL);
	for (int round = 0; !done() || k == K_BARRIER; round++) {
		int r;
		switch (k) {
		case K_TIMEDWAIT: {
			struct timespec t;
			clock_gettime(CLOCK_REALTIME, &t);
			t.tv_nsec += 1000;
			if (t.tv_nsec >= 1000000000) {
				t.tv_sec++;
				t.tv_nsec -= 1000000000;
			}
			pthread_mutex_lock(&m);
			r = pthread_cond_timedwait(&c, &m, &t);
			pthread_mutex_unlock(&m);
			note(k, r == 0 || r == ETIMEDOUT);
			break;
		}
		case K_CONDWAIT:
			/* done() under m: the pacer's last broadcast is under m. */
			pthread_mutex_lock(&m);
			r = done() ? 0 : pthread_cond_wait(&c, &m);
			pthread_mutex_unlock(&m);
			note(k, r == 0);
			break;
		case K_SEM:
			r = sem_wait(&paced);
			note(k, r == 0 || errno == EINTR);
			break;
		case K_MUTEX:
			r = pthread_mutex_lock(&hot);
			note(k, r == 0);
			if (r == 0)
				pthread_mutex_unlock(&hot);
			next_round(&seen);
			break;
		case K_WRLOCK:
			r = pthread_rwlock_wrlock(&rw);
			note(k, r == 0);
			if (r == 0)
				pthread_rwlock_unlock(&rw);
			next_round(&seen);
			break;
		case K_BARRIER: {
			/* Whether this round is the last, told to the partner
			 * before the barrier (two slots: the partner may still
			 * read the last round's). */
			int last = done();
			atomic_store(&bar_last[round & 1], last);
			r = pthread_barrier_wait(&bar);
			note(k, r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
			if (last)
				return NULL;
			break;
		}
		case K_SLEEP: {
			struct timespec t = {0, 50000};
			r = nanosleep(&t, NULL);
			note(k, r == 0 || errno == EINTR);
			break;
		}
		case K_JOIN: {
			pthread_t t;
			r = pthread_create(&t, NULL, napper, NULL);
			note(k, r == 0);
			if (r == 0)
				note(k, pthread_join(t, NULL) == 0);
			break;
		}
		}
	}
	return NULL;
}

static void *partner(void *arg)
{
	(void)arg;
	for (int round = 0;; round++) {
		nap_us(20);
		pthread_barrier_wait(&bar);
		if (atomic_load(&bar_last[round & 1]))
			return NULL;
	}
}

/* Keeps every waiter's call returning now and then. */
static void *pacer(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&hot);
	pthread_rwlock_rdlock(&rw);
	while (!done()) {
		sem_post(&paced);
		pthread_mutex_lock(&m);
		pthread_cond_broadcast(&c);
		pthread_mutex_unlock(&m);
		nap_us(50);
		/* A moment for the lock waiters, then the locks again. */
		pthread_mutex_unlock(&hot);
		pthread_rwlock_unlock(&rw);
		nap_us(5);
		pthread_mutex_lock(&hot);
		pthread_rwlock_rdlock(&rw);
		atomic_fetch_add(&rounds, 1);
	}
	pthread_rwlock_unlock(&rw);
	pthread_mutex_unlock(&hot);
	/* The waiters see done() at their next return: one more of each. */
	sem_post(&paced);
	pthread_mutex_lock(&m);
	pthread_cond_broadcast(&c);
	pthread_mutex_unlock(&m);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1 && atoi(argv[1]) > 0) {
		KILLS = atoi(argv[1]);
		DIRECTS = KILLS / 2;
	}
	sigemptyset(&storm);
	sigaddset(&storm, SIGUSR1);
	sigaddset(&storm, SIGUSR2);
	sigaddset(&storm, SIGRTMIN);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_usr2;
	sigaction(SIGUSR2, &sa, NULL);
	sa.sa_handler = on_direct;
	sigaction(SIGRTMIN, &sa, NULL);
	/* Every thread made from here on starts with all three blocked. */
	pthread_sigmask(SIG_BLOCK, &storm, NULL);
	for (int i = 0; i < 3; i++)
		sem_init(&posted[i], 0, 1);
	sem_init(&paced, 0, 0);
	pthread_barrier_init(&bar, NULL, 2);
	for (long k = 0; k < K_N; k++)
		pthread_create(&waiters[k], NULL, waiter, (void *)k);
	pthread_t p, b, s[3];
	pthread_create(&p, NULL, pacer, NULL);
	pthread_create(&b, NULL, partner, NULL);
	for (long i = 0; i < 2; i++)
		pthread_create(&s[i], NULL, sender, (void *)i);
	pthread_create(&s[2], NULL, direct_sender, NULL);
	for (int i = 0; i < 3; i++)
		pthread_join(s[i], NULL);
	pthread_join(p, NULL);
	pthread_join(b, NULL);
	for (int k = 0; k < K_N; k++)
		pthread_join(waiters[k], NULL);
	printf("storm: SIGUSR1 handled %ld of %d, SIGUSR2 handled %ld of %d, pthread_kill's "
	       "handled %ld of %d, %ld in a thread not aimed at\n",
	       atomic_load(&handled[0]), KILLS, atomic_load(&handled[1]), KILLS,
	       atomic_load(&handled[2]), DIRECTS, atomic_load(&misdirected));
	for (int k = 0; k < K_N; k++)
		printf("%s: %s\n", names[k],
		       atomic_load(&unexpected[k]) ? "an unexpected result" : "as POSIX allows");
	return 0;
}
