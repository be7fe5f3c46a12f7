/* weft's <signal.h>: glibc's, with the program's signal handlers run
 * through weft, which runs each in a thread that takes the signal - one
 * running, or one blocked in a wait (docs/posix-coverage.md, "Signals").
 * Found first on the include path via `pkg-config --cflags weft-pthread`.
 *
 * Written by hand, not by scripts/gen-compat-headers.py: `struct sigaction`
 * shares its function's name, so the calls are renamed by function-like
 * macros, which leave the struct alone (and a function's address taken
 * without a call, which then is glibc's). */
#ifndef WEFT_COMPAT_SIGNAL_H
#define WEFT_COMPAT_SIGNAL_H

#pragma GCC system_header /* included everywhere: no -pedantic report of include_next */
#include_next <signal.h>

#if defined(__cplusplus) && !defined(WEFT_COMPAT_ALLOW_CXX)
#error "weft's wrapper headers are for C: libstdc++ calls glibc's pthreads itself. Run C++ programs with LD_PRELOAD=libweft-pthread.so instead."
#endif

#ifdef __cplusplus
extern "C" {
#endif

struct sigaction; /* complete only with POSIX's features (__USE_POSIX) */
extern int weft_px_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
extern __sighandler_t weft_px_signal(int sig, __sighandler_t h);
extern __sighandler_t weft_px_sysv_signal(int sig, __sighandler_t h);
extern int weft_px_siginterrupt(int sig, int flag);
extern int weft_px_sigpending(__sigset_t *set);
extern int weft_px_raise(int sig);
extern int weft_px_kill(__pid_t pid, int sig);
extern int weft_px_sigwait(const __sigset_t *set, int *sig);
extern int weft_px_sigsuspend(const __sigset_t *set);
#ifdef __USE_POSIX199309
struct timespec;
extern int weft_px_sigwaitinfo(const __sigset_t *set, siginfo_t *info);
extern int weft_px_sigtimedwait(const __sigset_t *set, siginfo_t *info,
				const struct timespec *timeout);
#endif

#ifdef __cplusplus
}
#endif

#define sigaction(sig, act, old) weft_px_sigaction(sig, act, old)
#define signal(sig, h)           weft_px_signal(sig, h)
#define sysv_signal(sig, h)      weft_px_sysv_signal(sig, h)
#define siginterrupt(sig, flag)  weft_px_siginterrupt(sig, flag)
#define sigpending(set)          weft_px_sigpending(set)
#define raise(sig)               weft_px_raise(sig)
#define kill(pid, sig)           weft_px_kill(pid, sig)
#define sigwait(set, sig)        weft_px_sigwait(set, sig)
#define sigsuspend(set)          weft_px_sigsuspend(set)
#ifdef __USE_POSIX199309
#define sigwaitinfo(set, info)        weft_px_sigwaitinfo(set, info)
#define sigtimedwait(set, info, time) weft_px_sigtimedwait(set, info, time)
#endif

#endif
