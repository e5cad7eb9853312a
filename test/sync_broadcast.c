/* SPDX-License-Identifier: MIT */
/* The broadcast channel (include/fut/chan.h): every receiver sees every
 * message; subscribe sees only later ones; the exact lag count; closing;
 * the recv future wakes every waiting receiver; drop-at-every-PENDING
 * (cancel-safe: the position moves only on READY); threads. */
#include "sync_util.h"

#define U64 sizeof(uint64_t)

START_TEST(fan_out)
{
    struct fut_broadcast_tx tx, tx2;
    struct fut_broadcast_rx r1, r2, r3;
    ASSERT_EQ(fut_broadcast_new(8, U64, &tx, &r1), 0);
    ASSERT_EQ(fut_broadcast_rx_clone(&r1, &r2), 0);
    uint64_t v = 1, out, lag;
    ASSERT_EQ(fut_broadcast_send(&tx, &v), 2); /* two receivers */
    ASSERT_EQ(fut_broadcast_subscribe(&tx, &r3), 0);
    v = 2;
    ASSERT_EQ(fut_broadcast_send(&tx, &v), 3);
    for (int i = 0; i < 2; i++) {
        struct fut_broadcast_rx *r = i ? &r2 : &r1;
        ASSERT_EQ(fut_broadcast_try_recv(r, &out, &lag), 0);
        ASSERT_EQ(out, 1);
        ASSERT_EQ(fut_broadcast_try_recv(r, &out, &lag), 0);
        ASSERT_EQ(out, 2);
        ASSERT_EQ(fut_broadcast_try_recv(r, &out, &lag), FUT_EEMPTY);
    }
    ASSERT_EQ(fut_broadcast_try_recv(&r3, &out, &lag), 0); /* only later */
    ASSERT_EQ(out, 2);
    ASSERT_EQ(fut_broadcast_tx_clone(&tx, &tx2), 0);
    fut_broadcast_tx_drop(&tx);
    v = 3;
    ASSERT_EQ(fut_broadcast_send(&tx2, &v), 3);
    fut_broadcast_tx_drop(&tx2); /* the last sender */
    ASSERT_EQ(fut_broadcast_try_recv(&r1, &out, &lag), 0);
    ASSERT_EQ(out, 3);
    ASSERT_EQ(fut_broadcast_try_recv(&r1, &out, &lag), FUT_ECLOSED);
    fut_broadcast_rx_drop(&r1);
    fut_broadcast_rx_drop(&r2);
    fut_broadcast_rx_drop(&r3);
}
END_TEST

START_TEST(no_receivers)
{
    struct fut_broadcast_tx tx;
    struct fut_broadcast_rx rx, later;
    ASSERT_EQ(fut_broadcast_new(0, U64, &tx, &rx), FUT_EINVAL);
    ASSERT_EQ(fut_broadcast_new(4, 0, &tx, &rx), FUT_EINVAL);
    ASSERT_EQ(fut_broadcast_new(4, U64, &tx, &rx), 0);
    fut_broadcast_rx_drop(&rx);
    uint64_t v = 1, out, lag;
    ASSERT_EQ(fut_broadcast_send(&tx, &v), FUT_ECLOSED); /* not stored */
    ASSERT_EQ(fut_broadcast_subscribe(&tx, &later), 0);
    ASSERT_EQ(fut_broadcast_try_recv(&later, &out, &lag), FUT_EEMPTY);
    fut_broadcast_rx_drop(&later);
    fut_broadcast_tx_drop(&tx);
}
END_TEST

/* The lag count is exact: capacity 4, 10 sent, the slow receiver misses
 * the 6 oldest, is told so once, then gets the 4 kept, in order. */
START_TEST(lag_exact)
{
    struct fut_broadcast_tx tx;
    struct fut_broadcast_rx slow, fast;
    ASSERT_EQ(fut_broadcast_new(4, U64, &tx, &slow), 0);
    ASSERT_EQ(fut_broadcast_rx_clone(&slow, &fast), 0);
    uint64_t out, lag = 0;
    for (uint64_t i = 0; i < 10; i++) {
        ASSERT_EQ(fut_broadcast_send(&tx, &i), 2);
        ASSERT_EQ(fut_broadcast_try_recv(&fast, &out, &lag), 0);
        ASSERT_EQ(out, i);
    }
    ASSERT_EQ(fut_broadcast_try_recv(&slow, &out, &lag), FUT_ELAGGED);
    ASSERT_EQ(lag, 6);
    for (uint64_t i = 6; i < 10; i++) {
        ASSERT_EQ(fut_broadcast_try_recv(&slow, &out, &lag), 0);
        ASSERT_EQ(out, i);
    }
    ASSERT_EQ(fut_broadcast_try_recv(&slow, &out, &lag), FUT_EEMPTY);
    /* The future reports it the same way. */
    for (uint64_t i = 10; i < 15; i++)
        ASSERT_EQ(fut_broadcast_send(&tx, &i), 2);
    struct twaker w = {0, 0};
    struct fut_broadcast_recv r;
    fut_broadcast_recv_init(&r, &slow, &out);
    ASSERT_EQ(tpoll(&r, &w), FUT_READY);
    ASSERT_EQ(r.result, FUT_ELAGGED);
    ASSERT_EQ(r.lagged, 1);
    fut_drop(&r.base);
    fut_broadcast_recv_init(&r, &slow, &out);
    ASSERT_EQ(tpoll(&r, &w), FUT_READY);
    ASSERT_EQ(r.result, 0);
    ASSERT_EQ(out, 11);
    fut_drop(&r.base);
    fut_broadcast_tx_drop(&tx);
    fut_broadcast_rx_drop(&slow);
    fut_broadcast_rx_drop(&fast);
}
END_TEST

