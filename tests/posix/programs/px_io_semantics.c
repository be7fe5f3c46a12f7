/* The semantics of blocking descriptor calls, as glibc gives them, kept
 * under LD_PRELOAD=libweft-pthread.so, whose read, write, recv*, send*,
 * accept, poll, select and epoll_wait park the calling thread on an epoll
 * poller when the descriptor is not ready (src/posix/blocking.c).
 * Each line is one case; its result depends only on the kernel's rules:
 *
 *   1  O_NONBLOCK and MSG_DONTWAIT are never waited for (EAGAIN at once),
 *      also when set through a dup of the descriptor; a transfer of 0
 *      bytes returns 0 at once
 *   2  SO_RCVTIMEO / SO_SNDTIMEO time the call out (EAGAIN), also accept's,
 *      and also when set through a dup
 *   3  poll of one descriptor and of two, ppoll, select, pselect: timeouts,
 *      wake-ups by data, POLLHUP, POLLNVAL / EBADF, the time select leaves;
 *      waiting for an event the descriptor lacks costs no CPU time
 *   4  epoll_wait, epoll_pwait: timeouts, wake-ups, edge-triggered items
 *   5  signals: EINTR without SA_RESTART, restarted with it (read, recv,
 *      accept, write), never restarted (poll, epoll_wait, select, a socket
 *      with a timeout); ignored and blocked signals interrupt nothing
 *   6  a blocking send or write of megabytes returns the whole length
 *   7  MSG_WAITALL waits for everything (or for EOF)
 *   8  eight threads blocked in accept (and in read) on one descriptor
 *   9  readv and writev with three buffers
 *   10 EOF reaches a thread blocked in read or recv; EPIPE one in write
 *   11 pthread_cancel of a thread blocked in read, recv, accept, write, poll,
 *      epoll_wait, select (deferred; all cancellation points), a pending
 *      cancellation at a read that would not block, disabled cancellation
 *
 * A case that waits for another thread to block first sleeps 50 ms after a
 * handshake; one whose signal might have come before the call sends again.
 * A call that must return at once is made on another thread, which is
 * given data after a second if it waits, so that a wrong wait shows as a
 * line of its own rather than as a hang.
 * Elapsed times are checked here, not printed. Every case runs under a
 * watchdog (alarm): a hang is reported with its case and exit status 3.
 * Run on one worker and on two; the output must be glibc's. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define WATCHDOG_S 20

static int failures;

static void die(const char *what)
{
	fprintf(stderr, "px_io_semantics: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* A result that differs from the one expected also fails the exit status. */
static void check(int ok, const char *what)
{
	if (!ok) {
		failures++;
		fprintf(stderr, "px_io_semantics: unexpected: %s\n", what);
	}
}

/* ---- the watchdog ---------------------------------------------------------- */

static const char *volatile current_case = "start";

static void on_alarm(int sig)
{
	(void)sig;
	const char *c = current_case;
	static const char m[] = "px_io_semantics: watchdog: hung in case ";
	(void)!write(2, m, sizeof m - 1);
	(void)!write(2, c, strlen(c));
	(void)!write(2, "\n", 1);
	_exit(3);
}

static void begin(const char *name)
{
	fflush(stdout);
	current_case = name;
	alarm(WATCHDOG_S);
}

/* ---- helpers ----------------------------------------------------------------- */

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static const char *ename(int e)
{
	static char buf[32];
	switch (e) {
	case EAGAIN:
		return "EAGAIN";
	case EINTR:
		return "EINTR";
	case EBADF:
		return "EBADF";
	case EINVAL:
		return "EINVAL";
	case EPIPE:
		return "EPIPE";
	case ECONNRESET:
		return "ECONNRESET";
	case EINPROGRESS:
		return "EINPROGRESS";
	default:
		snprintf(buf, sizeof buf, "errno %d", e);
		return buf;
	}
}

/* "N" for a result, "-1 ENAME" for a failure. */
static const char *rs(long r, int e)
{
	static char buf[2][64];
	static int k;
	char *b = buf[k++ & 1];
	if (r < 0)
		snprintf(b, 64, "-1 %s", ename(e));
	else
		snprintf(b, 64, "%ld", r);
	return b;
}

/* poll's revents by name. */
static const char *pev(short ev)
{
	static char bufs[2][128];
	static int k;
	char *buf = bufs[k++ & 1];
	buf[0] = 0;
	static const struct {
		short bit;
		const char *name;
	} names[] = {{POLLIN, "POLLIN"},      {POLLPRI, "POLLPRI"}, {POLLOUT, "POLLOUT"},
		     {POLLERR, "POLLERR"},    {POLLHUP, "POLLHUP"}, {POLLNVAL, "POLLNVAL"},
		     {POLLRDHUP, "POLLRDHUP"}};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (ev & names[i].bit) {
			if (buf[0])
				strcat(buf, "|");
			strcat(buf, names[i].name);
		}
	return buf[0] ? buf : "0";
}

static const char *eev(uint32_t ev)
{
	static char buf[128];
	buf[0] = 0;
	static const struct {
		uint32_t bit;
		const char *name;
	} names[] = {{EPOLLIN, "EPOLLIN"},
		     {EPOLLOUT, "EPOLLOUT"},
		     {EPOLLERR, "EPOLLERR"},
		     {EPOLLHUP, "EPOLLHUP"},
		     {EPOLLRDHUP, "EPOLLRDHUP"}};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (ev & names[i].bit) {
			if (buf[0])
				strcat(buf, "|");
			strcat(buf, names[i].name);
		}
	return buf[0] ? buf : "0";
}

/* A timeout of about 100 ms: not early, not very late (a missed deadline
 * would show as a hang, caught by the watchdog). */
static const char *timed(double t0, double lo_ms)
{
	double dt = now_ms() - t0;
	if (dt >= lo_ms && dt < 5000)
		return "timeout ok";
	fprintf(stderr, "px_io_semantics: %s: took %.1f ms\n", current_case, dt);
	failures++;
	return dt < lo_ms ? "timeout too short" : "timeout too long";
}

/* Returned at once, not after a wait. */
static const char *quick(double t0)
{
	double dt = now_ms() - t0;
	if (dt < 1000)
		return "at once";
	failures++;
	return "after a wait";
}

/* The process's CPU time (ms): a thread that waits uses next to none. */
static double cpu_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Less than 100 ms of CPU time since c0, for a wait of 300 ms. */
static const char *cpu_little(double c0, const char *name)
{
	double used = cpu_ms() - c0;
	if (used < 100)
		return "little";
	fprintf(stderr, "px_io_semantics: %s: %.0f ms of CPU time\n", name, used);
	failures++;
	return "as much as the wait (busy)";
}

static const char *yn(int b)
{
	return b ? "yes" : "no";
}

static void xpipe(int p[2])
{
	if (pipe(p))
		die("pipe");
}

static void xsocketpair(int s[2])
{
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, s))
		die("socketpair");
}

static void close2(int p[2])
{
	close(p[0]);
	close(p[1]);
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK))
		die("fcntl");
}

/* A listening TCP socket on 127.0.0.1, port from the kernel; *a is its address. */
static int tcp_listener(struct sockaddr_in *a, int type_flags, int backlog)
{
	int fd = socket(AF_INET, SOCK_STREAM | type_flags, 0);
	if (fd < 0)
		die("socket");
	memset(a, 0, sizeof *a);
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof *a;
	if (bind(fd, (struct sockaddr *)a, sizeof *a) ||
	    getsockname(fd, (struct sockaddr *)a, &len))
		die("bind");
	if (listen(fd, backlog))
		die("listen");
	return fd;
}

static int tcp_connect(const struct sockaddr_in *a)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket");
	if (connect(fd, (const struct sockaddr *)a, sizeof *a))
		die("connect");
	return fd;
}

/* A connected TCP pair over loopback: s[0] the client's end, s[1] the server's. */
static void tcp_pair(int s[2])
{
	struct sockaddr_in a;
	int l = tcp_listener(&a, 0, 4);
	s[0] = tcp_connect(&a);
	s[1] = accept(l, NULL, NULL);
	if (s[1] < 0)
		die("accept");
	close(l);
}

static void write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("write");
		p += n;
		len -= (size_t)n;
	}
}

/* Fill a descriptor's buffer with non-blocking sends of 4 KiB until EAGAIN. */
static long fill(int fd, int is_socket)
{
	static char junk[4096];
	long total = 0;
	for (;;) {
		ssize_t n = is_socket ? send(fd, junk, sizeof junk, MSG_DONTWAIT)
				      : write(fd, junk, sizeof junk);
		if (n < 0) {
			if (errno != EAGAIN)
				die("fill");
			return total;
		}
		total += n;
	}
}

