/* weft_park_handoff: weft_unpark(t) then weft_park(), where a parked t runs
 * directly on the caller's worker in the caller's place (and, once every 16
 * decisions, is queued behind the other ready ULTs instead).
 *
 * Covered: the errors (EPERM from a foreign thread, ESRCH for unknown ids,
 * and that nothing is parked then); ping-pong using only hand-offs on one
 * worker, across two and unbound, with no lost wake-ups (a hang fails by the
 * harness's timeout); a ring of hand-offs, also with spurious unparks mixed
 * in; hand-off to self; hand-off to a target that is running, ready, asleep
 * or finished (a token is left, as by weft_unpark); a caller with a token
 * already waiting; fairness (a pair handing off to each other forever must
 * not starve a third ready ULT, nor a sleeping ULT's timer); and hand-off to
 * a ULT bound to another worker (it runs there). Every test initialises the
 * runtime and shuts it down, except those about calls without a runtime. */
#include "harness.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

static void *return_arg(void *arg)
{
	return arg;
}

/* ---- errors ------------------------------------------------------------ */

struct foreign_call {
	weft_t target;
};

static void *handoff_in_pthread(void *arg)
{
	struct foreign_call *c = arg;
	return (void *)(intptr_t)weft_park_handoff(c->target);
}

static void test_handoff_from_foreign_thread_eperm(void **state)
{
	wt_init(2);
	/* A known ULT (the caller, parked or not), an unknown id and WEFT_NULL:
	 * EPERM comes first, and the foreign thread does not block. */
	weft_t targets[] = {weft_self(), weft_self() + 1, WEFT_NULL};
	for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
		struct foreign_call c = {targets[i]};
		struct wt_pthread p;
		wt_pthread_start(&p, handoff_in_pthread, &c);
		WT_ERR((intptr_t)wt_pthread_join(&p), EPERM);
	}
	WT_OK(weft_shutdown());
}

static void test_handoff_without_runtime_eperm(void **state)
{
	/* The test's own thread, before weft_init and after weft_shutdown, is
	 * a foreign thread. */
	WT_ERR(weft_park_handoff(1), EPERM);
	WT_ERR(weft_park_handoff(WEFT_NULL), EPERM);
	wt_init(1);
	weft_t me = weft_self();
	WT_OK(weft_shutdown());
	WT_ERR(weft_park_handoff(me), EPERM);
}

static void test_handoff_unknown_esrch_does_not_park(void **state)
{
	/* One worker and nobody else to unpark the caller: had it parked, the
	 * test would hang. */
	wt_init(1);
	weft_t t = wt_spawn(NULL, return_arg, NULL);
	WT_ERR(weft_park_handoff(t + 1), ESRCH);
	WT_ERR(weft_park_handoff(t + 1000000), ESRCH);
	WT_ERR(weft_park_handoff(UINT64_MAX), ESRCH);
	WT_ERR(weft_park_handoff(WEFT_NULL), ESRCH);
	wt_join(t);
	WT_ERR(weft_park_handoff(t), ESRCH); /* joined: gone */
	WT_OK(weft_shutdown());
}

static void *handoff_unknown_then_token(void *arg)
{
	weft_t gone = (weft_t)(uintptr_t)arg;
	/* A token waiting before the failed call is still there after it: the
	 * caller's parker was not touched. */
	int r = weft_unpark(weft_self());
	if (r)
		return (void *)(intptr_t)(1000 + r);
	r = weft_park_handoff(gone);
	if (r != ESRCH)
		return (void *)(intptr_t)(2000 + r);
	return (void *)(intptr_t)weft_park(); /* takes the token; would hang without */
}

static void test_handoff_esrch_keeps_callers_token(void **state)
{
	wt_init(1);
	weft_t gone = wt_spawn(NULL, return_arg, NULL);
	wt_join(gone);
	/* In the root ULT ... */
	WT_OK(weft_unpark(weft_self()));
	WT_ERR(weft_park_handoff(gone), ESRCH);
	WT_OK(weft_park());
	/* ... and in a spawned one. */
	weft_t t = wt_spawn(NULL, handoff_unknown_then_token, (void *)(uintptr_t)gone);
	WT_ERR((intptr_t)wt_join(t), 0);
	WT_OK(weft_shutdown());
}

/* ---- ping-pong with hand-offs only --------------------------------------- */

