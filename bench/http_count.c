/* SPDX-License-Identifier: MIT */
/* http_count: an HTTP/1.1 keep-alive client that makes exactly TOTAL
 * requests over CONNS connections (one request in flight per connection,
 * as wrk does) and exits - for instruction counts per request under
 * callgrind (bench/callgrind_echo.sh MODE=http), where wrk's fixed
 * duration would give a different request count in each run.
 *
 *   http_count PORT [CONNS=50] [TOTAL=20000]
 *
 * Each response is read whole: the head up to "\r\n\r\n", then
 * Content-Length bytes of body (a response without Content-Length, or
 * one that is not "HTTP/1.1 200", fails the run). Prints one line,
 * "http_count: N requests, C connections, T ms", and exits 0; 1 on any
 * error (connect, a closed connection, a bad response), 2 on bad
 * arguments. Loopback only: 127.0.0.1. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char REQ[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

struct conn {
    int fd;
    long left;   /* requests still to make */
    size_t have; /* bytes of the current response in 'buf' */
    char buf[4096];
};

static int fail(const char *what)
{
    fprintf(stderr, "http_count: %s: %s\n", what, strerror(errno));
    return -1;
}

static int send_req(struct conn *c)
{
    size_t off = 0;
    while (off < sizeof REQ - 1) {
        ssize_t n =
            send(c->fd, REQ + off, sizeof REQ - 1 - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return fail("send");
        off += (size_t)n;
    }
    c->left--;
    c->have = 0;
    return 0;
}

/* The length of the complete response at the start of c->buf, 0 when
 * more bytes are needed, -1 when it is not a 200 with Content-Length. */
static long response_len(const struct conn *c)
{
    const char *end = memmem(c->buf, c->have, "\r\n\r\n", 4);
    if (!end)
        return c->have == sizeof c->buf ? -1 : 0;
    size_t head = (size_t)(end - c->buf) + 4;
    if (c->have < 12 || memcmp(c->buf, "HTTP/1.1 200", 12) != 0)
        return -1;
    long body = -1;
    for (const char *p = c->buf; p < end;) {
        const char *eol = memmem(p, (size_t)(end + 2 - p), "\r\n", 2);
        if (!eol)
            break;
        if (eol - p > 15 && !strncasecmp(p, "Content-Length:", 15))
            body = strtol(p + 15, NULL, 10);
        p = eol + 2;
    }
    if (body < 0 || head + (size_t)body > sizeof c->buf)
        return -1;
    return c->have >= head + (size_t)body ? (long)(head + (size_t)body) : 0;
}

/* Reads what is there; 1 when a response is complete, 0 when not yet, -1
 * on error. A server that answers one request at a time sends nothing
 * past the response (one request is in flight). */
static int on_readable(struct conn *c)
{
    ssize_t n = recv(c->fd, c->buf + c->have, sizeof c->buf - c->have, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (n <= 0) {
        if (n == 0)
            errno = ECONNRESET;
        return fail("recv");
    }
    c->have += (size_t)n;
    long len = response_len(c);
    if (len < 0) {
        fprintf(stderr, "http_count: bad response: %.60s\n", c->buf);
        return -1;
    }
    return len > 0 && (size_t)len == c->have ? 1 : (len > 0 ? -1 : 0);
}

static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return fail("socket");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 &&
        errno != EINPROGRESS) {
        close(fd);
        return fail("connect");
    }
    struct pollfd p = {fd, POLLOUT, 0};
    int err = 0;
    socklen_t el = sizeof err;
    if (poll(&p, 1, 10000) != 1 ||
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err) {
        errno = err ? err : ETIMEDOUT;
        close(fd);
        return fail("connect");
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

int main(int argc, char **argv)
{
    int port = argc > 1 ? atoi(argv[1]) : 0;
    int nconn = argc > 2 ? atoi(argv[2]) : 50;
    long total = argc > 3 ? atol(argv[3]) : 20000;
    if (port <= 0 || port > 65535 || nconn <= 0 || nconn > 10000 ||
        total < nconn) {
        fprintf(stderr, "usage: http_count PORT [CONNS=50] [TOTAL=20000] "
                        "(TOTAL >= CONNS)\n");
        return 2;
    }
    struct conn *cs = calloc((size_t)nconn, sizeof *cs);
    struct pollfd *ps = calloc((size_t)nconn, sizeof *ps);
    if (!cs || !ps) {
        fail("calloc");
        return 1;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int open = 0;
    for (int i = 0; i < nconn; i++) {
        cs[i].left = total / nconn + (i < total % nconn);
        if ((cs[i].fd = connect_to(port)) < 0 || send_req(&cs[i]) < 0)
            return 1;
        ps[i] = (struct pollfd){cs[i].fd, POLLIN, 0};
        open++;
    }
    long done = 0;
    while (open > 0) {
        int n = poll(ps, (nfds_t)nconn, 10000);
        if (n == 0)
            errno = ETIMEDOUT;
        if (n == 0 || (n < 0 && errno != EINTR)) {
            fail("poll");
            return 1;
        }
        for (int i = 0; n > 0 && i < nconn; i++) {
            if (!ps[i].revents)
                continue;
            int r = on_readable(&cs[i]);
            if (r < 0)
                return 1;
            if (r == 0)
                continue;
            done++;
            if (cs[i].left > 0) {
                if (send_req(&cs[i]) < 0)
                    return 1;
            } else {
                close(cs[i].fd);
                ps[i].fd = -1;
                open--;
            }
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long ms =
        (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    printf("http_count: %ld requests, %d connections, %ld ms\n", done, nconn,
           ms);
    free(cs);
    free(ps);
    return done == total ? 0 : 1;
}
