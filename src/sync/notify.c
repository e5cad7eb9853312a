/* SPDX-License-Identifier: MIT */
/* Notify (Tokio's): notify_one wakes the oldest waiter or stores one
 * permit; notify_waiters wakes every waiter that exists when it is called.
 *
 * Rules of 'state' (one fut__aword): bits 0-1 are the tag, the rest the
 * number of notify_waiters calls so far ('gen'):
 *
 *   EMPTY     no waiter, no permit
 *   WAITING   the waiter list is not empty (set and cleared under 'lock',
 *             so under the lock WAITING <=> !empty(waiters))
 *   NOTIFIED  a permit is stored (never together with WAITING)
 *
 *   - notify_one without waiters: CAS EMPTY -> NOTIFIED (no lock); with
 *     WAITING: under the lock pop the head, mark it ONE, wake it after
 *     unlocking.
 *   - a fut_notified remembers 'gen' at init. Its first poll is READY if
 *     gen moved (a notify_waiters came after its init) or if it can CAS
 *     NOTIFIED -> EMPTY (takes the permit); else, under the lock, it sets
 *     WAITING by a CAS from the EMPTY it saw - never a blind store, which
 *     could erase a permit notify_one's lock-free path stored meanwhile -
 *     and queues.
 *   - notify_waiters: under the lock, gen += 1, WAITING -> EMPTY, and the
 *     whole list is moved aside and woken in batches (marked ALL). A
 *     queued future polled in between sees gen moved and unlinks itself.
 *   - dropping a future that was marked ONE but has not returned READY
 *     passes the notification on (fut_notify_one again): nothing is lost.
 *
 * Node 'st' (fut__wnode): INIT, QUEUED, ONE, ALL, DONE; ONE/ALL are
 * stored (release) by the notifier after it unlinked the node and took
 * its waker - its last touch.
 *
 * Seeded bugs (model-checker builds): NOTIFY_BLIND_WAITING sets WAITING
 * with a blind store (the bug the thread test found); NOTIFY_NO_FORWARD
 * drops a chosen notification with its future. test/mc/model_notify.c
 * catches both as lost wakeups.
 *
 * Orderings: the permit CAS pair is release (notify) / acquire (taker),
 * and the lock orders everything else, so what the notifier did before
 * notifying happens before the notified future returns READY.
 */
#include "sync/sync_internal.h"

enum { EMPTY = 0, WAITING = 1, NOTIFIED = 2, TAG = 3, GEN_ONE = 4 };
enum { W_INIT = 0, W_QUEUED = 1, W_ONE = 2, W_ALL = 3, W_DONE = 4 };

struct fut__notify {
    fut__aword state;
    struct fut__lock lock;
    struct fut__list waiters;
};

_Static_assert(sizeof(struct fut__notify) <= sizeof(struct fut_notify),
               "struct fut_notify too small");

static struct fut__notify *notify_of(struct fut_notify *n)
{
    return (struct fut__notify *)(void *)n;
}

void fut_notify_init(struct fut_notify *pn)
{
    FUT_ARG_VOID(pn, "'n' is NULL");
    struct fut__notify *n = notify_of(pn);
    fut__aword_init(&n->state, EMPTY);
    fut__lock_init(&n->lock);
    fut__list_init(&n->waiters);
}

void fut_notify_fini(struct fut_notify *pn)
{
    FUT_ARG_VOID(pn, "'n' is NULL");
    FUT_ASSERT(fut__list_empty(&notify_of(pn)->waiters));
    (void)pn;
}

/* Under the lock: sets the tag of 'state' to 'tag', keeping gen. */
static void set_tag_locked(struct fut__notify *n, uintptr_t tag)
{
    uintptr_t s = fut__load(&n->state, FUT__RELAXED);
    /* Release: a NOTIFIED set here pairs with the taker's acquire CAS. */
    while (!fut__cas(&n->state, &s, (s & ~(uintptr_t)TAG) | tag, FUT__RELEASE,
                     FUT__RELAXED))
        ;
}

