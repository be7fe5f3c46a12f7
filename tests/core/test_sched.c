/* Scheduling: weft_yield, worker binding, spreading work across workers, the
 * main ULT as an ordinary ULT, and idle workers sleeping. Every test
 * initialises the runtime and shuts it down. */
#include "harness.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void *return_arg(void *arg)
{
	return arg;
}

/* Two ULTs bound to one worker log their turns; yield must alternate them. */
enum { ALT_ROUNDS = 5000 };
struct alternation {
	atomic_int arrived;
	atomic_int next;
	char log[2 * ALT_ROUNDS];
};
struct alt_arg {
	struct alternation *s;
	char me;
};

static void *log_and_yield(void *arg)
{
	struct alt_arg *a = arg;
	struct alternation *s = a->s;
	atomic_fetch_add(&s->arrived, 1);
	while (atomic_load(&s->arrived) < 2)
		weft_yield();
	for (int i = 0; i < ALT_ROUNDS; i++) {
		s->log[atomic_fetch_add(&s->next, 1)] = a->me;
		weft_yield();
	}
	return NULL;
}

static void test_yield_alternates_two_ults_on_one_worker(void **state)
{
	wt_init(2);
	static struct alternation s;
	struct alt_arg a = {&s, 'A'}, b = {&s, 'B'};
	weft_t ta = wt_spawn_on(1, log_and_yield, &a);
	weft_t tb = wt_spawn_on(1, log_and_yield, &b);
	wt_join(ta);
	wt_join(tb);
	WT_EQ(atomic_load(&s.next), 2 * ALT_ROUNDS);
	for (int i = 1; i < 2 * ALT_ROUNDS; i++)
		if (s.log[i] == s.log[i - 1])
			fail_msg(
				"entries %d and %d of the log are both %c: a yield did not run the "
				"other ready ULT (log around it: %.16s)",
				i - 1, i, s.log[i], &s.log[i >= 8 ? i - 8 : 0]);
	WT_OK(weft_shutdown());
}

static void *yield_many(void *arg)
{
	for (int i = 0; i < 1000; i++)
		if (weft_yield() != 0)
			return (void *)1;
	return NULL;
}

static void test_yield_with_nothing_else_returns(void **state)
{
	wt_init(1);
	for (int i = 0; i < 10000; i++)
		WT_OK(weft_yield());
	weft_t t = wt_spawn(NULL, yield_many, NULL); /* main is blocked meanwhile */
	WT_EQ_PTR(wt_join(t), NULL);
	WT_OK(weft_shutdown());
}

/* A bound ULT checks its worker across yields and parks; a helper wakes it. */
struct bound {
	int k;
	weft_t self;
	atomic_int request;
	atomic_int mismatches;
	atomic_int last_seen;
	atomic_int finished;
};

static void *stay_bound(void *arg)
{
	struct bound *b = arg;
	for (int i = 0; i < 3000; i++) {
		int w = weft_worker_id();
		if (w != b->k) {
			atomic_fetch_add(&b->mismatches, 1);
			atomic_store(&b->last_seen, w);
		}
		if (i % 2 == 0) {
			weft_yield();
		} else {
			atomic_store(&b->request, 1);
			while (atomic_load(&b->request))
				weft_park();
		}
	}
	atomic_store(&b->finished, 1);
	return NULL;
}

static void *wake_bound(void *arg)
{
	struct bound *b = arg;
	while (!atomic_load(&b->finished)) {
		if (atomic_load(&b->request)) {
			atomic_store(&b->request, 0);
			WT_OK(weft_unpark(b->self));
		} else {
			weft_yield();
		}
	}
	return NULL;
}

static atomic_int stop_spinning;

static void *spin_until_stopped(void *arg)
{
	while (!atomic_load(&stop_spinning)) {
		for (volatile int i = 0; i < 10000; i++)
			;
		weft_yield();
	}
	return NULL;
}

/* WEFT_MIGRATE=0 (config migrate -1): every ULT stays on the worker that
 * first ran it, across yields and parks, while both workers are busy and
 * stealing would otherwise move them. */
struct stay {
	atomic_int moved;
	atomic_int first_seen[2];
};

