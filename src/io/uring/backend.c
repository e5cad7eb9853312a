/* SPDX-License-Identifier: MIT */
/* The io_uring backend (backend.h): operations as submissions, results as
 * completions, through liburing.
 *
 * The ring: one per driver, set up IORING_SETUP_SINGLE_ISSUER |
 * DEFER_TASKRUN | TASKRUN_FLAG | R_DISABLED (COOP_TASKRUN | TASKRUN_FLAG
 * where the kernel has no DEFER_TASKRUN), enabled by the first thread that
 * submits or waits; its fd is registered (no fget per io_uring_enter).
 * The rings of a multi-thread runtime are set up again with COOP_TASKRUN |
 * TASKRUN_FLAG (fut__uring_share; see "Rescue" below).
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
 *   accept a multishot ACCEPT (SOCK_NONBLOCK | SOCK_CLOEXEC) per
 *          listener: connections queue on the fd until an accept takes
 *          them, ACCEPT_MAX of them pause it (rules in stream.c).
 * These three live in stream.c; this file has the table, the
 * watch (POLL_ADD), the CQE dispatch, the inbox and the ring's life.
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
 *   - a dropped accept leaves the multishot ACCEPT armed: the connection
 *     waits on the listener's queue for the next accept, or is closed
 *     with the listener;
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
 * Threads. A current-thread runtime has one ring, and every call comes
 * from its thread (debug builds check it): nothing here takes a lock.
 * A multi-thread runtime has one ring per worker ('shared' rings), and:
 *   - an fd belongs to the ring of the thread that first used it (a
 *     thread that is not a worker gives it to the first ring) and keeps
 *     it: its ops are issued there and complete there;
 *   - only a ring's owner thread touches the ring (SQ, CQ, buffer ring,
 *     pools): SINGLE_ISSUER holds. Another thread that polls or drops a
 *     future of the fd (a task that migrated, a block_on) works on the
 *     fd's state under its lock ('struct ufd'.lock) and asks the owner for
 *     what only the owner may do through the ring's inbox: issue an op (its
 *     SQE prepared in the op), cancel one, hand a provided buffer back,
 *     close the fd (after the SQEs naming it went out), free the fd's
 *     state. Requests run in order, at the owner's next wait, which a post
 *     wakes when it sleeps (kick);
 *   - completions run on the owner under the fd's lock; wakers are woken
 *     under it (a wake only queues a task); a readiness dispatch runs
 *     after it is released (the reactor's lock comes first: watch runs
 *     under it);
 *   - an fd's state lives while an op points to it (nops) and its io
 *     until the inbox's FORGET: the last closer's requests come before
 *     it;
 *   - the worker retires its ring at shutdown, once every worker stopped
 *     polling (rt/multi/shutdown.c): the fds' state is detached, bytes
 *     nobody read kept in their spill, the ring cancelled and freed.
 *
 * Rescue (rings of a multi-thread runtime, 'rescue' set): a worker stuck
 * in one long poll must not hold its ring's fds. So "the owner" above
 * means "whoever holds the ring's lock ('rlock'; ur_mine)":
 *   - the rings are set up without SINGLE_ISSUER | DEFER_TASKRUN: any
 *     thread may enter them, and the kernel posts completions to the CQ
 *     from the submitter's task work, which a spinning thread runs at its
 *     next return from an interrupt (COOP_TASKRUN). The ring fd is not
 *     registered (a registered ring fd is the registering thread's);
 *   - the owner takes its lock in each backend entry with a trylock
 *     (ur_enter; the outermost entry only). Without it the owner is as
 *     any other thread: its ops and cancels go through its own inbox.
 *     Never a blocking lock there: watch runs under the reactor's lock,
 *     which a rescuer holding the ring's lock may take (a dispatch);
 *   - the owner's wait holds the lock throughout, a blocking acquire
 *     (it holds no fd's or reactor's lock), and counts 'turns' and sets
 *     'waiting' (hints, relaxed) for the rescuers;
 *   - a worker, at each of its own waits and holding no ring's lock,
 *     looks at its peers (rescue_peers): a peer not 'waiting' whose
 *     'turns' did not move for RESCUE_NS has its lock tried and its
 *     wait(0) done for it (inbox, submit, reap). What the CQEs wake is
 *     queued on the rescuer's worker; the ops it frees go to the
 *     rescuer's pools (pools are per thread). Lock order: a ring's lock,
 *     then an fd's, then (released the fd's) the reactor's;
 *   - while a peer is outside its wait, a worker sleeps at most
 *     RESCUE_NS; one that went to sleep while every peer waited is woken
 *     by the monitor when it sees a worker stuck in a poll
 *     (rt/multi/monitor.c check_rings);
 *   - a rescuer that reaps the owner's wake (the wake fd's CQE: an
 *     unpark - new work, a shutdown) sets 'wake_rescued' under the
 *     lock, and the owner's next wait returns at once as woken: the
 *     wake is the owner's to see (without it the owner slept through a
 *     shutdown: a TSan run of create/free loops hung at ~900);
 *   - the ring's retire runs under its lock and marks it 'dead' there;
 *     a rescuer checks 'dead' under the lock.
 * The current-thread runtime's ring has no lock and no rescue.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "io/uring/internal.h"
#include "platform/sys.h"

/* The ring an fd first used here goes to: the calling thread's own when
 * it is a worker of this ring's set, else the set's first ring. */
