/* examples/http_hello as a server one could expose (issue 21): the built
 * binary runs as a child process on an ephemeral port (test/
 * example_harness.c) and is driven over loopback. Cases: pipelining
 * (1,000 requests in one write get 1,000 replies, in order), LF-only
 * heads, the whole-head deadline against a slowloris, the keep-alive idle
 * deadline, RSS per idle connection, garbage, SIGTERM. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "example_harness.h"
#include "test.h"

#ifndef HTTP_HELLO_BIN
#error "HTTP_HELLO_BIN: the path of examples/http_hello (set by cmake)"
#endif

static const char OK[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
                         "Content-Type: text/plain\r\n\r\nhello";
static const char OK_HEAD[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
                              "Content-Type: text/plain\r\n\r\n";
static const char OK_CLOSE[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
                               "Content-Type: text/plain\r\n"
                               "Connection: close\r\n\r\nhello";
static const char GET[] = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";
static const char HEAD[] = "HEAD / HTTP/1.1\r\nHost: t\r\n\r\n";
static const char GET_CLOSE[] = "GET / HTTP/1.1\r\nHost: t\r\n"
                                "Connection: close\r\n\r\n";

#define S(lit) (lit), (sizeof(lit) - 1)

static void start(struct ex_server *s, const char *const *args)
{
    ex_start(s, HTTP_HELLO_BIN, args, NULL);
}

static void stop_ok(struct ex_server *s)
{
    ASSERT_EQ(ex_stop(s, 15000), 0);
}

/* Sends 'req', expects exactly 'resp' back within 5 s. */
static void expect_reply(int fd, const char *req, size_t req_len,
                         const char *resp, size_t resp_len)
{
    char buf[512];
    ex_send_all(fd, req, req_len);
    size_t got = ex_recv_n(fd, buf, resp_len, 5000, NULL);
    ck_assert_msg(got == resp_len && memcmp(buf, resp, resp_len) == 0,
                  "expected %zu bytes '%.*s', got %zu: '%.*s'", resp_len,
                  (int)resp_len, resp, got, (int)got, buf);
}

/* Reads what comes until EOF (5 s): the bytes, NUL-terminated. */
static size_t read_to_eof(int fd, char *buf, size_t cap)
{
    int eof = 0;
    size_t got = ex_recv_n(fd, buf, cap - 1, 5000, &eof);
    buf[got] = 0;
    ck_assert_msg(eof != 0, "no close after '%s'", buf);
    return got;
}

/* ---------------------------------------------------------- pipelining */

/* 1,000 requests in one write, GET and HEAD mixed (so the order shows in
 * the bytes), the last one "Connection: close": the exact sequence of
 * replies, then EOF - all within 5 s, far less than the 10 s idle timer
 * the stalled replies used to wait for. */
START_TEST(pipeline_1000)
{
    enum { N = 1000 };
    struct ex_server s;
    start(&s, NULL);
    char *req = malloc(N * sizeof GET_CLOSE);
    char *want = malloc(N * sizeof OK_CLOSE);
    size_t rl = 0, wl = 0;
    for (int i = 0; i < N; i++) {
        const char *q = i == N - 1 ? GET_CLOSE : i % 3 ? GET : HEAD;
        const char *a = i == N - 1 ? OK_CLOSE : i % 3 ? OK : OK_HEAD;
        memcpy(req + rl, q, strlen(q));
        rl += strlen(q);
        memcpy(want + wl, a, strlen(a));
        wl += strlen(a);
    }
    int fd = ex_connect(s.port, 5000);
    int64_t t0 = ex_now_ms();
    ex_send_all(fd, req, rl);
    char *got = malloc(wl + 1);
    int eof = 0;
    size_t n = ex_recv_n(fd, got, wl, 5000, &eof);
    fprintf(stderr, "pipeline: %zu of %zu reply bytes in %lld ms\n", n, wl,
            (long long)(ex_now_ms() - t0));
    ASSERT_EQ(n, wl);
    ASSERT_TRUE(memcmp(got, want, wl) == 0);
    ASSERT_TRUE(ex_wait_eof(fd, 5000) >= 0);
    close(fd);
    free(req);
    free(want);
    free(got);
    stop_ok(&s);
}
END_TEST

/* ---------------------------------------------------------- LF endings */

