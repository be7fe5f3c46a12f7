/* weft_park/weft_unpark: token semantics, errors, foreign threads, and
 * ping-pong without lost wake-ups. Every test initialises the runtime and
 * shuts it down. */
#include "harness.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

static void *return_arg(void *arg)
{
	return arg;
}

static void *unpark_self_then_park(void *arg)
{
	int r = weft_unpark(weft_self());
	if (r)
		return (void *)(intptr_t)r;
	return (void *)(intptr_t)weft_park();
}

static void test_unpark_before_park_returns_at_once(void **state)
{
	/* One worker and nobody else to unpark: a blocking park would hang. */
	wt_init(1);
	WT_OK(weft_unpark(weft_self()));
	WT_OK(weft_park());
	weft_t t = wt_spawn(NULL, unpark_self_then_park, NULL);
	WT_ERR((intptr_t)wt_join(t), 0);
	WT_OK(weft_shutdown());
}

struct late_waker {
	weft_t target;
	atomic_int late;
};

static void *unpark_late(void *arg)
{
	struct late_waker *w = arg;
	atomic_store(&w->late, 1);
	WT_OK(weft_unpark(w->target));
	return NULL;
}

static void test_token_is_kept_at_most_once(void **state)
{
	/* Five unparks leave one token, not five. With one worker the helper
	 * can only run once main really blocks; if tokens were counted, main's
	 * next four parks would return before that. A park may return
	 * spuriously, so one early return is tolerated. */
	wt_init(1);
	for (int i = 0; i < 5; i++)
		WT_OK(weft_unpark(weft_self()));
	WT_OK(weft_park()); /* takes the one token */
	struct late_waker w = {.target = weft_self()};
	weft_t h = wt_spawn(NULL, unpark_late, &w);
	int early = 0;
	while (!atomic_load(&w.late)) {
		WT_OK(weft_park());
		if (!atomic_load(&w.late))
			early++;
	}
	WT_CMP(early, <=, 1);
	wt_join(h);
	WT_OK(weft_shutdown());
}

static void test_unpark_unknown_esrch(void **state)
{
	wt_init(2);
	weft_t t = wt_spawn(NULL, return_arg, NULL);
	WT_ERR(weft_unpark(t + 1), ESRCH);
	WT_ERR(weft_unpark(t + 1000000), ESRCH);
	WT_ERR(weft_unpark(UINT64_MAX), ESRCH);
	WT_ERR(weft_unpark(WEFT_NULL), ESRCH);
	wt_join(t);
	WT_ERR(weft_unpark(t), ESRCH); /* joined: gone */
	WT_OK(weft_shutdown());
}

static void *park_in_pthread(void *arg)
{
	return (void *)(intptr_t)weft_park();
}

static void test_park_from_foreign_thread_eperm(void **state)
{
	wt_init(2);
	struct wt_pthread p;
	wt_pthread_start(&p, park_in_pthread, NULL);
	WT_ERR((intptr_t)wt_pthread_join(&p), EPERM);
	WT_OK(weft_shutdown());
}

/* Rounds of: a ULT parks until a flag is set; a pthread sets it and unparks. */
enum { FOREIGN_ROUNDS = 1000 };
struct foreign_wake {
	atomic_ulong id[FOREIGN_ROUNDS];
	atomic_int flag[FOREIGN_ROUNDS];
	atomic_int parking[FOREIGN_ROUNDS];
	atomic_int unparked[FOREIGN_ROUNDS];
	atomic_int bad_rc;
};
struct round_arg {
	struct foreign_wake *s;
	int r;
};

static void *park_until_flag(void *arg)
{
	struct round_arg *a = arg;
	atomic_store(&a->s->parking[a->r], 1);
	while (!atomic_load(&a->s->flag[a->r]))
		WT_OK(weft_park());
	return (void *)(intptr_t)a->r;
}

static void *foreign_waker(void *arg)
{
	struct foreign_wake *s = arg;
	for (int r = 0; r < FOREIGN_ROUNDS; r++) {
		while (!atomic_load(&s->id[r]) || (r % 2 == 0 && !atomic_load(&s->parking[r])))
			sched_yield();
		atomic_store(&s->flag[r], 1);
		int rc = weft_unpark((weft_t)atomic_load(&s->id[r]));
		if (rc)
			atomic_store(&s->bad_rc, rc);
		atomic_store(&s->unparked[r], 1);
	}
	return NULL;
}

