/* libweft-pthread.so only (WEFT_PRELOAD): the program's blocking system
 * calls, made so that a thread blocked in the kernel never holds a worker.
 *
 * Two ways, by what the call waits for:
 *
 *   a descriptor   read, write, recv, send, accept, poll, select,
 *                  epoll_wait and their kin. On a ULT, with the poller on
 *                  (src/io/poller.c): look at the descriptor first - a poll
 *                  with no timeout, or for recv* the call itself with
 *                  MSG_DONTWAIT - and when it is not ready, park the ULT on
 *                  the poller until it is; then make the program's call.
 *   anything else  (and a descriptor the poller cannot take) the call is
 *                  made inside a system call section (src/sched/carrier.c):
 *                  past the threshold (WEFT_SYSCALL_NS) its worker is
 *                  handed to a spare kernel thread and the others go on.
 *
 * The program's semantics stay libc's, because the call that does the
 * work is always libc's own, with the program's arguments: a descriptor
 * the program made non-blocking (O_NONBLOCK, MSG_DONTWAIT) is never parked
 * for; a socket with a receive or send timeout (SO_RCVTIMEO, SO_SNDTIMEO)
 * waits in the kernel, which times it; poll and epoll_wait keep their
 * timeouts (the poller's wait has the deadline). A signal sent to the
 * parked thread (pthread_kill) runs its handler, and the call then returns
 * EINTR, or goes on waiting if every handler that ran was installed with
 * SA_RESTART and the call is one the kernel restarts (signal(7); poll and
 * epoll_wait never are). A ready descriptor may be taken by another thread
 * before the call: then the call blocks, inside a section.
 *
 * Each wrapper is the libc function of the same name, found as the next
 * definition after this library's (dlsym(RTLD_NEXT)) on first use. Off a
 * ULT (a foreign thread, a worker's loop) it is libc's call alone. The
 * calls that POSIX makes cancellation points act on a pending cancellation
 * first, as glibc's do, and while parked.
 *
 * What this cannot see: calls libc makes to itself (fread's read, system's
 * waitpid, getaddrinfo's sockets go through libc-internal names), system
 * calls made with syscall(2) or inline (libgomp's futex waits), and the
 * header mode (include/weft/compat renames the pthread and signal calls
 * only: the sigwait family and sigsuspend are src/posix/sigaction.c's). Those
 * still block their worker while they last; docs/posix-coverage.md,
 * "Blocking system calls".
 *
 * Cost: a section is two atomic operations; a descriptor call on a ULT
 * adds the look (one poll system call, none for recv*), and a wait adds
 * an arm (epoll_ctl) and the poller's wake-up.
 */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/io.h"
#include "posix/posix.h"
#include "sched/carrier.h"
#include "sync/wait.h"
#include "util/sys.h"

/* A wrapper that makes the call in a section. cancel: a cancellation
 * point. */
#define WF_BLOCKING(cancel, ret, name, params, args)  \
	WF_PX_API ret name params                     \
	{                                             \
		WF_REAL(wf_f_, ret, name, params)     \
		if (cancel)                           \
			wf_testcancel();              \
		wf_ult_t *wf_u_ = wf_section_begin(); \
		ret wf_r_ = wf_f_ args;               \
		wf_section_end(wf_u_);                \
		return wf_r_;                         \
	}

/* ---- waiting on the poller ------------------------------------------------ */

/* One wait of the calling ULT for fd, found not ready for ev. Returns 1
 * (woken: look again), 0 (make the call as it is: fd is non-blocking or
 * has a timeout - the call returns at once, or the kernel times it - or
 * the poller cannot take it), or -1 with errno (EINTR). Acts on a
 * cancellation. */
