/* Thread lifecycle: pthread_create/join/detach/exit/self/equal/once, the
 * thread attributes (detachstate, stacksize - which ends at the guard page -,
 * stack, guardsize), the glibc
 * extensions pthread_getattr_np and pthread_setname_np/getname_np, thread-
 * local storage, and volume: 100,000 sequential create+join and 10,000
 * threads alive at once. */
#include "ptest.h"

#include <limits.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <unistd.h>

#define KIB 1024L

static void *return_arg_plus_one(void *arg)
{
	return (void *)((uintptr_t)arg + 1);
}

static void test_create_join_passes_arg_and_result(void **state)
{
	pthread_t t[8];
	for (uintptr_t i = 0; i < 8; i++)
		t[i] = px_start(NULL, return_arg_plus_one, (void *)(i * 10));
	for (uintptr_t i = 0; i < 8; i++)
		PX_EQ((uintptr_t)px_join(t[i]), i * 10 + 1);

	/* join may discard the value. */
	pthread_t u = px_start(NULL, return_arg_plus_one, NULL);
	PX_OK(pthread_join(u, NULL));
}

static atomic_int after_exit;

static void exit_from_depth(int depth)
{
	/* Through a pointer, so the compiler keeps the frames (and does not
	 * see a recursion without a base case). */
	void (*volatile next)(int) = exit_from_depth;
	if (depth == 0)
		pthread_exit((void *)(uintptr_t)0x5eed);
	next(depth - 1);
	atomic_store(&after_exit, 1);
}

static void *exits_deep(void *arg)
{
	exit_from_depth(5);
	atomic_store(&after_exit, 1);
	return NULL;
}

/* pthread_exit from a nested call ends the thread with its value; nothing
 * after the call runs. */
static void test_exit_from_nested_call(void **state)
{
	atomic_store(&after_exit, 0);
	PX_EQ((uintptr_t)px_join(px_start(NULL, exits_deep, NULL)), 0x5eed);
	PX_EQ(atomic_load(&after_exit), 0);
}

struct self_check {
	pthread_t seen;
	sem_t ready, release;
};

static void *report_self(void *arg)
{
	struct self_check *c = arg;
	c->seen = pthread_self();
	PX_TRUE(pthread_equal(pthread_self(), pthread_self()), "self equals self");
	sem_post(&c->ready);
	while (sem_wait(&c->release) != 0)
		;
	return NULL;
}

/* pthread_self in the new thread is the id pthread_create returned; ids of
 * distinct live threads differ. */
static void test_self_and_equal(void **state)
{
	struct self_check a, b;
	PX_SYSOK(sem_init(&a.ready, 0, 0));
	PX_SYSOK(sem_init(&a.release, 0, 0));
	PX_SYSOK(sem_init(&b.ready, 0, 0));
	PX_SYSOK(sem_init(&b.release, 0, 0));
	pthread_t ta = px_start(NULL, report_self, &a);
	pthread_t tb = px_start(NULL, report_self, &b);
	PX_SYSOK(sem_wait(&a.ready));
	PX_SYSOK(sem_wait(&b.ready));

	PX_TRUE(pthread_equal(a.seen, ta), "thread a's self is its id");
	PX_TRUE(pthread_equal(b.seen, tb), "thread b's self is its id");
	PX_TRUE(!pthread_equal(ta, tb), "two live threads have different ids");
	PX_TRUE(!pthread_equal(ta, pthread_self()), "a differs from main");
	PX_TRUE(pthread_equal(pthread_self(), pthread_self()), "main equals main");

	PX_SYSOK(sem_post(&a.release));
	PX_SYSOK(sem_post(&b.release));
	px_join(ta);
	px_join(tb);
	sem_destroy(&a.ready);
	sem_destroy(&a.release);
	sem_destroy(&b.ready);
	sem_destroy(&b.release);
}

/* Detached threads touch only static objects, which outlive them. */
static sem_t detached_done;
static atomic_int detached_ran;

static void *detached_body(void *arg)
{
	if (arg)
		PX_OK(pthread_detach(pthread_self()));
	atomic_fetch_add(&detached_ran, 1);
	sem_post(&detached_done);
	return NULL;
}

