/* weft_config_init, weft_init, weft_shutdown: configuration and environment,
 * EBUSY/EPERM/EINVAL, lazy initialisation, re-initialisation.
 *
 * Each test runs in its own process (harness.h), so tests that change the
 * environment need not restore it. */
#include "harness.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

static const char *const weft_env_vars[] = {
	"WEFT_WORKERS",        "WEFT_PIN",        "WEFT_SCHED",
	"WEFT_CONTEXT",        "WEFT_STACK_SIZE", "WEFT_IDLE_SPIN_NS",
	"WEFT_GUARDED_STACKS", "WEFT_MIGRATE",    "WEFT_MEMBARRIER",
};

static void clear_weft_env(void)
{
	for (size_t i = 0; i < sizeof weft_env_vars / sizeof weft_env_vars[0]; i++)
		unsetenv(weft_env_vars[i]);
}

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

static void test_queries_before_init(void **state)
{
	assert_not_running();
}

static void test_init_with_config(void **state)
{
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	c.workers = 3;
	WT_OK(weft_init(&c));
	WT_EQ(weft_num_workers(), 3);
	WT_EQ(weft_worker_id(), 0); /* the caller becomes a ULT on worker 0 */
	WT_CMPU(weft_self(), !=, WEFT_NULL);
	weft_t t = wt_spawn(NULL, return_arg, (void *)5);
	WT_EQ_PTR(wt_join(t), (void *)5);
	WT_OK(weft_shutdown());
	assert_not_running();
}

static void test_zeroed_config_means_defaults(void **state)
{
	clear_weft_env();
	weft_config_t c;
	memset(&c, 0, sizeof c);
	WT_OK(weft_init(&c));
	WT_EQ(weft_num_workers(), wt_usable_cpus());
	weft_t t = wt_spawn(NULL, return_arg, (void *)5);
	WT_EQ_PTR(wt_join(t), (void *)5);
	WT_OK(weft_shutdown());
}

static void test_double_init_ebusy(void **state)
{
	wt_init(2);
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	c.workers = 3;
	WT_ERR(weft_init(&c), EBUSY);
	WT_ERR(weft_init(NULL), EBUSY);
	WT_EQ(weft_num_workers(), 2); /* unchanged */
	weft_t t = wt_spawn(NULL, return_arg, (void *)5);
	WT_EQ_PTR(wt_join(t), (void *)5);
	WT_OK(weft_shutdown());
}

static void *chain_sum(void *arg)
{
	intptr_t n = (intptr_t)arg;
	if (n == 0)
		return (void *)0;
	weft_t t = wt_spawn(NULL, chain_sum, (void *)(n - 1));
	return (void *)(n + (intptr_t)wt_join(t));
}

static void test_reinit_cycles(void **state)
{
	/* Every combination of scheduler and context, with different worker
	 * counts, in one process: shutdown must leave nothing behind. */
	static const int workers[] = {1, 2, 4, 3};
	for (int round = 0; round < 2; round++)
		for (int s = WEFT_SCHED_STEAL; s <= WEFT_SCHED_SHARE; s++)
			for (int x = WEFT_CONTEXT_ASM; x <= WEFT_CONTEXT_UCONTEXT; x++) {
				weft_config_t c;
				WT_OK(weft_config_init(&c));
				c.workers = workers[(round * 4 + s * 2 + x) % 4];
				c.sched = s;
				c.context = x;
				WT_OK(weft_init(&c));
				WT_EQ(weft_num_workers(), c.workers);
				weft_t t = wt_spawn(NULL, chain_sum, (void *)100);
				WT_EQ((intptr_t)wt_join(t), 5050);
				WT_OK(weft_shutdown());
				assert_not_running();
			}
}

static void test_ids_not_reused_across_reinit(void **state)
{
	wt_init(2);
	weft_t a = wt_spawn(NULL, return_arg, NULL);
	wt_join(a);
	WT_OK(weft_shutdown());
	wt_init(2);
	weft_t b = wt_spawn(NULL, return_arg, NULL);
	wt_join(b);
	WT_CMPU(b, >, a);
	WT_OK(weft_shutdown());
}

struct parked {
	atomic_int release;
	atomic_int parked;
};

static void *park_until_released(void *arg)
{
	struct parked *p = arg;
	atomic_store(&p->parked, 1);
	while (!atomic_load(&p->release))
		weft_park();
	return (void *)9;
}