static int wait_once(int fd, uint32_t ev, int restart)
{
	wf_ult_t *u = wf_worker_self()->current;
	u->sig_ran = 0;
	int e = wf_io_wait(fd, ev, 0, WF_WAIT_CANCEL | WF_IO_IFBLOCKS);
	switch (e) {
	case 0:
		return 1;
	case ECANCELED:
		wf_cancel_act(); /* no return */
	case EINTR:
		if (restart && wf_sig_restarts(u))
			return 1;
		errno = EINTR;
		return -1;
	default:
		return 0; /* WF_IO_NOWAIT, EPERM, EBADF, ENOMEM, ENOTSUP */
	}
}

/* Before a call on fd that would block until fd is ready for ev: on a ULT
 * with the poller, park until it is. 0: make the call; -1: return -1
 * (errno is set). */
static int await_ready(int fd, uint32_t ev)
{
	if (!ev || !wf_io_usable())
		return 0;
	for (;;) {
		if (wf_io_ready(fd, ev))
			return 0;
		int w = wait_once(fd, ev, 1);
		if (w <= 0)
			return w;
	}
}

/* A call that waits for fd (ev): park until it is ready, then the call in a
 * section (another thread may take what was ready first). */
#define WF_FD_CALL(ret, name, params, args, fd, ev)   \
	WF_PX_API ret name params                     \
	{                                             \
		WF_REAL(wf_f_, ret, name, params)     \
		wf_testcancel();                      \
		if (await_ready(fd, ev) < 0)          \
			return -1;                    \
		wf_ult_t *wf_u_ = wf_section_begin(); \
		ret wf_r_ = wf_f_ args;               \
		wf_section_end(wf_u_);                \
		return wf_r_;                         \
	}

/* recv and its kin: try the call with MSG_DONTWAIT first, which costs no
 * look. With MSG_WAITALL, park until something came, then the call in a
 * section (the rest may come later); with MSG_DONTWAIT, just the call. */
#define WF_RECV(name, params, args, dontwait_args)                                           \
	WF_PX_API ssize_t name params                                                        \
	{                                                                                    \
		WF_REAL(wf_f_, ssize_t, name, params)                                        \
		wf_testcancel();                                                             \
		if ((fl & (MSG_DONTWAIT | MSG_WAITALL)) == MSG_WAITALL &&                    \
		    await_ready(fd, WF_IO_IN) < 0)                                           \
			return -1;                                                           \
		if (!(fl & (MSG_DONTWAIT | MSG_WAITALL)) && wf_io_usable()) {                \
			for (;;) {                                                           \
				ssize_t wf_r_ = wf_f_ dontwait_args;                         \
				if (wf_r_ >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) \
					return wf_r_;                                        \
				int wf_w_ = wait_once(fd, WF_IO_IN, 1);                      \
				if (wf_w_ < 0)                                               \
					return -1;                                           \
				if (wf_w_ == 0)                                              \
					break;                                               \
			}                                                                    \
		}                                                                            \
		wf_ult_t *wf_u_ = wf_section_begin();                                        \
		ssize_t wf_r_ = wf_f_ args;                                                  \
		wf_section_end(wf_u_);                                                       \
		return wf_r_;                                                                \
	}

/* poll's events as the poller's (src/io/io.h): 0 if there are none, or
 * some it does not wait for (POLLRDBAND, POLLWRBAND: then the call is made
 * in a section). */
static uint32_t poll_dirs(short events)
{
	if (events & (POLLRDBAND | POLLWRBAND))
		return 0;
	return (events & (POLLIN | POLLRDNORM) ? WF_IO_IN : 0) |
	       (events & (POLLOUT | POLLWRNORM) ? WF_IO_OUT : 0) |
	       (events & POLLPRI ? WF_IO_PRI : 0) | (events & POLLRDHUP ? WF_IO_RDHUP : 0);
}

/* Most descriptors a poll or select waits for on the poller (the links
 * are on the ULT's stack); more: in a section. */
#define POLL_MANY_MAX 64

/* What a timed wait on the poller (poll, select, epoll_wait) came to: 1
 * look again; 0 the deadline passed (the call returns 0); -1 EINTR, errno
 * set (these calls are never restarted, signal(7)); -2 the poller cannot
 * take it (make the call in a section with the time left). Acts on a
 * cancellation. */
