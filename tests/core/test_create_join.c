/* weft_create, weft_join, weft_detach, weft_exit, weft_self/weft_equal,
 * names, ids, user stacks and stack sizes. Every test initialises the runtime
 * with wt_init and ends with a shutdown. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

static void *return_arg(void *arg)
{
	return arg;
}

/* A ULT that stays alive until released; `done` counts finished ones. */
struct gate {
	atomic_int release;
	atomic_int started;
	atomic_int done;
};

static void *wait_at_gate(void *arg)
{
	struct gate *g = arg;
	atomic_fetch_add(&g->started, 1);
	while (!atomic_load(&g->release))
		weft_park();
	atomic_fetch_add(&g->done, 1);
	return (void *)77;
}

static void open_gate(struct gate *g, weft_t t)
{
	atomic_store(&g->release, 1);
	WT_OK(weft_unpark(t));
}

/* The same for a detached t, which may see the flag, exit and be gone
 * before the unpark: then ESRCH is right. */
static void open_gate_detached(struct gate *g, weft_t t)
{
	atomic_store(&g->release, 1);
	int r = weft_unpark(t);
	WT_TRUE(r == 0 || r == ESRCH, "weft_unpark returned %s", wt_errname(r));
}

static void test_join_returns_value(void **state)
{
	wt_init(2);
	for (intptr_t i = 0; i < 100; i++) {
		weft_t t = wt_spawn(NULL, return_arg, (void *)(0x1000 + i));
		WT_EQ_PTR(wt_join(t), (void *)(0x1000 + i));
	}
	weft_t t = wt_spawn(NULL, return_arg, NULL);
	WT_OK(weft_join(t, NULL)); /* the value may be ignored */
	WT_OK(weft_shutdown());
}

static atomic_int after_exit;
static volatile int really_exit = 1;

static __attribute__((noinline)) int exit_at_depth(int depth)
{
	if (depth == 0) {
		if (really_exit)
			weft_exit((void *)0xBEEF);
		return 0;
	}
	int r = exit_at_depth(depth - 1);
	atomic_store(&after_exit, 1);
	return r + 1;
}

static void *exit_from_nested(void *arg)
{
	exit_at_depth(10);
	atomic_store(&after_exit, 1);
	return (void *)1;
}

static void test_exit_from_nested_function(void **state)
{
	wt_init(2);
	weft_t t = wt_spawn(NULL, exit_from_nested, NULL);
	WT_EQ_PTR(wt_join(t), (void *)0xBEEF);
	WT_EQ(atomic_load(&after_exit), 0);
	WT_OK(weft_shutdown());
}

static void *join_self(void *arg)
{
	return (void *)(intptr_t)weft_join(weft_self(), NULL);
}

static void test_join_self_edeadlk(void **state)
{
	wt_init(2);
	WT_ERR(weft_join(weft_self(), NULL), EDEADLK); /* the main ULT */
	weft_t t = wt_spawn(NULL, join_self, NULL);
	WT_ERR((intptr_t)wt_join(t), EDEADLK); /* any other ULT */
	WT_OK(weft_shutdown());
}

/* n ULTs, ULT i joins ULT (i+1) % n. */
enum { CYCLE_MAX = 4 };
struct cycle {
	int n;
	weft_t ids[CYCLE_MAX];
	atomic_int go, arrived;
	atomic_int rc[CYCLE_MAX], finished[CYCLE_MAX];
	void *ret[CYCLE_MAX];
};
struct cycle_arg {
	struct cycle *c;
	int i;
};

static void *join_next(void *arg)
{
	struct cycle_arg *a = arg;
	struct cycle *c = a->c;
	while (!atomic_load(&c->go))
		weft_yield();
	atomic_fetch_add(&c->arrived, 1);
	while (atomic_load(&c->arrived) < c->n)
		weft_yield();
	int r = weft_join(c->ids[(a->i + 1) % c->n], &c->ret[a->i]);
	atomic_store(&c->rc[a->i], r);
	atomic_store(&c->finished[a->i], 1);
	return (void *)(intptr_t)(100 + a->i);
}

