/* SPDX-License-Identifier: MIT */
/* Shutdown (multi.h's ownership and lifetime rules): the runtime closes
 * to spawns, each worker drops its thread-affine tasks and exits
 * (fut__mt_worker_exit), the workers are joined, and the shutdown thread,
 * owner of everything the workers owned, drops every queued and idle
 * task, waiting for those other threads are handing over; then the
 * handle's reference goes (destroy.h). */
#include <time.h>

#include "rt/multi/destroy.h"
#include "rt/multi/schedule.h"

/* The shutdown loop's pause while other threads finish handing tasks
 * over (an abort dropping in place, a wake queueing). */
#define SHUTDOWN_PAUSE_NS (50 * 1000)

/* Drops the idle tasks of a list this thread owns; tasks owned elsewhere
 * for now (running, queued, being handed over) stay. Returns 1 when some
 * stayed. */
static int take_over(struct fut__list *head)
{
    struct fut__list tried;
    fut__list_init(&tried);
    while (!fut__list_empty(head)) {
        struct fut_task *t = list_first(head);
        list_del(t);
        fut__list_push_back(&tried, &t->owned);
        /* Completing unlinks it from 'tried'. */
        fut__task_shutdown_idle(t);
    }
    int left = !fut__list_empty(&tried);
    fut__list_splice(head, &tried);
    return left;
}

/* Shutdown, on the worker: drop every thread-affine task here. */
void fut__mt_worker_exit(struct mt_worker *w)
{
    w->exiting = 1;
    fut__mt_release_watch(w);
    for (;;) {
        fut__mt_drain_unlinks(w);
        rl_drain(w);
        struct fut_task *t;
        while ((t = lq_pop(w)))
            fut__task_cancel(t);
        if (!take_over(&w->owned_local) && !w->lq_head &&
            !fut__load(&w->rl, FUT__RELAXED))
            break;
        /* A thread is handing one of them over ('rl' unparks us). */
        fut__mt_park(w, 1000 * 1000, 0);
    }
}

/* Per-worker driver: once every started worker is past its
 * fut__mt_worker_exit (no task of ours is polled or dropped on a worker
 * any more), detach from our event source (the driver's worker_exit);
 * meanwhile keep parking on it without the driver (other workers' drops
 * may hand it work: requests to cancel and close their I/O). */
void fut__mt_source_exit(struct mt_worker *w)
{
    struct mt_sched *m = w->m;
    struct fut__driver *d = m->base.driver;
    /* Acq_rel: our drops before the others' detach, theirs before ours. */
    fut__fetch_add(&m->srcs_out, 1, FUT__ACQ_REL);
    while ((int)fut__load(&m->srcs_out, FUT__ACQUIRE) < m->n_started)
        d->vt->park(d, w->index, 1000 * 1000, 0);
    /* One at a time, in index order (they walk the same fd lists);
     * acquire/release: the previous detach before ours. */
    while ((int)fut__load(&m->srcs_detached, FUT__ACQUIRE) != w->index)
        d->vt->park(d, w->index, 1000 * 1000, 0);
    d->vt->worker_exit(d, w->index);
    fut__fetch_add(&m->srcs_detached, 1, FUT__RELEASE);
}

/* Takes every queued task of worker 'w' (now ours) and drops it. */
static void cancel_queued(struct mt_worker *w)
{
    struct fut_task *t;
    rl_drain(w);
    while ((t = lq_pop(w)))
        fut__task_cancel(t);
    if ((t = (struct fut_task *)fut__swap(&w->handoff, 0, FUT__ACQUIRE)))
        fut__task_cancel(t);
    if ((t = (struct fut_task *)fut__swap(&w->lifo.task, 0, FUT__ACQUIRE)))
        fut__task_cancel(t);
    while ((t = fut__ring_pop(&w->ring)))
        fut__task_cancel(t);
}

static void cancel_inject(struct mt_sched *m)
{
    unsigned got;
    struct fut_task *t = inject_take(m, ~0u, &got);
    while (t) {
        struct fut_task *next = t->next;
        fut__task_cancel(t);
        t = next;
    }
}

