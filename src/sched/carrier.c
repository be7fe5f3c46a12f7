/* Carriers: the kernel threads that carry workers, system call sections,
 * and the monitor that hands a worker stuck in the kernel to a spare.
 *
 * Concepts
 *   worker   a processor in the scheduler's sense (sched.h): run queues,
 *            timers, a scheduler, a loop context on a stack of its own.
 *   carrier  a kernel thread (a glibc pthread, or the thread that started
 *            the runtime) that carries at most one worker at a time: it
 *            runs that worker's loop and ULTs. Every worker has exactly one
 *            carrier (w->carrier) while the runtime runs. A carrier that
 *            carries nothing is a spare: it sleeps on its futex word (cmd)
 *            in its home context, on its own stack.
 *   section  a ULT's system call that may block (weft_syscall_begin/end,
 *            and every blocking call libweft-pthread.so wraps).
 *   monitor  one kernel thread that looks at the workers every few tens of
 *            microseconds and retakes the worker of a section that has
 *            lasted longer than wf_rt.syscall_ns.
 *
 * Go's runtime has the same three roles (P, M, sysmon: entersyscall,
 * exitsyscall, retake); so do libfibre's and Argobots' designs in part.
 * The seeds never had blocking calls to deal with: their kernel threads
 * were the workers (HybridThreads, section 3; LiteThreads' clone threads).
 *
 * A section, w->sys (a word the monitor and the owner both CAS):
 *   begin    the ULT u running on w stores (seq << 2) | IN, seq counting
 *            w's sections, after writing in u which worker and carrier it
 *            left (u->sys_w, u->sys_c). From here until end, u's kernel
 *            thread does not touch w, and u is no worker's ULT: the
 *            thread-local worker pointer is NULL, so a weft call made
 *            inside the section (a signal handler's sem_post, a library's
 *            lock) takes the foreign-thread path and blocks, if it must,
 *            in the kernel like the rest of the section.
 *   end      CAS (seq << 2) | IN -> (seq << 2). Done: two atomic stores and
 *            a CAS on a line the worker owns.
 *   retake   the monitor saw the same (seq, IN) value in two sweeps at
 *            least syscall_ns apart. It takes a spare carrier (or makes
 *            one, up to wf_rt.spares of them besides the workers' own,
 *            or past that while every worker has been in one section for
 *            STUCK_NS: retake),
 *            CASes (seq << 2) | IN -> (seq << 2) | TAKEN, and gives the
 *            worker to the spare: give = w, cmd = CARRY, futex wake. The
 *            CAS decides the race with end: either end wins and nothing
 *            happened, or the monitor wins and w is no longer the blocked
 *            carrier's. The CAS's acquire makes every write the old
 *            carrier made to w before begin visible to the monitor, whose
 *            release store of cmd makes them visible to the spare.
 *   takeover the spare, now w's carrier, makes w its own (sched.c,
 *            wf_worker_carried and wf_worker_takeover: thread pointer,
 *            errno, CPU clock, no current ULT, sys back to no section) and
 *            switches from its home to w's loop, which goes on as if the
 *            ULT in the section had switched to it.
 *   end, taken  the CAS fails: u is running on a kernel thread that owns
 *            no worker. It switches to that carrier's home (sched.c,
 *            wf_switch_home), which - once u is off its stack - queues u
 *            as woken from a foreign thread (the global queue, or the
 *            inbox of the worker it is bound to) and then waits as a spare.
 *            u resumes on whichever worker takes it; errno is carried
 *            across in u->saved_errno.
 *
 * Why a worker's loop has a stack of its own: the loop must be able to
 * continue on another kernel thread (takeover), so it cannot live on a
 * kernel thread's stack. Each carrier's home context is on its own
 * pthread's stack; the thread that started the runtime (whose stack the
 * root ULT keeps) gets a mapped home stack.
 *
 * The monitor sleeps syscall_ns / 2 while it saw a section open in its last
 * sweep, and doubles its sleep up to MONITOR_MAX_NS while it sees none;
 * then it is idle: it sets monitor_idle, looks at the workers once more and
 * sleeps until woken; the next section's begin clears the flag and wakes it
 * (one load of a shared, read-mostly word per begin). The flag and w->sys
 * are a store-buffering pair: begin stores sys, then loads the flag; the
 * monitor stores the flag, then loads every sys. begin pays the light side
 * of an asymmetric fence (a compiler barrier), the monitor going idle the
 * heavy one (membarrier, util/fence.h), so one of them sees the other: no
 * section is left unwatched, and an idle process never wakes the monitor.
 * (Go's sysmon backs off to 10 ms and sleeps on a note when the whole
 * runtime is idle.)
 *
 * Kicks: the preemption signal (preempt.c) must never land in a section's
 * call. A nanosleep, a poll with a timeout, a sigsuspend, a socket read
 * with SO_RCVTIMEO fail with EINTR when any handler runs, SA_RESTART or
 * not (signal(7)) - and the program sent no signal. Its sender
 * (wf_preempt_kick: the monitor, or a pthread_kill to a running ULT) looks
 * at w->sys first, but the ULT may begin a section between that look and
 * the signal's arrival. So the sender and a section's begin settle it on
 * w->kick, (generation << 2) | state:
 *   sender   CAS idle|done -> armed (a new generation; if a kick is under
 *            way, that one's signal serves both), heavy fence, load sys:
 *            in a section - CAS armed -> idle, send nothing; else CAS
 *            armed -> sent, tgkill, store done.
 *   begin    store sys, light fence (the one the monitor's idle flag
 *            needs too), load kick: idle - nothing under way; armed - CAS
 *            it back to idle, and no signal comes (the sender's next CAS
 *            fails); sent - wait (sched_yield) for done; done - the signal
 *            is queued on this kernel thread or was taken: one system call
 *            (getppid) takes it on its way back to user space, where the
 *            handler finds a section and drops it; then CAS done -> idle.
 * Store-buffering again (util/fence.h): either the sender sees the
 * section and sends nothing, or the begin sees the kick and takes its
 * signal before the call. The generation keeps a sender that stalled
 * between its look and its CAS from sending on another sender's arming. A
 * preemption a section takes back is no loss: the ULT is in a system call
 * (handed over if it lasts), and the monitor asks again after it. A done
 * left by a signal taken long ago costs the next section's begin one
 * getppid - a slice's worth of sections pays it once. Nor is a worker
 * sent one between its retake and its new carrier's takeover (TAKEN): its
 * carrier is still the kernel thread in the section's call, and its
 * current ULT the one in it, which the monitor would take for one that
 * computed a slice while a busy machine keeps the spare from running.
 *
 * Every section that outlives the threshold is handed over, even on a
 * worker with nothing else to run (its new carrier then sleeps in the loop
 * as an idle worker does): simple, and a worker's queue may fill at any
 * moment. The cost of one hand-over is a futex wake of the spare and, when
 * the call returns, one switch and a queue round trip for the ULT.
 *
 * Stopping (wf_carriers_stop): the root ULT must end on the kernel thread
 * that started the runtime, the first carrier. If it runs there, it just
 * leaves its worker; if not, it switches to its carrier's home, which
 * hands it to the first carrier (ADOPT): that one ends its own loop, goes
 * home and switches to the root. Every other carrier exits when its loop
 * ends (EXIT for spares) and is joined.
 */
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sched/carrier.h"
#include "sched/cpuclock.h"
#include "sched/preempt.h"
#include "util/fence.h"
#include "util/sys.h"
#if WF_ASAN
#include <sanitizer/asan_interface.h>
#endif

/* w->sys low bits. */
enum { SYS_NONE = 0, SYS_IN = 1, SYS_TAKEN = 2, SYS_FLAGS = 3 };

/* w->kick: the state in the low bits, a generation above ("Kicks"). */
enum { KICK_IDLE = 0, KICK_ARMED = 1, KICK_SENT = 2, KICK_DONE = 3, KICK_STATE = 3, KICK_GEN = 4 };

