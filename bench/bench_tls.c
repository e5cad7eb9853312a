/* SPDX-License-Identifier: MIT */
/* TLS handshakes in one process (libfut-tls): fut's TLS server on the
 * runtime under test, fed by a client runtime (current-thread) on a thread
 * of its own with 16 connections at a time, each a full handshake (no
 * resumption) with verification on, then close_notify. What it measures
 * is where the server's private-key operation runs (docs/tls.md, "Key
 * operations"):
 *
 *   tls_hs_rsa_pool     RSA-2048, the signature on the blocking pool (the
 *                       default for RSA)
 *   tls_hs_rsa_inline   RSA-2048, the signature inside the handshake's poll
 *   tls_hs_ecdsa        ECDSA P-256 (inline, the default for ECDSA)
 *   tls_hs_ecdsa_pool   ECDSA P-256 with the signing step on the pool
 *
 * value = wall ns per handshake; extra fields: hs_per_s, and over every
 * poll of the server's handshake futures p50/p99/max/mean_poll_us and
 * polls_over_250us (about one RSA-2048 signature here), in CPU time of the polling thread (the stall a
 * signature inside a poll puts on every other connection of the worker;
 * CPU time, so that a poll the kernel preempted does not count). cpu_ms is the whole process's, the
 * client's included. Certificates are made with `openssl req` in a
 * temporary directory. Numbers from a 2-core machine are rough: the
 * client thread and the pool threads share the cores with the server. */
#include <pthread.h>
#include <sys/socket.h>

#include "common.h"
#include "fut/fiber.h"
#include "fut/net.h"
#include "fut/tls.h"

#define CONC 16

static struct {
    struct fut_tls_ctx *sctx, *cctx;
    struct fut_io *listener;
    int port;
    int total;
    pthread_mutex_t lock;
    int64_t max_poll, sum_poll;
    long polls, slow_polls, done, failed;
    int64_t *poll_ns; /* every poll's CPU time, for the percentiles */
    long poll_cap;
} S;

/* ------------------------------------------------------------- server */

/* The server's handshake future, each poll timed. */
#define POLLS_KEPT 16
struct timed_hs {
    struct fut_future base;
    struct fut_tls_handshake hs;
    int64_t max, sum;
    long polls, slow;
    int64_t each[POLLS_KEPT];
    int result;
};

/* CPU time of this thread: a poll the kernel preempts on a loaded
 * machine is not counted as long. */
static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int timed_poll(struct fut_future *fb, struct fut_context *cx)
{
    struct timed_hs *f = (struct timed_hs *)fb;
    int64_t t0 = thread_cpu_ns();
    int r = fut_poll(&f->hs.base, cx);
    int64_t d = thread_cpu_ns() - t0;
    if (f->polls < POLLS_KEPT)
        f->each[f->polls] = d;
    f->polls++;
    f->sum += d;
    if (d > f->max)
        f->max = d;
    if (d >= 250000)
        f->slow++;
    if (r == FUT_READY)
        f->result = f->hs.result;
    return r;
}

static void timed_drop(struct fut_future *fb)
{
    fut_drop(&((struct timed_hs *)fb)->hs.base);
}

static const struct fut_future_vtable timed_vt = {timed_poll, timed_drop,
                                                  "timed_hs", NULL};

static intptr_t conn_fn(void *arg)
{
    struct fut_io *io = arg;
    struct fut_tls *t = NULL;
    BENCH_CHECK(fut_tls_new(S.sctx, io, NULL, &t) == 0, "fut_tls_new");
    struct timed_hs th;
    memset(&th, 0, sizeof th);
    fut_future_init(&th.base, &timed_vt);
    fut_tls_handshake_init(&th.hs, t);
    fut_await(&th);
    if (th.result == 0)
        (void)fut_tls_shutdown(t);
    fut_tls_free(t);
    fut_io_close(io);
    pthread_mutex_lock(&S.lock);
    if (th.max > S.max_poll)
        S.max_poll = th.max;
    S.sum_poll += th.sum;
    S.polls += th.polls;
    S.slow_polls += th.slow;
    for (long i = 0; i < th.polls && i < POLLS_KEPT; i++)
        if (S.polls - th.polls + i < S.poll_cap)
            S.poll_ns[S.polls - th.polls + i] = th.each[i];
    S.failed += th.result != 0;
    S.done++;
    pthread_mutex_unlock(&S.lock);
    return 0;
}

