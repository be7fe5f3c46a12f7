/* ULT stacks: one mapping per ULT holding the stack and, at its top, the
 * descriptor (and the ucontext_t of the ucontext backend):
 *
 *   map_base                                                   map_base+map_size
 *   | guard page | canary | ......... stack grows down ......... | uc | descriptor |
 *     PROT_NONE   stack_lo                                  stack_hi
 *
 * Guard pages cost one VMA each (two per stack: the guard and the rest), and
 * Linux allows vm.max_map_count (65,530 by default) per process. So at most
 * guarded_max stacks get a guard; past that, stacks are carved from
 * slabs of SLAB_STACKS without guards. Guard-less stacks have a canary at
 * their lowest words (see enum wf_canary in ult.h), checked whenever their
 * ULT switches away; guarded stacks report a guard-page hit from a SIGSEGV
 * handler running on a per-worker signal stack. Both name the ULT, then abort.
 *
 * A slab stack's canary words lie below its own region, in the top bytes
 * of the region before it, which that region's descriptor leaves free; the
 * slab's first region borrows them from a page in front of the slab:
 *
 *   | pad page     | region 0                | region 1               | ...
 *   |          [c0]| stack 0 ...    | desc [c1]| stack 1 ...   | desc [c2]|
 *
 * So checking a fresh stack's canary touches a page its neighbour's
 * descriptor already brought in, instead of faulting in the far end of its
 * own region: a ULT that never uses much of its stack costs one page fault,
 * not two (1,000,000 ULTs alive: ~1 s less).
 *
 * Freed default-size stacks go to the worker's cache (no locks, no system
 * calls), then to a global cache; guarded ones past GLOBAL_CACHE_MAX are
 * unmapped, slab ones stay cached until shutdown. While creates outrun
 * frees, idle workers lay out fresh slab stacks ahead of them on the
 * global cache ("prefilling", below).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "context/context.h"
#include "stack/stack.h"
#include "util/sys.h"
#if WF_ASAN
#include <sanitizer/asan_interface.h>
#endif

#if WEFT_HAVE_VALGRIND
#include <valgrind/valgrind.h>
#else
#define VALGRIND_STACK_REGISTER(lo, hi) 0u
#define VALGRIND_STACK_DEREGISTER(id)   ((void)(id))
#endif

enum { SLAB_STACKS = 64, GLOBAL_CACHE_MAX = 4096, CACHE_BATCH = WF_STACK_CACHE / 2 };
#define SLAB_CANARY (WF_CANARY_WORDS * sizeof(uint64_t))

static size_t page_size;
static atomic_long guarded_live; /* guarded mappings alive, cached ones included */
static size_t default_size;      /* wf_stack_configure */
static long guarded_max;
static size_t desc_size;
static size_t rec_off; /* where the wf_stack_t lies in the descriptor */
static const wf_stack_hooks_t *hooks;

/* Global cache of default-size stacks, and the current slab. */
static wf_spinlock_t global_lock;
static wf_stack_t *global_cache; /* linked through ->next */
static long global_n;
static char *slab_cur;
static size_t slab_left;
static void **slabs; /* every slab mapping, unmapped whole at shutdown */
static size_t nslabs, slabs_cap;
static size_t slab_bytes;
static atomic_int prefill_wanted; /* wf_stack_prefill */
atomic_int wf_stack_prefill_kick;

size_t wf_page_size(void)
{
	if (!page_size)
		page_size = (size_t)sysconf(_SC_PAGESIZE);
	return page_size;
}

void wf_stack_configure(size_t size, long max_guarded, size_t desc, size_t record_offset)
{
	default_size = size;
	guarded_max = max_guarded;
	desc_size = (desc + 63) & ~(size_t)63;
	rec_off = record_offset;
}

/* Lay out descriptor, backend reserve, canary in [base, base+size).
 * guard: bytes of guard page at the bottom. The descriptor is zeroed: it
 * may lie on a caller's stack, or on a mapping reused for another size. */
static wf_stack_t *layout(char *base, size_t size, size_t guard, int kind)
{
	uintptr_t top = (uintptr_t)base + size;
	char *desc = (char *)((top - desc_size) & ~(uintptr_t)63);
	wf_stack_t *s = (wf_stack_t *)(desc + rec_off);
	size_t reserve = wf_ctx_reserve();
	uintptr_t hi = ((uintptr_t)desc - reserve) & ~(uintptr_t)63;
	memset(desc, 0, desc_size);
	s->map_base = base;
	s->map_size = size;
	s->kind = kind;
	s->lo = base + guard;
	s->size = hi - (uintptr_t)(base + guard);
	s->reserved = reserve ? (void *)hi : NULL;
	s->valgrind_id = VALGRIND_STACK_REGISTER(s->lo, (char *)hi);
	return s;
}

