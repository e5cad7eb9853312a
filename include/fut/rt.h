/* fut runtime: tasks, spawn, join handles, block_on.
 *
 * A task is one allocation holding a copy of the future you spawn; the
 * runtime polls it whenever it is woken. The current-thread runtime runs
 * every task on the thread that calls fut_block_on (Tokio's
 * current_thread). Wakes may come from any thread.
 */
#ifndef FUT_RT_H
#define FUT_RT_H

#include "fut/core.h"

FUT_BEGIN_DECLS

struct fut_runtime;
struct fut_task;

enum fut_rt_flavor {
    FUT_RT_CURRENT_THREAD = 0, /* every task runs inside fut_block_on */
    FUT_RT_MULTI_THREAD = 1    /* worker threads (not in this version) */
};

struct fut_rt_config {
    int flavor;           /* enum fut_rt_flavor */
    int workers;          /* multi-thread: worker count, 0 = online CPUs */
    int budget;           /* coop budget per task poll; 0 = 128 */
    int event_interval;   /* ticks between remote-queue checks; 0 = 61 */
    int64_t slow_poll_ns; /* debug builds: report longer polls; 0 = 10 ms,
                             -1 = never */
    /* The driver (reactor, timers, blocking pool: io.h, net.h, time.h).
     * All 0 = Tokio's enable_all(). */
    int no_driver;        /* 1: none; the runtime parks on a futex, and
                             futures that need the driver complete with
                             FUT_EINVAL */
    int start_paused;     /* 1: virtual clock for tests (Tokio's
                             start_paused): time stands still while tasks
                             run and jumps to the next timer deadline
                             when every task is idle, no I/O is ready and
                             no blocking job runs; current-thread only
                             (FUT_EINVAL otherwise) */
    int blocking_threads; /* blocking pool: threads at most; 0 = 512 */
    int blocking_queue;   /* blocking pool: jobs queued before submitters
                             wait; 0 = 1024 */
    int64_t blocking_keepalive_ns; /* idle pool threads exit after; 0 =
                                      10 s */
};

/* Fills 'cfg' with the defaults (current-thread, budget 128, 61 ticks). */
FUT_EXTERN void fut_rt_config_init(struct fut_rt_config *cfg);

/* Creates a runtime. cfg == NULL: the defaults. Returns 0 with '*out' set,
 * FUT_EINVAL for a bad config (negative counts, unknown flavor) or
 * FUT_ENOMEM. Thread: any. */
FUT_EXTERN int fut_runtime_new(const struct fut_rt_config *cfg,
                               struct fut_runtime **out);

/* Shuts the runtime down and frees it: every task still alive is dropped
 * (its future's drop runs, on this thread), including tasks woken or
 * spawned during the shutdown; join handles then report FUT_ECANCELED.
 * Memory still referenced by join handles or wakers held elsewhere is
 * freed when the last of them is dropped. Must not be called from inside
 * fut_block_on of the same runtime. Thread: any (the current-thread
 * runtime: the thread that created it or any, when no block_on runs). */
FUT_EXTERN void fut_runtime_free(struct fut_runtime *rt);

/* The runtime whose task (or block_on) is running on this thread, or
 * NULL. */
FUT_EXTERN struct fut_runtime *fut_runtime_current(void);

/* Runs 'f' to completion on this thread, driving the runtime's tasks
 * meanwhile; 'f' is polled in place (caller storage) and not dropped: its
 * output is in its struct. Returns 0, or FUT_EBUSY when a block_on of this
 * runtime is already running (nested or on another thread).
 * rt == NULL: no runtime; 'f' is polled with a thread-parking waker, and
 * the thread sleeps (futex) while 'f' is pending. Blocks the thread: never
 * call it from inside a poll. */
FUT_EXTERN int fut_block_on(struct fut_runtime *rt, struct fut_future *f);

/* ------------------------------------------------------------ join handle */

