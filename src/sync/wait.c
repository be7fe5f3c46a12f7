/* Wait-on-address: every weft lock blocks through wf_wait / wf_wake.
 *
 * Like a futex, but for ULTs: wf_wait(addr, expected, ...) blocks the caller
 * while *addr == expected, and wf_wake(addr, n) wakes up to n of the
 * callers blocked on addr. A blocked ULT is parked (its worker runs other
 * ULTs); a blocked foreign thread sleeps on a futex. Both kinds wait in the
 * same queues, so wakes cross between them.
 *
 * The table
 *   WF_BUCKETS buckets, each a lock (a spinlock that biases itself to a
 *   worker that keeps taking it, util/bspin.h: on one worker, a wake and
 *   the next wait take it without a locked instruction; requeue, which
 *   holds two, takes both on their words) and a doubly linked list of
 *   waiters, ordered by priority (the waiting ULT's rank, sched/prio.h:
 *   POSIX wants the highest-priority waiter woken first under SCHED_FIFO
 *   and SCHED_RR, and Linux's futexes do so too) and FIFO among equals; an
 *   address hashes to one bucket, which may hold waiters for other
 *   addresses too. The check of *addr and the enqueue happen under the
 *   bucket lock, and a waker takes the same lock, so a wake that follows a
 *   change of *addr cannot slip between the check and the enqueue.
 *
 * A waiter (wf_waiter_t) lives in the waiting thread's stack frame and
 * carries its own parker. Its status says who owns it:
 *
 *   QUEUED     in a bucket; owned by the bucket lock.
 *   WOKEN      removed by a waker,
 *   TIMEDOUT   by its timer (src/sched/timer.c) or by itself (a foreign thread whose
 *              futex wait timed out),
 *   CANCELED   by weft_cancel,
 *   INTERRUPTED by a signal sent to the ULT (signal.c): a cancellation point
 *              returns EINTR; any other wait (a mutex, a barrier) runs the
 *              handler and waits again, as POSIX says those calls do; or by
 *              weft_cancel of a ULT whose cancel type is asynchronous, in a
 *              wait that lets such a cancellation act (WF_WAIT_ASYNC: a
 *              program's mutex lock), which then acts when it looks again.
 *
 * How weft_cancel and a signal find the wait (wf_wait_cancel,
 * wf_wait_interrupt): a ULT notes the address in its wait_addr before it
 * takes the bucket lock, and the sender, after marking the signal pending
 * or the cancellation (seq_cst), looks for the ULT's waiter in that
 * bucket. The waiter checks for a pending signal and - at a cancellation
 * point, or under WF_WAIT_ASYNC for an asynchronous one - a cancellation
 * under the bucket lock before it queues itself; a store then a load on
 * each side (wait_addr, the pending bit or the cancel word), fenced
 * asymmetrically (util/fence.h: the waiter's fence, on every wait, is a
 * compiler barrier; the sender's, once per signal or cancellation sent to
 * a ULT that is not running, a membarrier), so either the sender finds the
 * waiter queued or the waiter sees what was sent. The sender touches the
 * waiter only under the bucket lock, and a waiter it takes out waits for
 * its unpark, so the waiter's frame cannot go away under it. A requeue
 * moves wait_addr along with the waiter.
 *
 * Exactly one party moves it out of QUEUED, under the bucket lock, and that
 * party - unless it is the waiter itself - owes the waiter exactly one
 * unpark (wf_unpark_sole: being the only one, it needs no RMW once the
 * waiter is parked). The waiter returns only after it has consumed that
 * token, so the remover may use the waiter until its unpark (park.c
 * explains why the unpark itself is safe against the waiter's frame going
 * away). A ULT that waits without a deadline parks still holding the
 * bucket lock, released only after its park committed (wf_park_unlock,
 * park.c), so its remover always finds it parked and neither side pays a
 * CAS; a deadline's timer takes bucket locks from inside scheduling
 * decisions, so a timed wait releases the lock first and parks the
 * ordinary way. Nothing else unparks a waiter's parker: weft_unpark
 * tokens go to the ULT's own parker and cannot end a wait early.
 *
 * Requeue (cond broadcast) moves waiters to another address's queue. Their
 * addr changes under both bucket locks, so whoever locks a waiter's bucket
 * from outside (its timer, a canceller) re-reads addr after locking and
 * retries if it moved (lock_waiter_bucket). The moved waiters, and those a
 * requeue that moved any woke, learn it from wf_wait_requeued: they owe the
 * others on the new queue a wake (cond.c).
 *
 * weft_cancel and signals also take a ULT out of weft_join (wf_join_take_out,
 * src/sched/join.c).
 *
 * Lock order: a timer heap's lock, then bucket locks, two buckets in
 * address order.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "sched/prio.h"
#include "sync/wait.h"

#define WF_BUCKET_BITS 10
#define WF_BUCKETS     (1u << WF_BUCKET_BITS)

enum { WF_W_QUEUED = 1, WF_W_WOKEN, WF_W_TIMEDOUT, WF_W_CANCELED, WF_W_INTERRUPTED };

typedef struct wf_waiter {
	struct wf_waiter *next, *prev; /* bucket list; under the bucket lock */
	struct wf_waiter *chain;       /* a remover's list of waiters to unpark */
	_Atomic(const void *) addr;    /* written under its bucket lock(s) */
	int status;                    /* WF_W_*; under the bucket lock */
	int requeued;                  /* moved by wf_requeue, or woken by one
	                                  that moved others; under the bucket lock */
	int cancellable;               /* a cancellation point (WF_WAIT_CANCEL) of a ULT */
	int rank;                      /* its ULT's priority rank when it began to wait
	                                  (sched/prio.h); 0 for a foreign thread */
	wf_parker_t parker;            /* unparked once, by whoever removed it */
	wf_timer_t timer;              /* armed if a ULT waits with a deadline */
} wf_waiter_t;

