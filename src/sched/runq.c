/* Shared FIFOs: a spinlock-protected intrusive FIFO that several kernel
 * threads put to and take from. The runtime's own queues are two of them -
 * each worker's inbox (ULTs made ready for it by other kernel threads) and
 * the global queue (ULTs made ready by foreign threads, for any worker) -
 * and the built-in schedulers keep theirs in them too (steal.c, share.c).
 * The count is kept beside the list so that "anything there?" is one
 * relaxed load, without the lock.
 */
#include "sched/sched.h"

void wf_mpfifo_put(wf_mpfifo_t *f, wf_ult_t *u)
{
	wf_spin_lock(&f->lock);
	wf_fifo_push(&f->q, u);
	atomic_fetch_add_explicit(&f->n, 1, memory_order_relaxed);
	wf_spin_unlock(&f->lock);
}

wf_ult_t *wf_mpfifo_get(wf_mpfifo_t *f)
{
	if (wf_mpfifo_empty(f))
		return NULL;
	wf_spin_lock(&f->lock);
	wf_ult_t *u = wf_fifo_pop(&f->q);
	if (u)
		atomic_fetch_sub_explicit(&f->n, 1, memory_order_relaxed);
	wf_spin_unlock(&f->lock);
	return u;
}

wf_ult_t *wf_mpfifo_take_all(wf_mpfifo_t *f)
{
	if (wf_mpfifo_empty(f))
		return NULL;
	wf_spin_lock(&f->lock);
	wf_ult_t *u = f->q.head;
	f->q.head = f->q.tail = NULL;
	atomic_store_explicit(&f->n, 0, memory_order_relaxed);
	wf_spin_unlock(&f->lock);
	return u;
}

void wf_mpfifo_forked(wf_mpfifo_t *f)
{
	wf_spin_unlock(&f->lock);
	f->q.head = f->q.tail = NULL;
	atomic_store_explicit(&f->n, 0, memory_order_relaxed);
}
