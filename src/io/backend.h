/* SPDX-License-Identifier: MIT */
/* The I/O backend interface: the one place that knows the OS's event API.
 *
 * An I/O future does not ask "is this fd readable?" but asks the backend
 * for an *operation* (struct fut__op: read, recv, write, send, writev,
 * recvfrom, sendto, accept) and gets READY with the operation's result
 * or PENDING. Three files implement the same table (struct fut__backend_vt):
 *
 *   backend_epoll.c  readiness + syscall: try the syscall, wait for an
 *                    edge-triggered epoll event when it would block (the
 *                    reactor's readiness word, reactor.c);
 *   uring/backend.c  completion: the operation is an SQE on an io_uring,
 *                    its result a CQE; what has no SQE here goes through
 *                    a multishot POLL_ADD into the same readiness word
 *                    (its other calls: uring/uring.h);
 *   backend_sim.c    a simulation's network: sockets in memory, segments
 *                    delivered on the virtual clock (fut/sim.h); its
 *                    socket calls are simnet_socket.c's.
 *
 * The driver (driver.c) picks one at runtime creation and calls it only
 * through this table; the futures (src/net) call fut__io_submit
 * (reactor.c), which calls the table of the fd's driver. Each backend
 * keeps its state in its own file ('struct fut__backend' is opaque here)
 * and its per-fd state in fut__io.bstate.
 *
 * Layering inside src/io: reactor.c (fd handles, readiness word) is the
 * lowest file and reaches a backend only through this table; the backend
 * files call down into reactor.c (dispatch, the readiness step); driver.c
 * is above both. No file calls up.
 */
#ifndef FUT_IO_BACKEND_H
#define FUT_IO_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

/* Readiness bits, as a backend reports them and the reactor stores them
 * in an fd's readiness word. */
#define FUT__RD_READ 0x01u    /* readable (or a connection to accept) */
#define FUT__RD_WRITE 0x02u   /* writable (or a connect finished) */
#define FUT__RD_RCLOSED 0x04u /* the peer will send nothing more */
#define FUT__RD_WCLOSED 0x08u /* writes will fail (hang-up) */
#define FUT__RD_ERROR 0x10u   /* a pending socket error */
#define FUT__RD_ALL 0x1fu

/* FUT__RD_* bits of a poll(2) event mask (also epoll's: the same bits). */
static inline unsigned fut__rd_of_poll(uint32_t e)
{
    unsigned r = 0;
    if (e & (0x001u | 0x002u)) /* POLLIN | POLLPRI */
        r |= FUT__RD_READ;
    if (e & 0x004u) /* POLLOUT */
        r |= FUT__RD_WRITE;
    if (e & 0x2000u) /* POLLRDHUP */
        r |= FUT__RD_READ | FUT__RD_RCLOSED;
    if (e & 0x010u) /* POLLHUP */
        r |= FUT__RD_READ | FUT__RD_WRITE | FUT__RD_RCLOSED | FUT__RD_WCLOSED;
    if (e & 0x008u) /* POLLERR */
        r |= FUT__RD_READ | FUT__RD_WRITE | FUT__RD_ERROR;
    return r;
}

/* The operations; those that read come first (fut__op_dir). */
enum fut__op_kind {
    FUT__OP_READ,     /* read(2) into buf */
    FUT__OP_RECV,     /* recv(2) with flags (MSG_PEEK: nothing consumed) */
    FUT__OP_RECVFROM, /* recvfrom(2): buf, flags; the sender to addr/alen */
    FUT__OP_ACCEPT,   /* accept4(2) non-blocking, close-on-exec; the peer
                         to addr/alen; result = the new fd */
    FUT__OP_WRITE,    /* write(2) of buf (pipes, ttys, other fds) */
    FUT__OP_SEND,     /* send(2) | MSG_NOSIGNAL of buf */
    FUT__OP_WRITEV,   /* writev(2) of iov (non-sockets) */
    FUT__OP_SENDV,    /* sendmsg(2) | MSG_NOSIGNAL of iov */
    FUT__OP_SENDTO    /* sendto(2): buf, flags, to addr/'*alen' */
};

