/* Preemption (the design at the top of src/sched/preempt.c; the monitor's
 * part in src/sched/carrier.c, watch_run and sweep): a ULT that runs for a
 * slice (weft_config_t.preempt_ns, WEFT_PREEMPT_NS; 10 ms by default)
 * without a scheduling point is sent SIGURG by the monitor and gives way to
 * the other ULTs of its worker, where the interrupted instruction is outside
 * weft, the C library, the loader, libstdc++ and libgcc_s. The same signal
 * makes a running ULT act on an asynchronous cancellation.
 *
 * The spin loops below are this executable's own code, which is
 * preemptible because the tests link libweft.so (a program that links weft
 * statically is never preempted). A spin loop calls nothing - no weft call,
 * no libc call, not even a clock read in the loop that must be preempted -
 * so that the only way another ULT can run meanwhile is a preemption.
 *
 * Every test runs one worker: without preemption (or with it broken) a
 * spinning ULT would keep the only worker forever, and the test would hang
 * until the harness's per-test timeout (WEFT_TEST_TIMEOUT) fails it. Times
 * are measured and printed, but only generous bounds are asserted.
 *
 * Preemption is not built in sanitizer builds (their runtimes take signals
 * at their own safe points) nor on targets other than x86-64 and aarch64;
 * there the tests that need it skip. The per-worker count of preemptions
 * (n_preempts in src/sched/sched.h) is not in weft_worker_stats, so nothing
 * here relies on it: that a preemption happened is shown by another ULT
 * having run while the spinner spun.
 *
 * A SCHED_FIFO ULT under the prio scheduler not being preempted by the slice
 * is test_prio's test_fifo_keeps_the_worker_past_a_slice; here only its
 * SCHED_RR counterpart with a pure spin loop (no scheduling point at all).
 *
 * Each test runs in its own process (harness.h), so a test that changes the
 * environment need not restore it; test_config_and_environment does anyway. */
#include "harness.h"

#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MS 1000000ull

/* The slice the tests use, whatever WEFT_PREEMPT_NS says. */
#define SLICE_NS (10 * (long)MS)

/* weft_config_init's values (the variant's scheduler and context) with one
 * worker and the given slice (negative: preemption off); scheds, if not
 * NULL, replaces the scheduler. */
static void init_one_worker(long preempt_ns, const char *scheds)
{
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	c.workers = 1;
	c.preempt_ns = preempt_ns;
	if (scheds)
		c.scheds = scheds;
	WT_OK(weft_init(&c));
}

/* Spin until *f == v. Calls nothing: the loop is this executable's code. */
static void spin_until(atomic_int *f, int v)
{
	while (atomic_load_explicit(f, memory_order_acquire) != v)
		;
}

/* ---- two ULTs hand a flag back and forth ----------------------------------- */

#define ROUNDS 10
static atomic_int turn;

/* Waits for its turn (me), then gives it to the other one, ROUNDS times:
 * each hand-over needs the spinner waiting for it to be preempted. */
static void *ping(void *arg)
{
	int me = (int)(intptr_t)arg;
	for (int i = 0; i < ROUNDS; i++) {
		spin_until(&turn, me);
		atomic_store_explicit(&turn, 1 - me, memory_order_release);
	}
	return NULL;
}

static void test_spinning_pair_hands_a_flag_back_and_forth(void **state)
{
	(void)state;
	wt_need_preemption();
	init_one_worker(SLICE_NS, NULL);
	atomic_store(&turn, 0);
	uint64_t start = wt_now_ns();
	weft_t a = wt_spawn(NULL, ping, (void *)(intptr_t)0);
	weft_t b = wt_spawn(NULL, ping, (void *)(intptr_t)1);
	wt_join(a);
	wt_join(b);
	uint64_t took = wt_now_ns() - start;
	printf("[          ] %d hand-overs between spinning ULTs on one worker: %.1f ms\n",
	       2 * ROUNDS, (double)took / 1e6);
	WT_EQ(atomic_load(&turn), 0);
	/* About a slice per hand-over; a hang would be the harness's timeout. */
	WT_CMPU(took, <, 5000 * MS);
	WT_OK(weft_shutdown());
}

/* ---- a spinning ULT lets a sleeper on its worker wake --------------------- */

static atomic_int stop_flag, spinner_started;

