/* Small helpers every layer uses: branch hints, CPU pause, futex calls,
 * clocks, and wf_panic for broken internal invariants. */
#ifndef WF_UTIL_H
#define WF_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/sys.h"

/* Built with AddressSanitizer? (gcc defines the macro, clang has the feature) */
#if defined(__SANITIZE_ADDRESS__)
#define WF_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WF_ASAN 1
#endif
#endif
#ifndef WF_ASAN
#define WF_ASAN 0
#endif

/* Built with ThreadSanitizer? (the same two spellings) */
#if defined(__SANITIZE_THREAD__)
#define WF_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WF_TSAN 1
#endif
#endif
#ifndef WF_TSAN
#define WF_TSAN 0
#endif

#define WF_HIDDEN     __attribute__((visibility("hidden")))
#define likely(x)     __builtin_expect(!!(x), 1)
#define unlikely(x)   __builtin_expect(!!(x), 0)
#define WF_CACHELINE  64
#define WF_ALIGNED_CL __attribute__((aligned(WF_CACHELINE)))

/* Abort naming the function and the broken invariant. Never for user input. */
WF_HIDDEN _Noreturn void wf_panic_at(const char *func, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define wf_panic(...) wf_panic_at(__func__, __VA_ARGS__)
#define WF_ASSERT(cond)                                            \
	do {                                                       \
		if (unlikely(!(cond)))                             \
			wf_panic("invariant violated: %s", #cond); \
	} while (0)

static inline void wf_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/* A poll of a contended word backs off: pause *delay times, then double
 * *delay, up to WF_BACKOFF_CAP. Returns the pauses waited. Why: at the top
 * of sync/mutex.c. */
#define WF_BACKOFF_CAP 64
static inline int wf_cpu_backoff(int *delay)
{
	int d = *delay;
	for (int i = 0; i < d; i++)
		wf_cpu_relax();
	if (d < WF_BACKOFF_CAP)
		*delay = d * 2;
	return d;
}

/* Read up to n-1 bytes of a /proc file into buf, NUL-terminated; the
 * length, or -1. Raw system calls: libweft-pthread.so defines open and
 * read. Async-signal-safe. */
static inline long wf_read_proc(const char *path, char *buf, size_t n)
{
	long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	long r = syscall(SYS_read, (int)fd, buf, n - 1);
	syscall(SYS_close, (int)fd);
	if (r <= 0)
		return -1;
	buf[r] = 0;
	return r;
}

/* Internal syscall wrappers return -errno; the sign flips once, at the API. */
static inline int wf_futex_wait(atomic_int *addr, int expected, const struct timespec *rel)
{
	long r = syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, expected, rel, NULL, 0);
	return r == 0 ? 0 : -errno;
}

static inline int wf_futex_wake(atomic_int *addr, int n)
{
	long r = syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
	return r >= 0 ? (int)r : -errno;
}

static inline uint64_t wf_now_ns(void)
{
	struct timespec ts;
	WF_SYS(clock_gettime)(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Add v to a counter that only one thread writes and others may read:
 * a relaxed load and store, no read-modify-write. */
#define WF_OWNER_ADD(p, v) \
	__atomic_store_n((p), __atomic_load_n((p), __ATOMIC_RELAXED) + (v), __ATOMIC_RELAXED)

/* A tiny test-and-test-and-set spinlock for short internal critical sections
 * (wait-queue buckets, queue overflow, slot free lists). Held across at
 * most one context switch: a wait that parks holding its bucket's lock,
 * which the next context releases (sched/park.c, wf_park_unlock). */
typedef struct {
	atomic_int locked;
} wf_spinlock_t;

static inline void wf_spin_lock(wf_spinlock_t *l)
{
	for (;;) {
		if (!atomic_exchange_explicit(&l->locked, 1, memory_order_acquire))
			return;
		while (atomic_load_explicit(&l->locked, memory_order_relaxed))
			wf_cpu_relax();
	}
}

static inline int wf_spin_trylock(wf_spinlock_t *l)
{
	return !atomic_load_explicit(&l->locked, memory_order_relaxed) &&
	       !atomic_exchange_explicit(&l->locked, 1, memory_order_acquire);
}

static inline void wf_spin_unlock(wf_spinlock_t *l)
{
	atomic_store_explicit(&l->locked, 0, memory_order_release);
}

/* The three moments of a fork (runtime/fork.c has the protocol): before
 * it, in the parent; after it, in the parent; after it, in the child. A
 * spinlock guarding state the child keeps is taken before and given back
 * on both sides, so that the child never finds it held by a thread it did
 * not inherit. */
enum wf_fork_phase { WF_FORK_PREPARE, WF_FORK_PARENT, WF_FORK_CHILD };

static inline void wf_spin_fork(wf_spinlock_t *l, int phase)
{
	if (phase == WF_FORK_PREPARE)
		wf_spin_lock(l);
	else
		wf_spin_unlock(l);
}

/* xorshift64*: cheap per-worker randomness for victim selection. */
static inline uint64_t wf_rand(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1Dull;
}

#endif
