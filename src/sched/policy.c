/* Installable schedulers: which table each worker runs, and how a worker
 * changes tables while ULTs run.
 *
 * A scheduler (include/weft/sched.h) is a table of operations over a state
 * block per worker, after "Configurable, Lightweight Threads on a KSR
 * Multiprocessor" (Ghosh, Mukherjee, Schwan), section 5. The core
 * (sched.c) owns everything around it and calls it at three points:
 *   put   whenever a ULT becomes ready on this worker: created, woken,
 *         yielding, or moved here by an install. ULTs made ready for this
 *         worker by other kernel threads wait in its inbox and are put by
 *         the owner at its next decision, so put and get always run on the
 *         owner and a scheduler's state needs no lock.
 *   get   at every scheduling decision.
 *   give  when a worker is idle: it asks each other worker running the
 *         same table for work. A scheduler's "domain" is the set of workers
 *         running its table; work moves between domains only with ULTs that
 *         wake elsewhere, never by stealing.
 *
 * Why this shape. Argobots splits a scheduler into pools (queues with an
 * access type, any thread may push) and a scheduler loop the user writes;
 * Boost.Fiber's algorithm is per thread and single-threaded, with a remote
 * ready queue the library keeps. weft keeps Boost.Fiber's rule - the
 * runtime owns the loop, sleeping, and the cross-thread queue, so a
 * scheduler is a plain single-threaded data structure (the lottery example
 * is a list and a random number) - and takes from the KSR paper the idle
 * hook and the per-processor install. Stealing is the one place a
 * scheduler must be concurrent, and it is optional (give).
 *
 * Installing while running (weft_sched_install). The new state is
 * allocated by the caller and handed to the target worker as a request
 * (w->sched_req); the worker carries it out at its next decision
 * (wf_sched_serve), so only the owner ever switches its own tables:
 *   1. init the new state on the owner; on failure nothing changes;
 *   2. switch the owner's fields (sched_ops, sched_state) and publish the
 *      block for thieves (sched_pub, seq_cst);
 *   3. wait out the thieves: every other worker brackets each look at a
 *      victim's block with scan_seq (odd while scanning, seq_cst). After
 *      step 2 a worker that was not scanning will see the new block, and
 *      one that was has an odd count, which we wait to change. (The
 *      store-buffering pattern: publish-then-read here, mark-then-read
 *      there, both seq_cst, so at least one side sees the other.)
 *   4. drain: get from the old state until it is empty, then put each ULT
 *      into the new one (WEFT_SCHED_MIGRATED) - in two passes, since the
 *      two may share a queue; nobody else touches the old state now, so
 *      its get runs alone;
 *   5. fini and free the old state, then answer the caller (its parker).
 * The running ULT is in no queue: it reaches the new scheduler when it
 * next yields or blocks. A queue shared between the workers of a domain
 * (steal's shared FIFO, share's central queue) is drained by each worker
 * that leaves the domain; the last one to leave takes what is left, and a
 * worker only puts into it while it belongs to the domain, so nothing is
 * stranded.
 *
 * A caller running on the target worker does the steps itself, in line.
 * Anybody else posts the request (one at a time per worker), wakes the
 * worker and parks until it answers. A worker that never reaches a
 * decision (a ULT that never yields or blocks) delays the answer.
 */
#include <stdlib.h>
#include <string.h>

#include "sched/policy.h"
#include "sched/prio.h"
#include "util/sys.h"

struct wf_sched_req {
	wf_sched_block_t *block; /* allocated by the caller, ops set */
	void *arg;
	int result;
	wf_parker_t *waiter; /* on the caller's stack */
};

/* ---- names ------------------------------------------------------------- */

#define REGISTERED_MAX 32

static const weft_sched_ops_t *registered[REGISTERED_MAX];
static atomic_int nregistered;
static wf_spinlock_t register_lock;

int wf_sched_check(const weft_sched_ops_t *ops)
{
	if (!ops || ops->abi != WEFT_SCHED_ABI || ops->size < sizeof(weft_sched_ops_t) ||
	    !ops->put || !ops->get || !ops->name || ops->state_size > (64u << 20))
		return EINVAL;
	size_t n = strnlen(ops->name, WEFT_SCHED_NAME_MAX);
	if (n == 0 || n == WEFT_SCHED_NAME_MAX)
		return EINVAL;
	for (size_t i = 0; i < n; i++) {
		char c = ops->name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
			return EINVAL;
	}
	return 0;
}

