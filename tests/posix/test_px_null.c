/* Bad input never crashes (issue 20): every function of the POSIX layer
 * (src/posix: the WF_PX definitions, the headers in include/weft/compat, and the
 * blocking calls libweft-pthread.so wraps) called with NULL for each pointer
 * argument, one at a time, and with garbage: objects filled with 0xA5 bytes
 * (an attribute nobody initialised, a mutex nobody made), a key nobody
 * created, a clock id nobody made, the id of a thread already joined.
 *
 * The table (ROWS below) holds one call per row, written out as it is made;
 * a row's name is its call. `null` and the typed null function pointers are
 * read from volatile variables, so the compiler sees no NULL: glibc declares
 * most of these arguments nonnull, and a literal NULL would draw a warning
 * and license gcc to replace the call with a trap.
 *
 * Each row runs in a process of its own: the test executable starts itself
 * again (posix_spawn, which is fork-free where it matters: the child execs
 * at once) with PX_NULL_ROW naming the row, and the child makes the call
 * and prints what it returned. The parent reads that, or sees the child
 * die (its signal, or a sanitizer's report on its stderr) or hang (killed
 * after ROW_TIMEOUT_S). Rejected alternative: sigsetjmp before each call
 * and a SIGSEGV/SIGBUS handler that siglongjmps back. It works in the
 * plain builds (the handler runs on the faulting ULT, and weft goes on
 * working), but in the sanitizer build -fsanitize=undefined reports the
 * arithmetic on a NULL pointer and exits before any fault; a crash in the middle of weft's
 * scheduler (a spinlock held, a ULT half parked) would poison every later
 * row; and a hang could not be told from a crash. A fresh process per row
 * costs about 3 ms.
 *
 * What a row asserts: the call returns (no crash, no hang); where glibc
 * gives a definite error for it, the call returns that error or EINVAL.
 * Where glibc returns 0 (it accepts the input), any return is accepted.
 * Every result is printed ("[  RESULT  ]"), so the log of each mode records
 * what glibc, and weft, return.
 *
 * Rows where glibc itself crashes (marked CRASHES, most NULL object
 * pointers: glibc dereferences them unchecked) run in the weft modes only
 * and are skipped in the glibc mode, saying so: weft's promise is not to
 * crash even there (include/weft.h: "Bad input and exhaustion never abort
 * the process"); PX_NULL_ALL=1 runs them in the glibc mode too, to check
 * the marks against another glibc. Left out entirely:
 *   - calls glibc answers by blocking forever: pthread_spin_lock on 0xA5
 *     bytes (it looks held), pthread_cond_destroy, _signal and _broadcast
 *     on a garbage pthread_cond_t (glibc waits for waiters that never
 *     come), a timed lock of a mutex the caller holds with a NULL deadline
 *     (glibc takes NULL for "no deadline") - blocking there is no fault;
 *   - calls where waiting forever is a right answer, on garbage that may
 *     be read as held or in progress, and glibc gives no error:
 *     pthread_cond_wait on a garbage pthread_cond_t with a good mutex,
 *     pthread_rwlock_wrlock and pthread_once on garbage (glibc returns 0),
 *     pthread_barrier_wait on a garbage barrier (glibc aborts);
 *   - invalid pthread_t values other than a joined thread's, such as
 *     (pthread_t)0x1234 or 0: glibc dereferences a pthread_t;
 *   - pthread_exit (no return), and pause, and select or pselect with no
 *     descriptors and no timeout (they sleep until a signal);
 *   - the calls with no pointer argument and no object (pthread_self,
 *     pthread_equal, sched_yield, sleep, close, fsync, ...).
 */
#include "ptest.h"

#include <fcntl.h>
#include <poll.h>
#include <semaphore.h>
#include <signal.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* How long a row may take before it counts as hung. */
#define ROW_TIMEOUT_S 5

/* ---- what the rows pass -------------------------------------------------- */

/* NULL, out of the compiler's sight. */
static void *volatile null;
static void (*volatile null_fn)(void);
static void *(*volatile null_start)(void *);

/* Places for results the rows ask for. */
static int i;
static size_t sz;
static void *p;
static char buf[64];
static struct sched_param sp;
static cpu_set_t cs;
static sigset_t ss;
static clockid_t clk;
static struct timespec ts;
static pthread_t th;
static siginfo_t si;

/* A buffer of n bytes of 0xA5, each call a different one. */
static void *garbage(size_t n)
{
	static _Alignas(64) unsigned char pool[8][1024];
	static int next;
	if (n > sizeof pool[0])
		abort();
	unsigned char *b = pool[next++ % 8];
	memset(b, 0xA5, n);
	return b;
}
#define GARBAGE(type) ((type *)garbage(sizeof(type)))

/* A key and a clock nobody made. */
#define BAD_KEY   ((pthread_key_t)0xA5A5A5A5u)
#define BAD_CLOCK ((clockid_t)0xA5A5A5A7u) /* negative, low bits 7: looks like a CPU clock */

/* In the child, before the row's call: a fixture could not be made. That
 * is no result of the call: say so and exit (not a crash, not a result). */
static void need(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "px-null: setting up the row failed: %s\n", what);
		_exit(3);
	}
}

static void *do_nothing(void *arg)
{
	return arg;
}

static void call_nothing(void)
{
}

/* The id of a thread that has been joined. */
static pthread_t joined(void)
{
	pthread_t t;
	need(pthread_create(&t, NULL, do_nothing, NULL) == 0, "pthread_create");
	need(pthread_join(t, NULL) == 0, "pthread_join");
	return t;
}

/* A joinable thread that has finished (tryjoin gets it at once). */
static pthread_t finished(void)
{
	pthread_t t;
	need(pthread_create(&t, NULL, do_nothing, NULL) == 0, "pthread_create");
	px_sleep_ns(50 * PX_NS_PER_MS);
	return t;
}

/* Valid, initialised objects, for the rows that pass NULL elsewhere. */
static pthread_attr_t *attr(void)
{
	static pthread_attr_t a;
	need(pthread_attr_init(&a) == 0, "pthread_attr_init");
	return &a;
}

