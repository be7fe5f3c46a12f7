/* Bad input never crashes (issue 20): every function of weft's native API
 * that takes a pointer (include/weft.h, and weft/sync.h, io.h, sched.h,
 * context.h and sim.h under it) called with NULL for each pointer argument,
 * one at a time, and with garbage: objects filled with 0xA5 bytes, thread
 * ids nobody made or already joined, a key, a clock, a worker nobody made.
 *
 * The table (ROWS below) holds one call per row, written out as it is made;
 * a row's name is its call. `null` and the typed null function pointers are
 * read from volatile variables, so the compiler sees no NULL to warn about
 * or to optimise on.
 *
 * Each row is a test of its own, and the harness (harness.h) runs every
 * test in a forked process: a crash, or a sanitizer's report (the sanitizer
 * build reports arithmetic on a NULL pointer before any fault), ends that row's
 * process and is reported under the row's name; a row that has not
 * returned after ROW_TIMEOUT_S is ended by an alarm that names it. No
 * signal handler and longjmp, which could not get out of a crash inside
 * the scheduler cleanly.
 *
 * Where a row runs (its first column):
 *   ULT   from a ULT, the main one after weft_init, and again, as a test of
 *         its own named "... from a foreign thread", from a kernel thread
 *         weft does not run (weft's foreign-thread paths are separate ones:
 *         futexes instead of parking);
 *   PRE   before the runtime starts (weft_init and its config);
 *   SIM   inside a simulation (the root behavior of wsim_run).
 * What a row asserts (its second column): the call returns, and returns
 * the error named there - EINVAL for a NULL or garbage argument, ESRCH for
 * a thread that does not exist, as include/weft.h promises (weft_wake's
 * -EINVAL is its own convention) - or, for ANY,
 * whatever it likes (NULL is allowed there, or the answer is not
 * specified). Every result is printed ("[  RESULT  ]").
 *
 * Left out: the calls that do not return (weft_exit, weft_context_exit);
 * calls that must call a pointer the caller gives (a garbage function in a
 * wsim_behavior_t, a cleanup frame's handler); calls where waiting forever
 * is a right answer on garbage that may read as held or in progress
 * (weft_mutex_lock, weft_rwlock_wrlock, weft_spin_lock, weft_once,
 * weft_barrier_wait and the semaphore and cond waits without a deadline on
 * 0xA5 bytes); destroying a garbage wsim_queue_t (it frees the buffer the
 * queue names, as free() would crash on a garbage pointer); popping a
 * cleanup frame that is not the innermost one pushed, and switching to or
 * from a NULL context (weft stops the process then, naming the mistake:
 * weft_cleanup_pop_frame and weft_context_switch have no error to return,
 * and going on would skip a handler or run nothing); ending a section with
 * a handle weft_syscall_begin did not return (a pointer cannot be told
 * from garbage).
 */
#include "harness.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <weft/context.h>
#include <weft/sim.h>

/* How long a row may take before it counts as hung. */
#define ROW_TIMEOUT_S 5

/* ---- what the rows pass -------------------------------------------------- */

/* NULL, out of the compiler's sight. */
static void *volatile null;
static void (*volatile null_fn)(void);
static void (*volatile null_arg_fn)(void *);
static void *(*volatile null_start)(void *);

/* Places for results the rows ask for. */
static int i;
static size_t sz;
static uint32_t word;
static uint64_t u64;
static char buf[64];
static clockid_t clk;
static weft_t th;
static weft_worker_stats_t ws;
static weft_mutex_stats_t ms;
static const weft_sched_ops_t *ops;

/* A buffer of n bytes of 0xA5, each call a different one. */
static void *garbage(size_t n)
{
	static _Alignas(64) unsigned char pool[8][4096];
	static int next;
	if (n > sizeof pool[0])
		abort();
	unsigned char *b = pool[next++ % 8];
	memset(b, 0xA5, n);
	return b;
}
#define GARBAGE(type) ((type *)garbage(sizeof(type)))

/* Ids and numbers nobody made. */
#define BAD_ID     ((weft_t)0xA5A5A5A5A5A5A5A5ull)
#define BAD_KEY    ((weft_key_t)0xA5A5A5A5u)
#define BAD_CLOCK  ((clockid_t)0xA5A5A5A7u)
#define BAD_WORKER 12345

static void *do_nothing(void *arg)
{
	return arg;
}

static void call_nothing(void)
{
}

static void call_nothing_arg(void *arg)
{
}

/* The id of a ULT that has been joined. */
static weft_t joined(void)
{
	weft_t t = wt_spawn(NULL, do_nothing, NULL);
	wt_join(t);
	return t;
}

