/* The blocking I/O workloads of `weft-bench io`; see io_work.h.
 *
 * Each blocking call (read, write, accept, connect) goes through io_call,
 * which first waits for the descriptor with the table's wait when it has
 * one (weft ULTs park on weft's I/O poller: weft_fd_wait), then brackets
 * the call with the table's begin/end when it has them and reads
 * errno after the end (a ULT whose worker was handed over resumes on
 * another kernel thread; weft_syscall_end makes the call's errno its own).
 *
 * No run can hang: a failing thread shuts every socket down (tcp_abort) so
 * that its peers' blocked calls return, and with watchdog_ms a plain glibc
 * thread does the same once the run has lasted that long. In weft-io-prog
 * (where pthread_create may be weft's and every kernel thread may be stuck
 * in a read) alarm(2) is the bound instead.
 */
#include "io_work.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- glibc pthreads ------------------------------------------------------ */

static int pt_spawn(uint64_t *h, void *(*fn)(void *), void *arg)
{
	pthread_t t;
	int rc = pthread_create(&t, NULL, fn, arg);
	if (!rc)
		*h = (uint64_t)t;
	return rc;
}

static int pt_join(uint64_t h)
{
	return pthread_join((pthread_t)h, NULL);
}

const wk_ops_t wk_pthread_ops = {pt_spawn, pt_join, NULL, NULL, NULL};

/* ---- one thread's blocking calls ----------------------------------------- */

/* A thread's view of the table and its own counts. */
typedef struct wk_thr {
	const wk_ops_t *ops;
	long handovers, sections;
} wk_thr_t;

enum { OP_READ, OP_WRITE, OP_ACCEPT, OP_CONNECT };

/* One blocking call, in a section if the table has them; EINTR retried.
 * The result is the call's; errno is the call's when it failed. */
static ssize_t io_call(wk_thr_t *t, int op, int fd, void *buf, size_t len)
{
	wk_sec_t s;
	ssize_t r;
	int e;

	do {
		if (t->ops->wait && op != OP_CONNECT) {
			e = t->ops->wait(fd, op == OP_WRITE);
			if (e == EINTR)
				continue;
			if (e) {
				errno = e;
				return -1;
			}
		}
		if (t->ops->begin)
			t->ops->begin(&s);
		switch (op) {
		case OP_READ:
			r = read(fd, buf, len);
			break;
		case OP_WRITE:
			r = write(fd, buf, len);
			break;
		case OP_ACCEPT:
			r = accept(fd, NULL, NULL);
			break;
		default:
			r = connect(fd, buf, (socklen_t)len);
			break;
		}
		if (t->ops->begin) {
			t->handovers += t->ops->end(&s);
			t->sections++;
		}
		e = errno;
	} while (r < 0 && e == EINTR);
	errno = e;
	return r;
}

/* All len bytes, in as many calls as it takes. 0; or -1 with errno set
 * (0 for end of file). */
static int io_full(wk_thr_t *t, int op, int fd, char *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t r = io_call(t, op, fd, buf + got, len - got);
		if (r <= 0) {
			if (r == 0)
				errno = 0;
			return -1;
		}
		got += (size_t)r;
	}
	return 0;
}

/* ---- the watchdog -------------------------------------------------------- */

typedef struct watchdog {
	pthread_t thread;
	int running;
	int ms;
	pthread_mutex_t m;
	pthread_cond_t cv;
	int finished; /* under m: the run ended, do not fire */
	void (*fire)(void *);
	void *arg;
} watchdog_t;

static void *watch_main(void *p)
{
	watchdog_t *wd = p;
	struct timespec dl;

	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += wd->ms / 1000;
	dl.tv_nsec += (long)(wd->ms % 1000) * 1000000;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&wd->m);
	while (!wd->finished)
		if (pthread_cond_timedwait(&wd->cv, &wd->m, &dl) == ETIMEDOUT)
			break;
	int fire = !wd->finished;
	pthread_mutex_unlock(&wd->m);
	if (fire)
		wd->fire(wd->arg);
	return NULL;
}

/* A glibc thread that calls fire(arg) after ms unless watch_stop comes
 * first. ms <= 0: none. */
static int watch_start(watchdog_t *wd, int ms, void (*fire)(void *), void *arg)
{
	pthread_condattr_t ca;

	memset(wd, 0, sizeof *wd);
	if (ms <= 0)
		return 0;
	wd->ms = ms;
	wd->fire = fire;
	wd->arg = arg;
	pthread_mutex_init(&wd->m, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&wd->cv, &ca);
	pthread_condattr_destroy(&ca);
	int rc = pthread_create(&wd->thread, NULL, watch_main, wd);
	wd->running = rc == 0;
	return rc;
}

