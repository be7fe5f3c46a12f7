/* weft-bench sched: installable schedulers and POSIX priorities at work.
 *
 *   bnb_knapsack   the experiment of "Configurable, Lightweight Threads on a
 *                  KSR Multiprocessor" (Ghosh, Mukherjee, Schwan), sections
 *                  5-7: a branch-and-bound program with a distributed work
 *                  queue, run with one scheduler everywhere (uniform), with
 *                  the application under a FIFO scheduler and the
 *                  communication threads under a priority scheduler on a
 *                  worker of their own (mixed, mixed-all), and with the
 *                  priority scheduler installed half-way through (swap)
 *   wake_latency   how long a SCHED_FIFO ULT woken by a semaphore waits
 *                  for its worker while 64 SCHED_OTHER ULTs stay ready,
 *                  under prio, steal and share, next to glibc pthreads
 *                  with a kernel SCHED_FIFO thread
 *
 * The branch-and-bound program. A 0/1 knapsack instance from a fixed-seed
 * generator (strongly correlated: value = weight + R/10, capacity half the
 * total weight, items by value/weight), searched depth first with the
 * fractional (Dantzig) upper bound. BB_APPS application ULTs each own a work
 * queue of open subproblems, guarded by a weft mutex. An application ULT
 * pops the newest node of its queue and searches below it on a private
 * stack for BB_CHUNK nodes; then it spills what is left of that stack back
 * to its queue (so that the oldest, shallowest nodes are at the queue's
 * head, where the balancer takes them), refreshes its bound and yields: the
 * natural scheduling point, every ~20 us. A ULT whose queue is empty waits
 * on its queue's condition variable. Two communication ULTs wake every
 * BB_PERIOD_NS: the balancer moves half of the longest queue to the
 * shortest (when the longest holds at least twice the shortest plus two)
 * and signals the short queue's owner; the broadcaster takes the best value
 * any application ULT has found and raises every application ULT's bound
 * to it - each prunes with its own bound only, so a late broadcast costs
 * nodes. The program ends when no open node is left (a count of them,
 * updated once per chunk). Every run's answer is checked against a dynamic
 * programme's: a wrong optimum is the row's error and makes the exit
 * status 1, as a checksum mismatch does in `weft-bench sim`.
 *
 * The communication ULTs are bound to worker 0 in every configuration, so
 * that the rows differ only in the schedulers and the priorities. There is
 * no call that binds a running ULT to a worker (only weft_attr_setworker at
 * creation), so swap could not have moved them there at the swap.
 */
#include "subcommands.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft.h>

#define ERR(s, ...) snprintf((s)->error, sizeof(s)->error, __VA_ARGS__)
#define NCASES(a)   ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- a weft session with a scheduler spec ------------------------------- */

/* weft_init with the options' pinning, `scheds` as WEFT_SCHED would give it
 * (it replaces WEFT_SCHED: each row chooses its schedulers) and `workers`
 * (0: the options', else weft's default). */
static int sched_start(const wb_opts_t *o, const char *scheds, int workers, int pin, char *err,
		       size_t errlen)
{
	weft_config_t cfg;
	int rc = weft_config_init(&cfg);

	if (rc) {
		snprintf(err, errlen, "weft_config_init: %s", strerror(rc));
		return rc;
	}
	cfg.context = WEFT_CONTEXT_ASM;
	cfg.sched = WEFT_SCHED_DEFAULT;
	cfg.scheds = scheds;
	if (workers > 0)
		cfg.workers = workers;
	else if (o->workers > 0)
		cfg.workers = o->workers;
	if (pin != 0)
		cfg.pin = pin;
	else if (o->pin >= 0)
		cfg.pin = o->pin;
	rc = weft_init(&cfg);
	if (rc)
		snprintf(err, errlen, "weft_init (scheds \"%s\"): %s", scheds, strerror(rc));
	return rc;
}

/* weft_shutdown is EBUSY until every other ULT has exited; the bodies join
 * all they create, so this only waits out an exit in progress. */
static int sched_stop(char *err, size_t errlen)
{
	int rc = EBUSY;

	for (int i = 0; i < 1000000 && rc == EBUSY; i++) {
		rc = weft_shutdown();
		if (rc == EBUSY)
			weft_yield();
	}
	if (rc)
		snprintf(err, errlen, "weft_shutdown: %s", strerror(rc));
	return rc;
}

