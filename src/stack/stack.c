/* ULT stacks: one mapping per ULT holding the stack and, at its top, the
 * descriptor (and the ucontext_t of the ucontext backend):
 *
 *   map_base                                                   map_base+map_size
 *   | guard page | canary | ......... stack grows down ......... | uc | wf_ult |
 *     PROT_NONE   stack_lo                                  stack_hi
 *
 * Guard pages cost one VMA each (two per stack: the guard and the rest), and
 * Linux allows vm.max_map_count (65,530 by default) per process. So at most
 * wf_rt.guarded_max stacks get a guard; past that, stacks are carved from
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
 *   |          [c0]| stack 0 ...    | wf_ult [c1]| stack 1 ... | wf_ult [c2]|
 *
 * So checking a fresh stack's canary touches a page its neighbour's
 * descriptor already brought in, instead of faulting in the far end of its
 * own region: a ULT that never uses much of its stack costs one page fault,
 * not two (1,000,000 ULTs alive: ~1 s less).
 *
 * Freed default-size stacks go to the worker's cache (no locks, no system
 * calls), then to a global cache; guarded ones past GLOBAL_CACHE_MAX are
 * unmapped, slab ones stay cached until shutdown.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sched/sched.h"
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

/* Global cache of default-size stacks, and the current slab. */
static wf_spinlock_t global_lock;
static wf_ult_t *global_cache; /* linked through ->next */
static long global_n;
static char *slab_cur;
static size_t slab_left;
static void **slabs; /* every slab mapping, unmapped whole at shutdown */
static size_t nslabs, slabs_cap;
static size_t slab_bytes;

size_t wf_page_size(void)
{
	if (!page_size)
		page_size = (size_t)sysconf(_SC_PAGESIZE);
	return page_size;
}

/* Lay out descriptor, backend reserve, canary in [base, base+size).
 * guard: bytes of guard page at the bottom. */
static wf_ult_t *layout(char *base, size_t size, size_t guard, int kind)
{
	uintptr_t top = (uintptr_t)base + size;
	wf_ult_t *u = (wf_ult_t *)((top - sizeof(wf_ult_t)) & ~(uintptr_t)63);
	size_t reserve = wf_ctx_reserve();
	uintptr_t hi = ((uintptr_t)u - reserve) & ~(uintptr_t)63;
	memset(u, 0, sizeof *u);
	u->parker.ult = u;
	u->map_base = base;
	u->map_size = size;
	u->stack_kind = kind;
	u->ctx.stack_lo = base + guard;
	u->ctx.stack_size = hi - (uintptr_t)(base + guard);
	u->ctx.uc = reserve ? (ucontext_t *)hi : NULL;
	u->valgrind_id = VALGRIND_STACK_REGISTER(u->ctx.stack_lo, (char *)hi);
	return u;
}

/* A cached stack is reused: reset the per-thread fields, keep the layout.
 * (Field by field: a memset of the whole descriptor showed up as the most
 * expensive instruction of a create+join.) */
static wf_ult_t *reuse(wf_ult_t *u)
{
	u->next = NULL;
	u->id = 0;
	atomic_store_explicit(&u->parker.state, WF_PARK_EMPTY, memory_order_relaxed);
	u->parker.ult = u;
	u->state = 0;
	u->bound_worker = -1;
	u->last_worker = -1;
	atomic_store_explicit(&u->joiner, WF_JOIN_NONE, memory_order_relaxed);
	atomic_store_explicit(&u->joining, NULL, memory_order_relaxed);
	u->join_target = NULL;
	u->join_seen = 0;
	atomic_store_explicit(&u->join_checking, 0, memory_order_relaxed);
	u->retval = NULL;
	u->name[0] = '\0';
	u->block_reason = WF_BLOCK_NONE;
	u->block_obj = NULL;
	atomic_store_explicit(&u->cancel, 0, memory_order_relaxed);
	u->cwait = NULL;
	u->cleanup = NULL;
	u->tsd = NULL;
	u->px_unwind = NULL;
	u->px_policy = u->px_prio = 0;
	atomic_store_explicit(&u->cpu_ns, 0, memory_order_relaxed);
	atomic_store_explicit(&u->sig_pending, 0, memory_order_relaxed);
	return u;
}

/* A stack with a guard of g bytes (a whole number of pages) below it. */
static wf_ult_t *map_guarded(size_t size, size_t g)
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

