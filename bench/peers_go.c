/* Go's goroutines as a peer (bench/peers_go/main.go, built into
 * weft-peer-go when CMake finds the go command: WB_GO_PEER names it). Each
 * run is a process of its own - the Go runtime's GOMAXPROCS and peak RSS
 * belong to that benchmark alone - which times its own loop, so process
 * start-up is not counted. See peers.h. */
#include "harness.h"
#include "peers.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int wb_go_run(const char *bench, long n, wb_go_result_t *res, char *err, size_t errlen)
{
#ifndef WB_GO_PEER
	(void)bench, (void)n, (void)res;
	snprintf(err, errlen, "skipped: weft-bench was built without Go (no go command)");
	return ENOSYS;
#else
	char nbuf[32], out[1024];
	int fds[2], status, rc;
	pid_t pid;
	struct rusage ru;
	posix_spawn_file_actions_t fa;
	ssize_t got = 0;

	snprintf(nbuf, sizeof nbuf, "%ld", n);
	char *argv[] = {(char *)WB_GO_PEER, (char *)bench, nbuf, NULL};
	if (pipe(fds) != 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return errno;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, fds[1], STDERR_FILENO);
	posix_spawn_file_actions_addclose(&fa, fds[0]);
	posix_spawn_file_actions_addclose(&fa, fds[1]);
	rc = posix_spawn(&pid, WB_GO_PEER, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	if (rc) {
		close(fds[0]);
		snprintf(err, errlen, "posix_spawn %s: %s", WB_GO_PEER, strerror(rc));
		return rc;
	}
	while (got < (ssize_t)sizeof out - 1) {
		ssize_t r = read(fds[0], out + got, sizeof out - 1 - (size_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += r;
	}
	out[got] = '\0';
	close(fds[0]);
	while (wait4(pid, &status, 0, &ru) < 0)
		if (errno != EINTR) {
			snprintf(err, errlen, "wait4: %s", strerror(errno));
			return errno;
		}
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
