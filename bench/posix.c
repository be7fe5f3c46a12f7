/* weft-bench posix: the same pthread program (weft-px-bench, no weft header)
 * run under glibc and under LD_PRELOAD=libweft-pthread.so, in the same
 * invocation, alternating 3 times; rows are medians and ratios.
 *
 * The program and the library are found next to each other in the build
 * tree (compiled-in paths), or where WEFT_BENCH_PX_PROG and
 * WEFT_BENCH_PRELOAD point. */
#include "subcommands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef WB_PX_PROG
#define WB_PX_PROG "weft-px-bench"
#endif
#ifndef WB_PRELOAD
#define WB_PRELOAD "libweft-pthread.so"
#endif

struct px_result {
	double cj, mu, cv;
};

/* Run the program once, with preload (a library path) or without (NULL). */
static int run_once(const char *prog, const char *preload, int quick, struct px_result *r)
{
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "%s%s%s '%s'%s", preload ? "LD_PRELOAD='" : "",
		 preload ? preload : "", preload ? "'" : "", prog, quick ? " --quick" : "");
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	int ok = fscanf(p, "create_join_ns=%lf mutex_ns=%lf condvar_rt_ns=%lf", &r->cj, &r->mu,
			&r->cv) == 3;
	int st = pclose(p);
	return ok && st == 0 ? 0 : -1;
}

static double med3(double a, double b, double c)
{
	return a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
}

int wb_posix_main(const wb_opts_t *o)
{
	const char *prog = getenv("WEFT_BENCH_PX_PROG") ? getenv("WEFT_BENCH_PX_PROG") : WB_PX_PROG;
	const char *lib = getenv("WEFT_BENCH_PRELOAD") ? getenv("WEFT_BENCH_PRELOAD") : WB_PRELOAD;
	struct px_result g[3], w[3];
	for (int i = 0; i < 3; i++) {
		if (run_once(prog, NULL, o->quick, &g[i]) || run_once(prog, lib, o->quick, &w[i])) {
			fprintf(stderr, "weft-bench posix: running %s (LD_PRELOAD=%s) failed\n",
				prog, lib);
			return 1;
		}
	}
	struct px_result gm = {med3(g[0].cj, g[1].cj, g[2].cj), med3(g[0].mu, g[1].mu, g[2].mu),
			       med3(g[0].cv, g[1].cv, g[2].cv)};
	struct px_result wm = {med3(w[0].cj, w[1].cj, w[2].cj), med3(w[0].mu, w[1].mu, w[2].mu),
			       med3(w[0].cv, w[1].cv, w[2].cv)};
	printf("weft-bench posix: one pthread binary (%s), glibc vs LD_PRELOAD=%s\n"
	       "medians of 3 alternating runs, each the median of 5\n\n",
	       prog, lib);
	printf("| benchmark | glibc | weft (preload) | glibc / weft |\n|---|---|---|---|\n");
	printf("| pthread_create + pthread_join | %.0f ns | %.0f ns | %.1fx |\n", gm.cj, wm.cj,
	       gm.cj / wm.cj);
	printf("| mutex lock + unlock, uncontended | %.1f ns | %.1f ns | %.2fx |\n", gm.mu, wm.mu,
	       gm.mu / wm.mu);
	printf("| mutex + condvar ping-pong, two threads, round trip | %.0f ns | %.0f ns | %.1fx "
	       "|\n",
	       gm.cv, wm.cv, gm.cv / wm.cv);
	return 0;
}
