/* Thread-local storage of ULTs (include/weft.h, enum weft_tls; the design
 * at the top of src/sched/tls.c and "Thread pointers" in src/sched/sched.c):
 * the attribute and configuration API and its errors; with WEFT_TLS_OWN, a
 * ULT's __thread variables, errno, dynamic TLS of a dlopened library and
 * malloc cache are its own wherever it runs; with WEFT_TLS_WORKER, ULTs on
 * one worker share that worker's; with weft_config_t.tls own the root ULT
 * keeps its kernel thread's.
 *
 * Where a ULT cannot have TLS of its own (sanitizer builds, targets other
 * than x86-64) weft_create and weft_init answer ENOTSUP for it: one test
 * checks that, and the tests of own TLS skip themselves there.
 *
 * Each test runs in its own process (harness.h), so tests that change the
 * environment need not restore it. */
#include "harness.h"

#include <ctype.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#ifndef TLS_LIB_PATH
#error "TLS_LIB_PATH (the path of the tls_lib module) is set by tests/core/CMakeLists.txt"
#endif
#define TLS_LIB_INITIAL 7 /* tls_lib.c's initializer */

static void *return_arg(void *arg)
{
	return arg;
}

static void assert_not_running(void)
{
	WT_EQ(wt_running(), 0);
	WT_EQU(weft_self(), WEFT_NULL);
	WT_EQ(weft_worker_id(), -1);
}

/* weft_config_init's values with `workers` workers and tls. */
static weft_config_t config_with(int workers, int tls)
{
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	c.workers = workers;
	c.tls = tls;
	return c;
}

/* weft_create with thread-local storage `tls`, bound to `worker` (-1: any). */
static int create_tls(weft_t *t, int tls, int worker, void *(*fn)(void *), void *arg)
{
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	WT_OK(weft_attr_settls(&a, tls));
	WT_OK(weft_attr_setworker(&a, worker));
	int e = weft_create(t, &a, fn, arg);
	WT_OK(weft_attr_destroy(&a));
	return e;
}

static weft_t spawn_tls(int tls, int worker, void *(*fn)(void *), void *arg)
{
	weft_t t = WEFT_NULL;
	WT_OK(create_tls(&t, tls, worker, fn, arg));
	WT_CMPU(t, !=, WEFT_NULL);
	return t;
}

/* Can a ULT have TLS of its own here? Asks weft_create. The runtime runs. */
static bool own_tls_available(void)
{
	weft_t t;
	int e = create_tls(&t, WEFT_TLS_OWN, -1, return_arg, (void *)1);
	if (e == ENOTSUP)
		return false;
	WT_OK(e);
	WT_EQ_PTR(wt_join(t), (void *)1);
	return true;
}

/* Skip the test (after stopping the runtime) where own TLS is not had. */
static void need_own_tls(void)
{
	if (own_tls_available())
		return;
	WT_OK(weft_shutdown());
	wt_skip("a ULT cannot have thread-local storage of its own here (weft_create with "
		"WEFT_TLS_OWN: ENOTSUP; a sanitizer build or not x86-64; WEFT_VERBOSE=1 says "
		"why)");
}

/* weft_init with tls own, so that the root ULT keeps its kernel thread's
 * TLS and every new ULT has its own; skips the test where that is not had. */
static void init_own(int workers)
{
	weft_config_t c = config_with(workers, WEFT_TLS_OWN);
	int e = weft_init(&c);
	if (e == ENOTSUP)
		wt_skip("thread-local storage of their own is not had here (weft_init with tls "
			"own: ENOTSUP; a sanitizer build or not x86-64)");
	WT_OK(e);
}

/* Movers: a ULT bound to each of workers 0 and 1 that wakes the ULTs which
 * ask to move to its worker. A woken ULT is queued on its waker's worker
 * (sched.c), and the movers keep both workers busy so that neither steals
 * it back: under steal it runs there; under share, from the central queue,
 * on either. Workloads that must migrate ask every PAUSE_EVERY steps. */
enum { MOVE_SLOTS = 32, PAUSE_EVERY = 50, PAUSE_SLEEP_NS = 20000 };

static struct {
	atomic_int stop;
	_Atomic weft_t waiting[2][MOVE_SLOTS]; /* [worker][slot]: who wants to go there */
	weft_t mover[2];
} movers;

static void *mover(void *arg)
{
	int w = (int)(intptr_t)arg;
	while (!atomic_load(&movers.stop)) {
		for (int i = 0; i < MOVE_SLOTS; i++) {
			weft_t t = atomic_exchange(&movers.waiting[w][i], WEFT_NULL);
			if (t == WEFT_NULL)
				continue;
			/* ESRCH: it saw its request taken before it parked, went on
			 * and has ended meanwhile */
			int e = weft_unpark(t);
			if (e != 0 && e != ESRCH)
				WT_OK(e);
		}
		weft_yield();
	}
	return NULL;
}

static void movers_start(void)
{
	memset(&movers, 0, sizeof movers);
	for (int w = 0; w < 2; w++)
		movers.mover[w] = wt_spawn_on(w, mover, (void *)(intptr_t)w);
}

static void movers_stop(void)
{
	atomic_store(&movers.stop, 1);
	for (int w = 0; w < 2; w++)
		wt_join(movers.mover[w]);
}

/* Ask the other worker's mover to wake the caller there, and park till it
 * does. slot: the caller's own, 0 .. MOVE_SLOTS-1. */
static void move_to_other_worker(int slot)
{
	int to = 1 - weft_worker_id();
	atomic_store(&movers.waiting[to][slot], weft_self());
	while (atomic_load(&movers.waiting[to][slot]) != WEFT_NULL)
		WT_OK(weft_park());
}

/* A pause in a workload: a yield; or at every PAUSE_EVERY-th step a brief
 * sleep (a park ended by a timer) and, halfway between, a move to the
 * other worker (slot < 0: no movers running; a sleep instead). */
static void pause_point(long step, int slot)
{
	if (step % PAUSE_EVERY == PAUSE_EVERY - 1)
		WT_OK(weft_sleep_ns(PAUSE_SLEEP_NS));
	else if (step % PAUSE_EVERY == PAUSE_EVERY / 2 - 1 && slot >= 0)
		move_to_other_worker(slot);
	else
		WT_OK(weft_yield());
}