/* Two players pass a turn: each waits for its turn (park loop), records the
 * pass, sets turn = other and hands off to the other. A hand-off may return
 * early (a token left by an earlier hand-off that found its target not
 * parked yet), so every wait re-checks the turn. At the end player 0 waits
 * for the turn to come back once more, and player 1, whose last hand-off
 * nobody answers, waits for `done`, which the test sets (then unparks it)
 * once player 0 is joined. A lost wake-up hangs the test (the harness's
 * timeout fails it); a pass out of order or a wrong worker is recorded. */
struct pingpong {
	atomic_int turn;
	atomic_int go;
	atomic_int done;
	atomic_long step; /* passes so far */
	weft_t id[2];
	int worker[2]; /* the worker each player must run on, -1: any */
	long rounds;
	atomic_int bad_rc;
	atomic_int bad_order;
	atomic_int bad_worker;
	atomic_int bad_worker_id;
};
struct player {
	struct pingpong *p;
	int me;
};

static void check_worker(struct pingpong *p, int me)
{
	if (p->worker[me] >= 0 && weft_worker_id() != p->worker[me]) {
		atomic_store(&p->bad_worker_id, weft_worker_id());
		atomic_store(&p->bad_worker, me + 1);
	}
}

static void wait_turn(struct pingpong *p, int me)
{
	while (atomic_load_explicit(&p->turn, memory_order_acquire) != me) {
		int r = weft_park();
		if (r)
			atomic_store(&p->bad_rc, r);
	}
}

static void *play_handoff(void *arg)
{
	struct player *pl = arg;
	struct pingpong *p = pl->p;
	int me = pl->me, other = 1 - me;
	while (!atomic_load(&p->go))
		weft_yield();
	for (long i = 0; i < p->rounds; i++) {
		wait_turn(p, me);
		check_worker(p, me);
		long s = atomic_load_explicit(&p->step, memory_order_relaxed);
		if (s != 2 * i + me)
			atomic_store(&p->bad_order, 1);
		atomic_store_explicit(&p->step, s + 1, memory_order_relaxed);
		atomic_store_explicit(&p->turn, other, memory_order_release);
		int r = weft_park_handoff(p->id[other]);
		/* Player 1's last hand-off may find player 0 gone (joined). */
		bool last = me == 1 && i == p->rounds - 1;
		if (r != 0 && !(last && r == ESRCH))
			atomic_store(&p->bad_rc, r);
		check_worker(p, me);
	}
	if (me == 0)
		wait_turn(p, 0);
	else
		while (!atomic_load(&p->done))
			weft_park();
	check_worker(p, me);
	return NULL;
}

static void ping_pong_handoff(int worker0, int worker1, long rounds)
{
	struct pingpong p = {.rounds = rounds, .worker = {worker0, worker1}};
	struct player a = {&p, 0}, b = {&p, 1};
	p.id[0] = wt_spawn_on(worker0, play_handoff, &a);
	p.id[1] = wt_spawn_on(worker1, play_handoff, &b);
	atomic_store(&p.go, 1);
	wt_join(p.id[0]);
	atomic_store(&p.done, 1);
	int r = weft_unpark(p.id[1]); /* 0, or ESRCH if it saw done and exited */
	WT_TRUE(r == 0 || r == ESRCH, "weft_unpark returned %s", wt_errname(r));
	wt_join(p.id[1]);
	WT_ERR(atomic_load(&p.bad_rc), 0);
	WT_ERR(atomic_load(&p.bad_order), 0);
	if (atomic_load(&p.bad_worker))
		fail_msg("player %d ran on worker %d, bound to %d", atomic_load(&p.bad_worker) - 1,
			 atomic_load(&p.bad_worker_id), p.worker[atomic_load(&p.bad_worker) - 1]);
	long steps = atomic_load(&p.step);
	WT_EQ(steps, 2 * rounds);
}

static void test_ping_pong_handoff_on_one_worker(void **state)
{
	wt_init(2);
	ping_pong_handoff(1, 1, 100000);
	WT_OK(weft_shutdown());
}

static void test_ping_pong_handoff_on_the_only_worker(void **state)
{
	wt_init(1);
	ping_pong_handoff(0, 0, 100000);
	WT_OK(weft_shutdown());
}

static void test_ping_pong_handoff_across_two_workers(void **state)
{
	wt_init(2);
	ping_pong_handoff(0, 1, 100000);
	WT_OK(weft_shutdown());
}

