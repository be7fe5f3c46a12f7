/* Accounting (weft.h): weft_cputime and weft_worker_stats.
 *
 * Covered: the errors (NULL out: EINVAL; a worker out of range: EINVAL; no
 * runtime, before weft_init and after weft_shutdown: ESRCH from both; an
 * unknown, joined or null ULT: ESRCH) and an invalid WEFT_CPU_CLOCK
 * (weft_init and weft_config_init EINVAL, the runtime stays off).
 * The counters: yields between two ULTs on one worker add switches, yields
 * with nothing else ready add none; a park that blocks adds exactly one
 * park, one that finds a token none; an idle worker steals from a busy one
 * (steal scheduler; never with share); an idle worker's idle_ns, sleep_ns
 * and sleeps grow while everything sleeps 50 ms, with sleep_ns <= idle_ns;
 * created and exited count exactly the ULTs made by ULTs on a worker and
 * those that ended there (one made by a foreign thread only in exited).
 * weft_cputime: a spinning ULT (and the root ULT) sees its own time reach
 * 20 ms; a ULT sleeping 100 ms gains less than 30 ms; another running ULT's
 * time, read from a different worker, grows without going back; an exited,
 * unjoined ULT keeps its time, which no longer grows, and a foreign thread
 * reads the same; with WEFT_CPU_CLOCK=1 a ULT's work before the first
 * weft_cputime call counts, without it, it does not.
 * Counting started while a ULT runs on another worker charges that run
 * from then on, and with WEFT_CPU_CLOCK=1 the root ULT's time counts from
 * start-up.
 *
 * No test asserts speed: CPU-time bounds are in CPU time, measured with the
 * kernel's thread clock, and every wait is a loop with a generous wall-clock
 * limit. */
#include "harness.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MS 1000000ull

static void *return_arg(void *arg)
{
	return arg;
}

static weft_worker_stats_t stats_of(int worker)
{
	weft_worker_stats_t s;
	WT_OK(weft_worker_stats(worker, &s));
	return s;
}

/* The calling kernel thread's CPU time, by the raw system call: libweft's
 * clock_gettime would read the ULT's clock in a ULT, and start counting. */
static uint64_t kernel_thread_cpu_ns(void)
{
	struct timespec ts;
	WT_OK((int)syscall(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, &ts));
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Burn `ns` of the kernel thread's CPU time without switching (10 s wall
 * limit). */
static void burn_cpu(uint64_t ns)
{
	uint64_t start = kernel_thread_cpu_ns(), deadline = wt_now_ns() + 10000000000ull;
	while (kernel_thread_cpu_ns() - start < ns)
		if (wt_now_ns() > deadline)
			fail_msg("could not burn %llu ns of CPU in 10 s", (unsigned long long)ns);
}

static uint64_t cputime(weft_t t)
{
	uint64_t ns = UINT64_MAX;
	WT_OK(weft_cputime(t, &ns));
	WT_CMPU(ns, !=, UINT64_MAX);
	return ns;
}

/* The other of two workers. */
static int other_worker(void)
{
	return 1 - weft_worker_id();
}

/* ---- errors ---------------------------------------------------------------- */

static void check_not_running(weft_t t)
{
	uint64_t ns = 42;
	weft_worker_stats_t s;
	WT_ERR(weft_cputime(t, &ns), ESRCH);
	WT_ERR(weft_cputime(1, &ns), ESRCH);
	WT_EQU(ns, 42); /* untouched */
	WT_ERR(weft_cputime(t, NULL), EINVAL);
	WT_ERR(weft_worker_stats(0, &s), ESRCH);
	WT_ERR(weft_worker_stats(-1, &s), ESRCH);
	WT_ERR(weft_worker_stats(0, NULL), EINVAL);
}

static void test_stats_errors_without_runtime(void **state)
{
	check_not_running(WEFT_NULL);
	wt_init(2);
	weft_t me = weft_self();
	cputime(me);
	stats_of(0);
	WT_OK(weft_shutdown());
	check_not_running(me);
}