static int timed_outcome(int e)
{
	switch (e) {
	case 0:
		return 1;
	case ETIMEDOUT:
		return 0;
	case ECANCELED:
		wf_cancel_act(); /* no return */
	case EINTR:
		errno = EINTR;
		return -1;
	default:
		return -2;
	}
}

/* poll of p[0..n) on the poller, until deadline (0: none): look with a
 * zero timeout, park on every descriptor, look again. The poll result (0:
 * the deadline passed), -1 with errno (EINTR: never restarted, signal(7);
 * or the look's error), or -2: the poller cannot take these (make the
 * call in a section with the time left). Acts on a cancellation. */
static int poll_park(struct pollfd *p, nfds_t n, uint64_t deadline)
{
	wf_iolink_t l[POLL_MANY_MAX];
	if (n > POLL_MANY_MAX)
		return -2;
	for (;;) {
		struct timespec zero = {0, 0};
		long r = syscall(SYS_ppoll, p, n, &zero, NULL, 8); /* raw: ppoll is ours */
		if (r != 0)
			return (int)r;
		int k = 0;
		for (nfds_t i = 0; i < n; i++) {
			if (p[i].fd < 0)
				continue; /* poll ignores it */
			if (!(l[k].events = poll_dirs(p[i].events)))
				return -2;
			l[k++].fd = p[i].fd;
		}
		int o = timed_outcome(wf_io_wait_many(l, k, deadline, WF_WAIT_CANCEL));
		if (o != 1)
			return o;
	}
}

/* What is left until deadline, as poll's milliseconds rounded up (-1: no
 * deadline). */
static int ms_left(uint64_t deadline)
{
	if (!deadline)
		return -1;
	uint64_t now = wf_now_ns();
	uint64_t left = now >= deadline ? 0 : (deadline - now + 999999u) / 1000000u;
	return left > INT_MAX ? INT_MAX : (int)left;
}

/* A timeout in ms (negative: none) as a deadline (0: none). */
static uint64_t ms_deadline(int ms)
{
	return ms < 0 ? 0 : wf_now_ns() + (uint64_t)ms * 1000000u;
}

/* ---- the wrappers ------------------------------------------------------------ */

/* read and readv on a socket are recvmsg with no flags (the kernel's
 * sock_read_iter): on a descriptor not known to be something else, try
 * that with MSG_DONTWAIT - raw, and no look first - and park while it
 * would block. 1: done, *r is the result (errno set if -1); 0: no socket,
 * or one the kernel must wait for (make the call). */
static int sock_read(int fd, struct iovec *v, int n, ssize_t *r)
{
	if (!wf_io_usable() || wf_io_kind(fd) == WF_FD_OTHER)
		return 0;
	struct msghdr m = {.msg_iov = v, .msg_iovlen = (size_t)n};
	for (;;) {
		ssize_t x = syscall(SYS_recvmsg, fd, &m, MSG_DONTWAIT);
		if (x < 0 && errno == ENOTSOCK) {
			wf_io_set_kind(fd, WF_FD_OTHER);
			return 0;
		}
		if (x >= 0 || errno != EAGAIN) {
			*r = x;
			return 1;
		}
		int w = wait_once(fd, WF_IO_IN, 1);
		if (w < 0) {
			*r = -1;
			return 1;
		}
		if (w == 0)
			return 0;
	}
}

/* Descriptors: pipes, sockets, terminals, FIFOs. */
WF_PX_API ssize_t read(int fd, void *buf, size_t n)
{
	WF_REAL(f, ssize_t, read, (int, void *, size_t))
	wf_testcancel();
	struct iovec v = {buf, n};
	ssize_t r;
	/* A read of nothing returns at once, ready or not. */
	if (n && sock_read(fd, &v, 1, &r))
		return r;
	if (n && await_ready(fd, WF_IO_IN) < 0)
		return -1;
	wf_ult_t *u = wf_section_begin();
	r = f(fd, buf, n);
	wf_section_end(u);
	return r;
}

