/* SPDX-License-Identifier: MIT */
/* The watch channel (include/fut/chan.h): the latest value, changed
 * notification (coalescing), borrow vs borrow_and_update, subscribe,
 * closing, send without receivers, drop-at-every-PENDING (cancel-safe:
 * the seen version moves only on READY), threads (values never go back,
 * the last one is always seen). */
#include "sync_util.h"

#define U64 sizeof(uint64_t)

START_TEST(latest_value)
{
    struct fut_watch_tx tx;
    struct fut_watch_rx rx, rx2;
    uint64_t init = 10, v, out = 0;
    ASSERT_EQ(fut_watch_new(0, &init, &tx, &rx), FUT_EINVAL);
    ASSERT_EQ(fut_watch_new(U64, &init, &tx, &rx), 0);
    fut_watch_borrow(&rx, &out);
    ASSERT_EQ(out, 10);
    ASSERT_EQ(fut_watch_has_changed(&rx), 0); /* the initial value is seen */
    struct twaker w = {0, 0};
    struct fut_watch_changed c;
    fut_watch_changed_init(&c, &rx);
    ASSERT_EQ(tpoll(&c, &w), FUT_PENDING);
    v = 11;
    ASSERT_EQ(fut_watch_send(&tx, &v), 0);
    v = 12;
    ASSERT_EQ(fut_watch_send(&tx, &v), 0);
    ASSERT_EQ(w.wakes, 1);
    ASSERT_EQ(tpoll(&c, &w), FUT_READY); /* two sends, one change */
    ASSERT_EQ(c.result, 0);
    fut_drop(&c.base);
    fut_watch_borrow(&rx, &out);
    ASSERT_EQ(out, 12);
    ASSERT_EQ(fut_watch_has_changed(&rx), 0);
    fut_watch_changed_init(&c, &rx);
    ASSERT_EQ(tpoll(&c, &w), FUT_PENDING);
    fut_drop(&c.base);
    /* borrow does not mark seen; borrow_and_update does. */
    v = 13;
    ASSERT_EQ(fut_watch_send(&tx, &v), 0);
    ASSERT_EQ(fut_watch_has_changed(&rx), 1);
    fut_watch_borrow(&rx, &out);
    ASSERT_EQ(fut_watch_has_changed(&rx), 1);
    fut_watch_borrow_and_update(&rx, &out);
    ASSERT_EQ(out, 13);
    ASSERT_EQ(fut_watch_has_changed(&rx), 0);
    /* A new receiver starts with the current value seen; a clone with the
     * same seen version. */
    ASSERT_EQ(fut_watch_subscribe(&tx, &rx2), 0);
    ASSERT_EQ(fut_watch_has_changed(&rx2), 0);
    fut_watch_rx_drop(&rx2);
    /* The last sender gone: changed gives ECLOSED once nothing is
     * unseen; an unseen value is reported first. */
    v = 14;
    ASSERT_EQ(fut_watch_send(&tx, &v), 0);
    ASSERT_EQ(fut_watch_rx_clone(&rx, &rx2), 0);
    fut_watch_tx_drop(&tx);
    fut_watch_changed_init(&c, &rx2);
    ASSERT_EQ(tpoll(&c, &w), FUT_READY);
    ASSERT_EQ(c.result, 0);
    fut_drop(&c.base);
    fut_watch_changed_init(&c, &rx2);
    ASSERT_EQ(tpoll(&c, &w), FUT_READY);
    ASSERT_EQ(c.result, FUT_ECLOSED);
    fut_drop(&c.base);
    ASSERT_EQ(fut_watch_has_changed(&rx), 1);
    fut_watch_borrow_and_update(&rx, &out);
    ASSERT_EQ(out, 14);
    ASSERT_EQ(fut_watch_has_changed(&rx), FUT_ECLOSED);
    fut_watch_rx_drop(&rx);
    fut_watch_rx_drop(&rx2);
    ASSERT_EQ(w.refs, 0);
}
END_TEST

