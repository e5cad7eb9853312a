/* SPDX-License-Identifier: MIT */
/* Runtime internals shared by task.c, the schedulers and runtime.c. */
#ifndef FUT_RT_INTERNAL_H
#define FUT_RT_INTERNAL_H

#include "fut/rt.h"
#include "internal.h"
#include "platform/park.h"
#include "util/list.h"

/* ----------------------------------------------------------- task layout */

struct fut__sched;
struct fut__sim;

/* One allocation: this header, then the future's bytes (aligned). In
 * release builds the header is exactly 64 bytes. */
struct fut_task {
    fut__aword state;            /* see task.c's rules block */
    struct fut_task *next;       /* run-queue link (scheduler-owned) */
    struct fut__list owned;      /* list of live tasks (shutdown) */
    struct fut__sched *sched;    /* who polls it */
    struct fut_waker join_waker; /* join handle's waker (JOIN_WAKER) */
    uint32_t size_class;         /* allocator class, 0 = direct */
    uint16_t cancelled;          /* output is FUT_ECANCELED */
    uint16_t flags;              /* TASK_F_* (static after spawn) */
#ifdef FUT_DEBUG
    const char *spawn_file; /* spawn site, for reports */
    int spawn_line;
    fut__aword waker_refs; /* live waker clones (C7 check) */
#endif
};

#define TASK_F_LOCAL 1u /* never leaves the thread that spawned it */

/* The task whose 'owned' link is 'n'. */
static inline struct fut_task *fut__task_of_owned(struct fut__list *n)
{
    return fut__container_of(n, struct fut_task, owned);
}

static inline int fut__task_is_local(const struct fut_task *t)
{
    return (t->flags & TASK_F_LOCAL) != 0;
}

#define FUT__TASK_HDR                                                        \
    ((sizeof(struct fut_task) + _Alignof(max_align_t) - 1) &                 \
     ~(_Alignof(max_align_t) - 1))

static inline struct fut_future *fut__task_future(struct fut_task *t)
{
    return (struct fut_future *)(void *)((char *)t + FUT__TASK_HDR);
}

/* --------------------------------------------------------- scheduler api */

/* The task dump's walk (src/scope/dump.c): fn(ud, t, deep) for every live
 * task of a scheduler, one call at a time, from a thread that owns the
 * list 't' is on; deep = 1 while no other thread polls any task (the
 * await trees may be walked), 0 for names only. */
typedef void (*fut__each_task_fn)(void *ud, struct fut_task *t, int deep);

/* A scheduler, as the tasks (task.c) and the runtime handle (runtime.c)
 * see it: each flavor fills one of these, and nobody above it tests
 * which flavor it is. */
struct fut__sched_vt {
    /* --- the tasks' calls (task.c) --- */
    /* Queues a task this caller just made RUNNING|NOTIFIED (a wake, a
     * spawn, an abort). Any thread. */
    void (*schedule)(struct fut__sched *s, struct fut_task *t);
    /* Called by the polling thread once a task completed: unlink it from
     * the live list. */
    void (*unlink)(struct fut__sched *s, struct fut_task *t);
    /* Frees a task's memory (last reference gone). Any thread. */
    void (*free_task)(struct fut__sched *s, struct fut_task *t);
    /* Optional: 1 when the calling thread may drop the idle task 't' in
     * place (an abort that found it idle). NULL: only a thread running
     * the scheduler (fut__tls_sched == s). */
    int (*drop_here)(struct fut__sched *s, struct fut_task *t);

