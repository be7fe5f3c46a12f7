/* weft-io-prog: the blocking I/O workloads of `weft-bench io` (io_work.c)
 * as a plain pthread program, no weft header, which weft-bench runs under
 * glibc and under LD_PRELOAD=libweft-pthread.so: the same binary both
 * times, its read/write/accept/connect made in system call sections by the
 * library's wrappers in the second.
 *
 * usage: weft-io-prog pipe N DEADLINE_S
 *        weft-io-prog tcp CONNS ROUNDTRIPS DEADLINE_S
 * Prints one line, "elapsed_ns=... done=... threads=... same_cpu=..."
 * (io_work.h's wk_result_t), or "error=..." with exit status 1.
 * A run still going after DEADLINE_S seconds is ended by SIGALRM: under
 * LD_PRELOAD every kernel thread may be stuck in a read, so no thread of
 * the program's own could end it.
 */
#include "io_work.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long arg(const char *s, long lo, long hi)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
		printf("error=bad argument '%s'\n", s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	wk_result_t r;
	int rc;

	if (argc == 4 && strcmp(argv[1], "pipe") == 0) {
		long n = arg(argv[2], 1, 1000000000);
		alarm((unsigned)arg(argv[3], 1, 3600));
		rc = wk_pipe_pingpong(&wk_pthread_ops, n, 0, &r);
	} else if (argc == 5 && strcmp(argv[1], "tcp") == 0) {
		int conns = (int)arg(argv[2], 1, 100000);
		long rts = arg(argv[3], 1, 1000000000);
		alarm((unsigned)arg(argv[4], 1, 3600));
		signal(SIGPIPE, SIG_IGN); /* a write to a socket shut down by a failure */
		rc = wk_raise_nofile(WK_TCP_FDS(conns));
		if (rc) {
			printf("error=%d connections need %ld descriptors; RLIMIT_NOFILE's hard "
			       "limit is lower\n",
			       conns, WK_TCP_FDS(conns));
			return 1;
		}
		rc = wk_tcp_echo(&wk_pthread_ops, conns, rts, 0, &r);
	} else {
		fprintf(stderr,
			"usage: %s pipe N DEADLINE_S\n"
			"       %s tcp CONNS ROUNDTRIPS DEADLINE_S\n",
			argv[0], argv[0]);
		return 2;
	}
	if (rc) {
		printf("error=%s\n", r.error);
		return 1;
	}
	printf("elapsed_ns=%lld done=%ld threads=%ld same_cpu=%ld\n", (long long)r.elapsed_ns,
	       r.done, r.threads, r.same_cpu);
	return 0;
}