/* Fill a blocking pipe's write end (non-blocking for the while). */
static void fill_pipe(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK))
		die("fcntl");
	fill(fd, 0);
	if (fcntl(fd, F_SETFL, fl))
		die("fcntl");
}

static void xcreate(pthread_t *t, void *(*fn)(void *), void *arg)
{
	int e = pthread_create(t, NULL, fn, arg);
	if (e) {
		errno = e;
		die("pthread_create");
	}
}

static void xjoin(pthread_t t, void **ret)
{
	int e = pthread_join(t, ret);
	if (e) {
		errno = e;
		die("pthread_join");
	}
}

/* ---- a call made by another thread --------------------------------------------
 * A thread makes one call (fn) on b's descriptors; the one who started it
 * knows when it entered (a handshake) and when it returned. */

struct blk {
	long (*fn)(struct blk *);
	int fd, fd2;
	int tmo_ms;     /* for poll and epoll_wait */
	char buf[4096]; /* what the call read */
	long ret;
	int err;
	short revents;
	atomic_int entered, done, cleanup_ran;
};

static void *blk_main(void *arg)
{
	struct blk *b = arg;
	atomic_store(&b->entered, 1);
	b->ret = b->fn(b);
	b->err = errno;
	atomic_store(&b->done, 1);
	return NULL;
}

/* Start b's call on a thread and return once it has (most likely) blocked. */
static void blk_start(pthread_t *t, struct blk *b, long (*fn)(struct blk *), int fd)
{
	b->fn = fn;
	b->fd = fd;
	b->ret = -2;
	b->err = 0;
	atomic_store(&b->entered, 0);
	atomic_store(&b->done, 0);
	atomic_store(&b->cleanup_ran, 0);
	xcreate(t, blk_main, b);
	while (!atomic_load(&b->entered))
		nap_ms(1);
	nap_ms(50);
}

/* Wait up to ms for b's call to return: 1 if it did. */
static int blk_wait(struct blk *b, long ms)
{
	for (long i = 0; i < ms; i++) {
		if (atomic_load(&b->done))
			return 1;
		nap_ms(1);
	}
	return atomic_load(&b->done);
}

static long do_read(struct blk *b)
{
	return read(b->fd, b->buf, sizeof b->buf);
}

static long do_recv(struct blk *b)
{
	return recv(b->fd, b->buf, sizeof b->buf, 0);
}

static long do_accept(struct blk *b)
{
	return accept(b->fd, NULL, NULL);
}

static long do_write4k(struct blk *b)
{
	return write(b->fd, b->buf, 4096);
}

static long do_poll(struct blk *b)
{
	struct pollfd p = {.fd = b->fd, .events = POLLIN};
	long r = poll(&p, 1, b->tmo_ms);
	b->revents = p.revents;
	return r;
}

static long do_epoll(struct blk *b)
{
	struct epoll_event ev[4];
	memset(ev, 0, sizeof ev);
	long r = epoll_wait(b->fd, ev, 4, b->tmo_ms);
	b->revents = r > 0 ? (short)ev[0].events : 0;
	return r;
}

static long do_read0(struct blk *b)
{
	return read(b->fd, b->buf, 0);
}

static long do_write0(struct blk *b)
{
	return write(b->fd, b->buf, 0);
}

static long do_select(struct blk *b)
{
	fd_set rd;
	FD_ZERO(&rd);
	FD_SET(b->fd, &rd);
	struct timeval tv = {10, 0};
	return select(b->fd + 1, &rd, NULL, NULL, b->tmo_ms < 0 ? NULL : &tv);
}

static long do_readv3(struct blk *b)
{
	struct iovec v[3] = {{b->buf, 4}, {b->buf + 4, 4}, {b->buf + 8, 4}};
	return readv(b->fd, v, 3);
}

/* A writer that sleeps, then writes (or closes, or shuts down). */
struct later {
	int fd;
	long ms;
	const char *data; /* NULL: close fd; "" : shutdown(SHUT_WR) */
};

static void *later_main(void *arg)
{
	struct later *l = arg;
	nap_ms(l->ms);
	if (!l->data)
		close(l->fd);
	else if (!l->data[0])
		shutdown(l->fd, SHUT_WR);
	else
		write_all(l->fd, l->data, strlen(l->data));
	return NULL;
}

/* ---- 1: O_NONBLOCK and MSG_DONTWAIT ------------------------------------------ */

static void s1_nonblock(void)
{
	say("== 1 non-blocking descriptors and MSG_DONTWAIT");
	char c[16];
	int p[2], s[2];
	double t0;
	long r;

	begin("1a");
	xpipe(p);
	set_nonblock(p[0]);
	t0 = now_ms();
	r = read(p[0], c, sizeof c);
	say("1a read on an empty O_NONBLOCK pipe: %s, %s", rs(r, errno), quick(t0));
	check(r < 0 && errno == EAGAIN, "1a");

	begin("1b");
	set_nonblock(p[1]);
	long filled = fill(p[1], 0);
	t0 = now_ms();
	r = write(p[1], c, 1);
	say("1b write on a full O_NONBLOCK pipe: %s, %s (took %s bytes first)", rs(r, errno),
	    quick(t0), filled > 0 ? "some" : "no");
	check(r < 0 && errno == EAGAIN, "1b");
	close2(p);

	begin("1c");
	xsocketpair(s);
	t0 = now_ms();
	r = recv(s[0], c, sizeof c, MSG_DONTWAIT);
	say("1c recv(MSG_DONTWAIT) on an empty blocking socket: %s, %s", rs(r, errno), quick(t0));
	check(r < 0 && errno == EAGAIN, "1c");

	begin("1d");
	t0 = now_ms();
	r = recvfrom(s[0], c, sizeof c, MSG_DONTWAIT, NULL, NULL);
	int e1 = errno;
	struct iovec v = {c, sizeof c};
	struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
	long r2 = recvmsg(s[0], &m, MSG_DONTWAIT);
	say("1d recvfrom, recvmsg(MSG_DONTWAIT) on it: %s, %s, %s", rs(r, e1), rs(r2, errno),
	    quick(t0));
	check(r < 0 && r2 < 0, "1d");

	begin("1e");
	long sfill = 0;
	for (;;) {
		ssize_t n = send(s[1], c, sizeof c, MSG_DONTWAIT);
		if (n < 0)
			break;
		sfill += n;
	}
	e1 = errno;
	say("1e send(MSG_DONTWAIT) on a full blocking socket: %s (after %s)", rs(-1, e1),
	    sfill > 0 ? "filling it" : "nothing");
	check(e1 == EAGAIN, "1e");
	close2(s);

	begin("1f");
	xsocketpair(s);
	set_nonblock(s[0]);
	t0 = now_ms();
	r = read(s[0], c, sizeof c);
	e1 = errno;
	r2 = recv(s[0], c, sizeof c, 0);
	say("1f read, recv(0) on an empty O_NONBLOCK socket: %s, %s, %s", rs(r, e1), rs(r2, errno),
	    quick(t0));
	check(r < 0 && e1 == EAGAIN && r2 < 0 && errno == EAGAIN, "1f");
	close2(s);

	begin("1g");
	struct sockaddr_in a;
	int l = tcp_listener(&a, 0, 4);
	set_nonblock(l);
	t0 = now_ms();
	r = accept(l, NULL, NULL);
	e1 = errno;
	r2 = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	say("1g accept, accept4 on an O_NONBLOCK listener with nothing pending: %s, %s, %s",
	    rs(r, e1), rs(r2, errno), quick(t0));
	check(r < 0 && e1 == EAGAIN && r2 < 0 && errno == EAGAIN, "1g");
	close(l);

	begin("1h");
	l = tcp_listener(&a, SOCK_NONBLOCK, 4);
	t0 = now_ms();
	r = accept(l, NULL, NULL);
	say("1h accept on a SOCK_NONBLOCK listener: %s, %s", rs(r, errno), quick(t0));
	check(r < 0 && errno == EAGAIN, "1h");
	/* and once a client is there, it is accepted */
	int cfd = tcp_connect(&a);
	struct pollfd pl = {.fd = l, .events = POLLIN};
	int pr = poll(&pl, 1, 5000);
	r = accept(l, NULL, NULL);
	say("1h then poll says %d %s, and accept takes it: %s", pr, pev(pl.revents),
	    r >= 0 ? "yes" : "no");
	check(r >= 0, "1h accept");
	if (r >= 0)
		close((int)r);
	close(cfd);
	close(l);

	/* A transfer of nothing returns 0 at once, even where a transfer of
	 * something would block. Made on another thread: if it waits, data
	 * (or room) is given after a second, and the line says so. */
	static struct blk b;
	pthread_t t;
	begin("1i");
	xpipe(p);
	blk_start(&t, &b, do_read0, p[0]);
	int at_once = blk_wait(&b, 1000);
	if (!at_once)
		write_all(p[1], "x", 1);
	xjoin(t, NULL);
	say("1i read of 0 bytes from an empty blocking pipe: %s, %s", rs(b.ret, b.err),
	    at_once ? "at once" : "only once data came");
	check(at_once && b.ret == 0, "1i");
	close2(p);

	begin("1j");
	xpipe(p);
	fill_pipe(p[1]);
	blk_start(&t, &b, do_write0, p[1]);
	at_once = blk_wait(&b, 1000);
	if (!at_once) {
		static char drain[1 << 16];
		if (read(p[0], drain, sizeof drain) <= 0)
			die("read");
	}
	xjoin(t, NULL);
	say("1j write of 0 bytes to a full blocking pipe: %s, %s", rs(b.ret, b.err),
	    at_once ? "at once" : "only once there was room");
	check(at_once && b.ret == 0, "1j");
	close2(p);

	/* O_NONBLOCK belongs to the open file, which a dup shares: set through
	 * the dup, it holds for the first descriptor too - also after that
	 * one was seen blocking in a read. */
	begin("1k");
	xpipe(p);
	blk_start(&t, &b, do_read, p[0]);
	write_all(p[1], "x", 1);
	xjoin(t, NULL);
	int d = dup(p[0]);
	if (d < 0)
		die("dup");
	set_nonblock(d);
	blk_start(&t, &b, do_read, p[0]);
	at_once = blk_wait(&b, 1000);
	if (!at_once)
		write_all(p[1], "y", 1);
	xjoin(t, NULL);
	say("1k read of an empty pipe, made O_NONBLOCK through a dup after a blocking read: %s, %s",
	    rs(b.ret, b.err), at_once ? "at once" : "only once data came");
	check(at_once && b.ret < 0 && b.err == EAGAIN, "1k");
	close(d);
	close2(p);

	begin("1l");
	xsocketpair(s);
	blk_start(&t, &b, do_read, s[0]);
	write_all(s[1], "x", 1);
	xjoin(t, NULL);
	d = dup(s[0]);
	if (d < 0)
		die("dup");
	set_nonblock(d);
	blk_start(&t, &b, do_read, s[0]);
	at_once = blk_wait(&b, 1000);
	if (!at_once)
		write_all(s[1], "y", 1);
	xjoin(t, NULL);
	say("1l read of an empty socket, made O_NONBLOCK through a dup after a blocking read: %s, "
	    "%s",
	    rs(b.ret, b.err), at_once ? "at once" : "only once data came");
	check(at_once && b.ret < 0 && b.err == EAGAIN, "1l");
	close(d);
	close2(s);
}

