/* Cleanup handlers and cancellation, deferred and asynchronous.
 *
 * weft_cancel sets WF_CANCEL_PENDING in the target's cancel word and, if it
 * is blocked in a cancellable wait (wait.c finds it by its wait_addr),
 * takes it out of that wait: the wait returns ECANCELED, and the
 * cancellation point that called it acts (wf_cancel_act) - a condition
 * variable wait first retakes its mutex, as POSIX requires.
 *
 * Acting means: mark the ULT ACTING and DISABLED (a cleanup handler that
 * blocks is not cancelled again), then wf_exit(WEFT_CANCELED), which runs
 * the cleanup handlers, newest first, and the thread-specific data
 * destructors before the ULT ends. weft does not unwind the stack: handlers
 * run on top of it, while the frames they refer to are still intact.
 *
 * Asynchronous cancellation (WF_CANCEL_ASYNC): besides the above, a
 * running target is sent the preemption signal (src/sched/preempt.c),
 * whose handler acts at the next instruction where a preemption would be
 * safe (wf_preempt_hook, signal.c); a target that is ready to run acts
 * when it runs and is preempted, or at its next cancellation point.
 * A target blocked in a program's mutex lock is taken out of that wait
 * as a signal would take it (wf_wait_interrupt; WF_WAIT_ASYNC, wait.c)
 * and acts, without the mutex, as glibc's does. Without preemption
 * (WEFT_PREEMPT_NS=0) a running target acts at cancellation points and
 * mutex waits, like deferred.
 *
 * A ULT blocked in weft_join is taken out of its target's joiner word
 * (wf_join_take_out, src/sched/join.c); its target stays joinable.
 *
 * Foreign threads cannot be cancelled (weft_cancel takes a weft_t); their
 * cancel state is kept so that set/get round-trip.
 */
#include <errno.h>

#include "sync/wait.h"

static __thread int foreign_cancel_state;
static __thread struct weft_cleanup_frame *foreign_cleanup;

void (*wf_unwind_hook)(wf_ult_t *u);

int weft_cancel(weft_t t)
{
	if (atomic_load_explicit(&wf_rt.state, memory_order_acquire) != WF_RT_RUNNING)
		return ESRCH;
	wf_ult_t *u = wf_registry_find(t);
	if (!u)
		return ESRCH;
	int old = atomic_fetch_or_explicit(&u->cancel, WF_CANCEL_PENDING, memory_order_seq_cst);
	if (!(old & (WF_CANCEL_DISABLED | WF_CANCEL_ACTING))) {
		wf_wait_cancel(u);
		if (old & WF_CANCEL_ASYNC) {
			if (u == wf_self())
				wf_cancel_act(); /* asynchronous: at once */
			wf_wait_interrupt(u);    /* out of a mutex wait too */
			wf_kick_running(u);
		}
	}
	return 0;
}

int weft_setcancelstate(int state, int *oldstate)
{
	if (state != WEFT_CANCEL_ENABLE && state != WEFT_CANCEL_DISABLE)
		return EINVAL;
	wf_ult_t *u = wf_self();
	if (!u) {
		if (oldstate)
			*oldstate = foreign_cancel_state;
		foreign_cancel_state = state;
		return 0;
	}
	int old;
	if (state == WEFT_CANCEL_DISABLE)
		old = atomic_fetch_or_explicit(&u->cancel, WF_CANCEL_DISABLED,
					       memory_order_acq_rel);
	else if (atomic_load_explicit(&u->cancel, memory_order_relaxed) & WF_CANCEL_ACTING)
		old = WF_CANCEL_DISABLED; /* stays disabled while acting */
	else
		old = atomic_fetch_and_explicit(&u->cancel, ~WF_CANCEL_DISABLED,
						memory_order_acq_rel);
	if (oldstate)
		*oldstate = old & WF_CANCEL_DISABLED ? WEFT_CANCEL_DISABLE : WEFT_CANCEL_ENABLE;
	return 0;
}

int weft_setcanceltype(int type, int *oldtype)
{
	if (type != WEFT_CANCEL_DEFERRED && type != WEFT_CANCEL_ASYNCHRONOUS)
		return EINVAL;
	wf_ult_t *u = wf_self();
	if (!u) {
		if (oldtype)
			*oldtype = WEFT_CANCEL_DEFERRED;
		return type == WEFT_CANCEL_DEFERRED ? 0 : ENOTSUP; /* foreign threads */
	}
	int old = type == WEFT_CANCEL_ASYNCHRONOUS
			  ? atomic_fetch_or_explicit(&u->cancel, WF_CANCEL_ASYNC,
						     memory_order_seq_cst)
			  : atomic_fetch_and_explicit(&u->cancel, ~WF_CANCEL_ASYNC,
						      memory_order_seq_cst);
	if (oldtype)
		*oldtype = old & WF_CANCEL_ASYNC ? WEFT_CANCEL_ASYNCHRONOUS : WEFT_CANCEL_DEFERRED;
	/* Asynchronous with a cancellation pending: acted on now. */
	if (type == WEFT_CANCEL_ASYNCHRONOUS && wf_cancel_due(u))
		wf_cancel_act();
	return 0;
}