/* A thread detached by its creator, by itself, or created detached runs to
 * completion. */
static void test_detach(void **state)
{
	PX_SYSOK(sem_init(&detached_done, 0, 0));
	atomic_store(&detached_ran, 0);

	pthread_t t = px_start(NULL, detached_body, NULL);
	PX_OK(pthread_detach(t));

	px_start(NULL, detached_body, (void *)1);

	pthread_attr_t a;
	PX_OK(pthread_attr_init(&a));
	PX_OK(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED));
	for (int i = 0; i < 8; i++)
		px_start(&a, detached_body, NULL);
	PX_OK(pthread_attr_destroy(&a));

	for (int i = 0; i < 10; i++) {
		struct timespec ts = px_deadline(CLOCK_REALTIME, 10 * PX_NS_PER_S);
		PX_SYSOK(sem_timedwait(&detached_done, &ts));
	}
	PX_EQ(atomic_load(&detached_ran), 10);
}

static void test_attr_detachstate(void **state)
{
	pthread_attr_t a;
	int v = -1;
	PX_OK(pthread_attr_init(&a));
	PX_OK(pthread_attr_getdetachstate(&a, &v));
	PX_EQ(v, PTHREAD_CREATE_JOINABLE);
	PX_OK(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED));
	PX_OK(pthread_attr_getdetachstate(&a, &v));
	PX_EQ(v, PTHREAD_CREATE_DETACHED);
	PX_OK(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_JOINABLE));
	PX_OK(pthread_attr_getdetachstate(&a, &v));
	PX_EQ(v, PTHREAD_CREATE_JOINABLE);
	/* "shall fail" in POSIX. */
	PX_ERR(pthread_attr_setdetachstate(&a, 12345), EINVAL);
	PX_OK(pthread_attr_getdetachstate(&a, &v));
	PX_EQ(v, PTHREAD_CREATE_JOINABLE);
	PX_OK(pthread_attr_destroy(&a));
}

/* Recurse until about `bytes` of stack are used, writing every frame; the
 * result depends on all frames so the compiler keeps them. */
static __attribute__((noinline)) long burn_stack(long bytes)
{
	volatile char frame[1024];
	for (size_t i = 0; i < sizeof frame; i += 64)
		frame[i] = (char)(bytes + (long)i);
	long r = frame[bytes % 64];
	if (bytes > (long)sizeof frame)
		r += burn_stack(bytes - (long)sizeof frame);
	return r + frame[0];
}

static void *burn_stack_body(void *arg)
{
	return (void *)burn_stack((long)(uintptr_t)arg);
}

/* A thread that runs down the whole stack size it was made with reaches
 * its guard page: the size asked for includes the implementation's own
 * bookkeeping at its top (glibc: the thread descriptor and static TLS),
 * it is not added to it. Checked in a child, which dies of the fault. */
static void test_stack_size_ends_at_the_guard(void **state)
{
#if defined(__SANITIZE_ADDRESS__)
	PX_SKIP("ASan's own stack overflow handling");
#else
	fflush(NULL);
	pid_t pid = fork();
	PX_TRUE(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		pthread_attr_t a;
		pthread_t t;
		if (pthread_attr_init(&a) || pthread_attr_setstacksize(&a, 64 * KIB) ||
		    pthread_attr_setguardsize(&a, (size_t)sysconf(_SC_PAGESIZE)) ||
		    pthread_create(&t, &a, burn_stack_body, (void *)(uintptr_t)(64 * KIB)))
			_exit(2);
		pthread_join(t, NULL);
		_exit(0); /* ran 64 KiB down a 64 KiB stack: no guard hit */
	}
	int status = px_wait_child(pid, 20);
	PX_TRUE(status != -1, "the child did not end within 20 s");
	PX_TRUE(WIFSIGNALED(status), "the child %s %d, not killed by its guard page",
		WIFEXITED(status) ? "exited" : "ended",
		WIFEXITED(status) ? WEXITSTATUS(status) : status);
#endif
}

/* The stack of the calling thread according to pthread_getattr_np (glibc
 * extension), as [lo, lo + size). */
