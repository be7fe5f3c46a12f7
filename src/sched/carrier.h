/* Carriers: the kernel threads that carry workers; system call sections;
 * the monitor that hands a blocked worker to a spare. The design is at the
 * top of carrier.c. */
#ifndef WF_SCHED_CARRIER_H
#define WF_SCHED_CARRIER_H

#include "sched/sched.h"
#include "util/fence.h"

/* Start the carriers: the calling kernel thread carries worker 0 if the
 * runtime has a root ULT (the caller), a new kernel thread carries each
 * other worker, and the monitor starts if sections hand over
 * (wf_rt.syscall_ns > 0). The workers exist. Returns 0 or EAGAIN/ENOMEM
 * (nothing left running). */
WF_HIDDEN int wf_carriers_start(void);
/* Stop them (wf_rt.state is WF_RT_STOPPING, no ULT but the root alive):
 * the root ULT, if any (the caller), ends on the kernel thread that
 * started the runtime, on no worker; every other carrier and the monitor
 * end and are joined. */
WF_HIDDEN void wf_carriers_stop(void);
/* Free what they held; after wf_carriers_stop. */
WF_HIDDEN void wf_carriers_free(void);

/* Open a system call section for the calling ULT (include/weft/io.h):
 * the ULT it was opened for, or NULL (no ULT, or no hand-overs). */
WF_HIDDEN wf_ult_t *wf_section_begin(void);
/* Close it: if its worker was handed over meanwhile, the ULT goes back to
 * a run queue and its kernel thread becomes a spare; returns on a worker. */
WF_HIDDEN void wf_section_end(wf_ult_t *u);

/* Around glibc's setuid and its kin, inside a section: install the
 * calling carrier's own glibc descriptor, so that glibc's broadcast of the
 * change skips this kernel thread and no other; returns what to give to
 * wf_setxid_end (NULL: nothing was changed). carrier.c, "set*id". */
WF_HIDDEN void *wf_setxid_begin(void);
WF_HIDDEN void wf_setxid_end(void *saved);

/* The ULT in a section on the calling kernel thread, or NULL (no worker's
 * ULT runs here then: wf_self is NULL; this is who the thread is). */
WF_HIDDEN wf_ult_t *wf_section_self(void);
/* Is u in a section? (sequentially consistent: sync/signal.c) */
WF_HIDDEN int wf_section_in(wf_ult_t *u);
/* Send signal sig to the kernel thread that u's section runs on. */
WF_HIDDEN void wf_section_kill(wf_ult_t *u, int sig);
/* Set by the synchronization layer: u has begun a section with signals
 * pending for it (u->sig_pending); those it takes go to its kernel thread
 * now (sync/signal.c). Called by u, in the section, before its call. */
WF_HIDDEN extern void (*wf_section_hook)(wf_ult_t *u);

/* A worker's loop starts a ULT: wake the monitor if it is idle, so that
 * it watches for preemption (one relaxed load when it is not). */
WF_HIDDEN void wf_monitor_poke_slow(void);
WF_HIDDEN extern atomic_int wf_monitor_idle;
static inline void wf_monitor_poke(void)
{
	wf_fence_light(); /* after current's store; the monitor's side is heavy */
	if (unlikely(atomic_load_explicit(&wf_monitor_idle, memory_order_relaxed)))
		wf_monitor_poke_slow();
}

/* In the child of a fork (runtime/init.c): the calling context is no
 * worker's any longer, and no section hands over. */
WF_HIDDEN void wf_forked_child(void);
/* A fork made by a ULT running on worker `kept` (runtime/fork.c has the
 * protocol). wf_carriers_fork: the carriers' lock around it (enum
 * wf_fork_phase). In the child: wf_carriers_forked makes the calling
 * kernel thread, which carried kept and whose thread control block for
 * glibc is tp, the only carrier; wf_carriers_restart, last, gives every
 * other worker a new carrier and starts the monitor if one ran. Returns 0,
 * or EAGAIN if a kernel thread could not be made (those workers then have
 * none). */
WF_HIDDEN void wf_carriers_fork(int phase);
WF_HIDDEN void wf_carriers_forked(wf_worker_t *kept, void *tp);
WF_HIDDEN int wf_carriers_restart(wf_worker_t *kept);

#endif
