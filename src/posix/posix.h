/* The POSIX threads layer: pthread_* on weft's ULTs.
 *
 * One set of sources, two builds:
 *   libweft        WF_PX(pthread_create) is weft_px_pthread_create; programs
 *                  reach it through the wrapper headers in
 *                  include/weft/compat (pkg-config weft-pthread), which
 *                  rename the calls;
 *   libweft-pthread.so  (WEFT_PRELOAD) WF_PX(pthread_create) is
 *                  pthread_create itself, so LD_PRELOAD puts it in front of
 *                  glibc's for an unmodified binary.
 *
 * Storage: every object lives in glibc's own type (pthread_mutex_t holds a
 * weft_mutex_t, ...), so system headers never conflict, static initializers
 * work, and objects shared with code that was not rebuilt keep their size.
 * The _Static_asserts next to each family check that weft's state fits.
 *
 * Thread ids: a pthread_t made by this layer is a weft_t with the top bit
 * set (WF_PX_ULT); any other value is a kernel thread weft did not make
 * (a worker, a thread glibc made for itself), handled by glibc.
 */
#ifndef WF_POSIX_H
#define WF_POSIX_H

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>

#include <weft.h>

#include "util/sys.h"
#include "util/util.h"

#ifdef WEFT_PRELOAD
#define WF_PX(name) name
#else
#define WF_PX(name) weft_px_##name
#endif
#define WF_PX_API __attribute__((visibility("default")))

#define WF_PX_ULT (1ull << 63)

static inline pthread_t wf_px_from_weft(weft_t t)
{
	return (pthread_t)(t | WF_PX_ULT);
}

static inline int wf_px_is_ult(pthread_t p)
{
	return ((uint64_t)p & WF_PX_ULT) != 0;
}

static inline weft_t wf_px_to_weft(pthread_t p)
{
	return (weft_t)((uint64_t)p & ~WF_PX_ULT);
}

/* Start weft if needed (the preload build starts it before main). */
WF_HIDDEN int wf_px_ensure(void);
#ifdef WEFT_PRELOAD
/* The next definition of name after libweft-pthread.so's (glibc's), or
 * abort naming it (preload.c). */
WF_HIDDEN void *wf_px_next_symbol(const char *name);
/* f, a pointer of type ret(*)params: libc's `name`, looked up once (every
 * thread that races stores the same pointer, whole). */