static void *spin_until_stopped(void *arg)
{
	(void)arg;
	atomic_store(&spinner_started, 1);
	spin_until(&stop_flag, 1);
	return NULL;
}

static void test_spinner_lets_a_sleeper_wake(void **state)
{
	(void)state;
	wt_need_preemption();
	init_one_worker(SLICE_NS, NULL);
	weft_t t = wt_spawn(NULL, spin_until_stopped, NULL);
	uint64_t asked = 30 * MS;
	uint64_t before = wt_now_ns();
	WT_OK(weft_sleep_ns(asked)); /* the spinner runs meanwhile */
	uint64_t late = wt_now_ns() - before;
	late = late > asked ? late - asked : 0;
	WT_EQ(atomic_load(&spinner_started), 1);
	atomic_store(&stop_flag, 1);
	wt_join(t);
	printf("[          ] the root woke %.2f ms after its 30 ms sleep was due (slice %ld ms)\n",
	       (double)late / 1e6, SLICE_NS / (long)MS);
	/* About a slice or two; a generous bound against a scheduler that only
	 * preempts now and then. */
	WT_CMPU(late, <, 1000 * MS);
	WT_OK(weft_shutdown());
}

/* ---- a ULT blocked in the program's own futex wait ------------------------ */

/* A program may wait on a futex of its own through the C library's
 * syscall() (Rust's standard library parks threads so). On one worker the
 * waiter holds it in the kernel; the waker, queued behind it, runs only if
 * the waiter is preempted there - a stop inside the C library that is
 * nonetheless safe (src/sched/preempt.c). Without that: a deadlock, which
 * the test's deadline reports. */
static atomic_int futex_word, futex_waits;

static void *raw_futex_waiter(void *arg)
{
	(void)arg;
	while (atomic_load(&futex_word) == 0) {
		atomic_fetch_add(&futex_waits, 1);
		syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	}
	return NULL;
}

static void *raw_futex_waker(void *arg)
{
	(void)arg;
	atomic_store(&futex_word, 1);
	syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	return NULL;
}

static void test_ult_in_a_raw_futex_wait_gives_way(void **state)
{
	(void)state;
	wt_need_preemption();
	init_one_worker(SLICE_NS, NULL);
	weft_t a = wt_spawn(NULL, raw_futex_waiter, NULL);
	WT_WAIT(atomic_load(&futex_waits) > 0, 10); /* a is in its wait (or about to be) */
	weft_t b = wt_spawn(NULL, raw_futex_waker, NULL);
	wt_join(b);
	wt_join(a);
	WT_EQ(atomic_load(&futex_word), 1);
	WT_OK(weft_shutdown());
}

/* ---- a section's call is never interrupted by a preemption ----------------- */

/* The monitor decides to preempt a ULT it saw computing for a slice, then
 * sends the signal: if the ULT entered a system call section in between,
 * the signal would land in its call - and a nanosleep, a poll with a
 * timeout, a sigsuspend or a socket read with SO_RCVTIMEO fails with EINTR
 * then, whatever SA_RESTART says (signal(7)), though the program sent no
 * signal. Two ULTs on one worker compute for a random part of a few 100 us
 * slices, then sleep in a section, over and over: the end of each
 * computation falls at a random point of the monitor's decisions, and a
 * few in a hundred would land in that window. The sleeps, of 1-200 us
 * against a 20 us threshold, are often handed over: until a spare carries
 * the worker, its carrier is still the kernel thread in the sleep, and its
 * current ULT the one sleeping - not to be preempted either. */
enum { WINDOW_ULTS = 2, WINDOW_MS = 1000, WINDOW_SLICE_NS = 100000 };

static struct {
	atomic_int stop;
	atomic_long sleeps, interrupted, other_errors;
	long loops_per_us;
} window;

/* One worker, 100 us slices, sections handed over past 20 us. */
static void init_one_worker_handing_over(void)
{
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	c.workers = 1;
	c.preempt_ns = WINDOW_SLICE_NS;
	c.syscall_ns = 20000;
	WT_OK(weft_init(&c));
}

