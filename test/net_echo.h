/* SPDX-License-Identifier: MIT */
/* An echo server and client built from fut's futures, for the net_*
 * tests (one task per connection: read up to 4 KiB, write it all back). */
#ifndef FUT_TEST_NET_ECHO_H
#define FUT_TEST_NET_ECHO_H

#include "io_helpers.h"

struct echo_stats {
    atomic_long accepted, live, failed, bytes;
    atomic_int fds[64]; /* fds of the first 64 connections */
};

struct echo_conn {
    struct fut_future base;
    struct fut_io *io;
    struct echo_stats *st;
    struct fut_io_read rd;
    struct fut_io_write_all wr;
    char buf[4096];
};

static int echo_conn_poll(struct fut_future *f, struct fut_context *cx)
{
    struct echo_conn *c = (struct echo_conn *)f;
    FUT_BEGIN(f);
    for (;;) {
        fut_io_read_init(&c->rd, c->io, c->buf, sizeof c->buf);
        FUT_AWAIT(f, &c->rd);
        if (c->rd.result <= 0) {
            if (c->rd.result < 0)
                atomic_fetch_add(&c->st->failed, 1);
            break;
        }
        fut_io_write_all_init(&c->wr, c->io, c->buf, (size_t)c->rd.result);
        FUT_AWAIT(f, &c->wr);
        if (c->wr.result < 0) {
            atomic_fetch_add(&c->st->failed, 1);
            break;
        }
        atomic_fetch_add(&c->st->bytes, c->wr.result);
    }
    FUT_END(f);
}

static void echo_conn_cleanup(struct fut_future *f)
{
    struct echo_conn *c = (struct echo_conn *)f;
    fut_io_close(c->io);
    atomic_fetch_sub(&c->st->live, 1);
}
FUT_ASYNC_VTABLE(echo_conn_vt, "echo_conn", echo_conn_poll,
                 echo_conn_cleanup);

struct echo_server {
    struct fut_future base;
    struct fut_io *listener;
    struct echo_stats *st;
    struct fut_accept acc;
    int result;
};

static int echo_server_poll(struct fut_future *f, struct fut_context *cx)
{
    struct echo_server *s = (struct echo_server *)f;
    FUT_BEGIN(f);
    for (;;) {
        fut_accept_init(&s->acc, s->listener);
        FUT_AWAIT(f, &s->acc);
        if (s->acc.result < 0) {
            s->result = s->acc.result;
            break;
        }
        {
            struct echo_conn c;
            fut_future_init(&c.base, &echo_conn_vt);
            c.io = s->acc.conn;
            c.st = s->st;
            fut_tcp_set_nodelay(c.io, 1);
            long n = atomic_fetch_add(&s->st->accepted, 1);
            if (n < 64)
                atomic_store(&s->st->fds[n], fut_io_fd(c.io));
            atomic_fetch_add(&s->st->live, 1);
            if (fut_spawn(NULL, &c, sizeof c, NULL) != 0) {
                fut_io_close(c.io);
                atomic_fetch_sub(&s->st->live, 1);
            }
        }
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(echo_server_vt, "echo_server", echo_server_poll, NULL);

static inline void echo_server_init(struct echo_server *s,
                                    struct fut_io *listener,
                                    struct echo_stats *st)
{
    memset(s, 0, sizeof *s);
    fut_future_init(&s->base, &echo_server_vt);
    s->listener = listener;
    s->st = st;
}

/* Listens on a free loopback port ('*l', '*port') and spawns an echo
 * server on it into 'rt' (joined through 'js'), counting into 'st'. */
static inline void echo_serve(struct fut_runtime *rt, struct echo_server *srv,
                              struct echo_stats *st, struct fut_join *js,
                              struct fut_io **l, int *port)
{
    *l = listen_any(port);
    memset(st, 0, sizeof *st);
    echo_server_init(srv, *l, st);
    ASSERT_EQ(fut_spawn(rt, srv, sizeof *srv, js), 0);
}

/* A client: connects, then 'rounds' times sends 'len' bytes and reads
 * them back, checking every byte. 'result' = 0 or the first error. */
struct echo_client {
    struct fut_future base;
    int port, rounds, i;
    size_t len, got;
    struct fut_connect con;
    struct fut_io *io;
    struct fut_io_write_all wr;
    struct fut_io_read rd;
    int result;
    int keep_open; /* leave 'io' open at the end (the test closes it) */
    unsigned char msg[256], buf[256];
};

static int echo_client_poll(struct fut_future *f, struct fut_context *cx)
{
    struct echo_client *c = (struct echo_client *)f;
    FUT_BEGIN(f);
    {
        struct sockaddr_storage ss;
        socklen_t len;
        fut_addr_parse("127.0.0.1", c->port, &ss, &len);
        fut_tcp_connect_init(&c->con, (struct sockaddr *)&ss, len, -1);
    }
    FUT_AWAIT(f, &c->con);
    if (c->con.result < 0) {
        c->result = c->con.result;
        FUT_RETURN(f);
    }
    c->io = c->con.conn;
    fut_tcp_set_nodelay(c->io, 1);
    for (c->i = 0; c->i < c->rounds; c->i++) {
        for (size_t k = 0; k < c->len; k++)
            c->msg[k] = (unsigned char)(c->i * 31 + k + c->port);
        fut_io_write_all_init(&c->wr, c->io, c->msg, c->len);
        FUT_AWAIT(f, &c->wr);
        if (c->wr.result < 0) {
            c->result = (int)c->wr.result;
            FUT_RETURN(f);
        }
        for (c->got = 0; c->got < c->len;) {
            /* A buffer larger than the reply: a short read tells the
             * reactor the socket is drained (no EAGAIN read). */
            fut_io_read_init(&c->rd, c->io, c->buf + c->got,
                             sizeof c->buf - c->got);
            FUT_AWAIT(f, &c->rd);
            if (c->rd.result <= 0) {
                c->result = c->rd.result < 0 ? (int)c->rd.result : -EPIPE;
                FUT_RETURN(f);
            }
            c->got += (size_t)c->rd.result;
        }
        if (c->got != c->len || memcmp(c->buf, c->msg, c->len) != 0) {
            c->result = -EBADMSG;
            FUT_RETURN(f);
        }
    }
    FUT_END(f);
}

static void echo_client_cleanup(struct fut_future *f)
{
    struct echo_client *c = (struct echo_client *)f;
    if (c->io && !c->keep_open) {
        fut_io_close(c->io);
        c->io = NULL;
    }
}
FUT_ASYNC_VTABLE(echo_client_vt, "echo_client", echo_client_poll,
                 echo_client_cleanup);

static inline void echo_client_init(struct echo_client *c, int port,
                                    int rounds, size_t len)
{
    memset(c, 0, sizeof *c);
    fut_future_init(&c->base, &echo_client_vt);
    c->port = port;
    c->rounds = rounds;
    c->len = len;
}

#endif /* FUT_TEST_NET_ECHO_H */
