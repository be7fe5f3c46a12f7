/* weft-bench micro, the synchronization rows: the costs of <weft/sync.h>
 * next to glibc pthreads, run by wb_micro_main after its own rows.
 *
 *   mutex_uncontended          lock+unlock by one thread
 *   condvar_pingpong_1worker   mutex + condvar turn-taking, one worker / CPU
 *   condvar_pingpong_2workers  the same across two workers / CPUs
 *   sem_pingpong               two semaphores, one worker / CPU
 *   mutex_hammer_64            64 threads on one mutex, tiny critical section,
 *                              each bound to a worker (pinned to a CPU)
 *   mutex_hammer_64_unbound    the same, placed by the scheduler (the kernel)
 *   spin_hammer_64_unbound     the same on a spinlock (weft_spinlock_t,
 *                              pthread_spinlock_t)
 *   yield_64_unbound           64 threads only yielding, placed by the
 *                              scheduler
 *   sleep_10k                  10,000 threads sleeping 100 ms at once
 *   sem_1m                     1,000,000 ULTs blocked on one semaphore, each
 *                              trial in a fresh process (hidden "_semwait"
 *                              subcommand) for its peak RSS, as chain does
 *   adaptive_tsp               branch-and-bound TSP with a hot queue lock and
 *                              a rarely contended bound lock, once per lock
 *                              policy (seed 004, sections 4.2 and 6)
 *
 * Each weft body runs inside a weft session (wb_weft_session: init, body,
 * shutdown), as the rows of micro.c do; the pthread twins of the bodies are
 * in peers_pthread_sync.c, except the TSP's, which shares its solver with
 * the weft run and so lives here. A body checks every return value of the
 * calls it measures and the result it computed (counter, optimal tour): a
 * wrong answer is the row's error, never a number.
 */
#include "subcommands.h"
#include "peers.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <weft.h>

#define ERR(s, ...) snprintf((s)->error, sizeof(s)->error, __VA_ARGS__)
#define NCASES(a)   ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- creating and joining ULTs ----------------------------------------- */

/* Create k ULTs running fn(arg + i * stride), ULT i bound to worker w[i]
 * (w NULL: any worker). *made is how many were created, also on failure,
 * when s->error says why; the caller must still join those. */
static int spawn(weft_t *t, long k, void *(*fn)(void *), void *arg, size_t stride, const int *w,
		 long *made, wb_sample_t *s)
{
	weft_attr_t a;
	int rc = 0;

	*made = 0;
	weft_attr_init(&a);
	for (long i = 0; i < k; i++) {
		if (w)
			weft_attr_setworker(&a, w[i]);
		rc = weft_create(&t[i], w ? &a : NULL, fn, (char *)arg + (size_t)i * stride);
		if (rc) {
			ERR(s, "weft_create: %s (after %ld ULTs)", strerror(rc), i);
			break;
		}
		*made = i + 1;
	}
	weft_attr_destroy(&a);
	return rc;
}

/* Join t[0..made); keeps the first error (rc, else a join's). */
static int join_all(const weft_t *t, long made, int rc, wb_sample_t *s)
{
	for (long i = 0; i < made; i++) {
		int jrc = weft_join(t[i], NULL);
		if (jrc && !rc) {
			ERR(s, "weft_join: %s", strerror(jrc));
			rc = jrc;
		}
	}
	return rc;
}

static int need_workers(int need, wb_sample_t *s)
{
	if (weft_num_workers() >= need)
		return 0;
	ERR(s, "skipped: needs %d workers, weft has %d", need, weft_num_workers());
	return EINVAL;
}

/* A peer's result: the value is elapsed / ops. */
static int done(wb_sample_t *s, int rc, int64_t el, double ops, const char *what)
{
	if (rc) {
		ERR(s, "%s: %s", what, strerror(rc));
		return rc;
	}
	s->elapsed_ns = (double)el;
	s->value = (double)el / ops;
	return 0;
}

/* ---- mutex_uncontended ------------------------------------------------- */

static int weft_mutex_uncontended(const wb_case_t *c, long n, wb_sample_t *s)
{
	weft_mutex_t m;
	int rc = weft_mutex_init(&m, NULL);

	if (rc) {
		ERR(s, "weft_mutex_init: %s", strerror(rc));
		return rc;
	}
	int64_t t0 = wb_now_ns();
	for (long i = 0; i < n; i++) {
		if ((rc = weft_mutex_lock(&m)) != 0 || (rc = weft_mutex_unlock(&m)) != 0) {
			ERR(s, "weft_mutex_lock/unlock: %s (iteration %ld)", strerror(rc), i);
			return rc;
		}
	}
	s->elapsed_ns = (double)(wb_now_ns() - t0);
	s->value = s->elapsed_ns / (double)n;
	if ((rc = weft_mutex_destroy(&m)) != 0) {
		ERR(s, "weft_mutex_destroy of an unlocked mutex: %s", strerror(rc));
		return rc;
	}
	return 0;
}

static int pt_mutex_uncontended(const wb_case_t *c, long n, wb_sample_t *s)
{
	int64_t el = 0;
	int rc = wb_pthread_mutex_uncontended(n, &el);
	return done(s, rc, el, (double)n, "pthread_mutex");
}

/* ---- condvar ping-pong ------------------------------------------------- */

/* Two players hand a turn back and forth; `turn` is guarded by m and each
 * player waits for its turn on its own condition variable (the pthread twin
 * is in peers_pthread_sync.c). A player that gets an error sets quit, so
 * the other does not wait for a turn that never comes. */
struct cond_pp {
	weft_mutex_t m;
	weft_cond_t c[2];
	int turn, quit; /* guarded by m */
	long n;
	atomic_int err;
};

struct cond_player {
	struct cond_pp *pp;
	int me;
};

static void *cond_player(void *p)
{
	struct cond_player *pl = p;
	struct cond_pp *pp = pl->pp;
	int me = pl->me, rc;

	if ((rc = weft_mutex_lock(&pp->m)) != 0) {
		atomic_store(&pp->err, rc);
		return NULL;
	}
	for (long i = 0; i < pp->n && !pp->quit; i++) {
		while (pp->turn != me && !pp->quit) {
			if ((rc = weft_cond_wait(&pp->c[me], &pp->m)) != 0)
				break;
		}
		if (!rc && !pp->quit) {
			pp->turn = 1 - me;
			rc = weft_cond_signal(&pp->c[1 - me]);
		}
		if (rc) {
			atomic_store(&pp->err, rc);
			pp->quit = 1;
			weft_cond_signal(&pp->c[1 - me]);
		}
	}
	if ((rc = weft_mutex_unlock(&pp->m)) != 0)
		atomic_store(&pp->err, rc);
	return NULL;
}

/* iarg[0], iarg[1]: the workers the two ULTs are bound to (-1: none). */
static int weft_cond_pingpong(const wb_case_t *c, long n, wb_sample_t *s)
{
	struct cond_pp pp = {.n = n};
	struct cond_player pl[2] = {{&pp, 0}, {&pp, 1}};
	int w[2] = {(int)c->iarg[0], (int)c->iarg[1]};
	weft_t t[2];
	long made;
	int rc;

	if ((rc = need_workers((w[0] > w[1] ? w[0] : w[1]) + 1, s)) != 0)
		return rc;
	atomic_init(&pp.err, 0);
	if ((rc = weft_mutex_init(&pp.m, NULL)) != 0 ||
	    (rc = weft_cond_init(&pp.c[0], NULL)) != 0 ||
	    (rc = weft_cond_init(&pp.c[1], NULL)) != 0) {
		ERR(s, "weft_mutex_init/weft_cond_init: %s", strerror(rc));
		return rc;
	}
	int64_t t0 = wb_now_ns();
	rc = spawn(t, 2, cond_player, pl, sizeof pl[0], w, &made, s);
	if (rc && made == 1) {
		weft_mutex_lock(&pp.m);
		pp.quit = 1;
		weft_cond_signal(&pp.c[0]);
		weft_mutex_unlock(&pp.m);
	}
	rc = join_all(t, made, rc, s);
	s->elapsed_ns = (double)(wb_now_ns() - t0);
	if (!rc && (rc = atomic_load(&pp.err)) != 0)
		ERR(s, "weft_mutex/weft_cond: %s", strerror(rc));
	if (rc)
		return rc;
	if ((rc = weft_cond_destroy(&pp.c[0])) != 0 || (rc = weft_cond_destroy(&pp.c[1])) != 0 ||
	    (rc = weft_mutex_destroy(&pp.m)) != 0) {
		ERR(s, "destroy after the run: %s", strerror(rc));
		return rc;
	}
	s->value = s->elapsed_ns / (double)n;
	return 0;
}

/* iarg[0], iarg[1]: indexes (into the allowed CPUs) of the two threads' CPUs */
static int pt_cond_pingpong(const wb_case_t *c, long n, wb_sample_t *s)
{
	int a = wb_cpu((int)c->iarg[0]), b = wb_cpu((int)c->iarg[1]);
	int64_t el = 0;

	if (a < 0 || b < 0) {
		ERR(s, "skipped: needs %ld allowed CPUs", c->iarg[1] + 1);
		return EINVAL;
	}
	int rc = wb_pthread_cond_pingpong(n, a, b, &el);
	return done(s, rc, el, (double)n, "pthread_create");
}

