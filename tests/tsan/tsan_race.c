/* Does ThreadSanitizer still see races between ULTs? weft annotates its
 * context switches and its locks for TSan (docs/sanitizers.md); too much
 * annotation would order everything and hide real races. Two ULTs bound to
 * different workers add to one shared counter:
 *
 *   tsan_race race    plain increments: TSan must report a data race
 *                     (the test expects the report, tests/tsan/CMakeLists.txt)
 *   tsan_race mutex   every increment under a weft_mutex: TSan must stay
 *                     quiet, and the sum must be exact
 *
 * The two ULTs meet at a start line of relaxed atomics before they count,
 * so they count at the same time, yet TSan gets no happens-before edge from
 * it: nothing orders one's increments with the other's but the mutex. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft.h>
#include <weft/sync.h>

enum { ROUNDS = 20000 };

static long counter; /* the shared variable */
static weft_mutex_t lock = WEFT_MUTEX_INITIALIZER;
static int use_lock;
static atomic_int arrived;

#define CHECK(call)                                                                               \
	do {                                                                                      \
		int e_ = (call);                                                                  \
		if (e_) {                                                                         \
			fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, e_); \
			exit(1);                                                                  \
		}                                                                                 \
	} while (0)

/* Its own function so that the report's stacks name it. */
static __attribute__((noinline)) void bump(void)
{
	counter++;
}

static void *racer(void *arg)
{
	(void)arg;
	/* Relaxed: the ULTs wait for each other without synchronising. They
	 * are bound to different workers, so the spin cannot starve the
	 * other one. */
	atomic_fetch_add_explicit(&arrived, 1, memory_order_relaxed);
	while (atomic_load_explicit(&arrived, memory_order_relaxed) < 2)
		;
	for (int i = 0; i < ROUNDS; i++) {
		if (use_lock)
			CHECK(weft_mutex_lock(&lock));
		bump();
		if (use_lock)
			CHECK(weft_mutex_unlock(&lock));
	}
	return NULL;
}

static weft_t spawn(int worker, const char *name)
{
	weft_attr_t a;
	weft_t t;
	CHECK(weft_attr_init(&a));
	CHECK(weft_attr_setworker(&a, worker));
	CHECK(weft_attr_setname(&a, name));
	CHECK(weft_create(&t, &a, racer, NULL));
	CHECK(weft_attr_destroy(&a));
	return t;
}

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "race") != 0 && strcmp(argv[1], "mutex") != 0)) {
		fprintf(stderr, "usage: %s race|mutex\n", argv[0]);
		return 2;
	}
	use_lock = strcmp(argv[1], "mutex") == 0;
	weft_config_t c;
	CHECK(weft_config_init(&c));
	c.workers = 2;
	CHECK(weft_init(&c));
	weft_t a = spawn(0, "racer-a");
	weft_t b = spawn(1, "racer-b");
	CHECK(weft_join(a, NULL));
	CHECK(weft_join(b, NULL));
	CHECK(weft_shutdown());
	printf("counter %ld of %d\n", counter, 2 * ROUNDS);
	if (use_lock && counter != 2 * ROUNDS) {
		fprintf(stderr, "lost updates under the mutex: %ld != %d\n", counter, 2 * ROUNDS);
		return 1;
	}
	return 0;
}
