/* Deferred cancellation: the defaults, cancellation at the cancellation
 * points pthread_cond_wait/timedwait, sem_wait, pthread_join, nanosleep,
 * sleep and pthread_testcancel; none before a cancellation point is reached;
 * cleanup handlers (push/pop, LIFO, run at cancellation and at pthread_exit,
 * with the condition variable's mutex held again); pthread_setcancelstate;
 * PTHREAD_CANCELED as the joined value; a cancelled condition waiter does not
 * swallow a signal meant for another waiter. Asynchronous cancellation
 * of a thread blocked in pthread_mutex_lock. */
#include "ptest.h"

#include <semaphore.h>
#include <unistd.h>

/* Join t, expecting it was cancelled; bounded by the watchdog. */
static void join_cancelled(pthread_t t)
{
	PX_EQ_PTR(px_join(t), PTHREAD_CANCELED);
}

static void *check_defaults(void *arg)
{
	int old = -1;
	PX_OK(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old));
	PX_EQ(old, PTHREAD_CANCEL_ENABLE);
	PX_OK(pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &old));
	PX_EQ(old, PTHREAD_CANCEL_DEFERRED);
	PX_OK(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old));
	PX_EQ(old, PTHREAD_CANCEL_ENABLE);
	PX_OK(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old));
	PX_EQ(old, PTHREAD_CANCEL_DISABLE);
	return (void *)1;
}

/* New threads start with cancellation enabled and deferred. */
static void test_defaults(void **state)
{
	PX_EQ_PTR(px_join(px_start(NULL, check_defaults, NULL)), (void *)1);
	/* The main thread too. */
	check_defaults(NULL);
}

static void set_flag(void *flag)
{
	atomic_store((atomic_int *)flag, 1);
}

struct condwait {
	pthread_mutex_t m;
	pthread_cond_t c;
	bool timed;
	atomic_int waiting;
	atomic_int cleaned;
	int held_in_cleanup; /* unlock's result inside the cleanup handler */
};

static void unlock_in_cleanup(void *arg)
{
	struct condwait *w = arg;
	/* The mutex is errorcheck: unlocking succeeds only if this thread
	 * holds it, as POSIX requires when a cancelled wait runs handlers. */
	w->held_in_cleanup = pthread_mutex_unlock(&w->m);
	atomic_store(&w->cleaned, 1);
}

static void *wait_forever_on_cond(void *arg)
{
	struct condwait *w = arg;
	PX_OK(pthread_mutex_lock(&w->m));
	pthread_cleanup_push(unlock_in_cleanup, w);
	atomic_store(&w->waiting, 1);
	struct timespec ts = px_deadline(CLOCK_REALTIME, 1000 * PX_NS_PER_S);
	for (;;) /* never signalled */
		if (w->timed)
			pthread_cond_timedwait(&w->c, &w->m, &ts);
		else
			pthread_cond_wait(&w->c, &w->m);
	pthread_cleanup_pop(0);
	return NULL;
}

static void check_cancel_in_cond_wait(bool timed)
{
	struct condwait w = {.timed = timed, .held_in_cleanup = -1};
	pthread_mutexattr_t a;
	PX_OK(pthread_mutexattr_init(&a));
	PX_OK(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK));
	PX_OK(pthread_mutex_init(&w.m, &a));
	PX_OK(pthread_mutexattr_destroy(&a));
	PX_OK(pthread_cond_init(&w.c, NULL));

	pthread_t t = px_start(NULL, wait_forever_on_cond, &w);
	PX_WAIT(atomic_load(&w.waiting), 10);
	/* Holding the mutex now means the waiter is inside the wait. */
	PX_OK(pthread_mutex_lock(&w.m));
	PX_OK(pthread_cancel(t));
	PX_OK(pthread_mutex_unlock(&w.m));
	join_cancelled(t);
	PX_EQ(atomic_load(&w.cleaned), 1);
	PX_ERR(w.held_in_cleanup, 0);
	PX_OK(pthread_mutex_trylock(&w.m));
	PX_OK(pthread_mutex_unlock(&w.m));
	PX_OK(pthread_cond_destroy(&w.c));
	PX_OK(pthread_mutex_destroy(&w.m));
}

static void test_cancel_in_cond_wait(void **state)
{
	check_cancel_in_cond_wait(false);
}

