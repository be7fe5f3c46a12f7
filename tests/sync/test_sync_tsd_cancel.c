/* Thread-specific data, cleanup handlers and cancellation.
 *
 * TSD: keys, per-ULT values, destructors at exit with the POSIX iteration
 * rule, the key limit. Cleanup: push/pop, LIFO order, run by weft_exit and by
 * cancellation (before the TSD destructors). Cancellation: deferred, acted on
 * at each kind of cancellation point (both when the ULT is already blocked
 * and when the request is pending as it arrives), the object it was blocked
 * on left clean (a post or signal racing the cancel is not lost), the
 * blocking calls that are not cancellation points (mutex and spin locks,
 * barrier waits, weft_once), disabled cancellation, and the errors.
 *
 * A ULT is never cancelled after it may have been joined (its id is then
 * gone: ESRCH would be right). Every test initialises the runtime and shuts
 * it down. */
#include "harness.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
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

/* Run fn(arg) in a new pthread and wait for it without blocking the worker. */
static void *in_pthread(void *(*fn)(void *), void *arg)
{
	struct wt_pthread p;
	wt_pthread_start(&p, fn, arg);
	return wt_pthread_join(&p);
}

/* An ordered log of events (cleanup handlers, destructors). */
static atomic_int nevents;
static int events[64];

static void log_event(int e)
{
	int i = atomic_fetch_add(&nevents, 1);
	WT_CMP(i, <, 64);
	events[i] = e;
}

/* ---- thread-specific data ------------------------------------------------ */

static void test_key_create_set_get_delete(void **state)
{
	wt_init(1);
	int a, b;
	weft_key_t k;
	WT_OK(weft_key_create(&k, NULL));
	WT_EQ_PTR(weft_getspecific(k), NULL);
	WT_OK(weft_setspecific(k, &a));
	WT_EQ_PTR(weft_getspecific(k), &a);
	WT_OK(weft_setspecific(k, &b));
	WT_EQ_PTR(weft_getspecific(k), &b);
	WT_OK(weft_setspecific(k, NULL));
	WT_EQ_PTR(weft_getspecific(k), NULL);
	WT_OK(weft_setspecific(k, &a));
	WT_OK(weft_key_delete(k));
	WT_ERR(weft_key_delete(k), EINVAL);
	WT_EQ_PTR(weft_getspecific(k), NULL);
	WT_ERR(weft_setspecific(k, &a), EINVAL);
	/* a new key (perhaps with the same number) starts out NULL */
	weft_key_t k2;
	WT_OK(weft_key_create(&k2, NULL));
	WT_EQ_PTR(weft_getspecific(k2), NULL);
	WT_OK(weft_key_delete(k2));
	WT_OK(weft_shutdown());
}

static void test_invalid_keys(void **state)
{
	wt_init(1);
	int a;
	weft_key_t bad[] = {WEFT_KEYS_MAX, WEFT_KEYS_MAX + 7, (weft_key_t)-1, 12345};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		WT_EQ_PTR(weft_getspecific(bad[i]), NULL);
		WT_ERR(weft_setspecific(bad[i], &a), EINVAL);
		WT_ERR(weft_key_delete(bad[i]), EINVAL);
	}
	weft_key_t k;
	WT_OK(weft_key_create(&k, NULL));
	WT_ERR(weft_key_delete(k == 0 ? 1 : k - 1), EINVAL); /* never created */
	WT_OK(weft_key_delete(k));
	WT_OK(weft_shutdown());
}

static void test_keys_max_then_eagain(void **state)
{
	wt_init(1);
	static weft_key_t keys[WEFT_KEYS_MAX + 1];
	int n = 0, r;
	while ((r = weft_key_create(&keys[n], NULL)) == 0) {
		WT_OK(weft_setspecific(keys[n], &keys[n]));
		if (++n > WEFT_KEYS_MAX)
			fail_msg("created %d keys, more than WEFT_KEYS_MAX", n);
	}
	WT_ERR(r, EAGAIN);
	WT_EQ(n, WEFT_KEYS_MAX);
	for (int i = 0; i < n; i++)
		WT_EQ_PTR(weft_getspecific(keys[i]), &keys[i]);
	WT_OK(weft_key_delete(keys[100]));
	WT_OK(weft_key_create(&keys[100], NULL));
	WT_EQ_PTR(weft_getspecific(keys[100]), NULL);
	weft_key_t extra;
	WT_ERR(weft_key_create(&extra, NULL), EAGAIN);
	for (int i = 0; i < n; i++)
		WT_OK(weft_key_delete(keys[i]));
	WT_OK(weft_key_create(&extra, NULL));
	WT_OK(weft_key_delete(extra));
	WT_OK(weft_shutdown());
}

struct per_ult {
	weft_key_t k;
	atomic_int ready;
	int nults;
};

static void *own_values(void *arg)
{
	struct per_ult *p = arg;
	int mine;
	WT_EQ_PTR(weft_getspecific(p->k), NULL); /* a new ULT starts with NULL */
	WT_OK(weft_setspecific(p->k, &mine));
	atomic_fetch_add(&p->ready, 1);
	WT_WAIT(atomic_load(&p->ready) == p->nults, 10); /* all have set theirs */
	for (int i = 0; i < 200; i++) {
		WT_EQ_PTR(weft_getspecific(p->k), &mine);
		weft_yield(); /* maybe to another worker */
	}
	WT_OK(weft_setspecific(p->k, NULL));
	return NULL;
}

static void test_values_are_per_ult(void **state)
{
	wt_init(0);
	static struct per_ult p;
	p.nults = 20;
	WT_OK(weft_key_create(&p.k, NULL));
	int main_value;
	WT_OK(weft_setspecific(p.k, &main_value));
	weft_t t[20];
	for (int i = 0; i < p.nults; i++)
		t[i] = wt_spawn(NULL, own_values, &p);
	for (int i = 0; i < p.nults; i++)
		wt_join(t[i]);
	WT_EQ_PTR(weft_getspecific(p.k), &main_value);
	WT_OK(weft_key_delete(p.k));
	WT_OK(weft_shutdown());
}

