/* SPDX-License-Identifier: MIT */
/* Streams (C15, C8, C11): the array source, map/filter/take, and the
 * fold/for_each/collect consumers; END stays END; drops cascade once;
 * collect under fail-the-Nth-allocation; every consumer through the
 * drop-at-every-PENDING harness over a stream that allocates (oneshots
 * fed by spawned tasks). */
#include <string.h>

#include "test.h"

/* ------------------------------------------------------- test waker */

struct test_waker {
    int refs, wakes;
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

/* Polls a future to READY with 'cx'; returns the PENDING count. */
static int drive(struct fut_future *f, struct fut_context *cx)
{
    int pend = 0;
    while (fut_poll(f, cx) == FUT_PENDING) {
        pend++;
        ck_assert_msg(pend < 100000, "future never completes");
    }
    return pend;
}

/* -------------------------------------------------------- test streams */

/* Items 0 .. n-1 (ints); 'pend' PENDING answers (self-waking) before
 * each item; counts polls and drops. */
struct counting_stream {
    struct fut_stream base;
    int n, next, pend, left;
    int polls, drops;
};
static int cs_poll_next(struct fut_stream *s, struct fut_context *cx,
                        void *item)
{
    struct counting_stream *c = (struct counting_stream *)s;
    c->polls++;
    if (c->next == c->n)
        return FUT_STREAM_END;
    if (c->left > 0) {
        c->left--;
        fut_waker_wake_by_ref(&cx->waker);
        return FUT_PENDING;
    }
    c->left = c->pend;
    memcpy(item, &c->next, sizeof(int));
    c->next++;
    return FUT_STREAM_ITEM;
}
static void cs_drop(struct fut_stream *s)
{
    ((struct counting_stream *)s)->drops++;
}
static const struct fut_stream_vtable cs_vt = {cs_poll_next, cs_drop,
                                               "counting_stream"};
static void cs_init(struct counting_stream *c, int n, int pend)
{
    memset(c, 0, sizeof *c);
    fut_stream_init(&c->base, &cs_vt, sizeof(int));
    c->n = n;
    c->pend = pend;
    c->left = pend;
}

/* A stream that breaks C15 on its own: END, then items again. */
struct bad_stream {
    struct fut_stream base;
    int polls;
};
static int bad_poll_next(struct fut_stream *s, struct fut_context *cx,
                         void *item)
{
    struct bad_stream *b = (struct bad_stream *)s;
    (void)cx;
    if (b->polls++ == 0)
        return FUT_STREAM_END;
    *(int *)item = 666;
    return FUT_STREAM_ITEM;
}
static const struct fut_stream_vtable bad_vt = {bad_poll_next, NULL, "bad"};

/* --------------------------------------------------------------- array */

START_TEST(array_items_then_end)
{
    struct fut_context cx;
    fut_context_init(&cx, fut_waker_noop());
    int v[4] = {5, 6, 7, 8};
    struct fut_stream_array a;
    fut_stream_array_init(&a, v, 4, sizeof(int));
    ASSERT_EQ(a.base.item_size, sizeof(int));
    for (int i = 0; i < 4; i++) {
        int x = -1;
        ASSERT_EQ(fut_stream_poll_next(&a.base, &cx, &x), FUT_STREAM_ITEM);
        ASSERT_EQ(x, v[i]);
    }
    for (int i = 0; i < 3; i++) {
        int x = -1;
        ASSERT_EQ(fut_stream_poll_next(&a.base, &cx, &x), FUT_STREAM_END);
        ASSERT_EQ(x, -1); /* untouched */
    }
    ASSERT_TRUE(fut_stream_is_ended(&a.base));
    fut_stream_drop(&a.base);
    fut_stream_drop(&a.base); /* idempotent */

    struct fut_stream_array e;
    fut_stream_array_init(&e, NULL, 0, sizeof(int));
    int x;
    ASSERT_EQ(fut_stream_poll_next(&e.base, &cx, &x), FUT_STREAM_END);
    fut_stream_drop(&e.base);
}
END_TEST

/* ---------------------------------------------------------------- C15 */

static int is_even(const void *item, void *ud)
{
    (void)ud;
    return *(const int *)item % 2 == 0;
}

static void square_to_ll(const void *in, void *out, void *ud)
{
    (void)ud;
    long long x = *(const int *)in;
    *(long long *)out = x * x;
}

START_TEST(end_stays_end_c15)
{
    struct fut_context cx;
    fut_context_init(&cx, fut_waker_noop());

    /* The interface makes END final even for a stream that is not. */
    struct bad_stream b = {{0}, 0};
    fut_stream_init(&b.base, &bad_vt, sizeof(int));
    int x = 0;
    ASSERT_EQ(fut_stream_poll_next(&b.base, &cx, &x), FUT_STREAM_END);
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(fut_stream_poll_next(&b.base, &cx, &x), FUT_STREAM_END);
    ASSERT_EQ(x, 0);
    ASSERT_EQ(b.polls, 1); /* not run again */

    /* Every adaptor, raw (its own poll_next) and through the interface:
     * END again, and the inner stream is not polled again. */
    struct counting_stream c;
    struct fut_stream_map m;
    struct fut_stream_filter fl;
    struct fut_stream_take t;
    for (int kind = 0; kind < 3; kind++) {
        cs_init(&c, 4, 0);
        struct fut_stream *top;
        if (kind == 0) {
            fut_stream_map_init(&m, &c.base, sizeof(long long), square_to_ll,
                                NULL, NULL);
            top = &m.base;
        } else if (kind == 1) {
            fut_stream_filter_init(&fl, &c.base, is_even, NULL);
            top = &fl.base;
        } else {
            fut_stream_take_init(&t, &c.base, 10);
            top = &t.base;
        }
        long long item;
        int items = 0, r;
        while ((r = fut_stream_poll_next(top, &cx, &item)) == FUT_STREAM_ITEM)
            items++;
        ASSERT_EQ(r, FUT_STREAM_END);
        ASSERT_EQ(items, kind == 1 ? 2 : 4);
        int polls = c.polls;
        for (int i = 0; i < 3; i++) {
            ASSERT_EQ(fut_stream_poll_next(top, &cx, &item), FUT_STREAM_END);
            ASSERT_EQ(top->vt->poll_next(top, &cx, &item), FUT_STREAM_END);
        }
        ASSERT_EQ(c.polls, polls);
        fut_stream_drop(top);
        ASSERT_EQ(c.drops, 1);
    }

    /* take: once the count is reached, END without polling the inner
     * stream (which has more). */
    cs_init(&c, 100, 0);
    fut_stream_take_init(&t, &c.base, 2);
    for (int i = 0; i < 2; i++)
        ASSERT_EQ(fut_stream_poll_next(&t.base, &cx, &x), FUT_STREAM_ITEM);
    ASSERT_EQ(c.polls, 2);
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(t.base.vt->poll_next(&t.base, &cx, &x), FUT_STREAM_END);
    ASSERT_EQ(c.polls, 2);
    fut_stream_drop(&t.base);
}
END_TEST

/* ------------------------------------------------------------ adaptors */

struct big {
    int key;
    char pad[96]; /* larger than FUT_STREAM_INLINE_ITEM */
};

static void big_key(const void *in, void *out, void *ud)
{
    (void)ud;
    *(int *)out = ((const struct big *)in)->key;
}

START_TEST(map_filter_take_results)
{
    struct fut_context cx;
    fut_context_init(&cx, fut_waker_noop());
    /* take(3, map(square, filter(even, 0..9))) = 0, 4, 16 */
    struct counting_stream c;
    cs_init(&c, 10, 0);
    struct fut_stream_filter fl;
    fut_stream_filter_init(&fl, &c.base, is_even, NULL);
    struct fut_stream_map m;
    fut_stream_map_init(&m, &fl.base, sizeof(long long), square_to_ll, NULL,
                        NULL);
    struct fut_stream_take t;
    fut_stream_take_init(&t, &m.base, 3);
    ASSERT_EQ(t.base.item_size, sizeof(long long));
    long long want[3] = {0, 4, 16}, got;
    for (int i = 0; i < 3; i++) {
        ASSERT_EQ(fut_stream_poll_next(&t.base, &cx, &got), FUT_STREAM_ITEM);
        ASSERT_EQ(got, want[i]);
    }
    ASSERT_EQ(fut_stream_poll_next(&t.base, &cx, &got), FUT_STREAM_END);
    ASSERT_EQ(c.next, 5); /* pulled 0..4, no further */
    /* The drop cascades to the bottom exactly once. */
    fut_stream_drop(&t.base);
    fut_stream_drop(&t.base);
    ASSERT_EQ(c.drops, 1);
    ASSERT_TRUE(fl.base.flags & FUT_SF_DROPPED);
    ASSERT_TRUE(m.base.flags & FUT_SF_DROPPED);

    /* take more than there is; take 0 (never polls the inner stream). */
    cs_init(&c, 2, 0);
    fut_stream_take_init(&t, &c.base, 5);
    int x, n = 0;
    while (fut_stream_poll_next(&t.base, &cx, &x) == FUT_STREAM_ITEM)
        n++;
    ASSERT_EQ(n, 2);
    fut_stream_drop(&t.base);
    cs_init(&c, 2, 0);
    fut_stream_take_init(&t, &c.base, 0);
    ASSERT_EQ(fut_stream_poll_next(&t.base, &cx, &x), FUT_STREAM_END);
    ASSERT_EQ(c.polls, 0);
    fut_stream_drop(&t.base);
    ASSERT_EQ(c.drops, 1);

    /* map over items too big for the inline buffer: caller scratch. */
    struct big bigs[3];
    memset(bigs, 0, sizeof bigs);
    for (int i = 0; i < 3; i++)
        bigs[i].key = 100 + i;
    struct fut_stream_array a;
    fut_stream_array_init(&a, bigs, 3, sizeof(struct big));
    struct big scratch;
    fut_stream_map_init(&m, &a.base, sizeof(int), big_key, NULL, &scratch);
    for (int i = 0; i < 3; i++) {
        ASSERT_EQ(fut_stream_poll_next(&m.base, &cx, &x), FUT_STREAM_ITEM);
        ASSERT_EQ(x, 100 + i);
    }
    ASSERT_EQ(fut_stream_poll_next(&m.base, &cx, &x), FUT_STREAM_END);
    fut_stream_drop(&m.base);
}
END_TEST

/* ----------------------------------------------------------- consumers */

static intptr_t sum_fn(intptr_t acc, const void *item, void *ud)
{
    (void)ud;
    return acc + *(const int *)item;
}

static intptr_t sum_ll_fn(intptr_t acc, const void *item, void *ud)
{
    (void)ud;
    return acc + (intptr_t) * (const long long *)item;
}

struct each_state {
    int seen[16];
    int n;
    int stop_at; /* stop (returning 5) after this many; 0 = never */
};
static int each_fn(const void *item, void *ud)
{
    struct each_state *e = ud;
    e->seen[e->n++] = *(const int *)item;
    return e->stop_at && e->n == e->stop_at ? 5 : 0;
}

START_TEST(fold_for_each_collect_results)
{
    struct fut_context cx;
    fut_context_init(&cx, fut_waker_noop());
    int v[10];
    for (int i = 0; i < 10; i++)
        v[i] = i + 1;

    /* fold: 1 + ... + 10 from 1000 */
    struct fut_stream_array a;
    fut_stream_array_init(&a, v, 10, sizeof(int));
    struct fut_stream_fold fo;
    fut_stream_fold_init(&fo, &a.base, 1000, sum_fn, NULL, NULL);
    ASSERT_EQ(drive(&fo.base, &cx), 0);
    ASSERT_EQ(fo.acc, 1055);
    fut_drop(&fo.base);
    ASSERT_TRUE(a.base.flags & FUT_SF_DROPPED);

    /* for_each to the end, and stopped early by fn */
    struct each_state e;
    memset(&e, 0, sizeof e);
    fut_stream_array_init(&a, v, 10, sizeof(int));
    struct fut_stream_for_each fe;
    fut_stream_for_each_init(&fe, &a.base, each_fn, &e, NULL);
    drive(&fe.base, &cx);
    ASSERT_EQ(fe.result, 0);
    ASSERT_EQ(fe.count, 10);
    ASSERT_EQ(e.n, 10);
    ASSERT_EQ(e.seen[9], 10);
    fut_drop(&fe.base);
    memset(&e, 0, sizeof e);
    e.stop_at = 3;
    fut_stream_array_init(&a, v, 10, sizeof(int));
    fut_stream_for_each_init(&fe, &a.base, each_fn, &e, NULL);
    drive(&fe.base, &cx);
    ASSERT_EQ(fe.result, 5);
    ASSERT_EQ(fe.count, 3);
    ASSERT_EQ(a.next, 3); /* the rest was left unread */
    fut_drop(&fe.base);

    /* collect: 100 items across several growths */
    int many[100];
    for (int i = 0; i < 100; i++)
        many[i] = i * 7;
    fut_stream_array_init(&a, many, 100, sizeof(int));
    struct fut_stream_collect co;
    fut_stream_collect_init(&co, &a.base);
    long live = fut_alloc_live();
    drive(&co.base, &cx);
    ASSERT_EQ(co.result, 0);
    ASSERT_EQ(co.len, 100);
    ASSERT_EQ(memcmp(co.items, many, sizeof many), 0);
    ASSERT_EQ(fut_alloc_live(), live + 1); /* one buffer */
    fut_drop(&co.base);
    ASSERT_EQ(fut_alloc_live(), live + 1); /* the caller's now */
    fut_stream_collect_release(&co);
    ASSERT_EQ(fut_alloc_live(), live);
    ASSERT_TRUE(co.items == NULL);

    /* collect of an empty stream allocates nothing */
    long calls = fut_alloc_count();
    fut_stream_array_init(&a, NULL, 0, sizeof(int));
    fut_stream_collect_init(&co, &a.base);
    drive(&co.base, &cx);
    ASSERT_EQ(co.result, 0);
    ASSERT_EQ(co.len, 0);
    ASSERT_TRUE(co.items == NULL);
    ASSERT_EQ(fut_alloc_count(), calls);
    fut_drop(&co.base);
    fut_stream_collect_release(&co);

    /* collect and fold over items larger than the inline buffer */
    struct big bigs[20];
    memset(bigs, 0, sizeof bigs);
    for (int i = 0; i < 20; i++)
        bigs[i].key = i;
    fut_stream_array_init(&a, bigs, 20, sizeof(struct big));
    fut_stream_collect_init(&co, &a.base);
    drive(&co.base, &cx);
    ASSERT_EQ(co.result, 0);
    ASSERT_EQ(co.len, 20);
    ASSERT_EQ(((struct big *)co.items)[19].key, 19);
    fut_drop(&co.base);
    fut_stream_collect_release(&co);
    struct big scratch;
    fut_stream_array_init(&a, bigs, 20, sizeof(struct big));
    fut_stream_fold_init(&fo, &a.base, 0, sum_fn, NULL, &scratch);
    drive(&fo.base, &cx);
    ASSERT_EQ(fo.acc, 190); /* 'key' is the first member */
    fut_drop(&fo.base);
}
END_TEST

/* Dropping a consumer before READY drops its stream and frees what it
 * holds (collect: the partial buffer). */
START_TEST(consumers_dropped_midway)
{
    struct fut_context cx;
    fut_context_init(&cx, fut_waker_noop());
    struct counting_stream c;
    long live = fut_alloc_live();

    cs_init(&c, 50, 1);
    struct fut_stream_collect co;
    fut_stream_collect_init(&co, &c.base);
    for (int i = 0; i < 30; i++)
        ASSERT_EQ(fut_poll(&co.base, &cx), FUT_PENDING);
    ASSERT_TRUE(co.len > 8); /* grew at least once */
    fut_drop(&co.base);
    ASSERT_EQ(c.drops, 1);
    ASSERT_EQ(fut_alloc_live(), live);
    fut_stream_collect_release(&co); /* no-op: nothing of the caller's */
    ASSERT_EQ(fut_alloc_live(), live);

    cs_init(&c, 50, 1);
    struct fut_stream_fold fo;
    fut_stream_fold_init(&fo, &c.base, 0, sum_fn, NULL, NULL);
    for (int i = 0; i < 5; i++)
        ASSERT_EQ(fut_poll(&fo.base, &cx), FUT_PENDING);
    fut_drop(&fo.base);
    ASSERT_EQ(c.drops, 1);
    ASSERT_EQ(fo.acc, 0 + 1 + 2 + 3); /* folded so far, still readable */

    cs_init(&c, 50, 1);
    struct each_state e;
    memset(&e, 0, sizeof e);
    struct fut_stream_for_each fe;
    fut_stream_for_each_init(&fe, &c.base, each_fn, &e, NULL);
    ASSERT_EQ(fut_poll(&fe.base, &cx), FUT_PENDING);
    fut_drop(&fe.base);
    ASSERT_EQ(c.drops, 1);
}
END_TEST

/* ------------------------------------------------------------- pending */

/* A pending stream: PENDING propagates through every adaptor, having
 * woken the task; the results are the same. The array source spends the
 * coop budget: a consumer returns PENDING (and wakes) when it runs out. */
START_TEST(pending_and_coop)
{
    struct test_waker tw;
    struct fut_context cx;
    cx_init(&cx, &tw);
    struct counting_stream c;
    cs_init(&c, 10, 2);
    struct fut_stream_filter fl;
    fut_stream_filter_init(&fl, &c.base, is_even, NULL);
    struct fut_stream_map m;
    fut_stream_map_init(&m, &fl.base, sizeof(long long), square_to_ll, NULL,
                        NULL);
    struct fut_stream_take t;
    fut_stream_take_init(&t, &m.base, 4);
    struct fut_stream_collect co;
    fut_stream_collect_init(&co, &t.base);
    int pend = drive(&co.base, &cx);
    /* 2 PENDING before each of the 7 items pulled (0..6). */
    ASSERT_EQ(pend, 14);
    ASSERT_EQ(tw.wakes, 14);
    ASSERT_EQ(co.len, 4);
    long long *ll = co.items;
    ASSERT_EQ(ll[0] + ll[1] + ll[2] + ll[3], 0 + 4 + 16 + 36);
    fut_drop(&co.base);
    fut_stream_collect_release(&co);
    ASSERT_EQ(c.drops, 1);

    /* Coop: a budget of 3 lets a fold take 3 items per poll. */
    int v[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    struct fut_stream_array a;
    fut_stream_array_init(&a, v, 10, sizeof(int));
    struct fut_stream_fold fo;
    fut_stream_fold_init(&fo, &a.base, 0, sum_fn, NULL, NULL);
    tw.wakes = 0;
    int polls = 0, r;
    do {
        cx.budget = 3; /* what a runtime does at each task poll */
        r = fut_poll(&fo.base, &cx);
        polls++;
        if (r == FUT_PENDING)
            ASSERT_EQ(fo.acc, 3 * polls);
    } while (r == FUT_PENDING && polls < 100);
    ASSERT_EQ(r, FUT_READY);
    ASSERT_EQ(polls, 4); /* 3 + 3 + 3 + 1 */
    ASSERT_EQ(tw.wakes, 3);
    ASSERT_EQ(fo.acc, 10);
    fut_drop(&fo.base);
}
END_TEST

/* ----------------------------------------------------------------- C8 */

static void repoll(struct fut_future *f, struct fut_context *cx)
{
    ASSERT_EQ(fut_poll(f, cx), FUT_READY);
    ASSERT_EQ(f->vt->poll(f, cx), FUT_READY);
    ASSERT_EQ(fut_poll(f, cx), FUT_READY);
}

START_TEST(consumers_poll_after_ready_c8)
{
    struct fut_context cx;
    fut_context_init(&cx, fut_waker_noop());
    int v[5] = {1, 2, 3, 4, 5};
    struct fut_stream_array a;

    fut_stream_array_init(&a, v, 5, sizeof(int));
    struct fut_stream_fold fo;
    fut_stream_fold_init(&fo, &a.base, 0, sum_fn, NULL, NULL);
    drive(&fo.base, &cx);
    repoll(&fo.base, &cx);
    ASSERT_EQ(fo.acc, 15);
    fut_drop(&fo.base);

    struct each_state e;
    memset(&e, 0, sizeof e);
    e.stop_at = 2;
    fut_stream_array_init(&a, v, 5, sizeof(int));
    struct fut_stream_for_each fe;
    fut_stream_for_each_init(&fe, &a.base, each_fn, &e, NULL);
    drive(&fe.base, &cx);
    repoll(&fe.base, &cx);
    ASSERT_EQ(fe.result, 5);
    ASSERT_EQ(fe.count, 2);
    ASSERT_EQ(e.n, 2); /* fn not called again */
    fut_drop(&fe.base);

    fut_stream_array_init(&a, v, 5, sizeof(int));
    struct fut_stream_collect co;
    fut_stream_collect_init(&co, &a.base);
    drive(&co.base, &cx);
    void *items = co.items;
    long calls = fut_alloc_count();
    repoll(&co.base, &cx);
    ASSERT_EQ(fut_alloc_count(), calls);
    ASSERT_TRUE(co.items == items);
    ASSERT_EQ(co.len, 5);
    ASSERT_EQ(co.result, 0);
    fut_drop(&co.base);
    fut_stream_collect_release(&co);
}
END_TEST

/* --------------------------- a stream that allocates: oneshots + tasks */

/* A task that yields once and sends its value (cf. core_combinators). */
struct sender {
    struct fut_future base;
    struct fut_oneshot_tx tx;
    int value;
    int *drops;
};
static int sender_poll(struct fut_future *f, struct fut_context *cx)
{
    struct sender *s = (struct sender *)f;
    FUT_BEGIN(f);
    FUT_YIELD(f);
    (void)fut_oneshot_send(&s->tx, &s->value);
    FUT_END(f);
}
static void sender_cleanup(struct fut_future *f)
{
    struct sender *s = (struct sender *)f;
    fut_oneshot_tx_drop(&s->tx);
    (*s->drops)++;
}
FUT_ASYNC_VTABLE(sender_vt, "sender", sender_poll, sender_cleanup);

/* Item i (= 3 * i) comes through a fresh oneshot from a task spawned for
 * it. An allocation failure ends the stream with 'err' set. */
struct os_stream {
    struct fut_stream base;
    int n, next;
    int active; /* 'recv' is live */
    struct fut_oneshot_recv recv;
    int value, err;
    int drops, spawned, sdrops;
};

static int os_start(struct os_stream *o)
{
    struct fut_oneshot_tx tx;
    struct fut_oneshot_rx rx;
    int r = fut_oneshot_new(sizeof(int), NULL, &tx, &rx);
    if (r)
        return r;
    struct sender s;
    memset(&s, 0, sizeof s);
    fut_future_init(&s.base, &sender_vt);
    s.tx = tx;
    s.value = 3 * o->next;
    s.drops = &o->sdrops;
    r = fut_spawn(NULL, &s, sizeof s, NULL);
    if (r) {
        fut_oneshot_tx_drop(&tx);
        fut_oneshot_rx_drop(&rx);
        return r;
    }
    o->spawned++;
    fut_oneshot_recv_init(&o->recv, &rx, &o->value);
    o->active = 1;
    return 0;
}

static int os_poll_next(struct fut_stream *s, struct fut_context *cx,
                        void *item)
{
    struct os_stream *o = (struct os_stream *)s;
    if (o->next == o->n)
        return FUT_STREAM_END;
    if (!o->active && (o->err = os_start(o)) != 0)
        return FUT_STREAM_END;
    if (fut_poll(&o->recv.base, cx) == FUT_PENDING)
        return FUT_PENDING;
    fut_drop(&o->recv.base);
    o->active = 0;
    if (o->recv.result) {
        o->err = o->recv.result;
        return FUT_STREAM_END;
    }
    memcpy(item, &o->value, sizeof(int));
    o->next++;
    return FUT_STREAM_ITEM;
}

static void os_drop(struct fut_stream *s)
{
    struct os_stream *o = (struct os_stream *)s;
    if (o->active)
        fut_drop(&o->recv.base);
    o->drops++;
}

static const struct fut_stream_vtable os_vt = {os_poll_next, os_drop,
                                               "oneshot_stream"};

static void os_init(struct os_stream *o, int n)
{
    memset(o, 0, sizeof *o);
    fut_stream_init(&o->base, &os_vt, sizeof(int));
    o->n = n;
}

/* ------------------------------------- drop-at-every-PENDING harness */

enum { C_FOLD, C_FOR_EACH, C_COLLECT, C_COUNT };

struct cons_case {
    int kind, checks_ok;
    struct os_stream src;
    struct fut_stream_filter fl;
    struct fut_stream_map m;
    struct fut_stream_take t;
    struct each_state e;
    union {
        struct fut_stream_fold fo;
        struct fut_stream_for_each fe;
        struct fut_stream_collect co;
    } u;
};

static struct fut_future *cons_make(void *ud, struct fut_runtime *rt)
{
    struct cons_case *c = ud;
    (void)rt;
    int kind = c->kind, ok = c->checks_ok;
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->checks_ok = ok;
    os_init(&c->src, 6); /* 0 3 6 9 12 15 */
    switch (kind) {
    case C_FOLD: /* fold(sum, map(square, filter(even, src))) */
        fut_stream_filter_init(&c->fl, &c->src.base, is_even, NULL);
        fut_stream_map_init(&c->m, &c->fl.base, sizeof(long long),
                            square_to_ll, NULL, NULL);
        fut_stream_fold_init(&c->u.fo, &c->m.base, 0, sum_ll_fn, NULL, NULL);
        break;
    case C_FOR_EACH:
        fut_stream_for_each_init(&c->u.fe, &c->src.base, each_fn, &c->e,
                                 NULL);
        break;
    default: /* collect(take(4, src)) */
        fut_stream_take_init(&c->t, &c->src.base, 4);
        fut_stream_collect_init(&c->u.co, &c->t.base);
        break;
    }
    return FUT_AS_FUTURE(&c->u);
}

static int cons_check(void *ud, int k)
{
    struct cons_case *c = ud;
    int bad = 0;
    if (c->src.drops != 1 || c->src.sdrops != c->src.spawned)
        bad = 1;
    if (k == 0) {
        /* even items 0, 6, 12 -> squares 0 + 36 + 144 */
        if (c->kind == C_FOLD && c->u.fo.acc != 36 + 144)
            bad = 2;
        if (c->kind == C_FOR_EACH &&
            (c->u.fe.count != 6 || c->e.seen[5] != 15))
            bad = 3;
        if (c->kind == C_COLLECT &&
            (c->u.co.len != 4 || ((int *)c->u.co.items)[3] != 9))
            bad = 4;
    }
    /* After READY the buffer is ours to free (before the leak check);
     * after a drop there must be nothing left to free. */
    if (c->kind == C_COLLECT && k == 0)
        fut_stream_collect_release(&c->u.co);
    c->checks_ok += bad == 0;
    return bad;
}

START_TEST(harness_every_consumer)
{
    for (int kind = 0; kind < C_COUNT; kind++) {
        struct cons_case c;
        memset(&c, 0, sizeof c);
        c.kind = kind;
        struct fut_harness h;
        fut_harness_init(&h, cons_make, cons_check, &c);
        int r = fut_harness_run(&h);
        ck_assert_msg(r == 0, "kind %d: harness returned %d (%s)", kind, r,
                      h.msg);
        ck_assert_msg(h.pendings >= 4, "kind %d: %ld PENDING", kind,
                      h.pendings);
        ASSERT_EQ(c.checks_ok, h.runs);
    }
}
END_TEST

/* ------------------------------------------ fail the Nth allocation */

/* collect over an array: only the buffer allocates (8, 16, ... 128). */
static int collect_array_op(void *ud)
{
    const int *many = ud;
    struct fut_context cx;
    fut_context_init(&cx, fut_waker_noop());
    struct fut_stream_array a;
    fut_stream_array_init(&a, many, 100, sizeof(int));
    struct fut_stream_collect co;
    fut_stream_collect_init(&co, &a.base);
    while (fut_poll(&co.base, &cx) == FUT_PENDING)
        ;
    int r = co.result;
    if (r == 0) {
        r = memcmp(co.items, many, 100 * sizeof(int)) ? -1 : 0;
        ASSERT_EQ(co.len, 100);
    } else {
        ASSERT_TRUE(co.items == NULL);
        ASSERT_EQ(co.len, 0);
    }
    fut_drop(&co.base);
    fut_stream_collect_release(&co);
    return r;
}

/* collect over the oneshot stream on a runtime: the runtime, the task
 * slab, the oneshots and the buffer all allocate. */
static int collect_runtime_op(void *ud)
{
    (void)ud;
    struct fut_runtime *rt;
    int r = fut_runtime_new(NULL, &rt);
    if (r)
        return r;
    struct os_stream src;
    os_init(&src, 20);
    struct fut_stream_collect co;
    fut_stream_collect_init(&co, &src.base);
    r = fut_block_on(rt, &co.base);
    if (r == 0)
        r = co.result ? co.result : src.err;
    if (r == 0) {
        ASSERT_EQ(co.len, 20);
        ASSERT_EQ(((int *)co.items)[19], 57);
    }
    fut_drop(&co.base);
    fut_stream_collect_release(&co);
    fut_runtime_free(rt);
    ASSERT_EQ(src.drops, 1);
    ASSERT_EQ(src.sdrops, src.spawned);
    return r;
}

START_TEST(collect_fail_nth_allocation)
{
    int many[100];
    for (int i = 0; i < 100; i++)
        many[i] = i ^ 0x55;
    long tried = 0;
    char msg[256];
    int r = fut_failalloc_each(collect_array_op, many, 100, &tried, msg,
                               sizeof msg);
    ck_assert_msg(r == 0, "failalloc returned %d: %s", r, msg);
    ASSERT_EQ(tried, 6); /* 5 growths fail in turn, then it succeeds */

    /* Runtime, scheduler, slab chunk, 3 buffer growths, and what else the
     * runtime allocates (the 20 oneshots come from the runtime's slab, not
     * the hook): counted first, then each one failed in turn. */
    fut_failalloc_arm(0);
    ASSERT_EQ(collect_runtime_op(NULL), 0);
    long allocs = fut_failalloc_disarm();
    ASSERT_TRUE(allocs >= 3 + 3);
    r = fut_failalloc_each(collect_runtime_op, NULL, 1000, &tried, msg,
                           sizeof msg);
    ck_assert_msg(r == 0, "failalloc returned %d: %s", r, msg);
    ASSERT_EQ(tried, allocs + 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("core_stream");
    TCase *tc = fut_test_tcase(s, "array");
    tcase_add_test(tc, array_items_then_end);
    tc = fut_test_tcase(s, "end_stays_end");
    tcase_add_test(tc, end_stays_end_c15);
    tc = fut_test_tcase(s, "adaptors");
    tcase_add_test(tc, map_filter_take_results);
    tc = fut_test_tcase(s, "consumers");
    tcase_add_test(tc, fold_for_each_collect_results);
    tcase_add_test(tc, consumers_dropped_midway);
    tc = fut_test_tcase(s, "pending");
    tcase_add_test(tc, pending_and_coop);
    tc = fut_test_tcase(s, "c8");
    tcase_add_test(tc, consumers_poll_after_ready_c8);
    tc = fut_test_tcase(s, "harness");
    tcase_add_test(tc, harness_every_consumer);
    tc = fut_test_tcase(s, "failalloc");
    tcase_add_test(tc, collect_fail_nth_allocation);
    return fut_test_run(s);
}