static void test_cancel_in_cond_timedwait(void **state)
{
	check_cancel_in_cond_wait(true);
}

struct blocked {
	sem_t s;
	atomic_int started;
	atomic_int cleaned;
	atomic_int after; /* set if the blocking call ever returned */
};

static void *block_in_sem_wait(void *arg)
{
	struct blocked *b = arg;
	pthread_cleanup_push(set_flag, &b->cleaned);
	atomic_store(&b->started, 1);
	sem_wait(&b->s);
	atomic_store(&b->after, 1);
	pthread_cleanup_pop(0);
	return NULL;
}

static void *block_in_nanosleep(void *arg)
{
	struct blocked *b = arg;
	pthread_cleanup_push(set_flag, &b->cleaned);
	atomic_store(&b->started, 1);
	struct timespec ts = {.tv_sec = 1000, .tv_nsec = 0};
	nanosleep(&ts, NULL);
	atomic_store(&b->after, 1);
	pthread_cleanup_pop(0);
	return NULL;
}

static void *block_in_sleep(void *arg)
{
	struct blocked *b = arg;
	pthread_cleanup_push(set_flag, &b->cleaned);
	atomic_store(&b->started, 1);
	sleep(1000);
	atomic_store(&b->after, 1);
	pthread_cleanup_pop(0);
	return NULL;
}

/* Start body, let it block, cancel it: it ends as cancelled, its cleanup
 * handler ran, and the blocking call never returned. */
static void check_cancel_blocked(void *(*body)(void *))
{
	struct blocked b = {.started = 0};
	PX_SYSOK(sem_init(&b.s, 0, 0));
	pthread_t t = px_start(NULL, body, &b);
	PX_WAIT(atomic_load(&b.started), 10);
	px_sleep_ns(10 * PX_NS_PER_MS); /* most likely blocked by now; either way works */
	long long t0 = px_now(CLOCK_MONOTONIC);
	PX_OK(pthread_cancel(t));
	join_cancelled(t);
	/* Not after the 1000 s the call would have slept. */
	PX_CMP(px_now(CLOCK_MONOTONIC) - t0, <, 30 * PX_NS_PER_S);
	PX_EQ(atomic_load(&b.cleaned), 1);
	PX_EQ(atomic_load(&b.after), 0);
	PX_SYSOK(sem_destroy(&b.s));
}

static void test_cancel_in_sem_wait(void **state)
{
	check_cancel_blocked(block_in_sem_wait);
}

static void test_cancel_in_nanosleep(void **state)
{
	check_cancel_blocked(block_in_nanosleep);
}

static void test_cancel_in_sleep(void **state)
{
	check_cancel_blocked(block_in_sleep);
}

struct join_chain {
	sem_t release; /* lets the target end */
	pthread_t target;
	atomic_int joining;
	atomic_int cleaned;
};

static void *target_body(void *arg)
{
	struct join_chain *j = arg;
	while (sem_wait(&j->release) != 0)
		;
	return (void *)77;
}

static void *join_target(void *arg)
{
	struct join_chain *j = arg;
	pthread_cleanup_push(set_flag, &j->cleaned);
	atomic_store(&j->joining, 1);
	pthread_join(j->target, NULL);
	pthread_cleanup_pop(0);
	return NULL;
}

/* A thread cancelled inside pthread_join ends cancelled; its target is not
 * detached, and can still be joined. */
static void test_cancel_in_join(void **state)
{
	struct join_chain j = {.joining = 0};
	PX_SYSOK(sem_init(&j.release, 0, 0));
	j.target = px_start(NULL, target_body, &j);
	pthread_t joiner = px_start(NULL, join_target, &j);
	PX_WAIT(atomic_load(&j.joining), 10);
	px_sleep_ns(10 * PX_NS_PER_MS);
	PX_OK(pthread_cancel(joiner));
	join_cancelled(joiner);
	PX_EQ(atomic_load(&j.cleaned), 1);
	PX_SYSOK(sem_post(&j.release));
	PX_EQ_PTR(px_join(j.target), (void *)77);
	PX_SYSOK(sem_destroy(&j.release));
}

struct deferred {
	atomic_int cancel_sent;
	atomic_int reached;
	atomic_int after;
	atomic_int cleaned;
};

