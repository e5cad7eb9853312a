/* SPDX-License-Identifier: MIT */
/* Combinators (C14, C8, C11): join2/join_all, select2/select_all (fair and
 * biased), map, then. Most cases poll by hand with a counting waker, so
 * every poll, drop and wake is visible; the 'harness' case runs each
 * combinator over children that allocate (oneshots fed by spawned tasks)
 * through the drop-at-every-PENDING harness. */
#include <string.h>

#include "test.h"

/* ------------------------------------------------------- test waker */

/* A waker that counts its clones, drops and wakes (one thread). */
struct test_waker {
    int refs;  /* clones alive */
    int wakes; /* wake + wake_by_ref calls */
};

static struct fut_waker tw_clone(const void *data);
static void tw_wake(const void *data)
{
    struct test_waker *w = (struct test_waker *)data;
    w->wakes++;
    w->refs--;
}
static void tw_wake_by_ref(const void *data)
{
    ((struct test_waker *)data)->wakes++;
}
static void tw_drop(const void *data)
{
    ((struct test_waker *)data)->refs--;
}
static const struct fut_waker_vtable tw_vt = {tw_clone, tw_wake,
                                              tw_wake_by_ref, tw_drop};
static struct fut_waker tw_clone(const void *data)
{
    ((struct test_waker *)data)->refs++;
    struct fut_waker w = {data, &tw_vt};
    return w;
}

static void cx_init(struct fut_context *cx, struct test_waker *tw)
{
    memset(tw, 0, sizeof *tw);
    struct fut_waker w = {tw, &tw_vt};
    fut_context_init(cx, w);
}

/* ------------------------------------------------------------ join */

START_TEST(join2_waits_for_both)
{
    struct test_waker tw;
    struct fut_context cx;
    cx_init(&cx, &tw);
    int pa = 0, pb = 0, da = 0, db = 0;
    struct counting_future a, b;
    counting_future_init(&a, 1, 1, &pa, &da, 10);
    counting_future_init(&b, 3, 1, &pb, &db, 20);
    struct fut_join2 j;
    long calls = fut_alloc_count();
    fut_join2_init(&j, &a.base, &b.base);
    ASSERT_EQ(fut_poll(&j.base, &cx), FUT_PENDING); /* a 1, b 1 */
    ASSERT_EQ(fut_poll(&j.base, &cx), FUT_PENDING); /* a READY, b 2 */
    ASSERT_TRUE(fut_is_ready(&a.base));
    ASSERT_EQ(da, 0); /* a READY child is not dropped before the join */
    ASSERT_EQ(fut_poll(&j.base, &cx), FUT_PENDING); /* b 3 */
    ASSERT_EQ(fut_poll(&j.base, &cx), FUT_READY);   /* b READY */
    ASSERT_EQ(pa, 2); /* never polled again once READY */
    ASSERT_EQ(pb, 4);
    ASSERT_EQ(a.value, 10);
    ASSERT_EQ(b.value, 20);
    ASSERT_EQ(fut_alloc_count(), calls); /* join never allocates */
    struct fut_future *kids[4];
    ASSERT_EQ(j.base.vt->children(&j.base, kids, 4), 2);
    ASSERT_TRUE(kids[0] == &a.base && kids[1] == &b.base);
    fut_drop(&j.base);
    ASSERT_EQ(da, 1);
    ASSERT_EQ(db, 1);
    fut_drop(&j.base); /* idempotent: nothing dropped twice */
    ASSERT_EQ(da, 1);
    ASSERT_EQ(db, 1);
}
END_TEST

