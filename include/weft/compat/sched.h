/* weft's <sched.h>: glibc's, with sched_yield yielding the calling ULT.
 * Found first on the include path via `pkg-config --cflags weft-pthread`. */
#ifndef WEFT_COMPAT_SCHED_H
#define WEFT_COMPAT_SCHED_H

#include_next <sched.h>

#ifdef __cplusplus
extern "C" {
#endif

extern int weft_px_sched_yield(void);

#define sched_yield weft_px_sched_yield

#ifdef __cplusplus
}
#endif

#endif
