/* The asm context switch for aarch64, AAPCS64 (ELF, GNU as).
 *
 * void *wf_ctx_jump(void **save_sp, void *new_sp, void *transfer)
 *   Saves the callee-saved state of the caller on its own stack, stores the
 *   stack pointer in *save_sp, loads new_sp and restores the state found
 *   there. Returns `transfer` in the resumed context: the side that switches
 *   away hands a value to the side that wakes up (weft passes its worker).
 *
 * AAPCS64 makes x19-x28, the frame pointer x29, the link register x30 and
 * the low 64 bits of v8-v15 (d8-d15) callee-saved; FPCR (rounding mode,
 * flush-to-zero, trap enables) belongs to the thread of control, so it
 * travels with the context too. FPSR (the sticky exception flags) does not.
 *
 * Frame saved at the stack pointer (176 bytes, 16-byte aligned as AAPCS64
 * keeps sp at all times):
 *
 *   slot  offset  register
 *   ----  ------  ----------------------------------------------
 *     0      0    x19      (new context: entry function)
 *     1      8    x20      (new context: its argument)
 *     2     16    x21
 *     3     24    x22
 *     4     32    x23
 *     5     40    x24
 *     6     48    x25
 *     7     56    x26
 *     8     64    x27
 *     9     72    x28
 *    10     80    x29 fp   (new context: 0, the end of the frame chain)
 *    11     88    x30 lr   (resume address; new context: wf_ctx_trampoline)
 *    12     96    d8
 *    13    104    d9
 *    14    112    d10
 *    15    120    d11
 *    16    128    d12
 *    17    136    d13
 *    18    144    d14
 *    19    152    d15
 *    20    160    FPCR     (new context: 0, round to nearest, no traps)
 *    21    168    padding  (keeps the frame a multiple of 16 bytes)
 *
 * make_asm() in src/context/context.c builds this frame for a new context;
 * the two must change together (WF_FRAME_WORDS there is 22).
 */

/* With -mbranch-protection=bti (or =standard) every object must say it is
 * BTI-compatible, or the linker quietly turns BTI off for the whole binary.
 * wf_ctx_jump is a call target, so it starts with a landing pad; the
 * trampoline is reached only by `ret`, which BTI does not check. */
#if defined(__ARM_FEATURE_BTI_DEFAULT) && __ARM_FEATURE_BTI_DEFAULT
#define WF_BTI_C hint #34 /* bti c */
#define WF_GNU_PROPERTY_BTI 1
#else
#define WF_BTI_C
#define WF_GNU_PROPERTY_BTI 0
#endif

#define FRAME_SIZE 176
#define oX19 0
#define oX21 16
#define oX23 32
#define oX25 48
#define oX27 64
#define oX29 80
#define oD8 96
#define oD10 112
#define oD12 128
#define oD14 144
#define oFPCR 160

	.text
	.globl wf_ctx_jump
	.hidden wf_ctx_jump
	.type wf_ctx_jump, %function
	.balign 16
