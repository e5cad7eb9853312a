/* SPDX-License-Identifier: MIT */
/** \file
 * fut task scopes (structured concurrency, C16) and graceful shutdown.
 *
 * A scope is a nursery (libdill's bundle, Trio's nursery, Tokio's
 * JoinSet made strict): tasks spawned into it are its children, and
 *
 *   - the scope is a future that completes only after every child has
 *     completed or been dropped;
 *   - dropping the scope, or fut_scope_cancel, cancels every child: an
 *     idle or queued child is dropped at once, a child being polled on
 *     another worker right after that poll - and the scope's drop
 *     RETURNS ONLY AFTER EVERY CHILD'S DROP HAS RUN. No child outlives
 *     its scope, ever: a child may borrow from the scope's owner;
 *   - the first child that fails cancels its siblings and the scope
 *     completes with its error (FUT_SCOPE_FAIL_FAST, the default), or the
 *     siblings keep running (FUT_SCOPE_SUPERVISE). Either way every
 *     child's result is reported (the stream of finished children, the
 *     per-child destinations, the scope's 'failed' count): an error is
 *     never lost silently;
 *   - children may spawn into the same scope, or open nested scopes;
 *   - every scope carries a cancel token (fut/cancel.h) its children can
 *     read, for cooperative cancellation before the hard one.
 *
 * How the scope's drop waits for a child polled on another worker (the
 * multi-thread runtime): the drop takes every idle or queued child's
 * future itself and drops it on the calling thread; for a child whose
 * poll is running elsewhere it waits - spinning, then yielding the
 * thread - until that poll returns, at which point the poller drops the
 * child's future and reports it. A poll never blocks (C6), so the wait
 * is bounded by one poll of each child; it cannot deadlock, because a
 * drop waits only for polls of its own descendants, which never wait for
 * their ancestors (docs/scopes.md has the argument and the alternatives).
 * The children's task memory may be freed a little later by the
 * runtime; nothing of the child's own future survives the drop.
 *
 * A child "fails" when it completes with a negative result other than
 * FUT_ECANCELED (a child that gave up because it saw the token is not a
 * failure). Its result is the int member named by FUT_SCOPE_RESULT (0
 * when none was named). A child dropped before completing reports
 * FUT_ECANCELED.
 *
 * Storage: 'struct fut_scope' is caller storage that must not move after
 * fut_scope_init (children point at it; its token is a fut_token). In an
 * async function that is spawned, initialise it inside the poll after
 * FUT_BEGIN; a parent that may be dropped before that zeroes it at init
 * and drops it in its cleanup only when 'base.vt' is set.
 *
 * Threads: the scope future (join), fut_scope_next and the stream are
 * polled by the scope's owner, one thread at a time; fut_scope_spawn from
 * the owner or from any task of the scope's tree (children, their
 * children...); fut_scope_cancel and fut_scope_token from any thread.
 */
#ifndef FUT_SCOPE_H
#define FUT_SCOPE_H

#include "fut/cancel.h"
#include "fut/core.h"
#include "fut/net.h"
#include "fut/rt.h"
#include "fut/stream.h"
#include "fut/time.h"

FUT_BEGIN_DECLS

/** Failure policies (fut_scope_init's 'policy'). */
enum fut_scope_policy {
    /** The first failing child cancels its siblings (they are dropped;
     * they report FUT_ECANCELED) and the scope completes with its error.
     * Spawns into the scope fail with FUT_ECANCELED from then on. */
    FUT_SCOPE_FAIL_FAST = 0,
    /** Supervisor: a failing child is counted and reported; its siblings
     * keep running. The scope's result is still the first error. */
    FUT_SCOPE_SUPERVISE = 1
};

