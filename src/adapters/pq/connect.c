/* SPDX-License-Identifier: MIT */
/* libfut-pq's connect future (fut_pg_connect_init): PQconnectStart and
 * PQconnectPoll driven by the readiness of a dup of libpq's current
 * socket; when connected, the connection's record (pq.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* -------------------------------------------------------------- connect */

static void conn_unwatch(struct fut_pg_connect *f)
{
    if (f->waiting) {
        fut_drop(&f->rd.base);
        f->waiting = 0;
    }
    if (f->fd) {
        fut_fd_deregister(f->fd);
        f->fd = NULL;
    }
    if (f->dupfd >= 0) {
        close(f->dupfd);
        f->dupfd = -1;
    }
    f->sock = -1;
}

static void conn_release(struct fut_pg_connect *f)
{
    conn_unwatch(f);
    if (f->conn) {
        PQfinish(f->conn);
        f->conn = NULL;
    }
    if (f->conninfo) {
        fut_mem_free(f->conninfo, f->conninfo_size);
        f->conninfo = NULL;
    }
}

static int conn_fail(struct fut_pg_connect *f, int code)
{
    if (f->conn && !f->error[0])
        fut__pg_copy_msg(f->error, sizeof f->error, PQerrorMessage(f->conn));
    f->result = code;
    conn_release(f);
    return FUT_READY;
}

/* Watches libpq's current socket (through a dup of it). */
static int conn_watch(struct fut_pg_connect *f)
{
    int s = PQsocket(f->conn);
    if (s == f->sock && f->fd)
        return 0;
    conn_unwatch(f);
    if (s < 0)
        return -ECONNREFUSED;
    f->dupfd = fcntl(s, F_DUPFD_CLOEXEC, 0);
    if (f->dupfd < 0)
        return -errno;
    int rc = fut_fd_register(f->dupfd, &f->fd);
    if (rc < 0) {
        close(f->dupfd);
        f->dupfd = -1;
        return rc;
    }
    f->sock = s;
    return 0;
}

/* Connected: the connection record, its driver. */
static int conn_done(struct fut_pg_connect *f)
{
    if (!PQenterPipelineMode(f->conn))
        return conn_fail(f, -ECONNREFUSED);
    struct fut_pg *pg;
    int rc = fut__pg_start(f->conn, f->fd, f->dupfd, &pg);
    if (rc < 0)
        return conn_fail(f, rc);
    f->conn = NULL;
    f->fd = NULL;
    f->dupfd = -1;
    f->waiting = 0;
    conn_release(f);
    f->pg = pg;
    f->result = 0;
    return FUT_READY;
}

static int connect_poll(struct fut_future *base, struct fut_context *cx)
{
    struct fut_pg_connect *f = (struct fut_pg_connect *)base;
    if (f->result <= 0)
        return FUT_READY; /* done, or a failed init */
    if (!f->conn) {
        f->conn = PQconnectStart(f->conninfo);
        if (!f->conn)
            return conn_fail(f, FUT_ENOMEM);
        if (PQstatus(f->conn) == CONNECTION_BAD)
            return conn_fail(f, -ECONNREFUSED);
        if (PQsetnonblocking(f->conn, 1) != 0)
            return conn_fail(f, -ECONNREFUSED);
        f->polling = PGRES_POLLING_WRITING;
    }
    for (;;) {
        int rc = conn_watch(f);
        if (rc < 0)
            return conn_fail(f, rc);
        unsigned want = f->polling == PGRES_POLLING_READING ? FUT_FD_READABLE
                                                            : FUT_FD_WRITABLE;
        if (f->waiting != want && f->waiting) {
            fut_drop(&f->rd.base);
            f->waiting = 0;
        }
        if (!f->waiting) {
            fut_fd_ready_init(&f->rd, f->fd, want);
            f->waiting = want;
        }
        if (fut_poll(&f->rd.base, cx) == FUT_PENDING)
            return FUT_PENDING;
        int ev = f->rd.result;
        uint32_t tick = f->rd.tick;
        fut_drop(&f->rd.base);
        f->waiting = 0;
        if (ev < 0)
            return conn_fail(f, ev);
        f->polling = PQconnectPoll(f->conn);
        if (f->polling == PGRES_POLLING_FAILED)
            return conn_fail(f, -ECONNREFUSED);
        if (f->polling == PGRES_POLLING_OK)
            return conn_done(f);
        if (PQsocket(f->conn) == f->sock)
            fut_fd_clear_if_blocked(f->fd, want, tick);
    }
}

static void connect_drop(struct fut_future *base)
{
    conn_release((struct fut_pg_connect *)base);
}

static const struct fut_future_vtable connect_vt = {
    connect_poll, connect_drop, "fut_pg_connect", 0};

void fut_pg_connect_init(struct fut_pg_connect *f, const char *conninfo)
{
    memset(f, 0, sizeof *f);
    fut_future_init(&f->base, &connect_vt);
    f->dupfd = -1;
    f->sock = -1;
    f->result = 1; /* not yet */
    if (!conninfo) {
        f->result = FUT_EINVAL;
        return;
    }
    f->conninfo = fut__pg_dupstr(conninfo, &f->conninfo_size);
    if (!f->conninfo)
        f->result = FUT_ENOMEM;
}
