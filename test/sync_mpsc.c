/* SPDX-License-Identifier: MIT */
/* mpsc channels (include/fut/chan.h): bounded and unbounded; send,
 * try_send, reserve/permits, recv, try_recv, close, drops; the stream
 * view; drop-at-every-PENDING of send, reserve and recv (C11, C12);
 * cancel-safe recv dropped mid-wait under load; multi-thread stress
 * (4 producers, capacity 1, 16 and 1024; exactly once, per-producer
 * order); cross-thread moves of a pending future. */
#include "sync_util.h"

#define U64 sizeof(uint64_t)

static long dtor_calls;
static void count_dtor(void *msg)
{
    (void)msg;
    __atomic_fetch_add(&dtor_calls, 1, __ATOMIC_RELAXED);
}

/* --------------------------------------------------------------- basics */

START_TEST(bounded_try_send_recv)
{
    struct fut_mpsc_tx tx;
    struct fut_mpsc_rx rx;
    ASSERT_EQ(fut_mpsc_new(4, U64, NULL, &tx, &rx), 0);
    for (uint64_t v = 0; v < 4; v++)
        ASSERT_EQ(fut_mpsc_try_send(&tx, &v), 0);
    uint64_t v = 99, out = 0;
    ASSERT_EQ(fut_mpsc_try_send(&tx, &v), FUT_EFULL); /* backpressure */
    for (uint64_t i = 0; i < 4; i++) {
        ASSERT_EQ(fut_mpsc_try_recv(&rx, &out), 0);
        ASSERT_EQ(out, i);
    }
    ASSERT_EQ(fut_mpsc_try_recv(&rx, &out), FUT_EEMPTY);
    /* Wrap around the ring many times. */
    for (uint64_t i = 0; i < 1000; i++) {
        ASSERT_EQ(fut_mpsc_try_send(&tx, &i), 0);
        ASSERT_EQ(fut_mpsc_try_recv(&rx, &out), 0);
        ASSERT_EQ(out, i);
    }
    fut_mpsc_tx_drop(&tx);
    ASSERT_EQ(fut_mpsc_try_recv(&rx, &out), FUT_ECLOSED);
    ASSERT_EQ(fut_mpsc_try_recv(&rx, &out), FUT_ECLOSED);
    fut_mpsc_tx_drop(&tx); /* an empty handle: no-op */
    fut_mpsc_rx_drop(&rx);
    fut_mpsc_rx_drop(&rx);
}
END_TEST

START_TEST(bad_arguments)
{
    struct fut_mpsc_tx tx;
    struct fut_mpsc_rx rx;
    ASSERT_EQ(fut_mpsc_new(0, U64, NULL, &tx, &rx), FUT_EINVAL);
    ASSERT_EQ(fut_mpsc_new(4, 0, NULL, &tx, &rx), FUT_EINVAL);
    ASSERT_EQ(fut_mpsc_new(FUT_MPSC_MAX_CAPACITY + 1, U64, NULL, &tx, &rx),
              FUT_EINVAL);
    ASSERT_TRUE(tx.ch == NULL && rx.ch == NULL);
    struct fut_mpsc_tx t2;
    ASSERT_EQ(fut_mpsc_tx_clone(&tx, &t2), FUT_EINVAL);
    ASSERT_TRUE(fut_mpsc_tx_is_closed(&tx));
    struct fut_mpsc_permit p = {NULL};
    uint64_t v = 1;
    ASSERT_EQ(fut_mpsc_permit_send(&p, &v), FUT_EINVAL);
    fut_mpsc_permit_drop(&p);
}
END_TEST

START_TEST(unbounded_grows)
{
    struct fut_mpsc_tx tx;
    struct fut_mpsc_rx rx;
    ASSERT_EQ(fut_mpsc_unbounded_new(U64, NULL, &tx, &rx), 0);
    uint64_t out;
    for (uint64_t round = 0; round < 3; round++) {
        for (uint64_t i = 0; i < 1000; i++)
            ASSERT_EQ(fut_mpsc_try_send(&tx, &i), 0);
        for (uint64_t i = 0; i < 1000; i++) {
            ASSERT_EQ(fut_mpsc_try_recv(&rx, &out), 0);
            ASSERT_EQ(out, i);
        }
        ASSERT_EQ(fut_mpsc_try_recv(&rx, &out), FUT_EEMPTY);
    }
    struct fut_mpsc_permit p;
    ASSERT_EQ(fut_mpsc_try_reserve(&tx, &p), FUT_EINVAL);
    fut_mpsc_tx_drop(&tx);
    ASSERT_EQ(fut_mpsc_try_recv(&rx, &out), FUT_ECLOSED);
    fut_mpsc_rx_drop(&rx);
}
END_TEST

/* The send future waits while full and is woken when room appears; the
 * recv future waits while empty and is woken by a send (C5, C7). */
static void send_recv_futures(int bounded)
{
    struct fut_mpsc_tx tx;
    struct fut_mpsc_rx rx;
    if (bounded)
        ASSERT_EQ(fut_mpsc_new(1, U64, NULL, &tx, &rx), 0);
    else
        ASSERT_EQ(fut_mpsc_unbounded_new(U64, NULL, &tx, &rx), 0);
    struct twaker ws = {0, 0}, wr = {0, 0};
    uint64_t a = 1, b = 2, out = 0;
    struct fut_mpsc_recv r;
    fut_mpsc_recv_init(&r, &rx, &out);
    ASSERT_EQ(tpoll(&r, &wr), FUT_PENDING);
    ASSERT_EQ(wr.refs, 1);
    struct fut_mpsc_send s1, s2;
    fut_mpsc_send_init(&s1, &tx, &a);
    ASSERT_EQ(tpoll(&s1, &ws), FUT_READY);
    ASSERT_EQ(s1.result, 0);
    ASSERT_EQ(wr.wakes, 1); /* the send woke the receiver */
    fut_mpsc_send_init(&s2, &tx, &b);
    ASSERT_EQ(tpoll(&s2, &ws), bounded ? FUT_PENDING : FUT_READY);
    ASSERT_EQ(tpoll(&r, &wr), FUT_READY);
    ASSERT_EQ(r.result, 0);
    ASSERT_EQ(out, 1);
    /* It slept, then completed: the channel keeps no clone of its waker. */
    ASSERT_EQ(wr.refs, 0);
    fut_drop(&r.base);
    if (bounded) {
        ASSERT_EQ(ws.wakes, 1); /* the receive made room and woke s2 */
        ASSERT_EQ(tpoll(&s2, &ws), FUT_READY);
    }
    ASSERT_EQ(s2.result, 0);
    /* Polls after READY: READY, output unchanged (C8). */
    ASSERT_EQ(tpoll(&s2, &ws), FUT_READY);
    fut_drop(&s1.base);
    fut_drop(&s2.base);
    ASSERT_EQ(fut_mpsc_try_recv(&rx, &out), 0);
    ASSERT_EQ(out, 2);
    fut_mpsc_tx_drop(&tx);
    fut_mpsc_recv_init(&r, &rx, &out);
    ASSERT_EQ(tpoll(&r, &wr), FUT_READY);
    ASSERT_EQ(r.result, FUT_ECLOSED);
    fut_drop(&r.base);
    fut_mpsc_rx_drop(&rx);
    ASSERT_EQ(ws.refs, 0);
    ASSERT_EQ(wr.refs, 0);
}

