/* The runtime handle: configuration, the choice of scheduler, block_on
 * without a runtime (a thread-parking waker), spawn and statistics. */
#include <string.h>

#include "rt/rt_internal.h"

struct fut_runtime {
    struct fut__sched *sched;
    int flavor;
};

void fut_rt_config_init(struct fut_rt_config *cfg)
{
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
        out->slow_poll_ns < -1)
        return FUT_EINVAL;
    if (out->flavor != FUT_RT_CURRENT_THREAD)
        return FUT_EINVAL; /* the multi-thread scheduler is not built yet */
    if (out->budget == 0)
        out->budget = 128; /* Tokio's coop budget */
    if (out->event_interval == 0)
        out->event_interval = 61; /* Tokio's; a prime, so it does not beat
                                     with periodic workloads */
    if (out->slow_poll_ns == 0)
        out->slow_poll_ns = 10 * 1000 * 1000;
    return 0;
}

int fut_runtime_new(const struct fut_rt_config *cfg, struct fut_runtime **out)
{
    struct fut_rt_config c;
    int r = config_resolve(cfg, &c);
    if (r)
        return r;
    struct fut_runtime *rt = fut__alloc(sizeof *rt);
    if (!rt)
        return FUT_ENOMEM;
    rt->flavor = c.flavor;
    r = fut__ct_new(rt, &c, &rt->sched);
    if (r) {
        fut__free(rt, sizeof *rt);
        return r;
    }
    *out = rt;
    return 0;
}

void fut_runtime_free(struct fut_runtime *rt)
{
    if (!rt)
        return;
    FUT_CHECK(fut__tls_sched != rt->sched); /* not from inside block_on */
    fut__ct_shutdown(rt->sched);
    fut__free(rt, sizeof *rt);
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
    return fut__ct_spawn(rt->sched, f, size, join, file, line);
}

void fut_runtime_stats(struct fut_runtime *rt, struct fut_rt_stats *out)
{
    fut__ct_stats(rt->sched, out);
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

static int block_on_thread(struct fut_future *f)
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
    if (!rt)
        return block_on_thread(f);
    return fut__ct_block_on(rt->sched, f);
}
