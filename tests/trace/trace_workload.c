/* The workload traced by the weft-trace end-to-end test (test_e2e.py).
 *
 * Small and quick (well under a second), but it makes every kind of event
 * the trace format has: on 2 workers, named ULTs
 *   - "locker-w<worker>-<i>": four ULTs, two bound to each worker, take a
 *     mutex that parks at once (WEFT_LOCK_PARK) and sometimes yield while
 *     holding it, so that lockers on the same worker contend as surely as
 *     those on the other one: contended acquires, park and unpark, and
 *     blocks with reason mutex;
 *   - "producer" and "consumer", on different workers, pass items through a
 *     bounded queue with two condition variables: blocks with reason cond;
 *   - "roamer-<i>": unbound ULTs that yield in a loop, for steals and
 *     migrations;
 *   - "sleeper": sleeps a few times, so that the workers run out of work and
 *     sleep themselves;
 * and main joins them all. It checks its own results (counter, checksum) and
 * exits 0 only when they are right. Tracing is the environment's business:
 * run it with WEFT_TRACE=prefix.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <weft.h>
#include <weft/sync.h>

/* A failed call is a test failure: say which and stop. */
#define CHECK_OK(expr)                                                                        \
	do {                                                                                  \
		int check_e_ = (expr);                                                        \
		if (check_e_ != 0) {                                                          \
			fprintf(stderr, "%s:%d: %s returned %d\n", __FILE__, __LINE__, #expr, \
				check_e_);                                                    \
			abort();                                                              \
		}                                                                             \
	} while (0)

enum {
	LOCKERS = 4,        /* two per worker */
	LOCK_ROUNDS = 200,  /* critical sections per locker */
	ITEMS = 500,        /* items from producer to consumer */
	QUEUE_SIZE = 4,     /* bounded queue: the producer waits for room */
	ROAMERS = 4,        /* unbound ULTs that yield */
	ROAM_ROUNDS = 200,  /* yields per roamer */
	SLEEPS = 5,         /* naps of the sleeper */
	SLEEP_NS = 1000000, /* 1 ms each */
};

/* Spin for about ns nanoseconds: work the worker cannot do anything else in. */
static void work_ns(long ns)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

/* ---- the contended mutex ---- */

static weft_mutex_t counter_lock;
static long counter;

static void *locker(void *arg)
{
	long id = (long)(intptr_t)arg;
	for (int i = 0; i < LOCK_ROUNDS; i++) {
		CHECK_OK(weft_mutex_lock(&counter_lock));
		long seen = counter;
		work_ns(2000);
		if ((i + id) % 4 == 0)
			weft_yield(); /* holding the lock: the other locker here must park */
		counter = seen + 1;
		CHECK_OK(weft_mutex_unlock(&counter_lock));
		if (i % 8 == 0)
			weft_yield();
	}
	return NULL;
}

/* ---- producer and consumer on a bounded queue ---- */

static weft_mutex_t queue_lock = WEFT_MUTEX_INITIALIZER;
static weft_cond_t not_empty = WEFT_COND_INITIALIZER, not_full = WEFT_COND_INITIALIZER;
static long queue[QUEUE_SIZE];
static int queue_head, queue_len;