/* One send wakes every waiting receiver; the last sender's drop wakes
 * them with FUT_ECLOSED. */
START_TEST(wakes_all)
{
    enum { N = 40 };
    struct fut_broadcast_tx tx;
    static struct fut_broadcast_rx rx[N];
    static struct fut_broadcast_recv r[N];
    static struct twaker w[N];
    static uint64_t out[N];
    ASSERT_EQ(fut_broadcast_new(2, U64, &tx, &rx[0]), 0);
    for (int i = 1; i < N; i++)
        ASSERT_EQ(fut_broadcast_rx_clone(&rx[0], &rx[i]), 0);
    for (int i = 0; i < N; i++) {
        memset(&w[i], 0, sizeof w[i]);
        fut_broadcast_recv_init(&r[i], &rx[i], &out[i]);
        ASSERT_EQ(tpoll(&r[i], &w[i]), FUT_PENDING);
        ASSERT_EQ(tpoll(&r[i], &w[i]), FUT_PENDING); /* re-poll: fine */
    }
    uint64_t v = 5;
    ASSERT_EQ(fut_broadcast_send(&tx, &v), N);
    for (int i = 0; i < N; i++) {
        ASSERT_EQ(w[i].wakes, 1);
        ASSERT_EQ(tpoll(&r[i], &w[i]), FUT_READY);
        ASSERT_EQ(r[i].result, 0);
        ASSERT_EQ(out[i], 5);
        fut_drop(&r[i].base);
        fut_broadcast_recv_init(&r[i], &rx[i], &out[i]);
        ASSERT_EQ(tpoll(&r[i], &w[i]), FUT_PENDING);
    }
    fut_broadcast_tx_drop(&tx);
    for (int i = 0; i < N; i++) {
        ASSERT_EQ(w[i].wakes, 2);
        ASSERT_EQ(tpoll(&r[i], &w[i]), FUT_READY);
        ASSERT_EQ(r[i].result, FUT_ECLOSED);
        fut_drop(&r[i].base);
        fut_broadcast_rx_drop(&rx[i]);
        ASSERT_EQ(w[i].refs, 0);
    }
}
END_TEST

/* ----------------------------------------------- drop at every PENDING */

static struct fut_broadcast_rx kept; /* outlives the future under test */
static long sent, received, bad;

struct bsender {
    struct fut_future base;
    struct fut_broadcast_tx tx;
    struct yield_n y;
    uint64_t i;
};

static int bsender_poll(struct fut_future *f, struct fut_context *cx)
{
    struct bsender *s = (struct bsender *)f;
    FUT_BEGIN(f);
    for (s->i = 0; s->i < 6; s->i++) {
        yield_n_init(&s->y, 70);
        FUT_AWAIT(f, &s->y);
        if (fut_broadcast_send(&s->tx, &s->i) > 0)
            sent++;
    }
    FUT_END(f);
}

static void bsender_cleanup(struct fut_future *f)
{
    fut_broadcast_tx_drop(&((struct bsender *)f)->tx);
}

FUT_ASYNC_VTABLE(bsender_vt, "bsender", bsender_poll, bsender_cleanup);

struct breceiver {
    struct fut_future base;
    struct fut_broadcast_recv r;
    uint64_t msg;
};

static int breceiver_poll(struct fut_future *f, struct fut_context *cx)
{
    struct breceiver *b = (struct breceiver *)f;
    FUT_BEGIN(f);
    for (;;) {
        fut_broadcast_recv_init(&b->r, &kept, &b->msg);
        FUT_AWAIT(f, &b->r);
        if (b->r.result != 0)
            break;
        if (b->msg != (uint64_t)received)
            bad++;
        received++;
    }
    FUT_END(f);
}

FUT_ASYNC_VTABLE(breceiver_vt, "breceiver", breceiver_poll, NULL);

static struct breceiver under;

static struct fut_future *make_brecv(void *ud, struct fut_runtime *rt)
{
    (void)ud;
    sent = received = bad = 0;
    struct bsender s;
    memset(&s, 0, sizeof s);
    fut_future_init(&s.base, &bsender_vt);
    ck_assert_int_eq(fut_broadcast_new(16, U64, &s.tx, &kept), 0);
    ck_assert_int_eq(fut_spawn(rt, &s, sizeof s, NULL), 0);
    fut_future_init(&under.base, &breceiver_vt);
    return &under.base;
}

