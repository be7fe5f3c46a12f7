/* A small memcached client for check_memcached.sh: it speaks the text
 * protocol over loopback TCP, with no client library, and checks every
 * reply. It is not the program under test: it runs on glibc against a
 * memcached that runs under LD_PRELOAD=libweft-pthread.so.
 *
 *   px_memcached_client free-port
 *       prints a TCP port on 127.0.0.1 that was free a moment ago
 *   px_memcached_client wait PORT SECONDS
 *       waits (bounded) until something accepts connections on PORT
 *   px_memcached_client run PORT CONNECTIONS OPS
 *       CONNECTIONS threads, each with its own connection, each doing OPS
 *       rounds of "set" then "get" of a key of its own, checking every
 *       reply; then one "get" of keys from every connection, pipelined
 *
 * Every wait for a reply is bounded (poll, 10 s): a server that stops
 * answering fails the run, it does not hang it. stdout: the counts, which
 * depend only on the arguments; stderr: requests per second. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define REPLY_TIMEOUT_MS 10000
#define MAX_VALUE        300

static int port, nconn, nops;

struct conn {
	int id;
	int fd;
	char in[8192]; /* bytes received and not yet consumed */
	size_t have;
	long sets, gets, errors;
};

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int connect_port(int p)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket");
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)p)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return fd;
}

static void send_all(struct conn *c, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(c->fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("write");
		p += n;
		len -= (size_t)n;
	}
}

/* Reads more into c->in; exits on timeout, EOF or a full buffer. */
static void fill(struct conn *c)
{
	if (c->have == sizeof c->in) {
		fprintf(stderr, "connection %d: reply too long\n", c->id);
		exit(1);
	}
	for (;;) {
		struct pollfd p = {.fd = c->fd, .events = POLLIN};
		int r = poll(&p, 1, REPLY_TIMEOUT_MS);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("poll");
		if (r == 0) {
			fprintf(stderr, "connection %d: no reply in %d ms\n", c->id,
				REPLY_TIMEOUT_MS);
			exit(1);
		}
		ssize_t n = read(c->fd, c->in + c->have, sizeof c->in - c->have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("read");
		if (n == 0) {
			fprintf(stderr, "connection %d: server closed the connection\n", c->id);
			exit(1);
		}
		c->have += (size_t)n;
		return;
	}
}

/* Consumes exactly the bytes of WANT from the reply stream; 0 if they match. */
static int expect(struct conn *c, const char *want, size_t len)
{
	while (c->have < len)
		fill(c);
	int bad = memcmp(c->in, want, len) != 0;
	if (bad)
		fprintf(stderr, "connection %d: expected \"%.*s\", got \"%.*s\"\n", c->id,
			(int)(len < 60 ? len : 60), want, (int)(len < 60 ? len : 60), c->in);
	memmove(c->in, c->in + len, c->have - len);
	c->have -= len;
	return bad;
}

/* Key and value of op K of connection I; the value's length varies (1..MAX_VALUE). */
static int make_key(char *buf, size_t size, int i, int k)
{
	return snprintf(buf, size, "px:%d:%d", i, k);
}

static size_t make_value(char *buf, int i, int k)
{
	size_t len = 1 + (size_t)((i * 53 + k * 131) % MAX_VALUE);
	for (size_t j = 0; j < len; j++)
		buf[j] = (char)('a' + (i * 7 + k * 3 + (int)j) % 26);
	return len;
}

/* One get of KEY whose value must be VALUE. */
static int check_get_reply(struct conn *c, const char *key, const char *value, size_t vlen)
{
	char want[MAX_VALUE + 128];
	int h = snprintf(want, sizeof want, "VALUE %s 0 %zu\r\n", key, vlen);
	memcpy(want + h, value, vlen);
	memcpy(want + h + vlen, "\r\nEND\r\n", 7);
	return expect(c, want, (size_t)h + vlen + 7);
}

static void *run_conn(void *arg)
{
	struct conn *c = arg;
	c->fd = connect_port(port);
	if (c->fd < 0)
		die("connect");
	char key[64], value[MAX_VALUE], req[MAX_VALUE + 128];
	for (int k = 0; k < nops; k++) {
		make_key(key, sizeof key, c->id, k);
		size_t vlen = make_value(value, c->id, k);
		int h = snprintf(req, sizeof req, "set %s 0 0 %zu\r\n", key, vlen);
		memcpy(req + h, value, vlen);
		memcpy(req + h + vlen, "\r\n", 2);
		send_all(c, req, (size_t)h + vlen + 2);
		if (expect(c, "STORED\r\n", 8))
			c->errors++;
		else
			c->sets++;
		h = snprintf(req, sizeof req, "get %s\r\n", key);
		send_all(c, req, (size_t)h);
		if (check_get_reply(c, key, value, vlen))
			c->errors++;
		else
			c->gets++;
	}
	return NULL;
}

/* After all sets: every connection's last key read back over one connection,
 * requests sent back to back before any reply is read. */
static int pipelined_check(void)
{
	struct conn c = {.id = -1};
	c.fd = connect_port(port);
	if (c.fd < 0)
		die("connect");
	char key[64], value[MAX_VALUE], req[128];
	for (int i = 0; i < nconn; i++) {
		make_key(key, sizeof key, i, nops - 1);
		int h = snprintf(req, sizeof req, "get %s\r\n", key);
		send_all(&c, req, (size_t)h);
	}
	int ok = 0;
	for (int i = 0; i < nconn; i++) {
		make_key(key, sizeof key, i, nops - 1);
		size_t vlen = make_value(value, i, nops - 1);
		ok += !check_get_reply(&c, key, value, vlen);
	}
	send_all(&c, "quit\r\n", 6);
	close(c.fd);
	return ok;
}

static int run(void)
{
	struct conn *cs = calloc((size_t)nconn, sizeof *cs);
	pthread_t *ts = calloc((size_t)nconn, sizeof *ts);
	if (!cs || !ts)
		die("calloc");
	double t0 = now_s();
	for (int i = 0; i < nconn; i++) {
		cs[i].id = i;
		if (pthread_create(&ts[i], NULL, run_conn, &cs[i]))
			die("pthread_create");
	}
	long sets = 0, gets = 0, errors = 0;
	for (int i = 0; i < nconn; i++) {
		if (pthread_join(ts[i], NULL))
			die("pthread_join");
		sets += cs[i].sets;
		gets += cs[i].gets;
		errors += cs[i].errors;
		close(cs[i].fd);
	}
	double s = now_s() - t0;
	int piped = pipelined_check();
	printf("connections: %d, set+get rounds each: %d\n", nconn, nops);
	printf("sets stored: %ld, gets matched: %ld, bad replies: %ld\n", sets, gets, errors);
	printf("pipelined gets matched: %d of %d\n", piped, nconn);
	fprintf(stderr, "px_memcached_client: %ld requests in %.3f s: %.0f requests/s\n",
		sets + gets + errors, s, (double)(sets + gets + errors) / s);
	free(cs);
	free(ts);
	return errors == 0 && sets == (long)nconn * nops && gets == sets && piped == nconn ? 0 : 1;
}

/* Binds port 0 on 127.0.0.1 and prints what the kernel picked. */
static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket");
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof a;
	if (bind(fd, (struct sockaddr *)&a, sizeof a) ||
	    getsockname(fd, (struct sockaddr *)&a, &len))
		die("bind");
	printf("%d\n", ntohs(a.sin_port));
	close(fd);
	return 0;
}

