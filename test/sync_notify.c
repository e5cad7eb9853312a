/* SPDX-License-Identifier: MIT */
/* Notify (include/fut/sync.h): the stored permit, coalescing, FIFO
 * notify_one, notify_waiters reaching futures initialised before the call
 * (polled or not) and no later ones, forwarding of a notification whose
 * future is dropped (loses-position, nothing lost), drop-at-every-PENDING,
 * no lost wakeup across threads. */
#include "sync_util.h"

START_TEST(permit_stored)
{
    struct fut_notify n;
    fut_notify_init(&n);
    struct twaker w = {0, 0};
    struct fut_notified a, b;
    fut_notify_one(&n);
    fut_notify_one(&n); /* coalesces: one permit */
    fut_notified_init(&a, &n);
    ASSERT_EQ(tpoll(&a, &w), FUT_READY); /* takes the permit */
    fut_notified_init(&b, &n);
    ASSERT_EQ(tpoll(&b, &w), FUT_PENDING);
    fut_notify_one(&n);
    ASSERT_EQ(w.wakes, 1);
    ASSERT_EQ(tpoll(&b, &w), FUT_READY);
    ASSERT_EQ(tpoll(&b, &w), FUT_READY); /* C8 */
    fut_drop(&a.base);
    fut_drop(&b.base);
    ASSERT_EQ(w.refs, 0);
    fut_notify_fini(&n);
}
END_TEST

START_TEST(notify_one_fifo)
{
    enum { N = 5 };
    struct fut_notify n;
    fut_notify_init(&n);
    struct fut_notified f[N];
    struct twaker w[N];
    for (int i = 0; i < N; i++) {
        memset(&w[i], 0, sizeof w[i]);
        fut_notified_init(&f[i], &n);
        ASSERT_EQ(tpoll(&f[i], &w[i]), FUT_PENDING);
    }
    for (int i = 0; i < N; i++) {
        fut_notify_one(&n);
        for (int j = 0; j < N; j++)
            ASSERT_EQ(w[j].wakes, j <= i ? 1 : 0);
        ASSERT_EQ(tpoll(&f[i], &w[i]), FUT_READY);
        fut_drop(&f[i].base);
    }
    /* All served: the next notify_one is stored. */
    fut_notify_one(&n);
    struct fut_notified g;
    struct twaker wg = {0, 0};
    fut_notified_init(&g, &n);
    ASSERT_EQ(tpoll(&g, &wg), FUT_READY);
    fut_drop(&g.base);
    for (int i = 0; i < N; i++)
        ASSERT_EQ(w[i].refs, 0);
    fut_notify_fini(&n);
}
END_TEST

/* notify_waiters: wakes every future initialised before the call -
 * queued ones and one not polled yet - stores no permit, and does not
 * reach futures initialised after it. */
START_TEST(notify_waiters_all)
{
    struct fut_notify n;
    fut_notify_init(&n);
    struct twaker w1 = {0, 0}, w2 = {0, 0}, w3 = {0, 0}, w4 = {0, 0};
    struct fut_notified a, b, c, d;
    fut_notified_init(&a, &n);
    fut_notified_init(&b, &n);
    fut_notified_init(&c, &n); /* never polled before the call */
    ASSERT_EQ(tpoll(&a, &w1), FUT_PENDING);
    ASSERT_EQ(tpoll(&b, &w2), FUT_PENDING);
    fut_notify_waiters(&n);
    ASSERT_EQ(w1.wakes, 1);
    ASSERT_EQ(w2.wakes, 1);
    fut_notified_init(&d, &n); /* after the call */
    ASSERT_EQ(tpoll(&a, &w1), FUT_READY);
    ASSERT_EQ(tpoll(&b, &w2), FUT_READY);
    ASSERT_EQ(tpoll(&c, &w3), FUT_READY);
    ASSERT_EQ(tpoll(&d, &w4), FUT_PENDING); /* no permit was stored */
    fut_drop(&d.base);
    ASSERT_EQ(w4.refs, 0);
    fut_drop(&a.base);
    fut_drop(&b.base);
    fut_drop(&c.base);
    ASSERT_EQ(w1.refs + w2.refs + w3.refs, 0);
    fut_notify_fini(&n);
}
END_TEST

