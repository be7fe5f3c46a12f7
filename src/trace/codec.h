/* The weft trace format: records, how they are encoded, and the file.
 *
 * Shared by the runtime (trace.c writes it), the export to JSON and CSV
 * (export.c) and tools/weft-trace-scan.c, which reads it offline; this
 * header needs nothing but <stdint.h> and <string.h>.
 *
 * Records
 *   A record is an event type (enum wf_trace_type), a timestamp and up to
 *   five fields - code, x, a, b, c - whose meaning depends on the type. Most
 *   fields are small (ULT ids, worker numbers, reasons) or zero, and
 *   successive timestamps of one stream are close, so a record is encoded
 *   as
 *
 *     tag     two bytes (u16): the type in bits 0-3, then two bits per
 *             value, in the order dt, code, x, a, b, c, giving its width:
 *             0 (the value is 0 and left out), 1, 4 or 8 bytes
 *     values  dt = zigzag(ts - the stream's previous ts; a chunk's first
 *             record against 0), code, zigzag(x), a, b, c, each in its
 *             width, little-endian
 *
 *   Widths rather than varints: every value is stored as 8 bytes and the
 *   writer moves on by its width, with no branch per byte. The runtime's
 *   flusher encodes whole chunks of wf_trace_ev_t (trace.c). A switch
 *   between two ULTs takes 6 to 15 bytes; the 32-byte fixed records written
 *   to the file before made traces of switch-heavy runs 2 to 5 times
 *   bigger.
 *
 * The file (B.wft, and B.raw while the program runs)
 *   file header   16 bytes: "WEFT-TRC", version (u32), 0 (u32)
 *   chunks        a chunk header (wf_trace_chunk_hdr_t) and n bytes of
 *                 records of one stream: a worker (0..workers-1) or the
 *                 threads that are not workers (-1). A stream's chunks
 *                 keep its order; chunks of different streams interleave
 *                 as they were flushed.
 *   meta          one last chunk of stream WF_TRACE_STREAM_META whose bytes
 *                 are "key=value\n" lines: version, program, pid, workers,
 *                 sched, clock (tsc or monotonic), t0 (the raw clock at the
 *                 start), ns_per_tick, duration_ns, dropped, complete.
 *                 Written when the runtime stops: a file without it is a
 *                 trace whose program died.
 *   All integers in headers are little-endian (the writer's byte order:
 *   weft runs on x86-64 and aarch64, both little-endian).
 */
#ifndef WF_TRACE_CODEC_H
#define WF_TRACE_CODEC_H

#include <stdint.h>
#include <string.h>

/* Record types, and what each field holds. Stream = the worker (or -1). */
enum wf_trace_type {
	WF_EV_SWITCH = 1, /* a: ULT leaving (0: the loop), b: ULT resuming (0: the
	                     loop), code: leaving one's enum wf_after | its enum
	                     wf_block_reason << 8, x: worker the resuming one ran
	                     on last (-1: never), c: what the leaving one waits
	                     on (the joined ULT's id, else the address waited
	                     on; 0: nothing named) */
	WF_EV_CREATE,     /* a: new ULT, b: creator (0: none), x: bound worker */
	WF_EV_NAME,       /* a: ULT, b: 8 bytes of its name, code: which 8 (0..3) */
	WF_EV_UNPARK,     /* a: ULT made runnable, b: waker (0: none) */
	WF_EV_STEAL,      /* a: ULT taken, x: victim worker */
	WF_EV_SLEEP,      /* the idle worker sleeps on its futex */
	WF_EV_WAKE,       /* ... and woke up */
	WF_EV_LOCK,       /* a: lock address, b: wait ns, code: WF_TRACE_LOCK_* */
	WF_EV_NTYPES      /* at most 16: the type is 4 bits of the tag */
};

enum { WF_TRACE_LOCK_MUTEX = 1, WF_TRACE_LOCK_RWLOCK = 2 };

/* A record as the runtime keeps it in memory, and as decoding gives it. */
typedef struct wf_trace_ev {
	uint64_t ts; /* raw clock: TSC ticks or CLOCK_MONOTONIC ns (trace.c) */
	uint16_t type, code;
	int32_t x;
	uint64_t a, b, c;
} wf_trace_ev_t;

#define WF_TRACE_FILE_MAGIC   "WEFT-TRC"
#define WF_TRACE_FILE_VERSION 1u
#define WF_TRACE_CHUNK_MAGIC  0x43544657u /* "WFTC" */
#define WF_TRACE_STREAM_META  (-2)
/* The most bytes writing one record touches: the tag, six 8-byte values. */
#define WF_TRACE_REC_MAX 50

typedef struct {
	char magic[8]; /* WF_TRACE_FILE_MAGIC, no terminating 0 */
	uint32_t version;
	uint32_t zero;
} wf_trace_file_hdr_t;

typedef struct {
	uint32_t magic; /* WF_TRACE_CHUNK_MAGIC */
	int32_t stream; /* worker, -1 (other threads) or WF_TRACE_STREAM_META */
	uint32_t n;     /* bytes that follow */
	uint32_t zero;
} wf_trace_chunk_hdr_t;

/* Value widths by their 2-bit class, and the class of a value. */
static const uint8_t wf_trace_width[4] = {0, 1, 4, 8};

static inline unsigned wf_trace_class(uint64_t v)
{
	return (unsigned)(v != 0) + (unsigned)(v > 0xff) + (unsigned)(v > 0xffffffffu);
}

static inline uint64_t wf_trace_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t wf_trace_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Encode one record at p (at least WF_TRACE_REC_MAX bytes free) whose
 * timestamp is the previous one + dt; returns the end. */
static inline uint8_t *wf_trace_encode(uint8_t *p, int64_t dt, unsigned type, uint32_t code,
				       int32_t x, uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t v[6] = {wf_trace_zigzag(dt), code, wf_trace_zigzag(x), a, b, c};
	unsigned tag = type;
	uint8_t *q = p + 2;
	for (int i = 0; i < 6; i++) { /* unrolled by the compiler */
		unsigned k = wf_trace_class(v[i]);
		tag |= k << (4 + 2 * i);
		memcpy(q, &v[i], 8);
		q += wf_trace_width[k];
	}
	uint16_t t16 = (uint16_t)tag;
	memcpy(p, &t16, 2);
	return q;
}

/* Decode the record at p (before end) into e, its timestamp from *last
 * (updated). Returns the next record's start, or NULL if the bytes do not
 * hold a whole record. */
static inline const uint8_t *wf_trace_decode(const uint8_t *p, const uint8_t *end, wf_trace_ev_t *e,
					     uint64_t *last)
{
	if (end - p < 2)
		return NULL;
	uint16_t tag;
	memcpy(&tag, p, 2);
	p += 2;
	uint64_t v[6];
	for (int i = 0; i < 6; i++) {
		unsigned w = wf_trace_width[(tag >> (4 + 2 * i)) & 3];
		if ((size_t)(end - p) < w)
			return NULL;
		v[i] = 0;
		memcpy(&v[i], p, w);
		p += w;
	}
	*last += (uint64_t)wf_trace_unzigzag(v[0]);
	e->ts = *last;
	e->type = tag & 0xf;
	e->code = (uint16_t)v[1];
	e->x = (int32_t)wf_trace_unzigzag(v[2]);
	e->a = v[3];
	e->b = v[4];
	e->c = v[5];
	return p;
}

#endif
