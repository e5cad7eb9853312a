/* SPDX-License-Identifier: MIT */
/** \file
 * fut io: asynchronous file descriptors, the byte-moving futures over
 * them, the blocking pool, and file operations built on the pool.
 *
 * A 'struct fut_io' is a non-blocking fd owned by fut (sockets, pipes,
 * stdin/stdout, signalfd: see net.h for the constructors). It is
 * registered with the runtime's reactor (epoll, edge-triggered, once per
 * fd) the first time one of its futures has to wait, on the runtime
 * running on that thread; from then on it belongs to that runtime.
 * Futures try the syscall first and wait only when it would block, so an
 * fd that never blocks never touches epoll.
 *
 * Rules common to every future in this file:
 *   - the output is 'result' in the future's struct: >= 0 (a count, an
 *     fd) or a negative code (-errno, FUT_E*); it is final once READY;
 *     polls after READY return READY with it unchanged (C8);
 *   - a future that must wait while no runtime runs on this thread
 *     (fut_block_on(NULL, ...)), or on another runtime than the one the
 *     fd belongs to, completes with FUT_EINVAL; an fd that outlives its
 *     runtime (fut_runtime_free) is unregistered by it and may then wait
 *     on another runtime, where a pending read gets the bytes that came
 *     meanwhile and a pending write the result of its send if it went
 *     out (io_uring: it is not sent twice; docs/io.md);
 *   - an fd has one reader slot and one writer slot: at most one task may
 *     wait to read and one to write on the same fd at a time (which is
 *     what fut_io_split hands out); buffers passed in are borrowed and
 *     must stay valid until the future is READY or dropped;
 *   - EINTR is retried inside the poll; -EAGAIN never reaches you;
 *   - drop releases the waker registration; the fd stays open (close it
 *     with fut_io_close);
 *   - every future states its cancel-safety class (C12).
 * Thread: a future is polled and dropped by one thread at a time.
 */
#ifndef FUT_IO_H
#define FUT_IO_H

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "fut/core.h"
#include "fut/time.h"

FUT_BEGIN_DECLS

/** Why the last fut_runtime_new on this thread could not have the backend
 * it asked for (FUT_IO_URING, or AUTO that fell back to epoll): a static
 * sentence naming the cause (e.g. the sysctl kernel.io_uring_disabled, a
 * seccomp filter, the multi-thread runtime), or "" when nothing failed.
 * Thread: the calling thread's last runtime creation. */
FUT_EXTERN const char *fut_io_backend_error(void);

/** An asynchronous fd. Opaque; made by the constructors in net.h or by
 * fut_io_from_fd. */
struct fut_io;

/** Adopts 'fd' (a socket, pipe, tty or other fd epoll accepts): sets
 * O_NONBLOCK and takes ownership (fut_io_close closes it). Returns 0 with
 * '*out' set, FUT_ENOMEM, or -errno from fcntl; on error the fd is still
 * the caller's and unchanged. Thread: any. */
FUT_EXTERN int fut_io_from_fd(int fd, struct fut_io **out);

/** The fd (for options fut does not wrap); still owned by 'io'. */
FUT_EXTERN int fut_io_fd(const struct fut_io *io);

/** Closes a handle (NULL: nothing). The fd is unregistered and closed when the last handle
 * of it is closed (after a split: both halves); closing a write half
 * shuts the socket down for writing first. Every future over the handle
 * must have been dropped. Never fails. Thread: any, one at a time per
 * handle. Memory is released at the driver's next turn (or at once when
 * the fd never waited). */
FUT_EXTERN void fut_io_close(struct fut_io *io);

/** Splits 'io' into a read half and a write half that two tasks may use at
 * the same time (even on two workers): '*rd' may only read (read, peek,
 * recv, recv_from), '*wr' may only write (write, send, writev, write_all,
 * send_to, shutdown); other uses complete with FUT_EINVAL. 'io' itself
 * must not be used afterwards; close each half with fut_io_close.
 * Returns 0, or FUT_EINVAL when 'io' is already a half. */
