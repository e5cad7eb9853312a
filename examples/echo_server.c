/* SPDX-License-Identifier: MIT */
/* echo_server: a TCP echo server on fut (the tcp_echo benchmark's server).
 *
 * What it shows: structured concurrency for a server. Every task - the
 * acceptor, each connection, the SIGUSR1 dumper - is a child of one task
 * scope (fut/scope.h), so a graceful shutdown is one call
 * (fut_shutdown): SIGINT/SIGTERM stops accepting and cancels the scope's
 * token; each connection finishes the echo in flight and closes; after a
 * grace period the rest are dropped; the exit code says whether anything
 * leaked. Each read also runs under an idle deadline kept by one sleep
 * per connection, so a client that goes quiet does not hold its
 * connection forever. The deadline and the token are checked by the
 * connection's own read step (conn_read), armed once per connection:
 * no future is built around each read.
 *
 * Run it:
 *   ./build/examples/echo_server 7000             current-thread runtime
 *   ./build/examples/echo_server --workers 2 7000 multi-thread, 2 workers
 *   nc 127.0.0.1 7000                             type, see it echoed
 * Options: [--workers N] (0, the default: current-thread; N >= 1:
 * multi-thread with N workers) [--host ADDR] (default 127.0.0.1)
 * [--idle-timeout S] (seconds, fractions allowed: a connection with
 * nothing to read for that long is closed; default 60) PORT (0 picks a
 * free port; the "listening on" line on stderr names it).
 *
 * Every connection reads up to 4 KiB and writes it all back (TCP_NODELAY
 * on), like the peers' servers. Exit: 0 once every connection is closed
 * and nothing leaked, 3 if something did. SIGUSR1: print the await tree
 * of every task (the task dump) on stderr.
 *
 * The flow, in the order of this file:
 *   main            opens the signals and the listener, runs 'server'
 *   struct server   opens the scope, spawns the acceptor and the dumper
 *                   into it, awaits fut_shutdown
 *   struct acceptor accepts until the scope's token is cancelled; each
 *                   connection is a 'struct conn' spawned into the scope
 *   struct conn     read (idle deadline and token: conn_read) ->
 *                   write all -> again
 *   struct dumper   SIGUSR1 -> fut_runtime_dump
 * The structs come first, in that order, then their poll functions.
 */
#include <signal.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdline.h"
#include "fut.h"

#define GRACE_NS                                                             \
    (5LL * 1000 * 1000 * 1000) /* shutdown: time given to
                                               open connections */
#define DUMP_BYTES (256 * 1024)
#define BUF_BYTES 4096 /* a connection's buffer (the peers' size) */

/* An idle connection (nothing to read) is closed after this; option
 * --idle-timeout. Redis: timeout 0 (never); nginx's stream module:
 * proxy_timeout 10m. */
static int64_t idle_ns = 60LL * 1000 * 1000 * 1000;

static atomic_long live;   /* open connections */
static atomic_long served; /* connections closed so far */

/* ---------------------------------------------------------------- state */

/* The server: the task main blocks on. Owns the scope every other task
 * runs in, and the graceful shutdown that ends it. */
struct server {
    struct fut_future base;
    struct fut_io *sig;     /* SIGINT/SIGTERM (signalfd) */
    struct fut_io *dumpsig; /* SIGUSR1 */
    struct fut_io *listener;
    struct fut_scope scope; /* parent of every task below */
    struct fut_shutdown sd; /* signal -> cancel -> grace -> drop */
    int inited;             /* the scope was initialised */
};

/* The acceptor, a child of the scope: accepts until the scope's token is
 * cancelled; each connection is spawned into the scope, so the
 * shutdown reaches it. */
struct acceptor {
    struct fut_future base;
    struct fut_io *listener;          /* the server's */
    struct fut_scope *scope;          /* the server's */
    struct fut_accept acc;            /* the accept in flight */
    struct fut_until_cancelled until; /* acc, until the token fires */
};

/* One connection, a child of the scope: echoes until EOF, an error, the
 * idle deadline, or the scope's token (graceful shutdown): then it
 * finishes the write in flight and closes. A hard cancel (the end of the
 * grace period) drops it wherever it stands; the cleanup closes it.
 *
 * The idle deadline and the token cost no future per read (a fut_timeout
 * per read armed and cancelled a timer every time: +360 instructions per
 * echo; an until_cancelled and an idle guard around each read, +460,
 * callgrind). Both are armed once per connection and looked at by the
 * read step (conn_read) only when the read waits: the 'idle' sleep stays
 * armed across reads and each read moves 'last_read' (its start); when
 * the sleep fires before last_read + idle_ns it is re-armed for that time
 * - once per idle period, not once per read - and when it fires after,
 * the read is dropped and the connection closes. 'stop' (the token's
 * waiter) stays registered from the first wait to the close; a cancel
 * seen while the connection writes wakes the task, which finishes the
 * write and stops before its next read. Either may wake the task while it
 * writes: a spurious wake, harmless (C9). */
