/* POSIX threads on ULTs: creation, joining, exit, ids, attributes, once,
 * thread-specific data, yielding and sleeping. See posix.h. */
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "posix/posix.h"
#include "sched/carrier.h"
#include "trace/trace.h"
#include "runtime/runtime.h"
#include "sched/sched.h"
#include "sync/wait.h"

/* What weft keeps in a pthread_attr_t. */
typedef struct {
	uint32_t magic;
	uint8_t detach, inherit, scope, has_sigmask;
	int32_t policy, prio;
	size_t stacksize; /* 0: weft's default */
	void *stackaddr;  /* lowest address of a caller-owned stack, or NULL */
	size_t guardsize;
	int32_t worker;    /* affinity: the worker to bind to, or -1 */
	int32_t sched_set; /* SCHED_SET_* bits: which of policy, prio were set */
	uint64_t sigmask;  /* pthread_attr_setsigmask_np (if has_sigmask) */
} wf_px_attr_t;

#define WF_PX_ATTR_MAGIC 0x57504154u /* "WPAT" */

/* wf_px_attr_t.sched_set: an explicit-scheduling thread takes what was set
 * and its creator's value for the rest, as glibc's pthread_create. */
enum { SCHED_SET_POLICY = 1, SCHED_SET_PRIO = 2 };

/* pthread_setattr_default_np's attributes (magic 0: none set). */
static wf_px_attr_t default_attr;
static wf_spinlock_t default_lock;

_Static_assert(sizeof(wf_px_attr_t) <= sizeof(pthread_attr_t), "attr must fit pthread_attr_t");

static wf_px_attr_t *attr_of(const pthread_attr_t *a)
{
	wf_px_attr_t *x = (wf_px_attr_t *)a;
	return a && x->magic == WF_PX_ATTR_MAGIC ? x : NULL;
}

/* Start weft if it is not running. The process's main thread becomes the
 * root ULT then, so pthread_self() gives it a ULT id from its first call
 * on (runtime/init.c, wf_start_lazily). */
int wf_px_ensure(void)
{
	if (unlikely(atomic_load_explicit(&wf_rt.state, memory_order_acquire) != WF_RT_RUNNING))
		atomic_store_explicit(&wf_posix_start, 1, memory_order_relaxed);
	return wf_ensure_runtime();
}

/* ---- attributes -------------------------------------------------------------- */

WF_PX_API int WF_PX(pthread_attr_init)(pthread_attr_t *a)
{
	if (!a)
		return EINVAL;
	memset(a, 0, sizeof *a);
	wf_px_attr_t *x = (wf_px_attr_t *)a;
	x->magic = WF_PX_ATTR_MAGIC;
	x->detach = PTHREAD_CREATE_JOINABLE;
	x->inherit = PTHREAD_INHERIT_SCHED;
	x->scope = PTHREAD_SCOPE_SYSTEM;
	x->policy = SCHED_OTHER;
	x->guardsize = (size_t)sysconf(_SC_PAGESIZE);
	x->worker = -1;
	return 0;
}

WF_PX_API int WF_PX(pthread_attr_destroy)(pthread_attr_t *a)
{
	wf_px_attr_t *x = attr_of(a);
	if (!x)
		return EINVAL;
	x->magic = 0;
	return 0;
}

#define ATTR_GET(field, type, name)                                   \
	WF_PX_API int WF_PX(name)(const pthread_attr_t *a, type *out) \
	{                                                             \
		wf_px_attr_t *x = attr_of(a);                         \
		if (!x || !out)                                       \
			return EINVAL;                                \
		*out = (type)x->field;                                \
		return 0;                                             \
	}

ATTR_GET(detach, int, pthread_attr_getdetachstate)
ATTR_GET(inherit, int, pthread_attr_getinheritsched)
ATTR_GET(scope, int, pthread_attr_getscope)
ATTR_GET(policy, int, pthread_attr_getschedpolicy)
ATTR_GET(guardsize, size_t, pthread_attr_getguardsize)

WF_PX_API int WF_PX(pthread_attr_setdetachstate)(pthread_attr_t *a, int v)
{
	wf_px_attr_t *x = attr_of(a);
	if (!x || (v != PTHREAD_CREATE_JOINABLE && v != PTHREAD_CREATE_DETACHED))
		return EINVAL;
	x->detach = (uint8_t)v;
	return 0;
}

