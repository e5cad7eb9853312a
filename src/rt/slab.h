/* SPDX-License-Identifier: MIT */
/* Per-thread block cache for task memory: free lists by size class,
 * carved from 64 KiB chunks. The owner thread allocates and frees without
 * atomics; other threads free onto a lock-free stack the owner drains.
 * Larger blocks go straight to the allocator hook.
 *
 * One mechanism, two class sizes: the pop, the pushes, the remote stack
 * and the chunks below are the same for both; only the class of a size
 * differs.
 *   - fut__slab_alloc / fut__slab_free_*: classes of 8 bytes up to
 *     1 KiB (the current-thread runtime's tasks, the block pools);
 *   - rt/multi/tslab.h: classes of whole 64-byte lines up to 1 KiB (the
 *     multi-thread workers' tasks), on the same struct, whose free lists
 *     it indexes in lines.
 *
 * Rules of 'remote' (a Treiber stack of freed blocks):
 *   - any thread pushes with a release CAS (fut__slab_push_remote);
 *   - only the owner pops, and takes the whole stack with one acquire
 *     swap (drain), so a block is never popped while another thread
 *     reads its link: no ABA;
 *   - a block on the stack keeps its link in its first word and its
 *     class in its second (so every block is at least 16 bytes). */
#ifndef FUT_RT_SLAB_H
#define FUT_RT_SLAB_H

#include "internal.h"

/* Class c holds blocks of c * 8 bytes. Alignment: a block whose size is a
 * multiple of 16 is 16-aligned, any other 8-aligned; a block whose size
 * is a multiple of 64 carved by a slab that only ever carves such blocks
 * (tslab.h) is 64-aligned (chunks start on a line). That is all a
 * struct needs: its size is a multiple of its alignment, so a future
 * whose size is not a multiple of 16 never needs 16 (and a task of 64 +
 * 56 bytes costs 120, not 128). */
#define FUT__SLAB_GRAIN 8
#define FUT__SLAB_CLASSES 128
#define FUT__SLAB_LINE 64

struct fut__slab_chunk;

struct fut__slab {
    void *free[FUT__SLAB_CLASSES + 1]; /* owner-only free lists */
    fut__aword remote;                 /* stack of blocks freed elsewhere */
    struct fut__slab_chunk *chunks; /* owner only, as 'bump*'; fini frees */
    char *bump;                     /* unused tail of the newest chunk */
    size_t bump_left;
};

void fut__slab_init(struct fut__slab *s);
/* Frees every chunk (blocks still handed out die with them). */
void fut__slab_fini(struct fut__slab *s);
/* Owner, when the free list of class 'c' is empty: a block from the
 * remote stack, else 'bytes' (c's size) carved. NULL when out of memory. */
void *fut__slab_refill(struct fut__slab *s, uint32_t c, size_t bytes);

/* Owner: a block of class 'c', which holds 'bytes'. */
static inline void *fut__slab_pop(struct fut__slab *s, uint32_t c,
                                  size_t bytes)
{
    void **b = s->free[c];
    if (FUT_LIKELY(b != NULL)) {
        s->free[c] = b[0];
        return b;
    }
    return fut__slab_refill(s, c, bytes);
}

/* Owner: gives back block 'p' of class 'c'. */
static inline void fut__slab_push(struct fut__slab *s, void *p, uint32_t c)
{
    void **b = p;
    b[0] = s->free[c];
    s->free[c] = b;
}

/* Any thread: gives back block 'p' of class 'c' onto the remote stack. */
static inline void fut__slab_push_remote(struct fut__slab *s, void *p,
                                         uint32_t c)
{
    void **b = p;
    b[1] = (void *)(uintptr_t)c;
    uintptr_t head = fut__load(&s->remote, FUT__RELAXED);
    do {
        b[0] = (void *)head;
        /* Release: the block's link and class before it is visible
         * (pairs with the owner's acquire swap in drain). */
    } while (!fut__cas_weak(&s->remote, &head, (uintptr_t)b, FUT__RELEASE,
                            FUT__RELAXED));
}

/* Owner thread only, classes of FUT__SLAB_GRAIN. '*cls' receives the
 * class to give back to free (0 = a direct allocation). NULL on
 * allocation failure. */
void *fut__slab_alloc(struct fut__slab *s, size_t size, uint32_t *cls);
/* Owner thread only. */
void fut__slab_free_local(struct fut__slab *s, void *p, uint32_t cls,
                          size_t size);
/* Any thread. */
void fut__slab_free_remote(struct fut__slab *s, void *p, uint32_t cls,
                           size_t size);

#endif /* FUT_RT_SLAB_H */
