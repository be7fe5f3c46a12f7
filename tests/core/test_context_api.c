/* The bare-context API (include/weft/context.h): weft's context switch
 * without its scheduler.
 *
 * For each kind (WEFT_CONTEXT_ASM, WEFT_CONTEXT_UCONTEXT, and
 * WEFT_CONTEXT_DEFAULT, which follows WEFT_CONTEXT like weft_init): ping-pong
 * between the calling context and a made one, passing values through shared
 * variables; callee-saved registers and local state surviving switches;
 * floating-point control (rounding mode) kept per context, a new context
 * starting at the defaults; weft_context_exit, after which the stack is freed
 * or reused; stacks that are unaligned or of the smallest size; a chain of
 * 100 contexts; contexts in several pthreads at once, without the runtime and
 * inside ULTs. Argument errors (EINVAL). Death tests (in a child process,
 * wt_run_child): a switch between contexts of different kinds, to a
 * destroyed or never-made context, or an entry function that returns, each
 * abort with a message.
 *
 * The runtime is not initialised unless a test says so. */
#include "harness.h"

#include <weft/context.h>

#include <fenv.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

enum { STACK_SIZE = 64 * 1024 };

static const int kinds[] = {WEFT_CONTEXT_ASM, WEFT_CONTEXT_UCONTEXT, WEFT_CONTEXT_DEFAULT};
enum { NKINDS = sizeof kinds / sizeof kinds[0] };

static const char *kind_name(int kind)
{
	switch (kind) {
	case WEFT_CONTEXT_ASM:
		return "asm";
	case WEFT_CONTEXT_UCONTEXT:
		return "ucontext";
	case WEFT_CONTEXT_DEFAULT:
		return "default";
	}
	return "?";
}

/* The kind WEFT_CONTEXT_DEFAULT stands for in this process. */
static int env_kind(void)
{
	const char *v = getenv("WEFT_CONTEXT");
	return v && strcmp(v, "ucontext") == 0 ? WEFT_CONTEXT_UCONTEXT : WEFT_CONTEXT_ASM;
}

/* ---- stacks: malloc'd or mmap'd ----------------------------------------- */

struct stack {
	char *base; /* what was allocated */
	size_t len;
	char *lo; /* the stack handed to weft_context_make */
	size_t size;
	bool mapped;
};

static void stack_get(struct stack *s, size_t size, bool mapped)
{
	s->mapped = mapped;
	s->size = size;
	s->len = size;
	if (mapped) {
		s->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			       0);
		WT_TRUE(s->base != MAP_FAILED, "mmap of %zu bytes failed", size);
	} else {
		s->base = malloc(size);
		assert_non_null(s->base);
	}
	s->lo = s->base;
}

static void stack_put(struct stack *s)
{
	/* Nothing of the context that ran on it may be needed any more. */
	memset(s->lo, 0xCC, s->size);
	if (s->mapped)
		WT_EQ(munmap(s->base, s->len), 0);
	else
		free(s->base);
	s->base = s->lo = NULL;
}

/* ---- clobbering callee-saved registers ---------------------------------- */

/* Put garbage into every callee-saved general register (and, on aarch64, the
 * callee-saved FP registers) right before a switch: if the switch did not
 * restore the resumed side's own values, its locals would be garbage. */
static inline void clobber_callee_saved(void)
{
#if defined(__x86_64__)
	__asm__ volatile("movabs $0x5a5a5a5a5a5a5a5a, %%rbx\n\t"
			 "mov %%rbx, %%r12\n\t"
			 "mov %%rbx, %%r13\n\t"
			 "mov %%rbx, %%r14\n\t"
			 "mov %%rbx, %%r15\n\t"
			 :
			 :
			 : "rbx", "r12", "r13", "r14", "r15", "memory");
#elif defined(__aarch64__)
	__asm__ volatile("mov x19, #0x5a5a\n\t"
			 "mov x20, x19\n\tmov x21, x19\n\tmov x22, x19\n\tmov x23, x19\n\t"
			 "mov x24, x19\n\tmov x25, x19\n\tmov x26, x19\n\tmov x27, x19\n\t"
			 "mov x28, x19\n\t"
			 "fmov d8, x19\n\tfmov d9, x19\n\tfmov d10, x19\n\tfmov d11, x19\n\t"
			 "fmov d12, x19\n\tfmov d13, x19\n\tfmov d14, x19\n\tfmov d15, x19\n\t"
			 :
			 :
			 : "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28",
			   "d8", "d9", "d10", "d11", "d12", "d13", "d14", "d15", "memory");
#endif
}

/* ---- ping-pong ----------------------------------------------------------- */

struct pp {
	weft_context_t main, child;
	volatile long to_child;
	volatile long to_main;
	volatile long child_sum;   /* the child's running sum, as it saw it */
	volatile double child_fp;  /* a double the child keeps across switches */
	volatile int child_rounds; /* switches the child made */
	volatile int stop;
	volatile int bad_local;
};

/* The same arithmetic as the child's, without switches. */
static __attribute__((noinline)) double child_fp_after(int rounds)
{
	volatile double x = 1.0;
	for (int i = 0; i < rounds; i++)
		x = x * 1.0000001 + 0.5;
	return x;
}

