/* How the core calls a worker's scheduler, and how a scheduler is
 * installed (the protocol is at the top of policy.c). The built-in steal
 * scheduler is called directly, the others through their table: the
 * default path pays a compare, not an indirect call. */
#ifndef WF_POLICY_H
#define WF_POLICY_H

#include "sched/sched.h"
#include "sched/steal.h"

/* Hand u, RUNNABLE, to w's scheduler. Returns the scheduler's "another
 * worker may take it". Called only by w's owner. */
static inline int wf_policy_put(wf_worker_t *w, wf_ult_t *u, int why)
{
	if (likely(w->sched_ops == &weft_sched_steal))
		return wf_steal_put(w->sched_state, u, why);
	return w->sched_ops->put(w->sched_state, &u->node, why);
}

/* The ULT w's scheduler runs next, or NULL. Called only by w's owner. */
static inline wf_ult_t *wf_policy_get(wf_worker_t *w)
{
	if (likely(w->sched_ops == &weft_sched_steal))
		return wf_steal_get(w->sched_state);
	weft_sched_node_t *n = w->sched_ops->get(w->sched_state);
	return n ? wf_ult_of_node(n) : NULL;
}

/* The built-in schedulers, by enum weft_sched_kind - 1 (WEFT_SCHED_STEAL
 * first). */
#define WF_SCHED_BUILTINS 3
WF_HIDDEN extern const weft_sched_ops_t *const wf_sched_builtin[WF_SCHED_BUILTINS];

/* 0, or EINVAL for a table weft cannot use. */
WF_HIDDEN int wf_sched_check(const weft_sched_ops_t *ops);
/* The scheduler called name (built-in or registered), or NULL. */
WF_HIDDEN const weft_sched_ops_t *wf_sched_find(const char *name);
WF_HIDDEN int wf_sched_register(const weft_sched_ops_t *ops);

/* Give worker w, not running yet, its first scheduler. 0, ENOMEM or
 * init's error. */
WF_HIDDEN int wf_sched_start(wf_worker_t *w, const weft_sched_ops_t *ops);
/* Workers changed schedulers: note whether all run the same one. */
WF_HIDDEN void wf_sched_domains_changed(void);
/* Drop w's scheduler (its queue is empty); after its kernel thread ended. */
WF_HIDDEN void wf_sched_stop(wf_worker_t *w);
/* Around a fork (enum wf_fork_phase): the registered tables' lock; in
 * the child also the queues the built-in tables share. wf_sched_forked: in
 * the child, w gets a fresh state of the table it ran (0 or ENOMEM). */
WF_HIDDEN void wf_policy_fork(int phase);
WF_HIDDEN int wf_sched_forked(wf_worker_t *w);
/* share.c's central queue, emptied in the child of a fork. */
WF_HIDDEN void wf_share_forked(void);
/* Make worker `worker` run ops (checked) from now on; from any thread.
 * 0, ENOMEM, ESRCH (the runtime stopped first) or init's error. */
WF_HIDDEN int wf_sched_install(int worker, const weft_sched_ops_t *ops, void *arg);
/* Carry out an install posted to w, if any. Called only by w's owner. */
WF_HIDDEN void wf_sched_serve(wf_worker_t *w);
static inline void wf_sched_poll(wf_worker_t *w)
{
	if (unlikely(atomic_load_explicit(&w->sched_req, memory_order_relaxed) != NULL))
		wf_sched_serve(w);
}
/* Answer an install posted to w that w will never serve: its kernel thread
 * has ended. */
WF_HIDDEN void wf_sched_refuse(wf_worker_t *w);

/* Thieves: bracket every look at another worker's scheduler state, so that
 * an install does not free it under them (policy.c). */
static inline void wf_sched_scan_begin(wf_worker_t *w)
{
	atomic_fetch_add_explicit(&w->scan_seq, 1, memory_order_seq_cst);
}
static inline void wf_sched_scan_end(wf_worker_t *w)
{
	atomic_fetch_add_explicit(&w->scan_seq, 1, memory_order_release);
}

/* Re-queue u, RUNNABLE, from w (the core's enqueue, sched.c). */
WF_HIDDEN void wf_sched_requeue(wf_worker_t *w, wf_ult_t *u, int why);

#endif
