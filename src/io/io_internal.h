/* SPDX-License-Identifier: MIT */
/* Internals shared by the I/O driver (src/io), the timers (src/time), the
 * sockets (src/net) and the blocking pool (src/blocking). */
#ifndef FUT_IO_INTERNAL_H
#define FUT_IO_INTERNAL_H

#include "fut/io.h"
#include "fut/time.h"
#include "io/backend.h"
#include "platform/sys.h"
#include "rt/rt_internal.h"
#include "time/wheel.h"
#include "util/list.h"
#include "util/mutex.h"

_Static_assert(sizeof(uintptr_t) == 8, "fut's I/O layer needs 64-bit words");

#define FUT__NS_PER_MS 1000000LL

/* ------------------------------------------------------------- timers */

/* A timer: a wheel entry plus the waker to call and its state. Lives
 * inside the future (public storage: struct fut_timer_entry). */
struct fut__timer {
    struct fut__tentry e;   /* under the driver lock */
    struct fut_waker waker; /* under the driver lock (a one_thread
                               driver's block_on thread may read it
                               without: fut__timer_poll) */
    fut__aword state;       /* TIMER_* below */
    struct fut__iodrv *drv; /* armed on; set by the poller */
};

enum {
    FUT__TIMER_IDLE = 0,  /* not in any wheel */
    FUT__TIMER_ARMED = 1, /* in d's wheel, waiting */
    FUT__TIMER_FIRED = 2, /* expired; the driver took the waker and will
                             not touch the entry again */
    FUT__TIMER_DEAD = 3   /* the driver was freed while it was armed */
};

static inline struct fut__timer *fut__timer_of(struct fut_timer_entry *s)
{
    return (struct fut__timer *)(void *)s;
}

void fut__timer_init(struct fut__timer *t);
/* Arms 't' on 'd' for 'deadline' (absolute ns of d's clock) with a clone
 * of 'w'. Returns 0 (armed) or 1 (already due: not armed; state FIRED).
 * 't' must be IDLE or FIRED. */
int fut__timer_arm(struct fut__iodrv *d, struct fut__timer *t,
                   int64_t deadline, const struct fut_waker *w);
/* 1 when 't' fired; FUT_ESHUTDOWN when its driver was freed meanwhile;
 * else keeps 'w' as its waker and returns 0. */
int fut__timer_poll(struct fut__timer *t, const struct fut_waker *w);
/* Disarms 't' (any state; O(1)) and drops its waker; back to IDLE. */
void fut__timer_cancel(struct fut__timer *t);
/* Whether 't' (armed, fired or refused as due by fut__timer_arm, on its
 * driver t->drv) was filed for a tick later than the one 'deadline'
 * rounds up to / earlier than it. Read by the timer's owner only (the
 * driver never writes the entry's tick). */
int fut__timer_fires_after(const struct fut__timer *t, int64_t deadline);
int fut__timer_fires_before(const struct fut__timer *t, int64_t deadline);

/* ------------------------------------------------------- blocking pool */

struct fut__job;
struct fut__pool;

/* Runs on a pool thread; returns the job's value. */
typedef intptr_t (*fut__job_fn)(struct fut__job *j);
/* Releases a value nobody will take (the future was dropped after the
 * job ran). May be NULL. */
typedef void (*fut__job_discard)(struct fut__job *j, intptr_t value);

struct fut__job {
    struct fut__list link; /* pool's queue or room (pool lock) */
    fut__job_fn fn;
    fut__job_discard discard;
    intptr_t value;         /* written by the worker before DONE */
    struct fut_waker waker; /* under the pool lock */
    struct fut__pool *pool;
    struct fut__iodrv *drv; /* for the paused clock's inhibit count */
    fut__aword state;       /* JOB_* in pool.c */
    size_t size;            /* allocation size (payload included) */
    /* the caller's payload follows, aligned */
};

static inline void *fut__job_payload(struct fut__job *j)
{
    return (char *)j + ((sizeof *j + 15) & ~(size_t)15);
}

/* Allocates a job with 'payload' bytes of payload (zeroed). NULL: no
 * memory. */
struct fut__job *fut__job_new(size_t payload, fut__job_fn fn,
                              fut__job_discard discard);
