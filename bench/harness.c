/* The trial loop: calibration, warm-up, alternating trials. See harness.h. */
#include "harness.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

void wb_sample_extra(wb_sample_t *s, const char *key, double value)
{
	for (int i = 0; i < s->nextra; i++) {
		if (strcmp(s->extra[i].key, key) == 0) {
			s->extra[i].value = value;
			return;
		}
	}
	if (s->nextra < WB_MAX_EXTRA)
		s->extra[s->nextra++] = (wb_extra_t){key, value};
}

/* Does any comma-separated item of list occur in name? An empty or absent
 * list selects everything. */
static int matches(const char *list, const char *name)
{
	const char *p = list;

	if (!list || !*list)
		return 1;
	while (*p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len > 0) {
			for (const char *q = name; *q; q++)
				if (strncmp(q, p, len) == 0)
					return 1;
		}
		p += len;
		if (*p == ',')
			p++;
	}
	return 0;
}

int wb_selected_bench(const wb_opts_t *o, const char *bench)
{
	return matches(o->only, bench);
}

int wb_selected_system(const wb_opts_t *o, const char *system)
{
	return matches(o->systems, system);
}

/* ---- affinity --------------------------------------------------------- */

static cpu_set_t saved_mask;
static int saved_ok;

void wb_affinity_save(void)
{
	saved_ok = sched_getaffinity(0, sizeof saved_mask, &saved_mask) == 0;
}

void wb_affinity_restore(void)
{
	if (saved_ok)
		sched_setaffinity(0, sizeof saved_mask, &saved_mask);
}

int wb_affinity_changed(void)
{
	cpu_set_t now;

	if (!saved_ok || sched_getaffinity(0, sizeof now, &now) != 0)
		return 0;
	return !CPU_EQUAL(&now, &saved_mask);
}

int wb_cpu(int i)
{
	if (!saved_ok)
		return i;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &saved_mask) && i-- == 0)
			return cpu;
	return -1;
}

/* ---- trials ----------------------------------------------------------- */

static int run_once(const wb_case_t *c, long n, wb_sample_t *s)
{
	static int warned;
	int rc;

	memset(s, 0, sizeof *s);
	s->value = NAN;
	if (!c->weft)
		wb_affinity_restore();
	rc = c->run(c, n, s);
	if (c->weft && wb_affinity_changed()) {
		if (!warned) {
			fprintf(stderr,
				"weft-bench: note: the main thread's CPU affinity differs after "
				"weft_shutdown (%s); restoring it\n",
				c->system);
			warned = 1;
		}
		wb_affinity_restore();
	}
	if (rc == 0 && isnan(s->value)) {
		snprintf(s->error, sizeof s->error, "run produced no value");
		rc = -1;
	}
	if (rc != 0 && !s->error[0])
		snprintf(s->error, sizeof s->error, "failed: %s", strerror(rc > 0 ? rc : EIO));
	return rc;
}

/* Choose a size so one run of c takes about target_ns. */
static long calibrate(const wb_case_t *c, double target_ns, wb_sample_t *s)
{
	long n = c->n0 > 0 ? c->n0 : 100;
	long n_max = c->n_max > 0 ? c->n_max : 100000000;

	for (int round = 0; round < 6; round++) {
		if (run_once(c, n, s) != 0)
			return -1;
		double el = s->elapsed_ns > 1000 ? s->elapsed_ns : 1000;
		double want = (double)n * target_ns / el;
		if (el >= target_ns / 4 || n >= n_max) {
			n = want < 1 ? 1 : (long)want;
			break;
		}
		/* Grow at most 100-fold per round: a tiny run says little. */
		n = want > (double)n * 100 ? n * 100 : (long)want + 1;
		if (n > n_max)
			n = n_max;
	}
	if (n > n_max)
		n = n_max;
	return n < 1 ? 1 : n;
}

static void row_init(wb_row_t *row, const wb_group_t *g, const wb_case_t *c)
{
	memset(row, 0, sizeof *row);
	row->bench = g->bench;
	row->system = c->system;
	row->unit = g->unit;
	row->placement = c->placement;
	row->ratio_vs_pthread = NAN;
	if (c->note)
		snprintf(row->note, sizeof row->note, "%s", c->note);
}

