/* Thread-specific data: pthread_key_create/delete and get/setspecific; values
 * are per thread and start NULL; destructors run in the exiting thread with
 * the old value, after the value was set to NULL, not for NULL values, not
 * after pthread_key_delete; and the PTHREAD_DESTRUCTOR_ITERATIONS rule for
 * destructors that store new values. */
#include "ptest.h"

#include <limits.h>
#include <semaphore.h>
#include <unistd.h>

/* PTHREAD_DESTRUCTOR_ITERATIONS; <limits.h> may leave it out, sysconf may
 * not. */
static int destructor_iterations(void)
{
	long n = sysconf(_SC_THREAD_DESTRUCTOR_ITERATIONS);
	PX_CMP(n, >=, 4); /* _POSIX_THREAD_DESTRUCTOR_ITERATIONS */
	return (int)n;
}

static void *get_value(void *arg)
{
	return pthread_getspecific(*(pthread_key_t *)arg);
}

static void *set_and_check(void *arg)
{
	pthread_key_t k = *(pthread_key_t *)arg;
	int mine;
	PX_EQ_PTR(pthread_getspecific(k), NULL);
	PX_OK(pthread_setspecific(k, &mine));
	px_sleep_ns(PX_NS_PER_MS);
	PX_EQ_PTR(pthread_getspecific(k), &mine);
	PX_OK(pthread_setspecific(k, NULL));
	return NULL;
}

/* A new key reads NULL in every thread; each thread has its own value. */
static void test_values_are_per_thread(void **state)
{
	pthread_key_t k;
	int main_value;
	PX_OK(pthread_key_create(&k, NULL));
	PX_EQ_PTR(pthread_getspecific(k), NULL);
	PX_OK(pthread_setspecific(k, &main_value));
	PX_EQ_PTR(px_join(px_start(NULL, get_value, &k)), NULL);
	pthread_t t[8];
	for (int i = 0; i < 8; i++)
		t[i] = px_start(NULL, set_and_check, &k);
	for (int i = 0; i < 8; i++)
		px_join(t[i]);
	PX_EQ_PTR(pthread_getspecific(k), &main_value);
	PX_OK(pthread_setspecific(k, NULL));
	PX_OK(pthread_key_delete(k));
}

/* A destructor call as seen from inside it. */
struct dtor_log {
	pthread_key_t key;
	atomic_int calls;
	void *value;      /* argument of the last call */
	void *during;     /* the key's value during the last call */
	pthread_t thread; /* the thread it ran in */
	sem_t done;
};

static struct dtor_log dlog;

static void log_destructor(void *value)
{
	dlog.value = value;
	dlog.during = pthread_getspecific(dlog.key);
	dlog.thread = pthread_self();
	atomic_fetch_add(&dlog.calls, 1);
	sem_post(&dlog.done);
}

static void reset_log(void)
{
	dlog.value = dlog.during = NULL;
	atomic_store(&dlog.calls, 0);
	PX_SYSOK(sem_init(&dlog.done, 0, 0));
	PX_OK(pthread_key_create(&dlog.key, log_destructor));
}

static int marker;

static void *set_then_return(void *arg)
{
	PX_OK(pthread_setspecific(dlog.key, &marker));
	return NULL;
}

static void *set_then_exit(void *arg)
{
	PX_OK(pthread_setspecific(dlog.key, &marker));
	pthread_exit(NULL);
}

/* The destructor runs once, in the exiting thread, with the value, the key
 * already NULL; on return from the start routine and on pthread_exit. */
static void test_destructor_runs_at_exit(void **state)
{
	void *(*bodies[])(void *) = {set_then_return, set_then_exit};
	for (int i = 0; i < 2; i++) {
		reset_log();
		pthread_t t = px_start(NULL, bodies[i], NULL);
		struct timespec ts = px_deadline(CLOCK_REALTIME, 10 * PX_NS_PER_S);
		PX_SYSOK(sem_timedwait(&dlog.done, &ts));
		/* Compare ids before the join ends t's lifetime. */
		PX_TRUE(pthread_equal(dlog.thread, t), "the destructor ran in the exiting thread");
		px_join(t);
		PX_EQ(atomic_load(&dlog.calls), 1);
		PX_EQ_PTR(dlog.value, &marker);
		PX_EQ_PTR(dlog.during, NULL);
		PX_OK(pthread_key_delete(dlog.key));
		sem_destroy(&dlog.done);
	}
}

