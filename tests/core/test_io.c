/* Waiting for file descriptors (include/weft/io.h, weft_fd_wait; the design
 * at the top of src/io/poller.c): a ULT that waits for a descriptor parks on
 * weft's I/O poller, and its worker runs other ULTs meanwhile; no kernel
 * thread waits for it.
 *
 * Most tests run one worker, so that a second ULT can run while the first
 * waits only if the first one parked: the second ULT checks that it saw the
 * first one inside weft_fd_wait, which is what proves the worker was not
 * blocked. Under the poller (the default) the worker's hand-over counter
 * must stay 0 - a hand-over would mean the wait was made in the kernel in a
 * system call section, which is what weft_config_t.io = WEFT_IO_OFF does,
 * and what the WEFT_IO_OFF test checks for instead.
 *
 * Waits that should end soon have a deadline a few seconds away where the
 * test allows one, so that a lost wake-up fails with ETIMEDOUT and a
 * message instead of a hang until the harness's timeout.
 *
 * Also here: deadlines on both clocks, argument errors, regular files,
 * hang-ups, cancellation, signals sent to a waiting ULT (through the POSIX
 * layer's pthread_kill, which libweft exports as weft_px_pthread_kill: weft
 * has no weft_* call that sends a signal to a ULT), the configuration
 * (WEFT_IO), foreign threads, and the worker's timers while a ULT waits.
 *
 * Each test runs in its own process (harness.h), so tests that change the
 * environment or the file limit need not restore them. */
#include "harness.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MS 1000000ull

/* The POSIX layer's pthread_kill and pthread_self, which libweft exports
 * (include/weft/compat/pthread.h declares them, but also renames every
 * pthread_* call, which this file does not want). */
extern int weft_px_pthread_kill(pthread_t t, int sig);
extern pthread_t weft_px_pthread_self(void);

/* A ULT's state as seen by the others: before, inside or after its wait. */
enum { BEFORE = 0, INSIDE = 1, AFTER = 2 };

/* now + ns on clock, as an absolute timespec. */
static struct timespec after_ns(clockid_t clock, uint64_t ns)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	ts.tv_sec += (time_t)(ns / 1000000000ull);
	ts.tv_nsec += (long)(ns % 1000000000ull);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

/* weft_fd_wait with a deadline `ns` from now on CLOCK_MONOTONIC. */
static int wait_for(int fd, short events, uint64_t ns)
{
	struct timespec t = after_ns(CLOCK_MONOTONIC, ns);
	return weft_fd_wait(fd, events, CLOCK_MONOTONIC, &t);
}

/* weft_config_init's values (the variant's scheduler and context) with
 * `workers` workers and the I/O kind `io` (0: the poller, whatever WEFT_IO
 * says). */
static void init_with(int workers, int io)
{
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	c.workers = workers;
	c.io = io ? io : WEFT_IO_POLL;
	WT_OK(weft_init(&c));
}

static void write_all(int fd, const void *buf, size_t n)
{
	ssize_t r;
	do
		r = write(fd, buf, n);
	while (r < 0 && errno == EINTR);
	WT_EQ(r, (ssize_t)n);
}

/* Non-blocking, so that a read after a wait that wrongly said "ready"
 * fails with EAGAIN instead of blocking the only worker. */
static void make_pipe(int p[2])
{
	WT_OK(pipe2(p, O_NONBLOCK));
}

static void close_pipe(int p[2])
{
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
}

/* The "Threads:" line of /proc/self/status: the process's kernel threads. */
static int kernel_threads(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	assert_non_null(f);
	char line[256];
	int n = -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	fclose(f);
	WT_CMP(n, >, 0);
	return n;
}

static uint64_t handovers_of(int worker)
{
	weft_worker_stats_t st;
	WT_OK(weft_worker_stats(worker, &st));
	return st.handovers;
}

static void *return_arg(void *arg)
{
	return arg;
}

/* ---- ready at once --------------------------------------------------------- */

/* A pipe with data in it is ready for POLLIN, an empty pipe's write end for
 * POLLOUT, and both together; each returns 0 at once. */
static void test_ready_pipe_returns_at_once(void **state)
{
	init_with(1, 0);
	int p[2];
	make_pipe(p);
	write_all(p[1], "x", 1);
	uint64_t t0 = wt_now_ns();
	WT_OK(wait_for(p[0], POLLIN, 5000 * MS));
	WT_OK(weft_fd_wait(p[0], POLLIN, CLOCK_MONOTONIC, NULL));
	WT_OK(wait_for(p[1], POLLOUT, 5000 * MS));
	WT_OK(weft_fd_wait(p[1], POLLOUT, CLOCK_REALTIME, NULL));
	/* Either direction ready is enough: the read end is not writable. */
	WT_OK(wait_for(p[0], POLLIN | POLLOUT, 5000 * MS));
	uint64_t took = wt_now_ns() - t0;
	WT_CMPU(took, <, 500 * MS);
	/* The data is still there: the wait does not consume it. */
	char c = 0;
	WT_EQ(read(p[0], &c, 1), 1);
	WT_EQ(c, 'x');
	close_pipe(p);
	WT_OK(weft_shutdown());
}

/* A deadline already past does not stop a ready descriptor from being
 * reported ready, and makes a wait on one that is not ready time out at
 * once. */
static void test_past_deadline(void **state)
{
	init_with(1, 0);
	int p[2];
	make_pipe(p);
	struct timespec past = {1, 0}; /* 1970 on CLOCK_REALTIME, boot on MONOTONIC */
	uint64_t t0 = wt_now_ns();
	WT_ERR(weft_fd_wait(p[0], POLLIN, CLOCK_MONOTONIC, &past), ETIMEDOUT);
	WT_ERR(weft_fd_wait(p[0], POLLIN, CLOCK_REALTIME, &past), ETIMEDOUT);
	WT_OK(weft_fd_wait(p[1], POLLOUT, CLOCK_MONOTONIC, &past));
	write_all(p[1], "x", 1);
	WT_OK(weft_fd_wait(p[0], POLLIN, CLOCK_REALTIME, &past));
	WT_CMPU(wt_now_ns() - t0, <, 500 * MS);
	close_pipe(p);
	WT_OK(weft_shutdown());
}

/* ---- one worker: the waiter parks ----------------------------------------- */