/* wf_carrier.cmd: what a spare is told (a futex word). */
enum { CMD_NONE = 0, CMD_CARRY, CMD_ADOPT, CMD_EXIT };

enum { HOME_STACK_SIZE = 256 * 1024 };
#define MONITOR_MAX_NS 1000000ull
#define STUCK_POLL_NS  1000000ull
#define STUCK_KEEP_NS  50000000ull

typedef struct wf_carrier {
	pthread_t thread;  /* written by its creator, for the join */
	pthread_t self;    /* the same, written by itself */
	pid_t tid;         /* its kernel thread id */
	int first;         /* the kernel thread that started the runtime */
	void *tp;          /* the thread pointer its home and the loops it carries run on */
	void *native_tp;   /* its own thread control block (the first carrier's can
	                       differ from tp: the root ULT keeps it, sched.c) */
	int *errno_loc;    /* errno under tp */
	clockid_t cpu_clk; /* its CPU clock */
	uint64_t kmask;    /* its signal mask while it carries nothing (sched.h) */
	wf_ctx_t home;     /* where it waits while it carries nothing */
	void *home_uc;     /* ucontext storage of home */
	void *home_stack;  /* the first carrier's home stack (others: their own) */
	void *altstack;    /* signal stack for guard-page reports */
	stack_t old_altstack;
	atomic_int cmd;    /* CMD_*, a futex word */
	wf_worker_t *give; /* with CMD_CARRY: the worker to carry */
	wf_ult_t *adopt;   /* with CMD_ADOPT: the root ULT */
	struct wf_carrier *next_spare;
	struct wf_carrier *next_all;
	int joined;
} wf_carrier_t;

static struct {
	pthread_mutex_t lock; /* all, count, spares, stopping (the monitor, stop) */
	int stopping;
	wf_carrier_t *all;    /* every carrier made, the first one included */
	int count;            /* carriers made besides the first */
	int extra;            /* ... of them, by the monitor (at most wf_rt.spares) */
	wf_carrier_t *spares; /* LIFO of carriers waiting at home */
	wf_carrier_t *first;  /* the root's kernel thread's, or NULL */
	uint64_t mask;        /* the signal mask the starter had: the first carrier's */
	pthread_t monitor;
	int monitor_running;
	atomic_int monitor_word; /* 1: stop (a futex word) */
	uint64_t *seen_ns;       /* per worker: when the monitor first saw seen_v */
	unsigned *seen_v;
	/* Per worker, for preemption: the switch count and ULT the monitor
	 * saw, and since when (or since its last signal). */
	unsigned long *run_n;
	wf_ult_t **run_u;
	uint64_t *run_ns;
	uint64_t *run_cpu0; /* its carrier's CPU time then */
	uint64_t *run_cpu;  /* its carrier's CPU time at the last sweep */
	/* ... and for the same run, the sweeps left until the next look at
	 * whether its kernel thread waits in a futex, and the last gap. */
	unsigned *probe_in, *probe_gap;
} cr = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* 1: the monitor sleeps until the next section's begin or a loop starting
 * a ULT clears this (the futex word it waits on). */
atomic_int wf_monitor_idle;

void wf_monitor_poke_slow(void)
{
	if (atomic_exchange_explicit(&wf_monitor_idle, 0, memory_order_relaxed))
		wf_futex_wake(&wf_monitor_idle, 1);
}

/* The monitor's other job (sched.h): monitor_asked is set, then the
 * monitor woken wherever it sleeps; it looks at the flag after every wake
 * and, going idle, after it announced it (the flag's store and the idle
 * word's exchange are sequentially consistent: one of the two sides sees
 * the other). */
void (*wf_monitor_task)(int asked);
static atomic_int monitor_up, monitor_asked;

int wf_monitor_ready(void)
{
	return atomic_load_explicit(&monitor_up, memory_order_acquire);
}

void wf_monitor_ask(void)
{
	atomic_store_explicit(&monitor_asked, 1, memory_order_seq_cst);
	if (atomic_exchange_explicit(&wf_monitor_idle, 0, memory_order_seq_cst))
		wf_futex_wake(&wf_monitor_idle, 1);
	wf_futex_wake(&cr.monitor_word, 1);
}

/* Tasks the monitor finished (wf_monitor_sync waits on it). */
static atomic_int monitor_tasks;

static void monitor_task(void)
{
	int asked = atomic_load_explicit(&monitor_asked, memory_order_relaxed) &&
		    atomic_exchange_explicit(&monitor_asked, 0, memory_order_acquire);
	if (wf_monitor_task)
		wf_monitor_task(asked);
	atomic_fetch_add_explicit(&monitor_tasks, 1, memory_order_release);
	if (asked)
		wf_futex_wake(&monitor_tasks, INT_MAX);
}

void wf_monitor_sync(void)
{
	/* Two tasks that began after an ask: the first may have been under
	 * way when we asked. */
	for (int i = 0; i < 2 && wf_monitor_ready(); i++) {
		int n = atomic_load_explicit(&monitor_tasks, memory_order_acquire);
		wf_monitor_ask();
		struct timespec rel = {0, 500000};
		if (atomic_load_explicit(&monitor_tasks, memory_order_acquire) == n)
			wf_futex_wait(&monitor_tasks, n, &rel);
	}
}

/* What comes back to a home besides a ULT: the root ULT handed to the
 * first carrier, a loop that ended (stop). */
static char adopt_mark, ended_mark;

static void carrier_signal(wf_carrier_t *c, int cmd)
{
	atomic_store_explicit(&c->cmd, cmd, memory_order_release);
	wf_futex_wake(&c->cmd, 1);
}

/* ---- signal masks -------------------------------------------------------
 *
 * A signal the kernel sends to the process goes to one of its kernel
 * threads that does not block it; if every one blocks it, it stays pending
 * for the process until one unblocks it or takes it with sigwait. For that
 * choice to be the one POSIX describes among the program's threads, each
 * kernel thread blocks what the ULT it runs blocks (sig_mask,
 * sync/signal.c), in two steps when the masks differ (w->kmask is what the
 * kernel thread has): the switch tail blocks what the next ULT blocks
 * before it becomes current, and the next ULT, resumed, unblocks what it
 * does not block (wf_after_switch) - so a signal pending for the process
 * that it takes runs its handler in its context, never mid-switch with the
 * wrong ULT current. A ULT that changes its mask installs it at once
 * (wf_kmask_follow). Programs whose ULTs all keep one mask pay two
 * compares per switch; switching between ULTs with different masks costs
 * one or two system calls.
 *
 * Carriers that carry nothing (spares), the monitor (but for its task,
 * below) and the I/O watchdog block every signal. A worker's loop keeps
 * the mask of the last ULT it ran while it looks for work (a system call
 * on every switch to it would cost more than it saves); before it sleeps
 * it takes the mask of what every live ULT blocks (wf_kmask_idle: counts
 * per signal of the live ULTs that block it, kept as masks are set and
 * ULTs come and go - ULTs whose mask is empty cost nothing), so a sleeping
 * worker never takes a signal that no thread would. One that some ULT
 * takes may still arrive in a loop, on no ULT; and one that only a parked
 * ULT takes finds no kernel thread that takes it. With the POSIX layer's
 * sigaction both are the job of the trampoline that runs the program's
 * handlers (sync/procsig.c): it holds the first kind and gives it to a
 * ULT, and the monitor, as its task (wf_monitor_task), leaves unblocked
 * what some live ULT takes, so that it catches the second kind.
 *
 * A ULT that blocks a signal so that every live ULT blocks it makes the
 * workers in their loops take the new mask before its pthread_sigmask
 * returns (wf_kmask_tighten: it wakes them and waits, at most
 * TIGHTEN_WAIT_NS, until each took it or runs a ULT), so that the signal,
 * sent to the process next, stays pending as on glibc instead of ending
 * the process on a worker asleep since before the change. Not done when
 * the last ULT that took a signal exits: a sleeping worker keeps the
 * older mask until it sleeps again.
 *
 * The preemption signal is never blocked while preemption is on (the
 * monitor's signals must arrive), and glibc keeps its own two (SIGCANCEL,
 * SIGSETXID) unblocked whatever the mask. */