/* Polls with connect() every 50 ms until the port accepts or SECONDS pass. */
static int wait_port(int seconds)
{
	double end = now_s() + seconds;
	for (;;) {
		int fd = connect_port(port);
		if (fd >= 0) {
			close(fd);
			return 0;
		}
		if (now_s() > end) {
			fprintf(stderr,
				"px_memcached_client: nothing listens on port %d after %d s\n",
				port, seconds);
			return 1;
		}
		struct timespec d = {0, 50000000L};
		nanosleep(&d, NULL);
	}
}

static int usage(const char *me)
{
	fprintf(stderr, "usage: %s free-port | wait PORT SECONDS | run PORT CONNECTIONS OPS\n", me);
	return 2;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "free-port") == 0)
		return free_port();
	if (argc == 4 && strcmp(argv[1], "wait") == 0) {
		port = atoi(argv[2]);
		int s = atoi(argv[3]);
		if (port < 1 || port > 65535 || s < 1 || s > 600)
			return usage(argv[0]);
		return wait_port(s);
	}
	if (argc == 5 && strcmp(argv[1], "run") == 0) {
		port = atoi(argv[2]);
		nconn = atoi(argv[3]);
		nops = atoi(argv[4]);
		if (port < 1 || port > 65535 || nconn < 1 || nconn > 1000 || nops < 1 ||
		    nops > 1000000)
			return usage(argv[0]);
		return run();
	}
	return usage(argv[0]);
}
