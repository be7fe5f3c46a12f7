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
 *   sigwait, sigwaitinfo, sigtimedwait, sigsuspend
 *            glibc's, in a system call section (src/sched/carrier.c), with
 *            what weft holds for the ULT taken first (below).
 *
 * Both builds: libweft-pthread.so defines the names themselves; libweft
 * defines weft_px_<name>, which include/weft/compat/signal.h (written by
 * hand: `struct sigaction` shares its function's name, so sigaction is
 * renamed by a function-like macro) puts in the program's calls.
 */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "posix/posix.h"
#include "sched/carrier.h"
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
			wf_sig_deliver(self); /* a handler may block and move */
			*wf_errno_here() = e;
		}
	}
	return r;
}

/* ---- waiting for signals ------------------------------------------------------ */

/* sigsuspend waits in the kernel with the set as its kernel thread's mask.
 * What the set unblocks and the ULT's own mask blocks must end it too when
 * weft has it: a signal sent to the ULT (pthread_kill) or held for the
 * process (src/sync/procsig.c). Those pending already are raised on the
 * kernel thread first (they arrive as soon as the set is installed);
 * those sent while it waits find it as a sigwait's do (sig_waiting:
 * src/sync/signal.c sends them to its kernel thread, and procsig.c's
 * placement prefers it). */
WF_PX_API int WF_PX(sigsuspend)(const sigset_t *s)
{
	WF_GLIBC(wf_f_, int, sigsuspend, (const sigset_t *))
	wf_testcancel();
	wf_ult_t *u = wf_section_begin();
	uint64_t open = u && s ? ~wf_sig_bits(s) & atomic_load(&u->sig_mask) : 0;
	if (open)
		for (uint64_t p = wf_sig_take_set(u, open); p; p &= p - 1)
			WF_SYS(raise)(__builtin_ctzll(p) + 1);
	int r = wf_f_(s);
	int e = errno;
	if (open)
		wf_sig_wait_done(u);
	errno = e;
	wf_section_end(u);
	return r;
}
/* Waiting for signals: the thread blocked them (pthread_sigmask: a ULT's
 * own mask in weft, sync/signal.c), and the kernel hands a blocked signal
 * to sigwait only if the kernel thread blocks it too: so the set is blocked
 * in the kernel thread's mask for the call. A signal sent to the ULT before
 * it waits is pending in weft and taken at once (wf_sig_take); one sent
 * while it waits goes to its kernel thread (wf_section_kill). */
#define WF_SIGWAIT(ret, name, params, args, taken)                                          \
	WF_PX_API ret WF_PX(name) params                                                    \
	{                                                                                   \
		WF_GLIBC(wf_f_, ret, name, params)                                          \
		wf_testcancel();                                                            \
		sigset_t wf_old_;                                                           \
		int wf_masked_ = s && WF_SYS(pthread_sigmask)(SIG_BLOCK, s, &wf_old_) == 0; \
		wf_ult_t *wf_u_ = wf_section_begin();                                       \
		int wf_sig_ = wf_u_ && s ? wf_sig_take(wf_u_, s) : 0;                       \
		ret wf_r_;                                                                  \
		if (wf_sig_)                                                                \
			wf_r_ = (taken);                                                    \
		else                                                                        \
			wf_r_ = wf_f_ args;                                                 \
		int wf_e_ = errno;                                                          \
		if (wf_u_ && s)                                                             \
			wf_sig_wait_done(wf_u_);                                            \
		/* Before the end: it may resume on another kernel thread. */               \
		if (wf_masked_)                                                             \
			WF_SYS(pthread_sigmask)(SIG_SETMASK, &wf_old_, NULL);               \
		errno = wf_e_;                                                              \
		wf_section_end(wf_u_);                                                      \
		return wf_r_;                                                               \
	}

/* What the kernel says of a signal sent by pthread_kill. */
static int took(int sig, int *out, siginfo_t *i)
{
	if (out)
		*out = sig;
	if (i) {
		memset(i, 0, sizeof *i);
		i->si_signo = sig;
		i->si_code = SI_TKILL;
		i->si_pid = getpid();
		i->si_uid = getuid();
	}
	return sig;
}

WF_SIGWAIT(int, sigwait, (const sigset_t *s, int *sig), (s, sig), (took(wf_sig_, sig, NULL), 0))
WF_SIGWAIT(int, sigwaitinfo, (const sigset_t *s, siginfo_t *i), (s, i), took(wf_sig_, NULL, i))
WF_SIGWAIT(int, sigtimedwait, (const sigset_t *s, siginfo_t *i, const struct timespec *t),
	   (s, i, t), took(wf_sig_, NULL, i))