/* Destructors: called at ULT exit for non-NULL values, in the exiting ULT,
 * with the value already reset to NULL. */
struct dtor_case {
	weft_key_t k;
	int resets;   /* how many times the destructor sets the value again */
	int exit_how; /* 0: return, 1: weft_exit */
	void *value;
	atomic_int calls;
	weft_t in_ult;
	int saw_null;
};
static struct dtor_case *dcase;

static void dtor(void *v)
{
	struct dtor_case *d = dcase;
	int n = atomic_fetch_add(&d->calls, 1);
	WT_EQ_PTR(v, d->value);
	d->in_ult = weft_self();
	d->saw_null += weft_getspecific(d->k) == NULL;
	if (n < d->resets)
		WT_OK(weft_setspecific(d->k, d->value));
}

static void *set_value_and_exit(void *arg)
{
	struct dtor_case *d = arg;
	if (d->value)
		WT_OK(weft_setspecific(d->k, d->value));
	if (d->exit_how)
		weft_exit(d);
	return d;
}

static void run_dtor_case(struct dtor_case *d)
{
	dcase = d;
	WT_OK(weft_key_create(&d->k, dtor));
	weft_t t = wt_spawn(NULL, set_value_and_exit, d);
	WT_EQ_PTR(wt_join(t), d);
	if (atomic_load(&d->calls) > 0)
		WT_EQU(d->in_ult, t);
	WT_OK(weft_key_delete(d->k));
}

static void test_destructor_runs_at_exit(void **state)
{
	wt_init(2);
	int x;
	for (int how = 0; how < 2; how++) {
		struct dtor_case d = {.value = &x, .exit_how = how};
		run_dtor_case(&d);
		WT_EQ(atomic_load(&d.calls), 1);
		WT_EQ(d.saw_null, 1);
	}
	WT_OK(weft_shutdown());
}

static void test_destructor_not_called_for_null(void **state)
{
	wt_init(2);
	struct dtor_case d = {.value = NULL};
	run_dtor_case(&d);
	WT_EQ(atomic_load(&d.calls), 0);
	WT_OK(weft_shutdown());
}

static void test_destructor_iterations(void **state)
{
	wt_init(2);
	int x;
	/* sets the value again once: called again once */
	struct dtor_case once = {.value = &x, .resets = 1};
	run_dtor_case(&once);
	WT_EQ(atomic_load(&once.calls), 2);
	/* always sets it again: called WEFT_DESTRUCTOR_ITERATIONS times, no more */
	struct dtor_case always = {.value = &x, .resets = 1000, .exit_how = 1};
	run_dtor_case(&always);
	WT_EQ(atomic_load(&always.calls), WEFT_DESTRUCTOR_ITERATIONS);
	WT_OK(weft_shutdown());
}

/* An exited ULT's table is reused by the next ULT of its worker that sets
 * a value: that ULT must start with every value NULL - also those of a
 * second block of keys, and one whose destructor kept setting it again
 * until the iterations ran out. */
enum { REUSE_KEYS = 40 };
static weft_key_t reuse_keys[REUSE_KEYS];
static atomic_int reuse_dtor_calls;

static void reuse_dtor(void *v)
{
	atomic_fetch_add(&reuse_dtor_calls, 1);
	WT_OK(weft_setspecific(reuse_keys[0], v)); /* again, every round */
}

static void *reuse_set_all(void *arg)
{
	for (int i = 0; i < REUSE_KEYS; i++) {
		WT_EQ_PTR(weft_getspecific(reuse_keys[i]), NULL);
		WT_OK(weft_setspecific(reuse_keys[i], arg));
	}
	return NULL;
}

static void test_values_start_null_in_reused_tables(void **state)
{
	wt_init(1); /* one worker: every ULT reuses the tables its predecessors left */
	int x;
	WT_OK(weft_key_create(&reuse_keys[0], reuse_dtor));
	for (int i = 1; i < REUSE_KEYS; i++)
		WT_OK(weft_key_create(&reuse_keys[i], NULL));
	for (int round = 0; round < 3 * 16 + 1; round++)
		wt_join(wt_spawn(NULL, reuse_set_all, &x));
	WT_EQ(atomic_load(&reuse_dtor_calls), (3 * 16 + 1) * WEFT_DESTRUCTOR_ITERATIONS);
	for (int i = 0; i < REUSE_KEYS; i++)
		WT_OK(weft_key_delete(reuse_keys[i]));
	WT_OK(weft_shutdown());
}

/* A destructor of one key sets another key's value: that one's destructor
 * runs in the next iteration. */
static weft_key_t chain_a, chain_b;
static int chain_value;

static void chain_dtor_a(void *v)
{
	log_event(1);
	WT_OK(weft_setspecific(chain_b, &chain_value));
}

static void chain_dtor_b(void *v)
{
	WT_EQ_PTR(v, &chain_value);
	log_event(2);
}

static void *set_chain_a(void *arg)
{
	WT_OK(weft_setspecific(chain_a, &chain_value));
	return NULL;
}

static void test_destructor_sets_other_key(void **state)
{
	wt_init(2);
	/* b is created first, so a plain one-pass loop in key order would miss it */
	WT_OK(weft_key_create(&chain_b, chain_dtor_b));
	WT_OK(weft_key_create(&chain_a, chain_dtor_a));
	wt_join(wt_spawn(NULL, set_chain_a, NULL));
	WT_EQ(atomic_load(&nevents), 2);
	WT_EQ(events[0], 1);
	WT_EQ(events[1], 2);
	WT_OK(weft_shutdown());
}

static atomic_int value_set, key_deleted;

static void *set_then_survive_delete(void *arg)
{
	struct dtor_case *d = arg;
	WT_OK(weft_setspecific(d->k, d->value));
	atomic_store(&value_set, 1);
	WT_WAIT(atomic_load(&key_deleted), 10);
	return NULL;
}

