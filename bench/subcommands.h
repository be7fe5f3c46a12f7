/* Entry points of weft-bench's subcommands; weft-bench.c dispatches to them.
 * Each returns the process exit status. */
#ifndef WB_SUBCOMMANDS_H
#define WB_SUBCOMMANDS_H

#include "harness.h"

/* micro.c: switch, create/join, park/unpark, fork-join and memory rows. */
int wb_micro_main(const wb_opts_t *o);
/* micro.c, hidden "_chain": one run of the chain row in a fresh process, so
 * its peak RSS is its own. Prints "elapsed_ns=... pre_rss_kb=..." on stdout. */
int wb_micro_chain_child(const wb_opts_t *o);

#endif
