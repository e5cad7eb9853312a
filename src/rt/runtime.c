/* The runtime handle: configuration, the choice of scheduler, block_on
 * without a runtime (a thread-parking waker), spawn and statistics. */
#include <string.h>

#include "rt/rt_internal.h"

/* Lifetime: fut_runtime_free shuts the scheduler down; the handle's
 * memory goes with the scheduler's, when the last join handle or waker
 * of its tasks is gone (both flavors), so that fut_spawn on a freed
 * runtime can answer FUT_ESHUTDOWN while one is alive (rt.h). */
struct fut_runtime {
    struct fut__sched *sched;
    int flavor;
    int freed;    /* fut_runtime_free ran (its thread only) */
    uint32_t gen; /* debug: registered while not freed (misuse.c) */
};

void fut_rt_config_init(struct fut_rt_config *cfg)
{
    FUT_ARG_VOID(cfg, "'cfg' is NULL");
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

int fut_runtime_new(const struct fut_rt_config *cfg, struct fut_runtime **out)
{
    FUT_ARG_CHECK(out, "'out' is NULL");
    *out = NULL;
    struct fut_rt_config c;
    int r = config_resolve(cfg, &c);
    if (r)
        return r;
    struct fut_runtime *rt = fut__alloc(sizeof *rt);
    if (!rt)
        return FUT_ENOMEM;
    rt->flavor = c.flavor;
    rt->freed = 0;
    if (c.flavor == FUT_RT_MULTI_THREAD) {
        r = fut__mt_new(rt, &c, &rt->sched);
        if (r) {
            fut__free(rt, sizeof *rt);
            return r;
        }
        /* The workers start last: whatever is attached to the scheduler
         * before this is seen by them. On failure 'rt' is gone. */
        r = fut__mt_start(rt->sched);
        if (r)
            return r;
        rt->gen = FUT_HANDLE_NEW(rt);
        *out = rt;
        return 0;
    }
    r = fut__ct_new(rt, &c, &rt->sched);
    if (r) {
        fut__free(rt, sizeof *rt);
        return r;
    }
    rt->gen = FUT_HANDLE_NEW(rt);
    *out = rt;
    return 0;
}

void fut__runtime_dealloc(struct fut_runtime *rt)
{
    fut__free(rt, sizeof *rt);
}

void fut_runtime_free(struct fut_runtime *rt)
{
    if (!rt)
        return; /* like free(NULL) */
#ifdef FUT_DEBUG
    /* Before reading 'rt': it may be gone. */
    if (!fut__handle_obj_live(rt))
        fut__misuse(__func__, "not a live runtime (freed twice?)",
                    FUT__CALLER);
#endif
    if (rt->freed) {
        FUT_MISUSE("the runtime was freed already");
        return;
    }
    if (fut__tls_sched == rt->sched) /* it would wait for itself */
        fut__misuse(__func__, "called from inside fut_block_on or a task "
                              "of the same runtime", FUT__CALLER);
    rt->freed = 1;
    FUT_HANDLE_END(rt, rt->gen, __func__);
    /* Both flavors free 'rt' with the scheduler's memory. */
    if (rt->flavor == FUT_RT_MULTI_THREAD)
        fut__mt_shutdown(rt->sched);
    else
        fut__ct_shutdown(rt->sched);
}

struct fut_runtime *fut_runtime_current(void)
{
    return fut__tls_sched ? fut__tls_sched->rt : NULL;
}

int fut_spawn_at(struct fut_runtime *rt, const struct fut_future *f,
                 size_t size, struct fut_join *join, const char *file,
                 int line)
{
    if (!rt)
        rt = fut_runtime_current();
    if (!rt || !f || size < sizeof(struct fut_future)) {
        if (join)
            fut__join_init(join, NULL);
        return FUT_EINVAL;
    }
    if (rt->flavor == FUT_RT_MULTI_THREAD)
        return fut__mt_spawn(rt->sched, f, size, join, 0, file, line);
    return fut__ct_spawn(rt->sched, f, size, join, file, line);
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
    if (rt->flavor == FUT_RT_MULTI_THREAD)
        return fut__mt_spawn(rt->sched, f, size, join, 1, file, line);
    /* Current-thread: every task runs on the thread inside block_on. */
    return fut__ct_spawn(rt->sched, f, size, join, file, line);
}

void fut_runtime_stats(struct fut_runtime *rt, struct fut_rt_stats *out)
{
    FUT_ARG_VOID(rt, "'rt' is NULL");
    FUT_ARG_VOID(out, "'out' is NULL");
    FUT_ARG_VOID(rt, "'rt' is NULL");
    FUT_ARG_VOID(out, "'out' is NULL");
    memset(out, 0, sizeof *out);
    if (rt->flavor == FUT_RT_MULTI_THREAD) {
        fut__mt_stats(rt->sched, out);
        return;
    }
    fut__ct_stats(rt->sched, out);
    out->workers = 1;
}

int fut_runtime_workers(struct fut_runtime *rt)
{
    FUT_ARG_CHECK(rt, "'rt' is NULL");
    FUT_ARG_CHECK(rt, "'rt' is NULL");
    return rt->flavor == FUT_RT_MULTI_THREAD ? fut__mt_workers(rt->sched)
                                             : 1;
}

int fut_runtime_worker_stats(struct fut_runtime *rt, int worker,
                             struct fut_rt_stats *out)
{
    FUT_ARG_CHECK(out, "'out' is NULL");
    FUT_ARG_CHECK(rt, "'rt' is NULL");
    FUT_ARG_CHECK(rt, "'rt' is NULL");
    if (rt->flavor == FUT_RT_MULTI_THREAD) {
        memset(out, 0, sizeof *out);
        return fut__mt_worker_stats(rt->sched, worker, out);
    }
    if (worker != 0)
        return FUT_EINVAL;
    fut_runtime_stats(rt, out);
    return 0;
}

/* ------------------------------------------- block_on without a runtime */

/* A refcounted parker, so a waker that outlives the block_on stays safe. */
struct thread_waker {
    struct fut__parker parker;
    fut__aword refs;
};

static void tw_drop(const void *data)
{
    struct thread_waker *tw = (struct thread_waker *)data;
    /* Release/acquire: all uses before the free. */
    if (fut__fetch_sub(&tw->refs, 1, FUT__ACQ_REL) == 1)
        fut__free(tw, sizeof *tw);
}

static void tw_wake_by_ref(const void *data)
{
    fut__parker_unpark(&((struct thread_waker *)data)->parker);
}

static void tw_wake(const void *data)
{
    tw_wake_by_ref(data);
    tw_drop(data);
}

static struct fut_waker tw_clone(const void *data);
static const struct fut_waker_vtable tw_vt = {tw_clone, tw_wake,
                                              tw_wake_by_ref, tw_drop};

static struct fut_waker tw_clone(const void *data)
{
    struct thread_waker *tw = (struct thread_waker *)data;
    fut__fetch_add(&tw->refs, 1, FUT__RELAXED); /* caller holds one */
    struct fut_waker w = {data, &tw_vt};
    return w;
}

int fut__block_on_thread(struct fut_future *f)
{
    struct thread_waker *tw = fut__alloc(sizeof *tw);
    if (!tw)
        return FUT_ENOMEM;
    fut__parker_init(&tw->parker);
    fut__aword_init(&tw->refs, 1);
    struct fut_context cx;
    struct fut_waker w = {tw, &tw_vt};
    fut_context_init(&cx, w);
    while (fut_poll(f, &cx) == FUT_PENDING)
        fut__parker_park(&tw->parker, -1);
    tw_drop(tw);
    return 0;
}

int fut_block_on(struct fut_runtime *rt, struct fut_future *f)
{
    FUT_ARG_CHECK(f, "'f' is NULL");
    FUT_ARG_CHECK(f, "'f' is NULL");
    if (!rt)
        return fut__block_on_thread(f);
    if (rt->flavor == FUT_RT_MULTI_THREAD)
        return fut__mt_block_on(rt->sched, f);
    return fut__ct_block_on(rt->sched, f);
}
