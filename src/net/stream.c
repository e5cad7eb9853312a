/* SPDX-License-Identifier: MIT */
/* The byte-moving futures over any fut_io: read, peek, recv, write, send,
 * writev, write_all, recv_from, send_to. Each poll describes its
 * operation (struct fut__op, io/backend.h) and asks the backend for it
 * (fut__io_submit): READY with the result, or PENDING. A future that
 * returned PENDING may have its waker in the fd's slot ('waiting'); its
 * drop takes it out (C11) and tells the backend. */
#include <limits.h>
#include <string.h>

#include "fut/net.h"
#include "io/io_internal.h"
#include "platform/sys.h"

enum { OP_READ, OP_PEEK, OP_RECV, OP_WRITE, OP_SEND, OP_WRITEV };

/* The core of 'h' when 'h' may move bytes in 'dir', else NULL. */
static struct fut__io *core_for(struct fut_io *h, unsigned dir)
{
    return h && (h->dir & dir) ? h->core : NULL;
}

/* Records the outcome of a step: 1 = READY (result stored). */
static int finish(int step, int *waiting, ssize_t *result, long res)
{
    if (step == FUT_PENDING) {
        *waiting = 1;
        return 0;
    }
    *waiting = 0;
    *result = res;
    return 1;
}

/* A future of this file that returned READY holds nothing ('waiting' is
 * 0: no waker in the fd's slot), so its poll switches it to its type's
 * "done" vtable: the same poll and name, and a NULL drop (core.h: "May be
 * NULL when there is nothing to release"). fut_drop - which FUT_AWAIT
 * runs after every finished read and write - then makes no call. The
 * drop contract is unchanged: a future dropped in any other state (never
 * polled, PENDING) still has its drop. */

/* ------------------------------------------------------------------ read */

static const struct fut_future_vtable read_done_vt;

static int read_poll(struct fut_future *fb, struct fut_context *cx)
{
    struct fut_io_read *f = (struct fut_io_read *)fb;
    struct fut__io *io = core_for(f->io, FUT__DIR_READ);
    if (!io) {
        f->result = FUT_EINVAL;
        return FUT_READY;
    }
    if (f->len == 0 && f->op == OP_READ) {
        f->result = 0;
        return FUT_READY;
    }
    long res;
    int step;
    if (FUT_LIKELY(f->op == OP_READ)) {
        /* The common read, its op's kind known here: fut__io_submit_inline
         * folds its syscall switch. A datagram may be shorter than the
         * buffer without draining the socket: no short-transfer rule. */
        struct fut__op op = {.kind = FUT__OP_READ,
                             .buf = f->buf,
                             .len = f->len,
                             .want = io->kind == FUT__IO_DGRAM ? 0 : f->len};
        step = fut__io_submit_inline(io, op, cx, &res);
    } else {
        /* A peek drains nothing: no short-transfer rule either. */
        struct fut__op op = {.kind = FUT__OP_RECV,
                             .flags = f->op == OP_PEEK ? f->flags | MSG_PEEK
                                                       : f->flags,
                             .buf = f->buf,
                             .len = f->len};
        op.want = f->op == OP_PEEK || io->kind == FUT__IO_DGRAM ? 0 : f->len;
        step = fut__io_submit(io, &op, cx, &res);
    }
    if (!finish(step, &f->waiting, &f->result, res))
        return FUT_PENDING;
    fb->vt = &read_done_vt; /* nothing to drop (see above) */
    return FUT_READY;
}

static void read_drop(struct fut_future *fb)
{
    struct fut_io_read *f = (struct fut_io_read *)fb;
    if (f->waiting)
        fut__io_unwait(f->io->core, FUT__DIR_READ);
    f->waiting = 0;
}

static const struct fut_future_vtable read_vt = {read_poll, read_drop,
                                                 "io_read", NULL};
static const struct fut_future_vtable read_done_vt = {read_poll, NULL,
                                                      "io_read", NULL};

