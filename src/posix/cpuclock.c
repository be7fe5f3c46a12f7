/* Per-ULT CPU time: pthread_getcpuclockid, and the clock_gettime and
 * clock_getres that understand its clocks.
 *
 * In a ULT, clock_gettime(CLOCK_THREAD_CPUTIME_ID) reads the ULT's clock too
 * (the kernel's would be its worker's).
 *
 * Counting is off until the first pthread_getcpuclockid call (or the first
 * read of CLOCK_THREAD_CPUTIME_ID in a ULT), so programs
 * that never ask pay nothing. From then on every switch on a worker
 * charges the ULT that leaves it with the worker's kernel-thread CPU time
 * since that ULT started running there (wf_cpu_account, called by the
 * scheduler). Time a ULT ran before counting started is not seen.
 *
 * A ULT's clock id is ~(tag << 3) with the three low bits set: the kernel
 * encodes CPU clocks the same way, but a clock type of 3 is one it
 * rejects, so the ids never collide. tag is the ULT's registry slot and
 * the low 6 bits of its serial, so a stale id is recognised (EINVAL) unless
 * 64 ULTs in a row reused the slot.
 */
#include <time.h>

#include "posix/posix.h"
#include "sched/sched.h"

#define SLOT_BITS 22
#define TAG_MASK  ((1u << 28) - 1)

static int is_ult_clock(clockid_t c)
{
	return c < 0 && (c & 7) == 7;
}

static uint64_t thread_cpu_ns(clockid_t c)
{
	struct timespec ts;
	if (WF_SYS(clock_gettime)(c, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void wf_cpu_account(wf_worker_t *w, wf_ult_t *leaving)
{
	if (!w->cpu_clockid &&
	    WF_SYS(pthread_getcpuclockid)(WF_SYS(pthread_self)(), &w->cpu_clockid))
		return;
	uint64_t now = thread_cpu_ns(w->cpu_clockid);
	if (leaving && w->run_start)
		atomic_fetch_add_explicit(&leaving->cpu_ns, now - w->run_start,
					  memory_order_relaxed);
	w->run_start = now;
}

/* u's CPU time so far, including the run in progress if it is running. */
static uint64_t ult_cpu_ns(wf_ult_t *u)
{
	uint64_t t = atomic_load_explicit(&u->cpu_ns, memory_order_relaxed);
	int last = u->last_worker;
	if (last >= 0 && last < wf_rt.nworkers) {
		wf_worker_t *v = wf_rt.workers[last];
		uint64_t start = v->run_start;
		if (v->current == u && start && v->cpu_clockid) {
			uint64_t now = thread_cpu_ns(v->cpu_clockid);
			if (now > start)
				t += now - start;
		}
	}
	return t;
}

static wf_ult_t *ult_of_clock(clockid_t c)
{
	uint32_t tag = (uint32_t)(~c >> 3) & TAG_MASK;
	wf_ult_t *u = wf_registry_at(tag & ((1u << SLOT_BITS) - 1));
	if (!u || ((u->id >> SLOT_BITS) & 63) != tag >> SLOT_BITS)
		return NULL;
	return u;
}

/* Start counting (the first pthread_getcpuclockid, or the first read of
 * CLOCK_THREAD_CPUTIME_ID in a ULT). */
static void start_counting(void)
{
	if (!atomic_exchange_explicit(&wf_rt.cpu_clock, 1, memory_order_acq_rel)) {
		/* Start the caller's run now: its time from here on counts. */
		wf_worker_t *w = wf_worker_self();
		if (w)
			wf_cpu_account(w, NULL);
	}
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
	start_counting();
	uint32_t tag = (uint32_t)(((id >> SLOT_BITS) & 63) << SLOT_BITS) |
		       (uint32_t)(id & ((1u << SLOT_BITS) - 1));
	*c = (clockid_t) ~(int32_t)(tag << 3);
	return 0;
}

WF_PX_API int WF_PX(clock_gettime)(clockid_t c, struct timespec *ts)
{
	wf_worker_t *w;
	if (c == CLOCK_THREAD_CPUTIME_ID && (w = wf_worker_self()) && w->current) {
		/* In a ULT, "this thread" is the ULT, not its worker. */
		start_counting();
		uint64_t t = ult_cpu_ns(w->current);
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
	uint64_t t = ult_cpu_ns(u);
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
