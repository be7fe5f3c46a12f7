/* Accounting: per-ULT CPU time and per-worker counters (weft.h). */
#include "runtime/runtime.h"
#include "sched/cpuclock.h"

int weft_cputime(weft_t t, uint64_t *ns)
{
	if (!ns)
		return EINVAL;
	if (atomic_load_explicit(&wf_rt.state, memory_order_acquire) != WF_RT_RUNNING)
		return ESRCH;
	wf_ult_t *u = wf_registry_find(t);
	if (!u)
		return ESRCH;
	wf_cpu_clock_start();
	*ns = wf_ult_cpu_ns(u);
	return 0;
}

int weft_worker_stats(int worker, weft_worker_stats_t *out)
{
	if (!out)
		return EINVAL;
	if (atomic_load_explicit(&wf_rt.state, memory_order_acquire) != WF_RT_RUNNING)
		return ESRCH;
	if (worker < 0 || worker >= wf_rt.nworkers)
		return EINVAL;
	wf_worker_t *w = wf_rt.workers[worker];
	*out = (weft_worker_stats_t){
		.switches = atomic_load_explicit(&w->n_switches, memory_order_relaxed),
		.steals = atomic_load_explicit(&w->n_steals, memory_order_relaxed),
		.parks = atomic_load_explicit(&w->n_parks, memory_order_relaxed),
		.sleeps = atomic_load_explicit(&w->n_sleeps, memory_order_relaxed),
		.handovers = atomic_load_explicit(&w->n_handovers, memory_order_relaxed),
		.idle_ns = atomic_load_explicit(&w->idle_ns, memory_order_relaxed),
		.sleep_ns = atomic_load_explicit(&w->sleep_ns, memory_order_relaxed),
		.created = (uint64_t)__atomic_load_n(&w->created, __ATOMIC_RELAXED),
		.exited = (uint64_t)__atomic_load_n(&w->exited, __ATOMIC_RELAXED),
	};
	return 0;
}
