/* SPDX-License-Identifier: MIT */
/* The reactor: per-fd readiness, the reader's and writer's waker slots,
 * registration with the driver, and the common "try the syscall, wait if
 * it would block" step of every socket future.
 *
 * Rules of an fd's readiness word ('readiness', see io_internal.h):
 *   - the driver sets ready bits together with its current tick, in one
 *     CAS, for every event (edge-triggered: an event means "something
 *     changed", so bits are only ever added by events);
 *   - a poller that got EAGAIN clears READ or WRITE only if the tick is
 *     still the one it observed before its syscall: an event that landed
 *     between that observation and the EAGAIN carries a newer tick and
 *     survives the clear (the ABA guard);
 *   - a poller that finds no readiness registers its waker under the fd's
 *     lock and re-reads the word before unlocking; the driver stores the
 *     word before taking the same lock to collect wakers. So either the
 *     driver sees the waker, or the poller's re-read sees the event: no
 *     readiness event is lost between a poll's EAGAIN and its waker
 *     registration (C5 for I/O);
 *   - RCLOSED, WCLOSED and ERROR are never cleared: once the peer is gone
 *     every later syscall reports it at once;
 *   - an fd starts with READ|WRITE and tick 0 ("try first"): its first
 *     syscall goes straight to the kernel, and registration (one
 *     epoll_ctl per fd, both directions) happens the first time it would
 *     block;
 *   - a task's waker stays in the slot between events ('kept'): the
 *     dispatcher wakes a clone of it and leaves it parked, and the
 *     task's next wait in that direction, finding no readiness and its
 *     own task in 'kept', returns PENDING without the lock. No event is
 *     lost: the waker was parked under the lock (L) before that wait's
 *     look at the word, and stays until the task itself removes it (its
 *     future's drop) or a thread that then wakes it does (cancel). A
 *     dispatcher whose lock comes after L sees it; one whose lock came
 *     before L stored its bits before L, so the look sees them (or a
 *     later clear, which the ABA guard allows only to a poller whose
 *     syscall came after that event). Every write of a slot updates its
 *     'kept' under the lock; 'kept' names only tasks (fut__task_waker_vt),
 *     whose waker is their pointer;
 *   - the dispatcher wakes a direction only when its event sets a bit
 *     that was clear: a set bit means no waiter can have missed it (the
 *     poller that cleared it last saw it, the rule above), and a kept
 *     writer's waker is not woken by every read event (edge-triggered
 *     epoll reports EPOLLOUT with each one);
 *   - 'drv' is written once, under the fd's lock, by the registering
 *     poller; the waker slots are read and written only under that lock
 *     (a one-thread io_uring ring's parks and CQEs, on its one thread,
 *     without it);
 *   - a completion backend (io_uring) has no record of its own: its
 *     native ops park their wakers in these slots with 'kept' 0
 *     (fut__io_slot_park), and its completions take them
 *     (fut__io_slot_take) and wake them after the lock, so the kept
 *     rules above apply to readiness waits only. A dispatch that finds
 *     a native op's waker takes and wakes it (the op polls again); a
 *     completion that finds a kept waker takes it and clears 'kept' (the
 *     task's next readiness wait registers again). The backend's own
 *     rules are in src/io/uring/internal.h ("One record");
 *   - a foreign fd (fd.c) is deregistered by fut__io_cancel: 'gone' set
 *     and both wakers taken under the fd's lock, then woken. A poller
 *     checks 'gone' under the same lock before it parks a waker, so no
 *     waker is parked after the deregistration took them (its next wait
 *     returns FUT_ECANCELED instead of sleeping forever).
 *
 * Lock order: an fd's lock, then the driver's. Never the reverse.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io_internal.h"
#include "platform/sys.h"

#define TICK_MASK (~(uintptr_t)0 << FUT__IO_TICK_SHIFT)
#define READ_MASK FUT__IO_READ_MASK
#define WRITE_MASK FUT__IO_WRITE_MASK

static unsigned dir_mask(unsigned dir)
{
    return dir == FUT__DIR_READ ? READ_MASK : WRITE_MASK;
}

/* Parks 'w' in the slot of 'dir' (under io->lock): kept between events
 * when it is a task's (see the rules). */
