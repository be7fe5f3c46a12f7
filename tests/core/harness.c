/* The per-test-process runner and helpers declared in harness.h. */
#include "harness.h"

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Exit status of a test process that skipped itself (automake's convention). */
#define WT_SKIP_STATUS 77

uint64_t wt_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(long ns)
{
	struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

const char *wt_errname(long long e)
{
	static _Thread_local char buf[32];
	if (e == 0)
		return "0";
	if (e > 0 && e < 4096) {
		const char *s = strerrorname_np((int)e);
		if (s)
			return s;
	}
	snprintf(buf, sizeof buf, "%lld", e);
	return buf;
}

const char *wt_describe_status(int status, char *buf, size_t n)
{
	if (WIFEXITED(status))
		snprintf(buf, n, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, n, "killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(buf, n, "wait status %#x", status);
	return buf;
}

void wt_skip(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("[  SKIPPED ] ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(NULL);
	_exit(WT_SKIP_STATUS);
}

static atomic_int probe_word, probe_tid;

static void *probe_in_futex(void *arg)
{
	(void)arg;
	atomic_store(&probe_tid, (int)syscall(SYS_gettid));
	while (!atomic_load(&probe_word))
		syscall(SYS_futex, &probe_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	return NULL;
}

void wt_need_proc_syscalls(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, probe_in_futex, NULL) != 0)
		wt_skip("no thread to ask /proc about");
	long nr = -1;
	for (int tries = 0; tries < 2000 && nr < 0; tries++) {
		char path[64], buf[256];
		int tid = atomic_load(&probe_tid);
		snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
		FILE *f = tid ? fopen(path, "r") : NULL;
		if (f) {
			if (!fgets(buf, sizeof buf, f) || sscanf(buf, "%ld", &nr) != 1)
				nr = -1; /* "running" */
			fclose(f);
		}
		if (nr < 0)
			usleep(500);
	}
	atomic_store(&probe_word, 1);
	syscall(SYS_futex, &probe_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	pthread_join(t, NULL);
	if (nr != SYS_futex)
		wt_skip("/proc reports system call %ld for a futex wait (an emulator's kernel)",
			nr);
}

void wt_need_preemption(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	wt_skip("preemption is not built in sanitizer builds (src/sched/preempt.c)");
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
	wt_skip("preemption is not built in sanitizer builds (src/sched/preempt.c)");
#endif
#endif
#if !defined(__x86_64__) && !defined(__aarch64__)
	wt_skip("preemption is built on x86-64 and aarch64 only");
#endif
}

static void no_core_dumps(void)
{
	struct rlimit rl = {0, 0};
	setrlimit(RLIMIT_CORE, &rl);
}

/* WEFT_TEST_GDB set: print where a timed-out test process hangs (gdb
 * attaches, prints every kernel thread's stack and, when the variable names
 * tools/weft-gdb.py, every ULT and its stack), at most 3000 lines, within
 * 25 s: ctest's own timeout for the executable may come soon after. */
static void show_hang(pid_t pid)
{
	const char *g = getenv("WEFT_TEST_GDB");
	if (!g || !*g)
		return;
	size_t n = strlen(g);
	bool ext = n > 3 && strcmp(g + n - 3, ".py") == 0 && strchr(g, '\'') == NULL;
	char cmd[PATH_MAX + 512];
	snprintf(cmd, sizeof cmd,
		 "timeout 25 gdb -p %d -batch -ex 'thread apply all bt' %s%s%s 2>&1 | "
		 "grep -v '^\\[New LWP' | head -n 3000 1>&2",
		 (int)pid, ext ? "-ex 'source " : "", ext ? g : "",
		 ext ? "' -ex 'info weft-threads' -ex 'weft-thread all bt'" : "");
	fflush(NULL);
	if (system(cmd) != 0)
		fprintf(stderr, "(gdb failed)\n");
}

/* Wait for pid until deadline_ns; kill it (and its group) when late.
 * Returns true if it ended in time; *status is set either way. */
static bool wait_until(pid_t pid, uint64_t deadline_ns, int *status)
{
	long nap = 100000;
	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);
		if (r == pid)
			return true;
		if (r < 0 && errno != EINTR) {
			*status = 0;
			return true;
		}
		if (wt_now_ns() > deadline_ns) {
			show_hang(pid);
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			while (waitpid(pid, status, 0) < 0 && errno == EINTR)
				;
			return false;
		}
		sleep_ns(nap);
		if (nap < 10000000)
			nap *= 2;
	}
}

static bool selected(const char *name, int argc, char **argv)
{
	if (argc <= 1)
		return true;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return true;
	return false;
}

int wt_run(int argc, char **argv, const struct CMUnitTest *tests, size_t n)
{
	int timeout_s = 60;
	const char *t = getenv("WEFT_TEST_TIMEOUT");
	if (t && atoi(t) > 0)
		timeout_s = atoi(t);

	for (int i = 1; i < argc; i++) {
		bool known = false;
		for (size_t k = 0; k < n; k++)
			known |= strcmp(argv[i], tests[k].name) == 0;
		if (!known) {
			fprintf(stderr, "%s: no test named %s; tests are:\n", argv[0], argv[i]);
			for (size_t k = 0; k < n; k++)
				fprintf(stderr, "  %s\n", tests[k].name);
			return 2;
		}
	}

	size_t ran = 0, passed = 0, skipped = 0, failed = 0;
	const char *failures[256];
	for (size_t i = 0; i < n; i++) {
		if (!selected(tests[i].name, argc, argv))
			continue;
		ran++;
		fflush(NULL);
		uint64_t start = wt_now_ns();
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			setpgid(0, 0);
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY); /* show_hang's gdb */
			no_core_dumps();
			setvbuf(stdout, NULL, _IONBF, 0);
			setenv("CMOCKA_TEST_ABORT", "1", 1);
			int nfail =
				_cmocka_run_group_tests(tests[i].name, &tests[i], 1, NULL, NULL);
			fflush(NULL);
			exit(nfail ? 1 : 0);
		}
		setpgid(pid, pid);
		int status = 0;
		bool in_time =
			wait_until(pid, start + (uint64_t)timeout_s * 1000000000ull, &status);
		double secs = (double)(wt_now_ns() - start) / 1e9;
		char how[96];
		if (!in_time) {
			/* (a leading newline: the child may have died mid-line) */
			printf("\n[  FAILED  ] %s: timed out after %d s (WEFT_TEST_TIMEOUT)\n",
			       tests[i].name, timeout_s);
		} else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			passed++;
			printf("[  PASSED  ] %s (%.2f s)\n", tests[i].name, secs);
			continue;
		} else if (WIFEXITED(status) && WEXITSTATUS(status) == WT_SKIP_STATUS) {
			skipped++;
			continue;
		} else {
			printf("\n[  FAILED  ] %s: test process %s\n", tests[i].name,
			       wt_describe_status(status, how, sizeof how));
		}
		if (failed < sizeof failures / sizeof failures[0])
			failures[failed] = tests[i].name;
		failed++;
	}
	printf("[==========] %zu test(s) in separate processes: %zu passed, %zu skipped, %zu "
	       "failed\n",
	       ran, passed, skipped, failed);
	for (size_t i = 0; i < failed && i < sizeof failures / sizeof failures[0]; i++)
		printf("[  FAILED  ] %s\n", failures[i]);
	fflush(NULL);
	return failed ? 1 : 0;
}

