/* Thread ids and the id -> descriptor table.
 *
 * A weft_t is (serial << SLOT_BITS) | slot: serial is a process-wide counter,
 * so ids increase in creation order and are never reused; slot indexes a
 * two-level table of descriptor pointers, so lookup is O(1) and a stale id
 * (its slot reused by a later ULT) is recognised by comparing the id stored
 * in the descriptor. Free slots are kept per worker (no lock) and globally.
 */
#include <stdlib.h>

#include "runtime/runtime.h"

#define SLOT_BITS  22 /* at most 4,194,304 ULTs alive at once */
#define CHUNK_BITS 12
#define NCHUNKS    (1u << (SLOT_BITS - CHUNK_BITS))
#define CHUNK_SIZE (1u << CHUNK_BITS)
#define SLOT_MASK  ((1u << SLOT_BITS) - 1)

static _Atomic(_Atomic(wf_ult_t *) *) chunks[NCHUNKS];
static atomic_uint_fast64_t serial = 1;
static atomic_uint next_fresh;

static wf_spinlock_t free_lock;
static uint32_t *free_slots;
static size_t nfree, free_cap;

static int free_push_locked(uint32_t slot)
{
	if (nfree == free_cap) {
		size_t cap = free_cap ? free_cap * 2 : 1024;
		uint32_t *p = realloc(free_slots, cap * sizeof *p);
		if (!p)
			return ENOMEM;
		free_slots = p;
		free_cap = cap;
	}
	free_slots[nfree++] = slot;
	return 0;
}

static int slot_alloc(wf_worker_t *w, uint32_t *out)
{
	if (w && w->nslots > 0) {
		*out = w->slot_cache[--w->nslots];
		return 0;
	}
	wf_spin_lock(&free_lock);
	if (nfree > 0) {
		if (w)
			while (nfree > 1 && w->nslots < WF_SLOT_CACHE / 2)
				w->slot_cache[w->nslots++] = free_slots[--nfree];
		*out = free_slots[--nfree];
		wf_spin_unlock(&free_lock);
		return 0;
	}
	wf_spin_unlock(&free_lock);
	unsigned s = atomic_fetch_add_explicit(&next_fresh, 1, memory_order_relaxed);
	if (s > SLOT_MASK) {
		atomic_fetch_sub_explicit(&next_fresh, 1, memory_order_relaxed);
		return EAGAIN;
	}
	*out = s;
	return 0;
}

static void slot_free(wf_worker_t *w, uint32_t slot)
{
	if (w && w->nslots < WF_SLOT_CACHE) {
		w->slot_cache[w->nslots++] = slot;
		return;
	}
	wf_spin_lock(&free_lock);
	if (free_push_locked(slot) != 0) {
		/* Out of memory for the free list: the slot is lost (ids stay
		 * unique; only capacity shrinks by one). */
	}
	if (w) /* make room in the worker's cache for the next frees */
		while (w->nslots > WF_SLOT_CACHE / 2 &&
		       free_push_locked(w->slot_cache[w->nslots - 1]) == 0)
			w->nslots--;
	wf_spin_unlock(&free_lock);
}

static _Atomic(wf_ult_t *) *chunk_for(uint32_t slot, int create)
{
	unsigned ci = slot >> CHUNK_BITS;
	_Atomic(wf_ult_t *) *c = atomic_load_explicit(&chunks[ci], memory_order_acquire);
	if (c || !create)
		return c;
	_Atomic(wf_ult_t *) *fresh = calloc(CHUNK_SIZE, sizeof *fresh);
	if (!fresh)
		return NULL;
	_Atomic(wf_ult_t *) *expected = NULL;
	if (atomic_compare_exchange_strong_explicit(&chunks[ci], &expected, fresh,
						    memory_order_acq_rel, memory_order_acquire))
		return fresh;
	free(fresh);
	return expected;
}

int wf_registry_add(wf_worker_t *w, wf_ult_t *u)
{
	uint32_t slot;
	int e = slot_alloc(w, &slot);
	if (e)
		return e;
	_Atomic(wf_ult_t *) *c = chunk_for(slot, 1);
	if (!c) {
		slot_free(w, slot);
		return ENOMEM;
	}
	uint64_t s = atomic_fetch_add_explicit(&serial, 1, memory_order_relaxed);
	u->id = (s << SLOT_BITS) | slot;
	atomic_store_explicit(&c[slot & (CHUNK_SIZE - 1)], u, memory_order_release);
	return 0;
}

void wf_registry_remove(wf_worker_t *w, wf_ult_t *u)
{
	uint32_t slot = (uint32_t)(u->id & SLOT_MASK);
	_Atomic(wf_ult_t *) *c = chunk_for(slot, 0);
	WF_ASSERT(c &&
		  atomic_load_explicit(&c[slot & (CHUNK_SIZE - 1)], memory_order_relaxed) == u);
	atomic_store_explicit(&c[slot & (CHUNK_SIZE - 1)], NULL, memory_order_release);
	slot_free(w, slot);
}

wf_ult_t *wf_registry_find(weft_t id)
{
	if ((id >> SLOT_BITS) == 0)
		return NULL;
	uint32_t slot = (uint32_t)(id & SLOT_MASK);
	_Atomic(wf_ult_t *) *c = chunk_for(slot, 0);
	if (!c)
		return NULL;
	wf_ult_t *u = atomic_load_explicit(&c[slot & (CHUNK_SIZE - 1)], memory_order_acquire);
	return u && u->id == id ? u : NULL;
}

wf_ult_t *wf_registry_at(uint32_t slot)
{
	if (slot > SLOT_MASK)
		return NULL;
	_Atomic(wf_ult_t *) *c = chunk_for(slot, 0);
	return c ? atomic_load_explicit(&c[slot & (CHUNK_SIZE - 1)], memory_order_acquire) : NULL;
}

void wf_registry_drain_worker(wf_worker_t *w)
{
	wf_spin_lock(&free_lock);
	while (w->nslots > 0 && free_push_locked(w->slot_cache[w->nslots - 1]) == 0)
		w->nslots--;
	wf_spin_unlock(&free_lock);
}

void wf_registry_sweep(void (*fn)(wf_ult_t *u))
{
	for (unsigned ci = 0; ci < NCHUNKS; ci++) {
		_Atomic(wf_ult_t *) *c = atomic_load_explicit(&chunks[ci], memory_order_acquire);
		if (!c)
			continue;
		for (unsigned i = 0; i < CHUNK_SIZE; i++) {
			wf_ult_t *u = atomic_load_explicit(&c[i], memory_order_acquire);
			if (u)
				fn(u);
		}
	}
}
