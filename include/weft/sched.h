/* weft/sched.h - installable per-worker schedulers (included by weft.h).
 *
 * Every worker runs one scheduler: a table of operations over a state block
 * of that worker's own. The scheduler answers one question - which ready
 * ULT does this worker run next - and the runtime does everything else:
 * switching, blocking and waking, timers, joining, putting idle workers to
 * sleep and waking them. A scheduler may be installed at start-up
 * (WEFT_SCHED, weft_config_t.scheds) or while the program runs
 * (weft_sched_install); ULTs queued under the old one move to the new one.
 * docs/scheduling.md says how to write one; examples/sched_lottery.c is a
 * complete one in a page.
 *
 * The shape follows "Configurable, Lightweight Threads on a KSR
 * Multiprocessor" (Ghosh, Mukherjee, Schwan), section 5: get_thread,
 * put_thread, empty_readyq, proc_idle over a per-processor state, installed
 * per processor with install_scheduler(processor, scheduler).
 *
 * Contract in short (docs/scheduling.md has the long form):
 *   - put, get, idle and tick run only on the worker that owns the state, one at
 *     a time: the state needs no locking. ULTs made ready by other kernel
 *     threads reach it through the runtime, which hands them to put on the
 *     owning worker.
 *   - give, if present, is the one operation that runs on another worker:
 *     an idle worker running the same scheduler asks a busy one for work.
 *     It runs concurrently with the owner's put and get, so a scheduler
 *     that has it must make its queue safe for that (the built-in steal
 *     scheduler uses a Chase-Lev deque).
 *   - A node handed to put belongs to the scheduler until get or give
 *     returns it; nobody else touches it meanwhile. A node is returned
 *     once: a node returned twice is a named crash, not a corrupted queue.
 *   - The operations must not block, yield or call into weft.
 */
#ifndef WEFT_SCHED_H
#define WEFT_SCHED_H

#include <weft.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of weft_sched_ops_t a scheduler was written against. */
#define WEFT_SCHED_ABI 1

/* Longest scheduler name, including the terminating NUL. */
#define WEFT_SCHED_NAME_MAX 16

/* The scheduler's per-ULT data, inside every ULT's descriptor: links and a
 * key for whatever queue the scheduler keeps (intrusive, so queueing a ULT
 * allocates nothing). Owned by the scheduler from put until get or give
 * returns the node; its values are unspecified at put. */
typedef struct weft_sched_node {
	struct weft_sched_node *next, *prev;
	uint64_t key;
} weft_sched_node_t;

/* Why a ULT is handed to put. */
enum weft_sched_why {
	WEFT_SCHED_NEW = 0,   /* just created */
	WEFT_SCHED_WOKEN,     /* it waited (a lock, a sleep, a join, weft_park) and may run now */
	WEFT_SCHED_YIELDED,   /* it ran and gave the worker up (weft_yield, sched_yield) */
	WEFT_SCHED_MIGRATED,  /* it was queued under another scheduler, replaced on this worker */
	WEFT_SCHED_PREEMPTED, /* it was running and gave way because put asked for it
	                         (WEFT_SCHED_PUT_RESCHED): POSIX puts it at the head of
	                         its priority */
};

/* What put returns, or'ed together (0: neither). */
enum weft_sched_put_result {
	/* Another worker may run the ULT (through give, or a queue the
	 * scheduler shares between its workers): the runtime wakes an idle
	 * worker running this scheduler to come and take it. */
	WEFT_SCHED_PUT_SHARED = 1,
	/* The ULT running on this worker should give way to the one just put
	 * (it outranks it): the runtime makes it yield at its next scheduling
	 * point that does not block - the wake, create or priority change that
	 * made the other ready - and puts it back as WEFT_SCHED_PREEMPTED.
	 * weft does not interrupt a ULT that makes no such call. */
	WEFT_SCHED_PUT_RESCHED = 2,
};