START_TEST(join_all_and_drop_midway)
{
    struct test_waker tw;
    struct fut_context cx;
    cx_init(&cx, &tw);
    int polls[3] = {0}, drops[3] = {0};
    struct counting_future c[3];
    struct fut_future *v[3];
    for (int i = 0; i < 3; i++) {
        counting_future_init(&c[i], i * 2, 1, &polls[i], &drops[i], i);
        v[i] = &c[i].base;
    }
    struct fut_join_all j;
    fut_join_all_init(&j, v, 3);
    ASSERT_EQ(fut_poll(&j.base, &cx), FUT_PENDING); /* c0 READY */
    ASSERT_EQ(j.pending, 2);
    ASSERT_EQ(fut_poll(&j.base, &cx), FUT_PENDING);
    ASSERT_EQ(j.pending, 2);
    ASSERT_EQ(fut_poll(&j.base, &cx), FUT_PENDING); /* c1 READY */
    ASSERT_EQ(j.pending, 1);
    ASSERT_EQ(drops[0] + drops[1] + drops[2], 0);
    /* Cancel now: every child dropped exactly once, READY ones too. */
    fut_drop(&j.base);
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(drops[i], 1);
    ASSERT_EQ(polls[0], 1);
    ASSERT_EQ(polls[1], 3);
    ASSERT_EQ(polls[2], 3);

    /* The empty join is READY at once. */
    struct fut_join_all e;
    fut_join_all_init(&e, NULL, 0);
    ASSERT_EQ(fut_poll(&e.base, &cx), FUT_READY);
    fut_drop(&e.base);
}
END_TEST

/* ---------------------------------------------------------- select */

START_TEST(select2_winner_and_losers_dropped_once)
{
    struct test_waker tw;
    struct fut_context cx;
    cx_init(&cx, &tw);
    for (int order = 0; order <= 1; order++) {
        int pa = 0, pb = 0, da = 0, db = 0;
        struct counting_future a, b;
        counting_future_init(&a, 1000, 0, &pa, &da, 1);
        counting_future_init(&b, 2, 1, &pb, &db, 2);
        struct fut_select2 s;
        fut_select2_init(&s, &a.base, &b.base, order);
        ASSERT_EQ(s.winner, -1);
        ASSERT_EQ(fut_poll(&s.base, &cx), FUT_PENDING);
        ASSERT_EQ(fut_poll(&s.base, &cx), FUT_PENDING);
        ASSERT_EQ(pa, 2); /* every branch is polled each time */
        ASSERT_EQ(pb, 2);
        struct fut_future *kids[2];
        ASSERT_EQ(s.base.vt->children(&s.base, kids, 2), 2);
        ASSERT_EQ(fut_poll(&s.base, &cx), FUT_READY);
        ASSERT_EQ(s.winner, 1);
        ASSERT_EQ(b.value, 2);
        /* The loser is dropped inside the poll that found the winner;
         * the winner is not. */
        ASSERT_EQ(da, 1);
        ASSERT_EQ(db, 0);
        ASSERT_EQ(s.base.vt->children(&s.base, kids, 2), 1);
        ASSERT_TRUE(kids[0] == &b.base);
        fut_drop(&s.base);
        ASSERT_EQ(da, 1); /* exactly once */
        ASSERT_EQ(db, 1);
    }
}
END_TEST

START_TEST(select_all_winner_index)
{
    struct test_waker tw;
    struct fut_context cx;
    cx_init(&cx, &tw);
    int drops[5] = {0};
    struct counting_future c[5];
    struct fut_future *v[5];
    for (int i = 0; i < 5; i++) {
        /* Branch 3 is ready on the third poll, the others much later. */
        counting_future_init(&c[i], i == 3 ? 2 : 100, 1, NULL, &drops[i],
                             i * 11);
        v[i] = &c[i].base;
    }
    struct fut_select_all s;
    long calls = fut_alloc_count();
    fut_select_all_init(&s, v, 5, FUT_SELECT_FAIR);
    int r, n = 0;
    while ((r = fut_poll(&s.base, &cx)) == FUT_PENDING && n < 10)
        n++;
    ASSERT_EQ(r, FUT_READY);
    ASSERT_EQ(fut_alloc_count(), calls); /* select never allocates */
    ASSERT_EQ(n, 2);
    ASSERT_EQ(s.winner, 3);
    ASSERT_EQ(c[3].value, 33);
    for (int i = 0; i < 5; i++)
        ASSERT_EQ(drops[i], i == 3 ? 0 : 1);
    fut_drop(&s.base);
    for (int i = 0; i < 5; i++)
        ASSERT_EQ(drops[i], 1);

    /* Cancelled before any branch is ready: every branch dropped once. */
    memset(drops, 0, sizeof drops);
    for (int i = 0; i < 5; i++)
        counting_future_init(&c[i], 100, 1, NULL, &drops[i], i);
    fut_select_all_init(&s, v, 5, FUT_SELECT_BIASED);
    ASSERT_EQ(fut_poll(&s.base, &cx), FUT_PENDING);
    fut_drop(&s.base);
    for (int i = 0; i < 5; i++)
        ASSERT_EQ(drops[i], 1);

    /* The empty select is READY at once with winner -1. */
    struct fut_select_all e;
    fut_select_all_init(&e, NULL, 0, FUT_SELECT_FAIR);
    ASSERT_EQ(fut_poll(&e.base, &cx), FUT_READY);
    ASSERT_EQ(e.winner, -1);
    fut_drop(&e.base);
}
END_TEST

