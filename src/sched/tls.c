/* Thread control blocks per ULT: a ULT that asks for one runs with a
 * thread pointer of its own, so that everything the C runtime keeps "per
 * thread" - __thread and C++ thread_local variables, errno, malloc's
 * per-thread cache, the C++ exception being handled, Rust's and CPython's
 * thread state - is the ULT's, whichever worker it runs on.
 *
 * What a block is
 *   Exactly what glibc gives a new thread (nptl's allocate_stack): the
 *   thread's static TLS blocks and glibc's thread descriptor (struct
 *   pthread, the thread's pthread_t), placed around the thread pointer as
 *   the architecture's TLS variant says:
 *     x86-64   variant II: tp == the descriptor, which begins with the TCB
 *              header (tcbhead_t); the static TLS blocks lie below tp;
 *     aarch64  variant I: tp points to a two-word TCB (the DTV pointer and
 *              a private word), the descriptor lies just below tp
 *              (pthread_self() == tp - sizeof(struct pthread)), the static
 *              TLS blocks above tp + 16.
 *   glibc's dynamic linker exports the calls its own thread creation uses,
 *   and weft uses those rather than copying their logic:
 *     _dl_get_tls_static_info  the size of the static TLS area (with the
 *                              descriptor on x86-64, without it on
 *                              aarch64) and its alignment;
 *     _dl_allocate_tls(tp)     the dynamic-TLS vector (DTV) of a TCB, and
 *                              every loaded module's TLS image copied to
 *                              its static block (.tbss zeroed); modules a
 *                              ULT dlopens later get their blocks lazily
 *                              through its own DTV (__tls_get_addr);
 *     _dl_allocate_tls_init(tp, true)  the same for a TCB that has a DTV
 *                              already: what glibc's stack cache does for
 *                              a reused thread (get_cached_stack), after it
 *                              freed the dynamic blocks the DTV points to
 *                              and cleared the DTV - as weft does.
 *   The rest is set as glibc's thread start sets it. On x86-64 the TCB
 *   header's tcb and self words point to the block, and multiple_threads,
 *   sysinfo, the stack-protector and pointer-guard words and the CET
 *   feature word are the creating thread's (the guards must be equal in
 *   every thread of a process: canaries and mangled pointers cross
 *   threads). On aarch64 the guards are global variables, not per thread;
 *   the descriptor's header word multiple_threads is copied, the TCB's
 *   private word is zero.
 *
 * Assumptions about glibc, each checked once by wf_tls_probe, which refuses
 * own thread pointers (ENOTSUP, naming the failed check) if one fails:
 *   - not a sanitizer build: ThreadSanitizer's state is in the thread's
 *     TLS, AddressSanitizer's in its glibc thread-specific data, and a new
 *     block has neither (ASan then ignores fiber switches);
 *   - x86-64 or aarch64 (the layouts above); glibc 2.34 or later (its
 *     thread library is in libc, which exports libthread_db's layout
 *     descriptors);
 *   - sizeof(struct pthread) is _thread_db_sizeof_pthread and the tid and
 *     list fields are where _thread_db_pthread_tid and _list say
 *     (libthread_db reads threads with these exported descriptors; they
 *     are glibc's own record of its layout); glibc's own pthread_self()
 *     of the calling thread is the descriptor found from its thread
 *     pointer as above;
 *   - x86-64: the TCB header's first fields are tcb (offset 0) and self
 *     (16), both pointing to the TCB - checked on the calling thread; the
 *     DTV pointer is at 8 and the copied words lie between 24 and 80
 *     (tcbhead_t of glibc 2.34-2.40; the stack guard at 0x28 is also GCC's
 *     ABI); aarch64: the DTV pointer is at tp (as _thread_db_pthread_dtvp
 *     says) and the descriptor begins with multiple_threads and
 *     gscope_flag (nptl's descr.h for TLS_DTV_AT_TP);
 *   - the rseq area is in the descriptor at tp + __rseq_offset (a public
 *     ABI, glibc 2.35);
 *   - the calls above exist (GLIBC_PRIVATE, looked up by dlsym), and
 *     __call_tls_dtors runs a thread's C++ thread_local destructors;
 *   - a DTV is an array of 16-byte dtv_t (as _thread_db_dtv_dtv says),
 *     entry -1 holding its length, entry i >= 1 a module's block pointer
 *     (val, at 0 as _thread_db_dtv_t_pointer_val says) and the malloc'd
 *     block to free (to_free, the other word);
 *   - errno lies in libc's own static TLS block (found by
 *     dl_iterate_phdr), which is at most 1 KiB;
 *   - finally a self-test: a block is made, installed on the calling
 *     kernel thread for a moment, and a variable of this library's static
 *     TLS must read its initial value there and errno must live inside the
 *     block.
 *   Not assumed: any other field of struct pthread. A ULT's are zero, as
 *   in a new thread, but for
 *     tid      WF_TLS_TID_BASE (2^30) + the ULT's registry slot, worker 0's
 *              block 2^30 - 1: unique among live threads and above any
 *              kernel thread id (pid_max <= 2^22), so that glibc's
 *              recursive and error-checking mutexes - its dynamic linker's
 *              locks among them - tell ULTs apart. Not a kernel id: glibc's
 *              code for the calling thread asks the kernel when it must
 *              (raise, pthread_kill of self), but glibc's own robust and
 *              priority-inheriting mutexes (which the POSIX layer replaces)
 *              do not work in a ULT with a block;
 *     rseq     cpu_id "not registered", so that sched_getcpu asks the
 *              kernel;
 *     list     links that form an empty list: fork's child takes the
 *              calling thread out of glibc's list of threads, and would
 *              crash on null links.
 *   And one act of glibc's thread start is done for a fresh block: the
 *   ctype table pointers (uselocale(LC_GLOBAL_LOCALE) with the block
 *   installed for a moment; isalpha crashed without).
 *
 * Installing
 *   The switch tail (sched.c) installs the next context's thread pointer
 *   - a ULT's own, or its worker's kernel thread's. On x86-64 with
 *   wrfsbase where the CPU and kernel allow it (AT_HWCAP2 reports
 *   FSGSBASE: Linux 5.9+), else with arch_prctl(ARCH_SET_FS) (a system
 *   call per switch); on aarch64 with msr tpidr_el0. ULTs that share
 *   their worker's thread pointer pay a comparison.
 *
 * Reuse, and why blocks are never unmapped
 *   glibc frees a thread's malloc cache (tcache) and detaches it from its
 *   arena at thread exit through calls it does not export. So a released
 *   block keeps libc's static TLS block (the tcache and arena pointers
 *   among it) and the next ULT to get the block gets them with it; every
 *   other module's block is reinitialised from its image, as for a new
 *   thread. A released block keeps its DTV, and the dynamic blocks it
 *   points to, until it is reused: then they are freed and the DTV is
 *   cleared and filled anew (_dl_allocate_tls_init), as glibc's stack
 *   cache does - a calloc and a free fewer per thread than a new DTV,
 *   about 60 ns of a create+join. Exiting (wf_tls_exiting) runs the C++
 *   destructors first and puts the locale back, so nothing of the old
 *   thread is visible but a malloc cache. Blocks live in a per-worker cache and a global pool and
 *   are never unmapped - as glibc's stack cache keeps the TLS of exited
 *   threads, without its bound: a process keeps as many as it ever had
 *   ULTs with their own at once. A block is 4-5 KiB of address space
 *   (x86-64; 3-4 KiB on aarch64), of which a ULT touches one or two
 *   pages.
 *
 * Limits (docs/posix-coverage.md)
 *   A module dlopened while ULTs with blocks exist whose TLS glibc puts in
 *   static TLS (initial-exec; or TLS descriptors, all of aarch64's, when
 *   it fits in glibc's optional surplus) is not initialised in those
 *   blocks: glibc initialises it only in the threads it knows. gdb's
 *   thread list (libthread_db) shows kernel threads, not ULTs.
 */
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <locale.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>