/* ---- 2: SO_RCVTIMEO and SO_SNDTIMEO ------------------------------------------ */

static void set_timeo(int fd, int opt, long ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	if (setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv))
		die("setsockopt");
}

static void s2_timeo(void)
{
	say("== 2 socket timeouts");
	char c[16];
	int s[2];
	double t0;
	long r;

	begin("2a");
	xsocketpair(s);
	set_timeo(s[0], SO_RCVTIMEO, 100);
	t0 = now_ms();
	r = recv(s[0], c, sizeof c, 0);
	say("2a recv with SO_RCVTIMEO 100 ms: %s, %s", rs(r, errno), timed(t0, 90));
	check(r < 0 && errno == EAGAIN, "2a");

	begin("2b");
	t0 = now_ms();
	r = read(s[0], c, sizeof c);
	say("2b read on it: %s, %s", rs(r, errno), timed(t0, 90));
	check(r < 0 && errno == EAGAIN, "2b");

	begin("2c");
	struct msghdr m;
	struct iovec v = {c, sizeof c};
	memset(&m, 0, sizeof m);
	m.msg_iov = &v;
	m.msg_iovlen = 1;
	t0 = now_ms();
	r = recvmsg(s[0], &m, 0);
	say("2c recvmsg on it: %s, %s", rs(r, errno), timed(t0, 90));
	check(r < 0 && errno == EAGAIN, "2c");

	begin("2d");
	/* Data within the timeout: it is returned. */
	set_timeo(s[0], SO_RCVTIMEO, 2000);
	pthread_t t;
	struct later w = {s[1], 20, "hello"};
	xcreate(&t, later_main, &w);
	r = recv(s[0], c, sizeof c, 0);
	say("2d recv with SO_RCVTIMEO 2 s, data after 20 ms: %s \"%.*s\"", rs(r, errno),
	    r > 0 ? (int)r : 0, c);
	check(r == 5, "2d");
	xjoin(t, NULL);

	begin("2e");
	fill(s[1], 1);
	set_timeo(s[1], SO_SNDTIMEO, 100);
	t0 = now_ms();
	r = send(s[1], c, 1, 0);
	say("2e send on a full socket with SO_SNDTIMEO 100 ms: %s, %s", rs(r, errno),
	    timed(t0, 90));
	check(r < 0 && errno == EAGAIN, "2e");

	begin("2f");
	t0 = now_ms();
	r = write(s[1], c, 1);
	say("2f write on it: %s, %s", rs(r, errno), timed(t0, 90));
	check(r < 0 && errno == EAGAIN, "2f");
	close2(s);

	begin("2g");
	/* A TCP socket with a receive timeout. */
	tcp_pair(s);
	set_timeo(s[1], SO_RCVTIMEO, 100);
	t0 = now_ms();
	r = recv(s[1], c, sizeof c, 0);
	say("2g recv on TCP with SO_RCVTIMEO 100 ms: %s, %s", rs(r, errno), timed(t0, 90));
	check(r < 0 && errno == EAGAIN, "2g");
	close2(s);

	begin("2h");
	struct sockaddr_in a;
	int l = tcp_listener(&a, 0, 4);
	set_timeo(l, SO_RCVTIMEO, 100);
	t0 = now_ms();
	r = accept(l, NULL, NULL);
	say("2h accept on a listener with SO_RCVTIMEO 100 ms: %s, %s", rs(r, errno), timed(t0, 90));
	check(r < 0 && errno == EAGAIN, "2h");
	close(l);

	/* A receive timeout belongs to the socket, which a dup shares. */
	begin("2i");
	static struct blk b;
	xsocketpair(s);
	blk_start(&t, &b, do_recv, s[0]);
	write_all(s[1], "x", 1);
	xjoin(t, NULL);
	int d = dup(s[0]);
	if (d < 0)
		die("dup");
	set_timeo(d, SO_RCVTIMEO, 100);
	t0 = now_ms();
	blk_start(&t, &b, do_recv, s[0]);
	int in_time = blk_wait(&b, 2000);
	if (!in_time)
		write_all(s[1], "y", 1);
	xjoin(t, NULL);
	say("2i recv after a blocking recv, SO_RCVTIMEO 100 ms set through a dup: %s, %s",
	    rs(b.ret, b.err), in_time ? timed(t0, 90) : "only once data came");
	check(in_time && b.ret < 0 && b.err == EAGAIN, "2i");
	close(d);
	close2(s);
}

/* ---- 3: poll of one descriptor ------------------------------------------------- */

