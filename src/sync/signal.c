/* POSIX signals aimed at one ULT (pthread_kill, pthread_sigmask).
 *
 * A kernel thread's signal mask and pending set belong to the worker, and
 * many ULTs share a worker, so weft keeps a virtual mask and pending set
 * per ULT (bits 0-63 for signals 1-64) and delivers a signal sent to a ULT
 * itself: by raise() on whichever worker runs that ULT, so the handler
 * runs in the ULT's context, as POSIX wants.
 *
 *   send     mark the signal pending; if the ULT does not block it and is in
 *            a wait, take it out of the wait (wait.c): a cancellation point
 *            (sleeps, condition and semaphore waits, weft_wait) returns
 *            EINTR (condition waits report it as a spurious wake-up, as
 *            POSIX says they do); any other wait (a mutex, a barrier, a
 *            join: sched/join.c) runs the handler and waits again. A send
 *            to oneself delivers at once.
 *   deliver  when the ULT's wait returns, when it unblocks the signal, and
 *            on pthread_kill to itself: every pending, unblocked signal is
 *            cleared and raised.
 *
 * A ULT in a system call section (sched/carrier.c: a read, a sigwait under
 * libweft-pthread.so) waits in the kernel: it gets a signal sent to it as
 * a kernel thread would, from the kernel, on the kernel thread it runs on
 * (wf_section_kill). One sent just before, by a sender that did not see
 * the section yet, goes there at the section's begin (on_section): the
 * preemption signal that was to deliver it never lands in a section.
 *
 * A ULT running on another worker is interrupted with the preemption
 * signal (src/sched/preempt.c) and delivers in its handler, where a
 * preemption would be safe; where it is not (the ULT runs inside weft or
 * the C library), the monitor asks again at its fast pace until it takes
 * it (w->sig_kick, sched/carrier.c). With preemption off
 * (WEFT_PREEMPT_NS=0) it gets the signal at its next wait or mask change,
 * as a ULT queued to run does.
 *
 * A ULT queued to run gets what was sent to it meanwhile when it next
 * waits, changes its mask or yields (weft_yield, the preemption handler).
 *
 * Signals the kernel sends to the process: a kernel thread blocks what the
 * ULT it runs blocks (the switch tail installs the mask, and wf_sig_mask
 * installs a running ULT's change at once: sched/carrier.c, "signal
 * masks"), so the kernel picks among the running ULTs as among threads,
 * or keeps the signal pending for the process while each blocks it. With
 * the POSIX layer's sigaction, one the kernel delivers where no ULT takes
 * it (a worker's loop, a mask that lags) is held and given to a ULT that
 * takes it, running or not (procsig.c).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "sched/carrier.h"
#include "sched/preempt.h"
#include "sync/wait.h"

/* SIGKILL and SIGSTOP cannot be blocked. */
#define UNBLOCKABLE (wf_sig_bit(SIGKILL) | wf_sig_bit(SIGSTOP))

/* Claim the pending signals of b (bits cleared); returns those claimed. */
static uint64_t claim(wf_ult_t *self, uint64_t b)
{
	uint64_t got = atomic_fetch_and_explicit(&self->sig_pending, ~b, memory_order_acq_rel) & b;
	if (got)
		atomic_fetch_and_explicit(&self->sig_placed, ~got, memory_order_relaxed);
	return got;
}

void wf_sig_deliver(wf_ult_t *self)
{
	for (;;) {
		uint64_t mask = atomic_load_explicit(&self->sig_mask, memory_order_relaxed);
		uint64_t p = atomic_load_explicit(&self->sig_pending, memory_order_acquire) & ~mask;
		if (!p) {
			wf_worker_t *w = wf_worker_self();
			if (w && atomic_load_explicit(&w->sig_kick, memory_order_relaxed) == self)
				atomic_store_explicit(&w->sig_kick, NULL, memory_order_relaxed);
			return;
		}
		int sig = __builtin_ctzll(p) + 1;
		atomic_fetch_and_explicit(&self->sig_pending, ~wf_sig_bit(sig),
					  memory_order_acq_rel);
		self->sig_ran |= wf_sig_bit(sig);
		/* One sent to the process (procsig.c): its handler gets the
		 * siginfo it came with. */
		if (atomic_fetch_and_explicit(&self->sig_placed, ~wf_sig_bit(sig),
					      memory_order_relaxed) &
		    wf_sig_bit(sig))
			self->sig_now = sig;
		WF_SYS(raise)(sig); /* on this worker: the handler runs in this ULT */
		self->sig_now = 0;
	}
}

/* Would the kernel discard sig, sent to a thread that does not block it?
 * SIG_IGN, or the default action of those whose default is to do nothing
 * (and SIGURG, while it is weft's preemption signal: its default is). Such
 * a signal interrupts no wait. */