static void test_key_delete_runs_no_destructor(void **state)
{
	wt_init(2);
	int x;
	static struct dtor_case d;
	d.value = &x;
	dcase = &d;
	WT_OK(weft_key_create(&d.k, dtor));
	weft_t t = wt_spawn(NULL, set_then_survive_delete, &d);
	WT_WAIT(atomic_load(&value_set), 10);
	WT_OK(weft_key_delete(d.k));
	atomic_store(&key_deleted, 1);
	wt_join(t);
	WT_EQ(atomic_load(&d.calls), 0);
	WT_OK(weft_shutdown());
}

/* ---- cleanup handlers ---------------------------------------------------- */

static void cleanup_log(void *arg)
{
	log_event((int)(intptr_t)arg);
}

static void *push_pop(void *arg)
{
	weft_cleanup_push(cleanup_log, (void *)1);
	weft_cleanup_push(cleanup_log, (void *)2);
	weft_cleanup_pop(0); /* 2: not run */
	weft_cleanup_push(cleanup_log, (void *)3);
	weft_cleanup_pop(1); /* 3: run now */
	weft_cleanup_pop(1); /* 1: run now */
	return NULL;
}

static void test_cleanup_pop_execute(void **state)
{
	wt_init(1);
	wt_join(wt_spawn(NULL, push_pop, NULL));
	WT_EQ(atomic_load(&nevents), 2);
	WT_EQ(events[0], 3);
	WT_EQ(events[1], 1);
	push_pop(NULL); /* main, too */
	WT_EQ(atomic_load(&nevents), 4);
	WT_OK(weft_shutdown());
}

static void *push_three_and_exit(void *arg)
{
	weft_cleanup_push(cleanup_log, (void *)1);
	weft_cleanup_push(cleanup_log, (void *)2);
	weft_cleanup_push(cleanup_log, (void *)99);
	weft_cleanup_pop(0);
	weft_cleanup_push(cleanup_log, (void *)3);
	weft_exit((void *)42);
	weft_cleanup_pop(0);
	weft_cleanup_pop(0);
	weft_cleanup_pop(0);
	return NULL;
}

static void test_cleanup_runs_lifo_on_exit(void **state)
{
	wt_init(2);
	WT_EQ_PTR(wt_join(wt_spawn(NULL, push_three_and_exit, NULL)), (void *)42);
	WT_EQ(atomic_load(&nevents), 3);
	WT_EQ(events[0], 3);
	WT_EQ(events[1], 2);
	WT_EQ(events[2], 1);
	WT_OK(weft_shutdown());
}

/* ---- cancellation: basics ------------------------------------------------ */

static void *return_arg(void *arg)
{
	return arg;
}

static void test_cancel_unknown_esrch(void **state)
{
	wt_init(2);
	weft_t t = wt_spawn(NULL, return_arg, NULL);
	WT_ERR(weft_cancel(t + 1000000), ESRCH);
	WT_ERR(weft_cancel(WEFT_NULL), ESRCH);
	WT_ERR(weft_cancel(UINT64_MAX), ESRCH);
	wt_join(t);
	WT_ERR(weft_cancel(t), ESRCH); /* joined: gone */
	WT_OK(weft_shutdown());
}

static void test_setcanceltype_and_state_values(void **state)
{
	wt_init(1);
	int old = -5;
	WT_OK(weft_setcanceltype(WEFT_CANCEL_ASYNCHRONOUS, &old));
	WT_EQ(old, WEFT_CANCEL_DEFERRED);
	WT_OK(weft_setcanceltype(WEFT_CANCEL_DEFERRED, &old));
	WT_EQ(old, WEFT_CANCEL_ASYNCHRONOUS);
	WT_ERR(weft_setcanceltype(2, &old), EINVAL);
	WT_ERR(weft_setcanceltype(-1, &old), EINVAL);
	old = -5;
	WT_OK(weft_setcancelstate(WEFT_CANCEL_DISABLE, &old));
	WT_EQ(old, WEFT_CANCEL_ENABLE);
	WT_OK(weft_setcancelstate(WEFT_CANCEL_ENABLE, &old));
	WT_EQ(old, WEFT_CANCEL_DISABLE);
	WT_ERR(weft_setcancelstate(99, &old), EINVAL);
	WT_ERR(weft_setcancelstate(-1, &old), EINVAL);
	WT_OK(weft_setcancelstate(WEFT_CANCEL_ENABLE, &old));
	WT_EQ(old, WEFT_CANCEL_ENABLE); /* the rejected values changed nothing */
	WT_OK(weft_shutdown());
}

struct deferred {
	atomic_int started;
	atomic_int cancel_sent;
	atomic_int worked; /* after the request, before the cancellation point */
	atomic_int survived;
	weft_mutex_t m;
	weft_spinlock_t s;
};

static void *work_then_testcancel(void *arg)
{
	struct deferred *d = arg;
	atomic_store(&d->started, 1);
	WT_WAIT(atomic_load(&d->cancel_sent), 10);
	/* none of these is a cancellation point */
	for (int i = 0; i < 100; i++)
		weft_yield();
	WT_OK(weft_mutex_lock(&d->m));
	WT_OK(weft_mutex_unlock(&d->m));
	WT_OK(weft_spin_lock(&d->s));
	WT_OK(weft_spin_unlock(&d->s));
	atomic_store(&d->worked, 1);
	weft_testcancel();
	atomic_store(&d->survived, 1);
	return NULL;
}

static void test_deferred_cancel_acts_at_testcancel(void **state)
{
	wt_init(2);
	for (int round = 0; round < 4; round++) {
		struct deferred d = {0};
		weft_t t = wt_spawn_on(round % 2 ? 1 : -1, work_then_testcancel, &d);
		WT_WAIT(atomic_load(&d.started), 10);
		WT_OK(weft_cancel(t));
		WT_OK(weft_cancel(t)); /* twice: still one cancellation */
		atomic_store(&d.cancel_sent, 1);
		WT_EQ_PTR(wt_join(t), WEFT_CANCELED);
		WT_EQ(atomic_load(&d.worked), 1);
		WT_EQ(atomic_load(&d.survived), 0);
	}
	WT_OK(weft_shutdown());
}

static void *cancel_self(void *arg)
{
	struct deferred *d = arg;
	WT_OK(weft_cancel(weft_self()));
	atomic_store(&d->worked, 1);
	weft_testcancel();
	atomic_store(&d->survived, 1);
	return NULL;
}

