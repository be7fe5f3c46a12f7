/* weft-sim-run MODEL BACKEND SIMCPUS [SIZE]: run one row of `weft-bench sim`
 * in a process of its own and print it as one line:
 *
 *   model=M backend=B simcpus=N size=S checksum=0x... sim_time=T
 *   elapsed_s=E user_s=U sys_s=Y
 *
 * Times cover the model only (not process start-up). Exit status: 0, 2 for
 * a model/backend/simcpus combination that does not exist, 1 for a failure. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <weft/sim.h>

#include "models.h"

static double tv_s(struct timeval t)
{
	return (double)t.tv_sec + (double)t.tv_usec / 1e6;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 4 || argc > 5) {
		fprintf(stderr, "usage: %s MODEL BACKEND SIMCPUS [SIZE]\n", argv[0]);
		return 2;
	}
	const char *model = argv[1];
	int backend = wsim_backend_by_name(argv[2]);
	int simcpus = atoi(argv[3]);
	double size = argc == 5 ? strtod(argv[4], NULL) : 1.0;
	if (model_is_sim(model) < 0 || backend < 0 || simcpus < 1 ||
	    simcpus > wsim_backend_max_simcpus(backend) || !(size > 0)) {
		fprintf(stderr, "%s: no such row: %s %s %s\n", argv[0], model, argv[2], argv[3]);
		return 2;
	}
	if (!model_is_sim(model) && backend != WSIM_BACKEND_POSIX &&
	    backend != WSIM_BACKEND_HYBRID) {
		fprintf(stderr, "%s: %s runs on posix and hybrid only\n", argv[0], model);
		return 2;
	}
	struct rusage r0, r1;
	model_result_t res = {0};
	getrusage(RUSAGE_SELF, &r0);
	double t0 = now_s();
	int r = model_run(model, backend, simcpus, size, &res);
	double t1 = now_s();
	getrusage(RUSAGE_SELF, &r1);
	if (r) {
		fprintf(stderr, "%s: %s on %s/%d failed: %s\n", argv[0], model, argv[2], simcpus,
			strerror(r));
		return 1;
	}
	printf("model=%s backend=%s simcpus=%d size=%g checksum=0x%016llx sim_time=%llu "
	       "elapsed_s=%.6f user_s=%.6f sys_s=%.6f\n",
	       model, wsim_backend_name(backend), simcpus, size, (unsigned long long)res.checksum,
	       (unsigned long long)res.sim_time, t1 - t0, tv_s(r1.ru_utime) - tv_s(r0.ru_utime),
	       tv_s(r1.ru_stime) - tv_s(r0.ru_stime));
	return 0;
}