static void test_ping_pong_handoff_unbound(void **state)
{
	wt_init(0);
	ping_pong_handoff(-1, -1, 100000);
	WT_OK(weft_shutdown());
}

static void test_ping_pong_handoff_unbound_one_worker(void **state)
{
	wt_init(1);
	ping_pong_handoff(-1, -1, 100000);
	WT_OK(weft_shutdown());
}

static void test_ping_pong_handoff_bound_and_unbound(void **state)
{
	/* One player bound to worker 1, the other free to run anywhere: hand-offs
	 * to the bound one from worker 0 must go through its worker. */
	wt_init(2);
	ping_pong_handoff(1, -1, 100000);
	WT_OK(weft_shutdown());
}

/* ---- a ring of hand-offs ------------------------------------------------ */

/* N ULTs pass a baton around a ring with hand-offs; with `noise`, a foreign
 * thread unparks random members all the while (spurious wake-ups racing the
 * hand-offs for the same parked ULT: only one of them may own it). */
enum { RING = 8 };
struct ring {
	weft_t id[RING];
	atomic_int baton;
	atomic_int go;
	atomic_int stop_noise;
	atomic_long passes;
	long laps;
	atomic_int bad_rc;
	atomic_int bad_order;
	atomic_int bad_worker; /* 1 + a member that ran off its worker */
	atomic_int finished;
};
struct ring_member {
	struct ring *r;
	int me;
	int worker; /* bound to, -1: any */
};

static void ring_check_worker(struct ring *r, struct ring_member *m)
{
	if (m->worker >= 0 && weft_worker_id() != m->worker)
		atomic_store(&r->bad_worker, 1 + m->me);
}

static void *ring_run(void *arg)
{
	struct ring_member *m = arg;
	struct ring *r = m->r;
	int next = (m->me + 1) % RING;
	while (!atomic_load(&r->go))
		weft_yield();
	for (long lap = 0; lap < r->laps; lap++) {
		while (atomic_load_explicit(&r->baton, memory_order_acquire) != m->me)
			weft_park();
		ring_check_worker(r, m);
		long s = atomic_load_explicit(&r->passes, memory_order_relaxed);
		if (s != lap * RING + m->me)
			atomic_store(&r->bad_order, 1);
		atomic_store_explicit(&r->passes, s + 1, memory_order_relaxed);
		atomic_store_explicit(&r->baton, next, memory_order_release);
		bool last = lap == r->laps - 1 && m->me == RING - 1;
		int rc = last ? weft_unpark(r->id[next]) : weft_park_handoff(r->id[next]);
		if (rc && !(last && rc == ESRCH))
			atomic_store(&r->bad_rc, rc);
		ring_check_worker(r, m);
	}
	atomic_fetch_add(&r->finished, 1);
	return NULL;
}

static void *ring_noise(void *arg)
{
	struct ring *r = arg;
	uint64_t x = 88172645463325252ull;
	while (!atomic_load(&r->stop_noise)) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		int rc = weft_unpark(r->id[x % RING]);
		if (rc && rc != ESRCH)
			atomic_store(&r->bad_rc, 100 + rc);
		if ((x & 63) == 0)
			sched_yield();
	}
	return NULL;
}

