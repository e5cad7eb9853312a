/* SPDX-License-Identifier: MIT */
/* The FIFO semaphore: the core (fut__sem, shared with the mutex, the
 * rwlock and the bounded mpsc) and the public fut_semaphore.
 *
 * Rules of the state word 'state':
 *
 *   bits                  meaning
 *   WAITERS               the waiter list is not empty; set and cleared
 *                         only under 'lock', so under the lock
 *                         WAITERS <=> !empty(waiters)
 *   CLOSED                set once (fut__sem_close); acquires fail
 *   AUX                   not ours (the bounded mpsc's RX_WAITING)
 *   permits << SHIFT      free permits, masked by 'pmask'
 *   above the permits     not ours (the bounded mpsc's tail); every update
 *                         here is an add/sub of permits or an or/and of
 *                         our flags, so those bits are preserved
 *
 *   - Fast acquire (no lock): one CAS taking n permits, allowed only while
 *     WAITERS is clear - FIFO: nobody barges past a queued waiter.
 *   - Slow acquire: under the lock, take the permits if allowed, else set
 *     WAITERS, append the node, and hand out whatever is free (assign).
 *   - Release: one fetch_add. If the old value had WAITERS, the permits
 *     may now sit in the word while waiters sleep: the releaser takes the
 *     lock and assigns them. Conversely a waiter that queues after the
 *     fetch_add sees the permits in its own CAS (it runs assign after
 *     queueing; it skips that when the word it set WAITERS in, or saw it
 *     set in, had no free permit). So free permits never strand while
 *     somebody waits.
 *   - Checked release (fut__sem_release_max: the mutex's and rwlock's
 *     unlocks, add_permits): a CAS while WAITERS is clear; with WAITERS
 *     set it takes the lock and hands the permits to the queue directly
 *     (handoff_locked), putting only the rest into the word.
 *   - Assign (under the lock): move free permits from the word to the
 *     waiters in list order; the head accumulates a partial grant until
 *     it has all it asked for (strict FIFO, as Tokio). A satisfied node is
 *     unlinked, its waker moved to a wakeset, and its 'st' set to GRANTED
 *     with a release store - the last touch of the node, after which the
 *     future may complete and vanish. Wakers run after unlocking.
 *   - Cancel: a queued node is unlinked under the lock and its partial
 *     grant goes back into the word, then assign runs (the next waiter
 *     may now be satisfied); a GRANTED node releases its permits. Nothing
 *     handed to a waiter is lost.
 *   - Close: set CLOSED, then under the lock every node goes CLOSED, its
 *     partial grant back into the word (so "all permits returned" stays
 *     observable: the bounded mpsc's end of stream relies on it).
 *
 * Orderings: an acquirer's CAS (acquire) reads a value in the release
 * sequence of every earlier release (release fetch_add; all writers of
 * the word use RMWs), so what a holder did before releasing happens before
 * what the next holder does. A granted waiter gets the same through the
 * granter's acquire CAS and its release store of 'st', which pairs with
 * the poller's acquire load.
 *
 * Seeded bugs (FUT_MC_BUG_*, model-checker builds only): SEM_BARGE lets
 * the fast path ignore WAITERS; SEM_LOST_RELEASE skips the slow path of a
 * release that saw WAITERS; SEM_CANCEL_LEAK drops a granted waiter without
 * releasing its permits. See test/mc/model_semaphore.c.
 */
#include "sync/sync_internal.h"

#ifdef FUT_MC_BUG_SEM_BARGE
#define FAST_BLOCKERS FUT__SEM_CLOSED
#else
#define FAST_BLOCKERS (FUT__SEM_CLOSED | FUT__SEM_WAITERS)
#endif

void fut__sem_init(struct fut__sem *s, uintptr_t permits, uintptr_t pmask)
{
    FUT_CHECK(permits <= pmask);
    fut__aword_init(&s->state, permits << FUT__SEM_SHIFT);
    fut__lock_init(&s->lock);
    fut__list_init(&s->waiters);
    s->pmask = pmask;
}