static void own_stack(char **lo, size_t *size)
{
	pthread_attr_t a;
	void *addr;
	PX_OK(pthread_getattr_np(pthread_self(), &a));
	PX_OK(pthread_attr_getstack(&a, &addr, size));
	PX_OK(pthread_attr_destroy(&a));
	*lo = addr;
}

struct stack_report {
	char *lo; /* getattr_np's view of the stack */
	size_t size;
	char *local; /* address of a local variable */
	size_t guard;
	int detach;
};

static void *report_stack(void *arg)
{
	struct stack_report *r = arg;
	char local;
	pthread_attr_t a;
	own_stack(&r->lo, &r->size);
	r->local = &local;
	PX_OK(pthread_getattr_np(pthread_self(), &a));
	PX_OK(pthread_attr_getguardsize(&a, &r->guard));
	PX_OK(pthread_attr_getdetachstate(&a, &r->detach));
	PX_OK(pthread_attr_destroy(&a));
	/* Touch most of the stack we were given. */
	burn_stack((long)(r->size / 2));
	return NULL;
}

static void test_attr_stacksize(void **state)
{
	pthread_attr_t a;
	size_t v = 0;
	long min = sysconf(_SC_THREAD_STACK_MIN);
	if (min < 0)
		min = PTHREAD_STACK_MIN;

	PX_OK(pthread_attr_init(&a));
	PX_OK(pthread_attr_getstacksize(&a, &v));
	PX_CMP(v, >=, min);
	/* "shall fail" in POSIX. */
	PX_ERR(pthread_attr_setstacksize(&a, (size_t)min - 1), EINVAL);

	size_t sizes[] = {(size_t)min, 64 * KIB, 256 * KIB, 1024 * KIB};
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		PX_OK(pthread_attr_setstacksize(&a, sizes[i]));
		PX_OK(pthread_attr_getstacksize(&a, &v));
		PX_EQ(v, sizes[i]);
		/* The attribute object may be destroyed once the thread exists. */
		pthread_attr_t b;
		PX_OK(pthread_attr_init(&b));
		PX_OK(pthread_attr_setstacksize(&b, sizes[i]));
		struct stack_report r;
		memset(&r, 0, sizeof r);
		pthread_t t = px_start(&b, report_stack, &r);
		PX_OK(pthread_attr_destroy(&b));
		px_join(t);
		/* getattr_np (glibc) reports at least what was asked for, and the
		 * thread's locals lie inside it. */
		PX_CMP(r.size, >=, sizes[i]);
		PX_TRUE(r.local >= r.lo && r.local < r.lo + r.size, "local %p in [%p, +%zu)",
			(void *)r.local, (void *)r.lo, r.size);
		/* Half of the smallest stack is enough for real work. */
		PX_OK(pthread_join(px_start(&a, burn_stack_body, (void *)(uintptr_t)(sizes[i] / 2)),
				   NULL));
	}
	PX_OK(pthread_attr_destroy(&a));
}

/* A stack the caller provides is the one the thread runs on. */
static void test_attr_stack(void **state)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t size = 256 * KIB;
	void *mem = NULL;
	PX_OK(posix_memalign(&mem, (size_t)page, size));

	pthread_attr_t a;
	void *addr = NULL;
	size_t got = 0;
	PX_OK(pthread_attr_init(&a));
	PX_OK(pthread_attr_setstack(&a, mem, size));
	PX_OK(pthread_attr_getstack(&a, &addr, &got));
	PX_EQ_PTR(addr, mem);
	PX_EQ(got, size);

	struct stack_report r;
	memset(&r, 0, sizeof r);
	px_join(px_start(&a, report_stack, &r));
	PX_TRUE(r.local >= (char *)mem && r.local < (char *)mem + size,
		"local %p in the user stack [%p, +%zu)", (void *)r.local, mem, size);
	PX_TRUE(r.lo >= (char *)mem && r.lo + r.size <= (char *)mem + size,
		"getattr_np's stack [%p, +%zu) inside the user stack [%p, +%zu)", (void *)r.lo,
		r.size, mem, size);

	/* The same stack again, once the first thread is joined. */
	PX_EQ((uintptr_t)px_join(px_start(&a, return_arg_plus_one, (void *)41)), 42);
	PX_OK(pthread_attr_destroy(&a));

	/* "shall fail" in POSIX: a stack smaller than PTHREAD_STACK_MIN. */
	long min = sysconf(_SC_THREAD_STACK_MIN);
	PX_OK(pthread_attr_init(&a));
	PX_ERR(pthread_attr_setstack(&a, mem, (size_t)min - 1), EINVAL);
	PX_OK(pthread_attr_destroy(&a));
	free(mem);
}

