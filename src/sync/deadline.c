/* Deadlines: an absolute timespec on a clock, as a CLOCK_MONOTONIC
 * deadline in nanoseconds (the form wf_wait and the timers take). */
#include <errno.h>

#include "sync/wait.h"

int wf_deadline(clockid_t clock, const struct timespec *abstime, uint64_t *out)
{
	if (!abstime || abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L)
		return EINVAL;
	if (clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME)
		return EINVAL;
	struct timespec now;
	clock_gettime(clock, &now);
	int64_t rel_s = (int64_t)abstime->tv_sec - (int64_t)now.tv_sec;
	int64_t rel_ns = (int64_t)abstime->tv_nsec - (int64_t)now.tv_nsec;
	if (rel_s < 0 || (rel_s == 0 && rel_ns <= 0)) {
		*out = 1; /* already past */
		return 0;
	}
	/* A realtime deadline is measured on the monotonic clock from now on:
	 * setting the wall clock later does not move it. */
	uint64_t mono = clock == CLOCK_MONOTONIC
				? (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec
				: wf_now_ns();
	if (rel_s > (int64_t)(UINT64_MAX / 4 / 1000000000u)) {
		*out = UINT64_MAX / 2; /* centuries: as good as never */
		return 0;
	}
	*out = mono + (uint64_t)(rel_s * 1000000000 + rel_ns);
	return 0;
}
