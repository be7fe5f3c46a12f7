/* The asm context switch for x86-64, System V ABI (ELF, GNU as).
 *
 * void *wf_ctx_jump(void **save_sp, void *new_sp, void *transfer)
 *   Saves the callee-saved state of the caller on its own stack, stores the
 *   stack pointer in *save_sp, loads new_sp and restores the state found
 *   there. Returns `transfer` in the resumed context: the side that switches
 *   away hands a value to the side that wakes up (weft passes its worker).
 *
 * Frame saved at the stack pointer (64 bytes, 16-byte aligned on entry - 8):
 *
 *   offset  slot
 *   ------  ---------------------------------------
 *     0     MXCSR (4 bytes) | x87 control word (2) | pad (2)
 *     8     r12
 *    16     r13
 *    24     r14
 *    32     r15
 *    40     rbx
 *    48     rbp
 *    56     return address (rip)
 *
 * A new context (made by make_asm in src/context/context.c) holds the same frame
 * with rip = wf_ctx_trampoline, r12 = entry function, r13 = its argument,
 * rbp = 0 and the default MXCSR/x87 control words.
 */
	.text
	.globl wf_ctx_jump
	.hidden wf_ctx_jump
	.type wf_ctx_jump, @function
	.align 16
wf_ctx_jump:
	.cfi_startproc
	pushq %rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset rbp, 0
	pushq %rbx
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset rbx, 0
	pushq %r15
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r15, 0
	pushq %r14
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r14, 0
	pushq %r13
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r13, 0
	pushq %r12
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r12, 0
	leaq -8(%rsp), %rsp
	.cfi_adjust_cfa_offset 8
	stmxcsr (%rsp)          /* SSE control/status: rounding, exceptions masks */
	fnstcw 4(%rsp)          /* x87 control word */
	movl (%rsp), %eax       /* both, kept to compare with the other side's */
	movzwl 4(%rsp), %ecx

	movq %rsp, (%rdi)       /* publish the saved frame */
	movq %rsi, %rsp         /* ... and take the other one */

	/* Load the other side's words only where they differ: ldmxcsr and
	 * fldcw are slow (microcoded, fldcw serialises the x87 unit), and
	 * nearly always the two sides share the defaults. Loading a value
	 * equal to the current one would change nothing. */
	cmpl (%rsp), %eax
	jne 2f
	cmpw 4(%rsp), %cx
	jne 2f
1:
	leaq 8(%rsp), %rsp
	popq %r12
	popq %r13
	popq %r14
	popq %r15
	popq %rbx
	popq %rbp
	movq %rdx, %rax         /* the transfer value, as return value ... */
	movq %rdx, %rdi         /* ... and as first argument for a new context */
	ret
2:
	ldmxcsr (%rsp)
	fldcw 4(%rsp)
	jmp 1b
	.cfi_endproc
	.size wf_ctx_jump, .-wf_ctx_jump

/* First code a new context runs: entered by wf_ctx_jump's `ret` with rsp
 * 16-byte aligned, rdi = transfer, r12 = entry, r13 = arg.
 * Calls entry(transfer, arg); entry must never return. */
	.globl wf_ctx_trampoline
	.hidden wf_ctx_trampoline
	.type wf_ctx_trampoline, @function
	.align 16
wf_ctx_trampoline:
	.cfi_startproc
	.cfi_undefined rip      /* outermost frame: unwinders stop here */
	movq %r13, %rsi
	call *%r12
	ud2                     /* entry returned: trap, never run off the stack */
	.cfi_endproc
	.size wf_ctx_trampoline, .-wf_ctx_trampoline

	.section .note.GNU-stack,"",%progbits
