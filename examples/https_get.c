/* SPDX-License-Identifier: MIT */
/* https_get: fetches one page over TLS with verification on (libfut-tls,
 * fut/tls.h), in a fiber (fut/fiber.h).
 *
 * Run it:
 *   ./build/examples/https_get example.com 443 /
 *   ./build/examples/https_get --cacert cert.pem localhost 8443 /
 * Options: --cacert FILE (trust these CA certificates instead of the
 * system store), --timeout SECS (the whole fetch; default 10), then HOST
 * PORT [PATH] (default "/").
 *
 * Behaviour: resolves HOST (fut_getaddrinfo, on the blocking pool),
 * connects to the first address that answers, handshakes with SNI and
 * the host-name check for HOST (an IP literal is checked as an IP),
 * ALPN "http/1.1", sends "GET PATH HTTP/1.1" with "Connection: close",
 * reads until the server closes, and prints on stdout
 *   status 200 bytes 1256 tls TLSv1.3 alpn http/1.1
 * (the status code, the size of the body: what follows the head, chunked
 * framing included - this example is about TLS, not HTTP). Exit 0 when
 * the status is 2xx, 1 for another status, 2 when the fetch failed (a
 * refused certificate says why on stderr: "certificate verify failed:
 * ..."). The server's close without close_notify (FUT_ETLSTRUNC) after a
 * complete answer is accepted, as curl does. */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdline.h"
#include "fut.h"
#include "fut/tls.h"

#define RESP_MAX (64 << 20) /* a larger answer is cut here */

struct get {
    struct fut_tls_ctx *ctx;
    const char *host, *port, *path;
    int64_t deadline;
    int status;
    size_t body;
    char version[16], alpn[32];
};

/* Connects to the first address of host:port that answers. 0 or a code. */
static int dial(struct get *g, struct fut_io **io)
{
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    struct fut_getaddrinfo gai;
    fut_getaddrinfo_init(&gai, g->host, g->port, &hints);
    int r = fut_await(&gai);
    if (r == 0)
        r = gai.result;
    if (r != 0) {
        fprintf(stderr, "https_get: %s: %s\n", g->host, fut_strerror(r));
        return r;
    }
    r = -ENOENT;
    for (struct addrinfo *a = gai.res; a && r != 0; a = a->ai_next)
        r = fut_connect(a->ai_addr, a->ai_addrlen, g->deadline, io);
    freeaddrinfo(gai.res);
    if (r != 0)
        fprintf(stderr, "https_get: connect %s:%s: %s\n", g->host, g->port,
                fut_strerror(r));
    return r;
}

static intptr_t fetch(void *arg)
{
    struct get *g = arg;
    struct fut_io *io = NULL;
    struct fut_tls *t = NULL;
    char *buf = NULL;
    int r;
    if ((r = dial(g, &io)) != 0 || (r = fut_tls_new(g->ctx, io, g->host, &t)))
        goto out;
    struct fut_tls_handshake hs;
    fut_tls_handshake_init(&hs, t);
    r = fut_timeout_await(&hs, g->deadline - fut_now_ns());
    if (r == 0)
        r = hs.result;
    if (r != 0) {
        fprintf(stderr, "https_get: handshake: %s%s%s\n", fut_strerror(r),
                fut_tls_error_message(t)[0] ? ": " : "",
                fut_tls_error_message(t));
        (void)fut_tls_shutdown(t); /* the alert, if any */
        goto out;
    }
    snprintf(g->version, sizeof g->version, "%s", fut_tls_version(t));
    snprintf(g->alpn, sizeof g->alpn, "%s", fut_tls_alpn(t));
    char req[2048];
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: "
                     "fut-https_get\r\nConnection: close\r\n\r\n",
                     g->path, g->host);
    if (n < 0 || (size_t)n >= sizeof req) {
        fprintf(stderr, "https_get: path too long\n");
        r = FUT_EINVAL;
        goto out;
    }
    if (fut_tls_write_all(t, req, (size_t)n) != n) {
        r = -EPIPE;
        fprintf(stderr, "https_get: sending: %s\n", fut_tls_error_message(t));
        goto out;
    }
    buf = malloc(RESP_MAX);
    size_t got = 0;
    ssize_t k = 1;
    while (buf && got < RESP_MAX && k > 0) {
        struct fut_tls_read rd;
        fut_tls_read_init(&rd, t, buf + got, RESP_MAX - got);
        r = fut_timeout_await(&rd, g->deadline - fut_now_ns());
        k = r != 0 ? r : rd.result;
        if (k > 0)
            got += (size_t)k;
    }
    const char *end = buf ? memmem(buf, got, "\r\n\r\n", 4) : NULL;
    if (!end || got < 12 || memcmp(buf, "HTTP/1.", 7) != 0) {
        fprintf(stderr, "https_get: no HTTP answer (%s)\n",
                k < 0 ? fut_strerror((int)k) : "closed");
        r = k < 0 ? (int)k : -EPROTO;
        goto out;
    }
    if (k < 0 && k != FUT_ETLSTRUNC) { /* cut short by a failure */
        fprintf(stderr, "https_get: reading: %s %s\n", fut_strerror((int)k),
                fut_tls_error_message(t));
        r = (int)k;
        goto out;
    }
    g->status = atoi(buf + 9);
    g->body = got - (size_t)(end + 4 - buf);
    r = 0;
    if (k == 0) /* the server's close_notify: answer it */
        (void)fut_tls_shutdown(t);