typedef struct {
	wf_bspin_t lock; /* biased to a worker that keeps taking it (util/bspin.h) */
	wf_waiter_t *head, *tail;
} WF_ALIGNED_CL wf_bucket_t;

static wf_bucket_t buckets[WF_BUCKETS];

/* Who takes a bucket lock, for its bias (util/bspin.h): the worker the
 * caller runs on (its id plus one; its side is wf_worker_side's), or 0 -
 * a foreign thread, a ULT in a system call section. No switch comes
 * between this read and the lock. */
static inline int taker(void)
{
	wf_worker_t *w = wf_tls_worker;
	return w ? w->id + 1 : 0;
}

static inline int bucket_lock(wf_bucket_t *b)
{
	return wf_bspin_lock(&b->lock, taker(), wf_worker_side);
}

static inline void bucket_unlock(wf_bucket_t *b, int how)
{
	wf_bspin_unlock(&b->lock, how, wf_worker_side);
}

void wf_wait_unbias(void)
{
	for (unsigned i = 0; i < WF_BUCKETS; i++)
		wf_bspin_unbias(&buckets[i].lock);
}

static inline wf_bucket_t *bucket_of(const void *addr)
{
	uint64_t h = ((uint64_t)(uintptr_t)addr >> 2) * 0x9E3779B97F4A7C15ull;
	return &buckets[h >> (64 - WF_BUCKET_BITS)];
}

/* Queue me behind every waiter of its rank or higher and ahead of the
 * lower ones: wakes take the highest-priority waiter first, FIFO among
 * equals. With every rank 0 (no ULT under SCHED_FIFO or SCHED_RR) this is
 * an append: one compare. */
