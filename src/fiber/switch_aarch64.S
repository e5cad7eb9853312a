/* SPDX-License-Identifier: MIT */
/* The fiber context switch for AArch64 (AAPCS64): saves the callee-saved
 * registers (x19-x28, the frame pointer x29, the link register x30 and
 * d8-d15) on the current stack, stores the stack pointer in '*from',
 * loads 'to' as the stack pointer, restores the registers saved there
 * and returns 'arg' through the restored x30 - into the code that
 * switched away from 'to', or, for a new stack, into fut__ctx_entry (the
 * layout fut__ctx_make builds in fiber.c). Like boost.context's fcontext:
 * no signal mask, no syscall.
 *
 *   void *fut__ctx_switch(void **from, void *to, void *arg);
 *                         x0           x1        x2
 *
 * Frame (160 bytes from the saved stack pointer up): d8-d15, x19-x28,
 * x29, x30.
 */
    .text
    .globl fut__ctx_switch
    .hidden fut__ctx_switch
    .type fut__ctx_switch, %function
    .p2align 4
fut__ctx_switch:
    .cfi_startproc
    sub sp, sp, #160
    stp d8, d9, [sp, #0]
    stp d10, d11, [sp, #16]
    stp d12, d13, [sp, #32]
    stp d14, d15, [sp, #48]
    stp x19, x20, [sp, #64]
    stp x21, x22, [sp, #80]
    stp x23, x24, [sp, #96]
    stp x25, x26, [sp, #112]
    stp x27, x28, [sp, #128]
    stp x29, x30, [sp, #144]
    mov x9, sp
    str x9, [x0]
    mov sp, x1
    ldp d8, d9, [sp, #0]
    ldp d10, d11, [sp, #16]
    ldp d12, d13, [sp, #32]
    ldp d14, d15, [sp, #48]
    ldp x19, x20, [sp, #64]
    ldp x21, x22, [sp, #80]
    ldp x23, x24, [sp, #96]
    ldp x25, x26, [sp, #112]
    ldp x27, x28, [sp, #128]
    ldp x29, x30, [sp, #144]
    add sp, sp, #160
    mov x0, x2
    ret
    .cfi_endproc
    .size fut__ctx_switch, .-fut__ctx_switch

/* First code on a new stack: x19 holds the entry function, x0 the 'arg'
 * of the switch that started it. The entry never returns; brk catches it
 * if it did. x30 is marked undefined to end backtraces here. */
    .globl fut__ctx_entry
    .hidden fut__ctx_entry
    .type fut__ctx_entry, %function
    .p2align 4
fut__ctx_entry:
    .cfi_startproc
    .cfi_undefined x30
    blr x19
    brk #0
    .cfi_endproc
    .size fut__ctx_entry, .-fut__ctx_entry

    .section .note.GNU-stack,"",%progbits
