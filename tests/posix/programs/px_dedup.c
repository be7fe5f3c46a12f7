// px_dedup: a dedup-style five-stage pipeline (PARSEC dedup, seed 003 §6.3) written as a plain
// pthread program, for weft's POSIX layer evidence.
//
//   fragment (1) -> refine (K) -> deduplicate (K) -> compress (K) -> reorder (1)
//                                       \___________ duplicates ________/
//
// fragment cuts the input into coarse chunks at content anchors; refine cuts each coarse chunk
// into fine chunks with a rolling (Rabin-Karp style) hash; deduplicate looks every fine chunk
// up in a shared hash table guarded by striped mutexes; the first copy to arrive (its owner)
// goes on to compress (PackBits run-length coding), the others go straight to reorder, which
// writes the output in input order. The stages are joined by bounded queues, each a mutex and
// two condition variables.
//
// Which copy of a chunk owns it depends on the schedule, so the output never does: reorder
// writes the compressed bytes at the first occurrence in input order and a back reference at
// every later one, waiting until the owner's compressed bytes have arrived. The statistics and
// the output's checksum are therefore the same for every schedule and thread count. At the end
// the main thread decodes the output and compares it with the input.
//
// Usage: px_dedup [threads per middle stage (3)] [input MiB (8)]
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUEUE_CAP   8 // small, so producers really wait for consumers
#define COARSE_SIZE (64 * 1024)
#define WIN         32 // rolling hash window
#define MIN_CHUNK   256
#define MAX_CHUNK   8192
#define ANCHOR_MASK 0x3ffu
#define HASH_BASE   0x100000001b3ULL
#define NBUCKETS    4096
#define NSTRIPES    64

static void die(const char *what, int rc)
{
	fprintf(stderr, "px_dedup: %s: %s\n", what, strerror(rc));
	exit(1);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p) {
		fprintf(stderr, "px_dedup: out of memory\n");
		exit(1);
	}
	return p;
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p) {
		fprintf(stderr, "px_dedup: out of memory\n");
		exit(1);
	}
	return p;
}

// A bounded FIFO of pointers. pop returns NULL once every producer has closed it and it is
// empty.
struct queue {
	pthread_mutex_t mu;
	pthread_cond_t not_empty, not_full;
	void *ring[QUEUE_CAP];
	size_t head, count;
	int producers;
};

static void queue_init(struct queue *q, int producers)
{
	int rc;
	if ((rc = pthread_mutex_init(&q->mu, NULL)) != 0)
		die("pthread_mutex_init", rc);
	if ((rc = pthread_cond_init(&q->not_empty, NULL)) != 0)
		die("pthread_cond_init", rc);
	if ((rc = pthread_cond_init(&q->not_full, NULL)) != 0)
		die("pthread_cond_init", rc);
	q->head = q->count = 0;
	q->producers = producers;
}

static void queue_destroy(struct queue *q)
{
	pthread_cond_destroy(&q->not_full);
	pthread_cond_destroy(&q->not_empty);
	pthread_mutex_destroy(&q->mu);
}

static void queue_push(struct queue *q, void *item)
{
	pthread_mutex_lock(&q->mu);
	while (q->count == QUEUE_CAP)
		pthread_cond_wait(&q->not_full, &q->mu);
	q->ring[(q->head + q->count) % QUEUE_CAP] = item;
	q->count++;
	pthread_cond_signal(&q->not_empty);
	pthread_mutex_unlock(&q->mu);
}

static void *queue_pop(struct queue *q)
{
	void *item = NULL;
	pthread_mutex_lock(&q->mu);
	while (q->count == 0 && q->producers > 0)
		pthread_cond_wait(&q->not_empty, &q->mu);
	if (q->count > 0) {
		item = q->ring[q->head];
		q->head = (q->head + 1) % QUEUE_CAP;
		q->count--;
		pthread_cond_signal(&q->not_full);
	}
	pthread_mutex_unlock(&q->mu);
	return item;
}

// One producer is done; the last one wakes every consumer so they see the end.
static void queue_close(struct queue *q)
{
	pthread_mutex_lock(&q->mu);
	if (--q->producers == 0)
		pthread_cond_broadcast(&q->not_empty);
	pthread_mutex_unlock(&q->mu);
}