    /* --- the runtime handle's calls (runtime.c, src/scope/dump.c) --- */
    /* Optional (NULL: nothing to start): starts the threads that run the
     * tasks, once whatever is attached to the scheduler is in place. On
     * error (FUT_ENOMEM, -EAGAIN from pthread_create) the scheduler is
     * shut down and freed, the runtime handle with it. */
    int (*start)(struct fut__sched *s);
    /* fut_block_on on this runtime from a thread outside it; FUT_EBUSY
     * from inside (a worker, a nested block_on). */
    int (*block_on)(struct fut__sched *s, struct fut_future *f);
    /* fut_spawn_at ('local' 0) and fut_spawn_local_at ('local' 1: a
     * thread-affine task, where the flavor has such a thing); 'join' (if
     * not NULL) is initialised on every outcome. */
    int (*spawn)(struct fut__sched *s, const struct fut_future *f,
                 size_t size, struct fut_join *join, int local,
                 const char *file, int line);
    /* fut_runtime_free: drops every task, joins the threads. Frees the
     * scheduler and the runtime handle (at once, or with the last join
     * handle or waker that refers to them). Not from inside. */
    void (*shutdown)(struct fut__sched *s);
    /* fut_runtime_stats (all workers; 'out' zeroed by the caller),
     * fut_runtime_workers and fut_runtime_worker_stats (FUT_EINVAL for a
     * worker index out of range; 'out' zeroed by the caller). */
    void (*stats)(struct fut__sched *s, struct fut_rt_stats *out);
    int (*workers)(struct fut__sched *s);
    int (*worker_stats)(struct fut__sched *s, int worker,
                        struct fut_rt_stats *out);
    /* The task dump's walk. 0, FUT_EINVAL (the caller does not run 's'),
     * FUT_EBUSY (another dump runs), FUT_ENOMEM, or FUT_ETIMEDOUT (a
     * worker did not answer in time: its tasks are missing, the others
     * were listed with deep = 0). */
    int (*each_task)(struct fut__sched *s, fut__each_task_fn fn, void *ud);
};

/* The I/O + timer driver a scheduler parks in (src/io, src/time). NULL
 * driver: the scheduler parks on its futex parker instead.
 *
 * Two kinds of driver, told apart by fut__driver.per_worker:
 *   - shared (per_worker 0: epoll, the simulation's network): one event
 *     source for the runtime. One thread at a time parks in it and
 *     dispatches every fd's I/O and the timers; the multi-thread
 *     scheduler hands it to whichever worker parks and wins its trylock
 *     (the others sleep on their futexes), and the worker index given to
 *     park and unpark is ignored;
 *   - per-worker (per_worker 1: the multi-thread runtime on io_uring, one
 *     ring per worker): each worker parks on an event source of its own,
 *     and an fd's I/O completes on the worker that owns it (the worker
 *     that first used it). The scheduler must: have each worker park on
 *     its own source (never on a futex: its I/O would wait), 'drive'
 *     (timers, closed fds) only with its trylock held; call worker_start
 *     on the worker's thread before its first park and worker_exit once
 *     no task is polled or dropped on any worker any more, one worker at
 *     a time; prefer what a worker's own source woke to stealing (the
 *     tasks' next I/O would complete elsewhere: docs/scheduler.md,
 *     "Locality"); and wake a sleeping worker when another is stuck in
 *     one poll, since a stuck worker's source is served only from a
 *     peer's park (the driver's business: io_uring's rescue).
 * A current-thread runtime always has a shared driver and parks as
 * worker 0 with 'drive' 1. */
