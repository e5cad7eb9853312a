/* SPDX-License-Identifier: MIT */
/* The scheduler's references (multi.h's "Lifetime" rules): dropping the
 * last one frees it (destroy.c). */
#ifndef FUT_RT_MULTI_DESTROY_H
#define FUT_RT_MULTI_DESTROY_H

#include "rt/multi/multi.h"

static inline void release_refs(struct mt_sched *m, uintptr_t k)
{
    /* Release/acquire: every user's last access before the free. */
    if (fut__fetch_sub(&m->refs, k, FUT__ACQ_REL) == k)
        fut__mt_destroy(m);
}

#endif /* FUT_RT_MULTI_DESTROY_H */