static void pp_child(void *arg)
{
	struct pp *p = arg;
	long sum = 0;
	double x = 1.0;
	int n = 0;
	char local[64];
	memset(local, 0x3C, sizeof local);
	while (!p->stop) {
		long v = p->to_child;
		sum += v;
		x = x * 1.0000001 + 0.5;
		n++;
		p->to_main = v * 2 + 1;
		p->child_sum = sum;
		p->child_fp = x;
		p->child_rounds = n;
		clobber_callee_saved();
		weft_context_switch(&p->child, &p->main);
		for (size_t i = 0; i < sizeof local; i++)
			if (local[i] != 0x3C)
				p->bad_local = 1;
	}
	weft_context_exit(&p->child, &p->main);
}

/* Main's side of the arithmetic, kept in locals across the switches. */
static __attribute__((noinline)) void main_state_after(int rounds, unsigned long *a,
						       unsigned long *b, double *d)
{
	volatile unsigned long va = 12345, vb = 678;
	volatile double vd = 0.25;
	for (int i = 0; i < rounds; i++) {
		va = va * 3 + (unsigned)i;
		vb ^= va;
		vd = vd * 1.5 + i;
		if (vd > 1e10)
			vd = sqrt(vd);
	}
	*a = va;
	*b = vb;
	*d = vd;
}

static void ping_pong(int kind, bool mapped, int rounds)
{
	struct stack s;
	stack_get(&s, STACK_SIZE, mapped);
	struct pp p = {0};
	WT_OK(weft_context_init_current(&p.main, kind));
	WT_OK(weft_context_make(&p.child, kind, s.lo, s.size, pp_child, &p));
	unsigned long a = 12345, b = 678;
	double d = 0.25;
	for (int i = 0; i < rounds; i++) {
		p.to_child = 1000 + i;
		weft_context_switch(&p.main, &p.child);
		if (p.to_main != (1000 + i) * 2 + 1)
			fail_msg("%s: round %d: the child answered %ld, expected %d",
				 kind_name(kind), i, p.to_main, (1000 + i) * 2 + 1);
		a = a * 3 + (unsigned)i;
		b ^= a;
		d = d * 1.5 + i;
		if (d > 1e10)
			d = sqrt(d);
		clobber_callee_saved(); /* ours are restored by the child's switch back */
	}
	unsigned long ea, eb;
	double ed;
	main_state_after(rounds, &ea, &eb, &ed);
	WT_EQU(a, ea);
	WT_EQU(b, eb);
	WT_TRUE(d == ed, "%s: main's double is %.17g, expected %.17g", kind_name(kind), d, ed);
	/* The child's locals survived too. */
	WT_EQ(p.child_rounds, rounds);
	long want_sum = 0;
	for (int i = 0; i < rounds; i++)
		want_sum += 1000 + i;
	WT_EQ(p.child_sum, want_sum);
	WT_TRUE(p.child_fp == child_fp_after(rounds), "%s: the child's double is %.17g",
		kind_name(kind), p.child_fp);
	WT_EQ(p.bad_local, 0);
	/* End the child: it exits back to us, then its stack is freed. */
	p.stop = 1;
	weft_context_switch(&p.main, &p.child);
	WT_OK(weft_context_destroy(&p.child));
	WT_OK(weft_context_destroy(&p.main));
	stack_put(&s);
}

static void test_ping_pong_each_kind(void **state)
{
	for (int k = 0; k < NKINDS; k++) {
		ping_pong(kinds[k], false, 1000);
		ping_pong(kinds[k], true, 1000);
	}
}

/* weft_num_workers before weft_init: what weft_init with the defaults
 * would use, without starting anything; the running runtime's count while
 * it runs, and the would-be count again after weft_shutdown. */
static void test_num_workers_before_init(void **state)
{
	setenv("WEFT_WORKERS", "3", 1);
	WT_EQ(weft_num_workers(), 3);
	WT_EQ(wt_running(), 0); /* the query started nothing */
	setenv("WEFT_WORKERS", "not a number", 1);
	WT_EQ(weft_num_workers(), 0);
	unsetenv("WEFT_WORKERS");
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	WT_EQ(weft_num_workers(), c.workers);
	wt_init(2);
	WT_EQ(weft_num_workers(), 2);
	WT_OK(weft_shutdown());
	WT_EQ(weft_num_workers(), c.workers);
}

static void test_works_without_runtime(void **state)
{
	WT_EQU(weft_self(), WEFT_NULL);
	WT_EQ(wt_running(), 0);
	WT_CMP(weft_num_workers(), >=, 1); /* what weft_init would use */
	WT_EQ(weft_worker_id(), -1);
	for (int k = 0; k < NKINDS; k++)
		ping_pong(kinds[k], k & 1, 1000);
	/* ... and after a runtime came and went. */
	wt_init(2);
	WT_OK(weft_shutdown());
	for (int k = 0; k < NKINDS; k++)
		ping_pong(kinds[k], !(k & 1), 1000);
}

/* ---- floating-point control ---------------------------------------------- */

enum { RND_NEAREST, RND_UP, RND_DOWN, RND_OTHER };

static const char *rnd_name(int r)
{
	static const char *n[] = {"to-nearest", "upward", "downward", "other"};
	return n[r];
}

