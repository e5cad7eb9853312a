/* SPDX-License-Identifier: MIT */
/* The 'timers' benchmark with the peers' exact parameters
 * (../shared/peers/README.md, tokio/src/main.rs fn timers):
 *
 * 1,000,000 tasks spawned in batches of 256, the driver yielding after
 * each batch; timer i has deadline 1 + splitmix64() % 100 ms (seed 1).
 * Even i: t0 = now; sleep(d) - it fires; lateness = elapsed - d.
 * Odd i: timeout(d, yield_now()) - armed, the task yields once, the inner
 * future completes on the second poll and the timer is cancelled before
 * it fires. Timed from the first spawn until every task has finished.
 * value = total wall ns / 1,000,000; 'fired' must be 500,000;
 * cancel_missed = odd timers that fired before they were cancelled.
 *
 *   bench_timers bench timers [ct|mt2]
 */
#include <stdatomic.h>

#include "common.h"

#define TIMERS_N 1000000
#define TIMERS_BATCH 256
#define MS 1000000LL

struct shared {
    atomic_long remaining, fired, missed;
    atomic_llong late_ns;
    struct fut_oneshot_tx done;
};

/* One timer task; 'cancel' picks the odd variant. */
struct timer_task {
    struct fut_future base;
    struct shared *sh;
    int64_t d, t0;
    int cancel;
    union {
        struct fut_sleep sleep;
        struct {
            struct fut_yield y;
            struct fut_timeout to;
        } c;
    } u;
};

static int timer_poll(struct fut_future *f, struct fut_context *cx)
{
    struct timer_task *t = (struct timer_task *)f;
    FUT_BEGIN(f);
    if (t->cancel) {
        fut_yield_init(&t->u.c.y);
        fut_timeout_init(&t->u.c.to, &t->u.c.y.base, fut_time_now() + t->d);
        FUT_AWAIT(f, &t->u.c.to);
        if (t->u.c.to.result == FUT_ETIMEDOUT)
            atomic_fetch_add_explicit(&t->sh->missed, 1,
                                      memory_order_relaxed);
    } else {
        t->t0 = fut_time_now();
        fut_sleep_until_init(&t->u.sleep, t->t0 + t->d);
        FUT_AWAIT(f, &t->u.sleep);
        {
            int64_t late = fut_time_now() - t->t0 - t->d;
            atomic_fetch_add_explicit(&t->sh->late_ns, late > 0 ? late : 0,
                                      memory_order_relaxed);
            atomic_fetch_add_explicit(&t->sh->fired, 1, memory_order_relaxed);
        }
    }
    if (atomic_fetch_sub_explicit(&t->sh->remaining, 1,
                                  memory_order_acq_rel) == 1) {
        uint8_t one = 1;
        fut_oneshot_send(&t->sh->done, &one);
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(timer_vt, "timer", timer_poll, NULL);

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

struct body {
    struct fut_future base;
    struct shared sh;
    struct fut_oneshot_rx rx;
    struct fut_oneshot_recv recv;
    struct fut_yield y;
    struct bench_meter m;
    uint64_t rng;
    long i;
    double arm_ms;
    const char *config;
    uint8_t got;
};

static int body_poll(struct fut_future *f, struct fut_context *cx)
{
    struct body *b = (struct body *)f;
    FUT_BEGIN(f);
    bench_meter_start(&b->m);
    for (b->i = 0; b->i < TIMERS_N;) {
        for (long end = b->i + TIMERS_BATCH < TIMERS_N ? b->i + TIMERS_BATCH
                                                       : TIMERS_N;
             b->i < end; b->i++) {
            struct timer_task t;
            fut_future_init(&t.base, &timer_vt);
            t.sh = &b->sh;
            t.d = (int64_t)(1 + splitmix(&b->rng) % 100) * MS;
            t.cancel = (int)(b->i & 1);
            int r = fut_spawn(NULL, &t, sizeof t, NULL);
            BENCH_CHECK(r == 0, "spawn: %s", fut_strerror(r));
        }
        fut_yield_init(&b->y);
        FUT_AWAIT(f, &b->y);
    }
    b->arm_ms = (double)(bench_now_ns() - b->m.t0) / 1e6;
    fut_oneshot_recv_init(&b->recv, &b->rx, &b->got);
    FUT_AWAIT(f, &b->recv);
    BENCH_CHECK(b->recv.result == 0, "done signal: %s",
                fut_strerror(b->recv.result));
    {
        long fired = atomic_load(&b->sh.fired);
        BENCH_CHECK(fired == TIMERS_N / 2, "fired %ld of %d", fired,
                    TIMERS_N / 2);
        char extra[256];
        snprintf(extra, sizeof extra,
                 "arm_ms=%.1f fired=%ld cancel_missed=%ld mean_late_us=%.1f",
                 b->arm_ms, fired, atomic_load(&b->sh.missed),
                 (double)atomic_load(&b->sh.late_ns) / (double)fired / 1e3);
        bench_report(&b->m, "timers", b->config, TIMERS_N, "ns/timer", extra);
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(body_vt, "timers_body", body_poll, NULL);

static void run_timers(struct fut_runtime *rt, const char *config)
{
    static struct body b;
    memset(&b, 0, sizeof b);
    fut_future_init(&b.base, &body_vt);
    atomic_init(&b.sh.remaining, TIMERS_N);
    b.rng = 1;
    b.config = config;
    int r = fut_oneshot_new(1, NULL, &b.sh.done, &b.rx);
    BENCH_CHECK(r == 0, "oneshot: %s", fut_strerror(r));
    /* Copied into the task by the spawn; the timer tasks point at the
     * copy's 'sh' (taken in the body's poll). */
    bench_run_task(rt, &b.base, sizeof b);
}

static const struct bench_entry table[] = {
    {"timers", "ct mt2", run_timers},
};

int main(int argc, char **argv)
{
    return bench_main(argc, argv, table, sizeof table / sizeof table[0]);
}