START_TEST(futures_bounded)
{
    send_recv_futures(1);
}
END_TEST

START_TEST(futures_unbounded)
{
    send_recv_futures(0);
}
END_TEST

/* Dropping every sender ends the stream after the buffered messages; the
 * end is final (C15); the last sender's drop wakes a waiting receiver. */
static void end_after_buffered(int bounded)
{
    struct fut_mpsc_tx tx, tx2;
    struct fut_mpsc_rx rx;
    if (bounded)
        ASSERT_EQ(fut_mpsc_new(8, U64, NULL, &tx, &rx), 0);
    else
        ASSERT_EQ(fut_mpsc_unbounded_new(U64, NULL, &tx, &rx), 0);
    ASSERT_EQ(fut_mpsc_tx_clone(&tx, &tx2), 0);
    for (uint64_t i = 0; i < 3; i++)
        ASSERT_EQ(fut_mpsc_try_send(i ? &tx : &tx2, &i), 0);
    fut_mpsc_tx_drop(&tx2);
    struct twaker w = {0, 0};
    uint64_t out;
    struct fut_mpsc_recv r;
    for (uint64_t i = 0; i < 3; i++) {
        fut_mpsc_recv_init(&r, &rx, &out);
        ASSERT_EQ(tpoll(&r, &w), FUT_READY);
        ASSERT_EQ(r.result, 0);
        ASSERT_EQ(out, i);
        fut_drop(&r.base);
    }
    fut_mpsc_recv_init(&r, &rx, &out);
    ASSERT_EQ(tpoll(&r, &w), FUT_PENDING);
    fut_mpsc_tx_drop(&tx); /* the last sender */
    ASSERT_EQ(w.wakes, 1);
    ASSERT_EQ(tpoll(&r, &w), FUT_READY);
    ASSERT_EQ(r.result, FUT_ECLOSED);
    fut_drop(&r.base);
    int res = 0;
    struct fut_context cx = twaker_cx(&w);
    ASSERT_EQ(fut_mpsc_poll_recv(&rx, &cx, &out, &res), FUT_READY);
    ASSERT_EQ(res, FUT_ECLOSED);
    fut_mpsc_rx_drop(&rx);
    ASSERT_EQ(w.refs, 0);
}

START_TEST(end_bounded)
{
    end_after_buffered(1);
}
END_TEST

START_TEST(end_unbounded)
{
    end_after_buffered(0);
}
END_TEST

/* Dropping the receiver: sends fail with FUT_ECLOSED and never read the
 * value; a waiting send is woken with it; buffered messages go to the
 * dtor exactly once. */
static void rx_drop_case(int bounded)
{
    struct fut_mpsc_tx tx;
    struct fut_mpsc_rx rx;
    dtor_calls = 0;
    if (bounded)
        ASSERT_EQ(fut_mpsc_new(2, U64, count_dtor, &tx, &rx), 0);
    else
        ASSERT_EQ(fut_mpsc_unbounded_new(U64, count_dtor, &tx, &rx), 0);
    uint64_t v = 7;
    ASSERT_EQ(fut_mpsc_try_send(&tx, &v), 0);
    ASSERT_EQ(fut_mpsc_try_send(&tx, &v), 0);
    struct twaker w = {0, 0};
    struct fut_mpsc_send s;
    fut_mpsc_send_init(&s, &tx, &v);
    if (bounded)
        ASSERT_EQ(tpoll(&s, &w), FUT_PENDING);
    ASSERT_TRUE(!fut_mpsc_tx_is_closed(&tx));
    fut_mpsc_rx_drop(&rx);
    ASSERT_EQ(dtor_calls, 2);
    ASSERT_TRUE(fut_mpsc_tx_is_closed(&tx));
    if (bounded)
        ASSERT_EQ(w.wakes, 1);
    ASSERT_EQ(tpoll(&s, &w), FUT_READY);
    ASSERT_EQ(s.result, FUT_ECLOSED);
    fut_drop(&s.base);
    ASSERT_EQ(fut_mpsc_try_send(&tx, &v), FUT_ECLOSED);
    fut_mpsc_tx_drop(&tx);
    ASSERT_EQ(dtor_calls, 2);
    ASSERT_EQ(w.refs, 0);
}

START_TEST(rx_drop_bounded)
{
    rx_drop_case(1);
}
END_TEST

START_TEST(rx_drop_unbounded)
{
    rx_drop_case(0);
}
END_TEST

/* A message left in the channel when the last handle goes (here the
 * receiver outlives the senders but never receives) goes to the dtor. */
START_TEST(dtor_at_free)
{
    struct fut_mpsc_tx tx;
    struct fut_mpsc_rx rx;
    dtor_calls = 0;
    ASSERT_EQ(fut_mpsc_new(4, U64, count_dtor, &tx, &rx), 0);
    uint64_t v = 1;
    ASSERT_EQ(fut_mpsc_try_send(&tx, &v), 0);
    fut_mpsc_tx_drop(&tx);
    ASSERT_EQ(dtor_calls, 0);
    fut_mpsc_rx_drop(&rx);
    ASSERT_EQ(dtor_calls, 1);
}
END_TEST

/* Reserve: a permit takes capacity; permit_send cannot find the channel
 * full; permit_drop gives the room back; the permit counts as a sender. */
