/* SPDX-License-Identifier: MIT */
/* Internals of src/fiber shared by fiber.c, stack.c and the task dump
 * (src/rt/dump.c). */
#ifndef FUT_FIBER_INTERNAL_H
#define FUT_FIBER_INTERNAL_H

#include <stddef.h>

#include "fut/fiber.h"
#include "internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define FUT__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUT__ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define FUT__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FUT__TSAN 1
#endif
#endif

/* ------------------------------------------------------ stacks (stack.c) */

/* One mapping: a guard page (PROT_NONE) at 'base', then 'usable' bytes
 * from 'lo' up; the stack grows down from lo + usable. */
struct fut__stack {
    void *base;     /* the mapping */
    size_t size;    /* of the mapping: guard + usable */
    char *lo;       /* lowest usable byte (just above the guard) */
    size_t usable;  /* bytes above the guard */
    unsigned vg_id; /* valgrind's id of the registered stack */
};

/* The usable size a request of 'size' bytes gets (0 = the default;
 * rounded up to pages, at least the minimum). */
size_t fut__stack_size(size_t size);
/* Takes a stack of fut__stack_size(size) usable bytes from the pool or
 * maps a new one. 0, or FUT_ENOMEM (mmap or mprotect failed). */
int fut__stack_get(size_t size, struct fut__stack *out);
/* Gives a stack back (to the pool, or unmaps it). Any thread. */
void fut__stack_put(struct fut__stack *s);
/* Stacks of fut__stack_size(size) bytes parked in their pool now, and
 * handed out; 0 and 0 for a size without a pool (tests). */
void fut__stack_pool_counts(size_t size, size_t *parked, size_t *live);
/* Sets the pool's peak window (ns; <= 0: the default 1 s) and rolls it
 * at the next get or put (tests). */
void fut__stack_pool_window(int64_t ns);
/* Unmaps every parked stack (tests, to measure from a clean state). */
void fut__stack_pool_drain(void);

/* --------------------------------------------------- switch (switch_*.S) */

void *fut__ctx_switch(void **from, void *to, void *arg);
void fut__ctx_entry(void);

/* ---------------------------------------------- overflow report (guard.c) */

/* From the handler: 1 when 'addr' is in the guard page of the fiber
 * running on this thread, with what the report names (fiber.c hands it
 * down: guard.c never calls up into fiber.c). */
typedef int (*fut__fiber_guard_hit_fn)(const void *addr, const char **name,
                                       const char **file, int *line,
                                       size_t *usable);
/* Debug builds: installs the SIGSEGV handler once per process / the
 * alternate signal stack once per thread (before a fiber runs on it). */
void fut__fiber_guard_install(fut__fiber_guard_hit_fn hit);
void fut__fiber_guard_thread(void);

/* ---------------------------------------------------------- task dump */

/* When 'f' is a fiber future: writes "fiber 'name' parked in fut_await
 * at file:line" (or running / not started / cancelled) into 'buf' and
 * returns 1; else 0. Racy reads (see dump.c). */
int fut__fiber_describe(struct fut_future *f, char *buf, size_t len);

#endif /* FUT_FIBER_INTERNAL_H */