static void s3_poll(void)
{
	say("== 3 poll and select");
	int p[2], s[2];
	double t0;
	long r;
	struct pollfd pf;
	pthread_t t;

	begin("3a");
	xpipe(p);
	pf = (struct pollfd){.fd = p[0], .events = POLLIN};
	t0 = now_ms();
	r = poll(&pf, 1, 100);
	say("3a poll(POLLIN, 100 ms) on an empty pipe: %s revents %s, %s", rs(r, errno),
	    pev(pf.revents), timed(t0, 90));
	check(r == 0, "3a");

	begin("3b");
	struct later w = {p[1], 20, "x"};
	xcreate(&t, later_main, &w);
	pf = (struct pollfd){.fd = p[0], .events = POLLIN};
	r = poll(&pf, 1, 1000);
	say("3b poll(POLLIN, 1 s), written after 20 ms: %s revents %s", rs(r, errno),
	    pev(pf.revents));
	check(r == 1 && pf.revents == POLLIN, "3b");
	xjoin(t, NULL);

	begin("3c");
	t0 = now_ms();
	pf = (struct pollfd){.fd = p[0], .events = POLLIN};
	r = poll(&pf, 1, 0);
	say("3c poll(POLLIN, 0) with a byte in the pipe: %s revents %s, %s", rs(r, errno),
	    pev(pf.revents), quick(t0));
	char c[16];
	if (read(p[0], c, sizeof c) != 1)
		die("read");
	pf = (struct pollfd){.fd = p[0], .events = POLLIN};
	r = poll(&pf, 1, 0);
	say("3c poll(POLLIN, 0) on the empty pipe: %s revents %s, %s", rs(r, errno),
	    pev(pf.revents), quick(t0));
	check(r == 0, "3c");

	begin("3d");
	w = (struct later){p[1], 20, "y"};
	xcreate(&t, later_main, &w);
	pf = (struct pollfd){.fd = p[0], .events = POLLIN};
	r = poll(&pf, 1, -1);
	say("3d poll(POLLIN, -1), written after 20 ms: %s revents %s", rs(r, errno),
	    pev(pf.revents));
	check(r == 1, "3d");
	xjoin(t, NULL);
	if (read(p[0], c, sizeof c) != 1)
		die("read");

	begin("3e");
	t0 = now_ms();
	pf = (struct pollfd){.fd = p[1], .events = POLLOUT};
	r = poll(&pf, 1, -1);
	say("3e poll(POLLOUT, -1) on a pipe with room: %s revents %s, %s", rs(r, errno),
	    pev(pf.revents), quick(t0));
	check(r == 1, "3e");

	begin("3f");
	w = (struct later){p[1], 20, NULL}; /* closes the write end */
	xcreate(&t, later_main, &w);
	pf = (struct pollfd){.fd = p[0], .events = POLLIN};
	r = poll(&pf, 1, 5000);
	say("3f poll(POLLIN, 5 s), write end closed after 20 ms: %s revents %s", rs(r, errno),
	    pev(pf.revents));
	check(r == 1 && (pf.revents & POLLHUP), "3f");
	xjoin(t, NULL);
	close(p[0]);

	begin("3g");
	int bad = 9999; /* no descriptor */
	if (fcntl(bad, F_GETFD) != -1 || errno != EBADF)
		die("descriptor 9999 is open");
	t0 = now_ms();
	pf = (struct pollfd){.fd = bad, .events = POLLIN};
	r = poll(&pf, 1, 100);
	say("3g poll(POLLIN, 100 ms) of a closed descriptor: %s revents %s, %s", rs(r, errno),
	    pev(pf.revents), quick(t0));
	check(r == 1 && pf.revents == POLLNVAL, "3g");

	begin("3h");
	t0 = now_ms();
	pf = (struct pollfd){.fd = -1, .events = POLLIN};
	r = poll(&pf, 1, 100);
	say("3h poll(fd -1, 100 ms): %s revents %s, %s", rs(r, errno), pev(pf.revents),
	    timed(t0, 90));
	check(r == 0, "3h");

	begin("3i");
	xsocketpair(s);
	w = (struct later){s[1], 20, ""}; /* shutdown(SHUT_WR) */
	xcreate(&t, later_main, &w);
	pf = (struct pollfd){.fd = s[0], .events = POLLIN | POLLRDHUP};
	r = poll(&pf, 1, 5000);
	say("3i poll(POLLIN|POLLRDHUP, 5 s), peer shut down after 20 ms: %s revents %s",
	    rs(r, errno), pev(pf.revents));
	check(r == 1 && (pf.revents & POLLRDHUP), "3i");
	xjoin(t, NULL);
	close2(s);

	begin("3j");
	xpipe(p);
	struct timespec ts = {0, 100000000L};
	pf = (struct pollfd){.fd = p[0], .events = POLLIN};
	t0 = now_ms();
	r = ppoll(&pf, 1, &ts, NULL);
	say("3j ppoll(POLLIN, 100 ms) on an empty pipe: %s, %s", rs(r, errno), timed(t0, 90));
	check(r == 0, "3j");
	w = (struct later){p[1], 20, "z"};
	xcreate(&t, later_main, &w);
	ts = (struct timespec){2, 0};
	pf = (struct pollfd){.fd = p[0], .events = POLLIN};
	r = ppoll(&pf, 1, &ts, NULL);
	say("3j ppoll(POLLIN, 2 s), written after 20 ms: %s revents %s", rs(r, errno),
	    pev(pf.revents));
	check(r == 1, "3j data");
	xjoin(t, NULL);

	begin("3k");
	/* Two descriptors: the kernel's poll, as before. */
	int q[2];
	xpipe(q);
	w = (struct later){q[1], 20, "q"};
	xcreate(&t, later_main, &w);
	struct pollfd two[2] = {{.fd = p[0], .events = POLLIN}, {.fd = q[0], .events = POLLIN}};
	if (read(p[0], c, 1) != 1)
		die("read");
	r = poll(two, 2, 5000);
	say("3k poll of two pipes, the second written after 20 ms: %s revents %s, %s", rs(r, errno),
	    pev(two[0].revents), pev(two[1].revents));
	check(r == 1, "3k");
	xjoin(t, NULL);
	close2(p);
	close2(q);

	/* Waiting for an event the descriptor does not have, while it has
	 * another (data): poll times out, and the wait costs no CPU time. */
	begin("3l");
	xpipe(p);
	write_all(p[1], "d", 1);
	double c0 = cpu_ms();
	pf = (struct pollfd){.fd = p[0], .events = POLLPRI};
	r = poll(&pf, 1, 300);
	say("3l poll(POLLPRI, 300 ms) of a pipe holding data: %s, CPU time while waiting: %s",
	    rs(r, errno), cpu_little(c0, "3l"));
	check(r == 0, "3l");
	close2(p);

	begin("3m");
	xsocketpair(s);
	write_all(s[1], "d", 1);
	c0 = cpu_ms();
	pf = (struct pollfd){.fd = s[0], .events = POLLRDHUP};
	r = poll(&pf, 1, 300);
	say("3m poll(POLLRDHUP, 300 ms) of a socket holding data: %s, CPU time while waiting: %s",
	    rs(r, errno), cpu_little(c0, "3m"));
	check(r == 0, "3m");
	close2(s);

	begin("3n");
	xpipe(p);
	xpipe(q);
	struct pollfd both[2] = {{.fd = p[0], .events = POLLIN}, {.fd = q[0], .events = POLLIN}};
	t0 = now_ms();
	r = poll(both, 2, 100);
	say("3n poll(POLLIN, 100 ms) of two empty pipes: %s, %s", rs(r, errno), timed(t0, 90));
	check(r == 0, "3n");

	/* select: the sets and the time left are written back (Linux). */
	begin("3o");
	fd_set rd, wr;
	FD_ZERO(&rd);
	FD_SET(p[0], &rd);
	struct timeval tv = {0, 100000};
	t0 = now_ms();
	r = select(p[0] + 1, &rd, NULL, NULL, &tv);
	say("3o select(read: an empty pipe, 100 ms): %s, %s, set bit left: %s, time left: "
	    "%ld.%06ld",
	    rs(r, errno), timed(t0, 90), yn(FD_ISSET(p[0], &rd)), (long)tv.tv_sec,
	    (long)tv.tv_usec);
	check(r == 0 && !FD_ISSET(p[0], &rd) && tv.tv_sec == 0 && tv.tv_usec == 0, "3o");

	begin("3p");
	w = (struct later){q[1], 20, "s"};
	xcreate(&t, later_main, &w);
	FD_ZERO(&rd);
	FD_SET(p[0], &rd);
	FD_SET(q[0], &rd);
	FD_ZERO(&wr);
	FD_SET(p[1], &wr);
	int maxfd = p[0] > q[0] ? p[0] : q[0];
	maxfd = maxfd > p[1] ? maxfd : p[1];
	tv = (struct timeval){2, 0};
	r = select(maxfd + 1, &rd, NULL, NULL, &tv);
	say("3p select(read: two pipes, the second written after 20 ms; 2 s): %s, first set: %s, "
	    "second set: %s, time left below 2 s: %s",
	    rs(r, errno), yn(FD_ISSET(p[0], &rd)), yn(FD_ISSET(q[0], &rd)),
	    yn(tv.tv_sec < 2 && (tv.tv_sec > 0 || tv.tv_usec > 0)));
	check(r == 1 && FD_ISSET(q[0], &rd) && !FD_ISSET(p[0], &rd), "3p");
	xjoin(t, NULL);
	FD_ZERO(&rd);
	FD_SET(p[0], &rd);
	FD_SET(q[0], &rd);
	FD_ZERO(&wr);
	FD_SET(p[1], &wr);
	FD_SET(q[0], &wr); /* a read end: never writable */
	tv = (struct timeval){2, 0};
	r = select(maxfd + 1, &rd, &wr, NULL, &tv);
	say("3p select(read: both pipes, write: a write end and a read end): %s; read bits %s %s, "
	    "write bits %s %s",
	    rs(r, errno), yn(FD_ISSET(p[0], &rd)), yn(FD_ISSET(q[0], &rd)), yn(FD_ISSET(p[1], &wr)),
	    yn(FD_ISSET(q[0], &wr)));
	check(r == 2, "3p both");
	if (read(q[0], c, sizeof c) != 1)
		die("read");

	begin("3q");
	close(q[1]);
	FD_ZERO(&rd);
	FD_SET(q[0], &rd);
	r = select(q[0] + 1, &rd, NULL, NULL, NULL);
	say("3q select(read: a pipe whose write end is closed, no timeout): %s, set: %s",
	    rs(r, errno), yn(FD_ISSET(q[0], &rd)));
	check(r == 1, "3q");
	close(q[0]);

	begin("3r");
	int gone[2]; /* descriptor numbers below FD_SETSIZE, closed */
	xpipe(gone);
	close2(gone);
	if (fcntl(gone[1], F_GETFD) != -1 || errno != EBADF)
		die("a closed descriptor is open");
	FD_ZERO(&rd);
	FD_SET(p[0], &rd);
	FD_SET(gone[1], &rd);
	tv = (struct timeval){0, 100000};
	t0 = now_ms();
	r = select((p[0] > gone[1] ? p[0] : gone[1]) + 1, &rd, NULL, NULL, &tv);
	say("3r select(read: a pipe and a descriptor not open, 100 ms): %s, %s", rs(r, errno),
	    quick(t0));
	check(r < 0 && errno == EBADF, "3r");

	begin("3s");
	FD_ZERO(&rd);
	FD_SET(p[0], &rd);
	struct timespec pts = {0, 100000000L};
	t0 = now_ms();
	r = pselect(p[0] + 1, &rd, NULL, NULL, &pts, NULL);
	say("3s pselect(read: an empty pipe, 100 ms): %s, %s", rs(r, errno), timed(t0, 90));
	check(r == 0, "3s");
	close2(p);
}