/* Fairness (C14): two always-ready branches share the wins; the biased
 * variant always picks branch 0. */
START_TEST(select_fair_share_and_biased)
{
    struct fut_context cx;
    fut_context_init(&cx, fut_waker_noop());
    enum { ROUNDS = 20000 };
    int wins[2] = {0, 0}, bwins[2] = {0, 0};
    for (int i = 0; i < ROUNDS; i++) {
        struct fut_ready a, b;
        fut_ready_init(&a, 0);
        fut_ready_init(&b, 1);
        struct fut_select2 s;
        fut_select2_init(&s, &a.base, &b.base, FUT_SELECT_FAIR);
        ASSERT_EQ(fut_poll(&s.base, &cx), FUT_READY);
        wins[s.winner]++;
        fut_drop(&s.base);
        fut_ready_init(&a, 0);
        fut_ready_init(&b, 1);
        fut_select2_init(&s, &a.base, &b.base, FUT_SELECT_BIASED);
        ASSERT_EQ(fut_poll(&s.base, &cx), FUT_READY);
        bwins[s.winner]++;
        fut_drop(&s.base);
    }
    /* A fair coin gives 50% +- 0.35% (1 sigma) here; 45% is far out. */
    ck_assert_msg(wins[0] > ROUNDS * 45 / 100 && wins[1] > ROUNDS * 45 / 100,
                  "unfair: %d vs %d", wins[0], wins[1]);
    ASSERT_EQ(bwins[0], ROUNDS);
    ASSERT_EQ(bwins[1], 0);

    /* N branches: each of 4 always-ready branches wins about 25%. */
    int nwins[4] = {0};
    for (int i = 0; i < ROUNDS; i++) {
        struct fut_ready r[4];
        struct fut_future *v[4];
        for (int k = 0; k < 4; k++) {
            fut_ready_init(&r[k], k);
            v[k] = &r[k].base;
        }
        struct fut_select_all s;
        fut_select_all_init(&s, v, 4, FUT_SELECT_FAIR);
        ASSERT_EQ(fut_poll(&s.base, &cx), FUT_READY);
        nwins[s.winner]++;
        fut_drop(&s.base);
    }
    for (int k = 0; k < 4; k++)
        ck_assert_msg(nwins[k] > ROUNDS * 20 / 100, "branch %d won %d", k,
                      nwins[k]);
}
END_TEST

/* A future that logs its index at every poll and stays PENDING. */
struct logging_future {
    struct fut_future base;
    int id;
    int *log;
    int *n;
};
static int logging_poll(struct fut_future *f, struct fut_context *cx)
{
    struct logging_future *l = (struct logging_future *)f;
    l->log[(*l->n)++] = l->id;
    fut_waker_wake_by_ref(&cx->waker);
    return FUT_PENDING;
}
static const struct fut_future_vtable logging_vt = {logging_poll, NULL,
                                                    "logging", NULL};

/* The start branch changes from poll to poll of the same select (fair),
 * and is always 0 (biased). */
START_TEST(select_start_rotates_per_poll)
{
    struct fut_context cx;
    fut_context_init(&cx, fut_waker_noop());
    enum { POLLS = 4000 };
    static int log[2 * POLLS];
    for (int order = 0; order <= 1; order++) {
        int n = 0;
        struct logging_future a = {{0}, 0, log, &n};
        struct logging_future b = {{0}, 1, log, &n};
        fut_future_init(&a.base, &logging_vt);
        fut_future_init(&b.base, &logging_vt);
        struct fut_select2 s;
        fut_select2_init(&s, &a.base, &b.base, order);
        for (int i = 0; i < POLLS; i++)
            ASSERT_EQ(fut_poll(&s.base, &cx), FUT_PENDING);
        ASSERT_EQ(n, 2 * POLLS);
        int first0 = 0;
        for (int i = 0; i < POLLS; i++)
            first0 += log[2 * i] == 0;
        if (order == FUT_SELECT_BIASED)
            ASSERT_EQ(first0, POLLS);
        else
            ck_assert_msg(first0 > POLLS * 40 / 100 &&
                              first0 < POLLS * 60 / 100,
                          "branch 0 first in %d of %d polls", first0, POLLS);
        fut_drop(&s.base);
    }
}
END_TEST

