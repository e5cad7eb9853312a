/* SPDX-License-Identifier: MIT */
/* The simulated network's public calls (fut/sim.h): hosts, tasks on a
 * host, partitions, latency, resets. The network itself is the
 * simulation driver's backend (src/io/backend_sim.c); this file finds it
 * from a runtime and checks the arguments. One thread: the simulation's. */
#include <string.h>

#include "fut/sim.h"
#include "io/io_internal.h"
#include "io/simnet.h"
#include "rt/rt_internal.h"

/* The network of simulation runtime 'rt', or NULL. */
static struct fut__backend *net_of(struct fut_runtime *rt)
{
    if (!rt || !rt->sched->sim || !rt->sched->driver)
        return NULL;
    struct fut__iodrv *d = (struct fut__iodrv *)rt->sched->driver;
    return d->bvt == &fut__backend_sim ? d->be : NULL;
}

int fut_sim_host_new(struct fut_runtime *rt, const char *addr,
                     struct fut_sim_host **out)
{
    FUT_ARG_CHECK(out, "'out' is NULL");
    *out = NULL;
    FUT_ARG_CHECK(rt, "'rt' is NULL");
    FUT_ARG_CHECK(addr, "'addr' is NULL");
    FUT_RT_LIVE(rt);
    struct fut__backend *n = net_of(rt);
    if (!n)
        return FUT_EINVAL;
    return fut__simnet_host_new(n, rt, addr, out);
}

/* ------------------------------------------------------ a task on a host */

/* The wrapper fut_sim_spawn_on spawns: the host, then the user's future
 * (copied in after the header, 16-byte aligned). Each poll runs with the
 * host current (fut__simnet_current), restored after. */
struct on_host {
    struct fut_future base;
    struct fut_sim_host *host;
    int aborted; /* fut_sim_crash aborted it (its drop may come later) */
};
#define INNER_OFF ((sizeof(struct on_host) + 15) & ~(size_t)15)

static struct fut_future *inner_of(struct fut_future *f)
{
    return (struct fut_future *)(void *)((char *)f + INNER_OFF);
}

static int on_host_poll(struct fut_future *f, struct fut_context *cx)
{
    struct on_host *w = (struct on_host *)f;
    struct fut_sim_host *saved = fut__simnet_current;
    fut__simnet_current = w->host;
    int r = fut_poll(inner_of(f), cx);
    fut__simnet_current = saved;
    return r;
}

static void on_host_drop(struct fut_future *f)
{
    struct on_host *w = (struct on_host *)f;
    struct fut_sim_host *saved = fut__simnet_current;
    fut__simnet_current = w->host; /* its drop may close sockets */
    fut_drop(inner_of(f));
    fut__simnet_current = saved;
}

static const struct fut_future_vtable on_host_vt = {
    on_host_poll, on_host_drop, "sim_on_host", NULL};

int fut_sim_spawn_on_at(struct fut_sim_host *host, const struct fut_future *f,
                        size_t size, struct fut_join *join, const char *file,
                        int line)
{
    FUT_ARG_CHECK(f, "'f' is NULL");
    if (join)
        memset(join, 0, sizeof *join);
    if (!host)
        return FUT_EINVAL;
    if (fut__simnet_down(host))
        return FUT_ESHUTDOWN; /* crashed: nothing runs there */
    size_t total = INNER_OFF + size;
    char *tmp = fut__alloc(total);
    if (!tmp)
        return FUT_ENOMEM;
    memset(tmp, 0, INNER_OFF);
    struct on_host *w = (struct on_host *)(void *)tmp;
    fut_future_init(&w->base, &on_host_vt);
    w->host = host;
    memcpy(tmp + INNER_OFF, f, size);
    struct fut_runtime *rt = fut__simnet_rt(host);
    int r = fut_spawn_at(rt, &w->base, total, join, file, line);
    fut__free(tmp, total);
    return r;
}

/* ------------------------------------------------------------- the links */

/* FUT_EINVAL unless 'a' and 'b' are hosts of one network. */
static int pair_check(struct fut_sim_host *a, struct fut_sim_host *b)
{
    return a && b && fut__simnet_of(a) == fut__simnet_of(b) ? 0 : FUT_EINVAL;
}

int fut_sim_partition(struct fut_sim_host *a, struct fut_sim_host *b)
{
    int r = pair_check(a, b);
    return r ? r : fut__simnet_partition(a, b, 1);
}

int fut_sim_heal(struct fut_sim_host *a, struct fut_sim_host *b)
{
    int r = pair_check(a, b);
    return r ? r : fut__simnet_partition(a, b, 0);
}