static void *stay_where_started(void *arg)
{
	struct stay *s = arg;
	int first = weft_worker_id();
	atomic_fetch_add(&s->first_seen[first], 1);
	for (int i = 0; i < 2000; i++) {
		if (i % 100 == 50)
			weft_sleep_ns(10000); /* park and be woken by a timer */
		else
			weft_yield();
		if (weft_worker_id() != first)
			atomic_fetch_add(&s->moved, 1);
	}
	return NULL;
}

static void test_no_migration_keeps_first_worker(void **state)
{
	enum { N = 64 };
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	c.workers = 2;
	c.migrate = -1;
	WT_OK(weft_init(&c));
	struct stay s = {0};
	weft_t t[N];
	for (int i = 0; i < N; i++)
		t[i] = wt_spawn(NULL, stay_where_started, &s);
	for (int i = 0; i < N; i++)
		wt_join(t[i]);
	WT_EQ(atomic_load(&s.moved), 0);
	WT_EQ(atomic_load(&s.first_seen[0]) + atomic_load(&s.first_seen[1]), N);
	WT_OK(weft_shutdown());
}

/* WEFT_MIGRATE=0 binds a ULT to its first worker also when that first run
 * begins as another ULT exits (an exit switches straight to the next ready
 * ULT, without switch_to). Each round, a detached ULT on worker 1 creates a
 * child and returns at once, so the child, queued on worker 1, is what the
 * exit runs next. The child then sleeps and yields; meanwhile a ULT bound to
 * worker 1 keeps yielding there (the child's yields really switch away) and
 * main blocks in weft_join, leaving worker 0 idle to take any unbound ULT
 * and fire timers: an unbound child runs on worker 0 at most of its checks. */
enum { EXIT_ROUNDS = 4, EXIT_ITERS = 2000 };
struct first_run_by_exit {
	atomic_int started;
	atomic_int done;
	weft_t child;
	int moved;
};

static void *sleep_and_yield_counting_moves(void *arg)
{
	struct first_run_by_exit *s = arg;
	int first = weft_worker_id();
	s->child = weft_self();
	atomic_store(&s->started, 1);
	for (int i = 0; i < EXIT_ITERS; i++) {
		if (i % 2)
			weft_sleep_ns(5000); /* park and be woken by a timer */
		else
			weft_yield();
		if (weft_worker_id() != first)
			s->moved++;
	}
	atomic_store(&s->done, 1);
	return NULL;
}

static void *create_child_and_return(void *arg)
{
	wt_spawn(NULL, sleep_and_yield_counting_moves, arg);
	return NULL;
}

/* Busy between yields: an unbound child that yields is queued where worker 0
 * can take it, and this gives worker 0 time to, before this ULT's next yield
 * takes the child back. */
static void *spin_until_child_done(void *arg)
{
	struct first_run_by_exit *s = arg;
	while (!atomic_load(&s->done)) {
		for (volatile int i = 0; i < 3000; i++)
			;
		weft_yield();
	}
	return NULL;
}

static void test_no_migration_binds_ult_first_run_by_an_exit(void **state)
{
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	c.workers = 2;
	c.migrate = -1;
	WT_OK(weft_init(&c));
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	WT_OK(weft_attr_setworker(&a, 1));
	WT_OK(weft_attr_setdetached(&a, 1));
	int moved = 0;
	for (int r = 0; r < EXIT_ROUNDS; r++) {
		struct first_run_by_exit s = {0};
		wt_spawn(&a, create_child_and_return, &s);
		/* Spin without yielding until the child runs: a yield of main's
		 * could take the child from the central queue (share) first. */
		uint64_t deadline = wt_now_ns() + 10000000000ull;
		while (!atomic_load(&s.started))
			if (wt_now_ns() > deadline)
				fail_msg("round %d: the child did not start within 10 s", r);
		weft_t load = wt_spawn_on(1, spin_until_child_done, &s);
		wt_join(s.child);
		wt_join(load);
		moved += s.moved;
	}
	WT_OK(weft_attr_destroy(&a));
	WT_EQ(moved, 0); /* checks, of EXIT_ROUNDS * EXIT_ITERS, off the first worker */
	wt_fini();
}