static struct fut__backend *home_for(struct fut__backend *b)
{
    struct fut__backend *h = fut__ur_here;
    if (b->shared && h && h->first == b->first)
        return h;
    return b;
}

/* io's state: an acquire load (pairs with the release store of the
 * thread that made it, under io's lock). */
static struct ufd *ufd_load(struct fut__io *io)
{
    return fut__load_slot(&io->bstate[0], FUT__ACQUIRE);
}

/* io's state, made now if it has none (under io's lock: two threads may
 * come for it at once on a shared ring). */
static struct ufd *ufd_make(struct fut__backend *b, struct fut__io *io)
{
    fut__mutex_lock(&io->lock);
    struct ufd *f = fut__ur_ufd_get(home_for(b), io);
    fut__mutex_unlock(&io->lock);
    return f;
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
        return io->kind == FUT__IO_STREAM && (op->flags & ~MSG_NOSIGNAL) == 0;
    case FUT__OP_ACCEPT:
        return io->kind == FUT__IO_LISTEN;
    default:
        return 0;
    }
}

static int uring_op_in(struct fut__backend *b, struct fut__io *io,
                       const struct fut__op *op, struct fut_context *cx,
                       long *res)
{
    check_thread(b);
    if (!native(io, op))
        return fut__io_do(b, io, op, cx, res);
    if (FUT_UNLIKELY(io->spill != NULL || io->wr_kept_set) &&
        (fut__op_dir(op) == FUT__DIR_READ ? io->spill != NULL
                                          : io->wr_kept_set))
        return fut__io_do(b, io, op, cx, res); /* a detach's leftovers */
    struct ufd *f = ufd_load(io);
    if (FUT_UNLIKELY(!f || !io->drv)) {
        int r = fut__io_attach(io);
        if (r == 0 && !(f = ufd_make(b, io)))
            r = FUT_ENOMEM;
        if (r < 0) {
            *res = r;
            return FUT_READY;
        }
    }
    b = f->owner;
    f_lock(f);
    if (FUT_UNLIKELY(f->poll != NULL)) {
        f_unlock(f);
        drop_poll(b, io, f); /* the reactor's lock first */
        f_lock(f);
    }
    int r;
    switch (op->kind) {
    case FUT__OP_ACCEPT:
        r = fut__ur_accept(b, io, f, op, cx, res);
        break;
    case FUT__OP_READ:
    case FUT__OP_RECV:
        r = fut__ur_recv(b, io, f, op, cx, res);
        break;
    default:
        r = fut__ur_send(b, io, f, op, cx, res);
        break;
    }
    f_unlock(f);
    return r;
}