static void watch_stop(watchdog_t *wd)
{
	if (!wd->running)
		return;
	pthread_mutex_lock(&wd->m);
	wd->finished = 1;
	pthread_cond_signal(&wd->cv);
	pthread_mutex_unlock(&wd->m);
	pthread_join(wd->thread, NULL);
	pthread_cond_destroy(&wd->cv);
	pthread_mutex_destroy(&wd->m);
}

/* ---- pipe ping-pong ------------------------------------------------------ */

struct pp {
	const wk_ops_t *ops;
	int ab[2], ba[2]; /* a -> b, b -> a */
	long n;
	atomic_int stop;
	atomic_int cpu[2]; /* each side's CPU after its last read */
	struct pp_side {
		struct pp *pp;
		int me;
		long done, handovers, sections, same_cpu;
		int err; /* errno of the failed call, -1: end of file, -2: stopped */
		const char *what;
	} side[2];
};

static void *pp_main(void *p)
{
	struct pp_side *sd = p;
	struct pp *pp = sd->pp;
	wk_thr_t t = {pp->ops, 0, 0};
	char c = 'x';

	for (long i = 0; i < pp->n; i++) {
		/* a writes first, then reads the answer; b the other way round */
		for (int step = 0; step < 2; step++) {
			int wr = (step == 0) == (sd->me == 0);
			int fd = wr ? (sd->me == 0 ? pp->ab[1] : pp->ba[1])
				    : (sd->me == 0 ? pp->ba[0] : pp->ab[0]);
			if (io_full(&t, wr ? OP_WRITE : OP_READ, fd, &c, 1) != 0) {
				sd->err = errno ? errno : -1;
				sd->what = wr ? "write" : "read";
				goto out;
			}
			if (atomic_load(&pp->stop)) {
				sd->err = -2;
				goto out;
			}
			if (!wr) {
				/* Where the two ran: b stored its CPU before it
				 * wrote the byte a has just read. */
				int cpu = sched_getcpu();
				atomic_store_explicit(&pp->cpu[sd->me], cpu, memory_order_relaxed);
				if (sd->me == 0 &&
				    atomic_load_explicit(&pp->cpu[1], memory_order_relaxed) == cpu)
					sd->same_cpu++;
			}
		}
		sd->done++;
	}
out:
	sd->handovers = t.handovers;
	sd->sections = t.sections;
	return NULL;
}

static void pp_fire(void *arg)
{
	struct pp *pp = arg;
	char c = 's';

	atomic_store(&pp->stop, 1);
	/* Wake both readers; a pipe has room for a byte more. */
	if (write(pp->ab[1], &c, 1) < 0 || write(pp->ba[1], &c, 1) < 0)
		perror("weft-bench io: watchdog write");
}

int wk_pipe_pingpong(const wk_ops_t *ops, long n, int watchdog_ms, wk_result_t *r)
{
	struct pp pp;
	watchdog_t wd;
	uint64_t h[2];
	int rc = 0, started = 0;

	memset(r, 0, sizeof *r);
	memset(&pp, 0, sizeof pp);
	pp.ops = ops;
	pp.n = n;
	atomic_init(&pp.stop, 0);
	atomic_init(&pp.cpu[0], -1);
	atomic_init(&pp.cpu[1], -2);
	if (pipe(pp.ab) != 0 || pipe(pp.ba) != 0) {
		rc = errno;
		snprintf(r->error, sizeof r->error, "pipe: %s", strerror(rc));
		return rc;
	}
	for (int i = 0; i < 2; i++)
		pp.side[i] = (struct pp_side){.pp = &pp, .me = i};
	rc = watch_start(&wd, watchdog_ms, pp_fire, &pp);
	if (rc) {
		snprintf(r->error, sizeof r->error, "watchdog pthread_create: %s", strerror(rc));
		goto close;
	}
	int64_t t0 = now_ns();
	for (; started < 2; started++) {
		rc = ops->spawn(&h[started], pp_main, &pp.side[started]);
		if (rc) {
			snprintf(r->error, sizeof r->error, "thread %d: create: %s", started,
				 strerror(rc));
			pp_fire(&pp); /* the first one would wait for ever */
			break;
		}
	}
	for (int i = 0; i < started; i++)
		ops->join(h[i]);
	r->elapsed_ns = now_ns() - t0;
	watch_stop(&wd);
	r->threads = wk_kernel_threads();
	for (int i = 0; i < 2; i++) {
		r->handovers += pp.side[i].handovers;
		r->sections += pp.side[i].sections;
	}
	r->done = pp.side[0].done;
	r->same_cpu = pp.side[0].same_cpu;
	if (!rc) {
		for (int i = 0; i < 2 && !rc; i++) {
			struct pp_side *sd = &pp.side[i];
			if (sd->err == -2 || atomic_load(&pp.stop)) {
				rc = ETIMEDOUT;
				snprintf(r->error, sizeof r->error,
					 "stalled: stopped by the watchdog after %d ms, %ld of %ld "
					 "round trips done",
					 watchdog_ms, pp.side[0].done, n);
			} else if (sd->err) {
				rc = sd->err > 0 ? sd->err : EIO;
				snprintf(r->error, sizeof r->error, "thread %d: %s: %s", i,
					 sd->what, sd->err > 0 ? strerror(sd->err) : "end of file");
			}
		}
	}
close:
	close(pp.ab[0]);
	close(pp.ab[1]);
	close(pp.ba[0]);
	close(pp.ba[1]);
	return rc;
}