static void *compute_then_testcancel(void *arg)
{
	struct deferred *d = arg;
	pthread_cleanup_push(set_flag, &d->cleaned);
	/* No cancellation point in this loop (sched_yield is not one). */
	long long end = px_now(CLOCK_MONOTONIC) + 30 * PX_NS_PER_S;
	while (!atomic_load(&d->cancel_sent) && px_now(CLOCK_MONOTONIC) < end)
		sched_yield();
	volatile unsigned long x = 0;
	for (int i = 0; i < 1000000; i++)
		x += (unsigned long)i;
	atomic_store(&d->reached, 1);
	pthread_testcancel();
	atomic_store(&d->after, 1);
	pthread_cleanup_pop(0);
	return NULL;
}

/* A deferred cancel waits for a cancellation point: the thread goes on
 * computing after pthread_cancel and ends at pthread_testcancel. */
static void test_deferred_until_testcancel(void **state)
{
	struct deferred d = {.cancel_sent = 0};
	pthread_t t = px_start(NULL, compute_then_testcancel, &d);
	PX_OK(pthread_cancel(t));
	atomic_store(&d.cancel_sent, 1);
	join_cancelled(t);
	PX_EQ(atomic_load(&d.reached), 1);
	PX_EQ(atomic_load(&d.after), 0);
	PX_EQ(atomic_load(&d.cleaned), 1);
}

static void *cancel_self(void *arg)
{
	PX_OK(pthread_cancel(pthread_self()));
	atomic_store((atomic_int *)arg, 1);
	pthread_testcancel();
	atomic_store((atomic_int *)arg, 2);
	return NULL;
}

static void test_cancel_self(void **state)
{
	atomic_int progress = 0;
	join_cancelled(px_start(NULL, cancel_self, &progress));
	PX_EQ(atomic_load(&progress), 1);
}

struct disabled {
	sem_t disabled, cancelled;
	atomic_int survived;
	atomic_int after;
	int old_state;
};

static void *disable_then_enable(void *arg)
{
	struct disabled *d = arg;
	int old;
	PX_OK(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old));
	sem_post(&d->disabled);
	/* Cancellation points while disabled: the cancel stays pending. */
	while (sem_wait(&d->cancelled) != 0)
		;
	px_sleep_ns(20 * PX_NS_PER_MS);
	pthread_testcancel();
	atomic_store(&d->survived, 1);
	PX_OK(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &d->old_state));
	pthread_testcancel();
	atomic_store(&d->after, 1);
	return NULL;
}

/* While cancellation is disabled a cancel request stays pending; it acts at
 * the first cancellation point after it is enabled again. */
static void test_setcancelstate_disable(void **state)
{
	struct disabled d = {.survived = 0, .old_state = -1};
	PX_SYSOK(sem_init(&d.disabled, 0, 0));
	PX_SYSOK(sem_init(&d.cancelled, 0, 0));
	pthread_t t = px_start(NULL, disable_then_enable, &d);
	PX_SYSOK(sem_wait(&d.disabled));
	PX_OK(pthread_cancel(t));
	PX_SYSOK(sem_post(&d.cancelled));
	join_cancelled(t);
	PX_EQ(atomic_load(&d.survived), 1);
	PX_EQ(d.old_state, PTHREAD_CANCEL_DISABLE);
	PX_EQ(atomic_load(&d.after), 0);
	sem_destroy(&d.disabled);
	sem_destroy(&d.cancelled);
}

static void *ignore_cancel(void *arg)
{
	PX_OK(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL));
	while (sem_wait(arg) != 0)
		;
	pthread_testcancel();
	return (void *)42;
}

/* A thread that never enables cancellation again returns its own value, not
 * PTHREAD_CANCELED. */
static void test_cancel_ignored_while_disabled(void **state)
{
	sem_t go;
	PX_SYSOK(sem_init(&go, 0, 0));
	pthread_t t = px_start(NULL, ignore_cancel, &go);
	PX_OK(pthread_cancel(t));
	PX_SYSOK(sem_post(&go));
	void *v = px_join(t);
	PX_EQ_PTR(v, (void *)42);
	PX_TRUE(v != PTHREAD_CANCELED, "a returned value is not PTHREAD_CANCELED");
	sem_destroy(&go);
}

/* The order in which cleanup handlers ran. */
struct order {
	char seq[16];
	atomic_int n;
};