WF_PX_API ssize_t readv(int fd, const struct iovec *v, int n)
{
	WF_REAL(f, ssize_t, readv, (int, const struct iovec *, int))
	wf_testcancel();
	ssize_t r;
	if (n >= 0 && sock_read(fd, (struct iovec *)v, n, &r))
		return r;
	if (await_ready(fd, WF_IO_IN) < 0)
		return -1;
	wf_ult_t *u = wf_section_begin();
	r = f(fd, v, n);
	wf_section_end(u);
	return r;
}

/* Is fd a stream or datagram socket? (On a SOCK_SEQPACKET socket, write
 * is sendmsg with MSG_EOR: not taken.) Learned once per descriptor. */
static int is_stream(int fd)
{
	int k = wf_io_kind(fd);
	if (k == WF_FD_UNKNOWN) {
		int type;
		socklen_t len = sizeof type;
		k = getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 &&
				    (type == SOCK_STREAM || type == SOCK_DGRAM)
			    ? WF_FD_STREAM
			    : WF_FD_OTHER;
		wf_io_set_kind(fd, k);
	}
	return k == WF_FD_STREAM;
}

/* A blocking send on a socket: sendmsg with MSG_DONTWAIT (raw), parking
 * while it would block, until everything is sent - a blocking send does
 * not stop short - or a signal interrupts it after part was sent (then
 * the part's length, as the kernel does). v is changed. 1: done, *r is the
 * result (errno set if -1); 0: make the call (fd is no socket - nothing was
 * sent - or is one the kernel must wait for and nothing was sent). */
static int sock_send(int fd, struct msghdr *m, int fl, ssize_t *r)
{
	size_t left = 0, sent = 0;
	for (size_t i = 0; i < m->msg_iovlen; i++)
		left += m->msg_iov[i].iov_len;
	for (;;) {
		ssize_t x = syscall(SYS_sendmsg, fd, m, fl | MSG_DONTWAIT);
		if (x < 0 && errno == ENOTSOCK && !sent) {
			wf_io_set_kind(fd, WF_FD_OTHER);
			return 0;
		}
		if (x < 0 && errno != EAGAIN) {
			*r = sent ? (ssize_t)sent : -1;
			return 1;
		}
		if (x > 0) {
			sent += (size_t)x;
			left -= (size_t)x;
			/* Step over what went. */
			while (m->msg_iovlen && (size_t)x >= m->msg_iov->iov_len) {
				x -= (ssize_t)m->msg_iov->iov_len;
				m->msg_iov++;
				m->msg_iovlen--;
			}
			if (m->msg_iovlen) {
				m->msg_iov->iov_base = (char *)m->msg_iov->iov_base + x;
				m->msg_iov->iov_len -= (size_t)x;
			}
		}
		if (!left) {
			*r = (ssize_t)sent;
			return 1;
		}
		int w = wait_once(fd, WF_IO_OUT, 1);
		if (w < 0 || (w == 0 && sent)) {
			/* Interrupted, or non-blocking or timed after a part: the
			 * part, as the kernel would answer. */
			*r = sent ? (ssize_t)sent : -1;
			return 1;
		}
		if (w == 0)
			return 0;
	}
}

/* Most iovecs a writev sends this way (a copy on the stack). */
#define SEND_IOV_MAX 8

WF_PX_API ssize_t write(int fd, const void *buf, size_t n)
{
	WF_REAL(f, ssize_t, write, (int, const void *, size_t))
	wf_testcancel();
	ssize_t r;
	if (!n) {
		/* A write of nothing returns at once, room or not. */
	} else if (wf_io_usable() && is_stream(fd)) {
		struct iovec v = {(void *)buf, n};
		struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
		if (sock_send(fd, &m, 0, &r))
			return r;
	} else if (await_ready(fd, WF_IO_OUT) < 0) {
		return -1;
	}
	wf_ult_t *u = wf_section_begin();
	r = f(fd, buf, n);
	wf_section_end(u);
	return r;
}

