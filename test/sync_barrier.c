/* SPDX-License-Identifier: MIT */
/* The barrier (include/fut/sync.h): the n-th wait releases a generation
 * and leads it; reuse; a wait dropped before the release withdraws its
 * arrival (cancel-safe); drop-at-every-PENDING; one leader per generation
 * across threads. */
#include "sync_util.h"

START_TEST(release_and_leader)
{
    struct fut_barrier b;
    fut_barrier_init(&b, 3);
    for (int gen = 0; gen < 3; gen++) {
        struct fut_barrier_wait f[3];
        struct twaker w[3] = {{0, 0}, {0, 0}, {0, 0}};
        for (int i = 0; i < 2; i++) {
            fut_barrier_wait_init(&f[i], &b);
            ASSERT_EQ(tpoll(&f[i], &w[i]), FUT_PENDING);
        }
        fut_barrier_wait_init(&f[2], &b);
        ASSERT_EQ(tpoll(&f[2], &w[2]), FUT_READY);
        ASSERT_EQ(f[2].is_leader, 1);
        ASSERT_EQ(w[0].wakes, 1);
        ASSERT_EQ(w[1].wakes, 1);
        for (int i = 0; i < 2; i++) {
            ASSERT_EQ(tpoll(&f[i], &w[i]), FUT_READY);
            ASSERT_EQ(f[i].is_leader, 0);
        }
        for (int i = 0; i < 3; i++) {
            fut_drop(&f[i].base);
            ASSERT_EQ(w[i].refs, 0);
        }
    }
    fut_barrier_fini(&b);
    /* n = 0 and n = 1: every wait is its own generation. */
    for (size_t n = 0; n < 2; n++) {
        fut_barrier_init(&b, n);
        struct fut_barrier_wait f;
        struct twaker w = {0, 0};
        fut_barrier_wait_init(&f, &b);
        ASSERT_EQ(tpoll(&f, &w), FUT_READY);
        ASSERT_EQ(f.is_leader, 1);
        fut_drop(&f.base);
        fut_barrier_fini(&b);
    }
}
END_TEST

/* A wait dropped before the release withdraws its arrival; one dropped
 * after the release changes nothing. */
START_TEST(drop_withdraws)
{
    struct fut_barrier b;
    fut_barrier_init(&b, 2);
    struct fut_barrier_wait a, c, d;
    struct twaker wa = {0, 0}, wc = {0, 0}, wd = {0, 0};
    fut_barrier_wait_init(&a, &b);
    ASSERT_EQ(tpoll(&a, &wa), FUT_PENDING);
    fut_drop(&a.base); /* withdrawn */
    ASSERT_EQ(wa.refs, 0);
    fut_barrier_wait_init(&c, &b);
    ASSERT_EQ(tpoll(&c, &wc), FUT_PENDING); /* not released by a ghost */
    fut_barrier_wait_init(&d, &b);
    ASSERT_EQ(tpoll(&d, &wd), FUT_READY);
    ASSERT_EQ(d.is_leader, 1);
    ASSERT_EQ(wc.wakes, 1);
    fut_drop(&c.base); /* released, never polled: nothing to undo */
    fut_drop(&d.base);
    /* The next generation starts clean. */
    fut_barrier_wait_init(&a, &b);
    ASSERT_EQ(tpoll(&a, &wa), FUT_PENDING);
    fut_barrier_wait_init(&c, &b);
    ASSERT_EQ(tpoll(&c, &wc), FUT_READY);
    ASSERT_EQ(tpoll(&a, &wa), FUT_READY);
    ASSERT_EQ(a.is_leader + c.is_leader, 1);
    fut_drop(&a.base);
    fut_drop(&c.base);
    ASSERT_EQ(wa.refs + wc.refs + wd.refs, 0);
    fut_barrier_fini(&b);
}
END_TEST

/* More waiters than one wake batch, and a waiter dropped while the
 * leader is still waking the batch list. */
START_TEST(big_generation)
{
    enum { N = 100 };
    struct fut_barrier b;
    fut_barrier_init(&b, N);
    static struct fut_barrier_wait f[N];
    static struct twaker w[N];
    for (int i = 0; i < N - 1; i++) {
        memset(&w[i], 0, sizeof w[i]);
        fut_barrier_wait_init(&f[i], &b);
        ASSERT_EQ(tpoll(&f[i], &w[i]), FUT_PENDING);
    }
    memset(&w[N - 1], 0, sizeof w[N - 1]);
    fut_barrier_wait_init(&f[N - 1], &b);
    ASSERT_EQ(tpoll(&f[N - 1], &w[N - 1]), FUT_READY);
    int leaders = 0;
    for (int i = 0; i < N; i++) {
        ASSERT_EQ(tpoll(&f[i], &w[i]), FUT_READY);
        leaders += f[i].is_leader;
        fut_drop(&f[i].base);
        ASSERT_EQ(w[i].refs, 0);
    }
    ASSERT_EQ(leaders, 1);
    fut_barrier_fini(&b);
}
END_TEST

