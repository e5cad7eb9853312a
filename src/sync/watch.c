/* SPDX-License-Identifier: MIT */
/* The watch channel: one value and a version number; receivers remember
 * the version they saw and wait for a newer one.
 *
 * Rules: everything but 'refs' is under 'lock' (values are copied in and
 * out under it: never torn). A receiver's 'seen' is the receiver's (it
 * moves only in borrow_and_update and in the poll of a changed future
 * that returns READY). A send bumps 'version' and wakes every queued
 * changed future (batches, fut__wake_all_locked); they re-check under the
 * lock. 'refs' counts handles; the last frees the block.
 */
#include <string.h>

#include "fut/chan.h"
#include "sync/sync_internal.h"

struct fut__watch {
    struct fut__lock lock;
    size_t size;
    size_t alloc_size;
    uint64_t version;
    size_t tx_count;
    size_t rx_count;
    fut__aword refs;
    struct fut__list waiters;
    unsigned char *value; /* 'size' bytes after the struct */
};

static void ref_get(struct fut__watch *ch)
{
    fut__fetch_add(&ch->refs, 1, FUT__RELAXED); /* caller holds one */
}

static void ref_put(struct fut__watch *ch)
{
    /* Acq_rel: every handle's last access happens before the free. */
    if (fut__fetch_sub(&ch->refs, 1, FUT__ACQ_REL) == 1)
        fut__free(ch, ch->alloc_size);
}

int fut_watch_new(size_t size, const void *init, struct fut_watch_tx *tx,
                  struct fut_watch_rx *rx)
{
    FUT_ARG_CHECK(init, "'init' is NULL");
    FUT_ARG_CHECK(tx, "'tx' is NULL");
    FUT_ARG_CHECK(rx, "'rx' is NULL");
    tx->ch = NULL;
    rx->ch = NULL;
    rx->seen = 0;
    if (size == 0 || size > SIZE_MAX - sizeof(struct fut__watch))
        return FUT_EINVAL;
    size_t bytes = sizeof(struct fut__watch) + size;
    struct fut__watch *ch = fut__alloc(bytes);
    if (!ch)
        return FUT_ENOMEM;
    fut__lock_init(&ch->lock);
    ch->size = size;
    ch->alloc_size = bytes;
    ch->version = 0;
    ch->tx_count = 1;
    ch->rx_count = 1;
    fut__aword_init(&ch->refs, 2);
    fut__list_init(&ch->waiters);
    ch->value = (unsigned char *)(ch + 1);
    memcpy(ch->value, init, size);
    tx->ch = ch;
    rx->ch = ch;
    tx->gen = FUT_HANDLE_NEW(ch);
    rx->gen = FUT_HANDLE_NEW(ch);
    return 0;
}

int fut_watch_tx_clone(const struct fut_watch_tx *tx,
                       struct fut_watch_tx *out)
{
    FUT_ARG_CHECK(tx, "'tx' is NULL");
    FUT_ARG_CHECK(out, "'out' is NULL");
    struct fut__watch *ch = tx->ch;
    out->ch = ch;
    out->gen = 0;
    if (!ch)
        return FUT_EINVAL;
    FUT_HANDLE_CHECK(ch, tx->gen, __func__);
    fut__lock_acquire(&ch->lock);
    ch->tx_count++;
    fut__lock_release(&ch->lock);
    ref_get(ch);
    out->gen = FUT_HANDLE_NEW(ch);
    return 0;
}

void fut_watch_tx_drop(struct fut_watch_tx *tx)
{
    FUT_ARG_VOID(tx, "'tx' is NULL");
    struct fut__watch *ch = tx->ch;
    if (!ch)
        return;
    FUT_HANDLE_END(ch, tx->gen, __func__);
    tx->ch = NULL;
    fut__lock_acquire(&ch->lock);
    if (--ch->tx_count == 0)
        fut__wake_all_locked(&ch->lock, &ch->waiters, 0);
    fut__lock_release(&ch->lock);
    ref_put(ch);
}

/* Adds a receiver under the lock; its 'seen' is the current version. */
static int rx_new(struct fut__watch *ch, struct fut_watch_rx *out)
{
    out->ch = ch;
    out->seen = 0;
    out->gen = 0;
    if (!ch)
        return FUT_EINVAL;
    fut__lock_acquire(&ch->lock);
    ch->rx_count++;
    out->seen = ch->version;
    fut__lock_release(&ch->lock);
    ref_get(ch);
    out->gen = FUT_HANDLE_NEW(ch);
    return 0;
}

int fut_watch_subscribe(const struct fut_watch_tx *tx,
                        struct fut_watch_rx *out)
{
    FUT_ARG_CHECK(tx, "'tx' is NULL");
    FUT_ARG_CHECK(out, "'out' is NULL");
    if (tx->ch)
        FUT_HANDLE_CHECK(tx->ch, tx->gen, __func__);
    return rx_new(tx->ch, out);
}

int fut_watch_rx_clone(const struct fut_watch_rx *rx,
                       struct fut_watch_rx *out)
{
    FUT_ARG_CHECK(rx, "'rx' is NULL");
    FUT_ARG_CHECK(out, "'out' is NULL");
    if (rx->ch)
        FUT_HANDLE_CHECK(rx->ch, rx->gen, __func__);
    int r = rx_new(rx->ch, out);
    out->seen = rx->seen;
    return r;
}

void fut_watch_rx_drop(struct fut_watch_rx *rx)
{
    FUT_ARG_VOID(rx, "'rx' is NULL");
    struct fut__watch *ch = rx->ch;
    if (!ch)
        return;
    FUT_HANDLE_END(ch, rx->gen, __func__);
    rx->ch = NULL;
    fut__lock_acquire(&ch->lock);
    ch->rx_count--;
    fut__lock_release(&ch->lock);
    ref_put(ch);
}