FUT_EXTERN int fut_io_split(struct fut_io *io, struct fut_io **rd,
                            struct fut_io **wr);

/** shutdown(2): how = SHUT_RD, SHUT_WR or SHUT_RDWR. Returns 0 or -errno.
 * Never blocks. */
FUT_EXTERN int fut_io_shutdown(struct fut_io *io, int how);

/* ------------------------------------------------------------ reading */

/** fut_io_read: reads up to 'len' bytes once. Output: 'result' = bytes
 * read (> 0), 0 at end of stream (or len == 0), or -errno (-ECONNRESET,
 * ...). Also peek (MSG_PEEK: the bytes stay in the socket) and recv
 * (recv(2) with flags; a datagram per call on datagram sockets).
 * cancel-safe: a dropped read loses nothing. On epoll bytes are consumed
 * only by the poll that returns READY; on io_uring the runtime may have
 * taken them off the socket already and keeps them for the fd's next read
 * (docs/io.md, "Buffer ownership"). */
struct fut_io_read {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    struct fut_io *io;      /**< private */
    void *buf;              /**< private */
    size_t len;             /**< private */
    int flags;              /**< private */
    int op;                 /**< private */
    int waiting;            /**< private */
    ssize_t result;         /**< output */
};
/** Initialises 'f' to read up to 'len' bytes of 'io' into 'buf' (borrowed
 * until READY or the drop). */
FUT_EXTERN void fut_io_read_init(struct fut_io_read *f, struct fut_io *io,
                                 void *buf, size_t len);
/** The same with MSG_PEEK: the bytes stay in the socket. */
FUT_EXTERN void fut_io_peek_init(struct fut_io_read *f, struct fut_io *io,
                                 void *buf, size_t len);
/** The same with recv(2) and 'flags' (a datagram per call on datagram
 * sockets). */
FUT_EXTERN void fut_io_recv_init(struct fut_io_read *f, struct fut_io *io,
                                 void *buf, size_t len, int flags);

/* ------------------------------------------------------------ writing */

/** fut_io_write: writes up to 'len' bytes once (or writev: up to the
 * iovecs' total; send: send(2) with flags, a datagram on datagram
 * sockets). Output: 'result' = bytes written (> 0; may be fewer than
 * asked), 0 when len == 0, or -errno (-EPIPE, -ECONNRESET, ...). Sockets
 * are written with send/sendmsg(MSG_NOSIGNAL), so SIGPIPE is never
 * raised for them; for pipes, ignore SIGPIPE in your program to get
 * -EPIPE.
 * cancel-safe on epoll: bytes leave only in the poll that returns READY.
 * NOT cancel-safe on io_uring (stream sockets): the first PENDING poll
 * submits a copy of the bytes; a drop cancels it, but the kernel may have
 * sent some or all of them already (docs/io.md). */
struct fut_io_write {
    struct fut_future base;  /**< the future header (fut_poll, fut_drop) */
    struct fut_io *io;       /**< private */
    const void *buf;         /**< private */
    size_t len;              /**< private */
    const struct iovec *iov; /**< private */
    int iovcnt;              /**< private */
    int flags;               /**< private */
    int op;                  /**< private */
    int waiting;             /**< private */
    ssize_t result;          /**< output */
};
/** Initialises 'f' to write up to 'len' bytes of 'buf' (borrowed until
 * READY or the drop) to 'io'. */
FUT_EXTERN void fut_io_write_init(struct fut_io_write *f, struct fut_io *io,
                                  const void *buf, size_t len);
/** The same with send(2) and 'flags' (a datagram on datagram sockets). */
FUT_EXTERN void fut_io_send_init(struct fut_io_write *f, struct fut_io *io,
                                 const void *buf, size_t len, int flags);
