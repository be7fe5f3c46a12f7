/* Process-shared objects: PTHREAD_PROCESS_SHARED mutexes, condition
 * variables, rwlocks and barriers, sem_init(pshared = 1) and named
 * semaphores (sem_open).
 *
 * weft's own objects keep their waiters in this process's memory (the
 * wait queues of src/sync), so they cannot wait across processes. An
 * object the program makes process-shared is glibc's instead: the init
 * call makes it with glibc's own init and a process-shared attribute, in
 * the caller's storage, and every later call on it goes to glibc's
 * function. glibc waits for such objects on futexes without the private
 * flag, which the kernel keys by the shared page, so waiters and wakers may
 * be in different processes - weft programs or not.
 *
 * A wait is made inside a system call section (sched/carrier.c): the
 * thread waits in the kernel on its kernel thread, and if it waits longer
 * than WEFT_SYSCALL_NS its worker is handed to a spare and runs the other
 * threads meanwhile. A wait that is a cancellation point (a condition or
 * semaphore wait) acts on a pending cancellation before it waits, and
 * waits in slices of CANCEL_SLICE_NS, looking for one between them: a
 * condition wait returns after a slice as a spurious wake-up (POSIX allows
 * them; the caller's loop waits again), a semaphore wait waits again.
 *
 * How a call knows the object is glibc's (each checked where psync.c
 * dispatches; glibc's layout assumptions are the _Static_asserts below and
 * the self-check at init, which refuses with ENOTSUP where one fails):
 *   mutex    glibc sets PTHREAD_MUTEX_PSHARED_BIT (128) in __kind, where
 *            weft keeps its type (0-3);
 *   cond     glibc sets bit 0 of __wrefs, which lies beyond weft's state
 *            (bit 1 is its clock: CLOCK_MONOTONIC when set);
 *   rwlock, barrier, semaphore   weft writes SHARED_MAGIC into the last
 *            word of the object, which glibc's state does not reach (and
 *            clears it in every object it makes itself); sem_open's
 *            semaphores are marked when opened.
 *
 * What it does not do: thread identity in these objects is glibc's thread
 * id of the kernel thread, or of the thread's own control block (src/
 * sched/tls.c) - unique within the process, not between processes, so an
 * error-checking or recursive mutex shared by two weft processes may take
 * a thread of one for the owner in the other. Priority protocols are not
 * applied to shared mutexes.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>

#include "posix/posix.h"
#include "sched/carrier.h"
#include "sync/wait.h"

#define SHARED_MAGIC 0x53504657u /* "WFPS" */
enum { GLIBC_MUTEX_PSHARED_BIT = 128 };

_Static_assert(offsetof(pthread_rwlock_t, __data.__flags) + sizeof(unsigned) <=
		       sizeof(pthread_rwlock_t) - sizeof(uint32_t),
	       "the rwlock's last word is padding in glibc's layout");
_Static_assert(sizeof(weft_rwlock_t) <= sizeof(pthread_rwlock_t) - sizeof(uint32_t),
	       "and beyond weft's");
_Static_assert(sizeof(weft_barrier_t) <= sizeof(pthread_barrier_t) - sizeof(uint32_t) &&
		       5 * sizeof(unsigned) <= sizeof(pthread_barrier_t) - sizeof(uint32_t),
	       "the barrier's last word is beyond glibc's and weft's state");
_Static_assert(sizeof(weft_sem_t) <= sizeof(sem_t) - sizeof(uint32_t) &&
		       16 <= sizeof(sem_t) - sizeof(uint32_t),
	       "the semaphore's last word is beyond glibc's and weft's state");
_Static_assert(sizeof(weft_cond_t) <= offsetof(pthread_cond_t, __data.__wrefs),
	       "glibc's __wrefs lies beyond weft's cond");

/* ---- glibc's functions ------------------------------------------------------------- */

