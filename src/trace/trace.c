/* Scheduler event tracing: streams, chunks, the flusher thread.
 *
 * Files
 *   WEFT_TRACE=path (or weft_config_t.trace) names the trace; a trailing
 *   ".json", ".csv", ".wft", ".pftrace" or ".perfetto-trace" is dropped and
 *   "%p" becomes the process id, giving a base B. While the program runs,
 *   records go to B.raw, a file in weft's own format (codec.h). When the
 *   runtime stops (weft_shutdown, or exit() with the runtime running) its
 *   meta chunk is appended, and it becomes the formats asked for
 *   (WEFT_TRACE_FORMAT, a comma-separated list; without it, "wft" for a
 *   path ending in ".wft", "pftrace" for one ending in ".pftrace" or
 *   ".perfetto-trace", else "json,csv"):
 *     wft      B.wft, the file itself, renamed: compact, written as the
 *              program runs, read by weft-trace
 *     json     B.json, Chrome Trace Event format, for Perfetto (export.c)
 *     csv      B.csv, one row per event, for weft-trace and spreadsheets
 *     pftrace  B.pftrace, Perfetto's own protobuf format, which its UI
 *              loads at any size (perfetto.c)
 *   and B.raw is removed unless it became B.wft.
 *
 * Streams and chunks
 *   Every worker writes records into its own stream (wf_trace_stream_t):
 *   a chunk of CHUNK_EVENTS fixed-size records (wf_trace_ev_t), filled by
 *   the worker alone with plain stores. A full chunk goes to the flusher's
 *   queue and the worker takes an empty one from the pool
 *   (wf_trace_refill): the only lock on the way, once per chunk. Threads
 *   that are not workers share one more stream under a spinlock
 *   (wf_trace_foreign).
 *
 *   The flusher, a kernel thread of its own, encodes queued chunks
 *   (codec.h: 6 to 15 bytes a record instead of 40) and writes them to B.raw
 *   and returns them to the pool, so a full buffer never stops the program.
 *   It runs at SCHED_IDLE priority: on a machine the workers keep busy it
 *   would otherwise take a core from one of them (on 2 cores, a cross-core
 *   park/unpark ping-pong ran 6x slower traced with the flusher at normal
 *   priority, 1.3x with it idle). Full chunks wait in memory for idle time;
 *   if the pool (MAX_CHUNKS_PER_STREAM per stream, allocated as needed) is
 *   used up first, records are dropped and counted, and the count is
 *   written into the trace.
 *
 *   A worker spinning in its loop for work is idle time the kernel cannot
 *   see: it keeps the flusher off that CPU. So a spinning worker writes a
 *   queued chunk itself (wf_trace_help) between its scans. A create+join
 *   loop on 2 workers dropped 46% of its records without this (the second
 *   worker spun on every create) and none with it.
 *
 * Who owns what
 *   pool, queue, stopping    under `lock`
 *   a stream's pos/end/chunk its writer (a worker's kernel thread; the
 *                            foreign stream under foreign_lock), until
 *                            wf_trace_stop, which takes every stream over
 *   B.raw                    whoever holds `writing` (the flusher, or a
 *                            spinning worker in wf_trace_help), until the
 *                            flusher is joined; then wf_trace_stop, which
 *                            takes `writing` for good
 *
 * Clock
 *   On x86-64 with an invariant TSC (CPUID 0x80000007 EDX bit 8) records
 *   carry rdtsc ticks - a few ns to read on bare metal, 18 ns on the
 *   2-vCPU VM weft is measured on, the larger part of a traced switch's
 *   cost there - and the meta chunk carries the ratio of TSC to
 *   CLOCK_MONOTONIC measured between start and stop. Elsewhere they carry
 *   CLOCK_MONOTONIC ns.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <weft/version.h>

#include "trace/export.h"
#include "trace/trace.h"

#define CHUNK_EVENTS          12288 /* 480 KiB: 40-byte records */
#define MAX_CHUNKS_PER_STREAM 128   /* 60 MiB: bursts wait in memory for idle time */

/* A chunk of records of one stream; in memory while it fills. Encoding
 * the records as they are made cost the switch path 5 ns more per record
 * than these plain stores (yield with tracing on, 2-vCPU Xeon VM): the
 * flusher encodes them instead, on time the workers leave idle. */