static void *producer(void *arg)
{
	for (long v = 1; v <= ITEMS; v++) {
		CHECK_OK(weft_mutex_lock(&queue_lock));
		while (queue_len == QUEUE_SIZE)
			CHECK_OK(weft_cond_wait(&not_full, &queue_lock));
		queue[(queue_head + queue_len) % QUEUE_SIZE] = v;
		queue_len++;
		CHECK_OK(weft_cond_signal(&not_empty));
		CHECK_OK(weft_mutex_unlock(&queue_lock));
		work_ns(500);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	long sum = 0;
	for (int n = 0; n < ITEMS; n++) {
		CHECK_OK(weft_mutex_lock(&queue_lock));
		while (queue_len == 0)
			CHECK_OK(weft_cond_wait(&not_empty, &queue_lock));
		sum += queue[queue_head];
		queue_head = (queue_head + 1) % QUEUE_SIZE;
		queue_len--;
		CHECK_OK(weft_cond_signal(&not_full));
		CHECK_OK(weft_mutex_unlock(&queue_lock));
		work_ns(1500); /* slower than the producer: the queue fills up */
	}
	return (void *)(intptr_t)sum;
}

/* ---- yielding and sleeping ---- */

static void *roamer(void *arg)
{
	for (int i = 0; i < ROAM_ROUNDS; i++) {
		work_ns(1000);
		weft_yield();
	}
	return NULL;
}

static void *sleeper(void *arg)
{
	for (int i = 0; i < SLEEPS; i++)
		CHECK_OK(weft_sleep_ns(SLEEP_NS));
	return NULL;
}

/* Start fn(arg) as a ULT called name, bound to worker (-1: any). */
static weft_t spawn(const char *name, int worker, void *(*fn)(void *), void *arg)
{
	weft_attr_t a;
	weft_t t;
	CHECK_OK(weft_attr_init(&a));
	CHECK_OK(weft_attr_setname(&a, name));
	CHECK_OK(weft_attr_setworker(&a, worker));
	CHECK_OK(weft_create(&t, &a, fn, arg));
	CHECK_OK(weft_attr_destroy(&a));
	return t;
}

int main(void)
{
	weft_config_t cfg;
	CHECK_OK(weft_config_init(&cfg));
	cfg.workers = 2;
	CHECK_OK(weft_init(&cfg));

	weft_mutexattr_t ma;
	CHECK_OK(weft_mutexattr_init(&ma));
	CHECK_OK(weft_mutexattr_setpolicy(&ma, WEFT_LOCK_PARK));
	CHECK_OK(weft_mutex_init(&counter_lock, &ma));
	CHECK_OK(weft_mutexattr_destroy(&ma));

	weft_t lockers[LOCKERS], roamers[ROAMERS];
	char name[WEFT_NAME_MAX];
	for (int i = 0; i < LOCKERS; i++) {
		snprintf(name, sizeof name, "locker-w%d-%d", i % 2, i / 2);
		lockers[i] = spawn(name, i % 2, locker, (void *)(intptr_t)i);
	}
	weft_t prod = spawn("producer", 0, producer, NULL);
	weft_t cons = spawn("consumer", 1, consumer, NULL);
	for (int i = 0; i < ROAMERS; i++) {
		snprintf(name, sizeof name, "roamer-%d", i);
		roamers[i] = spawn(name, -1, roamer, NULL);
	}

	for (int i = 0; i < LOCKERS; i++)
		CHECK_OK(weft_join(lockers[i], NULL));
	void *sum;
	CHECK_OK(weft_join(prod, NULL));
	CHECK_OK(weft_join(cons, &sum));
	for (int i = 0; i < ROAMERS; i++)
		CHECK_OK(weft_join(roamers[i], NULL));

	/* Last, alone: the workers have nothing else to do while it sleeps. */
	CHECK_OK(weft_join(spawn("sleeper", -1, sleeper, NULL), NULL));

	weft_mutex_stats_t st;
	CHECK_OK(weft_mutex_stats(&counter_lock, &st));
	CHECK_OK(weft_mutex_destroy(&counter_lock));
	CHECK_OK(weft_shutdown());

	long want_sum = (long)ITEMS * (ITEMS + 1) / 2;
	printf("trace_workload: counter %ld (want %d), sum %ld (want %ld), %llu contended locks\n",
	       counter, LOCKERS * LOCK_ROUNDS, (long)(intptr_t)sum, want_sum,
	       (unsigned long long)st.contended);
	if (counter != LOCKERS * LOCK_ROUNDS || (long)(intptr_t)sum != want_sum)
		return 1;
	return 0;
}