/* Follows the workers a ULT runs on. */
struct moves {
	int last;
	int n; /* times it was found on another worker than the step before */
};

static void note_worker(struct moves *m)
{
	int w = weft_worker_id();
	if (m->last >= 0 && w != m->last)
		m->n++;
	m->last = w;
}

/* The workloads that ask to move must have moved. */
static void expect_migrations(const char *what, long moves)
{
	printf("[          ] %s: %ld moves between workers\n", what, moves);
	if (moves == 0)
		fail_msg("%s: no ULT ever ran on two workers, so migration was not tested", what);
}

/* ---- the attribute and the configuration --------------------------------- */

static void test_attr_tls_round_trip_and_errors(void **state)
{
	weft_attr_t a;
	int tls = -7;
	WT_OK(weft_attr_init(&a));
	WT_OK(weft_attr_gettls(&a, &tls));
	WT_EQ(tls, WEFT_TLS_DEFAULT);
	const int good[] = {WEFT_TLS_OWN, WEFT_TLS_WORKER, WEFT_TLS_DEFAULT};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		WT_OK(weft_attr_settls(&a, good[i]));
		WT_OK(weft_attr_gettls(&a, &tls));
		WT_EQ(tls, good[i]);
	}
	WT_OK(weft_attr_settls(&a, WEFT_TLS_OWN));
	WT_ERR(weft_attr_settls(&a, -1), EINVAL);
	WT_ERR(weft_attr_settls(&a, 3), EINVAL);
	WT_OK(weft_attr_gettls(&a, &tls));
	WT_EQ(tls, WEFT_TLS_OWN); /* a refused value changes nothing */
	WT_ERR(weft_attr_settls(NULL, WEFT_TLS_OWN), EINVAL);
	WT_ERR(weft_attr_gettls(NULL, &tls), EINVAL);
	WT_ERR(weft_attr_gettls(&a, NULL), EINVAL);
	WT_OK(weft_attr_destroy(&a));
	/* A destroyed or zero-filled attribute is not one. */
	WT_ERR(weft_attr_settls(&a, WEFT_TLS_OWN), EINVAL);
	WT_ERR(weft_attr_gettls(&a, &tls), EINVAL);
	weft_attr_t zero;
	memset(&zero, 0, sizeof zero);
	WT_ERR(weft_attr_settls(&zero, WEFT_TLS_WORKER), EINVAL);
}

/* weft_config_t.tls out of range: weft_init fails with EINVAL and starts
 * nothing; a good config then works. */
static void test_bad_config_tls_einval(void **state)
{
	unsetenv("WEFT_TLS");
	const int bad[] = {-1, 3, 1000};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		weft_config_t c = config_with(2, bad[i]);
		WT_ERR(weft_init(&c), EINVAL);
		assert_not_running();
	}
	wt_init(2);
	weft_t t = wt_spawn(NULL, return_arg, (void *)1);
	WT_EQ_PTR(wt_join(t), (void *)1);
	WT_OK(weft_shutdown());
}

/* WEFT_TLS is read by weft_config_init: own, worker, unset or empty (the
 * default); anything else is EINVAL there and in weft_init(NULL), which then
 * starts nothing. A config that names its tls does not read it. */
static void test_env_tls(void **state)
{
	weft_config_t c;
	unsetenv("WEFT_TLS");
	WT_OK(weft_config_init(&c));
	WT_EQ(c.tls, WEFT_TLS_DEFAULT);
	setenv("WEFT_TLS", "", 1);
	WT_OK(weft_config_init(&c));
	WT_EQ(c.tls, WEFT_TLS_DEFAULT);
	setenv("WEFT_TLS", "own", 1);
	WT_OK(weft_config_init(&c));
	WT_EQ(c.tls, WEFT_TLS_OWN);
	setenv("WEFT_TLS", "worker", 1);
	WT_OK(weft_config_init(&c));
	WT_EQ(c.tls, WEFT_TLS_WORKER);

	const char *bad[] = {"bogus", "OWN", "1", "own "};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		setenv("WEFT_TLS", bad[i], 1);
		int r = weft_config_init(&c);
		if (r != EINVAL)
			fail_msg("weft_config_init with WEFT_TLS=\"%s\" returned %s, expected "
				 "EINVAL",
				 bad[i], wt_errname(r));
		r = weft_init(NULL);
		if (r != EINVAL)
			fail_msg(
				"weft_init(NULL) with WEFT_TLS=\"%s\" returned %s, expected EINVAL",
				bad[i], wt_errname(r));
		assert_not_running();
	}
	/* still "bogus": a config with its own value starts */
	memset(&c, 0, sizeof c);
	c.workers = 2;
	c.tls = WEFT_TLS_WORKER;
	WT_OK(weft_init(&c));
	WT_OK(weft_shutdown());
	unsetenv("WEFT_TLS");
	wt_init(2);
	WT_OK(weft_shutdown());
}

/* Where own TLS is not had (sanitizer builds, not x86-64): weft_create with
 * WEFT_TLS_OWN is ENOTSUP and makes nothing, the other choices still work;
 * weft_init with tls own (config or WEFT_TLS=own) is ENOTSUP and leaves the
 * runtime stopped, and a plain weft_init afterwards works. */
static void test_own_tls_unavailable_is_enotsup(void **state)
{
	unsetenv("WEFT_TLS");
	wt_init(2);
	if (own_tls_available()) {
		WT_OK(weft_shutdown());
		wt_skip("own thread-local storage is available in this build; this checks "
			"the builds without it (make test-asan, make test-tsan)");
	}
	weft_t t = (weft_t)12345;
	WT_ERR(create_tls(&t, WEFT_TLS_OWN, -1, return_arg, (void *)1), ENOTSUP);
	WT_EQU(t, 12345); /* untouched */
	WT_ERR(create_tls(&t, WEFT_TLS_OWN, 1, return_arg, (void *)1), ENOTSUP);
	t = spawn_tls(WEFT_TLS_WORKER, -1, return_arg, (void *)2);
	WT_EQ_PTR(wt_join(t), (void *)2);
	t = spawn_tls(WEFT_TLS_DEFAULT, 1, return_arg, (void *)3);
	WT_EQ_PTR(wt_join(t), (void *)3);
	WT_OK(weft_shutdown());

	weft_config_t c = config_with(2, WEFT_TLS_OWN);
	WT_ERR(weft_init(&c), ENOTSUP);
	assert_not_running();
	setenv("WEFT_TLS", "own", 1);
	WT_ERR(weft_init(NULL), ENOTSUP);
	assert_not_running();
	unsetenv("WEFT_TLS");

	wt_init(2);
	t = wt_spawn(NULL, return_arg, (void *)4);
	WT_EQ_PTR(wt_join(t), (void *)4);
	WT_OK(weft_shutdown());
}