/* take_over for the foreign list: under the lock, one task at a time,
 * with a reference (its completion elsewhere may free it otherwise). */
static int take_over_foreign(struct mt_sched *m)
{
    struct fut__list tried;
    fut__list_init(&tried);
    fut__mutex_lock(&m->inject_lock);
    while (!fut__list_empty(&m->foreign)) {
        struct fut_task *t = list_first(&m->foreign);
        list_del(t);
        fut__list_push_back(&tried, &t->owned);
        fut__task_ref_inc(t);
        fut__mutex_unlock(&m->inject_lock);
        fut__task_shutdown_idle(t);
        fut__task_ref_dec(t);
        fut__mutex_lock(&m->inject_lock);
    }
    int left = !fut__list_empty(&tried);
    fut__list_splice(&m->foreign, &tried);
    fut__mutex_unlock(&m->inject_lock);
    return left;
}

/* After the workers are joined: drop every task, waiting for the ones
 * other threads are handing over. */
static void shutdown_all(struct mt_sched *m)
{
    /* The drops run "in" the runtime: fut_runtime_current() is it, so a
     * spawn from a drop is refused (FUT_ESHUTDOWN) rather than lost. */
    struct fut__sched *saved = fut__tls_sched;
    fut__tls_sched = &m->base;
    fut__mt_tls_owner = m;
    for (;;) {
        int left = 0;
        for (int i = 0; i < m->n; i++) {
            fut__mt_drain_unlinks(&m->w[i]);
            cancel_queued(&m->w[i]);
        }
        cancel_inject(m);
        for (int i = 0; i < m->n; i++) {
            FUT_ASSERT(fut__list_empty(&m->w[i].owned_local));
            left |= take_over(&m->w[i].owned);
            left |= take_over(&m->w[i].owned_local);
        }
        left |= take_over_foreign(m);
        for (int i = 0; i < m->n; i++)
            left |= fut__load(&m->w[i].unlinks, FUT__RELAXED) != 0;
        left |= fut__load(&m->inject_n, FUT__RELAXED) != 0;
        if (!left)
            break;
        struct timespec ts = {0, SHUTDOWN_PAUSE_NS};
        nanosleep(&ts, NULL);
    }
    fut__mt_tls_owner = NULL;
    fut__tls_sched = saved;
}

void fut__mt_shutdown(struct fut__sched *s)
{
    struct mt_sched *m = mt_of(s);
    FUT_CHECK(fut__tls_sched != s); /* not from a worker or a block_on */
    fut__mt_mon_stop(m);            /* before the workers and the driver go */
    fut__mutex_lock(&m->inject_lock);
    m->closed = 1;
    fut__mutex_unlock(&m->inject_lock);
    fut__store(&m->closing, 1, FUT__RELEASE);
    fut__store(&m->stop, 1, FUT__RELEASE); /* pairs: the workers' loads */
    for (int i = 0; i < m->n; i++)
        if (m->w[i].started)
            unpark_worker(&m->w[i]);
    for (int i = 0; i < m->n; i++)
        if (m->w[i].started)
            pthread_join(m->w[i].thread, NULL);
    shutdown_all(m);
    if (m->base.driver) /* freed in fut__mt_destroy (see fut__driver_vt) */
        m->base.driver->vt->shutdown(m->base.driver);
    /* Fold the workers' counts in (see the lifetime rules), drop the
     * handle's reference. */
    uintptr_t net = 0;
    for (int i = 0; i < m->n; i++)
        net += fut__load(&m->w[i].st[ST_SPAWNED], FUT__RELAXED) -
               fut__load(&m->w[i].st[ST_FREED], FUT__RELAXED) +
               fut__load(&m->w[i].st[ST_BLOCKS], FUT__RELAXED) -
               fut__load(&m->w[i].st[ST_BLOCKS_FREED], FUT__RELAXED);
    release_refs(m, BIAS + 1 - net);
}
