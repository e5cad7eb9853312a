/* SPDX-License-Identifier: MIT */
/** \file
 * fut fibers: straight-line async code on the same runtime.
 *
 * A fiber is a task with its own stack that runs 'fn(arg)' and awaits any
 * fut future as a function call:
 *
 *   static intptr_t conn(void *arg) {
 *       struct fut_io *io = arg;
 *       char buf[4096];
 *       ssize_t n;
 *       while ((n = fut_read(io, buf, sizeof buf)) > 0)
 *           if (fut_write_all(io, buf, (size_t)n) < 0)
 *               break;
 *       fut_io_close(io);
 *       return 0;
 *   }
 *   ... fut_fiber_spawn(NULL, conn, io, NULL, NULL);
 *
 * The model (docs/fibers.md): a fiber is a future whose poll switches
 * onto the fiber's stack and back. fut_await(f), called on the fiber,
 * polls 'f' with the context of the poll that switched in; while 'f' is
 * PENDING the fiber switches back, so that the task's poll returns
 * PENDING; the waker 'f' registered re-queues the task, whose next poll
 * switches in again and polls 'f' once more. The schedulers do not know
 * fibers exist: spawning one is fut_spawn of that future, its join
 * handle is an ordinary struct fut_join, and on the multi-thread runtime
 * the next poll may run on another worker (the fiber migrates: see
 * "Threads" below).
 *
 * Stacks: mmap'd, 64 KiB by default (fut_fiber_opts.stack_size; 4x in
 * sanitizer builds, whose frames are larger), with an inaccessible guard
 * page below. Pages are committed only when the fiber touches them.
 * Freed stacks wait in a process-wide pool of their size (one for each
 * of the first four sizes used) for the next fiber, with their pages;
 * a pool keeps at least 16 and up to the most in use in the last one
 * to two seconds, and unmaps the rest (docs/fibers.md, "Stacks"). Debug builds install a SIGSEGV handler (on an
 * alternate signal stack) that recognises a fault in a guard page,
 * prints the overflowing fiber's name and spawn site on stderr and
 * re-raises (not in ASan/TSan builds, whose own handlers report it).
 *
 * Cancellation: dropping or aborting a fiber's task (dropping or
 * fut_join_abort of its handle, fut_scope_cancel of its scope, a runtime
 * shutdown) makes the fut_await in progress and every later one return
 * FUT_ECANCELED at once, having dropped the awaited future. The drop
 * resumes the suspended fiber on the dropping thread and returns once
 * 'fn' has returned: the fiber unwinds by returning, its stack is freed
 * after that, and nothing of it outlives the drop (so a fiber in a scope
 * may borrow from the scope's owner, as any child may). 'fn' always runs
 * exactly once: a fiber dropped before its first poll is started
 * cancelled, so that it can release what 'arg' hands it. A fiber that
 * keeps awaiting after the cancel keeps the dropping thread busy: debug
 * builds report it (kind "fiber-ignores-cancel") after 10,000 awaits,
 * and the task dump shows it as cancelled with its await site.
 *
 * Threads: on the multi-thread runtime a fiber may resume on another
 * worker after any fut_await (and any wrapper below). Thread-locals read
 * after an await are the new thread's; errno too - copy errno to a
 * local before awaiting; never hold a pthread mutex or a pointer to a
 * thread-local across an await. fut_spawn_local pins a task to its
 * worker; fibers have no such option yet.
 *
 * Limits: no fork() in a fiber (the child would run on a stack the
 * pool shares with the parent's fibers); no longjmp across fut_await;
 * deep recursion needs a bigger stack (opts->stack_size); a fiber must
 * not call fut_block_on.
 */
#ifndef FUT_FIBER_H
#define FUT_FIBER_H

#include <sys/types.h>

#include "fut/chan.h"
#include "fut/core.h"
#include "fut/fd.h"
#include "fut/io.h"
#include "fut/net.h"
#include "fut/rt.h"
#include "fut/scope.h"

FUT_BEGIN_DECLS

/** The function a fiber runs. Its return value is the task's output (read
 * it with fut_fiber_join, fut_fiber_value or fut_fiber_run); in a scope a
 * negative return value is the child's result (a failure, which
 * FAIL_FAST reports) and every value is fut_scope_done.value. */
typedef intptr_t (*fut_fiber_fn)(void *arg);