wf_ctx_jump:
	.cfi_startproc
	WF_BTI_C
	sub sp, sp, #FRAME_SIZE
	.cfi_def_cfa_offset FRAME_SIZE
	/* Save the caller. The CFI notes say where each register now lives, so a
	 * debugger stopped in here still unwinds into the caller; after sp is
	 * switched below they describe the resumed side's frame, which has the
	 * same shape. */
	stp x19, x20, [sp, #oX19]       /* slots 0-1 */
	stp x21, x22, [sp, #oX21]       /* slots 2-3 */
	stp x23, x24, [sp, #oX23]       /* slots 4-5 */
	stp x25, x26, [sp, #oX25]       /* slots 6-7 */
	stp x27, x28, [sp, #oX27]       /* slots 8-9 */
	stp x29, x30, [sp, #oX29]       /* slots 10-11: frame pointer, return address */
	stp d8, d9, [sp, #oD8]          /* slots 12-13 */
	stp d10, d11, [sp, #oD10]       /* slots 14-15 */
	stp d12, d13, [sp, #oD12]       /* slots 16-17 */
	stp d14, d15, [sp, #oD14]       /* slots 18-19 */
	mrs x9, fpcr
	str x9, [sp, #oFPCR]            /* slot 20: FP control (rounding, FZ, traps) */
	.cfi_offset x19, oX19 - FRAME_SIZE
	.cfi_offset x20, oX19 + 8 - FRAME_SIZE
	.cfi_offset x21, oX21 - FRAME_SIZE
	.cfi_offset x22, oX21 + 8 - FRAME_SIZE
	.cfi_offset x23, oX23 - FRAME_SIZE
	.cfi_offset x24, oX23 + 8 - FRAME_SIZE
	.cfi_offset x25, oX25 - FRAME_SIZE
	.cfi_offset x26, oX25 + 8 - FRAME_SIZE
	.cfi_offset x27, oX27 - FRAME_SIZE
	.cfi_offset x28, oX27 + 8 - FRAME_SIZE
	.cfi_offset x29, oX29 - FRAME_SIZE
	.cfi_offset x30, oX29 + 8 - FRAME_SIZE
	.cfi_offset d8, oD8 - FRAME_SIZE
	.cfi_offset d9, oD8 + 8 - FRAME_SIZE
	.cfi_offset d10, oD10 - FRAME_SIZE
	.cfi_offset d11, oD10 + 8 - FRAME_SIZE
	.cfi_offset d12, oD12 - FRAME_SIZE
	.cfi_offset d13, oD12 + 8 - FRAME_SIZE
	.cfi_offset d14, oD14 - FRAME_SIZE
	.cfi_offset d15, oD14 + 8 - FRAME_SIZE

	mov x10, sp
	str x10, [x0]                   /* publish the saved frame ... */
	mov sp, x1                      /* ... and take the other one */

	/* Restore the other side, slot for slot. */
	ldr x10, [sp, #oFPCR]           /* slot 20 */
	cmp x10, x9                     /* writing FPCR can stall the pipeline: */
	b.eq 1f                         /* skip it when both sides agree */
	msr fpcr, x10
1:	ldp x19, x20, [sp, #oX19]       /* slots 0-1 (new context: entry, arg) */
	ldp x21, x22, [sp, #oX21]       /* slots 2-3 */
	ldp x23, x24, [sp, #oX23]       /* slots 4-5 */
	ldp x25, x26, [sp, #oX25]       /* slots 6-7 */
	ldp x27, x28, [sp, #oX27]       /* slots 8-9 */
	ldp d8, d9, [sp, #oD8]          /* slots 12-13 */
	ldp d10, d11, [sp, #oD10]       /* slots 14-15 */
	ldp d12, d13, [sp, #oD12]       /* slots 16-17 */
	ldp d14, d15, [sp, #oD14]       /* slots 18-19 */
	ldp x29, x30, [sp, #oX29]       /* slots 10-11 (new context: 0, trampoline) */
	add sp, sp, #FRAME_SIZE
	.cfi_def_cfa_offset 0
	.cfi_restore x19
	.cfi_restore x20
	.cfi_restore x21
	.cfi_restore x22
	.cfi_restore x23
	.cfi_restore x24
	.cfi_restore x25
	.cfi_restore x26
	.cfi_restore x27
	.cfi_restore x28
	.cfi_restore x29
	.cfi_restore x30
	.cfi_restore d8
	.cfi_restore d9
	.cfi_restore d10
	.cfi_restore d11
	.cfi_restore d12
	.cfi_restore d13
	.cfi_restore d14
	.cfi_restore d15
	mov x0, x2                      /* the transfer value, as return value and
	                                 * as first argument for a new context */
	ret
	.cfi_endproc
	.size wf_ctx_jump, .-wf_ctx_jump

/* First code a new context runs: entered by wf_ctx_jump's `ret` with sp
 * 16-byte aligned at the top of the stack, x0 = transfer, x19 = entry,
 * x20 = arg, x29 = 0. Calls entry(transfer, arg); entry must never return. */
	.globl wf_ctx_trampoline
	.hidden wf_ctx_trampoline
	.type wf_ctx_trampoline, %function
	.balign 16
wf_ctx_trampoline:
	.cfi_startproc
	.cfi_undefined x30              /* outermost frame: unwinders stop here */
	mov x1, x20
	blr x19
	brk #0x3e8                      /* entry returned: trap, never run off the stack */
	.cfi_endproc
	.size wf_ctx_trampoline, .-wf_ctx_trampoline

#if WF_GNU_PROPERTY_BTI
/* GNU property note: GNU_PROPERTY_AARCH64_FEATURE_1_AND = BTI. */
	.pushsection .note.gnu.property, "a"
	.balign 8
	.long 4                         /* name size: "GNU\0" */
	.long 16                        /* descriptor size */
	.long 5                         /* NT_GNU_PROPERTY_TYPE_0 */
	.asciz "GNU"
	.long 0xc0000000                /* GNU_PROPERTY_AARCH64_FEATURE_1_AND */
	.long 4                         /* its data size */
	.long 1                         /* GNU_PROPERTY_AARCH64_FEATURE_1_BTI */
	.long 0                         /* padding to 8 bytes */
	.popsection
#endif

	.section .note.GNU-stack,"",%progbits
