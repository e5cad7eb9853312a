/* SPDX-License-Identifier: MIT */
/* The test tools themselves (fut/testing.h): the drop-at-every-PENDING
 * harness counts PENDING returns, drops at each one, drains the runtime,
 * and catches a future that leaks on drop (C11); an async-function
 * example that awaits several children passes it; the fail-the-Nth-
 * allocation hook and loop, over spawn (C11 on the error paths). */
#include <pthread.h>
#include <string.h>

#include "test.h"

/* ---------------------------------------------------- counting runs */

struct count_case {
    struct counting_future f;
    int polls, drops;
    int makes;
    int seen_k[16], nseen;
    int polls_at[16]; /* polls of the instance checked at k */
    int drops_at[16];
    int fail_at; /* check fails for this k (0: never; -1 never either) */
};

static struct fut_future *count_make(void *ud, struct fut_runtime *rt)
{
    struct count_case *c = ud;
    (void)rt;
    c->makes++;
    c->polls = c->drops = 0;
    counting_future_init(&c->f, 5, 1, &c->polls, &c->drops, 9);
    return &c->f.base;
}

static int count_check(void *ud, int k)
{
    struct count_case *c = ud;
    c->seen_k[c->nseen++] = k;
    c->polls_at[k] = c->polls;
    c->drops_at[k] = c->drops;
    return c->fail_at > 0 && k == c->fail_at;
}

START_TEST(harness_counts_and_drops_at_each_pending)
{
    struct count_case c;
    memset(&c, 0, sizeof c);
    struct fut_harness h;
    fut_harness_init(&h, count_make, count_check, &c);
    ASSERT_EQ(fut_harness_run(&h), 0);
    ASSERT_EQ(h.pendings, 5);
    ASSERT_EQ(h.runs, 6);
    ASSERT_EQ(h.failed, 0);
    ASSERT_EQ(h.first_failure, -1);
    ASSERT_EQ(h.msg[0], '\0');
    ASSERT_EQ(c.makes, 6);
    ASSERT_EQ(c.nseen, 6);
    for (int k = 0; k <= 5; k++) {
        ASSERT_EQ(c.seen_k[k], k);   /* 0 = to completion, then 1..N */
        ASSERT_EQ(c.drops_at[k], 1); /* dropped exactly once each run */
        /* Dropped at its k-th PENDING: polled exactly k times. */
        ASSERT_EQ(c.polls_at[k], k == 0 ? 6 : k);
    }
}
END_TEST

static long reports_seen;
static char report_kind[32];
static void capture_report(void *ud, const char *kind, const char *msg)
{
    (void)ud;
    (void)msg;
    reports_seen++;
    snprintf(report_kind, sizeof report_kind, "%s", kind);
}

START_TEST(harness_reports_failing_check)
{
    struct count_case c;
    memset(&c, 0, sizeof c);
    c.fail_at = 2;
    struct fut_harness h;
    fut_harness_init(&h, count_make, count_check, &c);
    reports_seen = 0;
    fut_set_report_hook(capture_report, NULL);
    int r = fut_harness_run(&h);
    fut_set_report_hook(NULL, NULL);
    ASSERT_EQ(r, 1);
    ASSERT_EQ(h.failed, 1);
    ASSERT_EQ(h.first_failure, 2);
    ck_assert_msg(strstr(h.msg, "PENDING 2 of 5") != NULL, "msg: %s", h.msg);
    ck_assert_msg(strstr(h.msg, "check callback") != NULL, "msg: %s", h.msg);
    ASSERT_EQ(reports_seen, 1);
    ASSERT_EQ(strcmp(report_kind, "drop-harness"), 0);
}
END_TEST

/* ------------------------------------------ futures that leak on drop */

/* Allocates a oneshot at its first poll and pends 3 times; releases it
 * when it completes, but its drop forgets it ('leak_chan'), or it keeps a
 * clone of the waker it was polled with and its drop forgets that
 * ('leak_waker': the runtime's memory then outlives fut_runtime_free). */
struct leaky {
    struct fut_future base;
    int leak_chan, leak_waker;
    int polls;
    struct fut_oneshot_tx tx;
    struct fut_oneshot_rx rx;
    struct fut_waker kept;
};

