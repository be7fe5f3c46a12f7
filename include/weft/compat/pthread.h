/* weft's <pthread.h>: glibc's types and initializers, weft's threads.
 *
 * A program compiled with `pkg-config --cflags --libs weft-pthread` finds
 * this header before glibc's: every pthread_* call below is renamed to its
 * weft_px_* twin in libweft, so the program's threads are weft ULTs. The
 * objects keep glibc's types (PTHREAD_*_INITIALIZER work unchanged).
 * pthread_cleanup_push/pop become weft's, so that weft runs them on
 * cancellation and pthread_exit. See docs/posix-coverage.md for what each
 * call does and does not honour.
 */
#ifndef WEFT_COMPAT_PTHREAD_H
#define WEFT_COMPAT_PTHREAD_H

#include_next <pthread.h>

#include <weft/sync.h>

#ifdef __cplusplus
extern "C" {
#endif

extern int weft_px_pthread_attr_destroy(pthread_attr_t *a);
extern int weft_px_pthread_attr_getdetachstate(const pthread_attr_t *a, int *out);
extern int weft_px_pthread_attr_getguardsize(const pthread_attr_t *a, size_t *out);
extern int weft_px_pthread_attr_getinheritsched(const pthread_attr_t *a, int *out);
extern int weft_px_pthread_attr_getschedparam(const pthread_attr_t *a, struct sched_param *p);
extern int weft_px_pthread_attr_getschedpolicy(const pthread_attr_t *a, int *out);
extern int weft_px_pthread_attr_getscope(const pthread_attr_t *a, int *out);
extern int weft_px_pthread_attr_getstack(const pthread_attr_t *a, void **addr, size_t *n);
extern int weft_px_pthread_attr_getstacksize(const pthread_attr_t *a, size_t *n);
extern int weft_px_pthread_attr_init(pthread_attr_t *a);
extern int weft_px_pthread_attr_setdetachstate(pthread_attr_t *a, int v);
extern int weft_px_pthread_attr_setguardsize(pthread_attr_t *a, size_t n);
extern int weft_px_pthread_attr_setinheritsched(pthread_attr_t *a, int v);
extern int weft_px_pthread_attr_setschedparam(pthread_attr_t *a, const struct sched_param *p);
extern int weft_px_pthread_attr_setschedpolicy(pthread_attr_t *a, int policy);
extern int weft_px_pthread_attr_setscope(pthread_attr_t *a, int v);
extern int weft_px_pthread_attr_setstack(pthread_attr_t *a, void *addr, size_t n);
extern int weft_px_pthread_attr_setstacksize(pthread_attr_t *a, size_t n);
extern int weft_px_pthread_barrier_destroy(pthread_barrier_t *b);
extern int weft_px_pthread_barrier_init(pthread_barrier_t *b, const pthread_barrierattr_t *a,
					unsigned n);
extern int weft_px_pthread_barrier_wait(pthread_barrier_t *b);
extern int weft_px_pthread_barrierattr_destroy(pthread_barrierattr_t *a);
extern int weft_px_pthread_barrierattr_getpshared(const pthread_barrierattr_t *a, int *v);
extern int weft_px_pthread_barrierattr_init(pthread_barrierattr_t *a);
extern int weft_px_pthread_barrierattr_setpshared(pthread_barrierattr_t *a, int v);
extern int weft_px_pthread_cancel(pthread_t t);
extern int weft_px_pthread_cond_broadcast(pthread_cond_t *c);
extern int weft_px_pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t k,
					  const struct timespec *t);
extern int weft_px_pthread_cond_destroy(pthread_cond_t *c);
extern int weft_px_pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *a);
extern int weft_px_pthread_cond_signal(pthread_cond_t *c);
extern int weft_px_pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
					  const struct timespec *t);
extern int weft_px_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m);
extern int weft_px_pthread_condattr_destroy(pthread_condattr_t *a);
extern int weft_px_pthread_condattr_getclock(const pthread_condattr_t *a, clockid_t *c);
extern int weft_px_pthread_condattr_getpshared(const pthread_condattr_t *a, int *v);
extern int weft_px_pthread_condattr_init(pthread_condattr_t *a);
extern int weft_px_pthread_condattr_setclock(pthread_condattr_t *a, clockid_t c);
extern int weft_px_pthread_condattr_setpshared(pthread_condattr_t *a, int v);
extern int weft_px_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *),
				  void *arg);