/* The rounding the SSE/NEON unit applies (MXCSR on x86-64, FPCR on aarch64). */
static int rounding_fp(void)
{
	volatile double one = 1.0, tiny = 1e-30;
	double up = one + tiny, down = one - tiny;
	if (up > 1.0 && down == 1.0)
		return RND_UP;
	if (up == 1.0 && down < 1.0)
		return RND_DOWN;
	if (up == 1.0 && down == 1.0)
		return RND_NEAREST;
	return RND_OTHER;
}

/* The rounding the x87 unit applies (its control word); the same as
 * rounding_fp where there is no x87. */
static int rounding_x87(void)
{
#if defined(__x86_64__)
	volatile long double one = 1.0L, tiny = 1e-40L;
	long double up = one + tiny, down = one - tiny;
	if (up > 1.0L && down == 1.0L)
		return RND_UP;
	if (up == 1.0L && down < 1.0L)
		return RND_DOWN;
	if (up == 1.0L && down == 1.0L)
		return RND_NEAREST;
	return RND_OTHER;
#else
	return rounding_fp();
#endif
}

struct fpc {
	weft_context_t main, child;
	int start_env, start_fp, start_x87; /* the new context's first view */
	int later_env, later_fp, later_x87; /* after main ran in between */
};

static void fp_child(void *arg)
{
	struct fpc *f = arg;
	f->start_env = fegetround();
	f->start_fp = rounding_fp();
	f->start_x87 = rounding_x87();
	fesetround(FE_DOWNWARD);
	weft_context_switch(&f->child, &f->main);
	f->later_env = fegetround();
	f->later_fp = rounding_fp();
	f->later_x87 = rounding_x87();
	fesetround(FE_TONEAREST);
	weft_context_exit(&f->child, &f->main);
}

static void expect_rounding(const char *kind, const char *where, int env, int fp, int x87,
			    int want_env, int want)
{
	if (env != want_env || fp != want || x87 != want)
		fail_msg("%s: %s: fegetround() = %#x (expected %#x), FP unit rounds %s, x87 "
			 "rounds %s (expected %s)",
			 kind, where, env, want_env, rnd_name(fp), rnd_name(x87), rnd_name(want));
}

static void fp_control(int kind)
{
	const char *kn = kind_name(kind);
	struct stack s;
	stack_get(&s, STACK_SIZE, kind == WEFT_CONTEXT_UCONTEXT);
	struct fpc f = {0};
	/* Upward in main from before the context is made: a new context must
	 * not inherit it (nor a template captured at the first make). */
	WT_EQ(fesetround(FE_UPWARD), 0);
	expect_rounding(kn, "main after fesetround", fegetround(), rounding_fp(), rounding_x87(),
			FE_UPWARD, RND_UP);
	WT_OK(weft_context_init_current(&f.main, kind));
	WT_OK(weft_context_make(&f.child, kind, s.lo, s.size, fp_child, &f));
	weft_context_switch(&f.main, &f.child);
	expect_rounding(kn, "a new context", f.start_env, f.start_fp, f.start_x87, FE_TONEAREST,
			RND_NEAREST);
	/* The child set downward: not ours. */
	expect_rounding(kn, "main after the child's fesetround", fegetround(), rounding_fp(),
			rounding_x87(), FE_UPWARD, RND_UP);
	fesetround(FE_TOWARDZERO); /* nor is ours the child's */
	weft_context_switch(&f.main, &f.child);
	expect_rounding(kn, "the child after main's fesetround", f.later_env, f.later_fp,
			f.later_x87, FE_DOWNWARD, RND_DOWN);
	WT_EQ(fegetround(), FE_TOWARDZERO);
	fesetround(FE_TONEAREST);
	WT_OK(weft_context_destroy(&f.child));
	stack_put(&s);
}

static void test_fp_rounding_is_per_context(void **state)
{
	for (int k = 0; k < NKINDS; k++)
		fp_control(kinds[k]);
}

/* ---- exit ------------------------------------------------------------------ */

struct ex {
	weft_context_t main, child;
	long n;
	volatile long result;
	volatile int ran;
};

static void sum_and_exit(void *arg)
{
	struct ex *e = arg;
	long v[256];
	for (int i = 0; i < 256; i++)
		v[i] = e->n * i;
	long sum = 0;
	for (int i = 0; i < 256; i++)
		sum += v[i];
	e->result = sum;
	e->ran++;
	weft_context_exit(&e->child, &e->main);
}

static void test_exit_then_free_stack(void **state)
{
	for (int k = 0; k < NKINDS; k++) {
		struct ex e = {0};
		WT_OK(weft_context_init_current(&e.main, kinds[k]));
		/* The same weft_context_t, made again on a fresh stack each time. */
		for (int i = 0; i < 200; i++) {
			struct stack s;
			stack_get(&s, STACK_SIZE, i & 1);
			e.n = i;
			e.ran = 0;
			WT_OK(weft_context_make(&e.child, kinds[k], s.lo, s.size, sum_and_exit,
						&e));
			weft_context_switch(&e.main, &e.child);
			WT_EQ(e.ran, 1);
			WT_EQ(e.result, (long)i * (255 * 256 / 2));
			WT_OK(weft_context_destroy(&e.child));
			stack_put(&s);
		}
		WT_OK(weft_context_destroy(&e.main));
	}
}