static int leaky_poll(struct fut_future *f, struct fut_context *cx)
{
    struct leaky *l = (struct leaky *)f;
    if (l->polls == 0 && fut_oneshot_new(sizeof(int), NULL, &l->tx, &l->rx))
        return FUT_READY;
    if (l->polls == 0 && l->leak_waker)
        l->kept = fut_waker_clone(&cx->waker);
    if (l->polls++ < 3) {
        fut_waker_wake_by_ref(&cx->waker);
        return FUT_PENDING;
    }
    fut_oneshot_tx_drop(&l->tx);
    fut_oneshot_rx_drop(&l->rx);
    fut_waker_drop(&l->kept);
    return FUT_READY;
}

static void leaky_drop(struct fut_future *f)
{
    struct leaky *l = (struct leaky *)f;
    if (!l->leak_chan) {
        fut_oneshot_tx_drop(&l->tx);
        fut_oneshot_rx_drop(&l->rx);
    }
    if (!l->leak_waker)
        fut_waker_drop(&l->kept);
}

static const struct fut_future_vtable leaky_vt = {leaky_poll, leaky_drop,
                                                  "leaky", NULL};

struct leaky_case {
    struct leaky f;
    int leak_chan, leak_waker;
    /* What the test leaked on purpose, to give back afterwards. */
    struct fut_oneshot_tx tx[8];
    struct fut_oneshot_rx rx[8];
    struct fut_waker kept[8];
    int nleaked;
};

static struct fut_future *leaky_make(void *ud, struct fut_runtime *rt)
{
    struct leaky_case *c = ud;
    (void)rt;
    memset(&c->f, 0, sizeof c->f);
    fut_future_init(&c->f.base, &leaky_vt);
    c->f.leak_chan = c->leak_chan;
    c->f.leak_waker = c->leak_waker;
    return &c->f.base;
}

static int leaky_check(void *ud, int k)
{
    struct leaky_case *c = ud;
    (void)k;
    /* Keep what this run leaked, so the test can free it at the end
     * (after the harness has judged the run). */
    if (c->f.tx.ch || c->f.rx.ch || fut_waker_is_set(&c->f.kept)) {
        ck_assert_int_lt(c->nleaked, 8);
        c->tx[c->nleaked] = c->f.tx;
        c->rx[c->nleaked] = c->f.rx;
        c->kept[c->nleaked] = c->f.kept;
        c->nleaked++;
    }
    return 0;
}

static void leaky_case_cleanup(struct leaky_case *c)
{
    for (int i = 0; i < c->nleaked; i++) {
        fut_oneshot_tx_drop(&c->tx[i]);
        fut_oneshot_rx_drop(&c->rx[i]);
        fut_waker_drop(&c->kept[i]);
    }
    c->nleaked = 0;
}

START_TEST(harness_catches_leak_on_drop)
{
    for (int mode = 0; mode < 3; mode++) {
        struct leaky_case c;
        memset(&c, 0, sizeof c);
        c.leak_chan = mode == 1;
        c.leak_waker = mode == 2;
        struct fut_harness h;
        fut_harness_init(&h, leaky_make, leaky_check, &c);
        fut_set_report_hook(capture_report, NULL);
        reports_seen = 0;
        int r = fut_harness_run(&h);
        fut_set_report_hook(NULL, NULL);
        leaky_case_cleanup(&c);
        ASSERT_EQ(h.pendings, 3);
        if (mode == 0) { /* the correct version passes */
            ck_assert_msg(r == 0, "mode 0: %d (%s)", r, h.msg);
            ASSERT_EQ(reports_seen, 0);
            continue;
        }
        /* The run to completion is clean; every drop at a PENDING
         * leaks, and the harness says so. */
        ck_assert_msg(r == 3, "mode %d: harness returned %d", mode, r);
        ASSERT_EQ(h.failed, 3);
        ASSERT_EQ(h.first_failure, 1);
        ck_assert_msg(strstr(h.msg, "not freed") != NULL, "msg: %s", h.msg);
        ASSERT_EQ(reports_seen, 1);
    }
}
END_TEST