static void test_stats_bad_arguments(void **state)
{
	wt_init(2);
	weft_worker_stats_t s;
	memset(&s, 0x5a, sizeof s);
	weft_worker_stats_t untouched = s;
	WT_ERR(weft_worker_stats(0, NULL), EINVAL);
	WT_ERR(weft_worker_stats(-1, &s), EINVAL);
	WT_ERR(weft_worker_stats(2, &s), EINVAL);
	WT_ERR(weft_worker_stats(INT_MAX, &s), EINVAL);
	WT_ERR(weft_worker_stats(INT_MIN, &s), EINVAL);
	WT_TRUE(memcmp(&s, &untouched, sizeof s) == 0, "a failed call wrote *out");
	WT_OK(weft_worker_stats(0, &s));
	WT_OK(weft_worker_stats(1, &s));

	uint64_t ns = 42;
	weft_t me = weft_self();
	WT_ERR(weft_cputime(me, NULL), EINVAL);
	WT_ERR(weft_cputime(WEFT_NULL, &ns), ESRCH);
	WT_ERR(weft_cputime(me + 1000000, &ns), ESRCH);
	WT_ERR(weft_cputime(UINT64_MAX, &ns), ESRCH);
	weft_t t = wt_spawn(NULL, return_arg, NULL);
	cputime(t); /* alive (or exited, not yet joined) */
	wt_join(t);
	WT_ERR(weft_cputime(t, &ns), ESRCH); /* joined: gone */
	WT_EQU(ns, 42);
	WT_OK(weft_shutdown());
}

static void test_stats_invalid_cpu_clock_env(void **state)
{
	static const char *const bad[] = {"2", "yes", "01", "-1", "1 "};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		WT_OK(setenv("WEFT_CPU_CLOCK", bad[i], 1));
		WT_ERR(weft_init(NULL), EINVAL);
		WT_EQ(wt_running(), 0);
		weft_config_t c;
		WT_ERR(weft_config_init(&c), EINVAL);
	}
	/* 0, 1 and "" (unset) are fine, and the runtime starts after all. */
	static const char *const good[] = {"0", "1", ""};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		WT_OK(setenv("WEFT_CPU_CLOCK", good[i], 1));
		wt_init(2);
		WT_EQ(weft_num_workers(), 2);
		cputime(weft_self());
		WT_OK(weft_shutdown());
	}
	unsetenv("WEFT_CPU_CLOCK");
}

/* ---- counters ------------------------------------------------------------------ */

struct yielders {
	atomic_int go;
	int n;
};

static void *yield_n(void *arg)
{
	struct yielders *y = arg;
	while (!atomic_load(&y->go))
		weft_yield();
	for (int i = 0; i < y->n; i++)
		weft_yield();
	return NULL;
}

static void test_stats_yields_add_switches(void **state)
{
	wt_init(2);
	weft_worker_stats_t before = stats_of(1);
	/* Both bound to worker 1: after `go`, every yield finds the other one
	 * ready and switches to it. */
	struct yielders y = {0, 100};
	weft_t a = wt_spawn_on(1, yield_n, &y);
	weft_t b = wt_spawn_on(1, yield_n, &y);
	atomic_store(&y.go, 1);
	wt_join(a);
	wt_join(b);
	weft_worker_stats_t after = stats_of(1);
	WT_CMP(after.switches - before.switches, >=, 100);
	WT_OK(weft_shutdown());
}

/* A yield alone on its worker does not switch: the counter does not move
 * while a bound ULT yields 1000 times with nothing else to run there. */
static void *yield_alone(void *arg)
{
	(void)arg;
	int w = weft_worker_id();
	weft_worker_stats_t before = stats_of(w);
	for (int i = 0; i < 1000; i++)
		weft_yield();
	weft_worker_stats_t after = stats_of(w);
	WT_EQ(weft_worker_id(), w);
	WT_EQU(after.switches, before.switches);
	return NULL;
}

static void test_stats_lone_yields_do_not_switch(void **state)
{
	wt_init(2);
	/* Main waits in join (not on worker 1's queues), so the ULT is alone
	 * on worker 1. */
	wt_join(wt_spawn_on(1, yield_alone, NULL));
	WT_OK(weft_shutdown());
}