static void test_attr_guardsize(void **state)
{
	long page = sysconf(_SC_PAGESIZE);
	pthread_attr_t a;
	size_t v = 0;
	PX_OK(pthread_attr_init(&a));
	PX_OK(pthread_attr_getguardsize(&a, &v));
	/* POSIX: getguardsize returns what was set, even where the
	 * implementation rounds it up to whole pages internally. */
	size_t sizes[] = {0, (size_t)page, 2 * (size_t)page, (size_t)page + 1};
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		PX_OK(pthread_attr_setguardsize(&a, sizes[i]));
		PX_OK(pthread_attr_getguardsize(&a, &v));
		PX_EQ(v, sizes[i]);
		PX_OK(pthread_attr_setstacksize(&a, 128 * KIB));
		struct stack_report r;
		memset(&r, 0, sizeof r);
		px_join(px_start(&a, report_stack, &r));
		/* getattr_np (glibc) reports the guard in effect: at least the
		 * whole pages asked for. */
		PX_CMP(r.guard, >=, sizes[i] / (size_t)page * (size_t)page);
	}
	PX_OK(pthread_attr_destroy(&a));
}

static sem_t getattr_done;

static void *report_stack_detached(void *arg)
{
	report_stack(arg);
	sem_post(&getattr_done);
	return NULL;
}

/* pthread_getattr_np (glibc extension) on the main thread and on a thread
 * created detached. */
static void test_getattr_np(void **state)
{
	char local;
	char *lo;
	size_t size;
	own_stack(&lo, &size);
	PX_CMP(size, >, 0);
	PX_TRUE(&local >= lo && &local < lo + size, "main's local %p in [%p, +%zu)", (void *)&local,
		(void *)lo, size);

	pthread_attr_t a;
	int detach = -1;
	PX_OK(pthread_getattr_np(pthread_self(), &a));
	PX_OK(pthread_attr_getdetachstate(&a, &detach));
	PX_EQ(detach, PTHREAD_CREATE_JOINABLE);
	PX_OK(pthread_attr_destroy(&a));

	/* The detached thread reports into static storage, then posts. */
	static struct stack_report r;
	memset(&r, 0, sizeof r);
	PX_SYSOK(sem_init(&getattr_done, 0, 0));
	PX_OK(pthread_attr_init(&a));
	PX_OK(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED));
	PX_OK(pthread_attr_setstacksize(&a, 128 * KIB));
	px_start(&a, report_stack_detached, &r);
	PX_OK(pthread_attr_destroy(&a));
	struct timespec ts = px_deadline(CLOCK_REALTIME, 10 * PX_NS_PER_S);
	PX_SYSOK(sem_timedwait(&getattr_done, &ts));
	PX_EQ(r.detach, PTHREAD_CREATE_DETACHED);
	PX_CMP(r.size, >=, 128 * KIB);
	PX_TRUE(r.local >= r.lo && r.local < r.lo + r.size, "local %p in [%p, +%zu)",
		(void *)r.local, (void *)r.lo, r.size);
}

struct name_check {
	sem_t named, checked;
	char seen[16];
};

static void *name_self(void *arg)
{
	struct name_check *c = arg;
	PX_OK(pthread_setname_np(pthread_self(), "px-self"));
	PX_OK(pthread_getname_np(pthread_self(), c->seen, sizeof c->seen));
	sem_post(&c->named);
	while (sem_wait(&c->checked) != 0)
		;
	return NULL;
}

/* pthread_setname_np/getname_np (glibc extensions): a thread names itself,
 * another thread renames it; names are at most 15 characters plus NUL. */
