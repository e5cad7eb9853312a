/* echo_server: a TCP echo server on fut (the tcp_echo benchmark's server).
 *
 *   echo_server [--workers N] [--host ADDR] PORT
 *
 * --workers 0 (the default) runs on the current-thread runtime; N >= 1 on
 * the multi-thread runtime with N workers. Listens on ADDR (default
 * 127.0.0.1):PORT; every connection is a task that reads up to 4 KiB and
 * writes it all back (TCP_NODELAY on), like the peers' servers.
 * SIGINT/SIGTERM: stop accepting, give open connections up to 5 s to
 * finish, then exit 0.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fut.h"

#define GRACE_NS (5LL * 1000 * 1000 * 1000)
#define POLL_NS (10LL * 1000 * 1000)

static atomic_long live; /* open connections */

/* ------------------------------------------------------------ connection */

struct conn {
    struct fut_future base;
    struct fut_io *io;
    struct fut_io_read rd;
    struct fut_io_write_all wr;
    char buf[4096];
};

static int conn_poll(struct fut_future *f, struct fut_context *cx)
{
    struct conn *c = (struct conn *)f;
    FUT_BEGIN(f);
    for (;;) {
        fut_io_read_init(&c->rd, c->io, c->buf, sizeof c->buf);
        FUT_AWAIT(f, &c->rd);
        if (c->rd.result <= 0)
            break; /* EOF or error: this connection only */
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
    atomic_fetch_sub(&live, 1);
}
FUT_ASYNC_VTABLE(conn_vt, "echo_conn", conn_poll, conn_cleanup);

/* ----------------------------------------------------------- accept loop */

struct acceptor {
    struct fut_future base;
    struct fut_io *listener;
    struct fut_accept acc;
};

static int acceptor_poll(struct fut_future *f, struct fut_context *cx)
{
    struct acceptor *a = (struct acceptor *)f;
    FUT_BEGIN(f);
    for (;;) {
        fut_accept_init(&a->acc, a->listener);
        FUT_AWAIT(f, &a->acc); /* EMFILE & co. back off inside */
        if (a->acc.result < 0) {
            fprintf(stderr, "echo_server: accept: %s\n",
                    fut_strerror(a->acc.result));
            break;
        }
        {
            struct conn c;
            fut_future_init(&c.base, &conn_vt);
            c.io = a->acc.conn;
            fut_tcp_set_nodelay(c.io, 1);
            atomic_fetch_add(&live, 1);
            if (fut_spawn(NULL, &c, sizeof c, NULL) != 0) {
                fut_io_close(c.io);
                atomic_fetch_sub(&live, 1);
            }
        }
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(acceptor_vt, "acceptor", acceptor_poll, NULL);

/* ------------------------------------------------------------------ main */

/* Waits for SIGINT/SIGTERM, stops accepting, drains. */
struct server {
    struct fut_future base;
    struct fut_io *sig;
    struct fut_io *listener;
    struct fut_join acceptor;
    struct fut_signal_recv rx;
    struct fut_sleep pause;
    int64_t deadline;
};

static int server_poll(struct fut_future *f, struct fut_context *cx)
{
    struct server *s = (struct server *)f;
    FUT_BEGIN(f);
    fut_signal_recv_init(&s->rx, s->sig);
    FUT_AWAIT(f, &s->rx);
    fprintf(stderr, "echo_server: signal %d: shutting down\n", s->rx.signo);
    fut_drop(&s->acceptor.base); /* aborts the accept loop */
    fut_io_close(s->listener);
    s->listener = NULL;
    s->deadline = fut_time_now() + GRACE_NS;
    while (atomic_load(&live) > 0 && fut_time_now() < s->deadline) {
        fut_sleep_init(&s->pause, POLL_NS);
        FUT_AWAIT(f, &s->pause);
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(server_vt, "server", server_poll, NULL);

static int usage(void)
{
    fprintf(stderr, "usage: echo_server [--workers N] [--host ADDR] PORT\n");
    return 2;
}

int main(int argc, char **argv)
{
    int workers = 0, port = -1;
    const char *host = "127.0.0.1";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--workers") && i + 1 < argc)
            workers = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--host") && i + 1 < argc)
            host = argv[++i];
        else if (i == argc - 1)
            port = atoi(argv[i]);
        else
            return usage();
    }
    if (port < 0 || port > 65535 || workers < 0)
        return usage();

    /* Signals first: threads started later inherit the blocked mask. */
    int sigs[2] = {SIGINT, SIGTERM};
    struct server srv;
    memset(&srv, 0, sizeof srv);
    int r = fut_signal_open(sigs, 2, &srv.sig);
    if (r < 0) {
        fprintf(stderr, "echo_server: signals: %s\n", fut_strerror(r));
        return 1;
    }
    struct sockaddr_storage ss;
    socklen_t len;
    if (fut_addr_parse(host, port, &ss, &len) != 0)
        return usage();
    r = fut_tcp_listen((struct sockaddr *)&ss, len, 4096, &srv.listener);
    if (r < 0) {
        fprintf(stderr, "echo_server: listen %s:%d: %s\n", host, port,
                fut_strerror(r));
        return 1;
    }
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    if (workers > 0) {
        cfg.flavor = FUT_RT_MULTI_THREAD;
        cfg.workers = workers;
    }
    struct fut_runtime *rt;
    r = fut_runtime_new(&cfg, &rt);
    if (r < 0) {
        fprintf(stderr, "echo_server: runtime: %s\n", fut_strerror(r));
        /* 77: this build lacks the flavor (bench/run.sh skips) */
        return r == FUT_EINVAL && workers > 0 ? 77 : 1;
    }
    struct acceptor a;
    fut_future_init(&a.base, &acceptor_vt);
    a.listener = srv.listener;
    r = fut_spawn(rt, &a, sizeof a, &srv.acceptor);
    if (r < 0) {
        fprintf(stderr, "echo_server: spawn: %s\n", fut_strerror(r));
        return 1;
    }
    fprintf(stderr, "echo_server: listening on %s:%d (%s)\n", host, port,
            workers ? "multi-thread" : "current-thread");
    fut_future_init(&srv.base, &server_vt);
    fut_block_on(rt, &srv.base);
    fut_drop(&srv.base);
    fut_runtime_free(rt); /* drops connections still open after the grace */
    if (srv.listener)
        fut_io_close(srv.listener);
    fut_io_close(srv.sig);
    return 0;
}
