/* Signals and threads, fork handlers, and the rest: pthread_sigmask (round
 * trip, per thread, inherited by new threads), pthread_kill (signal 0, a
 * handler that runs in the target thread, a blocked signal pending until
 * unblocked, sigwait, a handler that runs while its thread joins), raise,
 * errno per thread, seteuid/setegid with threads running (every kernel
 * thread changes), pthread_get/setconcurrency,
 * and pthread_atfork with one fork (in the weft modes the runtime's workers
 * run: the child gets them back, runtime/fork.c). */
#include "ptest.h"

#include <dirent.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* The calling thread's mask. */
static sigset_t current_mask(void)
{
	sigset_t s;
	sigemptyset(&s);
	PX_OK(pthread_sigmask(SIG_BLOCK, NULL, &s));
	return s;
}

static sigset_t just(int sig1, int sig2)
{
	sigset_t s;
	sigemptyset(&s);
	if (sig1)
		sigaddset(&s, sig1);
	if (sig2)
		sigaddset(&s, sig2);
	return s;
}

static void test_sigmask_round_trip(void **state)
{
	sigset_t orig, old, now;
	orig = current_mask();
	PX_EQ(sigismember(&orig, SIGUSR1), 0);
	PX_EQ(sigismember(&orig, SIGUSR2), 0);

	sigset_t both = just(SIGUSR1, SIGUSR2);
	PX_OK(pthread_sigmask(SIG_BLOCK, &both, &old));
	PX_EQ(sigismember(&old, SIGUSR1), 0);
	now = current_mask();
	PX_EQ(sigismember(&now, SIGUSR1), 1);
	PX_EQ(sigismember(&now, SIGUSR2), 1);

	sigset_t two = just(SIGUSR2, 0);
	PX_OK(pthread_sigmask(SIG_UNBLOCK, &two, &old));
	PX_EQ(sigismember(&old, SIGUSR2), 1);
	now = current_mask();
	PX_EQ(sigismember(&now, SIGUSR1), 1);
	PX_EQ(sigismember(&now, SIGUSR2), 0);

	PX_OK(pthread_sigmask(SIG_SETMASK, &orig, &old));
	PX_EQ(sigismember(&old, SIGUSR1), 1);
	now = current_mask();
	PX_EQ(sigismember(&now, SIGUSR1), 0);
	PX_EQ(sigismember(&now, SIGUSR2), 0);

	/* "shall fail": an invalid how (with a set, so how matters). */
	PX_ERR(pthread_sigmask(12345, &both, NULL), EINVAL);
	now = current_mask();
	PX_EQ(sigismember(&now, SIGUSR1), 0);
}

static void *unblock_usr1_in_thread(void *arg)
{
	sigset_t m = current_mask();
	/* Inherited from the creator. */
	PX_EQ(sigismember(&m, SIGUSR1), 1);
	sigset_t one = just(SIGUSR1, 0);
	PX_OK(pthread_sigmask(SIG_UNBLOCK, &one, NULL));
	m = current_mask();
	PX_EQ(sigismember(&m, SIGUSR1), 0);
	return NULL;
}

/* A new thread starts with its creator's mask; changing its own mask leaves
 * the creator's alone. */
static void test_sigmask_per_thread(void **state)
{
	sigset_t orig, one = just(SIGUSR1, 0);
	PX_OK(pthread_sigmask(SIG_BLOCK, &one, &orig));
	px_join(px_start(NULL, unblock_usr1_in_thread, NULL));
	sigset_t m = current_mask();
	PX_EQ(sigismember(&m, SIGUSR1), 1);
	PX_OK(pthread_sigmask(SIG_SETMASK, &orig, NULL));
}

/* Which thread ran the SIGUSR2 handler: each thread's own flag. */
static _Thread_local volatile sig_atomic_t got_usr2;

static void on_usr2(int sig)
{
	got_usr2 = 1;
}

struct target {
	bool block_first; /* block SIGUSR2 and check it stays pending */
	atomic_int ready;
	atomic_int unblock;
	int pending_seen;
	int got;
};