static void test_shutdown_ebusy_while_ult_alive(void **state)
{
	wt_init(2);
	struct parked p = {0};
	weft_t t = wt_spawn(NULL, park_until_released, &p);
	WT_ERR(weft_shutdown(), EBUSY); /* whether or not it has started */
	WT_WAIT(atomic_load(&p.parked), 10);
	WT_ERR(weft_shutdown(), EBUSY);
	WT_EQ(weft_num_workers(), 2); /* still running */
	atomic_store(&p.release, 1);
	WT_OK(weft_unpark(t));
	WT_EQ_PTR(wt_join(t), (void *)9);
	WT_OK(weft_shutdown());
}

static void test_shutdown_after_join_succeeds_at_once(void **state)
{
	/* A joined ULT has exited: no EBUSY retry is needed. */
	wt_init(4);
	for (int i = 0; i < 200; i++) {
		weft_t t[8];
		for (int k = 0; k < 8; k++)
			t[k] = wt_spawn(NULL, chain_sum, (void *)(intptr_t)k);
		for (int k = 0; k < 8; k++)
			WT_EQ((intptr_t)wt_join(t[k]), k * (k + 1) / 2);
		WT_OK(weft_shutdown());
		wt_init(4);
	}
	WT_OK(weft_shutdown());
}

static void *flag_and_return(void *arg)
{
	atomic_store_explicit((atomic_int *)arg, 1, memory_order_release);
	return arg;
}

/* Live ULTs as the per-worker counters have them (what weft_shutdown
 * checks), the root not counted. */
static long live_ults(void)
{
	long n = 0;
	for (int i = 0; i < weft_num_workers(); i++) {
		weft_worker_stats_t st;
		WT_OK(weft_worker_stats(i, &st));
		n += (long)st.created - (long)st.exited;
	}
	return n;
}

/* A round costs ~1 us alone but up to ~3 ms under a sanitizer with another
 * test beside it (make test runs two at once; the spinner and the other
 * worker then share CPUs with it): 20,000 rounds took 49-64 s of the 60 s
 * limit under ThreadSanitizer and passed it under AddressSanitizer. So the
 * loop also stops after JOIN_SECONDS; every round it runs is checked. */
enum { JOIN_ROUNDS = 20000, JOIN_SECONDS = 15 };
static void test_joined_ult_no_longer_live(void **state)
{
	/* The join most likely comes right as the ULT exits on the other
	 * worker, and finds it exited: its exit must already be counted, or
	 * weft_shutdown would answer EBUSY. */
	wt_init(2);
	uint64_t stop = wt_now_ns() + JOIN_SECONDS * 1000000000ull;
	for (int i = 0; i < JOIN_ROUNDS && wt_now_ns() < stop; i++) {
		atomic_int done = 0;
		/* on the other worker: this one spins until it is done */
		weft_t t = wt_spawn_on(1 - weft_worker_id(), flag_and_return, &done);
		while (!atomic_load_explicit(&done, memory_order_acquire))
			;
		WT_EQ_PTR(wt_join(t), &done);
		WT_EQ(live_ults(), 0);
		if (i % 2000 == 0) {
			WT_OK(weft_shutdown());
			wt_init(2);
		}
	}
	WT_OK(weft_shutdown());
}

static void *call_shutdown(void *arg)
{
	return (void *)(intptr_t)weft_shutdown();
}

static void test_shutdown_from_other_ult_eperm(void **state)
{
	wt_init(2);
	weft_t t = wt_spawn(NULL, call_shutdown, NULL);
	WT_ERR((intptr_t)wt_join(t), EPERM);
	WT_OK(weft_shutdown());
}

static void test_shutdown_from_foreign_thread_eperm(void **state)
{
	wt_init(2);
	struct wt_pthread p;
	wt_pthread_start(&p, call_shutdown, NULL);
	WT_ERR((intptr_t)wt_pthread_join(&p), EPERM);
	WT_EQ(weft_num_workers(), 2);
	WT_OK(weft_shutdown());
}

/* weft_init(bad) fails with EINVAL, starts nothing, and a good init works. */
static void check_bad_config(const weft_config_t *bad)
{
	WT_ERR(weft_init(bad), EINVAL);
	assert_not_running();
	wt_init(2);
	weft_t t = wt_spawn(NULL, return_arg, (void *)1);
	WT_EQ_PTR(wt_join(t), (void *)1);
	WT_OK(weft_shutdown());
}

