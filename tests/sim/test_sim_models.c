/* The benchmark models (bench/sim/models.c) on every backend and simcpus
 * print the same checksum and simulated time - and the values expected from
 * computing each model's result directly, without a simulator. Small sizes;
 * `weft-bench sim` runs the same models at full size. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#include <weft/sim.h>

#include "models.h"

static const int sim_backends[] = {WSIM_BACKEND_POSIX, WSIM_BACKEND_LITE, WSIM_BACKEND_CONTEXT,
				   WSIM_BACKEND_QUICK, WSIM_BACKEND_HYBRID};

/* Run model at size on every backend that can, with simcpus 1 and 2. */
static void check_everywhere(const char *model, double size, const int *backends, int nb,
			     model_result_t want)
{
	for (int i = 0; i < nb; i++) {
		for (int cpus = 1; cpus <= 2; cpus++) {
			if (cpus > wsim_backend_max_simcpus(backends[i]))
				continue;
			model_result_t got = {0};
			int r = model_run(model, backends[i], cpus, size, &got);
			if (r)
				fail_msg("%s on %s/%d: %s", model, wsim_backend_name(backends[i]),
					 cpus, wt_errname(r));
			if (got.checksum != want.checksum || got.sim_time != want.sim_time)
				fail_msg("%s on %s/%d: checksum %016llx sim_time %llu, expected "
					 "%016llx %llu",
					 model, wsim_backend_name(backends[i]), cpus,
					 (unsigned long long)got.checksum,
					 (unsigned long long)got.sim_time,
					 (unsigned long long)want.checksum,
					 (unsigned long long)want.sim_time);
		}
	}
}

static void test_prodcons(void **state)
{
	long n = 1000; /* 50000 x 0.02 */
	int8_t c = 42;
	int16_t s = 42;
	int32_t i = 42;
	int64_t l = 42;
	uint64_t h = FNV_OFFSET;
	for (long k = 0; k < n; k++) {
		h = fnv_u64(h, (uint64_t)(int64_t)c);
		h = fnv_u64(h, (uint64_t)(int64_t)s);
		h = fnv_u64(h, (uint64_t)(int64_t)i);
		h = fnv_u64(h, (uint64_t)l);
		c = (int8_t)(uint8_t)(c + 1);
		s = (int16_t)(uint16_t)(s + 1);
		i = (int32_t)((uint32_t)i + 1);
		l = (int64_t)((uint64_t)l + 1);
	}
	check_everywhere("prodcons", 0.02, sim_backends, 5,
			 (model_result_t){h, (uint64_t)(40 * n)});
}

static void test_fibo20(void **state)
{
	/* 50 x 0.04 = 2 rounds of 20 x fib(25) = 75025 */
	check_everywhere("fibo20", 0.04, sim_backends, 5,
			 (model_result_t){fnv_u64(FNV_OFFSET, 2ull * 20 * 75025), 0});
}

static void test_tfmul(void **state)
{
	/* 200 x 0.01 = 2 rounds of 100 behaviors; each of the 10 instances
	 * multiplies 1000 times in its first run only. */
	volatile double f = 1.2;
	for (int k = 0; k < 1000; k++)
		f *= 1.1;
	double fd = f;
	uint64_t bits, h = fnv_u64(FNV_OFFSET, 200);
	memcpy(&bits, &fd, sizeof bits);
	for (int k = 0; k < 10; k++)
		h = fnv_u64(h, bits);
	check_everywhere("tfmul", 0.01, sim_backends, 5, (model_result_t){h, 0});
}

static const int native_backends[] = {WSIM_BACKEND_POSIX, WSIM_BACKEND_HYBRID};

static void test_master_worker(void **state)
{
	/* 10 x 0.1 = 1 round; the workers share 4,000,000 iterations. */
	model_result_t want = {fnv_u64(FNV_OFFSET, 4000000), 0};
	check_everywhere("mw4", 0.1, native_backends, 2, want);
	check_everywhere("mw40", 0.1, native_backends, 2, want);
	check_everywhere("mw400", 0.1, native_backends, 2, want);
}

static void test_join_chain(void **state)
{
	/* 50 x 0.2 = 10 rounds of a chain of n: each ends with n. */
	check_everywhere("jc40", 0.2, native_backends, 2,
			 (model_result_t){fnv_u64(FNV_OFFSET, 10 * 40), 0});
	check_everywhere("jc400", 0.2, native_backends, 2,
			 (model_result_t){fnv_u64(FNV_OFFSET, 10 * 400), 0});
}

static void test_unknown_model_and_rows(void **state)
{
	model_result_t r;
	WT_ERR(model_run("nosuch", WSIM_BACKEND_QUICK, 1, 1, &r), EINVAL);
	WT_ERR(model_run("prodcons", WSIM_BACKEND_QUICK, 1, 0, &r), EINVAL);
	WT_ERR(model_run("mw4", WSIM_BACKEND_QUICK, 1, 0.1, &r),
	       EINVAL); /* native: posix, hybrid */
	WT_ERR(model_run("prodcons", WSIM_BACKEND_QUICK, 2, 0.02, &r), EINVAL); /* sequential */
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prodcons),   cmocka_unit_test(test_fibo20),
		cmocka_unit_test(test_tfmul),      cmocka_unit_test(test_master_worker),
		cmocka_unit_test(test_join_chain), cmocka_unit_test(test_unknown_model_and_rows),
	};
	return WT_RUN(argc, argv, tests);
}
