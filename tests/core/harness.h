/* Shared helpers for weft's core tests.
 *
 * Every test function runs in its own forked process (wt_run): a crash, a
 * hang or leftover runtime state in one test cannot affect another, and each
 * test gets its own timeout. The parent never touches weft, so forking it is
 * safe. Inside the child, cmocka runs with CMOCKA_TEST_ABORT=1, so a failed
 * assertion prints its message and aborts the process; that makes cmocka's
 * assertions safe to use from any ULT or foreign pthread, not just from the
 * test function's own stack.
 *
 * Usage of a test executable:  test_x [test-name ...]
 * Environment: WEFT_TEST_TIMEOUT  per-test timeout in seconds (default 60);
 *              WEFT_TEST_GDB      if set, a timed-out test's threads are
 *                                 printed (gdb) before it is killed; set to
 *                                 the path of tools/weft-gdb.py, its ULTs
 *                                 and their stacks too (make test does).
 */
#ifndef WEFT_TESTS_HARNESS_H
#define WEFT_TESTS_HARNESS_H

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <weft.h>

/* Run each test in its own process; returns the process exit status. */
int wt_run(int argc, char **argv, const struct CMUnitTest *tests, size_t n);
#define WT_RUN(argc, argv, tests) wt_run(argc, argv, tests, sizeof(tests) / sizeof((tests)[0]))

/* End the current test as skipped, saying why. */
_Noreturn void wt_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Skip the current test where weft has no preemption (sanitizer builds,
 * other architectures: src/sched/preempt.c). */
void wt_need_preemption(void);
/* Skip the test unless /proc/self/task/TID/syscall reports this program's
 * system call numbers (not under qemu-user, which runs an aarch64 program
 * on an x86-64 kernel): the monitor then cannot tell a thread's system
 * call, and preempts as if it could not (src/sched/carrier.c). */
void wt_need_proc_syscalls(void);

/* "EINVAL" for EINVAL, "0" for 0, a number otherwise. */
const char *wt_errname(long long e);

/* Assertions that print the expression and both values. */
#define WT_ERR(expr, want)                                                                      \
	do {                                                                                    \
		long long wt_got_ = (expr);                                                     \
		long long wt_want_ = (want);                                                    \
		if (wt_got_ != wt_want_)                                                        \
			fail_msg("%s returned %s (%lld), expected %s (%lld)", #expr,            \
				 wt_errname(wt_got_), wt_got_, wt_errname(wt_want_), wt_want_); \
	} while (0)
#define WT_OK(expr) WT_ERR(expr, 0)

