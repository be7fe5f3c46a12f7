/* Scheduler event tracing: the hooks the scheduler and the locks call.
 *
 * Compiled in unless the library is configured with -DWEFT_TRACING=OFF
 * (WEFT_TRACING=0 here), and off until a trace is started (WEFT_TRACE=path
 * or weft_config_t.trace). Off, a hook costs one relaxed load of
 * wf_trace_on and a not-taken branch.
 *
 * On, every worker appends fixed-size records to its own stream (no atomics, no
 * locks: only the worker's kernel thread writes it); threads that are not
 * workers share one stream under a spinlock. How the records travel to the
 * file and become JSON and CSV is written down at the top of trace.c; how
 * they are encoded, and the file, at the top of codec.h.
 *
 * Each hook says who calls it. What a, b, x and code mean per record type:
 * enum wf_trace_type (codec.h).
 */
#ifndef WF_TRACE_H
#define WF_TRACE_H

#include <stdint.h>

#include "sched/sched.h"
#include "trace/codec.h"

#ifndef WEFT_TRACING
#define WEFT_TRACING 1
#endif

/* A worker's stream. Owned by the worker's kernel thread while tracing. */
typedef struct wf_trace_stream {
	wf_trace_ev_t *pos, *end; /* free space of the current chunk */
	struct wf_trace_chunk *chunk;
	uint64_t dropped; /* records lost: no chunk to write into (written by
	                     the owner, read by wf_trace_stop: relaxed atomics) */
	int id;           /* worker id, -1 for the shared stream */
} WF_ALIGNED_CL wf_trace_stream_t;

WF_HIDDEN extern int wf_trace_on;
WF_HIDDEN extern int wf_trace_tsc; /* timestamps are TSC ticks */
WF_HIDDEN extern wf_trace_stream_t *wf_trace_streams;

#if WEFT_TRACING
#define WF_TRACING() unlikely(__atomic_load_n(&wf_trace_on, __ATOMIC_RELAXED))
#else
#define WF_TRACING() 0
#endif

/* Trace formats (WEFT_TRACE_FORMAT; trace.c). */
enum {
	WF_TRACE_FMT_JSON = 1,
	WF_TRACE_FMT_CSV = 2,
	WF_TRACE_FMT_WFT = 4,
	WF_TRACE_FMT_PFTRACE = 8
};
/* The formats of a comma-separated list of json, csv, wft and pftrace; 0
 * if the list is empty or names anything else. */
WF_HIDDEN int wf_trace_parse_formats(const char *list);

/* Start tracing into path (see trace.c for the files written) for nworkers
 * workers, before they start. 0, or an errno value (the runtime then does
 * not start: a trace that was asked for and cannot be written is an
 * error). Called by weft_init. */
WF_HIDDEN int wf_trace_start(const char *path, int nworkers);
/* u already runs on `worker` as tracing starts (the root ULT): record it
 * there, with its name. Called by weft_init before the workers start. */
WF_HIDDEN void wf_trace_running(int worker, wf_ult_t *u);
/* Stop, flush and write the trace's files (trace.c). all_stopped: the workers
 * have stopped (weft_shutdown); otherwise (exit() with workers running)
 * records written while it stops may be lost. Called once per start. */
WF_HIDDEN void wf_trace_stop(int all_stopped);
/* In the child of a fork: no tracing (no flusher came along; the trace
 * is the parent's). */
WF_HIDDEN void wf_trace_forked(void);

/* Slow paths (trace.c). */
WF_HIDDEN wf_trace_ev_t *wf_trace_refill(wf_trace_stream_t *s);
WF_HIDDEN void wf_trace_foreign(int type, int code, int32_t x, uint64_t a, uint64_t b);

static inline uint64_t wf_trace_clock(void)
{
#if defined(__x86_64__)
	if (likely(wf_trace_tsc))
		return __builtin_ia32_rdtsc();
#endif
	return wf_now_ns();
}

/* The hooks. Each is called only under WF_TRACING(), and none is inline:
 * the call sites stay a load and a not-taken branch, so that the switch
 * path is compiled as it would be without tracing.
 *
 * wf_trace_emit: append one record for the caller's worker w (NULL: not a
 * worker). Called by w's kernel thread. */
WF_HIDDEN void wf_trace_emit(wf_worker_t *w, int type, int code, int32_t x, uint64_t a, uint64_t b);
/* The switch on w from `from` (NULL: the loop) to `to` (NULL: the loop),
 * with from's after-switch action. Called by the switch tail (sched.c). */
WF_HIDDEN void wf_trace_switch(wf_worker_t *w, wf_ult_t *from, wf_ult_t *to, int action);
/* u was made runnable by the caller (running on w, or NULL). */
WF_HIDDEN void wf_trace_unpark(wf_worker_t *w, wf_ult_t *u);
/* The caller took a contended lock (WF_TRACE_LOCK_*) it began waiting for
 * at t0 (wf_now_ns). Called by the lock's acquirer. */
WF_HIDDEN void wf_trace_lock(const void *lock, int kind, uint64_t t0);

/* A worker spinning for work: write a full chunk for the flusher if one
 * is waiting and nobody else is writing (trace.c). Called by the idle loop
 * (sched.c) between its scans. */
WF_HIDDEN void wf_trace_help(void);

/* u was created by the caller (on w, or NULL), and its name if it has one. */
WF_HIDDEN void wf_trace_create(wf_worker_t *w, wf_ult_t *u);
WF_HIDDEN void wf_trace_name(wf_worker_t *w, wf_ult_t *u);

#endif