static void test_bad_config_workers_einval(void **state)
{
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	c.workers = -1;
	check_bad_config(&c);
}

static void test_bad_config_sched_einval(void **state)
{
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	c.sched = WEFT_SCHED_PRIO + 1;
	check_bad_config(&c);
	c.sched = -1;
	check_bad_config(&c);
}

static void test_bad_config_context_einval(void **state)
{
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	c.context = WEFT_CONTEXT_UCONTEXT + 1;
	check_bad_config(&c);
	c.context = -1;
	check_bad_config(&c);
}

static void test_bad_config_stack_size_einval(void **state)
{
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	c.stack_size = WEFT_STACK_MIN - 1;
	check_bad_config(&c);
	c.stack_size = 1;
	check_bad_config(&c);
}

static void test_bad_config_pin_einval(void **state)
{
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	c.pin = 2;
	check_bad_config(&c);
	c.pin = -2;
	check_bad_config(&c);
}

static void test_config_stack_size_is_the_default(void **state)
{
	/* A ULT created without attributes gets the configured stack size:
	 * ~200 KiB of recursion fits in 512 KiB (it would not in 64 KiB). */
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	c.workers = 2;
	c.stack_size = 512 * 1024;
	WT_OK(weft_init(&c));
	weft_t t = wt_spawn(NULL, wt_burn_stack_ult, (void *)(200 * 1024));
	wt_join(t);
	WT_OK(weft_shutdown());
}

static void test_lazy_init_by_create(void **state)
{
	assert_not_running();
	weft_t t = WEFT_NULL;
	WT_OK(weft_create(&t, NULL, return_arg, (void *)4));
	WT_CMP(weft_num_workers(), >, 0);
	WT_CMPU(weft_self(), !=, WEFT_NULL); /* the caller became the initialising ULT */
	WT_EQ_PTR(wt_join(t), (void *)4);
	WT_OK(weft_shutdown());
	assert_not_running();
}

struct seen {
	atomic_int bad;
	atomic_int last_bad;
};

static void *record_worker_ids(void *arg)
{
	struct seen *s = arg;
	for (int i = 0; i < 100; i++) {
		int w = weft_worker_id();
		if (w < 0 || w >= weft_num_workers()) {
			atomic_fetch_add(&s->bad, 1);
			atomic_store(&s->last_bad, w);
		}
		weft_yield();
	}
	return NULL;
}

static void test_worker_id_in_range(void **state)
{
	wt_init(4);
	struct seen s = {0};
	weft_t t[64];
	for (int i = 0; i < 64; i++)
		t[i] = wt_spawn(NULL, record_worker_ids, &s);
	for (int i = 0; i < 64; i++)
		wt_join(t[i]);
	WT_EQ(atomic_load(&s.bad), 0);
	WT_OK(weft_shutdown());
}

static void test_config_init_defaults(void **state)
{
	clear_weft_env();
	weft_config_t c;
	memset(&c, 0x55, sizeof c);
	WT_OK(weft_config_init(&c));
	WT_EQ(c.workers, wt_usable_cpus());
	WT_EQ(c.sched, WEFT_SCHED_STEAL);
	WT_EQ(c.context, WEFT_CONTEXT_ASM);
	WT_EQU(c.stack_size, 64 * 1024);
}

static void test_env_workers_honoured(void **state)
{
	clear_weft_env();
	setenv("WEFT_WORKERS", "3", 1);
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	WT_EQ(c.workers, 3);
	WT_OK(weft_init(NULL));
	WT_EQ(weft_num_workers(), 3);
	WT_OK(weft_shutdown());
}

static void test_env_sched_honoured(void **state)
{
	clear_weft_env();
	weft_config_t c;
	setenv("WEFT_SCHED", "share", 1);
	WT_OK(weft_config_init(&c));
	WT_EQ(c.sched, WEFT_SCHED_SHARE);
	setenv("WEFT_SCHED", "steal", 1);
	WT_OK(weft_config_init(&c));
	WT_EQ(c.sched, WEFT_SCHED_STEAL);
}

static void test_env_context_honoured(void **state)
{
	clear_weft_env();
	weft_config_t c;
	setenv("WEFT_CONTEXT", "ucontext", 1);
	WT_OK(weft_config_init(&c));
	WT_EQ(c.context, WEFT_CONTEXT_UCONTEXT);
	setenv("WEFT_CONTEXT", "asm", 1);
	WT_OK(weft_config_init(&c));
	WT_EQ(c.context, WEFT_CONTEXT_ASM);
}