static void test_cancel_self(void **state)
{
	wt_init(2);
	struct deferred d = {0};
	WT_EQ_PTR(wt_join(wt_spawn(NULL, cancel_self, &d)), WEFT_CANCELED);
	WT_EQ(atomic_load(&d.worked), 1);
	WT_EQ(atomic_load(&d.survived), 0);
	WT_OK(weft_shutdown());
}

static void *disable_then_enable(void *arg)
{
	struct deferred *d = arg;
	int old = -5;
	WT_OK(weft_setcancelstate(WEFT_CANCEL_DISABLE, &old));
	WT_EQ(old, WEFT_CANCEL_ENABLE);
	atomic_store(&d->started, 1);
	WT_WAIT(atomic_load(&d->cancel_sent), 10);
	/* cancellation points while disabled: they work as usual */
	weft_testcancel();
	WT_OK(weft_sleep_ns(5 * MS));
	weft_sem_t s = {0};
	struct timespec ts = deadline_in(CLOCK_MONOTONIC, 5 * MS);
	WT_ERR(weft_sem_clockwait(&s, CLOCK_MONOTONIC, &ts), ETIMEDOUT);
	atomic_store(&d->worked, 1);
	WT_OK(weft_setcancelstate(WEFT_CANCEL_ENABLE, &old));
	WT_EQ(old, WEFT_CANCEL_DISABLE);
	weft_testcancel(); /* now it acts */
	atomic_store(&d->survived, 1);
	return NULL;
}

static void test_disabled_cancel_waits_until_enabled(void **state)
{
	wt_init(2);
	struct deferred d = {0};
	weft_t t = wt_spawn_on(1, disable_then_enable, &d);
	WT_WAIT(atomic_load(&d.started), 10);
	WT_OK(weft_cancel(t));
	atomic_store(&d.cancel_sent, 1);
	WT_EQ_PTR(wt_join(t), WEFT_CANCELED);
	WT_EQ(atomic_load(&d.worked), 1);
	WT_EQ(atomic_load(&d.survived), 0);
	WT_OK(weft_shutdown());
}

static void *finish_quickly(void *arg)
{
	atomic_store((atomic_int *)arg, 1);
	return (void *)7;
}

static void test_cancel_of_finished_ult_keeps_its_value(void **state)
{
	wt_init(2);
	atomic_int done = 0;
	weft_t t = wt_spawn(NULL, finish_quickly, &done);
	WT_WAIT(atomic_load(&done), 10);
	for (int i = 0; i < 100; i++)
		weft_yield();
	int r = weft_cancel(t); /* not joined yet: still known, or already gone */
	WT_TRUE(r == 0 || r == ESRCH, "weft_cancel returned %s", wt_errname(r));
	WT_EQ_PTR(wt_join(t), (void *)7);
	WT_OK(weft_shutdown());
}

/* Mutex and spin locks are not cancellation points: a ULT waiting in one
 * with a cancel pending still gets the lock. */
struct lock_waiter {
	weft_mutex_t m;
	weft_spinlock_t s;
	int spin;
	atomic_int started;
	atomic_int got_lock;
};

static void *lock_then_testcancel(void *arg)
{
	struct lock_waiter *w = arg;
	atomic_store(&w->started, 1);
	if (w->spin) {
		WT_OK(weft_spin_lock(&w->s));
		atomic_store(&w->got_lock, 1);
		WT_OK(weft_spin_unlock(&w->s));
	} else {
		WT_OK(weft_mutex_lock(&w->m));
		atomic_store(&w->got_lock, 1);
		WT_OK(weft_mutex_unlock(&w->m));
	}
	weft_testcancel();
	return NULL;
}

static void test_lock_waits_are_not_cancellation_points(void **state)
{
	wt_init(2);
	for (int spin = 0; spin < 2; spin++) {
		static struct lock_waiter w;
		memset(&w, 0, sizeof w);
		w.spin = spin;
		WT_OK(spin ? weft_spin_lock(&w.s) : weft_mutex_lock(&w.m));
		weft_t t = wt_spawn_on(1, lock_then_testcancel, &w);
		WT_WAIT(atomic_load(&w.started), 10);
		WT_OK(weft_sleep_ns(10 * MS)); /* it is waiting for the lock by now */
		WT_OK(weft_cancel(t));
		WT_OK(weft_sleep_ns(10 * MS));
		WT_EQ(atomic_load(&w.got_lock), 0);
		WT_OK(spin ? weft_spin_unlock(&w.s) : weft_mutex_unlock(&w.m));
		WT_EQ_PTR(wt_join(t), WEFT_CANCELED);
		WT_EQ(atomic_load(&w.got_lock), 1);
	}
	WT_OK(weft_shutdown());
}

/* Nor are barrier waits and waits in weft_once (POSIX does not allow them to
 * be): the ULT leaves them normally and acts on the request later. */
static atomic_int once_release;

static void slow_once_fn(void)
{
	WT_WAIT(atomic_load(&once_release), 10);
}

struct not_a_point {
	weft_barrier_t b;
	weft_once_t o;
	int once; /* else the barrier */
	atomic_int started;
	atomic_int passed;
};

static void *run_once(void *arg)
{
	struct not_a_point *n = arg;
	WT_OK(weft_once(&n->o, slow_once_fn));
	return NULL;
}

static void *pass_then_testcancel(void *arg)
{
	struct not_a_point *n = arg;
	atomic_store(&n->started, 1);
	if (n->once) {
		WT_OK(weft_once(&n->o, slow_once_fn));
	} else {
		int r = weft_barrier_wait(&n->b);
		WT_TRUE(r == 0 || r == WEFT_BARRIER_SERIAL_THREAD, "barrier_wait returned %d", r);
	}
	atomic_store(&n->passed, 1);
	weft_testcancel();
	return NULL;
}