/* ----------------------------------------------- drop at every PENDING */

static struct fut_barrier hb;
static int partner_done;

/* A partner task: after yields, waits once. */
struct partner {
    struct fut_future base;
    struct yield_n y;
    struct fut_barrier_wait w;
};

static int partner_poll(struct fut_future *f, struct fut_context *cx)
{
    struct partner *p = (struct partner *)f;
    FUT_BEGIN(f);
    yield_n_init(&p->y, 70);
    FUT_AWAIT(f, &p->y);
    fut_barrier_wait_init(&p->w, &hb);
    FUT_AWAIT(f, &p->w);
    partner_done = 1;
    FUT_END(f);
}

FUT_ASYNC_VTABLE(partner_vt, "partner", partner_poll, NULL);

static struct fut_barrier_wait under;

static struct fut_future *make_wait(void *ud, struct fut_runtime *rt)
{
    (void)ud;
    fut_barrier_init(&hb, 2);
    partner_done = 0;
    struct partner p;
    memset(&p, 0, sizeof p);
    fut_future_init(&p.base, &partner_vt);
    ck_assert_int_eq(fut_spawn(rt, &p, sizeof p, NULL), 0);
    fut_barrier_wait_init(&under, &hb);
    return &under.base;
}

/* Run to completion: both released. Dropped while waiting: the arrival
 * was withdrawn, so the partner is the only arrival (it stayed pending
 * until the runtime dropped it, withdrawing too): a fresh generation of
 * two needs two new waits - the first must not be released alone. */
static int check_wait(void *ud, int k)
{
    (void)ud;
    int ok = k == 0 ? partner_done : !partner_done;
    struct fut_barrier_wait a, c;
    struct twaker wa = {0, 0}, wc = {0, 0};
    fut_barrier_wait_init(&a, &hb);
    ok = ok && tpoll(&a, &wa) == FUT_PENDING;
    fut_barrier_wait_init(&c, &hb);
    ok = ok && tpoll(&c, &wc) == FUT_READY;
    ok = ok && tpoll(&a, &wa) == FUT_READY;
    fut_drop(&a.base);
    fut_drop(&c.base);
    fut_barrier_fini(&hb);
    return !ok;
}

START_TEST(drop_barrier_wait)
{
    run_harness(make_wait, check_wait, NULL, 1);
}
END_TEST

/* ---------------------------------------------------------- threads */

static struct fut_barrier tb;
static atomic_long leaders;

struct tparty {
    struct fut_future base;
    struct fut_barrier_wait w;
    int active;
    long gens, done;
};

static int tparty_poll(struct fut_future *f, struct fut_context *cx)
{
    struct tparty *t = (struct tparty *)f;
    while (t->done < t->gens) {
        if (!t->active) {
            fut_barrier_wait_init(&t->w, &tb);
            t->active = 1;
        }
        if (fut_poll(&t->w.base, cx) == FUT_PENDING)
            return FUT_PENDING;
        if (t->w.is_leader)
            atomic_fetch_add(&leaders, 1);
        fut_drop(&t->w.base);
        t->active = 0;
        t->done++;
    }
    return FUT_READY;
}

static const struct fut_future_vtable tparty_vt = {tparty_poll, NULL,
                                                   "tparty", NULL};

START_TEST(one_leader_per_generation)
{
    enum { T = 4 };
    long gens = TEST_ITERS(20000, 2000);
    fut_barrier_init(&tb, T);
    atomic_store(&leaders, 0);
    static struct tparty t[T];
    struct tpool p = {.n = 0};
    for (int i = 0; i < T; i++) {
        memset(&t[i], 0, sizeof t[i]);
        fut_future_init(&t[i].base, &tparty_vt);
        t[i].gens = gens;
        tpool_start(&p, block_on_thread, &t[i]);
    }
    tpool_join(&p);
    ASSERT_EQ(atomic_load(&leaders), gens);
    for (int i = 0; i < T; i++)
        fut_drop(&t[i].base);
    fut_barrier_fini(&tb);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sync_barrier");
    TCase *tc = fut_test_tcase(s, "basic");
    tcase_add_test(tc, release_and_leader);
    tcase_add_test(tc, drop_withdraws);
    tcase_add_test(tc, big_generation);
    tcase_add_test(tc, drop_barrier_wait);
    tc = fut_test_tcase(s, "threads");
    tcase_add_test(tc, one_leader_per_generation);
    return fut_test_run(s);
}