int fut_sim_latency(struct fut_runtime *rt, struct fut_sim_host *a,
                    struct fut_sim_host *b, int64_t min_ns, int64_t max_ns)
{
    FUT_ARG_CHECK(rt, "'rt' is NULL");
    FUT_ARG_CHECK((!a) == (!b), "only one of 'a' and 'b' is NULL");
    FUT_RT_LIVE(rt);
    struct fut__backend *n = net_of(rt);
    if (!n || min_ns < 0 || max_ns < min_ns)
        return FUT_EINVAL;
    if (a && (pair_check(a, b) || fut__simnet_of(a) != n))
        return FUT_EINVAL;
    return fut__simnet_latency(n, a, b, min_ns, max_ns);
}

int fut_sim_udp_faults(struct fut_runtime *rt, struct fut_sim_host *a,
                       struct fut_sim_host *b, uint32_t loss_ppm,
                       uint32_t dup_ppm, uint32_t reorder_ppm)
{
    FUT_ARG_CHECK(rt, "'rt' is NULL");
    FUT_ARG_CHECK((!a) == (!b), "only one of 'a' and 'b' is NULL");
    FUT_RT_LIVE(rt);
    struct fut__backend *n = net_of(rt);
    if (!n || loss_ppm > 1000000 || dup_ppm > 1000000 ||
        reorder_ppm > 1000000)
        return FUT_EINVAL;
    if (a && (pair_check(a, b) || fut__simnet_of(a) != n))
        return FUT_EINVAL;
    return fut__simnet_udp_faults(n, a, b, loss_ppm, dup_ppm, reorder_ppm);
}

int fut_sim_bandwidth(struct fut_runtime *rt, struct fut_sim_host *a,
                      struct fut_sim_host *b, uint64_t bytes_per_sec)
{
    FUT_ARG_CHECK(rt, "'rt' is NULL");
    FUT_ARG_CHECK((!a) == (!b), "only one of 'a' and 'b' is NULL");
    FUT_RT_LIVE(rt);
    struct fut__backend *n = net_of(rt);
    if (!n)
        return FUT_EINVAL;
    if (a && (pair_check(a, b) || fut__simnet_of(a) != n))
        return FUT_EINVAL;
    return fut__simnet_bandwidth(n, a, b, bytes_per_sec);
}

int fut_sim_udp_stats(struct fut_runtime *rt, struct fut_sim_udp_stats *out)
{
    FUT_ARG_CHECK(out, "'out' is NULL");
    memset(out, 0, sizeof *out);
    FUT_ARG_CHECK(rt, "'rt' is NULL");
    struct fut__backend *n = net_of(rt);
    if (!n)
        return FUT_EINVAL;
    struct fut__simnet_udp_stats st;
    fut__simnet_udp_stats(n, &st);
    out->sent = st.sent;
    out->duplicated = st.duplicated;
    out->reordered = st.reordered;
    out->lost = st.lost;
    out->cut = st.cut;
    out->no_socket = st.no_socket;
    out->overflow = st.overflow;
    out->delivered = st.delivered;
    out->read = st.read;
    out->in_flight = st.in_flight;
    return 0;
}

int fut_sim_reset(struct fut_io *io)
{
    FUT_ARG_CHECK(io, "'io' is NULL");
    return fut__simnet_reset(io->core);
}

/* ------------------------------------------------------- crash, restart */

/* The crash's walk over the live tasks: the first task of host 'host'
 * (an on_host wrapper) not aborted yet. */
struct crash_walk {
    struct fut_sim_host *host;
    struct fut_task *found;
};

static void crash_each(void *ud, struct fut_task *t, int deep)
{
    struct crash_walk *w = ud;
    (void)deep;
    struct fut_future *f = fut__task_future(t);
    if (w->found || f->vt != &on_host_vt)
        return;
    struct on_host *o = (struct on_host *)f;
    if (o->host == w->host && !o->aborted)
        w->found = t;
}

int fut_sim_crash(struct fut_sim_host *host)
{
    if (!host)
        return FUT_EINVAL;
    struct fut_runtime *rt = fut__simnet_rt(host);
    /* The live list is the runtime thread's, inside its block_on. */
    if (!rt || fut__tls_sched != rt->sched)
        return FUT_EINVAL;
    int r = fut__simnet_crash(host); /* the sockets first: the drops
                                        below find them dead */
    if (r)
        return r;
    /* One task at a time, walking again after each abort: an abort may
     * drop the task at once (and its drop end or wake others), so the
     * list may change under a walk. A task aborted while it runs or is
     * queued stays listed until its owner drops it: 'aborted' skips it.
     * Linear in the live tasks per task of the host. */
    for (;;) {
        struct crash_walk w = {host, NULL};
        rt->sched->vt->each_task(rt->sched, crash_each, &w);
        if (!w.found)
            break;
        ((struct on_host *)fut__task_future(w.found))->aborted = 1;
        fut__task_abort(w.found);
    }
    return 0;
}

int fut_sim_restart(struct fut_sim_host *host)
{
    if (!host)
        return FUT_EINVAL;
    return fut__simnet_restart(host);
}