static inline void bucket_insert(wf_bucket_t *b, wf_waiter_t *me)
{
	wf_waiter_t *after = b->tail;
	while (after && after->rank < me->rank)
		after = after->prev;
	me->prev = after;
	me->next = after ? after->next : b->head;
	if (me->next)
		me->next->prev = me;
	else
		b->tail = me;
	if (after)
		after->next = me;
	else
		b->head = me;
}

static inline void bucket_remove(wf_bucket_t *b, wf_waiter_t *me)
{
	if (me->prev)
		me->prev->next = me->next;
	else
		b->head = me->next;
	if (me->next)
		me->next->prev = me->prev;
	else
		b->tail = me->prev;
}

/* Lock the bucket me is queued in now (requeue may move it meanwhile);
 * *how: how it was locked. */
static wf_bucket_t *lock_waiter_bucket(wf_waiter_t *me, int *how)
{
	for (;;) {
		const void *a = atomic_load_explicit(&me->addr, memory_order_acquire);
		wf_bucket_t *b = bucket_of(a);
		*how = bucket_lock(b);
		if (atomic_load_explicit(&me->addr, memory_order_relaxed) == a)
			return b;
		bucket_unlock(b, *how);
	}
}

/* Take me out of its queue with the given status, if it is still queued.
 * Returns 1 if we did; 0 if someone else did (and owes me an unpark). */
static int dequeue(wf_waiter_t *me, int status)
{
	int how;
	wf_bucket_t *b = lock_waiter_bucket(me, &how);
	int queued = me->status == WF_W_QUEUED;
	if (queued) {
		bucket_remove(b, me);
		me->status = status;
	}
	bucket_unlock(b, how);
	return queued;
}

/* Unpark a remover's chain of waiters. Each waiter may be gone once its
 * unpark is done, so its link is read first. */
static void unpark_chain(wf_waiter_t *c)
{
	while (c) {
		wf_waiter_t *next = c->chain;
		wf_unpark_sole(&c->parker);
		c = next;
	}
}

static wf_parker_t *timer_expired(wf_timer_t *t)
{
	wf_waiter_t *me = (wf_waiter_t *)((char *)t - offsetof(wf_waiter_t, timer));
	return dequeue(me, WF_W_TIMEDOUT) ? &me->parker : NULL;
}

static int status_rc(int status)
{
	switch (status) {
	case WF_W_WOKEN:
		return 0;
	case WF_W_TIMEDOUT:
		return ETIMEDOUT;
	case WF_W_CANCELED:
		return ECANCELED;
	case WF_W_INTERRUPTED:
		return EINTR;
	default:
		wf_panic("waiter left its wait in status %d", status);
	}
}

/* A foreign thread waits on its parker's futex. intr: a cancellation point
 * (a semaphore wait, a sleep), which a handler that ran on this thread
 * interrupts with EINTR, as glibc's; other waits go on. */
static int wait_foreign(wf_waiter_t *me, uint64_t deadline, int intr)
{
	int rc = wf_park_until(&me->parker, deadline, intr);
	if (rc) {
		if (dequeue(me, rc == ETIMEDOUT ? WF_W_TIMEDOUT : WF_W_INTERRUPTED))
			return rc;
		wf_park_until(&me->parker, 0, 0); /* the remover's token is on its way */
	}
	return status_rc(me->status);
}

/* A ULT waits: park; its timer (if any) and any waker race to dequeue it. */
static int wait_ult(wf_worker_t *w, wf_waiter_t *me, uint64_t deadline)
{
	int timed = deadline != 0;
	if (timed && wf_timer_add(&w->timers, &me->timer, deadline, timer_expired)) {
		if (dequeue(me, WF_W_TIMEDOUT))
			return ENOMEM;
		timed = 0; /* woken already: wait for the token, report the wake */
	}
	wf_park(&me->parker);
	if (timed)
		wf_timer_cancel(&me->timer);
	return status_rc(me->status);
}

int wf_wait(const void *addr, uint32_t expected, uint64_t deadline, int flags)
{
	int requeued;
	return wf_wait_requeued(addr, expected, deadline, flags, addr, &requeued);
}

