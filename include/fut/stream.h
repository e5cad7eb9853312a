/* SPDX-License-Identifier: MIT */
/** \file
 * Streams: a sequence of items produced asynchronously (C15).
 *
 * A stream is a struct whose first member is the common header 'struct
 * fut_stream' (as a future's is 'struct fut_future'). Polling it for the
 * next item gives one of:
 *   FUT_STREAM_ITEM  an item was copied into the caller's buffer;
 *   FUT_STREAM_END   the stream is finished: every later poll returns
 *                    FUT_STREAM_END again, for ever (C15);
 *   FUT_PENDING      no item yet; the stream has arranged for cx's waker
 *                    to be woken when there may be one (C7), exactly as a
 *                    pending future does.
 * Items are fixed-size values ('item_size' bytes, in the header), copied
 * into the buffer the poller passes.
 *
 * Ownership: the caller owns every stream's storage. Adaptors (map,
 * filter, take) and consumers (fold, for_each, collect) own the *drop* of
 * the stream they wrap: dropping the outer one drops the inner one, in
 * any state (the drop cascades). The inner stream must not move and must
 * not be polled or dropped by anyone else afterwards. None of them
 * allocates, except collect (its result buffer).
 *
 * Threads: a stream is polled and dropped by one thread at a time.
 */
#ifndef FUT_STREAM_H
#define FUT_STREAM_H

#include "fut/core.h"

FUT_BEGIN_DECLS

/* ------------------------------------------------------------ interface */

/** Results of poll_next besides FUT_PENDING (0). */
enum fut_stream_result { FUT_STREAM_ITEM = 1, FUT_STREAM_END = 2 };

struct fut_stream;

/** The functions of a stream type: poll_next, drop and a name. */
struct fut_stream_vtable {
    /** Non-blocking: FUT_STREAM_ITEM with the next item copied to 'item'
     * ('item_size' bytes), FUT_STREAM_END, or FUT_PENDING having
     * registered cx->waker. Never blocks (C6). Call it through
     * fut_stream_poll_next, which makes END final (C15). */
    int (*poll_next)(struct fut_stream *s, struct fut_context *cx,
                     void *item);
    /** Releases everything the stream holds, in any state (C11); drops
     * the inner stream of an adaptor. Never frees the stream's own
     * storage. May be NULL when there is nothing to release. */
    void (*drop)(struct fut_stream *s);
    /** Name shown in dumps and debug reports. */
    const char *name;
};

/** The common header: the first member of every stream struct. */
struct fut_stream {
    const struct fut_stream_vtable *vt; /**< the stream's type */
    size_t item_size; /**< read-only: bytes of one item (> 0) */
    uint32_t flags;   /**< FUT_SF_* below */
};

#define FUT_SF_ENDED 1u   /**< poll_next returned FUT_STREAM_END: final */
#define FUT_SF_DROPPED 2u /**< drop ran; the stream may not be polled */

/** Any stream struct whose first member is a struct fut_stream. */
#define FUT_AS_STREAM(p) ((struct fut_stream *)(void *)(p))

/** Initialises the header; every *_init of a stream calls it. */
static inline void fut_stream_init(struct fut_stream *s,
                                   const struct fut_stream_vtable *vt,
                                   size_t item_size)
{
    if (item_size == 0)
        fut__assert_fail("stream item_size > 0", __FILE__, __LINE__);
    s->vt = vt;
    s->item_size = item_size;
    s->flags = 0;
}

/** Polls 's' for its next item into 'item' (a buffer of s->item_size
 * bytes). Returns FUT_STREAM_ITEM, FUT_STREAM_END or FUT_PENDING (see
 * the file comment). Once it returned FUT_STREAM_END it returns it again
 * without running the stream, leaving 'item' untouched (C15, for every
 * stream). Polling a dropped stream is a programming error (aborts). */
static inline int fut_stream_poll_next(struct fut_stream *s,
                                       struct fut_context *cx, void *item)
{
    if (s->flags & (FUT_SF_ENDED | FUT_SF_DROPPED)) {
        if (s->flags & FUT_SF_DROPPED)
            fut__assert_fail("stream poll after drop", __FILE__, __LINE__);
        return FUT_STREAM_END;
    }
    int r = s->vt->poll_next(s, cx, item);
    if (r == FUT_STREAM_END)
        s->flags |= FUT_SF_ENDED;
    return r;
}

/** Drops 's': releases what it holds, in whatever state it is (C11).
 * Idempotent; cannot fail. The storage stays the caller's. */
static inline void fut_stream_drop(struct fut_stream *s)
{
    if (s->flags & FUT_SF_DROPPED)
        return;
    s->flags |= FUT_SF_DROPPED;
    if (s->vt->drop)
        s->vt->drop(s);
}

