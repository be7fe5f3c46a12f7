/* The ULT descriptor, its states, and the parker every blocking operation
 * uses.
 *
 * A ULT's descriptor lives at the top of its own stack mapping (one mmap per
 * ULT, or a slot in a slab; see src/stack/stack.c), so creating a ULT is one
 * allocation, usually served from a per-worker cache without a system call.
 * The descriptor ends with the stack layer's record of that mapping
 * (wf_ult.stack); every other field is set by ult_init (ult.c).
 *
 * States, who moves a ULT into and out of each, and who owns it there
 * (the protocols are at the top of sched.c, park.c and join.c):
 *
 *   NEW       being made by wf_ult_spawn, not yet queued. Owned by its
 *             creator, which sets its attributes and then queues it.
 *   RUNNING   on exactly one worker (w->current). Owned by that worker; only
 *             the ULT itself moves out of it (yield, park, join, exit), by
 *             switching away with an after-switch action.
 *   RUNNABLE  in exactly one run queue. Owned by the queue; the worker that
 *             dequeues it moves it to RUNNING (the switch tail, sched.c).
 *   PARKED    in no queue. Moved in by the after-switch commit of PARK (the
 *             parker's state EMPTY -> PARKED) or JOIN (registered in its
 *             target's joiner word). Owned by exactly one waker:
 *               - parked on its own parker or a waiter's (src/sync/wait.c):
 *                 whoever wins the CAS PARKED -> EMPTY in wf_unpark (a
 *                 waker, a timer, a canceller - only the party that
 *                 dequeued the waiter unparks it);
 *               - blocked in a join: whoever takes it out of the target's
 *                 joiner word by CAS (the target's exit, a canceller, the
 *                 JOIN commit's own cycle or cancel check).
 *             That waker moves it to RUNNABLE (wf_make_runnable), or runs it
 *             in its own place (wf_park_to, the exit hand-off).
 *   EXITED    its function returned; nobody runs on its stack any more.
 *             Owned by its joiner (the party that moved the joiner word to
 *             CLAIMED), which frees it; a detached one is freed at once.
 *
 * While RUNNABLE, PARKED or EXITED, nobody runs on the ULT's stack, so its
 * saved context (ctx) may be read by whoever owns it. Every move checks the
 * state it leaves (WF_ULT_MOVE): a double enqueue or a wake of a ULT that
 * is not parked is a named crash, not a corrupted queue.
 */
#ifndef WF_ULT_H
#define WF_ULT_H

#include <stdatomic.h>
#include <stdint.h>

#include <weft.h>

#include "context/context.h"
#include "stack/stack.h"
#include "util/util.h"

/* In this order so that the states each move may leave form a range
 * (WF_ULT_MOVE checks with one compare). */
enum wf_ult_state { WF_NEW = 0, WF_PARKED, WF_RUNNING, WF_RUNNABLE, WF_EXITED };

/* Priority-inheriting or -protecting mutexes one ULT may hold at once
 * (src/posix/prio_mutex.c; one more is EAGAIN). */
#define WF_PX_HELD_MAX 16

/* wf_ult.cancel bits. */
enum {
	WF_CANCEL_PENDING = 1,  /* weft_cancel was called */
	WF_CANCEL_DISABLED = 2, /* weft_setcancelstate(DISABLE) */
	WF_CANCEL_ACTING = 4,   /* exiting because of a cancellation */
	WF_CANCEL_ASYNC = 8,    /* weft_setcanceltype(ASYNCHRONOUS) */
};

/* What a parked ULT waits for (wf_ult.block_reason): written by the ULT
 * itself just before it parks, read by the tracer (src/trace) and by
 * debuggers (tools/weft-gdb.py). Meaningful only while it is PARKED. */
enum wf_block_reason {
	WF_BLOCK_NONE = 0,
	WF_BLOCK_JOIN,    /* block_obj: the wf_ult_t it joins */
	WF_BLOCK_MUTEX,   /* block_obj: the lock word */
	WF_BLOCK_COND,    /* block_obj: the condition variable */
	WF_BLOCK_RWLOCK,  /* block_obj: the lock word */
	WF_BLOCK_SEM,     /* block_obj: the semaphore's value */
	WF_BLOCK_BARRIER, /* block_obj: the barrier's phase word */
	WF_BLOCK_ONCE,    /* block_obj: the once control's state */
	WF_BLOCK_SLEEP,   /* block_obj: NULL */
	WF_BLOCK_PARK,    /* weft_park; block_obj: NULL */
	WF_BLOCK_HANDOFF, /* weft_park_handoff; block_obj: the ULT it handed to */
	WF_BLOCK_IO,      /* a file descriptor (src/io/poller.c); block_obj: its entry's word */
	WF_BLOCK_NREASONS
};