/* Scheduling attributes order ULTs on workers that run the prio
 * scheduler, and order every wait queue (docs/scheduling.md). */
WF_PX_API int WF_PX(pthread_attr_setinheritsched)(pthread_attr_t *a, int v)
{
	wf_px_attr_t *x = attr_of(a);
	if (!x || (v != PTHREAD_INHERIT_SCHED && v != PTHREAD_EXPLICIT_SCHED))
		return EINVAL;
	x->inherit = (uint8_t)v;
	return 0;
}

WF_PX_API int WF_PX(pthread_attr_setscope)(pthread_attr_t *a, int v)
{
	wf_px_attr_t *x = attr_of(a);
	if (!x || (v != PTHREAD_SCOPE_SYSTEM && v != PTHREAD_SCOPE_PROCESS))
		return EINVAL;
	if (v == PTHREAD_SCOPE_PROCESS)
		return ENOTSUP; /* as glibc: contention scope is the system's */
	x->scope = (uint8_t)v;
	return 0;
}

static int valid_sched(int policy, int prio)
{
	return wf_prio_check(policy, prio) == 0;
}

WF_PX_API int WF_PX(pthread_attr_setschedpolicy)(pthread_attr_t *a, int policy)
{
	wf_px_attr_t *x = attr_of(a);
	if (!x || !valid_sched(policy, sched_get_priority_min(policy)))
		return EINVAL;
	x->policy = policy;
	x->sched_set |= SCHED_SET_POLICY;
	return 0;
}

WF_PX_API int WF_PX(pthread_attr_setschedparam)(pthread_attr_t *a, const struct sched_param *p)
{
	wf_px_attr_t *x = attr_of(a);
	if (!x || !p || !valid_sched(x->policy, p->sched_priority))
		return EINVAL;
	x->prio = p->sched_priority;
	x->sched_set |= SCHED_SET_PRIO;
	return 0;
}

WF_PX_API int WF_PX(pthread_attr_getschedparam)(const pthread_attr_t *a, struct sched_param *p)
{
	wf_px_attr_t *x = attr_of(a);
	if (!x || !p)
		return EINVAL;
	p->sched_priority = x->prio;
	return 0;
}

WF_PX_API int WF_PX(pthread_attr_setguardsize)(pthread_attr_t *a, size_t n)
{
	wf_px_attr_t *x = attr_of(a);
	if (!x)
		return EINVAL;
	x->guardsize = n; /* stored; weft guards its own stacks (one page) */
	return 0;
}

WF_PX_API int WF_PX(pthread_attr_setstacksize)(pthread_attr_t *a, size_t n)
{
	wf_px_attr_t *x = attr_of(a);
	if (!x || n < (size_t)PTHREAD_STACK_MIN)
		return EINVAL;
	x->stacksize = n;
	return 0;
}

WF_PX_API int WF_PX(pthread_attr_getstacksize)(const pthread_attr_t *a, size_t *n)
{
	wf_px_attr_t *x = attr_of(a);
	if (!x || !n)
		return EINVAL;
	*n = x->stacksize ? x->stacksize : wf_rt.stack_size ? wf_rt.stack_size : 64 * 1024;
	return 0;
}

WF_PX_API int WF_PX(pthread_attr_setstack)(pthread_attr_t *a, void *addr, size_t n)
{
	wf_px_attr_t *x = attr_of(a);
	if (!x || !addr || n < (size_t)PTHREAD_STACK_MIN)
		return EINVAL;
	x->stackaddr = addr;
	x->stacksize = n;
	return 0;
}

WF_PX_API int WF_PX(pthread_attr_getstack)(const pthread_attr_t *a, void **addr, size_t *n)
{
	wf_px_attr_t *x = attr_of(a);
	if (!x || !addr || !n)
		return EINVAL;
	*addr = x->stackaddr;
	return WF_PX(pthread_attr_getstacksize)(a, n);
}

/* ---- threads ------------------------------------------------------------------- */

/* A POSIX thread has thread-local storage of its own (weft_attr_settls),
 * unless WEFT_TLS=worker or where it cannot be had (wf_tls_probe). */