/* ---------------------------------------------------- harness errors */

static struct fut_future *null_make(void *ud, struct fut_runtime *rt)
{
    (void)ud;
    (void)rt;
    return NULL;
}

struct nested {
    struct fut_future base;
    int rc;
};
static int nested_poll(struct fut_future *f, struct fut_context *cx)
{
    (void)cx;
    struct fut_harness h;
    fut_harness_init(&h, null_make, NULL, NULL);
    ((struct nested *)f)->rc = fut_harness_run(&h);
    return FUT_READY;
}
static const struct fut_future_vtable nested_vt = {nested_poll, NULL,
                                                   "nested", NULL};

START_TEST(harness_errors)
{
    struct fut_harness h;
    fut_harness_init(&h, null_make, NULL, NULL);
    ASSERT_EQ(fut_harness_run(&h), FUT_EINVAL);

    /* More PENDING than allowed: stops, and cleans up. */
    struct count_case c;
    memset(&c, 0, sizeof c);
    fut_harness_init(&h, count_make, NULL, &c);
    h.max_pending = 3;
    ASSERT_EQ(fut_harness_run(&h), FUT_ETIMEDOUT);
    ASSERT_EQ(c.drops, 1);

    /* Not from inside a block_on. */
    struct fut_runtime *rt = fut_test_rt();
    struct nested n;
    fut_future_init(&n.base, &nested_vt);
    n.rc = 0;
    ASSERT_EQ(fut_block_on(rt, &n.base), 0);
    ASSERT_EQ(n.rc, FUT_EBUSY);
    fut_runtime_free(rt);
}
END_TEST

/* ------------------------------------------ an async-function example */

/* A worker task: yields 'yields' times, sends 'value' * 2 on its
 * oneshot, and finishes with output 'out' = value. */
struct worker {
    struct fut_future base;
    struct fut_oneshot_tx tx;
    int yields, i, value, out;
    int *drops;    /* worker futures dropped (completed or not) */
    int *finished; /* counts workers that got to their send */
};

static int worker_poll(struct fut_future *f, struct fut_context *cx)
{
    struct worker *w = (struct worker *)f;
    FUT_BEGIN(f);
    for (w->i = 0; w->i < w->yields; w->i++)
        FUT_YIELD(f);
    int v = w->value * 2;
    (void)fut_oneshot_send(&w->tx, &v); /* FUT_ECLOSED once we were dropped */
    (*w->finished)++;
    w->out = w->value;
    FUT_END(f);
}

static void worker_cleanup(struct fut_future *f)
{
    struct worker *w = (struct worker *)f;
    fut_oneshot_tx_drop(&w->tx);
    (*w->drops)++;
}

FUT_ASYNC_VTABLE(worker_vt, "worker", worker_poll, worker_cleanup);

/* The example: awaits a value from task A, yields, awaits join2(value of
 * task B, A's completion), then select2(value of detached task C,
 * pending-forever), then B's completion. Output: 'sum'. */
struct example {
    struct fut_future base;
    struct fut_oneshot_recv r[3];
    int v[3];
    struct fut_join ja, jb;
    struct fut_yield y;
    struct fut_join2 both;
    struct fut_select2 sel;
    struct fut_pending never;
    int a_out, b_out;
    int result;
    long sum;
    /* counters, kept by the test case */
    int *wdrops, *wfinished, *dfinished, *spawned, *detached_spawned;
};

/* Spawns a worker sending value*2 to 'e->r[i]'; with a handle in '*j',
 * or detached when j == NULL. */
static int example_start(struct example *e, int i, int yields,
                         struct fut_join *j)
{
    struct fut_oneshot_tx tx;
    struct fut_oneshot_rx rx;
    int r = fut_oneshot_new(sizeof(int), NULL, &tx, &rx);
    if (r)
        return r;
    struct worker w;
    memset(&w, 0, sizeof w);
    fut_future_init(&w.base, &worker_vt);
    w.tx = tx;
    w.yields = yields;
    w.value = i + 1;
    w.drops = e->wdrops;
    w.finished = j ? e->wfinished : e->dfinished;
    r = fut_spawn(NULL, &w, sizeof w, j);
    if (r) {
        fut_oneshot_tx_drop(&tx);
        fut_oneshot_rx_drop(&rx);
        return r;
    }
    (*e->spawned)++;
    if (!j)
        (*e->detached_spawned)++;
    fut_oneshot_recv_init(&e->r[i], &rx, &e->v[i]);
    return 0;
}

