/* POSIX threads on ULTs: creation, joining, exit, ids, attributes, once,
 * thread-specific data, yielding and sleeping. See posix.h. */
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "posix/posix.h"
#include "sched/sched.h"

/* What weft keeps in a pthread_attr_t. */
typedef struct {
	uint32_t magic;
	uint8_t detach, inherit, scope, reserved;
	int32_t policy, prio;
	size_t stacksize; /* 0: weft's default */
	void *stackaddr;  /* lowest address of a caller-owned stack, or NULL */
	size_t guardsize;
} wf_px_attr_t;

#define WF_PX_ATTR_MAGIC 0x57504154u /* "WPAT" */

_Static_assert(sizeof(wf_px_attr_t) <= sizeof(pthread_attr_t), "attr must fit pthread_attr_t");

static wf_px_attr_t *attr_of(const pthread_attr_t *a)
{
	wf_px_attr_t *x = (wf_px_attr_t *)a;
	return a && x->magic == WF_PX_ATTR_MAGIC ? x : NULL;
}

int wf_px_ensure(void)
{
	return weft_num_workers() > 0 ? 0 : weft_yield(); /* any call starts weft lazily */
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

/* Accepted and stored; weft has no priority scheduler yet (see
 * docs/posix-coverage.md). */
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
	if (policy != SCHED_OTHER && policy != SCHED_FIFO && policy != SCHED_RR &&
	    policy != SCHED_BATCH && policy != SCHED_IDLE)
		return 0;
	return prio >= sched_get_priority_min(policy) && prio <= sched_get_priority_max(policy);
}

WF_PX_API int WF_PX(pthread_attr_setschedpolicy)(pthread_attr_t *a, int policy)
{
	wf_px_attr_t *x = attr_of(a);
	if (!x || !valid_sched(policy, sched_get_priority_min(policy)))
		return EINVAL;
	x->policy = policy;
	return 0;
}

WF_PX_API int WF_PX(pthread_attr_setschedparam)(pthread_attr_t *a, const struct sched_param *p)
{
	wf_px_attr_t *x = attr_of(a);
	if (!x || !p || !valid_sched(x->policy, p->sched_priority))
		return EINVAL;
	x->prio = p->sched_priority;
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

static int to_weft_attr(const wf_px_attr_t *x, weft_attr_t *w)
{
	int e = weft_attr_init(w);
	if (e)
		return e;
	if (!x)
		return 0;
	if (x->stackaddr)
		e = weft_attr_setstack(w, x->stackaddr, x->stacksize);
	else if (x->stacksize)
		e = weft_attr_setstacksize(w, x->stacksize < WEFT_STACK_MIN ? WEFT_STACK_MIN
									    : x->stacksize);
	if (!e)
		e = weft_attr_setdetached(w, x->detach == PTHREAD_CREATE_DETACHED);
	return e;
}

WF_PX_API int WF_PX(pthread_create)(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *),
				    void *arg)
{
	if (!t || !fn || (a && !attr_of(a)))
		return EINVAL;
	weft_attr_t wa;
	int e = to_weft_attr(attr_of(a), &wa);
	if (e)
		return e;
	weft_t id;
	e = weft_create(&id, &wa, fn, arg);
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
	return weft_join(wf_px_to_weft(t), ret);
}

WF_PX_API int WF_PX(pthread_detach)(pthread_t t)
{
	if (!wf_px_is_ult(t))
		return ESRCH;
	return weft_detach(wf_px_to_weft(t));
}

WF_PX_API _Noreturn void WF_PX(pthread_exit)(void *ret)
{
	if (weft_self() == WEFT_NULL)
		wf_panic("pthread_exit from a kernel thread weft does not run");
	weft_exit(ret);
}

WF_PX_API pthread_t WF_PX(pthread_self)(void)
{
	weft_t me = weft_self();
	return me != WEFT_NULL ? wf_px_from_weft(me) : WF_SYS(pthread_self)();
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
		return ESRCH;
	wf_ult_t *u = wf_registry_find(wf_px_to_weft(t));
	if (!u)
		return ESRCH;
	/* A racing reader may see a torn name; the NUL is always there. */
	size_t n = strlen(name);
	memcpy(u->name, name, n);
	u->name[n] = '\0';
	return 0;
}

WF_PX_API int WF_PX(pthread_getname_np)(pthread_t t, char *buf, size_t n)
{
	if (!wf_px_is_ult(t))
		return ESRCH;
	return weft_getname(wf_px_to_weft(t), buf, n);
}

WF_PX_API int WF_PX(pthread_getconcurrency)(void)
{
	return 0;
}

WF_PX_API int WF_PX(pthread_setconcurrency)(int n)
{
	return n < 0 ? EINVAL : 0; /* a hint; weft runs one worker per core */
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
	if (weft_self() == WEFT_NULL)
		return WF_SYS(sched_yield)();
	weft_yield();
	return 0;
}
