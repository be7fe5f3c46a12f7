/* Preemption of ULTs that run too long (preempt.c has the design). */
#ifndef WF_SCHED_PREEMPT_H
#define WF_SCHED_PREEMPT_H

#include <signal.h>

#include "sched/sched.h"

/* The signal the monitor sends a carrier whose ULT ran a slice without a
 * scheduling point, and the one that makes a running ULT act on what was
 * sent to it (Go's choice: a program rarely uses it, and its default
 * action is to do nothing). */
#define WF_SIG_PREEMPT SIGURG

/* Install the handler if wf_rt.preempt_ns > 0 (else, or where preemption
 * is not built, wf_rt.preempt_ns becomes 0). At runtime start. 0. */
WF_HIDDEN int wf_preempt_start(void);
/* Put back the program's action. At shutdown, after the workers. */
WF_HIDDEN void wf_preempt_stop(void);

/* The running ULT u of w gives way: it goes to the back of w's queues and
 * the next ready ULT runs (sched.c). Returns the worker u resumes on, or
 * NULL if nothing else was ready (u goes on). Called only from the
 * preemption handler, on w's owner, with w consistent. */
WF_HIDDEN wf_worker_t *wf_preempt_yield(wf_worker_t *w, wf_ult_t *u);

/* Set by the synchronization layer: act on what was sent to u, the
 * running ULT (signals, an asynchronous cancellation; may not return).
 * Called by the handler where a yield is safe. */
WF_HIDDEN extern void (*wf_preempt_hook)(wf_ult_t *u);

/* Did the signal whose context is uc (a ucontext_t) interrupt weft on
 * worker w (NULL: no worker) - its own code, the vDSO, a C library
 * function weft called, or a scheduler of the program's, whose
 * operations run inside weft's switch? A handler that calls into weft
 * (sem_post) must not run there (sync/procsig.c). From a signal handler;
 * the ranges are found at start. */
WF_HIDDEN int wf_interrupted_in_weft(wf_worker_t *w, const void *uc);

/* A preemption point: a ULT that releases a lock (weft_mutex_unlock,
 * weft_rwlock_unlock), creates or joins a thread gives way here if the
 * preemption handler found it inside weft or the C library, where it may
 * not (preempt.c, "Owed").
 * One relaxed load while no worker owes one. Only from a ULT or foreign
 * thread that holds no internal lock, outside signal handlers. */
WF_HIDDEN extern atomic_int wf_preempts_owed;
WF_HIDDEN void wf_preempt_pay(void);
static inline void wf_preempt_point(void)
{
	if (__builtin_expect(atomic_load_explicit(&wf_preempts_owed, memory_order_relaxed), 0))
		wf_preempt_pay();
}

/* Ask w's carrier to run the handler (the monitor, a pthread_kill to a
 * running ULT). */
WF_HIDDEN void wf_preempt_kick(wf_worker_t *w);

#endif
