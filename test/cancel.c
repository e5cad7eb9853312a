/* SPDX-License-Identifier: MIT */
/* Cancel tokens (include/fut/cancel.h, C17): the flag, the wait future,
 * child tokens (cancelled with the parent, or alone), cancellation racing
 * from 4 threads against waiters on the runtime, and fut_until_cancelled
 * dropping its inner future where it stood. */
#include <pthread.h>
#include <stdatomic.h>

#include "sync_util.h"

START_TEST(basic)
{
    struct fut_token t;
    fut_token_init(&t);
    ASSERT_EQ(fut_token_is_cancelled(&t), 0);
    struct fut_token_wait w, w2;
    struct twaker tw = {0, 0}, tw2 = {0, 0};
    fut_token_wait_init(&w, &t);
    fut_token_wait_init(&w2, &t);
    ASSERT_EQ(tpoll(&w, &tw), FUT_PENDING);
    ASSERT_EQ(tpoll(&w, &tw), FUT_PENDING); /* same waker: kept */
    ASSERT_EQ(tw.refs, 1);
    ASSERT_EQ(tpoll(&w2, &tw2), FUT_PENDING);
    fut_drop(&w2.base); /* cancel-safe: unregisters */
    ASSERT_EQ(tw2.refs, 0);
    fut_token_cancel(&t);
    ASSERT_EQ(tw.wakes, 1);
    ASSERT_EQ(tw2.wakes, 0);
    ASSERT_EQ(fut_token_is_cancelled(&t), 1);
    ASSERT_EQ(tpoll(&w, &tw), FUT_READY);
    ASSERT_EQ(tpoll(&w, &tw), FUT_READY); /* C8 */
    fut_token_cancel(&t);                 /* idempotent */
    ASSERT_EQ(tw.wakes, 1);
    fut_drop(&w.base);
    ASSERT_EQ(tw.refs, 0);
    /* A wait made after the cancel is READY at once, registers nothing. */
    struct fut_token_wait w3;
    fut_token_wait_init(&w3, &t);
    ASSERT_EQ(tpoll(&w3, &tw), FUT_READY);
    ASSERT_EQ(tw.refs, 0);
    fut_drop(&w3.base);
    fut_token_fini(&t);
}
END_TEST

START_TEST(children)
{
    struct fut_token root, a, b, a1;
    fut_token_init(&root);
    fut_token_init_child(&a, &root);
    fut_token_init_child(&b, &root);
    fut_token_init_child(&a1, &a);
    struct twaker tw = {0, 0};
    struct fut_token_wait wa1, wb;
    fut_token_wait_init(&wa1, &a1);
    fut_token_wait_init(&wb, &b);
    ASSERT_EQ(tpoll(&wa1, &tw), FUT_PENDING);
    ASSERT_EQ(tpoll(&wb, &tw), FUT_PENDING);
    /* A child cancels alone: its subtree, not its parent or sibling. */
    fut_token_cancel(&a);
    ASSERT_EQ(fut_token_is_cancelled(&a), 1);
    ASSERT_EQ(fut_token_is_cancelled(&a1), 1);
    ASSERT_EQ(fut_token_is_cancelled(&root), 0);
    ASSERT_EQ(fut_token_is_cancelled(&b), 0);
    ASSERT_EQ(tw.wakes, 1);
    ASSERT_EQ(tpoll(&wa1, &tw), FUT_READY);
    /* The parent cancels the rest, grandchildren included. */
    struct fut_token b1;
    fut_token_init_child(&b1, &b);
    fut_token_cancel(&root);
    ASSERT_EQ(fut_token_is_cancelled(&b), 1);
    ASSERT_EQ(fut_token_is_cancelled(&b1), 1);
    ASSERT_EQ(tw.wakes, 2);
    ASSERT_EQ(tpoll(&wb, &tw), FUT_READY);
    /* A child made after its parent's cancel starts cancelled. */
    struct fut_token late;
    fut_token_init_child(&late, &b1);
    ASSERT_EQ(fut_token_is_cancelled(&late), 1);
    fut_drop(&wa1.base);
    fut_drop(&wb.base);
    ASSERT_EQ(tw.refs, 0);
    fut_token_fini(&late);
    fut_token_fini(&b1);
    fut_token_fini(&a1);
    fut_token_fini(&a);
    fut_token_fini(&b);
    fut_token_fini(&root);
    /* fini of a parent with children detaches them. */
    fut_token_init(&root);
    fut_token_init_child(&a, &root);
    fut_token_fini(&root);
    fut_token_cancel(&a);
    ASSERT_EQ(fut_token_is_cancelled(&a), 1);
    fut_token_fini(&a);
}
END_TEST

