/* POSIX mutexes, condition variables, rwlocks, barriers, spinlocks and
 * semaphores on weft's primitives, kept in glibc's own types (posix.h). */
#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "posix/posix.h"
#include "sched/sched.h"
#include "sync/wait.h"

_Static_assert(sizeof(weft_mutex_t) <= sizeof(pthread_mutex_t), "mutex must fit");
_Static_assert(offsetof(weft_mutex_t, type) == offsetof(pthread_mutex_t, __data.__kind),
	       "glibc's static initializers set the kind: it must be weft's type");
_Static_assert(sizeof(weft_cond_t) <= sizeof(pthread_cond_t), "cond must fit");
_Static_assert(sizeof(weft_rwlock_t) <= offsetof(pthread_rwlock_t, __data.__flags),
	       "rwlock must fit below glibc's flags word");
_Static_assert(sizeof(weft_barrier_t) <= sizeof(pthread_barrier_t), "barrier must fit");
_Static_assert(sizeof(weft_spinlock_t) <= sizeof(pthread_spinlock_t), "spinlock must fit");
_Static_assert(sizeof(weft_sem_t) <= sizeof(sem_t), "semaphore must fit");
_Static_assert((int)PTHREAD_MUTEX_RECURSIVE == (int)WEFT_MUTEX_RECURSIVE &&
		       (int)PTHREAD_MUTEX_ERRORCHECK == (int)WEFT_MUTEX_ERRORCHECK &&
		       (int)PTHREAD_MUTEX_NORMAL == (int)WEFT_MUTEX_NORMAL,
	       "mutex types are glibc's kinds");
_Static_assert(PTHREAD_BARRIER_SERIAL_THREAD == WEFT_BARRIER_SERIAL_THREAD, "serial thread");
_Static_assert((int)PTHREAD_CANCEL_ENABLE == (int)WEFT_CANCEL_ENABLE &&
		       (int)PTHREAD_CANCEL_DISABLE == (int)WEFT_CANCEL_DISABLE,
	       "cancel states");

#define M(m)  WF_PX_M(m)
#define C(c)  ((weft_cond_t *)(c))
#define RW(l) ((weft_rwlock_t *)(l))

/* ---- mutex attributes: packed into glibc's 4-byte pthread_mutexattr_t ------------
 * bits 0-1 type, 2-3 protocol, 4 pshared, 8-15 priority ceiling, 31 initialised. */

enum {
	MA_TYPE = 0x3,
	MA_PROTO_SHIFT = 2,
	MA_PSHARED = 1u << 4,
	MA_CEIL_SHIFT = 8,
	MA_INIT = 1u << 31
};

/* The word of an initialised mutex or condvar attribute object (bit 31), or NULL. */
static uint32_t *attr_word(const void *a)
{
	uint32_t *w = (uint32_t *)a;
	return a && (*w & MA_INIT) ? w : NULL;
}

WF_PX_API int WF_PX(pthread_mutexattr_init)(pthread_mutexattr_t *a)
{
	if (!a)
		return EINVAL;
	memset(a, 0, sizeof *a);
	*(uint32_t *)a = MA_INIT;
	return 0;
}

WF_PX_API int WF_PX(pthread_mutexattr_destroy)(pthread_mutexattr_t *a)
{
	uint32_t *w = attr_word(a);
	if (!w)
		return EINVAL;
	*w = 0;
	return 0;
}

WF_PX_API int WF_PX(pthread_mutexattr_settype)(pthread_mutexattr_t *a, int type)
{
	uint32_t *w = attr_word(a);
	if (!w || type < PTHREAD_MUTEX_NORMAL || type > PTHREAD_MUTEX_ERRORCHECK)
		return EINVAL;
	*w = (*w & ~(uint32_t)MA_TYPE) | (uint32_t)type;
	return 0;
}

WF_PX_API int WF_PX(pthread_mutexattr_gettype)(const pthread_mutexattr_t *a, int *type)
{
	uint32_t *w = attr_word(a);
	if (!w || !type)
		return EINVAL;
	*type = (int)(*w & MA_TYPE);
	return 0;
}

/* pshared: a mutex made with it is glibc's, which waits across processes
 * (pshared.c). */