typedef struct weft_sched_ops {
	uint32_t abi;      /* WEFT_SCHED_ABI */
	uint32_t size;     /* sizeof(weft_sched_ops_t) as the scheduler was compiled */
	const char *name;  /* 1 to WEFT_SCHED_NAME_MAX-1 of [a-z0-9_]: how WEFT_SCHED names it */
	size_t state_size; /* bytes of per-worker state the runtime allocates, zero-filled and
	                      64-byte aligned (may be 0) */

	/* Optional. Prepare the state of worker `worker`; arg is
	 * weft_sched_install's (NULL at start-up). 0, or an errno value that
	 * makes the install fail. Runs on that worker. */
	int (*init)(void *state, int worker, void *arg);
	/* Optional. The state is being dropped; its queue is empty (get
	 * returned NULL). */
	void (*fini)(void *state);

	/* Required. Queue a ready ULT. Returns 0 or WEFT_SCHED_PUT_* bits:
	 * SHARED if another worker may run it, RESCHED if the ULT running on
	 * this worker should give way to it. */
	int (*put)(void *state, weft_sched_node_t *n, int why);
	/* Required. Take the ULT this worker runs next, or NULL if none. */
	weft_sched_node_t *(*get)(void *state);
	/* Optional. Is the queue empty? May be called from any worker as a hint
	 * (read counters with relaxed atomics); NULL counts as always empty.
	 * The runtime uses it to decide whether more idle workers are worth
	 * waking. */
	int (*empty)(const void *state);
	/* Optional. Called on an idle worker running this scheduler: take a
	 * ULT from `victim`, another worker's state, for `thief`'s worker; or
	 * NULL. Runs concurrently with the victim's owner. */
	weft_sched_node_t *(*give)(void *victim, void *thief);
	/* Optional. The worker found nothing to run and is about to spin and
	 * then sleep. */
	void (*idle)(void *state);
	/* Optional: for policies that take the worker away from a running ULT
	 * (time slices). Called on the owning worker, with the time, at each
	 * point where its running ULT may give way without blocking - a wake,
	 * a create, a priority change; return WEFT_SCHED_PUT_RESCHED to make it
	 * give way there (it is put back as WEFT_SCHED_PREEMPTED), or 0. weft
	 * has no timer interrupt: a ULT that makes no such call is not
	 * ticked. */
	int (*tick)(void *state, uint64_t now_ns);
} weft_sched_ops_t;

/* The built-in schedulers.
 *   steal: per-worker LIFO deques, idle workers steal the oldest entry;
 *          yields go to a FIFO the steal workers share. The default.
 *   share: one central FIFO that every worker running it takes from.
 *   prio:  POSIX priorities: the highest-ranked ready ULT first (SCHED_FIFO
 *          and SCHED_RR priorities 1-99 above SCHED_OTHER), FIFO within a
 *          priority, RR time slices; one ready queue for all the workers
 *          running it, so none starts a ULT while a higher one waits. */
WEFT_API extern const weft_sched_ops_t weft_sched_steal;
WEFT_API extern const weft_sched_ops_t weft_sched_share;
WEFT_API extern const weft_sched_ops_t weft_sched_prio;

/* The time slice of SCHED_RR ULTs under prio, in nanoseconds (what
 * sched_rr_get_interval reports for a ULT). */
#define WEFT_SCHED_RR_SLICE_NS 100000000ull

/* POSIX scheduling parameters of ULT t (WEFT_NULL: the caller): a policy
 * (SCHED_OTHER, SCHED_FIFO, SCHED_RR, SCHED_BATCH, SCHED_IDLE from
 * <sched.h>) and a priority in sched_get_priority_min(policy) ..
 * sched_get_priority_max(policy) - 1..99 for FIFO and RR, 0 otherwise.
 * Workers running prio order ULTs by them; every wait queue (mutexes,
 * condition variables, rwlocks, semaphores, barriers) wakes the
 * highest-priority waiter first whatever the scheduler; other schedulers
 * store them (and may read them: weft_sched_node_prio). A ULT created
 * without explicit parameters (weft_attr_setschedparam) inherits its
 * creator's. A ULT that lowers its own priority, or raises another above
 * its own, on a worker running prio, yields to the ULTs that now outrank
 * it (going to the tail of its new priority, as POSIX says).
 * EINVAL: bad policy or priority, or a foreign thread asks for itself;
 * ESRCH: no such ULT. */