/* ------------------------------------------- 4-thread race on the runtime */

#define RACE_TOKENS 8
#define RACE_WAITERS 4 /* per token */

struct race_waiter {
    struct fut_future base;
    struct fut_token *tok;
    struct fut_token_wait w;
    atomic_int *done;
};

static int race_waiter_poll(struct fut_future *f, struct fut_context *cx)
{
    struct race_waiter *r = (struct race_waiter *)f;
    FUT_BEGIN(f);
    fut_token_wait_init(&r->w, r->tok);
    FUT_AWAIT(f, &r->w);
    atomic_fetch_add(r->done, 1);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(race_waiter_vt, "race_waiter", race_waiter_poll, NULL);

struct race_ctx {
    struct fut_token root;
    struct fut_token tok[RACE_TOKENS];
    atomic_int go;
    int id;
};

struct race_arg {
    struct race_ctx *c;
    int id;
};

static void *race_thread(void *p)
{
    struct race_arg *a = p;
    while (!atomic_load(&a->c->go))
        sched_yield();
    /* Each thread cancels the tokens in a different order, and one of
     * them the root: every pair of cancels races somewhere. */
    for (int i = 0; i < RACE_TOKENS; i++) {
        int k = (i * (a->id + 1) + a->id) % RACE_TOKENS;
        fut_token_cancel(&a->c->tok[k]);
        if (a->id == 3 && i == RACE_TOKENS / 2)
            fut_token_cancel(&a->c->root);
    }
    return NULL;
}

START_TEST(race_4_threads)
{
    int rounds = TEST_ITERS(200, 30);
    struct fut_runtime *rt = fut_test_rt();
    for (int round = 0; round < rounds; round++) {
        static struct race_ctx c;
        atomic_int done = 0;
        fut_token_init(&c.root);
        for (int i = 0; i < RACE_TOKENS; i++)
            fut_token_init_child(&c.tok[i], &c.root);
        atomic_store(&c.go, 0);
        struct fut_join j[RACE_TOKENS * RACE_WAITERS];
        for (int i = 0; i < RACE_TOKENS * RACE_WAITERS; i++) {
            struct race_waiter w;
            fut_future_init(&w.base, &race_waiter_vt);
            w.tok = &c.tok[i % RACE_TOKENS];
            w.done = &done;
            ASSERT_EQ(fut_spawn(rt, &w, sizeof w, &j[i]), 0);
        }
        fut_test_run_pending(rt); /* let them register (some may not) */
        pthread_t th[4];
        struct race_arg args[4];
        for (int i = 0; i < 4; i++) {
            args[i].c = &c;
            args[i].id = i;
            pthread_create(&th[i], NULL, race_thread, &args[i]);
        }
        atomic_store(&c.go, 1);
        for (int i = 0; i < 4; i++)
            pthread_join(th[i], NULL);
        for (int i = 0; i < RACE_TOKENS * RACE_WAITERS; i++) {
            ASSERT_EQ(fut_block_on(rt, &j[i].base), 0);
            ASSERT_EQ(j[i].result, 0);
            fut_drop(&j[i].base);
        }
        ASSERT_EQ(atomic_load(&done), RACE_TOKENS * RACE_WAITERS);
        for (int i = 0; i < RACE_TOKENS; i++)
            fut_token_fini(&c.tok[i]);
        fut_token_fini(&c.root);
    }
    fut_runtime_free(rt);
}
END_TEST

/* ------------------------------------------------------- until_cancelled */

/* A future that never completes but keeps a waker (a notify wait), with
 * a drop counter: dropped where it stood when the token fires. */
struct stuck {
    struct fut_future base;
    struct fut_notify *n;
    struct fut_notified w;
    int *drops;
    int *polls;
};

static int stuck_poll(struct fut_future *f, struct fut_context *cx)
{
    struct stuck *s = (struct stuck *)f;
    (*s->polls)++;
    FUT_BEGIN(f);
    fut_notified_init(&s->w, s->n);
    FUT_AWAIT(f, &s->w);
    FUT_END(f);
}

static void stuck_cleanup(struct fut_future *f)
{
    (*((struct stuck *)f)->drops)++;
}
FUT_ASYNC_VTABLE(stuck_vt, "stuck", stuck_poll, stuck_cleanup);

/* Polls the until-future by hand, so the test sees the inner future's
 * drop count at the poll that returns READY (dropped where it stood,
 * not later with the until-future). */
static int drops_at_ready;

struct runner {
    struct fut_future base;
    struct fut_token *tok;
    struct stuck inner;
    struct fut_until_cancelled u;
    int started;
    int result;
};

static int runner_poll(struct fut_future *f, struct fut_context *cx)
{
    struct runner *r = (struct runner *)f;
    if (!r->started) {
        fut_until_cancelled_init(&r->u, &r->inner.base, r->tok);
        r->started = 1;
    }
    if (fut_poll(&r->u.base, cx) == FUT_PENDING)
        return FUT_PENDING;
    r->result = r->u.result;
    drops_at_ready = *r->inner.drops;
    return FUT_READY;
}

static void runner_drop(struct fut_future *f)
{
    struct runner *r = (struct runner *)f;
    if (r->started)
        fut_drop(&r->u.base);
}
static const struct fut_future_vtable runner_vt = {runner_poll, runner_drop,
                                                   "runner", NULL};

struct canceller {
    struct fut_future base;
    struct fut_token *tok;
    struct fut_sleep s;
};

static int canceller_poll(struct fut_future *f, struct fut_context *cx)
{
    struct canceller *c = (struct canceller *)f;
    FUT_BEGIN(f);
    fut_sleep_init(&c->s, 5 * 1000 * 1000);
    FUT_AWAIT(f, &c->s);
    fut_token_cancel(c->tok);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(canceller_vt, "canceller", canceller_poll, NULL);

START_TEST(until_cancelled)
{
    struct fut_runtime *rt = fut_test_rt();
    struct fut_token tok;
    struct fut_notify n;
    fut_token_init(&tok);
    fut_notify_init(&n);
    int drops = 0, polls = 0;
    struct runner r;
    memset(&r, 0, sizeof r);
    drops_at_ready = -1;
    fut_future_init(&r.base, &runner_vt);
    r.tok = &tok;
    fut_future_init(&r.inner.base, &stuck_vt);
    r.inner.n = &n;
    r.inner.drops = &drops;
    r.inner.polls = &polls;
    struct fut_join jr, jc;
    ASSERT_EQ(fut_spawn(rt, &r, sizeof r, &jr), 0);
    struct canceller c;
    fut_future_init(&c.base, &canceller_vt);
    c.tok = &tok;
    ASSERT_EQ(fut_spawn(rt, &c, sizeof c, &jc), 0);
    FUT_JOIN_OUTPUT(&jr, struct runner, result, &r.result);
    ASSERT_EQ(fut_block_on(rt, &jr.base), 0);
    ASSERT_EQ(jr.result, 0);
    ASSERT_EQ(r.result, FUT_ECANCELED);
    fut_drop(&jr.base);
    ASSERT_EQ(fut_block_on(rt, &jc.base), 0);
    fut_drop(&jc.base);
    ASSERT_EQ(drops, 1); /* dropped where it stood (awaiting notify) */
    ASSERT_EQ(drops_at_ready, 1); /* in the poll that saw the cancel */
    ASSERT_TRUE(polls >= 1);
    fut_runtime_free(rt);
    fut_notify_fini(&n); /* no waiter left: the drop unregistered it */
    fut_token_fini(&tok);
}
END_TEST

/* The inner future completing first: result 0, waiter unregistered. */
START_TEST(until_inner_first)
{
    struct fut_token tok;
    fut_token_init(&tok);
    struct twaker tw = {0, 0};
    struct fut_yield y;
    fut_yield_init(&y);
    struct fut_until_cancelled u;
    fut_until_cancelled_init(&u, &y.base, &tok);
    ASSERT_EQ(tpoll(&u, &tw), FUT_PENDING);
    ASSERT_EQ(tw.refs, 1); /* the token holds our waker */
    ASSERT_EQ(tpoll(&u, &tw), FUT_READY);
    ASSERT_EQ(u.result, 0);
    ASSERT_EQ(tw.refs, 0); /* unregistered at READY */
    fut_token_cancel(&tok);
    ASSERT_EQ(tpoll(&u, &tw), FUT_READY); /* C8 */
    ASSERT_EQ(u.result, 0);
    fut_drop(&u.base);
    /* Cancelled before the first poll: inner never polled, dropped. */
    int drops = 0, polls = 0;
    struct counting_future cf;
    counting_future_init(&cf, 5, 1, &polls, &drops, 0);
    fut_until_cancelled_init(&u, &cf.base, &tok);
    ASSERT_EQ(tpoll(&u, &tw), FUT_READY);
    ASSERT_EQ(u.result, FUT_ECANCELED);
    ASSERT_EQ(polls, 0);
    ASSERT_EQ(drops, 1);
    fut_drop(&u.base);
    ASSERT_EQ(drops, 1);
    ASSERT_EQ(tw.refs, 0);
    fut_token_fini(&tok);
}
END_TEST

/* Drop at every PENDING: a runner whose token is cancelled part-way by a
 * sibling task; each drop must leave nothing registered or allocated. */
struct until_h {
    struct fut_token tok;
    struct fut_notify n;
    struct runner r;
    int drops, polls;
};

struct until_case {
    struct fut_future base;
    struct until_h *h;
    struct fut_yield y;
    int i;
};

static int until_case_poll(struct fut_future *f, struct fut_context *cx)
{
    struct until_case *c = (struct until_case *)f;
    FUT_BEGIN(f);
    fut_until_cancelled_init(&c->h->r.u, &c->h->r.inner.base, &c->h->tok);
    for (c->i = 0; c->i < 3; c->i++) {
        if (fut_poll(&c->h->r.u.base, cx) == FUT_READY)
            break;
        fut_yield_init(&c->y);
        FUT_AWAIT(f, &c->y);
    }
    fut_token_cancel(&c->h->tok);
    while (fut_poll(&c->h->r.u.base, cx) == FUT_PENDING) {
        fut_yield_init(&c->y);
        FUT_AWAIT(f, &c->y);
    }
    FUT_END(f);
}

static void until_case_cleanup(struct fut_future *f)
{
    struct until_case *c = (struct until_case *)f;
    fut_drop(&c->h->r.u.base);
}
FUT_ASYNC_VTABLE(until_case_vt, "until_case", until_case_poll,
                 until_case_cleanup);

static struct until_case the_case;

static struct fut_future *until_make(void *ud, struct fut_runtime *rt)
{
    (void)rt;
    struct until_h *h = ud;
    fut_token_fini(&h->tok);
    fut_token_init(&h->tok);
    h->drops = h->polls = 0;
    memset(&h->r.inner, 0, sizeof h->r.inner);
    fut_future_init(&h->r.inner.base, &stuck_vt);
    h->r.inner.n = &h->n;
    h->r.inner.drops = &h->drops;
    h->r.inner.polls = &h->polls;
    fut_future_init(&the_case.base, &until_case_vt);
    the_case.h = h;
    return &the_case.base;
}

static int until_check(void *ud, int k)
{
    struct until_h *h = ud;
    (void)k;
    return h->drops == 1 ? 0 : 1; /* the inner dropped exactly once */
}

START_TEST(until_harness)
{
    static struct until_h h;
    fut_token_init(&h.tok);
    fut_notify_init(&h.n);
    struct fut_harness hs;
    fut_harness_init(&hs, until_make, until_check, &h);
    int r = fut_harness_run(&hs);
    ck_assert_msg(r == 0, "harness: %d (%s)", r, hs.msg);
    ASSERT_TRUE(hs.pendings >= 3);
    fut_notify_fini(&h.n);
    fut_token_fini(&h.tok);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cancel");
    tcase_add_test(fut_test_tcase(s, "basic"), basic);
    tcase_add_test(fut_test_tcase(s, "children"), children);
    tcase_add_test(fut_test_tcase(s, "race_4_threads"), race_4_threads);
    tcase_add_test(fut_test_tcase(s, "until_cancelled"), until_cancelled);
    tcase_add_test(fut_test_tcase(s, "until_inner_first"), until_inner_first);
    tcase_add_test(fut_test_tcase(s, "until_harness"), until_harness);
    return fut_test_run(s);
}