#define GLIBC_CALLS(X)                                                                           \
	X(int, pthread_mutexattr_init, (pthread_mutexattr_t *))                                  \
	X(int, pthread_mutexattr_settype, (pthread_mutexattr_t *, int))                          \
	X(int, pthread_mutexattr_setpshared, (pthread_mutexattr_t *, int))                       \
	X(int, pthread_mutexattr_destroy, (pthread_mutexattr_t *))                               \
	X(int, pthread_mutex_init, (pthread_mutex_t *, const pthread_mutexattr_t *))             \
	X(int, pthread_mutex_destroy, (pthread_mutex_t *))                                       \
	X(int, pthread_mutex_lock, (pthread_mutex_t *))                                          \
	X(int, pthread_mutex_trylock, (pthread_mutex_t *))                                       \
	X(int, pthread_mutex_clocklock, (pthread_mutex_t *, clockid_t, const struct timespec *)) \
	X(int, pthread_mutex_unlock, (pthread_mutex_t *))                                        \
	X(int, pthread_condattr_init, (pthread_condattr_t *))                                    \
	X(int, pthread_condattr_setpshared, (pthread_condattr_t *, int))                         \
	X(int, pthread_condattr_setclock, (pthread_condattr_t *, clockid_t))                     \
	X(int, pthread_condattr_destroy, (pthread_condattr_t *))                                 \
	X(int, pthread_cond_init, (pthread_cond_t *, const pthread_condattr_t *))                \
	X(int, pthread_cond_destroy, (pthread_cond_t *))                                         \
	X(int, pthread_cond_wait, (pthread_cond_t *, pthread_mutex_t *))                         \
	X(int, pthread_cond_clockwait,                                                           \
	  (pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *))             \
	X(int, pthread_cond_timedwait,                                                           \
	  (pthread_cond_t *, pthread_mutex_t *, const struct timespec *))                        \
	X(int, pthread_cond_signal, (pthread_cond_t *))                                          \
	X(int, pthread_cond_broadcast, (pthread_cond_t *))                                       \
	X(int, pthread_rwlockattr_init, (pthread_rwlockattr_t *))                                \
	X(int, pthread_rwlockattr_setpshared, (pthread_rwlockattr_t *, int))                     \
	X(int, pthread_rwlockattr_setkind_np, (pthread_rwlockattr_t *, int))                     \
	X(int, pthread_rwlockattr_destroy, (pthread_rwlockattr_t *))                             \
	X(int, pthread_rwlock_init, (pthread_rwlock_t *, const pthread_rwlockattr_t *))          \
	X(int, pthread_rwlock_destroy, (pthread_rwlock_t *))                                     \
	X(int, pthread_rwlock_clockrdlock,                                                       \
	  (pthread_rwlock_t *, clockid_t, const struct timespec *))                              \
	X(int, pthread_rwlock_clockwrlock,                                                       \
	  (pthread_rwlock_t *, clockid_t, const struct timespec *))                              \
	X(int, pthread_rwlock_rdlock, (pthread_rwlock_t *))                                      \
	X(int, pthread_rwlock_wrlock, (pthread_rwlock_t *))                                      \
	X(int, pthread_rwlock_tryrdlock, (pthread_rwlock_t *))                                   \
	X(int, pthread_rwlock_trywrlock, (pthread_rwlock_t *))                                   \
	X(int, pthread_rwlock_unlock, (pthread_rwlock_t *))                                      \
	X(int, pthread_barrierattr_init, (pthread_barrierattr_t *))                              \
	X(int, pthread_barrierattr_setpshared, (pthread_barrierattr_t *, int))                   \
	X(int, pthread_barrierattr_destroy, (pthread_barrierattr_t *))                           \
	X(int, pthread_barrier_init,                                                             \
	  (pthread_barrier_t *, const pthread_barrierattr_t *, unsigned))                        \
	X(int, pthread_barrier_destroy, (pthread_barrier_t *))                                   \
	X(int, pthread_barrier_wait, (pthread_barrier_t *))                                      \
	X(int, sem_init, (sem_t *, int, unsigned))                                               \
	X(int, sem_destroy, (sem_t *))                                                           \
	X(int, sem_wait, (sem_t *))                                                              \
	X(int, sem_trywait, (sem_t *))                                                           \
	X(int, sem_clockwait, (sem_t *, clockid_t, const struct timespec *))                     \
	X(int, sem_timedwait, (sem_t *, const struct timespec *))                                \
	X(int, sem_post, (sem_t *))                                                              \
	X(int, sem_getvalue, (sem_t *, int *))                                                   \
	X(sem_t *, sem_open, (const char *, int, ...))

