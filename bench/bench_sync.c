/* SPDX-License-Identifier: MIT */
/* The channel and lock benchmarks of ../shared/peers (mpsc_1p1c,
 * mpsc_4p1c, mutex_contended), written against fut's public API with
 * exactly the parameters, structure and checks of the Tokio peer
 * (../shared/peers/tokio/src/main.rs: mpsc_bench, mutex_contended); Go's
 * channels (../shared/peers/go/main.go: mpsc) have the same parameters.
 *
 *   bench_sync list
 *   bench_sync bench <name> [ct|mt2]
 *
 * Every body is an async function run as a spawned task (bench_run_task),
 * so in multi_thread it runs on a worker and its spawns go where a task's
 * spawns go, as in the peer. Producers, whose handles Tokio drops, are
 * spawned detached here (dropping a fut join handle aborts its task).
 */
#include "common.h"

/* ---------------------------------------------------------- parameters */

#define MPSC_CAP 1024
#define MPSC_MSGS 10000000ull
#define MUTEX_TASKS 4
#define MUTEX_PER_TASK 1000000

static void spawn_checked(const struct fut_future *f, size_t size,
                          struct fut_join *join)
{
    int r = fut_spawn(NULL, f, size, join);
    BENCH_CHECK(r == 0, "fut_spawn: %s", fut_strerror(r));
}

/* ----------------------------------------------------------------- mpsc */

/* 'async move { for i in 0..per { tx.send(p * per + i).await.unwrap() } }'
 * (the clone of tx is dropped when the task ends). */
struct mp_producer {
    struct fut_future base;
    struct fut_mpsc_tx tx;
    uint64_t i, end;
    uint64_t v; /* the message being sent: read by the send future */
    struct fut_mpsc_send send;
};

static int mp_producer_poll(struct fut_future *f, struct fut_context *cx)
{
    struct mp_producer *p = (struct mp_producer *)f;
    FUT_BEGIN(f);
    for (; p->i < p->end; p->i++) {
        p->v = p->i;
        fut_mpsc_send_init(&p->send, &p->tx, &p->v);
        FUT_AWAIT(f, &p->send);
        BENCH_CHECK(p->send.result == 0, "mpsc: send: %s",
                    fut_strerror(p->send.result));
    }
    fut_mpsc_tx_drop(&p->tx);
    FUT_END(f);
}

static void mp_producer_cleanup(struct fut_future *f)
{
    fut_mpsc_tx_drop(&((struct mp_producer *)f)->tx); /* no-op once done */
}
FUT_ASYNC_VTABLE(mp_producer_vt, "mpsc.producer", mp_producer_poll,
                 mp_producer_cleanup);

/* The consumer's output: (n, sum). */
struct mp_count {
    uint64_t n, sum;
};

/* 'async move { while let Some(v) = rx.recv().await { sum += v; n += 1 }
 * (n, sum) }' (rx is dropped when the task ends). */
struct mp_consumer {
    struct fut_future base;
    struct fut_mpsc_rx rx;
    uint64_t v;
    struct fut_mpsc_recv recv;
    struct mp_count out; /* output */
};

static int mp_consumer_poll(struct fut_future *f, struct fut_context *cx)
{
    struct mp_consumer *c = (struct mp_consumer *)f;
    FUT_BEGIN(f);
    c->out.n = 0;
    c->out.sum = 0;
    for (;;) {
        fut_mpsc_recv_init(&c->recv, &c->rx, &c->v);
        FUT_AWAIT(f, &c->recv);
        if (c->recv.result != 0)
            break;          /* FUT_ECLOSED: every sender is gone */
        c->out.sum += c->v; /* wrapping, as the peer's wrapping_add */
        c->out.n++;
    }
    fut_mpsc_rx_drop(&c->rx);
    FUT_END(f);
}

static void mp_consumer_cleanup(struct fut_future *f)
{
    fut_mpsc_rx_drop(&((struct mp_consumer *)f)->rx); /* no-op once done */
}
FUT_ASYNC_VTABLE(mp_consumer_vt, "mpsc.consumer", mp_consumer_poll,
                 mp_consumer_cleanup);

/* tokio peer: mpsc_bench(): timed from before the channel is created;
 * 'producers' detached producers of MPSC_MSGS / producers messages each
 * (producer p sends p * per + i), the original sender dropped, one
 * consumer awaited; count and sum checked. One round, no warm-up. */
struct mp_body {
    struct fut_future base;
    const char *config;
    uint64_t producers;
    struct bench_meter m;
    struct fut_join consumer;
    struct mp_count got;
};

static void mp_start(struct mp_body *b)
{
    struct fut_mpsc_tx tx;
    struct fut_mpsc_rx rx;
    int r = fut_mpsc_new(MPSC_CAP, sizeof(uint64_t), NULL, &tx, &rx);
    BENCH_CHECK(r == 0, "fut_mpsc_new: %s", fut_strerror(r));
    uint64_t per = MPSC_MSGS / b->producers;
    for (uint64_t p = 0; p < b->producers; p++) {
        struct mp_producer pr;
        fut_future_init(&pr.base, &mp_producer_vt);
        r = fut_mpsc_tx_clone(&tx, &pr.tx);
        BENCH_CHECK(r == 0, "fut_mpsc_tx_clone: %s", fut_strerror(r));
        pr.i = p * per;
        pr.end = p * per + per;
        spawn_checked(&pr.base, sizeof pr, NULL);
    }
    fut_mpsc_tx_drop(&tx);
    struct mp_consumer c;
    fut_future_init(&c.base, &mp_consumer_vt);
    c.rx = rx;
    spawn_checked(&c.base, sizeof c, &b->consumer);
}

