/* Task memory, the fast half (tslab.c has the rest): a worker allocates
 * and frees its own blocks with a free-list pop and push; any other thread
 * frees onto the slab's remote stack, which the owner takes whole. */
#ifndef FUT_RT_MULTI_TSLAB_H
#define FUT_RT_MULTI_TSLAB_H

#include "rt/multi/multi.h"

/* Owner. '*cls' = 1..TS_CLASSES, or 0 for a block from the hook. */
static inline void *ts_alloc(struct tslab *s, size_t bytes, uint32_t *cls)
{
    uint32_t c = (uint32_t)((bytes + TS_LINE - 1) / TS_LINE);
    if (c > TS_CLASSES) {
        *cls = 0;
        return fut__alloc(bytes);
    }
    *cls = c;
    void **b = s->free[c];
    if (b) {
        s->free[c] = b[0];
        return b;
    }
    return fut__ts_refill(s, c);
}

static inline void ts_free_local(struct tslab *s, void *p, uint32_t cls)
{
    void **b = p;
    b[0] = s->free[cls];
    s->free[cls] = b;
}

static inline void ts_free_remote(struct tslab *s, void *p, uint32_t cls)
{
    void **b = p;
    b[1] = (void *)(uintptr_t)cls;
    uintptr_t head = fut__load(&s->remote, FUT__RELAXED);
    do {
        b[0] = (void *)head;
        /* Release: the link and class before the block is visible (pairs
         * with ts_drain's acquire swap). */
    } while (!fut__cas_weak(&s->remote, &head, (uintptr_t)b, FUT__RELEASE,
                            FUT__RELAXED));
}

#endif /* FUT_RT_MULTI_TSLAB_H */
