/* SPDX-License-Identifier: MIT */
/* The io_uring backend's native operations on stream sockets (the rest
 * of the backend: backend.c, whose opening comment has the rules
 * of ownership and threads these follow):
 *   recv    a multishot RECV from the provided-buffer ring, its chunks
 *           queued on the fd; a single-shot RECV into the op's own buffer
 *           after -ENOBUFS;
 *   accept  a multishot ACCEPT per listener, its fds queued on it;
 *   send    a SEND of a copy of the caller's bytes.
 * Every function here runs under the fd's lock (f_lock), on the thread
 * that called the backend's 'op' (fut__ur_recv/accept/send) or on the
 * ring's owner at a CQE (fut__ur_on_recv_ms/on_accept). */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "io/uring/internal.h"
#include "platform/sys.h"

/* ------------------------------------------------------------- reads */

static void arm_multishot(struct fut__backend *b, struct fut__io *io,
                          struct ufd *f)
{
    struct uop *u = fut__ur_uop_new(b, io, U_RECV_MS);
    if (!u) {
        f->end = FUT_ENOMEM;
        return;
    }
    struct io_uring_sqe *s = fut__ur_sqe_get(b, u);
    io_uring_prep_recv_multishot(s, io->fd, NULL, 0, 0);
    s->flags |= IOSQE_BUFFER_SELECT; /* its group: when the owner issues
                                        it (fut__ur_sqe_op) */
    fut__ur_sqe_op(b, s, u);
    f->ms = u;
}

/* A single-shot RECV into a buffer of the op's own. */
static int arm_solo(struct fut__backend *b, struct fut__io *io, struct ufd *f,
                    size_t want)
{
    struct uop *u = fut__ur_uop_new(b, io, U_RECV);
    size_t cap = want < SOLO_MAX ? (want ? want : 1) : SOLO_MAX;
    if (!u || fut__ur_uop_buffer(b, u, cap) < 0) {
        if (u)
            fut__ur_uop_free(b, u);
        return FUT_ENOMEM;
    }
    struct io_uring_sqe *s = fut__ur_sqe_get(b, u);
    io_uring_prep_recv(s, io->fd, u->buf, fut__ur_shorten(U_RECV, cap), 0);
    fut__ur_sqe_op(b, s, u);
    f->rd = u;
    return 0;
}

/* Copies what the fd has into op's buffer: queued chunks first, then a
 * finished single-shot recv. Returns the bytes copied (0: none). */
static size_t copy_out(struct fut__backend *b, struct ufd *f,
                       const struct fut__op *op)
{
    size_t want = op->len, got = 0;
    struct fut__uring_faults *fx = fut__uring_faults;
    if (fx && fx->shorten)
        want = fut__ur_shorten(U_RECV, want);
    while (got < want && f->head) {
        struct chunk *c = f->head;
        size_t n = c->len - c->off;
        if (n > want - got)
            n = want - got;
        memcpy((char *)op->buf + got, ur_buf(b, c->bid) + c->off, n);
        c->off += (uint32_t)n;
        got += n;
        f->queued -= n;
        if (c->off == c->len)
            fut__ur_chunk_pop(b, f);
    }
    struct uop *u = f->rd;
    if (got < want && u && u->kind == U_RECV && u->done && u->res > 0) {
        size_t n = u->len - u->off;
        if (n > want - got)
            n = want - got;
        memcpy((char *)op->buf + got, u->buf + u->off, n);
        u->off += n;
        got += n;
        if (u->off == u->len) {
            f->rd = NULL;
            fut__ur_uop_free(b, u);
        }
    }
    return got;
}

int fut__ur_recv(struct fut__backend *b, struct fut__io *io, struct ufd *f,
                 const struct fut__op *op, struct fut_context *cx, long *res)
{
    if (f->head || (f->rd && f->rd->done)) {
        if (!fut_coop_proceed(cx))
            return FUT_PENDING;
        if (op->len == 0) {
            *res = 0;
            return FUT_READY;
        }
        size_t n = copy_out(b, f, op);
        if (n > 0) {
            *res = (long)n;
            return FUT_READY;
        }
        /* A finished single-shot recv with no bytes: EOF or an error. */
        struct uop *u = f->rd;
        f->rd = NULL;
        *res = u->res;
        fut__ur_uop_free(b, u);
        return FUT_READY;
    }
    if (f->end != 1) { /* the stream ended: EOF sticks, an error once */
        if (!fut_coop_proceed(cx))
            return FUT_PENDING;
        *res = f->end;
        f->end = 0;
        return FUT_READY;
    }
    if (op->len == 0) {
        *res = 0;
        return FUT_READY;
    }
    if (!f->ms && !f->rd) {
        if (f->nobufs) {
            f->nobufs = 0;
            int r = arm_solo(b, io, f, op->len);
            if (r < 0) {
                *res = r;
                return FUT_READY;
            }
        } else {
            arm_multishot(b, io, f);
        }
    }
    park(f, FUT__DIR_READ, cx);
    return FUT_PENDING;
}

