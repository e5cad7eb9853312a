/* SPDX-License-Identifier: MIT */
/* The simulation runtime's speed (fut/sim.h, docs/simulation.md; issue
 * 34's targets):
 *
 *   sim_polls       task polls per second of a simulation: YT tasks each
 *                   yielding YN times (every poll a seeded pick, a trace
 *                   step); unit polls/s, target >= 2M.
 *   sim_time_ratio  virtual time over wall time of a timer-heavy
 *                   scenario: CLIENTS clients, each ROUNDS times sleeping
 *                   a seeded 1 ms - SLEEP_MAX_MS (a keepalive's pace: a
 *                   ping every 30 s on average) and pinging a server task
 *                   over a channel (an mpsc of requests, a oneshot per
 *                   reply); unit x (virtual ns / wall ns), target >= 1000.
 *                   The ratio scales with the sleeps: BENCH_SIM_SLEEP_MS=N
 *                   in the environment sets SLEEP_MAX_MS (the RESULT line
 *                   names it).
 *
 *   bench_sim list
 *   bench_sim bench <name> [ct]
 *
 * Both run on one thread (a simulation has no other); config=sim; value
 * is over wall time, as every RESULT line (polls_per_cpu_s and ratio_cpu
 * give the same over the process's CPU time, for a loaded machine). The
 * seed is fixed (SEED), so every run does the same work; the RESULT line
 * also names its trace hash, which must not change between runs.
 */
#include "common.h"

#define SEED 42
#define YT 1000
#define YN 2000
#define CLIENTS 10000
#define ROUNDS 10
#define SLEEP_MAX_MS 60000
#define MS 1000000LL

static int64_t sleep_max_ms = SLEEP_MAX_MS;

/* ------------------------------------------------------------ sim_polls */

struct yielder {
    struct fut_future base;
    int i;
    struct fut_yield y;
};

