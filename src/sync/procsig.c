/* Signals sent to the process, and the handlers the program installs.
 *
 * The kernel gives a signal sent to the process (kill, a child's SIGCHLD,
 * a terminal's SIGINT) to one of its kernel threads that does not block
 * it. A worker's kernel thread blocks what the ULT it runs blocks
 * (sched/carrier.c, "signal masks"), so most of the time the thread the
 * kernel picks is the right one: a running ULT that takes the signal. Not
 * always:
 *   - a worker between two ULTs, in its loop, or asleep with the mask it
 *     took when it went to sleep (ULTs changed theirs since), runs on no
 *     ULT at all: a handler run there would run in no thread;
 *   - the kernel thread's mask may lag its ULT's for an instant (a ULT
 *     that blocked the signal a moment ago on another worker);
 *   - the ULT that takes the signal may not be running: parked in a
 *     condition wait, queued behind others. The kernel cannot pick it.
 *
 * So under the POSIX layer the kernel never runs a handler of the
 * program's directly. sigaction (and signal, sysv_signal, siginterrupt:
 * src/posix/sigaction.c, in both of its builds) records the program's handler here and installs
 * weft's trampoline in its place, with the program's mask and flags
 * (SA_SIGINFO added, SA_RESETHAND done by the trampoline). SIG_DFL and
 * SIG_IGN go to the kernel as they are: their effect is the process's,
 * whichever thread takes them. The trampoline:
 *   runs it here  when the kernel thread runs a ULT that does not block
 *                 the signal, outside weft (the common case, at no extra
 *                 cost but an indirect call and a look at the interrupted
 *                 address), when it runs no worker (a foreign
 *                 thread, a ULT in a system call section: its kernel
 *                 thread is its own), and for the signals sent to this
 *                 very kernel thread: faults (SIGSEGV, SIGFPE, ... with a
 *                 kernel si_code) and tgkill's (weft's own delivery of a
 *                 signal to a ULT, sync/signal.c);
 *   holds it      otherwise - also when that ULT was interrupted inside
 *                 weft (wf_interrupted_in_weft: weft's code, or a C
 *                 library function weft called): a handler may call
 *                 sem_post, which must not run in the middle of the queue
 *                 operation or under the lock it interrupted; the ULT is
 *                 a taker like any other, and gets it an instant later
 *                 from the monitor, at a safe instruction, as a
 *                 pthread_kill's signal. Held, its siginfo is kept, its
 *                 bit set in
 *                 wf_proc_pending, and the monitor asked (a futex wake;
 *                 all of it async-signal-safe). Held, it is pending for
 *                 the process, as in the kernel: sigpending shows it, and
 *                 one pending signal of a kind absorbs the next.
 *
 * Giving a held signal out (place, run by the monitor, a kernel thread
 * of weft's with every signal blocked): among the live ULTs, one waiting
 * for it in sigwait, else a running one that does not block it, else any
 * that does not - among equals, the one of the highest priority, which
 * runs first; it is sent to that ULT as pthread_kill sends
 * (wf_sig_send: a parked ULT leaves its wait and runs the handler, a
 * running one is interrupted), marked in its sig_placed so that the
 * handler gets the original siginfo. None takes it: it stays held, and the
 * first ULT that unblocks it (wf_sig_mask) or waits for it (sigwait)
 * claims it.
 *
 * A ULT on its way out takes what it may and then is no taker any more
 * (sig_gone, set in wf_ult_exiting after its destructors ran, where glibc
 * blocks every signal of an exiting thread): a placement under way when
 * it sets it is waited out, so that what it gave the ULT runs there, and
 * so is a signal sent while it was a taker that the kernel still keeps
 * for the process (it takes that one itself, with sigtimedwait) or that a
 * trampoline elsewhere is about to hold (wf_proc_exiting) - else, with no
 * other taker, it would stay held for good where glibc's thread, which the
 * kernel picked when the signal came, would have run its handler. The
 * kernel takes a signal off the process's queue a moment before the
 * trampoline runs; when the exiting ULT is the last taker, it also waits
 * (at most a millisecond) for the monitor, the usual catcher, to finish
 * what it was taking (wf_monitor_sync). A worker's loop or a ULT inside
 * weft on another worker may still be in that moment: such a signal stays
 * held, as glibc's would stay pending had it come an instant later. Any
 * other ULT chosen may exit before it takes the signal: its exit (sched.c,
 * the EXITED switch) gives what is still marked in sig_placed back to the
 * process (wf_proc_repost). The placer marks, then looks whether the ULT
 * exited; the exit marks EXITED, then looks at sig_placed: a store-load
 * pair, fenced asymmetrically (util/fence.h: the exit's side is a compiler
 * barrier), so one of the two sees the other. Descriptors are found by a
 * sweep of the registry while wf_sig_placing is set: wf_ult_free, after
 * the ULT left the registry, waits for that sweep to end (the same fence
 * pair), so no descriptor is freed under the placer.
 *
 * Without a monitor (WEFT_PREEMPT_NS=0 and WEFT_SYSCALL_NS=0), nothing
 * holds: the handler runs where the kernel delivered it, as before this
 * protocol. Held signals keep one siginfo per signal: real-time signals
 * sent several times while held arrive once.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <string.h>

#include "sched/preempt.h"
#include "sync/wait.h"
#include "util/sys.h"

typedef void (*plain_handler)(int);
typedef void (*info_handler)(int, siginfo_t *, void *);

/* Per signal: the program's handler while the trampoline stands in for it
 * (0: it does not) and its flags, under a sequence lock (odd while
 * written, by wf_sig_action with every signal blocked); the siginfo of
 * the held instance, under another. */
