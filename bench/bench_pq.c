/* SPDX-License-Identifier: MIT */
/* pg_select1 (issue 32): "SELECT 1" over 8 connections to one PostgreSQL
 * 15 server, through fut's libpq adapter (include/fut/pq.h) on the
 * current-thread runtime. Two modes, each its own process:
 *
 *   config=current_thread            a task per connection awaiting one
 *                                    fut_pg_query after another (one query
 *                                    in flight per connection, as
 *                                    pgbench's non-pipelined clients), until
 *                                    80,000 were claimed
 *   config=current_thread_pipelined  BENCH_PG_PIPELINE=1: two tasks per
 *                                    connection, each awaiting batches of
 *                                    100 "SELECT 1" (fut_pg_pipeline_init:
 *                                    one sync per batch), so that up to 200
 *                                    queries are in flight per connection,
 *                                    until 400,000 were claimed
 *
 * The reference is pgbench -M prepared -c 8 -j 1 -n with a file holding
 * "SELECT 1;" (bench/run.sh runs it under bench/rusage_run for its CPU),
 * against the same server (bench/run.sh starts it: srv_pg, and gives the
 * connection string in BENCH_PG).
 *
 * Setup: the 8 connects, then one warm-up query per task, then the timed
 * queries. Every result must be PGRES_TUPLES_OK with the single value "1";
 * it is freed (PQclear). Value: client CPU (user + sys of this process)
 * per query, bench/client.h; queries_per_s comes along.
 *
 *   [FUT_IO_BACKEND=epoll|io_uring] [BENCH_PG_PIPELINE=1]
 *   BENCH_PG='host=DIR port=P user=postgres dbname=postgres'
 *   bench_pq bench pg_select1 ct
 */
#include "client.h"
#include "common.h"
#include "fut/pq.h"

#define PG_CONNS 8
#define PG_QUERIES 80000
#define PG_PIPE_QUERIES 400000
#define PG_PIPE_TASKS 2 /* per connection */
#define PG_BATCH 100

/* What the tasks share (one thread: the current-thread runtime). */
struct pgs {
    struct fut_pg *pg[PG_CONNS];
    int batch; /* queries per await: 1, or PG_BATCH when pipelined */
    int tasks; /* tasks per connection */
    long claimed;
    long total;
    long done;
};

static const struct fut_pg_stmt select1 = {"SELECT 1", 0, NULL};
static struct fut_pg_stmt batch_stmts[PG_BATCH];

static void check_result(PGresult *res)
{
    BENCH_CHECK(res && PQresultStatus(res) == PGRES_TUPLES_OK &&
                    PQntuples(res) == 1 && PQnfields(res) == 1 &&
                    strcmp(PQgetvalue(res, 0, 0), "1") == 0,
                "pg_select1: unexpected result: %s",
                res ? PQresultErrorMessage(res) : "none");
    PQclear(res);
}

/* One task: queries (or batches) until the phase's are all claimed. */
struct worker {
    struct fut_future base;
    struct pgs *g;
    struct fut_pg *pg;
    int n; /* this await's queries */
    struct fut_pg_query q;
    PGresult *res[PG_BATCH];
};

