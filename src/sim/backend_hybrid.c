/* The hybrid backend: M:N on weft (seed 000's HybridThreads). Every
 * simulation thread is a weft ULT, made at its first Go; weft's workers are
 * the simulated CPUs. Wait parks the ULT, Go unparks it - so a thread made
 * READY by a thread on one worker is stolen by an idle worker and runs in
 * parallel - and the Go+Wait of a hand-off is weft_park_handoff, which runs
 * the successor on the same worker with one context switch (seed 000
 * §2.4.4: "the new userspace thread will be run on the current core").
 *
 * A weft park may return spuriously, so each thread also has a token word:
 * Go sets it before the unpark, Wait parks until it can take it. A thread in
 * RUN gets exactly one Go (from the thread that dispatched it) before its
 * next Wait, so the owner may take the token with a load and a store - no
 * read-modify-write on the hand-off path.
 *
 * If the program has not started weft, wsim_run starts it with `simcpus`
 * workers and stops it at the end; otherwise the simulation runs on the
 * program's workers. */
#include "sim/kernel.h"

#include <errno.h>

#include <weft.h>

typedef struct hybrid_thread {
	weft_t ult;       /* 0 until the first Go */
	atomic_int token; /* a Go not yet taken by a Wait */
} hybrid_thread_t;

static int own_runtime; /* wsim_run started weft */
static weft_mutex_t klock;
static weft_sem_t done;

static inline hybrid_thread_t *bk(wsim_thread_t *t)
{
	return (hybrid_thread_t *)(void *)t->bk;
}

static void *entry(void *arg)
{
	wsim_thread_body(arg);
	return NULL;
}

/* The first Go makes the ULT; it starts on this worker's queue. A failure
 * here has no caller to report to (par has returned long ago), so it is
 * retried for a while - memory may come back as other threads end - and
 * then it is fatal. */
static void start_ult(wsim_thread_t *t)
{
	weft_attr_t a;
	weft_attr_init(&a);
	weft_attr_setstacksize(&a, wsim_k.stack_size);
	int r;
	for (int tries = 0; (r = weft_create(&bk(t)->ult, &a, entry, t)) != 0; tries++) {
		if ((r != EAGAIN && r != ENOMEM) || tries == 1000)
			wsim_panic("hybrid backend: weft_create failed: errno %d", r);
		weft_sleep_ns(1000000);
	}
	weft_attr_destroy(&a);
}

static int start(void)
{
	own_runtime = 0;
	if (weft_num_workers() == 0) {
		weft_config_t c;
		int r = weft_config_init(&c);
		if (r)
			return r;
		c.workers = wsim_k.simcpus;
		if ((r = weft_init(&c)))
			return r;
		own_runtime = 1;
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
	weft_sem_destroy(&done);
	weft_mutex_destroy(&klock);
	if (own_runtime)
		weft_shutdown();
}

static int create(wsim_thread_t *t)
{
	bk(t)->ult = WEFT_NULL;
	atomic_init(&bk(t)->token, 0);
	return 0;
}

static void go(wsim_thread_t *t)
{
	hybrid_thread_t *b = bk(t);
	if (b->ult == WEFT_NULL) {
		start_ult(t);
		return;
	}
	atomic_store_explicit(&b->token, 1, memory_order_release);
	weft_unpark(b->ult);
}

static void wait(wsim_thread_t *self)
{
	hybrid_thread_t *b = bk(self);
	while (!atomic_load_explicit(&b->token, memory_order_acquire))
		weft_park();
	atomic_store_explicit(&b->token, 0, memory_order_relaxed);
}

static void switch_to(wsim_thread_t *self, wsim_thread_t *next)
{
	hybrid_thread_t *n = bk(next);
	if (n->ult == WEFT_NULL) {
		start_ult(next); /* queued at the bottom of our deque: runs next */
	} else {
		atomic_store_explicit(&n->token, 1, memory_order_release);
		weft_park_handoff(n->ult);
	}
	wait(self);
}

/* The ULT returns from entry() after this; its worker then runs next. */
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
	if (b->ult == WEFT_NULL)
		return;
	if (t->state != WSIM_COMPLETE)
		go(t); /* blocked: it ends itself (abort_self) */
	weft_join(b->ult, NULL);
	b->ult = WEFT_NULL;
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
