/* SPDX-License-Identifier: MIT */
/* The io_uring backend's wait (the table's 'wait' without the rescue's
 * locking, which rescue.c adds): the inbox's requests run, the SQEs go
 * out and the CQEs come back in one io_uring_enter, and each CQE goes to
 * its op - the native ops' to stream.c, the watch's POLL_ADD to the
 * reactor's readiness word (fut__io_dispatch). The rules, threads
 * included, are backend.c's; this runs on the ring's owner (whoever
 * holds the ring: ur_mine).
 */
#include <errno.h>
#include <poll.h>
#include <string.h>

#include "io/uring/internal.h"
#include "platform/sys.h"

/* ------------------------------------------------------ watch (poll) */

#define POLL_MASK (POLLIN | POLLOUT | POLLRDHUP | POLLPRI)

void fut__ur_arm_poll(struct fut__backend *b, struct fut__io *io,
                      struct uop *u)
{
    struct io_uring_sqe *s = fut__ur_sqe_get(b, u);
    io_uring_prep_poll_multishot(s, io->fd, POLL_MASK);
    fut__ur_sqe_op(b, s, u);
}

/* Under f's lock (io's, on a shared ring), which it releases for the
 * dispatch (fut__io_dispatch takes io's lock itself) and takes again:
 * 'io' stays, since only this thread frees it (the inbox's FORGET, or
 * forget on a lone ring). */
static void on_poll(struct fut__backend *b, struct uop *u, long res, int more,
                    uint32_t tick)
{
    struct fut__io *io = u->io;
    struct ufd *f = u->f;
    if (b->shared) {
        /* A tick of its own per event: two CQEs of one fd can come in one
         * reap, and the reader the first woke runs on another thread -
         * its clear (EAGAIN) with that tick must not erase the second
         * (the readiness word's ABA guard assumes one event per fd per
         * tick: epoll's batches, and a lone ring's reader, which runs
         * after the reap, give that). */
        if (++b->ptick == 0)
            b->ptick = 1;
        tick = b->ptick;
    }
    if (io && res > 0) {
        f_unlock(f);
        fut__io_dispatch(io, fut__rd_of_poll((uint32_t)res), tick);
        f_lock(f);
        io = u->io; /* orphaned meanwhile, maybe (drop_poll) */
    }
    if (more)
        return;
    b->inflight--;
    if (io && res != -ECANCELED && f->poll == u) {
        fut__ur_arm_poll(b, io,
                         u); /* the multishot ended (overflow, error) */
        return;
    }
    if (io && f->poll == u)
        f->poll = NULL;
    fut__ur_retire(b, u);
}

/* ------------------------------------------------------------ forget */

void fut__ur_forget(struct fut__backend *b, struct fut__io *io, struct ufd *f)
{
    f_lock(f); /* io's: alive until the caller frees it */
    struct uop *ops[4] = {f->rd, f->ms, f->wr, f->poll};
    f->rd = f->ms = f->wr = f->poll = NULL;
    for (int i = 0; i < 4; i++) {
        struct uop *u = ops[i];
        if (!u)
            continue;
        if (u->done)
            fut__ur_retire(b, u);
        else
            u->io = NULL;
    }
    while (f->head)
        fut__ur_chunk_pop(b, f);
    int fd;
    while ((fd = fut__ur_aq_pop(f)) >= 0)
        fut__sys_close(fd);
    /* Empty already when the io's last handle went (io_release took
     * them) or it was detached; taken for the drop after the unlock. */
    struct fut_waker r = fut__io_slot_take(io, FUT__DIR_READ);
    struct fut_waker w = fut__io_slot_take(io, FUT__DIR_WRITE);
    fut__ur_file_release(b, f); /* if its unwatch did not */
    f->wake = 0;
    /* From here the CQE path and the inbox (this thread's, the ring's
     * holder) touch neither io's lock nor its slots (internal.h's rules
     * "One record"): the io may be freed as soon as we return. */
    f->dead = 1;
    int gone = f->nops == 0;
    f_unlock(f);
    f->io = NULL;
    fut_waker_drop(&r);
    fut_waker_drop(&w);
    /* Release: pairs with backend.c's ufd_load (nobody polls it now; tidy). */
    fut__store_slot(&io->bstate[0], NULL, FUT__RELEASE);
    if (gone)
        fut__ur_ufd_free(f);
}