int wf_wait_requeued(const void *addr, uint32_t expected, uint64_t deadline, int flags,
		     const void *obj, int *requeued)
{
	wf_worker_t *w = wf_worker_self();
	wf_ult_t *self = w ? w->current : NULL;
	wf_waiter_t me;
	*requeued = 0;
	atomic_store_explicit(&me.addr, addr, memory_order_relaxed);
	me.status = WF_W_QUEUED;
	me.requeued = 0;
	me.cancellable = (flags & WF_WAIT_CANCEL) && self;
	me.rank = self ? __atomic_load_n(&self->rank, __ATOMIC_RELAXED) : 0;
	me.chain = NULL;
	atomic_store_explicit(&me.parker.state, WF_PARK_EMPTY, memory_order_relaxed);
	me.parker.ult = self;

	/* A ULT's wait is published in wait_addr for weft_cancel and signals
	 * to find (see the top). */
	if (self) {
		atomic_store_explicit(&self->wait_addr, addr, memory_order_relaxed);
		wf_fence_light(); /* against take_out's heavy fence (see the top) */
	}
again:;
	wf_bucket_t *b = bucket_of(addr);
	int how = bucket_lock(b);
	int rc = 0;
	if (me.cancellable && wf_cancel_due(self))
		rc = ECANCELED;
	else if (__atomic_load_n((const uint32_t *)addr, __ATOMIC_SEQ_CST) != expected)
		rc = EAGAIN;
	else if (deadline && deadline <= wf_now_ns())
		rc = ETIMEDOUT;
	else if (self && (atomic_load_explicit(&self->sig_pending, memory_order_seq_cst) &
			  ~atomic_load_explicit(&self->sig_mask, memory_order_relaxed)))
		rc = EINTR; /* a signal to take first (see above) */
	else if ((flags & WF_WAIT_ASYNC) && self && wf_cancel_async_due(self))
		rc = ECANCELED; /* found by weft_cancel like a signal (see above) */
	else
		bucket_insert(b, &me);
	/* A ULT without a deadline parks holding the bucket lock
	 * (wf_park_unlock): its remover finds it parked. */
	int held = !rc && self && !deadline;
	if (!held)
		bucket_unlock(b, how);
	if (rc == EINTR) {
		wf_sig_deliver(self); /* its handler runs; then the wait starts again */
		if (!me.cancellable)
			goto again;
	}
	if (rc) {
		if (self)
			atomic_store_explicit(&self->wait_addr, NULL, memory_order_relaxed);
		if (rc == ECANCELED && !me.cancellable)
			wf_cancel_act(); /* WF_WAIT_ASYNC */
		return rc;
	}

	if (self) {
		self->block_reason = WF_WAIT_REASON(flags);
		/* A sleep waits on a word of its own: not worth showing. */
		self->block_obj = self->block_reason == WF_BLOCK_SLEEP ? NULL : obj;
		if (held) {
			wf_park_unlock(&me.parker, &b->lock, how);
			rc = status_rc(me.status);
		} else {
			rc = wait_ult(w, &me, deadline);
		}
		self->block_reason = WF_BLOCK_NONE;
		if (unlikely(atomic_load_explicit(&self->sig_pending, memory_order_acquire)))
			wf_sig_deliver(self); /* signals sent while it waited */
		if (unlikely(rc == EINTR) && !me.cancellable) {
			/* Not a call that may fail with EINTR: the handler ran,
			 * wait again (the word may have changed meanwhile). */
			me.status = WF_W_QUEUED;
			atomic_store_explicit(&me.parker.state, WF_PARK_EMPTY,
					      memory_order_relaxed);
			goto again;
		}
		atomic_store_explicit(&self->wait_addr, NULL, memory_order_relaxed);
	} else {
		rc = wait_foreign(&me, deadline, flags & WF_WAIT_CANCEL);
	}
	/* Whoever took me out of its queue is done with it: the flag, written
	 * under a bucket lock before that, is final. */
	*requeued = me.requeued;
	return rc;
}