static int example_poll(struct fut_future *f, struct fut_context *cx)
{
    struct example *e = (struct example *)f;
    FUT_BEGIN(f);
    if ((e->result = example_start(e, 0, 2, &e->ja)) != 0)
        FUT_RETURN(f);
    FUT_AWAIT(f, &e->r[0]);
    fut_yield_init(&e->y);
    FUT_AWAIT(f, &e->y);
    if ((e->result = example_start(e, 1, 3, &e->jb)) != 0)
        FUT_RETURN(f);
    FUT_JOIN_OUTPUT(&e->ja, struct worker, out, &e->a_out);
    fut_join2_init(&e->both, &e->r[1].base, &e->ja.base);
    FUT_AWAIT(f, &e->both);
    if ((e->result = example_start(e, 2, 4, NULL)) != 0)
        FUT_RETURN(f);
    fut_pending_init(&e->never);
    fut_select2_init(&e->sel, &e->r[2].base, &e->never.base, FUT_SELECT_FAIR);
    FUT_AWAIT(f, &e->sel);
    FUT_JOIN_OUTPUT(&e->jb, struct worker, out, &e->b_out);
    FUT_AWAIT(f, &e->jb);
    e->sum = e->v[0] + e->v[1] + e->v[2] + e->a_out + e->b_out +
             100 * e->sel.winner;
    FUT_END(f);
}

/* Children are live from their init on, awaited or not: drop each one
 * that was initialised (the struct was zeroed, so vt is NULL before).
 * fut_drop is idempotent, so those a combinator or FUT_AWAIT dropped
 * already are left alone. */
static void example_cleanup(struct fut_future *f)
{
    struct example *e = (struct example *)f;
    struct fut_future *kids[] = {&e->both.base, &e->sel.base,  &e->r[0].base,
                                 &e->r[1].base, &e->r[2].base, &e->ja.base,
                                 &e->jb.base};
    for (size_t i = 0; i < sizeof kids / sizeof kids[0]; i++)
        if (kids[i]->vt)
            fut_drop(kids[i]);
}

FUT_ASYNC_VTABLE(example_vt, "example", example_poll, example_cleanup);

struct example_case {
    struct example e;
    int wdrops, wfinished, dfinished, spawned, detached_spawned;
    int checks_ok;
    int skip_cleanup; /* break the example on purpose */
    /* What the broken example leaked, kept to be dropped at the end
     * (handles and receivers may be copied: nothing points at them). */
    struct fut_oneshot_recv lost_r[64];
    struct fut_join lost_j[64];
    int nlost_r, nlost_j;
};

static int live_child(struct fut_future *f)
{
    return f->vt && !(f->flags & FUT_F_DROPPED);
}

/* Takes the children the broken example left behind out of 'c->e'. */
static void example_rescue(struct example_case *c)
{
    for (int i = 0; i < 3; i++)
        if (live_child(&c->e.r[i].base) && c->nlost_r < 64)
            c->lost_r[c->nlost_r++] = c->e.r[i];
    if (live_child(&c->e.ja.base) && c->nlost_j < 64)
        c->lost_j[c->nlost_j++] = c->e.ja;
    if (live_child(&c->e.jb.base) && c->nlost_j < 64)
        c->lost_j[c->nlost_j++] = c->e.jb;
    memset(&c->e, 0, sizeof c->e);
}

static void example_free_rescued(struct example_case *c)
{
    for (int i = 0; i < c->nlost_r; i++)
        fut_drop(&c->lost_r[i].base);
    for (int i = 0; i < c->nlost_j; i++)
        fut_drop(&c->lost_j[i].base);
    c->nlost_r = c->nlost_j = 0;
}