typedef struct wf_trace_chunk {
	struct wf_trace_chunk *next; /* in the pool or the flusher's queue */
	int stream;                  /* worker id, -1: the foreign stream */
	wf_trace_ev_t ev[CHUNK_EVENTS];
} wf_trace_chunk_t;

/* One reading of both clocks, to convert ticks to ns. */
typedef struct {
	uint64_t ticks, mono_ns;
} wf_trace_clock_ref_t;

int wf_trace_on;
int wf_trace_tsc;
wf_trace_stream_t *wf_trace_streams;

static struct {
	wf_spinlock_t lock;
	wf_trace_chunk_t *pool;       /* empty chunks */
	wf_trace_chunk_t *queue_head; /* full chunks for the flusher, FIFO */
	wf_trace_chunk_t *queue_tail;
	int nchunks, max_chunks; /* allocated so far, and the cap */
	atomic_int spare;        /* chunks in the pool or still allocatable: a hint
	                     read without the lock, so a stream that is
	                     dropping records does not take it per record */
	int stopping;
	atomic_int kick;    /* futex word: bumped when work is queued */
	atomic_int writing; /* the right to write B.raw (writer_try) */
	int nstreams;       /* workers + 1 (the foreign stream, last) */
	int fd;             /* B.raw */
	int write_error;    /* errno of a failed write, 0 if none */
	pthread_t flusher;
	wf_spinlock_t foreign_lock;
	wf_trace_clock_ref_t start;
	char *base;   /* B */
	char *raw;    /* B.raw */
	int formats;  /* WF_TRACE_FMT_* */
	uint8_t *enc; /* one encoded chunk: whoever holds `writing` uses it */
	pid_t pid;    /* the process tracing: a forked child has no flusher */
} tr;

static int have_invariant_tsc(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
		return 0;
	__get_cpuid(0x80000007u, &a, &b, &c, &d);
	return (d >> 8) & 1;
#else
	return 0;
#endif
}

static void clock_ref(wf_trace_clock_ref_t *r)
{
	r->mono_ns = wf_now_ns();
	r->ticks = wf_trace_clock();
}

static int ends_with(const char *s, size_t n, const char *tail)
{
	size_t t = strlen(tail);
	return n > t && strcmp(s + n - t, tail) == 0;
}

int wf_trace_parse_formats(const char *list)
{
	int f = 0;
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");
		if (n == 4 && !strncmp(p, "json", 4))
			f |= WF_TRACE_FMT_JSON;
		else if (n == 3 && !strncmp(p, "csv", 3))
			f |= WF_TRACE_FMT_CSV;
		else if (n == 3 && !strncmp(p, "wft", 3))
			f |= WF_TRACE_FMT_WFT;
		else if (n == 7 && !strncmp(p, "pftrace", 7))
			f |= WF_TRACE_FMT_PFTRACE;
		else
			return 0;
		p += n;
		if (*p == ',' && !*++p)
			return 0; /* a trailing comma */
	}
	return f;
}

/* The formats to write: WEFT_TRACE_FORMAT, else by the path's extension.
 * 0 if WEFT_TRACE_FORMAT is not a valid list. */
static int formats_of(const char *path)
{
	const char *list = getenv("WEFT_TRACE_FORMAT");
	if (list && *list)
		return wf_trace_parse_formats(list);
	size_t n = strlen(path);
	if (ends_with(path, n, ".wft"))
		return WF_TRACE_FMT_WFT;
	if (ends_with(path, n, ".pftrace") || ends_with(path, n, ".perfetto-trace"))
		return WF_TRACE_FMT_PFTRACE;
	return WF_TRACE_FMT_JSON | WF_TRACE_FMT_CSV;
}

/* B from the user's path: drop a format's extension, expand %p. NULL on
 * ENOMEM. */