static void test_unpark_from_foreign_thread_wakes(void **state)
{
	wt_init(2);
	static struct foreign_wake s;
	static struct round_arg args[FOREIGN_ROUNDS];
	struct wt_pthread p;
	wt_pthread_start(&p, foreign_waker, &s);
	for (int r = 0; r < FOREIGN_ROUNDS; r++) {
		args[r] = (struct round_arg){&s, r};
		weft_t t = wt_spawn(NULL, park_until_flag, &args[r]);
		atomic_store(&s.id[r], t);
		/* Join only after the unpark: a joined ULT's id is gone (ESRCH). */
		while (!atomic_load(&s.unparked[r]))
			WT_OK(weft_yield());
		WT_EQ_PTR(wt_join(t), (void *)(intptr_t)r);
	}
	wt_pthread_join(&p);
	WT_ERR(atomic_load(&s.bad_rc), 0);
	WT_OK(weft_shutdown());
}

/* Ping-pong: two ULTs hand a turn back and forth, parking while it is not
 * theirs. A lost wake-up hangs the test (and the timeout fails it). */
struct pingpong {
	atomic_int turn;
	atomic_int go;
	weft_t id[2];
	int rounds;
	atomic_int bad_rc;
	atomic_int bad_where;
};
struct player {
	struct pingpong *p;
	int me;
};

static void *play(void *arg)
{
	struct player *pl = arg;
	struct pingpong *p = pl->p;
	int me = pl->me, other = 1 - me;
	while (!atomic_load(&p->go))
		weft_yield();
	for (int i = 0; i < p->rounds; i++) {
		while (atomic_load_explicit(&p->turn, memory_order_acquire) != me) {
			int r = weft_park();
			if (r) {
				atomic_store(&p->bad_rc, r);
				atomic_store(&p->bad_where, 1);
			}
		}
		atomic_store_explicit(&p->turn, other, memory_order_release);
		int r = weft_unpark(p->id[other]);
		/* Player 1's last unpark may find player 0 already finished. */
		bool last = me == 1 && i == p->rounds - 1;
		if (r != 0 && !(last && r == ESRCH)) {
			atomic_store(&p->bad_rc, r);
			atomic_store(&p->bad_where, 2);
		}
	}
	if (me == 0)
		while (atomic_load_explicit(&p->turn, memory_order_acquire) != 0)
			weft_park();
	return NULL;
}

static void ping_pong(int worker0, int worker1, int rounds)
{
	struct pingpong p = {.rounds = rounds};
	struct player a = {&p, 0}, b = {&p, 1};
	p.id[0] = wt_spawn_on(worker0, play, &a);
	p.id[1] = wt_spawn_on(worker1, play, &b);
	atomic_store(&p.go, 1);
	wt_join(p.id[0]);
	wt_join(p.id[1]);
	if (atomic_load(&p.bad_rc))
		fail_msg("weft_%s returned %s", atomic_load(&p.bad_where) == 1 ? "park" : "unpark",
			 wt_errname(atomic_load(&p.bad_rc)));
}

static void test_ping_pong_on_one_worker(void **state)
{
	wt_init(2);
	ping_pong(1, 1, 100000);
	WT_OK(weft_shutdown());
}

static void test_ping_pong_across_two_workers(void **state)
{
	wt_init(2);
	ping_pong(0, 1, 100000);
	WT_OK(weft_shutdown());
}

static void test_ping_pong_unbound(void **state)
{
	wt_init(0);
	ping_pong(-1, -1, 1000000);
	WT_OK(weft_shutdown());
}

/* A pair on one worker hands the turn back and forth while unparks from
 * the other worker and from a foreign thread land on both players at any
 * moment - before a park, between its switch and its commit, while
 * parked - and (unbound) the pair moves between the workers. The spurious
 * tokens make park return early, which the players' loop allows. A
 * wake-up lost to one of those races hangs the pair (the deadline fails
 * it); a ULT woken twice aborts on its state check. Fresh pairs each
 * round. */
#if defined(__SANITIZE_THREAD__) /* about 20 times slower */
#define DISTURB_ROUNDS 20000
#define DISTURB_PAIRS  5
#else
#define DISTURB_ROUNDS 100000
#define DISTURB_PAIRS  20
#endif

struct disturbed {
	struct pingpong p;
	atomic_int done[2]; /* each player's rounds are over */
	atomic_int stop;
	atomic_long unparks;
	atomic_int bad_rc;
};
struct disturbed_player {
	struct disturbed *d;
	struct player pl;
};

static void *disturbed_play(void *arg)
{
	struct disturbed_player *dp = arg;
	play(&dp->pl);
	atomic_store(&dp->d->done[dp->pl.me], 1);
	return NULL;
}

/* Unpark both players every so often, until stop. */
static void disturb(struct disturbed *d, int foreign)
{
	for (long i = 0; !atomic_load(&d->stop); i++) {
		if (i % 64 == 0)
			for (int k = 0; k < 2; k++) {
				int r = weft_unpark(d->p.id[k]);
				if (r && r != ESRCH)
					atomic_store(&d->bad_rc, r);
				atomic_fetch_add(&d->unparks, 1);
			}
		if (foreign)
			sched_yield();
		else
			weft_yield();
	}
}