#define WF_REAL(f, ret, name, params)                                   \
	static ret(*f##_real_) params;                                  \
	ret(*f) params = __atomic_load_n(&f##_real_, __ATOMIC_RELAXED); \
	if (unlikely(!f)) {                                             \
		f = (ret(*) params)wf_px_next_symbol(#name);            \
		__atomic_store_n(&f##_real_, f, __ATOMIC_RELAXED);      \
	}
/* glibc's `name`, in either build: libweft-pthread.so defines the name
 * itself and looks glibc's up; libweft defines weft_px_<name> and calls
 * the plain one. */
#define WF_GLIBC(f, ret, name, params) WF_REAL(f, ret, name, params)
#else
#define WF_GLIBC(f, ret, name, params) ret(*f) params = name;
#endif
/* Jump into the newest glibc-style cleanup frame of u (no return;
 * unwind.c). The exit path reaches it through wf_unwind_hook. */
struct wf_ult;
WF_HIDDEN _Noreturn void wf_px_unwind(struct wf_ult *u);

/* Lock and unlock a mutex of protocol PTHREAD_PRIO_INHERIT or
 * PTHREAD_PRIO_PROTECT (prio_mutex.c). how: */
enum { WF_PX_LOCK, WF_PX_TRY, WF_PX_CLOCK };
/* More operations on process-shared objects (pshared.c). */
enum {
	WF_PX_UNLOCK = 3,
	WF_PX_DESTROY,
	WF_PX_SIGNAL,
	WF_PX_BROADCAST,
	WF_PX_RDLOCK,
	WF_PX_WRLOCK,
	WF_PX_TRYRD,
	WF_PX_TRYWR,
	WF_PX_WAIT,
	WF_PX_POST,
	WF_PX_GETVALUE
};
WF_HIDDEN int wf_px_prio_lock(pthread_mutex_t *m, int how, clockid_t clock,
			      const struct timespec *t);
WF_HIDDEN int wf_px_prio_unlock(pthread_mutex_t *m);
/* Process-shared objects are glibc's, made and used through glibc's own
 * calls (pshared.c has the design). wf_px_shared_*: is the object one? */
WF_HIDDEN int wf_px_shared_mutex(const pthread_mutex_t *m);
WF_HIDDEN int wf_px_shared_cond(const pthread_cond_t *c);
WF_HIDDEN int wf_px_shared_rwlock(const pthread_rwlock_t *l);
WF_HIDDEN int wf_px_shared_barrier(const pthread_barrier_t *b);
WF_HIDDEN int wf_px_shared_sem(const sem_t *s);
/* Clear the mark of a shared rwlock, barrier or semaphore in o (size bytes). */
WF_HIDDEN void wf_px_unmark(void *o, size_t size);
WF_HIDDEN int wf_px_shared_mutex_init(pthread_mutex_t *m, int type);
WF_HIDDEN int wf_px_shared_mutex_op(pthread_mutex_t *m, int op, clockid_t clock,
				    const struct timespec *t);
WF_HIDDEN int wf_px_shared_cond_init(pthread_cond_t *c, clockid_t clock);
/* timed: wait until t on clock (WF_PX_COND_CLOCK: c's own). EINVAL if m
 * is not process-shared too. */
#define WF_PX_COND_CLOCK ((clockid_t)-1)
WF_HIDDEN int wf_px_shared_cond_wait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock,
				     const struct timespec *t, int timed);
WF_HIDDEN int wf_px_shared_cond_op(pthread_cond_t *c, int op);
WF_HIDDEN int wf_px_shared_rwlock_init(pthread_rwlock_t *l, int kind);
/* RDLOCK/WRLOCK with t: until t on clock. */
WF_HIDDEN int wf_px_shared_rwlock_op(pthread_rwlock_t *l, int op, clockid_t clock,
				     const struct timespec *t);
WF_HIDDEN int wf_px_shared_barrier_init(pthread_barrier_t *b, unsigned count);
WF_HIDDEN int wf_px_shared_barrier_op(pthread_barrier_t *b, int op);
/* Semaphores return -1 and set errno, as sem_*(3). */
WF_HIDDEN int wf_px_shared_sem_init(sem_t *s, unsigned value);
WF_HIDDEN int wf_px_shared_sem_op(sem_t *s, int op, clockid_t clock, const struct timespec *t,
				  int *value);

/* A pthread_mutex_t holds a weft_mutex_t; its `reserved` field keeps the
 * POSIX protocol (bits 8-9, PTHREAD_PRIO_*) and priority ceiling (bits
 * 0-7), which psync.c sets and prio_mutex.c acts on. */
#define WF_PX_M(m) ((weft_mutex_t *)(m))
static inline int wf_px_protocol(const weft_mutex_t *m)
{
	return (m->reserved >> 8) & 3;
}
static inline int wf_px_ceiling(const weft_mutex_t *m)
{
	return m->reserved & 0xff;
}
static inline uint16_t wf_px_reserved(int protocol, int ceiling)
{
	return (uint16_t)((unsigned)protocol << 8 | (unsigned)ceiling);
}
/* Is m process-shared (glibc's, pshared.c) or has it a protocol? One test
 * on the lock path: glibc's pshared bit lies in weft's type field. */
static inline int wf_px_special(const pthread_mutex_t *m)
{
	const weft_mutex_t *w = (const weft_mutex_t *)m;
	return m && ((w->reserved & 0x300) | (w->type & 128));
}
/* Has m a protocol other than PTHREAD_PRIO_NONE? */
static inline int wf_px_has_protocol(const pthread_mutex_t *m)
{
	return m && wf_px_protocol((const weft_mutex_t *)m) != PTHREAD_PRIO_NONE;
}

#endif
