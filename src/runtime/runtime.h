/* The runtime layer's internal interface: configuration, start-up, and the
 * API entry points the POSIX layer builds on. The runtime sits on top of
 * the synchronization layer (src/sync) and the scheduler (src/sched). */
#ifndef WF_RUNTIME_H
#define WF_RUNTIME_H

#include <weft.h>

#include "sched/policy.h"
#include "sched/prio.h"
#include "sync/wait.h"

#define WF_ATTR_MAGIC  0x77656674u /* "weft" */
#define WF_MAX_WORKERS 1024

/* Fill *out from *in, taking zero fields from the environment or defaults.
 * Returns 0 or EINVAL. */
WF_HIDDEN int wf_config_resolve(const weft_config_t *in, weft_config_t *out);

/* Parse a scheduler spec (WEFT_SCHED's grammar, config.c) for n workers
 * into at[0..n-1]; at NULL: check only. 0 or EINVAL. */
WF_HIDDEN int wf_sched_spec(const char *spec, int n, const weft_sched_ops_t **at);

/* Start the runtime with defaults unless it runs already. */
WF_HIDDEN int wf_start_lazily(void);
/* The POSIX layer starts the runtime (not weft_init): under the default
 * WEFT_TLS the root ULT then keeps its kernel thread's thread-locals
 * (init.c, start). */
WF_HIDDEN extern atomic_int wf_posix_start;
static inline int wf_ensure_runtime(void)
{
	if (likely(atomic_load_explicit(&wf_rt.state, memory_order_acquire) == WF_RT_RUNNING))
		return 0;
	return wf_start_lazily();
}

/* weft_create and weft_join, for the layers above (src/posix).
 * inherit_mask: the new ULT starts with the creating ULT's signal mask
 * (weft_create); 0: with attr's (the POSIX layer sets it). */
WF_HIDDEN int wf_create(weft_t *t, const weft_attr_t *attr, void *(*fn)(void *), void *arg,
			int inherit_mask);
WF_HIDDEN int wf_join_id(weft_t t, void **ret);
WF_HIDDEN int wf_detach_id(weft_t t);
/* Register weft's fork handlers with glibc, once, before any other
 * handler the caller goes on to register (runtime/fork.c). */
WF_HIDDEN void wf_fork_register(void);
/* Set u's scheduling parameters (checked: wf_prio_check) and let the
 * caller give way to the ULTs that now outrank it. */
WF_HIDDEN void wf_setsched(wf_ult_t *u, int policy, int prio);

#endif
