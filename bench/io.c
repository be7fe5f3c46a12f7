/* weft-bench io: blocking system calls on ULTs, with system call sections
 * (weft/io.h), next to glibc pthreads.
 *
 *   getppid          syscall(SYS_getppid) in a loop: in a glibc thread
 *                    (pthread), in a ULT (weft), and in a ULT with every
 *                    call in a section (weft-section); the section's price
 *                    is the difference of the last two
 *   section_empty    weft_syscall_begin + weft_syscall_end around nothing:
 *                    the section alone, without the system call's noise
 *   pread_4k         a 4 KiB pread from a file in the page cache, the same
 *                    three ways
 *   pipe_pingpong    two threads hand a byte back and forth over two pipes,
 *                    blocking read and write: glibc pthreads, weft ULTs
 *                    that wait on weft's I/O poller (weft_fd_wait) and make
 *                    each call in a section, and the pthread program under
 *                    LD_PRELOAD=libweft-pthread.so
 *   tcp_echo_C       a thread-per-connection echo server over 127.0.0.1 and
 *                    C client threads, each making --roundtrips round trips
 *                    of 64 bytes, the same three ways (one row group per C
 *                    of --conns)
 *   preempt_yield    what preemption (src/sched/preempt.c) costs a
 *   preempt_create_join  switch-heavy load: micro's yield body (two ULTs
 *                    bound to worker 0 yielding to each other, ns per
 *                    switch) and create_join body (weft_create + weft_join
 *                    of an empty ULT, default attributes), each in a
 *                    session with preempt_ns = 10 ms (weft) and one with
 *                    preempt_ns = -1 (weft-nopreempt), otherwise the same
 *                    configuration, in the same alternating trials; the
 *                    weft row's note gives the difference in percent
 *
 * The pipe and TCP loops are written once (io_work.c) over a table of thread
 * operations. The pthread and weft-preload systems run them in weft-io-prog,
 * a plain pthread program (io_prog.c), as a process per run, without and
 * with LD_PRELOAD: the same binary, as `weft-bench posix` does. The weft
 * systems run them in this process inside a weft session (wb_weft_session:
 * init, run, shutdown), ULTs made with weft_create and default attributes.
 * Nothing is pinned or bound: the workers are pinned only if --pin 1 or
 * WEFT_PIN says so.
 *
 * A section that outlives WEFT_SYSCALL_NS (50 us by default) gets its worker
 * handed to a spare kernel thread. The weft rows count hand-overs per call
 * themselves (weft_worker_stats' handovers counts them per worker, for the
 * whole session): a section whose call
 * came back on another kernel thread (thread pointer) than it began on was
 * handed over - the carrier it blocked on no longer carries a worker when
 * the call returns. (A handed-over ULT that happened to be picked up by its
 * old carrier again would be missed: a lower bound, but a tight one.)
 */
#include "subcommands.h"
#include "io_work.h"

#include <errno.h>
#include <poll.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <weft.h>

extern char **environ;

#ifndef WB_IO_PROG
#define WB_IO_PROG "weft-io-prog"
#endif
#ifndef WB_PRELOAD
#define WB_PRELOAD "libweft-pthread.so"
#endif

#define ERR(s, ...) snprintf((s)->error, sizeof(s)->error, __VA_ARGS__)
#define NCASES(a)   ((int)(sizeof(a) / sizeof((a)[0])))

#define PREAD_SIZE  4096
#define MAX_CONNS   8 /* entries of --conns */

/* Settings of this invocation, for the run functions. */
static struct {
	const char *prog, *preload;
	int deadline_s; /* a pipe or TCP run that lasts longer is ended and fails */
	int fd;         /* the pread_4k file, -1 if none */
} io = {.fd = -1};

/* ---- weft's table for io_work.c ----------------------------------------- */

/* The calling kernel thread's thread pointer, read afresh every time
 * (pthread_self is declared const: two calls may become one). */
static inline unsigned long kthread_tp(void)
{
	unsigned long tp;
#if defined(__x86_64__)
	__asm__ volatile("mov %%fs:0, %0" : "=r"(tp));
#elif defined(__aarch64__)
	__asm__ volatile("mrs %0, tpidr_el0" : "=r"(tp));
#else
	tp = (unsigned long)pthread_self();
#endif
	return tp;
}

static int wf_spawn(uint64_t *h, void *(*fn)(void *), void *arg)
{
	weft_t t;
	int rc = weft_create(&t, NULL, fn, arg);
	if (!rc)
		*h = t;
	return rc;
}

static int wf_join(uint64_t h)
{
	return weft_join((weft_t)h, NULL);
}

static void wf_begin(wk_sec_t *s)
{
	s->kt = kthread_tp();
	s->s = weft_syscall_begin();
}

static int wf_end(wk_sec_t *s)
{
	weft_syscall_end(s->s);
	return kthread_tp() != s->kt;
}

