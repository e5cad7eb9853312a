/* SPDX-License-Identifier: MIT */
/** \file
 * fut runtime: tasks, spawn, join handles, block_on.
 *
 * A task is one allocation holding a copy of the future you spawn; the
 * runtime polls it whenever it is woken. The current-thread runtime runs
 * every task on the thread that calls fut_block_on (Tokio's
 * current_thread). The multi-thread runtime runs them on its worker
 * threads, which steal work from each other, so a task may be polled by
 * a different thread each time - but never by two at once (Tokio's
 * multi_thread; docs/scheduler.md). Wakes may come from any thread.
 */
#ifndef FUT_RT_H
#define FUT_RT_H

#include "fut/core.h"

FUT_BEGIN_DECLS

struct fut_runtime;
struct fut_task;

/** The kind of runtime (fut_rt_config.flavor). */
enum fut_rt_flavor {
    FUT_RT_CURRENT_THREAD = 0, /**< every task runs inside fut_block_on */
    FUT_RT_MULTI_THREAD = 1    /**< worker threads with work stealing */
};

/** The I/O backend of a runtime's driver (docs/io.md). The environment
 * variable FUT_IO_BACKEND=auto|epoll|io_uring overrides the config. */
enum fut_io_backend_kind {
    FUT_IO_AUTO = 0,  /**< io_uring when it can be had (a build with
                         liburing, a kernel that allows it and has
                         multishot RECV from a buffer ring (6.0), not
                         under valgrind) on a current-thread runtime,
                         else epoll (the multi-thread runtime: epoll,
                         docs/io.md "Choosing the backend") */
    FUT_IO_EPOLL = 1, /**< readiness: epoll, edge-triggered */
    FUT_IO_URING = 2  /**< completion: io_uring; fut_runtime_new fails with
                         FUT_ENOSYS / FUT_EPERM (or -EMFILE, FUT_ENOMEM
                         when fds or memory run out; fut_io_backend_error
                         says why) when it cannot be had */
};

/** The settings of a new runtime (fut_runtime_new); fut_rt_config_init
 * fills in the defaults, and a field left 0 takes its default. */
struct fut_rt_config {
    int flavor;           /**< enum fut_rt_flavor */
    int workers;          /**< multi-thread: worker count, 0 = online CPUs
                             (at most 256) */
    int budget;           /**< coop budget per task poll; 0 = 128 */
    int event_interval;   /**< ticks between remote-queue checks; 0 = 61 */
    int64_t slow_poll_ns; /**< debug builds: report longer polls; 0 = 10 ms,
                             -1 = never. Reported after the poll
                             ("slow-poll") and, by a watchdog (a thread of
                             the runtime: its own, or the monitor),
                             while it still runs ("long-poll": the task's
                             name, the worker, the time so far; again at
                             each doubling). The environment variable
                             FUT_WATCHDOG_MS=N turns the watchdog on in
                             any build (release builds too) with an N ms
                             threshold, or off with 0; it is read by
                             fut_runtime_new. docs/scheduler.md, "Long
                             polls" */
    /** The driver (reactor, timers, blocking pool: io.h, net.h, time.h).
     * All 0 = Tokio's enable_all(). */
    int no_driver;        /**< 1: none; the runtime parks on a futex, and
                             futures that need the driver complete with
                             FUT_EINVAL */
    int start_paused;     /**< 1: virtual clock for tests (Tokio's
                             start_paused): time stands still while tasks
                             run and jumps to the next timer deadline
                             when every task is idle, no I/O is ready and
                             no blocking job runs; current-thread only
                             (FUT_EINVAL otherwise) */
    int blocking_threads; /**< blocking pool: threads at most; 0 = 512 */
    int blocking_queue;   /**< blocking pool: jobs queued before submitters
                             wait; 0 = 1024 */
    int64_t blocking_keepalive_ns; /**< idle pool threads exit after; 0 =
                                      10 s */
    int io_backend;                /**< enum fut_io_backend_kind; 0 = AUTO */
    int64_t park_spin_ns; /**< multi-thread: how long a worker that ran out of
                             work watches for a wake before it sleeps
                             (only while wakes have been coming soon after
                             it parks); 0 = adaptive: twice the worker's
                             measured futex wake latency, 1-64 us; -1 =
                             never; ignored by the current-thread runtime.
                             See docs/scheduler.md, "Park spin" */
};

