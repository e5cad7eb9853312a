/* SPDX-License-Identifier: MIT */
/** \file
 * fut hiredis: a hiredis redisAsyncContext driven by a fut runtime - a
 * future per command, completing with its redisReply, and pub/sub as a
 * stream. The header of libfut-hiredis (pkg-config fut-hiredis), a
 * library apart from libfut: a program that does not use it does not
 * link it (nor hiredis). It is built only where pkg-config finds hiredis
 * (FUT_HIREDIS=AUTO|ON|OFF); docs/ecosystem.md, "hiredis", has the
 * cancel-safety table.
 *
 * Use:
 * \code
 *   struct fut_redis *r;
 *   fut_redis_connect_unix("/run/redis.sock", &r);  // on a runtime thread
 *   // a task:                          // a fiber:
 *   struct fut_redis_cmd c;             redisReply *rep;
 *   fut_redis_cmd_init(&c, r,           int e = fut_redis_call(r, &rep,
 *       "GET %s", key);                         "GET %s", key);
 *   FUT_AWAIT(f, &c);                   ...
 *   // c.result == 0: c.reply is yours  freeReplyObject(rep);
 *   fut_redis_close(r);
 * \endcode
 *
 * How it runs. fut_redis_attach takes over the context's event hooks
 * (ac->ev), registers its fd
 * with fut_fd_register and spawns a driver task on the runtime: the
 * hooks (addRead, delWrite, ...) only record what hiredis wants and wake
 * the driver, which awaits that readiness and calls
 * redisAsyncHandleRead / redisAsyncHandleWrite. hiredis 0.14 reads or
 * writes once per call, so the driver clears a readiness only when a
 * poll(2) with timeout 0 says the fd would block (docs/fd.md); an event
 * newer than the wait's tick survives the clear.
 *
 * Threads. hiredis is not thread-safe: every hiredis call on a context
 * (the driver's, and those a command future or a stream makes when
 * polled or dropped) runs under the context's mutex, so the futures of
 * one context may be polled and dropped on any thread of its runtime,
 * or any thread at all. The callbacks hiredis calls run under that mutex
 * too; they only store and wake. fut_redis_attach / fut_redis_connect* /
 * fut_redis_close: on a thread of the context's runtime (a task, a fiber,
 * or the thread inside fut_block_on); close it before the runtime is
 * freed.
 *
 * Ownership of replies. hiredis 0.14 frees every reply after its
 * callback returns. The adapter moves the reply's contents into a
 * redisReply of its own (malloc, the allocator hiredis 0.14's
 * freeReplyObject frees with) and leaves hiredis an empty shell to free:
 * O(1), no copy of the strings. A reply handed to you is yours: free it
 * with freeReplyObject. One a dropped future never took is freed by the
 * adapter.
 *
 * Errors: FUT_ECANCELED (the context was closed with fut_redis_close
 * before the reply came), -ECONNRESET (the connection failed or the
 * server went away: hiredis completes every pending command without a
 * reply), FUT_ENOMEM, FUT_EINVAL (a bad format, no runtime). A reply of
 * type REDIS_REPLY_ERROR is a reply (result 0): the server's answer.
 */
#ifndef FUT_HIREDIS_H
#define FUT_HIREDIS_H

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "fut/core.h"
#include "fut/stream.h"

FUT_BEGIN_DECLS

/** A redisAsyncContext driven by a fut runtime. Opaque. */
struct fut_redis;
/** private: the adapter's record of one command or subscription. */
struct fut_redis_rec;

/** Attaches 'ac' (made with redisAsyncConnect or redisAsyncConnectUnix,
 * no event library attached) to the runtime running on this thread:
 * registers its fd, sets ac->ev, spawns the driver task. Connect and
 * disconnect callbacks you set run under the context's mutex on a thread
 * of the runtime, and must not call hiredis or the calls of this header. Returns 0 with '*out' set: 'ac'
 * is the adapter's from then on (do not call hiredis on it; end it with
 * fut_redis_close). Or a negative code with 'ac' still yours
 * (redisAsyncFree it): -ECONNREFUSED (ac->err is set: the connect failed
 * at once), FUT_EINVAL (no runtime with I/O on this thread, or 'ac' has
 * an event library already), FUT_ENOMEM, or
 * fut_fd_register's error. Thread: one running a runtime. */
