/* Death tests: a ULT that overflows or smashes its stack makes the process
 * abort with a message on stderr naming the ULT (its decimal id and its
 * name). Each case runs weft in a child process (wt_run_child) whose stderr
 * is captured; the test process itself never initialises weft.
 *
 *   guard page  a 16 KiB guarded stack, infinite recursion: the guard-page
 *               SIGSEGV is reported.
 *   slab        guard-less slab stacks (guarded_stacks_max < 0, or
 *               WEFT_GUARDED_STACKS=0): recursion a little past the bottom
 *               smashes the canary at the lowest word, reported when the
 *               ULT next switches away.
 *   user stack  a caller-owned stack with its lowest word overwritten.
 */
#include "harness.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#define ULT_NAME "deep-diver"

enum fault_kind { FAULT_GUARD, FAULT_DEFAULT_GUARD, FAULT_SLAB, FAULT_SLAB_ENV, FAULT_USER_STACK };

static atomic_int go;
static char *user_stack;
enum { USER_STACK_SIZE = 64 * 1024 };

/* Recursion that writes every byte of its frames (no ASan redzones, which
 * would leave bytes unwritten). Stops once its frame is below limit (never
 * when limit is 0). Not seen by TSan either: past the bottom it writes into
 * the next slab stack, another ULT's, on purpose - the canary must report
 * it, not a data race. */
static __attribute__((noinline, no_sanitize_address, no_sanitize_thread)) long dive(uintptr_t limit)
{
	volatile char buf[240];
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (char)(0xA5 ^ i);
	if (limit && (uintptr_t)__builtin_frame_address(0) < limit)
		return buf[7];
	return dive(limit) + buf[(uintptr_t)limit % sizeof buf];
}

static void *misbehave(void *arg)
{
	enum fault_kind kind = (enum fault_kind)(intptr_t)arg;
	while (!atomic_load(&go))
		weft_yield();
	/* The stack is WEFT_STACK_MIN bytes with the descriptor at its top and
	 * this frame just below, so everything under frame - WEFT_STACK_MIN is
	 * past the bottom. */
	uintptr_t frame = (uintptr_t)__builtin_frame_address(0);
	switch (kind) {
	case FAULT_GUARD:
	case FAULT_DEFAULT_GUARD:
		dive(0);
		break;
	case FAULT_SLAB:
	case FAULT_SLAB_ENV:
		dive(frame - WEFT_STACK_MIN - 64);
		break;
	case FAULT_USER_STACK:
		*(volatile uint64_t *)user_stack ^= ~(uint64_t)0;
		break;
	}
	weft_yield();
	return NULL; /* exiting switches away too: the canary must be checked */
}

static void *wait_forever(void *arg)
{
	for (;;)
		weft_park();
	return NULL;
}

/* ULTs that parked so far, on every worker. */
static uint64_t parks(void)
{
	uint64_t n = 0;
	for (int i = 0; i < weft_num_workers(); i++) {
		weft_worker_stats_t st;
		if (weft_worker_stats(i, &st) == 0)
			n += st.parks;
	}
	return n;
}

static void fault_child(void *arg)
{
	enum fault_kind kind = (enum fault_kind)(intptr_t)arg;
	if (kind == FAULT_SLAB_ENV) {
		setenv("WEFT_GUARDED_STACKS", "0", 1); /* 0 there: no guard pages */
		setenv("WEFT_STACK_SIZE", "16384", 1);
	}
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	c.workers = 2;
	if (kind == FAULT_SLAB) {
		/* Default-size stacks come from slabs once no guarded ones may
		 * be made; make the default 16 KiB and allow no guards. */
		c.guarded_stacks_max = -1;
		c.stack_size = WEFT_STACK_MIN;
	}
	if (kind == FAULT_DEFAULT_GUARD)
		c.stack_size = WEFT_STACK_MIN; /* a default-size stack, 16 KiB */
	WT_OK(weft_init(&c));
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	WT_OK(weft_attr_setname(&a, ULT_NAME));
	if (kind == FAULT_GUARD)
		WT_OK(weft_attr_setstacksize(&a, WEFT_STACK_MIN));
	if (kind == FAULT_USER_STACK) {
		user_stack = malloc(USER_STACK_SIZE);
		assert_non_null(user_stack);
		WT_OK(weft_attr_setstack(&a, user_stack, USER_STACK_SIZE));
	}
	if (kind == FAULT_SLAB || kind == FAULT_SLAB_ENV || kind == FAULT_DEFAULT_GUARD) {
		/* Not the lowest stack of its slab: what lies below it is
		 * another stack, not whatever is mapped below the slab. */
		wt_spawn(NULL, wait_forever, NULL);
		wt_spawn(NULL, wait_forever, NULL);
		/* Parked before the smash: a neighbour still running (a loaded
		 * machine) would resume on the saved context the smash wrote
		 * over, and fault before the canary is looked at. */
		WT_WAIT(parks() >= 2, 10);
		weft_sleep_ns(5000000);
	}
	weft_t t = wt_spawn(&a, misbehave, (void *)(intptr_t)kind);
	printf("id=%" PRIu64 "\n", t);
	fflush(stdout);
	atomic_store(&go, 1);
	weft_join(t, NULL);
	printf("survived\n");
}

