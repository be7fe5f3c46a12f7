/* Calling weft from kernel threads that are not workers ("foreign" pthreads
 * the program made itself). Main initialises the runtime first; every test
 * shuts it down at the end. */
#include "harness.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static void *return_arg(void *arg)
{
	return arg;
}

/* Run fn(arg) in a new pthread and wait for it (without blocking the
 * caller's worker). */
static void *in_pthread(void *(*fn)(void *), void *arg)
{
	struct wt_pthread p;
	wt_pthread_start(&p, fn, arg);
	return wt_pthread_join(&p);
}

struct queries {
	weft_t self;
	int worker, yield_rc, nworkers;
};

static void *query(void *arg)
{
	struct queries *q = arg;
	q->self = weft_self();
	q->worker = weft_worker_id();
	q->yield_rc = weft_yield();
	q->nworkers = weft_num_workers();
	return NULL;
}

static void test_queries_from_foreign_thread(void **state)
{
	wt_init(2);
	struct queries q = {.self = 1, .worker = 5, .yield_rc = 5};
	in_pthread(query, &q);
	WT_EQU(q.self, WEFT_NULL);
	WT_EQ(q.worker, -1);
	WT_EQ(q.yield_rc, 0);
	WT_EQ(q.nworkers, 2);
	WT_OK(weft_shutdown());
}

static void *report_worker(void *arg)
{
	*(int *)arg = weft_worker_id();
	return (void *)42;
}

struct created {
	int worker;
	int create_rc, join_rc;
	void *ret;
};

static void *create_and_join_from_pthread(void *arg)
{
	struct created *c = arg;
	weft_t t = WEFT_NULL;
	c->create_rc = weft_create(&t, NULL, report_worker, &c->worker);
	if (c->create_rc == 0)
		c->join_rc = weft_join(t, &c->ret);
	return NULL;
}

static void test_create_and_join_from_foreign_thread(void **state)
{
	wt_init(2);
	struct created c = {.worker = -5, .join_rc = -1};
	in_pthread(create_and_join_from_pthread, &c);
	WT_OK(c.create_rc);
	WT_OK(c.join_rc);
	WT_EQ_PTR(c.ret, (void *)42);
	WT_TRUE(c.worker == 0 || c.worker == 1, "the ULT ran on worker %d", c.worker);
	WT_OK(weft_shutdown());
}

static void *create_from_pthread(void *arg)
{
	weft_t t = WEFT_NULL;
	int r = weft_create(&t, NULL, return_arg, arg);
	return r ? NULL : (void *)(uintptr_t)t;
}

static void test_main_joins_ult_created_by_foreign_thread(void **state)
{
	wt_init(2);
	weft_t t = (weft_t)(uintptr_t)in_pthread(create_from_pthread, (void *)8);
	WT_CMPU(t, !=, WEFT_NULL);
	WT_EQ_PTR(wt_join(t), (void *)8);
	WT_OK(weft_shutdown());
}

struct gate {
	atomic_int release;
	atomic_int done;
};

static void *wait_at_gate(void *arg)
{
	struct gate *g = arg;
	while (!atomic_load(&g->release))
		weft_park();
	atomic_fetch_add(&g->done, 1);
	return (void *)77;
}

struct foreign_join {
	weft_t target;
	atomic_int joining;
	atomic_int returned;
	int rc;
	void *ret;
};

static void *join_from_pthread(void *arg)
{
	struct foreign_join *j = arg;
	atomic_store(&j->joining, 1);
	j->rc = weft_join(j->target, &j->ret);
	atomic_store(&j->returned, 1);
	return NULL;
}

static void test_foreign_join_blocks_until_exit(void **state)
{
	wt_init(2);
	struct gate g = {0};
	struct foreign_join j = {0};
	j.target = wt_spawn(NULL, wait_at_gate, &g);
	struct wt_pthread p;
	wt_pthread_start(&p, join_from_pthread, &j);
	WT_WAIT(atomic_load(&j.joining), 10);
	uint64_t until = wt_now_ns() + 50000000; /* give it time to return early */
	while (wt_now_ns() < until)
		weft_yield();
	WT_EQ(atomic_load(&j.returned), 0); /* still waiting: the ULT is alive */
	atomic_store(&g.release, 1);
	WT_OK(weft_unpark(j.target));
	wt_pthread_join(&p);
	WT_OK(j.rc);
	WT_EQ_PTR(j.ret, (void *)77);
	WT_OK(weft_shutdown());
}

static atomic_int foreign_handled;

static void note_handled(int sig)
{
	(void)sig;
	atomic_store(&foreign_handled, 1);
}

struct foreign_sem {
	weft_sem_t sem;
	int timed;
	atomic_int waiting;
	int rc;
};

