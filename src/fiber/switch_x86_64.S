/* SPDX-License-Identifier: MIT */
/* The fiber context switch for x86-64 (System V): saves the callee-saved
 * registers (rbx, rbp, r12-r15, MXCSR and the x87 control word) on the
 * current stack, stores the stack pointer in '*from', loads 'to' as the
 * stack pointer, restores the registers saved there and returns 'arg' -
 * into the code that switched away from 'to', or, for a new stack, into
 * fut__ctx_entry (the layout fut__ctx_make builds in fiber.c). Like
 * boost.context's fcontext: no signal mask, no syscall. The MXCSR and
 * x87 control word are loaded only when the side we switch to saved
 * other values than the side we leave (each fiber keeps its own
 * floating-point control, test fiber.fp_control): ldmxcsr and fldcw are
 * the slowest instructions here, and in most programs every context
 * holds the defaults. rcx keeps the stack we leave for the comparison.
 *
 *   void *fut__ctx_switch(void **from, void *to, void *arg);
 *                         rdi          rsi       rdx
 *
 * Frame (from the saved stack pointer up): MXCSR (4 bytes), x87 CW (2),
 * pad (10), r15, r14, r13, r12, rbx, rbp, return address.
 */
    .text
    .globl fut__ctx_switch
    .hidden fut__ctx_switch
    .type fut__ctx_switch, @function
    .p2align 4
fut__ctx_switch:
    .cfi_startproc
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $16, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsp, %rcx
    movq %rsi, %rsp
    movl (%rsp), %eax
    cmpl (%rcx), %eax
    jne 2f
    movzwl 4(%rsp), %eax
    cmpw 4(%rcx), %ax
    jne 2f
1:
    addq $16, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    movq %rdx, %rax
    ret
2:
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    jmp 1b
    .cfi_endproc
    .size fut__ctx_switch, .-fut__ctx_switch

/* First code on a new stack: rbx holds the entry function, rax the 'arg'
 * of the switch that started it. The entry never returns (it switches
 * away for the last time); ud2 catches it if it did. The return address
 * is marked undefined so that debuggers end the backtrace here. */
    .globl fut__ctx_entry
    .hidden fut__ctx_entry
    .type fut__ctx_entry, @function
    .p2align 4
fut__ctx_entry:
    .cfi_startproc
    .cfi_undefined rip
    movq %rax, %rdi
    callq *%rbx
    ud2
    .cfi_endproc
    .size fut__ctx_entry, .-fut__ctx_entry

    .section .note.GNU-stack,"",@progbits
