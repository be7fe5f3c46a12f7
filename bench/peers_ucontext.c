/* glibc ucontext: the baseline for weft's ucontext backend. glibc's
 * swapcontext saves and restores the signal mask with a system call on
 * every switch; weft's backend must not (target: <= 1/3 of this). */
#include "peers.h"
#include "report.h"

#include <errno.h>
#include <stdlib.h>
#include <ucontext.h>

static ucontext_t main_uc, co_uc;

static void co_loop(void)
{
	for (;;)
		swapcontext(&co_uc, &main_uc);
}

int wb_ucontext_swap_rt(long n, int64_t *elapsed_ns)
{
	size_t size = 64 * 1024;
	void *stack = malloc(size);
	int64_t t0;

	if (!stack)
		return ENOMEM;
	getcontext(&co_uc);
	co_uc.uc_stack.ss_sp = stack;
	co_uc.uc_stack.ss_size = size;
	co_uc.uc_link = NULL;
	makecontext(&co_uc, co_loop, 0);
	swapcontext(&main_uc, &co_uc); /* first entry, not timed */
	t0 = wb_now_ns();
	for (long i = 0; i < n; i++)
		swapcontext(&main_uc, &co_uc);
	*elapsed_ns = wb_now_ns() - t0;
	/* co_loop stays suspended forever; nothing refers to its stack now. */
	free(stack);
	return 0;
}
