/* SPDX-License-Identifier: MIT */
/* Task memory of a worker: its slab (rt/slab.h, the whole mechanism) in
 * classes of whole cache lines - class c holds c * TS_LINE bytes, so
 * blocks are 64-aligned and two tasks never share a line (multi.h's
 * TS_LINE has the measured reason). A worker allocates and frees its
 * own blocks with a free-list pop and push; any other thread frees onto
 * the slab's remote stack, which the owner takes whole. */
#ifndef FUT_RT_MULTI_TSLAB_H
#define FUT_RT_MULTI_TSLAB_H

#include "rt/multi/multi.h"

_Static_assert(TS_CLASSES <= FUT__SLAB_CLASSES,
               "a line class past the free lists");

/* Owner. '*cls' = 1..TS_CLASSES, or 0 for a block from the hook. */
static inline void *ts_alloc(struct fut__slab *s, size_t bytes, uint32_t *cls)
{
    uint32_t c = (uint32_t)((bytes + TS_LINE - 1) / TS_LINE);
    if (c > TS_CLASSES) {
        *cls = 0;
        return fut__alloc(bytes);
    }
    *cls = c;
    return fut__slab_pop(s, c, (size_t)c * TS_LINE);
}

static inline void ts_free_local(struct fut__slab *s, void *p, uint32_t cls)
{
    fut__slab_push(s, p, cls);
}

static inline void ts_free_remote(struct fut__slab *s, void *p, uint32_t cls)
{
    fut__slab_push_remote(s, p, cls);
}

#endif /* FUT_RT_MULTI_TSLAB_H */