static void *wait_for_usr2(void *arg)
{
	struct target *t = arg;
	got_usr2 = 0;
	sigset_t two = just(SIGUSR2, 0);
	if (t->block_first)
		PX_OK(pthread_sigmask(SIG_BLOCK, &two, NULL));
	atomic_store(&t->ready, 1);
	if (t->block_first) {
		PX_WAIT(atomic_load(&t->unblock), 10);
		sigset_t p;
		sigemptyset(&p);
		PX_SYSOK(sigpending(&p));
		t->pending_seen = sigismember(&p, SIGUSR2);
		PX_EQ(got_usr2, 0);
		/* The pending signal is delivered before the unblock returns. */
		PX_OK(pthread_sigmask(SIG_UNBLOCK, &two, NULL));
		t->got = got_usr2;
		return NULL;
	}
	PX_WAIT(got_usr2, 10);
	t->got = got_usr2;
	return NULL;
}

static void test_pthread_kill(void **state)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr2;
	sigemptyset(&sa.sa_mask);
	PX_SYSOK(sigaction(SIGUSR2, &sa, &old));
	got_usr2 = 0;

	/* Signal 0 checks that the thread exists. */
	struct target t = {.block_first = false};
	pthread_t th = px_start(NULL, wait_for_usr2, &t);
	PX_WAIT(atomic_load(&t.ready), 10);
	PX_OK(pthread_kill(th, 0));
	/* "shall fail": an invalid signal number. */
	PX_ERR(pthread_kill(th, 12345), EINVAL);

	/* The handler runs in the target thread, not here. (Where weft's
	 * threads share their worker's thread-locals, this thread may share
	 * the target's: there, only the target's view is checked.) */
	PX_OK(pthread_kill(th, SIGUSR2));
	px_join(th);
	PX_EQ(t.got, 1);
	if (!px_shared_tls())
		PX_EQ(got_usr2, 0);

	/* To a thread blocking it: pending for that thread until unblocked. */
	t = (struct target){.block_first = true};
	th = px_start(NULL, wait_for_usr2, &t);
	PX_WAIT(atomic_load(&t.ready), 10);
	PX_OK(pthread_kill(th, SIGUSR2));
	atomic_store(&t.unblock, 1);
	px_join(th);
	if (!px_weft()) /* weft: sigpending() reports the worker's set */
		PX_EQ(t.pending_seen, 1);
	PX_EQ(t.got, 1);
	if (!px_weft())
		PX_EQ(got_usr2, 0);

	PX_SYSOK(sigaction(SIGUSR2, &old, NULL));
}

/* raise: the handler has run, in the calling thread, when raise returns. */
static void test_raise(void **state)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr2;
	sigemptyset(&sa.sa_mask);
	PX_SYSOK(sigaction(SIGUSR2, &sa, &old));
	got_usr2 = 0;
	PX_SYSOK(raise(SIGUSR2));
	PX_EQ(got_usr2, 1);
	got_usr2 = 0;
	PX_SYSOK(sigaction(SIGUSR2, &old, NULL));
}

static void *wait_in_sigwait(void *arg)
{
	sigset_t one = just(SIGUSR1, 0);
	int sig = 0;
	atomic_store((atomic_int *)arg, 1);
	PX_OK(sigwait(&one, &sig));
	return (void *)(intptr_t)sig;
}

/* A blocked signal sent with pthread_kill is taken by the thread's sigwait. */
static void test_sigwait(void **state)
{
	/* The sigwait's worker is handed to another kernel thread, and the
	 * ULTs queued there go with it: where they share their kernel
	 * thread's thread-locals (sanitizer builds), the test runner's own
	 * would change under it. */
	if (px_shared_tls())
		PX_SKIP("threads share their kernel thread's thread-locals here");
	sigset_t orig, one = just(SIGUSR1, 0);
	PX_OK(pthread_sigmask(SIG_BLOCK, &one, &orig));
	atomic_int ready = 0;
	pthread_t t = px_start(NULL, wait_in_sigwait, &ready);
	PX_WAIT(atomic_load(&ready), 10);
	PX_OK(pthread_kill(t, SIGUSR1));
	PX_EQ((intptr_t)px_join(t), SIGUSR1);
	PX_OK(pthread_sigmask(SIG_SETMASK, &orig, NULL));
}