/* Does s contain "ULT <id>" not followed by another digit? */
static bool names_id(const char *s, uint64_t id)
{
	char want[40];
	int n = snprintf(want, sizeof want, "ULT %" PRIu64, id);
	for (const char *p = strstr(s, want); p; p = strstr(p + 1, want))
		if (p[n] < '0' || p[n] > '9')
			return true;
	return false;
}

static void expect_abort_naming_ult(enum fault_kind kind, const char *word)
{
	struct wt_child c;
	wt_run_child(fault_child, (void *)(intptr_t)kind, 30, &c);
	char how[96];
	uint64_t id = 0;
	const char *line = strstr(c.out, "id=");
	if (!line || sscanf(line, "id=%" SCNu64, &id) != 1)
		fail_msg("child (%s) printed no ULT id; stdout:\n%s\nstderr:\n%s",
			 wt_describe_status(c.status, how, sizeof how), c.out, c.err);
	if (!WIFSIGNALED(c.status) || WTERMSIG(c.status) != SIGABRT)
		fail_msg("child %s, expected it to abort; stderr:\n%s",
			 wt_describe_status(c.status, how, sizeof how), c.err);
	WT_TRUE(names_id(c.err, id), "stderr does not name \"ULT %" PRIu64 "\":\n%s", id, c.err);
	WT_TRUE(strstr(c.err, ULT_NAME) != NULL, "stderr does not name \"%s\":\n%s", ULT_NAME,
		c.err);
	if (word)
		WT_TRUE(strstr(c.err, word) != NULL, "stderr does not say \"%s\":\n%s", word,
			c.err);
	printf("the child said: %s", c.err);
	wt_child_free(&c);
}

static void test_guard_page_overflow_aborts_naming_ult(void **state)
{
	expect_abort_naming_ult(FAULT_GUARD, NULL);
}

/* A stack of the default size, made while the guard budget lasts: a
 * guarded mapping of its own, among other ULTs' stacks. */
static void test_default_stack_overflow_hits_its_guard_naming_ult(void **state)
{
	expect_abort_naming_ult(FAULT_DEFAULT_GUARD, "guard page hit");
}

static void test_slab_stack_canary_smash_aborts_naming_ult(void **state)
{
	expect_abort_naming_ult(FAULT_SLAB, "canary");
}

static void test_slab_stack_canary_smash_via_env_aborts_naming_ult(void **state)
{
	expect_abort_naming_ult(FAULT_SLAB_ENV, "canary");
}

static void test_user_stack_canary_smash_aborts_naming_ult(void **state)
{
	expect_abort_naming_ult(FAULT_USER_STACK, "canary");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_guard_page_overflow_aborts_naming_ult),
		cmocka_unit_test(test_default_stack_overflow_hits_its_guard_naming_ult),
		cmocka_unit_test(test_slab_stack_canary_smash_aborts_naming_ult),
		cmocka_unit_test(test_slab_stack_canary_smash_via_env_aborts_naming_ult),
		cmocka_unit_test(test_user_stack_canary_smash_aborts_naming_ult),
	};
	return WT_RUN(argc, argv, tests);
}