/** Options of a spawn; fut_fiber_opts_init fills in the defaults. */
struct fut_fiber_opts {
    size_t stack_size; /**< usable bytes, rounded up to pages; 0 = 64 KiB
                          (256 KiB in ASan/TSan builds); at least 16 KiB
                          (smaller values are raised) */
    const char *name;  /**< shown in task dumps and overflow reports
                          (static storage or outliving the fiber);
                          NULL = "fiber" */
};

/** Fills 'o' with the defaults: the default stack size, no name. */
FUT_EXTERN void fut_fiber_opts_init(struct fut_fiber_opts *o);

/** The fiber future itself (what a spawn copies into the task). Output,
 * once READY: 'value' = fn's return value; 'result' = that value when it
 * is a negative int (a failure for scopes), else 0. Private otherwise:
 * spawn fibers with the calls below. */
struct fut_fiber {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    struct fut__fiber *fb;  /**< private */
    intptr_t value;         /**< output */
    int result;             /**< output */
};

/** Spawns a fiber running fn(arg) on 'rt' (NULL: the runtime of the
 * current thread). 'opts' may be NULL. 'join' == NULL: detached;
 * otherwise '*join' becomes its handle (an ordinary join handle: await
 * it, drop it to cancel the fiber, fut_join_abort, fut_join_detach).
 * The stack is taken (from the pool or mmap) here, so a spawn that
 * returns 0 runs fn.
 * Returns 0; FUT_EINVAL (no runtime); FUT_ESHUTDOWN; FUT_ENOMEM (also
 * when the stack cannot be mapped). On error fn does not run and 'arg'
 * is still the caller's; 'join' is an empty handle.
 * Thread: any (the fut_spawn rules). */
#define fut_fiber_spawn(rt, fn, arg, opts, join)                             \
    fut_fiber_spawn_at((rt), (fn), (arg), (opts), (join), __FILE__, __LINE__)
/** The function behind fut_fiber_spawn(), which passes its call site as
 * 'file' and 'line' (for task dumps and debug reports). */
FUT_EXTERN int fut_fiber_spawn_at(struct fut_runtime *rt, fut_fiber_fn fn,
                                  void *arg,
                                  const struct fut_fiber_opts *opts,
                                  struct fut_join *join, const char *file,
                                  int line);

/** Spawns a fiber as a child of scope 's' (fut/scope.h): the scope's
 * rules hold (it cannot outlive the scope; cancelling the scope cancels
 * it, see "Cancellation"); a negative return value of fn is the child's
 * failure, and fn's value is its fut_scope_done.value. Returns 0;
 * FUT_ECANCELED (the scope is cancelled); FUT_EINVAL, FUT_ESHUTDOWN,
 * FUT_ENOMEM as fut_fiber_spawn. On error fn does not run.
 * Thread: the scope's owner or a task of its tree. */
#define fut_scope_fiber_spawn(s, fn, arg, opts)                              \
    fut_scope_fiber_spawn_at((s), (fn), (arg), (opts), __FILE__, __LINE__)
/** The function behind fut_scope_fiber_spawn(), which passes its call site as
 * 'file' and 'line' (for task dumps and debug reports). */
FUT_EXTERN int fut_scope_fiber_spawn_at(struct fut_scope *s, fut_fiber_fn fn,
                                        void *arg,
                                        const struct fut_fiber_opts *opts,
                                        const char *file, int line);

/** Spawns a fiber and blocks this thread (fut_block_on) until it returns:
 * for main() and tests. '*value' (may be NULL) = fn's return value.
 * Returns 0; FUT_ECANCELED (the fiber was cancelled: a shutdown); the
 * errors of fut_fiber_spawn and fut_block_on. Thread: not a runtime's
 * (the fut_block_on rules). */
#define fut_fiber_run(rt, fn, arg, opts, value)                              \
    fut_fiber_run_at((rt), (fn), (arg), (opts), (value), __FILE__, __LINE__)
/** The function behind fut_fiber_run(), which passes its call site as 'file'
 * and 'line' (for task dumps and debug reports). */
FUT_EXTERN int fut_fiber_run_at(struct fut_runtime *rt, fut_fiber_fn fn,
                                void *arg, const struct fut_fiber_opts *opts,
                                intptr_t *value, const char *file, int line);

/** fn's return value from a join handle of a fiber that is READY with
 * result 0 (before the handle is dropped); 0 otherwise. */