static void test_bound_ult_stays_on_its_worker(void **state)
{
	enum { W = 3 };
	wt_init(W);
	struct bound b[W];
	weft_t helpers[W], spinners[W];
	for (int k = 0; k < W; k++) {
		b[k] = (struct bound){.k = k, .last_seen = k};
		b[k].self = wt_spawn_on(k, stay_bound, &b[k]);
	}
	for (int k = 0; k < W; k++) {
		helpers[k] = wt_spawn(NULL, wake_bound, &b[k]);
		spinners[k] = wt_spawn(NULL, spin_until_stopped, NULL);
	}
	/* Helpers first: a helper's last unpark must find its ULT not yet joined. */
	for (int k = 0; k < W; k++) {
		wt_join(helpers[k]);
		wt_join(b[k].self);
	}
	atomic_store(&stop_spinning, 1);
	for (int k = 0; k < W; k++)
		wt_join(spinners[k]);
	for (int k = 0; k < W; k++)
		if (atomic_load(&b[k].mismatches))
			fail_msg("ULT bound to worker %d ran on worker %d (%d of 3000 checks)", k,
				 atomic_load(&b[k].last_seen), atomic_load(&b[k].mismatches));
	WT_OK(weft_shutdown());
}

static void test_create_on_out_of_range_worker_einval(void **state)
{
	wt_init(2);
	weft_attr_t a;
	weft_t t = WEFT_NULL;
	WT_OK(weft_attr_init(&a));
	WT_OK(weft_attr_setworker(&a, weft_num_workers()));
	WT_ERR(weft_create(&t, &a, return_arg, NULL), EINVAL);
	WT_OK(weft_attr_setworker(&a, 1000));
	WT_ERR(weft_create(&t, &a, return_arg, NULL), EINVAL);
	WT_OK(weft_attr_setworker(&a, weft_num_workers() - 1));
	t = wt_spawn(&a, return_arg, (void *)2);
	WT_EQ_PTR(wt_join(t), (void *)2);
	WT_OK(weft_attr_destroy(&a));
	WT_OK(weft_shutdown());
}

/* CPU-bound ULTs that never yield: each marks its worker and spins until
 * every worker has been marked (or a generous deadline passes). */
struct spread {
	atomic_uint seen;
	unsigned all;
	uint64_t deadline;
};

static void *mark_and_spin(void *arg)
{
	struct spread *s = arg;
	atomic_fetch_or(&s->seen, 1u << weft_worker_id());
	while (atomic_load(&s->seen) != s->all && wt_now_ns() < s->deadline)
		for (volatile int i = 0; i < 1000; i++)
			;
	return NULL;
}

static void test_cpu_bound_work_spreads_to_all_workers(void **state)
{
	enum { W = 3, N = 12 };
	wt_init(W);
	struct spread s = {.all = (1u << W) - 1, .deadline = wt_now_ns() + 20000000000ull};
	weft_t t[N];
	for (int i = 0; i < N; i++)
		t[i] = wt_spawn(NULL, mark_and_spin, &s);
	for (int i = 0; i < N; i++)
		wt_join(t[i]);
	WT_EQU(atomic_load(&s.seen), s.all);
	WT_OK(weft_shutdown());
}

/* The same with the ULTs made by a ULT that is not main, four on two
 * workers, as a task farm starts its tasks - each round after every worker
 * fell asleep (main sleeps 20 ms first), so the work must wake one. */
struct spread_driver {
	struct spread *s;
	int n;
};

static void *spawn_spinners(void *arg)
{
	struct spread_driver *d = arg;
	weft_t t[8];
	for (int i = 0; i < d->n; i++)
		t[i] = wt_spawn(NULL, mark_and_spin, d->s);
	for (int i = 0; i < d->n; i++)
		wt_join(t[i]);
	return NULL;
}

static void test_cpu_bound_work_made_by_a_ult_spreads(void **state)
{
	enum { W = 2 };
	wt_init(W);
	for (int round = 0; round < 10; round++) {
		WT_OK(weft_sleep_ns(20000000));
		struct spread s = {.all = (1u << W) - 1, .deadline = wt_now_ns() + 10000000000ull};
		struct spread_driver d = {.s = &s, .n = 4};
		wt_join(wt_spawn(NULL, spawn_spinners, &d));
		WT_EQU(atomic_load(&s.seen), s.all);
	}
	WT_OK(weft_shutdown());
}

