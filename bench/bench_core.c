/* SPDX-License-Identifier: MIT */
/* The core benchmarks of ../shared/peers (spawn, yield, oneshot, idle
 * tasks), written against fut's public API with exactly the parameters,
 * rounds, warm-ups and checks of the Tokio peer
 * (../shared/peers/tokio/src/main.rs); each function below names the
 * peer function it mirrors.
 *
 *   bench_core list
 *   bench_core bench <name> [ct|mt2]
 *
 * Every benchmark body is an async function run as a spawned task
 * (bench_run_task), so in multi_thread it runs on a worker, as in the
 * peer. Spawned children whose handle Tokio drops are spawned detached
 * here (join == NULL): dropping a fut join handle aborts the task.
 * Tokio's oneshot::<()> is a fut oneshot of 0-byte values; its Notify
 * (ping_pong, idle_task_*) is a oneshot per round: the task that finishes
 * last sends, the driver awaits, and a send before the await is kept, as
 * Notify::notify_one keeps a permit.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "common.h"

/* ---------------------------------------------------------- parameters */

#define SPAWN_MANY_N 100000
#define SPAWN_MANY_ROUNDS 40
#define YIELD_TASKS 200
#define YIELD_PER_TASK 1000
#define YIELD_ROUNDS 100
#define PING_N 1000
#define PING_WARMUP 10
#define PING_ROUNDS 2000
#define CHAIN_LEN 1000
#define CHAIN_WARMUP 10
#define CHAIN_ROUNDS 8000
#define ONESHOT_N 1000000
#define ONESHOT_ROUNDS 4
#define ONESHOT_LOCAL_N 15000000ull
#define IDLE_N 1000000

/* ------------------------------------------------------------- helpers */

/* Moves a sender out of '*tx', leaving it empty (the state a sent or
 * dropped handle is in), so the old place's cleanup does nothing. */
static struct fut_oneshot_tx tx_take(struct fut_oneshot_tx *tx)
{
    struct fut_oneshot_tx t = *tx;
    memset(tx, 0, sizeof *tx);
    return t;
}

static void oneshot_new_checked(size_t size, struct fut_oneshot_tx *tx,
                                struct fut_oneshot_rx *rx)
{
    int r = fut_oneshot_new(size, NULL, tx, rx);
    BENCH_CHECK(r == 0, "fut_oneshot_new: %s", fut_strerror(r));
}

static void spawn_checked(const struct fut_future *f, size_t size,
                          struct fut_join *join)
{
    int r = fut_spawn(NULL, f, size, join);
    BENCH_CHECK(r == 0, "fut_spawn: %s", fut_strerror(r));
}

/* The unit value of oneshot::<()>: 0 bytes are copied from or to it. */
static char unit_value;

/* ----------------------------------------------------------- spawn_many */

/* 'async move { i as u64 }' */
struct sm_child {
    struct fut_future base;
    uint64_t i;
    uint64_t out; /* output */
};

static int sm_child_poll(struct fut_future *f, struct fut_context *cx)
{
    struct sm_child *c = (struct sm_child *)f;
    (void)cx; /* completes without awaiting */
    FUT_BEGIN(f);
    c->out = c->i;
    FUT_END(f);
}
FUT_ASYNC_VTABLE(sm_child_vt, "spawn_many.child", sm_child_poll, NULL);

/* spawn_many_round: spawn N, keep the handles, await them in spawn order
 * summing the results. */
struct sm_round {
    struct fut_future base;
    struct fut_join *h; /* N handles, malloc'd per round like the Vec */
    size_t k;           /* next handle to await */
    uint64_t sum;
    uint64_t val; /* the awaited child's output */
};

static int sm_round_poll(struct fut_future *f, struct fut_context *cx)
{
    struct sm_round *r = (struct sm_round *)f;
    FUT_BEGIN(f);
    r->h = malloc(SPAWN_MANY_N * sizeof *r->h);
    BENCH_CHECK(r->h != NULL, "out of memory");
    for (size_t i = 0; i < SPAWN_MANY_N; i++) {
        struct sm_child c;
        fut_future_init(&c.base, &sm_child_vt);
        c.i = i;
        c.out = 0;
        spawn_checked(&c.base, sizeof c, &r->h[i]);
    }
    r->sum = 0;
    for (r->k = 0; r->k < SPAWN_MANY_N; r->k++) {
        FUT_JOIN_OUTPUT(&r->h[r->k], struct sm_child, out, &r->val);
        FUT_AWAIT(f, &r->h[r->k]);
        BENCH_CHECK(r->h[r->k].result == 0, "spawn_many: child cancelled");
        r->sum += r->val;
    }
    BENCH_CHECK(r->sum == (uint64_t)SPAWN_MANY_N * (SPAWN_MANY_N - 1) / 2,
                "spawn_many: sum %llu", (unsigned long long)r->sum);
    free(r->h);
    r->h = NULL;
    FUT_END(f);
}

