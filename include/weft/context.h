/* weft/context.h — bare execution contexts: weft's context switch without
 * its scheduler, in the manner of QuickThreads or Boost.Context.
 *
 * A context is a stack and the registers to resume on it. weft_context_make
 * prepares one to run fn(arg) on a stack the caller provides;
 * weft_context_switch saves the running context into `from` and resumes
 * `to`. Nothing is scheduled, locked or allocated: the caller decides who
 * runs next, and a context must only be resumed by one kernel thread at a
 * time. Both of weft's switch backends are available in the same process:
 *
 *   WEFT_CONTEXT_ASM       the hand-written switch (callee-saved registers
 *                          and the FP control words, on x86-64 and aarch64)
 *   WEFT_CONTEXT_UCONTEXT  makecontext-made contexts switched without the
 *                          signal-mask system call swapcontext pays
 *   WEFT_CONTEXT_DEFAULT   WEFT_CONTEXT from the environment, else asm
 *
 * A switch is only valid between two contexts of the same kind; mixing them
 * aborts with a message. A context lives where it was made: never copy or
 * move a weft_context_t (the ucontext kind points into itself). fn must not return: a context ends by switching
 * away for good (weft_context_exit). The runtime need not be initialised.
 *
 * Sanitizers: the switches carry AddressSanitizer's and ThreadSanitizer's
 * fiber annotations (under TSan a made context is a fiber of its own until
 * weft_context_destroy, and a switch orders what came before it with what
 * follows it), and a made context's stack is registered with Valgrind until
 * weft_context_destroy.
 */
#ifndef WEFT_CONTEXT_H
#define WEFT_CONTEXT_H

#include <stddef.h>
#include <ucontext.h>

#include <weft.h> /* enum weft_context_kind, WEFT_API */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct weft_context {
	void *private_[12];
	int kind_;
	unsigned valgrind_id_;
	ucontext_t uc_; /* the ucontext kind's saved registers */
} weft_context_t;

/* Smallest stack weft_context_make accepts (bytes). */
#define WEFT_CONTEXT_STACK_MIN 4096u

/* Prepare c to run fn(arg) on [stack, stack + size) when first switched to.
 * kind is an enum weft_context_kind (weft.h). EINVAL: c, stack or fn NULL,
 * size < WEFT_CONTEXT_STACK_MIN, or an unknown kind. */
WEFT_API int weft_context_make(weft_context_t *c, int kind, void *stack, size_t size,
			       void (*fn)(void *arg), void *arg);

/* Describe the calling context (a kernel thread's own stack, typically) so
 * that a made context can switch back to it. EINVAL: c NULL or a bad kind. */
WEFT_API int weft_context_init_current(weft_context_t *c, int kind);

/* Save the running context into from and resume to. Returns when something
 * switches back to from. */
WEFT_API void weft_context_switch(weft_context_t *from, weft_context_t *to);

/* Resume to; from is never resumed again, so its stack may be freed as soon
 * as to runs. */
WEFT_API _Noreturn void weft_context_exit(weft_context_t *from, weft_context_t *to);

/* Forget c (deregisters a made context's stack from Valgrind). 0 or EINVAL. */
WEFT_API int weft_context_destroy(weft_context_t *c);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_CONTEXT_H */