/* One operation's arguments, built by the future for each poll (on its
 * stack: nothing here must outlive the call). A backend that needs them
 * longer (io_uring) copies them into memory it owns. */
struct fut__op {
    int kind;  /* enum fut__op_kind */
    int flags; /* MSG_* for recv/send/recvfrom/sendto */
    void *buf; /* data to read into or write from */
    size_t len;
    const struct iovec *iov; /* WRITEV/SENDV */
    int iovcnt;
    struct sockaddr *addr; /* RECVFROM/ACCEPT: out; SENDTO: in */
    socklen_t *alen;       /* in/out length of addr */
    size_t want;           /* readiness: bytes asked for, for the
                                short-transfer rule (0: no rule) */
};

/* Direction of an operation: the fd's reader or writer slot. */
static inline unsigned fut__op_dir(const struct fut__op *op)
{
    return op->kind < FUT__OP_WRITE ? 1u /* FUT__DIR_READ */
                                    : 2u /* FUT__DIR_WRITE */;
}

struct fut__backend;
struct fut__io;
struct fut_context;

struct fut__backend_vt {
    const char *name; /* "epoll", "io_uring" */
    /* Creates the backend; 'wakefd' is the driver's unpark eventfd, which
     * the backend watches (a wait that sees it written reports 'woken').
     * Returns 0 with '*out' set, or a negative error with nothing left
     * open. */
    int (*create)(struct fut__backend **out, int wakefd);
    void (*destroy)(struct fut__backend *b);
    /* Runs or continues 'op' on 'io' for the task in 'cx' (the polling
     * thread). Returns FUT_READY with '*res' = the result (>= 0 or
     * -errno; never -EAGAIN or -EINTR) or FUT_PENDING once cx's waker is
     * in io's slot for the op's direction. */
    int (*op)(struct fut__backend *b, struct fut__io *io,
              const struct fut__op *op, struct fut_context *cx, long *res);
    /* The future of the op in direction 'dir' was dropped while PENDING
     * (its waker is already out of the slot). Any thread, one at a time
     * with the polling thread. May be NULL. */
    void (*op_drop)(struct fut__backend *b, struct fut__io *io, unsigned dir);
    /* Registers 'io' for readiness events (the first time a readiness
     * wait needs them; under io's lock). Returns 0 or a negative error. */
    int (*watch)(struct fut__backend *b, struct fut__io *io);
    /* The last handle of a registered 'io' is closing, before its fd is
     * closed (any thread). Returns 0 (the caller closes the fd) or 1 (the
     * backend closes it, later: another thread's ring still has SQEs
     * naming it). May be NULL. */
    int (*unwatch)(struct fut__backend *b, struct fut__io *io);
    /* 1 when unwatch names the fd by its number (epoll_ctl): after the
     * number was closed (and maybe reused) it must not be called; 0 when
     * it names the watch itself (io_uring's cancel by user_data), which
     * must be called even then (the watch holds the file). */
    int unwatch_by_number;
    /* 'io' is about to be freed (driver turn or shutdown), or (detach)
     * outlives the backend's driver: nothing the backend keeps may point
     * to it afterwards. On detach, bytes the backend received for it and
     * nobody read go to the fd's spill (fut__io_spill), not lost. Returns
     * 0 (the caller frees 'io') or 1 (not on detach: the backend frees it
     * later with fut__io_free, on the thread that owns its state). May be
     * NULL. */
    int (*forget)(struct fut__backend *b, struct fut__io *io, int detach);
    /* Submits what is queued, waits up to 'timeout_ns' (< 0 = forever,
     * 0 = do not block), and delivers what happened: readiness through
     * fut__io_dispatch with 'tick', completions to their ops (waking the
     * fds' waiters). Returns the number of fd events delivered; '*woken'
     * = 1 when the wake fd fired. */
    int (*wait)(struct fut__backend *b, int64_t timeout_ns, uint32_t tick,
                int *woken);
};

extern const struct fut__backend_vt fut__backend_epoll;
/* A simulation's network (backend_sim.c, fut/sim.h): simulated sockets
 * served from memory in virtual time; every other fd is refused. */
extern const struct fut__backend_vt fut__backend_sim;

#endif /* FUT_IO_BACKEND_H */