/** The scope: a future over its children. Output (valid once READY):
 * 'result' = 0 when every child completed without failing; the first
 * failing child's result; or FUT_ECANCELED when the scope was cancelled
 * (fut_scope_cancel, or FAIL_FAST after an error reports the error).
 * 'failed' = children that failed; 'cancelled' = children dropped before
 * they completed; 'spawned' = children spawned so far. Polls after READY
 * return READY (C8). Spawns after READY are allowed (await them with
 * fut_scope_next; the drop still cancels and waits for them) - but
 * FUT_AWAIT drops what it awaited, and spawns into a dropped scope fail
 * with FUT_ECANCELED.
 * Polling the scope consumes the records of finished children that
 * fut_scope_next has not taken (each record goes to one of them).
 * cancel-safe in the C12 sense that dropping it loses nothing it was
 * asked to keep: the drop IS the cancellation of every child (and waits
 * for their drops, see above); results of children that finished before
 * are already in their destinations. */
struct fut_scope {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    int result;             /**< output */
    uint64_t failed;        /**< output */
    uint64_t cancelled;     /**< output */
    uint64_t spawned;       /**< read-only */
    struct fut_token token; /**< private: use fut_scope_token */
    uintptr_t priv_[14];
};

/** Initialises 's' to spawn into 'rt' (NULL: fut_runtime_current(); when
 * there is none, spawns fail with FUT_EINVAL) with 'policy' (enum
 * fut_scope_policy). 's' must not move afterwards. Thread: any. */
FUT_EXTERN void fut_scope_init(struct fut_scope *s, struct fut_runtime *rt,
                               int policy);

/** The same, with the scope's token a child of 'parent' (cancelling
 * 'parent' cancels the token that the scope's children read; it does not
 * drop them - that is fut_scope_cancel's job). 'parent' must outlive the
 * scope. Pass fut_scope_token(outer) to nest scopes. */
FUT_EXTERN void fut_scope_init_child(struct fut_scope *s,
                                     struct fut_runtime *rt, int policy,
                                     struct fut_token *parent);

/** \struct fut_scope_opts
 * What a spawn records besides the child itself; all optional
 * (fut_scope_opts_init: none). */
#define FUT_SCOPE_NONE ((uint32_t)0xffffffffu) /**< no such member */
struct fut_scope_opts {
    uint32_t result_off; /**< offset of an 'int' result member in the child
                            future (FUT_SCOPE_RESULT), or FUT_SCOPE_NONE:
                            the child's result is 0 when it completes */
    uint32_t value_off;  /**< offset of an 'intptr_t' output member, copied
                            into fut_scope_done.value, or FUT_SCOPE_NONE */
    uint32_t out_off;    /**< output bytes copied to 'out_dst' when the
                            child completes (FUT_SCOPE_OUTPUT) */
    uint32_t out_len;    /**< 0: none */
    void *out_dst;       /**< caller storage; must live as long as the
                            scope (children cannot outlive it) */
    int *result_dst;     /**< NULL, or where the child's result is stored
                            when it finishes (FUT_ECANCELED if dropped) */
    intptr_t tag;        /**< copied into fut_scope_done.tag */
};

/** Fills 'o' with the defaults: no result or value member (FUT_SCOPE_NONE),
 * no output copy, no result destination, tag 0. */
FUT_EXTERN void fut_scope_opts_init(struct fut_scope_opts *o);
/** Sets o->result_off to 'member' (an int) of the child's struct 'type'. */
#define FUT_SCOPE_RESULT(o, type, member)                                    \
    ((o)->result_off = (uint32_t)offsetof(type, member))
/** Sets o->value_off to 'member' (an intptr_t) of the child's struct
 * 'type'. */
#define FUT_SCOPE_VALUE(o, type, member)                                     \
    ((o)->value_off = (uint32_t)offsetof(type, member))
/** Has 'member' of the child's struct 'type' copied to 'dst' when the
 * child completes (sets out_off, out_len, out_dst). */