static void *compute_then_sleep(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	while (!atomic_load(&window.stop)) {
		seed = seed * 1103515245u + 12345u;
		long n = (long)((seed >> 16) % 400) * window.loops_per_us; /* 0-400 us */
		for (volatile long k = 0; k < n; k++)
			;
		struct timespec ts = {0, 1000 + (long)(seed % 200) * 1000};
		weft_syscall_t s = weft_syscall_begin();
		long r = syscall(SYS_nanosleep, &ts, NULL); /* never restarted */
		int e = errno;
		weft_syscall_end(s);
		if (r == -1 && e == EINTR)
			atomic_fetch_add(&window.interrupted, 1);
		else if (r != 0)
			atomic_fetch_add(&window.other_errors, 1);
		atomic_fetch_add(&window.sleeps, 1);
	}
	return NULL;
}

static void test_preemption_never_interrupts_a_section(void **state)
{
	(void)state;
	wt_need_preemption();
	/* Loops of the spin below per microsecond, roughly. */
	uint64_t t0 = wt_now_ns();
	for (volatile long k = 0; k < 10000000; k++)
		;
	window.loops_per_us = 10000000 / (long)((wt_now_ns() - t0) / 1000 + 1) + 1;
	init_one_worker_handing_over();
	weft_t t[WINDOW_ULTS];
	for (int i = 0; i < WINDOW_ULTS; i++)
		t[i] = wt_spawn(NULL, compute_then_sleep, (void *)(uintptr_t)(i * 7919 + 1));
	WT_OK(weft_sleep_ns(WINDOW_MS * MS));
	atomic_store(&window.stop, 1);
	for (int i = 0; i < WINDOW_ULTS; i++)
		wt_join(t[i]);
	weft_worker_stats_t st;
	WT_OK(weft_worker_stats(0, &st));
	printf("[          ] %ld sleeps in sections (%lu handed over), %ld interrupted (EINTR), "
	       "%ld other errors\n",
	       atomic_load(&window.sleeps), (unsigned long)st.handovers,
	       atomic_load(&window.interrupted), atomic_load(&window.other_errors));
	WT_EQ(atomic_load(&window.interrupted), 0);
	WT_EQ(atomic_load(&window.other_errors), 0);
	WT_CMP(atomic_load(&window.sleeps), >, 100);
	WT_OK(weft_shutdown());
}

/* The first hand-over of a runtime makes its spare kernel thread: until it
 * runs, the worker's carrier is the one in the sleep and its current ULT
 * the sleeping one, and the monitor must not take that ULT for one that
 * computes a slice without a decision. Two kernel threads of the test's
 * own compute meanwhile, so that the new one waits for a CPU for more than
 * a slice now and then, as it does in a busy program. */
enum { FIRST_HANDOVERS = 30, BUSY_THREADS = 2 };

static atomic_int busy_stop;

static void *busy_kernel_thread(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&busy_stop, memory_order_relaxed))
		;
	return NULL;
}

static void *sleep_2ms_in_a_section(void *arg)
{
	(void)arg;
	struct timespec ts = {0, 2 * (long)MS};
	weft_syscall_t s = weft_syscall_begin();
	long r = syscall(SYS_nanosleep, &ts, NULL); /* never restarted */
	int e = errno;
	weft_syscall_end(s);
	return (void *)(intptr_t)(r == 0 ? 0 : e);
}

static void test_preemption_spares_a_section_being_handed_over(void **state)
{
	(void)state;
	wt_need_preemption();
	int interrupted = 0, other = 0;
	unsigned long handovers = 0;
	pthread_t busy[BUSY_THREADS];
	for (int i = 0; i < BUSY_THREADS; i++)
		WT_OK(pthread_create(&busy[i], NULL, busy_kernel_thread, NULL));
	for (int i = 0; i < FIRST_HANDOVERS; i++) {
		init_one_worker_handing_over();
		void *ret;
		weft_t t = wt_spawn(NULL, sleep_2ms_in_a_section, NULL);
		WT_OK(weft_join(t, &ret));
		interrupted += (intptr_t)ret == EINTR;
		other += ret && (intptr_t)ret != EINTR;
		weft_worker_stats_t st;
		WT_OK(weft_worker_stats(0, &st));
		handovers += st.handovers;
		WT_OK(weft_shutdown());
	}
	atomic_store(&busy_stop, 1);
	for (int i = 0; i < BUSY_THREADS; i++)
		WT_OK(pthread_join(busy[i], NULL));
	printf("[          ] %d sleeps, %lu handed over, %d interrupted (EINTR), %d other errors\n",
	       FIRST_HANDOVERS, handovers, interrupted, other);
	WT_EQ(interrupted, 0);
	WT_EQ(other, 0);
}