static void slot_set(struct fut__io *io, unsigned dir,
                     const struct fut_waker *w)
{
    fut_waker_set(fut__io_slot(io, dir), w);
    fut__store(&io->kept[dir - 1],
               w->vt == &fut__task_waker_vt ? (uintptr_t)w->data : 0,
               FUT__RELAXED);
}

int fut__io_new(int fd, int kind, unsigned ready, struct fut_io **out)
{
    struct fut__io *io = fut__alloc(sizeof *io);
    if (!io)
        return FUT_ENOMEM;
    memset(io, 0, sizeof *io);
    fut__mutex_init(&io->lock);
    fut__aword_init(&io->refs, 1);
    fut__aword_init(&io->gone, 0);
    fut__aword_init(&io->waiter[0], 0);
    fut__aword_init(&io->waiter[1], 0);
    fut__aword_init(&io->kept[0], 0);
    fut__aword_init(&io->kept[1], 0);
    io->fd = fd;
    io->kind = kind;
    io->restore_fl = -1;
    io->h.core = io;
    io->h.dir = FUT__DIR_READ | FUT__DIR_WRITE;
    io->hr.core = io;
    io->hr.dir = FUT__DIR_READ;
    io->hw.core = io;
    io->hw.dir = FUT__DIR_WRITE;
    /* Release, last: the driver's first look at this fd follows an epoll
     * event, a hand-off through the kernel that the memory model (and
     * ThreadSanitizer) does not see. Every later write of 'readiness' is
     * an RMW or another release store, so the dispatcher's acquire load
     * reads from a release sequence this store starts or that comes after
     * it: the fields above happen before the dispatch. */
    fut__store(&io->readiness, ready, FUT__RELEASE);
    *out = &io->h;
    return 0;
}

/* Puts 'io' on d's list of registered fds (under io->lock). */
static void io_link(struct fut__io *io, struct fut__iodrv *d)
{
    fut__mutex_lock(&d->lock);
    io->prev = NULL;
    io->next = d->ios;
    if (d->ios)
        d->ios->prev = io;
    d->ios = io;
    int drive = fut__iodrv_claim_interest(d);
    fut__mutex_unlock(&d->lock);
    io->drv = d;
    if (drive)
        fut__iodrv_interest(d); /* takes no fd lock: fine under ours */
}

/* Asks the backend to watch 'io' for readiness (under io->lock). */
static int io_watch(struct fut__io *io, struct fut__iodrv *d)
{
    int r = d->bvt->watch(d->be, io);
    if (r == 0)
        io->watched = 1;
    return r;
}

/* Registers 'io' with the driver of this thread (under io->lock). */
static int io_register(struct fut__io *io)
{
    struct fut__iodrv *d = fut__iodrv_current();
    if (!d) /* a simulation's backend refuses real fds (backend_sim.c) */
        return FUT_EINVAL;
    int r = io_watch(io, d);
    if (r < 0)
        return r;
    io_link(io, d);
    return 0;
}

int fut__io_register_here(struct fut__io *io)
{
    fut__mutex_lock(&io->lock);
    int r = io_register(io);
    fut__mutex_unlock(&io->lock);
    return r;
}

int fut__io_attach(struct fut__io *io)
{
    struct fut__iodrv *d = fut__iodrv_current();
    if (!d || d->sim) /* a simulation has no real I/O (fut/sim.h) */
        return FUT_EINVAL;
    int r = 0;
    fut__mutex_lock(&io->lock);
    if (!io->drv)
        io_link(io, d);
    else if (io->drv != d)
        r = FUT_EINVAL;
    fut__mutex_unlock(&io->lock);
    return r;
}