int wf_wake(const void *addr, int n)
{
	return wf_wake_counted(addr, n, NULL, 0);
}

/* Take up to n waiters of addr out of its bucket and unpark them; with a
 * count, add bump - woken to it before the bucket is unlocked. */
static inline int wake(const void *addr, int n, uint64_t *count, uint64_t bump)
{
	wf_bucket_t *b = bucket_of(addr);
	wf_waiter_t *chain = NULL, **tail = &chain;
	int woken = 0;
	int how = bucket_lock(b);
	for (wf_waiter_t *me = b->head; me && woken < n;) {
		wf_waiter_t *next = me->next;
		if (atomic_load_explicit(&me->addr, memory_order_relaxed) == addr) {
			bucket_remove(b, me);
			me->status = WF_W_WOKEN;
			me->chain = NULL;
			*tail = me;
			tail = &me->chain;
			woken++;
		}
		me = next;
	}
	if (count)
		__atomic_fetch_add(count, bump - (uint64_t)woken, __ATOMIC_SEQ_CST);
	bucket_unlock(b, how);
	unpark_chain(chain);
	return woken;
}

int wf_wake_noresched(const void *addr, int n)
{
	return wake(addr, n, NULL, 0);
}

int wf_wake_counted(const void *addr, int n, uint64_t *count, uint64_t bump)
{
	int woken = wake(addr, n, count, bump);
	if (woken)
		wf_resched_point(); /* a woken ULT may outrank us (sched/prio.h) */
	return woken;
}

int wf_wait_top_rank(const void *addr)
{
	wf_bucket_t *b = bucket_of(addr);
	int rank = -1;
	int how = bucket_lock(b);
	for (wf_waiter_t *me = b->head; me; me = me->next)
		if (atomic_load_explicit(&me->addr, memory_order_relaxed) == addr) {
			rank = me->rank; /* the list is ordered: the first is the highest */
			break;
		}
	bucket_unlock(b, how);
	return rank;
}

int wf_requeue(const void *from, int nwake, const void *to, int nmove)
{
	wf_bucket_t *bf = bucket_of(from), *bt = bucket_of(to);
	wf_bucket_t *first = bf < bt ? bf : bt, *second = bf < bt ? bt : bf;
	wf_waiter_t *chain = NULL, **tail = &chain;
	int woken = 0, moved = 0;
	/* Two locks at once: both as taker 0, on their words (util/bspin.h:
	 * a taker never waits for a lock while it holds one through its side). */
	int how1 = wf_bspin_lock(&first->lock, 0, wf_worker_side), how2 = 0;
	if (second != first)
		how2 = wf_bspin_lock(&second->lock, 0, wf_worker_side);
	for (wf_waiter_t *me = bf->head; me && (woken < nwake || moved < nmove);) {
		wf_waiter_t *next = me->next;
		if (atomic_load_explicit(&me->addr, memory_order_relaxed) == from) {
			if (woken < nwake) {
				bucket_remove(bf, me);
				me->status = WF_W_WOKEN;
				me->chain = NULL;
				*tail = me;
				tail = &me->chain;
				woken++;
			} else {
				if (bt != bf) {
					bucket_remove(bf, me);
					bucket_insert(bt, me);
				}
				atomic_store_explicit(&me->addr, to, memory_order_release);
				if (me->parker.ult) /* where weft_cancel and signals look */
					atomic_store_explicit(&me->parker.ult->wait_addr, to,
							      memory_order_release);
				me->requeued = 1;
				moved++;
			}
		}
		me = next;
	}
	if (moved) /* the woken ones keep the moved ones' hand-offs going */
		for (wf_waiter_t *me = chain; me; me = me->chain)
			me->requeued = 1;
	if (second != first)
		bucket_unlock(second, how2);
	bucket_unlock(first, how1);
	unpark_chain(chain);
	if (woken)
		wf_resched_point();
	return woken + moved;
}