static void *set_then_clear(void *arg)
{
	PX_OK(pthread_setspecific(dlog.key, &marker));
	PX_OK(pthread_setspecific(dlog.key, NULL));
	return NULL;
}

static void *never_set(void *arg)
{
	return NULL;
}

/* No destructor call for a NULL value. */
static void test_no_destructor_for_null(void **state)
{
	reset_log();
	px_join(px_start(NULL, never_set, NULL));
	px_join(px_start(NULL, set_then_clear, NULL));
	PX_EQ(atomic_load(&dlog.calls), 0);
	PX_OK(pthread_key_delete(dlog.key));
	sem_destroy(&dlog.done);
}

struct delete_race {
	sem_t set, deleted;
};

static void *set_wait_exit(void *arg)
{
	struct delete_race *d = arg;
	PX_OK(pthread_setspecific(dlog.key, &marker));
	sem_post(&d->set);
	while (sem_wait(&d->deleted) != 0)
		;
	return NULL;
}

/* pthread_key_delete calls no destructors, and a thread that exits after the
 * delete does not call the deleted key's destructor either. */
static void test_key_delete_calls_no_destructor(void **state)
{
	struct delete_race d;
	reset_log();
	PX_SYSOK(sem_init(&d.set, 0, 0));
	PX_SYSOK(sem_init(&d.deleted, 0, 0));
	pthread_t t = px_start(NULL, set_wait_exit, &d);
	PX_SYSOK(sem_wait(&d.set));
	PX_OK(pthread_key_delete(dlog.key));
	PX_SYSOK(sem_post(&d.deleted));
	px_join(t);
	PX_EQ(atomic_load(&dlog.calls), 0);
	sem_destroy(&d.set);
	sem_destroy(&d.deleted);
	sem_destroy(&dlog.done);
}

/* A destructor that stores a new value, `again` times at most. */
static pthread_key_t again_key;
static atomic_int again_calls;
static atomic_int again_limit;

static void store_again(void *value)
{
	int n = atomic_fetch_add(&again_calls, 1) + 1;
	if (n <= again_limit)
		PX_OK(pthread_setspecific(again_key, &marker));
}

static void *set_again_key(void *arg)
{
	PX_OK(pthread_setspecific(again_key, &marker));
	return NULL;
}

static int run_again(int limit)
{
	again_limit = limit;
	atomic_store(&again_calls, 0);
	PX_OK(pthread_key_create(&again_key, store_again));
	px_join(px_start(NULL, set_again_key, NULL));
	PX_OK(pthread_key_delete(again_key));
	return atomic_load(&again_calls);
}

/* POSIX: while non-NULL values with destructors remain, the destructors are
 * called again, for at least PTHREAD_DESTRUCTOR_ITERATIONS rounds; after that
 * an implementation may stop or go on. */
static void test_destructor_iterations(void **state)
{
	int iterations = destructor_iterations();

	/* Re-stored fewer times than the limit: every round happens, and the
	 * thread ends when the destructor stops storing. */
	PX_EQ(run_again(iterations - 1), iterations);
	PX_EQ(run_again(1), 2);
	PX_EQ(run_again(0), 1);

	/* Re-stored (almost) forever: at least the guaranteed rounds. The
	 * destructor stops after 1000 so that an implementation that goes on
	 * calling still ends. (glibc stops at exactly
	 * PTHREAD_DESTRUCTOR_ITERATIONS.) */
	int n = run_again(1000);
	PX_CMP(n, >=, iterations);
	PX_CMP(n, <=, 1001);
}

/* A destructor of one key storing a value under another key: the other key's
 * destructor still runs (in this round or the next). */
static pthread_key_t first_key, second_key;
static atomic_int second_calls;

static void first_dtor(void *value)
{
	PX_OK(pthread_setspecific(second_key, &marker));
}

static void second_dtor(void *value)
{
	PX_EQ_PTR(value, &marker);
	atomic_fetch_add(&second_calls, 1);
}

static void *set_first(void *arg)
{
	PX_OK(pthread_setspecific(first_key, &marker));
	return NULL;
}

