/* The native thread API: create, join, detach, exit, self, yield, park. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"
#include "trace/trace.h"
#include "util/fence.h"
#include "util/sys.h"
#include "sync/wait.h"

/* First code of every ULT (through the context trampoline). */
static void ult_entry(void *transfer, void *arg)
{
	wf_ctx_entered();
	wf_after_switch(transfer);
	wf_ult_t *u = arg;
	u->retval = u->fn(u->arg);
	if (unlikely(u->tsd != NULL))
		wf_ult_exiting(u, 0); /* returning does not run cleanup handlers */
	wf_exit_current(wf_worker_self(), u);
}

/* ThreadSanitizer reports name a ULT's fiber by its weft name, or its id. */
static void name_fiber(wf_ult_t *u)
{
	char buf[sizeof u->name + 8];
	if (u->name[0])
		snprintf(buf, sizeof buf, "%.*s", (int)sizeof u->name, u->name);
	else
		snprintf(buf, sizeof buf, "ULT %llu", (unsigned long long)u->id);
	wf_ctx_set_name(&u->ctx, buf);
}

void wf_ult_free(wf_worker_t *w, wf_ult_t *u)
{
	wf_registry_remove(w, u);
	wf_stack_free(w, u);
}

int weft_create(weft_t *t, const weft_attr_t *attr, void *(*fn)(void *), void *arg)
{
	if (!t || !fn || (attr && attr->magic_ != WF_ATTR_MAGIC))
		return EINVAL;
	int e = wf_ensure_runtime();
	if (e)
		return e;
	int bound = attr ? attr->worker_ : -1;
	if (bound >= wf_rt.nworkers)
		return EINVAL;
	size_t size = attr && attr->stacksize_ ? attr->stacksize_ : wf_rt.stack_size;
	void *addr = attr ? attr->stackaddr_ : NULL;

	wf_worker_t *w = wf_worker_self();
	wf_ult_t *u;
	if ((e = wf_stack_alloc(w, size, addr, attr ? attr->guardsize_ : 0, &u)))
		return e;
	u->fn = fn;
	u->arg = arg;
	u->bound_worker = bound;
	u->last_worker = -1;
	if (attr) {
		memcpy(u->name, attr->name_, sizeof u->name);
		u->px_policy = attr->sched_policy_;
		u->px_prio = attr->sched_prio_;
		atomic_store_explicit(&u->sig_mask, attr->sigmask_, memory_order_relaxed);
		if (attr->detached_)
			atomic_store_explicit(&u->joiner, WF_JOIN_DETACHED, memory_order_relaxed);
	} else {
		atomic_store_explicit(&u->sig_mask, 0, memory_order_relaxed);
	}
	wf_ctx_make(&u->ctx, u->ctx.stack_lo, u->ctx.stack_size, u->ctx.uc, ult_entry, u);
	if ((e = wf_registry_add(w, u))) {
		wf_stack_free(w, u);
		return e;
	}
	*t = u->id; /* before it can run: a detached ULT may be gone at once */
	if (WF_TSAN)
		name_fiber(u);
	if (w)
		__atomic_store_n(&w->created, w->created + 1, __ATOMIC_RELEASE);
	else
		atomic_fetch_add_explicit(&wf_rt.foreign_created, 1, memory_order_acq_rel);
	if (WF_TRACING())
		wf_trace_create(w, u);
	wf_make_runnable(w, u);
	return 0;
}

/* Claim an exited ULT for its joiner or detacher: EXITED -> CLAIMED. */
static int claim(wf_ult_t *u)
{
	uintptr_t e = WF_JOIN_EXITED;
	return atomic_compare_exchange_strong_explicit(&u->joiner, &e, WF_JOIN_CLAIMED,
						       memory_order_acq_rel, memory_order_acquire);
}

/* Cycles of joins (EDEADLK).
 *
 * A joiner publishes its link (self->joining = target) before it blocks;
 * the context that then registers it as the target's joiner (the JOIN
 * commit, sched.c) follows the links from the target, after its CAS on
 * the target's joiner word. That CAS is the full fence between publishing
 * one's own link and reading the next one, so of two ULTs that join each
 * other at once at least one sees the cycle (and of a longer cycle, the
 * last to commit). A cycle found is undone: the joiner is taken back out
 * of the joiner word and woken with EDEADLK.
 *
 * Memory: the commit reads its target t while the joiner (which would
 * free t) waits on join_checking. Following links past t - only when t is
 * itself joining and a ULT is already registered as p's joiner, which is
 * rare even in chains of joins - reads ULTs that may finish their joins
 * and free their targets at any moment. So such walkers, and cancellers
 * (wf_join_cancel), announce themselves in join_walkers and then issue the
 * heavy side of an asymmetric fence (util/fence.h); a joiner clears its
 * link, issues the light side, and waits for join_walkers to drain before
 * it frees its target (join_retire): either the walker reads the cleared
 * link, or the joiner sees the walker and waits. The common join thus pays
 * no locked instruction of its own. Cycles longer than JOIN_CYCLE_MAX ULTs
 * are not looked for (POSIX: a deadlock "may" be detected). */
