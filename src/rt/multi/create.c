/* SPDX-License-Identifier: MIT */
/* The multi-thread scheduler's creation and start (fut_runtime_new with
 * FUT_RT_MULTI_THREAD): the vtable through which the runtime and the
 * tasks reach the rooms, the workers' initial state, the driver hook,
 * and the worker threads. */
#include <stdio.h>
#include <string.h>

#include "rt/multi/idle.h"
#include "rt/watchdog.h"

#define MT_MAX_WORKERS 256

/* fut__driver.interest: the idle driver got an fd or a timer while
 * every parker might be asleep on its futex; wake one (if nobody
 * searches: a searcher parks later and takes the driver itself). */
static void driver_interest(struct fut__driver *d, void *ud)
{
    (void)d;
    notify_parked((struct mt_sched *)ud);
}

static int mt_start(struct fut__sched *s);

static const struct fut__sched_vt mt_vt = {
    .schedule = fut__mt_schedule,
    .unlink = fut__mt_unlink,
    .free_task = fut__mt_free_task,
    .drop_here = fut__mt_drop_here,
    .start = mt_start,
    .block_on = fut__mt_block_on,
    .spawn = fut__mt_spawn,
    .shutdown = fut__mt_shutdown,
    .stats = fut__mt_stats,
    .workers = fut__mt_workers,
    .worker_stats = fut__mt_worker_stats,
    .each_task = fut__mt_each_task,
};

static int worker_init(struct mt_sched *m, struct mt_worker *w, int i)
{
    memset(w, 0, sizeof *w);
    w->m = m;
    w->index = i;
    fut__ring_init(&w->ring);
    fut__lifo_init(&w->lifo);
    fut__aword_init(&w->pstate, P_EMPTY);
    fut__aword_init(&w->sleeping, 0);
    fut__aword_init(&w->in_run, 0);
    fut__aword_init(&w->handoff, 0);
    fut__aword_init(&w->unlinks, 0);
    fut__aword_init(&w->rl, 0);
    fut__aword_init(&w->wake_ns, 0);
    for (int k = 0; k < ST__COUNT; k++)
        fut__aword_init(&w->st[k], 0);
    fut__list_init(&w->owned);
    fut__list_init(&w->owned_local);
    fut__slab_init(&w->slab);
    fut__slab_init(&w->tslab);
    w->pool.alloc = fut__mt_pool_alloc;
    w->pool.free = fut__mt_pool_free;
    fut__pool_init_cache(&w->pool);
    w->rng = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);
    w->countdown = (uint32_t)m->event_interval;
    fut__spin_init(&w->spin, m->spin_ns > 0 ? m->spin_ns : 0);
    fut__aword_init(&w->st[ST_SPIN_NS],
                    m->spin_ns >= 0 ? (uintptr_t)w->spin.bound : 0);
    w->global_due = 1;
    if (m->n > 1) {
        w->seen = fut__alloc(sizeof(struct seen) * (size_t)m->n);
        if (!w->seen)
            return FUT_ENOMEM;
        memset(w->seen, 0, sizeof(struct seen) * (size_t)m->n);
    }
    return 0;
}

static int workers_new(struct mt_sched *m)
{
    m->w_bytes = sizeof(struct mt_worker) * (size_t)m->n + 63;
    m->w_mem = fut__alloc(m->w_bytes);
    if (!m->w_mem)
        return FUT_ENOMEM;
    m->w = (struct mt_worker *)(((uintptr_t)m->w_mem + 63) & ~(uintptr_t)63);
    for (int i = 0; i < m->n; i++) {
        int r = worker_init(m, &m->w[i], i);
        if (r) {
            while (--i >= 0) {
                if (m->w[i].seen)
                    fut__free(m->w[i].seen,
                              sizeof(struct seen) * (size_t)m->n);
            }
            fut__free(m->w_mem, m->w_bytes);
            m->w = NULL;
            return r;
        }
    }
    return 0;
}