static void run_cycle(int n)
{
	struct cycle c = {.n = n};
	struct cycle_arg args[CYCLE_MAX];
	for (int i = 0; i < n; i++) {
		args[i] = (struct cycle_arg){&c, i};
		c.ids[i] = wt_spawn(NULL, join_next, &args[i]);
	}
	atomic_store(&c.go, 1);
	for (int i = 0; i < n; i++)
		WT_WAIT(atomic_load(&c.finished[i]), 10);
	bool collected[CYCLE_MAX] = {false};
	int deadlocks = 0;
	for (int i = 0; i < n; i++) {
		int r = atomic_load(&c.rc[i]);
		WT_TRUE(r == 0 || r == EDEADLK, "join %d -> %d returned %s", i, (i + 1) % n,
			wt_errname(r));
		if (r == EDEADLK) {
			deadlocks++;
		} else {
			int j = (i + 1) % n;
			collected[j] = true;
			WT_EQ_PTR(c.ret[i], (void *)(intptr_t)(100 + j));
		}
	}
	WT_CMP(deadlocks, >=, 1);
	for (int i = 0; i < n; i++)
		if (!collected[i])
			WT_EQ_PTR(wt_join(c.ids[i]), (void *)(intptr_t)(100 + i));
}

static void test_join_cycle_of_two_edeadlk(void **state)
{
	wt_init(2);
	for (int round = 0; round < 200; round++)
		run_cycle(2);
	WT_OK(weft_shutdown());
}

/* Long join chains: ULT i joins ULT i+1, which is made after it, so the
 * joins block and their links form a chain that later joins walk for
 * cycles - while the far end finishes, frees its ULTs and, past the stack
 * caches, unmaps their stacks. (A walk that followed a freed ULT's link
 * crashed here.) Several rounds, because the race needs the walk and the
 * unwinding to meet. */
enum { FLAT_CHAIN = 12000 };
static _Atomic weft_t flat_ids[FLAT_CHAIN];

static void *join_next_in_chain(void *arg)
{
	intptr_t i = (intptr_t)arg;
	if (i == FLAT_CHAIN - 1)
		return (void *)1;
	weft_t next;
	while ((next = atomic_load(&flat_ids[i + 1])) == WEFT_NULL)
		weft_yield();
	void *r = NULL;
	WT_OK(weft_join(next, &r));
	return (void *)((intptr_t)r + 1);
}

static void test_long_join_chains(void **state)
{
#if defined(__SANITIZE_THREAD__)
	wt_skip("ThreadSanitizer maps 4-7 regions per ULT (its fiber): vm.max_map_count "
		"caps live ULTs near 8,000 under TSan");
#endif
	wt_init(2);
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < FLAT_CHAIN; i++)
			atomic_store(&flat_ids[i], WEFT_NULL);
		for (intptr_t i = 0; i < FLAT_CHAIN; i++)
			atomic_store(&flat_ids[i], wt_spawn(NULL, join_next_in_chain, (void *)i));
		WT_EQ_PTR(wt_join(atomic_load(&flat_ids[0])), (void *)(intptr_t)FLAT_CHAIN);
	}
	WT_OK(weft_shutdown());
}

static void test_join_cycle_of_three_edeadlk(void **state)
{
	wt_init(3);
	for (int round = 0; round < 200; round++)
		run_cycle(3);
	WT_OK(weft_shutdown());
}

/* Four: the commits that close it must walk past their targets, and those
 * that skip the walk (no joiner registered yet) leave it to a later one. */
static void test_join_cycle_of_four_edeadlk(void **state)
{
	wt_init(2);
	for (int round = 0; round < 200; round++)
		run_cycle(4);
	WT_OK(weft_shutdown());
}

static void test_join_unknown_esrch(void **state)
{
	wt_init(2);
	weft_t t = wt_spawn(NULL, return_arg, NULL); /* the newest id */
	WT_ERR(weft_join(t + 1, NULL), ESRCH);       /* not created yet */
	WT_ERR(weft_join(t + 1000000, NULL), ESRCH);
	WT_ERR(weft_join(UINT64_MAX, NULL), ESRCH);
	WT_ERR(weft_join(WEFT_NULL, NULL), ESRCH); /* never a valid thread */
	wt_join(t);
	WT_OK(weft_shutdown());
}

static void test_join_twice_esrch(void **state)
{
	wt_init(2);
	weft_t t = wt_spawn(NULL, return_arg, (void *)1);
	WT_EQ_PTR(wt_join(t), (void *)1);
	WT_ERR(weft_join(t, NULL), ESRCH);
	/* also after the slot may have been reused by newer threads */
	for (int i = 0; i < 100; i++)
		wt_join(wt_spawn(NULL, return_arg, NULL));
	WT_ERR(weft_join(t, NULL), ESRCH);
	WT_OK(weft_shutdown());
}

