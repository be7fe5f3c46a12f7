/* Configuration: weft_config_t fields, environment variables, defaults. */
#include <ctype.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"
#include "trace/trace.h"

#define DEFAULT_STACK_SIZE (64u * 1024u)
#define DEFAULT_SPIN_NS    50000L
#define DEFAULT_SYSCALL_NS 50000L
#define DEFAULT_PREEMPT_NS 10000000L /* 10 ms, as Linux's CFS-era slices and Go's */
#define MIN_PREEMPT_NS     100000L
#define DEFAULT_SPARES     256
#define MAX_SPARES         100000
#define MAX_STACK_SIZE     (1ul << 30)

/* A decimal number with an optional k/K/m/M/g/G suffix (powers of 1024 when
 * `binary`, else no suffix allowed). Returns 0 or EINVAL. */
static int parse_num(const char *s, int binary, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s)
		return EINVAL;
	if (binary && *end) {
		switch (tolower((unsigned char)*end)) {
		case 'k':
			v *= 1024;
			break;
		case 'm':
			v *= 1024 * 1024;
			break;
		case 'g':
			v *= 1024ll * 1024 * 1024;
			break;
		default:
			return EINVAL;
		}
		end++;
	}
	if (*end)
		return EINVAL;
	*out = v;
	return 0;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

static long derived_guard_budget(void)
{
	long max = 65530;
	FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
	if (f) {
		if (fscanf(f, "%ld", &max) != 1)
			max = 65530;
		fclose(f);
	}
	/* Two VMAs per guarded stack; leave half of the map count to the
	 * program and the libraries. */
	long n = (max - 4096) / 4;
	return n > 0 ? n : -1;
}

/* One worker number of a scheduler spec, up to `stop`. */
static int spec_worker(const char *s, const char *stop, int n, int *out)
{
	if (s == stop || stop - s > 9)
		return EINVAL;
	int v = 0;
	for (; s < stop; s++) {
		if (*s < '0' || *s > '9')
			return EINVAL;
		v = v * 10 + (*s - '0');
	}
	if (v >= n)
		return EINVAL;
	*out = v;
	return 0;
}

/* The scheduler spec grammar (WEFT_SCHED, weft_config_t.scheds), in
 * docs/scheduling.md: comma-separated entries "name" (every worker) or
 * "name:N" or "name:N-M" (those workers), applied in order, so a later
 * entry overrides an earlier one; workers no entry names run steal. */
int wf_sched_spec(const char *spec, int n, const weft_sched_ops_t **at)
{
	if (!spec || !*spec)
		return EINVAL;
	if (at)
		for (int i = 0; i < n; i++)
			at[i] = &weft_sched_steal;
	const char *p = spec;
	for (;;) {
		const char *end = strchr(p, ',');
		if (!end)
			end = p + strlen(p);
		const char *colon = memchr(p, ':', (size_t)(end - p));
		const char *name_end = colon ? colon : end;
		char name[WEFT_SCHED_NAME_MAX];
		if (name_end == p || name_end - p >= WEFT_SCHED_NAME_MAX)
			return EINVAL;
		memcpy(name, p, (size_t)(name_end - p));
		name[name_end - p] = '\0';
		const weft_sched_ops_t *ops = wf_sched_find(name);
		if (!ops)
			return EINVAL;
		int lo = 0, hi = n - 1;
		if (colon) {
			const char *a = colon + 1;
			const char *dash = memchr(a, '-', (size_t)(end - a));
			if (spec_worker(a, dash ? dash : end, n, &lo))
				return EINVAL;
			hi = lo;
			if (dash && spec_worker(dash + 1, end, n, &hi))
				return EINVAL;
			if (hi < lo)
				return EINVAL;
		}
		if (at)
			for (int i = lo; i <= hi; i++)
				at[i] = ops;
		if (!*end)
			return 0;
		p = end + 1;
	}
}