struct coarse {
	long id;
	const uint8_t *data;
	size_t len;
};

// One distinct chunk content: an entry of the shared table.
struct unique {
	struct unique *next; // bucket chain, under the bucket's stripe lock
	uint64_t hash;
	const uint8_t *data; // the owner's copy, inside the input
	size_t len;
	uint8_t *comp; // written by the compress thread before it passes the owner on
	size_t comp_len;
	int ready;      // reorder only: the owner has arrived, comp is valid
	long out_index; // reorder only: index of its literal record, or -1
};

struct chunk {
	long coarse_id, sub;
	int last; // last fine chunk of its coarse chunk
	int owner;
	const uint8_t *data;
	size_t len;
	struct unique *u;
};

static struct {
	const uint8_t *input;
	size_t input_len;
	struct queue to_refine, to_dedup, to_compress, to_reorder;
	struct unique *buckets[NBUCKETS];
	pthread_mutex_t stripes[NSTRIPES];
	long ncoarse; // written by fragment before it closes to_refine
	uint8_t *out; // reorder only
	size_t out_len, out_cap;
	long chunks, literals, refs; // reorder only
} g;

static uint64_t pow_win; // HASH_BASE^WIN

// Rolls the window hash over data[i]; the hash then depends only on the last WIN bytes.
static uint64_t roll(uint64_t h, const uint8_t *data, size_t start, size_t i)
{
	h = h * HASH_BASE + data[i];
	if (i >= start + WIN)
		h -= data[i - WIN] * pow_win;
	return h;
}

static int is_anchor(uint64_t h)
{
	return ((h >> 40) & ANCHOR_MASK) == ANCHOR_MASK;
}

static void *fragment_main(void *arg)
{
	(void)arg;
	size_t start = 0;
	long id = 0;
	while (start < g.input_len) {
		size_t end = g.input_len;
		if (g.input_len - start > 2 * COARSE_SIZE) {
			// The first anchor at least COARSE_SIZE in, or a hard cut at twice that.
			size_t from = start + COARSE_SIZE - WIN;
			uint64_t h = 0;
			end = start + 2 * COARSE_SIZE;
			for (size_t i = from; i < start + 2 * COARSE_SIZE; i++) {
				h = roll(h, g.input, from, i);
				if (i >= start + COARSE_SIZE - 1 && is_anchor(h)) {
					end = i + 1;
					break;
				}
			}
		}
		struct coarse *c = xmalloc(sizeof *c);
		c->id = id++;
		c->data = g.input + start;
		c->len = end - start;
		queue_push(&g.to_refine, c);
		start = end;
	}
	g.ncoarse = id;
	queue_close(&g.to_refine);
	return NULL;
}

static void *refine_main(void *arg)
{
	(void)arg;
	struct coarse *c;
	while ((c = queue_pop(&g.to_refine)) != NULL) {
		size_t start = 0;
		long sub = 0;
		uint64_t h = 0;
		for (size_t i = 0; i < c->len; i++) {
			h = roll(h, c->data, start, i);
			size_t len = i + 1 - start;
			int cut = (len >= MIN_CHUNK && is_anchor(h)) || len == MAX_CHUNK ||
				  i + 1 == c->len;
			if (!cut)
				continue;
			struct chunk *k = xmalloc(sizeof *k);
			k->coarse_id = c->id;
			k->sub = sub++;
			k->last = i + 1 == c->len;
			k->owner = 0;
			k->data = c->data + start;
			k->len = len;
			k->u = NULL;
			queue_push(&g.to_dedup, k);
			start = i + 1;
			h = 0;
		}
		free(c);
	}
	queue_close(&g.to_dedup);
	return NULL;
}

