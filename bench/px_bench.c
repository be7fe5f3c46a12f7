/* weft-px-bench: a plain pthread program (no weft header) whose costs
 * `weft-bench posix` compares under glibc and under
 * LD_PRELOAD=libweft-pthread.so: the same binary both times.
 *
 * Prints one line: create_join_ns=... mutex_ns=... condvar_rt_ns=...
 * (each the median of 5 runs). usage: weft-px-bench [--quick]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median5(double v[5])
{
	qsort(v, 5, sizeof v[0], cmp);
	return v[2];
}

static void *nothing(void *arg)
{
	return arg;
}

static double create_join(long n)
{
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, nothing, NULL) || pthread_join(t, NULL)) {
			fprintf(stderr, "weft-px-bench: create/join failed\n");
			exit(1);
		}
	}
	return (now_ns() - t0) / (double)n;
}

static double mutex_pairs(long n)
{
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
	}
	return (now_ns() - t0) / (double)n;
}

/* Two threads hand a turn back and forth with a mutex and a condvar. */
static pthread_mutex_t pm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pc = PTHREAD_COND_INITIALIZER;
static long turn, rounds;

static void *player(void *arg)
{
	long me = (long)arg;
	pthread_mutex_lock(&pm);
	for (long i = 0; i < rounds; i++) {
		while (turn % 2 != me)
			pthread_cond_wait(&pc, &pm);
		turn++;
		pthread_cond_signal(&pc);
	}
	pthread_mutex_unlock(&pm);
	return NULL;
}

static double condvar_rt(long n)
{
	turn = 0;
	rounds = n;
	pthread_t a, b;
	double t0 = now_ns();
	pthread_create(&a, NULL, player, (void *)0L);
	pthread_create(&b, NULL, player, (void *)1L);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return (now_ns() - t0) / (double)n;
}

int main(int argc, char **argv)
{
	int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
	long ncj = quick ? 2000 : 20000, nm = quick ? 200000 : 5000000, ncv = quick ? 2000 : 20000;
	double cj[5], mu[5], cv[5];
	for (int r = 0; r < 5; r++) {
		cj[r] = create_join(ncj);
		mu[r] = mutex_pairs(nm);
		cv[r] = condvar_rt(ncv);
	}
	printf("create_join_ns=%.1f mutex_ns=%.2f condvar_rt_ns=%.1f\n", median5(cj), median5(mu),
	       median5(cv));
	return 0;
}