const weft_sched_ops_t *const wf_sched_builtin[WF_SCHED_BUILTINS] = {
	&weft_sched_steal, &weft_sched_share, &weft_sched_prio};

const weft_sched_ops_t *wf_sched_find(const char *name)
{
	for (int i = 0; i < WF_SCHED_BUILTINS; i++)
		if (strcmp(name, wf_sched_builtin[i]->name) == 0)
			return wf_sched_builtin[i];
	int n = atomic_load_explicit(&nregistered, memory_order_acquire);
	for (int i = 0; i < n; i++)
		if (strcmp(name, registered[i]->name) == 0)
			return registered[i];
	return NULL;
}

int wf_sched_register(const weft_sched_ops_t *ops)
{
	int e = wf_sched_check(ops);
	if (e)
		return e;
	wf_spin_lock(&register_lock);
	int n = atomic_load_explicit(&nregistered, memory_order_relaxed);
	if (wf_sched_find(ops->name))
		e = EEXIST;
	else if (n == REGISTERED_MAX)
		e = ENOSPC;
	else {
		registered[n] = ops;
		atomic_store_explicit(&nregistered, n + 1, memory_order_release);
	}
	wf_spin_unlock(&register_lock);
	return e;
}

/* ---- state blocks ------------------------------------------------------ */

static wf_sched_block_t *block_new(const weft_sched_ops_t *ops)
{
	size_t head = (sizeof(wf_sched_block_t) + WF_CACHELINE - 1) & ~(size_t)(WF_CACHELINE - 1);
	wf_sched_block_t *b;
	if (posix_memalign((void **)&b, WF_CACHELINE, head + ops->state_size))
		return NULL;
	memset(b, 0, head + ops->state_size);
	b->ops = ops;
	b->state = (char *)b + head;
	return b;
}

static void block_free(wf_sched_block_t *b)
{
	if (b && b->ops->fini)
		b->ops->fini(b->state);
	free(b);
}

/* Do all workers run one table? Then a spinning worker can take any work
 * and wakers may rely on it (wf_wake_one_idle). */
void wf_sched_domains_changed(void)
{
	const weft_sched_ops_t *first = atomic_load(&wf_rt.workers[0]->sched_domain);
	int one = 1;
	for (int i = 1; i < wf_rt.nworkers; i++)
		if (atomic_load(&wf_rt.workers[i]->sched_domain) != first)
			one = 0;
	atomic_store_explicit(&wf_rt.one_domain, one, memory_order_relaxed);
}

static void publish(wf_worker_t *w, wf_sched_block_t *b)
{
	if (b->ops->tick) /* the resched points must call it (prio.h) */
		atomic_store_explicit(&wf_resched_used, 1, memory_order_relaxed);
	w->sched_ops = b->ops;
	w->sched_state = b->state;
	w->sched_block = b;
	atomic_store_explicit(&w->sched_domain, b->ops, memory_order_relaxed);
	atomic_store_explicit(&w->sched_pub, b, memory_order_seq_cst);
}

int wf_sched_start(wf_worker_t *w, const weft_sched_ops_t *ops)
{
	wf_sched_block_t *b = block_new(ops);
	if (!b)
		return ENOMEM;
	int e = ops->init ? ops->init(b->state, w->id, NULL) : 0;
	if (e) {
		free(b);
		return e;
	}
	publish(w, b);
	return 0;
}

void wf_sched_stop(wf_worker_t *w)
{
	block_free(w->sched_block);
	w->sched_block = NULL;
	w->sched_ops = NULL;
	w->sched_state = NULL;
	atomic_store(&w->sched_pub, NULL);
}

