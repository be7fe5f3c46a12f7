// px_blackscholes: a blackscholes-style data-parallel kernel (PARSEC blackscholes, seed 003
// §6.2) written as a plain pthread program, for weft's POSIX layer evidence.
//
// A fixed-seed generator makes the option set; N workers each price a contiguous slice, for
// several rounds, with a barrier between rounds. Round r prices every option at a spot price
// nudged by round r-1's price of another option (in another slice), so the barrier is needed
// for the answer to be right: a barrier that lets a thread through early changes the output.
// The thread that the barrier names the serial thread sums the finished round in index order.
// Every price depends only on its inputs, so the output is bit-identical for any thread count
// and any schedule; at the end the main thread repeats the whole computation serially and
// compares bit for bit.
//
// Usage: px_blackscholes [threads (8)] [options (200000)] [rounds (10)]
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct option {
	double spot, strike, rate, vol, time;
	int call;
};

struct shared {
	const struct option *opts;
	long n;
	int rounds;
	double *buf[2]; // round r writes buf[r % 2] and reads buf[(r + 1) % 2]
	double *round_sum;
	pthread_barrier_t barrier;
};

struct worker {
	struct shared *sh;
	long begin, end;
	pthread_t tid;
};

static uint64_t rng_state = 0x5eedb1ac5c0135ULL;

// splitmix64: a fixed sequence on every platform.
static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double rng_uniform(double lo, double hi)
{
	return lo + (hi - lo) * ((double)(rng_next() >> 11) * 0x1p-53);
}

// Cumulative normal distribution, the polynomial approximation PARSEC uses.
static double cndf(double x)
{
	int negative = x < 0.0;
	if (negative)
		x = -x;
	double k = 1.0 / (1.0 + 0.2316419 * x);
	double poly =
		k * (0.319381530 +
		     k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429))));
	double n = 1.0 - exp(-0.5 * x * x) * 0.39894228040143270286 * poly;
	return negative ? 1.0 - n : n;
}

static double black_scholes(double s, double k, double r, double v, double t, int call)
{
	double sqrt_t = sqrt(t);
	double d1 = (log(s / k) + (r + 0.5 * v * v) * t) / (v * sqrt_t);
	double d2 = d1 - v * sqrt_t;
	double discounted = k * exp(-r * t);
	if (call)
		return s * cndf(d1) - discounted * cndf(d2);
	return discounted * (1.0 - cndf(d2)) - s * (1.0 - cndf(d1));
}

// The price of option i in round r, given round r-1's prices (zeros before round 0).
static double price_one(const struct option *opts, long n, const double *prev, int r, long i)
{
	const struct option *o = &opts[i];
	long j = (long)(((uint64_t)i * 7919u + 13u) % (uint64_t)n);
	double nudge = prev[j] / (prev[j] + o->strike);
	double spot = o->spot * (1.0 + 0.05 * nudge + 0.01 * (r % 7));
	return black_scholes(spot, o->strike, o->rate, o->vol, o->time, o->call);
}

static double sum_in_order(const double *v, long n)
{
	double s = 0.0;
	for (long i = 0; i < n; i++)
		s += v[i];
	return s;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	for (int r = 0; r < sh->rounds; r++) {
		double *cur = sh->buf[r % 2];
		const double *prev = sh->buf[(r + 1) % 2];
		for (long i = w->begin; i < w->end; i++)
			cur[i] = price_one(sh->opts, sh->n, prev, r, i);
		int rc = pthread_barrier_wait(&sh->barrier);
		if (rc == PTHREAD_BARRIER_SERIAL_THREAD) {
			// Only reads cur; nobody writes it again before the next barrier.
			sh->round_sum[r] = sum_in_order(cur, sh->n);
		} else if (rc != 0) {
			fprintf(stderr, "px_blackscholes: pthread_barrier_wait: %s\n",
				strerror(rc));
			exit(1);
		}
	}
	return NULL;
}

