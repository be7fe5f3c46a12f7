/* Scheduling: sched_yield hands the CPU to another thread on the same CPU
 * (threads pinned to one CPU take turns through sched_yield alone), yielding
 * threads all make progress, CPU affinity (the glibc extensions
 * pthread_setaffinity_np/getaffinity_np/pthread_attr_setaffinity_np, and
 * sched_setaffinity of the calling thread), the
 * scheduling attributes and parameters (SCHED_OTHER, priority 0; invalid
 * policies), and pthread_getcpuclockid: a clock that advances while its thread
 * computes and hardly at all while it sleeps. */
#include "ptest.h"

#include <semaphore.h>

/* Pin the calling thread to cpu; false if the system does not allow it. */
static bool pin_self(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

#define N_TURNS 3
#define ROUNDS  500

struct turns {
	int cpu; /* -1: not pinned */
	int n;   /* players */
	atomic_int turn;
	atomic_int pinned_failed;
};

struct player {
	struct turns *t;
	int me;
};

/* Wait for my turn with sched_yield only, take it, pass it on. With all
 * players pinned to one CPU, only a working sched_yield lets the holder of
 * the turn run. */
static void *take_turns(void *arg)
{
	struct player *p = arg;
	struct turns *t = p->t;
	if (t->cpu >= 0 && !pin_self(t->cpu))
		atomic_store(&t->pinned_failed, 1);
	/* A hang detector only: a yield may hand the CPU to another process
	 * for a whole time slice on a loaded machine. */
	long long end = px_now(CLOCK_MONOTONIC) + 45 * PX_NS_PER_S;
	for (int r = 0; r < ROUNDS; r++) {
		long spins = 0;
		while (atomic_load(&t->turn) % t->n != p->me) {
			sched_yield();
			/* The clock only now and then: it may be a system call. */
			if (++spins % 1024 == 0 && px_now(CLOCK_MONOTONIC) > end)
				fail_msg("player %d never got its turn in round %d", p->me, r);
		}
		atomic_fetch_add(&t->turn, 1);
	}
	return NULL;
}

static void play(int n)
{
	int cpu;
	px_usable_cpus(&cpu);
	struct turns t = {.cpu = cpu, .n = n};
	struct player p[N_TURNS];
	pthread_t th[N_TURNS];
	for (int i = 0; i < n; i++) {
		p[i] = (struct player){&t, i};
		th[i] = px_start(NULL, take_turns, &p[i]);
	}
	for (int i = 0; i < n; i++)
		px_join(th[i]);
	if (atomic_load(&t.pinned_failed))
		printf("[  NOTE    ] could not pin the players to CPU %d; they ran unpinned\n",
		       cpu);
	PX_EQ(atomic_load(&t.turn), n * ROUNDS);
}

/* Two threads on one CPU alternate by sched_yield. */
static void test_yield_lets_other_thread_run(void **state)
{
	play(2);
}

/* Three threads on one CPU take turns in order: every yielding thread gets
 * to run, none is passed over for good. */
static void test_yield_round_robin(void **state)
{
	play(3);
}

#define N_BUSY 4

struct busy {
	int cpu;
	atomic_int stop;
	atomic_long count[N_BUSY];
};

struct busy_arg {
	struct busy *b;
	int me;
};

static void *count_and_yield(void *arg)
{
	struct busy_arg *a = arg;
	if (a->b->cpu >= 0)
		pin_self(a->b->cpu);
	while (!atomic_load(&a->b->stop)) {
		atomic_fetch_add(&a->b->count[a->me], 1);
		sched_yield();
	}
	return NULL;
}

static bool all_progressed(struct busy *b, long n)
{
	for (int i = 0; i < N_BUSY; i++)
		if (atomic_load(&b->count[i]) < n)
			return false;
	return true;
}

/* Busy threads that yield, all on one CPU: every one of them makes progress
 * (fairness among equals; nothing is asserted about how fast). */
static void test_busy_yielders_all_progress(void **state)
{
	struct busy b = {.stop = 0};
	px_usable_cpus(&b.cpu);
	struct busy_arg a[N_BUSY];
	pthread_t t[N_BUSY];
	for (int i = 0; i < N_BUSY; i++) {
		a[i] = (struct busy_arg){&b, i};
		t[i] = px_start(NULL, count_and_yield, &a[i]);
	}
	PX_WAIT(all_progressed(&b, 1000), 20);
	atomic_store(&b.stop, 1);
	for (int i = 0; i < N_BUSY; i++)
		px_join(t[i]);
}

static void get_affinity(pthread_t t, cpu_set_t *set)
{
	CPU_ZERO(set);
	PX_OK(pthread_getaffinity_np(t, sizeof *set, set));
	PX_CMP(CPU_COUNT(set), >, 0);
}

static void *report_affinity(void *arg)
{
	get_affinity(pthread_self(), arg);
	return NULL;
}

static void *park_on_sem(void *arg)
{
	while (sem_wait(arg) != 0)
		;
	return NULL;
}

/* pthread_setaffinity_np then getaffinity_np gives back the same set, for the
 * calling thread and for another one; new threads inherit the creator's set
 * (Linux semantics, which the glibc extension exposes). */
static void test_affinity_round_trip(void **state)
{
	cpu_set_t orig, set, got;
	get_affinity(pthread_self(), &orig);
	int tried = 0;
	for (int cpu = 0; cpu < CPU_SETSIZE && tried < 4; cpu++) {
		if (!CPU_ISSET(cpu, &orig))
			continue;
		tried++;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		PX_OK(pthread_setaffinity_np(pthread_self(), sizeof set, &set));
		get_affinity(pthread_self(), &got);
		PX_TRUE(CPU_EQUAL(&got, &set), "affinity is just CPU %d", cpu);

		/* Inherited by a new thread. */
		px_join(px_start(NULL, report_affinity, &got));
		PX_TRUE(CPU_EQUAL(&got, &set), "the new thread inherited CPU %d", cpu);
	}
	PX_OK(pthread_setaffinity_np(pthread_self(), sizeof orig, &orig));
	get_affinity(pthread_self(), &got);
	PX_TRUE(CPU_EQUAL(&got, &orig), "the original affinity is back");

	/* Another thread's affinity. */
	sem_t s;
	PX_SYSOK(sem_init(&s, 0, 0));
	pthread_t t = px_start(NULL, park_on_sem, &s);
	int first;
	px_usable_cpus(&first);
	CPU_ZERO(&set);
	CPU_SET(first, &set);
	PX_OK(pthread_setaffinity_np(t, sizeof set, &set));
	get_affinity(t, &got);
	PX_TRUE(CPU_EQUAL(&got, &set), "the other thread's affinity is CPU %d", first);
	PX_SYSOK(sem_post(&s));
	px_join(t);
	sem_destroy(&s);
}

struct bystander {
	atomic_int go, done;
	int wrong; /* looks at its own affinity that found it changed */
	cpu_set_t expect;
};

static void *look_at_own_affinity(void *arg)
{
	struct bystander *b = arg;
	PX_WAIT(atomic_load(&b->go), 10);
	for (int i = 0; i < 200; i++) {
		cpu_set_t got;
		CPU_ZERO(&got);
		PX_SYSOK(sched_getaffinity(0, sizeof got, &got));
		b->wrong += !CPU_EQUAL(&got, &b->expect);
		sched_yield();
	}
	atomic_store(&b->done, 1);
	return NULL;
}

/* sched_setaffinity(0, ...) is the calling thread's, as on Linux: it and
 * sched_getaffinity(0, ...) round-trip for it, and threads that did not
 * call it keep their own set - under weft too, where the kernel thread the
 * caller happened to run on also runs others. */
static void test_sched_setaffinity_is_per_thread(void **state)
{
	int first;
	int n = px_usable_cpus(&first);
	if (n < 2)
		PX_SKIP("one usable CPU");
	cpu_set_t orig, one, got;
	PX_SYSOK(sched_getaffinity(0, sizeof orig, &orig));
	struct bystander b[4];
	pthread_t t[4];
	for (int i = 0; i < 4; i++) {
		memset(&b[i], 0, sizeof b[i]);
		b[i].expect = orig;
		t[i] = px_start(NULL, look_at_own_affinity, &b[i]);
	}
	CPU_ZERO(&one);
	CPU_SET(first, &one);
	PX_SYSOK(sched_setaffinity(0, sizeof one, &one));
	for (int i = 0; i < 4; i++)
		atomic_store(&b[i].go, 1);
	for (int i = 0; i < 200; i++) {
		CPU_ZERO(&got);
		PX_SYSOK(sched_getaffinity(0, sizeof got, &got));
		PX_TRUE(CPU_EQUAL(&got, &one), "the caller's own affinity is CPU %d", first);
		sched_yield();
	}
	for (int i = 0; i < 4; i++) {
		px_join(t[i]);
		PX_EQ(b[i].wrong, 0);
	}
	PX_SYSOK(sched_setaffinity(0, sizeof orig, &orig));
	PX_SYSOK(sched_getaffinity(0, sizeof got, &got));
	PX_TRUE(CPU_EQUAL(&got, &orig), "the original affinity is back");
}

/* pthread_attr_setaffinity_np: the thread starts with the given set. */
static void test_attr_affinity(void **state)
{
	int first;
	px_usable_cpus(&first);
	cpu_set_t set, got;
	CPU_ZERO(&set);
	CPU_SET(first, &set);
	pthread_attr_t a;
	PX_OK(pthread_attr_init(&a));
	PX_OK(pthread_attr_setaffinity_np(&a, sizeof set, &set));
	CPU_ZERO(&got);
	PX_OK(pthread_attr_getaffinity_np(&a, sizeof got, &got));
	PX_TRUE(CPU_EQUAL(&got, &set), "attr affinity round trip");
	px_join(px_start(&a, report_affinity, &got));
	PX_TRUE(CPU_EQUAL(&got, &set), "the thread runs on CPU %d only", first);
	PX_OK(pthread_attr_destroy(&a));
}

static void test_attr_sched(void **state)
{
	pthread_attr_t a;
	int v = -1;
	struct sched_param sp;
	PX_OK(pthread_attr_init(&a));

	PX_OK(pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED));
	PX_OK(pthread_attr_getinheritsched(&a, &v));
	PX_EQ(v, PTHREAD_EXPLICIT_SCHED);
	PX_OK(pthread_attr_setinheritsched(&a, PTHREAD_INHERIT_SCHED));
	PX_OK(pthread_attr_getinheritsched(&a, &v));
	PX_EQ(v, PTHREAD_INHERIT_SCHED);

	/* Policies round-trip; a priority is checked against the range of the
	 * policy set before it, so set the policy first. */
	int policies[] = {SCHED_FIFO, SCHED_RR, SCHED_OTHER};
	for (int i = 0; i < 3; i++) {
		int pol = policies[i];
		PX_OK(pthread_attr_setschedpolicy(&a, pol));
		PX_OK(pthread_attr_getschedpolicy(&a, &v));
		PX_EQ(v, pol);
		int lo = sched_get_priority_min(pol), hi = sched_get_priority_max(pol);
		PX_CMP(lo, <=, hi);
		int prios[] = {lo, hi};
		for (int j = 0; j < 2; j++) {
			sp.sched_priority = prios[j];
			PX_OK(pthread_attr_setschedparam(&a, &sp));
			sp.sched_priority = -12345;
			PX_OK(pthread_attr_getschedparam(&a, &sp));
			PX_EQ(sp.sched_priority, prios[j]);
		}
	}
	/* SCHED_OTHER takes priority 0 (its only one on Linux). */
	PX_EQ(sched_get_priority_min(SCHED_OTHER), 0);
	PX_EQ(sched_get_priority_max(SCHED_OTHER), 0);
	sp.sched_priority = 0;
	PX_OK(pthread_attr_setschedparam(&a, &sp));

	/* Scope: POSIX requires at least one of the two. */
	int ok = 0;
	int scopes[] = {PTHREAD_SCOPE_SYSTEM, PTHREAD_SCOPE_PROCESS};
	for (int i = 0; i < 2; i++) {
		int e = pthread_attr_setscope(&a, scopes[i]);
		if (e == ENOTSUP)
			continue;
		PX_OK(e);
		PX_OK(pthread_attr_getscope(&a, &v));
		PX_EQ(v, scopes[i]);
		ok++;
	}
	PX_CMP(ok, >=, 1);

	PX_OK(pthread_attr_destroy(&a));
}

