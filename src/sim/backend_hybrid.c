/* The hybrid backend: M:N on weft (seed 000's HybridThreads). Every
 * simulation thread runs on a weft ULT, its carrier; weft's workers are the
 * simulated CPUs. Wait parks the carrier, Go unparks it - so a thread made
 * READY by a thread on one worker is stolen by an idle worker and runs in
 * parallel - and the Go+Wait of a hand-off is weft_park_handoff, which runs
 * the successor on the same worker with one context switch (seed 000
 * §2.4.4: "the new userspace thread will be run on the current core").
 *
 * Carriers outlive their threads: when a thread completes, its carrier
 * parks, and ThreadDelete (reap) puts it in a pool from which ThreadCreate
 * takes one for a new thread. So a par of short behaviors costs a park and
 * an unpark per child, not a weft_create, an exit and a weft_join. A
 * carrier is made at a thread's first Go when the pool was empty at its
 * ThreadCreate; the pool is emptied (its carriers ended and joined) when
 * the simulation stops. Ownership: the pool is pushed to by any reaper (a
 * CAS) and popped only by ThreadCreate, which runs under the kernel lock
 * (or alone, sequentially) - one popper, so no ABA.
 *
 * A weft park may return spuriously, so each carrier has a token word: Go
 * sets it before the unpark, Wait parks until it can take it. A thread in
 * RUN gets exactly one Go (from the thread that dispatched it) before its
 * next Wait, and a completed thread gets none, so the owner may take the
 * token with a load and a store - no read-modify-write on the hand-off
 * path. The Go that starts a thread on a pooled carrier is the token the
 * idle carrier waits for.
 *
 * If the program has not started weft, wsim_run starts it with `simcpus`
 * workers and stops it at the end; otherwise the simulation runs on the
 * program's workers. */
#include "sim/kernel.h"

#include <errno.h>
#include <stdlib.h>

#include <weft.h>

typedef struct carrier {
	weft_t ult;
	atomic_int token;     /* a Go not yet taken by a Wait */
	wsim_thread_t *t;     /* the thread it runs next; NULL: end */
	struct carrier *next; /* in the pool */
} carrier_t;

typedef struct hybrid_thread {
	carrier_t *c; /* from the pool at create, else made at the first Go */
	int started;  /* has had its first Go */
} hybrid_thread_t;

static int own_runtime; /* wsim_run started weft */
static weft_mutex_t klock;
static weft_sem_t done;
static _Atomic(carrier_t *) pool;

static inline hybrid_thread_t *bk(wsim_thread_t *t)
{
	return (hybrid_thread_t *)(void *)t->bk;
}

static void pool_push(carrier_t *c)
{
	carrier_t *head = atomic_load_explicit(&pool, memory_order_relaxed);
	do
		c->next = head;
	while (!atomic_compare_exchange_weak_explicit(&pool, &head, c, memory_order_release,
						      memory_order_relaxed));
}

/* The one popper: ThreadCreate (kernel lock held) or stop(). */
static carrier_t *pool_pop(void)
{
	carrier_t *c = atomic_load_explicit(&pool, memory_order_acquire);
	while (c && !atomic_compare_exchange_weak_explicit(&pool, &c, c->next, memory_order_acquire,
							   memory_order_acquire))
		;
	return c;
}

/* Take this carrier's token: park until a Go has given it. */
static void take_token(carrier_t *c)
{
	while (!atomic_load_explicit(&c->token, memory_order_acquire))
		weft_park();
	atomic_store_explicit(&c->token, 0, memory_order_relaxed);
}

static void give_token(carrier_t *c)
{
	atomic_store_explicit(&c->token, 1, memory_order_release);
}

/* A Go to whatever c runs: its token, then the unpark. */
static void wake(carrier_t *c)
{
	give_token(c);
	weft_unpark(c->ult);
}

/* A carrier runs threads until stop() hands it NULL. */
static void *entry(void *arg)
{
	carrier_t *c = arg;
	for (;;) {
		wsim_thread_body(c->t);
		take_token(c); /* the Go of the next thread, after a create */
		if (!c->t)
			return NULL;
	}
}

/* A new carrier for t; it starts on this worker's queue. A failure here has
 * no caller to report to (par has returned long ago), so it is retried for
 * a while - memory may come back as other threads end - and then it is
 * fatal. */
