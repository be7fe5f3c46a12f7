/* weft-bench: weft's benchmarks, one program with subcommands.
 *
 *   weft-bench micro [options]   switch, create/join, park/unpark, fork-join
 *                                and memory costs next to pthreads and peers
 *   weft-bench sched [options]   schedulers per worker and POSIX priorities:
 *                                branch and bound under one scheduler or two,
 *                                wake-up latency of a high-priority thread
 *   weft-bench io [options]      blocking system calls: what a system call
 *                                section costs, pipe ping-pong and TCP echo
 *                                on pthreads, ULTs and under LD_PRELOAD
 *
 * Options are shared by the subcommands (see usage()). This file only parses
 * them and dispatches; statistics and output are in report.c, the trial loop
 * in harness.c, the benchmarks in one file per subcommand.
 */
#include "subcommands.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct subcommand {
	const char *name;
	int (*main)(const wb_opts_t *o);
	const char *help; /* NULL: hidden (used by weft-bench itself) */
};

static const struct subcommand subcommands[] = {
	{"micro", wb_micro_main,
	 "basic costs: create+join, yield, park/unpark ping-pong (one worker, two),\n"
	 "          fork-join fib, N threads alive (time + peak RSS), bare switches,\n"
	 "          CPU-bound ULTs made by one ULT reaching every worker;\n"
	 "          weft (asm and ucontext backends) vs glibc pthreads, glibc ucontext\n"
	 "          and, when built with Boost, Boost.Context and Boost.Fiber;\n"
	 "          synchronization: mutex, condvar and semaphore ping-pongs, 64 threads\n"
	 "          on one mutex (bound, and placed by the scheduler) and on one\n"
	 "          spinlock, 64 threads yielding, 10k sleepers, 1M ULTs blocked on a\n"
	 "          semaphore, and a TSP once per mutex waiting policy (spin,\n"
	 "          spin-park, park, adaptive)"},
	{"peers", wb_peers_main,
	 "micro's rows that have peers besides glibc, each in the same run: create+join,\n"
	 "          yield, mutex+condvar ping-pong on one worker, 64 unbound threads on\n"
	 "          one mutex, 1M threads blocked at once; against Boost.Fiber and\n"
	 "          Boost.Context, State Threads (libst-dev) and Go's goroutines\n"
	 "          (weft-peer-go, built when go is found), each left out with a note\n"
	 "          when absent at build time"},
	{"posix", wb_posix_main,
	 "one pthread program (weft-px-bench) under glibc and under\n"
	 "          LD_PRELOAD=libweft-pthread.so: create+join, mutex, condvar ping-pong"},
	{"sim", wb_sim_main,
	 "the seeds' simulation table: Producer-Consumer, Fibo20, TFMUL (weft-sim\n"
	 "          on posix, lite, context, quick, hybrid and SystemC) and master/worker,\n"
	 "          join chain (pthreads vs weft); each row a process of its own"},
	{"sched", wb_sched_main,
	 "schedulers per worker and POSIX priorities (the KSR paper's experiment):\n"
	 "          branch-and-bound knapsack with per-ULT work queues and communication\n"
	 "          ULTs (balancing, bound broadcast) under steal everywhere, share + prio\n"
	 "          on worker 0, and prio installed half-way; wake-up latency of a\n"
	 "          SCHED_FIFO ULT among 64 ready ones (prio, steal, share) vs a glibc\n"
	 "          SCHED_FIFO thread; exit status 1 on a wrong optimum"},
	{"io", wb_io_main,
	 "blocking system calls and system call sections (weft/io.h): getppid and a\n"
	 "          4 KiB pread plain and in a section, an empty section; pipe ping-pong\n"
	 "          and a thread-per-connection TCP echo over 127.0.0.1 (--conns) on\n"
	 "          glibc pthreads, weft ULTs with sections, and the pthread program\n"
	 "          (weft-io-prog) under LD_PRELOAD=libweft-pthread.so"},
	{"_chain", wb_micro_chain_child, NULL},
	{"_semwait", wb_sync_semwait_child, NULL},
};