static struct {
	int pipe[2];
	atomic_int a_state;
	atomic_int b_saw;       /* a_state when B first found it past BEFORE */
	atomic_int b_saw_later; /* a_state after B's nap, just before B writes */
	int rc;
	ssize_t n;
	char c;
	int worker_during;
} one;

static void *one_waiter(void *arg)
{
	atomic_store(&one.a_state, INSIDE); /* no yield from here to the wait */
	one.rc = wait_for(one.pipe[0], POLLIN, 5000 * MS);
	atomic_store(&one.a_state, AFTER);
	one.n = read(one.pipe[0], &one.c, 1);
	return (void *)1;
}

static void *one_writer(void *arg)
{
	WT_WAIT(atomic_load(&one.a_state) != BEFORE, 20);
	atomic_store(&one.b_saw, atomic_load(&one.a_state));
	one.worker_during = weft_worker_id();
	weft_sleep_ns(5 * MS);
	atomic_store(&one.b_saw_later, atomic_load(&one.a_state));
	write_all(one.pipe[1], "!", 1);
	return (void *)2;
}

/* Both ULTs of the scenario on one worker; main joins them. */
static void run_one_worker_scenario(void)
{
	make_pipe(one.pipe);
	weft_t a = wt_spawn(NULL, one_waiter, NULL);
	weft_t b = wt_spawn(NULL, one_writer, NULL);
	WT_EQ_PTR(wt_join(a), (void *)1);
	WT_EQ_PTR(wt_join(b), (void *)2);
	WT_TRUE(atomic_load(&one.b_saw) == INSIDE,
		"the writer first ran when the waiter was %s its wait (state %d): the worker "
		"was blocked while the waiter waited",
		atomic_load(&one.b_saw) == AFTER ? "past" : "before", atomic_load(&one.b_saw));
	WT_TRUE(atomic_load(&one.b_saw_later) == INSIDE,
		"the wait returned (rc %s) before anything was written to the pipe",
		wt_errname(one.rc));
	WT_OK(one.rc);
	WT_EQ(one.n, 1);
	WT_EQ(one.c, '!');
	WT_EQ(one.worker_during, 0);
	close_pipe(one.pipe);
}

/* One worker: ULT A waits for POLLIN on an empty pipe; ULT B, on the same
 * worker, runs meanwhile, naps, writes a byte; A's wait returns 0 and A
 * reads the byte. The worker was never handed over: the wait was a park on
 * the poller, not a wait in the kernel. */
static void test_waiter_parks_and_worker_runs_others(void **state)
{
	init_with(1, 0);
	run_one_worker_scenario();
	WT_EQU(handovers_of(0), 0);
	WT_OK(weft_shutdown());
}

/* The same scenario with weft_config_t.io = WEFT_IO_OFF: the wait is made
 * in the kernel inside a system call section, and the worker is handed
 * over to a spare kernel thread so that the writer can run. */
static void test_io_off_waits_in_a_section(void **state)
{
	init_with(1, WEFT_IO_OFF);
	weft_config_t c;
	run_one_worker_scenario();
	WT_CMPU(handovers_of(0), >=, 1);
	WT_OK(weft_shutdown());
	/* And WEFT_IO=off in the environment does the same as the field. */
	setenv("WEFT_IO", "off", 1);
	WT_OK(weft_config_init(&c));
	WT_EQ(c.io, WEFT_IO_OFF);
}

/* The child of a fork waits on a poller of its own: the parent's instance
 * (the same kernel object, shared by fork) is not the child's to use, but
 * the child gets a fresh one, so its waiters park there too - the worker
 * is never handed over. The parent has used its poller first. */
static void test_forked_child_parks_on_a_fresh_poller(void **state)
{
#if defined(__SANITIZE_THREAD__)
	wt_skip("ThreadSanitizer cannot start threads in the child of a fork with threads");
#endif
	init_with(1, 0);
	run_one_worker_scenario();
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		uint64_t before = handovers_of(0);
		memset(&one, 0, sizeof one);
		run_one_worker_scenario();
		_exit(handovers_of(0) == before ? 0 : 3);
	}
	WT_TRUE(pid > 0, "fork: %s", strerror(errno));
	int status = 0;
	uint64_t end = wt_now_ns() + 20 * 1000 * MS;
	pid_t w;
	while ((w = waitpid(pid, &status, WNOHANG)) == 0 && wt_now_ns() < end)
		weft_sleep_ns(MS);
	if (w == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	WT_TRUE(w == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"the child's wait was not a park on a poller of its own (status %#x: 3 is a "
		"hand-over, as a wait in the kernel makes)",
		status);
	/* The parent's poller goes on working. */
	memset(&one, 0, sizeof one);
	run_one_worker_scenario();
	WT_EQU(handovers_of(0), 0);
	WT_OK(weft_shutdown());
}

/* ---- one worker: a thousand waiters ---------------------------------------- */

enum { MANY = 1000 };

static struct {
	int (*pipes)[2];
	atomic_int entered;
	atomic_int done[MANY];
	int rc[MANY];
	char got[MANY];
	ssize_t n[MANY];
	int threads_while_parked;
	int early; /* waiters found done before their pipe was written */
} many;

static void *many_waiter(void *arg)
{
	int i = (int)(intptr_t)arg;
	atomic_fetch_add(&many.entered, 1); /* no yield from here to the wait */
	many.rc[i] = wait_for(many.pipes[i][0], POLLIN, 30000 * MS);
	many.n[i] = read(many.pipes[i][0], &many.got[i], 1);
	atomic_store(&many.done[i], 1);
	return arg;
}

static void *many_writer(void *arg)
{
	/* With one worker, each waiter that has entered has parked, or this
	 * ULT could not be running. */
	WT_WAIT(atomic_load(&many.entered) == MANY, 30);
	many.threads_while_parked = kernel_threads();
	for (int i = 0; i < MANY; i++)
		many.early += atomic_load(&many.done[i]);
	for (int i = 0; i < MANY; i++) {
		char c = (char)('A' + i % 26);
		write_all(many.pipes[i][1], &c, 1);
	}
	return NULL;
}

/* One worker, a thousand ULTs each waiting on its own pipe, a writer ULT
 * writing to each in turn: every waiter wakes with its own byte, and the
 * process never had a kernel thread per waiter. */
