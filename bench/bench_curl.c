/* SPDX-License-Identifier: MIT */
/* curl_get (issue 32): 10,000 small GETs from nginx over 50 connections,
 * through fut's libcurl adapter (include/fut/curl.h) on the current-thread
 * runtime: one fut_curl_multi, 50 easy handles, each driven by a task
 * that runs one transfer after another (fut_curl_transfer) until 10,000
 * were claimed. The reference is bench/curl_multi_poll.c (libcurl's own
 * curl_multi_poll loop) with the same handles, options and counts; both
 * against the same nginx (bench/run.sh starts it and sets BENCH_PORT).
 *
 * Warm-up: one transfer per handle first (the 50 connections are opened
 * there), then the timed 10,000 on the kept-alive connections
 * ('new_conns' = connections curl opened in the timed part: 0 expected).
 * Each transfer must end CURLE_OK with status 200 and the body "hello"
 * (the byte count is checked). Value: client CPU (user + sys of this
 * process) per transfer, bench/client.h.
 *
 *   [FUT_IO_BACKEND=epoll|io_uring] BENCH_PORT=<nginx's port> bench_curl bench curl_get ct
 *
 * The RESULT config says the I/O backend the runtime got
 * (bench_io_config): current_thread on epoll, current_thread_uring on
 * io_uring; io_backend= says it too.
 */
#include <curl/curl.h>

#include "client.h"
#include "common.h"
#include "fut/curl.h"

#define CG_CONNS 50
#define CG_TRANSFERS 10000
#define CG_BODY 5 /* "hello" */

/* What the workers share (one thread: the current-thread runtime). */
struct cg {
    struct fut_curl_multi *m;
    CURL *easy[CG_CONNS];
    size_t bytes;   /* body bytes received */
    int claimed;    /* transfers started */
    int total;      /* transfers to run in this phase */
    long new_conns; /* connections opened (CURLINFO_NUM_CONNECTS) */
};

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    (void)p;
    ((struct cg *)ud)->bytes += size * n;
    return size * n;
}

/* One easy handle's task: transfers until the phase's are all claimed. */
struct worker {
    struct fut_future base;
    struct cg *g;
    CURL *e;
    struct fut_curl_transfer t;
};

