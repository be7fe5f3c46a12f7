/* weft_cond_*: signal and broadcast reaching ULTs and foreign pthreads, the
 * mutex held again whenever a wait returns, timed waits on the cond's clock
 * and on an explicit one, errors, destroy while waited on, and a
 * producer/consumer queue where no item may be lost or duplicated.
 *
 * Waiters use errorcheck mutexes where possible so that "m is held again"
 * can be checked directly: a relock by the waiter must return EDEADLK. Every
 * test initialises the runtime and shuts it down. */
#include "harness.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NS_PER_S 1000000000LL
#define MS       1000000LL

/* The time on clock ns nanoseconds from now (ns may be negative). */
static struct timespec deadline_in(clockid_t clock, long long ns)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	long long t = (long long)ts.tv_sec * NS_PER_S + ts.tv_nsec + ns;
	ts.tv_sec = t / NS_PER_S;
	ts.tv_nsec = t % NS_PER_S;
	return ts;
}

/* How far clock is past ts (negative: ts is still ahead). */
static long long ns_past(clockid_t clock, const struct timespec *ts)
{
	struct timespec now;
	clock_gettime(clock, &now);
	return (long long)(now.tv_sec - ts->tv_sec) * NS_PER_S + (now.tv_nsec - ts->tv_nsec);
}

/* A call that timed out at deadline ts returned neither early nor very late. */
#define WT_RETURNED_AFTER(clock, ts)                         \
	do {                                                 \
		long long wt_late_ = ns_past((clock), (ts)); \
		WT_CMP(wt_late_, >=, 0);                     \
		WT_CMP(wt_late_, <, 2 * NS_PER_S);           \
	} while (0)

/* Run fn(arg) in a new pthread and wait for it without blocking the worker. */
static void *in_pthread(void *(*fn)(void *), void *arg)
{
	struct wt_pthread p;
	wt_pthread_start(&p, fn, arg);
	return wt_pthread_join(&p);
}

/* Run fn(arg) in a ULT on the other worker (or unbound with one worker). */
static void *in_ult(void *(*fn)(void *), void *arg)
{
	int w = weft_num_workers() > 1 ? 1 : -1;
	return wt_join(wt_spawn_on(w, fn, arg));
}

static void errorcheck_init(weft_mutex_t *m)
{
	weft_mutexattr_t a;
	WT_OK(weft_mutexattr_init(&a));
	WT_OK(weft_mutexattr_settype(&a, WEFT_MUTEX_ERRORCHECK));
	WT_OK(weft_mutex_init(m, &a));
	WT_OK(weft_mutexattr_destroy(&a));
}

static void cond_init_clock(weft_cond_t *c, clockid_t clock)
{
	weft_condattr_t a;
	WT_OK(weft_condattr_init(&a));
	WT_OK(weft_condattr_setclock(&a, clock));
	WT_OK(weft_cond_init(c, &a));
	WT_OK(weft_condattr_destroy(&a));
}

static void *trylock_result(void *m)
{
	int r = weft_mutex_trylock(m);
	if (r == 0)
		WT_OK(weft_mutex_unlock(m));
	return (void *)(intptr_t)r;
}

/* Start `ults` ULTs (bound round-robin to the workers, every third unbound)
 * and `pthreads` foreign threads running fn(arg). */
enum { MAX_THREADS = 64 };
struct crowd {
	weft_t ults[MAX_THREADS];
	struct wt_pthread p[MAX_THREADS];
	int nults, npthreads;
};

static void crowd_start(struct crowd *k, int ults, int pthreads, void *(*fn)(void *), void *arg)
{
	int nw = weft_num_workers();
	k->nults = ults;
	k->npthreads = pthreads;
	for (int i = 0; i < ults; i++)
		k->ults[i] = i % 3 == 2 ? wt_spawn(NULL, fn, arg) : wt_spawn_on(i % nw, fn, arg);
	for (int i = 0; i < pthreads; i++)
		wt_pthread_start(&k->p[i], fn, arg);
}

static void crowd_join(struct crowd *k)
{
	for (int i = 0; i < k->nults; i++)
		wt_join(k->ults[i]);
	for (int i = 0; i < k->npthreads; i++)
		wt_pthread_join(&k->p[i]);
}

/* Lock m, read *v, unlock (for polling shared state without a data race). */
static int read_locked(weft_mutex_t *m, const int *v)
{
	WT_OK(weft_mutex_lock(m));
	int r = *v;
	WT_OK(weft_mutex_unlock(m));
	return r;
}