_Static_assert(sizeof(unsigned long) == 8, "signals 1-64 fill sigset_t's first word");

/* Install m in the calling kernel thread; returns m. */
static uint64_t kernel_mask(uint64_t m)
{
	unsigned long k = m;
	if (m != WF_KMASK_ALL && wf_rt.preempt_ns > 0)
		k &= ~(1ul << (WF_SIG_PREEMPT - 1));
	sigset_t set;
	sigemptyset(&set);
	memcpy(&set, &k, sizeof k); /* bit s - 1 is signal s */
	WF_SYS(pthread_sigmask)(SIG_SETMASK, &set, NULL);
	return m;
}

static atomic_long blocking[64]; /* per signal: live ULTs that block it */

void wf_kmask_reset(void)
{
	for (int b = 0; b < 64; b++)
		atomic_store_explicit(&blocking[b], 0, memory_order_relaxed);
}

void wf_kmask_account(uint64_t m, long delta)
{
	for (; m; m &= m - 1)
		atomic_fetch_add_explicit(&blocking[__builtin_ctzll(m)], delta,
					  memory_order_relaxed);
}

/* What at least n live ULTs block, not counting the mask less. */
static uint64_t blocked_by(long n, uint64_t less)
{
	uint64_t m = 0;
	for (int b = 0; b < 64 && n > 0; b++)
		if (atomic_load_explicit(&blocking[b], memory_order_relaxed) -
			    (long)((less >> b) & 1) >=
		    n)
			m |= 1ull << b;
	return m;
}

uint64_t wf_kmask_idle(void)
{
	return blocked_by(wf_live() + (wf_rt.root != NULL), 0);
}

uint64_t wf_kmask_idle_but(wf_ult_t *u)
{
	long n = wf_live() + (wf_rt.root != NULL) - 1;
	if (n <= 0)
		return ~0ull; /* u is the last: every other ULT "blocks" everything */
	return blocked_by(n, atomic_load_explicit(&u->sig_mask, memory_order_relaxed));
}

/* Held signals (sync/procsig.c has the protocol). */
_Atomic uint64_t wf_proc_pending;
atomic_int wf_sig_placing;

void wf_proc_repost(wf_ult_t *u)
{
	uint64_t b = atomic_exchange_explicit(&u->sig_placed, 0, memory_order_relaxed);
	if (b) {
		atomic_fetch_or_explicit(&wf_proc_pending, b, memory_order_release);
		wf_monitor_ask();
	}
}

void wf_sig_placing_wait(void)
{
	while (atomic_load_explicit(&wf_sig_placing, memory_order_acquire))
		wf_futex_wait(&wf_sig_placing, 1, NULL);
}

/* How long a mask change waits for the other workers' loops: they take
 * the new mask within microseconds of their wake-up. */
#define TIGHTEN_WAIT_NS 20000000ull

atomic_uint wf_kmask_gen;

void wf_kmask_tighten(uint64_t newly)
{
	if (wf_rt.nworkers < 2 || !(wf_kmask_idle() & newly))
		return;
	unsigned g = atomic_fetch_add_explicit(&wf_kmask_gen, 1, memory_order_seq_cst) + 1;
	wf_worker_t *self = wf_worker_self();
	uint64_t until = wf_now_ns() + TIGHTEN_WAIT_NS;
	for (int i = 0; i < wf_rt.nworkers; i++) {
		wf_worker_t *t = wf_rt.workers[i];
		if (t == self)
			continue;
		wf_wake_worker(t);
		/* Done when its loop took the mask, or it runs a ULT (which
		 * blocks them: every live one does). */
		while ((int)(atomic_load_explicit(&t->kmask_gen, memory_order_acquire) - g) < 0 &&
		       !__atomic_load_n(&t->current, __ATOMIC_RELAXED) && wf_now_ns() < until)
			WF_SYS(sched_yield)();
	}
}

void wf_kmask_install(wf_worker_t *w, uint64_t m)
{
	w->kmask = kernel_mask(m);
}

void wf_kmask_follow(wf_ult_t *self)
{
	wf_worker_t *w = wf_worker_self();
	if (!w || w->current != self)
		return; /* in a section, or no ULT: the kernel thread is not its */
	uint64_t m = atomic_load_explicit(&self->sig_mask, memory_order_relaxed);
	if (m != w->kmask)
		wf_kmask_install(w, m);
}

/* Make c carry w: called on c's kernel thread, which has thread pointer
 * cur_tp installed - c->tp at home; the root's, for the first carrier at
 * start. */
static void carry(wf_carrier_t *c, wf_worker_t *w, void *cur_tp)
{
	__atomic_store_n(&w->carrier, c, __ATOMIC_RELEASE); /* read by the monitor */
	wf_worker_carried(w, c->tp, cur_tp, c->errno_loc, c->self, c->cpu_clk);
	w->kmask = c->kmask;
	unsigned v = atomic_load_explicit(&w->sys, memory_order_relaxed);
	if ((v & SYS_FLAGS) == SYS_TAKEN) {
		/* Its ULT's section goes on on its old carrier (retake). */
		wf_worker_takeover(w);
		/* Release: a sender of preemptions that sees no section sees
		 * the new carrier (wf_preempt_kick). */
		atomic_store_explicit(&w->sys, v & ~SYS_FLAGS, memory_order_release);
	}
	if (wf_rt.pin)
		wf_pin_self(w->id);
}

/* Put c among the spares, unless the runtime stops (returns 0: end).
 * Called by c itself, at home, or by the monitor for one it just made. */
static int spare_push(wf_carrier_t *c)
{
	WF_SYS(pthread_mutex_lock)(&cr.lock);
	int ok = !cr.stopping;
	if (ok) {
		c->next_spare = cr.spares;
		cr.spares = c;
	}
	WF_SYS(pthread_mutex_unlock)(&cr.lock);
	return ok;
}

void wf_carrier_loop_ended(wf_worker_t *w)
{
	wf_carrier_t *c = w->carrier;
	__atomic_store_n(&w->carrier, NULL, __ATOMIC_RELEASE);
	wf_ctx_switch_final(&w->loop_ctx, &c->home, &ended_mark);
}

/* The home loop of carrier c, on its home context: carry what it is given,
 * take back ULTs whose sections outlived their worker, wait as a spare.
 * back: what came back to the home (a ULT, a mark, or NULL: nothing). */
static void home_run(wf_carrier_t *c, void *back)
{
	for (;;) {
		if (back == &adopt_mark) {
			/* The root ULT left this carrier for the first one. */
			carrier_signal(cr.first, CMD_ADOPT);
			return;
		}
		if (back == &ended_mark) {
			/* The loop ended: the runtime stops. The first carrier
			 * waits for the root ULT; the others end. */
			if (!c->first)
				return;
		} else if (back) {
			/* A ULT whose section outlived its hold on the worker. */
			wf_ult_requeue_detached(back);
			/* A spare blocks every signal: the kernel must not pick
			 * it for one sent to the process ("signal masks"). It
			 * had its last ULT's. */
			c->kmask = kernel_mask(WF_KMASK_ALL);
			if (!spare_push(c))
				return;
		}
		int cmd;
		while ((cmd = atomic_load_explicit(&c->cmd, memory_order_acquire)) == CMD_NONE)
			wf_futex_wait(&c->cmd, CMD_NONE, NULL);
		atomic_store_explicit(&c->cmd, CMD_NONE, memory_order_relaxed);
		if (cmd == CMD_EXIT)
			return;
		if (cmd == CMD_ADOPT) {
			/* The root ULT ends on this kernel thread (stop). */
			wf_ult_t *r = c->adopt;
			c->kmask = kernel_mask(atomic_load(&r->sig_mask));
			wf_carrier_home_to_root(r, &c->home, r->tp ? r->tp : c->native_tp);
		}
		wf_worker_t *w = c->give;
		c->give = NULL;
		carry(c, w, c->tp);
		back = wf_ctx_switch(&c->home, &w->loop_ctx, w);
	}
}