static int wf_wait(int fd, int out)
{
	return weft_fd_wait(fd, out ? POLLOUT : POLLIN, CLOCK_MONOTONIC, NULL);
}

static const wk_ops_t wf_ops = {wf_spawn, wf_join, wf_begin, wf_end, wf_wait};

/* ---- getppid, section_empty, pread_4k ----------------------------------- */

enum { CALL_GETPPID, CALL_NONE, CALL_PREAD };

struct loop {
	long n;
	int call;    /* CALL_* */
	int section; /* 1: each call in a section */
	int64_t elapsed_ns;
	long bad; /* calls that did not do what they should */
};

/* pread's destination: one page-aligned buffer for every system, so that
 * the rows differ in the thread only, not in where the copy goes. */
static char pread_buf[PREAD_SIZE] __attribute__((aligned(4096)));

static inline long one_call(int call)
{
	switch (call) {
	case CALL_GETPPID:
		return syscall(SYS_getppid) <= 0;
	case CALL_PREAD:
		return pread(io.fd, pread_buf, PREAD_SIZE, 0) != PREAD_SIZE;
	default:
		__asm__ volatile("" ::: "memory");
		return 0;
	}
}

/* The timed loop; the same code for the main thread and a ULT. */
static void *loop_run(void *p)
{
	struct loop *l = p;
	long bad = 0;

	int64_t t0 = wb_now_ns();
	if (l->section) {
		for (long i = 0; i < l->n; i++) {
			weft_syscall_t s = weft_syscall_begin();
			bad += one_call(l->call);
			weft_syscall_end(s);
		}
	} else {
		for (long i = 0; i < l->n; i++)
			bad += one_call(l->call);
	}
	l->elapsed_ns = wb_now_ns() - t0;
	l->bad = bad;
	return NULL;
}

static int loop_result(const struct loop *l, wb_sample_t *s)
{
	if (l->bad) {
		ERR(s, "%ld of %ld calls failed", l->bad, l->n);
		return EIO;
	}
	s->elapsed_ns = (double)l->elapsed_ns;
	s->value = (double)l->elapsed_ns / (double)l->n;
	return 0;
}

/* iarg[0]: CALL_*. A glibc thread, no weft running: a thread of its own
 * rather than main, so the process has two threads as a ULT's has several
 * (with one, Linux skips the file's reference count in every pread: ~25 ns
 * here). */
static int loop_pthread(const wb_case_t *c, long n, wb_sample_t *s)
{
	struct loop l = {.n = n, .call = (int)c->iarg[0]};
	pthread_t t;
	int rc = pthread_create(&t, NULL, loop_run, &l);
	if (!rc)
		rc = pthread_join(t, NULL);
	if (rc) {
		ERR(s, "pthread_create/join: %s", strerror(rc));
		return rc;
	}
	return loop_result(&l, s);
}

/* iarg[0]: CALL_*, iarg[1]: sections. One ULT, default attributes. */
static int loop_ult(const wb_case_t *c, long n, wb_sample_t *s)
{
	struct loop l = {.n = n, .call = (int)c->iarg[0], .section = (int)c->iarg[1]};
	weft_t t;
	int rc = weft_create(&t, NULL, loop_run, &l);
	if (!rc)
		rc = weft_join(t, NULL);
	if (rc) {
		ERR(s, "weft_create/join: %s", strerror(rc));
		return rc;
	}
	return loop_result(&l, s);
}

/* ---- pipe and TCP: weft in this process --------------------------------- */

static void io_extras(const wb_case_t *c, const wk_result_t *r, long rts, wb_sample_t *s)
{
	if (c->weft)
		wb_sample_extra(s, "handovers_per_rt", (double)r->handovers / (double)rts);
	if (r->threads > 0)
		wb_sample_extra(s, "kernel_threads", (double)r->threads);
}

static int pipe_weft(const wb_case_t *c, long n, wb_sample_t *s)
{
	wk_result_t r;
	int rc = wk_pipe_pingpong(&wf_ops, n, io.deadline_s * 1000, &r);
	if (rc) {
		ERR(s, "%s", r.error);
		return rc;
	}
	s->elapsed_ns = (double)r.elapsed_ns;
	s->value = (double)r.elapsed_ns / (double)n;
	io_extras(c, &r, n, s);
	wb_sample_extra(s, "same_cpu_pct", 100.0 * (double)r.same_cpu / (double)n);
	return 0;
}

/* n: round trips per connection; iarg[0]: connections. */
static void tcp_value(const wb_case_t *c, long n, const wk_result_t *r, wb_sample_t *s)
{
	double rts = (double)c->iarg[0] * (double)n;
	s->elapsed_ns = (double)r->elapsed_ns;
	s->value = rts / ((double)r->elapsed_ns / 1e9);
	wb_sample_extra(s, "total_ms", (double)r->elapsed_ns / 1e6);
	wb_sample_extra(s, "ns_per_rt", (double)r->elapsed_ns / rts);
	wb_sample_extra(s, "same_cpu_pct", 100.0 * (double)r->same_cpu / rts);
	io_extras(c, r, (long)rts, s);
}

