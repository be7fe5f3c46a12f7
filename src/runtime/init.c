/* Starting and stopping the runtime. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "io/io.h"
#include "runtime/runtime.h"
#include "sched/carrier.h"
#include "sched/cpuclock.h"
#include "sched/preempt.h"
#include "trace/trace.h"
#include "util/fence.h"
#include "util/sys.h"

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static int atexit_done;
static int stop_runtime(int at_exit);

static void at_exit(void)
{
	/* Returning from main: tear down when that is possible (the root ULT
	 * exits the process and nobody else is alive); otherwise the kernel
	 * ends the workers with the process. */
	wf_worker_t *w = wf_worker_self();
	if (atomic_load_explicit(&wf_rt.state, memory_order_acquire) != WF_RT_RUNNING)
		return;
	int allowed = wf_rt.root ? (w && w->current == wf_rt.root) : w == NULL;
	if (allowed && wf_live() == 0)
		stop_runtime(1);
	/* Still running (ULTs alive, or exit() called elsewhere): the trace is
	 * written anyway, with whatever the workers recorded so far. */
	wf_trace_stop(0);
}

static int is_main_thread(void)
{
	return getpid() == (pid_t)syscall(SYS_gettid);
}

static void free_sched_spec(void)
{
	free(wf_rt.sched_at_start);
	free(wf_rt.sched_spec);
	wf_rt.sched_at_start = NULL;
	wf_rt.sched_spec = NULL;
}

atomic_int wf_posix_start;

static void release_w0_tp(void)
{
	if (wf_rt.w0_tp) {
		wf_tls_release(NULL, wf_rt.w0_tp);
		wf_rt.w0_tp = NULL;
	}
}

/* Start the runtime. with_root: the calling kernel thread becomes worker 0
 * and its caller the root ULT; otherwise every worker is a new pthread and
 * the caller stays a foreign thread. Called with init_lock held. */
