/* SPDX-License-Identifier: MIT */
/** \file
 * fut channels: mpsc (bounded and unbounded), broadcast, watch. The
 * oneshot is in fut/cell.h; all of them share one error vocabulary:
 *
 *   FUT_ECLOSED  the other side is gone (or the channel was closed); for
 *                a receiver: every buffered message was received too
 *   FUT_EEMPTY   nothing to receive right now (try_recv)
 *   FUT_EFULL    no room to send right now (try_send)
 *   FUT_ELAGGED  a broadcast receiver fell behind and skipped messages
 *
 * Messages are fixed-size values ('msg_size' bytes, given at creation)
 * copied in and out; a message's bytes belong to the channel from a
 * successful send until a receive copies them out. Senders never give up
 * a value they failed to send: a send that fails or is dropped before it
 * completed has not read the value, which is still the caller's (C has no
 * moves - the send future only reads the value when it succeeds).
 *
 * Handles (tx, rx) are values naming one shared channel allocation; each
 * must be dropped once (fut_x_tx_drop / fut_x_rx_drop; dropping an empty
 * handle does nothing). The channel is freed when the last handle goes.
 * A handle may move between threads and be used on any thread, by one
 * thread at a time; clones are used independently.
 *
 * Cancel safety (C12) is declared on each future: cancel-safe (dropping it
 * loses nothing) or loses-position (it loses a place in a queue of
 * senders; the value is still the caller's and any capacity already
 * handed to it goes to the next sender).
 */
#ifndef FUT_CHAN_H
#define FUT_CHAN_H

#include "fut/core.h"
#include "fut/stream.h"
#include "fut/sync.h"

FUT_BEGIN_DECLS

/* ------------------------------------------------------------------ mpsc */

/** Largest capacity of a bounded mpsc channel. */
#define FUT_MPSC_MAX_CAPACITY ((size_t)1 << 28)

struct fut__mpsc;

/** A sending handle; clone it for more senders. Empty (ch == NULL) once
 * dropped. */
struct fut_mpsc_tx {
    struct fut__mpsc *ch; /**< private */
    uint32_t gen;         /**< private: debug builds' copy check */
};

/** The receiving handle: one per channel.
 * Both handles are unique owners: move them (copy, never use the original
 * again) or clone a sender with fut_mpsc_tx_clone, but never duplicate
 * one by copying - a copy used after its original was dropped aborts in
 * debug builds, naming the call (docs/design.md, "Programming errors"). */
struct fut_mpsc_rx {
    struct fut__mpsc *ch; /**< private */
    uint32_t gen;         /**< private: debug builds' copy check */
};

/** Creates a bounded channel of 'capacity' (1..FUT_MPSC_MAX_CAPACITY)
 * messages of 'msg_size' (> 0) bytes: senders wait while 'capacity'
 * messages (and reservations) are in it - backpressure. The ring is
 * allocated here, once: no allocation per message. 'dtor' (may be NULL)
 * is called on every message that was sent but will never be received
 * (buffered when the receiver is dropped, or sent after that by a permit
 * or a send that raced with the drop), on the thread that drops the
 * receiver or the last handle. Returns 0 with both handles set,
 * FUT_EINVAL (bad size or capacity) or FUT_ENOMEM (handles empty). */
FUT_EXTERN int fut_mpsc_new(size_t capacity, size_t msg_size,
                            void (*dtor)(void *msg), struct fut_mpsc_tx *tx,
                            struct fut_mpsc_rx *rx);

/** Creates an unbounded channel: sends never wait (the buffer grows by
 * doubling; a send whose growth fails returns FUT_ENOMEM). Sends and
 * receives take a short internal lock. No reserve. Otherwise as
 * fut_mpsc_new. */
FUT_EXTERN int fut_mpsc_unbounded_new(size_t msg_size,
                                      void (*dtor)(void *msg),
                                      struct fut_mpsc_tx *tx,
                                      struct fut_mpsc_rx *rx);