static char *base_of(const char *path)
{
	static const char *const exts[] = {".json", ".csv", ".wft", ".pftrace", ".perfetto-trace"};
	size_t n = strlen(path);
	for (size_t i = 0; i < sizeof exts / sizeof *exts; i++)
		if (ends_with(path, n, exts[i])) {
			n -= strlen(exts[i]);
			break;
		}
	char pid[24];
	int np = snprintf(pid, sizeof pid, "%d", (int)getpid());
	char *out = malloc(n * (size_t)np + 1), *o = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (path[i] == '%' && i + 1 < n && path[i + 1] == 'p') {
			memcpy(o, pid, (size_t)np);
			o += np;
			i++;
		} else {
			*o++ = path[i];
		}
	}
	*o = 0;
	return out;
}

/* A chunk from the pool, or a new one while under the cap. Under tr.lock. */
static wf_trace_chunk_t *chunk_get_locked(void)
{
	wf_trace_chunk_t *c = tr.pool;
	if (c) {
		tr.pool = c->next;
	} else if (tr.nchunks < tr.max_chunks) {
		c = malloc(sizeof *c);
		if (c)
			tr.nchunks++;
		else { /* out of memory: make do with what there is */
			atomic_fetch_sub_explicit(&tr.spare, tr.max_chunks - tr.nchunks,
						  memory_order_relaxed);
			tr.max_chunks = tr.nchunks;
		}
	}
	if (c)
		atomic_fetch_sub_explicit(&tr.spare, 1, memory_order_relaxed);
	return c;
}

static void stream_take(wf_trace_stream_t *s, wf_trace_chunk_t *c)
{
	s->chunk = c;
	if (c) {
		c->stream = s->id;
		s->pos = c->ev;
		s->end = c->ev + CHUNK_EVENTS;
	} else {
		s->pos = s->end = NULL;
	}
}

static void write_all(const void *p, size_t n)
{
	const char *b = p;
	while (n && !tr.write_error) {
		ssize_t r = write(tr.fd, b, n);
		if (r < 0) {
			if (errno != EINTR)
				tr.write_error = errno;
			continue;
		}
		b += r;
		n -= (size_t)r;
	}
}

static void chunk_write(int stream, const void *bytes, uint32_t n)
{
	if (!n)
		return;
	wf_trace_chunk_hdr_t h = {WF_TRACE_CHUNK_MAGIC, stream, n, 0};
	write_all(&h, sizeof h);
	write_all(bytes, n);
}

/* Encode the first n records of c into tr.enc and write them. */
static void chunk_flush(const wf_trace_chunk_t *c, size_t n)
{
	uint8_t *p = tr.enc;
	uint64_t last = 0; /* a chunk's first record is against 0 (codec.h) */
	for (size_t i = 0; i < n; i++) {
		const wf_trace_ev_t *e = &c->ev[i];
		p = wf_trace_encode(p, (int64_t)(e->ts - last), e->type, e->code, e->x, e->a, e->b,
				    e->c);
		last = e->ts;
	}
	chunk_write(c->stream, tr.enc, (uint32_t)(p - tr.enc));
}

/* The flusher: write queued chunks until stopped and the queue is empty. */
/* Take the right to write B.raw: 1 if taken. Whoever holds it pops
 * chunks and writes them, so chunks reach the file in queue order and a
 * stream's chunks keep their order. */
static int writer_try(void)
{
	int free = 0;
	return atomic_compare_exchange_strong_explicit(&tr.writing, &free, 1, memory_order_acquire,
						       memory_order_relaxed);
}

static void writer_release(void)
{
	atomic_store_explicit(&tr.writing, 0, memory_order_release);
}

/* Write the oldest queued chunk and return it to the pool: 1, or 0 if
 * none is queued. The caller holds the right to write. */
static int flush_one(void)
{
	wf_spin_lock(&tr.lock);
	wf_trace_chunk_t *c = tr.queue_head;
	if (c) {
		/* Stored atomically: wf_trace_help peeks at it unlocked. */
		__atomic_store_n(&tr.queue_head, c->next, __ATOMIC_RELAXED);
		if (!c->next)
			tr.queue_tail = NULL;
	}
	wf_spin_unlock(&tr.lock);
	if (!c)
		return 0;
	chunk_flush(c, CHUNK_EVENTS);
	wf_spin_lock(&tr.lock);
	c->next = tr.pool;
	tr.pool = c;
	atomic_fetch_add_explicit(&tr.spare, 1, memory_order_relaxed);
	wf_spin_unlock(&tr.lock);
	return 1;
}

