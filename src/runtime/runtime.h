/* The runtime layer's internal interface: configuration and start-up. */
#ifndef WF_RUNTIME_H
#define WF_RUNTIME_H

#include <weft.h>

#include "sched/sched.h"

#define WF_ATTR_MAGIC  0x77656674u /* "weft" */
#define WF_MAX_WORKERS 1024

/* Fill *out from *in, taking zero fields from the environment or defaults.
 * Returns 0 or EINVAL. */
WF_HIDDEN int wf_config_resolve(const weft_config_t *in, weft_config_t *out);

/* Start the runtime with defaults unless it runs already. */
WF_HIDDEN int wf_start_lazily(void);
static inline int wf_ensure_runtime(void)
{
	if (likely(atomic_load_explicit(&wf_rt.state, memory_order_acquire) == WF_RT_RUNNING))
		return 0;
	return wf_start_lazily();
}

/* Registry upkeep at shutdown. */
WF_HIDDEN void wf_registry_drain_worker(wf_worker_t *w);
WF_HIDDEN void wf_registry_sweep(void (*fn)(wf_ult_t *u));

#endif
