/* Preemption: a ULT that runs longer than a slice without a scheduling
 * point gives way to the other ULTs of its worker.
 *
 * Who decides: the monitor (carrier.c) looks at every worker every half
 * slice while any runs a ULT. A worker whose switch count (n_switches) and
 * current ULT have not changed while its kernel thread used
 * wf_rt.preempt_ns of CPU time (time blocked in a system call is no slice,
 * and one blocked in any call but a futex wait is left there: the signal
 * would make the call fail with EINTR) - or whose kernel thread has used
 * no CPU since the last look and waits in a futex with no timeout, the one
 * wait the signal interrupts invisibly (SA_RESTART) - gets WF_SIG_PREEMPT,
 * sent to its carrier's kernel thread (tgkill). The signal is the only
 * message: its handler, running on that kernel thread at whatever
 * instruction it interrupted, finds the rest itself.
 *
 * What the handler does (on_preempt): if the kernel thread runs a ULT of
 * a worker (not the worker's loop, a spare's home, a system call section
 * or a foreign thread: wf_worker_self() and w->current say which), and the
 * interrupted instruction is one where giving way is safe (below), it
 * switches the ULT away as a yield does (WF_AFTER_PREEMPT: it goes to the
 * back of its worker's queues) from inside the handler. The signal frame
 * stays on the ULT's stack; when a worker runs the ULT again - on this
 * kernel thread or another - the switch returns into the handler, which
 * returns to the interrupted instruction through sigreturn. Two things in
 * the frame belong to the kernel thread rather than the ULT, and sigreturn
 * would install them on whichever kernel thread resumes it: the signal
 * mask and the alternate signal stack. The handler writes the current
 * kernel thread's into the frame before it returns.
 *
 * Where giving way is safe - "signal-yield only where provably safe": the
 * interrupted instruction is in none of the objects whose state a yield
 * could leave half-changed for another ULT of the same kernel thread to
 * trip on: weft itself (its scheduler, queues and locks: the handler uses
 * them) and the vDSO (weft reads the clock there in the middle of a
 * switch), the C library and the dynamic linker (malloc's arenas, stdio's
 * and the loader's locks are taken with futexes that would block the
 * worker if a ULT of the same worker wanted them while their holder is
 * preempted), the C++ runtime and libgcc's unwinder (static-init guards,
 * the exception machinery) - save the C library's syscall() when the
 * program called it (a futex wait of its own, as Rust's standard library
 * makes: find_libc_syscall). Anywhere else - the program's own code, the
 * libraries it brings, including OpenMP's spin loops and its futex waits
 * returning from the kernel - a preemption is what the kernel does to a
 * kernel thread at any instruction: a ULT's registers, its stack, its
 * thread pointer (installed by the switch) and its errno (saved and
 * restored around the handler) go with it. The ranges are found once, at
 * start (dl_iterate_phdr); a program that links weft statically puts its
 * own code in weft's range, and is then never preempted. Elsewhere the
 * signal is dropped: the monitor sends another after the next slice.
 *
 * Nor is a handler of the program's that runs on the alternate signal
 * stack (SA_ONSTACK) interrupted: that stack belongs to the kernel thread.
 *
 * A worker that runs a scheduler of the program's (weft_sched_install)
 * is never preempted: its operations run inside weft's switch, in the
 * program's code, where no range tells them apart.
 *
 * A ULT without a thread pointer of its own (weft_create's default) shares
 * its worker's thread-locals; code may hold the address of one in a
 * register at any instruction, so such a ULT, once preempted, is bound to
 * its worker until it runs again.
 *
 * A worker whose scheduler keeps time itself (a tick operation: prio,
 * where SCHED_RR has its own slices and SCHED_FIFO none) is asked instead
 * (tick) for a SCHED_FIFO or SCHED_RR ULT: it gives way only if the
 * scheduler says so - at any safe instruction, not only at the next
 * scheduling point. A SCHED_OTHER ULT there is sliced as anywhere.
 *
 * The same signal delivers what must not wait for the ULT's next
 * scheduling point (wf_preempt_hook, set by the synchronization layer):
 * signals pthread_kill sent to a running ULT, and an asynchronous
 * cancellation. They are acted on where a preemption would be, before the
 * yield.
 *
 * Weft's own critical sections are never interrupted by a yield: a
 * switch, a queue operation, a lock - all run in weft's text, where the
 * handler does nothing. The handler itself runs with the ULT's worker
 * consistent, since the interrupted code was not weft's.
 *
 * Owed: a ULT that spends nearly all its time inside weft or the C
 * library - a loop that locks and unlocks a mutex - would almost never be
 * found at a safe instruction, and would hold its worker for good (glibc's
 * threads are preempted by the kernel anywhere). So where the handler
 * finds an unsafe instruction it notes the preemption as owed
 * (w->preempt_owed, and the count wf_preempts_owed), and the ULT pays it
 * at its next lock release or create or join (wf_preempt_point:
 * weft_mutex_unlock, weft_rwlock_unlock, wf_create, wf_join_id), a call
 * boundary where no internal lock is held: what is pending for it is
 * delivered, and it gives way if the slice the monitor saw is still the
 * one running. A worker's debt outlives the ULT
 * that made it until some ULT of that worker passes a point; paying it
 * then costs a look at the slice.
 *
 * Not in sanitizer builds: their runtimes take signals at their own safe
 * points, and their per-thread state does not survive a ULT moving inside
 * a handler.
 */
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <link.h>
#include <signal.h>
#include <string.h>
#include <sys/auxv.h>
#include <ucontext.h>

