/* weft-sim in a few lines: a producer and a consumer behavior in a par,
 * a typed double handshake between them, and simulated time.
 *   cc sim_hello.c $(pkg-config --cflags --libs weft-sim)
 * Prints t=10 got 0, t=20 got 1, t=30 got 2. WEFT_SIM_BACKEND picks the
 * thread backend (default hybrid). */
#include <stdio.h>

#include <weft/sim.h>

WSIM_DEFINE_TYPED_DOUBLE_HANDSHAKE(int, int) /* wsim_dhs_int_t and its send/receive */

static wsim_dhs_int_t ch;

static void producer(void *arg)
{
	for (int i = 0; i < 3; i++) {
		wsim_waitfor(10);          /* 10 units of simulated time */
		wsim_dhs_int_send(&ch, i); /* blocks until received */
	}
}

static void consumer(void *arg)
{
	for (int i = 0; i < 3; i++) {
		int v;
		wsim_dhs_int_receive(&ch, &v);
		printf("t=%llu got %d\n", (unsigned long long)wsim_now(), v);
	}
}

static void top(void *arg)
{
	wsim_behavior_t b[] = {{producer, NULL}, {consumer, NULL}};
	wsim_par(2, b); /* SpecC: par { producer; consumer; } */
}

int main(void)
{
	return wsim_run(NULL, top, NULL); /* 0, or EDEADLK, EINVAL, ... */
}