WF_PX_API int WF_PX(pthread_mutexattr_setpshared)(pthread_mutexattr_t *a, int v)
{
	uint32_t *w = attr_word(a);
	if (!w || (v != PTHREAD_PROCESS_PRIVATE && v != PTHREAD_PROCESS_SHARED))
		return EINVAL;
	*w = (*w & ~MA_PSHARED) | (v == PTHREAD_PROCESS_SHARED ? MA_PSHARED : 0);
	return 0;
}

WF_PX_API int WF_PX(pthread_mutexattr_getpshared)(const pthread_mutexattr_t *a, int *v)
{
	uint32_t *w = attr_word(a);
	if (!w || !v)
		return EINVAL;
	*v = *w & MA_PSHARED ? PTHREAD_PROCESS_SHARED : PTHREAD_PROCESS_PRIVATE;
	return 0;
}

/* Protocols and ceilings: PTHREAD_PRIO_INHERIT and PTHREAD_PRIO_PROTECT
 * mutexes lend their owner a priority (prio_mutex.c). */
WF_PX_API int WF_PX(pthread_mutexattr_setprotocol)(pthread_mutexattr_t *a, int p)
{
	uint32_t *w = attr_word(a);
	if (!w ||
	    (p != PTHREAD_PRIO_NONE && p != PTHREAD_PRIO_INHERIT && p != PTHREAD_PRIO_PROTECT))
		return EINVAL;
	*w = (*w & ~(3u << MA_PROTO_SHIFT)) | ((uint32_t)p << MA_PROTO_SHIFT);
	return 0;
}

WF_PX_API int WF_PX(pthread_mutexattr_getprotocol)(const pthread_mutexattr_t *a, int *p)
{
	uint32_t *w = attr_word(a);
	if (!w || !p)
		return EINVAL;
	*p = (int)((*w >> MA_PROTO_SHIFT) & 3);
	return 0;
}

static int valid_ceiling(int c)
{
	return c >= sched_get_priority_min(SCHED_FIFO) && c <= sched_get_priority_max(SCHED_FIFO);
}

/* The ceiling an attribute holds; one never set is the lowest SCHED_FIFO
 * priority, as glibc's. */
static int ceiling_of_attr(uint32_t w)
{
	int c = (int)((w >> MA_CEIL_SHIFT) & 0xff);
	return c ? c : sched_get_priority_min(SCHED_FIFO);
}

WF_PX_API int WF_PX(pthread_mutexattr_setprioceiling)(pthread_mutexattr_t *a, int c)
{
	uint32_t *w = attr_word(a);
	if (!w || !valid_ceiling(c))
		return EINVAL;
	*w = (*w & ~(0xffu << MA_CEIL_SHIFT)) | ((uint32_t)c << MA_CEIL_SHIFT);
	return 0;
}

WF_PX_API int WF_PX(pthread_mutexattr_getprioceiling)(const pthread_mutexattr_t *a, int *c)
{
	uint32_t *w = attr_word(a);
	if (!w || !c)
		return EINVAL;
	*c = ceiling_of_attr(*w);
	return 0;
}

WF_PX_API int WF_PX(pthread_mutexattr_setrobust)(pthread_mutexattr_t *a, int r)
{
	if (!attr_word(a) || (r != PTHREAD_MUTEX_STALLED && r != PTHREAD_MUTEX_ROBUST))
		return EINVAL;
	return r == PTHREAD_MUTEX_ROBUST ? ENOTSUP : 0;
}

WF_PX_API int WF_PX(pthread_mutexattr_getrobust)(const pthread_mutexattr_t *a, int *r)
{
	if (!attr_word(a) || !r)
		return EINVAL;
	*r = PTHREAD_MUTEX_STALLED;
	return 0;
}

/* ---- mutexes ------------------------------------------------------------------------
 * weft_mutex_t.reserved keeps the protocol and ceiling (posix.h). */