int wf_config_resolve(const weft_config_t *in, weft_config_t *out)
{
	weft_config_t c = *in;
	const char *v;
	long long n;

	if (c.workers < 0 || c.workers > WF_MAX_WORKERS)
		return EINVAL;
	if (c.workers == 0) {
		if ((v = env("WEFT_WORKERS"))) {
			if (parse_num(v, 0, &n) || n < 1 || n > WF_MAX_WORKERS)
				return EINVAL;
			c.workers = (int)n;
		} else {
			cpu_set_t set;
			c.workers = WF_SYS(sched_getaffinity)(0, sizeof set, &set) == 0
					    ? CPU_COUNT(&set)
					    : 1;
			if (c.workers < 1)
				c.workers = 1;
		}
	}

	if (c.pin < -1 || c.pin > 1)
		return EINVAL;
	if (c.pin == 0) {
		c.pin = -1;
		if ((v = env("WEFT_PIN"))) {
			if (strcmp(v, "1") == 0)
				c.pin = 1;
			else if (strcmp(v, "0") != 0)
				return EINVAL;
		}
	}

	if (c.migrate < -1 || c.migrate > 1)
		return EINVAL;
	if (c.migrate == 0) {
		c.migrate = 1;
		if ((v = env("WEFT_MIGRATE"))) {
			if (strcmp(v, "0") == 0)
				c.migrate = -1;
			else if (strcmp(v, "1") != 0)
				return EINVAL;
		}
	}

	if (c.tls < WEFT_TLS_DEFAULT || c.tls > WEFT_TLS_OWN)
		return EINVAL;
	if (c.tls == WEFT_TLS_DEFAULT && (v = env("WEFT_TLS"))) {
		if (strcmp(v, "own") == 0)
			c.tls = WEFT_TLS_OWN;
		else if (strcmp(v, "worker") == 0)
			c.tls = WEFT_TLS_WORKER;
		else
			return EINVAL;
	}

	if (c.preempt_ns == 0) {
		c.preempt_ns = DEFAULT_PREEMPT_NS;
		if ((v = env("WEFT_PREEMPT_NS"))) {
			if (parse_num(v, 0, &n) || n < 0 || n > 1000000000000LL ||
			    (n > 0 && n < MIN_PREEMPT_NS))
				return EINVAL;
			c.preempt_ns = n == 0 ? -1 : (long)n;
		}
	}
	if (c.preempt_ns > 1000000000000LL || (c.preempt_ns > 0 && c.preempt_ns < MIN_PREEMPT_NS))
		return EINVAL;
	if (c.preempt_ns < 0)
		c.preempt_ns = -1;

	if (c.io < WEFT_IO_DEFAULT || c.io > WEFT_IO_URING)
		return EINVAL;
	if (c.io == WEFT_IO_DEFAULT) {
		c.io = WEFT_IO_POLL;
		if ((v = env("WEFT_IO"))) {
			if (strcmp(v, "poll") == 0)
				c.io = WEFT_IO_POLL;
			else if (strcmp(v, "off") == 0)
				c.io = WEFT_IO_OFF;
			else if (strcmp(v, "uring") == 0)
				c.io = WEFT_IO_URING;
			else
				return EINVAL;
		}
	}
	if (c.io == WEFT_IO_URING) {
		/* Named so that nobody mistakes it for a typo: weft has only the
		 * epoll poller (src/io/epoll.c says why). */
		static int told;
		if (!told++)
			fprintf(stderr, "weft: WEFT_IO=uring is not built; use poll or off\n");
		return ENOTSUP;
	}

	_Static_assert(WEFT_SCHED_PRIO == WF_SCHED_BUILTINS, "one kind per built-in");
	if (c.sched < 0 || c.sched > WF_SCHED_BUILTINS)
		return EINVAL;
	if (!c.scheds) {
		if (c.sched != WEFT_SCHED_DEFAULT)
			c.scheds = wf_sched_builtin[c.sched - 1]->name;
		else if (!(c.scheds = env("WEFT_SCHED")))
			c.scheds = weft_sched_steal.name;
	}
	if (wf_sched_spec(c.scheds, c.workers, NULL))
		return EINVAL;
	/* One built-in for every worker: its kind; anything else: DEFAULT. */
	c.sched = WEFT_SCHED_DEFAULT;
	for (int i = 0; i < WF_SCHED_BUILTINS; i++)
		if (strcmp(c.scheds, wf_sched_builtin[i]->name) == 0)
			c.sched = i + 1;

	if (c.context < 0 || c.context > WEFT_CONTEXT_UCONTEXT)
		return EINVAL;
	if (c.context == WEFT_CONTEXT_DEFAULT) {
		c.context = WEFT_CONTEXT_ASM;
		if ((v = env("WEFT_CONTEXT"))) {
			if (strcmp(v, "asm") == 0)
				c.context = WEFT_CONTEXT_ASM;
			else if (strcmp(v, "ucontext") == 0)
				c.context = WEFT_CONTEXT_UCONTEXT;
			else
				return EINVAL;
		}
	}

	if (c.stack_size == 0) {
		c.stack_size = DEFAULT_STACK_SIZE;
		if ((v = env("WEFT_STACK_SIZE"))) {
			if (parse_num(v, 1, &n) || n < 0)
				return EINVAL;
			c.stack_size = (size_t)n;
		}
	}
	if (c.stack_size < WEFT_STACK_MIN || c.stack_size > MAX_STACK_SIZE)
		return EINVAL;
	size_t pg = wf_page_size();
	c.stack_size = (c.stack_size + pg - 1) & ~(pg - 1);

	if (c.idle_spin_ns == 0) {
		c.idle_spin_ns = DEFAULT_SPIN_NS;
		if ((v = env("WEFT_IDLE_SPIN_NS"))) {
			if (parse_num(v, 0, &n) || n < 0 || n > 1000000000LL)
				return EINVAL;
			c.idle_spin_ns = n == 0 ? -1 : (long)n;
		}
	}
	if (c.idle_spin_ns < 0)
		c.idle_spin_ns = -1;

	if (c.guarded_stacks_max == 0) {
		if ((v = env("WEFT_GUARDED_STACKS"))) {
			if (parse_num(v, 0, &n) || n < 0)
				return EINVAL;
			c.guarded_stacks_max = n == 0 ? -1 : (long)n;
		} else {
			c.guarded_stacks_max = derived_guard_budget();
		}
	}
	if (c.guarded_stacks_max < 0)
		c.guarded_stacks_max = -1;

	if (c.syscall_ns == 0) {
		c.syscall_ns = DEFAULT_SYSCALL_NS;
		if ((v = env("WEFT_SYSCALL_NS"))) {
			if (parse_num(v, 0, &n) || n < 0 || n > 1000000000000LL)
				return EINVAL;
			c.syscall_ns = n == 0 ? -1 : (long)n;
		}
	}
	if (c.syscall_ns < 0)
		c.syscall_ns = -1;

	if (c.spares > MAX_SPARES)
		return EINVAL;
	if (c.spares == 0) {
		c.spares = DEFAULT_SPARES;
		if ((v = env("WEFT_SPARES"))) {
			if (parse_num(v, 0, &n) || n < 0 || n > MAX_SPARES)
				return EINVAL;
			c.spares = n == 0 ? -1 : (int)n;
		}
	}
	if (c.spares < 0)
		c.spares = -1;

	/* Read by start() (init.c); only checked here. */
	if ((v = env("WEFT_CPU_CLOCK")) && strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
		return EINVAL;
	/* Read by wf_fence_init (util/fence.c); only checked here. */
	if ((v = env("WEFT_MEMBARRIER")) && strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
		return EINVAL;

	/* Read by wf_trace_start (trace/trace.c); only checked here. */
	if ((v = env("WEFT_TRACE_FORMAT")) && *v && !wf_trace_parse_formats(v))
		return EINVAL;

	if (!c.trace)
		c.trace = env("WEFT_TRACE");
	if (c.trace && !*c.trace)
		c.trace = NULL;

	*out = c;
	return 0;
}

int weft_config_init(weft_config_t *cfg)
{
	if (!cfg)
		return EINVAL;
	weft_config_t zero;
	memset(&zero, 0, sizeof zero);
	return wf_config_resolve(&zero, cfg);
}
