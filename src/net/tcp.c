/* SPDX-License-Identifier: MIT */
/* Stream sockets: addresses and options, TCP listeners, accept (with the
 * EMFILE backoff), the accept stream, and connect (TCP and Unix) with a
 * deadline. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/un.h>

#include "fut/net.h"
#include "io/io_internal.h"
#include "platform/sys.h"

#define BACKOFF_MAX_MS 100

/* ------------------------------------------------------------ addresses */

int fut_addr_parse(const char *host, int port, struct sockaddr_storage *ss,
                   socklen_t *len)
{
    FUT_ARG_CHECK(len, "'len' is NULL");
    FUT_ARG_CHECK(ss, "'ss' is NULL");
    if (port < 0 || port > 65535)
        return FUT_EINVAL;
    memset(ss, 0, sizeof *ss);
    if (!host)
        host = "127.0.0.1";
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        *len = sizeof *v4;
        return 0;
    }
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        *len = sizeof *v6;
        return 0;
    }
    return FUT_EINVAL;
}

int fut_addr_port(const struct sockaddr_storage *ss)
{
    FUT_ARG_CHECK(ss, "'ss' is NULL");
    if (ss->ss_family == AF_INET)
        return ntohs(((const struct sockaddr_in *)ss)->sin_port);
    if (ss->ss_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
    return -1;
}

int fut_io_local_addr(struct fut_io *io, struct sockaddr_storage *ss,
                      socklen_t *len)
{
    FUT_ARG_CHECK(io, "'io' is NULL");
    FUT_ARG_CHECK(ss, "'ss' is NULL");
    FUT_ARG_CHECK(len, "'len' is NULL");
    *len = sizeof *ss;
    return fut__sys_getsockname(fut_io_fd(io), (struct sockaddr *)ss, len, 0);
}

int fut_io_peer_addr(struct fut_io *io, struct sockaddr_storage *ss,
                     socklen_t *len)
{
    FUT_ARG_CHECK(io, "'io' is NULL");
    FUT_ARG_CHECK(ss, "'ss' is NULL");
    FUT_ARG_CHECK(len, "'len' is NULL");
    *len = sizeof *ss;
    return fut__sys_getsockname(fut_io_fd(io), (struct sockaddr *)ss, len, 1);
}

/* -------------------------------------------------------------- options */

int fut_io_set_option(struct fut_io *io, int level, int name, int value)
{
    FUT_ARG_CHECK(io, "'io' is NULL");
    return fut__sys_setsockopt(fut_io_fd(io), level, name, &value,
                               sizeof value);
}

int fut_io_get_option(struct fut_io *io, int level, int name, int *value)
{
    FUT_ARG_CHECK(io, "'io' is NULL");
    FUT_ARG_CHECK(value, "'value' is NULL");
    socklen_t len = sizeof *value;
    return fut__sys_getsockopt(fut_io_fd(io), level, name, value, &len);
}

int fut_tcp_set_nodelay(struct fut_io *io, int on)
{
    FUT_ARG_CHECK(io, "'io' is NULL");
    int r = fut_io_set_option(io, IPPROTO_TCP, TCP_NODELAY, on != 0);
    if (r == 0)
        io->core->nodelay = on != 0;
    return r;
}

int fut_tcp_set_keepalive(struct fut_io *io, int on)
{
    FUT_ARG_CHECK(io, "'io' is NULL");
    return fut_io_set_option(io, SOL_SOCKET, SO_KEEPALIVE, on != 0);
}

int fut_io_take_error(struct fut_io *io)
{
    FUT_ARG_CHECK(io, "'io' is NULL");
    int err = 0;
    int r = fut_io_get_option(io, SOL_SOCKET, SO_ERROR, &err);
    return r < 0 ? r : -err;
}

/* ------------------------------------------------------------- listener */

/* Makes a listening socket of 'type' on 'addr'; 'reuse' sets
 * SO_REUSEADDR. */
static int listen_on(const struct sockaddr *addr, socklen_t len, int backlog,
                     int reuse, struct fut_io **out)
{
    int fd = fut__sys_socket(addr->sa_family, SOCK_STREAM, 0);
    if (fd < 0)
        return fd;
    int one = 1, r = 0;
    if (reuse)
        r = fut__sys_setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
                                sizeof one);
    if (r == 0)
        r = fut__sys_bind(fd, addr, len);
    if (r == 0)
        r = fut__sys_listen(fd, backlog > 0 ? backlog : SOMAXCONN);
    if (r == 0)
        r = fut__io_new(fd, FUT__IO_LISTEN, FUT__RD_READ, out);
    if (r < 0)
        fut__sys_close(fd);
    return r;
}