/* A joiner that announces itself and then blocks in weft_join(target). */
struct joiner {
	weft_t target;
	atomic_int entering;
	atomic_int rc;
	void *ret;
};

static void *join_target(void *arg)
{
	struct joiner *j = arg;
	atomic_store(&j->entering, 1);
	atomic_store(&j->rc, weft_join(j->target, &j->ret));
	return NULL;
}

/* With one worker and cooperative scheduling, once `entering` is seen the
 * joiner has run on into weft_join and blocked there. */
static void start_blocked_joiner(struct gate *g, struct joiner *j, weft_t *t, weft_t *jt)
{
	wt_init(1);
	*t = wt_spawn(NULL, wait_at_gate, g);
	j->target = *t;
	*jt = wt_spawn(NULL, join_target, j);
	WT_WAIT(atomic_load(&j->entering) && atomic_load(&g->started), 10);
	weft_yield();
}

static void test_join_while_being_joined_einval(void **state)
{
	struct gate g = {0};
	struct joiner j = {0};
	weft_t t, jt;
	start_blocked_joiner(&g, &j, &t, &jt);
	WT_ERR(weft_join(t, NULL), EINVAL);
	open_gate(&g, t);
	wt_join(jt);
	WT_OK(atomic_load(&j.rc));
	WT_EQ_PTR(j.ret, (void *)77);
	WT_OK(weft_shutdown());
}

static void test_detach_while_joined_einval(void **state)
{
	struct gate g = {0};
	struct joiner j = {0};
	weft_t t, jt;
	start_blocked_joiner(&g, &j, &t, &jt);
	WT_ERR(weft_detach(t), EINVAL);
	open_gate(&g, t);
	wt_join(jt);
	WT_OK(atomic_load(&j.rc));
	WT_EQ_PTR(j.ret, (void *)77);
	WT_OK(weft_shutdown());
}

static void test_detach_then_join_einval(void **state)
{
	wt_init(2);
	struct gate g = {0};
	weft_t t = wt_spawn(NULL, wait_at_gate, &g);
	WT_OK(weft_detach(t));
	WT_ERR(weft_join(t, NULL), EINVAL);
	open_gate_detached(&g, t);
	WT_WAIT(atomic_load(&g.done) == 1, 10);
	wt_fini();
}

static void test_detach_twice_einval(void **state)
{
	wt_init(2);
	struct gate g = {0};
	weft_t t = wt_spawn(NULL, wait_at_gate, &g);
	WT_OK(weft_detach(t));
	WT_ERR(weft_detach(t), EINVAL);
	open_gate_detached(&g, t);
	WT_WAIT(atomic_load(&g.done) == 1, 10);
	wt_fini();
}

static void test_detach_unknown_esrch(void **state)
{
	wt_init(2);
	weft_t t = wt_spawn(NULL, return_arg, NULL);
	WT_ERR(weft_detach(t + 1), ESRCH);
	WT_ERR(weft_detach(UINT64_MAX), ESRCH);
	WT_ERR(weft_detach(WEFT_NULL), ESRCH);
	wt_join(t);
	WT_ERR(weft_detach(t), ESRCH); /* joined: gone */
	WT_OK(weft_shutdown());
}

static void *set_flag(void *arg)
{
	atomic_store((atomic_int *)arg, 1);
	return NULL;
}

static void test_detach_after_exit(void **state)
{
	/* Detaching a thread that has already finished frees it. */
	wt_init(2);
	atomic_int flag = 0;
	weft_t t = wt_spawn(NULL, set_flag, &flag);
	WT_WAIT(atomic_load(&flag), 10);
	for (int i = 0; i < 100; i++)
		weft_yield();
	WT_OK(weft_detach(t));
	int r = weft_join(t, NULL);
	WT_TRUE(r == ESRCH || r == EINVAL, "join after detach returned %s", wt_errname(r));
	wt_fini();
}

static void test_created_detached_not_joinable(void **state)
{
	wt_init(2);
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	WT_OK(weft_attr_setdetached(&a, 1));
	struct gate g = {0};
	weft_t t = wt_spawn(&a, wait_at_gate, &g);
	WT_ERR(weft_join(t, NULL), EINVAL);
	WT_ERR(weft_detach(t), EINVAL);
	open_gate_detached(&g, t);
	WT_WAIT(atomic_load(&g.done) == 1, 10);
	WT_OK(weft_attr_destroy(&a));
	wt_fini();
}