static void *report_sched(void *arg)
{
	int *out = arg;
	struct sched_param sp;
	PX_OK(pthread_getschedparam(pthread_self(), &out[0], &sp));
	out[1] = sp.sched_priority;
	return NULL;
}

/* A thread created with an explicit SCHED_OTHER, priority 0, has it; one
 * created with the default attributes inherits the creator's. */
static void test_create_with_sched_attr(void **state)
{
	int policy;
	struct sched_param sp;
	PX_OK(pthread_getschedparam(pthread_self(), &policy, &sp));
	if (policy != SCHED_OTHER)
		PX_SKIP("the test process does not run under SCHED_OTHER (policy %d)", policy);

	pthread_attr_t a;
	PX_OK(pthread_attr_init(&a));
	PX_OK(pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED));
	PX_OK(pthread_attr_setschedpolicy(&a, SCHED_OTHER));
	sp.sched_priority = 0;
	PX_OK(pthread_attr_setschedparam(&a, &sp));
	int out[2] = {-1, -1};
	px_join(px_start(&a, report_sched, out));
	PX_EQ(out[0], SCHED_OTHER);
	PX_EQ(out[1], 0);
	PX_OK(pthread_attr_destroy(&a));

	out[0] = out[1] = -1;
	px_join(px_start(NULL, report_sched, out));
	PX_EQ(out[0], SCHED_OTHER);
	PX_EQ(out[1], 0);
}