/* fut__io_ready_slow's rarer cases (under io->lock): the fd's first wait
 * registers it with this thread's driver (or, attached by a completion
 * backend's op, asks the backend to watch it); another runtime's fd is
 * FUT_EINVAL. Out of line: the wait of a registered fd, once per wait on
 * every connection, saves the registers these need. */
static __attribute__((noinline)) int io_first_wait(struct fut__io *io)
{
    if (!io->drv) {
        int r = io_register(io);
        if (r < 0) {
            /* Nobody will report readiness: assume it again, so that a
             * later attempt (on a runtime, or when data is there) tries
             * the syscall first. */
            fut__fetch_or(&io->readiness, FUT__RD_READ | FUT__RD_WRITE,
                          FUT__RELAXED);
        }
        return r;
    }
    if (io->drv != fut__iodrv_current())
        return FUT_EINVAL;
    if (!io->watched) /* attached by a completion backend's op */
        return io_watch(io, io->drv);
    return 0;
}

/* fut__io_ready (io_internal.h) found no readiness: register the
 * waker, then look again under the fd's lock (see the rules). */
int fut__io_ready_slow(struct fut__io *io, unsigned dir,
                       struct fut_context *cx, uint32_t *tick)
{
    unsigned mask = dir_mask(dir);
    uintptr_t w;
    if (FUT_UNLIKELY(fut__load(&fut__sys_armed, FUT__RELAXED)))
        fut__sys_after(FUT__SYS_PREWAIT, io->fd, 0); /* tests only */
    fut__mutex_lock(&io->lock);
    if (FUT_UNLIKELY(fut__load(&io->gone, FUT__RELAXED))) {
        /* Deregistered (a foreign fd): its wakers were taken, so parking
         * one now would never be woken. */
        fut__mutex_unlock(&io->lock);
        return FUT_ECANCELED;
    }
    struct fut__iodrv *d = io->drv;
    if (FUT_UNLIKELY(!d || d != fut__iodrv_current() || !io->watched)) {
        int r = io_first_wait(io);
        if (r < 0) {
            fut__mutex_unlock(&io->lock);
            return r;
        }
    }
    slot_set(io, dir, &cx->waker);
    /* Re-read under the lock (see the rules): an event stored before the
     * dispatcher took the lock is visible now. */
    w = fut__load(&io->readiness, FUT__ACQUIRE);
    fut__mutex_unlock(&io->lock);
    if (w & mask) {
        *tick = (uint32_t)(w >> FUT__IO_TICK_SHIFT);
        return (int)(w & mask);
    }
    return 0;
}

void fut__io_clear(struct fut__io *io, unsigned bits, uint32_t tick)
{
    bits &= FUT__RD_READ | FUT__RD_WRITE;
    uintptr_t cur = fut__load(&io->readiness, FUT__RELAXED);
    for (;;) {
        if ((uint32_t)(cur >> FUT__IO_TICK_SHIFT) != tick || !(cur & bits))
            return;
        /* Relaxed: the CAS fails if an event (newer tick) came first in
         * the word's modification order, and we then re-check the tick. */
        if (fut__cas(&io->readiness, &cur, cur & ~(uintptr_t)bits,
                     FUT__RELAXED, FUT__RELAXED))
            return;
    }
}

void fut__io_unwait(struct fut__io *io, unsigned dir)
{
    fut__mutex_lock(&io->lock);
    struct fut_waker w = fut__io_slot_take(io, dir);
    if (dir == FUT__DIR_WRITE)
        io->wr_kept_set = 0; /* its writer is gone: no one to tell */
    struct fut__iodrv *d = io->drv;
    fut__mutex_unlock(&io->lock);
    fut_waker_drop(&w);
    if (d && d->bvt->op_drop)
        d->bvt->op_drop(d->be, io, dir);
}

