/* The context layer alone (src/context, src/arch): making contexts, switching
 * between them, and the machine state a switch must carry. No scheduler, no
 * workers: each test drives its contexts by hand from the thread's own stack.
 *
 * Every case runs twice, once per backend (the groups "asm" and "ucontext").
 * `test_context asm` or `test_context ucontext` runs one group only.
 *
 * Assertions stay on the main stack: contexts record what they saw in their
 * argument struct and main checks it after switching back, so a failing
 * cmocka assertion never longjmps from one stack into another.
 */
#include <alloca.h>
#include <setjmp.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "context/context.h"

#if defined(__GNUC__) && !defined(__clang__)
#define TEST_NOIPA __attribute__((noipa)) /* no inlining, cloning or IPA tricks */
#else
#define TEST_NOIPA __attribute__((noinline))
#endif

enum { STACK_SIZE = 64 * 1024, MAX_STACKS = 8 };

/* ---- stacks and the per-test environment -------------------------------- */

/* An mmap'd stack: a PROT_NONE guard page, the usable part [lo, lo + size),
 * and above it the wf_ctx_reserve() bytes the ucontext backend needs. */
struct stack {
	void *map;
	size_t map_size;
	void *lo;
	size_t size;
	void *reserved;
};

struct env {
	wf_ctx_t main; /* the thread's own stack, running the test */
	void *main_reserved;
	struct stack stacks[MAX_STACKS];
	int nstacks;
};

static struct stack *stack_new(struct env *e)
{
	assert_in_range(e->nstacks, 0, MAX_STACKS - 1);
	struct stack *s = &e->stacks[e->nstacks++];
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t reserve = (wf_ctx_reserve() + page - 1) & ~(page - 1);
	s->map_size = page + STACK_SIZE + reserve;
	s->map = mmap(NULL, s->map_size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	assert_true(s->map != MAP_FAILED);
	assert_int_equal(mprotect(s->map, page, PROT_NONE), 0);
	s->lo = (char *)s->map + page;
	s->size = STACK_SIZE;
	s->reserved = reserve ? (char *)s->lo + STACK_SIZE : NULL;
	return s;
}

static void make_on(struct stack *s, wf_ctx_t *c, wf_ctx_entry_fn entry, void *arg)
{
	wf_ctx_make(c, s->lo, s->size, s->reserved, entry, arg);
}

static struct stack *make(struct env *e, wf_ctx_t *c, wf_ctx_entry_fn entry, void *arg)
{
	struct stack *s = stack_new(e);
	make_on(s, c, entry, arg);
	return s;
}

/* ---- floating-point control state --------------------------------------- */

/* The per-thread FP control registers a switch must carry: on x86-64 MXCSR
 * (SSE rounding, FTZ/DAZ, exception masks) and the x87 control word; on
 * aarch64 FPCR. MXCSR's sticky exception flags (bits 0-5) are status, not
 * control, and any float operation may set them, so they are masked off. */
#if defined(__x86_64__)
struct fpctl {
	uint32_t mxcsr;
	uint16_t x87cw;
};
static const struct fpctl fpctl_default = {0x1F80, 0x037F};
/* main: round up in both units */
static const struct fpctl fpctl_main = {0x1F80 | 0x4000, 0x037F | 0x0800};
/* a context: round toward zero + flush-to-zero; x87: toward zero, 53-bit precision */
static const struct fpctl fpctl_ctx = {0x1F80 | 0x6000 | 0x8000, 0x007F | 0x0C00 | 0x0200};

static struct fpctl fpctl_get(void)
{
	struct fpctl f;
	__asm__ volatile("stmxcsr %0" : "=m"(f.mxcsr));
	__asm__ volatile("fnstcw %0" : "=m"(f.x87cw));
	f.mxcsr &= ~0x3Fu;
	return f;
}

static void fpctl_set(struct fpctl f)
{
	__asm__ volatile("ldmxcsr %0" : : "m"(f.mxcsr));
	__asm__ volatile("fldcw %0" : : "m"(f.x87cw));
}

static void assert_fpctl_equal(struct fpctl got, struct fpctl want)
{
	assert_int_equal(got.mxcsr, want.mxcsr);
	assert_int_equal(got.x87cw, want.x87cw);
}
#elif defined(__aarch64__)
struct fpctl {
	uint64_t fpcr;
};
static const struct fpctl fpctl_default = {0};
static const struct fpctl fpctl_main = {1u << 22}; /* RMode = RP: toward +inf */
/* RMode = RZ, FZ (flush-to-zero), DN (default NaN) */
static const struct fpctl fpctl_ctx = {3u << 22 | 1u << 24 | 1u << 25};

static struct fpctl fpctl_get(void)
{
	struct fpctl f;
	__asm__ volatile("mrs %0, fpcr" : "=r"(f.fpcr));
	return f;
}

static void fpctl_set(struct fpctl f)
{
	__asm__ volatile("msr fpcr, %0" : : "r"(f.fpcr));
}

static void assert_fpctl_equal(struct fpctl got, struct fpctl want)
{
	assert_int_equal(got.fpcr, want.fpcr);
}
#else
#error "test_context: no FP control helpers for this architecture"
#endif

/* ---- fixtures ----------------------------------------------------------- */

static struct fpctl fpctl_at_start;

static int use_asm(void **state)
{
	wf_ctx_backend = WF_CTX_ASM;
	print_message("context backend: asm\n");
	return 0;
}

static int use_ucontext(void **state)
{
	wf_ctx_backend = WF_CTX_UCONTEXT;
	print_message("context backend: ucontext\n");
	return 0;
}

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof *e);
	if (!e)
		return -1;
	size_t r = wf_ctx_reserve();
	if (r) {
		e->main_reserved = aligned_alloc(64, r);
		if (!e->main_reserved)
			return -1;
	}
	wf_ctx_init_current(&e->main, e->main_reserved);
	fpctl_at_start = fpctl_get();
	*state = e;
	return 0;
}

