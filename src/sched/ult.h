/* The ULT descriptor and the parker every blocking operation uses.
 *
 * A ULT's descriptor lives at the top of its own stack mapping (one mmap per
 * ULT, or a slot in a slab; see src/stack/stack.c), so creating a ULT is one
 * allocation, usually served from a per-worker cache without a system call.
 *
 * States and who owns what (see src/sched/sched.c for the protocol):
 *
 *   RUNNING   on exactly one worker (w->current). Owned by that worker;
 *             the ULT itself moves out of it (yield, park, exit).
 *   RUNNABLE  in exactly one run queue. Owned by the queue; the worker that
 *             dequeues it moves it to RUNNING.
 *   PARKED    in no queue; parker.state == WF_PARK_PARKED. Owned by whoever
 *             wins the CAS PARKED->EMPTY in wf_unpark, who makes it RUNNABLE.
 *   EXITED    its function returned; its stack is no longer used. Owned by
 *             its joiner (or freed at once if detached).
 *
 * While RUNNABLE, PARKED or EXITED, nobody runs on the ULT's stack, so its
 * saved context (ctx) may be read by whoever owns it.
 */
#ifndef WF_ULT_H
#define WF_ULT_H

#include <stdatomic.h>
#include <stdint.h>

#include <weft.h>

#include "context/context.h"
#include "util/util.h"

enum wf_ult_state { WF_RUNNING = 1, WF_RUNNABLE, WF_PARKED, WF_EXITED };

/* wf_ult.cancel bits. */
enum {
	WF_CANCEL_PENDING = 1,  /* weft_cancel was called */
	WF_CANCEL_DISABLED = 2, /* weft_setcancelstate(DISABLE) */
	WF_CANCEL_ACTING = 4,   /* exiting because of a cancellation */
};

/* What a parked ULT waits for (wf_ult.block_reason): written by the ULT
 * itself just before it parks, read by the tracer (src/trace) and by
 * debuggers (tools/weft-gdb.py). Meaningful only while it is PARKED. */