START_TEST(reserve_permits)
{
    struct fut_mpsc_tx tx;
    struct fut_mpsc_rx rx;
    ASSERT_EQ(fut_mpsc_new(1, U64, NULL, &tx, &rx), 0);
    struct fut_mpsc_permit p, q;
    ASSERT_EQ(fut_mpsc_try_reserve(&tx, &p), 0);
    uint64_t v = 5, out = 0;
    ASSERT_EQ(fut_mpsc_try_send(&tx, &v), FUT_EFULL);
    ASSERT_EQ(fut_mpsc_try_reserve(&tx, &q), FUT_EFULL);
    ASSERT_TRUE(q.ch == NULL);
    /* The reserve future waits for room. */
    struct twaker w = {0, 0};
    struct fut_mpsc_reserve rf;
    fut_mpsc_reserve_init(&rf, &tx);
    ASSERT_EQ(tpoll(&rf, &w), FUT_PENDING);
    fut_mpsc_permit_drop(&p); /* room back: goes to the queued reserve */
    ASSERT_EQ(w.wakes, 1);
    ASSERT_EQ(fut_mpsc_try_send(&tx, &v), FUT_EFULL); /* granted to rf */
    ASSERT_EQ(tpoll(&rf, &w), FUT_READY);
    ASSERT_EQ(rf.result, 0);
    p = rf.permit;
    fut_drop(&rf.base); /* after READY: the permit stays ours */
    /* The permit keeps the stream open after the senders are gone. */
    fut_mpsc_tx_drop(&tx);
    ASSERT_EQ(fut_mpsc_try_recv(&rx, &out), FUT_EEMPTY);
    ASSERT_EQ(fut_mpsc_permit_send(&p, &v), 0);
    ASSERT_TRUE(p.ch == NULL);
    ASSERT_EQ(fut_mpsc_try_recv(&rx, &out), 0);
    ASSERT_EQ(out, 5);
    ASSERT_EQ(fut_mpsc_try_recv(&rx, &out), FUT_ECLOSED);
    fut_mpsc_rx_drop(&rx);
    ASSERT_EQ(w.refs, 0);
}
END_TEST

/* A permit whose receiver was dropped: permit_send refuses, the value is
 * not read (still the caller's), nothing leaks. */
START_TEST(permit_after_rx_drop)
{
    struct fut_mpsc_tx tx;
    struct fut_mpsc_rx rx;
    dtor_calls = 0;
    ASSERT_EQ(fut_mpsc_new(2, U64, count_dtor, &tx, &rx), 0);
    struct fut_mpsc_permit p;
    ASSERT_EQ(fut_mpsc_try_reserve(&tx, &p), 0);
    fut_mpsc_rx_drop(&rx);
    uint64_t v = 3;
    ASSERT_EQ(fut_mpsc_permit_send(&p, &v), FUT_ECLOSED);
    ASSERT_EQ(dtor_calls, 0);
    fut_mpsc_tx_drop(&tx);
}
END_TEST

/* close(): new sends fail; buffered messages and outstanding permits
 * still arrive; the end comes once both are settled. */
START_TEST(close_then_drain)
{
    struct fut_mpsc_tx tx;
    struct fut_mpsc_rx rx;
    ASSERT_EQ(fut_mpsc_new(4, U64, NULL, &tx, &rx), 0);
    uint64_t v = 1, out;
    ASSERT_EQ(fut_mpsc_try_send(&tx, &v), 0);
    struct fut_mpsc_permit p, p2;
    ASSERT_EQ(fut_mpsc_try_reserve(&tx, &p), 0);
    ASSERT_EQ(fut_mpsc_try_reserve(&tx, &p2), 0);
    fut_mpsc_close(&rx);
    fut_mpsc_close(&rx); /* idempotent */
    ASSERT_TRUE(fut_mpsc_tx_is_closed(&tx));
    ASSERT_EQ(fut_mpsc_try_send(&tx, &v), FUT_ECLOSED);
    struct fut_mpsc_permit q;
    ASSERT_EQ(fut_mpsc_try_reserve(&tx, &q), FUT_ECLOSED);
    ASSERT_TRUE(q.ch == NULL);
    fut_mpsc_permit_drop(&p);
    fut_mpsc_permit_drop(&p2);
    fut_mpsc_rx_drop(&rx);
    fut_mpsc_tx_drop(&tx);

    /* Again, now draining: buffered message, then the permits. */
    ASSERT_EQ(fut_mpsc_new(4, U64, NULL, &tx, &rx), 0);
    ASSERT_EQ(fut_mpsc_try_send(&tx, &v), 0);
    ASSERT_EQ(fut_mpsc_try_reserve(&tx, &p), 0);
    ASSERT_EQ(fut_mpsc_try_reserve(&tx, &p2), 0);
    fut_mpsc_close(&rx);
    ASSERT_EQ(fut_mpsc_try_recv(&rx, &out), 0);
    ASSERT_EQ(out, 1);
    struct twaker w = {0, 0};
    struct fut_mpsc_recv r;
    fut_mpsc_recv_init(&r, &rx, &out);
    ASSERT_EQ(tpoll(&r, &w), FUT_PENDING); /* permits outstanding */
    v = 2;
    ASSERT_EQ(fut_mpsc_permit_send(&p, &v), 0); /* delivers after close */
    ASSERT_EQ(w.wakes, 1);
    ASSERT_EQ(tpoll(&r, &w), FUT_READY);
    ASSERT_EQ(r.result, 0);
    ASSERT_EQ(out, 2);
    fut_drop(&r.base);
    fut_mpsc_recv_init(&r, &rx, &out);
    ASSERT_EQ(tpoll(&r, &w), FUT_PENDING); /* p2 still out */
    fut_mpsc_permit_drop(&p2);
    ASSERT_EQ(w.wakes, 2);
    ASSERT_EQ(tpoll(&r, &w), FUT_READY);
    ASSERT_EQ(r.result, FUT_ECLOSED); /* senders alive, but closed */
    fut_drop(&r.base);
    fut_mpsc_tx_drop(&tx);
    fut_mpsc_rx_drop(&rx);
    ASSERT_EQ(w.refs, 0);
}
END_TEST

/* A recv that went to sleep and then ends because its own receiver
 * closed the channel (nobody wakes it: it is re-polled) keeps no clone of
 * its waker in the channel after READY. */
START_TEST(close_pending_recv)
{
    struct fut_mpsc_tx tx;
    struct fut_mpsc_rx rx;
    ASSERT_EQ(fut_mpsc_new(2, U64, NULL, &tx, &rx), 0);
    struct twaker w = {0, 0};
    uint64_t out;
    struct fut_mpsc_recv r;
    fut_mpsc_recv_init(&r, &rx, &out);
    ASSERT_EQ(tpoll(&r, &w), FUT_PENDING);
    ASSERT_EQ(w.refs, 1);
    fut_mpsc_close(&rx);
    ASSERT_EQ(tpoll(&r, &w), FUT_READY);
    ASSERT_EQ(r.result, FUT_ECLOSED);
    ASSERT_EQ(w.refs, 0); /* withdrawn at READY */
    fut_drop(&r.base);
    fut_mpsc_tx_drop(&tx);
    fut_mpsc_rx_drop(&rx);
}
END_TEST

/* Senders waiting for room are served in FIFO order, and a try_send does
 * not barge past them. */
