/* The trial loop every weft-bench subcommand uses.
 *
 * A group is one benchmark (say "yield") measured on several systems (weft
 * with each context backend, glibc pthreads, peers). wb_run_group runs one
 * warm-up trial and then opts->trials trials; inside every trial each system
 * runs once, in an order that rotates from trial to trial, so that drift of
 * the machine hits all systems alike. A system whose size is not fixed is
 * first calibrated: its iteration count is chosen so one run takes about
 * opts->target_ms.
 *
 * The result is one row per system with median, min and max over the trials
 * and, where the group has a pthread row, the ratio of medians to it.
 */
#ifndef WB_HARNESS_H
#define WB_HARNESS_H

#include "report.h"

/* Command-line options of all subcommands. */
typedef struct wb_opts {
	int json;
	int trials;          /* measured trials after the warm-up */
	int quick;           /* small sizes: a smoke test */
	const char *only;    /* comma-separated substrings of benchmark names */
	const char *systems; /* comma-separated substrings of system names */
	double target_ms;    /* wall time of one calibrated run */
	long chain_n;        /* ULTs alive at once in the chain row */
	long chain_pthread_n;
	int chain_trials;
	int workers;              /* weft workers; 0: weft's default */
	int pin;                  /* weft pinning; -1: weft's default */
	double size;              /* sim: model size factor; 0: default */
	const char *conns;        /* io: connection counts, "1,100"; NULL: default */
	long roundtrips;          /* io: round trips per connection; 0: default */
	const char *child_system; /* hidden child subcommands */
	long child_n;
} wb_opts_t;

/* One measured run of one system. */
typedef struct wb_sample {
	double value;      /* in the group's unit */
	double elapsed_ns; /* wall time of the run, for calibration */
	wb_extra_t extra[WB_MAX_EXTRA];
	int nextra;
	char error[256]; /* set when the run failed */
} wb_sample_t;

void wb_sample_extra(wb_sample_t *s, const char *key, double value);

typedef struct wb_case wb_case_t;
/* Run c once with size n; fill s (value and elapsed_ns). 0 or an errno
 * value; on failure s->error says what went wrong. */
typedef int (*wb_run_fn)(const wb_case_t *c, long n, wb_sample_t *s);

enum { WB_REF_NONE = 0, WB_REF_PTHREAD = 1 };

struct wb_case {
	const char *system;
	const char *placement;
	wb_run_fn run;
	wb_run_fn inner; /* for wrappers such as the weft session */
	int context;     /* weft context backend (enum weft_context_kind), 0 for peers */
	int workers;     /* > 0: the weft session's workers (else opts->workers) */
	int weft;        /* 1: runs weft (the harness checks the affinity afterwards) */
	long n;          /* fixed size of a run; 0: calibrate */
	long n0;         /* calibration: first size to try */
	long n_max;      /* calibration: upper bound (0: none) */
	int ref;         /* WB_REF_PTHREAD: the group's baseline */
	int no_ratio;    /* a reference row: no ratio to pthreads */
	int trials;      /* 0: opts->trials */
	int no_warmup;   /* each run is a fresh process: no warm-up */
	double budget_s; /* > 0: no further trials once the runs took this long */
	const char *note;
	const wb_opts_t *opts;
	long iarg[4]; /* case-specific arguments */
};

typedef struct wb_group {
	const char *bench;
	const char *unit;
	wb_case_t *cases;
	int ncases;
} wb_group_t;

/* Is bench/system selected by --only / --systems? */
int wb_selected_bench(const wb_opts_t *o, const char *bench);
int wb_selected_system(const wb_opts_t *o, const char *system);

/* Run a group; rows[i] is filled for cases[i] (rows[i].system == NULL if
 * the case was filtered out). Nothing is printed. */
void wb_run_group(const wb_opts_t *o, wb_group_t *g, wb_row_t *rows);

/* Child processes (rows measured each in a fresh process, for a peak RSS of
 * their own) */

/* Run argv[0] (a path) with argv, read what it writes to stdout (and to
 * stderr, with_stderr) into out - NUL-terminated, at most outlen - 1 bytes -
 * and wait for it: its wait status and resource usage (ru_maxrss: its peak
 * RSS). 0, or an errno value with err saying what failed. */
struct rusage;
int wb_spawn_read(char *const argv[], int with_stderr, char *out, size_t outlen, int *status,
		  struct rusage *ru, char *err, size_t errlen);
/* Run this weft-bench's hidden child subcommand `sub` for c's system with
 * size n (and the options' --workers and --pin) and check how it ended: 0
 * with its first output line in out and its usage in ru, or an errno value
 * with s->error set - a signal, an "error=..." line, a non-zero exit. */
int wb_run_self_child(const char *sub, const wb_case_t *c, long n, char *out, size_t outlen,
		      struct rusage *ru, wb_sample_t *s);

/* CPU affinity of the main thread as it was at startup: saved once, and
 * restored before every peer run so a runtime that pinned the main thread
 * does not pin the peers. wb_cpu(i) is the i-th allowed CPU (-1 if none). */
void wb_affinity_save(void);
void wb_affinity_restore(void);
int wb_affinity_changed(void);
int wb_cpu(int i);

#endif
