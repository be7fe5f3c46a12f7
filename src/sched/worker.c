/* Workers: the processors that run ULTs, each carried by one kernel thread
 * at a time (carrier.c). Each worker's loop has a stack of its own, mapped
 * here, so that it can move to another carrier.
 *
 * Waking sleepers (the other half of find_work's sleep in sched.c): after
 * queueing work, a thread issues a fence and reads nsleeping/nspinning - the
 * light side of an asymmetric fence (util/fence.h), whose heavy side the
 * worker going to sleep pays, between announcing itself and re-checking.
 * If somebody sleeps and nobody spins, it wakes one sleeper: CAS its
 * sleep_state SLEEPING -> AWAKE (so one sleeper is woken once) and
 * futex-wake it. A spinning worker is left to find the work itself: a futex
 * wake costs the waker a system call and the wakee tens of microseconds on
 * this kind of machine, while a spinner picks work up within ~100 ns.
 *
 * Leaving it to a spinner is a second store-buffering pattern: the last
 * spinner to find work decrements nspinning (a full fence), then looks for
 * more queued work and wakes a sleeper for it (stop_spinning, sched.c).
 * Against that there is no heavy side, so a queuer that would skip the
 * wake because of a spinner while somebody sleeps makes a full fence of
 * its own first and reads nspinning again: either it sees the spinner gone
 * and wakes a sleeper, or the spinner sees its work. (Without the fence
 * both may miss, and the work waits for a busy worker's next decision.)
 * With nobody asleep, the common case of a hand-off between two busy
 * workers, the fence is not paid.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sched/carrier.h"
#include "sched/policy.h"
#include "util/fence.h"
#include "util/sys.h"
#if WF_ASAN
#include <sanitizer/asan_interface.h>
#endif

enum { LOOP_STACK_SIZE = 256 * 1024 };

static cpu_set_t allowed_cpus;
static cpu_set_t root_affinity;
static int root_affinity_saved;

/* Wake t if it sleeps: CAS SLEEPING -> AWAKE so each sleep is woken once,
 * then futex-wake it. Returns whether it did. The caller has fenced. */
static int wake_if_sleeping(wf_worker_t *t)
{
	int s = WF_SLEEPING;
	if (atomic_load_explicit(&t->sleep_state, memory_order_relaxed) != WF_SLEEPING ||
	    !atomic_compare_exchange_strong_explicit(&t->sleep_state, &s, WF_AWAKE,
						     memory_order_seq_cst, memory_order_relaxed))
		return 0;
	if (atomic_load_explicit(&t->in_poll, memory_order_seq_cst)) {
		/* It sleeps in the poller (set before its own look at
		 * sleep_state: one of the two sees the other). */
		const wf_poll_hooks_t *h =
			atomic_load_explicit(&wf_poll_hooks, memory_order_acquire);
		if (h)
			h->kick();
	}
	wf_futex_wake(&t->sleep_state, 1);
	return 1;
}

void wf_wake_worker(wf_worker_t *t)
{
	wf_fence_light(); /* the sleeper's side: wf_fence_heavy in find_work */
	wake_if_sleeping(t);
}

void wf_wake_one_idle(const weft_sched_ops_t *domain)
{
	wf_fence_light(); /* as wf_wake_worker */
	if (atomic_load_explicit(&wf_rt.nsleeping, memory_order_relaxed) == 0)
		return;
	/* A spinner will find the work - if it runs the same scheduler, which
	 * with one scheduler everywhere (the usual case) every spinner does. */
	int any = !domain || atomic_load_explicit(&wf_rt.one_domain, memory_order_relaxed);
	if (any && atomic_load_explicit(&wf_rt.nspinning, memory_order_relaxed) > 0) {
		atomic_thread_fence(memory_order_seq_cst); /* against stop_spinning */
		if (atomic_load_explicit(&wf_rt.nspinning, memory_order_relaxed) > 0)
			return;
	}
	for (int i = 0; i < wf_rt.nworkers; i++) {
		wf_worker_t *t = wf_rt.workers[i];
		if (!any && atomic_load_explicit(&t->sched_domain, memory_order_relaxed) != domain)
			continue;
		if (wake_if_sleeping(t))
			return;
	}
}

void wf_wake_all(void)
{
	atomic_thread_fence(memory_order_seq_cst);
	for (int i = 0; i < wf_rt.nworkers; i++) {
		wf_worker_t *t = wf_rt.workers[i];
		atomic_store_explicit(&t->sleep_state, WF_AWAKE, memory_order_release);
		wf_futex_wake(&t->sleep_state, 1);
	}
	const wf_poll_hooks_t *h = atomic_load_explicit(&wf_poll_hooks, memory_order_acquire);
	if (h)
		h->kick();
}

