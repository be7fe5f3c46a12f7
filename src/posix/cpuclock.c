/* Per-ULT CPU time: pthread_getcpuclockid, and the clock_gettime and
 * clock_getres that understand its clocks.
 *
 * In a ULT, clock_gettime(CLOCK_THREAD_CPUTIME_ID) reads the ULT's clock too
 * (the kernel's would be its worker's).
 *
 * The counting itself is the scheduler's (src/sched/cpuclock.c): off until
 * the first pthread_getcpuclockid or weft_cputime call (or the first read
 * of CLOCK_THREAD_CPUTIME_ID in a ULT, or start-up with WEFT_CPU_CLOCK=1).
 *
 * A ULT's clock id is ~(tag << 3) with the three low bits set: the kernel
 * encodes CPU clocks the same way, but a clock type of 3 is one it
 * rejects, so the ids never collide. tag is the ULT's registry slot and
 * the low 6 bits of its serial, so a stale id is recognised (EINVAL) unless
 * 64 ULTs in a row reused the slot.
 */
#include <time.h>

#include "posix/posix.h"
#include "sched/cpuclock.h"
#include "sched/registry.h"
#include "sched/sched.h"

#define SLOT_BITS WF_SLOT_BITS
#define TAG_MASK  ((1u << 28) - 1)

static int is_ult_clock(clockid_t c)
{
	return c < 0 && (c & 7) == 7;
}

static wf_ult_t *ult_of_clock(clockid_t c)
{
	uint32_t tag = (uint32_t)(~c >> 3) & TAG_MASK;
	wf_ult_t *u = wf_registry_at(tag & ((1u << SLOT_BITS) - 1));
	if (!u || ((u->id >> SLOT_BITS) & 63) != tag >> SLOT_BITS)
		return NULL;
	return u;
}

WF_PX_API int WF_PX(pthread_getcpuclockid)(pthread_t t, clockid_t *c)
{
	if (!c)
		return EINVAL;
	if (!wf_px_is_ult(t))
		return WF_SYS(pthread_getcpuclockid)(t, c);
	weft_t id = wf_px_to_weft(t);
	if (!wf_registry_find(id))
		return ESRCH;
	wf_cpu_clock_start();
	uint32_t tag = (uint32_t)(((id >> SLOT_BITS) & 63) << SLOT_BITS) |
		       (uint32_t)(id & ((1u << SLOT_BITS) - 1));
	*c = (clockid_t) ~(int32_t)(tag << 3);
	return 0;
}

WF_PX_API int WF_PX(clock_getres)(clockid_t c, struct timespec *res);

WF_PX_API int WF_PX(clock_gettime)(clockid_t c, struct timespec *ts)
{
	if (unlikely(!ts)) {
		/* The system call's answers: EINVAL for a clock it does not
		 * know, then EFAULT (the vDSO's would fault). */
		if (WF_PX(clock_getres)(c, NULL) == 0)
			errno = EFAULT;
		return -1;
	}
	wf_worker_t *w;
	if (c == CLOCK_THREAD_CPUTIME_ID && (w = wf_worker_self()) && w->current) {
		/* In a ULT, "this thread" is the ULT, not its worker. */
		wf_cpu_clock_start();
		uint64_t t = wf_ult_cpu_ns(w->current);
		ts->tv_sec = (time_t)(t / 1000000000u);
		ts->tv_nsec = (long)(t % 1000000000u);
		return 0;
	}
	if (!is_ult_clock(c))
		return WF_SYS(clock_gettime)(c, ts);
	wf_ult_t *u = ult_of_clock(c);
	if (!u || !ts) {
		errno = EINVAL;
		return -1;
	}
	uint64_t t = wf_ult_cpu_ns(u);
	ts->tv_sec = (time_t)(t / 1000000000u);
	ts->tv_nsec = (long)(t % 1000000000u);
	return 0;
}

WF_PX_API int WF_PX(clock_getres)(clockid_t c, struct timespec *res)
{
	if (!is_ult_clock(c))
		return WF_SYS(clock_getres)(c, res);
	if (!ult_of_clock(c)) {
		errno = EINVAL;
		return -1;
	}
	if (res)
		*res = (struct timespec){0, 1};
	return 0;
}