#include "sched/carrier.h"
#include "sched/policy.h"
#include "sched/preempt.h"
#include "util/sys.h"

void (*wf_preempt_hook)(wf_ult_t *u);

#define MAX_RANGES 32
static struct {
	uintptr_t lo, hi;
	int weft; /* weft's own object or the vDSO */
} ranges[MAX_RANGES];
static int nranges;
static int installed;
static struct sigaction old_action;

/* The range pc is in: 0 none, 1 an excluded object, 2 weft or the vDSO. */
static int range_of(uintptr_t pc)
{
	for (int i = 0; i < nranges; i++)
		if (pc >= ranges[i].lo && pc < ranges[i].hi)
			return 1 + ranges[i].weft;
	return 0;
}

/* Is pc in an object where a yield is not safe? */
static int unsafe_pc(uintptr_t pc)
{
	return range_of(pc) != 0;
}

/* The C library's syscall(): a leaf that takes no lock, through which a
 * program may make its own futex waits (Rust's standard library parks its
 * threads so). A ULT blocked in one holds its worker until the wait ends,
 * as OpenMP's do (carrier.c, futex_waiting) - and the waker may be a ULT
 * queued behind it. So a ULT stopped inside syscall() that the program
 * called may yield like one stopped in the program's own code: SA_RESTART
 * makes the wait again when it resumes. Not when weft called it (its own
 * futexes, inside its critical sections): the caller's return address
 * tells (x86-64: on top of the stack; aarch64: the link register). */
static uintptr_t libc_syscall_lo, libc_syscall_hi;

static void find_libc_syscall(void)
{
	void *f = dlsym(RTLD_DEFAULT, "syscall");
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	if (f && dladdr1(f, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size &&
	    range_of((uintptr_t)f) == 1) {
		libc_syscall_lo = (uintptr_t)f;
		libc_syscall_hi = libc_syscall_lo + sym->st_size;
	}
}

static int excluded(const char *name)
{
	static const char *const names[] = {"/libc.so.",     "/ld-linux",    "/libweft",
					    "/libstdc++.so", "/libgcc_s.so", "/libpthread.so"};
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (strstr(name, names[i]))
			return 1;
	return 0;
}

static int add_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	uintptr_t me = (uintptr_t)&add_object;
	uintptr_t vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	int mine = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && me >= lo && me < lo + ph->p_memsz)
			mine = 1;
		/* The vDSO: weft itself reads the clock there, mid-switch. */
		if (ph->p_type == PT_LOAD && vdso && vdso >= lo && vdso < lo + ph->p_memsz)
			mine = 1;
	}
	if (!mine && !excluded(info->dlpi_name ? info->dlpi_name : ""))
		return 0;
	for (int i = 0; i < info->dlpi_phnum && nranges < MAX_RANGES; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			ranges[nranges].lo = info->dlpi_addr + ph->p_vaddr;
			ranges[nranges].hi = ranges[nranges].lo + ph->p_memsz;
			ranges[nranges].weft = mine;
			nranges++;
		}
	}
	return 0;
}

