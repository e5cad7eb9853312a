/* SPDX-License-Identifier: MIT */
/* block_on without a runtime (fut_block_on(NULL, f), and the schedulers'
 * block_on from a thread outside them): the future is polled on the
 * calling thread with a waker that unparks it. */
#include "rt/rt_internal.h"

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