FUT_EXTERN intptr_t fut_fiber_value(const struct fut_join *j);

/* ------------------------------------------------------ inside a fiber */

/** Awaits 'f' on the current fiber: polls it and, while it is PENDING,
 * suspends the fiber until its waker fires. Once 'f' is READY, drops it
 * (as FUT_AWAIT does; its output stays readable in its struct) and
 * returns 0. Returns FUT_ECANCELED when the fiber is cancelled (before
 * or during the await): 'f' has been dropped where it stood (its cancel
 * safety says what that loses). 'f' is caller storage, typically on the
 * fiber's stack, that must stay put until this returns.
 * Misuse: called outside a fiber, it aborts with the caller's file:line
 * in debug builds and returns FUT_EINVAL otherwise ('f' untouched).
 * Thread: the fiber's; may return on another thread (see the top). */
#define fut_await(f) fut_await_at(FUT_AS_FUTURE(f), __FILE__, __LINE__)
/** The function behind fut_await(), which passes its call site as 'file' and
 * 'line' (for task dumps and debug reports). */
FUT_EXTERN int fut_await_at(struct fut_future *f, const char *file, int line);

/** 1 when called on a fiber (fut_await may be used), else 0. */
FUT_EXTERN int fut_in_fiber(void);

/** \file
 * \par The wrappers (fut_read, fut_sleep, ...)
 * The wrappers: one future on the fiber's stack, fut_await, its result.
 * Each returns FUT_ECANCELED when the fiber is cancelled (the future is
 * dropped: its cancel safety is the wrapped future's, in io.h, net.h,
 * time.h, chan.h), and aborts in debug builds / returns FUT_EINVAL
 * outside a fiber, reporting the caller's file:line. */

/** Lets the runtime poll its other ready tasks (as fut_yield, without a
 * future: the task is re-queued behind every task ready now and the
 * fiber switches out). 0, or FUT_ECANCELED (the fiber was cancelled). */
#define fut_fiber_yield() fut_fiber_yield_at(__FILE__, __LINE__)
/** The function behind fut_fiber_yield(), which passes its call site as
 * 'file' and 'line' (for task dumps and debug reports). */
FUT_EXTERN int fut_fiber_yield_at(const char *file, int line);

/** fut_io_read: bytes read (> 0), 0 at end of stream, or -errno. */
#define fut_read(io, buf, len)                                               \
    fut_read_at((io), (buf), (len), __FILE__, __LINE__)
/** The function behind fut_read(), which passes its call site as 'file' and
 * 'line' (for task dumps and debug reports). */
FUT_EXTERN ssize_t fut_read_at(struct fut_io *io, void *buf, size_t len,
                               const char *file, int line);

/** fut_io_write_all: 'len', or -errno (part may have been written;
 * loses-data when cancelled midway). */
#define fut_write_all(io, buf, len)                                          \
    fut_write_all_at((io), (buf), (len), __FILE__, __LINE__)
/** The function behind fut_write_all(), which passes its call site as 'file'
 * and 'line' (for task dumps and debug reports). */
FUT_EXTERN ssize_t fut_write_all_at(struct fut_io *io, const void *buf,
                                    size_t len, const char *file, int line);

/** fut_accept: 0 with '*conn' (yours to close), or -errno. */
#define fut_accept(listener, conn)                                           \
    fut_accept_at((listener), (conn), __FILE__, __LINE__)
/** The function behind fut_accept(), which passes its call site as 'file' and
 * 'line' (for task dumps and debug reports). */
FUT_EXTERN int fut_accept_at(struct fut_io *listener, struct fut_io **conn,
                             const char *file, int line);

/** fut_fd_ready: waits until the registered fd 'h' is ready for
 * 'interest' (FUT_FD_READABLE, FUT_FD_WRITABLE or both). Returns the
 * ready bits (> 0) with '*tick' set (for fut_fd_clear_ready, after your
 * syscall's EAGAIN), or FUT_ECANCELED (the handle was deregistered, or
 * the fiber cancelled), FUT_EINVAL, FUT_EBUSY as the future. cancel-safe:
 * readiness is never consumed. */
#define fut_fd_wait(h, interest, tick)                                       \
    fut_fd_wait_at((h), (interest), (tick), __FILE__, __LINE__)
/** The function behind fut_fd_wait(), which passes its call site as 'file'
 * and 'line' (for task dumps and debug reports). */
