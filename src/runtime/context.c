/* The public bare-context calls (include/weft/context.h): the runtime's
 * context backends with the kind chosen per context rather than per process. */
#include <weft/context.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "context/context.h"
#include "sched/sched.h"

#if WEFT_HAVE_VALGRIND
#include <valgrind/valgrind.h>
#else
#define VALGRIND_STACK_REGISTER(lo, hi) 0u
#define VALGRIND_STACK_DEREGISTER(id)   ((void)(id))
#endif

/* The private words of a weft_context_t: the runtime's context, then the
 * user's entry function and argument. */
typedef struct pub_ctx {
	wf_ctx_t ctx;
	void (*fn)(void *);
	void *arg;
} pub_ctx_t;

_Static_assert(sizeof(pub_ctx_t) <= sizeof(((weft_context_t *)0)->private_),
	       "weft_context_t: private_ too small for the runtime's context");

static inline pub_ctx_t *priv(weft_context_t *c)
{
	return (pub_ctx_t *)(void *)c->private_;
}

/* WEFT_CONTEXT_DEFAULT resolves as weft_init does: WEFT_CONTEXT, else asm
 * (only that variable: the others are none of a bare context's business). */
static int resolve_kind(int kind)
{
	if (kind == WEFT_CONTEXT_DEFAULT) {
		const char *v = getenv("WEFT_CONTEXT");
		if (!v || !*v || strcmp(v, "asm") == 0)
			kind = WEFT_CONTEXT_ASM;
		else if (strcmp(v, "ucontext") == 0)
			kind = WEFT_CONTEXT_UCONTEXT;
		else
			return -1;
	}
	if (kind == WEFT_CONTEXT_ASM)
		return WF_CTX_ASM;
	if (kind == WEFT_CONTEXT_UCONTEXT)
		return WF_CTX_UCONTEXT;
	return -1;
}

static void pub_entry(void *transfer, void *arg)
{
	(void)transfer;
	wf_ctx_entered();
	pub_ctx_t *p = arg;
	p->fn(p->arg);
	wf_panic("weft_context: the entry function of context %p returned", arg);
}

int weft_context_make(weft_context_t *c, int kind, void *stack, size_t size, void (*fn)(void *arg),
		      void *arg)
{
	if (!c || !stack || !fn || size < WEFT_CONTEXT_STACK_MIN)
		return EINVAL;
	int k = resolve_kind(kind);
	if (k < 0)
		return EINVAL;
	memset(c->private_, 0, sizeof c->private_);
	pub_ctx_t *p = priv(c);
	p->fn = fn;
	p->arg = arg;
	c->kind_ = k;
	wf_ctx_make_kind(&p->ctx, k, stack, size, &c->uc_, pub_entry, p);
	c->valgrind_id_ = VALGRIND_STACK_REGISTER(stack, (char *)stack + size);
	return 0;
}

int weft_context_init_current(weft_context_t *c, int kind)
{
	if (!c)
		return EINVAL;
	int k = resolve_kind(kind);
	if (k < 0)
		return EINVAL;
	memset(c->private_, 0, sizeof c->private_);
	c->kind_ = k;
	c->valgrind_id_ = 0;
	wf_ctx_t *ctx = &priv(c)->ctx;
	wf_ctx_init_current(ctx, k == WF_CTX_UCONTEXT ? &c->uc_ : NULL);
	/* On a ULT the running stack is the ULT's, not the worker thread's
	 * that wf_ctx_init_current found (sanitizers need the right one). */
	wf_worker_t *w = wf_worker_self();
	if (w && w->current) {
		ctx->stack_lo = w->current->ctx.stack_lo;
		ctx->stack_size = w->current->ctx.stack_size;
	}
	return 0;
}

static void check_pair(const weft_context_t *from, const weft_context_t *to)
{
	if (unlikely(!from || !to))
		wf_panic("weft_context_switch/exit: a NULL context (from %p, to %p)", (void *)from,
			 (void *)to);
	if (unlikely(from->kind_ != to->kind_ ||
		     (from->kind_ != WF_CTX_ASM && from->kind_ != WF_CTX_UCONTEXT)))
		wf_panic("weft_context_switch/exit: contexts of kinds %d and %d (made? same kind?)",
			 from->kind_, to->kind_);
}

void weft_context_switch(weft_context_t *from, weft_context_t *to)
{
	check_pair(from, to);
	wf_ctx_switch_kind(from->kind_, &priv(from)->ctx, &priv(to)->ctx, NULL);
}

void weft_context_exit(weft_context_t *from, weft_context_t *to)
{
	check_pair(from, to);
	wf_ctx_switch_final_kind(from->kind_, &priv(from)->ctx, &priv(to)->ctx, NULL);
}

int weft_context_destroy(weft_context_t *c)
{
	if (!c)
		return EINVAL;
	if (c->valgrind_id_)
		VALGRIND_STACK_DEREGISTER(c->valgrind_id_);
	c->valgrind_id_ = 0;
	if (c->kind_)
		wf_ctx_forget(&priv(c)->ctx); /* a made context's TSan fiber */
	c->kind_ = 0;
	return 0;
}