/** A new sender for the channel of 'tx'. 0, or FUT_EINVAL when 'tx' is
 * empty ('*out' empty). Thread: any. */
FUT_EXTERN int fut_mpsc_tx_clone(const struct fut_mpsc_tx *tx,
                                 struct fut_mpsc_tx *out);

/** Drops a sender. When the last sender (and the last permit) is gone the
 * receiver gets the buffered messages, then FUT_ECLOSED. */
FUT_EXTERN void fut_mpsc_tx_drop(struct fut_mpsc_tx *tx);

/** 1 when sends would fail with FUT_ECLOSED (the receiver was dropped or
 * closed, or 'tx' is empty). */
FUT_EXTERN int fut_mpsc_tx_is_closed(const struct fut_mpsc_tx *tx);

/** Sends without waiting. Returns 0 (the message is the channel's);
 * FUT_EFULL (bounded: no room, or senders are queued for room - FIFO);
 * FUT_ECLOSED (receiver dropped or closed); FUT_ENOMEM (unbounded: the
 * buffer could not grow). On failure 'msg' was not read. Thread: any. */
FUT_EXTERN int fut_mpsc_try_send(struct fut_mpsc_tx *tx, const void *msg);

/** The send future: waits for room, then copies the 'msg_size' bytes at
 * 'msg' (read at that moment: they must stay valid and unchanged until
 * the future is READY or dropped). Output: 'result' = 0 when the message
 * is in the channel, FUT_ECLOSED when the receiver is gone or closed (the
 * value was not read), FUT_ENOMEM (unbounded growth failed). Polls after
 * READY return READY with the same result.
 * loses-position: dropping it before READY gives up its place in the
 * queue of waiting senders; the message was not sent and is still the
 * caller's (no data is lost); room already handed to it goes to the next
 * sender. */
struct fut_mpsc_send {
    struct fut_future base;   /**< the future header (fut_poll, fut_drop) */
    struct fut_mpsc_tx *tx;   /**< private */
    const void *msg;          /**< private */
    struct fut_sync_waiter w; /**< private */
    int result;               /**< output */
};

/** 'tx' must outlive the future. */
FUT_EXTERN void fut_mpsc_send_init(struct fut_mpsc_send *f,
                                   struct fut_mpsc_tx *tx, const void *msg);

/** Room for one message, reserved: fut_mpsc_permit_send cannot find the
 * channel full. A permit counts as a sender (the stream does not end
 * while it lives). Send it or drop it, once; any thread. Empty
 * (ch == NULL) afterwards. */
struct fut_mpsc_permit {
    struct fut__mpsc *ch; /**< private */
};

/** Reserves without waiting: 0 with '*p' set; FUT_EFULL, FUT_ECLOSED;
 * FUT_EINVAL for an unbounded channel ('*p' empty on failure). */
FUT_EXTERN int fut_mpsc_try_reserve(struct fut_mpsc_tx *tx,
                                    struct fut_mpsc_permit *p);

/** Sends with a permit (consumed in every case). Never waits and never
 * finds the channel full. Returns 0, or FUT_ECLOSED when the receiver has
 * been dropped ('msg' was not read; the room is given back), or
 * FUT_EINVAL for an empty permit. After fut_mpsc_close (receiver still
 * alive) permits still deliver, as in Tokio. */
FUT_EXTERN int fut_mpsc_permit_send(struct fut_mpsc_permit *p,
                                    const void *msg);

/** Gives the reserved room back without sending. */
FUT_EXTERN void fut_mpsc_permit_drop(struct fut_mpsc_permit *p);

/** The reserve future (bounded channels). Output: 'result' = 0 with
 * 'permit' set, FUT_ECLOSED (receiver gone or closed), FUT_EINVAL
 * (unbounded channel). Polls after READY return READY, output unchanged.
 * loses-position: dropping it before READY gives up its place in the
 * queue; room already handed to it goes to the next sender. After READY
 * the permit is the caller's (dropping the future does not drop it). */