/* pthread_setschedparam/getschedparam: SCHED_OTHER with priority 0 is
 * accepted and reads back, for the caller and for another thread;
 * pthread_setschedprio(0) too. (Invalid policies: test_sched_may_fail.) */
static void test_setschedparam(void **state)
{
	int policy;
	struct sched_param sp;
	PX_OK(pthread_getschedparam(pthread_self(), &policy, &sp));
	if (policy != SCHED_OTHER)
		PX_SKIP("the test process does not run under SCHED_OTHER (policy %d)", policy);
	PX_EQ(sp.sched_priority, 0);

	sem_t s;
	PX_SYSOK(sem_init(&s, 0, 0));
	pthread_t other = px_start(NULL, park_on_sem, &s);
	pthread_t who[] = {pthread_self(), other};
	for (int i = 0; i < 2; i++) {
		sp.sched_priority = 0;
		PX_OK(pthread_setschedparam(who[i], SCHED_OTHER, &sp));
		policy = -1;
		sp.sched_priority = -1;
		PX_OK(pthread_getschedparam(who[i], &policy, &sp));
		PX_EQ(policy, SCHED_OTHER);
		PX_EQ(sp.sched_priority, 0);
		PX_OK(pthread_setschedprio(who[i], 0));
	}
	PX_SYSOK(sem_post(&s));
	px_join(other);
	sem_destroy(&s);
}

