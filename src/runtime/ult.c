/* The native thread API: create, join, detach, exit, self, yield, park.
 * Thin facades: argument checks and attributes here; the protocols are the
 * scheduler's (src/sched: ult.c, join.c, park.c) and the exit handlers the
 * synchronization layer's (src/sync/cancel.c). */
#include <string.h>

#include "runtime/runtime.h"
#include "sched/preempt.h"
#include "sync/wait.h"

int wf_create(weft_t *t, const weft_attr_t *attr, void *(*fn)(void *), void *arg, int inherit_mask)
{
	if (!t || !fn || (attr && attr->magic_ != WF_ATTR_MAGIC))
		return EINVAL;
	int e = wf_ensure_runtime(); /* main becomes a ULT, with its mask */
	if (e)
		return e;
	if (attr && attr->worker_ >= wf_rt.nworkers)
		return EINVAL;
	/* weft_create: the new ULT starts with its creator's signal mask, as a
	 * new POSIX thread does - a kernel thread switches masks (a system
	 * call) only between ULTs whose masks differ, so children of a main
	 * that blocks a signal would otherwise cost two per create and join. */
	wf_ult_t *me = inherit_mask ? wf_self() : NULL;
	uint64_t mask = me ? atomic_load_explicit(&me->sig_mask, memory_order_relaxed) : 0;
	weft_attr_t a;
	if (unlikely(mask)) {
		if (attr)
			a = *attr;
		else
			weft_attr_init(&a);
		a.sigmask_ = mask;
		attr = &a;
	}
	e = wf_ult_spawn(attr, fn, arg, t);
	wf_preempt_point(); /* a create loop owes its worker a slice (sched/preempt.c) */
	return e;
}

int weft_create(weft_t *t, const weft_attr_t *attr, void *(*fn)(void *), void *arg)
{
	return wf_create(t, attr, fn, arg, 1);
}

int wf_join_id(weft_t t, void **ret)
{
	int e;
	/* A signal sent while it waits: its handler runs, and the join goes
	 * on, as glibc's does (sched/join.c). */
	while (unlikely((e = wf_join(t, ret)) == EINTR))
		wf_sig_deliver(wf_self());
	if (unlikely(e == ECANCELED))
		wf_cancel_act();        /* a cancellation point; t stays joinable */
	wf_sig_deliver_sent(wf_self()); /* sent after it was taken */
	wf_preempt_point();             /* and a join loop one (sched/preempt.c) */
	return e;
}

int weft_join(weft_t t, void **ret)
{
	return wf_join_id(t, ret);
}

int wf_detach_id(weft_t t)
{
	if (atomic_load_explicit(&wf_rt.state, memory_order_acquire) != WF_RT_RUNNING)
		return ESRCH;
	wf_ult_t *u = wf_registry_find(t);
	return u ? wf_detach(u) : ESRCH;
}

int weft_detach(weft_t t)
{
	return wf_detach_id(t);
}

void weft_exit(void *ret)
{
	if (!wf_self())
		wf_panic("weft_exit called from a kernel thread that is not a ULT");
	wf_exit(ret);
}

weft_t weft_self(void)
{
	wf_ult_t *self = wf_self();
	return self ? self->id : WEFT_NULL;
}

int weft_equal(weft_t a, weft_t b)
{
	return a == b;
}

int weft_yield(void)
{
	/* What was sent to it while it waited for its turn (sync/signal.c). */
	wf_sig_deliver_sent(wf_yield());
	return 0;
}

int weft_worker_id(void)
{
	wf_worker_t *w = wf_worker_self();
	return w ? w->id : -1;
}

int weft_num_workers(void)
{
	if (atomic_load_explicit(&wf_rt.state, memory_order_acquire) == WF_RT_RUNNING)
		return wf_rt.nworkers;
	/* Not running: what weft_init with the defaults would use (a query
	 * starts nothing). */
	weft_config_t c;
	return weft_config_init(&c) == 0 ? c.workers : 0;
}

int weft_park(void)
{
	wf_ult_t *self = wf_self();
	if (!self)
		return EPERM;
	self->block_reason = WF_BLOCK_PARK;
	self->block_obj = NULL;
	wf_park(&self->parker);
	self->block_reason = WF_BLOCK_NONE;
	return 0;
}

int weft_unpark(weft_t t)
{
	if (atomic_load_explicit(&wf_rt.state, memory_order_acquire) != WF_RT_RUNNING)
		return ESRCH;
	wf_ult_t *u = wf_registry_find(t);
	if (!u)
		return ESRCH;
	wf_unpark(&u->parker);
	wf_resched_point();
	return 0;
}

int weft_park_handoff(weft_t t)
{
	wf_ult_t *self = wf_self();
	if (!self)
		return EPERM;
	wf_ult_t *u = wf_registry_find(t);
	if (!u)
		return ESRCH;
	self->block_reason = WF_BLOCK_HANDOFF;
	self->block_obj = u;
	wf_park_handoff(&self->parker, &u->parker);
	self->block_reason = WF_BLOCK_NONE;
	return 0;
}

int weft_getname(weft_t t, char *buf, size_t n)
{
	if (!buf)
		return EINVAL;
	wf_ult_t *u = wf_registry_find(t);
	if (!u)
		return ESRCH;
	size_t len = strnlen(u->name, sizeof u->name);
	if (n <= len)
		return ERANGE;
	memcpy(buf, u->name, len);
	buf[len] = '\0';
	return 0;
}