START_TEST(closed_wakes_and_no_receivers)
{
    struct fut_watch_tx tx, tx2;
    struct fut_watch_rx rx;
    uint64_t init = 1, v = 2, old = 0;
    ASSERT_EQ(fut_watch_new(U64, &init, &tx, &rx), 0);
    ASSERT_EQ(fut_watch_tx_clone(&tx, &tx2), 0);
    struct twaker w = {0, 0};
    struct fut_watch_changed c;
    fut_watch_changed_init(&c, &rx);
    ASSERT_EQ(tpoll(&c, &w), FUT_PENDING);
    fut_watch_tx_drop(&tx);
    ASSERT_EQ(w.wakes, 0); /* tx2 still alive */
    fut_watch_tx_drop(&tx2);
    ASSERT_EQ(w.wakes, 1);
    ASSERT_EQ(tpoll(&c, &w), FUT_READY);
    ASSERT_EQ(c.result, FUT_ECLOSED);
    fut_drop(&c.base);
    fut_watch_rx_drop(&rx);
    /* No receiver: send refuses, send_replace stores anyway. */
    ASSERT_EQ(fut_watch_new(U64, &init, &tx, &rx), 0);
    fut_watch_rx_drop(&rx);
    ASSERT_EQ(fut_watch_send(&tx, &v), FUT_ECLOSED);
    fut_watch_send_replace(&tx, &v, &old);
    ASSERT_EQ(old, 1);
    ASSERT_EQ(fut_watch_subscribe(&tx, &rx), 0);
    uint64_t out;
    fut_watch_borrow(&rx, &out);
    ASSERT_EQ(out, 2);
    fut_watch_rx_drop(&rx);
    fut_watch_tx_drop(&tx);
    ASSERT_EQ(w.refs, 0);
}
END_TEST

/* ----------------------------------------------- drop at every PENDING */

static struct fut_watch_rx kept;
static uint64_t last_marked; /* value read right after the last READY */
static long changes;

struct wsender {
    struct fut_future base;
    struct fut_watch_tx tx;
    struct yield_n y;
    uint64_t i;
};

static int wsender_poll(struct fut_future *f, struct fut_context *cx)
{
    struct wsender *s = (struct wsender *)f;
    FUT_BEGIN(f);
    for (s->i = 1; s->i <= 5; s->i++) {
        yield_n_init(&s->y, 70);
        FUT_AWAIT(f, &s->y);
        fut_watch_send(&s->tx, &s->i);
    }
    FUT_END(f);
}

static void wsender_cleanup(struct fut_future *f)
{
    fut_watch_tx_drop(&((struct wsender *)f)->tx);
}

FUT_ASYNC_VTABLE(wsender_vt, "wsender", wsender_poll, wsender_cleanup);

struct wwatcher {
    struct fut_future base;
    struct fut_watch_changed c;
};

static int wwatcher_poll(struct fut_future *f, struct fut_context *cx)
{
    struct wwatcher *w = (struct wwatcher *)f;
    FUT_BEGIN(f);
    for (;;) {
        fut_watch_changed_init(&w->c, &kept);
        FUT_AWAIT(f, &w->c);
        if (w->c.result != 0)
            break;
        fut_watch_borrow(&kept, &last_marked);
        changes++;
    }
    FUT_END(f);
}

FUT_ASYNC_VTABLE(wwatcher_vt, "wwatcher", wwatcher_poll, NULL);

static struct wwatcher under;

static struct fut_future *make_watcher(void *ud, struct fut_runtime *rt)
{
    (void)ud;
    last_marked = 0;
    changes = 0;
    struct wsender s;
    memset(&s, 0, sizeof s);
    fut_future_init(&s.base, &wsender_vt);
    uint64_t zero = 0;
    ck_assert_int_eq(fut_watch_new(U64, &zero, &s.tx, &kept), 0);
    ck_assert_int_eq(fut_spawn(rt, &s, sizeof s, NULL), 0);
    fut_future_init(&under.base, &wwatcher_vt);
    return &under.base;
}