static pthread_mutexattr_t *mattr(void)
{
	static pthread_mutexattr_t a;
	need(pthread_mutexattr_init(&a) == 0, "pthread_mutexattr_init");
	return &a;
}

static pthread_condattr_t *cattr(void)
{
	static pthread_condattr_t a;
	need(pthread_condattr_init(&a) == 0, "pthread_condattr_init");
	return &a;
}

static pthread_rwlockattr_t *rwattr(void)
{
	static pthread_rwlockattr_t a;
	need(pthread_rwlockattr_init(&a) == 0, "pthread_rwlockattr_init");
	return &a;
}

static pthread_barrierattr_t *battr(void)
{
	static pthread_barrierattr_t a;
	need(pthread_barrierattr_init(&a) == 0, "pthread_barrierattr_init");
	return &a;
}

static pthread_mutex_t *mutex(void)
{
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	return &m;
}

/* A mutex the caller holds. */
static pthread_mutex_t *locked(void)
{
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	need(pthread_mutex_lock(&m) == 0, "pthread_mutex_lock");
	return &m;
}

/* A PTHREAD_PRIO_PROTECT mutex (the one kind with a ceiling). */
static pthread_mutex_t *ceiling_mutex(void)
{
	static pthread_mutex_t m;
	pthread_mutexattr_t a;
	need(pthread_mutexattr_init(&a) == 0 &&
		     pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_PROTECT) == 0 &&
		     pthread_mutex_init(&m, &a) == 0,
	     "a PTHREAD_PRIO_PROTECT mutex");
	return &m;
}

static pthread_cond_t *cond(void)
{
	static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	return &c;
}

static pthread_rwlock_t *rwlock(void)
{
	static pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
	return &l;
}

/* A rwlock the caller holds for writing. */
static pthread_rwlock_t *wrlocked(void)
{
	static pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
	need(pthread_rwlock_wrlock(&l) == 0, "pthread_rwlock_wrlock");
	return &l;
}

/* A semaphore whose value is 0, so a timed wait looks at its deadline. */
static sem_t *sem0(void)
{
	static sem_t s;
	need(sem_init(&s, 0, 0) == 0, "sem_init");
	return &s;
}

/* A deadline long past. */
static const struct timespec *past(void)
{
	static const struct timespec t = {0, 0};
	return &t;
}

/* A pipe end with a byte to read, one with room to write, a connected
 * socket with a byte to read, an epoll instance. */
static int readable(void)
{
	int fd[2];
	need(pipe(fd) == 0 && write(fd[1], "x", 1) == 1, "a pipe with a byte in it");
	return fd[0];
}

static int writable(void)
{
	int fd[2];
	need(pipe(fd) == 0, "a pipe");
	return fd[1];
}

static int sock(void)
{
	int fd[2];
	need(socketpair(AF_UNIX, SOCK_STREAM, 0, fd) == 0 && write(fd[1], "x", 1) == 1,
	     "a socket pair with a byte in it");
	return fd[0];
}

static int epfd(void)
{
	int e = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN};
	int r = readable();
	need(e >= 0 && epoll_ctl(e, EPOLL_CTL_ADD, r, &ev) == 0, "an epoll instance");
	return e;
}

/* ---- the table ------------------------------------------------------------ */

/* What glibc does with a row: an error it returns, 0 (it accepts the
 * input; no value is asserted then), or CRASHES (the row runs in the weft
 * modes only). GONE(e): glibc returns e for a thread that has been joined,
 * an artifact of how it looks (a thread id is a pointer to glibc); ESRCH,
 * the error POSIX has for a thread that does not exist, is accepted too. */
enum { CRASHES = -1, GONE_FLAG = 1 << 20 };
#define GONE(e) ((e) | GONE_FLAG)

/* X(glibc, call): a call that returns 0 or an error number; E(glibc, call):
 * one that returns -1 and sets errno (the result is taken as errno then). */