struct conn {
    struct fut_future base;
    struct fut_io *io;
    struct fut_token *tok;      /* the scope's */
    struct fut_sleep idle;      /* the idle deadline */
    struct fut_token_wait stop; /* the token's waiter (conn_read) */
    struct fut_waker stop_wk;   /* the waker 'stop' holds: compared only,
                                 never called or dropped */
    int64_t last_read;          /* when the last read started */
    struct fut_io_read rd;      /* reads up to BUF_BYTES */
    struct fut_io_write_all wr; /* writes them back */
    char buf[BUF_BYTES];
};

/* SIGUSR1: prints the await tree of every task on stderr, until the
 * scope's token is cancelled. */
struct dumper {
    struct fut_future base;
    struct fut_io *sig;    /* SIGUSR1 (signalfd) */
    struct fut_token *tok; /* the scope's */
    struct fut_signal_recv rx;
    struct fut_until_cancelled until; /* rx, until the token fires */
};

/* The poll functions below refer to the vtables of the tasks they spawn
 * before those are defined (FUT_ASYNC_VTABLE, further down). */
static const struct fut_future_vtable acceptor_vt, conn_vt, dumper_vt;

/* --------------------------------------------------------------- server */

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

/* ------------------------------------------------------------- acceptor */

/* Spawns the task of a new connection into the scope. */
static void start_conn(struct acceptor *a, struct fut_io *io)
{
    struct conn c;
    memset(&c, 0, offsetof(struct conn, buf));
    fut_future_init(&c.base, &conn_vt);
    c.io = io;
    c.tok = fut_scope_token(a->scope);
    fut_tcp_set_nodelay(c.io, 1);
    atomic_fetch_add(&live, 1);
    if (fut_scope_spawn(a->scope, &c, sizeof c, NULL) != 0) {
        fut_io_close(c.io);
        atomic_fetch_sub(&live, 1);
    }
}

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
        start_conn(a, a->acc.conn);
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(acceptor_vt, "acceptor", acceptor_poll, NULL);

/* ----------------------------------------------------------- connection */

/* The read of a connection under its token and its idle deadline:
 * FUT_PENDING (0), FUT_READY (the read is READY: its result is in c->rd), or
 * FUT_ECANCELED (the token: the scope shuts down) / FUT_ETIMEDOUT (idle):
 * conn_poll then drops the read where it stands. The token is looked at first, like
 * fut_until_cancelled (biased: a cancel seen in the same poll as the
 * read's READY wins); the waiter and the sleep are polled (their wakers
 * registered) only when the read waits. */
static int conn_read(struct conn *c, struct fut_context *cx)
{
    if (fut_token_is_cancelled(c->tok))
        return FUT_ECANCELED;
    if (fut_poll(&c->rd.base, cx) == FUT_READY)
        return FUT_READY;
    /* Registered under the token's lock after its flag is checked under
     * it: a cancel during the read's poll is seen here or wakes us. Once
     * it holds this poll's waker it stays registered until the cancel
     * (which sets the flag looked at above before it wakes us): no poll
     * of it is needed while the waker is the same one (its clone in the
     * waiter keeps the target alive, so equal pointers are the same
     * target). */
    if (!fut_waker_will_wake(&c->stop_wk, &cx->waker)) {
        if (fut_poll(&c->stop.base, cx) == FUT_READY)
            return FUT_ECANCELED;
        c->stop_wk = cx->waker;
    }
    while (fut_poll(&c->idle.base, cx) == FUT_READY) {
        int64_t due = c->last_read + idle_ns;
        if (fut_time_now() >= due)
            return FUT_ETIMEDOUT;
        fut_sleep_reset(&c->idle, due); /* fired early: move it on */
    }
    return FUT_PENDING;
}

