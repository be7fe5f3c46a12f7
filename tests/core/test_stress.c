/* A randomized mix of create/join/detach/yield/park/unpark from several ULTs
 * (bound and unbound) and foreign pthreads at once, for a bounded time.
 * Checks that every join returns its thread's value and that every ULT
 * created also finished.
 *
 *   WEFT_STRESS_SECONDS  how long to run (default 5)
 *   WEFT_STRESS_SEED     the random seed (default: from the clock; printed)
 * A long run is registered separately with the "stress" label. */
#include "harness.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

enum { ULT_ACTORS = 8, PTHREAD_ACTORS = 2, MAX_CHILDREN = 32 };

static uint64_t deadline;
static uint64_t seed;
static int nworkers;
static atomic_long spawned, finished, joins, detaches, yields, unparks;

static uint64_t next_rand(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static void *leaf(void *arg)
{
	intptr_t v = (intptr_t)arg;
	for (intptr_t i = 0; i < v % 4; i++)
		weft_yield();
	if (v % 7 == 0 && v > 0) { /* sometimes a grandchild */
		atomic_fetch_add(&spawned, 1);
		weft_t g = wt_spawn(NULL, leaf, (void *)(v / 7));
		WT_EQ((intptr_t)wt_join(g), v / 7 * 2 + 1);
	}
	atomic_fetch_add(&finished, 1);
	return (void *)(v * 2 + 1);
}

struct sleeper {
	atomic_int release;
};

static void *sleep_until_released(void *arg)
{
	struct sleeper *s = arg;
	while (!atomic_load(&s->release))
		WT_OK(weft_park());
	atomic_fetch_add(&finished, 1);
	return s;
}

struct child {
	weft_t id;
	void *expect;
	struct sleeper *sleeper; /* NULL for a leaf */
};

static void make_attr(weft_attr_t *a, uint64_t *rng, int detached)
{
	static const size_t sizes[] = {0, WEFT_STACK_MIN, 32 * 1024, 256 * 1024};
	WT_OK(weft_attr_init(a));
	size_t sz = sizes[next_rand(rng) % 4];
	if (sz)
		WT_OK(weft_attr_setstacksize(a, sz));
	WT_OK(weft_attr_setworker(a, (int)(next_rand(rng) % (unsigned)(nworkers + 1)) - 1));
	WT_OK(weft_attr_setdetached(a, detached));
}

static void join_child(struct child *c)
{
	if (c->sleeper) {
		atomic_store(&c->sleeper->release, 1);
		WT_OK(weft_unpark(c->id));
	}
	WT_EQ_PTR(wt_join(c->id), c->expect);
	free(c->sleeper);
	atomic_fetch_add(&joins, 1);
}

static void *actor(void *arg)
{
	uint64_t rng = seed ^ ((uintptr_t)arg * 0x9E3779B97F4A7C15ull);
	if (!rng)
		rng = 1;
	struct child kids[MAX_CHILDREN];
	int n = 0;
	while (wt_now_ns() < deadline) {
		unsigned op = (unsigned)(next_rand(&rng) % 100);
		if (n == MAX_CHILDREN)
			op = 30; /* full: join one */
		weft_attr_t a;
		if (op < 30) { /* a joinable leaf */
			intptr_t v = (intptr_t)(next_rand(&rng) % 1000);
			make_attr(&a, &rng, 0);
			atomic_fetch_add(&spawned, 1);
			kids[n].id = wt_spawn(&a, leaf, (void *)v);
			kids[n].expect = (void *)(v * 2 + 1);
			kids[n].sleeper = NULL;
			n++;
			WT_OK(weft_attr_destroy(&a));
		} else if (op < 50) { /* join one */
			if (n == 0)
				continue;
			int k = (int)(next_rand(&rng) % (unsigned)n);
			join_child(&kids[k]);
			kids[k] = kids[--n];
		} else if (op < 60) { /* a detached leaf */
			make_attr(&a, &rng, 1);
			atomic_fetch_add(&spawned, 1);
			wt_spawn(&a, leaf, (void *)(intptr_t)(next_rand(&rng) % 1000));
			WT_OK(weft_attr_destroy(&a));
		} else if (op < 75) {
			WT_OK(weft_yield());
			atomic_fetch_add(&yields, 1);
		} else if (op < 85) { /* a sleeper, parked until released */
			struct sleeper *s = calloc(1, sizeof *s);
			assert_non_null(s);
			make_attr(&a, &rng, 0);
			atomic_fetch_add(&spawned, 1);
			kids[n].id = wt_spawn(&a, sleep_until_released, s);
			kids[n].expect = s;
			kids[n].sleeper = s;
			n++;
			WT_OK(weft_attr_destroy(&a));
		} else if (op < 95) { /* a stray unpark: must be harmless */
			if (n == 0)
				continue;
			int r = weft_unpark(kids[next_rand(&rng) % (unsigned)n].id);
			WT_TRUE(r == 0 || r == ESRCH, "weft_unpark returned %s", wt_errname(r));
			atomic_fetch_add(&unparks, 1);
		} else { /* detach a leaf */
			for (int k = 0; k < n; k++)
				if (!kids[k].sleeper) {
					WT_OK(weft_detach(kids[k].id));
					kids[k] = kids[--n];
					atomic_fetch_add(&detaches, 1);
					break;
				}
		}
	}
	while (n > 0)
		join_child(&kids[--n]);
	return arg;
}

static void test_random_mix(void **state)
{
	const char *s = getenv("WEFT_STRESS_SECONDS");
	double secs = s ? atof(s) : 5.0;
	const char *sd = getenv("WEFT_STRESS_SEED");
	seed = sd ? strtoull(sd, NULL, 0) : wt_now_ns();
	printf("stress: %.0f s, WEFT_STRESS_SEED=%llu\n", secs, (unsigned long long)seed);
	wt_init(4);
	nworkers = weft_num_workers();
	deadline = wt_now_ns() + (uint64_t)(secs * 1e9);
	weft_t u[ULT_ACTORS];
	struct wt_pthread p[PTHREAD_ACTORS];
	for (intptr_t i = 0; i < ULT_ACTORS; i++) {
		weft_attr_t a;
		uint64_t rng = seed + (uint64_t)i + 1;
		make_attr(&a, &rng, 0);
		u[i] = wt_spawn(&a, actor, (void *)(i + 1));
		WT_OK(weft_attr_destroy(&a));
	}
	for (intptr_t i = 0; i < PTHREAD_ACTORS; i++)
		wt_pthread_start(&p[i], actor, (void *)(ULT_ACTORS + i + 1));
	actor((void *)0); /* main takes part too */
	for (intptr_t i = 0; i < ULT_ACTORS; i++)
		WT_EQ_PTR(wt_join(u[i]), (void *)(i + 1));
	for (intptr_t i = 0; i < PTHREAD_ACTORS; i++)
		WT_EQ_PTR(wt_pthread_join(&p[i]), (void *)(ULT_ACTORS + i + 1));
	WT_WAIT(atomic_load(&finished) == atomic_load(&spawned), 30); /* detached ones */
	wt_fini();
	WT_EQ(atomic_load(&finished), atomic_load(&spawned));
	printf("stress: %ld ULTs, %ld joins, %ld detaches, %ld yields, %ld stray unparks\n",
	       atomic_load(&spawned), atomic_load(&joins), atomic_load(&detaches),
	       atomic_load(&yields), atomic_load(&unparks));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_mix),
	};
	return WT_RUN(argc, argv, tests);
}
