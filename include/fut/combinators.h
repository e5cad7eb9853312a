/* SPDX-License-Identifier: MIT */
/** \file
 * Combinators: futures made of other futures (C14).
 *
 *   join    completes when every child is READY (2 or N children);
 *   select  completes with the first child that is READY and drops the
 *           others at once (2 or N branches; fair or biased order);
 *   map     runs a function on the inner future's output;
 *   then    runs a function that builds a second future from the first
 *           one's output, and awaits it.
 *
 * Rules shared by every combinator here:
 *   - the children stay in the caller's storage, which must live (and not
 *     move) until the combinator has been dropped; each child's output
 *     stays in the child's own struct;
 *   - the combinator owns the *drop* of the children it was given (not
 *     their storage): dropping the combinator, in any state, drops every
 *     child not dropped yet (fut_drop is idempotent, so a child is never
 *     dropped twice). Do not drop a child yourself while the combinator
 *     may still poll it;
 *   - a child that is READY is not dropped when it becomes READY (its
 *     resources, e.g. a join handle's task output, stay reachable); it is
 *     dropped with the combinator. Exceptions, documented where they
 *     happen: select drops its losers at once, then drops its first future
 *     once the second one was built;
 *   - they never allocate, and register no waker of their own: a child
 *     that returns PENDING has registered cx's waker, which wakes the
 *     task polling the combinator;
 *   - a combinator holds pointers to its children, not copies: it may be
 *     copied before its first poll (fut_spawn copies) only if the children
 *     are not inside the copied bytes. The usual pattern is an async
 *     function that keeps children and combinator in its own struct and
 *     initialises the combinator inside its poll (it no longer moves);
 *   - polls after READY return READY with the output unchanged (C8);
 *   - one thread at a time polls or drops a combinator (like any future).
 */
#ifndef FUT_COMBINATORS_H
#define FUT_COMBINATORS_H

#include "fut/core.h"

FUT_BEGIN_DECLS

/* ------------------------------------------------------------------- join */

/** fut_join2: READY once both children are READY. Each poll polls every
 * child not READY yet. Output: none of its own; read each child's output
 * in its struct. Polls after READY return READY.
 * cancel-safe iff both children are: dropping it drops both children
 * where they stand (a child already READY keeps its output).
 * Fields are private. */
struct fut_join2 {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    struct fut_future *child[2]; /**< private: the children a and b */
};

/** Initialises 'j' over the children 'a' and 'b' (not polled, not dropped
 * yet; 'j' now owns their drop). */
FUT_EXTERN void fut_join2_init(struct fut_join2 *j, struct fut_future *a,
                               struct fut_future *b);

/** fut_join_all: READY once all 'n' children are READY (n == 0: READY at
 * once). Output: 'pending' = 0; each child's output in its struct. Polls
 * after READY return READY.
 * cancel-safe iff every child is (as fut_join2). */
struct fut_join_all {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    struct fut_future **children; /**< private: caller's array of 'n' */
    size_t n;                     /**< private */
    size_t pending;               /**< read-only: children not READY yet */
};

/** Initialises 'j' over the array 'children' of 'n' futures. The array
 * (not only the futures) is caller storage and must stay valid until 'j'
 * is dropped. */
FUT_EXTERN void fut_join_all_init(struct fut_join_all *j,
                                  struct fut_future **children, size_t n);

/* ----------------------------------------------------------------- select */

/** Order in which select polls its branches. */
enum fut_select_order {
    /** Each poll starts at a branch picked at random (a per-thread
     * xorshift), so no branch starves another that is always ready. */
    FUT_SELECT_FAIR = 0,
    /** Each poll goes through the branches in order from 0: the lowest
     * ready index always wins (tokio's 'biased;'). */
    FUT_SELECT_BIASED = 1
};