/* The errno values of the threads of test_errno_per_thread; the main thread
 * uses ERANGE. */
static const int errno_values[] = {EPERM, ENOENT, ESRCH, EINTR, EIO, ENXIO, E2BIG, ENOEXEC};
#define N_ERRNO (int)(sizeof errno_values / sizeof errno_values[0])

static void *keep_errno(void *arg)
{
	int me = (int)(intptr_t)arg;
	errno = errno_values[me];
	for (int i = 0; i < 20; i++) {
		/* Blocking calls let the other threads run (and set their
		 * errno). A successful call may leave anything in errno, but
		 * never another thread's value. */
		sched_yield();
		px_sleep_ns(PX_NS_PER_MS);
		int now = errno;
		for (int j = 0; j < N_ERRNO; j++)
			PX_TRUE(j == me || now != errno_values[j] || now == errno_values[me],
				"thread %d sees thread %d's errno %d", me, j, now);
		PX_TRUE(now != ERANGE, "thread %d sees the main thread's errno", me);
		errno = errno_values[me];
	}
	/* A failing call sets this thread's errno. */
	PX_ERRNO(close(-1), EBADF);
	return NULL;
}

/* errno is per thread. */
static void test_errno_per_thread(void **state)
{
	pthread_t t[N_ERRNO];
	for (int i = 0; i < N_ERRNO; i++)
		t[i] = px_start(NULL, keep_errno, (void *)(intptr_t)i);
	errno = ERANGE;
	for (int i = 0; i < 20; i++) {
		px_sleep_ns(PX_NS_PER_MS);
		int now = errno;
		for (int j = 0; j < N_ERRNO; j++)
			PX_TRUE(now != errno_values[j], "main sees thread %d's errno %d", j, now);
		errno = ERANGE;
	}
	for (int i = 0; i < N_ERRNO; i++)
		px_join(t[i]);
}

/* XSI: the concurrency level is a hint, but it reads back. */
static void test_concurrency(void **state)
{
	int orig = pthread_getconcurrency();
	PX_OK(pthread_setconcurrency(4));
	PX_EQ(pthread_getconcurrency(), 4);
	PX_OK(pthread_setconcurrency(0));
	PX_EQ(pthread_getconcurrency(), 0);
	/* "shall fail": negative. */
	PX_ERR(pthread_setconcurrency(-1), EINVAL);
	PX_EQ(pthread_getconcurrency(), 0);
	PX_OK(pthread_setconcurrency(orig));
}

/* The order in which fork handlers ran, as a string (only written by the one
 * thread that forks, and in the child). */
static char fork_seq[32];

static void add(char c)
{
	size_t n = strlen(fork_seq);
	if (n < sizeof fork_seq - 1)
		fork_seq[n] = c;
}
static void prepare1(void)
{
	add('p');
	add('1');
}
static void prepare2(void)
{
	add('p');
	add('2');
}
static void parent1(void)
{
	add('P');
	add('1');
}
static void parent2(void)
{
	add('P');
	add('2');
}
static void child1(void)
{
	add('c');
	add('1');
}
static void child2(void)
{
	add('c');
	add('2');
}

/* pthread_atfork: prepare handlers run in reverse order of registration,
 * parent and child handlers in order. */
static void test_atfork_single_fork(void **state)
{
	PX_OK(pthread_atfork(NULL, NULL, NULL));
	PX_OK(pthread_atfork(prepare1, parent1, child1));
	PX_OK(pthread_atfork(prepare2, parent2, child2));
	memset(fork_seq, 0, sizeof fork_seq);
	fflush(NULL);
	pid_t pid = fork();
	PX_TRUE(pid >= 0, "fork failed: %s", px_errname(errno));
	if (pid == 0)
		_exit(strcmp(fork_seq, "p2p1c1c2") == 0 ? 0 : 1);
	PX_EQ_STR(fork_seq, "p2p1P1P2");

	int status = px_wait_child(pid, 10);
	PX_TRUE(status != -1, "the child did not exit within 10 s");
	PX_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"the child saw the wrong handler order (status %#x)", status);
}

