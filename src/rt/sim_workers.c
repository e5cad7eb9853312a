/* SPDX-License-Identifier: MIT */
/* N workers emulated on the simulation's thread (sim_workers.h).
 *
 * Rules (the multi-thread scheduler's shapes, src/rt/multi/multi.h, with
 * its timing replaced by the seed):
 *   - every queued task sits in exactly one place: a worker's LIFO slot,
 *     a worker's local queue, or the injection queue;
 *   - a task woken or spawned by a poll running on worker W goes to W's
 *     LIFO slot; the task it displaces goes to the back of W's queue; a
 *     task that yields goes to the back of W's queue; outside any
 *     worker's poll, to the injection queue;
 *   - the next poll: a worker W drawn uniformly from the seed takes, in
 *     order, its LIFO slot (at most LIFO_MAX in a row, then the slot's
 *     task moves to the back of its queue), the injection queue's head
 *     (first with chance 1/GLOBAL_EVERY, as the multi-thread worker
 *     checks it every event_interval ticks; else only when its queue is
 *     empty), its queue's head, or half of a peer's queue (the peer drawn
 *     from the seed; a LIFO slot is never stolen: the multi-thread
 *     scheduler steals one only from a stuck worker, which a simulation
 *     has not). A worker that finds nothing passes the turn to the next
 *     worker in order, so a task anywhere is always found.
 */
#include <string.h>

#include "internal.h"
#include "rt/rt_internal.h"
#include "rt/sim_workers.h"

#define LIFO_MAX 3      /* as src/rt/multi/worker.c */
#define GLOBAL_EVERY 61 /* the default event_interval */

static void q_push(struct fut__simq *q, struct fut_task *t)
{
    t->next = NULL;
    if (q->tail)
        q->tail->next = t;
    else
        q->head = t;
    q->tail = t;
    q->len++;
}

static struct fut_task *q_pop(struct fut__simq *q)
{
    struct fut_task *t = q->head;
    if (t) {
        q->head = t->next;
        if (!q->head)
            q->tail = NULL;
        q->len--;
    }
    return t;
}

struct fut__simw *fut__simw_new(int n)
{
    size_t size = sizeof(struct fut__simw) +
                  (size_t)n * sizeof(struct fut__simw_worker);
    struct fut__simw *w = fut__alloc(size);
    if (!w)
        return NULL;
    memset(w, 0, size);
    w->n = n;
    w->cur = -1;
    return w;
}

void fut__simw_free(struct fut__simw *w)
{
    if (w)
        fut__free(w, sizeof(struct fut__simw) +
                         (size_t)w->n * sizeof(struct fut__simw_worker));
}

void fut__simw_schedule(struct fut__simw *w, struct fut_task *t)
{
    if (w->cur < 0) {
        q_push(&w->inject, t);
        return;
    }
    struct fut__simw_worker *me = &w->w[w->cur];
    if (me->lifo)
        q_push(&me->q, me->lifo);
    me->lifo = t;
}

void fut__simw_yield(struct fut__simw *w, struct fut_task *t)
{
    q_push(w->cur < 0 ? &w->inject : &w->w[w->cur].q, t);
}

/* Moves half (rounded up) of 'v''s queue to 'me''s; returns the first. */
static struct fut_task *steal_half(struct fut__simw_worker *me,
                                   struct fut__simw_worker *v)
{
    size_t k = (v->q.len + 1) / 2;
    struct fut_task *first = q_pop(&v->q);
    while (--k > 0)
        q_push(&me->q, q_pop(&v->q));
    return first;
}

/* What worker 'i' polls next, or NULL: its search (see the rules). */
static struct fut_task *search(struct fut__simw *w, int i,
                               struct fut__simrng *rng)
{
    struct fut__simw_worker *me = &w->w[i];
    if (me->lifo) {
        struct fut_task *t = me->lifo;
        me->lifo = NULL;
        if (me->lifo_run < LIFO_MAX) {
            me->lifo_run++;
            w->lifo_polls++;
            return t;
        }
        q_push(&me->q, t); /* the cap: to the back, others go first */
    }
    me->lifo_run = 0;
    if (w->inject.len && fut__simrng_below(rng, GLOBAL_EVERY) == 0)
        return q_pop(&w->inject);
    if (me->q.len)
        return q_pop(&me->q);
    if (w->inject.len)
        return q_pop(&w->inject);
    int start = (int)fut__simrng_below(rng, (uint64_t)w->n);
    for (int k = 0; k < w->n; k++) {
        struct fut__simw_worker *v = &w->w[(start + k) % w->n];
        if (v != me && v->q.len) {
            w->steals++;
            return steal_half(me, v);
        }
    }
    return NULL;
}

struct fut_task *fut__simw_next(struct fut__simw *w, struct fut__simrng *rng)
{
    int first = (int)fut__simrng_below(rng, (uint64_t)w->n);
    for (int k = 0; k < w->n; k++) {
        int i = (first + k) % w->n;
        struct fut_task *t = search(w, i, rng);
        if (t) {
            w->cur = i;
            return t;
        }
    }
    w->cur = -1;
    return NULL;
}

struct fut_task *fut__simw_take_any(struct fut__simw *w)
{
    w->cur = -1;
    for (int i = 0; i < w->n; i++) {
        struct fut__simw_worker *me = &w->w[i];
        if (me->lifo) {
            struct fut_task *t = me->lifo;
            me->lifo = NULL;
            return t;
        }
        if (me->q.len)
            return q_pop(&me->q);
    }
    return q_pop(&w->inject);
}