struct parker {
	atomic_int done;
	int token_parks;
	uint64_t token_delta; /* worker 1's parks across the token parks */
};

static void *park_until_done(void *arg)
{
	struct parker *p = arg;
	/* Parks that find a token do not block and do not count. */
	uint64_t before = stats_of(1).parks;
	for (int i = 0; i < p->token_parks; i++) {
		WT_OK(weft_unpark(weft_self()));
		WT_OK(weft_park());
	}
	p->token_delta = stats_of(1).parks - before;
	while (!atomic_load(&p->done))
		weft_park();
	return NULL;
}

static void test_stats_blocking_park_counts(void **state)
{
	wt_init(2);
	uint64_t before = stats_of(1).parks;
	struct parker p = {.token_parks = 10};
	weft_t t = wt_spawn_on(1, park_until_done, &p);
	/* The counter shows the park while the ULT is blocked in it. */
	WT_WAIT(stats_of(1).parks > before, 10);
	atomic_store(&p.done, 1);
	WT_OK(weft_unpark(t));
	wt_join(t);
	WT_EQU(p.token_delta, 0);
	/* Exactly one: nothing else parks on worker 1. */
	WT_EQU(stats_of(1).parks - before, 1);
	WT_OK(weft_shutdown());
}

static void *spin_200us(void *arg)
{
	uint64_t end = wt_now_ns() + 200000;
	while (wt_now_ns() < end)
		;
	return arg;
}

static uint64_t total_steals(void)
{
	uint64_t n = 0;
	for (int w = 0; w < weft_num_workers(); w++)
		n += stats_of(w).steals;
	return n;
}

static void test_stats_idle_worker_steals(void **state)
{
	wt_init(2);
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	uint64_t before = total_steals();
	/* Bursts of busy ULTs queued on main's worker; the idle one steals
	 * (steal scheduler). Loop until seen: how soon is up to the OS. */
	uint64_t deadline = wt_now_ns() + 10000000000ull;
	int rounds = 0;
	do {
		weft_t t[32];
		for (int i = 0; i < 32; i++)
			t[i] = wt_spawn(NULL, spin_200us, NULL);
		for (int i = 0; i < 32; i++)
			wt_join(t[i]);
		rounds++;
	} while (c.sched != WEFT_SCHED_SHARE && total_steals() == before && wt_now_ns() < deadline);
	if (c.sched == WEFT_SCHED_SHARE)
		WT_EQU(total_steals(), before); /* one shared queue: nothing to steal */
	else
		WT_TRUE(total_steals() > before, "no steal in %d rounds of 32 ULTs", rounds);
	WT_OK(weft_shutdown());
}

struct idle_probe {
	weft_worker_stats_t s;
};

static void *read_own_stats(void *arg)
{
	struct idle_probe *p = arg;
	p->s = stats_of(weft_worker_id());
	return NULL;
}

static void test_stats_idle_and_sleep_time(void **state)
{
	wt_init(2);
	/* Worker 1's counters read on worker 1 itself, while a ULT runs there:
	 * its loop is not half-way through an update. */
	struct idle_probe p0, p1;
	wt_join(wt_spawn_on(1, read_own_stats, &p0));
	uint64_t t0 = wt_now_ns();
	WT_OK(weft_sleep_ns(50 * MS)); /* every worker is idle now */
	WT_CMPU(wt_now_ns() - t0, >=, 50 * MS);
	wt_join(wt_spawn_on(1, read_own_stats, &p1));
	/* The idle period that covers the sleep is counted once it ends. */
	WT_CMPU(p1.s.idle_ns - p0.s.idle_ns, >=, 40 * MS);
	WT_CMPU(p1.s.sleep_ns - p0.s.sleep_ns, >=, 10 * MS);
	WT_CMPU(p1.s.sleeps, >, p0.s.sleeps);
	WT_CMPU(p0.s.sleep_ns, <=, p0.s.idle_ns);
	WT_CMPU(p1.s.sleep_ns, <=, p1.s.idle_ns);
	WT_OK(weft_shutdown());
}

