/* POSIX priorities (weft/sched.h): scheduling parameters per ULT, the prio
 * scheduler's order on one worker and across two, preemption at wakes,
 * and wait queues that wake the highest-priority waiter first. The
 * wait-queue tests hold under every scheduler (they run in every ctest
 * variant); the scheduler tests start the runtime with prio themselves. */
#include "harness.h"

#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

static weft_t spawn_prio(int policy, int prio, void *(*fn)(void *), void *arg)
{
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	WT_OK(weft_attr_setschedparam(&a, policy, prio));
	weft_t t = wt_spawn(&a, fn, arg);
	WT_OK(weft_attr_destroy(&a));
	return t;
}

/* ---- parameters ---------------------------------------------------------- */

static void *report_params(void *arg)
{
	int *out = arg;
	WT_OK(weft_getschedparam(WEFT_NULL, &out[0], &out[1]));
	return NULL;
}

static void test_params_round_trip_and_errors(void **state)
{
	wt_init(1);
	int policy, prio;
	WT_OK(weft_getschedparam(WEFT_NULL, &policy, &prio));
	WT_EQ(policy, SCHED_OTHER);
	WT_EQ(prio, 0);
	WT_ERR(weft_setschedparam(WEFT_NULL, SCHED_FIFO, 0), EINVAL);
	WT_ERR(weft_setschedparam(WEFT_NULL, SCHED_FIFO, 100), EINVAL);
	WT_ERR(weft_setschedparam(WEFT_NULL, SCHED_OTHER, 1), EINVAL);
	WT_ERR(weft_setschedparam(WEFT_NULL, 42, 0), EINVAL);
	WT_ERR(weft_setschedparam((weft_t)999999, SCHED_FIFO, 1), ESRCH);
	WT_ERR(weft_getschedparam(WEFT_NULL, NULL, &prio), EINVAL);
	WT_OK(weft_setschedparam(WEFT_NULL, SCHED_RR, 99));
	WT_OK(weft_getschedparam(WEFT_NULL, &policy, &prio));
	WT_EQ(policy, SCHED_RR);
	WT_EQ(prio, 99);

	/* Inherited by default, explicit from the attribute. */
	int got[2] = {-1, -1};
	wt_join(wt_spawn(NULL, report_params, got));
	WT_EQ(got[0], SCHED_RR);
	WT_EQ(got[1], 99);
	wt_join(spawn_prio(SCHED_FIFO, 7, report_params, got));
	WT_EQ(got[0], SCHED_FIFO);
	WT_EQ(got[1], 7);

	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	WT_ERR(weft_attr_getschedparam(&a, &policy, &prio), EINVAL); /* inherits: none of its own */
	WT_ERR(weft_attr_setschedparam(&a, SCHED_RR, 0), EINVAL);
	WT_ERR(weft_attr_setschedparam(NULL, SCHED_RR, 1), EINVAL);
	WT_OK(weft_attr_setschedparam(&a, SCHED_OTHER, 0));
	WT_OK(weft_attr_getschedparam(&a, &policy, &prio));
	WT_EQ(policy, SCHED_OTHER);
	WT_OK(weft_attr_destroy(&a));
	WT_OK(weft_setschedparam(WEFT_NULL, SCHED_OTHER, 0));
	WT_OK(weft_shutdown());
}

static void *foreign_asks_for_itself(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)weft_setschedparam(WEFT_NULL, SCHED_FIFO, 1);
}

static void test_foreign_thread_is_einval(void **state)
{
	wt_init(1);
	struct wt_pthread fp;
	wt_pthread_start(&fp, foreign_asks_for_itself, NULL);
	WT_EQ((intptr_t)wt_pthread_join(&fp), EINVAL);
	WT_OK(weft_shutdown());
}

/* ---- the prio scheduler's order ------------------------------------------- */

static atomic_int order_next;
static int order[16];

static void *record_start(void *arg)
{
	order[atomic_fetch_add(&order_next, 1)] = (int)(intptr_t)arg;
	return NULL;
}

/* Ready ULTs run highest priority first, FIFO among equals, SCHED_OTHER
 * last, whatever order they were made ready in. */
