/* SPDX-License-Identifier: MIT */
/* Foreign fds (include/fut/fd.h): readiness of an fd the user owns, on
 * the reactor's record (struct fut__io of kind FUT__IO_FOREIGN, borrowed:
 * never closed, its flags never touched). A handle is the fut__io itself.
 *
 * Rules:
 *   - 'refs' counts the user's handle (until fut_fd_deregister) and each
 *     fut_fd_ready future from its init until it is READY or dropped, so
 *     a future woken by the deregistration reads live memory; the last
 *     reference releases the record (reactor.c);
 *   - deregistration (fut__io_cancel) sets 'gone' under the fd's lock and
 *     takes the wakers; a future checks 'gone' first, and fut__io_ready
 *     checks it again under the lock before it parks a waker: a waiter is
 *     either woken by the deregistration or sees 'gone' (no lost wakeup);
 *   - 'waiter[i]' names the one future that may wait in direction i: a
 *     future claims it (CAS from NULL) at its first poll and gives it back
 *     when READY or dropped; a second claimant is a programming error;
 *   - the future never clears readiness: only fut_fd_clear_ready does,
 *     with the tick the wait reported (the reactor's ABA guard).
 */
#include <errno.h>
#include <poll.h>
#include <sys/stat.h>

#include "fut/fd.h"
#include "io/io_internal.h"
#include "platform/sys.h"

_Static_assert(FUT_FD_READABLE == FUT__RD_READ &&
                   FUT_FD_WRITABLE == FUT__RD_WRITE &&
                   FUT_FD_RDHUP == FUT__RD_RCLOSED &&
                   FUT_FD_HUP == FUT__RD_WCLOSED &&
                   FUT_FD_ERROR == FUT__RD_ERROR,
               "fd.h's bits are the reactor's");

#define BOTH (FUT_FD_READABLE | FUT_FD_WRITABLE)
/* 'waiting' of a future: a waker parked in direction i (bit i), the
 * direction claimed (bit i + 2). */
#define PARKED(i) (1u << (i))
#define CLAIMED(i) (4u << (i))

static struct fut__io *core_of(const struct fut_fd *h)
{
    return (struct fut__io *)(void *)(uintptr_t)h;
}

/* The interest bit and reactor direction of slot i. */
static unsigned bit_of(int i)
{
    return i == 0 ? FUT_FD_READABLE : FUT_FD_WRITABLE;
}

static unsigned dir_of(int i)
{
    return i == 0 ? FUT__DIR_READ : FUT__DIR_WRITE;
}

static int is_gone(struct fut__io *io)
{
    /* Acquire: pairs with fut__io_cancel's release store. */
    return fut__load(&io->gone, FUT__ACQUIRE) != 0;
}

#ifdef FUT_DEBUG
/* Whether 'fd' is registered with 'd' already by fut_fd_register (debug
 * builds: a scan). A fut_io of that number is not looked for: its close
 * closes the number before it leaves the list, so a number reused in
 * between would be a false alarm (epoll's -EEXIST still reports one that
 * is really registered). */
static int registered(struct fut__iodrv *d, int fd)
{
    int found = 0;
    fut__mutex_lock(&d->lock);
    for (struct fut__io *io = d->ios; io && !found; io = io->next)
        found = io->kind == FUT__IO_FOREIGN && io->fd == fd && !is_gone(io);
    fut__mutex_unlock(&d->lock);
    return found;
}
#else
#define registered(d, fd) 0
#endif