/* ---- own TLS: __thread variables -------------------------------------------- */

/* Two ULTs bound to one worker tell shared TLS from own: A writes 111 and
 * lets B run; B reads, writes 222; A reads again. */
static __thread long pair_var;

struct pair {
	atomic_int step;
	long a_saw, b_saw;
};

static void *pair_a(void *arg)
{
	struct pair *p = arg;
	pair_var = 111;
	atomic_store(&p->step, 1);
	WT_WAIT(atomic_load(&p->step) == 2, 10);
	p->a_saw = pair_var;
	return NULL;
}

static void *pair_b(void *arg)
{
	struct pair *p = arg;
	WT_WAIT(atomic_load(&p->step) == 1, 10);
	p->b_saw = pair_var;
	pair_var = 222;
	atomic_store(&p->step, 2);
	return NULL;
}

/* Runs the pair with `tls` on worker 1; true if they shared pair_var. */
static bool pair_shares(int tls)
{
	struct pair p = {0};
	weft_t a = spawn_tls(tls, 1, pair_a, &p);
	weft_t b = spawn_tls(tls, 1, pair_b, &p);
	wt_join(a);
	wt_join(b);
	if (p.b_saw == 111 && p.a_saw == 222)
		return true;
	if (p.b_saw == 0 && p.a_saw == 111)
		return false;
	fail_msg("A (tls %d) saw %ld after B wrote, B saw %ld after A wrote: neither shared "
		 "nor separate",
		 tls, p.a_saw, p.b_saw);
	return false;
}

/* WEFT_TLS_WORKER: two ULTs on one worker see each other's writes to a
 * __thread variable - it is the worker's. (Documents the sharing.) */
static void test_worker_tls_is_shared_on_one_worker(void **state)
{
	wt_init(2);
	WT_TRUE(pair_shares(WEFT_TLS_WORKER), "WORKER ULTs on one worker share pair_var");
	/* the default, with the default config, is the same */
	WT_TRUE(pair_shares(WEFT_TLS_DEFAULT), "DEFAULT ULTs on one worker share pair_var");
	WT_OK(weft_shutdown());
}

/* WEFT_TLS_OWN: the same two ULTs each have their own copy. */
static void test_own_tls_is_not_shared_on_one_worker(void **state)
{
	wt_init(2);
	need_own_tls();
	WT_TRUE(!pair_shares(WEFT_TLS_OWN), "OWN ULTs on one worker have their own pair_var");
	WT_OK(weft_shutdown());
}

/* With weft_config_t.tls own (or WEFT_TLS=own) a ULT made with default
 * attributes has TLS of its own; WEFT_TLS_WORKER in its attributes still
 * shares the worker's. WEFT_TLS=worker makes the default shared again. */
static void test_config_tls_own_is_the_default(void **state)
{
	unsetenv("WEFT_TLS");
	wt_init(2);
	need_own_tls();
	WT_OK(weft_shutdown());

	weft_config_t c = config_with(2, WEFT_TLS_OWN);
	WT_OK(weft_init(&c));
	WT_TRUE(!pair_shares(WEFT_TLS_DEFAULT), "with config tls own, DEFAULT ULTs have their own");
	WT_TRUE(pair_shares(WEFT_TLS_WORKER), "with config tls own, WORKER ULTs still share");
	weft_t t = wt_spawn(NULL, return_arg, (void *)5); /* NULL attributes too */
	WT_EQ_PTR(wt_join(t), (void *)5);
	WT_OK(weft_shutdown());

	setenv("WEFT_TLS", "own", 1);
	WT_OK(weft_init(NULL));
	WT_TRUE(!pair_shares(WEFT_TLS_DEFAULT), "with WEFT_TLS=own, DEFAULT ULTs have their own");
	WT_OK(weft_shutdown());
	setenv("WEFT_TLS", "worker", 1);
	WT_OK(weft_init(NULL));
	WT_TRUE(pair_shares(WEFT_TLS_DEFAULT), "with WEFT_TLS=worker, DEFAULT ULTs share");
	WT_OK(weft_shutdown());
}

/* 8 ULTs with own TLS on 2 workers count in a __thread variable, yielding
 * or sleeping after every step and checking the count after each; they move
 * between workers meanwhile (asking the movers to, among other pauses). A
 * ULT sharing its worker's counter with others would see their steps. */
enum { CNT_ULTS = 8, CNT_STEPS = 5000 };
static __thread long own_counter;

struct counter_result {
	int slot;
	long wrong;       /* reads that were not the ULT's own count */
	long first_wrong; /* the step of the first, and what it read */
	long first_read;
	int moves;
};

static void *count_in_own_tls(void *arg)
{
	struct counter_result *r = arg;
	struct moves m = {.last = -1};
	r->first_wrong = -1;
	if (own_counter != 0)
		fail_msg("a new ULT's own_counter is %ld, not 0", own_counter);
	for (long i = 0; i < CNT_STEPS; i++) {
		own_counter++;
		pause_point(i, r->slot);
		note_worker(&m);
		if (own_counter != i + 1) {
			if (r->wrong++ == 0) {
				r->first_wrong = i;
				r->first_read = own_counter;
			}
			own_counter = i + 1;
		}
	}
	r->moves = m.n;
	return (void *)(intptr_t)own_counter;
}

