/* SPDX-License-Identifier: MIT */
/* bench_scope: task scopes against the Tokio peer's JoinSet.
 *
 *   scope_join  100,000 trivial children ('async move { i as u64 }')
 *               spawned into a scope, then joined as they finish
 *               (fut_scope_next, the peer's join_next), summing their
 *               outputs; 1 warm-up round + 20 timed rounds; ns per child.
 *
 * Parameters and units are the peer's (../shared/peers/tokio/src/main.rs,
 * scope_round / scope_join): SCOPE_N = 100,000, SCOPE_ROUNDS = 20,
 * unit ns/child, the body runs as a spawned task (bench_run_task).
 */
#include "common.h"

#define SCOPE_N 100000
#define SCOPE_ROUNDS 20

/* 'async move { i as u64 }' */
struct sj_child {
    struct fut_future base;
    intptr_t i; /* output: its own index */
};

static int sj_child_poll(struct fut_future *f, struct fut_context *cx)
{
    (void)f;
    (void)cx; /* completes without awaiting: the output is 'i' */
    return FUT_READY;
}
static const struct fut_future_vtable sj_child_vt = {
    sj_child_poll, NULL, "scope_join.child", NULL};

/* One round: a fresh scope, SCOPE_N spawns, join_next until the end. */
struct sj_round {
    struct fut_future base;
    struct fut_scope scope;
    struct fut_scope_next next;
    intptr_t i;
    uint64_t sum;
    int inited;
};

static int sj_round_poll(struct fut_future *f, struct fut_context *cx)
{
    struct sj_round *r = (struct sj_round *)f;
    FUT_BEGIN(f);
    fut_scope_init(&r->scope, NULL, FUT_SCOPE_FAIL_FAST);
    r->inited = 1;
    {
        struct fut_scope_opts op;
        fut_scope_opts_init(&op);
        FUT_SCOPE_VALUE(&op, struct sj_child, i);
        for (r->i = 0; r->i < SCOPE_N; r->i++) {
            struct sj_child c;
            fut_future_init(&c.base, &sj_child_vt);
            c.i = r->i;
            int e = fut_scope_spawn(&r->scope, &c, sizeof c, &op);
            BENCH_CHECK(e == 0, "scope spawn: %s", fut_strerror(e));
        }
    }
    r->sum = 0;
    for (;;) {
        fut_scope_next_init(&r->next, &r->scope);
        FUT_AWAIT(f, &r->next);
        if (!r->next.has)
            break;
        BENCH_CHECK(r->next.done.completed, "scope_join: child dropped");
        r->sum += (uint64_t)r->next.done.value;
    }
    BENCH_CHECK(r->sum == (uint64_t)SCOPE_N * (SCOPE_N - 1) / 2,
                "scope_join: sum %llu", (unsigned long long)r->sum);
    fut_drop(&r->scope.base);
    r->inited = 0;
    FUT_END(f);
}

static void sj_round_cleanup(struct fut_future *f)
{
    struct sj_round *r = (struct sj_round *)f;
    if (r->inited)
        fut_drop(&r->scope.base);
}
FUT_ASYNC_VTABLE(sj_round_vt, "scope_join.round", sj_round_poll,
                 sj_round_cleanup);

struct sj_body {
    struct fut_future base;
    const char *config;
    struct bench_meter m;
    int round;
    struct sj_round r;
};

static void sj_round_init(struct sj_round *r)
{
    fut_future_init(&r->base, &sj_round_vt);
    r->inited = 0;
}

static int sj_body_poll(struct fut_future *f, struct fut_context *cx)
{
    struct sj_body *b = (struct sj_body *)f;
    FUT_BEGIN(f);
    sj_round_init(&b->r);
    FUT_AWAIT(f, &b->r); /* warm-up */
    bench_meter_start(&b->m);
    for (b->round = 0; b->round < SCOPE_ROUNDS; b->round++) {
        sj_round_init(&b->r);
        FUT_AWAIT(f, &b->r);
    }
    bench_report(&b->m, "scope_join", b->config,
                 (uint64_t)SCOPE_N * SCOPE_ROUNDS, "ns/child", "");
    FUT_END(f);
}
FUT_ASYNC_VTABLE(sj_body_vt, "scope_join", sj_body_poll, NULL);

static void run_scope_join(struct fut_runtime *rt, const char *config)
{
    struct sj_body b;
    fut_future_init(&b.base, &sj_body_vt);
    b.config = config;
    bench_run_task(rt, &b.base, sizeof b);
}

static const struct bench_entry benches[] = {
    {"scope_join", "ct mt2", run_scope_join},
};

int main(int argc, char **argv)
{
    return bench_main(argc, argv, benches,
                      sizeof benches / sizeof benches[0]);
}
