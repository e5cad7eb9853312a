/* SPDX-License-Identifier: MIT */
/* examples/https_hello: the built binary runs as a child process on an
 * ephemeral port (test/example_harness.c) with a certificate made here,
 * and a fut TLS client (fut/tls.h, on a fiber of this process) drives it
 * over loopback: keep-alive and pipelined requests, HEAD, ALPN, the
 * close_notify after "Connection: close", plain HTTP and garbage sent to
 * the TLS port, refused requests (413, 501), SIGTERM; curl --cacert and
 * wrk over https against it; and examples/https_get, the client example,
 * against it, against `openssl s_server -www` and against nginx. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "example_harness.h"
#include "fut/tls.h"
#include "test.h"
#include "tls_certs.h"

#ifndef HTTPS_HELLO_BIN
#error "HTTPS_HELLO_BIN: the path of examples/https_hello (set by cmake)"
#endif
#ifndef HTTPS_GET_BIN
#error "HTTPS_GET_BIN: the path of examples/https_get (set by cmake)"
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

/* Runs the shell command 'cmd' (bounded by `timeout 60`), its stdout in
 * 'out'; returns its exit status (77: the tool is missing). */
static int run_tool(const char *cmd, char *out, size_t cap)
{
    char full[1024];
    snprintf(full, sizeof full, "timeout 60 %s", cmd);
    FILE *p = popen(full, "r");
    ck_assert_msg(p != NULL, "popen %s", cmd);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Real clients: curl --cacert (verification on, HTTP/1.1, ALPN) and wrk
 * over https (keep-alive, 20 connections, 2 s, a 10 s timeout per
 * request): every answer a 200, no socket error, and
 * the server still exits 0 on SIGTERM. */
START_TEST(tools)
{
    if (system("command -v curl >/dev/null && command -v wrk >/dev/null") !=
        0) {
        fprintf(stderr, "example_https.tools: curl or wrk missing: skip\n");
        return;
    }
    struct ex_server s;
    start(&s);
    char cmd[512], out[8192];
    snprintf(cmd, sizeof cmd,
             "curl -sS --http1.1 --cacert %s -w ' %%{http_code} "
             "%%{http_version}' https://localhost:%d/",
             crt, s.port);
    ASSERT_EQ(run_tool(cmd, out, sizeof out), 0);
    ck_assert_msg(strcmp(out, "hello 200 1.1") == 0, "curl: '%s'", out);
    /* twice on one connection: keep-alive */
    snprintf(
        cmd, sizeof cmd,
        "curl -sS --http1.1 --cacert %s -w ' %%{http_code} "
        "%%{num_connects}\\n' https://localhost:%d/ https://localhost:%d/",
        crt, s.port, s.port);
    ASSERT_EQ(run_tool(cmd, out, sizeof out), 0);
    ck_assert_msg(strcmp(out, "hello 200 1\nhello 200 0\n") == 0,
                  "curl keep-alive: '%s'", out);
    /* a wrong CA: curl refuses (exit 60), the server goes on */
    snprintf(cmd, sizeof cmd,
             "curl -sS --cacert /etc/ssl/certs/ca-certificates.crt "
             "https://localhost:%d/ 2>&1",
             s.port);
    ASSERT_EQ(run_tool(cmd, out, sizeof out), 60);
    snprintf(cmd, sizeof cmd,
             "wrk -t1 -c20 -d2s --timeout 10s https://localhost:%d/ 2>&1",
             s.port);
    ASSERT_EQ(run_tool(cmd, out, sizeof out), 0);
    long reqs = 0;
    const char *p = strstr(out, " requests in ");
    while (p && p > out && p[-1] >= '0' && p[-1] <= '9')
        p--;
    if (p)
        reqs = strtol(p, NULL, 10);
    ck_assert_msg(reqs >= 100, "wrk: %ld requests\n%s", reqs, out);
    ck_assert_msg(strstr(out, "Non-2xx") == NULL &&
                      strstr(out, "Socket errors") == NULL,
                  "wrk reported errors:\n%s", out);
    fprintf(stderr, "example_https.tools: wrk %ld requests in 2 s\n", reqs);
    ASSERT_EQ(ex_stop(&s, 15000), 0);
}
END_TEST

/* A loopback port nobody listens on right now. */
static int free_port(void)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(ls, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(getsockname(ls, (struct sockaddr *)&sa, &sl), 0);
    close(ls);
    return ntohs(sa.sin_port);
}

/* Starts 'server' (a command line) in the background, waits until
 * 'port' listens (10 s at most), runs examples/https_get against it with
 * the test's CA, stops the server (SIGTERM); https_get's exit status and
 * its output in 'out'. */
static int get_behind(const char *server, int port, char *out, size_t cap)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "bash -c '%s </dev/null >/dev/null 2>&1 & S=$!; "
             "for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/%d) "
             "2>/dev/null && break; sleep 0.1; done; "
             "%s --cacert %s localhost %d /; r=$?; kill $S; wait $S; "
             "exit $r'",
             server, port, HTTPS_GET_BIN, crt, port);
    return run_tool(cmd, out, cap);
}