static void example_broken_cleanup(struct fut_future *f)
{
    (void)f; /* forgets every child that is not being awaited */
}
FUT_ASYNC_VTABLE(example_broken_vt, "example_broken", example_poll,
                 example_broken_cleanup);

static struct fut_future *example_make(void *ud, struct fut_runtime *rt)
{
    struct example_case *c = ud;
    (void)rt;
    example_rescue(c); /* no-op unless the last instance leaked */
    c->wdrops = c->wfinished = c->dfinished = 0;
    c->spawned = c->detached_spawned = 0;
    fut_future_init(&c->e.base,
                    c->skip_cleanup ? &example_broken_vt : &example_vt);
    c->e.wdrops = &c->wdrops;
    c->e.wfinished = &c->wfinished;
    c->e.dfinished = &c->dfinished;
    c->e.spawned = &c->spawned;
    c->e.detached_spawned = &c->detached_spawned;
    return &c->e.base;
}

static int example_check(void *ud, int k)
{
    struct example_case *c = ud;
    if (c->wdrops != c->spawned)
        return 1; /* a worker task was never dropped */
    /* The detached worker is not cancelled by the drop: the harness let
     * it run to its send (which then found the receiver gone). */
    if (c->dfinished != c->detached_spawned)
        return 2;
    if (k == 0 && (c->e.result != 0 || c->e.sum != 2 + 4 + 6 + 1 + 2))
        return 3;
    c->checks_ok++;
    return 0;
}

START_TEST(harness_async_example)
{
    struct example_case c;
    memset(&c, 0, sizeof c);
    struct fut_harness h;
    fut_harness_init(&h, example_make, example_check, &c);
    int r = fut_harness_run(&h);
    ck_assert_msg(r == 0, "harness returned %d: %s", r, h.msg);
    ck_assert_msg(h.pendings >= 4, "only %ld PENDING", h.pendings);
    ASSERT_EQ(c.checks_ok, h.runs);
    ASSERT_EQ(h.runs, h.pendings + 1);

    /* The same example without its cleanup hook leaks (join handles and
     * receivers initialised but not awaited at the drop): caught. */
    memset(&c, 0, sizeof c);
    c.skip_cleanup = 1;
    fut_harness_init(&h, example_make, NULL, &c);
    fut_set_report_hook(capture_report, NULL);
    r = fut_harness_run(&h);
    fut_set_report_hook(NULL, NULL);
    example_rescue(&c);
    ASSERT_TRUE(c.nlost_r + c.nlost_j > 0);
    example_free_rescued(&c);
    ck_assert_msg(r > 0, "broken example passed the harness");
    ASSERT_TRUE(h.first_failure >= 1);
    ASSERT_EQ(r, h.failed);
}
END_TEST

/* ------------------------------- draining tasks woken from elsewhere */

/* A detached task that awaits a value and notes that it got it. The
 * receive future is made in place (fut_spawn copies the struct, and the
 * future points at its own 'v'). */
struct waiter {
    struct fut_future base;
    struct fut_oneshot_rx rx;
    struct fut_oneshot_recv recv;
    int v;
    int *finished, *drops;
};
static int waiter_poll(struct fut_future *f, struct fut_context *cx)
{
    struct waiter *w = (struct waiter *)f;
    FUT_BEGIN(f);
    fut_oneshot_recv_init(&w->recv, &w->rx, &w->v); /* takes 'rx' */
    FUT_AWAIT(f, &w->recv);
    (*w->finished)++;
    FUT_END(f);
}
static void waiter_cleanup(struct fut_future *f)
{
    struct waiter *w = (struct waiter *)f;
    fut_oneshot_rx_drop(&w->rx); /* never polled: still ours */
    (*w->drops)++;
}
FUT_ASYNC_VTABLE(waiter_vt, "waiter", waiter_poll, waiter_cleanup);

static void *send_from_thread(void *arg)
{
    int v = 5;
    (void)fut_oneshot_send(arg, &v);
    return NULL;
}

/* Spawns a waiter, pends twice (the waiter registers meanwhile), and
 * when it is dropped (after READY or not) sends the waiter its value
 * from another thread: the wake reaches the runtime through its remote
 * queue, and the harness must still let the waiter finish. */
