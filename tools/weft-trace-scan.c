/* weft-trace-scan: the reader of weft traces behind weft-trace.
 *
 * weft-trace (Python) finds the file, draws and prints; this program reads
 * the trace once, in one pass and in bounded memory, and hands it the
 * figures as JSON. It reads both of weft's event formats, told apart by
 * their first bytes:
 *
 *   .wft  weft's own compact format (src/trace/codec.h), walked in time
 *         order by the runtime's own export code (src/trace/export.c, built
 *         into this program), which turns records into CSV rows;
 *   .csv  the rows themselves ("# key=value" lines, the header, one row per
 *         event; docs/observability.md).
 *
 * Subcommands (weft-trace-scan -h):
 *   summary    the figures of `weft-trace summary`, as JSON
 *   timeline   a time window's worker lanes (up to a number of ULT runs) and
 *              the busy workers per time bin, as JSON
 *   pftrace    the trace in Perfetto's protobuf format (src/trace/perfetto.c)
 *   csv, json  a .wft trace as CSV or Chrome Trace Event JSON on stdout
 *
 * How rows are read. Each worker is a small state machine driven by its own
 * rows (rows come in time order, so one pass suffices):
 *
 *     loop   --run-->  run  --stop-->  switch  --run-->  run
 *     switch --idle--> loop --sleep--> sleep   --wake--> loop
 *     any    --end-->  (ended)
 *
 * A worker starts in `loop` at time 0. Time in `run` is busy; time in
 * `switch` (between a stop and the next run) and in `loop` while awake is
 * scheduler time; time in `sleep` is idle. Every interval between two
 * transitions goes to the summary's accounting or the timeline's lanes. A
 * row that does not fit the state it arrives in is not fatal: the interval
 * is closed as whatever the worker was doing and a note is kept, so that a
 * trace with dropped events still gives figures, and a tracer bug shows up
 * as notes instead of silently skewed numbers.
 *
 * Memory: per worker a few counters; per ULT alive a record (freed when it
 * exits: the busiest are kept in a heap of --top entries); per contended
 * lock its counters and one bucket array. A trace of 24 million events with
 * millions of short-lived ULTs is read in a few seconds and tens of MB.
 *
 * Exit status: 0, or 2 with a message on stderr for input that is not a
 * readable trace or bad options.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/export.h"
#include "trace/idmap.h"
#include "trace/perfetto.h"

#define MAX_NOTES 20
#define NO_WORKER INT_MIN

enum state { LOOP, RUN, SWITCH, SLEEP, ENDED, NSTATES };
static const char *const state_names[NSTATES] = {"loop", "run", "switch", "sleep", "ended"};

static const char *prog_path; /* the trace, as given */

static _Noreturn void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p)
		fail("out of memory");
	return p;
}

static void *xrealloc(void *p, size_t size)
{
	p = realloc(p, size);
	if (!p)
		fail("out of memory");
	return p;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s);
	if (!d)
		fail("out of memory");
	return d;
}

/* ---- JSON output ---------------------------------------------------------- */

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* ---- maps from ids to records (src/trace/idmap.h) ------------------------- */

/* An idmap, and the value of key 0 (a row's ult or lock address column
 * can be 0), which the idmap cannot hold. */
typedef struct {
	wf_idmap_t m;
	void *zero;
} map_t;

static void *map_get(map_t *m, uint64_t key)
{
	return key ? (void *)(uintptr_t)wf_idmap_get(&m->m, key) : m->zero;
}

static void map_put(map_t *m, uint64_t key, void *v)
{
	if (!key)
		m->zero = v;
	else if (wf_idmap_put(&m->m, key, (uint64_t)(uintptr_t)v))
		fail("out of memory");
}

static void map_del(map_t *m, uint64_t key)
{
	if (!key)
		m->zero = NULL;
	else
		wf_idmap_take(&m->m, key);
}

/* Every value: slots 0..cap-1 of the idmap (NULL if empty), then key 0's. */
static size_t map_slots(const map_t *m)
{
	return m->m.cap + 1;
}

static void *map_at(const map_t *m, size_t i)
{
	if (i == m->m.cap)
		return m->zero;
	return m->m.k[i] ? (void *)(uintptr_t)m->m.v[i] : NULL;
}

/* The key of a slot map_at gave a value for. */
static uint64_t map_key(const map_t *m, size_t i)
{
	return i == m->m.cap ? 0 : m->m.k[i];
}

/* ---- the trace's metadata, and its rows ----------------------------------- */

typedef struct {
	char program[256], sched[256], clock[32];
	long long pid;
	int has_pid;
	int workers;
	long long dropped;
	long long duration; /* -1: not given */
} meta_t;

typedef struct row {
	int64_t t;
	int w;
	const char *ev;
	uint64_t u;
	const char *name;
	const char *arg1, *arg2; /* as text (CSV), or NULL with the numbers below */
	int64_t a1, a2;
	const char *detail;
} row_t;

typedef struct scan scan_t;
typedef void (*row_fn)(scan_t *, const row_t *);

/* ---- per-worker lanes ----------------------------------------------------- */

typedef struct {
	int worker;
	enum state state;
	int64_t since;
	uint64_t ult;
	int seen;    /* it has had a state row (run, stop, idle, ...) */
	int64_t end; /* its end row's time, or the trace's end; -1 none yet */
	int64_t time[NSTATES];
	uint64_t runs, yields, parks, exits, steals, migrations, sleeps, creates, unparks;
	/* timeline: the load per bin */
	double *load;
} lane_t;

/* A ULT alive (or kept among the busiest). */
typedef struct ult {
	uint64_t id;
	uint64_t runs, busy, blocked, migrations, steals;
	int64_t creator;
	int has_creator, exited;
	int last_worker; /* NO_WORKER: not seen running */
	int migrating;   /* worker of its migrate row, until its run; NO_WORKER */
	int stopped;     /* stopped and not run again ... */
	int reason;      /* ... for this block reason (index) */
	int64_t since;   /* ... since */
	uint64_t *by_w;  /* busy per worker, nby entries */
	int nby;
	char *name;
} ult_t;

typedef struct {
	char *name;
	uint64_t count;
	int64_t total;
	uint64_t open; /* still blocked at the end */
} reason_t;

typedef struct {
	uint64_t addr;
	char *kind;
	uint64_t count;
	int64_t total, max;
	int64_t *times;
	size_t ntimes, cap;
} lock_t;

/* Timeline intervals in the window. */
typedef struct {
	int64_t t0, t1;
	uint64_t ult;
	int w, state;
} ival_t;