#include "sched/tls.h"
#include "util/sys.h"

#ifndef HWCAP2_FSGSBASE
#define HWCAP2_FSGSBASE (1 << 1)
#endif

/* Where glibc's descriptor and static TLS lie around the thread pointer
 * (see "What a block is"); offsets from the descriptor (DESC_*) or from
 * the thread pointer (TP_*). */
#if defined(__x86_64__)
#define TLS_VARIANT_II 1
#define TP_SELF        16 /* tcbhead_t: void *self */
#define TP_DTV         8  /* dtv_t *dtv */
#define TP_LINK        0  /* void *tcb: a pooled block's link (set up anew) */
#define DESC_COPY_FROM 24 /* multiple_threads, gscope_flag, sysinfo, stack_guard, */
#define DESC_COPY_TO   80 /* pointer_guard, vgetcpu cache, feature_1: copied */
#define DESC_GSCOPE    28 /* int gscope_flag: 0 in a new thread */
#elif defined(__aarch64__)
#define TLS_VARIANT_II 0
#define TP_DTV         0          /* tcbhead_t: dtv_t *dtv, */
#define TP_PRIVATE     8          /* void *private: zero */
#define TP_LINK        TP_PRIVATE /* a pooled block's link (zeroed anew) */
#define TP_TCB_SIZE    16         /* where the static TLS blocks begin */
#define DESC_COPY_FROM 0          /* header.multiple_threads: copied */
#define DESC_COPY_TO   4
#define DESC_GSCOPE    4 /* header.gscope_flag: 0 in a new thread */
#endif
#define LIBC_BLOCK_MAX 1024
#define SLAB_SIZE      (1u << 20)