/* A joinable ULT that has finished. */
static weft_t finished(void)
{
	weft_t t = wt_spawn(NULL, do_nothing, NULL);
	struct timespec d = {0, 50 * 1000 * 1000};
	weft_nanosleep(&d, NULL);
	return t;
}

/* Valid, initialised objects, for the rows that pass NULL elsewhere. */
static weft_attr_t *attr(void)
{
	static weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	return &a;
}

static weft_mutexattr_t *mattr(void)
{
	static weft_mutexattr_t a;
	WT_OK(weft_mutexattr_init(&a));
	return &a;
}

static weft_condattr_t *cattr(void)
{
	static weft_condattr_t a;
	WT_OK(weft_condattr_init(&a));
	return &a;
}

static weft_rwlockattr_t *rwattr(void)
{
	static weft_rwlockattr_t a;
	WT_OK(weft_rwlockattr_init(&a));
	return &a;
}

static weft_mutex_t *mutex(void)
{
	static weft_mutex_t m = WEFT_MUTEX_INITIALIZER;
	return &m;
}

/* A mutex the caller holds. */
static weft_mutex_t *locked(void)
{
	static weft_mutex_t m = WEFT_MUTEX_INITIALIZER;
	WT_OK(weft_mutex_lock(&m));
	return &m;
}

static weft_cond_t *cond(void)
{
	static weft_cond_t c = WEFT_COND_INITIALIZER;
	return &c;
}

static weft_rwlock_t *rwlock(void)
{
	static weft_rwlock_t l = WEFT_RWLOCK_INITIALIZER;
	return &l;
}

static weft_barrier_t *barrier(void)
{
	static weft_barrier_t b;
	return &b;
}

/* A semaphore whose value is 0, so a timed wait looks at its deadline. */
static weft_sem_t *sem0(void)
{
	static weft_sem_t s;
	return &s;
}

static weft_once_t *once(void)
{
	static weft_once_t o = WEFT_ONCE_INIT;
	return &o;
}

/* A deadline long past. */
static const struct timespec *past(void)
{
	static const struct timespec t = {0, 0};
	return &t;
}

/* The read end of a pipe with nothing to read. */
static int unready(void)
{
	int fd[2];
	if (pipe(fd))
		abort();
	return fd[0];
}

/* A queue of the simulation. */
static wsim_queue_t *queue(void)
{
	static wsim_queue_t q;
	WT_OK(wsim_queue_init(&q, 1, 1));
	return &q;
}

/* ---- the table ------------------------------------------------------------ */

enum { ULT, PRE, SIM };
enum { ANY = -1 };

/* X(where, want, call): a call that returns 0 or an error number;
 * V(where, call): one that returns nothing (only that it returns counts);
 * P(where, want, call): one that returns a pointer or a value (the row's
 * result is whether it is nonzero). */