/* Losers' wakers are unregistered at once (C11): with oneshot receivers as
 * branches, the loser's registration is gone when select returns READY,
 * and a later send to it fails with FUT_ECLOSED. */
START_TEST(select_loser_waker_unregistered)
{
    for (int order = 0; order <= 1; order++) {
        struct test_waker tw;
        struct fut_context cx;
        cx_init(&cx, &tw);
        struct fut_oneshot_tx tx[3];
        struct fut_oneshot_rx rx[3];
        struct fut_oneshot_recv recv[3];
        int out[3] = {0, 0, 0};
        struct fut_future *v[3];
        for (int i = 0; i < 3; i++) {
            ASSERT_EQ(fut_oneshot_new(sizeof(int), NULL, &tx[i], &rx[i]), 0);
            fut_oneshot_recv_init(&recv[i], &rx[i], &out[i]);
            v[i] = &recv[i].base;
        }
        struct fut_select_all s;
        fut_select_all_init(&s, v, 3, order);
        ASSERT_EQ(fut_poll(&s.base, &cx), FUT_PENDING);
        ASSERT_EQ(tw.refs, 3); /* each branch holds a clone */
        int val = 42;
        ASSERT_EQ(fut_oneshot_send(&tx[1], &val), 0);
        ASSERT_EQ(tw.wakes, 1);
        ASSERT_EQ(fut_poll(&s.base, &cx), FUT_READY);
        ASSERT_EQ(s.winner, 1);
        ASSERT_EQ(out[1], 42);
        ASSERT_EQ(recv[1].result, 0);
        /* Both losers released their wakers inside that poll. */
        ASSERT_EQ(tw.refs, 0);
        val = 7;
        ASSERT_EQ(fut_oneshot_send(&tx[0], &val), FUT_ECLOSED);
        ASSERT_EQ(fut_oneshot_send(&tx[2], &val), FUT_ECLOSED);
        ASSERT_EQ(out[0], 0);
        ASSERT_EQ(tw.wakes, 1); /* no wake reached the dropped branches */
        fut_drop(&s.base);
    }
}
END_TEST

/* ------------------------------------------------------- map, then */

static int map_calls;
static intptr_t map_plus_one(struct fut_future *inner, void *ud)
{
    (void)ud;
    map_calls++;
    return ((struct counting_future *)inner)->value + 1;
}

START_TEST(map_runs_fn_once)
{
    struct test_waker tw;
    struct fut_context cx;
    cx_init(&cx, &tw);
    int drops = 0;
    struct counting_future c;
    counting_future_init(&c, 2, 1, NULL, &drops, 41);
    struct fut_map m;
    map_calls = 0;
    fut_map_init(&m, &c.base, map_plus_one, NULL);
    ASSERT_EQ(fut_poll(&m.base, &cx), FUT_PENDING);
    ASSERT_EQ(fut_poll(&m.base, &cx), FUT_PENDING);
    ASSERT_EQ(map_calls, 0);
    ASSERT_EQ(fut_poll(&m.base, &cx), FUT_READY);
    ASSERT_EQ(m.value, 42);
    ASSERT_EQ(map_calls, 1);
    ASSERT_EQ(drops, 0);
    fut_drop(&m.base);
    ASSERT_EQ(drops, 1);

    /* Dropped before READY: the inner future is dropped, fn never runs. */
    drops = 0;
    counting_future_init(&c, 5, 1, NULL, &drops, 0);
    fut_map_init(&m, &c.base, map_plus_one, NULL);
    ASSERT_EQ(fut_poll(&m.base, &cx), FUT_PENDING);
    fut_drop(&m.base);
    ASSERT_EQ(drops, 1);
    ASSERT_EQ(map_calls, 1);
}
END_TEST

struct then_case {
    struct counting_future first, second;
    int first_drops, second_drops;
    int fn_calls;
    int first_dropped_at_fn; /* first's drop count seen inside fn */
    int give_null;
};