#define WAIT_LOCKED(m, expr, seconds)                                                              \
	do {                                                                                       \
		uint64_t wl_deadline_ = wt_now_ns() + (seconds)*NS_PER_S;                          \
		for (;;) {                                                                         \
			WT_OK(weft_mutex_lock(m));                                                 \
			bool wl_ok_ = (expr);                                                      \
			WT_OK(weft_mutex_unlock(m));                                               \
			if (wl_ok_)                                                                \
				break;                                                             \
			if (wt_now_ns() > wl_deadline_)                                            \
				fail_msg("timed out after %d s waiting for %s", (seconds), #expr); \
			weft_yield();                                                              \
		}                                                                                  \
	} while (0)

/* ---- attributes and initialisation --------------------------------------- */

static void test_condattr_clock(void **state)
{
	weft_condattr_t a;
	clockid_t c = -5;
	WT_OK(weft_condattr_init(&a));
	WT_OK(weft_condattr_getclock(&a, &c));
	WT_EQ(c, CLOCK_REALTIME);
	WT_OK(weft_condattr_setclock(&a, CLOCK_MONOTONIC));
	WT_OK(weft_condattr_getclock(&a, &c));
	WT_EQ(c, CLOCK_MONOTONIC);
	WT_ERR(weft_condattr_setclock(&a, CLOCK_PROCESS_CPUTIME_ID), EINVAL);
	WT_ERR(weft_condattr_setclock(&a, CLOCK_THREAD_CPUTIME_ID), EINVAL);
	WT_ERR(weft_condattr_setclock(&a, (clockid_t)99), EINVAL);
	WT_OK(weft_condattr_getclock(&a, &c));
	WT_EQ(c, CLOCK_MONOTONIC); /* unchanged by the rejected values */
	WT_OK(weft_condattr_setclock(&a, CLOCK_REALTIME));
	WT_OK(weft_condattr_getclock(&a, &c));
	WT_EQ(c, CLOCK_REALTIME);
	WT_OK(weft_condattr_destroy(&a));
}

struct handshake {
	weft_mutex_t m;
	weft_cond_t c;
	int waiting;
	int go;
};

static void *wait_for_go(void *arg)
{
	struct handshake *h = arg;
	WT_OK(weft_mutex_lock(&h->m));
	h->waiting++;
	while (!h->go)
		WT_OK(weft_cond_wait(&h->c, &h->m));
	WT_OK(weft_mutex_unlock(&h->m));
	return NULL;
}

static void test_zero_initialised_cond_works(void **state)
{
	wt_init(2);
	static struct handshake h;     /* mutex and cond all zero */
	WT_OK(weft_cond_signal(&h.c)); /* no waiters: nothing happens */
	WT_OK(weft_cond_broadcast(&h.c));
	for (int round = 0; round < 20; round++) {
		struct crowd k;
		h.go = 0;
		h.waiting = 0;
		crowd_start(&k, round % 2 ? 0 : 1, round % 2, wait_for_go, &h); /* one waiter */
		WAIT_LOCKED(&h.m, h.waiting == 1, 10);
		WT_OK(weft_mutex_lock(&h.m));
		h.go = 1;
		WT_OK(round % 4 < 2 ? weft_cond_signal(&h.c) : weft_cond_broadcast(&h.c));
		WT_OK(weft_mutex_unlock(&h.m));
		crowd_join(&k);
	}
	WT_OK(weft_cond_destroy(&h.c));

	weft_cond_t c2 = WEFT_COND_INITIALIZER;
	WT_OK(weft_cond_signal(&c2));
	WT_OK(weft_cond_destroy(&c2));
	WT_OK(weft_cond_init(&c2, NULL));
	WT_OK(weft_cond_destroy(&c2));
	WT_OK(weft_shutdown());
}

/* ---- signal and broadcast ------------------------------------------------ */

struct tickets {
	weft_mutex_t m; /* errorcheck */
	weft_cond_t c;
	int waiting;
	int tickets;
	int proceeded;
	atomic_int inside;
};

static void *take_ticket(void *arg)
{
	struct tickets *t = arg;
	WT_OK(weft_mutex_lock(&t->m));
	t->waiting++;
	while (t->tickets == 0) {
		WT_OK(weft_cond_wait(&t->c, &t->m));
		WT_ERR(weft_mutex_lock(&t->m), EDEADLK); /* held again */
	}
	WT_EQ(atomic_exchange(&t->inside, 1), 0);
	t->tickets--;
	t->proceeded++;
	WT_EQ(atomic_exchange(&t->inside, 0), 1);
	WT_OK(weft_mutex_unlock(&t->m));
	return NULL;
}

static void test_signal_wakes_one_waiter_per_signal(void **state)
{
	/* Each signal comes with one ticket; each must let exactly one more
	 * waiter through. A lost wake-up leaves a ticket untaken and hangs. */
	wt_init(0);
	static struct tickets t;
	errorcheck_init(&t.m);
	struct crowd k;
	crowd_start(&k, 10, 3, take_ticket, &t);
	int n = k.nults + k.npthreads;
	WAIT_LOCKED(&t.m, t.waiting == n, 10);
	for (int i = 1; i <= n; i++) {
		WT_OK(weft_mutex_lock(&t.m));
		t.tickets++;
		WT_OK(weft_cond_signal(&t.c));
		WT_OK(weft_mutex_unlock(&t.m));
		WAIT_LOCKED(&t.m, t.proceeded == i, 10);
		for (int y = 0; y < 20; y++)
			weft_yield();
		WT_EQ(read_locked(&t.m, &t.proceeded), i);
	}
	crowd_join(&k);
	WT_OK(weft_cond_destroy(&t.c));
	WT_OK(weft_mutex_destroy(&t.m));
	WT_OK(weft_shutdown());
}

struct herd {
	weft_mutex_t m;
	weft_cond_t c;
	int waiting;
	int go;
	int woke;
	volatile long counter; /* under m */
	atomic_int inside;
};

static void *wait_for_broadcast(void *arg)
{
	struct herd *h = arg;
	WT_OK(weft_mutex_lock(&h->m));
	h->waiting++;
	while (!h->go)
		WT_OK(weft_cond_wait(&h->c, &h->m));
	/* the woken waiters take m one at a time */
	WT_EQ(atomic_exchange(&h->inside, 1), 0);
	long v = h->counter;
	weft_yield();
	h->counter = v + 1;
	h->woke++;
	WT_EQ(atomic_exchange(&h->inside, 0), 1);
	WT_OK(weft_mutex_unlock(&h->m));
	return NULL;
}

static void test_broadcast_wakes_all_waiters(void **state)
{
	wt_init(0);
	for (int round = 0; round < 5; round++) {
		static struct herd h;
		memset(&h, 0, sizeof h);
		if (round % 2)
			errorcheck_init(&h.m);
		struct crowd k;
		crowd_start(&k, 16, 3, wait_for_broadcast, &h);
		int n = k.nults + k.npthreads;
		WAIT_LOCKED(&h.m, h.waiting == n, 10);
		WT_OK(weft_mutex_lock(&h.m));
		h.go = 1;
		WT_OK(weft_cond_broadcast(&h.c));
		WT_OK(weft_mutex_unlock(&h.m));
		crowd_join(&k);
		WT_EQ(h.woke, n);
		WT_EQ(h.counter, n);
		WT_OK(weft_cond_destroy(&h.c));
		WT_OK(weft_mutex_destroy(&h.m));
	}
	WT_OK(weft_shutdown());
}

/* Generations: main advances gen once all waiters wait for it, and
 * broadcasts; waiters mix untimed and timed waits on both clocks. */
enum { GEN_ROUNDS = 200 };
struct generations {
	weft_mutex_t m;
	weft_cond_t c;
	int waiting;
	int gen;
	atomic_int next_id;
};

static void *follow_generations(void *arg)
{
	struct generations *g = arg;
	int id = atomic_fetch_add(&g->next_id, 1);
	WT_OK(weft_mutex_lock(&g->m));
	for (int r = 0; r < GEN_ROUNDS; r++) {
		g->waiting++;
		while (g->gen == r) {
			if (id % 3 == 0) {
				WT_OK(weft_cond_wait(&g->c, &g->m));
			} else {
				clockid_t clk = id % 3 == 1 ? CLOCK_MONOTONIC : CLOCK_REALTIME;
				struct timespec ts = deadline_in(clk, 30 * NS_PER_S);
				WT_OK(weft_cond_clockwait(&g->c, &g->m, clk, &ts));
			}
		}
		WT_EQ(g->gen, r + 1);
	}
	WT_OK(weft_mutex_unlock(&g->m));
	return NULL;
}

static void test_broadcast_generations(void **state)
{
	wt_init(0);
	static struct generations g;
	struct crowd k;
	crowd_start(&k, 9, 2, follow_generations, &g);
	int n = k.nults + k.npthreads;
	for (int r = 0; r < GEN_ROUNDS; r++) {
		WAIT_LOCKED(&g.m, g.waiting == n, 10);
		WT_OK(weft_mutex_lock(&g.m));
		g.waiting = 0;
		g.gen++;
		WT_OK(weft_cond_broadcast(&g.c));
		WT_OK(weft_mutex_unlock(&g.m));
	}
	crowd_join(&k);
	WT_OK(weft_shutdown());
}

/* ---- timed waits --------------------------------------------------------- */

struct timed {
	weft_mutex_t m; /* errorcheck */
	weft_cond_t c;
};

static void *timedwait_times_out(void *arg)
{
	struct timed *t = arg;
	static const clockid_t clocks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};
	WT_OK(weft_mutex_lock(&t->m));
	/* the cond's own clock (REALTIME: a default cond) */
	struct timespec ts = deadline_in(CLOCK_REALTIME, 50 * MS);
	WT_ERR(weft_cond_timedwait(&t->c, &t->m, &ts), ETIMEDOUT);
	WT_RETURNED_AFTER(CLOCK_REALTIME, &ts);
	WT_ERR(weft_mutex_lock(&t->m), EDEADLK); /* m is held again */
	for (size_t i = 0; i < 2; i++) {
		ts = deadline_in(clocks[i], 50 * MS);
		WT_ERR(weft_cond_clockwait(&t->c, &t->m, clocks[i], &ts), ETIMEDOUT);
		WT_RETURNED_AFTER(clocks[i], &ts);
		WT_ERR(weft_mutex_lock(&t->m), EDEADLK);

		uint64_t t0 = wt_now_ns();
		ts = deadline_in(clocks[i], -NS_PER_S);
		WT_ERR(weft_cond_clockwait(&t->c, &t->m, clocks[i], &ts), ETIMEDOUT);
		ts = (struct timespec){0, 0};
		WT_ERR(weft_cond_clockwait(&t->c, &t->m, clocks[i], &ts), ETIMEDOUT);
		WT_CMPU(wt_now_ns() - t0, <, 2 * NS_PER_S);
		WT_ERR(weft_mutex_lock(&t->m), EDEADLK);

		ts = deadline_in(clocks[i], NS_PER_S);
		ts.tv_nsec = -1;
		WT_ERR(weft_cond_clockwait(&t->c, &t->m, clocks[i], &ts), EINVAL);
		ts.tv_nsec = NS_PER_S;
		WT_ERR(weft_cond_clockwait(&t->c, &t->m, clocks[i], &ts), EINVAL);
		WT_ERR(weft_mutex_lock(&t->m), EDEADLK);
	}
	ts = deadline_in(CLOCK_MONOTONIC, NS_PER_S);
	WT_ERR(weft_cond_clockwait(&t->c, &t->m, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
	WT_ERR(weft_cond_clockwait(&t->c, &t->m, (clockid_t)99, &ts), EINVAL);
	ts.tv_nsec = NS_PER_S;
	WT_ERR(weft_cond_timedwait(&t->c, &t->m, &ts), EINVAL);
	WT_ERR(weft_mutex_lock(&t->m), EDEADLK);
	/* and nobody else can take it meanwhile */
	WT_ERR((intptr_t)in_pthread(trylock_result, &t->m), EBUSY);
	WT_OK(weft_mutex_unlock(&t->m));
	return NULL;
}

/* Broadcasts from a thread that does not hold the mutex, while waiters
 * come and go: a waiter can read the broadcast's counters and queue up just
 * before the broadcast reaches the queue, and still be moved onto the
 * mutex's queue; it must not be left there. Each round: a burst of
 * broadcasts with nothing new (waiters woken by one go back to waiting
 * while the next is on its way), then a new generation, announced with
 * signals only, until every waiter has seen it. Signals wake only the
 * condition's queue, and waiters they wake take the mutex back the usual
 * way: a waiter left on the mutex's queue would never see the generation. */
enum { UNLOCKED_WAITERS = 6 };
struct unlocked_bcast {
	weft_mutex_t m;
	weft_cond_t c;
	int gen, stop; /* under m */
	atomic_int seen[UNLOCKED_WAITERS];
	atomic_int next_id;
};

static void *follow_unlocked_broadcasts(void *arg)
{
	struct unlocked_bcast *u = arg;
	int id = atomic_fetch_add(&u->next_id, 1), mine = 0, stop = 0;
	while (!stop) {
		WT_OK(weft_mutex_lock(&u->m));
		while (!u->stop && u->gen == mine)
			WT_OK(weft_cond_wait(&u->c, &u->m));
		mine = u->gen;
		stop = u->stop;
		WT_OK(weft_mutex_unlock(&u->m));
		atomic_store(&u->seen[id], mine);
	}
	return NULL;
}

static void *broadcast_unlocked(void *arg)
{
	struct unlocked_bcast *u = arg;
	uint64_t end = wt_now_ns() + 2 * NS_PER_S;
	for (unsigned round = 1; wt_now_ns() < end; round++) {
		for (unsigned k = 0; k < 1 + round % 4; k++)
			WT_OK(weft_cond_broadcast(&u->c)); /* m not held */
		WT_OK(weft_mutex_lock(&u->m));
		int gen = ++u->gen;
		WT_OK(weft_mutex_unlock(&u->m));
		uint64_t t0 = wt_now_ns();
		for (int i = 0; i < UNLOCKED_WAITERS; i++)
			while (atomic_load(&u->seen[i]) != gen) {
				if (wt_now_ns() - t0 > 5 * NS_PER_S)
					fail_msg("waiter %d never saw generation %d (it saw %d): "
						 "left "
						 "on the mutex's queue",
						 i, gen, atomic_load(&u->seen[i]));
				WT_OK(weft_cond_signal(&u->c));
				sched_yield();
			}
	}
	WT_OK(weft_mutex_lock(&u->m));
	u->stop = 1;
	WT_OK(weft_mutex_unlock(&u->m));
	WT_OK(weft_cond_broadcast(&u->c));
	return NULL;
}

static void test_broadcast_without_mutex_strands_nobody(void **state)
{
	wt_init(2);
	static struct unlocked_bcast u;
	memset(&u, 0, sizeof u);
	weft_t t[UNLOCKED_WAITERS];
	for (int i = 0; i < UNLOCKED_WAITERS; i++)
		t[i] = wt_spawn(NULL, follow_unlocked_broadcasts, &u);
	struct wt_pthread b;
	wt_pthread_start(&b, broadcast_unlocked, &u);
	wt_pthread_join(&b);
	for (int i = 0; i < UNLOCKED_WAITERS; i++)
		wt_join(t[i]);
	WT_OK(weft_cond_destroy(&u.c));
	WT_OK(weft_mutex_destroy(&u.m));
	WT_OK(weft_shutdown());
}

static void test_timedwait_times_out_with_mutex_held(void **state)
{
	wt_init(2);
	static struct timed t;
	errorcheck_init(&t.m);
	timedwait_times_out(&t);
	in_ult(timedwait_times_out, &t);
	in_pthread(timedwait_times_out, &t);
	WT_OK(weft_cond_destroy(&t.c)); /* timed-out waiters left nothing behind */
	WT_OK(weft_mutex_destroy(&t.m));
	WT_OK(weft_shutdown());
}

static void test_condattr_clock_is_honoured(void **state)
{
	/* CLOCK_MONOTONIC reads far below CLOCK_REALTIME (time since boot vs
	 * since 1970), so a deadline read on the wrong clock is either long past
	 * or decades away: both show. */
	wt_init(2);
	weft_mutex_t m;
	errorcheck_init(&m);
	WT_OK(weft_mutex_lock(&m));

	weft_cond_t mono;
	cond_init_clock(&mono, CLOCK_MONOTONIC);
	struct timespec ts = deadline_in(CLOCK_MONOTONIC, 50 * MS);
	WT_ERR(weft_cond_timedwait(&mono, &m, &ts), ETIMEDOUT);
	WT_RETURNED_AFTER(CLOCK_MONOTONIC, &ts); /* on REALTIME it would be at once */

	weft_cond_t real; /* the default: CLOCK_REALTIME */
	WT_OK(weft_cond_init(&real, NULL));
	ts = deadline_in(CLOCK_MONOTONIC, 10 * NS_PER_S); /* long past on REALTIME */
	uint64_t t0 = wt_now_ns();
	WT_ERR(weft_cond_timedwait(&real, &m, &ts), ETIMEDOUT);
	WT_CMPU(wt_now_ns() - t0, <, 5 * NS_PER_S);
	ts = deadline_in(CLOCK_REALTIME, 50 * MS);
	WT_ERR(weft_cond_timedwait(&real, &m, &ts), ETIMEDOUT);
	WT_RETURNED_AFTER(CLOCK_REALTIME, &ts);

	/* clockwait's clock overrides the cond's */
	ts = deadline_in(CLOCK_REALTIME, 50 * MS);
	WT_ERR(weft_cond_clockwait(&mono, &m, CLOCK_REALTIME, &ts), ETIMEDOUT);
	WT_RETURNED_AFTER(CLOCK_REALTIME, &ts);
	ts = deadline_in(CLOCK_MONOTONIC, 50 * MS);
	WT_ERR(weft_cond_clockwait(&real, &m, CLOCK_MONOTONIC, &ts), ETIMEDOUT);
	WT_RETURNED_AFTER(CLOCK_MONOTONIC, &ts);

	WT_OK(weft_mutex_unlock(&m));
	WT_OK(weft_cond_destroy(&mono));
	WT_OK(weft_cond_destroy(&real));
	WT_OK(weft_mutex_destroy(&m));
	WT_OK(weft_shutdown());
}

struct early {
	weft_mutex_t m;
	weft_cond_t c;
	int waiting;
	int go;
	int result;
};

static void *timedwait_for_go(void *arg)
{
	struct early *e = arg;
	struct timespec ts = deadline_in(CLOCK_MONOTONIC, 30 * NS_PER_S);
	WT_OK(weft_mutex_lock(&e->m));
	e->waiting = 1;
	while (!e->go)
		WT_OK(weft_cond_timedwait(&e->c, &e->m, &ts));
	WT_CMP(ns_past(CLOCK_MONOTONIC, &ts), <, 0);
	WT_OK(weft_mutex_unlock(&e->m));
	return NULL;
}

static void test_timedwait_woken_before_deadline(void **state)
{
	wt_init(2);
	for (int round = 0; round < 20; round++) {
		struct early e = {0};
		cond_init_clock(&e.c, CLOCK_MONOTONIC);
		struct crowd k;
		crowd_start(&k, round % 2 ? 0 : 1, round % 2, timedwait_for_go, &e);
		WAIT_LOCKED(&e.m, e.waiting, 10);
		WT_OK(weft_mutex_lock(&e.m));
		e.go = 1;
		WT_OK(weft_cond_signal(&e.c));
		WT_OK(weft_mutex_unlock(&e.m));
		crowd_join(&k);
		WT_OK(weft_cond_destroy(&e.c));
	}
	WT_OK(weft_shutdown());
}

/* ---- errors -------------------------------------------------------------- */

static void *wait_without_mutex(void *arg)
{
	struct timed *t = arg;
	struct timespec ts = deadline_in(CLOCK_REALTIME, 10 * NS_PER_S);
	WT_ERR(weft_cond_wait(&t->c, &t->m), EPERM);
	WT_ERR(weft_cond_timedwait(&t->c, &t->m, &ts), EPERM);
	WT_ERR(weft_cond_clockwait(&t->c, &t->m, CLOCK_REALTIME, &ts), EPERM);
	return NULL;
}

static void test_wait_without_holding_mutex_eperm(void **state)
{
	wt_init(2);
	int types[] = {WEFT_MUTEX_ERRORCHECK, WEFT_MUTEX_RECURSIVE};
	for (size_t i = 0; i < 2; i++) {
		static struct timed t;
		memset(&t, 0, sizeof t);
		weft_mutexattr_t a;
		WT_OK(weft_mutexattr_init(&a));
		WT_OK(weft_mutexattr_settype(&a, types[i]));
		WT_OK(weft_mutex_init(&t.m, &a));
		wait_without_mutex(&t); /* unlocked */
		WT_OK(weft_mutex_lock(&t.m));
		in_ult(wait_without_mutex, &t); /* held by someone else */
		in_pthread(wait_without_mutex, &t);
		WT_OK(weft_mutex_unlock(&t.m));
		WT_OK(weft_cond_destroy(&t.c));
		WT_OK(weft_mutex_destroy(&t.m));
	}
	WT_OK(weft_shutdown());
}

static void test_destroy_with_waiter_ebusy(void **state)
{
	wt_init(2);
	for (int round = 0; round < 4; round++) {
		static struct handshake h;
		memset(&h, 0, sizeof h);
		struct crowd k;
		crowd_start(&k, round % 2 ? 0 : 1, round % 2, wait_for_go, &h);
		WAIT_LOCKED(&h.m, h.waiting == 1, 10);
		WT_OK(weft_mutex_lock(&h.m));
		WT_ERR(weft_cond_destroy(&h.c), EBUSY);
		h.go = 1;
		WT_OK(weft_cond_signal(&h.c));
		WT_OK(weft_mutex_unlock(&h.m));
		crowd_join(&k);
		WT_OK(weft_cond_destroy(&h.c));
	}
	WT_OK(weft_shutdown());
}

/* ---- producer/consumer queue --------------------------------------------- */

enum { QCAP = 8, MAX_ITEMS = 20000 };
struct queue {
	weft_mutex_t m;
	weft_cond_t not_empty, not_full;
	int buf[QCAP];
	int head, count;
	int items_per_producer;
	int total;
	int consumed;
	atomic_int next_producer, next_consumer;
	unsigned char seen[MAX_ITEMS];
};

static void *produce(void *arg)
{
	struct queue *q = arg;
	int id = atomic_fetch_add(&q->next_producer, 1);
	for (int i = 0; i < q->items_per_producer; i++) {
		WT_OK(weft_mutex_lock(&q->m));
		while (q->count == QCAP)
			WT_OK(weft_cond_wait(&q->not_full, &q->m));
		q->buf[(q->head + q->count) % QCAP] = id * q->items_per_producer + i;
		q->count++;
		WT_OK(weft_cond_signal(&q->not_empty));
		WT_OK(weft_mutex_unlock(&q->m));
	}
	return NULL;
}

static void *consume(void *arg)
{
	struct queue *q = arg;
	int id = atomic_fetch_add(&q->next_consumer, 1);
	WT_OK(weft_mutex_lock(&q->m));
	for (;;) {
		while (q->count == 0 && q->consumed < q->total) {
			if (id % 2 == 0) {
				WT_OK(weft_cond_wait(&q->not_empty, &q->m));
			} else { /* short timed waits: timeouts must not lose items */
				struct timespec ts = deadline_in(CLOCK_REALTIME, 2 * MS);
				int r = weft_cond_timedwait(&q->not_empty, &q->m, &ts);
				WT_TRUE(r == 0 || r == ETIMEDOUT, "timedwait returned %s",
					wt_errname(r));
			}
		}
		if (q->count == 0)
			break; /* all consumed */
		int item = q->buf[q->head];
		q->head = (q->head + 1) % QCAP;
		q->count--;
		q->consumed++;
		WT_CMP(item, >=, 0);
		WT_CMP(item, <, q->total);
		q->seen[item]++;
		WT_OK(weft_cond_signal(&q->not_full));
		if (q->consumed == q->total)
			WT_OK(weft_cond_broadcast(&q->not_empty)); /* let the others go */
	}
	WT_OK(weft_mutex_unlock(&q->m));
	return NULL;
}

static void run_queue(int prod_ults, int prod_pthreads, int cons_ults, int cons_pthreads, int items)
{
	static struct queue q;
	memset(&q, 0, sizeof q);
	q.items_per_producer = items;
	q.total = (prod_ults + prod_pthreads) * items;
	WT_CMP(q.total, <=, MAX_ITEMS);
	static struct crowd consumers, producers;
	crowd_start(&consumers, cons_ults, cons_pthreads, consume, &q);
	crowd_start(&producers, prod_ults, prod_pthreads, produce, &q);
	crowd_join(&producers);
	crowd_join(&consumers);
	WT_EQ(q.consumed, q.total);
	WT_EQ(q.count, 0);
	for (int i = 0; i < q.total; i++)
		if (q.seen[i] != 1)
			fail_msg("item %d was consumed %d times", i, q.seen[i]);
	WT_OK(weft_cond_destroy(&q.not_empty));
	WT_OK(weft_cond_destroy(&q.not_full));
	WT_OK(weft_mutex_destroy(&q.m));
}

static void test_producer_consumer_queue(void **state)
{
	wt_init(0);
	run_queue(4, 2, 4, 2, 2000);
	WT_OK(weft_shutdown());
}

static void test_producer_consumer_queue_one_worker(void **state)
{
	wt_init(1);
	run_queue(4, 1, 4, 1, 1000);
	run_queue(6, 0, 6, 0, 1000);
	WT_OK(weft_shutdown());
}

/* Two ULTs handing a turn back and forth with a condition variable make
 * every decision of their worker while one of them parks under its wait
 * queue's lock, the moment the worker would fire its expired timers
 * (src/sched/park.c, wf_park_unlock): the timers must still fire. A third
 * ULT on the same worker sleeps 5 ms at a time until the pair has handed
 * the turn over a few times (under qemu on a loaded machine the first
 * sleep may end before the pair ran at all), then stops it. */
struct turns {
	weft_mutex_t m;
	weft_cond_t c;
	int turn;
	atomic_int stop;
	atomic_long rounds;
};

struct turn_taker_arg {
	struct turns *t;
	int me;
};

static void *turn_taker(void *arg)
{
	struct turns *t = ((struct turn_taker_arg *)arg)->t;
	int me = ((struct turn_taker_arg *)arg)->me;
	uint64_t deadline = wt_now_ns() + 20 * NS_PER_S; /* fails the test below */
	WT_OK(weft_mutex_lock(&t->m));
	while (!atomic_load(&t->stop) && wt_now_ns() < deadline) {
		while (t->turn != me && !atomic_load(&t->stop))
			WT_OK(weft_cond_wait(&t->c, &t->m));
		t->turn = 1 - me;
		atomic_fetch_add(&t->rounds, 1);
		WT_OK(weft_cond_signal(&t->c));
	}
	WT_OK(weft_cond_broadcast(&t->c));
	WT_OK(weft_mutex_unlock(&t->m));
	return NULL;
}

static void *stopper(void *arg)
{
	struct turns *t = arg;
	do
		WT_OK(weft_sleep_ns(5 * MS));
	while (atomic_load(&t->rounds) <= 2);
	atomic_store(&t->stop, 1);
	return NULL;
}

static void test_timer_fires_beside_cond_pingpong(void **state)
{
	wt_init(1);
	static struct turns t;
	memset(&t, 0, sizeof t);
	struct turn_taker_arg a[2] = {{&t, 0}, {&t, 1}};
	uint64_t t0 = wt_now_ns();
	weft_t s = wt_spawn_on(0, stopper, &t);
	weft_t p0 = wt_spawn_on(0, turn_taker, &a[0]);
	weft_t p1 = wt_spawn_on(0, turn_taker, &a[1]);
	wt_join(p0);
	wt_join(p1);
	wt_join(s);
	uint64_t took = wt_now_ns() - t0;
	printf("%ld hand-offs in %.1f ms\n", atomic_load(&t.rounds), (double)took / MS);
	WT_CMPU(took, <, 10 * NS_PER_S); /* the sleeper woke: not the pair's deadline */
	WT_CMPU(atomic_load(&t.rounds), >, 2);
	WT_OK(weft_shutdown());
}

/* A pair handing a turn back and forth with a condition variable on one
 * worker takes the wait queue's lock from that worker only, and the lock
 * biases itself to it (src/util/bspin.h: no locked instruction). Signals
 * and broadcasts from a ULT on the other worker and from a foreign thread
 * take the bias away (a membarrier) and let it come back; they are
 * spurious for the pair, whose waits loop on the turn. A queue broken by a
 * change of hands loses a waiter (the deadline fails the test) or
 * corrupts the list (a crash); the mutex must still exclude. Fresh
 * condition variables at fresh addresses: each lands in a bucket that has
 * not yet learned to wait long for its bias. */
#if defined(__SANITIZE_THREAD__) /* about 20 times slower */
#define DISTURB_PAIRS  10
#define DISTURB_ROUNDS 5000
#else
#define DISTURB_PAIRS  40
#define DISTURB_ROUNDS 20000
#endif

struct disturbed {
	weft_mutex_t m;
	weft_cond_t c;
	int turn;
	int inside; /* under m */
	atomic_int done;
	atomic_int stop;
	atomic_long pokes;
};

struct disturbed_arg {
	struct disturbed *d;
	int me;
};

static void *disturbed_taker(void *arg)
{
	struct disturbed *d = ((struct disturbed_arg *)arg)->d;
	int me = ((struct disturbed_arg *)arg)->me;
	/* Not before the disturbance has begun: on a loaded machine the pair
	 * could finish before the others ever ran. */
	while (atomic_load(&d->pokes) == 0)
		weft_yield();
	WT_OK(weft_mutex_lock(&d->m));
	for (int i = 0; i < DISTURB_ROUNDS; i++) {
		while (d->turn != me)
			WT_OK(weft_cond_wait(&d->c, &d->m));
		WT_EQ(d->inside++, 0);
		d->turn = 1 - me;
		d->inside--;
		WT_OK(weft_cond_signal(&d->c));
	}
	WT_OK(weft_mutex_unlock(&d->m));
	atomic_fetch_add(&d->done, 1);
	return NULL;
}

static void disturb(struct disturbed *d, int foreign)
{
	for (long i = 0; !atomic_load(&d->stop); i++) {
		if (i % 16 == 0) {
			WT_OK(i % 64 ? weft_cond_signal(&d->c) : weft_cond_broadcast(&d->c));
			atomic_fetch_add(&d->pokes, 1);
		}
		if (i % 256 == 128) { /* and the mutex's queue, from elsewhere */
			WT_OK(weft_mutex_lock(&d->m));
			WT_EQ(d->inside, 0);
			WT_OK(weft_mutex_unlock(&d->m));
		}
		if (foreign)
			sched_yield();
		else
			weft_yield();
	}
}

static void *disturb_ult(void *arg)
{
	disturb(arg, 0);
	return NULL;
}

static void *disturb_pthread(void *arg)
{
	disturb(arg, 1);
	return NULL;
}

static void cond_pingpong_disturbed(int worker)
{
	wt_init(2);
	static struct disturbed *ds[DISTURB_PAIRS]; /* freed at the end: fresh addresses */
	for (int k = 0; k < DISTURB_PAIRS; k++) {
		struct disturbed *d = ds[k] = calloc(1, sizeof *d);
		WT_TRUE(d != NULL, "out of memory");
		WT_OK(weft_mutex_init(&d->m, NULL));
		WT_OK(weft_cond_init(&d->c, NULL));
		struct disturbed_arg a[2] = {{d, 0}, {d, 1}};
		weft_t p0 = wt_spawn_on(worker, disturbed_taker, &a[0]);
		weft_t p1 = wt_spawn_on(worker, disturbed_taker, &a[1]);
		weft_t o = wt_spawn_on(worker < 0 ? -1 : 1 - worker, disturb_ult, d);
		struct wt_pthread f;
		wt_pthread_start(&f, disturb_pthread, d);
		WT_WAIT(atomic_load(&d->done) == 2, 60);
		atomic_store(&d->stop, 1);
		wt_join(p0);
		wt_join(p1);
		wt_join(o);
		wt_pthread_join(&f);
		WT_CMP(atomic_load(&d->pokes), >, 0);
		WT_OK(weft_cond_destroy(&d->c));
		WT_OK(weft_mutex_destroy(&d->m));
	}
	for (int k = 0; k < DISTURB_PAIRS; k++)
		free(ds[k]);
	WT_OK(weft_shutdown());
}

static void test_cond_pingpong_with_signals_from_elsewhere(void **state)
{
	cond_pingpong_disturbed(1);
}

static void test_cond_pingpong_unbound_with_signals_from_elsewhere(void **state)
{
	cond_pingpong_disturbed(-1);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_condattr_clock),
		cmocka_unit_test(test_zero_initialised_cond_works),
		cmocka_unit_test(test_signal_wakes_one_waiter_per_signal),
		cmocka_unit_test(test_broadcast_wakes_all_waiters),
		cmocka_unit_test(test_broadcast_generations),
		cmocka_unit_test(test_broadcast_without_mutex_strands_nobody),
		cmocka_unit_test(test_timedwait_times_out_with_mutex_held),
		cmocka_unit_test(test_condattr_clock_is_honoured),
		cmocka_unit_test(test_timedwait_woken_before_deadline),
		cmocka_unit_test(test_timer_fires_beside_cond_pingpong),
		cmocka_unit_test(test_wait_without_holding_mutex_eperm),
		cmocka_unit_test(test_destroy_with_waiter_ebusy),
		cmocka_unit_test(test_producer_consumer_queue),
		cmocka_unit_test(test_producer_consumer_queue_one_worker),
		cmocka_unit_test(test_cond_pingpong_with_signals_from_elsewhere),
		cmocka_unit_test(test_cond_pingpong_unbound_with_signals_from_elsewhere),
	};
	return WT_RUN(argc, argv, tests);
}