void fut__io_dispatch(struct fut__io *io, unsigned ready, uint32_t tick)
{
    /* Acquire: pairs with fut__io_new's release store (see there). */
    uintptr_t cur = fut__load(&io->readiness, FUT__ACQUIRE), nw;
    do {
        nw = (cur & ~TICK_MASK) | ready |
             ((uintptr_t)tick << FUT__IO_TICK_SHIFT);
        /* Release: pairs with fut__io_ready's acquire loads. */
    } while (!fut__cas(&io->readiness, &cur, nw, FUT__RELEASE, FUT__RELAXED));
    /* Only the directions this event made ready (see the rules). */
    ready &= ~(unsigned)cur;
    if (!(ready & (READ_MASK | WRITE_MASK)))
        return;
    struct fut_waker r = FUT_WAKER_NONE, w = FUT_WAKER_NONE;
    fut__mutex_lock(&io->lock);
    if (ready & READ_MASK)
        r = fut__load(&io->kept[0], FUT__RELAXED)
                ? fut_waker_clone(&io->rd)
                : fut__io_slot_take(io, FUT__DIR_READ);
    if (ready & WRITE_MASK)
        w = fut__load(&io->kept[1], FUT__RELAXED)
                ? fut_waker_clone(&io->wr)
                : fut__io_slot_take(io, FUT__DIR_WRITE);
    fut__mutex_unlock(&io->lock);
    if (fut_waker_is_set(&r))
        fut_waker_wake(&r);
    if (fut_waker_is_set(&w))
        fut_waker_wake(&w);
}

void fut__io_free(struct fut__io *io)
{
    if (io->spill && io->kind == FUT__IO_LISTEN) {
        int fd;
        while (fut__io_unspill(io, &fd, sizeof fd, 0) == sizeof fd)
            fut__sys_close(fd); /* connections nobody accepted */
    }
    if (io->spill)
        fut__free(io->spill, io->spill_len);
    fut__mutex_destroy(&io->lock);
    fut__free(io, sizeof *io);
}

void fut__io_reap(struct fut__iodrv *d, struct fut__io *list)
{
    while (list) {
        struct fut__io *next = list->next;
        if (!d->bvt->forget || !d->bvt->forget(d->be, list, 0))
            fut__io_free(list);
        list = next;
    }
}

/* Takes both wakers out of 'io' (under its lock). */
static void take_wakers(struct fut__io *io, struct fut_waker *r,
                        struct fut_waker *w)
{
    *r = fut__io_slot_take(io, FUT__DIR_READ);
    *w = fut__io_slot_take(io, FUT__DIR_WRITE);
}

void fut__io_detach_all(struct fut__iodrv *d)
{
    fut__mutex_lock(&d->lock);
    struct fut__io *io = d->ios;
    d->ios = NULL;
    fut__mutex_unlock(&d->lock);
    while (io) {
        struct fut__io *next = io->next;
        struct fut_waker r, w;
        fut__mutex_lock(&io->lock);
        io->drv = NULL;
        io->watched = 0;
        io->prev = io->next = NULL;
        take_wakers(io, &r, &w);
        /* Try first again, on whichever runtime waits on it next. */
        fut__store(&io->readiness, FUT__RD_READ | FUT__RD_WRITE,
                   FUT__RELEASE); /* heads a new release sequence */
        fut__mutex_unlock(&io->lock);
        if (d->bvt->forget) /* it outlives this driver's backend */
            d->bvt->forget(d->be, io, 1);
        fut_waker_drop(&r);
        fut_waker_drop(&w);
        io = next;
    }
}

/* The last handle is gone: unregister, close, free (deferred while the
 * driver may still hold an event for it). */
