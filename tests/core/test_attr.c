/* weft_attr_*: defaults, setters and getters, and the EINVAL/ERANGE cases.
 * Most tests need no runtime; those that create a ULT initialise it and shut
 * it down. */
#include "harness.h"

#include <stdlib.h>
#include <unistd.h>

static void *return_arg(void *arg)
{
	return arg;
}

static void test_init_defaults(void **state)
{
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	int detached = -7, worker = -7;
	WT_OK(weft_attr_getdetached(&a, &detached));
	WT_EQ(detached, 0);
	WT_OK(weft_attr_getworker(&a, &worker));
	WT_EQ(worker, -1);
	size_t n = 12345;
	WT_OK(weft_attr_getstacksize(&a, &n));
	/* The default is the runtime's (0 may stand for "the configured one"). */
	WT_TRUE(n == 0 || n >= WEFT_STACK_MIN, "default stack size %zu", n);
	WT_OK(weft_attr_destroy(&a));
}

static void test_null_attr_einval(void **state)
{
	size_t n;
	int v;
	WT_ERR(weft_attr_init(NULL), EINVAL);
	WT_ERR(weft_attr_destroy(NULL), EINVAL);
	WT_ERR(weft_attr_setstacksize(NULL, 65536), EINVAL);
	WT_ERR(weft_attr_getstacksize(NULL, &n), EINVAL);
	WT_ERR(weft_attr_setstack(NULL, &v, 65536), EINVAL);
	WT_ERR(weft_attr_setdetached(NULL, 1), EINVAL);
	WT_ERR(weft_attr_getdetached(NULL, &v), EINVAL);
	WT_ERR(weft_attr_setname(NULL, "x"), EINVAL);
	WT_ERR(weft_attr_setworker(NULL, 0), EINVAL);
	WT_ERR(weft_attr_getworker(NULL, &v), EINVAL);
}

static void test_null_out_pointer_einval(void **state)
{
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	WT_ERR(weft_attr_getstacksize(&a, NULL), EINVAL);
	WT_ERR(weft_attr_getdetached(&a, NULL), EINVAL);
	WT_ERR(weft_attr_getworker(&a, NULL), EINVAL);
	WT_ERR(weft_attr_setname(&a, NULL), EINVAL);
	WT_OK(weft_attr_destroy(&a));
}

static void test_stacksize_rounded_to_page(void **state)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	size_t want[] = {WEFT_STACK_MIN, WEFT_STACK_MIN + 1, 100000, 1u << 20};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		size_t n = 0;
		WT_OK(weft_attr_setstacksize(&a, want[i]));
		WT_OK(weft_attr_getstacksize(&a, &n));
		WT_EQU(n, (want[i] + page - 1) / page * page);
	}
	WT_OK(weft_attr_destroy(&a));
}

static void test_stacksize_below_min_einval(void **state)
{
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	WT_OK(weft_attr_setstacksize(&a, 1u << 20));
	WT_ERR(weft_attr_setstacksize(&a, WEFT_STACK_MIN - 1), EINVAL);
	WT_ERR(weft_attr_setstacksize(&a, 0), EINVAL);
	WT_ERR(weft_attr_setstacksize(&a, 1), EINVAL);
	size_t n = 0;
	WT_OK(weft_attr_getstacksize(&a, &n));
	WT_EQU(n, 1u << 20); /* a rejected value changes nothing */
	WT_OK(weft_attr_destroy(&a));
}

static void test_setstack_bad_einval(void **state)
{
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	void *mem = malloc(WEFT_STACK_MIN);
	assert_non_null(mem);
	WT_ERR(weft_attr_setstack(&a, NULL, 1u << 20), EINVAL);
	WT_ERR(weft_attr_setstack(&a, mem, WEFT_STACK_MIN - 1), EINVAL);
	WT_ERR(weft_attr_setstack(&a, mem, 0), EINVAL);
	WT_OK(weft_attr_setstack(&a, mem, WEFT_STACK_MIN));
	WT_OK(weft_attr_destroy(&a));
	free(mem);
}

static void test_detached_roundtrip_and_bad_value(void **state)
{
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	int d = -1;
	WT_OK(weft_attr_setdetached(&a, 1));
	WT_OK(weft_attr_getdetached(&a, &d));
	WT_EQ(d, 1);
	WT_OK(weft_attr_setdetached(&a, 0));
	WT_OK(weft_attr_getdetached(&a, &d));
	WT_EQ(d, 0);
	WT_ERR(weft_attr_setdetached(&a, 2), EINVAL);
	WT_ERR(weft_attr_setdetached(&a, -1), EINVAL);
	WT_OK(weft_attr_getdetached(&a, &d));
	WT_EQ(d, 0);
	WT_OK(weft_attr_destroy(&a));
}

static void test_worker_roundtrip_and_bad_value(void **state)
{
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	int w = 99;
	WT_OK(weft_attr_setworker(&a, 3));
	WT_OK(weft_attr_getworker(&a, &w));
	WT_EQ(w, 3);
	/* Too large is only known at create time; the attr accepts it. */
	WT_OK(weft_attr_setworker(&a, 100000));
	WT_OK(weft_attr_getworker(&a, &w));
	WT_EQ(w, 100000);
	WT_OK(weft_attr_setworker(&a, -1));
	WT_OK(weft_attr_getworker(&a, &w));
	WT_EQ(w, -1);
	WT_ERR(weft_attr_setworker(&a, -2), EINVAL);
	WT_ERR(weft_attr_setworker(&a, -1000), EINVAL);
	WT_OK(weft_attr_getworker(&a, &w));
	WT_EQ(w, -1);
	WT_OK(weft_attr_destroy(&a));
}