WF_PX_API int WF_PX(pthread_mutex_init)(pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
	if (!m || (a && !attr_word(a)))
		return EINVAL;
	if (a && (*attr_word(a) & MA_PSHARED)) /* pshared.c */
		return wf_px_shared_mutex_init(m, (int)(*attr_word(a) & MA_TYPE));
	memset(m, 0, sizeof *m);
	weft_mutexattr_t wa;
	weft_mutexattr_init(&wa);
	if (a) {
		uint32_t w = *attr_word(a);
		weft_mutexattr_settype(&wa, (int)(w & MA_TYPE));
	}
	int e = weft_mutex_init(M(m), &wa);
	if (!e && a) {
		uint32_t w = *attr_word(a);
		M(m)->reserved =
			wf_px_reserved((int)((w >> MA_PROTO_SHIFT) & 3), ceiling_of_attr(w));
	}
	return e;
}

WF_PX_API int WF_PX(pthread_mutex_destroy)(pthread_mutex_t *m)
{
	if (unlikely(wf_px_shared_mutex(m)))
		return wf_px_shared_mutex_op(m, WF_PX_DESTROY, 0, NULL);
	return weft_mutex_destroy(M(m));
}

WF_PX_API int WF_PX(pthread_mutex_lock)(pthread_mutex_t *m)
{
	if (unlikely(wf_px_special(m)))
		return wf_px_shared_mutex(m) ? wf_px_shared_mutex_op(m, WF_PX_LOCK, 0, NULL)
					     : wf_px_prio_lock(m, WF_PX_LOCK, 0, NULL);
	return weft_mutex_lock(M(m));
}

WF_PX_API int WF_PX(pthread_mutex_trylock)(pthread_mutex_t *m)
{
	if (unlikely(wf_px_special(m)))
		return wf_px_shared_mutex(m) ? wf_px_shared_mutex_op(m, WF_PX_TRY, 0, NULL)
					     : wf_px_prio_lock(m, WF_PX_TRY, 0, NULL);
	return weft_mutex_trylock(M(m));
}

WF_PX_API int WF_PX(pthread_mutex_timedlock)(pthread_mutex_t *m, const struct timespec *t)
{
	if (unlikely(wf_px_shared_mutex(m)))
		return wf_px_shared_mutex_op(m, WF_PX_CLOCK, CLOCK_REALTIME, t);
	if (unlikely(wf_px_has_protocol(m)))
		return t ? wf_px_prio_lock(m, WF_PX_CLOCK, CLOCK_REALTIME, t) : EINVAL;
	return weft_mutex_timedlock(M(m), t);
}

WF_PX_API int WF_PX(pthread_mutex_clocklock)(pthread_mutex_t *m, clockid_t c,
					     const struct timespec *t)
{
	if (unlikely(wf_px_shared_mutex(m)))
		return wf_px_shared_mutex_op(m, WF_PX_CLOCK, c, t);
	if (unlikely(wf_px_has_protocol(m))) {
		if (!t || (c != CLOCK_MONOTONIC && c != CLOCK_REALTIME))
			return EINVAL;
		return wf_px_prio_lock(m, WF_PX_CLOCK, c, t);
	}
	return weft_mutex_clocklock(M(m), c, t);
}

WF_PX_API int WF_PX(pthread_mutex_unlock)(pthread_mutex_t *m)
{
	if (unlikely(wf_px_special(m)))
		return wf_px_shared_mutex(m) ? wf_px_shared_mutex_op(m, WF_PX_UNLOCK, 0, NULL)
					     : wf_px_prio_unlock(m);
	return weft_mutex_unlock(M(m));
}

/* As glibc: a ceiling belongs to a PTHREAD_PRIO_PROTECT mutex only. */
static int prio_protect(const pthread_mutex_t *m)
{
	return wf_px_protocol(M(m)) == PTHREAD_PRIO_PROTECT;
}

WF_PX_API int WF_PX(pthread_mutex_getprioceiling)(const pthread_mutex_t *m, int *c)
{
	if (!m || !c || !prio_protect(m))
		return EINVAL;
	*c = wf_px_ceiling(M(m));
	return 0;
}

WF_PX_API int WF_PX(pthread_mutex_setprioceiling)(pthread_mutex_t *m, int c, int *old)
{
	if (!m || !valid_ceiling(c) || !prio_protect(m))
		return EINVAL;
	int e = weft_mutex_lock(M(m)); /* POSIX: set while holding it */
	if (e)
		return e;
	if (old)
		*old = wf_px_ceiling(M(m));
	M(m)->reserved = wf_px_reserved(wf_px_protocol(M(m)), c);
	return weft_mutex_unlock(M(m));
}