static void test_destructor_sets_other_key(void **state)
{
	/* Both creation orders, since implementations walk keys in order. */
	for (int order = 0; order < 2; order++) {
		atomic_store(&second_calls, 0);
		if (order == 0) {
			PX_OK(pthread_key_create(&first_key, first_dtor));
			PX_OK(pthread_key_create(&second_key, second_dtor));
		} else {
			PX_OK(pthread_key_create(&second_key, second_dtor));
			PX_OK(pthread_key_create(&first_key, first_dtor));
		}
		px_join(px_start(NULL, set_first, NULL));
		PX_EQ(atomic_load(&second_calls), 1);
		PX_OK(pthread_key_delete(first_key));
		PX_OK(pthread_key_delete(second_key));
	}
}

#define N_KEYS 100

static pthread_key_t many[N_KEYS];
static int slots[2][N_KEYS];

static void *fill_and_check(void *arg)
{
	int *mine = arg; /* N_KEYS slots */
	for (int i = 0; i < N_KEYS; i++)
		PX_OK(pthread_setspecific(many[i], &mine[i]));
	px_sleep_ns(PX_NS_PER_MS);
	for (int i = 0; i < N_KEYS; i++)
		PX_EQ_PTR(pthread_getspecific(many[i]), &mine[i]);
	return NULL;
}

/* Many keys at once (POSIX guarantees at least _POSIX_THREAD_KEYS_MAX = 128
 * per process; the tests and the runtime may use a few). */
static void test_many_keys(void **state)
{
	long max = sysconf(_SC_THREAD_KEYS_MAX);
	PX_TRUE(max == -1 || max >= 128, "_SC_THREAD_KEYS_MAX is %ld", max);
	for (int i = 0; i < N_KEYS; i++)
		PX_OK(pthread_key_create(&many[i], NULL));
	pthread_t a = px_start(NULL, fill_and_check, slots[0]);
	pthread_t b = px_start(NULL, fill_and_check, slots[1]);
	px_join(a);
	px_join(b);
	for (int i = 0; i < N_KEYS; i++)
		PX_EQ_PTR(pthread_getspecific(many[i]), NULL);
	for (int i = 0; i < N_KEYS; i++)
		PX_OK(pthread_key_delete(many[i]));
}

#define CREATORS    8
#define PER_CREATOR 10

static pthread_key_t created[CREATORS][PER_CREATOR];

static void *create_keys(void *arg)
{
	pthread_key_t *mine = arg;
	for (int i = 0; i < PER_CREATOR; i++)
		PX_OK(pthread_key_create(&mine[i], NULL));
	return NULL;
}

/* Keys created concurrently are all distinct: storing a different value
 * under each, one after the other, loses none. */
static void test_concurrent_key_create(void **state)
{
	pthread_t t[CREATORS];
	for (int i = 0; i < CREATORS; i++)
		t[i] = px_start(NULL, create_keys, created[i]);
	for (int i = 0; i < CREATORS; i++)
		px_join(t[i]);
	static int values[CREATORS][PER_CREATOR];
	for (int i = 0; i < CREATORS; i++)
		for (int j = 0; j < PER_CREATOR; j++)
			PX_OK(pthread_setspecific(created[i][j], &values[i][j]));
	for (int i = 0; i < CREATORS; i++)
		for (int j = 0; j < PER_CREATOR; j++)
			PX_EQ_PTR(pthread_getspecific(created[i][j]), &values[i][j]);
	for (int i = 0; i < CREATORS; i++)
		for (int j = 0; j < PER_CREATOR; j++) {
			PX_OK(pthread_setspecific(created[i][j], NULL));
			PX_OK(pthread_key_delete(created[i][j]));
		}
}

/* A deleted key's slot may be reused; a key created later reads NULL even in
 * a thread that had stored a value under the old key. */
static void test_new_key_reads_null(void **state)
{
	for (int i = 0; i < 50; i++) {
		pthread_key_t k;
		PX_OK(pthread_key_create(&k, NULL));
		PX_EQ_PTR(pthread_getspecific(k), NULL);
		PX_OK(pthread_setspecific(k, &marker));
		PX_OK(pthread_key_delete(k));
	}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		PX_TEST(test_values_are_per_thread),
		PX_TEST(test_destructor_runs_at_exit),
		PX_TEST(test_no_destructor_for_null),
		PX_TEST(test_key_delete_calls_no_destructor),
		PX_TEST(test_destructor_iterations),
		PX_TEST(test_destructor_sets_other_key),
		PX_TEST(test_many_keys),
		PX_TEST(test_concurrent_key_create),
		PX_TEST(test_new_key_reads_null),
	};
	return PX_RUN(argc, argv, tests);
}
