/* Entry points of weft-bench's subcommands; weft-bench.c dispatches to them.
 * Each returns the process exit status. */
#ifndef WB_SUBCOMMANDS_H
#define WB_SUBCOMMANDS_H

#include "harness.h"

/* micro.c: switch, create/join, park/unpark, fork-join and memory rows. */
int wb_micro_main(const wb_opts_t *o);
/* micro.c: "peers": micro's rows that have peers besides glibc (Boost,
 * State Threads, Go), unless --only chooses others. */
int wb_peers_main(const wb_opts_t *o);
/* micro.c: which peers this weft-bench was built with, and which were left
 * out and why (the report's "peers" line). */
const char *wb_peers_built(void);
/* micro.c, hidden "_chain": one run of the chain row in a fresh process, so
 * its peak RSS is its own. Prints "elapsed_ns=... pre_rss_kb=..." on stdout. */
int wb_micro_chain_child(const wb_opts_t *o);
/* micro.c: a run_fn that starts weft (the case's context backend, the
 * options' workers and pinning), runs c->inner and shuts weft down. */
int wb_weft_session(const wb_case_t *c, long n, wb_sample_t *s);

/* sync.c: the synchronization rows of micro (mutex, condvar, semaphore,
 * sleep, adaptive locks), printed to r; nworkers is weft's worker count as
 * micro's probe found it. closing gets a text note for after the table
 * (adaptive_tsp's verdict), or "". */
void wb_sync_rows(const wb_opts_t *o, wb_report_t *r, int nworkers, char *closing,
		  size_t closing_len);
/* sync.c, hidden "_semwait": one run of the sem_1m row in a fresh process.
 * Prints "elapsed_ns=... pre_rss_kb=... block_ns=..." on stdout. */
int wb_sync_semwait_child(const wb_opts_t *o);

/* posix.c: one pthread program (weft-px-bench) under glibc and under
 * LD_PRELOAD=libweft-pthread.so, as ratios. */
int wb_posix_main(const wb_opts_t *o);

/* sim.c: the simulation table (bench/sim/models.h), each row one run of
 * weft-sim-run or weft-sim-systemc in a process of its own. */
int wb_sim_main(const wb_opts_t *o);

/* sched.c: installable schedulers and POSIX priorities: a branch-and-bound
 * search with communication ULTs under one scheduler or two (the KSR
 * paper's experiment), and the wake-up latency of a SCHED_FIFO thread among
 * 64 ready ones next to glibc pthreads. Exit status 1 if a search found a
 * wrong optimum. */
int wb_sched_main(const wb_opts_t *o);

/* io.c: blocking system calls and system call sections (weft/io.h): the
 * cost of a section, pipe ping-pong and TCP echo on glibc pthreads, weft
 * ULTs with sections and weft-io-prog under LD_PRELOAD=libweft-pthread.so. */
int wb_io_main(const wb_opts_t *o);

#endif
