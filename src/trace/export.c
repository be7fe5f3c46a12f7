/* Turning a trace file into Chrome Trace Event JSON and CSV rows.
 *
 * The file (codec.h) holds chunks of records, each chunk from one stream (a
 * worker, or the shared stream of other threads), in the order the flusher
 * wrote them; a stream's chunks keep their order, and so do the records in
 * them. The export merges the streams by timestamp and walks the records
 * once, keeping per worker what runs on it, and writes what the sink asks
 * for as it goes:
 *
 *   CSV   one row per event, in time order (the columns and events are
 *         listed in the file's header and in docs/observability.md);
 *   JSON  per worker (one lane, tid = worker id): an "X" slice per ULT run,
 *         named by the ULT's name or "ult <id>"; "idle" slices for the time
 *         in the scheduler loop with "sleep" slices inside; a flow arrow
 *         ("s" -> "f") from each unpark to the start of the woken ULT's next
 *         run; instants for create, steal, migrate and contended locks.
 *         Threads that are not workers share tid 1000.
 *   rows  the CSV's rows, to a function (tools/weft-trace-scan.c), and to
 *         the Perfetto writer (perfetto.c), which takes rows as they come.
 *
 * Memory: a chunk per stream is read at a time (pread, not a mapping: the
 * kernel's fault-around kept pages of chunks already read mapped, and a
 * 330 MB trace held 85 MB); the chunk index is 16 bytes a chunk; a table
 * keeps the name and pending wake flow of each ULT alive. Nothing else
 * grows with the trace.
 *
 * Every lane starts in the loop; the root ULT, already running on worker 0
 * when tracing starts, has a switch record of its own (wf_trace_running).
 * Runs still open at the end are closed at the trace's end.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sched/sched.h"
#include "trace/export.h"
#include "trace/idmap.h"
#include "trace/perfetto.h"

#define FOREIGN_TID 1000

static const char *const block_names[WF_BLOCK_NREASONS] = {
	[WF_BLOCK_NONE] = "other",      [WF_BLOCK_JOIN] = "join",       [WF_BLOCK_MUTEX] = "mutex",
	[WF_BLOCK_COND] = "cond",       [WF_BLOCK_RWLOCK] = "rwlock",   [WF_BLOCK_SEM] = "sem",
	[WF_BLOCK_BARRIER] = "barrier", [WF_BLOCK_ONCE] = "once",       [WF_BLOCK_SLEEP] = "sleep",
	[WF_BLOCK_PARK] = "park",       [WF_BLOCK_HANDOFF] = "handoff", [WF_BLOCK_IO] = "io",
};

/* How a ULT stopped running, from a SWITCH record's code. */
static const char *stop_detail(int code)
{
	int action = code & 0xff, reason = code >> 8;
	switch (action) {
	case WF_AFTER_REQUEUE:
		return "yield";
	case WF_AFTER_PREEMPT:
		return "preempted";
	case WF_AFTER_EXIT:
		return "exit";
	case WF_AFTER_JOIN:
		return "join";
	case WF_AFTER_PARK:
		return reason > 0 && reason < WF_BLOCK_NREASONS ? block_names[reason] : "other";
	default:
		return "other";
	}
}

/* ---- ULT table: id -> name and pending wake flow ------------------------- */

typedef struct {
	uint64_t flow; /* id of a wake flow waiting for the ULT's next run, or 0 */
	char name[WEFT_NAME_MAX];
} ult_info_t;

/* The entry of id, or NULL. */
static ult_info_t *ult_find(wf_idmap_t *t, uint64_t id)
{
	return (ult_info_t *)(uintptr_t)wf_idmap_get(t, id);
}

/* Forget id (a ULT that exited): the table holds the ULTs alive, not all
 * that ever were. */
static void ult_del(wf_idmap_t *t, uint64_t id)
{
	free((ult_info_t *)(uintptr_t)wf_idmap_take(t, id));
}

/* The entry of id (made if new), or NULL (ENOMEM). id != 0. */
static ult_info_t *ult_get(wf_idmap_t *t, uint64_t id)
{
	ult_info_t *u = ult_find(t, id);
	if (!u && (u = calloc(1, sizeof *u)) && wf_idmap_put(t, id, (uint64_t)(uintptr_t)u)) {
		free(u);
		u = NULL;
	}
	return u;
}

