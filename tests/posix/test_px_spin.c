/* Spin locks: real mutual exclusion (a plain counter and a two-word
 * invariant that only the lock protects, with more threads than CPUs),
 * trylock, a lock that waits for the holder, and both pshared values. */
#include "ptest.h"

#define ITERS 100000

struct exclusion {
	pthread_barrier_t start; /* so that the threads really overlap */
	pthread_spinlock_t l;
	long counter;      /* plain: only the lock protects it */
	long a, b;         /* a == b outside the lock */
	atomic_int inside; /* threads inside the critical section */
};

static void *hammer(void *arg)
{
	struct exclusion *x = arg;
	int e = pthread_barrier_wait(&x->start);
	PX_TRUE(e == 0 || e == PTHREAD_BARRIER_SERIAL_THREAD, "barrier_wait returned %d", e);
	for (int i = 0; i < ITERS; i++) {
		PX_OK(pthread_spin_lock(&x->l));
		int others = atomic_fetch_add(&x->inside, 1);
		PX_EQ(others, 0);
		PX_EQ(x->a, x->b);
		x->a++;
		x->counter++;
		x->b++;
		atomic_fetch_sub(&x->inside, 1);
		PX_OK(pthread_spin_unlock(&x->l));
	}
	return NULL;
}

static void check_exclusion(int pshared, int nthreads)
{
	struct exclusion x = {.counter = 0};
	PX_OK(pthread_spin_init(&x.l, pshared));
	PX_OK(pthread_barrier_init(&x.start, NULL, (unsigned)nthreads));
	pthread_t t[16];
	for (int i = 0; i < nthreads; i++)
		t[i] = px_start(NULL, hammer, &x);
	for (int i = 0; i < nthreads; i++)
		px_join(t[i]);
	PX_EQ(x.counter, (long)nthreads * ITERS);
	PX_EQ(x.a, x.b);
	PX_OK(pthread_spin_destroy(&x.l));
	PX_OK(pthread_barrier_destroy(&x.start));
}

static void test_mutual_exclusion_private(void **state)
{
	check_exclusion(PTHREAD_PROCESS_PRIVATE, 2);
	check_exclusion(PTHREAD_PROCESS_PRIVATE, 4);
}

/* PTHREAD_PROCESS_SHARED also works between threads of one process. */
static void test_mutual_exclusion_shared(void **state)
{
	check_exclusion(PTHREAD_PROCESS_SHARED, 4);
}

/* More spinning threads than CPUs: holders get preempted (or, on a
 * cooperative scheduler, must never be kept from running). */
static void test_mutual_exclusion_oversubscribed(void **state)
{
	check_exclusion(PTHREAD_PROCESS_PRIVATE, 8);
}

struct try_arg {
	pthread_spinlock_t *l;
	int ret;
};

static void *try_elsewhere(void *arg)
{
	struct try_arg *t = arg;
	t->ret = pthread_spin_trylock(t->l);
	if (t->ret == 0)
		PX_OK(pthread_spin_unlock(t->l));
	return NULL;
}

static int remote_trylock(pthread_spinlock_t *l)
{
	struct try_arg t = {l, -1};
	px_join(px_start(NULL, try_elsewhere, &t));
	return t.ret;
}

/* trylock fails with EBUSY whenever any thread, the caller included, holds
 * the lock. */
static void test_trylock(void **state)
{
	pthread_spinlock_t l;
	PX_OK(pthread_spin_init(&l, PTHREAD_PROCESS_PRIVATE));
	PX_OK(pthread_spin_trylock(&l));
	PX_ERR(pthread_spin_trylock(&l), EBUSY);
	PX_ERR(remote_trylock(&l), EBUSY);
	PX_OK(pthread_spin_unlock(&l));
	PX_OK(remote_trylock(&l));
	PX_OK(pthread_spin_lock(&l));
	PX_ERR(remote_trylock(&l), EBUSY);
	PX_OK(pthread_spin_unlock(&l));
	PX_OK(pthread_spin_destroy(&l));
}

struct holder {
	pthread_spinlock_t *l;
	atomic_int locked;
	atomic_int released; /* set just before unlocking */
};

static void *hold_briefly(void *arg)
{
	struct holder *h = arg;
	PX_OK(pthread_spin_lock(h->l));
	atomic_store(&h->locked, 1);
	/* Blocking while holding a spin lock is allowed, if unwise. */
	px_sleep_ns(50 * PX_NS_PER_MS);
	atomic_store(&h->released, 1);
	PX_OK(pthread_spin_unlock(h->l));
	return NULL;
}

/* pthread_spin_lock returns only once the holder has unlocked. */
static void test_lock_waits_for_holder(void **state)
{
	pthread_spinlock_t l;
	PX_OK(pthread_spin_init(&l, PTHREAD_PROCESS_PRIVATE));
	struct holder h = {.l = &l};
	pthread_t t = px_start(NULL, hold_briefly, &h);
	PX_WAIT(atomic_load(&h.locked), 10);
	PX_OK(pthread_spin_lock(&l));
	PX_EQ(atomic_load(&h.released), 1);
	PX_OK(pthread_spin_unlock(&l));
	px_join(t);
	PX_OK(pthread_spin_destroy(&l));
}

/* Init, use, destroy, init again. */
static void test_reinit(void **state)
{
	pthread_spinlock_t l;
	for (int i = 0; i < 100; i++) {
		PX_OK(pthread_spin_init(&l,
					i % 2 ? PTHREAD_PROCESS_SHARED : PTHREAD_PROCESS_PRIVATE));
		PX_OK(pthread_spin_lock(&l));
		PX_OK(pthread_spin_unlock(&l));
		PX_OK(pthread_spin_destroy(&l));
	}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		PX_TEST(test_mutual_exclusion_private),
		PX_TEST(test_mutual_exclusion_shared),
		PX_TEST(test_mutual_exclusion_oversubscribed),
		PX_TEST(test_trylock),
		PX_TEST(test_lock_waits_for_holder),
		PX_TEST(test_reinit),
	};
	return PX_RUN(argc, argv, tests);
}
