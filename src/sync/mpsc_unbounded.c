/* SPDX-License-Identifier: MIT */
/* The unbounded flavor of the mpsc channel (fut_mpsc_unbounded_new): a
 * growable ring under a short lock, behind the core of mpsc_chan.c.
 *
 * Rules. A ring buffer ('ubuf', 'ucap' a power of two) under 'ulock',
 * doubled when full; the receiver's waker is in 'uwaker' under the same
 * lock and woken after unlocking. 'uclosed' (under the lock) refuses
 * sends. The end: 'uclosed', or no senders left (mpsc_chan.c's rules),
 * with the ring empty. Nothing waits for room, so the send and reserve
 * futures never queue their node.
 */
#include "sync/mpsc_chan.h"

/* ------------------------------------------------------------------ send */

static int u_grow(struct fut__mpsc *ch)
{
    size_t ncap = ch->ucap ? ch->ucap * 2 : 16;
    if (ncap > SIZE_MAX / ch->msg_size)
        return FUT_ENOMEM;
    unsigned char *nb = fut__alloc(ncap * ch->msg_size);
    if (!nb)
        return FUT_ENOMEM;
    for (size_t i = 0; i < ch->ulen; i++)
        memcpy(nb + i * ch->msg_size,
               ch->ubuf + ((ch->uhead + i) & (ch->ucap - 1)) * ch->msg_size,
               ch->msg_size);
    if (ch->ubuf)
        fut__free(ch->ubuf, ch->ucap * ch->msg_size);
    ch->ubuf = nb;
    ch->ucap = ncap;
    ch->uhead = 0;
    return 0;
}

static int u_push(struct fut__mpsc *ch, const void *msg)
{
    fut__lock_acquire(&ch->ulock);
    if (ch->uclosed) {
        fut__lock_release(&ch->ulock);
        return FUT_ECLOSED;
    }
    if (ch->ulen == ch->ucap) {
        int r = u_grow(ch);
        if (r) {
            fut__lock_release(&ch->ulock);
            return r;
        }
    }
    size_t at = (ch->uhead + ch->ulen) & (ch->ucap - 1);
    fut__copy_value(ch->ubuf + at * ch->msg_size, msg, ch->msg_size);
    ch->ulen++;
    struct fut_waker w = ch->uwaker;
    ch->uwaker.vt = 0;
    fut__lock_release(&ch->ulock);
    if (fut_waker_is_set(&w))
        fut_waker_wake(&w);
    return 0;
}

static int u_send_poll(struct fut_mpsc_send *s, struct fut_context *cx,
                       struct fut__mpsc *ch)
{
    if (!fut_coop_proceed(cx))
        return FUT_PENDING;
    s->result = u_push(ch, s->msg);
    return FUT_READY;
}

/* There is no room to reserve in an unbounded channel. */
static int u_try_reserve(struct fut__mpsc *ch)
{
    (void)ch;
    return FUT_EINVAL;
}

static int u_reserve_poll(struct fut__mpsc *ch, struct fut__wnode *w,
                          struct fut_context *cx, int *r)
{
    (void)ch, (void)w, (void)cx;
    *r = FUT_EINVAL;
    return FUT_READY;
}

/* A send or reserve future never queued its node: nothing to hand on. */
static void u_cancel(struct fut__mpsc *ch, struct fut__wnode *w)
{
    (void)ch, (void)w;
}

static int u_is_closed(struct fut__mpsc *ch)
{
    fut__lock_acquire(&ch->ulock);
    int c = ch->uclosed;
    fut__lock_release(&ch->ulock);
    return c;
}

/* Takes the receiver's waker out from under the lock. */
static struct fut_waker u_take_waker(struct fut__mpsc *ch)
{
    fut__lock_acquire(&ch->ulock);
    struct fut_waker w = ch->uwaker;
    ch->uwaker.vt = 0;
    fut__lock_release(&ch->ulock);
    return w;
}

static void u_wake_rx(struct fut__mpsc *ch)
{
    struct fut_waker w = u_take_waker(ch);
    if (fut_waker_is_set(&w))
        fut_waker_wake(&w);
}

/* --------------------------------------------------------------- receive */

/* Under the lock, with ulen > 0. */
static void u_take(struct fut__mpsc *ch, void *out)
{
    fut__copy_value(out, ch->ubuf + ch->uhead * ch->msg_size, ch->msg_size);
    ch->uhead = (ch->uhead + 1) & (ch->ucap - 1);
    ch->ulen--;
}

