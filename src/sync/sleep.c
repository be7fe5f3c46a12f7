/* Sleeping: a ULT sleeps by waiting with a deadline on a word nobody wakes,
 * so its worker runs other ULTs meanwhile (timers in src/sched/timer.c). A foreign
 * thread sleeps in the kernel. */
#include <errno.h>

#include "sync/wait.h"
#include "util/sys.h"

/* Sleep until the CLOCK_MONOTONIC deadline (ns). A cancellation point;
 * EINTR if a signal sent to this ULT interrupted it (src/sync/signal.c). */
static int sleep_until(uint64_t deadline)
{
	wf_worker_t *w = wf_worker_self();
	if (!w || !w->current) {
		struct timespec ts = {.tv_sec = (time_t)(deadline / 1000000000u),
				      .tv_nsec = (long)(deadline % 1000000000u)};
		while (WF_SYS(clock_nanosleep)(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		return 0;
	}
	uint32_t never = 0;
	int rc;
	do
		rc = wf_wait(&never, 0, deadline, WF_WAIT_CANCEL | WF_WAIT_FOR(WF_BLOCK_SLEEP));
	while (rc == 0); /* nobody wakes it; a wake would be another's mistake */
	if (rc == ECANCELED)
		wf_cancel_act();
	return rc == ETIMEDOUT ? 0 : rc;
}

static uint64_t after(uint64_t ns)
{
	uint64_t now = wf_now_ns();
	return ns > UINT64_MAX / 2 - now ? UINT64_MAX / 2 : now + ns;
}

int weft_sleep_ns(uint64_t ns)
{
	if (ns == 0) {
		wf_testcancel();
		wf_yield();
		return 0;
	}
	return sleep_until(after(ns));
}

static int valid_rel(const struct timespec *ts)
{
	return ts && ts->tv_sec >= 0 && ts->tv_nsec >= 0 && ts->tv_nsec < 1000000000L;
}

int weft_nanosleep(const struct timespec *req, struct timespec *rem)
{
	if (!valid_rel(req))
		return EINVAL;
	uint64_t ns = (uint64_t)req->tv_sec > UINT64_MAX / 4 / 1000000000u
			      ? UINT64_MAX / 4
			      : (uint64_t)req->tv_sec * 1000000000u + (uint64_t)req->tv_nsec;
	if (ns == 0)
		return weft_sleep_ns(0);
	uint64_t deadline = after(ns);
	int rc = sleep_until(deadline);
	if (rem) {
		/* EINTR (a signal sent to this ULT): the time left; else none. */
		uint64_t now = wf_now_ns(),
			 left = rc == EINTR && deadline > now ? deadline - now : 0;
		rem->tv_sec = (time_t)(left / 1000000000u);
		rem->tv_nsec = (long)(left % 1000000000u);
	}
	return rc;
}

int weft_clock_nanosleep(clockid_t clock, int flags, const struct timespec *req,
			 struct timespec *rem)
{
	if (clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME)
		return EINVAL;
	if (flags & ~TIMER_ABSTIME)
		return EINVAL;
	if (!(flags & TIMER_ABSTIME))
		return weft_nanosleep(req, rem);
	uint64_t deadline;
	int e = wf_deadline(clock, req, &deadline);
	if (e)
		return e;
	return sleep_until(deadline);
}