#if WB_HAVE_ST
static int st_cond_pingpong(const wb_case_t *c, long n, wb_sample_t *s)
{
	(void)c;
	int64_t el = 0;
	int rc = wb_st_cond_pingpong(n, &el);
	return done(s, rc, el, (double)n, "st_thread_create");
}
#endif

/* ---- sem_pingpong ------------------------------------------------------ */

/* Player 0 posts s[1] and waits on s[0]; player 1 waits on s[1] and posts
 * s[0]: one round trip per iteration. */
struct sem_pp {
	weft_sem_t s[2];
	long n;
	atomic_int err;
};

struct sem_player {
	struct sem_pp *pp;
	int me;
};

static void *sem_player(void *p)
{
	struct sem_player *pl = p;
	struct sem_pp *pp = pl->pp;
	int rc = 0;

	for (long i = 0; i < pp->n && !rc; i++) {
		if (pl->me == 0) {
			if ((rc = weft_sem_post(&pp->s[1])) == 0)
				rc = weft_sem_wait(&pp->s[0]);
		} else {
			if ((rc = weft_sem_wait(&pp->s[1])) == 0)
				rc = weft_sem_post(&pp->s[0]);
		}
	}
	if (rc) {
		/* Let the other side run to its end rather than hang. */
		atomic_store(&pp->err, rc);
		for (long i = 0; i < pp->n; i++)
			weft_sem_post(&pp->s[1 - pl->me]);
	}
	return NULL;
}

/* iarg[0], iarg[1]: the workers the two ULTs are bound to (-1: none). */
static int weft_sem_pingpong(const wb_case_t *c, long n, wb_sample_t *s)
{
	struct sem_pp pp = {.n = n};
	/* Player 1 (the waiter) first: if player 0 cannot be made, posts
	 * release it. */
	struct sem_player pl[2] = {{&pp, 1}, {&pp, 0}};
	int w[2] = {(int)c->iarg[0], (int)c->iarg[1]};
	weft_t t[2];
	long made;
	int rc;

	atomic_init(&pp.err, 0);
	if ((rc = weft_sem_init(&pp.s[0], 0, 0)) != 0 ||
	    (rc = weft_sem_init(&pp.s[1], 0, 0)) != 0) {
		ERR(s, "weft_sem_init: %s", strerror(rc));
		return rc;
	}
	int64_t t0 = wb_now_ns();
	rc = spawn(t, 2, sem_player, pl, sizeof pl[0], w, &made, s);
	if (rc && made == 1)
		for (long i = 0; i < n; i++)
			weft_sem_post(&pp.s[1]);
	rc = join_all(t, made, rc, s);
	s->elapsed_ns = (double)(wb_now_ns() - t0);
	if (!rc && (rc = atomic_load(&pp.err)) != 0)
		ERR(s, "weft_sem_wait/post: %s", strerror(rc));
	if (rc)
		return rc;
	int v0 = -1, v1 = -1;
	weft_sem_getvalue(&pp.s[0], &v0);
	weft_sem_getvalue(&pp.s[1], &v1);
	if (v0 != 0 || v1 != 0) {
		ERR(s, "semaphore values after the run: %d and %d, expected 0 and 0", v0, v1);
		return EIO;
	}
	if ((rc = weft_sem_destroy(&pp.s[0])) != 0 || (rc = weft_sem_destroy(&pp.s[1])) != 0) {
		ERR(s, "weft_sem_destroy after the run: %s", strerror(rc));
		return rc;
	}
	s->value = s->elapsed_ns / (double)n;
	return 0;
}

static int pt_sem_pingpong(const wb_case_t *c, long n, wb_sample_t *s)
{
	int64_t el = 0;
	int rc = wb_pthread_sem_pingpong(n, wb_cpu(0), wb_cpu(0), &el);
	return done(s, rc, el, (double)n, "pthread_create");
}

/* ---- mutex_hammer_64 --------------------------------------------------- */

#define HAMMER_THREADS 64

/* The threads wait at a gate until all exist, then each locks, increments
 * the shared counter and mixes it into a hash (a few ns of work), unlocks,
 * per_thread times. The pthread twin is in peers_pthread_sync.c.
 *
 * Thread i is bound to worker (pthreads: CPU) i mod the count, so that
 * every worker takes part in every run. Left to the scheduler, the 64 ULTs
 * (all made on worker 0) were sometimes all run by worker 0: a lock nobody
 * else wants is never contended, and such a run measured 17 ns/acq against
 * 150-250 ns when both workers ran them. */
struct hammer {
	weft_mutex_t m;
	weft_spinlock_t sl; /* instead of m: WB_HAMMER_SPIN */
	int kind;           /* WB_HAMMER_* (peers.h) */
	long counter;       /* guarded by m */
	uint64_t mix;       /* guarded by m */
	long per_thread;
	atomic_int ready, go, err;
};