static void test_barrier_and_once_waits_are_not_cancellation_points(void **state)
{
	wt_init(2);
	for (int once = 0; once < 2; once++) {
		static struct not_a_point n;
		memset(&n, 0, sizeof n);
		n.once = once;
		WT_OK(weft_barrier_init(&n.b, NULL, 2));
		weft_t runner = WEFT_NULL;
		if (once) { /* someone else is running the once function */
			runner = wt_spawn_on(0, run_once, &n);
			WT_OK(weft_sleep_ns(10 * MS));
		}
		weft_t t = wt_spawn_on(1, pass_then_testcancel, &n);
		WT_WAIT(atomic_load(&n.started), 10);
		WT_OK(weft_sleep_ns(10 * MS)); /* waiting by now */
		WT_OK(weft_cancel(t));
		WT_OK(weft_sleep_ns(10 * MS));
		WT_EQ(atomic_load(&n.passed), 0); /* still waiting: not cancelled */
		if (once) {
			atomic_store(&once_release, 1);
			wt_join(runner);
		} else {
			int r = weft_barrier_wait(&n.b);
			WT_TRUE(r == 0 || r == WEFT_BARRIER_SERIAL_THREAD,
				"barrier_wait returned %d", r);
		}
		WT_EQ_PTR(wt_join(t), WEFT_CANCELED);
		WT_EQ(atomic_load(&n.passed), 1);
		WT_OK(weft_barrier_destroy(&n.b));
	}
	WT_OK(weft_shutdown());
}

/* ---- cancellation at each blocking call ---------------------------------- */

enum point {
	AT_SLEEP_NS,
	AT_NANOSLEEP,
	AT_CLOCK_NANOSLEEP,
	AT_WAIT,
	AT_COND_WAIT,
	AT_COND_TIMEDWAIT,
	AT_SEM_WAIT,
	AT_SEM_TIMEDWAIT,
	AT_JOIN,
	AT_RDLOCK,
	AT_WRLOCK,
};

static const char *const point_names[] = {
	"weft_sleep_ns",
	"weft_nanosleep",
	"weft_clock_nanosleep",
	"weft_wait",
	"weft_cond_wait",
	"weft_cond_timedwait",
	"weft_sem_wait",
	"weft_sem_clockwait",
	"weft_join",
	"weft_rwlock_clockrdlock",
	"weft_rwlock_clockwrlock",
};

struct victim {
	enum point at;
	int pending_first; /* the request arrives before the call is made */
	atomic_int started;
	atomic_int cancel_sent;
	atomic_int cleanups;
	atomic_int returned;
	int cleanup_unlock_rc;
	weft_mutex_t m; /* errorcheck */
	weft_cond_t c;
	weft_sem_t s;
	uint32_t word;
	weft_rwlock_t l;
	weft_t target;
};

static void victim_cleanup(void *arg)
{
	struct victim *v = arg;
	atomic_fetch_add(&v->cleanups, 1);
	if (v->at == AT_COND_WAIT || v->at == AT_COND_TIMEDWAIT) /* m is held again */
		v->cleanup_unlock_rc = weft_mutex_unlock(&v->m);
}

static void *wait_for_sem(void *arg)
{
	WT_OK(weft_sem_wait(arg));
	return (void *)5;
}

/* Blocks until cancelled; the timed calls would give up after 20 s, which
 * main's checks then catch. */
static void *victim_body(void *arg)
{
	struct victim *v = arg;
	long long far = 20 * NS_PER_S;
	struct timespec req = {20, 0};
	struct timespec mono = deadline_in(CLOCK_MONOTONIC, far);
	struct timespec real = deadline_in(CLOCK_REALTIME, far);
	void *ret = NULL;
	weft_cleanup_push(victim_cleanup, v);
	if (v->at == AT_COND_WAIT || v->at == AT_COND_TIMEDWAIT)
		WT_OK(weft_mutex_lock(&v->m));
	atomic_store(&v->started, 1);
	if (v->pending_first)
		WT_WAIT(atomic_load(&v->cancel_sent), 10);
	switch (v->at) {
	case AT_SLEEP_NS:
		weft_sleep_ns((uint64_t)far);
		break;
	case AT_NANOSLEEP:
		weft_nanosleep(&req, NULL);
		break;
	case AT_CLOCK_NANOSLEEP:
		weft_clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &real, NULL);
		break;
	case AT_WAIT:
		weft_wait(&v->word, 0, CLOCK_MONOTONIC, &mono);
		break;
	case AT_COND_WAIT:
		weft_cond_wait(&v->c, &v->m);
		break;
	case AT_COND_TIMEDWAIT:
		weft_cond_timedwait(&v->c, &v->m, &real);
		break;
	case AT_SEM_WAIT:
		weft_sem_wait(&v->s);
		break;
	case AT_SEM_TIMEDWAIT:
		weft_sem_clockwait(&v->s, CLOCK_MONOTONIC, &mono);
		break;
	case AT_JOIN:
		weft_join(v->target, &ret);
		break;
	case AT_RDLOCK:
		weft_rwlock_clockrdlock(&v->l, CLOCK_MONOTONIC, &mono);
		break;
	case AT_WRLOCK:
		weft_rwlock_clockwrlock(&v->l, CLOCK_MONOTONIC, &mono);
		break;
	}
	atomic_store(&v->returned, 1);
	weft_cleanup_pop(0);
	return v;
}

static void *tryrd_result(void *l)
{
	int r = weft_rwlock_tryrdlock(l);
	if (r == 0)
		WT_OK(weft_rwlock_unlock(l));
	return (void *)(intptr_t)r;
}

