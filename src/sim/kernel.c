/* The discrete-event kernel: threads, the ready queue, delta and timed
 * cycles, par, events and waitfor (seed 000 §1.2.1, Fig. 3-5).
 *
 * Scheduling is done by the thread that stops running. When a thread leaves
 * RUN (it waits, calls par or returns), it runs dispatch() itself, under the
 * kernel lock in parallel mode:
 *
 *   1. Move READY threads to RUN, in queue order, while fewer than simcpus
 *      threads run.
 *   2. If none runs now and none is READY, the current cycle is over:
 *      a delta cycle makes the waiters of every notified event READY, else
 *      a timed cycle advances time to the earliest waitfor and makes those
 *      threads READY; then back to 1. With neither, the simulation is
 *      deadlocked (EDEADLK).
 *
 * and then, with the lock released, Goes every thread it moved to RUN and
 * Waits itself - handing its CPU straight to the last of them
 * (backend->switch_to), so that a user-level backend pays one context switch
 * per hand-off and a parallel one keeps a lone successor on the same core
 * (seed 000 §2.4.4). A thread that finds itself READY again in step 1 just
 * continues. Cycles advance only once every running thread has stopped:
 * that is what keeps the parallel mode synchronous.
 *
 * In sequential mode (simcpus 1) exactly one thread runs at any time and
 * the hand-offs order everything it wrote before those of the next thread,
 * so no lock is taken at all.
 */
#include "sim/kernel.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft.h>

wsim_kernel_t wsim_k;
#define K wsim_k

static atomic_int sim_busy; /* one simulation per process at a time */
static __thread wsim_thread_t *tls_cur;

/* Largest simcpus and par width the kernel accepts. */
#define MAX_SIMCPUS   1024
#define DEFAULT_STACK (64u * 1024u)
#define MIN_STACK     (16u * 1024u)

