/* Cleanup handlers pushed with glibc's own pthread_cleanup_push macros.
 *
 * A C program built against glibc's <pthread.h> registers each handler
 * frame with __pthread_register_cancel(buf), where buf holds a setjmp
 * buffer taken at the push; on cancellation or pthread_exit, glibc jumps
 * back into the newest frame, which runs its handler and calls
 * __pthread_unwind_next(buf) to go on to the next. libweft-pthread.so
 * defines those three calls (preload.c) and keeps the frames per ULT in
 * wf_ult.px_unwind, linked through the buffer's first pad word; weft_exit
 * unwinds them here before it runs weft's own cleanup frames.
 */
#include <setjmp.h>

#include "posix/posix.h"
#include "sched/sched.h"
#include "sync/wait.h"

_Static_assert(sizeof(((__pthread_unwind_buf_t *)0)->__pad) >= sizeof(void *), "link word");

_Noreturn void wf_px_unwind(wf_ult_t *u)
{
	__pthread_unwind_buf_t *b = u->px_unwind;
	u->px_unwind = b->__pad[0];
	/* glibc's cancel buffer is a jmp_buf without the saved signal mask;
	 * the push saved none (mask_was_saved 0), so longjmp never reads it. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
	longjmp((struct __jmp_buf_tag *)(void *)b->__cancel_jmp_buf, 1);
#pragma GCC diagnostic pop
}