static void test_made_but_never_run(void **state)
{
	/* Made, never switched to, destroyed, stack freed: nothing to leak. */
	for (int k = 0; k < NKINDS; k++) {
		struct stack s;
		stack_get(&s, STACK_SIZE, k & 1);
		weft_context_t c;
		WT_OK(weft_context_make(&c, kinds[k], s.lo, s.size, sum_and_exit, NULL));
		WT_OK(weft_context_destroy(&c));
		WT_OK(weft_context_destroy(&c)); /* twice: still fine */
		stack_put(&s);
	}
}

/* ---- odd stacks ----------------------------------------------------------- */

struct odd {
	weft_context_t main, child;
	volatile uintptr_t frame;
	char text[64];
	volatile int ran;
};

static void odd_child(void *arg)
{
	struct odd *o = arg;
	o->frame = (uintptr_t)__builtin_frame_address(0);
	volatile double x = 2.0;
	/* printf with doubles uses aligned vector moves on its stack. */
	snprintf(o->text, sizeof o->text, "%.3f %.1Lf", sqrt(x), (long double)x * 1.5L);
	o->ran = 1;
	weft_context_exit(&o->child, &o->main);
}

static void test_unaligned_stack(void **state)
{
	/* A stack whose ends are not aligned: the context aligns for itself and
	 * stays inside [lo, lo + size), which guard bytes around it check. */
	enum { PAD = 64, FILL = 0xA7 };
	for (int k = 0; k < NKINDS; k++) {
		for (int off = 1; off < 16; off += 3) {
			size_t size = STACK_SIZE - 5 - (size_t)off;
			unsigned char *mem = malloc(STACK_SIZE + 2 * PAD);
			assert_non_null(mem);
			memset(mem, FILL, STACK_SIZE + 2 * PAD);
			unsigned char *lo = mem + PAD + off;
			struct odd o = {0};
			WT_OK(weft_context_init_current(&o.main, kinds[k]));
			WT_OK(weft_context_make(&o.child, kinds[k], lo, size, odd_child, &o));
			weft_context_switch(&o.main, &o.child);
			WT_EQ(o.ran, 1);
			WT_EQ_STR(o.text, "1.414 3.0");
			WT_EQ(o.frame % 16, 0);
			WT_CMPU(o.frame, >, (uintptr_t)lo);
			WT_CMPU(o.frame, <, (uintptr_t)lo + size);
			for (unsigned char *p = mem; p < lo; p++)
				WT_TRUE(*p == FILL, "%s: byte %td below the stack was written",
					kind_name(kinds[k]), lo - p);
			for (unsigned char *p = lo + size; p < mem + STACK_SIZE + 2 * PAD; p++)
				WT_TRUE(*p == FILL, "%s: byte %td above the stack was written",
					kind_name(kinds[k]), p - (lo + size));
			WT_OK(weft_context_destroy(&o.child));
			free(mem);
		}
	}
}

struct tiny {
	weft_context_t main, child;
	volatile int ran;
};

static void tiny_child(void *arg)
{
	struct tiny *t = arg;
	t->ran++;
	weft_context_switch(&t->child, &t->main);
	t->ran++;
	weft_context_exit(&t->child, &t->main);
}

static void test_smallest_stack(void **state)
{
	/* WEFT_CONTEXT_STACK_MIN bytes, right above an inaccessible page: an
	 * overflow of the switch itself would fault. */
	long page = sysconf(_SC_PAGESIZE);
	for (int k = 0; k < NKINDS; k++) {
		size_t len = (size_t)page + WEFT_CONTEXT_STACK_MIN;
		char *m =
			mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		WT_TRUE(m != MAP_FAILED, "mmap failed");
		WT_EQ(mprotect(m, (size_t)page, PROT_NONE), 0);
		struct tiny t = {0};
		WT_OK(weft_context_init_current(&t.main, kinds[k]));
		WT_OK(weft_context_make(&t.child, kinds[k], m + page, WEFT_CONTEXT_STACK_MIN,
					tiny_child, &t));
		weft_context_switch(&t.main, &t.child);
		WT_EQ(t.ran, 1);
		weft_context_switch(&t.main, &t.child);
		WT_EQ(t.ran, 2);
		WT_OK(weft_context_destroy(&t.child));
		WT_EQ(munmap(m, len), 0);
	}
}

/* ---- many contexts ------------------------------------------------------------ */

enum { NCHAIN = 100, LAPS = 100 };
struct chain {
	weft_context_t main;
	weft_context_t c[NCHAIN];
	struct stack s[NCHAIN];
	volatile long visits;
	volatile int stop;
	volatile int bad;
};
struct link {
	struct chain *ch;
	int i;
};

static void chain_run(void *arg)
{
	struct link *l = arg;
	struct chain *ch = l->ch;
	int i = l->i;
	weft_context_t *next = i == NCHAIN - 1 ? &ch->main : &ch->c[i + 1];
	long lap = 0;
	while (!ch->stop) {
		if (ch->visits != lap * NCHAIN + i)
			ch->bad = 1;
		ch->visits++;
		lap++;
		weft_context_switch(&ch->c[i], next);
	}
	weft_context_exit(&ch->c[i], next); /* the exits run down the chain too */
}