static void test_thousand_waiters_on_one_worker(void **state)
{
	/* 2 descriptors per pipe, and some for the runtime and the harness. */
	rlim_t need = 2 * MANY + 64;
	struct rlimit rl;
	WT_OK(getrlimit(RLIMIT_NOFILE, &rl));
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
		if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
			wt_skip("RLIMIT_NOFILE's hard limit is %llu; %llu descriptors are needed",
				(unsigned long long)rl.rlim_max, (unsigned long long)need);
		rl.rlim_cur = need;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			wt_skip("cannot raise RLIMIT_NOFILE to %llu: %s", (unsigned long long)need,
				strerror(errno));
	}
	/* ThreadSanitizer starts a thread of its own at the first
	 * pthread_create of a process (of this forked test process too): let
	 * that happen before counting. */
	pthread_t first;
	WT_OK(pthread_create(&first, NULL, return_arg, NULL));
	WT_OK(pthread_join(first, NULL));
	int before = kernel_threads();
	init_with(1, 0);
	many.pipes = calloc(MANY, sizeof *many.pipes);
	assert_non_null(many.pipes);
	for (int i = 0; i < MANY; i++)
		make_pipe(many.pipes[i]);
	static weft_t waiters[MANY];
	for (int i = 0; i < MANY; i++)
		waiters[i] = wt_spawn(NULL, many_waiter, (void *)(intptr_t)i);
	weft_t w = wt_spawn(NULL, many_writer, NULL);
	for (int i = 0; i < MANY; i++)
		WT_EQ_PTR(wt_join(waiters[i]), (void *)(intptr_t)i);
	wt_join(w);
	WT_EQ(many.early, 0);
	for (int i = 0; i < MANY; i++) {
		if (many.rc[i] != 0)
			fail_msg("waiter %d: weft_fd_wait returned %s", i, wt_errname(many.rc[i]));
		if (many.n[i] != 1 || many.got[i] != (char)('A' + i % 26))
			fail_msg("waiter %d read %zd byte(s) '%c', expected 'A' + %d", i, many.n[i],
				 many.got[i], i % 26);
	}
	printf("[          ] kernel threads: %d before weft_init, %d with %d ULTs waiting\n",
	       before, many.threads_while_parked, MANY);
	WT_CMP(many.threads_while_parked, <, 10);
	WT_EQU(handovers_of(0), 0);
	for (int i = 0; i < MANY; i++)
		close_pipe(many.pipes[i]);
	free(many.pipes);
	WT_OK(weft_shutdown());
	/* The poller's thread ends at weft_shutdown, like the rest. */
	uint64_t deadline = wt_now_ns() + 5000 * MS;
	int now = kernel_threads();
	while (now != before && wt_now_ns() < deadline) {
		weft_yield(); /* sched_yield: the runtime is down */
		now = kernel_threads();
	}
	WT_EQ(now, before);
}

/* ---- deadlines --------------------------------------------------------- */

static void check_timeout_on(clockid_t clock, const char *name)
{
	int p[2];
	make_pipe(p);
	/* t0 first: the deadline is 50 ms from a moment after it, so the
	 * wait lasts at least 50 ms from t0. */
	uint64_t t0 = wt_now_ns();
	struct timespec t = after_ns(clock, 50 * MS);
	int rc = weft_fd_wait(p[0], POLLIN, clock, &t);
	uint64_t took = wt_now_ns() - t0;
	printf("[          ] %s: ETIMEDOUT after %.3f ms (deadline 50 ms)\n", name,
	       (double)took / 1e6);
	WT_ERR(rc, ETIMEDOUT);
	WT_CMPU(took, >=, 50 * MS);
	WT_CMPU(took, <, 550 * MS);
	close_pipe(p);
}

/* An empty pipe, a deadline 50 ms away: ETIMEDOUT, not before the deadline
 * and not long after it, on CLOCK_MONOTONIC. */
static void test_timeout_monotonic(void **state)
{
	init_with(1, 0);
	check_timeout_on(CLOCK_MONOTONIC, "CLOCK_MONOTONIC");
	WT_OK(weft_shutdown());
}

/* The same on CLOCK_REALTIME. */
static void test_timeout_realtime(void **state)
{
	init_with(1, 0);
	check_timeout_on(CLOCK_REALTIME, "CLOCK_REALTIME");
	WT_OK(weft_shutdown());
}

/* The same with the poller off (the wait is a ppoll in a section). */
static void test_timeout_with_io_off(void **state)
{
	init_with(1, WEFT_IO_OFF);
	check_timeout_on(CLOCK_MONOTONIC, "CLOCK_MONOTONIC, WEFT_IO_OFF");
	check_timeout_on(CLOCK_REALTIME, "CLOCK_REALTIME, WEFT_IO_OFF");
	WT_OK(weft_shutdown());
}

/* ---- errors ------------------------------------------------------------ */

/* EBADF for -1, for a descriptor number just closed, and for a number far
 * past any open descriptor. */
static void test_bad_descriptor(void **state)
{
	init_with(1, 0);
	struct timespec t = after_ns(CLOCK_MONOTONIC, 2000 * MS);
	WT_ERR(weft_fd_wait(-1, POLLIN, CLOCK_MONOTONIC, NULL), EBADF);
	WT_ERR(weft_fd_wait(-1, POLLOUT, CLOCK_MONOTONIC, &t), EBADF);
	int fd = dup(STDERR_FILENO);
	WT_CMP(fd, >=, 0);
	WT_OK(close(fd));
	WT_ERR(weft_fd_wait(fd, POLLIN, CLOCK_MONOTONIC, &t), EBADF);
	WT_ERR(weft_fd_wait(fd, POLLOUT, CLOCK_MONOTONIC, NULL), EBADF);
	WT_ERR(weft_fd_wait(1 << 24, POLLIN, CLOCK_MONOTONIC, &t), EBADF);
	WT_ERR(weft_fd_wait(INT32_MAX, POLLIN, CLOCK_MONOTONIC, &t), EBADF);
	/* The same number once a pipe has been waited for there and closed:
	 * the poller's entry for it must not make it look open. */
	int p[2];
	make_pipe(p);
	WT_ERR(wait_for(p[0], POLLIN, 10 * MS), ETIMEDOUT);
	int closed = p[0];
	close_pipe(p);
	WT_ERR(weft_fd_wait(closed, POLLIN, CLOCK_MONOTONIC, &t), EBADF);
	WT_OK(weft_shutdown());
}