START_TEST(senders_fifo)
{
    struct fut_mpsc_tx tx;
    struct fut_mpsc_rx rx;
    ASSERT_EQ(fut_mpsc_new(1, U64, NULL, &tx, &rx), 0);
    uint64_t v0 = 0, vals[3] = {1, 2, 3}, out, late = 9;
    ASSERT_EQ(fut_mpsc_try_send(&tx, &v0), 0);
    struct twaker w[3] = {{0, 0}, {0, 0}, {0, 0}};
    struct fut_mpsc_send s[3];
    for (int i = 0; i < 3; i++) {
        fut_mpsc_send_init(&s[i], &tx, &vals[i]);
        ASSERT_EQ(tpoll(&s[i], &w[i]), FUT_PENDING);
    }
    for (int i = 0; i < 3; i++) {
        ASSERT_EQ(fut_mpsc_try_recv(&rx, &out), 0);
        ASSERT_EQ(out, i == 0 ? 0 : vals[i - 1]);
        ASSERT_EQ(w[i].wakes, 1); /* exactly the next in line */
        for (int j = i + 1; j < 3; j++)
            ASSERT_EQ(w[j].wakes, 0);
        ASSERT_EQ(fut_mpsc_try_send(&tx, &late), FUT_EFULL);
        ASSERT_EQ(tpoll(&s[i], &w[i]), FUT_READY);
        ASSERT_EQ(s[i].result, 0);
        fut_drop(&s[i].base);
    }
    ASSERT_EQ(fut_mpsc_try_recv(&rx, &out), 0);
    ASSERT_EQ(out, 3);
    fut_mpsc_tx_drop(&tx);
    fut_mpsc_rx_drop(&rx);
}
END_TEST

/* A send that was handed room but dropped before it used it passes the
 * room to the next sender (nothing lost); its value was never sent. */
START_TEST(send_drop_passes_room)
{
    struct fut_mpsc_tx tx;
    struct fut_mpsc_rx rx;
    ASSERT_EQ(fut_mpsc_new(1, U64, NULL, &tx, &rx), 0);
    uint64_t v0 = 0, a = 1, b = 2, out;
    ASSERT_EQ(fut_mpsc_try_send(&tx, &v0), 0);
    struct twaker wa = {0, 0}, wb = {0, 0};
    struct fut_mpsc_send sa, sb;
    fut_mpsc_send_init(&sa, &tx, &a);
    fut_mpsc_send_init(&sb, &tx, &b);
    ASSERT_EQ(tpoll(&sa, &wa), FUT_PENDING);
    ASSERT_EQ(tpoll(&sb, &wb), FUT_PENDING);
    ASSERT_EQ(fut_mpsc_try_recv(&rx, &out), 0);
    ASSERT_EQ(wa.wakes, 1); /* room handed to sa */
    ASSERT_EQ(wb.wakes, 0);
    fut_drop(&sa.base);     /* ... which never uses it */
    ASSERT_EQ(wb.wakes, 1); /* passed on */
    ASSERT_EQ(tpoll(&sb, &wb), FUT_READY);
    ASSERT_EQ(sb.result, 0);
    fut_drop(&sb.base);
    ASSERT_EQ(fut_mpsc_try_recv(&rx, &out), 0);
    ASSERT_EQ(out, 2);
    ASSERT_EQ(fut_mpsc_try_recv(&rx, &out), FUT_EEMPTY);
    fut_mpsc_tx_drop(&tx);
    fut_mpsc_rx_drop(&rx);
    ASSERT_EQ(wa.refs + wb.refs, 0);
}
END_TEST

/* The coop budget (core.h): with the budget spent, a recv or a send that
 * could complete returns PENDING, wakes its task and changes nothing - no
 * message taken, none sent. */
START_TEST(coop_budget)
{
    struct fut_mpsc_tx tx;
    struct fut_mpsc_rx rx;
    ASSERT_EQ(fut_mpsc_new(2, U64, NULL, &tx, &rx), 0);
    struct twaker w = {0, 0};
    uint64_t v = 3, out = 0;
    struct fut_mpsc_send s;
    fut_mpsc_send_init(&s, &tx, &v);
    ASSERT_EQ(tpoll_no_budget(&s, &w), FUT_PENDING);
    ASSERT_EQ(w.wakes, 1);
    ASSERT_EQ(fut_mpsc_try_recv(&rx, &out), FUT_EEMPTY); /* not sent */
    ASSERT_EQ(tpoll(&s, &w), FUT_READY);
    fut_drop(&s.base);
    struct fut_mpsc_recv r;
    fut_mpsc_recv_init(&r, &rx, &out);
    ASSERT_EQ(tpoll_no_budget(&r, &w), FUT_PENDING);
    ASSERT_EQ(w.wakes, 2);
    fut_drop(&r.base);
    ASSERT_EQ(fut_mpsc_try_recv(&rx, &out), 0); /* still there */
    ASSERT_EQ(out, 3);
    fut_mpsc_tx_drop(&tx);
    fut_mpsc_rx_drop(&rx);
    ASSERT_EQ(w.refs, 0);
}
END_TEST

/* The receiver as a stream (C15). */
START_TEST(stream_view)
{
    struct fut_mpsc_tx tx;
    struct fut_mpsc_rx rx;
    ASSERT_EQ(fut_mpsc_new(4, U64, NULL, &tx, &rx), 0);
    struct fut_mpsc_stream st;
    fut_mpsc_stream_init(&st, &rx);
    ASSERT_TRUE(rx.ch == NULL);
    struct twaker w = {0, 0};
    struct fut_context cx = twaker_cx(&w);
    uint64_t v = 42, out = 0;
    ASSERT_EQ(fut_stream_poll_next(&st.base, &cx, &out), FUT_PENDING);
    ASSERT_EQ(fut_mpsc_try_send(&tx, &v), 0);
    ASSERT_EQ(w.wakes, 1);
    ASSERT_EQ(fut_stream_poll_next(&st.base, &cx, &out), FUT_STREAM_ITEM);
    ASSERT_EQ(out, 42);
    fut_mpsc_tx_drop(&tx);
    ASSERT_EQ(fut_stream_poll_next(&st.base, &cx, &out), FUT_STREAM_END);
    ASSERT_EQ(fut_stream_poll_next(&st.base, &cx, &out), FUT_STREAM_END);
    fut_stream_drop(&st.base);
    ASSERT_EQ(w.refs, 0);
}
END_TEST

/* A pending recv future is moved to another thread between polls (its
 * storage stays put; the polling thread changes), while a third thread
 * sends. */
struct sender_thread {
    struct fut_mpsc_tx *tx;
    uint64_t v;
};

static void *send_later(void *arg)
{
    struct sender_thread *s = arg;
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
    struct fut_mpsc_send f;
    fut_mpsc_send_init(&f, s->tx, &s->v);
    fut_block_on(NULL, &f.base);
    ck_assert_int_eq(f.result, 0);
    fut_drop(&f.base);
    return NULL;
}

