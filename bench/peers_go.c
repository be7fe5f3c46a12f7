/* Go's goroutines as a peer (bench/peers_go/main.go, built into
 * weft-peer-go when CMake finds the go command: WB_HAVE_GO). weft-bench
 * runs the weft-peer-go beside it (in the build tree and installed), or the
 * one WEFT_BENCH_GO_PEER names. Each
 * run is a process of its own - the Go runtime's GOMAXPROCS and peak RSS
 * belong to that benchmark alone - which times its own loop, so process
 * start-up is not counted. See peers.h. */
#include "harness.h"
#include "peers.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int wb_go_run(const char *bench, long n, wb_go_result_t *res, char *err, size_t errlen)
{
#if !WB_HAVE_GO
	(void)bench, (void)n, (void)res;
	snprintf(err, errlen, "skipped: weft-bench was built without Go (no go command)");
	return ENOSYS;
#else
	char prog[4096], nbuf[32], out[1024];
	int status, rc;
	struct rusage ru;

	const char *env = getenv("WEFT_BENCH_GO_PEER");
	if (env) {
		snprintf(prog, sizeof prog, "%s", env);
	} else {
		ssize_t len = readlink("/proc/self/exe", prog, sizeof prog - sizeof "weft-peer-go");
		prog[len > 0 ? len : 0] = '\0';
		char *slash = strrchr(prog, '/');
		strcpy(slash ? slash + 1 : prog, "weft-peer-go");
	}
	snprintf(nbuf, sizeof nbuf, "%ld", n);
	char *argv[] = {prog, (char *)bench, nbuf, NULL};
	if ((rc = wb_spawn_read(argv, 1, out, sizeof out, &status, &ru, err, errlen)))
		return rc;
	if (WIFSIGNALED(status)) {
		snprintf(err, errlen, "weft-peer-go killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
		return EIO;
	}
	long long el, pre, block;
	if (WEXITSTATUS(status) != 0 ||
	    sscanf(out, "elapsed_ns=%lld pre_rss_kb=%lld block_ns=%lld", &el, &pre, &block) != 3) {
		out[strcspn(out, "\n")] = '\0';
		snprintf(err, errlen, "weft-peer-go %s exited %d: %.200s", bench,
			 WEXITSTATUS(status), out);
		return EIO;
	}
	res->elapsed_ns = el;
	res->pre_rss_kb = pre;
	res->block_ns = block;
	res->peak_rss_kb = ru.ru_maxrss;
	return 0;
#endif
}

static const char *const go_bench[] = {
	[WB_GO_CREATE_JOIN] = "create_join",     [WB_GO_YIELD] = "yield",
	[WB_GO_CHAN_PINGPONG] = "chan_pingpong", [WB_GO_COND_PINGPONG] = "cond_pingpong",
	[WB_GO_MUTEX_HAMMER] = "mutex_hammer",   [WB_GO_ALIVE] = "alive",
};

int wb_go_case(const wb_case_t *c, long n, wb_sample_t *s)
{
	wb_go_result_t g;
	int b = (int)c->iarg[0];
	int rc = wb_go_run(go_bench[b], n, &g, s->error, sizeof s->error);
	if (rc)
		return rc;
	s->elapsed_ns = (double)g.elapsed_ns;
	if (b == WB_GO_ALIVE) {
		s->value = (double)g.elapsed_ns / 1e9;
		wb_sample_extra(s, "peak_rss_kb", (double)g.peak_rss_kb);
		wb_sample_extra(s, "ns_per_thread", (double)g.elapsed_ns / (double)n);
		wb_sample_extra(s, "rss_kb_per_thread",
				(double)(g.peak_rss_kb - g.pre_rss_kb) / (double)n);
		wb_sample_extra(s, "block_ms", (double)g.block_ns / 1e6);
	} else {
		double per = c->iarg[1] > 0 ? (double)c->iarg[1] : 1.0;
		s->value = (double)g.elapsed_ns / ((double)n * per);
	}
	return 0;
}
