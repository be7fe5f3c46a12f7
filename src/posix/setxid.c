/* libweft-pthread.so only (WEFT_PRELOAD): setuid and its kin with threads.
 *
 * Linux keeps credentials per kernel thread; glibc's set*id functions make
 * the change on the calling thread and then on every other thread it
 * knows, through a signal whose handler makes the same call (nptl's
 * "setxid" broadcast). Under weft two things go wrong, both because a
 * ULT's thread pointer need not be its kernel thread's own descriptor:
 *   - a carrier's handler would clear its mark in the wrong descriptor, and
 *     glibc would signal it forever; weft's handler in front of glibc's
 *     fixes that for every caller (src/sched/carrier.c, "set*id");
 *   - glibc skips the thread whose descriptor is the caller's: the root
 *     ULT, which keeps the descriptor of the kernel thread that started
 *     the runtime wherever it runs, would leave that kernel thread with
 *     the old credentials. So each wrapper below makes glibc's call inside
 *     a system call section (the ULT stays on its kernel thread) with that
 *     kernel thread's own descriptor installed, and gives errno back under
 *     the ULT's own thread pointer.
 * Off a ULT (a foreign thread) the call is glibc's alone. The header mode
 * has the handler but not these wrappers (docs/posix-coverage.md).
 */
#include <grp.h>
#include <unistd.h>

#include "posix/posix.h"
#include "sched/carrier.h"

#define WF_SETXID(name, params, args)                 \
	WF_PX_API int name params                     \
	{                                             \
		WF_REAL(wf_f_, int, name, params)     \
		wf_ult_t *wf_u_ = wf_section_begin(); \
		void *wf_tp_ = wf_setxid_begin();     \
		int wf_r_ = wf_f_ args;               \
		int wf_e_ = errno;                    \
		wf_setxid_end(wf_tp_);                \
		errno = wf_e_;                        \
		wf_section_end(wf_u_);                \
		return wf_r_;                         \
	}

WF_SETXID(setuid, (uid_t u), (u))
WF_SETXID(setgid, (gid_t g), (g))
WF_SETXID(seteuid, (uid_t u), (u))
WF_SETXID(setegid, (gid_t g), (g))
WF_SETXID(setreuid, (uid_t r, uid_t e), (r, e))
WF_SETXID(setregid, (gid_t r, gid_t e), (r, e))
WF_SETXID(setresuid, (uid_t r, uid_t e, uid_t s), (r, e, s))
WF_SETXID(setresgid, (gid_t r, gid_t e, gid_t s), (r, e, s))
WF_SETXID(setgroups, (size_t n, const gid_t *list), (n, list))