static uint64_t fnv1a(const uint8_t *p, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

static void *dedup_main(void *arg)
{
	(void)arg;
	struct chunk *k;
	while ((k = queue_pop(&g.to_dedup)) != NULL) {
		uint64_t h = fnv1a(k->data, k->len, 0xcbf29ce484222325ULL);
		size_t b = (size_t)(h % NBUCKETS);
		pthread_mutex_t *stripe = &g.stripes[b % NSTRIPES];
		pthread_mutex_lock(stripe);
		struct unique *u = g.buckets[b];
		while (u &&
		       !(u->hash == h && u->len == k->len && !memcmp(u->data, k->data, k->len)))
			u = u->next;
		if (!u) {
			u = xmalloc(sizeof *u);
			u->hash = h;
			u->data = k->data;
			u->len = k->len;
			u->comp = NULL;
			u->comp_len = 0;
			u->ready = 0;
			u->out_index = -1;
			u->next = g.buckets[b];
			g.buckets[b] = u;
			k->owner = 1;
		}
		pthread_mutex_unlock(stripe);
		k->u = u;
		queue_push(k->owner ? &g.to_compress : &g.to_reorder, k);
	}
	queue_close(&g.to_compress);
	queue_close(&g.to_reorder);
	return NULL;
}

// PackBits: header h < 128 is followed by h + 1 literal bytes; h > 128 by one byte repeated
// 257 - h times.
static size_t rle_encode(const uint8_t *in, size_t n, uint8_t *out)
{
	size_t i = 0, o = 0;
	while (i < n) {
		size_t run = 1;
		while (i + run < n && run < 128 && in[i + run] == in[i])
			run++;
		if (run >= 3) {
			out[o++] = (uint8_t)(257 - run);
			out[o++] = in[i];
			i += run;
			continue;
		}
		size_t j = i;
		while (j < n && j - i < 128) {
			if (j + 2 < n && in[j] == in[j + 1] && in[j] == in[j + 2])
				break;
			j++;
		}
		out[o++] = (uint8_t)(j - i - 1);
		memcpy(out + o, in + i, j - i);
		o += j - i;
		i = j;
	}
	return o;
}

// Returns the decoded length, or (size_t)-1 if the code is malformed or overflows cap.
static size_t rle_decode(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	size_t i = 0, o = 0;
	while (i < n) {
		uint8_t h = in[i++];
		if (h < 128) {
			size_t len = (size_t)h + 1;
			if (i + len > n || o + len > cap)
				return (size_t)-1;
			memcpy(out + o, in + i, len);
			i += len;
			o += len;
		} else if (h > 128) {
			size_t len = 257 - (size_t)h;
			if (i >= n || o + len > cap)
				return (size_t)-1;
			memset(out + o, in[i++], len);
			o += len;
		}
	}
	return o;
}

static void *compress_main(void *arg)
{
	(void)arg;
	struct chunk *k;
	while ((k = queue_pop(&g.to_compress)) != NULL) {
		struct unique *u = k->u;
		uint8_t *buf = xmalloc(u->len + u->len / 128 + 2);
		u->comp_len = rle_encode(u->data, u->len, buf);
		u->comp = buf;
		queue_push(&g.to_reorder, k);
	}
	queue_close(&g.to_reorder);
	return NULL;
}

static void out_bytes(const void *p, size_t n)
{
	if (g.out_len + n > g.out_cap) {
		g.out_cap = (g.out_len + n) * 2;
		g.out = xrealloc(g.out, g.out_cap);
	}
	memcpy(g.out + g.out_len, p, n);
	g.out_len += n;
}

static void out_varint(uint64_t v)
{
	uint8_t b[10];
	size_t n = 0;
	do {
		b[n++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
		v >>= 7;
	} while (v);
	out_bytes(b, n);
}

struct slot {
	struct chunk **subs;
	long cap;
};

// Writes chunks in input order: a literal record ('L' raw_len comp_len bytes) the first time
// a content appears, a reference ('R' literal_index) afterwards.
static void *reorder_main(void *arg)
{
	(void)arg;
	struct slot *slots = NULL;
	long nslots = 0, cur = 0, cur_sub = 0;
	struct chunk *k;
	while ((k = queue_pop(&g.to_reorder)) != NULL) {
		if (k->owner)
			k->u->ready = 1;
		if (k->coarse_id >= nslots) {
			long n = (k->coarse_id + 1) * 2;
			slots = xrealloc(slots, (size_t)n * sizeof *slots);
			memset(slots + nslots, 0, (size_t)(n - nslots) * sizeof *slots);
			nslots = n;
		}
		struct slot *s = &slots[k->coarse_id];
		if (k->sub >= s->cap) {
			long n = (k->sub + 1) * 2;
			s->subs = xrealloc(s->subs, (size_t)n * sizeof *s->subs);
			memset(s->subs + s->cap, 0, (size_t)(n - s->cap) * sizeof *s->subs);
			s->cap = n;
		}
		s->subs[k->sub] = k;
		while (cur < nslots && cur_sub < slots[cur].cap) {
			struct chunk *c = slots[cur].subs[cur_sub];
			if (!c || !c->u->ready)
				break;
			if (c->u->out_index < 0) {
				c->u->out_index = g.literals++;
				out_bytes("L", 1);
				out_varint(c->u->len);
				out_varint(c->u->comp_len);
				out_bytes(c->u->comp, c->u->comp_len);
			} else {
				g.refs++;
				out_bytes("R", 1);
				out_varint((uint64_t)c->u->out_index);
			}
			g.chunks++;
			slots[cur].subs[cur_sub] = NULL;
			if (c->last) {
				free(slots[cur].subs);
				slots[cur].subs = NULL;
				slots[cur].cap = 0;
				cur++;
				cur_sub = 0;
			} else {
				cur_sub++;
			}
			free(c);
		}
	}
	// Every producer has closed the queue, so every chunk has arrived and was written.
	if (cur != g.ncoarse) {
		fprintf(stderr, "px_dedup: reorder stopped at coarse chunk %ld of %ld\n", cur,
			g.ncoarse);
		exit(1);
	}
	free(slots);
	return NULL;
}

static uint64_t rng_state = 0xdedb5eedULL;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static size_t rng_range(size_t lo, size_t hi)
{
	return lo + (size_t)(rng_next() % (hi - lo + 1));
}

// The input: copies of 40 generated blocks (text-like runs of 16 letters and runs of one
// byte), one in six with a few bytes changed, so there are many exact and near duplicates.
static uint8_t *make_input(size_t len)
{
	enum { NBLOCKS = 40 };
	uint8_t *blocks[NBLOCKS];
	size_t sizes[NBLOCKS];
	for (int b = 0; b < NBLOCKS; b++) {
		sizes[b] = rng_range(2048, 16384);
		blocks[b] = xmalloc(sizes[b]);
		size_t i = 0;
		while (i < sizes[b]) {
			size_t seg = rng_next() % 3 == 0 ? rng_range(16, 300) : rng_range(32, 512);
			int run = seg <= 300 && rng_next() % 2 == 0;
			uint8_t c = (uint8_t)rng_range(0, 255);
			for (size_t j = 0; j < seg && i < sizes[b]; j++, i++)
				blocks[b][i] = run ? c : (uint8_t)('a' + rng_range(0, 15));
		}
	}
	uint8_t *in = xmalloc(len);
	size_t pos = 0;
	while (pos < len) {
		int b = (int)rng_range(0, NBLOCKS - 1);
		size_t n = sizes[b] < len - pos ? sizes[b] : len - pos;
		memcpy(in + pos, blocks[b], n);
		if (rng_next() % 6 == 0) {
			int flips = (int)rng_range(1, 3);
			for (int f = 0; f < flips; f++)
				in[pos + rng_range(0, n - 1)] ^= 0x20;
		}
		pos += n;
	}
	for (int b = 0; b < NBLOCKS; b++)
		free(blocks[b]);
	return in;
}

// Decodes the output stream and compares it with the input; returns 0 if they match.
static int roundtrip(void)
{
	uint8_t *dec = xmalloc(g.input_len);
	size_t *lit_off = xmalloc((size_t)(g.literals + 1) * sizeof *lit_off);
	size_t *lit_len = xmalloc((size_t)(g.literals + 1) * sizeof *lit_len);
	size_t i = 0, o = 0;
	long nlit = 0;
	int bad = 0;
	while (i < g.out_len && !bad) {
		uint8_t tag = g.out[i++];
		uint64_t v[2] = {0, 0};
		int nv = tag == 'L' ? 2 : 1;
		for (int f = 0; f < nv; f++) {
			for (int shift = 0; i < g.out_len && shift < 64; shift += 7) {
				uint8_t b = g.out[i++];
				v[f] |= (uint64_t)(b & 0x7f) << shift;
				if (!(b & 0x80))
					break;
			}
		}
		if (tag == 'L' && nlit < g.literals && i + v[1] <= g.out_len) {
			size_t n = rle_decode(g.out + i, v[1], dec + o, g.input_len - o);
			bad = n != v[0];
			lit_off[nlit] = o;
			lit_len[nlit++] = v[0];
			i += v[1];
			o += v[0];
		} else if (tag == 'R' && v[0] < (uint64_t)nlit &&
			   o + lit_len[v[0]] <= g.input_len) {
			memcpy(dec + o, dec + lit_off[v[0]], lit_len[v[0]]);
			o += lit_len[v[0]];
		} else {
			bad = 1;
		}
	}
	bad = bad || o != g.input_len || memcmp(dec, g.input, g.input_len) != 0;
	free(lit_len);
	free(lit_off);
	free(dec);
	return bad;
}

static long parse_arg(int argc, char **argv, int i, long def, long min, long max)
{
	if (argc <= i)
		return def;
	char *end;
	long v = strtol(argv[i], &end, 10);
	if (*argv[i] == '\0' || *end != '\0' || v < min || v > max) {
		fprintf(stderr, "px_dedup: bad argument '%s' (want %ld..%ld)\n", argv[i], min, max);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	int k = (int)parse_arg(argc, argv, 1, 3, 1, 1024);
	long mib = parse_arg(argc, argv, 2, 8, 1, 1024);

	pow_win = 1;
	for (int i = 0; i < WIN; i++)
		pow_win *= HASH_BASE;
	g.input_len = (size_t)mib << 20;
	g.input = make_input(g.input_len);
	queue_init(&g.to_refine, 1);
	queue_init(&g.to_dedup, k);
	queue_init(&g.to_compress, k);
	queue_init(&g.to_reorder, 2 * k); // dedup threads (duplicates) and compress threads
	for (int i = 0; i < NSTRIPES; i++) {
		int rc = pthread_mutex_init(&g.stripes[i], NULL);
		if (rc != 0)
			die("pthread_mutex_init", rc);
	}

	int nthreads = 2 + 3 * k;
	pthread_t *tids = xmalloc((size_t)nthreads * sizeof *tids);
	void *(*stage[5])(void *) = {fragment_main, refine_main, dedup_main, compress_main,
				     reorder_main};
	int per_stage[5] = {1, k, k, k, 1};
	int t = 0;
	for (int s = 0; s < 5; s++) {
		for (int i = 0; i < per_stage[s]; i++, t++) {
			int rc = pthread_create(&tids[t], NULL, stage[s], NULL);
			if (rc != 0)
				die("pthread_create", rc);
		}
	}
	for (t = 0; t < nthreads; t++) {
		int rc = pthread_join(tids[t], NULL);
		if (rc != 0)
			die("pthread_join", rc);
	}

	long uniques = 0;
	size_t unique_bytes = 0, comp_bytes = 0;
	for (int b = 0; b < NBUCKETS; b++) {
		for (struct unique *u = g.buckets[b]; u; u = u->next) {
			uniques++;
			unique_bytes += u->len;
			comp_bytes += u->comp_len;
		}
	}
	int bad = roundtrip();
	printf("input bytes=%zu coarse chunks=%ld\n", g.input_len, g.ncoarse);
	printf("chunks=%ld unique=%ld duplicate=%ld\n", g.chunks, uniques, g.chunks - uniques);
	printf("literal records=%ld reference records=%ld\n", g.literals, g.refs);
	printf("unique bytes=%zu compressed=%zu\n", unique_bytes, comp_bytes);
	printf("output bytes=%zu checksum=%016llx\n", g.out_len,
	       (unsigned long long)fnv1a(g.out, g.out_len, 0xcbf29ce484222325ULL));
	printf("decoded output: %s\n", bad ? "MISMATCH" : "identical to input");

	for (int b = 0; b < NBUCKETS; b++) {
		struct unique *u = g.buckets[b];
		while (u) {
			struct unique *next = u->next;
			free(u->comp);
			free(u);
			u = next;
		}
	}
	for (int i = 0; i < NSTRIPES; i++)
		pthread_mutex_destroy(&g.stripes[i]);
	queue_destroy(&g.to_reorder);
	queue_destroy(&g.to_compress);
	queue_destroy(&g.to_dedup);
	queue_destroy(&g.to_refine);
	free(tids);
	free(g.out);
	free((void *)g.input);
	return bad || uniques != g.literals ? 1 : 0;
}