void wf_trace_help(void)
{
	if (__atomic_load_n(&tr.queue_head, __ATOMIC_RELAXED) && writer_try()) {
		flush_one();
		writer_release();
	}
}

/* The flusher: write queued chunks until stopped and the queue is empty. */
static void *flusher_main(void *arg)
{
	(void)arg;
	/* Lowest priority: on a machine the workers keep busy, the flusher
	 * takes only idle time, and if that is not enough records are
	 * dropped and counted - rather than a worker losing its core. */
	struct sched_param none = {0};
	WF_SYS(pthread_setschedparam)(WF_SYS(pthread_self)(), SCHED_IDLE, &none);
	for (;;) {
		int kick = atomic_load_explicit(&tr.kick, memory_order_acquire);
		if (!writer_try()) {
			/* A spinning worker writes a chunk: wait for it. */
			struct timespec ts = {0, 50000};
			WF_SYS(nanosleep)(&ts, NULL);
			continue;
		}
		while (flush_one())
			;
		writer_release();
		wf_spin_lock(&tr.lock);
		int idle = !tr.queue_head, stop = tr.stopping;
		wf_spin_unlock(&tr.lock);
		if (!idle)
			continue;
		if (stop)
			return NULL;
		wf_futex_wait(&tr.kick, kick, NULL);
	}
}

static void kick_flusher(void)
{
	atomic_fetch_add_explicit(&tr.kick, 1, memory_order_release);
	wf_futex_wake(&tr.kick, 1);
}

wf_trace_ev_t *wf_trace_refill(wf_trace_stream_t *s)
{
	if (!s->chunk && atomic_load_explicit(&tr.spare, memory_order_relaxed) <= 0) {
		WF_OWNER_ADD(&s->dropped, 1); /* still nothing to write into */
		return NULL;
	}
	wf_spin_lock(&tr.lock);
	if (tr.stopping) {
		wf_spin_unlock(&tr.lock);
		return NULL;
	}
	wf_trace_chunk_t *full = s->chunk;
	if (full) {
		full->next = NULL;
		if (tr.queue_tail)
			tr.queue_tail->next = full;
		else
			__atomic_store_n(&tr.queue_head, full, __ATOMIC_RELAXED); /* as flush_one */
		tr.queue_tail = full;
	}
	stream_take(s, chunk_get_locked());
	wf_spin_unlock(&tr.lock);
	if (full)
		kick_flusher();
	if (!s->pos) {
		WF_OWNER_ADD(&s->dropped, 1);
		/* Try again on the next record: the flusher returns chunks. */
		return NULL;
	}
	return s->pos;
}

void wf_trace_foreign(int type, int code, int32_t x, uint64_t a, uint64_t b)
{
	wf_spin_lock(&tr.foreign_lock);
	wf_trace_stream_t *s = &wf_trace_streams[tr.nstreams - 1];
	wf_trace_ev_t *e = s->pos;
	if (e != s->end || (e = wf_trace_refill(s))) {
		*e = (wf_trace_ev_t){wf_trace_clock(), (uint16_t)type, (uint16_t)code, x, a, b, 0};
		__atomic_store_n(&s->pos, e + 1, __ATOMIC_RELEASE);
	}
	wf_spin_unlock(&tr.foreign_lock);
}

/* ---- the hooks (trace.h) ---- */

/* Append one record for the caller's worker w (NULL: not a worker).
 * Called only while WF_TRACING(), by w's kernel thread. */
static inline void emit(wf_worker_t *w, int type, int code, int32_t x, uint64_t a, uint64_t b,
			uint64_t c)
{
	if (unlikely(!w)) {
		wf_trace_foreign(type, code, x, a, b);
		return;
	}
	wf_trace_stream_t *s = &wf_trace_streams[w->id];
	wf_trace_ev_t *e = s->pos;
	if (unlikely(e == s->end) && !(e = wf_trace_refill(s)))
		return;
	e->ts = wf_trace_clock();
	e->type = (uint16_t)type;
	e->code = (uint16_t)code;
	e->x = x;
	e->a = a;
	e->b = b;
	e->c = c;
	/* Release: wf_trace_stop may take the stream over while the worker
	 * still runs (exit()), and reads the records below pos. */
	__atomic_store_n(&s->pos, e + 1, __ATOMIC_RELEASE);
}

