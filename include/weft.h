/* weft — many user-level threads (ULTs) on one kernel thread per core.
 *
 * This is the one header a program includes. The native API below creates,
 * joins and schedules ULTs; later sub-APIs live in the headers under include/weft/ and are
 * included from here.
 *
 * Conventions (the pthread ones):
 *   - Every call returns 0 or an errno value and leaves errno alone.
 *   - EINVAL for bad arguments, ESRCH for an unknown thread, EDEADLK for
 *     joining oneself or closing a join cycle, EAGAIN/ENOMEM when resources
 *     run out. Bad input and exhaustion never abort the process.
 *   - The first call that needs the runtime initialises it with defaults;
 *     weft_init() is only needed to choose a configuration. If that first
 *     call comes from the process's main thread, main becomes a ULT on
 *     worker 0 (as with weft_init); from any other thread, the runtime
 *     starts with all its workers on new kernel threads and the caller stays
 *     a foreign thread (it may exit without taking a worker with it).
 *
 * Calling from a kernel thread that is not one of weft's workers (a plain
 * pthread the program made itself) is supported per call; each call's comment
 * says what happens ("from a foreign thread: ...").
 */
#ifndef WEFT_H
#define WEFT_H

#include <stddef.h>
#include <stdint.h>

#include <weft/version.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define WEFT_API __attribute__((visibility("default")))
#else
#define WEFT_API
#endif

/* A thread handle: an increasing 64-bit number, never reused within a
 * process. 0 (WEFT_NULL) is never a valid thread. Lookup by handle is O(1). */
typedef uint64_t weft_t;
#define WEFT_NULL ((weft_t)0)

/* Longest thread name, including the terminating NUL. */
#define WEFT_NAME_MAX 32

/* Smallest stack a ULT may be given (bytes). */
#define WEFT_STACK_MIN (16u * 1024u)

enum weft_sched_kind {
	WEFT_SCHED_DEFAULT = 0, /* WEFT_SCHED, else steal */
	WEFT_SCHED_STEAL = 1,   /* per-worker run queues, randomized work stealing */
	WEFT_SCHED_SHARE = 2,   /* one central FIFO ready queue */
	WEFT_SCHED_PRIO = 3,    /* POSIX priorities (weft/sched.h) */
};

enum weft_context_kind {
	WEFT_CONTEXT_DEFAULT = 0,  /* WEFT_CONTEXT, else asm */
	WEFT_CONTEXT_ASM = 1,      /* hand-written register switch */
	WEFT_CONTEXT_UCONTEXT = 2, /* ucontext_t, makecontext */
};

enum weft_io_kind {
	WEFT_IO_DEFAULT = 0, /* WEFT_IO, else poll */
	WEFT_IO_POLL = 1,    /* the poller (epoll): the ULT parks, its worker runs others */
	WEFT_IO_OFF = 2,     /* the ULT waits in the kernel, in a system call section */
	WEFT_IO_URING = 3,   /* io_uring: not built; weft_init answers ENOTSUP */
};

/* Runtime configuration. Zero in a field means "from the environment, else
 * the default"; weft_config_init() fills a config that way. */
