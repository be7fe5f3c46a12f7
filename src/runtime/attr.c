/* Thread attributes (weft_attr_t). */
#include <string.h>

#include "runtime/runtime.h"
#include "sched/prio.h"

#define CHECK(a)                                          \
	do {                                              \
		if (!(a) || (a)->magic_ != WF_ATTR_MAGIC) \
			return EINVAL;                    \
	} while (0)

int weft_attr_init(weft_attr_t *a)
{
	if (!a)
		return EINVAL;
	memset(a, 0, sizeof *a);
	a->magic_ = WF_ATTR_MAGIC;
	a->worker_ = -1;
	a->sched_policy_ = -1; /* inherit the creator's */
	return 0;
}

int weft_attr_settls(weft_attr_t *a, int tls)
{
	CHECK(a);
	if (tls != WEFT_TLS_DEFAULT && tls != WEFT_TLS_WORKER && tls != WEFT_TLS_OWN)
		return EINVAL;
	a->tls_ = tls;
	return 0;
}

int weft_attr_gettls(const weft_attr_t *a, int *tls)
{
	CHECK(a);
	if (!tls)
		return EINVAL;
	*tls = a->tls_;
	return 0;
}

int weft_attr_destroy(weft_attr_t *a)
{
	CHECK(a);
	memset(a, 0, sizeof *a);
	return 0;
}

int weft_attr_setstacksize(weft_attr_t *a, size_t n)
{
	CHECK(a);
	if (n < WEFT_STACK_MIN || n > (1ul << 30))
		return EINVAL;
	size_t pg = wf_page_size();
	a->stacksize_ = (n + pg - 1) & ~(pg - 1);
	a->stackaddr_ = NULL;
	return 0;
}

int weft_attr_getstacksize(const weft_attr_t *a, size_t *n)
{
	CHECK(a);
	if (!n)
		return EINVAL;
	*n = a->stacksize_;
	return 0;
}

int weft_attr_setstack(weft_attr_t *a, void *addr, size_t n)
{
	CHECK(a);
	if (!addr || n < WEFT_STACK_MIN)
		return EINVAL;
	a->stackaddr_ = addr;
	a->stacksize_ = n;
	return 0;
}

int weft_attr_setdetached(weft_attr_t *a, int detached)
{
	CHECK(a);
	if (detached != 0 && detached != 1)
		return EINVAL;
	a->detached_ = detached;
	return 0;
}

int weft_attr_getdetached(const weft_attr_t *a, int *detached)
{
	CHECK(a);
	if (!detached)
		return EINVAL;
	*detached = a->detached_;
	return 0;
}

int weft_attr_setname(weft_attr_t *a, const char *name)
{
	CHECK(a);
	if (!name)
		return EINVAL;
	size_t len = strlen(name);
	if (len >= WEFT_NAME_MAX)
		return ERANGE;
	memcpy(a->name_, name, len + 1);
	return 0;
}

int weft_attr_setworker(weft_attr_t *a, int worker)
{
	CHECK(a);
	if (worker < -1)
		return EINVAL;
	a->worker_ = worker;
	return 0;
}

int weft_attr_getworker(const weft_attr_t *a, int *worker)
{
	CHECK(a);
	if (!worker)
		return EINVAL;
	*worker = a->worker_;
	return 0;
}

int weft_attr_setschedparam(weft_attr_t *a, int policy, int prio)
{
	CHECK(a);
	int e = wf_prio_check(policy, prio);
	if (e)
		return e;
	a->sched_policy_ = policy;
	a->sched_prio_ = prio;
	return 0;
}

int weft_attr_getschedparam(const weft_attr_t *a, int *policy, int *prio)
{
	CHECK(a);
	if (!policy || !prio || a->sched_policy_ < 0)
		return EINVAL;
	*policy = a->sched_policy_;
	*prio = a->sched_prio_;
	return 0;
}