/* EINVAL for events 0 or with any bit besides POLLIN and POLLOUT, for a
 * clock other than CLOCK_MONOTONIC and CLOCK_REALTIME, and for a tv_nsec
 * outside [0, 1e9) - all on a pipe that is not ready, so that a wait that
 * wrongly went ahead would time out instead. */
static void test_bad_arguments(void **state)
{
	init_with(1, 0);
	int p[2];
	make_pipe(p);
	struct timespec t = after_ns(CLOCK_MONOTONIC, 200 * MS);
	WT_ERR(weft_fd_wait(p[0], 0, CLOCK_MONOTONIC, &t), EINVAL);
	static const short extra[] = {POLLPRI,    POLLERR,    POLLHUP,   POLLNVAL,
				      POLLRDNORM, POLLWRNORM, POLLRDHUP, (short)0x8000};
	for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) {
		int r1 = weft_fd_wait(p[0], (short)(POLLIN | extra[i]), CLOCK_MONOTONIC, &t);
		int r2 = weft_fd_wait(p[0], extra[i], CLOCK_MONOTONIC, &t);
		if (r1 != EINVAL || r2 != EINVAL)
			fail_msg("events POLLIN|%#x: %s, events %#x: %s; expected EINVAL",
				 (unsigned short)extra[i], wt_errname(r1), (unsigned short)extra[i],
				 wt_errname(r2));
	}
	/* A bad clock, with and without a deadline. */
	WT_ERR(weft_fd_wait(p[0], POLLIN, CLOCK_PROCESS_CPUTIME_ID, &t), EINVAL);
	WT_ERR(weft_fd_wait(p[0], POLLIN, CLOCK_PROCESS_CPUTIME_ID, NULL), EINVAL);
	WT_ERR(weft_fd_wait(p[0], POLLIN, CLOCK_THREAD_CPUTIME_ID, &t), EINVAL);
	WT_ERR(weft_fd_wait(p[0], POLLIN, (clockid_t)-1, &t), EINVAL);
	/* A bad timespec on either clock. */
	struct timespec bad = after_ns(CLOCK_MONOTONIC, 200 * MS);
	bad.tv_nsec = 1000000000L;
	WT_ERR(weft_fd_wait(p[0], POLLIN, CLOCK_MONOTONIC, &bad), EINVAL);
	bad = after_ns(CLOCK_REALTIME, 200 * MS);
	bad.tv_nsec = 1000000000L;
	WT_ERR(weft_fd_wait(p[0], POLLIN, CLOCK_REALTIME, &bad), EINVAL);
	bad.tv_nsec = -1;
	WT_ERR(weft_fd_wait(p[0], POLLIN, CLOCK_REALTIME, &bad), EINVAL);
	/* The pipe is still usable after all that. */
	write_all(p[1], "x", 1);
	WT_OK(wait_for(p[0], POLLIN, 2000 * MS));
	close_pipe(p);
	WT_OK(weft_shutdown());
}

/* ---- kinds of descriptor ---------------------------------------------- */

/* A regular file is always ready, for POLLIN, POLLOUT and both; an empty
 * one too (a read would return 0 at once, not block). */
static void test_regular_file_is_ready(void **state)
{
	init_with(1, 0);
	char path[] = "/tmp/weft-test-io-XXXXXX";
	int fd = mkstemp(path);
	WT_CMP(fd, >=, 0);
	unlink(path);
	uint64_t t0 = wt_now_ns();
	WT_OK(wait_for(fd, POLLIN, 2000 * MS));
	WT_OK(wait_for(fd, POLLOUT, 2000 * MS));
	WT_OK(wait_for(fd, POLLIN | POLLOUT, 2000 * MS));
	WT_OK(weft_fd_wait(fd, POLLIN, CLOCK_MONOTONIC, NULL));
	write_all(fd, "data", 4);
	WT_OK(wait_for(fd, POLLIN, 2000 * MS));
	WT_CMPU(wt_now_ns() - t0, <, 500 * MS);
	close(fd);
	/* Read-only: ready for reading too. */
	fd = open("/proc/self/status", O_RDONLY);
	WT_CMP(fd, >=, 0);
	WT_OK(wait_for(fd, POLLIN, 2000 * MS));
	close(fd);
	WT_OK(weft_shutdown());
}

static struct {
	int pipe[2];
	atomic_int a_state;
	atomic_int b_saw;
	int rc;
	ssize_t n;
} hup;

static void *hup_waiter(void *arg)
{
	atomic_store(&hup.a_state, INSIDE);
	hup.rc = wait_for(hup.pipe[0], POLLIN, 5000 * MS);
	atomic_store(&hup.a_state, AFTER);
	char c;
	hup.n = read(hup.pipe[0], &c, 1);
	return NULL;
}

static void *hup_closer(void *arg)
{
	WT_WAIT(atomic_load(&hup.a_state) != BEFORE, 20);
	atomic_store(&hup.b_saw, atomic_load(&hup.a_state));
	weft_sleep_ns(2 * MS);
	close(hup.pipe[1]);
	hup.pipe[1] = -1;
	return NULL;
}

/* A hang-up counts as ready: a ULT waiting for POLLIN on a pipe whose
 * write end another ULT closes gets 0, and its read then returns 0 (end of
 * file). */
static void test_hangup_is_ready(void **state)
{
	init_with(1, 0);
	make_pipe(hup.pipe);
	weft_t a = wt_spawn(NULL, hup_waiter, NULL);
	weft_t b = wt_spawn(NULL, hup_closer, NULL);
	wt_join(a);
	wt_join(b);
	WT_EQ(atomic_load(&hup.b_saw), INSIDE);
	WT_OK(hup.rc);
	WT_EQ(hup.n, 0);
	close_pipe(hup.pipe);
	WT_OK(weft_shutdown());
}

static struct {
	int pipe[2];
	atomic_int a_state;
	int rc;
	ssize_t drained;
} full;

static void *full_waiter(void *arg)
{
	atomic_store(&full.a_state, INSIDE);
	full.rc = wait_for(full.pipe[1], POLLOUT, 5000 * MS);
	atomic_store(&full.a_state, AFTER);
	return NULL;
}

