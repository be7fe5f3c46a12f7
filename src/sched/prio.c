/* POSIX priorities: every ULT's scheduling parameters, and the prio
 * scheduler that runs the highest-priority ready ULT first.
 *
 * What POSIX asks (XSH 2.8.4, "Process Scheduling"), and what SHMAC's
 * per-core scheduler did ("Implementing a Bare-Metal Threading Library for
 * SHMAC", section 3.2): one ordered list of ready threads per priority;
 * the scheduler runs the head of the highest non-empty list. SCHED_FIFO
 * and SCHED_RR share the priorities 1..99 (sched_get_priority_min/max) and
 * the lists: a thread made ready goes to the tail of its list, one that
 * yields (sched_yield) to the tail, one preempted by a higher one to the
 * head, an RR thread whose time slice ran out to the tail. SCHED_OTHER
 * (and BATCH and IDLE, whose only priority is 0) sits below them all,
 * round robin. weft gives each ULT a rank - the priority under FIFO and RR,
 * 0 otherwise - and the queues below are indexed by rank.
 *
 * Where the ranks live. A ULT's policy, priority and rank are in its
 * descriptor (ult.h), set at creation (explicit, or inherited from the
 * creator) and by wf_prio_set. prio_lock serialises the writers, so
 * that a boost (a mutex that inherits or protects a priority,
 * src/posix/prio_mutex.c)
 * and a priority change agree on the result; readers (schedulers, wait
 * queues) read the rank with a relaxed load. The rank a queue read may be
 * stale by the time the ULT is taken: every change bumps wf_prio_gen, and
 * each queue, seeing the generation move, re-sorts itself by the ranks of
 * now (reorder) - rare, and O(ready ULTs) when it happens.
 *
 * The prio scheduler. The workers that run it share one ready queue
 * (central, under a spinlock): a worker's get takes the highest ready ULT
 * of the whole domain, so no worker starts a ULT while a higher one waits
 * anywhere - the property SHMAC's work requests between cores gave
 * (section 3.2.8), without a request protocol. Each worker also keeps the
 * ULTs bound to it (weft_attr_setworker, pthread_setaffinity_np,
 * WEFT_MIGRATE=0) in a queue of its own, which only it touches; get takes
 * the higher of the two heads, alternating between them at equal rank.
 * One lock for the domain scales to a few workers, which is what a
 * real-time program on a small machine has; per-worker queues with
 * priority-aware stealing are the step beyond it.
 *
 * Preemption. weft does not interrupt a running ULT. A ULT made ready that
 * outranks the one running on the worker that made it ready - or an RR
 * ULT's equal whose slice has run out - makes put return (put runs on the
 * worker that owns the state, so the running ULT is that worker's current
 * one)
 * WEFT_SCHED_PUT_RESCHED: the runtime makes the running ULT yield at the
 * point that made the other ready (a wake, a create, a priority change;
 * wf_resched_point), so a woken high-priority ULT runs at once rather than
 * at the waker's next block. An RR slice is enforced at the next
 * scheduling point (prio_put, when an equal ULT is made ready; prio_tick,
 * when one is ready already) and, with preemption on, by the preemption
 * handler, which asks prio_tick at any safe instruction (preempt.c).
 *
 * Hand-offs (weft_park_handoff, the join exit hand-off) do not bypass a
 * scheduler other than steal and share: the ULT handed to is put, and get
 * chooses (sched.c), so a low-priority hand-off cannot jump the queue.
 */
#include "sched/prio.h"

#include <errno.h>

atomic_uint wf_prio_gen;
static wf_spinlock_t prio_lock;

void wf_prio_lock(void)
{
	wf_spin_lock(&prio_lock);
}

void wf_prio_unlock(void)
{
	wf_spin_unlock(&prio_lock);
}

void wf_prio_fork(int phase)
{
	wf_spin_fork(&prio_lock, phase);
}

int wf_prio_check(int policy, int prio)
{
	switch (policy) {
	case SCHED_FIFO:
	case SCHED_RR:
		return prio >= 1 && prio <= 99 ? 0 : EINVAL;
	case SCHED_OTHER:
	case SCHED_BATCH:
	case SCHED_IDLE:
		return prio == 0 ? 0 : EINVAL;
	default:
		return EINVAL;
	}
}