int wf_tls_wrfsbase;

static struct {
	pthread_once_t once;
	int err;
	const char *why;
	void *(*allocate)(void *);
	void *(*reinit)(void *, bool);
	void (*call_dtors)(void);
	size_t static_size, align;
	size_t desc_size;   /* sizeof(struct pthread) */
	ptrdiff_t desc_off; /* the descriptor, from tp: 0 or -desc_size */
	ptrdiff_t lo, hi;   /* the block (descriptor and static TLS), from tp */
	size_t slot;        /* bytes of address space per block */
	ptrdiff_t tid_off;  /* struct pthread's tid, from the descriptor */
	ptrdiff_t list_off; /* struct pthread's list (of glibc's threads) */
	ptrdiff_t rseq_off; /* the rseq area's cpu_id, from tp; 0: none */
	ptrdiff_t libc_off; /* libc's static TLS block, from tp */
	size_t libc_size;

	wf_spinlock_t lock; /* guards what follows */
	uintptr_t pool;     /* released blocks, linked through their word TP_LINK */
	char *slab, *slab_end;
} g = {.once = PTHREAD_ONCE_INIT};

/* A DTV entry (glibc's dtv_t): entry -1 holds the length. */
struct dtv_entry {
	void *val;     /* the module's block (counter: entries -1 and 0) */
	void *to_free; /* malloc'd for a dynamic block */
};

/* Pool entries are tagged: bit 0 set for a block that was never set up
 * (its libc block is not valid yet). Thread pointers are 64-aligned. */
#define FRESH 1u

/* ---- probing ----------------------------------------------------------------- */

static __thread int probe_var __attribute__((tls_model("initial-exec"))) = 0x57454654;

__attribute__((noinline, noipa, unused)) static int read_probe_var(void)
{
	return probe_var;
}

__attribute__((noinline, noipa, unused)) static int *errno_address(void)
{
	return &errno;
}

struct libc_find {
	const char *errno_at;
	const char *tp;
	ptrdiff_t off;
	size_t size;
};

__attribute__((unused)) static int find_libc_block(struct dl_phdr_info *info, size_t n, void *arg)
{
	(void)n;
	struct libc_find *f = arg;
	if (!info->dlpi_tls_data)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		const char *lo = info->dlpi_tls_data;
		if (p->p_type == PT_TLS && f->errno_at >= lo && f->errno_at < lo + p->p_memsz) {
			f->off = lo - f->tp;
			f->size = p->p_memsz;
			return 1;
		}
	}
	return 0;
}

__attribute__((unused)) static const uint32_t *db_symbol(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}

/* The descriptor (struct pthread) of the thread whose pointer is tp. */
static inline char *desc_of(char *tp)
{
	return tp + g.desc_off;
}