static void test_own_counters_survive_migration(void **state)
{
	wt_init(2);
	need_own_tls();
	movers_start();
	static struct counter_result r[CNT_ULTS];
	weft_t t[CNT_ULTS];
	for (int i = 0; i < CNT_ULTS; i++) {
		r[i].slot = i;
		t[i] = spawn_tls(WEFT_TLS_OWN, -1, count_in_own_tls, &r[i]);
	}
	long moves = 0;
	for (int i = 0; i < CNT_ULTS; i++)
		WT_EQ_PTR(wt_join(t[i]), (void *)(intptr_t)CNT_STEPS);
	movers_stop();
	for (int i = 0; i < CNT_ULTS; i++) {
		if (r[i].wrong)
			fail_msg("ULT %d read someone else's own_counter %ld times; first at step "
				 "%ld: %ld instead of %ld",
				 i, r[i].wrong, r[i].first_wrong, r[i].first_read,
				 r[i].first_wrong + 1);
		moves += r[i].moves;
	}
	expect_migrations("own counters", moves);
	WT_OK(weft_shutdown());
}

/* A __thread variable with an initializer (.tdata) reads its initial value
 * in a new ULT with own TLS, and one without (.tbss) reads 0, even after
 * the creator changed its own copies, and in a block another ULT used and
 * dirtied before (blocks are reused). A ULT with own TLS that creates one
 * passes on nothing either. */
#define INIT_INT 12345
#define INIT_STR "weft-tls"
static __thread int init_int = INIT_INT;
static __thread char init_str[16] = INIT_STR;
static __thread long zero_long;

static void check_initial_values(const char *who)
{
	if (init_int != INIT_INT || strcmp(init_str, INIT_STR) != 0 || zero_long != 0)
		fail_msg("%s: init_int %d (want %d), init_str \"%.15s\" (want \"%s\"), zero_long "
			 "%ld "
			 "(want 0)",
			 who, init_int, INIT_INT, init_str, INIT_STR, zero_long);
}

static void dirty_values(int v)
{
	init_int = v;
	snprintf(init_str, sizeof init_str, "dirty-%d", v);
	zero_long = v;
}

__attribute__((noinline, noipa)) static int *init_int_address(void)
{
	return &init_int;
}

static void *check_initial_then_dirty(void *arg)
{
	check_initial_values("a new ULT with own TLS");
	dirty_values((int)(intptr_t)arg);
	weft_yield();
	WT_EQ(init_int, (int)(intptr_t)arg);
	return init_int_address();
}

static void *create_child_from_dirty(void *arg)
{
	check_initial_values("a new ULT with own TLS");
	dirty_values(-5);
	weft_t c = spawn_tls(WEFT_TLS_OWN, -1, check_initial_then_dirty, (void *)6);
	wt_join(c);
	WT_EQ(init_int, -5); /* its own, not the child's */
	return NULL;
}

static void test_own_tls_starts_from_initial_values(void **state)
{
	init_own(2);      /* the root keeps its own copies, too */
	dirty_values(-1); /* the root's */
	enum { ROUNDS = 200 };
	static int *addr[ROUNDS];
	for (int i = 0; i < ROUNDS; i++) {
		weft_t t = spawn_tls(WEFT_TLS_OWN, -1, check_initial_then_dirty,
				     (void *)(intptr_t)(i + 100));
		addr[i] = wt_join(t);
	}
	int reused = 0;
	for (int i = 1; i < ROUNDS; i++)
		for (int k = 0; k < i && !reused; k++)
			reused = addr[i] == addr[k];
	/* Otherwise the test did not see a reused block (tls.c, "Reuse"). */
	WT_TRUE(reused, "some of %d ULTs made one after another got a used block", ROUNDS);
	weft_t t = spawn_tls(WEFT_TLS_OWN, -1, create_child_from_dirty, NULL);
	wt_join(t);
	WT_EQ(init_int, -1); /* the root's copy, untouched by them */
	WT_EQ(zero_long, -1);
	WT_OK(weft_shutdown());
}

/* ---- own TLS: errno -------------------------------------------------------- */

/* errno is per ULT with own TLS: each of 8 ULTs on 2 workers keeps its own
 * value across yields, sleeps and moves, a failing call sets its own, and
 * errno's address - which compilers may keep across calls, since
 * __errno_location is const - stays the same when the ULT moves. */
enum { ERRNO_ULTS = 8, ERRNO_STEPS = 3000 };

__attribute__((noinline, noipa)) static int *errno_address(void)
{
	return &errno;
}

struct errno_result {
	int slot, mine;
	long wrong_value, wrong_address;
	int moves;
};

static void *keep_own_errno(void *arg)
{
	struct errno_result *r = arg;
	int mine = r->mine;
	int *at = errno_address();
	struct moves m = {.last = -1};
	WT_EQ(*at, 0); /* a new ULT starts with 0 */
	*at = mine;
	for (long i = 0; i < ERRNO_STEPS; i++) {
		pause_point(i, r->slot);
		note_worker(&m);
		if (errno_address() != at)
			r->wrong_address++;
		if (errno != mine)
			r->wrong_value++;
		if (i % 100 == 99) {
			errno = 0;
			WT_EQ(close(-1), -1);
			WT_EQ(errno, EBADF);
		}
		errno = mine;
	}
	r->moves = m.n;
	return NULL;
}

static void test_own_errno_survives_migration(void **state)
{
	/* tls own: main's errno is its own too, even where the compiler keeps
	 * its address across the joins (under the default, main may share its
	 * worker's and move) */
	init_own(2);
	movers_start();
	errno = ERANGE;
	static struct errno_result r[ERRNO_ULTS];
	weft_t t[ERRNO_ULTS];
	for (int i = 0; i < ERRNO_ULTS; i++) {
		r[i].slot = i;
		r[i].mine = 2000 + i;
		t[i] = spawn_tls(WEFT_TLS_OWN, -1, keep_own_errno, &r[i]);
	}
	for (int i = 0; i < ERRNO_ULTS; i++)
		wt_join(t[i]);
	movers_stop();
	WT_EQ(errno, ERANGE); /* main's own, kept across its joins */
	long moves = 0;
	for (int i = 0; i < ERRNO_ULTS; i++) {
		if (r[i].wrong_value || r[i].wrong_address)
			fail_msg("ULT %d: errno was not its own %ld times, its address changed %ld "
				 "times",
				 i, r[i].wrong_value, r[i].wrong_address);
		moves += r[i].moves;
	}
	expect_migrations("own errno", moves);
	WT_OK(weft_shutdown());
}

