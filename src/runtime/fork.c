/* fork: the child of a program that runs ULTs gets the runtime back.
 *
 * POSIX gives the child of fork one thread, the one that called fork.
 * Under weft that thread is a ULT, u, running on a worker w whose carrier
 * is kernel thread K. The child keeps u - its descriptor and id, stack,
 * thread-local storage, signal mask and the mutexes it holds - and K,
 * which goes on carrying w; every other worker gets a new kernel thread,
 * so the child can create threads, block and run in parallel as the
 * parent could.
 *
 * glibc's fork runs the handlers registered with pthread_atfork around the
 * system call: the prepare handlers in the reverse order of registration,
 * then the child's or the parent's in order. weft registers its three
 * first (wf_fork_register), so its prepare runs last - after the program's
 * and libraries', which may lock mutexes and so need the scheduler - and
 * its child and parent handlers first, so the others find the runtime
 * whole. First means: when the library is loaded (a constructor), and,
 * under libweft-pthread.so, also before any handler registered earlier
 * than that - by a library whose constructor ran before weft's - since
 * that library's pthread_atfork calls weft's __register_atfork
 * (src/posix/preload.c), which registers weft's handlers before it passes
 * the call on.
 *
 * prepare (u on w, carried by K):
 *   1. block every signal on K: nothing switches u away between here and
 *      the fork (a preemption, a handler that blocks), and no handler runs
 *      under the thread pointer of step 3;
 *   2. take the locks that guard what the child keeps: the carriers', the
 *      registry's free slots, the stack and thread-control-block pools,
 *      the key table, the signal actions, the scheduler tables and the
 *      priority lock. Each is a leaf that its holders keep for a few
 *      instructions;
 *   3. install K's own thread pointer (w->tp, where w's loop runs) in
 *      place of u's block. glibc's fork takes the installed block for the
 *      child's one thread: it writes the child's thread id in it and puts
 *      every other thread's block in its cache of free stacks, to be
 *      reused by the next pthread_create. K's block is where w's loop
 *      runs in the child, so it must be the one glibc keeps; u's own block
 *      is weft's, in no list of glibc's, and stays as it is.
 * parent: u's thread pointer back, the locks given back, the mask back.
 * child: the same, and in between the runtime made whole:
 *   - every other ULT is gone: ids and stacks given back (thread control
 *     blocks and thread-specific data are left alone, as glibc leaves a
 *     gone thread's), u's ties to them cut (a joiner, pending signals);
 *   - emptied: wait queues, timers, run queues and inboxes; the other
 *     workers' caches; each scheduler's state (a fresh one of the same
 *     table); the I/O poller, whose kernel instance the parent shares
 *     (the child makes a fresh one with its first wait). Tracing stops:
 *     the trace is the parent's;
 *   - u's block gets the child's kernel thread id as its thread id (it
 *     had its registry slot's, which u keeps in the parent: a process-
 *     shared recursive mutex would take the one for the other);
 *   - K becomes the first carrier; the other workers get new kernel
 *     threads and the monitor a new one - last, with K's block installed,
 *     so glibc marks it as a block of a process with threads.
 *   If u was the root ULT (main, under the POSIX layer) it stays the root;
 *   otherwise the child has no root and ends when its last ULT exits, as a
 *   process whose main thread called pthread_exit.
 *
 * A fork not made by a ULT on a worker - by a foreign thread, by a signal
 * handler inside a system call section, by a worker's loop - leaves a
 * child without workers, which goes on as a plain thread: weft's calls
 * take the foreign-thread path and a new ULT cannot be made (EAGAIN).
 *
 * Not done: a mutex, rwlock or semaphore held by a thread that is gone
 * stays held, as on glibc (POSIX allows such a child only async-signal-
 * safe calls); in libweft.so (header mode) a handler registered before
 * weft's (by a library whose constructor ran first) runs on the wrong side
 * of weft's: its prepare under K's thread pointer, its child handler
 * before the runtime is whole.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "io/io.h"
#include "runtime/runtime.h"
#include "sched/carrier.h"
#include "sched/policy.h"
#include "sched/prio.h"
#include "sync/wait.h"
#include "trace/trace.h"
#include "util/sys.h"

static struct {
	int running;    /* the runtime ran at prepare */
	wf_worker_t *w; /* the forking ULT's worker ... */
	wf_ult_t *u;    /* ... and the ULT; NULL: not a ULT on a worker */
	sigset_t mask;  /* K's mask before prepare */
} fk;

