/* SPDX-License-Identifier: MIT */
/* A reusable barrier: the n-th arrival of a generation releases the other
 * n-1 and is its leader.
 *
 * Rules: 'arrived', 'gen' and the waiter list are under 'lock'. A waiter
 * node's 'st' goes INIT -> QUEUED (arrived, under the lock) -> RELEASED
 * (the leader's batch wake: unlinked, waker taken, then a release store;
 * its last touch) or back to INIT when the future is dropped while
 * QUEUED (its arrival is withdrawn: 'arrived' -1). The leader's own node
 * goes INIT -> LEADER without queueing. A node keeps RELEASED/LEADER
 * across a coop PENDING, so the next poll is READY at once. A queued node
 * remembers the generation it arrived in ('aux'): while the leader wakes
 * the released list in batches (dropping the lock in between) a node of
 * a released generation may still read QUEUED; its poll or drop sees
 * 'gen' moved, unlinks it and treats it as released (a drop then withdraws
 * nothing: that generation is gone).
 */
#include "sync/sync_internal.h"

enum { W_INIT = 0, W_QUEUED = 1, W_RELEASED = 2, W_LEADER = 3, W_DONE = 4 };

struct fut__barrier {
    struct fut__lock lock;
    size_t n;       /* parties per generation */
    size_t arrived; /* arrivals of the current generation (< n) */
    uintptr_t gen;  /* generations released so far */
    struct fut__list waiters;
};

_Static_assert(sizeof(struct fut__barrier) <= sizeof(struct fut_barrier),
               "struct fut_barrier too small");

static struct fut__barrier *barrier_of(struct fut_barrier *b)
{
    return (struct fut__barrier *)(void *)b;
}

void fut_barrier_init(struct fut_barrier *pb, size_t n)
{
    FUT_ARG_VOID(pb || !n, "'b' is NULL");
    struct fut__barrier *b = barrier_of(pb);
    fut__lock_init(&b->lock);
    b->n = n ? n : 1;
    b->arrived = 0;
    b->gen = 0;
    fut__list_init(&b->waiters);
}

void fut_barrier_fini(struct fut_barrier *pb)
{
    FUT_ARG_VOID(pb, "'b' is NULL");
    FUT_ASSERT(fut__list_empty(&barrier_of(pb)->waiters));
    (void)pb;
}

static int wait_done(struct fut_barrier_wait *f, struct fut__wnode *w,
                     uintptr_t st, struct fut_context *cx)
{
    if (!fut_coop_proceed(cx))
        return FUT_PENDING; /* stays RELEASED/LEADER */
    f->is_leader = st == W_LEADER;
    fut__store(&w->st, W_DONE, FUT__RELAXED);
    return FUT_READY;
}

static int wait_poll(struct fut_future *ff, struct fut_context *cx)
{
    struct fut_barrier_wait *f = (struct fut_barrier_wait *)ff;
    struct fut__barrier *b = barrier_of(f->b);
    struct fut__wnode *w = fut__wnode_of(&f->w);
    /* Acquire: pairs with the leader's release store of 'st'. */
    uintptr_t st = fut__load(&w->st, FUT__ACQUIRE);
    if (st == W_RELEASED || st == W_LEADER)
        return wait_done(f, w, st, cx);
    struct fut_waker old = FUT_WAKER_NONE;
    fut__lock_acquire(&b->lock);
    st = fut__load(&w->st, FUT__RELAXED);
    if (st == W_RELEASED) {
        fut__lock_release(&b->lock);
        return wait_done(f, w, st, cx);
    }
    if (st == W_QUEUED && w->aux != b->gen) {
        /* Released; still on the leader's batch list. */
        old = w->waker;
        w->waker.vt = 0;
        fut__list_remove(&w->link);
        fut__store(&w->st, W_RELEASED, FUT__RELAXED);
        fut__lock_release(&b->lock);
        fut_waker_drop(&old);
        return wait_done(f, w, W_RELEASED, cx);
    }
    if (st == W_QUEUED) {
        if (!fut_waker_will_wake(&w->waker, &cx->waker)) {
            old = w->waker;
            fut__waker_store(&w->waker, fut_waker_clone(&cx->waker));
        }
        fut__lock_release(&b->lock);
        fut_waker_drop(&old);
        return FUT_PENDING;
    }
    if (b->arrived + 1 < b->n) {
        b->arrived++;
        w->aux = b->gen;
        fut__waker_store(&w->waker, fut_waker_clone(&cx->waker));
        fut__store(&w->st, W_QUEUED, FUT__RELAXED);
        fut__list_push_back(&b->waiters, &w->link);
        fut__lock_release(&b->lock);
        return FUT_PENDING;
    }
    /* The last arrival: release this generation. */
    b->arrived = 0;
    b->gen++;
    fut__store(&w->st, W_LEADER, FUT__RELAXED);
    fut__wake_all_locked(&b->lock, &b->waiters, W_RELEASED);
    fut__lock_release(&b->lock);
    return wait_done(f, w, W_LEADER, cx);
}

static void wait_drop(struct fut_future *ff)
{
    struct fut_barrier_wait *f = (struct fut_barrier_wait *)ff;
    struct fut__barrier *b = barrier_of(f->b);
    struct fut__wnode *w = fut__wnode_of(&f->w);
    if (fut__load(&w->st, FUT__ACQUIRE) != W_QUEUED) /* pairs: leader */
        return;
    struct fut_waker old = FUT_WAKER_NONE;
    fut__lock_acquire(&b->lock);
    if (fut__load(&w->st, FUT__RELAXED) == W_QUEUED) {
        old = w->waker;
        w->waker.vt = 0;
        fut__list_remove(&w->link);
        if (w->aux == b->gen)
            b->arrived--; /* withdraw the arrival */
        fut__store(&w->st, W_INIT, FUT__RELAXED);
    }
    fut__lock_release(&b->lock);
    fut_waker_drop(&old);
}

static const struct fut_future_vtable wait_vt = {wait_poll, wait_drop,
                                                 "barrier_wait", 0};

void fut_barrier_wait_init(struct fut_barrier_wait *f, struct fut_barrier *b)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(b, "'b' is NULL");
    fut_future_init(&f->base, &wait_vt);
    f->b = b;
    fut__wnode_init(fut__wnode_of(&f->w), W_INIT);
    f->is_leader = 0;
}
