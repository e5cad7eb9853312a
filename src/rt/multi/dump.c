/* SPDX-License-Identifier: MIT */
/* fut__sched_vt.each_task for src/scope/dump.c's fut_runtime_dump: the
 * walk of every worker's task lists, each on its own worker. */
#include <time.h>

#include "rt/multi/schedule.h"

/* ------------------------------------------------------------ task dump */

/* Task dumps (rt_internal.h, src/scope/dump.c). A worker's task lists
 * are its own, so each other worker is sent a probe: a bare thread-affine
 * task with home 0 (on no live list - its links point to itself, so
 * unlink is a no-op under inject_lock - never woken, freed by whoever
 * completes it; allocated like a spawn, so the lifetime counts balance)
 * pushed on the worker's 'rl' queue. The probes meet at a barrier ('phase'):
 *   0 gather    probes count themselves in 'arrived' and wait;
 *   1 deep      every probe arrived: no worker polls a task until phase
 *               3, so the await trees hold still (but for an abort of an
 *               idle task from a non-worker thread, which drops it in
 *               place: the one race left, documented in docs/scopes.md);
 *   2 shallow   some worker did not arrive within DUMP_WAIT_NS (a long
 *               poll): names only, that worker's tasks unlisted;
 *   3 release   the requester is done; probes return.
 * Each probe lists its own worker's lists; the requester lists its own
 * (when it is a worker) and the foreign list (under inject_lock). Every
 * fn call is made under 'lock' and only while '!closed': a probe that
 * comes late finds the request closed and calls nothing (the request is
 * freed by the last of its references). One dump at a time. */
#define DUMP_WAIT_NS (100LL * 1000 * 1000)

struct dump_req {
    fut__aword refs;    /* the requester and each probe */
    fut__aword arrived; /* probes at the barrier */
    fut__aword walked;  /* probes done listing */
    fut__aword phase;   /* see above */
    fut__mutex lock;    /* serialises fn; guards 'closed' */
    int closed;
    fut__each_task_fn fn;
    void *ud;
};

struct dump_probe {
    struct fut_future base;
    struct dump_req *req;
};

static fut__aword dump_busy; /* one dump at a time (any runtime) */

static void dump_req_unref(struct dump_req *r)
{
    /* Acq_rel: the last one sees every other's use of the request. */
    if (fut__fetch_sub(&r->refs, 1, FUT__ACQ_REL) == 1) {
        fut__mutex_destroy(&r->lock);
        fut__free(r, sizeof *r);
    }
}

static void dump_list(struct dump_req *r, struct fut__list *head, int deep)
{
    fut__mutex_lock(&r->lock);
    if (!r->closed)
        for (struct fut__list *n = head->next; n != head; n = n->next)
            r->fn(r->ud, fut__task_of_owned(n), deep);
    fut__mutex_unlock(&r->lock);
}

static void dump_wait(void)
{
    struct timespec ts = {0, 20 * 1000};
    nanosleep(&ts, NULL);
}

static int probe_poll(struct fut_future *f, struct fut_context *cx)
{
    struct dump_req *r = ((struct dump_probe *)f)->req;
    struct mt_worker *w = fut__mt_tls_w;
    (void)cx;
    /* Acq_rel: pairs with the requester's acquire load of 'arrived'. */
    fut__fetch_add(&r->arrived, 1, FUT__ACQ_REL);
    uintptr_t ph;
    /* Acquire: pairs with the requester's release store of 'phase'. */
    while ((ph = fut__load(&r->phase, FUT__ACQUIRE)) == 0)
        dump_wait();
    if (ph == 3)
        return FUT_READY;
    dump_list(r, &w->owned, ph == 1);
    dump_list(r, &w->owned_local, ph == 1);
    fut__fetch_add(&r->walked, 1, FUT__RELEASE); /* pairs: requester */
    while (fut__load(&r->phase, FUT__ACQUIRE) != 3)
        dump_wait();
    return FUT_READY;
}