/** 'iov' (at most IOV_MAX entries) is borrowed like a buffer. */
FUT_EXTERN void fut_io_writev_init(struct fut_io_write *f, struct fut_io *io,
                                   const struct iovec *iov, int iovcnt);

/** fut_io_write_all: writes all 'len' bytes, waiting as often as needed.
 * Output: 'result' = len, or -errno (then 'done' bytes went out).
 * 'done' is readable at any time, also after a drop.
 * loses-data: dropped midway, 'done' bytes were written and the rest not
 * (on io_uring, up to 64 KiB more may have gone out: the write in flight);
 * the stream's framing is then broken. */
struct fut_io_write_all {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    struct fut_io *io;      /**< private */
    const void *buf;        /**< private */
    size_t len;             /**< private */
    size_t done;            /**< read-only: bytes written so far */
    int waiting;            /**< private */
    ssize_t result;         /**< output */
};
/** Initialises 'f' to write all 'len' bytes of 'buf' (borrowed until
 * READY or the drop) to 'io'. */
FUT_EXTERN void fut_io_write_all_init(struct fut_io_write_all *f,
                                      struct fut_io *io, const void *buf,
                                      size_t len);

/* ---------------------------------------------------------- datagrams */

/** fut_io_recv_from: receives one datagram (recvfrom). Output: 'result' =
 * its length (truncated to 'len'), or -errno; 'addr'/'addrlen' = the
 * sender. cancel-safe (as read). */
struct fut_io_recv_from {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    struct fut_io *io;      /**< private */
    void *buf;              /**< private */
    size_t len;             /**< private */
    int flags;              /**< private */
    int waiting;            /**< private */
    struct sockaddr_storage addr; /**< output */
    socklen_t addrlen;            /**< output */
    ssize_t result;               /**< output */
};
/** Initialises 'f' to receive one datagram of 'io' into 'buf' ('len'
 * bytes, borrowed until READY or the drop), with recvfrom's 'flags'. */
FUT_EXTERN void fut_io_recv_from_init(struct fut_io_recv_from *f,
                                      struct fut_io *io, void *buf,
                                      size_t len, int flags);

/** fut_io_send_to: sends one datagram to 'addr' (copied at init). Output:
 * 'result' = bytes sent, or -errno. cancel-safe (as write). */
struct fut_io_send_to {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    struct fut_io *io;      /**< private */
    const void *buf;        /**< private */
    size_t len;             /**< private */
    int flags;              /**< private */
    int waiting;            /**< private */
    struct sockaddr_storage addr; /**< private */
    socklen_t addrlen;            /**< private */
    ssize_t result;               /**< output */
};
/** 'alen' larger than a sockaddr_storage makes the future complete with
 * FUT_EINVAL. */
FUT_EXTERN void fut_io_send_to_init(struct fut_io_send_to *f,
                                    struct fut_io *io, const void *buf,
                                    size_t len, int flags,
                                    const struct sockaddr *addr,
                                    socklen_t alen);

/* -------------------------------------------------------- blocking pool */

/** \file
 * \par The blocking pool
 * The blocking pool of a runtime runs functions that block (disk I/O,
 * name resolution, CPU-heavy work) on threads of its own, so that they
 * never block a poll (C6).
 *   - threads: started on demand, at most blocking_threads (config;
 *     default 512); a thread idle for blocking_keepalive_ns (default 10
 *     s) exits;
 *   - queue: when every thread is busy, jobs wait in a FIFO queue of
 *     blocking_queue entries (default 1024). When the queue is full, the
 *     submitting future waits (PENDING, in FIFO order of submission) until
 *     a thread takes a job: backpressure on the submitter, never an
 *     error, never a busy loop;
 *   - the pool's threads block every signal, so signals go to your
 *     threads (and a signalfd);
 *   - fut_runtime_free waits for running jobs to return, then joins every
 *     thread; queued jobs never run.
 */

