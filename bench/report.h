/* Statistics, the result table and JSON output shared by every weft-bench
 * subcommand.
 *
 * A subcommand measures rows (one benchmark on one system, several trials)
 * and hands each finished row to wb_report_row(), which prints it at once:
 * as a line of the table, or with --json as one JSON object per line (JSON
 * Lines). The first line of JSON output is a metadata object {"meta": {...}}
 * describing the machine and the run; every later line is a row object:
 *
 *   {"bench": "yield", "system": "weft-asm", "unit": "ns/switch",
 *    "median": 41.2, "min": 40.9, "max": 44.0, "trials": 7, "n": 1000000,
 *    "samples": [...], "ratio_vs_pthread": 0.0171, "placement": "worker 0",
 *    "note": "...", <extra numeric fields, e.g. "peak_rss_kb">}
 *
 * A row that could not be measured has "error": "..." and null statistics.
 * Numbers that do not apply (no pthread row to compare with) are null.
 */
#ifndef WB_REPORT_H
#define WB_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define WB_MAX_TRIALS 64
#define WB_MAX_EXTRA  16

/* A named number attached to a row (peak_rss_kb, ns_per_thread, ...). */
typedef struct wb_extra {
	const char *key;
	double value;
} wb_extra_t;

typedef struct wb_row {
	const char *bench;
	const char *system;
	const char *unit;
	const char *placement; /* where the threads ran, e.g. "CPU 0+1" */
	long n;                /* problem size of one trial (iterations, threads) */
	double samples[WB_MAX_TRIALS];
	int nsamples;
	double median, min, max;
	double ratio_vs_pthread; /* NAN when not applicable */
	wb_extra_t extra[WB_MAX_EXTRA];
	int nextra;
	char note[256];
	char error[256]; /* non-empty: the row failed */
} wb_row_t;

/* Monotonic clock in nanoseconds. */
static inline int64_t wb_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Median, min and max of row->samples into the row. */
void wb_row_stats(wb_row_t *row);
/* Set (or replace) an extra field. */
void wb_row_extra(wb_row_t *row, const char *key, double value);
/* The extra field's value, NAN if absent. */
double wb_row_get_extra(const wb_row_t *row, const char *key);
/* Append to the note, separated by "; ". */
void wb_row_note(wb_row_t *row, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The machine, for the header. */
typedef struct wb_machine {
	char cpu[128];
	int nproc_online;
	int nproc_allowed;
	char kernel[256];
	char compiler[64];
	const char *build; /* "optimized" or "unoptimized" */
} wb_machine_t;

void wb_machine_probe(wb_machine_t *m);

/* Output. `json` selects JSON Lines; otherwise a text table on stdout.
 * wb_report_begin prints the header: machine plus free-form "key: value"
 * lines (meta_keys/meta_vals, nmeta of them), which also go into the JSON
 * metadata object. */
typedef struct wb_report {
	int json;
	const char *subcommand;
	int rows_printed;
} wb_report_t;

void wb_report_begin(wb_report_t *r, const wb_machine_t *m, const char *const *meta_keys,
		     const char *const *meta_vals, int nmeta);
void wb_report_row(wb_report_t *r, const wb_row_t *row);
/* A line after the table (text only; JSON consumers compute it from rows). */
void wb_report_footer(wb_report_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void wb_report_end(wb_report_t *r);

/* Peak resident set of this process so far (VmHWM), and current (VmRSS), in
 * KiB; -1 if /proc is unreadable. */
long wb_self_vmhwm_kb(void);
long wb_self_vmrss_kb(void);

#endif
