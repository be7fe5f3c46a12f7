/* Barriers: nobody passes until all have arrived, exactly one waiter per
 * cycle gets PTHREAD_BARRIER_SERIAL_THREAD, the barrier is reusable for many
 * cycles, a count of 1, more threads than CPUs, and the attributes. */
#include "ptest.h"

#include <stdlib.h>

#define ROUNDS 1000

struct cycle {
	pthread_barrier_t b;
	int n; /* threads taking part */
	atomic_int arrived[ROUNDS];
	atomic_int serial[ROUNDS];
};

static void *run_cycles(void *arg)
{
	struct cycle *c = arg;
	for (int r = 0; r < ROUNDS; r++) {
		atomic_fetch_add(&c->arrived[r], 1);
		int e = pthread_barrier_wait(&c->b);
		if (e == PTHREAD_BARRIER_SERIAL_THREAD)
			atomic_fetch_add(&c->serial[r], 1);
		else
			PX_OK(e);
		/* Everyone had arrived before anyone got through. */
		PX_EQ(atomic_load(&c->arrived[r]), c->n);
	}
	return NULL;
}

/* n threads (the main thread among them) pass the barrier ROUNDS times. */
static void check_cycles(int n)
{
	struct cycle *c = calloc(1, sizeof *c);
	PX_TRUE(c != NULL, "calloc");
	c->n = n;
	PX_OK(pthread_barrier_init(&c->b, NULL, (unsigned)n));
	pthread_t *t = calloc((size_t)n, sizeof *t);
	for (int i = 1; i < n; i++)
		t[i] = px_start(NULL, run_cycles, c);
	run_cycles(c);
	for (int i = 1; i < n; i++)
		px_join(t[i]);
	for (int r = 0; r < ROUNDS; r++)
		if (atomic_load(&c->serial[r]) != 1)
			fail_msg("round %d: %d serial threads, expected exactly 1", r,
				 atomic_load(&c->serial[r]));
	PX_OK(pthread_barrier_destroy(&c->b));
	free(t);
	free(c);
}

static void test_two_threads_many_cycles(void **state)
{
	check_cycles(2);
}

static void test_eight_threads_many_cycles(void **state)
{
	check_cycles(8);
}

/* Many more threads than CPUs: the last arrival must wake all the others. */
static void test_sixty_four_threads_many_cycles(void **state)
{
	check_cycles(64);
}

/* A barrier for one thread never blocks, and its one waiter is serial. */
static void test_count_one_never_blocks(void **state)
{
	pthread_barrier_t b;
	PX_OK(pthread_barrier_init(&b, NULL, 1));
	for (int i = 0; i < 100; i++)
		PX_EQ(pthread_barrier_wait(&b), PTHREAD_BARRIER_SERIAL_THREAD);
	PX_OK(pthread_barrier_destroy(&b));
}

struct late {
	pthread_barrier_t b;
	atomic_int passed;
};

static void *wait_and_mark(void *arg)
{
	struct late *l = arg;
	int e = pthread_barrier_wait(&l->b);
	PX_TRUE(e == 0 || e == PTHREAD_BARRIER_SERIAL_THREAD, "barrier_wait returned %d", e);
	atomic_fetch_add(&l->passed, 1);
	return NULL;
}

/* Waiters stay blocked while one party is missing, however long it takes. */
static void test_waiters_wait_for_the_last(void **state)
{
	struct late l = {.passed = 0};
	PX_OK(pthread_barrier_init(&l.b, NULL, 4));
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		t[i] = px_start(NULL, wait_and_mark, &l);
	px_sleep_ns(100 * PX_NS_PER_MS);
	PX_EQ(atomic_load(&l.passed), 0);
	wait_and_mark(&l);
	for (int i = 0; i < 3; i++)
		px_join(t[i]);
	PX_EQ(atomic_load(&l.passed), 4);
	PX_OK(pthread_barrier_destroy(&l.b));
}

/* A barrier can be destroyed and initialised again with another count. */
static void test_destroy_and_reinit(void **state)
{
	pthread_barrier_t b;
	for (unsigned n = 1; n <= 4; n++) {
		PX_OK(pthread_barrier_init(&b, NULL, n));
		if (n == 1)
			PX_EQ(pthread_barrier_wait(&b), PTHREAD_BARRIER_SERIAL_THREAD);
		PX_OK(pthread_barrier_destroy(&b));
	}
	check_cycles(3);
}

static void test_barrierattr_pshared(void **state)
{
	pthread_barrierattr_t a;
	int v = -1;
	PX_OK(pthread_barrierattr_init(&a));
	PX_OK(pthread_barrierattr_getpshared(&a, &v));
	PX_EQ(v, PTHREAD_PROCESS_PRIVATE);
	PX_OK(pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED));
	PX_OK(pthread_barrierattr_getpshared(&a, &v));
	PX_EQ(v, PTHREAD_PROCESS_SHARED);
	PX_OK(pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_PRIVATE));
	PX_OK(pthread_barrierattr_getpshared(&a, &v));
	PX_EQ(v, PTHREAD_PROCESS_PRIVATE);

	/* A barrier made from an attribute object works like any other. */
	pthread_barrier_t b;
	PX_OK(pthread_barrier_init(&b, &a, 1));
	PX_EQ(pthread_barrier_wait(&b), PTHREAD_BARRIER_SERIAL_THREAD);
	PX_OK(pthread_barrier_destroy(&b));
	PX_OK(pthread_barrierattr_destroy(&a));
}

/* "shall fail" in POSIX: a count of zero. */
static void test_count_zero_einval(void **state)
{
	pthread_barrier_t b;
	PX_ERR(pthread_barrier_init(&b, NULL, 0), EINVAL);
}

/* "may fail" in POSIX; glibc reports it, and weft should report the same. */
static void test_barrier_may_fail(void **state)
{
	pthread_barrierattr_t a;
	PX_OK(pthread_barrierattr_init(&a));
	PX_ERR(pthread_barrierattr_setpshared(&a, 12345), EINVAL);
	PX_OK(pthread_barrierattr_destroy(&a));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		PX_TEST(test_two_threads_many_cycles),
		PX_TEST(test_eight_threads_many_cycles),
		PX_TEST(test_sixty_four_threads_many_cycles),
		PX_TEST(test_count_one_never_blocks),
		PX_TEST(test_waiters_wait_for_the_last),
		PX_TEST(test_destroy_and_reinit),
		PX_TEST(test_barrierattr_pshared),
		PX_TEST(test_count_zero_einval),
		PX_TEST(test_barrier_may_fail),
	};
	return PX_RUN(argc, argv, tests);
}