/* ---- a ULT in a system call outside a section ----------------------------- */

/* A program on weft's own API that calls the C library's nanosleep holds
 * its worker while it sleeps (no section: include/weft/io.h). The monitor
 * sees a ULT that has made no decision for a slice, but must not signal
 * it there: the handler could not move it (it is inside the C library),
 * and the sleep would fail with EINTR after a slice - sleep(1) returned
 * after 10 ms. Each sleep follows a little computing (tens of
 * microseconds), so that the monitor does not always see a kernel thread
 * that used no CPU since its last look: it asks /proc what the thread
 * does. (A signal it sends while the thread computes could still reach
 * the sleep begun meanwhile; that window is the /proc read's and the
 * signal's own, and the computing here is too short to meet it often.) */
enum { PLAIN_SLEEPS = 8, PLAIN_SLEEP_MS = 20, PLAIN_SLICE_NS = 1000000 };

static void *compute_then_plain_sleep(void *arg)
{
	long *interrupted = arg;
	for (int i = 0; i < PLAIN_SLEEPS; i++) {
		for (volatile long k = 0; k < 30000; k++)
			;
		struct timespec ts = {0, PLAIN_SLEEP_MS * (long)MS};
		if (nanosleep(&ts, NULL) != 0 && errno == EINTR)
			(*interrupted)++;
	}
	return NULL;
}

static void test_ult_in_a_plain_sleep_is_not_interrupted(void **state)
{
	(void)state;
	wt_need_preemption();
	wt_need_proc_syscalls();
	init_one_worker(PLAIN_SLICE_NS, NULL);
	long interrupted = 0;
	uint64_t t0 = wt_now_ns();
	wt_join(wt_spawn(NULL, compute_then_plain_sleep, &interrupted));
	uint64_t took = wt_now_ns() - t0;
	printf("[          ] %d sleeps of %d ms in %.1f ms, %ld interrupted (EINTR)\n",
	       PLAIN_SLEEPS, PLAIN_SLEEP_MS, (double)took / 1e6, interrupted);
	WT_EQ(interrupted, 0);
	WT_CMPU(took, >=, (uint64_t)PLAIN_SLEEPS * PLAIN_SLEEP_MS * MS);
	WT_OK(weft_shutdown());
}

/* ---- with preemption off, a spinner keeps its worker ---------------------- */

static atomic_int other_ran;
static uint64_t other_at, spin_begin, spin_end;
static int other_ran_before_end;
static weft_t other_id;

static void *note_other(void *arg)
{
	(void)arg;
	other_at = wt_now_ns();
	atomic_store(&other_ran, 1);
	return NULL;
}

/* Makes another ULT ready on its worker, then spins for 200 ms of wall
 * time (clock reads are fine here: nothing is to preempt it). */
static void *spin_200ms(void *arg)
{
	(void)arg;
	other_id = wt_spawn(NULL, note_other, NULL);
	spin_begin = wt_now_ns();
	while (wt_now_ns() - spin_begin < 200 * MS)
		;
	other_ran_before_end = atomic_load(&other_ran);
	spin_end = wt_now_ns();
	return NULL;
}

static void test_preemption_off_spinner_keeps_the_worker(void **state)
{
	(void)state;
	init_one_worker(-1, NULL);
	wt_join(wt_spawn(NULL, spin_200ms, NULL));
	wt_join(other_id);
	WT_EQ(atomic_load(&other_ran), 1);
	WT_EQ(other_ran_before_end, 0);
	WT_CMPU(other_at, >=, spin_end);
	WT_CMPU(spin_end - spin_begin, >=, 200 * MS);
	WT_OK(weft_shutdown());
}

/* ---- configuration ----------------------------------------------------------- */