struct scan {
	meta_t meta;
	const char *path;
	lane_t **lanes; /* by worker, NULL if none */
	int nlanes;     /* allocated entries */
	int *order;     /* workers in the order of their first state rows */
	int norder;
	char *notes[MAX_NOTES];
	uint64_t n_notes, n_rows, foreign_rows, dropped_rows;
	int64_t last_time;
	struct {
		char *ev;
		uint64_t n;
	} unknown[64];
	int nunknown;
	uint64_t line; /* CSV line of the current row, 0 for .wft */

	/* summary */
	int summary;
	map_t ults;
	reason_t reasons[64];
	int nreasons;
	map_t locks;
	lock_t **lock_list;
	size_t nlocks;
	ult_t **heap; /* the busiest ULTs that exited, a min-heap of `top` */
	int nheap, top;
	uint64_t n_ults;

	/* timeline */
	int timeline;
	int64_t lo, hi; /* window; hi -1: to the end */
	uint64_t n_slices, max_slices;
	ival_t *ivals;
	size_t nivals, ivcap;
	int keep_ivals;
	int nbins;
	double width;
	map_t names; /* timeline: ULT -> name, for ULTs that ran in the window */
};

static void note(scan_t *s, const char *fmt, ...)
{
	s->n_notes++;
	if (s->n_notes > MAX_NOTES)
		return;
	va_list ap;
	va_start(ap, fmt);
	char *text;
	if (vasprintf(&text, fmt, ap) < 0)
		fail("out of memory");
	va_end(ap);
	s->notes[s->n_notes - 1] = text;
}

static lane_t *lane_of(scan_t *s, int w)
{
	if (w >= s->nlanes) {
		if (w >= (1 << 20))
			fail("%s: worker %d: not a worker number weft uses", s->path, w);
		int n = w + 1 > s->nlanes * 2 ? w + 1 : s->nlanes * 2;
		s->lanes = xrealloc(s->lanes, (size_t)n * sizeof *s->lanes);
		memset(s->lanes + s->nlanes, 0, (size_t)(n - s->nlanes) * sizeof *s->lanes);
		s->order = xrealloc(s->order, (size_t)n * sizeof *s->order);
		s->nlanes = n;
	}
	lane_t *l = s->lanes[w];
	if (!l) {
		l = s->lanes[w] = xcalloc(1, sizeof *l);
		l->worker = w;
		l->state = LOOP;
		l->end = -1;
		if (s->timeline && s->nbins)
			l->load = xcalloc((size_t)s->nbins, sizeof *l->load);
	}
	return l;
}

/* ---- per-ULT records and the heap of the busiest ------------------------- */

static ult_t *ult_of(scan_t *s, uint64_t id)
{
	ult_t *u = map_get(&s->ults, id);
	if (!u) {
		u = xcalloc(1, sizeof *u);
		u->id = id;
		u->last_worker = u->migrating = NO_WORKER;
		map_put(&s->ults, id, u);
		s->n_ults += id != 0;
	}
	return u;
}

static void ult_free(ult_t *u)
{
	free(u->by_w);
	free(u->name);
	free(u);
}

/* a ranks above b: busier, then the smaller id. */
static int ult_above(const ult_t *a, const ult_t *b)
{
	return a->busy != b->busy ? a->busy > b->busy : a->id < b->id;
}

static void heap_down(scan_t *s, int i)
{
	for (;;) {
		int m = i, l = 2 * i + 1, r = l + 1;
		if (l < s->nheap && ult_above(s->heap[m], s->heap[l]))
			m = l;
		if (r < s->nheap && ult_above(s->heap[m], s->heap[r]))
			m = r;
		if (m == i)
			return;
		ult_t *t = s->heap[i];
		s->heap[i] = s->heap[m];
		s->heap[m] = t;
		i = m;
	}
}

/* Keep u if it is among the `top` busiest seen so far (root: the least). */
static void heap_offer(scan_t *s, ult_t *u)
{
	if (u->id == 0) {
		ult_free(u);
		return;
	}
	if (s->nheap < s->top) {
		int i = s->nheap++;
		s->heap[i] = u;
		while (i > 0 && ult_above(s->heap[(i - 1) / 2], s->heap[i])) {
			ult_t *t = s->heap[i];
			s->heap[i] = s->heap[(i - 1) / 2];
			s->heap[(i - 1) / 2] = t;
			i = (i - 1) / 2;
		}
		return;
	}
	if (ult_above(u, s->heap[0])) {
		ult_free(s->heap[0]);
		s->heap[0] = u;
		heap_down(s, 0);
	} else {
		ult_free(u);
	}
}

static int reason_of(scan_t *s, const char *how)
{
	for (int i = 0; i < s->nreasons; i++)
		if (!strcmp(s->reasons[i].name, how))
			return i;
	if (s->nreasons == 64)
		fail("%s: more than 64 different ways to stop in the detail column", s->path);
	s->reasons[s->nreasons].name = xstrdup(how);
	return s->nreasons++;
}

static void add_blocked(scan_t *s, int reason, int64_t d, ult_t *u)
{
	reason_t *r = &s->reasons[reason];
	r->count++;
	r->total += d;
	if (strcmp(r->name, "yield") && strcmp(r->name, "preempted")) /* ready, not blocked */
		u->blocked += (uint64_t)d;
}

/* ---- intervals ------------------------------------------------------------ */

static void add_load(scan_t *s, lane_t *l, int64_t t0, int64_t t1)
{
	if (t0 < s->lo)
		return;
	long b = (long)((double)(t0 - s->lo) / s->width);
	while (b < s->nbins) {
		double b0 = (double)s->lo + (double)b * s->width, b1 = b0 + s->width;
		double part =
			((double)t1 < b1 ? (double)t1 : b1) - ((double)t0 > b0 ? (double)t0 : b0);
		if (part > 0)
			l->load[b] += part / s->width;
		if ((double)t1 <= b1)
			break;
		b++;
	}
}

static void interval(scan_t *s, lane_t *l, enum state st, int64_t t0, int64_t t1, uint64_t ult)
{
	if (s->summary) {
		int64_t d = t1 - t0;
		l->time[st] += d;
		if (st == RUN) {
			ult_t *u = ult_of(s, ult);
			u->busy += (uint64_t)d;
			if (l->worker >= u->nby) {
				int n = l->worker + 1;
				u->by_w = xrealloc(u->by_w, (size_t)n * sizeof *u->by_w);
				memset(u->by_w + u->nby, 0, (size_t)(n - u->nby) * sizeof *u->by_w);
				u->nby = n;
			}
			u->by_w[l->worker] += (uint64_t)d;
		}
	}
	if (s->timeline) {
		if (st == ENDED)
			return;
		int64_t hi = s->hi >= 0 ? s->hi : t1;
		if (t0 < s->lo)
			t0 = s->lo;
		if (t1 > hi)
			t1 = hi;
		if (t1 <= t0)
			return;
		if (st == RUN) {
			s->n_slices++;
			if (s->nbins)
				add_load(s, l, t0, t1);
		}
		if (s->keep_ivals) {
			if (s->nivals == s->ivcap) {
				s->ivcap = s->ivcap ? s->ivcap * 2 : 4096;
				s->ivals = xrealloc(s->ivals, s->ivcap * sizeof *s->ivals);
			}
			s->ivals[s->nivals++] = (ival_t){t0, t1, ult, l->worker, st};
		}
	}
}