static struct action {
	atomic_uint seq;
	atomic_uintptr_t handler;
	atomic_int flags;
	atomic_uint info_seq;
	siginfo_t info;
} acts[65];

static wf_spinlock_t act_lock;       /* writers of acts */
static _Atomic uint64_t trampolined; /* signals the trampoline stands in for */
static __thread int catching;        /* this kernel thread is the monitor */
static atomic_int deciding;          /* trampolines not yet past their choice */

static void trampoline(int sig, siginfo_t *si, void *uc);

/* Kept by the kernel thread it was sent to. */
static int thread_directed(int sig, const siginfo_t *si)
{
	if (si->si_code == SI_TKILL)
		return 1;
	return si->si_code > 0 && (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL ||
				   sig == SIGFPE || sig == SIGTRAP || sig == SIGSYS);
}

/* The copies in and out of the sequence lock below: word by word, relaxed
 * atomics, since a reader may copy while a writer does (it then retries).
 * Async-signal-safe, as the trampoline needs. */
_Static_assert(sizeof(siginfo_t) % sizeof(uint64_t) == 0, "siginfo_t is whole words");

static void copy_info(siginfo_t *to, const siginfo_t *from)
{
	uint64_t *t = (uint64_t *)(void *)to;
	const uint64_t *f = (const uint64_t *)(const void *)from;
	for (size_t i = 0; i < sizeof *to / sizeof *t; i++)
		__atomic_store_n(&t[i], __atomic_load_n(&f[i], __ATOMIC_RELAXED), __ATOMIC_RELAXED);
}

static void keep_info(int sig, const siginfo_t *si)
{
	struct action *a = &acts[sig];
	unsigned s = atomic_load_explicit(&a->info_seq, memory_order_relaxed);
	if ((s & 1) || !atomic_compare_exchange_strong_explicit(
			       &a->info_seq, &s, s + 1, memory_order_acquire, memory_order_relaxed))
		return; /* another kernel thread keeps one at this instant */
	atomic_thread_fence(memory_order_release);
	copy_info(&a->info, si);
	atomic_store_explicit(&a->info_seq, s + 2, memory_order_release);
}

static int read_info(int sig, siginfo_t *out)
{
	struct action *a = &acts[sig];
	for (int tries = 0; tries < 100; tries++) {
		unsigned s = atomic_load_explicit(&a->info_seq, memory_order_acquire);
		if (s & 1)
			continue;
		if (s == 0)
			return 0; /* never held */
		copy_info(out, &a->info);
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&a->info_seq, memory_order_relaxed) == s)
			return 1;
	}
	return 0;
}