static void sm_round_cleanup(struct fut_future *f)
{
    struct sm_round *r = (struct sm_round *)f;
    if (!r->h)
        return;
    for (size_t i = r->k; i < SPAWN_MANY_N; i++)
        fut_drop(&r->h[i].base); /* idempotent for the awaited one */
    free(r->h);
    r->h = NULL;
}
FUT_ASYNC_VTABLE(sm_round_vt, "spawn_many.round", sm_round_poll,
                 sm_round_cleanup);

static void sm_round_init(struct sm_round *r)
{
    fut_future_init(&r->base, &sm_round_vt);
    r->h = NULL;
    r->k = 0;
}

/* tokio peer: spawn_many(): 1 warm-up round, 40 timed rounds. */
struct sm_body {
    struct fut_future base;
    const char *config;
    struct bench_meter m;
    int round;
    struct sm_round r;
};

static int sm_body_poll(struct fut_future *f, struct fut_context *cx)
{
    struct sm_body *b = (struct sm_body *)f;
    FUT_BEGIN(f);
    sm_round_init(&b->r);
    FUT_AWAIT(f, &b->r); /* warm-up */
    bench_meter_start(&b->m);
    for (b->round = 0; b->round < SPAWN_MANY_ROUNDS; b->round++) {
        sm_round_init(&b->r);
        FUT_AWAIT(f, &b->r);
    }
    bench_report(&b->m, "spawn_many", b->config,
                 (uint64_t)SPAWN_MANY_N * SPAWN_MANY_ROUNDS, "ns/task", "");
    FUT_END(f);
}
FUT_ASYNC_VTABLE(sm_body_vt, "spawn_many", sm_body_poll, NULL);

static void run_spawn_many(struct fut_runtime *rt, const char *config)
{
    struct sm_body b;
    fut_future_init(&b.base, &sm_body_vt);
    b.config = config;
    bench_run_task(rt, &b.base, sizeof b);
}

/* ----------------------------------------------------------- yield_many */

/* 'for _ in 0..1000 { yield_now().await }'. FUT_YIELD is the yield_now
 * of an async function, inline in its poll as the compiler inlines Tokio's
 * YieldNow into the async block; awaiting a struct fut_yield child instead
 * (the same wake and PENDING, behind a vtable call and the child's
 * init/poll/drop) costs 56 more instructions per yield in the benchmark's
 * own code, none in the runtime's (callgrind, mt2: 236 -> 180; Tokio's
 * yield_many: 449). */
struct ym_child {
    struct fut_future base;
    int n;
};