struct remote_feed {
    struct fut_future base;
    struct fut_oneshot_tx tx;
    int polls, spawned;
    int finished, drops;
};
static int remote_feed_poll(struct fut_future *f, struct fut_context *cx)
{
    struct remote_feed *r = (struct remote_feed *)f;
    if (r->polls++ == 0) {
        struct waiter w;
        memset(&w, 0, sizeof w);
        fut_future_init(&w.base, &waiter_vt);
        ck_assert_int_eq(fut_oneshot_new(sizeof(int), NULL, &r->tx, &w.rx),
                         0);
        w.finished = &r->finished;
        w.drops = &r->drops;
        ck_assert_int_eq(fut_spawn(NULL, &w, sizeof w, NULL), 0);
        r->spawned = 1;
    }
    if (r->polls <= 2) {
        fut_waker_wake_by_ref(&cx->waker);
        return FUT_PENDING;
    }
    return FUT_READY;
}
static void remote_feed_drop(struct fut_future *f)
{
    struct remote_feed *r = (struct remote_feed *)f;
    if (!r->tx.ch)
        return;
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, send_from_thread, &r->tx), 0);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
}
static const struct fut_future_vtable remote_feed_vt = {
    remote_feed_poll, remote_feed_drop, "remote_feed", NULL};

static struct fut_future *remote_feed_make(void *ud, struct fut_runtime *rt)
{
    struct remote_feed *r = ud;
    (void)rt;
    memset(r, 0, sizeof *r);
    fut_future_init(&r->base, &remote_feed_vt);
    return &r->base;
}

static int remote_feed_check(void *ud, int k)
{
    struct remote_feed *r = ud;
    (void)k;
    if (r->drops != r->spawned)
        return 1;
    /* Woken from the other thread during the drain: it ran to its end
     * instead of being dropped by the runtime's shutdown. */
    return r->finished != r->spawned ? 2 : 0;
}

START_TEST(harness_drains_remote_wakes)
{
    struct remote_feed r;
    struct fut_harness h;
    fut_harness_init(&h, remote_feed_make, remote_feed_check, &r);
    int rc = fut_harness_run(&h);
    ck_assert_msg(rc == 0, "harness returned %d: %s", rc, h.msg);
    ASSERT_EQ(h.pendings, 2);
}
END_TEST

/* -------------------------------------------- fail the Nth allocation */

START_TEST(failalloc_hook_fails_exactly_nth)
{
    struct fut_oneshot_tx tx[4];
    struct fut_oneshot_rx rx[4];
    long live = fut_alloc_live();
    fut_failalloc_arm(3);
    ASSERT_EQ(fut_oneshot_new(4, NULL, &tx[0], &rx[0]), 0);
    ASSERT_EQ(fut_oneshot_new(4, NULL, &tx[1], &rx[1]), 0);
    ASSERT_EQ(fut_failalloc_fired(), 0);
    ASSERT_EQ(fut_oneshot_new(4, NULL, &tx[2], &rx[2]), FUT_ENOMEM);
    ASSERT_EQ(fut_failalloc_fired(), 1);
    ASSERT_TRUE(tx[2].ch == NULL && rx[2].ch == NULL);
    ASSERT_EQ(fut_oneshot_new(4, NULL, &tx[3], &rx[3]), 0); /* only one */
    ASSERT_EQ(fut_failalloc_disarm(), 4);
    /* Blocks from the armed hook free fine under the default one. */
    for (int i = 0; i < 4; i++) {
        if (i == 2)
            continue;
        fut_oneshot_tx_drop(&tx[i]);
        fut_oneshot_rx_drop(&rx[i]);
    }
    ASSERT_EQ(fut_alloc_live(), live);

    /* n <= 0 counts without failing. */
    fut_failalloc_arm(0);
    ASSERT_EQ(fut_oneshot_new(4, NULL, &tx[0], &rx[0]), 0);
    ASSERT_EQ(fut_failalloc_fired(), 0);
    ASSERT_EQ(fut_failalloc_disarm(), 1);
    fut_oneshot_tx_drop(&tx[0]);
    fut_oneshot_rx_drop(&rx[0]);
}
END_TEST