/* a op b on signed integers, e.g. WT_CMP(n, <=, 3). */
#define WT_CMP(a, op, b)                                                                        \
	do {                                                                                    \
		long long wt_a_ = (long long)(a);                                               \
		long long wt_b_ = (long long)(b);                                               \
		if (!(wt_a_ op wt_b_))                                                          \
			fail_msg("expected %s %s %s, but %s = %lld and %s = %lld", #a, #op, #b, \
				 #a, wt_a_, #b, wt_b_);                                         \
	} while (0)
/* The same on unsigned 64-bit values (thread ids, addresses). */
#define WT_CMPU(a, op, b)                                                                          \
	do {                                                                                       \
		unsigned long long wt_a_ = (unsigned long long)(a);                                \
		unsigned long long wt_b_ = (unsigned long long)(b);                                \
		if (!(wt_a_ op wt_b_))                                                             \
			fail_msg("expected %s %s %s, but %s = %llu (%#llx) and %s = %llu (%#llx)", \
				 #a, #op, #b, #a, wt_a_, wt_a_, #b, wt_b_, wt_b_);                 \
	} while (0)
#define WT_EQ(a, b)  WT_CMP(a, ==, b)
#define WT_EQU(a, b) WT_CMPU(a, ==, b)
#define WT_EQ_PTR(a, b)                                                                           \
	do {                                                                                      \
		const void *wt_a_ = (a);                                                          \
		const void *wt_b_ = (b);                                                          \
		if (wt_a_ != wt_b_)                                                               \
			fail_msg("expected %s == %s, but %s = %p and %s = %p", #a, #b, #a, wt_a_, \
				 #b, wt_b_);                                                      \
	} while (0)
#define WT_EQ_STR(a, b)                                                                            \
	do {                                                                                       \
		const char *wt_a_ = (a);                                                           \
		const char *wt_b_ = (b);                                                           \
		if (strcmp(wt_a_, wt_b_) != 0)                                                     \
			fail_msg("expected %s == %s, but %s = \"%s\" and %s = \"%s\"", #a, #b, #a, \
				 wt_a_, #b, wt_b_);                                                \
	} while (0)
#define WT_TRUE(cond, fmt, ...)                                              \
	do {                                                                 \
		if (!(cond))                                                 \
			fail_msg("%s is false: " fmt, #cond, ##__VA_ARGS__); \
	} while (0)

/* Monotonic clock in nanoseconds. */
uint64_t wt_now_ns(void);

/* Spin (with weft_yield, so it also works on a single worker) until cond
 * holds; fail naming cond after `seconds`. Usable from ULTs and pthreads. */
#define WT_WAIT(cond, seconds)                                                                     \
	do {                                                                                       \
		uint64_t wt_deadline_ = wt_now_ns() + (uint64_t)((seconds)*1e9);                   \
		while (!(cond)) {                                                                  \
			if (wt_now_ns() > wt_deadline_)                                            \
				fail_msg("timed out after %g s waiting for %s", (double)(seconds), \
					 #cond);                                                   \
			weft_yield();                                                              \
		}                                                                                  \
	} while (0)

/* weft_init with the environment's config (the ctest variant picks the
 * scheduler and context) and `workers` workers (0: the default). */
void wt_init(int workers);
/* Is the runtime running? (weft_num_workers answers for a runtime that
 * would start; weft_worker_stats says ESRCH unless one runs.) */
static inline int wt_running(void)
{
	weft_worker_stats_t s;
	return weft_worker_stats(0, &s) != ESRCH;
}
/* weft_init with `workers` workers (0: the default) running the scheduler
 * spec `scheds` (WEFT_SCHED's grammar), whatever the variant. */
void wt_init_sched(int workers, const char *scheds);
/* weft_shutdown, retrying while detached ULTs finish exiting (EBUSY) for up
 * to 10 s. Use plain WT_OK(weft_shutdown()) where no ULT may be alive. */
void wt_fini(void);

/* weft_create/weft_join that assert success. */
weft_t wt_spawn(const weft_attr_t *attr, void *(*fn)(void *), void *arg);
weft_t wt_spawn_on(int worker, void *(*fn)(void *), void *arg);
void *wt_join(weft_t t);

/* Recurse until about `bytes` of stack are used, writing every frame; returns
 * a value that depends on all of them. For testing stack sizes. */
long wt_burn_stack(size_t bytes);
/* The same as a ULT body: bytes is (size_t)arg; returns the value. */
void *wt_burn_stack_ult(void *bytes);

/* A pthread whose end can be awaited without blocking the calling ULT's
 * worker (pthread_join from a ULT would block the whole kernel thread, and
 * with it every ULT bound to that worker). */
struct wt_pthread {
	pthread_t thread;
	void *(*fn)(void *);
	void *arg;
	void *ret;
	atomic_int done;
};
void wt_pthread_start(struct wt_pthread *p, void *(*fn)(void *), void *arg);
/* Wait (yielding) up to 60 s for p to end, join it, return its value. */
void *wt_pthread_join(struct wt_pthread *p);

/* CPUs this process may run on. */
int wt_usable_cpus(void);

/* Run fn(arg) in a forked child with stdout/stderr captured and default
 * signal dispositions, for tests that expect the process to die. The child
 * exits 0 if fn returns. Fails the test if the child does not end within
 * timeout_s. The caller frees out and err. */
struct wt_child {
	int status; /* as from waitpid */
	char *out;  /* NUL-terminated captured stdout */
	char *err;  /* NUL-terminated captured stderr */
};
void wt_run_child(void (*fn)(void *), void *arg, int timeout_s, struct wt_child *res);
void wt_child_free(struct wt_child *res);
/* "exited with status 3", "killed by signal 6 (Aborted)" */
const char *wt_describe_status(int status, char *buf, size_t n);

#endif