#ifdef WEFT_PRELOAD
/* In libweft-pthread.so these names are weft's own: glibc's are the next
 * definitions, looked up on first use (as util/sys.h's). */
#define GLIBC_FIELD(ret, name, args) ret(*name) args;
static struct {
	GLIBC_CALLS(GLIBC_FIELD)
	int resolved;
} g;
#undef GLIBC_FIELD

static void resolve(void)
{
#define GLIBC_RESOLVE(ret, name, args) \
	__atomic_store_n(&g.name, (ret(*) args)wf_px_next_symbol(#name), __ATOMIC_RELAXED);
	GLIBC_CALLS(GLIBC_RESOLVE)
#undef GLIBC_RESOLVE
	__atomic_store_n(&g.resolved, 1, __ATOMIC_RELEASE);
}
#define GLIBC(name) (__atomic_load_n(&g.resolved, __ATOMIC_ACQUIRE) ? g.name : (resolve(), g.name))
#else
#define GLIBC(name) name
#endif

/* ---- which objects are glibc's ------------------------------------------------------- */

static uint32_t *last_word(void *o, size_t size)
{
	return (uint32_t *)((char *)o + size - sizeof(uint32_t));
}

int wf_px_shared_mutex(const pthread_mutex_t *m)
{
	return m &&
	       (__atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED) & GLIBC_MUTEX_PSHARED_BIT);
}

int wf_px_shared_cond(const pthread_cond_t *c)
{
	return c && (__atomic_load_n(&c->__data.__wrefs, __ATOMIC_RELAXED) & 1);
}

#define MARKED(o) \
	((o) &&   \
	 __atomic_load_n(last_word((void *)(o), sizeof *(o)), __ATOMIC_RELAXED) == SHARED_MAGIC)

int wf_px_shared_rwlock(const pthread_rwlock_t *l)
{
	return MARKED(l);
}

int wf_px_shared_barrier(const pthread_barrier_t *b)
{
	return MARKED(b);
}

int wf_px_shared_sem(const sem_t *s)
{
	return MARKED(s);
}

void wf_px_unmark(void *o, size_t size)
{
	*last_word(o, size) = 0;
}

static void mark(void *o, size_t size)
{
	__atomic_store_n(last_word(o, size), SHARED_MAGIC, __ATOMIC_RELAXED);
}

/* ---- waiting in the kernel ----------------------------------------------------------- */

/* f(args) inside a section; its return value and errno are kept (the
 * section's end carries errno if the ULT moves: writing it here after the
 * end could write the kernel thread's it left, sched/sched.h). */
#define WAIT(cancel_point, call)                      \
	({                                            \
		if (cancel_point)                     \
			wf_testcancel();              \
		wf_ult_t *wf_u_ = wf_section_begin(); \
		int wf_r_ = (call);                   \
		wf_section_end(wf_u_);                \
		wf_r_;                                \
	})

/* The end of the next slice of a cancellable wait on clock, or t if that
 * comes first (*last set then). */
#define CANCEL_SLICE_NS 20000000L

static struct timespec slice_end(clockid_t clock, const struct timespec *t, int *last)
{
	struct timespec now;
	clock_gettime(clock, &now);
	now.tv_nsec += CANCEL_SLICE_NS;
	if (now.tv_nsec >= 1000000000L) {
		now.tv_sec++;
		now.tv_nsec -= 1000000000L;
	}
	*last = t &&
		(t->tv_sec < now.tv_sec || (t->tv_sec == now.tv_sec && t->tv_nsec <= now.tv_nsec));
	return *last ? *t : now;
}

/* ---- mutexes ------------------------------------------------------------------------- */

int wf_px_shared_mutex_init(pthread_mutex_t *m, int type)
{
	pthread_mutexattr_t a;
	GLIBC(pthread_mutexattr_init)(&a);
	GLIBC(pthread_mutexattr_settype)(&a, type);
	GLIBC(pthread_mutexattr_setpshared)(&a, PTHREAD_PROCESS_SHARED);
	int e = GLIBC(pthread_mutex_init)(m, &a);
	GLIBC(pthread_mutexattr_destroy)(&a);
	if (!e && !wf_px_shared_mutex(m)) {
		GLIBC(pthread_mutex_destroy)(m);
		return ENOTSUP; /* not glibc's layout */
	}
	return e;
}

int wf_px_shared_mutex_op(pthread_mutex_t *m, int op, clockid_t clock, const struct timespec *t)
{
	switch (op) {
	case WF_PX_LOCK:
		return WAIT(0, GLIBC(pthread_mutex_lock)(m));
	case WF_PX_TRY:
		return GLIBC(pthread_mutex_trylock)(m);
	case WF_PX_CLOCK:
		return WAIT(0, GLIBC(pthread_mutex_clocklock)(m, clock, t));
	case WF_PX_UNLOCK:
		return GLIBC(pthread_mutex_unlock)(m);
	default:
		return GLIBC(pthread_mutex_destroy)(m);
	}
}

/* ---- condition variables ------------------------------------------------------------- */

int wf_px_shared_cond_init(pthread_cond_t *c, clockid_t clock)
{
	pthread_condattr_t a;
	GLIBC(pthread_condattr_init)(&a);
	GLIBC(pthread_condattr_setclock)(&a, clock);
	GLIBC(pthread_condattr_setpshared)(&a, PTHREAD_PROCESS_SHARED);
	int e = GLIBC(pthread_cond_init)(c, &a);
	GLIBC(pthread_condattr_destroy)(&a);
	if (!e && !wf_px_shared_cond(c)) {
		GLIBC(pthread_cond_destroy)(c);
		return ENOTSUP;
	}
	return e;
}

int wf_px_shared_cond_wait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock,
			   const struct timespec *t, int timed)
{
	/* glibc's wait unlocks and relocks the mutex with glibc's calls: it
	 * must be glibc's too. */
	if (!wf_px_shared_mutex(m))
		return EINVAL;
	if (timed && (!t || t->tv_nsec < 0 || t->tv_nsec >= 1000000000L))
		return EINVAL;
	if (clock == WF_PX_COND_CLOCK)
		clock = __atomic_load_n(&c->__data.__wrefs, __ATOMIC_RELAXED) & 2 ? CLOCK_MONOTONIC
										  : CLOCK_REALTIME;
	int last;
	struct timespec end = slice_end(timed ? clock : CLOCK_MONOTONIC, timed ? t : NULL, &last);
	int r = WAIT(1, GLIBC(pthread_cond_clockwait)(c, m, timed ? clock : CLOCK_MONOTONIC, &end));
	if (r != ETIMEDOUT || last)
		return r;
	wf_testcancel(); /* with the mutex held again, as POSIX wants */
	return 0;        /* a spurious wake-up: the caller waits again */
}