/* --------------------------------------------------------------- wait */

static struct fut__uring_faults *faults(void)
{
    return fut__uring_faults;
}

/* Applies the fault hook to a CQE whose kernel result is 'real'. A fault
 * may break a connection (any error: its bytes are lost with it), but
 * cannot undo what happened: "nothing happened" on a CQE that moved bytes
 * or made a connection keeps the real result (a multishot recv then ends
 * after it, with that code). */
static void inject(struct uop *u, long real, long *res)
{
    fut__uring_faults->cqe(u->kind, res);
    if (*res == real || !ur_nothing(*res))
        return;
    if (real > 0 || (u->kind == U_ACCEPT && real >= 0)) {
        if (u->kind == U_RECV_MS)
            u->term = (int)*res;
        *res = real;
    }
}

static void on_op_cqe(struct fut__backend *b, struct uop *u,
                      const struct io_uring_cqe *cqe, int more,
                      uint32_t tick);

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
    struct ufd *f = u->f;
    /* A dead f's io may be freed: its lock and slots are not touched
     * ('dead' is this thread's: internal.h's rules "One record"). */
    struct fut__io *io = f->dead ? NULL : f->io;
    if (io)
        f_lock(f);
    (*n)++;
    on_op_cqe(b, u, cqe, more, tick);
    struct fut_waker r = FUT_WAKER_NONE, w = FUT_WAKER_NONE;
    if (f->wake) { /* set only while the io lives (u->io) */
        if (f->wake & FUT__DIR_READ)
            r = fut__io_slot_take(io, FUT__DIR_READ);
        if (f->wake & FUT__DIR_WRITE)
            w = fut__io_slot_take(io, FUT__DIR_WRITE);
        f->wake = 0;
    }
    int gone = f->dead && f->nops == 0;
    if (io)
        f_unlock(f);
    if (gone)
        fut__ur_ufd_free(f);
    /* After the lock, as the reactor wakes (its rules). */
    if (fut_waker_is_set(&r))
        fut_waker_wake(&r);
    if (fut_waker_is_set(&w))
        fut_waker_wake(&w);
}

/* One CQE of op 'u', under its fd's lock (none when f is dead); wakes
 * by marking f->wake (on_cqe wakes after the lock). */
static void on_op_cqe(struct fut__backend *b, struct uop *u,
                      const struct io_uring_cqe *cqe, int more, uint32_t tick)
{
    long res = cqe->res;
    struct fut__uring_faults *fx = faults();
    if (fx && fx->cqe && u->kind != U_POLL)
        inject(u, cqe->res, &res);
    switch (u->kind) {
    case U_POLL:
        on_poll(b, u, res, more, tick);
        return;
    case U_RECV_MS:
        fut__ur_on_recv_ms(b, u, cqe, res);
        return;
    case U_ACCEPT:
        fut__ur_on_accept(b, u, cqe, res, more);
        return;
    default:
        break;
    }
    b->inflight--;
    if (res == -EAGAIN || res == -EINTR ||
        (u->io && (res == -ECANCELED || res == -ENOBUFS))) {
        /* Not an answer (a fault, a kernel that gave up, a cancel we did
         * not ask for: ours come after the op was orphaned or its fd
         * forgotten): the op is redone by the next poll. */
        struct ufd *f = u->f;
        if (u->io) {
            unsigned dir = u->kind == U_SEND ? FUT__DIR_WRITE : FUT__DIR_READ;
            if (f->rd == u)
                f->rd = NULL;
            if (f->wr == u)
                f->wr = NULL;
            wake(f, dir);
        }
        fut__ur_retire(b, u);
        return;
    }
    if (!u->io) { /* orphaned or forgotten: retire */
        fut__ur_retire(b, u);
        return;
    }
    u->done = 1;
    u->res = res;
    if (u->kind == U_RECV)
        u->len = res > 0 ? (size_t)res : 0;
    wake(u->f, u->kind == U_SEND ? FUT__DIR_WRITE : FUT__DIR_READ);
}