static void test_name_length_limit(void **state)
{
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	char name[WEFT_NAME_MAX + 2];
	memset(name, 'n', sizeof name);
	name[WEFT_NAME_MAX - 1] = '\0'; /* longest that fits */
	WT_OK(weft_attr_setname(&a, name));
	name[WEFT_NAME_MAX - 1] = 'n';
	name[WEFT_NAME_MAX] = '\0'; /* WEFT_NAME_MAX chars: one too many */
	WT_ERR(weft_attr_setname(&a, name), ERANGE);
	name[WEFT_NAME_MAX + 1] = '\0';
	WT_ERR(weft_attr_setname(&a, name), ERANGE);
	WT_OK(weft_attr_setname(&a, ""));
	WT_OK(weft_attr_destroy(&a));
}

static void test_zeroed_attr_rejected_by_create(void **state)
{
	wt_init(2);
	weft_attr_t a;
	memset(&a, 0, sizeof a);
	weft_t t = WEFT_NULL;
	WT_ERR(weft_create(&t, &a, return_arg, NULL), EINVAL);
	/* The runtime still works afterwards. */
	weft_t u = wt_spawn(NULL, return_arg, (void *)7);
	WT_EQ_PTR(wt_join(u), (void *)7);
	WT_OK(weft_shutdown());
}

static void test_zeroed_attr_rejected_by_accessors(void **state)
{
	weft_attr_t a;
	memset(&a, 0, sizeof a);
	size_t n;
	int v;
	WT_ERR(weft_attr_setstacksize(&a, 65536), EINVAL);
	WT_ERR(weft_attr_getstacksize(&a, &n), EINVAL);
	WT_ERR(weft_attr_setdetached(&a, 1), EINVAL);
	WT_ERR(weft_attr_getdetached(&a, &v), EINVAL);
	WT_ERR(weft_attr_setworker(&a, 0), EINVAL);
	WT_ERR(weft_attr_getworker(&a, &v), EINVAL);
	WT_ERR(weft_attr_setname(&a, "x"), EINVAL);
}

static void test_create_null_fn_einval(void **state)
{
	wt_init(2);
	weft_t t = WEFT_NULL;
	WT_ERR(weft_create(&t, NULL, NULL, NULL), EINVAL);
	WT_OK(weft_shutdown());
}

static void test_attr_not_needed_after_create(void **state)
{
	/* weft_create copies the attributes: changing or destroying the attr
	 * afterwards does not affect the ULT. */
	wt_init(2);
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	WT_OK(weft_attr_setname(&a, "first"));
	weft_t t = wt_spawn(&a, return_arg, (void *)1);
	WT_OK(weft_attr_setname(&a, "second"));
	WT_OK(weft_attr_setdetached(&a, 1));
	WT_OK(weft_attr_destroy(&a));
	memset(&a, 0xff, sizeof a);
	char buf[WEFT_NAME_MAX];
	WT_OK(weft_getname(t, buf, sizeof buf));
	WT_EQ_STR(buf, "first");
	WT_EQ_PTR(wt_join(t), (void *)1); /* still joinable */
	WT_OK(weft_shutdown());
}

static void test_huge_stack_fails_cleanly(void **state)
{
	/* Exhaustion is an error code, never an abort. 2^62 bytes cannot be
	 * mapped on any current machine. */
	wt_init(2);
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	int r = weft_attr_setstacksize(&a, (size_t)1 << 62);
	if (r == 0) {
		weft_t t = WEFT_NULL;
		r = weft_create(&t, &a, return_arg, NULL);
		WT_TRUE(r == ENOMEM || r == EAGAIN,
			"weft_create with a 2^62-byte stack returned %s", wt_errname(r));
	} else {
		WT_ERR(r, EINVAL);
	}
	WT_OK(weft_attr_destroy(&a));
	weft_t u = wt_spawn(NULL, return_arg, (void *)3);
	WT_EQ_PTR(wt_join(u), (void *)3);
	WT_OK(weft_shutdown());
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_defaults),
		cmocka_unit_test(test_null_attr_einval),
		cmocka_unit_test(test_null_out_pointer_einval),
		cmocka_unit_test(test_stacksize_rounded_to_page),
		cmocka_unit_test(test_stacksize_below_min_einval),
		cmocka_unit_test(test_setstack_bad_einval),
		cmocka_unit_test(test_detached_roundtrip_and_bad_value),
		cmocka_unit_test(test_worker_roundtrip_and_bad_value),
		cmocka_unit_test(test_name_length_limit),
		cmocka_unit_test(test_zeroed_attr_rejected_by_create),
		cmocka_unit_test(test_zeroed_attr_rejected_by_accessors),
		cmocka_unit_test(test_create_null_fn_einval),
		cmocka_unit_test(test_attr_not_needed_after_create),
		cmocka_unit_test(test_huge_stack_fails_cleanly),
	};
	return WT_RUN(argc, argv, tests);
}