/* SCHED_FIFO needs privileges: EPERM is a fine answer (as is ENOTSUP from a
 * runtime without real-time policies). When it is granted, the thread runs
 * with exactly the policy and priority asked for. The thread only reports
 * and ends, so it cannot hog a CPU. */
static void test_fifo_if_permitted(void **state)
{
	int lo = sched_get_priority_min(SCHED_FIFO);
	pthread_attr_t a;
	struct sched_param sp = {.sched_priority = lo};
	PX_OK(pthread_attr_init(&a));
	PX_OK(pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED));
	PX_OK(pthread_attr_setschedpolicy(&a, SCHED_FIFO));
	PX_OK(pthread_attr_setschedparam(&a, &sp));
	int out[2] = {-1, -1};
	pthread_t t;
	int e = pthread_create(&t, &a, report_sched, out);
	PX_OK(pthread_attr_destroy(&a));
	if (e == EPERM || e == ENOTSUP) {
		printf("[  NOTE    ] creating a SCHED_FIFO thread: %s\n", px_errname(e));
	} else {
		PX_OK(e);
		px_join(t);
		PX_EQ(out[0], SCHED_FIFO);
		PX_EQ(out[1], lo);
	}

	/* The same through pthread_setschedparam on a running thread. */
	sem_t s;
	PX_SYSOK(sem_init(&s, 0, 0));
	t = px_start(NULL, park_on_sem, &s);
	e = pthread_setschedparam(t, SCHED_FIFO, &sp);
	if (e == EPERM || e == ENOTSUP) {
		printf("[  NOTE    ] pthread_setschedparam(SCHED_FIFO): %s\n", px_errname(e));
	} else {
		PX_OK(e);
		int policy = -1;
		struct sched_param got = {.sched_priority = -1};
		PX_OK(pthread_getschedparam(t, &policy, &got));
		PX_EQ(policy, SCHED_FIFO);
		PX_EQ(got.sched_priority, lo);
		sp.sched_priority = 0;
		PX_OK(pthread_setschedparam(t, SCHED_OTHER, &sp));
	}
	PX_SYSOK(sem_post(&s));
	px_join(t);
	sem_destroy(&s);
}