int wf_px_shared_cond_op(pthread_cond_t *c, int op)
{
	switch (op) {
	case WF_PX_SIGNAL:
		return GLIBC(pthread_cond_signal)(c);
	case WF_PX_BROADCAST:
		return GLIBC(pthread_cond_broadcast)(c);
	default:
		return GLIBC(pthread_cond_destroy)(c);
	}
}

/* ---- rwlocks --------------------------------------------------------------------------- */

int wf_px_shared_rwlock_init(pthread_rwlock_t *l, int kind)
{
	pthread_rwlockattr_t a;
	GLIBC(pthread_rwlockattr_init)(&a);
	GLIBC(pthread_rwlockattr_setkind_np)(&a, kind);
	GLIBC(pthread_rwlockattr_setpshared)(&a, PTHREAD_PROCESS_SHARED);
	int e = GLIBC(pthread_rwlock_init)(l, &a);
	GLIBC(pthread_rwlockattr_destroy)(&a);
	if (!e)
		mark(l, sizeof *l);
	return e;
}

int wf_px_shared_rwlock_op(pthread_rwlock_t *l, int op, clockid_t clock, const struct timespec *t)
{
	int e;
	switch (op) {
	case WF_PX_RDLOCK:
		return t ? WAIT(0, GLIBC(pthread_rwlock_clockrdlock)(l, clock, t))
			 : WAIT(0, GLIBC(pthread_rwlock_rdlock)(l));
	case WF_PX_WRLOCK:
		return t ? WAIT(0, GLIBC(pthread_rwlock_clockwrlock)(l, clock, t))
			 : WAIT(0, GLIBC(pthread_rwlock_wrlock)(l));
	case WF_PX_TRYRD:
		return GLIBC(pthread_rwlock_tryrdlock)(l);
	case WF_PX_TRYWR:
		return GLIBC(pthread_rwlock_trywrlock)(l);
	case WF_PX_UNLOCK:
		return GLIBC(pthread_rwlock_unlock)(l);
	default:
		if (!(e = GLIBC(pthread_rwlock_destroy)(l)))
			wf_px_unmark(l, sizeof *l);
		return e;
	}
}