WF_PX_API ssize_t writev(int fd, const struct iovec *v, int n)
{
	WF_REAL(f, ssize_t, writev, (int, const struct iovec *, int))
	wf_testcancel();
	ssize_t r;
	if (n >= 0 && n <= SEND_IOV_MAX && wf_io_usable() && is_stream(fd)) {
		struct iovec c[SEND_IOV_MAX];
		memcpy(c, v, (size_t)n * sizeof *v);
		struct msghdr m = {.msg_iov = c, .msg_iovlen = (size_t)n};
		if (sock_send(fd, &m, 0, &r))
			return r;
	} else if (await_ready(fd, WF_IO_OUT) < 0) {
		return -1;
	}
	wf_ult_t *u = wf_section_begin();
	r = f(fd, v, n);
	wf_section_end(u);
	return r;
}
/* Files: a pread or pwrite needs a seekable descriptor, always ready. */
WF_BLOCKING(1, ssize_t, pread, (int fd, void *buf, size_t n, off_t o), (fd, buf, n, o))
WF_BLOCKING(1, ssize_t, pwrite, (int fd, const void *buf, size_t n, off_t o), (fd, buf, n, o))
WF_BLOCKING(1, ssize_t, pread64, (int fd, void *buf, size_t n, off_t o), (fd, buf, n, o))
WF_BLOCKING(1, ssize_t, pwrite64, (int fd, const void *buf, size_t n, off_t o), (fd, buf, n, o))
WF_RECV(recv, (int fd, void *buf, size_t n, int fl), (fd, buf, n, fl),
	(fd, buf, n, fl | MSG_DONTWAIT))
WF_RECV(recvfrom, (int fd, void *buf, size_t n, int fl, struct sockaddr *a, socklen_t *al),
	(fd, buf, n, fl, a, al), (fd, buf, n, fl | MSG_DONTWAIT, a, al))
WF_RECV(recvmsg, (int fd, struct msghdr *m, int fl), (fd, m, fl), (fd, m, fl | MSG_DONTWAIT))
/* send and sendto: a blocking send sends everything (sock_send). */
WF_PX_API ssize_t sendto(int fd, const void *buf, size_t n, int fl, const struct sockaddr *a,
			 socklen_t al)
{
	WF_REAL(f, ssize_t, sendto,
		(int, const void *, size_t, int, const struct sockaddr *, socklen_t))
	wf_testcancel();
	ssize_t r;
	if (!(fl & MSG_DONTWAIT) && wf_io_usable()) {
		struct iovec v = {(void *)buf, n};
		struct msghdr m = {.msg_name = (void *)a,
				   .msg_namelen = a ? al : 0,
				   .msg_iov = &v,
				   .msg_iovlen = 1};
		if (sock_send(fd, &m, fl, &r))
			return r;
	}
	wf_ult_t *u = wf_section_begin();
	r = f(fd, buf, n, fl, a, al);
	wf_section_end(u);
	return r;
}

WF_PX_API ssize_t send(int fd, const void *buf, size_t n, int fl)
{
	return sendto(fd, buf, n, fl, NULL, 0);
}

WF_FD_CALL(ssize_t, sendmsg, (int fd, const struct msghdr *m, int fl), (fd, m, fl), fd,
	   fl &MSG_DONTWAIT ? 0 : WF_IO_OUT)
WF_FD_CALL(int, accept, (int fd, struct sockaddr *a, socklen_t *al), (fd, a, al), fd, WF_IO_IN)
WF_FD_CALL(int, accept4, (int fd, struct sockaddr *a, socklen_t *al, int fl), (fd, a, al, fl), fd,
	   WF_IO_IN)
/* A blocking connect cannot be asked "would you block" without making the
 * socket non-blocking, which other processes sharing it would see. */
WF_BLOCKING(1, int, connect, (int fd, const struct sockaddr *a, socklen_t al), (fd, a, al))