START_TEST(pending_future_moves_thread)
{
    struct fut_mpsc_tx tx;
    struct fut_mpsc_rx rx;
    ASSERT_EQ(fut_mpsc_new(1, U64, NULL, &tx, &rx), 0);
    uint64_t out = 0;
    struct fut_mpsc_recv r;
    fut_mpsc_recv_init(&r, &rx, &out);
    struct twaker w = {0, 0};
    ASSERT_EQ(tpoll(&r, &w), FUT_PENDING); /* first poll: this thread */
    struct sender_thread st = {&tx, 77};
    struct tpool p = {.n = 0};
    tpool_start(&p, send_later, &st);
    tpool_start(&p, block_on_thread, &r); /* completes there */
    tpool_join(&p);
    ASSERT_EQ(r.result, 0);
    ASSERT_EQ(out, 77);
    fut_drop(&r.base);
    ASSERT_EQ(w.refs, 0); /* our old waker was replaced and dropped */
    fut_mpsc_tx_drop(&tx);
    fut_mpsc_rx_drop(&rx);
}
END_TEST

/* ----------------------------------------------- drop at every PENDING */

/* Scenario state, shared by make() and check(). */
static struct {
    int bounded;
    long sent_ok;   /* sends (or permit sends) that returned 0 */
    long received;  /* messages received, in order */
    long order_bad; /* out-of-order or unexpected values */
} sc;

/* A task that receives everything (yielding between receives, so the
 * sender meets a full channel) and checks the values are 0, 1, 2, ... */
struct slow_rx {
    struct fut_future base;
    struct fut_mpsc_rx rx;
    struct fut_mpsc_recv r;
    struct fut_yield y;
    uint64_t msg;
    uint64_t next; /* next value expected from the sender under test */
};

static int slow_rx_poll(struct fut_future *f, struct fut_context *cx)
{
    struct slow_rx *s = (struct slow_rx *)f;
    FUT_BEGIN(f);
    for (;;) {
        fut_yield_init(&s->y);
        FUT_AWAIT(f, &s->y);
        fut_mpsc_recv_init(&s->r, &s->rx, &s->msg);
        FUT_AWAIT(f, &s->r);
        if (s->r.result != 0)
            break;
        if (s->msg < 1000 && s->msg != s->next++)
            sc.order_bad++;
        sc.received++;
    }
    FUT_END(f);
}

static void slow_rx_cleanup(struct fut_future *f)
{
    fut_mpsc_rx_drop(&((struct slow_rx *)f)->rx);
}

FUT_ASYNC_VTABLE(slow_rx_vt, "slow_rx", slow_rx_poll, slow_rx_cleanup);

/* The future under test for send / reserve: sends 0..5 (message 0 is
 * pre-filled by make) through a capacity-1 channel. */
struct sender_fn {
    struct fut_future base;
    struct fut_mpsc_tx tx;
    struct fut_mpsc_send s;
    struct fut_mpsc_reserve rs;
    int use_reserve;
    uint64_t i, msg;
};

static int sender_fn_poll(struct fut_future *f, struct fut_context *cx)
{
    struct sender_fn *s = (struct sender_fn *)f;
    FUT_BEGIN(f);
    for (s->i = 1; s->i <= 5; s->i++) {
        s->msg = s->i;
        if (s->use_reserve) {
            fut_mpsc_reserve_init(&s->rs, &s->tx);
            FUT_AWAIT(f, &s->rs);
            if (s->rs.result != 0)
                break;
            if (fut_mpsc_permit_send(&s->rs.permit, &s->msg) == 0)
                sc.sent_ok++;
        } else {
            fut_mpsc_send_init(&s->s, &s->tx, &s->msg);
            FUT_AWAIT(f, &s->s);
            if (s->s.result == 0)
                sc.sent_ok++;
        }
    }
    FUT_END(f);
}

static void sender_fn_cleanup(struct fut_future *f)
{
    fut_mpsc_tx_drop(&((struct sender_fn *)f)->tx);
}

FUT_ASYNC_VTABLE(sender_fn_vt, "sender_fn", sender_fn_poll,
                 sender_fn_cleanup);

/* A second sender that starts late (after the future under test had its
 * chances to wait, be handed room, and be dropped) and sends 3 more: if
 * room was lost with a dropped future, it blocks for ever. */
static long late_done;

struct late_sender {
    struct fut_future base;
    struct fut_mpsc_tx tx;
    struct fut_mpsc_send s;
    struct yield_n y;
    uint64_t i, msg;
};

static int late_sender_poll(struct fut_future *f, struct fut_context *cx)
{
    struct late_sender *l = (struct late_sender *)f;
    FUT_BEGIN(f);
    yield_n_init(&l->y, 2000);
    FUT_AWAIT(f, &l->y);
    for (l->i = 0; l->i < 3; l->i++) {
        l->msg = 1000 + l->i;
        fut_mpsc_send_init(&l->s, &l->tx, &l->msg);
        FUT_AWAIT(f, &l->s);
        if (l->s.result == 0)
            late_done++;
    }
    FUT_END(f);
}

static void late_sender_cleanup(struct fut_future *f)
{
    fut_mpsc_tx_drop(&((struct late_sender *)f)->tx);
}

FUT_ASYNC_VTABLE(late_sender_vt, "late_sender", late_sender_poll,
                 late_sender_cleanup);

static struct sender_fn under_send;

static struct fut_future *make_sender(void *ud, struct fut_runtime *rt)
{
    memset(&sc, 0, sizeof sc);
    struct fut_mpsc_rx rx;
    ck_assert_int_eq(fut_mpsc_new(1, U64, NULL, &under_send.tx, &rx), 0);
    uint64_t zero = 0;
    ck_assert_int_eq(fut_mpsc_try_send(&under_send.tx, &zero), 0);
    sc.sent_ok = 1;
    struct slow_rx task;
    memset(&task, 0, sizeof task);
    fut_future_init(&task.base, &slow_rx_vt);
    task.rx = rx;
    ck_assert_int_eq(fut_spawn(rt, &task, sizeof task, NULL), 0);
    late_done = 0;
    struct late_sender late;
    memset(&late, 0, sizeof late);
    fut_future_init(&late.base, &late_sender_vt);
    ck_assert_int_eq(fut_mpsc_tx_clone(&under_send.tx, &late.tx), 0);
    ck_assert_int_eq(fut_spawn(rt, &late, sizeof late, NULL), 0);
    fut_future_init(&under_send.base, &sender_fn_vt);
    under_send.use_reserve = ud != NULL;
    return &under_send.base;
}

/* Every message accepted was received exactly once, and the late sender
 * got all its room (none lost with a dropped future). The slow receiver
 * checks the order of the under-test sender's values (0, 1, ...), which
 * the late sender's (1000, ...) interleave with: count those apart. */
static int check_counts(void *ud, int k)
{
    (void)ud;
    (void)k;
    return sc.received == sc.sent_ok + late_done && late_done == 3 &&
                   sc.order_bad == 0
               ? 0
               : 1;
}

START_TEST(drop_send)
{
    run_harness(make_sender, check_counts, NULL, 5);
}
END_TEST

START_TEST(drop_reserve)
{
    static int yes = 1;
    run_harness(make_sender, check_counts, &yes, 5);
}
END_TEST