/* A socket that was watched for readiness (its connect) now runs native
 * ops: its multishot poll would only cost a CQE per wakeup. Cancelled and
 * orphaned; a later readiness wait watches it again. */
static void drop_poll(struct fut__backend *b, struct fut__io *io,
                      struct ufd *f)
{
    fut__mutex_lock(&io->lock);
    f_lock(f);
    struct uop *u = f->poll;
    if (u) {
        f->poll = NULL;
        u->io = NULL;
        fut__ur_cancel_op(b, u);
    }
    io->watched = 0;
    f_unlock(f);
    fut__mutex_unlock(&io->lock);
}

/* The future of the op in 'dir' was dropped while PENDING. Reads and
 * accepts stay in flight for the next one (adopted); a write is
 * cancelled, its op orphaned (retired on its CQE). */
static void uring_op_drop_in(struct fut__backend *b, struct fut__io *io,
                             unsigned dir)
{
    check_thread(b);
    struct ufd *f = ufd_load(io);
    if (!f)
        return;
    b = f->owner;
    f_lock(f);
    unpark(f, dir);
    struct uop *u = f->wr;
    if (dir == FUT__DIR_WRITE && u) {
        f->wr = NULL;
        if (u->done) {
            fut__ur_uop_free(b, u);
        } else {
            u->io = NULL;
            fut__ur_cancel_op(b, u);
        }
    }
    f_unlock(f);
}

/* ------------------------------------------------------ watch (poll) */

#define POLL_MASK (POLLIN | POLLOUT | POLLRDHUP | POLLPRI)

static void arm_poll(struct fut__backend *b, struct fut__io *io,
                     struct uop *u)
{
    struct io_uring_sqe *s = fut__ur_sqe_get(b, u);
    io_uring_prep_poll_multishot(s, io->fd, POLL_MASK);
    fut__ur_sqe_op(b, s, u);
}

/* Under io's lock (the reactor's io_watch). */
static int uring_watch_in(struct fut__backend *b, struct fut__io *io)
{
    check_thread(b);
    struct ufd *f = fut__ur_ufd_get(home_for(b), io);
    if (!f)
        return FUT_ENOMEM;
    b = f->owner;
    f_lock(f);
    int r = 0;
    if (!f->poll) {
        struct uop *u = fut__ur_uop_new(b, io, U_POLL);
        if (u) {
            f->poll = u;
            arm_poll(b, io, u);
        } else {
            r = FUT_ENOMEM;
        }
    }
    f_unlock(f);
    return r;
}

/* Under f's lock, which it releases for the dispatch (the reactor's
 * lock comes before f's) and takes again: 'io' stays, since only this
 * thread frees it (the inbox's FORGET, or forget on a lone ring). */
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
        arm_poll(b, io, u); /* the multishot ended (overflow, error) */
        return;
    }
    if (io && f->poll == u)
        f->poll = NULL;
    fut__ur_retire(b, u);
}

/* The last handle is closing; the fd is closed right after - by the
 * caller (returns 0), or on another thread's ring by its owner once the
 * SQEs naming the fd number went out (returns 1: a later open could reuse
 * the number). */