/* The locks of step 2, in the order taken (given back in reverse). */
static void locks(int phase)
{
	if (phase == WF_FORK_PREPARE) {
		wf_carriers_fork(phase);
		wf_policy_fork(phase);
		wf_prio_fork(phase);
		wf_registry_fork(phase);
		wf_stack_fork(phase);
		wf_tls_fork(phase);
		wf_tsd_fork(phase, fk.w);
		wf_procsig_fork(phase);
		return;
	}
	wf_procsig_fork(phase);
	wf_tsd_fork(phase, fk.w);
	wf_tls_fork(phase);
	wf_stack_fork(phase);
	wf_registry_fork(phase);
	wf_prio_fork(phase);
	wf_policy_fork(phase);
	wf_carriers_fork(phase);
}

static void prepare(void)
{
	if (atomic_load_explicit(&wf_rt.state, memory_order_acquire) != WF_RT_RUNNING) {
		fk.running = 0;
		return;
	}
	sigset_t all, old;
	sigfillset(&all);
	WF_SYS(pthread_sigmask)(SIG_SETMASK, &all, &old);
	locks(WF_FORK_PREPARE); /* from here on, one fork at a time */
	fk.running = 1;
	fk.mask = old;
	fk.w = wf_worker_self();
	fk.u = fk.w ? fk.w->current : NULL;
	if (!fk.u)
		fk.w = NULL;
	if (fk.u && fk.w->cur_tp != fk.w->tp)
		wf_tls_install(fk.w->tp);
}

static void restore(void)
{
	if (fk.u && fk.w->cur_tp != fk.w->tp)
		wf_tls_install(fk.w->cur_tp);
}

static void parent(void)
{
	if (!fk.running)
		return;
	restore();
	locks(WF_FORK_PARENT);
	WF_SYS(pthread_sigmask)(SIG_SETMASK, &fk.mask, NULL);
}

static void child(void)
{
	if (!fk.running)
		return;
	locks(WF_FORK_CHILD);
	wf_trace_forked();
	wf_worker_t *w = fk.w;
	wf_ult_t *u = fk.u;
	if (!u) {
		atomic_store_explicit(&wf_rt.state, WF_RT_FORKED, memory_order_relaxed);
		wf_forked_child();
		wf_io_forked(0);
		WF_SYS(pthread_sigmask)(SIG_SETMASK, &fk.mask, NULL);
		return;
	}
	wf_io_forked(1);
	/* Its block's thread id was its registry slot's, which the parent's u
	 * still has: a process-shared recursive mutex would take one for the
	 * other. The child's kernel thread id is the process's own. */
	if (u->tp && u->tp != w->tp)
		wf_tls_set_tid(u->tp, (int)syscall(SYS_gettid));
	wf_carriers_forked(w, w->tp);
	wf_ults_forked(u);
	wf_wait_forked();
	wf_workers_forked(w);
	if (u == wf_rt.root) {
		atomic_store_explicit(&wf_rt.root_exited, 0, memory_order_relaxed);
	} else {
		/* Gone with its thread (wf_ults_forked freed it). */
		wf_rt.root = NULL;
		atomic_store_explicit(&wf_rt.root_exited, 1, memory_order_relaxed);
		w->created = 1; /* u: the one live ULT */
	}
	/* The block the root's worker ran on may be glibc's child thread now
	 * (step 3): never given back. */
	wf_rt.w0_tp = NULL;
	if (wf_carriers_restart(w))
		fprintf(stderr, "weft: fork's child: cannot make a kernel thread for every "
				"worker; those without one run nothing\n");
	restore();
	WF_SYS(pthread_sigmask)(SIG_SETMASK, &fk.mask, NULL);
}

extern void *__dso_handle; /* this library's (crtbegin.o), as pthread_atfork passes */

void wf_fork_register(void)
{
	static atomic_int state; /* 0, 1 registering, 2 registered */
	int zero = 0;
	if (atomic_compare_exchange_strong(&state, &zero, 1)) {
		WF_SYS(__register_atfork)(prepare, parent, child, __dso_handle);
		atomic_store_explicit(&state, 2, memory_order_release);
	}
	while (atomic_load_explicit(&state, memory_order_acquire) != 2)
		wf_cpu_relax(); /* another thread registers them this instant */
}

__attribute__((constructor)) static void register_handlers(void)
{
	wf_fork_register();
}
