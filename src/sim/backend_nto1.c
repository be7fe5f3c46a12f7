/* The N:1 backends: every simulation thread is a context on its own stack,
 * all run by the kernel thread that called wsim_run, one at a time. A
 * hand-off is one context switch (weft/context.h) - weft's asm switch for
 * `quick` (the QuickThreads row of the seeds' tables), weft's ucontext
 * switch for `context` (seed 001's ContextThreads). The caller of wsim_run
 * is the "main" context: the simulation switches back to it when it ends.
 * Sequential only: there is one kernel thread to run on. */
#include "sim/kernel.h"

#include <errno.h>

#include <weft/context.h>

typedef struct nto1_thread {
	weft_context_t ctx;
	void *stack;
} nto1_thread_t;

static int kind;                /* WEFT_CONTEXT_ASM or WEFT_CONTEXT_UCONTEXT */
static weft_context_t main_ctx; /* wsim_run's caller */

static inline nto1_thread_t *bk(wsim_thread_t *t)
{
	return (nto1_thread_t *)(void *)t->bk;
}

static void entry(void *arg)
{
	wsim_thread_body(arg);
	wsim_panic("N:1 thread body returned");
}

static int start_kind(int k)
{
	kind = k;
	return weft_context_init_current(&main_ctx, kind);
}

static int start_quick(void)
{
	return start_kind(WEFT_CONTEXT_ASM);
}

static int start_context(void)
{
	return start_kind(WEFT_CONTEXT_UCONTEXT);
}

static void stop(void)
{
	weft_context_destroy(&main_ctx);
	wsim_stack_cache_drain();
}

static int create(wsim_thread_t *t)
{
	nto1_thread_t *b = bk(t);
	if (!(b->stack = wsim_stack_get(wsim_k.stack_size)))
		return errno == ENOMEM ? ENOMEM : EAGAIN;
	int r = weft_context_make(&b->ctx, kind, b->stack, wsim_k.stack_size, entry, t);
	if (r) {
		wsim_stack_put(b->stack, wsim_k.stack_size);
		b->stack = NULL;
	}
	return r;
}

static void go(wsim_thread_t *t)
{
	wsim_panic("N:1 backend asked to run a second thread in parallel");
}

/* Only when nothing else can run: the simulation is over (deadlock). */
static void wait(wsim_thread_t *self)
{
	weft_context_switch(&bk(self)->ctx, &main_ctx);
}

static void switch_to(wsim_thread_t *self, wsim_thread_t *next)
{
	weft_context_switch(&bk(self)->ctx, &bk(next)->ctx);
}

static void finish(wsim_thread_t *self, wsim_thread_t *next)
{
	weft_context_exit(&bk(self)->ctx, next ? &bk(next)->ctx : &main_ctx);
}

static void abort_self(wsim_thread_t *self)
{
	wsim_panic("N:1 thread resumed during teardown");
}

/* Whatever t's state, nothing runs on its stack any more. */
static void reap(wsim_thread_t *t)
{
	nto1_thread_t *b = bk(t);
	if (!b->stack)
		return;
	weft_context_destroy(&b->ctx);
	wsim_stack_put(b->stack, wsim_k.stack_size);
	b->stack = NULL;
}

static void no_lock(void)
{
}

static void run(wsim_thread_t *root)
{
	weft_context_switch(&main_ctx, &bk(root)->ctx);
}

static void end(void)
{
}

#define NTO1_OPS(nm, startfn)                                                              \
	{                                                                                  \
		.name = nm, .max_simcpus = 1, .thread_size = sizeof(nto1_thread_t),        \
		.cur_mode_parallel = WSIM_CUR_GLOBAL, .start = startfn, .stop = stop,      \
		.create = create, .go = go, .wait = wait, .switch_to = switch_to,          \
		.finish = finish, .abort_self = abort_self, .reap = reap, .lock = no_lock, \
		.unlock = no_lock, .run = run, .end = end,                                 \
	}

const wsim_backend_ops_t wsim_backend_quick = NTO1_OPS("quick", start_quick);
const wsim_backend_ops_t wsim_backend_context = NTO1_OPS("context", start_context);
