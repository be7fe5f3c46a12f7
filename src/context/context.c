/* The two context backends and the switch wrapper. See context.h. */
#include "context/context.h"
#include "util/sys.h"

#include <pthread.h>
#include <stddef.h>
#if defined(__aarch64__)
#include <asm/sigcontext.h>
#endif
#include <stdint.h>
#include <string.h>

#if WF_ASAN
#include <sanitizer/common_interface_defs.h>
#endif
#if WF_TSAN
#include <sanitizer/tsan_interface.h>
#endif

int wf_ctx_backend = WF_CTX_ASM;

/* From src/arch/switch_<arch>_<abi>.S */
void *wf_ctx_jump(void **save_sp, void *new_sp, void *transfer);
void wf_ctx_trampoline(void);

#if defined(__x86_64__)
/* From src/arch/ucswap_x86_64_sysv.S */
void wf_ucswap(ucontext_t *from, const ucontext_t *to);
/* The asm hard-codes glibc's layout; prove it here. */
_Static_assert(offsetof(ucontext_t, uc_mcontext.gregs) == 40, "gregs offset");
_Static_assert(offsetof(ucontext_t, uc_mcontext.fpregs) == 224, "fpregs offset");
_Static_assert(REG_RBX == 11 && REG_RSP == 15 && REG_RIP == 16 && REG_RDI == 8, "greg index");
_Static_assert(offsetof(struct _libc_fpstate, mxcsr) == 24, "mxcsr offset");
#define WF_UC_SWAP(from, to) wf_ucswap(from, to)
#else
#define WF_UC_SWAP(from, to) swapcontext(from, to)
#endif

/* ---- asm backend ------------------------------------------------------ */

#if defined(__x86_64__)
enum { WF_FRAME_WORDS = 8 }; /* see the frame table in switch_x86_64_sysv.S */

static void make_asm(wf_ctx_t *c, wf_ctx_entry_fn entry, void *arg)
{
	uintptr_t top = ((uintptr_t)c->stack_lo + c->stack_size) & ~(uintptr_t)15;
	uint64_t *f = (uint64_t *)(top - WF_FRAME_WORDS * 8);
	f[0] = 0x1F80u | (0x037Full << 32); /* default MXCSR, x87 control word */
	f[1] = (uint64_t)(uintptr_t)entry;  /* r12 */
	f[2] = (uint64_t)(uintptr_t)arg;    /* r13 */
	f[3] = 0;                           /* r14 */
	f[4] = 0;                           /* r15 */
	f[5] = 0;                           /* rbx */
	f[6] = 0;                           /* rbp: end of the frame chain */
	f[7] = (uint64_t)(uintptr_t)wf_ctx_trampoline;
	c->sp = f;
}
#elif defined(__aarch64__)
enum { WF_FRAME_WORDS = 22 }; /* see the frame table in switch_aarch64_aapcs.S */

static void make_asm(wf_ctx_t *c, wf_ctx_entry_fn entry, void *arg)
{
	uintptr_t top = ((uintptr_t)c->stack_lo + c->stack_size) & ~(uintptr_t)15;
	uint64_t *f = (uint64_t *)(top - WF_FRAME_WORDS * 8);
	memset(f, 0, WF_FRAME_WORDS * 8);
	f[0] = (uint64_t)(uintptr_t)entry;              /* x19 */
	f[1] = (uint64_t)(uintptr_t)arg;                /* x20 */
	f[10] = 0;                                      /* x29: end of the frame chain */
	f[11] = (uint64_t)(uintptr_t)wf_ctx_trampoline; /* x30 */
	f[20] = 0;                                      /* FPCR: round to nearest, no traps */
	c->sp = f;
}
#endif

/* ---- ucontext backend ------------------------------------------------- */

/* getcontext() costs a system call (it reads the signal mask), so it runs
 * once; new contexts copy this template and let makecontext fill it in. */
static ucontext_t uc_template;
static pthread_once_t uc_template_once = PTHREAD_ONCE_INIT;

static void uc_template_init(void)
{
	if (getcontext(&uc_template) != 0)
		wf_panic("getcontext failed");
}

/* makecontext passes only int arguments, and on LP64 a pointer does not fit
 * in an int (the pitfall seed 001 hit): split the ctx pointer in two. */
static void uc_entry(unsigned int lo, unsigned int hi)
{
	wf_ctx_t *c = (wf_ctx_t *)(((uintptr_t)hi << 32) | (uintptr_t)lo);
	c->entry(c->transfer, c->arg);
	wf_panic("ULT entry function returned");
}

static void make_ucontext(wf_ctx_t *c, void *reserved, wf_ctx_entry_fn entry, void *arg)
{
	WF_SYS(pthread_once)(&uc_template_once, uc_template_init);
	ucontext_t *uc = reserved;
	memcpy(uc, &uc_template, sizeof *uc);
#if defined(__x86_64__)
	/* Same start state as the asm backend: default FP control words. */
	uc->uc_mcontext.fpregs = &uc->__fpregs_mem;
	uc->__fpregs_mem.cwd = 0x037F;
	uc->__fpregs_mem.mxcsr = 0x1F80;
#elif defined(__aarch64__)
	/* The template's FP record (getcontext fills it) holds the FPCR of
	 * whoever made the first context: start from the default instead. */
	struct fpsimd_context *fp = (struct fpsimd_context *)(void *)uc->uc_mcontext.__reserved;
	if (fp->head.magic == FPSIMD_MAGIC)
		fp->fpcr = 0;
#endif
	uc->uc_link = NULL;
	uc->uc_stack.ss_sp = c->stack_lo;
	uc->uc_stack.ss_size = c->stack_size;
	uc->uc_stack.ss_flags = 0;
	c->uc = uc;
	c->entry = entry;
	c->arg = arg;
	uintptr_t p = (uintptr_t)c;
	makecontext(uc, (void (*)(void))uc_entry, 2, (unsigned int)(p & 0xffffffffu),
		    (unsigned int)(p >> 32));
}