int fut_tcp_listen(const struct sockaddr *addr, socklen_t len, int backlog,
                   struct fut_io **out)
{
    FUT_ARG_CHECK(out, "'out' is NULL");
    if (!addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
        return FUT_EINVAL;
    return listen_on(addr, len, backlog, 1, out);
}

int fut_unix_listen(const char *path, int backlog, struct fut_io **out)
{
    FUT_ARG_CHECK(out, "'out' is NULL");
    struct sockaddr_un sun;
    memset(&sun, 0, sizeof sun);
    if (!path || strlen(path) >= sizeof sun.sun_path)
        return FUT_EINVAL;
    sun.sun_family = AF_UNIX;
    strcpy(sun.sun_path, path);
    return listen_on((struct sockaddr *)&sun, sizeof sun, backlog, 0, out);
}

/* --------------------------------------------------------------- accept */

/* Network errors Linux passes on from the new socket (accept(2)): retry
 * as if nothing happened. */
static int accept_retry(long e)
{
    switch (e) {
    case -ECONNABORTED:
    case -EPROTO:
    case -EPERM:
    case -ENOPROTOOPT:
    case -EHOSTDOWN:
    case -ENONET:
    case -EHOSTUNREACH:
    case -EOPNOTSUPP:
    case -ENETUNREACH:
    case -ENETDOWN:
        return 1;
    default:
        return 0;
    }
}

/* Out of fds or memory: wait for some to be freed. */
static int accept_exhausted(long e)
{
    return e == -EMFILE || e == -ENFILE || e == -ENOBUFS || e == -ENOMEM;
}

/* Arms the backoff timer; returns 1 when it is armed (PENDING). */
static int backoff(struct fut_accept *a, struct fut_context *cx)
{
    struct fut__iodrv *d = fut__iodrv_current();
    if (!d)
        return 0;
    a->backoff_ms = a->backoff_ms ? a->backoff_ms * 2 : 1;
    if (a->backoff_ms > BACKOFF_MAX_MS)
        a->backoff_ms = BACKOFF_MAX_MS;
    a->backoffs++;
    struct fut__timer *t = fut__timer_of(&a->timer);
    int64_t at = fut__iodrv_now(d) + a->backoff_ms * FUT__NS_PER_MS;
    if (fut__timer_arm(d, t, at, &cx->waker)) {
        fut__timer_cancel(t);
        return 0;
    }
    a->backing_off = 1;
    return 1;
}

/* One accept step; FUT_READY with a->result/a->conn set. */
static int accept_step(struct fut_accept *a, struct fut_context *cx)
{
    struct fut__io *io = a->listener && (a->listener->dir & FUT__DIR_READ)
                             ? a->listener->core
                             : NULL;
    if (!io) {
        a->result = FUT_EINVAL;
        return FUT_READY;
    }
    if (a->backing_off) {
        struct fut__timer *t = fut__timer_of(&a->timer);
        int r = fut__timer_poll(t, &cx->waker);
        if (r == 0)
            return FUT_PENDING;
        fut__timer_cancel(t);
        a->backing_off = 0;
        /* The backlog still holds the connection that failed: no new edge
         * will come for it, so the READ bit was left set; accept again. */
    }
    for (;;) {
        long res;
        struct fut__op op = {.kind = FUT__OP_ACCEPT,
                             .addr = (struct sockaddr *)&a->peer,
                             .alen = &a->peerlen};
        if (fut__io_submit(io, &op, cx, &res) == FUT_PENDING) {
            a->waiting = 1;
            return FUT_PENDING;
        }
        if (res >= 0) {
            int fd = (int)res;
            int r = fut__io_new(fd, FUT__IO_STREAM,
                                FUT__RD_READ | FUT__RD_WRITE, &a->conn);
            if (r == 0) {
                a->result = 0;
                a->backoff_ms = 0;
                return FUT_READY;
            }
            fut__sys_close(fd); /* no memory for it: like ENOMEM */
            res = r;
        }
        if (accept_retry(res))
            continue;
        if (accept_exhausted(res) && backoff(a, cx))
            return FUT_PENDING;
        if (accept_exhausted(res) && fut__iodrv_current())
            continue; /* the backoff was already due */
        a->result = (int)res;
        a->conn = NULL;
        return FUT_READY;
    }
}

static int accept_poll(struct fut_future *f, struct fut_context *cx)
{
    return accept_step((struct fut_accept *)f, cx);
}

static void accept_release(struct fut_accept *a)
{
    if (a->waiting)
        fut__io_unwait(a->listener->core, FUT__DIR_READ);
    a->waiting = 0;
    fut__timer_cancel(fut__timer_of(&a->timer));
    a->backing_off = 0;
}

static void accept_drop(struct fut_future *f)
{
    accept_release((struct fut_accept *)f);
}

static const struct fut_future_vtable accept_vt = {accept_poll, accept_drop,
                                                   "accept", NULL};

void fut_accept_init(struct fut_accept *a, struct fut_io *listener)
{
    FUT_ARG_VOID(a, "'a' is NULL");
    FUT_ARG_VOID(listener, "'listener' is NULL");
    fut_future_init(&a->base, &accept_vt);
    a->listener = listener;
    a->waiting = 0;
    a->backoff_ms = 0;
    a->backing_off = 0;
    a->backoffs = 0;
    fut__timer_init(fut__timer_of(&a->timer));
    a->result = 0;
    a->conn = NULL;
    memset(&a->peer, 0, sizeof a->peer);
    a->peerlen = 0;
}

/* ------------------------------------------------------------- incoming */

static int incoming_next(struct fut_stream *sb, struct fut_context *cx,
                         void *item)
{
    struct fut_incoming *s = (struct fut_incoming *)sb;
    if (accept_step(&s->acc, cx) == FUT_PENDING)
        return FUT_PENDING;
    if (s->acc.result < 0) {
        s->error = s->acc.result;
        return FUT_STREAM_END;
    }
    memcpy(item, &s->acc.conn, sizeof s->acc.conn);
    s->acc.conn = NULL;
    return FUT_STREAM_ITEM;
}

static void incoming_drop(struct fut_stream *sb)
{
    accept_release(&((struct fut_incoming *)sb)->acc);
}

static const struct fut_stream_vtable incoming_vt = {
    incoming_next, incoming_drop, "incoming"};

void fut_incoming_init(struct fut_incoming *s, struct fut_io *listener)
{
    FUT_ARG_VOID(s, "'s' is NULL");
    FUT_ARG_VOID(listener, "'listener' is NULL");
    fut_stream_init(&s->base, &incoming_vt, sizeof(struct fut_io *));
    fut_accept_init(&s->acc, listener);
    s->error = 0;
}

/* -------------------------------------------------------------- connect */

enum { ST_START, ST_WAIT, ST_BAD };

/* Starts the connection; READY when it completed or failed at once. */
static int connect_start(struct fut_connect *c)
{
    int fd = fut__sys_socket(c->addr.ss_family, SOCK_STREAM, 0);
    if (fd < 0) {
        c->result = fd;
        return FUT_READY;
    }
    int r =
        fut__io_new(fd, FUT__IO_STREAM, FUT__RD_READ | FUT__RD_WRITE, &c->io);
    if (r < 0) {
        fut__sys_close(fd);
        c->result = r;
        return FUT_READY;
    }
    r = fut__sys_connect(fd, (struct sockaddr *)&c->addr, c->addrlen);
    if (r == 0) {
        c->result = 0;
        c->conn = c->io;
        c->io = NULL;
        return FUT_READY;
    }
    if (r != -EINPROGRESS && r != -EINTR && r != -EAGAIN) {
        fut_io_close(c->io);
        c->io = NULL;
        c->result = r;
        return FUT_READY;
    }
    /* Writable means connected (or failed): not yet. */
    fut__io_clear(c->io->core, FUT__RD_WRITE, 0);
    c->stage = ST_WAIT;
    return FUT_PENDING;
}

static void connect_fail(struct fut_connect *c, int err)
{
    if (c->waiting)
        fut__io_unwait(c->io->core, FUT__DIR_WRITE);
    c->waiting = 0;
    fut__timer_cancel(fut__timer_of(&c->timer));
    fut_io_close(c->io);
    c->io = NULL;
    c->result = err;
}

/* 1 when the deadline has passed; arms the timer otherwise. */
static int connect_expired(struct fut_connect *c, struct fut_context *cx,
                           int *err)
{
    if (c->deadline == -1)
        return 0;
    struct fut__timer *t = fut__timer_of(&c->timer);
    uintptr_t st = fut__load(&t->state, FUT__RELAXED);
    if (st == FUT__TIMER_IDLE) {
        struct fut__iodrv *d = fut__iodrv_current();
        if (c->deadline <= (d ? fut__iodrv_now(d) : fut_now_ns()))
            return 1;
        if (!d) {
            *err = FUT_EINVAL;
            return 1;
        }
        return fut__timer_arm(d, t, c->deadline, &cx->waker);
    }
    int r = fut__timer_poll(t, &cx->waker);
    if (r < 0)
        *err = r;
    return r != 0;
}

static int connect_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_connect *c = (struct fut_connect *)f;
    if (c->stage == ST_BAD) {
        c->result = FUT_EINVAL;
        return FUT_READY;
    }
    if (c->stage == ST_START && connect_start(c) == FUT_READY)
        return FUT_READY;
    for (;;) {
        uint32_t tick;
        int r = fut__io_ready(c->io->core, FUT__DIR_WRITE, cx, &tick);
        if (r < 0) {
            connect_fail(c, r);
            return FUT_READY;
        }
        if (r == 0) {
            c->waiting = 1;
            int err = FUT_ETIMEDOUT;
            if (connect_expired(c, cx, &err)) {
                connect_fail(c, err);
                return FUT_READY;
            }
            return FUT_PENDING;
        }
        int e = fut_io_take_error(c->io);
        if (e == -EINPROGRESS || e == -EAGAIN) {
            fut__io_clear(c->io->core, FUT__RD_WRITE, tick);
            continue;
        }
        if (e == 0) {
            /* Connected, unless the event was only an early wake-up. */
            struct sockaddr_storage ss;
            socklen_t len;
            if (fut_io_peer_addr(c->io, &ss, &len) == -ENOTCONN) {
                fut__io_clear(c->io->core, FUT__RD_WRITE, tick);
                continue;
            }
        }
        if (e < 0) {
            connect_fail(c, e);
            return FUT_READY;
        }
        if (c->waiting)
            fut__io_unwait(c->io->core, FUT__DIR_WRITE);
        c->waiting = 0;
        fut__timer_cancel(fut__timer_of(&c->timer));
        c->result = 0;
        c->conn = c->io;
        c->io = NULL;
        return FUT_READY;
    }
}

