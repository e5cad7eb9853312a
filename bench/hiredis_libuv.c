/* SPDX-License-Identifier: MIT */
/* hiredis_get's reference (issue 32): the same GETs as bench_hiredis.c -
 * one key, 50 connections, one command in flight per connection, 200,000
 * timed - with hiredis on its own libuv adapter (hiredis/adapters/libuv.h,
 * in libhiredis-dev) on uv_default_loop(), no fut. The same setup (SET of
 * the key to "xxx", one warm-up GET per connection: the connects complete
 * there), the same command ("GET %s", formatted per command) and checks
 * (every reply the string "xxx"). A reply callback sends its connection's
 * next GET while GETs remain to be claimed, as bench_hiredis.c's task
 * runs its next command; hiredis frees each reply after the callback.
 *
 *   BENCH_PORT=<redis-server's port> hiredis_libuv
 * prints 'RESULT bench=hiredis_get peer=hiredis config=libuv ...'
 * (bench/client.h). Plain C against hiredis and libuv, built with the
 * benchmarks when pkg-config finds both (bench/CMakeLists.txt).
 */
#include <hiredis/adapters/libuv.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <string.h>
#include <uv.h>

#include "client.h"

#define HG_CONNS 50
#define HG_GETS 200000
#define HG_KEY "fut:bench:hiredis_get"
#define HG_VALUE "xxx"

static redisAsyncContext *ctx[HG_CONNS];
static int claimed, total, done, phase; /* phase 0: SET, 1: warm-up, 2 */
static struct client_meter meter;

static void start_phase(int which, int n);

static void send_get(redisAsyncContext *ac);

static void on_get(redisAsyncContext *ac, void *reply, void *priv)
{
    redisReply *rep = reply;
    (void)priv;
    CLIENT_CHECK(rep != NULL, "hiredis_get: GET failed: %s",
                 ac->errstr[0] ? ac->errstr : "no reply");
    CLIENT_CHECK(rep->type == REDIS_REPLY_STRING && rep->len == 3 &&
                     memcmp(rep->str, HG_VALUE, 3) == 0,
                 "hiredis_get: unexpected reply (type %d)", rep->type);
    done++;
    if (claimed < total) {
        send_get(ac);
        return;
    }
    if (done < total)
        return;
    if (phase == 1) {
        start_phase(2, HG_GETS);
        return;
    }
    client_report(&meter, "hiredis_get", "hiredis", "libuv", HG_GETS,
                  "commands_per_s", HG_CONNS, NULL);
    for (int i = 0; i < HG_CONNS; i++)
        redisAsyncDisconnect(ctx[i]); /* the loop ends with the last */
}

static void send_get(redisAsyncContext *ac)
{
    claimed++;
    CLIENT_CHECK(redisAsyncCommand(ac, on_get, NULL, "GET %s", HG_KEY) ==
                     REDIS_OK,
                 "hiredis_get: redisAsyncCommand failed");
}

/* Phase 1: one GET per connection; phase 2: the timed 'n'. */
static void start_phase(int which, int n)
{
    phase = which;
    claimed = done = 0;
    total = n;
    if (which == 2)
        client_meter_start(&meter);
    for (int i = 0; i < HG_CONNS && claimed < total; i++)
        send_get(ctx[i]);
}

static void on_set(redisAsyncContext *ac, void *reply, void *priv)
{
    redisReply *rep = reply;
    (void)priv;
    CLIENT_CHECK(rep != NULL && rep->type != REDIS_REPLY_ERROR,
                 "hiredis_get: SET failed: %s", rep ? rep->str : ac->errstr);
    start_phase(1, HG_CONNS);
}

int main(void)
{
    int port = client_port("BENCH_PORT", "redis-server");
    uv_loop_t *loop = uv_default_loop();
    for (int i = 0; i < HG_CONNS; i++) {
        ctx[i] = redisAsyncConnect("127.0.0.1", port);
        CLIENT_CHECK(ctx[i] != NULL && !ctx[i]->err,
                     "hiredis_get: connect: %s",
                     ctx[i] ? ctx[i]->errstr : "out of memory");
        CLIENT_CHECK(redisLibuvAttach(ctx[i], loop) == REDIS_OK,
                     "hiredis_get: redisLibuvAttach failed");
    }
    CLIENT_CHECK(redisAsyncCommand(ctx[0], on_set, NULL, "SET %s %s", HG_KEY,
                                   HG_VALUE) == REDIS_OK,
                 "hiredis_get: redisAsyncCommand failed");
    uv_run(loop, UV_RUN_DEFAULT);
    CLIENT_CHECK(phase == 2 && done == HG_GETS,
                 "hiredis_get: %d replies, not %d", done, HG_GETS);
    uv_loop_close(loop);
    return 0;
}