/* Polls a job for the task in 'cx': submits it on the first poll.
 * Returns FUT_READY with '*value' set (the job stays allocated: read its
 * payload, then fut__job_release it), FUT_PENDING, or a negative code
 * (no driver: FUT_EINVAL; pool shut down: FUT_ESHUTDOWN; no thread could
 * be started and none runs: -EAGAIN), in which case the job was freed
 * and '*jp' is NULL. */
int fut__job_poll(struct fut__job **jp, struct fut_context *cx,
                  intptr_t *value);
/* Frees a job whose value was taken (no discard). '*jp' becomes NULL. */
void fut__job_release(struct fut__job **jp);
/* Drops the future's interest: cancels a job not started, lets a
 * running one finish (its value then goes to 'discard'), frees a
 * finished one. '*jp' becomes NULL. */
void fut__job_drop(struct fut__job **jp);

/* Per-driver pool state (pool.c). */
struct fut__pool *fut__pool_new(const struct fut_rt_config *cfg);
/* Joins every thread (running jobs finish first; queued ones are
 * orphaned: their futures later free them). */
void fut__pool_free(struct fut__pool *p);
/* Threads the pool has now (tests, statistics). */
int fut__pool_threads(struct fut__pool *p);

/* ------------------------------------------------------------- driver */

struct fut__io;

struct fut__iodrv {
    struct fut__driver base;
    const struct fut__backend_vt *bvt; /* the backend chosen at creation */
    struct fut__backend *be;           /* its state, private to its file */
    int evfd;              /* the unpark eventfd, watched by the backend */
    fut__aword park_state; /* IDLE / PARKED / NOTIFIED (driver.c) */
    uint32_t tick;         /* event tick; the parking thread only */
    int paused;            /* virtual clock (static after creation) */
    int sim;               /* a simulation's driver (fut__driver_new_sim):
                              no fd may register, blocking jobs run
                              inline (static after creation) */
    int one_thread;        /* a current-thread runtime's: only the thread
                              in its block_on parks it (fires its timers,
                              dispatches its events); static after
                              creation */
    int64_t origin;        /* real time of tick 0 */
    fut__aword vnow;       /* virtual now (ns); written under 'lock' */
    fut__aword inhibit;    /* blocking jobs in flight (paused clock) */
    fut__mutex lock;       /* guards the fields below */
    struct fut__wheel wheel;
    uint64_t sleep_tick;     /* tick a blocking wait ends at, or MAX */
    struct fut__io *ios;     /* registered fds */
    struct fut__io *release; /* closed fds, freed at the next turn */
    struct fut__pool *pool;  /* the blocking pool */
    /* Per-worker rings (a multi-thread runtime on io_uring; 0 else):
     * ring i is worker i's, with its own wake eventfd and event tick (the
     * readiness word's ABA guard: an fd's events all come from its ring).
     * 'be' is rings[0]. A ring is torn down by its worker at exit,
     * its struct freed with the driver. */
    int nrings;
    struct fut__backend **rings;
    int *ring_evfd;
    uint32_t *ring_tick;
    /* The eventfd unpark writes: the driver's, or the wake fd of the ring
     * the driver's holder parks on (stored before park_state's PARKED
     * swap, read after unpark's swap: the swaps order it). */
    fut__aword holder_fd;
};

/* The driver of the runtime running on this thread, or NULL. */
static inline struct fut__iodrv *fut__iodrv_current(void)
{
    struct fut__sched *s = fut__tls_sched;
    return s ? (struct fut__iodrv *)s->driver : NULL;
}

/* Now, on d's clock (virtual when paused). */
int64_t fut__iodrv_now(struct fut__iodrv *d);
/* Makes a park in progress return (any thread). */
void fut__iodrv_unpark(struct fut__iodrv *d);

/* Under d->lock, when a registration or an armed timer gives an idle
 * driver something to wait for: 1 when the caller must call
 * fut__iodrv_interest once it released the lock. */
static inline int fut__iodrv_claim_interest(struct fut__iodrv *d)
{
    if (!fut__load(&d->base.undriven, FUT__RELAXED))
        return 0;
    /* Before the caller's fence in notify_parked (via 'interest'). */
    fut__store(&d->base.undriven, 0, FUT__RELAXED);
    return 1;
}

/* Tells the scheduler (fut__driver.interest) that the driver has
 * something to wait for now. Not under d->lock. Inline (a call through
 * the pointer the scheduler passed down), so that the reactor, below the
 * driver, never calls up into driver.c. */