#define JOIN_CYCLE_MAX 64

static atomic_int join_walkers;

/* Spin until *flag is 0; yield the CPU now and then, in case the thread
 * that clears it waits for this very CPU. */
static void wait_zero(atomic_int *flag)
{
	for (unsigned i = 1; atomic_load_explicit(flag, memory_order_acquire); i++) {
		wf_cpu_relax();
		if ((i & 1023) == 0)
			WF_SYS(sched_yield)();
	}
}

int wf_join_closes_cycle(wf_ult_t *p, wf_ult_t *t)
{
	/* t is alive: p, its joiner, waits for us before it can free it. */
	wf_ult_t *v = atomic_load_explicit(&t->joining, memory_order_seq_cst);
	if (!v || v == p)
		return v == p;
	/* A longer cycle through p needs a ULT registered as p's joiner. If
	 * none is yet, the one that registers later finds the cycle: its CAS
	 * on p's joiner word comes after ours on t's, so its walk from p reads
	 * every link ours would. This keeps chains of joins (each ULT joining
	 * one that is itself joining) off the heavy fence. */
	if (!wf_joiner_ult(atomic_load_explicit(&p->joiner, memory_order_seq_cst)))
		return 0;
	atomic_fetch_add_explicit(&join_walkers, 1, memory_order_seq_cst);
	wf_fence_heavy();
	int found = 0;
	v = atomic_load_explicit(&t->joining, memory_order_seq_cst); /* again, announced */
	for (int depth = 0; v && depth < JOIN_CYCLE_MAX; depth++) {
		if (v == p) {
			found = 1;
			break;
		}
		v = atomic_load_explicit(&v->joining, memory_order_seq_cst);
	}
	atomic_fetch_sub_explicit(&join_walkers, 1, memory_order_release);
	return found;
}

/* self is done joining: clear its link, and let walkers that may have
 * followed it to its target finish before the target is freed. */
static void join_retire(wf_ult_t *self)
{
	atomic_store_explicit(&self->joining, NULL, memory_order_relaxed);
	wf_fence_light(); /* the walkers' side: wf_fence_heavy */
	wait_zero(&join_walkers);
}

/* weft_cancel of a ULT u that may be blocked joining: take it back out of
 * its target's joiner word (u -> NONE), which makes u ours to wake. Its
 * target is u->joining, read while announced as a walker, so the target is
 * not freed meanwhile (join_retire). The CAS races with the target's exit
 * (which claims u with a CAS too) and with the JOIN commit's own check
 * (sched.c): one of them wins. Returns 1 if u was taken out and queued. */
int wf_join_cancel(wf_ult_t *u)
{
	atomic_fetch_add_explicit(&join_walkers, 1, memory_order_seq_cst);
	wf_fence_heavy();
	wf_ult_t *t = atomic_load_explicit(&u->joining, memory_order_seq_cst);
	int taken = t && wf_join_take_back(t, u);
	atomic_fetch_sub_explicit(&join_walkers, 1, memory_order_release);
	if (taken) {
		u->join_seen = WF_JOIN_CANCELED;
		wf_make_runnable(wf_worker_self(), u);
	}
	return taken;
}

static int join_as_ult(wf_worker_t *w, wf_ult_t *self, wf_ult_t *u)
{
	/* The link for cycle checks; the JOIN commit's CAS orders it before
	 * the commit's reading of u's link. Release: a walker that follows it
	 * reads u's fields. */
	atomic_store_explicit(&self->joining, u, memory_order_release);
	uintptr_t j = atomic_load_explicit(&u->joiner, memory_order_acquire);
	int e = 0;
	if (j == WF_JOIN_NONE) {
		/* Block; the next context registers us as u's joiner once we are
		 * off our stack (sched.c, WF_AFTER_JOIN). */
		/* A cancel that comes before this check is acted on here; one
		 * that comes after it finds self->joining and takes us out
		 * (wf_join_cancel), or the JOIN commit sees it. */
		if (wf_cancel_due(self)) {
			join_retire(self);
			wf_cancel_act();
		}
		self->join_target = u;
		self->block_reason = WF_BLOCK_JOIN;
		self->block_obj = u;
		wf_block(w, self, WF_AFTER_JOIN);
		self->block_reason = WF_BLOCK_NONE;
		wait_zero(&self->join_checking); /* the commit is done with u */
		j = self->join_seen;
		if (j == WF_JOIN_CANCELED) {
			/* weft_cancel took us out; u stays joinable, as POSIX says. */
			join_retire(self);
			wf_cancel_act();
		}
		if (j == 0)
			j = WF_JOIN_CLAIMED; /* registered, and woken by u's exit */
		else if (j == WF_JOIN_DEADLK)
			e = EDEADLK;
		else if (j != WF_JOIN_EXITED)
			e = EINVAL; /* a detach or another joiner came first */
	} else if (j != WF_JOIN_EXITED) {
		e = EINVAL;
	}
	if (!e && j == WF_JOIN_EXITED && !claim(u))
		e = EINVAL;
	join_retire(self); /* before u may be freed: no walker may be on it */
	return e;
}

