/* SPDX-License-Identifier: MIT */
/* Who to wake, the fast half (idle.c has the rest). */
#ifndef FUT_RT_MULTI_IDLE_H
#define FUT_RT_MULTI_IDLE_H

#include "rt/multi/multi.h"

/* Work was made stealable: start one sleeping worker unless somebody
 * searches already (see the rules). */
static inline void notify_parked(struct mt_sched *m)
{
    /* Seq_cst fence: the push we just made against a parker's RMW on
     * 'idle' followed by its fence and queue check (Dekker). */
    fut__fence(FUT__SEQ_CST);
    if (!should_wake(m, fut__load(&m->idle, FUT__RELAXED)))
        return;
    fut__mt_notify_slow(m);
}

#endif /* FUT_RT_MULTI_IDLE_H */