/* ---- the root ULT ------------------------------------------------------------ */

/* The root ULT (main, which called weft_init) keeps its kernel thread's
 * TLS wherever it runs with weft_config_t.tls own (under the default, only
 * when the POSIX layer started the runtime; not tested here): a value set
 * before weft_init is there while it moves between workers (ULTs bound to
 * each worker write their workers' copies meanwhile, and sleep so that it
 * does move), its changes are there after weft_shutdown, and the
 * variable's address never changes. Worker 0's other ULTs run on a block
 * made for worker 0, not main's. */
static __thread long root_var = 5;

__attribute__((noinline, noipa)) static long *root_var_address(void)
{
	return &root_var;
}

struct worker_writer {
	atomic_int stop;
	long first_read; /* its worker's root_var, before it wrote */
};

static void *write_worker_root_var(void *arg)
{
	struct worker_writer *h = arg;
	h->first_read = root_var;
	for (long i = 0; !atomic_load(&h->stop); i++) {
		root_var = -1 - weft_worker_id();
		uint64_t until = wt_now_ns() + 20000;
		while (wt_now_ns() < until)
			;
		if (i % 8 == 7)
			WT_OK(weft_sleep_ns(100000)); /* leave the worker idle to steal */
		else
			weft_yield();
	}
	return NULL;
}

static void test_root_keeps_its_tls(void **state)
{
	root_var = 1000;
	long *before = root_var_address();
	init_own(2);
	struct worker_writer h[2] = {0};
	weft_t t[2];
	for (int i = 0; i < 2; i++)
		t[i] = spawn_tls(WEFT_TLS_WORKER, i, write_worker_root_var, &h[i]);
	long expect = 1000, wrong = 0, wrong_address = 0;
	unsigned seen = 0;
	struct moves m = {.last = -1};
	uint64_t end = wt_now_ns() + 1500000000ull;
	for (long i = 0; i < 20000 && (wt_now_ns() < end || i < 200); i++) {
		if (i % 16 == 15)
			WT_OK(weft_sleep_ns(50000));
		else
			weft_yield();
		note_worker(&m);
		seen |= 1u << weft_worker_id();
		if (root_var_address() != before)
			wrong_address++;
		if (root_var != expect) {
			wrong++;
			expect = root_var;
		}
		expect = ++root_var;
		if (i > 2000 && m.n >= 10)
			break;
	}
	for (int i = 0; i < 2; i++)
		atomic_store(&h[i].stop, 1);
	for (int i = 0; i < 2; i++)
		wt_join(t[i]);
	printf("[          ] the root moved %d times, ran on workers %#x\n", m.n, seen);
	WT_EQ(wrong, 0);
	WT_EQ(wrong_address, 0);
	/* each worker's copy started from the image: worker 0's is not main's */
	WT_EQ(h[0].first_read, 5);
	WT_EQ(h[1].first_read, 5);
	WT_OK(weft_shutdown());
	WT_EQ(root_var, expect); /* on the main thread, as plain kernel thread */
	WT_EQ_PTR(root_var_address(), before);
}

/* ---- own TLS: a dlopened library's __thread variable ------------------- */

/* tls_lib.c's __thread variable lives in dynamic TLS, found through each
 * thread's DTV. 8 ULTs with own TLS - 4 made before the library is loaded,
 * 4 after - each read its initial value, then count in their copy while
 * yielding and moving, fetching the address anew after every pause (within
 * one call a compiler may keep it). Each ULT's copy is its own, and the
 * root's is untouched. */
enum { DL_ULTS = 8, DL_STEPS = 2000 };
typedef int *(*tls_lib_counter_fn)(void);
static _Atomic(tls_lib_counter_fn) lib_counter;