/* Every test finishes its contexts with wf_ctx_switch_final, so nothing
 * still runs on the stacks unmapped here (unless an assertion failed). */
static int teardown(void **state)
{
	struct env *e = *state;
	fpctl_set(fpctl_at_start);
	for (int i = 0; i < e->nstacks; i++)
		munmap(e->stacks[i].map, e->stacks[i].map_size);
	free(e->main_reserved);
	free(e);
	return 0;
}

/* ---- a new context receives (transfer, arg) ----------------------------- */

struct first {
	wf_ctx_t *main;
	wf_ctx_t self;
	void *transfer;
	void *arg;
};

static void entry_first(void *transfer, void *arg)
{
	wf_ctx_entered();
	struct first *f = arg;
	f->transfer = transfer;
	f->arg = arg;
	wf_ctx_switch_final(&f->self, f->main, (void *)0xf00d);
}

static void new_context_receives_transfer_and_arg(void **state)
{
	struct env *e = *state;
	struct first a = {.main = &e->main}, b = {.main = &e->main};
	make(e, &a.self, entry_first, &a);
	make(e, &b.self, entry_first, &b);

	assert_ptr_equal(wf_ctx_switch(&e->main, &b.self, (void *)0xbbb), (void *)0xf00d);
	assert_ptr_equal(wf_ctx_switch(&e->main, &a.self, (void *)0xaaa), (void *)0xf00d);
	assert_ptr_equal(a.transfer, (void *)0xaaa);
	assert_ptr_equal(a.arg, &a);
	assert_ptr_equal(b.transfer, (void *)0xbbb);
	assert_ptr_equal(b.arg, &b);
}

/* ---- ping-pong between main and several contexts ------------------------ */

enum { PP_CTXS = 4, PP_ROUNDS = 200 };
#define PP_FIN  ((uintptr_t)0xf1f1)
#define PP_DONE ((uintptr_t)0xd0e0)

/* A context answers each value v with reply(v, id): main checks that the
 * value it sent arrived and that the reply came back. */
static uintptr_t pp_reply(uintptr_t v, uintptr_t id)
{
	return v * 3 + id;
}

struct pp {
	wf_ctx_t *main;
	wf_ctx_t self;
	uintptr_t id;
	uintptr_t last; /* the value that ended the loop */
};

static void entry_pingpong(void *transfer, void *arg)
{
	wf_ctx_entered();
	struct pp *p = arg;
	uintptr_t v = (uintptr_t)transfer;
	for (int r = 0; r < PP_ROUNDS; r++)
		v = (uintptr_t)wf_ctx_switch(&p->self, p->main, (void *)pp_reply(v, p->id));
	p->last = v;
	wf_ctx_switch_final(&p->self, p->main, (void *)(PP_DONE + p->id));
}

