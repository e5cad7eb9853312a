/* SPDX-License-Identifier: MIT */
/* Where a task goes when it is queued on a worker (multi.h's ownership
 * and LIFO rules): the LIFO slot, the ring (overflowing to the injection
 * queue), the thread-affine queues 'lq' (multi.h) and 'rl'. Inline: the
 * worker loop, spawn and fut__mt_schedule (schedule.c) all push, and
 * these are their hot paths. */
#ifndef FUT_RT_MULTI_SCHEDULE_H
#define FUT_RT_MULTI_SCHEDULE_H

#include "rt/multi/idle.h"
#include "rt/multi/inject.h"

/* A stack, not a locked FIFO: one RMW on the push and one on the take,
 * no lock line shared by the two threads (xthread_wake: two lock/unlock
 * pairs per hop before); the take restores the order of the pushes. */
static inline void rl_push(struct mt_worker *home, struct fut_task *t)
{
    (void)stack_push(&home->rl, t, FUT__RELEASE);
    unpark_worker(home); /* a permit if it is awake: it looks at 'rl' */
}

/* The owner (or the shutdown thread) takes 'rl'. ST_REMOTE is counted
 * here, by the owner, not by the pushers: an RMW on the home's counter
 * line by another thread was a cache miss on every cross-thread wake. */
static inline void rl_drain(struct mt_worker *w)
{
    struct fut_task *t = stack_take(&w->rl), *fifo = NULL;
    if (!t)
        return;
    struct fut_task *newest = t;
    uintptr_t n = 0;
    while (t) { /* newest first: reverse */
        struct fut_task *next = t->next;
        t->next = fifo;
        fifo = t;
        t = next;
        n++;
    }
    stat_add(w, ST_REMOTE, n);
    fifo_push_list(&w->lq_head, &w->lq_tail, fifo, newest);
}

enum push_kind { PUSH_NEW, PUSH_RESCHEDULE };

/* Into the ring, overflowing to the injection queue. New work going into
 * an empty ring wakes a thief (parallelism); a reschedule only makes
 * sure a watcher exists (a yield loop must not bounce between workers,
 * but must not be stranded by a stuck poll either). */
FUT__HOT_INLINE void push_ring(struct mt_worker *w, struct fut_task *t,
                               enum push_kind kind)
{
    struct mt_sched *m = w->m;
    int was_empty;
    if (!fut__ring_try_push(&w->ring, t, &was_empty)) {
        unsigned n;
        struct fut_task *last;
        struct fut_task *ov =
            fut__ring_push_ex(&w->ring, t, &last, &n, &was_empty);
        if (ov) {
            fut__mt_inject_push_list(m, ov, last, n);
            return;
        }
    }
    if (w->in_driver || m->n == 1 || !was_empty)
        return; /* after a driver park the worker notifies in one go */
    if (kind == PUSH_NEW || need_watch(m))
        notify_parked(m);
}

static inline void push_lifo(struct mt_worker *w, struct fut_task *t)
{
    struct mt_sched *m = w->m;
    /* A store into an empty slot, a swap into a full one (rt/lifo.h). */
    struct fut_task *prev = fut__lifo_push(&w->lifo, t);
    if (prev) {
        push_ring(w, prev, PUSH_NEW);
        return;
    }
    /* No fence needed between the store and need_watch's seq_cst loads:
     * what keeps a watcher is ordering against our unpark RMW on 'idle',
     * which precedes both (see the rules); the watcher sees the slot
     * itself at its next look, a millisecond later. */
    if (m->n > 1 && need_watch(m))
        notify_parked(m);
}

/* A push a task makes into the ring: new work (a thief may help), or the
 * continuation of a capped LIFO chain (see run_tick). */
static inline enum push_kind push_kind_now(struct mt_worker *w)
{
    if (!w->lifo_cont)
        return PUSH_NEW;
    w->lifo_cont = 0;
    return PUSH_RESCHEDULE;
}

#endif /* FUT_RT_MULTI_SCHEDULE_H */
