/* weft's <semaphore.h>: glibc's types, weft's unnamed semaphores
 * (sem_init and friends on weft_sem_t, stored in sem_t). Named semaphores
 * (sem_open) stay glibc's. See docs/posix-coverage.md. */
#ifndef WEFT_COMPAT_SEMAPHORE_H
#define WEFT_COMPAT_SEMAPHORE_H

#include_next <semaphore.h>

#ifdef __cplusplus
extern "C" {
#endif

extern int weft_px_sem_clockwait(sem_t *s, clockid_t c, const struct timespec *t);
extern int weft_px_sem_destroy(sem_t *s);
extern int weft_px_sem_getvalue(sem_t *s, int *v);
extern int weft_px_sem_init(sem_t *s, int pshared, unsigned v);
extern int weft_px_sem_post(sem_t *s);
extern int weft_px_sem_timedwait(sem_t *s, const struct timespec *t);
extern int weft_px_sem_trywait(sem_t *s);
extern int weft_px_sem_wait(sem_t *s);

#define sem_clockwait weft_px_sem_clockwait
#define sem_destroy   weft_px_sem_destroy
#define sem_getvalue  weft_px_sem_getvalue
#define sem_init      weft_px_sem_init
#define sem_post      weft_px_sem_post
#define sem_timedwait weft_px_sem_timedwait
#define sem_trywait   weft_px_sem_trywait
#define sem_wait      weft_px_sem_wait

#ifdef __cplusplus
}
#endif

#endif