WF_PX_API int WF_PX(pthread_mutex_consistent)(pthread_mutex_t *m)
{
	return EINVAL; /* no robust mutexes: none is ever inconsistent */
}

/* ---- condition variables: condattr bit 0 pshared, bits 1-7 the clock, bit 31 init */

WF_PX_API int WF_PX(pthread_condattr_init)(pthread_condattr_t *a)
{
	if (!a)
		return EINVAL;
	memset(a, 0, sizeof *a);
	*(uint32_t *)a = MA_INIT | ((uint32_t)CLOCK_REALTIME << 1);
	return 0;
}

WF_PX_API int WF_PX(pthread_condattr_destroy)(pthread_condattr_t *a)
{
	uint32_t *w = attr_word(a);
	if (!w)
		return EINVAL;
	*w = 0;
	return 0;
}

WF_PX_API int WF_PX(pthread_condattr_setclock)(pthread_condattr_t *a, clockid_t c)
{
	uint32_t *w = attr_word(a);
	if (!w || (c != CLOCK_REALTIME && c != CLOCK_MONOTONIC))
		return EINVAL;
	*w = (*w & ~(0x7fu << 1)) | ((uint32_t)c << 1);
	return 0;
}

WF_PX_API int WF_PX(pthread_condattr_getclock)(const pthread_condattr_t *a, clockid_t *c)
{
	uint32_t *w = attr_word(a);
	if (!w || !c)
		return EINVAL;
	*c = (clockid_t)((*w >> 1) & 0x7f);
	return 0;
}

WF_PX_API int WF_PX(pthread_condattr_setpshared)(pthread_condattr_t *a, int v)
{
	uint32_t *w = attr_word(a);
	if (!w || (v != PTHREAD_PROCESS_PRIVATE && v != PTHREAD_PROCESS_SHARED))
		return EINVAL;
	*w = (*w & ~1u) | (v == PTHREAD_PROCESS_SHARED);
	return 0;
}

WF_PX_API int WF_PX(pthread_condattr_getpshared)(const pthread_condattr_t *a, int *v)
{
	uint32_t *w = attr_word(a);
	if (!w || !v)
		return EINVAL;
	*v = *w & 1u ? PTHREAD_PROCESS_SHARED : PTHREAD_PROCESS_PRIVATE;
	return 0;
}

WF_PX_API int WF_PX(pthread_cond_init)(pthread_cond_t *c, const pthread_condattr_t *a)
{
	if (!c || (a && !attr_word(a)))
		return EINVAL;
	if (a && (*attr_word(a) & 1u)) /* process-shared: pshared.c */
		return wf_px_shared_cond_init(c, (clockid_t)((*attr_word(a) >> 1) & 0x7f));
	memset(c, 0, sizeof *c);
	weft_condattr_t wa;
	weft_condattr_init(&wa);
	if (a)
		weft_condattr_setclock(&wa, (clockid_t)((*attr_word(a) >> 1) & 0x7f));
	return weft_cond_init(C(c), &wa);
}

WF_PX_API int WF_PX(pthread_cond_destroy)(pthread_cond_t *c)
{
	if (unlikely(wf_px_shared_cond(c)))
		return wf_px_shared_cond_op(c, WF_PX_DESTROY);
	return weft_cond_destroy(C(c));
}

/* A process-shared condition variable waits with a process-shared mutex
 * (both glibc's, pshared.c), a weft one with a weft one: returns 1 with
 * the wait's answer in *rc if either is glibc's (EINVAL for a mix), 0 to
 * go on with weft's. timed: until t on clock (WF_PX_COND_CLOCK: the
 * condition variable's own). */
static int shared_wait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock,
		       const struct timespec *t, int timed, int *rc)
{
	if (likely(!wf_px_shared_cond(c) && !wf_px_special(m)))
		return 0;
	if (wf_px_shared_mutex(m) != wf_px_shared_cond(c))
		*rc = EINVAL;
	else if (wf_px_shared_cond(c))
		*rc = wf_px_shared_cond_wait(c, m, clock, t, timed);
	else
		return 0; /* a weft mutex with a protocol */
	return 1;
}