/* Steps 1-5 of the protocol above. Called only by w's owner. */
static int swap(wf_worker_t *w, wf_sched_block_t *b, void *arg)
{
	if (b->ops->init) {
		int e = b->ops->init(b->state, w->id, arg);
		if (e)
			return e;
	}
	wf_sched_block_t *old = w->sched_block;
	publish(w, b);
	wf_sched_domains_changed();
	for (int i = 0; i < wf_rt.nworkers; i++) {
		wf_worker_t *x = wf_rt.workers[i];
		unsigned s = atomic_load_explicit(&x->scan_seq, memory_order_seq_cst);
		if (x == w || !(s & 1))
			continue;
		for (unsigned spins = 1;
		     atomic_load_explicit(&x->scan_seq, memory_order_acquire) == s; spins++)
			if (spins % 1024)
				wf_cpu_relax();
			else
				WF_SYS(sched_yield)(); /* its kernel thread may be descheduled */
	}
	/* Empty the old state first, then fill the new one: the two may share
	 * a queue (the same table installed again), and putting back while
	 * getting would never end. */
	wf_fifo_t moving = {NULL, NULL};
	weft_sched_node_t *n;
	while ((n = old->ops->get(old->state))) /* a cold path: through the table */
		wf_fifo_push(&moving, wf_ult_of_node(n));
	wf_ult_t *u;
	while ((u = wf_fifo_pop(&moving)))
		wf_sched_requeue(w, u, WEFT_SCHED_MIGRATED);
	block_free(old);
	return 0;
}

void wf_sched_serve(wf_worker_t *w)
{
	struct wf_sched_req *r =
		atomic_exchange_explicit(&w->sched_req, NULL, memory_order_acquire);
	if (!r)
		return;
	wf_parker_t *waiter = r->waiter;
	r->result = swap(w, r->block, r->arg);
	if (r->result)
		free(r->block);
	wf_unpark(waiter); /* the last touch of r: its owner may return now */
}

void wf_sched_refuse(wf_worker_t *w)
{
	struct wf_sched_req *r =
		atomic_exchange_explicit(&w->sched_req, NULL, memory_order_acquire);
	if (!r)
		return;
	wf_parker_t *waiter = r->waiter;
	free(r->block);
	r->result = ESRCH;
	wf_unpark(waiter);
}

int wf_sched_install(int worker, const weft_sched_ops_t *ops, void *arg)
{
	wf_sched_block_t *b = block_new(ops);
	if (!b)
		return ENOMEM;
	wf_worker_t *me = wf_worker_self();
	if (me && me->id == worker && me->current) {
		/* On the target worker already: its owner is us. */
		int e = swap(me, b, arg);
		if (e)
			free(b);
		return e;
	}
	wf_worker_t *t = wf_rt.workers[worker];
	wf_parker_t pk = {.ult = me ? me->current : NULL};
	atomic_init(&pk.state, WF_PARK_EMPTY);
	struct wf_sched_req r = {.block = b, .arg = arg, .waiter = &pk};
	struct wf_sched_req *none = NULL;
	while (!atomic_compare_exchange_weak_explicit(&t->sched_req, &none, &r,
						      memory_order_release, memory_order_relaxed)) {
		/* Another install for t is under way: let it finish. */
		none = NULL;
		if (atomic_load_explicit(&wf_rt.state, memory_order_acquire) != WF_RT_RUNNING) {
			free(b);
			return ESRCH;
		}
		wf_yield();
	}
	wf_wake_worker(t);
	wf_park(&pk);
	return r.result;
}

/* ---- fork -------------------------------------------------------------- */

void wf_policy_fork(int phase)
{
	wf_spin_fork(&register_lock, phase);
	if (phase == WF_FORK_CHILD) {
		/* The queues the built-in tables share between workers. */
		wf_mpfifo_forked(&wf_steal_shared);
		wf_share_forked();
	}
}

/* In the child of a fork (runtime/fork.c): w's scheduler state held the
 * ULTs that are gone, and a kernel thread that is gone may have been
 * changing it or stealing from it. It is left as it is - not even its fini
 * runs, which could follow its links - and a fresh state of the same table
 * takes its place (init's argument is NULL, as at start). An install asked
 * for by a thread that is gone is dropped. */
int wf_sched_forked(wf_worker_t *w)
{
	atomic_store_explicit(&w->sched_req, NULL, memory_order_relaxed);
	atomic_store_explicit(&w->scan_seq, 0, memory_order_relaxed);
	const weft_sched_ops_t *ops = w->sched_ops;
	w->sched_block = NULL;
	return wf_sched_start(w, ops);
}