static int mp_body_poll(struct fut_future *f, struct fut_context *cx)
{
    struct mp_body *b = (struct mp_body *)f;
    FUT_BEGIN(f);
    bench_meter_start(&b->m);
    mp_start(b);
    FUT_JOIN_OUTPUT(&b->consumer, struct mp_consumer, out, &b->got);
    FUT_AWAIT(f, &b->consumer);
    BENCH_CHECK(b->consumer.result == 0, "mpsc: consumer cancelled");
    BENCH_CHECK(b->got.n == MPSC_MSGS, "mpsc: %llu messages received",
                (unsigned long long)b->got.n);
    BENCH_CHECK(b->got.sum == MPSC_MSGS * (MPSC_MSGS - 1) / 2,
                "mpsc: sum %llu", (unsigned long long)b->got.sum);
    bench_report(&b->m, b->producers == 1 ? "mpsc_1p1c" : "mpsc_4p1c",
                 b->config, MPSC_MSGS, "ns/msg", "");
    FUT_END(f);
}
FUT_ASYNC_VTABLE(mp_body_vt, "mpsc", mp_body_poll, NULL);

static void run_mpsc(struct fut_runtime *rt, const char *config,
                     uint64_t producers)
{
    struct mp_body b;
    fut_future_init(&b.base, &mp_body_vt);
    b.config = config;
    b.producers = producers;
    bench_run_task(rt, &b.base, sizeof b);
}

static void run_mpsc_1p1c(struct fut_runtime *rt, const char *config)
{
    run_mpsc(rt, config, 1);
}

static void run_mpsc_4p1c(struct fut_runtime *rt, const char *config)
{
    run_mpsc(rt, config, 4);
}

/* ------------------------------------------------------ mutex_contended */

/* What the lockers share: Tokio's Arc<Mutex<u64>> (lives in the body,
 * which outlives every locker: it awaits them all). */
struct mx_shared {
    struct fut_mutex m;
    uint64_t count; /* protected by 'm' */
};

/* 'async move { for _ in 0..1_000_000 { *l.lock().await += 1; } }' */
struct mx_task {
    struct fut_future base;
    struct mx_shared *sh;
    int i;
    struct fut_mutex_lock lock;
};

static int mx_task_poll(struct fut_future *f, struct fut_context *cx)
{
    struct mx_task *t = (struct mx_task *)f;
    FUT_BEGIN(f);
    for (t->i = 0; t->i < MUTEX_PER_TASK; t->i++) {
        fut_mutex_lock_init(&t->lock, &t->sh->m);
        FUT_AWAIT(f, &t->lock);
        t->sh->count++;
        fut_mutex_unlock(&t->lock.guard);
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(mx_task_vt, "mutex_contended.task", mx_task_poll, NULL);

/* tokio peer: mutex_contended(): the mutex is created, then timed from
 * before the 4 spawns until all 4 handles were awaited (in spawn order);
 * the count is checked under the lock after the report. */
struct mx_body {
    struct fut_future base;
    const char *config;
    struct bench_meter m;
    struct mx_shared sh;
    int k; /* next handle to await */
    struct fut_join h[MUTEX_TASKS];
};

static int mx_body_poll(struct fut_future *f, struct fut_context *cx)
{
    struct mx_body *b = (struct mx_body *)f;
    FUT_BEGIN(f);
    fut_mutex_init(&b->sh.m);
    b->sh.count = 0;
    bench_meter_start(&b->m);
    for (int i = 0; i < MUTEX_TASKS; i++) {
        struct mx_task t;
        fut_future_init(&t.base, &mx_task_vt);
        t.sh = &b->sh;
        spawn_checked(&t.base, sizeof t, &b->h[i]);
    }
    for (b->k = 0; b->k < MUTEX_TASKS; b->k++) {
        FUT_AWAIT(f, &b->h[b->k]);
        BENCH_CHECK(b->h[b->k].result == 0, "mutex_contended: cancelled");
    }
    bench_report(&b->m, "mutex_contended", b->config,
                 (uint64_t)MUTEX_TASKS * MUTEX_PER_TASK, "ns/lock", "");
    {
        struct fut_mutex_guard g;
        BENCH_CHECK(fut_mutex_try_lock(&b->sh.m, &g) == 0,
                    "mutex_contended: still locked");
        BENCH_CHECK(b->sh.count == (uint64_t)MUTEX_TASKS * MUTEX_PER_TASK,
                    "mutex_contended: count %llu",
                    (unsigned long long)b->sh.count);
        fut_mutex_unlock(&g);
    }
    fut_mutex_fini(&b->sh.m);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(mx_body_vt, "mutex_contended", mx_body_poll, NULL);

static void run_mutex_contended(struct fut_runtime *rt, const char *config)
{
    struct mx_body b;
    fut_future_init(&b.base, &mx_body_vt);
    b.config = config;
    bench_run_task(rt, &b.base, sizeof b);
}

/* ---------------------------------------------------------------- main */

static const struct bench_entry benches[] = {
    {"mpsc_1p1c", "ct mt2", run_mpsc_1p1c},
    {"mpsc_4p1c", "ct mt2", run_mpsc_4p1c},
    {"mutex_contended", "ct mt2", run_mutex_contended},
};

int main(int argc, char **argv)
{
    return bench_main(argc, argv, benches,
                      sizeof benches / sizeof benches[0]);
}