static void test_chain_of_100_contexts(void **state)
{
	for (int k = 0; k < NKINDS; k++) {
		static struct chain ch;
		static struct link links[NCHAIN];
		memset(&ch, 0, sizeof ch);
		WT_OK(weft_context_init_current(&ch.main, kinds[k]));
		for (int i = 0; i < NCHAIN; i++) {
			stack_get(&ch.s[i], STACK_SIZE, i & 1);
			links[i] = (struct link){&ch, i};
			WT_OK(weft_context_make(&ch.c[i], kinds[k], ch.s[i].lo, ch.s[i].size,
						chain_run, &links[i]));
		}
		for (int lap = 0; lap < LAPS; lap++) {
			weft_context_switch(&ch.main, &ch.c[0]);
			WT_EQ(ch.visits, (long)(lap + 1) * NCHAIN);
		}
		ch.stop = 1;
		weft_context_switch(&ch.main, &ch.c[0]);
		WT_EQ(ch.bad, 0);
		WT_EQ(ch.visits, (long)LAPS * NCHAIN);
		for (int i = 0; i < NCHAIN; i++) {
			WT_OK(weft_context_destroy(&ch.c[i]));
			stack_put(&ch.s[i]);
		}
		WT_OK(weft_context_destroy(&ch.main));
	}
}

/* ---- threads and ULTs ----------------------------------------------------- */

static void *ping_pong_all_kinds(void *arg)
{
	int reps = (int)(intptr_t)arg;
	for (int r = 0; r < reps; r++)
		for (int k = 0; k < NKINDS; k++)
			ping_pong(kinds[k], (r + k) & 1, 1000);
	return NULL;
}

static void test_contexts_in_several_pthreads(void **state)
{
	/* Each pthread its own contexts; the ucontext kind's first use races. */
	struct wt_pthread p[4];
	for (int i = 0; i < 4; i++)
		wt_pthread_start(&p[i], ping_pong_all_kinds, (void *)(intptr_t)20);
	for (int i = 0; i < 4; i++)
		wt_pthread_join(&p[i]);
}

static void *ult_ping_pong(void *arg)
{
	/* Yield between ping-pongs: the ULT may move to another worker. */
	for (int r = 0; r < 5; r++) {
		for (int k = 0; k < NKINDS; k++) {
			ping_pong(kinds[k], (r + k) & 1, 1000);
			weft_yield();
		}
	}
	return NULL;
}

struct ult_pp {
	struct pp p;
	struct stack s;
	int kind;
};

static void *ult_ping_pong_yielding(void *arg)
{
	/* The ULT yields while its bare child is suspended, so the child may be
	 * resumed by another kernel thread than the one that last ran it. */
	struct ult_pp *u = arg;
	struct pp *p = &u->p;
	WT_OK(weft_context_init_current(&p->main, u->kind));
	WT_OK(weft_context_make(&p->child, u->kind, u->s.lo, u->s.size, pp_child, p));
	for (int i = 0; i < 2000; i++) {
		p->to_child = i;
		weft_context_switch(&p->main, &p->child);
		WT_EQ(p->to_main, 2 * i + 1);
		if (i % 7 == 0)
			weft_yield();
	}
	p->stop = 1;
	weft_context_switch(&p->main, &p->child);
	WT_EQ(p->child_rounds, 2000);
	WT_EQ(p->bad_local, 0);
	WT_OK(weft_context_destroy(&p->child));
	return NULL;
}

static void test_inside_ults(void **state)
{
	wt_init(2);
	/* From the root ULT ... */
	for (int k = 0; k < NKINDS; k++)
		ping_pong(kinds[k], k & 1, 1000);
	/* ... from several ULTs at once ... */
	weft_t t[4];
	for (int i = 0; i < 4; i++)
		t[i] = wt_spawn(NULL, ult_ping_pong, NULL);
	for (int i = 0; i < 4; i++)
		wt_join(t[i]);
	/* ... and across yields. */
	static struct ult_pp u[2 * NKINDS];
	for (int i = 0; i < 2 * NKINDS; i++) {
		memset(&u[i], 0, sizeof u[i]);
		u[i].kind = kinds[i % NKINDS];
		stack_get(&u[i].s, STACK_SIZE, i & 1);
	}
	weft_t ts[2 * NKINDS];
	for (int i = 0; i < 2 * NKINDS; i++)
		ts[i] = wt_spawn(NULL, ult_ping_pong_yielding, &u[i]);
	for (int i = 0; i < 2 * NKINDS; i++) {
		wt_join(ts[i]);
		stack_put(&u[i].s);
	}
	WT_OK(weft_shutdown());
}

static void *bare_ping_pong_then_exit(void *arg)
{
	for (int k = 0; k < NKINDS; k++)
		ping_pong(kinds[k], k & 1, 100);
	return NULL; /* the ULT's exit is a noreturn call: ASan checks its stack */
}

static void ult_bounds_child(void *arg)
{
	wt_init(2);
	weft_t t = wt_spawn(NULL, bare_ping_pong_then_exit, NULL);
	wt_join(t);
	WT_OK(weft_shutdown());
	printf("done\n");
}