static const char *probe_assumptions(void)
{
#if !defined(__x86_64__) && !defined(__aarch64__)
	return "own thread pointers are implemented on x86-64 and aarch64 only";
#else
	if (WF_TSAN)
		return "ThreadSanitizer keeps its per-thread state in the thread's TLS";
	if (WF_ASAN)
		return "AddressSanitizer finds its per-thread state (stack bounds, fiber "
		       "switches) through the thread's glibc thread-specific data";
	int major = 0, minor = 0;
	const char *v = gnu_get_libc_version();
	if (sscanf(v, "%d.%d", &major, &minor) != 2 || major != 2 || minor < 34)
		return "needs glibc 2.34 or later";
	char *tp = wf_tls_current();
#if TLS_VARIANT_II
	if (*(void **)tp != tp || *(void **)(tp + TP_SELF) != tp)
		return "the TCB header's tcb and self words do not point to the TCB";
#endif
	void (*static_info)(size_t *, size_t *) =
		(void (*)(size_t *, size_t *))dlsym(RTLD_DEFAULT, "_dl_get_tls_static_info");
	g.allocate = (void *(*)(void *))dlsym(RTLD_DEFAULT, "_dl_allocate_tls");
	g.reinit = (void *(*)(void *, bool))dlsym(RTLD_DEFAULT, "_dl_allocate_tls_init");
	g.call_dtors = (void (*)(void))dlsym(RTLD_DEFAULT, "__call_tls_dtors");
	if (!static_info || !g.allocate || !g.reinit || !g.call_dtors)
		return "glibc does not export _dl_get_tls_static_info, _dl_allocate_tls, "
		       "_dl_allocate_tls_init or __call_tls_dtors";
	const uint32_t *sizeof_pthread = db_symbol("_thread_db_sizeof_pthread");
	const uint32_t *tid = db_symbol("_thread_db_pthread_tid");
	const uint32_t *dtv = db_symbol("_thread_db_pthread_dtvp");
	const uint32_t *list = db_symbol("_thread_db_pthread_list");
	const uint32_t *dtv_elem = db_symbol("_thread_db_dtv_dtv");
	const uint32_t *dtv_val = db_symbol("_thread_db_dtv_t_pointer_val");
	if (!sizeof_pthread || !tid || !dtv || !list || !dtv_elem || !dtv_val)
		return "glibc does not export libthread_db's layout of struct pthread";
	if (dtv_elem[0] != 8 * sizeof(struct dtv_entry) || dtv_elem[2] != 0 || dtv_val[0] != 64 ||
	    dtv_val[2] != 0)
		return "a DTV entry is not the two words this library expects";
	static_info(&g.static_size, &g.align);
	g.desc_size = *sizeof_pthread;
	if (g.align < 64)
		g.align = 64;
	g.desc_off = TLS_VARIANT_II ? 0 : -(ptrdiff_t)g.desc_size;
	if ((ptrdiff_t)dtv[2] + g.desc_off != TP_DTV || tid[0] != 32 ||
	    list[0] != 2 * 8 * sizeof(void *))
		return "struct pthread's DTV pointer, tid or list is not what this library "
		       "expects";
	/* x86-64: the static size counts the descriptor; aarch64: it does not,
	 * but counts the TCB (nptl's allocate_stack). */
	g.lo = TLS_VARIANT_II ? -(ptrdiff_t)(g.static_size - g.desc_size) : g.desc_off;
	g.hi = TLS_VARIANT_II ? (ptrdiff_t)g.desc_size : (ptrdiff_t)g.static_size;
	if ((g.align & (g.align - 1)) || g.align > 4096 || g.desc_size < DESC_COPY_TO ||
	    g.desc_size % 64 || (TLS_VARIANT_II && g.desc_size > g.static_size) ||
	    g.static_size > SLAB_SIZE / 8 || tid[2] + 4 > g.desc_size || tid[2] < DESC_COPY_TO ||
	    list[2] < DESC_COPY_TO || list[2] + 2 * sizeof(void *) > g.desc_size)
		return "glibc's static TLS size, alignment or thread descriptor size is out "
		       "of range";
	g.tid_off = tid[2];
	g.list_off = list[2];
	if ((char *)WF_SYS(pthread_self)() != desc_of(tp))
		return "glibc's pthread_self is not the descriptor this library expects "
		       "beside the thread pointer";
	g.slot = (size_t)(g.hi - g.lo + 2 * g.align - 1) & ~(g.align - 1);
	const ptrdiff_t *rseq_offset = dlsym(RTLD_DEFAULT, "__rseq_offset");
	if (rseq_offset && *rseq_offset && *rseq_offset >= g.desc_off &&
	    *rseq_offset + 8 <= g.desc_off + (ptrdiff_t)g.desc_size)
		g.rseq_off = *rseq_offset + 4; /* struct rseq's cpu_id */
	struct libc_find f = {.errno_at = (const char *)errno_address(), .tp = tp};
#if TLS_VARIANT_II
	ptrdiff_t static_lo = g.lo, static_hi = 0;
#else
	ptrdiff_t static_lo = TP_TCB_SIZE, static_hi = g.hi;
#endif
	if (!dl_iterate_phdr(find_libc_block, &f) || f.size > LIBC_BLOCK_MAX || f.off < static_lo ||
	    f.off + (ptrdiff_t)f.size > static_hi)
		return "errno is not in a static TLS block of libc";
	g.libc_off = f.off;
	g.libc_size = f.size;
#if defined(__x86_64__)
	wf_tls_wrfsbase = (getauxval(AT_HWCAP2) & HWCAP2_FSGSBASE) != 0;
#endif

	/* The self-test, on this kernel thread: its own copy of probe_var
	 * differs from the image, a new block's must not. */
	char *mine = wf_tls_current();
	char *t = wf_tls_alloc(NULL);
	if (!t)
		return "could not make a test block (out of memory)";
	int saved = probe_var;
	probe_var = saved + 1;
	wf_tls_install(t);
	int seen = read_probe_var();
	char *errno_at = (char *)errno_address();
	void *now = wf_tls_current();
	wf_tls_install(mine);
	probe_var = saved;
	wf_tls_release(NULL, t);
	if (now != t)
		return "installing a thread pointer did not take effect";
	if (seen != 0x57454654)
		return "a new block's static TLS did not hold its initial value";
	if (errno_at < t + g.lo || errno_at >= t + g.hi)
		return "errno in a new block is not inside the block";
	return NULL;
#endif
}

