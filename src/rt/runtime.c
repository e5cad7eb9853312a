/* SPDX-License-Identifier: MIT */
/* The runtime handle: configuration, the choice of scheduler and its
 * driver (the one place that names both: src/rt's schedulers sit below
 * src/io, docs/architecture.md), then every call through the scheduler's
 * vtable (struct fut__sched_vt). */
#include <stdlib.h>
#include <string.h>

#include "io/driver.h"
#include "rt/rt_internal.h"
#include "rt/sim_trace.h"
#include "rt/watchdog.h"

void fut_rt_config_init(struct fut_rt_config *cfg)
{
    FUT_ARG_VOID(cfg, "'cfg' is NULL");
    memset(cfg, 0, sizeof *cfg);
    cfg->flavor = FUT_RT_CURRENT_THREAD;
}

/* Fills in defaults; FUT_EINVAL for values that make no sense. */
static int config_resolve(const struct fut_rt_config *in,
                          struct fut_rt_config *out)
{
    if (in)
        *out = *in;
    else
        fut_rt_config_init(out);
    if (out->workers < 0 || out->budget < 0 || out->event_interval < 0 ||
        out->slow_poll_ns < -1 || out->park_spin_ns < -1)
        return FUT_EINVAL;
    if (out->flavor != FUT_RT_CURRENT_THREAD &&
        out->flavor != FUT_RT_MULTI_THREAD)
        return FUT_EINVAL;
    if (out->budget == 0)
        out->budget = 128; /* Tokio's coop budget */
    if (out->event_interval == 0)
        out->event_interval = 61; /* Tokio's; a prime, so it does not beat
                                     with periodic workloads */
    if (out->slow_poll_ns == 0)
        out->slow_poll_ns = 10 * 1000 * 1000;
    /* park_spin_ns 0 stays 0: the adaptive bound (rt/park_spin.h). */
    return 0;
}

/* The long-poll watchdog's threshold (rt.h, slow_poll_ns): FUT_WATCHDOG_MS
 * = N > 0 in any build, 0 = none; else debug builds use slow_poll_ns and
 * release builds have none. -1: no watchdog. */
static int64_t watch_threshold(const struct fut_rt_config *c)
{
    const char *e = getenv("FUT_WATCHDOG_MS");
    if (e && *e) {
        char *end;
        long long ms = strtoll(e, &end, 10);
        if (*end == 0 && ms >= 0 && ms <= INT64_MAX / 1000000)
            return ms > 0 ? ms * 1000000 : -1;
        /* not a number: as if unset */
    }
#ifdef FUT_DEBUG
    return c->slow_poll_ns;
#else
    (void)c;
    return -1;
#endif
}

/* Gives the new scheduler its watchdog when one is asked for: 0 or
 * FUT_ENOMEM. */
static int watch_attach(struct fut__sched *s, const struct fut_rt_config *c)
{
    int64_t ns = watch_threshold(c);
    if (ns < 0)
        return 0;
    return fut__watch_new(s->vt->workers(s), ns,
                          c->flavor == FUT_RT_MULTI_THREAD, &s->watch);
}

/* The simulation's clock: the driver's virtual time. */
static int64_t sim_clock(void *driver)
{
    return fut__driver_vnow(driver);
}

/* fut_runtime_new, and fut_sim_new with 'sim' (which it owns from here:
 * freed on failure, by the scheduler otherwise). */
static int runtime_make(const struct fut_rt_config *cfg, struct fut__sim *sim,
                        struct fut_runtime **out)
{
    struct fut_rt_config c;
    int r = config_resolve(cfg, &c);
    if (!r && sim && (c.flavor != FUT_RT_CURRENT_THREAD || c.no_driver))
        r = FUT_EINVAL; /* one thread, and a clock (fut/sim.h) */
    struct fut_runtime *rt = r ? NULL : fut__alloc(sizeof *rt);
    if (!r && !rt)
        r = FUT_ENOMEM;
    if (r) {
        fut__sim_free(sim);
        return r;
    }
    rt->freed = 0;
    r = c.flavor == FUT_RT_MULTI_THREAD
            ? fut__mt_new(rt, &c, fut__driver_new, &rt->sched)
            : fut__ct_new(rt, &c, sim ? fut__driver_new_sim : fut__driver_new,
                          &rt->sched);
    if (r) {
        fut__sim_free(sim);
        fut__free(rt, sizeof *rt);
        return r;
    }
    if (sim) { /* before any spawn; the scheduler frees it */
        sim->now = sim_clock;
        sim->now_ud = rt->sched->driver;
        rt->sched->sim = sim;
    }
    if ((r = watch_attach(rt->sched, &c))) {
        rt->sched->vt->shutdown(rt->sched); /* 'rt' goes with it */
        return r;
    }
    /* The threads start last: whatever is attached to the scheduler
     * before this is seen by them. On failure 'rt' is gone. */
    struct fut__watch *wd = rt->sched->watch;
    if (rt->sched->vt->start && (r = rt->sched->vt->start(rt->sched))) {
        if (wd) { /* a worker may have started it */
            fut__watch_stop(wd);
            fut__watch_free(wd);
        }
        return r;
    }
    rt->gen = FUT_HANDLE_NEW(rt);
    FUT_RT_ADD(rt);
    *out = rt;
    return 0;
}

