/* SPDX-License-Identifier: MIT */
/* The reader-writer lock: a FIFO semaphore of FUT_RWLOCK_MAX_READERS
 * permits (Tokio's RwLock). A reader takes one permit, a writer all of
 * them, so FIFO order makes it writer-preferring: a queued writer sets
 * WAITERS, which stops later readers' fast path, and accumulates the
 * permits of the readers inside as they leave (a partial grant at the
 * head of the queue). Unlocks refuse to free more than MAX permits, which
 * catches an unlock of a lock that is not held (when nobody holds it). */
#include "sync/sync_internal.h"

#define MAX FUT_RWLOCK_MAX_READERS

static struct fut__sem *sem_of(struct fut_rwlock *l)
{
    return (struct fut__sem *)(void *)l;
}

void fut_rwlock_init(struct fut_rwlock *l)
{
    FUT_ARG_VOID(l, "'l' is NULL");
    fut__sem_init(sem_of(l), MAX, UINTPTR_MAX >> FUT__SEM_SHIFT);
}

void fut_rwlock_fini(struct fut_rwlock *l)
{
    FUT_ARG_VOID(l, "'l' is NULL");
    struct fut__sem *s = sem_of(l);
    FUT_ASSERT(fut__list_empty(&s->waiters));
    FUT_ASSERT(fut__sem_permits(s, fut__load(&s->state, FUT__RELAXED)) ==
               MAX);
    (void)s;
}

int fut_rwlock_try_read(struct fut_rwlock *l, struct fut_rwlock_read_guard *g)
{
    FUT_ARG_CHECK(l, "'l' is NULL");
    FUT_ARG_CHECK(g, "'g' is NULL");
    if (fut__sem_try_acquire(sem_of(l), 1) != 0) {
        g->l = NULL;
        return FUT_EBUSY;
    }
    g->l = l;
    return 0;
}

int fut_rwlock_try_write(struct fut_rwlock *l,
                         struct fut_rwlock_write_guard *g)
{
    FUT_ARG_CHECK(l, "'l' is NULL");
    FUT_ARG_CHECK(g, "'g' is NULL");
    if (fut__sem_try_acquire(sem_of(l), MAX) != 0) {
        g->l = NULL;
        return FUT_EBUSY;
    }
    g->l = l;
    return 0;
}

int fut_rwlock_read_unlock(struct fut_rwlock_read_guard *g)
{
    FUT_ARG_CHECK(g, "'g' is NULL");
    if (!g->l)
        return FUT_EINVAL;
    int r = fut__sem_release_max(sem_of(g->l), 1, MAX);
    if (r == 0)
        g->l = NULL;
    return r;
}

int fut_rwlock_write_unlock(struct fut_rwlock_write_guard *g)
{
    FUT_ARG_CHECK(g, "'g' is NULL");
    if (!g->l)
        return FUT_EINVAL;
    /* Held for writing means no permit is free. */
    int r = fut__sem_release_max(sem_of(g->l), MAX, MAX);
    if (r == 0)
        g->l = NULL;
    return r;
}

int fut_rwlock_downgrade(struct fut_rwlock_write_guard *w,
                         struct fut_rwlock_read_guard *r)
{
    FUT_ARG_CHECK(w, "'w' is NULL");
    FUT_ARG_CHECK(r, "'r' is NULL");
    r->l = NULL;
    if (!w->l)
        return FUT_EINVAL;
    int e = fut__sem_release_max(sem_of(w->l), MAX - 1, MAX - 1);
    if (e)
        return e;
    r->l = w->l;
    w->l = NULL;
    return 0;
}

/* Shared by both futures: 'guard' is where the output goes. */
static int rw_poll(struct fut_rwlock *l, struct fut_sync_waiter *sw,
                   struct fut_context *cx, struct fut_rwlock **guard)
{
    struct fut__wnode *w = fut__wnode_of(sw);
    if (fut__sem_poll_coop(sem_of(l), w, cx) == FUT_PENDING)
        return FUT_PENDING;
    fut__store(&w->st, FUT__SEMW_IDLE, FUT__RELAXED);
    *guard = l;
    return FUT_READY;
}

static int read_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_rwlock_read *r = (struct fut_rwlock_read *)f;
    return rw_poll(r->l, &r->w, cx, &r->guard.l);
}

static void read_drop(struct fut_future *f)
{
    struct fut_rwlock_read *r = (struct fut_rwlock_read *)f;
    fut__sem_cancel(sem_of(r->l), fut__wnode_of(&r->w));
}

static int write_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_rwlock_write *w = (struct fut_rwlock_write *)f;
    return rw_poll(w->l, &w->w, cx, &w->guard.l);
}

static void write_drop(struct fut_future *f)
{
    struct fut_rwlock_write *w = (struct fut_rwlock_write *)f;
    fut__sem_cancel(sem_of(w->l), fut__wnode_of(&w->w));
}

static const struct fut_future_vtable read_vt = {read_poll, read_drop,
                                                 "rwlock_read", 0};
static const struct fut_future_vtable write_vt = {write_poll, write_drop,
                                                  "rwlock_write", 0};

void fut_rwlock_read_init(struct fut_rwlock_read *f, struct fut_rwlock *l)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(l, "'l' is NULL");
    fut_future_init(&f->base, &read_vt);
    f->l = l;
    fut__semw_init(fut__wnode_of(&f->w), 1);
    f->guard.l = NULL;
}

void fut_rwlock_write_init(struct fut_rwlock_write *f, struct fut_rwlock *l)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(l, "'l' is NULL");
    fut_future_init(&f->base, &write_vt);
    f->l = l;
    fut__semw_init(fut__wnode_of(&f->w), MAX);
    f->guard.l = NULL;
}