static void read_setup(struct fut_io_read *f, struct fut_io *io, void *buf,
                       size_t len, int flags, int op)
{
    fut_future_init(&f->base, &read_vt);
    f->io = io;
    f->buf = buf;
    f->len = len;
    f->flags = flags;
    f->op = op;
    f->waiting = 0;
    f->result = 0;
}

void fut_io_read_init(struct fut_io_read *f, struct fut_io *io, void *buf,
                      size_t len)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(io, "'io' is NULL");
    FUT_ARG_VOID(buf || !len, "'buf' is NULL");
    read_setup(f, io, buf, len, 0, OP_READ);
}

void fut_io_peek_init(struct fut_io_read *f, struct fut_io *io, void *buf,
                      size_t len)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(io, "'io' is NULL");
    FUT_ARG_VOID(buf || !len, "'buf' is NULL");
    read_setup(f, io, buf, len, 0, OP_PEEK);
}

void fut_io_recv_init(struct fut_io_read *f, struct fut_io *io, void *buf,
                      size_t len, int flags)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(io, "'io' is NULL");
    FUT_ARG_VOID(buf || !len, "'buf' is NULL");
    read_setup(f, io, buf, len, flags, OP_RECV);
}

/* ----------------------------------------------------------------- write */

/* Sockets are written with send/sendmsg and MSG_NOSIGNAL: a peer that
 * went away gives -EPIPE, never SIGPIPE. */
static int is_socket(const struct fut__io *io)
{
    return io->kind == FUT__IO_STREAM || io->kind == FUT__IO_DGRAM;
}

/* The operation of a write future on 'io'. */
static struct fut__op write_op(const struct fut_io_write *f,
                               const struct fut__io *io, size_t want)
{
    int sock = is_socket(io);
    struct fut__op op = {.buf = (void *)f->buf, .len = f->len, .want = want};
    switch (f->op) {
    case OP_SEND:
        op.kind = FUT__OP_SEND;
        op.flags = f->flags;
        break;
    case OP_WRITEV:
        op.kind = sock ? FUT__OP_SENDV : FUT__OP_WRITEV;
        op.iov = f->iov;
        op.iovcnt = f->iovcnt;
        break;
    default:
        op.kind = sock ? FUT__OP_SEND : FUT__OP_WRITE;
    }
    return op;
}

static const struct fut_future_vtable write_done_vt;

static int write_poll(struct fut_future *fb, struct fut_context *cx)
{
    struct fut_io_write *f = (struct fut_io_write *)fb;
    struct fut__io *io = core_for(f->io, FUT__DIR_WRITE);
    size_t want = f->len;
    if (f->op == OP_WRITEV) {
        want = 0;
        if (f->iovcnt < 0 || f->iovcnt > IOV_MAX)
            io = NULL;
        for (int i = 0; io && i < f->iovcnt; i++)
            want += f->iov[i].iov_len;
    }
    if (!io) {
        f->result = FUT_EINVAL;
        return FUT_READY;
    }
    if (want == 0 && io->kind != FUT__IO_DGRAM) {
        f->result = 0;
        return FUT_READY;
    }
    if (io->kind == FUT__IO_DGRAM)
        want = 0;
    struct fut__op op = write_op(f, io, want);
    long res;
    int step = fut__io_submit(io, &op, cx, &res);
    if (!finish(step, &f->waiting, &f->result, res))
        return FUT_PENDING;
    fb->vt = &write_done_vt; /* nothing to drop (see the read's) */
    return FUT_READY;
}

static void write_drop(struct fut_future *fb)
{
    struct fut_io_write *f = (struct fut_io_write *)fb;
    if (f->waiting)
        fut__io_unwait(f->io->core, FUT__DIR_WRITE);
    f->waiting = 0;
}

static const struct fut_future_vtable write_vt = {write_poll, write_drop,
                                                  "io_write", NULL};
static const struct fut_future_vtable write_done_vt = {write_poll, NULL,
                                                       "io_write", NULL};

