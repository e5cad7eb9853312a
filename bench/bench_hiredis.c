/* SPDX-License-Identifier: MIT */
/* hiredis_get (issue 32): GET of one key over 50 connections to one
 * redis-server, through fut's hiredis adapter (include/fut/hiredis.h) on
 * the current-thread runtime: 50 contexts, a task each that runs one GET
 * after another (fut_redis_cmd, one command in flight per connection, as
 * redis-benchmark -P 1) until 200,000 were claimed. The reference is
 * bench/hiredis_libuv.c (hiredis on its own libuv adapter) with the same
 * key, value, counts and checks; both against the same redis-server
 * (bench/run.sh starts it and sets BENCH_PORT).
 *
 * Setup: SET of the key (value "xxx", redis-benchmark's), then a warm-up
 * GET on every connection (the connects complete there), then the timed
 * 200,000 GETs. Every reply must be the string "xxx"; its reply object is
 * freed (freeReplyObject), as the reference's is by hiredis. Value: client
 * CPU (user + sys of this process) per command, bench/client.h.
 *
 *   [FUT_IO_BACKEND=epoll|io_uring] BENCH_PORT=<redis-server's port> bench_hiredis bench hiredis_get ct
 *
 * The RESULT config says the I/O backend the runtime got
 * (bench_io_config): current_thread on epoll, current_thread_uring on
 * io_uring; io_backend= says it too.
 */
#include <hiredis/hiredis.h>

#include "client.h"
#include "common.h"
#include "fut/hiredis.h"

#define HG_CONNS 50
#define HG_GETS 200000
#define HG_KEY "fut:bench:hiredis_get"
#define HG_VALUE "xxx"

/* What the workers share (one thread: the current-thread runtime). */
struct hg {
    struct fut_redis *r[HG_CONNS];
    int claimed; /* GETs started */
    int total;   /* GETs to run in this phase */
    int done;    /* replies checked */
};

static void check_reply(int result, redisReply *rep)
{
    BENCH_CHECK(result == 0, "hiredis_get: GET failed: %s",
                fut_strerror(result));
    BENCH_CHECK(rep->type == REDIS_REPLY_STRING && rep->len == 3 &&
                    memcmp(rep->str, HG_VALUE, 3) == 0,
                "hiredis_get: unexpected reply (type %d)", rep->type);
    freeReplyObject(rep);
}

/* One connection's task: GETs until the phase's are all claimed. */
struct worker {
    struct fut_future base;
    struct hg *g;
    struct fut_redis *r;
    struct fut_redis_cmd c;
};

static int worker_poll(struct fut_future *f, struct fut_context *cx)
{
    struct worker *w = (struct worker *)f;
    FUT_BEGIN(f);
    while (w->g->claimed < w->g->total) {
        w->g->claimed++;
        fut_redis_cmd_init(&w->c, w->r, "GET %s", HG_KEY);
        FUT_AWAIT(f, &w->c);
        check_reply(w->c.result, w->c.reply);
        w->g->done++;
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(worker_vt, "hiredis_get.worker", worker_poll, NULL);

/* Spawns the i-th connection's task (bench_fanout's hook). */
static void spawn_worker(void *arg, int i, struct fut_join *h)
{
    struct hg *g = arg;
    struct worker w;
    fut_future_init(&w.base, &worker_vt);
    w.g = g;
    w.r = g->r[i];
    int r = fut_spawn(NULL, &w, sizeof w, h);
    BENCH_CHECK(r == 0, "hiredis_get: spawn: %s", fut_strerror(r));
}

struct body {
    struct fut_future base;
    const char *config;  /* the RESULT config (bench_io_config) */
    const char *backend; /* the runtime's I/O backend */
    int port;
    struct hg *g;
    struct client_meter meter;
    struct fut_redis_cmd set;
    struct bench_fanout ph; /* a phase: the 50 tasks */
    struct fut_join h[HG_CONNS];
};

static void phase_start(struct body *b, int total)
{
    b->g->claimed = 0;
    b->g->total = total;
    b->g->done = 0;
    bench_fanout_init(&b->ph, "hiredis_get", spawn_worker, b->g, b->h,
                      HG_CONNS);
}

static int body_poll(struct fut_future *f, struct fut_context *cx)
{
    struct body *b = (struct body *)f;
    FUT_BEGIN(f);
    for (int i = 0; i < HG_CONNS; i++) {
        int r = fut_redis_connect("127.0.0.1", b->port, &b->g->r[i]);
        BENCH_CHECK(r == 0, "hiredis_get: connect: %s", fut_strerror(r));
    }
    fut_redis_cmd_init(&b->set, b->g->r[0], "SET %s %s", HG_KEY, HG_VALUE);
    FUT_AWAIT(f, &b->set);
    BENCH_CHECK(b->set.result == 0 && b->set.reply->type != REDIS_REPLY_ERROR,
                "hiredis_get: SET failed: %s", fut_strerror(b->set.result));
    freeReplyObject(b->set.reply);
    phase_start(b, HG_CONNS); /* warm-up: one GET per connection */
    FUT_AWAIT(f, &b->ph);
    phase_start(b, HG_GETS);
    client_meter_start(&b->meter);
    FUT_AWAIT(f, &b->ph);
    {
        char extra[64];
        snprintf(extra, sizeof extra, "io_backend=%s", b->backend);
        client_report(&b->meter, "hiredis_get", "fut", b->config, HG_GETS,
                      "commands_per_s", HG_CONNS, extra);
    }
    BENCH_CHECK(b->g->done == HG_GETS, "hiredis_get: %d replies, not %d",
                b->g->done, HG_GETS);
    for (int i = 0; i < HG_CONNS; i++)
        fut_redis_close(b->g->r[i]);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(body_vt, "hiredis_get", body_poll, NULL);

static void run_hiredis_get(struct fut_runtime *rt, const char *config)
{
    static struct hg g;
    struct body b;
    memset(&b, 0, sizeof b);
    fut_future_init(&b.base, &body_vt);
    char cfg[64];
    b.config = bench_io_config(rt, config, cfg, sizeof cfg);
    b.backend = fut_runtime_backend(rt);
    b.port = client_port("BENCH_PORT", "redis-server");
    b.g = &g;
    bench_run_task(rt, &b.base, sizeof b);
}

static const struct bench_entry benches[] = {
    {"hiredis_get", "ct", run_hiredis_get},
};

int main(int argc, char **argv)
{
    return bench_main(argc, argv, benches,
                      sizeof benches / sizeof benches[0]);
}