/* The i-th CPU the process may use, or -1. */
static int nth_allowed_cpu(int i)
{
	int n = CPU_COUNT(&allowed_cpus);
	if (n == 0)
		return -1;
	i %= n;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &allowed_cpus) && i-- == 0)
			return c;
	return -1;
}

void wf_pin_self(int worker)
{
	int cpu = nth_allowed_cpu(worker);
	if (cpu < 0)
		return;
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	/* The calling kernel thread (0), not glibc's pthread_self(): that
	 * names the installed thread control block, which at a carrier's home
	 * may be one made for it (sched.c, "Thread pointers"). */
	WF_SYS(sched_setaffinity)(0, sizeof one, &one);
}

void wf_save_root_affinity(void)
{
	if (wf_rt.pin)
		root_affinity_saved =
			WF_SYS(sched_getaffinity)(0, sizeof root_affinity, &root_affinity) == 0;
}

void wf_restore_root_affinity(void)
{
	if (root_affinity_saved) {
		WF_SYS(sched_setaffinity)(0, sizeof root_affinity, &root_affinity);
		root_affinity_saved = 0;
	}
}

/* Entry of a worker's loop context: its first carrier switches here. */
static void loop_entry(void *transfer, void *arg)
{
	(void)arg;
	wf_ctx_entered();
	wf_worker_t *w = transfer;
	wf_after_switch(w);
	wf_loop_run(w);
	wf_carrier_loop_ended(w); /* the runtime stops */
}