static void ping_pong_passes_transfer_both_ways(void **state)
{
	struct env *e = *state;
	struct pp p[PP_CTXS];
	for (uintptr_t i = 0; i < PP_CTXS; i++) {
		p[i] = (struct pp){.main = &e->main, .id = i};
		make(e, &p[i].self, entry_pingpong, &p[i]);
	}
	for (uintptr_t r = 0; r < PP_ROUNDS; r++) {
		for (uintptr_t i = 0; i < PP_CTXS; i++) {
			uintptr_t sent = (r << 8 | i) + 1;
			uintptr_t got =
				(uintptr_t)wf_ctx_switch(&e->main, &p[i].self, (void *)sent);
			assert_int_equal(got, pp_reply(sent, i));
		}
	}
	for (uintptr_t i = 0; i < PP_CTXS; i++) {
		uintptr_t got = (uintptr_t)wf_ctx_switch(&e->main, &p[i].self, (void *)PP_FIN);
		assert_int_equal(got, PP_DONE + i);
		assert_int_equal(p[i].last, PP_FIN);
	}
}

/* ---- contexts switch among themselves ----------------------------------- */

/* main -> c0 -> c1 -> c2 -> c3 -> main, each hop adding 1 to the value;
 * RING_STOP travels the same way and finishes every context. */
enum { RING_CTXS = 4, RING_LAPS = 100 };
#define RING_STOP ((uintptr_t)-1)

struct ring {
	wf_ctx_t self;
	wf_ctx_t *next;
};

static void entry_ring(void *transfer, void *arg)
{
	wf_ctx_entered();
	struct ring *r = arg;
	uintptr_t v = (uintptr_t)transfer;
	while (v != RING_STOP)
		v = (uintptr_t)wf_ctx_switch(&r->self, r->next, (void *)(v + 1));
	wf_ctx_switch_final(&r->self, r->next, (void *)RING_STOP);
}

static void contexts_switch_among_themselves(void **state)
{
	struct env *e = *state;
	struct ring r[RING_CTXS];
	for (int i = 0; i < RING_CTXS; i++) {
		r[i].next = i + 1 < RING_CTXS ? &r[i + 1].self : &e->main;
		make(e, &r[i].self, entry_ring, &r[i]);
	}
	for (uintptr_t lap = 0; lap < RING_LAPS; lap++) {
		uintptr_t got = (uintptr_t)wf_ctx_switch(&e->main, &r[0].self, (void *)(lap * 100));
		assert_int_equal(got, lap * 100 + RING_CTXS);
	}
	assert_int_equal((uintptr_t)wf_ctx_switch(&e->main, &r[0].self, (void *)RING_STOP),
			 RING_STOP);
}

/* ---- callee-saved registers survive a switch ---------------------------- */

/* void *test_probe_switch(wf_ctx_t *from, wf_ctx_t *to, void *transfer,
 *                         uint64_t out[PROBE_REGS], uint64_t seed)
 * Loads seed + i into the i-th callee-saved register, calls
 * wf_ctx_switch(from, to, transfer), and when resumed stores what those
 * registers hold into out[i]. It keeps the ABI itself: the caller's own
 * values of those registers are saved around all this. Written in asm
 * because only asm can pin values to registers across a call. */
void *test_probe_switch(wf_ctx_t *from, wf_ctx_t *to, void *transfer, uint64_t *out, uint64_t seed);

