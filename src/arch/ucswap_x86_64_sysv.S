/* swapcontext(3) without the signal-mask system call, for x86-64 (glibc's
 * ucontext_t layout). The ucontext backend makes contexts with glibc's
 * getcontext/makecontext and switches with this: glibc's swapcontext spends
 * most of its time in rt_sigprocmask, which a user-level thread switch does
 * not need (all ULTs of a worker share its kernel thread's signal mask).
 *
 * void wf_ucswap(ucontext_t *from, const ucontext_t *to)
 *
 * Offsets into glibc's x86-64 ucontext_t (checked by _Static_assert in
 * src/context/context.c):
 *
 *   uc_mcontext.gregs[REG_x] at 40 + 8*REG_x; fpregs pointer at 224;
 *   in the fpregs block: x87 control word at 0, MXCSR at 24.
 *
 * Saved: rbx, rbp, r12-r15, rsp, rip, MXCSR, x87 control word.
 * Restored: the same, plus rdi, rsi, rdx, rcx, r8, r9 - a context made by
 * makecontext receives its arguments in those.
 */
#define oR8   40
#define oR9   48
#define oR12  72
#define oR13  80
#define oR14  88
#define oR15  96
#define oRDI  104
#define oRSI  112
#define oRBP  120
#define oRBX  128
#define oRDX  136
#define oRCX  152
#define oRSP  160
#define oRIP  168
#define oFPREGS 224
#define oFCW  0
#define oMXCSR 24

	.text
	.globl wf_ucswap
	.hidden wf_ucswap
	.type wf_ucswap, @function
	.align 16
wf_ucswap:
	.cfi_startproc
	/* Save the caller into *from as if swapcontext had returned. */
	movq %rbx, oRBX(%rdi)
	movq %rbp, oRBP(%rdi)
	movq %r12, oR12(%rdi)
	movq %r13, oR13(%rdi)
	movq %r14, oR14(%rdi)
	movq %r15, oR15(%rdi)
	movq (%rsp), %rcx       /* return address */
	movq %rcx, oRIP(%rdi)
	leaq 8(%rsp), %rcx      /* the caller's rsp after our return */
	movq %rcx, oRSP(%rdi)
	movq oFPREGS(%rdi), %rcx
	fnstcw oFCW(%rcx)
	stmxcsr oMXCSR(%rcx)

	/* Load *to. */
	movq oFPREGS(%rsi), %rcx
	fldcw oFCW(%rcx)
	ldmxcsr oMXCSR(%rcx)
	movq oRSP(%rsi), %rsp
	movq oRBX(%rsi), %rbx
	movq oRBP(%rsi), %rbp
	movq oR12(%rsi), %r12
	movq oR13(%rsi), %r13
	movq oR14(%rsi), %r14
	movq oR15(%rsi), %r15
	pushq oRIP(%rsi)        /* resume address */
	movq oRDI(%rsi), %rdi   /* arguments of a makecontext entry */
	movq oRDX(%rsi), %rdx
	movq oRCX(%rsi), %rcx
	movq oR8(%rsi), %r8
	movq oR9(%rsi), %r9
	movq oRSI(%rsi), %rsi   /* last: it was the base register */
	xorl %eax, %eax
	ret
	.cfi_endproc
	.size wf_ucswap, .-wf_ucswap

	.section .note.GNU-stack,"",%progbits