typedef struct weft_config {
	int workers;             /* kernel threads; 0: WEFT_WORKERS, else usable CPUs */
	int pin;                 /* 1: pin worker i to the i-th allowed CPU; -1: don't;
	                            0: WEFT_PIN (1 pins), else don't */
	int sched;               /* enum weft_sched_kind, for every worker; 0: see
	                            scheds */
	int context;             /* enum weft_context_kind */
	size_t stack_size;       /* default ULT stack; 0: WEFT_STACK_SIZE, else 64 KiB */
	long idle_spin_ns;       /* how long an idle worker spins before it sleeps (a
	                            starting budget: each worker doubles it, up to 40x,
	                            while it keeps being woken soon after sleeping);
	                            0: WEFT_IDLE_SPIN_NS (0 there means never spin),
	                            else 50 us; negative: never spin */
	long guarded_stacks_max; /* stacks with a guard page before falling back to
	                            guard-less slab stacks; 0: WEFT_GUARDED_STACKS
	                            (0 there means none), else derived from
	                            vm.max_map_count; negative: none */
	int migrate;             /* 1: a ULT may move between workers whenever it
	                            blocks or yields; -1: a ULT stays on the worker
	                            that first runs it (its thread-locals and errno
	                            stay its own); 0: WEFT_MIGRATE (0 there means
	                            stay), else move */
	const char *trace;       /* scheduler event trace: the path of the files to
	                            write (path.json for Perfetto, path.csv; see
	                            docs/observability.md); NULL: WEFT_TRACE, else
	                            none; "": none */
	int tls;                 /* enum weft_tls: the default of ULTs' thread-local
	                            storage; WEFT_TLS_DEFAULT: WEFT_TLS ("own" or
	                            "worker"), else worker for weft_create's ULTs
	                            and own for the POSIX layer's threads. Under own
	                            (and under the default when the POSIX layer
	                            started the runtime) the root ULT keeps its
	                            kernel thread's thread-locals wherever it runs */
	const char *scheds;      /* the scheduler of each worker, as WEFT_SCHED
	                            writes it ("share", "share:0,steal:1-3"; see
	                            docs/scheduling.md); NULL: `sched` if set, else
	                            WEFT_SCHED, else steal everywhere. Resolved
	                            (weft_config_init): never NULL */
	long syscall_ns;         /* how long a ULT may stay in a system call section
	                            (weft/io.h) before its worker is handed to a
	                            spare kernel thread; 0: WEFT_SYSCALL_NS (0 there
	                            means never), else 50 us; negative: never;
	                            WEFT_SYSCALL_NS above 1e12 or negative:
	                            EINVAL */
	int spares;              /* most kernel threads kept besides the workers to
	                            carry a worker whose kernel thread is blocked in
	                            the kernel; 0: WEFT_SPARES (0 there means none),
	                            else 256; negative: none (and no hand-overs:
	                            weft_syscall_begin returns NULL); above
	                            100000 (here or in WEFT_SPARES): EINVAL */
	long preempt_ns;         /* a ULT that runs this long without a scheduling
	                            point is preempted, at the next instruction
	                            where that is safe (docs/scheduling.md,
	                            "Preemption"); 0: WEFT_PREEMPT_NS (0 there
	                            means never), else 10 ms; negative: never;
	                            below 100 us or above 1e12 (here or in
	                            WEFT_PREEMPT_NS): EINVAL */
	int io;                  /* enum weft_io_kind: how a ULT waits for a file
	                            descriptor (weft_fd_wait, and the blocking calls
	                            libweft-pthread.so wraps); WEFT_IO_DEFAULT:
	                            WEFT_IO ("poll", "off" or "uring"), else poll */
} weft_config_t;

/* Fill *cfg with the values weft_init(NULL) would use (environment applied). */
WEFT_API int weft_config_init(weft_config_t *cfg);

/* Start the runtime. The calling kernel thread becomes worker 0 and the
 * caller itself becomes a ULT running on it (it may later migrate). Returns
 * EBUSY if already running, EINVAL for a bad config or environment value,
 * EAGAIN/ENOMEM if workers or stacks cannot be made, open(2)'s error if a
 * trace was asked for and its file cannot be made (ENOTSUP if the library
 * was built without tracing). */
WEFT_API int weft_init(const weft_config_t *cfg);

/* Stop the runtime and free its resources. Must be called by the ULT that
 * initialised the runtime (if the runtime was started lazily by a thread
 * other than main: by any thread that is not a worker); EPERM otherwise,
 * EINVAL if the runtime is not running, EBUSY while any other ULT has not
 * exited yet. Afterwards the caller is a plain kernel thread again, on the
 * kernel thread that called weft_init, and weft_init may be called again.
 * Returning from main does the same when it can (no other ULT alive).
 * The caller's thread-specific values (weft_setspecific) stay with it. */
WEFT_API int weft_shutdown(void);

/* Attributes. A zero-filled weft_attr_t is NOT valid; use weft_attr_init. */
typedef struct weft_attr {
	uint32_t magic_; /* private */
	int detached_;   /* private */
	int worker_;     /* private */
	size_t stacksize_;
	void *stackaddr_;
	char name_[WEFT_NAME_MAX];
	int sched_policy_, sched_prio_; /* private: weft_attr_setschedparam's; -1: inherit */
	uint64_t sigmask_;              /* private: the POSIX layer's signal mask */
	size_t guardsize_;              /* private: the POSIX layer's guard size */
	int tls_;                       /* private: enum weft_tls */
} weft_attr_t;