enum wf_block_reason {
	WF_BLOCK_NONE = 0,
	WF_BLOCK_JOIN,    /* block_obj: the wf_ult_t it joins */
	WF_BLOCK_MUTEX,   /* block_obj: the lock word */
	WF_BLOCK_COND,    /* block_obj: the condition variable's sequence word */
	WF_BLOCK_RWLOCK,  /* block_obj: the lock word */
	WF_BLOCK_SEM,     /* block_obj: the semaphore's value */
	WF_BLOCK_BARRIER, /* block_obj: the barrier's phase word */
	WF_BLOCK_ONCE,    /* block_obj: the once control's state */
	WF_BLOCK_SLEEP,   /* block_obj: NULL */
	WF_BLOCK_PARK,    /* weft_park; block_obj: NULL */
	WF_BLOCK_HANDOFF, /* weft_park_handoff; block_obj: the ULT it handed to */
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

/* Kinds of stack a ULT can have (wf_ult.stack_kind). */
enum wf_stack_kind {
	WF_STACK_GUARDED = 1, /* own mapping with a PROT_NONE guard page below */
	WF_STACK_SLAB,        /* carved from a slab, no guard, canary-checked */
	WF_STACK_USER,        /* given by weft_attr_setstack; never freed by weft */
	WF_STACK_BARE,        /* own mapping, no guard (odd size past the budget) */
	WF_STACK_THREAD,      /* a kernel thread's own stack (the root ULT) */
};

/* Values of wf_ult.joiner besides a joiner: a wf_ult pointer (a ULT joins)
 * or a wf_parker pointer with bit 0 set (a foreign kernel thread joins). */
#define WF_JOIN_NONE     ((uintptr_t)0)
#define WF_JOIN_DETACHED ((uintptr_t)2)
#define WF_JOIN_EXITED   ((uintptr_t)4) /* exited, nobody has claimed it yet */
#define WF_JOIN_CLAIMED  ((uintptr_t)6) /* exited, and a joiner owns it */
/* Only in join_seen: a canceller took the joiner out of its join; the
 * join would have closed a cycle of joins. */
#define WF_JOIN_CANCELED ((uintptr_t)8)
#define WF_JOIN_DEADLK   ((uintptr_t)10)

typedef struct wf_ult {
	wf_ctx_t ctx;        /* saved registers; valid unless RUNNING */
	struct wf_ult *next; /* link in an intrusive queue; owned by that queue */
	weft_t id;
	wf_parker_t parker;
	int state;        /* enum wf_ult_state; informational (debuggers, asserts) */
	int bound_worker; /* -1, or the only worker allowed to run it */
	int last_worker;  /* worker that ran it last */
	int stack_kind;
	int canary;              /* enum wf_canary: how wf_check_canary checks this stack */
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
	void *map_base; /* the stack mapping (guard page included) */
	size_t map_size;
	unsigned valgrind_id; /* VALGRIND_STACK_REGISTER handle */

	/* Synchronization (src/sync). */
	atomic_int cancel;       /* WF_CANCEL_* bits; set by anyone, acted on by the ULT */
	wf_spinlock_t wait_lock; /* guards cwait */
	struct wf_waiter *cwait; /* the cancellable wait it is in; under wait_lock */
	struct weft_cleanup_frame *cleanup; /* cleanup handlers; owned by the ULT */
	struct wf_tsd *tsd;                 /* thread-specific values; owned by the ULT */
	void *px_unwind; /* glibc-style cleanup frames (src/posix/unwind.c); owned by the ULT */
	int px_policy, px_prio; /* POSIX scheduling parameters: stored and returned only */
	/* POSIX signals per ULT (src/sync/signal.c): bit s-1 for signal s. */
	_Atomic uint64_t sig_mask;    /* blocked; written by the ULT */
	_Atomic uint64_t sig_pending; /* sent, not yet delivered; set by anyone */
	/* What it waits for while PARKED (enum wf_block_reason, see above). */
	int block_reason;
	const void *block_obj;
	/* CPU time run so far, while wf_rt.cpu_clock is on (posix/cpuclock.c). */
	_Atomic uint64_t cpu_ns;
	char name[WEFT_NAME_MAX];
} wf_ult_t;

/* The ULT a joiner word names, or NULL (a WF_JOIN_* state, or a foreign
 * thread's parker, tagged with bit 0). */
static inline wf_ult_t *wf_joiner_ult(uintptr_t j)
{
	return j > WF_JOIN_CLAIMED && !(j & 1) ? (wf_ult_t *)j : NULL;
}

/* Stack canaries, checked whenever a ULT switches away (wf_check_canary):
 *   NONE   guarded stacks (the guard page catches an overflow) and kernel
 *          thread stacks;
 *   ZERO   weft's guard-less stacks: the lowest WF_CANARY_WORDS words must
 *          still be zero. A page nobody wrote reads as zeros without being
 *          given memory, so a million such stacks cost one page each, not
 *          two; an overflow that reaches the bottom writes return addresses
 *          and frame pointers there;
 *   MAGIC  caller-owned stacks: the lowest word holds WF_CANARY_MAGIC mixed
 *          with the descriptor address. */
enum wf_canary { WF_CANARY_NONE = 0, WF_CANARY_ZERO, WF_CANARY_MAGIC_WORD };
#define WF_CANARY_WORDS 4
#define WF_CANARY_MAGIC 0x5745465443414e59ull /* "WEFTCANY" */

/* Must u act on a cancellation now? Pending, enabled, not already acting
 * (ACTING sets DISABLED too). Sequentially consistent: each caller pairs
 * it with a store the canceller must see, or the canceller with one it
 * must see (src/sync/cancel.c). */
static inline int wf_cancel_due(wf_ult_t *u)
{
	return (atomic_load_explicit(&u->cancel, memory_order_seq_cst) &
		(WF_CANCEL_PENDING | WF_CANCEL_DISABLED)) == WF_CANCEL_PENDING;
}

static inline uint64_t wf_canary_value(const wf_ult_t *u)
{
	return WF_CANARY_MAGIC ^ (uint64_t)(uintptr_t)u;
}

#endif