static void arm_wake(struct fut__backend *b)
{
    struct io_uring_sqe *s = fut__ur_sqe_raw(b);
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

/* ------------------------------------------------------------- inbox */

/* An op another thread prepared or wants cancelled (under f's lock). */
static void inbox_op(struct fut__backend *b, struct uop *u)
{
    struct ufd *f = u->f;
    u->posted = 0;
    if (u->zombie) { /* its last CQE came meanwhile */
        fut__ur_uop_free(b, u);
        return;
    }
    if (!u->issued) {
        if (u->want_cancel || !u->io) { /* never sent: nothing to wait */
            if (f->rd == u)
                f->rd = NULL;
            if (f->ms == u)
                f->ms = NULL;
            if (f->wr == u)
                f->wr = NULL;
            if (f->poll == u)
                f->poll = NULL;
            fut__ur_uop_free(b, u);
            return;
        }
        struct io_uring_sqe *s = fut__ur_sqe_raw(b);
        *s = *u->sqe; /* its user_data is u already */
        u->sqe = NULL;
        fut__ur_sqe_op(b, s, u);
        return;
    }
    if (u->want_cancel) {
        u->want_cancel = 0;
        fut__ur_cancel_op(b, u);
    }
}

/* Runs what other threads asked of this ring, in the order asked. */
void fut__ur_drain(struct fut__backend *b)
{
    uint16_t bids[BUF_COUNT];
    fut__mutex_lock(&b->ilock);
    struct ureq *r = b->ihead;
    b->ihead = b->itail = NULL;
    unsigned nb = b->nbids;
    memcpy(bids, b->ibids, nb * sizeof bids[0]);
    b->nbids = 0;
    /* Under the lock: a post after it stores 1 again (kick). */
    fut__store(&b->ipending, 0, FUT__RELAXED);
    fut__mutex_unlock(&b->ilock);
    for (unsigned i = 0; i < nb; i++)
        fut__ur_buf_return(b, bids[i]);
    while (r) {
        struct ureq *next = r->next;
        struct ufd *f;
        switch (r->type) {
        case REQ_OP: {
            struct uop *u = fut__container_of(r, struct uop, req);
            f = u->f;
            /* A dead f's io may be freed (as in on_cqe). */
            int live = !f->dead;
            if (live)
                f_lock(f);
            inbox_op(b, u);
            int gone = f->dead && f->nops == 0;
            if (live)
                f_unlock(f);
            if (gone)
                fut__ur_ufd_free(f);
            break;
        }
        case REQ_CLOSE:
            f = &fut__container_of(r, struct ufd_mt, close_req)->f;
            if (io_uring_sq_ready(&b->ring) > 0)
                fut__ur_submit_now(b); /* SQEs naming it go first */
            fut__ur_file_release(b, f);
            fut__sys_close(ufd_mt(f)->close_fd);
            break;
        default: /* REQ_FORGET: the last request of an fd */
            f = &fut__container_of(r, struct ufd_mt, forget_req)->f;
            {
                struct fut__io *io = f->io;
                fut__ur_forget(b, io, f);
                fut__io_free(io);
            }
            break;
        }
        r = next;
    }
}

int fut__ur_wait_in(struct fut__backend *b, int64_t timeout_ns, uint32_t tick,
                    int *woken)
{
    check_thread(b);
    if (!b->wake_armed)
        arm_wake(b);
    fut__ur_ring_enable(b);
    if (timeout_ns != 0 && ur_mine(b))
        fut__ur_pools_idle(b, &timeout_ns); /* may shorten the sleep */
    if (b->shared) {
        if (timeout_ns != 0) {
            /* Seq_cst: the Dekker pair with kick (internal.h). */
            fut__store(&b->parked, 1, FUT__SEQ_CST);
            if (fut__load(&b->ipending, FUT__SEQ_CST))
                timeout_ns = 0;
        }
        if (fut__load(&b->ipending, FUT__RELAXED))
            fut__ur_drain(b);
    }
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
    if (b->shared)
        fut__store(&b->parked, 0, FUT__RELAXED);
    return reap(b, tick, woken);
}
