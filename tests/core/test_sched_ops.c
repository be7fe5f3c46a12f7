/* Installable schedulers (include/weft/sched.h): the table checks, names,
 * per-worker configuration, a user scheduler deciding the order, the
 * domain rule for stealing, and installs while ULTs run. */
#include "harness.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* ---- a user scheduler: one FIFO per worker ----------------------------- */

typedef struct {
	weft_sched_node_t *head, *tail;
	int worker;
} fifo_t;

static atomic_int fifo_inits, fifo_finis;
static atomic_long fifo_puts, fifo_migrated;

static int fifo_init(void *state, int worker, void *arg)
{
	fifo_t *f = state;
	f->worker = worker;
	atomic_fetch_add(&fifo_inits, 1);
	return arg ? *(int *)arg : 0; /* a test may ask for a failure */
}

static void fifo_fini(void *state)
{
	fifo_t *f = state;
	if (f->head)
		fail_msg("fini of worker %d's FIFO while a ULT is queued in it", f->worker);
	atomic_fetch_add(&fifo_finis, 1);
}

static int fifo_put(void *state, weft_sched_node_t *n, int why)
{
	fifo_t *f = state;
	int b = weft_sched_node_worker(n);
	if (b >= 0 && b != f->worker)
		fail_msg("worker %d's scheduler was handed a ULT bound to worker %d", f->worker, b);
	atomic_fetch_add(&fifo_puts, 1);
	if (why == WEFT_SCHED_MIGRATED)
		atomic_fetch_add(&fifo_migrated, 1);
	n->next = NULL;
	if (f->tail)
		f->tail->next = n;
	else
		f->head = n;
	f->tail = n;
	return 0;
}

static weft_sched_node_t *fifo_get(void *state)
{
	fifo_t *f = state;
	weft_sched_node_t *n = f->head;
	if (n && !(f->head = n->next))
		f->tail = NULL;
	return n;
}

static const weft_sched_ops_t fifo_ops = {
	.abi = WEFT_SCHED_ABI,
	.size = sizeof(weft_sched_ops_t),
	.name = "test_fifo",
	.state_size = sizeof(fifo_t),
	.init = fifo_init,
	.fini = fifo_fini,
	.put = fifo_put,
	.get = fifo_get,
};

static const char *sched_name(int worker)
{
	const weft_sched_ops_t *ops = NULL;
	WT_OK(weft_sched_get(worker, &ops));
	return ops->name;
}

/* ---- tables and names --------------------------------------------------- */

static void test_builtins_are_found_by_name(void **state)
{
	WT_EQ_PTR(weft_sched_find("steal"), &weft_sched_steal);
	WT_EQ_PTR(weft_sched_find("share"), &weft_sched_share);
	WT_EQ_PTR(weft_sched_find("prio"), &weft_sched_prio);
	WT_EQ_PTR(weft_sched_find("nosuch"), NULL);
	WT_EQ_PTR(weft_sched_find(""), NULL);
	WT_EQ_PTR(weft_sched_find(NULL), NULL);
}

static void test_register_checks_the_table(void **state)
{
	weft_sched_ops_t t = fifo_ops;
	WT_ERR(weft_sched_register(NULL), EINVAL);
	t.abi = WEFT_SCHED_ABI + 1;
	WT_ERR(weft_sched_register(&t), EINVAL);
	t = fifo_ops;
	t.size = sizeof(weft_sched_ops_t) - sizeof(void *);
	WT_ERR(weft_sched_register(&t), EINVAL);
	t = fifo_ops;
	t.put = NULL;
	WT_ERR(weft_sched_register(&t), EINVAL);
	t = fifo_ops;
	t.get = NULL;
	WT_ERR(weft_sched_register(&t), EINVAL);
	static const char *bad_names[] = {"", "Fifo", "a-b", "a b", "sixteen_chars_xx"};
	for (size_t i = 0; i < sizeof bad_names / sizeof *bad_names; i++) {
		t = fifo_ops;
		t.name = bad_names[i];
		if (weft_sched_register(&t) != EINVAL)
			fail_msg("the name \"%s\" was accepted", bad_names[i]);
	}
	t = fifo_ops;
	t.name = NULL;
	WT_ERR(weft_sched_register(&t), EINVAL);
	t = fifo_ops;
	t.name = "steal";
	WT_ERR(weft_sched_register(&t), EEXIST);
	WT_OK(weft_sched_register(&fifo_ops));
	WT_ERR(weft_sched_register(&fifo_ops), EEXIST);
	WT_EQ_PTR(weft_sched_find("test_fifo"), &fifo_ops);
}

static void *record_nothing(void *arg)
{
	return arg;
}

