/* SPDX-License-Identifier: MIT */
/* The injection queue, the part its users inline (inject.c has the
 * rest): a push of one task, and the lock-free checks that find the
 * queue empty before a take or a batch takes the lock. */
#ifndef FUT_RT_MULTI_INJECT_H
#define FUT_RT_MULTI_INJECT_H

#include "rt/multi/multi.h"

static inline void inject_push(struct mt_sched *m, struct fut_task *t)
{
    fut__mt_inject_push_list(m, t, t, 1);
}

/* Takes up to 'max' tasks (linked by 'next'); returns the first. */
static inline struct fut_task *inject_take(struct mt_sched *m, unsigned max,
                                           unsigned *got)
{
    *got = 0;
    if (fut__load(&m->inject_n, FUT__RELAXED) == 0)
        return NULL;
    return fut__mt_inject_take(m, max, got);
}

/* A worker's share of the injection queue: one task to run and up to
 * half a ring more into its ring (Tokio pulls batches the same way). */
static inline struct fut_task *inject_pop_batch(struct mt_worker *w)
{
    uintptr_t len = fut__load(&w->m->inject_n, FUT__RELAXED);
    if (len == 0)
        return NULL;
    return fut__mt_inject_pop_batch(w, len);
}

#endif /* FUT_RT_MULTI_INJECT_H */