static void *sem_wait_from_pthread(void *arg)
{
	struct foreign_sem *f = arg;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 20;
	atomic_store(&f->waiting, 1);
	f->rc = f->timed ? weft_sem_timedwait(&f->sem, &ts) : weft_sem_wait(&f->sem);
	return NULL;
}

/* A foreign thread waiting on a semaphore (a cancellation point) returns
 * EINTR once a signal handler ran on it, as a thread waiting in glibc's
 * sem_wait does; it does not wait on until its deadline. */
static void test_foreign_sem_wait_interrupted_by_handler(void **state)
{
	wt_init(2);
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = note_handled; /* no SA_RESTART */
	sigemptyset(&sa.sa_mask);
	WT_OK(sigaction(SIGUSR1, &sa, &old));
	for (int timed = 0; timed <= 1; timed++) {
		struct foreign_sem f = {.timed = timed};
		atomic_store(&foreign_handled, 0);
		WT_OK(weft_sem_init(&f.sem, 0, 0));
		struct wt_pthread p;
		wt_pthread_start(&p, sem_wait_from_pthread, &f);
		WT_WAIT(atomic_load(&f.waiting), 10);
		weft_sleep_ns(20000000); /* inside its wait */
		WT_OK(pthread_kill(p.thread, SIGUSR1));
		wt_pthread_join(&p);
		WT_EQ(atomic_load(&foreign_handled), 1);
		WT_ERR(f.rc, EINTR);
		WT_OK(weft_sem_destroy(&f.sem));
	}
	WT_OK(sigaction(SIGUSR1, &old, NULL));
	WT_OK(weft_shutdown());
}

static void *detach_from_pthread(void *arg)
{
	return (void *)(intptr_t)weft_detach(*(weft_t *)arg);
}

static void test_detach_from_foreign_thread(void **state)
{
	wt_init(2);
	struct gate g = {0};
	weft_t t = wt_spawn(NULL, wait_at_gate, &g);
	WT_ERR((intptr_t)in_pthread(detach_from_pthread, &t), 0);
	WT_ERR(weft_join(t, NULL), EINVAL); /* it is detached now */
	atomic_store(&g.release, 1);
	int r = weft_unpark(t); /* it may have seen the flag and be gone */
	WT_TRUE(r == 0 || r == ESRCH, "weft_unpark returned %s", wt_errname(r));
	WT_WAIT(atomic_load(&g.done), 10);
	wt_fini();
}

struct errs {
	weft_t unknown, detached;
	int unknown_rc, detached_rc, self_rc;
};

static void *join_errors_from_pthread(void *arg)
{
	struct errs *e = arg;
	e->unknown_rc = weft_join(e->unknown, NULL);
	e->detached_rc = weft_join(e->detached, NULL);
	e->self_rc = weft_join(WEFT_NULL, NULL);
	return NULL;
}

static void test_foreign_join_errors(void **state)
{
	wt_init(2);
	struct gate g = {0};
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	WT_OK(weft_attr_setdetached(&a, 1));
	struct errs e = {0};
	e.detached = wt_spawn(&a, wait_at_gate, &g);
	e.unknown = e.detached + 1000;
	in_pthread(join_errors_from_pthread, &e);
	WT_ERR(e.unknown_rc, ESRCH);
	WT_ERR(e.detached_rc, EINVAL);
	WT_ERR(e.self_rc, ESRCH); /* WEFT_NULL is what weft_self() says there */
	atomic_store(&g.release, 1);
	int r = weft_unpark(e.detached); /* it may have seen the flag and be gone */
	WT_TRUE(r == 0 || r == ESRCH, "weft_unpark returned %s", wt_errname(r));
	WT_WAIT(atomic_load(&g.done), 10);
	WT_OK(weft_attr_destroy(&a));
	wt_fini();
}

/* Several pthreads and ULTs create and join ULTs at the same time. */
enum { CREATORS = 4, PER_CREATOR = 2000, BATCH = 50 };
static atomic_long ran;
static weft_t ids[2 * CREATORS][PER_CREATOR];

static void *count(void *arg)
{
	atomic_fetch_add(&ran, 1);
	return arg;
}

static void *create_many(void *arg)
{
	weft_t *mine = arg;
	for (int i = 0; i < PER_CREATOR; i += BATCH) {
		for (int k = i; k < i + BATCH; k++) {
			int r = weft_create(&mine[k], NULL, count, (void *)(intptr_t)k);
			if (r)
				return (void *)(intptr_t)r;
		}
		for (int k = i; k < i + BATCH; k++) {
			void *ret;
			int r = weft_join(mine[k], &ret);
			if (r)
				return (void *)(intptr_t)r;
			if (ret != (void *)(intptr_t)k)
				return (void *)(intptr_t)-1;
		}
	}
	return NULL;
}