static void write_setup(struct fut_io_write *f, struct fut_io *io,
                        const void *buf, size_t len, int flags, int op)
{
    fut_future_init(&f->base, &write_vt);
    f->io = io;
    f->buf = buf;
    f->len = len;
    f->iov = NULL;
    f->iovcnt = 0;
    f->flags = flags;
    f->op = op;
    f->waiting = 0;
    f->result = 0;
}

void fut_io_write_init(struct fut_io_write *f, struct fut_io *io,
                       const void *buf, size_t len)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(io, "'io' is NULL");
    FUT_ARG_VOID(buf || !len, "'buf' is NULL");
    write_setup(f, io, buf, len, 0, OP_WRITE);
}

void fut_io_send_init(struct fut_io_write *f, struct fut_io *io,
                      const void *buf, size_t len, int flags)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(io, "'io' is NULL");
    FUT_ARG_VOID(buf || !len, "'buf' is NULL");
    write_setup(f, io, buf, len, flags, OP_SEND);
}

void fut_io_writev_init(struct fut_io_write *f, struct fut_io *io,
                        const struct iovec *iov, int iovcnt)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(io, "'io' is NULL");
    FUT_ARG_VOID(iov, "'iov' is NULL");
    write_setup(f, io, NULL, 0, 0, OP_WRITEV);
    f->iov = iov;
    f->iovcnt = iovcnt;
}

/* ------------------------------------------------------------- write_all */

static const struct fut_future_vtable write_all_done_vt;

static int write_all_poll(struct fut_future *fb, struct fut_context *cx)
{
    struct fut_io_write_all *f = (struct fut_io_write_all *)fb;
    struct fut__io *io = core_for(f->io, FUT__DIR_WRITE);
    if (!io) {
        f->result = FUT_EINVAL;
        return FUT_READY;
    }
    while (f->done < f->len) {
        long res;
        size_t left = f->len - f->done;
        int step;
        /* Each kind known where its op is built: fut__io_submit_inline
         * folds its syscall switch. */
        if (FUT_LIKELY(is_socket(io))) {
            struct fut__op op = {.kind = FUT__OP_SEND,
                                 .buf = (char *)f->buf + f->done,
                                 .len = left,
                                 .want = left};
            step = fut__io_submit_inline(io, op, cx, &res);
        } else {
            struct fut__op op = {.kind = FUT__OP_WRITE,
                                 .buf = (char *)f->buf + f->done,
                                 .len = left,
                                 .want = left};
            step = fut__io_submit(io, &op, cx, &res);
        }
        if (step == FUT_PENDING) {
            f->waiting = 1;
            return FUT_PENDING;
        }
        if (res <= 0) {
            f->result = res < 0 ? res : -EIO; /* write(2) never says 0 */
            f->waiting = 0;
            fb->vt = &write_all_done_vt; /* nothing to drop */
            return FUT_READY;
        }
        f->done += (size_t)res;
    }
    f->waiting = 0;
    f->result = (ssize_t)f->len;
    fb->vt = &write_all_done_vt; /* nothing to drop (see the read's) */
    return FUT_READY;
}

static void write_all_drop(struct fut_future *fb)
{
    struct fut_io_write_all *f = (struct fut_io_write_all *)fb;
    if (f->waiting)
        fut__io_unwait(f->io->core, FUT__DIR_WRITE);
    f->waiting = 0;
}

static const struct fut_future_vtable write_all_vt = {
    write_all_poll, write_all_drop, "io_write_all", NULL};
static const struct fut_future_vtable write_all_done_vt = {
    write_all_poll, NULL, "io_write_all", NULL};

void fut_io_write_all_init(struct fut_io_write_all *f, struct fut_io *io,
                           const void *buf, size_t len)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(io, "'io' is NULL");
    FUT_ARG_VOID(buf || !len, "'buf' is NULL");
    fut_future_init(&f->base, &write_all_vt);
    f->io = io;
    f->buf = buf;
    f->len = len;
    f->done = 0;
    f->waiting = 0;
    f->result = 0;
}

