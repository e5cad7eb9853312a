/* SPDX-License-Identifier: MIT */
/** \file
 * fut fd: await the readiness of a file descriptor fut does not own - a
 * socket a C library opened (libcurl, libpq, hiredis), an inotify fd, a
 * device. fut watches it and tells you when it is readable or writable;
 * you make the syscall (or call the library) yourself. fut never reads,
 * writes, closes or changes the flags of the fd.
 *
 * Use:
 * \code
 *   struct fut_fd *h;
 *   fut_fd_register(fd, &h);            // on a runtime's thread
 *   for (;;) {                           // in a task or a fiber
 *       uint32_t tick;
 *       int ev = fut_fd_wait(h, FUT_FD_READABLE, &tick);   // a fiber
 *       if (ev < 0) break;               // FUT_ECANCELED: deregistered
 *       ssize_t n = read(fd, buf, sizeof buf);
 *       if (n < 0 && errno == EAGAIN)
 *           fut_fd_clear_ready(h, FUT_FD_READABLE, tick);
 *   }
 *   fut_fd_deregister(h);               // the fd is still yours: close it
 * \endcode
 *
 * Readiness is edge-triggered underneath and cached (Tokio's AsyncFd):
 * the kernel reports a change (epoll with EPOLLET; a multishot POLL_ADD
 * on io_uring), fut keeps the bits, and a wait returns at once for as
 * long as they are set - until you clear them with fut_fd_clear_ready,
 * which you do only after your own syscall returned EAGAIN (the kernel
 * reports the next change as a new edge). Clear without an EAGAIN and a
 * wait may sleep although data is there: if a library you drive may stop
 * reading before EAGAIN, call it again until it says it would block, or
 * clear with fut_fd_clear_if_blocked, which asks poll(2) first. A wait may also return
 * although the fd is not ready any more (someone else read it): a
 * readiness is a hint, EAGAIN is the truth. FUT_FD_RDHUP, FUT_FD_HUP and
 * FUT_FD_ERROR are never cleared.
 *
 * Why this shape. Tokio's AsyncFd has the same split (readable() /
 * writable() futures, clear_ready() after WouldBlock); libuv's uv_poll_t
 * instead takes an event mask (uv_poll_start, which re-arms epoll with
 * epoll_ctl on each change) and calls a callback, level-triggered. Here
 * an fd is registered once for both directions, edge-triggered, so a
 * library that flips its interest between IN, OUT and both (libcurl's
 * CURLMOPT_SOCKETFUNCTION, hiredis's addRead/delRead/addWrite/delWrite)
 * costs no syscall: you simply await the other direction, or stop
 * awaiting. A handle is a pointer (store it where the library keeps its
 * per-socket data: curl_multi_assign, hiredis's ev.data).
 *
 * Rules:
 *   - the fd must already be non-blocking (O_NONBLOCK): fut does not set
 *     it, and a blocking syscall of yours would stall the runtime's
 *     thread (C6);
 *   - an fd has one reader slot and one writer slot: at most one future
 *     may wait for readability and one for writability of a handle at a
 *     time (the same future may wait for both). A second waiter for the
 *     same direction is a programming error: debug builds abort with a
 *     "fut:" message, release builds complete it with FUT_EBUSY;
 *   - registering an fd that is already registered (with fut_fd_register
 *     on the same runtime, not yet deregistered) is a programming error:
 *     debug builds abort; release builds return -EEXIST on epoll (the
 *     io_uring backend does not notice: both handles get every event);
 *   - using a handle after fut_fd_deregister is a programming error:
 *     debug builds abort while its memory lives (a future over it still
 *     holds it); afterwards it is a use after free;
 *   - close the fd only after fut_fd_deregister returned. Closing it
 *     before is a programming error: a wait on it may sleep until the
 *     deregistration (a closed file reports nothing), and
 *     fut_fd_deregister finds the fd number gone or naming another file
 *     (fstat): debug builds abort, release builds wake the waiters and
 *     leave epoll alone (the kernel dropped the watch with the file; a
 *     number reused meanwhile may be another fd's registration), while
 *     io_uring's poll, which holds the file, is still cancelled.
 * Thread: fut_fd_register on a thread running a runtime (a task, or the
 * thread in fut_block_on); the handle then belongs to that runtime, and
 * its futures may be polled on any of its threads (FUT_EINVAL on another
 * runtime's, or with none). fut_fd_clear_ready: any thread.
 * fut_fd_deregister: any thread, except that a current-thread runtime on
 * io_uring is driven by its own thread only (as for fut_io_close: its
 * ring is touched; debug builds abort on another thread).
 */
#ifndef FUT_FD_H
#define FUT_FD_H

#include <stdint.h>

#include "fut/core.h"

FUT_BEGIN_DECLS

/** Readable (or a connection to accept, or end of stream). */
#define FUT_FD_READABLE 0x01u
/** Writable (or a connect finished). */
#define FUT_FD_WRITABLE 0x02u
/** The peer will send nothing more (EPOLLRDHUP; reported with
 * FUT_FD_READABLE: a read returns 0). Never cleared. */
