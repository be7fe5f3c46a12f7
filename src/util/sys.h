/* The system's threading calls that weft itself makes.
 *
 * weft's workers are real kernel threads and its internal locks are glibc
 * objects. libweft-pthread.so (src/posix) defines pthread_create,
 * pthread_mutex_lock, sched_yield, ... itself, and inside that library an
 * internal call to one of those names would reach weft's own version. So
 * weft calls them as WF_SYS(name)(...): the plain function in libweft, and
 * in the preload build (WEFT_PRELOAD) the next definition after ours -
 * glibc's - looked up on first use (wf_sys_resolve, src/posix/preload.c):
 * another library's constructor may call a pthread function before ours
 * runs (libgomp's does), and that call must find glibc's.
 */
#ifndef WF_UTIL_SYS_H
#define WF_UTIL_SYS_H

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#define WF_SYS_CALLS(X)                                                                          \
	X(int, pthread_create, (pthread_t *, const pthread_attr_t *, void *(*)(void *), void *)) \
	X(int, pthread_join, (pthread_t, void **))                                               \
	X(void, pthread_exit, (void *))                                                          \
	X(pthread_t, pthread_self, (void))                                                       \
	X(int, pthread_once, (pthread_once_t *, void (*)(void)))                                 \
	X(int, pthread_getattr_np, (pthread_t, pthread_attr_t *))                                \
	X(int, pthread_attr_getstack, (const pthread_attr_t *, void **, size_t *))               \
	X(int, pthread_attr_init, (pthread_attr_t *))                                            \
	X(int, pthread_attr_setstacksize, (pthread_attr_t *, size_t))                            \
	X(int, pthread_attr_destroy, (pthread_attr_t *))                                         \
	X(int, pthread_mutex_lock, (pthread_mutex_t *))                                          \
	X(int, pthread_mutex_unlock, (pthread_mutex_t *))                                        \
	X(int, pthread_setaffinity_np, (pthread_t, size_t, const cpu_set_t *))                   \
	X(int, pthread_getaffinity_np, (pthread_t, size_t, cpu_set_t *))                         \
	X(int, pthread_key_create, (pthread_key_t *, void (*)(void *)))                          \
	X(int, pthread_setspecific, (pthread_key_t, const void *))                               \
	X(int, sched_yield, (void))                                                              \
	X(int, pthread_getcpuclockid, (pthread_t, clockid_t *))                                  \
	X(int, clock_gettime, (clockid_t, struct timespec *))                                    \
	X(int, clock_getres, (clockid_t, struct timespec *))                                     \
	X(int, clock_nanosleep, (clockid_t, int, const struct timespec *, struct timespec *))    \
	X(int, nanosleep, (const struct timespec *, struct timespec *))                          \
	X(unsigned, sleep, (unsigned))                                                           \
	X(int, usleep, (__useconds_t))                                                           \
	X(int, pthread_kill, (pthread_t, int))                                                   \
	X(int, pthread_setname_np, (pthread_t, const char *))                                    \
	X(int, pthread_getname_np, (pthread_t, char *, size_t))                                  \
	X(int, pthread_getschedparam, (pthread_t, int *, struct sched_param *))                  \
	X(int, pthread_setschedparam, (pthread_t, int, const struct sched_param *))              \
	X(int, pthread_sigmask, (int, const sigset_t *, sigset_t *))                             \
	X(int, sigaction, (int, const struct sigaction *, struct sigaction *))                   \
	X(int, sigpending, (sigset_t *))                                                         \
	X(int, raise, (int))                                                                     \
	X(int, kill, (pid_t, int))                                                               \
	X(int, sched_getaffinity, (pid_t, size_t, cpu_set_t *))                                  \
	X(int, sched_setaffinity, (pid_t, size_t, const cpu_set_t *))                            \
	X(int, __register_atfork, (void (*)(void), void (*)(void), void (*)(void), void *))

/* What pthread_atfork calls (glibc exports it, GLIBC_2.3.2, but declares it
 * in no header): the handlers and the registering object's __dso_handle,
 * whose unloading unregisters them. */
extern int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
			     void *dso_handle);

#ifdef WEFT_PRELOAD
#define WF_SYS_FIELD(ret, name, args) ret(*name) args;
struct wf_sys {
	WF_SYS_CALLS(WF_SYS_FIELD)
};
#undef WF_SYS_FIELD
__attribute__((visibility("hidden"))) extern struct wf_sys wf_sys;
/* Look every function up (idempotent); returns &wf_sys. */
__attribute__((visibility("hidden"))) struct wf_sys *wf_sys_resolve(void);
#define WF_SYS(name) \
	(__builtin_expect(wf_sys.name != NULL, 1) ? wf_sys.name : wf_sys_resolve()->name)
#else
#define WF_SYS(name) name
#endif

/* A kernel thread of weft's own (a carrier, the monitor, the poller's
 * watchdog, the trace flusher), made with every signal blocked from its
 * first instruction: a new thread starts with its creator's mask, and a
 * signal meant for the program's threads must never run its handler in one
 * of these (sched/carrier.c, "signal masks"). Each sets its own mask. */
static inline int wf_sys_thread_create(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	sigfillset(&all);
	WF_SYS(pthread_sigmask)(SIG_SETMASK, &all, &old);
	int e = WF_SYS(pthread_create)(t, NULL, fn, arg);
	WF_SYS(pthread_sigmask)(SIG_SETMASK, &old, NULL);
	return e;
}

#endif