static void *full_drainer(void *arg)
{
	WT_WAIT(atomic_load(&full.a_state) != BEFORE, 20);
	weft_sleep_ns(2 * MS);
	WT_EQ(atomic_load(&full.a_state), INSIDE);
	char buf[4096];
	ssize_t r;
	while ((r = read(full.pipe[0], buf, sizeof buf)) > 0)
		full.drained += r;
	return NULL;
}

/* POLLOUT through the poller: a ULT waiting to write to a full pipe wakes
 * when another ULT drains it. */
static void test_full_pipe_wakes_writer_when_drained(void **state)
{
	init_with(1, 0);
	make_pipe(full.pipe);
	char buf[4096] = {0};
	ssize_t filled = 0, r;
	while ((r = write(full.pipe[1], buf, sizeof buf)) > 0)
		filled += r;
	WT_EQ(errno, EAGAIN);
	/* Not ready now. */
	WT_ERR(wait_for(full.pipe[1], POLLOUT, 10 * MS), ETIMEDOUT);
	weft_t a = wt_spawn(NULL, full_waiter, NULL);
	weft_t b = wt_spawn(NULL, full_drainer, NULL);
	wt_join(a);
	wt_join(b);
	WT_OK(full.rc);
	WT_EQ(full.drained, filled);
	WT_EQU(handovers_of(0), 0);
	close_pipe(full.pipe);
	WT_OK(weft_shutdown());
}

static struct {
	int sv[2];
	atomic_int in_state, out_state;
	int in_rc, out_rc;
	atomic_int out_done_when_in; /* in_state when the POLLOUT waiter returned */
} two;

static void *two_in(void *arg)
{
	atomic_store(&two.in_state, INSIDE);
	two.in_rc = wait_for(two.sv[0], POLLIN, 5000 * MS);
	atomic_store(&two.in_state, AFTER);
	return NULL;
}

static void *two_out(void *arg)
{
	atomic_store(&two.out_state, INSIDE);
	two.out_rc = wait_for(two.sv[0], POLLOUT, 5000 * MS);
	atomic_store(&two.out_done_when_in, atomic_load(&two.in_state));
	atomic_store(&two.out_state, AFTER);
	return NULL;
}

/* Two ULTs wait on one socket, one for each direction: freeing room wakes
 * the writer only (the reader waits on), and data then wakes the reader. */
static void test_two_directions_on_one_descriptor(void **state)
{
	init_with(1, 0);
	WT_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, two.sv));
	char buf[4096] = {0};
	ssize_t filled = 0, r;
	while ((r = write(two.sv[0], buf, sizeof buf)) > 0)
		filled += r;
	WT_EQ(errno, EAGAIN);
	weft_t a = wt_spawn(NULL, two_in, NULL);
	weft_t b = wt_spawn(NULL, two_out, NULL);
	WT_WAIT(atomic_load(&two.in_state) == INSIDE && atomic_load(&two.out_state) == INSIDE, 20);
	weft_sleep_ns(5 * MS);
	WT_EQ(atomic_load(&two.in_state), INSIDE);
	WT_EQ(atomic_load(&two.out_state), INSIDE);
	/* Room: the writer's wait ends, the reader's does not. */
	ssize_t drained = 0;
	while (drained < filled && (r = read(two.sv[1], buf, sizeof buf)) > 0)
		drained += r;
	WT_EQ(drained, filled);
	wt_join(b);
	WT_OK(two.out_rc);
	WT_EQ(atomic_load(&two.out_done_when_in), INSIDE);
	weft_sleep_ns(20 * MS);
	WT_EQ(atomic_load(&two.in_state), INSIDE);
	/* Data: the reader's ends. */
	write_all(two.sv[1], "y", 1);
	wt_join(a);
	WT_OK(two.in_rc);
	close(two.sv[0]);
	close(two.sv[1]);
	WT_OK(weft_shutdown());
}

/* A wait of `ms` on fd for events that are not ready: ETIMEDOUT, and the
 * waiter parked a few times at most (a report it did not wait for, taken
 * as a reason to look again and arm again at once, would make it park and
 * wake over and over: a busy loop). */
static void check_parks_quietly(int fd, short events, const char *what)
{
	weft_worker_stats_t s0, s1;
	WT_OK(weft_worker_stats(0, &s0));
	uint64_t t0 = wt_now_ns();
	int rc = wait_for(fd, events, 100 * MS);
	uint64_t took = wt_now_ns() - t0;
	WT_OK(weft_worker_stats(0, &s1));
	printf("[          ] %s: %s after %.1f ms, %llu park(s), %llu switch(es)\n", what,
	       wt_errname(rc), (double)took / 1e6, (unsigned long long)(s1.parks - s0.parks),
	       (unsigned long long)(s1.switches - s0.switches));
	WT_ERR(rc, ETIMEDOUT);
	WT_TRUE(s1.parks - s0.parks < 20,
		"%s: the waiter parked %llu times in 100 ms: it woke for an event it does not "
		"wait for, over and over",
		what, (unsigned long long)(s1.parks - s0.parks));
}

/* Events the waiter did not ask for do not wake it: a POLLOUT waiter on a
 * full socket whose peer shut down its writing (POLLRDHUP and POLLIN come
 * true, POLLOUT does not), and a POLLIN waiter on a TCP socket with only
 * urgent data (POLLPRI comes true, POLLIN does not). Each times out having
 * parked once, instead of spinning. */
static void test_other_events_do_not_wake_the_waiter(void **state)
{
	init_with(1, 0);
	int sv[2];
	WT_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv));
	char buf[4096] = {0};
	while (write(sv[0], buf, sizeof buf) > 0)
		;
	WT_EQ(errno, EAGAIN);
	WT_OK(shutdown(sv[1], SHUT_WR));
	struct pollfd pf = {sv[0], POLLIN | POLLOUT | POLLRDHUP, 0};
	WT_EQ(poll(&pf, 1, 0), 1);
	WT_TRUE((pf.revents & (POLLIN | POLLRDHUP)) && !(pf.revents & POLLOUT), "revents %#x",
		pf.revents);
	check_parks_quietly(sv[0], POLLOUT, "POLLOUT, full, peer shut down writing");
	close(sv[0]);
	close(sv[1]);

	/* TCP over the loopback interface, if there is one. */
	int l = socket(AF_INET, SOCK_STREAM, 0);
	WT_CMP(l, >=, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	if (bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 1) != 0 ||
	    getsockname(l, (struct sockaddr *)&a, &al) != 0) {
		printf("[          ] no loopback TCP (%s): the urgent-data case is left out\n",
		       strerror(errno));
		close(l);
		WT_OK(weft_shutdown());
		return;
	}
	int c = socket(AF_INET, SOCK_STREAM, 0);
	WT_CMP(c, >=, 0);
	WT_OK(connect(c, (struct sockaddr *)&a, sizeof a));
	int s = accept(l, NULL, NULL);
	WT_CMP(s, >=, 0);
	WT_EQ(send(c, "U", 1, MSG_OOB), 1);
	/* Wait (in the kernel, briefly) until the urgent byte is there. */
	pf = (struct pollfd){s, POLLPRI, 0};
	WT_EQ(poll(&pf, 1, 2000), 1);
	pf = (struct pollfd){s, POLLIN, 0};
	WT_EQ(poll(&pf, 1, 0), 0); /* not readable: the byte is out of band */
	check_parks_quietly(s, POLLIN, "POLLIN, TCP with urgent data only");
	close(s);
	close(c);
	close(l);
	WT_OK(weft_shutdown());
}