struct cpu_phases {
	sem_t go, computed, slept, ack;
};

static void *compute_then_sleep(void *arg)
{
	struct cpu_phases *p = arg;
	while (sem_wait(&p->go) != 0) /* computing starts after the first read */
		;
	px_compute_ms(200);
	sem_post(&p->computed);
	while (sem_wait(&p->ack) != 0)
		;
	px_sleep_ns(300 * PX_NS_PER_MS);
	sem_post(&p->slept);
	while (sem_wait(&p->ack) != 0)
		;
	return NULL;
}

static long long cpu_ns(clockid_t c)
{
	struct timespec ts;
	PX_SYSOK(clock_gettime(c, &ts));
	return px_ts_ns(&ts);
}

/* The clock of pthread_getcpuclockid, read from another thread, advances by
 * a good part of 200 ms of computing and by little over 300 ms of sleep.
 * (The bounds are loose: on a loaded machine the thread may not get the CPU
 * for all its 200 ms.) The thread computes only after the first read: a
 * thread another CPU runs at once could otherwise compute before it. */
static void test_getcpuclockid(void **state)
{
	struct cpu_phases p;
	PX_SYSOK(sem_init(&p.go, 0, 0));
	PX_SYSOK(sem_init(&p.computed, 0, 0));
	PX_SYSOK(sem_init(&p.slept, 0, 0));
	PX_SYSOK(sem_init(&p.ack, 0, 0));
	pthread_t t = px_start(NULL, compute_then_sleep, &p);
	clockid_t c;
	PX_OK(pthread_getcpuclockid(t, &c));
	long long c0 = cpu_ns(c);
	PX_SYSOK(sem_post(&p.go));
	PX_SYSOK(sem_wait(&p.computed));
	long long c1 = cpu_ns(c);
	PX_SYSOK(sem_post(&p.ack));
	PX_SYSOK(sem_wait(&p.slept));
	long long c2 = cpu_ns(c);
	PX_SYSOK(sem_post(&p.ack));
	px_join(t);

	PX_CMP(c0, >=, 0);
	PX_CMP(c1 - c0, >=, 10 * PX_NS_PER_MS);
	PX_CMP(c2 - c1, >=, 0);
	PX_CMP(c2 - c1, <, 100 * PX_NS_PER_MS);

	/* The calling thread's own clock matches CLOCK_THREAD_CPUTIME_ID. */
	PX_OK(pthread_getcpuclockid(pthread_self(), &c));
	long long a = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	px_compute_ms(20);
	long long b = cpu_ns(c);
	long long d = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	PX_CMP(b, >=, a);
	PX_CMP(d, >=, b);
	sem_destroy(&p.computed);
	sem_destroy(&p.slept);
	sem_destroy(&p.ack);
}