/* dlopen tls_lib; its tls_lib_counter. */
static tls_lib_counter_fn load_tls_lib(void **lib)
{
	*lib = dlopen(TLS_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
	if (!*lib)
		fail_msg("dlopen(%s): %s", TLS_LIB_PATH, dlerror());
	tls_lib_counter_fn f = (tls_lib_counter_fn)dlsym(*lib, "tls_lib_counter");
	if (!f)
		fail_msg("dlsym(tls_lib_counter): %s", dlerror());
	return f;
}

struct dl_result {
	int slot, base;
	long wrong;
	int *addr;
	int moves;
};

static void *count_in_lib_tls(void *arg)
{
	struct dl_result *r = arg;
	tls_lib_counter_fn f;
	WT_WAIT((f = atomic_load(&lib_counter)) != NULL, 10);
	int *p = f();
	WT_EQ(*p, TLS_LIB_INITIAL);
	*p = r->base;
	r->addr = p;
	struct moves m = {.last = -1};
	for (long i = 0; i < DL_STEPS; i++) {
		pause_point(i, r->slot);
		note_worker(&m);
		p = f();
		if (*p != r->base + i)
			r->wrong++;
		*p = r->base + (int)i + 1;
	}
	r->moves = m.n;
	return NULL;
}

static void test_dlopen_tls_is_per_ult(void **state)
{
	wt_init(2);
	need_own_tls();
	static struct dl_result r[DL_ULTS];
	weft_t t[DL_ULTS];
	movers_start();
	for (int i = 0; i < DL_ULTS; i++) {
		r[i].slot = i;
		r[i].base = (i + 1) * 100000;
	}
	for (int i = 0; i < DL_ULTS / 2; i++)
		t[i] = spawn_tls(WEFT_TLS_OWN, -1, count_in_lib_tls, &r[i]);
	void *lib;
	tls_lib_counter_fn f = load_tls_lib(&lib);
	atomic_store(&lib_counter, f);
	for (int i = DL_ULTS / 2; i < DL_ULTS; i++)
		t[i] = spawn_tls(WEFT_TLS_OWN, -1, count_in_lib_tls, &r[i]);
	for (int i = 0; i < DL_ULTS; i++)
		wt_join(t[i]);
	movers_stop();
	long moves = 0;
	for (int i = 0; i < DL_ULTS; i++) {
		if (r[i].wrong)
			fail_msg(
				"ULT %d read a copy of tls_lib's variable that was not its own %ld "
				"times",
				i, r[i].wrong);
		for (int k = 0; k < i; k++)
			if (r[k].addr == r[i].addr)
				fail_msg("ULTs %d and %d had tls_lib's variable at one address %p",
					 k, i, (void *)r[i].addr);
		moves += r[i].moves;
	}
	expect_migrations("dlopened TLS", moves);
	WT_EQ(*f(), TLS_LIB_INITIAL); /* the root's copy */
	WT_OK(weft_shutdown());
	WT_EQ(*f(), TLS_LIB_INITIAL);
	WT_OK(dlclose(lib));
}

/* A block is reused with its DTV kept (tls.c, "Reuse"): the dynamic TLS a
 * ULT had must not reach the next ULT on its block. 200 ULTs one after
 * another on one worker (so each takes the block the last one released),
 * each finding tls_lib's variable at its initial value and leaving it
 * changed. */
enum { DL_REUSE = 200 };

static void *dirty_lib_tls(void *arg)
{
	tls_lib_counter_fn f = arg;
	int *p = f();
	int seen = *p;
	*p = 12345;
	return (void *)(intptr_t)seen;
}

static void test_dlopen_tls_fresh_in_reused_block(void **state)
{
	wt_init(1);
	need_own_tls();
	void *lib;
	tls_lib_counter_fn f = load_tls_lib(&lib);
	int stale = 0;
	for (int i = 0; i < DL_REUSE; i++) {
		weft_t t = spawn_tls(WEFT_TLS_OWN, 0, dirty_lib_tls, (void *)f);
		if ((intptr_t)wt_join(t) != TLS_LIB_INITIAL)
			stale++;
	}
	WT_EQ(stale, 0);
	WT_EQ(*f(), TLS_LIB_INITIAL); /* the root's copy */
	WT_OK(weft_shutdown());
	WT_OK(dlclose(lib));
}

/* ---- own TLS: malloc ---------------------------------------------------- */

/* 16 ULTs with own TLS on 2 workers allocate and free (malloc's per-thread
 * cache is in TLS), holding blocks across yields and moves and passing half
 * of them through shared slots for another ULT to check and free. Every
 * block's contents must be as its owner wrote them. */
enum { CHURN_ULTS = 16, CHURN_ROUNDS = 3000, CHURN_SLOTS = 64, CHURN_HELD = 8 };
#define CHURN_MAGIC 0x5745465454534c53ull

struct churn_block {
	uint64_t magic;
	size_t size; /* of data */
	int owner;
	unsigned char data[];
};

static _Atomic(struct churn_block *) churn_slots[CHURN_SLOTS];
static atomic_long churn_bad, churn_cross_frees, churn_moves;

static uint32_t next_rand(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static struct churn_block *churn_alloc(int owner, uint32_t *rng)
{
	size_t size = 1 + next_rand(rng) % 2048;
	struct churn_block *b;
	if (next_rand(rng) % 4 == 0) {
		b = calloc(1, sizeof *b + size);
		if (b)
			for (size_t i = 0; i < size; i++)
				if (b->data[i] != 0)
					atomic_fetch_add(&churn_bad, 1);
	} else {
		b = malloc(sizeof *b + size);
	}
	WT_TRUE(b != NULL, "an allocation of %zu bytes", sizeof *b + size);
	b->magic = CHURN_MAGIC;
	b->size = size;
	b->owner = owner;
	memset(b->data, (unsigned char)(owner * 16 + size), size);
	return b;
}

static void churn_check_free(struct churn_block *b)
{
	unsigned char want = (unsigned char)(b->owner * 16 + b->size);
	bool ok = b->magic == CHURN_MAGIC && b->owner >= 0 && b->owner < CHURN_ULTS;
	for (size_t i = 0; ok && i < b->size; i++)
		ok = b->data[i] == want;
	if (!ok)
		atomic_fetch_add(&churn_bad, 1);
	b->magic = 0;
	free(b);
}

static void *churn(void *arg)
{
	int me = (int)(intptr_t)arg;
	uint32_t rng = 0x9e3779b9u * (uint32_t)(me + 1);
	struct churn_block *held[CHURN_HELD] = {0};
	struct moves m = {.last = -1};
	for (long i = 0; i < CHURN_ROUNDS; i++) {
		struct churn_block *b = churn_alloc(me, &rng);
		if (i % 2 == 0) {
			struct churn_block *old =
				atomic_exchange(&churn_slots[next_rand(&rng) % CHURN_SLOTS], b);
			if (old) {
				if (old->owner != me)
					atomic_fetch_add(&churn_cross_frees, 1);
				churn_check_free(old);
			}
		} else {
			int k = (int)(next_rand(&rng) % CHURN_HELD);
			if (held[k]) {
				/* grow it, as realloc moves it between the ULT's caches */
				struct churn_block *g =
					realloc(held[k], sizeof *g + held[k]->size + 64);
				WT_TRUE(g != NULL, "realloc");
				churn_check_free(g);
			}
			held[k] = b;
		}
		if (i % 4 == 3) {
			pause_point(i / 4, me);
			note_worker(&m);
		}
	}
	atomic_fetch_add(&churn_moves, m.n);
	for (int k = 0; k < CHURN_HELD; k++)
		if (held[k])
			churn_check_free(held[k]);
	return (void *)(intptr_t)me;
}

static void test_own_tls_malloc_churn(void **state)
{
	wt_init(2);
	need_own_tls();
	movers_start();
	weft_t t[CHURN_ULTS];
	for (int i = 0; i < CHURN_ULTS; i++)
		t[i] = spawn_tls(WEFT_TLS_OWN, -1, churn, (void *)(intptr_t)i);
	for (int i = 0; i < CHURN_ULTS; i++)
		WT_EQ_PTR(wt_join(t[i]), (void *)(intptr_t)i);
	movers_stop();
	for (int i = 0; i < CHURN_SLOTS; i++) {
		struct churn_block *b = atomic_exchange(&churn_slots[i], NULL);
		if (b)
			churn_check_free(b);
	}
	WT_EQ(atomic_load(&churn_bad), 0);
	WT_CMP(atomic_load(&churn_cross_frees), >, 0);
	expect_migrations("malloc churn", atomic_load(&churn_moves));
	WT_OK(weft_shutdown());
}

/* ---- own TLS: many ULTs ----------------------------------------------------- */

/* 20,000 ULTs with own TLS made and joined one after another: each starts
 * with own_counter 0 and keeps the value it sets across a yield; blocks are
 * reused (tls.c, "Reuse"), so the process does not run out, and few
 * distinct blocks are ever seen. */
struct trip {
	long value;
	uintptr_t addr; /* of its own_counter */
};

__attribute__((noinline, noipa)) static long *own_counter_address(void)
{
	return &own_counter;
}

static void *own_counter_round_trip(void *arg)
{
	struct trip *t = arg;
	t->addr = (uintptr_t)own_counter_address();
	if (own_counter != 0)
		return (void *)-1;
	own_counter = t->value;
	weft_yield();
	if (own_counter != t->value)
		return (void *)-2;
	return (void *)(intptr_t)(t->value * 3 + 1);
}

static int cmp_uintptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

static size_t distinct(uintptr_t *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_uintptr);
	size_t d = n > 0;
	for (size_t i = 1; i < n; i++)
		d += v[i] != v[i - 1];
	return d;
}

static void test_many_own_ults_one_after_another(void **state)
{
	enum { N = 20000 };
	wt_init(2);
	need_own_tls();
	static struct trip trip[N];
	static uintptr_t addr[N];
	for (long i = 0; i < N; i++) {
		trip[i].value = i + 1;
		weft_t t = spawn_tls(WEFT_TLS_OWN, -1, own_counter_round_trip, &trip[i]);
		void *r = wt_join(t);
		if (r != (void *)(intptr_t)(trip[i].value * 3 + 1))
			fail_msg("ULT %ld returned %p, expected %p", i, r,
				 (void *)(intptr_t)(trip[i].value * 3 + 1));
		addr[i] = trip[i].addr;
	}
	size_t d = distinct(addr, N);
	printf("[          ] %zu distinct blocks for %d ULTs\n", d, N);
	WT_CMP(d, <=, 200); /* at most 2 in use at once, and each worker caches 32 */
	WT_OK(weft_shutdown());
}

/* 2,000 ULTs with own TLS alive at once (parked until all have started):
 * each has a block of its own, and each keeps its value. */
enum { ALIVE = 2000 };

struct alive {
	atomic_int started;
	atomic_int go;
	uintptr_t addr[ALIVE];
};

static struct alive alive;

static void *park_with_own_value(void *arg)
{
	long i = (long)(intptr_t)arg;
	if (own_counter != 0)
		return (void *)-1;
	own_counter = i * 7 + 3;
	alive.addr[i] = (uintptr_t)own_counter_address();
	atomic_fetch_add(&alive.started, 1);
	while (!atomic_load(&alive.go))
		weft_park();
	if (own_counter != i * 7 + 3)
		return (void *)-2;
	return (void *)(intptr_t)(i * 7 + 3);
}

static void test_many_own_ults_alive_at_once(void **state)
{
	wt_init(2);
	need_own_tls();
	static weft_t t[ALIVE];
	for (long i = 0; i < ALIVE; i++)
		t[i] = spawn_tls(WEFT_TLS_OWN, -1, park_with_own_value, (void *)(intptr_t)i);
	WT_WAIT(atomic_load(&alive.started) == ALIVE, 30);
	atomic_store(&alive.go, 1);
	for (long i = 0; i < ALIVE; i++)
		WT_OK(weft_unpark(t[i]));
	for (long i = 0; i < ALIVE; i++) {
		void *r = wt_join(t[i]);
		if (r != (void *)(intptr_t)(i * 7 + 3))
			fail_msg("ULT %ld returned %p, expected %p", i, r,
				 (void *)(intptr_t)(i * 7 + 3));
	}
	WT_EQ(distinct(alive.addr, ALIVE), ALIVE);
	WT_OK(weft_shutdown());
}

/* ---- own TLS across restarts ------------------------------------------------ */

/* weft_shutdown then weft_init, three times, with ULTs with own TLS each
 * time (the second time by config): their counters and initial values are
 * right, and main's own variables are kept throughout. */
static void *count_briefly(void *arg)
{
	check_initial_values("a ULT after a restart");
	for (long i = 0; i < 500; i++) {
		own_counter++;
		pause_point(i, -1);
		if (own_counter != i + 1)
			return (void *)-1;
	}
	dirty_values(3);
	return (void *)(intptr_t)own_counter;
}

static void test_own_tls_across_restarts(void **state)
{
	unsetenv("WEFT_TLS");
	own_counter = -9;
	for (int round = 0; round < 3; round++) {
		weft_config_t c = config_with(2, round == 1 ? WEFT_TLS_OWN : WEFT_TLS_DEFAULT);
		int e = weft_init(&c);
		if (e == ENOTSUP && round == 1)
			fail_msg("weft_init with tls own: ENOTSUP, but weft_create made one");
		WT_OK(e);
		if (round == 0)
			need_own_tls();
		weft_t t[8];
		for (int i = 0; i < 8; i++)
			t[i] = spawn_tls(round == 1 ? WEFT_TLS_DEFAULT : WEFT_TLS_OWN, -1,
					 count_briefly, NULL);
		for (int i = 0; i < 8; i++)
			WT_EQ_PTR(wt_join(t[i]), (void *)500);
		WT_OK(weft_shutdown());
		WT_EQ(own_counter, -9 - round);
		own_counter--;
	}
}

/* ---- glibc's own per-thread state in a block ---------------------------- */

/* A new thread's ctype table pointers are set by glibc's thread start: a
 * fresh block gets them too (isalpha crashed in a ULT with a new block). */
static volatile int ctype_input = 'a';

static void *use_ctype(void *arg)
{
	WT_TRUE(isalpha(ctype_input) && !isdigit(ctype_input),
		"isalpha('a') in a ULT with a block");
	WT_EQ(toupper(ctype_input), 'A');
	WT_EQ(tolower('Q'), 'q');
	return arg;
}

static void test_own_tls_ctype(void **state)
{
	init_own(2);
	enum { N = 64 };
	weft_t t[N];
	for (int i = 0; i < N; i++) /* all alive at once: fresh blocks */
		t[i] = spawn_tls(WEFT_TLS_OWN, i % 2, use_ctype, (void *)(intptr_t)(i + 1));
	for (int i = 0; i < N; i++)
		WT_EQ_PTR(wt_join(t[i]), (void *)(intptr_t)(i + 1));
	for (int i = 0; i < N; i++) /* one after another: reused blocks */
		WT_EQ_PTR(wt_join(spawn_tls(WEFT_TLS_OWN, -1, use_ctype, (void *)1)), (void *)1);
	WT_OK(weft_shutdown());
}

/* glibc's recursive mutex (and its dynamic linker's locks, which are such)
 * knows its owner by the thread id in the descriptor: two ULTs with blocks
 * must not share one, or the second "re-enters" the first's lock. */
static pthread_mutex_t rec_mutex;
static atomic_int rec_held, rec_tried, rec_result;

static void *hold_recursive(void *arg)
{
	WT_OK(pthread_mutex_lock(&rec_mutex));
	atomic_store(&rec_held, 1);
	while (!atomic_load(&rec_tried)) /* keeps its worker: no yield */
		;
	WT_OK(pthread_mutex_unlock(&rec_mutex));
	return arg;
}

static void *try_recursive(void *arg)
{
	while (!atomic_load(&rec_held))
		weft_yield();
	int e = pthread_mutex_trylock(&rec_mutex);
	if (e == 0)
		pthread_mutex_unlock(&rec_mutex);
	atomic_store(&rec_result, e);
	atomic_store(&rec_tried, 1);
	return arg;
}

static void test_own_tls_glibc_recursive_mutex_excludes(void **state)
{
	pthread_mutexattr_t ma;
	WT_OK(pthread_mutexattr_init(&ma));
	WT_OK(pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE));
	WT_OK(pthread_mutex_init(&rec_mutex, &ma));
	init_own(2);
	for (int round = 0; round < 20; round++) {
		atomic_store(&rec_held, 0);
		atomic_store(&rec_tried, 0);
		atomic_store(&rec_result, -1);
		weft_t a = spawn_tls(WEFT_TLS_OWN, 0, hold_recursive, NULL);
		weft_t b = spawn_tls(WEFT_TLS_OWN, 1, try_recursive, NULL);
		wt_join(a);
		wt_join(b);
		WT_ERR(atomic_load(&rec_result), EBUSY);
	}
	WT_OK(weft_shutdown());
	WT_OK(pthread_mutex_destroy(&rec_mutex));
}