/* Hold sig for the process (see the top); 0 if nothing can place it. */
static int hold(int sig, const siginfo_t *si)
{
	if (!wf_monitor_ready())
		return 0;
	int e = errno;
	keep_info(sig, si);
	atomic_fetch_or_explicit(&wf_proc_pending, wf_sig_bit(sig), memory_order_seq_cst);
	wf_monitor_ask();
	errno = e;
	return 1;
}

/* The program's handler for a (0: the trampoline does not stand in for
 * one) and its flags, as one consistent pair. */
static uintptr_t read_action(struct action *a, int *flags)
{
	for (;;) {
		unsigned s = atomic_load_explicit(&a->seq, memory_order_acquire);
		uintptr_t h = atomic_load_explicit(&a->handler, memory_order_relaxed);
		*flags = atomic_load_explicit(&a->flags, memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		if (!(s & 1) && atomic_load_explicit(&a->seq, memory_order_relaxed) == s)
			return h;
	}
}

static void trampoline(int sig, siginfo_t *si, void *uc)
{
	atomic_fetch_add_explicit(&deciding, 1, memory_order_seq_cst);
	wf_worker_t *w = wf_worker_self();
	wf_ult_t *u = w ? __atomic_load_n(&w->current, __ATOMIC_RELAXED) : NULL;
	int kept =
		((w && !thread_directed(sig, si) &&
		  (!u ||
		   (atomic_load_explicit(&u->sig_mask, memory_order_relaxed) & wf_sig_bit(sig)) ||
		   wf_interrupted_in_weft(w, uc))) ||
		 catching) &&
		hold(sig, si);
	atomic_fetch_sub_explicit(&deciding, 1, memory_order_release);
	if (kept)
		return;
	struct action *a = &acts[sig];
	int flags;
	uintptr_t h = read_action(a, &flags);
	if (!h)
		return; /* SIG_DFL or SIG_IGN meanwhile: the program changed it as it came */
	/* A held signal given to this ULT: the siginfo it was sent with. */
	siginfo_t held;
	if (u && si->si_code == SI_TKILL && u->sig_now == sig && read_info(sig, &held))
		si = &held;
	if (flags & SA_RESETHAND) {
		/* Once: the first instance puts back the default. */
		struct sigaction dfl;
		memset(&dfl, 0, sizeof dfl);
		dfl.sa_handler = SIG_DFL;
		if (atomic_compare_exchange_strong_explicit(
			    &a->handler, &h, 0, memory_order_relaxed, memory_order_relaxed)) {
			atomic_fetch_and_explicit(&trampolined, ~wf_sig_bit(sig),
						  memory_order_relaxed);
			WF_SYS(sigaction)(sig, &dfl, NULL);
		}
	}
	if (flags & SA_SIGINFO)
		((info_handler)h)(sig, si, uc);
	else
		((plain_handler)h)(sig);
}

/* The trampoline stands in for the program's handlers of these. */
static int ours(int sig)
{
	return sig >= 1 && sig <= 64 && sig != SIGKILL && sig != SIGSTOP &&
	       !(sig == WF_SIG_PREEMPT && wf_rt.preempt_ns > 0);
}

/* The action sig has, as the program installed it, in *old (if old). */
static int report(int sig, struct sigaction *old)
{
	if (!old)
		return 0;
	int r = WF_SYS(sigaction)(sig, NULL, old);
	if (r == 0 && old->sa_sigaction == trampoline) {
		int flags;
		old->sa_sigaction = (info_handler)read_action(&acts[sig], &flags);
		old->sa_flags = flags;
	}
	return r;
}

int wf_sig_action(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!ours(sig))
		return WF_SYS(sigaction)(sig, act, old);
	if (!act)
		return report(sig, old); /* a question: no lock */
	sigset_t all, was;
	sigfillset(&all);
	/* No trampoline on this kernel thread meets a half-written entry. */
	WF_SYS(pthread_sigmask)(SIG_BLOCK, &all, &was);
	wf_spin_lock(&act_lock);
	struct action *a = &acts[sig];
	int r = report(sig, old);
	if (r == 0) {
		if (act->sa_handler == SIG_DFL || act->sa_handler == SIG_IGN) {
			r = WF_SYS(sigaction)(sig, act, NULL);
			if (r == 0) {
				atomic_store_explicit(&a->handler, 0, memory_order_relaxed);
				atomic_fetch_and_explicit(&trampolined, ~wf_sig_bit(sig),
							  memory_order_relaxed);
			}
		} else {
			struct sigaction t = *act;
			t.sa_sigaction = trampoline;
			t.sa_flags = (act->sa_flags | SA_SIGINFO) & ~SA_RESETHAND;
			unsigned s = atomic_load_explicit(&a->seq, memory_order_relaxed);
			atomic_store_explicit(&a->seq, s + 1, memory_order_relaxed);
			atomic_thread_fence(memory_order_release);
			atomic_store_explicit(&a->handler, (uintptr_t)act->sa_sigaction,
					      memory_order_relaxed);
			atomic_store_explicit(&a->flags, act->sa_flags, memory_order_relaxed);
			atomic_store_explicit(&a->seq, s + 2, memory_order_release);
			r = WF_SYS(sigaction)(sig, &t, NULL);
			if (r == 0)
				atomic_fetch_or_explicit(&trampolined, wf_sig_bit(sig),
							 memory_order_relaxed);
		}
	}
	int e = errno;
	wf_spin_unlock(&act_lock);
	WF_SYS(pthread_sigmask)(SIG_SETMASK, &was, NULL);
	errno = e;
	return r;
}

