/* Scheduler event tracing: streams, chunks, the flusher thread.
 *
 * Files
 *   WEFT_TRACE=path (or weft_config_t.trace) names the trace; a trailing
 *   ".json" or ".csv" is dropped and "%p" becomes the process id, giving a
 *   base B. While the program runs, records go to B.raw; when the runtime
 *   stops (weft_shutdown, or exit() with the runtime running) they become
 *   B.json (Chrome Trace Event format, for Perfetto) and B.csv (one row per
 *   event, for weft-trace and spreadsheets), and B.raw is removed
 *   (export.c).
 *
 * Streams and chunks
 *   Every worker writes records into its own stream (wf_trace_stream_t):
 *   a chunk of CHUNK_EVENTS records, filled by the worker alone with plain
 *   stores. A full chunk goes to the flusher's queue and the worker takes an
 *   empty one from the pool (wf_trace_refill): the only lock on the way, once
 *   per CHUNK_EVENTS records. Threads that are not workers share one more
 *   stream under a spinlock (wf_trace_foreign).
 *
 *   The flusher, a kernel thread of its own, writes queued chunks to B.raw
 *   and returns them to the pool, so a full buffer never stops the program.
 *   It runs at SCHED_IDLE priority: on a machine the workers keep busy it
 *   would otherwise take a core from one of them (on 2 cores, a cross-core
 *   park/unpark ping-pong ran 6x slower traced with the flusher at normal
 *   priority, 1.3x with it idle). Full chunks wait in memory for idle time;
 *   if the pool (MAX_CHUNKS_PER_STREAM per stream, allocated as needed) is
 *   used up first, records are dropped and counted, and the count is
 *   written into the trace.
 *
 * Who owns what
 *   pool, queue, stopping    under `lock`
 *   a stream's pos/end/chunk its writer (a worker's kernel thread; the
 *                            foreign stream under foreign_lock), until
 *                            wf_trace_stop, which takes every stream over
 *   B.raw                    the flusher, until it is joined; then
 *                            wf_trace_stop
 *
 * Clock
 *   On x86-64 with an invariant TSC (CPUID 0x80000007 EDX bit 8) records
 *   carry rdtsc ticks - a few ns to read - and the export converts them with
 *   the ratio of TSC to CLOCK_MONOTONIC measured between start and stop.
 *   Elsewhere they carry CLOCK_MONOTONIC ns.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "trace/export.h"
#include "trace/trace.h"

#define CHUNK_EVENTS          16384 /* 512 KiB */
#define MAX_CHUNKS_PER_STREAM 128   /* 64 MiB: bursts wait in memory for idle time */

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
	atomic_int kick; /* futex word: bumped when work is queued */
	int nstreams;    /* workers + 1 (the foreign stream, last) */
	int fd;          /* B.raw */
	int write_error; /* errno of a failed write, 0 if none */
	pthread_t flusher;
	wf_spinlock_t foreign_lock;
	wf_trace_clock_ref_t start;
	char *base; /* B */
	char *raw;  /* B.raw */
	pid_t pid;  /* the process tracing: a forked child has no flusher */
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

void wf_trace_clock_ref(wf_trace_clock_ref_t *r)
{
	r->mono_ns = wf_now_ns();
	r->ticks = wf_trace_clock();
}

/* B from the user's path: drop .json/.csv, expand %p. NULL on ENOMEM. */
static char *base_of(const char *path)
{
	size_t n = strlen(path);
	if (n > 5 && strcmp(path + n - 5, ".json") == 0)
		n -= 5;
	else if (n > 4 && strcmp(path + n - 4, ".csv") == 0)
		n -= 4;
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
		c = malloc(sizeof *c + CHUNK_EVENTS * sizeof(wf_trace_ev_t));
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

static void chunk_write(wf_trace_chunk_t *c, uint32_t n)
{
	if (!n)
		return;
	wf_trace_chunk_hdr_t h = {WF_TRACE_MAGIC, c->stream, n, 0};
	write_all(&h, sizeof h);
	write_all(c->ev, n * sizeof(wf_trace_ev_t));
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
		wf_spin_lock(&tr.lock);
		wf_trace_chunk_t *c = tr.queue_head;
		tr.queue_head = tr.queue_tail = NULL;
		int stop = tr.stopping;
		wf_spin_unlock(&tr.lock);
		if (!c) {
			if (stop)
				return NULL;
			wf_futex_wait(&tr.kick, kick, NULL);
			continue;
		}
		while (c) {
			wf_trace_chunk_t *next = c->next;
			chunk_write(c, CHUNK_EVENTS);
			wf_spin_lock(&tr.lock);
			c->next = tr.pool;
			tr.pool = c;
			atomic_fetch_add_explicit(&tr.spare, 1, memory_order_relaxed);
			wf_spin_unlock(&tr.lock);
			c = next;
		}
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
			tr.queue_head = full;
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
		*e = (wf_trace_ev_t){wf_trace_clock(), (uint16_t)type, (uint16_t)code, x, a, b};
		__atomic_store_n(&s->pos, e + 1, __ATOMIC_RELEASE);
	}
	wf_spin_unlock(&tr.foreign_lock);
}

/* ---- the hooks (trace.h) ---- */

/* Append one record for the caller's worker w (NULL: not a worker).
 * Called only while WF_TRACING(), by w's kernel thread. */