static void *set_flag(void *arg)
{
	atomic_store((atomic_int *)arg, 1);
	return NULL;
}

/* A lone new ULT reaches an idle worker: a ULT makes one child and then
 * computes without a scheduling point (preemption off) until the child
 * has run. The child waits as its worker's next ULT (steal.c, "next"),
 * which an idle worker takes only once it has seen it there on a few
 * scans: it must, or the child never runs. */
static void *make_one_and_compute(void *arg)
{
	atomic_int *ran = arg;
	weft_t t = wt_spawn(NULL, set_flag, ran);
	uint64_t deadline = wt_now_ns() + 10000000000ull;
	while (!atomic_load(ran) && wt_now_ns() < deadline)
		for (volatile int i = 0; i < 1000; i++)
			;
	int ok = atomic_load(ran);
	wt_join(t);
	return (void *)(intptr_t)ok;
}

static void test_lone_new_ult_reaches_an_idle_worker(void **state)
{
	if (wt_usable_cpus() < 2)
		wt_skip("needs two CPUs for two workers to run at once");
	setenv("WEFT_PREEMPT_NS", "0", 1); /* never: only a thief can run the child */
	wt_init(2);
	for (int round = 0; round < 20; round++) {
		atomic_int ran = 0;
		if (!wt_join(wt_spawn(NULL, make_one_and_compute, &ran)))
			fail_msg("round %d: the child of a computing ULT did not run on the idle "
				 "worker in 10 s",
				 round);
	}
	WT_OK(weft_shutdown());
}

static void test_main_yield_runs_others_on_one_worker(void **state)
{
	wt_init(1);
	atomic_int flag = 0;
	weft_t t = wt_spawn(NULL, set_flag, &flag);
	WT_WAIT(atomic_load(&flag), 10); /* only runs if main's yield lets it */
	wt_join(t);
	WT_OK(weft_shutdown());
}

static void *yield_then_return(void *arg)
{
	for (int i = 0; i < 100; i++)
		weft_yield();
	return arg;
}

static void test_main_join_blocks_on_one_worker(void **state)
{
	/* A join by main must not busy-wait its (only) worker. */
	wt_init(1);
	for (intptr_t i = 1; i <= 50; i++) {
		weft_t t = wt_spawn(NULL, yield_then_return, (void *)i);
		WT_EQ_PTR(wt_join(t), (void *)i);
	}
	WT_OK(weft_shutdown());
}

struct waker {
	weft_t main;
	atomic_int flag;
};

static void *wake_main(void *arg)
{
	struct waker *w = arg;
	for (int i = 0; i < 3; i++)
		weft_yield();
	atomic_store(&w->flag, 1);
	WT_OK(weft_unpark(w->main));
	return NULL;
}

static void test_main_migrates_and_shuts_down_on_its_thread(void **state)
{
	/* Main parks and is woken from worker 1, many times, and creates ULTs
	 * wherever it runs. Whether it migrates is the scheduler's choice;
	 * afterwards shutdown returns it to the kernel thread that called
	 * weft_init. */
	pid_t tid0 = gettid();
	pthread_t self0 = pthread_self();
	wt_init(2);
	int migrated = 0;
	for (int i = 0; i < 500; i++) {
		struct waker w = {.main = weft_self()};
		weft_t t = wt_spawn_on(1, wake_main, &w);
		while (!atomic_load(&w.flag))
			WT_OK(weft_park());
		int wid = weft_worker_id();
		WT_TRUE(wid == 0 || wid == 1, "worker id %d", wid);
		if (wid != 0) {
			migrated++;
			WT_CMP(gettid(), !=, tid0);
		}
		weft_t u = wt_spawn(NULL, return_arg, (void *)(intptr_t)i);
		WT_EQ_PTR(wt_join(u), (void *)(intptr_t)i);
		wt_join(t);
	}
	WT_OK(weft_shutdown());
	WT_EQ(gettid(), tid0);
	WT_TRUE(pthread_equal(pthread_self(), self0), "pthread_self changed across init/shutdown");
	WT_EQ(weft_worker_id(), -1);
	printf("main ran on another worker after %d of 500 wake-ups\n", migrated);
}