void wsim_panic(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("weft-sim: fatal: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

/* ---- configuration ------------------------------------------------------ */

static const wsim_backend_ops_t *const backends[WSIM_BACKEND_COUNT] = {
	[WSIM_BACKEND_POSIX] = &wsim_backend_posix,     [WSIM_BACKEND_LITE] = &wsim_backend_lite,
	[WSIM_BACKEND_CONTEXT] = &wsim_backend_context, [WSIM_BACKEND_QUICK] = &wsim_backend_quick,
	[WSIM_BACKEND_HYBRID] = &wsim_backend_hybrid,
};

const char *wsim_backend_name(int b)
{
	return b > 0 && b < WSIM_BACKEND_COUNT ? backends[b]->name : NULL;
}

int wsim_backend_by_name(const char *name)
{
	for (int b = 1; name && b < WSIM_BACKEND_COUNT; b++)
		if (strcmp(name, backends[b]->name) == 0)
			return b;
	return -1;
}

int wsim_backend_max_simcpus(int b)
{
	if (b <= 0 || b >= WSIM_BACKEND_COUNT)
		return -1;
	return backends[b]->max_simcpus < MAX_SIMCPUS ? backends[b]->max_simcpus : MAX_SIMCPUS;
}

static int env_long(const char *name, long lo, long hi, long *out)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return 0;
	char *end;
	errno = 0;
	long n = strtol(v, &end, 10);
	if (errno || *end || n < lo || n > hi)
		return EINVAL;
	*out = n;
	return 0;
}

int wsim_config_init(wsim_config_t *cfg)
{
	if (!cfg)
		return EINVAL;
	memset(cfg, 0, sizeof *cfg);
	cfg->backend = WSIM_BACKEND_HYBRID;
	const char *b = getenv("WEFT_SIM_BACKEND");
	if (b && *b) {
		cfg->backend = wsim_backend_by_name(b);
		if (cfg->backend < 0)
			return EINVAL;
	}
	long n = 1;
	if (env_long("WEFT_SIM_CPUS", 1, MAX_SIMCPUS, &n))
		return EINVAL;
	cfg->simcpus = (int)n;
	n = DEFAULT_STACK;
	if (env_long("WEFT_SIM_STACK_SIZE", MIN_STACK, 1l << 30, &n))
		return EINVAL;
	cfg->stack_size = (size_t)n;
	return 0;
}

/* ---- the current thread and the lock ------------------------------------ */

/* Record t as the calling thread, when t starts. Afterwards only a
 * sequential simulation must update it (hand_off), because there one
 * record, K.cur, stands for whichever thread runs; a pthread's TLS and a
 * ULT's thread-specific value stay its own across switches and migrations. */
static void set_current(wsim_thread_t *t)
{
	switch (K.cur_mode) {
	case WSIM_CUR_GLOBAL:
		K.cur = t;
		break;
	case WSIM_CUR_TLS:
		tls_cur = t;
		break;
	default:
		if (weft_setspecific(K.ult_key, t))
			wsim_panic("weft_setspecific failed for a hybrid simulation thread");
	}
}

/* WSIM_CUR_TLS and WSIM_CUR_ULT (parallel simulations). */
wsim_thread_t *wsim_self_slow(void)
{
	if (!atomic_load_explicit(&sim_busy, memory_order_acquire) || K.ended)
		return NULL;
	if (K.cur_mode == WSIM_CUR_TLS)
		return tls_cur;
	return weft_getspecific(K.ult_key);
}

/* ---- queues --------------------------------------------------------------
 * All of them: called with the kernel lock held (parallel) or by the one
 * running thread (sequential). */

static inline void rq_push(wsim_thread_t *t)
{
	t->state = WSIM_READY;
	t->rq_next = NULL;
	if (K.rq_tail)
		K.rq_tail->rq_next = t;
	else
		K.rq_head = t;
	K.rq_tail = t;
}

static inline wsim_thread_t *rq_pop(void)
{
	wsim_thread_t *t = K.rq_head;
	if (t && !(K.rq_head = t->rq_next))
		K.rq_tail = NULL;
	return t;
}

static inline int heap_less(const wsim_thread_t *a, const wsim_thread_t *b)
{
	return a->wake_at < b->wake_at || (a->wake_at == b->wake_at && a->seq < b->seq);
}

static int heap_push(wsim_thread_t *t)
{
	if (K.nheap == K.capheap) {
		size_t cap = K.capheap ? K.capheap * 2 : 64;
		wsim_thread_t **h = realloc(K.heap, cap * sizeof *h);
		if (!h)
			return ENOMEM;
		K.heap = h;
		K.capheap = cap;
	}
	size_t i = K.nheap++;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!heap_less(t, K.heap[p]))
			break;
		K.heap[i] = K.heap[p];
		i = p;
	}
	K.heap[i] = t;
	return 0;
}

static wsim_thread_t *heap_pop(void)
{
	wsim_thread_t *top = K.heap[0], *last = K.heap[--K.nheap];
	size_t i = 0, n = K.nheap;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && heap_less(K.heap[c + 1], K.heap[c]))
			c++;
		if (!heap_less(K.heap[c], last))
			break;
		K.heap[i] = K.heap[c];
		i = c;
	}
	if (n)
		K.heap[i] = last;
	return top;
}

/* An event's waiter list: waiters_[0] head, waiters_[1] tail. */
#define EV_HEAD(e) (*(wsim_waitnode_t **)&(e)->waiters_[0])
#define EV_TAIL(e) (*(wsim_waitnode_t **)&(e)->waiters_[1])

static void node_unlink(wsim_waitnode_t *n)
{
	wsim_event_t *e = n->ev;
	if (n->prev)
		n->prev->next = n->next;
	else
		EV_HEAD(e) = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else
		EV_TAIL(e) = n->prev;
}

