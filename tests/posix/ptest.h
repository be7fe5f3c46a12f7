/* The harness of weft's POSIX conformance tests (tests/posix).
 *
 * The tests are plain pthread programs: they include only POSIX and glibc
 * headers, never weft's, so that the same source runs three ways: against
 * glibc alone, compiled against weft's wrapper headers
 * (include/weft/compat/pthread.h renames the calls), and as the glibc build
 * under LD_PRELOAD=libweft-pthread.so. They assert what POSIX guarantees; a
 * test about a glibc extension (an _np function) says so in its name or
 * comment, and a check of an error that POSIX lists under "may fail" sits in
 * a test whose name ends in _may_fail, so weft knows it matches glibc there
 * by choice, not by obligation.
 *
 * The harness never forks (a test may): every test of an executable
 * runs in the one process, one after the other, through cmocka's
 * cmocka_run_group_tests. CMOCKA_TEST_ABORT=1 makes a failed assertion print
 * its message and abort the whole process, which is what makes cmocka's
 * assertions safe to use from any thread, not just the test function's own.
 * A test must therefore leave nothing behind: every thread it started is
 * joined (or, if detached, has signalled that it is done with the test's
 * objects) before it returns.
 *
 * Every test is bounded in time twice: ctest's TIMEOUT bounds the executable,
 * and a per-test watchdog (alarm(), armed by PX_TEST's setup) aborts the
 * process naming the test that hung.
 *
 * Usage of a test executable:  test_px_x [test-name-pattern]
 *   The pattern selects tests by name (cmocka_set_test_filter: '*' and '?'
 *   are wildcards).
 * Environment: PX_TEST_TIMEOUT  per-test watchdog in seconds (default 60).
 *              PX_WEFT          set when the tests run on weft (header and
 *                               preload modes): px_weft() lets a test leave
 *                               out a check that a documented weft limit
 *                               rules out (docs/posix-coverage.md).
 */
#ifndef WEFT_TESTS_POSIX_PTEST_H
#define WEFT_TESTS_POSIX_PTEST_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#define PX_NS_PER_S  1000000000LL
#define PX_NS_PER_MS 1000000LL
#define PX_NS_PER_US 1000LL

/* One entry of a test table: the test runs under the watchdog. */
#define PX_TEST(fn)                                                                    \
	{                                                                              \
		.name = #fn, .test_func = fn, .setup_func = px_setup,                  \
		.teardown_func = px_teardown, .initial_state = (void *)(uintptr_t) #fn \
	}

/* The body of main: parse argv, then run every selected test in-process. */
#define PX_RUN(argc, argv, tests) \
	(px_prepare(argc, argv), cmocka_run_group_tests(tests, NULL, NULL))

/* Sets up the harness: CMOCKA_TEST_ABORT, the name filter from argv, line-
 * buffered stdout, the watchdog's signal handler. Exits on a usage error. */
void px_prepare(int argc, char **argv);
/* Arm and disarm the per-test watchdog (*state is the test's name). */
int px_setup(void **state);
int px_teardown(void **state);

/* End the current test as skipped, saying why (cmocka's skip()). */
/* Running on weft (PX_WEFT set by the header and preload test modes)? */
static inline int px_weft(void)
{
	return getenv("PX_WEFT") != NULL;
}

/* Do weft's threads here share their worker's thread-local storage
 * (include/weft.h, enum weft_tls)? In sanitizer builds (weft refuses
 * thread control blocks of their own there) and with WEFT_TLS=worker. */
static inline int px_shared_tls(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	return px_weft();
#else
	const char *v = getenv("WEFT_TLS");
	return px_weft() && v && strcmp(v, "worker") == 0;
#endif
}

#define PX_SKIP(...)                                 \
	do {                                         \
		printf("[  SKIPPED ] " __VA_ARGS__); \
		printf("\n");                        \
		skip();                              \
	} while (0)

/* "EINVAL" for EINVAL, "0" for 0, the number otherwise. */
const char *px_errname(long long e);

/* expr (a pthread-style call returning 0 or an error number) returned want. */
#define PX_ERR(expr, want)                                                                      \
	do {                                                                                    \
		long long px_got_ = (long long)(expr);                                          \
		long long px_want_ = (long long)(want);                                         \
		if (px_got_ != px_want_)                                                        \
			fail_msg("%s returned %s (%lld), expected %s (%lld)", #expr,            \
				 px_errname(px_got_), px_got_, px_errname(px_want_), px_want_); \
	} while (0)
#define PX_OK(expr) PX_ERR(expr, 0)

