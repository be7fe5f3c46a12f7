/* The I/O poller: a ULT that waits for a file descriptor parks, and its
 * worker runs other ULTs, instead of blocking the worker's kernel thread in
 * the kernel (Go's network poller, libfibre's per-descriptor waits).
 *
 * Who waits: libweft-pthread.so's wrappers of read, recv, accept, poll,
 * epoll_wait and the rest (src/posix/blocking.c) look at the descriptor
 * first (wf_io_ready: a poll with no timeout, or the call itself with
 * MSG_DONTWAIT) and, when it is not ready, wait here; then they make the
 * program's own call, which is ready. weft_fd_wait (include/weft/io.h) is
 * the same wait for native programs.
 *
 * The table
 *   One entry per descriptor number (wf_iofd_t, in chunks made on first
 *   use and kept until weft_shutdown): a spinlock, the count of ULTs
 *   waiting for each direction, what the kernel was last asked to report
 *   (armed), and seq, a word the waiters wait on with wait-on-address
 *   (src/sync/wait.c). Waiting through wf_wait gives the poller's waits
 *   everything the other waits have: deadlines on the worker's timers,
 *   cancellation, and interruption by a signal sent to the ULT (EINTR).
 *
 * Protocol
 *   wait    under the entry's lock: read seq, count the caller in, and arm
 *           the descriptor for the union of the waiting directions
 *           (backend arm: one shot, level-triggered) - unless others wait
 *           already and the registration covers this direction too. Then
 *           wf_wait(&seq, that value): it returns at once if seq moved.
 *   report  whoever takes reports (below) gets fd from the backend's wait:
 *           under the lock, bump seq and forget armed (the one shot is
 *           spent); then wake every waiter of the entry. Each looks at the
 *           descriptor again and, if it is still not ready (another thread
 *           took the data, or the event was for the other direction),
 *           waits again, which arms again.
 *
 * Why nothing is lost: the waiter looked at the descriptor before the arm.
 * Readiness that came before the arm is reported by the arm itself
 * (level-triggered); readiness after it is reported later. Either report
 * bumps seq after the waiter read it, and wf_wait compares seq under its
 * bucket lock, which the poller's wake takes after the bump: the waiter
 * either sees the new value or is in the queue the wake walks.
 *
 * Why the first waiter always arms: weft does not see every close (glibc
 * closes descriptors itself, fclose among others). A closed descriptor
 * leaves the kernel's instance, and its number may come back as another
 * file; an entry nobody waits for is therefore never trusted to be armed.
 * While someone waits, its registration is fresh (closing a descriptor
 * another thread waits for is the program's race, as with plain threads).
 *
 * What a descriptor does
 *   A wait for a program's call (WF_IO_IFBLOCKS) happens only if the call
 *   would wait: a descriptor the program made non-blocking, or a socket
 *   with a timeout, gets the call made as it is. That costs two system
 *   calls (fcntl, getsockopt), so the answer is kept in the entry, and
 *   trusted while the arm finds the registration of the same open file in
 *   place (a close takes it out of the kernel's instance: the arm then
 *   adds, and the answer is made again). The program's own changes of the
 *   mode (fcntl F_SETFL, ioctl FIONBIO, setsockopt) go through
 *   libweft-pthread.so, which makes every answer be made again
 *   (wf_io_forget_all: the change may have been made through a dup of
 *   the descriptor); its close, dup2 and dup3 forget the number's
 *   (wf_io_forget). Another process that shares the open file and changes
 *   its mode is not seen.
 *
 * Who takes the reports (the backend's wait: several threads may call it
 * at once, and the kernel gives each report to one)
 *   - A worker with nothing to run takes them before it spins, and while
 *     it spins (sched.c, find_work, through wf_poll_hooks).
 *   - One worker that goes to sleep while ULTs wait here sleeps in the
 *     backend's wait instead of on its futex (hook_sleep; io.sleeper
 *     names it), until its next timer: a report then wakes that worker
 *     alone, and the ULTs it unparks run there. A waker that finds it in
 *     the poller (wf_worker.in_poll) kicks it (an eventfd) besides the
 *     futex wake; the other sleeping workers sleep on their futexes.
 *   - A busy worker takes them every 50 us at most, when its scheduler
 *     looks at its timers (sched.c, pick_next).
 *   - The watchdog, a kernel thread started with the poller that blocks
 *     every signal, takes them when nobody has for 2 ms and no worker
 *     sleeps in the poller (every worker in a long computation). It
 *     sleeps while no ULT waits here (wf_poll_waiting is 0), and wakes
 *     every 2 ms while some do (every 50 ms while a worker sleeps in the
 *     poller).
 *   Reports move ULTs to run queues with wake-ups that never yield: their
 *   takers are schedulers' contexts and the watchdog. The poller ends at
 *   weft_shutdown, after the workers.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "io/io.h"
#include "sched/carrier.h"
#include "sync/wait.h"
#include "util/sys.h"
#include "weft.h"

#define CHUNK_BITS 10
#define CHUNK      (1u << CHUNK_BITS)
#define NCHUNKS    (1u << 14) /* descriptors below 2^24 */
#define MAX_FDS    (CHUNK * NCHUNKS)