/** Fills 'cfg' with the defaults (current-thread, budget 128, 61 ticks). */
FUT_EXTERN void fut_rt_config_init(struct fut_rt_config *cfg);

/** Creates a runtime. cfg == NULL: the defaults. Returns 0 with '*out' set,
 * FUT_EINVAL for a bad config (negative counts, unknown flavor, more than
 * 256 workers), FUT_ENOMEM, or -EAGAIN when the worker threads cannot be
 * created. The multi-thread flavor starts its workers here; they sleep
 * (no CPU) until there is work. Thread: any. */
FUT_EXTERN int fut_runtime_new(const struct fut_rt_config *cfg,
                               struct fut_runtime **out);

/** Shuts the runtime down and frees it: every task still alive is dropped
 * (its future's drop runs, on this thread), including tasks woken or
 * spawned during the shutdown; join handles then report FUT_ECANCELED.
 * Memory still referenced by join handles or wakers held elsewhere is
 * freed when the last of them is dropped. Must not be called from inside
 * fut_block_on of the same runtime. Thread: any (the current-thread
 * runtime: the thread that created it or any, when no block_on runs).
 * Multi-thread: any thread but the runtime's workers; it joins them
 * (after their current polls) and drops every task - thread-affine ones
 * on their own worker, the others on this thread. fut_spawn and
 * fut_block_on may run on other threads meanwhile: spawns fail with
 * FUT_ESHUTDOWN, awaited join handles give FUT_ECANCELED. Once it
 * returned, 'rt' may still be used for fut_spawn (FUT_ESHUTDOWN) only
 * while a join handle or waker of one of its tasks is alive (they keep
 * the handle's memory) - both flavors; fut_block_on then returns
 * FUT_ESHUTDOWN on the current-thread flavor. rt == NULL: nothing.
 * Freeing a runtime twice is a programming error: debug builds abort
 * naming the call; release builds ignore a second free while the memory
 * is kept alive by a handle. Any other use of a freed runtime (a call
 * other than the fut_spawn and fut_block_on above, or any call once no
 * handle keeps it) or of a pointer fut_runtime_new never returned is a
 * programming error too: debug builds check every call given a runtime
 * against their registry of live runtimes and abort naming the call; in
 * release builds it is undefined behaviour. Called from inside a task or fut_block_on of
 * the same runtime: aborts in every build (it would wait for itself). */
FUT_EXTERN void fut_runtime_free(struct fut_runtime *rt);

/** The runtime whose task (or block_on) is running on this thread, or
 * NULL. */
FUT_EXTERN struct fut_runtime *fut_runtime_current(void);

/** Runs 'f' to completion on this thread, driving the runtime's tasks
 * meanwhile; 'f' is polled in place (caller storage) and not dropped: its
 * output is in its struct. Returns 0, or FUT_EBUSY when a block_on of this
 * runtime is already running (nested or on another thread; on the
 * multi-thread runtime: nested, or called from one of its workers -
 * several other threads may block_on at once), FUT_ENOMEM. Multi-thread:
 * 'f' is polled on this thread (it is not a worker; the tasks run on the
 * workers meanwhile).
 * rt == NULL: no runtime; 'f' is polled with a thread-parking waker, and
 * the thread sleeps (futex) while 'f' is pending. Blocks the thread: never
 * call it from inside a poll. */
FUT_EXTERN int fut_block_on(struct fut_runtime *rt, struct fut_future *f);

/* ------------------------------------------------------------ join handle */

/** A join handle is a future over the task's result. Output: 'result' = 0
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
 * thread at a time.
 * A unique owner: it may be moved (copied, the original never used
 * again), not duplicated; a copy used after the original was dropped or
 * detached aborts in debug builds, naming the call (docs/design.md,
 * "Programming errors"). */