/* recv under test: a producer task sends 0..7 (yielding in between);
 * the future under test receives until the end. Dropping it drops the
 * receiver: what was sent is either received or passed to the dtor. */
struct producer_task {
    struct fut_future base;
    struct fut_mpsc_tx tx;
    struct fut_mpsc_send s;
    struct fut_yield y;
    uint64_t i;
    int k;
};

static int producer_task_poll(struct fut_future *f, struct fut_context *cx)
{
    struct producer_task *p = (struct producer_task *)f;
    FUT_BEGIN(f);
    for (p->i = 0; p->i < 8; p->i++) {
        /* Yield past the scheduler's batch (61 ticks) so the receiver
         * under test is polled, and waits, between messages. */
        for (p->k = 0; p->k < 64; p->k++) {
            fut_yield_init(&p->y);
            FUT_AWAIT(f, &p->y);
        }
        fut_mpsc_send_init(&p->s, &p->tx, &p->i);
        FUT_AWAIT(f, &p->s);
        if (p->s.result != 0)
            break;
        sc.sent_ok++;
    }
    FUT_END(f);
}

static void producer_task_cleanup(struct fut_future *f)
{
    fut_mpsc_tx_drop(&((struct producer_task *)f)->tx);
}

FUT_ASYNC_VTABLE(producer_task_vt, "producer_task", producer_task_poll,
                 producer_task_cleanup);

struct receiver_fn {
    struct fut_future base;
    struct fut_mpsc_rx rx;
    struct fut_mpsc_recv r;
    uint64_t msg;
};

static int receiver_fn_poll(struct fut_future *f, struct fut_context *cx)
{
    struct receiver_fn *s = (struct receiver_fn *)f;
    FUT_BEGIN(f);
    for (;;) {
        fut_mpsc_recv_init(&s->r, &s->rx, &s->msg);
        FUT_AWAIT(f, &s->r);
        if (s->r.result != 0)
            break;
        if (s->msg != (uint64_t)sc.received)
            sc.order_bad++;
        sc.received++;
    }
    FUT_END(f);
}

static void receiver_fn_cleanup(struct fut_future *f)
{
    fut_mpsc_rx_drop(&((struct receiver_fn *)f)->rx);
}

FUT_ASYNC_VTABLE(receiver_fn_vt, "receiver_fn", receiver_fn_poll,
                 receiver_fn_cleanup);

static struct receiver_fn under_recv;

static struct fut_future *make_receiver(void *ud, struct fut_runtime *rt)
{
    memset(&sc, 0, sizeof sc);
    dtor_calls = 0;
    sc.bounded = ud != NULL;
    struct producer_task task;
    memset(&task, 0, sizeof task);
    fut_future_init(&task.base, &producer_task_vt);
    if (sc.bounded)
        ck_assert_int_eq(
            fut_mpsc_new(2, U64, count_dtor, &task.tx, &under_recv.rx), 0);
    else
        ck_assert_int_eq(
            fut_mpsc_unbounded_new(U64, count_dtor, &task.tx, &under_recv.rx),
            0);
    ck_assert_int_eq(fut_spawn(rt, &task, sizeof task, NULL), 0);
    fut_future_init(&under_recv.base, &receiver_fn_vt);
    return &under_recv.base;
}

/* Counts in = counts out: every accepted message was received or went to
 * the dtor (when the receiver was dropped), never lost or doubled. */
static int check_recv_counts(void *ud, int k)
{
    (void)ud;
    if (sc.order_bad)
        return 1;
    if (k == 0 && (sc.received != 8 || dtor_calls != 0))
        return 2;
    return sc.received + dtor_calls == sc.sent_ok ? 0 : 3;
}

START_TEST(drop_recv_bounded)
{
    static int yes = 1;
    run_harness(make_receiver, check_recv_counts, &yes, 8);
}
END_TEST

START_TEST(drop_recv_unbounded)
{
    run_harness(make_receiver, check_recv_counts, NULL, 8);
}
END_TEST

/* The same, but the receiver outlives the future under test (it only
 * owns the recv future): a recv dropped mid-wait must leave every message
 * in the channel, so check() finds exactly the rest, in order. */
static struct fut_mpsc_rx kept_rx;

struct recv_only {
    struct fut_future base;
    struct fut_mpsc_recv r;
    uint64_t msg;
};

static int recv_only_poll(struct fut_future *f, struct fut_context *cx)
{
    struct recv_only *s = (struct recv_only *)f;
    FUT_BEGIN(f);
    for (;;) {
        fut_mpsc_recv_init(&s->r, &kept_rx, &s->msg);
        FUT_AWAIT(f, &s->r);
        if (s->r.result != 0)
            break;
        if (s->msg != (uint64_t)sc.received)
            sc.order_bad++;
        sc.received++;
    }
    FUT_END(f);
}

FUT_ASYNC_VTABLE(recv_only_vt, "recv_only", recv_only_poll, NULL);

static struct recv_only under_recv_only;

static struct fut_future *make_recv_only(void *ud, struct fut_runtime *rt)
{
    memset(&sc, 0, sizeof sc);
    struct producer_task task;
    memset(&task, 0, sizeof task);
    fut_future_init(&task.base, &producer_task_vt);
    if (ud)
        ck_assert_int_eq(fut_mpsc_new(2, U64, NULL, &task.tx, &kept_rx), 0);
    else
        ck_assert_int_eq(
            fut_mpsc_unbounded_new(U64, NULL, &task.tx, &kept_rx), 0);
    ck_assert_int_eq(fut_spawn(rt, &task, sizeof task, NULL), 0);
    fut_future_init(&under_recv_only.base, &recv_only_vt);
    return &under_recv_only.base;
}

static int check_rest_in_channel(void *ud, int k)
{
    (void)ud;
    uint64_t next = (uint64_t)sc.received, out;
    int r, bad = sc.order_bad != 0;
    while ((r = fut_mpsc_try_recv(&kept_rx, &out)) == 0)
        if (out != next++)
            bad = 1;
    if (r != FUT_ECLOSED)
        bad = 1; /* the producer task was dropped: the stream ended */
    fut_mpsc_rx_drop(&kept_rx);
    if (k == 0 && sc.received != 8)
        bad = 1;
    return bad || (long)next != sc.sent_ok;
}

START_TEST(drop_recv_keeps_messages)
{
    static int yes = 1;
    run_harness(make_recv_only, check_rest_in_channel, &yes, 8);
    run_harness(make_recv_only, check_rest_in_channel, NULL, 8);
}
END_TEST

/* ------------------------------------------- cancel-safe recv under load */

#define ID_SHIFT 40
#define SEQ_MASK (((uint64_t)1 << ID_SHIFT) - 1)
#define MAXP 8

/* A producer: sends (id << 40 | i) for i < n. With 'flaky', a send that
 * is PENDING is dropped half the time and started again with the same
 * value (loses-position: the value is still ours; it must arrive exactly
 * once). */