/* ---- TCP echo ------------------------------------------------------------ */

struct tcp;

struct tcp_arg {
	struct tcp *t;
	int i;
};

struct tcp {
	const wk_ops_t *ops;
	int conns;
	long rts;
	int lfd;
	struct sockaddr_in addr;
	atomic_int *cfd, *sfd;   /* client and server ends, -1 until made */
	atomic_int *scpu;        /* each server thread's CPU after its last read */
	uint64_t *hh;            /* handler threads, [0, nacc) */
	struct tcp_arg *ca, *ha; /* the clients' and handlers' arguments */
	int nacc;                /* written by the acceptor, read after its join */
	atomic_int stop;         /* set by tcp_abort */
	atomic_long done, handovers, sections, same_cpu;
	atomic_int err; /* the first failure's errno; its message in msg */
	char msg[160];
	int watchdog_ms;
};

static void tcp_shut(atomic_int *fdp)
{
	int fd = atomic_load(fdp);
	if (fd >= 0)
		shutdown(fd, SHUT_RDWR);
}

/* Stop the run: every blocked accept, connect, read and write returns. A
 * socket made after this looks at stop itself (store, then load: either
 * this sees its descriptor or it sees stop). */
static void tcp_abort(void *arg)
{
	struct tcp *t = arg;

	atomic_store(&t->stop, 1);
	shutdown(t->lfd, SHUT_RDWR);
	for (int i = 0; i < t->conns; i++) {
		tcp_shut(&t->cfd[i]);
		tcp_shut(&t->sfd[i]);
	}
}

static void tcp_fire(void *arg)
{
	struct tcp *t = arg;
	int zero = 0;

	if (atomic_compare_exchange_strong(&t->err, &zero, ETIMEDOUT))
		snprintf(t->msg, sizeof t->msg, "stalled: stopped by the watchdog after %d ms",
			 t->watchdog_ms);
	tcp_abort(t);
}

/* Record the first failure and stop the run. A failure after the stop is
 * its consequence, not news. */
static void tcp_fail(struct tcp *t, int e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void tcp_fail(struct tcp *t, int e, const char *fmt, ...)
{
	int zero = 0;

	if (!atomic_load(&t->stop) && atomic_compare_exchange_strong(&t->err, &zero, e ? e : EIO)) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(t->msg, sizeof t->msg, fmt, ap);
		va_end(ap);
	}
	tcp_abort(t);
}

