/* SPDX-License-Identifier: MIT */
/* Task scopes (include/fut/scope.h, C16): joining, records as children
 * finish, no child outliving its scope (idle, queued, woken during the
 * cancel, and running on the other worker when the scope is dropped),
 * first-error cancellation, the supervisor policy, nested scopes three
 * levels deep, children spawning into their own scope, cancellation from
 * a foreign thread, the token, the stream, and a scope dropped at every
 * PENDING (the harness) with 0 leaks. Every case ends with the leak
 * check; the MT variants run the same case on 2 workers. */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "sync_util.h"

#define MS (1000LL * 1000)

static void sleep_ns(long ns)
{
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
}

/* Spawns 'f' as a task and blocks until it completes (the owner of the
 * scope then runs on a worker on the multi-thread runtime); the task's
 * final bytes are copied back into 'f', so the test reads its outputs. */
static void run_task(struct fut_runtime *rt, void *f, size_t size)
{
    struct fut_join j;
    ASSERT_EQ(fut_spawn(rt, f, size, &j), 0);
    fut_join_output_to(&j, 0, size, f);
    ASSERT_EQ(fut_block_on(rt, &j.base), 0);
    ASSERT_EQ(j.result, 0);
    fut_drop(&j.base);
}

/* ------------------------------------------------------------------ kids */

/* Counters every kind of kid reports to (reset per test). */
static atomic_long started, completed, dropped, in_poll, max_in_poll;

static void counters_reset(void)
{
    atomic_store(&started, 0);
    atomic_store(&completed, 0);
    atomic_store(&dropped, 0);
    atomic_store(&in_poll, 0);
    atomic_store(&max_in_poll, 0);
}

/* A kid that yields 'yields' times, then completes with 'rc', 'value'.
 * 'spin_ns' > 0: every poll busy-waits that long (a long-ish poll that
 * another worker's scope drop has to wait for); yields < 0: for ever. */
struct kid {
    struct fut_future base;
    int yields, i;
    int rc;         /* output: result */
    intptr_t value; /* output */
    long spin_ns;
    int done;
    struct fut_yield y;
};

static int kid_poll(struct fut_future *f, struct fut_context *cx)
{
    struct kid *k = (struct kid *)f;
    long n = atomic_fetch_add(&in_poll, 1) + 1;
    long m = atomic_load(&max_in_poll);
    while (n > m && !atomic_compare_exchange_weak(&max_in_poll, &m, n))
        ;
    if (k->spin_ns > 0) {
        int64_t end = fut_now_ns() + k->spin_ns;
        while (fut_now_ns() < end)
            ;
    }
    atomic_fetch_sub(&in_poll, 1);
    FUT_BEGIN(f);
    atomic_fetch_add(&started, 1);
    for (k->i = 0; k->yields < 0 || k->i < k->yields; k->i++) {
        fut_yield_init(&k->y);
        FUT_AWAIT(f, &k->y);
    }
    k->done = 1;
    atomic_fetch_add(&completed, 1);
    FUT_END(f);
}

static void kid_cleanup(struct fut_future *f)
{
    struct kid *k = (struct kid *)f;
    if (!k->done)
        atomic_fetch_add(&dropped, 1);
}
FUT_ASYNC_VTABLE(kid_vt, "kid", kid_poll, kid_cleanup);

static struct kid kid_make(int yields, int rc, intptr_t value)
{
    struct kid k;
    memset(&k, 0, sizeof k);
    fut_future_init(&k.base, &kid_vt);
    k.yields = yields;
    k.rc = rc;
    k.value = value;
    return k;
}

/* A kid that waits on a token (cancelled by nobody unless the test says
 * so) - idle, with a waker registered - and completes 0 when it fires. */
struct waiter {
    struct fut_future base;
    struct fut_token *tok;
    struct fut_token_wait w;
    int done;
    int rc;
};

static int waiter_poll(struct fut_future *f, struct fut_context *cx)
{
    struct waiter *w = (struct waiter *)f;
    FUT_BEGIN(f);
    atomic_fetch_add(&started, 1);
    fut_token_wait_init(&w->w, w->tok);
    FUT_AWAIT(f, &w->w);
    w->done = 1;
    atomic_fetch_add(&completed, 1);
    FUT_END(f);
}

static void waiter_cleanup(struct fut_future *f)
{
    if (!((struct waiter *)f)->done)
        atomic_fetch_add(&dropped, 1);
}
FUT_ASYNC_VTABLE(waiter_vt, "waiter", waiter_poll, waiter_cleanup);

static struct waiter waiter_make(struct fut_token *tok)
{
    struct waiter w;
    memset(&w, 0, sizeof w);
    fut_future_init(&w.base, &waiter_vt);
    w.tok = tok;
    return w;
}

/* Polls 'fut' (an owner's step) until 'cond' holds, yielding between
 * tries; gives up after 'max' tries. */
#define YIELD_UNTIL(fp, self, cond, max)                                     \
    for ((self)->tries = 0; !(cond) && (self)->tries < (max);                \
         (self)->tries++) {                                                  \
        fut_yield_init(&(self)->y);                                          \
        FUT_AWAIT(fp, &(self)->y);                                           \
    }

/* -------------------------------------------------------------- join_basic */

#define JB_N 1000

struct jb_owner {
    struct fut_future base;
    struct fut_scope scope;
    struct fut_scope_next next;
    int i;
    long sum, records, results_ok;
    int res[JB_N];
};