#if defined(__x86_64__)
enum { PROBE_REGS = 6 };
static const char *const probe_reg_names[PROBE_REGS] = {"rbx", "rbp", "r12", "r13", "r14", "r15"};
__asm__(".text\n"
	".globl test_probe_switch\n"
	".hidden test_probe_switch\n"
	".type test_probe_switch, @function\n"
	"test_probe_switch:\n"
	".cfi_startproc\n"
	"  pushq %rbx\n"
	".cfi_adjust_cfa_offset 8\n"
	".cfi_rel_offset %rbx, 0\n"
	"  pushq %rbp\n"
	".cfi_adjust_cfa_offset 8\n"
	".cfi_rel_offset %rbp, 0\n"
	"  pushq %r12\n"
	".cfi_adjust_cfa_offset 8\n"
	".cfi_rel_offset %r12, 0\n"
	"  pushq %r13\n"
	".cfi_adjust_cfa_offset 8\n"
	".cfi_rel_offset %r13, 0\n"
	"  pushq %r14\n"
	".cfi_adjust_cfa_offset 8\n"
	".cfi_rel_offset %r14, 0\n"
	"  pushq %r15\n"
	".cfi_adjust_cfa_offset 8\n"
	".cfi_rel_offset %r15, 0\n"
	"  pushq %rcx\n" /* out; also makes rsp 16-byte aligned for the call */
	".cfi_adjust_cfa_offset 8\n"
	"  leaq 0(%r8), %rbx\n"
	"  leaq 1(%r8), %rbp\n"
	"  leaq 2(%r8), %r12\n"
	"  leaq 3(%r8), %r13\n"
	"  leaq 4(%r8), %r14\n"
	"  leaq 5(%r8), %r15\n"
	"  call wf_ctx_switch@PLT\n"
	"  popq %rcx\n"
	".cfi_adjust_cfa_offset -8\n"
	"  movq %rbx, 0(%rcx)\n"
	"  movq %rbp, 8(%rcx)\n"
	"  movq %r12, 16(%rcx)\n"
	"  movq %r13, 24(%rcx)\n"
	"  movq %r14, 32(%rcx)\n"
	"  movq %r15, 40(%rcx)\n"
	"  popq %r15\n"
	".cfi_adjust_cfa_offset -8\n"
	".cfi_restore %r15\n"
	"  popq %r14\n"
	".cfi_adjust_cfa_offset -8\n"
	".cfi_restore %r14\n"
	"  popq %r13\n"
	".cfi_adjust_cfa_offset -8\n"
	".cfi_restore %r13\n"
	"  popq %r12\n"
	".cfi_adjust_cfa_offset -8\n"
	".cfi_restore %r12\n"
	"  popq %rbp\n"
	".cfi_adjust_cfa_offset -8\n"
	".cfi_restore %rbp\n"
	"  popq %rbx\n"
	".cfi_adjust_cfa_offset -8\n"
	".cfi_restore %rbx\n"
	"  ret\n"
	".cfi_endproc\n"
	".size test_probe_switch, .-test_probe_switch\n");
#elif defined(__aarch64__)
enum { PROBE_REGS = 19 };
static const char *const probe_reg_names[PROBE_REGS] = {
	"x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28",
	"x29", "d8",  "d9",  "d10", "d11", "d12", "d13", "d14", "d15"};
__asm__(".text\n"
	".globl test_probe_switch\n"
	".hidden test_probe_switch\n"
	".type test_probe_switch, %function\n"
	".balign 4\n"
	"test_probe_switch:\n"
	".cfi_startproc\n"
	"  stp x29, x30, [sp, #-176]!\n"
	".cfi_def_cfa_offset 176\n"
	".cfi_offset x29, -176\n"
	".cfi_offset x30, -168\n"
	"  stp x19, x20, [sp, #16]\n"
	"  stp x21, x22, [sp, #32]\n"
	"  stp x23, x24, [sp, #48]\n"
	"  stp x25, x26, [sp, #64]\n"
	"  stp x27, x28, [sp, #80]\n"
	"  stp d8, d9, [sp, #96]\n"
	"  stp d10, d11, [sp, #112]\n"
	"  stp d12, d13, [sp, #128]\n"
	"  stp d14, d15, [sp, #144]\n"
	".cfi_offset x19, -160\n"
	".cfi_offset x20, -152\n"
	".cfi_offset x21, -144\n"
	".cfi_offset x22, -136\n"
	".cfi_offset x23, -128\n"
	".cfi_offset x24, -120\n"
	".cfi_offset x25, -112\n"
	".cfi_offset x26, -104\n"
	".cfi_offset x27, -96\n"
	".cfi_offset x28, -88\n"
	".cfi_offset d8, -80\n"
	".cfi_offset d9, -72\n"
	".cfi_offset d10, -64\n"
	".cfi_offset d11, -56\n"
	".cfi_offset d12, -48\n"
	".cfi_offset d13, -40\n"
	".cfi_offset d14, -32\n"
	".cfi_offset d15, -24\n"
	"  str x3, [sp, #160]\n" /* out */
	"  add x19, x4, #0\n"
	"  add x20, x4, #1\n"
	"  add x21, x4, #2\n"
	"  add x22, x4, #3\n"
	"  add x23, x4, #4\n"
	"  add x24, x4, #5\n"
	"  add x25, x4, #6\n"
	"  add x26, x4, #7\n"
	"  add x27, x4, #8\n"
	"  add x28, x4, #9\n"
	"  add x29, x4, #10\n"
	"  add x9, x4, #11\n"
	"  fmov d8, x9\n"
	"  add x9, x4, #12\n"
	"  fmov d9, x9\n"
	"  add x9, x4, #13\n"
	"  fmov d10, x9\n"
	"  add x9, x4, #14\n"
	"  fmov d11, x9\n"
	"  add x9, x4, #15\n"
	"  fmov d12, x9\n"
	"  add x9, x4, #16\n"
	"  fmov d13, x9\n"
	"  add x9, x4, #17\n"
	"  fmov d14, x9\n"
	"  add x9, x4, #18\n"
	"  fmov d15, x9\n"
	"  bl wf_ctx_switch\n"
	"  ldr x9, [sp, #160]\n"
	"  stp x19, x20, [x9, #0]\n"
	"  stp x21, x22, [x9, #16]\n"
	"  stp x23, x24, [x9, #32]\n"
	"  stp x25, x26, [x9, #48]\n"
	"  stp x27, x28, [x9, #64]\n"
	"  str x29, [x9, #80]\n"
	"  stp d8, d9, [x9, #88]\n"
	"  stp d10, d11, [x9, #104]\n"
	"  stp d12, d13, [x9, #120]\n"
	"  stp d14, d15, [x9, #136]\n"
	"  ldp x19, x20, [sp, #16]\n"
	"  ldp x21, x22, [sp, #32]\n"
	"  ldp x23, x24, [sp, #48]\n"
	"  ldp x25, x26, [sp, #64]\n"
	"  ldp x27, x28, [sp, #80]\n"
	"  ldp d8, d9, [sp, #96]\n"
	"  ldp d10, d11, [sp, #112]\n"
	"  ldp d12, d13, [sp, #128]\n"
	"  ldp d14, d15, [sp, #144]\n"
	"  ldp x29, x30, [sp], #176\n"
	".cfi_def_cfa_offset 0\n"
	".cfi_restore x29\n"
	".cfi_restore x30\n"
	"  ret\n"
	".cfi_endproc\n"
	".size test_probe_switch, .-test_probe_switch\n");