/* The receiver's position did not move for a dropped recv: what it did
 * not receive is still there for it, in order, then the end. */
static int check_brecv(void *ud, int k)
{
    (void)ud;
    uint64_t out, lag, next = (uint64_t)received;
    int r, ok = bad == 0;
    while ((r = fut_broadcast_try_recv(&kept, &out, &lag)) == 0)
        ok = ok && out == next++;
    ok = ok && r == FUT_ECLOSED && (long)next == sent && sent == 6;
    ok = ok && (k != 0 || received == 6);
    fut_broadcast_rx_drop(&kept);
    return !ok;
}

START_TEST(drop_broadcast_recv)
{
    run_harness(make_brecv, check_brecv, NULL, 6);
}
END_TEST

/* ----------------------------------------------------------- threads */

/* Two sender threads, three receiver threads; capacity large enough that
 * nobody lags: every receiver sees every message once, each sender's in
 * order. */
static struct fut_broadcast_rx trx[3];

struct tbsend {
    struct fut_future base;
    struct fut_broadcast_tx tx;
    uint64_t id, n;
};

static int tbsend_poll(struct fut_future *f, struct fut_context *cx)
{
    struct tbsend *s = (struct tbsend *)f;
    (void)cx;
    for (uint64_t i = 0; i < s->n; i++) {
        uint64_t v = (s->id << 32) | i;
        ck_assert_int_gt(fut_broadcast_send(&s->tx, &v), 0);
    }
    fut_broadcast_tx_drop(&s->tx);
    return FUT_READY;
}

static const struct fut_future_vtable tbsend_vt = {tbsend_poll, NULL,
                                                   "tbsend", NULL};

struct tbrecv {
    struct fut_future base;
    struct fut_broadcast_rx *rx;
    struct fut_broadcast_recv r;
    int active;
    uint64_t msg, next[2], count, lagged;
    long bad;
};

static int tbrecv_poll(struct fut_future *f, struct fut_context *cx)
{
    struct tbrecv *t = (struct tbrecv *)f;
    for (;;) {
        if (!t->active) {
            fut_broadcast_recv_init(&t->r, t->rx, &t->msg);
            t->active = 1;
        }
        if (fut_poll(&t->r.base, cx) == FUT_PENDING)
            return FUT_PENDING;
        fut_drop(&t->r.base);
        t->active = 0;
        if (t->r.result == FUT_ECLOSED)
            return FUT_READY;
        if (t->r.result == FUT_ELAGGED) {
            t->lagged += t->r.lagged;
            continue;
        }
        uint64_t id = t->msg >> 32, seq = t->msg & 0xffffffffu;
        if (id > 1 || seq != t->next[id])
            t->bad++;
        else
            t->next[id]++;
        t->count++;
    }
}

static const struct fut_future_vtable tbrecv_vt = {tbrecv_poll, NULL,
                                                   "tbrecv", NULL};

START_TEST(broadcast_threads)
{
    uint64_t per = TEST_ITERS(50000, 5000);
    struct fut_broadcast_tx tx;
    ASSERT_EQ(fut_broadcast_new(1 << 17, U64, &tx, &trx[0]), 0);
    ASSERT_EQ(fut_broadcast_rx_clone(&trx[0], &trx[1]), 0);
    ASSERT_EQ(fut_broadcast_rx_clone(&trx[0], &trx[2]), 0);
    static struct tbsend s[2];
    static struct tbrecv r[3];
    struct tpool p = {.n = 0};
    for (int i = 0; i < 3; i++) {
        memset(&r[i], 0, sizeof r[i]);
        fut_future_init(&r[i].base, &tbrecv_vt);
        r[i].rx = &trx[i];
        tpool_start(&p, block_on_thread, &r[i]);
    }
    for (int i = 0; i < 2; i++) {
        fut_future_init(&s[i].base, &tbsend_vt);
        ASSERT_EQ(fut_broadcast_tx_clone(&tx, &s[i].tx), 0);
        s[i].id = (uint64_t)i;
        s[i].n = per;
    }
    fut_broadcast_tx_drop(&tx);
    for (int i = 0; i < 2; i++)
        tpool_start(&p, block_on_thread, &s[i]);
    tpool_join(&p);
    for (int i = 0; i < 3; i++) {
        ASSERT_EQ(r[i].bad, 0);
        ASSERT_EQ(r[i].lagged, 0);
        ASSERT_EQ(r[i].count, 2 * per);
        fut_broadcast_rx_drop(&trx[i]);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sync_broadcast");
    TCase *tc = fut_test_tcase(s, "basic");
    tcase_add_test(tc, fan_out);
    tcase_add_test(tc, no_receivers);
    tcase_add_test(tc, lag_exact);
    tcase_add_test(tc, wakes_all);
    tcase_add_test(tc, drop_broadcast_recv);
    tc = fut_test_tcase(s, "threads");
    tcase_add_test(tc, broadcast_threads);
    return fut_test_run(s);
}
