/* echo_server: a TCP echo server on fut (the tcp_echo benchmark's server).
 *
 *   echo_server [--workers N] [--host ADDR] PORT
 *
 * --workers 0 (the default) runs on the current-thread runtime; N >= 1 on
 * the multi-thread runtime with N workers. Listens on ADDR (default
 * 127.0.0.1):PORT; every connection is a task that reads up to 4 KiB and
 * writes it all back (TCP_NODELAY on), like the peers' servers.
 * Every connection is a child of one task scope (fut/scope.h).
 * SIGINT/SIGTERM: graceful shutdown in one call (fut_shutdown): stop
 * accepting, cancel the scope's token (each connection finishes the
 * echo in flight and closes), give them up to 5 s, then drop the rest;
 * exit 0 once every connection is closed and nothing leaked (3 if
 * something did). SIGUSR1: print the await tree of every task (the task
 * dump) on stderr.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fut.h"

#define GRACE_NS (5LL * 1000 * 1000 * 1000)
#define DUMP_BYTES (256 * 1024)

static atomic_long live;   /* open connections */
static atomic_long served; /* connections closed so far */

/* ------------------------------------------------------------ connection */

/* One connection, a child of the server's scope: echoes until EOF, or
 * until the scope's token is cancelled (graceful shutdown): then it
 * finishes the write in flight and closes. A hard cancel (the end of the
 * grace period) drops it wherever it stands; the cleanup closes it. */
struct conn {
    struct fut_future base;
    struct fut_io *io;
    struct fut_token *tok;
    struct fut_io_read rd;
    struct fut_until_cancelled until;
    struct fut_io_write_all wr;
    char buf[4096];
};

static int conn_poll(struct fut_future *f, struct fut_context *cx)
{
    struct conn *c = (struct conn *)f;
    FUT_BEGIN(f);
    for (;;) {
        fut_io_read_init(&c->rd, c->io, c->buf, sizeof c->buf);
        fut_until_cancelled_init(&c->until, &c->rd.base, c->tok);
        FUT_AWAIT(f, &c->until);
        if (c->until.result < 0 || c->rd.result <= 0)
            break; /* shutting down, EOF or error: this connection only */
        fut_io_write_all_init(&c->wr, c->io, c->buf, (size_t)c->rd.result);
        FUT_AWAIT(f, &c->wr);
        if (c->wr.result < 0)
            break;
    }
    FUT_END(f);
}

static void conn_cleanup(struct fut_future *f)
{
    struct conn *c = (struct conn *)f;
    fut_io_close(c->io);
    atomic_fetch_sub(&live, 1);
    atomic_fetch_add(&served, 1);
}
FUT_ASYNC_VTABLE(conn_vt, "echo_conn", conn_poll, conn_cleanup);

/* ----------------------------------------------------------- accept loop */

/* Accepts until the scope's token is cancelled; each connection is
 * spawned into the scope, so the server's shutdown reaches it. */
struct acceptor {
    struct fut_future base;
    struct fut_io *listener;
    struct fut_scope *scope;
    struct fut_accept acc;
    struct fut_until_cancelled until;
};