static void test_env_stack_size_honoured(void **state)
{
	clear_weft_env();
	setenv("WEFT_STACK_SIZE", "524288", 1);
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	WT_EQU(c.stack_size, 524288);
	/* and weft_init(NULL) uses it for attribute-less ULTs */
	WT_OK(weft_init(NULL));
	weft_t t = wt_spawn(NULL, wt_burn_stack_ult, (void *)(200 * 1024));
	wt_join(t);
	WT_OK(weft_shutdown());
}

static void test_env_pin_honoured(void **state)
{
	clear_weft_env();
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	WT_EQ(c.pin, -1); /* unset: don't pin */
	setenv("WEFT_PIN", "1", 1);
	WT_OK(weft_config_init(&c));
	WT_EQ(c.pin, 1);
	setenv("WEFT_PIN", "0", 1);
	WT_OK(weft_config_init(&c));
	WT_EQ(c.pin, -1);
}

static void *report_affinity(void *arg)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	WT_OK(sched_getaffinity(0, sizeof set, &set));
	int *out = arg;
	out[0] = CPU_COUNT(&set);
	out[1] = -1;
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &set)) {
			out[1] = i;
			break;
		}
	return NULL;
}

static void test_pin_puts_worker_on_its_cpu(void **state)
{
	/* With pin = 1, worker i runs on the i-th CPU the process may use. */
	cpu_set_t allowed;
	WT_OK(sched_getaffinity(0, sizeof allowed, &allowed));
	if (CPU_COUNT(&allowed) < 2)
		wt_skip("needs 2 usable CPUs, have %d", CPU_COUNT(&allowed));
	int second = -1;
	for (int i = 0, seen = 0; i < CPU_SETSIZE && second < 0; i++)
		if (CPU_ISSET(i, &allowed) && seen++ == 1)
			second = i;
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	c.workers = 2;
	c.pin = 1;
	WT_OK(weft_init(&c));
	int aff[2] = {0, 0};
	wt_join(wt_spawn_on(1, report_affinity, aff));
	WT_EQ(aff[0], 1);
	WT_EQ(aff[1], second);
	WT_OK(weft_shutdown());
}

static void test_env_idle_spin_honoured(void **state)
{
	clear_weft_env();
	weft_config_t c;
	setenv("WEFT_IDLE_SPIN_NS", "5000", 1);
	WT_OK(weft_config_init(&c));
	WT_EQ(c.idle_spin_ns, 5000);
	setenv("WEFT_IDLE_SPIN_NS", "0", 1); /* never spin */
	WT_OK(weft_config_init(&c));
	WT_CMP(c.idle_spin_ns, <, 0);
}

static void test_env_guarded_stacks_honoured(void **state)
{
	clear_weft_env();
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	WT_CMP(c.guarded_stacks_max, >, 0); /* derived from vm.max_map_count */
	setenv("WEFT_GUARDED_STACKS", "100", 1);
	WT_OK(weft_config_init(&c));
	WT_EQ(c.guarded_stacks_max, 100);
	setenv("WEFT_GUARDED_STACKS", "0", 1); /* none */
	WT_OK(weft_config_init(&c));
	WT_CMP(c.guarded_stacks_max, <, 0);
}

/* A bad environment value makes weft_config_init and weft_init(NULL) fail
 * with EINVAL without starting anything. */
static void check_bad_env(const char *var, const char *value)
{
	clear_weft_env();
	setenv(var, value, 1);
	weft_config_t c;
	int r = weft_config_init(&c);
	if (r != EINVAL)
		fail_msg("weft_config_init with %s=\"%s\" returned %s, expected EINVAL", var, value,
			 wt_errname(r));
	r = weft_init(NULL);
	if (r != EINVAL)
		fail_msg("weft_init(NULL) with %s=\"%s\" returned %s, expected EINVAL", var, value,
			 wt_errname(r));
	assert_not_running();
	unsetenv(var);
}

static void test_env_bad_workers_einval(void **state)
{
	check_bad_env("WEFT_WORKERS", "abc");
	check_bad_env("WEFT_WORKERS", "-1");
	check_bad_env("WEFT_WORKERS", "3x");
	/* and a good value afterwards works */
	wt_init(2);
	WT_OK(weft_shutdown());
}