static void test_inside_ult_sanitizer_sees_the_ult_stack(void **state)
{
	/* Under AddressSanitizer: after a bare context switches back to a ULT
	 * (whose current context was described by weft_context_init_current),
	 * ASan must know that the ULT's stack is the running one, or it
	 * ignores __asan_handle_no_return ("False positive error reports may
	 * follow"). Run in a child to read its stderr; without ASan this only
	 * checks that the child runs to its end. */
	struct wt_child c;
	wt_run_child(ult_bounds_child, NULL, 30, &c);
	char how[96];
	if (!WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0 || !strstr(c.out, "done"))
		fail_msg("child %s; stderr:\n%s", wt_describe_status(c.status, how, sizeof how),
			 c.err);
	WT_TRUE(strstr(c.err, "ASan") == NULL && strstr(c.err, "AddressSanitizer") == NULL,
		"the sanitizer complained:\n%s", c.err);
	wt_child_free(&c);
}

/* ---- the default kind ----------------------------------------------------- */

static void test_default_kind_follows_environment(void **state)
{
	/* A DEFAULT context switches with one of the kind WEFT_CONTEXT names
	 * (mixing kinds would abort: see the death tests) ... */
	ping_pong(WEFT_CONTEXT_DEFAULT, false, 10);
	struct stack s;
	stack_get(&s, STACK_SIZE, false);
	struct ex e = {.n = 3};
	WT_OK(weft_context_init_current(&e.main, env_kind()));
	WT_OK(weft_context_make(&e.child, WEFT_CONTEXT_DEFAULT, s.lo, s.size, sum_and_exit, &e));
	weft_context_switch(&e.main, &e.child);
	WT_EQ(e.ran, 1);
	stack_put(&s);
	/* ... and follows it when it changes. */
	for (int k = 0; k < 2; k++) {
		const char *name = k ? "ucontext" : "asm";
		int kind = k ? WEFT_CONTEXT_UCONTEXT : WEFT_CONTEXT_ASM;
		WT_EQ(setenv("WEFT_CONTEXT", name, 1), 0);
		stack_get(&s, STACK_SIZE, true);
		e = (struct ex){.n = 5};
		WT_OK(weft_context_init_current(&e.main, kind));
		WT_OK(weft_context_make(&e.child, WEFT_CONTEXT_DEFAULT, s.lo, s.size, sum_and_exit,
					&e));
		weft_context_switch(&e.main, &e.child);
		WT_EQ(e.ran, 1);
		stack_put(&s);
	}
	/* Unset or empty: asm. */
	unsetenv("WEFT_CONTEXT");
	ping_pong(WEFT_CONTEXT_DEFAULT, false, 10);
	stack_get(&s, STACK_SIZE, true);
	e = (struct ex){.n = 7};
	WT_OK(weft_context_init_current(&e.main, WEFT_CONTEXT_ASM));
	WT_OK(weft_context_make(&e.child, WEFT_CONTEXT_DEFAULT, s.lo, s.size, sum_and_exit, &e));
	weft_context_switch(&e.main, &e.child);
	WT_EQ(e.ran, 1);
	stack_put(&s);
}

static void test_default_kind_bad_environment_einval(void **state)
{
	char stack[WEFT_CONTEXT_STACK_MIN];
	weft_context_t c;
	WT_EQ(setenv("WEFT_CONTEXT", "bogus", 1), 0);
	WT_ERR(weft_context_make(&c, WEFT_CONTEXT_DEFAULT, stack, sizeof stack, sum_and_exit, NULL),
	       EINVAL);
	WT_ERR(weft_context_init_current(&c, WEFT_CONTEXT_DEFAULT), EINVAL);
	/* Explicit kinds do not look at the environment. */
	WT_OK(weft_context_make(&c, WEFT_CONTEXT_ASM, stack, sizeof stack, sum_and_exit, NULL));
	WT_OK(weft_context_destroy(&c));
	WT_OK(weft_context_init_current(&c, WEFT_CONTEXT_UCONTEXT));
	WT_OK(weft_context_destroy(&c));
}

static void test_default_kind_ignores_other_settings(void **state)
{
	/* DEFAULT is "WEFT_CONTEXT from the environment, else asm": a bad value
	 * of an unrelated setting (WEFT_WORKERS, WEFT_SCHED) is not its
	 * business. */
	char stack[WEFT_CONTEXT_STACK_MIN];
	weft_context_t c;
	const char *vars[][2] = {{"WEFT_WORKERS", "many"}, {"WEFT_SCHED", "fifo"}};
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
		WT_EQ(setenv(vars[i][0], vars[i][1], 1), 0);
		int r = weft_context_make(&c, WEFT_CONTEXT_DEFAULT, stack, sizeof stack,
					  sum_and_exit, NULL);
		if (r)
			fail_msg("with %s=%s, weft_context_make(WEFT_CONTEXT_DEFAULT) returned %s",
				 vars[i][0], vars[i][1], wt_errname(r));
		WT_OK(weft_context_destroy(&c));
		r = weft_context_init_current(&c, WEFT_CONTEXT_DEFAULT);
		if (r)
			fail_msg("with %s=%s, weft_context_init_current(WEFT_CONTEXT_DEFAULT) "
				 "returned %s",
				 vars[i][0], vars[i][1], wt_errname(r));
		WT_OK(weft_context_destroy(&c));
		unsetenv(vars[i][0]);
	}
}