static inline uint64_t id_of(const wf_ult_t *u)
{
	return u ? (uint64_t)u->id : 0;
}

/* The switch on w from `from` (NULL: the loop) to `to` (NULL: the loop),
 * with from's after-switch action. Called by the switch tail (sched.c). */
void wf_trace_switch(wf_worker_t *w, wf_ult_t *from, wf_ult_t *to, int action)
{
	int code = action;
	uint64_t what = 0;
	if (from && action != WF_AFTER_EXIT && action != WF_AFTER_REQUEUE &&
	    action != WF_AFTER_PREEMPT) {
		code |= from->block_reason << 8;
		/* A joiner's target is alive until the joiner claims it: name it
		 * by id. A hand-off's target may be gone already: not named. */
		const void *obj = from->block_obj;
		what = from->block_reason == WF_BLOCK_JOIN      ? ((const wf_ult_t *)obj)->id
		       : from->block_reason == WF_BLOCK_HANDOFF ? 0
								: (uint64_t)(uintptr_t)obj;
	}
	emit(w, WF_EV_SWITCH, code, to ? to->last_worker : -1, id_of(from), id_of(to), what);
}

/* u was made runnable by the caller (running on w, or NULL). */
void wf_trace_unpark(wf_worker_t *w, wf_ult_t *u)
{
	emit(w, WF_EV_UNPARK, 0, 0, id_of(u), id_of(w ? w->current : NULL), 0);
}

/* The caller took a contended lock (WF_TRACE_LOCK_*) it began waiting for
 * at t0 (wf_now_ns). Called by the lock's acquirer. */
void wf_trace_lock(const void *lock, int kind, uint64_t t0)
{
	emit(wf_worker_self(), WF_EV_LOCK, kind, 0, (uint64_t)(uintptr_t)lock, wf_now_ns() - t0, 0);
}

void wf_trace_emit(wf_worker_t *w, int type, int code, int32_t x, uint64_t a, uint64_t b)
{
	emit(w, type, code, x, a, b, 0);
}

void wf_trace_name(wf_worker_t *w, wf_ult_t *u)
{
	for (int i = 0; i < 4; i++) {
		uint64_t part = 0;
		memcpy(&part, u->name + 8 * i, 8);
		emit(w, WF_EV_NAME, i, 0, (uint64_t)u->id, part, 0);
		if (memchr(u->name + 8 * i, 0, 8))
			break;
	}
}

void wf_trace_create(wf_worker_t *w, wf_ult_t *u)
{
	if (u->name[0]) /* first, so that the create row carries it */
		wf_trace_name(w, u);
	emit(w, WF_EV_CREATE, 0, u->bound_worker, (uint64_t)u->id, id_of(w ? w->current : NULL), 0);
}

void wf_trace_running(int worker, wf_ult_t *u)
{
	wf_trace_name(NULL, u);
	wf_trace_stream_t *s = &wf_trace_streams[worker];
	wf_trace_ev_t *e = s->pos;
	*e = (wf_trace_ev_t){wf_trace_clock(), WF_EV_SWITCH, WF_AFTER_NONE, -1, 0, u->id, 0};
	__atomic_store_n(&s->pos, e + 1, __ATOMIC_RELEASE);
}

