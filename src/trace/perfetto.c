/* A trace's rows in Perfetto's protobuf trace format.
 *
 * The format Perfetto's UI and trace_processor load natively at any size,
 * where JSON of a few hundred megabytes is already too big for the UI: a
 * Trace message is a sequence of TracePacket records, each field-tagged as
 * in the .proto files Perfetto publishes under protos/perfetto/trace. Only
 * the messages and fields below are written, encoded by hand:
 *
 *   TrackDescriptor  a process track "weft: PROGRAM" (uuid 1), one thread
 *                    track per worker (uuid WORKER_UUID + worker, tid
 *                    WORKER_TID + worker, "worker N"), one for the threads
 *                    that are not workers, and a counter track "busy
 *                    workers" (uuid 2)
 *   TrackEvent       on a worker's track: a slice per ULT run (named by the
 *                    ULT's name, or "ult ID"), an "idle" slice for the time
 *                    in the scheduler loop with a "sleep" slice inside;
 *                    instants for create, steal, migrate, contended lock
 *                    acquisitions and dropped records; a flow from each
 *                    unpark (an instant on the waker's track) to the start
 *                    of the woken ULT's next run; the counter's value at
 *                    each change
 *
 * Names that repeat - "idle", the instants, named ULTs - are interned
 * (InternedData.event_names, name_iid) on the one packet sequence, up to
 * MAX_INTERNED of them; "ult ID" of an unnamed ULT, which is new for every
 * ULT, goes in the event's own name field. A run slice costs about 20
 * bytes. Slices still open at a worker's `end` row, or at the last row, are
 * closed there.
 *
 * Memory: the names of named ULTs alive, the flows of ULTs woken and not
 * yet run, a slice stack per worker and the interned names; a ULT's
 * entries go when it exits or its flow ends.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "trace/idmap.h"
#include "trace/perfetto.h"

/* TracePacket, TrackEvent, TrackDescriptor and friends: the field numbers
 * of Perfetto's protos. */
enum {
	PKT_TIMESTAMP = 8,
	PKT_SEQ_ID = 10,
	PKT_TRACK_EVENT = 11,
	PKT_INTERNED = 12,
	PKT_SEQ_FLAGS = 13,
	PKT_TRACK_DESCRIPTOR = 60,
	TE_DEBUG_ANNOTATIONS = 4,
	TE_TYPE = 9,
	TE_NAME_IID = 10,
	TE_TRACK_UUID = 11,
	TE_NAME = 23,
	TE_COUNTER_VALUE = 30,
	TE_FLOW_IDS = 47,
	TE_TERMINATING_FLOW_IDS = 48,
	TD_UUID = 1,
	TD_NAME = 2,
	TD_PROCESS = 3,
	TD_THREAD = 4,
	TD_PARENT_UUID = 5,
	TD_COUNTER = 8,
	PD_PID = 1,
	PD_PROCESS_NAME = 6,
	THD_PID = 1,
	THD_TID = 2,
	THD_THREAD_NAME = 5,
	ID_EVENT_NAMES = 2,
	EN_IID = 1,
	EN_NAME = 2,
	DA_INT_VALUE = 4,
	DA_NAME = 10,
};
enum { SLICE_BEGIN = 1, SLICE_END = 2, INSTANT = 3, COUNTER = 4 };
enum { SEQ_INCREMENTAL_STATE_CLEARED = 1, SEQ_NEEDS_INCREMENTAL_STATE = 2 };
enum { SEQ_ID = 1, PROCESS_UUID = 1, BUSY_UUID = 2, FOREIGN_UUID = 3, WORKER_UUID = 100 };
#define WORKER_TID   1000000 /* a worker's track's tid: not a real thread (tracks are per worker) */
#define MAX_INTERNED 65536
#define MAX_WORKERS  (1 << 20)

enum { S_RUN = 1, S_IDLE, S_SLEEP }; /* what a worker's open slices are */

/* ---- bytes ------------------------------------------------------------ */

typedef struct {
	uint8_t *b;
	size_t n, cap;
} buf_t;

/* ---- a map from names to iids --------------------------------------------- */

typedef struct {
	char **k; /* NULL: empty */
	uint64_t *v;
	size_t cap, n;
} smap_t;

typedef struct {
	int stack[4]; /* open slices, innermost last */
	int depth;
	int described, busy;
} worker_t;

