/* Thread ids and the id -> descriptor table.
 *
 * A weft_t is (serial << SLOT_BITS) | slot: serial is a process-wide counter,
 * so ids increase in creation order and are never reused; slot indexes a
 * two-level table of descriptor pointers, so lookup is O(1) and a stale id
 * (its slot reused by a later ULT) is recognised by comparing the id stored
 * in the descriptor. Free slots are kept per worker (no lock) and globally.
 */
#include <stdlib.h>

#include "sched/registry.h"

#define SLOT_BITS  WF_SLOT_BITS /* at most 4,194,304 ULTs alive at once */
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

static int slot_alloc(wf_registry_cache_t *c, uint32_t *out)
{
	if (c && c->n > 0) {
		*out = c->v[--c->n];
		return 0;
	}
	wf_spin_lock(&free_lock);
	if (nfree > 0) {
		if (c)
			while (nfree > 1 && c->n < WF_SLOT_CACHE / 2)
				c->v[c->n++] = free_slots[--nfree];
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

static void slot_free(wf_registry_cache_t *c, uint32_t slot)
{
	if (c && c->n < WF_SLOT_CACHE) {
		c->v[c->n++] = slot;
		return;
	}
	wf_spin_lock(&free_lock);
	if (free_push_locked(slot) != 0) {
		/* Out of memory for the free list: the slot is lost (ids stay
		 * unique; only capacity shrinks by one). */
	}
	if (c) /* make room in the worker's cache for the next frees */
		while (c->n > WF_SLOT_CACHE / 2 && free_push_locked(c->v[c->n - 1]) == 0)
			c->n--;
	wf_spin_unlock(&free_lock);
}

static _Atomic(wf_ult_t *) *chunk_for(uint32_t slot, int create)
{
	unsigned ci = slot >> CHUNK_BITS;
	_Atomic(wf_ult_t *) *ch = atomic_load_explicit(&chunks[ci], memory_order_acquire);
	if (ch || !create)
		return ch;
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

int wf_registry_add(wf_registry_cache_t *c, wf_ult_t *u)
{
	uint32_t slot;
	int e = slot_alloc(c, &slot);
	if (e)
		return e;
	_Atomic(wf_ult_t *) *ch = chunk_for(slot, 1);
	if (!ch) {
		slot_free(c, slot);
		return ENOMEM;
	}
	uint64_t s = atomic_fetch_add_explicit(&serial, 1, memory_order_relaxed);
	u->id = (s << SLOT_BITS) | slot;
	atomic_store_explicit(&ch[slot & (CHUNK_SIZE - 1)], u, memory_order_release);
	return 0;
}

void wf_registry_remove(wf_registry_cache_t *c, wf_ult_t *u)
{
	uint32_t slot = (uint32_t)(u->id & SLOT_MASK);
	_Atomic(wf_ult_t *) *ch = chunk_for(slot, 0);
	WF_ASSERT(ch &&
		  atomic_load_explicit(&ch[slot & (CHUNK_SIZE - 1)], memory_order_relaxed) == u);
	atomic_store_explicit(&ch[slot & (CHUNK_SIZE - 1)], NULL, memory_order_release);
	slot_free(c, slot);
}

wf_ult_t *wf_registry_find(weft_t id)
{
	if ((id >> SLOT_BITS) == 0)
		return NULL;
	uint32_t slot = (uint32_t)(id & SLOT_MASK);
	_Atomic(wf_ult_t *) *ch = chunk_for(slot, 0);
	if (!ch)
		return NULL;
	wf_ult_t *u = atomic_load_explicit(&ch[slot & (CHUNK_SIZE - 1)], memory_order_acquire);
	return u && u->id == id ? u : NULL;
}

wf_ult_t *wf_registry_at(uint32_t slot)
{
	if (slot > SLOT_MASK)
		return NULL;
	_Atomic(wf_ult_t *) *ch = chunk_for(slot, 0);
	return ch ? atomic_load_explicit(&ch[slot & (CHUNK_SIZE - 1)], memory_order_acquire) : NULL;
}

void wf_registry_drain(wf_registry_cache_t *c)
{
	wf_spin_lock(&free_lock);
	while (c->n > 0 && free_push_locked(c->v[c->n - 1]) == 0)
		c->n--;
	wf_spin_unlock(&free_lock);
}

void wf_registry_sweep(void (*fn)(wf_ult_t *u))
{
	for (unsigned ci = 0; ci < NCHUNKS; ci++) {
		_Atomic(wf_ult_t *) *ch = atomic_load_explicit(&chunks[ci], memory_order_acquire);
		if (!ch)
			continue;
		for (unsigned i = 0; i < CHUNK_SIZE; i++) {
			wf_ult_t *u = atomic_load_explicit(&ch[i], memory_order_acquire);
			if (u)
				fn(u);
		}
	}
}

void wf_registry_fork(int phase)
{
	wf_spin_fork(&free_lock, phase);
}