typedef struct wf_iofd {
	wf_spinlock_t lock;
	uint32_t seq;            /* bumped by each report; waited on */
	uint32_t n[WF_IO_KINDS]; /* ULTs waiting per kind (bit i of WF_IO_*); under lock */
	uint32_t armed;          /* WF_IO_* of the registration not yet reported; under lock */
	int added;               /* the backend's hint (io.h, arm); under lock */
	uint8_t verdict;         /* V_*: what a call on it does; under lock */
	uint32_t vgen;           /* verdict_gen when the verdict was made; under lock */
	_Atomic uint8_t kind;    /* WF_FD_*: a hint, read and written without the lock */
	struct wf_iolink *links; /* waits for several descriptors (wf_io_wait_many) that
	                            include this one; under lock */
} wf_iofd_t;

/* The verdict: known, and whether a call waits for readiness (no
 * O_NONBLOCK, no timeout) in each direction. */
enum { V_KNOWN = 1, V_IN_WAITS = 2, V_OUT_WAITS = 4 };

enum { IO_IDLE = 0, IO_RUNNING, IO_FAILED };

/* The watchdog takes reports itself when no worker has for BACKSTOP_NS
 * and none sleeps in the poller (every worker busy in a long computation);
 * with a sleeper it looks every SLEEPER_NS. */
#define BACKSTOP_NS 2000000u
#define SLEEPER_NS  50000000u

static struct {
	pthread_mutex_t lock;  /* start and stop */
	atomic_int state;      /* IO_* */
	pthread_t thread;      /* the watchdog */
	atomic_int stop;       /* 1: the watchdog ends (a futex word) */
	atomic_int idle;       /* 1: the watchdog sleeps until a wait counts in */
	atomic_int sleeper;    /* the worker sleeping in the poller, or -1 */
	_Atomic uint64_t last; /* when reports were last taken (ns) */
	const wf_io_backend_t *be;
	_Atomic(wf_iofd_t *) chunks[NCHUNKS];
	atomic_uint nchunks; /* chunks below this index may have been made */
} io = {.lock = PTHREAD_MUTEX_INITIALIZER, .sleeper = -1};

static wf_iofd_t *entry(int fd, int make)
{
	_Atomic(wf_iofd_t *) *at = &io.chunks[(unsigned)fd >> CHUNK_BITS];
	wf_iofd_t *c = atomic_load_explicit(at, memory_order_acquire);
	if (!c && make) {
		wf_iofd_t *fresh = calloc(CHUNK, sizeof *fresh);
		if (!fresh)
			return NULL;
		if (atomic_compare_exchange_strong_explicit(at, &c, fresh, memory_order_acq_rel,
							    memory_order_acquire)) {
			c = fresh;
			unsigned i = (unsigned)fd >> CHUNK_BITS, n = atomic_load(&io.nchunks);
			while (n <= i && !atomic_compare_exchange_weak(&io.nchunks, &n, i + 1))
				;
		} else
			free(fresh); /* another waiter made it first: c is its */
	}
	return c ? &c[(unsigned)fd & (CHUNK - 1)] : NULL;
}

