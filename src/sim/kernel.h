/* weft-sim internals: the simulation kernel's state and the thread-backend
 * interface every backend implements (backend_*.c).
 *
 * The kernel (kernel.c) is the SpecC scheduler of seed 000 Fig. 3-5: five
 * thread states and one central ready queue. It never switches threads
 * itself; it tells the backend which thread to suspend and which to resume,
 * through the four calls of the seed's simulator (ThreadCreate, ThreadDelete,
 * Wait, Go) plus a combined Go+Wait that user-level backends turn into one
 * switch, and the kernel lock of the parallel mode.
 *
 * Thread states (wsim_thread_t.state) and who moves a thread between them -
 * every move happens under the kernel lock (parallel) or on the one running
 * thread (sequential):
 *   READY     in the ready queue. In: par (new children), a delta cycle
 *             (event notified), a timed cycle (time reached), the last
 *             child of a par completing (its parent). Out: dispatch, which
 *             moves it to RUN and owes it one Go.
 *   RUN       owns a simulated CPU (K.running counts them). Out: the thread
 *             itself, calling wait/waitfor/par or returning.
 *   WAIT      on the waiter lists of its events (nodes on its own stack).
 *   WAITFOR   in the time heap.
 *   JOIN      in par, waiting for `pending` children.
 *   COMPLETE  returned; its parent reaps it (ThreadDelete) after the par.
 * A thread's backend state (stack, kernel thread, ULT) belongs to the
 * backend; the thread object itself to the kernel, which recycles it.
 */
#ifndef WSIM_KERNEL_H
#define WSIM_KERNEL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <weft/sim.h>

#define WSIM_HIDDEN      __attribute__((visibility("hidden")))
#define wsim_unlikely(x) __builtin_expect(!!(x), 0)

enum wsim_state { WSIM_READY = 1, WSIM_RUN, WSIM_WAIT, WSIM_WAITFOR, WSIM_JOIN, WSIM_COMPLETE };

typedef struct wsim_thread wsim_thread_t;

/* One (thread, event) pair of a wait: lives on the waiting thread's stack. */
typedef struct wsim_waitnode {
	wsim_event_t *ev;
	wsim_thread_t *t;
	struct wsim_waitnode *prev, *next;
	int idx; /* position in the wait_any list */
} wsim_waitnode_t;

struct wsim_thread {
	int state;              /* enum wsim_state */
	int woke;               /* WAIT: index of the event that woke it */
	wsim_thread_t *rq_next; /* READY: ready-queue link */
	wsim_thread_t *parent;  /* the thread whose par made it; NULL: root */
	int pending;            /* JOIN: children not yet COMPLETE */
	wsim_waitnode_t *nodes; /* WAIT: its waiter-list entries */
	int nnodes;
	wsim_time_t wake_at; /* WAITFOR: when */
	uint64_t seq;        /* WAITFOR: tie-break, FIFO among equal times */
	void (*fn)(void *);
	void *arg;
	wsim_thread_t **kids;               /* JOIN: its par's children (freed on abort) */
	int kids_heap;                      /* kids came from malloc */
	int discard;                        /* reaped before it ran: must not run fn */
	wsim_thread_t *all_prev, *all_next; /* every thread not yet reaped */
	wsim_thread_t *free_next;           /* the kernel's pool of objects */
	/* The backend's per-thread state, backend->thread_size bytes. */
	_Alignas(64) unsigned char bk[];
};

/* How a running thread finds its own wsim_thread_t. */
enum wsim_cur_mode {
	WSIM_CUR_GLOBAL, /* sequential: K.cur, set by whoever resumes */
	WSIM_CUR_TLS,    /* one kernel thread per simulation thread */
	WSIM_CUR_ULT,    /* weft ULTs: a weft thread-specific key (a ULT may
	                    resume on another worker after any weft block) */
};