static void test_install_rejects_bad_input(void **state)
{
	wt_init(2);
	const weft_sched_ops_t *ops;
	WT_ERR(weft_sched_install(-1, &fifo_ops, NULL), EINVAL);
	WT_ERR(weft_sched_install(2, &fifo_ops, NULL), EINVAL);
	WT_ERR(weft_sched_install(0, NULL, NULL), EINVAL);
	WT_ERR(weft_sched_install_all(NULL, NULL), EINVAL);
	weft_sched_ops_t t = fifo_ops;
	t.get = NULL;
	WT_ERR(weft_sched_install(0, &t, NULL), EINVAL);
	WT_ERR(weft_sched_get(-1, &ops), EINVAL);
	WT_ERR(weft_sched_get(2, &ops), EINVAL);
	WT_ERR(weft_sched_get(0, NULL), EINVAL);
	/* init's error comes back, and the old scheduler stays. */
	const weft_sched_ops_t *before0, *before1;
	WT_OK(weft_sched_get(0, &before0));
	WT_OK(weft_sched_get(1, &before1));
	int eperm = EPERM;
	WT_ERR(weft_sched_install(0, &fifo_ops, &eperm), EPERM);
	WT_ERR(weft_sched_install(1, &fifo_ops, &eperm), EPERM);
	WT_OK(weft_sched_get(0, &ops));
	WT_EQ_PTR(ops, before0);
	WT_OK(weft_sched_get(1, &ops));
	WT_EQ_PTR(ops, before1);
	/* and the runtime still runs ULTs. */
	wt_join(wt_spawn(NULL, record_nothing, NULL));
	WT_OK(weft_shutdown());
}

static void *foreign_sethint(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)weft_sched_sethint(WEFT_NULL, 1);
}

static void test_hint_round_trip(void **state)
{
	wt_init(1);
	uint64_t h = 1;
	WT_OK(weft_sched_gethint(WEFT_NULL, &h));
	WT_EQU(h, 0);
	WT_OK(weft_sched_sethint(WEFT_NULL, 42));
	WT_OK(weft_sched_gethint(weft_self(), &h));
	WT_EQU(h, 42);
	WT_ERR(weft_sched_gethint(WEFT_NULL, NULL), EINVAL);
	WT_ERR(weft_sched_sethint((weft_t)1 << 60, 1), ESRCH);
	WT_ERR(weft_sched_gethint((weft_t)1 << 60, &h), ESRCH);
	/* A foreign thread has no hint of its own. */
	struct wt_pthread fp;
	wt_pthread_start(&fp, foreign_sethint, NULL);
	WT_EQ((intptr_t)wt_pthread_join(&fp), EINVAL);
	WT_OK(weft_shutdown());
}

/* ---- configuration ------------------------------------------------------ */

static void test_spec_gives_each_worker_its_scheduler(void **state)
{
	WT_OK(weft_sched_register(&fifo_ops));
	wt_init_sched(3, "share,test_fifo:1,steal:2-2");
	WT_EQ_STR(sched_name(0), "share");
	WT_EQ_STR(sched_name(1), "test_fifo");
	WT_EQ_STR(sched_name(2), "steal");
	WT_OK(weft_shutdown());
	WT_EQ(atomic_load(&fifo_finis), atomic_load(&fifo_inits));

	/* The environment, through weft_config_init; unnamed workers steal. */
	setenv("WEFT_SCHED", "share:1", 1);
	wt_init_sched(2, NULL);
	WT_EQ_STR(sched_name(0), "steal");
	WT_EQ_STR(sched_name(1), "share");
	WT_OK(weft_shutdown());

	/* The enum still works and is reported back. */
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	WT_EQ(c.sched, WEFT_SCHED_DEFAULT);
	WT_EQ_STR(c.scheds, "share:1");
	setenv("WEFT_SCHED", "share", 1);
	WT_OK(weft_config_init(&c));
	WT_EQ(c.sched, WEFT_SCHED_SHARE);
	WT_EQ_STR(c.scheds, "share");
}

static void test_bad_specs_are_einval(void **state)
{
	static const char *bad[] = {
		"",          "nosuch",    "steal:",    ":1",           "steal:2",
		"steal:a",   "steal:1-0", "steal:0-2", "steal,,share", "steal,",
		"steal:0:1", "steal:-1",  "share:0-",  "STEAL"};
	weft_config_t c;
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		WT_OK(weft_config_init(&c));
		c.workers = 2;
		c.sched = 0;
		c.scheds = bad[i];
		int e = weft_init(&c);
		if (e != EINVAL)
			fail_msg("weft_init with scheds \"%s\" returned %s, not EINVAL", bad[i],
				 wt_errname(e));
		setenv("WEFT_WORKERS", "2", 1);
		setenv("WEFT_SCHED", bad[i], 1);
		e = weft_config_init(&c);
		/* An empty variable counts as unset. */
		if (e != (*bad[i] ? EINVAL : 0))
			fail_msg("WEFT_SCHED=\"%s\": weft_config_init returned %s", bad[i],
				 wt_errname(e));
		unsetenv("WEFT_SCHED");
	}
}