#endif

#define SEED_MAIN_1 UINT64_C(0x1111111100000000)
#define SEED_MAIN_2 UINT64_C(0x2222222200000000)
#define SEED_CTX    UINT64_C(0x3333333300000000)

static void assert_probe(const uint64_t out[PROBE_REGS], uint64_t seed)
{
	for (int i = 0; i < PROBE_REGS; i++) {
		if (out[i] != seed + (uint64_t)i)
			print_error("callee-saved register %s changed across the switch\n",
				    probe_reg_names[i]);
		assert_int_equal(out[i], seed + (uint64_t)i);
	}
}

struct regs {
	wf_ctx_t *main;
	wf_ctx_t self;
	uint64_t out[PROBE_REGS]; /* the context's registers after it was resumed */
};

static void entry_regs(void *transfer, void *arg)
{
	wf_ctx_entered();
	struct regs *r = arg;
	/* Main wakes up while this context's patterns are in the registers. */
	test_probe_switch(&r->self, r->main, transfer, r->out, SEED_CTX);
	wf_ctx_switch_final(&r->self, r->main, (void *)0xe4d);
}

static void callee_saved_registers_survive_a_switch(void **state)
{
	struct env *e = *state;
	struct regs r = {.main = &e->main};
	uint64_t out[PROBE_REGS];
	make(e, &r.self, entry_regs, &r);

	/* Into the new context and back: main's registers hold its patterns. */
	assert_ptr_equal(test_probe_switch(&e->main, &r.self, NULL, out, SEED_MAIN_1), NULL);
	assert_probe(out, SEED_MAIN_1);
	/* Resume the context inside its probe: its registers hold its patterns,
	 * not main's second set, which was loaded when main switched. */
	assert_ptr_equal(test_probe_switch(&e->main, &r.self, NULL, out, SEED_MAIN_2),
			 (void *)0xe4d);
	assert_probe(out, SEED_MAIN_2);
	assert_probe(r.out, SEED_CTX);
}

/* ---- FP control registers are per context ------------------------------- */

struct fp {
	wf_ctx_t *main;
	wf_ctx_t self;
	struct fpctl at_entry; /* as the new context found it */
	struct fpctl resumed;  /* after main ran with its own and switched back */
	uint64_t third;        /* bits of 1.0 / 3.0 under the context's rounding */
};

static uint64_t third_bits(void)
{
	volatile double one = 1.0, three = 3.0;
	double q = one / three;
	uint64_t bits;
	memcpy(&bits, &q, sizeof bits);
	return bits;
}

static void entry_fp(void *transfer, void *arg)
{
	wf_ctx_entered();
	struct fp *f = arg;
	f->at_entry = fpctl_get();
	fpctl_set(fpctl_ctx);
	wf_ctx_switch(&f->self, f->main, NULL);
	f->resumed = fpctl_get();
	f->third = third_bits();
	fpctl_set(fpctl_default);
	wf_ctx_switch_final(&f->self, f->main, NULL);
}

