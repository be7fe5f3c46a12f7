/* Two threads hand a flag back and forth with nothing between the loads:
 * no system call, no pthread call. On one weft worker only preemption lets
 * the other thread run (src/sched/preempt.c). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#define ROUNDS 20

static atomic_int turn;

static void *other(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		while (atomic_load_explicit(&turn, memory_order_acquire) != 1)
			;
		atomic_store_explicit(&turn, 0, memory_order_release);
	}
	return NULL;
}

int main(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, other, NULL) != 0)
		return 1;
	for (int i = 0; i < ROUNDS; i++) {
		atomic_store_explicit(&turn, 1, memory_order_release);
		while (atomic_load_explicit(&turn, memory_order_acquire) != 0)
			;
	}
	pthread_join(t, NULL);
	printf("flag handed back and forth %d times\n", ROUNDS);
	return 0;
}
