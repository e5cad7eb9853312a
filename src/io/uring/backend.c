/* SPDX-License-Identifier: MIT */
/* The io_uring backend (backend.h): operations as submissions, results as
 * completions, through liburing.
 *
 * The ring: one per driver, set up IORING_SETUP_SINGLE_ISSUER |
 * DEFER_TASKRUN | TASKRUN_FLAG | R_DISABLED (COOP_TASKRUN | TASKRUN_FLAG
 * where the kernel has no DEFER_TASKRUN), enabled by the first thread that
 * submits or waits; its fd is registered (no fget per io_uring_enter).
 * The rings of a multi-thread runtime are set up again with COOP_TASKRUN |
 * TASKRUN_FLAG (fut__uring_share; rescue.c's rules "Rescue").
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
 * These three live in stream.c. This file has the table's entries, the
 * watch (POLL_ADD), close and forget, and the ring's life; wait.c the
 * wait (submit, reap, the CQE dispatch) and the inbox; rescue.c the rings
 * of a multi-thread runtime's set and their rescue; ring.c, probe.c the
 * plumbing (internal.h lists them).
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
 *     fd's state under the fd's lock - the reactor's io->lock, one record
 *     per fd (internal.h's rules "One record") - and asks the owner for
 *     what only the owner may do through the ring's inbox: issue an op (its
 *     SQE prepared in the op), cancel one, hand a provided buffer back,
 *     close the fd (after the SQEs naming it went out), free the fd's
 *     state. Requests run in order, at the owner's next wait, which a post
 *     wakes when it sleeps (kick);
 *   - completions run on the owner under the fd's lock; the wakers they
 *     take from io's slots are woken after it is released, as the
 *     reactor's are, and so is a readiness dispatch (which takes the
 *     lock itself); a completion for an fd whose io was freed (f->dead)
 *     takes no lock at all;
 *   - an fd's state lives while an op points to it (nops) and its io
 *     until the inbox's FORGET: the last closer's requests come before
 *     it; from FORGET on, f->dead tells the ring's holder not to touch
 *     the io;
 *   - the worker retires its ring at shutdown, once every worker stopped
 *     polling (rt/multi/shutdown.c): the fds' state is detached, bytes
 *     nobody read kept in their spill, the ring cancelled and freed.
 *
 * On a multi-thread runtime's rings "the owner" means whoever holds the
 * ring's lock: a worker stuck in one long poll must not hold its ring's
 * fds (rescue.c's rules "Rescue").
 * The current-thread runtime's ring has no lock and no rescue.
 */
#include <errno.h>
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
    fut__mutex_lock(&io->lock); /* f's lock too (internal.h) */
    struct uop *u = f->poll;
    if (u) {
        f->poll = NULL;
        u->io = NULL;
        fut__ur_cancel_op(b, u);
    }
    io->watched = 0;
    fut__mutex_unlock(&io->lock);
}

/* The future of the op in 'dir' was dropped while PENDING (its waker
 * fut__io_unwait took from io's slot already). Reads and accepts stay in
 * flight for the next one (adopted); a write is cancelled, its op
 * orphaned (retired on its CQE). */
static void uring_op_drop_in(struct fut__backend *b, struct fut__io *io,
                             unsigned dir)
{
    check_thread(b);
    struct ufd *f = ufd_load(io);
    if (!f)
        return;
    b = f->owner;
    f_lock(f);
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

/* Under io's lock (the reactor's io_watch), which is f's: not taken
 * again (internal.h's rules "One record"). */
static int uring_watch_in(struct fut__backend *b, struct fut__io *io)
{
    check_thread(b);
    struct ufd *f = fut__ur_ufd_get(home_for(b), io);
    if (!f)
        return FUT_ENOMEM;
    b = f->owner;
    int r = 0;
    if (!f->poll) {
        struct uop *u = fut__ur_uop_new(b, io, U_POLL);
        if (u) {
            f->poll = u;
            fut__ur_arm_poll(b, io, u);
        } else {
            r = FUT_ENOMEM;
        }
    }
    return r;
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
    /* Empty when the last handle went (io_release took them); a
     * retiring ring's detach (detach_drain) drops the native waiters'
     * here. Dropped after the unlock. */
    struct fut_waker r = fut__io_slot_take(io, FUT__DIR_READ);
    struct fut_waker w = fut__io_slot_take(io, FUT__DIR_WRITE);
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
    fut_waker_drop(&r);
    fut_waker_drop(&w);
    return deferred;
}

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
        fut__ur_wait(b, 10000000, 0, &woken);
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

/* 'io' is being freed (or detached, see detach_drain): its state goes
 * (fut__ur_forget). */
static void forget_here(struct fut__backend *b, struct fut__io *io,
                        struct ufd *f, int detach)
{
    if (detach)
        detach_drain(b, io, f);
    fut__ur_forget(b, io, f);
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
    if (f->shared && !detach) { /* f->io is io: the owner frees it */
        fut__ur_post(f->owner, &ufd_mt(f)->forget_req);
        return 1;
    }
    forget_here(f->owner, io, f, detach);
    return 0;
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
            fut__ur_wait(b, 10000000, 0, &woken);
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
    fut__ur_drain(b);
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

/* The entries: on a rescuable ring each takes its caller's ring lock
 * (ur_enter; rescue.c's rules "Rescue"). The wait is rescue.c's. */
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
    .wait = fut__ur_wait,
};