static int tcp_weft(const wb_case_t *c, long n, wb_sample_t *s)
{
	wk_result_t r;
	int rc = wk_tcp_echo(&wf_ops, (int)c->iarg[0], n, io.deadline_s * 1000, &r);
	if (rc) {
		ERR(s, "%s", r.error);
		return rc;
	}
	tcp_value(c, n, &r, s);
	return 0;
}

/* ---- pipe and TCP: weft-io-prog, with and without LD_PRELOAD ------------- */

/* Run weft-io-prog with argv; iarg[1] of the case: 1 under LD_PRELOAD.
 * Fills r from its line of output. */
static int prog_run(const wb_case_t *c, char *const *argv, wk_result_t *r, wb_sample_t *s)
{
	const wb_opts_t *o = c->opts;
	int preload = (int)c->iarg[1];
	size_t nenv = 0;
	char pre[4096], wk[32], pin[32], out[512];
	ssize_t got = 0;
	int fds[2], status, rc;
	pid_t pid;

	/* The environment minus any LD_PRELOAD, plus ours and, for the
	 * preloaded runtime, the options' workers and pinning. */
	while (environ[nenv])
		nenv++;
	char **env = calloc(nenv + 4, sizeof *env);
	if (!env) {
		ERR(s, "out of memory");
		return ENOMEM;
	}
	size_t k = 0;
	for (size_t i = 0; i < nenv; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0 &&
		    !(preload && o->workers > 0 && strncmp(environ[i], "WEFT_WORKERS=", 13) == 0) &&
		    !(preload && o->pin >= 0 && strncmp(environ[i], "WEFT_PIN=", 9) == 0))
			env[k++] = environ[i];
	if (preload) {
		snprintf(pre, sizeof pre, "LD_PRELOAD=%s", io.preload);
		env[k++] = pre;
		if (o->workers > 0) {
			snprintf(wk, sizeof wk, "WEFT_WORKERS=%d", o->workers);
			env[k++] = wk;
		}
		if (o->pin >= 0) {
			snprintf(pin, sizeof pin, "WEFT_PIN=%d", o->pin);
			env[k++] = pin;
		}
	}
	env[k] = NULL;

	if (pipe(fds) != 0) {
		rc = errno;
		free(env);
		ERR(s, "pipe: %s", strerror(rc));
		return rc;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
	posix_spawn_file_actions_addclose(&fa, fds[0]);
	posix_spawn_file_actions_addclose(&fa, fds[1]);
	rc = posix_spawn(&pid, io.prog, &fa, NULL, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	free(env);
	if (rc) {
		close(fds[0]);
		ERR(s, "posix_spawn %s: %s (WEFT_BENCH_IO_PROG names the program)", io.prog,
		    strerror(rc));
		return rc;
	}
	while (got < (ssize_t)sizeof out - 1) {
		ssize_t n = read(fds[0], out + got, sizeof out - 1 - (size_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += n;
	}
	out[got] = '\0';
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			ERR(s, "waitpid: %s", strerror(errno));
			return errno;
		}
	}
	if (WIFSIGNALED(status)) {
		if (WTERMSIG(status) == SIGALRM)
			ERR(s, "stalled: weft-io-prog%s ended by its %d s alarm",
			    preload ? " (preload)" : "", io.deadline_s);
		else
			ERR(s, "weft-io-prog%s killed by signal %d (%s)",
			    preload ? " (preload)" : "", WTERMSIG(status),
			    strsignal(WTERMSIG(status)));
		return EIO;
	}
	char *e = strstr(out, "error=");
	if (e) {
		e[strcspn(e, "\n")] = '\0';
		ERR(s, "%s", e + 6);
		return EIO;
	}
	long long el;
	memset(r, 0, sizeof *r);
	if (WEXITSTATUS(status) != 0 ||
	    sscanf(out, "elapsed_ns=%lld done=%ld threads=%ld same_cpu=%ld", &el, &r->done,
		   &r->threads, &r->same_cpu) != 4) {
		ERR(s, "weft-io-prog exited %d: %.200s", WEXITSTATUS(status), out);
		return EIO;
	}
	r->elapsed_ns = el;
	return 0;
}

static int pipe_prog(const wb_case_t *c, long n, wb_sample_t *s)
{
	char nb[32], db[16];
	wk_result_t r;
	snprintf(nb, sizeof nb, "%ld", n);
	snprintf(db, sizeof db, "%d", io.deadline_s);
	char *argv[] = {(char *)io.prog, "pipe", nb, db, NULL};
	int rc = prog_run(c, argv, &r, s);
	if (rc)
		return rc;
	s->elapsed_ns = (double)r.elapsed_ns;
	s->value = (double)r.elapsed_ns / (double)n;
	if (c->iarg[1]) /* glibc's count is just the program's main thread */
		io_extras(c, &r, n, s);
	wb_sample_extra(s, "same_cpu_pct", 100.0 * (double)r.same_cpu / (double)n);
	return 0;
}

static int tcp_prog(const wb_case_t *c, long n, wb_sample_t *s)
{
	char cb[32], nb[32], db[16];
	wk_result_t r;
	snprintf(cb, sizeof cb, "%ld", c->iarg[0]);
	snprintf(nb, sizeof nb, "%ld", n);
	snprintf(db, sizeof db, "%d", io.deadline_s);
	char *argv[] = {(char *)io.prog, "tcp", cb, nb, db, NULL};
	int rc = prog_run(c, argv, &r, s);
	if (rc)
		return rc;
	if (!c->iarg[1])
		r.threads = 0;
	tcp_value(c, n, &r, s);
	return 0;
}

/* ---- preemption on and off: micro's switch-heavy bodies ----------------- */

/* The preemption slice of the weft rows: weft's default, set explicitly so
 * that WEFT_PREEMPT_NS does not change what the row measures. */
#define PREEMPT_ON_NS 10000000L

/* A weft session as wb_weft_session's (weft_config_init with the
 * environment applied, c->context, --workers, --pin), but with preempt_ns =
 * c->iarg[0]: the two systems of a preempt_* group differ in that alone. */
static int preempt_session(const wb_case_t *c, long n, wb_sample_t *s)
{
	weft_config_t cfg;
	int rc = weft_config_init(&cfg);
	if (rc) {
		ERR(s, "weft_config_init: %s", strerror(rc));
		return rc;
	}
	cfg.context = c->context;
	if (c->opts->workers > 0)
		cfg.workers = c->opts->workers;
	if (c->opts->pin >= 0)
		cfg.pin = c->opts->pin;
	cfg.preempt_ns = c->iarg[0];
	rc = weft_init(&cfg);
	if (rc) {
		ERR(s, "weft_init (preempt_ns=%ld): %s", cfg.preempt_ns, strerror(rc));
		return rc;
	}
	int brc = c->inner(c, n, s);
	/* EBUSY until every other ULT has exited; the bodies join all they
	 * create, so this only waits out an exit in progress. */
	rc = EBUSY;
	for (int i = 0; i < 1000000 && rc == EBUSY; i++) {
		rc = weft_shutdown();
		if (rc == EBUSY)
			weft_yield();
	}
	if (rc && !brc)
		ERR(s, "weft_shutdown: %s", strerror(rc));
	return brc ? brc : rc;
}

static void *pre_noop(void *arg)
{
	return arg;
}

static void *pre_yielder(void *p)
{
	long n = *(const long *)p;
	for (long i = 0; i < n; i++)
		weft_yield();
	return NULL;
}

/* micro's yield body: two ULTs bound to worker 0, each calling weft_yield
 * n times, created and joined inside the timing: 2n switches. */
static int pre_yield(const wb_case_t *c, long n, wb_sample_t *s)
{
	(void)c;
	weft_attr_t a;
	weft_t t[2];
	int rc = weft_attr_init(&a);
	if (!rc)
		rc = weft_attr_setworker(&a, 0);
	if (rc) {
		ERR(s, "weft_attr_setworker: %s", strerror(rc));
		return rc;
	}
	int64_t t0 = wb_now_ns();
	rc = weft_create(&t[0], &a, pre_yielder, &n);
	if (rc) {
		ERR(s, "weft_create: %s", strerror(rc));
		weft_attr_destroy(&a);
		return rc;
	}
	rc = weft_create(&t[1], &a, pre_yielder, &n);
	if (rc)
		ERR(s, "weft_create: %s", strerror(rc));
	for (int i = 0; i < (rc ? 1 : 2); i++) {
		int jrc = weft_join(t[i], NULL);
		if (jrc && !rc) {
			ERR(s, "weft_join: %s", strerror(jrc));
			rc = jrc;
		}
	}
	s->elapsed_ns = (double)(wb_now_ns() - t0);
	weft_attr_destroy(&a);
	if (rc)
		return rc;
	s->value = s->elapsed_ns / (2.0 * (double)n);
	return 0;
}

/* micro's create_join body: weft_create (default attributes) + weft_join
 * of a ULT that returns at once, n times. */
static int pre_create_join(const wb_case_t *c, long n, wb_sample_t *s)
{
	(void)c;
	int64_t t0 = wb_now_ns();
	for (long i = 0; i < n; i++) {
		weft_t t;
		int rc = weft_create(&t, NULL, pre_noop, NULL);
		if (rc) {
			ERR(s, "weft_create: %s (after %ld)", strerror(rc), i);
			return rc;
		}
		rc = weft_join(t, NULL);
		if (rc) {
			ERR(s, "weft_join: %s", strerror(rc));
			return rc;
		}
	}
	s->elapsed_ns = (double)(wb_now_ns() - t0);
	s->value = s->elapsed_ns / (double)n;
	return 0;
}

/* ---- the suite ----------------------------------------------------------- */

static void emit(wb_report_t *r, wb_row_t *rows, int n)
{
	for (int i = 0; i < n; i++)
		if (rows[i].system)
			wb_report_row(r, &rows[i]);
}

static wb_row_t *find(wb_row_t *rows, int n, const char *system)
{
	for (int i = 0; i < n; i++)
		if (rows[i].system && strcmp(rows[i].system, system) == 0 && !rows[i].error[0])
			return &rows[i];
	return NULL;
}

/* The target: a section adds at most this much to a call. */
#define SECTION_TARGET_NS 15.0

/* getppid or pread_4k: the main thread, a ULT, a ULT with sections. The
 * section row's note gives its difference to the plain ULT. */
static void call_group(const wb_opts_t *o, wb_report_t *r, const char *bench, int call,
		       const char *what)
{
	char nmain[96], nult[96], nsec[128];
	snprintf(nmain, sizeof nmain, "%s in a pthread, no weft", what);
	snprintf(nult, sizeof nult, "%s in a ULT", what);
	snprintf(nsec, sizeof nsec, "%s in a ULT, each between weft_syscall_begin/end", what);
	wb_case_t cases[] = {
		{.system = "pthread",
		 .placement = "unpinned",
		 .run = loop_pthread,
		 .n0 = 1000,
		 .ref = WB_REF_PTHREAD,
		 .note = nmain,
		 .opts = o,
		 .iarg = {call, 0}},
		{.system = "weft",
		 .placement = "any",
		 .run = wb_weft_session,
		 .inner = loop_ult,
		 .context = WEFT_CONTEXT_ASM,
		 .weft = 1,
		 .n0 = 1000,
		 .note = nult,
		 .opts = o,
		 .iarg = {call, 0}},
		{.system = "weft-section",
		 .placement = "any",
		 .run = wb_weft_session,
		 .inner = loop_ult,
		 .context = WEFT_CONTEXT_ASM,
		 .weft = 1,
		 .n0 = 1000,
		 .note = nsec,
		 .opts = o,
		 .iarg = {call, 1}},
	};
	wb_group_t g = {bench, "ns/call", cases, NCASES(cases)};
	wb_row_t rows[NCASES(cases)];

	if (!wb_selected_bench(o, g.bench))
		return;
	wb_run_group(o, &g, rows);
	wb_row_t *plain = find(rows, g.ncases, "weft"), *sec = find(rows, g.ncases, "weft-section");
	if (plain && sec) {
		double d = sec->median - plain->median;
		wb_row_extra(sec, "section_delta_ns", d);
		wb_row_note(sec, "%+.1f ns vs the plain ULT, alternating trials", d);
		if (call == CALL_GETPPID)
			wb_row_note(sec, "target <= %.0f ns: %s", SECTION_TARGET_NS,
				    d <= SECTION_TARGET_NS ? "met" : "NOT met");
	}
	emit(r, rows, g.ncases);
}

/* One pipe or TCP group: pthread and weft-preload in weft-io-prog, weft
 * here. */
static void io_group(const wb_opts_t *o, wb_report_t *r, const char *bench, const char *unit,
		     wb_run_fn prog, wb_run_fn weft, long n, long conns, const char *wnote,
		     const char *pnote, const char *lnote)
{
	wb_case_t cases[] = {
		{.system = "pthread",
		 .placement = "process",
		 .run = prog,
		 .n = n,
		 .n0 = 1000,
		 .ref = WB_REF_PTHREAD,
		 .note = pnote,
		 .opts = o,
		 .iarg = {conns, 0}},
		{.system = "weft",
		 .placement = "any",
		 .run = wb_weft_session,
		 .inner = weft,
		 .context = WEFT_CONTEXT_ASM,
		 .weft = 1,
		 .n = n,
		 .n0 = 1000,
		 .note = wnote,
		 .opts = o,
		 .iarg = {conns, 0}},
		{.system = "weft-preload",
		 .placement = "process",
		 .run = prog,
		 .n = n,
		 .n0 = 1000,
		 .note = lnote,
		 .opts = o,
		 .iarg = {conns, 1}},
	};
	wb_group_t g = {bench, unit, cases, NCASES(cases)};
	wb_row_t rows[NCASES(cases)];

	if (!wb_selected_bench(o, g.bench))
		return;
	wb_run_group(o, &g, rows);
	for (int i = 0; i < g.ncases; i++) {
		wb_row_t *w = &rows[i];
		if (!w->system || w->error[0])
			continue;
		double ho = wb_row_get_extra(w, "handovers_per_rt");
		double kt = wb_row_get_extra(w, "kernel_threads");
		double ms = wb_row_get_extra(w, "total_ms");
		double same = wb_row_get_extra(w, "same_cpu_pct");
		if (!isnan(same))
			wb_row_note(w, "both on one CPU in %.0f%% of RTs", same);
		if (!isnan(ms))
			wb_row_note(w, "total %.0f ms", ms);
		if (!isnan(ho))
			wb_row_note(w, "%.2f hand-overs/RT", ho);
		if (!isnan(kt))
			wb_row_note(w, "%.0f kernel threads after", kt);
	}
	emit(r, rows, g.ncases);
}

/* The target: preemption on adds at most this much to a
 * switch-heavy row. */
#define PREEMPT_TARGET_PCT 2.0

/* A preempt_* group: body with preemption on (weft) and off
 * (weft-nopreempt) in the same alternating trials. The weft row's note
 * and extras give its difference to weft-nopreempt: of the medians
 * (preempt_delta_pct, checked against the target) and the median of the
 * trials' own differences (preempt_delta_pct_paired: both systems ran in
 * each trial, one after the other). */
static void preempt_group(const wb_opts_t *o, wb_report_t *r, const char *bench, const char *unit,
			  wb_run_fn body, long n0, const char *where, const char *what)
{
	char non[160], noff[160];
	snprintf(non, sizeof non, "%s; preempt_ns=%ld", what, PREEMPT_ON_NS);
	snprintf(noff, sizeof noff, "%s; preempt_ns=-1 (off)", what);
	wb_case_t cases[] = {
		{.system = "weft",
		 .placement = where,
		 .run = preempt_session,
		 .inner = body,
		 .context = WEFT_CONTEXT_ASM,
		 .weft = 1,
		 .n0 = n0,
		 .note = non,
		 .opts = o,
		 .iarg = {PREEMPT_ON_NS}},
		{.system = "weft-nopreempt",
		 .placement = where,
		 .run = preempt_session,
		 .inner = body,
		 .context = WEFT_CONTEXT_ASM,
		 .weft = 1,
		 .n0 = n0,
		 .note = noff,
		 .opts = o,
		 .iarg = {-1}},
	};
	wb_group_t g = {bench, unit, cases, NCASES(cases)};
	wb_row_t rows[NCASES(cases)];

	if (!wb_selected_bench(o, g.bench))
		return;
	wb_run_group(o, &g, rows);
	wb_row_t *on = find(rows, g.ncases, "weft"), *off = find(rows, g.ncases, "weft-nopreempt");
	if (on && off && off->median > 0) {
		double d = on->median - off->median, pct = 100.0 * d / off->median;
		wb_row_t paired = {.nsamples = 0};
		for (int t = 0; t < on->nsamples && t < off->nsamples; t++)
			if (off->samples[t] > 0)
				paired.samples[paired.nsamples++] =
					100.0 * (on->samples[t] / off->samples[t] - 1.0);
		wb_row_extra(on, "preempt_delta_ns", d);
		wb_row_extra(on, "preempt_delta_pct", pct);
		wb_row_note(on, "%+.2f%% (%+.2f ns) vs weft-nopreempt, alternating trials", pct, d);
		if (paired.nsamples > 0) {
			wb_row_stats(&paired);
			wb_row_extra(on, "preempt_delta_pct_paired", paired.median);
			wb_row_note(on, "per trial: median %+.2f%% [%+.2f, %+.2f]", paired.median,
				    paired.min, paired.max);
		}
		wb_row_note(on, "target <= %.0f%%: %s", PREEMPT_TARGET_PCT,
			    pct <= PREEMPT_TARGET_PCT ? "met" : "NOT met");
	}
	emit(r, rows, g.ncases);
}

/* --conns: comma-separated connection counts. */
static int parse_conns(const char *s, long *v, int max)
{
	int n = 0;
	while (*s) {
		char *end;
		long x = strtol(s, &end, 10);
		if (end == s || x < 1 || x > 100000 || n == max || (*end && *end != ','))
			return -1;
		v[n++] = x;
		s = *end ? end + 1 : end;
	}
	return n;
}

/* Round trips per connection when --roundtrips is not given: about the
 * same total for every C, so a run takes well under a second here. */
static long default_rts(const wb_opts_t *o, long conns)
{
	long total = o->quick ? 200 : 5000, per = total / conns;
	long lo = o->quick ? 5 : 10, hi = o->quick ? 100 : 2000;
	return per < lo ? lo : per > hi ? hi : per;
}

/* The pread_4k file: PREAD_SIZE bytes in a temporary file, unlinked at
 * once, read once so they are in the page cache. -1 if none could be made. */
static int make_pread_file(char *err, size_t errlen)
{
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char path[4096], buf[PREAD_SIZE];
	snprintf(path, sizeof path, "%s/weft-bench-io-XXXXXX", dir);
	int fd = mkstemp(path);
	if (fd < 0) {
		snprintf(err, errlen, "mkstemp %.200s: %s", path, strerror(errno));
		return -1;
	}
	unlink(path);
	memset(buf, 'w', sizeof buf);
	if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf ||
	    pread(fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf) {
		snprintf(err, errlen, "writing %.200s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

int wb_io_main(const wb_opts_t *o)
{
	wb_machine_t m;
	wb_report_t r = {.json = o->json, .subcommand = "io"};
	char weft_desc[320], place[512], trials_desc[256], sizes[512], progs[1024];
	long conns[MAX_CONNS], rts[MAX_CONNS];
	int nconns =
		parse_conns(o->conns ? o->conns : (o->quick ? "1,10" : "1,100"), conns, MAX_CONNS);
	weft_config_t cfg;
	int nworkers = -1;

	if (nconns < 1) {
		fprintf(stderr,
			"weft-bench io: --conns: expected up to %d comma-separated numbers in "
			"[1, 100000], got '%s'\n",
			MAX_CONNS, o->conns);
		return 2;
	}
	long maxconns = 0;
	for (int i = 0; i < nconns; i++) {
		rts[i] = o->roundtrips > 0 ? o->roundtrips : default_rts(o, conns[i]);
		if (conns[i] > maxconns)
			maxconns = conns[i];
	}
	io.prog = getenv("WEFT_BENCH_IO_PROG") ? getenv("WEFT_BENCH_IO_PROG") : WB_IO_PROG;
	io.preload = getenv("WEFT_BENCH_PRELOAD") ? getenv("WEFT_BENCH_PRELOAD") : WB_PRELOAD;
	io.deadline_s = o->quick ? 10 : 30;
	/* A write to a socket that a failure shut down must fail, not kill. */
	signal(SIGPIPE, SIG_IGN);
	int nofile = wk_raise_nofile(WK_TCP_FDS(maxconns));

	wb_affinity_save();
	wb_machine_probe(&m);

	/* Probe: does the runtime start, and with how many workers? */
	weft_config_init(&cfg);
	{
		weft_config_t c = cfg;
		c.context = WEFT_CONTEXT_ASM;
		if (o->workers > 0)
			c.workers = o->workers;
		if (o->pin >= 0)
			c.pin = o->pin;
		if (weft_init(&c) == 0) {
			nworkers = weft_num_workers();
			weft_shutdown();
			wb_affinity_restore();
		}
	}
	int pin = o->pin >= 0 ? o->pin : cfg.pin;
	if (nworkers < 0)
		snprintf(weft_desc, sizeof weft_desc, "weft %s: UNAVAILABLE (weft_init failed)",
			 WEFT_VERSION_STRING);
	else
		snprintf(weft_desc, sizeof weft_desc,
			 "weft %s, %d workers, pinned: %s, syscall_ns=%ld (hand-over threshold; "
			 "<0: never), spares=%d, preempt_ns=%ld (<0: never; preempt_* rows set "
			 "their own)",
			 WEFT_VERSION_STRING, nworkers, pin == 1 ? "yes" : "no", cfg.syscall_ns,
			 cfg.spares, cfg.preempt_ns);
	snprintf(place, sizeof place,
		 "nothing pinned or bound. pthread getppid/pread: one glibc thread; weft: ULTs "
		 "with default attributes on any worker; pipe/tcp pthread and weft-preload: "
		 "weft-io-prog, a process per run (preload: its own runtime, %s workers); "
		 "preempt_yield: both ULTs bound to worker 0, as micro's yield; "
		 "preempt_create_join: default attributes, any worker",
		 o->workers > 0 ? "the same" : "default");
	snprintf(trials_desc, sizeof trials_desc,
		 "%d after 1 warm-up, systems alternating within each trial, ~%g ms per "
		 "calibrated run; pipe/tcp runs end (and fail) after %d s",
		 o->trials, o->target_ms, io.deadline_s);
	int len = snprintf(sizes, sizeof sizes,
			   "pread: %d bytes at offset 0 of a cached temporary file; tcp_echo: "
			   "%d-byte messages; connections x round trips each:",
			   PREAD_SIZE, WK_MSG);
	for (int i = 0; i < nconns && len < (int)sizeof sizes; i++)
		len += snprintf(sizes + len, sizeof sizes - (size_t)len, "%s %ld x %ld",
				i ? "," : "", conns[i], rts[i]);
	if (nofile && len < (int)sizeof sizes)
		snprintf(sizes + len, sizeof sizes - (size_t)len,
			 " (RLIMIT_NOFILE too low for %ld connections: %s)", maxconns,
			 strerror(nofile));
	snprintf(progs, sizeof progs, "%s; LD_PRELOAD=%s", io.prog, io.preload);
	const char *keys[] = {"weft", "placement", "trials", "sizes", "programs"};
	const char *vals[] = {weft_desc, place, trials_desc, sizes, progs};
	wb_report_begin(&r, &m, keys, vals, 5);

	/* 1. What a section costs. */
	call_group(o, &r, "getppid", CALL_GETPPID, "syscall(SYS_getppid)");
	if (wb_selected_bench(o, "section_empty")) {
		wb_case_t cases[] = {
			{.system = "weft-section",
			 .placement = "any",
			 .run = wb_weft_session,
			 .inner = loop_ult,
			 .context = WEFT_CONTEXT_ASM,
			 .weft = 1,
			 .n0 = 10000,
			 .no_ratio = 1,
			 .note = "weft_syscall_begin + weft_syscall_end, nothing between",
			 .opts = o,
			 .iarg = {CALL_NONE, 1}},
		};
		wb_group_t g = {"section_empty", "ns/pair", cases, NCASES(cases)};
		wb_row_t rows[NCASES(cases)];
		wb_run_group(o, &g, rows);
		if (rows[0].system && !rows[0].error[0])
			wb_row_note(&rows[0], "target <= %.0f ns: %s", SECTION_TARGET_NS,
				    rows[0].median <= SECTION_TARGET_NS ? "met" : "NOT met");
		emit(&r, rows, g.ncases);
	}
	if (wb_selected_bench(o, "pread_4k")) {
		char err[256] = "";
		io.fd = make_pread_file(err, sizeof err);
		if (io.fd < 0) {
			wb_row_t row = {.bench = "pread_4k", .system = "all", .unit = "ns/call"};
			snprintf(row.error, sizeof row.error, "%s", err);
			wb_report_row(&r, &row);
		} else {
			call_group(o, &r, "pread_4k", CALL_PREAD, "pread of 4 KiB, cached");
			close(io.fd);
			io.fd = -1;
		}
	}

	/* 2. Pipe ping-pong: blocked reads. */
	io_group(o, &r, "pipe_pingpong", "ns/RT", pipe_prog, pipe_weft, 0, 0,
		 "2 ULTs, weft_fd_wait then read/write in sections", "2 pthreads, weft-io-prog",
		 "the same binary, LD_PRELOAD");

	/* 3. TCP echo, thread per connection. */
	for (int i = 0; i < nconns; i++) {
		char bench[32], wnote[96];
		snprintf(bench, sizeof bench, "tcp_echo_%ld", conns[i]);
		snprintf(wnote, sizeof wnote, "%ld ULTs, weft_fd_wait then calls in sections",
			 2 * conns[i] + 1);
		if (!wb_selected_bench(o, bench))
			continue;
		if (wk_raise_nofile(WK_TCP_FDS(conns[i])) != 0) {
			wb_row_t row = {.bench = bench, .system = "all", .unit = "RT/s"};
			snprintf(
				row.error, sizeof row.error,
				"skipped: %ld descriptors needed, above RLIMIT_NOFILE's hard limit",
				WK_TCP_FDS(conns[i]));
			wb_report_row(&r, &row);
			continue;
		}
		char pnote[96];
		snprintf(pnote, sizeof pnote, "%ld pthreads, weft-io-prog", 2 * conns[i] + 1);
		io_group(o, &r, bench, "RT/s", tcp_prog, tcp_weft, rts[i], conns[i], wnote, pnote,
			 "the same binary, LD_PRELOAD");
	}

	/* 4. What preemption costs a switch-heavy load. */
	preempt_group(o, &r, "preempt_yield", "ns/switch", pre_yield, 1000, "worker 0",
		      "2 ULTs bound to worker 0 x n weft_yield (micro's yield)");
	preempt_group(o, &r, "preempt_create_join", "ns/pair", pre_create_join, 1000, "any",
		      "weft_create + weft_join of an empty ULT (micro's create_join)");

	wb_report_footer(
		&r,
		"\nmedian [min, max] over the trials. vs pthread = median / the pthread median "
		"of the same benchmark in this run: for ns rows lower is better, for RT/s "
		"(tcp_echo) higher is better. RT = round trip. A section is "
		"weft_syscall_begin/end around one call; its price is weft-section minus weft "
		"(getppid, pread_4k) or section_empty alone. hand-overs/RT: sections whose call "
		"came back on another kernel thread (their worker was handed to a spare after "
		"WEFT_SYSCALL_NS), per round trip. kernel threads after: the process's, once its "
		"threads were joined (weft: workers' carriers, spares, monitor). preempt_*: weft "
		"(preempt_ns = 10 ms; the monitor looks at a worker running a ULT every 1 ms) "
		"against weft-nopreempt (preempt_ns = -1), sessions alike otherwise; the weft "
		"row's note gives the difference in %% of weft-nopreempt's median, and the "
		"median [min, max] of the trials' own differences.\n");
	wb_report_end(&r);
	return 0;
}
