/* 10,000 concurrent connections to a thread-per-connection echo server over
 * loopback TCP, in two processes: this one is the server, and it starts the
 * client as a second process running this program (fork, then exec of
 * /proc/self/exe with --client: a child forked from a process weft runs
 * cannot start threads, and one descriptor limit - 20,000 here - cannot
 * hold both ends of 10,000 connections).
 *
 *   server  listens on 127.0.0.1 (a port from the kernel, bound before the
 *           fork and passed on the command line), accepts N connections, a
 *           thread for each that reads and writes back until EOF.
 *   client  N threads; each connects, then waits at a barrier until all N
 *           are connected, so that every connection is open at once; then
 *           each sends M messages (1..512 bytes, write or send) and reads
 *           every echo back (read or recv), checks it and closes.
 *
 * While all N are open - the client once its N threads met at the barrier,
 * the server once it accepted the N-th connection; the client sends
 * nothing until the server says so, through a pipe - each process reads
 * its kernel thread count (Threads: in /proc/self/status) and tells it on
 * stderr. With PX_THREAD_BOUND=B in the environment (the test sets it in
 * the weft mode only, where N threads run on a few kernel threads) a count
 * above B fails the run; on glibc every thread is a kernel thread.
 *
 * The client starts its threads no faster than the server accepts: at most
 * half of net.core.somaxconn connections ahead of the accepts the server
 * reports on the same pipe (a byte per ACCEPT_STEP). A listen queue that
 * overflowed drops SYNs, and each such connect then blocks in the kernel
 * for the 1 s retransmit - in weft a system call section, and with every
 * worker in one for 2 ms weft rightly makes spare kernel threads past
 * WEFT_SPARES (docs/posix-coverage.md), which the bound above would call a
 * failure. It happened in one run in ten or twenty on two CPUs.
 *
 * stdout depends only on N and M: the connections each side saw at once,
 * the bytes echoed and read back, a checksum. Every thread has a 64 KiB
 * stack, so that glibc runs 2 x 10,000 kernel threads too.
 *
 * usage: px_echo_10k [N [M]]   (default 10000 connections, 4 messages each) */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STACK       (64 * 1024)
#define MAX_MSG     512
#define WATCHDOG    170 /* s: a lost echo kills the run (SIGALRM), it does not hang */
#define MAX_CONNS   100000

#define ACCEPT_STEP 16 /* the server writes 'a' to the go pipe per this many accepts */
static int nconn = 10000, nmsg = 4;
static const char *role = "server";

static void die(const char *what)
{
	fprintf(stderr, "px_echo_10k %s: %s: %s\n", role, what, strerror(errno));
	exit(1);
}

static void die_e(const char *what, int e)
{
	errno = e;
	die(what);
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Room for n descriptors and a few: the soft limit up to the hard one. */
static void raise_nofile(long n)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl))
		die("getrlimit");
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t)n) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			die("setrlimit");
	}
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t)n) {
		fprintf(stderr, "px_echo_10k %s: %ld descriptors needed, the limit is %ld\n", role,
			n, (long)rl.rlim_cur);
		exit(1);
	}
}

static void start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, STACK);
	int e = pthread_create(t, &a, fn, arg);
	pthread_attr_destroy(&a);
	if (e)
		die_e("pthread_create", e);
}

/* The "Threads:" line of /proc/self/status: the process's kernel threads. */
static long kernel_threads(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	char line[256];
	long n = -1;
	while (fgets(line, sizeof line, f))
		if (strncmp(line, "Threads:", 8) == 0) {
			n = strtol(line + 8, NULL, 10);
			break;
		}
	fclose(f);
	return n;
}

/* Tell the count on stderr; above PX_THREAD_BOUND (if set) the run fails. */
static int threads_ok(void)
{
	long kt = kernel_threads();
	const char *b = getenv("PX_THREAD_BOUND");
	fprintf(stderr, "px_echo_10k %s: %d connections open, %ld kernel threads%s%s\n", role,
		nconn, kt, b ? ", bound " : "", b ? b : "");
	if (!b)
		return 1;
	long bound = strtol(b, NULL, 10);
	if (kt < 0 || kt > bound) {
		printf("%s: %ld kernel threads with %d connections open, more than %ld\n", role, kt,
		       nconn, bound);
		return 0;
	}
	return 1;
}

