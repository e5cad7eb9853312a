/* SPDX-License-Identifier: MIT */
/* The broadcast channel: a ring of the last 'cap' messages; every
 * receiver has its own position and copies messages out, so one send
 * reaches every receiver, and a receiver that falls more than 'cap'
 * behind is told how many it missed (FUT_ELAGGED) and moved to the oldest
 * message kept.
 *
 * Rules: everything but 'refs' is under 'lock' (sends and receives copy
 * bytes under it: a message is never torn). Receive futures that find
 * nothing queue their node on 'waiters'; a send (or the last sender's
 * drop) wakes the whole list in batches (fut__wake_all_locked); a woken
 * future re-checks under the lock, so a node carries no state besides
 * being linked. 'refs' counts handles; the last one frees the block, after
 * its last unlock.
 */
#include <string.h>

#include "fut/chan.h"
#include "sync/sync_internal.h"

struct fut__bcast {
    struct fut__lock lock;
    size_t cap;
    size_t msg_size;
    size_t alloc_size;
    uint64_t tail;   /* position of the next message sent */
    size_t tx_count; /* senders alive */
    size_t rx_count; /* receivers alive */
    fut__aword refs; /* handles alive (the block's lifetime) */
    struct fut__list waiters;
    unsigned char *slots; /* cap * msg_size bytes, after the struct */
};

static void ref_get(struct fut__bcast *ch)
{
    fut__fetch_add(&ch->refs, 1, FUT__RELAXED); /* caller holds one */
}

static void ref_put(struct fut__bcast *ch)
{
    /* Acq_rel: every handle's last access happens before the free. */
    if (fut__fetch_sub(&ch->refs, 1, FUT__ACQ_REL) == 1)
        fut__free(ch, ch->alloc_size);
}

int fut_broadcast_new(size_t capacity, size_t msg_size,
                      struct fut_broadcast_tx *tx,
                      struct fut_broadcast_rx *rx)
{
    FUT_ARG_CHECK(tx, "'tx' is NULL");
    FUT_ARG_CHECK(rx, "'rx' is NULL");
    tx->ch = NULL;
    rx->ch = NULL;
    rx->next = 0;
    if (capacity == 0 || msg_size == 0 || capacity > ((size_t)1 << 32) ||
        msg_size > (SIZE_MAX - sizeof(struct fut__bcast)) / capacity)
        return FUT_EINVAL;
    size_t bytes = sizeof(struct fut__bcast) + capacity * msg_size;
    struct fut__bcast *ch = fut__alloc(bytes);
    if (!ch)
        return FUT_ENOMEM;
    fut__lock_init(&ch->lock);
    ch->cap = capacity;
    ch->msg_size = msg_size;
    ch->alloc_size = bytes;
    ch->tail = 0;
    ch->tx_count = 1;
    ch->rx_count = 1;
    fut__aword_init(&ch->refs, 2);
    fut__list_init(&ch->waiters);
    ch->slots = (unsigned char *)(ch + 1);
    tx->ch = ch;
    rx->ch = ch;
    tx->gen = FUT_HANDLE_NEW(ch);
    rx->gen = FUT_HANDLE_NEW(ch);
    return 0;
}