static void fp_control_is_per_context(void **state)
{
	struct env *e = *state;
	struct fp f = {.main = &e->main};
	make(e, &f.self, entry_fp, &f);

	fpctl_set(fpctl_main);
	wf_ctx_switch(&e->main, &f.self, NULL);
	/* The context set its own mode and left; main's is back. */
	assert_fpctl_equal(fpctl_get(), fpctl_main);
	uint64_t third_up = third_bits();

	wf_ctx_switch(&e->main, &f.self, NULL);
	assert_fpctl_equal(fpctl_get(), fpctl_main);
	assert_fpctl_equal(f.resumed, fpctl_ctx);
	/* ... and the modes were in force, not just stored: 1/3 rounded up is one
	 * unit in the last place above 1/3 rounded toward zero. */
	assert_int_equal(third_up, f.third + 1);
	/* The asm backend starts every context with the default FP control
	 * state. (The ucontext one starts it with the state of the thread that
	 * first made a context: glibc's getcontext template.) */
	if (wf_ctx_backend == WF_CTX_ASM)
		assert_fpctl_equal(f.at_entry, fpctl_default);
}

#if defined(__x86_64__)
/* The switch loads the other side's MXCSR and x87 control word only where
 * they differ from the current ones (switch_x86_64_sysv.S): each may differ
 * alone, and MXCSR's exception flags are carried too (the switch restores
 * the whole register, as a kernel thread switch does). */
struct fp_raw {
	wf_ctx_t *main;
	wf_ctx_t self;
	uint32_t mxcsr, got_mxcsr;
	uint16_t x87cw, got_x87cw;
};

static void raw_set(uint32_t mxcsr, uint16_t x87cw)
{
	__asm__ volatile("ldmxcsr %0" : : "m"(mxcsr));
	__asm__ volatile("fldcw %0" : : "m"(x87cw));
}

static void raw_get(uint32_t *mxcsr, uint16_t *x87cw)
{
	__asm__ volatile("stmxcsr %0" : "=m"(*mxcsr));
	__asm__ volatile("fnstcw %0" : "=m"(*x87cw));
}

static void entry_fp_raw(void *transfer, void *arg)
{
	wf_ctx_entered();
	struct fp_raw *f = arg;
	raw_set(f->mxcsr, f->x87cw);
	wf_ctx_switch(&f->self, f->main, NULL);
	raw_get(&f->got_mxcsr, &f->got_x87cw);
	raw_set(fpctl_default.mxcsr, fpctl_default.x87cw);
	wf_ctx_switch_final(&f->self, f->main, NULL);
}

static void fp_words_carried_alone(void **state)
{
	struct env *e = *state;
	static const struct {
		uint32_t mxcsr;
		uint16_t x87cw;
	} other[] = {{0x1F80, 0x037F | 0x0800},  /* the x87 control word alone */
		     {0x1F80 | 0x4000, 0x037F},  /* MXCSR's rounding alone */
		     {0x1F80 | 0x0020, 0x037F},  /* MXCSR's inexact flag alone */
		     {0x1F80 | 0x6020, 0x0C7F}}; /* both */
	for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
		struct fp_raw f = {
			.main = &e->main, .mxcsr = other[i].mxcsr, .x87cw = other[i].x87cw};
		make(e, &f.self, entry_fp_raw, &f);
		raw_set(0x1F80, 0x037F);
		wf_ctx_switch(&e->main, &f.self, NULL);
		uint32_t mx;
		uint16_t cw;
		raw_get(&mx, &cw);
		assert_int_equal(mx, 0x1F80); /* main's, not the context's */
		assert_int_equal(cw, 0x037F);
		wf_ctx_switch(&e->main, &f.self, NULL);
		assert_int_equal(f.got_mxcsr, other[i].mxcsr); /* the context's own */
		assert_int_equal(f.got_x87cw, other[i].x87cw);
		raw_get(&mx, &cw);
		assert_int_equal(mx, 0x1F80);
		assert_int_equal(cw, 0x037F);
	}
}
#endif

/* ---- deep recursion on a 64 KiB stack ----------------------------------- */

enum { DEEP_FRAME = 512, DEEP_USE = 40 * 1024 };

struct deep {
	wf_ctx_t *main;
	wf_ctx_t self;
	uintptr_t top;   /* highest address of the stack */
	uintptr_t used;  /* bytes of stack below top at the deepest point */
	unsigned levels; /* recursion depth reached */
	unsigned corrupt;
	int die_deep; /* finish from the deepest frame instead of returning */
};