static void *hammer_ult(void *p)
{
	struct hammer *h = p;
	int rc;

	atomic_fetch_add(&h->ready, 1);
	while (atomic_load_explicit(&h->go, memory_order_acquire) == 0)
		weft_yield();
	if (atomic_load(&h->go) < 0)
		return NULL;
	int spin = h->kind == WB_HAMMER_SPIN;
	if (h->kind == WB_HAMMER_YIELD) {
		for (long i = 0; i < h->per_thread; i++)
			if ((rc = weft_yield()) != 0) {
				atomic_store(&h->err, rc);
				return NULL;
			}
		__atomic_fetch_add(&h->counter, h->per_thread, __ATOMIC_RELAXED);
		return NULL;
	}
	for (long i = 0; i < h->per_thread; i++) {
		if ((rc = spin ? weft_spin_lock(&h->sl) : weft_mutex_lock(&h->m)) != 0) {
			atomic_store(&h->err, rc);
			return NULL;
		}
		h->counter++;
		h->mix = h->mix * 6364136223846793005u + (uint64_t)h->counter;
		if ((rc = spin ? weft_spin_unlock(&h->sl) : weft_mutex_unlock(&h->m)) != 0) {
			atomic_store(&h->err, rc);
			return NULL;
		}
	}
	return NULL;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

/* n: total acquisitions (a multiple of HAMMER_THREADS). c->iarg[0]: 1 for
 * the unbound row (default attributes: the scheduler places the ULTs);
 * c->iarg[1]: WB_HAMMER_MUTEX, _SPIN (a weft_spinlock_t) or _YIELD (no
 * lock: n yields in all). */
static int weft_mutex_hammer(const wb_case_t *c, long n, wb_sample_t *s)
{
	int unbound = c->iarg[0] == 1;
	static struct hammer h;
	weft_t t[HAMMER_THREADS];
	int w[HAMMER_THREADS];
	long made, per = n / HAMMER_THREADS;
	weft_mutex_stats_t st;
	int rc;

	for (int i = 0; i < HAMMER_THREADS; i++)
		w[i] = i % weft_num_workers();
	memset(&h, 0, sizeof h);
	h.kind = (int)c->iarg[1];
	h.per_thread = per > 0 ? per : 1;
	atomic_init(&h.ready, 0);
	atomic_init(&h.go, 0);
	atomic_init(&h.err, 0);
	if ((rc = weft_mutex_init(&h.m, NULL)) != 0 || (rc = weft_spin_init(&h.sl, 0)) != 0) {
		ERR(s, "weft_mutex_init/weft_spin_init: %s", strerror(rc));
		return rc;
	}
	rc = spawn(t, HAMMER_THREADS, hammer_ult, &h, 0, unbound ? NULL : w, &made, s);
	while (atomic_load(&h.ready) < made)
		weft_yield();
	int64_t t0 = wb_now_ns();
	atomic_store_explicit(&h.go, rc ? -1 : 1, memory_order_release);
	rc = join_all(t, made, rc, s);
	s->elapsed_ns = (double)(wb_now_ns() - t0);
	if (!rc && (rc = atomic_load(&h.err)) != 0)
		ERR(s, "%s: %s",
		    h.kind == WB_HAMMER_YIELD  ? "weft_yield"
		    : h.kind == WB_HAMMER_SPIN ? "weft_spin_lock/unlock"
					       : "weft_mutex_lock/unlock",
		    strerror(rc));
	if (rc)
		return rc;
	long want = h.per_thread * HAMMER_THREADS;
	if (h.counter != want) {
		ERR(s,
		    "counter %ld after %d ULTs x %ld locked increments, expected %ld: mutual "
		    "exclusion broken",
		    h.counter, HAMMER_THREADS, h.per_thread, want);
		return EIO;
	}
	weft_mutex_stats(&h.m, &st);
	if ((rc = weft_mutex_destroy(&h.m)) != 0) {
		ERR(s, "weft_mutex_destroy after the run: %s", strerror(rc));
		return rc;
	}
	s->value = s->elapsed_ns / (double)want;
	wb_sample_extra(s, "mops", (double)want / s->elapsed_ns * 1e3);
	if (h.kind == WB_HAMMER_MUTEX) {
		wb_sample_extra(s, "contended_pct", pct(st.contended, st.acquisitions));
		wb_sample_extra(s, "parks_per_kacq", 1000.0 * (double)st.parks / (double)want);
	}
	return 0;
}

/* c->iarg[0]: 1 for the unpinned row; c->iarg[1]: WB_HAMMER_*. */
static int pt_mutex_hammer(const wb_case_t *c, long n, wb_sample_t *s)
{
	int unpinned = c->iarg[0] == 1;
	long per = n / HAMMER_THREADS, counter = 0;
	int cpus[HAMMER_THREADS], ncpu = 0;
	int64_t el = 0;

	while (ncpu < HAMMER_THREADS && wb_cpu(ncpu) >= 0)
		ncpu++;
	for (int i = 0; i < HAMMER_THREADS; i++)
		cpus[i] = ncpu ? wb_cpu(i % ncpu) : -1;
	if (per < 1)
		per = 1;
	int rc = wb_pthread_mutex_hammer(HAMMER_THREADS, per, unpinned ? NULL : cpus,
					 (int)c->iarg[1], &counter, &el);
	if (rc) {
		ERR(s, "pthread_create: %s", strerror(rc));
		return rc;
	}
	if (counter != per * HAMMER_THREADS) {
		ERR(s, "counter %ld, expected %ld", counter, per * HAMMER_THREADS);
		return EIO;
	}
	s->elapsed_ns = (double)el;
	s->value = (double)el / (double)(per * HAMMER_THREADS);
	wb_sample_extra(s, "mops", (double)(per * HAMMER_THREADS) / (double)el * 1e3);
	return 0;
}

/* ---- sleep_10k --------------------------------------------------------- */

#define SLEEP_NS 100000000L /* each thread sleeps 100 ms */

static void *sleeper(void *p)
{
	atomic_int *err = p;
	int rc = weft_sleep_ns(SLEEP_NS);
	if (rc)
		atomic_store(err, rc);
	return NULL;
}

/* n sleepers at once; the value is the wall time, first create to last
 * join, in ms. */
static int weft_sleep_many(const wb_case_t *c, long n, wb_sample_t *s)
{
	weft_t *t = calloc((size_t)n, sizeof *t);
	atomic_int err;
	long made;
	int rc;

	if (!t) {
		ERR(s, "out of memory for %ld handles", n);
		return ENOMEM;
	}
	atomic_init(&err, 0);
	int64_t t0 = wb_now_ns();
	rc = spawn(t, n, sleeper, &err, 0, NULL, &made, s);
	rc = join_all(t, made, rc, s);
	s->elapsed_ns = (double)(wb_now_ns() - t0);
	free(t);
	if (!rc && (rc = atomic_load(&err)) != 0)
		ERR(s, "weft_sleep_ns: %s", strerror(rc));
	if (rc)
		return rc;
	if (s->elapsed_ns < SLEEP_NS) {
		ERR(s,
		    "all %ld sleepers joined after %.1f ms: weft_sleep_ns(%ld ms) returned early",
		    n, s->elapsed_ns / 1e6, SLEEP_NS / 1000000);
		return EIO;
	}
	s->value = s->elapsed_ns / 1e6;
	wb_sample_extra(s, "over_ms", (s->elapsed_ns - SLEEP_NS) / 1e6);
	return 0;
}

static int pt_sleep_many(const wb_case_t *c, long n, wb_sample_t *s)
{
	long created = 0;
	int64_t el = 0;
	int rc = wb_pthread_sleep_many(n, SLEEP_NS, &created, &el);

	if (rc) {
		ERR(s, "pthread_create: %s after %ld of %ld threads", strerror(rc), created, n);
		return rc;
	}
	s->elapsed_ns = (double)el;
	s->value = (double)el / 1e6;
	wb_sample_extra(s, "over_ms", ((double)el - SLEEP_NS) / 1e6);
	return 0;
}

/* ---- sem_1m: each run in a fresh process -------------------------------- */

/* A system's sem_1m runs stop after this much wall time, as chain's do. */
#define SEMWAIT_BUDGET_S 20.0

struct sem_many {
	weft_sem_t s;
	atomic_long started;
	atomic_int err;
};

static void *sem_waiter(void *p)
{
	struct sem_many *sm = p;

	atomic_fetch_add(&sm->started, 1);
	int rc = weft_sem_wait(&sm->s);
	if (rc)
		atomic_store(&sm->err, rc);
	return NULL;
}

/* n ULTs wait on one semaphore; once all have started, n posts release them
 * and all are joined. extras: pre_rss_kb, block_ns (first create until all
 * started). */
static int weft_sem_many(const wb_case_t *c, long n, wb_sample_t *s)
{
	static struct sem_many sm;
	weft_t *t = calloc((size_t)n, sizeof *t);
	long made;
	int rc;

	if (!t) {
		ERR(s, "out of memory for %ld handles", n);
		return ENOMEM;
	}
	atomic_init(&sm.started, 0);
	atomic_init(&sm.err, 0);
	if ((rc = weft_sem_init(&sm.s, 0, 0)) != 0) {
		ERR(s, "weft_sem_init: %s", strerror(rc));
		free(t);
		return rc;
	}
	wb_sample_extra(s, "pre_rss_kb", (double)wb_self_vmrss_kb());
	int64_t t0 = wb_now_ns();
	rc = spawn(t, n, sem_waiter, &sm, 0, NULL, &made, s);
	while (atomic_load(&sm.started) < made)
		weft_yield();
	wb_sample_extra(s, "block_ns", (double)(wb_now_ns() - t0));
	for (long i = 0; i < made; i++) {
		int prc = weft_sem_post(&sm.s);
		if (prc && !rc) {
			ERR(s, "weft_sem_post: %s (post %ld of %ld)", strerror(prc), i, made);
			rc = prc;
		}
	}
	rc = join_all(t, made, rc, s);
	s->elapsed_ns = (double)(wb_now_ns() - t0);
	free(t);
	if (!rc && (rc = atomic_load(&sm.err)) != 0)
		ERR(s, "weft_sem_wait: %s", strerror(rc));
	if (rc)
		return rc;
	int v = -1;
	weft_sem_getvalue(&sm.s, &v);
	if (v != 0) {
		ERR(s, "semaphore value %d after %ld posts and %ld waits, expected 0", v, n, n);
		return EIO;
	}
	if ((rc = weft_sem_destroy(&sm.s)) != 0) {
		ERR(s, "weft_sem_destroy after the run: %s", strerror(rc));
		return rc;
	}
	s->value = s->elapsed_ns;
	return 0;
}

/* Run "weft-bench _semwait --system S --n N" and read its peak RSS. */
static int semwait_spawn(const wb_case_t *c, long n, wb_sample_t *s)
{
	char out[512];
	struct rusage ru;
	int rc = wb_run_self_child("_semwait", c, n, out, sizeof out, &ru, s);
	if (rc)
		return rc;
	long long el = -1, block = -1;
	long pre = -1;
	if (sscanf(out, "elapsed_ns=%lld pre_rss_kb=%ld block_ns=%lld", &el, &pre, &block) != 3) {
		ERR(s, "child's output: %.200s", out);
		return EIO;
	}
	s->elapsed_ns = (double)el;
	s->value = (double)el / 1e9;
	wb_sample_extra(s, "peak_rss_kb", (double)ru.ru_maxrss);
	wb_sample_extra(s, "ns_per_thread", (double)el / (double)n);
	wb_sample_extra(s, "rss_kb_per_thread", (double)(ru.ru_maxrss - pre) / (double)n);
	wb_sample_extra(s, "block_ms", (double)block / 1e6);
	return 0;
}

int wb_sync_semwait_child(const wb_opts_t *o)
{
	const char *sys = o->child_system ? o->child_system : "";
	long n = o->child_n;
	wb_sample_t s;
	int rc;

	memset(&s, 0, sizeof s);
	if (n < 1) {
		printf("error=bad --n\n");
		return 2;
	}
	if (strcmp(sys, "pthread") == 0) {
		int64_t el = 0, block = 0;
		long created = 0, pre = wb_self_vmrss_kb();
		rc = wb_pthread_sem_many(n, &created, &block, &el);
		if (rc) {
			printf("error=pthread_create: %s after %ld of %ld threads\n", strerror(rc),
			       created, n);
			return 1;
		}
		printf("elapsed_ns=%lld pre_rss_kb=%ld block_ns=%lld\n", (long long)el, pre,
		       (long long)block);
		return 0;
	}
	wb_case_t c = {.system = sys, .inner = weft_sem_many, .opts = o};
	if (strcmp(sys, "weft-asm") == 0)
		c.context = WEFT_CONTEXT_ASM;
	else if (strcmp(sys, "weft-ucontext") == 0)
		c.context = WEFT_CONTEXT_UCONTEXT;
	else {
		printf("error=unknown system '%s'\n", sys);
		return 2;
	}
	rc = wb_weft_session(&c, n, &s);
	if (rc) {
		printf("error=%s\n", s.error);
		return 1;
	}
	double pre = -1, block = -1;
	for (int i = 0; i < s.nextra; i++) {
		if (strcmp(s.extra[i].key, "pre_rss_kb") == 0)
			pre = s.extra[i].value;
		if (strcmp(s.extra[i].key, "block_ns") == 0)
			block = s.extra[i].value;
	}
	printf("elapsed_ns=%lld pre_rss_kb=%.0f block_ns=%.0f\n", (long long)s.value, pre, block);
	return 0;
}

/* ---- adaptive_tsp ------------------------------------------------------- */

/* The shape of seed 004's TSP (section 4.2): searcher threads share a work
 * queue of partial tours (its lock, "qlock", is taken for every pop and
 * every push: hot, tiny critical sections) and the best tour so far (its
 * lock is taken every TSP_BOUND_EVERY tasks to refresh a searcher's copy of
 * the bound, and when a better tour is found: rarely contended). A task
 * with more than TSP_LEAF cities left is expanded into the queue, one push
 * per child; a smaller one is solved by its searcher alone, depth first,
 * pruned with the bound (the real work). A searcher finding the queue
 * empty while others are busy waits on a condition variable of the queue
 * lock, signalled by pushes; all stop when the queue is empty and nobody is
 * busy. (Yielding and looking again, as the KSR searchers did, was tried:
 * with 30 idle searchers per 2 workers the polls tripled the queue lock's
 * acquisitions in some runs and not in others.)
 *
 * The instance is fixed (cities from a fixed-seed generator), the initial
 * bound is the nearest-neighbour tour, and every run must find the optimum
 * the serial solver found; how many nodes a run explores depends on when
 * it finds good tours, so the row reports it ("nodes").
 *
 * Lock calls are counted, not timed. Timing them (two clock reads each)
 * was tried, and what it measured was mostly not the lock: ULTs are not
 * preempted, so a searcher that keeps finding work keeps its worker, and a
 * waiter woken by an unlock waits in the run queue for a long time (single
 * lock() calls of 100+ ms in a 150 ms run). Each
 * lock's policy is judged instead by total time with that lock's policy
 * varied and the other lock's kept adaptive; the rows carry each lock's
 * throughput and weft_mutex_stats (contended share, parks). */

#define TSP_MAXN        32
#define TSP_SEARCHERS   32
#define TSP_LEAF        12
#define TSP_BOUND_EVERY 16
#define TSP_QCAP        (1 << 16)

struct tsp_inst {
	int n;
	int d[TSP_MAXN][TSP_MAXN];
	int minout[TSP_MAXN];              /* shortest edge leaving each city */
	uint8_t order[TSP_MAXN][TSP_MAXN]; /* the other cities, nearest first */
	int nn_cost;                       /* nearest-neighbour tour: the first bound */
};

struct tsp_node {
	uint8_t path[TSP_MAXN]; /* path[0] = city 0 */
	uint32_t visited;       /* bit c: city c is on the path */
	int depth;              /* cities on the path */
	int cost;               /* length of the path */
	int lbrest;             /* sum of minout over the cities not on it */
};

static void tsp_make(struct tsp_inst *in, int n)
{
	double x[TSP_MAXN], y[TSP_MAXN];
	uint64_t r = 0x5eed0004u;

	memset(in, 0, sizeof *in);
	in->n = n;
	for (int i = 0; i < n; i++) {
		r = r * 6364136223846793005u + 1442695040888963407u;
		x[i] = (double)(r >> 33) / (double)(1u << 31) * 1000;
		r = r * 6364136223846793005u + 1442695040888963407u;
		y[i] = (double)(r >> 33) / (double)(1u << 31) * 1000;
	}
	for (int i = 0; i < n; i++) {
		in->minout[i] = INT_MAX;
		for (int j = 0; j < n; j++) {
			in->d[i][j] = (int)(hypot(x[i] - x[j], y[i] - y[j]) + 0.5);
			if (j != i && in->d[i][j] < in->minout[i])
				in->minout[i] = in->d[i][j];
		}
		/* the other cities by distance (insertion sort) */
		int k = 0;
		for (int j = 0; j < n; j++) {
			if (j == i)
				continue;
			int p = k++;
			while (p > 0 && in->d[i][in->order[i][p - 1]] > in->d[i][j]) {
				in->order[i][p] = in->order[i][p - 1];
				p--;
			}
			in->order[i][p] = (uint8_t)j;
		}
	}
	uint32_t seen = 1;
	int at = 0, cost = 0;
	for (int step = 1; step < n; step++) {
		for (int k = 0; k < n - 1; k++) {
			int c = in->order[at][k];
			if (!(seen & (1u << c))) {
				cost += in->d[at][c];
				seen |= 1u << c;
				at = c;
				break;
			}
		}
	}
	in->nn_cost = cost + in->d[at][0];
}

static void tsp_root(const struct tsp_inst *in, struct tsp_node *nd)
{
	memset(nd, 0, sizeof *nd);
	nd->depth = 1;
	nd->visited = 1;
	for (int c = 1; c < in->n; c++)
		nd->lbrest += in->minout[c];
}

/* A depth-first search of one subtree, by one thread. improve() is called
 * for a tour shorter than x->bound and sets x->bound. */
struct tsp_dfs {
	const struct tsp_inst *in;
	int bound;
	long nodes;
	void (*improve)(struct tsp_dfs *x, const struct tsp_node *nd, int cost);
	void *owner;
};

static void tsp_dfs(struct tsp_dfs *x, struct tsp_node *nd)
{
	const struct tsp_inst *in = x->in;
	int last = nd->path[nd->depth - 1];

	x->nodes++;
	if (nd->depth == in->n) {
		int total = nd->cost + in->d[last][0];
		if (total < x->bound)
			x->improve(x, nd, total);
		return;
	}
	for (int k = 0; k < in->n - 1; k++) {
		int c = in->order[last][k];
		if (nd->visited & (1u << c))
			continue;
		int cost = nd->cost + in->d[last][c];
		int lbrest = nd->lbrest - in->minout[c];
		if (cost + in->minout[c] + lbrest >= x->bound)
			continue;
		int save_cost = nd->cost, save_lb = nd->lbrest;
		nd->path[nd->depth++] = (uint8_t)c;
		nd->visited |= 1u << c;
		nd->cost = cost;
		nd->lbrest = lbrest;
		tsp_dfs(x, nd);
		nd->depth--;
		nd->visited &= ~(1u << c);
		nd->cost = save_cost;
		nd->lbrest = save_lb;
	}
}

static void serial_improve(struct tsp_dfs *x, const struct tsp_node *nd, int cost)
{
	x->bound = cost;
}

/* The optimum of the n-city instance by the serial solver; *nodes explored. */
static int tsp_serial(const struct tsp_inst *in, long *nodes)
{
	struct tsp_node root;
	struct tsp_dfs x = {.in = in, .bound = in->nn_cost, .improve = serial_improve};

	tsp_root(in, &root);
	tsp_dfs(&x, &root);
	*nodes = x.nodes;
	return x.bound;
}

/* The locks and the condition variable of the system under test. */
struct tsp_sys {
	int (*lock)(void *l);
	int (*unlock)(void *l);
	int (*wait)(void *c, void *l);
	int (*signal)(void *c);
	int (*broadcast)(void *c);
};

struct tsp_shared {
	const struct tsp_inst *in;
	const struct tsp_sys *sys;
	void *qlock, *block;
	void *work;         /* condition variable of qlock: "tasks queued" */
	struct tsp_node *q; /* guarded by qlock: a LIFO of tasks */
	int qlen, active;   /* guarded by qlock: tasks queued, searchers busy */
	int idle;           /* guarded by qlock: searchers waiting on work */
	int best;           /* guarded by block */
	uint8_t best_path[TSP_MAXN];
	atomic_int err;
	atomic_llong q_acq, b_acq, nodes;
};

struct tsp_searcher {
	struct tsp_shared *sh;
	long q_acq, b_acq;
};

static int tsp_lock(struct tsp_searcher *me, void *l, long *acq)
{
	int rc = me->sh->sys->lock(l);
	(*acq)++;
	if (rc)
		atomic_store(&me->sh->err, rc);
	return rc;
}

static int tsp_unlock(struct tsp_searcher *me, void *l)
{
	int rc = me->sh->sys->unlock(l);
	if (rc)
		atomic_store(&me->sh->err, rc);
	return rc;
}

#define QLOCK(me) tsp_lock(me, (me)->sh->qlock, &(me)->q_acq)
#define BLOCK(me) tsp_lock(me, (me)->sh->block, &(me)->b_acq)

static void par_improve(struct tsp_dfs *x, const struct tsp_node *nd, int cost)
{
	struct tsp_searcher *me = x->owner;
	struct tsp_shared *sh = me->sh;

	if (BLOCK(me)) {
		x->bound = cost; /* the run has failed; keep searching sanely */
		return;
	}
	if (cost < sh->best) {
		sh->best = cost;
		memcpy(sh->best_path, nd->path, sizeof sh->best_path);
	}
	x->bound = sh->best;
	tsp_unlock(me, sh->block);
}

static void *tsp_searcher(void *p)
{
	struct tsp_searcher *me = p;
	struct tsp_shared *sh = me->sh;
	const struct tsp_inst *in = sh->in;
	struct tsp_dfs x = {.in = in, .improve = par_improve, .owner = me};
	struct tsp_node nd;
	int busy = 0;
	long tasks = 0;

	x.bound = INT_MAX;
	if (QLOCK(me))
		goto out;
	for (;;) {
		/* qlock held */
		if (busy) {
			sh->active--;
			busy = 0;
		}
		while (sh->qlen == 0 && sh->active > 0 && !atomic_load(&sh->err)) {
			sh->idle++;
			int rc = sh->sys->wait(sh->work, sh->qlock);
			sh->idle--;
			if (rc) {
				atomic_store(&sh->err, rc);
				break;
			}
		}
		if (sh->qlen == 0 || atomic_load(&sh->err)) {
			/* All done (or failed): the idle ones must see it too. */
			sh->sys->broadcast(sh->work);
			tsp_unlock(me, sh->qlock);
			break;
		}
		nd = sh->q[--sh->qlen];
		sh->active++;
		busy = 1;
		if (tsp_unlock(me, sh->qlock))
			break;

		/* Now and then refresh the bound, under its lock. */
		if (tasks++ % TSP_BOUND_EVERY == 0) {
			if (BLOCK(me))
				break;
			x.bound = sh->best;
			if (tsp_unlock(me, sh->block))
				break;
		}
		if (in->n - nd.depth > TSP_LEAF) {
			/* Expand: push the children, farthest first so that the
			 * nearest is popped first. */
			int last = nd.path[nd.depth - 1];
			x.nodes++;
			for (int k = in->n - 2; k >= 0; k--) {
				int c = in->order[last][k];
				if (nd.visited & (1u << c))
					continue;
				struct tsp_node ch = nd;
				ch.path[ch.depth++] = (uint8_t)c;
				ch.visited |= 1u << c;
				ch.cost += in->d[last][c];
				ch.lbrest -= in->minout[c];
				if (ch.cost + in->minout[c] + ch.lbrest >= x.bound)
					continue;
				if (QLOCK(me))
					break;
				if (sh->qlen == TSP_QCAP)
					atomic_store(&sh->err, ENOSPC);
				else
					sh->q[sh->qlen++] = ch;
				if (sh->idle > 0)
					sh->sys->signal(sh->work);
				tsp_unlock(me, sh->qlock);
			}
		} else {
			tsp_dfs(&x, &nd);
		}
		if (QLOCK(me))
			break;
	}
out:
	if (atomic_load(&sh->err))
		sh->sys->broadcast(sh->work); /* nobody may be left waiting */
	atomic_fetch_add(&sh->q_acq, me->q_acq);
	atomic_fetch_add(&sh->b_acq, me->b_acq);
	atomic_fetch_add(&sh->nodes, x.nodes);
	return NULL;
}

/* The instance and its optimum, made once per size. */
static struct tsp_inst tsp_in;
static int tsp_opt = -1;
static long tsp_serial_nodes;

static const struct tsp_inst *tsp_instance(int n)
{
	if (tsp_in.n != n || tsp_opt < 0) {
		tsp_make(&tsp_in, n);
		tsp_opt = tsp_serial(&tsp_in, &tsp_serial_nodes);
	}
	return &tsp_in;
}

static int tsp_setup(struct tsp_shared *sh, const struct tsp_sys *sys, void *qlock, void *block,
		     void *work, int n, wb_sample_t *s)
{
	memset(sh, 0, sizeof *sh);
	sh->in = tsp_instance(n);
	sh->sys = sys;
	sh->qlock = qlock;
	sh->block = block;
	sh->work = work;
	sh->q = malloc(TSP_QCAP * sizeof *sh->q);
	if (!sh->q) {
		ERR(s, "out of memory for the queue");
		return ENOMEM;
	}
	tsp_root(sh->in, &sh->q[0]);
	sh->qlen = 1;
	sh->best = sh->in->nn_cost;
	return 0;
}

/* After the searchers were joined: the checks and the numbers. */
static int tsp_finish(struct tsp_shared *sh, int rc, int64_t el, wb_sample_t *s)
{
	free(sh->q);
	if (!rc && (rc = atomic_load(&sh->err)) != 0)
		ERR(s, "%s", rc == ENOSPC ? "work queue full" : strerror(rc));
	if (rc)
		return rc;
	if (sh->best != tsp_opt || sh->qlen != 0 || sh->active != 0) {
		ERR(s, "best tour %d (optimum %d), %d tasks left, %d searchers busy", sh->best,
		    tsp_opt, sh->qlen, sh->active);
		return EIO;
	}
	long long qa = atomic_load(&sh->q_acq), ba = atomic_load(&sh->b_acq);
	s->elapsed_ns = (double)el;
	s->value = (double)el / 1e6;
	wb_sample_extra(s, "q_acq", (double)qa);
	wb_sample_extra(s, "b_acq", (double)ba);
	wb_sample_extra(s, "q_acq_per_ms", (double)qa / s->value);
	wb_sample_extra(s, "b_acq_per_ms", (double)ba / s->value);
	wb_sample_extra(s, "nodes", (double)atomic_load(&sh->nodes));
	return 0;
}

static int tsp_weft_lock(void *l)
{
	return weft_mutex_lock(l);
}

static int tsp_weft_unlock(void *l)
{
	return weft_mutex_unlock(l);
}

static int tsp_weft_wait(void *c, void *l)
{
	return weft_cond_wait(c, l);
}

static int tsp_weft_signal(void *c)
{
	return weft_cond_signal(c);
}

static int tsp_weft_broadcast(void *c)
{
	return weft_cond_broadcast(c);
}

static const struct tsp_sys tsp_weft = {tsp_weft_lock, tsp_weft_unlock, tsp_weft_wait,
					tsp_weft_signal, tsp_weft_broadcast};

/* The adaptive run's lock statistics, last trial, for the row's note. */
static weft_mutex_stats_t tsp_last_stats[2];

/* n: cities; iarg[0], iarg[1]: the policies (WEFT_LOCK_*) of the queue
 * lock and of the bound lock. */
static int weft_tsp(const wb_case_t *c, long n, wb_sample_t *s)
{
	static struct tsp_shared sh;
	static struct tsp_searcher me[TSP_SEARCHERS];
	weft_mutex_t lk[2]; /* 0: the queue's, 1: the bound's */
	weft_cond_t work;
	weft_mutexattr_t a;
	weft_mutex_stats_t st[2];
	weft_t t[TSP_SEARCHERS];
	long made;
	int rc;

	for (int i = 0; i < 2; i++) {
		if ((rc = weft_mutexattr_init(&a)) != 0 ||
		    (rc = weft_mutexattr_setpolicy(&a, (int)c->iarg[i])) != 0 ||
		    (rc = weft_mutex_init(&lk[i], &a)) != 0) {
			ERR(s, "weft_mutexattr/weft_mutex_init (policy %ld): %s", c->iarg[i],
			    strerror(rc));
			return rc;
		}
		weft_mutexattr_destroy(&a);
	}
	if ((rc = weft_cond_init(&work, NULL)) != 0) {
		ERR(s, "weft_cond_init: %s", strerror(rc));
		return rc;
	}
	if ((rc = tsp_setup(&sh, &tsp_weft, &lk[0], &lk[1], &work, (int)n, s)) != 0)
		return rc;
	for (int i = 0; i < TSP_SEARCHERS; i++)
		me[i] = (struct tsp_searcher){.sh = &sh};
	int64_t t0 = wb_now_ns();
	rc = spawn(t, TSP_SEARCHERS, tsp_searcher, me, sizeof me[0], NULL, &made, s);
	if (rc)
		atomic_store(&sh.err, rc);
	rc = join_all(t, made, rc, s);
	int64_t el = wb_now_ns() - t0;
	if ((rc = tsp_finish(&sh, rc, el, s)) != 0)
		return rc;
	if ((rc = weft_cond_destroy(&work)) != 0) {
		ERR(s, "weft_cond_destroy after the run: %s", strerror(rc));
		return rc;
	}
	for (int i = 0; i < 2; i++) {
		weft_mutex_stats(&lk[i], &st[i]);
		if ((rc = weft_mutex_destroy(&lk[i])) != 0) {
			ERR(s, "weft_mutex_destroy after the run: %s", strerror(rc));
			return rc;
		}
	}
	wb_sample_extra(s, "q_contended_pct", pct(st[0].contended, st[0].acquisitions));
	wb_sample_extra(s, "q_parks", (double)st[0].parks);
	wb_sample_extra(s, "b_contended_pct", pct(st[1].contended, st[1].acquisitions));
	wb_sample_extra(s, "b_parks", (double)st[1].parks);
	if (c->iarg[0] == WEFT_LOCK_ADAPTIVE && c->iarg[1] == WEFT_LOCK_ADAPTIVE)
		memcpy(tsp_last_stats, st, sizeof st);
	return 0;
}

static int tsp_pt_lock(void *l)
{
	return pthread_mutex_lock(l);
}

static int tsp_pt_unlock(void *l)
{
	return pthread_mutex_unlock(l);
}

static int tsp_pt_wait(void *c, void *l)
{
	return pthread_cond_wait(c, l);
}

static int tsp_pt_signal(void *c)
{
	return pthread_cond_signal(c);
}

static int tsp_pt_broadcast(void *c)
{
	return pthread_cond_broadcast(c);
}

static const struct tsp_sys tsp_pthread = {tsp_pt_lock, tsp_pt_unlock, tsp_pt_wait, tsp_pt_signal,
					   tsp_pt_broadcast};

static int pt_tsp(const wb_case_t *c, long n, wb_sample_t *s)
{
	static struct tsp_shared sh;
	static struct tsp_searcher me[TSP_SEARCHERS];
	pthread_mutex_t lk[2];
	pthread_cond_t work;
	pthread_t t[TSP_SEARCHERS];
	int rc = 0, made = 0;

	pthread_mutex_init(&lk[0], NULL);
	pthread_mutex_init(&lk[1], NULL);
	pthread_cond_init(&work, NULL);
	if ((rc = tsp_setup(&sh, &tsp_pthread, &lk[0], &lk[1], &work, (int)n, s)) != 0)
		return rc;
	for (int i = 0; i < TSP_SEARCHERS; i++)
		me[i] = (struct tsp_searcher){.sh = &sh};
	int64_t t0 = wb_now_ns();
	for (; made < TSP_SEARCHERS; made++) {
		if ((rc = pthread_create(&t[made], NULL, tsp_searcher, &me[made])) != 0) {
			ERR(s, "pthread_create: %s", strerror(rc));
			atomic_store(&sh.err, rc);
			break;
		}
	}
	for (int i = 0; i < made; i++)
		pthread_join(t[i], NULL);
	int64_t el = wb_now_ns() - t0;
	pthread_cond_destroy(&work);
	pthread_mutex_destroy(&lk[0]);
	pthread_mutex_destroy(&lk[1]);
	return tsp_finish(&sh, rc, el, s);
}

static int serial_tsp(const wb_case_t *c, long n, wb_sample_t *s)
{
	const struct tsp_inst *in = tsp_instance((int)n);
	long nodes = 0;
	int64_t t0 = wb_now_ns();
	int best = tsp_serial(in, &nodes);
	int64_t el = wb_now_ns() - t0;

	if (best != tsp_opt) {
		ERR(s, "serial TSP found %d, then %d", tsp_opt, best);
		return EIO;
	}
	s->elapsed_ns = (double)el;
	s->value = (double)el / 1e6;
	wb_sample_extra(s, "nodes", (double)nodes);
	return 0;
}

/* ---- the rows ----------------------------------------------------------- */

#define SYNC_CASE(ctx, body, where, nt)                                                          \
	{                                                                                        \
		.system = (ctx) == WEFT_CONTEXT_ASM ? "weft-asm" : "weft-ucontext",              \
		.placement = (where), .run = wb_weft_session, .inner = (body), .context = (ctx), \
		.weft = 1, .n0 = 1000, .note = (nt), .opts = o                                   \
	}

static void emit(wb_report_t *r, wb_row_t *rows, int n)
{
	for (int i = 0; i < n; i++)
		if (rows[i].system)
			wb_report_row(r, &rows[i]);
}

static wb_row_t *find(wb_row_t *rows, int n, const char *system)
{
	for (int i = 0; i < n; i++)
		if (rows[i].system && strcmp(rows[i].system, system) == 0 && !rows[i].error[0])
			return &rows[i];
	return NULL;
}

/* Rows with sizes that differ between systems (sem_1m): no ratio of the
 * totals; the note compares per thread, as chain's does. */
static void per_thread_notes(wb_row_t *rows, int n)
{
	wb_row_t *pt = find(rows, n, "pthread");

	for (int i = 0; i < n; i++) {
		wb_row_t *w = &rows[i];
		if (!w->system || w->error[0])
			continue;
		w->ratio_vs_pthread = NAN;
		wb_row_note(
			w,
			"%d trial%s; %ld threads, all blocked after %.0f ms; peak RSS %.0f MiB; "
			"per thread %.0f ns, %.2f KiB",
			w->nsamples, w->nsamples == 1 ? "" : "s", w->n,
			wb_row_get_extra(w, "block_ms"), wb_row_get_extra(w, "peak_rss_kb") / 1024,
			wb_row_get_extra(w, "ns_per_thread"),
			wb_row_get_extra(w, "rss_kb_per_thread"));
		if (pt && w != pt)
			wb_row_note(w, "%.3gx pthread time, %.3gx memory per thread",
				    wb_row_get_extra(w, "ns_per_thread") /
					    wb_row_get_extra(pt, "ns_per_thread"),
				    wb_row_get_extra(w, "rss_kb_per_thread") /
					    wb_row_get_extra(pt, "rss_kb_per_thread"));
	}
}

/* The adaptive_tsp configurations: both locks with one policy, then one
 * lock with a fixed policy while the other stays adaptive (so each lock's
 * best fixed policy can be told apart in total time). */
static const struct tsp_config {
	const char *system;
	int q, b; /* WEFT_LOCK_* of the queue lock and of the bound lock */
} tsp_configs[] = {
	{"weft-spin", WEFT_LOCK_SPIN, WEFT_LOCK_SPIN},
	{"weft-spin-park", WEFT_LOCK_SPIN_PARK, WEFT_LOCK_SPIN_PARK},
	{"weft-park", WEFT_LOCK_PARK, WEFT_LOCK_PARK},
	{"weft-adaptive", WEFT_LOCK_ADAPTIVE, WEFT_LOCK_ADAPTIVE},
	{"weft-queue-spin", WEFT_LOCK_SPIN, WEFT_LOCK_ADAPTIVE},
	{"weft-queue-spin-park", WEFT_LOCK_SPIN_PARK, WEFT_LOCK_ADAPTIVE},
	{"weft-queue-park", WEFT_LOCK_PARK, WEFT_LOCK_ADAPTIVE},
	{"weft-bound-spin", WEFT_LOCK_ADAPTIVE, WEFT_LOCK_SPIN},
	{"weft-bound-spin-park", WEFT_LOCK_ADAPTIVE, WEFT_LOCK_SPIN_PARK},
	{"weft-bound-park", WEFT_LOCK_ADAPTIVE, WEFT_LOCK_PARK},
};
#define TSP_NCONFIGS NCASES(tsp_configs)

static const char *const policy_name[] = {
	[WEFT_LOCK_ADAPTIVE] = "ADAPTIVE",
	[WEFT_LOCK_SPIN] = "SPIN",
	[WEFT_LOCK_SPIN_PARK] = "SPIN_PARK",
	[WEFT_LOCK_PARK] = "PARK",
};

/* The best (lowest median) of configs [from, from+3): the three fixed
 * policies of one kind; NULL if none was measured. *slower: how many of
 * them have a median above v; *measured: how many were measured. */
static wb_row_t *tsp_best(wb_row_t *rows, int n, int from, double v, int *slower, int *measured)
{
	wb_row_t *best = NULL;

	*slower = *measured = 0;
	for (int i = from; i < from + 3; i++) {
		wb_row_t *r = find(rows, n, tsp_configs[i].system);
		if (!r)
			continue;
		(*measured)++;
		if (!best || r->median < best->median)
			best = r;
		if (v < r->median)
			(*slower)++;
	}
	return best;
}

/* The closing note of adaptive_tsp: is adaptive within 5% of the best fixed
 * policy on each lock (in total time, the other lock adaptive), and better
 * than every fixed policy applied to the whole program? */
static void tsp_verdict(wb_row_t *rows, int n, char *closing, size_t len)
{
	static const char *const what[] = {"whole program (both locks one policy)",
					   "queue lock (bound lock adaptive)",
					   "bound lock (queue lock adaptive)"};
	static const char *const ratio_key[] = {"vs_best_fixed", "queue_vs_best_fixed",
						"bound_vs_best_fixed"};
	wb_row_t *ad = find(rows, n, "weft-adaptive");
	size_t used;

	if (!ad) {
		snprintf(closing, len, "adaptive_tsp: no adaptive run; no verdict.\n");
		return;
	}
	const weft_mutex_stats_t *q = &tsp_last_stats[0], *b = &tsp_last_stats[1];
	wb_row_note(ad,
		    "weft_mutex_stats, last run: queue %llu acq, %llu contended, %llu parks, "
		    "spin %d; bound %llu acq, %llu contended, %llu parks, spin %d",
		    (unsigned long long)q->acquisitions, (unsigned long long)q->contended,
		    (unsigned long long)q->parks, q->spin_budget,
		    (unsigned long long)b->acquisitions, (unsigned long long)b->contended,
		    (unsigned long long)b->parks, b->spin_budget);
	used = (size_t)snprintf(
		closing, len,
		"adaptive_tsp: weft-adaptive %.4g ms (median) vs the best fixed policy",
		ad->median);
	for (int m = 0; m < 3 && used < len; m++) {
		int slower, measured;
		wb_row_t *best =
			tsp_best(rows, n, m == 0 ? 0 : 1 + 3 * m, ad->median, &slower, &measured);
		if (!best) {
			used += (size_t)snprintf(closing + used, len - used,
						 "\n  %s: no fixed policy measured", what[m]);
			continue;
		}
		double ratio = ad->median / best->median;
		wb_row_extra(ad, ratio_key[m], ratio);
		used += (size_t)snprintf(closing + used, len - used,
					 "\n  %s: best %s %.4g ms, adaptive %+.1f%%: %s", what[m],
					 best->system, best->median, 100 * (ratio - 1),
					 ratio <= 1.05 ? "within 5%" : "NOT within 5%");
		if (m == 0 && used < len)
			used += (size_t)snprintf(closing + used, len - used,
						 "; better than every fixed policy: %s%s",
						 slower == measured ? "yes" : "NO",
						 measured < 3 ? " (of those measured)" : "");
	}
	/* The noise floor: the runs with the queue lock adaptive differ only in
	 * the rarely contended bound lock's policy. */
	double lo = INFINITY, hi = 0;
	int nq = 0;
	for (int i = 3; i < TSP_NCONFIGS; i++) {
		wb_row_t *r = find(rows, n, tsp_configs[i].system);
		if (r && tsp_configs[i].q == WEFT_LOCK_ADAPTIVE) {
			lo = r->median < lo ? r->median : lo;
			hi = r->median > hi ? r->median : hi;
			nq++;
		}
	}
	if (nq > 1 && used < len)
		used += (size_t)snprintf(
			closing + used, len - used,
			"\n  noise: the %d configurations with the queue lock adaptive "
			"(differing only in the bound lock) spread %.1f%%",
			nq, 100 * (hi / lo - 1));
	/* Per lock, medians: contended share and parks, both locks one policy. */
	for (int l = 0; l < 2; l++) {
		const char *pre = l ? "b_" : "q_";
		char kc[32], kp[32], ka[32];
		snprintf(kc, sizeof kc, "%scontended_pct", pre);
		snprintf(kp, sizeof kp, "%sparks", pre);
		snprintf(ka, sizeof ka, "%sacq_per_ms", pre);
		if (used < len)
			used += (size_t)snprintf(closing + used, len - used,
						 "\n  %s lock, %%contended/parks/acq per ms:",
						 l ? "bound" : "queue");
		for (int i = 0; i < 4 && used < len; i++) {
			wb_row_t *r = find(rows, n, tsp_configs[i].system);
			if (r)
				used += (size_t)snprintf(
					closing + used, len - used, " %s %.1f/%.0f/%.0f",
					policy_name[tsp_configs[i].q], wb_row_get_extra(r, kc),
					wb_row_get_extra(r, kp), wb_row_get_extra(r, ka));
		}
	}
	if (used < len)
		snprintf(closing + used, len - used, "\n");
}

void wb_sync_rows(const wb_opts_t *o, wb_report_t *r, int nworkers, char *closing,
		  size_t closing_len)
{
	const char *any = "any";
	int quick = o->quick;

	closing[0] = '\0';

	/* mutex_uncontended */
	{
		wb_case_t cases[] = {
			SYNC_CASE(WEFT_CONTEXT_ASM, weft_mutex_uncontended, "main ULT",
				  "default weft_mutex_t, lock+unlock"),
			{.system = "pthread",
			 .placement = "main thread",
			 .run = pt_mutex_uncontended,
			 .n0 = 1000,
			 .ref = WB_REF_PTHREAD,
			 .opts = o,
			 .note = "default pthread_mutex_t, lock+unlock"},
		};
		wb_group_t g = {"mutex_uncontended", "ns/pair", cases, NCASES(cases)};
		wb_row_t rows[NCASES(cases)];
		if (wb_selected_bench(o, g.bench)) {
			wb_run_group(o, &g, rows);
			emit(r, rows, g.ncases);
		}
	}

	/* condvar ping-pong, one worker and two */
	for (int two = 0; two <= 1; two++) {
		const char *wn = "mutex + a condvar per side, shared turn; RT = 2 hand-offs";
		wb_case_t wa = SYNC_CASE(WEFT_CONTEXT_ASM, weft_cond_pingpong,
					 two ? "workers 0+1" : "worker 0", wn);
		wb_case_t wu = SYNC_CASE(WEFT_CONTEXT_UCONTEXT, weft_cond_pingpong,
					 two ? "workers 0+1" : "worker 0", wn);
		wa.iarg[1] = wu.iarg[1] = two;
		wb_case_t cases[6];
		int nc = 0;
		cases[nc++] = wa;
		cases[nc++] = wu;
		cases[nc++] =
			(wb_case_t){.system = "pthread",
				    .placement = two ? "CPUs 0+1" : "CPU 0",
				    .run = pt_cond_pingpong,
				    .n0 = 50,
				    .ref = WB_REF_PTHREAD,
				    .opts = o,
				    .iarg = {0, two},
				    .note = two ? "the same with pthread_mutex_t/pthread_cond_t, "
						  "pinned to two CPUs"
						: "the same with pthread_mutex_t/pthread_cond_t, "
						  "both pinned to one "
						  "CPU"};
		if (!two) { /* the peers that hand off on one core */
#if WB_HAVE_ST
			cases[nc++] = (wb_case_t){
				.system = "state-threads",
				.placement = "main thread",
				.run = st_cond_pingpong,
				.n0 = 1000,
				.opts = o,
				.note = "two st_cond_t, turn-taking without a mutex (N:1: switches "
					"only when a thread blocks)"};
#endif
#if WB_HAVE_GO
			cases[nc++] = (wb_case_t){
				.system = "go",
				.placement = "one P",
				.run = wb_go_case,
				.n0 = 10000,
				.opts = o,
				.iarg = {WB_GO_COND_PINGPONG},
				.note = "sync.Mutex + two sync.Cond, GOMAXPROCS=1 (weft-peer-go)"};
			cases[nc++] = (wb_case_t){
				.system = "go-chan",
				.placement = "one P",
				.run = wb_go_case,
				.n0 = 10000,
				.opts = o,
				.iarg = {WB_GO_CHAN_PINGPONG},
				.note = "two unbuffered channels, GOMAXPROCS=1 (weft-peer-go)"};
#endif
		}
		wb_group_t g = {two ? "condvar_pingpong_2workers" : "condvar_pingpong_1worker",
				"ns/RT", cases, nc};
		wb_row_t rows[NCASES(cases)];
		if (wb_selected_bench(o, g.bench)) {
			wb_run_group(o, &g, rows);
			emit(r, rows, g.ncases);
		}
	}

	/* semaphore ping-pong, one worker */
	{
		const char *wn = "post the other's weft_sem_t, wait on one's own";
		wb_case_t cases[] = {
			SYNC_CASE(WEFT_CONTEXT_ASM, weft_sem_pingpong, "worker 0", wn),
			SYNC_CASE(WEFT_CONTEXT_UCONTEXT, weft_sem_pingpong, "worker 0", wn),
			{.system = "pthread",
			 .placement = "CPU 0",
			 .run = pt_sem_pingpong,
			 .n0 = 50,
			 .ref = WB_REF_PTHREAD,
			 .opts = o,
			 .note = "the same with sem_t, both pinned to one CPU"},
		};
		wb_group_t g = {"sem_pingpong", "ns/RT", cases, NCASES(cases)};
		wb_row_t rows[NCASES(cases)];
		if (wb_selected_bench(o, g.bench)) {
			wb_run_group(o, &g, rows);
			emit(r, rows, g.ncases);
		}
	}

	/* The two one-worker ping-pongs with ULTs a program would make:
	 * default attributes, on a one-worker runtime (micro's yield_unbound
	 * and park_unbound do the same). */
	{
		static const struct {
			const char *bench;
			wb_run_fn body;
			const char *note;
		} ub[] = {
			{"condvar_pingpong_unbound", weft_cond_pingpong,
			 "condvar_pingpong_1worker's body, 2 unbound ULTs on a one-worker runtime"},
			{"sem_pingpong_unbound", weft_sem_pingpong,
			 "sem_pingpong's body, 2 unbound ULTs on a one-worker runtime"},
		};
		for (size_t i = 0; i < NCASES(ub); i++) {
			wb_case_t cases[] = {
				SYNC_CASE(WEFT_CONTEXT_ASM, ub[i].body, "1 worker", ub[i].note)};
			cases[0].workers = 1;
			cases[0].iarg[0] = cases[0].iarg[1] = -1;
			cases[0].no_ratio = 1;
			wb_group_t g = {ub[i].bench, "ns/RT", cases, NCASES(cases)};
			wb_row_t rows[NCASES(cases)];
			if (wb_selected_bench(o, g.bench)) {
				wb_run_group(o, &g, rows);
				emit(r, rows, g.ncases);
			}
		}
	}

	/* 64 threads on one mutex: bound/pinned (every worker and CPU takes
	 * part in every run), then placed by the scheduler as a real program's
	 * threads are. */
	for (int unbound = 0; unbound <= 1; unbound++) {
		const char *wn = unbound ? "64 ULTs, default attributes (placed by the scheduler): "
					   "lock, counter++ and a hash step, unlock"
					 : "64 ULTs, ULT i bound to worker i mod workers: lock, "
					   "counter++ and a hash step, unlock";
		wb_case_t wa = SYNC_CASE(WEFT_CONTEXT_ASM, weft_mutex_hammer,
					 unbound         ? "any"
					 : nworkers == 2 ? "workers 0+1"
							 : "all workers",
					 wn);
		wa.n0 = 64 * 100;
		wa.iarg[0] = unbound;
		wb_case_t cases[3];
		int nc = 0;
		cases[nc++] = wa;
		cases[nc++] = (wb_case_t){
			.system = "pthread",
			.placement = unbound                           ? "any"
				     : wb_cpu(1) >= 0 && wb_cpu(2) < 0 ? "CPUs 0+1"
								       : "all CPUs",
			.run = pt_mutex_hammer,
			.n0 = 64 * 100,
			.ref = WB_REF_PTHREAD,
			.opts = o,
			.iarg = {unbound},
			.note = unbound ? "64 pthreads, not pinned, default pthread_mutex_t"
					: "64 pthreads, thread i pinned to allowed CPU i mod CPUs, "
					  "default pthread_mutex_t"};
#if WB_HAVE_GO
		if (unbound)
			cases[nc++] = (wb_case_t){
				.system = "go",
				.placement = "any",
				.run = wb_go_case,
				.n0 = 64 * 100,
				.opts = o,
				.iarg = {WB_GO_MUTEX_HAMMER},
				.note = "64 goroutines, one sync.Mutex, GOMAXPROCS = the CPUs "
					"(weft-peer-go)"};
#endif
		wb_group_t g = {unbound ? "mutex_hammer_64_unbound" : "mutex_hammer_64", "ns/acq",
				cases, nc};
		wb_row_t rows[NCASES(cases)];
		if (wb_selected_bench(o, g.bench)) {
			wb_run_group(o, &g, rows);
			for (int i = 0; i < g.ncases; i++)
				if (rows[i].system && !rows[i].error[0])
					wb_row_note(&rows[i], "%.3g Mops/s", 1e3 / rows[i].median);
			emit(r, rows, g.ncases);
		}
	}

	/* 64 threads on one spinlock, and 64 threads only yielding, placed by
	 * the scheduler. */
	for (int kind = WB_HAMMER_SPIN; kind <= WB_HAMMER_YIELD; kind++) {
		int y = kind == WB_HAMMER_YIELD;
		wb_case_t cases[2];
		cases[0] = (wb_case_t)SYNC_CASE(
			WEFT_CONTEXT_ASM, weft_mutex_hammer, "any",
			y ? "64 ULTs, default attributes, each calling weft_yield n/64 times"
			  : "64 ULTs, default attributes: weft_spin_lock, counter++ and a hash "
			    "step, unlock");
		cases[0].n0 = 64 * 100;
		cases[0].iarg[0] = 1;
		cases[0].iarg[1] = kind;
		cases[1] = (wb_case_t){
			.system = "pthread",
			.placement = "any",
			.run = pt_mutex_hammer,
			.n0 = 64 * 100,
			.ref = WB_REF_PTHREAD,
			.opts = o,
			.iarg = {1, kind},
			.note = y ? "64 pthreads, not pinned, each calling sched_yield n/64 times"
				  : "64 pthreads, not pinned, one pthread_spinlock_t"};
		wb_group_t g = {y ? "yield_64_unbound" : "spin_hammer_64_unbound",
				y ? "ns/yield" : "ns/acq", cases, 2};
		wb_row_t rows[NCASES(cases)];
		if (wb_selected_bench(o, g.bench)) {
			wb_run_group(o, &g, rows);
			emit(r, rows, g.ncases);
		}
	}

	/* 10,000 sleepers at once */
	{
		long n = quick ? 1000 : 10000;
		static char wn[96], pn[96];
		snprintf(wn, sizeof wn,
			 "%ld ULTs x weft_sleep_ns(100 ms), first create to last join", n);
		snprintf(pn, sizeof pn, "%ld pthreads x nanosleep(100 ms), default attributes", n);
		wb_case_t wa = SYNC_CASE(WEFT_CONTEXT_ASM, weft_sleep_many, any, wn);
		wa.n = n;
		wb_case_t cases[] = {
			wa,
			{.system = "pthread",
			 .placement = "unpinned",
			 .run = pt_sleep_many,
			 .n = n,
			 .ref = WB_REF_PTHREAD,
			 .opts = o,
			 .note = pn},
		};
		for (int i = 0; i < NCASES(cases); i++)
			cases[i].trials = quick ? 1 : 3;
		wb_group_t g = {"sleep_10k", "ms", cases, NCASES(cases)};
		wb_row_t rows[NCASES(cases)];
		if (wb_selected_bench(o, g.bench)) {
			wb_run_group(o, &g, rows);
			emit(r, rows, g.ncases);
		}
	}

	/* 1,000,000 ULTs blocked on one semaphore, each trial a fresh process */
	{
		wb_case_t cases[] = {
			{.system = "weft-asm",
			 .placement = any,
			 .run = semwait_spawn,
			 .n = quick ? 20000 : 1000000,
			 .trials = quick ? 1 : 3,
			 .no_warmup = 1,
			 .budget_s = SEMWAIT_BUDGET_S,
			 .opts = o},
			{.system = "pthread",
			 .placement = "unpinned",
			 .run = semwait_spawn,
			 .n = o->chain_pthread_n,
			 .trials = quick ? 1 : 3,
			 .no_warmup = 1,
			 .budget_s = SEMWAIT_BUDGET_S,
			 .opts = o},
#if WB_HAVE_GO
			{.system = "go",
			 .placement = "any",
			 .run = wb_go_case,
			 .n = quick ? 20000 : 1000000,
			 .trials = quick ? 1 : 3,
			 .no_warmup = 1,
			 .budget_s = SEMWAIT_BUDGET_S,
			 .opts = o,
			 .iarg = {WB_GO_ALIVE},
			 .note = "goroutines blocked on one channel, released by closing it, "
				 "waited for with a sync.WaitGroup (weft-peer-go)"},
#endif
		};
		wb_group_t g = {"sem_1m", "s", cases, NCASES(cases)};
		wb_row_t rows[NCASES(cases)];
		if (wb_selected_bench(o, g.bench)) {
			wb_run_group(o, &g, rows);
			per_thread_notes(rows, g.ncases);
			emit(r, rows, g.ncases);
		}
	}

	/* branch-and-bound TSP, once per lock policy */
	if (wb_selected_bench(o, "adaptive_tsp")) {
		static char notes[TSP_NCONFIGS][128], pt_note[128], serial_note[160];
		int cities = quick ? 16 : 19;
		const struct tsp_inst *in = tsp_instance(cities);
		wb_case_t cases[TSP_NCONFIGS + 2];

		for (int i = 0; i < TSP_NCONFIGS; i++) {
			const struct tsp_config *k = &tsp_configs[i];
			snprintf(notes[i], sizeof notes[i],
				 "%d cities, %d ULTs on %d workers; queue lock %s, bound lock %s",
				 cities, TSP_SEARCHERS, nworkers, policy_name[k->q],
				 policy_name[k->b]);
			cases[i] = (wb_case_t)SYNC_CASE(WEFT_CONTEXT_ASM, weft_tsp, any, notes[i]);
			cases[i].system = k->system;
			cases[i].n = cities;
			cases[i].iarg[0] = k->q;
			cases[i].iarg[1] = k->b;
		}
		snprintf(pt_note, sizeof pt_note, "%d cities, %d pthreads, default pthread_mutex_t",
			 cities, TSP_SEARCHERS);
		snprintf(serial_note, sizeof serial_note,
			 "the same search by one thread, no locks: reference (optimum %d, "
			 "nearest-neighbour start %d, %ld nodes)",
			 tsp_opt, in->nn_cost, tsp_serial_nodes);
		cases[TSP_NCONFIGS] = (wb_case_t){.system = "pthread",
						  .placement = "unpinned",
						  .run = pt_tsp,
						  .n = cities,
						  .ref = WB_REF_PTHREAD,
						  .opts = o,
						  .note = pt_note};
		cases[TSP_NCONFIGS + 1] = (wb_case_t){.system = "serial-c",
						      .placement = "main thread",
						      .run = serial_tsp,
						      .n = cities,
						      .no_ratio = 1,
						      .opts = o,
						      .note = serial_note};
		wb_group_t g = {"adaptive_tsp", "ms", cases, NCASES(cases)};
		wb_row_t rows[NCASES(cases)];
		wb_run_group(o, &g, rows);
		tsp_verdict(rows, g.ncases, closing, closing_len);
		emit(r, rows, g.ncases);
	}
}