WF_PX_API int WF_PX(pthread_cond_wait)(pthread_cond_t *c, pthread_mutex_t *m)
{
	int rc;
	return shared_wait(c, m, 0, NULL, 0, &rc) ? rc : weft_cond_wait(C(c), M(m));
}

WF_PX_API int WF_PX(pthread_cond_timedwait)(pthread_cond_t *c, pthread_mutex_t *m,
					    const struct timespec *t)
{
	int rc;
	return shared_wait(c, m, WF_PX_COND_CLOCK, t, 1, &rc) ? rc
							      : weft_cond_timedwait(C(c), M(m), t);
}

WF_PX_API int WF_PX(pthread_cond_clockwait)(pthread_cond_t *c, pthread_mutex_t *m, clockid_t k,
					    const struct timespec *t)
{
	int rc;
	return shared_wait(c, m, k, t, 1, &rc) ? rc : weft_cond_clockwait(C(c), M(m), k, t);
}

WF_PX_API int WF_PX(pthread_cond_signal)(pthread_cond_t *c)
{
	if (unlikely(wf_px_shared_cond(c)))
		return wf_px_shared_cond_op(c, WF_PX_SIGNAL);
	return weft_cond_signal(C(c));
}

WF_PX_API int WF_PX(pthread_cond_broadcast)(pthread_cond_t *c)
{
	if (unlikely(wf_px_shared_cond(c)))
		return wf_px_shared_cond_op(c, WF_PX_BROADCAST);
	return weft_cond_broadcast(C(c));
}

/* ---- rwlocks ----------------------------------------------------------------------
 * rwlockattr: int kind (glibc's _np kinds), int pshared. glibc's
 * PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP sets its flags word,
 * which lies beyond weft's state: it is read as the preference. */

typedef struct {
	int kind, pshared;
} wf_px_rwattr_t;
_Static_assert(sizeof(wf_px_rwattr_t) <= sizeof(pthread_rwlockattr_t), "rwlockattr must fit");

static int pref_of_kind(int kind)
{
	/* As glibc: PREFER_WRITER_NP behaves as PREFER_READER_NP (recursive
	 * read locks would deadlock); only the non-recursive kind prefers writers. */
	return kind == PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP ? WEFT_RWLOCK_PREFER_WRITER
								    : WEFT_RWLOCK_PREFER_READER;
}

static weft_rwlock_t *rw(pthread_rwlock_t *l)
{
	if (l &&
	    __atomic_load_n(&l->__data.__flags, __ATOMIC_RELAXED) ==
		    PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP &&
	    __atomic_load_n(&RW(l)->pref, __ATOMIC_RELAXED) != WEFT_RWLOCK_PREFER_WRITER)
		__atomic_store_n(&RW(l)->pref, WEFT_RWLOCK_PREFER_WRITER, __ATOMIC_RELAXED);
	return RW(l);
}

WF_PX_API int WF_PX(pthread_rwlockattr_init)(pthread_rwlockattr_t *a)
{
	if (!a)
		return EINVAL;
	memset(a, 0, sizeof *a);
	return 0;
}

WF_PX_API int WF_PX(pthread_rwlockattr_destroy)(pthread_rwlockattr_t *a)
{
	return a ? 0 : EINVAL;
}

WF_PX_API int WF_PX(pthread_rwlockattr_setkind_np)(pthread_rwlockattr_t *a, int kind)
{
	if (!a || kind < PTHREAD_RWLOCK_PREFER_READER_NP ||
	    kind > PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP)
		return EINVAL;
	((wf_px_rwattr_t *)a)->kind = kind;
	return 0;
}

WF_PX_API int WF_PX(pthread_rwlockattr_getkind_np)(const pthread_rwlockattr_t *a, int *kind)
{
	if (!a || !kind)
		return EINVAL;
	*kind = ((const wf_px_rwattr_t *)a)->kind;
	return 0;
}

WF_PX_API int WF_PX(pthread_rwlockattr_setpshared)(pthread_rwlockattr_t *a, int v)
{
	if (!a || (v != PTHREAD_PROCESS_PRIVATE && v != PTHREAD_PROCESS_SHARED))
		return EINVAL;
	((wf_px_rwattr_t *)a)->pshared = v;
	return 0;
}

