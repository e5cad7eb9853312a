/* SPDX-License-Identifier: MIT */
/* A task's life on the scheduler's lists and memory (multi.h's ownership
 * and lifetime rules): spawn from a worker (its slab, its 'owned' list)
 * or from another thread (the hook, 'foreign'), block_on from outside,
 * the unlink of a completed task (at home, or through the home's
 * 'unlinks' stack), the free of its memory, an abort's drop in place, and
 * the block pool each worker lends its thread (fut__tls_pool). */
#include <string.h>

#include "rt/multi/destroy.h"
#include "rt/multi/schedule.h"
#include "rt/multi/tslab.h"

static struct fut_task *task_alloc_worker(struct mt_worker *w, size_t bytes)
{
    /* Tasks of ours that finished on other workers wait on 'unlinks'
     * until we tick 'event_interval' times or park; a task that spawns in
     * a loop (a scope of 100,000 children) may do neither for long. Free
     * them before the slab carves new memory, or every round of such a
     * loop takes fresh chunks (scope_join mt2: 25 MB a round). */
    size_t lines = (bytes + TS_LINE - 1) / TS_LINE;
    if (lines <= TS_CLASSES && !w->tslab.free[lines] &&
        fut__load(&w->unlinks, FUT__RELAXED))
        fut__mt_drain_unlinks(w);
    uint32_t cls = 0;
    struct fut_task *t = ts_alloc(&w->tslab, bytes, &cls);
    if (!t)
        return NULL;
    t->size_class = cls ? cls | ((uint32_t)w->index + 1) << SLAB_HOME_SHIFT
                        : DIRECT | (uint32_t)bytes;
    return t;
}

static int spawn_worker(struct mt_worker *w, const struct fut_future *f,
                        size_t size, struct fut_join *join, int local,
                        const char *file, int line)
{
    struct mt_sched *m = w->m;
    if (w->exiting || fut__load(&m->closing, FUT__RELAXED))
        return FUT_ESHUTDOWN;
    struct fut_task *t = task_alloc_worker(w, FUT__TASK_HDR + size);
    if (!t)
        return FUT_ENOMEM;
    memcpy(fut__task_future(t), f, size);
    fut__task_init(t, &m->base, join != NULL, file, line);
    t->flags = (uint16_t)((local ? TASK_F_LOCAL : 0) |
                          ((unsigned)w->index + 1) << HOME_SHIFT);
    list_add(local ? &w->owned_local : &w->owned, t);
    w->n_alive++;
    fut__store(&w->st[ST_ALIVE], w->n_alive, FUT__RELAXED);
    stat_inc(w, ST_SPAWNED);
    if (join)
        fut__join_init(join, t);
    if (local)
        lq_push(w, t);
    else if (w->lifo_enabled)
        push_lifo(w, t);
    else
        push_ring(w, t, push_kind_now(w));
    return 0;
}

static int spawn_foreign(struct mt_sched *m, const struct fut_future *f,
                         size_t size, struct fut_join *join, const char *file,
                         int line)
{
    size_t bytes = FUT__TASK_HDR + size;
    struct fut_task *t = fut__alloc(bytes);
    if (!t)
        return FUT_ENOMEM;
    memcpy(fut__task_future(t), f, size);
    fut__task_init(t, &m->base, join != NULL, file, line);
    t->size_class = DIRECT | (uint32_t)bytes;
    t->flags = 0; /* home: the foreign list */
    /* Before anyone can free it (see the lifetime rules): one for the
     * task, one for us until notify_parked is done - a worker may run
     * and free the task, and a concurrent shutdown finish, before it. */
    fut__fetch_add(&m->refs, 2, FUT__RELAXED);
    fut__mutex_lock(&m->inject_lock);
    if (m->closed) {
        fut__mutex_unlock(&m->inject_lock);
        fut__free(t, bytes);
        release_refs(m, 2);
        return FUT_ESHUTDOWN;
    }
    /* The handle before the task is published: a worker may poll it at
     * once, and the task may read its own handle (fut_join_abort). */
    if (join)
        fut__join_init(join, t);
    list_add(&m->foreign, t);
    fifo_push(&m->ihead, &m->itail, t);
    fut__store(&m->inject_n, fut__load(&m->inject_n, FUT__RELAXED) + 1,
               FUT__RELAXED);
    fut__store(&m->f_remote, fut__load(&m->f_remote, FUT__RELAXED) + 1,
               FUT__RELAXED);
    fut__store(&m->f_spawned, fut__load(&m->f_spawned, FUT__RELAXED) + 1,
               FUT__RELAXED);
    fut__mutex_unlock(&m->inject_lock);
    notify_parked(m);
    release_refs(m, 1);
    return 0;
}