static inline void fut__iodrv_interest(struct fut__iodrv *d)
{
    if (d->base.interest)
        d->base.interest(&d->base, d->base.interest_ud);
}

/* -------------------------------------------------------------- reactor */

/* Readiness word of an fd (one fut__aword):
 *   bits 0..4   FUT__RD_* ready bits
 *   bits 32..63 the driver tick of the event that last set bits (0: none
 *               yet, the state an fd starts in)
 */
#define FUT__IO_TICK_SHIFT 32

/* Directions. */
#define FUT__DIR_READ 1u
#define FUT__DIR_WRITE 2u

/* Kinds of fd. */
enum {
    FUT__IO_STREAM = 1, /* connected stream socket */
    FUT__IO_DGRAM,      /* datagram socket */
    FUT__IO_LISTEN,     /* listening socket */
    FUT__IO_PIPE,       /* pipe, tty or other non-socket stream */
    FUT__IO_SIGNAL,     /* signalfd */
    FUT__IO_OTHER,      /* a tty or other fd: no short-transfer rule */
    FUT__IO_FOREIGN     /* the user's fd (fut_fd_register, fd.c): only
                           readiness, never closed, flags untouched */
};

struct fut_io {
    struct fut__io *core;
    unsigned dir; /* FUT__DIR_*: what this handle may do */
};

struct fut__io {
    fut__aword readiness; /* see above */
    int fd;
    int kind;
    fut__mutex lock;         /* guards 'drv' (set once) and the slots */
    struct fut__iodrv *drv;  /* registered with; NULL before */
    struct fut_waker rd, wr; /* the reader's and the writer's waker */
    /* The task whose waker stays in 'rd' / 'wr' between events ([0]
     * read, [1] write; 0: none, or the slot holds no task's waker): the
     * dispatcher wakes a clone and leaves it there, so that the task's
     * next wait in that direction finds it parked already and takes no
     * lock (fut__io_ready; the rules in reactor.c). Written under 'lock'
     * with the slot; read there, or without it by the task it names. */
    fut__aword kept[2];
    struct fut__io *prev, *next; /* d->ios or d->release */
    fut__aword refs;             /* handles alive (1, or 2 once split) */
    int restore_fl;              /* file status flags for close, or -1 */
    int borrowed;                /* 1: close leaves the fd open (stdio) */
    int nodelay;                 /* TCP_NODELAY set (cached) */
    int watched;                 /* the backend's watch ran (under lock) */
    char *spill;                 /* bytes a completion backend received
                                    and nobody read when it let the fd go
                                    (detach): every read takes them first;
                                    a listener's: the fds it accepted, as
                                    ints (closed with the io) */
    size_t spill_len, spill_off;
    long wr_kept;            /* the result of a write a completion
                                backend had in flight when it let the fd
                                go (detach) and its future did not take:
                                the next write poll, on any runtime, gets
                                it instead of sending again; a dropped
                                write clears it (fut__io_unwait) */
    int wr_kept_set;         /* 'wr_kept' holds a result */
    void *bstate[3];         /* the backend's per-fd state (its file
                                    says what; the polling thread) */
    struct fut_io h, hr, hw; /* the full handle and the two halves */
    /* A foreign fd's (fd.c): 1 once deregistered (written under 'lock',
     * release; fut__io_ready checks it under 'lock' before it parks a
     * waker, so no waker is parked after fut__io_cancel took them), and
     * the future waiting in each direction (CAS; NULL: none). */
    fut__aword gone;
    fut__aword waiter[2];
    uint64_t fdev, fino; /* a foreign fd's file (fstat at registration):
                            deregistration checks it is still that one */
};

/* The waker slots of an fd, for the reactor and a completion backend
 * (io_uring parks its native ops' wakers here: one record per fd). All
 * three under io->lock (or, on a one-thread backend, on its thread). */
static inline struct fut_waker *fut__io_slot(struct fut__io *io, unsigned dir)
{
    return dir == FUT__DIR_READ ? &io->rd : &io->wr;
}

/* Parks 'w' in the slot of 'dir' for a completion, which takes it
 * (fut__io_slot_take): not kept (reactor.c's rules), so that a readiness
 * dispatch or the kept fast path never mistakes it for a kept waker. */
static inline void fut__io_slot_park(struct fut__io *io, unsigned dir,
                                     const struct fut_waker *w)
{
    fut_waker_set(fut__io_slot(io, dir), w);
    /* Relaxed, as every write of 'kept' (struct fut__io says who reads
     * it): the lock, or the task's own ordering, pairs it. */
    fut__store(&io->kept[dir - 1], 0, FUT__RELAXED);
}