/* Entry of the first carrier's home context (mapped stack): the first
 * switch here brings a ULT back, or the root for the end. */
static void home_entry(void *transfer, void *arg)
{
	wf_ctx_entered();
	home_run(arg, transfer);
	wf_panic("the first carrier's home ended while the runtime ran");
}

static void *carrier_main(void *arg)
{
	wf_carrier_t *c = arg;
	c->kmask = kernel_mask(WF_KMASK_ALL);
	c->tp = c->native_tp = wf_tls_current();
	c->errno_loc = &errno;
	c->tid = (pid_t)syscall(SYS_gettid);
	if (WF_SYS(pthread_getcpuclockid)(c->self = WF_SYS(pthread_self)(), &c->cpu_clk))
		c->cpu_clk = 0;
	wf_carrier_tls_init(c->tp);
	c->altstack = wf_stack_altstack_init(&c->old_altstack);
	wf_ctx_init_current(&c->home, c->home_uc);
	home_run(c, NULL);
	wf_stack_altstack_fini(c->altstack, &c->old_altstack);
	wf_ctx_forget(&c->home);
	return NULL;
}

/* A new carrier, on a new kernel thread, told to carry w (NULL: to wait).
 * NULL if the thread cannot be made. Called with cr.lock held. */
static wf_carrier_t *carrier_new(wf_worker_t *w)
{
	wf_carrier_t *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	size_t r = wf_ctx_reserve();
	if (r && !(c->home_uc = calloc(1, r))) {
		free(c);
		return NULL;
	}
	if (w) {
		c->give = w;
		atomic_store_explicit(&c->cmd, CMD_CARRY, memory_order_relaxed);
	}
	/* glibc's default stack: its home needs little, but a small stack
	 * mapped next to a loop's or a ULT's would look to Valgrind like one
	 * stack growing (tests/valgrind). */
	if (wf_sys_thread_create(&c->thread, carrier_main, c)) {
		free(c->home_uc);
		free(c);
		return NULL;
	}
	c->next_all = cr.all;
	__atomic_store_n(&cr.all, c, __ATOMIC_RELEASE); /* read by setxid_handler */
	cr.count++;
	return c;
}

/* ---- sections ----------------------------------------------------------- */

void (*wf_section_hook)(wf_ult_t *u);

/* The ULT whose section the calling kernel thread runs, for its identity
 * (a signal handler's pthread_self inside a blocking call). In the ULT's
 * own thread control block when it has one, else the kernel thread's:
 * either way set and cleared by the ULT itself. */
static __thread wf_ult_t *section_ult;

wf_ult_t *wf_section_self(void)
{
	return section_ult;
}

/* A section's begin found a preemption signal on its way to this kernel
 * thread, k the kick it saw ("Kicks"): take it back, or take it now. */
__attribute__((noinline, cold)) static void kick_settle(wf_worker_t *w, unsigned k)
{
	for (;;) {
		switch (k & KICK_STATE) {
		case KICK_ARMED:
			if (atomic_compare_exchange_strong_explicit(&w->kick, &k, k & ~KICK_STATE,
								    memory_order_acquire,
								    memory_order_acquire))
				return;
			break; /* k is what is there now */
		case KICK_SENT:
			sched_yield(); /* the sender is between its CAS and its tgkill */
			k = atomic_load_explicit(&w->kick, memory_order_acquire);
			break;
		case KICK_DONE:
			syscall(SYS_getppid); /* its return delivers what is pending */
			if (atomic_compare_exchange_strong_explicit(&w->kick, &k, k & ~KICK_STATE,
								    memory_order_acquire,
								    memory_order_acquire))
				return;
			break;
		default:
			return;
		}
	}
}

wf_ult_t *wf_section_begin(void)
{
	wf_worker_t *w = wf_worker_self();
	if (!w || wf_rt.syscall_ns <= 0)
		return NULL;
	wf_ult_t *u = w->current;
	if (!u)
		return NULL; /* the loop */
	unsigned v = ++w->sys_next << 2 | SYS_IN;
	u->sys_c = w->carrier;
	u->sys_v = v;
	__atomic_store_n(&u->sys_w, w, __ATOMIC_SEQ_CST); /* wf_section_in */
	wf_tls_worker = NULL;
	section_ult = u;
	atomic_store_explicit(&w->sys, v, memory_order_release);
	/* Against the monitor going idle and a preemption's sender, both of
	 * which pay wf_fence_heavy. */
	wf_fence_light();
	if (unlikely(atomic_load_explicit(&wf_monitor_idle, memory_order_relaxed)) &&
	    atomic_exchange_explicit(&wf_monitor_idle, 0, memory_order_relaxed))
		wf_futex_wake(&wf_monitor_idle, 1);
	unsigned k = atomic_load_explicit(&w->kick, memory_order_acquire);
	if (unlikely(k & KICK_STATE))
		kick_settle(w, k);
	/* A signal sent to u by a sender that did not see the section yet
	 * (sync/signal.c, wf_sig_send: its seq_cst pair is the store of
	 * sys_w above and this load) asked the worker to interrupt u, and
	 * the kick may have been taken back: it goes to this kernel thread
	 * now, as one sent during the section would. */
	if (unlikely(atomic_load_explicit(&u->sig_pending, memory_order_seq_cst)) &&
	    wf_section_hook)
		wf_section_hook(u);
	return u;
}

void wf_section_end(wf_ult_t *u)
{
	if (!u)
		return;
	wf_worker_t *w = u->sys_w;
	unsigned v = u->sys_v;
	section_ult = NULL;
	__atomic_store_n(&u->sys_w, NULL, __ATOMIC_RELAXED);
	if (likely(atomic_compare_exchange_strong_explicit(
		    &w->sys, &v, v & ~SYS_FLAGS, memory_order_acq_rel, memory_order_acquire))) {
		wf_tls_worker = w;
		return;
	}
	/* The monitor gave w to another carrier (w->sys is TAKEN, or already
	 * the new carrier's): this kernel thread owns no worker. Back to a
	 * queue; this carrier becomes a spare. */
	wf_carrier_t *c = u->sys_c;
	wf_switch_home(u, &c->home, c->tp);
}

int wf_section_in(wf_ult_t *u)
{
	return __atomic_load_n(&u->sys_w, __ATOMIC_SEQ_CST) != NULL;
}

void wf_section_kill(wf_ult_t *u, int sig)
{
	/* Its carrier runs until the runtime stops, so the thread is valid
	 * even if the section has ended since: then the signal goes to
	 * whatever that kernel thread runs now (a narrow race). */
	wf_carrier_t *c = u->sys_c;
	/* By kernel thread id: glibc's pthread_kill of the first carrier's
	 * thread would name the thread control block the root ULT keeps, and
	 * from the root, wherever it runs, signal the caller itself. */
	syscall(SYS_tgkill, getpid(), c->tid, sig);
}

weft_syscall_t weft_syscall_begin(void)
{
	return (weft_syscall_t)wf_section_begin();
}

void weft_syscall_end(weft_syscall_t s)
{
	wf_section_end((wf_ult_t *)s);
}

/* ---- glibc's set*id broadcast -------------------------------------------- */

