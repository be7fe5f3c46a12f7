/* libweft-pthread.so only (WEFT_PRELOAD): the program's blocking system
 * calls, each made inside a system call section (src/sched/carrier.c), so
 * that a thread blocked in the kernel never holds a worker for long: past
 * the threshold (WEFT_SYSCALL_NS) its worker is handed to a spare kernel
 * thread and the other threads keep running.
 *
 * Each wrapper is the libc function of the same name, found as the next
 * definition after this library's (dlsym(RTLD_NEXT)) on first use, called
 * between wf_section_begin and wf_section_end: its arguments, results,
 * errno, timeouts, O_NONBLOCK and EINTR are exactly libc's. Off a ULT (a
 * foreign thread, a worker's loop) the section is none and the call is
 * libc's alone. The calls that POSIX makes cancellation points act on a
 * pending cancellation first, as glibc's do.
 *
 * What this cannot see: calls libc makes to itself (fread's read, system's
 * waitpid, getaddrinfo's sockets go through libc-internal names), system
 * calls made with syscall(2) or inline (libgomp's futex waits), and the
 * header mode (include/weft/compat renames the pthread calls only). Those
 * still block their worker while they last; docs/posix-coverage.md,
 * "Blocking system calls".
 *
 * Each wrapper costs a section - two atomic operations - on top of the
 * call, also when it does not block (a write to a pipe with room).
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "posix/posix.h"
#include "sched/carrier.h"
#include "sync/wait.h"
#include "util/sys.h"

/* A wrapper: `real` is looked up once (every thread that races stores the
 * same pointer, whole). cancel: a cancellation point. */