static void cancel_at(enum point at, int pending_first)
{
	static struct victim v;
	memset(&v, 0, sizeof v);
	v.at = at;
	v.pending_first = pending_first;
	weft_mutexattr_t ma;
	WT_OK(weft_mutexattr_init(&ma));
	WT_OK(weft_mutexattr_settype(&ma, WEFT_MUTEX_ERRORCHECK));
	WT_OK(weft_mutex_init(&v.m, &ma));
	weft_rwlockattr_t ra;
	WT_OK(weft_rwlockattr_init(&ra));
	WT_OK(weft_rwlockattr_setpref(&ra, WEFT_RWLOCK_PREFER_WRITER));
	WT_OK(weft_rwlock_init(&v.l, &ra));
	if (at == AT_RDLOCK)
		WT_OK(weft_rwlock_wrlock(&v.l));
	if (at == AT_WRLOCK)
		WT_OK(weft_rwlock_rdlock(&v.l));
	if (at == AT_JOIN)
		v.target = wt_spawn(NULL, wait_for_sem, &v.s);

	weft_t t = wt_spawn_on(pending_first ? -1 : 1, victim_body, &v);
	WT_WAIT(atomic_load(&v.started), 10);
	if (!pending_first)
		WT_OK(weft_sleep_ns(10 * MS)); /* blocked by now, most likely */
	uint64_t t0 = wt_now_ns();
	WT_OK(weft_cancel(t));
	atomic_store(&v.cancel_sent, 1);
	/* Fail here rather than hang in the join (a barrier wait never ends). */
	while (atomic_load(&v.cleanups) == 0 && atomic_load(&v.returned) == 0) {
		if (wt_now_ns() - t0 > 5 * NS_PER_S)
			fail_msg("a ULT blocked in %s (%s) was not cancelled within 5 s",
				 point_names[at], pending_first ? "request pending" : "blocked");
		WT_OK(weft_sleep_ns(MS));
	}
	WT_EQ_PTR(wt_join(t), WEFT_CANCELED);
	WT_CMPU(wt_now_ns() - t0, <, 10 * NS_PER_S);
	WT_EQ(atomic_load(&v.returned), 0);
	WT_EQ(atomic_load(&v.cleanups), 1);

	/* what it waited on is left clean */
	switch (at) {
	case AT_WAIT:
		WT_EQ(weft_wake(&v.word, INT32_MAX), 0);
		break;
	case AT_COND_WAIT:
	case AT_COND_TIMEDWAIT:
		WT_ERR(v.cleanup_unlock_rc, 0); /* the handler ran with m held */
		WT_OK(weft_mutex_trylock(&v.m));
		WT_OK(weft_mutex_unlock(&v.m));
		WT_OK(weft_cond_destroy(&v.c));
		break;
	case AT_SEM_WAIT:
	case AT_SEM_TIMEDWAIT:
		WT_OK(weft_sem_destroy(&v.s));
		WT_OK(weft_sem_post(&v.s));
		WT_OK(weft_sem_trywait(&v.s));
		break;
	case AT_JOIN: /* the target was not detached nor left half-joined */
		WT_OK(weft_sem_post(&v.s));
		WT_EQ_PTR(wt_join(v.target), (void *)5);
		break;
	case AT_RDLOCK:
		WT_OK(weft_rwlock_unlock(&v.l));
		WT_OK(weft_rwlock_trywrlock(&v.l));
		WT_OK(weft_rwlock_unlock(&v.l));
		WT_OK(weft_rwlock_destroy(&v.l));
		break;
	case AT_WRLOCK: /* no writer left waiting to hold readers back */
		WT_ERR((intptr_t)in_pthread(tryrd_result, &v.l), 0);
		WT_OK(weft_rwlock_unlock(&v.l));
		WT_OK(weft_rwlock_trywrlock(&v.l));
		WT_OK(weft_rwlock_unlock(&v.l));
		WT_OK(weft_rwlock_destroy(&v.l));
		break;
	default:
		break;
	}
}

#define CANCEL_AT_TEST(name, point)                     \
	static void test_cancel_at_##name(void **state) \
	{                                               \
		wt_init(2);                             \
		cancel_at(point, 0);                    \
		cancel_at(point, 1);                    \
		WT_OK(weft_shutdown());                 \
	}
CANCEL_AT_TEST(sleep_ns, AT_SLEEP_NS)
CANCEL_AT_TEST(nanosleep, AT_NANOSLEEP)
CANCEL_AT_TEST(clock_nanosleep, AT_CLOCK_NANOSLEEP)
CANCEL_AT_TEST(wait, AT_WAIT)
CANCEL_AT_TEST(cond_wait, AT_COND_WAIT)
CANCEL_AT_TEST(cond_timedwait, AT_COND_TIMEDWAIT)
CANCEL_AT_TEST(sem_wait, AT_SEM_WAIT)
CANCEL_AT_TEST(sem_timedwait, AT_SEM_TIMEDWAIT)
CANCEL_AT_TEST(join, AT_JOIN)
CANCEL_AT_TEST(rwlock_rdlock, AT_RDLOCK)
CANCEL_AT_TEST(rwlock_wrlock, AT_WRLOCK)

static void *cancel_from_pthread(void *arg)
{
	return (void *)(intptr_t)weft_cancel(*(weft_t *)arg);
}

static void test_cancel_from_foreign_thread(void **state)
{
	wt_init(2);
	static struct victim v;
	v.at = AT_SLEEP_NS;
	weft_t t = wt_spawn(NULL, victim_body, &v);
	WT_WAIT(atomic_load(&v.started), 10);
	WT_ERR((intptr_t)in_pthread(cancel_from_pthread, &t), 0);
	WT_EQ_PTR(wt_join(t), WEFT_CANCELED);
	WT_EQ(atomic_load(&v.cleanups), 1);
	WT_OK(weft_shutdown());
}

/* Cleanup handlers run first (LIFO), then the TSD destructors. */
static weft_key_t order_key;

static void order_dtor(void *v)
{
	log_event(10);
}

static void *order_victim(void *arg)
{
	WT_OK(weft_setspecific(order_key, arg));
	weft_cleanup_push(cleanup_log, (void *)1);
	weft_cleanup_push(cleanup_log, (void *)2);
	atomic_store((atomic_int *)arg, 1);
	WT_OK(weft_sleep_ns(20 * NS_PER_S));
	weft_cleanup_pop(0);
	weft_cleanup_pop(0);
	return NULL;
}

static void test_cancel_runs_cleanup_then_destructors(void **state)
{
	wt_init(2);
	WT_OK(weft_key_create(&order_key, order_dtor));
	atomic_int started = 0;
	weft_t t = wt_spawn(NULL, order_victim, &started);
	WT_WAIT(atomic_load(&started), 10);
	WT_OK(weft_cancel(t));
	WT_EQ_PTR(wt_join(t), WEFT_CANCELED);
	WT_EQ(atomic_load(&nevents), 3);
	WT_EQ(events[0], 2);
	WT_EQ(events[1], 1);
	WT_EQ(events[2], 10);
	WT_OK(weft_shutdown());
}