#define ROWS(X, V, P)                                                                              \
	/* the runtime */                                                                          \
	X(PRE, EINVAL, weft_config_init(null))                                                     \
	X(PRE, EINVAL, weft_init(GARBAGE(weft_config_t)))                                          \
	/* attributes */                                                                           \
	X(ULT, EINVAL, weft_attr_init(null))                                                       \
	X(ULT, EINVAL, weft_attr_destroy(null))                                                    \
	X(ULT, EINVAL, weft_attr_destroy(GARBAGE(weft_attr_t)))                                    \
	X(ULT, EINVAL, weft_attr_setstacksize(null, 1 << 20))                                      \
	X(ULT, EINVAL, weft_attr_setstacksize(GARBAGE(weft_attr_t), 1 << 20))                      \
	X(ULT, EINVAL, weft_attr_getstacksize(null, &sz))                                          \
	X(ULT, EINVAL, weft_attr_getstacksize(attr(), null))                                       \
	X(ULT, EINVAL, weft_attr_getstacksize(GARBAGE(weft_attr_t), &sz))                          \
	X(ULT, EINVAL, weft_attr_setstack(null, buf, 1 << 20))                                     \
	X(ULT, EINVAL, weft_attr_setstack(attr(), null, 1 << 20))                                  \
	X(ULT, EINVAL, weft_attr_setstack(GARBAGE(weft_attr_t), buf, 1 << 20))                     \
	X(ULT, EINVAL, weft_attr_setdetached(null, 1))                                             \
	X(ULT, EINVAL, weft_attr_setdetached(GARBAGE(weft_attr_t), 1))                             \
	X(ULT, EINVAL, weft_attr_getdetached(null, &i))                                            \
	X(ULT, EINVAL, weft_attr_getdetached(attr(), null))                                        \
	X(ULT, EINVAL, weft_attr_getdetached(GARBAGE(weft_attr_t), &i))                            \
	X(ULT, EINVAL, weft_attr_setname(null, "x"))                                               \
	X(ULT, EINVAL, weft_attr_setname(attr(), null))                                            \
	X(ULT, EINVAL, weft_attr_setname(GARBAGE(weft_attr_t), "x"))                               \
	X(ULT, EINVAL, weft_attr_setworker(null, 0))                                               \
	X(ULT, EINVAL, weft_attr_setworker(GARBAGE(weft_attr_t), 0))                               \
	X(ULT, EINVAL, weft_attr_getworker(null, &i))                                              \
	X(ULT, EINVAL, weft_attr_getworker(attr(), null))                                          \
	X(ULT, EINVAL, weft_attr_getworker(GARBAGE(weft_attr_t), &i))                              \
	X(ULT, EINVAL, weft_attr_settls(null, WEFT_TLS_WORKER))                                    \
	X(ULT, EINVAL, weft_attr_settls(GARBAGE(weft_attr_t), WEFT_TLS_WORKER))                    \
	X(ULT, EINVAL, weft_attr_gettls(null, &i))                                                 \
	X(ULT, EINVAL, weft_attr_gettls(attr(), null))                                             \
	X(ULT, EINVAL, weft_attr_gettls(GARBAGE(weft_attr_t), &i))                                 \
	X(ULT, EINVAL, weft_attr_setschedparam(null, 0, 0))                                        \
	X(ULT, EINVAL, weft_attr_setschedparam(GARBAGE(weft_attr_t), 0, 0))                        \
	X(ULT, EINVAL, weft_attr_getschedparam(null, &i, &i))                                      \
	X(ULT, EINVAL, weft_attr_getschedparam(attr(), null, &i))                                  \
	X(ULT, EINVAL, weft_attr_getschedparam(attr(), &i, null))                                  \
	X(ULT, EINVAL, weft_attr_getschedparam(GARBAGE(weft_attr_t), &i, &i))                      \
	/* threads */                                                                              \
	X(ULT, EINVAL, weft_create(null, NULL, do_nothing, NULL))                                  \
	X(ULT, EINVAL, weft_create(&th, NULL, null_start, NULL))                                   \
	X(ULT, EINVAL, weft_create(&th, GARBAGE(weft_attr_t), do_nothing, NULL))                   \
	X(ULT, ANY, weft_join(finished(), null))                                                   \
	X(ULT, ESRCH, weft_join(joined(), null))                                                   \
	X(ULT, ESRCH, weft_join(BAD_ID, null))                                                     \
	X(ULT, ESRCH, weft_join(WEFT_NULL, null))                                                  \
	X(ULT, ESRCH, weft_detach(joined()))                                                       \
	X(ULT, ESRCH, weft_detach(BAD_ID))                                                         \
	X(ULT, ESRCH, weft_unpark(joined()))                                                       \
	X(ULT, ESRCH, weft_unpark(BAD_ID))                                                         \
	X(ULT, ANY, weft_park_handoff(joined()))                                                   \
	X(ULT, ANY, weft_park_handoff(BAD_ID))                                                     \
	X(ULT, ESRCH, weft_cancel(joined()))                                                       \
	X(ULT, ESRCH, weft_cancel(BAD_ID))                                                         \
	X(ULT, ANY, weft_getname(weft_self(), null, sizeof buf))                                   \
	X(ULT, ESRCH, weft_getname(BAD_ID, buf, sizeof buf))                                       \
	X(ULT, EINVAL, weft_cputime(weft_self(), null))                                            \
	X(ULT, ESRCH, weft_cputime(BAD_ID, &u64))                                                  \
	X(ULT, EINVAL, weft_worker_stats(0, null))                                                 \
	X(ULT, EINVAL, weft_worker_stats(BAD_WORKER, &ws))                                         \
	X(ULT, ESRCH, weft_setschedparam(BAD_ID, 0, 0))                                            \
	X(ULT, EINVAL, weft_getschedparam(weft_self(), null, &i))                                  \
	X(ULT, EINVAL, weft_getschedparam(weft_self(), &i, null))                                  \
	X(ULT, ESRCH, weft_getschedparam(BAD_ID, &i, &i))                                          \
	X(ULT, ESRCH, weft_sched_sethint(BAD_ID, 1))                                               \
	X(ULT, EINVAL, weft_sched_gethint(weft_self(), null))                                      \
	X(ULT, ESRCH, weft_sched_gethint(BAD_ID, &u64))                                            \
	/* installable schedulers */                                                               \
	X(ULT, EINVAL, weft_sched_register(null))                                                  \
	X(ULT, EINVAL, weft_sched_register(GARBAGE(weft_sched_ops_t)))                             \
	P(ULT, 0, weft_sched_find(null))                                                           \
	X(ULT, EINVAL, weft_sched_install(0, null, NULL))                                          \
	X(ULT, EINVAL, weft_sched_install(0, GARBAGE(weft_sched_ops_t), NULL))                     \
	X(ULT, EINVAL, weft_sched_install(BAD_WORKER, &weft_sched_steal, NULL))                    \
	X(ULT, EINVAL, weft_sched_install_all(null, NULL))                                         \
	X(ULT, EINVAL, weft_sched_install_all(GARBAGE(weft_sched_ops_t), NULL))                    \
	X(ULT, EINVAL, weft_sched_get(0, null))                                                    \
	X(ULT, EINVAL, weft_sched_get(BAD_WORKER, &ops))                                           \
	P(ULT, ANY, weft_sched_node_thread(null))                                                  \
	P(ULT, ANY, weft_sched_node_hint(null))                                                    \
	P(ULT, ANY, weft_sched_node_worker(null))                                                  \
	X(ULT, -1, weft_sched_node_prio(null, &i))                                                 \
	/* wait-on-address and sleeping */                                                         \
	X(ULT, EINVAL, weft_wait(null, 0, CLOCK_MONOTONIC, past()))                                \
	X(ULT, EINVAL, weft_wait(&word, 0, CLOCK_MONOTONIC, GARBAGE(struct timespec)))             \
	X(ULT, EINVAL, weft_wait(&word, 0, BAD_CLOCK, past()))                                     \
	X(ULT, -EINVAL, weft_wake(null, 1))                                                        \
	X(ULT, EINVAL, weft_nanosleep(null, NULL))                                                 \
	X(ULT, EINVAL, weft_nanosleep(GARBAGE(struct timespec), NULL))                             \
	X(ULT, EINVAL, weft_clock_nanosleep(CLOCK_MONOTONIC, 0, null, NULL))                       \
	X(ULT, EINVAL, weft_clock_nanosleep(CLOCK_MONOTONIC, 0, GARBAGE(struct timespec), NULL))   \
	X(ULT, EINVAL, weft_clock_nanosleep(BAD_CLOCK, 0, past(), NULL))                           \
	/* mutexes */                                                                              \
	X(ULT, EINVAL, weft_mutexattr_init(null))                                                  \
	X(ULT, EINVAL, weft_mutexattr_destroy(null))                                               \
	X(ULT, EINVAL, weft_mutexattr_settype(null, WEFT_MUTEX_RECURSIVE))                         \
	X(ULT, EINVAL, weft_mutexattr_gettype(null, &i))                                           \
	X(ULT, EINVAL, weft_mutexattr_gettype(mattr(), null))                                      \
	X(ULT, EINVAL, weft_mutexattr_setpolicy(null, WEFT_LOCK_PARK))                             \
	X(ULT, EINVAL, weft_mutexattr_getpolicy(null, &i))                                         \
	X(ULT, EINVAL, weft_mutexattr_getpolicy(mattr(), null))                                    \
	X(ULT, EINVAL, weft_mutexattr_setspin(null, 1))                                            \
	X(ULT, EINVAL, weft_mutexattr_getspin(null, &i))                                           \
	X(ULT, EINVAL, weft_mutexattr_getspin(mattr(), null))                                      \
	X(ULT, EINVAL, weft_mutex_init(null, NULL))                                                \
	X(ULT, EINVAL, weft_mutex_init(mutex(), GARBAGE(weft_mutexattr_t)))                        \
	X(ULT, EINVAL, weft_mutex_destroy(null))                                                   \
	X(ULT, ANY, weft_mutex_destroy(GARBAGE(weft_mutex_t)))                                     \
	X(ULT, EINVAL, weft_mutex_lock(null))                                                      \
	X(ULT, EINVAL, weft_mutex_trylock(null))                                                   \
	X(ULT, ANY, weft_mutex_trylock(GARBAGE(weft_mutex_t)))                                     \
	X(ULT, EINVAL, weft_mutex_timedlock(null, past()))                                         \
	X(ULT, EINVAL, weft_mutex_timedlock(locked(), null))                                       \
	X(ULT, EINVAL, weft_mutex_timedlock(locked(), GARBAGE(struct timespec)))                   \
	X(ULT, ANY, weft_mutex_timedlock(GARBAGE(weft_mutex_t), past()))                           \
	X(ULT, EINVAL, weft_mutex_clocklock(null, CLOCK_MONOTONIC, past()))                        \
	X(ULT, EINVAL, weft_mutex_clocklock(locked(), BAD_CLOCK, past()))                          \
	X(ULT, ANY, weft_mutex_clocklock(GARBAGE(weft_mutex_t), CLOCK_MONOTONIC, past()))          \
	X(ULT, EINVAL, weft_mutex_unlock(null))                                                    \
	X(ULT, ANY, weft_mutex_unlock(GARBAGE(weft_mutex_t)))                                      \
	X(ULT, EINVAL, weft_mutex_setpolicy(null, WEFT_LOCK_PARK))                                 \
	X(ULT, ANY, weft_mutex_setpolicy(GARBAGE(weft_mutex_t), WEFT_LOCK_PARK))                   \
	X(ULT, EINVAL, weft_mutex_setspin(null, 1))                                                \
	X(ULT, ANY, weft_mutex_setspin(GARBAGE(weft_mutex_t), 1))                                  \
	X(ULT, EINVAL, weft_mutex_stats(null, &ms))                                                \
	X(ULT, EINVAL, weft_mutex_stats(mutex(), null))                                            \
	X(ULT, ANY, weft_mutex_stats(GARBAGE(weft_mutex_t), &ms))                                  \
	/* condition variables */                                                                  \
	X(ULT, EINVAL, weft_condattr_init(null))                                                   \
	X(ULT, EINVAL, weft_condattr_destroy(null))                                                \
	X(ULT, EINVAL, weft_condattr_setclock(null, CLOCK_MONOTONIC))                              \
	X(ULT, EINVAL, weft_condattr_getclock(null, &clk))                                         \
	X(ULT, EINVAL, weft_condattr_getclock(cattr(), null))                                      \
	X(ULT, EINVAL, weft_cond_init(null, NULL))                                                 \
	X(ULT, EINVAL, weft_cond_init(cond(), GARBAGE(weft_condattr_t)))                           \
	X(ULT, EINVAL, weft_cond_destroy(null))                                                    \
	X(ULT, ANY, weft_cond_destroy(GARBAGE(weft_cond_t)))                                       \
	X(ULT, EINVAL, weft_cond_wait(null, locked()))                                             \
	X(ULT, EINVAL, weft_cond_wait(cond(), null))                                               \
	X(ULT, EINVAL, weft_cond_timedwait(null, locked(), past()))                                \
	X(ULT, EINVAL, weft_cond_timedwait(cond(), null, past()))                                  \
	X(ULT, EINVAL, weft_cond_timedwait(cond(), locked(), null))                                \
	X(ULT, EINVAL, weft_cond_timedwait(cond(), locked(), GARBAGE(struct timespec)))            \
	X(ULT, ANY, weft_cond_timedwait(GARBAGE(weft_cond_t), locked(), past()))                   \
	X(ULT, ANY, weft_cond_timedwait(cond(), GARBAGE(weft_mutex_t), past()))                    \
	X(ULT, EINVAL, weft_cond_clockwait(null, locked(), CLOCK_MONOTONIC, past()))               \
	X(ULT, EINVAL, weft_cond_clockwait(cond(), null, CLOCK_MONOTONIC, past()))                 \
	X(ULT, EINVAL, weft_cond_clockwait(cond(), locked(), CLOCK_MONOTONIC, null))               \
	X(ULT, EINVAL, weft_cond_clockwait(cond(), locked(), BAD_CLOCK, past()))                   \
	X(ULT, EINVAL, weft_cond_signal(null))                                                     \
	X(ULT, ANY, weft_cond_signal(GARBAGE(weft_cond_t)))                                        \
	X(ULT, EINVAL, weft_cond_broadcast(null))                                                  \
	X(ULT, ANY, weft_cond_broadcast(GARBAGE(weft_cond_t)))                                     \
	/* read-write locks */                                                                     \
	X(ULT, EINVAL, weft_rwlockattr_init(null))                                                 \
	X(ULT, EINVAL, weft_rwlockattr_destroy(null))                                              \
	X(ULT, EINVAL, weft_rwlockattr_setpref(null, WEFT_RWLOCK_PREFER_WRITER))                   \
	X(ULT, EINVAL, weft_rwlockattr_getpref(null, &i))                                          \
	X(ULT, EINVAL, weft_rwlockattr_getpref(rwattr(), null))                                    \
	X(ULT, EINVAL, weft_rwlock_init(null, NULL))                                               \
	X(ULT, EINVAL, weft_rwlock_init(rwlock(), GARBAGE(weft_rwlockattr_t)))                     \
	X(ULT, EINVAL, weft_rwlock_destroy(null))                                                  \
	X(ULT, ANY, weft_rwlock_destroy(GARBAGE(weft_rwlock_t)))                                   \
	X(ULT, EINVAL, weft_rwlock_rdlock(null))                                                   \
	X(ULT, EINVAL, weft_rwlock_tryrdlock(null))                                                \
	X(ULT, ANY, weft_rwlock_tryrdlock(GARBAGE(weft_rwlock_t)))                                 \
	X(ULT, EINVAL, weft_rwlock_timedrdlock(null, past()))                                      \
	X(ULT, ANY, weft_rwlock_timedrdlock(GARBAGE(weft_rwlock_t), past()))                       \
	X(ULT, EINVAL, weft_rwlock_clockrdlock(null, CLOCK_MONOTONIC, past()))                     \
	X(ULT, EINVAL, weft_rwlock_clockrdlock(rwlock(), CLOCK_MONOTONIC, null))                   \
	X(ULT, ANY, weft_rwlock_clockrdlock(GARBAGE(weft_rwlock_t), CLOCK_MONOTONIC, past()))      \
	X(ULT, EINVAL, weft_rwlock_wrlock(null))                                                   \
	X(ULT, EINVAL, weft_rwlock_trywrlock(null))                                                \
	X(ULT, ANY, weft_rwlock_trywrlock(GARBAGE(weft_rwlock_t)))                                 \
	X(ULT, EINVAL, weft_rwlock_timedwrlock(null, past()))                                      \
	X(ULT, ANY, weft_rwlock_timedwrlock(GARBAGE(weft_rwlock_t), past()))                       \
	X(ULT, EINVAL, weft_rwlock_clockwrlock(null, CLOCK_MONOTONIC, past()))                     \
	X(ULT, EINVAL, weft_rwlock_clockwrlock(rwlock(), CLOCK_MONOTONIC, null))                   \
	X(ULT, ANY, weft_rwlock_clockwrlock(GARBAGE(weft_rwlock_t), CLOCK_MONOTONIC, past()))      \
	X(ULT, EINVAL, weft_rwlock_unlock(null))                                                   \
	X(ULT, ANY, weft_rwlock_unlock(GARBAGE(weft_rwlock_t)))                                    \
	/* barriers */                                                                             \
	X(ULT, EINVAL, weft_barrierattr_init(null))                                                \
	X(ULT, EINVAL, weft_barrierattr_destroy(null))                                             \
	X(ULT, EINVAL, weft_barrier_init(null, NULL, 2))                                           \
	X(ULT, ANY, weft_barrier_init(barrier(), GARBAGE(weft_barrierattr_t), 2))                  \
	X(ULT, EINVAL, weft_barrier_destroy(null))                                                 \
	X(ULT, ANY, weft_barrier_destroy(GARBAGE(weft_barrier_t)))                                 \
	X(ULT, EINVAL, weft_barrier_wait(null))                                                    \
	/* semaphores */                                                                           \
	X(ULT, EINVAL, weft_sem_init(null, 0, 1))                                                  \
	X(ULT, EINVAL, weft_sem_destroy(null))                                                     \
	X(ULT, ANY, weft_sem_destroy(GARBAGE(weft_sem_t)))                                         \
	X(ULT, EINVAL, weft_sem_wait(null))                                                        \
	X(ULT, EINVAL, weft_sem_trywait(null))                                                     \
	X(ULT, ANY, weft_sem_trywait(GARBAGE(weft_sem_t)))                                         \
	X(ULT, EINVAL, weft_sem_timedwait(null, past()))                                           \
	X(ULT, EINVAL, weft_sem_timedwait(sem0(), null))                                           \
	X(ULT, EINVAL, weft_sem_timedwait(sem0(), GARBAGE(struct timespec)))                       \
	X(ULT, ANY, weft_sem_timedwait(GARBAGE(weft_sem_t), past()))                               \
	X(ULT, EINVAL, weft_sem_clockwait(null, CLOCK_MONOTONIC, past()))                          \
	X(ULT, EINVAL, weft_sem_clockwait(sem0(), CLOCK_MONOTONIC, null))                          \
	X(ULT, EINVAL, weft_sem_clockwait(sem0(), BAD_CLOCK, past()))                              \
	X(ULT, EINVAL, weft_sem_post(null))                                                        \
	X(ULT, ANY, weft_sem_post(GARBAGE(weft_sem_t)))                                            \
	X(ULT, EINVAL, weft_sem_getvalue(null, &i))                                                \
	X(ULT, EINVAL, weft_sem_getvalue(sem0(), null))                                            \
	X(ULT, ANY, weft_sem_getvalue(GARBAGE(weft_sem_t), &i))                                    \
	/* spinlocks */                                                                            \
	X(ULT, EINVAL, weft_spin_init(null, 0))                                                    \
	X(ULT, EINVAL, weft_spin_destroy(null))                                                    \
	X(ULT, ANY, weft_spin_destroy(GARBAGE(weft_spinlock_t)))                                   \
	X(ULT, EINVAL, weft_spin_lock(null))                                                       \
	X(ULT, EINVAL, weft_spin_trylock(null))                                                    \
	X(ULT, ANY, weft_spin_trylock(GARBAGE(weft_spinlock_t)))                                   \
	X(ULT, EINVAL, weft_spin_unlock(null))                                                     \
	X(ULT, ANY, weft_spin_unlock(GARBAGE(weft_spinlock_t)))                                    \
	/* once, thread-specific data, cancellation, cleanup */                                    \
	X(ULT, EINVAL, weft_once(null, call_nothing))                                              \
	X(ULT, EINVAL, weft_once(once(), null_fn))                                                 \
	X(ULT, EINVAL, weft_key_create(null, NULL))                                                \
	X(ULT, EINVAL, weft_key_delete(BAD_KEY))                                                   \
	P(ULT, 0, weft_getspecific(BAD_KEY))                                                       \
	X(ULT, EINVAL, weft_setspecific(BAD_KEY, buf))                                             \
	X(ULT, 0, weft_setcancelstate(WEFT_CANCEL_ENABLE, null))                                   \
	X(ULT, EINVAL, weft_setcancelstate(0xA5A5, &i))                                            \
	X(ULT, 0, weft_setcanceltype(WEFT_CANCEL_DEFERRED, null))                                  \
	X(ULT, EINVAL, weft_setcanceltype(0xA5A5, &i))                                             \
	V(ULT, weft_cleanup_push_frame(null, call_nothing_arg, NULL))                              \
	V(ULT, weft_cleanup_pop_frame(null, 1))                                                    \
	/* file descriptors and system call sections */                                            \
	X(ULT, EINVAL, weft_fd_wait(unready(), POLLIN, CLOCK_MONOTONIC, GARBAGE(struct timespec))) \
	X(ULT, EINVAL, weft_fd_wait(unready(), POLLIN, BAD_CLOCK, past()))                         \
	X(ULT, ANY, weft_fd_wait(-1, POLLIN, CLOCK_MONOTONIC, past()))                             \
	V(ULT, weft_syscall_end(null))                                                             \
	/* bare contexts */                                                                        \
	X(ULT, EINVAL, weft_context_make(null, 0, buf, sizeof buf, call_nothing_arg, NULL))        \
	X(ULT, EINVAL,                                                                             \
	  weft_context_make(GARBAGE(weft_context_t), 0, null, 1 << 16, call_nothing_arg, NULL))    \
	X(ULT, EINVAL,                                                                             \
	  weft_context_make(GARBAGE(weft_context_t), 0, garbage(4096), 4096, null_arg_fn, NULL))   \
	X(ULT, EINVAL,                                                                             \
	  weft_context_make(GARBAGE(weft_context_t), 0xA5A5, garbage(4096), 4096,                  \
			    call_nothing_arg, NULL))                                               \
	X(ULT, EINVAL, weft_context_init_current(null, 0))                                         \
	X(ULT, EINVAL, weft_context_init_current(GARBAGE(weft_context_t), 0xA5A5))                 \
	X(ULT, EINVAL, weft_context_destroy(null))                                                 \
	X(ULT, ANY, weft_context_destroy(GARBAGE(weft_context_t)))                                 \
	/* the simulation kernel */                                                                \
	X(ULT, EINVAL, wsim_config_init(null))                                                     \
	X(ULT, EINVAL, wsim_run(GARBAGE(wsim_config_t), call_nothing_arg, NULL))                   \
	X(ULT, EINVAL, wsim_run(NULL, null_arg_fn, NULL))                                          \
	X(ULT, EINVAL, wsim_stats(null))                                                           \
	P(ULT, ANY, wsim_backend_by_name(null))                                                    \
	X(ULT, EINVAL, wsim_event_init(null))                                                      \
	X(ULT, EINVAL, wsim_queue_init(null, 1, 1))                                                \
	X(ULT, EINVAL, wsim_queue_destroy(null))                                                   \
	X(SIM, EINVAL, wsim_stats(null))                                                           \
	X(SIM, EINVAL, wsim_par(1, null))                                                          \
	X(SIM, EINVAL, wsim_notify(null))                                                          \
	X(SIM, EINVAL, wsim_wait(null))                                                            \
	X(SIM, EINVAL, wsim_wait_any(1, null, &i))                                                 \
	X(SIM, EINVAL, wsim_wait_any(1, (wsim_event_t *const[]){NULL}, &i))                        \
	X(SIM, EINVAL, wsim_handshake_send(null))                                                  \
	X(SIM, EINVAL, wsim_handshake_receive(null))                                               \
	X(SIM, EINVAL, wsim_dhs_send(null, buf, 1))                                                \
	X(SIM, EINVAL, wsim_dhs_receive(null, buf, 1))                                             \
	X(SIM, EINVAL, wsim_queue_send(null, buf))                                                 \
	X(SIM, EINVAL, wsim_queue_send(queue(), null))                                             \
	X(SIM, EINVAL, wsim_queue_receive(null, buf))