/** fut_spawn_blocking: runs fn(arg) on a pool thread; READY when it
 * returned. Output: 'result' = 0 with 'value' = fn's return value, or
 * FUT_ENOMEM / FUT_EINVAL (no runtime with a driver on this thread) /
 * FUT_ESHUTDOWN / -EAGAIN (no thread could be started and none is
 * running). The job is submitted at the first poll.
 * Dropping the future before the job started cancels it: fn never runs.
 * Dropping it while fn runs lets fn finish; its value is then passed to
 * 'discard' (if set: see fut_blocking_set_discard) on the pool thread.
 * 'arg' must stay valid until fn has returned.
 * loses-position while queued (dropping gives up the place in the
 * queue); once running, dropping loses the value (loses-data unless
 * 'discard' releases it). */
struct fut_blocking {
    struct fut_future base;    /**< the future header (fut_poll, fut_drop) */
    intptr_t (*fn)(void *arg); /**< private */
    void *arg;                 /**< private */
    void (*discard)(void *arg, intptr_t value); /**< private */
    void *job;                                  /**< private */
    int result;                                 /**< output */
    intptr_t value;                             /**< output */
};
/** Initialises 'f' to run fn(arg) on the blocking pool of the current
 * thread's runtime (submitted at the first poll). */
FUT_EXTERN void fut_spawn_blocking_init(struct fut_blocking *f,
                                        intptr_t (*fn)(void *arg), void *arg);
/** Sets the function that releases a value nobody took (see above); call
 * before the first poll. */
FUT_EXTERN void fut_blocking_set_discard(struct fut_blocking *f,
                                         void (*discard)(void *arg,
                                                         intptr_t value));

/* ------------------------------------------------------------------ fs */

/** File operations on the blocking pool. Output: 'result' = as the
 * syscall (an fd, a byte count, 0) or -errno. Paths and data to write are
 * copied at the first poll, and reads land in a buffer of the job that is
 * copied to 'buf' by the poll that returns READY, so a drop never leaves
 * a pool thread touching your memory.
 * Cancel safety: dropped before the job started, nothing happened
 * (cancel-safe); dropped while it runs, the operation still completes:
 * open's fd is closed for you, a read's bytes are lost (loses-data when
 * reading at the current position: use an offset), a write's happen. */
struct fut_fs {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    int op;                 /**< private */
    const char *path;       /**< private */
    int fd;                 /**< private */
    /** private */
    int flags, mode;  /**< private */
    void *buf;        /**< private */
    const void *cbuf; /**< private */
    size_t len;       /**< private */
    int64_t offset;   /**< private */
    struct stat *st;  /**< private */
    void *job;        /**< private */
    ssize_t result;   /**< output */
};
/** open(path, flags | O_CLOEXEC, mode): result = the fd (yours to close). */
FUT_EXTERN void fut_fs_open_init(struct fut_fs *f, const char *path,
                                 int flags, int mode);
/** pread at 'offset' (< 0: read at the current position). */
FUT_EXTERN void fut_fs_read_init(struct fut_fs *f, int fd, void *buf,
                                 size_t len, int64_t offset);
/** pwrite at 'offset' (< 0: write at the current position). */
FUT_EXTERN void fut_fs_write_init(struct fut_fs *f, int fd, const void *buf,
                                  size_t len, int64_t offset);
/** stat of a path into '*st' (written by the poll that returns READY). */
FUT_EXTERN void fut_fs_stat_init(struct fut_fs *f, const char *path,
                                 struct stat *st);
/** fstat of an fd into '*st'. */
FUT_EXTERN void fut_fs_fstat_init(struct fut_fs *f, int fd, struct stat *st);
/** fsync of an fd. */
FUT_EXTERN void fut_fs_fsync_init(struct fut_fs *f, int fd);

FUT_END_DECLS

#endif /* FUT_IO_H */