int fut_runtime_new(const struct fut_rt_config *cfg, struct fut_runtime **out)
{
    FUT_ARG_CHECK(out, "'out' is NULL");
    *out = NULL;
    return runtime_make(cfg, NULL, out);
}

int fut__sim_runtime_new(const struct fut_rt_config *cfg, uint64_t seed,
                         struct fut_runtime **out)
{
    struct fut__sim *sim = fut__sim_new(seed);
    if (!sim)
        return FUT_ENOMEM;
    return runtime_make(cfg, sim, out);
}

#if defined(FUT_DEBUG) && !defined(FUT_MODEL_CHECK)
/* FUT_RT_CHECK / FUT_RT_LIVE (internal.h): the registry before 'rt' is
 * read (its memory may be gone), then its 'freed' flag. */
void fut__rt_check(const struct fut_runtime *rt, int freed_ok, const char *fn,
                   const void *caller)
{
    if (!fut__rt_reg_live(rt))
        fut__misuse(fn,
                    "not a live runtime (freed, or never made by "
                    "fut_runtime_new)",
                    caller);
    if (!freed_ok && rt->freed)
        fut__misuse(fn, "the runtime was freed already (fut_runtime_free)",
                    caller);
}
#endif

void fut_runtime_free(struct fut_runtime *rt)
{
    if (!rt)
        return;       /* like free(NULL) */
    FUT_RT_CHECK(rt); /* before reading 'rt': it may be gone */
    if (rt->freed) {
        FUT_MISUSE("the runtime was freed already");
        return;
    }
    if (fut__tls_sched == rt->sched) /* it would wait for itself */
        fut__misuse(__func__,
                    "called from inside fut_block_on or a task "
                    "of the same runtime",
                    FUT__CALLER);
    rt->freed = 1;
    FUT_HANDLE_END(rt, rt->gen, __func__);
    /* The watchdog stops first (no report during the shutdown's drops)
     * and is freed last, once no worker polls with its slots. Both
     * flavors free 'rt' with the scheduler's memory. */
    struct fut__watch *wd = rt->sched->watch;
    if (wd)
        fut__watch_stop(wd);
    rt->sched->vt->shutdown(rt->sched);
    if (wd)
        fut__watch_free(wd);
}

struct fut_runtime *fut_runtime_current(void)
{
    return fut__tls_sched ? fut__tls_sched->rt : NULL;
}

int fut_spawn_at(struct fut_runtime *rt, const struct fut_future *f,
                 size_t size, struct fut_join *join, const char *file,
                 int line)
{
    if (rt)
        FUT_RT_CHECK(rt); /* freed with a join handle alive: ESHUTDOWN */
    else
        rt = fut_runtime_current();
    if (!rt || !f || size < sizeof(struct fut_future)) {
        if (join)
            fut__join_init(join, NULL);
        return FUT_EINVAL;
    }
    return rt->sched->vt->spawn(rt->sched, f, size, join, 0, file, line);
}

int fut_spawn_local_at(const struct fut_future *f, size_t size,
                       struct fut_join *join, const char *file, int line)
{
    struct fut_runtime *rt = fut_runtime_current();
    if (!rt || !f || size < sizeof(struct fut_future)) {
        if (join)
            fut__join_init(join, NULL);
        return FUT_EINVAL;
    }
    return rt->sched->vt->spawn(rt->sched, f, size, join, 1, file, line);
}

const char *fut_runtime_backend(struct fut_runtime *rt)
{
    FUT_ARG_OR(rt, "'rt' is NULL", "none");
    FUT_RT_LIVE(rt);
    struct fut__driver *d = rt->sched->driver;
    return d && d->backend ? d->backend : "none";
}

void fut_runtime_stats(struct fut_runtime *rt, struct fut_rt_stats *out)
{
    FUT_ARG_VOID(rt, "'rt' is NULL");
    FUT_RT_LIVE(rt);
    FUT_ARG_VOID(out, "'out' is NULL");
    memset(out, 0, sizeof *out);
    rt->sched->vt->stats(rt->sched, out);
}

int fut_runtime_workers(struct fut_runtime *rt)
{
    FUT_ARG_CHECK(rt, "'rt' is NULL");
    FUT_RT_LIVE(rt);
    return rt->sched->vt->workers(rt->sched);
}

int fut_runtime_worker_stats(struct fut_runtime *rt, int worker,
                             struct fut_rt_stats *out)
{
    FUT_ARG_CHECK(rt, "'rt' is NULL");
    FUT_RT_LIVE(rt);
    FUT_ARG_CHECK(out, "'out' is NULL");
    memset(out, 0, sizeof *out);
    return rt->sched->vt->worker_stats(rt->sched, worker, out);
}

int fut_block_on(struct fut_runtime *rt, struct fut_future *f)
{
    FUT_ARG_CHECK(f, "'f' is NULL");
    if (!rt)
        return fut__block_on_thread(f);
    FUT_RT_CHECK(rt); /* freed with a join handle alive: ESHUTDOWN (ct) */
    return rt->sched->vt->block_on(rt->sched, f);
}