/* examples/https_get, the client example: against https_hello (the
 * status, the body's size, TLS 1.3, ALPN http/1.1), refused without the
 * CA (the system store does not know it: exit 2, "certificate verify
 * failed"), against `openssl s_server -www` on a free port, and against
 * nginx with TLS. */
START_TEST(client)
{
    struct ex_server s;
    start(&s);
    char cmd[1024], out[8192];
    snprintf(cmd, sizeof cmd, "%s --cacert %s localhost %d /", HTTPS_GET_BIN,
             crt, s.port);
    ASSERT_EQ(run_tool(cmd, out, sizeof out), 0);
    ck_assert_str_eq(out, "status 200 bytes 5 tls TLSv1.3 alpn http/1.1\n");
    snprintf(cmd, sizeof cmd, "%s localhost %d / 2>&1", HTTPS_GET_BIN,
             s.port);
    ASSERT_EQ(run_tool(cmd, out, sizeof out), 2);
    ck_assert_msg(strstr(out, "certificate verify failed") != NULL, "%s",
                  out);
    ASSERT_EQ(ex_stop(&s, 15000), 0);
    /* openssl s_server -www: a free port, polled until it listens */
    int port = free_port();
    snprintf(cmd, sizeof cmd,
             "openssl s_server -quiet -www -accept %d -cert %s -key %s", port,
             crt, key);
    ASSERT_EQ(get_behind(cmd, port, out, sizeof out), 0);
    ck_assert_msg(strncmp(out, "status 200 bytes ", 17) == 0 &&
                      strstr(out, " tls TLSv1.3 alpn -\n") != NULL,
                  "against s_server: '%s'", out);
    /* nginx with TLS (nginx-light's ssl module; the test command installs
     * it), the same certificate, TLS 1.3 allowed (nginx 1.22's default
     * stops at 1.2), a fixed body; started and polled as s_server is,
     * stopped with SIGTERM. */
#ifdef FUT_TEST_NGINX
    port = free_port();
    char conf[2048], path[160];
    snprintf(conf, sizeof conf,
             "master_process off;\ndaemon off;\npid %s/nginx.pid;\n"
             "error_log %s/error.log;\nevents { worker_connections 64; }\n"
             "http {\n access_log off;\n client_body_temp_path %s;\n"
             " proxy_temp_path %s;\n fastcgi_temp_path %s;\n"
             " uwsgi_temp_path %s;\n scgi_temp_path %s;\n"
             " server {\n  listen 127.0.0.1:%d ssl;\n"
             "  ssl_protocols TLSv1.2 TLSv1.3;\n"
             "  ssl_certificate %s;\n  ssl_certificate_key %s;\n"
             "  location / { return 200 \"hello from nginx\\n\"; }\n }\n}\n",
             dir, dir, dir, dir, dir, dir, dir, port, crt, key);
    snprintf(path, sizeof path, "%s/nginx.conf", dir);
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "%s", path);
    fputs(conf, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s -p %s -c %s", FUT_TEST_NGINX, dir, path);
    ASSERT_EQ(get_behind(cmd, port, out, sizeof out), 0);
    ck_assert_str_eq(out, "status 200 bytes 17 tls TLSv1.3 alpn http/1.1\n");
#endif
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
    tcase_add_test(fut_test_tcase(s, "tools"), tools);
    tcase_add_test(fut_test_tcase(s, "client"), client);
    int r = fut_test_run(s);
    tls_remove_dir(dir);
    return r;
}