/* glibc's own thread-specific data (pthread_setspecific called on glibc
 * directly, as a native program does) starts empty in every block, also
 * in one a ULT that set a value left. */
static pthread_key_t glibc_key;

static void *set_glibc_specific(void *arg)
{
	WT_EQ_PTR(pthread_getspecific(glibc_key), NULL);
	WT_OK(pthread_setspecific(glibc_key, arg));
	WT_EQ_PTR(pthread_getspecific(glibc_key), arg);
	return arg;
}

static void test_own_tls_glibc_specific_starts_empty(void **state)
{
	WT_OK(pthread_key_create(&glibc_key, NULL));
	init_own(1);
	for (intptr_t i = 1; i <= 50; i++)
		WT_EQ_PTR(wt_join(spawn_tls(WEFT_TLS_OWN, -1, set_glibc_specific, (void *)i)),
			  (void *)i);
	WT_OK(weft_shutdown());
	WT_OK(pthread_key_delete(glibc_key));
}

/* Per-ULT CPU time counted from a ULT with a block of its own: its worker's
 * CPU clock is its kernel thread's, not that of whatever glibc's
 * pthread_self() names under the installed block (the ULT's). The first
 * weft_cputime call starts counting here, on this ULT's worker. */
static void *spin_and_count(void *arg)
{
	(void)arg;
	uint64_t ns = 0;
	WT_OK(weft_cputime(weft_self(), &ns));
	uint64_t until = wt_now_ns() + 60000000ull, deadline = wt_now_ns() + 10000000000ull;
	while (wt_now_ns() < until || ns < 20000000ull) {
		WT_OK(weft_cputime(weft_self(), &ns));
		WT_TRUE(wt_now_ns() < deadline, "cputime stayed at %llu ns for 10 s of spinning",
			(unsigned long long)ns);
	}
	return NULL;
}