/* Linux keeps credentials per kernel thread, so glibc's setuid and its kin
 * (seteuid, setgid, setgroups, ...) change them on every thread: they
 * mark each thread in its descriptor, send it SIGSETXID, and wait until its
 * handler has made the call and cleared the mark - in THREAD_SELF, the
 * descriptor the thread pointer names. On a carrier that runs a ULT with a
 * block of its own, a worker's loop on the block weft made for it, or the
 * root ULT away from its kernel thread, that is the wrong descriptor: the
 * mark stays, and glibc signals the thread again, for good. So weft puts
 * its handler in front of glibc's: it finds the carrier of the calling
 * kernel thread (by its id) and installs that thread's glibc descriptor
 * (c->self; in a fork's child, the block glibc's fork kept for it) while
 * glibc's handler runs. Threads that are not carriers (the monitor, the
 * program's own) always run on their own block: glibc's handler is called
 * as it is. Installed once carriers exist (glibc installs its handler when
 * the first thread is made), only where blocks are used (wf_tls_probe);
 * a set*id made while the runtime stops may find a carrier being freed.
 *
 * The caller has the same problem from the other side: glibc makes the
 * call itself and skips the thread whose descriptor is THREAD_SELF - the
 * root ULT on another worker's carrier would skip the kernel thread that
 * started the runtime, whose descriptor it keeps. libweft-pthread.so's
 * set*id wrappers therefore make glibc's call inside a section (nothing
 * moves the ULT off its kernel thread) with that kernel thread's
 * descriptor installed (wf_setxid_begin/end). */
#define SIGSETXID_NR 33 /* glibc's __SIGRTMIN + 1 */

struct k_sigaction { /* the kernel's, for rt_sigaction */
	void (*handler)(int, siginfo_t *, void *);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

static void (*glibc_setxid)(int, siginfo_t *, void *);

/* The thread pointer of the calling kernel thread's glibc descriptor if
 * it is a carrier, else NULL. Async-signal-safe. */
static void *own_descriptor(void)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);
	for (wf_carrier_t *c = __atomic_load_n(&cr.all, __ATOMIC_ACQUIRE); c; c = c->next_all)
		if (__atomic_load_n(&c->tid, __ATOMIC_RELAXED) == tid)
			return wf_tls_of_thread(c->self);
	return NULL;
}

static void setxid_handler(int sig, siginfo_t *si, void *uc)
{
	void *own = own_descriptor(), *cur = wf_tls_current();
	if (own && own != cur)
		wf_tls_install(own);
	glibc_setxid(sig, si, uc);
	if (own && own != cur)
		wf_tls_install(cur);
}

void *wf_setxid_begin(void)
{
	void *own = glibc_setxid ? own_descriptor() : NULL, *cur = wf_tls_current();
	if (!own || own == cur)
		return NULL;
	wf_tls_install(own);
	return cur;
}

void wf_setxid_end(void *saved)
{
	if (saved)
		wf_tls_install(saved);
}

static void setxid_wrap(void)
{
	struct k_sigaction old, act;
	if (wf_tls_probe(NULL) != 0 ||
	    syscall(SYS_rt_sigaction, SIGSETXID_NR, NULL, &old, sizeof(uint64_t)) != 0 ||
	    old.handler == setxid_handler || !(old.flags & SA_SIGINFO) ||
	    (uintptr_t)old.handler <= (uintptr_t)SIG_IGN)
		return; /* no blocks, wrapped already, or glibc installed none */
	glibc_setxid = old.handler;
	act = old;
	act.handler = setxid_handler;
	syscall(SYS_rt_sigaction, SIGSETXID_NR, &act, NULL, sizeof(uint64_t));
}

/* ---- the monitor -------------------------------------------------------- */

/* Give w, whose section has value v, to a spare. Called by the monitor.
 * all_stuck: every worker has been in the same section for STUCK_NS at
 * least - then a spare is made even past the bound (unless hand-overs are
 * off): nothing else would run the ready ULTs, and the blocked ones may be
 * waiting for one of them (threads of one process waiting on a
 * process-shared lock that one of their own holds), which glibc, with a
 * kernel thread per thread, runs. Not for sections that merely overlap: a
 * burst of short calls (10,000 connects) would otherwise grow a kernel
 * thread per sweep. */
#define STUCK_NS 2000000ull
static void retake(wf_worker_t *w, unsigned v, int all_stuck)
{
	WF_SYS(pthread_mutex_lock)(&cr.lock);
	wf_carrier_t *c = cr.spares;
	if (c)
		cr.spares = c->next_spare;
	else if ((cr.extra < wf_rt.spares || (all_stuck && wf_rt.spares > 0)) &&
		 (c = carrier_new(NULL)))
		cr.extra++;
	WF_SYS(pthread_mutex_unlock)(&cr.lock);
	if (!c)
		return; /* at the bound, or no thread: w stays blocked */
	if (!atomic_compare_exchange_strong_explicit(&w->sys, &v, (v & ~SYS_FLAGS) | SYS_TAKEN,
						     memory_order_acq_rel, memory_order_relaxed)) {
		spare_push(c); /* the section ended meanwhile */
		return;
	}
	atomic_fetch_add_explicit(&w->n_handovers, 1, memory_order_relaxed);
	c->give = w;
	carrier_signal(c, CMD_CARRY);
}

void wf_preempt_kick(wf_worker_t *w)
{
	/* Settled with the sections' begins ("Kicks"). */
	unsigned k = atomic_load_explicit(&w->kick, memory_order_relaxed);
	if ((k & KICK_STATE) == KICK_ARMED || (k & KICK_STATE) == KICK_SENT)
		return; /* under way: its signal serves this kick too */
	unsigned gen = (k & ~KICK_STATE) + KICK_GEN, armed = gen | KICK_ARMED;
	if (!atomic_compare_exchange_strong_explicit(&w->kick, &k, armed, memory_order_relaxed,
						     memory_order_relaxed))
		return; /* another sender came first */
	wf_fence_heavy();
	/* In a section, or handed over (TAKEN) and not yet carried: then w's
	 * carrier is still the kernel thread in the section's call. */
	if (atomic_load_explicit(&w->sys, memory_order_acquire) & SYS_FLAGS) {
		atomic_compare_exchange_strong_explicit(&w->kick, &armed, gen | KICK_IDLE,
							memory_order_relaxed, memory_order_relaxed);
		return;
	}
	if (!atomic_compare_exchange_strong_explicit(&w->kick, &armed, gen | KICK_SENT,
						     memory_order_relaxed, memory_order_relaxed))
		return; /* a section's begin took it back */
	/* Carriers live until the runtime stops: if w moved to another one
	 * meanwhile, the signal finds a kernel thread that runs none of w's
	 * ULTs, and the handler does nothing. */
	wf_carrier_t *c = __atomic_load_n(&w->carrier, __ATOMIC_ACQUIRE);
	if (c)
		syscall(SYS_tgkill, getpid(), c->tid, WF_SIG_PREEMPT);
	atomic_store_explicit(&w->kick, gen | KICK_DONE, memory_order_release);
}

/* What a sweep saw: a section open, a worker running a ULT, one that has
 * made no decision since the last sweep. */
enum { SAW_SECTION = 1, SAW_RUNNING = 2, SAW_STUCK = 4 };

/* What kernel thread tid does, read from /proc:
 *   KT_UNKNOWN  /proc does not speak this program's system call numbers
 *               (proc_speaks_ours);
 *   KT_RUNNING  it runs in user space (or /proc says nothing better);
 *   KT_FUTEX    it waits in a futex with no timeout - the one wait a signal
 *               interrupts invisibly: with SA_RESTART the kernel makes it
 *               again when the handler returns;
 *   KT_CALL     it is in any other system call. A poll, a nanosleep, a
 *               sigsuspend, a timed wait would fail with EINTR, which a
 *               program that sent itself no signal need not expect - so
 *               it is not preempted there. */
enum { KT_UNKNOWN, KT_RUNNING, KT_FUTEX, KT_CALL };

static long proc_syscall_nr(pid_t tid)
{
	char path[64], buf[256];
	snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
	long nr;
	if (wf_read_proc(path, buf, sizeof buf) < 0 || sscanf(buf, "%ld", &nr) != 1)
		return -1; /* "running", or no answer */
	return nr;
}

static atomic_int probe_word;
static atomic_int probe_tid;

