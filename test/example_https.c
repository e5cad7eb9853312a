/* SPDX-License-Identifier: MIT */
/* examples/https_hello: the built binary runs as a child process on an
 * ephemeral port (test/example_harness.c) with a certificate made here,
 * and a fut TLS client (fut/tls.h, on a fiber of this process) drives it
 * over loopback: keep-alive and pipelined requests, HEAD, ALPN, the
 * close_notify after "Connection: close", plain HTTP and garbage sent to
 * the TLS port, refused requests (413, 501), SIGTERM. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "example_harness.h"
#include "fut/tls.h"
#include "test.h"
#include "tls_certs.h"

#ifndef HTTPS_HELLO_BIN
#error "HTTPS_HELLO_BIN: the path of examples/https_hello (set by cmake)"
#endif

static char dir[64], crt[128], key[128];

/* One TLS connection to the server: sends 'req', reads until the
 * server closes (or 'want' bytes came). */
struct call {
    int port;
    const char *req;
    size_t want;
    int hs;
    ssize_t last; /* the last read: 0 = close_notify */
    char alpn[32];
    char resp[8192];
    size_t got;
};

static intptr_t call_fn(void *arg)
{
    struct call *c = arg;
    struct fut_tls_ctx *ctx = NULL;
    static const char *const alpn[] = {"h2", "http/1.1"};
    if (fut_tls_ctx_new(FUT_TLS_CLIENT, &ctx) ||
        fut_tls_ctx_trust_file(ctx, crt) ||
        fut_tls_ctx_set_alpn(ctx, alpn, 2))
        return -1;
    struct sockaddr_storage ss;
    socklen_t len;
    struct fut_io *io = NULL;
    struct fut_tls *t = NULL;
    fut_addr_parse("127.0.0.1", c->port, &ss, &len);
    intptr_t v = -2;
    if (fut_connect((struct sockaddr *)&ss, len, -1, &io) == 0 &&
        fut_tls_new(ctx, io, "localhost", &t) == 0) {
        c->hs = fut_tls_handshake(t);
        snprintf(c->alpn, sizeof c->alpn, "%s", fut_tls_alpn(t));
        size_t n = strlen(c->req);
        if (c->hs == 0 && fut_tls_write_all(t, c->req, n) == (ssize_t)n) {
            while (c->got < c->want && c->got < sizeof c->resp - 1) {
                struct fut_tls_read rd;
                fut_tls_read_init(&rd, t, c->resp + c->got,
                                  sizeof c->resp - 1 - c->got);
                if (fut_timeout_await(&rd, 5000LL * 1000 * 1000) != 0) {
                    c->last = FUT_ETIMEDOUT;
                    break;
                }
                c->last = rd.result;
                if (rd.result <= 0)
                    break;
                c->got += (size_t)rd.result;
            }
            v = 0;
        }
    }
    c->resp[c->got] = '\0';
    fut_tls_free(t);
    fut_io_close(io);
    fut_tls_ctx_free(ctx);
    return v;
}