/* Bumped when any descriptor's mode or timeouts change (wf_io_forget_all):
 * descriptors made by dup share them, so every verdict is made again. */
static atomic_uint verdict_gen;

/* What a call on fd does (V_*). Raw system calls: libweft-pthread.so
 * defines fcntl. */
static uint8_t verdict_of(int fd)
{
	long fl = syscall(SYS_fcntl, fd, F_GETFL);
	if (fl < 0 || (fl & O_NONBLOCK))
		return V_KNOWN;
	uint8_t v = V_KNOWN | V_IN_WAITS | V_OUT_WAITS;
	struct timeval tv;
	socklen_t len = sizeof tv;
	if (getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &len) == 0 && (tv.tv_sec || tv.tv_usec))
		v &= (uint8_t)~V_IN_WAITS;
	len = sizeof tv;
	if (getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, &len) == 0 && (tv.tv_sec || tv.tv_usec))
		v &= (uint8_t)~V_OUT_WAITS;
	return v;
}

int wf_io_kind(int fd)
{
	wf_iofd_t *d = fd >= 0 && (unsigned)fd < MAX_FDS ? entry(fd, 0) : NULL;
	return d ? atomic_load_explicit(&d->kind, memory_order_relaxed) : WF_FD_UNKNOWN;
}

void wf_io_set_kind(int fd, int kind)
{
	wf_iofd_t *d = fd >= 0 && (unsigned)fd < MAX_FDS ? entry(fd, 1) : NULL;
	if (d && atomic_load_explicit(&d->kind, memory_order_relaxed) != kind)
		atomic_store_explicit(&d->kind, (uint8_t)kind, memory_order_relaxed);
}

void wf_io_forget(int fd)
{
	wf_iofd_t *d = fd >= 0 && (unsigned)fd < MAX_FDS ? entry(fd, 0) : NULL;
	if (!d)
		return;
	wf_spin_lock(&d->lock);
	d->verdict = 0;
	atomic_store_explicit(&d->kind, WF_FD_UNKNOWN, memory_order_relaxed);
	wf_spin_unlock(&d->lock);
}

void wf_io_forget_all(void)
{
	atomic_fetch_add_explicit(&verdict_gen, 1, memory_order_acq_rel);
}

/* A report: wake every waiter of fd. Never yields (the callers are
 * schedulers' contexts and the watchdog). */
static void report(int fd)
{
	wf_iofd_t *d = entry(fd, 0);
	if (!d)
		return;
	wf_spin_lock(&d->lock);
	__atomic_fetch_add(&d->seq, 1, __ATOMIC_SEQ_CST);
	d->armed = 0;
	/* A wait for several descriptors takes its link out under this lock
	 * before it returns: its word is alive while the link is here. */
	for (wf_iolink_t *l = d->links; l; l = l->next) {
		__atomic_fetch_add(l->word, 1, __ATOMIC_SEQ_CST);
		wf_wake_noresched(l->word, 1);
	}
	wf_spin_unlock(&d->lock);
	wf_wake_noresched(&d->seq, INT_MAX);
}

/* Take what the backend has, waiting up to timeout_ns. */
static int harvest(int64_t timeout_ns, int drain)
{
	wf_io_event_t ev[WF_IO_BATCH];
	int n = io.be->wait(ev, WF_IO_BATCH, timeout_ns, drain);
	for (int i = 0; i < n; i++)
		report(ev[i].fd);
	return n;
}

/* ---- the workers' hooks (sched.h, wf_poll_hooks_t) ---------------------- */

