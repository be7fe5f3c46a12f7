/* Thread ids and the id -> descriptor table (registry.c has the design). */
#ifndef WF_SCHED_REGISTRY_H
#define WF_SCHED_REGISTRY_H

#include <stdint.h>

#include "sched/ult.h"

/* Free slots a worker keeps (no lock). Owned by the worker's kernel thread. */
#define WF_SLOT_CACHE 64
typedef struct wf_registry_cache {
	uint32_t v[WF_SLOT_CACHE];
	int n;
} wf_registry_cache_t;

/* Give u an id and a slot. cache: the calling worker's, or NULL.
 * Returns 0, EAGAIN (every slot in use) or ENOMEM. */
WF_HIDDEN int wf_registry_add(wf_registry_cache_t *cache, wf_ult_t *u);
WF_HIDDEN void wf_registry_remove(wf_registry_cache_t *cache, wf_ult_t *u);
/* The ULT with this id, or NULL (never made, or freed). */
WF_HIDDEN wf_ult_t *wf_registry_find(weft_t id);
/* The ULT in a registry slot now, or NULL (the low WF_SLOT_BITS bits of its id). */
#define WF_SLOT_BITS 22
WF_HIDDEN wf_ult_t *wf_registry_at(uint32_t slot);
/* Give a worker's cached slots back (weft_shutdown). */
WF_HIDDEN void wf_registry_drain(wf_registry_cache_t *cache);
/* Call fn on every registered ULT (weft_shutdown, nothing running). */
WF_HIDDEN void wf_registry_sweep(void (*fn)(wf_ult_t *u));
/* Around a fork (enum wf_fork_phase): the free list's lock. */
WF_HIDDEN void wf_registry_fork(int phase);

#endif
