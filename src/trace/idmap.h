/* A map from nonzero 64-bit ids (ULT ids, lock addresses) to 64-bit values
 * (numbers, or pointers cast to uintptr_t), for the trace readers and
 * writers: export.c, perfetto.c and tools/weft-trace-scan.c. Header-only,
 * needs nothing but libc.
 *
 * Open addressing with linear probing, at most half full; removal moves the
 * later entries of a probe run up into the hole (no tombstones), so a map
 * of the ULTs alive stays as small as they are however many came and went.
 * Walk it with `for (i < cap) if (k[i])`.
 */
#ifndef WF_TRACE_IDMAP_H
#define WF_TRACE_IDMAP_H

#include <stdint.h>
#include <stdlib.h>

typedef struct {
	uint64_t *k, *v; /* k[i] == 0: an empty slot */
	size_t cap, n;   /* cap: 0 or a power of two */
} wf_idmap_t;

static inline uint64_t wf_idmap_hash(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

/* The slot of k, or the empty one where it would go. cap > 0. */
static inline size_t wf_idmap_slot(const wf_idmap_t *m, uint64_t k)
{
	size_t j = wf_idmap_hash(k) & (m->cap - 1);
	while (m->k[j] && m->k[j] != k)
		j = (j + 1) & (m->cap - 1);
	return j;
}

/* k's value, or 0 if k is not there. */
static inline uint64_t wf_idmap_get(const wf_idmap_t *m, uint64_t k)
{
	if (!m->cap || !k)
		return 0;
	size_t j = wf_idmap_slot(m, k);
	return m->k[j] ? m->v[j] : 0;
}

/* Set k's value: 0, or -1 if k is 0 or memory ran out. */
static inline int wf_idmap_put(wf_idmap_t *m, uint64_t k, uint64_t v)
{
	if (!k)
		return -1;
	if ((m->n + 1) * 2 > m->cap) {
		wf_idmap_t g = {0, 0, m->cap ? m->cap * 2 : 1024, m->n};
		g.k = calloc(g.cap, sizeof *g.k);
		g.v = calloc(g.cap, sizeof *g.v);
		if (!g.k || !g.v) {
			free(g.k);
			free(g.v);
			return -1;
		}
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->k[i])
				continue;
			size_t j = wf_idmap_slot(&g, m->k[i]);
			g.k[j] = m->k[i];
			g.v[j] = m->v[i];
		}
		free(m->k);
		free(m->v);
		*m = g;
	}
	size_t j = wf_idmap_slot(m, k);
	m->n += !m->k[j];
	m->k[j] = k;
	m->v[j] = v;
	return 0;
}

/* Remove k; its value, or 0 if it was not there. */
static inline uint64_t wf_idmap_take(wf_idmap_t *m, uint64_t k)
{
	if (!m->cap || !k)
		return 0;
	size_t mask = m->cap - 1, hole = wf_idmap_slot(m, k);
	if (!m->k[hole])
		return 0;
	uint64_t v = m->v[hole];
	for (size_t j = (hole + 1) & mask; m->k[j]; j = (j + 1) & mask) {
		size_t home = wf_idmap_hash(m->k[j]) & mask;
		/* Move j into the hole unless its home lies in (hole, j]. */
		if (((j - home) & mask) >= ((j - hole) & mask)) {
			m->k[hole] = m->k[j];
			m->v[hole] = m->v[j];
			hole = j;
		}
	}
	m->k[hole] = 0;
	m->n--;
	return v;
}

static inline void wf_idmap_free(wf_idmap_t *m)
{
	free(m->k);
	free(m->v);
	m->k = m->v = NULL;
	m->cap = m->n = 0;
}

#endif