void fut_notify_one(struct fut_notify *pn)
{
    FUT_ARG_VOID(pn, "'n' is NULL");
    struct fut__notify *n = notify_of(pn);
    uintptr_t s = fut__load(&n->state, FUT__RELAXED);
    while ((s & TAG) != WAITING) {
        if ((s & TAG) == NOTIFIED)
            return; /* permits coalesce */
        /* Release: pairs with the taker's acquire CAS. */
        if (fut__cas(&n->state, &s, s | NOTIFIED, FUT__RELEASE, FUT__RELAXED))
            return;
    }
    fut__lock_acquire(&n->lock);
    struct fut__list *l = fut__list_front(&n->waiters);
    if (!l) {
        /* The waiters left meanwhile: store the permit. */
        set_tag_locked(n, NOTIFIED);
        fut__lock_release(&n->lock);
        return;
    }
    struct fut__wnode *w = fut__wnode_from_link(l);
    struct fut_waker wk = w->waker;
    w->waker.vt = 0;
    fut__list_remove(l);
    /* Release: our last touch of the node (pairs: the poller). */
    fut__store(&w->st, W_ONE, FUT__RELEASE);
    if (fut__list_empty(&n->waiters))
        set_tag_locked(n, EMPTY);
    fut__lock_release(&n->lock);
    fut_waker_wake(&wk);
}

void fut_notify_waiters(struct fut_notify *pn)
{
    FUT_ARG_VOID(pn, "'n' is NULL");
    struct fut__notify *n = notify_of(pn);
    fut__lock_acquire(&n->lock);
    uintptr_t s = fut__load(&n->state, FUT__RELAXED);
    uintptr_t ns;
    do {
        ns = s + GEN_ONE;
        if ((ns & TAG) == WAITING)
            ns &= ~(uintptr_t)TAG; /* the list is moved aside below */
        /* Release: a poller that sees the new gen sees what we did. */
    } while (!fut__cas(&n->state, &s, ns, FUT__RELEASE, FUT__RELAXED));
    fut__wake_all_locked(&n->lock, &n->waiters, W_ALL);
    fut__lock_release(&n->lock);
}

/* ----------------------------------------------------------- the future */

static int notified_done(struct fut_notified *f, struct fut__wnode *w,
                         struct fut_context *cx)
{
    if (!fut_coop_proceed(cx))
        return FUT_PENDING; /* 'st' stays ONE/ALL: next poll is READY */
    fut__store(&w->st, W_DONE, FUT__RELAXED);
    (void)f;
    return FUT_READY;
}

/* First poll: take the permit or see a notify_waiters, else queue. */
static int notified_first(struct fut_notified *f, struct fut__notify *n,
                          struct fut__wnode *w, struct fut_context *cx)
{
    int spent = 0; /* fut_coop_proceed already said yes */
    for (;;) {
        /* Acquire: pairs with the notifier's release CAS. */
        uintptr_t s = fut__load(&n->state, FUT__ACQUIRE);
        if ((s >> 2) != f->gen || (s & TAG) == NOTIFIED) {
            if (!spent && !fut_coop_proceed(cx))
                return FUT_PENDING; /* nothing taken */
            spent = 1;
            /* Take the permit (acquire: pairs with notify_one). */
            if ((s >> 2) == f->gen &&
                !fut__cas(&n->state, &s, s & ~(uintptr_t)TAG, FUT__ACQUIRE,
                          FUT__RELAXED))
                continue;
            fut__store(&w->st, W_DONE, FUT__RELAXED);
            return FUT_READY;
        }
        fut__lock_acquire(&n->lock);
        s = fut__load(&n->state, FUT__ACQUIRE);
        /* Set WAITING by CAS from the state just checked: notify_one's
         * fast path may store the permit (EMPTY -> NOTIFIED, no lock)
         * meanwhile, and overwriting it would lose it. */
#ifndef FUT_MC_BUG_NOTIFY_BLIND_WAITING
        while ((s >> 2) == f->gen && (s & TAG) != NOTIFIED &&
               (s & TAG) != WAITING &&
               !fut__cas(&n->state, &s, (s & ~(uintptr_t)TAG) | WAITING,
                         FUT__ACQUIRE, FUT__ACQUIRE))
            ;
#else
        if ((s >> 2) == f->gen && (s & TAG) == EMPTY) {
            set_tag_locked(n, WAITING); /* the bug: may erase a permit */
            s = (s & ~(uintptr_t)TAG) | WAITING;
        }
#endif
        if ((s >> 2) != f->gen || (s & TAG) == NOTIFIED) {
            fut__lock_release(&n->lock);
            continue;
        }
        fut__waker_store(&w->waker, fut_waker_clone(&cx->waker));
        fut__store(&w->st, W_QUEUED, FUT__RELAXED);
        fut__list_push_back(&n->waiters, &w->link);
        fut__lock_release(&n->lock);
        return FUT_PENDING;
    }
}