static void node_append(wsim_waitnode_t *n)
{
	wsim_event_t *e = n->ev;
	n->next = NULL;
	n->prev = EV_TAIL(e);
	if (n->prev)
		n->prev->next = n;
	else
		EV_HEAD(e) = n;
	EV_TAIL(e) = n;
}

static void unwait(wsim_thread_t *t)
{
	for (int i = 0; i < t->nnodes; i++)
		node_unlink(&t->nodes[i]);
	t->nodes = NULL;
	t->nnodes = 0;
}

void wsim_notify_locked(wsim_event_t *e)
{
	if (e->notified_)
		return;
	e->notified_ = 1;
	e->next_ = NULL;
	if (K.nt_tail)
		K.nt_tail->next_ = e;
	else
		K.nt_head = e;
	K.nt_tail = e;
}

/* A delta cycle: every thread waiting on a notified event becomes READY, in
 * the order the events were notified and, per event, the order the threads
 * began to wait; all notifications end. */
static void delta_cycle(void)
{
	wsim_event_t *e = K.nt_head;
	K.nt_head = K.nt_tail = NULL;
	int woke = 0;
	while (e) {
		wsim_event_t *next = e->next_;
		e->next_ = NULL;
		e->notified_ = 0;
		wsim_waitnode_t *n;
		while ((n = EV_HEAD(e))) {
			wsim_thread_t *t = n->t;
			/* wait_any reports the first of its events that is
			 * notified: e, or one later in this cycle's list (those
			 * before e have woken their waiters already). */
			t->woke = n->idx;
			for (int i = 0; i < n->idx; i++)
				if (t->nodes[i].ev->notified_) {
					t->woke = i;
					break;
				}
			unwait(t);
			rq_push(t);
			woke = 1;
		}
		e = next;
	}
	K.st.delta_cycles += woke;
}

/* A timed cycle: time advances to the earliest waitfor; every thread due
 * then becomes READY (in the order they called waitfor). */
static void timed_cycle(void)
{
	K.now = K.heap[0]->wake_at;
	K.st.timed_cycles++;
	while (K.nheap && K.heap[0]->wake_at == K.now)
		rq_push(heap_pop());
}

/* Steps 1-2 of the file comment. Fills go[] with the threads self must Go
 * (self excluded; *self_runs says whether self is in RUN again) and returns
 * their number; *ended_now says whether this call ended the simulation
 * (deadlock). Lock held. */
static int dispatch(wsim_thread_t *self, wsim_thread_t **go, int *self_runs, int *ended_now)
{
	int n = 0;
	*self_runs = 0;
	*ended_now = 0;
	for (;;) {
		wsim_thread_t *t;
		while (K.running < K.simcpus && (t = rq_pop())) {
			t->state = WSIM_RUN;
			K.running++;
			K.st.dispatches++;
			if (t == self)
				*self_runs = 1;
			else
				go[n++] = t;
		}
		if (K.running > 0 || K.ended)
			return n;
		if (K.nt_head) {
			delta_cycle();
			continue;
		}
		if (K.nheap) {
			timed_cycle();
			continue;
		}
		/* Nothing runs, nothing is ready, nothing can become ready. */
		K.ended = 1;
		K.result = EDEADLK;
		K.st.end_time = K.now;
		*ended_now = 1;
		return n;
	}
}

/* After dispatch, lock released: tell run() if this ended the simulation,
 * then Go every chosen thread but the last, which the caller hands its CPU
 * to (returned; NULL if none). With keep_last 0 all of them are Gone. */
static wsim_thread_t *launch(wsim_thread_t **go, int n, int keep_last, int ended_now)
{
	if (ended_now)
		K.bk->end();
	wsim_thread_t *next = keep_last && n > 0 ? go[--n] : NULL;
	for (int i = 0; i < n; i++)
		K.bk->go(go[i]);
	return next;
}

/* After dispatch, lock released: Go the chosen threads and, unless self is
 * running again, stop self - handing off to the last chosen thread. Returns
 * when self runs again. */