static void test_ready_ults_run_by_priority(void **state)
{
	wt_init_sched(1, "prio");
	/* Above them all, so that creating them does not run them. */
	WT_OK(weft_setschedparam(WEFT_NULL, SCHED_FIFO, 99));
	static const int policy[] = {SCHED_OTHER, SCHED_FIFO,  SCHED_RR,
				     SCHED_FIFO,  SCHED_OTHER, SCHED_FIFO};
	static const int prio[] = {0, 10, 50, 30, 0, 50};
	static const int want[] = {2, 5, 3, 1, 0, 4}; /* by index */
	weft_t t[6];
	for (int i = 0; i < 6; i++)
		t[i] = spawn_prio(policy[i], prio[i], record_start, (void *)(intptr_t)i);
	WT_EQ(atomic_load(&order_next), 0); /* none ran: main outranks them */
	for (int i = 0; i < 6; i++)
		wt_join(t[i]);
	for (int i = 0; i < 6; i++)
		if (order[i] != want[i])
			fail_msg("run %d was ULT %d, expected ULT %d", i, order[i], want[i]);
	WT_OK(weft_setschedparam(WEFT_NULL, SCHED_OTHER, 0));
	WT_OK(weft_shutdown());
}

/* Creating a ULT that outranks its creator runs it at once (the create is a
 * scheduling point); one that does not waits. */
static void test_create_of_higher_runs_it_at_once(void **state)
{
	wt_init_sched(1, "prio");
	WT_OK(weft_setschedparam(WEFT_NULL, SCHED_FIFO, 20));
	atomic_store(&order_next, 0);
	weft_t lo = spawn_prio(SCHED_FIFO, 10, record_start, (void *)1);
	WT_EQ(atomic_load(&order_next), 0);
	weft_t hi = spawn_prio(SCHED_FIFO, 30, record_start, (void *)2);
	WT_EQ(atomic_load(&order_next), 1);
	WT_EQ(order[0], 2);
	wt_join(hi);
	wt_join(lo);
	WT_OK(weft_setschedparam(WEFT_NULL, SCHED_OTHER, 0));
	WT_OK(weft_shutdown());
}

/* A ULT that lowers its own priority below a ready one gives way at once. */
static void test_lowering_own_priority_yields(void **state)
{
	wt_init_sched(1, "prio");
	WT_OK(weft_setschedparam(WEFT_NULL, SCHED_FIFO, 50));
	atomic_store(&order_next, 0);
	weft_t t = spawn_prio(SCHED_FIFO, 40, record_start, (void *)1);
	WT_EQ(atomic_load(&order_next), 0);
	WT_OK(weft_setschedparam(WEFT_NULL, SCHED_FIFO, 45)); /* still above */
	WT_EQ(atomic_load(&order_next), 0);
	WT_OK(weft_setschedparam(WEFT_NULL, SCHED_FIFO, 30));
	WT_EQ(atomic_load(&order_next), 1);
	wt_join(t);
	/* Raising a ready ULT above the caller runs it at once too. */
	t = spawn_prio(SCHED_FIFO, 10, record_start, (void *)2);
	WT_EQ(atomic_load(&order_next), 1);
	WT_OK(weft_setschedparam(t, SCHED_FIFO, 60));
	WT_EQ(atomic_load(&order_next), 2);
	wt_join(t);
	WT_OK(weft_setschedparam(WEFT_NULL, SCHED_OTHER, 0));
	WT_OK(weft_shutdown());
}

/* A high-priority ULT woken while 64 low-priority ULTs are ready runs at
 * the wake: no low-priority ULT takes a step in between. */
#define LOW 64
static atomic_long low_steps;
static atomic_int stop_low;
static weft_sem_t wake_sem;
static long steps_at_post, steps_at_run;

static void *low_worker(void *arg)
{
	int poster = arg != NULL;
	for (long i = 0; !atomic_load(&stop_low) && i < 2000000; i++) {
		atomic_fetch_add(&low_steps, 1);
		if (poster && i == 100) {
			steps_at_post = atomic_load(&low_steps);
			WT_OK(weft_sem_post(&wake_sem));
		}
		weft_yield();
	}
	return NULL;
}

static void *high_waiter(void *arg)
{
	(void)arg;
	WT_OK(weft_sem_wait(&wake_sem));
	steps_at_run = atomic_load(&low_steps);
	atomic_store(&stop_low, 1);
	return NULL;
}

