/* Writing a trace's rows in Perfetto's protobuf trace format (perfetto.c).
 * Used by the export (export.c: WEFT_TRACE_FORMAT=pftrace) and by
 * tools/weft-trace-scan.c (weft-trace export); needs nothing from the
 * runtime.
 */
#ifndef WF_TRACE_PERFETTO_H
#define WF_TRACE_PERFETTO_H

#include <stdint.h>
#include <stdio.h>

#include "trace/export.h"

typedef struct wf_pftrace wf_pftrace_t;

/* A writer of packets to f for the process pid running program; NULL if
 * out of memory. */
WF_TRACE_API wf_pftrace_t *wf_pftrace_open(FILE *f, int pid, const char *program);
/* The next row, in time order (the CSV's order). */
WF_TRACE_API void wf_pftrace_row(wf_pftrace_t *p, const wf_trace_row_t *r);
/* Close the slices still open, free p. *packets: how many were written.
 * 0, or ENOMEM if memory ran out on the way (the file is then incomplete). */
WF_TRACE_API int wf_pftrace_close(wf_pftrace_t *p, uint64_t *packets);

#endif
