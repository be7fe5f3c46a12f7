/* A small weft workload for Valgrind's memcheck: ULTs on every worker that
 * create, join, yield, park and use their stacks, on the context backend
 * chosen by WEFT_CONTEXT. The test passes if memcheck reports no error. */
#include <stdio.h>
#include <string.h>
#include <weft.h>

static void *leaf(void *arg)
{
	char buf[2048]; /* touch the ULT's stack */
	memset(buf, (int)(long)arg, sizeof buf);
	weft_yield();
	return (void *)(long)buf[100];
}

static void *fib(void *arg)
{
	long n = (long)arg;
	if (n < 2)
		return arg;
	weft_t a, b;
	void *ra, *rb;
	if (weft_create(&a, NULL, fib, (void *)(n - 1)) ||
	    weft_create(&b, NULL, fib, (void *)(n - 2)))
		return (void *)-1000000L;
	weft_join(a, &ra);
	weft_join(b, &rb);
	return (void *)((long)ra + (long)rb);
}

static weft_t parked;

static void *parker(void *arg)
{
	weft_park(); /* may return spuriously: that is fine here */
	return arg;
}

int main(void)
{
	weft_t t[64];
	long sum = 0;
	for (int i = 0; i < 64; i++)
		if (weft_create(&t[i], NULL, leaf, (void *)(long)(i + 1)))
			return 2;
	for (int i = 0; i < 64; i++) {
		void *r;
		weft_join(t[i], &r);
		sum += (long)r;
	}
	void *r;
	weft_create(&t[0], NULL, fib, (void *)12L);
	weft_join(t[0], &r);
	weft_create(&parked, NULL, parker, NULL);
	weft_yield();
	weft_unpark(parked);
	weft_join(parked, NULL);
	printf("sum=%ld fib12=%ld\n", sum, (long)r);
	if (sum != 64 * 65 / 2 || (long)r != 144)
		return 1;
	return weft_shutdown();
}