int fut__sem_try_acquire(struct fut__sem *s, uintptr_t n)
{
    uintptr_t st = fut__load(&s->state, FUT__RELAXED);
    for (;;) {
        if (st & FUT__SEM_CLOSED)
            return FUT_ECLOSED;
        if ((st & FAST_BLOCKERS) || fut__sem_permits(s, st) < n)
            return FUT_EAGAIN;
        /* Acquire: pairs with the releases (see the rules). */
        if (fut__cas(&s->state, &st, st - n * FUT__SEM_ONE, FUT__ACQUIRE,
                     FUT__RELAXED))
            return 0;
    }
}

/* Under the lock: hands free permits to the waiters in order. Returns 1
 * when it stopped because 'ws' is full (more may be satisfiable). */
static int assign_locked(struct fut__sem *s, struct fut__wakeset *ws)
{
    for (;;) {
        struct fut__list *l = fut__list_front(&s->waiters);
        uintptr_t st = fut__load(&s->state, FUT__RELAXED);
        if (!l) {
            /* Nobody left: clear WAITERS (only we change it, under the
             * lock; the CAS loop only races with permit traffic). */
            while ((st & FUT__SEM_WAITERS) &&
                   !fut__cas(&s->state, &st, st & ~FUT__SEM_WAITERS,
                             FUT__RELAXED, FUT__RELAXED))
                ;
            return 0;
        }
        struct fut__wnode *w = fut__wnode_from_link(l);
        uintptr_t need = fut__load(&w->st, FUT__RELAXED) >> 2;
        if (fut__wakeset_full(ws))
            return 1;
        uintptr_t take;
        do {
            uintptr_t avail = fut__sem_permits(s, st);
            if (avail == 0)
                return 0;
            take = avail < need ? avail : need;
            /* Acquire: as a fast acquirer, for the waiter we grant. */
        } while (!fut__cas(&s->state, &st, st - take * FUT__SEM_ONE,
                           FUT__ACQUIRE, FUT__RELAXED));
        need -= take;
        if (need > 0) {
            /* Partial grant to the head; nothing is free any more. */
            fut__store(&w->st, (need << 2) | FUT__SEMW_QUEUED, FUT__RELAXED);
            return 0;
        }
        fut__list_remove(l);
        fut__wakeset_take(ws, &w->waker);
        /* Release: our last touch of the node; pairs with the poller's
         * acquire load, which then owns the permits. */
        fut__store(&w->st, FUT__SEMW_GRANTED, FUT__RELEASE);
    }
}

/* Assigns, releases the lock and wakes the wakers in 'ws' (may hold some
 * already) and those it collects; relocks as often as a full wakeset
 * requires. Called with the lock held; returns without it. */
static void assign_and_unlock_ws(struct fut__sem *s, struct fut__wakeset *ws)
{
    for (;;) {
        int more = assign_locked(s, ws);
        fut__lock_release(&s->lock);
        fut__wakeset_wake(ws);
        if (!more)
            return;
        fut__lock_acquire(&s->lock);
    }
}

static void assign_and_unlock(struct fut__sem *s)
{
    struct fut__wakeset ws;
    fut__wakeset_init(&ws);
    assign_and_unlock_ws(s, &ws);
}

/* Under the lock, with WAITERS set: hands 'n' released permits straight
 * to the queued waiters in list order (partial grant to a head that wants
 * more), then puts what is left into the word. A hand-over that skips the
 * word saves the release RMW and assign's CAS taking the permits back out:
 * in a lock convoy (every unlock finds a queued locker, mutex_contended
 * on two workers) that is two of the dozen locked instructions per lock.
 * FIFO holds: with WAITERS set no fast acquirer takes permits, and permits
 * already in the word (a release in flight) are assigned by the caller's
 * assign_and_unlock_ws in the same order. */
