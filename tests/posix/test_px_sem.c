/* Unnamed semaphores: sem_init/wait/trywait/timedwait/clockwait/post/
 * getvalue/destroy. These calls report errors the old way: -1 with errno set,
 * never an error number as the return value. A post wakes a blocked waiter;
 * counts are never lost or duplicated between many posters and waiters. */
#include "ptest.h"

#include <limits.h>
#include <semaphore.h>

static int value_of(sem_t *s)
{
	int v = -12345;
	PX_SYSOK(sem_getvalue(s, &v));
	return v;
}

static void test_init_getvalue_post_trywait(void **state)
{
	sem_t s;
	PX_SYSOK(sem_init(&s, 0, 3));
	PX_EQ(value_of(&s), 3);
	PX_SYSOK(sem_trywait(&s));
	PX_SYSOK(sem_wait(&s));
	PX_EQ(value_of(&s), 1);
	PX_SYSOK(sem_trywait(&s));
	PX_EQ(value_of(&s), 0);
	PX_ERRNO(sem_trywait(&s), EAGAIN);
	PX_EQ(value_of(&s), 0);
	for (int i = 0; i < 5; i++)
		PX_SYSOK(sem_post(&s));
	PX_EQ(value_of(&s), 5);
	PX_SYSOK(sem_destroy(&s));

	/* pshared != 0 is valid too (for use between threads here). */
	PX_SYSOK(sem_init(&s, 1, 0));
	PX_ERRNO(sem_trywait(&s), EAGAIN);
	PX_SYSOK(sem_post(&s));
	PX_SYSOK(sem_wait(&s));
	PX_SYSOK(sem_destroy(&s));

	/* The largest initial value. */
	PX_SYSOK(sem_init(&s, 0, SEM_VALUE_MAX));
	PX_EQ(value_of(&s), SEM_VALUE_MAX);
	PX_SYSOK(sem_destroy(&s));
}

/* "shall fail" in POSIX: an initial value above SEM_VALUE_MAX. */
static void test_init_too_large(void **state)
{
	sem_t s;
	PX_CMP(SEM_VALUE_MAX, <, UINT_MAX);
	PX_ERRNO(sem_init(&s, 0, (unsigned)SEM_VALUE_MAX + 1u), EINVAL);
}

struct poster {
	sem_t *s;
	atomic_int go;
	atomic_int posted; /* set just before posting */
};

static void *post_when_told(void *arg)
{
	struct poster *p = arg;
	PX_WAIT(atomic_load(&p->go), 30);
	px_sleep_ns(30 * PX_NS_PER_MS);
	atomic_store(&p->posted, 1);
	PX_SYSOK(sem_post(p->s));
	return NULL;
}

/* sem_wait blocks until a post, and returns after it. */
static void test_wait_blocks_until_post(void **state)
{
	sem_t s;
	PX_SYSOK(sem_init(&s, 0, 0));
	struct poster p = {.s = &s};
	pthread_t t = px_start(NULL, post_when_told, &p);
	atomic_store(&p.go, 1);
	PX_SYSOK(sem_wait(&s));
	PX_EQ(atomic_load(&p.posted), 1);
	PX_EQ(value_of(&s), 0);
	px_join(t);
	PX_SYSOK(sem_destroy(&s));
}

static void test_timedwait(void **state)
{
	sem_t s;
	PX_SYSOK(sem_init(&s, 0, 0));

	/* Nobody posts: -1/ETIMEDOUT, no earlier than the deadline. */
	struct timespec ts = px_deadline(CLOCK_REALTIME, 100 * PX_NS_PER_MS);
	PX_ERRNO(sem_timedwait(&s, &ts), ETIMEDOUT);
	PX_TIMED_OUT_AT(CLOCK_REALTIME, &ts);
	struct timespec past = px_deadline(CLOCK_REALTIME, -PX_NS_PER_S);
	PX_ERRNO(sem_timedwait(&s, &past), ETIMEDOUT);

	/* Never a timeout when the semaphore can be taken at once. */
	PX_SYSOK(sem_post(&s));
	PX_SYSOK(sem_timedwait(&s, &past));
	PX_EQ(value_of(&s), 0);

	/* "shall fail": a bad timespec when the call would block. */
	struct timespec bad = {.tv_sec = past.tv_sec + 100, .tv_nsec = 1000000000};
	PX_ERRNO(sem_timedwait(&s, &bad), EINVAL);
	bad.tv_nsec = -1;
	PX_ERRNO(sem_timedwait(&s, &bad), EINVAL);

	/* A post before the deadline ends the wait with success. */
	struct poster p = {.s = &s};
	pthread_t t = px_start(NULL, post_when_told, &p);
	atomic_store(&p.go, 1);
	ts = px_deadline(CLOCK_REALTIME, 30 * PX_NS_PER_S);
	PX_SYSOK(sem_timedwait(&s, &ts));
	PX_EQ(atomic_load(&p.posted), 1);
	px_join(t);
	PX_SYSOK(sem_destroy(&s));
}

/* sem_clockwait (POSIX.1-2024, glibc 2.30) on both clocks. */
static void test_clockwait(void **state)
{
	clockid_t clocks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};
	for (int i = 0; i < 2; i++) {
		clockid_t c = clocks[i];
		sem_t s;
		PX_SYSOK(sem_init(&s, 0, 0));
		struct timespec ts = px_deadline(c, 50 * PX_NS_PER_MS);
		PX_ERRNO(sem_clockwait(&s, c, &ts), ETIMEDOUT);
		PX_TIMED_OUT_AT(c, &ts);
		PX_SYSOK(sem_post(&s));
		struct timespec past = px_deadline(c, -PX_NS_PER_S);
		PX_SYSOK(sem_clockwait(&s, c, &past));

		struct poster p = {.s = &s};
		pthread_t t = px_start(NULL, post_when_told, &p);
		atomic_store(&p.go, 1);
		ts = px_deadline(c, 30 * PX_NS_PER_S);
		PX_SYSOK(sem_clockwait(&s, c, &ts));
		PX_EQ(atomic_load(&p.posted), 1);
		px_join(t);
		PX_SYSOK(sem_destroy(&s));
	}
}