extern int weft_px_pthread_detach(pthread_t t);
extern int weft_px_pthread_equal(pthread_t a, pthread_t b);
extern void weft_px_pthread_exit(void *ret) __attribute__((__noreturn__));
extern int weft_px_pthread_getconcurrency(void);
extern int weft_px_pthread_getname_np(pthread_t t, char *buf, size_t n);
extern void *weft_px_pthread_getspecific(pthread_key_t k);
extern int weft_px_pthread_join(pthread_t t, void **ret);
extern int weft_px_pthread_key_create(pthread_key_t *k, void (*dtor)(void *));
extern int weft_px_pthread_key_delete(pthread_key_t k);
extern int weft_px_pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t c,
					   const struct timespec *t);
extern int weft_px_pthread_mutex_consistent(pthread_mutex_t *m);
extern int weft_px_pthread_mutex_destroy(pthread_mutex_t *m);
extern int weft_px_pthread_mutex_getprioceiling(const pthread_mutex_t *m, int *c);
extern int weft_px_pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a);
extern int weft_px_pthread_mutex_lock(pthread_mutex_t *m);
extern int weft_px_pthread_mutex_setprioceiling(pthread_mutex_t *m, int c, int *old);
extern int weft_px_pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *t);
extern int weft_px_pthread_mutex_trylock(pthread_mutex_t *m);
extern int weft_px_pthread_mutex_unlock(pthread_mutex_t *m);
extern int weft_px_pthread_mutexattr_destroy(pthread_mutexattr_t *a);
extern int weft_px_pthread_mutexattr_getprioceiling(const pthread_mutexattr_t *a, int *c);
extern int weft_px_pthread_mutexattr_getprotocol(const pthread_mutexattr_t *a, int *p);
extern int weft_px_pthread_mutexattr_getpshared(const pthread_mutexattr_t *a, int *v);
extern int weft_px_pthread_mutexattr_getrobust(const pthread_mutexattr_t *a, int *r);
extern int weft_px_pthread_mutexattr_gettype(const pthread_mutexattr_t *a, int *type);
extern int weft_px_pthread_mutexattr_init(pthread_mutexattr_t *a);
extern int weft_px_pthread_mutexattr_setprioceiling(pthread_mutexattr_t *a, int c);
extern int weft_px_pthread_mutexattr_setprotocol(pthread_mutexattr_t *a, int p);
extern int weft_px_pthread_mutexattr_setpshared(pthread_mutexattr_t *a, int v);
extern int weft_px_pthread_mutexattr_setrobust(pthread_mutexattr_t *a, int r);
extern int weft_px_pthread_mutexattr_settype(pthread_mutexattr_t *a, int type);
extern int weft_px_pthread_once(pthread_once_t *o, void (*fn)(void));
extern int weft_px_pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t c,
					      const struct timespec *t);
extern int weft_px_pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t c,
					      const struct timespec *t);
extern int weft_px_pthread_rwlock_destroy(pthread_rwlock_t *l);
extern int weft_px_pthread_rwlock_init(pthread_rwlock_t *l, const pthread_rwlockattr_t *a);
extern int weft_px_pthread_rwlock_rdlock(pthread_rwlock_t *l);
extern int weft_px_pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *t);
extern int weft_px_pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *t);
extern int weft_px_pthread_rwlock_tryrdlock(pthread_rwlock_t *l);
extern int weft_px_pthread_rwlock_trywrlock(pthread_rwlock_t *l);
extern int weft_px_pthread_rwlock_unlock(pthread_rwlock_t *l);
extern int weft_px_pthread_rwlock_wrlock(pthread_rwlock_t *l);
extern int weft_px_pthread_rwlockattr_destroy(pthread_rwlockattr_t *a);
extern int weft_px_pthread_rwlockattr_getkind_np(const pthread_rwlockattr_t *a, int *kind);
extern int weft_px_pthread_rwlockattr_getpshared(const pthread_rwlockattr_t *a, int *v);
extern int weft_px_pthread_rwlockattr_init(pthread_rwlockattr_t *a);
extern int weft_px_pthread_rwlockattr_setkind_np(pthread_rwlockattr_t *a, int kind);
extern int weft_px_pthread_rwlockattr_setpshared(pthread_rwlockattr_t *a, int v);
extern pthread_t weft_px_pthread_self(void);
extern int weft_px_pthread_setcancelstate(int state, int *old);
extern int weft_px_pthread_setcanceltype(int type, int *old);
extern int weft_px_pthread_setconcurrency(int n);
extern int weft_px_pthread_setname_np(pthread_t t, const char *name);
extern int weft_px_pthread_setspecific(pthread_key_t k, const void *v);
extern int weft_px_pthread_spin_destroy(pthread_spinlock_t *l);
extern int weft_px_pthread_spin_init(pthread_spinlock_t *l, int pshared);
extern int weft_px_pthread_spin_lock(pthread_spinlock_t *l);
extern int weft_px_pthread_spin_trylock(pthread_spinlock_t *l);
extern int weft_px_pthread_spin_unlock(pthread_spinlock_t *l);
extern void weft_px_pthread_testcancel(void);

