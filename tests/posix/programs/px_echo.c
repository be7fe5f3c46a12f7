/* A thread-per-connection echo server and its clients over loopback TCP, all
 * in one process: a listener thread accept()s N connections and starts a
 * thread per connection that read()s and write()s back until EOF; N client
 * threads connect(), each sends M messages with write(), waits in poll() for
 * the echo to be readable and read()s it back (short reads and writes
 * allowed), checks every byte and closes.
 *
 * This is the classic blocking server that M:N threading exists for: with
 * N = 200 there are 400 threads blocked in read() or poll() at once. A
 * runtime that keeps a worker across a blocking call hangs as soon as every
 * worker holds such a thread.
 *
 * stdout: the connections served, the bytes echoed (counted by the server
 * and by the clients) and a checksum of what the clients got back, all of
 * which depend only on N and M. The server listens on 127.0.0.1, on a port
 * the kernel picks (port 0, then getsockname).
 *
 * usage: px_echo [N [M]]   (default 200 connections, 20 messages each) */
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
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_MSG 1024
/* A client gives up on an echo after this long: a lost reply fails, it does not hang. */
#define POLL_TIMEOUT_MS 30000

static int nconn = 200, nmsg = 20;
static int listen_fd;
static struct sockaddr_in server_addr;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long server_bytes;   /* echoed by the server, under lock */
static long client_bytes;   /* read back by the clients, under lock */
static unsigned long check; /* sum of the clients' checksums, under lock */
static int clients_ok;      /* clients that got every byte back, under lock */

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* A small stack for each of the 2N+1 threads (glibc's default is 8 MiB). */
static void start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 256 * 1024);
	int e = pthread_create(t, &a, fn, arg);
	pthread_attr_destroy(&a);
	if (e) {
		errno = e;
		die("pthread_create");
	}
}

static int write_all(int fd, const unsigned char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One connection's server side: echo until the client closes. */
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
			die("server read");
		if (n == 0)
			break;
		if (write_all(fd, buf, (size_t)n))
			die("server write");
		bytes += n;
	}
	close(fd);
	pthread_mutex_lock(&lock);
	server_bytes += bytes;
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* Accepts exactly nconn connections, a thread for each, and joins them. */
static void *listener(void *arg)
{
	(void)arg;
	pthread_t *t = calloc((size_t)nconn, sizeof *t);
	if (!t)
		die("calloc");
	for (int i = 0; i < nconn; i++) {
		int fd;
		do
			fd = accept(listen_fd, NULL, NULL);
		while (fd < 0 && errno == EINTR);
		if (fd < 0)
			die("accept");
		start(&t[i], serve, (void *)(long)fd);
	}
	for (int i = 0; i < nconn; i++)
		if (pthread_join(t[i], NULL))
			die("pthread_join server");
	free(t);
	return NULL;
}

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
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket");
	if (connect(fd, (struct sockaddr *)&server_addr, sizeof server_addr))
		die("connect");
	/* Small writes go out at once, without Nagle waiting for the echo's ACK. */
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

	unsigned char out[MAX_MSG], in[MAX_MSG];
	unsigned long sum = 0;
	long bytes = 0;
	int ok = 1;
	for (int k = 0; k < nmsg; k++) {
		size_t len = msg_len(c, k);
		for (size_t j = 0; j < len; j++)
			out[j] = msg_byte(c, k, j);
		if (write_all(fd, out, len))
			die("client write");
		size_t got = 0;
		while (got < len) {
			/* Block in poll() until the echo is readable, then read what is there. */
			struct pollfd p = {.fd = fd, .events = POLLIN};
			int r = poll(&p, 1, POLL_TIMEOUT_MS);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				die("poll");
			if (r == 0) {
				fprintf(stderr, "client %d: no echo in %d ms\n", c,
					POLL_TIMEOUT_MS);
				exit(1);
			}
			ssize_t n = read(fd, in + got, len - got);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				die("client read");
			if (n == 0) {
				fprintf(stderr, "client %d: EOF before the echo\n", c);
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
	pthread_mutex_lock(&lock);
	client_bytes += bytes;
	check += sum; /* a sum, so the order clients finish in does not matter */
	clients_ok += ok;
	pthread_mutex_unlock(&lock);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		nconn = atoi(argv[1]);
	if (argc > 2)
		nmsg = atoi(argv[2]);
	if (nconn < 1 || nconn > 5000 || nmsg < 1 || nmsg > 100000) {
		fprintf(stderr, "usage: %s [N 1..5000 [M 1..100000]]\n", argv[0]);
		return 2;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);

	/* Two descriptors per connection, plus a few: raise the soft limit if it is short. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (rlim_t)(2 * nconn + 64)) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			die("setrlimit");
	}

	listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	if (listen_fd < 0)
		die("socket");
	server_addr.sin_family = AF_INET;
	server_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	server_addr.sin_port = 0; /* the kernel picks a free port */
	socklen_t alen = sizeof server_addr;
	if (bind(listen_fd, (struct sockaddr *)&server_addr, sizeof server_addr) ||
	    getsockname(listen_fd, (struct sockaddr *)&server_addr, &alen))
		die("bind");
	/* A backlog for every client, so no connect() waits for the listener to catch up. */
	if (listen(listen_fd, nconn + 16))
		die("listen");

	pthread_t lt;
	start(&lt, listener, NULL);
	pthread_t *ct = calloc((size_t)nconn, sizeof *ct);
	if (!ct)
		die("calloc");
	for (int c = 0; c < nconn; c++)
		start(&ct[c], client, (void *)(long)c);
	for (int c = 0; c < nconn; c++)
		if (pthread_join(ct[c], NULL))
			die("pthread_join client");
	if (pthread_join(lt, NULL))
		die("pthread_join listener");
	close(listen_fd);
	free(ct);

	long want = 0;
	for (int c = 0; c < nconn; c++)
		for (int k = 0; k < nmsg; k++)
			want += (long)msg_len(c, k);
	printf("connections: %d, messages each: %d\n", nconn, nmsg);
	printf("clients that got every byte back: %d\n", clients_ok);
	printf("bytes echoed by the server: %ld\n", server_bytes);
	printf("bytes read back by the clients: %ld (expected %ld)\n", client_bytes, want);
	printf("checksum: %lu\n", check);

	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	fprintf(stderr, "px_echo: %d connections x %d messages in %.3f s (%.0f round trips/s)\n",
		nconn, nmsg, s, (double)nconn * nmsg / s);
	return clients_ok == nconn && server_bytes == want && client_bytes == want ? 0 : 1;
}