static long parse_arg(int argc, char **argv, int i, long def, long min, long max)
{
	if (argc <= i)
		return def;
	char *end;
	long v = strtol(argv[i], &end, 10);
	if (*argv[i] == '\0' || *end != '\0' || v < min || v > max) {
		fprintf(stderr, "px_blackscholes: bad argument '%s' (want %ld..%ld)\n", argv[i],
			min, max);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	int nthreads = (int)parse_arg(argc, argv, 1, 8, 1, 4096);
	long n = parse_arg(argc, argv, 2, 200000, 1, 100000000);
	int rounds = (int)parse_arg(argc, argv, 3, 10, 1, 100000);
	if (nthreads > n)
		nthreads = (int)n;

	struct option *opts = malloc((size_t)n * sizeof *opts);
	struct shared sh = {.opts = opts, .n = n, .rounds = rounds};
	sh.buf[0] = calloc((size_t)n, sizeof(double));
	sh.buf[1] = calloc((size_t)n, sizeof(double));
	sh.round_sum = calloc((size_t)rounds, sizeof(double));
	struct worker *ws = calloc((size_t)nthreads, sizeof *ws);
	if (!opts || !sh.buf[0] || !sh.buf[1] || !sh.round_sum || !ws) {
		fprintf(stderr, "px_blackscholes: out of memory\n");
		return 1;
	}
	long calls = 0;
	for (long i = 0; i < n; i++) {
		struct option *o = &opts[i];
		o->spot = rng_uniform(10.0, 110.0);
		o->strike = o->spot * rng_uniform(0.8, 1.2);
		o->rate = rng_uniform(0.01, 0.10);
		o->vol = rng_uniform(0.05, 0.65);
		o->time = rng_uniform(0.1, 2.0);
		o->call = (rng_next() >> 63) != 0;
		calls += o->call;
	}

	int rc = pthread_barrier_init(&sh.barrier, NULL, (unsigned)nthreads);
	if (rc != 0) {
		fprintf(stderr, "px_blackscholes: pthread_barrier_init: %s\n", strerror(rc));
		return 1;
	}
	for (int t = 0; t < nthreads; t++) {
		ws[t].sh = &sh;
		ws[t].begin = n * t / nthreads;
		ws[t].end = n * (t + 1) / nthreads;
		rc = pthread_create(&ws[t].tid, NULL, worker_main, &ws[t]);
		if (rc != 0) {
			fprintf(stderr, "px_blackscholes: pthread_create #%d: %s\n", t,
				strerror(rc));
			return 1;
		}
	}
	for (int t = 0; t < nthreads; t++) {
		rc = pthread_join(ws[t].tid, NULL);
		if (rc != 0) {
			fprintf(stderr, "px_blackscholes: pthread_join #%d: %s\n", t, strerror(rc));
			return 1;
		}
	}
	pthread_barrier_destroy(&sh.barrier);
	const double *final = sh.buf[(rounds - 1) % 2];

	// The serial reference: same code, one thread, fresh buffers.
	double *ref[2] = {calloc((size_t)n, sizeof(double)), calloc((size_t)n, sizeof(double))};
	if (!ref[0] || !ref[1]) {
		fprintf(stderr, "px_blackscholes: out of memory\n");
		return 1;
	}
	int mismatched_rounds = 0;
	for (int r = 0; r < rounds; r++) {
		for (long i = 0; i < n; i++)
			ref[r % 2][i] = price_one(opts, n, ref[(r + 1) % 2], r, i);
		double s = sum_in_order(ref[r % 2], n);
		if (memcmp(&s, &sh.round_sum[r], sizeof s) != 0)
			mismatched_rounds++;
	}
	int same = memcmp(ref[(rounds - 1) % 2], final, (size_t)n * sizeof(double)) == 0;

	double lo = final[0], hi = final[0];
	for (long i = 1; i < n; i++) {
		lo = final[i] < lo ? final[i] : lo;
		hi = final[i] > hi ? final[i] : hi;
	}
	printf("options=%ld calls=%ld puts=%ld rounds=%d\n", n, calls, n - calls, rounds);
	for (int r = 0; r < rounds; r++)
		printf("round %d sum=%.6f\n", r, sh.round_sum[r]);
	printf("final sum=%.6f min=%.3e max=%.6f\n", sum_in_order(final, n), lo, hi);
	printf("serial reference: %s\n", same && mismatched_rounds == 0 ? "identical" : "MISMATCH");

	free(ref[0]);
	free(ref[1]);
	free(ws);
	free(sh.round_sum);
	free(sh.buf[0]);
	free(sh.buf[1]);
	free(opts);
	return same && mismatched_rounds == 0 ? 0 : 1;
}