static intptr_t accept_fn(void *arg)
{
    (void)arg;
    for (int i = 0; i < S.total; i++) {
        struct fut_io *io = NULL;
        int r = fut_accept(S.listener, &io);
        BENCH_CHECK(r == 0, "accept: %s", fut_strerror(r));
        r = fut_fiber_spawn(NULL, conn_fn, io, NULL, NULL);
        BENCH_CHECK(r == 0, "spawn: %s", fut_strerror(r));
    }
    for (;;) {
        pthread_mutex_lock(&S.lock);
        long done = S.done;
        pthread_mutex_unlock(&S.lock);
        if (done == S.total)
            return 0;
        fut_sleep(1000000);
    }
}

/* ------------------------------------------------------------- client */

static int client_left; /* handshakes not yet started (client thread) */

static intptr_t client_fn(void *arg)
{
    (void)arg;
    struct sockaddr_storage ss;
    socklen_t len;
    fut_addr_parse("127.0.0.1", S.port, &ss, &len);
    while (client_left > 0) {
        client_left--;
        struct fut_io *io = NULL;
        int r = fut_connect((struct sockaddr *)&ss, len, -1, &io);
        BENCH_CHECK(r == 0, "connect: %s", fut_strerror(r));
        struct fut_tls *t = NULL;
        BENCH_CHECK(fut_tls_new(S.cctx, io, "localhost", &t) == 0,
                    "fut_tls_new");
        r = fut_tls_handshake(t);
        BENCH_CHECK(r == 0, "client handshake: %s (%s)", fut_strerror(r),
                    fut_tls_error_message(t));
        char c;
        (void)fut_tls_read(t, &c, 1); /* the server's close_notify */
        fut_tls_free(t);
        fut_io_close(io);
    }
    return 0;
}

static void *client_thread(void *arg)
{
    (void)arg;
    struct fut_runtime *rt = NULL;
    BENCH_CHECK(fut_runtime_new(NULL, &rt) == 0, "client runtime");
    struct fut_join j[CONC];
    for (int i = 0; i < CONC; i++)
        BENCH_CHECK(fut_fiber_spawn(rt, client_fn, NULL, NULL, &j[i]) == 0,
                    "client spawn");
    for (int i = 0; i < CONC; i++) {
        BENCH_CHECK(fut_block_on(rt, &j[i].base) == 0, "client block_on");
        fut_drop(&j[i].base);
    }
    fut_runtime_free(rt);
    return NULL;
}

/* --------------------------------------------------------------- runs */

static char dir[64], crt[128], key[128];

