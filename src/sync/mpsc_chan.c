/* SPDX-License-Identifier: MIT */
/* The mpsc channel's core: creation, the handles' lifetime, and the
 * public functions both flavors share, each a check of its arguments and
 * one call through 'ch->ops' to the bounded flavor (mpsc_bounded.c) or
 * the unbounded one (mpsc_unbounded.c). See mpsc_chan.h.
 *
 * Rules (both flavors).
 *
 * End of stream: 'senders' counts senders and permits; the last one to go
 * wakes the receiver (ops->wake_rx), which checks 'senders' after
 * registering its waker (so one of the two sees the other). Each flavor
 * adds its own close (see its rules).
 *
 * Receiver gone: 'rx_gone' is set (release) before the flavor's rx_drop
 * refuses sends and disposes of the queued messages; a send holding a
 * credit reads it (acquire) before it claims a position.
 *
 * Lifetime: 'refs' counts every handle and permit; the last release
 * frees the block, the flavor first passing unreceived messages to the
 * dtor.
 */
#include <stdlib.h>

#include "sync/mpsc_chan.h"

/* A future polled after its handle was dropped: FUT_CHECK(ch != NULL)
 * fails. Out of line and noreturn (every fut__assert_fail aborts), so the
 * polls below, which only forward to the flavor, save no registers. */
__attribute__((cold, noinline, noreturn)) static void polled_dropped(int line)
{
    fut__assert_fail("ch != NULL", __FILE__, line);
    abort();
}

/* -------------------------------------------------------------- lifetime */

void fut__mpsc_ref_release(struct fut__mpsc *ch)
{
    /* Acq_rel: every handle's last access happens before the free. */
    if (fut__fetch_sub(&ch->refs, 1, FUT__ACQ_REL) == 1) {
        ch->ops->free(ch);
        fut__free(ch, ch->alloc_size);
    }
}

void fut__mpsc_sender_release(struct fut__mpsc *ch)
{
    /* Acq_rel: our sends happen before the receiver's end check (pairs
     * with its acquire load of 'senders'). */
    if (fut__fetch_sub(&ch->senders, 1, FUT__ACQ_REL) == 1)
        ch->ops->wake_rx(ch);
    fut__mpsc_ref_release(ch);
}

void fut__mpsc_sender_acquire(struct fut__mpsc *ch)
{
    /* Relaxed: the caller holds a reference already. */
    fut__fetch_add(&ch->senders, 1, FUT__RELAXED);
    fut__fetch_add(&ch->refs, 1, FUT__RELAXED);
}

/* -------------------------------------------------------------- creation */

int fut__mpsc_prepare(size_t msg_size, struct fut_mpsc_tx *tx,
                      struct fut_mpsc_rx *rx)
{
    tx->ch = NULL;
    rx->ch = NULL;
    if (msg_size == 0 || msg_size > ((size_t)1 << 32))
        return FUT_EINVAL;
    return 0;
}

struct fut__mpsc *fut__mpsc_alloc(const struct fut__mpsc_ops *ops,
                                  size_t msg_size, size_t extra,
                                  void (*dtor)(void *msg))
{
    size_t bytes = sizeof(struct fut__mpsc) + extra;
    struct fut__mpsc *ch = fut__alloc(bytes);
    if (!ch)
        return NULL;
    memset(ch, 0, sizeof *ch);
    ch->msg_size = msg_size;
    ch->alloc_size = bytes;
    ch->ops = ops;
    ch->dtor = dtor;
    ch->slots = (unsigned char *)ch + sizeof *ch;
    fut__aword_init(&ch->senders, 1);
    fut__aword_init(&ch->refs, 2);
    fut__aword_init(&ch->rx_gone, 0);
    ch->head = 0;
    ch->ended = 0;
    return ch;
}

void fut__mpsc_open(struct fut__mpsc *ch, struct fut_mpsc_tx *tx,
                    struct fut_mpsc_rx *rx)
{
    tx->ch = ch;
    rx->ch = ch;
    tx->gen = FUT_HANDLE_NEW(ch);
    rx->gen = FUT_HANDLE_NEW(ch);
}

/* --------------------------------------------------------------- senders */

int fut_mpsc_tx_clone(const struct fut_mpsc_tx *tx, struct fut_mpsc_tx *out)
{
    FUT_ARG_CHECK(tx, "'tx' is NULL");
    FUT_ARG_CHECK(out, "'out' is NULL");
    out->ch = tx->ch;
    out->gen = 0;
    if (!tx->ch)
        return FUT_EINVAL;
    FUT_HANDLE_CHECK(tx->ch, tx->gen, __func__);
    fut__mpsc_sender_acquire(tx->ch);
    out->gen = FUT_HANDLE_NEW(tx->ch);
    return 0;
}