/* ---- 4: epoll_wait ------------------------------------------------------------------ */

static void s4_epoll(void)
{
	say("== 4 epoll_wait");
	int p[2];
	double t0;
	long r;
	pthread_t t;
	struct epoll_event ev[4];
	char c[16];

	begin("4a");
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		die("epoll_create1");
	t0 = now_ms();
	r = epoll_wait(ep, ev, 4, 100);
	say("4a epoll_wait(100 ms) on an empty set: %s, %s", rs(r, errno), timed(t0, 90));
	check(r == 0, "4a");

	begin("4b");
	xpipe(p);
	struct epoll_event add = {.events = EPOLLIN, .data.u32 = 7};
	if (epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &add))
		die("epoll_ctl");
	t0 = now_ms();
	r = epoll_wait(ep, ev, 4, 100);
	say("4b epoll_wait(100 ms) with an empty pipe: %s, %s", rs(r, errno), timed(t0, 90));
	check(r == 0, "4b");

	begin("4c");
	struct later w = {p[1], 20, "x"};
	xcreate(&t, later_main, &w);
	memset(ev, 0, sizeof ev);
	r = epoll_wait(ep, ev, 4, 2000);
	say("4c epoll_wait(2 s), written after 20 ms: %s, events %s, data %u", rs(r, errno),
	    eev(ev[0].events), ev[0].data.u32);
	check(r == 1 && ev[0].data.u32 == 7, "4c");
	xjoin(t, NULL);

	begin("4d");
	t0 = now_ms();
	r = epoll_wait(ep, ev, 4, 0);
	say("4d epoll_wait(0) with the byte still there (level-triggered): %s, %s", rs(r, errno),
	    quick(t0));
	if (read(p[0], c, sizeof c) != 1)
		die("read");
	r = epoll_wait(ep, ev, 4, 0);
	say("4d epoll_wait(0) once it is read: %s, %s", rs(r, errno), quick(t0));
	check(r == 0, "4d");

	begin("4e");
	w = (struct later){p[1], 20, "y"};
	xcreate(&t, later_main, &w);
	memset(ev, 0, sizeof ev);
	r = epoll_wait(ep, ev, 4, -1);
	say("4e epoll_wait(-1), written after 20 ms: %s, events %s", rs(r, errno),
	    eev(ev[0].events));
	check(r == 1, "4e");
	xjoin(t, NULL);
	if (read(p[0], c, sizeof c) != 1)
		die("read");

	begin("4f");
	add = (struct epoll_event){.events = EPOLLIN | EPOLLET, .data.u32 = 8};
	if (epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &add))
		die("epoll_ctl");
	write_all(p[1], "ab", 2);
	r = epoll_wait(ep, ev, 4, 100);
	long r2 = epoll_wait(ep, ev, 4, 100); /* the edge was taken: nothing new */
	say("4f edge-triggered, two waits with the data unread: %s then %s", rs(r, errno),
	    rs(r2, errno));
	check(r == 1 && r2 == 0, "4f");
	if (read(p[0], c, sizeof c) != 2)
		die("read");

	begin("4g");
	t0 = now_ms();
	r = epoll_pwait(ep, ev, 4, 100, NULL);
	say("4g epoll_pwait(100 ms, no mask) with nothing ready: %s, %s", rs(r, errno),
	    timed(t0, 90));
	check(r == 0, "4g");

	begin("4h");
	w = (struct later){p[1], 20, NULL}; /* closes the write end */
	add = (struct epoll_event){.events = EPOLLIN, .data.u32 = 9};
	if (epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &add))
		die("epoll_ctl");
	xcreate(&t, later_main, &w);
	memset(ev, 0, sizeof ev);
	r = epoll_wait(ep, ev, 4, 5000);
	say("4h epoll_wait(5 s), write end closed after 20 ms: %s, events %s", rs(r, errno),
	    eev(ev[0].events));
	check(r == 1 && (ev[0].events & EPOLLHUP), "4h");
	xjoin(t, NULL);
	close(p[0]);
	close(ep);
}

/* ---- 5: signals and SA_RESTART -------------------------------------------------- */

static volatile sig_atomic_t handled;

static void on_usr1(int sig)
{
	(void)sig;
	handled++;
}

static void set_handler(int sig, void (*h)(int), int flags)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = h;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL))
		die("sigaction");
}

/* Interrupt b's blocked call with SIGUSR1 (no SA_RESTART, or a call never
 * restarted): send until it returns (a signal that came before the call
 * began interrupted nothing). */
static void interrupt(pthread_t t, struct blk *b)
{
	for (int i = 0; i < 10; i++) {
		pthread_kill(t, SIGUSR1);
		if (blk_wait(b, 1000))
			return;
	}
}

/* With SA_RESTART: SIGUSR1 once, its handler runs, and the call goes on
 * waiting (1) or has returned (0). */
static int still_waiting_after_signal(pthread_t t, struct blk *b)
{
	int before = handled;
	pthread_kill(t, SIGUSR1);
	for (int i = 0; i < 5000 && handled == before; i++)
		nap_ms(1);
	nap_ms(100);
	return !atomic_load(&b->done);
}

static void interrupted_case(const char *name, const char *what, long (*fn)(struct blk *), int fd,
			     int tmo_ms)
{
	static struct blk b;
	pthread_t t;
	begin(name);
	int before = handled;
	b.tmo_ms = tmo_ms;
	blk_start(&t, &b, fn, fd);
	interrupt(t, &b);
	xjoin(t, NULL);
	say("%s %s: %s, handler ran: %s", name, what, rs(b.ret, b.err), yn(handled > before));
	check(b.ret < 0 && b.err == EINTR, name);
}

/* read, then unblock SIGUSR1 (pending): its handler runs before the unblock returns. */
static int sig_after_unblock;

static long do_read_unblock(struct blk *b)
{
	long r = read(b->fd, b->buf, sizeof b->buf);
	int e = errno;
	int before = handled;
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	sig_after_unblock = handled > before;
	errno = e;
	return r;
}