/* Close the lane's current interval at t and enter state. */
static void move(scan_t *s, lane_t *l, int64_t t, enum state st, uint64_t ult)
{
	if (t < l->since) {
		note(s, "worker %d: time goes back from %" PRId64 " to %" PRId64 " ns", l->worker,
		     l->since, t);
		t = l->since;
	}
	if (t > l->since && l->state != ENDED)
		interval(s, l, l->state, l->since, t, l->ult);
	l->state = st;
	l->since = t;
	l->ult = ult;
}

static const char *no_runs_text(const lane_t *l, char *buf, size_t n)
{
	if (l->state == RUN)
		snprintf(buf, n, "ULT %" PRIu64 " runs", l->ult);
	else
		snprintf(buf, n, "no ULT runs (%s)", state_names[l->state]);
	return buf;
}

static void state_row(scan_t *s, int64_t t, int w, const char *ev, uint64_t ult)
{
	lane_t *l = lane_of(s, w);
	int first = !l->seen;
	if (first)
		s->order[s->norder++] = w;
	l->seen = 1;
	enum state st = l->state;
	if (st == ENDED) {
		note(s, "worker %d: %s row at %" PRId64 " ns after its end row", w, ev, t);
		return;
	}
	if (!strcmp(ev, "run")) {
		if (st == RUN)
			note(s,
			     "worker %d: ULT %" PRIu64 " runs at %" PRId64 " ns while ULT %" PRIu64
			     " still runs (no stop)",
			     w, ult, t, l->ult);
		else if (st == SLEEP)
			note(s, "worker %d: run at %" PRId64 " ns while asleep (no wake)", w, t);
		move(s, l, t, RUN, ult);
	} else if (!strcmp(ev, "stop")) {
		if (st != RUN || l->ult != ult) {
			if (first) {
				/* The ULT was running when the trace began. */
				note(s,
				     "worker %d: first row is a stop of ULT %" PRIu64 " at %" PRId64
				     " ns; counted as running since the trace began",
				     w, ult, t);
				l->state = RUN;
				l->ult = ult;
			} else {
				char buf[64];
				note(s,
				     "worker %d: stop of ULT %" PRIu64 " at %" PRId64 " ns, but %s",
				     w, ult, t, no_runs_text(l, buf, sizeof buf));
			}
		}
		move(s, l, t, SWITCH, 0);
	} else if (!strcmp(ev, "idle")) {
		if (st == RUN)
			note(s,
			     "worker %d: idle at %" PRId64 " ns while ULT %" PRIu64
			     " runs (no stop)",
			     w, t, l->ult);
		if (st != LOOP)
			move(s, l, t, LOOP, 0);
	} else if (!strcmp(ev, "sleep")) {
		if (st != LOOP)
			note(s,
			     "worker %d: sleep at %" PRId64 " ns in state %s (expected after idle)",
			     w, t, state_names[st]);
		move(s, l, t, SLEEP, 0);
	} else if (!strcmp(ev, "wake")) {
		if (st != SLEEP)
			note(s, "worker %d: wake at %" PRId64 " ns without a sleep", w, t);
		else
			move(s, l, t, LOOP, 0);
	} else { /* end */
		move(s, l, t, ENDED, 0);
		l->end = t;
	}
}

/* ---- the summary's bookkeeping per row ------------------------------------ */

static int64_t arg_int(scan_t *s, const row_t *r, int which, const char *what)
{
	const char *text = which == 1 ? r->arg1 : r->arg2;
	if (!text)
		return which == 1 ? r->a1 : r->a2;
	if (!*text)
		return 0;
	char *end;
	errno = 0;
	long long v = strtoll(text, &end, 0);
	if (errno || *end) {
		/* Addresses above 2^63 in hex. */
		errno = 0;
		unsigned long long u = strtoull(text, &end, 0);
		if (errno || *end || text[0] == '-')
			fail("%s line %" PRIu64 ": %s is not an integer: '%s'", s->path, s->line,
			     what, text);
		v = (long long)u;
	}
	return v;
}

static void check_run(scan_t *s, int64_t t, int w, ult_t *u, int64_t last)
{
	int known = u->last_worker == NO_WORKER ? -1 : u->last_worker;
	int migrated_to = u->migrating;
	u->migrating = NO_WORKER;
	if (last != known)
		note(s,
		     "run of ULT %" PRIu64 " on worker %d at %" PRId64 " ns: last ran on %" PRId64
		     ", the rows say %d",
		     u->id, w, t, last, known);
	if (known != -1 && known != w && migrated_to != w)
		note(s,
		     "run of ULT %" PRIu64 " on worker %d at %" PRId64
		     " ns after it ran on %d, without a migrate row",
		     u->id, w, t, known);
	u->last_worker = w;
}