static struct fut_future *then_build(struct fut_future *first, void *ud)
{
    struct then_case *t = ud;
    t->fn_calls++;
    t->first_dropped_at_fn = t->first_drops;
    if (t->give_null)
        return NULL;
    intptr_t v = ((struct counting_future *)first)->value;
    counting_future_init(&t->second, 2, 1, NULL, &t->second_drops, v * 10);
    return &t->second.base;
}

START_TEST(then_chains_second_future)
{
    struct test_waker tw;
    struct fut_context cx;
    cx_init(&cx, &tw);
    struct then_case t;
    memset(&t, 0, sizeof t);
    counting_future_init(&t.first, 1, 1, NULL, &t.first_drops, 4);
    struct fut_then th;
    fut_then_init(&th, &t.first.base, then_build, &t);
    ASSERT_EQ(fut_poll(&th.base, &cx), FUT_PENDING); /* first pending */
    ASSERT_TRUE(th.second == NULL);
    /* first READY -> fn -> second polled in the same poll (pending). */
    ASSERT_EQ(fut_poll(&th.base, &cx), FUT_PENDING);
    ASSERT_EQ(t.fn_calls, 1);
    ASSERT_EQ(t.first_dropped_at_fn, 0); /* fn ran before the drop */
    ASSERT_EQ(t.first_drops, 1);         /* dropped right after fn */
    ASSERT_TRUE(th.second == &t.second.base);
    struct fut_future *kids[2];
    ASSERT_EQ(th.base.vt->children(&th.base, kids, 2), 1);
    ASSERT_TRUE(kids[0] == &t.second.base);
    ASSERT_EQ(fut_poll(&th.base, &cx), FUT_PENDING);
    ASSERT_EQ(fut_poll(&th.base, &cx), FUT_READY);
    ASSERT_EQ(t.second.value, 40);
    ASSERT_EQ(t.second_drops, 0);
    fut_drop(&th.base);
    ASSERT_EQ(t.first_drops, 1);
    ASSERT_EQ(t.second_drops, 1);
    ASSERT_EQ(t.fn_calls, 1);

    /* fn returning NULL: READY at once, no second future. */
    memset(&t, 0, sizeof t);
    t.give_null = 1;
    counting_future_init(&t.first, 0, 0, NULL, &t.first_drops, 4);
    fut_then_init(&th, &t.first.base, then_build, &t);
    ASSERT_EQ(fut_poll(&th.base, &cx), FUT_READY);
    ASSERT_TRUE(th.second == NULL);
    fut_drop(&th.base);
    ASSERT_EQ(t.first_drops, 1);

    /* Dropped while the first future is pending: fn never runs. */
    memset(&t, 0, sizeof t);
    counting_future_init(&t.first, 3, 1, NULL, &t.first_drops, 4);
    fut_then_init(&th, &t.first.base, then_build, &t);
    ASSERT_EQ(fut_poll(&th.base, &cx), FUT_PENDING);
    fut_drop(&th.base);
    ASSERT_EQ(t.fn_calls, 0);
    ASSERT_EQ(t.first_drops, 1);
}
END_TEST

/* ------------------------------------------------------------- C8 */

/* Polls 'f' after READY, once through fut_poll (the contract) and once
 * through its own poll function (each combinator is idempotent on its
 * own, too): READY both times. */
static void repoll(struct fut_future *f, struct fut_context *cx)
{
    ASSERT_EQ(fut_poll(f, cx), FUT_READY);
    ASSERT_EQ(f->vt->poll(f, cx), FUT_READY);
    ASSERT_EQ(fut_poll(f, cx), FUT_READY);
}

