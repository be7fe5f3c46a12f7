/* The stack layer's interface: mappings that hold a stack and, at their
 * top, a descriptor of the caller's (the scheduler's ULT descriptor); guard
 * pages, slabs, canaries, per-worker and global caches, and the reports of
 * an overflow. The layout and the caching policy are written down at the
 * top of src/stack/stack.c.
 *
 * The layer knows nothing of ULTs: it hands out a descriptor-sized region
 * of zeroed memory with a wf_stack_t at a fixed offset in it (the caller
 * embeds one in its descriptor and says where), and names a stack in a
 * report through hooks the caller installs (wf_stack_hooks_t).
 */
#ifndef WF_STACK_H
#define WF_STACK_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "util/util.h"

/* Kinds of stack (wf_stack.kind). */
enum wf_stack_kind {
	WF_STACK_GUARDED = 1, /* own mapping with a PROT_NONE guard page below */
	WF_STACK_SLAB,        /* carved from a slab, no guard, canary-checked */
	WF_STACK_USER,        /* given by the caller (weft_attr_setstack); never freed */
	WF_STACK_BARE,        /* own mapping, no guard (odd size past the budget) */
	WF_STACK_THREAD,      /* a kernel thread's own stack: a descriptor only */
};

/* Stack canaries, checked whenever a ULT switches away (wf_stack_check):
 *   NONE   guarded stacks (the guard page catches an overflow) and kernel
 *          thread stacks;
 *   ZERO   weft's guard-less stacks: the lowest WF_CANARY_WORDS words must
 *          still be zero. A page nobody wrote reads as zeros without being
 *          given memory, so a million such stacks cost one page each, not
 *          two; an overflow that reaches the bottom writes return addresses
 *          and frame pointers there;
 *   MAGIC  caller-owned stacks: the lowest word holds WF_CANARY_MAGIC mixed
 *          with the descriptor address. */
enum wf_canary { WF_CANARY_NONE = 0, WF_CANARY_ZERO, WF_CANARY_MAGIC_WORD };
#define WF_CANARY_WORDS 4
#define WF_CANARY_MAGIC 0x5745465443414e59ull /* "WEFTCANY" */

/* A stack, as a member of the descriptor at its top. Written by this layer
 * when the stack is handed out; read-only for the owner. */
typedef struct wf_stack {
	void *lo;       /* lowest usable address */
	size_t size;    /* usable bytes above lo */
	void *reserved; /* the context backend's bytes (wf_ctx_reserve), or NULL */
	void *map_base; /* the mapping, guard page included */
	size_t map_size;
	struct wf_stack *next; /* link in a cache while free */
	int kind;              /* enum wf_stack_kind */
	int canary;            /* enum wf_canary: how wf_stack_check checks it */
	unsigned valgrind_id;  /* VALGRIND_STACK_REGISTER handle */
} wf_stack_t;

/* A worker's cache of freed default-size stacks: no locks, no system
 * calls. Owned by the worker's kernel thread. */
#define WF_STACK_CACHE 64
typedef struct wf_stack_cache {
	wf_stack_t *v[WF_STACK_CACHE];
	int n;
} wf_stack_cache_t;

/* How reports name the stack that overflowed, and which stack runs on the
 * calling kernel thread (for the SIGSEGV handler). Installed by the owner
 * of the descriptors; either may be NULL. Called in a signal handler or
 * just before abort(): async-signal-safe code only. */
typedef struct wf_stack_hooks {
	const wf_stack_t *(*running)(void);
	/* Write a name for s ("ULT 12 \"worker\"") into buf; returns its length. */
	int (*describe)(const wf_stack_t *s, char *buf, size_t n);
} wf_stack_hooks_t;

/* Set the default stack size (the one that is cached), the number of
 * guarded mappings allowed alive at once, and the size of the descriptor
 * laid out at the top of every stack with the offset of its wf_stack_t.
 * Before the first wf_stack_alloc. */
WF_HIDDEN void wf_stack_configure(size_t default_size, long guarded_max, size_t desc_size,
				  size_t record_offset);

/* A stack of `size` usable bytes (the default size comes from the caches),
 * on user_addr if not NULL, with at least `guard` bytes of guard below it
 * (0: one page while the guard budget lasts). The descriptor region is
 * zeroed when fresh and left as its last owner left it when reused (the
 * owner resets its fields). cache: the calling worker's, or NULL.
 * Returns 0, ENOMEM or EAGAIN. */
WF_HIDDEN int wf_stack_alloc(wf_stack_cache_t *cache, size_t size, void *user_addr, size_t guard,
			     wf_stack_t **out);
/* A zeroed descriptor for a thread that runs on a kernel thread's stack
 * (kind WF_STACK_THREAD), or NULL. */
WF_HIDDEN wf_stack_t *wf_stack_thread(void);
WF_HIDDEN void wf_stack_free(wf_stack_cache_t *cache, wf_stack_t *s);
WF_HIDDEN void wf_stack_cache_drain(wf_stack_cache_t *cache);
/* From an idle worker: if creates have been carving fresh stacks, lay out
 * a few more ahead of them, on the global cache (stack.c, "prefilling").
 * Returns how many (0: nothing was asked). */
WF_HIDDEN int wf_stack_prefill(void);
/* Set when a create first asks for that: whoever sees it (the creator,
 * just after wf_stack_alloc) wakes an idle worker to do it. */
WF_HIDDEN extern atomic_int wf_stack_prefill_kick;
static inline int wf_stack_prefill_kicked(void)
{
	return unlikely(atomic_load_explicit(&wf_stack_prefill_kick, memory_order_relaxed)) &&
	       atomic_exchange_explicit(&wf_stack_prefill_kick, 0, memory_order_relaxed);
}
/* Give back every cached stack and slab (no stack is in use any more). */
WF_HIDDEN void wf_stack_global_drain(void);
/* s's frames were never unwound (its thread vanished: the child of a
 * fork): forget their sanitizer redzones before the stack is freed. */
WF_HIDDEN void wf_stack_abandoned(const wf_stack_t *s);
/* Around a fork (enum wf_fork_phase): the global cache's lock. */
WF_HIDDEN void wf_stack_fork(int phase);

/* The guard-page SIGSEGV handler (on per-thread signal stacks). */
WF_HIDDEN int wf_stack_signals_init(const wf_stack_hooks_t *hooks);
WF_HIDDEN void wf_stack_signals_fini(void);
/* A signal stack for the calling kernel thread; *old keeps the previous
 * one for wf_stack_altstack_fini. Returns the mapping, or NULL. */
WF_HIDDEN void *wf_stack_altstack_init(stack_t *old);
WF_HIDDEN void wf_stack_altstack_fini(void *altstack, const stack_t *old);

WF_HIDDEN _Noreturn void wf_stack_canary_fail(const wf_stack_t *s);
WF_HIDDEN size_t wf_page_size(void);

static inline uint64_t wf_canary_value(const wf_stack_t *s)
{
	return WF_CANARY_MAGIC ^ (uint64_t)(uintptr_t)s;
}

/* Abort with a report if s's canary was smashed. */
static inline void wf_stack_check(const wf_stack_t *s)
{
	if (likely(s->canary == WF_CANARY_NONE))
		return;
	const uint64_t *c = (const uint64_t *)s->lo;
	if (s->canary == WF_CANARY_ZERO ? (c[0] | c[1] | c[2] | c[3]) != 0
					: c[0] != wf_canary_value(s))
		wf_stack_canary_fail(s);
}

#endif