/* Errors POSIX lists under "may fail"; glibc reports them, and weft should
 * report the same. */
static void test_sched_may_fail(void **state)
{
	pthread_attr_t a;
	struct sched_param sp;
	int v = -1;
	PX_OK(pthread_attr_init(&a));
	/* An invalid policy: EINVAL (POSIX also allows ENOTSUP), and the
	 * attribute keeps its policy. */
	PX_OK(pthread_attr_setschedpolicy(&a, SCHED_OTHER));
	PX_ERR(pthread_attr_setschedpolicy(&a, 12345), EINVAL);
	PX_OK(pthread_attr_getschedpolicy(&a, &v));
	PX_EQ(v, SCHED_OTHER);
	PX_ERR(pthread_attr_setinheritsched(&a, 12345), EINVAL);
	PX_ERR(pthread_attr_setscope(&a, 12345), EINVAL);
	/* A priority outside the range of the attribute's policy. */
	PX_OK(pthread_attr_setschedpolicy(&a, SCHED_OTHER));
	sp.sched_priority = sched_get_priority_max(SCHED_FIFO);
	PX_ERR(pthread_attr_setschedparam(&a, &sp), EINVAL);
	PX_OK(pthread_attr_destroy(&a));

	/* An invalid policy for a running thread: EINVAL, nothing changes. */
	int policy;
	PX_OK(pthread_getschedparam(pthread_self(), &policy, &sp));
	struct sched_param before = sp;
	int before_policy = policy;
	sp.sched_priority = 0;
	PX_ERR(pthread_setschedparam(pthread_self(), 12345, &sp), EINVAL);
	PX_OK(pthread_getschedparam(pthread_self(), &policy, &sp));
	PX_EQ(policy, before_policy);
	PX_EQ(sp.sched_priority, before.sched_priority);

	/* SCHED_OTHER with a priority other than 0. */
	if (policy == SCHED_OTHER) {
		sp.sched_priority = 5;
		PX_ERR(pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp), EINVAL);
		PX_ERR(pthread_setschedprio(pthread_self(), 5), EINVAL);
	}

	/* An empty CPU set. */
	cpu_set_t set;
	CPU_ZERO(&set);
	PX_ERR(pthread_setaffinity_np(pthread_self(), sizeof set, &set), EINVAL);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		PX_TEST(test_yield_lets_other_thread_run),
		PX_TEST(test_yield_round_robin),
		PX_TEST(test_busy_yielders_all_progress),
		PX_TEST(test_affinity_round_trip),
		PX_TEST(test_attr_affinity),
		PX_TEST(test_sched_setaffinity_is_per_thread),
		PX_TEST(test_attr_sched),
		PX_TEST(test_create_with_sched_attr),
		PX_TEST(test_setschedparam),
		PX_TEST(test_fifo_if_permitted),
		PX_TEST(test_getcpuclockid),
		PX_TEST(test_sched_may_fail),
	};
	return PX_RUN(argc, argv, tests);
}