static int px_tls(void)
{
	return wf_rt.tls != WEFT_TLS_WORKER && wf_tls_probe(NULL) == 0 ? WEFT_TLS_OWN
								       : WEFT_TLS_WORKER;
}

static int to_weft_attr(const wf_px_attr_t *x, weft_attr_t *w)
{
	int e = weft_attr_init(w);
	if (e)
		return e;
	w->tls_ = px_tls();
	/* Scheduling parameters: explicit ones from x, else the creator's. */
	wf_worker_t *me = wf_worker_self();
	if (x && x->inherit == PTHREAD_EXPLICIT_SCHED) {
		/* What the attribute sets, the creator's for the rest; a pair
		 * that is not valid (FIFO with priority 0 set): EINVAL, as
		 * glibc's pthread_create. */
		wf_ult_t *cr = me ? me->current : NULL;
		int policy =
			(x->sched_set & SCHED_SET_POLICY) || !cr ? x->policy : cr->sched_policy;
		int prio = (x->sched_set & SCHED_SET_PRIO) || !cr ? x->prio : cr->sched_prio;
		if ((e = weft_attr_setschedparam(w, policy, prio)) != 0)
			return e;
	} else if (me && me->current) {
		w->sched_policy_ = me->current->sched_policy;
		w->sched_prio_ = me->current->sched_prio;
	}
	if (x && x->has_sigmask)
		w->sigmask_ = x->sigmask;
	else if (me && me->current) /* a new thread inherits its creator's mask */
		w->sigmask_ = atomic_load_explicit(&me->current->sig_mask, memory_order_relaxed);
	if (!x)
		return 0;
	if (x->stackaddr) {
		e = weft_attr_setstack(w, x->stackaddr, x->stacksize);
	} else if (x->stacksize) {
		/* The size of the whole stack, weft's descriptor at its top
		 * included, as glibc's includes its thread descriptor and
		 * static TLS: a program that runs down the size it asked for
		 * reaches the guard page, as on glibc. */
		size_t n = x->stacksize;
		e = weft_attr_setstacksize(w, n < WEFT_STACK_MIN ? WEFT_STACK_MIN : n);
	}
	if (!e)
		e = weft_attr_setdetached(w, x->detach == PTHREAD_CREATE_DETACHED);
	if (!e && x->worker >= 0 && x->worker < weft_num_workers())
		e = weft_attr_setworker(w, x->worker);
	w->guardsize_ = x->stackaddr ? 0 : x->guardsize; /* POSIX: none on a caller's stack */
	return e;
}

/* A thread made without an affinity of its own inherits its creator's
 * (Linux: the CPU mask is inherited), if the creator set one. */
static int inherit_affinity(const wf_px_attr_t *x, weft_attr_t *w)
{
	wf_ult_t *me = wf_self();
	if ((!x || x->worker < 0) && me && me->px_affinity >= 0 &&
	    me->px_affinity < weft_num_workers())
		return weft_attr_setworker(w, me->px_affinity);
	return 0;
}

WF_PX_API int WF_PX(pthread_create)(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *),
				    void *arg)
{
	if (!t || !fn || (a && !attr_of(a)))
		return EINVAL;
	int e0 = wf_px_ensure(); /* before reading the creator's parameters */
	if (e0)
		return e0 == ENOMEM ? EAGAIN : e0;
	wf_px_attr_t dflt;
	const wf_px_attr_t *x = attr_of(a);
	if (!x) { /* the defaults of pthread_setattr_default_np, if any */
		wf_spin_lock(&default_lock);
		dflt = default_attr;
		wf_spin_unlock(&default_lock);
		x = dflt.magic ? &dflt : NULL;
	}
	weft_attr_t wa;
	int e = to_weft_attr(x, &wa);
	if (!e)
		e = inherit_affinity(x, &wa);
	if (e)
		return e;
	weft_t id;
	e = wf_create(&id, &wa, fn, arg, 0);
	weft_attr_destroy(&wa);
	if (e == ENOMEM)
		e = EAGAIN; /* POSIX: "lacked the resources" */
	if (!e)
		*t = wf_px_from_weft(id);
	return e;
}

WF_PX_API int WF_PX(pthread_join)(pthread_t t, void **ret)
{
	if (!wf_px_is_ult(t))
		return ESRCH;
	return wf_join_id(wf_px_to_weft(t), ret);
}

