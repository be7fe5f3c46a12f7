/* weft-bench sim: the seeds' benchmark table (seed 000 §3, seed 001 §3) on
 * this machine - every model of bench/sim/models.h on every thread backend,
 * with simcpus 1 and all CPUs where the backend allows it, plus SystemC as
 * a peer when it was found at build time.
 *
 * Each row runs in a process of its own (weft-sim-run or weft-sim-systemc,
 * found next to weft-bench or through WEFT_BENCH_SIM_RUN and
 * WEFT_BENCH_SYSTEMC), which times the model itself: wall clock and
 * getrusage user and system time. Rows are run round-robin, trial by trial,
 * so slow drifts of the machine hit every row alike; a row's figures are
 * those of its median trial by elapsed time, with the fastest and slowest
 * trials shown next to it. Rows whose first trial took under SHORT_ROW_S
 * (all but the posix and lite rows of Producer-Consumer and TFMUL) are
 * noisiest and cheapest: they run MAX_TRIALS trials, the first of them a
 * warm-up that is not counted; the others run 3. "speedup vs posix" divides the
 * elapsed time of the model's sequential posix row (the seeds' PosixThreads
 * baseline) by the row's. A row whose checksum or simulated time differs
 * from the model's first row is marked MISMATCH - every backend must
 * simulate the same thing. */
#include "subcommands.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_ROWS    64
#define MAX_TRIALS  8
#define SHORT_ROW_S 0.5

struct row {
	const char *model, *backend;
	int simcpus;
	int ntrials; /* trials that ran */
	double elapsed[MAX_TRIALS], user[MAX_TRIALS], sys[MAX_TRIALS];
	unsigned long long checksum, sim_time;
	int failed; /* 0, or the exit status of the failing run */
	int mismatch;
};

static char prog_run[8192], prog_systemc[8192];

/* weft-sim-run and weft-sim-systemc: from the environment, else next to us. */
static void find_programs(void)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	self[n > 0 ? n : 0] = '\0';
	char *slash = strrchr(self, '/');
	if (slash)
		slash[1] = '\0';
	const char *e = getenv("WEFT_BENCH_SIM_RUN");
	snprintf(prog_run, sizeof prog_run, "%s%s", e ? "" : self, e ? e : "weft-sim-run");
	e = getenv("WEFT_BENCH_SYSTEMC");
	snprintf(prog_systemc, sizeof prog_systemc, "%s%s", e ? "" : self,
		 e ? e : "weft-sim-systemc");
}

/* One trial of row r. Returns 0, or the failing run's exit status. */
static int run_row(struct row *r, double size)
{
	char cmd[16384 + 64];
	if (strcmp(r->backend, "systemc") == 0)
		snprintf(cmd, sizeof cmd, "'%s' %s %g", prog_systemc, r->model, size);
	else
		snprintf(cmd, sizeof cmd, "'%s' %s %s %d %g", prog_run, r->model, r->backend,
			 r->simcpus, size);
	FILE *p = popen(cmd, "r");
	if (!p)
		return 127;
	char line[1024];
	double el = 0, us = 0, sy = 0;
	unsigned long long ck = 0, st = 0;
	int got = 0;
	if (fgets(line, sizeof line, p)) {
		const char *s = strstr(line, "checksum=");
		if (s && sscanf(s, "checksum=%llx sim_time=%llu elapsed_s=%lf user_s=%lf sys_s=%lf",
				&ck, &st, &el, &us, &sy) == 5)
			got = 1;
	}
	int status = pclose(p);
	int code = status == -1 ? 127 : WIFEXITED(status) ? WEXITSTATUS(status) : 128;
	if (code || !got)
		return code ? code : 1;
	int t = r->ntrials++;
	r->elapsed[t] = el;
	r->user[t] = us;
	r->sys[t] = sy;
	if (t == 0) {
		r->checksum = ck;
		r->sim_time = st;
	} else if (ck != r->checksum || st != r->sim_time) {
		r->mismatch = 1;
	}
	return 0;
}

/* The trials that count: all, or all but the warm-up of a short row. */
static int first_counted(const struct row *r)
{
	return r->ntrials == MAX_TRIALS ? 1 : 0;
}