/* expr (an errno-style call) returned -1 and set errno to want. */
#define PX_ERRNO(expr, want)                                                                  \
	do {                                                                                  \
		errno = 0;                                                                    \
		long long px_got_ = (long long)(expr);                                        \
		int px_errno_ = errno;                                                        \
		if (px_got_ != -1 || px_errno_ != (want))                                     \
			fail_msg("%s returned %lld with errno %s, expected -1 with errno %s", \
				 #expr, px_got_, px_errname(px_errno_), px_errname(want));    \
	} while (0)
/* expr (an errno-style call) returned 0. */
#define PX_SYSOK(expr)                                                                         \
	do {                                                                                   \
		errno = 0;                                                                     \
		long long px_got_ = (long long)(expr);                                         \
		if (px_got_ != 0)                                                              \
			fail_msg("%s returned %lld with errno %s, expected 0", #expr, px_got_, \
				 px_errname(errno));                                           \
	} while (0)

/* a op b on signed integers, e.g. PX_CMP(n, <=, 3). */
#define PX_CMP(a, op, b)                                                                        \
	do {                                                                                    \
		long long px_a_ = (long long)(a);                                               \
		long long px_b_ = (long long)(b);                                               \
		if (!(px_a_ op px_b_))                                                          \
			fail_msg("expected %s %s %s, but %s = %lld and %s = %lld", #a, #op, #b, \
				 #a, px_a_, #b, px_b_);                                         \
	} while (0)
#define PX_EQ(a, b) PX_CMP(a, ==, b)
#define PX_EQ_PTR(a, b)                                                                           \
	do {                                                                                      \
		const void *px_a_ = (a);                                                          \
		const void *px_b_ = (b);                                                          \
		if (px_a_ != px_b_)                                                               \
			fail_msg("expected %s == %s, but %s = %p and %s = %p", #a, #b, #a, px_a_, \
				 #b, px_b_);                                                      \
	} while (0)
#define PX_EQ_STR(a, b)                                                                            \
	do {                                                                                       \
		const char *px_a_ = (a);                                                           \
		const char *px_b_ = (b);                                                           \
		if (strcmp(px_a_, px_b_) != 0)                                                     \
			fail_msg("expected %s == %s, but %s = \"%s\" and %s = \"%s\"", #a, #b, #a, \
				 px_a_, #b, px_b_);                                                \
	} while (0)
#define PX_TRUE(cond, ...)                                              \
	do {                                                            \
		if (!(cond)) {                                          \
			char px_why_[256];                              \
			snprintf(px_why_, sizeof px_why_, __VA_ARGS__); \
			fail_msg("%s is false: %s", #cond, px_why_);    \
		}                                                       \
	} while (0)

/* Time on clock in nanoseconds. */
long long px_now(clockid_t clock);
/* The time on clock ns nanoseconds from now (ns may be negative). */
struct timespec px_deadline(clockid_t clock, long long ns);
/* How far clock is past ts (negative: ts is still ahead). */
long long px_ns_past(clockid_t clock, const struct timespec *ts);
/* A timespec as nanoseconds. */
long long px_ts_ns(const struct timespec *ts);

/* A call that timed out at deadline ts returned no earlier than ts and not
 * absurdly late (the slack is generous: the VM may be loaded; this is a check
 * that the deadline was used, never a check of speed). */
#define PX_TIMED_OUT_AT(clock, ts)                              \
	do {                                                    \
		long long px_late_ = px_ns_past((clock), (ts)); \
		PX_CMP(px_late_, >=, 0);                        \
		PX_CMP(px_late_, <, 5 * PX_NS_PER_S);           \
	} while (0)

/* Sleep about ns nanoseconds (nanosleep, resumed after EINTR). */
void px_sleep_ns(long long ns);
/* Let other threads run for a moment: a short sleep, so that a waiting loop
 * neither burns a shared CPU nor starves a cooperative scheduler. */
void px_relax(void);

/* Wait until cond holds, relaxing in between; fail naming cond after
 * `seconds`. Usable from any thread. */
#define PX_WAIT(cond, seconds)                                                                     \
	do {                                                                                       \
		long long px_deadline_ = px_now(CLOCK_MONOTONIC) + (long long)((seconds)*1e9);     \
		while (!(cond)) {                                                                  \
			if (px_now(CLOCK_MONOTONIC) > px_deadline_)                                \
				fail_msg("timed out after %g s waiting for %s", (double)(seconds), \
					 #cond);                                                   \
			px_relax();                                                                \
		}                                                                                  \
	} while (0)

/* pthread_create and pthread_join that assert success. */
pthread_t px_start(const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
void *px_join(pthread_t t);

/* Wait up to `seconds` for child process pid; its wait status, or -1 if it
 * did not end in time (then it is killed and reaped). */
int px_wait_child(pid_t pid, int seconds);

/* The CPUs this thread may run on, as a count and as the lowest one. */
int px_usable_cpus(int *first);

/* Burn about ms milliseconds of CPU in the calling thread (by the monotonic
 * clock: the thread may not get all of it on a loaded machine). */
void px_compute_ms(long long ms);

#endif
