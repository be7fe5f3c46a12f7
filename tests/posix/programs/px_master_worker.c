// px_master_worker: the master/worker benchmark of seed 003 (§5.1.1, Listing E.1) written as
// a plain pthread program, for weft's POSIX layer evidence, in two forms:
//
// - create/join, as in the seed: the master creates W workers that each do a fixed amount of
//   work, then joins them all and collects their return values;
// - a pool: the master creates W workers once and hands them work items through a bounded
//   shared queue (a mutex and two condition variables); workers return each result through a
//   second, unbounded queue that the master drains. A stop item per worker ends the pool.
//
// Each form runs with 4, 40 and 400 workers (or only the count given). Results are summed in
// item order, so the output does not depend on which worker did what.
//
// Usage: px_master_worker [workers (4, 40 and 400)] [items (20000)]
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIXED_WORK 200000 // iterations per create/join worker
#define JOB_CAP    16
#define STOP       (-1L)

static void die(const char *what, int rc)
{
	fprintf(stderr, "px_master_worker: %s: %s\n", what, strerror(rc));
	exit(1);
}

// A deterministic amount of integer work whose result depends only on seed and steps.
static uint64_t compute(uint64_t seed, long steps)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
	for (long i = 0; i < steps; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		x ^= x >> 29;
	}
	return x;
}

static void *fixed_work(void *arg)
{
	uintptr_t index = (uintptr_t)arg;
	return (void *)(uintptr_t)(compute(index, FIXED_WORK) >> 16);
}

static void run_create_join(int workers)
{
	pthread_t *ts = malloc((size_t)workers * sizeof *ts);
	if (!ts)
		die("malloc", ENOMEM);
	for (int x = 0; x < workers; x++) {
		int rc = pthread_create(&ts[x], NULL, fixed_work, (void *)(uintptr_t)x);
		if (rc != 0)
			die("pthread_create", rc);
	}
	uint64_t sum = 0;
	for (int x = 0; x < workers; x++) {
		void *ret;
		int rc = pthread_join(ts[x], &ret);
		if (rc != 0)
			die("pthread_join", rc);
		sum = sum * 31 + (uintptr_t)ret;
	}
	printf("create/join workers=%d result=%016llx\n", workers, (unsigned long long)sum);
	free(ts);
}

struct result {
	struct result *next;
	long item;
	uint64_t value;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t not_empty, not_full;
	long jobs[JOB_CAP];
	int head, count;
	struct result *results; // unbounded, so a worker never waits for the master here
	pthread_cond_t has_result;
} pool = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.not_empty = PTHREAD_COND_INITIALIZER,
	.not_full = PTHREAD_COND_INITIALIZER,
	.has_result = PTHREAD_COND_INITIALIZER,
};

static void put_job(long item)
{
	pthread_mutex_lock(&pool.mu);
	while (pool.count == JOB_CAP)
		pthread_cond_wait(&pool.not_full, &pool.mu);
	pool.jobs[(pool.head + pool.count) % JOB_CAP] = item;
	pool.count++;
	pthread_cond_signal(&pool.not_empty);
	pthread_mutex_unlock(&pool.mu);
}

static long get_job(void)
{
	pthread_mutex_lock(&pool.mu);
	while (pool.count == 0)
		pthread_cond_wait(&pool.not_empty, &pool.mu);
	long item = pool.jobs[pool.head];
	pool.head = (pool.head + 1) % JOB_CAP;
	pool.count--;
	pthread_cond_signal(&pool.not_full);
	pthread_mutex_unlock(&pool.mu);
	return item;
}

static void *pool_worker(void *arg)
{
	(void)arg;
	long done = 0;
	for (;;) {
		long item = get_job();
		if (item == STOP)
			break;
		struct result *r = malloc(sizeof *r);
		if (!r)
			die("malloc", ENOMEM);
		r->item = item;
		r->value = compute((uint64_t)item, 1000 + item % 977);
		pthread_mutex_lock(&pool.mu);
		r->next = pool.results;
		pool.results = r;
		pthread_cond_signal(&pool.has_result);
		pthread_mutex_unlock(&pool.mu);
		done++;
	}
	return (void *)(uintptr_t)done;
}

// Takes every result the workers have returned so far into values[], in item order.
static long drain_results(uint64_t *values, char *seen)
{
	pthread_mutex_lock(&pool.mu);
	struct result *r = pool.results;
	pool.results = NULL;
	pthread_mutex_unlock(&pool.mu);
	long n = 0;
	while (r) {
		struct result *next = r->next;
		if (seen[r->item]) {
			fprintf(stderr, "px_master_worker: item %ld returned twice\n", r->item);
			exit(1);
		}
		seen[r->item] = 1;
		values[r->item] = r->value;
		n++;
		free(r);
		r = next;
	}
	return n;
}

static void run_pool(int workers, long items)
{
	pthread_t *ts = malloc((size_t)workers * sizeof *ts);
	uint64_t *values = malloc((size_t)items * sizeof *values);
	char *seen = calloc((size_t)items, 1);
	if (!ts || !values || !seen)
		die("malloc", ENOMEM);
	for (int x = 0; x < workers; x++) {
		int rc = pthread_create(&ts[x], NULL, pool_worker, NULL);
		if (rc != 0)
			die("pthread_create", rc);
	}
	long got = 0;
	for (long i = 0; i < items; i++) {
		put_job(i);
		if (i % 64 == 63)
			got += drain_results(values, seen);
	}
	while (got < items) {
		pthread_mutex_lock(&pool.mu);
		while (!pool.results)
			pthread_cond_wait(&pool.has_result, &pool.mu);
		pthread_mutex_unlock(&pool.mu);
		got += drain_results(values, seen);
	}
	for (int x = 0; x < workers; x++)
		put_job(STOP);
	long done = 0;
	for (int x = 0; x < workers; x++) {
		void *ret;
		int rc = pthread_join(ts[x], &ret);
		if (rc != 0)
			die("pthread_join", rc);
		done += (long)(uintptr_t)ret;
	}
	uint64_t sum = 0, hash = 0xcbf29ce484222325ULL;
	long odd = 0;
	for (long i = 0; i < items; i++) {
		sum += values[i];
		hash = (hash ^ values[i]) * 0x100000001b3ULL;
		odd += values[i] & 1;
	}
	printf("pool workers=%d items=%ld done=%ld odd=%ld sum=%016llx hash=%016llx\n", workers,
	       items, done, odd, (unsigned long long)sum, (unsigned long long)hash);
	free(seen);
	free(values);
	free(ts);
}

static long parse_arg(int argc, char **argv, int i, long def, long min, long max)
{
	if (argc <= i)
		return def;
	char *end;
	long v = strtol(argv[i], &end, 10);
	if (*argv[i] == '\0' || *end != '\0' || v < min || v > max) {
		fprintf(stderr, "px_master_worker: bad argument '%s' (want %ld..%ld)\n", argv[i],
			min, max);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	int only = (int)parse_arg(argc, argv, 1, 0, 1, 1000000);
	long items = parse_arg(argc, argv, 2, 20000, 1, 100000000);
	int counts[] = {4, 40, 400};
	int ncounts = 3;
	if (only) {
		counts[0] = only;
		ncounts = 1;
	}
	for (int c = 0; c < ncounts; c++)
		run_create_join(counts[c]);
	for (int c = 0; c < ncounts; c++)
		run_pool(counts[c], items);
	return 0;
}