FUT_EXTERN int fut_fd_wait_at(struct fut_fd *h, unsigned interest,
                              uint32_t *tick, const char *file, int line);

/** fut_tcp_connect_init: 0 with '*conn' (yours to close), FUT_ETIMEDOUT
 * past 'deadline' (absolute, -1 = none), or -errno. */
#define fut_connect(addr, len, deadline, conn)                               \
    fut_connect_at((addr), (len), (deadline), (conn), __FILE__, __LINE__)
/** The function behind fut_connect(), which passes its call site as 'file'
 * and 'line' (for task dumps and debug reports). */
FUT_EXTERN int fut_connect_at(const struct sockaddr *addr, socklen_t len,
                              int64_t deadline, struct fut_io **conn,
                              const char *file, int line);

/** fut_sleep_init: sleeps 'ns' (< 0: until cancelled). 0, or FUT_EINVAL
 * (no driver). */
#define fut_sleep(ns) fut_sleep_at((ns), __FILE__, __LINE__)
/** The function behind fut_sleep(), which passes its call site as 'file' and
 * 'line' (for task dumps and debug reports). */
FUT_EXTERN int fut_sleep_at(int64_t ns, const char *file, int line);

/** fut_mpsc_recv: 0 with the message copied to 'out', or FUT_ECLOSED. */
#define fut_recv(rx, out) fut_recv_at((rx), (out), __FILE__, __LINE__)
/** The function behind fut_recv(), which passes its call site as 'file' and
 * 'line' (for task dumps and debug reports). */
FUT_EXTERN int fut_recv_at(struct fut_mpsc_rx *rx, void *out,
                           const char *file, int line);

/** fut_mpsc_send: 0 once the message is in the channel, FUT_ECLOSED,
 * FUT_ENOMEM. */
#define fut_send(tx, msg) fut_send_at((tx), (msg), __FILE__, __LINE__)
/** The function behind fut_send(), which passes its call site as 'file' and
 * 'line' (for task dumps and debug reports). */
FUT_EXTERN int fut_send_at(struct fut_mpsc_tx *tx, const void *msg,
                           const char *file, int line);

/** fut_timeout over 'f' with a deadline 'ns' from now (< 0: none): 0 once
 * 'f' completed (its output in its struct), FUT_ETIMEDOUT ('f' dropped
 * where it stood, C13), FUT_EINVAL (no driver). */
#define fut_timeout_await(f, ns)                                             \
    fut_timeout_await_at(FUT_AS_FUTURE(f), (ns), __FILE__, __LINE__)
/** The function behind fut_timeout_await(), which passes its call site as
 * 'file' and 'line' (for task dumps and debug reports). */
FUT_EXTERN int fut_timeout_await_at(struct fut_future *f, int64_t ns,
                                    const char *file, int line);

/** Awaits 'f' unless 'token' (fut/cancel.h; e.g. fut_scope_token) is
 * cancelled first (fut_until_cancelled): 0 once 'f' completed,
 * FUT_ECANCELED when the token fired ('f' dropped where it stood) or the
 * fiber was cancelled. For graceful shutdown: a scope's children stop
 * at their next await once fut_shutdown cancels the token. */
#define fut_await_token(f, token)                                            \
    fut_await_token_at(FUT_AS_FUTURE(f), (token), __FILE__, __LINE__)
/** The function behind fut_await_token(), which passes its call site as
 * 'file' and 'line' (for task dumps and debug reports). */
FUT_EXTERN int fut_await_token_at(struct fut_future *f,
                                  struct fut_token *token, const char *file,
                                  int line);

/** Waits for a fiber spawned with a handle: 0 with '*value' (may be NULL)
 * = its fn's return value, or FUT_ECANCELED (that fiber was cancelled, or
 * this one was: then the handle was dropped, which aborts the other).
 * The handle is spent afterwards (dropped). */
#define fut_fiber_join(j, value)                                             \
    fut_fiber_join_at((j), (value), __FILE__, __LINE__)
/** The function behind fut_fiber_join(), which passes its call site as 'file'
 * and 'line' (for task dumps and debug reports). */
FUT_EXTERN int fut_fiber_join_at(struct fut_join *j, intptr_t *value,
                                 const char *file, int line);

FUT_END_DECLS

#endif /* FUT_FIBER_H */