static void test_woken_high_runs_before_64_ready_low(void **state)
{
	wt_init_sched(1, "prio");
	WT_OK(weft_sem_init(&wake_sem, 0, 0));
	weft_t h = spawn_prio(SCHED_FIFO, 50, high_waiter, NULL); /* runs and blocks */
	weft_t t[LOW];
	for (int i = 0; i < LOW; i++)
		t[i] = wt_spawn(NULL, low_worker, i == LOW / 2 ? (void *)1 : NULL);
	for (int i = 0; i < LOW; i++)
		wt_join(t[i]);
	wt_join(h);
	WT_EQ(steps_at_run, steps_at_post);
	WT_OK(weft_sem_destroy(&wake_sem));
	WT_OK(weft_shutdown());
}

/* Two workers running prio: a ULT made ready while lower ones are queued
 * starts before any of them, even though the other worker is the one that
 * takes it. The main ULT (the highest) keeps one worker; the other works
 * through the low ULTs; the high ULT, parked on a semaphore, is made ready
 * by a post (no allocation, so nothing slow between the post and the count
 * read after it), and at most one low ULT - taken before the post - starts
 * after the post and before it. Under steal the high ULT would wait in the
 * poster's deque behind the low ones the other worker steals first. */
#define NLOW 40
static atomic_int low_started, hi_started, hi_waiting;
static int low_at_hi;
static weft_sem_t hi_sem;

static void *low_unit(void *arg)
{
	(void)arg;
	atomic_fetch_add(&low_started, 1);
	uint64_t end = wt_now_ns() + 1000000; /* 1 ms of work, no yield */
	while (wt_now_ns() < end)
		;
	return NULL;
}

static void *hi_unit(void *arg)
{
	(void)arg;
	atomic_store(&hi_waiting, 1);
	WT_OK(weft_sem_wait(&hi_sem));
	low_at_hi = atomic_load(&low_started);
	atomic_store(&hi_started, 1);
	return NULL;
}

static void test_two_workers_run_the_highest_anywhere(void **state)
{
	if (wt_usable_cpus() < 2)
		wt_skip("needs two CPUs for two workers to run at once");
	wt_init_sched(2, "prio");
	WT_OK(weft_sem_init(&hi_sem, 0, 0));
	WT_OK(weft_setschedparam(WEFT_NULL, SCHED_FIFO, 90));
	weft_t h = spawn_prio(SCHED_FIFO, 10, hi_unit, NULL);
	WT_WAIT(atomic_load(&hi_waiting), 10); /* main's yields let it park */
	weft_t t[NLOW];
	for (int i = 0; i < NLOW; i++)
		t[i] = spawn_prio(SCHED_OTHER, 0, low_unit, NULL);
	WT_WAIT(atomic_load(&low_started) >= 2, 10);
	WT_OK(weft_sem_post(&hi_sem));
	int after_post = atomic_load(&low_started);
	/* Keep this worker (no yield) until the high ULT has started. */
	uint64_t end = wt_now_ns() + 10000000000ull;
	while (!atomic_load(&hi_started) && wt_now_ns() < end)
		;
	WT_TRUE(atomic_load(&hi_started), "the high ULT never started on the other worker");
	WT_CMP(low_at_hi - after_post, <=, 1);
	wt_join(h);
	for (int i = 0; i < NLOW; i++)
		wt_join(t[i]);
	WT_OK(weft_setschedparam(WEFT_NULL, SCHED_OTHER, 0));
	WT_OK(weft_sem_destroy(&hi_sem));
	WT_OK(weft_shutdown());
}

/* SCHED_RR: a ULT that keeps running (with scheduling points that do not
 * block: here a priority call) gives way to an equal one once its slice is
 * over; under SCHED_FIFO it never does. */
static atomic_int other_ran;
static uint64_t other_at;

static void *rr_spinner(void *arg)
{
	int policy = (int)(intptr_t)arg;
	uint64_t start = wt_now_ns();
	while (!atomic_load(&other_ran) && wt_now_ns() - start < 1000000000ull) {
		uint64_t end = wt_now_ns() + 1000000; /* 1 ms of work */
		while (wt_now_ns() < end)
			;
		WT_OK(weft_setschedparam(WEFT_NULL, policy, 10)); /* a scheduling point */
	}
	return (void *)(uintptr_t)(wt_now_ns() - start);
}

static void *rr_other(void *arg)
{
	(void)arg;
	other_at = wt_now_ns();
	atomic_store(&other_ran, 1);
	return NULL;
}