static int ignored(int sig)
{
	struct sigaction sa;
	if (sigaction(sig, NULL, &sa) != 0)
		return 0;
	if (sa.sa_handler == SIG_IGN)
		return 1;
	int quiet = sig == SIGCHLD || sig == SIGURG || sig == SIGWINCH || sig == SIGCONT;
	return quiet && (sa.sa_handler == SIG_DFL || sig == WF_SIG_PREEMPT);
}

int wf_sig_restarts(wf_ult_t *u)
{
	uint64_t ran = u->sig_ran;
	while (ran) {
		int sig = __builtin_ctzll(ran) + 1;
		ran &= ran - 1;
		struct sigaction sa;
		if (sigaction(sig, NULL, &sa) != 0 || !(sa.sa_flags & SA_RESTART))
			return 0;
	}
	return 1;
}

int wf_sig_send(wf_ult_t *u, int sig)
{
	if (sig <= 0 || sig > 64)
		return EINVAL;
	/* Discarded at once if the ULT does not block it (if it does, it
	 * stays pending: a sigwait may take it). */
	if (!(atomic_load_explicit(&u->sig_mask, memory_order_acquire) & wf_sig_bit(sig)) &&
	    ignored(sig))
		return 0;
	atomic_fetch_or_explicit(&u->sig_pending, wf_sig_bit(sig), memory_order_seq_cst);
	/* In a system call section the ULT waits in the kernel (a read, a
	 * sigwait): the kernel thread it runs on gets the signal itself, which
	 * interrupts the call or is what sigwait waits for - unless the ULT
	 * took the pending bit first (wf_sig_take, before its sigwait). The
	 * seq_cst pair (this RMW, then the load in wf_section_in; the ULT's
	 * begin, a fence, then its look at the bits) lets one of the two see
	 * the other; the bit's owner delivers. */
	if (wf_section_in(u)) {
		/* ... if the signal reaches it there: the ULT does not block it
		 * (the kernel thread does not either: carriers block nothing
		 * the process did not), or it waits for it in sigwait (the
		 * kernel thread blocks it for that). Else it stays pending. */
		uint64_t b = wf_sig_bit(sig);
		if (!(atomic_load_explicit(&u->sig_mask, memory_order_relaxed) & b) ||
		    (atomic_load_explicit(&u->sig_waiting, memory_order_seq_cst) & b)) {
			if (claim(u, b))
				wf_section_kill(u, sig);
			return 0;
		}
	}
	wf_worker_t *w = wf_worker_self();
	if (w && w->current == u) {
		wf_sig_deliver(u);
		return 0;
	}
	if (!(atomic_load_explicit(&u->sig_mask, memory_order_acquire) & wf_sig_bit(sig))) {
		wf_wait_interrupt(u);
		wf_kick_running(u); /* running on another worker: now */
	}
	return 0;
}

void wf_kick_running(wf_ult_t *u)
{
	if (wf_rt.preempt_ns <= 0)
		return;
	int lw = __atomic_load_n(&u->last_worker, __ATOMIC_RELAXED);
	if (lw < 0 || lw >= wf_rt.nworkers)
		return;
	wf_worker_t *t = wf_rt.workers[lw];
	if (__atomic_load_n(&t->current, __ATOMIC_RELAXED) == u) {
		atomic_store_explicit(&t->sig_kick, u, memory_order_relaxed); /* asked again */
		wf_preempt_kick(t);
	}
}

/* The preemption handler's question (sched/preempt.h): the running ULT u
 * acts on unblocked signals sent to it and on an asynchronous
 * cancellation. */
static void on_preempt(wf_ult_t *u)
{
	uint64_t mask = atomic_load_explicit(&u->sig_mask, memory_order_relaxed);
	if (atomic_load_explicit(&u->sig_pending, memory_order_acquire) & ~mask)
		wf_sig_deliver(u);
	if (wf_cancel_async_due(u))
		wf_cancel_act();
}

/* u has begun a system call section with signals pending (the section
 * hook, sched/carrier.c): those it does not block were sent while it ran,
 * by a sender that did not see the section yet; they go to its kernel
 * thread now, as wf_sig_send sends what comes during the section. The
 * handler runs before the call, as on glibc for a signal that comes just
 * before it - where, waited for by the call (a handler that writes to the
 * pipe the thread reads), it would otherwise wait for the call's end. */
static void on_section(wf_ult_t *u)
{
	uint64_t p = atomic_load_explicit(&u->sig_pending, memory_order_acquire) &
		     ~atomic_load_explicit(&u->sig_mask, memory_order_relaxed);
	for (; p; p &= p - 1) {
		int sig = __builtin_ctzll(p) + 1;
		if (claim(u, wf_sig_bit(sig)))
			wf_section_kill(u, sig);
	}
}

