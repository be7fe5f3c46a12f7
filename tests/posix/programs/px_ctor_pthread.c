/* A program linked with a library whose constructor creates and joins a
 * thread before main (px_ctor_lib.c); main then runs threads as usual. */
#include <pthread.h>
#include <stdio.h>

int px_ctor_result(void);

static void *square(void *arg)
{
	long v = (long)arg;
	return (void *)(v * v);
}

int main(void)
{
	printf("constructor's thread returned %d\n", px_ctor_result());
	pthread_t t[8];
	long sum = 0;
	for (long i = 0; i < 8; i++)
		if (pthread_create(&t[i], NULL, square, (void *)i) != 0)
			return 1;
	for (int i = 0; i < 8; i++) {
		void *r;
		if (pthread_join(t[i], &r) != 0)
			return 1;
		sum += (long)r;
	}
	printf("sum of squares %ld\n", sum);
	return 0;
}