WF_PX_API int WF_PX(pthread_detach)(pthread_t t)
{
	if (!wf_px_is_ult(t))
		return ESRCH;
	return wf_detach_id(wf_px_to_weft(t));
}

/* A kernel thread weft does not run - main before it used weft, a thread
 * glibc made - exits as glibc's threads do: the process ends with status 0
 * when its last thread has gone. */
WF_PX_API _Noreturn void WF_PX(pthread_exit)(void *ret)
{
	if (!wf_self()) {
		WF_SYS(pthread_exit)(ret);
		__builtin_unreachable();
	}
	wf_exit(ret);
}

WF_PX_API pthread_t WF_PX(pthread_self)(void)
{
	wf_px_ensure(); /* the main thread's id is a ULT id from the start */
	wf_ult_t *me = wf_self();
	if (!me)
		me = wf_section_self(); /* a handler inside a blocking call */
	return me ? wf_px_from_weft(me->id) : WF_SYS(pthread_self)();
}

WF_PX_API int WF_PX(pthread_equal)(pthread_t a, pthread_t b)
{
	return a == b;
}

WF_PX_API int WF_PX(pthread_once)(pthread_once_t *o, void (*fn)(void))
{
	_Static_assert(sizeof(weft_once_t) <= sizeof(pthread_once_t), "once must fit");
	return weft_once((weft_once_t *)o, fn);
}

WF_PX_API int WF_PX(pthread_setname_np)(pthread_t t, const char *name)
{
	if (!name)
		return EINVAL;
	if (strlen(name) >= 16)
		return ERANGE; /* as glibc: 15 characters and the NUL */
	if (!wf_px_is_ult(t))
		return WF_SYS(pthread_setname_np)(t, name); /* a kernel thread weft does not run */
	wf_ult_t *u = wf_registry_find(wf_px_to_weft(t));
	if (!u)
		return ESRCH;
	/* A racing reader may see a torn name; the NUL is always there. */
	size_t n = strlen(name);
	memcpy(u->name, name, n);
	u->name[n] = '\0';
	if (WF_TRACING())
		wf_trace_name(wf_worker_self(), u);
	return 0;
}

WF_PX_API int WF_PX(pthread_getname_np)(pthread_t t, char *buf, size_t n)
{
	if (!wf_px_is_ult(t))
		return WF_SYS(pthread_getname_np)(t, buf, n);
	return weft_getname(wf_px_to_weft(t), buf, n);
}

/* A hint, stored and returned as POSIX says; weft runs one worker per core
 * whatever it is. */
static atomic_int concurrency;

WF_PX_API int WF_PX(pthread_getconcurrency)(void)
{
	return atomic_load_explicit(&concurrency, memory_order_relaxed);
}

WF_PX_API int WF_PX(pthread_setconcurrency)(int n)
{
	if (n < 0)
		return EINVAL;
	atomic_store_explicit(&concurrency, n, memory_order_relaxed);
	return 0;
}

/* ---- thread-specific data --------------------------------------------------------- */

_Static_assert(sizeof(weft_key_t) == sizeof(pthread_key_t), "keys must match");
_Static_assert(WEFT_KEYS_MAX >= PTHREAD_KEYS_MAX, "as many keys as glibc");

WF_PX_API int WF_PX(pthread_key_create)(pthread_key_t *k, void (*dtor)(void *))
{
	return weft_key_create((weft_key_t *)k, dtor);
}

WF_PX_API int WF_PX(pthread_key_delete)(pthread_key_t k)
{
	return weft_key_delete(k);
}

WF_PX_API void *WF_PX(pthread_getspecific)(pthread_key_t k)
{
	return weft_getspecific(k);
}

/* glibc declares the value access(none): GCC then takes passing it on for
 * a read of uninitialised memory. It is only a pointer value. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
WF_PX_API int WF_PX(pthread_setspecific)(pthread_key_t k, const void *v)
{
	return weft_setspecific(k, v);
}
#pragma GCC diagnostic pop

/* ---- yielding ----------------------------------------------------------------------- */

