/* SPDX-License-Identifier: MIT */
/** \file
 * fut cancel tokens: cooperative cancellation (C17).
 *
 * Dropping a future cancels it at once, wherever it stands (C11). A cancel
 * token is the gentle counterpart: a flag that work reads to wind down at
 * a point of its choosing (finish the request, flush, say goodbye), and
 * that can also be awaited like any future, so it can be selected on.
 *
 *   fut_token_cancel     sets the flag (once; later calls do nothing),
 *                        wakes every fut_token_wait and cancels every
 *                        child token;
 *   fut_token_is_cancelled   reads it (one acquire load);
 *   fut_token_wait       a future READY once the token is cancelled;
 *   fut_until_cancelled  runs a future until the token fires, then drops
 *                        it where it stood (result FUT_ECANCELED).
 *
 * Child tokens (fut_token_init_child) are cancelled with their parent
 * (and its parent...), but can be cancelled alone without touching the
 * parent or their siblings. Every task scope (fut/scope.h) carries one.
 *
 * Storage: a token lives in caller storage and must not move after
 * fut_token_init (waiters and child tokens point at it), like a mutex;
 * embed it where it stays, or initialise it inside a poll after
 * FUT_BEGIN. A parent must outlive its children: fini the children first
 * (fut_token_fini of a parent that still has children detaches them;
 * they keep their own flag).
 *
 * Threads: every call may be made from any thread, at any time between
 * init and fini; none blocks (a short internal lock, never held while a
 * destructor runs). Not async-signal-safe: from a signal handler, use
 * fut_signal_recv (fut/net.h) or fut_shutdown (fut/scope.h).
 * Lock order: a parent's lock before its children's; wakers are called
 * with the lock of an ancestor token held (they must not call back into
 * the token tree - task wakers never do).
 */
#ifndef FUT_CANCEL_H
#define FUT_CANCEL_H

#include "fut/core.h"
#include "fut/sync.h"

FUT_BEGIN_DECLS

/** A cancel token. Fields are private. */
struct fut_token {
    uintptr_t priv_[10];
};

/** Initialises 't', not cancelled, without a parent. Thread: any. */
FUT_EXTERN void fut_token_init(struct fut_token *t);

/** Initialises 't' as a child of 'parent' (initialised, not finalised):
 * cancelled when 'parent' is (at once, if it already is). Thread: any. */
FUT_EXTERN void fut_token_init_child(struct fut_token *t,
                                     struct fut_token *parent);

/** Cancels 't' and, recursively, every child token it has; wakes every
 * fut_token_wait registered on them. Idempotent. Thread: any; never
 * blocks beyond the tokens' short locks. */
FUT_EXTERN void fut_token_cancel(struct fut_token *t);

/** 1 once 't' is cancelled (by itself or an ancestor), else 0. Acquire:
 * whatever the canceller wrote before fut_token_cancel is visible after a
 * 1. Thread: any. */
FUT_EXTERN int fut_token_is_cancelled(const struct fut_token *t);

/** Finalises 't': detaches it from its parent. No fut_token_wait may
 * still be registered on it (aborts in debug builds); child tokens still
 * attached are detached (they stay valid, without a parent). Thread: any,
 * once nothing else uses 't'. */
FUT_EXTERN void fut_token_fini(struct fut_token *t);

/** fut_token_wait: READY once the token is cancelled. Output: 'result' =
 * 0. Polls after READY return READY. Must not move after its first poll
 * (its waiter node is linked into the token).
 * cancel-safe: dropping it unregisters the waiter and loses nothing (the
 * flag stays readable). Thread: one thread at a time (any). */
struct fut_token_wait {
    struct fut_future base;   /**< the future header (fut_poll, fut_drop) */
    struct fut_token *token;  /**< private */
    struct fut_sync_waiter w; /**< private */
    int result;               /**< output */
};

/** Initialises 'f' over 'token' (which must outlive 'f'). */
FUT_EXTERN void fut_token_wait_init(struct fut_token_wait *f,
                                    struct fut_token *token);

/** fut_until_cancelled: polls 'inner' until it is READY or the token is
 * cancelled, whichever comes first; the token is looked at first (a
 * cancellation seen in the same poll as inner's READY wins: biased, like
 * tokio-util's run_until_cancelled). On cancellation 'inner' is dropped
 * where it stood, in that poll. Output: 'result' = 0 (inner completed: its
 * output is in its struct) or FUT_ECANCELED. Polls after READY return
 * READY.
 * Cancel safety: that of 'inner' (dropping this drops it; the token's
 * waiter is unregistered). 'inner' is caller storage (a pointer, like the
 * combinators' children): this future owns its drop; it must not move
 * after the first poll. */
struct fut_until_cancelled {
    struct fut_future base;     /**< the future header (fut_poll, fut_drop) */
    struct fut_future *inner;   /**< private */
    struct fut_token_wait wait; /**< private */
    int result;                 /**< output */
};

/** Initialises 'u' over 'inner' (caller storage; 'u' owns its drop) and
 * 'token' (which must outlive 'u'). */
FUT_EXTERN void fut_until_cancelled_init(struct fut_until_cancelled *u,
                                         struct fut_future *inner,
                                         struct fut_token *token);

FUT_END_DECLS

#endif /* FUT_CANCEL_H */