struct fut_mpsc_reserve {
    struct fut_future base;   /**< the future header (fut_poll, fut_drop) */
    struct fut_mpsc_tx *tx;   /**< private */
    struct fut_sync_waiter w; /**< private */
    int result;               /**< output */
    struct fut_mpsc_permit permit; /**< output */
};

/** Initialises 'f' over 'tx' (which must outlive the future). */
FUT_EXTERN void fut_mpsc_reserve_init(struct fut_mpsc_reserve *f,
                                      struct fut_mpsc_tx *tx);

/** Receives without waiting: 0 with the message copied to 'out';
 * FUT_EEMPTY (nothing now); FUT_ECLOSED (every sender and permit is gone,
 * or the channel was closed and every reservation settled, and every
 * buffered message was received: the end). Thread: the receiver's. */
FUT_EXTERN int fut_mpsc_try_recv(struct fut_mpsc_rx *rx, void *out);

/** Stream-style poll (C15): FUT_READY with '*result' = 0 and the next
 * message in 'out', or with '*result' = FUT_ECLOSED at the end (and on
 * every later call); FUT_PENDING having registered cx's waker. In the
 * instant a sender on another thread is between claiming a slot and
 * writing it, the poll returns FUT_PENDING having woken cx's waker itself
 * (a retry, not a sleep). A registered waker stays in the channel until
 * it is woken, replaced by a later poll, or the receiver is dropped (the
 * recv future withdraws its own when dropped). One receive at a time:
 * the receiver is single-consumer. */
FUT_EXTERN int fut_mpsc_poll_recv(struct fut_mpsc_rx *rx,
                                  struct fut_context *cx, void *out,
                                  int *result);

/** The receiver stops the channel without dropping: later sends (and
 * waiting ones) fail with FUT_ECLOSED; buffered messages, and messages of
 * permits still out, can still be received, then FUT_ECLOSED. Idempotent. */
FUT_EXTERN void fut_mpsc_close(struct fut_mpsc_rx *rx);

/** Drops the receiver: closes the channel, waiting senders get
 * FUT_ECLOSED, buffered messages go to the dtor. */
FUT_EXTERN void fut_mpsc_rx_drop(struct fut_mpsc_rx *rx);

/** The receive future. Output: 'result' = 0 with the message copied to
 * 'out' (given at init, 'msg_size' bytes), or FUT_ECLOSED at the end of
 * the stream. Polls after READY return READY with the same result.
 * cancel-safe: a message is taken only in the poll that returns READY;
 * dropping the future before that leaves every message in the channel.
 * 'rx' must outlive the future. */
struct fut_mpsc_recv {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    struct fut_mpsc_rx *rx; /**< private */
    void *out;              /**< private */
    int registered;         /**< private: its waker is in the channel */
    int result;             /**< output */
};

/** Initialises 'f' over 'rx' (which must outlive the future); the message
 * goes to 'out' ('msg_size' bytes). */
FUT_EXTERN void fut_mpsc_recv_init(struct fut_mpsc_recv *f,
                                   struct fut_mpsc_rx *rx, void *out);

/** The receiver as a stream (fut/stream.h): items of 'msg_size' bytes,
 * FUT_STREAM_END after the last one. Takes ownership of '*rx' (left
 * empty); dropping the stream drops the receiver. cancel-safe (as recv). */
struct fut_mpsc_stream {
    struct fut_stream base; /**< the stream header (fut_stream_poll_next) */
    struct fut_mpsc_rx rx;  /**< private */
};

/** Initialises 's' taking ownership of '*rx' (left empty). */
FUT_EXTERN void fut_mpsc_stream_init(struct fut_mpsc_stream *s,
                                     struct fut_mpsc_rx *rx);

/* ------------------------------------------------------------- broadcast */

struct fut__bcast;

/** A sending handle (clone for more). */
struct fut_broadcast_tx {
    struct fut__bcast *ch; /**< private */
    uint32_t gen;          /**< private: debug builds' copy check */
};