wf_stack_t *wf_stack_thread(void)
{
	size_t reserve = wf_ctx_reserve();
	char *desc;
	if (posix_memalign((void **)&desc, 64, desc_size + reserve))
		return NULL;
	memset(desc, 0, desc_size + reserve);
	wf_stack_t *s = (wf_stack_t *)(desc + rec_off);
	s->kind = WF_STACK_THREAD;
	s->reserved = reserve ? desc + desc_size : NULL;
	return s;
}

/* A stack with a guard of g bytes (a whole number of pages) below it. */
static wf_stack_t *map_guarded(size_t size, size_t g)
{
	char *p = mmap(NULL, size + g, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (mprotect(p, g, PROT_NONE) != 0) {
		munmap(p, size + g);
		return NULL;
	}
	atomic_fetch_add_explicit(&guarded_live, 1, memory_order_relaxed);
	return layout(p, size + g, g, WF_STACK_GUARDED);
}

static wf_stack_t *map_bare(size_t size)
{
	char *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	return p == MAP_FAILED ? NULL : layout(p, size, 0, WF_STACK_BARE);
}

/* The base of one region of the current slab (a new slab if it is used
 * up), or NULL. Called with global_lock held; layout() goes outside it,
 * for it faults the region's top page in. */
static char *carve_slab(size_t size)
{
	if (slab_left < size) {
		if (nslabs == slabs_cap) {
			size_t cap = slabs_cap ? slabs_cap * 2 : 256;
			void **n = realloc(slabs, cap * sizeof *n);
			if (!n)
				return NULL;
			slabs = n;
			slabs_cap = cap;
		}
		size_t pg = wf_page_size();
		char *p = mmap(NULL, pg + size * SLAB_STACKS, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		slabs[nslabs++] = p;
		slab_bytes = pg + size * SLAB_STACKS;
		slab_cur = p + pg; /* the pad page holds region 0's canary */
		slab_left = size * SLAB_STACKS;
	}
	char *base = slab_cur;
	slab_cur += size;
	slab_left -= size;
	return base;
}

/* A region carved by carve_slab, laid out. Shifted down by the canary:
 * the region's own descriptor then ends that far below its top, where the
 * next region's canary goes. */
static wf_stack_t *layout_slab(char *base, size_t size)
{
	return layout(base - SLAB_CANARY, size, 0, WF_STACK_SLAB);
}

static int guard_budget_left(void)
{
	return guarded_max > 0 &&
	       atomic_load_explicit(&guarded_live, memory_order_relaxed) < guarded_max;
}

/* Take a stack from the cache (refilled from the global one in a batch, so
 * the lock is rare), or from the global cache; NULL if both are empty. */
static wf_stack_t *take_cached(wf_stack_cache_t *c)
{
	if (c && c->n > 0)
		return c->v[--c->n];
	wf_stack_t *s = NULL;
	wf_spin_lock(&global_lock);
	while (global_cache && c && c->n < CACHE_BATCH) {
		c->v[c->n++] = global_cache;
		global_cache = global_cache->next;
		global_n--;
	}
	if (c && c->n > 0) {
		s = c->v[--c->n];
	} else if (!c && global_cache) {
		s = global_cache;
		global_cache = s->next;
		global_n--;
	}
	wf_spin_unlock(&global_lock);
	return s;
}

int wf_stack_alloc(wf_stack_cache_t *c, size_t size, void *user_addr, size_t guard,
		   wf_stack_t **out)
{
	wf_stack_t *s = NULL;
	size_t pg = wf_page_size();
	if (user_addr) {
		s = layout(user_addr, size, 0, WF_STACK_USER);
	} else if (guard > pg) {
		/* A larger guard than weft's page (POSIX guardsize): a mapping of
		 * its own, never cached (its size is not the default's). */
		s = map_guarded(size, (guard + pg - 1) / pg * pg);
	} else if (size == default_size && (s = take_cached(c))) {
		s->next = NULL;
	} else if (size == default_size && !guard_budget_left()) {
		wf_spin_lock(&global_lock);
		char *base = carve_slab(size);
		wf_spin_unlock(&global_lock);
		if (!base)
			return ENOMEM;
		s = layout_slab(base, size);
		/* Stacks are being made faster than they are freed: ask the
		 * idle workers to fault the next ones in (wf_stack_prefill). */
		if (!atomic_load_explicit(&prefill_wanted, memory_order_relaxed) &&
		    !atomic_exchange_explicit(&prefill_wanted, 1, memory_order_relaxed))
			atomic_store_explicit(&wf_stack_prefill_kick, 1, memory_order_relaxed);
	} else {
		s = guard_budget_left() ? map_guarded(size, pg) : map_bare(size);
	}
	if (!s)
		return errno == ENOMEM ? ENOMEM : EAGAIN;
	switch (s->kind) {
	case WF_STACK_USER:
		s->canary = WF_CANARY_MAGIC_WORD;
		*(uint64_t *)s->lo = wf_canary_value(s);
		break;
	case WF_STACK_SLAB:
	case WF_STACK_BARE: {
		/* Fresh pages are zero; a reused stack may have been used
		 * to the bottom (write only then, so untouched pages stay
		 * unbacked). */
		uint64_t *w = s->lo;
		s->canary = WF_CANARY_ZERO;
		if (w[0] | w[1] | w[2] | w[3])
			memset(w, 0, WF_CANARY_WORDS * sizeof *w);
		break;
	}
	default:
		s->canary = WF_CANARY_NONE;
	}
	*out = s;
	return 0;
}

static void unmap(wf_stack_t *s)
{
	VALGRIND_STACK_DEREGISTER(s->valgrind_id);
	if (s->kind == WF_STACK_GUARDED)
		atomic_fetch_sub_explicit(&guarded_live, 1, memory_order_relaxed);
#if WF_ASAN
	/* Frames left on it keep their redzones poisoned otherwise, and
	 * whatever is mapped here next would fault. */
	__asan_unpoison_memory_region(s->map_base, s->map_size);
#endif
	munmap(s->map_base, s->map_size);
}

/* Put a stack on the global cache, or give it back. A slab stack cannot be
 * unmapped alone without splitting its slab's mapping (one more VMA each),
 * so slab stacks always stay cached for reuse; their memory goes back to
 * the system when the runtime shuts down. */
static void release_global(wf_stack_t *s)
{
	wf_spin_lock(&global_lock);
	if (global_n >= GLOBAL_CACHE_MAX && s->kind != WF_STACK_SLAB) {
		wf_spin_unlock(&global_lock);
		unmap(s);
		return;
	}
	s->next = global_cache;
	global_cache = s;
	global_n++;
	wf_spin_unlock(&global_lock);
}

/* ---- prefilling ----------------------------------------------------------- */

/* A fresh slab region costs whoever lays it out a page fault: its
 * descriptor's page. When ULTs are made faster than they end (a million
 * alive at once), every create takes one, in the creator's critical path -
 * about as long as the rest of a create and join together. So once a
 * create had to carve a region (the caches were empty), an idle worker
 * carves the next ones, lays them out - taking their faults on its own
 * CPU - and puts them on the global cache, a batch at a time, until it
 * holds PREFILL_MAX. Creators then find them there. What this costs is the
 * memory of at most PREFILL_MAX stacks made ahead (a page each), which the
 * next creates would take anyway; a program whose threads come and go
 * reuses cached stacks and never asks. */
enum { PREFILL_BATCH = 8, PREFILL_MAX = 2 * CACHE_BATCH };

int wf_stack_prefill(void)
{
	if (likely(!atomic_load_explicit(&prefill_wanted, memory_order_relaxed)))
		return 0;
	char *base[PREFILL_BATCH];
	int n = 0;
	size_t size = default_size;
	wf_spin_lock(&global_lock);
	while (n < PREFILL_BATCH && global_n + n < PREFILL_MAX && (base[n] = carve_slab(size)))
		n++;
	if (n < PREFILL_BATCH)
		atomic_store_explicit(&prefill_wanted, 0, memory_order_relaxed);
	wf_spin_unlock(&global_lock);
	if (!n)
		return 0;
	wf_stack_t *first = NULL, **link = &first;
	for (int i = 0; i < n; i++) {
		wf_stack_t *st = layout_slab(base[i], size);
		*link = st;
		link = &st->next;
	}
	wf_spin_lock(&global_lock);
	*link = global_cache;
	global_cache = first;
	global_n += n;
	wf_spin_unlock(&global_lock);
	return n;
}

void wf_stack_abandoned(const wf_stack_t *s)
{
#if WF_ASAN
	if (s->kind == WF_STACK_USER)
		__asan_unpoison_memory_region(s->lo, s->size);
	else if (s->kind != WF_STACK_THREAD)
		__asan_unpoison_memory_region(s->map_base, s->map_size);
#else
	(void)s;
#endif
}

void wf_stack_free(wf_stack_cache_t *c, wf_stack_t *s)
{
	switch (s->kind) {
	case WF_STACK_USER:
		VALGRIND_STACK_DEREGISTER(s->valgrind_id);
		return;
	case WF_STACK_THREAD:
		free((char *)s - rec_off);
		return;
	case WF_STACK_BARE:
		unmap(s);
		return;
	}
	if (s->map_size != default_size + (s->kind == WF_STACK_GUARDED ? wf_page_size() : 0)) {
		WF_ASSERT(s->kind == WF_STACK_GUARDED);
		unmap(s);
		return;
	}
	if (c && c->n < WF_STACK_CACHE) {
		c->v[c->n++] = s;
		return;
	}
	release_global(s);
}

void wf_stack_cache_drain(wf_stack_cache_t *c)
{
	while (c->n > 0)
		release_global(c->v[--c->n]);
}

/* Give back every cached stack and every slab (at shutdown, when no ULT
 * uses any of them). Slabs go whole: one system call per SLAB_STACKS
 * stacks. */
void wf_stack_global_drain(void)
{
	wf_spin_lock(&global_lock);
	wf_stack_t *s = global_cache;
	while (s) {
		wf_stack_t *next = s->next;
		if (s->kind == WF_STACK_SLAB)
			VALGRIND_STACK_DEREGISTER(s->valgrind_id);
		else
			unmap(s);
		s = next;
	}
	global_cache = NULL;
	global_n = 0;
	for (size_t i = 0; i < nslabs; i++) {
#if WF_ASAN
		__asan_unpoison_memory_region(slabs[i], slab_bytes); /* as in unmap */
#endif
		munmap(slabs[i], slab_bytes);
	}
	nslabs = 0;
	slab_cur = NULL;
	slab_left = 0;
	atomic_store_explicit(&prefill_wanted, 0, memory_order_relaxed);
	wf_spin_unlock(&global_lock);
}

/* ---- reports ------------------------------------------------------------ */

/* "weft: fatal: <who> overflowed its stack: <what> at <addr> (stack lo-hi)" */
static void report(const wf_stack_t *s, const char *what, const void *addr)
{
	char who[160] = "a thread";
	if (hooks && hooks->describe)
		hooks->describe(s, who, sizeof who);
	char buf[384];
	int n = snprintf(buf, sizeof buf,
			 "weft: fatal: %s overflowed its stack: %s at %p (stack %p-%p)\n", who,
			 what, addr, s->lo, (char *)s->lo + s->size);
	if (n > 0) {
		ssize_t r =
			write(STDERR_FILENO, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf);
		(void)r;
	}
}

void wf_stack_canary_fail(const wf_stack_t *s)
{
	report(s, "canary smashed", s->lo);
	abort();
}

static struct sigaction old_segv;
static int segv_installed;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	const wf_stack_t *s = hooks && hooks->running ? hooks->running() : NULL;
	char *a = si->si_addr;
	if (s && s->kind == WF_STACK_GUARDED && a >= (char *)s->map_base - 65536 &&
	    a < (char *)s->lo) {
		report(s, "guard page hit", a);
		struct sigaction dfl;
		memset(&dfl, 0, sizeof dfl);
		dfl.sa_handler = SIG_DFL;
		WF_SYS(sigaction)(SIGABRT, &dfl, NULL);
		abort();
	}
	/* Not ours: let the previous handler (or the default action) have the
	 * fault when the instruction runs again. */
	WF_SYS(sigaction)(SIGSEGV, &old_segv, NULL);
	(void)sig;
	(void)uc;
}

int wf_stack_signals_init(const wf_stack_hooks_t *h)
{
	hooks = h;
	if (segv_installed)
		return 0;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (WF_SYS(sigaction)(SIGSEGV, &sa, &old_segv) != 0)
		return errno;
	segv_installed = 1;
	return 0;
}

void wf_stack_signals_fini(void)
{
	if (segv_installed) {
		WF_SYS(sigaction)(SIGSEGV, &old_segv, NULL);
		segv_installed = 0;
	}
}

enum { ALTSTACK_SIZE = 64 * 1024 };

void *wf_stack_altstack_init(stack_t *old)
{
	void *p = mmap(NULL, ALTSTACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);
	if (p == MAP_FAILED)
		return NULL;
	stack_t ss = {.ss_sp = p, .ss_size = ALTSTACK_SIZE, .ss_flags = 0};
	if (sigaltstack(&ss, old) != 0) {
		munmap(p, ALTSTACK_SIZE);
		return NULL;
	}
	return p;
}

void wf_stack_altstack_fini(void *altstack, const stack_t *old)
{
	if (!altstack)
		return;
	sigaltstack(old, NULL);
	munmap(altstack, ALTSTACK_SIZE);
}

void wf_stack_fork(int phase)
{
	wf_spin_fork(&global_lock, phase);
}