static void usage(FILE *f, const char *argv0)
{
	fprintf(f, "usage: %s SUBCOMMAND [options]\n\nsubcommands:\n", argv0);
	for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
		if (subcommands[i].help)
			fprintf(f, "  %-7s %s\n", subcommands[i].name, subcommands[i].help);
	fprintf(f,
		"\noptions:\n"
		"  --json            JSON Lines on stdout: first a {\"meta\": {...}} object\n"
		"                    (machine, placement, sizes), then one object per row with\n"
		"                    bench, system, unit, median, min, max, trials, n, samples,\n"
		"                    ratio_vs_pthread (null if none), placement, note and\n"
		"                    row-specific numbers (peak_rss_kb, ratio_vs_swapcontext,\n"
		"                    ...); a failed row has \"error\" and null numbers\n"
		"  --trials N        measured trials per row after one warm-up (default 7)\n"
		"  --quick           small sizes and 3 trials: a smoke test of a few seconds\n"
		"  --only LIST       only benchmarks whose name contains one of the\n"
		"                    comma-separated LIST (e.g. yield,park)\n"
		"  --systems LIST    only systems whose name contains one of LIST\n"
		"                    (e.g. weft-asm,pthread)\n"
		"  --target-ms MS    wall time of one calibrated run (default 40)\n"
		"  --chain N         ULTs alive at once in the chain row (default 1000000)\n"
		"  --chain-pthread N pthreads alive at once in the chain row (default 10000)\n"
		"  --chain-trials N  at most N trials of the chain row, each a fresh process\n"
		"                    (default 3; fewer once a system's runs took 20 s)\n"
		"  --workers N       weft workers (default or 0: weft's, WEFT_WORKERS or all\n"
		"                    CPUs)\n"
		"  --pin 0|1         pin weft's workers (default or -1: weft's, WEFT_PIN)\n"
		"  --size X          sim: scale every model's size by X (default 1; --quick\n"
		"                    0.05)\n"
		"  --conns LIST      io: concurrent connections of the tcp_echo rows, one row\n"
		"                    group per comma-separated entry (default 1,100; --quick\n"
		"                    1,10), e.g. --conns 1,100,1000\n"
		"  --roundtrips M    io: round trips per connection (default: 5,000 in all\n"
		"                    divided among the connections, 10 to 2,000 each)\n"
		"  -h, --help        this text\n"
		"\nBenchmarks report; they never fail because something was slow. The exit\n"
		"status is 0 even when a row could not be measured (it says why).\n");
}

enum {
	OPT_JSON = 1000,
	OPT_TRIALS,
	OPT_QUICK,
	OPT_ONLY,
	OPT_SYSTEMS,
	OPT_TARGET,
	OPT_CHAIN,
	OPT_CHAIN_PT,
	OPT_CHAIN_TRIALS,
	OPT_WORKERS,
	OPT_PIN,
	OPT_SYSTEM,
	OPT_N,
	OPT_SIZE,
	OPT_CONNS,
	OPT_ROUNDTRIPS,
};