/** fut_select2: polls both branches (in the chosen order) and completes
 * with the first one that is READY (C14). Output: 'winner' = 0 or 1, the
 * index of that branch; its own output is in its struct.
 * The losers are dropped (fut_drop) at once, inside the poll that found
 * the winner, so they release what they hold (unregister wakers, close
 * channels) before select returns. The winner is not dropped by select:
 * its output stays readable; it is dropped with the select (or had
 * released everything at READY already, as most leaf futures do).
 * Polls after READY return READY with the same 'winner'.
 * cancel-safe iff every branch is: completing drops the losers, and
 * dropping the select drops every branch. A branch that 'loses-data' (or
 * 'loses-position') loses it when it loses the race, too. */
struct fut_select2 {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    struct fut_future *branch[2]; /**< private */
    int order;                    /**< private: enum fut_select_order */
    int winner;                   /**< output: -1 until READY */
};

/** Initialises 's' over the branches 'a' (index 0) and 'b' (index 1);
 * 's' now owns their drop. 'order' is an enum fut_select_order. */
FUT_EXTERN void fut_select2_init(struct fut_select2 *s, struct fut_future *a,
                                 struct fut_future *b, int order);

/** fut_select_all: fut_select2 over an array of 'n' branches. Output:
 * 'winner' = the index (0 .. n-1) of the branch that won, or -1 for an
 * empty array (READY at once). Everything else as fut_select2.
 * cancel-safe iff every branch is. */
struct fut_select_all {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    struct fut_future **branches; /**< private: caller's array of 'n' */
    size_t n;                     /**< private */
    int order;                    /**< private */
    int winner;                   /**< output */
};

/** Initialises 's' over the array 'branches' of 'n' futures (caller
 * storage, valid until 's' is dropped). */
FUT_EXTERN void fut_select_all_init(struct fut_select_all *s,
                                    struct fut_future **branches, size_t n,
                                    int order);

/* -------------------------------------------------------------- map, then */

/** Called once, when the inner future is READY; reads its output and
 * returns the map's output. Runs on the polling thread, inside poll. */
typedef intptr_t (*fut_map_fn)(struct fut_future *inner, void *ud);

/** fut_map: READY when 'inner' is READY, with 'value' = fn(inner, ud).
 * 'fn' runs exactly once. Polls after READY return READY with the same
 * 'value' (fn does not run again).
 * cancel-safe iff 'inner' is (dropping the map drops 'inner'). */
struct fut_map {
    struct fut_future base;   /**< the future header (fut_poll, fut_drop) */
    struct fut_future *inner; /**< private */
    fut_map_fn fn;            /**< private */
    void *ud;                 /**< private */
    int done;                 /**< private: fn has run */
    intptr_t value;           /**< output */
};

/** Initialises 'm' over 'inner' ('m' now owns its drop). */
FUT_EXTERN void fut_map_init(struct fut_map *m, struct fut_future *inner,
                             fut_map_fn fn, void *ud);

/** Called once, when the first future is READY: reads its output and
 * initialises the second future (in caller storage, which must live until
 * the then-future is dropped), returning it; the then-future owns its
 * drop from here. May return NULL: there is no second future and the
 * then-future completes at once (e.g. the first one failed). */
typedef struct fut_future *(*fut_then_fn)(struct fut_future *first, void *ud);

/** fut_then: awaits 'first', calls fn(first, ud), then awaits the future fn
 * returned, in the same poll. Output: in the second future's struct;
 * 'second' points to it (NULL before fn ran, or when fn returned NULL).
 * 'first' is dropped right after fn returned (fn has consumed its
 * output, which stays readable in its struct); 'second' is dropped with
 * the then-future. Polls after READY return READY.
 * Cancel safety: that of 'first' until it is READY, then that of
 * 'second'; fn has either not run or run to its end. */
struct fut_then {
    struct fut_future base;    /**< the future header (fut_poll, fut_drop) */
    struct fut_future *first;  /**< private */
    fut_then_fn fn;            /**< private */
    void *ud;                  /**< private */
    struct fut_future *second; /**< read-only: see above */
    int stage;                 /**< private: 0 first, 1 second, 2 done */
};

/** Initialises 't' over 'first' ('t' now owns its drop). */
FUT_EXTERN void fut_then_init(struct fut_then *t, struct fut_future *first,
                              fut_then_fn fn, void *ud);

FUT_END_DECLS

#endif /* FUT_COMBINATORS_H */