#define pthread_attr_destroy             weft_px_pthread_attr_destroy
#define pthread_attr_getdetachstate      weft_px_pthread_attr_getdetachstate
#define pthread_attr_getguardsize        weft_px_pthread_attr_getguardsize
#define pthread_attr_getinheritsched     weft_px_pthread_attr_getinheritsched
#define pthread_attr_getschedparam       weft_px_pthread_attr_getschedparam
#define pthread_attr_getschedpolicy      weft_px_pthread_attr_getschedpolicy
#define pthread_attr_getscope            weft_px_pthread_attr_getscope
#define pthread_attr_getstack            weft_px_pthread_attr_getstack
#define pthread_attr_getstacksize        weft_px_pthread_attr_getstacksize
#define pthread_attr_init                weft_px_pthread_attr_init
#define pthread_attr_setdetachstate      weft_px_pthread_attr_setdetachstate
#define pthread_attr_setguardsize        weft_px_pthread_attr_setguardsize
#define pthread_attr_setinheritsched     weft_px_pthread_attr_setinheritsched
#define pthread_attr_setschedparam       weft_px_pthread_attr_setschedparam
#define pthread_attr_setschedpolicy      weft_px_pthread_attr_setschedpolicy
#define pthread_attr_setscope            weft_px_pthread_attr_setscope
#define pthread_attr_setstack            weft_px_pthread_attr_setstack
#define pthread_attr_setstacksize        weft_px_pthread_attr_setstacksize
#define pthread_barrier_destroy          weft_px_pthread_barrier_destroy
#define pthread_barrier_init             weft_px_pthread_barrier_init
#define pthread_barrier_wait             weft_px_pthread_barrier_wait
#define pthread_barrierattr_destroy      weft_px_pthread_barrierattr_destroy
#define pthread_barrierattr_getpshared   weft_px_pthread_barrierattr_getpshared
#define pthread_barrierattr_init         weft_px_pthread_barrierattr_init
#define pthread_barrierattr_setpshared   weft_px_pthread_barrierattr_setpshared
#define pthread_cancel                   weft_px_pthread_cancel
#define pthread_cond_broadcast           weft_px_pthread_cond_broadcast
#define pthread_cond_clockwait           weft_px_pthread_cond_clockwait
#define pthread_cond_destroy             weft_px_pthread_cond_destroy
#define pthread_cond_init                weft_px_pthread_cond_init
#define pthread_cond_signal              weft_px_pthread_cond_signal
#define pthread_cond_timedwait           weft_px_pthread_cond_timedwait
#define pthread_cond_wait                weft_px_pthread_cond_wait
#define pthread_condattr_destroy         weft_px_pthread_condattr_destroy
#define pthread_condattr_getclock        weft_px_pthread_condattr_getclock
#define pthread_condattr_getpshared      weft_px_pthread_condattr_getpshared
#define pthread_condattr_init            weft_px_pthread_condattr_init
#define pthread_condattr_setclock        weft_px_pthread_condattr_setclock
#define pthread_condattr_setpshared      weft_px_pthread_condattr_setpshared
#define pthread_create                   weft_px_pthread_create
#define pthread_detach                   weft_px_pthread_detach
#define pthread_equal                    weft_px_pthread_equal
#define pthread_exit                     weft_px_pthread_exit
#define pthread_getconcurrency           weft_px_pthread_getconcurrency
#define pthread_getname_np               weft_px_pthread_getname_np
#define pthread_getspecific              weft_px_pthread_getspecific
#define pthread_join                     weft_px_pthread_join
#define pthread_key_create               weft_px_pthread_key_create
#define pthread_key_delete               weft_px_pthread_key_delete
#define pthread_mutex_clocklock          weft_px_pthread_mutex_clocklock
#define pthread_mutex_consistent         weft_px_pthread_mutex_consistent
#define pthread_mutex_destroy            weft_px_pthread_mutex_destroy
#define pthread_mutex_getprioceiling     weft_px_pthread_mutex_getprioceiling
#define pthread_mutex_init               weft_px_pthread_mutex_init
#define pthread_mutex_lock               weft_px_pthread_mutex_lock
#define pthread_mutex_setprioceiling     weft_px_pthread_mutex_setprioceiling
#define pthread_mutex_timedlock          weft_px_pthread_mutex_timedlock
#define pthread_mutex_trylock            weft_px_pthread_mutex_trylock
#define pthread_mutex_unlock             weft_px_pthread_mutex_unlock
#define pthread_mutexattr_destroy        weft_px_pthread_mutexattr_destroy
#define pthread_mutexattr_getprioceiling weft_px_pthread_mutexattr_getprioceiling
#define pthread_mutexattr_getprotocol    weft_px_pthread_mutexattr_getprotocol
#define pthread_mutexattr_getpshared     weft_px_pthread_mutexattr_getpshared
#define pthread_mutexattr_getrobust      weft_px_pthread_mutexattr_getrobust
#define pthread_mutexattr_gettype        weft_px_pthread_mutexattr_gettype
#define pthread_mutexattr_init           weft_px_pthread_mutexattr_init
#define pthread_mutexattr_setprioceiling weft_px_pthread_mutexattr_setprioceiling
#define pthread_mutexattr_setprotocol    weft_px_pthread_mutexattr_setprotocol
#define pthread_mutexattr_setpshared     weft_px_pthread_mutexattr_setpshared
#define pthread_mutexattr_setrobust      weft_px_pthread_mutexattr_setrobust
#define pthread_mutexattr_settype        weft_px_pthread_mutexattr_settype
#define pthread_once                     weft_px_pthread_once
#define pthread_rwlock_clockrdlock       weft_px_pthread_rwlock_clockrdlock
#define pthread_rwlock_clockwrlock       weft_px_pthread_rwlock_clockwrlock
#define pthread_rwlock_destroy           weft_px_pthread_rwlock_destroy
#define pthread_rwlock_init              weft_px_pthread_rwlock_init
#define pthread_rwlock_rdlock            weft_px_pthread_rwlock_rdlock
#define pthread_rwlock_timedrdlock       weft_px_pthread_rwlock_timedrdlock
#define pthread_rwlock_timedwrlock       weft_px_pthread_rwlock_timedwrlock
#define pthread_rwlock_tryrdlock         weft_px_pthread_rwlock_tryrdlock
#define pthread_rwlock_trywrlock         weft_px_pthread_rwlock_trywrlock
#define pthread_rwlock_unlock            weft_px_pthread_rwlock_unlock
#define pthread_rwlock_wrlock            weft_px_pthread_rwlock_wrlock
#define pthread_rwlockattr_destroy       weft_px_pthread_rwlockattr_destroy
#define pthread_rwlockattr_getkind_np    weft_px_pthread_rwlockattr_getkind_np
#define pthread_rwlockattr_getpshared    weft_px_pthread_rwlockattr_getpshared
#define pthread_rwlockattr_init          weft_px_pthread_rwlockattr_init
#define pthread_rwlockattr_setkind_np    weft_px_pthread_rwlockattr_setkind_np
#define pthread_rwlockattr_setpshared    weft_px_pthread_rwlockattr_setpshared
#define pthread_self                     weft_px_pthread_self
#define pthread_setcancelstate           weft_px_pthread_setcancelstate
#define pthread_setcanceltype            weft_px_pthread_setcanceltype
#define pthread_setconcurrency           weft_px_pthread_setconcurrency
#define pthread_setname_np               weft_px_pthread_setname_np
#define pthread_setspecific              weft_px_pthread_setspecific
#define pthread_spin_destroy             weft_px_pthread_spin_destroy
#define pthread_spin_init                weft_px_pthread_spin_init
#define pthread_spin_lock                weft_px_pthread_spin_lock
#define pthread_spin_trylock             weft_px_pthread_spin_trylock
#define pthread_spin_unlock              weft_px_pthread_spin_unlock
#define pthread_testcancel               weft_px_pthread_testcancel

#undef pthread_cleanup_push
#undef pthread_cleanup_pop
#define pthread_cleanup_push(fn, arg) weft_cleanup_push((fn), (arg))
#define pthread_cleanup_pop(execute)  weft_cleanup_pop(execute)

#ifdef __cplusplus
}
#endif

#endif