/* Ops for the loop: one correct, one that leaks on its error path, one
 * that reports the wrong error. */
static struct fut_oneshot_tx leaked_tx;
static struct fut_oneshot_rx leaked_rx;

static int two_channels_op(void *ud)
{
    int mode = *(int *)ud;
    struct fut_oneshot_tx tx[2];
    struct fut_oneshot_rx rx[2];
    int r = fut_oneshot_new(4, NULL, &tx[0], &rx[0]);
    if (r)
        return mode == 2 ? FUT_EINVAL : r;
    r = fut_oneshot_new(4, NULL, &tx[1], &rx[1]);
    if (r) {
        if (mode == 1) { /* forgets the first channel (kept to free) */
            leaked_tx = tx[0];
            leaked_rx = rx[0];
            return r;
        }
        fut_oneshot_tx_drop(&tx[0]);
        fut_oneshot_rx_drop(&rx[0]);
        return r;
    }
    for (int i = 0; i < 2; i++) {
        fut_oneshot_tx_drop(&tx[i]);
        fut_oneshot_rx_drop(&rx[i]);
    }
    return 0;
}

START_TEST(failalloc_each_catches_bad_error_paths)
{
    char msg[256];
    long tried;
    int mode = 0;
    ASSERT_EQ(fut_failalloc_each(two_channels_op, &mode, 10, &tried, msg,
                                 sizeof msg),
              0);
    ASSERT_EQ(tried, 3);

    mode = 2; /* wrong code at N = 1 */
    ASSERT_EQ(fut_failalloc_each(two_channels_op, &mode, 10, &tried, msg,
                                 sizeof msg),
              1);
    ck_assert_msg(strstr(msg, "EINVAL") != NULL, "msg: %s", msg);

    mode = 1; /* leaks at N = 2 */
    long live = fut_alloc_live();
    ASSERT_EQ(fut_failalloc_each(two_channels_op, &mode, 10, &tried, msg,
                                 sizeof msg),
              2);
    ck_assert_msg(strstr(msg, "leaked") != NULL, "msg: %s", msg);
    ASSERT_EQ(fut_alloc_live(), live + 1);
    /* Give back what the broken op leaked (for the leak fixture). */
    fut_oneshot_tx_drop(&leaked_tx);
    fut_oneshot_rx_drop(&leaked_rx);
    ASSERT_EQ(fut_alloc_live(), live);
}
END_TEST

/* The first spawn on a runtime carves its task slab: failing that
 * allocation makes fut_spawn return FUT_ENOMEM, with nothing copied, an
 * empty join handle, and nothing leaked; the next spawn works. */
START_TEST(failalloc_spawn_first_allocation)
{
    struct fut_runtime *rt = fut_test_rt();
    long live = fut_alloc_live();
    int polls = 0, drops = 0;
    struct counting_future cf;
    counting_future_init(&cf, 1, 1, &polls, &drops, 3);
    struct fut_join j;
    fut_failalloc_arm(1);
    ASSERT_EQ(fut_spawn(rt, &cf, sizeof cf, &j), FUT_ENOMEM);
    ASSERT_EQ(fut_failalloc_fired(), 1);
    ASSERT_EQ(fut_failalloc_disarm(), 1);
    ASSERT_EQ(fut_alloc_live(), live);
    ASSERT_TRUE(j.task == NULL);
    ASSERT_EQ(polls + drops, 0);
    fut_drop(&j.base); /* an empty handle drops fine */

    ASSERT_EQ(fut_spawn(rt, &cf, sizeof cf, &j), 0);
    ASSERT_EQ(fut_block_on(rt, &j.base), 0);
    ASSERT_EQ(j.result, 0);
    fut_drop(&j.base);
    ASSERT_EQ(drops, 1);
    fut_runtime_free(rt);
}
END_TEST

/* A spawn from a thread that is not the runtime's allocates the task
 * directly: failing it gives FUT_ENOMEM too. */