static int worker_poll(struct fut_future *f, struct fut_context *cx)
{
    struct worker *w = (struct worker *)f;
    FUT_BEGIN(f);
    while (w->g->claimed < w->g->total) {
        w->n = w->g->batch;
        if (w->g->total - w->g->claimed < w->n)
            w->n = (int)(w->g->total - w->g->claimed);
        w->g->claimed += w->n;
        if (w->g->batch == 1)
            fut_pg_query_init(&w->q, w->pg, select1.sql, 0, NULL);
        else
            fut_pg_pipeline_init(&w->q, w->pg, w->n, batch_stmts, w->res);
        FUT_AWAIT(f, &w->q);
        BENCH_CHECK(w->q.result == 0, "pg_select1: query failed: %s",
                    fut_strerror(w->q.result));
        if (w->g->batch == 1)
            check_result(w->q.res);
        else
            for (int i = 0; i < w->n; i++)
                check_result(w->res[i]);
        w->g->done += w->n;
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(worker_vt, "pg_select1.worker", worker_poll, NULL);

/* Spawns the i-th task (bench_fanout's hook): connection i % PG_CONNS. */
static void spawn_worker(void *arg, int i, struct fut_join *h)
{
    struct pgs *g = arg;
    struct worker w;
    memset(&w, 0, sizeof w);
    fut_future_init(&w.base, &worker_vt);
    w.g = g;
    w.pg = g->pg[i % PG_CONNS];
    int r = fut_spawn(NULL, &w, sizeof w, h);
    BENCH_CHECK(r == 0, "pg_select1: spawn: %s", fut_strerror(r));
}

struct body {
    struct fut_future base;
    const char *config;  /* the RESULT config (bench_io_config) */
    const char *backend; /* the runtime's I/O backend */
    const char *conninfo;
    struct pgs *g;
    int i;
    struct client_meter meter;
    struct fut_pg_connect c;
    struct bench_fanout ph; /* a phase: every task */
    struct fut_join h[PG_CONNS * PG_PIPE_TASKS];
};

static void phase_start(struct body *b, long total)
{
    b->g->claimed = 0;
    b->g->total = total;
    b->g->done = 0;
    bench_fanout_init(&b->ph, "pg_select1", spawn_worker, b->g, b->h,
                      PG_CONNS * b->g->tasks);
}

static int body_poll(struct fut_future *f, struct fut_context *cx)
{
    struct body *b = (struct body *)f;
    FUT_BEGIN(f);
    for (b->i = 0; b->i < PG_CONNS; b->i++) {
        fut_pg_connect_init(&b->c, b->conninfo);
        FUT_AWAIT(f, &b->c);
        BENCH_CHECK(b->c.result == 0, "pg_select1: connect: %s", b->c.error);
        b->g->pg[b->i] = b->c.pg;
    }
    /* warm-up: one query (or batch) per task */
    phase_start(b, (long)PG_CONNS * b->g->tasks * b->g->batch);
    FUT_AWAIT(f, &b->ph);
    phase_start(b, b->g->batch == 1 ? PG_QUERIES : PG_PIPE_QUERIES);
    client_meter_start(&b->meter);
    FUT_AWAIT(f, &b->ph);
    {
        char extra[96];
        snprintf(extra, sizeof extra, "io_backend=%s in_flight_per_conn=%d",
                 b->backend, b->g->batch * b->g->tasks);
        client_report(&b->meter, "pg_select1", "fut", b->config,
                      (uint64_t)b->g->total, "queries_per_s", PG_CONNS,
                      extra);
    }
    BENCH_CHECK(b->g->done == b->g->total, "pg_select1: %ld results, not %ld",
                b->g->done, b->g->total);
    for (int i = 0; i < PG_CONNS; i++)
        fut_pg_close(b->g->pg[i]);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(body_vt, "pg_select1", body_poll, NULL);

static void run_pg_select1(struct fut_runtime *rt, const char *config)
{
    static struct pgs g;
    struct body b;
    memset(&b, 0, sizeof b);
    fut_future_init(&b.base, &body_vt);
    const char *pipe = getenv("BENCH_PG_PIPELINE");
    int pipelined = pipe && strcmp(pipe, "1") == 0;
    char base[64], cfg[64];
    snprintf(base, sizeof base, "%s%s", config,
             pipelined ? "_pipelined" : "");
    b.config = bench_io_config(rt, base, cfg, sizeof cfg);
    b.backend = fut_runtime_backend(rt);
    b.conninfo = getenv("BENCH_PG");
    if (!b.conninfo || !b.conninfo[0]) {
        fprintf(stderr, "bench: BENCH_PG is not set: start PostgreSQL and "
                        "give its connection string in BENCH_PG "
                        "(bench/run.sh does)\n");
        exit(2);
    }
    for (int i = 0; i < PG_BATCH; i++)
        batch_stmts[i] = select1;
    g.batch = pipelined ? PG_BATCH : 1;
    g.tasks = pipelined ? PG_PIPE_TASKS : 1;
    b.g = &g;
    bench_run_task(rt, &b.base, sizeof b);
}

static const struct bench_entry benches[] = {
    {"pg_select1", "ct", run_pg_select1},
};

int main(int argc, char **argv)
{
    return bench_main(argc, argv, benches,
                      sizeof benches / sizeof benches[0]);
}