/* Many waiters (more than one wake batch) are all woken. */
START_TEST(notify_waiters_many)
{
    enum { N = 100 };
    struct fut_notify n;
    fut_notify_init(&n);
    static struct fut_notified f[N];
    static struct twaker w[N];
    for (int i = 0; i < N; i++) {
        memset(&w[i], 0, sizeof w[i]);
        fut_notified_init(&f[i], &n);
        ASSERT_EQ(tpoll(&f[i], &w[i]), FUT_PENDING);
    }
    fut_notify_waiters(&n);
    for (int i = 0; i < N; i++) {
        ASSERT_EQ(w[i].wakes, 1);
        ASSERT_EQ(tpoll(&f[i], &w[i]), FUT_READY);
        fut_drop(&f[i].base);
        ASSERT_EQ(w[i].refs, 0);
    }
    fut_notify_fini(&n);
}
END_TEST

/* A future chosen by notify_one but dropped before it saw it forwards
 * the notification to the next waiter, or stores it. A queued future
 * dropped before being chosen takes nothing with it. */
START_TEST(drop_forwards)
{
    struct fut_notify n;
    fut_notify_init(&n);
    struct twaker wa = {0, 0}, wb = {0, 0}, wc = {0, 0};
    struct fut_notified a, b, c;
    fut_notified_init(&a, &n);
    fut_notified_init(&b, &n);
    ASSERT_EQ(tpoll(&a, &wa), FUT_PENDING);
    ASSERT_EQ(tpoll(&b, &wb), FUT_PENDING);
    fut_notify_one(&n); /* chooses a */
    ASSERT_EQ(wa.wakes, 1);
    fut_drop(&a.base); /* forwarded to b */
    ASSERT_EQ(wb.wakes, 1);
    fut_drop(&b.base); /* b chosen, dropped too: stored as the permit */
    fut_notified_init(&c, &n);
    ASSERT_EQ(tpoll(&c, &wc), FUT_READY);
    fut_drop(&c.base);
    /* Queued, not chosen, dropped: nothing is stored. */
    fut_notified_init(&a, &n);
    ASSERT_EQ(tpoll(&a, &wa), FUT_PENDING);
    fut_drop(&a.base);
    fut_notified_init(&c, &n);
    ASSERT_EQ(tpoll(&c, &wc), FUT_PENDING);
    fut_notify_one(&n);
    ASSERT_EQ(tpoll(&c, &wc), FUT_READY);
    fut_drop(&c.base);
    ASSERT_EQ(wa.refs + wb.refs + wc.refs, 0);
    fut_notify_fini(&n);
}
END_TEST

/* ----------------------------------------------- drop at every PENDING */

static struct fut_notify hn;
static int other_woken;

/* The other waiter (a task): waits once. */
struct other_wait {
    struct fut_future base;
    struct fut_notified n;
};

static int other_wait_poll(struct fut_future *f, struct fut_context *cx)
{
    struct other_wait *o = (struct other_wait *)f;
    FUT_BEGIN(f);
    fut_notified_init(&o->n, &hn);
    FUT_AWAIT(f, &o->n);
    other_woken = 1;
    FUT_END(f);
}

FUT_ASYNC_VTABLE(other_wait_vt, "other_wait", other_wait_poll, NULL);

/* The notifier (a task): after yields, two notify_one calls. */
struct notifier {
    struct fut_future base;
    struct yield_n y;
    int i;
};

static int notifier_poll(struct fut_future *f, struct fut_context *cx)
{
    struct notifier *t = (struct notifier *)f;
    FUT_BEGIN(f);
    for (t->i = 0; t->i < 2; t->i++) {
        yield_n_init(&t->y, 70);
        FUT_AWAIT(f, &t->y);
        fut_notify_one(&hn);
    }
    FUT_END(f);
}

FUT_ASYNC_VTABLE(notifier_vt, "notifier", notifier_poll, NULL);

/* The future under test: waits for one notification. */
static struct fut_notified under;

static struct fut_future *make_notified(void *ud, struct fut_runtime *rt)
{
    (void)ud;
    fut_notify_init(&hn);
    other_woken = 0;
    fut_notified_init(&under, &hn);
    struct other_wait o;
    memset(&o, 0, sizeof o);
    fut_future_init(&o.base, &other_wait_vt);
    struct notifier t;
    memset(&t, 0, sizeof t);
    fut_future_init(&t.base, &notifier_vt);
    ck_assert_int_eq(fut_spawn(rt, &o, sizeof o, NULL), 0);
    ck_assert_int_eq(fut_spawn(rt, &t, sizeof t, NULL), 0);
    return &under.base;
}

