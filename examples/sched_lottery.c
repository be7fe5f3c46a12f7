/* A lottery scheduler (Waldspurger and Weihl, "Lottery Scheduling", 1994)
 * installed on every worker: each ULT holds as many tickets as its
 * scheduling hint says (at least one), and each decision draws one ticket
 * among the ready ULTs of the worker. Over many decisions a ULT runs in
 * proportion to its tickets.
 *
 * The whole scheduler is the table `lottery` below: a per-worker list of
 * ready ULTs and a random number generator. weft calls put and get only on
 * the worker that owns the state, so nothing here locks. No give: every
 * worker keeps its own ULTs (workers that run out of work sleep until
 * something is made ready for them).
 *
 * The program: three ULTs with 1, 2 and 4 tickets on one worker take turns
 * through weft_yield until 70,000 turns have been run, and print the share
 * of turns each got. It exits with status 1 if a share is far from
 * tickets/7 - so that `make test` can run it as a check.
 *
 *   cc sched_lottery.c $(pkg-config --cflags --libs weft) && ./a.out
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <weft.h>

typedef struct {
	weft_sched_node_t head; /* a circular list of the ready ULTs */
	uint64_t tickets;       /* their sum */
	uint64_t rng;
} lottery_t;

static uint64_t tickets_of(const weft_sched_node_t *n)
{
	uint64_t t = weft_sched_node_hint(n);
	return t ? t : 1;
}

static int lottery_init(void *state, int worker, void *arg)
{
	(void)arg;
	lottery_t *l = state;
	l->head.next = l->head.prev = &l->head;
	l->rng = 0x9E3779B97F4A7C15ull * (uint64_t)(worker + 1);
	return 0;
}

static int lottery_put(void *state, weft_sched_node_t *n, int why)
{
	(void)why;
	lottery_t *l = state;
	n->key = tickets_of(n); /* the hint as it was when the ULT got ready */
	n->prev = l->head.prev;
	n->next = &l->head;
	l->head.prev->next = n;
	l->head.prev = n;
	l->tickets += n->key;
	return 0; /* no other worker may take it: wake nobody */
}

static weft_sched_node_t *lottery_get(void *state)
{
	lottery_t *l = state;
	if (l->head.next == &l->head)
		return NULL;
	l->rng ^= l->rng << 13; /* xorshift64 */
	l->rng ^= l->rng >> 7;
	l->rng ^= l->rng << 17;
	uint64_t draw = l->rng % l->tickets;
	weft_sched_node_t *n = l->head.next;
	while (draw >= n->key) {
		draw -= n->key;
		n = n->next;
	}
	n->prev->next = n->next;
	n->next->prev = n->prev;
	l->tickets -= n->key;
	return n;
}

static const weft_sched_ops_t lottery = {
	.abi = WEFT_SCHED_ABI,
	.size = sizeof(weft_sched_ops_t),
	.name = "lottery",
	.state_size = sizeof(lottery_t),
	.init = lottery_init,
	.put = lottery_put,
	.get = lottery_get,
};

enum { NULTS = 3, TURNS = 70000 };
static atomic_long turns_total;
static long turns[NULTS];

static void *player(void *arg)
{
	int me = (int)(intptr_t)arg;
	weft_sched_sethint(WEFT_NULL, 1u << me); /* 1, 2, 4 tickets */
	weft_yield();                            /* from now on with those tickets */
	while (atomic_fetch_add(&turns_total, 1) < TURNS) {
		turns[me]++;
		weft_yield();
	}
	return NULL;
}

int main(void)
{
	weft_config_t cfg;
	weft_config_init(&cfg);
	cfg.workers = 1;
	int e = weft_init(&cfg);
	if (e == 0)
		e = weft_sched_install_all(&lottery, NULL);
	if (e) {
		fprintf(stderr, "weft: %d\n", e);
		return 2;
	}
	weft_t t[NULTS];
	for (int i = 0; i < NULTS; i++)
		if (weft_create(&t[i], NULL, player, (void *)(intptr_t)i) != 0)
			return 2;
	for (int i = 0; i < NULTS; i++)
		weft_join(t[i], NULL);
	int bad = 0;
	long sum = turns[0] + turns[1] + turns[2];
	for (int i = 0; i < NULTS; i++) {
		double share = (double)turns[i] / (double)sum, want = (double)(1 << i) / 7.0;
		printf("ULT with %d ticket(s): %5.1f%% of the turns (expected %4.1f%%)\n", 1 << i,
		       100 * share, 100 * want);
		bad |= share < 0.8 * want || share > 1.2 * want;
	}
	weft_shutdown();
	return bad;
}