/** 1 once 's' has returned FUT_STREAM_END. */
static inline int fut_stream_is_ended(const struct fut_stream *s)
{
    return (s->flags & FUT_SF_ENDED) != 0;
}

/** Scratch space for one item of up to FUT_STREAM_INLINE_ITEM bytes,
 * embedded in the adaptors and consumers that must pull an item of their
 * inner stream before handing it on. Larger items need caller scratch. */
#define FUT_STREAM_INLINE_ITEM 64
/** The inline scratch space itself (see FUT_STREAM_INLINE_ITEM). */
union fut_stream_item_buf {
    long double align_ld_; /**< alignment for any scalar item */
    long long align_ll_;   /**< alignment for any scalar item */
    void *align_p_;        /**< alignment for any scalar item */
    unsigned char bytes[FUT_STREAM_INLINE_ITEM]; /**< the item */
};

/* --------------------------------------------------------------- sources */

/** fut_stream_array: the items of an array, in order, then END. Never
 * PENDING. Each item is copied out. Holds nothing: drop does nothing.
 * Calls fut_coop_proceed before producing an item (it is a leaf, like a
 * ready future), so a consumer that loops over it still yields to other
 * tasks when the budget is spent (that poll returns FUT_PENDING).
 * Fields are private. */
struct fut_stream_array {
    struct fut_stream base; /**< the stream header (fut_stream_poll_next) */
    const unsigned char *items; /**< private: the caller's array */
    size_t n;                   /**< private: items in it */
    size_t next;                /**< private: the next one to produce */
};

/** Initialises 's' over 'n' items of 'item_size' (> 0) bytes at 'items'
 * (borrowed: the array must stay valid and unchanged while 's' is
 * polled). */
FUT_EXTERN void fut_stream_array_init(struct fut_stream_array *s,
                                      const void *items, size_t n,
                                      size_t item_size);

/* -------------------------------------------------------------- adaptors */

/** Turns one inner item ('in') into one outer item ('out'). Runs inside
 * poll, on the polling thread. */
typedef void (*fut_stream_map_fn)(const void *in, void *out, void *ud);

/** fut_stream_map: each item of 'inner' passed through fn; END when the
 * inner stream ends. PENDING when it is. Owns 'inner' (drop cascades).
 * Fields are private. */
struct fut_stream_map {
    struct fut_stream base;   /**< the stream header (fut_stream_poll_next) */
    struct fut_stream *inner; /**< private: owned */
    fut_stream_map_fn fn;     /**< private */
    void *ud;                 /**< private: passed to fn */
    void *scratch; /**< caller's buffer for an inner item, or NULL */
    union fut_stream_item_buf buf; /**< private: the inline buffer */
};

/** Initialises 'm' over 'inner', producing items of 'item_size' bytes.
 * 'scratch' holds one inner item while fn runs: NULL uses the inline
 * buffer (the inner item must fit in FUT_STREAM_INLINE_ITEM bytes;
 * aborts otherwise), or caller storage of inner->item_size bytes that
 * lives as long as 'm'. */
FUT_EXTERN void fut_stream_map_init(struct fut_stream_map *m,
                                    struct fut_stream *inner,
                                    size_t item_size, fut_stream_map_fn fn,
                                    void *ud, void *scratch);

/** Keeps an item when it returns nonzero. Runs inside poll. */
typedef int (*fut_stream_pred_fn)(const void *item, void *ud);

/** fut_stream_filter: the items of 'inner' for which pred returns nonzero
 * (same item size); END when the inner stream ends. One poll pulls inner
 * items until one is kept, the inner stream is PENDING (so is the filter)
 * or it ends; rejected items are gone. Owns 'inner'. Fields are
 * private. */
struct fut_stream_filter {
    struct fut_stream base;   /**< the stream header (fut_stream_poll_next) */
    struct fut_stream *inner; /**< private: owned */
    fut_stream_pred_fn pred;  /**< private */
    void *ud;                 /**< private: passed to pred */
};

/** Initialises 'fl' over 'inner' (now owned by 'fl'), keeping the items
 * for which pred(item, ud) returns nonzero. */
FUT_EXTERN void fut_stream_filter_init(struct fut_stream_filter *fl,
                                       struct fut_stream *inner,
                                       fut_stream_pred_fn pred, void *ud);

/** fut_stream_take: the first 'n' items of 'inner', then END (without
 * polling the inner stream again); END earlier if the inner stream ends.
 * Owns 'inner' (dropped with the take, not when the count runs out).
 * Fields are private. */
struct fut_stream_take {
    struct fut_stream base;   /**< the stream header (fut_stream_poll_next) */
    struct fut_stream *inner; /**< private: owned */
    size_t left;              /**< private: items still to pass on */
};