void fut_mpsc_tx_drop(struct fut_mpsc_tx *tx)
{
    FUT_ARG_VOID(tx, "'tx' is NULL");
    struct fut__mpsc *ch = tx->ch;
    if (!ch)
        return;
    FUT_HANDLE_END(ch, tx->gen, __func__);
    tx->ch = NULL;
    fut__mpsc_sender_release(ch);
}

int fut_mpsc_tx_is_closed(const struct fut_mpsc_tx *tx)
{
    FUT_ARG_OR(tx, "'tx' is NULL", 0);
    struct fut__mpsc *ch = tx->ch;
    if (!ch)
        return 1;
    FUT_HANDLE_CHECK(ch, tx->gen, __func__);
    return ch->ops->is_closed(ch);
}

int fut_mpsc_try_send(struct fut_mpsc_tx *tx, const void *msg)
{
    FUT_ARG_CHECK(tx, "'tx' is NULL");
    FUT_ARG_CHECK(msg, "'msg' is NULL");
    struct fut__mpsc *ch = tx->ch;
    if (!ch) {
        FUT_MISUSE("the sender was dropped");
        return FUT_EINVAL;
    }
    FUT_HANDLE_CHECK(ch, tx->gen, __func__);
    return ch->ops->try_send(ch, msg);
}

/* ------------------------------------------------ send and reserve futures */

static int send_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_mpsc_send *s = (struct fut_mpsc_send *)f;
    struct fut__mpsc *ch = s->tx->ch;
    if (FUT_UNLIKELY(!ch))
        polled_dropped(__LINE__);
    return ch->ops->send_poll(s, cx, ch);
}

static void send_drop(struct fut_future *f)
{
    struct fut_mpsc_send *s = (struct fut_mpsc_send *)f;
    struct fut__mpsc *ch = s->tx->ch;
    if (ch)
        ch->ops->cancel(ch, fut__wnode_of(&s->w));
}

static const struct fut_future_vtable send_vt = {send_poll, send_drop,
                                                 "mpsc_send", 0};

void fut_mpsc_send_init(struct fut_mpsc_send *f, struct fut_mpsc_tx *tx,
                        const void *msg)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(tx, "'tx' is NULL");
    FUT_ARG_VOID(msg, "'msg' is NULL");
    if (tx->ch)
        FUT_HANDLE_CHECK(tx->ch, tx->gen, __func__);
    fut_future_init(&f->base, &send_vt);
    f->tx = tx;
    f->msg = msg;
    fut__semw_init(fut__wnode_of(&f->w), 1);
    f->result = FUT_ECLOSED;
}

int fut_mpsc_try_reserve(struct fut_mpsc_tx *tx, struct fut_mpsc_permit *p)
{
    FUT_ARG_CHECK(tx, "'tx' is NULL");
    FUT_ARG_CHECK(p, "'p' is NULL");
    struct fut__mpsc *ch = tx->ch;
    p->ch = NULL;
    if (!ch) {
        FUT_MISUSE("the sender was dropped");
        return FUT_EINVAL;
    }
    FUT_HANDLE_CHECK(ch, tx->gen, __func__);
    int r = ch->ops->try_reserve(ch);
    if (r)
        return r;
    fut__mpsc_sender_acquire(ch);
    p->ch = ch;
    return 0;
}

static int reserve_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_mpsc_reserve *rs = (struct fut_mpsc_reserve *)f;
    struct fut__mpsc *ch = rs->tx->ch;
    FUT_CHECK(ch != NULL);
    int r;
    if (ch->ops->reserve_poll(ch, fut__wnode_of(&rs->w), cx, &r) ==
        FUT_PENDING)
        return FUT_PENDING;
    rs->result = r;
    if (r == 0) {
        fut__mpsc_sender_acquire(ch);
        rs->permit.ch = ch;
    }
    return FUT_READY;
}

static void reserve_drop(struct fut_future *f)
{
    struct fut_mpsc_reserve *rs = (struct fut_mpsc_reserve *)f;
    struct fut__mpsc *ch = rs->tx->ch;
    if (ch)
        ch->ops->cancel(ch, fut__wnode_of(&rs->w));
}

static const struct fut_future_vtable reserve_vt = {
    reserve_poll, reserve_drop, "mpsc_reserve", 0};

void fut_mpsc_reserve_init(struct fut_mpsc_reserve *f, struct fut_mpsc_tx *tx)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(tx, "'tx' is NULL");
    if (tx->ch)
        FUT_HANDLE_CHECK(tx->ch, tx->gen, __func__);
    fut_future_init(&f->base, &reserve_vt);
    f->tx = tx;
    fut__semw_init(fut__wnode_of(&f->w), 1);
    f->result = FUT_ECLOSED;
    f->permit.ch = NULL;
}

/* ------------------------------------------------------------- receiver */