struct producer {
    struct fut_future base;
    struct fut_mpsc_tx tx;
    struct fut_mpsc_send s;
    int active;
    int flaky;
    uint32_t rng;
    uint64_t id, n, i, msg;
    long drops;
    int failed;
};

static int producer_poll(struct fut_future *f, struct fut_context *cx)
{
    struct producer *p = (struct producer *)f;
    while (p->i < p->n) {
        if (!p->active) {
            p->msg = (p->id << ID_SHIFT) | p->i;
            fut_mpsc_send_init(&p->s, &p->tx, &p->msg);
            p->active = 1;
        }
        if (fut_poll(&p->s.base, cx) == FUT_PENDING) {
            if (!p->flaky || (xrand(&p->rng) & 1))
                return FUT_PENDING;
            fut_drop(&p->s.base); /* cancel; retry the same value */
            p->active = 0;
            p->drops++;
            fut_mpsc_send_init(&p->s, &p->tx, &p->msg);
            p->active = 1;
            if (fut_poll(&p->s.base, cx) == FUT_PENDING)
                return FUT_PENDING;
        }
        if (p->s.result != 0)
            p->failed++;
        fut_drop(&p->s.base);
        p->active = 0;
        p->i++;
    }
    fut_mpsc_tx_drop(&p->tx);
    return FUT_READY;
}

static void producer_drop(struct fut_future *f)
{
    struct producer *p = (struct producer *)f;
    if (p->active)
        fut_drop(&p->s.base);
    fut_mpsc_tx_drop(&p->tx);
}

static const struct fut_future_vtable producer_vt = {
    producer_poll, producer_drop, "producer", NULL};

static void producer_init(struct producer *p, struct fut_mpsc_tx *tx,
                          uint64_t id, uint64_t n, int flaky)
{
    memset(p, 0, sizeof *p);
    fut_future_init(&p->base, &producer_vt);
    ck_assert_int_eq(fut_mpsc_tx_clone(tx, &p->tx), 0);
    p->id = id;
    p->n = n;
    p->flaky = flaky;
    p->rng = (uint32_t)(id * 2654435761u + 1);
}

/* The consumer: receives to the end, checking each producer's values
 * arrive once each, in order. With 'flaky', a PENDING recv is dropped
 * half the time and a new one started (cancel-safe: nothing may be lost). */
struct consumer {
    struct fut_future base;
    struct fut_mpsc_rx rx;
    struct fut_mpsc_recv r;
    int active;
    int flaky;
    uint32_t rng;
    uint64_t msg;
    uint64_t next[MAXP];
    uint64_t count;
    long drops;
    long bad;
    int gate_first; /* see consumer_poll and run_threads */
};

static void consumer_take(struct consumer *c)
{
    uint64_t id = c->msg >> ID_SHIFT, seq = c->msg & SEQ_MASK;
    if (id >= MAXP || seq != c->next[id])
        c->bad++;
    else
        c->next[id]++;
    c->count++;
}

static atomic_int consumer_polled; /* the consumer's first poll is done */

static int consumer_poll(struct fut_future *f, struct fut_context *cx)
{
    struct consumer *c = (struct consumer *)f;
    int dropped_once = 0;
    if (c->gate_first) {
        /* First poll, before any producer runs (run_threads holds them
         * back): wait on an empty channel (and, flaky, cancel that wait). */
        c->gate_first = 0;
        int r = FUT_PENDING;
        if (!c->active) {
            fut_mpsc_recv_init(&c->r, &c->rx, &c->msg);
            c->active = 1;
        }
        r = fut_poll(&c->r.base, cx);
        ck_assert_int_eq(r, FUT_PENDING);
        if (c->flaky) {
            fut_drop(&c->r.base);
            c->active = 0;
            c->drops++;
            dropped_once = 1;
        }
        atomic_store(&consumer_polled, 1);
    }
    for (;;) {
        if (!c->active) {
            fut_mpsc_recv_init(&c->r, &c->rx, &c->msg);
            c->active = 1;
        }
        if (fut_poll(&c->r.base, cx) == FUT_PENDING) {
            /* Cancelled half the time (at most once per poll). */
            if (!c->flaky || dropped_once || (xrand(&c->rng) & 1))
                return FUT_PENDING;
            fut_drop(&c->r.base); /* cancel mid-wait */
            c->active = 0;
            c->drops++;
            dropped_once = 1;
            continue;
        }
        fut_drop(&c->r.base);
        c->active = 0;
        if (c->r.result != 0)
            return FUT_READY;
        consumer_take(c);
    }
}

static void consumer_drop(struct fut_future *f)
{
    struct consumer *c = (struct consumer *)f;
    if (c->active)
        fut_drop(&c->r.base);
    fut_mpsc_rx_drop(&c->rx);
}

static const struct fut_future_vtable consumer_vt = {
    consumer_poll, consumer_drop, "consumer", NULL};

/* 'np' producer threads and one consumer thread, each driving its
 * future with fut_block_on(NULL, ...). */
static void run_threads(size_t cap, int np, uint64_t per, int flaky)
{
    struct fut_mpsc_tx tx;
    struct fut_mpsc_rx rx;
    ASSERT_EQ(cap ? fut_mpsc_new(cap, U64, NULL, &tx, &rx)
                  : fut_mpsc_unbounded_new(U64, NULL, &tx, &rx),
              0);
    static struct producer prod[MAXP];
    static struct consumer cons;
    for (int i = 0; i < np; i++)
        producer_init(&prod[i], &tx, (uint64_t)i, per, flaky);
    fut_mpsc_tx_drop(&tx);
    memset(&cons, 0, sizeof cons);
    fut_future_init(&cons.base, &consumer_vt);
    cons.rx = rx;
    cons.flaky = flaky;
    cons.rng = 12345;
    cons.gate_first = 1;
    struct tpool p = {.n = 0};
    /* The consumer's first poll comes before any producer starts, so it
     * meets an empty channel at least once. */
    atomic_store(&consumer_polled, 0);
    tpool_start(&p, block_on_thread_now, &cons);
    while (!atomic_load(&consumer_polled))
        sched_yield();
    for (int i = 0; i < np; i++)
        tpool_start(&p, block_on_thread, &prod[i]);
    tpool_join(&p);
    ASSERT_EQ(cons.bad, 0);
    ASSERT_EQ(cons.count, (uint64_t)np * per);
    long sdrops = 0;
    for (int i = 0; i < np; i++) {
        ASSERT_EQ(cons.next[i], per);
        ASSERT_EQ(prod[i].failed, 0);
        sdrops += prod[i].drops;
        fut_drop(&prod[i].base);
    }
    if (flaky) {
        /* The cancellations really happened. */
        ck_assert_msg(cons.drops > 0, "no recv was dropped mid-wait");
        ck_assert_msg(cap == 0 || sdrops > 0, "no send was dropped");
    }
    fut_drop(&cons.base);
}