static int worker_poll(struct fut_future *f, struct fut_context *cx)
{
    struct worker *w = (struct worker *)f;
    FUT_BEGIN(f);
    while (w->g->claimed < w->g->total) {
        w->g->claimed++;
        fut_curl_transfer_init(&w->t, w->g->m, w->e);
        FUT_AWAIT(f, &w->t);
        BENCH_CHECK(w->t.result == 0 && w->t.code == CURLE_OK,
                    "curl_get: transfer failed: %s / %s",
                    fut_strerror(w->t.result), curl_easy_strerror(w->t.code));
        long status = 0, conns = 0;
        curl_easy_getinfo(w->e, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(w->e, CURLINFO_NUM_CONNECTS, &conns);
        BENCH_CHECK(status == 200, "curl_get: HTTP status %ld", status);
        w->g->new_conns += conns;
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(worker_vt, "curl_get.worker", worker_poll, NULL);

/* Spawns the i-th handle's task (bench_fanout's hook). */
static void spawn_worker(void *arg, int i, struct fut_join *h)
{
    struct cg *g = arg;
    struct worker w;
    fut_future_init(&w.base, &worker_vt);
    w.g = g;
    w.e = g->easy[i];
    int r = fut_spawn(NULL, &w, sizeof w, h);
    BENCH_CHECK(r == 0, "curl_get: spawn: %s", fut_strerror(r));
}

struct body {
    struct fut_future base;
    const char *config;  /* the RESULT config (bench_io_config) */
    const char *backend; /* the runtime's I/O backend */
    struct cg *g;
    struct client_meter meter;
    struct bench_fanout ph; /* a phase: the 50 tasks */
    struct fut_join h[CG_CONNS];
};

static void phase_start(struct body *b, int total)
{
    b->g->claimed = 0;
    b->g->total = total;
    b->g->bytes = 0;
    b->g->new_conns = 0;
    bench_fanout_init(&b->ph, "curl_get", spawn_worker, b->g, b->h, CG_CONNS);
}

static int body_poll(struct fut_future *f, struct fut_context *cx)
{
    struct body *b = (struct body *)f;
    FUT_BEGIN(f);
    phase_start(b, CG_CONNS); /* warm-up: opens the connections */
    FUT_AWAIT(f, &b->ph);
    BENCH_CHECK(b->g->bytes == (size_t)CG_CONNS * CG_BODY,
                "curl_get: warm-up got %zu body bytes", b->g->bytes);
    phase_start(b, CG_TRANSFERS);
    client_meter_start(&b->meter);
    FUT_AWAIT(f, &b->ph);
    {
        char extra[96];
        snprintf(extra, sizeof extra, "new_conns=%ld io_backend=%s",
                 b->g->new_conns, b->backend);
        client_report(&b->meter, "curl_get", "fut", b->config, CG_TRANSFERS,
                      "transfers_per_s", CG_CONNS, extra);
    }
    BENCH_CHECK(b->g->bytes == (size_t)CG_TRANSFERS * CG_BODY,
                "curl_get: got %zu body bytes, not %d", b->g->bytes,
                CG_TRANSFERS * CG_BODY);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(body_vt, "curl_get", body_poll, NULL);

/* The multi is made and freed on the runtime's thread (fut_curl_multi_new
 * needs a running runtime): in tasks of their own around the body. */
struct multi_op {
    struct fut_future base;
    struct cg *g;
    int make; /* 1: fut_curl_multi_new, 0: fut_curl_multi_free */
};

static int multi_op_poll(struct fut_future *f, struct fut_context *cx)
{
    struct multi_op *o = (struct multi_op *)f;
    (void)cx;
    if (o->make) {
        int r = fut_curl_multi_new(&o->g->m);
        BENCH_CHECK(r == 0, "fut_curl_multi_new: %s", fut_strerror(r));
        curl_multi_setopt(fut_curl_multi_handle(o->g->m),
                          CURLMOPT_MAXCONNECTS, (long)CG_CONNS);
    } else {
        fut_curl_multi_free(o->g->m);
        o->g->m = NULL;
    }
    return FUT_READY;
}
static const struct fut_future_vtable multi_op_vt = {multi_op_poll, NULL,
                                                     "curl_get.multi", NULL};

static void run_curl_get(struct fut_runtime *rt, const char *config)
{
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/",
             client_port("BENCH_PORT", "nginx"));
    BENCH_CHECK(curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK,
                "curl_global_init failed");
    static struct cg g;
    for (int i = 0; i < CG_CONNS; i++) {
        CURL *e = curl_easy_init();
        BENCH_CHECK(e != NULL, "curl_easy_init failed");
        curl_easy_setopt(e, CURLOPT_URL, url);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, &g);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        g.easy[i] = e;
    }
    struct multi_op op = {.g = &g, .make = 1};
    fut_future_init(&op.base, &multi_op_vt);
    bench_run_task(rt, &op.base, sizeof op);
    struct body b;
    memset(&b, 0, sizeof b);
    fut_future_init(&b.base, &body_vt);
    char cfg[64];
    b.config = bench_io_config(rt, config, cfg, sizeof cfg);
    b.backend = fut_runtime_backend(rt);
    b.g = &g;
    bench_run_task(rt, &b.base, sizeof b);
    op.make = 0;
    fut_future_init(&op.base, &multi_op_vt);
    bench_run_task(rt, &op.base, sizeof op);
    for (int i = 0; i < CG_CONNS; i++)
        curl_easy_cleanup(g.easy[i]);
    curl_global_cleanup();
}

static const struct bench_entry benches[] = {
    {"curl_get", "ct", run_curl_get},
};

int main(int argc, char **argv)
{
    return bench_main(argc, argv, benches,
                      sizeof benches / sizeof benches[0]);
}