START_TEST(poll_after_ready_c8)
{
    struct test_waker tw;
    struct fut_context cx;
    cx_init(&cx, &tw);
    int pa = 0, pb = 0, da = 0, db = 0;
    struct counting_future a, b;

    /* join2 */
    counting_future_init(&a, 0, 0, &pa, &da, 1);
    counting_future_init(&b, 1, 1, &pb, &db, 2);
    struct fut_join2 j;
    fut_join2_init(&j, &a.base, &b.base);
    while (fut_poll(&j.base, &cx) == FUT_PENDING)
        ;
    repoll(&j.base, &cx);
    ASSERT_EQ(pa, 1);
    ASSERT_EQ(pb, 2);
    ASSERT_EQ(a.value + b.value, 3);
    fut_drop(&j.base);

    /* join_all */
    pa = pb = 0;
    counting_future_init(&a, 2, 1, &pa, &da, 1);
    counting_future_init(&b, 0, 0, &pb, &db, 2);
    struct fut_future *v[2] = {&a.base, &b.base};
    struct fut_join_all ja;
    fut_join_all_init(&ja, v, 2);
    while (fut_poll(&ja.base, &cx) == FUT_PENDING)
        ;
    repoll(&ja.base, &cx);
    ASSERT_EQ(pa, 3);
    ASSERT_EQ(pb, 1);
    ASSERT_EQ(ja.pending, 0);
    fut_drop(&ja.base);

    /* select2: winner unchanged, no branch polled or dropped again */
    pa = pb = da = db = 0;
    counting_future_init(&a, 100, 0, &pa, &da, 1);
    counting_future_init(&b, 0, 0, &pb, &db, 2);
    struct fut_select2 s;
    fut_select2_init(&s, &a.base, &b.base, FUT_SELECT_FAIR);
    ASSERT_EQ(fut_poll(&s.base, &cx), FUT_READY);
    int pa0 = pa;
    repoll(&s.base, &cx);
    ASSERT_EQ(s.winner, 1);
    ASSERT_EQ(pa, pa0);
    ASSERT_EQ(pb, 1);
    ASSERT_EQ(da, 1);
    ASSERT_EQ(db, 0);
    fut_drop(&s.base);

    /* select_all */
    pa = pb = da = db = 0;
    counting_future_init(&a, 0, 0, &pa, &da, 1);
    counting_future_init(&b, 100, 0, &pb, &db, 2);
    struct fut_select_all sa;
    fut_select_all_init(&sa, v, 2, FUT_SELECT_BIASED);
    ASSERT_EQ(fut_poll(&sa.base, &cx), FUT_READY);
    repoll(&sa.base, &cx);
    ASSERT_EQ(sa.winner, 0);
    ASSERT_EQ(pa, 1);
    ASSERT_EQ(db, 1);
    fut_drop(&sa.base);

    /* map: fn does not run again */
    counting_future_init(&a, 0, 0, NULL, NULL, 5);
    struct fut_map m;
    map_calls = 0;
    fut_map_init(&m, &a.base, map_plus_one, NULL);
    ASSERT_EQ(fut_poll(&m.base, &cx), FUT_READY);
    repoll(&m.base, &cx);
    ASSERT_EQ(map_calls, 1);
    ASSERT_EQ(m.value, 6);
    fut_drop(&m.base);

    /* then */
    struct then_case t;
    memset(&t, 0, sizeof t);
    counting_future_init(&t.first, 0, 0, NULL, &t.first_drops, 3);
    struct fut_then th;
    fut_then_init(&th, &t.first.base, then_build, &t);
    while (fut_poll(&th.base, &cx) == FUT_PENDING)
        ;
    repoll(&th.base, &cx);
    ASSERT_EQ(t.fn_calls, 1);
    ASSERT_EQ(t.second.value, 30);
    fut_drop(&th.base);
}
END_TEST

/* ------------------------------------- drop-at-every-PENDING harness */

/* A sender task: yields 'delay' times, then sends 'value'. Dropping it
 * (abort, shutdown, or after it finished) drops the sender half. */
struct sender {
    struct fut_future base;
    struct fut_oneshot_tx tx;
    int delay, i, value;
    int *drops;
};

static int sender_poll(struct fut_future *f, struct fut_context *cx)
{
    struct sender *s = (struct sender *)f;
    FUT_BEGIN(f);
    for (s->i = 0; s->i < s->delay; s->i++)
        FUT_YIELD(f);
    (void)fut_oneshot_send(&s->tx, &s->value); /* ECLOSED: nobody cares */
    FUT_END(f);
}

static void sender_cleanup(struct fut_future *f)
{
    struct sender *s = (struct sender *)f;
    fut_oneshot_tx_drop(&s->tx);
    (*s->drops)++;
}

FUT_ASYNC_VTABLE(sender_vt, "sender", sender_poll, sender_cleanup);

/* A child that allocates: spawns a sender task, yields 'delay' times (so
 * the child with the smallest delay finishes first), awaits the value,
 * yields once more. Output: 'result' (0 or an error) and 'got'. */
