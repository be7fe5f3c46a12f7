/* Reading a trace file (codec.h) and writing it as Chrome Trace Event JSON
 * and CSV (export.c). Used by the runtime when it stops and by
 * tools/weft-trace-scan.c; needs nothing from the runtime.
 */
#ifndef WF_TRACE_EXPORT_H
#define WF_TRACE_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "trace/codec.h"

#ifndef WF_TRACE_API
#define WF_TRACE_API __attribute__((visibility("hidden")))
#endif

/* The meta chunk of a trace file, parsed. */
typedef struct {
	char version[32], program[64], sched[128], clock[16];
	int pid, workers;
	int complete; /* the workers had stopped: nothing was cut off */
	int tsc;      /* records carry TSC ticks (else CLOCK_MONOTONIC ns) */
	uint64_t t0;  /* the raw clock when the trace started */
	double ns_per_tick;
	uint64_t duration_ns, dropped;
} wf_trace_meta_t;

/* One CSV row (the columns of docs/observability.md). */
typedef struct {
	uint64_t ns;
	int worker; /* -1: a thread that is not a worker */
	const char *event;
	uint64_t ult;
	const char *name; /* "" if none */
	int64_t arg1, arg2;
	const char *detail; /* "" if none */
} wf_trace_row_t;

/* Where a trace goes: any of the JSON, CSV and Perfetto (perfetto.c)
 * files, and a function that gets every row (with ctx). NULL members are
 * left out. */
typedef struct {
	FILE *json, *csv, *pftrace;
	void (*row)(void *ctx, const wf_trace_row_t *r);
	void *ctx;
	/* Read a trace whose program died while tracing (no meta chunk, its
	 * last chunk perhaps cut off): what is there, with times in the raw
	 * clock's units from its first record, clock "raw". */
	int unfinished_ok;
} wf_trace_sink_t;

/* Read the meta chunk of the trace file at path into m. 0, or an errno
 * value: EPROTO if path is not a weft trace file or has no meta chunk. */
WF_TRACE_API int wf_trace_read_meta(const char *path, wf_trace_meta_t *m);

/* Walk the trace file at path in time order into sink (its meta in m, as
 * wf_trace_read_meta). 0, or an errno value (EPROTO: not a weft trace, a
 * damaged one, or one without its meta chunk unless sink->unfinished_ok). */
WF_TRACE_API int wf_trace_export(const char *path, const wf_trace_sink_t *sink, wf_trace_meta_t *m);

#endif