static void test_setname_getname_np(void **state)
{
	struct name_check c;
	char buf[16];
	PX_SYSOK(sem_init(&c.named, 0, 0));
	PX_SYSOK(sem_init(&c.checked, 0, 0));
	pthread_t t = px_start(NULL, name_self, &c);
	PX_SYSOK(sem_wait(&c.named));
	PX_EQ_STR(c.seen, "px-self");
	PX_OK(pthread_getname_np(t, buf, sizeof buf));
	PX_EQ_STR(buf, "px-self");

	PX_OK(pthread_setname_np(t, "px-123456789012")); /* 15 characters */
	PX_OK(pthread_getname_np(t, buf, sizeof buf));
	PX_EQ_STR(buf, "px-123456789012");
	PX_ERR(pthread_setname_np(t, "px-1234567890123"), ERANGE); /* 16 */
	PX_OK(pthread_getname_np(t, buf, sizeof buf));
	PX_EQ_STR(buf, "px-123456789012");
	PX_ERR(pthread_getname_np(t, buf, 4), ERANGE);

	PX_SYSOK(sem_post(&c.checked));
	px_join(t);
	sem_destroy(&c.named);
	sem_destroy(&c.checked);
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static atomic_int once_runs, once_done;

static void once_init(void)
{
	atomic_fetch_add(&once_runs, 1);
	/* Give the other callers time to arrive and wait. */
	px_sleep_ns(50 * PX_NS_PER_MS);
	atomic_store(&once_done, 1);
}

static void *call_once(void *arg)
{
	PX_OK(pthread_once(&once, once_init));
	/* No caller returns before the init routine has finished. */
	PX_EQ(atomic_load(&once_done), 1);
	return NULL;
}

static void test_once_runs_once(void **state)
{
	pthread_t t[16];
	for (int i = 0; i < 16; i++)
		t[i] = px_start(NULL, call_once, NULL);
	call_once(NULL);
	for (int i = 0; i < 16; i++)
		px_join(t[i]);
	PX_EQ(atomic_load(&once_runs), 1);
	call_once(NULL);
	PX_EQ(atomic_load(&once_runs), 1);
}

static _Thread_local int tls_value = 7;

static void *tls_body(void *arg)
{
	/* Every thread starts with the initial value and its own copy. */
	PX_EQ(tls_value, 7);
	tls_value = (int)(uintptr_t)arg;
	for (int i = 0; i < 20; i++) {
		px_sleep_ns(PX_NS_PER_MS);
		PX_EQ(tls_value, (int)(uintptr_t)arg);
	}
	return &tls_value;
}

/* _Thread_local (C11) variables are per thread, also across blocking. */
static void test_thread_local_storage(void **state)
{
	if (px_shared_tls())
		PX_SKIP("thread-locals belong to weft's worker here, not to the thread "
			"(docs/posix-coverage.md)");
	pthread_t t[8];
	tls_value = 1000;
	for (uintptr_t i = 0; i < 8; i++)
		t[i] = px_start(NULL, tls_body, (void *)(i + 1));
	void *addr[8];
	for (int i = 0; i < 8; i++)
		addr[i] = px_join(t[i]);
	PX_EQ(tls_value, 1000);
	for (int i = 0; i < 8; i++) {
		PX_TRUE(addr[i] != (void *)&tls_value, "thread %d's copy differs from main's", i);
		for (int j = 0; j < i; j++)
			PX_TRUE(addr[i] != addr[j], "threads %d and %d have distinct copies", i, j);
	}
}

/* A tree of threads: each creates and joins its children. */
static void *spawn_tree(void *arg)
{
	uintptr_t depth = (uintptr_t)arg;
	if (depth == 0)
		return (void *)1;
	pthread_t t[4];
	uintptr_t n = 1;
	for (int i = 0; i < 4; i++)
		t[i] = px_start(NULL, spawn_tree, (void *)(depth - 1));
	for (int i = 0; i < 4; i++)
		n += (uintptr_t)px_join(t[i]);
	return (void *)n;
}

static void test_threads_create_threads(void **state)
{
	/* 1 + 4 + 16 + 64 + 256 threads */
	PX_EQ((uintptr_t)px_join(px_start(NULL, spawn_tree, (void *)4)), 341);
}

static void test_create_join_100000_sequential(void **state)
{
	for (uintptr_t i = 0; i < 100000; i++) {
		pthread_t t;
		void *ret;
		int e = pthread_create(&t, NULL, return_arg_plus_one, (void *)i);
		if (e != 0)
			fail_msg("pthread_create #%lu: %s", (unsigned long)i, px_errname(e));
		e = pthread_join(t, &ret);
		if (e != 0 || (uintptr_t)ret != i + 1)
			fail_msg("pthread_join #%lu: %s, value %lu", (unsigned long)i,
				 px_errname(e), (unsigned long)(uintptr_t)ret);
	}
}

#define MANY 10000

static struct {
	pthread_mutex_t m;
	pthread_cond_t arrived_cv, gate_cv;
	int arrived;
	bool open;
} gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, false};