WF_PX_API int WF_PX(sched_yield)(void)
{
	wf_worker_t *w = wf_worker_self();
	if (!w || !w->current)
		return WF_SYS(sched_yield)();
	/* Nothing else of ours was ready: give the CPU to the other
	 * processes' threads, as sched_yield(2) does (a SCHED_FIFO process
	 * that spins on it must let another of its priority run). */
	unsigned long n = atomic_load_explicit(&w->n_switches, memory_order_relaxed);
	weft_yield();
	if (atomic_load_explicit(&w->n_switches, memory_order_relaxed) == n)
		WF_SYS(sched_yield)(); /* no switch on w: it never left it */
	return 0;
}

/* ---- glibc extensions and the rest of <pthread.h> ------------------------------------ */

static wf_ult_t *ult_of(pthread_t t)
{
	return wf_px_is_ult(t) ? wf_registry_find(wf_px_to_weft(t)) : NULL;
}

/* glibc >= 2.34 declares pthread_yield as another name of sched_yield (an
 * asm label), so the preload build's sched_yield serves both. */
#ifndef WEFT_PRELOAD
WF_PX_API int WF_PX(pthread_yield)(void)
{
	return WF_PX(sched_yield)();
}
#endif

/* Scheduling parameters order ULTs on workers that run prio and order
 * every wait queue (src/sched/prio.c, docs/scheduling.md). */
WF_PX_API int WF_PX(pthread_setschedparam)(pthread_t t, int policy, const struct sched_param *p)
{
	if (!p || !valid_sched(policy, p->sched_priority))
		return EINVAL;
	if (!wf_px_is_ult(t))
		return WF_SYS(pthread_setschedparam)(t, policy, p);
	wf_ult_t *u = ult_of(t);
	if (!u)
		return ESRCH;
	wf_setsched(u, policy, p->sched_priority);
	return 0;
}

WF_PX_API int WF_PX(pthread_getschedparam)(pthread_t t, int *policy, struct sched_param *p)
{
	if (!policy || !p)
		return EINVAL;
	if (!wf_px_is_ult(t))
		return WF_SYS(pthread_getschedparam)(t, policy, p);
	wf_ult_t *u = ult_of(t);
	if (!u)
		return ESRCH;
	*policy = u->sched_policy;
	p->sched_priority = u->sched_prio;
	return 0;
}

WF_PX_API int WF_PX(pthread_setschedprio)(pthread_t t, int prio)
{
	wf_ult_t *u = ult_of(t);
	if (!u)
		return ESRCH;
	if (!valid_sched(u->sched_policy, prio))
		return EINVAL;
	wf_setsched(u, u->sched_policy, prio);
	return 0;
}

/* The thread's attributes as it runs: its stack, detach state, guard. */
WF_PX_API int WF_PX(pthread_getattr_np)(pthread_t t, pthread_attr_t *a)
{
	if (!a)
		return EINVAL;
	if (!wf_px_is_ult(t))
		return WF_SYS(pthread_getattr_np)(t, a);
	wf_ult_t *u = ult_of(t);
	if (!u)
		return ESRCH;
	WF_PX(pthread_attr_init)(a);
	wf_px_attr_t *x = (wf_px_attr_t *)a;
	uintptr_t j = atomic_load_explicit(&u->joiner, memory_order_acquire);
	x->detach = j == WF_JOIN_DETACHED ? PTHREAD_CREATE_DETACHED : PTHREAD_CREATE_JOINABLE;
	/* The whole stack above its guard, weft's descriptor at the top
	 * included, as glibc's includes its own: the size it was made with. */
	x->stackaddr = u->stack.lo;
	x->stacksize =
		(size_t)((char *)u->stack.map_base + u->stack.map_size - (char *)u->stack.lo);
	x->guardsize = u->stack.kind == WF_STACK_GUARDED
			       ? (size_t)((char *)u->stack.lo - (char *)u->stack.map_base)
			       : 0;
	x->policy = u->sched_policy;
	x->prio = u->sched_prio;
	x->sched_set = SCHED_SET_POLICY | SCHED_SET_PRIO;
	if (u->stack.kind == WF_STACK_THREAD) {
		/* The root ULT runs on its kernel thread's own stack: the
		 * thread that started the runtime (not glibc's pthread_self(),
		 * the caller's block). */
		pthread_attr_t k;
		if (WF_SYS(pthread_getattr_np)(wf_rt.root_thread, &k) == 0) {
			WF_SYS(pthread_attr_getstack)(&k, &x->stackaddr, &x->stacksize);
			WF_SYS(pthread_attr_destroy)(&k);
		}
	}
	return 0;
}