static void test_config_and_environment(void **state)
{
	(void)state;
	const char *had = getenv("WEFT_PREEMPT_NS");
	char *saved = had ? strdup(had) : NULL;
	weft_config_t c;

	/* The default: 10 ms. */
	WT_OK(unsetenv("WEFT_PREEMPT_NS"));
	WT_OK(weft_config_init(&c));
	WT_EQ(c.preempt_ns, 10000000);

	/* Out of range in the config: below 100 us, above 1e12 ns. */
	const long bad[] = {50000, 99999, 1000000000001L};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		WT_OK(weft_config_init(&c));
		c.workers = 1;
		c.preempt_ns = bad[i];
		WT_ERR(weft_init(&c), EINVAL);
	}
	/* The bounds themselves, and negative (never), are accepted. */
	const long good[] = {100000, 1000000000000L, -1, -12345};
	for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
		WT_OK(weft_config_init(&c));
		c.workers = 1;
		c.preempt_ns = good[i];
		WT_OK(weft_init(&c));
		WT_OK(weft_shutdown());
	}

	/* Out of range in the environment. */
	const char *bad_env[] = {"50000", "99999", "1000000000001", "-5", "ten"};
	for (size_t i = 0; i < sizeof bad_env / sizeof *bad_env; i++) {
		WT_OK(setenv("WEFT_PREEMPT_NS", bad_env[i], 1));
		WT_ERR(weft_config_init(&c), EINVAL);
		WT_ERR(weft_init(NULL), EINVAL);
	}
	/* A value in the config wins over the environment's. */
	WT_OK(setenv("WEFT_PREEMPT_NS", "50000", 1));
	memset(&c, 0, sizeof c);
	c.workers = 1;
	c.preempt_ns = SLICE_NS;
	WT_OK(weft_init(&c));
	WT_OK(weft_shutdown());

	/* 0 in the environment: off, which a resolved config says as negative. */
	WT_OK(setenv("WEFT_PREEMPT_NS", "0", 1));
	WT_OK(weft_config_init(&c));
	WT_CMP(c.preempt_ns, <, 0);
	/* A value in range is taken as is. */
	WT_OK(setenv("WEFT_PREEMPT_NS", "2500000", 1));
	WT_OK(weft_config_init(&c));
	WT_EQ(c.preempt_ns, 2500000);

	if (saved) {
		WT_OK(setenv("WEFT_PREEMPT_NS", saved, 1));
		free(saved);
	} else {
		WT_OK(unsetenv("WEFT_PREEMPT_NS"));
	}
}

/* ---- asynchronous cancellation --------------------------------------------- */

static atomic_int cleanup_ran, never, returned;

static void note_cleanup(void *arg)
{
	atomic_store((atomic_int *)arg, 1);
}

/* Asynchronously cancellable, then spins forever. */
static void *async_spinner(void *arg)
{
	(void)arg;
	weft_cleanup_push(note_cleanup, &cleanup_ran);
	int old = -1;
	WT_OK(weft_setcanceltype(WEFT_CANCEL_ASYNCHRONOUS, &old));
	WT_EQ(old, WEFT_CANCEL_DEFERRED);
	atomic_store(&spinner_started, 1);
	spin_until(&never, 1);
	atomic_store(&returned, 1);
	weft_cleanup_pop(0);
	return NULL;
}

static void test_async_cancel_ends_a_spinning_ult(void **state)
{
	(void)state;
	wt_need_preemption();
	init_one_worker(SLICE_NS, NULL);
	weft_t t = wt_spawn(NULL, async_spinner, NULL);
	WT_OK(weft_sleep_ns(20 * MS)); /* it spins meanwhile */
	WT_EQ(atomic_load(&spinner_started), 1);
	uint64_t start = wt_now_ns();
	WT_OK(weft_cancel(t));
	void *ret = NULL;
	WT_OK(weft_join(t, &ret));
	uint64_t took = wt_now_ns() - start;
	printf("[          ] the spinning ULT was cancelled and joined in %.2f ms\n",
	       (double)took / 1e6);
	WT_EQ_PTR(ret, WEFT_CANCELED);
	WT_EQ(atomic_load(&cleanup_ran), 1);
	WT_EQ(atomic_load(&returned), 0);
	WT_OK(weft_shutdown());
}

/* A cancellation pending when the type becomes asynchronous is acted on in
 * weft_setcanceltype, which does not return. */
static atomic_int go;

static void *pending_target(void *arg)
{
	(void)arg;
	weft_cleanup_push(note_cleanup, &cleanup_ran);
	atomic_store(&spinner_started, 1);
	/* weft_yield is no cancellation point: the request stays pending. */
	WT_WAIT(atomic_load(&go), 10);
	weft_setcanceltype(WEFT_CANCEL_ASYNCHRONOUS, NULL);
	atomic_store(&returned, 1);
	weft_cleanup_pop(0);
	return NULL;
}