static void *create_ten_on_1(void *arg)
{
	weft_worker_stats_t *delta = arg;
	weft_worker_stats_t before = stats_of(1);
	weft_t t[10];
	for (int i = 0; i < 10; i++)
		t[i] = wt_spawn_on(1, return_arg, NULL);
	for (int i = 0; i < 10; i++)
		wt_join(t[i]);
	weft_worker_stats_t after = stats_of(1);
	delta->created = after.created - before.created;
	delta->exited = after.exited - before.exited;
	return NULL;
}

static void *foreign_create_join(void *arg)
{
	(void)arg;
	weft_t t;
	int e = weft_create(&t, NULL, return_arg, NULL);
	if (!e)
		e = weft_join(t, NULL);
	return (void *)(intptr_t)e;
}

static void totals(uint64_t *created, uint64_t *exited)
{
	*created = *exited = 0;
	for (int w = 0; w < weft_num_workers(); w++) {
		weft_worker_stats_t s = stats_of(w);
		*created += s.created;
		*exited += s.exited;
	}
}

static uint64_t total_exited(void)
{
	uint64_t c, e;
	totals(&c, &e);
	return e;
}

static void test_stats_created_and_exited(void **state)
{
	wt_init(2);
	uint64_t c0, e0, c1, e1;
	totals(&c0, &e0);
	WT_EQU(c0, 0);
	WT_EQU(e0, 0);
	/* On worker 1, from worker 1: exactly 10 and 10 there. */
	weft_worker_stats_t delta = {0};
	wt_join(wt_spawn_on(1, create_ten_on_1, &delta));
	WT_EQU(delta.created, 10);
	WT_EQU(delta.exited, 10);
	/* From main, unbound: counted on whichever worker. */
	weft_t t[5];
	for (int i = 0; i < 5; i++)
		t[i] = wt_spawn(NULL, return_arg, NULL);
	for (int i = 0; i < 5; i++)
		wt_join(t[i]);
	/* A join may return before the exiting worker has bumped its counter
	 * (the ULT's exit is published first): wait for it, then exactly. */
	WT_WAIT(total_exited() >= e0 + 16, 10);
	totals(&c1, &e1);
	WT_EQU(c1 - c0, 1 + 10 + 5);
	WT_EQU(e1 - e0, 1 + 10 + 5);
	/* Made by a foreign thread: it exits on a worker, but no worker made
	 * it. */
	struct wt_pthread p;
	wt_pthread_start(&p, foreign_create_join, NULL);
	WT_OK((intptr_t)wt_pthread_join(&p));
	WT_WAIT(total_exited() >= e1 + 1, 10);
	totals(&c0, &e0);
	WT_EQU(c0, c1);
	WT_EQU(e0, e1 + 1);
	WT_OK(weft_shutdown());
}

/* ---- weft_cputime ------------------------------------------------------------ */

static void *spin_until_20ms(void *arg)
{
	(void)arg;
	uint64_t deadline = wt_now_ns() + 10000000000ull, prev = 0, now;
	while ((now = cputime(weft_self())) < 20 * MS) {
		WT_CMPU(now, >=, prev);
		prev = now;
		if (wt_now_ns() > deadline)
			fail_msg("cputime stayed at %llu ns for 10 s of spinning",
				 (unsigned long long)now);
	}
	return NULL;
}

static void test_cputime_grows_while_running(void **state)
{
	wt_init(2);
	wt_join(wt_spawn(NULL, spin_until_20ms, NULL));
	spin_until_20ms(NULL); /* the root ULT too */
	WT_OK(weft_shutdown());
}

static void *sleep_100ms(void *arg)
{
	uint64_t *gained = arg;
	uint64_t before = cputime(weft_self()), t0 = wt_now_ns();
	WT_OK(weft_sleep_ns(100 * MS));
	WT_CMPU(wt_now_ns() - t0, >=, 100 * MS);
	uint64_t after = cputime(weft_self());
	WT_CMPU(after, >=, before);
	*gained = after - before;
	return NULL;
}

