/* SPDX-License-Identifier: MIT */
/** \file
 * fut time: sleeps, timeouts and intervals on the runtime's timer wheel.
 *
 * Every runtime (unless created with no_driver) has a driver whose timer
 * wheel has 6 levels of 64 slots of 1 ms (Tokio's): deadlines are rounded
 * up to the next millisecond, so a timer never fires early, and typically
 * fires within about a millisecond after its deadline once the runtime
 * gets to it. A timer entry lives inside the future that waits: arming
 * and cancelling never allocate, and cancelling (dropping the future) is
 * O(1).
 *
 * Deadlines are absolute values of the runtime's clock, in ns: the
 * monotonic clock (fut_now_ns), or the virtual clock of a runtime created
 * with start_paused. 0 means "do not wait", -1 "forever".
 *
 * The futures here reach the driver through the runtime running on the
 * polling thread. Polled outside any runtime (fut_block_on(NULL, ...)),
 * or on a runtime created with no_driver, a future that must wait
 * completes with FUT_EINVAL instead.
 * Thread: a future is polled and dropped by one thread at a time; with
 * the multi-thread runtime, successive polls may come from different
 * workers.
 */
#ifndef FUT_TIME_H
#define FUT_TIME_H

#include "fut/core.h"
#include "fut/stream.h"

FUT_BEGIN_DECLS

/** Storage of a timer entry inside a future (intrusive wheel node, waker,
 * state). Private. */
struct fut_timer_entry {
    uintptr_t priv_[8];
};

/** Now on the clock of the runtime running on this thread: its virtual
 * clock when it was created with start_paused, fut_now_ns() otherwise or
 * outside any runtime. Use it to compute deadlines for the futures
 * below. Thread: any. */
FUT_EXTERN int64_t fut_time_now(void);

/** Advances the paused (virtual) clock of the runtime running on this
 * thread by 'ns' (>= 0) at once; timers now due fire at the driver's next
 * turn (the caller's next PENDING lets it run). Returns 0, or FUT_EINVAL
 * when there is no runtime on this thread, its clock is not paused, or
 * ns < 0. Thread: the runtime's (inside a task or its block_on). */
FUT_EXTERN int fut_time_advance(int64_t ns);

/* ----------------------------------------------------------------- sleep */

/** fut_sleep: READY once the deadline has passed. Output: 'result' = 0, or
 * FUT_EINVAL when it had to wait without a driver (see the file comment).
 * A deadline of 0 or in the past is READY on the first poll (after the
 * coop budget check); -1 never completes (like fut_pending: registers
 * nothing).
 * Polls after READY return READY again. Drop disarms the timer (O(1)).
 * cancel-safe: a sleep holds nothing but its place in the wheel, which a
 * new sleep for the same deadline gets back. */
struct fut_sleep {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    int64_t deadline;       /**< read-only after the first poll */
    int64_t duration;       /**< private: fut_sleep_init's, or < 0 */
    int result;             /**< output */
    struct fut_timer_entry timer; /**< private */
};

/** Sleeps until 'deadline' (absolute, the runtime's clock). */
FUT_EXTERN void fut_sleep_until_init(struct fut_sleep *s, int64_t deadline);
/** Sleeps for 'duration_ns' (< 0: forever) counted from the first poll, on
 * the clock of the runtime that polls it. */
FUT_EXTERN void fut_sleep_init(struct fut_sleep *s, int64_t duration_ns);
/** Re-arms 's' for a new deadline, whatever its state (a READY sleep
 * becomes pending again; the future may be awaited anew). Not while
 * another thread polls it.
 * Cost: a deadline moved later (or kept) while the sleep waits is only
 * stored - no wheel operation, no lock, no clock read: the timer stays
 * armed for the old deadline, and when it fires there the sleep's next
 * poll arms it again for the stored one (a spurious wake of the task,
 * once per firing, not once per reset) and stays PENDING. So an idle or
 * header deadline pushed on every read costs a store per read (Tokio's
 * Sleep::reset). A deadline moved earlier, a reset to -1, and any reset
 * of a sleep that is not waiting (never polled, or READY) disarm it
 * (O(1)); its next poll files it anew. */
