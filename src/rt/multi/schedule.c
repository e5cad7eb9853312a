/* SPDX-License-Identifier: MIT */
/* fut__sched_vt.schedule: a task made RUNNING|NOTIFIED by a wake, a
 * spawn or an abort is queued - on this worker (schedule.h), on its
 * home's 'rl' when it is thread-affine, or, from a thread that is not a
 * worker, handed to a sleeping worker or queued on the injection queue. */
#include "rt/multi/destroy.h"
#include "rt/multi/schedule.h"

/* fut__mt_schedule from a thread that is not one of our workers. It
 * holds a reference on the scheduler while it is in here: once the task
 * has landed in a queue, a concurrent shutdown may drop it, and with it
 * the last reference, while we still unpark a worker (the task alone, which
 * the wake's reference was folded into, no longer pins anything). The
 * scheduler is alive on entry: the task is RUNNING and in no queue, and
 * shutdown.c's shutdown_all waits for such a task to land. */
__attribute__((noinline)) static void schedule_foreign(struct mt_sched *m,
                                                       struct fut_task *t)
{
    fut__fetch_add(&m->refs, 1, FUT__RELAXED);
    if (fut__task_is_local(t))
        rl_push(&m->w[task_home(t) - 1], t);
    else if (fut__load(&m->stop, FUT__RELAXED) || !fut__mt_handoff(m, t))
        inject_push(m, t);
    release_refs(m, 1);
}

void fut__mt_schedule(struct fut__sched *s, struct fut_task *t)
{
    struct mt_sched *m = mt_of(s);
    struct mt_worker *w = me_in(m);
    if (!w) {
        schedule_foreign(m, t);
        return;
    }
    if (fut__task_is_local(t)) {
        struct mt_worker *home = &m->w[task_home(t) - 1];
        if (w == home)
            lq_push(w, t);
        else
            rl_push(home, t);
        return;
    }
    if (w->exiting) {
        inject_push(m, t);
        return;
    }
    if (w->lifo_enabled && !w->in_driver)
        push_lifo(w, t);
    else
        push_ring(w, t, push_kind_now(w));
}