static void *disturb_ult(void *arg)
{
	disturb(arg, 0);
	return NULL;
}

static void *disturb_pthread(void *arg)
{
	disturb(arg, 1);
	return NULL;
}

static void ping_pong_disturbed_once(int worker)
{
	static struct disturbed d;
	memset(&d, 0, sizeof d);
	d.p.rounds = DISTURB_ROUNDS;
	struct disturbed_player a = {&d, {&d.p, 0}}, b = {&d, {&d.p, 1}};
	d.p.id[0] = wt_spawn_on(worker, disturbed_play, &a);
	d.p.id[1] = wt_spawn_on(worker, disturbed_play, &b);
	weft_t other = wt_spawn_on(worker < 0 ? -1 : 1 - worker, disturb_ult, &d);
	struct wt_pthread f;
	wt_pthread_start(&f, disturb_pthread, &d);
	atomic_store(&d.p.go, 1);
	WT_WAIT(atomic_load(&d.done[0]) && atomic_load(&d.done[1]), 60);
	atomic_store(&d.stop, 1);
	wt_join(other);
	wt_pthread_join(&f);
	wt_join(d.p.id[0]);
	wt_join(d.p.id[1]);
	WT_ERR(atomic_load(&d.bad_rc), 0);
	if (atomic_load(&d.p.bad_rc))
		fail_msg("weft_%s returned %s",
			 atomic_load(&d.p.bad_where) == 1 ? "park" : "unpark",
			 wt_errname(atomic_load(&d.p.bad_rc)));
	assert_true(atomic_load(&d.unparks) > 0);
}

static void ping_pong_disturbed(int worker)
{
	wt_init(2);
	for (int i = 0; i < DISTURB_PAIRS; i++)
		ping_pong_disturbed_once(worker);
	WT_OK(weft_shutdown());
}

static void test_ping_pong_with_unparks_from_elsewhere(void **state)
{
	ping_pong_disturbed(1);
}

static void test_ping_pong_unbound_with_unparks_from_elsewhere(void **state)
{
	ping_pong_disturbed(-1);
}

struct running {
	atomic_int started;
	atomic_int go;
};

static void *park_once_after_go(void *arg)
{
	struct running *s = arg;
	atomic_store(&s->started, 1);
	while (!atomic_load(&s->go))
		weft_yield();
	return (void *)(intptr_t)weft_park(); /* the token from before must be there */
}

static void test_unpark_of_running_ult_leaves_token(void **state)
{
	wt_init(2);
	for (int i = 0; i < 200; i++) {
		struct running s = {0};
		weft_t t = wt_spawn(NULL, park_once_after_go, &s);
		WT_WAIT(atomic_load(&s.started), 10);
		WT_OK(weft_unpark(t)); /* t is running or ready, not parked */
		atomic_store(&s.go, 1);
		WT_ERR((intptr_t)wt_join(t), 0);
	}
	WT_OK(weft_shutdown());
}

static void *set_flag(void *arg)
{
	atomic_store((atomic_int *)arg, 1);
	return NULL;
}

static void test_unpark_of_finished_unjoined_ult(void **state)
{
	/* Not an error the caller can be blamed for: 0 (still known until
	 * joined) or ESRCH, and never a crash. */
	wt_init(2);
	atomic_int flag = 0;
	weft_t t = wt_spawn(NULL, set_flag, &flag);
	WT_WAIT(atomic_load(&flag), 10);
	for (int i = 0; i < 100; i++)
		weft_yield();
	int r = weft_unpark(t);
	WT_TRUE(r == 0 || r == ESRCH, "weft_unpark returned %s", wt_errname(r));
	wt_join(t);
	WT_OK(weft_shutdown());
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unpark_before_park_returns_at_once),
		cmocka_unit_test(test_token_is_kept_at_most_once),
		cmocka_unit_test(test_unpark_unknown_esrch),
		cmocka_unit_test(test_park_from_foreign_thread_eperm),
		cmocka_unit_test(test_unpark_from_foreign_thread_wakes),
		cmocka_unit_test(test_ping_pong_on_one_worker),
		cmocka_unit_test(test_ping_pong_across_two_workers),
		cmocka_unit_test(test_ping_pong_unbound),
		cmocka_unit_test(test_ping_pong_with_unparks_from_elsewhere),
		cmocka_unit_test(test_ping_pong_unbound_with_unparks_from_elsewhere),
		cmocka_unit_test(test_unpark_of_running_ult_leaves_token),
		cmocka_unit_test(test_unpark_of_finished_unjoined_ult),
	};
	return WT_RUN(argc, argv, tests);
}