static void start_carrier(wsim_thread_t *t)
{
	carrier_t *c;
	for (int tries = 0; !(c = calloc(1, sizeof *c)); tries++) {
		if (tries == 1000)
			wsim_panic("hybrid backend: no memory for a carrier");
		weft_sleep_ns(1000000);
	}
	c->t = t;
	bk(t)->c = c;
	weft_attr_t a;
	weft_attr_init(&a);
	weft_attr_setstacksize(&a, wsim_k.stack_size);
	int r;
	for (int tries = 0; (r = weft_create(&c->ult, &a, entry, c)) != 0; tries++) {
		if ((r != EAGAIN && r != ENOMEM) || tries == 1000)
			wsim_panic("hybrid backend: weft_create failed: errno %d", r);
		weft_sleep_ns(1000000);
	}
	weft_attr_destroy(&a);
}

static int start(void)
{
	own_runtime = 0;
	atomic_store_explicit(&pool, NULL, memory_order_relaxed);
	{
		/* Start weft with the simulation's CPUs, unless the program
		 * runs it already (EBUSY). */
		weft_config_t c;
		int r = weft_config_init(&c);
		if (r)
			return r;
		c.workers = wsim_k.simcpus;
		r = weft_init(&c);
		if (r && r != EBUSY)
			return r;
		own_runtime = r == 0;
	}
	int r = weft_mutex_init(&klock, NULL);
	if (!r)
		r = weft_sem_init(&done, 0, 0);
	if (r && own_runtime)
		weft_shutdown();
	return r;
}

static void stop(void)
{
	carrier_t *c;
	while ((c = pool_pop())) {
		c->t = NULL;
		wake(c);
		weft_join(c->ult, NULL);
		free(c);
	}
	weft_sem_destroy(&done);
	weft_mutex_destroy(&klock);
	if (own_runtime)
		weft_shutdown();
}

static int create(wsim_thread_t *t)
{
	hybrid_thread_t *b = bk(t);
	b->started = 0;
	b->c = pool_pop();
	if (b->c)
		b->c->t = t; /* published by the token of the first Go */
	return 0;
}

/* The first Go of t: 1 if it needs a new carrier (made here). */
static int first_go(wsim_thread_t *t)
{
	hybrid_thread_t *b = bk(t);
	if (b->started)
		return 0;
	b->started = 1;
	if (b->c)
		return 0;
	start_carrier(t);
	return 1;
}

static void go(wsim_thread_t *t)
{
	if (first_go(t))
		return;
	wake(bk(t)->c);
}

static void wait(wsim_thread_t *self)
{
	take_token(bk(self)->c);
}

static void switch_to(wsim_thread_t *self, wsim_thread_t *next)
{
	/* A new carrier (first_go made one) is queued at the bottom of our
	 * deque and runs next; a parked one gets the token and our worker. */
	if (!first_go(next)) {
		carrier_t *c = bk(next)->c;
		give_token(c);
		weft_park_handoff(c->ult);
	}
	wait(self);
}

/* Our carrier then parks for its next thread; its worker runs next. */
static void finish(wsim_thread_t *self, wsim_thread_t *next)
{
	if (next)
		go(next);
}

static void abort_self(wsim_thread_t *self)
{
	weft_exit(NULL);
}

static void reap(wsim_thread_t *t)
{
	hybrid_thread_t *b = bk(t);
	carrier_t *c = b->c; /* left set: a blocked t may yet read it (wait) */
	if (!c)
		return;
	if (!b->started || t->state == WSIM_COMPLETE) {
		pool_push(c); /* idle, or about to be */
		return;
	}
	/* Blocked at teardown: a Go, and it ends itself and its carrier
	 * (abort_self). */
	wake(c);
	weft_join(c->ult, NULL);
	free(c);
}

static void lock(void)
{
	weft_mutex_lock(&klock);
}

static void unlock(void)
{
	weft_mutex_unlock(&klock);
}

static void run(wsim_thread_t *root)
{
	go(root);
	while (weft_sem_wait(&done) == EINTR)
		;
}

static void end(void)
{
	weft_sem_post(&done);
}

const wsim_backend_ops_t wsim_backend_hybrid = {
	.name = "hybrid",
	.max_simcpus = 1 << 30,
	.thread_size = sizeof(hybrid_thread_t),
	.cur_mode_parallel = WSIM_CUR_ULT,
	.start = start,
	.stop = stop,
	.create = create,
	.go = go,
	.wait = wait,
	.switch_to = switch_to,
	.finish = finish,
	.abort_self = abort_self,
	.reap = reap,
	.lock = lock,
	.unlock = unlock,
	.run = run,
	.end = end,
};