/* Indices of the counted trials, by elapsed time; returns their number. */
static int sorted_trials(const struct row *r, int idx[MAX_TRIALS])
{
	int n = 0;
	for (int i = first_counted(r); i < r->ntrials; i++)
		idx[n++] = i;
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && r->elapsed[idx[j]] < r->elapsed[idx[j - 1]]; j--) {
			int x = idx[j];
			idx[j] = idx[j - 1];
			idx[j - 1] = x;
		}
	return n;
}

/* Index of the median trial by elapsed time. */
static int median_trial(const struct row *r)
{
	int idx[MAX_TRIALS];
	int n = sorted_trials(r, idx);
	return idx[n / 2];
}

static void machine_name(char *buf, size_t n)
{
	struct utsname u;
	char cpu[256] = "unknown CPU";
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (f) {
		char line[512];
		while (fgets(line, sizeof line, f)) {
			char *c = strchr(line, ':');
			if (strncmp(line, "model name", 10) == 0 && c) {
				snprintf(cpu, sizeof cpu, "%s", c + 2);
				cpu[strcspn(cpu, "\n")] = '\0';
				break;
			}
		}
		fclose(f);
	}
	if (uname(&u) != 0)
		strcpy(u.nodename, "?");
	snprintf(buf, n, "%s, %s, %ld CPUs", u.nodename, cpu, sysconf(_SC_NPROCESSORS_ONLN));
}