WF_PX_API int WF_PX(pthread_rwlockattr_getpshared)(const pthread_rwlockattr_t *a, int *v)
{
	if (!a || !v)
		return EINVAL;
	*v = ((const wf_px_rwattr_t *)a)->pshared;
	return 0;
}

WF_PX_API int WF_PX(pthread_rwlock_init)(pthread_rwlock_t *l, const pthread_rwlockattr_t *a)
{
	if (!l)
		return EINVAL;
	if (a && ((const wf_px_rwattr_t *)a)->pshared == PTHREAD_PROCESS_SHARED)
		return wf_px_shared_rwlock_init(l,
						((const wf_px_rwattr_t *)a)->kind); /* pshared.c */
	memset(l, 0, sizeof *l);
	weft_rwlockattr_t wa;
	weft_rwlockattr_init(&wa);
	if (a)
		weft_rwlockattr_setpref(&wa, pref_of_kind(((const wf_px_rwattr_t *)a)->kind));
	return weft_rwlock_init(RW(l), &wa);
}

WF_PX_API int WF_PX(pthread_rwlock_destroy)(pthread_rwlock_t *l)
{
	if (unlikely(wf_px_shared_rwlock(l)))
		return wf_px_shared_rwlock_op(l, WF_PX_DESTROY, 0, NULL);
	/* A lock still held (a reader that exited without unlocking) is
	 * destroyed without complaint, as glibc's is: POSIX.1-2017 made that
	 * undefined and dropped its EBUSY. One that threads wait on is not. */
	return wf_rwlock_destroy(rw(l), 1);
}

WF_PX_API int WF_PX(pthread_rwlock_rdlock)(pthread_rwlock_t *l)
{
	if (unlikely(wf_px_shared_rwlock(l)))
		return wf_px_shared_rwlock_op(l, WF_PX_RDLOCK, 0, NULL);
	return weft_rwlock_rdlock(rw(l));
}

WF_PX_API int WF_PX(pthread_rwlock_tryrdlock)(pthread_rwlock_t *l)
{
	if (unlikely(wf_px_shared_rwlock(l)))
		return wf_px_shared_rwlock_op(l, WF_PX_TRYRD, 0, NULL);
	return weft_rwlock_tryrdlock(rw(l));
}

WF_PX_API int WF_PX(pthread_rwlock_timedrdlock)(pthread_rwlock_t *l, const struct timespec *t)
{
	if (unlikely(wf_px_shared_rwlock(l)))
		return wf_px_shared_rwlock_op(l, WF_PX_RDLOCK, CLOCK_REALTIME, t);
	return weft_rwlock_timedrdlock(rw(l), t);
}

WF_PX_API int WF_PX(pthread_rwlock_clockrdlock)(pthread_rwlock_t *l, clockid_t c,
						const struct timespec *t)
{
	if (unlikely(wf_px_shared_rwlock(l)))
		return wf_px_shared_rwlock_op(l, WF_PX_RDLOCK, c, t);
	return weft_rwlock_clockrdlock(rw(l), c, t);
}

WF_PX_API int WF_PX(pthread_rwlock_wrlock)(pthread_rwlock_t *l)
{
	if (unlikely(wf_px_shared_rwlock(l)))
		return wf_px_shared_rwlock_op(l, WF_PX_WRLOCK, 0, NULL);
	return weft_rwlock_wrlock(rw(l));
}

WF_PX_API int WF_PX(pthread_rwlock_trywrlock)(pthread_rwlock_t *l)
{
	if (unlikely(wf_px_shared_rwlock(l)))
		return wf_px_shared_rwlock_op(l, WF_PX_TRYWR, 0, NULL);
	return weft_rwlock_trywrlock(rw(l));
}

WF_PX_API int WF_PX(pthread_rwlock_timedwrlock)(pthread_rwlock_t *l, const struct timespec *t)
{
	if (unlikely(wf_px_shared_rwlock(l)))
		return wf_px_shared_rwlock_op(l, WF_PX_WRLOCK, CLOCK_REALTIME, t);
	return weft_rwlock_timedwrlock(rw(l), t);
}