static long parse_long(const char *s, const char *opt, long lo, long hi)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
		fprintf(stderr, "weft-bench: %s: expected a number in [%ld, %ld], got '%s'\n", opt,
			lo, hi, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"json", no_argument, NULL, OPT_JSON},
		{"trials", required_argument, NULL, OPT_TRIALS},
		{"quick", no_argument, NULL, OPT_QUICK},
		{"only", required_argument, NULL, OPT_ONLY},
		{"systems", required_argument, NULL, OPT_SYSTEMS},
		{"target-ms", required_argument, NULL, OPT_TARGET},
		{"chain", required_argument, NULL, OPT_CHAIN},
		{"chain-pthread", required_argument, NULL, OPT_CHAIN_PT},
		{"chain-trials", required_argument, NULL, OPT_CHAIN_TRIALS},
		{"workers", required_argument, NULL, OPT_WORKERS},
		{"pin", required_argument, NULL, OPT_PIN},
		{"system", required_argument, NULL, OPT_SYSTEM}, /* hidden, _chain, _semwait */
		{"n", required_argument, NULL, OPT_N},           /* hidden, _chain, _semwait */
		{"size", required_argument, NULL, OPT_SIZE},
		{"conns", required_argument, NULL, OPT_CONNS},
		{"roundtrips", required_argument, NULL, OPT_ROUNDTRIPS},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	wb_opts_t o = {.trials = -1,
		       .target_ms = -1,
		       .chain_n = -1,
		       .chain_pthread_n = -1,
		       .chain_trials = -1,
		       .pin = -1};
	const struct subcommand *sub = NULL;
	int c;

	if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(argc < 2 ? stderr : stdout, argv[0]);
		return argc < 2 ? 2 : 0;
	}
	for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
		if (strcmp(argv[1], subcommands[i].name) == 0)
			sub = &subcommands[i];
	if (!sub) {
		fprintf(stderr, "weft-bench: unknown subcommand '%s'\n\n", argv[1]);
		usage(stderr, argv[0]);
		return 2;
	}

	optind = 2;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_JSON:
			o.json = 1;
			break;
		case OPT_TRIALS:
			o.trials = (int)parse_long(optarg, "--trials", 1, WB_MAX_TRIALS);
			break;
		case OPT_QUICK:
			o.quick = 1;
			break;
		case OPT_ONLY:
			o.only = optarg;
			break;
		case OPT_SYSTEMS:
			o.systems = optarg;
			break;
		case OPT_TARGET:
			o.target_ms = (double)parse_long(optarg, "--target-ms", 1, 100000);
			break;
		case OPT_CHAIN:
			o.chain_n = parse_long(optarg, "--chain", 1, 100000000);
			break;
		case OPT_CHAIN_PT:
			o.chain_pthread_n = parse_long(optarg, "--chain-pthread", 1, 10000000);
			break;
		case OPT_CHAIN_TRIALS:
			o.chain_trials =
				(int)parse_long(optarg, "--chain-trials", 1, WB_MAX_TRIALS);
			break;
		case OPT_WORKERS:
			o.workers = (int)parse_long(optarg, "--workers", 0, 4096);
			break;
		case OPT_PIN:
			o.pin = (int)parse_long(optarg, "--pin", -1, 1);
			break;
		case OPT_SYSTEM:
			o.child_system = optarg;
			break;
		case OPT_N:
			o.child_n = parse_long(optarg, "--n", 0, 1000000000);
			break;
		case OPT_SIZE: {
			char *end;
			o.size = strtod(optarg, &end);
			if (*end || !(o.size > 0 && o.size <= 1000)) {
				fprintf(stderr,
					"weft-bench: --size: expected a number in (0, 1000]\n");
				return 2;
			}
			break;
		}
		case OPT_CONNS:
			o.conns = optarg;
			break;
		case OPT_ROUNDTRIPS:
			o.roundtrips = parse_long(optarg, "--roundtrips", 1, 100000000);
			break;
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		default:
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "weft-bench: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}

	/* Defaults; --quick shrinks whatever was not given explicitly. */
	if (o.trials < 0)
		o.trials = o.quick ? 3 : 7;
	if (o.target_ms < 0)
		o.target_ms = o.quick ? 2 : 40;
	if (o.chain_n < 0)
		o.chain_n = o.quick ? 20000 : 1000000;
	if (o.chain_pthread_n < 0)
		o.chain_pthread_n = o.quick ? 1000 : 10000;
	if (o.chain_trials < 0)
		o.chain_trials = o.quick ? 1 : 3;
	return sub->main(&o);
}