static void *send_to_process(void *arg)
{
	sigset_t one = just(SIGUSR1, 0);
	PX_OK(pthread_sigmask(SIG_BLOCK, &one, NULL));
	px_sleep_ns(20 * PX_NS_PER_MS);
	PX_SYSOK(kill(*(pid_t *)arg, SIGUSR1));
	return NULL;
}

static void *send_to_thread(void *arg)
{
	sigset_t one = just(SIGUSR1, 0);
	PX_OK(pthread_sigmask(SIG_BLOCK, &one, NULL));
	px_sleep_ns(20 * PX_NS_PER_MS);
	PX_OK(pthread_kill(*(pthread_t *)arg, SIGUSR1));
	return NULL;
}

static sem_t join_release;
static pthread_t joiner_thread;
static atomic_int joiner_handled;

static void post_release(int sig)
{
	if (pthread_equal(pthread_self(), joiner_thread))
		atomic_store(&joiner_handled, 1);
	sem_post(&join_release); /* async-signal-safe */
}

static void *wait_release(void *arg)
{
	/* This thread blocks the signal: only the joiner may take it. */
	sigset_t one = just(SIGUSR1, 0);
	PX_OK(pthread_sigmask(SIG_BLOCK, &one, NULL));
	atomic_store((atomic_int *)arg, 1);
	while (sem_wait(&join_release) != 0)
		;
	return (void *)42;
}

/* A signal sent to a thread blocked in pthread_join runs its handler at
 * once, and the join goes on (POSIX: pthread_join does not return EINTR).
 * Here the handler is what lets the joined thread end, so a join that held
 * the signal back until it ended would never end. Once sent to the joiner
 * with pthread_kill, once to the process with kill, with every other
 * thread blocking the signal. */
static void test_join_runs_handler(void **state)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = post_release;
	sigemptyset(&sa.sa_mask);
	PX_SYSOK(sigaction(SIGUSR1, &sa, &old));
	PX_SYSOK(sem_init(&join_release, 0, 0));
	joiner_thread = pthread_self();
	for (int to_process = 0; to_process <= 1; to_process++) {
		atomic_int ready = 0;
		atomic_store(&joiner_handled, 0);
		pthread_t t = px_start(NULL, wait_release, &ready);
		PX_WAIT(atomic_load(&ready), 10);
		pid_t pid = getpid();
		pthread_t me = pthread_self();
		/* Sent from a helper once this thread waits in its join. */
		pthread_t sender = px_start(NULL, to_process ? send_to_process : send_to_thread,
					    to_process ? (void *)&pid : (void *)&me);
		PX_EQ_PTR(px_join(t), (void *)42);
		PX_EQ(atomic_load(&joiner_handled), 1);
		px_join(sender);
	}
	PX_SYSOK(sem_destroy(&join_release));
	PX_SYSOK(sigaction(SIGUSR1, &old, NULL));
}

static atomic_int setxid_stop;
static sem_t setxid_sem;

static void *setxid_computer(void *arg)
{
	/* Always running, but yielding now and then: where nothing preempts
	 * (sanitizer builds) the others still get the workers. */
	for (volatile unsigned long x = 0; !atomic_load(&setxid_stop); x++)
		if (x % 4096 == 0)
			sched_yield();
	return arg;
}

static void *setxid_waiter(void *arg)
{
	while (sem_wait(&setxid_sem) != 0)
		;
	return arg;
}

/* Every kernel thread of the process has the effective user id uid
 * (Linux keeps credentials per thread; glibc's set*id change them all). */