static void s5_signals(void)
{
	say("== 5 signals: EINTR and SA_RESTART");
	static struct blk b;
	int p[2], s[2];
	pthread_t t;

	/* Without SA_RESTART: every blocking call fails with EINTR. */
	set_handler(SIGUSR1, on_usr1, 0);
	xpipe(p);
	interrupted_case("5a", "read of an empty pipe, no SA_RESTART", do_read, p[0], 0);
	xsocketpair(s);
	interrupted_case("5b", "recv of an empty socket, no SA_RESTART", do_recv, s[0], 0);
	struct sockaddr_in a;
	int l = tcp_listener(&a, 0, 4);
	interrupted_case("5c", "accept with nothing pending, no SA_RESTART", do_accept, l, 0);
	int q[2];
	xpipe(q);
	fill_pipe(q[1]);
	memset(b.buf, 'w', sizeof b.buf);
	interrupted_case("5d", "write of 4 KiB to a full pipe, no SA_RESTART", do_write4k, q[1], 0);

	/* With SA_RESTART: read, recv, accept and write go on waiting. */
	set_handler(SIGUSR1, on_usr1, SA_RESTART);

	begin("5e");
	int before = handled;
	blk_start(&t, &b, do_read, p[0]);
	int waiting = still_waiting_after_signal(t, &b);
	write_all(p[1], "r", 1);
	xjoin(t, NULL);
	say("5e read of an empty pipe, SA_RESTART: handler ran: %s, still waiting: %s, then %s "
	    "'%c'",
	    yn(handled > before), yn(waiting), rs(b.ret, b.err), b.ret > 0 ? b.buf[0] : '-');
	check(waiting && b.ret == 1, "5e");

	begin("5f");
	before = handled;
	blk_start(&t, &b, do_recv, s[0]);
	waiting = still_waiting_after_signal(t, &b);
	write_all(s[1], "s", 1);
	xjoin(t, NULL);
	say("5f recv of an empty socket, SA_RESTART: handler ran: %s, still waiting: %s, then %s",
	    yn(handled > before), yn(waiting), rs(b.ret, b.err));
	check(waiting && b.ret == 1, "5f");

	begin("5g");
	before = handled;
	blk_start(&t, &b, do_accept, l);
	waiting = still_waiting_after_signal(t, &b);
	int cfd = tcp_connect(&a);
	xjoin(t, NULL);
	say("5g accept, SA_RESTART: handler ran: %s, still waiting: %s, then a connection: %s",
	    yn(handled > before), yn(waiting), yn(b.ret >= 0));
	check(waiting && b.ret >= 0, "5g");
	if (b.ret >= 0)
		close((int)b.ret);
	close(cfd);

	begin("5h");
	before = handled;
	memset(b.buf, 'w', sizeof b.buf);
	blk_start(&t, &b, do_write4k, q[1]);
	waiting = still_waiting_after_signal(t, &b);
	static char drain[1 << 16];
	long drained = 0;
	while (drained < 4096) { /* room for the 4 KiB */
		ssize_t n = read(q[0], drain, sizeof drain);
		if (n <= 0)
			die("read");
		drained += n;
	}
	xjoin(t, NULL);
	say("5h write of 4 KiB to a full pipe, SA_RESTART: handler ran: %s, still waiting: %s, "
	    "then %s",
	    yn(handled > before), yn(waiting), rs(b.ret, b.err));
	check(waiting && b.ret == 4096, "5h");
	close2(q);

	/* Never restarted (signal(7)): poll, epoll_wait, a socket with a timeout. */
	interrupted_case("5i", "poll(POLLIN, -1) of an empty pipe, SA_RESTART", do_poll, p[0], -1);
	interrupted_case("5j", "poll(POLLIN, 10 s) of an empty pipe, SA_RESTART", do_poll, p[0],
			 10000);
	int ep = epoll_create1(0);
	struct epoll_event add = {.events = EPOLLIN};
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &add))
		die("epoll");
	interrupted_case("5k", "epoll_wait(-1) on an empty pipe, SA_RESTART", do_epoll, ep, -1);
	interrupted_case("5l", "epoll_wait(10 s) on an empty pipe, SA_RESTART", do_epoll, ep,
			 10000);
	close(ep);
	interrupted_case("5m", "select(read, no timeout) of an empty pipe, SA_RESTART", do_select,
			 p[0], -1);
	interrupted_case("5n", "select(read, 10 s) of an empty pipe, SA_RESTART", do_select, p[0],
			 10000);
	set_timeo(s[0], SO_RCVTIMEO, 10000);
	interrupted_case("5o", "recv with SO_RCVTIMEO 10 s, SA_RESTART", do_recv, s[0], 0);
	set_timeo(s[0], SO_RCVTIMEO, 0);

	/* An ignored signal interrupts nothing. */
	begin("5p");
	close2(p); /* a fresh pipe: nothing left from the case before */
	xpipe(p);
	set_handler(SIGUSR2, SIG_IGN, 0);
	blk_start(&t, &b, do_read, p[0]);
	pthread_kill(t, SIGUSR2);
	nap_ms(100);
	waiting = !atomic_load(&b.done);
	write_all(p[1], "i", 1);
	xjoin(t, NULL);
	say("5p read, SIGUSR2 ignored (SIG_IGN): still waiting: %s, then %s", yn(waiting),
	    rs(b.ret, b.err));
	check(waiting && b.ret == 1, "5p");

	begin("5q");
	close2(p); /* a fresh pipe: nothing left from the case before */
	xpipe(p);
	set_handler(SIGURG, SIG_DFL, 0); /* default action: ignore */
	blk_start(&t, &b, do_read, p[0]);
	pthread_kill(t, SIGURG);
	nap_ms(100);
	waiting = !atomic_load(&b.done);
	write_all(p[1], "u", 1);
	xjoin(t, NULL);
	say("5q read, SIGURG (default: ignored): still waiting: %s, then %s", yn(waiting),
	    rs(b.ret, b.err));
	check(waiting && b.ret == 1, "5q");

	begin("5r");
	close2(p);
	xpipe(p);
	b.tmo_ms = -1;
	blk_start(&t, &b, do_poll, p[0]);
	pthread_kill(t, SIGUSR2); /* still SIG_IGN */
	nap_ms(100);
	waiting = !atomic_load(&b.done);
	write_all(p[1], "i", 1);
	xjoin(t, NULL);
	say("5r poll(POLLIN, -1), SIGUSR2 ignored (SIG_IGN): still waiting: %s, then %s",
	    yn(waiting), rs(b.ret, b.err));
	check(waiting && b.ret == 1, "5r");

	/* A signal the thread blocks stays pending: the read is not
	 * interrupted, and the handler runs when the thread unblocks it. */
	begin("5s");
	close2(p); /* a fresh pipe: nothing left from the case before */
	xpipe(p);
	sig_after_unblock = 0;
	set_handler(SIGUSR1, on_usr1, 0);
	sigset_t usr1, old;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, &old); /* the new thread inherits it */
	before = handled;
	blk_start(&t, &b, do_read_unblock, p[0]);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_kill(t, SIGUSR1);
	nap_ms(100);
	waiting = !atomic_load(&b.done);
	int ran_while_blocked = handled > before;
	write_all(p[1], "b", 1);
	xjoin(t, NULL);
	say("5s read, SIGUSR1 blocked in the thread: still waiting: %s, handler ran: %s, then %s; "
	    "the handler ran once the thread unblocked it: %s",
	    yn(waiting), yn(ran_while_blocked), rs(b.ret, b.err), yn(sig_after_unblock));
	check(waiting && !ran_while_blocked && b.ret == 1 && sig_after_unblock, "5s");

	close2(p);
	close2(s);
	close(l);
	set_handler(SIGUSR1, SIG_DFL, 0);
	set_handler(SIGUSR2, SIG_DFL, 0);
}

/* ---- 6: a blocking send or write of megabytes ---------------------------------- */

static unsigned char pat(long i)
{
	return (unsigned char)(i * 7 + (i >> 13));
}

struct bulk {
	int fd;
	long len;
	int how; /* 0 send, 1 write, 2 writev, 3 sendmsg */
	unsigned char *buf;
	long ret;
	int err;
};

static void *bulk_send(void *arg)
{
	struct bulk *k = arg;
	switch (k->how) {
	case 0:
		k->ret = send(k->fd, k->buf, (size_t)k->len, 0);
		break;
	case 1:
		k->ret = write(k->fd, k->buf, (size_t)k->len);
		break;
	case 2: {
		struct iovec v[2] = {{k->buf, (size_t)k->len / 3},
				     {k->buf + k->len / 3, (size_t)(k->len - k->len / 3)}};
		k->ret = writev(k->fd, v, 2);
		break;
	}
	default: {
		struct iovec v = {k->buf, (size_t)k->len};
		struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
		k->ret = sendmsg(k->fd, &m, 0);
		break;
	}
	}
	k->err = errno;
	return NULL;
}

/* Read len bytes slowly (a pause every 64 KiB) and check them. */
static long slow_read(int fd, long len, int *ok)
{
	static unsigned char in[16384];
	long got = 0, since = 0;
	*ok = 1;
	while (got < len) {
		ssize_t n = read(fd, in, sizeof in);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i++)
			if (in[i] != pat(got + i))
				*ok = 0;
		got += n;
		since += n;
		if (since >= 65536) {
			since = 0;
			nap_ms(1);
		}
	}
	return got;
}