/* Waiting for descriptors: on the poller (up to POLL_MANY_MAX of them);
 * with a signal mask to install for the wait, in a section. */
WF_PX_API int poll(struct pollfd *p, nfds_t n, int ms)
{
	WF_REAL(f, int, poll, (struct pollfd *, nfds_t, int))
	wf_testcancel();
	uint64_t deadline = 0;
	if (ms != 0 && p && wf_io_usable()) {
		deadline = ms_deadline(ms);
		int r = poll_park(p, n, deadline);
		if (r != -2)
			return r;
		ms = ms_left(deadline);
	}
	wf_ult_t *u = wf_section_begin();
	int r = f(p, n, ms);
	wf_section_end(u);
	return r;
}

/* A timeout as poll's milliseconds, rounded up; -1: none. EINVAL: bad. */
static int ts_ms(const struct timespec *t, int *ms)
{
	if (!t) {
		*ms = -1;
		return 0;
	}
	if (t->tv_sec < 0 || t->tv_nsec < 0 || t->tv_nsec >= 1000000000L)
		return EINVAL;
	if (t->tv_sec > INT_MAX / 1000 - 1) {
		*ms = -1; /* longer than poll can say: as good as none here */
		return 0;
	}
	*ms = (int)(t->tv_sec * 1000 + (t->tv_nsec + 999999L) / 1000000L);
	return 0;
}

WF_PX_API int ppoll(struct pollfd *p, nfds_t n, const struct timespec *t, const sigset_t *m)
{
	WF_REAL(f, int, ppoll, (struct pollfd *, nfds_t, const struct timespec *, const sigset_t *))
	wf_testcancel();
	int ms;
	if (!m && p && ts_ms(t, &ms) == 0 && ms != 0 && wf_io_usable()) {
		uint64_t deadline = ms_deadline(ms);
		int r = poll_park(p, n, deadline);
		if (r != -2)
			return r;
		int left = ms_left(deadline);
		struct timespec rest = {left / 1000, (left % 1000) * 1000000L};
		wf_ult_t *u = wf_section_begin();
		r = f(p, n, left < 0 ? NULL : &rest, NULL);
		wf_section_end(u);
		return r;
	}
	wf_ult_t *u = wf_section_begin();
	int r = f(p, n, t, m);
	wf_section_end(u);
	return r;
}

/* select as a poll of the descriptors in its sets (up to POLL_MANY_MAX),
 * on the poller. 1: done (*res, errno; the sets written back); 0: make
 * the call (in a section; the sets are untouched). */
static int select_park(int n, fd_set *r, fd_set *w, fd_set *e, uint64_t deadline, int *res)
{
	if (n < 0 || n > FD_SETSIZE)
		return 0;
	struct pollfd p[POLL_MANY_MAX];
	int k = 0;
	for (int fd = 0; fd < n; fd++) {
		short ev = (short)((r && FD_ISSET(fd, r) ? POLLIN : 0) |
				   (w && FD_ISSET(fd, w) ? POLLOUT : 0) |
				   (e && FD_ISSET(fd, e) ? POLLPRI : 0));
		if (!ev)
			continue;
		if (k == POLL_MANY_MAX)
			return 0;
		p[k].fd = fd;
		p[k].events = ev;
		p[k++].revents = 0;
	}
	int x = poll_park(p, (nfds_t)k, deadline);
	if (x == -2)
		return 0;
	if (x < 0) {
		*res = -1;
		return 1;
	}
	for (int i = 0; i < k; i++)
		if (p[i].revents & POLLNVAL) {
			errno = EBADF; /* select's answer to a descriptor not open */
			*res = -1;
			return 1;
		}
	/* select's count: every set bit that is ready. */
	int count = 0;
	for (int i = 0; i < k; i++) {
		int fd = p[i].fd;
		short rv = p[i].revents;
		if (r && FD_ISSET(fd, r) && !(rv & (POLLIN | POLLHUP | POLLERR)))
			FD_CLR(fd, r);
		else if (r && FD_ISSET(fd, r))
			count++;
		if (w && FD_ISSET(fd, w) && !(rv & (POLLOUT | POLLERR)))
			FD_CLR(fd, w);
		else if (w && FD_ISSET(fd, w))
			count++;
		if (e && FD_ISSET(fd, e) && !(rv & POLLPRI))
			FD_CLR(fd, e);
		else if (e && FD_ISSET(fd, e))
			count++;
	}
	*res = count;
	return 1;
}