void wf_proc_claim(wf_ult_t *self, uint64_t want)
{
	uint64_t p = atomic_load_explicit(&wf_proc_pending, memory_order_acquire) & want;
	for (; p; p &= p - 1) {
		uint64_t b = p & -p;
		if (atomic_fetch_and_explicit(&wf_proc_pending, ~b, memory_order_acq_rel) & b) {
			atomic_fetch_or_explicit(&self->sig_placed, b, memory_order_relaxed);
			atomic_fetch_or_explicit(&self->sig_pending, b, memory_order_release);
		}
	}
}

void wf_proc_exiting(wf_ult_t *self)
{
	uint64_t take = atomic_load_explicit(&trampolined, memory_order_relaxed) &
			~atomic_load_explicit(&self->sig_mask, memory_order_relaxed);
	if (!take || !wf_monitor_ready())
		return; /* nothing is held: the kernel runs each where it lands */
	/* A signal the kernel keeps for the process until a kernel thread
	 * takes it is taken here, with every signal blocked so that it stays
	 * there meanwhile; then whatever trampoline was choosing is let
	 * finish its hold, which wf_ult_exiting claims next. */
	sigset_t all, was, set;
	sigfillset(&all);
	WF_SYS(pthread_sigmask)(SIG_BLOCK, &all, &was);
	wf_sig_fill(take, &set);
	struct timespec zero = {0, 0};
	siginfo_t si;
	long sig;
	while ((sig = syscall(SYS_rt_sigtimedwait, &set, &si, &zero, sizeof(uint64_t))) > 0) {
		keep_info((int)sig, &si);
		uint64_t b = wf_sig_bit((int)sig);
		atomic_fetch_or_explicit(&self->sig_placed, b, memory_order_relaxed);
		atomic_fetch_or_explicit(&self->sig_pending, b, memory_order_release);
	}
	while (atomic_load_explicit(&deciding, memory_order_acquire))
		wf_cpu_relax();
	WF_SYS(pthread_sigmask)(SIG_SETMASK, &was, NULL);
	/* The monitor, which catches what only parked ULTs take, may have
	 * taken one from the kernel a moment ago and not yet come to its
	 * trampoline. If no other thread would take it, let it finish. */
	if (wf_kmask_idle_but(self) & take)
		wf_monitor_sync();
}

/* ---- giving held signals out (the monitor) -------------------------------- */

/* The sweep's question and best answer so far (the monitor is the only
 * placer). */
static struct {
	uint64_t b;
	wf_ult_t *best;
	int rank, prio;
} pick;