static int u_poll_recv(struct fut__mpsc *ch, struct fut_context *cx,
                       void *out, int *result, int *registered)
{
    if (ch->ended) {
        *result = FUT_ECLOSED;
        return FUT_READY;
    }
    /* Spent before we know (a PENDING poll costs one unit): calling it
     * under the lock could run a wake there. */
    if (!fut_coop_proceed(cx))
        return FUT_PENDING;
    struct fut_waker old = FUT_WAKER_NONE;
    fut__lock_acquire(&ch->ulock);
    if (ch->ulen) {
        u_take(ch, out);
        fut__lock_release(&ch->ulock);
        *result = 0;
        return FUT_READY;
    }
    /* Acquire: the last sender's sends are visible (its decrement comes
     * before its lock; see u_wake_rx). */
    if (ch->uclosed || fut__load(&ch->senders, FUT__ACQUIRE) == 0) {
        fut__lock_release(&ch->ulock);
        ch->ended = 1;
        *result = FUT_ECLOSED;
        return FUT_READY;
    }
    if (!fut_waker_is_set(&ch->uwaker) ||
        !fut_waker_will_wake(&ch->uwaker, &cx->waker)) {
        old = ch->uwaker;
        fut__waker_store(&ch->uwaker, fut_waker_clone(&cx->waker));
    }
    *registered = 1;
    fut__lock_release(&ch->ulock);
    fut_waker_drop(&old);
    return FUT_PENDING;
}

static int u_recv_poll(struct fut_mpsc_recv *r, struct fut_context *cx,
                       struct fut__mpsc *ch)
{
    if (u_poll_recv(ch, cx, r->out, &r->result, &r->registered) ==
        FUT_PENDING)
        return FUT_PENDING;
    fut__mpsc_recv_done(ch, r);
    return FUT_READY;
}

static int u_try_recv(struct fut__mpsc *ch, void *out)
{
    if (ch->ended)
        return FUT_ECLOSED;
    fut__lock_acquire(&ch->ulock);
    int r = FUT_EEMPTY;
    if (ch->ulen) {
        u_take(ch, out);
        r = 0;
    } else if (ch->uclosed || fut__load(&ch->senders, FUT__ACQUIRE) == 0) {
        ch->ended = 1;
        r = FUT_ECLOSED;
    }
    fut__lock_release(&ch->ulock);
    return r;
}

static void u_withdraw(struct fut__mpsc *ch)
{
    struct fut_waker w = u_take_waker(ch);
    fut_waker_drop(&w);
}

static void u_close(struct fut__mpsc *ch)
{
    fut__lock_acquire(&ch->ulock);
    ch->uclosed = 1;
    fut__lock_release(&ch->ulock);
}

/* ------------------------------------------------------------- lifetime */

static void u_rx_drop(struct fut__mpsc *ch)
{
    fut__lock_acquire(&ch->ulock);
    ch->uclosed = 1;
    unsigned char *buf = ch->ubuf;
    size_t cap = ch->ucap, head = ch->uhead, len = ch->ulen;
    struct fut_waker w = ch->uwaker;
    ch->uwaker.vt = 0;
    ch->ubuf = NULL;
    ch->ucap = ch->ulen = ch->uhead = 0;
    fut__lock_release(&ch->ulock);
    for (size_t i = 0; i < len && ch->dtor; i++)
        ch->dtor(buf + ((head + i) & (cap - 1)) * ch->msg_size);
    if (buf)
        fut__free(buf, cap * ch->msg_size);
    fut_waker_drop(&w);
}

static void u_free(struct fut__mpsc *ch)
{
    if (ch->ubuf) {
        FUT_ASSERT(ch->ulen == 0); /* the receiver's drop drained it */
        fut__free(ch->ubuf, ch->ucap * ch->msg_size);
    }
}

static const struct fut__mpsc_ops unbounded_ops = {
    .try_send = u_push,
    .send_poll = u_send_poll,
    .try_reserve = u_try_reserve,
    .reserve_poll = u_reserve_poll,
    .cancel = u_cancel,
    .is_closed = u_is_closed,
    .wake_rx = u_wake_rx,
    .try_recv = u_try_recv,
    .poll_recv = u_poll_recv,
    .recv_poll = u_recv_poll,
    .withdraw = u_withdraw,
    .close = u_close,
    .rx_drop = u_rx_drop,
    .free = u_free,
};

int fut_mpsc_unbounded_new(size_t msg_size, void (*dtor)(void *msg),
                           struct fut_mpsc_tx *tx, struct fut_mpsc_rx *rx)
{
    FUT_ARG_CHECK(tx, "'tx' is NULL");
    FUT_ARG_CHECK(rx, "'rx' is NULL");
    int r = fut__mpsc_prepare(msg_size, tx, rx);
    if (r)
        return r;
    struct fut__mpsc *ch = fut__mpsc_alloc(&unbounded_ops, msg_size, 0, dtor);
    if (!ch)
        return FUT_ENOMEM;
    fut__lock_init(&ch->ulock);
    ch->uwaker.vt = 0;
    ch->uwaker.data = 0;
    fut__mpsc_open(ch, tx, rx);
    return 0;
}