static atomic_long detached_count;

static void *count_up(void *arg)
{
	atomic_fetch_add(&detached_count, 1);
	return NULL;
}

static void test_detached_run_and_are_freed(void **state)
{
	/* 100,000 detached ULTs run to completion; they free themselves (if
	 * they did not, shutdown would see them or the stacks would run out).
	 * Under ThreadSanitizer 5,000: each ULT's fiber costs TSan ~0.4 ms. */
#if defined(__SANITIZE_THREAD__)
	enum { N = 5000 };
#else
	enum { N = 100000 };
#endif
	wt_init(0);
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	WT_OK(weft_attr_setdetached(&a, 1));
	for (int i = 0; i < N; i++) {
		weft_t t;
		int r = weft_create(&t, &a, count_up, NULL);
		if (r == EAGAIN || r == ENOMEM) { /* too many alive: let them run */
			weft_yield();
			i--;
			continue;
		}
		WT_OK(r);
	}
	WT_WAIT(atomic_load(&detached_count) == N, 60);
	WT_OK(weft_attr_destroy(&a));
	wt_fini();
	WT_EQ(atomic_load(&detached_count), N);
}

struct self_rec {
	weft_t self;
	int equal_self;
};

static void *record_self(void *arg)
{
	struct self_rec *r = arg;
	r->self = weft_self();
	r->equal_self = weft_equal(weft_self(), r->self);
	return NULL;
}

static void test_self_unique_and_equal(void **state)
{
	enum { N = 200 };
	wt_init(2);
	static struct self_rec rec[N];
	weft_t t[N];
	for (int i = 0; i < N; i++)
		t[i] = wt_spawn(NULL, record_self, &rec[i]);
	for (int i = 0; i < N; i++)
		wt_join(t[i]);
	weft_t me = weft_self();
	WT_CMPU(me, !=, WEFT_NULL);
	for (int i = 0; i < N; i++) {
		WT_EQU(rec[i].self, t[i]);
		WT_CMP(rec[i].equal_self, !=, 0);
		WT_CMPU(rec[i].self, !=, me);
		WT_EQ(weft_equal(me, rec[i].self), 0);
		if (i > 0) {
			WT_CMPU(rec[i].self, !=, rec[i - 1].self);
			WT_EQ(weft_equal(rec[i].self, rec[i - 1].self), 0);
		}
	}
	WT_CMP(weft_equal(me, me), !=, 0);
	WT_OK(weft_shutdown());
}

struct named {
	struct gate g;
	char inside[WEFT_NAME_MAX];
	atomic_int rc;
};

static void *read_own_name(void *arg)
{
	struct named *n = arg;
	atomic_store(&n->rc, weft_getname(weft_self(), n->inside, sizeof n->inside));
	return wait_at_gate(&n->g);
}

static void test_name_set_and_get(void **state)
{
	wt_init(2);
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	WT_OK(weft_attr_setname(&a, "crew-7"));
	struct named n = {.rc = -1};
	weft_t t = wt_spawn(&a, read_own_name, &n);
	WT_OK(weft_attr_destroy(&a));
	WT_WAIT(atomic_load(&n.g.started), 10);
	char buf[WEFT_NAME_MAX];
	WT_OK(weft_getname(t, buf, sizeof buf));
	WT_EQ_STR(buf, "crew-7");
	WT_OK(atomic_load(&n.rc));
	WT_EQ_STR(n.inside, "crew-7");
	/* the longest name survives intact */
	char longest[WEFT_NAME_MAX];
	memset(longest, 'x', sizeof longest - 1);
	longest[WEFT_NAME_MAX - 1] = '\0';
	WT_OK(weft_attr_init(&a));
	WT_OK(weft_attr_setname(&a, longest));
	weft_t u = wt_spawn(&a, return_arg, NULL);
	WT_OK(weft_attr_destroy(&a));
	WT_OK(weft_getname(u, buf, sizeof buf));
	WT_EQ_STR(buf, longest);
	wt_join(u);
	open_gate(&n.g, t);
	wt_join(t);
	WT_OK(weft_shutdown());
}