static void hook_poll(uint64_t now, uint64_t gap)
{
	uint64_t last = atomic_load_explicit(&io.last, memory_order_relaxed);
	if (gap && now - last < gap)
		return;
	/* One of the busy workers whose turn it is takes them. */
	if (gap && !atomic_compare_exchange_strong_explicit(
			   &io.last, &last, now, memory_order_relaxed, memory_order_relaxed))
		return;
	if (!gap)
		atomic_store_explicit(&io.last, now, memory_order_relaxed);
	harvest(0, 0);
}

static int hook_sleep(wf_worker_t *w, uint64_t until)
{
	int none = -1;
	if (!atomic_compare_exchange_strong_explicit(&io.sleeper, &none, w->id,
						     memory_order_acquire, memory_order_relaxed))
		return 0;
	/* in_poll before the look at sleep_state; a waker CASes sleep_state
	 * before it looks at in_poll: one of the two sees the other, and a
	 * kick that comes before the wait stays readable until it. */
	atomic_store_explicit(&w->in_poll, 1, memory_order_seq_cst);
	uint64_t now = wf_now_ns();
	while (atomic_load_explicit(&w->sleep_state, memory_order_seq_cst) == WF_SLEEPING &&
	       now < until) {
		int64_t t = until == UINT64_MAX ? -1 : (int64_t)(until - now);
		wf_io_event_t ev[WF_IO_BATCH];
		int n = io.be->wait(ev, WF_IO_BATCH, t, 1);
		now = wf_now_ns();
		if (n > 0) {
			/* Awake by its own hand: wakers need not kick it. */
			int s = WF_SLEEPING;
			atomic_compare_exchange_strong_explicit(&w->sleep_state, &s, WF_AWAKE,
								memory_order_seq_cst,
								memory_order_relaxed);
			atomic_store_explicit(&io.last, now, memory_order_relaxed);
			for (int i = 0; i < n; i++)
				report(ev[i].fd);
			break;
		}
	}
	atomic_store_explicit(&w->in_poll, 0, memory_order_relaxed);
	atomic_store_explicit(&io.sleeper, -1, memory_order_release);
	return 1;
}

static void hook_kick(void)
{
	io.be->kick();
}

static const wf_poll_hooks_t hooks = {
	.poll = hook_poll,
	.sleep = hook_sleep,
	.kick = hook_kick,
};

/* ---- the watchdog -------------------------------------------------------- */

static void *watchdog_main(void *arg)
{
	(void)arg;
	sigset_t all;
	sigfillset(&all);
	WF_SYS(pthread_sigmask)(SIG_BLOCK, &all, NULL);
	prctl(PR_SET_NAME, "weft-poller", 0, 0, 0);
	while (!atomic_load_explicit(&io.stop, memory_order_acquire)) {
		if (!atomic_load_explicit(&wf_poll_waiting, memory_order_seq_cst)) {
			/* Nothing waits: sleep until a wait counts in (the
			 * flag and the count are a store-buffering pair, both
			 * sides sequentially consistent). */
			atomic_store_explicit(&io.idle, 1, memory_order_seq_cst);
			if (!atomic_load_explicit(&wf_poll_waiting, memory_order_seq_cst))
				wf_futex_wait(&io.idle, 1, NULL);
			atomic_store_explicit(&io.idle, 0, memory_order_relaxed);
			continue;
		}
		uint64_t now = wf_now_ns();
		int slept = atomic_load_explicit(&io.sleeper, memory_order_relaxed) >= 0;
		if (!slept &&
		    now - atomic_load_explicit(&io.last, memory_order_relaxed) >= BACKSTOP_NS) {
			atomic_store_explicit(&io.last, now, memory_order_relaxed);
			harvest(0, 0);
		}
		uint64_t d = slept ? SLEEPER_NS : BACKSTOP_NS;
		struct timespec rel = {0, (long)d};
		wf_futex_wait(&io.stop, 0, &rel);
	}
	return NULL;
}

