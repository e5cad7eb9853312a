/* SPDX-License-Identifier: MIT */
/* echo_min: a TCP echo server on fut written as the peers' servers are -
 * an accept loop and one task per connection that reads up to 4 KiB and
 * writes it all back, nothing else: no idle deadline, no cancel token, no
 * task scope, no graceful drain. It measures what the runtime alone
 * costs per round trip (bench/callgrind_echo.sh, issue 35's "peer-like
 * echo"); examples/echo_server is the server users copy, with the
 * deadlines and the shutdown a real one needs.
 *
 * A benchmark program, not an example: it trusts its clients (a client
 * that never reads back holds its task), exits on SIGTERM/SIGINT without
 * waiting for connections, and reports errors only by closing.
 *
 *   echo_min PORT        current-thread runtime, 127.0.0.1; PORT 0 picks
 *                        one ("listening on 127.0.0.1:N" on stderr)
 *   echo_min PORT N      the multi-thread runtime with N workers
 *
 * On io_uring it prints at exit, on stderr, the ops its rings issued on
 * their own ring and those posted to another worker's ("foreign": issue
 * 31's locality figure).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fut.h"
#ifdef FUT_HAVE_URING
#include "io/uring/uring.h"
#endif

#define BUF_BYTES 4096

struct conn {
    struct fut_future base;
    struct fut_io *io;
    struct fut_io_read rd;
    struct fut_io_write_all wr;
    char buf[BUF_BYTES];
};

static int conn_poll(struct fut_future *f, struct fut_context *cx)
{
    struct conn *c = (struct conn *)f;
    FUT_BEGIN(f);
    for (;;) {
        fut_io_read_init(&c->rd, c->io, c->buf, sizeof c->buf);
        FUT_AWAIT(f, &c->rd);
        if (c->rd.result <= 0)
            break;
        fut_io_write_all_init(&c->wr, c->io, c->buf, (size_t)c->rd.result);
        FUT_AWAIT(f, &c->wr);
        if (c->wr.result < 0)
            break;
    }
    FUT_END(f);
}

static void conn_cleanup(struct fut_future *f)
{
    fut_io_close(((struct conn *)f)->io);
}
FUT_ASYNC_VTABLE(conn_vt, "echo_min_conn", conn_poll, conn_cleanup);

/* Accepts until the runtime is freed (or accept fails). */
struct acceptor {
    struct fut_future base;
    struct fut_io *listener;
    struct fut_accept acc;
};

static void start_conn(struct fut_io *io)
{
    struct conn c;
    fut_future_init(&c.base, &conn_vt);
    c.io = io;
    fut_tcp_set_nodelay(io, 1);
    if (fut_spawn(NULL, &c, sizeof c, NULL))
        fut_io_close(io);
}

static int acceptor_poll(struct fut_future *f, struct fut_context *cx)
{
    struct acceptor *a = (struct acceptor *)f;
    FUT_BEGIN(f);
    for (;;) {
        fut_accept_init(&a->acc, a->listener);
        FUT_AWAIT(f, &a->acc);
        if (a->acc.result < 0)
            break;
        start_conn(a->acc.conn);
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(acceptor_vt, "echo_min_acceptor", acceptor_poll, NULL);

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: echo_min PORT [WORKERS]\n");
        return 2;
    }
    char *end;
    long workers = 0;
    if (argc == 3) {
        workers = strtol(argv[2], &end, 10);
        if (*argv[2] == 0 || *end || workers < 1 || workers > 256) {
            fprintf(stderr, "echo_min: bad worker count '%s'\n", argv[2]);
            return 2;
        }
    }
    long port = strtol(argv[1], &end, 10);
    if (*argv[1] == 0 || *end || port < 0 || port > 65535) {
        fprintf(stderr, "echo_min: bad port '%s'\n", argv[1]);
        return 2;
    }
    static const int sigs[] = {SIGTERM, SIGINT};
    struct fut_io *sig = NULL, *listener = NULL;
    int r = fut_signal_open(sigs, 2, &sig);
    struct sockaddr_storage ss;
    socklen_t len;
    if (r == 0)
        r = fut_addr_parse("127.0.0.1", (int)port, &ss, &len);
    if (r == 0)
        r = fut_tcp_listen((struct sockaddr *)&ss, len, 4096, &listener);
    if (r == 0)
        r = fut_io_local_addr(listener, &ss, &len);
    struct fut_runtime *rt = NULL;
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    if (workers > 0) {
        cfg.flavor = FUT_RT_MULTI_THREAD;
        cfg.workers = (int)workers;
    }
    if (r == 0)
        r = fut_runtime_new(&cfg, &rt);
    struct acceptor a;
    fut_future_init(&a.base, &acceptor_vt);
    a.listener = listener;
    if (r == 0)
        r = fut_spawn(rt, &a, sizeof a, NULL);
    if (r != 0) {
        fprintf(stderr, "echo_min: %s\n", fut_strerror(r));
        return 1;
    }
    fprintf(stderr, "backend: %s\n", fut_runtime_backend(rt));
    fprintf(stderr, "echo_min: listening on 127.0.0.1:%d\n",
            fut_addr_port(&ss));
    struct fut_signal_recv rx;
    fut_signal_recv_init(&rx, sig);
    fut_block_on(rt, &rx.base);
    fut_drop(&rx.base);
    struct fut_rt_stats st;
    fut_runtime_stats(rt, &st);
    fprintf(stderr, "echo_min: polls %lu steals %lu stolen %lu\n",
            (unsigned long)st.polls, (unsigned long)st.steals,
            (unsigned long)st.stolen);
    fut_runtime_free(rt); /* drops the acceptor and the connections */
#ifdef FUT_HAVE_URING
    uintptr_t loc = fut__load(&fut__uring_ops_local, FUT__RELAXED);
    uintptr_t fgn = fut__load(&fut__uring_ops_foreign, FUT__RELAXED);
    if (loc + fgn)
        fprintf(stderr, "echo_min: io_uring ops %lu, foreign %lu (%.1f%%)\n",
                (unsigned long)(loc + fgn), (unsigned long)fgn,
                100.0 * (double)fgn / (double)(loc + fgn));
#endif
    fut_io_close(listener);
    fut_io_close(sig);
    return 0;
}
