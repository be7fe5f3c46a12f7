/* Per-ULT CPU time: what the clocks of pthread_getcpuclockid and
 * weft_cputime read (the POSIX facade is src/posix/cpuclock.c).
 *
 * Counting is off until somebody asks for a ULT's CPU time
 * (wf_cpu_clock_start), so programs that never ask pay nothing. From then
 * on every switch on a worker charges the ULT that leaves it with the
 * worker's kernel-thread CPU time since that ULT started running there
 * (wf_cpu_account, called by the switch tail in sched.c). Time a ULT ran
 * before counting started is not seen.
 *
 * Reading a running ULT's time from another kernel thread adds the run in
 * progress (now - the worker's run_start) to what earlier runs were
 * charged. A switch changes both, and the worker's current ULT, so a reader
 * could pair the new run_start with the old total and miss a whole run:
 * each worker's cpu_seq is a sequence lock around that (odd while a switch
 * charges; wf_cpu_account to wf_cpu_account_end), and a reader retries
 * while it moved. A reader cannot wait for ever, though (a worker switching
 * every 100 ns moves it during every read of a clock), so after a few
 * tries it takes its last snapshot, and every read returns at least what
 * any read of that ULT returned before (cpu_seen): a clock never goes
 * back, at worst it stands still for a moment.
 */
#include <pthread.h>
#include <time.h>

#include "sched/cpuclock.h"
#include "sched/sched.h"
#include "util/sys.h"

static uint64_t thread_cpu_ns(clockid_t c)
{
	struct timespec ts;
	if (WF_SYS(clock_gettime)(c, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* w's cpu_clockid and run_start are read by other kernel threads
 * (wf_ult_cpu_ns) and set from 0 by another (wf_cpu_clock_start): relaxed
 * atomic accesses, here too. */
void wf_cpu_account(wf_worker_t *w, wf_ult_t *leaving)
{
	__atomic_store_n(&w->cpu_seq, w->cpu_seq + 1, __ATOMIC_RELAXED); /* odd */
	atomic_thread_fence(memory_order_release);
	clockid_t clk = __atomic_load_n(&w->cpu_clockid, __ATOMIC_RELAXED);
	if (!clk) {
		/* w's kernel thread, not glibc's pthread_self(): that is the
		 * thread control block installed now, which may be a ULT's
		 * (tls.c) or the root's on another worker. */
		if (WF_SYS(pthread_getcpuclockid)(w->thread, &clk))
			return;
		__atomic_store_n(&w->cpu_clockid, clk, __ATOMIC_RELAXED);
	}
	uint64_t now = thread_cpu_ns(clk);
	uint64_t start = __atomic_load_n(&w->run_start, __ATOMIC_RELAXED);
	if (leaving && start && now > start)
		atomic_fetch_add_explicit(&leaving->cpu_ns, now - start, memory_order_relaxed);
	__atomic_store_n(&w->run_start, now, __ATOMIC_RELAXED);
}

void wf_cpu_carrier(wf_worker_t *w, clockid_t clk)
{
	__atomic_store_n(&w->cpu_seq, w->cpu_seq + 1, __ATOMIC_RELAXED); /* odd */
	atomic_thread_fence(memory_order_release);
	__atomic_store_n(&w->cpu_clockid, clk, __ATOMIC_RELAXED);
	/* Counting from now on the new clock: the run of a ULT whose section
	 * lost the worker is not charged to it (its carrier's clock is not
	 * this one). 0 when off: wf_cpu_clock_start starts it. */
	uint64_t now = clk && atomic_load_explicit(&wf_rt.cpu_clock, memory_order_relaxed)
			       ? thread_cpu_ns(clk)
			       : 0;
	__atomic_store_n(&w->run_start, now, __ATOMIC_RELAXED);
}

void wf_cpu_account_end(wf_worker_t *w)
{
	__atomic_store_n(&w->cpu_seq, w->cpu_seq + 1, __ATOMIC_RELEASE); /* even */
}

/* u's CPU time so far, including the run in progress if it is running. */
uint64_t wf_ult_cpu_ns(wf_ult_t *u)
{
	/* Fields of u and of another worker that their owner writes meanwhile:
	 * atomic loads inside the worker's sequence lock (see above). */
	uint64_t v_ns = 0;
	for (int tries = 0; tries < 64; tries++) {
		uint64_t t = atomic_load_explicit(&u->cpu_ns, memory_order_relaxed);
		int last = __atomic_load_n(&u->last_worker, __ATOMIC_RELAXED);
		if (last < 0 || last >= wf_rt.nworkers) {
			v_ns = t; /* it never ran */
			break;
		}
		wf_worker_t *v = wf_rt.workers[last];
		unsigned s1 = __atomic_load_n(&v->cpu_seq, __ATOMIC_ACQUIRE);
		t = atomic_load_explicit(&u->cpu_ns, memory_order_relaxed);
		uint64_t start = __atomic_load_n(&v->run_start, __ATOMIC_RELAXED);
		clockid_t clk = __atomic_load_n(&v->cpu_clockid, __ATOMIC_RELAXED);
		uint64_t live = 0;
		if (__atomic_load_n(&v->current, __ATOMIC_RELAXED) == u && start && clk) {
			uint64_t now = thread_cpu_ns(clk);
			if (now > start)
				live = now - start;
		}
		atomic_thread_fence(memory_order_acquire);
		unsigned s2 = __atomic_load_n(&v->cpu_seq, __ATOMIC_RELAXED);
		v_ns = t + live;
		if (s1 == s2 && !(s1 & 1) &&
		    __atomic_load_n(&u->last_worker, __ATOMIC_RELAXED) == last)
			break;
		if (s1 & 1) /* its kernel thread may be off its CPU mid-switch */
			WF_SYS(sched_yield)();
	}
	uint64_t seen = atomic_load_explicit(&u->cpu_seen, memory_order_relaxed);
	while (v_ns > seen &&
	       !atomic_compare_exchange_weak_explicit(&u->cpu_seen, &seen, v_ns,
						      memory_order_relaxed, memory_order_relaxed))
		;
	return v_ns > seen ? v_ns : seen;
}

/* Start counting (the first pthread_getcpuclockid, or the first read of
 * CLOCK_THREAD_CPUTIME_ID in a ULT). */
void wf_cpu_clock_start(void)
{
	if (atomic_exchange_explicit(&wf_rt.cpu_clock, 1, memory_order_acq_rel))
		return;
	/* Start every worker's current run now, so the ULTs running at this
	 * moment are charged from here on, not only from their next switch.
	 * A worker that switches meanwhile sets its own start (wf_cpu_account);
	 * the CASes from 0 leave that alone. */
	wf_worker_t *self = wf_worker_self();
	if (self) {
		wf_cpu_account(self, NULL);
		wf_cpu_account_end(self);
	}
	for (int i = 0; i < wf_rt.nworkers; i++) {
		wf_worker_t *v = wf_rt.workers[i];
		clockid_t c, none_c = 0;
		uint64_t none = 0;
		if (v == self || WF_SYS(pthread_getcpuclockid)(
					 __atomic_load_n(&v->thread, __ATOMIC_RELAXED), &c))
			continue;
		__atomic_compare_exchange_n(&v->cpu_clockid, &none_c, c, 0, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED);
		__atomic_compare_exchange_n(&v->run_start, &none, thread_cpu_ns(c), 0,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}
}