WF_PX_API int WF_PX(pthread_rwlock_clockwrlock)(pthread_rwlock_t *l, clockid_t c,
						const struct timespec *t)
{
	if (unlikely(wf_px_shared_rwlock(l)))
		return wf_px_shared_rwlock_op(l, WF_PX_WRLOCK, c, t);
	return weft_rwlock_clockwrlock(rw(l), c, t);
}

WF_PX_API int WF_PX(pthread_rwlock_unlock)(pthread_rwlock_t *l)
{
	if (unlikely(wf_px_shared_rwlock(l)))
		return wf_px_shared_rwlock_op(l, WF_PX_UNLOCK, 0, NULL);
	return weft_rwlock_unlock(rw(l));
}

/* ---- barriers -------------------------------------------------------------------- */

WF_PX_API int WF_PX(pthread_barrierattr_init)(pthread_barrierattr_t *a)
{
	if (!a)
		return EINVAL;
	memset(a, 0, sizeof *a);
	return 0;
}

WF_PX_API int WF_PX(pthread_barrierattr_destroy)(pthread_barrierattr_t *a)
{
	return a ? 0 : EINVAL;
}

WF_PX_API int WF_PX(pthread_barrierattr_setpshared)(pthread_barrierattr_t *a, int v)
{
	if (!a || (v != PTHREAD_PROCESS_PRIVATE && v != PTHREAD_PROCESS_SHARED))
		return EINVAL;
	*(int *)a = v;
	return 0;
}

WF_PX_API int WF_PX(pthread_barrierattr_getpshared)(const pthread_barrierattr_t *a, int *v)
{
	if (!a || !v)
		return EINVAL;
	*v = *(const int *)a;
	return 0;
}

WF_PX_API int WF_PX(pthread_barrier_init)(pthread_barrier_t *b, const pthread_barrierattr_t *a,
					  unsigned n)
{
	if (b && a && *(const int *)a == PTHREAD_PROCESS_SHARED)
		return n ? wf_px_shared_barrier_init(b, n) : EINVAL; /* pshared.c */
	if (b)
		wf_px_unmark(b, sizeof *b);
	return weft_barrier_init((weft_barrier_t *)b, NULL, n);
}

WF_PX_API int WF_PX(pthread_barrier_destroy)(pthread_barrier_t *b)
{
	if (unlikely(wf_px_shared_barrier(b)))
		return wf_px_shared_barrier_op(b, WF_PX_DESTROY);
	return weft_barrier_destroy((weft_barrier_t *)b);
}

WF_PX_API int WF_PX(pthread_barrier_wait)(pthread_barrier_t *b)
{
	if (unlikely(wf_px_shared_barrier(b)))
		return wf_px_shared_barrier_op(b, WF_PX_WAIT);
	return weft_barrier_wait((weft_barrier_t *)b);
}

/* ---- spinlocks ------------------------------------------------------------------- */

WF_PX_API int WF_PX(pthread_spin_init)(pthread_spinlock_t *l, int pshared)
{
	return weft_spin_init((weft_spinlock_t *)l, 0); /* pshared ignored, as glibc */
}

WF_PX_API int WF_PX(pthread_spin_destroy)(pthread_spinlock_t *l)
{
	return weft_spin_destroy((weft_spinlock_t *)l);
}

WF_PX_API int WF_PX(pthread_spin_lock)(pthread_spinlock_t *l)
{
	return weft_spin_lock((weft_spinlock_t *)l);
}

WF_PX_API int WF_PX(pthread_spin_trylock)(pthread_spinlock_t *l)
{
	return weft_spin_trylock((weft_spinlock_t *)l);
}

WF_PX_API int WF_PX(pthread_spin_unlock)(pthread_spinlock_t *l)
{
	return weft_spin_unlock((weft_spinlock_t *)l);
}

/* ---- unnamed semaphores: -1 and errno, as sem_*(3) ------------------------------- */

static int sem_rc(int e)
{
	if (!e)
		return 0;
	errno = e;
	return -1;
}

/* A process-shared one is glibc's (pshared.c). */
WF_PX_API int WF_PX(sem_init)(sem_t *s, int pshared, unsigned v)
{
	if (s && pshared)
		return wf_px_shared_sem_init(s, v);
	if (s)
		wf_px_unmark(s, sizeof *s);
	return sem_rc(weft_sem_init((weft_sem_t *)s, 0, v));
}

