/* SPDX-License-Identifier: MIT */
/* chat_fiber: line-broadcast chat with fibers (fut/fiber.h): each line a
 * client sends goes to every other client once, never back to it. One
 * fiber per client waits on its socket and its own unbounded queue at
 * once (a select), so a slow client grows its queue, blocking nobody.
 * Run: chat_fiber [--workers N] PORT (PORT 0: any, printed as "listening
 * on P"; "backend: NAME" on stderr), then several 'nc 127.0.0.1 P'.
 * SIGINT/SIGTERM: stop accepting, clients close at their next wait (the
 * rest after 2 s); exit 0. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmdline.h"
#include "fut.h"

struct msg {
    size_t len;
    char text[1024];
}; /* a line or a piece of one */
struct client {
    struct fut_mpsc_tx tx; /* its queue; used and dropped under 'lock' */
    struct client *next;   /* the list of clients, under 'lock' */
};

static struct fut_scope scope; /* every fiber of the server */
static struct fut_io *ln, *sig;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* no await in */
static struct client *clients;

/* Queues the line for every client but 'from'; never waits. */
static void broadcast(struct client *from, const char *p, size_t n)
{
    struct msg m;
    pthread_mutex_lock(&lock);
    for (size_t off = 0; off < n; off += m.len) {
        m.len = n - off < sizeof m.text ? n - off : sizeof m.text;
        memcpy(m.text, p + off, m.len);
        for (struct client *c = clients; c; c = c->next)
            if (c != from) /* unbounded: fails only without memory */
                fut_mpsc_try_send(&c->tx, &m);
    }
    pthread_mutex_unlock(&lock);
}

/* A client: its lines to the others, its queue to it (select: both safe). */
static intptr_t client(void *io)
{
    struct client c;
    struct fut_mpsc_rx rx;
    if (fut_mpsc_unbounded_new(sizeof(struct msg), NULL, &c.tx, &rx))
        return fut_io_close(io), FUT_ENOMEM;
    pthread_mutex_lock(&lock);
    c.next = clients;
    clients = &c;
    pthread_mutex_unlock(&lock);
    char buf[4096];
    size_t have = 0, n;
    struct msg m;
    struct fut_io_read rd;
    struct fut_mpsc_recv rv;
    struct fut_select2 sel;
    for (;;) {
        fut_io_read_init(&rd, io, buf + have, sizeof buf - have);
        fut_mpsc_recv_init(&rv, &rx, &m);
        fut_select2_init(&sel, &rd.base, &rv.base, FUT_SELECT_FAIR);
        if (fut_await_token(&sel, fut_scope_token(&scope)) != 0)
            break;
        if (sel.winner ? fut_write_all(io, m.text, m.len) < 0 /* queued */
                       : rd.result <= 0) /* read: EOF or error */
            break;
        if (sel.winner)
            continue;
        have += (size_t)rd.result; /* whole lines; over 4 KiB: pieces */
        char *nl = memrchr(buf, '\n', have);
        n = nl ? (size_t)(nl - buf) + 1 : have == sizeof buf ? have : 0;
        broadcast(&c, buf, n);
        memmove(buf, buf + n, have -= n);
    }
    pthread_mutex_lock(&lock);
    struct client **pp = &clients;
    while (*pp != &c)
        pp = &(*pp)->next;
    *pp = c.next;
    fut_mpsc_tx_drop(&c.tx); /* nobody can queue to it any more */
    pthread_mutex_unlock(&lock);
    fut_mpsc_rx_drop(&rx);
    fut_io_close(io);
    return 0;
}

static intptr_t acceptor(void *arg)
{
    struct fut_accept a;
    for (fut_accept_init(&a, ln);
         fut_await_token(&a, fut_scope_token(&scope)) == 0 && !a.result;
         fut_accept_init(&a, ln))
        if (fut_scope_fiber_spawn(&scope, client, a.conn, NULL) != 0)
            fut_io_close(a.conn);
    return 0;
}

/* Serves 'ln' on 'rt' until a signal on 'sig' (NULL: until the scope's
 * token is cancelled, test/sim_chat.c) and the clients are gone. */
static int serve(struct fut_runtime *rt)
{
    struct fut_shutdown sd; /* signal -> token -> 2 s grace -> cancel */
    fut_scope_init(&scope, rt, FUT_SCOPE_SUPERVISE);
    fut_shutdown_init(&sd, &scope, NULL, sig, 2000LL * 1000 * 1000);
    int r = fut_scope_fiber_spawn(&scope, acceptor, NULL, NULL) ||
            fut_block_on(rt, &sd.base);
    fut_drop(&sd.base); /* its grace timer goes with it, before this frame */
    fut_drop(&scope.base);
    return r;
}

static const char usage_text[] =
    "usage: chat_fiber [--workers N] PORT\n"
    "  A TCP chat server: every line goes to every other client.\n"
    "  PORT 0: any free port (printed).\n"
    "  --workers N   N >= 1: the multi-thread runtime with N workers\n"
    "                (0, the default: the current-thread runtime)\n"
    "  -h, --help    this text\n";

int main(int argc, char **argv)
{
    int w = 0, port = -1, s[] = {SIGINT, SIGTERM};
    int r = ex_server_args("chat_fiber", argc, argv, &w, &port);
    if (r != 0)
        return ex_usage(r > 0, usage_text);
    struct fut_rt_config cfg = {.flavor = w > 0, .workers = w};
    struct fut_runtime *rt;
    struct sockaddr_storage ss;
    socklen_t len;
    if (fut_signal_open(s, 2, &sig) || fut_runtime_new(&cfg, &rt) ||
        fut_addr_parse(NULL, port, &ss, &len) ||
        fut_tcp_listen((struct sockaddr *)&ss, len, 0, &ln) ||
        fut_io_local_addr(ln, &ss, &len))
        return 2; /* cannot start: what was made dies with the process */
    fprintf(stderr, "backend: %s\n", fut_runtime_backend(rt));
    dprintf(1, "listening on %d\n", fut_addr_port(&ss));
    r = serve(rt);
    fut_io_close(ln);
    fut_runtime_free(rt);
    fut_io_close(sig);
    return r;
}