static void *probe_main(void *arg)
{
	(void)arg;
	atomic_store(&probe_tid, (int)syscall(SYS_gettid));
	while (!atomic_load(&probe_word))
		syscall(SYS_futex, &probe_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	return NULL;
}

/* Does /proc report this program's system call numbers? Not under an
 * emulator: qemu-user runs an aarch64 program on an x86-64 kernel, whose
 * own numbers /proc gives. Learned once, when first needed, from a thread
 * made to wait in a futex (well under a millisecond as a rule; the look
 * gives up after 1,000 tries). Where it does not, the
 * monitor goes back to signalling a ULT blocked in the kernel for a slice
 * of wall time, whatever the call (futex_waiting). */
static int proc_speaks_ours(void)
{
	static int known = -1; /* the monitor's alone */
	if (known >= 0)
		return known;
	known = 0;
	atomic_store(&probe_word, 0);
	atomic_store(&probe_tid, 0);
	pthread_t t;
	if (wf_sys_thread_create(&t, probe_main, NULL) != 0)
		return known;
	for (int tries = 0; tries < 1000; tries++) {
		int tid = atomic_load(&probe_tid);
		long nr = tid ? proc_syscall_nr(tid) : -1;
		if (nr >= 0) {
			known = nr == SYS_futex;
			break;
		}
		struct timespec ts = {0, 1000};
		WF_SYS(nanosleep)(&ts, NULL);
	}
	atomic_store(&probe_word, 1);
	syscall(SYS_futex, &probe_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	WF_SYS(pthread_join)(t, NULL);
	return known;
}

static int kernel_state(pid_t tid)
{
	if (!proc_speaks_ours())
		return KT_UNKNOWN;
	char path[64], buf[256];
	snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
	if (wf_read_proc(path, buf, sizeof buf) < 0)
		return KT_RUNNING;
	/* "nr arg1 arg2 arg3 arg4 ...", "running", or "-1 sp pc" (blocked
	 * outside a system call: a page fault). */
	unsigned long nr, a1, op, a3, timeout;
	if (sscanf(buf, "%lu %lx %lx %lx %lx", &nr, &a1, &op, &a3, &timeout) != 5)
		return KT_RUNNING;
	op &= 0x7f; /* FUTEX_CMD_MASK: without PRIVATE and CLOCK_REALTIME */
	return nr == SYS_futex && (op == 0 /* FUTEX_WAIT */ || op == 9 /* FUTEX_WAIT_BITSET */) &&
			       timeout == 0
		       ? KT_FUTEX
		       : KT_CALL;
}

/* Worker i's kernel thread used no CPU since the last sweep: does it wait
 * in a plain futex? Asked of /proc at once, then - while the answer stays
 * no in the same run - after 2, 4, ... up to PROBE_GAP_MAX sweeps: a ULT
 * that sleeps in another system call (a nanosleep weft does not see) cost
 * a /proc read every sweep, 3% of a core for an idle process. Where /proc
 * cannot say (KT_UNKNOWN: an emulator), yes once the run has lasted a
 * slice of wall time. */
#define PROBE_GAP_MAX 32
static int futex_waiting(int i, pid_t tid, uint64_t now)
{
	if (cr.probe_in[i]) {
		cr.probe_in[i]--;
		return 0;
	}
	int k = kernel_state(tid);
	if (k == KT_FUTEX)
		return 1;
	if (k == KT_UNKNOWN)
		return now - cr.run_ns[i] >= (uint64_t)wf_rt.preempt_ns;
	unsigned gap = cr.probe_gap[i];
	cr.probe_gap[i] = gap == 0 ? 1 : gap < PROBE_GAP_MAX ? gap * 2 : PROBE_GAP_MAX;
	cr.probe_in[i] = cr.probe_gap[i];
	return 0;
}

/* Has worker i's run, made of no scheduling decision, computed a slice?
 * Its carrier's CPU time since the run began or was last signalled (cpu:
 * now) - time blocked in the kernel is no slice - or, where the CPU clock
 * cannot be read, the wall time. */
static int ran_a_slice(int i, uint64_t now, uint64_t cpu)
{
	if (cpu)
		return cpu - cr.run_cpu0[i] >= (uint64_t)wf_rt.preempt_ns;
	return now - cr.run_ns[i] >= (uint64_t)wf_rt.preempt_ns;
}

/* Worker i runs a ULT (current, not asleep, not in a section): signal it if
 * it has computed a slice without a scheduling decision. */
static int watch_run(int i, wf_worker_t *w, uint64_t now)
{
	unsigned long n = atomic_load_explicit(&w->n_switches, memory_order_relaxed);
	wf_ult_t *u = __atomic_load_n(&w->current, __ATOMIC_RELAXED);
	wf_carrier_t *c = __atomic_load_n(&w->carrier, __ATOMIC_ACQUIRE);
	struct timespec ts;
	uint64_t cpu = c && clock_gettime(c->cpu_clk, &ts) == 0
			       ? (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec
			       : 0;
	int stuck = n == cr.run_n[i] && u == cr.run_u[i];
	int blocked = cpu && cpu == cr.run_cpu[i]; /* in the kernel since the last sweep */
	if (!stuck) {
		cr.run_n[i] = n;
		cr.run_u[i] = u;
		cr.run_ns[i] = now;
		cr.run_cpu0[i] = cpu;
		cr.probe_in[i] = cr.probe_gap[i] = 0;
	} else if (blocked ? futex_waiting(i, c->tid, now)
			   : ran_a_slice(i, now, cpu) && (!c || kernel_state(c->tid) != KT_CALL)) {
		/* A slice computed without a decision - or a ULT that has not
		 * run at all since the last sweep because its kernel thread
		 * waits in a futex of its own (OpenMP's), holding the worker.
		 * Either way it gives way - unless it entered a section
		 * meanwhile, whose call the signal would interrupt (looked at
		 * here, and settled in wf_preempt_kick: "Kicks"). Not one
		 * in any other system call outside a section (a nanosleep, a
		 * poll, a read made with the C library's own names, or by a
		 * program on weft's own API): the handler could not move it
		 * there (the C library: preempt.c), and the call would fail
		 * with EINTR - a sleep(1) would return after a slice. One
		 * /proc read per slice that ends so. */
		cr.run_ns[i] = now; /* the next signal after another slice */
		cr.run_cpu0[i] = cpu;
		atomic_store_explicit(&w->preempt_n, n, memory_order_relaxed);
		if ((atomic_load_explicit(&w->sys, memory_order_seq_cst) & SYS_FLAGS) == SYS_NONE &&
		    __atomic_load_n(&w->current, __ATOMIC_SEQ_CST) == u)
			wf_preempt_kick(w);
	}
	cr.run_cpu[i] = cpu;
	/* A signal sent to the running ULT waits for it to be at a safe
	 * instruction (sync/signal.c, preempt.c): one that computes mostly
	 * inside weft or the C library (a lock and unlock loop) is asked
	 * again, at the fast pace, until it takes it. Only the pointer is
	 * compared: a descriptor may be gone (it lives in its stack). */
	if (u && atomic_load_explicit(&w->sig_kick, memory_order_relaxed) == u) {
		if ((atomic_load_explicit(&w->sys, memory_order_seq_cst) & SYS_FLAGS) == SYS_NONE &&
		    __atomic_load_n(&w->current, __ATOMIC_SEQ_CST) == u)
			wf_preempt_kick(w);
		return 1;
	}
	/* Stuck, but in a system call that is no futex wait: the monitor's
	 * fast pace would only ask /proc again (futex_waiting backs off). */
	return stuck && !(blocked && cr.probe_gap[i]);
}

/* Look at every worker: retake those whose section is the one seen at
 * least syscall_ns ago, preempt those running one ULT for a slice.
 * Returns SAW_* of what it saw. */
static int sweep(void)
{
	uint64_t now = wf_now_ns();
	int open = 0, all_stuck = 1;
	for (int i = 0; i < wf_rt.nworkers && all_stuck; i++) {
		unsigned v = atomic_load_explicit(&wf_rt.workers[i]->sys, memory_order_relaxed);
		all_stuck = (v & SYS_FLAGS) == SYS_IN && v == cr.seen_v[i] &&
			    now - cr.seen_ns[i] >= STUCK_NS;
	}
	for (int i = 0; i < wf_rt.nworkers; i++) {
		wf_worker_t *w = wf_rt.workers[i];
		unsigned v = atomic_load_explicit(&w->sys, memory_order_relaxed);
		if ((v & SYS_FLAGS) != SYS_IN) {
			if (wf_rt.preempt_ns > 0 &&
			    __atomic_load_n(&w->current, __ATOMIC_RELAXED) &&
			    atomic_load_explicit(&w->sleep_state, memory_order_relaxed) !=
				    WF_SLEEPING) {
				open |= SAW_RUNNING;
				if (watch_run(i, w, now))
					open |= SAW_STUCK;
			}
			continue;
		}
		open |= SAW_SECTION;
		cr.run_u[i] = NULL; /* a run watched afresh after the section */
		if (v != cr.seen_v[i]) {
			cr.seen_v[i] = v;
			cr.seen_ns[i] = now;
		} else if (now - cr.seen_ns[i] >= (uint64_t)wf_rt.syscall_ns) {
			retake(w, v, all_stuck);
		}
	}
	return open;
}

static void *monitor_main(void *arg)
{
	(void)arg;
	sigset_t all;
	sigfillset(&all);
	WF_SYS(pthread_sigmask)(SIG_BLOCK, &all, NULL);
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* its sleeps are short */
	/* How long to sleep after a sweep that saw a section open, or (and
	 * none) a ULT running: half the threshold it watches for. */
	uint64_t base = wf_rt.syscall_ns > 0 ? (uint64_t)wf_rt.syscall_ns / 2 : MONITOR_MAX_NS;
	if (base < 1000)
		base = 1000;
	/* While ULTs run: every half slice while each worker makes decisions;
	 * every STUCK_POLL_NS for STUCK_KEEP_NS after one made none since the
	 * last look (soon enough for one whose kernel thread waits in the
	 * kernel, as OpenMP's threads do again and again). */
	uint64_t run_base = (uint64_t)wf_rt.preempt_ns / 2;
	uint64_t stuck_base = run_base < STUCK_POLL_NS ? run_base : STUCK_POLL_NS;
	uint64_t stuck_until = 0; /* the fast pace lasts STUCK_KEEP_NS after a stuck worker */
	uint64_t delay = base;    /* idle only after the fenced look below */
	while (!atomic_load_explicit(&cr.monitor_word, memory_order_acquire)) {
		struct timespec rel = {(time_t)(delay / 1000000000u), (long)(delay % 1000000000u)};
		if (delay)
			wf_futex_wait(&cr.monitor_word, 0, &rel);
		else /* idle: until a begin, a loop starting a ULT (or stop) clears the flag */
			wf_futex_wait(&wf_monitor_idle, 1, NULL);
		monitor_task();
		int saw = sweep();
		if (!saw && delay && delay < MONITOR_MAX_NS) {
			delay *= 2;
			continue;
		}
		if (!saw) {
			/* Idle: announce it, then look once more (the heavy side
			 * of begin's and the loop's fence); a begin or a loop
			 * starting a ULT after that wakes us. */
			atomic_store_explicit(&wf_monitor_idle, 1, memory_order_relaxed);
			wf_fence_heavy();
			if (!(saw = sweep()) &&
			    !atomic_load_explicit(&monitor_asked, memory_order_seq_cst)) {
				delay = 0;
				continue;
			}
		}
		uint64_t now = wf_now_ns();
		if (saw & SAW_STUCK)
			stuck_until = now + STUCK_KEEP_NS;
		delay = saw & SAW_SECTION ? base : now < stuck_until ? stuck_base : run_base;
		atomic_store_explicit(&wf_monitor_idle, 0, memory_order_relaxed);
	}
	return NULL;
}

/* ---- start and stop ----------------------------------------------------- */

int wf_carriers_start(void)
{
	int n = wf_rt.nworkers;
	sigset_t starter;
	WF_SYS(pthread_sigmask)(SIG_SETMASK, NULL, &starter);
	cr.mask = 0;
	for (int s = 1; s <= 64; s++)
		if (sigismember(&starter, s) == 1)
			cr.mask |= 1ull << (s - 1);
	cr.all = cr.spares = cr.first = NULL;
	cr.count = cr.extra = 0;
	cr.stopping = 0;
	cr.monitor_running = 0;
	atomic_store(&cr.monitor_word, 0);
	atomic_store(&wf_monitor_idle, 0);
	cr.seen_ns = calloc((size_t)n, sizeof *cr.seen_ns);
	cr.seen_v = calloc((size_t)n, sizeof *cr.seen_v);
	cr.run_n = calloc((size_t)n, sizeof *cr.run_n);
	cr.run_u = calloc((size_t)n, sizeof *cr.run_u);
	cr.run_ns = calloc((size_t)n, sizeof *cr.run_ns);
	cr.run_cpu0 = calloc((size_t)n, sizeof *cr.run_cpu0);
	cr.run_cpu = calloc((size_t)n, sizeof *cr.run_cpu);
	cr.probe_in = calloc((size_t)n, sizeof *cr.probe_in);
	cr.probe_gap = calloc((size_t)n, sizeof *cr.probe_gap);
	if (!cr.seen_ns || !cr.seen_v || !cr.run_n || !cr.run_u || !cr.run_ns || !cr.run_cpu0 ||
	    !cr.run_cpu || !cr.probe_in || !cr.probe_gap)
		goto fail;

	int first = 0; /* the first worker a new kernel thread carries */
	if (wf_rt.root) {
		/* The calling kernel thread carries worker 0, and its caller, the
		 * root ULT, runs on it. */
		wf_carrier_t *c = calloc(1, sizeof *c);
		if (!c)
			goto fail;
		cr.first = c;
		c->first = 1;
		c->next_all = cr.all;
		__atomic_store_n(&cr.all, c, __ATOMIC_RELEASE);
		c->thread = c->self = WF_SYS(pthread_self)();
		c->tid = (pid_t)syscall(SYS_gettid);
		if (WF_SYS(pthread_getcpuclockid)(c->thread, &c->cpu_clk))
			c->cpu_clk = 0;
		c->native_tp = wf_tls_current();
		/* The root keeps this thread's block when the runtime made one
		 * for worker 0 (sched.c, "Thread pointers"). */
		c->tp = wf_rt.w0_tp ? wf_rt.w0_tp : c->native_tp;
		c->errno_loc = wf_rt.w0_tp ? wf_tls_errno_in(c->tp) : &errno;
		size_t r = wf_ctx_reserve();
		if (r && !(c->home_uc = calloc(1, r)))
			goto fail;
		c->home_stack = mmap(NULL, HOME_STACK_SIZE, PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
		if (c->home_stack == MAP_FAILED) {
			c->home_stack = NULL;
			goto fail;
		}
		wf_ctx_make(&c->home, c->home_stack, HOME_STACK_SIZE, c->home_uc, home_entry, c);
		wf_ctx_set_name(&c->home, "weft first carrier's home");
		wf_carrier_tls_init(c->tp);
		if (c->tp != c->native_tp)
			wf_carrier_tls_init(c->native_tp);
		wf_save_root_affinity();
		c->kmask = cr.mask; /* the root's too (wf_sig_take_foreign) */
		wf_worker_t *w0 = wf_rt.workers[0];
		carry(c, w0, c->native_tp);
		if (wf_rt.w0_tp)
			wf_rt.root->tp = c->native_tp;
		w0->current = wf_rt.root;
		wf_rt.root->last_worker = 0;
		c->altstack = wf_stack_altstack_init(&c->old_altstack);
		first = 1;
	}
	WF_SYS(pthread_mutex_lock)(&cr.lock);
	int e = 0;
	for (int i = first; i < n && !e; i++)
		if (!carrier_new(wf_rt.workers[i]))
			e = EAGAIN;
	WF_SYS(pthread_mutex_unlock)(&cr.lock);
	if (!e && (wf_rt.syscall_ns > 0 || wf_rt.preempt_ns > 0)) {
		atomic_store_explicit(&monitor_up, 1, memory_order_release);
		e = wf_sys_thread_create(&cr.monitor, monitor_main, NULL);
		cr.monitor_running = e == 0;
		atomic_store_explicit(&monitor_up, e == 0, memory_order_release);
	}
	if (e) {
		atomic_store(&wf_rt.state, WF_RT_STOPPING);
		wf_carriers_stop();
		wf_carriers_free();
		return e == EAGAIN ? EAGAIN : ENOMEM;
	}
	setxid_wrap();
	return 0;

fail:
	wf_carriers_free();
	return ENOMEM;
}

void wf_carriers_stop(void)
{
	wf_wake_all();
	wf_carrier_t *f = cr.first;
	if (f && wf_rt.root) {
		/* The caller is the root ULT (on some worker): end it on the
		 * first carrier, on no worker. */
		wf_worker_t *w = wf_worker_self();
		if (w->carrier == f) {
			wf_worker_root_leaves(w);
		} else {
			f->adopt = wf_rt.root;
			wf_carrier_t *c = w->carrier;
			wf_worker_root_leaves(w);
			wf_root_to_home(wf_rt.root, &c->home, &adopt_mark, c->tp);
		}
		wf_carrier_tls_init(f->tp); /* no worker any longer */
		wf_carrier_tls_init(f->native_tp);
	}
	if (cr.monitor_running) {
		atomic_store_explicit(&monitor_up, 0, memory_order_release);
		atomic_store_explicit(&cr.monitor_word, 1, memory_order_release);
		atomic_store_explicit(&wf_monitor_idle, 0, memory_order_release);
		wf_futex_wake(&cr.monitor_word, 1);
		wf_futex_wake(&wf_monitor_idle, 1);
		WF_SYS(pthread_join)(cr.monitor, NULL);
		cr.monitor_running = 0;
	}
	WF_SYS(pthread_mutex_lock)(&cr.lock);
	cr.stopping = 1;
	for (wf_carrier_t *c = cr.spares; c; c = c->next_spare)
		if (c != f)
			carrier_signal(c, CMD_EXIT);
	cr.spares = NULL;
	WF_SYS(pthread_mutex_unlock)(&cr.lock);
	wf_wake_all();
	for (wf_carrier_t *c = cr.all; c; c = c->next_all)
		if (!c->first && !c->joined) {
			WF_SYS(pthread_join)(c->thread, NULL);
			c->joined = 1;
		}
	if (f && wf_rt.root) {
		wf_stack_altstack_fini(f->altstack, &f->old_altstack);
		f->altstack = NULL;
		wf_restore_root_affinity();
	}
}

void wf_carriers_free(void)
{
	while (cr.all) {
		wf_carrier_t *c = cr.all;
		cr.all = c->next_all;
		wf_ctx_forget(&c->home);
		if (c->home_stack) {
#if WF_ASAN
			__asan_unpoison_memory_region(c->home_stack, HOME_STACK_SIZE);
#endif
			munmap(c->home_stack, HOME_STACK_SIZE);
		}
		free(c->home_uc);
		free(c);
	}
	cr.first = cr.spares = NULL;
	cr.count = 0;
	free(cr.seen_ns);
	free(cr.seen_v);
	free(cr.run_n);
	free(cr.run_u);
	free(cr.run_ns);
	free(cr.run_cpu0);
	free(cr.run_cpu);
	cr.run_cpu0 = cr.run_cpu = NULL;
	free(cr.probe_in);
	free(cr.probe_gap);
	cr.probe_in = cr.probe_gap = NULL;
	cr.seen_ns = NULL;
	cr.seen_v = NULL;
	cr.run_n = NULL;
	cr.run_u = NULL;
	cr.run_ns = NULL;
}

void wf_forked_child(void)
{
	/* The forking context is no worker's ULT in the child (init.c). */
	wf_tls_worker = NULL;
	wf_rt.syscall_ns = -1;
	wf_rt.preempt_ns = 0; /* no monitor here; the handler finds no worker */
	atomic_store_explicit(&monitor_up, 0, memory_order_relaxed);
}

/* ---- fork ---------------------------------------------------------------- */

void wf_carriers_fork(int phase)
{
	if (phase == WF_FORK_PREPARE)
		WF_SYS(pthread_mutex_lock)(&cr.lock);
	else if (phase == WF_FORK_PARENT)
		WF_SYS(pthread_mutex_unlock)(&cr.lock);
}

/* In the child (runtime/fork.c): the calling kernel thread, which carried
 * `kept`, is the only one left and becomes the first carrier; the other
 * carriers and the monitor are gone with their threads (their records are
 * freed, their stacks were glibc's). Signals held or being given out were
 * the parent's. New carriers for the other workers and a new monitor are
 * made by wf_carriers_restart, once every other part of the runtime is
 * reset. tp: the thread control block glibc's fork saw as the caller's. */
void wf_carriers_forked(wf_worker_t *kept, void *tp)
{
	static const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
	memcpy(&cr.lock, &fresh, sizeof fresh);
	wf_carrier_t *k = kept->carrier;
	while (cr.all) {
		wf_carrier_t *c = cr.all;
		cr.all = c->next_all;
		if (c == k)
			continue;
		wf_ctx_forget(&c->home);
		if (c->home_stack)
			munmap(c->home_stack, HOME_STACK_SIZE);
		free(c->home_uc);
		free(c); /* its signal stack is left mapped: a few pages */
	}
	cr.all = cr.first = k;
	k->next_all = k->next_spare = NULL;
	k->first = 1;
	k->joined = 0;
	cr.spares = NULL;
	cr.count = cr.extra = 0;
	cr.stopping = 0;
	/* Who this kernel thread is now: its id, and the block glibc took for
	 * it (which the kernel gave the new id; runtime/fork.c). */
	k->tid = (pid_t)syscall(SYS_gettid);
	k->thread = k->self = wf_tls_thread_of(tp);
	if (WF_SYS(pthread_getcpuclockid)(k->self, &k->cpu_clk))
		k->cpu_clk = 0;
	wf_worker_carried(kept, k->tp, kept->cur_tp, k->errno_loc, k->self, k->cpu_clk);
	int n = wf_rt.nworkers;
	memset(cr.seen_ns, 0, (size_t)n * sizeof *cr.seen_ns);
	memset(cr.seen_v, 0, (size_t)n * sizeof *cr.seen_v);
	memset(cr.run_n, 0, (size_t)n * sizeof *cr.run_n);
	memset(cr.run_u, 0, (size_t)n * sizeof *cr.run_u);
	memset(cr.run_ns, 0, (size_t)n * sizeof *cr.run_ns);
	memset(cr.run_cpu, 0, (size_t)n * sizeof *cr.run_cpu);
	atomic_store(&cr.monitor_word, 0);
	atomic_store(&wf_monitor_idle, 0);
	atomic_store(&monitor_asked, 0);
	atomic_store(&monitor_up, 0);
	atomic_store(&wf_proc_pending, 0);
	atomic_store(&wf_sig_placing, 0);
	/* Only the forking ULT is alive; it blocks what it blocked. */
	wf_kmask_reset();
	wf_kmask_account(atomic_load_explicit(&kept->current->sig_mask, memory_order_relaxed), 1);
}

int wf_carriers_restart(wf_worker_t *kept)
{
	int e = 0;
	WF_SYS(pthread_mutex_lock)(&cr.lock);
	for (int i = 0; i < wf_rt.nworkers && !e; i++)
		if (wf_rt.workers[i] != kept && !carrier_new(wf_rt.workers[i]))
			e = EAGAIN;
	WF_SYS(pthread_mutex_unlock)(&cr.lock);
	if (cr.monitor_running) {
		atomic_store_explicit(&monitor_up, 1, memory_order_release);
		cr.monitor_running = !wf_sys_thread_create(&cr.monitor, monitor_main, NULL);
		atomic_store_explicit(&monitor_up, cr.monitor_running, memory_order_release);
		if (!cr.monitor_running)
			e = EAGAIN;
	}
	return e;
}