/* ---- argument errors -------------------------------------------------------- */

static void never_runs(void *arg)
{
	fail_msg("a context that failed to be made ran");
}

static void test_einval(void **state)
{
	static char stack[STACK_SIZE];
	weft_context_t c;
	for (int k = 0; k < NKINDS; k++) {
		int kind = kinds[k];
		WT_ERR(weft_context_make(NULL, kind, stack, sizeof stack, never_runs, NULL),
		       EINVAL);
		WT_ERR(weft_context_make(&c, kind, NULL, sizeof stack, never_runs, NULL), EINVAL);
		WT_ERR(weft_context_make(&c, kind, stack, sizeof stack, NULL, NULL), EINVAL);
		WT_ERR(weft_context_make(&c, kind, stack, WEFT_CONTEXT_STACK_MIN - 1, never_runs,
					 NULL),
		       EINVAL);
		WT_ERR(weft_context_make(&c, kind, stack, 0, never_runs, NULL), EINVAL);
		/* The smallest size is accepted. */
		WT_OK(weft_context_make(&c, kind, stack, WEFT_CONTEXT_STACK_MIN, never_runs, NULL));
		WT_OK(weft_context_destroy(&c));
	}
	const int bad_kinds[] = {7, -1, 3, 1000, -1000};
	for (size_t i = 0; i < sizeof bad_kinds / sizeof bad_kinds[0]; i++) {
		WT_ERR(weft_context_make(&c, bad_kinds[i], stack, sizeof stack, never_runs, NULL),
		       EINVAL);
		WT_ERR(weft_context_init_current(&c, bad_kinds[i]), EINVAL);
	}
	for (int k = 0; k < NKINDS; k++) {
		WT_ERR(weft_context_init_current(NULL, kinds[k]), EINVAL);
		WT_OK(weft_context_init_current(&c, kinds[k]));
		WT_OK(weft_context_destroy(&c));
	}
	WT_ERR(weft_context_destroy(NULL), EINVAL);
}

/* ---- death tests ---------------------------------------------------------------- */

enum death {
	MIX_ASM_MAIN,      /* asm current, ucontext made */
	MIX_UCONTEXT_MAIN, /* ucontext current, asm made */
	MIX_DEFAULT_MAIN,  /* DEFAULT current, the other kind made */
	MIX_BETWEEN_MADE,  /* a made asm context switches to a made ucontext one */
	MIX_EXIT,          /* weft_context_exit between kinds */
	TO_DESTROYED,      /* switch to a destroyed context */
	TO_ZEROED,         /* switch to a never-made (all-zero) context */
	ENTRY_RETURNS,     /* the entry function returns */
};

static weft_context_t d_main, d_a, d_b;

static void d_return(void *arg)
{
}

static void d_switch_to_b(void *arg)
{
	weft_context_switch(&d_a, &d_b);
}

static void d_exit_to_main(void *arg)
{
	weft_context_exit(&d_a, &d_main);
}

static void d_never(void *arg)
{
	printf("the other context ran\n");
	_exit(3);
}

static void death_child(void *arg)
{
	enum death what = (enum death)(intptr_t)arg;
	static char sa[STACK_SIZE], sb[STACK_SIZE];
	int other = env_kind() == WEFT_CONTEXT_ASM ? WEFT_CONTEXT_UCONTEXT : WEFT_CONTEXT_ASM;
	switch (what) {
	case MIX_ASM_MAIN:
		WT_OK(weft_context_init_current(&d_main, WEFT_CONTEXT_ASM));
		WT_OK(weft_context_make(&d_a, WEFT_CONTEXT_UCONTEXT, sa, sizeof sa, d_never, NULL));
		weft_context_switch(&d_main, &d_a);
		break;
	case MIX_UCONTEXT_MAIN:
		WT_OK(weft_context_init_current(&d_main, WEFT_CONTEXT_UCONTEXT));
		WT_OK(weft_context_make(&d_a, WEFT_CONTEXT_ASM, sa, sizeof sa, d_never, NULL));
		weft_context_switch(&d_main, &d_a);
		break;
	case MIX_DEFAULT_MAIN:
		WT_OK(weft_context_init_current(&d_main, WEFT_CONTEXT_DEFAULT));
		WT_OK(weft_context_make(&d_a, other, sa, sizeof sa, d_never, NULL));
		weft_context_switch(&d_main, &d_a);
		break;
	case MIX_BETWEEN_MADE:
		WT_OK(weft_context_init_current(&d_main, WEFT_CONTEXT_ASM));
		WT_OK(weft_context_make(&d_a, WEFT_CONTEXT_ASM, sa, sizeof sa, d_switch_to_b,
					NULL));
		WT_OK(weft_context_make(&d_b, WEFT_CONTEXT_UCONTEXT, sb, sizeof sb, d_never, NULL));
		weft_context_switch(&d_main, &d_a);
		break;
	case MIX_EXIT: {
		/* d_a (ucontext) is reached from a ucontext context, then exits
		 * to the asm d_main. */
		weft_context_t tmp;
		WT_OK(weft_context_init_current(&d_main, WEFT_CONTEXT_ASM));
		WT_OK(weft_context_init_current(&tmp, WEFT_CONTEXT_UCONTEXT));
		WT_OK(weft_context_make(&d_a, WEFT_CONTEXT_UCONTEXT, sa, sizeof sa, d_exit_to_main,
					NULL));
		weft_context_switch(&tmp, &d_a);
		break;
	}
	case TO_DESTROYED:
		WT_OK(weft_context_init_current(&d_main, env_kind()));
		WT_OK(weft_context_make(&d_a, env_kind(), sa, sizeof sa, d_never, NULL));
		WT_OK(weft_context_destroy(&d_a));
		weft_context_switch(&d_main, &d_a);
		break;
	case TO_ZEROED:
		WT_OK(weft_context_init_current(&d_main, env_kind()));
		memset(&d_a, 0, sizeof d_a);
		weft_context_switch(&d_main, &d_a);
		break;
	case ENTRY_RETURNS:
		WT_OK(weft_context_init_current(&d_main, env_kind()));
		WT_OK(weft_context_make(&d_a, env_kind(), sa, sizeof sa, d_return, NULL));
		weft_context_switch(&d_main, &d_a);
		break;
	}
	printf("survived\n");
}