struct row {
	const char *call; /* the call, as written in ROWS */
	int where;        /* ULT, PRE or SIM */
	int want;         /* the error it must return, or ANY */
};

#define ROW(where, want, call) {#call, where, want},
#define VROW(where, call)      {#call, where, ANY},
static const struct row rows[] = {ROWS(ROW, VROW, ROW)};
#define NROWS (sizeof rows / sizeof rows[0])

/* Make row n's call; its result. */
static long make_call(size_t n)
{
	size_t k = 0;
#define CALL(where, want, call) \
	if (n == k++)           \
		return (long)(call);
#define CALL_VOID(where, call) \
	if (n == k++) {        \
		call;          \
		return 0;      \
	}
#define CALL_VALUE(where, want, call) \
	if (n == k++)                 \
		return (call) != 0;
	ROWS(CALL, CALL_VOID, CALL_VALUE)
	abort();
}

/* A row and the result of its call, for a call made on another thread. */
struct call {
	size_t n;
	long result;
};

static void call_in_sim(void *arg)
{
	struct call *c = arg;
	c->result = make_call(c->n);
}

static void *call_in_pthread(void *arg)
{
	struct call *c = arg;
	c->result = make_call(c->n);
	return NULL;
}

static const char *volatile current_row = "(none)";

/* SIGALRM: the row has not returned. Only async-signal-safe calls. */
static void on_alarm(int sig)
{
	static const char a[] = "\n";
	static const char b[] = " did not return within the row's timeout\n";
	const char *name = current_row;
	ssize_t r = write(STDOUT_FILENO, a, sizeof a - 1);
	r = write(STDOUT_FILENO, name, strlen(name));
	r = write(STDOUT_FILENO, b, sizeof b - 1);
	(void)r;
	_exit(1);
}