static int session(const wb_case_t *c, const char *scheds, int workers, int pin, long n,
		   wb_sample_t *s)
{
	int rc = sched_start(c->opts, scheds, workers, pin, s->error, sizeof s->error);
	if (rc)
		return rc;
	int brc = c->inner(c, n, s);
	char err[128] = "";
	rc = sched_stop(err, sizeof err);
	if (rc && !brc)
		snprintf(s->error, sizeof s->error, "%s", err);
	return brc ? brc : rc;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* The q-quantile (0..1) of v[0..n), sorted in place. */
static double quantile(int64_t *v, long n, double q)
{
	if (n <= 0)
		return NAN;
	qsort(v, (size_t)n, sizeof v[0], cmp_i64);
	long i = (long)(q * (double)(n - 1) + 0.5);
	return (double)v[i];
}

/* ---- the knapsack instance ---------------------------------------------- */

#define KP_MAXN 128

struct kp_inst {
	int n;
	long cap;
	long r;                                /* weights are 1..r */
	long w[KP_MAXN], v[KP_MAXN];           /* by value/weight, best first */
	long ws[KP_MAXN + 1], vs[KP_MAXN + 1]; /* prefix sums of w and v */
	long opt;                              /* the optimum, by dynamic programming */
	long serial_nodes;                     /* nodes the serial search expands */
};

/* A subproblem: items [0, lv) decided, weight cw and value cv taken. */
struct kp_node {
	int lv;
	long cw, cv;
};

/* The fractional bound of a node: its value plus the remaining items by
 * ratio while they fit, and the fitting fraction of the first that does
 * not (found by binary search over the prefix sums). */
static inline long kp_ub(const struct kp_inst *in, int lv, long cw, long cv)
{
	long room = in->cap - cw;
	int lo = lv, hi = in->n;

	while (lo < hi) {
		int mid = (lo + hi + 1) / 2;
		if (in->ws[mid] - in->ws[lv] <= room)
			lo = mid;
		else
			hi = mid - 1;
	}
	long ub = cv + in->vs[lo] - in->vs[lv];
	if (lo < in->n)
		ub += (room - (in->ws[lo] - in->ws[lv])) * in->v[lo] / in->w[lo];
	return ub;
}

/* Expand nd: raise *best if nd's value beats it, and push onto st the
 * children worth searching - the "skip item" child below the "take item"
 * one, so the search takes items first. Returns how many were pushed (0-2).
 * Shared by the serial and the parallel search. */
static inline int kp_expand(const struct kp_inst *in, const struct kp_node *nd, long *best,
			    struct kp_node *st)
{
	int k = 0;

	if (nd->cv > *best)
		*best = nd->cv;
	if (nd->lv == in->n || kp_ub(in, nd->lv, nd->cw, nd->cv) <= *best)
		return 0;
	if (kp_ub(in, nd->lv + 1, nd->cw, nd->cv) > *best)
		st[k++] = (struct kp_node){nd->lv + 1, nd->cw, nd->cv};
	if (nd->cw + in->w[nd->lv] <= in->cap)
		st[k++] = (struct kp_node){nd->lv + 1, nd->cw + in->w[nd->lv],
					   nd->cv + in->v[nd->lv]};
	return k;
}

/* A depth-first stack holds at most one pending sibling per level, plus
 * the children of the node being expanded. */
#define KP_STACK (KP_MAXN + 4)

/* The optimum by the same search, one thread, no queues; *nodes expanded. */
static long kp_serial(const struct kp_inst *in, long *nodes)
{
	struct kp_node st[KP_STACK];
	long best = 0, cnt = 0;
	int sp = 0;

	st[sp++] = (struct kp_node){0, 0, 0};
	while (sp > 0) {
		struct kp_node nd = st[--sp];
		cnt++;
		sp += kp_expand(in, &nd, &best, st + sp);
	}
	*nodes = cnt;
	return best;
}

/* The optimum by dynamic programming over capacities: an answer that does
 * not share the search's code. -1 if out of memory. */
static long kp_dp(const struct kp_inst *in)
{
	long *best = calloc((size_t)in->cap + 1, sizeof *best);

	if (!best)
		return -1;
	for (int i = 0; i < in->n; i++)
		for (long c = in->cap; c >= in->w[i]; c--)
			if (best[c - in->w[i]] + in->v[i] > best[c])
				best[c] = best[c - in->w[i]] + in->v[i];
	long opt = best[in->cap];
	free(best);
	return opt;
}

/* n items with weights 1..r from a fixed seed, value = weight + r/10
 * ("strongly correlated": hard for the fractional bound), capacity half
 * the total weight. */
static void kp_make(struct kp_inst *in, int n, long r)
{
	long w[KP_MAXN], v[KP_MAXN], total = 0;
	int idx[KP_MAXN];
	uint64_t x = 0x5eed5c4edull;

	memset(in, 0, sizeof *in);
	in->n = n;
	in->r = r;
	for (int i = 0; i < n; i++) {
		x = x * 6364136223846793005u + 1442695040888963407u;
		w[i] = 1 + (long)((x >> 33) % (uint64_t)r);
		v[i] = w[i] + r / 10;
		total += w[i];
		idx[i] = i;
	}
	in->cap = total / 2;
	/* by value/weight, best first; ties by index (insertion sort: stable) */
	for (int i = 1; i < n; i++) {
		int k = idx[i], j = i;
		while (j > 0 && v[idx[j - 1]] * w[k] < v[k] * w[idx[j - 1]]) {
			idx[j] = idx[j - 1];
			j--;
		}
		idx[j] = k;
	}
	for (int i = 0; i < n; i++) {
		in->w[i] = w[idx[i]];
		in->v[i] = v[idx[i]];
		in->ws[i + 1] = in->ws[i] + in->w[i];
		in->vs[i + 1] = in->vs[i] + in->v[i];
	}
	in->opt = kp_dp(in);
	kp_serial(in, &in->serial_nodes);
}

static struct kp_inst kp; /* made once by wb_sched_main */

/* ---- the parallel search ------------------------------------------------- */

#define BB_APPS      8      /* application ULTs, one work queue each */
#define BB_CHUNK     2048   /* nodes searched between two scheduling points */
#define BB_QCAP      4096   /* nodes a work queue holds (a power of two) */
#define BB_PERIOD_NS 200000 /* the communication ULTs' period */
#define BB_COMM_PRIO 50     /* their SCHED_FIFO priority where they get one */
#define BB_LATE_MAX  65536  /* lateness samples kept per communication ULT */
#define BB_SWAP_POLL 100000 /* swap: how often the main ULT counts nodes, ns */

/* A work queue: a ring of nodes. Its owner pushes and pops at the tail (a
 * stack: depth first); the balancer takes from the head, the oldest and
 * shallowest nodes, the largest subtrees. */
struct bb_queue {
	weft_mutex_t m;
	weft_cond_t more;    /* "nodes were queued, or the search is over" */
	unsigned head, tail; /* guarded by m; tail - head nodes */
	int waiting;         /* guarded by m: the owner waits on `more` */
	atomic_int len;      /* tail - head, stored under m: the balancer's scan */
	struct kp_node ring[BB_QCAP];
};

struct bb_shared;

struct bb_app {
	struct bb_queue q;
	atomic_long found; /* the best value this ULT found; written by it only */
	atomic_long bound; /* it prunes nodes not above this: its own finds and the
			      broadcasts (raised by both, never lowered) */
	atomic_long nodes; /* nodes it expanded, published once per chunk */
	long waits;        /* waits on q.more; written by it only */
	/* Nodes it expanded before [0] and after [1] the swap (one phase
	 * elsewhere), in all and on worker 0; written by it only. */
	long in_phase[2], on_w0[2];
	struct bb_shared *sh;
} __attribute__((aligned(64)));

struct bb_comm {
	struct bb_shared *sh;
	int balancer;    /* 1: balancer, 0: broadcaster */
	int64_t *late;   /* how late each wake-up was, ns */
	long nlate;      /* samples in late (at most BB_LATE_MAX) */
	long acted;      /* balancer: moves; broadcaster: bounds raised */
	long moved;      /* balancer: nodes moved */
	atomic_int exit; /* set by the main ULT once the application ULTs are joined */
};

struct bb_shared {
	const struct kp_inst *in;
	struct bb_app app[BB_APPS];
	/* Open nodes: queued, or on a private stack as of its owner's last
	 * chunk. An application ULT in the middle of a chunk counts at least
	 * the node it started from, so the count is 0 only when the search
	 * is over. */
	atomic_long pending;
	atomic_int done;  /* set once: the search is over (or failed) */
	atomic_int phase; /* swap: 1 once the main ULT has installed prio */
	atomic_int err;   /* the first error of a weft call, 0 if none */
};

static void max_into(atomic_long *a, long v)
{
	long cur = atomic_load_explicit(a, memory_order_relaxed);
	while (cur < v && !atomic_compare_exchange_weak_explicit(a, &cur, v, memory_order_relaxed,
								 memory_order_relaxed))
		;
}

static void bb_fail(struct bb_shared *sh, int rc)
{
	int zero = 0;
	atomic_compare_exchange_strong(&sh->err, &zero, rc);
}

/* The search is over (or failed): wake every application ULT. Each queue's
 * lock is taken, so that an owner that found `done` clear under it is
 * already waiting when the broadcast comes. */
static void bb_finish(struct bb_shared *sh)
{
	atomic_store(&sh->done, 1);
	for (int i = 0; i < BB_APPS; i++) {
		struct bb_queue *q = &sh->app[i].q;
		if (weft_mutex_lock(&q->m) == 0) {
			weft_cond_broadcast(&q->more);
			weft_mutex_unlock(&q->m);
		}
	}
}

static void *bb_app_main(void *p)
{
	struct bb_app *a = p;
	struct bb_shared *sh = a->sh;
	const struct kp_inst *in = sh->in;
	struct bb_queue *q = &a->q;
	struct kp_node st[KP_STACK];
	long best = 0, nodes = 0;
	int sp = 0, rc;

	for (;;) {
		if (sp == 0) {
			if ((rc = weft_mutex_lock(&q->m)) != 0) {
				bb_fail(sh, rc);
				bb_finish(sh);
				break;
			}
			while (q->tail == q->head && !atomic_load(&sh->done)) {
				q->waiting = 1;
				a->waits++;
				rc = weft_cond_wait(&q->more, &q->m);
				q->waiting = 0;
				if (rc) {
					bb_fail(sh, rc);
					break;
				}
			}
			if (q->tail == q->head || atomic_load(&sh->err)) {
				weft_mutex_unlock(&q->m);
				break;
			}
			st[sp++] = q->ring[--q->tail & (BB_QCAP - 1)];
			atomic_store_explicit(&q->len, (int)(q->tail - q->head),
					      memory_order_relaxed);
			weft_mutex_unlock(&q->m);
		}

		long b = atomic_load_explicit(&a->bound, memory_order_relaxed), delta = 0;
		long before_chunk = nodes;
		if (b > best)
			best = b;
		for (int k = 0; k < BB_CHUNK && sp > 0; k++) {
			struct kp_node nd = st[--sp];
			long before = best;
			int c = kp_expand(in, &nd, &best, st + sp);
			sp += c;
			delta += c - 1;
			nodes++;
			if (best > before) {
				atomic_store_explicit(&a->found, best, memory_order_relaxed);
				max_into(&a->bound, best);
			}
		}
		atomic_store_explicit(&a->nodes, nodes, memory_order_relaxed);
		int ph = atomic_load_explicit(&sh->phase, memory_order_relaxed);
		a->in_phase[ph] += nodes - before_chunk;
		if (weft_worker_id() == 0)
			a->on_w0[ph] += nodes - before_chunk;
		/* sp == 0 exactly when delta == -1: the chunk closed its subtree. */
		if (atomic_fetch_add(&sh->pending, delta) + delta == 0) {
			bb_finish(sh);
			break;
		}
		if (sp > 0 && (rc = weft_mutex_lock(&q->m)) == 0) {
			/* Spill the stack, bottom (shallowest) first; if the queue
			 * is too full, keep searching it here. */
			if (BB_QCAP - (q->tail - q->head) >= (unsigned)sp) {
				for (int i = 0; i < sp; i++)
					q->ring[q->tail++ & (BB_QCAP - 1)] = st[i];
				sp = 0;
				atomic_store_explicit(&q->len, (int)(q->tail - q->head),
						      memory_order_relaxed);
			}
			weft_mutex_unlock(&q->m);
		} else if (sp > 0) {
			bb_fail(sh, rc);
			bb_finish(sh);
			break;
		}
		if (atomic_load_explicit(&sh->err, memory_order_relaxed))
			break;
		weft_yield();
	}
	return NULL;
}

/* One balancing pass: up to BB_APPS/2 disjoint pairs, each time the longest
 * and the shortest queue not yet paired; half of the difference moves from
 * the long queue's head to the short queue's tail. */
static void bb_balance(struct bb_comm *c)
{
	struct bb_shared *sh = c->sh;
	int paired[BB_APPS] = {0};

	for (int round = 0; round < BB_APPS / 2; round++) {
		int lo = -1, hi = -1, lo_len = 0, hi_len = 0;
		for (int i = 0; i < BB_APPS; i++) {
			if (paired[i])
				continue;
			int l = atomic_load_explicit(&sh->app[i].q.len, memory_order_relaxed);
			if (lo < 0 || l < lo_len)
				lo = i, lo_len = l;
			if (hi < 0 || l > hi_len)
				hi = i, hi_len = l;
		}
		if (lo < 0 || lo == hi || hi_len < 2 * lo_len + 2)
			return;
		paired[lo] = paired[hi] = 1;
		struct bb_queue *from = &sh->app[hi].q, *to = &sh->app[lo].q;
		/* Application ULTs hold one queue lock at a time; the balancer
		 * takes two, in index order. */
		struct bb_queue *first = lo < hi ? to : from, *second = lo < hi ? from : to;
		int rc = weft_mutex_lock(&first->m);
		if (rc || (rc = weft_mutex_lock(&second->m)) != 0) {
			if (!rc)
				weft_mutex_unlock(&first->m);
			bb_fail(sh, rc);
			return;
		}
		unsigned fl = from->tail - from->head, tl = to->tail - to->head;
		unsigned k = fl >= 2 * tl + 2 ? (fl - tl) / 2 : 0;
		if (k > BB_QCAP - tl)
			k = BB_QCAP - tl;
		for (unsigned i = 0; i < k; i++)
			to->ring[to->tail++ & (BB_QCAP - 1)] =
				from->ring[from->head++ & (BB_QCAP - 1)];
		atomic_store_explicit(&from->len, (int)(from->tail - from->head),
				      memory_order_relaxed);
		atomic_store_explicit(&to->len, (int)(to->tail - to->head), memory_order_relaxed);
		if (k > 0 && to->waiting)
			weft_cond_signal(&to->more);
		weft_mutex_unlock(&second->m);
		weft_mutex_unlock(&first->m);
		if (k > 0) {
			c->acted++;
			c->moved += k;
		}
	}
}

/* The best value found by anyone goes into every application ULT's bound. */
static void bb_broadcast(struct bb_comm *c)
{
	struct bb_shared *sh = c->sh;
	long best = 0;

	for (int i = 0; i < BB_APPS; i++) {
		long f = atomic_load_explicit(&sh->app[i].found, memory_order_relaxed);
		best = f > best ? f : best;
	}
	for (int i = 0; i < BB_APPS; i++) {
		if (atomic_load_explicit(&sh->app[i].bound, memory_order_relaxed) < best) {
			max_into(&sh->app[i].bound, best);
			c->acted++;
		}
	}
}

/* A communication ULT: every BB_PERIOD_NS, one pass; records how late each
 * wake-up was (from the sleep's end to running again). */
static void *bb_comm_main(void *p)
{
	struct bb_comm *c = p;
	struct bb_shared *sh = c->sh;

	while (!atomic_load(&sh->done) && !atomic_load(&c->exit)) {
		int64_t t0 = wb_now_ns();
		int rc = weft_sleep_ns(BB_PERIOD_NS);
		int64_t late = wb_now_ns() - t0 - BB_PERIOD_NS;
		if (rc) {
			bb_fail(sh, rc);
			bb_finish(sh);
			break;
		}
		if (c->nlate < BB_LATE_MAX)
			c->late[c->nlate++] = late;
		if (atomic_load(&sh->done))
			break;
		if (c->balancer)
			bb_balance(c);
		else
			bb_broadcast(c);
	}
	return NULL;
}

/* The configurations of the bnb_knapsack rows. */
enum bb_place {
	BB_ANY,       /* application ULTs unbound */
	BB_NOT_W0,    /* application ULT i bound to worker 1 + i mod (workers - 1) */
	BB_ROUND_ALL, /* application ULT i bound to worker i mod workers */
};

static const struct bb_config {
	const char *system;
	const char *scheds; /* the weft_config_t.scheds spec */
	int place;          /* enum bb_place */
	int comm_prio;      /* the comm ULTs are SCHED_FIFO BB_COMM_PRIO from the start */
	int swap;           /* install prio on worker 0 half-way, then give them that */
	const char *where;
} bb_configs[] = {
	{"uniform", "steal", BB_ANY, 0, 0, "any"},
	{"mixed", "share,prio:0", BB_NOT_W0, 1, 0, "apps on w1+"},
	{"mixed-all", "share,prio:0", BB_ROUND_ALL, 1, 0, "apps on all"},
	{"swap", "steal", BB_ANY, 0, 1, "any"},
};
#define BB_NCONFIGS NCASES(bb_configs)

static int64_t bb_late[2][BB_LATE_MAX];

/* Create a ULT bound to `worker` (-1: unbound), SCHED_FIFO prio if prio > 0. */
static int bb_create(weft_t *t, int worker, int prio, const char *name, void *(*fn)(void *),
		     void *arg)
{
	weft_attr_t a;
	int rc = weft_attr_init(&a);

	if (!rc && worker >= 0)
		rc = weft_attr_setworker(&a, worker);
	if (!rc && prio > 0)
		rc = weft_attr_setschedparam(&a, SCHED_FIFO, prio);
	if (!rc)
		rc = weft_attr_setname(&a, name);
	if (!rc)
		rc = weft_create(t, &a, fn, arg);
	weft_attr_destroy(&a);
	return rc;
}

/* One search (the main ULT's body inside a session); the value is ms. */
static int bb_body(const wb_case_t *c, long n, wb_sample_t *s)
{
	const struct bb_config *k = &bb_configs[c->iarg[0]];
	static struct bb_shared sh;
	static struct bb_comm comm[2];
	weft_t app_t[BB_APPS], comm_t[2];
	int nw = weft_num_workers(), apps_made = 0, comm_made = 0, rc = 0;
	int64_t swap_ns = -1, install_ns = -1;

	if (k->place == BB_NOT_W0 && nw < 2) {
		ERR(s,
		    "skipped: needs 2 workers (worker 0 runs only the communication ULTs), "
		    "weft has %d",
		    nw);
		return EINVAL;
	}
	memset(&sh, 0, sizeof sh);
	sh.in = &kp;
	for (int i = 0; i < BB_APPS; i++) {
		struct bb_app *a = &sh.app[i];
		a->sh = &sh;
		if ((rc = weft_mutex_init(&a->q.m, NULL)) != 0 ||
		    (rc = weft_cond_init(&a->q.more, NULL)) != 0) {
			ERR(s, "weft_mutex_init/weft_cond_init: %s", strerror(rc));
			return rc;
		}
	}
	sh.app[0].q.ring[0] = (struct kp_node){0, 0, 0};
	sh.app[0].q.tail = 1;
	atomic_store(&sh.app[0].q.len, 1);
	atomic_store(&sh.pending, 1);
	for (int j = 0; j < 2; j++) {
		memset(&comm[j], 0, sizeof comm[j]);
		comm[j].sh = &sh;
		comm[j].balancer = j == 0;
		comm[j].late = bb_late[j];
	}

	int64_t t0 = wb_now_ns();
	for (int j = 0; j < 2 && !rc; j++) {
		rc = bb_create(&comm_t[j], 0, k->comm_prio ? BB_COMM_PRIO : 0,
			       j == 0 ? "balancer" : "broadcaster", bb_comm_main, &comm[j]);
		if (rc)
			ERR(s, "weft_create (communication ULT): %s", strerror(rc));
		else
			comm_made++;
	}
	for (int i = 0; i < BB_APPS && !rc; i++) {
		int w = k->place == BB_NOT_W0      ? 1 + i % (nw - 1)
			: k->place == BB_ROUND_ALL ? i % nw
						   : -1;
		char name[16];
		snprintf(name, sizeof name, "app%d", i);
		rc = bb_create(&app_t[i], w, 0, name, bb_app_main, &sh.app[i]);
		if (rc)
			ERR(s, "weft_create (application ULT %d): %s", i, strerror(rc));
		else
			apps_made++;
	}
	if (rc) {
		bb_fail(&sh, rc);
		bb_finish(&sh);
	}

	/* swap: the main ULT counts nodes; at half of what the serial search
	 * expands, worker 0 gets prio and the communication ULTs their
	 * priority. */
	while (!rc && k->swap && !atomic_load(&sh.done)) {
		long total = 0;
		weft_sleep_ns(BB_SWAP_POLL);
		for (int i = 0; i < BB_APPS; i++)
			total += atomic_load_explicit(&sh.app[i].nodes, memory_order_relaxed);
		if (total < kp.serial_nodes / 2)
			continue;
		int64_t t1 = wb_now_ns();
		swap_ns = t1 - t0;
		rc = weft_sched_install(0, &weft_sched_prio, NULL);
		install_ns = wb_now_ns() - t1;
		if (rc) {
			ERR(s, "weft_sched_install(0, prio): %s", strerror(rc));
			bb_fail(&sh, rc);
			bb_finish(&sh);
			break;
		}
		for (int j = 0; j < 2 && !rc; j++)
			if ((rc = weft_setschedparam(comm_t[j], SCHED_FIFO, BB_COMM_PRIO)) != 0) {
				ERR(s, "weft_setschedparam(SCHED_FIFO %d): %s", BB_COMM_PRIO,
				    strerror(rc));
				bb_fail(&sh, rc);
				bb_finish(&sh);
			}
		atomic_store(&sh.phase, 1);
		break;
	}

	for (int i = 0; i < apps_made; i++) {
		int jrc = weft_join(app_t[i], NULL);
		if (jrc && !rc) {
			ERR(s, "weft_join: %s", strerror(jrc));
			rc = jrc;
		}
	}
	/* Every application ULT is gone, so the search is over (or failed)
	 * and done is set; the communication ULTs see it within a period. */
	for (int j = 0; j < 2; j++)
		atomic_store(&comm[j].exit, 1);
	for (int j = 0; j < comm_made; j++) {
		int jrc = weft_join(comm_t[j], NULL);
		if (jrc && !rc) {
			ERR(s, "weft_join: %s", strerror(jrc));
			rc = jrc;
		}
	}
	s->elapsed_ns = (double)(wb_now_ns() - t0);
	if (!rc && (rc = atomic_load(&sh.err)) != 0)
		ERR(s, "a weft call in the search: %s", strerror(rc));
	for (int i = 0; i < BB_APPS; i++) {
		weft_cond_destroy(&sh.app[i].q.more);
		weft_mutex_destroy(&sh.app[i].q.m);
	}
	if (rc)
		return rc;

	long best = 0, nodes = 0, waits = 0, in_phase[2] = {0}, on_w0[2] = {0};
	for (int i = 0; i < BB_APPS; i++) {
		long f = atomic_load(&sh.app[i].found);
		best = f > best ? f : best;
		nodes += atomic_load(&sh.app[i].nodes);
		waits += sh.app[i].waits;
		for (int ph = 0; ph < 2; ph++) {
			in_phase[ph] += sh.app[i].in_phase[ph];
			on_w0[ph] += sh.app[i].on_w0[ph];
		}
	}
	if (best != kp.opt) {
		ERR(s, "WRONG OPTIMUM: found %ld, dynamic programming says %ld", best, kp.opt);
		return EDOM;
	}
	/* The lateness of both communication ULTs' wake-ups, in us. */
	static int64_t late[2 * BB_LATE_MAX];
	long nl = 0;
	for (int j = 0; j < 2; j++) {
		memcpy(late + nl, comm[j].late, (size_t)comm[j].nlate * sizeof late[0]);
		nl += comm[j].nlate;
	}
	s->value = s->elapsed_ns / 1e6;
	wb_sample_extra(s, "optimum", (double)best);
	wb_sample_extra(s, "nodes", (double)nodes);
	wb_sample_extra(s, "moves", (double)comm[0].acted);
	wb_sample_extra(s, "moved_nodes", (double)comm[0].moved);
	wb_sample_extra(s, "bound_raises", (double)comm[1].acted);
	wb_sample_extra(s, "app_waits", (double)waits);
	wb_sample_extra(s, "comm_late_med_us", quantile(late, nl, 0.5) / 1e3);
	wb_sample_extra(s, "comm_late_p99_us", quantile(late, nl, 0.99) / 1e3);
	wb_sample_extra(s, "w0_nodes_pct", 100.0 * (double)(on_w0[0] + on_w0[1]) / (double)nodes);
	if (k->swap) {
		wb_sample_extra(s, "w0_after_swap_pct",
				in_phase[1] ? 100.0 * (double)on_w0[1] / (double)in_phase[1] : NAN);
		wb_sample_extra(s, "swapped", swap_ns >= 0);
		wb_sample_extra(s, "swap_at_ms", swap_ns >= 0 ? (double)swap_ns / 1e6 : NAN);
		wb_sample_extra(s, "install_us", install_ns >= 0 ? (double)install_ns / 1e3 : NAN);
	}
	return 0;
}

static int bb_session(const wb_case_t *c, long n, wb_sample_t *s)
{
	return session(c, bb_configs[c->iarg[0]].scheds, 0, 0, n, s);
}

static int bb_serial_run(const wb_case_t *c, long n, wb_sample_t *s)
{
	long nodes = 0;
	int64_t t0 = wb_now_ns();
	long best = kp_serial(&kp, &nodes);

	s->elapsed_ns = (double)(wb_now_ns() - t0);
	if (best != kp.opt) {
		ERR(s, "WRONG OPTIMUM: serial search found %ld, dynamic programming says %ld", best,
		    kp.opt);
		return EDOM;
	}
	s->value = s->elapsed_ns / 1e6;
	wb_sample_extra(s, "optimum", (double)best);
	wb_sample_extra(s, "nodes", (double)nodes);
	return 0;
}

/* ---- wake_latency -------------------------------------------------------- */

#define LAT_LOW     64   /* SCHED_OTHER threads that stay ready */
#define LAT_WORK_NS 1000 /* each computes this long between two yields */
#define LAT_PRIO    50   /* the woken thread's SCHED_FIFO priority */

/* The high thread sets `waiting` and sleeps on the semaphore; the first
 * low thread to see `waiting` (an exchange: one poster per wake) stores
 * the time and posts, half-way through its LAT_WORK_NS; the high thread,
 * running again, records now - t_post. Low threads stop at `stop`, at the
 * deadline or after max_iters; the high thread after `want` wakes. Shared
 * by the weft and the pthread runs. */
struct lat_shared {
	atomic_int waiting, stop, err;
	int64_t t_post; /* written by the poster before its post; read by the high
			    thread after its wait */
	int64_t *lat;   /* want samples */
	long want, got; /* written by the high thread */
	int64_t deadline;
	atomic_long posts;
};

#define LAT_MAX_ITERS 100000000L

static void busy_ns(int64_t ns)
{
	int64_t end = wb_now_ns() + ns;
	while (wb_now_ns() < end)
		;
}

static void lat_stats(struct lat_shared *L, wb_sample_t *s)
{
	s->value = quantile(L->lat, L->got, 0.5);
	wb_sample_extra(s, "wakes", (double)L->got);
	wb_sample_extra(s, "wake_min_ns", (double)L->lat[0]);
	wb_sample_extra(s, "wake_p99_ns", quantile(L->lat, L->got, 0.99));
	wb_sample_extra(s, "wake_max_ns", (double)L->lat[L->got - 1]);
}

static struct lat_shared lat;
static weft_sem_t lat_wsem;

static void *lat_weft_high(void *p)
{
	struct lat_shared *L = p;

	while (L->got < L->want) {
		atomic_store(&L->waiting, 1);
		int rc = weft_sem_wait(&lat_wsem);
		int64_t t = wb_now_ns();
		if (rc) {
			atomic_store(&L->err, rc);
			break;
		}
		if (atomic_load(&L->stop))
			break;
		L->lat[L->got++] = t - L->t_post;
	}
	atomic_store(&L->stop, 1);
	return NULL;
}

static void *lat_weft_low(void *p)
{
	struct lat_shared *L = p;

	for (long it = 0;
	     it < LAT_MAX_ITERS && !atomic_load_explicit(&L->stop, memory_order_relaxed); it++) {
		busy_ns(LAT_WORK_NS / 2);
		if (atomic_load_explicit(&L->waiting, memory_order_relaxed) &&
		    atomic_exchange(&L->waiting, 0)) {
			L->t_post = wb_now_ns();
			atomic_fetch_add_explicit(&L->posts, 1, memory_order_relaxed);
			int rc = weft_sem_post(&lat_wsem);
			if (rc) {
				atomic_store(&L->err, rc);
				atomic_store(&L->stop, 1);
			}
		}
		busy_ns(LAT_WORK_NS / 2);
		if (wb_now_ns() > L->deadline)
			break;
		weft_yield();
	}
	return NULL;
}

static long lat_limit_ns(const wb_opts_t *o)
{
	return o->quick ? 1000000000L : 3000000000L;
}

/* n wakes on one worker; the value is the median wake-to-run latency, ns. */
static int lat_weft_body(const wb_case_t *c, long n, wb_sample_t *s)
{
	static int64_t samples[100000];
	weft_t hi, lo[LAT_LOW];
	weft_attr_t a;
	int made = 0, rc;

	if (n > NCASES(samples))
		n = NCASES(samples);
	memset(&lat, 0, sizeof lat);
	lat.lat = samples;
	lat.want = n;
	lat.deadline = wb_now_ns() + lat_limit_ns(c->opts);
	if ((rc = weft_sem_init(&lat_wsem, 0, 0)) != 0) {
		ERR(s, "weft_sem_init: %s", strerror(rc));
		return rc;
	}
	int64_t t0 = wb_now_ns();
	weft_attr_init(&a);
	rc = weft_attr_setschedparam(&a, SCHED_FIFO, LAT_PRIO);
	if (!rc)
		rc = weft_create(&hi, &a, lat_weft_high, &lat);
	weft_attr_destroy(&a);
	if (rc) {
		ERR(s, "weft_create (SCHED_FIFO %d): %s", LAT_PRIO, strerror(rc));
		return rc;
	}
	for (; made < LAT_LOW; made++) {
		if ((rc = weft_create(&lo[made], NULL, lat_weft_low, &lat)) != 0) {
			ERR(s, "weft_create: %s (after %d)", strerror(rc), made);
			atomic_store(&lat.stop, 1);
			break;
		}
	}
	for (int i = 0; i < made; i++)
		weft_join(lo[i], NULL);
	/* Every low ULT is gone: release the high one if it still waits. */
	atomic_store(&lat.stop, 1);
	weft_sem_post(&lat_wsem);
	weft_join(hi, NULL);
	s->elapsed_ns = (double)(wb_now_ns() - t0);
	weft_sem_destroy(&lat_wsem);
	if (rc)
		return rc;
	if ((rc = atomic_load(&lat.err)) != 0) {
		ERR(s, "weft_sem_wait/post: %s", strerror(rc));
		return rc;
	}
	if (lat.got == 0) {
		ERR(s, "no wake-up in %.1f s", (double)lat_limit_ns(c->opts) / 1e9);
		return ETIMEDOUT;
	}
	lat_stats(&lat, s);
	return 0;
}

static const struct lat_config {
	const char *system, *scheds;
} lat_configs[] = {
	{"weft-prio", "prio"},
	{"weft-steal", "steal"},
	{"weft-share", "share"},
};

/* One worker, pinned (unless --pin 0), as the pthread run is. */
static int lat_session(const wb_case_t *c, long n, wb_sample_t *s)
{
	return session(c, lat_configs[c->iarg[0]].scheds, 1, c->opts->pin == 0 ? -1 : 1, n, s);
}

/* The pthread twin: the process pinned to one CPU, the high thread
 * SCHED_FIFO (if the kernel lets it), the low ones SCHED_OTHER calling
 * sched_yield. Only the high thread is real-time and it sleeps except to
 * record a wake; every wait has the deadline. */
static sem_t lat_psem;
static atomic_int lat_fifo_rc, lat_fifo_ready;

static void *lat_pt_high(void *p)
{
	struct lat_shared *L = p;
	struct sched_param sp = {.sched_priority = LAT_PRIO};
	int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);

	atomic_store(&lat_fifo_rc, rc);
	atomic_store(&lat_fifo_ready, 1);
	if (rc)
		return NULL;
	struct timespec until = {.tv_sec = (L->deadline + 100000000) / 1000000000,
				 .tv_nsec = (L->deadline + 100000000) % 1000000000};
	while (L->got < L->want) {
		atomic_store(&L->waiting, 1);
		int r = sem_clockwait(&lat_psem, CLOCK_MONOTONIC, &until);
		int64_t t = wb_now_ns();
		if (r != 0) {
			if (errno == EINTR)
				continue;
			if (errno != ETIMEDOUT)
				atomic_store(&L->err, errno);
			break;
		}
		if (atomic_load(&L->stop))
			break;
		L->lat[L->got++] = t - L->t_post;
	}
	atomic_store(&L->stop, 1);
	return NULL;
}