out:
    free(buf);
    fut_tls_free(t);
    fut_io_close(io);
    return r;
}

static const char usage_text[] =
    "usage: https_get [--cacert FILE] [--timeout SECS] HOST PORT [PATH]\n"
    "  Fetches https://HOST:PORT/PATH with verification on and prints\n"
    "  the status, the body's size, the TLS version and the ALPN protocol.\n"
    "  --cacert FILE   trust these CA certificates (PEM) instead of the\n"
    "                  system store\n"
    "  --timeout SECS  for the whole fetch (default 10)\n"
    "  -h, --help      this text\n"
    "  Exit: 0 a 2xx status, 1 another status, 2 the fetch failed.\n";

int main(int argc, char **argv)
{
    struct get g;
    memset(&g, 0, sizeof g);
    const char *cacert = NULL;
    int64_t timeout = 10LL * 1000 * 1000 * 1000;
    const char *pos[3] = {NULL, NULL, "/"};
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        if (ex_is_help(argv[i]))
            return ex_usage(1, usage_text);
        if (!strcmp(argv[i], "--cacert")) {
            if (!(cacert = ex_value("https_get", argc, argv, &i)))
                return ex_usage(0, usage_text);
        } else if (!strcmp(argv[i], "--timeout")) {
            const char *v = ex_value("https_get", argc, argv, &i);
            if (!v || !ex_secs("https_get", "--timeout", v, &timeout))
                return ex_usage(0, usage_text);
        } else if (argv[i][0] == '-' || npos == 3) {
            ex_bad("https_get", "unknown argument", argv[i]);
            return ex_usage(0, usage_text);
        } else {
            pos[npos++] = argv[i];
        }
    }
    if (npos < 2) {
        ex_bad("https_get", "missing", npos ? "PORT" : "HOST");
        return ex_usage(0, usage_text);
    }
    g.host = pos[0];
    g.port = pos[1];
    g.path = pos[2];
    /* The context first, outside the runtime: loading a trust store takes
     * milliseconds, which no poll should. */
    static const char *const alpn[] = {"http/1.1"};
    int r = fut_tls_ctx_new(FUT_TLS_CLIENT, &g.ctx);
    if (r == 0 && cacert)
        r = fut_tls_ctx_trust_file(g.ctx, cacert);
    if (r == 0)
        r = fut_tls_ctx_set_alpn(g.ctx, alpn, 1);
    if (r != 0) {
        fprintf(stderr, "https_get: %s\n",
                g.ctx ? fut_tls_ctx_error_message(g.ctx) : fut_strerror(r));
        fut_tls_ctx_free(g.ctx);
        return 2;
    }
    struct fut_runtime *rt;
    if (fut_runtime_new(NULL, &rt) != 0)
        return 2;
    g.deadline = fut_now_ns() + timeout;
    struct fut_fiber_opts opts; /* OpenSSL wants more than 64 KiB */
    fut_fiber_opts_init(&opts);
    opts.stack_size = 256 * 1024;
    intptr_t v = -1;
    r = fut_fiber_run(rt, fetch, &g, &opts, &v);
    fut_runtime_free(rt);
    fut_tls_ctx_free(g.ctx);
    if (r != 0 || v != 0)
        return 2;
    printf("status %d bytes %zu tls %s alpn %s\n", g.status, g.body,
           g.version, g.alpn[0] ? g.alpn : "-");
    return g.status >= 200 && g.status < 300 ? 0 : 1;
}