static void test_env_bad_migrate_einval(void **state)
{
	check_bad_env("WEFT_MIGRATE", "yes");
	check_bad_env("WEFT_MIGRATE", "2");
}

static void test_bad_config_migrate_einval(void **state)
{
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	c.migrate = 2;
	check_bad_config(&c);
	c.migrate = -2;
	check_bad_config(&c);
}

static void test_env_migrate_honoured(void **state)
{
	clear_weft_env();
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	WT_EQ(c.migrate, 1); /* unset: ULTs move */
	setenv("WEFT_MIGRATE", "0", 1);
	WT_OK(weft_config_init(&c));
	WT_EQ(c.migrate, -1);
	setenv("WEFT_MIGRATE", "1", 1);
	WT_OK(weft_config_init(&c));
	WT_EQ(c.migrate, 1);
}

static void test_env_bad_membarrier_einval(void **state)
{
	check_bad_env("WEFT_MEMBARRIER", "yes");
	check_bad_env("WEFT_MEMBARRIER", "2");
	/* both good values start the runtime (the scheme is chosen once per
	 * process, at the first start: util/fence.c) */
	clear_weft_env();
	setenv("WEFT_MEMBARRIER", "0", 1);
	wt_init(2);
	WT_OK(weft_shutdown());
	setenv("WEFT_MEMBARRIER", "1", 1);
	wt_init(2);
	WT_OK(weft_shutdown());
	unsetenv("WEFT_MEMBARRIER");
}

static void test_env_bad_sched_einval(void **state)
{
	check_bad_env("WEFT_SCHED", "bogus");
	check_bad_env("WEFT_SCHED", "7");
}

static void test_env_bad_context_einval(void **state)
{
	check_bad_env("WEFT_CONTEXT", "bogus");
	check_bad_env("WEFT_CONTEXT", "7");
}

static void test_env_bad_stack_size_einval(void **state)
{
	check_bad_env("WEFT_STACK_SIZE", "100");
	check_bad_env("WEFT_STACK_SIZE", "junk");
	check_bad_env("WEFT_STACK_SIZE", "-65536");
}

static void test_env_bad_pin_einval(void **state)
{
	check_bad_env("WEFT_PIN", "yes");
	check_bad_env("WEFT_PIN", "2");
}

static void test_env_bad_idle_spin_einval(void **state)
{
	check_bad_env("WEFT_IDLE_SPIN_NS", "-5");
	check_bad_env("WEFT_IDLE_SPIN_NS", "fast");
}

static void test_env_bad_guarded_stacks_einval(void **state)
{
	check_bad_env("WEFT_GUARDED_STACKS", "-1");
	check_bad_env("WEFT_GUARDED_STACKS", "many");
}

static void exit_while_running(void *arg)
{
	wt_init(2);
	weft_t t = wt_spawn(NULL, chain_sum, (void *)10);
	wt_join(t);
	exit(7);
}

static void test_exit_with_runtime_running(void **state)
{
	/* exit() from the initialising ULT with no other ULT alive (what
	 * returning from main does) ends the process normally. */
	struct wt_child c;
	wt_run_child(exit_while_running, NULL, 20, &c);
	char how[96];
	if (!WIFEXITED(c.status) || WEXITSTATUS(c.status) != 7)
		fail_msg("child %s, expected exit status 7; stderr:\n%s",
			 wt_describe_status(c.status, how, sizeof how), c.err);
	wt_child_free(&c);
}

/* ---- a new ULT's signal mask --------------------------------------------- */

/* Whether the calling kernel thread blocks SIGUSR1 (1/0), as the ULT sees
 * it: the kernel thread running a ULT blocks what the ULT blocks. */
static void *usr1_blocked(void *arg)
{
	(void)arg;
	sigset_t s;
	pthread_sigmask(SIG_BLOCK, NULL, &s);
	return (void *)(intptr_t)sigismember(&s, SIGUSR1);
}

static void *create_and_report(void *arg)
{
	(void)arg;
	weft_t t;
	if (weft_create(&t, NULL, usr1_blocked, NULL))
		return (void *)(intptr_t)-1;
	void *r = NULL;
	weft_join(t, &r);
	return r;
}

/* A ULT starts with its creator's signal mask, as pthread_create's threads
 * do: main blocks SIGUSR1 before weft starts, and so do its ULTs and
 * theirs, the first one included; a ULT created by a thread that is not a
 * ULT starts with none. (Children that kept a mask of their own made the
 * kernel thread switch masks - two system calls - on every create+join.) */
