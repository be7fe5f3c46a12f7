/* The I/O layer: the poller that parks ULTs waiting for file descriptors
 * (poller.c, whose top holds the protocol) and the kernel interface it
 * waits through, a backend behind a table of operations (epoll.c). */
#ifndef WF_IO_IO_H
#define WF_IO_IO_H

#include <stdint.h>

#include "sched/sched.h"

/* What a wait is for: a direction of the descriptor. */
/* What a wait is for (poll's classes: POLLIN, POLLOUT, POLLPRI, POLLRDHUP;
 * errors and hang-ups are always reported). */
enum { WF_IO_IN = 1, WF_IO_OUT = 2, WF_IO_PRI = 4, WF_IO_RDHUP = 8 };
#define WF_IO_KINDS 4

#define WF_IO_BATCH 32 /* reports taken per wait (on the caller's stack) */

/* One event from the backend: fd was reported (ready, or in error). */
typedef struct {
	int fd;
} wf_io_event_t;

/* A backend: how the poller asks the kernel to watch descriptors. One
 * instance per runtime; several threads may call wait at once (poller.c,
 * "Who takes the reports"). */
typedef struct wf_io_backend {
	const char *name;
	/* Make the instance. 0 or an errno value. */
	int (*open)(void);
	/* Report fd once when it is ready for `events` (WF_IO_*)
	 * or in error, replacing what was asked before for fd (one shot: after
	 * the report, nothing until the next arm). *added: fd may be in the
	 * instance already (a hint the backend keeps up to date): on success
	 * 2 if this file was (the same open file under the same number, which
	 * a close takes out of the instance), 1 if it was put in now. 0, or EPERM
	 * (the kind of file cannot be waited for: a regular file, always
	 * ready), EBADF, ENOMEM, ENOSPC. */
	int (*arm)(int fd, uint32_t events, int *added);
	/* Take up to max reports (at most WF_IO_BATCH), waiting up to
	 * timeout_ns for one (0: not at all; negative: no limit) or for a
	 * kick. The number taken. drain: the caller is the sleeper, which
	 * consumes kicks; others leave them for it. */
	int (*wait)(wf_io_event_t *ev, int max, int64_t timeout_ns, int drain);
	/* Make the sleeper's wait return (now, or its next one). */
	void (*kick)(void);
	/* Free the instance (the poller has ended). */
	void (*close)(void);
} wf_io_backend_t;

WF_HIDDEN extern const wf_io_backend_t wf_io_epoll;

/* The calling ULT waits until fd may be ready for `events` (WF_IO_*), until deadline_ns (CLOCK_MONOTONIC; 0: none), or
 * (flags & WF_WAIT_CANCEL) until it is cancelled; flags as wf_wait's
 * (sync/wait.h). The worker runs other ULTs meanwhile. Returns 0 (an event
 * came for fd, maybe for the other direction, or raced with the call: look
 * again), ETIMEDOUT, ECANCELED, EINTR (a signal sent to the ULT ran its
 * handler), EPERM (fd is of a kind that is always ready), EBADF, ENOMEM,
 * or ENOTSUP (no poller: WEFT_IO=off, or fd past the table). Call it only
 * from a ULT on a worker, after looking at fd (wf_io_ready) and finding it
 * not ready. */
WF_HIDDEN int wf_io_wait(int fd, uint32_t events, uint64_t deadline_ns, int flags);
/* A wf_io_wait flag: wait only if a call on fd in this direction would
 * block until it is ready - fd is not O_NONBLOCK and, for a socket, has no
 * timeout for the direction (SO_RCVTIMEO, SO_SNDTIMEO) - else return
 * WF_IO_NOWAIT at once: the call should be made as it is (it returns at
 * once, or the kernel times it). The answer is remembered per descriptor
 * and trusted while its registration shows the same open file is there
 * (poller.c, "What a descriptor does"). */
#define WF_IO_IFBLOCKS 0x10
#define WF_IO_NOWAIT   ENOTBLK
/* What weft learned of fd: WF_FD_UNKNOWN, WF_FD_STREAM (a stream or
 * datagram socket: write is sendmsg with no flags), WF_FD_OTHER (no socket,
 * or another kind of socket). A hint: a number may be closed and reused
 * behind weft's back (libweft-pthread.so sees the program's close, not
 * glibc's own, as in fclose), so a caller copes with it being wrong. */
enum { WF_FD_UNKNOWN = 0, WF_FD_STREAM, WF_FD_OTHER };
WF_HIDDEN int wf_io_kind(int fd);
WF_HIDDEN void wf_io_set_kind(int fd, int kind);
/* The program closed or replaced fd (close, dup2, dup3): forget what was
 * learned of it. */
WF_HIDDEN void wf_io_forget(int fd);
/* The program changed some descriptor's blocking mode or timeouts (fcntl
 * F_SETFL, ioctl FIONBIO, setsockopt): it may have done so through a dup,
 * so nothing learned of any descriptor's mode is trusted any longer. */
WF_HIDDEN void wf_io_forget_all(void);
/* One descriptor of a wait for several (wf_io_wait_many): the caller
 * fills fd and events; the rest is the poller's while the wait lasts. */
typedef struct wf_iolink {
	int fd;
	uint32_t events; /* WF_IO_* */
	struct wf_iolink *next, *prev;
	uint32_t *word;
} wf_iolink_t;
/* The calling ULT waits until any of n descriptors may be ready, as
 * wf_io_wait does for one (poll and select of several). Returns 0, ETIMEDOUT,
 * ECANCELED, EINTR, or (nothing waited for) EPERM, EBADF, ENOMEM, ENOTSUP
 * (also for an fd < 0 or no events: leave those out). links stay the
 * caller's, untouched once it returns. n may be 0: a sleep until the
 * deadline. */
WF_HIDDEN int wf_io_wait_many(wf_iolink_t *links, int n, uint64_t deadline_ns, int flags);
/* Is the poller there for the calling context (a ULT on a worker, the
 * poller not off)? */
WF_HIDDEN int wf_io_usable(void);
/* Look at fd without waiting: 1 ready for `events` (or in error, or not
 * open: the call will say), 0 not ready. */
WF_HIDDEN int wf_io_ready(int fd, uint32_t events);
/* Stop the watchdog, close the instance and free the table (weft_shutdown: no ULT
 * waits). */
WF_HIDDEN void wf_io_stop(void);
/* In the child of a fork: neither the waiters nor the watchdog came
 * along, and the instance is the parent's: never used there. again: the
 * child has a runtime again (runtime/fork.c), and gets a fresh poller with
 * its first wait; else the poller stays off. */
WF_HIDDEN void wf_io_forked(int again);

#endif