/** Initialises 't' over 'inner' (now owned by 't'), passing on its first
 * 'n' items. */
FUT_EXTERN void fut_stream_take_init(struct fut_stream_take *t,
                                     struct fut_stream *inner, size_t n);

/* ----------------------------------------------- consumers (as futures) */

/** Folds one item into the accumulator; returns the new accumulator. */
typedef intptr_t (*fut_stream_fold_fn)(intptr_t acc, const void *item,
                                       void *ud);

/** fut_stream_fold: a future that pulls every item of 's' and folds it
 * into 'acc' (acc = fn(acc, item, ud)); READY when the stream ends.
 * Output: 'acc'. Polls after READY return READY with 'acc' unchanged.
 * Owns 's' (dropped with the fold).
 * Cancel safety: that of the stream. An item is either still in the
 * stream or already folded into 'acc' (which stays readable after the
 * drop); none is pulled and lost in between. */
struct fut_stream_fold {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    struct fut_stream *s;   /**< private */
    fut_stream_fold_fn fn;  /**< private */
    void *ud;               /**< private */
    void *scratch;          /**< private: see fut_stream_map_init */
    int done;               /**< private */
    intptr_t acc;           /**< output */
    union fut_stream_item_buf buf; /**< private */
};

/** Initialises 'f' over 's' with the accumulator starting at 'init'.
 * 'scratch': as for fut_stream_map_init (one item of s->item_size). */
FUT_EXTERN void fut_stream_fold_init(struct fut_stream_fold *f,
                                     struct fut_stream *s, intptr_t init,
                                     fut_stream_fold_fn fn, void *ud,
                                     void *scratch);

/** Called for each item; returns 0 to go on, anything else to stop. */
typedef int (*fut_stream_each_fn)(const void *item, void *ud);

/** fut_stream_for_each: a future that calls fn on every item of 's'; READY
 * when the stream ends (result 0) or when fn returned nonzero (result =
 * that value; the rest of the stream is left unread, and dropped with the
 * for_each). Output: 'result', and 'count' = the items fn was called on.
 * Polls after READY return READY with both unchanged. Owns 's'.
 * Cancel safety: that of the stream: an item is either still in the
 * stream or fn has run on it ('count' says how many did). */
struct fut_stream_for_each {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    struct fut_stream *s;   /**< private */
    fut_stream_each_fn fn;  /**< private */
    void *ud;               /**< private */
    void *scratch;          /**< private */
    int done;               /**< private */
    int result;             /**< output */
    size_t count;           /**< output */
    union fut_stream_item_buf buf; /**< private */
};

/** Initialises 'f' over 's' (now owned by 'f') calling fn(item, ud).
 * 'scratch': as for fut_stream_map_init (one item of s->item_size). */
FUT_EXTERN void fut_stream_for_each_init(struct fut_stream_for_each *f,
                                         struct fut_stream *s,
                                         fut_stream_each_fn fn, void *ud,
                                         void *scratch);

/** fut_stream_collect: a future that pulls every item of 's' into one
 * growing buffer allocated through the allocator hook (only when an item
 * arrives and there is no room left: an empty stream allocates nothing);
 * READY when the stream ends. Output: 'result' = 0 with 'items' holding
 * 'len' items (NULL when len == 0), or FUT_ENOMEM when an allocation
 * failed: then
 * the items collected so far were freed ('items' NULL, 'len' 0), nothing
 * leaks, and the rest of the stream is left unread (dropped with the
 * collect).
 * After READY with result 0 the buffer is the caller's: read it, then
 * free it with fut_stream_collect_release (dropping the future does not
 * free it). Polls after READY return READY with the output unchanged.
 * Owns 's'. A stream that never ends grows the buffer until FUT_ENOMEM:
 * bound it with fut_stream_take.
 * loses-data: dropping it before READY frees the items collected so far
 * (they were pulled from the stream). */
struct fut_stream_collect {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    struct fut_stream *s;   /**< private */
    size_t item_size;       /**< private: s->item_size */
    size_t cap;             /**< private: items the buffer holds */
    int done;               /**< private */
    int result;             /**< output */
    void *items;            /**< output: see above */
    size_t len;             /**< output: items in 'items' */
    union fut_stream_item_buf buf; /**< private: an item before it has room */
};

/** Initialises 'c' over 's' (now owned by 'c'). */
FUT_EXTERN void fut_stream_collect_init(struct fut_stream_collect *c,
                                        struct fut_stream *s);

/** Frees the buffer of a collect that completed with result 0 (before or
 * after the future was dropped); 'items' is NULL and 'len' 0 afterwards.
 * No-op when there is no buffer. */
FUT_EXTERN void fut_stream_collect_release(struct fut_stream_collect *c);

FUT_END_DECLS

#endif /* FUT_STREAM_H */