/* Start the poller on first use: 0, or ENOTSUP if it is off or could not
 * start (the callers then wait in the kernel, as before it existed). */
static int start(void)
{
	int s = atomic_load_explicit(&io.state, memory_order_acquire);
	if (likely(s == IO_RUNNING))
		return 0;
	if (s == IO_FAILED)
		return ENOTSUP;
	WF_SYS(pthread_mutex_lock)(&io.lock);
	if (atomic_load(&io.state) == IO_IDLE) {
		io.be = &wf_io_epoll;
		atomic_store(&io.stop, 0);
		atomic_store(&io.idle, 0);
		atomic_store(&io.sleeper, -1);
		atomic_store(&io.last, wf_now_ns());
		int e = io.be->open();
		if (!e) {
			e = wf_sys_thread_create(&io.thread, watchdog_main, NULL);
			if (e)
				io.be->close();
		}
		if (!e)
			atomic_store_explicit(&wf_poll_hooks, &hooks, memory_order_release);
		atomic_store_explicit(&io.state, e ? IO_FAILED : IO_RUNNING, memory_order_release);
	}
	s = atomic_load(&io.state);
	WF_SYS(pthread_mutex_unlock)(&io.lock);
	return s == IO_RUNNING ? 0 : ENOTSUP;
}

int wf_io_usable(void)
{
	if (wf_rt.io != WEFT_IO_POLL ||
	    atomic_load_explicit(&io.state, memory_order_relaxed) == IO_FAILED)
		return 0;
	wf_worker_t *w = wf_worker_self();
	return w && w->current;
}

int wf_io_ready(int fd, uint32_t events)
{
	struct pollfd p = {.fd = fd,
			   .events = (short)((events & WF_IO_IN ? POLLIN : 0) |
					     (events & WF_IO_OUT ? POLLOUT : 0))};
	struct timespec zero = {0, 0};
	/* Raw: libweft-pthread.so defines ppoll. An error: the call will say. */
	return syscall(SYS_ppoll, &p, 1, &zero, NULL, 8) != 0;
}

/* Make the registration of fd cover the waiters it has and one more, for
 * events. Under d->lock. 0 or the backend's error. */
static int arm_for(wf_iofd_t *d, int fd, uint32_t events)
{
	uint32_t want = 0;
	int busy = 0;
	for (int i = 0; i < WF_IO_KINDS; i++) {
		busy |= d->n[i] != 0;
		if (d->n[i] || (events & (1u << i)))
			want |= 1u << i;
	}
	if (busy && (d->armed & want) == want)
		return 0;
	int e = io.be->arm(fd, want, &d->added);
	if (e)
		return e;
	d->armed = want;
	/* A fresh registration: maybe another file under this number. */
	if (d->added != 2 && !busy)
		d->verdict = 0;
	return 0;
}

/* Count a waiter for events in (+1) or out (-1). Under d->lock. */
static void count(wf_iofd_t *d, uint32_t events, int by)
{
	for (int i = 0; i < WF_IO_KINDS; i++)
		if (events & (1u << i))
			d->n[i] += (uint32_t)by;
}

/* A ULT counts in as waiting: the loops take reports while any waits, and
 * the watchdog wakes for the first. */
static void count_in(void)
{
	if (atomic_fetch_add_explicit(&wf_poll_waiting, 1, memory_order_seq_cst) == 0 &&
	    atomic_load_explicit(&io.idle, memory_order_seq_cst) &&
	    atomic_exchange_explicit(&io.idle, 0, memory_order_relaxed))
		wf_futex_wake(&io.idle, 1);
}

/* Take link l (for fd, registered) out of its entry's list. */
static void unlink_one(wf_iolink_t *l)
{
	wf_iofd_t *d = entry(l->fd, 0);
	wf_spin_lock(&d->lock);
	if (l->prev)
		l->prev->next = l->next;
	else
		d->links = l->next;
	if (l->next)
		l->next->prev = l->prev;
	count(d, l->events, -1);
	wf_spin_unlock(&d->lock);
}