static int uring_unwatch_in(struct fut__backend *b, struct fut__io *io)
{
    check_thread(b);
    struct ufd *f = ufd_load(io);
    if (!f)
        return 0;
    b = f->owner;
    int mine = ur_mine(b);
    f_lock(f);
    unpark(f, FUT__DIR_READ);
    unpark(f, FUT__DIR_WRITE);
    struct uop *ops[4] = {f->rd, f->ms, f->wr, f->poll};
    int stale = 0;
    for (int i = 0; mine && i < 4; i++) /* b->gen: the owner's */
        if (ops[i] && !ops[i]->done && ops[i]->issued &&
            ops[i]->gen == b->gen)
            stale = 1;
    if (stale) /* SQEs naming this fd number go before its close */
        fut__ur_submit_now(b);
    if (mine) /* ... and its fixed-file slot after them */
        fut__ur_file_release(b, f);
    for (int i = 0; i < 4; i++)
        if (ops[i] && !ops[i]->done && !(ops[i] == f->ms && f->ms->ended))
            fut__ur_cancel_op(b, ops[i]);
    int deferred = 0;
    if (!mine && !io->borrowed) {
        ufd_mt(f)->close_fd = io->fd;
        fut__ur_post(b, &ufd_mt(f)->close_req);
        deferred = 1;
    }
    f_unlock(f);
    return deferred;
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
    uring_unwatch_in(b, io);
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
        err = fut__io_spill(io, ur_buf(b, c->bid) + c->off, c->len - c->off);
        fut__ur_chunk_pop(b, f);
    }
    struct uop *u = f->rd;
    if (!err && u && u->kind == U_RECV && u->done && u->res > 0)
        fut__io_spill(io, u->buf + u->off, u->len - u->off);
    /* A write whose future has not taken its result: its bytes went out
     * (done), or may go or not (still in flight after the wait: the ring's
     * end cancels it, and FUT_ECANCELED says the outcome is unknown).
     * The future's next poll, on any runtime, gets this instead of
     * sending the bytes again. */
    if ((u = f->wr) != NULL) {
        io->wr_kept = u->done ? u->res : FUT_ECANCELED;
        io->wr_kept_set = 1;
    }
    /* A listener's queued connections wait for the next accept, on any
     * runtime (the spill holds them as ints). */
    int fd;
    while ((fd = fut__ur_aq_pop(f)) >= 0)
        if (fut__io_spill_fd(io, fd) < 0)
            fut__sys_close(fd);
}

/* 'io' is being freed (or detached, see detach_drain): detach every op
 * (they retire on their CQEs), close the accepted fds nobody took, hand
 * queued buffers back. */
static void forget_here(struct fut__backend *b, struct fut__io *io,
                        struct ufd *f, int detach)
{
    if (detach)
        detach_drain(b, io, f);
    f_lock(f);
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
    unpark(f, FUT__DIR_READ);
    unpark(f, FUT__DIR_WRITE);
    fut__ur_file_release(b, f); /* if its unwatch did not */
    f->dead = 1;
    int gone = f->nops == 0;
    f_unlock(f);
    /* Release: pairs with ufd_load (nobody polls it now; tidy). */
    fut__store_slot(&io->bstate[0], NULL, FUT__RELEASE);
    if (gone)
        fut__ur_ufd_free(f);
}

/* Returns 1 when the owner frees 'io' (a shared ring: the inbox's
 * FORGET runs after the requests the closer posted), else 0. */
static int uring_forget_in(struct fut__backend *b, struct fut__io *io,
                           int detach)
{
    (void)b;
    struct ufd *f = ufd_load(io);
    if (!f)
        return 0;
    if (f->shared && !detach) {
        ufd_mt(f)->io = io;
        fut__ur_post(f->owner, &ufd_mt(f)->forget_req);
        return 1;
    }
    forget_here(f->owner, io, f, detach);
    return 0;
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
    f_lock(f);
    (*n)++;
    on_op_cqe(b, u, cqe, more, tick);
    int gone = f->dead && f->nops == 0;
    f_unlock(f);
    if (gone)
        fut__ur_ufd_free(f);
}

/* One CQE of op 'u', under its fd's lock. */
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
static void drain(struct fut__backend *b)
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
            f_lock(f);
            inbox_op(b, u);
            int gone = f->dead && f->nops == 0;
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
                struct fut__io *io = ufd_mt(f)->io;
                forget_here(b, io, f, 0);
                fut__io_free(io);
            }
            break;
        }
        r = next;
    }
}

