/* SPDX-License-Identifier: MIT */
/* Cancel tokens (include/fut/cancel.h): a sticky flag, a list of waiting
 * futures and a tree of child tokens.
 *
 * Rules of a token:
 *   'state'     0, then CANCELLED for ever. Written only under 'lock'
 *               (release store); read without it (acquire) by
 *               fut_token_is_cancelled and the wait future's fast path.
 *   'waiters'   fut__wnode of fut_token_wait futures, under 'lock'. A node
 *               is QUEUED while linked; cancel unlinks every node, takes
 *               its waker and stores DONE into it (release) - after that
 *               store the node is the waiting future's alone again.
 *   'children'  child tokens (their 'sib' link), under this token's lock;
 *   'parent'    set at init, cleared by the parent's fini (under the
 *               parent's lock, which is also what fini of the child takes
 *               to unlink itself).
 * Transitions:
 *   cancel:     lock; if CANCELLED: done. Store CANCELLED; wake every
 *               waiter (fut__wake_all_locked drops the lock while waking a
 *               batch: a waiter that registers meanwhile sees CANCELLED
 *               under the lock and does not queue); then, still holding
 *               the lock, cancel each child (lock order: parent before
 *               child, so a child's fini - which needs our lock - cannot
 *               free it under us).
 *   init_child: under the parent's lock: link into 'children' and copy
 *               the parent's flag, so a child made during or after the
 *               parent's cancel starts cancelled.
 * No lost wakeup (C5): a waiter registers under 'lock' after checking
 * 'state' under it; cancel stores 'state' under the same lock before it
 * walks the list.
 */
#include "fut/cancel.h"
#include "sync/sync_internal.h"

enum { CANCELLED = 1 };
/* 'st' of a waiter node. */
enum { W_IDLE = 0, W_QUEUED = 1, W_DONE = 2 };

struct tok {
    fut__aword state;          /* 0 or CANCELLED (see the rules) */
    struct fut__lock lock;     /* guards the lists and 'parent' links */
    struct fut__list waiters;  /* fut__wnode.link */
    struct fut__list children; /* struct tok.sib */
    struct fut__list sib;      /* link in the parent's 'children' */
    struct tok *parent;        /* NULL: none (or detached) */
};

_Static_assert(sizeof(struct tok) <= sizeof(struct fut_token),
               "struct fut_token too small");

static struct tok *tok_of(const struct fut_token *t)
{
    return (struct tok *)(void *)(uintptr_t)t;
}

static void tok_init(struct tok *k)
{
    fut__aword_init(&k->state, 0);
    fut__lock_init(&k->lock);
    fut__list_init(&k->waiters);
    fut__list_init(&k->children);
    fut__list_init(&k->sib);
    k->parent = NULL;
}

void fut_token_init(struct fut_token *t)
{
    FUT_ARG_VOID(t, "'t' is NULL");
    tok_init(tok_of(t));
}

void fut_token_init_child(struct fut_token *t, struct fut_token *parent)
{
    FUT_ARG_VOID(t, "'t' is NULL");
    FUT_ARG_VOID(parent, "'parent' is NULL");
    struct tok *k = tok_of(t), *p = tok_of(parent);
    tok_init(k);
    fut__lock_acquire(&p->lock);
    k->parent = p;
    fut__list_push_back(&p->children, &k->sib);
    /* Relaxed: we hold the parent's lock, under which its flag is
     * written; our own flag is published by the lock release below. */
    if (fut__load(&p->state, FUT__RELAXED) & CANCELLED)
        fut__store(&k->state, CANCELLED, FUT__RELAXED);
    fut__lock_release(&p->lock);
}

/* With k's lock held by the caller: cancels k and its subtree. */
static void cancel_locked(struct tok *k)
{
    if (fut__load(&k->state, FUT__RELAXED) & CANCELLED)
        return;
    /* Release: pairs with the acquire load of fut_token_is_cancelled and
     * of the wait future's poll: what the canceller wrote before is
     * visible to whoever sees the flag. */
    fut__store(&k->state, CANCELLED, FUT__RELEASE);
    fut__wake_all_locked(&k->lock, &k->waiters, W_DONE);
    for (struct fut__list *l = k->children.next; l != &k->children;
         l = l->next) {
        struct tok *c = fut__container_of(l, struct tok, sib);
        fut__lock_acquire(&c->lock);
        cancel_locked(c);
        fut__lock_release(&c->lock);
    }
}

void fut_token_cancel(struct fut_token *t)
{
    FUT_ARG_VOID(t, "'t' is NULL");
    struct tok *k = tok_of(t);
    /* Acquire: pairs with the release store of cancel_locked. */
    if (fut__load(&k->state, FUT__ACQUIRE) & CANCELLED)
        return;
    fut__lock_acquire(&k->lock);
    cancel_locked(k);
    fut__lock_release(&k->lock);
}

int fut_token_is_cancelled(const struct fut_token *t)
{
    FUT_ARG_OR(t, "'t' is NULL", 0);
    /* Acquire: pairs with cancel_locked's release store. */
    return (fut__load(&tok_of(t)->state, FUT__ACQUIRE) & CANCELLED) != 0;
}