/* ---- a wake-up racing a cancel is not lost ------------------------------- */

struct sem_race {
	weft_sem_t s;
	atomic_int started;
};

static void *take_one_unit(void *arg)
{
	struct sem_race *r = arg;
	atomic_store(&r->started, 1);
	WT_OK(weft_sem_wait(&r->s));
	return (void *)1; /* no cancellation point after the wait */
}

static void test_sem_post_racing_cancel_not_lost(void **state)
{
	/* Either the waiter took the unit and returned, or it was cancelled and
	 * the unit is still there: never both, never neither. */
	wt_init(2);
	int cancelled = 0, took = 0;
	for (int round = 0; round < 200; round++) {
		struct sem_race r = {0};
		weft_t t = wt_spawn_on(round % 3 == 0 ? -1 : 1, take_one_unit, &r);
		WT_WAIT(atomic_load(&r.started), 10);
		for (int i = 0; i < round % 7; i++)
			weft_yield();
		if (round % 2) {
			WT_OK(weft_sem_post(&r.s));
			WT_OK(weft_cancel(t));
		} else {
			WT_OK(weft_cancel(t));
			WT_OK(weft_sem_post(&r.s));
		}
		void *ret = wt_join(t);
		int v = -1;
		WT_OK(weft_sem_getvalue(&r.s, &v));
		if (ret == WEFT_CANCELED) {
			cancelled++;
			WT_EQ(v, 1);
		} else {
			took++;
			WT_EQ_PTR(ret, (void *)1);
			WT_EQ(v, 0);
		}
	}
	printf("%d cancelled, %d took the unit\n", cancelled, took);
	WT_OK(weft_shutdown());
}

static void test_cancelled_sem_waiter_leaves_post_to_other_waiter(void **state)
{
	wt_init(2);
	static struct sem_race r; /* two waiters on r.s */
	weft_t t1 = wt_spawn_on(1, take_one_unit, &r);
	WT_WAIT(atomic_load(&r.started), 10);
	WT_OK(weft_sleep_ns(10 * MS));
	weft_t t2 = wt_spawn_on(0, take_one_unit, &r);
	WT_OK(weft_sleep_ns(10 * MS)); /* both blocked by now, most likely */
	WT_OK(weft_cancel(t1));
	WT_EQ_PTR(wt_join(t1), WEFT_CANCELED);
	WT_OK(weft_sem_post(&r.s));
	WT_EQ_PTR(wt_join(t2), (void *)1);
	int v = -1;
	WT_OK(weft_sem_getvalue(&r.s, &v));
	WT_EQ(v, 0);
	WT_OK(weft_shutdown());
}

struct cond_race {
	weft_mutex_t m;
	weft_cond_t c;
	int waiting;
	int tickets;
	int proceeded;
};

static void unlock_mutex(void *m)
{
	WT_OK(weft_mutex_unlock(m));
}

static void *take_ticket(void *arg)
{
	struct cond_race *r = arg;
	WT_OK(weft_mutex_lock(&r->m));
	r->waiting++;
	weft_cleanup_push(unlock_mutex, &r->m);
	while (r->tickets == 0)
		WT_OK(weft_cond_wait(&r->c, &r->m));
	weft_cleanup_pop(0);
	r->tickets--;
	r->proceeded++;
	WT_OK(weft_mutex_unlock(&r->m));
	return (void *)1;
}

static int read_locked(weft_mutex_t *m, const int *p)
{
	WT_OK(weft_mutex_lock(m));
	int v = *p;
	WT_OK(weft_mutex_unlock(m));
	return v;
}

static void test_cond_signal_racing_cancel_not_lost(void **state)
{
	/* Two waiters, one signal with one ticket, and a cancel of the first: if
	 * it is cancelled, the signal must still reach the other. */
	wt_init(2);
	int cancelled = 0, took = 0;
	for (int round = 0; round < 100; round++) {
		static struct cond_race r;
		memset(&r, 0, sizeof r);
		weft_t w1 = wt_spawn_on(1, take_ticket, &r);
		uint64_t deadline = wt_now_ns() + 10 * NS_PER_S;
		while (read_locked(&r.m, &r.waiting) < 1) {
			WT_CMPU(wt_now_ns(), <, deadline);
			weft_yield();
		}
		weft_t w2 = wt_spawn_on(round % 2, take_ticket, &r);
		while (read_locked(&r.m, &r.waiting) < 2) {
			WT_CMPU(wt_now_ns(), <, deadline);
			weft_yield();
		}
		if (round % 2)
			WT_OK(weft_cancel(w1));
		WT_OK(weft_mutex_lock(&r.m));
		r.tickets = 1;
		WT_OK(weft_cond_signal(&r.c));
		WT_OK(weft_mutex_unlock(&r.m));
		if (round % 2 == 0)
			WT_OK(weft_cancel(w1));
		void *ret1 = wt_join(w1);
		if (ret1 == WEFT_CANCELED) {
			cancelled++;
		} else {
			took++;
			WT_EQ_PTR(ret1, (void *)1);
			WT_OK(weft_mutex_lock(&r.m)); /* w2 needs a ticket of its own */
			r.tickets++;
			WT_OK(weft_cond_signal(&r.c));
			WT_OK(weft_mutex_unlock(&r.m));
		}
		WT_EQ_PTR(wt_join(w2), (void *)1);
		WT_EQ(r.tickets, 0);
		WT_OK(weft_cond_destroy(&r.c));
	}
	printf("%d cancelled, %d took the ticket\n", cancelled, took);
	WT_OK(weft_shutdown());
}

/* A broadcast made with the mutex held wakes one waiter and moves the others
 * onto the mutex's wait queue (cond.c); a waiter that was moved is still
 * inside weft_cond_wait, blocked, so a cancel must reach it there: it acts
 * once it has the mutex back, in its cleanup handler, and never gets past
 * its wait. (weft's behaviour: glibc's broadcast wakes every waiter at once,
 * and a woken one may return normally instead.) */
