/* ULT descriptors: made, started, freed. The descriptor and its states are
 * described in ult.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/prio.h"
#include "sched/sched.h"
#include "trace/trace.h"

void (*wf_ult_return_hook)(wf_ult_t *u);

/* First code of every ULT (through the context trampoline). */
static void ult_entry(void *transfer, void *arg)
{
	wf_ctx_entered();
	wf_worker_t *w = transfer;
	wf_after_switch(w);
	errno = 0; /* a new thread's (sched.c, "errno"): its own, or its worker's */
	wf_ult_t *u = arg;
	u->retval = u->fn(u->arg);
	if (unlikely(u->tsd != NULL || u->tp != NULL))
		wf_ult_return_hook(u); /* thread_local and thread-specific data destructors */
	wf_exit_current(wf_worker_self(), u);
}

/* The one initialisation of a descriptor, fresh or reused: every field but
 * the stack record and the context (their layers own them; wf_ctx_make or
 * wf_ctx_init_current sets the context up) and the entry (fn, arg), which
 * wf_ult_spawn sets and a thread's descriptor, zeroed, never uses. Field by field, not a memset:
 * on a reused stack a memset of the whole descriptor showed up as the most
 * expensive instruction of a create+join. */
static inline __attribute__((always_inline)) void ult_init(wf_ult_t *u)
{
	u->next = NULL;
	u->id = 0;
	atomic_store_explicit(&u->parker.state, WF_PARK_EMPTY, memory_order_relaxed);
	u->parker.ult = u;
	u->state = WF_NEW;
	u->bound_worker = -1;
	u->last_worker = -1;
	u->sched_hint = 0;
	u->tp = NULL;
	u->saved_errno = 0;
	atomic_store_explicit(&u->joiner, WF_JOIN_NONE, memory_order_relaxed);
	atomic_store_explicit(&u->joining, NULL, memory_order_relaxed);
	u->join_target = NULL;
	u->join_seen = 0;
	atomic_store_explicit(&u->join_checking, 0, memory_order_relaxed);
	u->retval = NULL;
	atomic_store_explicit(&u->cancel, 0, memory_order_relaxed);
	atomic_store_explicit(&u->wait_addr, NULL, memory_order_relaxed);
	u->cleanup = NULL;
	u->tsd = NULL;
	u->px_unwind = NULL;
	u->sched_policy = SCHED_OTHER;
	u->sched_prio = u->rank = u->boost = 0;
	u->px_affinity = -1;
	u->px_nheld = 0;
	u->px_blocked_on = NULL;
	atomic_store_explicit(&u->sig_mask, 0, memory_order_relaxed);
	atomic_store_explicit(&u->sig_pending, 0, memory_order_relaxed);
	atomic_store_explicit(&u->sig_waiting, 0, memory_order_relaxed);
	atomic_store_explicit(&u->sig_placed, 0, memory_order_relaxed);
	atomic_store_explicit(&u->sig_gone, 0, memory_order_relaxed);
	u->block_reason = WF_BLOCK_NONE;
	u->block_obj = NULL;
	atomic_store_explicit(&u->cpu_ns, 0, memory_order_relaxed);
	atomic_store_explicit(&u->cpu_seen, 0, memory_order_relaxed);
	u->name[0] = '\0';
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

int wf_ult_spawn(const weft_attr_t *attr, void *(*fn)(void *), void *arg, weft_t *id)
{
	wf_worker_t *w = wf_worker_self();
	size_t size = attr && attr->stacksize_ ? attr->stacksize_ : wf_rt.stack_size;
	wf_stack_t *s;
	int e = wf_stack_alloc(w ? &w->stacks : NULL, size, attr ? attr->stackaddr_ : NULL,
			       attr ? attr->guardsize_ : 0, &s);
	if (e)
		return e;
	if (wf_stack_prefill_kicked())
		wf_wake_one_idle(NULL); /* to lay out the next stacks (stack.c, "prefilling") */
	wf_ult_t *u = wf_ult_of_stack(s);
	ult_init(u);
	u->fn = fn;
	u->arg = arg;
	if (unlikely((attr && attr->tls_ ? attr->tls_ : wf_rt.tls) == WEFT_TLS_OWN)) {
		e = wf_tls_probe(NULL);
		if (!e && !(u->tp = wf_tls_alloc(w ? &w->tls : NULL)))
			e = ENOMEM;
		if (e) {
			wf_stack_free(w ? &w->stacks : NULL, s);
			return e;
		}
	}
	if (attr) {
		u->bound_worker = u->px_affinity = attr->worker_;
		memcpy(u->name, attr->name_, sizeof u->name);
		if (attr->sched_policy_ >= 0) {
			u->sched_policy = attr->sched_policy_;
			u->sched_prio = attr->sched_prio_;
			u->rank = wf_prio_rank(u->sched_policy, u->sched_prio);
		}
		atomic_store_explicit(&u->sig_mask, attr->sigmask_, memory_order_relaxed);
		if (attr->detached_)
			atomic_store_explicit(&u->joiner, WF_JOIN_DETACHED, memory_order_relaxed);
	}
	if ((!attr || attr->sched_policy_ < 0) && w && w->current) {
		/* Scheduling parameters are inherited (PTHREAD_INHERIT_SCHED),
		 * a boost is not. */
		wf_ult_t *me = w->current;
		u->sched_policy = me->sched_policy;
		u->sched_prio = me->sched_prio;
		u->rank = wf_prio_rank(u->sched_policy, u->sched_prio);
	}
	wf_ctx_make(&u->ctx, s->lo, s->size, s->reserved, ult_entry, u);
	if ((e = wf_registry_add(w ? &w->slots : NULL, u))) {
		if (u->tp)
			wf_tls_release(w ? &w->tls : NULL, u->tp);
		wf_ctx_forget(&u->ctx);
		wf_stack_free(w ? &w->stacks : NULL, s);
		return e;
	}
	if (u->tp)
		wf_tls_set_tid(u->tp, WF_TLS_TID_BASE + (int)(u->id & ((1u << WF_SLOT_BITS) - 1)));
	*id = u->id; /* before it can run: a detached ULT may be gone at once */
	if (WF_TSAN)
		name_fiber(u);
	uint64_t mask = atomic_load_explicit(&u->sig_mask, memory_order_relaxed);
	if (unlikely(mask))
		wf_kmask_account(mask, 1); /* sched.c, "Signal masks" */
	if (w)
		__atomic_store_n(&w->created, w->created + 1, __ATOMIC_RELEASE);
	else
		atomic_fetch_add_explicit(&wf_rt.foreign_created, 1, memory_order_acq_rel);
	if (WF_TRACING())
		wf_trace_create(w, u);
	wf_make_runnable(w, u);
	if (w && unlikely(w->resched))
		wf_resched_point(); /* it outranks its creator (prio.c) */
	return 0;
}

wf_ult_t *wf_ult_for_thread(int *e)
{
	wf_stack_t *s = wf_stack_thread();
	if (!s) {
		*e = ENOMEM;
		return NULL;
	}
	wf_ult_t *u = wf_ult_of_stack(s);
	ult_init(u);
	u->state = WF_RUNNING;
	wf_ctx_init_current(&u->ctx, s->reserved);
	if ((*e = wf_registry_add(NULL, u))) {
		wf_stack_free(NULL, s);
		return NULL;
	}
	return u;
}

/* ---- fork ---------------------------------------------------------------- */

static wf_ult_t *fork_kept;

static void forget_gone(wf_ult_t *u)
{
	if (u == fork_kept)
		return;
	/* Its thread control block stays where it is: its malloc cache may
	 * have been half-way through a change (tls.c keeps libc's block of a
	 * reused one), and the root's is its kernel thread's. Its
	 * thread-specific data is left alone too, as glibc's child does. */
	u->tp = NULL;
	wf_stack_abandoned(&u->stack);
	wf_ult_free(NULL, u); /* no signal is being given out (wf_carriers_forked) */
}

void wf_ults_forked(wf_ult_t *kept)
{
	fork_kept = kept;
	wf_registry_sweep(forget_gone);
	fork_kept = NULL;
	/* Whoever was joining it is gone; whoever it was joining is gone. */
	uintptr_t j = atomic_load_explicit(&kept->joiner, memory_order_relaxed);
	if (j != WF_JOIN_DETACHED)
		atomic_store_explicit(&kept->joiner, WF_JOIN_NONE, memory_order_relaxed);
	atomic_store_explicit(&kept->joining, NULL, memory_order_relaxed);
	kept->join_target = NULL;
	atomic_store_explicit(&kept->join_checking, 0, memory_order_relaxed);
	/* A child's CPU times start at zero (POSIX fork); its worker's
	 * clock was restarted (wf_carriers_forked). */
	atomic_store_explicit(&kept->cpu_ns, 0, memory_order_relaxed);
	atomic_store_explicit(&kept->cpu_seen, 0, memory_order_relaxed);
	/* A child's pending signals are empty (POSIX fork). */
	atomic_store_explicit(&kept->sig_pending, 0, memory_order_relaxed);
	atomic_store_explicit(&kept->sig_placed, 0, memory_order_relaxed);
	atomic_store_explicit(&kept->sig_waiting, 0, memory_order_relaxed);
	kept->px_blocked_on = NULL;
}

static const char *state_name(int s)
{
	static const char *const names[] = {"NEW", "PARKED", "RUNNING", "RUNNABLE", "EXITED"};
	return s >= 0 && s < (int)(sizeof names / sizeof *names) ? names[s] : "(bad)";
}

void wf_ult_bad_move(const wf_ult_t *u, int to, const char *func)
{
	wf_panic_at(func, "ULT %llu \"%.*s\": bad state move %s -> %s", (unsigned long long)u->id,
		    (int)sizeof u->name, u->name, state_name(u->state), state_name(to));
}

/* The stack layer's hooks: which stack runs here, and a ULT's name. */
static const wf_stack_t *running_stack(void)
{
	wf_worker_t *w = wf_worker_self();
	return w && w->current ? &w->current->stack : NULL;
}

static int describe_stack(const wf_stack_t *s, char *buf, size_t n)
{
	const wf_ult_t *u = wf_ult_of_stack(s);
	return snprintf(buf, n, "ULT %llu \"%.*s\"", (unsigned long long)u->id, (int)sizeof u->name,
			u->name);
}

const wf_stack_hooks_t wf_ult_stack_hooks = {running_stack, describe_stack};