static int notified_poll(struct fut_future *ff, struct fut_context *cx)
{
    struct fut_notified *f = (struct fut_notified *)ff;
    struct fut__notify *n = notify_of(f->n);
    struct fut__wnode *w = fut__wnode_of(&f->w);
    /* Acquire: pairs with the notifier's release store of 'st'. */
    uintptr_t st = fut__load(&w->st, FUT__ACQUIRE);
    if (st == W_ONE || st == W_ALL)
        return notified_done(f, w, cx);
    if (st == W_INIT)
        return notified_first(f, n, w, cx);
    /* Queued: re-register, unless a notify_waiters moved us aside. */
    struct fut_waker old = FUT_WAKER_NONE;
    fut__lock_acquire(&n->lock);
    st = fut__load(&w->st, FUT__RELAXED);
    if (st != W_QUEUED) {
        fut__lock_release(&n->lock);
        return notified_done(f, w, cx);
    }
    if ((fut__load(&n->state, FUT__RELAXED) >> 2) != f->gen) {
        /* On a notify_waiters' local list: take ourselves off it. */
        old = w->waker;
        w->waker.vt = 0;
        fut__list_remove(&w->link);
        fut__store(&w->st, W_ALL, FUT__RELAXED);
        fut__lock_release(&n->lock);
        fut_waker_drop(&old);
        return notified_done(f, w, cx);
    }
    if (!fut_waker_will_wake(&w->waker, &cx->waker)) {
        old = w->waker;
        fut__waker_store(&w->waker, fut_waker_clone(&cx->waker));
    }
    fut__lock_release(&n->lock);
    fut_waker_drop(&old);
    return FUT_PENDING;
}

static void notified_drop(struct fut_future *ff)
{
    struct fut_notified *f = (struct fut_notified *)ff;
    struct fut__notify *n = notify_of(f->n);
    struct fut__wnode *w = fut__wnode_of(&f->w);
    uintptr_t st = fut__load(&w->st, FUT__ACQUIRE); /* pairs: notifier */
    if (st == W_QUEUED) {
        struct fut_waker old = FUT_WAKER_NONE;
        fut__lock_acquire(&n->lock);
        st = fut__load(&w->st, FUT__RELAXED);
        if (st == W_QUEUED) {
            old = w->waker;
            w->waker.vt = 0;
            fut__list_remove(&w->link);
            st = W_DONE;
            /* Our list may be the main one (not a notify_waiters' local
             * list): keep WAITING <=> non-empty. */
            if (fut__list_empty(&n->waiters) &&
                (fut__load(&n->state, FUT__RELAXED) & TAG) == WAITING)
                set_tag_locked(n, EMPTY);
        }
        fut__lock_release(&n->lock);
        fut_waker_drop(&old);
    }
    fut__store(&w->st, W_DONE, FUT__RELAXED);
#ifndef FUT_MC_BUG_NOTIFY_NO_FORWARD
    if (st == W_ONE)
        fut_notify_one(f->n); /* chosen but never observed: pass it on */
#endif
}

static const struct fut_future_vtable notified_vt = {
    notified_poll, notified_drop, "notified", 0};

void fut_notified_init(struct fut_notified *f, struct fut_notify *pn)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(pn, "'n' is NULL");
    fut_future_init(&f->base, &notified_vt);
    f->n = pn;
    f->gen = fut__load(&notify_of(pn)->state, FUT__ACQUIRE) >> 2;
    fut__wnode_init(fut__wnode_of(&f->w), W_INIT);
}