/* ---- cancellation and signals ------------------------------------------ */

static struct {
	int pipe[2];
	atomic_int a_state;
	atomic_int cleanup_ran;
	int rc;
} can;

static void cancel_cleanup(void *arg)
{
	atomic_store(&can.cleanup_ran, 1);
}

static void *cancel_waiter(void *arg)
{
	weft_cleanup_push(cancel_cleanup, NULL);
	atomic_store(&can.a_state, INSIDE);
	can.rc = weft_fd_wait(can.pipe[0], POLLIN, CLOCK_MONOTONIC, NULL);
	atomic_store(&can.a_state, AFTER); /* never: it was cancelled */
	weft_cleanup_pop(0);
	return (void *)1;
}

static void *late_waiter(void *arg)
{
	atomic_store(&can.a_state, INSIDE);
	can.rc = wait_for(can.pipe[0], POLLIN, 5000 * MS);
	atomic_store(&can.a_state, AFTER);
	return (void *)2;
}

/* A ULT blocked in weft_fd_wait (no deadline) is cancelled: it leaves the
 * wait, runs its cleanup handler and its join reports WEFT_CANCELED. The
 * descriptor can be waited for again afterwards. */
static void test_cancel_a_waiting_ult(void **state)
{
	init_with(1, 0);
	make_pipe(can.pipe);
	weft_t a = wt_spawn(NULL, cancel_waiter, NULL);
	/* One worker: once A has said so, A is parked in its wait. */
	WT_WAIT(atomic_load(&can.a_state) == INSIDE, 20);
	weft_sleep_ns(2 * MS);
	WT_EQ(atomic_load(&can.a_state), INSIDE);
	WT_OK(weft_cancel(a));
	WT_EQ_PTR(wt_join(a), WEFT_CANCELED);
	WT_EQ(atomic_load(&can.a_state), INSIDE);
	WT_EQ(atomic_load(&can.cleanup_ran), 1);
	/* The same pipe, a new waiter: woken by a write as usual. */
	atomic_store(&can.a_state, BEFORE);
	weft_t b = wt_spawn(NULL, late_waiter, NULL);
	WT_WAIT(atomic_load(&can.a_state) == INSIDE, 20);
	weft_sleep_ns(2 * MS);
	WT_EQ(atomic_load(&can.a_state), INSIDE);
	write_all(can.pipe[1], "z", 1);
	WT_EQ_PTR(wt_join(b), (void *)2);
	WT_OK(can.rc);
	close_pipe(can.pipe);
	WT_OK(weft_shutdown());
}

static atomic_int off_inside;

static void *off_waiter(void *arg)
{
	int *p = arg;
	atomic_store(&off_inside, 1);
	weft_fd_wait(p[0], POLLIN, CLOCK_MONOTONIC, NULL);
	return (void *)7;
}

/* With the poller off the wait is made in the kernel, in a system call
 * section, which a cancellation does not interrupt: it is acted on as soon
 * as the wait returns, before weft_fd_wait does. */
static void test_cancel_with_io_off_acts_when_the_wait_returns(void **state)
{
	init_with(1, WEFT_IO_OFF);
	int p[2];
	make_pipe(p);
	weft_t a = wt_spawn(NULL, off_waiter, p);
	WT_WAIT(atomic_load(&off_inside) == 1, 20);
	weft_sleep_ns(20 * MS);
	WT_OK(weft_cancel(a));
	weft_sleep_ns(20 * MS);
	write_all(p[1], "x", 1);
	WT_EQ_PTR(wt_join(a), WEFT_CANCELED);
	close_pipe(p);
	WT_OK(weft_shutdown());
}

static void *cancel_self_then_wait(void *arg)
{
	int *p = arg;
	WT_OK(weft_cancel(weft_self()));
	/* Cancellation pending: weft_fd_wait is a cancellation point, even on
	 * a descriptor that is ready. */
	weft_fd_wait(p[1], POLLOUT, CLOCK_MONOTONIC, NULL);
	return (void *)1;
}

/* A cancellation pending when weft_fd_wait is called acts there. */
static void test_pending_cancel_acts_in_fd_wait(void **state)
{
	init_with(1, 0);
	int p[2];
	make_pipe(p);
	weft_t a = wt_spawn(NULL, cancel_self_then_wait, p);
	WT_EQ_PTR(wt_join(a), WEFT_CANCELED);
	close_pipe(p);
	WT_OK(weft_shutdown());
}

static struct {
	int pipe[2];
	atomic_int a_state;
	pthread_t a_pt;
	atomic_int handler_ran;
	weft_t handler_self;
	int rc;
	int ran_before_return;
} sig;

static void on_usr1(int s)
{
	sig.handler_self = weft_self();
	atomic_store(&sig.handler_ran, 1);
}

static void *signal_waiter(void *arg)
{
	sig.a_pt = weft_px_pthread_self();
	atomic_store(&sig.a_state, INSIDE);
	sig.rc = weft_fd_wait(sig.pipe[0], POLLIN, CLOCK_MONOTONIC, NULL);
	sig.ran_before_return = atomic_load(&sig.handler_ran);
	atomic_store(&sig.a_state, AFTER);
	return (void *)weft_self();
}