/* Parker token states (wf_parker.state). */
enum { WF_PARK_EMPTY = 0, WF_PARK_NOTIFIED = 1, WF_PARK_PARKED = 2 };

/* What a blocked thread waits on: a ULT (parks in the scheduler) or a
 * foreign kernel thread (waits on the state word as a futex). A ULT has one
 * in its descriptor (weft_park); a wait-on-address waiter carries its own
 * (src/sync/wait.c), so that only the wait's waker can hand it a token. */
typedef struct wf_parker {
	atomic_int state;
	struct wf_ult *ult; /* the ULT that parks on it; NULL: a foreign thread */
} wf_parker_t;

/* Values of wf_ult.joiner besides a joiner: a wf_ult pointer (a ULT joins)
 * or a wf_parker pointer with bit 0 set (a foreign kernel thread joins). */
#define WF_JOIN_NONE     ((uintptr_t)0)
#define WF_JOIN_DETACHED ((uintptr_t)2)
#define WF_JOIN_EXITED   ((uintptr_t)4) /* exited, nobody has claimed it yet */
#define WF_JOIN_CLAIMED  ((uintptr_t)6) /* exited, and a joiner owns it */
/* Only in join_seen: a canceller took the joiner out of its join; the
 * join would have closed a cycle of joins; a signal's sender took it out
 * (its handler runs, then the join starts again). */
#define WF_JOIN_CANCELED    ((uintptr_t)8)
#define WF_JOIN_DEADLK      ((uintptr_t)10)
#define WF_JOIN_INTERRUPTED ((uintptr_t)12)

typedef struct wf_ult {
	wf_ctx_t ctx;           /* saved registers; valid unless RUNNING */
	struct wf_ult *next;    /* link in the runtime's own queues; owned by that queue */
	weft_sched_node_t node; /* the scheduler's (weft/sched.h); owned by it while queued */
	weft_t id;
	wf_parker_t parker;
	int state;               /* enum wf_ult_state; written by its owner (see above),
	                            relaxed: a signal's placer reads it as a hint */
	int bound_worker;        /* -1, or the only worker allowed to run it */
	int last_worker;         /* worker that ran it last */
	int why;                 /* enum weft_sched_why, while in an inbox or the
	                                     global queue on its way to a scheduler */
	int saved_errno;         /* its errno while it does not run (sched.c,
	                                     switch_away); owned by the ULT */
	uint64_t sched_hint;     /* weft_sched_sethint's; read by schedulers */
	void *tp;                /* its own thread pointer (tls.c), installed whenever it runs;
	             NULL: it shares its worker's kernel thread's */
	atomic_uintptr_t joiner; /* WF_JOIN_* or the joiner's wf_parker */
	_Atomic(struct wf_ult *) joining; /* the ULT this one is joining (cycle check) */
	struct wf_ult *join_target;       /* for WF_AFTER_JOIN; owned by this ULT */
	uintptr_t join_seen;              /* WF_AFTER_JOIN: target's joiner field
	                                     if registering failed, else 0 */
	atomic_int join_checking;         /* 1 while the context that registered this ULT
	                             as a joiner still reads its target (sched.c) */
	void *(*fn)(void *);
	void *arg;
	void *retval;

	/* Synchronization (src/sync). */
	atomic_int cancel;               /* WF_CANCEL_* bits; set by anyone, acted on by the ULT */
	_Atomic(const void *) wait_addr; /* the address of any wait it is in (wait.c:
	                                    weft_cancel and signals find it by it) */
	struct weft_cleanup_frame *cleanup; /* cleanup handlers; owned by the ULT */
	struct wf_tsd *tsd;                 /* thread-specific values; owned by the ULT */
	void *px_unwind; /* glibc-style cleanup frames (src/posix/unwind.c); owned by the ULT */
	/* POSIX scheduling parameters (prio.c): the policy and priority set
	 * (pthread_setschedparam, weft_setschedparam), and the effective rank
	 * that schedulers and wait queues order by: the priority under
	 * SCHED_FIFO/RR, 0 otherwise, raised while it holds a mutex that
	 * inherits or protects a higher one (boost). Written under
	 * wf_prio_lock; read without it (a queue that read an old rank puts
	 * the ULT right at its next reorder, prio.c). */
	int sched_policy, sched_prio;
	int rank, boost;
	/* Priority-inheriting and -protecting mutexes (src/posix/prio_mutex.c),
	 * under wf_prio_lock: those it holds, and the one it blocks on. */
	void *px_held[WF_PX_HELD_MAX];
	int px_nheld;
	void *px_blocked_on;
	int px_affinity; /* the worker an explicit affinity binds it to (pthread_setaffinity_np,
	                    weft_attr_setworker), inherited by the threads it creates; -1: none */
	/* POSIX signals per ULT (src/sync/signal.c): bit s-1 for signal s. */
	_Atomic uint64_t sig_mask;    /* blocked; written by the ULT */
	_Atomic uint64_t sig_pending; /* sent, not yet delivered; set by anyone */
	_Atomic uint64_t sig_waiting; /* what it waits for in a sigwait; written by the ULT */
	/* Of sig_pending, those sent to the process that weft gave it
	 * (sync/procsig.c); set by the placer, cleared by whoever takes them. */
	_Atomic uint64_t sig_placed;
	/* Such a signal wf_sig_deliver raises now; owned by the ULT. */
	int sig_now;
	/* Past its last handler on the way out: no longer a taker of the
	 * process's signals (wf_ult_exiting, sync/procsig.c); set by the ULT. */
	atomic_int sig_gone;
	/* Handlers run for it (bits or'ed by wf_sig_deliver, cleared by
	 * whoever asks: a restartable call, SA_RESTART). */
	uint64_t sig_ran;
	/* What it waits for while PARKED (enum wf_block_reason, see above). */
	int block_reason;
	const void *block_obj;
	/* The system call section it is in (carrier.c), owned by the ULT: the
	 * worker and carrier it left, and the section's value of w->sys. */
	struct wf_worker *sys_w;
	struct wf_carrier *sys_c;
	unsigned sys_v;
	/* CPU time run so far, while wf_rt.cpu_clock is on (cpuclock.c). */
	_Atomic uint64_t cpu_ns;
	_Atomic uint64_t cpu_seen; /* the most any read returned (cpuclock.c) */
	char name[WEFT_NAME_MAX];
	/* The stack layer's record of the mapping; last, out of the lines the
	 * switch and create+join touch most. */
	wf_stack_t stack;
} wf_ult_t;