/* ---- a user scheduler decides ------------------------------------------- */

enum { ORDER_N = 8 };
static int order[ORDER_N];
static atomic_int order_n;

static void *record_start(void *arg)
{
	order[atomic_fetch_add(&order_n, 1)] = (int)(intptr_t)arg;
	return NULL;
}

/* steal runs a ULT just created next (LIFO); the FIFO scheduler runs them
 * in creation order: what runs is what get returned. */
static void test_user_scheduler_decides_the_order(void **state)
{
	wt_init(1);
	WT_OK(weft_sched_install(0, &fifo_ops, NULL));
	WT_EQ_STR(sched_name(0), "test_fifo");
	weft_t t[ORDER_N];
	for (int i = 0; i < ORDER_N; i++)
		t[i] = wt_spawn(NULL, record_start, (void *)(intptr_t)i);
	for (int i = 0; i < ORDER_N; i++)
		wt_join(t[i]);
	for (int i = 0; i < ORDER_N; i++)
		if (order[i] != i)
			fail_msg("the %d-th ULT to start was number %d", i, order[i]);
	WT_CMP(atomic_load(&fifo_puts), >=, ORDER_N);
	WT_OK(weft_shutdown());
	WT_EQ(atomic_load(&fifo_finis), atomic_load(&fifo_inits));
}

/* ---- domains: no stealing across schedulers ----------------------------- */

enum { CHILDREN = 64 };
static atomic_int ran_on[CHILDREN];

static void *busy_child(void *arg)
{
	uint64_t end = wt_now_ns() + 200000; /* 0.2 ms: time for a thief */
	while (wt_now_ns() < end)
		;
	ran_on[(intptr_t)arg] = weft_worker_id();
	return NULL;
}

static void *spawner(void *arg)
{
	(void)arg;
	weft_t t[CHILDREN];
	for (int i = 0; i < CHILDREN; i++)
		t[i] = wt_spawn(NULL, busy_child, (void *)(intptr_t)i);
	for (int i = 0; i < CHILDREN; i++)
		wt_join(t[i]);
	return NULL;
}

/* Worker 0 runs share and is idle; worker 1 runs steal and has 64 ready
 * ULTs in its deque. Idle workers take work only from workers that run
 * their scheduler, so every child runs on worker 1. */
static void test_no_stealing_across_schedulers(void **state)
{
	if (wt_usable_cpus() < 2)
		wt_skip("needs two CPUs for the idle worker to try stealing");
	wt_init_sched(2, "share:0,steal:1");
	wt_join(wt_spawn_on(1, spawner, NULL));
	for (int i = 0; i < CHILDREN; i++)
		if (ran_on[i] != 1)
			fail_msg("child %d ran on worker %d", i, ran_on[i]);
	WT_OK(weft_shutdown());
}

/* ---- installs while ULTs run -------------------------------------------- */

/* A second user scheduler, with give: a FIFO per worker under a lock,
 * from whose head idle workers running it take unbound ULTs. It exercises
 * the thieves' side of an install (policy.c). */
typedef struct {
	atomic_flag lock;
	atomic_int n;
	weft_sched_node_t *head, *tail;
} locked_fifo_t;

static void lf_lock(locked_fifo_t *f)
{
	while (atomic_flag_test_and_set_explicit(&f->lock, memory_order_acquire))
		;
}

static void lf_unlock(locked_fifo_t *f)
{
	atomic_flag_clear_explicit(&f->lock, memory_order_release);
}

static atomic_long lf_given;

static int lf_put(void *state, weft_sched_node_t *n, int why)
{
	(void)why;
	locked_fifo_t *f = state;
	lf_lock(f);
	n->next = NULL;
	if (f->tail)
		f->tail->next = n;
	else
		f->head = n;
	f->tail = n;
	atomic_fetch_add_explicit(&f->n, 1, memory_order_relaxed);
	lf_unlock(f);
	return weft_sched_node_worker(n) < 0;
}

static weft_sched_node_t *lf_take(locked_fifo_t *f, int unbound_only)
{
	lf_lock(f);
	weft_sched_node_t *n = f->head;
	if (n && unbound_only && weft_sched_node_worker(n) >= 0)
		n = NULL;
	if (n) {
		if (!(f->head = n->next))
			f->tail = NULL;
		atomic_fetch_sub_explicit(&f->n, 1, memory_order_relaxed);
	}
	lf_unlock(f);
	return n;
}