static void ring_test(int workers, bool bound, bool noise, long laps)
{
	wt_init(workers);
	int nw = weft_num_workers();
	struct ring r = {.laps = laps};
	struct ring_member m[RING];
	for (int i = 0; i < RING; i++) {
		m[i] = (struct ring_member){&r, i, bound ? i % nw : -1};
		r.id[i] = wt_spawn_on(m[i].worker, ring_run, &m[i]);
	}
	struct wt_pthread p;
	if (noise)
		wt_pthread_start(&p, ring_noise, &r);
	atomic_store(&r.go, 1);
	/* The last pass is a plain unpark (to member 0), but the others'
	 * last hand-offs are answered by nobody: once every pass is done,
	 * unpark the members until all have finished. Stuck means no pass
	 * for 20 s, however long the whole ring takes (a sanitizer's run is
	 * slow). */
	uint64_t seen_at = wt_now_ns();
	long seen = -1, done;
	while ((done = atomic_load(&r.passes)) < laps * RING) {
		if (done != seen) {
			seen = done;
			seen_at = wt_now_ns();
		} else if (wt_now_ns() - seen_at > 20000000000ull) {
			fail_msg("ring stuck after %ld of %ld passes: none for 20 s", done,
				 laps * RING);
		}
		weft_sleep_ns(1000000);
	}
	uint64_t deadline = wt_now_ns() + 20000000000ull;
	while (atomic_load(&r.finished) < RING) {
		for (int i = 0; i < RING; i++) {
			int rc = weft_unpark(r.id[i]);
			WT_TRUE(rc == 0 || rc == ESRCH, "weft_unpark returned %s", wt_errname(rc));
		}
		if (wt_now_ns() > deadline)
			fail_msg("only %d of %d ring members finished", atomic_load(&r.finished),
				 RING);
		weft_sleep_ns(100000);
	}
	if (noise) {
		atomic_store(&r.stop_noise, 1);
		wt_pthread_join(&p);
	}
	for (int i = 0; i < RING; i++)
		wt_join(r.id[i]);
	WT_ERR(atomic_load(&r.bad_rc), 0);
	WT_ERR(atomic_load(&r.bad_order), 0);
	int bad = atomic_load(&r.bad_worker);
	if (bad)
		fail_msg("ring member %d ran off its worker %d", bad - 1, m[bad - 1].worker);
	long passes = atomic_load(&r.passes);
	WT_EQ(passes, laps * RING);
	WT_OK(weft_shutdown());
}

/* ThreadSanitizer slows every atomic and switch: two copies of the ring
 * with spurious unparks at once (make test's TSan stage) took 7-55 s on
 * the 2-vCPU test VM at 20,000 laps. */
#if defined(__SANITIZE_THREAD__)
#define RING_LAPS 5000
#else
#define RING_LAPS 20000
#endif

static void test_ring_handoff_one_worker(void **state)
{
	ring_test(1, false, false, RING_LAPS);
}

static void test_ring_handoff_unbound(void **state)
{
	ring_test(0, false, false, RING_LAPS);
}

static void test_ring_handoff_bound_round_robin(void **state)
{
	ring_test(0, true, false, RING_LAPS);
}

static void test_ring_handoff_with_spurious_unparks(void **state)
{
	ring_test(0, false, true, RING_LAPS);
}

static void test_ring_handoff_bound_with_spurious_unparks(void **state)
{
	ring_test(2, true, true, RING_LAPS);
}

/* ---- hand-off to self --------------------------------------------------- */

static void *handoff_self(void *arg)
{
	return (void *)(intptr_t)weft_park_handoff(weft_self());
}