static void handoff_locked(struct fut__sem *s, uintptr_t n,
                           struct fut__wakeset *ws)
{
    struct fut__list *l;
    while (n && !fut__wakeset_full(ws) &&
           (l = fut__list_front(&s->waiters))) {
        struct fut__wnode *w = fut__wnode_from_link(l);
        uintptr_t need = fut__load(&w->st, FUT__RELAXED) >> 2;
        if (need > n) {
            fut__store(&w->st, ((need - n) << 2) | FUT__SEMW_QUEUED,
                       FUT__RELAXED);
            return;
        }
        n -= need;
        fut__list_remove(l);
        fut__wakeset_take(ws, &w->waker);
        /* Release: our last touch of the node, after the releaser's
         * critical section; pairs with the poller's acquire load. */
        fut__store(&w->st, FUT__SEMW_GRANTED, FUT__RELEASE);
    }
    if (n) /* Release: as fut__sem_release. */
        fut__fetch_add(&s->state, n * FUT__SEM_ONE, FUT__RELEASE);
}

void fut__sem_release_slow(struct fut__sem *s)
{
#ifdef FUT_MC_BUG_SEM_LOST_RELEASE
    (void)s; /* the permits stay in the word while waiters sleep */
#else
    fut__lock_acquire(&s->lock);
    assign_and_unlock(s);
#endif
}

/* The check of fut__sem_release_max, then the permits into the word. */
static int add_checked(struct fut__sem *s, uintptr_t *st, uintptr_t n,
                       uintptr_t max)
{
    do {
        if (fut__sem_permits(s, *st) + n > max)
            return FUT_EINVAL;
        if (*st & FUT__SEM_WAITERS)
            return FUT_EAGAIN;
        /* Release: as fut__sem_release. */
    } while (!fut__cas(&s->state, st, *st + n * FUT__SEM_ONE, FUT__RELEASE,
                       FUT__RELAXED));
    return 0;
}

int fut__sem_release_max(struct fut__sem *s, uintptr_t n, uintptr_t max)
{
    uintptr_t st = fut__load(&s->state, FUT__RELAXED);
    int r = add_checked(s, &st, n, max);
    if (r != FUT_EAGAIN)
        return r;
    /* Waiters are queued: hand the permits over under the lock, where
     * WAITERS cannot change (it is set and cleared only under it). */
    fut__lock_acquire(&s->lock);
    st = fut__load(&s->state, FUT__RELAXED);
    struct fut__wakeset ws;
    fut__wakeset_init(&ws);
    if (st & FUT__SEM_WAITERS) {
        if (fut__sem_permits(s, st) + n > max) {
            fut__lock_release(&s->lock);
            return FUT_EINVAL;
        }
#ifdef FUT_MC_BUG_SEM_LOST_RELEASE
        /* The permits stay in the word while waiters sleep. */
        fut__fetch_add(&s->state, n * FUT__SEM_ONE, FUT__RELEASE);
        fut__lock_release(&s->lock);
        return 0;
#endif
        handoff_locked(s, n, &ws);
    } else if ((r = add_checked(s, &st, n, max)) != 0) {
        /* The queue emptied meanwhile; nobody can set WAITERS now. */
        fut__lock_release(&s->lock);
        return r;
    }
    assign_and_unlock_ws(s, &ws);
    return 0;
}

void fut__sem_close(struct fut__sem *s)
{
    struct fut__wakeset ws;
    fut__lock_acquire(&s->lock);
    fut__fetch_or(&s->state, FUT__SEM_CLOSED, FUT__RELAXED);
    for (;;) {
        fut__wakeset_init(&ws);
        struct fut__list *l;
        while (!fut__wakeset_full(&ws) &&
               (l = fut__list_front(&s->waiters))) {
            struct fut__wnode *w = fut__wnode_from_link(l);
            uintptr_t partial =
                w->aux - (fut__load(&w->st, FUT__RELAXED) >> 2);
            if (partial)
                fut__fetch_add(&s->state, partial * FUT__SEM_ONE,
                               FUT__RELEASE);
            fut__list_remove(l);
            fut__wakeset_take(&ws, &w->waker);
            /* Release: last touch of the node (pairs: poller). */
            fut__store(&w->st, FUT__SEMW_CLOSED, FUT__RELEASE);
        }
        if (fut__list_empty(&s->waiters)) {
            fut__fetch_and(&s->state, ~FUT__SEM_WAITERS, FUT__RELAXED);
            fut__lock_release(&s->lock);
            fut__wakeset_wake(&ws);
            return;
        }
        fut__lock_release(&s->lock);
        fut__wakeset_wake(&ws);
        fut__lock_acquire(&s->lock);
    }
}