static __attribute__((unused)) int all_tasks_euid(uid_t uid)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	int n = 0, bad = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[300], line[256];
		snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue; /* the thread ended meanwhile */
		while (fgets(line, sizeof line, f)) {
			unsigned r, eu;
			if (sscanf(line, "Uid: %u %u", &r, &eu) == 2) {
				n++;
				bad += eu != uid;
			}
		}
		fclose(f);
	}
	closedir(d);
	return n > 0 && bad == 0;
}

/* seteuid and setegid with threads running, computing and blocked: glibc
 * makes every thread change its credentials and waits for them all (a
 * thread whose handler cleared the wrong thread's mark made it wait
 * forever). Also from the child of a fork. As root, the new effective
 * user id must show on every kernel thread of the process (not checked in
 * the header mode, where the thread that started the runtime may keep the
 * old one: docs/posix-coverage.md). */
static void test_setxid_with_threads(void **state)
{
	PX_SYSOK(sem_init(&setxid_sem, 0, 0));
	atomic_store(&setxid_stop, 0);
	pthread_t t[6];
	for (int i = 0; i < 6; i++)
		t[i] = px_start(NULL, i < 3 ? setxid_computer : setxid_waiter, NULL);
	px_sleep_ns(20 * PX_NS_PER_MS);
	for (int round = 0; round < 20; round++) {
		PX_SYSOK(seteuid(geteuid()));
		PX_SYSOK(setegid(getegid()));
	}
#ifndef WEFT_COMPAT_PTHREAD_H /* the header mode does not wrap glibc's set*id (docs) */
	if (geteuid() == 0) {
		PX_SYSOK(seteuid(65534));
		PX_EQ(all_tasks_euid(65534), 1);
		PX_SYSOK(seteuid(0));
		PX_EQ(all_tasks_euid(0), 1);
	}
#endif
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0)
		_exit(seteuid(geteuid()) == 0 && setegid(getegid()) == 0 ? 0 : 1);
	PX_TRUE(pid > 0, "fork: %s", strerror(errno));
	int status = px_wait_child(pid, 20);
	PX_TRUE(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"the child's seteuid did not return 0 within 20 s (status %#x)", status);
	atomic_store(&setxid_stop, 1);
	for (int i = 3; i < 6; i++)
		PX_SYSOK(sem_post(&setxid_sem));
	for (int i = 0; i < 6; i++)
		px_join(t[i]);
	PX_SYSOK(sem_destroy(&setxid_sem));
}

/* Destroying through a NULL pointer must not crash: glibc returns 0 for
 * these (they have nothing to free), POSIX allows EINVAL. glibc's
 * prototypes declare the argument nonnull, which let the compiler delete
 * weft's NULL checks in the preload build. */
static void *volatile null_ptr; /* NULL, hidden from the compiler's nonnull checks */

static void test_null_destroy_does_not_crash_may_fail(void **state)
{
	int r = pthread_mutexattr_destroy((pthread_mutexattr_t *)null_ptr);
	PX_TRUE(r == 0 || r == EINVAL, "pthread_mutexattr_destroy(NULL) = %d", r);
	r = pthread_condattr_destroy((pthread_condattr_t *)null_ptr);
	PX_TRUE(r == 0 || r == EINVAL, "pthread_condattr_destroy(NULL) = %d", r);
	r = pthread_rwlock_destroy((pthread_rwlock_t *)null_ptr);
	PX_TRUE(r == 0 || r == EINVAL, "pthread_rwlock_destroy(NULL) = %d", r);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		PX_TEST(test_sigmask_round_trip),
		PX_TEST(test_sigmask_per_thread),
		PX_TEST(test_pthread_kill),
		PX_TEST(test_raise),
		PX_TEST(test_sigwait),
		PX_TEST(test_errno_per_thread),
		PX_TEST(test_concurrency),
		PX_TEST(test_null_destroy_does_not_crash_may_fail),
		PX_TEST(test_atfork_single_fork),
		PX_TEST(test_join_runs_handler),
		PX_TEST(test_setxid_with_threads),
	};
	return PX_RUN(argc, argv, tests);
}