void wf_signals_start(void)
{
	wf_preempt_hook = on_preempt;
	wf_section_hook = on_section;
	wf_procsig_start();
}

/* self is about to wait for want in a section: from here on a signal of
 * want sent to it goes to its kernel thread (wf_sig_send); what was sent
 * before, or is held for the process, is pending for it. */
static void wait_begin(wf_ult_t *self, uint64_t want)
{
	atomic_store_explicit(&self->sig_waiting, want, memory_order_seq_cst);
	atomic_thread_fence(memory_order_seq_cst); /* against wf_sig_send */
	wf_proc_claim(self, want);                 /* held for the process (procsig.c) */
}

int wf_sig_take(wf_ult_t *self, const sigset_t *set)
{
	uint64_t want = wf_sig_bits(set);
	wait_begin(self, want);
	for (;;) {
		uint64_t p = atomic_load_explicit(&self->sig_pending, memory_order_acquire) & want;
		if (!p)
			return 0;
		int sig = __builtin_ctzll(p) + 1;
		if (claim(self, wf_sig_bit(sig)))
			return sig;
	}
}

uint64_t wf_sig_take_set(wf_ult_t *self, uint64_t want)
{
	wait_begin(self, want);
	return claim(self, want);
}

void wf_sig_wait_done(wf_ult_t *self)
{
	atomic_store_explicit(&self->sig_waiting, 0, memory_order_relaxed);
}

uint64_t wf_sig_bits(const sigset_t *set)
{
	uint64_t m = 0;
	for (int s = 1; s <= 64; s++)
		if (sigismember(set, s) == 1)
			m |= wf_sig_bit(s);
	return m;
}

void wf_sig_fill(uint64_t m, sigset_t *set)
{
	sigemptyset(set);
	for (int s = 1; s <= 64; s++)
		if (m & wf_sig_bit(s))
			sigaddset(set, s);
}

/* The signals pending for the calling kernel thread alone (sent to it with
 * tgkill or raise, not to the process): /proc's SigPnd. */
static uint64_t thread_pending(void)
{
	char buf[2048];
	if (wf_read_proc("/proc/thread-self/status", buf, sizeof buf) < 0)
		return 0;
	const char *p = strstr(buf, "\nSigPnd:");
	return p ? strtoull(p + 8, NULL, 16) : 0;
}

void wf_sig_take_foreign(wf_ult_t *root)
{
	sigset_t k;
	uint64_t m = WF_SYS(pthread_sigmask)(SIG_BLOCK, NULL, &k) == 0 ? wf_sig_bits(&k) : 0;
	atomic_store_explicit(&root->sig_mask, m & ~UNBLOCKABLE, memory_order_relaxed);
	wf_kmask_account(m & ~UNBLOCKABLE, 1); /* counted as a live ULT's (sched.c) */
	/* What was sent to this thread alone while it blocked it (a raise
	 * before the runtime started) is the root's now, not its kernel
	 * thread's, which every ULT that runs there would see as its own. */
	uint64_t mine = thread_pending() & m & ~UNBLOCKABLE;
	for (int sig = 1; mine && sig <= 64; sig++) {
		if (!(mine & wf_sig_bit(sig)))
			continue;
		uint64_t one = wf_sig_bit(sig);
		struct timespec zero = {0, 0};
		if (syscall(SYS_rt_sigtimedwait, &one, NULL, &zero, sizeof one) == sig)
			atomic_fetch_or_explicit(&root->sig_pending, one, memory_order_relaxed);
	}
}

int wf_sig_mask(wf_ult_t *self, int how, const sigset_t *set, sigset_t *old)
{
	uint64_t cur = atomic_load_explicit(&self->sig_mask, memory_order_relaxed);
	if (old)
		wf_sig_fill(cur, old);
	if (!set)
		return 0;
	uint64_t m = wf_sig_bits(set);
	switch (how) {
	case SIG_BLOCK:
		cur |= m;
		break;
	case SIG_UNBLOCK:
		cur &= ~m;
		break;
	case SIG_SETMASK:
		cur = m;
		break;
	default:
		return EINVAL;
	}
	cur &= ~UNBLOCKABLE;
	uint64_t was = atomic_exchange_explicit(&self->sig_mask, cur, memory_order_acq_rel);
	if (was != cur) {
		wf_kmask_account(was, -1);
		wf_kmask_account(cur, 1);
		if (cur & ~was) /* the sleeping workers' masks (sched/carrier.c) */
			wf_kmask_tighten(cur & ~was);
	}
	wf_kmask_follow(self); /* the kernel's pending signals it unblocks arrive here */
	if (unlikely(atomic_load_explicit(&wf_proc_pending, memory_order_relaxed) & ~cur))
		wf_proc_claim(self, ~cur); /* and weft's (procsig.c) */
	wf_sig_deliver(self);              /* what was pending and is unblocked now */
	return 0;
}