static void bulk_case(const char *name, const char *what, int how, int wfd, int rfd, long len)
{
	static unsigned char *buf;
	static long have;
	if (have < len) {
		free(buf);
		buf = malloc((size_t)len);
		if (!buf)
			die("malloc");
		for (long i = 0; i < len; i++)
			buf[i] = pat(i);
		have = len;
	}
	begin(name);
	struct bulk k = {wfd, len, how, buf, -2, 0};
	pthread_t t;
	xcreate(&t, bulk_send, &k);
	int ok;
	long got = slow_read(rfd, len, &ok);
	xjoin(t, NULL);
	say("%s %s of %ld bytes: returned %s; the reader got %ld, all bytes right: %s", name, what,
	    len, rs(k.ret, k.err), got, yn(ok));
	check(k.ret == len && got == len && ok, name);
}

static void s6_bulk(void)
{
	say("== 6 a blocking send never returns short");
	int s[2], p[2];
	xsocketpair(s);
	bulk_case("6a", "send over a socketpair", 0, s[1], s[0], 4L << 20);
	bulk_case("6b", "sendmsg over a socketpair", 3, s[1], s[0], 4L << 20);
	close2(s);
	tcp_pair(s);
	bulk_case("6c", "send over TCP loopback", 0, s[0], s[1], 4L << 20);
	bulk_case("6d", "write over TCP loopback", 1, s[1], s[0], 4L << 20);
	close2(s);
	xpipe(p);
	bulk_case("6e", "write to a pipe", 1, p[1], p[0], 1L << 20);
	bulk_case("6f", "writev (2 buffers) to a pipe", 2, p[1], p[0], 1L << 20);
	close2(p);
}

/* ---- 7: MSG_WAITALL --------------------------------------------------------------- */

struct feeder {
	int fd;
	int pieces, size;
	int close_after; /* close fd after that many pieces (0: never) */
};

static void *feed(void *arg)
{
	struct feeder *f = arg;
	char piece[4096];
	for (int i = 0; i < f->pieces; i++) {
		if (f->close_after && i == f->close_after) {
			close(f->fd);
			return NULL;
		}
		memset(piece, 'a' + i % 26, (size_t)f->size);
		write_all(f->fd, piece, (size_t)f->size);
		if (i % 8 == 7)
			nap_ms(1);
	}
	return NULL;
}

static void s7_waitall(void)
{
	say("== 7 MSG_WAITALL");
	static char buf[65536];
	int s[2];
	pthread_t t;
	long r;

	begin("7a");
	xsocketpair(s);
	struct feeder f = {s[1], 64, 1024, 0};
	xcreate(&t, feed, &f);
	r = recv(s[0], buf, sizeof buf, MSG_WAITALL);
	int ok = r == 65536;
	for (long i = 0; ok && i < r; i++)
		ok = buf[i] == 'a' + (i / 1024) % 26;
	say("7a recv(64 KiB, MSG_WAITALL) fed 1 KiB at a time: %s, bytes right: %s", rs(r, errno),
	    yn(ok));
	check(ok, "7a");
	xjoin(t, NULL);
	close2(s);

	begin("7b");
	tcp_pair(s);
	f = (struct feeder){s[1], 64, 1024, 0};
	xcreate(&t, feed, &f);
	r = recv(s[0], buf, sizeof buf, MSG_WAITALL);
	say("7b the same over TCP loopback: %s", rs(r, errno));
	check(r == 65536, "7b");
	xjoin(t, NULL);

	begin("7c");
	f = (struct feeder){s[1], 64, 1024, 10}; /* closes after 10 KiB */
	xcreate(&t, feed, &f);
	r = recv(s[0], buf, sizeof buf, MSG_WAITALL);
	say("7c recv(64 KiB, MSG_WAITALL), the peer closes after 10 KiB: %s", rs(r, errno));
	check(r == 10240, "7c");
	xjoin(t, NULL);
	close(s[0]);
}

/* ---- 8: many threads blocked on one descriptor -------------------------------- */

#define NACC 8

struct acceptor {
	int lfd;
	int fd;   /* the connection accepted */
	int from; /* the byte its client sent: the client's number */
	atomic_int *started;
};

static void *acceptor_main(void *arg)
{
	struct acceptor *x = arg;
	atomic_fetch_add(x->started, 1);
	x->fd = accept(x->lfd, NULL, NULL);
	x->from = -1;
	if (x->fd >= 0) {
		unsigned char c;
		if (read(x->fd, &c, 1) == 1)
			x->from = c;
	}
	return NULL;
}

struct reader1 {
	int fd;
	int got;
	atomic_int *started;
};

static void *reader1_main(void *arg)
{
	struct reader1 *x = arg;
	atomic_fetch_add(x->started, 1);
	char c;
	x->got = read(x->fd, &c, 1) == 1 ? c : -1;
	return NULL;
}

static void s8_many(void)
{
	say("== 8 many threads blocked on one descriptor");
	begin("8a");
	struct sockaddr_in a;
	int l = tcp_listener(&a, 0, 16);
	struct acceptor x[NACC];
	pthread_t t[NACC];
	atomic_int started = 0;
	for (int i = 0; i < NACC; i++) {
		x[i] = (struct acceptor){l, -1, -1, &started};
		xcreate(&t[i], acceptor_main, &x[i]);
	}
	while (atomic_load(&started) < NACC)
		nap_ms(1);
	nap_ms(50);
	int cfd[NACC];
	for (int i = 0; i < NACC; i++) {
		cfd[i] = tcp_connect(&a);
		unsigned char c = (unsigned char)i;
		write_all(cfd[i], &c, 1);
	}
	for (int i = 0; i < NACC; i++)
		xjoin(t[i], NULL);
	int seen[NACC] = {0}, fds_distinct = 1, all = 1;
	for (int i = 0; i < NACC; i++) {
		if (x[i].fd < 0 || x[i].from < 0 || x[i].from >= NACC) {
			all = 0;
			continue;
		}
		seen[x[i].from]++;
		for (int j = 0; j < i; j++)
			if (x[j].fd == x[i].fd)
				fds_distinct = 0;
	}
	for (int i = 0; i < NACC; i++)
		if (seen[i] != 1)
			all = 0;
	say("8a %d threads in accept, %d connections: all accepted, each client once: %s, "
	    "distinct descriptors: %s",
	    NACC, NACC, yn(all), yn(fds_distinct));
	check(all && fds_distinct, "8a");
	for (int i = 0; i < NACC; i++) {
		close(cfd[i]);
		if (x[i].fd >= 0)
			close(x[i].fd);
	}
	close(l);

	begin("8b");
	int p[2];
	xpipe(p);
	struct reader1 rd[NACC];
	started = 0;
	for (int i = 0; i < NACC; i++) {
		rd[i] = (struct reader1){p[0], -1, &started};
		xcreate(&t[i], reader1_main, &rd[i]);
	}
	while (atomic_load(&started) < NACC)
		nap_ms(1);
	nap_ms(50);
	write_all(p[1], "ABCDEFGH", NACC); /* all at once: each reader takes one */
	for (int i = 0; i < NACC; i++)
		xjoin(t[i], NULL);
	int got[NACC] = {0};
	all = 1;
	for (int i = 0; i < NACC; i++) {
		if (rd[i].got < 'A' || rd[i].got >= 'A' + NACC)
			all = 0;
		else
			got[rd[i].got - 'A']++;
	}
	for (int i = 0; i < NACC; i++)
		if (got[i] != 1)
			all = 0;
	say("8b %d threads in read(1 byte) of one pipe, %d bytes in one write: each byte read "
	    "once: %s",
	    NACC, NACC, yn(all));
	check(all, "8b");
	close2(p);
}

/* ---- 9: readv and writev --------------------------------------------------------- */