START_TEST(lf_only)
{
    struct ex_server s;
    start(&s, NULL);
    int fd = ex_connect(s.port, 5000);
    expect_reply(fd, S("GET / HTTP/1.1\nHost: t\n\n"), S(OK));
    expect_reply(fd, S("HEAD / HTTP/1.1\nHost: t\r\n\n"), S(OK_HEAD));
    /* Empty lines before a request line are skipped (RFC 9112 2.2). */
    expect_reply(fd, S("\r\n\nGET / HTTP/1.1\r\nHost: t\n\r\n"), S(OK));
    close(fd);
    stop_ok(&s);
}
END_TEST

/* ---------------------------------------------------------- slowloris */

/* Trickles 'head' one byte every 'gap_ms'; returns the ms from connect
 * to EOF (-1: none within 'limit_ms'), the bytes received in 'buf'. */
static int64_t trickle(int port, const char *head, int gap_ms, int limit_ms,
                       char *buf, size_t cap)
{
    int fd = ex_connect(port, 5000);
    int64_t t0 = ex_now_ms();
    size_t got = 0, sent = 0, len = strlen(head);
    int eof = 0;
    while (!eof && ex_now_ms() - t0 < limit_ms) {
        if (sent < len && send(fd, head + sent, 1, MSG_NOSIGNAL) == 1)
            sent++;
        got += ex_recv_n(fd, buf + got, cap - 1 - got, gap_ms, &eof);
    }
    buf[got] = 0;
    close(fd);
    return eof ? ex_now_ms() - t0 : -1;
}

/* --header-timeout 1: a head trickled one byte every 100 ms is cut with
 * 408 and a close at 1 s, though every read brought a byte; a head that
 * trickles in within its deadline is answered. */
START_TEST(slowloris_head_deadline)
{
    const char *args[] = {"--header-timeout", "1", NULL};
    struct ex_server s;
    start(&s, args);
    char buf[512];
    int64_t ms = trickle(s.port,
                         "GET / HTTP/1.1\r\nHost: t\r\nX-Slow: "
                         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                         100, 5000, buf, sizeof buf);
    fprintf(stderr, "slowloris cut after %lld ms: %.30s\n", (long long)ms,
            buf);
    ck_assert_msg(ms >= 900 && ms <= 2500, "cut after %lld ms",
                  (long long)ms);
    ASSERT_TRUE(strncmp(buf, "HTTP/1.1 408 ", 13) == 0);
    /* 24 bytes at 20 ms: done in ~0.5 s, before the deadline. */
    int fd = ex_connect(s.port, 5000);
    for (const char *p = "GET / HTTP/1.1\nHost: t\n\n"; *p; p++) {
        ex_send_all(fd, p, 1);
        usleep(20000);
    }
    size_t n = ex_recv_n(fd, buf, sizeof OK - 1, 5000, NULL);
    ASSERT_EQ(n, sizeof OK - 1);
    ASSERT_TRUE(memcmp(buf, OK, n) == 0);
    close(fd);
    stop_ok(&s);
}
END_TEST

/* --keepalive-timeout 1 (header timeout 5): after a reply, an idle
 * connection is closed at 1 s, silently; the head deadline is not it. */
START_TEST(keepalive_idle_deadline)
{
    const char *args[] = {"--keepalive-timeout", "1", "--header-timeout",
                          "5", NULL};
    struct ex_server s;
    start(&s, args);
    int fd = ex_connect(s.port, 5000);
    expect_reply(fd, S(GET), S(OK));
    int64_t t0 = ex_now_ms();
    char buf[64];
    int eof = 0;
    size_t n = ex_recv_n(fd, buf, sizeof buf, 4000, &eof);
    int64_t ms = ex_now_ms() - t0;
    fprintf(stderr, "idle connection closed after %lld ms\n", (long long)ms);
    ASSERT_EQ(n, 0);
    ASSERT_EQ(eof, 1);
    ck_assert_msg(ms >= 900 && ms <= 2500, "closed after %lld ms",
                  (long long)ms);
    close(fd);
    /* A fresh connection that never sends: cut at the head deadline of its
     * first request (5 s from accept), not at the keep-alive one. */
    fd = ex_connect(s.port, 5000);
    t0 = ex_now_ms();
    ASSERT_TRUE(ex_wait_eof(fd, 8000) >= 4500);
    close(fd);
    stop_ok(&s);
}
END_TEST