static int start(const weft_config_t *c, int with_root)
{
	wf_rt.nworkers = c->workers;
	/* Each worker's first scheduler; c->scheds was checked by
	 * wf_config_resolve, but a scheduler may have been registered or not
	 * since (weft_init with a config made earlier). */
	const weft_sched_ops_t **at = calloc((size_t)c->workers, sizeof *at);
	char *spec = strdup(c->scheds);
	if (!at || !spec) {
		free(at);
		free(spec);
		return ENOMEM;
	}
	if (wf_sched_spec(c->scheds, c->workers, at)) {
		free(at);
		free(spec);
		return EINVAL;
	}
	wf_rt.sched_at_start = at;
	wf_rt.sched_spec = spec;
	wf_rt.pin = c->pin == 1;
	wf_rt.migrate = c->migrate == 1;
	wf_rt.tls = c->tls;
	wf_rt.w0_tp = NULL;
	wf_rt.syscall_ns = c->spares > 0 ? c->syscall_ns : -1;
	wf_rt.spares = c->spares > 0 ? c->spares : 0;
	wf_rt.io = c->io;
	wf_rt.preempt_ns = c->preempt_ns > 0 ? c->preempt_ns : 0;
	wf_rt.stack_size = c->stack_size;
	wf_rt.spin_ns = c->idle_spin_ns > 0 ? c->idle_spin_ns : 0;
	wf_rt.guarded_max = c->guarded_stacks_max;
	wf_ctx_backend = c->context == WEFT_CONTEXT_UCONTEXT ? WF_CTX_UCONTEXT : WF_CTX_ASM;
	atomic_store(&wf_rt.nspinning, 0);
	atomic_store(&wf_rt.nsleeping, 0);
	atomic_store(&wf_rt.root_exited, 0);
	wf_rt.global.q.head = wf_rt.global.q.tail = NULL;
	atomic_store(&wf_rt.global.n, 0);

	wf_stack_configure(c->stack_size, c->guarded_stacks_max, sizeof(wf_ult_t),
			   offsetof(wf_ult_t, stack));
	wf_ult_return_hook = wf_tsd_on_return;

	/* The root ULT runs on this kernel thread's own stack; its descriptor
	 * (with room for a ucontext_t) is allocated apart. */
	int e = 0;
	wf_ult_t *root = NULL;
	wf_kmask_reset(); /* no ULT blocks a signal yet (sched.c, "Signal masks") */
	if (with_root) {
		if (!(root = wf_ult_for_thread(&e)))
			return e;
		wf_tsd_take_foreign(&root->tsd);               /* values it set before weft ran */
		wf_root_key = wf_self_key();                   /* and the locks it holds (wait.h) */
		wf_sig_take_foreign(root);                     /* and its signal mask */
		root->bound_worker = c->migrate == 1 ? -1 : 0; /* it runs on worker 0 */
		snprintf(root->name, sizeof root->name, "%s", is_main_thread() ? "main" : "root");
	}
	wf_rt.root = root;
	if (root)
		wf_rt.root_thread = WF_SYS(pthread_self)();
	atomic_store(&wf_rt.foreign_created, 0);

	/* Thread-local storage: WEFT_TLS=own must be had. Under own, and under
	 * the default when the POSIX layer starts the runtime (a pthread
	 * program's main keeps its thread-locals), the root keeps its kernel
	 * thread's block and worker 0 gets one made (sched.c, "Thread
	 * pointers"): two thread-pointer writes per switch between the root
	 * and a ULT without a block of its own, which a native program that
	 * did not ask does not pay. */
	const char *why;
	int tls_e = c->tls == WEFT_TLS_WORKER ? ENOTSUP : wf_tls_probe(&why);
	if (c->tls == WEFT_TLS_OWN && tls_e) {
		fprintf(stderr, "weft: WEFT_TLS=own is not available here: %s\n", why);
		e = ENOTSUP;
		goto fail;
	}
	int root_tls = c->tls == WEFT_TLS_OWN ||
		       (c->tls == WEFT_TLS_DEFAULT && atomic_load(&wf_posix_start));
	if (root && root_tls && !tls_e && !(wf_rt.w0_tp = wf_tls_alloc(NULL))) {
		e = ENOMEM;
		goto fail;
	}

	if ((e = wf_stack_signals_init(&wf_ult_stack_hooks)) != 0)
		goto fail;
	if (c->trace) {
#if WEFT_TRACING
		e = wf_trace_start(c->trace, c->workers);
#else
		e = ENOTSUP;
#endif
		if (e) {
			static int told; /* once: a lazy start is retried at every call */
			if (!told++)
				fprintf(stderr, "weft: cannot trace to %s: %s\n", c->trace,
					strerror(e));
			wf_stack_signals_fini();
			goto fail;
		}
		if (root)
			wf_trace_running(0, root); /* it was not created by weft_create */
	}
	atomic_store(&wf_rt.state, WF_RT_STARTING);
	wf_fence_init();
	wf_sync_start(c->workers);
	wf_preempt_start(); /* before the monitor can signal */
	if ((e = wf_workers_start()) != 0) {
		wf_preempt_stop();
		wf_sync_stop();
		wf_trace_stop(1);
		wf_stack_signals_fini();
		goto fail;
	}
	atomic_store_explicit(&wf_rt.state, WF_RT_RUNNING, memory_order_release);
	const char *cpu_clock = getenv("WEFT_CPU_CLOCK"); /* checked by wf_config_resolve */
	if (cpu_clock && strcmp(cpu_clock, "1") == 0)
		wf_cpu_clock_start(); /* per-ULT CPU time from the start */
	if (!atexit_done)
		atexit_done = atexit(at_exit) == 0; /* fork: runtime/fork.c */
	if (getenv("WEFT_VERBOSE") && strcmp(getenv("WEFT_VERBOSE"), "1") == 0)
		fprintf(stderr,
			"weft: %d workers, sched=%s, context=%s, stack=%zu, pin=%d, "
			"idle_spin_ns=%ld, guarded_stacks=%ld, migrate=%d, tls=%s%s%s\n",
			wf_rt.nworkers, wf_rt.sched_spec,
			wf_ctx_backend == WF_CTX_UCONTEXT ? "ucontext" : "asm", wf_rt.stack_size,
			wf_rt.pin, wf_rt.spin_ns, wf_rt.guarded_max, wf_rt.migrate,
			c->tls == WEFT_TLS_OWN      ? "own"
			: c->tls == WEFT_TLS_WORKER ? "worker"
						    : "default",
			tls_e && c->tls != WEFT_TLS_WORKER ? " (own not available: " : "",
			tls_e && c->tls != WEFT_TLS_WORKER ? why : "");
	return 0;
fail:
	release_w0_tp();
	if (root) {
		wf_tsd_adopt(&root->tsd); /* back to the thread */
		wf_ult_free(NULL, root);
	}
	wf_rt.root = NULL;
	free_sched_spec();
	atomic_store(&wf_rt.state, WF_RT_OFF);
	return e;
}

