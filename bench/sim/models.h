/* The models of weft's main benchmark (`weft-bench sim`), written once
 * against weft/sim.h (and, for the two thread-library benchmarks, against
 * pthreads and weft's native API).
 *
 * Simulation models (seeds 000 and 001), run on every backend:
 *   prodcons  Producer-Consumer, seed 001 listing A.1: a producer sends
 *             N x (char, short, int, long long) over four typed double
 *             handshakes, each preceded by waitfor(10); a consumer receives
 *             them; a monitor waits for the consumer's "done" handshake.
 *             N = 50000 x size. sim_time = 40 N.
 *   fibo20    seed 000 listing 2: L rounds of par { 20 x fib(25) }.
 *             L = 50 x size. sim_time = 0.
 *   tfmul     seed 001 listing A.2: M rounds of 19 par blocks of 1-10 Fmul
 *             behaviors (100 per round) with mallocs and frees between.
 *             Each of the 10 Fmul instances keeps its members (i, f) from
 *             one run to the next, as SpecC behavior instances do: only an
 *             instance's first run multiplies (1000 times); later runs find
 *             i == 1000 and return - the model measures thread creation and
 *             deletion, as the seed meant it to. M = 200 x size.
 * Thread-library models (seed 003 ch. 5), run on posix and hybrid only:
 *   mw4, mw40, mw400   master/worker: R rounds of "create N workers, join
 *             them"; the N workers share 4,000,000 iterations of a
 *             volatile countdown (seed 003 listing E.1). R = 10 x size.
 *   jc40, jc400        join chain: R rounds of "create N threads; thread x
 *             joins thread x-1 and returns its value + 1; join the last"
 *             (seed 003 listing F.1). R = 50 x size.
 *
 * Checksums (64-bit FNV-1a over the values named) must be equal on every
 * backend and simcpus: prodcons - every value the consumer received,
 * sign-extended to 64 bits; fibo20 - the sum of all results; tfmul - the
 * number of behavior runs, then the bits of each instance's final f;
 * mw - the sum of the iterations the workers did; jc - the sum of the
 * chains' results. The SystemC versions (systemc_models.cc) compute the
 * same. */
#ifndef WEFT_BENCH_SIM_MODELS_H
#define WEFT_BENCH_SIM_MODELS_H

#include <stdint.h>

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME  0x100000001b3ull

static inline uint64_t fnv_u64(uint64_t h, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		h ^= (v >> (8 * i)) & 0xff;
		h *= FNV_PRIME;
	}
	return h;
}

typedef struct model_result {
	uint64_t checksum;
	uint64_t sim_time;
} model_result_t;

/* The models' names, NULL-terminated. */
extern const char *const model_names[];

/* 1 if `model` is a simulation model (runs on every backend). -1 unknown. */
int model_is_sim(const char *model);

/* Run model on backend (enum wsim_backend) with simcpus at the given size.
 * 0, or an errno value (EINVAL for an unknown model or a backend the model
 * does not run on). */
int model_run(const char *model, int backend, int simcpus, double size, model_result_t *out);

#endif