/* ---------------------------------------------------------- idle memory */

/* RSS per idle connection (it served one request) <= 8 KiB. Sanitizers
 * multiply memory: ASan's shadow is 1/8 of the heap plus redzones (its
 * quarantine, which keeps freed blocks, is turned down for the child);
 * TSan's shadow is several times the memory touched: there the bound is
 * 4x (the figure is printed either way). */
START_TEST(idle_rss)
{
    const char *env[] = {"ASAN_OPTIONS=quarantine_size_mb=1", NULL};
    struct ex_server s;
    ex_start(&s, HTTP_HELLO_BIN, NULL, env);
    long per = ex_idle_rss_per_conn(&s, 2000, S(GET), sizeof OK - 1);
#if defined(FUT_TEST_TSAN)
    long bound = 4 * 8192;
#else
    long bound = 8192;
#endif
    ck_assert_msg(per <= bound, "%ld bytes per idle connection (bound %ld)",
                  per, bound);
    stop_ok(&s);
}
END_TEST

/* ------------------------------------------------------------- garbage */

/* Sends 'req' ('len' bytes, then 'more' bytes of 'a' when more > 0) on a
 * fresh connection: the reply must be 'status' ("HTTP/1.1 400 "), then
 * a close. */
static void expect_refusal(int port, const char *req, size_t len,
                           size_t more, const char *status)
{
    char buf[512];
    int fd = ex_connect(port, 5000);
    ex_send_all(fd, req, len);
    if (more) {
        char *pad = malloc(more);
        memset(pad, 'a', more);
        ex_send_all(fd, pad, more);
        free(pad);
    }
    read_to_eof(fd, buf, sizeof buf);
    ck_assert_msg(strncmp(buf, status, strlen(status)) == 0,
                  "'%.*s' got '%s'", (int)len, req, buf);
    close(fd);
}

START_TEST(garbage_400_close)
{
    struct ex_server s;
    start(&s, NULL);
    const char *bad400[] = {
        /* A TLS ClientHello's first bytes: 400 at once. */
        "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
        /* A good request line, then a broken header line. */
        "GET / HTTP/1.1\r\nHost: t\r\nBad header\r\n\r\n",
        /* A bare CR inside a line. */
        "GET / HTTP/1.1\r\nHost: t\rX\r\n\r\n",
        /* HTTP/1.1 without Host. */
        "GET / HTTP/1.1\r\n\r\n",
        /* A space after the version. */
        "GET / HTTP/1.1 \r\nHost: t\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof bad400 / sizeof bad400[0]; i++)
        expect_refusal(s.port, bad400[i], strlen(bad400[i]), 0,
                       "HTTP/1.1 400 ");
    /* A head over 8 KiB: 431. */
    expect_refusal(s.port, S("GET / HTTP/1.1\r\nHost: t\r\nX-Big: "), 9000,
                   "HTTP/1.1 431 ");
    stop_ok(&s);
}
END_TEST

/* ------------------------------------------------------------- SIGTERM */

/* SIGTERM with idle, mid-head and fresh connections open: exit 0. */
START_TEST(sigterm_exit_0)
{
    struct ex_server s;
    start(&s, NULL);
    int idle = ex_connect(s.port, 5000);
    expect_reply(idle, S(GET), S(OK));
    int half = ex_connect(s.port, 5000);
    ex_send_all(half, S("GET / HTTP/1.1\r\nHo"));
    int fresh = ex_connect(s.port, 5000);
    usleep(100000);
    stop_ok(&s);
    close(idle);
    close(half);
    close(fresh);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("example_http");
    tcase_add_test(fut_test_tcase(s, "pipeline_1000"), pipeline_1000);
    tcase_add_test(fut_test_tcase(s, "lf_only"), lf_only);
    tcase_add_test(fut_test_tcase(s, "slowloris_head_deadline"),
                   slowloris_head_deadline);
    tcase_add_test(fut_test_tcase(s, "keepalive_idle_deadline"),
                   keepalive_idle_deadline);
    tcase_add_test(fut_test_tcase(s, "idle_rss"), idle_rss);
    tcase_add_test(fut_test_tcase(s, "garbage_400_close"), garbage_400_close);
    tcase_add_test(fut_test_tcase(s, "sigterm_exit_0"), sigterm_exit_0);
    return fut_test_run(s);
}