/* One level: a buffer on the real stack (alloca, so ASan's fake stack never
 * holds it), filled before descending and checked after returning, so the
 * frames below must have left it alone. At DEEP_USE bytes of depth the
 * context suspends, and main checks it from outside. */
static TEST_NOIPA uint64_t descend(struct deep *d, unsigned level)
{
	volatile unsigned char *buf = alloca(DEEP_FRAME);
	for (unsigned i = 0; i < DEEP_FRAME; i++)
		buf[i] = (unsigned char)(level * 7 + i);
	uint64_t sum;
	if (d->top - (uintptr_t)buf >= DEEP_USE) {
		d->used = d->top - (uintptr_t)buf;
		d->levels = level;
		if (d->die_deep)
			wf_ctx_switch_final(&d->self, d->main, NULL);
		sum = (uint64_t)(uintptr_t)wf_ctx_switch(&d->self, d->main, NULL);
	} else {
		sum = descend(d, level + 1);
	}
	for (unsigned i = 0; i < DEEP_FRAME; i++)
		if (buf[i] != (unsigned char)(level * 7 + i))
			d->corrupt++;
	return sum + level;
}

static void entry_deep(void *transfer, void *arg)
{
	wf_ctx_entered();
	struct deep *d = arg;
	uint64_t sum = descend(d, 1);
	wf_ctx_switch_final(&d->self, d->main, (void *)(uintptr_t)sum);
}

static void run_deep(struct env *e, struct stack *s, int die_deep)
{
	struct deep d = {.main = &e->main, .top = (uintptr_t)s->lo + s->size, .die_deep = die_deep};
	make_on(s, &d.self, entry_deep, &d);

	assert_null(wf_ctx_switch(&e->main, &d.self, NULL));
	assert_in_range(d.used, DEEP_USE, STACK_SIZE - 1);
	if (die_deep)
		return;
	uint64_t sum = (uint64_t)(uintptr_t)wf_ctx_switch(&e->main, &d.self, (void *)1000);
	uint64_t n = d.levels;
	assert_int_equal(sum, 1000 + n * (n + 1) / 2);
	assert_int_equal(d.corrupt, 0);
}

static void deep_recursion_on_a_64k_stack(void **state)
{
	struct env *e = *state;
	run_deep(e, stack_new(e), 0);
}

/* A context that finished deep in its stack leaves that memory in whatever
 * state it had (under ASan: poisoned redzones); a new context made on the
 * same stack must still be able to use all of it. */
static void stack_reused_after_a_context_finished_deep(void **state)
{
	struct env *e = *state;
	struct stack *s = stack_new(e);
	run_deep(e, s, 1);
	run_deep(e, s, 0);
}

/* ---- float math across switches ----------------------------------------- */

enum { FLOAT_CTXS = 3, FLOAT_STEPS = 200, FLOAT_VALUES = 14 };

typedef void (*yield_fn)(void *);

/* Ten doubles and four integers live across every yield. On aarch64 the
 * compiler keeps them in d8-d15 and x19-x28, which the switch must save; on
 * x86-64 no vector register is callee-saved, so this checks that what the
 * compiler spilled around the call is intact. */
static TEST_NOIPA void float_walk(double seed, yield_fn yield, void *yarg,
				  uint64_t out[FLOAT_VALUES])
{
	double a = seed, b = seed * 0.5, c = seed + 0.25, d = 1.0 / (seed + 3.0);
	double f = -seed, g = 0.1, h = 0.2, i = 0.3, j = 0.7, k = seed * seed;
	uint64_t n = 1, m = 7, p = (uint64_t)seed, q = 0;
	for (int s = 1; s <= FLOAT_STEPS; s++) {
		a = a * 0.999 + 1.0 / s;
		b = b * 0.5 + a;
		c = c + b / (s + 1.0);
		d = d * 1.0001 - c * 1e-6;
		f = f - d * d;
		g = g * 0.75 + f * 1e-3;
		h = h * 0.5 + g;
		i = i + h / s;
		j = j * 0.9 + i * 0.01;
		k = k * 0.99 + j;
		n = n * 6364136223846793005u + 1442695040888963407u;
		m = m ^ (n >> 17);
		p = p + m * 3;
		q = q * 31 + (uint64_t)s;
		yield(yarg);
	}
	double dv[] = {a, b, c, d, f, g, h, i, j, k};
	memcpy(out, dv, sizeof dv);
	out[10] = n;
	out[11] = m;
	out[12] = p;
	out[13] = q;
}

static TEST_NOIPA void no_yield(void *arg)
{
	__asm__ volatile("" : : "r"(arg) : "memory");
}

