/* SPDX-License-Identifier: MIT */
/** \file
 * Test tools for futures, for fut's own tests and for users' tests:
 *
 *   - the drop-at-every-PENDING harness (C11, C12): runs a future to
 *     completion counting its PENDING returns N, then for k = 1..N runs a
 *     fresh instance again and drops it at its k-th PENDING, checking
 *     each time that every allocation was given back;
 *   - fail-the-Nth-allocation: an allocator hook that fails exactly one
 *     chosen allocation, and a loop over N that checks an operation turns
 *     every such failure into FUT_ENOMEM without leaking.
 *
 * Both read the allocator hook's live-block count (fut_alloc_live), which
 * every thread's allocations move: use them while no other thread
 * allocates through fut (no other runtime running), from a thread that is
 * not inside fut_block_on.
 */
#ifndef FUT_TESTING_H
#define FUT_TESTING_H

#include "fut/core.h"
#include "fut/rt.h"

FUT_BEGIN_DECLS

/* -------------------------------------------- drop-at-every-PENDING */

/** Constructs a fresh, never-polled instance of the future under test in
 * storage the callback owns (it may reuse the same storage every time:
 * the previous instance was dropped), and returns it. 'rt' is the
 * runtime it will run on (spawn onto it, or from inside the future with
 * fut_spawn(NULL, ...)). Return NULL when it cannot be made: the harness
 * then stops with FUT_EINVAL. */
typedef struct fut_future *(*fut_harness_make_fn)(void *ud,
                                                  struct fut_runtime *rt);

/** Optional check after each run: 'k' = 0 for the run to completion, or
 * the PENDING at which the future was dropped (1..N). Called after the
 * future was dropped and its runtime freed (every task it spawned has
 * finished or been dropped), so drop counters are final. Return 0 when
 * all is well, nonzero to count the run as failed. */
typedef int (*fut_harness_check_fn)(void *ud, int k);

/** A run of the harness: its inputs ('in') and results ('out'). */
struct fut_harness {
    /** in: set by fut_harness_init, adjustable before fut_harness_run */
    fut_harness_make_fn make;
    fut_harness_check_fn check;      /**< may be NULL */
    void *ud;                        /**< passed to make and check */
    const struct fut_rt_config *cfg; /**< runtime config; NULL = defaults */
    long max_pending;                /**< bound on N (default 100000) */
    /** out: filled by fut_harness_run */
    long pendings;      /**< N: PENDING returns of the run to completion */
    long runs;          /**< runs made (N + 1 when every run happened) */
    long failed;        /**< runs that failed (leak or check) */
    long first_failure; /**< k of the first failed run; -1 when none */
    char msg[256];      /**< what went wrong in that run ("" when none) */
};

/** Fills 'h' with the callbacks and the defaults. */
FUT_EXTERN void fut_harness_init(struct fut_harness *h,
                                 fut_harness_make_fn make,
                                 fut_harness_check_fn check, void *ud);

/** Runs the harness. Every run (the one to completion, k = 0, then one
 * per k = 1..N) goes:
 *   1. note fut_alloc_live(); create a runtime (h->cfg); make(ud, rt);
 *   2. fut_block_on a wrapper future that polls the future under test,
 *      counting its PENDING returns; at the k-th (or after READY, for
 *      k = 0) it drops the future (fut_drop), inside the poll, as a
 *      parent future would; then it lets the runtime run whatever is left
 *      (tasks the future spawned, aborted or woke) until no task is left
 *      or none made progress for two rounds;
 *   3. free the runtime (dropping the tasks still there);
 *   4. call check(ud, k); the run fails if check returned nonzero or if
 *      fut_alloc_live() is not back to the value noted in step 1.
 * A future that completes before its k-th PENDING in a later run (it is
 * not deterministic) is checked as a run to completion.
 * Returns 0 when every run passed; the number of failed runs (> 0; see
 * h->first_failure and h->msg, also sent once to the report hook as
 * kind "drop-harness"); or a negative code, the runs stopping there:
 * FUT_EBUSY (called inside a block_on), FUT_EINVAL (make returned NULL),
 * FUT_ENOMEM (no runtime), FUT_ETIMEDOUT (more than h->max_pending
 * PENDING returns in the run to completion).
 * Blocks the calling thread (it runs block_on); the future under test
 * must wake the task it is polled from like any future (C7), or the run
 * hangs. */
FUT_EXTERN int fut_harness_run(struct fut_harness *h);

/* ------------------------------------------ fail-the-Nth-allocation */

/** Installs an allocator hook under which the 'n'-th allocation from now
 * (1-based; a resize counts as one) fails: the hook returns NULL and
 * every fut call must then report FUT_ENOMEM. n <= 0: nothing fails, the
 * allocations are only counted. The hook allocates with malloc, realloc
 * and free like the default one, so blocks may cross between the two.
 * Thread: arm and disarm while no other thread allocates through fut. */
FUT_EXTERN void fut_failalloc_arm(long n);

/** Restores the default allocator (not a hook of your own: install it
 * again yourself). Returns how many allocations were attempted since
 * arming. */
FUT_EXTERN long fut_failalloc_disarm(void);

/** 1 when the armed failure has happened (the n-th allocation was
 * attempted and refused), 0 otherwise. */
FUT_EXTERN int fut_failalloc_fired(void);

/** The operation tried under each N: it must do its whole job (set up,
 * run, tear down) and return 0 on success or the first error it got.
 * It must release everything it allocated on every path. */
typedef int (*fut_failalloc_op)(void *ud);

/** For N = 1, 2, ...: arms the N-th allocation to fail, runs op(ud),
 * disarms, and checks that (a) when the failure fired, op returned
 * FUT_ENOMEM, (b) fut_alloc_live() is back where it was, and stops at the
 * first N at which the failure did not fire (op ran with every
 * allocation granted): op must then have returned 0.
 * Returns 0 when all of that held; the first N (> 0) at which it did not,
 * with the reason in 'msg' (may be NULL); or FUT_ETIMEDOUT when op was
 * still allocating at N = max_n. '*tried' (may be NULL) = the N reached. */
FUT_EXTERN int fut_failalloc_each(fut_failalloc_op op, void *ud, long max_n,
                                  long *tried, char *msg, size_t msglen);

FUT_END_DECLS

#endif /* FUT_TESTING_H */
