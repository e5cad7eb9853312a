/* SPDX-License-Identifier: MIT */
/* echo_fiber: a TCP echo server, one fiber per connection (fut/fiber.h).
 * Run: echo_fiber [--workers N] PORT (N >= 1: multi-thread; PORT 0: any,
 * printed as "listening on P"; "backend: NAME" on stderr). SIGINT/SIGTERM:
 * stop accepting; each connection closes at its next read, the rest are
 * cancelled after 2 s. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include "cmdline.h"
#include "fut.h"

static struct fut_scope scope; /* every fiber of the server */
static struct fut_io *ln, *sig;

static intptr_t conn(void *io)
{
    char buf[4096];
    struct fut_io_read rd;
    do
        fut_io_read_init(&rd, io, buf, sizeof buf);
    while (fut_await_token(&rd, fut_scope_token(&scope)) == 0 &&
           rd.result > 0 && fut_write_all(io, buf, (size_t)rd.result) > 0);
    fut_io_close(io);
    return 0;
}

static intptr_t acceptor(void *arg)
{
    struct fut_accept a;
    for (fut_accept_init(&a, ln);
         fut_await_token(&a, fut_scope_token(&scope)) == 0 && !a.result;
         fut_accept_init(&a, ln))
        if (fut_tcp_set_nodelay(a.conn, 1) != 0 ||
            fut_scope_fiber_spawn(&scope, conn, a.conn, NULL) != 0)
            fut_io_close(a.conn);
    return 0;
}

static const char usage_text[] =
    "usage: echo_fiber [--workers N] PORT\n"
    "  A TCP echo server, one fiber per connection.\n"
    "  PORT 0: any free port (printed).\n"
    "  --workers N   N >= 1: the multi-thread runtime with N workers\n"
    "                (0, the default: the current-thread runtime)\n"
    "  -h, --help    this text\n";

int main(int argc, char **argv)
{
    int w = 0, port = -1, s[] = {SIGINT, SIGTERM};
    int r = ex_server_args("echo_fiber", argc, argv, &w, &port);
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
    struct fut_shutdown sd; /* signal -> token -> 2 s grace -> cancel */
    fut_scope_init(&scope, rt, FUT_SCOPE_SUPERVISE);
    fut_shutdown_init(&sd, &scope, NULL, sig, 2000LL * 1000 * 1000);
    r = fut_scope_fiber_spawn(&scope, acceptor, NULL, NULL) ||
        fut_block_on(rt, &sd.base);
    fut_drop(&sd.base); /* its grace timer, if armed, goes with it */
    fut_drop(&scope.base);
    fut_io_close(ln);
    fut_runtime_free(rt);
    fut_io_close(sig);
    return r;
}