/* Join without blocking: EBUSY while t runs. */
WF_PX_API int WF_PX(pthread_tryjoin_np)(pthread_t t, void **ret)
{
	wf_ult_t *u = ult_of(t);
	if (!u)
		return ESRCH;
	uintptr_t j = atomic_load_explicit(&u->joiner, memory_order_acquire);
	if (j == WF_JOIN_DETACHED)
		return EINVAL;
	if (j != WF_JOIN_EXITED)
		return EBUSY;
	return wf_join_id(wf_px_to_weft(t), ret);
}

/* Signals to a ULT are delivered by weft itself (src/sync/signal.c): the
 * handler runs in the target ULT, a blocked signal stays pending, and a ULT
 * in a sleep or another interruptible wait is woken with EINTR. */
WF_PX_API int WF_PX(pthread_kill)(pthread_t t, int sig)
{
	if (sig < 0 || sig >= NSIG)
		return EINVAL;
	if (!wf_px_is_ult(t))
		return WF_SYS(pthread_kill)(t, sig);
	wf_ult_t *u = wf_registry_find(wf_px_to_weft(t));
	if (!u)
		return ESRCH;
	return sig == 0 ? 0 : wf_sig_send(u, sig);
}

/* A ULT's mask is its own (src/sync/signal.c); a kernel thread's is glibc's. */
WF_PX_API int WF_PX(pthread_sigmask)(int how, const __sigset_t *set, __sigset_t *old)
{
	wf_worker_t *w = wf_worker_self();
	if (!w || !w->current)
		return WF_SYS(pthread_sigmask)(how, set, old);
	return wf_sig_mask(w->current, how, set, old);
}

/* In a multithreaded process sigprocmask is pthread_sigmask (glibc's is):
 * the calling thread's mask. Under weft it must be the ULT's, or the next
 * switch would put the ULT's back in the kernel thread (coreutils'
 * timeout blocks SIGCHLD with it, then waits in sigsuspend). */
WF_PX_API int WF_PX(sigprocmask)(int how, const __sigset_t *set, __sigset_t *old)
{
	int e = WF_PX(pthread_sigmask)(how, set, old);
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

/* Affinity: weft binds a ULT to one worker; worker i runs on the i-th CPU
 * the process may use when WEFT_PIN=1. A set naming every usable CPU
 * unbinds; otherwise the ULT is bound to the worker of the lowest CPU in
 * the set. It takes effect at the ULT's next scheduling point (at once
 * for the caller, which yields). */
static int worker_of_cpu(int cpu)
{
	cpu_set_t allowed;
	if (WF_SYS(sched_getaffinity)(0, sizeof allowed, &allowed))
		return -1;
	int idx = 0;
	for (int c = 0; c < cpu && c < CPU_SETSIZE; c++)
		idx += CPU_ISSET(c, &allowed) != 0;
	return CPU_ISSET(cpu, &allowed) ? idx % weft_num_workers() : -1;
}

static int nth_cpu(int n)
{
	cpu_set_t allowed;
	if (WF_SYS(sched_getaffinity)(0, sizeof allowed, &allowed))
		return -1;
	int count = CPU_COUNT(&allowed);
	if (count == 0)
		return -1;
	for (int c = 0, i = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &allowed) && i++ == n % count)
			return c;
	return -1;
}

/* The worker a CPU set binds to: -1 for a set naming every usable CPU
 * (unbound), else the worker of its lowest usable CPU; -2 if it names none. */
static int worker_of_set(size_t size, const cpu_set_t *set)
{
	cpu_set_t allowed;
	if (WF_SYS(sched_getaffinity)(0, sizeof allowed, &allowed))
		return -2;
	int first = -1, all = 1;
	for (int c = 0; c < CPU_SETSIZE && (size_t)c < size * 8; c++) {
		int in = CPU_ISSET_S(c, size, set) != 0;
		if (in && first < 0 && CPU_ISSET(c, &allowed))
			first = c;
		if (CPU_ISSET(c, &allowed) && !in)
			all = 0;
	}
	if (first < 0)
		return -2;
	return all ? -1 : worker_of_cpu(first);
}