WF_PX_API int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t)
{
	WF_REAL(f, int, select, (int, fd_set *, fd_set *, fd_set *, struct timeval *))
	wf_testcancel();
	if (wf_io_usable() && (!t || ((t->tv_sec || t->tv_usec) && t->tv_sec >= 0 &&
				      t->tv_usec >= 0 && t->tv_usec < 1000000))) {
		uint64_t deadline = t ? wf_now_ns() + (uint64_t)t->tv_sec * 1000000000u +
						    (uint64_t)t->tv_usec * 1000u
				      : 0;
		int res, done = select_park(n, r, w, e, deadline, &res);
		if (t) {
			/* The time left, as Linux's select writes back. */
			uint64_t now = wf_now_ns(), left = now < deadline ? deadline - now : 0;
			t->tv_sec = (time_t)(left / 1000000000u);
			t->tv_usec = (suseconds_t)(left % 1000000000u / 1000u);
		}
		if (done)
			return res;
	}
	wf_ult_t *u = wf_section_begin();
	int x = f(n, r, w, e, t);
	wf_section_end(u);
	return x;
}

WF_PX_API int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *t,
		      const sigset_t *m)
{
	WF_REAL(f, int, pselect,
		(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *))
	wf_testcancel();
	int ms;
	if (!m && wf_io_usable() && ts_ms(t, &ms) == 0 && ms != 0) {
		uint64_t deadline =
			t ? wf_now_ns() + (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec
			  : 0;
		int res;
		if (select_park(n, r, w, e, deadline, &res))
			return res;
	}
	wf_ult_t *u = wf_section_begin();
	int x = f(n, r, w, e, t, m);
	wf_section_end(u);
	return x;
}

/* epoll_wait on the poller, until deadline (0: none), as poll_park: an
 * epoll descriptor is itself readable while it has events ready. */
static int epoll_park(int fd, struct epoll_event *ev, int n, uint64_t deadline)
{
	for (;;) {
		long r = syscall(SYS_epoll_pwait, fd, ev, n, 0, NULL, 8); /* raw: ours */
		if (r != 0)
			return (int)r;
		int o = timed_outcome(wf_io_wait(fd, WF_IO_IN, deadline, WF_WAIT_CANCEL));
		if (o != 1)
			return o;
	}
}

WF_PX_API int epoll_wait(int fd, struct epoll_event *ev, int n, int ms)
{
	WF_REAL(f, int, epoll_wait, (int, struct epoll_event *, int, int))
	wf_testcancel();
	if (ms != 0 && fd >= 0 && wf_io_usable()) {
		uint64_t deadline = ms_deadline(ms);
		int r = epoll_park(fd, ev, n, deadline);
		if (r != -2)
			return r;
		ms = ms_left(deadline);
	}
	wf_ult_t *u = wf_section_begin();
	int r = f(fd, ev, n, ms);
	wf_section_end(u);
	return r;
}

WF_PX_API int epoll_pwait(int fd, struct epoll_event *ev, int n, int ms, const sigset_t *m)
{
	WF_REAL(f, int, epoll_pwait, (int, struct epoll_event *, int, int, const sigset_t *))
	wf_testcancel();
	if (!m && ms != 0 && fd >= 0 && wf_io_usable()) {
		uint64_t deadline = ms_deadline(ms);
		int r = epoll_park(fd, ev, n, deadline);
		if (r != -2)
			return r;
		ms = ms_left(deadline);
	}
	wf_ult_t *u = wf_section_begin();
	int r = f(fd, ev, n, ms, m);
	wf_section_end(u);
	return r;
}

/* Children, locks on files, files that may be slow. */
WF_BLOCKING(1, pid_t, wait, (int *st), (st))
WF_BLOCKING(1, pid_t, waitpid, (pid_t p, int *st, int o), (p, st, o))
WF_BLOCKING(1, int, waitid, (idtype_t t, id_t id, siginfo_t *i, int o), (t, id, i, o))
WF_BLOCKING(0, pid_t, wait3, (int *st, int o, struct rusage *r), (st, o, r))
WF_BLOCKING(0, pid_t, wait4, (pid_t p, int *st, int o, struct rusage *r), (p, st, o, r))
WF_BLOCKING(0, int, flock, (int fd, int op), (fd, op))
WF_BLOCKING(1, int, fsync, (int fd), (fd))
WF_BLOCKING(1, int, fdatasync, (int fd), (fd))
WF_BLOCKING(1, int, pause, (void), ())

/* fcntl is variadic: only the waiting lock commands make a section, and
 * only F_SETLKW/F_OFD_SETLKW are cancellation points (glibc's rule). */
WF_PX_API int fcntl(int fd, int cmd, ...)
{
	static int (*real)(int, int, ...);
	int (*f)(int, int, ...) = __atomic_load_n(&real, __ATOMIC_RELAXED);
	if (unlikely(!f)) {
		f = (int (*)(int, int, ...))wf_px_next_symbol("fcntl");
		__atomic_store_n(&real, f, __ATOMIC_RELAXED);
	}
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *); /* every fcntl argument fits a pointer's slot */
	va_end(ap);
	if (cmd == F_SETFL) {
		int r = f(fd, cmd, arg);
		wf_io_forget_all(); /* O_NONBLOCK may have changed, for every dup */
		return r;
	}
	if (cmd != F_SETLKW && cmd != F_OFD_SETLKW)
		return f(fd, cmd, arg);
	wf_testcancel();
	wf_ult_t *u = wf_section_begin();
	int r = f(fd, cmd, arg);
	wf_section_end(u);
	return r;
}
WF_PX_API int fcntl64(int fd, int cmd, ...) __attribute__((alias("fcntl")));