static void test_cputime_excludes_sleep(void **state)
{
	wt_init(2);
	uint64_t gained = UINT64_MAX;
	wt_join(wt_spawn(NULL, sleep_100ms, &gained));
	WT_CMPU(gained, <, 30 * MS);
	WT_OK(weft_shutdown());
}

struct spinner {
	atomic_int started, stop;
};

static void *spin_until_stopped(void *arg)
{
	struct spinner *s = arg;
	atomic_store(&s->started, 1);
	while (!atomic_load(&s->stop))
		;
	return NULL;
}

/* Read t's time (it spins on another worker, never switching) until it
 * reaches 20 ms; it never goes back. */
static void watch_grow(weft_t t)
{
	uint64_t deadline = wt_now_ns() + 10000000000ull, prev = 0, now;
	while ((now = cputime(t)) < 20 * MS) {
		WT_CMPU(now, >=, prev);
		prev = now;
		if (wt_now_ns() > deadline)
			fail_msg("the running ULT's cputime stayed at %llu ns for 10 s",
				 (unsigned long long)now);
	}
}

static void test_cputime_of_another_running_ult(void **state)
{
	wt_init(2);
	cputime(weft_self()); /* counting starts before the spinner runs */
	struct spinner s = {0};
	weft_t t = wt_spawn_on(other_worker(), spin_until_stopped, &s);
	WT_WAIT(atomic_load(&s.started), 10);
	watch_grow(t);
	atomic_store(&s.stop, 1);
	wt_join(t);
	WT_OK(weft_shutdown());
}

/* Two ULTs on the other worker spin 20 us and yield to each other, so that
 * worker switches all the time; t's time, read meanwhile, never goes back.
 * A read that met a switch half way could pair the new run's start with
 * the old total and miss a whole run (cpuclock.c, the sequence lock). */
static void *spin_and_yield(void *arg)
{
	struct spinner *s = arg;
	atomic_store(&s->started, 1);
	while (!atomic_load(&s->stop)) {
		uint64_t until = wt_now_ns() + 20000;
		while (wt_now_ns() < until)
			;
		weft_yield();
	}
	return NULL;
}

static void test_cputime_of_a_switching_ult_never_goes_back(void **state)
{
	wt_init(2);
	cputime(weft_self()); /* counting on */
	struct spinner s = {0};
	int w = other_worker();
	weft_t t = wt_spawn_on(w, spin_and_yield, &s);
	weft_t u = wt_spawn_on(w, spin_and_yield, &s);
	WT_WAIT(atomic_load(&s.started), 10);
	uint64_t prev = 0, end = wt_now_ns() + 300 * MS;
	long reads = 0;
	while (wt_now_ns() < end) {
		uint64_t now = cputime(t);
		WT_CMPU(now, >=, prev);
		prev = now;
		reads++;
	}
	atomic_store(&s.stop, 1);
	wt_join(t);
	wt_join(u);
	WT_CMPU(prev, >, 0);
	printf("[          ] %ld reads\n", reads);
	WT_OK(weft_shutdown());
}

static void test_cputime_counting_starts_while_it_runs(void **state)
{
	wt_init(2);
	/* The spinner is running when the first weft_cputime call starts
	 * counting: its time from then on counts, the run in progress
	 * included. */
	struct spinner s = {0};
	weft_t t = wt_spawn_on(other_worker(), spin_until_stopped, &s);
	WT_WAIT(atomic_load(&s.started), 10);
	watch_grow(t);
	atomic_store(&s.stop, 1);
	wt_join(t);
	WT_OK(weft_shutdown());
}

struct burner {
	uint64_t burn_ns;
	uint64_t seen; /* its cputime at the end */
};

static void *burn_then_read(void *arg)
{
	struct burner *b = arg;
	burn_cpu(b->burn_ns);
	b->seen = cputime(weft_self());
	return NULL;
}

static void *burn_and_exit(void *arg)
{
	burn_cpu((uint64_t)(uintptr_t)arg);
	return NULL;
}

