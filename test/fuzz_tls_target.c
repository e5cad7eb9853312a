/* SPDX-License-Identifier: MIT */
/* The fuzz target of libfut-tls's server side: one input is what a
 * client sends on one connection. Its first byte picks the server's key
 * (even: ECDSA P-256, signing inline; odd: RSA-2048, whose signing step
 * runs on the blocking pool); the rest (at most 64 KiB) is written into
 * one end of a Unix socket pair, followed by EOF, and a fut TLS server
 * stream on the other end runs its handshake and then reads until the
 * end, under a 5 s deadline, on a current-thread runtime kept across
 * inputs. Whatever the bytes, the server must finish with a result (a
 * TLS error, FUT_ETLSTRUNC, ...) and leave nothing allocated through
 * fut's hook; ASan and LSan watch the rest.
 *
 * Built twice: as a libFuzzer program (tls_fuzz, clang -fsanitize=fuzzer,
 * in the ASan build: the test tls_fuzz.run) and into the test
 * tls_fuzz_replay, which runs the seed corpus (test/fuzz/tls) in every
 * build. Certificates are made with `openssl req` at the first input. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fut.h"
#include "fut/tls.h"
#include "tls_certs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void tls_fuzz_teardown(void);

static struct fut_runtime *rt;
static long live = -1; /* blocks live after the warm-up */
static intptr_t one_input(const uint8_t *data, size_t size);
static struct fut_tls_ctx *ctx[2]; /* ECDSA, RSA */

static void setup(void)
{
    char dir[64] = "/tmp/fut-tls-fuzz-XXXXXX";
    char crt[2][128], key[2][128];
    if (!mkdtemp(dir))
        abort();
    static const char *const newkey[2] = {
        "-newkey ec -pkeyopt ec_paramgen_curve:P-256", "-newkey rsa:2048"};
    for (int i = 0; i < 2; i++) {
        snprintf(crt[i], sizeof crt[i], "%s/%d.crt", dir, i);
        snprintf(key[i], sizeof key[i], "%s/%d.key", dir, i);
        if (tls_make_cert(newkey[i], crt[i], key[i], NULL) != 0 ||
            fut_tls_ctx_new(FUT_TLS_SERVER, &ctx[i]) != 0 ||
            fut_tls_ctx_use_cert_files(ctx[i], crt[i], key[i]) != 0) {
            fprintf(stderr, "tls fuzz: no certificate (openssl req)\n");
            abort();
        }
    }
    tls_remove_dir(dir);
    static const char *const alpn[] = {"h2", "http/1.1"};
    for (int i = 0; i < 2; i++)
        if (fut_tls_ctx_set_alpn(ctx[i], alpn, 2) != 0)
            abort();
    if (fut_runtime_new(NULL, &rt) != 0)
        abort();
    /* The runtime keeps caches (a fiber stack, slab pages, the blocking
     * pool's) from their first use on: after one input on each key, what
     * is live is the level every input must come back to. */
    static const uint8_t warm[2][4] = {{0, 0x16, 3, 1}, {1, 0x16, 3, 1}};
    for (int i = 0; i < 2; i++)
        (void)one_input(warm[i], sizeof warm[i]);
    live = fut_alloc_live();
}

/* For the replay test: what the target made goes (its leak check). */
void tls_fuzz_teardown(void)
{
    if (!rt)
        return;
    fut_runtime_free(rt);
    fut_tls_ctx_free(ctx[0]);
    fut_tls_ctx_free(ctx[1]);
    rt = NULL;
    ctx[0] = ctx[1] = NULL;
    live = -1;
}

struct serve {
    struct fut_tls_ctx *ctx;
    struct fut_io *io;
};

static intptr_t serve_fn(void *arg)
{
    struct serve *s = arg;
    struct fut_tls *t = NULL;
    if (fut_tls_new(s->ctx, s->io, NULL, &t) != 0)
        abort();
    struct fut_tls_handshake hs;
    fut_tls_handshake_init(&hs, t);
    int r = fut_timeout_await(&hs, 5LL * 1000 * 1000 * 1000);
    if (r == 0)
        r = hs.result;
    if (r == 0) {
        char buf[4096];
        while (fut_tls_read(t, buf, sizeof buf) > 0) {
        }
    }
    if (r != FUT_ETIMEDOUT)
        (void)fut_tls_shutdown(t); /* an alert, or close_notify */
    fut_tls_free(t);
    return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!rt)
        setup();
    if (size == 0)
        return 0;
    intptr_t v = one_input(data, size);
    /* A deadline hit means the server hung on bytes that ended. Slack of
     * two blocks: a pool thread that woke the fiber's task (the RSA
     * step) may drop its last reference to the task a moment after the
     * fiber returned; a leak per input passes the slack at once, and the
     * replay test checks for none exactly after tls_fuzz_teardown. */
    if (v == FUT_ETIMEDOUT || fut_alloc_live() > live + 2) {
        fprintf(stderr,
                "tls fuzz: %s, %ld blocks more than after the "
                "warm-up\n",
                fut_strerror((int)v), fut_alloc_live() - live);
        abort();
    }
    return 0;
}

/* One input on its connection; the server fiber's result. */
static intptr_t one_input(const uint8_t *data, size_t size)
{
    struct serve s;
    s.ctx = ctx[data[0] & 1];
    data++;
    size--;
    if (size > 65536)
        size = 65536;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        abort();
    int big = 1 << 20;
    (void)setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    for (size_t off = 0; off < size;) {
        ssize_t n = write(sv[1], data + off, size - off);
        if (n <= 0)
            abort();
        off += (size_t)n;
    }
    shutdown(sv[1], SHUT_WR);
    fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
    if (fut_io_from_fd(sv[0], &s.io) != 0)
        abort();
    struct fut_fiber_opts o;
    fut_fiber_opts_init(&o);
    o.stack_size = 256 * 1024;
    intptr_t v = 0;
    if (fut_fiber_run(rt, serve_fn, &s, &o, &v) != 0)
        abort();
    fut_io_close(s.io);
    close(sv[1]);
    return v;
}