WEFT_API int weft_setschedparam(weft_t t, int policy, int prio);
WEFT_API int weft_getschedparam(weft_t t, int *policy, int *prio);
/* Give a ULT made with attribute a explicit scheduling parameters instead
 * of its creator's. EINVAL as weft_setschedparam. */
WEFT_API int weft_attr_setschedparam(weft_attr_t *a, int policy, int prio);
/* The parameters a holds: EINVAL if it has none of its own (the ULT would
 * inherit its creator's). */
WEFT_API int weft_attr_getschedparam(const weft_attr_t *a, int *policy, int *prio);

/* Make a scheduler known by its name, for WEFT_SCHED and weft_sched_find.
 * The table must stay valid until the process ends. EINVAL (bad table),
 * EEXIST (the name is taken), ENOSPC (too many registered). */
WEFT_API int weft_sched_register(const weft_sched_ops_t *ops);
/* The scheduler called `name` (built-in or registered), or NULL. */
WEFT_API const weft_sched_ops_t *weft_sched_find(const char *name);

/* Run worker `worker` under `ops` from now on, passing arg to its init.
 * The ULTs queued on that worker move over; the running one continues and
 * goes to the new scheduler at its next scheduling point. Returns once the
 * worker runs the new scheduler: at its next scheduling decision, which a
 * ULT that never blocks or yields delays. The table must stay valid until
 * the process ends. Not from inside a scheduler's operations.
 * EINVAL (bad table, worker out of range), ENOMEM, or init's error (the
 * old scheduler then stays). */
WEFT_API int weft_sched_install(int worker, const weft_sched_ops_t *ops, void *arg);
/* weft_sched_install on every worker, in order. If one fails, the workers
 * before it keep the new scheduler and its error is returned. */
WEFT_API int weft_sched_install_all(const weft_sched_ops_t *ops, void *arg);
/* The scheduler worker `worker` runs now, in *ops. EINVAL out of range. */
WEFT_API int weft_sched_get(int worker, const weft_sched_ops_t **ops);

/* Each ULT carries a 64-bit hint for its scheduler, 0 at creation: a
 * deadline, a number of lottery tickets, a virtual time - whatever the
 * installed scheduler reads. A scheduler sees the new value the next time
 * the ULT is put. t: WEFT_NULL for the caller. ESRCH: no such thread;
 * EINVAL: a foreign thread asks for itself. */
WEFT_API int weft_sched_sethint(weft_t t, uint64_t hint);
WEFT_API int weft_sched_gethint(weft_t t, uint64_t *hint);

/* What a scheduler may ask about the ULT behind a node it holds. */
/* NULL: 0, 0, -1 and -1 (weft_sched_node_prio) - never a valid answer. */
WEFT_API weft_t weft_sched_node_thread(const weft_sched_node_t *n); /* its weft_t */
WEFT_API uint64_t weft_sched_node_hint(const weft_sched_node_t *n);
/* The worker it must run on, or -1 if any worker may run it. A scheduler
 * must not let another worker take a bound ULT (through give or a shared
 * queue); if one does anyway, the runtime sends the ULT to its worker. */
WEFT_API int weft_sched_node_worker(const weft_sched_node_t *n);
/* Its effective priority rank, 0-99: its POSIX priority under SCHED_FIFO
 * and SCHED_RR, 0 under the others, raised while it holds a
 * priority-inheriting or -protecting mutex; and its policy in *policy
 * (if policy is not NULL). */
WEFT_API int weft_sched_node_prio(const weft_sched_node_t *n, int *policy);

#ifdef __cplusplus
}
#endif

#endif