int fut_mpsc_try_recv(struct fut_mpsc_rx *rx, void *out)
{
    FUT_ARG_CHECK(rx, "'rx' is NULL");
    FUT_ARG_CHECK(out, "'out' is NULL");
    struct fut__mpsc *ch = rx->ch;
    if (!ch) {
        FUT_MISUSE("the receiver was dropped");
        return FUT_EINVAL;
    }
    FUT_HANDLE_CHECK(ch, rx->gen, __func__);
    return ch->ops->try_recv(ch, out);
}

int fut_mpsc_poll_recv(struct fut_mpsc_rx *rx, struct fut_context *cx,
                       void *out, int *result)
{
    FUT_ARG_CHECK(rx, "'rx' is NULL");
    FUT_ARG_CHECK(cx, "'cx' is NULL");
    FUT_ARG_CHECK(out, "'out' is NULL");
    FUT_ARG_CHECK(result, "'result' is NULL");
    if (!rx->ch) {
        FUT_MISUSE("the receiver was dropped");
        return FUT_EINVAL;
    }
    FUT_HANDLE_CHECK(rx->ch, rx->gen, __func__);
    int registered = 0;
    return rx->ch->ops->poll_recv(rx->ch, cx, out, result, &registered);
}

void fut_mpsc_close(struct fut_mpsc_rx *rx)
{
    FUT_ARG_VOID(rx, "'rx' is NULL");
    struct fut__mpsc *ch = rx->ch;
    if (!ch) {
        FUT_MISUSE("the receiver was dropped");
        return;
    }
    FUT_HANDLE_CHECK(ch, rx->gen, __func__);
    ch->ops->close(ch);
}

void fut_mpsc_rx_drop(struct fut_mpsc_rx *rx)
{
    FUT_ARG_VOID(rx, "'rx' is NULL");
    struct fut__mpsc *ch = rx->ch;
    if (!ch)
        return;
    FUT_HANDLE_END(ch, rx->gen, __func__);
    rx->ch = NULL;
    /* Release: pairs with the acquire load of a send holding a credit
     * (mpsc_bounded.c: send_held). */
    fut__store(&ch->rx_gone, 1, FUT__RELEASE);
    ch->ops->rx_drop(ch);
    fut__mpsc_ref_release(ch);
}

/* --------------------------------------------------------- recv future */

static int recv_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_mpsc_recv *r = (struct fut_mpsc_recv *)f;
    struct fut__mpsc *ch = r->rx->ch;
    if (FUT_UNLIKELY(!ch)) /* receive on a dropped receiver */
        polled_dropped(__LINE__);
    return ch->ops->recv_poll(r, cx, ch);
}

/* The waker a receive registered (it went to sleep at least once: the
 * fast path registers nothing) is withdrawn, so the channel keeps no
 * clone of a waker whose future is gone. */
static void recv_drop(struct fut_future *f)
{
    struct fut_mpsc_recv *r = (struct fut_mpsc_recv *)f;
    if (r->registered && r->rx->ch)
        r->rx->ch->ops->withdraw(r->rx->ch);
}

static const struct fut_future_vtable recv_vt = {recv_poll, recv_drop,
                                                 "mpsc_recv", 0};

void fut_mpsc_recv_init(struct fut_mpsc_recv *f, struct fut_mpsc_rx *rx,
                        void *out)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(rx, "'rx' is NULL");
    FUT_ARG_VOID(out, "'out' is NULL");
    if (rx->ch)
        FUT_HANDLE_CHECK(rx->ch, rx->gen, __func__);
    fut_future_init(&f->base, &recv_vt);
    f->rx = rx;
    f->out = out;
    f->result = FUT_ECLOSED;
    f->registered = 0;
}

/* --------------------------------------------------------------- stream */

static int stream_poll_next(struct fut_stream *s, struct fut_context *cx,
                            void *item)
{
    struct fut_mpsc_stream *ms = (struct fut_mpsc_stream *)s;
    int result;
    if (fut_mpsc_poll_recv(&ms->rx, cx, item, &result) == FUT_PENDING)
        return FUT_PENDING;
    return result == 0 ? FUT_STREAM_ITEM : FUT_STREAM_END;
}

static void stream_drop(struct fut_stream *s)
{
    fut_mpsc_rx_drop(&((struct fut_mpsc_stream *)s)->rx);
}

static const struct fut_stream_vtable stream_vt = {stream_poll_next,
                                                   stream_drop, "mpsc_rx"};

void fut_mpsc_stream_init(struct fut_mpsc_stream *s, struct fut_mpsc_rx *rx)
{
    FUT_ARG_VOID(s, "'s' is NULL");
    FUT_ARG_VOID(rx, "'rx' is NULL");
    if (!rx->ch) {
        FUT_MISUSE("the receiver was dropped");
        return;
    }
    FUT_HANDLE_CHECK(rx->ch, rx->gen, __func__);
    fut_stream_init(&s->base, &stream_vt, rx->ch->msg_size);
    s->rx = *rx; /* moved: the registration goes with it */
    rx->ch = NULL;
}
