/* The scheduler API (include/weft/sched.h): checks arguments and starts the
 * runtime; the mechanism is in src/sched/policy.c. */
#include "runtime/runtime.h"
#include "sched/prio.h"

int weft_sched_register(const weft_sched_ops_t *ops)
{
	return wf_sched_register(ops);
}

const weft_sched_ops_t *weft_sched_find(const char *name)
{
	return name ? wf_sched_find(name) : NULL;
}

int weft_sched_install(int worker, const weft_sched_ops_t *ops, void *arg)
{
	int e = wf_sched_check(ops);
	if (e)
		return e;
	if ((e = wf_ensure_runtime()) != 0)
		return e;
	if (worker < 0 || worker >= wf_rt.nworkers)
		return EINVAL;
	return wf_sched_install(worker, ops, arg);
}

int weft_sched_install_all(const weft_sched_ops_t *ops, void *arg)
{
	int e = wf_sched_check(ops);
	if (e)
		return e;
	if ((e = wf_ensure_runtime()) != 0)
		return e;
	for (int i = 0; i < wf_rt.nworkers && !e; i++)
		e = wf_sched_install(i, ops, arg);
	return e;
}

int weft_sched_get(int worker, const weft_sched_ops_t **ops)
{
	if (!ops)
		return EINVAL;
	int e = wf_ensure_runtime();
	if (e)
		return e;
	if (worker < 0 || worker >= wf_rt.nworkers)
		return EINVAL;
	*ops = atomic_load_explicit(&wf_rt.workers[worker]->sched_domain, memory_order_acquire);
	return 0;
}

/* The ULT t names (WEFT_NULL: the caller), or NULL with *e set. */
static wf_ult_t *hint_target(weft_t t, int *e)
{
	if ((*e = wf_ensure_runtime()) != 0)
		return NULL;
	wf_ult_t *u = t == WEFT_NULL ? wf_self() : wf_registry_find(t);
	if (!u)
		*e = t == WEFT_NULL ? EINVAL : ESRCH;
	return u;
}

int weft_sched_sethint(weft_t t, uint64_t hint)
{
	int e;
	wf_ult_t *u = hint_target(t, &e);
	if (u)
		__atomic_store_n(&u->sched_hint, hint, __ATOMIC_RELAXED);
	return e;
}

int weft_sched_gethint(weft_t t, uint64_t *hint)
{
	if (!hint)
		return EINVAL;
	int e;
	wf_ult_t *u = hint_target(t, &e);
	if (u)
		*hint = __atomic_load_n(&u->sched_hint, __ATOMIC_RELAXED);
	return e;
}

weft_t weft_sched_node_thread(const weft_sched_node_t *n)
{
	return n ? wf_ult_of_node(n)->id : 0;
}

uint64_t weft_sched_node_hint(const weft_sched_node_t *n)
{
	if (!n)
		return 0;
	return __atomic_load_n(&wf_ult_of_node(n)->sched_hint, __ATOMIC_RELAXED);
}

int weft_sched_node_worker(const weft_sched_node_t *n)
{
	if (!n)
		return -1;
	return wf_ult_of_node(n)->bound_worker;
}

int weft_sched_node_prio(const weft_sched_node_t *n, int *policy)
{
	if (!n)
		return -1;
	const wf_ult_t *u = wf_ult_of_node(n);
	if (policy)
		*policy = u->sched_policy;
	return __atomic_load_n(&u->rank, __ATOMIC_RELAXED);
}

/* ---- POSIX scheduling parameters (src/sched/prio.c) -------------------------- */

int weft_setschedparam(weft_t t, int policy, int prio)
{
	int e = wf_prio_check(policy, prio);
	if (e)
		return e;
	wf_ult_t *u = hint_target(t, &e);
	if (!u)
		return e;
	wf_setsched(u, policy, prio);
	return 0;
}

void wf_setsched(wf_ult_t *u, int policy, int prio)
{
	if (wf_prio_set(u, policy, prio))
		wf_yield(); /* to the tail of its new priority, behind those that now outrank it */
	else
		wf_resched_point();
}

int weft_getschedparam(weft_t t, int *policy, int *prio)
{
	if (!policy || !prio)
		return EINVAL;
	int e;
	wf_ult_t *u = hint_target(t, &e);
	if (u) {
		*policy = u->sched_policy;
		*prio = u->sched_prio;
	}
	return e;
}