#define WF_BLOCKING(cancel, ret, name, params, args)                               \
	WF_PX_API ret name params                                                  \
	{                                                                          \
		static ret(*wf_real_) params;                                      \
		ret(*wf_f_) params = __atomic_load_n(&wf_real_, __ATOMIC_RELAXED); \
		if (unlikely(!wf_f_)) {                                            \
			wf_f_ = (ret(*) params)wf_px_next_symbol(#name);           \
			__atomic_store_n(&wf_real_, wf_f_, __ATOMIC_RELAXED);      \
		}                                                                  \
		if (cancel)                                                        \
			wf_testcancel();                                           \
		wf_ult_t *wf_u_ = wf_section_begin();                              \
		ret wf_r_ = wf_f_ args;                                            \
		wf_section_end(wf_u_);                                             \
		return wf_r_;                                                      \
	}

/* Descriptors: pipes, sockets, terminals, FIFOs. */
WF_BLOCKING(1, ssize_t, read, (int fd, void *buf, size_t n), (fd, buf, n))
WF_BLOCKING(1, ssize_t, write, (int fd, const void *buf, size_t n), (fd, buf, n))
WF_BLOCKING(1, ssize_t, readv, (int fd, const struct iovec *v, int n), (fd, v, n))
WF_BLOCKING(1, ssize_t, writev, (int fd, const struct iovec *v, int n), (fd, v, n))
WF_BLOCKING(1, ssize_t, pread, (int fd, void *buf, size_t n, off_t o), (fd, buf, n, o))
WF_BLOCKING(1, ssize_t, pwrite, (int fd, const void *buf, size_t n, off_t o), (fd, buf, n, o))
WF_BLOCKING(1, ssize_t, pread64, (int fd, void *buf, size_t n, off_t o), (fd, buf, n, o))
WF_BLOCKING(1, ssize_t, pwrite64, (int fd, const void *buf, size_t n, off_t o), (fd, buf, n, o))
WF_BLOCKING(1, ssize_t, recv, (int fd, void *buf, size_t n, int fl), (fd, buf, n, fl))
WF_BLOCKING(1, ssize_t, recvfrom,
	    (int fd, void *buf, size_t n, int fl, struct sockaddr *a, socklen_t *al),
	    (fd, buf, n, fl, a, al))
WF_BLOCKING(1, ssize_t, recvmsg, (int fd, struct msghdr *m, int fl), (fd, m, fl))
WF_BLOCKING(1, ssize_t, send, (int fd, const void *buf, size_t n, int fl), (fd, buf, n, fl))
WF_BLOCKING(1, ssize_t, sendto,
	    (int fd, const void *buf, size_t n, int fl, const struct sockaddr *a, socklen_t al),
	    (fd, buf, n, fl, a, al))
WF_BLOCKING(1, ssize_t, sendmsg, (int fd, const struct msghdr *m, int fl), (fd, m, fl))
WF_BLOCKING(1, int, accept, (int fd, struct sockaddr *a, socklen_t *al), (fd, a, al))
WF_BLOCKING(1, int, accept4, (int fd, struct sockaddr *a, socklen_t *al, int fl), (fd, a, al, fl))
WF_BLOCKING(1, int, connect, (int fd, const struct sockaddr *a, socklen_t al), (fd, a, al))

/* Waiting for descriptors. */
WF_BLOCKING(1, int, poll, (struct pollfd * p, nfds_t n, int ms), (p, n, ms))
WF_BLOCKING(1, int, ppoll,
	    (struct pollfd * p, nfds_t n, const struct timespec *t, const sigset_t *m),
	    (p, n, t, m))
WF_BLOCKING(1, int, select, (int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t),
	    (n, r, w, e, t))
WF_BLOCKING(1, int, pselect,
	    (int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *t, const sigset_t *m),
	    (n, r, w, e, t, m))
WF_BLOCKING(1, int, epoll_wait, (int fd, struct epoll_event *ev, int n, int ms), (fd, ev, n, ms))
WF_BLOCKING(1, int, epoll_pwait, (int fd, struct epoll_event *ev, int n, int ms, const sigset_t *m),
	    (fd, ev, n, ms, m))

/* Children, locks on files, files that may be slow. */
WF_BLOCKING(1, pid_t, wait, (int *st), (st))
WF_BLOCKING(1, pid_t, waitpid, (pid_t p, int *st, int o), (p, st, o))
WF_BLOCKING(1, int, waitid, (idtype_t t, id_t id, siginfo_t *i, int o), (t, id, i, o))
WF_BLOCKING(0, pid_t, wait3, (int *st, int o, struct rusage *r), (st, o, r))
WF_BLOCKING(0, pid_t, wait4, (pid_t p, int *st, int o, struct rusage *r), (p, st, o, r))
WF_BLOCKING(0, int, flock, (int fd, int op), (fd, op))
WF_BLOCKING(1, int, fsync, (int fd), (fd))
WF_BLOCKING(1, int, fdatasync, (int fd), (fd))
WF_BLOCKING(1, int, sigsuspend, (const sigset_t *s), (s))
WF_BLOCKING(1, int, pause, (void), ())

/* Waiting for signals: the thread blocked them (pthread_sigmask: a ULT's
 * own mask in weft, sync/signal.c), and the kernel hands a blocked signal
 * to sigwait only if the kernel thread blocks it too: so the set is blocked
 * in the kernel thread's mask for the call. A signal sent to the ULT before
 * it waits is pending in weft and taken at once (wf_sig_take); one sent
 * while it waits goes to its kernel thread (wf_section_kill). */
#define WF_SIGWAIT(ret, name, params, args, taken)                                          \
	WF_PX_API ret name params                                                           \
	{                                                                                   \
		static ret(*wf_real_) params;                                               \
		ret(*wf_f_) params = __atomic_load_n(&wf_real_, __ATOMIC_RELAXED);          \
		if (unlikely(!wf_f_)) {                                                     \
			wf_f_ = (ret(*) params)wf_px_next_symbol(#name);                    \
			__atomic_store_n(&wf_real_, wf_f_, __ATOMIC_RELAXED);               \
		}                                                                           \
		wf_testcancel();                                                            \
		sigset_t wf_old_;                                                           \
		int wf_masked_ = s && WF_SYS(pthread_sigmask)(SIG_BLOCK, s, &wf_old_) == 0; \
		wf_ult_t *wf_u_ = wf_section_begin();                                       \
		int wf_sig_ = wf_u_ && s ? wf_sig_take(wf_u_, s) : 0;                       \
		ret wf_r_;                                                                  \
		if (wf_sig_)                                                                \
			wf_r_ = (taken);                                                    \
		else                                                                        \
			wf_r_ = wf_f_ args;                                                 \
		int wf_e_ = errno;                                                          \
		if (wf_u_ && s)                                                             \
			wf_sig_wait_done(wf_u_);                                            \
		/* Before the end: it may resume on another kernel thread. */               \
		if (wf_masked_)                                                             \
			WF_SYS(pthread_sigmask)(SIG_SETMASK, &wf_old_, NULL);               \
		errno = wf_e_;                                                              \
		wf_section_end(wf_u_);                                                      \
		return wf_r_;                                                               \
	}

/* What the kernel says of a signal sent by pthread_kill. */
static int took(int sig, int *out, siginfo_t *i)
{
	if (out)
		*out = sig;
	if (i) {
		memset(i, 0, sizeof *i);
		i->si_signo = sig;
		i->si_code = SI_TKILL;
		i->si_pid = getpid();
		i->si_uid = getuid();
	}
	return sig;
}

WF_SIGWAIT(int, sigwait, (const sigset_t *s, int *sig), (s, sig), (took(wf_sig_, sig, NULL), 0))
WF_SIGWAIT(int, sigwaitinfo, (const sigset_t *s, siginfo_t *i), (s, i), took(wf_sig_, NULL, i))
WF_SIGWAIT(int, sigtimedwait, (const sigset_t *s, siginfo_t *i, const struct timespec *t),
	   (s, i, t), took(wf_sig_, NULL, i))

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
	if (cmd != F_SETLKW && cmd != F_OFD_SETLKW)
		return f(fd, cmd, arg);
	wf_testcancel();
	wf_ult_t *u = wf_section_begin();
	int r = f(fd, cmd, arg);
	wf_section_end(u);
	return r;
}
WF_PX_API int fcntl64(int fd, int cmd, ...) __attribute__((alias("fcntl")));