static void probe_once(void)
{
	g.why = probe_assumptions();
	g.err = g.why ? ENOTSUP : 0;
}

int wf_tls_probe(const char **why)
{
	pthread_once(&g.once, probe_once);
	if (why)
		*why = g.why;
	return g.err;
}

/* ---- blocks ------------------------------------------------------------------ */

/* A block's thread pointer in a new slot: as high as the block allows,
 * aligned (nptl's allocate_stack places it the same way). */
static char *carve(void)
{
	wf_spin_lock(&g.lock);
	if (g.slab_end - g.slab < (ptrdiff_t)g.slot) {
		void *m = mmap(NULL, SLAB_SIZE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m == MAP_FAILED) {
			wf_spin_unlock(&g.lock);
			return NULL;
		}
		g.slab = m;
		g.slab_end = g.slab + SLAB_SIZE;
	}
	char *b = g.slab;
	g.slab += g.slot;
	wf_spin_unlock(&g.lock);
	return (char *)(((uintptr_t)b + g.slot - (size_t)g.hi) & ~(uintptr_t)(g.align - 1));
}

/* Set up the block at tp: a fresh one (zero, or never set up) gets a DTV
 * and libc's image too; a reused one keeps its DTV, emptied as glibc's
 * stack cache empties a reused thread's, and its libc block (see "Reuse"
 * above). */