static void consider(wf_ult_t *u)
{
	if (__atomic_load_n(&u->state, __ATOMIC_RELAXED) == WF_EXITED ||
	    atomic_load_explicit(&u->sig_gone, memory_order_relaxed))
		return;
	int rank = 0;
	if (atomic_load_explicit(&u->sig_waiting, memory_order_relaxed) & pick.b) {
		rank = 3;
	} else if (!(atomic_load_explicit(&u->sig_mask, memory_order_relaxed) & pick.b)) {
		int lw = __atomic_load_n(&u->last_worker, __ATOMIC_RELAXED);
		rank = lw >= 0 && lw < wf_rt.nworkers &&
				       __atomic_load_n(&wf_rt.workers[lw]->current,
						       __ATOMIC_RELAXED) == u
			       ? 2
			       : 1;
	}
	/* Among equals, the one of the highest priority (its scheduling
	 * rank, sched/prio.h): under priorities the one that runs first - a
	 * lower one might never run while a higher one computes. */
	int prio = __atomic_load_n(&u->rank, __ATOMIC_RELAXED);
	if (rank > pick.rank || (rank && rank == pick.rank && prio > pick.prio)) {
		pick.rank = rank;
		pick.prio = prio;
		pick.best = u;
	}
}

static void place(void)
{
	if (!atomic_load_explicit(&wf_proc_pending, memory_order_acquire))
		return;
	atomic_store_explicit(&wf_sig_placing, 1, memory_order_relaxed);
	wf_fence_heavy(); /* wf_ult_free's side is light */
	uint64_t p;
again:
	p = atomic_load_explicit(&wf_proc_pending, memory_order_acquire);
	for (; p; p &= p - 1) {
		uint64_t b = p & -p;
		pick.b = b;
		pick.best = NULL;
		pick.rank = pick.prio = 0;
		wf_registry_sweep(consider);
		wf_ult_t *u = pick.best;
		if (!u ||
		    !(atomic_fetch_and_explicit(&wf_proc_pending, ~b, memory_order_acq_rel) & b))
			continue; /* no taker: held until one unblocks it */
		atomic_fetch_or_explicit(&u->sig_placed, b, memory_order_relaxed);
		wf_fence_heavy(); /* the exit's side is light (sched.c) */
		if (__atomic_load_n(&u->state, __ATOMIC_RELAXED) == WF_EXITED) {
			/* Gone meanwhile: unless its exit gave it back, do. */
			if (atomic_fetch_and_explicit(&u->sig_placed, ~b, memory_order_relaxed) &
			    b) {
				atomic_fetch_or_explicit(&wf_proc_pending, b, memory_order_release);
				goto again;
			}
			continue;
		}
		wf_sig_send(u, __builtin_ctzll(b) + 1);
	}
	atomic_store_explicit(&wf_sig_placing, 0, memory_order_release);
	wf_futex_wake(&wf_sig_placing, INT_MAX);
}

/* The monitor's task, after every wake: catch what no running ULT may
 * take, give out what is held if asked. */
static uint64_t open_set; /* what the monitor leaves unblocked */

static void task(int asked)
{
	catching = 1;
	uint64_t open = atomic_load_explicit(&trampolined, memory_order_relaxed) & ~wf_kmask_idle();
	if (open != open_set) {
		sigset_t m;
		wf_sig_fill(~open, &m);
		WF_SYS(pthread_sigmask)(SIG_SETMASK, &m, NULL);
		open_set = open;
	}
	if (asked)
		place();
}

void wf_procsig_start(void)
{
	wf_monitor_task = task;
}

void wf_procsig_fork(int phase)
{
	wf_spin_fork(&act_lock, phase);
	if (phase != WF_FORK_CHILD)
		return;
	/* The child's monitor is a new thread, blocking everything; a kernel
	 * thread that was keeping a signal's information is gone. The
	 * handlers stay the program's (the kernel keeps the trampoline). */
	open_set = 0;
	for (int sig = 1; sig < 65; sig++) {
		unsigned q = atomic_load_explicit(&acts[sig].info_seq, memory_order_relaxed);
		if (q & 1)
			atomic_store_explicit(&acts[sig].info_seq, q + 1, memory_order_relaxed);
	}
}