int fut__mt_spawn(struct fut__sched *s, const struct fut_future *f,
                  size_t size, struct fut_join *join, int local,
                  const char *file, int line)
{
    struct mt_sched *m = mt_of(s);
    struct mt_worker *w = me_in(m);
    if (join)
        fut__join_init(join, NULL);
    if (local && !w)
        return FUT_EINVAL; /* thread-affine tasks live on a worker */
    if (FUT__TASK_HDR + size >= DIRECT)
        return FUT_EINVAL;
    if (w)
        return spawn_worker(w, f, size, join, local, file, line);
    return spawn_foreign(m, f, size, join, file, line);
}

int fut__mt_block_on(struct fut__sched *s, struct fut_future *f)
{
    struct mt_sched *m = mt_of(s);
    if (fut__tls_sched == s)
        return FUT_EBUSY;                      /* on a worker, or nested */
    fut__fetch_add(&m->refs, 1, FUT__RELAXED); /* the handle holds one */
    struct fut__sched *saved = fut__tls_sched;
    fut__tls_sched = s; /* spawns from 'f' go to this runtime */
    int r = fut__block_on_thread(f);
    fut__tls_sched = saved;
    release_refs(m, 1);
    return r;
}

static void alive_dec(struct mt_worker *h)
{
    h->n_alive--;
    fut__store(&h->st[ST_ALIVE], h->n_alive, FUT__RELAXED);
}

void fut__mt_unlink(struct fut__sched *s, struct fut_task *t)
{
    struct mt_sched *m = mt_of(s);
    unsigned home = task_home(t);
    if (home == 0) {
        fut__mutex_lock(&m->inject_lock);
        list_del(t);
        fut__mutex_unlock(&m->inject_lock);
        return;
    }
    struct mt_worker *h = &m->w[home - 1];
    if (fut__mt_tls_w == h || fut__mt_tls_owner == m) {
        list_del(t);
        alive_dec(h);
        return;
    }
    /* Completed away from home: the home unlinks it; our reference keeps
     * the task alive until then. 'next' is free: no queue holds a
     * completed task. */
    fut__task_ref_inc(t);
    /* Seq_cst: against the home's "sleeping = 1; fence; look at
     * 'unlinks'" - a sleeping home is woken to free the tasks, one wake
     * per batch (the push onto an empty stack). */
    uintptr_t head = stack_push(&h->unlinks, t, FUT__SEQ_CST);
    if (head == 0 && fut__load(&h->sleeping, FUT__SEQ_CST))
        unpark_worker(h);
}

/* Owner (or the shutdown thread): unlinks the tasks completed elsewhere. */
void fut__mt_drain_unlinks(struct mt_worker *h)
{
    struct fut_task *t = stack_take(&h->unlinks);
    while (t) {
        struct fut_task *next = t->next;
        list_del(t);
        alive_dec(h);
        fut__task_ref_dec(t); /* may free it */
        t = next;
    }
}

void fut__mt_free_task(struct fut__sched *s, struct fut_task *t)
{
    struct mt_sched *m = mt_of(s);
    struct mt_worker *w = me_in(m);
    uint32_t cls = t->size_class;
    if (cls & DIRECT) {
        fut__free(t, cls & ~DIRECT);
    } else {
        struct mt_worker *h = &m->w[(cls >> SLAB_HOME_SHIFT) - 1];
        uint32_t c = cls & ((1u << SLAB_HOME_SHIFT) - 1);
        if (h == w)
            ts_free_local(&h->tslab, t, c);
        else
            ts_free_remote(&h->tslab, t, c);
    }
    if (w) {
        stat_inc(w, ST_FREED);
    } else {
        fut__fetch_add(&m->f_freed, 1, FUT__RELAXED);
        release_refs(m, 1);
    }
}

/* The block pool of worker 'h': its slab, on its own thread (alloc);
 * freed from anywhere. Blocks pin the scheduler like tasks do. */
void *fut__mt_pool_alloc(struct fut__blockpool *p, size_t size, uint32_t *cls)
{
    struct mt_worker *h = fut__container_of(p, struct mt_worker, pool);
    void *b = fut__slab_alloc(&h->slab, size, cls);
    if (b)
        stat_inc(h, ST_BLOCKS);
    return b;
}

void fut__mt_pool_free(struct fut__blockpool *p, void *b, uint32_t cls,
                       size_t size)
{
    struct mt_worker *h = fut__container_of(p, struct mt_worker, pool);
    struct mt_sched *m = h->m;
    struct mt_worker *w = me_in(m);
    if (cls == 0)
        fut__free(b, size);
    else if (w == h)
        fut__slab_free_local(&h->slab, b, cls, size);
    else
        fut__slab_free_remote(&h->slab, b, cls, size);
    if (w)
        stat_inc(w, ST_BLOCKS_FREED);
    else
        release_refs(m, 1);
}

/* An abort that found 't' idle drops it on the spot - on any thread: our
 * futures may move between threads - unless it is thread-affine and this
 * is not its worker (then its worker drops it at its next tick). */
int fut__mt_drop_here(struct fut__sched *s, struct fut_task *t)
{
    if (!fut__task_is_local(t))
        return 1;
    struct mt_worker *w = me_in(mt_of(s));
    return w && task_home(t) == (unsigned)w->index + 1;
}