void fut_token_fini(struct fut_token *t)
{
    FUT_ARG_VOID(t, "'t' is NULL");
    struct tok *k = tok_of(t);
    /* Detach from the parent first: after this no cancel reaches us. The
     * parent pointer is read under the parent's lock only after we know
     * the parent exists (it outlives us, by the rules). */
    struct tok *p = k->parent;
    if (p) {
        fut__lock_acquire(&p->lock);
        if (k->parent) {
            fut__list_remove(&k->sib);
            k->parent = NULL;
        }
        fut__lock_release(&p->lock);
    }
    fut__lock_acquire(&k->lock);
    FUT_ASSERT(fut__list_empty(&k->waiters));
    while (!fut__list_empty(&k->children)) {
        struct fut__list *l = k->children.next;
        struct tok *c = fut__container_of(l, struct tok, sib);
        fut__list_remove(l);
        c->parent = NULL;
    }
    fut__lock_release(&k->lock);
}

/* ------------------------------------------------------------ wait future */

static int wait_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_token_wait *w = (struct fut_token_wait *)f;
    struct tok *k = tok_of(w->token);
    struct fut__wnode *n = fut__wnode_of(&w->w);
    /* Acquire: pairs with the release store of 'st' by the canceller
     * (fut__wake_all_locked): the node is ours again. */
    if (fut__load(&n->st, FUT__ACQUIRE) == W_DONE)
        goto ready;
    fut__lock_acquire(&k->lock);
    if (fut__load(&k->state, FUT__RELAXED) & CANCELLED) {
        /* Cancelled, and the canceller has not reached our node (or we
         * never queued): leave the list ourselves. */
        if (fut__list_linked(&n->link))
            fut__list_remove(&n->link);
        struct fut_waker old = n->waker;
        n->waker.vt = NULL;
        fut__store(&n->st, W_DONE, FUT__RELAXED);
        fut__lock_release(&k->lock);
        fut_waker_drop(&old);
        goto ready;
    }
    fut_waker_set(&n->waker, &cx->waker);
    if (!fut__list_linked(&n->link)) {
        fut__list_push_back(&k->waiters, &n->link);
        fut__store(&n->st, W_QUEUED, FUT__RELAXED);
    }
    fut__lock_release(&k->lock);
    return FUT_PENDING;
ready:
    if (!fut_coop_proceed(cx))
        return FUT_PENDING; /* changed nothing: st stays DONE */
    w->result = 0;
    return FUT_READY;
}

static void wait_drop(struct fut_future *f)
{
    struct fut_token_wait *w = (struct fut_token_wait *)f;
    struct fut__wnode *n = fut__wnode_of(&w->w);
    /* Acquire: as in wait_poll. IDLE: never queued; DONE: the canceller
     * took the waker. */
    if (fut__load(&n->st, FUT__ACQUIRE) != W_QUEUED)
        return;
    struct tok *k = tok_of(w->token);
    fut__lock_acquire(&k->lock);
    if (fut__list_linked(&n->link))
        fut__list_remove(&n->link);
    struct fut_waker old = n->waker;
    n->waker.vt = NULL;
    fut__lock_release(&k->lock);
    fut_waker_drop(&old);
}

static const struct fut_future_vtable wait_vt = {wait_poll, wait_drop,
                                                 "token_wait", NULL};

void fut_token_wait_init(struct fut_token_wait *f, struct fut_token *token)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(token, "'token' is NULL");
    fut_future_init(&f->base, &wait_vt);
    f->token = token;
    fut__wnode_init(fut__wnode_of(&f->w), W_IDLE);
    f->result = 0;
}

/* ----------------------------------------------------- until_cancelled */

static int until_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_until_cancelled *u = (struct fut_until_cancelled *)f;
    /* The token first (biased): a cancelled run stops even if the inner
     * future would have been ready in this poll. One acquire load (pairs
     * with cancel_locked's release store) while it is not cancelled: the
     * waiter is registered only once 'inner' is PENDING, so an inner that
     * is READY at this poll costs no lock (the echo's read, woken by its
     * data, is). */
    if (fut_token_is_cancelled(u->wait.token))
        goto cancelled;
    if (fut_poll(u->inner, cx) == FUT_READY) {
        fut_drop(&u->wait.base); /* unregister now: the token may live */
        u->result = 0;
        return FUT_READY;
    }
    /* Registered under the token's lock after its flag is checked under
     * it: a cancel during inner's poll is seen here or wakes us. */
    if (fut_poll(&u->wait.base, cx) == FUT_PENDING)
        return FUT_PENDING;
cancelled:
    fut_drop(&u->wait.base); /* a waiter the canceller has not reached */
    fut_drop(u->inner);
    u->result = FUT_ECANCELED;
    return FUT_READY;
}

static void until_drop(struct fut_future *f)
{
    struct fut_until_cancelled *u = (struct fut_until_cancelled *)f;
    fut_drop(&u->wait.base);
    fut_drop(u->inner);
}

static size_t until_children(struct fut_future *f, struct fut_future **out,
                             size_t max)
{
    struct fut_until_cancelled *u = (struct fut_until_cancelled *)f;
    if (max >= 1)
        out[0] = u->inner;
    if (max >= 2)
        out[1] = &u->wait.base;
    return 2;
}

static const struct fut_future_vtable until_vt = {
    until_poll, until_drop, "until_cancelled", until_children};

void fut_until_cancelled_init(struct fut_until_cancelled *u,
                              struct fut_future *inner,
                              struct fut_token *token)
{
    FUT_ARG_VOID(u, "'u' is NULL");
    FUT_ARG_VOID(inner, "'inner' is NULL");
    FUT_ARG_VOID(token, "'token' is NULL");
    fut_future_init(&u->base, &until_vt);
    u->inner = inner;
    fut_token_wait_init(&u->wait, token);
    u->result = FUT_ECANCELED;
}