static int is_builtin(const weft_sched_ops_t *ops)
{
	for (int i = 0; i < WF_SCHED_BUILTINS; i++)
		if (ops == wf_sched_builtin[i])
			return 1;
	return 0;
}

static uintptr_t interrupted_pc(const ucontext_t *uc)
{
#if defined(__x86_64__)
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
	return (uintptr_t)uc->uc_mcontext.pc;
#else
	(void)uc;
	return 0;
#endif
}

/* Where the interrupted function returns to, if it is a leaf that has
 * not touched its stack or link register yet (0: not known here). */
static uintptr_t leaf_return(const ucontext_t *uc)
{
#if defined(__x86_64__)
	const uintptr_t *sp = (const uintptr_t *)uc->uc_mcontext.gregs[REG_RSP];
	return sp ? *sp : 0;
#elif defined(__aarch64__)
	return (uintptr_t)uc->uc_mcontext.regs[30];
#else
	(void)uc;
	return 0;
#endif
}

int wf_interrupted_in_weft(wf_worker_t *w, const void *ucv)
{
	const ucontext_t *uc = ucv;
	int r = range_of(interrupted_pc(uc));
	if (r == 2 || (w && !is_builtin(w->sched_ops)))
		return 1;
	if (r != 1)
		return 0;
	/* In the C library: called by weft? The leaf functions weft calls
	 * inside its critical sections (syscall, for its futex calls;
	 * memcpy) leave the return address where leaf_return finds it. */
	return range_of(leaf_return(uc)) == 2;
}

atomic_int wf_preempts_owed;

/* From the handler: w's running ULT is at an unsafe instruction. */
static void owe(wf_worker_t *w)
{
	if (!atomic_exchange_explicit(&w->preempt_owed, 1, memory_order_relaxed))
		atomic_fetch_add_explicit(&wf_preempts_owed, 1, memory_order_relaxed);
}

void wf_preempt_pay(void)
{
	wf_worker_t *w = wf_worker_self();
	wf_ult_t *u = w ? w->current : NULL;
	/* Another worker's debt brings us here too (wf_preempts_owed counts
	 * every worker's): a plain look at ours first, so that paying nothing
	 * costs no locked instruction. */
	if (!u || !atomic_load_explicit(&w->preempt_owed, memory_order_relaxed) ||
	    !atomic_exchange_explicit(&w->preempt_owed, 0, memory_order_relaxed))
		return;
	atomic_fetch_sub_explicit(&wf_preempts_owed, 1, memory_order_relaxed);
	stack_t cur;
	if (sigaltstack(NULL, &cur) == 0 && (cur.ss_flags & SS_ONSTACK))
		return; /* a handler on the kernel thread's signal stack */
	if (wf_preempt_hook)
		wf_preempt_hook(u); /* pending signals, asynchronous cancellation */
	if (atomic_load_explicit(&w->n_switches, memory_order_relaxed) !=
		    atomic_load_explicit(&w->preempt_n, memory_order_relaxed) ||
	    u->sched_policy == SCHED_FIFO || u->sched_policy == SCHED_RR)
		return; /* that slice is over; real-time ULTs are the scheduler's (tick) */
	wf_preempt_yield(w, u);
}