static void test_getname_small_buffer_erange(void **state)
{
	wt_init(2);
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	WT_OK(weft_attr_setname(&a, "crew-7"));
	struct gate g = {0};
	weft_t t = wt_spawn(&a, wait_at_gate, &g);
	WT_OK(weft_attr_destroy(&a));
	char buf[WEFT_NAME_MAX];
	WT_ERR(weft_getname(t, buf, strlen("crew-7")), ERANGE);
	WT_ERR(weft_getname(t, buf, 1), ERANGE);
	WT_OK(weft_getname(t, buf, strlen("crew-7") + 1));
	WT_EQ_STR(buf, "crew-7");
	open_gate(&g, t);
	wt_join(t);
	WT_OK(weft_shutdown());
}

static void test_getname_unknown_esrch(void **state)
{
	wt_init(2);
	weft_t t = wt_spawn(NULL, return_arg, NULL);
	char buf[WEFT_NAME_MAX];
	WT_ERR(weft_getname(t + 1, buf, sizeof buf), ESRCH);
	wt_join(t);
	WT_ERR(weft_getname(t, buf, sizeof buf), ESRCH);
	WT_OK(weft_shutdown());
}

static void test_ids_increase_in_creation_order(void **state)
{
	enum { N = 1000 };
	wt_init(2);
	weft_t t[N];
	for (int i = 0; i < N; i++) {
		t[i] = wt_spawn(NULL, return_arg, NULL);
		if (i > 0)
			WT_CMPU(t[i], >, t[i - 1]);
	}
	for (int i = 0; i < N; i++)
		wt_join(t[i]);
	weft_t later = wt_spawn(NULL, return_arg, NULL); /* never reused */
	WT_CMPU(later, >, t[N - 1]);
	wt_join(later);
	WT_OK(weft_shutdown());
}

/* Two workers creating at once: every id is distinct, and each creator's
 * ids increase. */
enum { IDS_PER_CREATOR = 700 };
static weft_t ids_made[2][IDS_PER_CREATOR];

static void *make_ids(void *arg)
{
	weft_t *out = arg;
	for (int i = 0; i < IDS_PER_CREATOR; i++) {
		out[i] = wt_spawn(NULL, return_arg, NULL);
		wt_join(out[i]);
	}
	return NULL;
}

static void test_ids_distinct_across_workers(void **state)
{
	wt_init(2);
	weft_t a = wt_spawn_on(0, make_ids, ids_made[0]);
	weft_t b = wt_spawn_on(1, make_ids, ids_made[1]);
	wt_join(a);
	wt_join(b);
	for (int c = 0; c < 2; c++)
		for (int i = 1; i < IDS_PER_CREATOR; i++)
			WT_CMPU(ids_made[c][i], >, ids_made[c][i - 1]);
	for (int i = 0; i < IDS_PER_CREATOR; i++)
		for (int j = 0; j < IDS_PER_CREATOR; j++)
			WT_TRUE(ids_made[0][i] != ids_made[1][j], "id %llu made twice",
				(unsigned long long)ids_made[0][i]);
	WT_OK(weft_shutdown());
}

static void test_20000_alive_parked(void **state)
{
#if defined(__SANITIZE_THREAD__)
	wt_skip("ThreadSanitizer maps 4-7 regions per ULT (its fiber): vm.max_map_count "
		"caps live ULTs near 8,000 under TSan");
#endif
	enum { N = 20000 };
	wt_init(0);
	weft_t *t = calloc(N, sizeof *t);
	assert_non_null(t);
	struct gate g = {0};
	for (int i = 0; i < N; i++)
		t[i] = wt_spawn(NULL, wait_at_gate, &g);
	WT_WAIT(atomic_load(&g.started) == N, 60);
	atomic_store(&g.release, 1);
	for (int i = 0; i < N; i++)
		WT_OK(weft_unpark(t[i]));
	for (int i = 0; i < N; i++)
		WT_EQ_PTR(wt_join(t[i]), (void *)77);
	WT_EQ(atomic_load(&g.done), N);
	free(t);
	WT_OK(weft_shutdown());
}

static void *chain(void *arg)
{
	intptr_t n = (intptr_t)arg;
	if (n == 0)
		return (void *)0;
	weft_t t = wt_spawn(NULL, chain, (void *)(n - 1));
	return (void *)(1 + (intptr_t)wt_join(t));
}