#define FUT_SCOPE_OUTPUT(o, type, member, dst)                               \
    ((o)->out_off = (uint32_t)offsetof(type, member),                        \
     (o)->out_len = (uint32_t)sizeof(((type *)0)->member),                   \
     (o)->out_dst = (dst))

/** Spawns a copy of the future 'f' ('size' bytes, never polled, holding no
 * pointer into itself: the fut_spawn rules) as a child of 's'. 'opts' may
 * be NULL. Returns 0; FUT_ECANCELED when the scope is cancelled (or is
 * being dropped); FUT_EINVAL (no runtime), FUT_ESHUTDOWN, FUT_ENOMEM as
 * fut_spawn. On error nothing was copied: 'f' is still the caller's.
 * Thread: the scope's owner or a task of its tree (see the top).
 * Futures above 4 KiB are staged through one temporary allocation. */
#define fut_scope_spawn(s, f, size, opts)                                    \
    fut_scope_spawn_at((s), FUT_AS_FUTURE(f), (size), (opts), __FILE__,      \
                       __LINE__)
/** The function behind fut_scope_spawn(), which passes its call site as
 * 'file' and 'line' (for task dumps and debug reports). */
FUT_EXTERN int fut_scope_spawn_at(struct fut_scope *s,
                                  const struct fut_future *f, size_t size,
                                  const struct fut_scope_opts *opts,
                                  const char *file, int line);

/** Cancels the scope: its token is cancelled, every child is aborted
 * (idle: dropped before this returns where the runtime allows it - any
 * thread on the multi-thread runtime, the runtime's thread on the
 * current-thread one; running: right after its poll; queued: when its
 * worker reaches it), and later spawns fail with FUT_ECANCELED. Does not
 * wait: the scope future completes (FUT_ECANCELED) once every child is
 * gone. Idempotent. Thread: any. */
FUT_EXTERN void fut_scope_cancel(struct fut_scope *s);

/** The scope's token (cancelled by fut_scope_cancel, by a FAIL_FAST
 * failure, and with the parent token given at init). Children read it to
 * wind down; valid as long as the scope. Thread: any. */
FUT_EXTERN struct fut_token *fut_scope_token(struct fut_scope *s);

/** Children not yet finished plus finished ones whose record nobody took
 * yet (a snapshot). Thread: any. */
FUT_EXTERN uint64_t fut_scope_outstanding(struct fut_scope *s);

/** The record of a finished child. */
struct fut_scope_done {
    intptr_t tag;   /**< the spawn's opts->tag */
    intptr_t value; /**< the child's value member (opts->value_off), or 0 */
    int result;     /**< its result (see the top); FUT_ECANCELED: dropped */
    int completed;  /**< 1: it ran to completion; 0: it was dropped */
};

/** fut_scope_next: the next finished child, in the order they finished.
 * Output: 'has' = 1 with 'done' filled in; or 'has' = 0 when no child is
 * outstanding (none running, no record left) - the end, for now: a later
 * spawn makes a new fut_scope_next find more. Polls after READY return
 * READY with the same output.
 * cancel-safe: a record is taken only by the poll that returns READY
 * with it. Thread: the scope's owner. */
struct fut_scope_next {
    struct fut_future base;     /**< the future header (fut_poll, fut_drop) */
    struct fut_scope *scope;    /**< private */
    int has;                    /**< output */
    struct fut_scope_done done; /**< output */
};

/** Initialises 'n' over 's' (which must outlive it). */
FUT_EXTERN void fut_scope_next_init(struct fut_scope_next *n,
                                    struct fut_scope *s);

/** The same as a stream (C15) of struct fut_scope_done items: END once no
 * child is outstanding (and END for ever after, C15: use fut_scope_next
 * to go on after new spawns). cancel-safe. Thread: the scope's owner. */
struct fut_scope_stream {
    struct fut_stream base;  /**< the stream header (fut_stream_poll_next) */
    struct fut_scope *scope; /**< private */
};