struct remote {
    struct fut_future base;
    int delay, value, i;
    int *drops;   /* this future's drops */
    int *spawned; /* sender tasks spawned */
    int *sdrops;  /* sender tasks dropped */
    struct fut_oneshot_recv recv;
    int result, got;
};

static int remote_poll(struct fut_future *f, struct fut_context *cx)
{
    struct remote *r = (struct remote *)f;
    FUT_BEGIN(f);
    {
        struct fut_oneshot_tx tx;
        struct fut_oneshot_rx rx;
        r->result = fut_oneshot_new(sizeof(int), NULL, &tx, &rx);
        if (r->result)
            FUT_RETURN(f);
        struct sender s;
        memset(&s, 0, sizeof s);
        fut_future_init(&s.base, &sender_vt);
        s.tx = tx;
        s.delay = r->delay;
        s.value = r->value;
        s.drops = r->sdrops;
        r->result = fut_spawn(NULL, &s, sizeof s, NULL);
        if (r->result) {
            fut_oneshot_tx_drop(&tx);
            fut_oneshot_rx_drop(&rx);
            FUT_RETURN(f);
        }
        (*r->spawned)++;
        fut_oneshot_recv_init(&r->recv, &rx, &r->got);
    }
    for (r->i = 0; r->i < r->delay; r->i++)
        FUT_YIELD(f);
    FUT_AWAIT(f, &r->recv);
    r->result = r->recv.result;
    FUT_YIELD(f);
    FUT_END(f);
}

/* 'recv' is live from its init on, awaited or not: drop it here (the
 * struct was zeroed, so vt is NULL before the init). */
static void remote_cleanup(struct fut_future *f)
{
    struct remote *r = (struct remote *)f;
    if (r->recv.base.vt)
        fut_drop(&r->recv.base);
    (*r->drops)++;
}

FUT_ASYNC_VTABLE(remote_vt, "remote", remote_poll, remote_cleanup);

enum { NKIDS = 3 };

/* Everything one harness case needs, made fresh by 'make'. */
struct comb_case {
    int kind;
    struct remote kid[NKIDS + 1]; /* kid[NKIDS]: then's second future */
    int drops[NKIDS + 1];
    int spawned, sdrops;
    struct fut_pending never;
    struct fut_future *v[NKIDS];
    union {
        struct fut_join2 j2;
        struct fut_join_all ja;
        struct fut_select2 s2;
        struct fut_select_all sa;
        struct fut_map m;
        struct fut_then t;
    } u;
    int checks_ok;
};

enum {
    K_JOIN2,
    K_JOIN_ALL,
    K_SELECT2,
    K_SELECT_ALL,
    K_SELECT_NEVER,
    K_MAP,
    K_THEN,
    K_COUNT
};

static void remote_init(struct comb_case *c, int i, int delay, int value)
{
    struct remote *r = &c->kid[i];
    memset(r, 0, sizeof *r);
    fut_future_init(&r->base, &remote_vt);
    r->delay = delay;
    r->value = value;
    r->drops = &c->drops[i];
    r->spawned = &c->spawned;
    r->sdrops = &c->sdrops;
}

static intptr_t map_got(struct fut_future *inner, void *ud)
{
    (void)ud;
    return ((struct remote *)inner)->got * 2;
}

static struct fut_future *then_second(struct fut_future *first, void *ud)
{
    struct comb_case *c = ud;
    remote_init(c, NKIDS, 2, ((struct remote *)first)->got + 100);
    return &c->kid[NKIDS].base;
}

static struct fut_future *comb_make(void *ud, struct fut_runtime *rt)
{
    struct comb_case *c = ud;
    (void)rt;
    int kind = c->kind, ok = c->checks_ok;
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->checks_ok = ok;
    for (int i = 0; i < NKIDS; i++) {
        remote_init(c, i, 1 + 2 * i, 10 * (i + 1));
        c->v[i] = &c->kid[i].base;
    }
    fut_pending_init(&c->never);
    switch (kind) {
    case K_JOIN2:
        fut_join2_init(&c->u.j2, c->v[0], c->v[2]);
        break;
    case K_JOIN_ALL:
        fut_join_all_init(&c->u.ja, c->v, NKIDS);
        break;
    case K_SELECT2:
        fut_select2_init(&c->u.s2, c->v[2], c->v[0], FUT_SELECT_FAIR);
        break;
    case K_SELECT_ALL:
        fut_select_all_init(&c->u.sa, c->v, NKIDS, FUT_SELECT_FAIR);
        break;
    case K_SELECT_NEVER:
        fut_select2_init(&c->u.s2, &c->never.base, c->v[1],
                         FUT_SELECT_BIASED);
        break;
    case K_MAP:
        fut_map_init(&c->u.m, c->v[1], map_got, NULL);
        break;
    case K_THEN:
        fut_then_init(&c->u.t, c->v[0], then_second, c);
        break;
    }
    return FUT_AS_FUTURE(&c->u);
}