/** A receiving handle: each receiver sees every message sent after it was
 * created (subscribed), unless it lags more than 'capacity' behind.
 * Senders and receivers are unique owners: clone or subscribe for more,
 * never duplicate one by copying - a copy used after its original was
 * dropped aborts in debug builds, naming the call. */
struct fut_broadcast_rx {
    struct fut__bcast *ch; /**< private */
    uint64_t next;         /**< private: position of the next message */
    uint32_t gen;          /**< private: debug builds' copy check */
};

/** Creates a channel keeping the last 'capacity' (>= 1) messages of
 * 'msg_size' (> 0) bytes, with one sender and one receiver. Every
 * receiver gets its own copy of each message's bytes, so messages should
 * be plain data (no ownership to release: there is no dtor). Returns 0,
 * FUT_EINVAL or FUT_ENOMEM. */
FUT_EXTERN int fut_broadcast_new(size_t capacity, size_t msg_size,
                                 struct fut_broadcast_tx *tx,
                                 struct fut_broadcast_rx *rx);

/** A new sender of the same channel in '*out'. Returns 0, or FUT_EINVAL
 * when 'tx' is empty (dropped). */
FUT_EXTERN int fut_broadcast_tx_clone(const struct fut_broadcast_tx *tx,
                                      struct fut_broadcast_tx *out);
/** When the last sender is gone, receivers get what is left, then
 * FUT_ECLOSED. */
FUT_EXTERN void fut_broadcast_tx_drop(struct fut_broadcast_tx *tx);

/** A new receiver that will see the messages sent from now on. */
FUT_EXTERN int fut_broadcast_subscribe(const struct fut_broadcast_tx *tx,
                                       struct fut_broadcast_rx *out);
/** A new receiver at the same position as 'rx'. */
FUT_EXTERN int fut_broadcast_rx_clone(const struct fut_broadcast_rx *rx,
                                      struct fut_broadcast_rx *out);
/** Drops the receiver. No-op on an empty handle. */
FUT_EXTERN void fut_broadcast_rx_drop(struct fut_broadcast_rx *rx);

/** Sends to every receiver; never waits: when the ring is full the oldest
 * message is overwritten (receivers that had not read it lag). Returns
 * the number of receivers (>= 1), or FUT_ECLOSED when there is none (the
 * message was not stored). Thread: any. */
FUT_EXTERN int fut_broadcast_send(struct fut_broadcast_tx *tx,
                                  const void *msg);

/** Without waiting: 0 with the next message in 'out'; FUT_EEMPTY;
 * FUT_ELAGGED with '*lagged' = how many messages this receiver missed (it
 * now points at the oldest one kept, which the next call returns);
 * FUT_ECLOSED (every sender gone and everything received). */
FUT_EXTERN int fut_broadcast_try_recv(struct fut_broadcast_rx *rx, void *out,
                                      uint64_t *lagged);

/** The receive future. Output: 'result' = 0 with the message in 'out',
 * FUT_ELAGGED with 'lagged' = messages missed (receive again for the
 * oldest one kept), or FUT_ECLOSED. Polls after READY return READY with
 * the output unchanged.
 * cancel-safe: the receiver's position only moves in the poll that
 * returns READY; dropping it before loses nothing. */
struct fut_broadcast_recv {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    struct fut_broadcast_rx *rx; /**< private */
    void *out;                   /**< private */
    struct fut_sync_waiter w;    /**< private */
    int result;                  /**< output */
    uint64_t lagged;             /**< output (FUT_ELAGGED) */
};

/** Initialises 'f' over 'rx' (which must outlive the future); the
 * message goes to 'out' ('msg_size' bytes). */
FUT_EXTERN void fut_broadcast_recv_init(struct fut_broadcast_recv *f,
                                        struct fut_broadcast_rx *rx,
                                        void *out);

/* ----------------------------------------------------------------- watch */

struct fut__watch;

/** A sending handle (clone for more). */
struct fut_watch_tx {
    struct fut__watch *ch; /**< private */
    uint32_t gen;          /**< private: debug builds' copy check */
};