static void hand_off(wsim_thread_t *self, wsim_thread_t **go, int n, int self_runs, int ended_now)
{
	wsim_thread_t *next = launch(go, n, !self_runs, ended_now);
	if (self_runs)
		return;
	if (next)
		K.bk->switch_to(self, next);
	else
		K.bk->wait(self);
	if (K.cur_mode == WSIM_CUR_GLOBAL)
		K.cur = self;
	if (wsim_unlikely(K.aborting))
		K.bk->abort_self(self);
}

/* self has left RUN (its new state and queue entry are set, lock held):
 * schedule, release the lock, and return once self runs again. */
static void block(wsim_thread_t *self)
{
	wsim_thread_t *go[K.simcpus];
	int self_runs, ended_now;
	K.running--;
	int n = dispatch(self, go, &self_runs, &ended_now);
	wsim_kunlock();
	hand_off(self, go, n, self_runs, ended_now);
}

/* ---- threads -------------------------------------------------------------- */

static wsim_thread_t *thread_alloc(void)
{
	wsim_thread_t *t = K.pool;
	if (t) {
		K.pool = t->free_next;
	} else {
		size_t sz = sizeof *t + K.bk->thread_size;
		t = aligned_alloc(64, (sz + 63) & ~(size_t)63);
		if (!t)
			return NULL;
	}
	memset(t, 0, sizeof *t); /* the backend initialises bk in create() */
	return t;
}

/* Lock held (or sequential). */
static void all_insert(wsim_thread_t *t)
{
	t->all_prev = NULL;
	t->all_next = K.all;
	if (K.all)
		K.all->all_prev = t;
	K.all = t;
}

static void all_remove(wsim_thread_t *t)
{
	if (t->all_prev)
		t->all_prev->all_next = t->all_next;
	else
		K.all = t->all_next;
	if (t->all_next)
		t->all_next->all_prev = t->all_prev;
}

static void thread_release(wsim_thread_t *t)
{
	all_remove(t);
	t->free_next = K.pool;
	K.pool = t;
}

void wsim_thread_body(wsim_thread_t *t)
{
	set_current(t);
	if (wsim_unlikely(K.aborting || t->discard))
		K.bk->abort_self(t);
	t->fn(t->arg);

	/* Complete: wake the parent if we were its last child, and schedule. */
	wsim_klock();
	t->state = WSIM_COMPLETE;
	K.running--;
	wsim_thread_t *go[K.simcpus];
	int n = 0, self_runs = 0, ended_now = 0;
	if (t == K.root) {
		K.ended = 1;
		K.result = 0;
		K.st.end_time = K.now;
		ended_now = 1;
	} else {
		wsim_thread_t *p = t->parent;
		if (--p->pending == 0)
			rq_push(p);
		n = dispatch(t, go, &self_runs, &ended_now);
	}
	wsim_kunlock();
	K.bk->finish(t, launch(go, n, 1, ended_now));
}

/* ---- the public calls ------------------------------------------------------ */

