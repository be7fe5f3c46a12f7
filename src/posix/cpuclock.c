/* Per-ULT CPU time: pthread_getcpuclockid, and the clock_gettime and
 * clock_getres that understand its clocks.
 *
 * In a ULT, clock_gettime(CLOCK_THREAD_CPUTIME_ID) reads the ULT's clock too
 * (the kernel's would be its worker's).
 *
 * Counting is off until the first pthread_getcpuclockid or weft_cputime
 * call (or the first read of CLOCK_THREAD_CPUTIME_ID in a ULT, or start-up
 * with WEFT_CPU_CLOCK=1), so programs
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

/* w's cpu_clockid and run_start are read by other kernel threads
 * (wf_ult_cpu_ns) and set from 0 by another (wf_cpu_clock_start): relaxed
 * atomic accesses, here too. */
void wf_cpu_account(wf_worker_t *w, wf_ult_t *leaving)
{
	clockid_t clk = __atomic_load_n(&w->cpu_clockid, __ATOMIC_RELAXED);
	if (!clk) {
		if (WF_SYS(pthread_getcpuclockid)(WF_SYS(pthread_self)(), &clk))
			return;
		__atomic_store_n(&w->cpu_clockid, clk, __ATOMIC_RELAXED);
	}
	uint64_t now = thread_cpu_ns(clk);
	uint64_t start = __atomic_load_n(&w->run_start, __ATOMIC_RELAXED);
	if (leaving && start && now > start)
		atomic_fetch_add_explicit(&leaving->cpu_ns, now - start, memory_order_relaxed);
	__atomic_store_n(&w->run_start, now, __ATOMIC_RELAXED);
}

/* u's CPU time so far, including the run in progress if it is running. */
uint64_t wf_ult_cpu_ns(wf_ult_t *u)
{
	uint64_t t = atomic_load_explicit(&u->cpu_ns, memory_order_relaxed);
	/* Fields of u and of another worker that their owner writes meanwhile:
	 * relaxed atomic loads, a snapshot that may miss a switch under way. */
	int last = __atomic_load_n(&u->last_worker, __ATOMIC_RELAXED);
	if (last >= 0 && last < wf_rt.nworkers) {
		wf_worker_t *v = wf_rt.workers[last];
		uint64_t start = __atomic_load_n(&v->run_start, __ATOMIC_RELAXED);
		clockid_t clk = __atomic_load_n(&v->cpu_clockid, __ATOMIC_RELAXED);
		if (__atomic_load_n(&v->current, __ATOMIC_RELAXED) == u && start && clk) {
			uint64_t now = thread_cpu_ns(clk);
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
void wf_cpu_clock_start(void)
{
	if (atomic_exchange_explicit(&wf_rt.cpu_clock, 1, memory_order_acq_rel))
		return;
	/* Start every worker's current run now, so the ULTs running at this
	 * moment are charged from here on, not only from their next switch.
	 * A worker that switches meanwhile sets its own start (wf_cpu_account);
	 * the CASes from 0 leave that alone. */
	wf_worker_t *self = wf_worker_self();
	if (self)
		wf_cpu_account(self, NULL);
	for (int i = 0; i < wf_rt.nworkers; i++) {
		wf_worker_t *v = wf_rt.workers[i];
		clockid_t c, none_c = 0;
		uint64_t none = 0;
		if (v == self || WF_SYS(pthread_getcpuclockid)(v->thread, &c))
			continue;
		__atomic_compare_exchange_n(&v->cpu_clockid, &none_c, c, 0, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED);
		__atomic_compare_exchange_n(&v->run_start, &none, thread_cpu_ns(c), 0,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
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
	wf_cpu_clock_start();
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