/** A receiving handle: reads the latest value and waits for changes.
 * Senders and receivers are unique owners: clone or subscribe for more,
 * never duplicate one by copying - a copy used after its original was
 * dropped aborts in debug builds, naming the call. */
struct fut_watch_rx {
    struct fut__watch *ch; /**< private */
    uint64_t seen;         /**< private: version last marked seen */
    uint32_t gen;          /**< private: debug builds' copy check */
};

/** Creates a channel holding one value of 'size' (> 0) bytes, initially a
 * copy of 'init' (marked seen by 'rx'). Returns 0, FUT_EINVAL, FUT_ENOMEM.
 * Values should be plain data (copied to every reader; no dtor). */
FUT_EXTERN int fut_watch_new(size_t size, const void *init,
                             struct fut_watch_tx *tx,
                             struct fut_watch_rx *rx);

/** A new sender of the same channel in '*out'. Returns 0, or FUT_EINVAL
 * when 'tx' is empty (dropped). */
FUT_EXTERN int fut_watch_tx_clone(const struct fut_watch_tx *tx,
                                  struct fut_watch_tx *out);
/** When the last sender is gone, fut_watch_changed completes with
 * FUT_ECLOSED (the last value stays readable). */
FUT_EXTERN void fut_watch_tx_drop(struct fut_watch_tx *tx);
/** A new receiver; the current value counts as seen. */
FUT_EXTERN int fut_watch_subscribe(const struct fut_watch_tx *tx,
                                   struct fut_watch_rx *out);
/** A new receiver in '*out' that has seen what 'rx' has seen. Returns 0,
 * or FUT_EINVAL when 'rx' is empty (dropped). */
FUT_EXTERN int fut_watch_rx_clone(const struct fut_watch_rx *rx,
                                  struct fut_watch_rx *out);
/** Drops the receiver. No-op on an empty handle. */
FUT_EXTERN void fut_watch_rx_drop(struct fut_watch_rx *rx);

/** Stores a copy of 'value' and wakes every fut_watch_changed. Returns 0,
 * or FUT_ECLOSED when there is no receiver (nothing stored). Thread:
 * any. */
FUT_EXTERN int fut_watch_send(struct fut_watch_tx *tx, const void *value);
/** Stores 'value' whether or not receivers exist; copies the previous
 * value to 'old' (may be NULL). */
FUT_EXTERN void fut_watch_send_replace(struct fut_watch_tx *tx,
                                       const void *value, void *old);

/** Copies the current value to 'out' without marking it seen. */
FUT_EXTERN void fut_watch_borrow(const struct fut_watch_rx *rx, void *out);
/** Copies the current value to 'out' and marks it seen. */
FUT_EXTERN void fut_watch_borrow_and_update(struct fut_watch_rx *rx,
                                            void *out);
/** 1 when a value newer than the one seen was sent; otherwise FUT_ECLOSED
 * when every sender is gone, else 0. */
FUT_EXTERN int fut_watch_has_changed(const struct fut_watch_rx *rx);

/** The changed future: READY when a value newer than the last one seen
 * was sent (then marks it seen: read it with fut_watch_borrow). Output:
 * 'result' = 0, or FUT_ECLOSED when every sender was dropped with no
 * unseen value. Polls after READY return READY, result unchanged.
 * cancel-safe: the receiver's seen version only moves in the poll that
 * returns READY. */
struct fut_watch_changed {
    struct fut_future base;   /**< the future header (fut_poll, fut_drop) */
    struct fut_watch_rx *rx;  /**< private */
    struct fut_sync_waiter w; /**< private */
    int result;               /**< output */
};

/** Initialises 'f' over 'rx' (which must outlive the future). */
FUT_EXTERN void fut_watch_changed_init(struct fut_watch_changed *f,
                                       struct fut_watch_rx *rx);

FUT_END_DECLS

#endif /* FUT_CHAN_H */