FUT_EXTERN int fut_redis_attach(redisAsyncContext *ac,
                                struct fut_redis **out);

/** redisAsyncConnect(ip, port) then fut_redis_attach. The connect
 * finishes in the background: commands given meanwhile are queued, and
 * fail with -ECONNRESET if it fails. Returns 0 with '*out', or a
 * negative code (-ECONNREFUSED and the like when hiredis fails at once,
 * FUT_ENOMEM, fut_redis_attach's errors) and nothing to free. Thread:
 * one running a runtime. */
FUT_EXTERN int fut_redis_connect(const char *ip, int port,
                                 struct fut_redis **out);

/** The same over a Unix socket ('path'). */
FUT_EXTERN int fut_redis_connect_unix(const char *path,
                                      struct fut_redis **out);

/** Closes the connection (redisAsyncFree): every command still pending
 * completes with FUT_ECANCELED, every subscription stream ends, the fd is
 * deregistered and closed, the driver task ends. 'r' must not be used
 * again; futures and streams over it stay valid until they are dropped
 * (they hold its memory). NULL: nothing. Thread: one of the context's
 * runtime (see the top). */
FUT_EXTERN void fut_redis_close(struct fut_redis *r);

/** 0 while the connection is up (or connecting); once it ended, the
 * error that ended it: FUT_ECANCELED (fut_redis_close) or -ECONNRESET.
 * Thread: any. */
FUT_EXTERN int fut_redis_status(struct fut_redis *r);

/** Blocks the adapter holds now (contexts, command records, queued
 * pub/sub messages), all threads: tests assert it is back to 0, as
 * fut_alloc_live for libfut (hiredis's own memory is not counted). */
FUT_EXTERN long fut_redis_live(void);

/** fut_redis_cmd: one command. The command is formatted at init (so the
 * arguments need not outlive the call) and given to hiredis at the first
 * poll; commands of one context are pipelined in the order of their
 * first polls. Output: 'result' = 0 with 'reply' (yours: freeReplyObject;
 * a REDIS_REPLY_ERROR is the server's answer), or a negative code (see
 * the top) with 'reply' NULL.
 * cancel-safe as far as memory goes: a drop after the first poll leaves
 * the command in flight - the server still runs it - and its reply,
 * when it comes, is freed by the adapter, never written to the dropped
 * future. A drop before the first poll sends nothing. Whether the
 * command ran is then unknown: loses-data for commands with effects you
 * must confirm. */
struct fut_redis_cmd {
    struct fut_future base;    /**< the future header (fut_poll, fut_drop) */
    struct fut_redis *r;       /**< private */
    struct fut_redis_rec *rec; /**< private: set once sent */
    char *cmd;                 /**< private: the formatted command */
    int len;                   /**< private: its length */
    int result;                /**< output: 0 or a negative code */
    redisReply *reply;         /**< output: yours when result is 0 */
};

/** Initialises 'f' to run the command 'fmt', ... (redisFormatCommand's
 * format: %s, %b with a length, %d ...) on 'r'. A bad format, 'r' or
 * 'fmt' NULL, or an allocation failure completes it with FUT_EINVAL /
 * FUT_ENOMEM at the first poll. Thread: any. */
FUT_EXTERN void fut_redis_cmd_init(struct fut_redis_cmd *f,
                                   struct fut_redis *r, const char *fmt, ...);

/** The same with the arguments as 'argc' strings (redisFormatCommandArgv:
 * 'argvlen' NULL means strlen of each). */
FUT_EXTERN void fut_redis_cmd_argv_init(struct fut_redis_cmd *f,
                                        struct fut_redis *r, int argc,
                                        const char **argv,
                                        const size_t *argvlen);

