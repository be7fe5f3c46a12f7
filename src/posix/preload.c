/* libweft-pthread.so only (WEFT_PRELOAD): what makes LD_PRELOAD work.
 *
 *   - wf_sys: weft's own calls to glibc's threading functions, resolved to
 *     the definitions after ours (src/util/sys.h) on first use - which may
 *     come from another library's constructor, before ours runs;
 *   - weft starts before main, from a constructor on the main thread (or
 *     earlier, lazily, when another library's constructor calls a pthread
 *     function first - libgomp's does), so main (and the program's own
 *     constructors, which run later) is the root ULT; returning from main
 *     or calling exit() from any thread ends the process as usual;
 *   - fork handlers registered before weft's constructor ran still run
 *     outside weft's (__register_atfork);
 *   - glibc's cleanup-handler protocol (unwind.c).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "posix/posix.h"
#include "runtime/runtime.h"
#include "sched/sched.h"
#include "sync/wait.h"

struct wf_sys wf_sys;

void *wf_px_next_symbol(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);
	if (!p) {
		fprintf(stderr, "weft: libweft-pthread.so: no %s after it: %s\n", name, dlerror());
		abort();
	}
	return p;
}

/* Every look-up stores the same value, so threads that race here (only
 * possible before main, if another library's constructor starts threads)
 * agree; each pointer is stored whole. */
struct wf_sys *wf_sys_resolve(void)
{
#define WF_SYS_RESOLVE(ret, name, args) \
	__atomic_store_n(&wf_sys.name, (ret(*) args)wf_px_next_symbol(#name), __ATOMIC_RELAXED);
	WF_SYS_CALLS(WF_SYS_RESOLVE)
#undef WF_SYS_RESOLVE
	return &wf_sys;
}

__attribute__((constructor(101))) static void wf_sys_init(void)
{
	wf_sys_resolve();
}

__attribute__((constructor(102))) static void wf_preload_start(void)
{
	atomic_store(&wf_posix_start, 1); /* main keeps its thread-locals (runtime/init.c) */
	int e = weft_init(NULL);
	if (e == EBUSY && atomic_load(&wf_rt.state) == WF_RT_RUNNING)
		return; /* started already, lazily, by an earlier constructor's call */
	if (e) {
		fprintf(stderr, "weft: libweft-pthread.so: weft_init: %s\n", strerror(e));
		abort();
	}
}

/* ---- fork handlers --------------------------------------------------------------- */

/* pthread_atfork is a stub linked into each object that calls it
 * (libc_nonshared.a), which calls this with the object's __dso_handle.
 * weft's handlers go in first, so that whoever registers before weft's
 * constructor ran - a library whose constructor runs first - still has
 * its prepare handler run before weft's and its child handler after
 * (runtime/fork.c). */
WF_PX_API int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
				void *dso_handle)
{
	wf_fork_register();
	return WF_SYS(__register_atfork)(prepare, parent, child, dso_handle);
}

/* ---- glibc's cleanup-handler protocol (see unwind.c) ---------------------------- */

WF_PX_API void __pthread_register_cancel(__pthread_unwind_buf_t *b)
{
	wf_ult_t *u = wf_self();
	if (!u)
		return; /* a kernel thread weft does not run: never cancelled by weft */
	wf_unwind_hook = wf_px_unwind; /* how wf_exit reaches these frames */
	b->__pad[0] = u->px_unwind;
	u->px_unwind = b;
}

WF_PX_API void __pthread_unregister_cancel(__pthread_unwind_buf_t *b)
{
	wf_ult_t *u = wf_self();
	if (u && u->px_unwind == b)
		u->px_unwind = b->__pad[0];
}

/* A handler ran during an unwind; go on to the next, or finish exiting. */
WF_PX_API _Noreturn void __pthread_unwind_next(__pthread_unwind_buf_t *b)
{
	wf_ult_t *u = wf_self();
	if (!u)
		wf_panic("__pthread_unwind_next outside a ULT");
	if (u->px_unwind)
		wf_px_unwind(u);
	wf_exit(u->retval); /* no frames left: the exit goes on */
}