/* u's rank from its own parameters and its boost. Under prio_lock. */
static int update_rank(wf_ult_t *u)
{
	int r = wf_prio_rank(u->sched_policy, u->sched_prio);
	if (u->boost > r)
		r = u->boost;
	int old = u->rank;
	if (r != old) {
		__atomic_store_n(&u->rank, r, __ATOMIC_RELAXED);
		atomic_fetch_add_explicit(&wf_prio_gen, 1, memory_order_release);
	}
	return old;
}

int wf_prio_set(wf_ult_t *u, int policy, int prio)
{
	wf_spin_lock(&prio_lock);
	u->sched_policy = policy;
	u->sched_prio = prio;
	int old = update_rank(u), now = u->rank;
	wf_spin_unlock(&prio_lock);
	wf_worker_t *w = wf_worker_self();
	if (!w || !w->current || w->sched_ops != &weft_sched_prio || now == old)
		return 0;
	if (u == w->current)
		return now < old;
	if (now > w->current->rank)
		wf_resched_ask(w); /* as if u had been put just now */
	return 0;
}

void wf_prio_set_boost(wf_ult_t *u, int boost)
{
	u->boost = boost;
	update_rank(u);
}

/* ---- the prio scheduler ------------------------------------------------- */

/* Ready ULTs by rank: a FIFO per rank, linked through the scheduler node
 * (next/prev; key holds the rank it was queued at), and a bitmap of the
 * non-empty ones. */
typedef struct {
	weft_sched_node_t *head, *tail;
} plist_t;

typedef struct {
	uint64_t map[2]; /* bit r: q[r] holds ULTs */
	plist_t q[WF_RANKS];
	unsigned gen; /* the wf_prio_gen it is sorted for */
} prioq_t;

static void q_push(prioq_t *q, weft_sched_node_t *n, int rank, int at_head)
{
	plist_t *l = &q->q[rank];
	n->key = (uint64_t)rank;
	if (at_head) {
		n->prev = NULL;
		n->next = l->head;
		if (l->head)
			l->head->prev = n;
		else
			l->tail = n;
		l->head = n;
	} else {
		n->next = NULL;
		n->prev = l->tail;
		if (l->tail)
			l->tail->next = n;
		else
			l->head = n;
		l->tail = n;
	}
	q->map[rank >> 6] |= 1ull << (rank & 63);
}

/* The highest non-empty rank, or -1. */
static int q_best(const prioq_t *q)
{
	if (q->map[1])
		return 64 + 63 - __builtin_clzll(q->map[1]);
	if (q->map[0])
		return 63 - __builtin_clzll(q->map[0]);
	return -1;
}

static weft_sched_node_t *q_pop(prioq_t *q, int rank)
{
	plist_t *l = &q->q[rank];
	weft_sched_node_t *n = l->head;
	l->head = n->next;
	if (l->head)
		l->head->prev = NULL;
	else {
		l->tail = NULL;
		q->map[rank >> 6] &= ~(1ull << (rank & 63));
	}
	return n;
}

/* Ranks changed since q was sorted: put every ULT at its rank of now,
 * keeping the order of those that stay together. */
static void q_reorder(prioq_t *q)
{
	unsigned gen = atomic_load_explicit(&wf_prio_gen, memory_order_acquire);
	if (likely(gen == q->gen))
		return;
	q->gen = gen;
	weft_sched_node_t *all = NULL, **tail = &all;
	for (int r; (r = q_best(q)) >= 0;) {
		weft_sched_node_t *n = q_pop(q, r);
		*tail = n;
		tail = &n->prev; /* prev as the link of this one pass */
	}
	*tail = NULL;
	while (all) {
		weft_sched_node_t *n = all;
		all = n->prev;
		q_push(q, n, __atomic_load_n(&wf_ult_of_node(n)->rank, __ATOMIC_RELAXED), 0);
	}
}

/* The domain's ready queue. */
static struct {
	wf_spinlock_t lock;
	atomic_int best;    /* q_best(&q), for a look without the lock */
	atomic_int n;       /* ULTs queued */
	atomic_uint sorted; /* q.gen, for a look without the lock */
	prioq_t q;
} central;

/* Re-sort the central queue if ranks changed, and publish its best rank.
 * Under central.lock. */
static void central_sync(void)
{
	q_reorder(&central.q);
	atomic_store_explicit(&central.sorted, central.q.gen, memory_order_relaxed);
	atomic_store_explicit(&central.best, q_best(&central.q), memory_order_relaxed);
}

typedef struct {
	prioq_t local;      /* ULTs bound to this worker; only its owner touches it */
	uint64_t slice_end; /* when the SCHED_RR slice of the ULT get returned last ends */
	uint32_t tick;      /* ties between local and central alternate */
} prio_t;