static void check_signal_interrupts_the_wait(int io)
{
	struct sigaction sa = {0};
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	WT_OK(sigaction(SIGUSR1, &sa, NULL));
	init_with(1, io);
	make_pipe(sig.pipe);
	weft_t a = wt_spawn(NULL, signal_waiter, NULL);
	WT_WAIT(atomic_load(&sig.a_state) == INSIDE, 20);
	weft_sleep_ns(2 * MS);
	WT_EQ(atomic_load(&sig.a_state), INSIDE);
	WT_EQ(atomic_load(&sig.handler_ran), 0);
	WT_OK(weft_px_pthread_kill(sig.a_pt, SIGUSR1));
	void *ret = wt_join(a);
	WT_ERR(sig.rc, EINTR);
	WT_EQ(sig.ran_before_return, 1);
	if (io != WEFT_IO_OFF)
		WT_EQU(sig.handler_self, (weft_t)(uintptr_t)ret); /* in the waiting ULT */
	close_pipe(sig.pipe);
	WT_OK(weft_shutdown());
}

/* A signal sent to a ULT blocked in weft_fd_wait (through libweft's
 * pthread_kill, weft_px_pthread_kill) runs its handler in that ULT, and the
 * wait returns EINTR. */
static void test_signal_interrupts_the_wait(void **state)
{
	check_signal_interrupts_the_wait(0);
}

/* The same with the poller off: the ULT waits in the kernel in a section,
 * and the signal goes to the kernel thread it waits on, which interrupts
 * its poll (the handler runs there, inside the section, where weft_self()
 * is WEFT_NULL: not compared). */
static void test_signal_interrupts_the_wait_with_io_off(void **state)
{
	check_signal_interrupts_the_wait(WEFT_IO_OFF);
}

/* ---- configuration ------------------------------------------------------- */

/* weft_config_t.io = WEFT_IO_URING: weft_init answers ENOTSUP; a kind out
 * of range, EINVAL; the runtime then starts with a good configuration. */
static void test_config_io_uring_and_out_of_range(void **state)
{
	unsetenv("WEFT_IO");
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	WT_EQ(c.io, WEFT_IO_POLL); /* the default */
	c.workers = 1;
	c.io = WEFT_IO_URING;
	WT_ERR(weft_init(&c), ENOTSUP);
	c.io = WEFT_IO_URING + 1;
	WT_ERR(weft_init(&c), EINVAL);
	c.io = -1;
	WT_ERR(weft_init(&c), EINVAL);
	c.io = WEFT_IO_POLL;
	WT_OK(weft_init(&c));
	int p[2];
	make_pipe(p);
	write_all(p[1], "x", 1);
	WT_OK(wait_for(p[0], POLLIN, 2000 * MS));
	close_pipe(p);
	WT_OK(weft_shutdown());
}

/* WEFT_IO: an unknown value makes weft_init(NULL) EINVAL; "uring" ENOTSUP;
 * "poll" and "off" are taken. */
static void test_env_weft_io(void **state)
{
	const char *old = getenv("WEFT_IO");
	char *saved = old ? strdup(old) : NULL;
	weft_config_t c;
	setenv("WEFT_IO", "bogus", 1);
	WT_ERR(weft_init(NULL), EINVAL);
	WT_ERR(weft_config_init(&c), EINVAL);
	setenv("WEFT_IO", "uring", 1);
	WT_ERR(weft_init(NULL), ENOTSUP);
	setenv("WEFT_IO", "poll", 1);
	WT_OK(weft_config_init(&c));
	WT_EQ(c.io, WEFT_IO_POLL);
	/* A field that is set wins over the environment. */
	setenv("WEFT_IO", "bogus", 1);
	c.io = WEFT_IO_OFF;
	c.workers = 1;
	WT_OK(weft_init(&c));
	WT_OK(weft_shutdown());
	if (saved)
		setenv("WEFT_IO", saved, 1);
	else
		unsetenv("WEFT_IO");
	free(saved);
	WT_OK(weft_init(NULL));
	WT_OK(weft_shutdown());
}

/* ---- the poller's life ------------------------------------------------- */

static struct {
	int pipe[2];
	atomic_int a_state;
	int rc;
} rs;

static void *restart_waiter(void *arg)
{
	atomic_store(&rs.a_state, INSIDE);
	rs.rc = wait_for(rs.pipe[0], POLLIN, 5000 * MS);
	atomic_store(&rs.a_state, AFTER);
	return NULL;
}

/* The poller stops at weft_shutdown and starts again with the next runtime:
 * a wait parked on it (one worker) is woken in each of three runs, on the
 * same descriptor numbers. */
static void test_poller_restarts_after_shutdown(void **state)
{
	make_pipe(rs.pipe);
	for (int run = 0; run < 3; run++) {
		init_with(1, 0);
		atomic_store(&rs.a_state, BEFORE);
		rs.rc = -1;
		weft_t a = wt_spawn(NULL, restart_waiter, NULL);
		WT_WAIT(atomic_load(&rs.a_state) == INSIDE, 20);
		weft_sleep_ns(2 * MS);
		WT_TRUE(atomic_load(&rs.a_state) == INSIDE, "run %d: the wait ended early (%s)",
			run, wt_errname(rs.rc));
		write_all(rs.pipe[1], "r", 1);
		wt_join(a);
		WT_TRUE(rs.rc == 0, "run %d: weft_fd_wait returned %s", run, wt_errname(rs.rc));
		char c;
		WT_EQ(read(rs.pipe[0], &c, 1), 1);
		WT_EQU(handovers_of(0), 0);
		WT_OK(weft_shutdown());
	}
	close_pipe(rs.pipe);
}

/* Before weft_init (and after weft_shutdown) the caller is a plain kernel
 * thread: weft_fd_wait waits in the kernel, with its deadline. */
static void test_before_the_runtime_runs(void **state)
{
	int p[2];
	make_pipe(p);
	WT_OK(wait_for(p[1], POLLOUT, 2000 * MS));
	uint64_t t0 = wt_now_ns();
	WT_ERR(wait_for(p[0], POLLIN, 30 * MS), ETIMEDOUT);
	WT_CMPU(wt_now_ns() - t0, >=, 30 * MS);
	WT_ERR(weft_fd_wait(-1, POLLIN, CLOCK_MONOTONIC, NULL), EBADF);
	WT_ERR(weft_fd_wait(p[0], POLLPRI, CLOCK_MONOTONIC, NULL), EINVAL);
	write_all(p[1], "b", 1);
	WT_OK(wait_for(p[0], POLLIN, 2000 * MS));
	WT_EQ(wt_running(), 0); /* it did not start the runtime */
	init_with(1, 0);
	WT_OK(weft_shutdown());
	WT_OK(wait_for(p[0], POLLIN, 2000 * MS));
	close_pipe(p);
}

