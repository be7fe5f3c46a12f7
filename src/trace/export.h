/* The raw trace file (written by trace.c) and its export to JSON and CSV
 * (export.c). */
#ifndef WF_TRACE_EXPORT_H
#define WF_TRACE_EXPORT_H

#include <stdint.h>

#include "trace/trace.h"

#define WF_TRACE_MAGIC 0x43544657u /* "WFTC" */

/* A chunk of records of one stream; in memory while it fills. */
typedef struct wf_trace_chunk {
	struct wf_trace_chunk *next; /* in the pool or the flusher's queue */
	int stream;                  /* worker id, -1: the foreign stream */
	wf_trace_ev_t ev[];
} wf_trace_chunk_t;

/* In the raw file every chunk is this header and n records. */
typedef struct {
	uint32_t magic; /* WF_TRACE_MAGIC */
	int32_t stream;
	uint32_t n;
	uint32_t pad;
} wf_trace_chunk_hdr_t;

/* One reading of both clocks, to convert ticks to ns. */
typedef struct {
	uint64_t ticks, mono_ns;
} wf_trace_clock_ref_t;

/* Read both clocks now (trace.c). */
WF_HIDDEN void wf_trace_clock_ref(wf_trace_clock_ref_t *r);

typedef struct {
	int workers;
	wf_trace_clock_ref_t start, end;
	int tsc; /* records carry TSC ticks (else CLOCK_MONOTONIC ns) */
	uint64_t dropped;
	int complete; /* the workers had stopped: nothing was cut off */
} wf_trace_meta_t;

/* Read raw, write base.json and base.csv. 0 or an errno value. */
WF_HIDDEN int wf_trace_export(const char *raw, const char *base, const wf_trace_meta_t *m);

#endif
