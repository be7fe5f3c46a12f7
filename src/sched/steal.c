/* The steal scheduler (the default): per-worker deques, idle workers steal.
 *
 * Each worker running it keeps a Chase-Lev work-stealing deque on a fixed
 * ring of WF_STEAL_RING slots. The owner pushes and pops at the bottom
 * (LIFO: a ULT just created or woken runs next, and fork-join programs run
 * depth-first, so few stacks are alive at once); thieves take from the top
 * (the oldest entry, in fork-join the biggest piece of work). The bottom
 * entry itself waits in `next`, out of the ring: a put moves the one there
 * down into the ring. A full ring
 * sends further pushes to the shared FIFO, which every worker running
 * steal takes from. Yielding (and preempted) ULTs go to the worker's yield
 * FIFO, behind everything ready; a thief takes from it when the deque is
 * empty. Each worker looks at both FIFOs first once in 61 decisions and
 * whenever its own queues are empty, asking each of the two first in turn:
 * yielders that never stop (spinning on a flag) must not starve what
 * overflowed, nor the other way round. ULTs bound to the worker
 * (weft_attr_setworker, WEFT_MIGRATE=0) stay in a FIFO of their own that
 * nobody steals from.
 *
 * Why a yield FIFO per worker: with one FIFO for all, every yield took its
 * lock and changed its count twice, and with both workers yielding those
 * cache lines crossed cores on every yield: 64 unbound ULTs yielding in a
 * loop on two workers (weft-bench micro's yield_64_unbound) paid 370-520 ns
 * per yield; with a FIFO per worker, 13-16 ns.
 *
 * Why its lock is owner-biased (util/bias.h): the owner puts and takes on
 * every yield, a thief takes only when its own worker ran dry. With a
 * spinlock, each yield paid four locked instructions (lock and count, on
 * both sides): two unbound ULTs yielding on one worker paid 50-66 ns per
 * switch (weft-bench micro's yield_unbound) against 17-29 ns for two bound
 * ones, whose FIFO is private (yield). The owner's side of the biased lock
 * is two stores and a load; a thief pays a membarrier (2.3 us here with
 * the other CPU busy), only when a ULT is there to take: 21-35 ns.
 *
 * Why next: a hand-off between two ULTs on one worker - a wake then a
 * park (a condition variable, a semaphore, weft_unpark), a create then a
 * join - queued the ULT and popped it again at once. The deque's pop costs
 * an exchange, and a CAS too for its last entry: about 10 ns each here,
 * 30-40 ns per round trip of unbound ULTs, which bound ones (the local
 * FIFO) did not pay. next is under the same owner-biased lock as the yield
 * FIFO. A thief takes it only when the deque and the yield FIFO are empty,
 * and only once it has seen the same ULT there on STEAL_PATIENCE scans
 * (or when it is about to sleep): a next that keeps changing belongs to
 * ULTs handing the worker to each other, which a steal would split over
 * two cores. (Taking whatever is there after the membarrier, thieves split
 * a condition variable ping-pong ~4,000 times in 200,000 round trips.)
 *
 * Ordering (Le, Pop, Cohen, Zappa Nardelli, "Correct and Efficient
 * Work-Stealing for Weak Memory Models", 2013): the owner's pop publishes the
 * smaller bottom with a sequentially consistent exchange before it reads top;
 * a thief reads top, then bottom, both seq_cst, and claims its slot with a
 * CAS on top. Only when a single entry is left do owner and thief race, and
 * the CAS on top decides. The exchange replaces the paper's fence: one
 * locked instruction either way, and pushes need none.
 *
 * A thief leaves a victim's single queued ULT alone until it has seen it
 * there on STEAL_PATIENCE consecutive scans: that ULT is most likely the one
 * its worker will run next (a child about to be joined, a partner just
 * woken), and stealing it would turn a same-core hand-off into a cross-core
 * one.
 *
 * Alternative rejected: a FIFO run queue per worker (Go's) made fork-join
 * programs run breadth-first: fib(25) kept ~10^5 stacks alive and paid a
 * page fault for each (2.5 us per ULT); the LIFO deque keeps it depth-first
 * (~0.15 us).
 *
 * The owner-side operations are inline in steal.h: the switch path calls
 * them without going through the table (sched.c, policy.h).
 */
#include "sched/steal.h"

#define STEAL_PATIENCE 4

wf_mpfifo_t wf_steal_shared;