typedef struct wsim_backend_ops {
	const char *name;
	int max_simcpus;       /* 1: sequential only */
	size_t thread_size;    /* bytes of wsim_thread_t.bk it uses */
	int cur_mode_parallel; /* enum wsim_cur_mode when simcpus > 1 */
	/* Once per wsim_run, before any thread exists / after all are reaped. */
	int (*start)(void);
	void (*stop)(void);
	/* ThreadCreate: make t's thread so that the first go() (or switch_to
	 * naming it) runs wsim_thread_body(t). 0, EAGAIN or ENOMEM. */
	int (*create)(wsim_thread_t *t);
	/* Go: let t run. Parallel backends only. A go that comes before t's
	 * wait is remembered (a token), never lost. */
	void (*go)(wsim_thread_t *t);
	/* Wait: block self until a go. */
	void (*wait)(wsim_thread_t *self);
	/* go(next) then wait(self), as one switch where the backend can. */
	void (*switch_to)(wsim_thread_t *self, wsim_thread_t *next);
	/* self's body has returned: go(next) if next, then end self. N:1
	 * backends switch away for good; thread backends return, and their
	 * entry function returns. */
	void (*finish)(wsim_thread_t *self, wsim_thread_t *next);
	/* A thread woken while the simulation is being torn down: end it from
	 * wherever it is blocked. Never returns. */
	void (*abort_self)(wsim_thread_t *self);
	/* ThreadDelete: t is COMPLETE, never ran, or (K.aborting) blocked;
	 * make it go away and free its resources. Called by another thread. */
	void (*reap)(wsim_thread_t *t);
	/* The kernel lock (parallel mode only). */
	void (*lock)(void);
	void (*unlock)(void);
	/* Run the root thread; return once end() has been called. */
	void (*run)(wsim_thread_t *root);
	/* Called by the thread that ends the simulation, before it finishes
	 * or waits: lets run() return. */
	void (*end)(void);
} wsim_backend_ops_t;

/* The one simulation of the process (wsim_run refuses a second one). */
typedef struct wsim_kernel {
	const wsim_backend_ops_t *bk;
	int simcpus;
	int parallel; /* simcpus > 1: the kernel lock is taken */
	int cur_mode;
	size_t stack_size;
	wsim_time_t now;
	wsim_thread_t *rq_head, *rq_tail; /* READY */
	wsim_event_t *nt_head, *nt_tail;  /* notified in this delta cycle */
	wsim_thread_t **heap;             /* WAITFOR, a min-heap */
	size_t nheap, capheap;
	uint64_t seq;
	int running;  /* threads in RUN */
	int ended;    /* the simulation is over */
	int result;   /* wsim_run's return value */
	int aborting; /* teardown: woken threads end themselves */
	wsim_thread_t *root;
	wsim_thread_t *all;  /* threads not yet reaped */
	wsim_thread_t *pool; /* free thread objects */
	wsim_thread_t *cur;  /* WSIM_CUR_GLOBAL */
	unsigned ult_key;    /* WSIM_CUR_ULT: a weft_key_t */
	wsim_stats_t st;
} wsim_kernel_t;

WSIM_HIDDEN extern wsim_kernel_t wsim_k;

/* Entry of every simulation thread: called by the backend on the thread's
 * own stack when it first runs. Returns only to a thread backend's entry
 * function, after finish(). */
WSIM_HIDDEN void wsim_thread_body(wsim_thread_t *t);

WSIM_HIDDEN _Noreturn void wsim_panic(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

WSIM_HIDDEN wsim_thread_t *wsim_self_slow(void);

/* The calling simulation thread, or NULL when no simulation runs (the
 * public calls then return EPERM). Sequential simulations keep it in K.cur,
 * which is NULL between simulations. */
static inline wsim_thread_t *wsim_self_checked(void)
{
	if (wsim_k.cur_mode == WSIM_CUR_GLOBAL)
		return wsim_k.cur;
	return wsim_self_slow();
}

/* The kernel lock: taken only in parallel mode. */
static inline void wsim_klock(void)
{
	if (wsim_unlikely(wsim_k.parallel))
		wsim_k.bk->lock();
}

static inline void wsim_kunlock(void)
{
	if (wsim_unlikely(wsim_k.parallel))
		wsim_k.bk->unlock();
}

/* Does anybody wait on e? (Lock held.) Channels decide from this whether
 * to notify, so that threads discarded at a deadlock leave no count behind. */
static inline int wsim_event_waited(const wsim_event_t *e)
{
	return e->waiters_[0] != NULL;
}

/* Kernel calls for the channels (channel.c): notifying and blocking on one
 * event with the lock held (released on return). */
WSIM_HIDDEN void wsim_notify_locked(wsim_event_t *e);
WSIM_HIDDEN void wsim_wait_locked(wsim_thread_t *self, wsim_event_t *e);

WSIM_HIDDEN extern const wsim_backend_ops_t wsim_backend_posix;
WSIM_HIDDEN extern const wsim_backend_ops_t wsim_backend_lite;
WSIM_HIDDEN extern const wsim_backend_ops_t wsim_backend_context;
WSIM_HIDDEN extern const wsim_backend_ops_t wsim_backend_quick;
WSIM_HIDDEN extern const wsim_backend_ops_t wsim_backend_hybrid;

/* Stacks for the backends that bring their own (N:1, lite): mmap'd with a
 * PROT_NONE guard page below, recycled through a cache for the run. */
WSIM_HIDDEN void *wsim_stack_get(size_t size);
WSIM_HIDDEN void wsim_stack_put(void *lo, size_t size);
WSIM_HIDDEN void wsim_stack_cache_drain(void);

#endif