static void connect_drop(struct fut_future *f)
{
    struct fut_connect *c = (struct fut_connect *)f;
    fut__timer_cancel(fut__timer_of(&c->timer));
    if (c->io) {
        if (c->waiting)
            fut__io_unwait(c->io->core, FUT__DIR_WRITE);
        fut_io_close(c->io);
        c->io = NULL;
    }
    c->waiting = 0;
}

static const struct fut_future_vtable connect_vt = {
    connect_poll, connect_drop, "connect", NULL};

static void connect_setup(struct fut_connect *c, int64_t deadline)
{
    fut_future_init(&c->base, &connect_vt);
    memset(&c->addr, 0, sizeof c->addr);
    c->addrlen = 0;
    c->deadline = deadline;
    c->stage = ST_START;
    c->waiting = 0;
    c->io = NULL;
    fut__timer_init(fut__timer_of(&c->timer));
    c->result = 0;
    c->conn = NULL;
}

void fut_tcp_connect_init(struct fut_connect *c, const struct sockaddr *addr,
                          socklen_t len, int64_t deadline)
{
    FUT_ARG_VOID(c, "'c' is NULL");
    FUT_ARG_VOID(addr, "'addr' is NULL");
    connect_setup(c, deadline);
    if (!addr || len == 0 || len > sizeof c->addr ||
        (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)) {
        c->stage = ST_BAD;
        return;
    }
    memcpy(&c->addr, addr, len);
    c->addrlen = len;
}

void fut_unix_connect_init(struct fut_connect *c, const char *path,
                           int64_t deadline)
{
    FUT_ARG_VOID(c, "'c' is NULL");
    FUT_ARG_VOID(path, "'path' is NULL");
    connect_setup(c, deadline);
    struct sockaddr_un *sun = (struct sockaddr_un *)&c->addr;
    if (!path || strlen(path) >= sizeof sun->sun_path) {
        c->stage = ST_BAD;
        return;
    }
    sun->sun_family = AF_UNIX;
    strcpy(sun->sun_path, path);
    c->addrlen = sizeof *sun;
}