struct fut__driver;
struct fut__driver_vt {
    /* Blocks until an I/O event, an unpark or 'timeout_ns' (-1 = until
     * something happens; 0 = do not block), then wakes the tasks whose I/O
     * is ready and whose timers expired. Shared: called by the one thread
     * that holds the driver, with 'drive' 1; 'worker' is ignored.
     * Per-worker: called by worker 'worker' on its own thread, on its
     * own event source; with 'drive' it also holds the driver's shared
     * part (timers, closed fds: the scheduler's trylock) and serves it as
     * a shared park would. */
    void (*park)(struct fut__driver *d, int worker, int64_t timeout_ns,
                 int drive);
    /* Makes a park in progress (or the next one) return: the shared
     * driver's (any 'worker'), or worker 'worker''s. Any thread. */
    void (*unpark)(struct fut__driver *d, int worker);
    /* Shutdown, after every task was dropped: releases the fds, timers
     * and the blocking pool. 'unpark' stays safe until 'free'. */
    void (*shutdown)(struct fut__driver *d);
    /* Frees the driver (after 'shutdown'), once no thread can unpark it:
     * the multi-thread scheduler frees it with its own memory, because a
     * thread that is not a worker may still be unparking a worker's
     * driver park when shutdown ends (it holds a scheduler reference). */
    void (*free)(struct fut__driver *d);
    /* For a scheduler whose parkers may sleep elsewhere (multi-thread):
     * returns 1 when nothing but an unpark could end a park in the driver
     * (no fd registered, no timer armed, no closed fd to reap). Until the
     * next blocking park, the first fd registration or timer arm then
     * calls 'interest' (after the driver's lock is released), so that a
     * sleeper comes to drive it. Any thread. Always 0 on a per-worker
     * driver (its workers never sleep elsewhere). */
    int (*idle)(struct fut__driver *d);
    /* Per-worker drivers only (NULL on shared ones). worker_start: worker
     * 'worker' binds its thread to its event source, before its first
     * park. worker_exit: it detaches from it for good - its fds' state
     * is released - once every worker stopped polling and dropping tasks;
     * the scheduler calls it for one worker at a time (they share the fd
     * lists), then no park of that worker follows. */
    void (*worker_start)(struct fut__driver *d, int worker);
    void (*worker_exit)(struct fut__driver *d, int worker);
    /* Whether worker 'worker''s event source has something for it now (a
     * completion, a request from a peer): a hint for the park spin, by
     * that worker. */
    int (*ready)(struct fut__driver *d, int worker);
};
struct fut__driver {
    const struct fut__driver_vt *vt;
    /* 1 from an 'idle' that returned 1 until the next blocking park or
     * the first fd registration or timer arm (which then calls
     * 'interest'): a park now could only end by an unpark. Written under
     * the driver's lock; read without it by a parker that would skip the
     * driver (seq_cst: see fut__mt_park in rt/multi/park.c). */
    fut__aword undriven;
    /* Parks and polls begun so far ('park' with 'drive'),
     * counted by the one thread in the driver; read by the multi-thread
     * scheduler's monitor (relaxed: a hint that somebody drives). */
    fut__aword turns;
    /* Set by the scheduler after creation (NULL: never called); see
     * 'idle'. Called from the thread that registers or arms. */
    void (*interest)(struct fut__driver *d, void *ud);
    void *interest_ud;
    /* The I/O backend's name ("epoll", "io_uring"); static. */
    const char *backend;
    /* 1: a per-worker driver, 0: a shared one (see fut__driver_vt).
     * Static after creation. */
    int per_worker;
    /* A simulation's driver: set by a blocking park that found nothing
     * that could ever end it (no timer, no fd, no blocking job, no
     * unpark) and returned instead of sleeping; cleared by the parking
     * thread, the only one that reads or writes it. */
    int stalled;
};

struct fut__sched {
    const struct fut__sched_vt *vt;
    struct fut_runtime *rt;
    struct fut__driver *driver; /* NULL: futex parking only */
    int64_t slow_poll_ns;       /* debug: report longer polls (-1: never) */
    /* The long-poll watchdog (rt/watchdog.h), or NULL: made by
     * fut_runtime_new before the start, stopped and freed by
     * fut_runtime_free around the shutdown; the polling threads bind
     * its slots (a worker: its index; the current-thread runtime: 0). */
    struct fut__watch *watch;
    /* A simulation runtime's state (rt/sim_trace.h; fut_sim_new sets it
     * before the first spawn and the current-thread scheduler owns and
     * frees it), or NULL. */
    struct fut__sim *sim;
};

/* The runtime handle (fut_runtime_new): its scheduler, which frees it
 * (fut__sched_vt.shutdown). */
/* Lifetime: fut_runtime_free shuts the scheduler down; the handle's
 * memory goes with the scheduler's, when the last join handle or waker
 * of its tasks is gone (both flavors), so that fut_spawn on a freed
 * runtime can answer FUT_ESHUTDOWN while one is alive (rt.h). */
struct fut_runtime {
    struct fut__sched *sched;
    int freed;    /* fut_runtime_free ran (its thread only) */
    uint32_t gen; /* debug: registered while not freed (handles.c) */
};

/* The scheduler running on this thread (inside block_on or a worker). */
extern _Thread_local struct fut__sched *fut__tls_sched;

/* --------------------------------------------------------- task (task.c) */

/* Outcome of polling a task once. */
enum fut__run_result {
    FUT__RUN_IDLE,       /* PENDING; it will be queued again when woken */
    FUT__RUN_RESCHEDULE, /* woken during its poll: queue it again now */
    FUT__RUN_DONE        /* completed or cancelled; reference released */
};