void wt_init(int workers)
{
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	if (workers > 0)
		c.workers = workers;
	WT_OK(weft_init(&c));
}

void wt_init_sched(int workers, const char *scheds)
{
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	c.workers = workers;
	c.sched = 0;
	c.scheds = scheds;
	WT_OK(weft_init(&c));
}

void wt_fini(void)
{
	uint64_t deadline = wt_now_ns() + 10000000000ull;
	for (;;) {
		int r = weft_shutdown();
		if (r == 0)
			return;
		if (r != EBUSY || wt_now_ns() > deadline)
			WT_OK(r);
		weft_yield();
	}
}

weft_t wt_spawn(const weft_attr_t *attr, void *(*fn)(void *), void *arg)
{
	weft_t t = WEFT_NULL;
	WT_OK(weft_create(&t, attr, fn, arg));
	WT_CMPU(t, !=, WEFT_NULL);
	return t;
}

weft_t wt_spawn_on(int worker, void *(*fn)(void *), void *arg)
{
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	WT_OK(weft_attr_setworker(&a, worker));
	weft_t t = wt_spawn(&a, fn, arg);
	WT_OK(weft_attr_destroy(&a));
	return t;
}

void *wt_join(weft_t t)
{
	void *ret = NULL;
	WT_OK(weft_join(t, &ret));
	return ret;
}