static void expect_abort(enum death what, const char *word1, const char *word2)
{
	struct wt_child c;
	wt_run_child(death_child, (void *)(intptr_t)what, 30, &c);
	char how[96];
	if (!WIFSIGNALED(c.status) || WTERMSIG(c.status) != SIGABRT)
		fail_msg("child %s, expected it to abort; stdout:\n%s\nstderr:\n%s",
			 wt_describe_status(c.status, how, sizeof how), c.out, c.err);
	WT_TRUE(strstr(c.out, "survived") == NULL, "stdout:\n%s", c.out);
	WT_TRUE(strstr(c.out, "the other context ran") == NULL, "stdout:\n%s", c.out);
	WT_TRUE(strstr(c.err, word1) != NULL || (word2 && strstr(c.err, word2) != NULL),
		"stderr does not say \"%s\"%s%s:\n%s", word1, word2 ? " or " : "",
		word2 ? word2 : "", c.err);
	printf("the child said: %s", c.err);
	wt_child_free(&c);
}

static void test_death_switch_asm_to_ucontext(void **state)
{
	expect_abort(MIX_ASM_MAIN, "weft_context_switch", NULL);
}

static void test_death_switch_ucontext_to_asm(void **state)
{
	expect_abort(MIX_UCONTEXT_MAIN, "weft_context_switch", NULL);
}

static void test_death_switch_default_to_other_kind(void **state)
{
	expect_abort(MIX_DEFAULT_MAIN, "weft_context_switch", NULL);
}

static void test_death_switch_between_made_contexts_of_two_kinds(void **state)
{
	expect_abort(MIX_BETWEEN_MADE, "weft_context_switch", NULL);
}

static void test_death_exit_between_kinds(void **state)
{
	expect_abort(MIX_EXIT, "weft_context_switch", "weft_context_exit");
}

static void test_death_switch_to_destroyed_context(void **state)
{
	expect_abort(TO_DESTROYED, "weft_context_switch", NULL);
}

static void test_death_switch_to_unmade_context(void **state)
{
	expect_abort(TO_ZEROED, "weft_context_switch", NULL);
}

static void test_death_entry_function_returns(void **state)
{
	expect_abort(ENTRY_RETURNS, "returned", NULL);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ping_pong_each_kind),
		cmocka_unit_test(test_works_without_runtime),
		cmocka_unit_test(test_num_workers_before_init),
		cmocka_unit_test(test_fp_rounding_is_per_context),
		cmocka_unit_test(test_exit_then_free_stack),
		cmocka_unit_test(test_made_but_never_run),
		cmocka_unit_test(test_unaligned_stack),
		cmocka_unit_test(test_smallest_stack),
		cmocka_unit_test(test_chain_of_100_contexts),
		cmocka_unit_test(test_contexts_in_several_pthreads),
		cmocka_unit_test(test_inside_ults),
		cmocka_unit_test(test_inside_ult_sanitizer_sees_the_ult_stack),
		cmocka_unit_test(test_default_kind_follows_environment),
		cmocka_unit_test(test_default_kind_bad_environment_einval),
		cmocka_unit_test(test_default_kind_ignores_other_settings),
		cmocka_unit_test(test_einval),
		cmocka_unit_test(test_death_switch_asm_to_ucontext),
		cmocka_unit_test(test_death_switch_ucontext_to_asm),
		cmocka_unit_test(test_death_switch_default_to_other_kind),
		cmocka_unit_test(test_death_switch_between_made_contexts_of_two_kinds),
		cmocka_unit_test(test_death_exit_between_kinds),
		cmocka_unit_test(test_death_switch_to_destroyed_context),
		cmocka_unit_test(test_death_switch_to_unmade_context),
		cmocka_unit_test(test_death_entry_function_returns),
	};
	return WT_RUN(argc, argv, tests);
}