static wf_worker_t *worker_new(int id, int *e)
{
	*e = ENOMEM;
	wf_worker_t *w;
	if (posix_memalign((void **)&w, WF_CACHELINE, sizeof *w))
		return NULL;
	memset(w, 0, sizeof *w);
	w->id = id;
	w->spin_ns = wf_rt.spin_ns;
	wf_timers_init(&w->timers);
	w->rng = 0x9E3779B97F4A7C15ull * (uint64_t)(id + 1) ^ wf_now_ns();
	if (!w->rng)
		w->rng = 1;
	size_t r = wf_ctx_reserve();
	if (r && !(w->loop_uc = calloc(1, r))) {
		free(w);
		return NULL;
	}
	w->loop_stack = mmap(NULL, LOOP_STACK_SIZE, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (w->loop_stack == MAP_FAILED) {
		free(w->loop_uc);
		free(w);
		return NULL;
	}
	wf_ctx_make(&w->loop_ctx, w->loop_stack, LOOP_STACK_SIZE, w->loop_uc, loop_entry, NULL);
	if ((*e = wf_sched_start(w, wf_rt.sched_at_start[id])) != 0) {
		munmap(w->loop_stack, LOOP_STACK_SIZE);
		free(w->loop_uc);
		free(w);
		return NULL;
	}
	return w;
}

static void worker_free(wf_worker_t *w)
{
	if (!w)
		return;
	wf_ctx_forget(&w->loop_ctx); /* the loop's fiber (TSan) */
	if (w->loop_stack) {
#if WF_ASAN
		/* The root's last worker's loop is abandoned mid-frame: its
		 * redzones would stay poisoned and fault whatever is mapped
		 * here next. */
		__asan_unpoison_memory_region(w->loop_stack, LOOP_STACK_SIZE);
#endif
		munmap(w->loop_stack, LOOP_STACK_SIZE);
	}
	free(w->loop_uc);
	wf_timers_fini(&w->timers);
	wf_sched_stop(w);
	free(w);
}

/* Create all workers and their carriers. With a root ULT (wf_rt.root, the
 * caller), the calling kernel thread carries worker 0 and new pthreads the
 * others; without one (the runtime was started lazily by a thread that is
 * not the process's main thread and may exit at any time), every worker is
 * carried by a new pthread. Returns 0 or a positive errno. */
int wf_workers_start(void)
{
	int n = wf_rt.nworkers;
	if (WF_SYS(sched_getaffinity)(0, sizeof allowed_cpus, &allowed_cpus) != 0)
		CPU_ZERO(&allowed_cpus);
	wf_rt.workers = calloc((size_t)n, sizeof *wf_rt.workers);
	if (!wf_rt.workers)
		return ENOMEM;
	int e = 0;
	for (int i = 0; i < n; i++)
		if (!(wf_rt.workers[i] = worker_new(i, &e)))
			goto fail_alloc;
	wf_sched_domains_changed();

	if ((e = wf_carriers_start()) != 0)
		goto fail_alloc;
	return 0;

fail_alloc:
	for (int i = 0; i < n; i++)
		worker_free(wf_rt.workers[i]);
	free(wf_rt.workers);
	wf_rt.workers = NULL;
	return e;
}

/* Stop the workers' kernel threads. wf_rt.state is WF_RT_STOPPING and no
 * ULT but the root is alive; the caller is the root ULT, which ends on the
 * kernel thread that started the runtime, on no worker, or (no root) a
 * thread that is not a worker. Once this returns nothing frees into
 * the workers' caches any longer: the last exit's publishing
 * (wf_join_publish_exit) may still have been freeing a detached ULT when
 * weft_shutdown found wf_live() == 0. */
void wf_workers_stop(void)
{
	wf_carriers_stop();
	for (int i = 0; i < wf_rt.nworkers; i++)
		wf_sched_refuse(wf_rt.workers[i]); /* an install that came too late */
}

/* Free all workers and what their caches hold; after wf_workers_stop. */
void wf_workers_free(void)
{
	for (int i = 0; i < wf_rt.nworkers; i++) {
		wf_registry_drain(&wf_rt.workers[i]->slots);
		wf_stack_cache_drain(&wf_rt.workers[i]->stacks);
		wf_tls_cache_drain(&wf_rt.workers[i]->tls);
		worker_free(wf_rt.workers[i]);
	}
	free(wf_rt.workers);
	wf_rt.workers = NULL;
	wf_carriers_free();
}

/* ---- fork --------------------------------------------------------------- */

/* In the child of a fork made by the ULT running on `kept` (runtime/fork.c
 * has the protocol): every ULT but that one is gone, and every kernel
 * thread but kept's carrier. The workers stay, emptied: what their queues,
 * inboxes and timers held were the gone ULTs; the other workers' caches
 * and schedulers may have been half-way through a change when their
 * threads vanished, so they are dropped (their memory is left alone) and
 * each gets a fresh scheduler of the table it ran; their loops start
 * afresh when their new carriers come (wf_carriers_restart). kept's own
 * caches and loop are consistent: its thread was in the fork. */
void wf_workers_forked(wf_worker_t *kept)
{
	for (int i = 0; i < wf_rt.nworkers; i++) {
		wf_worker_t *w = wf_rt.workers[i];
		wf_mpfifo_forked(&w->inbox);
		wf_timers_forked(&w->timers);
		atomic_store_explicit(&w->sleep_state, WF_AWAKE, memory_order_relaxed);
		atomic_store_explicit(&w->in_poll, 0, memory_order_relaxed);
		atomic_store_explicit(&w->sys, 0, memory_order_relaxed);
		atomic_store_explicit(&w->kick, 0, memory_order_relaxed); /* its signal died too */
		atomic_store_explicit(&w->sig_kick, NULL, memory_order_relaxed);
		atomic_store_explicit(&w->preempt_n, 0, memory_order_relaxed);
		/* A thread that is gone may have been inside (wait.c's buckets
		 * lose their biases with their waiters). */
		atomic_store_explicit(&w->wait_side.owner, 0, memory_order_relaxed);
		atomic_store_explicit(&w->wait_side.other, 0, memory_order_relaxed);
		w->created = w->exited = 0;
		w->resched = 0;
		if (w != kept) {
			w->current = w->prev = NULL;
			w->prev_action = WF_AFTER_NONE;
			w->prev_parker = NULL;
			w->prev_unlock = NULL;
			w->maint_owed = 0;
			w->carrier = NULL;
			w->slots.n = 0;
			w->stacks.n = 0;
			w->tls.n = 0;
			wf_ctx_forget(&w->loop_ctx);
#if WF_ASAN
			/* Its old loop's frames were never unwound. */
			__asan_unpoison_memory_region(w->loop_stack, LOOP_STACK_SIZE);
#endif
			wf_ctx_make(&w->loop_ctx, w->loop_stack, LOOP_STACK_SIZE, w->loop_uc,
				    loop_entry, NULL);
		}
		if (wf_sched_forked(w))
			wf_panic("fork's child: no memory for worker %d's scheduler", w->id);
	}
	wf_sched_domains_changed();
	wf_mpfifo_forked(&wf_rt.global);
	atomic_store(&wf_rt.nspinning, 0);
	atomic_store(&wf_rt.nsleeping, 0);
	atomic_store(&wf_rt.foreign_created, 0);
	atomic_store(&wf_poll_waiting, 0);
}