static int join_as_foreign(wf_ult_t *u)
{
	wf_parker_t *p = wf_foreign_parker();
	atomic_store_explicit(&p->state, WF_PARK_EMPTY, memory_order_relaxed);
	uintptr_t e = WF_JOIN_NONE;
	if (atomic_compare_exchange_strong_explicit(&u->joiner, &e, (uintptr_t)p | 1,
						    memory_order_acq_rel, memory_order_acquire)) {
		while (atomic_load_explicit(&p->state, memory_order_acquire) != WF_PARK_NOTIFIED)
			wf_futex_wait(&p->state, WF_PARK_EMPTY, NULL);
		return 0;
	}
	return e == WF_JOIN_EXITED && claim(u) ? 0 : EINVAL;
}

int weft_join(weft_t t, void **ret)
{
	if (atomic_load_explicit(&wf_rt.state, memory_order_acquire) != WF_RT_RUNNING)
		return ESRCH;
	wf_ult_t *u = wf_registry_find(t);
	if (!u)
		return ESRCH;
	wf_testcancel(); /* a cancellation point */
	wf_worker_t *w = wf_worker_self();
	wf_ult_t *self = w ? w->current : NULL;
	if (u == self)
		return EDEADLK;
	int e = self ? join_as_ult(w, self, u) : join_as_foreign(u);
	if (e)
		return e;
	if (ret)
		*ret = u->retval;
	wf_ult_free(wf_worker_self(), u);
	return 0;
}

int weft_detach(weft_t t)
{
	if (atomic_load_explicit(&wf_rt.state, memory_order_acquire) != WF_RT_RUNNING)
		return ESRCH;
	wf_ult_t *u = wf_registry_find(t);
	if (!u)
		return ESRCH;
	uintptr_t e = WF_JOIN_NONE;
	if (atomic_compare_exchange_strong_explicit(&u->joiner, &e, WF_JOIN_DETACHED,
						    memory_order_acq_rel, memory_order_acquire))
		return 0;
	if (e == WF_JOIN_EXITED && claim(u)) {
		wf_ult_free(wf_worker_self(), u);
		return 0;
	}
	return EINVAL;
}

void weft_exit(void *ret)
{
	wf_worker_t *w = wf_worker_self();
	if (!w || !w->current)
		wf_panic("weft_exit called from a kernel thread that is not a ULT");
	wf_ult_t *self = w->current;
	self->retval = ret; /* before the handlers: an unwind comes back here */
	/* Handlers and destructors may block and resume on another worker. */
	wf_ult_exiting(self, 1);
	w = wf_worker_self();
	if (self == wf_rt.root)
		atomic_store_explicit(&wf_rt.root_exited, 1, memory_order_release);
	wf_exit_current(w, self);
}

weft_t weft_self(void)
{
	wf_worker_t *w = wf_worker_self();
	return w && w->current ? w->current->id : WEFT_NULL;
}

int weft_equal(weft_t a, weft_t b)
{
	return a == b;
}

int weft_yield(void)
{
	wf_worker_t *w = wf_worker_self();
	if (!w) {
		WF_SYS(sched_yield)();
		return 0;
	}
	wf_yield_to_next(w, w->current);
	return 0;
}

int weft_worker_id(void)
{
	wf_worker_t *w = wf_worker_self();
	return w ? w->id : -1;
}

int weft_num_workers(void)
{
	return atomic_load_explicit(&wf_rt.state, memory_order_acquire) == WF_RT_RUNNING
		       ? wf_rt.nworkers
		       : 0;
}

int weft_park(void)
{
	wf_worker_t *w = wf_worker_self();
	if (!w || !w->current)
		return EPERM;
	wf_ult_t *self = w->current;
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
	return 0;
}

int weft_park_handoff(weft_t t)
{
	wf_worker_t *w = wf_worker_self();
	if (!w || !w->current)
		return EPERM;
	wf_ult_t *u = wf_registry_find(t);
	if (!u)
		return ESRCH;
	wf_ult_t *self = w->current;
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