struct fut_join {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    struct fut_task *task;  /**< private; NULL once detached or dropped */
    int result;             /**< output */
    uint32_t gen;           /**< private: debug builds' copy check */
    /* private: where fut_join_output_to copies the output */
    void *out_dst; /**< private: fut_join_output_to's 'dst' */
    /** private: fut_join_output_to's 'offset' and 'len' */
    size_t out_off, out_len; /**< private: its 'offset' and 'len' */
};

/** The task's future (the copy fut_spawn made), holding its output; valid
 * after the join handle returned READY with result 0, until the handle is
 * dropped. NULL otherwise. */
FUT_EXTERN void *fut_join_output(const struct fut_join *j);

/** Asks the handle to copy 'len' bytes at 'offset' inside the task's
 * future into 'dst' when it becomes READY with result 0, so the output
 * survives the handle's drop (FUT_AWAIT drops what it awaited). Call it
 * before awaiting; FUT_JOIN_OUTPUT names a member instead of offsets:
 *   FUT_JOIN_OUTPUT(&self->join, struct child, out, &self->value);
 *   FUT_AWAIT(f, &self->join);   // self->value now holds child.out */
FUT_EXTERN void fut_join_output_to(struct fut_join *j, size_t offset,
                                   size_t len, void *dst);
/** fut_join_output_to for 'member' of the task's future struct 'type'. */
#define FUT_JOIN_OUTPUT(j, type, member, dst)                                \
    fut_join_output_to((j), offsetof(type, member),                          \
                       sizeof(((type *)0)->member), (dst))

/** Requests cancellation: the task is dropped at once when it is idle and
 * this thread runs its runtime, after its current poll when it is running,
 * or at the runtime's next tick otherwise. On the multi-thread runtime
 * "at once" holds on any thread: an idle task is dropped by the calling
 * thread before this returns (its future may move between threads) -
 * except a thread-affine task (fut_spawn_local) aborted from another
 * thread than its worker, which its worker drops at its next tick. A
 * running task is dropped by the thread polling it, right after that
 * poll. The handle stays valid; awaiting it gives FUT_ECANCELED unless
 * the task completed first. Thread: any. */
FUT_EXTERN void fut_join_abort(struct fut_join *j);

/** Lets the task run on without a handle; its output is discarded. The
 * handle is empty afterwards (dropping it does nothing). */
FUT_EXTERN void fut_join_detach(struct fut_join *j);

/** 1 when the task has completed or was cancelled. Thread: any. */
FUT_EXTERN int fut_join_is_finished(const struct fut_join *j);

/* ------------------------------------------------------------------ spawn */

/** Spawns a task running a copy of the future 'f' ('size' bytes, which must
 * not have been polled yet, and holds no pointer into itself: see the
 * async-function rules in core.h). rt == NULL: the runtime of the current thread
 * (fut_runtime_current). 'join' == NULL: the task is detached; otherwise
 * '*join' becomes its handle (a future; initialised here).
 * Returns 0; FUT_EINVAL (no runtime given or current); FUT_ESHUTDOWN (the
 * runtime is shutting down); FUT_ENOMEM. On error nothing was copied: 'f'
 * is still the caller's, and 'join' is an empty handle.
 * Thread: any; a spawn from outside the runtime's thread is queued for it
 * (and wakes it). Multi-thread: a spawn from a worker goes to that
 * worker's queues (its LIFO slot: it runs right after the spawning task's
 * poll unless stolen), one from any other thread to the global queue. */
#define fut_spawn(rt, f, size, join)                                         \
    fut_spawn_at((rt), FUT_AS_FUTURE(f), (size), (join), __FILE__, __LINE__)
/** The function behind fut_spawn(), which passes its call site as 'file' and
 * 'line' (for task dumps and debug reports). */
FUT_EXTERN int fut_spawn_at(struct fut_runtime *rt,
                            const struct fut_future *f, size_t size,
                            struct fut_join *join, const char *file,
                            int line);