/* A test is a row and whether it runs on a foreign thread. */
struct test {
	const struct row *row;
	bool foreign;
	char name[512];
};

static void test_row(void **state)
{
	const struct test *t = *state;
	const struct row *row = t->row;
	current_row = t->name;
	signal(SIGALRM, on_alarm);
	alarm(ROW_TIMEOUT_S);

	struct call c = {.n = (size_t)(row - rows)};
	if (row->where == SIM) {
		WT_OK(wsim_run(NULL, call_in_sim, &c));
	} else if (row->where == PRE) {
		c.result = make_call(c.n);
	} else {
		wt_init(2);
		if (t->foreign) {
			struct wt_pthread p;
			wt_pthread_start(&p, call_in_pthread, &c);
			wt_pthread_join(&p);
		} else {
			c.result = make_call(c.n);
		}
		/* Back to cmocka on the kernel thread that started weft: main is
		 * the root ULT and shares its worker's thread-locals (cmocka
		 * keeps state there), so it must not return from a worker it
		 * migrated to. A row that leaves a thread alive keeps the
		 * runtime (EBUSY); its process ends with the row anyway. */
		for (int i = 0; i < 1000 && weft_shutdown() == EBUSY; i++)
			weft_yield();
	}
	alarm(0);
	printf("[  RESULT  ] %s = %s\n", t->name, wt_errname(c.result));
	if (row->want != ANY && c.result != row->want)
		fail_msg("%s returned %s (%ld), expected %s", t->name, wt_errname(c.result),
			 c.result, wt_errname(row->want));
}

int main(int argc, char **argv)
{
	static struct test tests[2 * NROWS];
	static struct CMUnitTest units[2 * NROWS];
	size_t n = 0;
	for (size_t r = 0; r < NROWS; r++)
		for (int foreign = 0; foreign < 2; foreign++) {
			if (foreign && rows[r].where != ULT)
				continue;
			struct test *t = &tests[n];
			t->row = &rows[r];
			t->foreign = foreign;
			snprintf(t->name, sizeof t->name, "%s%s", rows[r].call,
				 foreign ? " from a foreign thread" : "");
			units[n++] = (struct CMUnitTest){
				.name = t->name, .test_func = test_row, .initial_state = t};
		}
	return wt_run(argc, argv, units, n);
}