static void *setup(char *tp, int fresh)
{
	char libc[LIBC_BLOCK_MAX];
	if (!fresh) {
		memcpy(libc, tp + g.libc_off, g.libc_size);
		struct dtv_entry *dtv = *(struct dtv_entry **)(tp + TP_DTV);
		size_t n = (size_t)dtv[-1].val;
		for (size_t i = 1; i <= n; i++)
			if (dtv[i].to_free)
				free(dtv[i].to_free); /* the old thread's dynamic blocks */
		memset(dtv, 0, (n + 1) * sizeof *dtv);
		g.reinit(tp, true);   /* every module's image (the DTV may grow) */
	} else if (!g.allocate(tp)) { /* a DTV, and every module's image */
		return NULL;
	}
	if (!fresh)
		memcpy(tp + g.libc_off, libc, g.libc_size);
	char *me = wf_tls_current(), *d = desc_of(tp), *my = desc_of(me);
	if (!fresh) /* the rest of the descriptor as in a new thread: zero */
		memset(d + DESC_COPY_TO, 0, g.desc_size - DESC_COPY_TO);
#if TLS_VARIANT_II
	*(void **)tp = tp;
	*(void **)(tp + TP_SELF) = tp;
#else
	*(void **)(tp + TP_PRIVATE) = NULL;
#endif
	memcpy(d + DESC_COPY_FROM, my + DESC_COPY_FROM, DESC_COPY_TO - DESC_COPY_FROM);
	*(int *)(d + DESC_GSCOPE) = 0;
	*(int *)(d + g.tid_off) = WF_TLS_TID_BASE - 1; /* until wf_tls_set_tid */
	/* In no list of glibc's, but an empty one: fork's child unlinks the
	 * calling thread from its list (nptl's reclaim_stacks). */
	void **link = (void **)(d + g.list_off);
	link[0] = link[1] = link;
	if (g.rseq_off) {
		int cpu = *(int *)(me + g.rseq_off);
		*(int *)(tp + g.rseq_off) = cpu < 0 ? cpu : -1; /* "not registered" */
	}
	if (fresh) {
		/* What glibc's thread start does in the thread (__ctype_init):
		 * the ctype tables' pointers for the global locale, which a
		 * reused block keeps (wf_tls_exiting puts the locale back). */
		wf_tls_install(tp);
		uselocale(LC_GLOBAL_LOCALE);
		wf_tls_install(me);
	}
	return tp;
}

void wf_tls_set_tid(void *tp, int tid)
{
	*(int *)(desc_of(tp) + g.tid_off) = tid;
}

static void pool_push(char *tp, uintptr_t tag)
{
	wf_spin_lock(&g.lock);
	*(uintptr_t *)(tp + TP_LINK) = g.pool;
	g.pool = (uintptr_t)tp | tag;
	wf_spin_unlock(&g.lock);
}

static uintptr_t pool_pop(void)
{
	wf_spin_lock(&g.lock);
	uintptr_t e = g.pool;
	if (e)
		g.pool = *(uintptr_t *)((e & ~(uintptr_t)FRESH) + TP_LINK);
	wf_spin_unlock(&g.lock);
	return e;
}

void *wf_tls_alloc(wf_tls_cache_t *c)
{
	uintptr_t e;
	if (c && c->n > 0)
		e = (uintptr_t)c->v[--c->n];
	else if (!(e = pool_pop())) {
		char *b = carve();
		if (!b)
			return NULL;
		e = (uintptr_t)b | FRESH;
	}
	char *tp = (char *)(e & ~(uintptr_t)FRESH);
	if (!setup(tp, e & FRESH)) {
		pool_push(tp, e & FRESH); /* set up nothing: as it was */
		return NULL;
	}
	return tp;
}

void wf_tls_release(wf_tls_cache_t *c, void *tp)
{
	/* Its DTV and dynamic blocks stay until the block is reused (setup). */
	if (c && c->n < WF_TLS_CACHE)
		c->v[c->n++] = tp;
	else
		pool_push(tp, 0);
}

void wf_tls_cache_drain(wf_tls_cache_t *c)
{
	while (c->n > 0)
		pool_push(c->v[--c->n], 0);
}

void wf_tls_exiting(void)
{
	g.call_dtors();
	if (uselocale((locale_t)0) != LC_GLOBAL_LOCALE)
		uselocale(LC_GLOBAL_LOCALE);
}

void wf_tls_fork(int phase)
{
	wf_spin_fork(&g.lock, phase);
}
