/* SPDX-License-Identifier: MIT */
/* https_hello: http_hello's "hello" over TLS (libfut-tls, fut/tls.h),
 * one fiber per connection (fut/fiber.h), in the style of echo_fiber.
 *
 * Run it:
 *   openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
 *       -keyout key.pem -out cert.pem -days 30 -subj /CN=localhost \
 *       -addext subjectAltName=DNS:localhost,IP:127.0.0.1
 *   ./build/examples/https_hello --cert cert.pem --key key.pem 8443
 *   curl --cacert cert.pem https://localhost:8443/
 * Options: --cert FILE --key FILE (PEM: chain and key), [--workers N]
 * PORT (0: a free port; the "listening on" line on stderr names it).
 *
 * Behaviour: HTTP/1.1 keep-alive; ALPN offers "http/1.1". GET gets
 * "200 OK" with the body "hello", HEAD the same head without it.
 * Another method gets 501, a malformed request line 400, a head over
 * HEAD_MAX 431, a request with a body (Content-Length other than 0, or
 * Transfer-Encoding) 413 - each followed by a close. "Connection: close",
 * and HTTP/1.0, close after the reply. Pipelined requests are answered in
 * order. A handshake or a request head not complete within TIMEOUT_NS
 * closes the connection (fut_timeout_await). A close sends close_notify
 * (fut_tls_shutdown); a failed handshake sends OpenSSL's alert.
 * SIGINT/SIGTERM: stop accepting; open connections get 2 s, then are
 * cancelled; exit 0. Headers are not otherwise checked (http_hello does
 * that properly); this example is about the TLS layer. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cmdline.h"
#include "fut.h"
#include "fut/tls.h"

#define HEAD_MAX 8192
#define TIMEOUT_NS (10LL * 1000 * 1000 * 1000)

static struct fut_scope scope; /* every fiber of the server */
static struct fut_io *ln, *sig;
static struct fut_tls_ctx *ctx;

/* The value of header 'name' in the head [p, end) (NULL: absent). */
static const char *header(const char *p, const char *end, const char *name)
{
    size_t n = strlen(name);
    for (p = memchr(p, '\n', (size_t)(end - p)); p && p + 1 < end;
         p = memchr(p + 1, '\n', (size_t)(end - p - 1))) {
        if ((size_t)(end - p - 1) > n && !strncasecmp(p + 1, name, n) &&
            p[1 + n] == ':')
            return p + 2 + n;
    }
    return NULL;
}

/* Answers the request whose head is [buf, end) (end just past its empty
 * line). Returns 1 to keep the connection, 0 to close it after the reply,
 * -1 when the reply could not be sent. */
static int answer(struct fut_tls *t, const char *buf, const char *end)
{
    static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain"
                             "\r\nContent-Length: 5\r\n\r\nhello";
    const char *sp = memchr(buf, ' ', (size_t)(end - buf));
    const char *eol = memchr(buf, '\n', (size_t)(end - buf));
    const char *status = NULL;
    int keep = 1;
    if (!sp || !eol || sp > eol || eol - buf < 14 ||
        strncmp(eol - (eol[-1] == '\r') - 8, "HTTP/1.", 7))
        status = "400 Bad Request";
    else if (header(buf, end, "Transfer-Encoding") ||
             ((sp = header(buf, end, "Content-Length")) &&
              strtol(sp, NULL, 10) != 0))
        status = "413 Content Too Large";
    else if (strncmp(buf, "GET ", 4) && strncmp(buf, "HEAD ", 5))
        status = "501 Not Implemented";
    if (status) {
        char r[160];
        int n = snprintf(r, sizeof r,
                         "HTTP/1.1 %s\r\nContent-Length: 0\r\n"
                         "Connection: close\r\n\r\n",
                         status);
        return fut_tls_write_all(t, r, (size_t)n) == n ? 0 : -1;
    }
    const char *c = header(buf, end, "Connection");
    if (c && !strncasecmp(c + strspn(c, " "), "close", 5))
        keep = 0;
    if (eol[-1 - (eol[-1] == '\r')] == '0') /* HTTP/1.0 */
        keep = 0;
    size_t len = buf[0] == 'H' ? sizeof ok - 6 : sizeof ok - 1;
    return fut_tls_write_all(t, ok, len) == (ssize_t)len ? keep : -1;
}

