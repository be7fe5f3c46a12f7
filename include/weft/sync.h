/* weft synchronization: wait-on-address, timers and sleeping, mutexes with
 * adaptive waiting, condition variables, read-write locks, barriers,
 * semaphores, spinlocks, once, thread-specific data, cleanup handlers and
 * cancellation. Included by <weft.h>.
 *
 * Conventions (as in <weft.h>):
 *   - Every function returns 0 or an errno value (never -1 with errno set),
 *     except where a POSIX-style return is documented (weft_getspecific).
 *   - Every object is usable when all-zero: `weft_mutex_t m = {0};` is a
 *     valid default mutex (normal, adaptive), a zeroed cond uses
 *     CLOCK_REALTIME for timed waits, a zeroed semaphore has value 0. The
 *     WEFT_*_INITIALIZER macros say the same thing by name.
 *   - Blocking from a ULT parks only the ULT: its worker runs other ULTs.
 *     Blocking from a kernel thread that is not a worker (a "foreign"
 *     thread) blocks that thread on a futex; wake-ups cross between ULTs and
 *     foreign threads in both directions. Between foreign threads the
 *     objects work even when the runtime is not running.
 *   - Absolute deadlines are struct timespec on the clock the call names;
 *     a tv_nsec outside [0, 1e9) is EINVAL (checked only when the call would
 *     block, as POSIX allows), a deadline in the past is ETIMEDOUT.
 *   - Fields of the structures below are private: they are spelled out only
 *     so that objects can be declared, embedded and zero-initialised.
 */
#ifndef WEFT_SYNC_H
#define WEFT_SYNC_H

#include <stdint.h>
#include <time.h>
#if defined(__GLIBC__) && !defined(__clockid_t_defined)
#include <bits/types/clockid_t.h> /* time.h declares it only for POSIX programs */
#endif