/* Which children the combinator was given (each must be dropped once). */
static int comb_uses(int kind, int i)
{
    switch (kind) {
    case K_JOIN2:
    case K_SELECT2:
        return i == 0 || i == 2;
    case K_JOIN_ALL:
    case K_SELECT_ALL:
        return i < NKIDS;
    case K_SELECT_NEVER:
    case K_MAP:
        return i == 1;
    default:
        return i == 0 || i == NKIDS;
    }
}

/* The outputs of a run to completion. */
static int comb_outputs_ok(struct comb_case *c)
{
    struct remote *k = c->kid;
    switch (c->kind) {
    case K_JOIN2:
        return k[0].got == 10 && k[2].got == 30;
    case K_JOIN_ALL:
        return k[0].got == 10 && k[1].got == 20 && k[2].got == 30;
    case K_SELECT2:
        return c->u.s2.winner == 1 && k[0].got == 10; /* shortest delay */
    case K_SELECT_ALL:
        return c->u.sa.winner == 0 && k[0].got == 10;
    case K_SELECT_NEVER:
        return c->u.s2.winner == 1 && k[1].got == 20;
    case K_MAP:
        return c->u.m.value == 40;
    default:
        return c->u.t.second == &k[NKIDS].base && k[NKIDS].got == 110;
    }
}

static int comb_check(void *ud, int k)
{
    struct comb_case *c = ud;
    for (int i = 0; i <= NKIDS; i++) {
        int used = comb_uses(c->kind, i);
        /* then's second future exists only once the first was READY. */
        if (i == NKIDS && c->kind == K_THEN && c->u.t.second == NULL)
            used = 0;
        if (c->drops[i] != (used ? 1 : 0))
            return 1; /* a child dropped never or twice */
    }
    if (c->sdrops != c->spawned)
        return 2; /* a sender task was never dropped */
    if (k == 0 && !comb_outputs_ok(c))
        return 3;
    c->checks_ok++;
    return 0;
}

START_TEST(harness_every_combinator)
{
    for (int kind = 0; kind < K_COUNT; kind++) {
        struct comb_case c;
        memset(&c, 0, sizeof c);
        c.kind = kind;
        struct fut_harness h;
        fut_harness_init(&h, comb_make, comb_check, &c);
        int r = fut_harness_run(&h);
        ck_assert_msg(r == 0, "kind %d: harness returned %d (%s)", kind, r,
                      h.msg);
        ck_assert_msg(h.pendings >= 2, "kind %d: %ld PENDING", kind,
                      h.pendings);
        ASSERT_EQ(h.runs, h.pendings + 1);
        ASSERT_EQ(c.checks_ok, h.runs);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("core_combinators");
    TCase *tc = fut_test_tcase(s, "join");
    tcase_add_test(tc, join2_waits_for_both);
    tcase_add_test(tc, join_all_and_drop_midway);
    tc = fut_test_tcase(s, "select");
    tcase_add_test(tc, select2_winner_and_losers_dropped_once);
    tcase_add_test(tc, select_all_winner_index);
    tcase_add_test(tc, select_loser_waker_unregistered);
    tc = fut_test_tcase(s, "select_fair");
    tcase_add_test(tc, select_fair_share_and_biased);
    tcase_add_test(tc, select_start_rotates_per_poll);
    tc = fut_test_tcase(s, "map_then");
    tcase_add_test(tc, map_runs_fn_once);
    tcase_add_test(tc, then_chains_second_future);
    tc = fut_test_tcase(s, "c8");
    tcase_add_test(tc, poll_after_ready_c8);
    tc = fut_test_tcase(s, "harness");
    tcase_add_test(tc, harness_every_combinator);
    return fut_test_run(s);
}