static void *wait_at_gate(void *arg)
{
	PX_OK(pthread_mutex_lock(&gate.m));
	gate.arrived++;
	PX_OK(pthread_cond_signal(&gate.arrived_cv));
	while (!gate.open)
		PX_OK(pthread_cond_wait(&gate.gate_cv, &gate.m));
	PX_OK(pthread_mutex_unlock(&gate.m));
	return arg;
}

/* 10,000 threads with small stacks alive at the same time, all blocked on one
 * condition variable, then released by one broadcast. Should the system's
 * thread limit be lower (EAGAIN), the test goes as far as it can. */
static void test_10000_alive_at_once(void **state)
{
	static pthread_t t[MANY];
	pthread_attr_t a;
	PX_OK(pthread_attr_init(&a));
	long min = sysconf(_SC_THREAD_STACK_MIN);
	PX_OK(pthread_attr_setstacksize(&a, min > 64 * KIB ? (size_t)min : 64 * KIB));

	gate.arrived = 0;
	gate.open = false;
	int n = 0;
	for (; n < MANY; n++) {
		int e = pthread_create(&t[n], &a, wait_at_gate, (void *)(uintptr_t)n);
		if (e == EAGAIN)
			break;
		if (e != 0)
			fail_msg("pthread_create #%d: %s", n, px_errname(e));
	}
	PX_OK(pthread_attr_destroy(&a));
	if (n < MANY)
		printf("[  NOTE    ] the system allowed only %d threads alive at once\n", n);
	PX_CMP(n, >=, 1000);

	struct timespec until = px_deadline(CLOCK_REALTIME, 30 * PX_NS_PER_S);
	PX_OK(pthread_mutex_lock(&gate.m));
	while (gate.arrived < n)
		PX_OK(pthread_cond_timedwait(&gate.arrived_cv, &gate.m, &until));
	gate.open = true;
	PX_OK(pthread_cond_broadcast(&gate.gate_cv));
	PX_OK(pthread_mutex_unlock(&gate.m));

	for (int i = 0; i < n; i++)
		PX_EQ((uintptr_t)px_join(t[i]), i);
}

/* Errors POSIX lists under "may fail"; glibc detects them. */
static void test_thread_may_fail(void **state)
{
	PX_ERR(pthread_join(pthread_self(), NULL), EDEADLK);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		PX_TEST(test_create_join_passes_arg_and_result),
		PX_TEST(test_exit_from_nested_call),
		PX_TEST(test_self_and_equal),
		PX_TEST(test_detach),
		PX_TEST(test_attr_detachstate),
		PX_TEST(test_attr_stacksize),
		PX_TEST(test_stack_size_ends_at_the_guard),
		PX_TEST(test_attr_stack),
		PX_TEST(test_attr_guardsize),
		PX_TEST(test_getattr_np),
		PX_TEST(test_setname_getname_np),
		PX_TEST(test_once_runs_once),
		PX_TEST(test_thread_local_storage),
		PX_TEST(test_threads_create_threads),
		PX_TEST(test_create_join_100000_sequential),
		PX_TEST(test_10000_alive_at_once),
		PX_TEST(test_thread_may_fail),
	};
	return PX_RUN(argc, argv, tests);
}