int fut_fd_register(int fd, struct fut_fd **out)
{
    FUT_ARG_CHECK(out, "'out' is NULL");
    /* -EBADF: not an open fd. A regular file or a directory is always
     * ready: epoll refuses it, and io_uring's poll would complete at
     * once forever - refused on both. */
    struct stat st;
    int r = fut__sys_fstat(fd, &st);
    if (r < 0)
        return r;
    if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))
        return -EPERM;
    struct fut__iodrv *d = fut__iodrv_current();
    if (!d)
        return FUT_EINVAL;
    if (registered(d, fd)) {
        FUT_MISUSE("the fd is registered already (fut_fd_deregister it "
                   "first)");
        return -EEXIST;
    }
    struct fut_io *h;
    r = fut__io_new(fd, FUT__IO_FOREIGN, 0, &h);
    if (r < 0)
        return r;
    struct fut__io *io = h->core;
    io->borrowed = 1;
    io->fdev = (uint64_t)st.st_dev;
    io->fino = (uint64_t)st.st_ino;
    r = fut__io_register_here(io);
    if (r < 0) {
        fut__io_free(io); /* never linked: nothing else knows it */
        return r;
    }
    *out = (struct fut_fd *)(void *)io;
    return 0;
}

int fut_fd_fileno(const struct fut_fd *h)
{
    FUT_ARG_CHECK(h, "'h' is NULL");
    return core_of(h)->fd;
}

void fut_fd_clear_ready(struct fut_fd *h, unsigned bits, uint32_t tick)
{
    FUT_ARG_VOID(h, "'h' is NULL");
    struct fut__io *io = core_of(h);
    if (is_gone(io)) {
        FUT_MISUSE("the handle was deregistered (fut_fd_deregister)");
        return;
    }
    fut__io_clear(io, bits & BOTH, tick);
}

int fut_fd_clear_if_blocked(struct fut_fd *h, unsigned bits, uint32_t tick)
{
    FUT_ARG_CHECK(h, "'h' is NULL");
    struct fut__io *io = core_of(h);
    if (is_gone(io)) {
        FUT_MISUSE("the handle was deregistered (fut_fd_deregister)");
        return FUT_EINVAL;
    }
    bits &= BOTH;
    struct pollfd p = {io->fd, 0, 0};
    if (bits & FUT_FD_READABLE)
        p.events |= POLLIN;
    if (bits & FUT_FD_WRITABLE)
        p.events |= POLLOUT;
    if (!bits)
        return 0;
    int r;
    while ((r = poll(&p, 1, 0)) < 0 && errno == EINTR)
        ;
    if (r < 0)
        return -errno; /* nothing cleared: the caller's next turn sees */
    /* A hang-up or an error is ready for both directions (a read or a
     * write returns at once). */
    short now = p.revents & (POLLHUP | POLLERR) ? (short)(POLLIN | POLLOUT)
                                                : p.revents;
    unsigned clear = 0;
    if ((bits & FUT_FD_READABLE) && !(now & POLLIN))
        clear |= FUT_FD_READABLE;
    if ((bits & FUT_FD_WRITABLE) && !(now & POLLOUT))
        clear |= FUT_FD_WRITABLE;
    if (clear)
        fut__io_clear(io, clear, tick);
    return (int)clear;
}

/* Whether 'io's fd number still names the file registered (fstat). */
static int same_file(const struct fut__io *io)
{
    struct stat st;
    return fut__sys_fstat(io->fd, &st) == 0 &&
           (uint64_t)st.st_dev == io->fdev && (uint64_t)st.st_ino == io->fino;
}

void fut_fd_deregister(struct fut_fd *h)
{
    if (!h)
        return; /* like free(NULL) */
    struct fut__io *io = core_of(h);
    if (is_gone(io)) {
        FUT_MISUSE("the handle was deregistered already");
        return;
    }
    /* Closed before the deregistration (the number maybe reused): the
     * kernel dropped its epoll watch with the file, and an EPOLL_CTL_DEL
     * by number could remove another fd's - only io_uring's poll, which
     * holds the file, is cancelled; the waiters are woken. */
    int same = same_file(io);
    if (!same)
        FUT_MISUSE("the fd was closed before fut_fd_deregister (close it "
                   "after)");
    fut__io_cancel(io, same);
    fut__io_unref(io); /* the user's reference */
}

/* ------------------------------------------------------------- future */

/* Gives back what the future holds: its wakers, its claims, its
 * reference. */