static void probe_drop(struct fut_future *f)
{
    dump_req_unref(((struct dump_probe *)f)->req);
}

static const struct fut_future_vtable probe_vt = {probe_poll, probe_drop,
                                                  "task_dump_probe", NULL};

/* Queues a probe on worker 'to'; 0 when it could not be made. */
static int probe_send(struct mt_sched *m, struct mt_worker *me,
                      struct mt_worker *to, struct dump_req *r)
{
    size_t bytes = FUT__TASK_HDR + sizeof(struct dump_probe);
    struct fut_task *t = fut__alloc(bytes);
    if (!t)
        return 0;
    struct dump_probe *p = (struct dump_probe *)(void *)fut__task_future(t);
    fut_future_init(&p->base, &probe_vt);
    p->req = r;
    fut__fetch_add(&r->refs, 1, FUT__RELAXED); /* we hold one */
    fut__task_init(t, &m->base, 0, __FILE__, __LINE__);
    t->size_class = DIRECT | (uint32_t)bytes;
    t->flags = TASK_F_LOCAL; /* home 0: see above */
    if (me)
        stat_inc(me, ST_SPAWNED); /* counted like a spawn */
    else
        fut__fetch_add(&m->refs, 1, FUT__RELAXED);
    rl_push(to, t);
    return 1;
}

int fut__mt_each_task(struct fut__sched *s, fut__each_task_fn fn, void *ud)
{
    struct mt_sched *m = mt_of(s);
    struct mt_worker *me = me_in(m);
    if (fut__tls_sched != s)
        return FUT_EINVAL; /* not a worker or block_on of this runtime */
    uintptr_t z = 0;
    if (!fut__cas(&dump_busy, &z, 1, FUT__ACQUIRE, FUT__RELAXED))
        return FUT_EBUSY;
    struct dump_req *r = fut__alloc(sizeof *r);
    if (!r) {
        fut__store(&dump_busy, 0, FUT__RELEASE);
        return FUT_ENOMEM;
    }
    fut__aword_init(&r->refs, 1);
    fut__aword_init(&r->arrived, 0);
    fut__aword_init(&r->walked, 0);
    fut__aword_init(&r->phase, 0);
    fut__mutex_init(&r->lock);
    r->closed = 0;
    r->fn = fn;
    r->ud = ud;
    uintptr_t sent = 0;
    int missing = 0;
    for (int i = 0; i < m->n; i++)
        if (&m->w[i] != me) {
            if (probe_send(m, me, &m->w[i], r))
                sent++;
            else
                missing = 1;
        }
    int64_t end = fut_now_ns() + DUMP_WAIT_NS;
    uintptr_t a;
    while ((a = fut__load(&r->arrived, FUT__ACQUIRE)) < sent &&
           fut_now_ns() < end)
        dump_wait();
    int deep = a == sent && !missing;
    /* Release: pairs with the probes' acquire loads of 'phase'. */
    fut__store(&r->phase, deep ? 1 : 2, FUT__RELEASE);
    if (me) {
        dump_list(r, &me->owned, deep);
        dump_list(r, &me->owned_local, deep);
    }
    fut__mutex_lock(&m->inject_lock);
    dump_list(r, &m->foreign, deep);
    fut__mutex_unlock(&m->inject_lock);
    /* Acquire: pairs with the probes' release increments. */
    while (fut__load(&r->walked, FUT__ACQUIRE) < a)
        dump_wait();
    fut__mutex_lock(&r->lock);
    r->closed = 1; /* late probes call nothing */
    fut__mutex_unlock(&r->lock);
    fut__store(&r->phase, 3, FUT__RELEASE);
    dump_req_unref(r);
    fut__store(&dump_busy, 0, FUT__RELEASE);
    return deep ? 0 : FUT_ETIMEDOUT;
}