static int ym_child_poll(struct fut_future *f, struct fut_context *cx)
{
    struct ym_child *c = (struct ym_child *)f;
    FUT_BEGIN(f);
    for (c->n = 0; c->n < YIELD_PER_TASK; c->n++)
        FUT_YIELD(f);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(ym_child_vt, "yield_many.child", ym_child_poll, NULL);

/* yield_round: spawn 200 yielders, await them all. */
struct ym_round {
    struct fut_future base;
    int k; /* next handle to await */
    struct fut_join h[YIELD_TASKS];
};

static int ym_round_poll(struct fut_future *f, struct fut_context *cx)
{
    struct ym_round *r = (struct ym_round *)f;
    FUT_BEGIN(f);
    for (int i = 0; i < YIELD_TASKS; i++) {
        struct ym_child c;
        fut_future_init(&c.base, &ym_child_vt);
        c.n = 0;
        spawn_checked(&c.base, sizeof c, &r->h[i]);
    }
    for (r->k = 0; r->k < YIELD_TASKS; r->k++) {
        FUT_AWAIT(f, &r->h[r->k]);
        BENCH_CHECK(r->h[r->k].result == 0, "yield_many: child cancelled");
    }
    FUT_END(f);
}

static void ym_round_cleanup(struct fut_future *f)
{
    struct ym_round *r = (struct ym_round *)f;
    if (f->resume == 0)
        return; /* never polled: no handles yet */
    for (int i = r->k; i < YIELD_TASKS; i++)
        fut_drop(&r->h[i].base);
}
FUT_ASYNC_VTABLE(ym_round_vt, "yield_many.round", ym_round_poll,
                 ym_round_cleanup);

/* tokio peer: yield_many(): 1 warm-up round, 100 timed rounds. */
struct ym_body {
    struct fut_future base;
    const char *config;
    struct bench_meter m;
    int round;
    struct ym_round r;
};

static int ym_body_poll(struct fut_future *f, struct fut_context *cx)
{
    struct ym_body *b = (struct ym_body *)f;
    FUT_BEGIN(f);
    fut_future_init(&b->r.base, &ym_round_vt);
    b->r.k = 0;
    FUT_AWAIT(f, &b->r); /* warm-up */
    bench_meter_start(&b->m);
    for (b->round = 0; b->round < YIELD_ROUNDS; b->round++) {
        fut_future_init(&b->r.base, &ym_round_vt);
        b->r.k = 0;
        FUT_AWAIT(f, &b->r);
    }
    bench_report(&b->m, "yield_many", b->config,
                 (uint64_t)YIELD_TASKS * YIELD_PER_TASK * YIELD_ROUNDS,
                 "ns/yield", "");
    FUT_END(f);
}
FUT_ASYNC_VTABLE(ym_body_vt, "yield_many", ym_body_poll, NULL);

static void run_yield_many(struct fut_runtime *rt, const char *config)
{
    struct ym_body b;
    fut_future_init(&b.base, &ym_body_vt);
    b.config = config;
    bench_run_task(rt, &b.base, sizeof b);
}

/* ------------------------------------------------------------ ping_pong */

/* What the pings of one round share (lives in the round future). */
struct pp_shared {
    atomic_size_t rem;          /* pings not finished yet */
    struct fut_oneshot_tx done; /* sent by the ping that brings rem to 0 */
};

/* 'async move { rx1.await.unwrap(); tx2.send(()).unwrap(); }' */
struct pp_pong {
    struct fut_future base;
    struct fut_oneshot_rx rx1; /* moved into 'recv' at the first poll */
    struct fut_oneshot_tx tx2;
    struct fut_oneshot_recv recv;
    char unit;
};

static int pp_pong_poll(struct fut_future *f, struct fut_context *cx)
{
    struct pp_pong *p = (struct pp_pong *)f;
    FUT_BEGIN(f);
    fut_oneshot_recv_init(&p->recv, &p->rx1, &p->unit);
    FUT_AWAIT(f, &p->recv);
    BENCH_CHECK(p->recv.result == 0, "ping_pong: rx1 closed");
    BENCH_CHECK(fut_oneshot_send(&p->tx2, &unit_value) == 0,
                "ping_pong: tx2 refused");
    FUT_END(f);
}

static void pp_pong_cleanup(struct fut_future *f)
{
    struct pp_pong *p = (struct pp_pong *)f;
    fut_oneshot_rx_drop(&p->rx1); /* no-op once moved or received */
    fut_oneshot_tx_drop(&p->tx2); /* no-op once sent */
}
FUT_ASYNC_VTABLE(pp_pong_vt, "ping_pong.pong", pp_pong_poll, pp_pong_cleanup);

/* The ping task: two oneshots, spawn the pong, send, await the answer,
 * count down. */
struct pp_ping {
    struct fut_future base;
    struct pp_shared *sh;
    struct fut_oneshot_rx rx2; /* moved into 'recv' */
    struct fut_oneshot_recv recv;
    char unit;
};

static int pp_ping_poll(struct fut_future *f, struct fut_context *cx)
{
    struct pp_ping *p = (struct pp_ping *)f;
    FUT_BEGIN(f);
    {
        struct fut_oneshot_tx tx1, tx2;
        struct fut_oneshot_rx rx1;
        oneshot_new_checked(0, &tx1, &rx1);
        oneshot_new_checked(0, &tx2, &p->rx2);
        struct pp_pong pong;
        fut_future_init(&pong.base, &pp_pong_vt);
        pong.rx1 = rx1;
        pong.tx2 = tx2;
        spawn_checked(&pong.base, sizeof pong, NULL);
        BENCH_CHECK(fut_oneshot_send(&tx1, &unit_value) == 0,
                    "ping_pong: tx1 refused");
    }
    fut_oneshot_recv_init(&p->recv, &p->rx2, &p->unit);
    FUT_AWAIT(f, &p->recv);
    BENCH_CHECK(p->recv.result == 0, "ping_pong: rx2 closed");
    /* AcqRel as in the peer: the last decrement sees every ping's. */
    if (atomic_fetch_sub_explicit(&p->sh->rem, 1, memory_order_acq_rel) == 1)
        BENCH_CHECK(fut_oneshot_send(&p->sh->done, &unit_value) == 0,
                    "ping_pong: done refused");
    FUT_END(f);
}

static void pp_ping_cleanup(struct fut_future *f)
{
    struct pp_ping *p = (struct pp_ping *)f;
    fut_oneshot_rx_drop(&p->rx2);
}
FUT_ASYNC_VTABLE(pp_ping_vt, "ping_pong.ping", pp_ping_poll, pp_ping_cleanup);

/* ping_pong_round: 1,000 pings, then wait for the last one's signal. */
struct pp_round {
    struct fut_future base;
    struct pp_shared sh;
    struct fut_oneshot_recv done;
    char unit;
};

static int pp_round_poll(struct fut_future *f, struct fut_context *cx)
{
    struct pp_round *r = (struct pp_round *)f;
    FUT_BEGIN(f);
    {
        struct fut_oneshot_rx rx;
        atomic_init(&r->sh.rem, PING_N);
        oneshot_new_checked(0, &r->sh.done, &rx);
        for (int i = 0; i < PING_N; i++) {
            struct pp_ping p;
            fut_future_init(&p.base, &pp_ping_vt);
            p.sh = &r->sh;
            spawn_checked(&p.base, sizeof p, NULL);
        }
        fut_oneshot_recv_init(&r->done, &rx, &r->unit);
    }
    FUT_AWAIT(f, &r->done);
    BENCH_CHECK(r->done.result == 0, "ping_pong: done closed");
    FUT_END(f);
}

static void pp_round_cleanup(struct fut_future *f)
{
    struct pp_round *r = (struct pp_round *)f;
    if (f->resume != 0)
        fut_oneshot_tx_drop(&r->sh.done); /* no-op once sent */
}
FUT_ASYNC_VTABLE(pp_round_vt, "ping_pong.round", pp_round_poll,
                 pp_round_cleanup);

/* tokio peer: ping_pong(): 10 warm-up rounds, 2,000 timed rounds. */
struct pp_body {
    struct fut_future base;
    const char *config;
    struct bench_meter m;
    int round;
    struct pp_round r;
};

static int pp_body_poll(struct fut_future *f, struct fut_context *cx)
{
    struct pp_body *b = (struct pp_body *)f;
    FUT_BEGIN(f);
    for (b->round = 0; b->round < PING_WARMUP; b->round++) {
        fut_future_init(&b->r.base, &pp_round_vt);
        FUT_AWAIT(f, &b->r);
    }
    bench_meter_start(&b->m);
    for (b->round = 0; b->round < PING_ROUNDS; b->round++) {
        fut_future_init(&b->r.base, &pp_round_vt);
        FUT_AWAIT(f, &b->r);
    }
    bench_report(&b->m, "ping_pong", b->config,
                 (uint64_t)PING_N * PING_ROUNDS, "ns/ping", "");
    FUT_END(f);
}
FUT_ASYNC_VTABLE(pp_body_vt, "ping_pong", pp_body_poll, NULL);

static void run_ping_pong(struct fut_runtime *rt, const char *config)
{
    struct pp_body b;
    fut_future_init(&b.base, &pp_body_vt);
    b.config = config;
    bench_run_task(rt, &b.base, sizeof b);
}

/* -------------------------------------------------------- chained_spawn */

static void cs_iter(struct fut_oneshot_tx *done, size_t n);

/* 'async move { chain_iter(done, n - 1) }' */
struct cs_link {
    struct fut_future base;
    struct fut_oneshot_tx done;
    size_t n;
};

static int cs_link_poll(struct fut_future *f, struct fut_context *cx)
{
    struct cs_link *l = (struct cs_link *)f;
    (void)cx; /* completes without awaiting */
    FUT_BEGIN(f);
    cs_iter(&l->done, l->n);
    FUT_END(f);
}

static void cs_link_cleanup(struct fut_future *f)
{
    fut_oneshot_tx_drop(&((struct cs_link *)f)->done); /* no-op if moved */
}
FUT_ASYNC_VTABLE(cs_link_vt, "chained_spawn.link", cs_link_poll,
                 cs_link_cleanup);

/* chain_iter: n == 0 sends 'done', else spawns the next link with it. */
static void cs_iter(struct fut_oneshot_tx *done, size_t n)
{
    if (n == 0) {
        BENCH_CHECK(fut_oneshot_send(done, &unit_value) == 0,
                    "chained_spawn: done refused");
        return;
    }
    struct cs_link l;
    fut_future_init(&l.base, &cs_link_vt);
    l.done = tx_take(done);
    l.n = n - 1;
    spawn_checked(&l.base, sizeof l, NULL);
}

/* chained_round: start a chain of 1,000 and await its end. */
struct cs_round {
    struct fut_future base;
    struct fut_oneshot_recv done;
    char unit;
};

static int cs_round_poll(struct fut_future *f, struct fut_context *cx)
{
    struct cs_round *r = (struct cs_round *)f;
    FUT_BEGIN(f);
    {
        struct fut_oneshot_tx tx;
        struct fut_oneshot_rx rx;
        oneshot_new_checked(0, &tx, &rx);
        cs_iter(&tx, CHAIN_LEN);
        fut_oneshot_recv_init(&r->done, &rx, &r->unit);
    }
    FUT_AWAIT(f, &r->done);
    BENCH_CHECK(r->done.result == 0, "chained_spawn: done closed");
    FUT_END(f);
}
FUT_ASYNC_VTABLE(cs_round_vt, "chained_spawn.round", cs_round_poll, NULL);

/* tokio peer: chained_spawn(): 10 warm-up rounds, 8,000 timed rounds. */
struct cs_body {
    struct fut_future base;
    const char *config;
    struct bench_meter m;
    int round;
    struct cs_round r;
};

static int cs_body_poll(struct fut_future *f, struct fut_context *cx)
{
    struct cs_body *b = (struct cs_body *)f;
    FUT_BEGIN(f);
    for (b->round = 0; b->round < CHAIN_WARMUP; b->round++) {
        fut_future_init(&b->r.base, &cs_round_vt);
        FUT_AWAIT(f, &b->r);
    }
    bench_meter_start(&b->m);
    for (b->round = 0; b->round < CHAIN_ROUNDS; b->round++) {
        fut_future_init(&b->r.base, &cs_round_vt);
        FUT_AWAIT(f, &b->r);
    }
    bench_report(&b->m, "chained_spawn", b->config,
                 (uint64_t)CHAIN_LEN * CHAIN_ROUNDS, "ns/spawn", "");
    FUT_END(f);
}
FUT_ASYNC_VTABLE(cs_body_vt, "chained_spawn", cs_body_poll, NULL);

static void run_chained_spawn(struct fut_runtime *rt, const char *config)
{
    struct cs_body b;
    fut_future_init(&b.base, &cs_body_vt);
    b.config = config;
    bench_run_task(rt, &b.base, sizeof b);
}

/* -------------------------------------------------------------- oneshot */

/* 'async move { let _ = tx.send(i); }' */
struct os_sender {
    struct fut_future base;
    struct fut_oneshot_tx tx;
    uint64_t i;
};

static int os_sender_poll(struct fut_future *f, struct fut_context *cx)
{
    struct os_sender *s = (struct os_sender *)f;
    (void)cx; /* completes without awaiting */
    FUT_BEGIN(f);
    (void)fut_oneshot_send(&s->tx, &s->i);
    FUT_END(f);
}

static void os_sender_cleanup(struct fut_future *f)
{
    fut_oneshot_tx_drop(&((struct os_sender *)f)->tx);
}
FUT_ASYNC_VTABLE(os_sender_vt, "oneshot.sender", os_sender_poll,
                 os_sender_cleanup);

/* tokio peer: oneshot_bench(): 4 rounds of 1,000,000, no warm-up; per op
 * a fresh oneshot, a detached sender task, and an await in the driver. */
struct os_body {
    struct fut_future base;
    const char *config;
    struct bench_meter m;
    int round;
    uint64_t i, sum, val;
    struct fut_oneshot_recv rx;
};

static int os_body_poll(struct fut_future *f, struct fut_context *cx)
{
    struct os_body *b = (struct os_body *)f;
    FUT_BEGIN(f);
    bench_meter_start(&b->m);
    for (b->round = 0; b->round < ONESHOT_ROUNDS; b->round++) {
        b->sum = 0;
        for (b->i = 0; b->i < ONESHOT_N; b->i++) {
            {
                struct fut_oneshot_tx tx;
                struct fut_oneshot_rx rx;
                oneshot_new_checked(sizeof(uint64_t), &tx, &rx);
                struct os_sender s;
                fut_future_init(&s.base, &os_sender_vt);
                s.tx = tx;
                s.i = b->i;
                spawn_checked(&s.base, sizeof s, NULL);
                fut_oneshot_recv_init(&b->rx, &rx, &b->val);
            }
            FUT_AWAIT(f, &b->rx);
            BENCH_CHECK(b->rx.result == 0, "oneshot: closed");
            b->sum += b->val;
        }
        BENCH_CHECK(b->sum == (uint64_t)ONESHOT_N * (ONESHOT_N - 1) / 2,
                    "oneshot: sum %llu", (unsigned long long)b->sum);
    }
    bench_report(&b->m, "oneshot", b->config,
                 (uint64_t)ONESHOT_N * ONESHOT_ROUNDS, "ns/op", "");
    FUT_END(f);
}
FUT_ASYNC_VTABLE(os_body_vt, "oneshot", os_body_poll, NULL);

static void run_oneshot(struct fut_runtime *rt, const char *config)
{
    struct os_body b;
    fut_future_init(&b.base, &os_body_vt);
    b.config = config;
    bench_run_task(rt, &b.base, sizeof b);
}

/* -------------------------------------------------------- oneshot_local */

/* tokio peer: oneshot_local(): 15,000,000 x (new, send(black_box(i)),
 * await) in one task. */
struct ol_body {
    struct fut_future base;
    const char *config;
    struct bench_meter m;
    uint64_t i, sum, val;
    struct fut_oneshot_recv rx;
};

static int ol_body_poll(struct fut_future *f, struct fut_context *cx)
{
    struct ol_body *b = (struct ol_body *)f;
    FUT_BEGIN(f);
    bench_meter_start(&b->m);
    b->sum = 0;
    for (b->i = 0; b->i < ONESHOT_LOCAL_N; b->i++) {
        {
            struct fut_oneshot_tx tx;
            struct fut_oneshot_rx rx;
            oneshot_new_checked(sizeof(uint64_t), &tx, &rx);
            uint64_t v = bench_black_box(b->i);
            (void)fut_oneshot_send(&tx, &v);
            fut_oneshot_recv_init(&b->rx, &rx, &b->val);
        }
        FUT_AWAIT(f, &b->rx);
        BENCH_CHECK(b->rx.result == 0, "oneshot_local: closed");
        b->sum += b->val;
    }
    BENCH_CHECK(b->sum == ONESHOT_LOCAL_N * (ONESHOT_LOCAL_N - 1) / 2,
                "oneshot_local: sum %llu", (unsigned long long)b->sum);
    bench_report(&b->m, "oneshot_local", b->config, ONESHOT_LOCAL_N, "ns/op",
                 "");
    FUT_END(f);
}
FUT_ASYNC_VTABLE(ol_body_vt, "oneshot_local", ol_body_poll, NULL);

static void run_oneshot_local(struct fut_runtime *rt, const char *config)
{
    struct ol_body b;
    fut_future_init(&b.base, &ol_body_vt);
    b.config = config;
    bench_run_task(rt, &b.base, sizeof b);
}

/* ----------------------------------------------------------- idle tasks */

/* What the idle tasks share (lives in the driver). */
struct idle_shared {
    atomic_size_t started;     /* tasks polled once so far */
    struct fut_oneshot_tx all; /* sent by the IDLE_N-th task */
};

static void idle_started(struct idle_shared *sh)
{
    /* AcqRel as in the peer. */
    if (atomic_fetch_add_explicit(&sh->started, 1, memory_order_acq_rel) +
            1 ==
        IDLE_N)
        BENCH_CHECK(fut_oneshot_send(&sh->all, &unit_value) == 0,
                    "idle_task: signal refused");
}

/* 'async move { count; std::future::pending::<()>().await }' */
struct idle_pending_task {
    struct fut_future base;
    struct idle_shared *sh;
    struct fut_pending p;
};

static int idle_pending_poll(struct fut_future *f, struct fut_context *cx)
{
    struct idle_pending_task *t = (struct idle_pending_task *)f;
    FUT_BEGIN(f);
    idle_started(t->sh);
    fut_pending_init(&t->p);
    FUT_AWAIT(f, &t->p);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(idle_pending_vt, "idle_task_pending.task", idle_pending_poll,
                 NULL);

/* 'async move { count; let _ = rx.await; }' */
struct idle_oneshot_task {
    struct fut_future base;
    struct idle_shared *sh;
    struct fut_oneshot_rx rx; /* moved into 'recv' */
    struct fut_oneshot_recv recv;
    char unit;
};

static int idle_oneshot_poll(struct fut_future *f, struct fut_context *cx)
{
    struct idle_oneshot_task *t = (struct idle_oneshot_task *)f;
    FUT_BEGIN(f);
    idle_started(t->sh);
    fut_oneshot_recv_init(&t->recv, &t->rx, &t->unit);
    FUT_AWAIT(f, &t->recv);
    FUT_END(f);
}

static void idle_oneshot_cleanup(struct fut_future *f)
{
    fut_oneshot_rx_drop(&((struct idle_oneshot_task *)f)->rx);
}
FUT_ASYNC_VTABLE(idle_oneshot_vt, "idle_task_oneshot.task", idle_oneshot_poll,
                 idle_oneshot_cleanup);

/* tokio peer: idle_tasks(): RSS before, spawn 1,000,000 tasks that park
 * forever, wait until all were polled once, RSS after; exit without
 * shutdown. The senders' array is allocated (and, for oneshot, written)
 * before the first sample, so only the tasks and channels are counted. */
struct idle_body {
    struct fut_future base;
    const char *config;
    int oneshot; /* 0: pending, 1: oneshot */
    struct fut_oneshot_tx *senders;
    struct idle_shared sh;
    uint64_t rss0;
    struct bench_meter m;
    struct fut_oneshot_recv all;
    char unit;
};

static void idle_spawn_all(struct idle_body *b)
{
    for (size_t i = 0; i < IDLE_N; i++) {
        if (!b->oneshot) {
            struct idle_pending_task t;
            fut_future_init(&t.base, &idle_pending_vt);
            t.sh = &b->sh;
            spawn_checked(&t.base, sizeof t, NULL);
        } else {
            struct idle_oneshot_task t;
            fut_future_init(&t.base, &idle_oneshot_vt);
            t.sh = &b->sh;
            oneshot_new_checked(0, &b->senders[i], &t.rx);
            spawn_checked(&t.base, sizeof t, NULL);
        }
    }
}

static int idle_body_poll(struct fut_future *f, struct fut_context *cx)
{
    struct idle_body *b = (struct idle_body *)f;
    FUT_BEGIN(f);
    b->senders = malloc(IDLE_N * sizeof *b->senders);
    BENCH_CHECK(b->senders != NULL, "out of memory");
    if (b->oneshot)
        memset(b->senders, 0, IDLE_N * sizeof *b->senders);
    {
        struct fut_oneshot_rx rx;
        atomic_init(&b->sh.started, 0);
        oneshot_new_checked(0, &b->sh.all, &rx);
        fut_oneshot_recv_init(&b->all, &rx, &b->unit);
    }
    b->rss0 = bench_rss_bytes();
    bench_meter_start(&b->m);
    idle_spawn_all(b);
    FUT_AWAIT(f, &b->all);
    {
        uint64_t rss1 = bench_rss_bytes();
        double per = ((double)rss1 - (double)b->rss0) / IDLE_N;
        double wall_ns = (double)(bench_now_ns() - b->m.t0);
        size_t fsize = b->oneshot ? sizeof(struct idle_oneshot_task)
                                  : sizeof(struct idle_pending_task);
        printf("RESULT bench=idle_task_%s peer=fut config=%s value=%.1f "
               "unit=bytes/task ops=%d wall_ms=%.1f spawn_ns_per_task=%.1f "
               "maxrss_kb=%ld rss_before_kb=%llu rss_after_kb=%llu "
               "future_bytes=%zu\n",
               b->oneshot ? "oneshot" : "pending", b->config, per, IDLE_N,
               wall_ns / 1e6, wall_ns / IDLE_N, bench_maxrss_kb(),
               (unsigned long long)(b->rss0 / 1024),
               (unsigned long long)(rss1 / 1024), fsize);
        fflush(stdout);
        /* Skip the (slow) shutdown of a million tasks, as the peer. */
        exit(0);
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(idle_body_vt, "idle_task", idle_body_poll, NULL);

static void run_idle(struct fut_runtime *rt, const char *config, int oneshot)
{
    struct idle_body b;
    fut_future_init(&b.base, &idle_body_vt);
    b.config = config;
    b.oneshot = oneshot;
    b.senders = NULL;
    bench_run_task(rt, &b.base, sizeof b);
}

static void run_idle_pending(struct fut_runtime *rt, const char *config)
{
    run_idle(rt, config, 0);
}

static void run_idle_oneshot(struct fut_runtime *rt, const char *config)
{
    run_idle(rt, config, 1);
}

/* --------------------------------------------------------- xthread_wake */

/* tokio peer: xthread_wake(): two threads, each blocked until the other
 * wakes it, ping-pong over two Notify (a: wakes side A, b: wakes side B);
 * side B loops XTHREAD_WARMUP + XTHREAD_N times { b.notified().await;
 * a.notify_one() }, side A does XTHREAD_WARMUP untimed then XTHREAD_N
 * timed { b.notify_one(); a.notified().await }; ns per round trip (= 2
 * cross-thread wakes). ../shared/peers/baseline_c/xthread.c is the same
 * loop on raw futexes / eventfds.
 *
 * Tokio runs the two sides as two current_thread runtimes on two
 * threads; here they are two thread-affine tasks (fut_spawn_local) of one
 * 2-worker runtime, one pinned to each worker, so every hop wakes the
 * other worker: asleep, or still watching for a wake in its park spin
 * (config multi_thread_w2, the default park_spin_ns). With the spin off
 * (mt2nospin, config multi_thread_w2_nospin) every hop wakes a worker
 * asleep on its futex, as the C floor's threads mostly are (the floor
 * does not spin). Placing them: two placer tasks are spawned from this
 * (non-worker) thread and meet - the first one to run keeps its worker
 * busy until the second has started on the other worker - then each
 * spawns its side with fut_spawn_local. */
#define XTHREAD_N 200000
#define XTHREAD_WARMUP 1000

struct xt_shared {
    struct fut_notify a, b;
    atomic_int arrived;      /* placers started */
    atomic_ulong thread[2];  /* pthread_self() of each placer */
    struct fut_join side[2]; /* join handles of sides A and B */
    int err[2];
    const char *config;
};

/* Side A (timed) when 'a' is 1, side B otherwise. */
struct xt_side {
    struct fut_future base;
    struct xt_shared *sh;
    int is_a;
    int i;
    struct bench_meter m;
    struct fut_notified n;
};

static int xt_side_poll(struct fut_future *f, struct fut_context *cx)
{
    struct xt_side *s = (struct xt_side *)f;
    struct xt_shared *sh = s->sh;
    FUT_BEGIN(f);
    if (!s->is_a) {
        for (s->i = 0; s->i < XTHREAD_WARMUP + XTHREAD_N; s->i++) {
            fut_notified_init(&s->n, &sh->b);
            FUT_AWAIT(f, &s->n);
            fut_notify_one(&sh->a);
        }
    } else {
        for (s->i = 0; s->i < XTHREAD_WARMUP; s->i++) {
            fut_notify_one(&sh->b);
            fut_notified_init(&s->n, &sh->a);
            FUT_AWAIT(f, &s->n);
        }
        bench_meter_start(&s->m);
        for (s->i = 0; s->i < XTHREAD_N; s->i++) {
            fut_notify_one(&sh->b);
            fut_notified_init(&s->n, &sh->a);
            FUT_AWAIT(f, &s->n);
        }
        bench_report(&s->m, "xthread_wake", sh->config, XTHREAD_N,
                     "ns/roundtrip", "");
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(xt_side_vt, "xthread_wake.side", xt_side_poll, NULL);

/* Placer k: waits (in its poll, setup only) until both placers run, so
 * the two are on different workers, then pins side k to its worker. */
struct xt_placer {
    struct fut_future base;
    struct xt_shared *sh;
    int k;
};

static int xt_placer_poll(struct fut_future *f, struct fut_context *cx)
{
    struct xt_placer *p = (struct xt_placer *)f;
    struct xt_shared *sh = p->sh;
    (void)cx;
    atomic_store(&sh->thread[p->k], (unsigned long)pthread_self());
    atomic_fetch_add(&sh->arrived, 1);
    int64_t t0 = bench_now_ns();
    while (atomic_load(&sh->arrived) < 2) {
        BENCH_CHECK(bench_now_ns() - t0 < 10 * 1000000000ll,
                    "xthread_wake: the second worker never started");
        sched_yield();
    }
    struct xt_side s;
    fut_future_init(&s.base, &xt_side_vt);
    s.sh = sh;
    s.is_a = p->k == 0;
    s.i = 0;
    sh->err[p->k] = fut_spawn_local(&s, sizeof s, &sh->side[p->k]);
    return FUT_READY;
}

static const struct fut_future_vtable xt_placer_vt = {
    xt_placer_poll, NULL, "xthread_wake.placer", NULL};

static void run_xthread_wake(struct fut_runtime *rt, const char *config)
{
    static struct xt_shared sh; /* outlives every task */
    fut_notify_init(&sh.a);
    fut_notify_init(&sh.b);
    atomic_init(&sh.arrived, 0);
    sh.config = config;
    struct fut_join pj[2];
    for (int k = 0; k < 2; k++) {
        struct xt_placer p;
        fut_future_init(&p.base, &xt_placer_vt);
        p.sh = &sh;
        p.k = k;
        BENCH_CHECK(fut_spawn(rt, &p, sizeof p, &pj[k]) == 0,
                    "xthread_wake: spawn of a placer failed");
    }
    for (int k = 0; k < 2; k++) {
        BENCH_CHECK(fut_block_on(rt, &pj[k].base) == 0 && pj[k].result == 0,
                    "xthread_wake: placer %d did not complete", k);
        fut_drop(&pj[k].base);
    }
    BENCH_CHECK(sh.err[0] == 0 && sh.err[1] == 0,
                "xthread_wake: fut_spawn_local: %s",
                fut_strerror(sh.err[0] ? sh.err[0] : sh.err[1]));
    BENCH_CHECK(atomic_load(&sh.thread[0]) != atomic_load(&sh.thread[1]),
                "xthread_wake: both sides on one worker");
    for (int k = 0; k < 2; k++) {
        BENCH_CHECK(fut_block_on(rt, &sh.side[k].base) == 0 &&
                        sh.side[k].result == 0,
                    "xthread_wake: side %d did not complete", k);
        fut_drop(&sh.side[k].base);
    }
    fut_notify_fini(&sh.a);
    fut_notify_fini(&sh.b);
}

/* ---------------------------------------------------------------- main */

static const struct bench_entry benches[] = {
    {"spawn_many", "ct mt2", run_spawn_many},
    {"yield_many", "ct mt2", run_yield_many},
    {"ping_pong", "ct mt2", run_ping_pong},
    {"chained_spawn", "ct mt2", run_chained_spawn},
    {"oneshot", "ct mt2", run_oneshot},
    {"oneshot_local", "ct mt2", run_oneshot_local},
    {"idle_task_pending", "ct mt2", run_idle_pending},
    {"idle_task_oneshot", "ct mt2", run_idle_oneshot},
    {"xthread_wake", "mt2 mt2nospin", run_xthread_wake},
};

int main(int argc, char **argv)
{
    return bench_main(argc, argv, benches,
                      sizeof benches / sizeof benches[0]);
}
