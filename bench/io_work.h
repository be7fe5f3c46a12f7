/* The blocking I/O workloads of `weft-bench io`, written once over a table
 * of thread operations, so that glibc pthreads, weft ULTs with system call
 * sections, and the same glibc-built code under LD_PRELOAD=libweft-pthread.so
 * (the helper program weft-io-prog) run the same loops.
 *
 * Plain C and pthreads: no weft header (io.c supplies weft's table). Every
 * loop is bounded; every socket is on 127.0.0.1.
 */
#ifndef WB_IO_WORK_H
#define WB_IO_WORK_H

#include <stdint.h>
#include <stddef.h>

/* An open system call section, as the table's begin left it. */
typedef struct wk_sec {
	void *s;          /* the library's token */
	unsigned long kt; /* the kernel thread the call began on (pthread_self) */
} wk_sec_t;

typedef struct wk_ops {
	/* Start fn(arg) as a thread; *h gets its handle. 0 or an errno value. */
	int (*spawn)(uint64_t *h, void *(*fn)(void *), void *arg);
	int (*join)(uint64_t h);
	/* Bracket one blocking call; NULL: no sections. end returns 1 when the
	 * call came back on another kernel thread than it began on: its worker
	 * was handed over meanwhile. */
	void (*begin)(wk_sec_t *s);
	int (*end)(wk_sec_t *s);
	/* Wait until fd is ready to read (out = 0) or write before a read,
	 * write or accept; 0 or an errno value. NULL: the call waits itself. */
	int (*wait)(int fd, int out);
} wk_ops_t;

/* glibc pthreads, no sections (in weft-io-prog under LD_PRELOAD, the
 * library's wrappers add them). */
extern const wk_ops_t wk_pthread_ops;

typedef struct wk_result {
	int64_t elapsed_ns; /* first create to last join */
	long done;          /* round trips completed */
	long handovers;     /* sections that ended on another kernel thread */
	long sections;      /* sections opened (0 without begin/end) */
	long threads;       /* kernel threads in the process once the threads were
	                       joined (carriers and spares stay until shutdown) */
	long same_cpu;      /* round trips whose two threads (pipe: a and b; tcp: a
	                       client and its server thread) last read on one CPU
	                       (sched_getcpu after each read) */
	char error[200];
} wk_result_t;

/* Two threads hand a byte back and forth over two pipes, n round trips,
 * blocking read and write. watchdog_ms > 0: a glibc thread ends a run that
 * lasts longer (a byte into each pipe and a stop flag; the run fails). 0 or
 * an errno value, with r->error set. */
int wk_pipe_pingpong(const wk_ops_t *ops, long n, int watchdog_ms, wk_result_t *r);

/* TCP echo over 127.0.0.1: a thread accepts conns connections and starts a
 * thread per connection that echoes 64-byte messages until EOF; conns
 * client threads each connect and make rts round trips, then shut their
 * side down. watchdog_ms as above (it shuts every socket down). */
int wk_tcp_echo(const wk_ops_t *ops, int conns, long rts, int watchdog_ms, wk_result_t *r);

/* Raise the soft RLIMIT_NOFILE towards the hard limit if it is below need
 * descriptors. 0, or an errno value if the hard limit is too low. */
int wk_raise_nofile(long need);

/* Kernel threads of this process (/proc/self/status), -1 if unknown. */
long wk_kernel_threads(void);

/* Descriptors one tcp_echo run needs besides the process's own. */
#define WK_TCP_FDS(conns) (2L * (conns) + 16)

#define WK_MSG            64 /* bytes per echo message */

#endif