static int cmp_ids(const void *a, const void *b)
{
	weft_t x = *(const weft_t *)a, y = *(const weft_t *)b;
	return x < y ? -1 : x > y;
}

static void test_concurrent_creates_from_pthreads_and_ults(void **state)
{
	wt_init(2);
	struct wt_pthread p[CREATORS];
	weft_t u[CREATORS];
	for (int i = 0; i < CREATORS; i++) {
		wt_pthread_start(&p[i], create_many, ids[i]);
		u[i] = wt_spawn(NULL, create_many, ids[CREATORS + i]);
	}
	for (int i = 0; i < CREATORS; i++) {
		WT_ERR((intptr_t)wt_pthread_join(&p[i]), 0);
		WT_ERR((intptr_t)wt_join(u[i]), 0);
	}
	WT_EQ(atomic_load(&ran), 2 * CREATORS * PER_CREATOR);
	for (int c = 0; c < 2 * CREATORS; c++)
		for (int k = 1; k < PER_CREATOR; k++)
			WT_CMPU(ids[c][k], >, ids[c][k - 1]); /* per creator: in order */
	weft_t *all = &ids[0][0];
	size_t n = 2 * CREATORS * PER_CREATOR;
	qsort(all, n, sizeof *all, cmp_ids);
	for (size_t k = 1; k < n; k++)
		WT_CMPU(all[k], !=, all[k - 1]); /* unique */
	WT_OK(weft_shutdown());
}

static void *exit_in_pthread(void *arg)
{
	weft_exit(NULL);
}

static void init_then_exit_from_pthread(void *arg)
{
	wt_init(2);
	pthread_t p;
	WT_OK(pthread_create(&p, NULL, exit_in_pthread, NULL));
	pthread_join(p, NULL); /* never returns: the process aborts */
}

static void test_exit_from_foreign_thread_aborts(void **state)
{
	struct wt_child c;
	wt_run_child(init_then_exit_from_pthread, NULL, 20, &c);
	char how[96];
	if (!WIFSIGNALED(c.status) || WTERMSIG(c.status) != SIGABRT)
		fail_msg("child %s, expected it to abort; stderr:\n%s",
			 wt_describe_status(c.status, how, sizeof how), c.err);
	WT_TRUE(strstr(c.err, "weft") != NULL, "no message from weft on stderr:\n%s", c.err);
	wt_child_free(&c);
}

/* A pthread that is not main starts the runtime by using it, then exits:
 * the runtime must not have made that pthread a worker, so every worker -
 * worker 0 included - still runs ULTs, and main (a foreign thread here)
 * may shut the runtime down. */
static void *lazy_start(void *arg)
{
	weft_t t;
	void *v = NULL;
	WT_OK(weft_create(&t, NULL, return_arg, arg));
	WT_OK(weft_join(t, &v));
	WT_EQ_PTR(v, arg);
	WT_EQ(weft_worker_id(), -1);
	return NULL;
}

static void test_lazy_init_from_exiting_pthread(void **state)
{
	(void)state;
	pthread_t p;
	WT_EQ(pthread_create(&p, NULL, lazy_start, (void *)1), 0);
	WT_EQ(pthread_join(p, NULL), 0);
	WT_CMP(weft_num_workers(), >=, 1);
	WT_EQU(weft_self(), WEFT_NULL);
	for (int k = 0; k < weft_num_workers(); k++) {
		weft_attr_t a;
		weft_t t;
		void *v = NULL;
		WT_OK(weft_attr_init(&a));
		WT_OK(weft_attr_setworker(&a, k));
		WT_OK(weft_create(&t, &a, return_arg, (void *)(long)(k + 2)));
		WT_OK(weft_join(t, &v));
		WT_EQ((long)v, k + 2);
	}
	WT_OK(weft_shutdown());
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_queries_from_foreign_thread),
		cmocka_unit_test(test_create_and_join_from_foreign_thread),
		cmocka_unit_test(test_main_joins_ult_created_by_foreign_thread),
		cmocka_unit_test(test_foreign_join_blocks_until_exit),
		cmocka_unit_test(test_foreign_sem_wait_interrupted_by_handler),
		cmocka_unit_test(test_detach_from_foreign_thread),
		cmocka_unit_test(test_foreign_join_errors),
		cmocka_unit_test(test_concurrent_creates_from_pthreads_and_ults),
		cmocka_unit_test(test_exit_from_foreign_thread_aborts),
		cmocka_unit_test(test_lazy_init_from_exiting_pthread),
	};
	return WT_RUN(argc, argv, tests);
}