/* ------------------------------------------------------------- waiters */

void fut__semw_init(struct fut__wnode *w, uintptr_t n)
{
    /* 'link' and 'waker' are written when the node queues (enqueue) and
     * read only while it is QUEUED: the hot path sets just these two. */
    fut__aword_init(&w->st, FUT__SEMW_IDLE);
    w->aux = n;
}

/* Slow acquire: queue 'w' (or take the permits if that became possible).
 * Out of line, as poll_queued: inlined, they made every poll of a granted
 * waiter pay their register saves (callgrind, mutex_contended). */
__attribute__((noinline)) static int
enqueue(struct fut__sem *s, struct fut__wnode *w, struct fut_context *cx)
{
    uintptr_t n = w->aux;
    fut__lock_acquire(&s->lock);
    uintptr_t st = fut__load(&s->state, FUT__RELAXED);
    for (;;) {
        if (st & FUT__SEM_CLOSED) {
            fut__lock_release(&s->lock);
            fut__store(&w->st, FUT__SEMW_CLOSED, FUT__RELAXED);
            return FUT_READY;
        }
        if (!(st & FAST_BLOCKERS) && fut__sem_permits(s, st) >= n) {
            /* Acquire: pairs with the releases. */
            if (fut__cas(&s->state, &st, st - n * FUT__SEM_ONE, FUT__ACQUIRE,
                         FUT__RELAXED)) {
                fut__lock_release(&s->lock);
                fut__store(&w->st, FUT__SEMW_GRANTED, FUT__RELAXED);
                return FUT_READY;
            }
            continue;
        }
        if ((st & FUT__SEM_WAITERS) ||
            fut__cas(&s->state, &st, st | FUT__SEM_WAITERS, FUT__RELAXED,
                     FUT__RELAXED))
            break;
    }
    fut__waker_store(&w->waker, fut_waker_clone(&cx->waker));
    fut__store(&w->st, (n << 2) | FUT__SEMW_QUEUED, FUT__RELAXED);
    fut__list_push_back(&s->waiters, &w->link);
    if (fut__sem_permits(s, st) == 0) {
        /* 'st' had WAITERS and no free permit: a release after it in the
         * word's order sees WAITERS (only cleared under the lock we hold)
         * and assigns once we unlock; one before it left nothing. So
         * there is nothing to hand out now (the common case of a lock
         * convoy: every locker queues behind a holder). */
        fut__lock_release(&s->lock);
        return FUT_PENDING;
    }
    /* Permits may be free (a release raced with us): hand them out; this
     * may satisfy us at once (then our own waker is woken: harmless). */
    assign_and_unlock(s);
    uintptr_t now = fut__load(&w->st, FUT__ACQUIRE); /* pairs: assign */
    return FUT__SEMW_TAG(now) == FUT__SEMW_QUEUED ? FUT_PENDING : FUT_READY;
}

/* A queued waiter polled again: refresh its waker under the lock. */
__attribute__((noinline)) static int
poll_queued(struct fut__sem *s, struct fut__wnode *w, struct fut_context *cx)
{
    struct fut_waker old = FUT_WAKER_NONE;
    fut__lock_acquire(&s->lock);
    if (FUT__SEMW_TAG(fut__load(&w->st, FUT__RELAXED)) != FUT__SEMW_QUEUED) {
        fut__lock_release(&s->lock);
        return FUT_READY;
    }
    if (!fut_waker_will_wake(&w->waker, &cx->waker)) {
        old = w->waker;
        fut__waker_store(&w->waker, fut_waker_clone(&cx->waker));
    }
    fut__lock_release(&s->lock);
    fut_waker_drop(&old);
    return FUT_PENDING;
}