/** Initialises 'st' over 's' (which must outlive it). */
FUT_EXTERN void fut_scope_stream_init(struct fut_scope_stream *st,
                                      struct fut_scope *s);

/* ------------------------------------------------------ graceful shutdown */

/** fut_shutdown: graceful shutdown of a scope, as one future.
 *
 *   1. waits for a signal on 'sig' (a handle from fut_signal_open, e.g.
 *      for SIGINT and SIGTERM; NULL: none), for 'trigger' to be cancelled
 *      (NULL: none), or for the scope to finish on its own;
 *   2. cancels the scope's token: children that read it stop accepting,
 *      finish what they were doing and return;
 *   3. gives them until 'grace_ns' from then (the scope completing ends
 *      the wait early);
 *   4. then cancels the scope (drops every child still running) and
 *      waits for their drops.
 *
 * Output: 'result' = 0 when every child finished within the grace period
 * (or on its own), FUT_ETIMEDOUT when some had to be dropped; 'signo' =
 * the signal that started it (0: the trigger or the scope itself);
 * 'dropped' = children dropped at the end of the grace period. The scope
 * has completed when this is READY (read its output); it is not dropped.
 * Polls after READY return READY.
 * 'sig' stays the caller's (open it from the main thread before the
 * runtime starts its threads: fut_signal_open's rule; close it after).
 * Needs the runtime's driver (timers, signals).
 * Cancel safety: dropping it stops listening and drops the timer; the
 * scope is untouched (it is the caller's). Must not move after its first
 * poll. */
struct fut_shutdown {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    int result;             /**< output */
    int signo;              /**< output */
    uint64_t dropped;       /**< output */
    /* private */
    struct fut_scope *scope;   /**< private: the scope shut down */
    struct fut_token *trigger; /**< private: starts the shutdown, or NULL */
    int64_t grace_ns;          /**< private: the grace period */
    struct fut_io *sig;        /**< private: signals that start it, or NULL */
    int stage;                 /**< private: where it is (shutdown.c) */
    uint64_t cancelled0; /**< private: 'cancelled' when the grace ended */
    struct fut_signal_recv rx; /**< private: waits for a signal */
    struct fut_token_wait tw;  /**< private: waits for the trigger */
    struct fut_sleep sleep;    /**< private: the grace period's timer */
};

/** Initialises 'sd' over 'scope' (initialised; outlives 'sd'); 'grace_ns'
 * < 0: wait for ever (never drop). Thread: any. */
FUT_EXTERN void fut_shutdown_init(struct fut_shutdown *sd,
                                  struct fut_scope *scope,
                                  struct fut_token *trigger,
                                  struct fut_io *sig, int64_t grace_ns);

/* -------------------------------------------------------- await-tree dump */

/** Writes the live tree of the runtime's tasks into 'buf' (NUL-terminated,
 * truncated to 'len'): one entry per task - its future's name, spawn site
 * (debug builds), then indented the futures it is waiting on (each
 * future's 'awaiting' child, or all of its 'children'), scopes with their
 * counts; the children of a scope are listed under the task that owns
 * the scope. Cheap: the multi-thread runtime pauses its workers only
 * while the lists are read (each worker reads its own), never for longer
 * than 100 ms (a worker that does not answer by then is left out; its
 * tasks are missing and the others are listed by name only).
 * Returns the length of the whole text (like snprintf: may exceed 'len'),
 * or FUT_EINVAL (not called from a task or block_on of 'rt' - NULL: the
 * current runtime), FUT_EBUSY (another dump is running), FUT_ENOMEM.
 * Thread: a task of 'rt' or a thread inside fut_block_on(rt). Blocks that
 * thread for the dump's duration (a diagnostic, not for hot paths). */
FUT_EXTERN long fut_runtime_dump(struct fut_runtime *rt, char *buf,
                                 size_t len);

FUT_END_DECLS

#endif /* FUT_SCOPE_H */