static void call(int port, const char *req, size_t want, struct call *c)
{
    memset(c, 0, sizeof *c);
    c->port = port;
    c->req = req;
    c->want = want;
    struct fut_runtime *rt = NULL;
    ASSERT_EQ(fut_runtime_new(NULL, &rt), 0);
    struct fut_fiber_opts o;
    fut_fiber_opts_init(&o);
    o.stack_size = 256 * 1024;
    intptr_t v = -9;
    ASSERT_EQ(fut_fiber_run(rt, call_fn, c, &o, &v), 0);
    fut_runtime_free(rt);
    ck_assert_msg(v == 0, "no exchange (%ld), handshake %s", (long)v,
                  fut_strerror(c->hs));
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

static void start(struct ex_server *s)
{
    const char *args[] = {"--cert", crt, "--key", key, NULL};
    ex_start(s, HTTPS_HELLO_BIN, args, NULL);
}

START_TEST(keepalive)
{
    struct ex_server s;
    start(&s);
    struct call c;
    /* two pipelined GETs, a HEAD, then a GET that closes */
    call(s.port,
         "GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /x HTTP/1.1\r\nHost: a\r\n\r\n"
         "HEAD / HTTP/1.1\r\nHost: a\r\n\r\n"
         "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
         (size_t)-1, &c);
    ASSERT_EQ(c.hs, 0);
    ck_assert_str_eq(c.alpn, "http/1.1");
    ASSERT_EQ(count(c.resp, "HTTP/1.1 200 OK"), 4);
    ASSERT_EQ(count(c.resp, "hello"), 3); /* not after the HEAD */
    ck_assert_msg(c.last == 0, "not closed with close_notify: %s",
                  fut_strerror((int)c.last));
    /* HTTP/1.0 closes after the reply too */
    call(s.port, "GET / HTTP/1.0\r\n\r\n", (size_t)-1, &c);
    ASSERT_EQ(count(c.resp, "hello"), 1);
    ASSERT_EQ(c.last, 0);
    ASSERT_EQ(ex_stop(&s, 15000), 0);
}
END_TEST

START_TEST(bad_input)
{
    struct ex_server s;
    start(&s);
    /* plain HTTP and garbage to the TLS port: the server closes */
    static const char *raw[] = {"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
                                "\x16\x03\x01\xff\xff garbage garbage"};
    for (int i = 0; i < 2; i++) {
        int fd = ex_connect(s.port, 5000);
        ex_send_all(fd, raw[i], strlen(raw[i]));
        char buf[512];
        int eof = 0;
        ex_recv_n(fd, buf, sizeof buf, 5000, &eof);
        ck_assert_msg(eof != 0, "raw %d: the server did not close", i);
        close(fd);
    }
    struct call c;
    call(s.port, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc",
         (size_t)-1, &c);
    ck_assert_msg(strncmp(c.resp, "HTTP/1.1 413", 12) == 0, "%s", c.resp);
    ASSERT_EQ(c.last, 0);
    call(s.port, "FOO / HTTP/1.1\r\nHost: a\r\n\r\n", (size_t)-1, &c);
    ck_assert_msg(strncmp(c.resp, "HTTP/1.1 501", 12) == 0, "%s", c.resp);
    call(s.port, "nonsense\r\n\r\n", (size_t)-1, &c);
    ck_assert_msg(strncmp(c.resp, "HTTP/1.1 400", 12) == 0, "%s", c.resp);
    /* and the server still serves */
    call(s.port, "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
         (size_t)-1, &c);
    ASSERT_EQ(count(c.resp, "hello"), 1);
    ASSERT_EQ(ex_stop(&s, 15000), 0);
}
END_TEST

START_TEST(sigterm_exit_0)
{
    struct ex_server s;
    start(&s);
    struct call c;
    /* a keep-alive connection stays open while the server stops */
    call(s.port, "GET / HTTP/1.1\r\nHost: a\r\n\r\n", 69, &c);
    ASSERT_EQ(count(c.resp, "hello"), 1);
    ASSERT_EQ(ex_stop(&s, 15000), 0);
}
END_TEST

int main(void)
{
    strcpy(dir, "/tmp/fut-https-XXXXXX");
    snprintf(crt, sizeof crt, "%s/cert.pem", mkdtemp(dir) ? dir : "/tmp");
    snprintf(key, sizeof key, "%s/key.pem", dir);
    if (tls_make_cert("-newkey ec -pkeyopt ec_paramgen_curve:P-256", crt, key,
                      NULL) != 0) {
        fprintf(stderr, "example_https: openssl req failed\n");
        tls_remove_dir(dir);
        return 1;
    }
    Suite *s = suite_create("example_https");
    tcase_add_test(fut_test_tcase(s, "keepalive"), keepalive);
    tcase_add_test(fut_test_tcase(s, "bad_input"), bad_input);
    tcase_add_test(fut_test_tcase(s, "sigterm_exit_0"), sigterm_exit_0);
    int r = fut_test_run(s);
    tls_remove_dir(dir);
    return r;
}