/* Each worker is one kernel thread: weft_worker_id() and gettid() agree. */
static atomic_int tid_of[8];
static atomic_int tid_mismatches;

static void *check_worker_tid(void *arg)
{
	for (int i = 0; i < 200; i++) {
		int w = weft_worker_id();
		int tid = (int)gettid();
		int expected = 0;
		if (!atomic_compare_exchange_strong(&tid_of[w], &expected, tid) && expected != tid)
			atomic_fetch_add(&tid_mismatches, 1);
		weft_yield();
	}
	return NULL;
}

static void test_worker_id_matches_kernel_thread(void **state)
{
	enum { W = 3, N = 30 };
	wt_init(W);
	weft_t t[N];
	for (int i = 0; i < N; i++)
		t[i] = wt_spawn(NULL, check_worker_tid, NULL);
	for (int i = 0; i < N; i++)
		wt_join(t[i]);
	WT_EQ(atomic_load(&tid_mismatches), 0);
	for (int a = 0; a < W; a++)
		for (int b = a + 1; b < W; b++)
			if (atomic_load(&tid_of[a]) && atomic_load(&tid_of[b]))
				WT_CMP(atomic_load(&tid_of[a]), !=, atomic_load(&tid_of[b]));
	WT_OK(weft_shutdown());
}

static uint64_t cpu_time_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

static void test_idle_workers_sleep(void **state)
{
	/* After the work is done, idle workers must block rather than spin:
	 * over a second in which main sleeps in the kernel (blocking its own
	 * worker, which is fine here), the process uses well under 20% of one
	 * core. A generous bound on a behaviour, not a speed assertion. */
	wt_init(4);
	weft_t t[100];
	for (int i = 0; i < 100; i++)
		t[i] = wt_spawn(NULL, yield_then_return, NULL);
	for (int i = 0; i < 100; i++)
		wt_join(t[i]);
	sleep_ms(200); /* let any idle spinning budget run out */
	uint64_t c0 = cpu_time_ns(), w0 = wt_now_ns();
	sleep_ms(1000);
	uint64_t c1 = cpu_time_ns(), w1 = wt_now_ns();
	double share = (double)(c1 - c0) / (double)(w1 - w0);
	if (share >= 0.2)
		fail_msg("idle process used %.1f%% of a core over %.2f s (limit 20%%)", share * 100,
			 (double)(w1 - w0) / 1e9);
	WT_OK(weft_shutdown());
}

static atomic_long yields_done;

static void *count_yields(void *arg)
{
	for (int i = 0; i < 1000; i++) {
		weft_yield();
		atomic_fetch_add(&yields_done, 1);
	}
	return NULL;
}

static void test_many_yielding_ults_all_finish(void **state)
{
	enum { N = 200 };
	wt_init(0);
	weft_t t[N];
	for (int i = 0; i < N; i++)
		t[i] = wt_spawn(NULL, count_yields, NULL);
	for (int i = 0; i < N; i++)
		wt_join(t[i]);
	WT_EQ(atomic_load(&yields_done), N * 1000);
	WT_OK(weft_shutdown());
}

/* Yielders reach an idle worker: two unbound ULTs yield to each other on
 * worker 0 while worker 1 is kept busy by a ULT bound there; once worker 1
 * is free, it must take one of them from where worker 0 queues its yielders
 * (steal: worker 0's yield FIFO), and the two then run at the same time. */
struct yield_pair {
	atomic_int running, overlap, yields, busy_stop, busy_started;
};

static void *yield_until_overlap(void *arg)
{
	struct yield_pair *p = arg;
	uint64_t deadline = wt_now_ns() + 10000000000ull;
	while (!atomic_load(&p->overlap) && wt_now_ns() < deadline) {
		atomic_fetch_add(&p->running, 1);
		for (int i = 0; i < 2000 && !atomic_load(&p->overlap); i++)
			if (atomic_load(&p->running) == 2)
				atomic_store(&p->overlap, 1);
		atomic_fetch_sub(&p->running, 1);
		atomic_fetch_add(&p->yields, 1);
		weft_yield();
	}
	return NULL;
}

static void *busy_until_told(void *arg)
{
	struct yield_pair *p = arg;
	atomic_store(&p->busy_started, 1);
	while (!atomic_load(&p->busy_stop))
		;
	return NULL;
}

