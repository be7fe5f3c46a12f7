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
#endif
/* Jump into the newest glibc-style cleanup frame of u (no return;
 * unwind.c). The exit path reaches it through wf_unwind_hook. */
struct wf_ult;
WF_HIDDEN _Noreturn void wf_px_unwind(struct wf_ult *u);

/* Lock and unlock a mutex of protocol PTHREAD_PRIO_INHERIT or
 * PTHREAD_PRIO_PROTECT (prio_mutex.c). how: */
enum { WF_PX_LOCK, WF_PX_TRY, WF_PX_CLOCK };
WF_HIDDEN int wf_px_prio_lock(pthread_mutex_t *m, int how, clockid_t clock,
			      const struct timespec *t);
WF_HIDDEN int wf_px_prio_unlock(pthread_mutex_t *m);
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
/* Has m a protocol other than PTHREAD_PRIO_NONE? */
static inline int wf_px_has_protocol(const pthread_mutex_t *m)
{
	return m && wf_px_protocol((const weft_mutex_t *)m) != PTHREAD_PRIO_NONE;
}

#endif