/* ---- foreign threads ---------------------------------------------------- */

static struct {
	int pipe[2];
	atomic_int ready;
	int rc, rc_timeout;
	uint64_t waited_ns;
	uint64_t timeout_ns;
	int worker_id;
} fgn;

static void *foreign_main(void *arg)
{
	fgn.worker_id = weft_worker_id();
	/* Not ready, and a deadline: ETIMEDOUT from the kernel's poll. */
	uint64_t t0 = wt_now_ns();
	fgn.rc_timeout = wait_for(fgn.pipe[0], POLLIN, 30 * MS);
	fgn.timeout_ns = wt_now_ns() - t0;
	t0 = wt_now_ns();
	atomic_store(&fgn.ready, 1);
	fgn.rc = wait_for(fgn.pipe[0], POLLIN, 5000 * MS);
	fgn.waited_ns = wt_now_ns() - t0;
	return NULL;
}

/* A plain pthread, made while the runtime runs, waits for a pipe (in the
 * kernel: it has no worker) that main writes to after 20 ms: 0. */
static void test_foreign_thread_waits(void **state)
{
	init_with(1, 0);
	make_pipe(fgn.pipe);
	struct wt_pthread p;
	wt_pthread_start(&p, foreign_main, NULL);
	WT_WAIT(atomic_load(&fgn.ready), 20);
	weft_sleep_ns(20 * MS);
	write_all(fgn.pipe[1], "f", 1);
	wt_pthread_join(&p);
	WT_EQ(fgn.worker_id, -1);
	WT_ERR(fgn.rc_timeout, ETIMEDOUT);
	WT_CMPU(fgn.timeout_ns, >=, 30 * MS);
	WT_OK(fgn.rc);
	printf("[          ] the foreign thread waited %.3f ms for a write made after 20 ms\n",
	       (double)fgn.waited_ns / 1e6);
	WT_CMPU(fgn.waited_ns, >=, 20 * MS);
	close_pipe(fgn.pipe);
	WT_OK(weft_shutdown());
}

/* ---- timers while a ULT waits -------------------------------------------- */

enum { NAPS = 5 };

static struct {
	int pipe[2];
	atomic_int a_state;
	int rc;
	uint64_t late_ns[NAPS];
} tim;

static void *timer_waiter(void *arg)
{
	atomic_store(&tim.a_state, INSIDE);
	tim.rc = weft_fd_wait(tim.pipe[0], POLLIN, CLOCK_MONOTONIC, NULL);
	atomic_store(&tim.a_state, AFTER);
	return NULL;
}

static void *timer_sleeper(void *arg)
{
	WT_WAIT(atomic_load(&tim.a_state) != BEFORE, 20);
	for (int i = 0; i < NAPS; i++) {
		uint64_t t0 = wt_now_ns();
		WT_OK(weft_sleep_ns(20 * MS));
		uint64_t took = wt_now_ns() - t0;
		WT_CMPU(took, >=, 20 * MS);
		tim.late_ns[i] = took - 20 * MS;
	}
	WT_EQ(atomic_load(&tim.a_state), INSIDE);
	write_all(tim.pipe[1], "t", 1);
	return NULL;
}

/* One worker: ULT A waits on an empty pipe with no deadline (the worker
 * has nothing else to run and sleeps in the poller), while ULT B sleeps
 * 20 ms, five times: each sleep ends within 20 ms of its deadline. */
static void test_timers_fire_while_a_ult_waits(void **state)
{
	init_with(1, 0);
	make_pipe(tim.pipe);
	weft_t a = wt_spawn(NULL, timer_waiter, NULL);
	weft_t b = wt_spawn(NULL, timer_sleeper, NULL);
	wt_join(b);
	wt_join(a);
	WT_OK(tim.rc);
	uint64_t worst = 0;
	printf("[          ] lateness of 20 ms sleeps while a ULT waits:");
	for (int i = 0; i < NAPS; i++) {
		printf(" %.3f", (double)tim.late_ns[i] / 1e6);
		if (tim.late_ns[i] > worst)
			worst = tim.late_ns[i];
	}
	printf(" ms\n");
	WT_CMPU(worst, <=, 20 * MS);
	close_pipe(tim.pipe);
	WT_OK(weft_shutdown());
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ready_pipe_returns_at_once),
		cmocka_unit_test(test_past_deadline),
		cmocka_unit_test(test_waiter_parks_and_worker_runs_others),
		cmocka_unit_test(test_forked_child_parks_on_a_fresh_poller),
		cmocka_unit_test(test_thousand_waiters_on_one_worker),
		cmocka_unit_test(test_timeout_monotonic),
		cmocka_unit_test(test_timeout_realtime),
		cmocka_unit_test(test_timeout_with_io_off),
		cmocka_unit_test(test_bad_descriptor),
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_regular_file_is_ready),
		cmocka_unit_test(test_hangup_is_ready),
		cmocka_unit_test(test_full_pipe_wakes_writer_when_drained),
		cmocka_unit_test(test_two_directions_on_one_descriptor),
		cmocka_unit_test(test_other_events_do_not_wake_the_waiter),
		cmocka_unit_test(test_cancel_a_waiting_ult),
		cmocka_unit_test(test_pending_cancel_acts_in_fd_wait),
		cmocka_unit_test(test_cancel_with_io_off_acts_when_the_wait_returns),
		cmocka_unit_test(test_signal_interrupts_the_wait),
		cmocka_unit_test(test_signal_interrupts_the_wait_with_io_off),
		cmocka_unit_test(test_io_off_waits_in_a_section),
		cmocka_unit_test(test_config_io_uring_and_out_of_range),
		cmocka_unit_test(test_env_weft_io),
		cmocka_unit_test(test_poller_restarts_after_shutdown),
		cmocka_unit_test(test_before_the_runtime_runs),
		cmocka_unit_test(test_foreign_thread_waits),
		cmocka_unit_test(test_timers_fire_while_a_ult_waits),
	};
	return WT_RUN(argc, argv, tests);
}
