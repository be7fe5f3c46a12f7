/* weft-bench micro: the basic costs of weft next to glibc pthreads, glibc
 * ucontext and (when built with Boost) Boost.Context and Boost.Fiber.
 *
 * Every weft run starts the runtime with the context backend under test and
 * stops it again (weft_init ... weft_shutdown), so one process measures both
 * backends, alternating with the peers inside each trial. The main thread
 * runs the peers between sessions, as a plain kernel thread.
 *
 * The create_join_tls_own and yield_tls_own rows measure the same bodies
 * with ULTs that have thread-local storage of their own (WEFT_TLS_OWN), each
 * against WEFT_TLS_WORKER in the same alternating trials (tls_own_group).
 *
 * The spread_4 row: CPU-bound ULTs made by one ULT after the workers fell
 * asleep must reach every worker (round time near 4/W computations).
 *
 * The chain row (N threads alive at once) runs each trial in a fresh child
 * process (the hidden "_chain" subcommand) so that its peak RSS, read from
 * wait4's rusage, belongs to that system alone.
 */
#include "subcommands.h"
#include "peers.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <weft.h>

#define ERR(s, ...) snprintf((s)->error, sizeof(s)->error, __VA_ARGS__)

/* ---- which peers this weft-bench has ------------------------------------ */

/* The peers built in, and the ones left out and why (each optional). */
const char *wb_peers_built(void)
{
	return "glibc pthreads and ucontext; "
#if WB_HAVE_BOOST
	       "Boost.Context and Boost.Fiber; "
#else
	       "Boost.Context/Fiber LEFT OUT (libboost-context-dev, libboost-fiber-dev "
	       "not found at build time); "
#endif
#if WB_HAVE_ST
	       "State Threads; "
#else
	       "State Threads LEFT OUT (libst-dev not found at build time); "
#endif
#if WB_HAVE_GO
	       "Go (weft-peer-go)";
#else
	       "Go LEFT OUT (no go command at build time)";
#endif
}

/* ---- a weft session around each run ------------------------------------ */

static int weft_start(const wb_opts_t *o, int context, int workers, char *err, size_t errlen)
{
	weft_config_t cfg;
	int rc = weft_config_init(&cfg);

	if (rc) {
		snprintf(err, errlen, "weft_config_init: %s", strerror(rc));
		return rc;
	}
	cfg.context = context;
	if (workers > 0)
		cfg.workers = workers;
	else if (o->workers > 0)
		cfg.workers = o->workers;
	if (o->pin >= 0)
		cfg.pin = o->pin;
	rc = weft_init(&cfg);
	if (rc)
		snprintf(err, errlen, "weft_init: %s", strerror(rc));
	return rc;
}

/* weft_shutdown is EBUSY until every other ULT has exited; the benchmarks
 * join all they create, so this only waits out an exit in progress. */
static int weft_stop(char *err, size_t errlen)
{
	int rc = EBUSY;

	for (int i = 0; i < 1000000 && rc == EBUSY; i++) {
		rc = weft_shutdown();
		if (rc == EBUSY)
			weft_yield();
	}
	if (rc)
		snprintf(err, errlen, "weft_shutdown: %s", strerror(rc));
	return rc;
}

int wb_weft_session(const wb_case_t *c, long n, wb_sample_t *s)
{
	int rc = weft_start(c->opts, c->context, c->workers, s->error, sizeof s->error);
	if (rc)
		return rc;
	int brc = c->inner(c, n, s);
	char err[128] = "";
	rc = weft_stop(err, sizeof err);
	if (rc && !brc)
		snprintf(s->error, sizeof s->error, "%s", err);
	return brc ? brc : rc;
}

/* ---- weft bodies (run as the main ULT, between init and shutdown) ------- */

static void *noop(void *arg)
{
	return arg;
}

/* c->iarg[0] of the create_join and yield bodies: the ULTs' thread-local
 * storage (enum weft_tls). WEFT_TLS_DEFAULT sets no attribute at all, as
 * the create_join and yield rows always did; the *_tls_own rows ask for
 * WEFT_TLS_OWN and measure it against an explicit WEFT_TLS_WORKER. */
static int tls_of(const wb_case_t *c)
{
	return (int)c->iarg[0];
}

/* weft_create's error into the sample. ENOTSUP for a thread-local block of
 * its own means this build or machine cannot have one (a sanitizer build,
 * not x86-64 with glibc 2.34+): the row is skipped, not failed. */
static int create_error(wb_sample_t *s, int rc, int tls, const char *what)
{
	if (rc == ENOTSUP && tls == WEFT_TLS_OWN)
		ERR(s,
		    "skipped: WEFT_TLS_OWN is not available here (weft_create: %s; "
		    "WEFT_VERBOSE=1 says why)",
		    strerror(rc));
	else
		ERR(s, "weft_create: %s%s", strerror(rc), what);
	return rc;
}

static int weft_create_join(const wb_case_t *c, long n, wb_sample_t *s)
{
	int tls = tls_of(c);
	weft_attr_t a;
	int rc = weft_attr_init(&a);

	if (!rc && tls)
		rc = weft_attr_settls(&a, tls);
	if (rc) {
		ERR(s, "weft_attr_settls: %s", strerror(rc));
		return rc;
	}
	int64_t t0 = wb_now_ns();
	for (long i = 0; i < n; i++) {
		weft_t t;
		rc = weft_create(&t, tls ? &a : NULL, noop, NULL);
		if (rc) {
			char what[48];
			snprintf(what, sizeof what, " (after %ld)", i);
			weft_attr_destroy(&a);
			return create_error(s, rc, tls, what);
		}
		rc = weft_join(t, NULL);
		if (rc) {
			ERR(s, "weft_join: %s", strerror(rc));
			weft_attr_destroy(&a);
			return rc;
		}
	}
	s->elapsed_ns = (double)(wb_now_ns() - t0);
	s->value = s->elapsed_ns / (double)n;
	weft_attr_destroy(&a);
	return 0;
}