struct wf_pftrace {
	FILE *f;
	int pid, oom, first;
	uint64_t packets, flow, last_ts;
	buf_t pkt, body, tmp;
	wf_idmap_t flows; /* ULT -> flow id of its unpark, ended at its next run */
	wf_idmap_t names; /* ULT -> (char *) its name */
	smap_t iids;      /* interned event name -> iid */
	worker_t *w;      /* by worker; the foreign threads at index nw */
	int nw;           /* entries for workers 0..nw-1 */
	worker_t other;   /* the threads that are not workers */
	int nbusy;
};

/* Room for `more` bytes in b: 0, or -1 when out of memory (p->oom set;
 * the packets written from then on are wrong, and close says so). */
static int need(wf_pftrace_t *p, buf_t *b, size_t more)
{
	if (b->n + more <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->n + more)
		cap *= 2;
	uint8_t *nb = realloc(b->b, cap);
	if (!nb) {
		p->oom = 1;
		return -1;
	}
	b->b = nb;
	b->cap = cap;
	return 0;
}

static void put_varint(wf_pftrace_t *p, buf_t *b, uint64_t v)
{
	if (need(p, b, 10))
		return;
	while (v >= 0x80) {
		b->b[b->n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b->b[b->n++] = (uint8_t)v;
}

static void put_int(wf_pftrace_t *p, buf_t *b, unsigned field, uint64_t v)
{
	put_varint(p, b, (uint64_t)field << 3);
	put_varint(p, b, v);
}

static void put_fixed64(wf_pftrace_t *p, buf_t *b, unsigned field, uint64_t v)
{
	put_varint(p, b, ((uint64_t)field << 3) | 1);
	if (need(p, b, 8))
		return;
	for (int i = 0; i < 8; i++)
		b->b[b->n++] = (uint8_t)(v >> (8 * i));
}

static void put_bytes(wf_pftrace_t *p, buf_t *b, unsigned field, const void *d, size_t n)
{
	put_varint(p, b, ((uint64_t)field << 3) | 2);
	put_varint(p, b, n);
	if (need(p, b, n))
		return;
	memcpy(b->b + b->n, d, n);
	b->n += n;
}

static void put_str(wf_pftrace_t *p, buf_t *b, unsigned field, const char *s)
{
	put_bytes(p, b, field, s, strlen(s));
}

/* Wrap `inner` (bytes from `from` to the end of b) as field `field`: the
 * message is built first, its tag and length put in front. */
static void wrap(wf_pftrace_t *p, buf_t *b, size_t from, unsigned field)
{
	size_t len = b->n - from;
	uint8_t head[20];
	buf_t h = {head, 0, sizeof head};
	put_varint(p, &h, ((uint64_t)field << 3) | 2);
	put_varint(p, &h, len);
	if (need(p, b, h.n))
		return;
	memmove(b->b + from + h.n, b->b + from, len);
	memcpy(b->b + from, head, h.n);
	b->n += h.n;
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

/* The iid of name, interning it (*fresh = 1) if new; 0 if the table is
 * full or memory ran out (then the name goes inline). */
static uint64_t iid_of(wf_pftrace_t *p, const char *name, int *fresh)
{
	smap_t *m = &p->iids;
	*fresh = 0;
	if ((m->n + 1) * 2 > m->cap) {
		if (m->n >= MAX_INTERNED)
			goto lookup;
		size_t cap = m->cap ? m->cap * 2 : 256;
		smap_t n = {calloc(cap, sizeof *n.k), calloc(cap, sizeof *n.v), cap, m->n};
		if (!n.k || !n.v) {
			free(n.k);
			free(n.v);
			goto lookup;
		}
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->k[i])
				continue;
			size_t j = hash_str(m->k[i]) & (cap - 1);
			while (n.k[j])
				j = (j + 1) & (cap - 1);
			n.k[j] = m->k[i];
			n.v[j] = m->v[i];
		}
		free(m->k);
		free(m->v);
		*m = n;
	}
lookup:
	if (!m->cap)
		return 0;
	size_t j = hash_str(name) & (m->cap - 1);
	while (m->k[j] && strcmp(m->k[j], name))
		j = (j + 1) & (m->cap - 1);
	if (m->k[j])
		return m->v[j];
	if ((m->n + 1) * 2 > m->cap || !(m->k[j] = strdup(name)))
		return 0;
	m->v[j] = ++m->n;
	*fresh = 1;
	return m->v[j];
}

/* ---- packets ------------------------------------------------------------ */

/* Write one TracePacket: [timestamp] sequence id, flags, [interned], body. */
static void packet(wf_pftrace_t *p, const buf_t *body, int has_ts, uint64_t ts,
		   const buf_t *interned)
{
	buf_t *k = &p->pkt;
	k->n = 0;
	if (has_ts)
		put_int(p, k, PKT_TIMESTAMP, ts);
	put_int(p, k, PKT_SEQ_ID, SEQ_ID);
	if (p->first) {
		put_int(p, k, PKT_SEQ_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
		p->first = 0;
	} else if ((interned && interned->n) || has_ts) {
		put_int(p, k, PKT_SEQ_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
	}
	if (interned && interned->n)
		put_bytes(p, k, PKT_INTERNED, interned->b, interned->n);
	if (need(p, k, body->n))
		return;
	memcpy(k->b + k->n, body->b, body->n);
	k->n += body->n;
	/* Trace.packet: field 1, bytes. */
	uint8_t head[12];
	buf_t h = {head, 0, sizeof head};
	put_varint(p, &h, (1u << 3) | 2);
	put_varint(p, &h, k->n);
	fwrite(head, 1, h.n, p->f);
	fwrite(k->b, 1, k->n, p->f);
	p->packets++;
}

static worker_t *worker_of(wf_pftrace_t *p, int w)
{
	if (w < 0)
		return &p->other;
	if (w >= p->nw) {
		if (w >= MAX_WORKERS)
			return &p->other;
		int n = w + 1 > 2 * p->nw ? w + 1 : 2 * p->nw;
		worker_t *nw = realloc(p->w, (size_t)n * sizeof *nw);
		if (!nw) {
			p->oom = 1;
			return &p->other;
		}
		memset(nw + p->nw, 0, (size_t)(n - p->nw) * sizeof *nw);
		p->w = nw;
		p->nw = n;
	}
	return &p->w[w];
}

/* The uuid of worker's track (-1: the threads that are not workers),
 * described once. */
static uint64_t track(wf_pftrace_t *p, int worker)
{
	worker_t *wk = worker_of(p, worker);
	uint64_t uuid =
		worker < 0 || wk == &p->other ? FOREIGN_UUID : WORKER_UUID + (uint64_t)worker;
	if (!wk->described) {
		wk->described = 1;
		buf_t *b = &p->body;
		b->n = 0;
		put_int(p, b, TD_UUID, uuid);
		put_int(p, b, TD_PARENT_UUID, PROCESS_UUID);
		size_t th = b->n;
		put_int(p, b, THD_PID, (uint64_t)p->pid);
		put_int(p, b, THD_TID,
			WORKER_TID + (uint64_t)(uuid == FOREIGN_UUID ? 999 : worker));
		char name[32];
		if (uuid == FOREIGN_UUID)
			snprintf(name, sizeof name, "not a worker");
		else
			snprintf(name, sizeof name, "worker %d", worker);
		put_str(p, b, THD_THREAD_NAME, name);
		wrap(p, b, th, TD_THREAD);
		wrap(p, b, 0, PKT_TRACK_DESCRIPTOR);
		packet(p, b, 0, 0, NULL);
	}
	return uuid;
}

typedef struct {
	const char *key;
	int64_t value;
} arg_t;

static void event(wf_pftrace_t *p, uint64_t ts, uint64_t uuid, int kind, const char *name,
		  uint64_t flow, uint64_t end_flow, const arg_t *args, int nargs)
{
	buf_t *b = &p->body, *in = &p->tmp;
	b->n = in->n = 0;
	put_int(p, b, TE_TYPE, (uint64_t)kind);
	put_int(p, b, TE_TRACK_UUID, uuid);
	if (name) {
		int fresh;
		uint64_t iid = iid_of(p, name, &fresh);
		if (iid) {
			if (fresh) {
				put_int(p, in, EN_IID, iid);
				put_str(p, in, EN_NAME, name);
				wrap(p, in, 0, ID_EVENT_NAMES);
			}
			put_int(p, b, TE_NAME_IID, iid);
		} else {
			put_str(p, b, TE_NAME, name);
		}
	}
	if (flow)
		put_fixed64(p, b, TE_FLOW_IDS, flow);
	if (end_flow)
		put_fixed64(p, b, TE_TERMINATING_FLOW_IDS, end_flow);
	for (int i = 0; i < nargs; i++) {
		size_t at = b->n;
		put_str(p, b, DA_NAME, args[i].key);
		put_int(p, b, DA_INT_VALUE, (uint64_t)args[i].value);
		wrap(p, b, at, TE_DEBUG_ANNOTATIONS);
	}
	wrap(p, b, 0, PKT_TRACK_EVENT);
	packet(p, b, 1, ts, in);
}

static void counter(wf_pftrace_t *p, uint64_t ts, int64_t value)
{
	buf_t *b = &p->body;
	b->n = 0;
	put_int(p, b, TE_TYPE, COUNTER);
	put_int(p, b, TE_TRACK_UUID, BUSY_UUID);
	put_int(p, b, TE_COUNTER_VALUE, (uint64_t)value);
	wrap(p, b, 0, PKT_TRACK_EVENT);
	packet(p, b, 1, ts, NULL);
}

wf_pftrace_t *wf_pftrace_open(FILE *f, int pid, const char *program)
{
	wf_pftrace_t *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->f = f;
	p->pid = pid;
	p->first = 1;
	buf_t *b = &p->body;
	put_int(p, b, TD_UUID, PROCESS_UUID);
	size_t pd = b->n;
	put_int(p, b, PD_PID, (uint64_t)pid);
	char name[128];
	snprintf(name, sizeof name, "weft: %s", program);
	put_str(p, b, PD_PROCESS_NAME, name);
	wrap(p, b, pd, TD_PROCESS);
	wrap(p, b, 0, PKT_TRACK_DESCRIPTOR);
	packet(p, b, 0, 0, NULL);
	b->n = 0;
	put_int(p, b, TD_UUID, BUSY_UUID);
	put_int(p, b, TD_PARENT_UUID, PROCESS_UUID);
	put_str(p, b, TD_NAME, "busy workers");
	put_bytes(p, b, TD_COUNTER, "", 0);
	wrap(p, b, 0, PKT_TRACK_DESCRIPTOR);
	packet(p, b, 0, 0, NULL);
	return p;
}

/* End the worker's open slices at ts, innermost first, down to (and
 * including) the innermost `upto`; all of them if upto is 0. */
static void close_slices(wf_pftrace_t *p, int worker, uint64_t ts, int upto)
{
	worker_t *wk = worker_of(p, worker);
	if (upto) {
		int found = 0;
		for (int i = 0; i < wk->depth; i++)
			found |= wk->stack[i] == upto;
		if (!found)
			return;
	}
	uint64_t uuid = track(p, worker);
	while (wk->depth) {
		int top = wk->stack[--wk->depth];
		event(p, ts, uuid, SLICE_END, NULL, 0, 0, NULL, 0);
		if (upto && top == upto)
			break;
	}
}

static void open_slice(wf_pftrace_t *p, int worker, int what)
{
	worker_t *wk = worker_of(p, worker);
	if (wk->depth < 4)
		wk->stack[wk->depth++] = what;
}

static int has_open(wf_pftrace_t *p, int worker, int what)
{
	worker_t *wk = worker_of(p, worker);
	for (int i = 0; i < wk->depth; i++)
		if (wk->stack[i] == what)
			return 1;
	return 0;
}

static void set_busy(wf_pftrace_t *p, uint64_t ts, int worker, int on)
{
	worker_t *wk = worker_of(p, worker);
	if (wk->busy == on)
		return;
	wk->busy = on;
	p->nbusy += on ? 1 : -1;
	counter(p, ts, p->nbusy);
}

void wf_pftrace_row(wf_pftrace_t *p, const wf_trace_row_t *r)
{
	uint64_t ts = r->ns, ult = r->ult;
	int w = r->worker;
	const char *ev = r->event;
	if (ts > p->last_ts)
		p->last_ts = ts;
	uint64_t uuid = track(p, w);
	if (*r->name && ult) {
		char *old = (char *)(uintptr_t)wf_idmap_get(&p->names, ult);
		if (!old || strcmp(old, r->name)) {
			char *n = strdup(r->name);
			if (!n || wf_idmap_put(&p->names, ult, (uint64_t)(uintptr_t)n)) {
				free(n);
				p->oom = 1;
			} else {
				free(old);
			}
		}
	}
	if (!strcmp(ev, "run")) {
		close_slices(p, w, ts, 0); /* the loop (idle, sleep) or a run left open */
		uint64_t end = wf_idmap_take(&p->flows, ult);
		const char *named = (const char *)(uintptr_t)wf_idmap_get(&p->names, ult);
		char name[32];
		if (!named) {
			snprintf(name, sizeof name, "ult %" PRIu64, ult);
			/* Unnamed: every ULT's name is new, so it is not interned. */
			buf_t *b = &p->body, *in = &p->tmp;
			b->n = in->n = 0;
			put_int(p, b, TE_TYPE, SLICE_BEGIN);
			put_int(p, b, TE_TRACK_UUID, uuid);
			put_str(p, b, TE_NAME, name);
			if (end)
				put_fixed64(p, b, TE_TERMINATING_FLOW_IDS, end);
			wrap(p, b, 0, PKT_TRACK_EVENT);
			packet(p, b, 1, ts, NULL);
		} else {
			event(p, ts, uuid, SLICE_BEGIN, named, 0, end, NULL, 0);
		}
		open_slice(p, w, S_RUN);
		set_busy(p, ts, w, 1);
	} else if (!strcmp(ev, "stop")) {
		close_slices(p, w, ts, S_RUN);
		set_busy(p, ts, w, 0);
		if (!strcmp(r->detail, "exit")) {
			free((char *)(uintptr_t)wf_idmap_take(&p->names, ult));
			wf_idmap_take(&p->flows, ult);
		}
	} else if (!strcmp(ev, "idle")) {
		close_slices(p, w, ts, 0);
		event(p, ts, uuid, SLICE_BEGIN, "idle", 0, 0, NULL, 0);
		open_slice(p, w, S_IDLE);
		set_busy(p, ts, w, 0);
	} else if (!strcmp(ev, "sleep")) {
		if (!has_open(p, w, S_IDLE)) {
			close_slices(p, w, ts, 0);
			event(p, ts, uuid, SLICE_BEGIN, "idle", 0, 0, NULL, 0);
			open_slice(p, w, S_IDLE);
		}
		event(p, ts, uuid, SLICE_BEGIN, "sleep", 0, 0, NULL, 0);
		open_slice(p, w, S_SLEEP);
	} else if (!strcmp(ev, "wake")) {
		close_slices(p, w, ts, S_SLEEP);
	} else if (!strcmp(ev, "unpark")) {
		/* Woken twice before it ran: the newer flow wins. */
		if (wf_idmap_put(&p->flows, ult, ++p->flow))
			p->oom |= ult != 0;
		arg_t a[] = {{"ult", (int64_t)ult}};
		event(p, ts, uuid, INSTANT, "unpark", p->flow, 0, a, 1);
	} else if (!strcmp(ev, "create")) {
		arg_t a[] = {{"ult", (int64_t)ult}};
		event(p, ts, uuid, INSTANT, "create", 0, 0, a, 1);
	} else if (!strcmp(ev, "steal")) {
		arg_t a[] = {{"ult", (int64_t)ult}, {"victim", r->arg1}};
		event(p, ts, uuid, INSTANT, "steal", 0, 0, a, 2);
	} else if (!strcmp(ev, "migrate")) {
		arg_t a[] = {{"ult", (int64_t)ult}, {"from", r->arg1}};
		event(p, ts, uuid, INSTANT, "migrate", 0, 0, a, 2);
	} else if (!strcmp(ev, "lock")) {
		char name[40];
		snprintf(name, sizeof name, "lock %.30s", *r->detail ? r->detail : "mutex");
		arg_t a[] = {{"ult", (int64_t)ult}, {"wait_ns", r->arg2}};
		event(p, ts, uuid, INSTANT, name, 0, 0, a, 2);
	} else if (!strcmp(ev, "dropped")) {
		arg_t a[] = {{"records", r->arg1}};
		event(p, ts, uuid, INSTANT, "dropped", 0, 0, a, 1);
	} else if (!strcmp(ev, "end")) {
		close_slices(p, w, ts, 0);
		set_busy(p, ts, w, 0);
	}
}

int wf_pftrace_close(wf_pftrace_t *p, uint64_t *packets)
{
	/* Slices a trace without `end` rows left open. */
	for (int w = 0; w < p->nw; w++)
		if (p->w[w].depth)
			close_slices(p, w, p->last_ts, 0);
	if (p->other.depth)
		close_slices(p, -1, p->last_ts, 0);
	int e = p->oom ? ENOMEM : 0;
	if (packets)
		*packets = p->packets;
	for (size_t i = 0; i < p->names.cap; i++)
		if (p->names.k[i])
			free((char *)(uintptr_t)p->names.v[i]);
	for (size_t i = 0; i < p->iids.cap; i++)
		free(p->iids.k[i]);
	wf_idmap_free(&p->names);
	wf_idmap_free(&p->flows);
	free(p->iids.k);
	free(p->iids.v);
	free(p->w);
	free(p->pkt.b);
	free(p->body.b);
	free(p->tmp.b);
	free(p);
	return e;
}