int wf_io_wait_many(wf_iolink_t *links, int n, uint64_t deadline_ns, int flags)
{
	for (int i = 0; i < n; i++)
		if (links[i].fd < 0 || (unsigned)links[i].fd >= MAX_FDS || !links[i].events)
			return links[i].fd < 0 ? EBADF : ENOTSUP;
	int e = start();
	if (e)
		return e;
	uint32_t word = 0;
	int linked = 0;
	for (; linked < n; linked++) {
		wf_iolink_t *l = &links[linked];
		wf_iofd_t *d = entry(l->fd, 1);
		if (!d) {
			e = ENOMEM;
			break;
		}
		l->word = &word;
		wf_spin_lock(&d->lock);
		e = arm_for(d, l->fd, l->events);
		if (!e) {
			count(d, l->events, 1);
			l->prev = NULL;
			l->next = d->links;
			if (d->links)
				d->links->prev = l;
			d->links = l;
		}
		wf_spin_unlock(&d->lock);
		if (e)
			break;
	}
	int rc = e;
	if (!e) {
		count_in();
		rc = wf_wait(&word, 0, deadline_ns, flags | WF_WAIT_FOR(WF_BLOCK_IO));
		atomic_fetch_sub_explicit(&wf_poll_waiting, 1, memory_order_relaxed);
		if (rc == EAGAIN)
			rc = 0; /* a report came before the wait */
	}
	while (linked > 0)
		unlink_one(&links[--linked]);
	return rc;
}

int wf_io_wait(int fd, uint32_t events, uint64_t deadline_ns, int flags)
{
	if (fd < 0)
		return EBADF;
	if ((unsigned)fd >= MAX_FDS)
		return ENOTSUP;
	int e = start();
	if (e)
		return e;
	wf_iofd_t *d = entry(fd, 1);
	if (!d)
		return ENOMEM;
	int ifblocks = flags & WF_IO_IFBLOCKS;
	flags &= ~WF_IO_IFBLOCKS;
	wf_spin_lock(&d->lock);
	uint32_t seq = __atomic_load_n(&d->seq, __ATOMIC_RELAXED);
	if ((e = arm_for(d, fd, events)) != 0) {
		wf_spin_unlock(&d->lock);
		return e;
	}
	if (ifblocks) {
		unsigned gen = atomic_load_explicit(&verdict_gen, memory_order_acquire);
		if (!(d->verdict & V_KNOWN) || d->vgen != gen) {
			d->verdict = verdict_of(fd);
			d->vgen = gen;
		}
		if (!(d->verdict & (events & WF_IO_OUT ? V_OUT_WAITS : V_IN_WAITS))) {
			/* Armed for nothing: a report may wake nobody, which
			 * costs nothing. */
			wf_spin_unlock(&d->lock);
			return WF_IO_NOWAIT;
		}
	}
	count(d, events, 1);
	wf_spin_unlock(&d->lock);
	count_in();

	int rc = wf_wait(&d->seq, seq, deadline_ns, flags | WF_WAIT_FOR(WF_BLOCK_IO));

	atomic_fetch_sub_explicit(&wf_poll_waiting, 1, memory_order_relaxed);
	wf_spin_lock(&d->lock);
	count(d, events, -1);
	wf_spin_unlock(&d->lock);
	return rc == EAGAIN ? 0 : rc; /* EAGAIN: a report came before the wait */
}

/* Free the table's chunks (nobody waits: at stop, or in a fork's child). */
static void forget_entries(void)
{
	for (unsigned i = 0, n = atomic_exchange(&io.nchunks, 0); i < n; i++)
		free(atomic_exchange(&io.chunks[i], NULL));
}