FUT_EXTERN void fut_sleep_reset(struct fut_sleep *s, int64_t deadline);

/* --------------------------------------------------------------- timeout */

/** fut_timeout: runs 'inner' with a deadline (C13). Each poll polls inner
 * first; if it is READY the timeout is READY with result 0 (inner's
 * output is in inner's struct; the timer is disarmed). Else, once the
 * deadline has passed, inner is dropped where it stood (fut_drop, at once,
 * on the polling thread) and the result is FUT_ETIMEDOUT.
 * Output: 'result' = 0, FUT_ETIMEDOUT, or FUT_EINVAL (inner pending and
 * no driver to time it: inner dropped).
 * Ownership: the timeout owns inner's drop: dropping the timeout drops
 * inner (in any state); inner's storage stays the caller's (typically a
 * field next to the timeout) and must not move or be polled by anyone
 * else. Polls after READY return READY again.
 * Cancel safety: that of inner (the timer adds nothing to lose). */
struct fut_timeout {
    struct fut_future base;   /**< the future header (fut_poll, fut_drop) */
    struct fut_future *inner; /**< private */
    int64_t deadline;         /**< read-only */
    int result;               /**< output */
    int armed;                /**< private */
    struct fut_timer_entry timer; /**< private */
};

/** deadline: absolute (runtime clock); 0 = inner gets one poll; -1 = no
 * limit. */
FUT_EXTERN void fut_timeout_init(struct fut_timeout *t,
                                 struct fut_future *inner, int64_t deadline);

/* -------------------------------------------------------------- interval */

/** What an interval does when a tick is late (its consumer did not poll it
 * in time, or the runtime was busy): */
enum fut_missed_tick {
    /** Tokio's default: the missed ticks fire back to back, as fast as
     * they are polled, until the schedule is caught up; the schedule
     * (start + k * period) never shifts. */
    FUT_MISSED_BURST = 0,
    /** The late tick fires once and the schedule restarts from it: the
     * next tick is 'period' after the moment the late one was taken. */
    FUT_MISSED_DELAY = 1,
    /** The late tick fires once; the ticks missed meanwhile are skipped and
     * the next one is the next point of the original schedule after now. */
    FUT_MISSED_SKIP = 2
};

/** fut_interval: a stream (C15) of ticks. Item: int64_t, the scheduled
 * time of the tick (not the time it was taken). Never ends. The first
 * tick is at 'start' (0: at once), then every 'period' ns, late ticks
 * handled per 'missed'. PENDING between ticks, with the timer armed.
 * Drop disarms the timer.
 * cancel-safe: dropping a tick's poll loses nothing; the next poll gets
 * the tick (a stream's item is produced only by the poll that returns
 * it). */
struct fut_interval {
    struct fut_stream base; /**< the stream header (fut_stream_poll_next) */
    int64_t period;         /**< read-only */
    int64_t next;           /**< private: the next scheduled tick */
    int missed;             /**< read-only: enum fut_missed_tick */
    int result;             /**< read-only: FUT_EINVAL if it could not
                                     wait (no driver); the stream then ends */
    struct fut_timer_entry timer; /**< private */
};

/** period > 0 (FUT_EINVAL otherwise; 'iv' is then an ended stream). */
FUT_EXTERN int fut_interval_init(struct fut_interval *iv, int64_t start,
                                 int64_t period, int missed);

/** fut_interval_tick: a future that waits for the next tick of 'iv' (for
 * async functions: FUT_AWAIT one per tick). Output: 'tick' (the item);
 * 'result' = 0 or the interval's error. Does not own 'iv' (dropping the
 * tick future leaves the interval as it was).
 * cancel-safe (as the interval). */
struct fut_interval_tick {
    struct fut_future base;  /**< the future header (fut_poll, fut_drop) */
    struct fut_interval *iv; /**< private */
    int64_t tick;            /**< output */
    int result;              /**< output */
};
/** Initialises 't' over 'iv' (which must outlive it). */
FUT_EXTERN void fut_interval_tick_init(struct fut_interval_tick *t,
                                       struct fut_interval *iv);

FUT_END_DECLS

#endif /* FUT_TIME_H */