int wsim_run(const wsim_config_t *cfg, void (*fn)(void *), void *arg)
{
	wsim_config_t c;
	if (!fn)
		return EINVAL;
	if (cfg) {
		c = *cfg;
		wsim_config_t env;
		int r = wsim_config_init(&env);
		if (c.backend == WSIM_BACKEND_DEFAULT)
			c.backend = r ? WSIM_BACKEND_HYBRID : env.backend;
		if (c.simcpus == 0)
			c.simcpus = r ? 1 : env.simcpus;
		if (c.stack_size == 0)
			c.stack_size = r ? DEFAULT_STACK : env.stack_size;
	} else if (wsim_config_init(&c)) {
		return EINVAL;
	}
	if (c.backend <= 0 || c.backend >= WSIM_BACKEND_COUNT || c.simcpus < 1 ||
	    c.simcpus > wsim_backend_max_simcpus(c.backend) || c.stack_size < MIN_STACK)
		return EINVAL;
	int idle = 0, key_made = 0;
	if (!atomic_compare_exchange_strong(&sim_busy, &idle, 1))
		return EBUSY;

	memset(&K, 0, sizeof K);
	K.bk = backends[c.backend];
	K.simcpus = c.simcpus;
	K.parallel = c.simcpus > 1;
	K.cur_mode = K.parallel ? K.bk->cur_mode_parallel : WSIM_CUR_GLOBAL;
	K.stack_size = (c.stack_size + 4095) & ~(size_t)4095;
	int r = K.bk->start();
	if (r)
		goto out;
	if (K.cur_mode == WSIM_CUR_ULT) {
		if ((r = weft_key_create(&K.ult_key, NULL)))
			goto stop;
		key_made = 1;
	}
	wsim_thread_t *root = thread_alloc();
	if (!root) {
		r = ENOMEM;
		goto stop;
	}
	root->fn = fn;
	root->arg = arg;
	if ((r = K.bk->create(root))) {
		free(root);
		goto stop;
	}
	all_insert(root);
	K.root = root;
	K.st.threads = 1;
	root->state = WSIM_RUN;
	K.running = 1;
	K.st.dispatches = 1;

	K.bk->run(root);

	/* Over: tear down whatever is still blocked, children before their
	 * parents (K.all is newest first). Nobody runs any more. */
	r = K.result;
	K.aborting = 1;
	for (wsim_thread_t *t = K.all, *next; t; t = next) {
		next = t->all_next;
		if (t == root)
			continue;
		if (t->state == WSIM_WAIT)
			unwait(t);
		K.bk->reap(t);
		if (t->kids_heap)
			free(t->kids);
		all_remove(t);
		free(t);
	}
	if (root->state == WSIM_WAIT)
		unwait(root);
	if (root->kids_heap)
		free(root->kids);
	K.bk->reap(root);
	all_remove(root);
	free(root);
	for (wsim_event_t *e = K.nt_head, *next; e; e = next) {
		next = e->next_;
		e->next_ = NULL;
		e->notified_ = 0;
	}
	K.nt_head = K.nt_tail = NULL;
	for (wsim_thread_t *t = K.pool, *next; t; t = next) {
		next = t->free_next;
		free(t);
	}
	K.pool = NULL;
stop:
	if (key_made)
		weft_key_delete(K.ult_key);
	K.bk->stop();
	free(K.heap);
	K.heap = NULL;
	K.nheap = K.capheap = 0;
out:
	K.ended = 1;
	K.cur = NULL;
	K.cur_mode = WSIM_CUR_GLOBAL; /* wsim_self_checked: NULL, EPERM */
	atomic_store_explicit(&sim_busy, 0, memory_order_release);
	return r;
}

int wsim_stats(wsim_stats_t *st)
{
	if (!st)
		return EINVAL;
	*st = K.st;
	if (atomic_load(&sim_busy) && !K.ended)
		st->end_time = K.now;
	return 0;
}

wsim_time_t wsim_now(void)
{
	return atomic_load_explicit(&sim_busy, memory_order_acquire) ? K.now : 0;
}

int wsim_event_init(wsim_event_t *e)
{
	if (!e)
		return EINVAL;
	memset(e, 0, sizeof *e);
	return 0;
}

int wsim_notify(wsim_event_t *e)
{
	if (!e)
		return EINVAL;
	if (!wsim_self_checked())
		return EPERM;
	wsim_klock();
	wsim_notify_locked(e);
	wsim_kunlock();
	return 0;
}

void wsim_wait_locked(wsim_thread_t *self, wsim_event_t *e)
{
	wsim_waitnode_t node = {.ev = e, .t = self, .idx = 0};
	node_append(&node);
	self->nodes = &node;
	self->nnodes = 1;
	self->state = WSIM_WAIT;
	block(self);
}