int wb_sim_main(const wb_opts_t *o)
{
	static const char *const sim_models[] = {"prodcons", "fibo20", "tfmul"};
	static const char *const sim_backends[] = {"posix", "lite", "context", "quick", "hybrid"};
	static const char *const native_models[] = {"mw4", "mw40", "mw400", "jc40", "jc400"};
	static struct row rows[MAX_ROWS];
	int nrows = 0;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int all = ncpu > 1 ? (int)ncpu : 1;
	double size = o->size > 0 ? o->size : o->quick ? 0.05 : 1.0;
	int trials = o->quick ? 1 : 3;

	find_programs();
	int have_systemc = access(prog_systemc, X_OK) == 0;
	for (size_t m = 0; m < sizeof sim_models / sizeof *sim_models; m++) {
		for (size_t b = 0; b < sizeof sim_backends / sizeof *sim_backends; b++) {
			int parallel = strcmp(sim_backends[b], "posix") == 0 ||
				       strcmp(sim_backends[b], "hybrid") == 0;
			rows[nrows++] = (struct row){
				.model = sim_models[m], .backend = sim_backends[b], .simcpus = 1};
			if (parallel && all > 1)
				rows[nrows++] = (struct row){.model = sim_models[m],
							     .backend = sim_backends[b],
							     .simcpus = all};
		}
		if (have_systemc)
			rows[nrows++] = (struct row){
				.model = sim_models[m], .backend = "systemc", .simcpus = 1};
	}
	for (size_t m = 0; m < sizeof native_models / sizeof *native_models; m++) {
		rows[nrows++] =
			(struct row){.model = native_models[m], .backend = "posix", .simcpus = all};
		rows[nrows++] =
			(struct row){.model = native_models[m], .backend = "hybrid", .simcpus = 1};
		if (all > 1)
			rows[nrows++] = (struct row){
				.model = native_models[m], .backend = "hybrid", .simcpus = all};
	}
	/* --only selects models, --systems backends. */
	int k = 0;
	for (int i = 0; i < nrows; i++)
		if (wb_selected_bench(o, rows[i].model) && wb_selected_system(o, rows[i].backend))
			rows[k++] = rows[i];
	nrows = k;

	for (int t = 0; t < MAX_TRIALS; t++)
		for (int i = 0; i < nrows; i++) {
			struct row *r = &rows[i];
			int want = trials > 1 && r->ntrials > 0 && r->elapsed[0] < SHORT_ROW_S
					   ? MAX_TRIALS
					   : trials;
			if (!r->failed && t < want)
				r->failed = run_row(r, size);
		}

	char machine[512];
	machine_name(machine, sizeof machine);
	if (o->json)
		printf("{\"meta\": {\"bench\": \"sim\", \"machine\": \"%s\", \"size\": %g, "
		       "\"trials\": %d, \"systemc\": %s}}\n",
		       machine, size, trials, have_systemc ? "true" : "false");
	else
		printf("weft-bench sim: %s\nsize %g, median of %d trial%s per row (rows under "
		       "%g s: %d, after a warm-up), fastest-slowest in brackets; run "
		       "round-robin, each row a process of its own%s\n\n"
		       "| model | backend | simcpus | user s | sys s | elapsed s | CPU load | "
		       "speedup vs posix | checksum | sim time |\n"
		       "|---|---|---|---|---|---|---|---|---|---|\n",
		       machine, size, trials, trials == 1 ? "" : "s", SHORT_ROW_S,
		       trials > 1 ? MAX_TRIALS - 1 : 1,
		       have_systemc ? "" : "; SystemC not built, its rows are left out");

	int mismatches = 0;
	for (int i = 0; i < nrows; i++) {
		struct row *r = &rows[i];
		/* The model's reference: its first row that ran. */
		const struct row *first = NULL, *posix = NULL;
		for (int j = 0; j < nrows; j++) {
			if (strcmp(rows[j].model, r->model) != 0 || rows[j].failed)
				continue;
			if (!first)
				first = &rows[j];
			if (!posix && strcmp(rows[j].backend, "posix") == 0)
				posix = &rows[j];
		}
		if (!r->failed && first &&
		    (r->checksum != first->checksum || r->sim_time != first->sim_time))
			r->mismatch = 1;
		mismatches += r->mismatch;
		if (r->failed) {
			if (o->json)
				printf("{\"model\": \"%s\", \"backend\": \"%s\", \"simcpus\": %d, "
				       "\"error\": \"exit status %d\", \"elapsed_s\": null}\n",
				       r->model, r->backend, r->simcpus, r->failed);
			else
				printf("| %s | %s | %d | - | - | - | - | - | failed (exit status "
				       "%d) | - |\n",
				       r->model, r->backend, r->simcpus, r->failed);
			continue;
		}
		int idx[MAX_TRIALS];
		int n = sorted_trials(r, idx), k = idx[n / 2];
		double el = r->elapsed[k], us = r->user[k], sy = r->sys[k];
		double fastest = r->elapsed[idx[0]], slowest = r->elapsed[idx[n - 1]];
		double load = el > 0 ? (us + sy) / el : 0;
		double speedup = -1;
		if (posix && !posix->failed)
			speedup = posix->elapsed[median_trial(posix)] / el;
		if (o->json) {
			printf("{\"model\": \"%s\", \"backend\": \"%s\", \"simcpus\": %d, "
			       "\"elapsed_s\": %.6f, \"user_s\": %.6f, \"sys_s\": %.6f, "
			       "\"cpu_load\": %.3f, \"checksum\": \"0x%016llx\", \"sim_time\": "
			       "%llu, "
			       "\"speedup_vs_posix\": ",
			       r->model, r->backend, r->simcpus, el, us, sy, load, r->checksum,
			       r->sim_time);
			if (speedup > 0)
				printf("%.3f", speedup);
			else
				printf("null");
			printf(", \"trials\": %d, \"elapsed_min_s\": %.6f, \"elapsed_max_s\": "
			       "%.6f, "
			       "\"checksum_ok\": %s}\n",
			       n, fastest, slowest, r->mismatch ? "false" : "true");
		} else {
			printf("| %s | %s | %d | %.3f | %.3f | %.4f (%.4f-%.4f) | %.0f%% | ",
			       r->model, r->backend, r->simcpus, us, sy, el, fastest, slowest,
			       100 * load);
			if (speedup > 0)
				printf("%.2fx", speedup);
			else
				printf("-");
			printf(" | %016llx%s | %llu |\n", r->checksum,
			       r->mismatch ? " MISMATCH" : "", r->sim_time);
		}
	}
	if (!o->json && mismatches)
		printf("\n%d row(s) simulated something else than their model's first row\n",
		       mismatches);
	return mismatches ? 1 : 0;
}