/* Initialises the header of a freshly allocated task (state: queued,
 * owned-list reference, plus the join reference when 'joined'). */
void fut__task_init(struct fut_task *t, struct fut__sched *s, int joined,
                    const char *file, int line);
/* Polls a task popped from a run queue; 'budget' is the coop budget;
 * '*budget_spent' = 1 when the poll ended with the budget used up. */
enum fut__run_result fut__task_run(struct fut_task *t, int budget,
                                   int *budget_spent);
/* The same, with the budget in and out: '*budget' is what is left after
 * the poll (the multi-thread scheduler charges LIFO polls to it). */
enum fut__run_result fut__task_poll(struct fut_task *t, int *budget);
/* Drops the future of a task the caller owns (it holds RUNNING: popped it
 * from a queue) and completes it as cancelled. */
void fut__task_cancel(struct fut_task *t);
/* fut_join_abort's abort of task 't', without a handle (fut_sim_crash):
 * dropped at once when idle and this thread runs its scheduler, else
 * queued to be dropped, or dropped after its running poll. */
void fut__task_abort(struct fut_task *t);
/* Shutdown of a task that may be owned elsewhere: when it is idle, takes
 * it, drops it and returns 1; otherwise marks it CANCELLED (its owner -
 * a queue, a poll, an abort in progress - drops it) and returns 0. */
int fut__task_shutdown_idle(struct fut_task *t);
/* Reference count of a task (a scheduler holding one across a hand-off,
 * e.g. a deferred unlink). */
void fut__task_ref_inc(struct fut_task *t);
void fut__task_ref_dec(struct fut_task *t);
/* Drops a task's future during shutdown (the caller owns the scheduler
 * and no queue holds the task any longer). */
void fut__task_shutdown(struct fut_task *t);
/* Initialises a join handle for 't' (which holds its join reference). */
void fut__join_init(struct fut_join *j, struct fut_task *t);
/* The waker vtable of tasks (data = the task). */
extern const struct fut_waker_vtable fut__task_waker_vt;

/* ------------------------------------------------------------ schedulers */

/* Creates the driver of a runtime being created with 'cfg' (src/io's
 * fut__driver_new, which the runtime handle passes down: the schedulers
 * sit below the drivers and never name them). */
typedef int (*fut__driver_new_fn)(struct fut__sched *s,
                                  const struct fut_rt_config *cfg,
                                  struct fut__driver **out);

/* Create a scheduler for the runtime handle 'rt' (and its driver with
 * 'driver_new' unless cfg->no_driver). 0, FUT_ENOMEM, FUT_EINVAL, or the
 * driver's error; on error nothing is left and 'rt' is the caller's.
 * The multi-thread scheduler's workers start in its vt->start, so
 * whatever is attached to the scheduler in between is seen by them. */
int fut__ct_new(struct fut_runtime *rt, const struct fut_rt_config *cfg,
                fut__driver_new_fn driver_new, struct fut__sched **out);
int fut__mt_new(struct fut_runtime *rt, const struct fut_rt_config *cfg,
                fut__driver_new_fn driver_new, struct fut__sched **out);

/* The task the current-thread scheduler running on this thread will poll
 * next (the head of its local run queue), or NULL: no such scheduler on
 * this thread, an empty queue, or a simulation (whose pick is seeded).
 * A hint for prefetching only (the fiber yield, src/fiber): the task is
 * queued, nobody polls it now, and it may be picked after others (a
 * remote drain, the main future). Runtime thread; reads only. */
struct fut_task *fut__ct_peek_next(void);

/* A simulation runtime (runtime.c; fut_sim_new in sim.c): the
 * current-thread scheduler in simulation mode with the simulation's
 * driver. 0, FUT_EINVAL (a multi-thread flavor or no_driver in 'cfg', or
 * what fut_runtime_new refuses), FUT_ENOMEM. */
int fut__sim_runtime_new(const struct fut_rt_config *cfg, uint64_t seed,
                         struct fut_runtime **out);

/* ----------------------------------------------------- block_on_thread.c */

/* block_on without a runtime: polls 'f' with a thread-parking waker. */
int fut__block_on_thread(struct fut_future *f);

#endif /* FUT_RT_INTERNAL_H */