#define FUT_FD_RDHUP 0x04u
/** Hang-up: writes fail (EPOLLHUP; reported to a writer with
 * FUT_FD_WRITABLE). Never cleared. */
#define FUT_FD_HUP 0x08u
/** An error is pending on the fd (EPOLLERR; reported to both directions,
 * with FUT_FD_READABLE / FUT_FD_WRITABLE: the syscall returns it). Never
 * cleared. */
#define FUT_FD_ERROR 0x10u

/** A registered fd. Opaque; made by fut_fd_register, ended by
 * fut_fd_deregister. */
struct fut_fd;

/** Registers 'fd' (any fd epoll or poll accepts: a socket, pipe, eventfd,
 * inotify or timer fd, a tty) with the runtime running on this thread,
 * for both directions. The fd stays the caller's: fut never reads,
 * writes or closes it, and does not touch its flags (make it
 * non-blocking first). Returns 0 with '*out' set, or a negative code and
 * nothing registered: -EBADF (not an open fd), -EPERM (epoll refuses it:
 * a regular file or a directory), -EEXIST (registered already, see the
 * rules; debug builds abort), FUT_EINVAL (no runtime with I/O on this
 * thread), FUT_ENOMEM. Thread: one running a runtime. */
FUT_EXTERN int fut_fd_register(int fd, struct fut_fd **out);

/** The fd of a handle (still the caller's). */
FUT_EXTERN int fut_fd_fileno(const struct fut_fd *h);

/** Forgets the readiness 'bits' (FUT_FD_READABLE and/or FUT_FD_WRITABLE;
 * other bits are ignored) that a wait reported with 'tick', after your
 * syscall returned EAGAIN: the next wait for them sleeps until the
 * kernel reports a new edge. A readiness event newer than 'tick' is kept
 * (it may be the data that came after your EAGAIN), so the call never
 * loses a wakeup. Thread: any. */
FUT_EXTERN void fut_fd_clear_ready(struct fut_fd *h, unsigned bits,
                                   uint32_t tick);

/** Clears those of 'bits' (FUT_FD_READABLE and/or FUT_FD_WRITABLE) that
 * the kernel says would block now - a zero-timeout poll(2) of the fd,
 * with the tick the wait reported, as fut_fd_clear_ready does - and keeps
 * the others. For a library that may stop reading or writing before
 * EAGAIN (hiredis reads once per call, libcurl may stop when its buffer
 * is full): call it after handing the library an event, instead of
 * fut_fd_clear_ready, so a wait neither sleeps while data is there nor
 * spins while none is. A hang-up or error counts as ready both ways.
 * Returns the bits cleared (0: none), a negative errno when poll(2)
 * failed (nothing cleared), or FUT_EINVAL (NULL; a deregistered handle,
 * which debug builds abort on). Costs a poll(2) system call. Thread: any.
 */
FUT_EXTERN int fut_fd_clear_if_blocked(struct fut_fd *h, unsigned bits,
                                       uint32_t tick);

/** Ends the registration: the fd leaves epoll (or its POLL_ADD is
 * cancelled) before this returns, a future waiting on the handle is woken
 * and completes with FUT_ECANCELED, and the handle must not be used again
 * (its memory goes once no future refers to it). The fd stays open, with
 * its flags as they were: close it yourself, after this call. NULL:
 * nothing. Never fails. Thread: any (see the top for io_uring's
 * current-thread runtime). */
FUT_EXTERN void fut_fd_deregister(struct fut_fd *h);

/** fut_fd_ready: waits until the fd is ready for 'interest'
 * (FUT_FD_READABLE, FUT_FD_WRITABLE, or both: whichever comes first).
 * Output: 'result' = the ready bits (> 0): those of 'interest' that are
 * set, with FUT_FD_RDHUP (readable interest), FUT_FD_HUP (writable) and
 * FUT_FD_ERROR (either) when they hold; and 'tick', to pass to
 * fut_fd_clear_ready. Or a negative code: FUT_ECANCELED (the handle was
 * deregistered), FUT_EINVAL (no interest bit; polled without a runtime
 * or on another runtime than the handle's), FUT_EBUSY (release builds:
 * another future waits for the same direction), or the backend's error.
 * The future holds the handle's memory from init until it is READY or
 * dropped.
 * cancel-safe: a drop only gives the waiter slot back; readiness is
 * never consumed by the future (only fut_fd_clear_ready clears it), so a
 * new future awaits the same state. */
struct fut_fd_ready {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    struct fut_fd *fd;      /**< private */
    unsigned interest;      /**< private */
    unsigned waiting;       /**< private */
    int result;             /**< output */
    uint32_t tick;          /**< output: the readiness event's tag */
};

/** Initialises 'f' to wait for 'interest' on 'h' (a live handle). */
FUT_EXTERN void fut_fd_ready_init(struct fut_fd_ready *f, struct fut_fd *h,
                                  unsigned interest);

FUT_END_DECLS

#endif /* FUT_FD_H */