WEFT_API int weft_attr_init(weft_attr_t *a);
WEFT_API int weft_attr_destroy(weft_attr_t *a);
/* n >= WEFT_STACK_MIN, else EINVAL; rounded up to the page size. */
WEFT_API int weft_attr_setstacksize(weft_attr_t *a, size_t n);
WEFT_API int weft_attr_getstacksize(const weft_attr_t *a, size_t *n);
/* A caller-owned stack [addr, addr+n): weft keeps the thread descriptor at
 * its top, adds no guard page and never frees it. n >= WEFT_STACK_MIN. */
WEFT_API int weft_attr_setstack(weft_attr_t *a, void *addr, size_t n);
WEFT_API int weft_attr_setdetached(weft_attr_t *a, int detached);
WEFT_API int weft_attr_getdetached(const weft_attr_t *a, int *detached);
/* ERANGE if strlen(name) >= WEFT_NAME_MAX. */
WEFT_API int weft_attr_setname(weft_attr_t *a, const char *name);
/* Bind to one worker (0 .. weft_num_workers()-1) or -1 = any. A worker out of
 * range is reported by weft_create (EINVAL), since the count may not be known
 * yet when the attribute is set. */
WEFT_API int weft_attr_setworker(weft_attr_t *a, int worker);
WEFT_API int weft_attr_getworker(const weft_attr_t *a, int *worker);

/* Thread-local storage of a ULT (docs/posix-coverage.md, "Thread-local
 * storage"):
 *   WEFT_TLS_WORKER  it shares its worker's kernel thread's: __thread
 *                    variables (and the C library's per-thread state) are
 *                    the worker's, seen by every such ULT that runs there;
 *   WEFT_TLS_OWN     a thread control block of its own, as a kernel thread
 *                    has: its own __thread and C++ thread_local variables,
 *                    errno, malloc cache and exception state, wherever it
 *                    runs; one thread-pointer write per switch to or from
 *                    it (wrfsbase: about 10 ns on an AMD EPYC, 1-3 ns on
 *                    an Intel Xeon) and about 4 KiB of address space;
 *   WEFT_TLS_DEFAULT the process's default (weft_config_t.tls, WEFT_TLS):
 *                    WORKER unless set to own. The POSIX layer's threads
 *                    use OWN unless the process's default says worker.
 * weft_create answers ENOTSUP for OWN where it cannot be had (a target
 * other than x86-64 and aarch64, a C library other than glibc 2.34+, a
 * sanitizer build; WEFT_VERBOSE=1 names the reason). */
enum weft_tls { WEFT_TLS_DEFAULT = 0, WEFT_TLS_WORKER = 1, WEFT_TLS_OWN = 2 };
WEFT_API int weft_attr_settls(weft_attr_t *a, int tls);
WEFT_API int weft_attr_gettls(const weft_attr_t *a, int *tls);

/* Create a ULT running fn(arg). It starts on the creator's worker (a bound
 * ULT on its worker), with the creator's signal mask (as pthread_create;
 * none from a foreign thread). Returning from fn is weft_exit(return
 * value). From a foreign thread: works; the ULT is queued for any worker. */
WEFT_API int weft_create(weft_t *t, const weft_attr_t *attr, void *(*fn)(void *), void *arg);

/* Wait for t to exit and collect its value. EDEADLK for t == self or a join
 * cycle, EINVAL if t is detached or already being joined, ESRCH if unknown.
 * From a foreign thread: works; the kernel thread blocks on a futex. */
WEFT_API int weft_join(weft_t t, void **ret);

/* Let t's resources go when it exits. EINVAL if already detached or joined
 * by someone, ESRCH if unknown. From a foreign thread: works. */
WEFT_API int weft_detach(weft_t t);

/* End the calling ULT with value ret. From a foreign thread: the process
 * aborts with a message (there is no ULT to end). */
WEFT_API _Noreturn void weft_exit(void *ret);