/* Take u's waiter out of its queue with the given status, if u is queued
 * in a wait (only a cancellation point's, if cancellable); returns it, now
 * owed an unpark, or NULL. The waiter is in the bucket of u's wait_addr,
 * unless a requeue moved it on meanwhile: then wait_addr changed too
 * (under both buckets' locks), and the search follows it. The caller
 * published what the waiter looks at under the bucket lock (a pending
 * signal, a cancellation) before this; the heavy fence here pairs with the
 * waiter's light one (see the top). */
static wf_waiter_t *take_out(wf_ult_t *u, int status, int cancellable)
{
	wf_fence_heavy();
	const void *a = atomic_load_explicit(&u->wait_addr, memory_order_seq_cst);
	while (a) {
		wf_bucket_t *b = bucket_of(a);
		wf_waiter_t *me;
		int how = bucket_lock(b);
		for (me = b->head; me; me = me->next)
			if (me->parker.ult == u && me->status == WF_W_QUEUED &&
			    (me->cancellable || !cancellable)) {
				bucket_remove(b, me);
				me->status = status;
				break;
			}
		const void *now = atomic_load_explicit(&u->wait_addr, memory_order_acquire);
		bucket_unlock(b, how);
		if (me || now == a)
			return me;
		a = now;
	}
	return NULL;
}

void wf_wait_interrupt(wf_ult_t *u)
{
	wf_waiter_t *me = take_out(u, WF_W_INTERRUPTED, 0);
	if (me)
		wf_unpark_sole(&me->parker); /* it waits for this token: me is alive */
	/* Or in a join: its link was published before the JOIN commit looks
	 * at the pending bits (src/sched/join.c). */
	else if (atomic_load_explicit(&u->joining, memory_order_seq_cst))
		wf_join_take_out(u, WF_JOIN_INTERRUPTED);
}

void wf_wait_cancel(wf_ult_t *u)
{
	wf_waiter_t *me = take_out(u, WF_W_CANCELED, 1);
	if (me)
		wf_unpark_sole(&me->parker); /* it waits for this token: me is alive */
	else                                 /* or blocked in weft_join (src/sched/join.c) */
		wf_join_take_out(u, WF_JOIN_CANCELED);
}

void wf_wait_forked(void)
{
	/* Every waiter was a ULT or thread that is gone, its record on its
	 * stack. An object whose word still says it has waiters finds none
	 * when it wakes them, as after a wake that came first. */
	memset(buckets, 0, sizeof buckets);
}

static __thread char foreign_key_anchor;

uint64_t wf_root_key;

uint64_t wf_self_key(void)
{
	wf_worker_t *w = wf_worker_self();
	if (w && w->current)
		return likely(w->current != wf_rt.root) ? w->current->id : wf_root_key;
	return (uint64_t)(uintptr_t)&foreign_key_anchor | (1ull << 63);
}

/* ---- the public wait-on-address API ------------------------------------------ */

int weft_wait(const uint32_t *addr, uint32_t expected, clockid_t clock,
	      const struct timespec *abstime)
{
	if (!addr || ((uintptr_t)addr & 3))
		return EINVAL;
	if (clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME)
		return EINVAL;
	uint64_t deadline = 0;
	if (abstime) {
		int e = wf_deadline(clock, abstime, &deadline);
		if (e)
			return e;
	}
	int rc = wf_wait(addr, expected, deadline, WF_WAIT_CANCEL);
	if (rc == ECANCELED)
		wf_cancel_act();
	return rc;
}

int weft_wake(const uint32_t *addr, int n)
{
	if (!addr || n <= 0)
		return -EINVAL;
	return wf_wake(addr, n);
}
