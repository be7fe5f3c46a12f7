/* The README's minimal program: one ULT, created and joined. */
#include <stdio.h>
#include <weft.h>

static void *hello(void *arg)
{
	printf("hello from ULT %llu on worker %d\n", (unsigned long long)weft_self(),
	       weft_worker_id());
	return arg;
}

int main(void)
{
	weft_t t;
	void *ret;
	if (weft_create(&t, NULL, hello, (void *)42) != 0) /* starts the runtime */
		return 1;
	if (weft_join(t, &ret) != 0)
		return 1;
	return ret == (void *)42 ? 0 : 1;
}