START_TEST(cancel_under_load)
{
    /* 2 producers x 100k through capacity 4, every PENDING recv and send
     * dropped half the time. */
    run_threads(4, 2, TEST_ITERS(100000, 20000), 1);
}
END_TEST

START_TEST(cancel_under_load_unbounded)
{
    run_threads(0, 2, TEST_ITERS(100000, 20000), 1);
}
END_TEST

/* ----------------------------------------------------------- stress */

/* 4 producers x 10^6 messages each, plain sends and recvs, in every build
 * (TSan included: the figure). Capacity 1 hands nearly every
 * message over through a thread wake-up (futex). */
#define STRESS_PER 1000000

START_TEST(stress_cap1)
{
    run_threads(1, 4, STRESS_PER, 0);
}
END_TEST

START_TEST(stress_cap16)
{
    run_threads(16, 4, STRESS_PER, 0);
}
END_TEST

START_TEST(stress_cap1024)
{
    run_threads(1024, 4, STRESS_PER, 0);
}
END_TEST

/* Producers as tasks of a current-thread runtime on one thread, the
 * consumer as a task of another runtime on a second thread: wakes cross
 * runtimes and threads. */
struct rt_job {
    struct fut_future *f;
    size_t size;
    int n;
};

static void *runtime_thread(void *arg)
{
    struct rt_job *j = arg;
    struct fut_runtime *rt = fut_test_rt();
    struct fut_join joins[MAXP];
    for (int i = 0; i < j->n; i++)
        ck_assert_int_eq(
            fut_spawn(rt, (char *)j->f + i * j->size, j->size, &joins[i]), 0);
    for (int i = 0; i < j->n; i++) {
        fut_block_on(rt, &joins[i].base);
        ck_assert_int_eq(joins[i].result, 0);
        /* The task's copy holds the final counters: copy them back. */
        memcpy((char *)j->f + i * j->size, fut_join_output(&joins[i]),
               j->size);
        fut_drop(&joins[i].base);
    }
    fut_runtime_free(rt);
    return NULL;
}

START_TEST(stress_runtimes)
{
    uint64_t per = TEST_ITERS(500000, 50000);
    struct fut_mpsc_tx tx;
    struct fut_mpsc_rx rx;
    ASSERT_EQ(fut_mpsc_new(16, U64, NULL, &tx, &rx), 0);
    static struct producer prod[4];
    static struct consumer cons;
    for (int i = 0; i < 4; i++)
        producer_init(&prod[i], &tx, (uint64_t)i, per, 0);
    fut_mpsc_tx_drop(&tx);
    memset(&cons, 0, sizeof cons);
    fut_future_init(&cons.base, &consumer_vt);
    cons.rx = rx;
    struct rt_job jp = {&prod[0].base, sizeof prod[0], 4};
    struct rt_job jc = {&cons.base, sizeof cons, 1};
    struct tpool p = {.n = 0};
    tpool_start(&p, runtime_thread, &jc);
    tpool_start(&p, runtime_thread, &jp);
    tpool_join(&p);
    ASSERT_EQ(cons.bad, 0);
    ASSERT_EQ(cons.count, 4 * per);
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(cons.next[i], per);
    /* The tasks' own copies already dropped their handles. */
}
END_TEST

/* ------------------------------------------------ allocation failures */

static int alloc_op(void *ud)
{
    (void)ud;
    struct fut_mpsc_tx tx;
    struct fut_mpsc_rx rx;
    int r = fut_mpsc_new(8, U64, NULL, &tx, &rx);
    if (r)
        return r;
    fut_mpsc_tx_drop(&tx);
    fut_mpsc_rx_drop(&rx);
    r = fut_mpsc_unbounded_new(U64, NULL, &tx, &rx);
    if (r)
        return r;
    for (uint64_t i = 0; i < 100 && r == 0; i++)
        r = fut_mpsc_try_send(&tx, &i); /* grows: 16, 32, 64, 128 */
    uint64_t out;
    for (uint64_t i = 0; r == 0 && i < 100; i++)
        if (fut_mpsc_try_recv(&rx, &out) != 0 || out != i)
            r = FUT_EINVAL;
    fut_mpsc_tx_drop(&tx);
    fut_mpsc_rx_drop(&rx);
    return r;
}

START_TEST(alloc_failures)
{
    char msg[128];
    long tried = 0;
    int r = fut_failalloc_each(alloc_op, NULL, 100, &tried, msg, sizeof msg);
    ck_assert_msg(r == 0, "failalloc: %d at N=%ld: %s", r, tried, msg);
    ck_assert_msg(tried >= 6, "only %ld allocations tried", tried);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sync_mpsc");
    TCase *tc = fut_test_tcase(s, "basic");
    tcase_add_test(tc, bounded_try_send_recv);
    tcase_add_test(tc, bad_arguments);
    tcase_add_test(tc, unbounded_grows);
    tcase_add_test(tc, futures_bounded);
    tcase_add_test(tc, futures_unbounded);
    tcase_add_test(tc, end_bounded);
    tcase_add_test(tc, end_unbounded);
    tcase_add_test(tc, rx_drop_bounded);
    tcase_add_test(tc, rx_drop_unbounded);
    tcase_add_test(tc, dtor_at_free);
    tcase_add_test(tc, reserve_permits);
    tcase_add_test(tc, permit_after_rx_drop);
    tcase_add_test(tc, close_then_drain);
    tcase_add_test(tc, close_pending_recv);
    tcase_add_test(tc, senders_fifo);
    tcase_add_test(tc, send_drop_passes_room);
    tcase_add_test(tc, coop_budget);
    tcase_add_test(tc, stream_view);
    tcase_add_test(tc, pending_future_moves_thread);
    tcase_add_test(tc, alloc_failures);
    tc = fut_test_tcase(s, "drop");
    tcase_add_test(tc, drop_send);
    tcase_add_test(tc, drop_reserve);
    tcase_add_test(tc, drop_recv_bounded);
    tcase_add_test(tc, drop_recv_unbounded);
    tcase_add_test(tc, drop_recv_keeps_messages);
    tc = fut_test_tcase(s, "cancel_load");
    tcase_add_test(tc, cancel_under_load);
    tcase_add_test(tc, cancel_under_load_unbounded);
    tc = fut_test_tcase(s, "stress_cap1");
    tcase_add_test(tc, stress_cap1);
    tc = fut_test_tcase(s, "stress_cap16");
    tcase_add_test(tc, stress_cap16);
    tc = fut_test_tcase(s, "stress_cap1024");
    tcase_add_test(tc, stress_cap1024);
    tc = fut_test_tcase(s, "stress_runtimes");
    tcase_add_test(tc, stress_runtimes);
    return fut_test_run(s);
}