/* ------------------------------------------------------------- recv_from */

static int recv_from_poll(struct fut_future *fb, struct fut_context *cx)
{
    struct fut_io_recv_from *f = (struct fut_io_recv_from *)fb;
    struct fut__io *io = core_for(f->io, FUT__DIR_READ);
    if (!io) {
        f->result = FUT_EINVAL;
        return FUT_READY;
    }
    struct fut__op op = {.kind = FUT__OP_RECVFROM,
                         .flags = f->flags,
                         .buf = f->buf,
                         .len = f->len,
                         .addr = (struct sockaddr *)&f->addr,
                         .alen = &f->addrlen};
    long res;
    int step = fut__io_submit(io, &op, cx, &res);
    return finish(step, &f->waiting, &f->result, res) ? FUT_READY
                                                      : FUT_PENDING;
}

static void recv_from_drop(struct fut_future *fb)
{
    struct fut_io_recv_from *f = (struct fut_io_recv_from *)fb;
    if (f->waiting)
        fut__io_unwait(f->io->core, FUT__DIR_READ);
    f->waiting = 0;
}

static const struct fut_future_vtable recv_from_vt = {
    recv_from_poll, recv_from_drop, "io_recv_from", NULL};

void fut_io_recv_from_init(struct fut_io_recv_from *f, struct fut_io *io,
                           void *buf, size_t len, int flags)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(io, "'io' is NULL");
    FUT_ARG_VOID(buf || !len, "'buf' is NULL");
    fut_future_init(&f->base, &recv_from_vt);
    f->io = io;
    f->buf = buf;
    f->len = len;
    f->flags = flags;
    f->waiting = 0;
    memset(&f->addr, 0, sizeof f->addr);
    f->addrlen = 0;
    f->result = 0;
}

/* --------------------------------------------------------------- send_to */

static int send_to_poll(struct fut_future *fb, struct fut_context *cx)
{
    struct fut_io_send_to *f = (struct fut_io_send_to *)fb;
    struct fut__io *io = core_for(f->io, FUT__DIR_WRITE);
    if (!io || f->addrlen == 0) {
        f->result = FUT_EINVAL;
        return FUT_READY;
    }
    struct fut__op op = {.kind = FUT__OP_SENDTO,
                         .flags = f->flags,
                         .buf = (void *)f->buf,
                         .len = f->len,
                         .addr = (struct sockaddr *)&f->addr,
                         .alen = &f->addrlen};
    long res;
    int step = fut__io_submit(io, &op, cx, &res);
    return finish(step, &f->waiting, &f->result, res) ? FUT_READY
                                                      : FUT_PENDING;
}

static void send_to_drop(struct fut_future *fb)
{
    struct fut_io_send_to *f = (struct fut_io_send_to *)fb;
    if (f->waiting)
        fut__io_unwait(f->io->core, FUT__DIR_WRITE);
    f->waiting = 0;
}

static const struct fut_future_vtable send_to_vt = {
    send_to_poll, send_to_drop, "io_send_to", NULL};

void fut_io_send_to_init(struct fut_io_send_to *f, struct fut_io *io,
                         const void *buf, size_t len, int flags,
                         const struct sockaddr *addr, socklen_t alen)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(io, "'io' is NULL");
    FUT_ARG_VOID(buf || !len, "'buf' is NULL");
    FUT_ARG_VOID(addr, "'addr' is NULL");
    fut_future_init(&f->base, &send_to_vt);
    f->io = io;
    f->buf = buf;
    f->len = len;
    f->flags = flags;
    f->waiting = 0;
    f->result = 0;
    memset(&f->addr, 0, sizeof f->addr);
    f->addrlen = 0;
    if (addr && alen > 0 && alen <= sizeof f->addr) {
        memcpy(&f->addr, addr, alen);
        f->addrlen = alen;
    }
}