#define ROWS(X, E)                                                                                 \
	/* thread attributes */                                                                    \
	X(CRASHES, pthread_attr_init(null))                                                        \
	X(CRASHES, pthread_attr_destroy(null))                                                     \
	X(CRASHES, pthread_attr_destroy(GARBAGE(pthread_attr_t)))                                  \
	X(CRASHES, pthread_attr_getdetachstate(null, &i))                                          \
	X(CRASHES, pthread_attr_getdetachstate(attr(), null))                                      \
	X(0, pthread_attr_getdetachstate(GARBAGE(pthread_attr_t), &i))                             \
	X(CRASHES, pthread_attr_setdetachstate(null, PTHREAD_CREATE_DETACHED))                     \
	X(0, pthread_attr_setdetachstate(GARBAGE(pthread_attr_t), PTHREAD_CREATE_DETACHED))        \
	X(CRASHES, pthread_attr_getguardsize(null, &sz))                                           \
	X(CRASHES, pthread_attr_getguardsize(attr(), null))                                        \
	X(0, pthread_attr_getguardsize(GARBAGE(pthread_attr_t), &sz))                              \
	X(CRASHES, pthread_attr_setguardsize(null, 4096))                                          \
	X(0, pthread_attr_setguardsize(GARBAGE(pthread_attr_t), 4096))                             \
	X(CRASHES, pthread_attr_getinheritsched(null, &i))                                         \
	X(CRASHES, pthread_attr_getinheritsched(attr(), null))                                     \
	X(0, pthread_attr_getinheritsched(GARBAGE(pthread_attr_t), &i))                            \
	X(CRASHES, pthread_attr_setinheritsched(null, PTHREAD_EXPLICIT_SCHED))                     \
	X(0, pthread_attr_setinheritsched(GARBAGE(pthread_attr_t), PTHREAD_EXPLICIT_SCHED))        \
	X(CRASHES, pthread_attr_getschedparam(null, &sp))                                          \
	X(CRASHES, pthread_attr_getschedparam(attr(), null))                                       \
	X(0, pthread_attr_getschedparam(GARBAGE(pthread_attr_t), &sp))                             \
	X(CRASHES, pthread_attr_setschedparam(null, &sp))                                          \
	X(CRASHES, pthread_attr_setschedparam(attr(), null))                                       \
	X(EINVAL, pthread_attr_setschedparam(GARBAGE(pthread_attr_t), &sp))                        \
	X(CRASHES, pthread_attr_getschedpolicy(null, &i))                                          \
	X(CRASHES, pthread_attr_getschedpolicy(attr(), null))                                      \
	X(0, pthread_attr_getschedpolicy(GARBAGE(pthread_attr_t), &i))                             \
	X(CRASHES, pthread_attr_setschedpolicy(null, SCHED_OTHER))                                 \
	X(0, pthread_attr_setschedpolicy(GARBAGE(pthread_attr_t), SCHED_OTHER))                    \
	X(CRASHES, pthread_attr_getscope(null, &i))                                                \
	X(CRASHES, pthread_attr_getscope(attr(), null))                                            \
	X(0, pthread_attr_getscope(GARBAGE(pthread_attr_t), &i))                                   \
	X(CRASHES, pthread_attr_setscope(null, PTHREAD_SCOPE_SYSTEM))                              \
	X(0, pthread_attr_setscope(GARBAGE(pthread_attr_t), PTHREAD_SCOPE_SYSTEM))                 \
	X(CRASHES, pthread_attr_getstack(null, &p, &sz))                                           \
	X(CRASHES, pthread_attr_getstack(attr(), null, &sz))                                       \
	X(CRASHES, pthread_attr_getstack(attr(), &p, null))                                        \
	X(0, pthread_attr_getstack(GARBAGE(pthread_attr_t), &p, &sz))                              \
	X(CRASHES, pthread_attr_setstack(null, buf, 1 << 20))                                      \
	X(0, pthread_attr_setstack(attr(), null, 1 << 20))                                         \
	X(0, pthread_attr_setstack(GARBAGE(pthread_attr_t), buf, 1 << 20))                         \
	X(CRASHES, pthread_attr_getstackaddr(null, &p))                                            \
	X(CRASHES, pthread_attr_getstackaddr(attr(), null))                                        \
	X(0, pthread_attr_getstackaddr(GARBAGE(pthread_attr_t), &p))                               \
	X(CRASHES, pthread_attr_setstackaddr(null, buf))                                           \
	X(0, pthread_attr_setstackaddr(attr(), null))                                              \
	X(0, pthread_attr_setstackaddr(GARBAGE(pthread_attr_t), buf))                              \
	X(CRASHES, pthread_attr_getstacksize(null, &sz))                                           \
	X(CRASHES, pthread_attr_getstacksize(attr(), null))                                        \
	X(0, pthread_attr_getstacksize(GARBAGE(pthread_attr_t), &sz))                              \
	X(CRASHES, pthread_attr_setstacksize(null, 1 << 20))                                       \
	X(0, pthread_attr_setstacksize(GARBAGE(pthread_attr_t), 1 << 20))                          \
	X(CRASHES, pthread_attr_getaffinity_np(null, sizeof cs, &cs))                              \
	X(CRASHES, pthread_attr_getaffinity_np(attr(), sizeof cs, null))                           \
	X(CRASHES, pthread_attr_getaffinity_np(GARBAGE(pthread_attr_t), sizeof cs, &cs))           \
	X(CRASHES, pthread_attr_setaffinity_np(null, sizeof cs, &cs))                              \
	X(0, pthread_attr_setaffinity_np(attr(), sizeof cs, null))                                 \
	X(CRASHES, pthread_attr_setaffinity_np(GARBAGE(pthread_attr_t), sizeof cs, &cs))           \
	X(CRASHES, pthread_attr_getsigmask_np(null, &ss))                                          \
	X(CRASHES, pthread_attr_getsigmask_np(attr(), null))                                       \
	X(CRASHES, pthread_attr_getsigmask_np(GARBAGE(pthread_attr_t), &ss))                       \
	X(CRASHES, pthread_attr_setsigmask_np(null, &ss))                                          \
	X(CRASHES, pthread_attr_setsigmask_np(attr(), null)) /* glibc 2.36: NULL is allowed */     \
	X(CRASHES, pthread_attr_setsigmask_np(GARBAGE(pthread_attr_t), &ss))                       \
	X(CRASHES, pthread_getattr_default_np(null))                                               \
	X(CRASHES, pthread_setattr_default_np(null))                                               \
	X(EINVAL, pthread_setattr_default_np(GARBAGE(pthread_attr_t)))                             \
	/* threads */                                                                              \
	X(CRASHES, pthread_create(null, NULL, do_nothing, NULL))                                   \
	X(CRASHES, pthread_create(&th, NULL, null_start, NULL)) /* the new thread crashes */       \
	X(EINVAL, pthread_create(&th, GARBAGE(pthread_attr_t), do_nothing, NULL))                  \
	X(ESRCH, pthread_join(joined(), null))                                                     \
	X(ESRCH, pthread_join(joined(), &p))                                                       \
	X(ESRCH, pthread_detach(joined()))                                                         \
	X(0, pthread_tryjoin_np(finished(), null))                                                 \
	X(GONE(EBUSY), pthread_tryjoin_np(joined(), &p))                                           \
	X(0, pthread_kill(joined(), 0))                                                            \
	X(0, pthread_cancel(joined()))                                                             \
	X(CRASHES, pthread_once(null, call_nothing))                                               \
	X(CRASHES, pthread_once(&(pthread_once_t){PTHREAD_ONCE_INIT}, null_fn))                    \
	X(CRASHES, pthread_setname_np(pthread_self(), null))                                       \
	X(GONE(ENOENT), pthread_setname_np(joined(), "x"))                                         \
	X(EFAULT, pthread_getname_np(pthread_self(), null, sizeof buf))                            \
	X(GONE(ENOENT), pthread_getname_np(joined(), buf, sizeof buf))                             \
	X(CRASHES, pthread_getattr_np(pthread_self(), null))                                       \
	X(ESRCH, pthread_getattr_np(joined(), attr()))                                             \
	X(CRASHES, pthread_getschedparam(pthread_self(), null, &sp))                               \
	X(CRASHES, pthread_getschedparam(pthread_self(), &i, null))                                \
	X(ESRCH, pthread_getschedparam(joined(), &i, &sp))                                         \
	X(EINVAL, pthread_setschedparam(pthread_self(), SCHED_OTHER, null))                        \
	X(ESRCH, pthread_setschedparam(joined(), SCHED_OTHER, &sp))                                \
	X(ESRCH, pthread_setschedprio(joined(), 0))                                                \
	X(EFAULT, pthread_getaffinity_np(pthread_self(), sizeof cs, null))                         \
	X(ESRCH, pthread_getaffinity_np(joined(), sizeof cs, &cs))                                 \
	X(EFAULT, pthread_setaffinity_np(pthread_self(), sizeof cs, null))                         \
	X(ESRCH, pthread_setaffinity_np(joined(), sizeof cs, &cs))                                 \
	X(CRASHES, pthread_getcpuclockid(pthread_self(), null))                                    \
	X(ESRCH, pthread_getcpuclockid(joined(), &clk))                                            \
	X(0, pthread_sigmask(SIG_BLOCK, null, null))                                               \
	X(0, pthread_sigmask(SIG_BLOCK, null, &ss))                                                \
	X(0, pthread_sigmask(SIG_BLOCK, GARBAGE(sigset_t), null))                                  \
	X(0, pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, null))                                  \
	X(0, pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, null))                                 \
	/* thread-specific data */                                                                 \
	X(CRASHES, pthread_key_create(null, NULL))                                                 \
	X(EINVAL, pthread_key_delete(BAD_KEY))                                                     \
	X(EINVAL, pthread_setspecific(BAD_KEY, buf))                                               \
	X(0, pthread_getspecific(BAD_KEY) != NULL)                                                 \
	/* mutex attributes */                                                                     \
	X(CRASHES, pthread_mutexattr_init(null))                                                   \
	X(0, pthread_mutexattr_destroy(null))                                                      \
	X(0, pthread_mutexattr_destroy(GARBAGE(pthread_mutexattr_t)))                              \
	X(CRASHES, pthread_mutexattr_gettype(null, &i))                                            \
	X(CRASHES, pthread_mutexattr_gettype(mattr(), null))                                       \
	X(0, pthread_mutexattr_gettype(GARBAGE(pthread_mutexattr_t), &i))                          \
	X(CRASHES, pthread_mutexattr_settype(null, PTHREAD_MUTEX_RECURSIVE))                       \
	X(0, pthread_mutexattr_settype(GARBAGE(pthread_mutexattr_t), PTHREAD_MUTEX_RECURSIVE))     \
	X(CRASHES, pthread_mutexattr_getpshared(null, &i))                                         \
	X(CRASHES, pthread_mutexattr_getpshared(mattr(), null))                                    \
	X(0, pthread_mutexattr_getpshared(GARBAGE(pthread_mutexattr_t), &i))                       \
	X(CRASHES, pthread_mutexattr_setpshared(null, PTHREAD_PROCESS_PRIVATE))                    \
	X(0, pthread_mutexattr_setpshared(GARBAGE(pthread_mutexattr_t), PTHREAD_PROCESS_PRIVATE))  \
	X(CRASHES, pthread_mutexattr_getprotocol(null, &i))                                        \
	X(CRASHES, pthread_mutexattr_getprotocol(mattr(), null))                                   \
	X(0, pthread_mutexattr_getprotocol(GARBAGE(pthread_mutexattr_t), &i))                      \
	X(CRASHES, pthread_mutexattr_setprotocol(null, PTHREAD_PRIO_NONE))                         \
	X(0, pthread_mutexattr_setprotocol(GARBAGE(pthread_mutexattr_t), PTHREAD_PRIO_NONE))       \
	X(CRASHES, pthread_mutexattr_getprioceiling(null, &i))                                     \
	X(CRASHES, pthread_mutexattr_getprioceiling(mattr(), null))                                \
	X(0, pthread_mutexattr_getprioceiling(GARBAGE(pthread_mutexattr_t), &i))                   \
	X(CRASHES, pthread_mutexattr_setprioceiling(null, 1))                                      \
	X(0, pthread_mutexattr_setprioceiling(GARBAGE(pthread_mutexattr_t), 1))                    \
	X(CRASHES, pthread_mutexattr_getrobust(null, &i))                                          \
	X(CRASHES, pthread_mutexattr_getrobust(mattr(), null))                                     \
	X(0, pthread_mutexattr_getrobust(GARBAGE(pthread_mutexattr_t), &i))                        \
	X(CRASHES, pthread_mutexattr_setrobust(null, PTHREAD_MUTEX_STALLED))                       \
	X(0, pthread_mutexattr_setrobust(GARBAGE(pthread_mutexattr_t), PTHREAD_MUTEX_STALLED))     \
	/* mutexes */                                                                              \
	X(CRASHES, pthread_mutex_init(null, NULL))                                                 \
	X(0, pthread_mutex_init(mutex(), GARBAGE(pthread_mutexattr_t)))                            \
	X(CRASHES, pthread_mutex_destroy(null))                                                    \
	X(EBUSY, pthread_mutex_destroy(GARBAGE(pthread_mutex_t)))                                  \
	X(CRASHES, pthread_mutex_lock(null))                                                       \
	X(EINVAL, pthread_mutex_lock(GARBAGE(pthread_mutex_t)))                                    \
	X(CRASHES, pthread_mutex_trylock(null))                                                    \
	X(EINVAL, pthread_mutex_trylock(GARBAGE(pthread_mutex_t)))                                 \
	X(CRASHES, pthread_mutex_timedlock(null, past()))                                          \
	X(0, pthread_mutex_timedlock(mutex(), null))                                               \
	X(ETIMEDOUT, pthread_mutex_timedlock(locked(), GARBAGE(struct timespec)))                  \
	X(EINVAL, pthread_mutex_timedlock(GARBAGE(pthread_mutex_t), past()))                       \
	X(CRASHES, pthread_mutex_clocklock(null, CLOCK_MONOTONIC, past()))                         \
	X(0, pthread_mutex_clocklock(mutex(), CLOCK_MONOTONIC, null))                              \
	X(EINVAL, pthread_mutex_clocklock(GARBAGE(pthread_mutex_t), CLOCK_MONOTONIC, past()))      \
	X(CRASHES, pthread_mutex_unlock(null))                                                     \
	X(EINVAL, pthread_mutex_unlock(GARBAGE(pthread_mutex_t)))                                  \
	X(CRASHES, pthread_mutex_getprioceiling(null, &i))                                         \
	X(CRASHES, pthread_mutex_getprioceiling(ceiling_mutex(), null))                            \
	X(EINVAL, pthread_mutex_getprioceiling(GARBAGE(pthread_mutex_t), &i))                      \
	X(CRASHES, pthread_mutex_setprioceiling(null, 1, &i))                                      \
	X(0, pthread_mutex_setprioceiling(ceiling_mutex(), 1, null))                               \
	X(EINVAL, pthread_mutex_setprioceiling(GARBAGE(pthread_mutex_t), 1, &i))                   \
	X(CRASHES, pthread_mutex_consistent(null))                                                 \
	X(EINVAL, pthread_mutex_consistent(GARBAGE(pthread_mutex_t)))                              \
	/* condition variable attributes */                                                        \
	X(CRASHES, pthread_condattr_init(null))                                                    \
	X(0, pthread_condattr_destroy(null))                                                       \
	X(0, pthread_condattr_destroy(GARBAGE(pthread_condattr_t)))                                \
	X(CRASHES, pthread_condattr_getclock(null, &clk))                                          \
	X(CRASHES, pthread_condattr_getclock(cattr(), null))                                       \
	X(0, pthread_condattr_getclock(GARBAGE(pthread_condattr_t), &clk))                         \
	X(CRASHES, pthread_condattr_setclock(null, CLOCK_MONOTONIC))                               \
	X(0, pthread_condattr_setclock(GARBAGE(pthread_condattr_t), CLOCK_MONOTONIC))              \
	X(CRASHES, pthread_condattr_getpshared(null, &i))                                          \
	X(CRASHES, pthread_condattr_getpshared(cattr(), null))                                     \
	X(0, pthread_condattr_getpshared(GARBAGE(pthread_condattr_t), &i))                         \
	X(CRASHES, pthread_condattr_setpshared(null, PTHREAD_PROCESS_PRIVATE))                     \
	X(0, pthread_condattr_setpshared(GARBAGE(pthread_condattr_t), PTHREAD_PROCESS_PRIVATE))    \
	/* condition variables */                                                                  \
	X(CRASHES, pthread_cond_init(null, NULL))                                                  \
	X(0, pthread_cond_init(cond(), GARBAGE(pthread_condattr_t)))                               \
	X(CRASHES, pthread_cond_destroy(null))                                                     \
	X(CRASHES, pthread_cond_signal(null))                                                      \
	X(CRASHES, pthread_cond_broadcast(null))                                                   \
	X(CRASHES, pthread_cond_wait(null, locked()))                                              \
	X(CRASHES, pthread_cond_wait(cond(), null))                                                \
	X(EINVAL, pthread_cond_wait(cond(), GARBAGE(pthread_mutex_t)))                             \
	X(CRASHES, pthread_cond_timedwait(null, locked(), past()))                                 \
	X(CRASHES, pthread_cond_timedwait(cond(), null, past()))                                   \
	X(CRASHES, pthread_cond_timedwait(cond(), locked(), null))                                 \
	X(EINVAL, pthread_cond_timedwait(cond(), locked(), GARBAGE(struct timespec)))              \
	X(0, pthread_cond_timedwait(GARBAGE(pthread_cond_t), locked(), past()))                    \
	X(EINVAL, pthread_cond_timedwait(cond(), GARBAGE(pthread_mutex_t), past()))                \
	X(CRASHES, pthread_cond_clockwait(null, locked(), CLOCK_MONOTONIC, past()))                \
	X(CRASHES, pthread_cond_clockwait(cond(), null, CLOCK_MONOTONIC, past()))                  \
	X(CRASHES, pthread_cond_clockwait(cond(), locked(), CLOCK_MONOTONIC, null))                \
	X(EINVAL,                                                                                  \
	  pthread_cond_clockwait(cond(), locked(), CLOCK_MONOTONIC, GARBAGE(struct timespec)))     \
	X(0, pthread_cond_clockwait(GARBAGE(pthread_cond_t), locked(), CLOCK_MONOTONIC, past()))   \
	/* rwlock attributes */                                                                    \
	X(CRASHES, pthread_rwlockattr_init(null))                                                  \
	X(0, pthread_rwlockattr_destroy(null))                                                     \
	X(0, pthread_rwlockattr_destroy(GARBAGE(pthread_rwlockattr_t)))                            \
	X(CRASHES, pthread_rwlockattr_getkind_np(null, &i))                                        \
	X(CRASHES, pthread_rwlockattr_getkind_np(rwattr(), null))                                  \
	X(0, pthread_rwlockattr_getkind_np(GARBAGE(pthread_rwlockattr_t), &i))                     \
	X(CRASHES, pthread_rwlockattr_setkind_np(null, PTHREAD_RWLOCK_PREFER_READER_NP))           \
	X(0, pthread_rwlockattr_setkind_np(GARBAGE(pthread_rwlockattr_t),                          \
					   PTHREAD_RWLOCK_PREFER_READER_NP))                       \
	X(CRASHES, pthread_rwlockattr_getpshared(null, &i))                                        \
	X(CRASHES, pthread_rwlockattr_getpshared(rwattr(), null))                                  \
	X(0, pthread_rwlockattr_getpshared(GARBAGE(pthread_rwlockattr_t), &i))                     \
	X(CRASHES, pthread_rwlockattr_setpshared(null, PTHREAD_PROCESS_PRIVATE))                   \
	X(0,                                                                                       \
	  pthread_rwlockattr_setpshared(GARBAGE(pthread_rwlockattr_t), PTHREAD_PROCESS_PRIVATE))   \
	/* rwlocks */                                                                              \
	X(CRASHES, pthread_rwlock_init(null, NULL))                                                \
	X(0, pthread_rwlock_init(rwlock(), GARBAGE(pthread_rwlockattr_t)))                         \
	X(0, pthread_rwlock_destroy(null))                                                         \
	X(0, pthread_rwlock_destroy(GARBAGE(pthread_rwlock_t)))                                    \
	X(CRASHES, pthread_rwlock_rdlock(null))                                                    \
	X(EAGAIN, pthread_rwlock_rdlock(GARBAGE(pthread_rwlock_t)))                                \
	X(CRASHES, pthread_rwlock_tryrdlock(null))                                                 \
	X(EAGAIN, pthread_rwlock_tryrdlock(GARBAGE(pthread_rwlock_t)))                             \
	X(CRASHES, pthread_rwlock_timedrdlock(null, past()))                                       \
	X(0, pthread_rwlock_timedrdlock(rwlock(), null))                                           \
	X(EDEADLK, pthread_rwlock_timedrdlock(wrlocked(), null))                                   \
	X(EAGAIN, pthread_rwlock_timedrdlock(GARBAGE(pthread_rwlock_t), past()))                   \
	X(CRASHES, pthread_rwlock_clockrdlock(null, CLOCK_MONOTONIC, past()))                      \
	X(0, pthread_rwlock_clockrdlock(rwlock(), CLOCK_MONOTONIC, null))                          \
	X(EAGAIN, pthread_rwlock_clockrdlock(GARBAGE(pthread_rwlock_t), CLOCK_MONOTONIC, past()))  \
	X(CRASHES, pthread_rwlock_wrlock(null))                                                    \
	X(CRASHES, pthread_rwlock_trywrlock(null))                                                 \
	X(0, pthread_rwlock_trywrlock(GARBAGE(pthread_rwlock_t)))                                  \
	X(CRASHES, pthread_rwlock_timedwrlock(null, past()))                                       \
	X(0, pthread_rwlock_timedwrlock(rwlock(), null))                                           \
	X(EDEADLK, pthread_rwlock_timedwrlock(wrlocked(), null))                                   \
	X(EINVAL, pthread_rwlock_timedwrlock(wrlocked(), GARBAGE(struct timespec)))                \
	X(0, pthread_rwlock_timedwrlock(GARBAGE(pthread_rwlock_t), past()))                        \
	X(CRASHES, pthread_rwlock_clockwrlock(null, CLOCK_MONOTONIC, past()))                      \
	X(0, pthread_rwlock_clockwrlock(rwlock(), CLOCK_MONOTONIC, null))                          \
	X(0, pthread_rwlock_clockwrlock(GARBAGE(pthread_rwlock_t), CLOCK_MONOTONIC, past()))       \
	X(CRASHES, pthread_rwlock_unlock(null))                                                    \
	X(0, pthread_rwlock_unlock(GARBAGE(pthread_rwlock_t)))                                     \
	/* barriers */                                                                             \
	X(CRASHES, pthread_barrierattr_init(null))                                                 \
	X(0, pthread_barrierattr_destroy(null))                                                    \
	X(0, pthread_barrierattr_destroy(GARBAGE(pthread_barrierattr_t)))                          \
	X(CRASHES, pthread_barrierattr_getpshared(null, &i))                                       \
	X(CRASHES, pthread_barrierattr_getpshared(battr(), null))                                  \
	X(0, pthread_barrierattr_getpshared(GARBAGE(pthread_barrierattr_t), &i))                   \
	X(CRASHES, pthread_barrierattr_setpshared(null, PTHREAD_PROCESS_PRIVATE))                  \
	X(0,                                                                                       \
	  pthread_barrierattr_setpshared(GARBAGE(pthread_barrierattr_t), PTHREAD_PROCESS_PRIVATE)) \
	X(CRASHES, pthread_barrier_init(null, NULL, 2))                                            \
	X(0, pthread_barrier_init(GARBAGE(pthread_barrier_t), GARBAGE(pthread_barrierattr_t), 2))  \
	X(CRASHES, pthread_barrier_destroy(null))                                                  \
	X(0, pthread_barrier_destroy(GARBAGE(pthread_barrier_t)))                                  \
	X(CRASHES, pthread_barrier_wait(null))                                                     \
	/* spinlocks */                                                                            \
	X(CRASHES, pthread_spin_init(null, 0))                                                     \
	X(0, pthread_spin_destroy(null))                                                           \
	X(0, pthread_spin_destroy(GARBAGE(pthread_spinlock_t)))                                    \
	X(CRASHES, pthread_spin_lock(null))                                                        \
	X(CRASHES, pthread_spin_trylock(null))                                                     \
	X(EBUSY, pthread_spin_trylock(GARBAGE(pthread_spinlock_t)))                                \
	X(CRASHES, pthread_spin_unlock(null))                                                      \
	X(0, pthread_spin_unlock(GARBAGE(pthread_spinlock_t)))                                     \
	/* semaphores */                                                                           \
	E(CRASHES, sem_init(null, 0, 1))                                                           \
	E(0, sem_destroy(null))                                                                    \
	E(0, sem_destroy(GARBAGE(sem_t)))                                                          \
	E(CRASHES, sem_wait(null))                                                                 \
	E(0, sem_wait(GARBAGE(sem_t)))                                                             \
	E(CRASHES, sem_trywait(null))                                                              \
	E(0, sem_trywait(GARBAGE(sem_t)))                                                          \
	E(CRASHES, sem_timedwait(null, past()))                                                    \
	E(CRASHES, sem_timedwait(sem0(), null))                                                    \
	E(EINVAL, sem_timedwait(sem0(), GARBAGE(struct timespec)))                                 \
	E(0, sem_timedwait(GARBAGE(sem_t), past()))                                                \
	E(CRASHES, sem_clockwait(null, CLOCK_MONOTONIC, past()))                                   \
	E(CRASHES, sem_clockwait(sem0(), CLOCK_MONOTONIC, null))                                   \
	E(EINVAL, sem_clockwait(sem0(), CLOCK_MONOTONIC, GARBAGE(struct timespec)))                \
	E(0, sem_clockwait(GARBAGE(sem_t), CLOCK_MONOTONIC, past()))                               \
	E(CRASHES, sem_post(null))                                                                 \
	E(CRASHES, sem_post(GARBAGE(sem_t)))                                                       \
	E(CRASHES, sem_getvalue(null, &i))                                                         \
	E(CRASHES, sem_getvalue(sem0(), null))                                                     \
	E(0, sem_getvalue(GARBAGE(sem_t), &i))                                                     \
	/* clocks and sleeps */                                                                    \
	E(CRASHES, clock_gettime(CLOCK_MONOTONIC, null))                                           \
	E(EFAULT, clock_gettime(CLOCK_THREAD_CPUTIME_ID, null))                                    \
	E(EINVAL, clock_gettime(BAD_CLOCK, &ts))                                                   \
	E(EINVAL, clock_gettime(BAD_CLOCK, null))                                                  \
	E(0, clock_getres(CLOCK_MONOTONIC, null))                                                  \
	E(EINVAL, clock_getres(BAD_CLOCK, &ts))                                                    \
	E(EINVAL, clock_getres(BAD_CLOCK, null))                                                   \
	E(EFAULT, nanosleep(null, null))                                                           \
	E(EINVAL, nanosleep(GARBAGE(struct timespec), null))                                       \
	X(EFAULT, clock_nanosleep(CLOCK_MONOTONIC, 0, null, null))                                 \
	X(EINVAL, clock_nanosleep(CLOCK_MONOTONIC, 0, GARBAGE(struct timespec), null))             \
	X(EINVAL, clock_nanosleep(BAD_CLOCK, 0, past(), null))                                     \
	/* the blocking calls libweft-pthread.so wraps */                                          \
	E(EFAULT, read(readable(), null, 1))                                                       \
	E(EFAULT, readv(readable(), null, 1))                                                      \
	E(ESPIPE, pread(readable(), null, 1, 0))                                                   \
	E(EFAULT, write(writable(), null, 1))                                                      \
	E(EFAULT, writev(writable(), null, 1))                                                     \
	E(ESPIPE, pwrite(writable(), null, 1, 0))                                                  \
	E(EFAULT, recv(sock(), null, 1, 0))                                                        \
	E(EFAULT, recvfrom(sock(), null, 1, 0, NULL, NULL))                                        \
	E(EFAULT, recvmsg(sock(), null, 0))                                                        \
	E(EFAULT, send(sock(), null, 1, 0))                                                        \
	E(EFAULT, sendto(sock(), null, 1, 0, NULL, 0))                                             \
	E(EFAULT, sendmsg(sock(), null, 0))                                                        \
	E(EINVAL, accept(sock(), null, null))                                                      \
	E(EINVAL, accept4(sock(), null, null, 0))                                                  \
	E(EFAULT, connect(sock(), null, sizeof(struct sockaddr)))                                  \
	E(EFAULT, poll(null, 1, 0))                                                                \
	E(EFAULT, ppoll(null, 1, past(), NULL))                                                    \
	E(EBADF, select(FD_SETSIZE, GARBAGE(fd_set), NULL, NULL, &(struct timeval){0}))            \
	E(EBADF, pselect(FD_SETSIZE, GARBAGE(fd_set), NULL, NULL, past(), NULL))                   \
	E(EFAULT, epoll_wait(epfd(), null, 1, 0))                                                  \
	E(EFAULT, epoll_pwait(epfd(), null, 1, 0, NULL))                                           \
	E(ECHILD, wait(null))                                                                      \
	E(ECHILD, waitpid(-1, null, WNOHANG))                                                      \
	E(ECHILD, waitid(P_ALL, 0, null, WEXITED | WNOHANG))                                       \
	E(ECHILD, wait3(null, WNOHANG, null))                                                      \
	E(ECHILD, wait4(-1, null, WNOHANG, null))                                                  \
	E(EFAULT, sigsuspend(null))                                                                \
	X(EFAULT, sigwait(null, &i))                                                               \
	E(EFAULT, sigwaitinfo(null, &si))                                                          \
	E(EFAULT, sigtimedwait(null, &si, past()))                                                 \
	E(EFAULT, setsockopt(sock(), SOL_SOCKET, SO_RCVBUF, null, sizeof(int)))                    \
	E(EFAULT, fcntl(readable(), F_GETLK, null))                                                \
	E(EFAULT, ioctl(sock(), FIONREAD, null))                                                   \
	E(EFAULT, sched_setaffinity(0, sizeof(cpu_set_t), null))                                   \
	E(EFAULT, sched_getaffinity(0, sizeof(cpu_set_t), null))                                   \
	E(EINVAL, sched_getaffinity(0, 1, GARBAGE(cpu_set_t)))

