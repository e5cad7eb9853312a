/* SPDX-License-Identifier: MIT */
/** \file
 * Write-once result cells and the oneshot channel built on them.
 *
 * A cell is PENDING until one completer stores a value (READY); one
 * consumer then takes it (TAKEN). The transition that picks the winning
 * completer is a single atomic read-modify-write, so racing completers get
 * exactly one winner, and losers keep their value (C1, C2). Racing takers
 * get one value and "absent" for the rest (C3). A consumer that polls while
 * the completer fires is always woken (C5), and it sees every byte of the
 * value once it sees READY (C4). No lock is taken on any path.
 */
#ifndef FUT_CELL_H
#define FUT_CELL_H

#include "fut/core.h"

FUT_BEGIN_DECLS

/* ------------------------------------------------------------------ cell */

/** Storage for a cell; embed it where the cell's users can all reach it
 * (the caller keeps it alive while any completer or consumer may touch
 * it). Fields are private. */
struct fut_cell {
    uintptr_t priv_[6];
};

/** Initialises an empty (PENDING) cell whose value of 'size' bytes will be
 * stored at 'slot' (caller storage that lives as long as the cell). */
FUT_EXTERN void fut_cell_init(struct fut_cell *c, void *slot, size_t size);

/** Completes the cell with a copy of the 'size' bytes at 'value'. Any
 * number of threads may race here.
 * Returns 0 when this call won (the bytes are now the cell's);
 * FUT_ELOST when another completer won first, FUT_ECLOSED when the
 * consumer has closed the cell: in both cases nothing was copied and the
 * value is still the caller's. Wakes the registered consumer, if any.
 * Thread: any. Never blocks. */
FUT_EXTERN int fut_cell_complete(struct fut_cell *c, const void *value);

/** Takes the value if it is there. Any number of threads may race here.
 * Returns 1 with the value copied to 'out' (this caller got it); 0 when
 * the value was already taken, or will never come (closed): "absent" is not
 * an error; FUT_EAGAIN while the cell is still PENDING.
 * Thread: any. Never blocks. */
FUT_EXTERN int fut_cell_take(struct fut_cell *c, void *out);

/** Polls for the value on behalf of the task in 'cx': FUT_READY with
 * '*got' = 1 and the value in 'out', FUT_READY with '*got' = 0 when absent
 * (taken already, or closed), or FUT_PENDING having registered cx's waker
 * (C5: a completion that lands during registration is never missed).
 * Only one thread at a time may poll a given cell (fut_cell_take may race
 * with it). Polling again after READY returns READY with '*got' = 0. */
FUT_EXTERN int fut_cell_poll(struct fut_cell *c, struct fut_context *cx,
                             void *out, int *got);

/** The consumer gives up: later completions fail with FUT_ECLOSED and keep
 * their value; a registered waker is dropped. Returns 1 when a value had
 * been published and not taken (the caller then owns the bytes in the slot
 * and must release what they refer to), 0 otherwise. Call once, from the
 * polling side. */
FUT_EXTERN int fut_cell_close(struct fut_cell *c);

/** 1 when a value has been published (READY or TAKEN). Thread: any. */
FUT_EXTERN int fut_cell_is_complete(const struct fut_cell *c);

/* --------------------------------------------------------------- oneshot */

/** A oneshot channel: one value from one sender to one receiver, in one
 * allocation (cell + value) shared by the two handles. Either handle may
 * be used or dropped on any thread. */
struct fut__oneshot;
/** The two ends. A handle is a unique owner: it may be moved (copied,
 * with the original never used again) but not duplicated - using a copy
 * after the original was sent, received or dropped is a programming
 * error, which debug builds catch (an abort naming the call). */
struct fut_oneshot_tx {
    struct fut__oneshot *ch; /**< private; NULL once sent or dropped */
    uint32_t gen;            /**< private: debug builds' copy check */
};
/** The receiving end (see fut_oneshot_tx). */
struct fut_oneshot_rx {
    struct fut__oneshot *ch; /**< private; NULL once received or dropped */
    uint32_t gen;            /**< private: debug builds' copy check */
};

/** Creates a channel for values of 'size' bytes. 'dtor' (may be NULL) is
 * called on a value that was sent but never received, when the channel is
 * freed. Returns 0, FUT_EINVAL (size above 4 GiB) or FUT_ENOMEM (nothing
 * allocated). On a runtime's thread the block comes from that runtime's
 * block cache (no malloc); elsewhere from the allocator hook. Either way
 * the handles may move to and be dropped on any thread. */
FUT_EXTERN int fut_oneshot_new(size_t size, void (*dtor)(void *value),
                               struct fut_oneshot_tx *tx,
                               struct fut_oneshot_rx *rx);

/** Sends a copy of the value and consumes 'tx' (in every case).
 * Returns 0 when the value was delivered to the channel, or FUT_ECLOSED
 * when the receiver is gone: the value was not taken and is still the
 * caller's. Wakes the receiver. Thread: any. A second send on a consumed
 * sender is a programming error: debug builds abort naming it, release
 * builds return FUT_EINVAL (nothing sent). */
FUT_EXTERN int fut_oneshot_send(struct fut_oneshot_tx *tx, const void *value);

/** Drops the sender without sending: the receiver completes with
 * FUT_ECLOSED. No-op on a consumed handle. */
FUT_EXTERN void fut_oneshot_tx_drop(struct fut_oneshot_tx *tx);

/** 1 when the receiver has been dropped (a send would fail). */
FUT_EXTERN int fut_oneshot_tx_is_closed(const struct fut_oneshot_tx *tx);

/** Non-blocking receive: 0 with the value in 'out' (consumes 'rx'),
 * FUT_EEMPTY when nothing was sent yet (rx still valid), FUT_ECLOSED when
 * the sender was dropped without sending (consumes 'rx'). */
FUT_EXTERN int fut_oneshot_try_recv(struct fut_oneshot_rx *rx, void *out);

/** Drops the receiver; a value already sent is passed to the dtor. */
FUT_EXTERN void fut_oneshot_rx_drop(struct fut_oneshot_rx *rx);

/** The receive future. Output: 'result' = 0 with the value copied to the
 * 'out' given at init, or FUT_ECLOSED when the sender was dropped without
 * sending. Polls after READY return READY with the same 'result'.
 * cancel-safe: dropping it before READY drops the receiver; a value sent
 * later is refused (the sender gets FUT_ECLOSED and keeps it), a value
 * already sent goes to the dtor - no value is ever lost silently. */
struct fut_oneshot_recv {
    struct fut_future base;   /**< the future header (fut_poll, fut_drop) */
    struct fut_oneshot_rx rx; /**< private: owned by the future */
    void *out;                /**< private: where the value goes */
    int result;               /**< output */
};

/** Takes ownership of '*rx' (it is left empty). */
FUT_EXTERN void fut_oneshot_recv_init(struct fut_oneshot_recv *f,
                                      struct fut_oneshot_rx *rx, void *out);

FUT_END_DECLS

#endif /* FUT_CELL_H */