struct remote_spawn {
    struct fut_runtime *rt;
    int rc_fail, rc_ok;
    struct fut_join j;
    struct counting_future cf;
};
static void *remote_spawner(void *arg)
{
    struct remote_spawn *rs = arg;
    fut_failalloc_arm(1);
    rs->rc_fail = fut_spawn(rs->rt, &rs->cf, sizeof rs->cf, &rs->j);
    fut_failalloc_disarm();
    rs->rc_ok = fut_spawn(rs->rt, &rs->cf, sizeof rs->cf, &rs->j);
    return NULL;
}

START_TEST(failalloc_spawn_remote)
{
    struct remote_spawn rs;
    memset(&rs, 0, sizeof rs);
    rs.rt = fut_test_rt();
    int drops = 0;
    counting_future_init(&rs.cf, 0, 0, NULL, &drops, 1);
    pthread_t th;
    ASSERT_EQ(pthread_create(&th, NULL, remote_spawner, &rs), 0);
    ASSERT_EQ(pthread_join(th, NULL), 0);
    ASSERT_EQ(rs.rc_fail, FUT_ENOMEM);
    ASSERT_EQ(rs.rc_ok, 0);
    ASSERT_EQ(fut_block_on(rs.rt, &rs.j.base), 0);
    ASSERT_EQ(rs.j.result, 0);
    fut_drop(&rs.j.base);
    fut_runtime_free(rs.rt);
    ASSERT_EQ(drops, 1);
}
END_TEST

/* The whole life of a runtime with tasks, under every failing N: the
 * runtime, its scheduler, the slab chunk, each oneshot. */
static int runtime_life_op(void *ud)
{
    (void)ud;
    struct fut_runtime *rt;
    int r = fut_runtime_new(NULL, &rt);
    if (r)
        return r;
    struct example_case c;
    memset(&c, 0, sizeof c);
    struct fut_future *f = example_make(&c, rt);
    r = fut_block_on(rt, f);
    if (r == 0)
        r = c.e.result;
    if (r == 0)
        ASSERT_EQ(c.e.sum, 15);
    fut_drop(f);
    fut_runtime_free(rt);
    ASSERT_EQ(c.wdrops, c.spawned);
    return r;
}

START_TEST(failalloc_runtime_and_spawn_loop)
{
    /* Count the op's allocations first (the runtime's own may change as
     * it grows): at least the runtime, its scheduler, the slab chunk and
     * 3 oneshots. The loop must fail each of them, then succeed. */
    fut_failalloc_arm(0);
    ASSERT_EQ(runtime_life_op(NULL), 0);
    long allocs = fut_failalloc_disarm();
    ASSERT_TRUE(allocs >= 3);
    char msg[256];
    long tried;
    int r = fut_failalloc_each(runtime_life_op, NULL, 1000, &tried, msg,
                               sizeof msg);
    ck_assert_msg(r == 0, "failalloc returned %d: %s", r, msg);
    ASSERT_EQ(tried, allocs + 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("core_harness");
    TCase *tc = fut_test_tcase(s, "counts");
    tcase_add_test(tc, harness_counts_and_drops_at_each_pending);
    tcase_add_test(tc, harness_reports_failing_check);
    tc = fut_test_tcase(s, "catches_leak");
    tcase_add_test(tc, harness_catches_leak_on_drop);
    tc = fut_test_tcase(s, "errors");
    tcase_add_test(tc, harness_errors);
    tc = fut_test_tcase(s, "async_example");
    tcase_add_test(tc, harness_async_example);
    tc = fut_test_tcase(s, "drain");
    tcase_add_test(tc, harness_drains_remote_wakes);
    tc = fut_test_tcase(s, "failalloc");
    tcase_add_test(tc, failalloc_hook_fails_exactly_nth);
    tcase_add_test(tc, failalloc_each_catches_bad_error_paths);
    tc = fut_test_tcase(s, "failalloc_spawn");
    tcase_add_test(tc, failalloc_spawn_first_allocation);
    tcase_add_test(tc, failalloc_spawn_remote);
    tcase_add_test(tc, failalloc_runtime_and_spawn_loop);
    return fut_test_run(s);
}