static void *lat_pt_low(void *p)
{
	struct lat_shared *L = p;

	for (long it = 0;
	     it < LAT_MAX_ITERS && !atomic_load_explicit(&L->stop, memory_order_relaxed); it++) {
		busy_ns(LAT_WORK_NS / 2);
		if (atomic_load_explicit(&L->waiting, memory_order_relaxed) &&
		    atomic_exchange(&L->waiting, 0)) {
			L->t_post = wb_now_ns();
			atomic_fetch_add_explicit(&L->posts, 1, memory_order_relaxed);
			sem_post(&lat_psem);
		}
		busy_ns(LAT_WORK_NS / 2);
		if (wb_now_ns() > L->deadline)
			break;
		sched_yield();
	}
	return NULL;
}

static int lat_pthread(const wb_case_t *c, long n, wb_sample_t *s)
{
	static int64_t samples[100000];
	pthread_t hi, lo[LAT_LOW];
	pthread_attr_t a;
	cpu_set_t one;
	int made = 0, rc, cpu = wb_cpu(0);

	if (n > NCASES(samples))
		n = NCASES(samples);
	memset(&lat, 0, sizeof lat);
	lat.lat = samples;
	lat.want = n;
	lat.deadline = wb_now_ns() + lat_limit_ns(c->opts);
	atomic_store(&lat_fifo_rc, 0);
	atomic_store(&lat_fifo_ready, 0);
	CPU_ZERO(&one);
	CPU_SET(cpu < 0 ? 0 : cpu, &one);
	if (sched_setaffinity(0, sizeof one, &one) != 0) {
		ERR(s, "sched_setaffinity(CPU %d): %s", cpu, strerror(errno));
		return errno;
	}
	if (sem_init(&lat_psem, 0, 0) != 0) {
		rc = errno;
		wb_affinity_restore();
		ERR(s, "sem_init: %s", strerror(rc));
		return rc;
	}
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	int64_t t0 = wb_now_ns();
	rc = pthread_create(&hi, &a, lat_pt_high, &lat);
	if (rc) {
		pthread_attr_destroy(&a);
		sem_destroy(&lat_psem);
		wb_affinity_restore();
		ERR(s, "pthread_create: %s", strerror(rc));
		return rc;
	}
	while (!atomic_load(&lat_fifo_ready) && wb_now_ns() < lat.deadline)
		sched_yield();
	if ((rc = atomic_load(&lat_fifo_rc)) != 0 || !atomic_load(&lat_fifo_ready)) {
		atomic_store(&lat.stop, 1);
		sem_post(&lat_psem);
		pthread_join(hi, NULL);
		pthread_attr_destroy(&a);
		sem_destroy(&lat_psem);
		wb_affinity_restore();
		if (rc == EPERM)
			ERR(s, "not permitted: pthread_setschedparam(SCHED_FIFO %d): EPERM",
			    LAT_PRIO);
		else
			ERR(s, "pthread_setschedparam(SCHED_FIFO %d): %s", LAT_PRIO,
			    strerror(rc ? rc : ETIMEDOUT));
		return rc ? rc : ETIMEDOUT;
	}
	for (; made < LAT_LOW; made++) {
		if ((rc = pthread_create(&lo[made], &a, lat_pt_low, &lat)) != 0) {
			ERR(s, "pthread_create: %s (after %d)", strerror(rc), made);
			atomic_store(&lat.stop, 1);
			break;
		}
	}
	for (int i = 0; i < made; i++)
		pthread_join(lo[i], NULL);
	atomic_store(&lat.stop, 1);
	sem_post(&lat_psem);
	pthread_join(hi, NULL);
	s->elapsed_ns = (double)(wb_now_ns() - t0);
	pthread_attr_destroy(&a);
	sem_destroy(&lat_psem);
	wb_affinity_restore();
	if (rc)
		return rc;
	if ((rc = atomic_load(&lat.err)) != 0) {
		ERR(s, "sem_clockwait: %s", strerror(rc));
		return rc;
	}
	if (lat.got == 0) {
		ERR(s, "no wake-up in %.1f s", (double)lat_limit_ns(c->opts) / 1e9);
		return ETIMEDOUT;
	}
	lat_stats(&lat, s);
	return 0;
}