static wf_ult_t *map_bare(size_t size)
{
	char *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	return p == MAP_FAILED ? NULL : layout(p, size, 0, WF_STACK_BARE);
}

/* One stack from the current slab (a new slab if it is used up).
 * Called with global_lock held. */
static wf_ult_t *carve_slab(size_t size)
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
	/* Shifted down by the canary: the region's own descriptor then ends
	 * that far below its top, where the next region's canary goes. */
	return layout(base - SLAB_CANARY, size, 0, WF_STACK_SLAB);
}

static int guard_budget_left(void)
{
	return wf_rt.guarded_max > 0 &&
	       atomic_load_explicit(&guarded_live, memory_order_relaxed) < wf_rt.guarded_max;
}

int wf_stack_alloc(wf_worker_t *w, size_t size, void *user_addr, size_t guard, wf_ult_t **out)
{
	wf_ult_t *u = NULL;
	size_t pg = wf_page_size();
	if (user_addr) {
		u = layout(user_addr, size, 0, WF_STACK_USER);
		goto done;
	}
	if (guard > pg) {
		/* A larger guard than weft's page (POSIX guardsize): a mapping of
		 * its own, never cached (its size is not the default's). */
		u = map_guarded(size, (guard + pg - 1) / pg * pg);
		if (!u)
			return errno == ENOMEM ? ENOMEM : EAGAIN;
		goto done;
	}
	if (size == wf_rt.stack_size) {
		if (w && w->nstacks > 0) {
			u = reuse(w->stack_cache[--w->nstacks]);
			goto done;
		}
		wf_spin_lock(&global_lock);
		/* Refill the worker's cache in one go so the lock is rare. */
		while (global_cache && w && w->nstacks < CACHE_BATCH) {
			w->stack_cache[w->nstacks++] = global_cache;
			global_cache = global_cache->next;
			global_n--;
		}
		if (w && w->nstacks > 0) {
			wf_spin_unlock(&global_lock);
			u = reuse(w->stack_cache[--w->nstacks]);
			goto done;
		}
		if (!w && global_cache) {
			u = global_cache;
			global_cache = u->next;
			global_n--;
			wf_spin_unlock(&global_lock);
			u = reuse(u);
			goto done;
		}
		if (!guard_budget_left()) {
			u = carve_slab(size);
			wf_spin_unlock(&global_lock);
			if (!u)
				return ENOMEM;
			goto done;
		}
		wf_spin_unlock(&global_lock);
	}
	u = guard_budget_left() ? map_guarded(size, pg) : map_bare(size);
	if (!u)
		return errno == ENOMEM ? ENOMEM : EAGAIN;
done:
	switch (u->stack_kind) {
	case WF_STACK_USER:
		u->canary = WF_CANARY_MAGIC_WORD;
		*(uint64_t *)u->ctx.stack_lo = wf_canary_value(u);
		break;
	case WF_STACK_SLAB:
	case WF_STACK_BARE: {
		/* Fresh pages are zero; a reused stack may have been used
		 * to the bottom (write only then, so untouched pages stay
		 * unbacked). */
		uint64_t *c = u->ctx.stack_lo;
		u->canary = WF_CANARY_ZERO;
		if (c[0] | c[1] | c[2] | c[3])
			memset(c, 0, WF_CANARY_WORDS * sizeof *c);
		break;
	}
	default:
		u->canary = WF_CANARY_NONE;
	}
	*out = u;
	return 0;
}

static void unmap(wf_ult_t *u)
{
	VALGRIND_STACK_DEREGISTER(u->valgrind_id);
	if (u->stack_kind == WF_STACK_GUARDED)
		atomic_fetch_sub_explicit(&guarded_live, 1, memory_order_relaxed);
#if WF_ASAN
	/* Frames left on it keep their redzones poisoned otherwise, and
	 * whatever is mapped here next would fault. */
	__asan_unpoison_memory_region(u->map_base, u->map_size);
#endif
	munmap(u->map_base, u->map_size);
}

/* Put a stack on the global cache, or give it back. A slab stack cannot be
 * unmapped alone without splitting its slab's mapping (one more VMA each),
 * so slab stacks always stay cached for reuse; their memory goes back to
 * the system when the runtime shuts down. */
static void release_global(wf_ult_t *u)
{
	wf_spin_lock(&global_lock);
	if (global_n >= GLOBAL_CACHE_MAX && u->stack_kind != WF_STACK_SLAB) {
		wf_spin_unlock(&global_lock);
		unmap(u);
		return;
	}
	u->next = global_cache;
	global_cache = u;
	global_n++;
	wf_spin_unlock(&global_lock);
}