/* Start two ULTs running fn(arg[i]), ULT i bound to worker w[i] (-1: any)
 * with thread-local storage tls (enum weft_tls; WEFT_TLS_DEFAULT: not set),
 * and join both. */
static int run_pair(void *(*fn)(void *), void *arg0, void *arg1, int w0, int w1, int tls,
		    wb_sample_t *s)
{
	weft_attr_t a[2];
	weft_t t[2];
	void *args[2] = {arg0, arg1};
	int w[2] = {w0, w1};
	int rc;

	for (int i = 0; i < 2; i++) {
		weft_attr_init(&a[i]);
		weft_attr_setworker(&a[i], w[i]);
		if (tls)
			weft_attr_settls(&a[i], tls);
	}
	rc = weft_create(&t[0], &a[0], fn, args[0]);
	if (rc)
		return create_error(s, rc, tls, "");
	rc = weft_create(&t[1], &a[1], fn, args[1]);
	if (rc)
		return create_error(s, rc, tls, " (the first ULT is left waiting)");
	for (int i = 0; i < 2; i++) {
		int jrc = weft_join(t[i], NULL);
		if (jrc && !rc) {
			ERR(s, "weft_join: %s", strerror(jrc));
			rc = jrc;
		}
		weft_attr_destroy(&a[i]);
	}
	return rc;
}

static void *yielder(void *p)
{
	long n = *(const long *)p;
	for (long i = 0; i < n; i++)
		weft_yield();
	return NULL;
}

/* Two ULTs bound to worker 0 (iarg[1] 0), or unbound (iarg[1] 1, in a
 * one-worker session: c->workers), each calling weft_yield n times: 2n
 * switches. iarg[0]: their thread-local storage (tls_of). */
static int weft_yield_pair(const wb_case_t *c, long n, wb_sample_t *s)
{
	int64_t t0 = wb_now_ns();
	int w = c->iarg[1] ? -1 : 0;
	int rc = run_pair(yielder, &n, &n, w, w, tls_of(c), s);
	if (rc)
		return rc;
	s->elapsed_ns = (double)(wb_now_ns() - t0);
	s->value = s->elapsed_ns / (2.0 * (double)n);
	return 0;
}

/* Park/unpark ping-pong: a turn handed back and forth. Each side learns the
 * other's handle from the shared block (the two start in either order). */
struct park_pp {
	_Atomic weft_t h[2];
	atomic_int turn;
	atomic_int err;
	long n;
};

struct park_player {
	struct park_pp *pp;
	int me;
};

static void *park_player(void *p)
{
	struct park_player *pl = p;
	struct park_pp *pp = pl->pp;
	int me = pl->me;
	weft_t other;

	atomic_store(&pp->h[me], weft_self());
	while ((other = atomic_load(&pp->h[1 - me])) == WEFT_NULL)
		weft_yield();
	for (long i = 0; i < pp->n; i++) {
		while (atomic_load_explicit(&pp->turn, memory_order_acquire) != me) {
			int rc = weft_park();
			if (rc) {
				atomic_store(&pp->err, rc);
				return NULL;
			}
		}
		atomic_store_explicit(&pp->turn, 1 - me, memory_order_release);
		int rc = weft_unpark(other);
		/* The last unpark may find the other side already exited. */
		if (rc && !(rc == ESRCH && i == pp->n - 1)) {
			atomic_store(&pp->err, rc);
			return NULL;
		}
	}
	return NULL;
}

/* iarg[0], iarg[1]: the workers the two ULTs are bound to. */
static int weft_park_pingpong(const wb_case_t *c, long n, wb_sample_t *s)
{
	struct park_pp pp = {.n = n};
	struct park_player pl[2] = {{&pp, 0}, {&pp, 1}};
	int need = (int)(c->iarg[0] > c->iarg[1] ? c->iarg[0] : c->iarg[1]) + 1;

	if (weft_num_workers() < need) {
		ERR(s, "skipped: needs %d workers, weft has %d", need, weft_num_workers());
		return EINVAL;
	}
	atomic_init(&pp.turn, 0);
	atomic_init(&pp.err, 0);
	atomic_init(&pp.h[0], WEFT_NULL);
	atomic_init(&pp.h[1], WEFT_NULL);
	int64_t t0 = wb_now_ns();
	int rc = run_pair(park_player, &pl[0], &pl[1], (int)c->iarg[0], (int)c->iarg[1],
			  WEFT_TLS_DEFAULT, s);
	if (rc)
		return rc;
	s->elapsed_ns = (double)(wb_now_ns() - t0);
	if (atomic_load(&pp.err)) {
		ERR(s, "weft_park/unpark: %s", strerror(atomic_load(&pp.err)));
		return atomic_load(&pp.err);
	}
	s->value = s->elapsed_ns / (double)n;
	return 0;
}

/* Fork-join fibonacci, one ULT per call. */
static atomic_int fib_err;

static void *fib_ult(void *p)
{
	long k = (long)(intptr_t)p;
	weft_t a, b;
	void *ra = NULL, *rb = NULL;
	int rc;

	if (k < 2)
		return p;
	rc = weft_create(&a, NULL, fib_ult, (void *)(intptr_t)(k - 1));
	if (rc) {
		atomic_store(&fib_err, rc);
		return NULL;
	}
	rc = weft_create(&b, NULL, fib_ult, (void *)(intptr_t)(k - 2));
	if (rc) {
		atomic_store(&fib_err, rc);
		weft_join(a, NULL);
		return NULL;
	}
	if ((rc = weft_join(a, &ra)) != 0 || (rc = weft_join(b, &rb)) != 0)
		atomic_store(&fib_err, rc);
	return (void *)((intptr_t)ra + (intptr_t)rb);
}

static long fib_value(int k)
{
	long a = 0, b = 1;
	for (int i = 0; i < k; i++) {
		long t = a + b;
		a = b;
		b = t;
	}
	return a;
}

