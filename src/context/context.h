/* Execution contexts: the register state of a suspended ULT (or of a
 * worker's scheduler loop) and the switch between two of them.
 *
 * Two backends live in the library; one is chosen per process at init
 * (WEFT_CONTEXT=asm|ucontext):
 *   asm       wf_ctx_jump in src/arch/switch_<arch>_<abi>.S — saves the
 *             callee-saved registers on the stack, one pointer in the ctx.
 *   ucontext  glibc getcontext/makecontext to make, and on x86-64 a swap
 *             without the signal-mask syscall (src/arch/ucswap_x86_64_sysv.S)
 *             to switch; glibc's swapcontext elsewhere.
 *
 * A switch hands a pointer ("transfer") from the side leaving to the side
 * resuming; the scheduler passes the worker so the resumed code learns which
 * kernel thread it is on without reading TLS.
 *
 * Sanitizers: under AddressSanitizer every switch is bracketed by
 * __sanitizer_start/finish_switch_fiber so ASan knows which stack is live.
 * Under ThreadSanitizer every context is a TSan fiber: a made context gets
 * a fiber of its own (__tsan_create_fiber, destroyed by wf_ctx_forget), a
 * context described by wf_ctx_init_current is the kernel thread's, and each
 * switch saves the running fiber into `from` and calls
 * __tsan_switch_to_fiber(to's, 0) just before the jump. Flags 0 makes the
 * switch a happens-before edge from the code before it to the code after it,
 * as it is on one kernel thread: the scheduler hands w->prev, the worker's
 * queues and caches from one context to the next through the switch.
 */
#ifndef WF_CONTEXT_H
#define WF_CONTEXT_H

#include <stddef.h>
#include <ucontext.h>

#include "util/util.h"

typedef void (*wf_ctx_entry_fn)(void *transfer, void *arg);

typedef struct wf_ctx {
	void *sp;          /* asm: saved stack pointer while suspended */
	ucontext_t *uc;    /* ucontext: the saved context (kept beside the ULT) */
	void *transfer;    /* ucontext: value handed over by the last switch */
	void *stack_lo;    /* lowest usable address of the stack */
	size_t stack_size; /* usable bytes above stack_lo */
#if WF_ASAN
	void *asan_fake; /* ASan fake-stack handle while suspended */
#endif
#if WF_TSAN
	void *tsan_fiber; /* TSan fiber to resume: the one running when it was saved */
	void *tsan_own;   /* the fiber wf_ctx_make created (wf_ctx_forget destroys it) */
#endif
	/* ucontext: entry and argument of a new context */
	wf_ctx_entry_fn entry;
	void *arg;
} wf_ctx_t;

enum { WF_CTX_ASM = 1, WF_CTX_UCONTEXT = 2 };

WF_HIDDEN extern int wf_ctx_backend;

/* Bytes a new context needs at the top of its stack region for backend
 * state (the ucontext_t lives there); the caller reserves them. */
WF_HIDDEN size_t wf_ctx_reserve(void);

/* Prepare c to run entry(transfer, arg) on [lo, lo+size) when first switched
 * to. `reserved` is the wf_ctx_reserve() bytes the caller set aside. */
WF_HIDDEN void wf_ctx_make(wf_ctx_t *c, void *lo, size_t size, void *reserved,
			   wf_ctx_entry_fn entry, void *arg);

/* The same with the backend named (WF_CTX_ASM or WF_CTX_UCONTEXT) instead of
 * the process's: the public weft_context_* calls (public.c) use these. */
WF_HIDDEN void wf_ctx_make_kind(wf_ctx_t *c, int kind, void *lo, size_t size, void *reserved,
				wf_ctx_entry_fn entry, void *arg);
WF_HIDDEN void *wf_ctx_switch_kind(int kind, wf_ctx_t *from, wf_ctx_t *to, void *transfer);
WF_HIDDEN _Noreturn void wf_ctx_switch_final_kind(int kind, wf_ctx_t *from, wf_ctx_t *to,
						  void *transfer);

/* Describe the stack of a context that already runs (a kernel thread's own
 * stack) so sanitizers can follow switches back to it. */
WF_HIDDEN void wf_ctx_init_current(wf_ctx_t *c, void *reserved);

/* Switch from the running context (saved into from) to `to`.
 * Returns the transfer value passed by whoever later resumes `from`. */
WF_HIDDEN void *wf_ctx_switch(wf_ctx_t *from, wf_ctx_t *to, void *transfer);

/* As wf_ctx_switch, but `from` will never be resumed (its ULT exits). */
WF_HIDDEN _Noreturn void wf_ctx_switch_final(wf_ctx_t *from, wf_ctx_t *to, void *transfer);

/* Must be the first call in an entry function, before touching the stack
 * much: completes the sanitizer bookkeeping of the switch that started it. */
WF_HIDDEN void wf_ctx_entered(void);

/* c will never run again and its stack is about to be freed or reused:
 * drop what sanitizers keep for it (TSan: destroy the fiber wf_ctx_make
 * created, so that a reused stack starts with a fresh one). Not on the
 * running context. A no-op for contexts of wf_ctx_init_current. */
WF_HIDDEN void wf_ctx_forget(wf_ctx_t *c);

/* Name c in sanitizer reports (TSan names the fiber; the name is copied). */
WF_HIDDEN void wf_ctx_set_name(wf_ctx_t *c, const char *name);

#endif
