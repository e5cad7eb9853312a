/* SPDX-License-Identifier: MIT */
/* Statistics (fut_runtime_stats, fut_runtime_worker_stats): each worker's
 * counters (multi.h's ST_*, written by the worker alone) and those of
 * the threads that are not workers, read without stopping anyone. */
#include <string.h>

#include "rt/multi/multi.h"

static void worker_stats(struct mt_worker *w, struct fut_rt_stats *o)
{
    o->spawned = fut__load(&w->st[ST_SPAWNED], FUT__RELAXED);
    o->alive = fut__load(&w->st[ST_ALIVE], FUT__RELAXED);
    /* Acquire: pairs with run_one's release after each poll. */
    (void)fut__load(&w->st[ST_POLLS_DONE], FUT__ACQUIRE);
    o->polls = fut__load(&w->st[ST_POLLS], FUT__RELAXED);
    o->remote_wakes = fut__load(&w->st[ST_REMOTE], FUT__RELAXED);
    o->parks = fut__load(&w->st[ST_PARKS], FUT__RELAXED);
    o->budget_yields = fut__load(&w->st[ST_BUDGET], FUT__RELAXED);
    o->unparks = fut__load(&w->st[ST_UNPARKS], FUT__RELAXED);
    o->steals = fut__load(&w->st[ST_STEALS], FUT__RELAXED);
    o->stolen = fut__load(&w->st[ST_STOLEN], FUT__RELAXED);
    o->lifo_hits = fut__load(&w->st[ST_LIFO], FUT__RELAXED);
    o->global_polls = fut__load(&w->st[ST_GLOBAL], FUT__RELAXED);
    o->park_spins = fut__load(&w->st[ST_SPINS], FUT__RELAXED);
    o->park_spin_hits = fut__load(&w->st[ST_SPIN_HITS], FUT__RELAXED);
    o->park_spin_bound_ns = fut__load(&w->st[ST_SPIN_NS], FUT__RELAXED);
    o->workers = 1;
}

int fut__mt_workers(struct fut__sched *s)
{
    return mt_of(s)->n;
}

int fut__mt_worker_stats(struct fut__sched *s, int worker,
                         struct fut_rt_stats *out)
{
    struct mt_sched *m = mt_of(s);
    if (worker < 0 || worker >= m->n)
        return FUT_EINVAL;
    worker_stats(&m->w[worker], out);
    return 0;
}

void fut__mt_stats(struct fut__sched *s, struct fut_rt_stats *out)
{
    struct mt_sched *m = mt_of(s);
    uint64_t freed = fut__load(&m->f_freed, FUT__RELAXED);
    memset(out, 0, sizeof *out);
    for (int i = 0; i < m->n; i++) {
        struct fut_rt_stats o;
        worker_stats(&m->w[i], &o);
        out->spawned += o.spawned;
        out->polls += o.polls;
        out->remote_wakes += o.remote_wakes;
        out->parks += o.parks;
        out->budget_yields += o.budget_yields;
        out->unparks += o.unparks;
        out->steals += o.steals;
        out->stolen += o.stolen;
        out->lifo_hits += o.lifo_hits;
        out->global_polls += o.global_polls;
        out->park_spins += o.park_spins;
        out->park_spin_hits += o.park_spin_hits;
        if (o.park_spin_bound_ns > out->park_spin_bound_ns)
            out->park_spin_bound_ns = o.park_spin_bound_ns;
        freed += fut__load(&m->w[i].st[ST_FREED], FUT__RELAXED);
    }
    out->spawned += fut__load(&m->f_spawned, FUT__RELAXED);
    out->remote_wakes += fut__load(&m->f_remote, FUT__RELAXED) +
                         fut__load(&m->f_handoff, FUT__RELAXED);
    /* Counters read one after the other: clamp a stale difference. */
    out->alive = out->spawned > freed ? out->spawned - freed : 0;
    out->workers = (uint32_t)m->n;
}