static int prio_init(void *state, int worker, void *arg)
{
	(void)worker, (void)arg;
	prio_t *s = state;
	s->local.gen = atomic_load_explicit(&wf_prio_gen, memory_order_acquire);
	return 0;
}

static int prio_put(void *state, weft_sched_node_t *n, int why)
{
	prio_t *s = state;
	wf_ult_t *u = wf_ult_of_node(n);
	int rank = __atomic_load_n(&u->rank, __ATOMIC_RELAXED);
	/* POSIX: a preempted thread goes back to the head of its list, unless
	 * it runs under RR and its slice is over. */
	int head = why == WEFT_SCHED_PREEMPTED &&
		   !(u->sched_policy == SCHED_RR && wf_now_ns() >= s->slice_end);
	int ret = 0;
	if (u->bound_worker >= 0) {
		q_reorder(&s->local);
		q_push(&s->local, n, rank, head);
	} else {
		wf_spin_lock(&central.lock);
		q_reorder(&central.q);
		q_push(&central.q, n, rank, head);
		central_sync();
		atomic_fetch_add_explicit(&central.n, 1, memory_order_relaxed);
		wf_spin_unlock(&central.lock);
		ret = WEFT_SCHED_PUT_SHARED;
	}
	/* Does it outrank the ULT running here (put runs on the owner, so
	 * that is its current ULT; none in the loop)? */
	wf_ult_t *cur = why == WEFT_SCHED_YIELDED || why == WEFT_SCHED_PREEMPTED
				? NULL
				: wf_worker_self()->current;
	if (cur) {
		int cr = __atomic_load_n(&cur->rank, __ATOMIC_RELAXED);
		if (rank > cr || (rank == cr && cur->sched_policy == SCHED_RR && rank > 0 &&
				  wf_now_ns() >= s->slice_end))
			ret |= WEFT_SCHED_PUT_RESCHED;
	}
	return ret;
}

static weft_sched_node_t *prio_get(void *state)
{
	prio_t *s = state;
	q_reorder(&s->local);
	int lb = q_best(&s->local);
	int cb = atomic_load_explicit(&central.best, memory_order_relaxed);
	/* best is as of the last put or get: after a rank changed, look. */
	int stale = atomic_load_explicit(&central.sorted, memory_order_relaxed) !=
		    atomic_load_explicit(&wf_prio_gen, memory_order_relaxed);
	weft_sched_node_t *n = NULL;
	if (cb >= 0 && (cb > lb || (cb == lb && (++s->tick & 1)) || stale)) {
		wf_spin_lock(&central.lock);
		q_reorder(&central.q);
		cb = q_best(&central.q);
		if (cb >= 0 && cb >= lb) {
			n = q_pop(&central.q, cb);
			atomic_fetch_sub_explicit(&central.n, 1, memory_order_relaxed);
		}
		central_sync();
		wf_spin_unlock(&central.lock);
	}
	if (!n && lb >= 0)
		n = q_pop(&s->local, lb);
	if (n && wf_ult_of_node(n)->sched_policy == SCHED_RR)
		s->slice_end = wf_now_ns() + WEFT_SCHED_RR_SLICE_NS;
	return n;
}

/* The running ULT's RR slice is over and a ULT of its rank or higher is
 * ready: it gives way, to the tail of its priority (prio_put). */
static int prio_tick(void *state, uint64_t now)
{
	prio_t *s = state;
	wf_ult_t *cur = wf_worker_self()->current;
	if (!cur || cur->sched_policy != SCHED_RR || now < s->slice_end)
		return 0;
	int best = q_best(&s->local),
	    cb = atomic_load_explicit(&central.best, memory_order_relaxed);
	if (cb > best)
		best = cb;
	return best >= __atomic_load_n(&cur->rank, __ATOMIC_RELAXED) ? WEFT_SCHED_PUT_RESCHED : 0;
}

static int prio_empty(const void *state)
{
	(void)state;
	return atomic_load_explicit(&central.n, memory_order_relaxed) == 0;
}

const weft_sched_ops_t weft_sched_prio = {
	.abi = WEFT_SCHED_ABI,
	.size = sizeof(weft_sched_ops_t),
	.name = "prio",
	.state_size = sizeof(prio_t),
	.init = prio_init,
	.put = prio_put,
	.get = prio_get,
	.empty = prio_empty,
	.tick = prio_tick,
};