static void *pthread_trampoline(void *arg)
{
	struct wt_pthread *p = arg;
	p->ret = p->fn(p->arg);
	atomic_store(&p->done, 1);
	return NULL;
}

void wt_pthread_start(struct wt_pthread *p, void *(*fn)(void *), void *arg)
{
	p->fn = fn;
	p->arg = arg;
	p->ret = NULL;
	atomic_store(&p->done, 0);
	WT_OK(pthread_create(&p->thread, NULL, pthread_trampoline, p));
}

void *wt_pthread_join(struct wt_pthread *p)
{
	WT_WAIT(atomic_load(&p->done), 60);
	WT_OK(pthread_join(p->thread, NULL));
	return p->ret;
}

int wt_usable_cpus(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) != 0)
		return 1;
	return CPU_COUNT(&set);
}

#define BURN_FRAME 1024

static __attribute__((noinline)) long burn(size_t frames)
{
	volatile char buf[BURN_FRAME];
	for (size_t i = 0; i < sizeof buf; i += 64)
		buf[i] = (char)(frames + i);
	if (frames == 0)
		return buf[64];
	return burn(frames - 1) + buf[(frames * 64) % BURN_FRAME];
}

long wt_burn_stack(size_t bytes)
{
	return burn(bytes / (BURN_FRAME + 64));
}

void *wt_burn_stack_ult(void *bytes)
{
	return (void *)wt_burn_stack((size_t)bytes);
}

struct buf {
	char *p;
	size_t len, cap;
};

static void buf_read(struct buf *b, int fd, bool *open)
{
	if (b->cap - b->len < 4097) {
		b->cap = b->cap * 2 + 8192;
		b->p = realloc(b->p, b->cap);
		assert_non_null(b->p);
	}
	ssize_t r = read(fd, b->p + b->len, 4096);
	if (r > 0)
		b->len += (size_t)r;
	else if (r == 0 || (errno != EINTR && errno != EAGAIN))
		*open = false;
	b->p[b->len] = '\0';
}

void wt_run_child(void (*fn)(void *), void *arg, int timeout_s, struct wt_child *res)
{
	int out[2], err[2];
	assert_int_equal(pipe(out), 0);
	assert_int_equal(pipe(err), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(out[1], STDOUT_FILENO);
		dup2(err[1], STDERR_FILENO);
		close(out[0]);
		close(out[1]);
		close(err[0]);
		close(err[1]);
		/* Death tests see the signal dispositions of a fresh process, not
		 * cmocka's crash handlers. */
		for (int s = 1; s < NSIG; s++)
			if (s != SIGKILL && s != SIGSTOP)
				signal(s, SIG_DFL);
		sigset_t all;
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		no_core_dumps();
		setenv("CMOCKA_TEST_ABORT", "1", 1);
		fn(arg);
		fflush(NULL);
		_exit(0);
	}
	setpgid(pid, pid);
	close(out[1]);
	close(err[1]);
	struct buf bo = {calloc(1, 8192), 0, 8192}, be = {calloc(1, 8192), 0, 8192};
	assert_non_null(bo.p);
	assert_non_null(be.p);
	uint64_t deadline = wt_now_ns() + (uint64_t)timeout_s * 1000000000ull;
	bool oo = true, eo = true;
	while ((oo || eo) && wt_now_ns() < deadline) {
		struct pollfd fds[2] = {{oo ? out[0] : -1, POLLIN, 0},
					{eo ? err[0] : -1, POLLIN, 0}};
		int r = poll(fds, 2, 100);
		if (r <= 0)
			continue;
		if (fds[0].revents)
			buf_read(&bo, out[0], &oo);
		if (fds[1].revents)
			buf_read(&be, err[0], &eo);
	}
	close(out[0]);
	close(err[0]);
	res->out = bo.p;
	res->err = be.p;
	bool in_time = wait_until(pid, deadline, &res->status);
	if (!in_time || oo || eo)
		fail_msg("child process did not end within %d s; its stderr:\n%s", timeout_s,
			 res->err);
}

void wt_child_free(struct wt_child *res)
{
	free(res->out);
	free(res->err);
	res->out = res->err = NULL;
}