static int jb_poll(struct fut_future *f, struct fut_context *cx)
{
    struct jb_owner *o = (struct jb_owner *)f;
    FUT_BEGIN(f);
    fut_scope_init(&o->scope, NULL, FUT_SCOPE_FAIL_FAST);
    for (o->i = 0; o->i < JB_N; o->i++) {
        struct kid k = kid_make(o->i % 3, 0, o->i);
        struct fut_scope_opts op;
        fut_scope_opts_init(&op);
        FUT_SCOPE_RESULT(&op, struct kid, rc);
        FUT_SCOPE_VALUE(&op, struct kid, value);
        op.result_dst = &o->res[o->i];
        o->res[o->i] = 12345;
        op.tag = o->i;
        ck_assert_int_eq(fut_scope_spawn(&o->scope, &k, sizeof k, &op), 0);
    }
    for (;;) {
        fut_scope_next_init(&o->next, &o->scope);
        FUT_AWAIT(f, &o->next);
        if (!o->next.has)
            break;
        o->records++;
        o->sum += o->next.done.value;
        if (o->next.done.tag != o->next.done.value ||
            !o->next.done.completed || o->next.done.result != 0)
            o->results_ok = -1;
    }
    FUT_AWAIT(f, &o->scope);
    for (o->i = 0; o->i < JB_N; o->i++)
        if (o->res[o->i] != 0)
            o->results_ok = -2;
    FUT_END(f);
}
FUT_ASYNC_VTABLE(jb_vt, "jb_owner", jb_poll, NULL);

START_TEST(join_basic)
{
    counters_reset();
    struct fut_runtime *rt = fut_test_rt();
    static struct jb_owner o;
    memset(&o, 0, sizeof o);
    fut_future_init(&o.base, &jb_vt);
    ASSERT_EQ(fut_block_on(rt, &o.base), 0);
    ASSERT_EQ(o.records, JB_N);
    ASSERT_EQ(o.sum, (long)JB_N * (JB_N - 1) / 2);
    ASSERT_EQ(o.results_ok, 0);
    ASSERT_EQ(o.scope.result, 0);
    ASSERT_EQ(o.scope.spawned, JB_N);
    ASSERT_EQ(o.scope.failed, 0);
    ASSERT_EQ(atomic_load(&completed), JB_N);
    fut_drop(&o.base);
    fut_drop(&o.scope.base);
    fut_runtime_free(rt);
}
END_TEST

/* --------------------------------------------------------------- drop_idle */

#define DI_N 200

struct di_owner {
    struct fut_future base;
    struct fut_token never;
    struct fut_scope scope;
    struct fut_yield y;
    int i, tries;
    long dropped_after;
};