static int yielder_poll(struct fut_future *f, struct fut_context *cx)
{
    struct yielder *t = (struct yielder *)f;
    FUT_BEGIN(f);
    for (t->i = 0; t->i < YN; t->i++) {
        fut_yield_init(&t->y);
        FUT_AWAIT(f, &t->y);
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(yielder_vt, "yielder", yielder_poll, NULL);

static int polls_run(struct fut_runtime *rt, void *ud)
{
    struct fut_join *j = ud;
    for (int i = 0; i < YT; i++) {
        struct yielder t;
        fut_future_init(&t.base, &yielder_vt);
        BENCH_CHECK(fut_spawn(rt, &t, sizeof t, &j[i]) == 0, "spawn");
    }
    for (int i = 0; i < YT; i++) {
        BENCH_CHECK(fut_block_on(rt, &j[i].base) == 0, "block_on");
        fut_drop(&j[i].base);
    }
    return 0;
}

static void run_polls(void)
{
    struct fut_join *j = malloc(YT * sizeof *j);
    BENCH_CHECK(j != NULL, "out of memory");
    struct fut_sim_report rep;
    struct bench_meter m;
    bench_meter_start(&m);
    BENCH_CHECK(fut_sim_run(NULL, SEED, polls_run, j, &rep) == 0, "run");
    double wall_ns = (double)(bench_now_ns() - m.t0);
    double cpu = bench_cpu_ms() - m.c0;
    printf("RESULT bench=sim_polls peer=fut config=sim value=%.0f "
           "unit=polls/s ops=%llu wall_ms=%.1f cpu_ms=%.1f "
           "ns_per_poll=%.1f polls_per_cpu_s=%.0f maxrss_kb=%ld tasks=%d "
           "trace=%016llx\n",
           (double)rep.steps * 1e9 / wall_ns, (unsigned long long)rep.steps,
           wall_ns / 1e6, cpu, wall_ns / (double)rep.steps,
           (double)rep.steps * 1e3 / cpu, bench_maxrss_kb(), YT,
           (unsigned long long)rep.trace);
    free(j);
}

/* ------------------------------------------------------- sim_time_ratio */

struct ping {
    int client;
    struct fut_oneshot_tx reply;
};

struct server {
    struct fut_future base;
    struct fut_mpsc_rx rx;
    struct ping p;
    long served;
    struct fut_mpsc_recv recv;
};

static int server_poll(struct fut_future *f, struct fut_context *cx)
{
    struct server *s = (struct server *)f;
    FUT_BEGIN(f);
    for (;;) {
        fut_mpsc_recv_init(&s->recv, &s->rx, &s->p);
        FUT_AWAIT(f, &s->recv);
        if (s->recv.result != 0)
            break; /* every client is done */
        int pong = s->p.client;
        BENCH_CHECK(fut_oneshot_send(&s->p.reply, &pong) == 0, "pong");
        s->served++;
    }
    FUT_END(f);
}

static void server_cleanup(struct fut_future *f)
{
    fut_mpsc_rx_drop(&((struct server *)f)->rx);
}
FUT_ASYNC_VTABLE(server_vt, "server", server_poll, server_cleanup);

struct client {
    struct fut_future base;
    struct fut_mpsc_tx tx;
    int id, r, pong;
    long *pongs;
    struct ping p;
    struct fut_sleep s;
    struct fut_mpsc_send send;
    struct fut_oneshot_recv recv;
};

static int client_poll(struct fut_future *f, struct fut_context *cx)
{
    struct client *c = (struct client *)f;
    FUT_BEGIN(f);
    for (c->r = 0; c->r < ROUNDS; c->r++) {
        fut_sleep_init(
            &c->s,
            (int64_t)(1 + fut_sim_random() % (uint64_t)sleep_max_ms) * MS);
        FUT_AWAIT(f, &c->s);
        {
            struct fut_oneshot_rx rx;
            BENCH_CHECK(
                fut_oneshot_new(sizeof(int), NULL, &c->p.reply, &rx) == 0,
                "oneshot");
            fut_oneshot_recv_init(&c->recv, &rx, &c->pong);
        }
        c->p.client = c->id;
        fut_mpsc_send_init(&c->send, &c->tx, &c->p);
        FUT_AWAIT(f, &c->send);
        BENCH_CHECK(c->send.result == 0, "send");
        FUT_AWAIT(f, &c->recv);
        BENCH_CHECK(c->recv.result == 0 && c->pong == c->id, "reply");
        (*c->pongs)++;
    }
    FUT_END(f);
}

static void client_cleanup(struct fut_future *f)
{
    fut_mpsc_tx_drop(&((struct client *)f)->tx);
}
FUT_ASYNC_VTABLE(client_vt, "client", client_poll, client_cleanup);

struct ratio {
    struct fut_join *j;
    long pongs;
};

static int ratio_run(struct fut_runtime *rt, void *ud)
{
    struct ratio *q = ud;
    q->pongs = 0;
    struct fut_mpsc_tx tx;
    struct server s;
    memset(&s, 0, sizeof s);
    fut_future_init(&s.base, &server_vt);
    BENCH_CHECK(fut_mpsc_new(1024, sizeof(struct ping), NULL, &tx, &s.rx) ==
                    0,
                "mpsc");
    BENCH_CHECK(fut_spawn(rt, &s, sizeof s, &q->j[CLIENTS]) == 0, "spawn");
    for (int i = 0; i < CLIENTS; i++) {
        struct client c;
        memset(&c, 0, sizeof c);
        fut_future_init(&c.base, &client_vt);
        c.id = i;
        c.pongs = &q->pongs;
        BENCH_CHECK(fut_mpsc_tx_clone(&tx, &c.tx) == 0, "clone");
        BENCH_CHECK(fut_spawn(rt, &c, sizeof c, &q->j[i]) == 0, "spawn");
    }
    fut_mpsc_tx_drop(&tx);
    for (int i = 0; i <= CLIENTS; i++) {
        BENCH_CHECK(fut_block_on(rt, &q->j[i].base) == 0, "block_on");
        fut_drop(&q->j[i].base);
    }
    BENCH_CHECK(q->pongs == (long)CLIENTS * ROUNDS, "pongs %ld", q->pongs);
    return 0;
}

static void run_ratio(void)
{
    struct ratio q;
    q.j = malloc((CLIENTS + 1) * sizeof *q.j);
    BENCH_CHECK(q.j != NULL, "out of memory");
    struct fut_sim_report rep;
    struct bench_meter m;
    bench_meter_start(&m);
    BENCH_CHECK(fut_sim_run(NULL, SEED, ratio_run, &q, &rep) == 0, "run");
    double wall_ns = (double)(bench_now_ns() - m.t0);
    double cpu = bench_cpu_ms() - m.c0;
    printf("RESULT bench=sim_time_ratio peer=fut config=sim value=%.0f "
           "unit=x ops=%ld wall_ms=%.1f cpu_ms=%.1f ratio_cpu=%.0f "
           "virtual_ms=%.1f "
           "steps=%llu polls_per_s=%.0f maxrss_kb=%ld clients=%d "
           "rounds=%d sleep_max_ms=%lld trace=%016llx\n",
           (double)rep.virtual_ns / wall_ns, q.pongs, wall_ns / 1e6, cpu,
           (double)rep.virtual_ns / (cpu * 1e6), (double)rep.virtual_ns / 1e6,
           (unsigned long long)rep.steps, (double)rep.steps * 1e9 / wall_ns,
           bench_maxrss_kb(), CLIENTS, ROUNDS, (long long)sleep_max_ms,
           (unsigned long long)rep.trace);
    free(q.j);
}

int main(int argc, char **argv)
{
#ifdef BENCH_LIB_DEBUG
    fprintf(stderr, "bench: warning: fut was built with debug checks "
                    "(FUT_DEBUG): numbers are not representative\n");
#endif
    if (argc == 2 && strcmp(argv[1], "list") == 0) {
        printf("sim_polls ct\nsim_time_ratio ct\n");
        return 0;
    }
    if (argc < 3 || argc > 4 || strcmp(argv[1], "bench") != 0 ||
        (argc == 4 && strcmp(argv[3], "ct") != 0)) {
        fprintf(stderr,
                "usage: %s list | bench sim_polls|sim_time_ratio "
                "[ct]\n",
                argv[0]);
        return 2;
    }
    const char *e = getenv("BENCH_SIM_SLEEP_MS");
    if (e && atoll(e) > 0)
        sleep_max_ms = atoll(e);
    long live0 = fut_alloc_live();
    if (strcmp(argv[2], "sim_polls") == 0)
        run_polls();
    else if (strcmp(argv[2], "sim_time_ratio") == 0)
        run_ratio();
    else {
        fprintf(stderr, "bench: unknown benchmark %s\n", argv[2]);
        return 2;
    }
    if (fut_alloc_live() != live0)
        fprintf(stderr, "bench: warning: %ld blocks still allocated\n",
                fut_alloc_live() - live0);
    return 0;
}
