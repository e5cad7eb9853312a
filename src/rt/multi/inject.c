/* SPDX-License-Identifier: MIT */
/* The injection queue (Tokio's inject): tasks queued from outside the
 * workers, a ring's overflow, and the tasks spawned from other threads,
 * under 'inject_lock'; 'inject_n' is a hint read without it. The checks
 * that find it empty without the lock are inline in inject.h. */
#include "rt/multi/idle.h"
#include "rt/multi/inject.h"

/* Queues a list (linked by 'next') on the injection queue; wakes a
 * worker to take it unless the runtime is stopping. */
void fut__mt_inject_push_list(struct mt_sched *m, struct fut_task *first,
                              struct fut_task *last, unsigned n)
{
    fut__mutex_lock(&m->inject_lock);
    fifo_push_list(&m->ihead, &m->itail, first, last);
    /* Relaxed: a hint; the queue itself is read under the lock. The
     * statistic is written under it too (no locked instruction). */
    fut__store(&m->inject_n, fut__load(&m->inject_n, FUT__RELAXED) + n,
               FUT__RELAXED);
    fut__store(&m->f_remote, fut__load(&m->f_remote, FUT__RELAXED) + n,
               FUT__RELAXED);
    fut__mutex_unlock(&m->inject_lock);
    if (!fut__load(&m->stop, FUT__RELAXED))
        notify_parked(m);
}

/* inject_take past its check of 'inject_n' (inject.h). */
struct fut_task *fut__mt_inject_take(struct mt_sched *m, unsigned max,
                                     unsigned *got)
{
    fut__mutex_lock(&m->inject_lock);
    struct fut_task *first = m->ihead, *t = first, *prev = NULL;
    unsigned n = 0;
    while (t && n < max) {
        prev = t;
        t = t->next;
        n++;
    }
    if (n) {
        m->ihead = t;
        if (!t)
            m->itail = NULL;
        prev->next = NULL;
        fut__store(&m->inject_n, fut__load(&m->inject_n, FUT__RELAXED) - n,
                   FUT__RELAXED);
    }
    fut__mutex_unlock(&m->inject_lock);
    *got = n;
    return n ? first : NULL;
}

/* inject_pop_batch past its check of 'inject_n' ('len', inject.h). */
struct fut_task *fut__mt_inject_pop_batch(struct mt_worker *w, uintptr_t len)
{
    struct mt_sched *m = w->m;
    unsigned max = (unsigned)(len / (uintptr_t)m->n + 1);
    if (max > FUT__RING_CAP / 2)
        max = FUT__RING_CAP / 2;
    while (max > 1 && !fut__ring_has_room(&w->ring, max - 1))
        max /= 2;
    unsigned got;
    struct fut_task *t = inject_take(m, max, &got);
    if (!t)
        return NULL;
    stat_add(w, ST_GLOBAL, got);
    for (struct fut_task *q = t->next; q;) {
        struct fut_task *next = q->next, *last;
        unsigned n;
        struct fut_task *ov = fut__ring_push(&w->ring, q, &last, &n);
        if (ov) /* raced a thief: rare */
            fut__mt_inject_push_list(m, ov, last, n);
        q = next;
    }
    return t;
}
