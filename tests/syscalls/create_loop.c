/* Create and join N ULTs one after the other (argv[1]); with argv[2] ==
 * "detached", create them detached and wait for them through a counter. The
 * test runs this under strace for two N and expects the same number of
 * system calls: stacks come from the worker's cache, ids from its slot
 * cache, nothing in the loop enters the kernel. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <weft.h>

static atomic_long done;

static void *count(void *arg)
{
	atomic_fetch_add(&done, 1);
	return arg;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	long n = atol(argv[1]);
	int detached = argc > 2 && strcmp(argv[2], "detached") == 0;
	weft_attr_t a;
	weft_attr_init(&a);
	weft_attr_setdetached(&a, detached);
	for (long i = 0; i < n; i++) {
		weft_t t;
		if (weft_create(&t, &a, count, NULL) != 0)
			return 1;
		if (detached)
			weft_yield(); /* let it run and exit here */
		else if (weft_join(t, NULL) != 0)
			return 1;
	}
	while (atomic_load(&done) < n)
		weft_yield();
	return weft_shutdown();
}