/* ---- what the poller must forget ------------------------------------------------ */

/* The poller remembers whether a descriptor blocks and whether it is a
 * socket (src/io/poller.c, "What a descriptor does"): the calls that
 * change that, or that end or replace the descriptor, make it forget. */
WF_PX_API int close(int fd)
{
	WF_REAL(f, int, close, (int))
	wf_testcancel();
	int r = f(fd);
	wf_io_forget(fd);
	return r;
}

WF_PX_API int dup2(int old, int fd)
{
	WF_REAL(f, int, dup2, (int, int))
	int r = f(old, fd);
	wf_io_forget(fd);
	return r;
}

WF_PX_API int dup3(int old, int fd, int fl)
{
	WF_REAL(f, int, dup3, (int, int, int))
	int r = f(old, fd, fl);
	wf_io_forget(fd);
	return r;
}

WF_PX_API int setsockopt(int fd, int level, int opt, const void *v, socklen_t len)
{
	WF_REAL(f, int, setsockopt, (int, int, int, const void *, socklen_t))
	int r = f(fd, level, opt, v, len);
	if (level == SOL_SOCKET && (opt == SO_RCVTIMEO || opt == SO_SNDTIMEO
#ifdef SO_RCVTIMEO_NEW
				    || opt == SO_RCVTIMEO_NEW || opt == SO_SNDTIMEO_NEW
#endif
				    ))
		wf_io_forget_all();
	return r;
}

/* ioctl is variadic, and its argument fits a pointer's slot. */
WF_PX_API int ioctl(int fd, unsigned long req, ...)
{
	WF_REAL(f, int, ioctl, (int, unsigned long, ...))
	va_list ap;
	va_start(ap, req);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	int r = f(fd, req, arg);
	if (req == FIONBIO)
		wf_io_forget_all();
	return r;
}