static int uring_wait_in(struct fut__backend *b, int64_t timeout_ns,
                         uint32_t tick, int *woken)
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
            drain(b);
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

/* The ring and everything the kernel may touch go; the struct stays
 * (a retired ring's: futures dropped after its worker exited still look
 * at it - driver.c frees it with the driver). */
static void ring_teardown(struct fut__backend *b)
{
    if (b->dead)
        return;
    b->dead = 1;
    /* Cancel what is in flight and wait for the last CQE: the kernel must
     * be done with every buffer before it goes. Bounded: a second. */
    if (b->enabled || b->inflight) {
        fut__ur_ring_enable(b);
        struct io_uring_sqe *s = fut__ur_sqe_raw(b);
        io_uring_prep_cancel(
            s, NULL, IORING_ASYNC_CANCEL_ANY | IORING_ASYNC_CANCEL_ALL);
        io_uring_sqe_set_data64(s, UD_IGNORE);
        if (b->wake_armed) {
            s = fut__ur_sqe_raw(b);
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
    fut__ur_bufs_free(b);
}

static void uring_destroy(struct fut__backend *b)
{
    fut__ur_count_flush(b);
    ring_teardown(b);
    fut__ur_pools_free(b);
    if (b->shared)
        fut__mutex_destroy(&b->ilock);
    if (b->seen)
        fut__free(b->seen, 2 * sizeof(uintptr_t) * (size_t)b->nset);
    fut__free(b, sizeof *b);
}

/* ------------------------------------------------- rings of a set */

/* A ring of a set, set up again without SINGLE_ISSUER | DEFER_TASKRUN
 * (nothing was issued on it yet): 0; 1 when the kernel refuses the new
 * ring (it keeps the one it had, and the set is not rescuable); or
 * FUT_ENOMEM when its provided buffers and file table cannot be made
 * again (the new ring is kept, without them: the runtime's creation
 * fails and destroys it). */
static int ring_redo(struct fut__backend *b)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    p.flags = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG |
              IORING_SETUP_CQSIZE;
    p.cq_entries = CQ_ENTRIES;
    struct io_uring nr;
    if (io_uring_queue_init_params(SQ_ENTRIES, &nr, &p) < 0)
        return 1;
    io_uring_queue_exit(&b->ring);
    fut__ur_bufs_free(b);
    b->ring = nr;
    b->enabled = 1; /* no R_DISABLED: any thread may enter it */
    return fut__ur_setup_bufs(b) < 0 ? FUT_ENOMEM : 0;
}

int fut__uring_share(struct fut__backend **rings, int n)
{
    /* Rescuable only when every ring of the set is (a peer must be able
     * to enter each one). */
    int rescue = n > 1;
    for (int i = 0; i < n && rescue; i++) {
        rings[i]->seen = fut__alloc(2 * sizeof(uintptr_t) * (size_t)n);
        rings[i]->nset = n; /* the size destroy frees 'seen' with */
        if (!rings[i]->seen)
            return FUT_ENOMEM; /* the caller destroys the rings */
        int r = ring_redo(rings[i]);
        if (r < 0)
            return r;
        if (r > 0)
            rescue = 0;
    }
    for (int i = 0; i < n; i++) {
        struct fut__backend *b = rings[i];
        fut__mutex_init(&b->ilock);
        b->shared = 1;
        b->first = rings[0];
        b->index = i;
        fut__aword_init(&b->parked, 0);
        fut__aword_init(&b->ipending, 0);
        fut__mutex_init(&b->rlock);
        fut__aword_init(&b->turns, 0);
        fut__aword_init(&b->waiting, 0);
        fut__aword_init(&b->wake_rescued, 0);
        b->rescue = rescue;
        b->set = rings;
        b->nset = n;
        if (b->seen)
            memset(b->seen, 0, 2 * sizeof(uintptr_t) * (size_t)n);
    }
    return 0;
}

int fut__uring_ready(struct fut__backend *b)
{
    if (fut__load(&b->ipending, FUT__RELAXED) ||
        (b->rescue && fut__load(&b->wake_rescued, FUT__RELAXED)))
        return 1;
    /* A rescuer may advance the head (under the ring's lock): an atomic
     * read (acquire: pairs with liburing's release store of it). */
    unsigned head = b->rescue ? io_uring_smp_load_acquire(b->ring.cq.khead)
                              : *b->ring.cq.khead;
    unsigned tail = io_uring_smp_load_acquire(b->ring.cq.ktail);
    return tail != head ||
           (IO_URING_READ_ONCE(*b->ring.sq.kflags) & IORING_SQ_TASKRUN);
}

void fut__uring_bind(struct fut__backend *b)
{
    fut__ur_here = b;
}

static void retire_list(struct fut__backend *b, struct fut__io *io,
                        int detach)
{
    for (; io; io = io->next) {
        struct ufd *f = ufd_load(io);
        if (!f || f->owner != b)
            continue;
        forget_here(b, io, f, detach);
        fut__mutex_lock(&io->lock);
        io->watched = 0; /* watched again by whoever waits on it next */
        fut__mutex_unlock(&io->lock);
    }
}

void fut__uring_retire(struct fut__backend *b, struct fut__io *ios,
                       struct fut__io *released)
{
    /* Under the ring's lock: a worker still parked may look at it for a
     * rescue until 'dead' (ring_teardown) tells it not to. */
    if (b->rescue) {
        fut__mutex_lock(&b->rlock);
        fut__ur_held = b;
    }
    drain(b);
    retire_list(b, ios, 1);
    retire_list(b, released, 0);
    ring_teardown(b); /* the struct goes with the driver (destroy) */
    fut__ur_count_flush(b);
    if (b->rescue) {
        fut__ur_held = NULL;
        fut__mutex_unlock(&b->rlock);
    }
    fut__ur_here = NULL;
}

/* ----------------------------------------------------------- rescue */

fut__aword fut__uring_rescues;

#define RESCUE_NS 1000000 /* a peer's ring unserved this long is served */

/* Serves the rings of peers stuck outside their waits (the rules
 * "Rescue"): a look per peer; one whose 'turns' did not move since a
 * look at least RESCUE_NS ago, and that is not in a wait, has its ring's
 * lock tried, then its inbox run, its SQEs sent and its CQEs reaped here
 * (the tasks they wake run on this worker). Returns the fd events
 * delivered. On worker 'b''s thread, holding no ring's lock. */
static int rescue_peers(struct fut__backend *b)
{
    int n = 0;
    int64_t now = 0;
    uintptr_t *seen = b->seen, *since = b->seen + b->nset;
    for (int i = 0; i < b->nset; i++) {
        struct fut__backend *p = b->set[i];
        if (p == b)
            continue;
        /* Relaxed: hints; the lock orders what the rescue touches. */
        if (fut__load(&p->waiting, FUT__RELAXED))
            continue; /* it serves its ring itself */
        uintptr_t t = fut__load(&p->turns, FUT__RELAXED);
        if (!now)
            now = fut_now_ns();
        if (t != seen[i]) { /* it moved: stuck, if at all, from now */
            seen[i] = t;
            since[i] = (uintptr_t)now;
            continue;
        }
        if (now - (int64_t)since[i] < RESCUE_NS ||
            !fut__mutex_trylock(&p->rlock))
            continue;
        since[i] = (uintptr_t)now; /* the next rescue a period later */
        if (!p->dead) {
            int woken = 0;
            fut__ur_held = p;
            n += uring_wait_in(p, 0, 0, &woken);
            /* The owner's wake (an unpark: new work, a shutdown) reaped
             * here is the owner's to see: its next wait returns at once
             * (uring_wait), or it would sleep through it. */
            if (woken)
                fut__store(&p->wake_rescued, 1, FUT__RELAXED);
            fut__ur_held = NULL;
            fut__fetch_add(&fut__uring_rescues, 1, FUT__RELAXED);
        }
        fut__mutex_unlock(&p->rlock);
    }
    return n;
}

/* Whether a peer of 'b' is outside its wait (it may get stuck there). */
static int peer_awake(const struct fut__backend *b)
{
    for (int i = 0; i < b->nset; i++)
        if (b->set[i] != b && !fut__load(&b->set[i]->waiting, FUT__RELAXED))
            return 1;
    return 0;
}

/* The entries: on a rescuable ring each takes its caller's ring lock
 * (ur_enter; backend.c's rules "Rescue"). */
static int uring_op(struct fut__backend *b, struct fut__io *io,
                    const struct fut__op *op, struct fut_context *cx,
                    long *res)
{
    int took = ur_enter();
    int r = uring_op_in(b, io, op, cx, res);
    ur_leave(took);
    return r;
}

static void uring_op_drop(struct fut__backend *b, struct fut__io *io,
                          unsigned dir)
{
    int took = ur_enter();
    uring_op_drop_in(b, io, dir);
    ur_leave(took);
}

static int uring_watch(struct fut__backend *b, struct fut__io *io)
{
    int took = ur_enter();
    int r = uring_watch_in(b, io);
    ur_leave(took);
    return r;
}

static int uring_unwatch(struct fut__backend *b, struct fut__io *io)
{
    int took = ur_enter();
    int r = uring_unwatch_in(b, io);
    ur_leave(took);
    return r;
}

static int uring_forget(struct fut__backend *b, struct fut__io *io,
                        int detach)
{
    int took = ur_enter();
    int r = uring_forget_in(b, io, detach);
    ur_leave(took);
    return r;
}

/* The owner's wait holds its ring's lock throughout (it may block for
 * it: a rescue is short, and nothing here holds a lock a rescuer takes).
 * Before it, a look at the peers: what a rescue woke runs first (no
 * sleep), and while a peer is awake the sleep is at most RESCUE_NS. */
static int uring_wait(struct fut__backend *b, int64_t timeout_ns,
                      uint32_t tick, int *woken)
{
    if (!b->rescue || fut__ur_held == b)
        return uring_wait_in(b, timeout_ns, tick, woken);
    int n = 0;
    if (fut__ur_here == b && !fut__ur_held && !fut__ur_depth && !b->dead) {
        n = rescue_peers(b);
        if (n > 0)
            timeout_ns = 0;
        else if (timeout_ns != 0 &&
                 (timeout_ns < 0 || timeout_ns > RESCUE_NS) && peer_awake(b))
            timeout_ns = RESCUE_NS;
    }
    struct fut__backend *prev = fut__ur_held;
    fut__mutex_lock(&b->rlock);
    fut__ur_held = b;
    /* Relaxed: hints for the rescuers' looks (the lock orders the rest). */
    fut__store(&b->waiting, 1, FUT__RELAXED);
    fut__store(&b->turns, fut__load(&b->turns, FUT__RELAXED) + 1,
               FUT__RELAXED);
    if (fut__load(&b->wake_rescued, FUT__RELAXED)) {
        /* A rescuer reaped our wake while we were out (rescue_peers). */
        fut__store(&b->wake_rescued, 0, FUT__RELAXED);
        *woken = 1;
        timeout_ns = 0;
    }
    n += uring_wait_in(b, timeout_ns, tick, woken);
    fut__store(&b->waiting, 0, FUT__RELAXED);
    fut__ur_held = prev;
    fut__mutex_unlock(&b->rlock);
    return n;
}

const struct fut__backend_vt fut__backend_uring = {
    .name = "io_uring",
    .create = uring_create,
    .destroy = uring_destroy,
    .op = uring_op,
    .op_drop = uring_op_drop,
    .watch = uring_watch,
    .unwatch = uring_unwatch,
    .unwatch_by_number = 0,
    .forget = uring_forget,
    .wait = uring_wait,
};