void wb_run_group(const wb_opts_t *o, wb_group_t *g, wb_row_t *rows)
{
	int nc = g->ncases;
	long n[nc];
	int active[nc], trials[nc], maxtrials = 0;
	double spent[nc]; /* wall time of each case's runs so far, in seconds */
	/* Per case and trial, each extra's value; the row gets their median. */
	static wb_sample_t samples[16][WB_MAX_TRIALS];
	wb_sample_t s;

	if (nc > 16)
		nc = 16;
	for (int i = 0; i < nc; i++) {
		wb_case_t *c = &g->cases[i];
		active[i] = wb_selected_system(o, c->system);
		if (!active[i]) {
			memset(&rows[i], 0, sizeof rows[i]);
			continue;
		}
		row_init(&rows[i], g, c);
		spent[i] = 0;
		trials[i] = c->trials > 0 ? c->trials : o->trials;
		if (trials[i] > WB_MAX_TRIALS)
			trials[i] = WB_MAX_TRIALS;
		if (trials[i] > maxtrials)
			maxtrials = trials[i];
		n[i] = c->n;
		if (n[i] == 0) {
			n[i] = calibrate(c, o->target_ms * 1e6, &s);
			if (n[i] < 0) {
				snprintf(rows[i].error, sizeof rows[i].error, "%s", s.error);
				active[i] = 0;
			}
		}
		rows[i].n = n[i];
	}

	/* Trial -1 is the warm-up; its numbers are dropped. */
	for (int t = -1; t < maxtrials; t++) {
		for (int k = 0; k < nc; k++) {
			int i = (k + (t + 1)) % nc;
			wb_case_t *c = &g->cases[i];
			if (!active[i] || t >= trials[i] || (t < 0 && c->no_warmup))
				continue;
			if (c->budget_s > 0 && spent[i] >= c->budget_s)
				continue;
			int64_t t0 = wb_now_ns();
			int rc = run_once(c, n[i], &s);
			spent[i] += (double)(wb_now_ns() - t0) / 1e9;
			if (rc != 0) {
				snprintf(rows[i].error, sizeof rows[i].error, "%s", s.error);
				active[i] = 0;
				continue;
			}
			/* The warm-up re-checks a calibrated size: a calibration
			 * run can land on a slow or fast moment of the machine. */
			if (t < 0 && c->n == 0 && s.elapsed_ns > 0) {
				double r = o->target_ms * 1e6 / s.elapsed_ns;
				if (r > 2 || r < 0.5) {
					double want = (double)n[i] * r;
					long n_max = c->n_max > 0 ? c->n_max : 100000000;
					n[i] = want < 1               ? 1
					       : want > (double)n_max ? n_max
								      : (long)want;
					rows[i].n = n[i];
				}
			}
			if (t >= 0) {
				rows[i].samples[rows[i].nsamples] = s.value;
				samples[i][rows[i].nsamples] = s;
				rows[i].nsamples++;
			}
		}
	}

	int ref = -1;
	for (int i = 0; i < nc; i++) {
		if (!rows[i].system)
			continue;
		if (rows[i].error[0])
			rows[i].nsamples = 0;
		wb_row_stats(&rows[i]);
		if (g->cases[i].ref == WB_REF_PTHREAD && !rows[i].error[0])
			ref = i;
		/* Extras: the median over trials, key by key. */
		if (rows[i].nsamples > 0) {
			wb_sample_t *first = &samples[i][0];
			for (int e = 0; e < first->nextra; e++) {
				wb_row_t tmp = {.nsamples = 0};
				for (int t = 0; t < rows[i].nsamples; t++)
					for (int f = 0; f < samples[i][t].nextra; f++)
						if (strcmp(samples[i][t].extra[f].key,
							   first->extra[e].key) == 0)
							tmp.samples[tmp.nsamples++] =
								samples[i][t].extra[f].value;
				wb_row_stats(&tmp);
				wb_row_extra(&rows[i], first->extra[e].key, tmp.median);
			}
		}
	}
	if (ref >= 0) {
		for (int i = 0; i < nc; i++)
			if (rows[i].system && !rows[i].error[0] && !g->cases[i].no_ratio)
				rows[i].ratio_vs_pthread = rows[i].median / rows[ref].median;
	}
}

/* ---- child processes ---------------------------------------------------- */

extern char **environ;

int wb_spawn_read(char *const argv[], int with_stderr, char *out, size_t outlen, int *status,
		  struct rusage *ru, char *err, size_t errlen)
{
	int fds[2], rc;
	pid_t pid;
	posix_spawn_file_actions_t fa;
	size_t got = 0;

	if (pipe(fds) != 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return errno;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
	if (with_stderr)
		posix_spawn_file_actions_adddup2(&fa, fds[1], STDERR_FILENO);
	posix_spawn_file_actions_addclose(&fa, fds[0]);
	posix_spawn_file_actions_addclose(&fa, fds[1]);
	rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	if (rc) {
		close(fds[0]);
		snprintf(err, errlen, "posix_spawn %s: %s", argv[0], strerror(rc));
		return rc;
	}
	while (got + 1 < outlen) {
		ssize_t r = read(fds[0], out + got, outlen - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	out[got] = '\0';
	close(fds[0]);
	while (wait4(pid, status, 0, ru) < 0)
		if (errno != EINTR) {
			snprintf(err, errlen, "wait4: %s", strerror(errno));
			return errno;
		}
	return 0;
}

int wb_run_self_child(const char *sub, const wb_case_t *c, long n, char *out, size_t outlen,
		      struct rusage *ru, wb_sample_t *s)
{
	const wb_opts_t *o = c->opts;
	char exe[PATH_MAX], nbuf[32], wbuf[16], pbuf[16];
	int status, rc;
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);

	if (len <= 0) {
		snprintf(s->error, sizeof s->error, "readlink /proc/self/exe: %s", strerror(errno));
		return errno;
	}
	exe[len] = '\0';
	snprintf(nbuf, sizeof nbuf, "%ld", n);
	snprintf(wbuf, sizeof wbuf, "%d", o->workers);
	snprintf(pbuf, sizeof pbuf, "%d", o->pin);
	char *argv[] = {exe,     (char *)sub, "--system",  (char *)c->system,
			"--n",   nbuf,        "--workers", wbuf,
			"--pin", pbuf,        NULL};
	if ((rc = wb_spawn_read(argv, 0, out, outlen, &status, ru, s->error, sizeof s->error)))
		return rc;
	if (WIFSIGNALED(status)) {
		snprintf(s->error, sizeof s->error, "child killed by signal %d (%s)%s",
			 WTERMSIG(status), strsignal(WTERMSIG(status)),
			 WTERMSIG(status) == SIGKILL ? ", out of memory?" : "");
		return EIO;
	}
	char *e = strstr(out, "error=");
	if (e) {
		e[strcspn(e, "\n")] = '\0';
		snprintf(s->error, sizeof s->error, "%s", e + 6);
		return EIO;
	}
	if (WEXITSTATUS(status) != 0) {
		snprintf(s->error, sizeof s->error, "child exited %d: %.200s", WEXITSTATUS(status),
			 out);
		return EIO;
	}
	return 0;
}