/* ---- barriers ------------------------------------------------------------------------- */

int wf_px_shared_barrier_init(pthread_barrier_t *b, unsigned count)
{
	pthread_barrierattr_t a;
	GLIBC(pthread_barrierattr_init)(&a);
	GLIBC(pthread_barrierattr_setpshared)(&a, PTHREAD_PROCESS_SHARED);
	int e = GLIBC(pthread_barrier_init)(b, &a, count);
	GLIBC(pthread_barrierattr_destroy)(&a);
	if (!e)
		mark(b, sizeof *b);
	return e;
}

int wf_px_shared_barrier_op(pthread_barrier_t *b, int op)
{
	if (op == WF_PX_WAIT)
		return WAIT(0, GLIBC(pthread_barrier_wait)(b));
	int e = GLIBC(pthread_barrier_destroy)(b);
	if (!e)
		wf_px_unmark(b, sizeof *b);
	return e;
}

/* ---- semaphores: -1 and errno, as sem_*(3) ------------------------------------------- */

int wf_px_shared_sem_init(sem_t *s, unsigned value)
{
	int r = GLIBC(sem_init)(s, 1, value);
	if (r == 0)
		mark(s, sizeof *s);
	return r;
}

int wf_px_shared_sem_op(sem_t *s, int op, clockid_t clock, const struct timespec *t, int *value)
{
	int r;
	switch (op) {
	case WF_PX_WAIT:
		if (t && (t->tv_nsec < 0 || t->tv_nsec >= 1000000000L)) {
			errno = EINVAL;
			return -1;
		}
		for (;;) {
			int last;
			clockid_t k = t ? clock : CLOCK_MONOTONIC;
			struct timespec end = slice_end(k, t, &last);
			r = WAIT(1, GLIBC(sem_clockwait)(s, k, &end));
			if (r == 0 || errno != ETIMEDOUT || last)
				return r;
		}
	case WF_PX_TRY:
		return GLIBC(sem_trywait)(s);
	case WF_PX_POST:
		return GLIBC(sem_post)(s);
	case WF_PX_GETVALUE:
		return GLIBC(sem_getvalue)(s, value);
	default:
		if ((r = GLIBC(sem_destroy)(s)) == 0)
			wf_px_unmark(s, sizeof *s);
		return r;
	}
}

/* Named semaphores are glibc's, in a shared mapping: marked here so that
 * the calls above take them. */
WF_PX_API sem_t *WF_PX(sem_open)(const char *name, int flags, ...)
{
	mode_t mode = 0;
	unsigned value = 0;
	if (flags & O_CREAT) {
		va_list ap;
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		value = va_arg(ap, unsigned);
		va_end(ap);
	}
	sem_t *s = GLIBC(sem_open)(name, flags, mode, value);
	if (s != SEM_FAILED)
		mark(s, sizeof *s);
	return s;
}