static int set_affinity(wf_ult_t *u, size_t size, const cpu_set_t *set)
{
	int wk = worker_of_set(size, set);
	if (wk == -2)
		return EINVAL; /* no usable CPU in the set */
	u->bound_worker = u->px_affinity = wk;
	if (u == wf_self())
		wf_yield(); /* move now */
	return 0;
}

static int get_affinity(wf_ult_t *u, size_t size, cpu_set_t *set)
{
	/* The kernel's answer first: it also judges size and set (EINVAL,
	 * EFAULT) as it would for a thread. */
	if (WF_SYS(sched_getaffinity)(0, size, set))
		return errno;
	if (u->bound_worker < 0)
		return 0;
	CPU_ZERO_S(size, set);
	int c = nth_cpu(u->bound_worker);
	if (c < 0 || (size_t)c >= size * 8)
		return EINVAL;
	CPU_SET_S(c, size, set);
	return 0;
}

WF_PX_API int WF_PX(pthread_setaffinity_np)(pthread_t t, size_t size, const cpu_set_t *set)
{
	if (!set)
		return EINVAL;
	if (!wf_px_is_ult(t))
		return WF_SYS(pthread_setaffinity_np)(t, size, set);
	wf_ult_t *u = ult_of(t);
	return u ? set_affinity(u, size, set) : ESRCH;
}

WF_PX_API int WF_PX(pthread_getaffinity_np)(pthread_t t, size_t size, cpu_set_t *set)
{
	if (!set)
		return EINVAL;
	if (!wf_px_is_ult(t))
		return WF_SYS(pthread_getaffinity_np)(t, size, set);
	wf_ult_t *u = ult_of(t);
	return u ? get_affinity(u, size, set) : ESRCH;
}

/* sched_setaffinity and sched_getaffinity of the calling thread (pid 0, or
 * the id of the kernel thread it runs on, which is what gettid tells it)
 * act on the calling ULT, as glibc's act on the calling thread:
 * pthread_setaffinity_np and pthread_getaffinity_np of it. Any other pid
 * (another process, a kernel thread) is the kernel's. -1 and errno. */
static int self_pid(pid_t pid)
{
	return pid == 0 || pid == (pid_t)syscall(SYS_gettid);
}

/* An error number as a system call reports it: -1 and errno. */
static int as_errno(int e)
{
	if (!e)
		return 0;
	errno = e;
	return -1;
}

WF_PX_API int WF_PX(sched_setaffinity)(pid_t pid, size_t size, const cpu_set_t *set)
{
	wf_ult_t *u = wf_self();
	if (!u || !set || !self_pid(pid))
		return WF_SYS(sched_setaffinity)(pid, size, set);
	return as_errno(set_affinity(u, size, set));
}

WF_PX_API int WF_PX(sched_getaffinity)(pid_t pid, size_t size, cpu_set_t *set)
{
	wf_ult_t *u = wf_self();
	if (!u || !set || !self_pid(pid))
		return WF_SYS(sched_getaffinity)(pid, size, set);
	return as_errno(get_affinity(u, size, set));
}

/* The obsolete pair (removed in POSIX.1-2008, still in glibc): addr is the
 * stack's highest address on a downward-growing stack, as glibc takes it. */
WF_PX_API int WF_PX(pthread_attr_setstackaddr)(pthread_attr_t *a, void *addr)
{
	wf_px_attr_t *x = attr_of(a);
	if (!x || !addr)
		return EINVAL;
	size_t n = x->stacksize ? x->stacksize : wf_rt.stack_size ? wf_rt.stack_size : 64 * 1024;
	x->stackaddr = (char *)addr - n;
	x->stacksize = n;
	return 0;
}

WF_PX_API int WF_PX(pthread_attr_getstackaddr)(const pthread_attr_t *a, void **addr)
{
	wf_px_attr_t *x = attr_of(a);
	if (!x || !addr)
		return EINVAL;
	*addr = x->stackaddr ? (char *)x->stackaddr + x->stacksize : NULL;
	return 0;
}

/* ---- sleeping: the calling ULT parks, its worker runs others ------------------------- */

static int in_ult(void)
{
	return wf_self() != NULL;
}