static int di_poll(struct fut_future *f, struct fut_context *cx)
{
    struct di_owner *o = (struct di_owner *)f;
    FUT_BEGIN(f);
    fut_token_init(&o->never);
    fut_scope_init(&o->scope, NULL, FUT_SCOPE_FAIL_FAST);
    for (o->i = 0; o->i < DI_N; o->i++) {
        struct waiter w = waiter_make(&o->never);
        ck_assert_int_eq(fut_scope_spawn(&o->scope, &w, sizeof w, NULL), 0);
    }
    YIELD_UNTIL(f, o, atomic_load(&started) == DI_N, 100000);
    /* Half of them woken (queued) just before the drop. */
    fut_drop(&o->scope.base);
    o->dropped_after = atomic_load(&dropped); /* right after the drop */
    fut_token_fini(&o->never);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(di_vt, "di_owner", di_poll, NULL);

START_TEST(drop_idle)
{
    counters_reset();
    struct fut_runtime *rt = fut_test_rt();
    static struct di_owner o;
    memset(&o, 0, sizeof o);
    fut_future_init(&o.base, &di_vt);
    run_task(rt, &o, sizeof o);
    ASSERT_EQ(atomic_load(&started), DI_N);
    /* C16: every child's drop ran before the scope's drop returned. */
    ASSERT_EQ(o.dropped_after, DI_N);
    ASSERT_EQ(atomic_load(&completed), 0);
    fut_runtime_free(rt);
}
END_TEST

/* ------------------------------------------------------------ drop_running */

#define DR_N 6

struct dr_owner {
    struct fut_future base;
    struct fut_scope scope;
    struct fut_yield y;
    int i, tries;
    long in_poll_after, dropped_after, saw_running;
};

static int dr_poll(struct fut_future *f, struct fut_context *cx)
{
    struct dr_owner *o = (struct dr_owner *)f;
    FUT_BEGIN(f);
    fut_scope_init(&o->scope, NULL, FUT_SCOPE_FAIL_FAST);
    for (o->i = 0; o->i < DR_N; o->i++) {
        struct kid k = kid_make(-1, 0, 0);
        k.spin_ns = 300 * 1000; /* each poll runs 0.3 ms */
        ck_assert_int_eq(fut_scope_spawn(&o->scope, &k, sizeof k, NULL), 0);
    }
    /* On 2 workers: wait until a child is inside its poll on the other
     * worker (we are polling here, so it is not this one). */
    YIELD_UNTIL(f, o, atomic_load(&in_poll) > 0,
                fut_test_rt_is_mt() ? 200000 : 20);
    o->saw_running = atomic_load(&in_poll) > 0;
    fut_drop(&o->scope.base);
    o->in_poll_after = atomic_load(&in_poll);
    o->dropped_after = atomic_load(&dropped);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(dr_vt, "dr_owner", dr_poll, NULL);

START_TEST(drop_running)
{
    int rounds = TEST_ITERS(30, 10), saw = 0;
    struct fut_runtime *rt = fut_test_rt();
    for (int r = 0; r < rounds; r++) {
        counters_reset();
        static struct dr_owner o;
        memset(&o, 0, sizeof o);
        fut_future_init(&o.base, &dr_vt);
        run_task(rt, &o, sizeof o);
        ASSERT_EQ(o.in_poll_after, 0); /* no child poll outlived the drop */
        ASSERT_EQ(o.dropped_after, DR_N);
        saw += (int)o.saw_running;
    }
    if (fut_test_rt_is_mt())
        ck_assert_msg(saw > 0, "no round dropped the scope while a child "
                               "was being polled on the other worker");
    fut_runtime_free(rt);
}
END_TEST

/* ---------------------------------------------------- woken_during_cancel */

#define WC_N 64

struct nkid { /* waits on a notify for ever, re-arming after each wake */
    struct fut_future base;
    struct fut_notify *n;
    struct fut_notified w;
};

static int nkid_poll(struct fut_future *f, struct fut_context *cx)
{
    struct nkid *k = (struct nkid *)f;
    FUT_BEGIN(f);
    atomic_fetch_add(&started, 1);
    for (;;) {
        fut_notified_init(&k->w, k->n);
        FUT_AWAIT(f, &k->w);
    }
    FUT_END(f);
}

static void nkid_cleanup(struct fut_future *f)
{
    (void)f;
    atomic_fetch_add(&dropped, 1);
}
FUT_ASYNC_VTABLE(nkid_vt, "nkid", nkid_poll, nkid_cleanup);

struct wc_owner {
    struct fut_future base;
    struct fut_notify *n;
    struct fut_scope scope;
    struct fut_yield y;
    int i, tries, cancel_first;
    long dropped_after;
};

static int wc_poll(struct fut_future *f, struct fut_context *cx)
{
    struct wc_owner *o = (struct wc_owner *)f;
    FUT_BEGIN(f);
    fut_scope_init(&o->scope, NULL, FUT_SCOPE_FAIL_FAST);
    for (o->i = 0; o->i < WC_N; o->i++) {
        if (o->i % 2) {
            struct nkid k;
            fut_future_init(&k.base, &nkid_vt);
            k.n = o->n;
            ck_assert_int_eq(fut_scope_spawn(&o->scope, &k, sizeof k, NULL),
                             0);
        } else {
            struct kid k = kid_make(-1, 0, 0); /* always woken (yields) */
            ck_assert_int_eq(fut_scope_spawn(&o->scope, &k, sizeof k, NULL),
                             0);
        }
    }
    YIELD_UNTIL(f, o, atomic_load(&started) == WC_N, 100000);
    if (o->cancel_first)
        fut_scope_cancel(&o->scope); /* then drop while cancels land */
    fut_drop(&o->scope.base);
    o->dropped_after = atomic_load(&dropped);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(wc_vt, "wc_owner", wc_poll, NULL);

static atomic_int wc_stop;

static void *wc_waker(void *p)
{
    struct fut_notify *n = p;
    while (!atomic_load(&wc_stop))
        fut_notify_waiters(n); /* wakes children while they are cancelled */
    return NULL;
}

START_TEST(woken_during_cancel)
{
    int rounds = TEST_ITERS(20, 6);
    struct fut_runtime *rt = fut_test_rt();
    static struct fut_notify n;
    fut_notify_init(&n);
    atomic_store(&wc_stop, 0);
    pthread_t th;
    pthread_create(&th, NULL, wc_waker, &n);
    for (int r = 0; r < rounds; r++) {
        counters_reset();
        static struct wc_owner o;
        memset(&o, 0, sizeof o);
        fut_future_init(&o.base, &wc_vt);
        o.n = &n;
        o.cancel_first = r % 2;
        run_task(rt, &o, sizeof o);
        ASSERT_EQ(o.dropped_after, WC_N);
    }
    atomic_store(&wc_stop, 1);
    pthread_join(th, NULL);
    fut_runtime_free(rt);
    fut_notify_fini(&n);
}
END_TEST

/* --------------------------------------------------------------- policies */

#define FP_N 10

struct fp_owner {
    struct fut_future base;
    int policy;
    struct fut_token never;
    struct fut_scope scope;
    struct fut_scope_next next;
    int i;
    int res[FP_N + 1];
    long records, failed_records, spawn_after;
};

static int fp_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fp_owner *o = (struct fp_owner *)f;
    FUT_BEGIN(f);
    fut_token_init(&o->never);
    fut_scope_init(&o->scope, NULL, o->policy);
    for (o->i = 0; o->i <= FP_N; o->i++) {
        struct fut_scope_opts op;
        fut_scope_opts_init(&op);
        op.result_dst = &o->res[o->i];
        op.tag = o->i;
        int r;
        if (o->i == FP_N) {
            struct kid k = kid_make(3, -EIO, 0); /* fails after 3 yields */
            FUT_SCOPE_RESULT(&op, struct kid, rc);
            r = fut_scope_spawn(&o->scope, &k, sizeof k, &op);
        } else if (o->policy == FUT_SCOPE_FAIL_FAST) {
            struct waiter w = waiter_make(&o->never); /* never finishes */
            FUT_SCOPE_RESULT(&op, struct waiter, rc);
            r = fut_scope_spawn(&o->scope, &w, sizeof w, &op);
        } else {
            struct kid k = kid_make(20, 0, 0); /* finishes after the fail */
            FUT_SCOPE_RESULT(&op, struct kid, rc);
            r = fut_scope_spawn(&o->scope, &k, sizeof k, &op);
        }
        ck_assert_int_eq(r, 0);
    }
    for (;;) {
        fut_scope_next_init(&o->next, &o->scope);
        FUT_AWAIT(f, &o->next);
        if (!o->next.has)
            break;
        o->records++;
        if (o->next.done.result == -EIO && o->next.done.completed)
            o->failed_records++;
    }
    FUT_AWAIT(f, &o->scope); /* READY, then dropped by FUT_AWAIT */
    {
        struct kid k = kid_make(0, 0, 0);
        o->spawn_after = fut_scope_spawn(&o->scope, &k, sizeof k, NULL);
    }
    fut_drop(&o->scope.base); /* idempotent */
    fut_token_fini(&o->never);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(fp_vt, "fp_owner", fp_poll, NULL);

START_TEST(fail_fast)
{
    counters_reset();
    struct fut_runtime *rt = fut_test_rt();
    static struct fp_owner o;
    memset(&o, 0, sizeof o);
    fut_future_init(&o.base, &fp_vt);
    o.policy = FUT_SCOPE_FAIL_FAST;
    run_task(rt, &o, sizeof o);
    ASSERT_EQ(o.scope.result, -EIO);
    ASSERT_EQ(o.scope.failed, 1);
    ASSERT_EQ(o.scope.cancelled, FP_N);
    ASSERT_EQ(o.records, FP_N + 1); /* every child reported, none lost */
    ASSERT_EQ(o.failed_records, 1);
    ASSERT_EQ(atomic_load(&dropped), FP_N);
    for (int i = 0; i < FP_N; i++)
        ASSERT_EQ(o.res[i], FUT_ECANCELED);
    ASSERT_EQ(o.res[FP_N], -EIO);
    ASSERT_EQ(o.spawn_after, FUT_ECANCELED);
    fut_runtime_free(rt);
}
END_TEST

START_TEST(supervise)
{
    counters_reset();
    struct fut_runtime *rt = fut_test_rt();
    static struct fp_owner o;
    memset(&o, 0, sizeof o);
    fut_future_init(&o.base, &fp_vt);
    o.policy = FUT_SCOPE_SUPERVISE;
    run_task(rt, &o, sizeof o);
    ASSERT_EQ(o.scope.result, -EIO); /* the error is not lost */
    ASSERT_EQ(o.scope.failed, 1);
    ASSERT_EQ(o.scope.cancelled, 0); /* siblings kept running */
    ASSERT_EQ(o.records, FP_N + 1);
    ASSERT_EQ(o.failed_records, 1);
    ASSERT_EQ(atomic_load(&dropped), 0);
    ASSERT_EQ(atomic_load(&completed), FP_N + 1);
    for (int i = 0; i < FP_N; i++)
        ASSERT_EQ(o.res[i], 0);
    ASSERT_EQ(o.res[FP_N], -EIO);
    ASSERT_EQ(o.spawn_after, FUT_ECANCELED); /* dropped scope */
    fut_runtime_free(rt);
}
END_TEST

/* ---------------------------------------------------- nested, 3 levels */

#define NEST_FAN 3
static atomic_long level_dropped, leaves_started;

struct level {
    struct fut_future base;
    int depth;  /* 1..3; level 3 spawns leaves */
    int finite; /* leaves complete (value 1) instead of waiting */
    struct fut_token *parent_tok;
    struct fut_scope scope;
    struct fut_scope_next next;
    int i, inited, done;
    intptr_t sum; /* output: leaves completed below */
};

static const struct fut_future_vtable level_vt;

static int level_poll(struct fut_future *f, struct fut_context *cx)
{
    struct level *l = (struct level *)f;
    FUT_BEGIN(f);
    fut_scope_init_child(&l->scope, NULL, FUT_SCOPE_FAIL_FAST, l->parent_tok);
    l->inited = 1;
    for (l->i = 0; l->i < NEST_FAN; l->i++) {
        struct fut_scope_opts op;
        fut_scope_opts_init(&op);
        int r;
        if (l->depth == 3) {
            struct kid k = kid_make(l->finite ? 2 : -1, 0, 1);
            atomic_fetch_add(&leaves_started, 1);
            FUT_SCOPE_VALUE(&op, struct kid, value);
            r = fut_scope_spawn(&l->scope, &k, sizeof k, &op);
        } else {
            struct level c;
            memset(&c, 0, sizeof c);
            fut_future_init(&c.base, &level_vt);
            c.depth = l->depth + 1;
            c.finite = l->finite;
            c.parent_tok = fut_scope_token(&l->scope);
            FUT_SCOPE_VALUE(&op, struct level, sum);
            r = fut_scope_spawn(&l->scope, &c, sizeof c, &op);
        }
        ck_assert_int_eq(r, 0);
    }
    for (;;) {
        fut_scope_next_init(&l->next, &l->scope);
        FUT_AWAIT(f, &l->next);
        if (!l->next.has)
            break;
        l->sum += l->next.done.value;
    }
    l->done = 1;
    FUT_END(f);
}

static void level_cleanup(struct fut_future *f)
{
    struct level *l = (struct level *)f;
    if (l->inited)
        fut_drop(&l->scope.base); /* idempotent after FUT_END's state */
    if (!l->done)
        atomic_fetch_add(&level_dropped, 1);
}
FUT_ASYNC_VTABLE(level_vt, "level", level_poll, level_cleanup);

struct nest_owner {
    struct fut_future base;
    int finite;
    struct fut_token root;
    struct fut_scope scope;
    struct fut_yield y;
    int tries;
    long dropped_after, level_dropped_after;
};

static int nest_poll(struct fut_future *f, struct fut_context *cx)
{
    struct nest_owner *o = (struct nest_owner *)f;
    FUT_BEGIN(f);
    fut_token_init(&o->root);
    fut_scope_init_child(&o->scope, NULL, FUT_SCOPE_FAIL_FAST, &o->root);
    {
        struct level l;
        memset(&l, 0, sizeof l);
        fut_future_init(&l.base, &level_vt);
        l.depth = 1;
        l.finite = o->finite;
        l.parent_tok = fut_scope_token(&o->scope);
        struct fut_scope_opts op;
        fut_scope_opts_init(&op);
        ck_assert_int_eq(fut_scope_spawn(&o->scope, &l, sizeof l, &op), 0);
    }
    if (o->finite) {
        FUT_AWAIT(f, &o->scope);
    } else {
        YIELD_UNTIL(f, o, atomic_load(&started) == 27, 1000000);
        fut_drop(&o->scope.base); /* three levels down, all at once */
        o->dropped_after = atomic_load(&dropped);
        o->level_dropped_after = atomic_load(&level_dropped);
    }
    fut_drop(&o->scope.base);
    fut_token_fini(&o->root);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(nest_vt, "nest_owner", nest_poll, NULL);

START_TEST(nested3)
{
    struct fut_runtime *rt = fut_test_rt();
    for (int finite = 0; finite < 2; finite++) {
        counters_reset();
        atomic_store(&level_dropped, 0);
        atomic_store(&leaves_started, 0);
        static struct nest_owner o;
        memset(&o, 0, sizeof o);
        fut_future_init(&o.base, &nest_vt);
        o.finite = finite;
        run_task(rt, &o, sizeof o);
        ASSERT_EQ(atomic_load(&leaves_started), 27);
        if (finite) {
            ASSERT_EQ(o.scope.result, 0);
            ASSERT_EQ(atomic_load(&completed), 27);
            ASSERT_EQ(atomic_load(&level_dropped), 0);
        } else {
            ASSERT_EQ(o.dropped_after, 27);       /* every leaf */
            ASSERT_EQ(o.level_dropped_after, 13); /* 1 + 3 + 9 levels */
        }
    }
    fut_runtime_free(rt);
}
END_TEST

/* -------------------------------------------------------------- spawn_tree */

static atomic_long tree_done;

struct tnode {
    struct fut_future base;
    struct fut_scope *scope; /* the scope it spawns into: its own */
    int depth;
};

static const struct fut_future_vtable tnode_vt;

static int tnode_poll(struct fut_future *f, struct fut_context *cx)
{
    struct tnode *t = (struct tnode *)f;
    (void)cx;
    if (t->depth > 0) {
        for (int i = 0; i < 2; i++) {
            struct tnode c = {{0}, t->scope, t->depth - 1};
            fut_future_init(&c.base, &tnode_vt);
            ck_assert_int_eq(fut_scope_spawn(t->scope, &c, sizeof c, NULL),
                             0);
        }
    }
    atomic_fetch_add(&tree_done, 1);
    return FUT_READY;
}
static const struct fut_future_vtable tnode_vt = {tnode_poll, NULL, "tnode",
                                                  NULL};

struct tree_owner {
    struct fut_future base;
    struct fut_scope scope;
};

static int tree_poll(struct fut_future *f, struct fut_context *cx)
{
    struct tree_owner *o = (struct tree_owner *)f;
    FUT_BEGIN(f);
    fut_scope_init(&o->scope, NULL, FUT_SCOPE_FAIL_FAST);
    {
        struct tnode c = {{0}, &o->scope, 9};
        fut_future_init(&c.base, &tnode_vt);
        ck_assert_int_eq(fut_scope_spawn(&o->scope, &c, sizeof c, NULL), 0);
    }
    FUT_AWAIT(f, &o->scope); /* waits for the children's children too */
    FUT_END(f);
}
FUT_ASYNC_VTABLE(tree_vt, "tree_owner", tree_poll, NULL);

START_TEST(spawn_tree)
{
    struct fut_runtime *rt = fut_test_rt();
    atomic_store(&tree_done, 0);
    static struct tree_owner o;
    memset(&o, 0, sizeof o);
    fut_future_init(&o.base, &tree_vt);
    ASSERT_EQ(fut_block_on(rt, &o.base), 0);
    ASSERT_EQ(atomic_load(&tree_done), 1023);
    ASSERT_EQ(o.scope.spawned, 1023);
    ASSERT_EQ(o.scope.result, 0);
    fut_drop(&o.base);
    fut_drop(&o.scope.base);
    fut_runtime_free(rt);
}
END_TEST

/* -------------------------------------------------- cancel, token, stream */

static void *cancel_later(void *p)
{
    sleep_ns(5 * MS);
    fut_scope_cancel(p); /* from a thread no runtime knows */
    return NULL;
}

START_TEST(cancel_foreign)
{
    counters_reset();
    struct fut_runtime *rt = fut_test_rt();
    static struct fut_scope scope;
    static struct fut_token never;
    fut_token_init(&never);
    fut_scope_init(&scope, rt, FUT_SCOPE_SUPERVISE);
    for (int i = 0; i < 50; i++) {
        struct waiter w = waiter_make(&never);
        ASSERT_EQ(fut_scope_spawn(&scope, &w, sizeof w, NULL), 0);
    }
    pthread_t th;
    pthread_create(&th, NULL, cancel_later, &scope);
    ASSERT_EQ(fut_block_on(rt, &scope.base), 0);
    pthread_join(th, NULL);
    ASSERT_EQ(scope.result, FUT_ECANCELED);
    ASSERT_EQ(scope.cancelled, 50);
    ASSERT_EQ(atomic_load(&dropped), 50);
    ASSERT_EQ(fut_token_is_cancelled(fut_scope_token(&scope)), 1);
    struct kid k = kid_make(0, 0, 0);
    ASSERT_EQ(fut_scope_spawn(&scope, &k, sizeof k, NULL), FUT_ECANCELED);
    fut_drop(&scope.base);
    fut_token_fini(&never);
    fut_runtime_free(rt);
}
END_TEST

/* The scope's token, cancelled through a parent token: children read it
 * and finish by themselves (completed, not dropped). */
START_TEST(token_graceful)
{
    counters_reset();
    struct fut_runtime *rt = fut_test_rt();
    static struct fut_scope scope;
    static struct fut_token parent;
    fut_token_init(&parent);
    fut_scope_init_child(&scope, rt, FUT_SCOPE_FAIL_FAST, &parent);
    for (int i = 0; i < 20; i++) {
        struct waiter w = waiter_make(fut_scope_token(&scope));
        ASSERT_EQ(fut_scope_spawn(&scope, &w, sizeof w, NULL), 0);
    }
    fut_test_run_pending(rt);
    ASSERT_EQ(atomic_load(&completed), 0);
    fut_token_cancel(&parent);
    ASSERT_EQ(fut_block_on(rt, &scope.base), 0);
    ASSERT_EQ(scope.result, 0);
    ASSERT_EQ(scope.cancelled, 0);
    ASSERT_EQ(atomic_load(&completed), 20);
    fut_drop(&scope.base);
    fut_token_fini(&parent);
    fut_runtime_free(rt);
}
END_TEST

struct st_owner {
    struct fut_future base;
    struct fut_scope scope;
    struct fut_scope_stream st;
    struct fut_yield y;
    long items, sum, ends;
};

static int st_poll(struct fut_future *f, struct fut_context *cx)
{
    struct st_owner *o = (struct st_owner *)f;
    FUT_BEGIN(f);
    fut_scope_init(&o->scope, NULL, FUT_SCOPE_FAIL_FAST);
    for (int i = 1; i <= 10; i++) {
        struct kid k = kid_make(i % 4, 0, i);
        struct fut_scope_opts op;
        fut_scope_opts_init(&op);
        FUT_SCOPE_VALUE(&op, struct kid, value);
        ck_assert_int_eq(fut_scope_spawn(&o->scope, &k, sizeof k, &op), 0);
    }
    fut_scope_stream_init(&o->st, &o->scope);
    for (;;) {
        struct fut_scope_done d;
        int r = fut_stream_poll_next(&o->st.base, cx, &d);
        if (r == FUT_STREAM_END)
            break;
        if (r == FUT_STREAM_ITEM) {
            o->items++;
            o->sum += d.value;
            continue;
        }
        FUT_YIELD(f); /* woken by the stream too; a yield is simplest */
    }
    {
        struct fut_scope_done d;
        o->ends = fut_stream_poll_next(&o->st.base, cx, &d) ==
                  FUT_STREAM_END; /* C15: stays END */
    }
    fut_stream_drop(&o->st.base);
    fut_drop(&o->scope.base);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(st_vt, "st_owner", st_poll, NULL);

START_TEST(stream)
{
    counters_reset();
    struct fut_runtime *rt = fut_test_rt();
    static struct st_owner o;
    memset(&o, 0, sizeof o);
    fut_future_init(&o.base, &st_vt);
    run_task(rt, &o, sizeof o);
    ASSERT_EQ(o.items, 10);
    ASSERT_EQ(o.sum, 55);
    ASSERT_EQ(o.ends, 1);
    fut_runtime_free(rt);
}
END_TEST

/* ------------------------------------------------------------- task dump */

static char dump_buf[8192];
static long dump_r;

struct dumper {
    struct fut_future base;
    struct fut_scope *scope;
    struct fut_yield y;
    int tries;
};

static int dumper_poll(struct fut_future *f, struct fut_context *cx)
{
    struct dumper *d = (struct dumper *)f;
    FUT_BEGIN(f);
    YIELD_UNTIL(f, d, atomic_load(&started) == 6, 100000);
    for (d->tries = 0; d->tries < 20; d->tries++) {
        fut_yield_init(&d->y); /* let the owner park in its next */
        FUT_AWAIT(f, &d->y);
    }
    dump_r = fut_runtime_dump(NULL, dump_buf, sizeof dump_buf);
    fut_scope_cancel(d->scope);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(dumper_vt, "dumper", dumper_poll, NULL);

struct dump_owner {
    struct fut_future base;
    struct fut_token never;
    struct fut_scope scope;
    struct fut_scope_next next;
    struct fut_join dj;
};

static int dump_poll(struct fut_future *f, struct fut_context *cx)
{
    struct dump_owner *o = (struct dump_owner *)f;
    FUT_BEGIN(f);
    fut_token_init(&o->never);
    fut_scope_init(&o->scope, NULL, FUT_SCOPE_FAIL_FAST);
    for (int i = 0; i < 3; i++) {
        struct waiter w = waiter_make(&o->never);
        ck_assert_int_eq(fut_scope_spawn(&o->scope, &w, sizeof w, NULL), 0);
    }
    {
        struct level l; /* a nested scope: level 3 holds 3 leaves */
        memset(&l, 0, sizeof l);
        fut_future_init(&l.base, &level_vt);
        l.depth = 3;
        l.parent_tok = fut_scope_token(&o->scope);
        ck_assert_int_eq(fut_scope_spawn(&o->scope, &l, sizeof l, NULL), 0);
        struct dumper d;
        memset(&d, 0, sizeof d);
        fut_future_init(&d.base, &dumper_vt);
        d.scope = &o->scope;
        ck_assert_int_eq(fut_spawn(NULL, &d, sizeof d, &o->dj), 0);
    }
    for (;;) {
        fut_scope_next_init(&o->next, &o->scope);
        FUT_AWAIT(f, &o->next);
        if (!o->next.has)
            break;
    }
    FUT_AWAIT(f, &o->dj);
    fut_drop(&o->scope.base);
    fut_token_fini(&o->never);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(dump_vt, "dump_owner", dump_poll, NULL);

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

/* The indentation of the line holding 'at'. */
static int indent_at(const char *buf, const char *at)
{
    const char *l = at;
    while (l > buf && l[-1] != '\n')
        l--;
    int n = 0;
    while (l[n] == ' ')
        n++;
    return n;
}

START_TEST(dump)
{
    counters_reset();
    struct fut_runtime *rt = fut_test_rt();
    static struct dump_owner o;
    memset(&o, 0, sizeof o);
    fut_future_init(&o.base, &dump_vt);
    run_task(rt, &o, sizeof o);
    fprintf(stderr, "%s", dump_buf);
    ck_assert_msg(dump_r > 0 && (size_t)dump_r < sizeof dump_buf, "dump: %ld",
                  dump_r);
    ASSERT_EQ(count_of(dump_buf, "'dump_owner'"), 1);
    ASSERT_EQ(count_of(dump_buf, "'dumper'"), 1);
    ASSERT_EQ(count_of(dump_buf, "'waiter'"), 3);
    ASSERT_EQ(count_of(dump_buf, "token_wait"), 3);
    ASSERT_EQ(count_of(dump_buf, "'level'"), 1);
    ASSERT_EQ(count_of(dump_buf, "'kid'"), 3);
    ASSERT_EQ(count_of(dump_buf, "yield"), 3);      /* what the kids await */
    ASSERT_EQ(count_of(dump_buf, " running, "), 2); /* both scopes */
    ASSERT_EQ(count_of(dump_buf, "(child of scope"), 7);
    /* The tree: owner > level > kid, each indented deeper. */
    const char *own = strstr(dump_buf, "'dump_owner'");
    const char *lvl = strstr(dump_buf, "'level'");
    const char *kid = strstr(dump_buf, "'kid'");
    const char *wai = strstr(dump_buf, "'waiter'");
    ASSERT_TRUE(own && lvl && kid && wai && own < lvl && lvl < kid);
    ASSERT_TRUE(indent_at(dump_buf, own) < indent_at(dump_buf, lvl));
    ASSERT_TRUE(indent_at(dump_buf, lvl) < indent_at(dump_buf, kid));
    ASSERT_EQ(indent_at(dump_buf, wai), indent_at(dump_buf, lvl));
    ASSERT_EQ(atomic_load(&dropped), 6);
    /* Not from a thread that does not run the runtime. */
    char small[16];
    ASSERT_EQ(fut_runtime_dump(rt, small, sizeof small), FUT_EINVAL);
    fut_runtime_free(rt);
}
END_TEST

/* ------------------------------------------------- drop at every PENDING */

struct h_case {
    struct fut_future base;
    struct fut_runtime *rt;
    struct fut_token never;
    struct fut_scope scope;
    struct fut_scope_next next;
    struct fut_sleep sl;
    int inited, i;
    long spawned;
};

static int h_poll(struct fut_future *f, struct fut_context *cx)
{
    struct h_case *h = (struct h_case *)f;
    FUT_BEGIN(f);
    fut_token_init(&h->never);
    fut_scope_init(&h->scope, h->rt, FUT_SCOPE_FAIL_FAST);
    h->inited = 1;
    for (h->i = 0; h->i < 6; h->i++) {
        int r;
        if (h->i == 5) {
            struct waiter w = waiter_make(fut_scope_token(&h->scope));
            r = fut_scope_spawn(&h->scope, &w, sizeof w, NULL);
        } else {
            struct kid k = kid_make(h->i, 0, h->i);
            r = fut_scope_spawn(&h->scope, &k, sizeof k, NULL);
        }
        ck_assert_int_eq(r, 0);
        h->spawned++;
        fut_sleep_init(&h->sl, 100 * 1000);
        FUT_AWAIT(f, &h->sl);
    }
    for (h->i = 0; h->i < 5; h->i++) {
        fut_scope_next_init(&h->next, &h->scope);
        FUT_AWAIT(f, &h->next);
    }
    fut_token_cancel(fut_scope_token(&h->scope)); /* the waiter ends */
    FUT_AWAIT(f, &h->scope);
    FUT_END(f);
}

static void h_cleanup(struct fut_future *f)
{
    struct h_case *h = (struct h_case *)f;
    if (!h->inited)
        return;
    fut_drop(&h->scope.base);
    fut_token_fini(&h->never);
    h->inited = 0;
}
FUT_ASYNC_VTABLE(h_vt, "h_case", h_poll, h_cleanup);

static struct h_case the_h;

static struct fut_future *h_make(void *ud, struct fut_runtime *rt)
{
    (void)ud;
    counters_reset();
    memset(&the_h, 0, sizeof the_h);
    fut_future_init(&the_h.base, &h_vt);
    the_h.rt = rt;
    return &the_h.base;
}

static int h_check(void *ud, int k)
{
    (void)ud;
    (void)k;
    /* Every child spawned either completed or was dropped (some before
     * their first poll), and none is still being polled. */
    long c = atomic_load(&completed), d = atomic_load(&dropped);
    return the_h.spawned == c + d && atomic_load(&in_poll) == 0 ? 0 : 1;
}

START_TEST(harness)
{
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    if (fut_test_rt_is_mt()) {
        cfg.flavor = FUT_RT_MULTI_THREAD;
        cfg.workers = 2;
    }
    struct fut_harness hs;
    fut_harness_init(&hs, h_make, h_check, NULL);
    hs.cfg = &cfg;
    int r = fut_harness_run(&hs);
    ck_assert_msg(r == 0, "harness: %d at k=%ld (%s)", r, hs.first_failure,
                  hs.msg);
    ASSERT_TRUE(hs.pendings >= 6);
}
END_TEST

/* ------------------------------------------------- rounds_reuse_memory */

/* Rounds of a scope of RR_N trivial children, all in one task that never
 * yields between rounds (scope_join's shape): the tasks of a round, which
 * mostly finish on the other worker, must be freed and their memory used
 * again by the next round - allocations through the hook (the task slabs'
 * chunks among them) stay bounded: at most one round's worth per worker
 * (the owner may move to the other worker, whose slab then serves it). */
#define RR_N 5000
#define RR_ROUNDS 12

struct rr_kid {
    struct fut_future base;
};

static int rr_kid_poll(struct fut_future *f, struct fut_context *cx)
{
    (void)f;
    (void)cx;
    return FUT_READY;
}
static const struct fut_future_vtable rr_kid_vt = {rr_kid_poll, NULL,
                                                   "rr_kid", NULL};

struct rr_owner {
    struct fut_future base;
    struct fut_scope scope;
    struct fut_scope_next next;
    int round, i, err;
    long records;
    long live0;
    long live[RR_ROUNDS];
};

static int rr_poll(struct fut_future *f, struct fut_context *cx)
{
    struct rr_owner *o = (struct rr_owner *)f;
    FUT_BEGIN(f);
    o->live0 = fut_alloc_live();
    for (o->round = 0; o->round < RR_ROUNDS; o->round++) {
        fut_scope_init(&o->scope, NULL, FUT_SCOPE_FAIL_FAST);
        for (o->i = 0; o->i < RR_N; o->i++) {
            struct rr_kid k;
            fut_future_init(&k.base, &rr_kid_vt);
            if (fut_scope_spawn(&o->scope, &k, sizeof k, NULL) != 0)
                o->err++;
        }
        for (;;) {
            fut_scope_next_init(&o->next, &o->scope);
            FUT_AWAIT(f, &o->next);
            if (!o->next.has)
                break;
            o->records++;
        }
        fut_drop(&o->scope.base);
        o->live[o->round] = fut_alloc_live();
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(rr_vt, "rr_owner", rr_poll, NULL);

START_TEST(rounds_reuse_memory)
{
    struct fut_runtime *rt = fut_test_rt();
    static struct rr_owner o;
    memset(&o, 0, sizeof o);
    fut_future_init(&o.base, &rr_vt);
    run_task(rt, &o, sizeof o);
    ASSERT_EQ(o.err, 0);
    ASSERT_EQ(o.records, (long)RR_N * RR_ROUNDS);
    /* One round's tasks take ~20 chunks; without reuse each round adds
     * that much again (12 rounds: ~240). */
    long round1 = o.live[0] - o.live0;
    ck_assert_msg(o.live[RR_ROUNDS - 1] <= o.live0 + 2 * round1 + 4,
                  "allocations: %ld before, %ld after round 1, %ld after "
                  "round %d",
                  o.live0, o.live[0], o.live[RR_ROUNDS - 1], RR_ROUNDS);
    fut_drop(&o.base);
    fut_runtime_free(rt);
}
END_TEST

/* ------------------------------------------------------ shutdown_drop */

/* fut_shutdown dropped after it completed: with a scope that finished on
 * its own (no grace period started: nothing of it to drop) and with one
 * shut down by its trigger (the grace sleep started: dropped with it). */
START_TEST(shutdown_drop)
{
    struct fut_runtime *rt = fut_test_rt();
    for (int round = 0; round < 2; round++) {
        struct fut_token trigger;
        fut_token_init(&trigger);
        struct fut_scope scope;
        fut_scope_init(&scope, rt, FUT_SCOPE_SUPERVISE);
        if (round == 1) {
            struct waiter w = waiter_make(fut_scope_token(&scope));
            ASSERT_EQ(fut_scope_spawn(&scope, &w, sizeof w, NULL), 0);
            fut_token_cancel(&trigger);
        }
        struct fut_shutdown sd;
        fut_shutdown_init(&sd, &scope, &trigger, NULL, 2000 * MS);
        ASSERT_EQ(fut_block_on(rt, &sd.base), 0);
        ASSERT_EQ(sd.result, 0);
        fut_drop(&sd.base);
        fut_drop(&scope.base);
        fut_token_fini(&trigger);
    }
    fut_runtime_free(rt);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("scope");
    tcase_add_test(fut_test_tcase(s, "join_basic"), join_basic);
    tcase_add_test(fut_test_tcase(s, "drop_idle"), drop_idle);
    tcase_add_test(fut_test_tcase(s, "drop_running"), drop_running);
    tcase_add_test(fut_test_tcase(s, "woken_during_cancel"),
                   woken_during_cancel);
    tcase_add_test(fut_test_tcase(s, "fail_fast"), fail_fast);
    tcase_add_test(fut_test_tcase(s, "supervise"), supervise);
    tcase_add_test(fut_test_tcase(s, "nested3"), nested3);
    tcase_add_test(fut_test_tcase(s, "spawn_tree"), spawn_tree);
    tcase_add_test(fut_test_tcase(s, "cancel_foreign"), cancel_foreign);
    tcase_add_test(fut_test_tcase(s, "token_graceful"), token_graceful);
    tcase_add_test(fut_test_tcase(s, "stream"), stream);
    tcase_add_test(fut_test_tcase(s, "harness"), harness);
    tcase_add_test(fut_test_tcase(s, "dump"), dump);
    tcase_add_test(fut_test_tcase(s, "rounds_reuse_memory"),
                   rounds_reuse_memory);
    tcase_add_test(fut_test_tcase(s, "shutdown_drop"), shutdown_drop);
    return fut_test_run(s);
}