struct row {
	const char *call; /* the call, as written in ROWS */
	int glibc;        /* what glibc does with it (above) */
};

#define ROW(glibc, call) {#call, glibc},
static const struct row rows[] = {ROWS(ROW, ROW)};
#define NROWS (sizeof rows / sizeof rows[0])

/* Make row n's call (in the child); its result as an error number. The
 * table calls the obsolete pthread_attr_{get,set}stackaddr too. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static long make_call(size_t n)
{
	size_t k = 0;
#define CALL(glibc, call) \
	if (n == k++)     \
		return (long)(call);
#define CALL_ERRNO(glibc, call)               \
	if (n == k++) {                       \
		errno = 0;                    \
		long r_ = (long)(call);       \
		return r_ == -1 ? errno : r_; \
	}
	ROWS(CALL, CALL_ERRNO)
	abort();
}
#pragma GCC diagnostic pop

/* The child: make the call, print what it returned, and leave at once
 * (a row may leave a thread running or an object held). */
static int run_child(const char *which)
{
	size_t n = strtoul(which, NULL, 10);
	if (n >= NROWS)
		return 2;
	/* In the header mode weft starts at the first call that needs it:
	 * start it now (pthread_self makes the main thread a ULT), so that
	 * the call is made by a ULT there too, as in the preload mode. */
	(void)pthread_self();
	long r = make_call(n);
	printf("px-null-result %ld\n", r);
	fflush(stdout);
	_exit(0);
}

