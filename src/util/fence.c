/* Asymmetric fences: the membarrier(2) side and the choice of scheme
 * (fence.h has the design). */
#include <linux/membarrier.h>
#include <stdlib.h>
#include <string.h>

#include "util/fence.h"

int wf_fence_asym;

static long membarrier(int cmd)
{
	return syscall(SYS_membarrier, cmd, 0, 0);
}

/* WEFT_MEMBARRIER=0 keeps full fences on both sides (a diagnostic switch:
 * it rules the scheme in or out when hunting a lost wake-up). */
void wf_fence_init(void)
{
	static int done;
	if (done)
		return;
	done = 1;
	const char *v = getenv("WEFT_MEMBARRIER");
	if (v && strcmp(v, "0") == 0)
		return;
	long cmds = membarrier(MEMBARRIER_CMD_QUERY);
	if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED))
		return;
	/* Registering, then one real call: Valgrind and seccomp filters may
	 * accept the query and refuse the rest. */
	if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0 ||
	    membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0)
		return;
	wf_fence_asym = 1;
}

void wf_fence_heavy(void)
{
	if (!wf_fence_asym) {
		atomic_thread_fence(memory_order_seq_cst);
		return;
	}
	if (unlikely(membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0)) {
		/* A forked child may have lost the registration: renew it. The
		 * light side relies on this barrier, so there is no fallback. */
		if (errno != EPERM || membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0 ||
		    membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0)
			wf_panic("membarrier(PRIVATE_EXPEDITED) failed after it worked at "
				 "start-up: %s",
				 strerror(errno));
	}
}