/* Takes the waker out of the slot of 'dir' (none: vt NULL); the caller
 * wakes or drops it after it released io->lock. */
static inline struct fut_waker fut__io_slot_take(struct fut__io *io,
                                                 unsigned dir)
{
    struct fut_waker *slot = fut__io_slot(io, dir), w = *slot;
    slot->vt = NULL;
    fut__store(&io->kept[dir - 1], 0, FUT__RELAXED);
    return w;
}

/* Wraps 'fd' (already non-blocking). 'ready' = the readiness assumed at
 * first (FUT__RD_READ|FUT__RD_WRITE: try the syscall before waiting).
 * Returns 0 with '*out' set, or FUT_ENOMEM (the fd is not closed). */
int fut__io_new(int fd, int kind, unsigned ready, struct fut_io **out);
/* Readiness of 'io' in direction 'dir' for the task in 'cx'. Returns the
 * ready bits (> 0) with '*tick', 0 once cx's waker is registered (the
 * caller returns PENDING), or a negative code (FUT_EINVAL: no driver on
 * this thread, or another runtime's; a registration error such as
 * -ENOMEM or -EPERM; FUT_ECANCELED: a foreign fd deregistered). */
int fut__io_ready_slow(struct fut__io *io, unsigned dir,
                       struct fut_context *cx, uint32_t *tick);
/* The ready bits of 'dir' in readiness word 'w' (direction masks). */
#define FUT__IO_READ_MASK (FUT__RD_READ | FUT__RD_RCLOSED | FUT__RD_ERROR)
#define FUT__IO_WRITE_MASK (FUT__RD_WRITE | FUT__RD_WCLOSED | FUT__RD_ERROR)
/* fut__io_ready's common case inline (the readiness is there: one load),
 * the wait out of line (fut__io_ready_slow, reactor.c): every socket
 * future's poll takes this step, most of them without waiting. */
static inline int fut__io_ready(struct fut__io *io, unsigned dir,
                                struct fut_context *cx, uint32_t *tick)
{
    unsigned mask =
        dir == FUT__DIR_READ ? FUT__IO_READ_MASK : FUT__IO_WRITE_MASK;
    /* Acquire: pairs with the dispatcher's release CAS, so what the event
     * stands for (bytes in the socket) is there when we act on it. */
    uintptr_t w = fut__load(&io->readiness, FUT__ACQUIRE);
    if (FUT_LIKELY(w & mask)) {
        *tick = (uint32_t)(w >> FUT__IO_TICK_SHIFT);
        return (int)(w & mask);
    }
    /* No readiness, and this task's waker is still parked in the slot
     * from its last wait: nothing to register (reactor.c's rules say why
     * no event is lost). Relaxed: the task reads what its own earlier
     * poll wrote (ordered by the task's state), or a clear by a thread
     * that then woke it (cancel: ordered by the wake). */
    if (FUT_LIKELY(cx->waker.vt == &fut__task_waker_vt) &&
        fut__load(&io->kept[dir - 1], FUT__RELAXED) ==
            (uintptr_t)cx->waker.data)
        return 0;
    return fut__io_ready_slow(io, dir, cx, tick);
}
/* Binds 'io' to the driver of this thread without asking the backend to
 * watch it (a completion backend's first native operation): close then
 * tells the backend (unwatch) and the free waits for its forget. Returns
 * 0, or FUT_EINVAL (no driver here, or another runtime's). A later
 * readiness wait (fut__io_ready) still registers the watch. */
int fut__io_attach(struct fut__io *io);
/* Keeps 'n' bytes at 'p' as the fd's spill (copied; appended to what
 * is there). Returns 0 or FUT_ENOMEM. */
int fut__io_spill(struct fut__io *io, const char *p, size_t n);
/* Keeps accepted 'fd' in listener io's spill (the next accept takes it,
 * fut__io_free closes it). Returns 0 or FUT_ENOMEM. */
int fut__io_spill_fd(struct fut__io *io, int fd);
/* Copies up to 'len' spilled bytes to 'buf' (consuming them unless
 * 'peek'); returns the count (0: none spilled). */