static weft_sched_node_t *lf_get(void *state)
{
	return lf_take(state, 0);
}

static weft_sched_node_t *lf_give(void *victim, void *thief)
{
	(void)thief;
	weft_sched_node_t *n = lf_take(victim, 1);
	if (n)
		atomic_fetch_add(&lf_given, 1);
	return n;
}

static int lf_empty(const void *state)
{
	const locked_fifo_t *f = state;
	return atomic_load_explicit(&f->n, memory_order_relaxed) == 0;
}

static const weft_sched_ops_t locked_fifo_ops = {
	.abi = WEFT_SCHED_ABI,
	.size = sizeof(weft_sched_ops_t),
	.name = "test_locked",
	.state_size = sizeof(locked_fifo_t),
	.put = lf_put,
	.get = lf_get,
	.empty = lf_empty,
	.give = lf_give,
};

#if defined(__SANITIZE_THREAD__)
/* ThreadSanitizer maps 4-7 regions per ULT (its fiber), and each of its
 * synchronisation steps costs time in the number of fibers: the same swaps
 * over few ULTs. */
enum { LIVE = 200, SWAPS = 100 };
#else
enum { LIVE = 10000, SWAPS = 100 };
#endif
static atomic_int stop, done;
static weft_mutex_t swap_mu = WEFT_MUTEX_INITIALIZER;
static long shared_count;

/* 10,000 ULTs: one in 50 yields in a loop (always ready), the others sleep,
 * take a lock or hold it across a yield (others park on it), then sleep;
 * so every install finds ULTs queued, parked, sleeping and running. */
static void *churn(void *arg)
{
	long i = (long)(intptr_t)arg;
	while (!atomic_load(&stop)) {
		if (i % 50 == 0) {
			weft_yield();
			continue;
		}
		if (i % 64 == 3) {
			weft_mutex_lock(&swap_mu);
			weft_yield();
			shared_count++;
			weft_mutex_unlock(&swap_mu);
		} else if (i % 2) {
			weft_mutex_lock(&swap_mu);
			shared_count++;
			weft_mutex_unlock(&swap_mu);
		}
		weft_sleep_ns(50000000 + (uint64_t)(i % 7) * 5000000); /* 50-80 ms */
	}
	atomic_fetch_add(&done, 1);
	return NULL;
}

static const weft_sched_ops_t *const rotation[] = {&fifo_ops, &weft_sched_share, &weft_sched_prio,
						   &locked_fifo_ops, &weft_sched_steal};
#define NROT ((int)(sizeof rotation / sizeof rotation[0]))

static void *foreign_installer(void *arg)
{
	(void)arg;
	for (int i = 0; i < SWAPS / 4; i++)
		if (weft_sched_install(1, rotation[(i + 1) % NROT], NULL) != 0)
			return (void *)1;
	return NULL;
}

/* 10,000 ULTs live (200 under TSan), every worker's scheduler swapped
 * 100 times (by a ULT, and by a foreign thread for worker 1), every ULT
 * completes. */
static void test_swap_schedulers_under_load(void **state)
{
	wt_init(2);
	static weft_t t[LIVE];
	for (long i = 0; i < LIVE; i++)
		t[i] = wt_spawn(NULL, churn, (void *)(intptr_t)i);
	struct wt_pthread fp;
	wt_pthread_start(&fp, foreign_installer, NULL);
	for (int i = 0; i < SWAPS; i++) {
		WT_OK(weft_sched_install_all(rotation[i % NROT], NULL));
		weft_yield();
	}
	WT_EQ_PTR(wt_pthread_join(&fp), NULL);
	atomic_store(&stop, 1);
	for (long i = 0; i < LIVE; i++)
		wt_join(t[i]);
	WT_EQ(atomic_load(&done), LIVE);
	WT_CMP(atomic_load(&fifo_migrated), >, 0);
	WT_OK(weft_shutdown());
	WT_EQ(atomic_load(&fifo_finis), atomic_load(&fifo_inits));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_builtins_are_found_by_name),
		cmocka_unit_test(test_register_checks_the_table),
		cmocka_unit_test(test_install_rejects_bad_input),
		cmocka_unit_test(test_hint_round_trip),
		cmocka_unit_test(test_spec_gives_each_worker_its_scheduler),
		cmocka_unit_test(test_bad_specs_are_einval),
		cmocka_unit_test(test_user_scheduler_decides_the_order),
		cmocka_unit_test(test_no_stealing_across_schedulers),
		cmocka_unit_test(test_swap_schedulers_under_load),
	};
	return WT_RUN(argc, argv, tests);
}
