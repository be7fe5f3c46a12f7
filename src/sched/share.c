/* The share scheduler: one central FIFO ready queue that every worker
 * running it takes from - the work-sharing design of "A Hybrid Thread
 * Library for Efficient ESL Simulation" (Liu, Domer), the alternative to
 * work stealing that paper measures. Fair (strict FIFO across the workers
 * that run it) and simple; every put and get takes the queue's spinlock, so
 * it scales worse than steal with many workers and short-lived ULTs.
 * ULTs bound to a worker stay in a FIFO of that worker's own; a worker
 * alternates between it and the central queue so neither starves.
 */
#include "sched/policy.h"
#include "sched/sched.h"

typedef struct {
	wf_fifo_t local; /* ULTs bound to this worker */
	uint32_t tick;
} share_t;

static wf_mpfifo_t central;

void wf_share_forked(void)
{
	wf_mpfifo_forked(&central);
}

static int share_put(void *state, weft_sched_node_t *n, int why)
{
	(void)why;
	share_t *s = state;
	wf_ult_t *u = wf_ult_of_node(n);
	if (u->bound_worker >= 0) {
		wf_fifo_push(&s->local, u);
		return 0;
	}
	wf_mpfifo_put(&central, u);
	return 1;
}

static weft_sched_node_t *share_get(void *state)
{
	share_t *s = state;
	wf_ult_t *u;
	if (s->local.head && (++s->tick & 1))
		u = wf_fifo_pop(&s->local);
	else if (!(u = wf_mpfifo_get(&central)))
		u = wf_fifo_pop(&s->local);
	return u ? &u->node : NULL;
}

static int share_empty(const void *state)
{
	(void)state;
	return wf_mpfifo_empty(&central);
}

const weft_sched_ops_t weft_sched_share = {
	.abi = WEFT_SCHED_ABI,
	.size = sizeof(weft_sched_ops_t),
	.name = "share",
	.state_size = sizeof(share_t),
	.put = share_put,
	.get = share_get,
	.empty = share_empty,
};