static void summary_event(scan_t *s, const row_t *r)
{
	const char *ev = r->ev;
	int w = r->w;
	lane_t *l = w >= 0 ? lane_of(s, w) : NULL; /* counters of worker -1 are not shown */
	static lane_t sink;
	if (!l)
		l = &sink;
	if (w < 0)
		s->foreign_rows++;
	if (!strcmp(ev, "run")) {
		l->runs++;
		ult_t *u = ult_of(s, r->u);
		u->runs++;
		check_run(s, r->t, w, u, arg_int(s, r, 1, "arg1"));
		if (u->stopped) {
			u->stopped = 0;
			add_blocked(s, u->reason, r->t - u->since, u);
		}
	} else if (!strcmp(ev, "stop")) {
		ult_t *u = ult_of(s, r->u);
		u->last_worker = w;
		const char *how = *r->detail ? r->detail : "other";
		if (!strcmp(how, "yield") || !strcmp(how, "preempted")) {
			l->yields++;
		} else if (!strcmp(how, "exit")) {
			l->exits++;
			u->exited = 1;
		} else {
			l->parks++;
		}
		if (strcmp(how, "exit")) {
			u->stopped = 1;
			u->reason = reason_of(s, how);
			u->since = r->t;
		} else {
			/* It is done: rank it and forget it. */
			map_del(&s->ults, u->id);
			heap_offer(s, u);
		}
	} else if (!strcmp(ev, "create")) {
		ult_t *u = ult_of(s, r->u);
		u->creator = arg_int(s, r, 1, "arg1");
		u->has_creator = 1;
		l->creates++;
	} else if (!strcmp(ev, "migrate")) {
		l->migrations++;
		ult_t *u = ult_of(s, r->u);
		u->migrations++;
		u->migrating = w;
	} else if (!strcmp(ev, "steal")) {
		l->steals++;
		ult_of(s, r->u)->steals++;
	} else if (!strcmp(ev, "unpark")) {
		l->unparks++;
	} else if (!strcmp(ev, "sleep")) {
		l->sleeps++;
	} else if (!strcmp(ev, "lock")) {
		uint64_t addr = (uint64_t)arg_int(s, r, 1, "lock address");
		int64_t wait = arg_int(s, r, 2, "lock wait");
		lock_t *lk = map_get(&s->locks, addr);
		if (!lk) {
			lk = xcalloc(1, sizeof *lk);
			lk->addr = addr;
			lk->kind = xstrdup(*r->detail ? r->detail : "?");
			map_put(&s->locks, addr, lk);
			s->lock_list =
				xrealloc(s->lock_list, (s->nlocks + 1) * sizeof *s->lock_list);
			s->lock_list[s->nlocks++] = lk;
		}
		lk->count++;
		lk->total += wait;
		if (wait > lk->max)
			lk->max = wait;
		if (lk->ntimes == lk->cap) {
			lk->cap = lk->cap ? lk->cap * 2 : 16;
			lk->times = xrealloc(lk->times, lk->cap * sizeof *lk->times);
		}
		lk->times[lk->ntimes++] = r->t;
	} else if (!strcmp(ev, "dropped")) {
		s->dropped_rows += (uint64_t)arg_int(s, r, 1, "dropped count");
	}
}

static int is_state_event(const char *ev)
{
	return !strcmp(ev, "run") || !strcmp(ev, "stop") || !strcmp(ev, "idle") ||
	       !strcmp(ev, "sleep") || !strcmp(ev, "wake") || !strcmp(ev, "end");
}

static int is_known_event(const char *ev)
{
	static const char *const other[] = {"create", "name", "migrate", "steal",
					    "unpark", "lock", "dropped"};
	if (is_state_event(ev))
		return 1;
	for (size_t i = 0; i < sizeof other / sizeof *other; i++)
		if (!strcmp(ev, other[i]))
			return 1;
	return 0;
}

static void on_row(scan_t *s, const row_t *r)
{
	s->n_rows++;
	if (r->t > s->last_time)
		s->last_time = r->t;
	if (*r->name && r->u) {
		if (s->summary) {
			ult_t *u = ult_of(s, r->u);
			if (!u->name || strcmp(u->name, r->name)) {
				free(u->name);
				u->name = xstrdup(r->name);
			}
		} else if (s->keep_ivals && r->t >= s->lo && (s->hi < 0 || r->t <= s->hi) &&
			   !map_get(&s->names, r->u)) {
			map_put(&s->names, r->u, xstrdup(r->name));
		}
	}
	if (is_state_event(r->ev)) {
		if (r->w < 0 && !strcmp(r->ev, "end")) {
			/* the stream of non-worker threads may end too */
		} else if (r->w < 0) {
			note(s, "%s line %" PRIu64 ": %s row from a thread that is not a worker",
			     s->path, s->line, r->ev);
		} else {
			state_row(s, r->t, r->w, r->ev, r->u);
		}
	} else if (!is_known_event(r->ev)) {
		int i = 0;
		while (i < s->nunknown && strcmp(s->unknown[i].ev, r->ev))
			i++;
		if (i == s->nunknown && i < 64) {
			s->unknown[i].ev = xstrdup(r->ev);
			s->nunknown++;
		}
		if (i < 64)
			s->unknown[i].n++;
	}
	if (s->summary)
		summary_event(s, r);
}