static int init(const weft_config_t *cfg, int with_root)
{
	weft_config_t zero, c;
	memset(&zero, 0, sizeof zero);
	int e = wf_config_resolve(cfg ? cfg : &zero, &c);
	if (e)
		return e;
	WF_SYS(pthread_mutex_lock)(&init_lock);
	if (atomic_load(&wf_rt.state) != WF_RT_OFF)
		e = EBUSY;
	else
		e = start(&c, with_root);
	WF_SYS(pthread_mutex_unlock)(&init_lock);
	return e;
}

int weft_init(const weft_config_t *cfg)
{
	return init(cfg, 1);
}

int wf_start_lazily(void)
{
	/* Only the process's main thread turns into a ULT when it starts weft
	 * by using it: any other thread may exit and take worker 0 with it. */
	int e = init(NULL, is_main_thread());
	if (e == EBUSY) {
		/* Someone else is starting it; wait until it runs (or failed). */
		while (atomic_load_explicit(&wf_rt.state, memory_order_acquire) == WF_RT_STARTING)
			WF_SYS(sched_yield)();
		e = atomic_load(&wf_rt.state) == WF_RT_RUNNING ? 0 : EAGAIN;
	}
	return e;
}

static void free_leftover(wf_ult_t *u)
{
	if (u == wf_rt.root)
		return;
	/* Every other ULT has exited (wf_live() == 0); joinable ones nobody joined
	 * still hold a slot and a stack. */
	WF_ASSERT(u->state == WF_EXITED);
	wf_ult_free(NULL, u);
}

int weft_shutdown(void)
{
	return stop_runtime(0);
}

/* at_exit: the process ends, and the kernel takes the cached stacks back
 * with it, far faster than a munmap of each (a forked child of a program
 * that had made a thousand threads spent about 4 ms in that per exit). */
static int stop_runtime(int at_exit)
{
	wf_worker_t *w = wf_worker_self();
	if (atomic_load_explicit(&wf_rt.state, memory_order_acquire) != WF_RT_RUNNING)
		return EINVAL;
	wf_ult_t *root = wf_rt.root;
	/* With a root ULT only it may stop the runtime; without one, any thread
	 * that is not a worker may. */
	if (root ? (!w || w->current != root) : w != NULL)
		return EPERM;
	if (wf_live() > 0)
		return EBUSY;

	WF_SYS(pthread_mutex_lock)(&init_lock);
	if (root) {
		/* Go to worker 0, where it started (its trace ends there); then
		 * it ends on the kernel thread that started it, which stops
		 * being a carrier (sched/carrier.c). */
		root->bound_worker = 0;
		while ((w = wf_worker_self())->id != 0)
			wf_block(w, root, WF_AFTER_REQUEUE);
	}
	atomic_store_explicit(&wf_rt.state, WF_RT_STOPPING, memory_order_release);
	wf_workers_stop();
	wf_wait_unbias(); /* before the workers' sides go: a foreign thread may still wait */
	if (root)
		root->tp = NULL; /* its kernel thread's: not wf_tls_alloc's */
	release_w0_tp();
	wf_workers_free();
	wf_preempt_stop();
	wf_io_stop();
	wf_sync_stop();
	wf_trace_stop(1);
	wf_registry_sweep(free_leftover);
	if (!at_exit)
		wf_stack_global_drain();
	wf_stack_signals_fini();
	if (root) {
		wf_tsd_adopt(&root->tsd); /* the thread keeps its weft_setspecific values */
		wf_ult_free(NULL, root);
	}
	wf_rt.root = NULL;
	free_sched_spec();
	atomic_store(&wf_rt.cpu_clock, 0); /* the next runtime starts without it */
	atomic_store_explicit(&wf_rt.state, WF_RT_OFF, memory_order_release);
	WF_SYS(pthread_mutex_unlock)(&init_lock);
	return 0;
}