static void test_new_ult_inherits_creator_mask(void **state)
{
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	WT_OK(pthread_sigmask(SIG_BLOCK, &usr1, NULL));
	/* What glibc's pthread_create does, which weft_create follows. */
	pthread_t g;
	void *gr = NULL;
	WT_OK(pthread_create(&g, NULL, usr1_blocked, NULL));
	WT_OK(pthread_join(g, &gr));
	WT_EQ_PTR(gr, (void *)1);
	weft_t t = WEFT_NULL;
	WT_OK(weft_create(&t, NULL, usr1_blocked, NULL)); /* starts the runtime */
	WT_EQ_PTR(wt_join(t), (void *)1);
	WT_EQ_PTR(wt_join(wt_spawn(NULL, create_and_report, NULL)), (void *)1);
	WT_OK(weft_shutdown());
	WT_OK(pthread_sigmask(SIG_UNBLOCK, &usr1, NULL));

	/* A plain pthread (a foreign thread) makes the ULT; worker 1 runs it
	 * while main, worker 0's ULT, waits in the kernel. */
	wt_init(2);
	pthread_t p;
	void *r = NULL;
	WT_OK(pthread_sigmask(SIG_BLOCK, &usr1, NULL));
	WT_OK(pthread_create(&p, NULL, create_and_report, NULL));
	WT_OK(pthread_join(p, &r));
	WT_OK(pthread_sigmask(SIG_UNBLOCK, &usr1, NULL));
	WT_EQ_PTR(r, (void *)0);
	WT_OK(weft_shutdown());
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_queries_before_init),
		cmocka_unit_test(test_init_with_config),
		cmocka_unit_test(test_zeroed_config_means_defaults),
		cmocka_unit_test(test_double_init_ebusy),
		cmocka_unit_test(test_reinit_cycles),
		cmocka_unit_test(test_ids_not_reused_across_reinit),
		cmocka_unit_test(test_shutdown_ebusy_while_ult_alive),
		cmocka_unit_test(test_shutdown_after_join_succeeds_at_once),
		cmocka_unit_test(test_joined_ult_no_longer_live),
		cmocka_unit_test(test_shutdown_from_other_ult_eperm),
		cmocka_unit_test(test_shutdown_from_foreign_thread_eperm),
		cmocka_unit_test(test_bad_config_workers_einval),
		cmocka_unit_test(test_bad_config_sched_einval),
		cmocka_unit_test(test_bad_config_context_einval),
		cmocka_unit_test(test_bad_config_stack_size_einval),
		cmocka_unit_test(test_bad_config_pin_einval),
		cmocka_unit_test(test_config_stack_size_is_the_default),
		cmocka_unit_test(test_lazy_init_by_create),
		cmocka_unit_test(test_worker_id_in_range),
		cmocka_unit_test(test_config_init_defaults),
		cmocka_unit_test(test_env_workers_honoured),
		cmocka_unit_test(test_env_sched_honoured),
		cmocka_unit_test(test_env_context_honoured),
		cmocka_unit_test(test_env_stack_size_honoured),
		cmocka_unit_test(test_env_pin_honoured),
		cmocka_unit_test(test_env_migrate_honoured),
		cmocka_unit_test(test_env_bad_migrate_einval),
		cmocka_unit_test(test_bad_config_migrate_einval),
		cmocka_unit_test(test_pin_puts_worker_on_its_cpu),
		cmocka_unit_test(test_env_idle_spin_honoured),
		cmocka_unit_test(test_env_guarded_stacks_honoured),
		cmocka_unit_test(test_env_bad_workers_einval),
		cmocka_unit_test(test_env_bad_membarrier_einval),
		cmocka_unit_test(test_env_bad_sched_einval),
		cmocka_unit_test(test_env_bad_context_einval),
		cmocka_unit_test(test_env_bad_stack_size_einval),
		cmocka_unit_test(test_env_bad_pin_einval),
		cmocka_unit_test(test_env_bad_idle_spin_einval),
		cmocka_unit_test(test_env_bad_guarded_stacks_einval),
		cmocka_unit_test(test_exit_with_runtime_running),
		cmocka_unit_test(test_new_ult_inherits_creator_mask),
	};
	return WT_RUN(argc, argv, tests);
}