static int acceptor_poll(struct fut_future *f, struct fut_context *cx)
{
    struct acceptor *a = (struct acceptor *)f;
    FUT_BEGIN(f);
    for (;;) {
        fut_accept_init(&a->acc, a->listener);
        fut_until_cancelled_init(&a->until, &a->acc.base,
                                 fut_scope_token(a->scope));
        FUT_AWAIT(f, &a->until); /* EMFILE & co. back off inside */
        if (a->until.result < 0)
            break; /* stop accepting */
        if (a->acc.result < 0) {
            fprintf(stderr, "echo_server: accept: %s\n",
                    fut_strerror(a->acc.result));
            break;
        }
        {
            struct conn c;
            memset(&c, 0, sizeof c);
            fut_future_init(&c.base, &conn_vt);
            c.io = a->acc.conn;
            c.tok = fut_scope_token(a->scope);
            fut_tcp_set_nodelay(c.io, 1);
            atomic_fetch_add(&live, 1);
            if (fut_scope_spawn(a->scope, &c, sizeof c, NULL) != 0) {
                fut_io_close(c.io);
                atomic_fetch_sub(&live, 1);
            }
        }
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(acceptor_vt, "acceptor", acceptor_poll, NULL);

/* ------------------------------------------------------------ task dump */

/* SIGUSR1: prints the await tree of every task on stderr. */
struct dumper {
    struct fut_future base;
    struct fut_io *sig;
    struct fut_token *tok;
    struct fut_signal_recv rx;
    struct fut_until_cancelled until;
};

static int dumper_poll(struct fut_future *f, struct fut_context *cx)
{
    struct dumper *d = (struct dumper *)f;
    FUT_BEGIN(f);
    for (;;) {
        fut_signal_recv_init(&d->rx, d->sig);
        fut_until_cancelled_init(&d->until, &d->rx.base, d->tok);
        FUT_AWAIT(f, &d->until);
        if (d->until.result < 0 || d->rx.result < 0)
            break;
        {
            char *buf = malloc(DUMP_BYTES);
            if (buf) {
                long n = fut_runtime_dump(NULL, buf, DUMP_BYTES);
                if (n >= 0)
                    fprintf(stderr, "%s%s", buf,
                            n >= DUMP_BYTES ? "...(truncated)\n" : "");
                free(buf);
            }
        }
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(dumper_vt, "sigusr1_dumper", dumper_poll, NULL);

/* ------------------------------------------------------------------ main */

/* Opens the scope, starts the acceptor and the dumper in it, then waits
 * for the graceful shutdown (fut_shutdown: SIGINT/SIGTERM -> stop
 * accepting -> GRACE_NS for the connections -> drop the rest). */
struct server {
    struct fut_future base;
    struct fut_io *sig, *dumpsig;
    struct fut_io *listener;
    struct fut_scope scope;
    struct fut_shutdown sd;
    int inited;
};

static int server_poll(struct fut_future *f, struct fut_context *cx)
{
    struct server *s = (struct server *)f;
    FUT_BEGIN(f);
    fut_scope_init(&s->scope, NULL, FUT_SCOPE_SUPERVISE);
    s->inited = 1;
    {
        struct acceptor a;
        memset(&a, 0, sizeof a);
        fut_future_init(&a.base, &acceptor_vt);
        a.listener = s->listener;
        a.scope = &s->scope;
        int r = fut_scope_spawn(&s->scope, &a, sizeof a, NULL);
        if (r < 0)
            fprintf(stderr, "echo_server: spawn: %s\n", fut_strerror(r));
        struct dumper d;
        memset(&d, 0, sizeof d);
        fut_future_init(&d.base, &dumper_vt);
        d.sig = s->dumpsig;
        d.tok = fut_scope_token(&s->scope);
        if (s->dumpsig)
            fut_scope_spawn(&s->scope, &d, sizeof d, NULL);
    }
    fut_shutdown_init(&s->sd, &s->scope, NULL, s->sig, GRACE_NS);
    FUT_AWAIT(f, &s->sd);
    fprintf(stderr,
            "echo_server: signal %d: shut down (%s): %ld connections "
            "served, %llu dropped at the end of the grace period\n",
            s->sd.signo, s->sd.result == 0 ? "graceful" : "grace expired",
            atomic_load(&served), (unsigned long long)s->sd.dropped);
    FUT_END(f);
}

static void server_cleanup(struct fut_future *f)
{
    struct server *s = (struct server *)f;
    if (s->inited)
        fut_drop(&s->scope.base); /* waits for every child's drop */
}
FUT_ASYNC_VTABLE(server_vt, "server", server_poll, server_cleanup);

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
    int sigs[2] = {SIGINT, SIGTERM}, usr1 = SIGUSR1;
    static struct server srv; /* big (the scope): not on the stack */
    memset(&srv, 0, sizeof srv);
    int r = fut_signal_open(sigs, 2, &srv.sig);
    if (r == 0)
        r = fut_signal_open(&usr1, 1, &srv.dumpsig);
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
    fprintf(stderr, "echo_server: listening on %s:%d (%s)\n", host, port,
            workers ? "multi-thread" : "current-thread");
    fut_future_init(&srv.base, &server_vt);
    fut_block_on(rt, &srv.base);
    fut_drop(&srv.base); /* the scope: every connection is closed now */
    fut_io_close(srv.listener);
    fut_io_close(srv.sig);
    fut_io_close(srv.dumpsig);
    fut_runtime_free(rt);
    long left = fut_alloc_live();
    if (left != 0 || atomic_load(&live) != 0) {
        fprintf(stderr, "echo_server: leak: %ld blocks, %ld connections "
                        "still open\n", left, atomic_load(&live));
        return 3;
    }
    return 0;
}