int fut__mt_new(struct fut_runtime *rt, const struct fut_rt_config *cfg,
                fut__driver_new_fn driver_new, struct fut__sched **out)
{
    int n = cfg->workers;
    if (n == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n = c < 1 ? 1 : c > MT_MAX_WORKERS ? MT_MAX_WORKERS : (int)c;
    }
    if (n > MT_MAX_WORKERS)
        return FUT_EINVAL;
    struct mt_sched *m = fut__alloc(sizeof *m);
    if (!m)
        return FUT_ENOMEM;
    memset(m, 0, sizeof *m);
    m->base.vt = &mt_vt;
    m->base.rt = rt;
    m->base.slow_poll_ns = cfg->slow_poll_ns;
    m->n = n;
    m->budget = cfg->budget;
    m->event_interval = cfg->event_interval;
    m->spin_ns = cfg->park_spin_ns;
    m->asym = fut__membarrier_init();
    fut__list_init(&m->foreign);
    fut__aword_init(&m->inject_n, 0);
    fut__aword_init(&m->closing, 0);
    fut__aword_init(&m->stop, 0);
    fut__aword_init(&m->idle, (uintptr_t)n << 16); /* all unparked */
    fut__aword_init(&m->watcher, 0);
    fut__aword_init(&m->driver_lock, 0);
    fut__aword_init(&m->mon_state, MON_RUN);
    fut__aword_init(&m->mon_wakes, 0);
    m->mon_started = 0;
    fut__aword_init(&m->srcs_out, 0);
    fut__aword_init(&m->srcs_detached, 0);
    fut__aword_init(&m->refs, BIAS + 1);
    fut__aword_init(&m->f_spawned, 0);
    fut__aword_init(&m->f_freed, 0);
    fut__aword_init(&m->f_remote, 0);
    fut__aword_init(&m->f_handoff, 0);
    int r = FUT_ENOMEM;
    fut__mutex_init(&m->inject_lock);
    fut__mutex_init(&m->sleep_lock);
    m->sleepers = fut__alloc(sizeof(int) * (size_t)n);
    if (!m->sleepers)
        goto fail_m;
    if ((r = workers_new(m)) != 0)
        goto fail_sleepers;
    struct fut_rt_config dcfg = *cfg;
    dcfg.workers = n; /* a per-worker driver's event sources: one each */
    if (!cfg->no_driver &&
        (r = driver_new(&m->base, &dcfg, &m->base.driver)) != 0)
        goto fail_workers;
    if (m->base.driver) {
        m->base.driver->interest = driver_interest;
        m->base.driver->interest_ud = m;
    }
    *out = &m->base;
    return 0;
fail_workers:
    for (int i = 0; i < n; i++) {
        if (m->w[i].seen)
            fut__free(m->w[i].seen, sizeof(struct seen) * (size_t)n);
    }
    fut__free(m->w_mem, m->w_bytes);
fail_sleepers:
    fut__free(m->sleepers, sizeof(int) * (size_t)n);
fail_m:
    fut__free(m, sizeof *m);
    return r;
}

/* fut__sched_vt.start: the worker threads. */
static int mt_start(struct fut__sched *s)
{
    struct mt_sched *m = mt_of(s);
    /* The monitor hosts the watchdog's scans: before a worker starts it. */
    if (m->base.watch && fut__mt_mon_wanted(m))
        fut__watch_host(m->base.watch);
    m->n_started = m->n; /* before any worker reads it (after a stop) */
    for (int i = 0; i < m->n; i++) {
        struct mt_worker *w = &m->w[i];
        int r = pthread_create(&w->thread, NULL, fut__mt_worker_main, w);
        if (r) {
            m->n_started = i;
            fut__mt_shutdown(s); /* joins the ones started */
            return r == ENOMEM ? FUT_ENOMEM : -r;
        }
        w->started = 1;
        char name[16];
        snprintf(name, sizeof name, "fut-worker-%u", (unsigned)i % 1000u);
        pthread_setname_np(w->thread, name);
    }
    int r = fut__mt_mon_start(m);
    if (r)
        fut__mt_shutdown(s);
    return r;
}
