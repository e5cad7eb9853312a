/* The io_uring backend (backend.h): operations as submissions, results as
 * completions, through liburing.
 *
 * The ring: one per driver, set up IORING_SETUP_SINGLE_ISSUER |
 * DEFER_TASKRUN | TASKRUN_FLAG | R_DISABLED (COOP_TASKRUN | TASKRUN_FLAG
 * where the kernel has no DEFER_TASKRUN), enabled by the first thread that
 * submits or waits; its fd is registered (no fget per io_uring_enter).
 * Submissions are batched: an op only fills an SQE; wait() sends them all
 * and waits in one io_uring_enter, with the next timer's deadline as its
 * timeout. A full SQ is submitted at once (the only other enter).
 *
 * What runs natively (stream and listening sockets):
 *   recv   a multishot RECV with buffer selection from the ring's
 *          provided-buffer ring: each CQE is a chunk the fd keeps on its
 *          queue until a reader copies it out and hands the buffer back;
 *          a multishot that ends (-ENOBUFS, no IORING_CQE_F_MORE) is
 *          re-armed by the next read; after -ENOBUFS the next read is one
 *          single-shot RECV into a buffer of the fd's own (progress even
 *          when the shared pool is dry); a queue past QUEUE_MAX bytes
 *          cancels the multishot (a client that is not read does not eat
 *          the pool) until the reader drains it;
 *   send   a SEND (MSG_NOSIGNAL) of a copy of the caller's bytes, at most
 *          COPY_MAX per op (writev: gathered into the copy);
 *   accept an ACCEPT (SOCK_NONBLOCK | SOCK_CLOEXEC) into the op's own
 *          address buffer.
 * What has no op here (pipes, datagram sockets, signalfd, ttys, connect,
 * recv with flags) takes the reactor's readiness step (fut__io_do), with
 * readiness from a multishot POLL_ADD (watch) instead of epoll.
 *
 * Ownership (the rule that keeps the kernel out of freed memory): an op's
 * state (struct uop) and every buffer the kernel reads or writes belong to
 * this file, never to the future; the future's buffer is only copied to
 * (reads, at the READY poll) or from (writes, at submission). So:
 *   - a dropped read leaves its op in flight on the fd: the next reader
 *     adopts it, and bytes that came meanwhile are on the fd's queue: no
 *     byte is lost (reads stay cancel-safe);
 *   - a dropped accept is adopted the same way (the connection waits for
 *     the next accept, or is closed with the listener);
 *   - a dropped write is cancelled (ASYNC_CANCEL): its copy may still go
 *     out, wholly or in part, if the kernel sent it before the cancel (on
 *     io_uring, write is not cancel-safe; docs/io.md says so);
 *   - the last close of an fd cancels what it has in flight (submitting
 *     first any SQE still naming its fd number, which a later open could
 *     reuse); forget() then detaches the ops, which retire on their CQEs:
 *     an accepted fd that completes for nobody is closed, a buffer handed
 *     back;
 *   - destroy() cancels everything and waits for the last CQE before the
 *     memory goes.
 *
 * Threads: every call on one backend comes from the thread that drives the
 * ring (the current-thread runtime's thread): the schedulers poll and drop
 * a current-thread runtime's futures there, and the multi-thread runtime
 * does not use this backend (driver.c). Under that rule nothing here needs
 * a lock; debug builds check it.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "io/uring_internal.h"
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
    struct io_uring_sqe *s = fut__ur_sqe_get(b);
    io_uring_prep_recv_multishot(s, io->fd, NULL, 0, 0);
    s->flags |= IOSQE_BUFFER_SELECT;
    s->buf_group = BUF_GROUP;
    fut__ur_sqe_op(b, s, u);
    f->ms = u;
}

/* A single-shot RECV into a buffer of the op's own. */
static int arm_solo(struct fut__backend *b, struct fut__io *io,
                    struct ufd *f, size_t want)
{
    struct uop *u = fut__ur_uop_new(b, io, U_RECV);
    size_t cap = want < SOLO_MAX ? (want ? want : 1) : SOLO_MAX;
    if (!u || fut__ur_uop_buffer(b, u, cap) < 0) {
        if (u)
            fut__ur_uop_free(b, u);
        return FUT_ENOMEM;
    }
    struct io_uring_sqe *s = fut__ur_sqe_get(b);
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
        memcpy((char *)op->buf + got, b->bufs + (size_t)c->bid * BUF_SIZE +
                                          c->off, n);
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

static int uring_recv(struct fut__backend *b, struct fut__io *io,
                      struct ufd *f, const struct fut__op *op,
                      struct fut_context *cx, long *res)
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

static void on_recv_ms(struct fut__backend *b, struct uop *u,
                       const struct io_uring_cqe *cqe, long res)
{
    int more = (cqe->flags & IORING_CQE_F_MORE) != 0;
    struct fut__io *io = u->io;
    if (cqe->flags & IORING_CQE_F_BUFFER) {
        uint16_t bid = (uint16_t)(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
        if (!io || res <= 0) { /* a fault may have eaten the bytes */
            fut__ur_buf_return(b, bid);
        } else {
            struct ufd *f = ufd_of(io);
            fut__ur_chunk_push(b, f, bid, (uint32_t)res);
            if (more && f->queued >= QUEUE_MAX && !u->ended) {
                /* Paused: re-armed by the read that drains the queue. */
                fut__ur_cancel_op(b, u);
                u->ended = 1;
            }
            if (more)
                wake(io, FUT__DIR_READ);
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
            ufd_of(io)->nobufs = 1;
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
            struct ufd *f = ufd_of(io);
            if (res == -ENOBUFS)
                f->nobufs = 1;
            else if (f->end == 1)
                f->end = res;
            wake(io, FUT__DIR_READ);
        }
        return;
    }
    if (more)
        return;
    b->inflight--;
    if (io) {
        struct ufd *f = ufd_of(io);
        if (f->ms == u)
            f->ms = NULL;
        if (res == 0)
            f->end = 0;
        else if (res == -ENOBUFS) {
            f->nobufs = 1;
            fut__fetch_add(&fut__uring_nobufs, 1, FUT__RELAXED);
        } else if (res < 0 && res != -ECANCELED && res != -EAGAIN &&
                 res != -EINTR)
            f->end = res;
        wake(io, FUT__DIR_READ);
    }
    fut__ur_uop_free(b, u);
}

/* ------------------------------------------------------------ accept */

static int uring_accept(struct fut__backend *b, struct fut__io *io,
                        struct ufd *f, const struct fut__op *op,
                        struct fut_context *cx, long *res)
{
    struct uop *u = f->rd;
    if (u && u->done) {
        if (!fut_coop_proceed(cx))
            return FUT_PENDING;
        f->rd = NULL;
        *res = u->res;
        if (u->res >= 0 && op->addr) {
            socklen_t n = u->alen < *op->alen ? u->alen : *op->alen;
            memcpy(op->addr, u->addr, n);
            *op->alen = u->alen;
        }
        fut__ur_uop_free(b, u);
        return FUT_READY;
    }
    if (!u) {
        u = fut__ur_uop_new(b, io, U_ACCEPT);
        if (u && !(u->addr = fut__alloc(sizeof *u->addr))) {
            fut__ur_uop_free(b, u);
            u = NULL;
        }
        if (!u) {
            *res = FUT_ENOMEM;
            return FUT_READY;
        }
        u->alen = sizeof *u->addr;
        struct io_uring_sqe *s = fut__ur_sqe_get(b);
        io_uring_prep_accept(s, io->fd, (struct sockaddr *)u->addr,
                             &u->alen, SOCK_NONBLOCK | SOCK_CLOEXEC);
        fut__ur_sqe_op(b, s, u);
        f->rd = u;
    }
    park(f, FUT__DIR_READ, cx);
    return FUT_PENDING;
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

static int uring_send(struct fut__backend *b, struct fut__io *io,
                      struct ufd *f, const struct fut__op *op,
                      struct fut_context *cx, long *res)
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
        struct io_uring_sqe *s = fut__ur_sqe_get(b);
        io_uring_prep_send(s, io->fd, u->buf, fut__ur_shorten(U_SEND, u->len),
                           MSG_NOSIGNAL);
        fut__ur_sqe_op(b, s, u);
        f->wr = u;
    }
    park(f, FUT__DIR_WRITE, cx);
    return FUT_PENDING;
}

/* ------------------------------------------------- the table's 'op' */

static void drop_poll(struct fut__backend *b, struct fut__io *io,
                      struct ufd *f);

/* Whether 'op' on 'io' runs natively (else: the readiness step). */
static int native(const struct fut__io *io, const struct fut__op *op)
{
    switch (op->kind) {
    case FUT__OP_READ:
    case FUT__OP_RECV:
        return io->kind == FUT__IO_STREAM && op->flags == 0;
    case FUT__OP_WRITE:
    case FUT__OP_SEND:
    case FUT__OP_WRITEV:
    case FUT__OP_SENDV:
        return io->kind == FUT__IO_STREAM &&
               (op->flags & ~MSG_NOSIGNAL) == 0;
    case FUT__OP_ACCEPT:
        return io->kind == FUT__IO_LISTEN;
    default:
        return 0;
    }
}

static int uring_op(struct fut__backend *b, struct fut__io *io,
                    const struct fut__op *op, struct fut_context *cx,
                    long *res)
{
    check_thread(b);
    if (!native(io, op))
        return fut__io_do(b, io, op, cx, res);
    if (FUT_UNLIKELY(io->spill != NULL || io->has_spill_fd) &&
        fut__op_dir(op) == FUT__DIR_READ)
        return fut__io_do(b, io, op, cx, res); /* the spill, first */
    struct ufd *f = ufd_of(io);
    if (FUT_UNLIKELY(!f || !io->drv)) {
        int r = fut__io_attach(io);
        if (r == 0 && !(f = fut__ur_ufd_get(io)))
            r = FUT_ENOMEM;
        if (r < 0) {
            *res = r;
            return FUT_READY;
        }
    }
    if (FUT_UNLIKELY(f->poll != NULL))
        drop_poll(b, io, f);
    switch (op->kind) {
    case FUT__OP_ACCEPT:
        return uring_accept(b, io, f, op, cx, res);
    case FUT__OP_READ:
    case FUT__OP_RECV:
        return uring_recv(b, io, f, op, cx, res);
    default:
        return uring_send(b, io, f, op, cx, res);
    }
}

/* A socket that was watched for readiness (its connect) now runs native
 * ops: its multishot poll would only cost a CQE per wakeup. Cancelled and
 * orphaned; a later readiness wait watches it again. */
static void drop_poll(struct fut__backend *b, struct fut__io *io,
                      struct ufd *f)
{
    struct uop *u = f->poll;
    f->poll = NULL;
    u->io = NULL;
    fut__ur_cancel_op(b, u);
    fut__mutex_lock(&io->lock);
    io->watched = 0;
    fut__mutex_unlock(&io->lock);
}

/* The future of the op in 'dir' was dropped while PENDING. Reads and
 * accepts stay in flight for the next one (adopted); a write is
 * cancelled, its op orphaned (retired on its CQE). */
static void uring_op_drop(struct fut__backend *b, struct fut__io *io,
                          unsigned dir)
{
    check_thread(b);
    struct ufd *f = ufd_of(io);
    if (!f)
        return;
    unpark(f, dir);
    if (dir != FUT__DIR_WRITE || !f->wr)
        return;
    struct uop *u = f->wr;
    f->wr = NULL;
    if (u->done) {
        fut__ur_uop_free(b, u);
        return;
    }
    u->io = NULL;
    fut__ur_cancel_op(b, u);
}

/* ------------------------------------------------------ watch (poll) */

#define POLL_MASK (POLLIN | POLLOUT | POLLRDHUP | POLLPRI)

static void arm_poll(struct fut__backend *b, struct fut__io *io,
                     struct uop *u)
{
    struct io_uring_sqe *s = fut__ur_sqe_get(b);
    io_uring_prep_poll_multishot(s, io->fd, POLL_MASK);
    fut__ur_sqe_op(b, s, u);
}

static int uring_watch(struct fut__backend *b, struct fut__io *io)
{
    check_thread(b);
    struct ufd *f = fut__ur_ufd_get(io);
    if (!f)
        return FUT_ENOMEM;
    if (f->poll)
        return 0;
    struct uop *u = fut__ur_uop_new(b, io, U_POLL);
    if (!u)
        return FUT_ENOMEM;
    f->poll = u;
    arm_poll(b, io, u);
    return 0;
}

static void on_poll(struct fut__backend *b, struct uop *u, long res,
                    int more, uint32_t tick)
{
    struct fut__io *io = u->io;
    if (io && res > 0)
        fut__io_dispatch(io, fut__rd_of_poll((uint32_t)res), tick);
    if (more)
        return;
    b->inflight--;
    if (io && res != -ECANCELED) {
        arm_poll(b, io, u); /* the multishot ended (overflow, error) */
        return;
    }
    if (io)
        ufd_of(io)->poll = NULL;
    fut__ur_uop_free(b, u);
}

/* The last handle is closing; the fd is closed right after. */
static void uring_unwatch(struct fut__backend *b, struct fut__io *io)
{
    check_thread(b);
    struct ufd *f = ufd_of(io);
    if (!f)
        return;
    unpark(f, FUT__DIR_READ);
    unpark(f, FUT__DIR_WRITE);
    struct uop *ops[4] = {f->rd, f->ms, f->wr, f->poll};
    int stale = 0;
    for (int i = 0; i < 4; i++)
        if (ops[i] && !ops[i]->done && ops[i]->gen == b->gen)
            stale = 1;
    if (stale) /* SQEs naming this fd number go before it is closed */
        fut__ur_submit_now(b);
    for (int i = 0; i < 4; i++)
        if (ops[i] && !ops[i]->done && !(ops[i] == f->ms && f->ms->ended))
            fut__ur_cancel_op(b, ops[i]);
}

static int uring_wait(struct fut__backend *b, int64_t timeout_ns,
                      uint32_t tick, int *woken);

/* Whether an op of 'f' still waits for a CQE. */
static int busy(const struct ufd *f)
{
    return (f->rd && !f->rd->done) || f->ms || (f->wr && !f->wr->done) ||
           f->poll;
}

/* 'io' outlives this backend: cancel what it has in flight, wait for the
 * CQEs (bounded: 2 s), and keep the bytes nobody read in its spill. */
static void detach_drain(struct fut__backend *b, struct fut__io *io,
                         struct ufd *f)
{
    uring_unwatch(b, io);
    if (f->poll) { /* cancelled: its CQE need not be waited for */
        f->poll->io = NULL;
        f->poll = NULL;
    }
    int woken = 0;
    int64_t until = fut_now_ns() + 2000000000;
    while (busy(f) && fut_now_ns() < until)
        uring_wait(b, 10000000, 0, &woken);
    int err = 0;
    while (f->head && !err) {
        struct chunk *c = f->head;
        err = fut__io_spill(io, b->bufs + (size_t)c->bid * BUF_SIZE + c->off,
                            c->len - c->off);
        fut__ur_chunk_pop(b, f);
    }
    struct uop *u = f->rd;
    if (!err && u && u->kind == U_RECV && u->done && u->res > 0)
        fut__io_spill(io, u->buf + u->off, u->len - u->off);
    if (u && u->kind == U_ACCEPT && u->done && u->res >= 0 &&
        !io->has_spill_fd) {
        io->spill_fd = (int)u->res; /* the connection waits for the next
                                       accept, on any runtime */
        io->has_spill_fd = 1;
        u->res = -1;
    }
}

/* 'io' is being freed (or detached, see detach_drain): detach every op
 * (they retire on their CQEs), close an accepted fd nobody took, hand
 * queued buffers back. */
static void uring_forget(struct fut__backend *b, struct fut__io *io,
                         int detach)
{
    struct ufd *f = ufd_of(io);
    if (!f)
        return;
    if (detach)
        detach_drain(b, io, f);
    struct uop *ops[4] = {f->rd, f->ms, f->wr, f->poll};
    for (int i = 0; i < 4; i++) {
        struct uop *u = ops[i];
        if (!u)
            continue;
        if (u->done) {
            if (u->kind == U_ACCEPT && u->res >= 0)
                fut__sys_close((int)u->res);
            fut__ur_uop_free(b, u);
        } else {
            u->io = NULL;
        }
    }
    while (f->head)
        fut__ur_chunk_pop(b, f);
    unpark(f, FUT__DIR_READ);
    unpark(f, FUT__DIR_WRITE);
    fut__free(f, sizeof *f);
    io->bstate[0] = NULL;
}

/* --------------------------------------------------------------- wait */

static struct fut__uring_faults *faults(void)
{
    return fut__uring_faults;
}

/* Whether 'res' says "nothing happened, try again" (not a broken
 * connection). */
static int nothing(long res)
{
    return res == -EAGAIN || res == -ECANCELED || res == -ENOBUFS ||
           res == -EINTR;
}

/* Applies the fault hook to a CQE whose kernel result is 'real'. A fault
 * may break a connection (any error: its bytes are lost with it), but
 * cannot undo what happened: "nothing happened" on a CQE that moved bytes
 * or made a connection keeps the real result (a multishot recv then ends
 * after it, with that code). */
static void inject(struct uop *u, long real, long *res)
{
    fut__uring_faults->cqe(u->kind, res);
    if (*res == real || !nothing(*res))
        return;
    if (real > 0 || (u->kind == U_ACCEPT && real >= 0)) {
        if (u->kind == U_RECV_MS)
            u->term = (int)*res;
        *res = real;
    }
}

static void on_cqe(struct fut__backend *b, const struct io_uring_cqe *cqe,
                   uint32_t tick, int *woken, int *n)
{
    uint64_t ud = io_uring_cqe_get_data64(cqe);
    int more = (cqe->flags & IORING_CQE_F_MORE) != 0;
    if (ud == UD_IGNORE)
        return;
    if (ud == UD_WAKE) {
        *woken = 1;
        if (!more)
            b->wake_armed = 0;
        return;
    }
    struct uop *u = (struct uop *)(uintptr_t)ud;
    long res = cqe->res;
    struct fut__uring_faults *fx = faults();
    if (fx && fx->cqe && u->kind != U_POLL)
        inject(u, cqe->res, &res);
    (*n)++;
    switch (u->kind) {
    case U_POLL:
        on_poll(b, u, res, more, tick);
        return;
    case U_RECV_MS:
        on_recv_ms(b, u, cqe, res);
        return;
    default:
        break;
    }
    b->inflight--;
    if (u->kind == U_ACCEPT && res >= 0 && cqe->res < 0)
        res = cqe->res; /* a fault cannot invent a connection */
    if (u->kind == U_ACCEPT && cqe->res >= 0 && res < 0)
        fut__sys_close(cqe->res); /* a fault broke a real one */
    if (res == -EAGAIN || res == -EINTR ||
        (u->io && (res == -ECANCELED ||
                   (res == -ENOBUFS && u->kind != U_ACCEPT)))) {
        /* Not an answer (a fault, a kernel that gave up, a cancel we did
         * not ask for: ours come after the op was orphaned or its fd
         * forgotten): the op is redone by the next poll. */
        struct fut__io *io = u->io;
        if (io) {
            struct ufd *f = ufd_of(io);
            unsigned dir = u->kind == U_SEND ? FUT__DIR_WRITE
                                             : FUT__DIR_READ;
            if (f->rd == u)
                f->rd = NULL;
            if (f->wr == u)
                f->wr = NULL;
            wake(io, dir);
        }
        fut__ur_uop_free(b, u);
        return;
    }
    if (!u->io) { /* orphaned or forgotten: retire */
        if (u->kind == U_ACCEPT && res >= 0)
            fut__sys_close((int)res);
        fut__ur_uop_free(b, u);
        return;
    }
    u->done = 1;
    u->res = res;
    if (u->kind == U_RECV)
        u->len = res > 0 ? (size_t)res : 0;
    wake(u->io, u->kind == U_SEND ? FUT__DIR_WRITE : FUT__DIR_READ);
}

static void arm_wake(struct fut__backend *b)
{
    struct io_uring_sqe *s = fut__ur_sqe_get(b);
    io_uring_prep_poll_multishot(s, b->wakefd, POLLIN);
    io_uring_sqe_set_data64(s, UD_WAKE);
    b->wake_armed = 1;
}

static int reap(struct fut__backend *b, uint32_t tick, int *woken)
{
    int n = 0;
    struct io_uring_cqe *cqe;
    unsigned head, seen = 0;
    io_uring_for_each_cqe(&b->ring, head, cqe)
    {
        on_cqe(b, cqe, tick, woken, &n);
        seen++;
    }
    io_uring_cq_advance(&b->ring, seen);
    return n;
}

static int uring_wait(struct fut__backend *b, int64_t timeout_ns,
                      uint32_t tick, int *woken)
{
    check_thread(b);
    if (!b->wake_armed)
        arm_wake(b);
    fut__ur_ring_enable(b);
    int queued = io_uring_sq_ready(&b->ring) > 0;
    if (timeout_ns == 0) {
        /* A look: enter only when there is something to send or the
         * kernel flagged completions waiting for us. */
        if (queued || IO_URING_READ_ONCE(*b->ring.sq.kflags) &
                          (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW)) {
            count_enter();
            io_uring_submit_and_get_events(&b->ring);
        }
    } else if (io_uring_cq_ready(&b->ring) == 0) {
        struct io_uring_cqe *cqe;
        struct __kernel_timespec ts, *tp = NULL;
        if (timeout_ns > 0) {
            ts.tv_sec = timeout_ns / 1000000000;
            ts.tv_nsec = timeout_ns % 1000000000;
            tp = &ts;
        }
        count_enter();
        io_uring_submit_and_wait_timeout(&b->ring, &cqe, 1, tp, NULL);
    } else if (queued) {
        count_enter();
        io_uring_submit(&b->ring);
    }
    if (queued || timeout_ns != 0)
        b->gen++;
    return reap(b, tick, woken);
}

/* ------------------------------------------------------ create/destroy */

static int uring_create(struct fut__backend **out, int wakefd)
{
    struct fut__backend *b = fut__alloc(sizeof *b);
    if (!b)
        return FUT_ENOMEM;
    memset(b, 0, sizeof *b);
    int coop;
    int r = fut__ur_ring_setup(&b->ring, &coop);
    if (r < 0) {
        fut__free(b, sizeof *b);
        return r;
    }
    if (coop)
        b->enabled = 1; /* no R_DISABLED without SINGLE_ISSUER */
    r = fut__ur_setup_bufs(b);
    if (r < 0) {
        io_uring_queue_exit(&b->ring);
        fut__free(b, sizeof *b);
        return r;
    }
    b->wakefd = wakefd;
    fut__uring_faults_from_env();
    *out = b;
    return 0;
}

static void uring_destroy(struct fut__backend *b)
{
    /* Cancel what is in flight and wait for the last CQE: the kernel must
     * be done with every buffer before it goes. Bounded: a second. */
    if (b->enabled || b->inflight) {
        fut__ur_ring_enable(b);
        struct io_uring_sqe *s = fut__ur_sqe_get(b);
        io_uring_prep_cancel(s, NULL, IORING_ASYNC_CANCEL_ANY |
                                         IORING_ASYNC_CANCEL_ALL);
        io_uring_sqe_set_data64(s, UD_IGNORE);
        if (b->wake_armed) {
            s = fut__ur_sqe_get(b);
            io_uring_prep_poll_remove(s, UD_WAKE);
            io_uring_sqe_set_data64(s, UD_IGNORE);
        }
        /* Completions come about 20 per io_uring_enter (the kernel's
         * batch of deferred task work): loop on time, not on calls. */
        int woken = 0;
        int64_t until = fut_now_ns() + 2000000000;
        do
            uring_wait(b, 10000000, 0, &woken);
        while (b->inflight && fut_now_ns() < until);
    }
    io_uring_queue_exit(&b->ring);
    munmap(b->bufs, (size_t)BUF_COUNT * BUF_SIZE);
    munmap(b->br, BUF_COUNT * sizeof(struct io_uring_buf));
    while (b->free_ops) {
        struct uop *u = b->free_ops;
        b->free_ops = u->next;
        fut__free(u, sizeof *u);
    }
    while (b->free_bufs) {
        void *p = b->free_bufs;
        b->free_bufs = *(void **)p;
        fut__free(p, SMALL_BUF);
    }
    while (b->free_chunks) {
        struct chunk *c = b->free_chunks;
        b->free_chunks = c->next;
        fut__free(c, sizeof *c);
    }
    fut__free(b, sizeof *b);
}

const struct fut__backend_vt fut__backend_uring = {
    .name = "io_uring",
    .create = uring_create,
    .destroy = uring_destroy,
    .op = uring_op,
    .op_drop = uring_op_drop,
    .watch = uring_watch,
    .unwatch = uring_unwatch,
    .forget = uring_forget,
    .wait = uring_wait,
};