static void test_own_tls_ult_starts_cpu_counting(void **state)
{
	wt_init(2);
	need_own_tls();
	wt_join(spawn_tls(WEFT_TLS_OWN, 1, spin_and_count, NULL));
	WT_OK(weft_shutdown());
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attr_tls_round_trip_and_errors),
		cmocka_unit_test(test_bad_config_tls_einval),
		cmocka_unit_test(test_env_tls),
		cmocka_unit_test(test_own_tls_unavailable_is_enotsup),
		cmocka_unit_test(test_worker_tls_is_shared_on_one_worker),
		cmocka_unit_test(test_own_tls_is_not_shared_on_one_worker),
		cmocka_unit_test(test_config_tls_own_is_the_default),
		cmocka_unit_test(test_own_counters_survive_migration),
		cmocka_unit_test(test_own_tls_starts_from_initial_values),
		cmocka_unit_test(test_own_errno_survives_migration),
		cmocka_unit_test(test_root_keeps_its_tls),
		cmocka_unit_test(test_dlopen_tls_is_per_ult),
		cmocka_unit_test(test_dlopen_tls_fresh_in_reused_block),
		cmocka_unit_test(test_own_tls_malloc_churn),
		cmocka_unit_test(test_many_own_ults_one_after_another),
		cmocka_unit_test(test_many_own_ults_alive_at_once),
		cmocka_unit_test(test_own_tls_across_restarts),
		cmocka_unit_test(test_own_tls_ctype),
		cmocka_unit_test(test_own_tls_ult_starts_cpu_counting),
		cmocka_unit_test(test_own_tls_glibc_recursive_mutex_excludes),
		cmocka_unit_test(test_own_tls_glibc_specific_starts_empty),
	};
	return WT_RUN(argc, argv, tests);
}
