/* glibc pthreads, the baseline every weft row is divided by. See peers.h. */
#include "peers.h"
#include "report.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void *noop(void *arg)
{
	return arg;
}

int wb_pthread_create_join(long n, int64_t *elapsed_ns)
{
	int64_t t0 = wb_now_ns();
	for (long i = 0; i < n; i++) {
		pthread_t t;
		int rc = pthread_create(&t, NULL, noop, NULL);
		if (rc)
			return rc;
		pthread_join(t, NULL);
	}
	*elapsed_ns = wb_now_ns() - t0;
	return 0;
}

/* Start fn(arg) on a thread pinned to cpu (-1: not pinned). */
static int start_pinned(pthread_t *t, int cpu, void *(*fn)(void *), void *arg)
{
	pthread_attr_t a;
	cpu_set_t set;
	int rc;

	pthread_attr_init(&a);
	if (cpu >= 0) {
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		pthread_attr_setaffinity_np(&a, sizeof set, &set);
	}
	rc = pthread_create(t, &a, fn, arg);
	pthread_attr_destroy(&a);
	return rc;
}

/* Shared by the ping-pongs: whose turn it is (0 or 1). */
struct pingpong {
	atomic_int turn;
	long n;
	int me;
	struct pingpong *shared;
};

static void *yield_player(void *p)
{
	struct pingpong *pl = p, *s = pl->shared;
	for (long i = 0; i < s->n; i++) {
		while (atomic_load_explicit(&s->turn, memory_order_acquire) != pl->me)
			sched_yield();
		atomic_store_explicit(&s->turn, 1 - pl->me, memory_order_release);
	}
	return NULL;
}

static long futex(atomic_int *addr, int op, int val)
{
	return syscall(SYS_futex, addr, op, val, NULL, NULL, 0);
}

static void *futex_player(void *p)
{
	struct pingpong *pl = p, *s = pl->shared;
	for (long i = 0; i < s->n; i++) {
		int v;
		while ((v = atomic_load_explicit(&s->turn, memory_order_acquire)) != pl->me)
			futex(&s->turn, FUTEX_WAIT_PRIVATE, v);
		atomic_store_explicit(&s->turn, 1 - pl->me, memory_order_release);
		futex(&s->turn, FUTEX_WAKE_PRIVATE, 1);
	}
	return NULL;
}

static int pingpong(long n, int cpu_a, int cpu_b, void *(*fn)(void *), int64_t *elapsed_ns)
{
	struct pingpong s = {.n = n}, a = {.me = 0, .shared = &s}, b = {.me = 1, .shared = &s};
	pthread_t ta, tb;
	int rc;
	int64_t t0 = wb_now_ns();

	atomic_init(&s.turn, 0);
	rc = start_pinned(&ta, cpu_a, fn, &a);
	if (rc)
		return rc;
	rc = start_pinned(&tb, cpu_b, fn, &b);
	if (rc) {
		/* Let a finish on its own: hand it every turn. */
		s.n = 0;
		atomic_store(&s.turn, 0);
		futex(&s.turn, FUTEX_WAKE_PRIVATE, 1);
		pthread_join(ta, NULL);
		return rc;
	}
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	*elapsed_ns = wb_now_ns() - t0;
	return 0;
}

int wb_pthread_yield_pingpong(long n, int cpu, int64_t *elapsed_ns)
{
	return pingpong(n, cpu, cpu, yield_player, elapsed_ns);
}

int wb_pthread_futex_pingpong(long n, int cpu_a, int cpu_b, int64_t *elapsed_ns)
{
	return pingpong(n, cpu_a, cpu_b, futex_player, elapsed_ns);
}

/* fib with a thread per call. The result travels in the return value; a
 * failed pthread_create makes the whole computation report -1. */
static atomic_long fib_threads;