static void *read_cputime_in_pthread(void *arg)
{
	weft_t t = *(weft_t *)arg;
	uint64_t ns = 0;
	int e = weft_cputime(t, &ns);
	return e ? (void *)(intptr_t)-e : (void *)(uintptr_t)ns;
}

static void test_cputime_of_exited_ult_and_from_foreign(void **state)
{
	wt_init(2);
	cputime(weft_self()); /* start counting */
	weft_t t = wt_spawn(NULL, burn_and_exit, (void *)(uintptr_t)(20 * MS));
	/* Exited (its worker counted the exit) but not joined: its time is
	 * kept, the final run included, and no longer grows. */
	WT_WAIT(total_exited() == 1, 20);
	uint64_t v = cputime(t);
	WT_CMPU(v, >=, 20 * MS);
	uint64_t end = wt_now_ns() + 5 * MS;
	while (wt_now_ns() < end)
		;
	WT_EQU(cputime(t), v);
	/* A foreign thread reads the same. */
	struct wt_pthread p;
	wt_pthread_start(&p, read_cputime_in_pthread, &t);
	WT_EQU((uintptr_t)wt_pthread_join(&p), v);
	wt_join(t);
	WT_OK(weft_shutdown());
}

/* With WEFT_CPU_CLOCK=1 a ULT's CPU time counts from its first run; without
 * it, from the first weft_cputime call, so work before that call is lost. */
static void test_cputime_env_counts_from_start(void **state)
{
	WT_OK(setenv("WEFT_CPU_CLOCK", "1", 1));
	wt_init(2);
	struct burner b = {.burn_ns = 30 * MS};
	wt_join(wt_spawn(NULL, burn_then_read, &b));
	WT_CMPU(b.seen, >=, 29 * MS);
	WT_OK(weft_shutdown());
	unsetenv("WEFT_CPU_CLOCK");
}

static void test_cputime_without_env_counts_from_first_call(void **state)
{
	unsetenv("WEFT_CPU_CLOCK");
	wt_init(2);
	struct burner b = {.burn_ns = 30 * MS};
	wt_join(wt_spawn(NULL, burn_then_read, &b));
	/* The call started counting: only the time since (microseconds). */
	WT_CMPU(b.seen, <, 10 * MS);
	WT_OK(weft_shutdown());
}

static void test_cputime_env_counts_root_from_start(void **state)
{
	WT_OK(setenv("WEFT_CPU_CLOCK", "1", 1));
	wt_init(2);
	/* The root ULT has run since weft_init; burn before any switch. */
	burn_cpu(30 * MS);
	WT_CMPU(cputime(weft_self()), >=, 29 * MS);
	WT_OK(weft_shutdown());
	unsetenv("WEFT_CPU_CLOCK");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stats_errors_without_runtime),
		cmocka_unit_test(test_cputime_of_a_switching_ult_never_goes_back),
		cmocka_unit_test(test_stats_bad_arguments),
		cmocka_unit_test(test_stats_invalid_cpu_clock_env),
		cmocka_unit_test(test_stats_yields_add_switches),
		cmocka_unit_test(test_stats_lone_yields_do_not_switch),
		cmocka_unit_test(test_stats_blocking_park_counts),
		cmocka_unit_test(test_stats_idle_worker_steals),
		cmocka_unit_test(test_stats_idle_and_sleep_time),
		cmocka_unit_test(test_stats_created_and_exited),
		cmocka_unit_test(test_cputime_grows_while_running),
		cmocka_unit_test(test_cputime_excludes_sleep),
		cmocka_unit_test(test_cputime_of_another_running_ult),
		cmocka_unit_test(test_cputime_counting_starts_while_it_runs),
		cmocka_unit_test(test_cputime_of_exited_ult_and_from_foreign),
		cmocka_unit_test(test_cputime_env_counts_from_start),
		cmocka_unit_test(test_cputime_without_env_counts_from_first_call),
		cmocka_unit_test(test_cputime_env_counts_root_from_start),
	};
	return WT_RUN(argc, argv, tests);
}