static inline int sem_poll(struct fut__sem *s, struct fut__wnode *w,
                           struct fut_context *cx)
{
    /* Acquire: pairs with the release store of a granter / closer. */
    uintptr_t st = fut__load(&w->st, FUT__ACQUIRE);
    switch (FUT__SEMW_TAG(st)) {
    case FUT__SEMW_GRANTED:
    case FUT__SEMW_CLOSED:
        return FUT_READY;
    case FUT__SEMW_QUEUED:
        return poll_queued(s, w, cx);
    default:
        break;
    }
    int r = w->aux ? fut__sem_try_acquire(s, w->aux) : 0;
    if (r == 0) {
        fut__store(&w->st, FUT__SEMW_GRANTED, FUT__RELAXED);
        return FUT_READY;
    }
    if (r == FUT_ECLOSED) {
        fut__store(&w->st, FUT__SEMW_CLOSED, FUT__RELAXED);
        return FUT_READY;
    }
    return enqueue(s, w, cx);
}

int fut__sem_poll(struct fut__sem *s, struct fut__wnode *w,
                  struct fut_context *cx)
{
    return sem_poll(s, w, cx);
}

int fut__sem_poll_coop(struct fut__sem *s, struct fut__wnode *w,
                       struct fut_context *cx)
{
    int fresh =
        FUT__SEMW_TAG(fut__load(&w->st, FUT__RELAXED)) == FUT__SEMW_IDLE;
    /* A fresh acquire spends its budget unit before it tries: running out
     * must not leave the permits held across the yield (a holder that
     * yields makes every other acquirer queue - a lock convoy). */
    if (fresh && !fut_coop_proceed(cx))
        return FUT_PENDING;
    if (sem_poll(s, w, cx) == FUT_PENDING)
        return FUT_PENDING;
    /* Granted from the queue: the grant is kept across a coop PENDING
     * (the next poll is READY at once; a drop hands it on). */
    if (!fresh && !fut_coop_proceed(cx))
        return FUT_PENDING;
    return FUT_READY;
}

void fut__sem_cancel(struct fut__sem *s, struct fut__wnode *w)
{
    uintptr_t st = fut__load(&w->st, FUT__ACQUIRE); /* pairs: granter */
    if (FUT__SEMW_TAG(st) == FUT__SEMW_QUEUED) {
        fut__lock_acquire(&s->lock);
        st = fut__load(&w->st, FUT__RELAXED);
        if (FUT__SEMW_TAG(st) == FUT__SEMW_QUEUED) {
            uintptr_t partial = w->aux - (st >> 2);
            struct fut_waker old = w->waker;
            w->waker.vt = 0;
            fut__list_remove(&w->link);
            fut__store(&w->st, FUT__SEMW_IDLE, FUT__RELAXED);
            if (partial)
                fut__fetch_add(&s->state, partial * FUT__SEM_ONE,
                               FUT__RELEASE);
            /* The next waiter may be satisfiable now (our partial grant,
             * or we were the head blocking it); clears WAITERS if we were
             * the last. */
            assign_and_unlock(s);
            fut_waker_drop(&old);
            return;
        }
        fut__lock_release(&s->lock);
    }
    if (FUT__SEMW_TAG(st) == FUT__SEMW_GRANTED) {
        fut__store(&w->st, FUT__SEMW_IDLE, FUT__RELAXED);
#ifndef FUT_MC_BUG_SEM_CANCEL_LEAK
        fut__sem_release(s, w->aux); /* passes the grant on */
#endif
        return;
    }
    fut__store(&w->st, FUT__SEMW_IDLE, FUT__RELAXED);
}

/* ---------------------------------------------------- public semaphore */

static struct fut__sem *sem_of(struct fut_semaphore *s)
{
    return (struct fut__sem *)(void *)s;
}

#define SEM_PMASK (UINTPTR_MAX >> FUT__SEM_SHIFT)

void fut_semaphore_init(struct fut_semaphore *s, uintptr_t permits)
{
    FUT_ARG_VOID(s, "'s' is NULL");
    FUT_CHECK(permits <= FUT_SEMAPHORE_MAX_PERMITS);
    fut__sem_init(sem_of(s), permits, SEM_PMASK);
}

void fut_semaphore_fini(struct fut_semaphore *s)
{
    FUT_ARG_VOID(s, "'s' is NULL");
    FUT_ASSERT(fut__list_empty(&sem_of(s)->waiters));
    (void)s;
}