static void make_cert(const char *newkey)
{
    strcpy(dir, "/tmp/fut-bench-tls-XXXXXX");
    BENCH_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    snprintf(crt, sizeof crt, "%s/c.crt", dir);
    snprintf(key, sizeof key, "%s/c.key", dir);
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "openssl req -x509 %s -nodes -keyout %s -out %s -days 2 "
             "-subj /CN=localhost -addext subjectAltName=DNS:localhost "
             ">/dev/null 2>&1",
             newkey, key, crt);
    BENCH_CHECK(system(cmd) == 0, "openssl req failed: %s", cmd);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void run(struct fut_runtime *rt, const char *config, const char *name,
                const char *newkey, enum fut_tls_keyop mode, int total)
{
    make_cert(newkey);
    memset(&S, 0, sizeof S);
    pthread_mutex_init(&S.lock, NULL);
    S.total = total;
    S.poll_cap = (long)total * POLLS_KEPT;
    S.poll_ns = calloc((size_t)S.poll_cap, sizeof *S.poll_ns);
    BENCH_CHECK(S.poll_ns != NULL, "calloc");
    BENCH_CHECK(fut_tls_ctx_new(FUT_TLS_SERVER, &S.sctx) == 0, "ctx");
    BENCH_CHECK(fut_tls_ctx_use_cert_files(S.sctx, crt, key) == 0, "%s",
                fut_tls_ctx_error_message(S.sctx));
    BENCH_CHECK(fut_tls_ctx_set_key_offload(S.sctx, mode) == 0, "keyop");
    BENCH_CHECK(fut_tls_ctx_new(FUT_TLS_CLIENT, &S.cctx) == 0, "ctx");
    BENCH_CHECK(fut_tls_ctx_trust_file(S.cctx, crt) == 0, "trust");
    struct sockaddr_storage ss;
    socklen_t len;
    fut_addr_parse("127.0.0.1", 0, &ss, &len);
    BENCH_CHECK(
        fut_tcp_listen((struct sockaddr *)&ss, len, 1024, &S.listener) == 0,
        "listen");
    BENCH_CHECK(fut_io_local_addr(S.listener, &ss, &len) == 0, "addr");
    S.port = fut_addr_port(&ss);
    client_left = total;

    struct bench_meter m;
    bench_meter_start(&m);
    struct fut_join js;
    BENCH_CHECK(fut_fiber_spawn(rt, accept_fn, NULL, NULL, &js) == 0,
                "spawn");
    pthread_t th;
    BENCH_CHECK(pthread_create(&th, NULL, client_thread, NULL) == 0,
                "thread");
    BENCH_CHECK(fut_block_on(rt, &js.base) == 0, "block_on");
    fut_drop(&js.base);
    pthread_join(th, NULL);
    double secs = (double)(bench_now_ns() - m.t0) / 1e9;
    BENCH_CHECK(S.failed == 0, "%ld server handshakes failed", S.failed);
    long kept = S.polls < S.poll_cap ? S.polls : S.poll_cap;
    qsort(S.poll_ns, (size_t)kept, sizeof *S.poll_ns, cmp_i64);
    char extra[256];
    snprintf(extra, sizeof extra,
             "hs_per_s=%.0f polls=%ld p50_poll_us=%.1f p99_poll_us=%.1f "
             "max_poll_us=%.0f mean_poll_us=%.1f polls_over_250us=%ld",
             total / secs, S.polls,
             kept ? (double)S.poll_ns[kept / 2] / 1e3 : 0.0,
             kept ? (double)S.poll_ns[kept * 99 / 100] / 1e3 : 0.0,
             (double)S.max_poll / 1e3,
             (double)S.sum_poll / 1e3 / (double)(S.polls ? S.polls : 1),
             S.slow_polls);
    free(S.poll_ns);
    bench_report(&m, name, config, (uint64_t)total, "ns/handshake", extra);
    fut_io_close(S.listener);
    fut_tls_ctx_free(S.sctx);
    fut_tls_ctx_free(S.cctx);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    BENCH_CHECK(system(cmd) == 0, "rm");
}

static void run_rsa_pool(struct fut_runtime *rt, const char *config)
{
    run(rt, config, "tls_hs_rsa_pool", "-newkey rsa:2048", FUT_TLS_KEYOP_POOL,
        600);
}

static void run_rsa_inline(struct fut_runtime *rt, const char *config)
{
    run(rt, config, "tls_hs_rsa_inline", "-newkey rsa:2048",
        FUT_TLS_KEYOP_INLINE, 600);
}

static void run_ecdsa(struct fut_runtime *rt, const char *config)
{
    run(rt, config, "tls_hs_ecdsa",
        "-newkey ec -pkeyopt ec_paramgen_curve:P-256", FUT_TLS_KEYOP_AUTO,
        2000);
}

static void run_ecdsa_pool(struct fut_runtime *rt, const char *config)
{
    run(rt, config, "tls_hs_ecdsa_pool",
        "-newkey ec -pkeyopt ec_paramgen_curve:P-256", FUT_TLS_KEYOP_POOL,
        2000);
}

static const struct bench_entry benches[] = {
    {"tls_hs_rsa_pool", "ct mt1 mt2", run_rsa_pool},
    {"tls_hs_rsa_inline", "ct mt1 mt2", run_rsa_inline},
    {"tls_hs_ecdsa", "ct mt1 mt2", run_ecdsa},
    {"tls_hs_ecdsa_pool", "ct mt1 mt2", run_ecdsa_pool},
};

int main(int argc, char **argv)
{
    return bench_main(argc, argv, benches,
                      sizeof benches / sizeof benches[0]);
}