int fut_broadcast_tx_clone(const struct fut_broadcast_tx *tx,
                           struct fut_broadcast_tx *out)
{
    FUT_ARG_CHECK(tx, "'tx' is NULL");
    FUT_ARG_CHECK(out, "'out' is NULL");
    struct fut__bcast *ch = tx->ch;
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

void fut_broadcast_tx_drop(struct fut_broadcast_tx *tx)
{
    FUT_ARG_VOID(tx, "'tx' is NULL");
    struct fut__bcast *ch = tx->ch;
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

int fut_broadcast_subscribe(const struct fut_broadcast_tx *tx,
                            struct fut_broadcast_rx *out)
{
    FUT_ARG_CHECK(tx, "'tx' is NULL");
    FUT_ARG_CHECK(out, "'out' is NULL");
    struct fut__bcast *ch = tx->ch;
    out->ch = ch;
    out->next = 0;
    out->gen = 0;
    if (!ch)
        return FUT_EINVAL;
    FUT_HANDLE_CHECK(ch, tx->gen, __func__);
    fut__lock_acquire(&ch->lock);
    ch->rx_count++;
    out->next = ch->tail;
    fut__lock_release(&ch->lock);
    ref_get(ch);
    out->gen = FUT_HANDLE_NEW(ch);
    return 0;
}

int fut_broadcast_rx_clone(const struct fut_broadcast_rx *rx,
                           struct fut_broadcast_rx *out)
{
    FUT_ARG_CHECK(rx, "'rx' is NULL");
    FUT_ARG_CHECK(out, "'out' is NULL");
    struct fut__bcast *ch = rx->ch;
    out->ch = ch;
    out->next = rx->next;
    out->gen = 0;
    if (!ch)
        return FUT_EINVAL;
    FUT_HANDLE_CHECK(ch, rx->gen, __func__);
    fut__lock_acquire(&ch->lock);
    ch->rx_count++;
    fut__lock_release(&ch->lock);
    ref_get(ch);
    out->gen = FUT_HANDLE_NEW(ch);
    return 0;
}

void fut_broadcast_rx_drop(struct fut_broadcast_rx *rx)
{
    FUT_ARG_VOID(rx, "'rx' is NULL");
    struct fut__bcast *ch = rx->ch;
    if (!ch)
        return;
    FUT_HANDLE_END(ch, rx->gen, __func__);
    rx->ch = NULL;
    fut__lock_acquire(&ch->lock);
    ch->rx_count--;
    fut__lock_release(&ch->lock);
    ref_put(ch);
}

int fut_broadcast_send(struct fut_broadcast_tx *tx, const void *msg)
{
    FUT_ARG_CHECK(tx, "'tx' is NULL");
    FUT_ARG_CHECK(msg, "'msg' is NULL");
    struct fut__bcast *ch = tx->ch;
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
    memcpy(ch->slots + (ch->tail % ch->cap) * ch->msg_size, msg,
           ch->msg_size);
    ch->tail++;
    size_t n = ch->rx_count;
    fut__wake_all_locked(&ch->lock, &ch->waiters, 0);
    fut__lock_release(&ch->lock);
    return n > INT32_MAX ? INT32_MAX : (int)n;
}

/* Under the lock: the next message for 'rx', or why there is none. */
static int try_locked(struct fut__bcast *ch, struct fut_broadcast_rx *rx,
                      void *out, uint64_t *lagged)
{
    if (ch->tail > ch->cap && rx->next < ch->tail - ch->cap) {
        uint64_t oldest = ch->tail - ch->cap;
        *lagged = oldest - rx->next;
        rx->next = oldest;
        return FUT_ELAGGED;
    }
    if (rx->next < ch->tail) {
        memcpy(out, ch->slots + (rx->next % ch->cap) * ch->msg_size,
               ch->msg_size);
        rx->next++;
        return 0;
    }
    return ch->tx_count == 0 ? FUT_ECLOSED : FUT_EEMPTY;
}

int fut_broadcast_try_recv(struct fut_broadcast_rx *rx, void *out,
                           uint64_t *lagged)
{
    FUT_ARG_CHECK(rx, "'rx' is NULL");
    FUT_ARG_CHECK(out, "'out' is NULL");
    struct fut__bcast *ch = rx->ch;
    if (!ch) {
        FUT_MISUSE("the receiver was dropped");
        return FUT_EINVAL;
    }
    FUT_HANDLE_CHECK(ch, rx->gen, __func__);
    uint64_t lag = 0;
    fut__lock_acquire(&ch->lock);
    int r = try_locked(ch, rx, out, &lag);
    fut__lock_release(&ch->lock);
    if (lagged)
        *lagged = lag;
    return r;
}

static int recv_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_broadcast_recv *r = (struct fut_broadcast_recv *)f;
    struct fut__bcast *ch = r->rx->ch;
    struct fut__wnode *w = fut__wnode_of(&r->w);
    FUT_CHECK(ch != NULL);
    /* Spent before we know (a PENDING poll costs one unit): calling it
     * under the lock could run a wake there. */
    if (!fut_coop_proceed(cx))
        return FUT_PENDING;
    struct fut_waker old = FUT_WAKER_NONE;
    fut__lock_acquire(&ch->lock);
    if (fut__list_linked(&w->link))
        fut__list_remove(&w->link);
    int res = try_locked(ch, r->rx, r->out, &r->lagged);
    if (res != FUT_EEMPTY) {
        old = w->waker;
        w->waker.vt = 0;
        fut__lock_release(&ch->lock);
        fut_waker_drop(&old);
        r->result = res;
        return FUT_READY;
    }
    old = fut__wnode_wait(w, &ch->waiters, &cx->waker);
    fut__lock_release(&ch->lock);
    fut_waker_drop(&old);
    return FUT_PENDING;
}

static void recv_drop(struct fut_future *f)
{
    struct fut_broadcast_recv *r = (struct fut_broadcast_recv *)f;
    struct fut__bcast *ch = r->rx->ch;
    struct fut__wnode *w = fut__wnode_of(&r->w);
    if (!ch)
        return;
    fut__lock_acquire(&ch->lock);
    struct fut_waker old = fut__wnode_unlink(w);
    fut__lock_release(&ch->lock);
    fut_waker_drop(&old);
}

static const struct fut_future_vtable recv_vt = {recv_poll, recv_drop,
                                                 "broadcast_recv", 0};

void fut_broadcast_recv_init(struct fut_broadcast_recv *f,
                             struct fut_broadcast_rx *rx, void *out)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(rx, "'rx' is NULL");
    FUT_ARG_VOID(out, "'out' is NULL");
    if (rx->ch)
        FUT_HANDLE_CHECK(rx->ch, rx->gen, __func__);
    fut_future_init(&f->base, &recv_vt);
    f->rx = rx;
    f->out = out;
    fut__wnode_init(fut__wnode_of(&f->w), 0);
    f->result = FUT_ECLOSED;
    f->lagged = 0;
}
