/* The lite backend: seed 002's LiteThreads. Every simulation thread is a
 * kernel thread made with clone() - not through glibc's pthread_create -
 * with a stack of our own, a futex for Go/Wait (spin a little, then sleep,
 * as the seed does), and CLONE_CHILD_CLEARTID for ThreadDelete to wait on.
 *
 * Why sequential only: such a thread has no thread control block of its
 * own. Without CLONE_SETTLS it runs on its creator's TLS - errno, malloc's
 * per-thread cache, the stack-protector canary, glibc's idea of "which
 * thread am I" - so two of them running at once would corrupt each other.
 * One at a time (simcpus 1), with every switch a futex hand-off, they are
 * safe; that is the seed's own conclusion and the reason its parallel
 * simulator needed another library. */
#include "sim/kernel.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct lite_thread {
	void *stack;
	atomic_int go;      /* 1: a Go is waiting; -1: the owner sleeps on it */
	volatile pid_t tid; /* cleared (and futex-woken) by the kernel at exit */
	int alive;
} lite_thread_t;

static atomic_int done; /* 1 when the simulation has ended */

#define SPINS 100

static inline lite_thread_t *bk(wsim_thread_t *t)
{
	return (lite_thread_t *)(void *)t->bk;
}

static long futex(volatile void *addr, int op, int val)
{
	return syscall(SYS_futex, addr, op, val, NULL, NULL, 0);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

/* Take the token, sleeping on the futex once spinning has not found it.
 * Only the owner takes the token or announces sleep. */
static void token_wait(atomic_int *w)
{
	for (int i = 0; i < SPINS; i++) {
		if (atomic_load_explicit(w, memory_order_acquire) == 1) {
			atomic_store_explicit(w, 0, memory_order_relaxed);
			return;
		}
		cpu_relax();
	}
	for (;;) {
		int v = 0;
		if (atomic_compare_exchange_strong(w, &v, -1) || v == -1) {
			futex(w, FUTEX_WAIT_PRIVATE, -1);
			continue;
		}
		/* v == 1: the token */
		atomic_store_explicit(w, 0, memory_order_relaxed);
		return;
	}
}

static void token_give(atomic_int *w)
{
	if (atomic_exchange_explicit(w, 1, memory_order_acq_rel) == -1)
		futex(w, FUTEX_WAKE_PRIVATE, 1);
}

static int entry(void *arg)
{
	wsim_thread_t *t = arg;
	token_wait(&bk(t)->go);
	wsim_thread_body(t);
	return 0; /* glibc's clone() ends the thread with the exit system call */
}

static int start(void)
{
	atomic_store(&done, 0);
	return 0;
}

static void stop(void)
{
	wsim_stack_cache_drain();
}

static int create(wsim_thread_t *t)
{
	lite_thread_t *b = bk(t);
	b->alive = 0;
	atomic_init(&b->go, 0);
	if (!(b->stack = wsim_stack_get(wsim_k.stack_size)))
		return errno == ENOMEM ? ENOMEM : EAGAIN;
	const int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
			  CLONE_SYSVSEM | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
	char *top = (char *)b->stack + wsim_k.stack_size;
	pid_t tid = clone(entry, top, flags, t, &b->tid, NULL, &b->tid);
	if (tid < 0) {
		int e = errno;
		wsim_stack_put(b->stack, wsim_k.stack_size);
		b->stack = NULL;
		return e == ENOMEM ? ENOMEM : EAGAIN;
	}
	b->alive = 1;
	return 0;
}

static void go(wsim_thread_t *t)
{
	token_give(&bk(t)->go);
}

static void wait(wsim_thread_t *self)
{
	token_wait(&bk(self)->go);
}

static void switch_to(wsim_thread_t *self, wsim_thread_t *next)
{
	go(next);
	wait(self);
}

static void finish(wsim_thread_t *self, wsim_thread_t *next)
{
	if (next)
		go(next);
}

/* The raw system call: exit this kernel thread only, touching nothing of
 * glibc's (whose thread state is not ours). */
static void abort_self(wsim_thread_t *self)
{
	for (;;)
		syscall(SYS_exit, 0);
}

static void reap(wsim_thread_t *t)
{
	lite_thread_t *b = bk(t);
	if (!b->alive)
		return;
	if (t->state != WSIM_COMPLETE)
		go(t); /* blocked or never ran: it ends itself (abort_self) */
	/* CLONE_CHILD_CLEARTID: the kernel zeroes tid once the thread is off
	 * its stack and wakes this (shared) futex. */
	pid_t v;
	while ((v = b->tid) != 0)
		futex(&b->tid, FUTEX_WAIT, v);
	wsim_stack_put(b->stack, wsim_k.stack_size);
	b->stack = NULL;
	b->alive = 0;
}

static void no_lock(void)
{
}

static void run(wsim_thread_t *root)
{
	go(root);
	while (!atomic_load_explicit(&done, memory_order_acquire))
		futex(&done, FUTEX_WAIT_PRIVATE, 0);
}

static void end(void)
{
	atomic_store_explicit(&done, 1, memory_order_release);
	futex(&done, FUTEX_WAKE_PRIVATE, 1);
}

const wsim_backend_ops_t wsim_backend_lite = {
	.name = "lite",
	.max_simcpus = 1,
	.thread_size = sizeof(lite_thread_t),
	.cur_mode_parallel = WSIM_CUR_GLOBAL,
	.start = start,
	.stop = stop,
	.create = create,
	.go = go,
	.wait = wait,
	.switch_to = switch_to,
	.finish = finish,
	.abort_self = abort_self,
	.reap = reap,
	.lock = no_lock,
	.unlock = no_lock,
	.run = run,
	.end = end,
};