static void io_release(struct fut__io *io)
{
    struct fut_waker r, w;
    fut__mutex_lock(&io->lock);
    struct fut__iodrv *d = io->drv;
    io->drv = NULL;
    take_wakers(io, &r, &w);
    /* A cancelled foreign fd was unwatched already (fut__io_cancel). */
    int unwatched = fut__load(&io->gone, FUT__RELAXED) != 0;
    fut__mutex_unlock(&io->lock);
    /* Unregister explicitly: a forked child may keep the open file
     * description (and so its epoll registration) alive. */
    int closes = 0; /* the backend closes it (another thread's ring) */
    if (d && d->bvt->unwatch && !unwatched)
        closes = d->bvt->unwatch(d->be, io);
    if (io->restore_fl >= 0)
        fut__sys_fcntl_fl(io->fd, io->restore_fl);
    if (!io->borrowed && !closes)
        fut__sys_close(io->fd);
    if (d) {
        /* Last touch of 'io': once on the release list, the next park (on
         * any worker) may free it. */
        fut__mutex_lock(&d->lock);
        if (io->prev)
            io->prev->next = io->next;
        else
            d->ios = io->next;
        if (io->next)
            io->next->prev = io->prev;
        io->prev = NULL;
        io->next = d->release;
        d->release = io;
        fut__mutex_unlock(&d->lock);
    }
    fut_waker_drop(&r);
    fut_waker_drop(&w);
    if (!d)
        fut__io_free(io);
}

void fut__io_unref(struct fut__io *io)
{
    /* Acq_rel: the other holders' last uses happen before the free. */
    if (fut__fetch_sub(&io->refs, 1, FUT__ACQ_REL) == 1)
        io_release(io);
}

void fut__io_cancel(struct fut__io *io, int unwatch)
{
    struct fut_waker r, w;
    fut__mutex_lock(&io->lock);
    /* Release, under the lock: a waiter's unlocked check (fd.c) that
     * sees it also sees what came before; one that does not see it
     * checks again under the lock (fut__io_ready), after we left. */
    fut__store(&io->gone, 1, FUT__RELEASE);
    struct fut__iodrv *d = io->drv;
    take_wakers(io, &r, &w);
    fut__mutex_unlock(&io->lock);
    if (d && d->bvt->unwatch && (unwatch || !d->bvt->unwatch_by_number))
        d->bvt->unwatch(d->be, io); /* borrowed: never closes the fd */
    if (fut_waker_is_set(&r))
        fut_waker_wake(&r);
    if (fut_waker_is_set(&w))
        fut_waker_wake(&w);
}

/* ----------------------------------------------------------- handles */

int fut_io_fd(const struct fut_io *io)
{
    FUT_ARG_CHECK(io, "'io' is NULL");
    return io->core->fd;
}

void fut_io_close(struct fut_io *h)
{
    if (!h)
        return; /* like free(NULL) */
    struct fut__io *io = h->core;
    if (h == &io->hw && io->kind == FUT__IO_STREAM)
        fut__sys_shutdown(io->fd, SHUT_WR);
    fut__io_unref(io);
}

int fut_io_split(struct fut_io *h, struct fut_io **rd, struct fut_io **wr)
{
    FUT_ARG_CHECK(rd, "'rd' is NULL");
    FUT_ARG_CHECK(wr, "'wr' is NULL");
    FUT_ARG_CHECK(h, "'io' is NULL");
    struct fut__io *io = h->core;
    if (h != &io->h)
        return FUT_EINVAL;
    fut__fetch_add(&io->refs, 1, FUT__RELAXED); /* the caller holds one */
    *rd = &io->hr;
    *wr = &io->hw;
    return 0;
}

int fut_io_shutdown(struct fut_io *h, int how)
{
    FUT_ARG_CHECK(h, "'io' is NULL");
    return fut__sys_shutdown(h->core->fd, how);
}

/* What kind of fd 'fd' is (sockets get send(MSG_NOSIGNAL) and the
 * short-transfer rule, pipes the rule). */
static int kind_of(int fd)
{
    struct stat st;
    if (fut__sys_fstat(fd, &st) < 0)
        return FUT__IO_OTHER;
    if (S_ISFIFO(st.st_mode))
        return FUT__IO_PIPE;
    if (!S_ISSOCK(st.st_mode))
        return FUT__IO_OTHER;
    int type = 0, acc = 0;
    socklen_t len = sizeof type;
    fut__sys_getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len);
    len = sizeof acc;
    fut__sys_getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &len);
    if (acc)
        return FUT__IO_LISTEN;
    return type == SOCK_STREAM ? FUT__IO_STREAM : FUT__IO_DGRAM;
}