#ifdef __cplusplus
extern "C" {
#endif

#ifndef WEFT_API
#define WEFT_API __attribute__((visibility("default")))
#endif

typedef uint64_t weft_t; /* as in <weft.h>, so that this header stands alone */

/* ---- wait-on-address ---------------------------------------------------- */

/* Block until woken by weft_wake(addr, ...), as long as *addr == expected
 * when checked (atomically with enqueueing, like FUTEX_WAIT).
 *   abstime NULL: no deadline; otherwise on CLOCK_MONOTONIC or
 *   CLOCK_REALTIME (clock; anything else EINVAL).
 * Returns 0 when woken, EAGAIN if *addr != expected, ETIMEDOUT, EINVAL, or
 * EINTR if a signal was sent to the calling ULT.
 * Never returns 0 without a matching wake (no spurious wake-ups), but a
 * wake meant for an earlier value may be received: re-check the condition. */
WEFT_API int weft_wait(const uint32_t *addr, uint32_t expected, clockid_t clock,
		       const struct timespec *abstime);
/* Wake up to n (n > 0; INT32_MAX for all) waiters on addr, oldest first.
 * Returns how many were woken (>= 0), or -EINVAL for n <= 0. */
WEFT_API int weft_wake(const uint32_t *addr, int n);

/* ---- sleeping ------------------------------------------------------------ */

/* Sleep for ns nanoseconds (0: yield). The ULT parks; its worker runs others. */
WEFT_API int weft_sleep_ns(uint64_t ns);
/* As nanosleep(2): EINVAL for a bad timespec; EINTR, with the time left in
 * *rem, if a signal sent to this ULT (pthread_kill through the POSIX layer)
 * interrupted it; otherwise *rem (if rem is not NULL) is set to zero. A
 * cancelled ULT does not return at all. */
WEFT_API int weft_nanosleep(const struct timespec *req, struct timespec *rem);
/* As clock_nanosleep(2): clock CLOCK_MONOTONIC or CLOCK_REALTIME (else
 * EINVAL), flags 0 (relative) or TIMER_ABSTIME. */
WEFT_API int weft_clock_nanosleep(clockid_t clock, int flags, const struct timespec *req,
				  struct timespec *rem);

/* ---- mutexes --------------------------------------------------------------- */

enum {
	WEFT_MUTEX_NORMAL = 0, /* relocking deadlocks; unlocking an unowned one is undefined */
	WEFT_MUTEX_RECURSIVE,  /* the owner may relock; as many unlocks release it */
	WEFT_MUTEX_ERRORCHECK, /* relock: EDEADLK; unlock by a non-owner: EPERM */
	WEFT_MUTEX_DEFAULT = WEFT_MUTEX_NORMAL
};

/* How a thread waits for a held mutex (seed 004 section 6). */
enum {
	WEFT_LOCK_ADAPTIVE = 0, /* spin-then-park, the lock retunes its spin budget (default) */
	WEFT_LOCK_SPIN,         /* spin (yielding the worker now and then), never park */
	WEFT_LOCK_SPIN_PARK,    /* spin for the fixed budget, then park */
	WEFT_LOCK_PARK          /* park at once */
};

typedef struct weft_mutexattr {
	int type;   /* WEFT_MUTEX_* */
	int policy; /* WEFT_LOCK_* */
	int spin;   /* spin budget in pauses; 0: the default */
	int reserved;
} weft_mutexattr_t;

/* 40 bytes, laid out so that it fits in glibc's pthread_mutex_t (40 bytes
 * on x86-64, 48 on aarch64) with the type where glibc keeps its kind: the
 * POSIX layer stores weft mutexes in pthread_mutex_t, and glibc's static
 * initializers (PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP, ...) come out right. */
typedef struct weft_mutex {
	uint32_t state;    /* 0 unlocked, 1 locked, 2 locked with (maybe) waiters */
	uint16_t count;    /* recursion depth beyond the first lock */
	uint16_t longest;  /* adaptive: the longest successful spin in this window */
	uint64_t owner;    /* owner's identity (recursive/errorcheck), else 0 */
	uint16_t type;     /* WEFT_MUTEX_* (3, glibc's adaptive kind, acts as NORMAL) */
	uint16_t policy;   /* WEFT_LOCK_* */
	uint16_t spin;     /* current spin budget in pauses (0: not yet tuned) */
	uint16_t spin_set; /* the fixed budget of SPIN_PARK, or adaptive's start */
	uint8_t sample;    /* adaptive: contended acquisitions in this window */
	uint8_t spun_ok;   /* adaptive: of those, acquired while spinning */
	uint16_t reserved;
	uint32_t n_acquired, n_contended, n_parks; /* counters; they wrap at 2^32 */
} weft_mutex_t;

#define WEFT_MUTEX_INITIALIZER \
	{                      \
		0              \
	}

/* A snapshot of a mutex's counters (weft_mutex_stats). The counters are
 * kept in 32 bits and wrap; compare differences of snapshots. */
typedef struct weft_mutex_stats {
	uint64_t acquisitions; /* successful locks, trylocks included */
	uint64_t contended;    /* locks that found it held */
	uint64_t parks;        /* times a locker parked */
	int spin_budget;       /* current spin budget in pauses */
	int policy;            /* WEFT_LOCK_* */
} weft_mutex_stats_t;

WEFT_API int weft_mutexattr_init(weft_mutexattr_t *a);
WEFT_API int weft_mutexattr_destroy(weft_mutexattr_t *a);
WEFT_API int weft_mutexattr_settype(weft_mutexattr_t *a, int type);
WEFT_API int weft_mutexattr_gettype(const weft_mutexattr_t *a, int *type);
WEFT_API int weft_mutexattr_setpolicy(weft_mutexattr_t *a, int policy);
WEFT_API int weft_mutexattr_getpolicy(const weft_mutexattr_t *a, int *policy);
/* Spin budget, 1..WEFT_SPIN_MAX: how long a locker spins before it parks,
 * in pauses (the CPU's spin-wait hint: x86 pause, aarch64 yield); the
 * fixed budget of SPIN_PARK and the starting point of ADAPTIVE. A spinner
 * polls the lock with exponential backoff: after 1, 2, 4, ... pauses, then
 * every 64. */
#define WEFT_SPIN_MAX 65535
WEFT_API int weft_mutexattr_setspin(weft_mutexattr_t *a, int spin);
WEFT_API int weft_mutexattr_getspin(const weft_mutexattr_t *a, int *spin);

WEFT_API int weft_mutex_init(weft_mutex_t *m, const weft_mutexattr_t *a);
/* EBUSY if locked or waited on. */
WEFT_API int weft_mutex_destroy(weft_mutex_t *m);
WEFT_API int weft_mutex_lock(weft_mutex_t *m);
/* EBUSY if held (by anyone, including the caller for non-recursive types);
 * EAGAIN if a recursive mutex is held 65,536 times. */
WEFT_API int weft_mutex_trylock(weft_mutex_t *m);
/* Deadline on CLOCK_REALTIME (as pthread_mutex_timedlock). */
WEFT_API int weft_mutex_timedlock(weft_mutex_t *m, const struct timespec *abstime);
/* Deadline on clock (CLOCK_MONOTONIC or CLOCK_REALTIME). */
WEFT_API int weft_mutex_clocklock(weft_mutex_t *m, clockid_t clock, const struct timespec *abstime);
WEFT_API int weft_mutex_unlock(weft_mutex_t *m);
/* Change the waiting policy / spin budget of a live mutex, at any time. */
WEFT_API int weft_mutex_setpolicy(weft_mutex_t *m, int policy);
WEFT_API int weft_mutex_setspin(weft_mutex_t *m, int spin);
WEFT_API int weft_mutex_stats(const weft_mutex_t *m, weft_mutex_stats_t *out);

/* ---- condition variables ----------------------------------------------------- */

typedef struct weft_condattr {
	int clock; /* clockid_t for timed waits; 0 is CLOCK_REALTIME */
	int reserved;
} weft_condattr_t;

typedef struct weft_cond {
	/* One 64-bit word, updated as one (little-endian): */
	uint32_t waiters;    /* threads inside a wait: its low half */
	uint32_t seq;        /* bumped by every signal and broadcast: its high half */
	uint32_t clock;      /* clockid_t of timed waits */
	uint32_t reserved;   /* 0 */
	weft_mutex_t *mutex; /* the mutex of the current waiters */
} weft_cond_t;

#define WEFT_COND_INITIALIZER \
	{                     \
		0             \
	}

WEFT_API int weft_condattr_init(weft_condattr_t *a);
WEFT_API int weft_condattr_destroy(weft_condattr_t *a);
WEFT_API int weft_condattr_setclock(weft_condattr_t *a, clockid_t clock);
WEFT_API int weft_condattr_getclock(const weft_condattr_t *a, clockid_t *clock);
WEFT_API int weft_cond_init(weft_cond_t *c, const weft_condattr_t *a);
/* EBUSY if a thread is waiting on it. */
WEFT_API int weft_cond_destroy(weft_cond_t *c);
/* The caller must hold m (else EPERM for an errorcheck/recursive m).
 * m is held again when these return, whatever they return. */
WEFT_API int weft_cond_wait(weft_cond_t *c, weft_mutex_t *m);
WEFT_API int weft_cond_timedwait(weft_cond_t *c, weft_mutex_t *m, const struct timespec *abstime);
WEFT_API int weft_cond_clockwait(weft_cond_t *c, weft_mutex_t *m, clockid_t clock,
				 const struct timespec *abstime);
WEFT_API int weft_cond_signal(weft_cond_t *c);
/* Wakes one waiter and moves the others onto the mutex's wait queue, so
 * they acquire it one at a time instead of all racing for it. */
WEFT_API int weft_cond_broadcast(weft_cond_t *c);

/* ---- read-write locks ---------------------------------------------------------- */

enum {
	WEFT_RWLOCK_PREFER_READER = 0, /* readers enter while others read (default) */
	WEFT_RWLOCK_PREFER_WRITER      /* a waiting writer holds back new readers */
};

typedef struct weft_rwlockattr {
	int pref;
	int reserved;
} weft_rwlockattr_t;

typedef struct weft_rwlock {
	uint32_t lock;   /* internal spinlock guarding the fields below */
	uint32_t pref;   /* WEFT_RWLOCK_PREFER_* */
	int32_t readers; /* readers inside */
	uint32_t writer; /* 1 while a writer is inside */
	uint32_t rwait;  /* readers waiting */
	uint32_t wwait;  /* writers waiting */
	uint32_t rseq;   /* readers wait on this word */
	uint32_t wseq;   /* writers wait on this word */
	uint64_t owner;  /* weft_t of the writer (EDEADLK checks) */
} weft_rwlock_t;

#define WEFT_RWLOCK_INITIALIZER \
	{                       \
		0               \
	}

WEFT_API int weft_rwlockattr_init(weft_rwlockattr_t *a);
WEFT_API int weft_rwlockattr_destroy(weft_rwlockattr_t *a);
WEFT_API int weft_rwlockattr_setpref(weft_rwlockattr_t *a, int pref);
WEFT_API int weft_rwlockattr_getpref(const weft_rwlockattr_t *a, int *pref);
WEFT_API int weft_rwlock_init(weft_rwlock_t *l, const weft_rwlockattr_t *a);
/* EBUSY if held or waited on. */
WEFT_API int weft_rwlock_destroy(weft_rwlock_t *l);
WEFT_API int weft_rwlock_rdlock(weft_rwlock_t *l);
WEFT_API int weft_rwlock_tryrdlock(weft_rwlock_t *l);
WEFT_API int weft_rwlock_timedrdlock(weft_rwlock_t *l, const struct timespec *abstime);
WEFT_API int weft_rwlock_clockrdlock(weft_rwlock_t *l, clockid_t clock,
				     const struct timespec *abstime);
/* EDEADLK if the caller already holds it for writing. */
WEFT_API int weft_rwlock_wrlock(weft_rwlock_t *l);
WEFT_API int weft_rwlock_trywrlock(weft_rwlock_t *l);
WEFT_API int weft_rwlock_timedwrlock(weft_rwlock_t *l, const struct timespec *abstime);
WEFT_API int weft_rwlock_clockwrlock(weft_rwlock_t *l, clockid_t clock,
				     const struct timespec *abstime);
/* EPERM if it is not locked, or write-locked by another thread (read locks
 * are not tracked per thread). */
WEFT_API int weft_rwlock_unlock(weft_rwlock_t *l);

/* ---- barriers ------------------------------------------------------------------- */

#define WEFT_BARRIER_SERIAL_THREAD (-1)

typedef struct weft_barrierattr {
	int reserved;
} weft_barrierattr_t;

typedef struct weft_barrier {
	uint32_t lock;  /* internal spinlock */
	uint32_t count; /* threads per cycle */
	uint32_t arrived;
	uint32_t phase;  /* cycle number; waiters wait on it */
	uint32_t inside; /* threads still inside a wait (destroy: EBUSY) */
	uint32_t reserved;
} weft_barrier_t;

WEFT_API int weft_barrierattr_init(weft_barrierattr_t *a);
WEFT_API int weft_barrierattr_destroy(weft_barrierattr_t *a);
/* count 0: EINVAL. */
WEFT_API int weft_barrier_init(weft_barrier_t *b, const weft_barrierattr_t *a, unsigned count);
WEFT_API int weft_barrier_destroy(weft_barrier_t *b);
/* Returns WEFT_BARRIER_SERIAL_THREAD in one thread per cycle, 0 in the others. */
WEFT_API int weft_barrier_wait(weft_barrier_t *b);

/* ---- counting semaphores (sem_* semantics, errno-valued returns) ------------------ */

#define WEFT_SEM_VALUE_MAX 0x7fffffff

typedef struct weft_sem {
	/* One 64-bit word, updated as one (little-endian): */
	uint32_t value;   /* available units: its low half */
	uint32_t waiters; /* threads blocked in a wait: its high half */
} __attribute__((aligned(8))) weft_sem_t;

/* value > WEFT_SEM_VALUE_MAX: EINVAL. pshared is not supported (EINVAL if nonzero). */
WEFT_API int weft_sem_init(weft_sem_t *s, int pshared, unsigned value);
/* EBUSY if a thread is waiting. */
WEFT_API int weft_sem_destroy(weft_sem_t *s);
WEFT_API int weft_sem_wait(weft_sem_t *s);
/* EAGAIN if the value is 0. */
WEFT_API int weft_sem_trywait(weft_sem_t *s);
WEFT_API int weft_sem_timedwait(weft_sem_t *s, const struct timespec *abstime);
WEFT_API int weft_sem_clockwait(weft_sem_t *s, clockid_t clock, const struct timespec *abstime);
/* EOVERFLOW at WEFT_SEM_VALUE_MAX. */
WEFT_API int weft_sem_post(weft_sem_t *s);
WEFT_API int weft_sem_getvalue(weft_sem_t *s, int *value);

/* ---- spinlocks ---------------------------------------------------------------------- */

typedef struct weft_spinlock {
	uint32_t locked;
} weft_spinlock_t;

/* pshared is accepted and ignored (weft is one process). */
WEFT_API int weft_spin_init(weft_spinlock_t *l, int pshared);
WEFT_API int weft_spin_destroy(weft_spinlock_t *l);
/* Spins; a ULT that spins long yields its worker now and then, so the
 * holder can run even on the same worker. */
WEFT_API int weft_spin_lock(weft_spinlock_t *l);
WEFT_API int weft_spin_trylock(weft_spinlock_t *l);
WEFT_API int weft_spin_unlock(weft_spinlock_t *l);

/* ---- once ----------------------------------------------------------------------------- */

typedef struct weft_once {
	uint32_t state;
} weft_once_t;

#define WEFT_ONCE_INIT \
	{              \
		0      \
	}

/* Runs fn exactly once per o; concurrent callers wait until it returned. */
WEFT_API int weft_once(weft_once_t *o, void (*fn)(void));

/* ---- thread-specific data ---------------------------------------------------------------- */

typedef unsigned weft_key_t;

#define WEFT_KEYS_MAX              1024
#define WEFT_DESTRUCTOR_ITERATIONS 4

/* EAGAIN when WEFT_KEYS_MAX keys exist. */
WEFT_API int weft_key_create(weft_key_t *k, void (*destructor)(void *));
/* EINVAL for a key that does not exist. Destructors are not run. */
WEFT_API int weft_key_delete(weft_key_t k);
/* NULL for an unset value or an invalid key (as pthread_getspecific). */
WEFT_API void *weft_getspecific(weft_key_t k);
/* EINVAL for an invalid key; ENOMEM if the value table cannot grow. */
WEFT_API int weft_setspecific(weft_key_t k, const void *value);

/* ---- cleanup handlers and cancellation ----------------------------------------------------- */

#define WEFT_CANCELED ((void *)(intptr_t)-1)

enum { WEFT_CANCEL_ENABLE = 0, WEFT_CANCEL_DISABLE };
enum { WEFT_CANCEL_DEFERRED = 0, WEFT_CANCEL_ASYNCHRONOUS };

/* Request cancellation of t: it acts on it at its next cancellation point
 * (the condition variable waits, the semaphore waits, the blocking rwlock
 * locks, the sleeps, weft_join, weft_testcancel and weft_wait - every
 * blocking call of weft except the mutex locks, weft_spin_lock, weft_once
 * and weft_barrier_wait, which POSIX does not allow to be cancellation
 * points) while cancellation is enabled, running its cleanup handlers and
 * thread-specific data destructors and exiting with WEFT_CANCELED. A ULT blocked at a cancellation point is
 * taken out of its wait. ESRCH for an unknown t. */
WEFT_API int weft_cancel(weft_t t);
WEFT_API int weft_setcancelstate(int state, int *oldstate);
/* WEFT_CANCEL_DEFERRED (the default) or WEFT_CANCEL_ASYNCHRONOUS: a
 * cancellation of a ULT that runs is then acted on at once, at its next
 * instruction where a preemption is safe (docs/scheduling.md,
 * "Preemption"; with preemption off, at its next cancellation point), and
 * setting it with a cancellation pending acts on that. ENOTSUP for
 * ASYNCHRONOUS from a thread that is no ULT; EINVAL for another type. */
WEFT_API int weft_setcanceltype(int type, int *oldtype);
WEFT_API void weft_testcancel(void);

struct weft_cleanup_frame {
	void (*fn)(void *);
	void *arg;
	struct weft_cleanup_frame *prev;
};
WEFT_API void weft_cleanup_push_frame(struct weft_cleanup_frame *f, void (*fn)(void *), void *arg);
WEFT_API void weft_cleanup_pop_frame(struct weft_cleanup_frame *f, int execute);

/* As pthread_cleanup_push/pop: must appear as a pair in the same scope. */
#define weft_cleanup_push(fn, arg)                  \
	do {                                        \
		struct weft_cleanup_frame weft_cf_; \
		weft_cleanup_push_frame(&weft_cf_, (fn), (arg));
#define weft_cleanup_pop(execute)                     \
	weft_cleanup_pop_frame(&weft_cf_, (execute)); \
	}                                             \
	while (0)

#ifdef __cplusplus
}
#endif

#endif /* WEFT_SYNC_H */