static intptr_t conn(void *io)
{
    char *buf = malloc(HEAD_MAX);
    struct fut_tls *t = NULL;
    if (!buf || fut_tls_new(ctx, io, NULL, &t) != 0)
        goto out;
    struct fut_tls_handshake hs;
    fut_tls_handshake_init(&hs, t);
    if (fut_timeout_await(&hs, TIMEOUT_NS) != 0 || hs.result != 0)
        goto bye; /* sends the alert, if any */
    size_t have = 0;
    for (int keep = 1; keep == 1;) {
        char *end = have >= 4 ? memmem(buf, have, "\r\n\r\n", 4) : NULL;
        if (end) {
            end += 4;
            keep = answer(t, buf, end);
            have -= (size_t)(end - buf);
            memmove(buf, end, have);
            continue;
        }
        if (have == HEAD_MAX) {
            static const char big[] = "HTTP/1.1 431 Request Header Fields "
                                      "Too Large\r\nContent-Length: 0\r\n"
                                      "Connection: close\r\n\r\n";
            fut_tls_write_all(t, big, sizeof big - 1);
            break;
        }
        struct fut_tls_read rd;
        fut_tls_read_init(&rd, t, buf + have, HEAD_MAX - have);
        if (fut_timeout_await(&rd, TIMEOUT_NS) != 0 || rd.result <= 0)
            break; /* deadline, close_notify, an error or a cancel */
        have += (size_t)rd.result;
    }
bye:
    fut_tls_shutdown(t);
out:
    fut_tls_free(t);
    free(buf);
    fut_io_close(io);
    return 0;
}

static intptr_t acceptor(void *arg)
{
    struct fut_fiber_opts opts; /* room for OpenSSL's handshake */
    fut_fiber_opts_init(&opts);
    opts.stack_size = 256 * 1024;
    struct fut_accept a;
    for (fut_accept_init(&a, ln);
         fut_await_token(&a, fut_scope_token(&scope)) == 0 && !a.result;
         fut_accept_init(&a, ln))
        if (fut_tcp_set_nodelay(a.conn, 1) != 0 ||
            fut_scope_fiber_spawn(&scope, conn, a.conn, &opts) != 0)
            fut_io_close(a.conn);
    return 0;
}

static const char usage_text[] =
    "usage: https_hello --cert FILE --key FILE [--workers N] PORT\n"
    "  An HTTPS server answering \"hello\", one fiber per connection.\n"
    "  --cert FILE   the certificate chain (PEM, leaf first)\n"
    "  --key FILE    its private key (PEM, RSA or ECDSA)\n"
    "  --workers N   N >= 1: the multi-thread runtime with N workers\n"
    "                (0, the default: the current-thread runtime)\n"
    "  PORT 0: any free port (the \"listening on\" line names it).\n"
    "  -h, --help    this text\n";

/* The command line: 0, 1 (--help) or -1 (a bad argument, said). */
static int args(int argc, char **argv, const char **cert, const char **key,
                int *w, int *port)
{
    for (int i = 1; i < argc; i++) {
        const char **opt = !strcmp(argv[i], "--cert")  ? cert
                           : !strcmp(argv[i], "--key") ? key
                                                       : NULL;
        if (ex_is_help(argv[i]))
            return 1;
        if (opt) {
            if (!(*opt = ex_value("https_hello", argc, argv, &i)))
                return -1;
        } else if (ex_server_arg("https_hello", argc, argv, &i, w, port) <
                   0) {
            return -1;
        }
    }
    if (!*cert || !*key)
        return ex_bad("https_hello", "missing", !*cert ? "--cert" : "--key");
    return *port < 0 ? ex_bad("https_hello", "missing", "PORT") : 0;
}

int main(int argc, char **argv)
{
    int w = 0, port = -1, s[] = {SIGINT, SIGTERM};
    const char *cert = NULL, *key = NULL;
    static const char *const alpn[] = {"http/1.1"};
    int r = args(argc, argv, &cert, &key, &w, &port);
    if (r != 0)
        return ex_usage(r > 0, usage_text);
    if (fut_tls_ctx_new(FUT_TLS_SERVER, &ctx) ||
        fut_tls_ctx_use_cert_files(ctx, cert, key) ||
        fut_tls_ctx_set_alpn(ctx, alpn, 1)) {
        fprintf(stderr, "https_hello: %s\n", fut_tls_ctx_error_message(ctx));
        return 2;
    }
    struct fut_rt_config cfg = {.flavor = w > 0, .workers = w};
    struct fut_runtime *rt;
    struct sockaddr_storage ss;
    socklen_t len;
    if (fut_signal_open(s, 2, &sig) || fut_runtime_new(&cfg, &rt) ||
        fut_addr_parse("127.0.0.1", port, &ss, &len) ||
        fut_tcp_listen((struct sockaddr *)&ss, len, 0, &ln) ||
        fut_io_local_addr(ln, &ss, &len))
        return 2; /* cannot start: what was made dies with the process */
    fprintf(stderr, "https_hello: listening on 127.0.0.1:%d (%s)\n",
            fut_addr_port(&ss), fut_runtime_backend(rt));
    struct fut_shutdown sd; /* signal -> token -> 2 s grace -> cancel */
    fut_scope_init(&scope, rt, FUT_SCOPE_SUPERVISE);
    fut_shutdown_init(&sd, &scope, NULL, sig, 2000LL * 1000 * 1000);
    r = fut_scope_fiber_spawn(&scope, acceptor, NULL, NULL) ||
        fut_block_on(rt, &sd.base);
    fut_drop(&sd.base); /* its grace timer, if armed, goes with it */
    fut_drop(&scope.base);
    fut_io_close(ln);
    fut_runtime_free(rt);
    fut_io_close(sig);
    fut_tls_ctx_free(ctx);
    return r;
}