static void test_20000_alive_in_a_join_chain(void **state)
{
#if defined(__SANITIZE_THREAD__)
	wt_skip("ThreadSanitizer maps 4-7 regions per ULT (its fiber): vm.max_map_count "
		"caps live ULTs near 8,000 under TSan");
#endif
	/* ULT i creates ULT i+1 and joins it: all 20,000 are alive at once. */
	wt_init(0);
	weft_t t = wt_spawn(NULL, chain, (void *)20000);
	WT_EQ((intptr_t)wt_join(t), 20000);
	WT_OK(weft_shutdown());
}

/* As chain, with 2 KiB of its stack written and read back across the
 * join: a stack that two ULTs shared, or a descriptor laid over a live
 * stack, would show. */
static void *chain_using_stack(void *arg)
{
	intptr_t n = (intptr_t)arg;
	if (n == 0)
		return (void *)0;
	volatile unsigned char buf[2048];
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (unsigned char)(n + i);
	weft_t t = wt_spawn(NULL, chain_using_stack, (void *)(n - 1));
	intptr_t r = (intptr_t)wt_join(t);
	for (size_t i = 0; i < sizeof buf; i++)
		if (buf[i] != (unsigned char)(n + i))
			return (void *)-1000000;
	return (void *)(1 + r);
}

/* The same on guard-less slab stacks only (src/stack/stack.c), twice: the
 * first chain carves them - with the idle worker laying out the next ones
 * ahead of the creates ("prefilling") - and the second takes them back
 * from the caches. */
static void test_20000_alive_in_a_join_chain_on_slab_stacks(void **state)
{
#if defined(__SANITIZE_THREAD__)
	wt_skip("ThreadSanitizer maps 4-7 regions per ULT (its fiber): vm.max_map_count "
		"caps live ULTs near 8,000 under TSan");
#endif
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	c.workers = 2;
	c.guarded_stacks_max = -1;
	WT_OK(weft_init(&c));
	for (int round = 0; round < 2; round++) {
		weft_t t = wt_spawn(NULL, chain_using_stack, (void *)20000);
		WT_EQ((intptr_t)wt_join(t), 20000);
	}
	WT_OK(weft_shutdown());
}

static void *fib(void *arg)
{
	intptr_t n = (intptr_t)arg;
	if (n < 2)
		return (void *)n;
	weft_t a = wt_spawn(NULL, fib, (void *)(n - 1));
	weft_t b = wt_spawn(NULL, fib, (void *)(n - 2));
	intptr_t x = (intptr_t)wt_join(a);
	intptr_t y = (intptr_t)wt_join(b);
	return (void *)(x + y);
}

static void test_recursive_fork_join_fib(void **state)
{
	wt_init(0);
	weft_t t = wt_spawn(NULL, fib, (void *)15);
	WT_EQ((intptr_t)wt_join(t), 610);
	WT_OK(weft_shutdown());
}

struct frame_rec {
	uintptr_t frame;
	long burnt;
};

static void *record_frame(void *arg)
{
	struct frame_rec *r = arg;
	r->frame = (uintptr_t)__builtin_frame_address(0);
	r->burnt = wt_burn_stack(16 * 1024);
	return (void *)0x5;
}

static void test_user_stack(void **state)
{
	enum { N = 128 * 1024 };
	wt_init(2);
	char *mem = malloc(N);
	assert_non_null(mem);
	memset(mem, 0xA5, N);
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	WT_OK(weft_attr_setstack(&a, mem, N));
	for (int round = 0; round < 3; round++) { /* the same stack, again */
		struct frame_rec r = {0};
		weft_t t = wt_spawn(&a, record_frame, &r);
		WT_EQ_PTR(wt_join(t), (void *)0x5);
		WT_CMPU(r.frame, >=, (uintptr_t)mem);
		WT_CMPU(r.frame, <, (uintptr_t)mem + N);
	}
	WT_OK(weft_attr_destroy(&a));
	WT_OK(weft_shutdown());
	/* weft neither freed nor unmapped it: it is still ours to use and free */
	memset(mem, 0x5A, N);
	free(mem);
}

static void test_custom_stack_size(void **state)
{
	/* ~200 KiB of recursion in a 512 KiB stack (the default is 64 KiB). */
	wt_init(2);
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	WT_OK(weft_attr_setstacksize(&a, 512 * 1024));
	for (int i = 0; i < 4; i++) {
		weft_t t = wt_spawn(&a, wt_burn_stack_ult, (void *)(200 * 1024));
		wt_join(t);
	}
	WT_OK(weft_attr_destroy(&a));
	WT_OK(weft_shutdown());
}