/* ---- the file's chunks ------------------------------------------------------ */

/* Where a chunk's records are in the file. */
struct chunk_ref {
	uint64_t off; /* of its records (after its header) */
	int32_t stream;
	uint32_t n; /* bytes */
};

/* Read exactly n bytes at off: 0, or -1 (error or end of file). */
static int pread_all(int fd, void *buf, size_t n, uint64_t off)
{
	char *b = buf;
	while (n) {
		ssize_t r = pread(fd, b, n, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		b += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

/* ---- per-worker state while walking --------------------------------------- */

typedef struct {
	const struct chunk_ref **chunks; /* this stream's chunks, in order */
	size_t nchunks, ci;              /* ci: the chunk being read */
	uint8_t *buf;                    /* ... read into this */
	size_t cap;
	const uint8_t *p, *end; /* its next record, and its end */
	uint64_t raw;           /* timestamp of the record before p */
	wf_trace_ev_t next;     /* the record to walk next ... */
	int has_next;           /* ... if any */
	int tid;                /* JSON tid, CSV worker (-1 foreign) */
	uint64_t cur;           /* ULT running, 0: none (in the loop) */
	uint64_t since;         /* ns: when cur started, or when the loop was entered */
	int sleeping;           /* between SLEEP and WAKE */
	uint64_t slept;         /* ns: when it fell asleep */
	uint64_t flow_in;       /* wake flow ending at the start of cur's run, or 0 */
	uint64_t last;          /* ns: latest record (keeps the lane monotonic) */
} stream_t;

typedef struct {
	FILE *json, *csv;
	wf_pftrace_t *pf; /* the Perfetto writer, if the sink has a file for it */
	const wf_trace_sink_t *sink;
	wf_idmap_t ults; /* ULT id -> ult_info_t * */
	uint64_t flows;  /* last flow id */
	int first;       /* no JSON event written yet */
	int pid;
	int oom;
	int bad; /* a chunk cannot be read, or ends inside a record */
	int fd;  /* the trace file */
	/* raw clock -> ns since the start */
	uint64_t t0;
	double ns_per_tick;
} out_t;

static uint64_t to_ns(const out_t *o, uint64_t ts)
{
	if (ts <= o->t0)
		return 0;
	return (uint64_t)((double)(ts - o->t0) * o->ns_per_tick);
}

/* Microseconds with three decimals, as the trace-event format wants. */
static void json_ts(FILE *f, const char *key, uint64_t ns)
{
	fprintf(f, ",\"%s\":%" PRIu64 ".%03u", key, ns / 1000, (unsigned)(ns % 1000));
}

/* Every JSON writer below starts with json_begin and is called only when
 * there is a JSON file. */
static void json_begin(out_t *o, const char *ph, int tid, uint64_t ns)
{
	fprintf(o->json, "%s\n{\"ph\":\"%s\",\"pid\":%d,\"tid\":%d", o->first ? "" : ",", ph,
		o->pid, tid);
	o->first = 0;
	json_ts(o->json, "ts", ns);
}

/* Names are written into JSON strings and CSV cells: keep printable ASCII
 * without quotes, backslashes or commas. */
static void clean_name(char *dst, const char *src, size_t n)
{
	size_t i = 0;
	for (; i + 1 < n && src[i]; i++) {
		unsigned char ch = (unsigned char)src[i];
		dst[i] = (ch < 0x20 || ch > 0x7e || ch == '"' || ch == '\\' || ch == ',')
				 ? '_'
				 : (char)ch;
	}
	dst[i] = 0;
}

static const char *name_of(out_t *o, uint64_t id)
{
	ult_info_t *u = id ? ult_find(&o->ults, id) : NULL;
	return u ? u->name : "";
}

static void csv_row(out_t *o, uint64_t ns, int worker, const char *ev, uint64_t ult, int64_t a1,
		    int64_t a2, const char *detail)
{
	if (!o->csv && !o->sink->row && !o->pf)
		return;
	if (worker == FOREIGN_TID)
		worker = -1;
	const char *name = name_of(o, ult);
	if (o->csv)
		fprintf(o->csv, "%" PRIu64 ",%d,%s,%" PRIu64 ",%s,%" PRId64 ",%" PRId64 ",%s\n", ns,
			worker, ev, ult, name, a1, a2, detail ? detail : "");
	wf_trace_row_t r = {ns, worker, ev, ult, name, a1, a2, detail ? detail : ""};
	if (o->sink->row)
		o->sink->row(o->sink->ctx, &r);
	if (o->pf)
		wf_pftrace_row(o->pf, &r);
}

/* The X slice of s's current ULT run, from..to, and the end of the wake
 * flow into it - written after the slice, so that a reader keeping file
 * order for equal timestamps binds the flow to this slice. */
static void slice_ult(out_t *o, stream_t *s, uint64_t id, uint64_t from, uint64_t to,
		      const char *end)
{
	if (!o->json) {
		s->flow_in = 0;
		return;
	}
	json_begin(o, "X", s->tid, from);
	json_ts(o->json, "dur", to - from);
	const char *n = name_of(o, id);
	if (*n)
		fprintf(o->json, ",\"name\":\"%s\"", n);
	else
		fprintf(o->json, ",\"name\":\"ult %" PRIu64 "\"", id);
	fprintf(o->json, ",\"cat\":\"ult\",\"args\":{\"ult\":%" PRIu64 ",\"end\":\"%s\"}}", id,
		end);
	if (s->flow_in) {
		json_begin(o, "f", s->tid, from);
		fprintf(o->json,
			",\"bp\":\"e\",\"id\":%" PRIu64 ",\"name\":\"wake\",\"cat\":\"wake\"}",
			s->flow_in);
		s->flow_in = 0;
	}
}

static void slice_sched(out_t *o, stream_t *s, const char *name, uint64_t from, uint64_t to)
{
	if (!o->json)
		return;
	json_begin(o, "X", s->tid, from);
	json_ts(o->json, "dur", to - from);
	fprintf(o->json, ",\"name\":\"%s\",\"cat\":\"sched\"}", name);
}

/* An instant, open for its args (the caller closes it). 0 if there is no
 * JSON file. */
static int instant(out_t *o, stream_t *s, uint64_t ns, const char *name, const char *cat)
{
	if (!o->json)
		return 0;
	json_begin(o, "i", s->tid, ns);
	fprintf(o->json, ",\"s\":\"t\",\"name\":\"%s\",\"cat\":\"%s\",\"args\":{", name, cat);
	return 1;
}

static void on_switch(out_t *o, stream_t *s, const wf_trace_ev_t *e, uint64_t ns)
{
	uint64_t from = e->a, to = e->b;
	if (s->sleeping) { /* cannot happen: sleeps end before the loop switches */
		slice_sched(o, s, "sleep", s->slept, ns);
		s->sleeping = 0;
	}
	if (s->cur) {
		/* Records dropped in between (the trace says how many) may
		 * hide what ran: then the stop is of an unknown kind. */
		const char *how = s->cur == from ? stop_detail(e->code) : "other";
		slice_ult(o, s, s->cur, s->since, ns, how);
		csv_row(o, ns, s->tid, "stop", s->cur, (int64_t)(s->cur == from ? e->c : 0), 0,
			how);
		if (s->cur == from && (e->code & 0xff) == WF_AFTER_EXIT)
			ult_del(&o->ults, from);
	} else {
		slice_sched(o, s, "idle", s->since, ns);
	}
	if (to) {
		if (e->x >= 0 && e->x != s->tid) {
			csv_row(o, ns, s->tid, "migrate", to, e->x, s->tid, NULL);
			if (instant(o, s, ns, "migrate", "sched"))
				fprintf(o->json, "\"ult\":%" PRIu64 ",\"from\":%d}}", to, e->x);
		}
		csv_row(o, ns, s->tid, "run", to, e->x, 0, NULL);
		ult_info_t *u = ult_find(&o->ults, to);
		if (u && u->flow) {
			s->flow_in = u->flow; /* written with the run's slice */
			u->flow = 0;
		}
	} else {
		csv_row(o, ns, s->tid, "idle", 0, 0, 0, NULL);
	}
	s->cur = to;
	s->since = ns;
}

static void on_event(out_t *o, stream_t *s, const wf_trace_ev_t *e, uint64_t ns)
{
	switch (e->type) {
	case WF_EV_SWITCH:
		on_switch(o, s, e, ns);
		break;
	case WF_EV_CREATE:
		csv_row(o, ns, s->tid, "create", e->a, (int64_t)e->b, e->x, NULL);
		if (instant(o, s, ns, "create", "sched"))
			fprintf(o->json, "\"ult\":%" PRIu64 ",\"creator\":%" PRIu64 "}}", e->a,
				e->b);
		break;
	case WF_EV_NAME: {
		ult_info_t *u = ult_get(&o->ults, e->a);
		if (!u || e->code > 3) {
			o->oom |= !u;
			break;
		}
		char part[9] = {0};
		memcpy(part, &e->b, 8);
		if (e->code == 0)
			memset(u->name, 0, sizeof u->name);
		clean_name(u->name + 8 * e->code, part, 9);
		if (strlen(part) < 8 || e->code == 3)
			csv_row(o, ns, s->tid, "name", e->a, 0, 0, NULL);
		break;
	}
	case WF_EV_UNPARK: {
		csv_row(o, ns, s->tid, "unpark", e->a, (int64_t)e->b, 0, NULL);
		/* A flow starts inside a slice of the waker's lane: a ULT's run
		 * or the loop's idle slice. Other threads have no slices. */
		if (!o->json || s->tid == FOREIGN_TID)
			break;
		ult_info_t *u = ult_get(&o->ults, e->a);
		if (!u) {
			o->oom = 1;
			break;
		}
		u->flow = ++o->flows;
		json_begin(o, "s", s->tid, ns);
		fprintf(o->json, ",\"id\":%" PRIu64 ",\"name\":\"wake\",\"cat\":\"wake\"}",
			u->flow);
		break;
	}
	case WF_EV_STEAL:
		csv_row(o, ns, s->tid, "steal", e->a, e->x, 0, NULL);
		if (instant(o, s, ns, "steal", "sched"))
			fprintf(o->json, "\"ult\":%" PRIu64 ",\"victim\":%d}}", e->a, e->x);
		break;
	case WF_EV_SLEEP:
		csv_row(o, ns, s->tid, "sleep", 0, 0, 0, NULL);
		s->sleeping = 1;
		s->slept = ns;
		break;
	case WF_EV_WAKE:
		csv_row(o, ns, s->tid, "wake", 0, 0, 0, NULL);
		if (s->sleeping)
			slice_sched(o, s, "sleep", s->slept, ns);
		s->sleeping = 0;
		break;
	case WF_EV_LOCK: {
		const char *kind = e->code == WF_TRACE_LOCK_RWLOCK ? "rwlock" : "mutex";
		csv_row(o, ns, s->tid, "lock", s->cur, (int64_t)e->a, (int64_t)e->b, kind);
		if (instant(o, s, ns, "lock", "lock"))
			fprintf(o->json,
				"\"lock\":\"0x%" PRIx64 "\",\"kind\":\"%s\",\"wait_ns\":%" PRIu64
				"}}",
				e->a, kind, e->b);
		break;
	}
	default:
		break; /* a record type this exporter does not know: skip it */
	}
}

/* Decode s's next record into s->next; has_next = 0 when s is done.
 * A chunk that cannot be read or ends inside a record sets o->bad and
 * ends the stream. */
static void advance(out_t *o, stream_t *s)
{
	s->has_next = 0;
	while (!s->p || s->p >= s->end) {
		if (s->p)
			s->ci++;
		if (s->ci >= s->nchunks)
			return;
		const struct chunk_ref *c = s->chunks[s->ci];
		if (c->n > s->cap) {
			uint8_t *b = realloc(s->buf, c->n);
			if (!b) {
				o->oom = 1;
				s->ci = s->nchunks;
				return;
			}
			s->buf = b;
			s->cap = c->n;
		}
		if (pread_all(o->fd, s->buf, c->n, c->off)) {
			o->bad = 1;
			s->ci = s->nchunks;
			return;
		}
		s->p = s->buf;
		s->end = s->buf + c->n;
		s->raw = 0; /* a chunk's first record is against 0 */
	}
	s->p = wf_trace_decode(s->p, s->end, &s->next, &s->raw);
	if (!s->p) {
		o->bad = 1;
		s->ci = s->nchunks;
		return;
	}
	s->has_next = 1;
}

/* The stream with the earliest next record, or NULL when all are done. */
static stream_t *next_stream(stream_t *st, int n)
{
	stream_t *best = NULL;
	for (int i = 0; i < n; i++) {
		stream_t *s = &st[i];
		if (s->has_next && (!best || s->next.ts < best->next.ts))
			best = s;
	}
	return best;
}

static void write_headers(out_t *o, const wf_trace_meta_t *m)
{
	if (o->json) {
		fprintf(o->json,
			"{\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"weft_version\":\"%s\","
			"\"workers\":%d,\"sched\":\"%s\",\"clock\":\"%s\",\"dropped\":%" PRIu64
			",\"complete\":%s,\"pid\":%d,\"program\":\"%s\"},\n\"traceEvents\":[",
			m->version, m->workers, m->sched, m->clock, m->dropped,
			m->complete ? "true" : "false", m->pid, m->program);
		json_begin(o, "M", 0, 0);
		fprintf(o->json,
			",\"name\":\"process_name\",\"args\":{\"name\":\"weft %s (pid %d)\"}}",
			m->program, m->pid);
		for (int i = 0; i <= m->workers; i++) {
			int tid = i < m->workers ? i : FOREIGN_TID;
			json_begin(o, "M", tid, 0);
			if (i < m->workers)
				fprintf(o->json,
					",\"name\":\"thread_name\",\"args\":{\"name\":\"worker "
					"%d\"}}",
					i);
			else
				fprintf(o->json, ",\"name\":\"thread_name\",\"args\":{\"name\":"
						 "\"other threads\"}}");
			json_begin(o, "M", tid, 0);
			fprintf(o->json,
				",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%d}}",
				tid);
		}
	}
	if (o->csv)
		fprintf(o->csv,
			"# weft trace: one row per scheduler event, in time order.\n"
			"# time_ns: since the trace started; worker: -1 for a thread that is "
			"not a worker;\n"
			"# ult: a ULT id (0: none); name: its name; arg1, arg2, detail: per "
			"event, see\n"
			"# docs/observability.md (run, stop, idle, sleep, wake, create, name, "
			"unpark,\n"
			"# steal, migrate, lock, dropped, end).\n"
			"# version=%s\n# program=%s\n# pid=%d\n# workers=%d\n# sched=%s\n# "
			"clock=%s\n"
			"# dropped=%" PRIu64 "\n# complete=%d\n# duration_ns=%" PRIu64 "\n"
			"time_ns,worker,event,ult,name,arg1,arg2,detail\n",
			m->version, m->program, m->pid, m->workers, m->sched, m->clock, m->dropped,
			m->complete, m->duration_ns);
}

/* Close every lane at the end of the trace. */
static void close_lanes(out_t *o, stream_t *st, int n, uint64_t end, uint64_t dropped)
{
	for (int i = 0; i < n; i++) {
		stream_t *s = &st[i];
		if (s->tid == FOREIGN_TID)
			continue;
		if (end < s->last)
			end = s->last;
	}
	for (int i = 0; i < n; i++) {
		stream_t *s = &st[i];
		int worker = s->tid == FOREIGN_TID ? -1 : s->tid;
		if (s->tid != FOREIGN_TID) {
			if (s->sleeping)
				slice_sched(o, s, "sleep", s->slept, end);
			if (s->cur)
				slice_ult(o, s, s->cur, s->since, end, "running");
			else
				slice_sched(o, s, "idle", s->since, end);
		}
		if (dropped && i == 0)
			csv_row(o, end, worker, "dropped", 0, (int64_t)dropped, 0, NULL);
		csv_row(o, end, worker, "end", 0, 0, 0, NULL);
	}
}

/* ---- the file ------------------------------------------------------------ */

typedef struct {
	int fd;
	struct chunk_ref *chunks; /* every chunk but the meta chunk, in file order */
	size_t nchunks;
	char *meta; /* the meta chunk's bytes, or NULL */
	uint32_t meta_n;
	int torn; /* the file ends inside a chunk */
} file_t;

/* Open path, read its header and index its chunks (checking their
 * framing), and read the meta chunk. A file without one is a trace whose
 * program died while tracing: its last chunk may be cut off (torn), and
 * then is left out. 0 (f->meta NULL for such a file), or an errno value:
 * EPROTO for a file that is not a weft trace, or is damaged. */
static int file_open(const char *path, file_t *f)
{
	memset(f, 0, sizeof *f);
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat sb;
	if (f->fd < 0 || fstat(f->fd, &sb))
		return errno;
	uint64_t size = (uint64_t)sb.st_size;
	wf_trace_file_hdr_t fh;
	if (size < sizeof fh || pread_all(f->fd, &fh, sizeof fh, 0) ||
	    memcmp(fh.magic, WF_TRACE_FILE_MAGIC, 8) || fh.version != WF_TRACE_FILE_VERSION)
		return EPROTO;
	size_t cap = 0;
	for (uint64_t off = sizeof fh; off < size;) {
		wf_trace_chunk_hdr_t h;
		if (size - off < sizeof h || pread_all(f->fd, &h, sizeof h, off) ||
		    h.magic != WF_TRACE_CHUNK_MAGIC || size - off - sizeof h < h.n) {
			f->torn = 1; /* an error, unless there is no meta chunk */
			break;
		}
		off += sizeof h;
		if (h.stream == WF_TRACE_STREAM_META) {
			free(f->meta);
			if (!(f->meta = malloc(h.n + 1u)))
				return ENOMEM;
			if (pread_all(f->fd, f->meta, h.n, off))
				return EPROTO;
			f->meta_n = h.n;
		} else {
			if (f->nchunks == cap) {
				cap = cap ? 2 * cap : 256;
				struct chunk_ref *c = realloc(f->chunks, cap * sizeof *c);
				if (!c)
					return ENOMEM;
				f->chunks = c;
			}
			f->chunks[f->nchunks++] = (struct chunk_ref){off, h.stream, h.n};
		}
		off += h.n;
	}
	return f->meta && f->torn ? EPROTO : 0;
}

static void file_close(file_t *f)
{
	if (f->fd >= 0)
		close(f->fd);
	free(f->chunks);
	free(f->meta);
}

/* The value of key in the meta chunk's "key=value" lines, copied into
 * out (n bytes); 0 if absent. */
static int meta_get(const file_t *f, const char *key, char *out, size_t n)
{
	const char *p = f->meta, *end = p + f->meta_n;
	size_t kl = strlen(key);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		if ((size_t)(nl - p) > kl && !memcmp(p, key, kl) && p[kl] == '=') {
			size_t vl = (size_t)(nl - p) - kl - 1;
			if (vl >= n)
				vl = n - 1;
			memcpy(out, p + kl + 1, vl);
			out[vl] = 0;
			return 1;
		}
		p = nl + 1;
	}
	return 0;
}

static int meta_parse(const file_t *f, wf_trace_meta_t *m)
{
	char v[64];
	memset(m, 0, sizeof *m);
	if (!f->meta)
		return EPROTO;
	meta_get(f, "version", m->version, sizeof m->version);
	meta_get(f, "program", m->program, sizeof m->program);
	meta_get(f, "sched", m->sched, sizeof m->sched);
	meta_get(f, "clock", m->clock, sizeof m->clock);
	clean_name(m->program, m->program, sizeof m->program);
	m->tsc = strcmp(m->clock, "tsc") == 0;
	int ok = meta_get(f, "workers", v, sizeof v) && sscanf(v, "%d", &m->workers) == 1 &&
		 m->workers > 0 && m->workers < (1 << 16) && meta_get(f, "t0", v, sizeof v) &&
		 sscanf(v, "%" SCNu64, &m->t0) == 1 && meta_get(f, "ns_per_tick", v, sizeof v) &&
		 sscanf(v, "%lf", &m->ns_per_tick) == 1 && m->ns_per_tick > 0 &&
		 meta_get(f, "duration_ns", v, sizeof v) &&
		 sscanf(v, "%" SCNu64, &m->duration_ns) == 1;
	if (meta_get(f, "pid", v, sizeof v))
		sscanf(v, "%d", &m->pid);
	if (meta_get(f, "dropped", v, sizeof v))
		sscanf(v, "%" SCNu64, &m->dropped);
	if (meta_get(f, "complete", v, sizeof v))
		sscanf(v, "%d", &m->complete);
	return ok ? 0 : EPROTO;
}

int wf_trace_read_meta(const char *path, wf_trace_meta_t *m)
{
	file_t f;
	int e = file_open(path, &f);
	if (!e)
		e = meta_parse(&f, m);
	file_close(&f);
	return e;
}

int wf_trace_export(const char *path, const wf_trace_sink_t *sink, wf_trace_meta_t *m)
{
	out_t o = {.first = 1, .json = sink->json, .csv = sink->csv, .sink = sink};
	stream_t *st = NULL;
	int nstreams = 0;
	file_t f;
	int e = file_open(path, &f);
	int unfinished = !e && !f.meta;
	if (unfinished && sink->unfinished_ok) {
		/* No meta chunk: the workers are the streams there are; times
		 * stay raw clock readings, counted from the first record. */
		memset(m, 0, sizeof *m);
		snprintf(m->version, sizeof m->version, "?");
		snprintf(m->program, sizeof m->program, "?");
		snprintf(m->clock, sizeof m->clock, "raw");
		m->ns_per_tick = 1;
		m->workers = 1;
		for (size_t i = 0; i < f.nchunks; i++)
			if (f.chunks[i].stream >= m->workers && f.chunks[i].stream < (1 << 16))
				m->workers = f.chunks[i].stream + 1;
	} else if (!e) {
		e = meta_parse(&f, m);
	}
	if (e)
		goto out;
	nstreams = m->workers + 1;
	o.pid = m->pid;
	o.t0 = m->t0;
	o.ns_per_tick = m->ns_per_tick;
	if (!(st = calloc((size_t)nstreams, sizeof *st))) {
		e = ENOMEM;
		goto out;
	}

	/* Index each stream's chunks: count, then fill. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < f.nchunks; i++) {
			const struct chunk_ref *c = &f.chunks[i];
			if (c->stream < -1 || c->stream >= m->workers) {
				e = EPROTO;
				goto out;
			}
			stream_t *s = &st[c->stream < 0 ? m->workers : c->stream];
			if (pass)
				s->chunks[s->nchunks++] = c;
			else
				s->nchunks++;
		}
		for (int i = 0; i < nstreams && !pass; i++) {
			st[i].chunks = calloc(st[i].nchunks + 1, sizeof *st[i].chunks);
			if (!st[i].chunks) {
				e = ENOMEM;
				goto out;
			}
			st[i].nchunks = 0;
		}
	}
	o.fd = f.fd;
	for (int i = 0; i < nstreams; i++) {
		st[i].tid = i < m->workers ? i : FOREIGN_TID;
		advance(&o, &st[i]);
		if (unfinished && st[i].has_next && (!o.t0 || st[i].next.ts < o.t0))
			o.t0 = m->t0 = st[i].next.ts;
	}

	if (sink->pftrace && !(o.pf = wf_pftrace_open(sink->pftrace, m->pid, m->program))) {
		e = ENOMEM;
		goto out;
	}
	write_headers(&o, m);
	stream_t *s;
	while ((s = next_stream(st, nstreams))) {
		uint64_t ns = to_ns(&o, s->next.ts);
		if (ns < s->last)     /* TSC readings of one thread never go back; */
			ns = s->last; /* rounding of the conversion might */
		s->last = ns;
		on_event(&o, s, &s->next, ns);
		advance(&o, s);
	}
	close_lanes(&o, st, nstreams, m->duration_ns, m->dropped);
	if (o.json)
		fprintf(o.json, "\n]}\n");
	if (o.pf) {
		o.oom |= wf_pftrace_close(o.pf, NULL) != 0;
		o.pf = NULL;
	}
	if (o.oom)
		e = ENOMEM;
	else if (o.bad)
		e = EPROTO;
	else if ((o.json && ferror(o.json)) || (o.csv && ferror(o.csv)) ||
		 (sink->pftrace && ferror(sink->pftrace)))
		e = EIO;
out:
	if (o.pf)
		wf_pftrace_close(o.pf, NULL);
	file_close(&f);
	for (int i = 0; st && i < nstreams; i++) {
		free(st[i].chunks);
		free(st[i].buf);
	}
	free(st);
	for (size_t i = 0; i < o.ults.cap; i++)
		if (o.ults.k[i])
			free((ult_info_t *)(uintptr_t)o.ults.v[i]);
	wf_idmap_free(&o.ults);
	return e;
}