/* The calling ULT; WEFT_NULL from a foreign thread or before init. */
WEFT_API weft_t weft_self(void);
WEFT_API int weft_equal(weft_t a, weft_t b);

/* Let other ready ULTs run; returns at once if there are none.
 * Note: only weft's own blocking calls free the worker for other ULTs; a
 * ULT blocked in the kernel (read, nanosleep, pthread_join, ...) blocks its
 * worker and the ULTs queued on it.
 * From a foreign thread: sched_yield(). Always returns 0. */
WEFT_API int weft_yield(void);

/* The worker running the caller (0 .. n-1), -1 from a foreign thread. */
WEFT_API int weft_worker_id(void);
/* Number of workers: the running runtime's; before weft_init (or after
 * weft_shutdown), the number weft_init with the defaults would use
 * (WEFT_WORKERS, else the CPUs the process may run on), without starting
 * anything; 0 if WEFT_WORKERS is not a valid count. */
WEFT_API int weft_num_workers(void);

/* Park/unpark: the one blocking primitive every weft lock is built on.
 * weft_park() blocks the calling ULT until a token is available, then
 * consumes it; weft_unpark(t) makes a token available to t (at most one is
 * kept), waking it if it is parked. A park may return without an unpark
 * (spuriously): callers re-check their condition in a loop.
 * weft_park from a foreign thread: EPERM. weft_unpark: ESRCH if t is unknown;
 * works from a foreign thread. */
WEFT_API int weft_park(void);
WEFT_API int weft_unpark(weft_t t);
/* weft_unpark(t) then weft_park(), as one call: when t is a parked ULT it
 * runs next on the caller's worker, in the caller's place, without a trip
 * through the run queues (a directed hand-off, for code that passes control
 * from thread to thread, like a simulation kernel). Once in a while t is
 * queued behind the other ready ULTs instead, so a pair handing off to each
 * other cannot starve them. EPERM from a foreign thread; ESRCH if t is
 * unknown (nothing is parked then). */
WEFT_API int weft_park_handoff(weft_t t);

/* The name of t (copied into buf of size n; ERANGE if too small). */
WEFT_API int weft_getname(weft_t t, char *buf, size_t n);

/* ---- accounting: readable while the program runs ------------------------ */

/* CPU time t has run, in ns, including the run in progress. Counting starts
 * with the first call to weft_cputime, pthread_getcpuclockid or
 * clock_gettime(CLOCK_THREAD_CPUTIME_ID) in a ULT - or at start-up with
 * WEFT_CPU_CLOCK=1 - and from then on costs a read of the worker's CPU clock
 * at every switch; time run before that is not seen. EINVAL if ns is NULL,
 * ESRCH if t is unknown (or the runtime is not running). */
WEFT_API int weft_cputime(weft_t t, uint64_t *ns);

/* Per-worker counters since the runtime started. Each is written only by
 * its worker and read without stopping it, so a snapshot of a running
 * worker is not atomic as a whole. */
typedef struct weft_worker_stats {
	uint64_t switches;  /* context switches it made (to a ULT or to its loop) */
	uint64_t steals;    /* ULTs it took from other workers' queues */
	uint64_t parks;     /* ULTs that parked while running on it */
	uint64_t sleeps;    /* times it went to sleep for lack of work */
	uint64_t idle_ns;   /* time in its scheduler loop with nothing to run
	                      (looking for work, spinning, asleep) */
	uint64_t sleep_ns;  /* of idle_ns, the time asleep */
	uint64_t created;   /* ULTs created by ULTs running on it */
	uint64_t exited;    /* ULTs that exited on it */
	uint64_t handovers; /* times it was handed to a spare kernel thread
	                       because its ULT stayed in a system call section
	                       (weft/io.h) */
} weft_worker_stats_t;

/* Fill *out for worker `worker` (0 .. weft_num_workers()-1). EINVAL for a
 * bad worker or NULL out, ESRCH if the runtime is not running. */
WEFT_API int weft_worker_stats(int worker, weft_worker_stats_t *out);

#ifdef __cplusplus
}
#endif

#include <weft/io.h>    /* system call sections */
#include <weft/sched.h> /* installable per-worker schedulers */
#include <weft/sync.h>  /* synchronization, timers, thread-specific data, cancellation */

#endif /* WEFT_H */