WF_PX_API int WF_PX(sem_destroy)(sem_t *s)
{
	if (unlikely(wf_px_shared_sem(s)))
		return wf_px_shared_sem_op(s, WF_PX_DESTROY, 0, NULL, NULL);
	return sem_rc(weft_sem_destroy((weft_sem_t *)s));
}

WF_PX_API int WF_PX(sem_wait)(sem_t *s)
{
	if (unlikely(wf_px_shared_sem(s)))
		return wf_px_shared_sem_op(s, WF_PX_WAIT, 0, NULL, NULL);
	/* Interrupted by handlers installed with SA_RESTART, glibc's sem_wait
	 * goes on waiting (the kernel restarts its futex wait). */
	wf_ult_t *self = wf_self();
	if (self)
		self->sig_ran = 0;
	int e;
	while ((e = weft_sem_wait((weft_sem_t *)s)) == EINTR && self && wf_sig_restarts(self))
		self->sig_ran = 0;
	return sem_rc(e);
}

WF_PX_API int WF_PX(sem_trywait)(sem_t *s)
{
	if (unlikely(wf_px_shared_sem(s)))
		return wf_px_shared_sem_op(s, WF_PX_TRY, 0, NULL, NULL);
	return sem_rc(weft_sem_trywait((weft_sem_t *)s));
}

WF_PX_API int WF_PX(sem_timedwait)(sem_t *s, const struct timespec *t)
{
	if (unlikely(wf_px_shared_sem(s)))
		return wf_px_shared_sem_op(s, WF_PX_WAIT, CLOCK_REALTIME, t, NULL);
	return sem_rc(weft_sem_timedwait((weft_sem_t *)s, t));
}

WF_PX_API int WF_PX(sem_clockwait)(sem_t *s, clockid_t c, const struct timespec *t)
{
	if (unlikely(wf_px_shared_sem(s)))
		return wf_px_shared_sem_op(s, WF_PX_WAIT, c, t, NULL);
	return sem_rc(weft_sem_clockwait((weft_sem_t *)s, c, t));
}

WF_PX_API int WF_PX(sem_post)(sem_t *s)
{
	if (unlikely(wf_px_shared_sem(s)))
		return wf_px_shared_sem_op(s, WF_PX_POST, 0, NULL, NULL);
	return sem_rc(weft_sem_post((weft_sem_t *)s));
}

WF_PX_API int WF_PX(sem_getvalue)(sem_t *s, int *v)
{
	if (unlikely(wf_px_shared_sem(s)))
		return wf_px_shared_sem_op(s, WF_PX_GETVALUE, 0, NULL, v);
	return sem_rc(weft_sem_getvalue((weft_sem_t *)s, v));
}

/* ---- cancellation ------------------------------------------------------------------ */

WF_PX_API int WF_PX(pthread_cancel)(pthread_t t)
{
	if (!wf_px_is_ult(t))
		return ESRCH;
	return weft_cancel(wf_px_to_weft(t));
}

WF_PX_API void WF_PX(pthread_testcancel)(void)
{
	weft_testcancel();
}

WF_PX_API int WF_PX(pthread_setcancelstate)(int state, int *old)
{
	return weft_setcancelstate(state, old);
}

/* Asynchronous cancellation of a thread that runs is acted on at once, at
 * the next instruction where a preemption is safe (src/sched/preempt.c);
 * with preemption off, at the next cancellation point, like deferred
 * (docs/posix-coverage.md). */
static __thread int px_canceltype;

WF_PX_API int WF_PX(pthread_setcanceltype)(int type, int *old)
{
	if (type != PTHREAD_CANCEL_DEFERRED && type != PTHREAD_CANCEL_ASYNCHRONOUS)
		return EINVAL;
	if (old)
		*old = px_canceltype;
	px_canceltype = type;
	/* A ULT's: asynchronous acts at once (src/sync/cancel.c); a foreign
	 * thread's type is only kept. */
	weft_setcanceltype(type == PTHREAD_CANCEL_ASYNCHRONOUS ? WEFT_CANCEL_ASYNCHRONOUS
							       : WEFT_CANCEL_DEFERRED,
			   NULL);
	return 0;
}