struct flt {
	wf_ctx_t *main;
	wf_ctx_t self;
	double seed;
	uint64_t out[FLOAT_VALUES];
};

static void float_yield(void *arg)
{
	struct flt *f = arg;
	wf_ctx_switch(&f->self, f->main, NULL);
}

static void entry_float(void *transfer, void *arg)
{
	wf_ctx_entered();
	struct flt *f = arg;
	float_walk(f->seed, float_yield, f, f->out);
	wf_ctx_switch_final(&f->self, f->main, (void *)0xf1);
}

static void float_math_in_contexts(void **state)
{
	struct env *e = *state;
	struct flt f[FLOAT_CTXS];
	for (int i = 0; i < FLOAT_CTXS; i++) {
		f[i] = (struct flt){.main = &e->main, .seed = 1.5 + i};
		make(e, &f[i].self, entry_float, &f[i]);
	}
	/* Round-robin: every step of every walk is interleaved with the others
	 * and with main's own float work below. */
	int finished = 0;
	volatile double noise = 0.0;
	while (finished < FLOAT_CTXS) {
		for (int i = 0; i < FLOAT_CTXS; i++) {
			noise = noise * 1.25 + 3.0 + i;
			if (wf_ctx_switch(&e->main, &f[i].self, NULL) == (void *)0xf1)
				finished++;
		}
	}
	for (int i = 0; i < FLOAT_CTXS; i++) {
		uint64_t want[FLOAT_VALUES];
		float_walk(f[i].seed, no_yield, NULL, want);
		for (int v = 0; v < FLOAT_VALUES; v++)
			assert_int_equal(f[i].out[v], want[v]);
	}
}

/* ---- stack alignment at entry ------------------------------------------- */

struct align {
	wf_ctx_t *main;
	wf_ctx_t self;
	uintptr_t cfa;   /* the stack pointer before the call into entry */
	uintptr_t local; /* address of an alignas(16) local */
};

static void entry_align(void *transfer, void *arg)
{
	wf_ctx_entered();
	struct align *a = arg;
	alignas(16) volatile unsigned char local[16];
	local[0] = 1;
	a->cfa = (uintptr_t)__builtin_dwarf_cfa();
	a->local = (uintptr_t)&local[0];
	wf_ctx_switch_final(&a->self, a->main, NULL);
}

static void stack_is_16_byte_aligned_at_entry(void **state)
{
	struct env *e = *state;
	struct align a = {.main = &e->main};
	struct stack *s = make(e, &a.self, entry_align, &a);
	wf_ctx_switch(&e->main, &a.self, NULL);

	assert_int_equal(a.cfa % 16, 0);
	assert_int_equal(a.local % 16, 0);
	/* ... and entry runs on the stack it was given. */
	assert_in_range(a.cfa, (uintptr_t)s->lo, (uintptr_t)s->lo + s->size);
}

/* ---- main --------------------------------------------------------------- */

static const struct CMUnitTest tests[] = {
	cmocka_unit_test_setup_teardown(new_context_receives_transfer_and_arg, setup, teardown),
	cmocka_unit_test_setup_teardown(ping_pong_passes_transfer_both_ways, setup, teardown),
	cmocka_unit_test_setup_teardown(contexts_switch_among_themselves, setup, teardown),
	cmocka_unit_test_setup_teardown(callee_saved_registers_survive_a_switch, setup, teardown),
	cmocka_unit_test_setup_teardown(fp_control_is_per_context, setup, teardown),
#if defined(__x86_64__)
	cmocka_unit_test_setup_teardown(fp_words_carried_alone, setup, teardown),
#endif
	cmocka_unit_test_setup_teardown(deep_recursion_on_a_64k_stack, setup, teardown),
	cmocka_unit_test_setup_teardown(stack_reused_after_a_context_finished_deep, setup,
					teardown),
	cmocka_unit_test_setup_teardown(float_math_in_contexts, setup, teardown),
	cmocka_unit_test_setup_teardown(stack_is_16_byte_aligned_at_entry, setup, teardown),
};

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	if (only && strcmp(only, "asm") != 0 && strcmp(only, "ucontext") != 0) {
		print_error("usage: %s [asm|ucontext]\n", argv[0]);
		return 2;
	}
	int failed = 0;
	if (!only || strcmp(only, "asm") == 0)
		failed += cmocka_run_group_tests_name("asm", tests, use_asm, NULL);
	if (!only || strcmp(only, "ucontext") == 0)
		failed += cmocka_run_group_tests_name("ucontext", tests, use_ucontext, NULL);
	return failed;
}
