/* Per-runtime block cache for task memory (size classes of 8 bytes up to
 * 1 KiB, carved from 64 KiB chunks). The owner thread allocates and frees
 * without atomics; other threads free onto a lock-free stack the owner
 * drains. Larger blocks go straight to the allocator hook. */
#ifndef FUT_RT_SLAB_H
#define FUT_RT_SLAB_H

#include "internal.h"

/* Class c holds blocks of c * 8 bytes. Alignment: a block whose size is a
 * multiple of 16 is 16-aligned, any other 8-aligned. That is all a
 * struct needs: its size is a multiple of its alignment, so a future
 * whose size is not a multiple of 16 never needs 16 (and a task of 64 +
 * 56 bytes costs 120, not 128). */
#define FUT__SLAB_GRAIN 8
#define FUT__SLAB_CLASSES 128

struct fut__slab {
    void *free[FUT__SLAB_CLASSES + 1]; /* owner-only free lists */
    fut__aword remote;                 /* stack of blocks freed elsewhere */
    void *chunks;                      /* chunk list, freed by fini */
    char *bump;                        /* unused tail of the newest chunk */
    size_t bump_left;
};

void fut__slab_init(struct fut__slab *s);
/* Frees every chunk (blocks still handed out die with them). */
void fut__slab_fini(struct fut__slab *s);
/* Owner thread only. '*cls' receives the class to give back to free
 * (0 = a direct allocation). NULL on allocation failure. */
void *fut__slab_alloc(struct fut__slab *s, size_t size, uint32_t *cls);
/* Owner thread only. */
void fut__slab_free_local(struct fut__slab *s, void *p, uint32_t cls,
                          size_t size);
/* Any thread. */
void fut__slab_free_remote(struct fut__slab *s, void *p, uint32_t cls,
                           size_t size);

#endif /* FUT_RT_SLAB_H */