void wf_io_stop(void)
{
	WF_SYS(pthread_mutex_lock)(&io.lock);
	if (atomic_load(&io.state) == IO_RUNNING) {
		atomic_store_explicit(&wf_poll_hooks, NULL, memory_order_release);
		atomic_store_explicit(&io.stop, 1, memory_order_release);
		atomic_store_explicit(&io.idle, 0, memory_order_release);
		wf_futex_wake(&io.stop, 1);
		wf_futex_wake(&io.idle, 1);
		WF_SYS(pthread_join)(io.thread, NULL);
		io.be->close();
	}
	forget_entries();
	atomic_store(&wf_poll_waiting, 0);
	atomic_store(&io.state, IO_IDLE);
	WF_SYS(pthread_mutex_unlock)(&io.lock);
}

void wf_io_forked(int again)
{
	/* The instance is shared with the parent (the same kernel object), and
	 * neither the watchdog nor any waiter came along: never use it here.
	 * A child that has a runtime again drops its references to it and
	 * starts a fresh one with its next wait; the entries are forgotten
	 * (their locks may have been held by threads that are gone). */
	atomic_store(&wf_poll_hooks, NULL);
	if (!again) {
		atomic_store(&io.state, IO_FAILED);
		return;
	}
	static const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
	memcpy(&io.lock, &fresh, sizeof fresh);
	if (atomic_load(&io.state) == IO_RUNNING)
		io.be->close();
	forget_entries();
	atomic_store(&wf_poll_waiting, 0);
	atomic_store(&io.state, IO_IDLE);
}

/* ---- the public wait ---------------------------------------------------- */

/* Wait in the kernel: a poll with the time left, in a system call section. */
static int kernel_wait(int fd, short events, uint64_t deadline)
{
	for (;;) {
		struct timespec rel, *relp = NULL;
		if (deadline) {
			uint64_t now = wf_now_ns();
			if (now >= deadline)
				return ETIMEDOUT;
			rel.tv_sec = (time_t)((deadline - now) / 1000000000u);
			rel.tv_nsec = (long)((deadline - now) % 1000000000u);
			relp = &rel;
		}
		struct pollfd p = {.fd = fd, .events = events};
		wf_ult_t *u = wf_section_begin();
		long r = syscall(SYS_ppoll, &p, 1, relp, NULL, 8);
		int e = errno;
		wf_section_end(u);
		/* A cancellation that came while it was in the kernel is acted
		 * on now: a section is not interrupted by one. */
		wf_testcancel();
		if (r > 0)
			return p.revents & POLLNVAL ? EBADF : 0;
		if (r < 0 && e == EINTR)
			return EINTR;
		if (r < 0)
			return e == ENOMEM ? ENOMEM : EINVAL;
	}
}

int weft_fd_wait(int fd, short events, clockid_t clock, const struct timespec *abstime)
{
	if (fd < 0)
		return EBADF;
	if (!(events & (POLLIN | POLLOUT)) || (events & ~(POLLIN | POLLOUT)))
		return EINVAL;
	if (clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME)
		return EINVAL;
	uint64_t deadline = 0;
	if (abstime) {
		int e = wf_deadline(clock, abstime, &deadline);
		if (e)
			return e;
	}
	wf_testcancel();
	uint32_t ev = (events & POLLIN ? WF_IO_IN : 0) | (events & POLLOUT ? WF_IO_OUT : 0);
	while (wf_io_usable()) {
		struct pollfd p = {.fd = fd, .events = events};
		struct timespec zero = {0, 0};
		if (syscall(SYS_ppoll, &p, 1, &zero, NULL, 8) > 0)
			return p.revents & POLLNVAL ? EBADF : 0;
		int rc = wf_io_wait(fd, ev, deadline, WF_WAIT_CANCEL);
		if (rc == ECANCELED)
			wf_cancel_act();
		if (rc == 0)
			continue;
		if (rc == ETIMEDOUT || rc == EINTR || rc == ENOMEM || rc == EBADF)
			return rc;
		break; /* not a kind the poller waits for, or no poller: the kernel */
	}
	return kernel_wait(fd, events, deadline);
}