size_t fut__io_unspill(struct fut__io *io, void *buf, size_t len, int peek);
/* Clears 'bits' unless an event newer than 'tick' landed (ABA guard). */
void fut__io_clear(struct fut__io *io, unsigned bits, uint32_t tick);
/* Registers 'io' with the driver of this thread now (a foreign fd: its
 * readiness starts at none and comes from the backend's first report).
 * Returns 0, FUT_EINVAL (no driver here) or the backend's error. */
int fut__io_register_here(struct fut__io *io);
/* Ends a foreign fd's registration (fut_fd_deregister): marks it gone,
 * unwatches it in the backend (the fd stays open; 'unwatch' 0: the fd
 * number is not the registered file any more, so a backend that unwatches
 * by number - epoll, whose EPOLL_CTL_DEL would hit another fd's
 * registration - is not asked) and wakes the waiters, whose next
 * readiness wait returns FUT_ECANCELED. The memory stays until
 * fut__io_unref drops the last reference. */
void fut__io_cancel(struct fut__io *io, int unwatch);
/* Drops one reference ('refs'); the last one releases 'io' (unwatch,
 * close unless borrowed, free at the driver's next turn). */
void fut__io_unref(struct fut__io *io);
/* Drops the waker registered for 'dir' (a future's drop), and tells the
 * backend (op_drop). */
void fut__io_unwait(struct fut__io *io, unsigned dir);
/* Records an event (backend wait). */
void fut__io_dispatch(struct fut__io *io, unsigned ready, uint32_t tick);
/* Frees what a closed io left on d's release list (driver, each turn),
 * after the backend forgot each. */
void fut__io_reap(struct fut__iodrv *d, struct fut__io *list);
/* Frees a closed io (reap, or a backend that took its free: forget). */
void fut__io_free(struct fut__io *io);
/* Detaches every registered io from a driver being freed. */
void fut__io_detach_all(struct fut__iodrv *d);

/* The readiness step of an operation (the epoll backend's 'op', and the
 * io_uring backend's for what it has no SQE for): try the syscall of
 * 'op' when the fd may be ready, wait for readiness when it would block.
 * Handles coop, EINTR, EAGAIN (clear + wait) and the short-transfer rule
 * (a short read or write on a stream clears readiness: the kernel buffer
 * was drained or filled). 'b' is unused (the backend table's shape).
 * Returns FUT_READY with '*res' = the syscall's result (or the reactor's
 * error), or FUT_PENDING. */
int fut__io_do(struct fut__backend *b, struct fut__io *io,
               const struct fut__op *op, struct fut_context *cx, long *res);

/* The operation step of fut__io_do with 'call' in place of the syscall
 * (the simulated network's backend, backend_sim.c): 'call' returns what
 * the syscall would (-EAGAIN when it would block) and sets
 * fut__sys_shortened when a short transfer does not mean "drained". */
typedef long (*fut__io_call_fn)(struct fut__io *io, const struct fut__op *op);
int fut__io_do_with(struct fut__io *io, const struct fut__op *op,
                    struct fut_context *cx, long *res, fut__io_call_fn call);

/* What a completion backend left when it let the fd go (reactor.c): 1
 * with '*res' when 'op' takes it (a write's kept result, an accepted fd, spilled
 * bytes), else 0. */
int fut__io_take_spill(struct fut__io *io, const struct fut__op *op,
                       long *res);

/* The syscall of an operation. Inline: in the I/O step of a future that
 * builds its op with a constant kind (stream.c), the switch folds away. */
static inline __attribute__((always_inline)) long
fut__io_syscall(struct fut__io *io, const struct fut__op *op)
{
    int fd = io->fd;
    switch (op->kind) {
    case FUT__OP_READ:
        return fut__sys_read(fd, op->buf, op->len);
    case FUT__OP_RECV:
        return fut__sys_recv(fd, op->buf, op->len, op->flags);
    case FUT__OP_WRITE:
        return fut__sys_write(fd, op->buf, op->len);
    case FUT__OP_SEND:
        return fut__sys_send(fd, op->buf, op->len, op->flags);
    case FUT__OP_WRITEV:
        return fut__sys_writev(fd, op->iov, op->iovcnt);
    case FUT__OP_SENDV:
        return fut__sys_sendv(fd, op->iov, op->iovcnt);
    case FUT__OP_RECVFROM:
        *op->alen = sizeof(struct sockaddr_storage);
        return fut__sys_recvfrom(fd, op->buf, op->len, op->flags, op->addr,
                                 op->alen);
    case FUT__OP_SENDTO:
        return fut__sys_sendto(fd, op->buf, op->len, op->flags, op->addr,
                               *op->alen);
    case FUT__OP_ACCEPT:
        *op->alen = sizeof(struct sockaddr_storage);
        return fut__sys_accept(fd, op->addr, op->alen);
    default:
        return FUT_EINVAL;
    }
}