/* Exhaustion is an error code, never an abort: with the address space
 * capped, creating ULTs that stay alive must end in ENOMEM or EAGAIN, and
 * the runtime must work normally once they are gone. */
static atomic_int exhaust_release;

static void *park_until_released(void *arg)
{
	while (!atomic_load(&exhaust_release))
		weft_park();
	return arg;
}

static long vm_size_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "VmSize: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

/* A kernel thread's first malloc reserves a glibc arena (64 MiB of address
 * space, more while it is aligned): done by each worker before the cap is
 * measured, so that creating from either worker only needs stacks. */
static void *malloc_once(void *arg)
{
	free(malloc(64));
	return arg;
}

static void test_exhaustion_returns_error(void **state)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	wt_skip("the sanitizer reserves its shadow memory: an address-space cap breaks it");
#endif
	wt_init(2);
	for (int i = 0; i < weft_num_workers(); i++)
		wt_join(wt_spawn_on(i, malloc_once, NULL));
	long kb = vm_size_kb();
	WT_CMP(kb, >, 0);
	struct rlimit rl = {.rlim_cur = (rlim_t)(kb + 128 * 1024) * 1024,
			    .rlim_max = RLIM_INFINITY};
	WT_EQ(setrlimit(RLIMIT_AS, &rl), 0);

	enum { MAX = 100000 };
	static weft_t ids[MAX];
	int n = 0, r = 0;
	while (n < MAX && (r = weft_create(&ids[n], NULL, park_until_released, NULL)) == 0)
		n++;
	WT_TRUE(r == ENOMEM || r == EAGAIN, "weft_create under an address-space cap returned %s",
		wt_errname(r));
	WT_CMP(n, >, 100); /* 128 MiB hold a good number of 64 KiB stacks */

	atomic_store(&exhaust_release, 1);
	for (int i = 0; i < n; i++)
		WT_OK(weft_unpark(ids[i]));
	for (int i = 0; i < n; i++)
		WT_OK(weft_join(ids[i], NULL));
	/* Their stacks are cached again: creating works. */
	weft_t t = wt_spawn(NULL, return_arg, (void *)7);
	void *v = NULL;
	WT_OK(weft_join(t, &v));
	WT_EQ_PTR(v, (void *)7);
	WT_OK(weft_shutdown());
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_join_returns_value),
		cmocka_unit_test(test_exit_from_nested_function),
		cmocka_unit_test(test_join_self_edeadlk),
		cmocka_unit_test(test_join_cycle_of_two_edeadlk),
		cmocka_unit_test(test_join_cycle_of_three_edeadlk),
		cmocka_unit_test(test_join_cycle_of_four_edeadlk),
		cmocka_unit_test(test_long_join_chains),
		cmocka_unit_test(test_join_unknown_esrch),
		cmocka_unit_test(test_join_twice_esrch),
		cmocka_unit_test(test_join_while_being_joined_einval),
		cmocka_unit_test(test_detach_while_joined_einval),
		cmocka_unit_test(test_detach_then_join_einval),
		cmocka_unit_test(test_detach_twice_einval),
		cmocka_unit_test(test_detach_unknown_esrch),
		cmocka_unit_test(test_detach_after_exit),
		cmocka_unit_test(test_created_detached_not_joinable),
		cmocka_unit_test(test_detached_run_and_are_freed),
		cmocka_unit_test(test_self_unique_and_equal),
		cmocka_unit_test(test_name_set_and_get),
		cmocka_unit_test(test_getname_small_buffer_erange),
		cmocka_unit_test(test_getname_unknown_esrch),
		cmocka_unit_test(test_ids_increase_in_creation_order),
		cmocka_unit_test(test_ids_distinct_across_workers),
		cmocka_unit_test(test_20000_alive_parked),
		cmocka_unit_test(test_20000_alive_in_a_join_chain),
		cmocka_unit_test(test_20000_alive_in_a_join_chain_on_slab_stacks),
		cmocka_unit_test(test_recursive_fork_join_fib),
		cmocka_unit_test(test_user_stack),
		cmocka_unit_test(test_custom_stack_size),
		cmocka_unit_test(test_exhaustion_returns_error),
	};
	return WT_RUN(argc, argv, tests);
}
