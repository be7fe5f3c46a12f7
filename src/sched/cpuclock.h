/* Per-ULT CPU time, counted by the scheduler (cpuclock.c). */
#ifndef WF_SCHED_CPUCLOCK_H
#define WF_SCHED_CPUCLOCK_H

#include <stdint.h>
#include <time.h>

#include "sched/ult.h"

struct wf_worker;

/* Charge the ULT leaving w (NULL: none) and start timing the next run.
 * Called by w's owner at every switch while counting is on, and followed by
 * wf_cpu_account_end once w's current ULT is the next one. */
WF_HIDDEN void wf_cpu_account(struct wf_worker *w, wf_ult_t *leaving);
WF_HIDDEN void wf_cpu_account_end(struct wf_worker *w);
/* w's carrier changed: its clock is clk (0: not known). Opens w's cpu_seq
 * as wf_cpu_account does; the caller closes it (wf_cpu_account_end). */
WF_HIDDEN void wf_cpu_carrier(struct wf_worker *w, clockid_t clk);
/* Start counting (idempotent). */
WF_HIDDEN void wf_cpu_clock_start(void);
/* u's CPU time so far, the run in progress included (any thread). */
WF_HIDDEN uint64_t wf_ult_cpu_ns(wf_ult_t *u);

#endif