/* What the child of a row did. */
struct outcome {
	bool hung;
	int status;    /* as from waitpid */
	bool returned; /* it printed a result */
	long result;
	char output[16384]; /* its stdout and stderr */
};

/* Run row n in a child process (the test executable again, with
 * PX_NULL_ROW=n), its stdout and stderr captured. */
static void run_row(size_t n, struct outcome *o)
{
	memset(o, 0, sizeof *o);
	int fd[2];
	PX_SYSOK(pipe2(fd, O_CLOEXEC));
	posix_spawn_file_actions_t fa;
	PX_OK(posix_spawn_file_actions_init(&fa));
	PX_OK(posix_spawn_file_actions_adddup2(&fa, fd[1], STDOUT_FILENO));
	PX_OK(posix_spawn_file_actions_adddup2(&fa, fd[1], STDERR_FILENO));

	size_t nenv = 0;
	while (environ[nenv])
		nenv++;
	char **env = calloc(nenv + 2, sizeof *env);
	PX_TRUE(env != NULL, "out of memory");
	char var[64];
	snprintf(var, sizeof var, "PX_NULL_ROW=%zu", n);
	size_t k = 0;
	for (size_t j = 0; j < nenv; j++)
		if (strncmp(environ[j], "PX_NULL_ROW=", 12) != 0)
			env[k++] = environ[j];
	env[k++] = var;
	env[k] = NULL;

	char exe[] = "/proc/self/exe";
	char *argv[] = {exe, NULL};
	pid_t pid;
	PX_OK(posix_spawn(&pid, exe, &fa, NULL, argv, env));
	posix_spawn_file_actions_destroy(&fa);
	free(env);
	close(fd[1]);

	long long deadline = px_now(CLOCK_MONOTONIC) + ROW_TIMEOUT_S * PX_NS_PER_S;
	size_t len = 0;
	for (;;) {
		long long left = deadline - px_now(CLOCK_MONOTONIC);
		if (left <= 0) {
			o->hung = true;
			kill(pid, SIGKILL);
			break;
		}
		struct pollfd pf = {.fd = fd[0], .events = POLLIN};
		int r = poll(&pf, 1, (int)(left / PX_NS_PER_MS) + 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			continue;
		char tmp[4096];
		ssize_t got = read(fd[0], tmp, sizeof tmp);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		size_t room = sizeof o->output - 1 - len;
		size_t take = (size_t)got < room ? (size_t)got : room;
		memcpy(o->output + len, tmp, take);
		len += take;
	}
	close(fd[0]);
	while (waitpid(pid, &o->status, 0) < 0 && errno == EINTR)
		;
	o->output[len] = '\0';
	const char *line = strstr(o->output, "px-null-result ");
	if (line && !o->hung && WIFEXITED(o->status) && WEXITSTATUS(o->status) == 0) {
		o->returned = true;
		o->result = strtol(line + strlen("px-null-result "), NULL, 10);
	}
}

static void test_row(void **state)
{
	const struct row *row = *state;
	if (row->glibc == CRASHES && !px_weft() && !getenv("PX_NULL_ALL"))
		PX_SKIP("glibc crashes here; weft must not");
	static struct outcome o;
	run_row((size_t)(row - rows), &o);
	if (o.hung)
		fail_msg("%s did not return within %d s", row->call, ROW_TIMEOUT_S);
	if (WIFSIGNALED(o.status))
		fail_msg("%s crashed: killed by signal %d (%s); its output:\n%s", row->call,
			 WTERMSIG(o.status), strsignal(WTERMSIG(o.status)), o.output);
	if (!o.returned)
		fail_msg("%s: the process exited with status %d before the call returned; its "
			 "output:\n%s",
			 row->call, WEXITSTATUS(o.status), o.output);
	printf("[  RESULT  ] %s = %s\n", row->call, px_errname(o.result));
	int want = row->glibc & ~GONE_FLAG;
	bool gone = row->glibc & GONE_FLAG;
	if (want > 0 && o.result != want && o.result != EINVAL && !(gone && o.result == ESRCH))
		fail_msg("%s returned %s (%ld); glibc returns %s: expected that%s or EINVAL",
			 row->call, px_errname(o.result), o.result, px_errname(want),
			 gone ? ", ESRCH" : "");
}

/* The watchdog's setup, given the row's call for its name. */
static int row_setup(void **state)
{
	const struct row *row = *state;
	void *name = (void *)(uintptr_t)row->call;
	return px_setup(&name);
}

int main(int argc, char **argv)
{
	const char *which = getenv("PX_NULL_ROW");
	if (which)
		return run_child(which);

	static struct CMUnitTest tests[NROWS];
	for (size_t n = 0; n < NROWS; n++)
		tests[n] = (struct CMUnitTest){.name = rows[n].call,
					       .test_func = test_row,
					       .setup_func = row_setup,
					       .teardown_func = px_teardown,
					       .initial_state = (void *)(uintptr_t)&rows[n]};
	px_prepare(argc, argv);
	/* Every failure is reported by this thread (the calls run in the
	 * children): one row's failure ends that row, not the run. */
	setenv("CMOCKA_TEST_ABORT", "0", 1);
	return _cmocka_run_group_tests("test_px_null", tests, NROWS, NULL, NULL);
}