static void test_handoff_to_self_returns(void **state)
{
	/* One worker: a blocking park would hang. */
	wt_init(1);
	for (int i = 0; i < 1000; i++)
		WT_OK(weft_park_handoff(weft_self()));
	/* With a token already waiting, too. */
	WT_OK(weft_unpark(weft_self()));
	WT_OK(weft_park_handoff(weft_self()));
	weft_t t = wt_spawn(NULL, handoff_self, NULL);
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

static void test_handoff_to_self_leaves_no_token(void **state)
{
	/* handoff(self) = unpark(self) + park(): the token it makes is the one
	 * its park takes. A later park blocks until someone unparks (with one
	 * worker the helper runs only once the caller really blocks; one
	 * spurious early return is tolerated, as in test_park). */
	wt_init(1);
	WT_OK(weft_park_handoff(weft_self()));
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

/* ---- targets that are not parked --------------------------------------- */

struct not_parked {
	weft_t caller;
	atomic_int started;
	atomic_int go;
	atomic_int woke; /* the target's park returned */
	atomic_int target_worker;
};

/* Bound to worker 1, spins without yielding (so it is running, never parked,
 * when the hand-off comes), then parks once: only the hand-off's token lets
 * that park return. Then it wakes the caller. */
static void *spin_then_park(void *arg)
{
	struct not_parked *s = arg;
	atomic_store(&s->target_worker, weft_worker_id());
	atomic_store(&s->started, 1);
	while (!atomic_load(&s->go))
		;
	int r = weft_park();
	atomic_store(&s->woke, 1);
	int u = weft_unpark(s->caller);
	return (void *)(intptr_t)(r ? r : u);
}

/* Bound to the caller's worker: runs only once the caller has switched away
 * (parked in its hand-off), and lets the target go on. */
static void *release_target(void *arg)
{
	struct not_parked *s = arg;
	atomic_store(&s->go, 1);
	return NULL;
}

static void test_handoff_to_running_ult_leaves_token(void **state)
{
	wt_init(2);
	for (int i = 0; i < 100; i++) {
		struct not_parked s = {.caller = weft_self()};
		weft_t t = wt_spawn_on(1, spin_then_park, &s);
		WT_WAIT(atomic_load(&s.started), 10);
		/* t holds worker 1 from now on, so we run on worker 0 - once
		 * there: preemption may give t's worker to us for a slice while
		 * t spins (seen under load: main ran on worker 1 in round 1). */
		int me;
		while ((me = weft_worker_id()) == 1)
			weft_yield();
		WT_CMP(me, !=, 1);
		weft_t h = wt_spawn_on(me, release_target, &s);
		WT_OK(weft_park_handoff(t));
		WT_TRUE(atomic_load(&s.woke),
			"the hand-off returned before the target woke us (round %d)", i);
		WT_ERR((intptr_t)wt_join(t), 0);
		wt_join(h);
		int target_worker = atomic_load(&s.target_worker);
		WT_EQ(target_worker, 1);
	}
	WT_OK(weft_shutdown());
}

static void *park_first_then_wake(void *arg)
{
	struct not_parked *s = arg;
	int r = weft_park(); /* the caller's hand-off left a token: returns at once */
	atomic_store(&s->woke, 1);
	int u = weft_unpark(s->caller);
	return (void *)(intptr_t)(r ? r : u);
}

static void test_handoff_to_ready_ult_leaves_token(void **state)
{
	/* One worker: the target is queued, not yet run, when the hand-off
	 * comes; the caller parks, the target runs and its first park returns
	 * only thanks to the token (else: a hang). */
	wt_init(1);
	for (int i = 0; i < 1000; i++) {
		struct not_parked s = {.caller = weft_self()};
		weft_t t = wt_spawn(NULL, park_first_then_wake, &s);
		WT_OK(weft_park_handoff(t));
		WT_TRUE(atomic_load(&s.woke),
			"the hand-off returned before the target woke us (round %d)", i);
		WT_ERR((intptr_t)wt_join(t), 0);
	}
	WT_OK(weft_shutdown());
}

static void *park_until_flag(void *arg)
{
	atomic_int *flag = arg;
	while (!atomic_load(flag))
		WT_OK(weft_park());
	return NULL;
}

static void test_handoff_with_token_waiting_returns_at_once(void **state)
{
	/* A token already waiting for the caller: the target is unparked (made
	 * ready) and the caller's park takes the token and returns - on one
	 * worker, if the caller blocked, nobody would wake it. */
	wt_init(1);
	for (int i = 0; i < 100; i++) {
		atomic_int flag = 0;
		weft_t t = wt_spawn(NULL, park_until_flag, &flag);
		for (int k = 0; k < 10; k++)
			weft_yield(); /* let t run and park */
		atomic_store(&flag, 1);
		WT_OK(weft_unpark(weft_self()));
		WT_OK(weft_park_handoff(t));
		wt_join(t); /* t was woken (else a hang) */
	}
	WT_OK(weft_shutdown());
}

struct sleeper {
	weft_t caller;
	uint64_t ns;
	atomic_ullong slept;
};

static void *sleep_then_wake(void *arg)
{
	struct sleeper *s = arg;
	uint64_t t0 = wt_now_ns();
	int r = weft_sleep_ns(s->ns);
	atomic_store(&s->slept, wt_now_ns() - t0);
	int u = weft_unpark(s->caller);
	return (void *)(intptr_t)(r ? r : u);
}

static void test_handoff_to_sleeping_ult_does_not_cut_its_sleep(void **state)
{
	/* A ULT blocked in a sleep waits on another parker than its own: the
	 * hand-off leaves it a token and the caller parks until the sleeper,
	 * done sleeping, unparks it. */
	wt_init(2);
	struct sleeper s = {.caller = weft_self(), .ns = 20000000};
	weft_t t = wt_spawn(NULL, sleep_then_wake, &s);
	weft_sleep_ns(2000000); /* let it start sleeping */
	WT_OK(weft_park_handoff(t));
	while (!atomic_load(&s.slept))
		WT_OK(weft_park()); /* only a spurious return gets here */
	uint64_t slept = atomic_load(&s.slept);
	WT_CMPU(slept, >=, s.ns);
	WT_ERR((intptr_t)wt_join(t), 0);
	WT_OK(weft_shutdown());
}

struct rescuer {
	weft_t target;
	atomic_int stop;
};

static void *unpark_until_stopped(void *arg)
{
	struct rescuer *r = arg;
	while (!atomic_load(&r->stop)) {
		weft_unpark(r->target);
		struct timespec ts = {0, 200000};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void *set_flag(void *arg)
{
	atomic_store((atomic_int *)arg, 1);
	return NULL;
}

static void test_handoff_to_finished_unjoined_ult(void **state)
{
	/* 0 (still known until joined: a token is left and the caller parks
	 * until a foreign thread's unpark) or ESRCH; never a crash. */
	wt_init(2);
	for (int i = 0; i < 50; i++) {
		atomic_int flag = 0;
		weft_t t = wt_spawn(NULL, set_flag, &flag);
		WT_WAIT(atomic_load(&flag), 10);
		for (int k = 0; k < 100; k++)
			weft_yield();
		struct rescuer rs = {.target = weft_self()};
		struct wt_pthread p;
		wt_pthread_start(&p, unpark_until_stopped, &rs);
		int r = weft_park_handoff(t);
		WT_TRUE(r == 0 || r == ESRCH, "weft_park_handoff returned %s", wt_errname(r));
		atomic_store(&rs.stop, 1);
		wt_pthread_join(&p);
		wt_join(t);
	}
	WT_OK(weft_shutdown());
}

/* ---- fairness ----------------------------------------------------------- */

/* Two ULTs hand the one worker back and forth. Once in steady state, player
 * 0 makes a third ULT ready (`spawn`); the pair keeps going until `flag` is
 * set (by that ULT), or gives up after MAX_ROUNDS. */
enum { FAIR_WARMUP = 1000, FAIR_MAX_ROUNDS = 10000000 };
struct fair {
	atomic_int turn;
	atomic_int stop;
	atomic_int flag;
	atomic_long rounds;
	long spawned_at;
	long flag_seen_at;
	int stopped_by_flag; /* the pair saw the flag (not just the round limit) */
	weft_t id[2];
	weft_t third;
	void *(*third_fn)(void *);
	void *third_arg;
	int third_worker;
	atomic_int bad_rc;
};
struct fair_player {
	struct fair *f;
	int me;
};

static void *fair_play(void *arg)
{
	struct fair_player *pl = arg;
	struct fair *f = pl->f;
	int me = pl->me, other = 1 - me;
	for (;;) {
		while (atomic_load_explicit(&f->turn, memory_order_acquire) != me &&
		       !atomic_load(&f->stop))
			weft_park();
		if (atomic_load(&f->stop))
			break;
		long n = atomic_fetch_add(&f->rounds, 1) + 1;
		if (me == 0 && n >= FAIR_WARMUP && f->third == WEFT_NULL) {
			f->spawned_at = n;
			f->third = wt_spawn_on(f->third_worker, f->third_fn, f->third_arg);
		}
		int flag = atomic_load(&f->flag);
		if (flag || n >= FAIR_MAX_ROUNDS) {
			f->flag_seen_at = n;
			f->stopped_by_flag = flag;
			atomic_store(&f->stop, 1);
			int r = weft_unpark(f->id[other]);
			if (r)
				atomic_store(&f->bad_rc, r);
			break;
		}
		atomic_store_explicit(&f->turn, other, memory_order_release);
		int r = weft_park_handoff(f->id[other]);
		if (r)
			atomic_store(&f->bad_rc, r);
	}
	return NULL;
}

static void fair_run(struct fair *f, int pair_worker)
{
	struct fair_player a = {f, 0}, b = {f, 1};
	f->id[0] = wt_spawn_on(pair_worker, fair_play, &a);
	f->id[1] = wt_spawn_on(pair_worker, fair_play, &b);
	wt_join(f->id[0]);
	wt_join(f->id[1]);
	WT_ERR(atomic_load(&f->bad_rc), 0);
	WT_TRUE(f->third != WEFT_NULL, "the pair never got to %d rounds", FAIR_WARMUP);
	wt_join(f->third);
	/* (Once the pair has stopped, the third runs anyway: what counts is
	 * whether the pair saw its flag while still handing off.) */
	WT_TRUE(f->stopped_by_flag,
		"the third ULT did not run while the pair handed off %ld times after it became "
		"ready",
		f->flag_seen_at - f->spawned_at);
	printf("the third ULT ran within %ld rounds of becoming ready\n",
	       f->flag_seen_at - f->spawned_at);
}

static void fairness_test(int pair_worker, int third_worker)
{
	wt_init(1);
	struct fair f = {.third_fn = set_flag, .third_worker = third_worker};
	f.third_arg = &f.flag;
	fair_run(&f, pair_worker);
	WT_OK(weft_shutdown());
}

static void test_fairness_third_ult_runs(void **state)
{
	fairness_test(-1, -1);
}

static void test_fairness_third_ult_runs_bound_pair(void **state)
{
	fairness_test(0, -1);
}

static void test_fairness_third_ult_runs_all_bound(void **state)
{
	fairness_test(0, 0);
}

struct timed {
	atomic_int *flag;
	uint64_t ns;
	atomic_ullong slept;
	atomic_int rc;
};

static void *sleep_then_flag(void *arg)
{
	struct timed *t = arg;
	uint64_t t0 = wt_now_ns();
	atomic_store(&t->rc, weft_sleep_ns(t->ns));
	atomic_store(&t->slept, wt_now_ns() - t0);
	atomic_store(t->flag, 1);
	return NULL;
}

static void timer_test(int pair_worker)
{
	wt_init(1);
	struct fair f = {.third_fn = sleep_then_flag, .third_worker = -1};
	struct timed t = {.flag = &f.flag, .ns = 1000000};
	f.third_arg = &t;
	uint64_t t0 = wt_now_ns();
	fair_run(&f, pair_worker);
	WT_ERR(atomic_load(&t.rc), 0);
	uint64_t slept = atomic_load(&t.slept);
	WT_CMPU(slept, >=, t.ns);
	printf("slept %.3f ms (1 ms asked) while the pair handed off %ld times; %.3f ms in all\n",
	       (double)atomic_load(&t.slept) / 1e6, atomic_load(&f.rounds),
	       (double)(wt_now_ns() - t0) / 1e6);
	WT_OK(weft_shutdown());
}

static void test_timer_fires_during_handoff_chain(void **state)
{
	timer_test(-1);
}

static void test_timer_fires_during_handoff_chain_bound(void **state)
{
	timer_test(0);
}

/* ---- hand-off to a ULT bound to another worker ------------------------- */

struct cross {
	atomic_int turn; /* 0: the caller's, 1: the target's */
	weft_t caller;
	weft_t target;
	int rounds;
	atomic_int bad_worker;
	atomic_int bad_rc;
	atomic_int target_rounds;
};

static void *bound_target(void *arg)
{
	struct cross *c = arg;
	for (int i = 0; i < c->rounds; i++) {
		while (atomic_load_explicit(&c->turn, memory_order_acquire) != 1)
			weft_park();
		if (weft_worker_id() != 1)
			atomic_store(&c->bad_worker, weft_worker_id() + 100);
		atomic_fetch_add(&c->target_rounds, 1);
		atomic_store_explicit(&c->turn, 0, memory_order_release);
		int r = i == c->rounds - 1 ? weft_unpark(c->caller) : weft_park_handoff(c->caller);
		if (r)
			atomic_store(&c->bad_rc, r);
		if (weft_worker_id() != 1)
			atomic_store(&c->bad_worker, weft_worker_id() + 100);
	}
	return NULL;
}

/* worker: where the caller must run (-1: anywhere). */
static void cross_caller(struct cross *c, int worker)
{
	for (int i = 0; i < c->rounds; i++) {
		atomic_store_explicit(&c->turn, 1, memory_order_release);
		WT_OK(weft_park_handoff(c->target));
		while (atomic_load_explicit(&c->turn, memory_order_acquire) != 0)
			WT_OK(weft_park());
		int target_rounds = atomic_load(&c->target_rounds);
		WT_EQ(target_rounds, i + 1);
		if (worker >= 0)
			WT_EQ(weft_worker_id(), worker);
	}
}

static void *cross_caller_ult(void *arg)
{
	struct cross *c = arg;
	c->caller = weft_self();
	c->target = wt_spawn_on(1, bound_target, c);
	cross_caller(c, 0);
	wt_join(c->target);
	return NULL;
}

static void test_handoff_to_ult_bound_elsewhere_runs_there(void **state)
{
	/* From the root ULT (unbound or on worker 0, as the configuration says)
	 * and from a ULT bound to worker 0. */
	wt_init(2);
	struct cross c = {.caller = weft_self(), .rounds = 10000};
	c.target = wt_spawn_on(1, bound_target, &c);
	cross_caller(&c, -1);
	wt_join(c.target);
	WT_ERR(atomic_load(&c.bad_rc), 0);
	int bad_worker = atomic_load(&c.bad_worker);
	WT_TRUE(bad_worker == 0, "the target ran on worker %d (bound to 1)", bad_worker - 100);

	struct cross d = {.rounds = 10000};
	weft_t t = wt_spawn_on(0, cross_caller_ult, &d);
	wt_join(t);
	WT_ERR(atomic_load(&d.bad_rc), 0);
	bad_worker = atomic_load(&d.bad_worker);
	WT_TRUE(bad_worker == 0, "the target ran on worker %d (bound to 1)", bad_worker - 100);
	WT_OK(weft_shutdown());
}

static void *report_worker_and_wake(void *arg)
{
	struct not_parked *s = arg;
	atomic_store(&s->started, 1);
	while (!atomic_load(&s->go))
		weft_park();
	atomic_store(&s->target_worker, weft_worker_id());
	atomic_store(&s->woke, 1);
	return (void *)(intptr_t)weft_unpark(s->caller);
}

static void test_handoff_to_parked_ult_bound_elsewhere(void **state)
{
	/* The target is surely parked (it has had time to park) when the
	 * caller, on worker 0, hands off to it: it must still run on worker 1. */
	wt_init(2);
	for (int i = 0; i < 20; i++) {
		struct not_parked s = {.caller = weft_self()};
		weft_t t = wt_spawn_on(1, report_worker_and_wake, &s);
		WT_WAIT(atomic_load(&s.started), 10);
		weft_sleep_ns(1000000);
		atomic_store(&s.go, 1);
		WT_OK(weft_park_handoff(t));
		while (!atomic_load(&s.woke))
			WT_OK(weft_park());
		WT_ERR((intptr_t)wt_join(t), 0);
		int target_worker = atomic_load(&s.target_worker);
		WT_EQ(target_worker, 1);
	}
	WT_OK(weft_shutdown());
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handoff_from_foreign_thread_eperm),
		cmocka_unit_test(test_handoff_without_runtime_eperm),
		cmocka_unit_test(test_handoff_unknown_esrch_does_not_park),
		cmocka_unit_test(test_handoff_esrch_keeps_callers_token),
		cmocka_unit_test(test_ping_pong_handoff_on_one_worker),
		cmocka_unit_test(test_ping_pong_handoff_on_the_only_worker),
		cmocka_unit_test(test_ping_pong_handoff_across_two_workers),
		cmocka_unit_test(test_ping_pong_handoff_unbound),
		cmocka_unit_test(test_ping_pong_handoff_unbound_one_worker),
		cmocka_unit_test(test_ping_pong_handoff_bound_and_unbound),
		cmocka_unit_test(test_ring_handoff_one_worker),
		cmocka_unit_test(test_ring_handoff_unbound),
		cmocka_unit_test(test_ring_handoff_bound_round_robin),
		cmocka_unit_test(test_ring_handoff_with_spurious_unparks),
		cmocka_unit_test(test_ring_handoff_bound_with_spurious_unparks),
		cmocka_unit_test(test_handoff_to_self_returns),
		cmocka_unit_test(test_handoff_to_self_leaves_no_token),
		cmocka_unit_test(test_handoff_to_running_ult_leaves_token),
		cmocka_unit_test(test_handoff_to_ready_ult_leaves_token),
		cmocka_unit_test(test_handoff_with_token_waiting_returns_at_once),
		cmocka_unit_test(test_handoff_to_sleeping_ult_does_not_cut_its_sleep),
		cmocka_unit_test(test_handoff_to_finished_unjoined_ult),
		cmocka_unit_test(test_fairness_third_ult_runs),
		cmocka_unit_test(test_fairness_third_ult_runs_bound_pair),
		cmocka_unit_test(test_fairness_third_ult_runs_all_bound),
		cmocka_unit_test(test_timer_fires_during_handoff_chain),
		cmocka_unit_test(test_timer_fires_during_handoff_chain_bound),
		cmocka_unit_test(test_handoff_to_ult_bound_elsewhere_runs_there),
		cmocka_unit_test(test_handoff_to_parked_ult_bound_elsewhere),
	};
	return WT_RUN(argc, argv, tests);
}
