/* SPDX-License-Identifier: MIT */
/* Fiber stacks and their pool.
 *
 * A stack is one anonymous private mapping: a guard page (PROT_NONE) at
 * the bottom, the usable bytes above it. MAP_NORESERVE and no touching:
 * the kernel commits a page only when the fiber first writes it, so a
 * 64 KiB stack of a fiber parked in a read costs the one or two pages
 * its frames reach.
 *
 * The pool (process-wide, one mutex) keeps freed stacks of the default
 * size for the next spawn - a spawn + join then costs no syscall. Rules:
 *   - at most POOL_MAX stacks wait; a stack given back to a full pool is
 *     unmapped (at once: no madvise first, which a burst of spawns
 *     beyond the pool would pay for nothing, one syscall per fiber);
 *   - the first POOL_HOT keep their pages (the next fiber finds them
 *     committed: no page faults); a stack parked beyond POOL_HOT has its
 *     pages given back first (madvise MADV_DONTNEED, outside the lock),
 *     so an idle pool holds at most POOL_HOT stacks' worth of memory;
 *   - it is a LIFO: a spawn takes the stack freed last (the warmest);
 *   - stacks of other sizes are mapped and unmapped each time.
 * Valgrind: every mapping is registered as a stack (VALGRIND_STACK_*),
 * so that memcheck follows the switches. ASan: a stack handed out is
 * unpoisoned (frames of the fiber that used it before never returned,
 * and their redzones would still be poisoned).
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fiber/fiber_internal.h"
#include "util/mutex.h"

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define FUT__HAVE_VALGRIND 1
#endif
#endif
#ifdef FUT__ASAN
#include <sanitizer/asan_interface.h>
#endif

#if defined(FUT__ASAN) || defined(FUT__TSAN)
#define DEFAULT_STACK (256u * 1024) /* sanitizer frames are larger */
#else
#define DEFAULT_STACK (64u * 1024)
#endif
#define MIN_STACK (16u * 1024)
#define POOL_MAX 256
#define POOL_HOT 16

struct pooled {
    struct fut__stack st;
    int released; /* its pages were given back */
};

static fut__mutex pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pooled pool[POOL_MAX]; /* pool_lock */
static size_t pool_n;                /* pool_lock */

static size_t page_size(void)
{
    static size_t ps;
    if (!ps)
        ps = (size_t)sysconf(_SC_PAGESIZE); /* racy but idempotent */
    return ps;
}

size_t fut__stack_size(size_t size)
{
    size_t ps = page_size();
    if (size == 0)
        size = DEFAULT_STACK;
    if (size < MIN_STACK)
        size = MIN_STACK;
    return (size + ps - 1) & ~(ps - 1);
}

static int stack_map(size_t usable, struct fut__stack *out)
{
    size_t ps = page_size();
    size_t size = usable + ps;
    void *p =
        mmap(NULL, size, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (p == MAP_FAILED)
        return FUT_ENOMEM;
    if (mprotect(p, ps, PROT_NONE) != 0) {
        munmap(p, size);
        return FUT_ENOMEM;
    }
    out->base = p;
    out->size = size;
    out->lo = (char *)p + ps;
    out->usable = usable;
#ifdef FUT__HAVE_VALGRIND
    out->vg_id = VALGRIND_STACK_REGISTER(out->lo, out->lo + usable);
#else
    out->vg_id = 0;
#endif
    return 0;
}

static void stack_unmap(struct fut__stack *s)
{
#ifdef FUT__HAVE_VALGRIND
    VALGRIND_STACK_DEREGISTER(s->vg_id);
#endif
    munmap(s->base, s->size);
}

int fut__stack_get(size_t size, struct fut__stack *out)
{
    size_t usable = fut__stack_size(size);
    int found = 0;
    if (usable == fut__stack_size(0)) {
        fut__mutex_lock(&pool_lock);
        if (pool_n > 0) {
            *out = pool[--pool_n].st;
            found = 1;
        }
        fut__mutex_unlock(&pool_lock);
    }
    if (!found) {
        int r = stack_map(usable, out);
        if (r != 0)
            return r;
    }
#ifdef FUT__ASAN
    ASAN_UNPOISON_MEMORY_REGION(out->lo, out->usable);
#endif
    return 0;
}

void fut__stack_put(struct fut__stack *s)
{
    if (s->usable != fut__stack_size(0)) {
        stack_unmap(s);
        return;
    }
    fut__mutex_lock(&pool_lock);
    size_t n = pool_n;
    fut__mutex_unlock(&pool_lock);
    if (n >= POOL_MAX) { /* full (racy: at worst a stack not pooled) */
        stack_unmap(s);
        return;
    }
    int release = n >= POOL_HOT;
    if (release) /* outside the lock: a syscall */
        madvise(s->lo, s->usable, MADV_DONTNEED);
    fut__mutex_lock(&pool_lock);
    int parked = pool_n < POOL_MAX;
    if (parked) {
        pool[pool_n].st = *s;
        pool[pool_n].released = release;
        pool_n++;
    }
    fut__mutex_unlock(&pool_lock);
    if (!parked)
        stack_unmap(s);
}

void fut__stack_pool_counts(size_t *parked, size_t *released)
{
    fut__mutex_lock(&pool_lock);
    size_t r = 0;
    for (size_t i = 0; i < pool_n; i++)
        r += (size_t)pool[i].released;
    *parked = pool_n;
    *released = r;
    fut__mutex_unlock(&pool_lock);
}

void fut__stack_pool_drain(void)
{
    for (;;) {
        struct fut__stack s;
        fut__mutex_lock(&pool_lock);
        int have = pool_n > 0;
        if (have)
            s = pool[--pool_n].st;
        fut__mutex_unlock(&pool_lock);
        if (!have)
            return;
        stack_unmap(&s);
    }
}