static uint64_t run_spinner_and_other(int policy)
{
	wt_init_sched(1, "prio");
	WT_OK(weft_setschedparam(WEFT_NULL, SCHED_FIFO, 99));
	atomic_store(&other_ran, 0);
	weft_t a = spawn_prio(policy, 10, rr_spinner, (void *)(intptr_t)policy);
	weft_t b = spawn_prio(policy, 10, rr_other, NULL);
	uint64_t ran = (uint64_t)(uintptr_t)wt_join(a);
	wt_join(b);
	WT_OK(weft_setschedparam(WEFT_NULL, SCHED_OTHER, 0));
	WT_OK(weft_shutdown());
	return ran;
}

static void test_rr_slice_gives_way_at_a_scheduling_point(void **state)
{
	uint64_t ran = run_spinner_and_other(SCHED_RR);
	/* The spinner stopped because the other ran: after one slice (100 ms),
	 * well before its 1 s limit. */
	WT_CMPU(ran, >=, WEFT_SCHED_RR_SLICE_NS * 9 / 10);
	WT_CMPU(ran, <, 1000000000ull);
}

static void test_fifo_keeps_the_worker_past_a_slice(void **state)
{
	uint64_t ran = run_spinner_and_other(SCHED_FIFO);
	WT_CMPU(ran, >=, 1000000000ull); /* it ran to its limit: the other waited */
}

/* ---- wait queues, under every scheduler ------------------------------------- */

#define NWAIT 6
static const int wait_policy[NWAIT] = {SCHED_OTHER, SCHED_FIFO,  SCHED_RR,
				       SCHED_FIFO,  SCHED_OTHER, SCHED_FIFO};
static const int wait_prio[NWAIT] = {0, 10, 50, 30, 0, 50};
static const int wait_want[NWAIT] = {2, 5, 3, 1, 0, 4};
static atomic_int waiting;

static weft_mutex_t mtx;
static weft_cond_t cnd;
static weft_sem_t sem;
static int cond_go;

static void *mutex_waiter(void *arg)
{
	atomic_fetch_add(&waiting, 1);
	WT_OK(weft_mutex_lock(&mtx));
	order[atomic_fetch_add(&order_next, 1)] = (int)(intptr_t)arg;
	WT_OK(weft_mutex_unlock(&mtx));
	return NULL;
}

static void *cond_waiter(void *arg)
{
	WT_OK(weft_mutex_lock(&mtx));
	atomic_fetch_add(&waiting, 1);
	while (cond_go == 0)
		WT_OK(weft_cond_wait(&cnd, &mtx));
	cond_go--;
	order[atomic_fetch_add(&order_next, 1)] = (int)(intptr_t)arg;
	WT_OK(weft_mutex_unlock(&mtx));
	return NULL;
}

static void *sem_waiter(void *arg)
{
	atomic_fetch_add(&waiting, 1);
	WT_OK(weft_sem_wait(&sem));
	order[atomic_fetch_add(&order_next, 1)] = (int)(intptr_t)arg;
	return NULL;
}

/* Start the waiters on the caller's worker, 0 (all bound to it, so that
 * each runs, once the caller yields, until it blocks: they reach the queue
 * in creation order whatever the timing), one at a time. */
static void start_waiters(weft_t *t, void *(*fn)(void *))
{
	atomic_store(&order_next, 0);
	atomic_store(&waiting, 0);
	for (int i = 0; i < NWAIT; i++) {
		weft_attr_t a;
		WT_OK(weft_attr_init(&a));
		WT_OK(weft_attr_setschedparam(&a, wait_policy[i], wait_prio[i]));
		WT_OK(weft_attr_setworker(&a, 0));
		t[i] = wt_spawn(&a, fn, (void *)(intptr_t)i);
		WT_OK(weft_attr_destroy(&a));
		WT_WAIT(atomic_load(&waiting) == i + 1, 10);
		/* Let it reach its wait: it runs on our worker when we yield. */
		for (int k = 0; k < 20; k++)
			weft_yield();
	}
}

static void check_order(const char *what)
{
	for (int i = 0; i < NWAIT; i++)
		if (order[i] != wait_want[i])
			fail_msg("%s: wake %d went to waiter %d, expected %d", what, i, order[i],
				 wait_want[i]);
}

