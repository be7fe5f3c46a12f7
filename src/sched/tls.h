/* Thread control blocks per ULT: the interface. Every assumption about
 * glibc's layout, and how each is checked, is written down at the top of
 * src/sched/tls.c. */
#ifndef WF_TLS_H
#define WF_TLS_H

#include <errno.h>
#include <stddef.h>

#include <pthread.h>

#include "util/sys.h"
#include "util/util.h"

#if defined(__x86_64__)
#include <asm/prctl.h>
#endif

/* A worker's cache of released blocks (wf_tls_release): no locks. Owned
 * by the worker's kernel thread. */
#define WF_TLS_CACHE 32
typedef struct wf_tls_cache {
	void *v[WF_TLS_CACHE];
	int n;
} wf_tls_cache_t;

/* Can ULTs have thread pointers of their own in this process? Checks every
 * assumption once (the first call decides): 0, or ENOTSUP with *why (if
 * why is not NULL) naming the one that failed. Thread-safe. */
WF_HIDDEN int wf_tls_probe(const char **why);

/* The calling context's thread pointer (x86-64: the fs base, which the
 * TCB's first word holds; aarch64: tpidr_el0). Volatile: the compiler must
 * not reuse a value read before a wf_tls_install. */
static inline void *wf_tls_current(void)
{
	void *tp;
#if defined(__x86_64__)
	__asm__ __volatile__("mov %%fs:0, %0" : "=r"(tp));
#elif defined(__aarch64__)
	__asm__ __volatile__("mrs %0, tpidr_el0" : "=r"(tp));
#else
	tp = __builtin_thread_pointer();
#endif
	return tp;
}

/* Make tp the calling kernel thread's thread pointer. Only after
 * wf_tls_probe returned 0, for a tp that wf_tls_alloc returned or that
 * wf_tls_current returned on some kernel thread. */
WF_HIDDEN extern int wf_tls_wrfsbase; /* the CPU and kernel allow wrfsbase */
static inline void wf_tls_install(void *tp)
{
#if defined(__x86_64__)
	if (likely(wf_tls_wrfsbase))
		__asm__ __volatile__("wrfsbase %0" ::"r"(tp) : "memory");
	else
		syscall(SYS_arch_prctl, ARCH_SET_FS, tp);
#elif defined(__aarch64__)
	__asm__ __volatile__("msr tpidr_el0, %0" ::"r"(tp) : "memory");
#else
	(void)tp;
	__builtin_trap(); /* wf_tls_probe refuses every other target */
#endif
}

/* The thread pointer of the glibc thread t (a kernel thread's pthread_t):
 * t itself on x86-64 (TLS variant II), just above t's descriptor on
 * aarch64. The distance is the same for every thread; it is read off the
 * calling one. */
static inline void *wf_tls_of_thread(pthread_t t)
{
	return (char *)t + ((char *)wf_tls_current() - (char *)WF_SYS(pthread_self)());
}
/* The glibc thread (pthread_t) whose thread pointer is tp. */
static inline pthread_t wf_tls_thread_of(void *tp)
{
	return (pthread_t)((char *)tp -
			   ((char *)wf_tls_current() - (char *)WF_SYS(pthread_self)()));
}

/* A new thread control block with its static TLS, initialised as glibc
 * initialises a new thread's (its modules' TLS images, a dynamic-TLS
 * vector, the stack-protector and pointer-guard words of the calling
 * thread). Returns its thread pointer, or NULL (ENOMEM). c: the caller's
 * worker's cache, or NULL. Only after wf_tls_probe returned 0. */
WF_HIDDEN void *wf_tls_alloc(wf_tls_cache_t *c);
/* The thread id glibc's code reads in a block (tls.c): WF_TLS_TID_BASE +
 * a number unique among the live ULTs with blocks (their registry slot). */
#define WF_TLS_TID_BASE (1 << 30)
WF_HIDDEN void wf_tls_set_tid(void *tp, int tid);
/* Give back a block from wf_tls_alloc, installed nowhere any more. */
WF_HIDDEN void wf_tls_release(wf_tls_cache_t *c, void *tp);
/* Move a worker's cache to the global pool (the worker stops). */
WF_HIDDEN void wf_tls_cache_drain(wf_tls_cache_t *c);
/* Around a fork (enum wf_fork_phase): the global pool's lock. */
WF_HIDDEN void wf_tls_fork(int phase);
/* The last acts of a thread with a block of its own, on that thread, after
 * its cleanup handlers and before its thread-specific data destructors
 * (glibc's order): C++ thread_local destructors, and the locale back to
 * the global one. */
WF_HIDDEN void wf_tls_exiting(void);

/* The distance from a thread pointer to the thread's copy of a variable
 * of static TLS (one this library or the executable defines with the
 * initial-exec model): the same for every thread. */
static inline ptrdiff_t wf_tls_offset_of(const void *var)
{
	return (const char *)var - (const char *)wf_tls_current();
}

/* errno's location under thread pointer tp. */
static inline int *wf_tls_errno_in(void *tp)
{
	return (int *)((char *)tp + wf_tls_offset_of(&errno));
}

#endif