WF_PX_API unsigned WF_PX(sleep)(unsigned s)
{
	if (!in_ult())
		return WF_SYS(sleep)(s);
	struct timespec req = {.tv_sec = (time_t)s}, rem = {0, 0};
	if (weft_nanosleep(&req, &rem) == EINTR) /* unslept seconds, rounded up */
		return (unsigned)rem.tv_sec + (rem.tv_nsec > 0);
	return 0;
}

WF_PX_API int WF_PX(usleep)(__useconds_t us) /* useconds_t: needs unistd.h */
{
	if (!in_ult())
		return WF_SYS(usleep)(us);
	struct timespec req = {.tv_sec = (time_t)(us / 1000000u),
			       .tv_nsec = (long)(us % 1000000u) * 1000};
	int e = weft_nanosleep(&req, NULL);
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

WF_PX_API int WF_PX(nanosleep)(const struct timespec *req, struct timespec *rem)
{
	if (!in_ult())
		return WF_SYS(nanosleep)(req, rem);
	int e = weft_nanosleep(req, rem);
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

WF_PX_API int WF_PX(clock_nanosleep)(clockid_t clock, int flags, const struct timespec *req,
				     struct timespec *rem)
{
	if (!in_ult())
		return WF_SYS(clock_nanosleep)(clock, flags, req, rem);
	return weft_clock_nanosleep(clock, flags, req, rem);
}

/* ---- affinity and signal mask in the attributes (glibc extensions) ------------------- */

WF_PX_API int WF_PX(pthread_attr_setaffinity_np)(pthread_attr_t *a, size_t size,
						 const cpu_set_t *set)
{
	wf_px_attr_t *x = attr_of(a);
	if (!x)
		return EINVAL;
	if (!set || size == 0) {
		x->worker = -1;
		return 0;
	}
	if (wf_px_ensure())
		return EAGAIN;
	int wk = worker_of_set(size, set);
	if (wk == -2)
		return EINVAL;
	x->worker = wk;
	return 0;
}

WF_PX_API int WF_PX(pthread_attr_getaffinity_np)(const pthread_attr_t *a, size_t size,
						 cpu_set_t *set)
{
	wf_px_attr_t *x = attr_of(a);
	if (!x || !set)
		return EINVAL;
	if (x->worker < 0)
		return WF_SYS(sched_getaffinity)(0, size, set) ? errno : 0;
	CPU_ZERO_S(size, set);
	int c = nth_cpu(x->worker);
	if (c < 0 || (size_t)c >= size * 8)
		return EINVAL;
	CPU_SET_S(c, size, set);
	return 0;
}

WF_PX_API int WF_PX(pthread_attr_setsigmask_np)(pthread_attr_t *a, const __sigset_t *set)
{
	wf_px_attr_t *x = attr_of(a);
	if (!x)
		return EINVAL;
	x->has_sigmask = set != NULL;
	x->sigmask = set ? wf_sig_bits(set) : 0;
	return 0;
}

WF_PX_API int WF_PX(pthread_attr_getsigmask_np)(const pthread_attr_t *a, __sigset_t *set)
{
	wf_px_attr_t *x = attr_of(a);
	if (!x || !set)
		return EINVAL;
	wf_sig_fill(x->has_sigmask ? x->sigmask : 0, set);
	return x->has_sigmask ? 0 : PTHREAD_ATTR_NO_SIGMASK_NP;
}

/* Defaults for threads created without attributes (glibc extension). */
WF_PX_API int WF_PX(pthread_setattr_default_np)(const pthread_attr_t *a)
{
	wf_px_attr_t *x = attr_of(a);
	if (!x || x->stackaddr)
		return EINVAL; /* as glibc: no stack address */
	wf_spin_lock(&default_lock);
	default_attr = *x;
	/* As glibc: a thread made without attributes stays joinable. */
	default_attr.detach = PTHREAD_CREATE_JOINABLE;
	wf_spin_unlock(&default_lock);
	return 0;
}

WF_PX_API int WF_PX(pthread_getattr_default_np)(pthread_attr_t *a)
{
	if (!a)
		return EINVAL;
	WF_PX(pthread_attr_init)(a);
	wf_spin_lock(&default_lock);
	if (default_attr.magic)
		*(wf_px_attr_t *)a = default_attr;
	wf_spin_unlock(&default_lock);
	return 0;
}