/* Calls (= threads) of the naive fib(k): 2 fib(k+1) - 1. */
static long fib_calls(int k)
{
	return 2 * fib_value(k + 1) - 1;
}

/* n = k of fib(k). */
static int weft_fib(const wb_case_t *c, long n, wb_sample_t *s)
{
	weft_t t;
	void *r = NULL;
	int rc;

	atomic_store(&fib_err, 0);
	int64_t t0 = wb_now_ns();
	rc = weft_create(&t, NULL, fib_ult, (void *)(intptr_t)n);
	if (rc) {
		ERR(s, "weft_create: %s", strerror(rc));
		return rc;
	}
	rc = weft_join(t, &r);
	s->elapsed_ns = (double)(wb_now_ns() - t0);
	if (rc || atomic_load(&fib_err)) {
		ERR(s, "fib: %s", strerror(rc ? rc : atomic_load(&fib_err)));
		return rc ? rc : atomic_load(&fib_err);
	}
	if ((intptr_t)r != fib_value((int)n)) {
		ERR(s, "fib(%ld) = %ld, expected %ld", n, (long)(intptr_t)r, fib_value((int)n));
		return EIO;
	}
	s->value = s->elapsed_ns / (double)fib_calls((int)n);
	return 0;
}

/* N ULTs alive at once: ULT k creates ULT k-1 and joins it. */
static atomic_int chain_err;

static void *chain_ult(void *p)
{
	long k = (long)(intptr_t)p;
	weft_t t;
	void *r = NULL;
	int rc;

	if (k <= 1)
		return (void *)(intptr_t)1;
	rc = weft_create(&t, NULL, chain_ult, (void *)(intptr_t)(k - 1));
	if (rc) {
		atomic_store(&chain_err, rc);
		return (void *)(intptr_t)1;
	}
	rc = weft_join(t, &r);
	if (rc)
		atomic_store(&chain_err, rc);
	return (void *)((intptr_t)r + 1);
}

static int weft_chain(const wb_case_t *c, long n, wb_sample_t *s)
{
	weft_t t;
	void *r = NULL;
	int rc;

	wb_sample_extra(s, "pre_rss_kb", (double)wb_self_vmrss_kb());
	int64_t t0 = wb_now_ns();
	rc = weft_create(&t, NULL, chain_ult, (void *)(intptr_t)n);
	if (rc) {
		ERR(s, "weft_create: %s", strerror(rc));
		return rc;
	}
	rc = weft_join(t, &r);
	s->elapsed_ns = (double)(wb_now_ns() - t0);
	if (rc || atomic_load(&chain_err)) {
		rc = rc ? rc : atomic_load(&chain_err);
		ERR(s, "chain: %s after %ld ULTs", strerror(rc), (long)(intptr_t)r);
		return rc;
	}
	s->value = s->elapsed_ns;
	return 0;
}

/* Idle: wake every worker with a burst of ULTs, then leave the process idle
 * (main sleeps in the kernel, the other workers have nothing to do) for n
 * milliseconds; the value is the CPU time the process used meanwhile, in
 * percent of one core. Workers must park instead of spinning. */
static void *idle_burst(void *p)
{
	return p;
}

static int weft_idle(const wb_case_t *c, long n, wb_sample_t *s)
{
	(void)c;
	for (int i = 0; i < 1000; i++) {
		weft_t t;
		int rc = weft_create(&t, NULL, idle_burst, NULL);
		if (!rc)
			rc = weft_join(t, NULL);
		if (rc) {
			ERR(s, "burst: %s", strerror(rc));
			return rc;
		}
	}
	struct timespec c0, c1, d = {n / 1000, (n % 1000) * 1000000};
	int64_t t0 = wb_now_ns();
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	while (nanosleep(&d, &d) != 0 && errno == EINTR)
		;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	s->elapsed_ns = (double)(wb_now_ns() - t0);
	double cpu_ns = (double)(c1.tv_sec - c0.tv_sec) * 1e9 + (double)(c1.tv_nsec - c0.tv_nsec);
	s->value = 100.0 * cpu_ns / s->elapsed_ns;
	return 0;
}

/* ---- spread: CPU-bound ULTs made by one ULT reach every worker --------- */

/* Each round, after a pause in which every worker falls asleep, a driver
 * ULT makes SPREAD_THREADS ULTs of about SPREAD_MS of computation each and
 * joins them: on W workers a round takes SPREAD_THREADS / W * SPREAD_MS
 * when the work reaches every worker, SPREAD_THREADS * SPREAD_MS when one
 * worker runs it all. The value is ms per round. */
#define SPREAD_THREADS  4
#define SPREAD_MS       4
#define SPREAD_PAUSE_NS 10000000L

static long spread_iters; /* iterations of spread_work in about SPREAD_MS */

static uint64_t spread_work(long iters)
{
	uint64_t x = 1;
	for (long i = 0; i < iters; i++)
		x = x * 6364136223846793005u + 1442695040888963407u;
	return x;
}

static void spread_calibrate(void)
{
	if (spread_iters)
		return;
	long iters = 1 << 16;
	for (;;) {
		int64_t t0 = wb_now_ns();
		volatile uint64_t sink = spread_work(iters);
		(void)sink;
		int64_t el = wb_now_ns() - t0;
		if (el >= 1000000 || iters > (1L << 40)) {
			spread_iters = (long)((double)iters * SPREAD_MS * 1e6 / (double)el);
			return;
		}
		iters *= 4;
	}
}

static _Atomic uint64_t spread_sink;

static void *spread_one(void *p)
{
	(void)p;
	atomic_fetch_add_explicit(&spread_sink, spread_work(spread_iters), memory_order_relaxed);
	return NULL;
}