void wf_stack_free(wf_worker_t *w, wf_ult_t *u)
{
	/* Its ULT is gone: the next ULT on this stack gets a fresh TSan fiber. */
	wf_ctx_forget(&u->ctx);
	switch (u->stack_kind) {
	case WF_STACK_USER:
		VALGRIND_STACK_DEREGISTER(u->valgrind_id);
		return;
	case WF_STACK_THREAD:
		free(u);
		return;
	case WF_STACK_BARE:
		unmap(u);
		return;
	}
	if (u->map_size !=
	    wf_rt.stack_size + (u->stack_kind == WF_STACK_GUARDED ? wf_page_size() : 0)) {
		WF_ASSERT(u->stack_kind == WF_STACK_GUARDED);
		unmap(u);
		return;
	}
	if (w && w->nstacks < WF_STACK_CACHE) {
		w->stack_cache[w->nstacks++] = u;
		return;
	}
	release_global(u);
}

void wf_stack_cache_drain(wf_worker_t *w)
{
	while (w->nstacks > 0)
		release_global(w->stack_cache[--w->nstacks]);
}

/* Give back every cached stack and every slab (at shutdown, when no ULT
 * uses any of them). Slabs go whole: one system call per SLAB_STACKS
 * stacks. */
void wf_stack_global_drain(void)
{
	wf_spin_lock(&global_lock);
	wf_ult_t *u = global_cache;
	while (u) {
		wf_ult_t *next = u->next;
		if (u->stack_kind == WF_STACK_SLAB)
			VALGRIND_STACK_DEREGISTER(u->valgrind_id);
		else
			unmap(u);
		u = next;
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
	wf_spin_unlock(&global_lock);
}

/* ---- reports ------------------------------------------------------------ */

static void report(const char *fmt, wf_ult_t *u, const void *addr)
{
	char buf[256];
	int n = snprintf(buf, sizeof buf, fmt, (unsigned long long)u->id, u->name[0] ? u->name : "",
			 addr, u->ctx.stack_lo, (char *)u->ctx.stack_lo + u->ctx.stack_size);
	if (n > 0) {
		ssize_t r =
			write(STDERR_FILENO, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf);
		(void)r;
	}
}

void wf_stack_canary_fail(wf_ult_t *u)
{

	report("weft: fatal: ULT %llu \"%s\" overflowed its stack: canary smashed at %p "
	       "(stack %p-%p)\n",
	       u, u->ctx.stack_lo);
	abort();
}

static struct sigaction old_segv;
static int segv_installed;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	wf_worker_t *w = wf_worker_self();
	wf_ult_t *u = w ? w->current : NULL;
	char *a = si->si_addr;
	if (u && u->stack_kind == WF_STACK_GUARDED && a >= (char *)u->map_base - 65536 &&
	    a < (char *)u->ctx.stack_lo) {
		report("weft: fatal: ULT %llu \"%s\" overflowed its stack: guard page hit at %p "
		       "(stack %p-%p)\n",
		       u, a);
		signal(SIGABRT, SIG_DFL);
		abort();
	}
	/* Not ours: let the previous handler (or the default action) have the
	 * fault when the instruction runs again. */
	sigaction(SIGSEGV, &old_segv, NULL);
	(void)sig;
	(void)uc;
}

int wf_stack_signals_init(void)
{
	if (segv_installed)
		return 0;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, &old_segv) != 0)
		return errno;
	segv_installed = 1;
	return 0;
}

void wf_stack_signals_fini(void)
{
	if (segv_installed) {
		sigaction(SIGSEGV, &old_segv, NULL);
		segv_installed = 0;
	}
}

int wf_stack_altstack_init(wf_worker_t *w)
{
	size_t n = 64 * 1024;
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return ENOMEM;
	stack_t ss = {.ss_sp = p, .ss_size = n, .ss_flags = 0};
	if (sigaltstack(&ss, &w->old_altstack) != 0) {
		munmap(p, n);
		return errno;
	}
	w->altstack = p;
	return 0;
}

void wf_stack_altstack_fini(wf_worker_t *w)
{
	if (!w->altstack)
		return;
	sigaltstack(&w->old_altstack, NULL);
	munmap(w->altstack, 64 * 1024);
	w->altstack = NULL;
}