/* The first ULT of victim's yield FIFO, on the other side of its
 * owner-biased lock: a membarrier, paid only when there is one to take. */
static wf_ult_t *take_yielded(wf_steal_t *victim)
{
	if (!atomic_load_explicit(&victim->n_yielded, memory_order_relaxed))
		return NULL;
	wf_bias_other_lock(&victim->own);
	wf_ult_t *u = wf_steal_yield_pop(victim);
	wf_bias_other_unlock(&victim->own);
	return u;
}

/* victim's next, if it still is `seen` (NULL: whatever it is), on the
 * other side of the same lock. */
static wf_ult_t *take_next(wf_steal_t *victim, wf_ult_t *seen)
{
	wf_bias_other_lock(&victim->own);
	wf_ult_t *u = atomic_load_explicit(&victim->next, memory_order_relaxed);
	if (seen && u != seen)
		u = NULL;
	else
		atomic_store_explicit(&victim->next, NULL, memory_order_relaxed);
	wf_bias_other_unlock(&victim->own);
	return u;
}

/* Has the thief seen the same key at victim on STEAL_PATIENCE scans in a
 * row? The key names victim's lone ready ULT: its top (+1) for a deque
 * entry, the ULT itself for next. */
static int lone_for_long(wf_steal_t *victim, wf_steal_t *thief, long key)
{
	long *seen = &thief->seen_top[victim->worker & (WF_SEEN_MAX - 1)];
	if (*seen != key) {
		*seen = key;
		thief->seen_count = 0;
		return 0;
	}
	return ++thief->seen_count >= STEAL_PATIENCE;
}

/* Take the oldest ULT of victim's deque; if it is empty, the first of its
 * yield FIFO, else its next. A lone ready ULT is left to its owner until
 * the thief has seen it there for a while (lone_for_long), unless patient:
 * the thief is about to sleep. A next is taken only if it is still the
 * one seen: one that keeps changing belongs to ULTs handing the worker to
 * each other, which a steal would only split over two cores (and the take
 * costs a membarrier). Called by the thief's owner, concurrently with the
 * victim's. */
wf_ult_t *wf_steal_give(wf_steal_t *victim, wf_steal_t *thief, int patient)
{
	long t = atomic_load_explicit(&victim->top, memory_order_seq_cst);
	long b = atomic_load_explicit(&victim->bottom, memory_order_seq_cst);
	wf_ult_t *next = atomic_load_explicit(&victim->next, memory_order_relaxed);
	if (t >= b) {
		wf_ult_t *u = take_yielded(victim);
		if (u || !next)
			return u;
		if (patient)
			return take_next(victim, NULL);
		if (!lone_for_long(victim, thief, (long)(uintptr_t)next))
			return NULL;
		return take_next(victim, next);
	}
	if (b - t == 1 && !next && !patient && !lone_for_long(victim, thief, t + 1))
		return NULL;
	wf_ult_t *u =
		atomic_load_explicit(&victim->ring[t & (WF_STEAL_RING - 1)], memory_order_relaxed);
	if (!atomic_compare_exchange_strong_explicit(&victim->top, &t, t + 1, memory_order_seq_cst,
						     memory_order_relaxed))
		return NULL; /* lost to the owner or another thief */
	return u;
}

/* The table. sched.c calls the inline functions of steal.h when a worker
 * runs this scheduler; these wrappers serve anyone who calls through the
 * table (and document it). */
static int steal_init(void *state, int worker, void *arg)
{
	(void)arg;
	((wf_steal_t *)state)->worker = worker;
	return 0;
}

static int steal_put(void *state, weft_sched_node_t *n, int why)
{
	return wf_steal_put(state, wf_ult_of_node(n), why);
}

static weft_sched_node_t *node_of(wf_ult_t *u)
{
	return u ? &u->node : NULL;
}

static weft_sched_node_t *steal_get(void *state)
{
	return node_of(wf_steal_get(state));
}

static int steal_empty(const void *state)
{
	return wf_steal_empty(state);
}

static weft_sched_node_t *steal_give(void *victim, void *thief)
{
	return node_of(wf_steal_give(victim, thief, 0));
}

const weft_sched_ops_t weft_sched_steal = {
	.abi = WEFT_SCHED_ABI,
	.size = sizeof(weft_sched_ops_t),
	.name = "steal",
	.state_size = sizeof(wf_steal_t),
	.init = steal_init,
	.put = steal_put,
	.get = steal_get,
	.empty = steal_empty,
	.give = steal_give,
};