static void *spread_driver(void *p)
{
	(void)p;
	weft_t t[SPREAD_THREADS];
	int made = 0, rc = 0;
	for (; made < SPREAD_THREADS; made++)
		if ((rc = weft_create(&t[made], NULL, spread_one, NULL)) != 0)
			break;
	for (int i = 0; i < made; i++)
		weft_join(t[i], NULL);
	return (void *)(intptr_t)rc;
}

static int weft_spread(const wb_case_t *c, long n, wb_sample_t *s)
{
	(void)c;
	int64_t el = 0;
	for (long r = 0; r < n; r++) {
		weft_sleep_ns(SPREAD_PAUSE_NS);
		int64_t t0 = wb_now_ns();
		weft_t d;
		void *res = NULL;
		int rc = weft_create(&d, NULL, spread_driver, NULL);
		if (!rc)
			rc = weft_join(d, &res);
		if (!rc)
			rc = (int)(intptr_t)res;
		if (rc) {
			ERR(s, "weft_create/join: %s", strerror(rc));
			return rc;
		}
		el += wb_now_ns() - t0;
	}
	s->elapsed_ns = (double)el;
	s->value = (double)el / (double)n / 1e6;
	return 0;
}

/* ---- peers ------------------------------------------------------------- */

static int done(wb_sample_t *s, int rc, int64_t el, double ops, const char *what)
{
	if (rc) {
		ERR(s, "%s: %s", what, strerror(rc));
		return rc;
	}
	s->elapsed_ns = (double)el;
	s->value = (double)el / ops;
	return 0;
}

static int pt_create_join(const wb_case_t *c, long n, wb_sample_t *s)
{
	int64_t el = 0;
	int rc = wb_pthread_create_join(n, &el);
	return done(s, rc, el, (double)n, "pthread_create");
}

static int pt_yield(const wb_case_t *c, long n, wb_sample_t *s)
{
	int64_t el = 0;
	int rc = wb_pthread_yield_pingpong(n, wb_cpu(0), &el);
	return done(s, rc, el, 2.0 * (double)n, "pthread_create");
}

/* iarg[0], iarg[1]: indexes (into the allowed CPUs) of the two threads' CPUs */
static int pt_futex(const wb_case_t *c, long n, wb_sample_t *s)
{
	int a = wb_cpu((int)c->iarg[0]), b = wb_cpu((int)c->iarg[1]);
	int64_t el = 0;

	if (a < 0 || b < 0) {
		ERR(s, "skipped: needs %ld allowed CPUs", c->iarg[1] + 1);
		return EINVAL;
	}
	int rc = wb_pthread_futex_pingpong(n, a, b, &el);
	return done(s, rc, el, (double)n, "pthread_create");
}

static int pt_spread(const wb_case_t *c, long n, wb_sample_t *s)
{
	(void)c;
	int64_t el = 0;
	int rc = wb_pthread_spread(n, SPREAD_THREADS, spread_iters, spread_work, SPREAD_PAUSE_NS,
				   &el);
	if (rc) {
		ERR(s, "pthread_create: %s", strerror(rc));
		return rc;
	}
	s->elapsed_ns = (double)el;
	s->value = (double)el / (double)n / 1e6;
	return 0;
}

static int pt_fib(const wb_case_t *c, long n, wb_sample_t *s)
{
	int64_t el = 0;
	long threads = 0;
	int rc = wb_pthread_fib((int)n, &threads, &el);
	return done(s, rc, el, (double)threads, "pthread_create (fib)");
}

static volatile int fib_serial_k;

static long fib_serial(int k)
{
	return k < 2 ? k : fib_serial(k - 1) + fib_serial(k - 2);
}

static int serial_fib(const wb_case_t *c, long n, wb_sample_t *s)
{
	fib_serial_k = (int)n;
	int64_t t0 = wb_now_ns();
	long r = fib_serial(fib_serial_k);
	int64_t el = wb_now_ns() - t0;
	if (r != fib_value((int)n)) {
		ERR(s, "serial fib wrong");
		return EIO;
	}
	return done(s, 0, el, (double)fib_calls((int)n), "");
}

static int uc_swap(const wb_case_t *c, long n, wb_sample_t *s)
{
	int64_t el = 0;
	int rc = wb_ucontext_swap_rt(n, &el);
	return done(s, rc, el, 2.0 * (double)n, "swapcontext");
}

#if WB_HAVE_ST
static int st_create_join(const wb_case_t *c, long n, wb_sample_t *s)
{
	(void)c;
	int64_t el = 0;
	int rc = wb_st_create_join(n, &el);
	return done(s, rc, el, (double)n, "st_thread_create");
}
#endif

#if WB_HAVE_BOOST
static int boost_jump(const wb_case_t *c, long n, wb_sample_t *s)
{
	int64_t el = 0;
	int rc = wb_boost_jump_rt(n, &el);
	return done(s, rc, el, 2.0 * (double)n, "jump_fcontext");
}

static int boost_callcc(const wb_case_t *c, long n, wb_sample_t *s)
{
	int64_t el = 0;
	int rc = wb_boost_callcc(n, &el);
	return done(s, rc, el, (double)n, "callcc");
}

static int boost_fiber_cj(const wb_case_t *c, long n, wb_sample_t *s)
{
	int64_t el = 0;
	int rc = wb_boost_fiber_create_join(n, &el);
	return done(s, rc, el, (double)n, "fiber");
}

static int boost_fiber_yield(const wb_case_t *c, long n, wb_sample_t *s)
{
	int64_t el = 0;
	int rc = wb_boost_fiber_yield(n, &el);
	return done(s, rc, el, 2.0 * (double)n, "fiber yield");
}
#endif

/* ---- the chain row: each run in a fresh process ------------------------- */

/* A system's chain runs stop after this much wall time (child start to
 * exit, teardown included), so a slow system cannot make the suite long. */
#define CHAIN_BUDGET_S 20.0

