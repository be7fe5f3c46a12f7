/* Statistics, the result table and JSON Lines output. See report.h. */
#include "report.h"

#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void wb_row_stats(wb_row_t *row)
{
	double s[WB_MAX_TRIALS];
	int n = row->nsamples;

	if (n == 0) {
		row->median = row->min = row->max = NAN;
		return;
	}
	memcpy(s, row->samples, (size_t)n * sizeof s[0]);
	qsort(s, (size_t)n, sizeof s[0], cmp_double);
	row->min = s[0];
	row->max = s[n - 1];
	row->median = (n % 2) ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

void wb_row_extra(wb_row_t *row, const char *key, double value)
{
	for (int i = 0; i < row->nextra; i++) {
		if (strcmp(row->extra[i].key, key) == 0) {
			row->extra[i].value = value;
			return;
		}
	}
	if (row->nextra < WB_MAX_EXTRA)
		row->extra[row->nextra++] = (wb_extra_t){key, value};
}

double wb_row_get_extra(const wb_row_t *row, const char *key)
{
	for (int i = 0; i < row->nextra; i++)
		if (strcmp(row->extra[i].key, key) == 0)
			return row->extra[i].value;
	return NAN;
}

void wb_row_note(wb_row_t *row, const char *fmt, ...)
{
	size_t len = strlen(row->note);
	va_list ap;

	if (len > 0 && len + 2 < sizeof row->note) {
		memcpy(row->note + len, "; ", 3);
		len += 2;
	}
	va_start(ap, fmt);
	vsnprintf(row->note + len, sizeof row->note - len, fmt, ap);
	va_end(ap);
}

/* ---- the machine ------------------------------------------------------ */

static void trim(char *s)
{
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
}

void wb_machine_probe(wb_machine_t *m)
{
	FILE *f;
	char line[512];
	cpu_set_t set;
	struct utsname u;

	memset(m, 0, sizeof *m);
	snprintf(m->cpu, sizeof m->cpu, "unknown CPU");
	f = fopen("/proc/cpuinfo", "r");
	if (f) {
		while (fgets(line, sizeof line, f)) {
			/* x86: "model name"; some arm64 kernels: "Model" or "Hardware" */
			if (strncmp(line, "model name", 10) == 0 ||
			    strncmp(line, "Model", 5) == 0 || strncmp(line, "Hardware", 8) == 0) {
				char *colon = strchr(line, ':');
				if (colon) {
					snprintf(m->cpu, sizeof m->cpu, "%s", colon + 2);
					trim(m->cpu);
					break;
				}
			}
		}
		fclose(f);
	}
	m->nproc_online = (int)sysconf(_SC_NPROCESSORS_ONLN);
	m->nproc_allowed = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : -1;
	if (uname(&u) == 0)
		snprintf(m->kernel, sizeof m->kernel, "%s %s %s", u.sysname, u.release, u.machine);
#if defined(__clang__)
	snprintf(m->compiler, sizeof m->compiler, "clang %s", __clang_version__);
#elif defined(__GNUC__)
	snprintf(m->compiler, sizeof m->compiler, "gcc %s", __VERSION__);
#endif
	trim(m->compiler);
#if defined(__OPTIMIZE__)
	m->build = "optimized";
#else
	m->build = "unoptimized (numbers are not representative)";
#endif
}

/* ---- JSON ------------------------------------------------------------- */

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_num(FILE *f, double v)
{
	if (isnan(v) || isinf(v))
		fputs("null", f);
	else if (v == floor(v) && fabs(v) < 1e15)
		fprintf(f, "%.0f", v);
	else
		fprintf(f, "%.6g", v);
}

/* ---- text ------------------------------------------------------------- */

static void fmt_num(char *buf, size_t n, double v)
{
	if (isnan(v))
		snprintf(buf, n, "-");
	else if (v < 1)
		snprintf(buf, n, "%.4f", v);
	else if (v < 10)
		snprintf(buf, n, "%.2f", v);
	else if (v < 1000)
		snprintf(buf, n, "%.1f", v);
	else
		snprintf(buf, n, "%.0f", v);
}

static void fmt_ratio(char *buf, size_t n, double v)
{
	if (isnan(v))
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%.3gx", v);
}

#define TABLE_FMT "| %-25s | %-22s | %-11s | %9s | %9s | %9s | %-9s | %-10s | %s\n"

void wb_report_begin(wb_report_t *r, const wb_machine_t *m, const char *const *meta_keys,
		     const char *const *meta_vals, int nmeta)
{
	r->rows_printed = 0;
	if (r->json) {
		printf("{\"meta\": {\"tool\": \"weft-bench\", \"subcommand\": ");
		json_str(stdout, r->subcommand);
		printf(", \"cpu\": ");
		json_str(stdout, m->cpu);
		printf(", \"nproc_online\": %d, \"nproc_allowed\": %d, \"kernel\": ",
		       m->nproc_online, m->nproc_allowed);
		json_str(stdout, m->kernel);
		printf(", \"compiler\": ");
		json_str(stdout, m->compiler);
		printf(", \"build\": ");
		json_str(stdout, m->build);
		for (int i = 0; i < nmeta; i++) {
			printf(", ");
			json_str(stdout, meta_keys[i]);
			printf(": ");
			json_str(stdout, meta_vals[i]);
		}
		printf("}}\n");
		fflush(stdout);
		return;
	}
	printf("weft-bench %s\n", r->subcommand);
	printf("  machine:   %s, %d CPUs online (%d allowed), %s\n", m->cpu, m->nproc_online,
	       m->nproc_allowed, m->kernel);
	printf("  build:     %s, %s\n", m->build, m->compiler);
	for (int i = 0; i < nmeta; i++) {
		char key[64];
		snprintf(key, sizeof key, "%s:", meta_keys[i]);
		printf("  %-10s %s\n", key, meta_vals[i]);
	}
	printf("\n");
	printf(TABLE_FMT, "benchmark", "system", "where", "median", "min", "max", "unit",
	       "vs pthread", "note");
	printf("|---------------------------|------------------------|-------------|-----------|"
	       "-----------|-----------|-----------|------------|-----\n");
	fflush(stdout);
}

void wb_report_row(wb_report_t *r, const wb_row_t *row)
{
	r->rows_printed++;
	if (r->json) {
		int failed = row->error[0] != '\0';
		printf("{\"bench\": ");
		json_str(stdout, row->bench);
		printf(", \"system\": ");
		json_str(stdout, row->system);
		printf(", \"unit\": ");
		json_str(stdout, row->unit);
		printf(", \"median\": ");
		json_num(stdout, failed ? NAN : row->median);
		printf(", \"min\": ");
		json_num(stdout, failed ? NAN : row->min);
		printf(", \"max\": ");
		json_num(stdout, failed ? NAN : row->max);
		printf(", \"trials\": %d, \"n\": %ld, \"samples\": [", row->nsamples, row->n);
		for (int i = 0; i < row->nsamples; i++) {
			if (i)
				printf(", ");
			json_num(stdout, row->samples[i]);
		}
		printf("], \"ratio_vs_pthread\": ");
		json_num(stdout, failed ? NAN : row->ratio_vs_pthread);
		printf(", \"placement\": ");
		json_str(stdout, row->placement ? row->placement : "");
		printf(", \"note\": ");
		json_str(stdout, row->note);
		for (int i = 0; i < row->nextra; i++) {
			printf(", ");
			json_str(stdout, row->extra[i].key);
			printf(": ");
			json_num(stdout, row->extra[i].value);
		}
		if (failed) {
			printf(", \"error\": ");
			json_str(stdout, row->error);
		}
		printf("}\n");
		fflush(stdout);
		return;
	}

	char med[32], lo[32], hi[32], ratio[32];
	if (row->error[0]) {
		printf(TABLE_FMT, row->bench, row->system, row->placement ? row->placement : "",
		       "-", "-", "-", row->unit, "-", "");
		printf("|   error: %s\n", row->error);
		fflush(stdout);
		return;
	}
	fmt_num(med, sizeof med, row->median);
	fmt_num(lo, sizeof lo, row->min);
	fmt_num(hi, sizeof hi, row->max);
	fmt_ratio(ratio, sizeof ratio, row->ratio_vs_pthread);
	printf(TABLE_FMT, row->bench, row->system, row->placement ? row->placement : "", med, lo,
	       hi, row->unit, ratio, row->note);
	fflush(stdout);
}

void wb_report_footer(wb_report_t *r, const char *fmt, ...)
{
	va_list ap;

	if (r->json)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

void wb_report_end(wb_report_t *r)
{
	fflush(stdout);
}

/* ---- memory ----------------------------------------------------------- */

static long status_kb(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	size_t klen = strlen(key);

	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
			v = strtol(line + klen + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

long wb_self_vmhwm_kb(void)
{
	return status_kb("VmHWM");
}

long wb_self_vmrss_kb(void)
{
	return status_kb("VmRSS");
}
