/* SPDX-License-Identifier: MIT */
/* The async mutex: a FIFO semaphore with one permit (Tokio's Mutex). The
 * permit is free (in the semaphore's word), held by a guard, or granted to
 * a lock future that has not returned it yet; see semaphore.c for the
 * rules. An unlock is a release that refuses to make more than one permit
 * free, which is how an unlock of a mutex that is not locked is told
 * apart. */
#include "sync/sync_internal.h"

static struct fut__sem *sem_of(struct fut_mutex *m)
{
    return (struct fut__sem *)(void *)m;
}

void fut_mutex_init(struct fut_mutex *m)
{
    FUT_ARG_VOID(m, "'m' is NULL");
    fut__sem_init(sem_of(m), 1, UINTPTR_MAX >> FUT__SEM_SHIFT);
}

void fut_mutex_fini(struct fut_mutex *m)
{
    FUT_ARG_VOID(m, "'m' is NULL");
    FUT_ASSERT(fut__list_empty(&sem_of(m)->waiters));
    FUT_ASSERT(!fut_mutex_is_locked(m));
    (void)m;
}

int fut_mutex_try_lock(struct fut_mutex *m, struct fut_mutex_guard *g)
{
    FUT_ARG_CHECK(m, "'m' is NULL");
    FUT_ARG_CHECK(g, "'g' is NULL");
    if (fut__sem_try_acquire(sem_of(m), 1) != 0) {
        g->m = NULL;
        return FUT_EBUSY;
    }
    g->m = m;
    return 0;
}

int fut_mutex_unlock(struct fut_mutex_guard *g)
{
    FUT_ARG_CHECK(g, "'g' is NULL");
    if (!g->m)
        return FUT_EINVAL;
    int r = fut__sem_release_max(sem_of(g->m), 1, 1);
    if (r == 0)
        g->m = NULL;
    return r;
}

int fut_mutex_is_locked(const struct fut_mutex *cm)
{
    FUT_ARG_OR(cm, "'m' is NULL", 0);
    struct fut__sem *s = sem_of((struct fut_mutex *)cm);
    return fut__sem_permits(s, fut__load(&s->state, FUT__RELAXED)) == 0;
}

static int lock_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_mutex_lock *l = (struct fut_mutex_lock *)f;
    struct fut__wnode *w = fut__wnode_of(&l->w);
    /* A mutex is never closed: READY means granted. */
    if (fut__sem_poll_coop(sem_of(l->m), w, cx) == FUT_PENDING)
        return FUT_PENDING;
    fut__store(&w->st, FUT__SEMW_IDLE, FUT__RELAXED);
    l->guard.m = l->m;
    return FUT_READY;
}

static void lock_drop(struct fut_future *f)
{
    struct fut_mutex_lock *l = (struct fut_mutex_lock *)f;
    fut__sem_cancel(sem_of(l->m), fut__wnode_of(&l->w));
}

static const struct fut_future_vtable lock_vt = {lock_poll, lock_drop,
                                                 "mutex_lock", 0};

void fut_mutex_lock_init(struct fut_mutex_lock *f, struct fut_mutex *m)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(m, "'m' is NULL");
    fut_future_init(&f->base, &lock_vt);
    f->m = m;
    fut__semw_init(fut__wnode_of(&f->w), 1);
    f->guard.m = NULL;
}