static void on_preempt(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	int saved = *wf_errno_here();
	ucontext_t *uc = ucv;
	wf_worker_t *w = wf_worker_self();
	wf_ult_t *u = w ? w->current : NULL;
	uintptr_t pc = interrupted_pc(uc);
	if (!u || !pc)
		goto out;
	/* A scheduler of the program's runs its operations inside weft's
	 * switch, in the program's code: no instruction of that worker is
	 * known to be outside weft. */
	if (!is_builtin(w->sched_ops))
		goto out;
	if (unsafe_pc(pc) &&
	    !(pc >= libc_syscall_lo && pc < libc_syscall_hi && range_of(leaf_return(uc)) == 0)) {
		owe(w); /* paid at the ULT's next lock release */
		goto out;
	}
	/* Interrupting a handler of the program's that runs on the signal
	 * stack (SA_ONSTACK): that stack is the kernel thread's, not the
	 * ULT's, and must not go with it. */
	stack_t cur;
	if (sigaltstack(NULL, &cur) == 0 && (cur.ss_flags & SS_ONSTACK))
		goto out;
	if (wf_preempt_hook)
		wf_preempt_hook(u); /* pending signals, asynchronous cancellation */
	/* The slice the monitor saw is over if the worker switched since:
	 * the ULT running now has just begun its own (or the signal was a
	 * signal's delivery, not a slice's end). */
	if (atomic_load_explicit(&w->n_switches, memory_order_relaxed) !=
	    atomic_load_explicit(&w->preempt_n, memory_order_relaxed))
		goto out;
	/* A scheduler that keeps time itself (prio: SCHED_RR's slices, and
	 * SCHED_FIFO, which no slice ends) decides for its real-time ULTs;
	 * the others (SCHED_OTHER) are sliced as everywhere. */
	if (w->sched_ops->tick && (u->sched_policy == SCHED_FIFO || u->sched_policy == SCHED_RR) &&
	    !(w->sched_ops->tick(w->sched_state, wf_now_ns()) & WEFT_SCHED_PUT_RESCHED))
		goto out;
	int bind = !u->tp && u->bound_worker < 0;
	if (bind)
		u->bound_worker = w->id;
	wf_worker_t *back = wf_preempt_yield(w, u);
	if (bind)
		u->bound_worker = -1;
	if (back) {
		/* Resumed, maybe on another kernel thread: sigreturn must
		 * install this one's mask and signal stack, not the old one's. */
		sigset_t m;
		if (WF_SYS(pthread_sigmask)(SIG_BLOCK, NULL, &m) == 0)
			uc->uc_sigmask = m;
		stack_t ss;
		if (sigaltstack(NULL, &ss) == 0)
			uc->uc_stack = ss;
		if (wf_preempt_hook)
			wf_preempt_hook(u); /* what was sent to it while it waited its turn */
	}
out:
	*wf_errno_here() = saved; /* where this ULT runs now */
}

int wf_preempt_start(void)
{
	/* Debts die with the workers that owed them: one left by a worker of
	 * the previous runtime would send every unlock of this one looking
	 * for it (wf_preempt_point). No worker runs yet. */
	atomic_store_explicit(&wf_preempts_owed, 0, memory_order_relaxed);
#if !defined(__x86_64__) && !defined(__aarch64__)
	wf_rt.preempt_ns = 0;
#endif
	if (WF_ASAN || WF_TSAN)
		wf_rt.preempt_ns = 0; /* the monitor does not watch for it either */
	if (!nranges) {
		dl_iterate_phdr(add_object, NULL); /* wf_interrupted_in_weft's too */
		find_libc_syscall();
	}
	if (wf_rt.preempt_ns <= 0 || installed)
		return 0;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_preempt;
	/* SA_NODEFER: the handler may switch away for a long time; the signal
	 * must not stay blocked on this kernel thread meanwhile. SA_RESTART:
	 * a system call it interrupts goes on, as if nothing happened. Not
	 * SA_ONSTACK: the frame must be on the ULT's own stack. */
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (WF_SYS(sigaction)(WF_SIG_PREEMPT, &sa, &old_action) != 0) {
		wf_rt.preempt_ns = 0;
		return 0;
	}
	installed = 1;
	return 0;
}

void wf_preempt_stop(void)
{
	if (!installed)
		return;
	WF_SYS(sigaction)(WF_SIG_PREEMPT, &old_action, NULL);
	installed = 0;
}