static void *fib_thread(void *p)
{
	long k = (long)(intptr_t)p;
	pthread_t a, b;
	void *ra, *rb;

	atomic_fetch_add_explicit(&fib_threads, 1, memory_order_relaxed);
	if (k < 2)
		return p;
	if (pthread_create(&a, NULL, fib_thread, (void *)(intptr_t)(k - 1)) != 0)
		return (void *)(intptr_t)-1;
	if (pthread_create(&b, NULL, fib_thread, (void *)(intptr_t)(k - 2)) != 0) {
		pthread_join(a, NULL);
		return (void *)(intptr_t)-1;
	}
	pthread_join(a, &ra);
	pthread_join(b, &rb);
	if ((intptr_t)ra < 0 || (intptr_t)rb < 0)
		return (void *)(intptr_t)-1;
	return (void *)((intptr_t)ra + (intptr_t)rb);
}

static long fib_serial(int k)
{
	return k < 2 ? k : fib_serial(k - 1) + fib_serial(k - 2);
}

int wb_pthread_fib(int k, long *threads, int64_t *elapsed_ns)
{
	pthread_t t;
	void *r;
	int64_t t0 = wb_now_ns();

	atomic_store(&fib_threads, 0);
	if (pthread_create(&t, NULL, fib_thread, (void *)(intptr_t)k) != 0)
		return EAGAIN;
	pthread_join(t, &r);
	*elapsed_ns = wb_now_ns() - t0;
	*threads = atomic_load(&fib_threads);
	if ((intptr_t)r != fib_serial(k))
		return EAGAIN;
	return 0;
}

static void *chain_thread(void *p)
{
	long k = (long)(intptr_t)p;
	pthread_t t;
	void *r;

	if (k <= 1)
		return (void *)(intptr_t)1;
	if (pthread_create(&t, NULL, chain_thread, (void *)(intptr_t)(k - 1)) != 0)
		return (void *)(intptr_t)1;
	pthread_join(t, &r);
	return (void *)((intptr_t)r + 1);
}

int wb_pthread_chain(long n, int64_t *elapsed_ns)
{
	pthread_t t;
	void *r;
	int64_t t0 = wb_now_ns();

	if (pthread_create(&t, NULL, chain_thread, (void *)(intptr_t)n) != 0)
		return EAGAIN;
	pthread_join(t, &r);
	*elapsed_ns = wb_now_ns() - t0;
	/* The chain stops early where pthread_create failed. */
	return (intptr_t)r == n ? 0 : EAGAIN;
}

struct spread {
	int threads;
	long iters;
	uint64_t (*work)(long);
	_Atomic uint64_t sink;
};

static void *spread_one(void *p)
{
	struct spread *s = p;
	atomic_fetch_add_explicit(&s->sink, s->work(s->iters), memory_order_relaxed);
	return NULL;
}

static void *spread_driver(void *p)
{
	struct spread *s = p;
	pthread_t t[16];
	int made = 0, rc = 0;
	for (; made < s->threads && made < 16; made++)
		if ((rc = pthread_create(&t[made], NULL, spread_one, s)) != 0)
			break;
	for (int i = 0; i < made; i++)
		pthread_join(t[i], NULL);
	return (void *)(intptr_t)rc;
}

int wb_pthread_spread(long n, int threads, long iters, uint64_t (*work)(long), long pause_ns,
		      int64_t *elapsed_ns)
{
	struct spread s = {.threads = threads, .iters = iters, .work = work};
	int64_t el = 0;
	for (long r = 0; r < n; r++) {
		struct timespec d = {pause_ns / 1000000000, pause_ns % 1000000000};
		while (nanosleep(&d, &d) != 0 && errno == EINTR)
			;
		int64_t t0 = wb_now_ns();
		pthread_t drv;
		void *res;
		int rc = pthread_create(&drv, NULL, spread_driver, &s);
		if (rc)
			return rc;
		pthread_join(drv, &res);
		if (res)
			return (int)(intptr_t)res;
		el += wb_now_ns() - t0;
	}
	*elapsed_ns = el;
	return 0;
}