/* The ULT a joiner word names, or NULL (a WF_JOIN_* state, or a foreign
 * thread's parker, tagged with bit 0). */
static inline wf_ult_t *wf_joiner_ult(uintptr_t j)
{
	return j > WF_JOIN_CLAIMED && !(j & 1) ? (wf_ult_t *)j : NULL;
}

static inline wf_ult_t *wf_ult_of_node(const weft_sched_node_t *n)
{
	return (wf_ult_t *)((char *)n - __builtin_offsetof(wf_ult_t, node));
}

static inline wf_ult_t *wf_ult_of_stack(const wf_stack_t *s)
{
	return (wf_ult_t *)((char *)s - __builtin_offsetof(wf_ult_t, stack));
}

/* Move u from a state in [lo, hi] (enum order) to `to`, or abort naming
 * the ULT and both states. Called by u's owner. */
#define WF_ULT_MOVE(u, lo, hi, to)                                                     \
	do {                                                                           \
		if (unlikely((unsigned)((u)->state - (lo)) > (unsigned)((hi) - (lo)))) \
			wf_ult_bad_move((u), (to), __func__);                          \
		__atomic_store_n(&(u)->state, (to), __ATOMIC_RELAXED);                 \
	} while (0)
WF_HIDDEN _Noreturn void wf_ult_bad_move(const wf_ult_t *u, int to, const char *func);

/* Must u act on a cancellation now? Pending, enabled, not already acting
 * (ACTING sets DISABLED too). Sequentially consistent: each caller pairs
 * it with a store the canceller must see, or the canceller with one it
 * must see (src/sync/cancel.c). */
static inline int wf_cancel_due(wf_ult_t *u)
{
	return (atomic_load_explicit(&u->cancel, memory_order_seq_cst) &
		(WF_CANCEL_PENDING | WF_CANCEL_DISABLED)) == WF_CANCEL_PENDING;
}

/* Has u an unblocked signal sent to it that it has not taken? (sync/signal.c
 * owns the bits; a waiter looks before it blocks.) Sequentially consistent,
 * as wf_cancel_due. */
static inline int wf_sig_due(wf_ult_t *u)
{
	return (atomic_load_explicit(&u->sig_pending, memory_order_seq_cst) &
		~atomic_load_explicit(&u->sig_mask, memory_order_relaxed)) != 0;
}

/* ... and u's cancel type is asynchronous: it acts anywhere it is safe. */
static inline int wf_cancel_async_due(wf_ult_t *u)
{
	return (atomic_load_explicit(&u->cancel, memory_order_seq_cst) &
		(WF_CANCEL_PENDING | WF_CANCEL_DISABLED | WF_CANCEL_ASYNC)) ==
	       (WF_CANCEL_PENDING | WF_CANCEL_ASYNC);
}

#endif