/* Run "weft-bench _chain --system S --n N" and read its peak RSS. */
static int chain_spawn(const wb_case_t *c, long n, wb_sample_t *s)
{
	char out[512];
	struct rusage ru;
	int rc = wb_run_self_child("_chain", c, n, out, sizeof out, &ru, s);
	if (rc)
		return rc;
	long long el = -1;
	long pre = -1;
	if (sscanf(out, "elapsed_ns=%lld pre_rss_kb=%ld", &el, &pre) != 2) {
		ERR(s, "child's output: %.200s", out);
		return EIO;
	}
	s->elapsed_ns = (double)el;
	s->value = (double)el / 1e9;
	wb_sample_extra(s, "peak_rss_kb", (double)ru.ru_maxrss);
	wb_sample_extra(s, "ns_per_thread", (double)el / (double)n);
	wb_sample_extra(s, "rss_kb_per_thread", (double)(ru.ru_maxrss - pre) / (double)n);
	return 0;
}

int wb_micro_chain_child(const wb_opts_t *o)
{
	const char *sys = o->child_system ? o->child_system : "";
	long n = o->child_n;
	wb_sample_t s;
	int rc;

	memset(&s, 0, sizeof s);
	if (n < 1) {
		printf("error=bad --n\n");
		return 2;
	}
	if (strcmp(sys, "pthread") == 0) {
		int64_t el = 0;
		long pre = wb_self_vmrss_kb();
		rc = wb_pthread_chain(n, &el);
		if (rc) {
			printf("error=pthread chain: %s (fewer than %ld threads fit)\n",
			       strerror(rc), n);
			return 1;
		}
		printf("elapsed_ns=%lld pre_rss_kb=%ld\n", (long long)el, pre);
		return 0;
	}
	wb_case_t c = {.system = sys, .inner = weft_chain, .opts = o};
	if (strcmp(sys, "weft-asm") == 0)
		c.context = WEFT_CONTEXT_ASM;
	else if (strcmp(sys, "weft-ucontext") == 0)
		c.context = WEFT_CONTEXT_UCONTEXT;
	else {
		printf("error=unknown system '%s'\n", sys);
		return 2;
	}
	rc = wb_weft_session(&c, n, &s);
	if (rc) {
		printf("error=%s\n", s.error);
		return 1;
	}
	double pre = -1;
	for (int i = 0; i < s.nextra; i++)
		if (strcmp(s.extra[i].key, "pre_rss_kb") == 0)
			pre = s.extra[i].value;
	printf("elapsed_ns=%lld pre_rss_kb=%.0f\n", (long long)s.value, pre);
	return 0;
}

/* ---- the suite --------------------------------------------------------- */

#define WEFT_CASE(ctx, body, where, nt)                                                          \
	{                                                                                        \
		.system = (ctx) == WEFT_CONTEXT_ASM ? "weft-asm" : "weft-ucontext",              \
		.placement = (where), .run = wb_weft_session, .inner = (body), .context = (ctx), \
		.weft = 1, .n0 = 1000, .note = (nt), .opts = o                                   \
	}

static const char *weft_unavailable; /* set when the probe session failed */

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

#define NCASES(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* A *_tls_own group: body with WEFT_TLS_OWN on each weft backend and, in the
 * same alternating trials, body with an explicit WEFT_TLS_WORKER. The
 * latter are not rows of their own (the create_join and yield rows report
 * that cost) but the reference each OWN row states its cost against:
 * worker_tls_median, delta_vs_worker_tls (OWN minus WORKER, in the unit) and
 * ratio_vs_worker_tls. No pthread row: a pthread always has its own. */
static void tls_own_group(const wb_opts_t *o, wb_report_t *r, const char *bench, const char *unit,
			  wb_run_fn body, const char *where, const char *note)
{
	wb_case_t cases[] = {
		WEFT_CASE(WEFT_CONTEXT_ASM, body, where, note),
		WEFT_CASE(WEFT_CONTEXT_UCONTEXT, body, where, note),
		WEFT_CASE(WEFT_CONTEXT_ASM, body, where, NULL),
		WEFT_CASE(WEFT_CONTEXT_UCONTEXT, body, where, NULL),
	};
	enum { NOWN = 2 }; /* cases[i + NOWN] is cases[i]'s reference */
	for (int i = 0; i < NCASES(cases); i++)
		cases[i].iarg[0] = i < NOWN ? WEFT_TLS_OWN : WEFT_TLS_WORKER;
	wb_group_t g = {bench, unit, cases, NCASES(cases)};
	wb_row_t rows[NCASES(cases)];

	if (!wb_selected_bench(o, g.bench))
		return;
	wb_run_group(o, &g, rows);
	for (int i = 0; i < NOWN; i++) {
		wb_row_t *own = &rows[i], *ref = &rows[i + NOWN];
		if (!own->system || own->error[0])
			continue;
		if (ref->error[0]) {
			wb_row_note(own, "WEFT_TLS_WORKER reference failed: %s", ref->error);
			continue;
		}
		double d = own->median - ref->median;
		wb_row_extra(own, "worker_tls_median", ref->median);
		wb_row_extra(own, "delta_vs_worker_tls", d);
		wb_row_extra(own, "ratio_vs_worker_tls", own->median / ref->median);
		wb_row_note(own, "%+.3g %s (%.3gx) vs WEFT_TLS_WORKER (%.3g), alternating", d, unit,
			    own->median / ref->median, ref->median);
	}
	emit(r, rows, NOWN);
}

int wb_peers_main(const wb_opts_t *o)
{
	wb_opts_t p = *o;
	if (!p.only)
		p.only =
			"create_join,yield,condvar_pingpong_1worker,mutex_hammer_64_unbound,sem_1m";
	return wb_micro_main(&p);
}