static int conn_poll(struct fut_future *f, struct fut_context *cx)
{
    struct conn *c = (struct conn *)f;
    int r;
    FUT_BEGIN(f);
    fut_sleep_until_init(&c->idle, fut_time_now() + idle_ns);
    fut_token_wait_init(&c->stop, c->tok);
    for (;;) {
        c->last_read = fut_time_now();
        fut_io_read_init(&c->rd, c->io, c->buf, sizeof c->buf);
        /* The read is the child awaited (a task dump shows it, a drop
         * drops it); conn_read polls it under the token and deadline. */
        FUT_AWAIT_STEP(f, &c->rd, r, conn_read(c, cx));
        if (r < 0 || c->rd.result <= 0)
            break; /* shutting down, idle, EOF or error */
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
    if (c->idle.base.vt)
        fut_drop(&c->idle.base); /* disarms its timer */
    if (c->stop.base.vt)
        fut_drop(&c->stop.base); /* off the token before its fini */
    fut_io_close(c->io);
    atomic_fetch_sub(&live, 1);
    atomic_fetch_add(&served, 1);
}
FUT_ASYNC_VTABLE(conn_vt, "echo_conn", conn_poll, conn_cleanup);

/* --------------------------------------------------------------- dumper */

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

/* ----------------------------------------------------------------- main */

static const char usage_text[] =
    "usage: echo_server [--workers N] [--host ADDR] [--idle-timeout S] "
    "PORT\n"
    "  A TCP echo server. PORT 0: any free port (printed).\n"
    "  --workers N        N >= 1: the multi-thread runtime with N workers\n"
    "                     (0, the default: the current-thread runtime)\n"
    "  --host ADDR        the address to listen on (default 127.0.0.1)\n"
    "  --idle-timeout S   close a connection idle for S seconds\n"
    "  -h, --help         this text\n";

/* Parses the command line: 0, 1 (--help) or -1 (a bad argument, said). */
static int parse_args(int argc, char **argv, int *workers, const char **host,
                      int *port)
{
    static const char prog[] = "echo_server";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (ex_is_help(a))
            return 1;
        if (!strcmp(a, "--host")) {
            if (!(*host = ex_value(prog, argc, argv, &i)))
                return -1;
        } else if (!strcmp(a, "--idle-timeout")) {
            if (!(v = ex_value(prog, argc, argv, &i)) ||
                !ex_secs(prog, "--idle-timeout", v, &idle_ns))
                return -1;
        } else if (ex_server_arg(prog, argc, argv, &i, workers, port) < 0) {
            return -1;
        }
    }
    return *port < 0 ? ex_bad(prog, "missing", "PORT") : 0;
}

int main(int argc, char **argv)
{
    int workers = 0, port = -1, r;
    const char *host = "127.0.0.1";
    r = parse_args(argc, argv, &workers, &host, &port);
    if (r != 0)
        return ex_usage(r > 0, usage_text);

    /* Signals first: threads started later inherit the blocked mask. */
    int sigs[2] = {SIGINT, SIGTERM}, usr1 = SIGUSR1;
    static struct server srv; /* big (the scope): not on the stack */
    memset(&srv, 0, sizeof srv);
    r = fut_signal_open(sigs, 2, &srv.sig);
    if (r == 0)
        r = fut_signal_open(&usr1, 1, &srv.dumpsig);
    if (r < 0) {
        fprintf(stderr, "echo_server: signals: %s\n", fut_strerror(r));
        return 1;
    }
    struct sockaddr_storage ss;
    socklen_t len;
    if (fut_addr_parse(host, port, &ss, &len) != 0) {
        ex_bad("echo_server", "bad address", host);
        return ex_usage(0, usage_text);
    }
    r = fut_tcp_listen((struct sockaddr *)&ss, len, 4096, &srv.listener);
    if (r < 0) {
        fprintf(stderr, "echo_server: listen %s:%d: %s\n", host, port,
                fut_strerror(r));
        return 1;
    }
    if (fut_io_local_addr(srv.listener, &ss, &len) == 0)
        port = fut_addr_port(&ss); /* the one port 0 picked */
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    if (workers > 0) {
        cfg.flavor = FUT_RT_MULTI_THREAD;
        cfg.workers = workers;
    }
    struct fut_runtime *rt;
    r = fut_runtime_new(&cfg, &rt);
    if (r < 0) {
        fprintf(stderr, "echo_server: runtime: %s%s%s\n", fut_strerror(r),
                *fut_io_backend_error() ? ": " : "", fut_io_backend_error());
        /* 77: this build lacks the flavor (bench/run.sh skips) */
        return r == FUT_EINVAL && workers > 0 ? 77 : 1;
    }
    fprintf(stderr, "backend: %s\n", fut_runtime_backend(rt));
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
        fprintf(stderr,
                "echo_server: leak: %ld blocks, %ld connections "
                "still open\n",
                left, atomic_load(&live));
        return 3;
    }
    return 0;
}