static void nodelay(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void tcp_count(struct tcp *t, const wk_thr_t *th, long done, long same_cpu)
{
	atomic_fetch_add(&t->done, done);
	atomic_fetch_add(&t->same_cpu, same_cpu);
	atomic_fetch_add(&t->handovers, th->handovers);
	atomic_fetch_add(&t->sections, th->sections);
}

/* One connection's server thread: echo whole messages until end of file. */
static void *tcp_handler(void *p)
{
	struct tcp_arg *a = p;
	struct tcp *t = a->t;
	wk_thr_t th = {t->ops, 0, 0};
	int fd = atomic_load(&t->sfd[a->i]);
	char buf[WK_MSG];

	for (long j = 0; j <= t->rts; j++) {
		/* One read for a whole message as a rule; the rest if it came
		 * in pieces. */
		ssize_t got = io_call(&th, OP_READ, fd, buf, WK_MSG);
		if (got <= 0) {
			if (got < 0)
				tcp_fail(t, errno, "server read: %s", strerror(errno));
			break; /* end of file: the client is done */
		}
		if (j == t->rts) {
			tcp_fail(t, EPROTO, "server: more messages than round trips");
			break;
		}
		atomic_store_explicit(&t->scpu[a->i], sched_getcpu(), memory_order_relaxed);
		if ((got < WK_MSG &&
		     io_full(&th, OP_READ, fd, buf + got, WK_MSG - (size_t)got) != 0) ||
		    io_full(&th, OP_WRITE, fd, buf, WK_MSG) != 0) {
			tcp_fail(t, errno, "server read/write: %s",
				 errno ? strerror(errno) : "end of file mid-message");
			break;
		}
	}
	tcp_count(t, &th, 0, 0);
	return NULL;
}

static void *tcp_acceptor(void *p)
{
	struct tcp *t = p;
	wk_thr_t th = {t->ops, 0, 0};

	for (int i = 0; i < t->conns; i++) {
		int fd = (int)io_call(&th, OP_ACCEPT, t->lfd, NULL, 0);
		if (fd < 0) {
			tcp_fail(t, errno, "accept: %s", strerror(errno));
			break;
		}
		nodelay(fd);
		atomic_store(&t->sfd[i], fd);
		if (atomic_load(&t->stop)) {
			shutdown(fd, SHUT_RDWR);
			break;
		}
		int rc = t->ops->spawn(&t->hh[i], tcp_handler, &t->ha[i]);
		if (rc) {
			tcp_fail(t, rc, "server thread %d: create: %s", i, strerror(rc));
			break;
		}
		t->nacc = i + 1;
	}
	tcp_count(t, &th, 0, 0);
	return NULL;
}

static void *tcp_client(void *p)
{
	struct tcp_arg *a = p;
	struct tcp *t = a->t;
	wk_thr_t th = {t->ops, 0, 0};
	char out[WK_MSG], in[WK_MSG];
	long j = 0, same = 0;

	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		tcp_fail(t, errno, "client socket: %s", strerror(errno));
		return NULL;
	}
	atomic_store(&t->cfd[a->i], fd);
	if (atomic_load(&t->stop))
		goto out;
	nodelay(fd);
	if (io_call(&th, OP_CONNECT, fd, &t->addr, sizeof t->addr) != 0) {
		tcp_fail(t, errno, "connect: %s", strerror(errno));
		goto out;
	}
	memset(out, 'a' + a->i % 26, sizeof out);
	for (; j < t->rts; j++) {
		out[0] = (char)j;
		out[WK_MSG - 1] = (char)(j >> 8);
		if (io_full(&th, OP_WRITE, fd, out, WK_MSG) != 0 ||
		    io_full(&th, OP_READ, fd, in, WK_MSG) != 0) {
			tcp_fail(t, errno, "client write/read: %s",
				 errno ? strerror(errno) : "end of file");
			break;
		}
		if (memcmp(in, out, WK_MSG) != 0) {
			tcp_fail(t, EPROTO, "client %d: the echo differs from the message", a->i);
			break;
		}
		/* Its server thread stored its CPU before it echoed. */
		same += atomic_load_explicit(&t->scpu[a->i], memory_order_relaxed) ==
			sched_getcpu();
	}
	shutdown(fd, SHUT_WR); /* end of file for the server thread */
out:
	tcp_count(t, &th, j, same);
	return NULL;
}