/** An item of a subscription stream. */
struct fut_redis_msg {
    /** the message: hiredis's array ["message", channel, payload];
     * yours: free it with freeReplyObject */
    redisReply *reply;
    /** messages dropped just before this one because the queue was full
     * (see fut_redis_sub) */
    unsigned long lost;
};

/** fut_redis_sub: SUBSCRIBE to one channel, as a stream of struct
 * fut_redis_msg (C15). The SUBSCRIBE is sent at the first poll; then
 * every message the server sends for the channel is queued in the
 * adapter until the stream is polled. The queue holds at most
 * 'max_queued' messages: a consumer that falls behind loses the newest
 * messages beyond it, and the next item it gets says how many ('lost';
 * 'lost_total' counts them all), as a slow consumer of Redis's own
 * client output buffer is cut off rather than let grow without bound.
 * The stream ends (FUT_STREAM_END) when the connection ends: 'result'
 * then says why (FUT_ECANCELED: fut_redis_close; -ECONNRESET).
 * A context with a subscription is in hiredis's subscribed mode: other
 * commands on it get the server's error reply; use one context for
 * subscriptions. One stream per channel and context: a second
 * subscription to a channel the context has a stream for ends at once
 * with -EEXIST (also while the UNSUBSCRIBE of a dropped one is in
 * flight).
 * Dropping the stream sends UNSUBSCRIBE for the channel and frees the
 * queued messages; messages already on their way are freed by the
 * adapter. loses-data: queued messages go with the stream. */
struct fut_redis_sub {
    struct fut_stream base;    /**< the stream header */
    struct fut_redis *r;       /**< private */
    struct fut_redis_rec *rec; /**< private: set once subscribed */
    char *channel;             /**< private: a copy of the name */
    size_t max_queued;         /**< private: the queue's bound */
    int result;                /**< read-only: why it ended (after END) */
    unsigned long lost_total;  /**< read-only: messages lost so far */
};

/** Initialises 's' to subscribe to 'channel' on 'r', queueing at most
 * 'max_queued' messages (0: 1024). 'r' or 'channel' NULL, or an
 * allocation failure, ends it at the first poll with FUT_EINVAL /
 * FUT_ENOMEM. Thread: any. */
FUT_EXTERN void fut_redis_sub_init(struct fut_redis_sub *s,
                                   struct fut_redis *r, const char *channel,
                                   size_t max_queued);

/* ------------------------------------------------------------ fibers */

/** Runs a command from a fiber (fut_redis_cmd_init, fut_await): 0 with
 * '*reply' (yours: freeReplyObject), or a negative code (see the top;
 * FUT_ECANCELED also when the fiber is cancelled: the command's drop,
 * above, says what that loses). Aborts in debug builds / returns
 * FUT_EINVAL outside a fiber. */
#define fut_redis_call(r, reply, ...)                                        \
    fut_redis_call_at(__FILE__, __LINE__, (r), (reply), __VA_ARGS__)
/** The function behind fut_redis_call(), which passes its call site as
 * 'file' and 'line'. */
FUT_EXTERN int fut_redis_call_at(const char *file, int line,
                                 struct fut_redis *r, redisReply **reply,
                                 const char *fmt, ...);

/** The next message of a subscription from a fiber: 0 with '*msg', 1
 * when the stream ended (s->result says why), FUT_ECANCELED when the
 * fiber is cancelled (nothing is lost: a message is taken only when it
 * is handed over). Aborts in debug builds / returns FUT_EINVAL outside a
 * fiber. */
#define fut_redis_sub_next(s, msg)                                           \
    fut_redis_sub_next_at((s), (msg), __FILE__, __LINE__)
/** The function behind fut_redis_sub_next(), which passes its call site
 * as 'file' and 'line'. */
FUT_EXTERN int fut_redis_sub_next_at(struct fut_redis_sub *s,
                                     struct fut_redis_msg *msg,
                                     const char *file, int line);

FUT_END_DECLS

#endif /* FUT_HIREDIS_H */