/* A join handle is a future over the task's result. Output: 'result' = 0
 * when the task's future completed (read its output through
 * fut_join_output), FUT_ECANCELED when the task was aborted or dropped by
 * a shutdown before it completed. Polls after READY return READY again.
 *
 * Dropping the handle (fut_drop) before it is READY aborts the task
 * (async-task's rule: a handle you stop caring about cancels the work; use
 * fut_join_detach to let the task run on). After READY, dropping it frees
 * the task's output.
 * cancel-safe: dropping it loses nothing but the task, which is the point.
 * Thread: the handle may be polled and dropped on any thread, by one
 * thread at a time. */
struct fut_join {
    struct fut_future base;
    struct fut_task *task; /* private; NULL once detached or dropped */
    int result;            /* output */
    /* private: where fut_join_output_to copies the output */
    void *out_dst;
    size_t out_off, out_len;
};

/* The task's future (the copy fut_spawn made), holding its output; valid
 * after the join handle returned READY with result 0, until the handle is
 * dropped. NULL otherwise. */
FUT_EXTERN void *fut_join_output(const struct fut_join *j);

/* Asks the handle to copy 'len' bytes at 'offset' inside the task's
 * future into 'dst' when it becomes READY with result 0, so the output
 * survives the handle's drop (FUT_AWAIT drops what it awaited). Call it
 * before awaiting; FUT_JOIN_OUTPUT names a member instead of offsets:
 *   FUT_JOIN_OUTPUT(&self->join, struct child, out, &self->value);
 *   FUT_AWAIT(f, &self->join);   // self->value now holds child.out */
FUT_EXTERN void fut_join_output_to(struct fut_join *j, size_t offset,
                                   size_t len, void *dst);
#define FUT_JOIN_OUTPUT(j, type, member, dst)                                 \
    fut_join_output_to((j), offsetof(type, member),                           \
                       sizeof(((type *)0)->member), (dst))

/* Requests cancellation: the task is dropped at once when it is idle and
 * this thread runs its runtime, after its current poll when it is running,
 * or at the runtime's next tick otherwise. The handle stays valid; awaiting
 * it gives FUT_ECANCELED unless the task completed first. Thread: any. */
FUT_EXTERN void fut_join_abort(struct fut_join *j);

/* Lets the task run on without a handle; its output is discarded. The
 * handle is empty afterwards (dropping it does nothing). */
FUT_EXTERN void fut_join_detach(struct fut_join *j);

/* 1 when the task has completed or was cancelled. Thread: any. */
FUT_EXTERN int fut_join_is_finished(const struct fut_join *j);

/* ------------------------------------------------------------------ spawn */

/* Spawns a task running a copy of the future 'f' ('size' bytes, which must
 * not have been polled yet, and holds no pointer into itself: see the
 * async-function rules in core.h). rt == NULL: the runtime of the current thread
 * (fut_runtime_current). 'join' == NULL: the task is detached; otherwise
 * '*join' becomes its handle (a future; initialised here).
 * Returns 0; FUT_EINVAL (no runtime given or current); FUT_ESHUTDOWN (the
 * runtime is shutting down); FUT_ENOMEM. On error nothing was copied: 'f'
 * is still the caller's, and 'join' is an empty handle.
 * Thread: any; a spawn from outside the runtime's thread is queued for it
 * (and wakes it). */
#define fut_spawn(rt, f, size, join)                                          \
    fut_spawn_at((rt), FUT_AS_FUTURE(f), (size), (join), __FILE__, __LINE__)
FUT_EXTERN int fut_spawn_at(struct fut_runtime *rt, const struct fut_future *f,
                            size_t size, struct fut_join *join,
                            const char *file, int line);

/* ----------------------------------------------------------- introspection */

struct fut_rt_stats {
    uint64_t spawned;      /* tasks spawned so far */
    uint64_t alive;        /* tasks not yet freed */
    uint64_t polls;        /* task polls */
    uint64_t remote_wakes; /* tasks queued from other threads */
    uint64_t parks;        /* times the runtime thread went to sleep */
    uint64_t budget_yields;/* polls that ended because the budget ran out */
};

/* A snapshot of the runtime's counters; readable from any thread while it
 * runs (values may be slightly stale). */
FUT_EXTERN void fut_runtime_stats(struct fut_runtime *rt,
                                  struct fut_rt_stats *out);

FUT_END_DECLS

#endif /* FUT_RT_H */