/** Spawns a thread-affine task on the current thread's runtime (Tokio's
 * spawn_local): like fut_spawn, but on the multi-thread runtime the task
 * is polled and dropped only on the worker that spawned it - never
 * stolen, never dropped by another thread (an abort from elsewhere is
 * carried out by that worker; shutdown drops it there too), for futures
 * that must not move between threads. Wakes and join handles work from
 * any thread as usual. On the current-thread runtime it is fut_spawn
 * (every task runs on the thread inside fut_block_on).
 * Returns 0; FUT_EINVAL when not called from a task on a multi-thread
 * worker (a block_on thread or a foreign thread has no worker to pin the
 * task to) nor from the thread running a current-thread runtime;
 * FUT_ESHUTDOWN; FUT_ENOMEM. On error nothing was copied and 'join' is
 * an empty handle. Thread: a runtime's thread (see above). */
#define fut_spawn_local(f, size, join)                                       \
    fut_spawn_local_at(FUT_AS_FUTURE(f), (size), (join), __FILE__, __LINE__)
/** The function behind fut_spawn_local(), which passes its call site as
 * 'file' and 'line' (for task dumps and debug reports). */
FUT_EXTERN int fut_spawn_local_at(const struct fut_future *f, size_t size,
                                  struct fut_join *join, const char *file,
                                  int line);

/* ----------------------------------------------------------- introspection */

/** A runtime's counters (fut_runtime_stats, fut_runtime_worker_stats). */
struct fut_rt_stats {
    uint64_t spawned;      /**< tasks spawned so far */
    uint64_t alive;        /**< tasks not yet freed (per worker: tasks
                              spawned on it that have not completed) */
    uint64_t polls;        /**< task polls */
    uint64_t remote_wakes; /**< tasks queued from other threads (per worker:
                              thread-affine tasks queued to it, counted
                              when the worker takes them) */
    uint64_t parks;        /**< times the runtime thread went to sleep */
    uint64_t
        budget_yields; /**< polls that ended because the budget ran out */
    /** multi-thread runtime (0 on the current-thread one) */
    uint64_t unparks;      /**< a sleeping worker woke up with work to do */
    uint64_t steals;       /**< successful steals from other workers */
    uint64_t stolen;       /**< tasks those steals moved */
    uint64_t lifo_hits;    /**< polls of a task taken from the LIFO slot */
    uint64_t global_polls; /**< tasks taken from the global queue */
    uint64_t park_spins;   /**< parks that watched for a wake before sleeping
                              (park_spin_ns) */
    uint64_t park_spin_hits; /**< of those, the ones a wake ended: no sleep */
    uint64_t workers;        /**< worker threads (1 for current-thread; 1 in
                              one worker's statistics) */
    uint64_t park_spin_bound_ns; /**< the bound of the next park spin (ns;
                              0: the spin is off); in the totals the
                              largest of the workers' */
};

/** The I/O backend 'rt' runs on: "epoll" or "io_uring" ("none" for a
 * runtime made with no_driver). Static for the runtime's life. Thread:
 * any. See fut_io_backend_error (io.h) for why a backend was not had. */
FUT_EXTERN const char *fut_runtime_backend(struct fut_runtime *rt);

/** A snapshot of the runtime's counters, summed over its workers; readable
 * from any thread while it runs (values may be slightly stale). */
FUT_EXTERN void fut_runtime_stats(struct fut_runtime *rt,
                                  struct fut_rt_stats *out);

/** Number of worker threads (1 for the current-thread runtime). */
FUT_EXTERN int fut_runtime_workers(struct fut_runtime *rt);

/** The counters of worker 'worker' (0 .. fut_runtime_workers() - 1) alone:
 * what it spawned, polled, stole, ... Returns 0, or FUT_EINVAL for a bad
 * index. Thread: any, at any time while the runtime exists. */
FUT_EXTERN int fut_runtime_worker_stats(struct fut_runtime *rt, int worker,
                                        struct fut_rt_stats *out);

FUT_END_DECLS

#endif /* FUT_RT_H */