static struct order order;

static void record(void *c)
{
	int i = atomic_fetch_add(&order.n, 1);
	if (i < (int)sizeof order.seq - 1)
		order.seq[i] = (char)(uintptr_t)c;
}

static void *push_pop_then_exit(void *arg)
{
	pthread_cleanup_push(record, (void *)'a');
	pthread_cleanup_push(record, (void *)'b');
	pthread_cleanup_push(record, (void *)'c');
	pthread_cleanup_push(record, (void *)'d');
	pthread_cleanup_pop(1); /* runs d */
	pthread_cleanup_pop(0); /* removes c without running it */
	if (arg)
		pthread_exit(NULL); /* runs b, a */
	pthread_testcancel();
	pthread_cleanup_pop(1);
	pthread_cleanup_pop(1);
	return NULL;
}

static void *push_then_block(void *arg)
{
	pthread_cleanup_push(record, (void *)'x');
	pthread_cleanup_push(record, (void *)'y');
	pthread_cleanup_push(record, (void *)'z');
	atomic_store((atomic_int *)arg, 1);
	struct timespec ts = {.tv_sec = 1000, .tv_nsec = 0};
	for (;;) /* nanosleep is a cancellation point */
		nanosleep(&ts, NULL);
	pthread_cleanup_pop(0);
	pthread_cleanup_pop(0);
	pthread_cleanup_pop(0);
	return NULL;
}

/* pop(1) runs the handler, pop(0) only removes it; pthread_exit and
 * cancellation run what is left, last pushed first. */
static void test_cleanup_push_pop(void **state)
{
	memset(&order, 0, sizeof order);
	px_join(px_start(NULL, push_pop_then_exit, (void *)1));
	PX_EQ_STR(order.seq, "dba");

	memset(&order, 0, sizeof order);
	px_join(px_start(NULL, push_pop_then_exit, NULL));
	PX_EQ_STR(order.seq, "dba");

	memset(&order, 0, sizeof order);
	atomic_int blocked = 0;
	pthread_t t = px_start(NULL, push_then_block, &blocked);
	PX_WAIT(atomic_load(&blocked), 10);
	PX_OK(pthread_cancel(t));
	join_cancelled(t);
	PX_EQ_STR(order.seq, "zyx");
}

struct two_waiters {
	pthread_mutex_t m;
	pthread_cond_t c;
	int waiting;
	int tokens;
	atomic_int woke;
};

static void unlock_mutex(void *m)
{
	pthread_mutex_unlock(m);
}

static void *take_token(void *arg)
{
	struct two_waiters *w = arg;
	PX_OK(pthread_mutex_lock(&w->m));
	pthread_cleanup_push(unlock_mutex, &w->m);
	w->waiting++;
	while (w->tokens == 0)
		pthread_cond_wait(&w->c, &w->m);
	w->tokens--;
	w->waiting--;
	atomic_fetch_add(&w->woke, 1);
	pthread_cleanup_pop(1);
	return NULL;
}

static int count_waiting(struct two_waiters *w)
{
	PX_OK(pthread_mutex_lock(&w->m));
	int n = w->waiting;
	PX_OK(pthread_mutex_unlock(&w->m));
	return n;
}

/* POSIX: a waiter woken by cancellation must not consume a signal sent at
 * the same time while other threads wait. One waiter is cancelled as the
 * signal goes out; the other must get the token. */
static void test_cancelled_waiter_keeps_no_signal(void **state)
{
	for (int round = 0; round < 50; round++) {
		struct two_waiters w = {.waiting = 0};
		PX_OK(pthread_mutex_init(&w.m, NULL));
		PX_OK(pthread_cond_init(&w.c, NULL));
		pthread_t a = px_start(NULL, take_token, &w);
		pthread_t b = px_start(NULL, take_token, &w);
		PX_WAIT(count_waiting(&w) == 2, 10);
		PX_OK(pthread_mutex_lock(&w.m));
		PX_OK(pthread_cancel(a));
		w.tokens = 1;
		PX_OK(pthread_cond_signal(&w.c));
		PX_OK(pthread_mutex_unlock(&w.m));
		/* a may have taken the token before acting on the cancel; then
		 * b is still waiting, and gets a second token. */
		void *ra = px_join(a);
		if (ra != PTHREAD_CANCELED) {
			PX_OK(pthread_mutex_lock(&w.m));
			w.tokens++;
			PX_OK(pthread_cond_signal(&w.c));
			PX_OK(pthread_mutex_unlock(&w.m));
		}
		PX_WAIT(atomic_load(&w.woke) == (ra == PTHREAD_CANCELED ? 1 : 2), 10);
		px_join(b);
		PX_OK(pthread_cond_destroy(&w.c));
		PX_OK(pthread_mutex_destroy(&w.m));
	}
}

