/* weft and the kernel: waiting for file descriptors, and system call
 * sections. Included by <weft.h>.
 *
 * A ULT that waits for a descriptor (a socket, a pipe, a terminal, an
 * epoll or event descriptor) with weft_fd_wait parks on weft's I/O poller:
 * its worker runs other ULTs, and no kernel thread waits for it. Ten
 * thousand ULTs may wait so, each on its own socket, on two workers.
 *
 *   while ((n = recv(fd, buf, len, MSG_DONTWAIT)) < 0 && errno == EAGAIN)
 *           if ((e = weft_fd_wait(fd, POLLIN, CLOCK_MONOTONIC, NULL)) != 0)
 *                   break;   // EINTR, ETIMEDOUT, EBADF ...
 *
 * The poller is an epoll instance, made by the first wait; the workers
 * take its reports themselves (an idle worker sleeps in it), with a
 * watchdog thread for when every worker is busy. weft_config_t.io /
 * WEFT_IO=off turns it off, and then weft_fd_wait waits in the kernel
 * inside a system call section (below). libweft-pthread.so waits so itself
 * in the blocking calls of the programs it runs (docs/posix-coverage.md,
 * "Blocking system calls").
 *
 * A ULT that makes a system call that may block (a read from a pipe or a
 * socket, waitpid, flock, a futex wait of another library's) holds its
 * worker's kernel thread in the kernel for as long as the call lasts, and
 * with it every other ULT queued on that worker. Bracket such a call with
 * weft_syscall_begin and weft_syscall_end: if the calling ULT is still
 * inside the section after a threshold (weft_config_t.syscall_ns,
 * WEFT_SYSCALL_NS; 50 us by default), weft's monitor hands the worker to a
 * spare kernel thread, which goes on running the worker's other ULTs.
 * When the call returns, weft_syscall_end puts the calling ULT back in a
 * run queue (of the worker it is bound to, if any; else any worker takes
 * it) and the kernel thread it ran on becomes a spare. A section that does
 * not last that long costs two atomic operations. The design is at the
 * top of src/sched/carrier.c.
 *
 *   weft_syscall_t s = weft_syscall_begin();
 *   ssize_t n = read(fd, buf, len);   // may block for as long as it likes
 *   weft_syscall_end(s);
 *
 * Inside a section the calling ULT is no worker's: it acts as a foreign
 * kernel thread would. weft_self() is WEFT_NULL there; a weft call that
 * blocks (a contended weft mutex, a sleep) blocks the kernel thread, like
 * the rest of the section; weft_yield yields the kernel thread; a section
 * begun inside one is none (begin returns NULL). Keep sections to the
 * system calls themselves. After a hand-over the ULT may resume on another
 * kernel thread: a ULT without thread-local storage of its own (weft.h,
 * weft_attr_settls) then sees that thread's __thread variables, and code
 * that kept errno's address from before weft_syscall_end reads the old
 * thread's errno - read errno after the end, as usual. The errno the call
 * set is the ULT's when weft_syscall_end returns.
 *
 * libweft-pthread.so brackets the blocking calls of the programs it runs
 * itself (docs/posix-coverage.md, "Blocking system calls").
 *
 * From a foreign thread, before the runtime runs, or with hand-overs
 * turned off (syscall_ns or spares negative), begin returns NULL and
 * end(NULL) does nothing.
 */
#ifndef WEFT_IO_H
#define WEFT_IO_H

#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef WEFT_API
#define WEFT_API __attribute__((visibility("default")))
#endif

/* Wait until fd is ready for events (POLLIN, POLLOUT or both, as poll(2)
 * says "ready": a read or write would not block; an error or hang-up
 * counts) or until abstime on clock (CLOCK_MONOTONIC or CLOCK_REALTIME;
 * NULL: no limit). Returns 0 (ready when it looked), ETIMEDOUT, EINTR (a
 * signal sent to the ULT with pthread_kill / weft's signals ran its
 * handler), EBADF (fd is not open), EINVAL (other event bits, a bad clock
 * or timespec) or ENOMEM. A cancellation point. A regular file is always
 * ready. From a foreign thread it waits in the kernel (poll). */
WEFT_API int weft_fd_wait(int fd, short events, clockid_t clock, const struct timespec *abstime);

/* An open section: opaque. NULL means "no section" (not a ULT). */
typedef struct weft_syscall *weft_syscall_t;

/* Open a section for the calling ULT. */
WEFT_API weft_syscall_t weft_syscall_begin(void);
/* Close it: the calling ULT owns a worker again when this returns (maybe
 * another one than before, if its worker was handed over meanwhile). */
WEFT_API void weft_syscall_end(weft_syscall_t s);

#ifdef __cplusplus
}
#endif

#endif