int wk_tcp_echo(const wk_ops_t *ops, int conns, long rts, int watchdog_ms, wk_result_t *r)
{
	struct tcp t;
	watchdog_t wd;
	socklen_t alen = sizeof t.addr;
	uint64_t *ch = NULL;
	int rc = 0, nclients = 0;

	memset(r, 0, sizeof *r);
	memset(&t, 0, sizeof t);
	t.ops = ops;
	t.conns = conns;
	t.rts = rts;
	t.watchdog_ms = watchdog_ms;
	t.lfd = -1;
	atomic_init(&t.stop, 0);
	atomic_init(&t.err, 0);
	atomic_init(&t.done, 0);
	atomic_init(&t.handovers, 0);
	atomic_init(&t.sections, 0);
	atomic_init(&t.same_cpu, 0);
	t.cfd = calloc((size_t)conns, sizeof *t.cfd);
	t.sfd = calloc((size_t)conns, sizeof *t.sfd);
	t.scpu = calloc((size_t)conns, sizeof *t.scpu);
	t.hh = calloc((size_t)conns, sizeof *t.hh);
	t.ca = calloc((size_t)conns, sizeof *t.ca);
	t.ha = calloc((size_t)conns, sizeof *t.ha);
	ch = calloc((size_t)conns, sizeof *ch);
	if (!t.cfd || !t.sfd || !t.scpu || !t.hh || !t.ca || !t.ha || !ch) {
		rc = ENOMEM;
		snprintf(r->error, sizeof r->error, "out of memory");
		goto free;
	}
	for (int i = 0; i < conns; i++) {
		atomic_init(&t.cfd[i], -1);
		atomic_init(&t.sfd[i], -1);
		atomic_init(&t.scpu[i], -1);
		t.ca[i] = t.ha[i] = (struct tcp_arg){&t, i};
	}

	t.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	t.addr.sin_family = AF_INET;
	t.addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	t.addr.sin_port = 0; /* any free port */
	if (t.lfd < 0 || bind(t.lfd, (struct sockaddr *)&t.addr, sizeof t.addr) != 0 ||
	    listen(t.lfd, conns < 4096 ? conns + 64 : 4096) != 0 ||
	    getsockname(t.lfd, (struct sockaddr *)&t.addr, &alen) != 0) {
		rc = errno;
		snprintf(r->error, sizeof r->error, "listening socket on 127.0.0.1: %s",
			 strerror(rc));
		goto free;
	}
	rc = watch_start(&wd, watchdog_ms, tcp_fire, &t);
	if (rc) {
		snprintf(r->error, sizeof r->error, "watchdog pthread_create: %s", strerror(rc));
		goto free;
	}

	int64_t t0 = now_ns();
	uint64_t ah;
	rc = ops->spawn(&ah, tcp_acceptor, &t);
	if (rc) {
		snprintf(r->error, sizeof r->error, "acceptor: create: %s", strerror(rc));
		watch_stop(&wd);
		goto free;
	}
	for (; nclients < conns; nclients++) {
		int e = ops->spawn(&ch[nclients], tcp_client, &t.ca[nclients]);
		if (e) {
			tcp_fail(&t, e, "client thread %d: create: %s", nclients, strerror(e));
			break;
		}
	}
	for (int i = 0; i < nclients; i++)
		ops->join(ch[i]);
	ops->join(ah);
	for (int i = 0; i < t.nacc; i++)
		ops->join(t.hh[i]);
	r->elapsed_ns = now_ns() - t0;
	watch_stop(&wd);

	r->threads = wk_kernel_threads();
	r->done = atomic_load(&t.done);
	r->handovers = atomic_load(&t.handovers);
	r->sections = atomic_load(&t.sections);
	r->same_cpu = atomic_load(&t.same_cpu);
	rc = atomic_load(&t.err);
	if (rc)
		snprintf(r->error, sizeof r->error, "%s (%ld of %ld round trips done)", t.msg,
			 r->done, (long)conns * rts);
	else if (r->done != (long)conns * rts) {
		rc = EIO;
		snprintf(r->error, sizeof r->error, "%ld round trips done, %ld expected", r->done,
			 (long)conns * rts);
	}
free:
	for (int i = 0; t.cfd && t.sfd && i < conns; i++) {
		int a = atomic_load(&t.cfd[i]), b = atomic_load(&t.sfd[i]);
		if (a >= 0)
			close(a);
		if (b >= 0)
			close(b);
	}
	if (t.lfd >= 0)
		close(t.lfd);
	free(t.cfd);
	free(t.sfd);
	free(t.scpu);
	free(t.hh);
	free(t.ca);
	free(t.ha);
	free(ch);
	return rc;
}

/* ---- process ------------------------------------------------------------- */

int wk_raise_nofile(long need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return errno;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur >= (rlim_t)need)
		return 0;
	if (rl.rlim_cur == RLIM_INFINITY)
		return 0;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < (rlim_t)need)
		return EMFILE;
	rl.rlim_cur = rl.rlim_max != RLIM_INFINITY ? rl.rlim_max : (rlim_t)need;
	return setrlimit(RLIMIT_NOFILE, &rl) == 0 ? 0 : errno;
}

long wk_kernel_threads(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (strncmp(line, "Threads:", 8) == 0) {
			v = strtol(line + 8, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}