/* The trace's length: duration_ns, or the last row's time if later. */
static int64_t duration(const scan_t *s)
{
	if (s->meta.duration < 0)
		return s->last_time;
	return s->meta.duration > s->last_time ? s->meta.duration : s->last_time;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* After the last row: close every lane at its end row or the trace's end. */
static void finish(scan_t *s)
{
	int64_t end = duration(s);
	for (int i = 0; i < s->norder; i++) {
		lane_t *l = s->lanes[s->order[i]];
		if (l->state != ENDED) {
			move(s, l, end > l->since ? end : l->since, ENDED, 0);
			l->end = end;
		}
	}
	char *names[64];
	for (int i = 0; i < s->nunknown; i++)
		names[i] = s->unknown[i].ev;
	qsort(names, (size_t)s->nunknown, sizeof *names, cmp_str);
	for (int i = 0; i < s->nunknown; i++)
		for (int j = 0; j < s->nunknown; j++)
			if (s->unknown[j].ev == names[i])
				note(s, "%" PRIu64 " rows of unknown event '%s' (ignored)",
				     s->unknown[j].n, names[i]);
}

/* ---- reading a CSV trace -------------------------------------------------- */

static const char csv_header[] = "time_ns,worker,event,ult,name,arg1,arg2,detail";

static void meta_line(meta_t *m, const char *body)
{
	while (*body == ' ' || *body == '\t')
		body++;
	const char *eq = strchr(body, '=');
	if (!eq || eq == body)
		return;
	size_t kl = (size_t)(eq - body);
	for (size_t i = 0; i < kl; i++)
		if (body[i] == ' ')
			return;
	char key[32];
	if (kl >= sizeof key)
		return;
	memcpy(key, body, kl);
	key[kl] = 0;
	char v[256];
	snprintf(v, sizeof v, "%s", eq + 1);
	for (size_t n = strlen(v); n && (v[n - 1] == ' ' || v[n - 1] == '\t');)
		v[--n] = 0;
	char *end;
	long long n = strtoll(v, &end, 10);
	int num = *v && !*end;
	if (!strcmp(key, "program"))
		snprintf(m->program, sizeof m->program, "%s", v);
	else if (!strcmp(key, "sched"))
		snprintf(m->sched, sizeof m->sched, "%s", v);
	else if (!strcmp(key, "clock"))
		snprintf(m->clock, sizeof m->clock, "%.31s", v); /* "tsc" or "monotonic" */
	else if (!strcmp(key, "pid") && num) {
		m->pid = n;
		m->has_pid = 1;
	} else if (!strcmp(key, "workers") && num && n >= 0 && n < (1 << 20))
		m->workers = (int)n;
	else if (!strcmp(key, "dropped") && num)
		m->dropped = n;
	else if (!strcmp(key, "duration_ns") && num)
		m->duration = n;
}

static int64_t col_int(scan_t *s, const char *text, const char *line)
{
	char *end;
	errno = 0;
	long long v = strtoll(text, &end, 10);
	if (errno || !*text || *end)
		fail("%s line %" PRIu64 ": time, worker and ult must be integers: '%.80s'", s->path,
		     s->line, line);
	return v;
}

/* Read the CSV at f (already open), its comments into s->meta, then each
 * row into fn. */
static void read_csv(scan_t *s, FILE *f, row_fn fn)
{
	char *line = NULL, *copy = NULL;
	size_t cap = 0, ccap = 0;
	ssize_t n;
	int header = 0;
	while ((n = getline(&line, &cap, f)) > 0) {
		s->line++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = 0;
		if (line[0] == '#') {
			meta_line(&s->meta, line + 1);
			continue;
		}
		if (!line[strspn(line, " \t")])
			continue;
		if (strncmp(line, csv_header, sizeof csv_header - 1) ||
		    (line[sizeof csv_header - 1] && line[sizeof csv_header - 1] != ','))
			fail("%s is not a weft trace CSV: expected the header line '%s', found "
			     "'%.80s' on line %" PRIu64,
			     s->path, csv_header, line, s->line);
		header = 1;
		break;
	}
	if (!header)
		fail("%s is not a weft trace CSV: no header line '%s'", s->path, csv_header);
	while ((n = getline(&line, &cap, f)) > 0) {
		s->line++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = 0;
		if ((size_t)n + 1 > ccap) {
			ccap = (size_t)n + 1;
			copy = xrealloc(copy, ccap);
		}
		memcpy(copy, line, (size_t)n + 1);
		/* Names never contain commas (the writer replaces them): split
		 * into 8 columns, any further comma belongs to detail. */
		char *col[8];
		int nc = 0;
		char *p = line;
		col[nc++] = p;
		while (nc < 8 && (p = strchr(p, ','))) {
			*p++ = 0;
			col[nc++] = p;
		}
		if (nc < 8) {
			if (!copy[strspn(copy, " \t")])
				continue;
			fail("%s line %" PRIu64 ": expected 8 columns, found %d: '%.80s'", s->path,
			     s->line, nc, copy);
		}
		row_t r = {
			.t = col_int(s, col[0], copy),
			.w = (int)col_int(s, col[1], copy),
			.ev = col[2],
			.u = (uint64_t)col_int(s, col[3], copy),
			.name = col[4],
			.arg1 = col[5],
			.arg2 = col[6],
			.detail = col[7],
		};
		fn(s, &r);
	}
	free(line);
	free(copy);
}

/* ---- reading a .wft trace ------------------------------------------------- */

typedef struct {
	scan_t *s;
	row_fn fn;
} wft_ctx_t;

static void wft_row(void *ctx, const wf_trace_row_t *w)
{
	wft_ctx_t *c = ctx;
	row_t r = {
		.t = (int64_t)w->ns,
		.w = w->worker,
		.ev = w->event,
		.u = w->ult,
		.name = w->name,
		.a1 = w->arg1,
		.a2 = w->arg2,
		.detail = w->detail,
	};
	c->fn(c->s, &r);
}

static const char *errtext(int e)
{
	return e == EPROTO ? "not a complete weft trace (a damaged file, or its program died "
			     "before the runtime stopped)"
			   : strerror(e);
}

static void meta_from_wft(meta_t *m, const wf_trace_meta_t *w)
{
	memset(m, 0, sizeof *m);
	snprintf(m->program, sizeof m->program, "%s", w->program);
	snprintf(m->sched, sizeof m->sched, "%s", w->sched);
	snprintf(m->clock, sizeof m->clock, "%s", w->clock);
	m->pid = w->pid;
	m->has_pid = 1;
	m->workers = w->workers;
	m->dropped = (long long)w->dropped;
	m->duration = (long long)w->duration_ns;
}

static int is_wft(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		fail("%s: %s", path, strerror(errno));
	char magic[8];
	int yes = fread(magic, 1, 8, f) == 8 && !memcmp(magic, WF_TRACE_FILE_MAGIC, 8);
	fclose(f);
	return yes;
}

/* Read the trace at path (either format) into fn; s->meta filled first
 * for .wft, as the comments come for CSV. */
static void read_trace(scan_t *s, const char *path, row_fn fn)
{
	s->path = path;
	if (is_wft(path)) {
		wf_trace_meta_t wm;
		int e = wf_trace_read_meta(path, &wm);
		/* EPROTO here: no (readable) meta chunk. The walk tells a trace
		 * whose program died, which it reads, from a damaged one. */
		if (e && e != EPROTO)
			fail("%s: %s", path, errtext(e));
		int unfinished = e != 0;
		if (!unfinished)
			meta_from_wft(&s->meta, &wm);
		wft_ctx_t c = {s, fn};
		wf_trace_sink_t sink = {.row = wft_row, .ctx = &c, .unfinished_ok = 1};
		if ((e = wf_trace_export(path, &sink, &wm)))
			fail("%s: %s", path, errtext(e));
		if (unfinished) {
			meta_from_wft(&s->meta, &wm);
			s->meta.duration = -1;
			s->meta.has_pid = 0;
			note(s,
			     "unfinished trace: its program died while tracing (no meta chunk), so "
			     "times are raw clock readings (TSC ticks on x86-64) since its first "
			     "record, and what its workers had not flushed is missing");
		}
		return;
	}
	FILE *f = fopen(path, "r");
	if (!f)
		fail("%s: %s", path, strerror(errno));
	read_csv(s, f, fn);
	fclose(f);
}

/* ---- summary -------------------------------------------------------------- */

static int cmp_lock(const void *a, const void *b)
{
	const lock_t *x = *(lock_t *const *)a, *y = *(lock_t *const *)b;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	char ax[24], ay[24];
	snprintf(ax, sizeof ax, "0x%" PRIx64, x->addr);
	snprintf(ay, sizeof ay, "0x%" PRIx64, y->addr);
	return strcmp(ax, ay);
}

static int cmp_ult(const void *a, const void *b)
{
	const ult_t *x = *(ult_t *const *)a, *y = *(ult_t *const *)b;
	return ult_above(x, y) ? -1 : ult_above(y, x) ? 1 : 0;
}

static int cmp_reason(const void *a, const void *b)
{
	return strcmp(((const reason_t *)a)->name, ((const reason_t *)b)->name);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* round(100 * x / dur, 2) as Python prints it, near enough for JSON. */
static void pct(FILE *f, const char *key, double x, int64_t dur)
{
	fprintf(f, ", \"%s\": %.2f", key, dur > 0 ? 100.0 * x / (double)dur : 0.0);
}

static void print_meta(FILE *f, const scan_t *s)
{
	fprintf(f, "\"path\": ");
	json_str(f, prog_path);
	fprintf(f, ", \"program\": ");
	json_str(f, s->meta.program);
	if (s->meta.has_pid)
		fprintf(f, ", \"pid\": %lld", s->meta.pid);
	else
		fprintf(f, ", \"pid\": null");
	fprintf(f, ", \"workers\": %d, \"sched\": ", s->meta.workers);
	json_str(f, s->meta.sched);
	fprintf(f, ", \"clock\": ");
	json_str(f, s->meta.clock);
}

/* The workers to report: 0..workers-1 and every worker with rows. */
static int *report_workers(const scan_t *s, int *n)
{
	int *ws = xcalloc((size_t)(s->meta.workers + s->norder), sizeof *ws);
	int k = 0;
	for (int w = 0; w < s->meta.workers; w++)
		ws[k++] = w;
	for (int i = 0; i < s->norder; i++)
		if (s->order[i] >= s->meta.workers)
			ws[k++] = s->order[i];
	qsort(ws, (size_t)k, sizeof *ws, cmp_int);
	*n = k;
	return ws;
}

static void print_notes(FILE *f, const scan_t *s)
{
	fprintf(f, "\"notes\": [");
	uint64_t kept = s->n_notes < MAX_NOTES ? s->n_notes : MAX_NOTES;
	for (uint64_t i = 0; i < kept; i++) {
		fprintf(f, "%s", i ? ", " : "");
		json_str(f, s->notes[i]);
	}
	if (s->n_notes > kept)
		fprintf(f, "%s\"... and %" PRIu64 " more notes\"", kept ? ", " : "",
			s->n_notes - kept);
	fprintf(f, "]");
}

static int is_lock_reason(const char *r)
{
	return !strcmp(r, "mutex") || !strcmp(r, "rwlock") || !strcmp(r, "cond");
}

static void print_summary(scan_t *s, int nbuckets, FILE *f)
{
	int64_t dur = duration(s);
	/* A ULT stopped and never run again is blocked until the trace ends. */
	for (size_t i = 0; i < map_slots(&s->ults); i++) {
		ult_t *u = map_at(&s->ults, i);
		if (u && u->stopped) {
			add_blocked(s, u->reason, dur - u->since, u);
			s->reasons[u->reason].open++;
		}
	}

	fprintf(f, "{\"trace\": {");
	print_meta(f, s);
	fprintf(f,
		", \"dropped\": %lld, \"duration_ns\": %" PRId64 ", \"rows\": %" PRIu64
		", \"foreign_rows\": %" PRIu64 "},\n",
		s->meta.dropped > (long long)s->dropped_rows ? s->meta.dropped
							     : (long long)s->dropped_rows,
		dur, s->n_rows, s->foreign_rows);

	int nw;
	int *ws = report_workers(s, &nw);
	int64_t tot_busy = 0, tot_sched = 0, tot_idle = 0;
	fprintf(f, "\"workers\": [");
	for (int i = 0; i < nw; i++) {
		int w = ws[i];
		lane_t zero = {.end = -1}, *l = w < s->nlanes && s->lanes[w] ? s->lanes[w] : &zero;
		int64_t busy = l->time[RUN], sched = l->time[SWITCH] + l->time[LOOP],
			idle = l->time[SLEEP];
		fprintf(f,
			"%s\n {\"worker\": %d, \"busy_ns\": %" PRId64 ", \"scheduler_ns\": %" PRId64
			", \"idle_ns\": %" PRId64 ", \"switch_ns\": %" PRId64
			", \"loop_ns\": %" PRId64,
			i ? "," : "", w, busy, sched, idle, l->time[SWITCH], l->time[LOOP]);
		pct(f, "busy_pct", (double)busy, dur);
		pct(f, "scheduler_pct", (double)sched, dur);
		pct(f, "idle_pct", (double)idle, dur);
		fprintf(f,
			", \"runs\": %" PRIu64 ", \"yields\": %" PRIu64 ", \"parks\": %" PRIu64
			", \"exits\": %" PRIu64 ", \"steals\": %" PRIu64
			", \"migrations\": %" PRIu64 ", \"sleeps\": %" PRIu64
			", \"creates\": %" PRIu64 ", \"unparks\": %" PRIu64,
			l->runs, l->yields, l->parks, l->exits, l->steals, l->migrations, l->sleeps,
			l->creates, l->unparks);
		if (l->seen && l->end >= 0)
			fprintf(f, ", \"end_ns\": %" PRId64 "}", l->end);
		else
			fprintf(f, ", \"end_ns\": null}");
		tot_busy += busy;
		tot_sched += sched;
		tot_idle += idle;
	}
	fprintf(f,
		"],\n\"totals\": {\"busy_ns\": %" PRId64 ", \"scheduler_ns\": %" PRId64
		", \"idle_ns\": %" PRId64,
		tot_busy, tot_sched, tot_idle);
	/* busy_pct here: of the capacity, all workers for the whole trace;
	 * rounded twice, as weft-trace always has. */
	char p2[64];
	snprintf(p2, sizeof p2, "%.2f", dur > 0 ? 100.0 * (double)tot_busy / (double)dur : 0.0);
	fprintf(f, ", \"busy_pct\": %.2f},\n", strtod(p2, NULL) / (nw > 1 ? nw : 1));

	/* Locks, most waited-for first, with contended acquisitions per bucket. */
	double width = dur > 0 ? (double)dur / nbuckets : 1;
	if (s->nlocks) /* qsort's base may not be NULL, even for 0 entries */
		qsort(s->lock_list, s->nlocks, sizeof *s->lock_list, cmp_lock);
	uint64_t *buckets = xcalloc((size_t)nbuckets, sizeof *buckets);
	fprintf(f, "\"locks\": [");
	for (size_t i = 0; i < s->nlocks; i++) {
		lock_t *lk = s->lock_list[i];
		memset(buckets, 0, (size_t)nbuckets * sizeof *buckets);
		for (size_t j = 0; j < lk->ntimes; j++) {
			double b = (double)lk->times[j] / width;
			long bi = b < 0 ? 0 : b >= nbuckets ? nbuckets - 1 : (long)b;
			buckets[bi]++;
		}
		fprintf(f, "%s\n {\"address\": \"0x%" PRIx64 "\", \"kind\": ", i ? "," : "",
			lk->addr);
		json_str(f, lk->kind);
		fprintf(f,
			", \"contended\": %" PRIu64 ", \"wait_total_ns\": %" PRId64
			", \"wait_mean_ns\": %" PRId64 ", \"wait_max_ns\": %" PRId64
			", \"buckets\": [",
			lk->count, lk->total,
			lk->count ? (int64_t)(lk->total >= 0
						      ? lk->total / (int64_t)lk->count
						      : -((-lk->total + (int64_t)lk->count - 1) /
							  (int64_t)lk->count))
				  : 0,
			lk->max);
		for (int b = 0; b < nbuckets; b++)
			fprintf(f, "%s%" PRIu64, b ? ", " : "", buckets[b]);
		fprintf(f, "]}");
	}
	free(buckets);
	fprintf(f, "],\n\"lock_buckets\": {\"count\": %d, \"width_ns\": %" PRId64 "},\n", nbuckets,
		(int64_t)width);

	qsort(s->reasons, (size_t)s->nreasons, sizeof *s->reasons, cmp_reason);
	int64_t lock_wait = 0;
	fprintf(f, "\"blocked\": {");
	for (int i = 0; i < s->nreasons; i++) {
		reason_t *r = &s->reasons[i];
		fprintf(f, "%s", i ? ", " : "");
		json_str(f, r->name);
		fprintf(f,
			": {\"count\": %" PRIu64 ", \"total_ns\": %" PRId64
			", \"still_blocked_at_end\": %" PRIu64 "}",
			r->count, r->total, r->open);
		if (is_lock_reason(r->name))
			lock_wait += r->total;
	}
	double share =
		lock_wait + tot_busy > 0 ? (double)lock_wait / (double)(lock_wait + tot_busy) : 0.0;
	fprintf(f,
		"},\n\"lock_share\": {\"lock_wait_ns\": %" PRId64 ", \"busy_ns\": %" PRId64
		", \"share\": %.6f, \"reasons\": [\"mutex\", \"rwlock\", \"cond\"]},\n",
		lock_wait, tot_busy, share);

	/* The busiest ULTs: those alive at the end join the heap of the
	 * ones that exited. */
	for (size_t i = 0; i < map_slots(&s->ults); i++)
		if (map_at(&s->ults, i))
			heap_offer(s, map_at(&s->ults, i));
	qsort(s->heap, (size_t)s->nheap, sizeof *s->heap, cmp_ult);
	fprintf(f, "\"ults_total\": %" PRIu64 ",\n\"ults\": [", s->n_ults);
	for (int i = 0; i < s->nheap; i++) {
		ult_t *u = s->heap[i];
		fprintf(f, "%s\n {\"ult\": %" PRIu64 ", \"name\": ", i ? "," : "", u->id);
		json_str(f, u->name ? u->name : "");
		fprintf(f,
			", \"runs\": %" PRIu64 ", \"busy_ns\": %" PRIu64 ", \"busy_by_worker\": {",
			u->runs, u->busy);
		int first = 1;
		for (int w = 0; w < u->nby; w++) {
			if (!u->by_w[w])
				continue;
			fprintf(f, "%s\"%d\": %" PRIu64, first ? "" : ", ", w, u->by_w[w]);
			first = 0;
		}
		fprintf(f,
			"}, \"migrations\": %" PRIu64 ", \"steals\": %" PRIu64
			", \"blocked_ns\": %" PRIu64,
			u->migrations, u->steals, u->blocked);
		if (u->has_creator)
			fprintf(f, ", \"creator\": %" PRId64, u->creator);
		else
			fprintf(f, ", \"creator\": null");
		fprintf(f, ", \"exited\": %s}", u->exited ? "true" : "false");
	}
	fprintf(f, "],\n");
	print_notes(f, s);
	fprintf(f, "}\n");
	free(ws);
}

/* ---- timeline ------------------------------------------------------------- */

static void print_timeline(scan_t *s, FILE *f)
{
	fprintf(f, "{\"trace\": {");
	print_meta(f, s);
	fprintf(f, ", \"duration_ns\": %" PRId64 "},\n", duration(s));
	fprintf(f, "\"lo\": %" PRId64 ", \"hi\": %" PRId64 ", \"n_slices\": %" PRIu64 ",\n", s->lo,
		s->hi, s->n_slices);
	int nw;
	int *ws = report_workers(s, &nw);
	fprintf(f, "\"workers\": [");
	for (int i = 0; i < nw; i++)
		fprintf(f, "%s%d", i ? ", " : "", ws[i]);
	fprintf(f, "],\n\"lanes\": ");
	if (!s->keep_ivals) {
		fprintf(f, "null");
	} else {
		/* [worker, state, t0, t1, ult] per interval */
		fprintf(f, "[");
		for (size_t i = 0; i < s->nivals; i++) {
			ival_t *v = &s->ivals[i];
			fprintf(f, "%s[%d, \"%s\", %" PRId64 ", %" PRId64 ", %" PRIu64 "]",
				i ? ",\n" : "", v->w, state_names[v->state], v->t0, v->t1, v->ult);
		}
		fprintf(f, "]");
	}
	fprintf(f, ",\n\"names\": {");
	int first = 1;
	for (size_t i = 0; i < map_slots(&s->names); i++) {
		if (!map_at(&s->names, i))
			continue;
		fprintf(f, "%s\"%" PRIu64 "\": ", first ? "" : ", ", map_key(&s->names, i));
		json_str(f, map_at(&s->names, i));
		first = 0;
	}
	fprintf(f, "},\n\"load\": ");
	if (!s->nbins) {
		fprintf(f, "null");
	} else {
		fprintf(f, "{\"width_ns\": %.17g, \"bins\": {", s->width);
		for (int i = 0; i < nw; i++) {
			int w = ws[i];
			lane_t *l = w < s->nlanes ? s->lanes[w] : NULL;
			fprintf(f, "%s\"%d\": [", i ? ", " : "", w);
			for (int b = 0; b < s->nbins; b++)
				fprintf(f, "%s%.6g", b ? ", " : "", l ? l->load[b] : 0.0);
			fprintf(f, "]");
		}
		fprintf(f, "}}");
	}
	fprintf(f, ",\n");
	print_notes(f, s);
	fprintf(f, "}\n");
	free(ws);
}

/* ---- Perfetto ------------------------------------------------------------- */

static FILE *pf_out;
static wf_pftrace_t *pf;

/* The Perfetto writer, made once the metadata (from the .wft's meta chunk
 * or the CSV's comments) is known: at the first row, or the end. */
static void pf_open(scan_t *s)
{
	if (!pf && !(pf = wf_pftrace_open(pf_out, s->meta.has_pid ? (int)s->meta.pid : 0,
					  *s->meta.program ? s->meta.program : "?")))
		fail("out of memory");
}

static void pf_row(scan_t *s, const row_t *r)
{
	pf_open(s);
	s->n_rows++;
	wf_trace_row_t w = {
		.ns = (uint64_t)r->t,
		.worker = r->w,
		.event = r->ev,
		.ult = r->u,
		.name = r->name,
		.arg1 = arg_int(s, r, 1, "arg1"),
		.arg2 = arg_int(s, r, 2, "arg2"),
		.detail = r->detail,
	};
	wf_pftrace_row(pf, &w);
}

/* ---- main ----------------------------------------------------------------- */

static const char usage[] =
	"usage: weft-trace-scan summary [--top N] [--buckets N] TRACE\n"
	"       weft-trace-scan timeline [--start NS] [--end NS] [--max-slices N] [--bins N]\n"
	"                                [--load] TRACE\n"
	"       weft-trace-scan pftrace -o OUT TRACE\n"
	"       weft-trace-scan csv TRACE.wft\n"
	"       weft-trace-scan json TRACE.wft\n"
	"\n"
	"The reader behind weft-trace: reads a weft trace (.wft, or the CSV) in one pass\n"
	"and prints what weft-trace shows, as JSON on stdout:\n"
	"  summary   per-worker time and counts, contended locks with --buckets time\n"
	"            buckets, time stopped per reason, the --top busiest ULTs (default 10)\n"
	"  timeline  the intervals of every worker inside [--start, --end) ns, when the\n"
	"            window holds at most --max-slices ULT runs (default 20000), and the\n"
	"            busy workers in --bins time bins (default 200) when it holds more or\n"
	"            with --load\n"
	"  pftrace   the trace in Perfetto's protobuf format into OUT; prints the rows\n"
	"            and packets\n"
	"  csv, json a .wft trace as weft's CSV, or as Chrome Trace Event JSON\n"
	"Exit status: 0, or 2 for input that is not a readable trace or bad options.\n";

static long long num_opt(const char *opt, const char *v, long long min)
{
	char *end;
	errno = 0;
	long long n = v ? strtoll(v, &end, 10) : 0;
	if (!v || errno || !*v || *end || n < min)
		fail("weft-trace-scan: %s needs an integer >= %lld\n%s", opt, min, usage);
	return n;
}

static void noop_row(scan_t *s, const row_t *r)
{
	s->n_rows++;
	if (r->t > s->last_time)
		s->last_time = r->t;
	if (is_state_event(r->ev) && r->w >= 0) {
		/* the first pass of a timeline: only the runs in the window */
		state_row(s, r->t, r->w, r->ev, r->u);
	}
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	const char *cmd = argv[1], *path = NULL;
	long long top = 10, buckets = 10, start = 0, end = -1, max_slices = 20000, bins = 200;
	int load = 0;
	const char *out = NULL;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--top"))
			top = num_opt(a, argv[++i < argc ? i : 0], 1);
		else if (!strcmp(a, "--buckets"))
			buckets = num_opt(a, argv[++i < argc ? i : 0], 1);
		else if (!strcmp(a, "--start"))
			start = num_opt(a, argv[++i < argc ? i : 0], 0);
		else if (!strcmp(a, "--end"))
			end = num_opt(a, argv[++i < argc ? i : 0], 0);
		else if (!strcmp(a, "--max-slices"))
			max_slices = num_opt(a, argv[++i < argc ? i : 0], 1);
		else if (!strcmp(a, "--bins"))
			bins = num_opt(a, argv[++i < argc ? i : 0], 1);
		else if (!strcmp(a, "--load"))
			load = 1;
		else if (!strcmp(a, "-o") && i + 1 < argc)
			out = argv[++i];
		else if (a[0] == '-' && a[1])
			fail("weft-trace-scan: unknown option %s\n%s", a, usage);
		else if (path)
			fail("weft-trace-scan: one trace at a time\n%s", usage);
		else
			path = a;
	}
	if (!path)
		fail("weft-trace-scan: no trace given\n%s", usage);
	if (buckets > 100000 || bins > 100000 || top > 10000000)
		fail("weft-trace-scan: --buckets, --bins at most 100000, --top at most 10000000");
	prog_path = path;

	if (!strcmp(cmd, "csv") || !strcmp(cmd, "json")) {
		if (!is_wft(path))
			fail("%s is not a .wft trace (csv and json convert weft's own format)",
			     path);
		wf_trace_sink_t sink = {.unfinished_ok = 1};
		if (!strcmp(cmd, "csv"))
			sink.csv = stdout;
		else
			sink.json = stdout;
		wf_trace_meta_t m;
		int e = wf_trace_export(path, &sink, &m);
		if (e)
			fail("%s: %s", path, errtext(e));
		if (fflush(stdout) || ferror(stdout))
			fail("weft-trace-scan: writing: %s", strerror(errno));
		return 0;
	}
	static scan_t s;
	s.meta.duration = -1;
	if (!strcmp(cmd, "pftrace")) {
		if (!out)
			fail("weft-trace-scan: pftrace needs -o OUT\n%s", usage);
		FILE *f = fopen(out, "wb");
		if (!f)
			fail("%s: %s", out, strerror(errno));
		pf_out = f;
		read_trace(&s, path, pf_row);
		pf_open(&s);
		uint64_t packets = 0;
		int e = wf_pftrace_close(pf, &packets);
		if (e || ferror(f) | fclose(f))
			fail("%s: %s", out, strerror(e ? e : errno));
		printf("{\"rows\": %" PRIu64 ", \"packets\": %" PRIu64 "}\n", s.n_rows, packets);
	} else if (!strcmp(cmd, "summary")) {
		s.summary = 1;
		s.top = (int)top;
		s.heap = xcalloc((size_t)top, sizeof *s.heap);
		read_trace(&s, path, on_row);
		finish(&s);
		print_summary(&s, (int)buckets, stdout);
	} else if (!strcmp(cmd, "timeline")) {
		if (end >= 0 && end <= start)
			fail("weft-trace-scan: --end must be after --start");
		/* First pass: the trace's end and the runs in the window, so that
		 * the second keeps the lanes only if they fit, and bins the load
		 * over the final window. */
		s.timeline = 1;
		s.lo = start;
		s.hi = end;
		read_trace(&s, path, noop_row);
		finish(&s);
		int64_t hi = end >= 0 ? end : duration(&s);
		uint64_t runs = s.n_slices;
		meta_t meta = s.meta;
		for (int i = 0; i < s.norder; i++)
			free(s.lanes[s.order[i]]);
		free(s.lanes);
		free(s.order);
		for (uint64_t i = 0; i < s.n_notes && i < MAX_NOTES; i++)
			free(s.notes[i]);
		memset(&s, 0, sizeof s);
		s.meta = meta;
		if (hi <= start)
			fail("%s: the trace has no events in the window", path);
		s.timeline = 1;
		s.lo = start;
		s.hi = end;
		s.keep_ivals = runs <= (uint64_t)max_slices;
		s.nbins = load || !s.keep_ivals ? (int)bins : 0;
		s.width = (double)(hi - start) / (double)bins;
		read_trace(&s, path, on_row);
		finish(&s);
		s.hi = hi;
		print_timeline(&s, stdout);
	} else {
		fail("weft-trace-scan: unknown subcommand %s\n%s", cmd, usage);
	}
	if (fflush(stdout) || ferror(stdout))
		fail("weft-trace-scan: writing: %s", strerror(errno));
	return 0;
}