static void test_async_with_a_pending_cancel_acts_at_once(void **state)
{
	(void)state;
	init_one_worker(SLICE_NS, NULL);
	weft_t t = wt_spawn(NULL, pending_target, NULL);
	WT_WAIT(atomic_load(&spinner_started), 10);
	WT_OK(weft_cancel(t));
	atomic_store(&go, 1);
	void *ret = NULL;
	WT_OK(weft_join(t, &ret));
	WT_EQ_PTR(ret, WEFT_CANCELED);
	WT_EQ(atomic_load(&cleanup_ran), 1);
	WT_EQ(atomic_load(&returned), 0);
	WT_OK(weft_shutdown());
}

static void *foreign_canceltype(void *arg)
{
	(void)arg;
	int old = -1;
	WT_ERR(weft_setcanceltype(WEFT_CANCEL_ASYNCHRONOUS, &old), ENOTSUP);
	WT_ERR(weft_setcanceltype(WEFT_CANCEL_ASYNCHRONOUS, NULL), ENOTSUP);
	old = -1;
	WT_OK(weft_setcanceltype(WEFT_CANCEL_DEFERRED, &old));
	WT_EQ(old, WEFT_CANCEL_DEFERRED);
	WT_ERR(weft_setcanceltype(2, &old), EINVAL);
	WT_ERR(weft_setcanceltype(-1, NULL), EINVAL);
	return (void *)1;
}

static void test_canceltype_errors(void **state)
{
	(void)state;
	init_one_worker(SLICE_NS, NULL);
	/* A plain pthread: asynchronous is ENOTSUP, a bad type EINVAL. */
	struct wt_pthread p;
	wt_pthread_start(&p, foreign_canceltype, NULL);
	WT_EQ_PTR(wt_pthread_join(&p), (void *)1);
	/* A ULT (the root): a bad type is EINVAL and changes nothing. */
	int old = -1;
	WT_ERR(weft_setcanceltype(2, &old), EINVAL);
	WT_ERR(weft_setcanceltype(-1, NULL), EINVAL);
	WT_OK(weft_setcanceltype(WEFT_CANCEL_ASYNCHRONOUS, &old));
	WT_EQ(old, WEFT_CANCEL_DEFERRED);
	WT_ERR(weft_setcanceltype(7, &old), EINVAL);
	WT_OK(weft_setcanceltype(WEFT_CANCEL_DEFERRED, &old));
	WT_EQ(old, WEFT_CANCEL_ASYNCHRONOUS);
	WT_OK(weft_shutdown());
}

/* ---- SCHED_RR under prio: its own slice, not the preemption slice ----------- */

static uint64_t rr_ran;

/* A pure spin until the other ULT ran; a clock read every 2^20 rounds only
 * bounds it (2 s). */
static void *rr_spinner(void *arg)
{
	(void)arg;
	uint64_t start = wt_now_ns();
	for (unsigned long n = 1; !atomic_load_explicit(&other_ran, memory_order_acquire); n++)
		if (!(n & ((1ul << 20) - 1)) && wt_now_ns() - start > 2000 * MS)
			break;
	rr_ran = wt_now_ns() - start;
	return NULL;
}

static weft_t spawn_rr(void *(*fn)(void *))
{
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	WT_OK(weft_attr_setschedparam(&a, SCHED_RR, 10));
	weft_t t = wt_spawn(&a, fn, NULL);
	WT_OK(weft_attr_destroy(&a));
	return t;
}

static void test_rr_spinner_gives_way_after_its_rr_slice(void **state)
{
	(void)state;
	wt_need_preemption();
	init_one_worker(SLICE_NS, "prio");
	WT_OK(weft_setschedparam(WEFT_NULL, SCHED_FIFO, 99));
	weft_t a = spawn_rr(rr_spinner);
	weft_t b = spawn_rr(note_other);
	wt_join(a);
	wt_join(b);
	printf("[          ] the SCHED_RR spinner gave way after %.1f ms (RR slice %llu ms, "
	       "preemption slice %ld ms)\n",
	       (double)rr_ran / 1e6, WEFT_SCHED_RR_SLICE_NS / MS, SLICE_NS / (long)MS);
	WT_EQ(atomic_load(&other_ran), 1);
	/* Not at the 10 ms preemption slice: prio's tick decides. */
	WT_CMPU(rr_ran, >=, WEFT_SCHED_RR_SLICE_NS * 9 / 10);
	WT_CMPU(rr_ran, <, 2000 * MS);
	WT_OK(weft_setschedparam(WEFT_NULL, SCHED_OTHER, 0));
	WT_OK(weft_shutdown());
}