static void test_yielders_reach_an_idle_worker(void **state)
{
	if (wt_usable_cpus() < 2)
		wt_skip("needs two CPUs for two workers to run at once");
	wt_init(2);
	struct yield_pair p = {0};
	weft_t busy = wt_spawn_on(1, busy_until_told, &p);
	WT_WAIT(atomic_load(&p.busy_started), 10);
	weft_t a = wt_spawn(NULL, yield_until_overlap, &p);
	weft_t b = wt_spawn(NULL, yield_until_overlap, &p);
	WT_WAIT(atomic_load(&p.yields) >= 20, 10); /* both yielding, on worker 0 */
	WT_EQ(atomic_load(&p.overlap), 0);
	atomic_store(&p.busy_stop, 1);
	wt_join(busy);
	wt_join(a);
	wt_join(b);
	if (!atomic_load(&p.overlap))
		fail_msg("two yielding ULTs never ran at once on two workers in 10 s (%d yields)",
			 atomic_load(&p.yields));
	WT_OK(weft_shutdown());
}

/* Thieves and the owner on one yield FIFO: rounds of eight unbound ULTs
 * that yield 500, 1000, ... 4000 times on two workers. A worker whose
 * ULTs are done takes one from the other worker's yield FIFO (its
 * owner-biased lock's rare side, steal.c) while that worker puts and takes
 * on it (the owner's side, without a locked instruction); a ULT that shows
 * up on another worker right after a yield was taken so. Rounds go on
 * until YS_TAKEN takes (or 10 s). A FIFO the two sides corrupt loses a
 * ULT (its join times out) or hands one out twice (the scheduler aborts on
 * the double move); the yield counts catch anything else. */
enum { YS_ULTS = 8, YS_YIELDS = 500, YS_TAKEN = 500 };
static atomic_long ys_yields, ys_taken;

static void *yield_n(void *arg)
{
	long n = (long)arg, i;
	int w = weft_worker_id();
	for (i = 0; i < n; i++) {
		weft_yield();
		int now = weft_worker_id();
		if (now != w)
			atomic_fetch_add(&ys_taken, 1);
		w = now;
	}
	atomic_fetch_add(&ys_yields, i);
	return (void *)i;
}

static void test_thieves_take_yielders_safely(void **state)
{
	if (wt_usable_cpus() < 2)
		wt_skip("needs two CPUs for two workers to run at once");
	wt_init(2);
	uint64_t deadline = wt_now_ns() + 10000000000ull;
	long rounds = 0;
	while (atomic_load(&ys_taken) < YS_TAKEN && wt_now_ns() < deadline) {
		weft_t t[YS_ULTS];
		for (long i = 0; i < YS_ULTS; i++)
			t[i] = wt_spawn(NULL, yield_n, (void *)(YS_YIELDS * (i + 1)));
		for (long i = 0; i < YS_ULTS; i++) {
			void *r;
			WT_OK(weft_join(t[i], &r));
			WT_EQ((long)r, YS_YIELDS * (i + 1));
		}
		rounds++;
	}
	WT_EQ(atomic_load(&ys_yields), rounds * YS_YIELDS * YS_ULTS * (YS_ULTS + 1) / 2);
	if (!atomic_load(&ys_taken))
		fail_msg("no yielder was taken by the other worker in 10 s: the test did not "
			 "exercise the thieves' side");
	WT_OK(weft_shutdown());
}

/* ULTs queued past a full run queue are not starved by yielders: on one
 * worker, two ULTs that yield until 1000 others have run are made, then
 * the 1000 at once (more than steal's deque holds, so the last ones wait
 * in its overflow FIFO). The two run once the deque is empty and yield to
 * each other from then on; every queued ULT must still get its turn - a
 * worker that always asked its yield FIFO first would run the two
 * forever. */
enum { QUEUED = 1000 };
static atomic_int queued_ran;

static void *count_and_return(void *arg)
{
	atomic_fetch_add(&queued_ran, 1);
	return arg;
}

static void *yield_until_all_ran(void *arg)
{
	(void)arg;
	while (atomic_load(&queued_ran) < QUEUED)
		weft_yield();
	return NULL;
}