void fut__ur_on_recv_ms(struct fut__backend *b, struct uop *u,
                        const struct io_uring_cqe *cqe, long res)
{
    int more = (cqe->flags & IORING_CQE_F_MORE) != 0;
    struct fut__io *io = u->io;
    if (cqe->flags & IORING_CQE_F_BUFFER) {
        uint16_t bid = (uint16_t)(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
        fut__ur_buf_taken(b, bid);
        if (!io || res <= 0) { /* a fault may have eaten the bytes */
            fut__ur_buf_return(b, bid);
        } else {
            struct ufd *f = u->f;
            fut__ur_chunk_push(b, f, bid, (uint32_t)res);
            if (more && f->queued >= QUEUE_MAX && !u->ended) {
                /* Paused: re-armed by the read that drains the queue. */
                fut__ur_cancel_op(b, u);
                u->ended = 1;
            }
            if (more)
                wake(f, FUT__DIR_READ);
        }
    } else if (res > 0) {
        /* A fault injected a result with no buffer: nothing arrived. */
        res = -EAGAIN;
    }
    if (more && u->term) {
        /* A fault ends the multishot after this CQE's bytes (as the
         * kernel does when the pool runs dry). */
        if (!u->ended) {
            fut__ur_cancel_op(b, u);
            u->ended = 1;
        }
        if (io && u->term == -ENOBUFS)
            u->f->nobufs = 1;
        u->term = 0;
        return;
    }
    if (more && res < 0) {
        /* Only a fault says an error and more: the connection broke
         * (its bytes are lost with it); end the multishot. */
        if (!u->ended) {
            fut__ur_cancel_op(b, u);
            u->ended = 1;
        }
        if (io && res != -EAGAIN && res != -ECANCELED) {
            struct ufd *f = u->f;
            if (res == -ENOBUFS)
                f->nobufs = 1;
            else if (f->end == 1)
                f->end = res;
            wake(f, FUT__DIR_READ);
        }
        return;
    }
    if (more)
        return;
    b->inflight--;
    if (io) {
        struct ufd *f = u->f;
        if (f->ms == u)
            f->ms = NULL;
        if (res == 0)
            f->end = 0;
        else if (res == -ENOBUFS) {
            /* Dry: the next arm grows the pool, or at its bound reads
             * once into a buffer of its own; a retired group's multishot
             * just re-arms on a live one. */
            int dry = fut__ur_dry(b, u);
            if (dry)
                fut__fetch_add(&fut__uring_nobufs, 1, FUT__RELAXED);
            if (dry == 1)
                f->nobufs = 1;
        } else if (res < 0 && res != -ECANCELED && res != -EAGAIN &&
                   res != -EINTR)
            f->end = res;
        wake(f, FUT__DIR_READ);
    }
    fut__ur_retire(b, u);
}

/* ------------------------------------------------------------ accept */

/* A listener runs one multishot ACCEPT (f->ms) while it is armed:
 *   - each connection the kernel accepts is queued on f->aq, whether or
 *     not an accept future waits (a dropped accept loses nothing: the
 *     connection waits for the next one); an accept future takes the
 *     oldest, the peer's address from getpeername (the op has one address
 *     buffer for all its CQEs, so it is given none);
 *   - ACCEPT_MAX queued fds pause it (ASYNC_CANCEL): the rest wait in the
 *     kernel's backlog, and the accept that finds the queue empty arms it
 *     again. CQEs that come after the cancel are queued too (the queue
 *     grows);
 *   - an error ends the kernel's multishot (no IORING_CQE_F_MORE): it is
 *     kept in f->end and given once, to the accept that finds the queue
 *     empty, and the next accept arms again (EMFILE backs off first:
 *     net/tcp.c). An injected error on a CQE that brought a connection
 *     closes that connection and is given the same way; the multishot
 *     goes on;
 *   - a connection that completes for nobody (the listener closed or
 *     freed) is closed at its CQE; the queued ones with the listener. */
static int arm_accept(struct fut__backend *b, struct fut__io *io,
                      struct ufd *f)
{
    struct uop *u = fut__ur_uop_new(b, io, U_ACCEPT);
    if (!u)
        return FUT_ENOMEM;
    struct io_uring_sqe *s = fut__ur_sqe_get(b, u);
    io_uring_prep_multishot_accept(s, io->fd, NULL, NULL,
                                   SOCK_NONBLOCK | SOCK_CLOEXEC);
    fut__ur_sqe_op(b, s, u);
    f->ms = u;
    fut__fetch_add(&fut__uring_accept_arms, 1, FUT__RELAXED);
    return 0;
}

int fut__ur_accept(struct fut__backend *b, struct fut__io *io, struct ufd *f,
                   const struct fut__op *op, struct fut_context *cx,
                   long *res)
{
    if ((f->aq && f->aq->n) || f->end != 1) {
        if (!fut_coop_proceed(cx))
            return FUT_PENDING;
        int fd = fut__ur_aq_pop(f);
        if (fd < 0) {
            *res = f->end;
            f->end = 1;
            return FUT_READY;
        }
        if (op->addr) {
            *op->alen = sizeof(struct sockaddr_storage);
            if (getpeername(fd, op->addr, op->alen) < 0)
                *op->alen = 0; /* reset already (ENOTCONN): no address;
                                  the connection's reads will say so */
        }
        *res = fd;
        return FUT_READY;
    }
    if (!f->ms) {
        int r = arm_accept(b, io, f);
        if (r < 0) {
            *res = r;
            return FUT_READY;
        }
    }
    park(f, FUT__DIR_READ, cx);
    return FUT_PENDING;
}

/* A CQE of a multishot ACCEPT: 'res' after the fault hook. */
void fut__ur_on_accept(struct fut__backend *b, struct uop *u,
                       const struct io_uring_cqe *cqe, long res, int more)
{
    struct fut__io *io = u->io;
    struct ufd *f = u->f;
    if (cqe->res < 0 && res >= 0)
        res = cqe->res; /* a fault cannot invent a connection */
    if (cqe->res >= 0) {
        int fd = cqe->res;
        if (!io || res < 0) { /* for nobody, or a fault broke it */
            fut__sys_close(fd);
        } else if (fut__ur_aq_push(f, fd) < 0) {
            fut__sys_close(fd);
            res = FUT_ENOMEM;
        } else if (more && f->aq->n >= ACCEPT_MAX && !u->ended) {
            fut__ur_cancel_op(b, u); /* paused; armed again when empty */
            u->ended = 1;
        }
    }
    if (io && res < 0 && !ur_nothing(res) && f->end == 1)
        f->end = res;
    if (!more) {
        b->inflight--;
        if (io && f->ms == u)
            f->ms = NULL;
    }
    if (io)
        wake(f, FUT__DIR_READ);
    if (!more)
        fut__ur_retire(b, u);
}

/* ------------------------------------------------------------- writes */

/* Gathers op's bytes (buf or iov) into u's buffer, at most COPY_MAX. */
static int copy_in(struct fut__backend *b, struct uop *u,
                   const struct fut__op *op)
{
    size_t total = 0;
    if (op->kind == FUT__OP_WRITEV || op->kind == FUT__OP_SENDV) {
        for (int i = 0; i < op->iovcnt; i++)
            total += op->iov[i].iov_len;
    } else {
        total = op->len;
    }
    if (total > COPY_MAX)
        total = COPY_MAX;
    if (fut__ur_uop_buffer(b, u, total ? total : 1) < 0)
        return FUT_ENOMEM;
    if (op->kind == FUT__OP_WRITEV || op->kind == FUT__OP_SENDV) {
        size_t at = 0;
        for (int i = 0; i < op->iovcnt && at < total; i++) {
            size_t n = op->iov[i].iov_len;
            if (n > total - at)
                n = total - at;
            memcpy(u->buf + at, op->iov[i].iov_base, n);
            at += n;
        }
    } else if (total) {
        memcpy(u->buf, op->buf, total);
    }
    u->len = total;
    return 0;
}

int fut__ur_send(struct fut__backend *b, struct fut__io *io, struct ufd *f,
                 const struct fut__op *op, struct fut_context *cx, long *res)
{
    struct uop *u = f->wr;
    if (u && u->done) {
        if (!fut_coop_proceed(cx))
            return FUT_PENDING;
        f->wr = NULL;
        *res = u->res;
        fut__ur_uop_free(b, u);
        return FUT_READY;
    }
    if (!u) {
        u = fut__ur_uop_new(b, io, U_SEND);
        if (!u || copy_in(b, u, op) < 0) {
            if (u)
                fut__ur_uop_free(b, u);
            *res = FUT_ENOMEM;
            return FUT_READY;
        }
        if (u->len == 0) { /* nothing to send: as send(2) of 0 bytes */
            fut__ur_uop_free(b, u);
            *res = 0;
            return FUT_READY;
        }
        struct io_uring_sqe *s = fut__ur_sqe_get(b, u);
        io_uring_prep_send(s, io->fd, u->buf, fut__ur_shorten(U_SEND, u->len),
                           MSG_NOSIGNAL);
        fut__ur_sqe_op(b, s, u);
        f->wr = u;
    }
    park(f, FUT__DIR_WRITE, cx);
    return FUT_PENDING;
}