/* ---- the table ------------------------------------------------------------ */

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

int wb_sched_main(const wb_opts_t *o)
{
	wb_machine_t m;
	wb_report_t r = {.json = o->json, .subcommand = "sched"};
	char weft_desc[256], place[640], trials_desc[160], sizes[320];
	weft_config_t cfg;
	int nworkers, pin, wrong = 0;
	int kp_n = o->quick ? 80 : 86;
	long kp_r = 100000, wakes = o->quick ? 200 : 1000;

	wb_affinity_save();
	wb_machine_probe(&m);
	weft_config_init(&cfg);
	nworkers = o->workers > 0 ? o->workers : cfg.workers;
	pin = o->pin >= 0 ? o->pin : cfg.pin == 1;
	kp_make(&kp, kp_n, kp_r);

	snprintf(weft_desc, sizeof weft_desc,
		 "weft %s, %d workers, workers pinned to CPUs: %s (wake_latency: 1 worker, "
		 "pinned unless --pin 0); each row sets its own schedulers (WEFT_SCHED is not "
		 "used)",
		 WEFT_VERSION_STRING, nworkers, pin == 1 ? "yes" : "no");
	snprintf(place, sizeof place,
		 "bnb_knapsack: %d application ULTs (uniform, swap: unbound; mixed: bound to "
		 "workers 1..%d round robin; mixed-all: bound to workers 0..%d round robin), "
		 "2 communication ULTs bound to worker 0 in every row. wake_latency: weft on "
		 "1 worker; pthread: the process pinned to CPU %d",
		 BB_APPS, nworkers - 1, nworkers - 1, wb_cpu(0));
	snprintf(trials_desc, sizeof trials_desc,
		 "%d after 1 warm-up, systems alternating within each trial", o->trials);
	snprintf(sizes, sizeof sizes,
		 "knapsack: %d items, weights 1..%ld, capacity %ld, optimum %ld (dynamic "
		 "programming), serial search %ld nodes; comm period %d us, chunk %d nodes; "
		 "wake_latency: %ld wakes, %d ready SCHED_OTHER threads computing %d ns between "
		 "yields%s",
		 kp.n, kp.r, kp.cap, kp.opt, kp.serial_nodes, BB_PERIOD_NS / 1000, BB_CHUNK, wakes,
		 LAT_LOW, LAT_WORK_NS, o->quick ? " (--quick)" : "");
	const char *keys[] = {"weft", "placement", "trials", "sizes"};
	const char *vals[] = {weft_desc, place, trials_desc, sizes};
	wb_report_begin(&r, &m, keys, vals, 4);

	/* branch and bound, one row per scheduler configuration */
	if (wb_selected_bench(o, "bnb_knapsack")) {
		static char notes[BB_NCONFIGS][160];
		wb_case_t cases[BB_NCONFIGS + 1];
		for (int i = 0; i < BB_NCONFIGS; i++) {
			const struct bb_config *k = &bb_configs[i];
			snprintf(notes[i], sizeof notes[i], "%s%s; comm %s", k->scheds,
				 k->swap ? " -> prio:0" : "",
				 k->comm_prio ? "FIFO 50"
				 : k->swap    ? "OTHER -> FIFO 50"
					      : "OTHER");
			cases[i] = (wb_case_t){.system = k->system,
					       .placement = k->where,
					       .run = bb_session,
					       .inner = bb_body,
					       .weft = 1,
					       .n = kp.n,
					       .no_ratio = 1,
					       .opts = o,
					       .note = notes[i],
					       .iarg = {i}};
		}
		cases[BB_NCONFIGS] = (wb_case_t){.system = "serial-c",
						 .placement = "main thread",
						 .run = bb_serial_run,
						 .n = kp.n,
						 .no_ratio = 1,
						 .opts = o,
						 .note = "the same search, one thread, no queues"};
		wb_group_t g = {"bnb_knapsack", "ms", cases, NCASES(cases)};
		wb_row_t rows[NCASES(cases)];
		wb_run_group(o, &g, rows);
		wb_row_t *uni = find(rows, g.ncases, "uniform");
		wb_row_t *ser = find(rows, g.ncases, "serial-c");
		for (int i = 0; i < g.ncases; i++) {
			wb_row_t *w = &rows[i];
			if (!w->system)
				continue;
			if (strstr(w->error, "WRONG OPTIMUM"))
				wrong++;
			if (w->error[0])
				continue;
			wb_row_note(w, "optimum %.0f; %.3gM nodes", wb_row_get_extra(w, "optimum"),
				    wb_row_get_extra(w, "nodes") / 1e6);
			if (i < BB_NCONFIGS) {
				wb_row_note(
					w,
					"%.0f moves; comm late %.0f/%.0f us (median/p99); w0 ran "
					"%.0f%% of nodes",
					wb_row_get_extra(w, "moves"),
					wb_row_get_extra(w, "comm_late_med_us"),
					wb_row_get_extra(w, "comm_late_p99_us"),
					wb_row_get_extra(w, "w0_nodes_pct"));
				if (uni && w != uni) {
					wb_row_extra(w, "vs_uniform", w->median / uni->median);
					wb_row_note(w, "%.3gx uniform", w->median / uni->median);
				}
				if (bb_configs[i].swap)
					wb_row_note(w,
						    "swap at %.0f ms, install %.0f us, then w0 ran "
						    "%.0f%%%s",
						    wb_row_get_extra(w, "swap_at_ms"),
						    wb_row_get_extra(w, "install_us"),
						    wb_row_get_extra(w, "w0_after_swap_pct"),
						    wb_row_get_extra(w, "swapped") < 1
							    ? " (not in every run)"
							    : "");
			}
			if (ser && w != ser) {
				wb_row_extra(w, "speedup_vs_serial", ser->median / w->median);
				wb_row_note(w, "speedup %.2f", ser->median / w->median);
			}
		}
		emit(&r, rows, g.ncases);
	}

	/* wake-up latency of a high-priority thread among 64 ready ones */
	if (wb_selected_bench(o, "wake_latency")) {
		static char wnote[3][96];
		wb_case_t cases[NCASES(lat_configs) + 1];
		for (int i = 0; i < NCASES(lat_configs); i++) {
			snprintf(wnote[i], sizeof wnote[i],
				 "scheds \"%s\"; 1 SCHED_FIFO 50 ULT woken by weft_sem_post",
				 lat_configs[i].scheds);
			cases[i] = (wb_case_t){.system = lat_configs[i].system,
					       .placement = "worker 0",
					       .run = lat_session,
					       .inner = lat_weft_body,
					       .weft = 1,
					       .n = wakes,
					       .opts = o,
					       .note = wnote[i],
					       .iarg = {i}};
		}
		static char pplace[32];
		snprintf(pplace, sizeof pplace, "CPU %d", wb_cpu(0));
		cases[NCASES(lat_configs)] =
			(wb_case_t){.system = "pthread-fifo",
				    .placement = pplace,
				    .run = lat_pthread,
				    .n = wakes,
				    .ref = WB_REF_PTHREAD,
				    .opts = o,
				    .note = "1 SCHED_FIFO 50 kernel thread woken by sem_post"};
		wb_group_t g = {"wake_latency", "ns", cases, NCASES(cases)};
		wb_row_t rows[NCASES(cases)];
		wb_run_group(o, &g, rows);
		for (int i = 0; i < g.ncases; i++) {
			wb_row_t *w = &rows[i];
			if (!w->system || w->error[0])
				continue;
			wb_row_note(
				w,
				"per wake: min %.0f, p99 %.0f, max %.0f ns (medians over trials)",
				wb_row_get_extra(w, "wake_min_ns"),
				wb_row_get_extra(w, "wake_p99_ns"),
				wb_row_get_extra(w, "wake_max_ns"));
		}
		emit(&r, rows, g.ncases);
	}

	wb_report_footer(
		&r,
		"\nmedian [min, max] over the trials. bnb_knapsack: wall time from the first "
		"create to the last join; nodes and moves are medians over the trials (the work "
		"varies with when good bounds arrive); comm late = how long after its sleep "
		"ended a communication ULT ran. wake_latency: the median over one run's wakes "
		"of post-to-run time, then median [min, max] of that over the trials; vs pthread "
		"= median / pthread-fifo's.\n");
	if (wrong)
		wb_report_footer(&r, "bnb_knapsack: %d row%s found a WRONG OPTIMUM\n", wrong,
				 wrong == 1 ? "" : "s");
	wb_report_end(&r);
	return wrong ? 1 : 0;
}
