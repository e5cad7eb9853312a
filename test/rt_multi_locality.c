/* SPDX-License-Identifier: MIT */
/* I/O where the task is, with the shared driver (issue 31, point 5;
 * docs/scheduler.md, "Locality"): an echo server on the multi-thread
 * runtime with 2 workers on epoll, under 8 blocking clients on threads
 * of their own. The tasks a worker's turn in the driver woke stay on that
 * worker: a dry peer takes the driver for fresh readiness before it
 * steals (src/rt/multi/worker.c, may_steal), so fewer than 1 poll in 10
 * is of a stolen task. A count over 24,000 round trips, not a time.
 *
 * Without the gate on epoll (the peer steals half the batch as soon as
 * it is notified) this test measured 28-36% of polls stolen in 5 runs;
 * with it, 0.2-2.7%. (io_uring's per-worker rings have their own count:
 * the foreign ops of io_uring.locality.)
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "test.h"

#define CLIENTS 8
#define ROUNDS 3000

/* One connection: echoes what it reads until EOF. */
static intptr_t conn(void *io)
{
    char buf[256];
    ssize_t n;
    while ((n = fut_read(io, buf, sizeof buf)) > 0)
        if (fut_write_all(io, buf, (size_t)n) < 0)
            break;
    fut_io_close(io);
    return 0;
}

/* A blocking client: ROUNDS round trips of 64 bytes. */
struct client {
    pthread_t th;
    int port, ok;
};

static void *client_main(void *arg)
{
    struct client *c = arg;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)c->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1, i = -1;
    struct timeval tv = {10, 0}; /* a lost echo fails, not hangs */
    if (fd >= 0 &&
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0 &&
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0 &&
        connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
        i = 0;
    char msg[64], back[64];
    for (; i >= 0 && i < ROUNDS; i++) {
        memset(msg, 'a' + i % 26, sizeof msg);
        if (write(fd, msg, sizeof msg) != (ssize_t)sizeof msg)
            break;
        size_t got = 0;
        while (got < sizeof back) {
            ssize_t n = read(fd, back + got, sizeof back - got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        if (got != sizeof back || memcmp(msg, back, sizeof msg) != 0)
            break;
    }
    c->ok = i == ROUNDS;
    if (fd >= 0)
        close(fd);
    return NULL;
}

START_TEST(tasks_stay_with_the_driver_turn)
{
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    cfg.flavor = FUT_RT_MULTI_THREAD;
    cfg.workers = 2;
    cfg.io_backend = FUT_IO_EPOLL;
    struct fut_runtime *rt = NULL;
    int r = fut_runtime_new(&cfg, &rt);
    ck_assert_msg(r == 0, "fut_runtime_new: %s", fut_strerror(r));
    struct fut_join conns[CLIENTS], ja;
    struct fut_test_acceptor s = {NULL, CLIENTS, conn, conns};
    struct sockaddr_storage ss;
    socklen_t len;
    ASSERT_EQ(fut_addr_parse("127.0.0.1", 0, &ss, &len), 0);
    ASSERT_EQ(fut_tcp_listen((struct sockaddr *)&ss, len, 0, &s.ln), 0);
    ASSERT_EQ(fut_io_local_addr(s.ln, &ss, &len), 0);
    ASSERT_EQ(fut_fiber_spawn(rt, fut_test_acceptor_main, &s, NULL, &ja), 0);
    struct fut_rt_stats st0, st1;
    fut_runtime_stats(rt, &st0);
    struct client c[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        c[i].port = fut_addr_port(&ss);
        c[i].ok = 0;
        ASSERT_EQ(pthread_create(&c[i].th, NULL, client_main, &c[i]), 0);
    }
    for (int i = 0; i < CLIENTS; i++) {
        ASSERT_EQ(pthread_join(c[i].th, NULL), 0);
        ck_assert_msg(c[i].ok, "client %d did not get its echoes", i);
    }
    ASSERT_EQ(fut_block_on(rt, &ja.base), 0);
    for (int i = 0; i < CLIENTS; i++) {
        ASSERT_EQ(fut_block_on(rt, &conns[i].base), 0);
        fut_drop(&conns[i].base);
    }
    fut_runtime_stats(rt, &st1);
    fut_drop(&ja.base);
    fut_io_close(s.ln);
    fut_runtime_free(rt);
    uint64_t polls = st1.polls - st0.polls;
    uint64_t stolen = st1.stolen - st0.stolen;
    fprintf(stderr, "locality: %llu polls, %llu of stolen tasks (%.1f%%)\n",
            (unsigned long long)polls, (unsigned long long)stolen,
            polls ? 100.0 * (double)stolen / (double)polls : 0.0);
    /* Most round trips took a poll (a fiber that finds the next request
     * already there serves it in the same poll). */
    ck_assert_uint_ge(polls, (uint64_t)CLIENTS * ROUNDS / 2);
    ck_assert_msg(stolen * 10 < polls,
                  "%llu of %llu polls were of stolen tasks (bound: under "
                  "10%%)",
                  (unsigned long long)stolen, (unsigned long long)polls);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rt_multi_locality");
    TCase *tc = fut_test_tcase(s, "epoll");
    tcase_add_test(tc, tasks_stay_with_the_driver_turn);
    return fut_test_run(s);
}