static void s9_vectors(void)
{
	say("== 9 readv and writev");
	static struct blk b;
	pthread_t t;
	int p[2], s[2];

	begin("9a");
	xpipe(p);
	blk_start(&t, &b, do_readv3, p[0]);
	struct iovec v[3] = {{"abc", 3}, {"defgh", 5}, {"ij", 2}};
	long w = writev(p[1], v, 3);
	xjoin(t, NULL);
	say("9a writev(3, 5, 2 bytes) to a pipe: %s; a blocked readv(4, 4, 4) got %s: \"%.4s\" "
	    "\"%.4s\" \"%.2s\"",
	    rs(w, errno), rs(b.ret, b.err), b.buf, b.buf + 4, b.buf + 8);
	check(w == 10 && b.ret == 10 && memcmp(b.buf, "abcdefghij", 10) == 0, "9a");
	close2(p);

	begin("9b");
	xsocketpair(s);
	blk_start(&t, &b, do_readv3, s[0]);
	struct iovec v2[3] = {{"0123", 4}, {"4567", 4}, {"89AB", 4}};
	w = writev(s[1], v2, 3);
	xjoin(t, NULL);
	say("9b writev(4, 4, 4 bytes) to a socket: %s; a blocked readv(4, 4, 4) got %s: \"%.12s\"",
	    rs(w, errno), rs(b.ret, b.err), b.buf);
	check(w == 12 && b.ret == 12 && memcmp(b.buf, "0123456789AB", 12) == 0, "9b");
	close2(s);
}

/* ---- 10: EOF --------------------------------------------------------------------- */

static void s10_eof(void)
{
	say("== 10 end of file reaches a blocked reader");
	static struct blk b;
	pthread_t t, c;
	int p[2], s[2];

	begin("10a");
	xpipe(p);
	blk_start(&t, &b, do_read, p[0]);
	struct later w = {p[1], 0, NULL}; /* another thread closes the write end */
	xcreate(&c, later_main, &w);
	xjoin(c, NULL);
	xjoin(t, NULL);
	say("10a read of a pipe whose write end another thread closes: %s", rs(b.ret, b.err));
	check(b.ret == 0, "10a");
	close(p[0]);

	begin("10b");
	xsocketpair(s);
	blk_start(&t, &b, do_recv, s[0]);
	close(s[1]);
	xjoin(t, NULL);
	say("10b recv of a socket whose peer closes: %s", rs(b.ret, b.err));
	check(b.ret == 0, "10b");
	close(s[0]);

	begin("10c");
	tcp_pair(s);
	blk_start(&t, &b, do_read, s[1]);
	shutdown(s[0], SHUT_WR);
	xjoin(t, NULL);
	say("10c read of a TCP socket whose peer shuts down writing: %s", rs(b.ret, b.err));
	check(b.ret == 0, "10c");

	begin("10d");
	blk_start(&t, &b, do_read, s[0]); /* the other direction is still open */
	write_all(s[1], "tail", 4);
	xjoin(t, NULL);
	say("10d and the other direction still works: %s \"%.4s\"", rs(b.ret, b.err), b.buf);
	check(b.ret == 4, "10d");
	close2(s);

	begin("10e");
	xpipe(p);
	fill_pipe(p[1]);
	memset(b.buf, 'w', sizeof b.buf);
	blk_start(&t, &b, do_write4k, p[1]);
	close(p[0]); /* SIGPIPE is ignored: EPIPE */
	xjoin(t, NULL);
	say("10e write to a full pipe whose read end is closed meanwhile: %s", rs(b.ret, b.err));
	check(b.ret < 0 && b.err == EPIPE, "10e");
	close(p[1]);
}

/* ---- 11: cancellation ---------------------------------------------------------- */

static void cleanup(void *arg)
{
	atomic_store(&((struct blk *)arg)->cleanup_ran, 1);
}

static void *cancel_main(void *arg)
{
	struct blk *b = arg;
	pthread_cleanup_push(cleanup, b);
	atomic_store(&b->entered, 1);
	b->ret = b->fn(b);
	b->err = errno;
	pthread_cleanup_pop(0);
	atomic_store(&b->done, 1);
	return NULL;
}

static void cancel_case(const char *name, const char *what, long (*fn)(struct blk *), int fd,
			int tmo_ms)
{
	static struct blk b;
	pthread_t t;
	begin(name);
	b.fn = fn;
	b.fd = fd;
	b.tmo_ms = tmo_ms;
	atomic_store(&b.entered, 0);
	atomic_store(&b.done, 0);
	atomic_store(&b.cleanup_ran, 0);
	xcreate(&t, cancel_main, &b);
	while (!atomic_load(&b.entered))
		nap_ms(1);
	nap_ms(50);
	pthread_cancel(t);
	void *ret;
	xjoin(t, &ret);
	say("%s pthread_cancel of a thread blocked in %s: %s, cleanup ran: %s", name, what,
	    ret == PTHREAD_CANCELED ? "PTHREAD_CANCELED" : "returned", yn(b.cleanup_ran));
	check(ret == PTHREAD_CANCELED && b.cleanup_ran, name);
}

static long do_read_self_cancel(struct blk *b)
{
	pthread_cancel(pthread_self());
	return read(b->fd, b->buf, sizeof b->buf); /* data ready: acts all the same */
}

static long do_read_disabled(struct blk *b)
{
	int old;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	long r = read(b->fd, b->buf, sizeof b->buf);
	int e = errno;
	b->ret = r; /* kept: pthread_testcancel below does not return */
	b->err = e;
	atomic_store(&b->done, 1);
	pthread_setcancelstate(old, NULL);
	pthread_testcancel();
	return r;
}

static void s11_cancel(void)
{
	say("== 11 pthread_cancel of a blocked thread");
	int p[2], s[2], q[2];
	xpipe(p);
	xsocketpair(s);
	cancel_case("11a", "read of an empty pipe", do_read, p[0], 0);
	cancel_case("11b", "recv of an empty socket", do_recv, s[0], 0);
	struct sockaddr_in a;
	int l = tcp_listener(&a, 0, 4);
	cancel_case("11c", "accept", do_accept, l, 0);
	close(l);
	xpipe(q);
	fill_pipe(q[1]);
	cancel_case("11d", "write to a full pipe", do_write4k, q[1], 0);
	close2(q);
	cancel_case("11e", "poll(POLLIN, -1)", do_poll, p[0], -1);
	cancel_case("11f", "poll(POLLIN, 10 s)", do_poll, p[0], 10000);
	int ep = epoll_create1(0);
	struct epoll_event add = {.events = EPOLLIN};
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &add))
		die("epoll");
	cancel_case("11g", "epoll_wait(-1)", do_epoll, ep, -1);
	close(ep);
	cancel_case("11h", "select(read, no timeout)", do_select, p[0], -1);

	begin("11i");
	static struct blk b;
	pthread_t t;
	void *ret;
	write_all(p[1], "d", 1);
	b.fn = do_read_self_cancel;
	b.fd = p[0];
	atomic_store(&b.cleanup_ran, 0);
	xcreate(&t, cancel_main, &b);
	xjoin(t, &ret);
	say("11i read of a ready pipe with a cancellation pending: %s, cleanup ran: %s",
	    ret == PTHREAD_CANCELED ? "PTHREAD_CANCELED" : "returned", yn(b.cleanup_ran));
	check(ret == PTHREAD_CANCELED, "11i");
	char c;
	if (read(p[0], &c, 1) != 1) /* the byte was not taken */
		die("read");

	begin("11j");
	b.fn = do_read_disabled;
	b.fd = p[0];
	atomic_store(&b.entered, 0);
	atomic_store(&b.done, 0);
	atomic_store(&b.cleanup_ran, 0);
	xcreate(&t, cancel_main, &b);
	while (!atomic_load(&b.entered))
		nap_ms(1);
	nap_ms(50);
	pthread_cancel(t);
	nap_ms(100);
	int waiting = !atomic_load(&b.done);
	write_all(p[1], "e", 1);
	xjoin(t, &ret);
	say("11j read with cancellation disabled, cancelled: still waiting: %s, read %s, then at "
	    "pthread_testcancel: %s",
	    yn(waiting), rs(b.ret, b.err),
	    ret == PTHREAD_CANCELED ? "PTHREAD_CANCELED" : "returned");
	check(waiting && b.ret == 1 && ret == PTHREAD_CANCELED, "11j");

	/* The pipe and the socket still work for others after all that. */
	begin("11k");
	write_all(p[1], "f", 1);
	write_all(s[1], "g", 1);
	char c2;
	long r1 = read(p[0], &c, 1), r2 = recv(s[0], &c2, 1, 0);
	say("11k the pipe and socket afterwards: %s '%c', %s '%c'", rs(r1, errno), c, rs(r2, errno),
	    c2);
	check(r1 == 1 && c == 'f' && r2 == 1 && c2 == 'g', "11k");
	close2(p);
	close2(s);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	set_handler(SIGALRM, on_alarm, 0);
	s1_nonblock();
	s2_timeo();
	s3_poll();
	s4_epoll();
	s5_signals();
	s6_bulk();
	s7_waitall();
	s8_many();
	s9_vectors();
	s10_eof();
	s11_cancel();
	alarm(0);
	say("== done: %d unexpected result(s)", failures);
	return failures ? 1 : 0;
}