int wb_micro_main(const wb_opts_t *o)
{
	wb_machine_t m;
	wb_report_t r = {.json = o->json, .subcommand = "micro"};
	int fib_k = o->quick ? 15 : 25, fib_pt_k = o->quick ? 10 : 15;
	char weft_desc[256], place[512], trials_desc[256], sizes[256];
	char weft_err[160] = "";
	weft_config_t cfg;
	int nworkers = 0;

	wb_affinity_save();
	wb_machine_probe(&m);

	/* Probe: does the runtime start, and with how many workers? */
	weft_config_init(&cfg);
	if (weft_start(o, WEFT_CONTEXT_ASM, 0, weft_err, sizeof weft_err) == 0) {
		nworkers = weft_num_workers();
		weft_stop(weft_err, sizeof weft_err);
		wb_affinity_restore();
	} else {
		weft_unavailable = weft_err;
	}
	int pin = o->pin >= 0 ? o->pin : cfg.pin;
	if (weft_unavailable)
		snprintf(weft_desc, sizeof weft_desc, "%s %s: UNAVAILABLE (%s)", "weft",
			 WEFT_VERSION_STRING, weft_unavailable);
	else
		snprintf(weft_desc, sizeof weft_desc,
			 "weft %s, %d workers, workers pinned to CPUs: %s, sched=%s, "
			 "idle_spin_ns=%ld (0: built-in)",
			 WEFT_VERSION_STRING, nworkers, pin == 1 ? "yes" : "no",
			 cfg.scheds ? cfg.scheds : "steal", cfg.idle_spin_ns);
	snprintf(place, sizeof place,
		 "pthread yield and same-core futex rows: both threads pinned to CPU %d; "
		 "two-core futex: CPUs %d and %d; other pthread rows unpinned. weft "
		 "yield, yield_tls_own, park_1worker: both ULTs bound to worker 0; "
		 "park_2workers: workers 0 and 1; other weft rows: default attributes (any "
		 "worker)",
		 wb_cpu(0), wb_cpu(0), wb_cpu(1));
	snprintf(trials_desc, sizeof trials_desc,
		 "%d after 1 warm-up, systems alternating within each trial, ~%g ms per run; "
		 "chain: up to %d, each in a fresh process, no warm-up, fewer once a system's "
		 "runs took %g s",
		 o->trials, o->target_ms, o->chain_trials, CHAIN_BUDGET_S);
	snprintf(sizes, sizeof sizes,
		 "fib(%d) = %ld ULTs (pthread: fib(%d) = %ld threads); chain: %ld ULTs, %ld "
		 "pthreads%s",
		 fib_k, fib_calls(fib_k), fib_pt_k, fib_calls(fib_pt_k), o->chain_n,
		 o->chain_pthread_n, o->quick ? " (--quick)" : "");
	const char *keys[] = {"weft", "placement", "trials", "sizes", "peers"};
	const char *vals[] = {weft_desc, place, trials_desc, sizes, wb_peers_built()};
	wb_report_begin(&r, &m, keys, vals, 5);

	/* create + join */
	{
		wb_case_t cases[] =
		{ WEFT_CASE(WEFT_CONTEXT_ASM, weft_create_join, "any", NULL),
		  WEFT_CASE(WEFT_CONTEXT_UCONTEXT, weft_create_join, "any", NULL),
		  {.system = "pthread",
		   .placement = "unpinned",
		   .run = pt_create_join,
		   .n0 = 50,
		   .ref = WB_REF_PTHREAD,
		   .opts = o},
#if WB_HAVE_BOOST
		  {.system = "boost-fiber",
		   .placement = "main thread",
		   .run = boost_fiber_cj,
		   .n0 = 1000,
		   .opts = o,
		   .note = "fiber f(fn); f.join()"},
		  {.system = "boost-context-callcc",
		   .placement = "main thread",
		   .run = boost_callcc,
		   .n0 = 1000,
		   .opts = o,
		   .note = "callcc create+run+destroy, no scheduler"},
#endif
#if WB_HAVE_ST
		  {.system = "state-threads",
		   .placement = "main thread",
		   .run = st_create_join,
		   .n0 = 10000,
		   .opts = o,
		   .note = "st_thread_create(joinable) + st_thread_join, N:1"},
#endif
#if WB_HAVE_GO
		  {.system = "go",
		   .placement = "any",
		   .run = wb_go_case,
		   .n0 = 100000,
		   .opts = o,
		   .iarg = {WB_GO_CREATE_JOIN},
		   .note = "go f() + a channel receive; GOMAXPROCS = the CPUs (weft-peer-go, a "
			   "process per run)"},
#endif
		};
		wb_group_t g = {"create_join", "ns/pair", cases, NCASES(cases)};
		wb_row_t rows[NCASES(cases)];
		if (wb_selected_bench(o, g.bench)) {
			wb_run_group(o, &g, rows);
			emit(&r, rows, g.ncases);
		}
	}
	tls_own_group(o, &r, "create_join_tls_own", "ns/pair", weft_create_join, "any",
		      "weft_create with WEFT_TLS_OWN + weft_join");

	/* yield: switches between two threads on one core */
	{
		wb_case_t cases[] = {
			WEFT_CASE(WEFT_CONTEXT_ASM, weft_yield_pair, "worker 0",
				  "2 ULTs x n weft_yield; RT = 2 switches"),
			WEFT_CASE(WEFT_CONTEXT_UCONTEXT, weft_yield_pair, "worker 0",
				  "2 ULTs x n weft_yield; RT = 2 switches"),
			{.system = "pthread",
			 .placement = "CPU 0",
			 .run = pt_yield,
			 .n0 = 100,
			 .ref = WB_REF_PTHREAD,
			 .opts = o,
			 .note = "sched_yield ping-pong, both pinned to one CPU; RT = 2 switches"},
			{.system = "glibc-swapcontext",
			 .placement = "main thread",
			 .run = uc_swap,
			 .n0 = 1000,
			 .opts = o,
			 .note = "bare swapcontext, no scheduler; RT = 2 switches"},
#if WB_HAVE_BOOST
			{.system = "boost-context-jump",
			 .placement = "main thread",
			 .run = boost_jump,
			 .n0 = 10000,
			 .opts = o,
			 .note = "bare jump_fcontext, no scheduler; RT = 2 switches"},
			{.system = "boost-fiber",
			 .placement = "main thread",
			 .run = boost_fiber_yield,
			 .n0 = 1000,
			 .opts = o,
			 .note = "2 fibers x n this_fiber::yield"},
#endif
#if WB_HAVE_GO
			{.system = "go",
			 .placement = "one P",
			 .run = wb_go_case,
			 .n0 = 100000,
			 .opts = o,
			 .iarg = {WB_GO_YIELD, 2},
			 .note = "2 goroutines x n runtime.Gosched, GOMAXPROCS=1 (weft-peer-go)"},
#endif
		};
		wb_group_t g = {"yield", "ns/switch", cases, NCASES(cases)};
		wb_row_t rows[NCASES(cases)];
		if (wb_selected_bench(o, g.bench)) {
			wb_run_group(o, &g, rows);
			/* The ucontext backend's target: a switch at most 1/3 of glibc's
			 * swapcontext, which makes a system call per switch. */
			wb_row_t *sw = find(rows, g.ncases, "glibc-swapcontext");
			for (int i = 0; sw && i < g.ncases; i++) {
				if (!rows[i].system || rows[i].error[0] ||
				    strncmp(rows[i].system, "weft-", 5) != 0)
					continue;
				double q = rows[i].median / sw->median;
				wb_row_extra(&rows[i], "ratio_vs_swapcontext", q);
				wb_row_note(&rows[i], "%.3gx glibc swapcontext%s", q,
					    strcmp(rows[i].system, "weft-ucontext") == 0
						    ? (q <= 1.0 / 3 ? " (target <= 0.33: met)"
								    : " (target <= 0.33: NOT met)")
						    : "");
			}
			emit(&r, rows, g.ncases);
		}
	}
	tls_own_group(o, &r, "yield_tls_own", "ns/switch", weft_yield_pair, "worker 0",
		      "2 ULTs with WEFT_TLS_OWN x n weft_yield; RT = 2 switches");

	/* yield_unbound: the yield row's switches with ULTs a program would
	 * make - not bound to a worker - on a one-worker runtime, as Go's row
	 * runs on one P: they queue where any idle worker could take them. */
	{
		wb_case_t cases[] = {
			WEFT_CASE(WEFT_CONTEXT_ASM, weft_yield_pair, "1 worker",
				  "2 unbound ULTs x n weft_yield on a one-worker runtime; RT = 2 "
				  "switches"),
			WEFT_CASE(WEFT_CONTEXT_UCONTEXT, weft_yield_pair, "1 worker",
				  "2 unbound ULTs x n weft_yield on a one-worker runtime; RT = 2 "
				  "switches"),
		};
		for (size_t i = 0; i < NCASES(cases); i++) {
			cases[i].workers = 1;
			cases[i].iarg[1] = 1;
			cases[i].no_ratio = 1;
		}
		wb_group_t g = {"yield_unbound", "ns/switch", cases, NCASES(cases)};
		wb_row_t rows[NCASES(cases)];
		if (wb_selected_bench(o, g.bench)) {
			wb_run_group(o, &g, rows);
			emit(&r, rows, g.ncases);
		}
	}

	/* park/unpark ping-pong, one worker and two */
	for (int two = 0; two <= 1; two++) {
		wb_case_t wa = WEFT_CASE(WEFT_CONTEXT_ASM, weft_park_pingpong,
					 two ? "workers 0+1" : "worker 0",
					 "park/unpark with a shared turn");
		wb_case_t wu = WEFT_CASE(WEFT_CONTEXT_UCONTEXT, weft_park_pingpong,
					 two ? "workers 0+1" : "worker 0",
					 "park/unpark with a shared turn");
		wa.iarg[1] = wu.iarg[1] = two;
		wb_case_t cases[] = {
			wa,
			wu,
			{.system = "pthread",
			 .placement = two ? "CPUs 0+1" : "CPU 0",
			 .run = pt_futex,
			 .n0 = 50,
			 .ref = WB_REF_PTHREAD,
			 .opts = o,
			 .iarg = {0, two},
			 .note = "futex wait/wake ping-pong"},
		};
		wb_group_t g = {two ? "park_2workers" : "park_1worker", "ns/RT", cases,
				NCASES(cases)};
		wb_row_t rows[NCASES(cases)];
		if (wb_selected_bench(o, g.bench)) {
			wb_run_group(o, &g, rows);
			emit(&r, rows, g.ncases);
		}
	}

	/* park_unbound: park_1worker's ping-pong with default attributes on a
	 * one-worker runtime (as yield_unbound) */
	{
		wb_case_t cases[] = {
			WEFT_CASE(WEFT_CONTEXT_ASM, weft_park_pingpong, "1 worker",
				  "park/unpark with a shared turn, 2 unbound ULTs on a "
				  "one-worker runtime")};
		cases[0].workers = 1;
		cases[0].iarg[0] = cases[0].iarg[1] = -1;
		cases[0].no_ratio = 1;
		wb_group_t g = {"park_unbound", "ns/RT", cases, NCASES(cases)};
		wb_row_t rows[NCASES(cases)];
		if (wb_selected_bench(o, g.bench)) {
			wb_run_group(o, &g, rows);
			emit(&r, rows, g.ncases);
		}
	}

	/* fork-join fibonacci, one thread per call */
	{
		char wnote[96], pnote[128], snote[96];
		snprintf(wnote, sizeof wnote, "fib(%d), %ld ULTs, one per call", fib_k,
			 fib_calls(fib_k));
		snprintf(pnote, sizeof pnote,
			 "fib(%d) = %ld threads: a pthread per call is too slow for fib(%d)",
			 fib_pt_k, fib_calls(fib_pt_k), fib_k);
		snprintf(snote, sizeof snote, "plain recursive fib(%d), ns per call, reference",
			 fib_k);
		wb_case_t wa = WEFT_CASE(WEFT_CONTEXT_ASM, weft_fib, "any", wnote);
		wb_case_t wu = WEFT_CASE(WEFT_CONTEXT_UCONTEXT, weft_fib, "any", wnote);
		wa.n = wu.n = fib_k;
		wb_case_t cases[] = {
			wa,
			wu,
			{.system = "pthread",
			 .placement = "unpinned",
			 .run = pt_fib,
			 .n = fib_pt_k,
			 .ref = WB_REF_PTHREAD,
			 .opts = o,
			 .note = pnote},
			{.system = "serial-c",
			 .placement = "main thread",
			 .run = serial_fib,
			 .n = fib_k,
			 .no_ratio = 1,
			 .opts = o,
			 .note = snote},
		};
		wb_group_t g = {"fib", "ns/thread", cases, NCASES(cases)};
		wb_row_t rows[NCASES(cases)];
		if (wb_selected_bench(o, g.bench)) {
			wb_run_group(o, &g, rows);
			emit(&r, rows, g.ncases);
		}
	}

	/* N threads alive at once */
	{
		wb_case_t cases[] = {
			{.system = "weft-asm",
			 .placement = "any",
			 .run = chain_spawn,
			 .n = o->chain_n,
			 .trials = o->chain_trials,
			 .no_warmup = 1,
			 .budget_s = CHAIN_BUDGET_S,
			 .opts = o},
			{.system = "weft-ucontext",
			 .placement = "any",
			 .run = chain_spawn,
			 .n = o->chain_n,
			 .trials = o->chain_trials,
			 .no_warmup = 1,
			 .budget_s = CHAIN_BUDGET_S,
			 .opts = o},
			{.system = "pthread",
			 .placement = "unpinned",
			 .run = chain_spawn,
			 .n = o->chain_pthread_n,
			 .trials = o->chain_trials,
			 .no_warmup = 1,
			 .budget_s = CHAIN_BUDGET_S,
			 .opts = o},
		};
		wb_group_t g = {"chain", "s", cases, NCASES(cases)};
		wb_row_t rows[NCASES(cases)];
		if (wb_selected_bench(o, g.bench)) {
			wb_run_group(o, &g, rows);
			wb_row_t *pt = find(rows, g.ncases, "pthread");
			for (int i = 0; i < g.ncases; i++) {
				wb_row_t *w = &rows[i];
				if (!w->system || w->error[0])
					continue;
				/* Sizes differ: compare per thread, not the totals. */
				w->ratio_vs_pthread = NAN;
				wb_row_note(w,
					    "%d trial%s; %ld alive, peak RSS %.0f MiB; per thread "
					    "%.0f ns, %.2f KiB",
					    w->nsamples, w->nsamples == 1 ? "" : "s", w->n,
					    wb_row_get_extra(w, "peak_rss_kb") / 1024,
					    wb_row_get_extra(w, "ns_per_thread"),
					    wb_row_get_extra(w, "rss_kb_per_thread"));
				if (pt && w != pt)
					wb_row_note(
						w, "%.3gx pthread time, %.3gx memory per thread",
						wb_row_get_extra(w, "ns_per_thread") /
							wb_row_get_extra(pt, "ns_per_thread"),
						wb_row_get_extra(w, "rss_kb_per_thread") /
							wb_row_get_extra(pt, "rss_kb_per_thread"));
				if (w == pt && o->chain_pthread_n < 32439)
					wb_row_note(w, "~32,439 fit with default attributes");
			}
			emit(&r, rows, g.ncases);
		}
	}

	/* CPU-bound ULTs made by one ULT reach every worker */
	{
		char note[160];
		snprintf(note, sizeof note,
			 "a ULT makes %d ULTs of ~%d ms of computation and joins them, after "
			 "a %ld ms pause; ms per round",
			 SPREAD_THREADS, SPREAD_MS, SPREAD_PAUSE_NS / 1000000);
		spread_calibrate();
		wb_case_t wa = WEFT_CASE(WEFT_CONTEXT_ASM, weft_spread, "any", note);
		wa.n = o->quick ? 3 : 10;
		wb_case_t cases[] = {
			wa,
			{.system = "pthread",
			 .placement = "unpinned",
			 .run = pt_spread,
			 .n = wa.n,
			 .ref = WB_REF_PTHREAD,
			 .opts = o,
			 .note = "the same with threads"},
		};
		wb_group_t g = {"spread_4", "ms/round", cases, NCASES(cases)};
		wb_row_t rows[NCASES(cases)];
		if (wb_selected_bench(o, g.bench)) {
			wb_run_group(o, &g, rows);
			emit(&r, rows, g.ncases);
		}
	}

	/* An idle process: workers parked, no CPU used */
	{
		char note[96];
		long ms = o->quick ? 200 : 2000;
		snprintf(note, sizeof note, "CPU used while idle for %.1f s after a burst of ULTs",
			 ms / 1000.0);
		wb_case_t wa = WEFT_CASE(WEFT_CONTEXT_ASM, weft_idle, "any", note);
		wa.n = ms;
		wa.trials = o->quick ? 1 : 3;
		wa.no_warmup = 1;
		wa.no_ratio = 1;
		wb_case_t cases[] = {wa};
		wb_group_t g = {"idle", "% core", cases, NCASES(cases)};
		wb_row_t rows[NCASES(cases)];
		if (wb_selected_bench(o, g.bench)) {
			wb_run_group(o, &g, rows);
			emit(&r, rows, g.ncases);
		}
	}

	/* The synchronization rows (sync.c). */
	char closing[1024];
	wb_sync_rows(o, &r, nworkers, closing, sizeof closing);

	wb_report_footer(&r, "\nmedian [min, max] over the trials. RT = round trip = 2 switches. "
			     "vs pthread = median / the pthread median of the same benchmark in "
			     "this run (chain: sizes differ, see the note).\n");
	if (closing[0])
		wb_report_footer(&r, "%s", closing);
	wb_report_end(&r);
	return 0;
}