static int write_all(int fd, const unsigned char *p, size_t len, int use_send)
{
	while (len > 0) {
		ssize_t n = use_send ? send(fd, p, len, MSG_NOSIGNAL) : write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* ---- the server ------------------------------------------------------------ */

static atomic_long server_bytes;

static void *serve(void *arg)
{
	int fd = (int)(long)arg;
	unsigned char buf[4096];
	long bytes = 0;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("read");
		if (n == 0)
			break;
		if (write_all(fd, buf, (size_t)n, 0))
			die("write");
		bytes += n;
	}
	close(fd);
	atomic_fetch_add(&server_bytes, bytes);
	return NULL;
}

static int server(int lfd, int go_w, pid_t child)
{
	pthread_t *t = calloc((size_t)nconn, sizeof *t);
	if (!t)
		die("calloc");
	for (int i = 0; i < nconn; i++) {
		int fd;
		do
			fd = accept(lfd, NULL, NULL);
		while (fd < 0 && errno == EINTR);
		if (fd < 0)
			die("accept");
		start(&t[i], serve, (void *)(long)fd);
		if ((i + 1) % ACCEPT_STEP == 0 && write(go_w, "a", 1) != 1)
			die("write accept count");
	}
	/* Every connection is accepted, none closed: the client sends nothing
	 * before the byte below. */
	int ok = threads_ok();
	if (write(go_w, "g", 1) != 1)
		die("write go");
	close(go_w);
	for (int i = 0; i < nconn; i++) {
		int e = pthread_join(t[i], NULL);
		if (e)
			die_e("pthread_join", e);
	}
	free(t);
	close(lfd);

	int st;
	while (waitpid(child, &st, 0) < 0)
		if (errno != EINTR)
			die("waitpid");
	int child_ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
	if (!child_ok)
		fprintf(stderr, "px_echo_10k server: the client %s %d\n",
			WIFEXITED(st) ? "exited with status" : "was killed by signal",
			WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	printf("server: connections accepted: %d\n", nconn);
	printf("server: bytes echoed: %ld\n", atomic_load(&server_bytes));
	return ok && child_ok ? 0 : 1;
}

/* ---- the client ------------------------------------------------------------ */

static struct sockaddr_in server_addr;
static pthread_barrier_t connected, go;
static atomic_long client_bytes;
static atomic_ulong check;
static atomic_int clients_ok;

/* Message k of client c: its length (1..MAX_MSG) and byte j. */
static size_t msg_len(int c, int k)
{
	return 1 + (size_t)((c * 131 + k * 977) % MAX_MSG);
}

static unsigned char msg_byte(int c, int k, size_t j)
{
	return (unsigned char)(c * 7 + k * 13 + (int)j * 29 + 3);
}

static void *client(void *arg)
{
	int c = (int)(long)arg;
	int use_send = c & 1; /* half send/recv, half write/read */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket");
	int r;
	do
		r = connect(fd, (struct sockaddr *)&server_addr, sizeof server_addr);
	while (r < 0 && errno == EINTR);
	if (r)
		die("connect");
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

	pthread_barrier_wait(&connected); /* all N open at once */
	pthread_barrier_wait(&go);        /* and the server has counted */

	unsigned char out[MAX_MSG], in[MAX_MSG];
	unsigned long sum = 0;
	long bytes = 0;
	int ok = 1;
	for (int k = 0; k < nmsg; k++) {
		size_t len = msg_len(c, k);
		for (size_t j = 0; j < len; j++)
			out[j] = msg_byte(c, k, j);
		if (write_all(fd, out, len, use_send))
			die("send");
		size_t got = 0;
		while (got < len) {
			ssize_t n = use_send ? recv(fd, in + got, len - got, 0)
					     : read(fd, in + got, len - got);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				die("recv");
			if (n == 0) {
				fprintf(stderr, "px_echo_10k client %d: EOF before the echo\n", c);
				exit(1);
			}
			got += (size_t)n;
		}
		if (memcmp(in, out, len) != 0)
			ok = 0;
		for (size_t j = 0; j < len; j++)
			sum = sum * 31 + in[j];
		bytes += (long)len;
	}
	close(fd);
	atomic_fetch_add(&client_bytes, bytes);
	atomic_fetch_add(&check, sum); /* a sum: the order clients end in does not matter */
	atomic_fetch_add(&clients_ok, ok);
	return NULL;
}

/* One byte from the server: 'a' (ACCEPT_STEP more accepted) or 'g' (all
 * accepted and counted). */
static char server_word(int go_r)
{
	char g;
	ssize_t n;
	do
		n = read(go_r, &g, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1 || (g != 'a' && g != 'g')) {
		fprintf(stderr, "px_echo_10k client: no word from the server\n");
		exit(1);
	}
	return g;
}

/* How many connections may wait in the listen queue: half of somaxconn,
 * at least 2 * ACCEPT_STEP. */
static long connect_lead(void)
{
	long max = 4096;
	FILE *f = fopen("/proc/sys/net/core/somaxconn", "r");
	if (f) {
		if (fscanf(f, "%ld", &max) != 1)
			max = 4096;
		fclose(f);
	}
	return max / 2 > 2 * ACCEPT_STEP ? max / 2 : 2 * ACCEPT_STEP;
}

static int client_main(int port, int go_r)
{
	raise_nofile(nconn + 64);
	server_addr.sin_family = AF_INET;
	server_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	server_addr.sin_port = htons((unsigned short)port);
	if (pthread_barrier_init(&connected, NULL, (unsigned)nconn + 1) ||
	    pthread_barrier_init(&go, NULL, (unsigned)nconn + 1))
		die("pthread_barrier_init");
	pthread_t *t = calloc((size_t)nconn, sizeof *t);
	if (!t)
		die("calloc");
	long lead = connect_lead(), accepted = 0;
	int go_said = 0;
	double t0 = now_s();
	for (int c = 0; c < nconn; c++) {
		while (!go_said && c - accepted > lead) {
			if (server_word(go_r) == 'g')
				go_said = 1;
			else
				accepted += ACCEPT_STEP;
		}
		start(&t[c], client, (void *)(long)c);
	}
	pthread_barrier_wait(&connected);
	double t1 = now_s();
	int ok = threads_ok();
	while (!go_said)
		go_said = server_word(go_r) == 'g';
	pthread_barrier_wait(&go);
	for (int c = 0; c < nconn; c++) {
		int e = pthread_join(t[c], NULL);
		if (e)
			die_e("pthread_join", e);
	}
	double t2 = now_s();
	free(t);

	long want = 0;
	for (int c = 0; c < nconn; c++)
		for (int k = 0; k < nmsg; k++)
			want += (long)msg_len(c, k);
	printf("client: connections open at once: %d, messages each: %d\n", nconn, nmsg);
	printf("client: connections that got every byte back: %d\n", atomic_load(&clients_ok));
	printf("client: bytes read back: %ld (expected %ld)\n", atomic_load(&client_bytes), want);
	printf("client: checksum: %lu\n", atomic_load(&check));
	fprintf(stderr, "px_echo_10k client: %d connected in %.2f s, echoes done in %.2f s more\n",
		nconn, t1 - t0, t2 - t1);
	int all = atomic_load(&clients_ok) == nconn && atomic_load(&client_bytes) == want;
	return ok && all ? 0 : 1;
}

/* ---- main ------------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr, "usage: px_echo_10k [N 1..%d [M 1..1000]]\n", MAX_CONNS);
	exit(2);
}

static void parse_nm(int argc, char **argv, int at)
{
	if (argc > at)
		nconn = atoi(argv[at]);
	if (argc > at + 1)
		nmsg = atoi(argv[at + 1]);
	if (nconn < 1 || nconn > MAX_CONNS || nmsg < 1 || nmsg > 1000)
		usage();
}

int main(int argc, char **argv)
{
	alarm(WATCHDOG);
	if (argc > 1 && strcmp(argv[1], "--client") == 0) {
		/* px_echo_10k --client PORT GO_FD N M */
		role = "client";
		if (argc != 6)
			usage();
		parse_nm(argc, argv, 4);
		return client_main(atoi(argv[2]), atoi(argv[3]));
	}
	parse_nm(argc, argv, 1);
	double t0 = now_s();
	raise_nofile(nconn + 64);

	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		die("socket");
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t alen = sizeof a;
	if (bind(lfd, (struct sockaddr *)&a, sizeof a) ||
	    getsockname(lfd, (struct sockaddr *)&a, &alen))
		die("bind");
	if (listen(lfd, nconn)) /* the kernel caps it at net.core.somaxconn */
		die("listen");
	int gp[2]; /* the server's word to the client: all accepted and counted */
	if (pipe2(gp, O_CLOEXEC))
		die("pipe2");

	char port[16], gofd[16], n[16], m[16];
	snprintf(port, sizeof port, "%d", ntohs(a.sin_port));
	snprintf(gofd, sizeof gofd, "%d", gp[0]);
	snprintf(n, sizeof n, "%d", nconn);
	snprintf(m, sizeof m, "%d", nmsg);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		/* The read end stays open across exec; nothing else does. */
		if (fcntl(gp[0], F_SETFD, 0))
			_exit(126);
		execl("/proc/self/exe", argv[0], "--client", port, gofd, n, m, (char *)NULL);
		_exit(127);
	}
	close(gp[0]);
	int rc = server(lfd, gp[1], pid);
	fprintf(stderr, "px_echo_10k: %d connections x %d messages in %.2f s\n", nconn, nmsg,
		now_s() - t0);
	return rc;
}