static void test_queued_ults_not_starved_by_yielders(void **state)
{
	wt_init(1);
	static weft_t t[QUEUED + 2];
	t[0] = wt_spawn(NULL, yield_until_all_ran, NULL);
	t[1] = wt_spawn(NULL, yield_until_all_ran, NULL);
	for (int i = 2; i < QUEUED + 2; i++)
		t[i] = wt_spawn(NULL, count_and_return, NULL);
	for (int i = 0; i < QUEUED + 2; i++)
		wt_join(t[i]);
	WT_EQ(atomic_load(&queued_ran), QUEUED);
	WT_OK(weft_shutdown());
}

/* ---- errno per ULT ---------------------------------------------------------- */

/* errno through calls the compiler cannot fold: __errno_location is a
 * const function, whose result may be kept across a yield otherwise. */
static __attribute__((noinline)) int get_errno(void)
{
	return errno;
}

static __attribute__((noinline)) void set_errno(int v)
{
	errno = v;
}

#define ERRNO_ULTS 8
static atomic_int errno_bad;

static void *keep_own_errno(void *arg)
{
	int mine = 1000 + (int)(intptr_t)arg;
	WT_EQ(get_errno(), 0); /* a new ULT starts with 0 */
	set_errno(mine);
	for (int i = 0; i < 2000; i++) {
		if (i % 3 == 2)
			WT_OK(weft_sleep_ns(10000)); /* parks, may resume elsewhere */
		else
			weft_yield();
		if (get_errno() != mine)
			atomic_fetch_add(&errno_bad, 1);
		set_errno(mine);
	}
	return NULL;
}

static void run_errno_ults(int workers)
{
	wt_init(workers);
	atomic_store(&errno_bad, 0);
	set_errno(ERANGE);
	weft_t t[ERRNO_ULTS];
	for (int i = 0; i < ERRNO_ULTS; i++)
		t[i] = wt_spawn(NULL, keep_own_errno, (void *)(intptr_t)i);
	for (int i = 0; i < ERRNO_ULTS; i++)
		wt_join(t[i]);
	WT_EQ(get_errno(), ERANGE); /* main's own, kept across its joins */
	WT_EQ(atomic_load(&errno_bad), 0);
	wt_fini();
}

/* Each ULT has its own errno: ULTs that share a worker do not see each
 * other's value. */
static void test_errno_is_per_ult_on_one_worker(void **state)
{
	run_errno_ults(1);
}

/* ... and a ULT that moves to another worker takes its value along. */
static void test_errno_follows_a_migrating_ult(void **state)
{
	if (wt_usable_cpus() < 2)
		wt_skip("needs two CPUs for ULTs to move between workers");
	run_errno_ults(2);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_yield_alternates_two_ults_on_one_worker),
		cmocka_unit_test(test_yield_with_nothing_else_returns),
		cmocka_unit_test(test_bound_ult_stays_on_its_worker),
		cmocka_unit_test(test_no_migration_keeps_first_worker),
		cmocka_unit_test(test_no_migration_binds_ult_first_run_by_an_exit),
		cmocka_unit_test(test_create_on_out_of_range_worker_einval),
		cmocka_unit_test(test_cpu_bound_work_spreads_to_all_workers),
		cmocka_unit_test(test_cpu_bound_work_made_by_a_ult_spreads),
		cmocka_unit_test(test_main_yield_runs_others_on_one_worker),
		cmocka_unit_test(test_main_join_blocks_on_one_worker),
		cmocka_unit_test(test_main_migrates_and_shuts_down_on_its_thread),
		cmocka_unit_test(test_worker_id_matches_kernel_thread),
		cmocka_unit_test(test_idle_workers_sleep),
		cmocka_unit_test(test_many_yielding_ults_all_finish),
		cmocka_unit_test(test_yielders_reach_an_idle_worker),
		cmocka_unit_test(test_thieves_take_yielders_safely),
		cmocka_unit_test(test_lone_new_ult_reaches_an_idle_worker),
		cmocka_unit_test(test_queued_ults_not_starved_by_yielders),
		cmocka_unit_test(test_errno_is_per_ult_on_one_worker),
		cmocka_unit_test(test_errno_follows_a_migrating_ult),
	};
	return WT_RUN(argc, argv, tests);
}
