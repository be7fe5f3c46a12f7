/* The epoll backend of the poller (io.h, wf_io_backend_t).
 *
 * One epoll instance holds every descriptor a ULT waits for, each with
 * EPOLLONESHOT: a report disables it until the next arm, so one event wakes
 * the waiters once and the poller never loops on a descriptor nobody
 * waits for. Level-triggered: an arm of a descriptor that is ready
 * already reports at once, which closes the window between a waiter's
 * look at the descriptor and its arm (poller.c). An eventfd in the same
 * instance is the kick.
 *
 * Why epoll and not io_uring: a waiter needs readiness, not the transfer -
 * the program's own call (its read, with its flags, on its descriptor)
 * follows - and epoll gives readiness with one system call per arm and one
 * per batch of reports, from any kernel weft runs on. io_uring would let
 * the transfer itself be queued, but the call would then not be the
 * program's, and its polls are per request (one submission per wait, as
 * here). A backend for it is a new file behind the same table.
 *
 * Several threads may wait at once - the worker that sleeps here blocking,
 * busy workers and the watchdog without blocking (poller.c) - and the
 * kernel gives each report to one of them.
 *
 * System calls are raw: libweft-pthread.so defines epoll_wait, read and
 * write itself, and the poller must not go through them.
 */
#include <errno.h>
#include <limits.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "io/io.h"

static int epfd = -1;
static int kickfd = -1;

#define KICK_TAG (-1) /* data.fd of the eventfd's registration */

static int ep_open(void)
{
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		return errno == EMFILE || errno == ENFILE ? EAGAIN : ENOMEM;
	kickfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = KICK_TAG};
	if (kickfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, kickfd, &ev) != 0) {
		int e = errno == EMFILE || errno == ENFILE ? EAGAIN : ENOMEM;
		if (kickfd >= 0)
			close(kickfd);
		close(epfd);
		epfd = kickfd = -1;
		return e;
	}
	return 0;
}

static int ep_arm(int fd, uint32_t events, int *added)
{
	/* Exactly what is waited for: a report the waiter does not find true
	 * when it looks again (EPOLLPRI for a read) would make it arm again
	 * at once, and again. */
	struct epoll_event ev = {.events = EPOLLONESHOT, .data.fd = fd};
	if (events & WF_IO_IN)
		ev.events |= EPOLLIN;
	if (events & WF_IO_OUT)
		ev.events |= EPOLLOUT;
	if (events & WF_IO_PRI)
		ev.events |= EPOLLPRI;
	if (events & WF_IO_RDHUP)
		ev.events |= EPOLLRDHUP;
	/* MOD first when fd was added before; the descriptor may have been
	 * closed since (the kernel drops it from the instance then) and its
	 * number reused: then ENOENT, and ADD. The other way round, EEXIST. */
	int op = *added ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	for (int tries = 0; tries < 2; tries++) {
		if (epoll_ctl(epfd, op, fd, &ev) == 0) {
			*added = op == EPOLL_CTL_MOD ? 2 : 1;
			return 0;
		}
		if (errno == ENOENT)
			op = EPOLL_CTL_ADD;
		else if (errno == EEXIST)
			op = EPOLL_CTL_MOD;
		else
			break;
	}
	*added = 0;
	switch (errno) {
	case EPERM:
	case EBADF:
	case ENOSPC:
		return errno;
	default:
		return ENOMEM;
	}
}

static int ep_wait(wf_io_event_t *out, int max, int64_t timeout_ns, int drain)
{
	struct epoll_event ev[WF_IO_BATCH];
	if (max > WF_IO_BATCH)
		max = WF_IO_BATCH;
	long n;
	if (timeout_ns == 0) {
		n = syscall(SYS_epoll_pwait, epfd, ev, max, 0, NULL, 8);
	} else {
		/* epoll_pwait2 (Linux 5.11) takes the timeout to the
		 * nanosecond; before it, milliseconds rounded up. */
		static atomic_int no_pwait2;
		n = -1;
		errno = ENOSYS;
		if (!atomic_load_explicit(&no_pwait2, memory_order_relaxed)) {
			struct timespec ts = {(time_t)(timeout_ns / 1000000000),
					      (long)(timeout_ns % 1000000000)};
			n = syscall(SYS_epoll_pwait2, epfd, ev, max, timeout_ns < 0 ? NULL : &ts,
				    NULL, 8);
			if (n < 0 && errno == ENOSYS)
				atomic_store_explicit(&no_pwait2, 1, memory_order_relaxed);
		}
		if (n < 0 && errno == ENOSYS) {
			int ms = timeout_ns < 0 ? -1
				 : timeout_ns >= (int64_t)INT_MAX * 1000000
					 ? INT_MAX
					 : (int)((timeout_ns + 999999) / 1000000);
			n = syscall(SYS_epoll_pwait, epfd, ev, max, ms, NULL, 8);
		}
	}
	int k = 0;
	for (long i = 0; i < n; i++) {
		if (ev[i].data.fd == KICK_TAG) {
			/* Only the sleeper drains the kick: a harvest that is
			 * not the sleeper's leaves it readable (level-triggered,
			 * so the kernel wakes the sleeper for it again). */
			if (drain) {
				uint64_t v;
				syscall(SYS_read, kickfd, &v, sizeof v); /* non-blocking */
			}
			continue;
		}
		out[k++].fd = ev[i].data.fd;
	}
	return k;
}

static void ep_kick(void)
{
	uint64_t one = 1;
	syscall(SYS_write, kickfd, &one, sizeof one);
}

static void ep_close(void)
{
	close(kickfd);
	close(epfd);
	epfd = kickfd = -1;
}

const wf_io_backend_t wf_io_epoll = {
	.name = "epoll",
	.open = ep_open,
	.arm = ep_arm,
	.wait = ep_wait,
	.kick = ep_kick,
	.close = ep_close,
};