static void *mutex_order(void *arg)
{
	(void)arg;
	/* Waiters that park at once: a spinning SCHED_OTHER waiter could take
	 * the lock before the woken one (barging), which is allowed. */
	weft_mutexattr_t ma;
	WT_OK(weft_mutexattr_init(&ma));
	WT_OK(weft_mutexattr_setpolicy(&ma, WEFT_LOCK_PARK));
	WT_OK(weft_mutex_init(&mtx, &ma));
	weft_t t[NWAIT];
	/* The test's ULT outranks the waiters, so that unlocking does not run
	 * one before the others are queued. */
	WT_OK(weft_setschedparam(WEFT_NULL, SCHED_FIFO, 99));
	WT_OK(weft_mutex_lock(&mtx));
	start_waiters(t, mutex_waiter);
	WT_EQ(atomic_load(&order_next), 0);
	WT_OK(weft_mutex_unlock(&mtx));
	for (int i = 0; i < NWAIT; i++)
		wt_join(t[i]);
	check_order("mutex");
	WT_OK(weft_setschedparam(WEFT_NULL, SCHED_OTHER, 0));
	WT_OK(weft_mutex_destroy(&mtx));
	return NULL;
}

static void test_mutex_wakes_by_priority(void **state)
{
	wt_init(0);
	wt_join(wt_spawn_on(0, mutex_order, NULL));
	wt_fini();
}

static void *cond_order(void *arg)
{
	(void)arg;
	WT_OK(weft_mutex_init(&mtx, NULL));
	WT_OK(weft_cond_init(&cnd, NULL));
	WT_OK(weft_setschedparam(WEFT_NULL, SCHED_FIFO, 99));
	cond_go = 0;
	weft_t t[NWAIT];
	start_waiters(t, cond_waiter);
	for (int i = 0; i < NWAIT; i++) {
		WT_OK(weft_mutex_lock(&mtx));
		cond_go++;
		WT_OK(weft_cond_signal(&cnd));
		WT_OK(weft_mutex_unlock(&mtx));
		WT_WAIT(atomic_load(&order_next) == i + 1, 10);
	}
	for (int i = 0; i < NWAIT; i++)
		wt_join(t[i]);
	check_order("condition variable");
	WT_OK(weft_setschedparam(WEFT_NULL, SCHED_OTHER, 0));
	WT_OK(weft_cond_destroy(&cnd));
	WT_OK(weft_mutex_destroy(&mtx));
	return NULL;
}

static void test_cond_signal_wakes_by_priority(void **state)
{
	wt_init(0);
	wt_join(wt_spawn_on(0, cond_order, NULL));
	wt_fini();
}

static void *sem_order(void *arg)
{
	(void)arg;
	WT_OK(weft_sem_init(&sem, 0, 0));
	WT_OK(weft_setschedparam(WEFT_NULL, SCHED_FIFO, 99));
	weft_t t[NWAIT];
	start_waiters(t, sem_waiter);
	for (int i = 0; i < NWAIT; i++) {
		WT_OK(weft_sem_post(&sem));
		WT_WAIT(atomic_load(&order_next) == i + 1, 10);
	}
	for (int i = 0; i < NWAIT; i++)
		wt_join(t[i]);
	check_order("semaphore");
	WT_OK(weft_setschedparam(WEFT_NULL, SCHED_OTHER, 0));
	WT_OK(weft_sem_destroy(&sem));
	return NULL;
}

static void test_sem_post_wakes_by_priority(void **state)
{
	wt_init(0);
	wt_join(wt_spawn_on(0, sem_order, NULL));
	wt_fini();
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_params_round_trip_and_errors),
		cmocka_unit_test(test_foreign_thread_is_einval),
		cmocka_unit_test(test_ready_ults_run_by_priority),
		cmocka_unit_test(test_create_of_higher_runs_it_at_once),
		cmocka_unit_test(test_lowering_own_priority_yields),
		cmocka_unit_test(test_woken_high_runs_before_64_ready_low),
		cmocka_unit_test(test_two_workers_run_the_highest_anywhere),
		cmocka_unit_test(test_rr_slice_gives_way_at_a_scheduling_point),
		cmocka_unit_test(test_fifo_keeps_the_worker_past_a_slice),
		cmocka_unit_test(test_mutex_wakes_by_priority),
		cmocka_unit_test(test_cond_signal_wakes_by_priority),
		cmocka_unit_test(test_sem_post_wakes_by_priority),
	};
	return WT_RUN(argc, argv, tests);
}