void wf_testcancel(void)
{
	wf_ult_t *u = wf_self();
	if (u && unlikely(wf_cancel_due(u)))
		wf_cancel_act();
}

void weft_testcancel(void)
{
	wf_testcancel();
}

void wf_cancel_act(void)
{
	wf_ult_t *u = wf_self();
	WF_ASSERT(u != NULL);
	atomic_fetch_or_explicit(&u->cancel, WF_CANCEL_ACTING | WF_CANCEL_DISABLED,
				 memory_order_acq_rel);
	wf_exit(WEFT_CANCELED);
}

static struct weft_cleanup_frame **cleanup_head(void)
{
	wf_ult_t *u = wf_self();
	return u ? &u->cleanup : &foreign_cleanup;
}

void weft_cleanup_push_frame(struct weft_cleanup_frame *f, void (*fn)(void *), void *arg)
{
	if (!f)
		return; /* nothing to push: a pop of NULL matches it */
	struct weft_cleanup_frame **head = cleanup_head();
	f->fn = fn;
	f->arg = arg;
	f->prev = *head;
	*head = f;
}

void weft_cleanup_pop_frame(struct weft_cleanup_frame *f, int execute)
{
	if (!f)
		return; /* as its push */
	struct weft_cleanup_frame **head = cleanup_head();
	if (*head != f)
		wf_panic("weft_cleanup_pop does not match the innermost weft_cleanup_push");
	*head = f->prev;
	if (execute && f->fn)
		f->fn(f->arg);
}

/* Signals sent to it before it ends are its own to take (one sent to the
 * process and given to it would otherwise go back to the process after it
 * is gone, sync/procsig.c) - and so are those held for the process that
 * it does not block: the kernel would have picked this thread, alive when
 * they came, and the others may all block them (a thread that waits for
 * its own handler's sem_post). */
static void take_own_signals(wf_ult_t *u)
{
	if (unlikely(atomic_load_explicit(&wf_proc_pending, memory_order_relaxed)))
		wf_proc_claim(u, ~atomic_load_explicit(&u->sig_mask, memory_order_relaxed));
	if (unlikely(atomic_load_explicit(&u->sig_pending, memory_order_acquire)))
		wf_sig_deliver(u);
}

void wf_ult_exiting(wf_ult_t *u, int run_cleanup)
{
	take_own_signals(u);
	/* Frames pushed by glibc's macros (POSIX layer) first: each runs its
	 * handler and comes back through wf_exit (src/posix/unwind.c, which
	 * installs the hook when it registers the first frame). */
	if (run_cleanup && u->px_unwind)
		wf_unwind_hook(u);
	if (run_cleanup) {
		while (u->cleanup) {
			struct weft_cleanup_frame *f = u->cleanup;
			u->cleanup = f->prev;
			if (f->fn)
				f->fn(f->arg);
		}
	}
	if (u->tp)
		wf_tls_exiting(); /* C++ thread_local destructors, as glibc: before these */
	if (u->tsd)
		wf_tsd_exit(&u->tsd);
	/* The last look, where glibc blocks every signal in a thread that
	 * exits: from here on the placer gives it nothing (sync/procsig.c),
	 * and a placement under way, which may not have seen sig_gone, is
	 * waited out (the placer's side of the fence is heavy), so that what
	 * it gave us runs here rather than going back to the process with
	 * perhaps no other thread to take it. */
	atomic_store_explicit(&u->sig_gone, 1, memory_order_relaxed);
	wf_fence_light();
	if (unlikely(atomic_load_explicit(&wf_sig_placing, memory_order_relaxed)))
		wf_sig_placing_wait();
	wf_proc_exiting(u);
	take_own_signals(u);
}

void wf_exit(void *ret)
{
	wf_ult_t *self = wf_self();
	WF_ASSERT(self != NULL);
	self->retval = ret; /* before the handlers: an unwind comes back here */
	/* Handlers and destructors may block and resume on another worker. */
	wf_ult_exiting(self, 1);
	wf_exit_self();
}