int fut_io_from_fd(int fd, struct fut_io **out)
{
    FUT_ARG_CHECK(out, "'out' is NULL");
    int fl = fut__sys_fcntl_fl(fd, -1);
    if (fl < 0)
        return fl;
    struct fut_io *h;
    int r = fut__io_new(fd, kind_of(fd), FUT__RD_READ | FUT__RD_WRITE, &h);
    if (r < 0)
        return r;
    if (!(fl & O_NONBLOCK)) {
        r = fut__sys_fcntl_fl(fd, fl | O_NONBLOCK);
        if (r < 0) {
            fut__io_free(h->core);
            return r;
        }
    }
    *out = h;
    return 0;
}

/* ------------------------------------------------------------- spill */

int fut__io_spill_fd(struct fut__io *io, int fd)
{
    return fut__io_spill(io, (const char *)&fd, sizeof fd);
}

int fut__io_spill(struct fut__io *io, const char *p, size_t n)
{
    size_t have = io->spill ? io->spill_len - io->spill_off : 0;
    char *nb = fut__alloc(have + n);
    if (!nb)
        return FUT_ENOMEM;
    if (have)
        memcpy(nb, io->spill + io->spill_off, have);
    memcpy(nb + have, p, n);
    if (io->spill)
        fut__free(io->spill, io->spill_len);
    io->spill = nb;
    io->spill_len = have + n;
    io->spill_off = 0;
    return 0;
}

size_t fut__io_unspill(struct fut__io *io, void *buf, size_t len, int peek)
{
    size_t n = io->spill_len - io->spill_off;
    if (n > len)
        n = len;
    memcpy(buf, io->spill + io->spill_off, n);
    if (peek)
        return n;
    io->spill_off += n;
    if (io->spill_off == io->spill_len) {
        fut__free(io->spill, io->spill_len);
        io->spill = NULL;
        io->spill_len = io->spill_off = 0;
    }
    return n;
}

/* What a completion backend left when it let the fd go (detach): the
 * result of a write in flight, for the next write; the spilled bytes, for
 * the reads that take bytes from a stream. */
int fut__io_take_spill(struct fut__io *io, const struct fut__op *op,
                       long *res)
{
    int fd;
    if (io->wr_kept_set && fut__op_dir(op) == FUT__DIR_WRITE) {
        *res = io->wr_kept; /* the write went out before the detach */
        io->wr_kept_set = 0;
        return 1;
    }
    if (op->kind == FUT__OP_ACCEPT && io->kind == FUT__IO_LISTEN &&
        fut__io_unspill(io, &fd, sizeof fd, 0) == sizeof fd) {
        *res = fd;
        if (op->addr) {
            *op->alen = sizeof(struct sockaddr_storage);
            if (getpeername(fd, op->addr, op->alen) < 0)
                *op->alen = 0;
        }
        return 1;
    }
    if (!io->spill || (op->kind != FUT__OP_READ && op->kind != FUT__OP_RECV))
        return 0;
    *res = (long)fut__io_unspill(io, op->buf, op->len,
                                 (op->flags & MSG_PEEK) != 0);
    return 1;
}

/* ------------------------------------------------------- the I/O step */

int fut__io_do(struct fut__backend *b, struct fut__io *io,
               const struct fut__op *op, struct fut_context *cx, long *res)
{
    (void)b;
    return fut__io_step(io, op, cx, res, fut__io_syscall);
}

int fut__io_do_with(struct fut__io *io, const struct fut__op *op,
                    struct fut_context *cx, long *res, fut__io_call_fn call)
{
    return fut__io_step(io, op, cx, res, call);
}