/* ---- common ------------------------------------------------------------ */

size_t wf_ctx_reserve(void)
{
	if (wf_ctx_backend == WF_CTX_UCONTEXT)
		return (sizeof(ucontext_t) + 63) & ~(size_t)63;
	return 0;
}

void wf_ctx_make_kind(wf_ctx_t *c, int kind, void *lo, size_t size, void *reserved,
		      wf_ctx_entry_fn entry, void *arg)
{
	WF_ASSERT(reserved || kind != WF_CTX_UCONTEXT);
	c->stack_lo = lo;
	c->stack_size = size;
	c->transfer = NULL;
#if WF_ASAN
	c->asan_fake = NULL;
#endif
#if WF_TSAN
	/* A fiber of its own, never one a previous user of the stack had
	 * (wf_ctx_forget destroyed that): TSan would take the dead context's
	 * accesses for the new one's. Creating it orders the creator's past
	 * before everything the context will do. c may hold garbage: whatever
	 * fiber it had was forgotten by its owner, not here. */
	c->tsan_own = c->tsan_fiber = __tsan_create_fiber(0);
#endif
	if (kind == WF_CTX_UCONTEXT)
		make_ucontext(c, reserved, entry, arg);
	else
		make_asm(c, entry, arg);
}

void wf_ctx_make(wf_ctx_t *c, void *lo, size_t size, void *reserved, wf_ctx_entry_fn entry,
		 void *arg)
{
	wf_ctx_make_kind(c, wf_ctx_backend, lo, size, reserved, entry, arg);
}

void wf_ctx_init_current(wf_ctx_t *c, void *reserved)
{
	memset(c, 0, sizeof *c);
	c->uc = reserved;
	if (reserved) {
		memset(reserved, 0, sizeof(ucontext_t));
#if defined(__x86_64__)
		((ucontext_t *)reserved)->uc_mcontext.fpregs =
			&((ucontext_t *)reserved)->__fpregs_mem;
#endif
	}
	pthread_attr_t a;
	if (WF_SYS(pthread_getattr_np)(WF_SYS(pthread_self)(), &a) == 0) {
		void *lo;
		size_t n;
		if (WF_SYS(pthread_attr_getstack)(&a, &lo, &n) == 0) {
			c->stack_lo = lo;
			c->stack_size = n;
		}
		WF_SYS(pthread_attr_destroy)(&a);
	}
#if WF_TSAN
	c->tsan_fiber = __tsan_get_current_fiber(); /* the thread's (or a ULT's) */
#endif
}

void wf_ctx_forget(wf_ctx_t *c)
{
#if WF_TSAN
	if (c->tsan_own)
		__tsan_destroy_fiber(c->tsan_own);
	c->tsan_own = c->tsan_fiber = NULL;
#else
	(void)c;
#endif
}

void wf_ctx_set_name(wf_ctx_t *c, const char *name)
{
#if WF_TSAN
	if (c->tsan_own)
		__tsan_set_fiber_name(c->tsan_own, name);
#else
	(void)c;
	(void)name;
#endif
}

/* TSan: hand the kernel thread to to's fiber, right before the jump (from
 * here on the code counts as to's). The running fiber is saved first: a
 * ULT that switched into a bare context of its own (weft/context.h) and
 * blocks there must come back as that context's fiber, not its own. */
static inline void tsan_switch(wf_ctx_t *from, wf_ctx_t *to)
{
#if WF_TSAN
	if (from)
		from->tsan_fiber = __tsan_get_current_fiber();
	__tsan_switch_to_fiber(to->tsan_fiber, 0);
#else
	(void)from;
	(void)to;
#endif
}

static inline void *do_switch(int kind, wf_ctx_t *from, wf_ctx_t *to, void *transfer)
{
	if (kind == WF_CTX_ASM)
		return wf_ctx_jump(&from->sp, to->sp, transfer);
	to->transfer = transfer;
	WF_UC_SWAP(from->uc, to->uc);
	return from->transfer;
}

void *wf_ctx_switch_kind(int kind, wf_ctx_t *from, wf_ctx_t *to, void *transfer)
{
	tsan_switch(from, to);
#if WF_ASAN
	__sanitizer_start_switch_fiber(&from->asan_fake, to->stack_lo, to->stack_size);
	void *r = do_switch(kind, from, to, transfer);
	__sanitizer_finish_switch_fiber(from->asan_fake, NULL, NULL);
	return r;
#else
	return do_switch(kind, from, to, transfer);
#endif
}

void *wf_ctx_switch(wf_ctx_t *from, wf_ctx_t *to, void *transfer)
{
	return wf_ctx_switch_kind(wf_ctx_backend, from, to, transfer);
}

void wf_ctx_switch_final_kind(int kind, wf_ctx_t *from, wf_ctx_t *to, void *transfer)
{
#if WF_ASAN
	/* NULL: the fake stack of the dying context is released. */
	__sanitizer_start_switch_fiber(NULL, to->stack_lo, to->stack_size);
#endif
	tsan_switch(NULL, to); /* wf_ctx_forget destroys from's fiber later */
	do_switch(kind, from, to, transfer);
	wf_panic("a finished context was resumed");
}

void wf_ctx_switch_final(wf_ctx_t *from, wf_ctx_t *to, void *transfer)
{
	wf_ctx_switch_final_kind(wf_ctx_backend, from, to, transfer);
}

void wf_ctx_entered(void)
{
#if WF_ASAN
	__sanitizer_finish_switch_fiber(NULL, NULL, NULL);
#endif
}