#define N_WAITERS 8

struct crowd {
	sem_t s;
	atomic_int through;
};

static void *wait_once(void *arg)
{
	struct crowd *c = arg;
	PX_SYSOK(sem_wait(&c->s));
	atomic_fetch_add(&c->through, 1);
	return NULL;
}

/* Each post lets exactly one blocked waiter through. */
static void test_each_post_wakes_one(void **state)
{
	struct crowd c = {.through = 0};
	PX_SYSOK(sem_init(&c.s, 0, 0));
	pthread_t t[N_WAITERS];
	for (int i = 0; i < N_WAITERS; i++)
		t[i] = px_start(NULL, wait_once, &c);
	px_sleep_ns(20 * PX_NS_PER_MS);
	for (int i = 1; i <= N_WAITERS; i++) {
		PX_SYSOK(sem_post(&c.s));
		PX_WAIT(atomic_load(&c.through) == i, 10);
		/* No second waiter got through on the same post. */
		px_sleep_ns(2 * PX_NS_PER_MS);
		PX_EQ(atomic_load(&c.through), i);
	}
	for (int i = 0; i < N_WAITERS; i++)
		px_join(t[i]);
	PX_EQ(value_of(&c.s), 0);
	PX_SYSOK(sem_destroy(&c.s));
}

#define N_PAIRS  4
#define PER_PAIR 20000

struct flow {
	sem_t items;
	atomic_long taken;
};

static void *post_many(void *arg)
{
	struct flow *f = arg;
	for (int i = 0; i < PER_PAIR; i++)
		PX_SYSOK(sem_post(&f->items));
	return NULL;
}

static void *take_many(void *arg)
{
	struct flow *f = arg;
	for (int i = 0; i < PER_PAIR; i++) {
		if (i % 2)
			PX_SYSOK(sem_wait(&f->items));
		else
			while (sem_trywait(&f->items) != 0) {
				PX_EQ(errno, EAGAIN);
				sched_yield();
			}
		atomic_fetch_add(&f->taken, 1);
	}
	return NULL;
}

/* Posters and waiters in parallel: every post is taken exactly once. */
static void test_many_posters_and_waiters(void **state)
{
	struct flow f = {.taken = 0};
	PX_SYSOK(sem_init(&f.items, 0, 0));
	pthread_t t[2 * N_PAIRS];
	for (int i = 0; i < N_PAIRS; i++) {
		t[2 * i] = px_start(NULL, take_many, &f);
		t[2 * i + 1] = px_start(NULL, post_many, &f);
	}
	for (int i = 0; i < 2 * N_PAIRS; i++)
		px_join(t[i]);
	PX_EQ(atomic_load(&f.taken), (long)N_PAIRS * PER_PAIR);
	PX_EQ(value_of(&f.items), 0);
	PX_ERRNO(sem_trywait(&f.items), EAGAIN);
	PX_SYSOK(sem_destroy(&f.items));
}

/* A semaphore of one as a mutex. */
struct binary {
	sem_t s;
	long counter;
	atomic_int inside;
};

static void *use_as_mutex(void *arg)
{
	struct binary *b = arg;
	for (int i = 0; i < 20000; i++) {
		PX_SYSOK(sem_wait(&b->s));
		int was = atomic_fetch_add(&b->inside, 1);
		PX_EQ(was, 0);
		b->counter++;
		atomic_fetch_sub(&b->inside, 1);
		PX_SYSOK(sem_post(&b->s));
	}
	return NULL;
}

static void test_binary_semaphore_excludes(void **state)
{
	struct binary b = {.counter = 0};
	PX_SYSOK(sem_init(&b.s, 0, 1));
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		t[i] = px_start(NULL, use_as_mutex, &b);
	for (int i = 0; i < 4; i++)
		px_join(t[i]);
	PX_EQ(b.counter, 4L * 20000);
	PX_EQ(value_of(&b.s), 1);
	PX_SYSOK(sem_destroy(&b.s));
}

/* Errors POSIX lists under "may fail" (or, for clockwait, leaves to the
 * implementation); glibc reports them, and weft should report the same. */
static void test_sem_may_fail(void **state)
{
	sem_t s;
	PX_SYSOK(sem_init(&s, 0, SEM_VALUE_MAX));
	PX_ERRNO(sem_post(&s), EOVERFLOW);
	PX_EQ(value_of(&s), SEM_VALUE_MAX);
	PX_SYSOK(sem_destroy(&s));

	PX_SYSOK(sem_init(&s, 0, 0));
	struct timespec ts = px_deadline(CLOCK_MONOTONIC, PX_NS_PER_S);
	PX_ERRNO(sem_clockwait(&s, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
	PX_SYSOK(sem_destroy(&s));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		PX_TEST(test_init_getvalue_post_trywait),
		PX_TEST(test_init_too_large),
		PX_TEST(test_wait_blocks_until_post),
		PX_TEST(test_timedwait),
		PX_TEST(test_clockwait),
		PX_TEST(test_each_post_wakes_one),
		PX_TEST(test_many_posters_and_waiters),
		PX_TEST(test_binary_semaphore_excludes),
		PX_TEST(test_sem_may_fail),
	};
	return PX_RUN(argc, argv, tests);
}