struct async_lock {
	pthread_mutex_t *m;
	bool self_deadlock; /* lock m first, then block on it again */
	atomic_int blocking;
	atomic_int cleaned;
	atomic_int returned;
};

static void unlock_async(void *arg)
{
	struct async_lock *a = arg;
	atomic_store(&a->cleaned, 1);
	if (a->self_deadlock)
		pthread_mutex_unlock(a->m);
}

static void *lock_async(void *arg)
{
	struct async_lock *a = arg;
	int old;
	if (a->self_deadlock)
		PX_OK(pthread_mutex_lock(a->m));
	pthread_cleanup_push(unlock_async, a);
	PX_OK(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old));
	atomic_store(&a->blocking, 1);
	pthread_mutex_lock(a->m); /* blocks for good */
	atomic_store(&a->returned, 1);
	pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &old);
	pthread_cleanup_pop(0);
	return NULL;
}

/* An asynchronous cancellation ends a thread blocked in pthread_mutex_lock
 * (not a cancellation point, but nothing stops an asynchronous one: glibc
 * acts there) without giving it the mutex. Two ways to block: on a
 * normal mutex the thread holds itself, whose cleanup handler unlocks it,
 * and on one the main thread holds, which stays the main thread's. */
static void test_async_cancel_in_mutex_lock(void **state)
{
	for (int self_deadlock = 0; self_deadlock <= 1; self_deadlock++) {
		pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
		struct async_lock a = {.m = &m, .self_deadlock = self_deadlock};
		if (!self_deadlock)
			PX_OK(pthread_mutex_lock(&m));
		pthread_t t = px_start(NULL, lock_async, &a);
		PX_WAIT(atomic_load(&a.blocking), 10);
		px_sleep_ns(20 * PX_NS_PER_MS); /* well inside the lock's wait */
		PX_OK(pthread_cancel(t));
		join_cancelled(t);
		PX_EQ(atomic_load(&a.cleaned), 1);
		PX_EQ(atomic_load(&a.returned), 0);
		if (!self_deadlock) /* still ours: the cancelled thread never got it */
			PX_OK(pthread_mutex_unlock(&m));
		PX_OK(pthread_mutex_trylock(&m));
		PX_OK(pthread_mutex_unlock(&m));
		PX_OK(pthread_mutex_destroy(&m));
	}
}

/* "may fail" in POSIX; glibc reports it, and weft should report the same. */
static void test_cancel_may_fail(void **state)
{
	int old = -1;
	PX_ERR(pthread_setcancelstate(12345, &old), EINVAL);
	PX_ERR(pthread_setcanceltype(12345, &old), EINVAL);
	PX_OK(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old));
	PX_EQ(old, PTHREAD_CANCEL_ENABLE);
	PX_OK(pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &old));
	PX_EQ(old, PTHREAD_CANCEL_DEFERRED);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		PX_TEST(test_defaults),
		PX_TEST(test_cancel_in_cond_wait),
		PX_TEST(test_cancel_in_cond_timedwait),
		PX_TEST(test_cancel_in_sem_wait),
		PX_TEST(test_cancel_in_nanosleep),
		PX_TEST(test_cancel_in_sleep),
		PX_TEST(test_cancel_in_join),
		PX_TEST(test_deferred_until_testcancel),
		PX_TEST(test_cancel_self),
		PX_TEST(test_setcancelstate_disable),
		PX_TEST(test_cancel_ignored_while_disabled),
		PX_TEST(test_cleanup_push_pop),
		PX_TEST(test_cancelled_waiter_keeps_no_signal),
		PX_TEST(test_cancel_may_fail),
		PX_TEST(test_async_cancel_in_mutex_lock),
	};
	return PX_RUN(argc, argv, tests);
}