/* ---- errno and thread-locals survive a preemption ---------------------------- */

/* Volatile: every access goes through the thread pointer. */
static __thread volatile long tls_count;

struct tls_result {
	int err;
	long tls, local;
	int other_ran;
	uint64_t ran_ns;
};

/* Worker TLS: its errno and tls_count are its worker's, not the spinner's. */
static void *clobber(void *arg)
{
	(void)arg;
	errno = 5678;
	tls_count = -1;
	atomic_store(&other_ran, 1);
	return NULL;
}

/* Own TLS: makes the clobbering ULT ready on its worker, sets errno and its
 * __thread counter, then counts in both the counter and a local until the
 * other one ran and at least 50 ms passed (a clock read every 2^20 rounds;
 * at most 5 s). */
static void *tls_spinner(void *arg)
{
	struct tls_result *r = arg;
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	WT_OK(weft_attr_settls(&a, WEFT_TLS_WORKER));
	other_id = wt_spawn(&a, clobber, NULL);
	WT_OK(weft_attr_destroy(&a));
	tls_count = 0;
	long local = 0;
	uint64_t start = wt_now_ns();
	errno = 1234;
	for (;;) {
		tls_count++;
		local++;
		if (!(local & ((1l << 20) - 1))) {
			uint64_t ran = wt_now_ns() - start;
			if ((atomic_load(&other_ran) && ran >= 50 * MS) || ran > 5000 * MS)
				break;
		}
	}
	r->err = errno;
	r->tls = tls_count;
	r->local = local;
	r->other_ran = atomic_load(&other_ran);
	r->ran_ns = wt_now_ns() - start;
	return NULL;
}

static void test_errno_and_thread_locals_survive_preemption(void **state)
{
	(void)state;
	wt_need_preemption();
	init_one_worker(SLICE_NS, NULL);
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	WT_OK(weft_attr_settls(&a, WEFT_TLS_OWN));
	struct tls_result r;
	memset(&r, 0, sizeof r);
	weft_t t;
	int e = weft_create(&t, &a, tls_spinner, &r);
	WT_OK(weft_attr_destroy(&a));
	if (e == ENOTSUP) {
		WT_OK(weft_shutdown());
		wt_skip("WEFT_TLS_OWN: ENOTSUP (WEFT_VERBOSE=1 says why)");
	}
	WT_OK(e);
	wt_join(t);
	wt_join(other_id);
	printf("[          ] the spinner ran %.1f ms, %ld rounds\n", (double)r.ran_ns / 1e6,
	       r.local);
	WT_EQ(r.other_ran, 1); /* it was preempted: the other one ran meanwhile */
	WT_EQ(r.err, 1234);
	WT_EQ(r.tls, r.local);
	/* The root shares the worker's thread-locals with the clobbering ULT:
	 * the spinner's counting went to its own copy only. */
	WT_EQ(tls_count, -1);
	WT_OK(weft_shutdown());
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spinning_pair_hands_a_flag_back_and_forth),
		cmocka_unit_test(test_spinner_lets_a_sleeper_wake),
		cmocka_unit_test(test_ult_in_a_raw_futex_wait_gives_way),
		cmocka_unit_test(test_preemption_never_interrupts_a_section),
		cmocka_unit_test(test_preemption_spares_a_section_being_handed_over),
		cmocka_unit_test(test_ult_in_a_plain_sleep_is_not_interrupted),
		cmocka_unit_test(test_preemption_off_spinner_keeps_the_worker),
		cmocka_unit_test(test_config_and_environment),
		cmocka_unit_test(test_async_cancel_ends_a_spinning_ult),
		cmocka_unit_test(test_async_with_a_pending_cancel_acts_at_once),
		cmocka_unit_test(test_canceltype_errors),
		cmocka_unit_test(test_rr_spinner_gives_way_after_its_rr_slice),
		cmocka_unit_test(test_errno_and_thread_locals_survive_preemption),
	};
	return WT_RUN(argc, argv, tests);
}