/* The readiness step (fut__io_do's body) with 'call' making the
 * operation, inlined into each caller: fut__io_do and fut__io_do_with
 * (reactor.c), and the read and write futures (stream.c,
 * fut__io_submit_inline), whose copies know the op's kind and keep the op
 * in registers: one call level, one switch and the op's stores fewer per
 * operation than through fut__io_do. */
static inline __attribute__((always_inline)) int
fut__io_step(struct fut__io *io, const struct fut__op *op,
             struct fut_context *cx, long *res, fut__io_call_fn call)
{
    if (FUT_UNLIKELY(io->spill != NULL || io->wr_kept_set)) {
        /* A copy: 'op' itself must not escape (see fut__io_submit_inline). */
        struct fut__op c = *op;
        if (fut__io_take_spill(io, &c, res))
            return FUT_READY;
    }
    unsigned dir = fut__op_dir(op);
    size_t want = op->want;
    for (;;) {
        uint32_t tick;
        int r = fut__io_ready(io, dir, cx, &tick);
        if (r < 0) {
            *res = r;
            return FUT_READY;
        }
        if (r == 0)
            return FUT_PENDING;
        if (!fut_coop_proceed(cx))
            return FUT_PENDING;
        fut__sys_shortened = 0;
        long n = call(io, op);
        if (n == -EINTR)
            continue;
        if (n == -EAGAIN || n == -EWOULDBLOCK) {
            fut__io_clear(io,
                          dir == FUT__DIR_READ ? FUT__RD_READ : FUT__RD_WRITE,
                          tick);
            continue;
        }
        /* A short transfer on a stream socket or pipe means the kernel
         * buffer was drained (read) or filled (write) when the call ran:
         * clear readiness now and save the EAGAIN syscall the next
         * operation would make (Tokio does the same). Edge-triggered
         * epoll reports anything arriving after the call. */
        if (n > 0 && (size_t)n < want &&
            (io->kind == FUT__IO_STREAM || io->kind == FUT__IO_PIPE) &&
            !fut__sys_shortened)
            fut__io_clear(io,
                          dir == FUT__DIR_READ ? FUT__RD_READ : FUT__RD_WRITE,
                          tick);
        *res = n;
        return FUT_READY;
    }
}

/* Runs 'op' on 'io' for the task in 'cx' through the backend of this
 * thread's driver (backend.h, 'op'): FUT_READY with '*res', or
 * FUT_PENDING. Without a driver on this thread the syscall is tried, and
 * an op that would block completes with FUT_EINVAL (io.h's rule). */
static inline int fut__io_submit(struct fut__io *io, const struct fut__op *op,
                                 struct fut_context *cx, long *res)
{
    struct fut__iodrv *d = fut__iodrv_current();
    if (FUT_UNLIKELY(!d) || d->bvt == &fut__backend_epoll)
        return fut__io_do(NULL, io, op, cx, res); /* direct: no table */
    return d->bvt->op(d->be, io, op, cx, res);
}

/* fut__io_submit with epoll's step inline (the read and write futures
 * of stream.c, once per operation on every connection). */
static inline __attribute__((always_inline)) int
fut__io_submit_inline(struct fut__io *io, struct fut__op op,
                      struct fut_context *cx, long *res)
{
    struct fut__iodrv *d = fut__iodrv_current();
    if (FUT_UNLIKELY(!d) || d->bvt == &fut__backend_epoll) {
        /* The step's own copy, whose address goes only to the inlined
         * syscall: it stays in registers and the switch on its kind
         * folds (an op whose address escaped, here to the backend's
         * table, is reloaded after every call). */
        const struct fut__op o = op;
        return fut__io_step(io, &o, cx, res, fut__io_syscall);
    }
    return d->bvt->op(d->be, io, &op, cx, res);
}

/* The core of a public handle; NULL-safe. */
static inline struct fut__io *fut__io_core(const struct fut_io *h)
{
    return h ? h->core : NULL;
}

#endif /* FUT_IO_INTERNAL_H */