int wf_trace_start(const char *path, int nworkers)
{
	memset(&tr, 0, sizeof tr);
	tr.fd = -1;
	tr.nstreams = nworkers + 1;
	tr.max_chunks = MAX_CHUNKS_PER_STREAM * tr.nstreams;
	atomic_store(&tr.spare, tr.max_chunks);
	int e = EINVAL;
	if (!(tr.formats = formats_of(path)))
		goto fail;
	e = ENOMEM;
	if (!(tr.enc = malloc((size_t)CHUNK_EVENTS * WF_TRACE_REC_MAX)))
		goto fail;
	if (!(tr.base = base_of(path)))
		goto fail;
	size_t n = strlen(tr.base) + 8;
	if (!(tr.raw = malloc(n)))
		goto fail;
	snprintf(tr.raw, n, "%s.raw", tr.base);
	tr.fd = open(tr.raw, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	e = errno;
	if (tr.fd < 0)
		goto fail;
	wf_trace_file_hdr_t fh = {WF_TRACE_FILE_MAGIC, WF_TRACE_FILE_VERSION, 0};
	write_all(&fh, sizeof fh);
	if ((e = tr.write_error))
		goto fail;
	e = ENOMEM;
	if (posix_memalign((void **)&wf_trace_streams, WF_CACHELINE,
			   (size_t)tr.nstreams * sizeof *wf_trace_streams))
		goto fail;
	memset(wf_trace_streams, 0, (size_t)tr.nstreams * sizeof *wf_trace_streams);
	for (int i = 0; i < tr.nstreams; i++) {
		wf_trace_stream_t *s = &wf_trace_streams[i];
		s->id = i < nworkers ? i : -1;
		wf_spin_lock(&tr.lock);
		stream_take(s, chunk_get_locked());
		wf_spin_unlock(&tr.lock);
		if (!s->chunk)
			goto fail;
	}
	/* The flusher must not take signals meant for the program. */
	e = wf_sys_thread_create(&tr.flusher, flusher_main, NULL);
	if (e)
		goto fail;
	wf_trace_tsc = have_invariant_tsc();
	tr.pid = getpid();
	clock_ref(&tr.start);
	__atomic_store_n(&wf_trace_on, 1, __ATOMIC_RELEASE);
	return 0;
fail:
	if (wf_trace_streams) {
		for (int i = 0; i < tr.nstreams; i++)
			free(wf_trace_streams[i].chunk);
		free(wf_trace_streams);
		wf_trace_streams = NULL;
	}
	if (tr.fd >= 0) {
		close(tr.fd);
		unlink(tr.raw);
	}
	free(tr.raw);
	free(tr.base);
	free(tr.enc);
	tr.raw = tr.base = NULL;
	tr.enc = NULL;
	return e;
}

void wf_trace_forked(void)
{
	/* No flusher came along, and the trace is the parent's. */
	__atomic_store_n(&wf_trace_on, 0, __ATOMIC_RELEASE);
}

/* Append the meta chunk (codec.h) for a trace that ended at `end`. */
static void write_meta(const wf_trace_clock_ref_t *end, uint64_t dropped, int complete)
{
	/* ns per tick from the two readings, or from a fresh 20 ms
	 * measurement if the trace was too short to tell. */
	double ns_per_tick = 1.0;
	if (wf_trace_tsc) {
		wf_trace_clock_ref_t a = tr.start, b = *end;
		if (b.mono_ns - a.mono_ns < 20000000u) {
			clock_ref(&a);
			struct timespec d = {0, 20000000};
			WF_SYS(nanosleep)(&d, NULL);
			clock_ref(&b);
		}
		if (b.ticks > a.ticks)
			ns_per_tick = (double)(b.mono_ns - a.mono_ns) / (double)(b.ticks - a.ticks);
	}
	char meta[512];
	int n = snprintf(meta, sizeof meta,
			 "version=%s\nprogram=%s\npid=%d\nworkers=%d\nsched=%.200s\nclock=%s\n"
			 "t0=%" PRIu64 "\nns_per_tick=%.17g\nduration_ns=%" PRIu64
			 "\ndropped=%" PRIu64 "\ncomplete=%d\n",
			 WEFT_VERSION_STRING, program_invocation_short_name, (int)tr.pid,
			 tr.nstreams - 1, wf_rt.sched_spec ? wf_rt.sched_spec : "",
			 wf_trace_tsc ? "tsc" : "monotonic", tr.start.ticks, ns_per_tick,
			 end->mono_ns - tr.start.mono_ns, dropped, complete);
	chunk_write(WF_TRACE_STREAM_META, meta, (uint32_t)n);
}

/* B.raw, finished, becomes the formats asked for. 0 or an errno value. */
static int finish_files(void)
{
	const char *from = tr.raw;
	size_t n = strlen(tr.base) + 16;
	char *wft = malloc(n), *json = malloc(n), *csv = malloc(n), *pf = malloc(n);
	int e = ENOMEM;
	if (!wft || !json || !csv || !pf)
		goto out;
	snprintf(wft, n, "%s.wft", tr.base);
	snprintf(json, n, "%s.json", tr.base);
	snprintf(csv, n, "%s.csv", tr.base);
	snprintf(pf, n, "%s.pftrace", tr.base);
	e = 0;
	if (tr.formats & WF_TRACE_FMT_WFT) {
		if (rename(tr.raw, wft)) {
			e = errno;
			goto out;
		}
		from = wft;
	}
	if (tr.formats & (WF_TRACE_FMT_JSON | WF_TRACE_FMT_CSV | WF_TRACE_FMT_PFTRACE)) {
		wf_trace_sink_t sink = {0};
		if ((tr.formats & WF_TRACE_FMT_JSON) && !(sink.json = fopen(json, "w")))
			e = errno;
		if (!e && (tr.formats & WF_TRACE_FMT_CSV) && !(sink.csv = fopen(csv, "w")))
			e = errno;
		if (!e && (tr.formats & WF_TRACE_FMT_PFTRACE) && !(sink.pftrace = fopen(pf, "wb")))
			e = errno;
		wf_trace_meta_t m;
		if (!e)
			e = wf_trace_export(from, &sink, &m);
		FILE *files[] = {sink.json, sink.csv, sink.pftrace};
		for (int i = 0; i < 3; i++)
			if (files[i] && fclose(files[i]) && !e)
				e = errno;
	}
	if (!e && from == tr.raw)
		unlink(tr.raw);
out:
	free(wft);
	free(json);
	free(csv);
	free(pf);
	return e;
}

void wf_trace_stop(int all_stopped)
{
	if (!__atomic_load_n(&wf_trace_on, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&wf_trace_on, 0, __ATOMIC_RELEASE);
	if (getpid() != tr.pid)
		return; /* a child forked while tracing: the trace is its parent's */
	if (!all_stopped) {
		/* Workers still run: give a hook that read wf_trace_on just
		 * before it changed time to finish its record. One that is
		 * later still writes above the pos read below (each record is
		 * published by the release store of pos), and is left out. */
		struct timespec ts = {0, 1000000};
		WF_SYS(nanosleep)(&ts, NULL);
	}
	wf_trace_clock_ref_t end;
	clock_ref(&end);
	wf_spin_lock(&tr.lock);
	tr.stopping = 1;
	wf_spin_unlock(&tr.lock);
	kick_flusher();
	WF_SYS(pthread_join)(tr.flusher, NULL);
	/* A worker may still be in wf_trace_help (exit() with workers
	 * running): wait for it, and keep the right to write for good. */
	while (!writer_try())
		wf_cpu_relax();

	/* Everything is ours now: write what the streams hold. A stream's
	 * chunk no longer changes (refills see `stopping` under tr.lock). */
	uint64_t dropped = 0;
	for (int i = 0; i < tr.nstreams; i++) {
		wf_trace_stream_t *s = &wf_trace_streams[i];
		wf_trace_ev_t *pos = __atomic_load_n(&s->pos, __ATOMIC_ACQUIRE);
		if (s->chunk)
			chunk_flush(s->chunk, (size_t)(pos - s->chunk->ev));
		dropped += __atomic_load_n(&s->dropped, __ATOMIC_RELAXED);
	}
	for (wf_trace_chunk_t *c = tr.pool, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	write_meta(&end, dropped, all_stopped);
	close(tr.fd);
	if (tr.write_error) {
		fprintf(stderr, "weft: trace %s: %s; no trace written\n", tr.raw,
			strerror(tr.write_error));
	} else {
		int e = finish_files();
		if (e)
			fprintf(stderr, "weft: writing trace %s: %s (the records are in %s)\n",
				tr.base, strerror(e), tr.raw);
	}
	/* With workers running, a hook may still hold a stream pointer: the
	 * streams and their chunks stay allocated until the process ends. */
	if (all_stopped) {
		for (int i = 0; i < tr.nstreams; i++)
			free(wf_trace_streams[i].chunk);
		free(wf_trace_streams);
		wf_trace_streams = NULL;
	}
	free(tr.raw);
	free(tr.base);
	free(tr.enc);
	tr.raw = tr.base = NULL;
	tr.enc = NULL;
}