static inline void emit(wf_worker_t *w, int type, int code, int32_t x, uint64_t a, uint64_t b)
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
	if (from && action != WF_AFTER_EXIT && action != WF_AFTER_REQUEUE &&
	    action != WF_AFTER_PREEMPT) {
		code |= from->block_reason << 8;
		/* A joiner's target is alive until the joiner claims it: name it
		 * by id. A hand-off's target may be gone already: not named. */
		const void *obj = from->block_obj;
		uint64_t what = from->block_reason == WF_BLOCK_JOIN ? ((const wf_ult_t *)obj)->id
				: from->block_reason == WF_BLOCK_HANDOFF ? 0
									 : (uint64_t)(uintptr_t)obj;
		if (what)
			emit(w, WF_EV_BLOCKOBJ, 0, 0, what, 0);
	}
	emit(w, WF_EV_SWITCH, code, to ? to->last_worker : -1, id_of(from), id_of(to));
}

/* u was made runnable by the caller (running on w, or NULL). */
void wf_trace_unpark(wf_worker_t *w, wf_ult_t *u)
{
	emit(w, WF_EV_UNPARK, 0, 0, id_of(u), id_of(w ? w->current : NULL));
}

/* The caller took a contended lock (WF_TRACE_LOCK_*) it began waiting for
 * at t0 (wf_now_ns). Called by the lock's acquirer. */
void wf_trace_lock(const void *lock, int kind, uint64_t t0)
{
	emit(wf_worker_self(), WF_EV_LOCK, kind, 0, (uint64_t)(uintptr_t)lock, wf_now_ns() - t0);
}

void wf_trace_emit(wf_worker_t *w, int type, int code, int32_t x, uint64_t a, uint64_t b)
{
	emit(w, type, code, x, a, b);
}

void wf_trace_name(wf_worker_t *w, wf_ult_t *u)
{
	for (int i = 0; i < 4; i++) {
		uint64_t part = 0;
		memcpy(&part, u->name + 8 * i, 8);
		emit(w, WF_EV_NAME, i, 0, (uint64_t)u->id, part);
		if (memchr(u->name + 8 * i, 0, 8))
			break;
	}
}

void wf_trace_create(wf_worker_t *w, wf_ult_t *u)
{
	if (u->name[0]) /* first, so that the create row carries it */
		wf_trace_name(w, u);
	emit(w, WF_EV_CREATE, 0, u->bound_worker, (uint64_t)u->id, id_of(w ? w->current : NULL));
}

void wf_trace_running(int worker, wf_ult_t *u)
{
	wf_trace_name(NULL, u);
	wf_trace_stream_t *s = &wf_trace_streams[worker];
	wf_trace_ev_t *e = s->pos;
	*e = (wf_trace_ev_t){wf_trace_clock(), WF_EV_SWITCH, WF_AFTER_NONE, -1, 0, u->id};
	__atomic_store_n(&s->pos, e + 1, __ATOMIC_RELEASE);
}

int wf_trace_start(const char *path, int nworkers)
{
	memset(&tr, 0, sizeof tr);
	tr.fd = -1;
	tr.nstreams = nworkers + 1;
	tr.max_chunks = MAX_CHUNKS_PER_STREAM * tr.nstreams;
	atomic_store(&tr.spare, tr.max_chunks);
	int e = ENOMEM;
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
	wf_trace_clock_ref(&tr.start);
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
	tr.raw = tr.base = NULL;
	return e;
}

void wf_trace_forked(void)
{
	/* No flusher came along, and the trace is the parent's. */
	__atomic_store_n(&wf_trace_on, 0, __ATOMIC_RELEASE);
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
	wf_trace_clock_ref(&end);
	wf_spin_lock(&tr.lock);
	tr.stopping = 1;
	wf_spin_unlock(&tr.lock);
	kick_flusher();
	WF_SYS(pthread_join)(tr.flusher, NULL);

	/* Everything is ours now: write what the streams hold. A stream's
	 * chunk no longer changes (refills see `stopping` under tr.lock). */
	uint64_t dropped = 0;
	for (int i = 0; i < tr.nstreams; i++) {
		wf_trace_stream_t *s = &wf_trace_streams[i];
		wf_trace_ev_t *pos = __atomic_load_n(&s->pos, __ATOMIC_ACQUIRE);
		if (s->chunk)
			chunk_write(s->chunk, (uint32_t)(pos - s->chunk->ev));
		dropped += __atomic_load_n(&s->dropped, __ATOMIC_RELAXED);
	}
	for (wf_trace_chunk_t *c = tr.pool, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	close(tr.fd);
	if (tr.write_error) {
		fprintf(stderr, "weft: trace %s: %s; no trace written\n", tr.raw,
			strerror(tr.write_error));
	} else {
		wf_trace_meta_t meta = {
			.workers = tr.nstreams - 1,
			.start = tr.start,
			.end = end,
			.tsc = wf_trace_tsc,
			.dropped = dropped,
			.complete = all_stopped,
		};
		int e = wf_trace_export(tr.raw, tr.base, &meta);
		if (e)
			fprintf(stderr, "weft: writing trace %s.json/.csv: %s\n", tr.base,
				strerror(e));
		else
			unlink(tr.raw);
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
	tr.raw = tr.base = NULL;
}
