/* Eight threads each block in read() on a pipe of their own while one writer
 * feeds the pipes in turn, in lock-step: it writes one record to reader i's
 * pipe, then blocks in read() on a shared acknowledgement pipe until reader i
 * has taken the whole record. So at almost every moment every thread but one
 * is blocked in the kernel, and the one that can run is found only if the
 * others' blocked kernel threads gave their workers away: on fewer workers
 * than threads a runtime that keeps a worker across a blocking read() hangs
 * here at the first read of an empty pipe.
 *
 * A record is a length byte and that many payload bytes (1 to 32), so the
 * reader does not depend on how the kernel splits reads. Each reader sums
 * the payload bytes it gets; main prints every reader's counts, which depend
 * only on the rounds asked for.
 *
 * usage: px_pipe_readers [ROUNDS]   (default 100; each round visits every reader once) */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define READERS 8

struct reader {
	int fd;            /* read end of this reader's pipe */
	long records;      /* complete records read */
	long bytes;        /* payload bytes read */
	unsigned long sum; /* sum of the payload bytes */
};

static struct reader readers[READERS];
static int data_w[READERS]; /* write ends, the writer's */
static int ack_pipe[2];     /* readers write one byte per record; the writer reads */
static int rounds = 100;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* The record of round ROUND for reader I: its length, and its payload byte K. */
static int rec_len(int round, int i)
{
	return 1 + (round * 7 + i * 5) % 32;
}

static unsigned char rec_byte(int round, int i, int k)
{
	return (unsigned char)(round * 31 + i * 17 + k * 3 + 1);
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

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	unsigned char buf[256];
	size_t have = 0;
	for (;;) {
		ssize_t n = read(r->fd, buf + have, sizeof buf - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("read");
		if (n == 0)
			break; /* the writer closed the pipe: all rounds done */
		have += (size_t)n;
		/* Take every complete record; keep a partial one for the next read. */
		size_t off = 0;
		while (have - off >= 1 && have - off >= 1u + buf[off]) {
			size_t len = buf[off];
			for (size_t k = 0; k < len; k++)
				r->sum += buf[off + 1 + k];
			r->bytes += (long)len;
			r->records++;
			off += 1 + len;
			write_all(ack_pipe[1], "a", 1);
		}
		memmove(buf, buf + off, have - off);
		have -= off;
	}
	if (have != 0) {
		fprintf(stderr, "reader: %zu bytes of a partial record at EOF\n", have);
		exit(1);
	}
	close(r->fd);
	return NULL;
}

static void *writer_main(void *arg)
{
	(void)arg;
	unsigned char rec[64];
	for (int round = 0; round < rounds; round++) {
		for (int i = 0; i < READERS; i++) {
			int len = rec_len(round, i);
			rec[0] = (unsigned char)len;
			for (int k = 0; k < len; k++)
				rec[1 + k] = rec_byte(round, i, k);
			write_all(data_w[i], rec, (size_t)len + 1);
			/* Wait, blocked in read(), until reader i has the record. */
			char a;
			ssize_t n;
			do
				n = read(ack_pipe[0], &a, 1);
			while (n < 0 && errno == EINTR);
			if (n != 1)
				die("read ack");
		}
	}
	for (int i = 0; i < READERS; i++)
		close(data_w[i]);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		rounds = atoi(argv[1]);
	if (rounds < 1 || rounds > 100000) {
		fprintf(stderr, "usage: %s [ROUNDS 1..100000]\n", argv[0]);
		return 2;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);

	if (pipe(ack_pipe))
		die("pipe");
	pthread_t rt[READERS], wt;
	/* Readers first, so on one worker they are all blocked before the writer runs. */
	for (int i = 0; i < READERS; i++) {
		int p[2];
		if (pipe(p))
			die("pipe");
		readers[i].fd = p[0];
		data_w[i] = p[1];
		if (pthread_create(&rt[i], NULL, reader_main, &readers[i]))
			die("pthread_create");
	}
	if (pthread_create(&wt, NULL, writer_main, NULL))
		die("pthread_create");
	if (pthread_join(wt, NULL))
		die("pthread_join");

	long records = 0, bytes = 0;
	unsigned long sum = 0, want_sum = 0;
	long want_bytes = 0;
	for (int i = 0; i < READERS; i++) {
		if (pthread_join(rt[i], NULL))
			die("pthread_join");
		printf("reader %d: %ld records, %ld bytes, sum %lu\n", i, readers[i].records,
		       readers[i].bytes, readers[i].sum);
		records += readers[i].records;
		bytes += readers[i].bytes;
		sum += readers[i].sum;
		for (int round = 0; round < rounds; round++)
			for (int k = 0; k < rec_len(round, i); k++) {
				want_sum += rec_byte(round, i, k);
				want_bytes++;
			}
	}
	int ok = records == (long)rounds * READERS && bytes == want_bytes && sum == want_sum;
	printf("total: %ld records, %ld bytes, sum %lu\n", records, bytes, sum);
	printf("as written: %s\n", ok ? "yes" : "NO");

	clock_gettime(CLOCK_MONOTONIC, &t1);
	fprintf(stderr, "px_pipe_readers: %d round trips in %.3f s\n", rounds * READERS,
		(double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	return ok ? 0 : 1;
}