/* A dropped changed future did not mark anything seen: the receiver
 * reports a change exactly when the current value is newer than the one
 * read at the last READY. */
static int check_watcher(void *ud, int k)
{
    (void)ud;
    uint64_t cur;
    fut_watch_borrow(&kept, &cur);
    int hc = fut_watch_has_changed(&kept);
    int ok = cur == 5 && (hc == 1) == (cur != last_marked);
    ok = ok && (k != 0 || (changes == 5 && last_marked == 5));
    fut_watch_rx_drop(&kept);
    return !ok;
}

START_TEST(drop_watch_changed)
{
    run_harness(make_watcher, check_watcher, NULL, 5);
}
END_TEST

/* ----------------------------------------------------------- threads */

static struct fut_watch_tx ttx;
static struct fut_watch_rx trx[3];

struct tsender {
    struct fut_future base;
    uint64_t n;
};

static int tsender_poll(struct fut_future *f, struct fut_context *cx)
{
    struct tsender *s = (struct tsender *)f;
    (void)cx;
    for (uint64_t i = 1; i <= s->n; i++)
        ck_assert_int_eq(fut_watch_send(&ttx, &i), 0);
    fut_watch_tx_drop(&ttx);
    return FUT_READY;
}

static const struct fut_future_vtable tsender_vt = {tsender_poll, NULL,
                                                    "tsender", NULL};

struct treader {
    struct fut_future base;
    struct fut_watch_rx *rx;
    struct fut_watch_changed c;
    int active;
    uint64_t last, seen_changes;
    long back; /* values that went backwards */
};

static int treader_poll(struct fut_future *f, struct fut_context *cx)
{
    struct treader *t = (struct treader *)f;
    for (;;) {
        if (!t->active) {
            fut_watch_changed_init(&t->c, t->rx);
            t->active = 1;
        }
        if (fut_poll(&t->c.base, cx) == FUT_PENDING)
            return FUT_PENDING;
        fut_drop(&t->c.base);
        t->active = 0;
        uint64_t v;
        fut_watch_borrow(t->rx, &v);
        if (v < t->last)
            t->back++;
        t->last = v;
        if (t->c.result == FUT_ECLOSED)
            return FUT_READY;
        t->seen_changes++;
    }
}

static const struct fut_future_vtable treader_vt = {treader_poll, NULL,
                                                    "treader", NULL};

START_TEST(watch_threads)
{
    uint64_t n = TEST_ITERS(200000, 20000);
    uint64_t zero = 0;
    ASSERT_EQ(fut_watch_new(U64, &zero, &ttx, &trx[0]), 0);
    ASSERT_EQ(fut_watch_rx_clone(&trx[0], &trx[1]), 0);
    ASSERT_EQ(fut_watch_rx_clone(&trx[0], &trx[2]), 0);
    static struct treader r[3];
    struct tsender s;
    fut_future_init(&s.base, &tsender_vt);
    s.n = n;
    struct tpool p = {.n = 0};
    for (int i = 0; i < 3; i++) {
        memset(&r[i], 0, sizeof r[i]);
        fut_future_init(&r[i].base, &treader_vt);
        r[i].rx = &trx[i];
        tpool_start(&p, block_on_thread, &r[i]);
    }
    tpool_start(&p, block_on_thread, &s);
    tpool_join(&p);
    for (int i = 0; i < 3; i++) {
        ASSERT_EQ(r[i].back, 0);
        ASSERT_EQ(r[i].last, n); /* the final value was seen */
        ASSERT_TRUE(r[i].seen_changes >= 1 && r[i].seen_changes <= n);
        fut_watch_rx_drop(&trx[i]);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sync_watch");
    TCase *tc = fut_test_tcase(s, "basic");
    tcase_add_test(tc, latest_value);
    tcase_add_test(tc, closed_wakes_and_no_receivers);
    tcase_add_test(tc, drop_watch_changed);
    tc = fut_test_tcase(s, "threads");
    tcase_add_test(tc, watch_threads);
    return fut_test_run(s);
}