/* Under the lock: stores 'value' (old one to 'old' if not NULL), wakes. */
static void store_locked(struct fut__watch *ch, const void *value, void *old)
{
    if (old)
        memcpy(old, ch->value, ch->size);
    memcpy(ch->value, value, ch->size);
    ch->version++;
    fut__wake_all_locked(&ch->lock, &ch->waiters, 0);
}

int fut_watch_send(struct fut_watch_tx *tx, const void *value)
{
    FUT_ARG_CHECK(tx, "'tx' is NULL");
    FUT_ARG_CHECK(value, "'value' is NULL");
    struct fut__watch *ch = tx->ch;
    if (!ch) {
        FUT_MISUSE("the sender was dropped");
        return FUT_EINVAL;
    }
    FUT_HANDLE_CHECK(ch, tx->gen, __func__);
    fut__lock_acquire(&ch->lock);
    if (ch->rx_count == 0) {
        fut__lock_release(&ch->lock);
        return FUT_ECLOSED;
    }
    store_locked(ch, value, NULL);
    fut__lock_release(&ch->lock);
    return 0;
}

void fut_watch_send_replace(struct fut_watch_tx *tx, const void *value,
                            void *old)
{
    FUT_ARG_VOID(tx, "'tx' is NULL");
    FUT_ARG_VOID(value, "'value' is NULL");
    struct fut__watch *ch = tx->ch;
    if (!ch) {
        FUT_MISUSE("the sender was dropped");
        return;
    }
    FUT_HANDLE_CHECK(ch, tx->gen, __func__);
    fut__lock_acquire(&ch->lock);
    store_locked(ch, value, old);
    fut__lock_release(&ch->lock);
}

void fut_watch_borrow(const struct fut_watch_rx *rx, void *out)
{
    FUT_ARG_VOID(rx, "'rx' is NULL");
    FUT_ARG_VOID(out, "'out' is NULL");
    struct fut__watch *ch = rx->ch;
    if (!ch) {
        FUT_MISUSE("the receiver was dropped");
        return;
    }
    FUT_HANDLE_CHECK(ch, rx->gen, __func__);
    fut__lock_acquire(&ch->lock);
    memcpy(out, ch->value, ch->size);
    fut__lock_release(&ch->lock);
}

void fut_watch_borrow_and_update(struct fut_watch_rx *rx, void *out)
{
    FUT_ARG_VOID(rx, "'rx' is NULL");
    FUT_ARG_VOID(out, "'out' is NULL");
    struct fut__watch *ch = rx->ch;
    if (!ch) {
        FUT_MISUSE("the receiver was dropped");
        return;
    }
    FUT_HANDLE_CHECK(ch, rx->gen, __func__);
    fut__lock_acquire(&ch->lock);
    memcpy(out, ch->value, ch->size);
    rx->seen = ch->version;
    fut__lock_release(&ch->lock);
}

int fut_watch_has_changed(const struct fut_watch_rx *rx)
{
    FUT_ARG_CHECK(rx, "'rx' is NULL");
    struct fut__watch *ch = rx->ch;
    if (!ch) {
        FUT_MISUSE("the receiver was dropped");
        return FUT_EINVAL;
    }
    FUT_HANDLE_CHECK(ch, rx->gen, __func__);
    fut__lock_acquire(&ch->lock);
    int r = ch->version != rx->seen ? 1 : ch->tx_count == 0 ? FUT_ECLOSED : 0;
    fut__lock_release(&ch->lock);
    return r;
}

static int changed_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_watch_changed *c = (struct fut_watch_changed *)f;
    struct fut__watch *ch = c->rx->ch;
    struct fut__wnode *w = fut__wnode_of(&c->w);
    FUT_CHECK(ch != NULL);
    /* Spent before we know (see broadcast.c). */
    if (!fut_coop_proceed(cx))
        return FUT_PENDING;
    struct fut_waker old = FUT_WAKER_NONE;
    fut__lock_acquire(&ch->lock);
    if (fut__list_linked(&w->link))
        fut__list_remove(&w->link);
    if (ch->version != c->rx->seen || ch->tx_count == 0) {
        c->result = ch->version != c->rx->seen ? 0 : FUT_ECLOSED;
        c->rx->seen = ch->version;
        old = w->waker;
        w->waker.vt = 0;
        fut__lock_release(&ch->lock);
        fut_waker_drop(&old);
        return FUT_READY;
    }
    old = fut__wnode_wait(w, &ch->waiters, &cx->waker);
    fut__lock_release(&ch->lock);
    fut_waker_drop(&old);
    return FUT_PENDING;
}

static void changed_drop(struct fut_future *f)
{
    struct fut_watch_changed *c = (struct fut_watch_changed *)f;
    struct fut__watch *ch = c->rx->ch;
    struct fut__wnode *w = fut__wnode_of(&c->w);
    if (!ch)
        return;
    fut__lock_acquire(&ch->lock);
    struct fut_waker old = fut__wnode_unlink(w);
    fut__lock_release(&ch->lock);
    fut_waker_drop(&old);
}

static const struct fut_future_vtable changed_vt = {
    changed_poll, changed_drop, "watch_changed", 0};

void fut_watch_changed_init(struct fut_watch_changed *f,
                            struct fut_watch_rx *rx)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(rx, "'rx' is NULL");
    if (rx->ch)
        FUT_HANDLE_CHECK(rx->ch, rx->gen, __func__);
    fut_future_init(&f->base, &changed_vt);
    f->rx = rx;
    fut__wnode_init(fut__wnode_of(&f->w), 0);
    f->result = FUT_ECLOSED;
}