struct moved {
	weft_mutex_t m;
	weft_cond_t c;
	int waiting, go, done;
	atomic_int cleanups, cleanup_rc;
};

static void moved_cleanup(void *arg)
{
	struct moved *r = arg;
	atomic_fetch_add(&r->cleanups, 1);
	atomic_store(&r->cleanup_rc, weft_mutex_unlock(&r->m)); /* EPERM if not ours */
}

static void *moved_waiter(void *arg)
{
	struct moved *r = arg;
	WT_OK(weft_mutex_lock(&r->m));
	r->waiting++;
	weft_cleanup_push(moved_cleanup, r);
	while (!r->go)
		WT_OK(weft_cond_wait(&r->c, &r->m));
	weft_cleanup_pop(0);
	r->done++;
	WT_OK(weft_mutex_unlock(&r->m));
	weft_testcancel();
	return (void *)1;
}

static void *nothing(void *arg)
{
	return arg;
}

static void test_cancel_reaches_waiter_moved_to_mutex_queue(void **state)
{
	wt_init(2);
	for (int round = 0; round < 50; round++) {
		static struct moved r;
		memset(&r, 0, sizeof r);
		weft_mutexattr_t ma;
		WT_OK(weft_mutexattr_init(&ma));
		WT_OK(weft_mutexattr_settype(&ma, WEFT_MUTEX_ERRORCHECK));
		WT_OK(weft_mutex_init(&r.m, &ma));
		atomic_store(&r.cleanup_rc, -1);
		weft_t w[3];
		uint64_t deadline = wt_now_ns() + 10 * NS_PER_S;
		/* All on worker 1, the canceller on another: once w[i] has let
		 * the mutex go in its wait, it queues itself and parks before
		 * its worker can run the next ULT there (w[i + 1], then one that
		 * does nothing), so they queue in this order, all before the
		 * broadcast. */
		for (int i = 0; i < 3; i++) {
			w[i] = wt_spawn_on(1, moved_waiter, &r);
			while (read_locked(&r.m, &r.waiting) < i + 1) {
				WT_CMPU(wt_now_ns(), <, deadline);
				weft_yield();
			}
		}
		wt_join(wt_spawn_on(1, nothing, NULL));
		WT_OK(weft_mutex_lock(&r.m));
		r.go = 1;
		WT_OK(weft_cond_broadcast(&r.c)); /* wakes w[0], moves w[1] and w[2] */
		WT_OK(weft_cancel(w[2]));
		for (int i = 0; i < 20; i++)
			weft_yield(); /* let it reach the mutex's queue again, or not */
		WT_OK(weft_mutex_unlock(&r.m));
		WT_EQ_PTR(wt_join(w[2]), WEFT_CANCELED);
		WT_EQ_PTR(wt_join(w[0]), (void *)1);
		WT_EQ_PTR(wt_join(w[1]), (void *)1);
		WT_EQ(atomic_load(&r.cleanups), 1);
		WT_EQ(atomic_load(&r.cleanup_rc), 0); /* it held the mutex when it acted */
		WT_EQ(r.done, 2);
		WT_OK(weft_mutex_trylock(&r.m));
		WT_OK(weft_mutex_unlock(&r.m));
		WT_OK(weft_cond_destroy(&r.c));
		WT_OK(weft_mutex_destroy(&r.m));
	}
	WT_OK(weft_shutdown());
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_create_set_get_delete),
		cmocka_unit_test(test_invalid_keys),
		cmocka_unit_test(test_keys_max_then_eagain),
		cmocka_unit_test(test_values_are_per_ult),
		cmocka_unit_test(test_destructor_runs_at_exit),
		cmocka_unit_test(test_destructor_not_called_for_null),
		cmocka_unit_test(test_destructor_iterations),
		cmocka_unit_test(test_values_start_null_in_reused_tables),
		cmocka_unit_test(test_destructor_sets_other_key),
		cmocka_unit_test(test_key_delete_runs_no_destructor),
		cmocka_unit_test(test_cleanup_pop_execute),
		cmocka_unit_test(test_cleanup_runs_lifo_on_exit),
		cmocka_unit_test(test_cancel_unknown_esrch),
		cmocka_unit_test(test_setcanceltype_and_state_values),
		cmocka_unit_test(test_deferred_cancel_acts_at_testcancel),
		cmocka_unit_test(test_cancel_self),
		cmocka_unit_test(test_disabled_cancel_waits_until_enabled),
		cmocka_unit_test(test_cancel_of_finished_ult_keeps_its_value),
		cmocka_unit_test(test_lock_waits_are_not_cancellation_points),
		cmocka_unit_test(test_barrier_and_once_waits_are_not_cancellation_points),
		cmocka_unit_test(test_cancel_at_sleep_ns),
		cmocka_unit_test(test_cancel_at_nanosleep),
		cmocka_unit_test(test_cancel_at_clock_nanosleep),
		cmocka_unit_test(test_cancel_at_wait),
		cmocka_unit_test(test_cancel_at_cond_wait),
		cmocka_unit_test(test_cancel_at_cond_timedwait),
		cmocka_unit_test(test_cancel_at_sem_wait),
		cmocka_unit_test(test_cancel_at_sem_timedwait),
		cmocka_unit_test(test_cancel_at_join),
		cmocka_unit_test(test_cancel_at_rwlock_rdlock),
		cmocka_unit_test(test_cancel_at_rwlock_wrlock),
		cmocka_unit_test(test_cancel_from_foreign_thread),
		cmocka_unit_test(test_cancel_runs_cleanup_then_destructors),
		cmocka_unit_test(test_sem_post_racing_cancel_not_lost),
		cmocka_unit_test(test_cancelled_sem_waiter_leaves_post_to_other_waiter),
		cmocka_unit_test(test_cond_signal_racing_cancel_not_lost),
		cmocka_unit_test(test_cancel_reaches_waiter_moved_to_mutex_queue),
	};
	return WT_RUN(argc, argv, tests);
}