uintptr_t fut_semaphore_available(const struct fut_semaphore *cs)
{
    FUT_ARG_OR(cs, "'s' is NULL", 0);
    struct fut__sem *s = sem_of((struct fut_semaphore *)cs);
    return fut__sem_permits(s, fut__load(&s->state, FUT__RELAXED));
}

int fut_semaphore_try_acquire(struct fut_semaphore *s, uintptr_t n,
                              struct fut_semaphore_permit *out)
{
    FUT_ARG_CHECK(s, "'s' is NULL");
    FUT_ARG_CHECK(out, "'out' is NULL");
    out->sem = NULL;
    out->n = 0;
    if (n > FUT_SEMAPHORE_MAX_PERMITS)
        return FUT_EAGAIN;
    int r = n ? fut__sem_try_acquire(sem_of(s), n) : 0;
    if (r == 0) {
        out->sem = s;
        out->n = n;
    }
    return r;
}

int fut_semaphore_release(struct fut_semaphore_permit *p)
{
    FUT_ARG_CHECK(p, "'p' is NULL");
    if (!p->sem)
        return FUT_EINVAL;
    struct fut__sem *s = sem_of(p->sem);
    uintptr_t n = p->n;
    p->sem = NULL;
    p->n = 0;
    if (n)
        fut__sem_release(s, n);
    return 0;
}

void fut_semaphore_forget(struct fut_semaphore_permit *p)
{
    FUT_ARG_VOID(p, "'p' is NULL");
    p->sem = NULL;
    p->n = 0;
}

int fut_semaphore_add_permits(struct fut_semaphore *s, uintptr_t n)
{
    FUT_ARG_CHECK(s, "'s' is NULL");
    if (n > FUT_SEMAPHORE_MAX_PERMITS)
        return FUT_EINVAL;
    /* Counts permits queued waiters were partly granted as free: the
     * bound is approximate by that much, never exceeded by the word. */
    return fut__sem_release_max(sem_of(s), n, FUT_SEMAPHORE_MAX_PERMITS);
}

void fut_semaphore_close(struct fut_semaphore *s)
{
    FUT_ARG_VOID(s, "'s' is NULL");
    fut__sem_close(sem_of(s));
}

int fut_semaphore_is_closed(const struct fut_semaphore *cs)
{
    FUT_ARG_OR(cs, "'s' is NULL", 0);
    struct fut__sem *s = sem_of((struct fut_semaphore *)cs);
    return (fut__load(&s->state, FUT__RELAXED) & FUT__SEM_CLOSED) != 0;
}

/* ------------------------------------------------------ acquire future */

static int acquire_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_semaphore_acquire *a = (struct fut_semaphore_acquire *)f;
    struct fut__wnode *w = fut__wnode_of(&a->w);
    if (fut__sem_poll_coop(sem_of(a->sem), w, cx) == FUT_PENDING)
        return FUT_PENDING;
    uintptr_t st = fut__load(&w->st, FUT__RELAXED);
    fut__store(&w->st, FUT__SEMW_IDLE, FUT__RELAXED);
    if (FUT__SEMW_TAG(st) == FUT__SEMW_CLOSED) {
        a->result = FUT_ECLOSED;
        return FUT_READY;
    }
    a->result = 0;
    if (w->aux) {
        a->permit.sem = a->sem;
        a->permit.n = w->aux;
    }
    return FUT_READY;
}

static void acquire_drop(struct fut_future *f)
{
    struct fut_semaphore_acquire *a = (struct fut_semaphore_acquire *)f;
    fut__sem_cancel(sem_of(a->sem), fut__wnode_of(&a->w));
}

static const struct fut_future_vtable acquire_vt = {
    acquire_poll, acquire_drop, "semaphore_acquire", 0};

void fut_semaphore_acquire_init(struct fut_semaphore_acquire *f,
                                struct fut_semaphore *s, uintptr_t n)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(s, "'s' is NULL");
    FUT_CHECK(n <= FUT_SEMAPHORE_MAX_PERMITS);
    fut_future_init(&f->base, &acquire_vt);
    f->sem = s;
    fut__semw_init(fut__wnode_of(&f->w), n);
    f->result = FUT_ECLOSED;
    f->permit.sem = NULL;
    f->permit.n = 0;
}