static void ready_release(struct fut_fd_ready *f)
{
    struct fut__io *io = core_of(f->fd);
    for (int i = 0; i < 2; i++) {
        if (f->waiting & PARKED(i))
            fut__io_unwait(io, dir_of(i));
        uintptr_t me = (uintptr_t)f;
        if (f->waiting & CLAIMED(i))
            fut__cas(&io->waiter[i], &me, 0, FUT__RELAXED, FUT__RELAXED);
    }
    f->waiting = 0;
    f->fd = NULL;
    fut__io_unref(io);
}

/* Claims the directions of f's interest. 0, or FUT_EBUSY (another future
 * waits in one of them). */
static int ready_claim(struct fut_fd_ready *f, struct fut__io *io)
{
    for (int i = 0; i < 2; i++) {
        if (!(f->interest & bit_of(i)) || (f->waiting & CLAIMED(i)))
            continue;
        uintptr_t none = 0;
        /* Relaxed: the word only names the claimant (no data rides on
         * it). */
        if (!fut__cas(&io->waiter[i], &none, (uintptr_t)f, FUT__RELAXED,
                      FUT__RELAXED))
            return FUT_EBUSY;
        f->waiting |= CLAIMED(i);
    }
    return 0;
}

/* The bits to report (> 0), 0 once the wakers are parked, or a code. */
static int ready_step(struct fut_fd_ready *f, struct fut__io *io,
                      struct fut_context *cx)
{
    if (!f->interest)
        return FUT_EINVAL;
    if (is_gone(io))
        return FUT_ECANCELED;
    int r = ready_claim(f, io);
    if (r < 0)
        return r;
    unsigned bits = 0;
    for (int i = 0; i < 2; i++) {
        if (!(f->interest & bit_of(i)))
            continue;
        uint32_t tick;
        r = fut__io_ready(io, dir_of(i), cx, &tick);
        if (r < 0)
            return r;
        if (r == 0) {
            f->waiting |= PARKED(i);
            continue;
        }
        /* A closed or failed direction does not block: report it as
         * ready too (the syscall returns 0 or the error). */
        bits |= (unsigned)r | bit_of(i);
        f->tick = tick; /* the later load's: at least as new */
    }
    return (int)bits;
}

static int ready_poll(struct fut_future *fb, struct fut_context *cx)
{
    struct fut_fd_ready *f = (struct fut_fd_ready *)fb;
    if (!f->fd) { /* init refused it (release builds) */
        f->result = FUT_EINVAL;
        return FUT_READY;
    }
    int r = ready_step(f, core_of(f->fd), cx);
    if (r == 0)
        return FUT_PENDING;
#ifdef FUT_DEBUG
    if (r == FUT_EBUSY) /* no user call to name: the poll's */
        fut__misuse("fut_poll (fut_fd_ready)",
                    "two futures wait for the same direction of one "
                    "fut_fd (one reader and one writer at a time)",
                    NULL);
#endif
    f->result = r;
    ready_release(f);
    return FUT_READY;
}

static void ready_drop(struct fut_future *fb)
{
    struct fut_fd_ready *f = (struct fut_fd_ready *)fb;
    if (f->fd)
        ready_release(f);
}

static const struct fut_future_vtable ready_vt = {ready_poll, ready_drop,
                                                  "fd_ready", NULL};

void fut_fd_ready_init(struct fut_fd_ready *f, struct fut_fd *h,
                       unsigned interest)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    fut_future_init(&f->base, &ready_vt);
    f->fd = NULL;
    f->interest = interest & BOTH;
    f->waiting = 0;
    f->result = 0;
    f->tick = 0;
    FUT_ARG_VOID(h, "'h' is NULL");
    struct fut__io *io = core_of(h);
    if (is_gone(io))
        FUT_MISUSE("the handle was deregistered (fut_fd_deregister)");
    /* Relaxed: the caller holds a reference already. */
    fut__fetch_add(&io->refs, 1, FUT__RELAXED);
    f->fd = h;
}