int wsim_wait(wsim_event_t *e)
{
	if (!e)
		return EINVAL;
	wsim_thread_t *self = wsim_self_checked();
	if (!self)
		return EPERM;
	wsim_klock();
	wsim_wait_locked(self, e);
	return 0;
}

#define MAX_WAIT_ANY 1024

int wsim_wait_any(int n, wsim_event_t *const es[], int *which)
{
	if (n < 1 || n > MAX_WAIT_ANY || !es)
		return EINVAL;
	for (int i = 0; i < n; i++)
		if (!es[i])
			return EINVAL;
	wsim_thread_t *self = wsim_self_checked();
	if (!self)
		return EPERM;
	wsim_waitnode_t nodes[n];
	wsim_klock();
	for (int i = 0; i < n; i++) {
		nodes[i] = (wsim_waitnode_t){.ev = es[i], .t = self, .idx = i};
		node_append(&nodes[i]);
	}
	self->nodes = nodes;
	self->nnodes = n;
	self->state = WSIM_WAIT;
	block(self);
	if (which)
		*which = self->woke;
	return 0;
}

int wsim_waitfor(wsim_time_t d)
{
	wsim_thread_t *self = wsim_self_checked();
	if (!self)
		return EPERM;
	wsim_klock();
	if (d > UINT64_MAX - K.now) {
		wsim_kunlock();
		return EINVAL;
	}
	self->wake_at = K.now + d;
	self->seq = K.seq++;
	if (heap_push(self)) {
		wsim_kunlock();
		return ENOMEM;
	}
	self->state = WSIM_WAITFOR;
	block(self);
	return 0;
}

#define PAR_ON_STACK 32

int wsim_par(int n, const wsim_behavior_t *b)
{
	if (n < 0 || (n > 0 && !b))
		return EINVAL;
	for (int i = 0; i < n; i++)
		if (!b[i].fn)
			return EINVAL;
	wsim_thread_t *self = wsim_self_checked();
	if (!self)
		return EPERM;
	if (n == 0)
		return 0;
	wsim_thread_t *on_stack[PAR_ON_STACK];
	wsim_thread_t **kids = on_stack;
	if (n > PAR_ON_STACK && !(kids = malloc((size_t)n * sizeof *kids)))
		return ENOMEM;

	/* ThreadCreate for every child before any runs: a failure leaves the
	 * simulation as it was. */
	int r = 0, made = 0;
	wsim_klock();
	for (; made < n; made++) {
		wsim_thread_t *t = thread_alloc();
		if (!t) {
			r = ENOMEM;
			break;
		}
		t->fn = b[made].fn;
		t->arg = b[made].arg;
		t->parent = self;
		if ((r = K.bk->create(t))) {
			t->free_next = K.pool;
			K.pool = t;
			break;
		}
		all_insert(t);
		kids[made] = t;
	}
	if (r) {
		wsim_kunlock();
		for (int i = 0; i < made; i++) {
			kids[i]->discard = 1;
			K.bk->reap(kids[i]);
		}
		wsim_klock();
		for (int i = 0; i < made; i++)
			thread_release(kids[i]);
		wsim_kunlock();
		if (kids != on_stack)
			free(kids);
		return r;
	}
	for (int i = 0; i < n; i++)
		rq_push(kids[i]);
	K.st.threads += (uint64_t)n;
	self->pending = n;
	self->kids = kids;
	self->kids_heap = kids != on_stack;
	self->state = WSIM_JOIN;
	block(self);

	/* ThreadDelete for the children, all COMPLETE now. */
	self->kids = NULL;
	self->kids_heap = 0;
	for (int i = 0; i < n; i++)
		K.bk->reap(kids[i]);
	wsim_klock();
	for (int i = 0; i < n; i++)
		thread_release(kids[i]);
	wsim_kunlock();
	if (kids != on_stack)
		free(kids);
	return 0;
}