/* Two notifications for two waiters: whether or not the future under test
 * was dropped (even after being chosen), the other waiter got one, and the
 * one the dropped future did not use is still there (forwarded/stored). */
static int check_notified(void *ud, int k)
{
    (void)ud;
    int ok = other_woken;
    if (k > 0) {
        struct fut_notified f;
        struct twaker w = {0, 0};
        fut_notified_init(&f, &hn);
        ok = ok && tpoll(&f, &w) == FUT_READY;
        fut_drop(&f.base);
    }
    fut_notify_fini(&hn);
    return !ok;
}

START_TEST(drop_notified)
{
    run_harness(make_notified, check_notified, NULL, 1);
}
END_TEST

/* ------------------------------------------- no lost wakeup, threads */

/* The classic pattern: workers bump a counter and notify_one; the waiter
 * checks the counter, arms a fut_notified, re-checks, awaits. Some of its
 * waits are dropped mid-way and re-armed. It must see every increment. */
static struct fut_notify tn;
static atomic_long tcount;

struct bumper {
    struct fut_future base;
    long n;
};

static int bumper_poll(struct fut_future *f, struct fut_context *cx)
{
    struct bumper *b = (struct bumper *)f;
    (void)cx;
    for (long i = 0; i < b->n; i++) {
        atomic_fetch_add(&tcount, 1);
        fut_notify_one(&tn);
    }
    return FUT_READY;
}

static const struct fut_future_vtable bumper_vt = {bumper_poll, NULL,
                                                   "bumper", NULL};

struct watcher {
    struct fut_future base;
    struct fut_notified n;
    int armed;
    long target;
    uint32_t rng;
    long waits, drops;
};

static int watcher_poll(struct fut_future *f, struct fut_context *cx)
{
    struct watcher *w = (struct watcher *)f;
    for (;;) {
        if (atomic_load(&tcount) >= w->target)
            return FUT_READY;
        if (!w->armed) {
            fut_notified_init(&w->n, &tn);
            w->armed = 1;
            if (atomic_load(&tcount) >= w->target)
                return FUT_READY;
        }
        if (fut_poll(&w->n.base, cx) == FUT_PENDING) {
            if (xrand(&w->rng) % 4)
                return FUT_PENDING;
            fut_drop(&w->n.base);
            w->armed = 0;
            w->drops++;
            continue;
        }
        fut_drop(&w->n.base);
        w->armed = 0;
        w->waits++;
    }
}

static void watcher_drop(struct fut_future *f)
{
    struct watcher *w = (struct watcher *)f;
    if (w->armed)
        fut_drop(&w->n.base);
}

static const struct fut_future_vtable watcher_vt = {
    watcher_poll, watcher_drop, "watcher", NULL};

START_TEST(no_lost_wakeup_threads)
{
    enum { B = 3 };
    long per = TEST_ITERS(100000, 10000);
    for (int round = 0; round < 3; round++) {
        fut_notify_init(&tn);
        atomic_store(&tcount, 0);
        struct watcher w;
        memset(&w, 0, sizeof w);
        fut_future_init(&w.base, &watcher_vt);
        w.target = B * per;
        w.rng = 99u + (uint32_t)round;
        struct bumper b[B];
        struct tpool p = {.n = 0};
        tpool_start(&p, block_on_thread, &w);
        for (int i = 0; i < B; i++) {
            fut_future_init(&b[i].base, &bumper_vt);
            b[i].n = per;
            tpool_start(&p, block_on_thread, &b[i]);
        }
        tpool_join(&p); /* a lost wakeup hangs here (ctest timeout) */
        ASSERT_EQ(atomic_load(&tcount), B * per);
        fut_drop(&w.base);
        fut_notify_fini(&tn);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sync_notify");
    TCase *tc = fut_test_tcase(s, "basic");
    tcase_add_test(tc, permit_stored);
    tcase_add_test(tc, notify_one_fifo);
    tcase_add_test(tc, notify_waiters_all);
    tcase_add_test(tc, notify_waiters_many);
    tcase_add_test(tc, drop_forwards);
    tcase_add_test(tc, drop_notified);
    tc = fut_test_tcase(s, "threads");
    tcase_add_test(tc, no_lost_wakeup_threads);
    return fut_test_run(s);
}
