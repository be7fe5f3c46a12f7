/* The program's signal handlers and the process's pending signals.
 *
 *   sigaction, signal, bsd_signal, sysv_signal, siginterrupt
 *            a handler of the program's runs through weft's trampoline,
 *            which runs it in a ULT that takes the signal (src/sync/
 *            procsig.c has the protocol); the calls report the program's
 *            own handler and flags back. signal is BSD's (SA_RESTART
 *            unless siginterrupt said otherwise), sysv_signal System V's
 *            (one-shot, not blocked in its handler), as in glibc - which
 *            makes each of them with its internal sigaction, beyond the
 *            reach of LD_PRELOAD, so each is defined here too.
 *   sigpending  the kernel's answer, and what weft holds for the process
 *            or for the calling ULT.
 *   kill     the kernel's; then, on a ULT, a signal weft now holds for the
 *            process (another kernel thread took it first) and the ULT
 *            does not block runs here before kill returns, as POSIX asks
 *            of a signal the sender does not block.
 *   raise    on a ULT, pthread_kill of itself (glibc's raise is that too):
 *            the ULT's mask decides, not its kernel thread's. Real-time
 *            signals, which queue, go to the kernel thread as before.
 *
 * Both builds: libweft-pthread.so defines the names themselves; libweft
 * defines weft_px_<name>, which include/weft/compat/signal.h (written by
 * hand: `struct sigaction` shares its function's name, so sigaction is
 * renamed by a function-like macro) puts in the program's calls.
 */
#include <signal.h>
#include <string.h>

#include "posix/posix.h"
#include "sched/sched.h"
#include "sync/wait.h"

WF_PX_API int WF_PX(sigaction)(int sig, const struct sigaction *act, struct sigaction *old)
{
	return wf_sig_action(sig, act, old);
}

/* siginterrupt's record for signal: those whose calls are not restarted. */
static _Atomic uint64_t interrupting;

static __sighandler_t install(int sig, __sighandler_t h, int flags, int block_self)
{
	if (h == SIG_ERR || sig < 1 || sig >= NSIG) {
		errno = EINVAL;
		return SIG_ERR;
	}
	struct sigaction act, old;
	memset(&act, 0, sizeof act);
	act.sa_handler = h;
	sigemptyset(&act.sa_mask);
	if (block_self)
		sigaddset(&act.sa_mask, sig);
	act.sa_flags = flags;
	if (wf_sig_action(sig, &act, &old) != 0)
		return SIG_ERR;
	return old.sa_handler;
}

WF_PX_API __sighandler_t WF_PX(signal)(int sig, __sighandler_t h)
{
	int intr = sig >= 1 && sig <= 64 &&
		   (atomic_load_explicit(&interrupting, memory_order_relaxed) & wf_sig_bit(sig));
	return install(sig, h, intr ? 0 : SA_RESTART, 1);
}

WF_PX_API __sighandler_t WF_PX(sysv_signal)(int sig, __sighandler_t h)
{
	return install(sig, h, SA_RESETHAND | SA_NODEFER, 0);
}

#ifdef WEFT_PRELOAD
WF_PX_API __sighandler_t bsd_signal(int sig, __sighandler_t h)
{
	return signal(sig, h);
}

WF_PX_API __sighandler_t __sysv_signal(int sig, __sighandler_t h)
{
	return sysv_signal(sig, h);
}
#endif

WF_PX_API int WF_PX(siginterrupt)(int sig, int flag)
{
	struct sigaction act;
	if (sig < 1 || sig >= NSIG || wf_sig_action(sig, NULL, &act) != 0) {
		errno = EINVAL;
		return -1;
	}
	uint64_t b = sig <= 64 ? wf_sig_bit(sig) : 0;
	if (flag) {
		atomic_fetch_or_explicit(&interrupting, b, memory_order_relaxed);
		act.sa_flags &= ~SA_RESTART;
	} else {
		atomic_fetch_and_explicit(&interrupting, ~b, memory_order_relaxed);
		act.sa_flags |= SA_RESTART;
	}
	return wf_sig_action(sig, &act, NULL);
}

WF_PX_API int WF_PX(sigpending)(sigset_t *set)
{
	if (!set) {
		errno = EFAULT;
		return -1;
	}
	if (WF_SYS(sigpending)(set) != 0)
		return -1;
	wf_ult_t *self = wf_self();
	uint64_t m = atomic_load_explicit(&wf_proc_pending, memory_order_acquire) |
		     (self ? atomic_load_explicit(&self->sig_pending, memory_order_relaxed) : 0);
	for (int s = 1; s <= 64; s++)
		if (m & (1ull << (s - 1)))
			sigaddset(set, s);
	return 0;
}

WF_PX_API int WF_PX(raise)(int sig)
{
	/* Real-time signals queue: each raise() must stay an instance of
	 * its own, which the kernel keeps (weft's pending set is a mask). */
	wf_ult_t *self = wf_self();
	if (!self || sig >= SIGRTMIN)
		return WF_SYS(raise)(sig);
	if (sig < 0 || sig >= NSIG) {
		errno = EINVAL;
		return -1;
	}
	int e = sig ? wf_sig_send(self, sig) : 0;
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

WF_PX_API int WF_PX(kill)(pid_t pid, int sig)
{
	int r = WF_SYS(kill)(pid, sig);
	wf_ult_t *self = wf_self();
	if (self) {
		/* A signal the caller takes that another kernel thread got
		 * first is held for the process (sync/procsig.c): take it - or,
		 * if the monitor is giving it out at this instant (its claim
		 * comes after wf_sig_placing is set and fenced), let it finish:
		 * it may be giving it to us. Then run what is ours. */
		uint64_t open = ~atomic_load_explicit(&self->sig_mask, memory_order_relaxed);
		if (unlikely(atomic_load_explicit(&wf_proc_pending, memory_order_acquire) & open))
			wf_proc_claim(self, open);
		else if (unlikely(atomic_load_explicit(&wf_sig_placing, memory_order_seq_cst)))
			wf_sig_placing_wait();
		if (unlikely(atomic_load_explicit(&self->sig_pending, memory_order_acquire) &
			     open)) {
			int e = errno;
			wf_sig_deliver(self);
			errno = e;
		}
	}
	return r;
}
