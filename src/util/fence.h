/* Asymmetric fences: a cheap side for hot paths, an expensive one for rare
 * paths, that together order like a full fence on both sides.
 *
 * The runtime has several store-buffering (Dekker) patterns where one side
 * runs all the time and the other rarely:
 *   - whoever queues work stores it, then reads whether a worker sleeps;
 *     a worker going to sleep announces it, then re-checks every queue
 *     (sched.c, worker.c);
 *   - a joiner clears its join link, then reads whether a cycle walker is
 *     out; a walker announces itself, then follows links (ult.c).
 * Each side needs a StoreLoad fence between its store and its load. A full
 * fence costs a locked instruction (~10 ns here) on every queued ULT and
 * every join. Instead the frequent side issues only a compiler barrier
 * (wf_fence_light) and the rare side calls membarrier(2) with
 * MEMBARRIER_CMD_PRIVATE_EXPEDITED (wf_fence_heavy), which runs a full
 * memory barrier on every CPU currently running a thread of this process
 * (a thread not running has passed through a context switch, itself a full
 * barrier). Then for a light side L (store x; light; load y) and a heavy
 * side H (store y; heavy; load x): the barrier lands in L's program either
 * before its store - which is then visible to H's load - or after it, and
 * then also before L's load, which sees H's store (made visible before
 * membarrier interrupts anyone). One of the two sees the other, as with two
 * full fences. This is the scheme of liburcu and of folly's
 * asymmetricHeavyBarrier.
 *
 * If membarrier is missing or refused (old kernels, seccomp, Valgrind),
 * wf_fence_init leaves the light side a full fence, and the heavy side is
 * one too. The choice is made once, before any worker starts.
 */
#ifndef WF_UTIL_FENCE_H
#define WF_UTIL_FENCE_H

#include "util/util.h"

/* 1 once membarrier is registered and works (wf_fence_init). Written
 * before the workers start, read-only afterwards. */
WF_HIDDEN extern int wf_fence_asym;

/* Choose the fence scheme; idempotent. Called at runtime start-up, before
 * any worker runs. */
WF_HIDDEN void wf_fence_init(void);

/* The frequent side: a compiler barrier (a full fence without membarrier). */
static inline void wf_fence_light(void)
{
	if (likely(wf_fence_asym))
		atomic_signal_fence(memory_order_seq_cst);
	else
		atomic_thread_fence(memory_order_seq_cst);
}

/* The rare side: a full fence on every CPU running this process (a system
 * call and an interrupt per such CPU: microseconds). */
WF_HIDDEN void wf_fence_heavy(void);

#endif
