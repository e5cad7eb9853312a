/* SPDX-License-Identifier: MIT */
/* The multi-thread work-stealing scheduler (Tokio's multi_thread): N
 * worker threads, each with a bounded local ring (queue.c), a stealable
 * LIFO slot and a queue of thread-affine tasks; a global injection queue
 * for tasks queued from outside the workers; parking on futexes (or in
 * the driver) with a count of searching workers. docs/scheduler.md has
 * the design and the reasons; this block is the contract.
 *
 * This header is what the rooms of src/rt/multi/ share: the two structs,
 * with the room that writes each field (and under which lock or
 * ordering), the helpers every room uses (inline, calling nothing in this
 * folder), and the rooms' functions. The rooms, from the bottom up: a
 * room calls only the rooms listed before it (scripts/check-layers.sh
 * fails on two files that call each other):
 *   tls.c       the thread-local pointers (defined, not written)
 *   park.c      a worker's parker: the park spin, futex or driver sleep
 *   destroy.c   the scheduler's references and its final free
 *   idle.c      searching/parked accounting, who to wake, the watcher
 *   inject.c    the injection queue
 *   schedule.c  where a woken task goes (LIFO slot, ring, 'lq', 'rl')
 *   spawn.c     spawn, block_on, unlink and free of a finished task
 *   steal.c     stealing from peers, and from a stuck peer's LIFO slot
 *   shutdown.c  dropping every task, joining the workers
 *   worker.c    the worker loop: next task, run, budget, park
 *   stats.c     fut_runtime_stats and per-worker statistics
 *   dump.c      fut_runtime_dump's walk of the workers' task lists
 *   create.c    the vtable, creation and start of the workers
 * A room's fast paths that others call are inline in its own header
 * (destroy.h, idle.h, inject.h, schedule.h; tslab.h is rt/slab.h's in
 * cache lines), included only by the rooms above it, so that hot paths
 * stay as inlinable as they were when this was one file (worker_loop and
 * run_tick are flattened).
 *
 * Ownership (who may touch what):
 *   - a task in a queue is owned by the queue (its RUNNING bit was set by
 *     whoever queued it, task.c); it leaves it once, to the thread that
 *     pops or steals it, which polls it. Queues: a worker's ring and LIFO
 *     slot (owner pushes; owner, stealers and the watcher take), its
 *     local queue 'lq' (owner only), its remote-local queue 'rl' (anyone
 *     pushes onto the stack, owner takes), the injection queue (anyone,
 *     under 'inject_lock');
 *   - live tasks are on a list so that shutdown finds the idle ones: a
 *     task spawned on worker W is on W's 'owned' (or 'owned_local') list,
 *     which only W touches - a task completed elsewhere is pushed on W's
 *     'unlinks' stack (holding a reference) and W unlinks it later; a
 *     task spawned by any other thread is on 'foreign', under
 *     'inject_lock'. The home is in the task's flags (immutable);
 *   - task memory from W's slab goes back to it: locally on W, through
 *     the slab's remote stack elsewhere;
 *   - after the workers are joined, the shutdown thread
 *     ('fut__mt_tls_owner') is the owner of everything the workers owned.
 *
 * Thread-affine tasks (TASK_F_LOCAL): queued only on their home's 'lq'
 * (by the home) or 'rl' (by anyone else, then the home is unparked);
 * never stolen; polled and dropped only by the home worker, which before
 * it exits drops every one of them (waiting for those a foreign thread
 * is handing over).
 *
 * Idle protocol (Tokio's idle.rs), 'idle' = (unparked << 16) | searching:
 *   - a worker that runs out of work becomes a searcher (at most half
 *     the workers search), steals, then parks: under 'sleep_lock' it
 *     decrements unparked (and searching), joins 'sleepers' and sets
 *     'sleeping'; a last searcher then looks at every queue once more;
 *   - whoever makes stealable work (a ring going non-empty, the
 *     injection queue) checks 'idle' after a seq_cst fence; if nobody
 *     searches and someone sleeps, it pops one sleeper under
 *     'sleep_lock', counts it unparked and searching, clears its
 *     'sleeping' and unparks it: one wake starts at most one worker;
 *   - no lost wake: pusher "push; fence; read idle" against parker
 *     "RMW idle; fence; read queues" - one of them sees the other;
 *   - a woken worker that is still 'sleeping' (a spurious or timed wake,
 *     the driver, its 'rl' queue) takes itself out of 'sleepers' only if
 *     it has work other than thread-affine tasks, which it runs while
 *     still counted as asleep (run_parked); one that is not 'sleeping'
 *     was popped and is searching.
 * Parker (one per worker, 'pstate'): EMPTY -> PARKED_FUTEX/PARKED_DRIVER
 * by the worker before it sleeps; swap to NOTIFIED by an unparker, which
 * then does one FUTEX_WAKE or driver->unpark (nothing when the worker
 * was not asleep: the permit makes its next park return). Before it
 * sleeps, a worker may spin (rt/park_spin.h) watching for the permit,
 * still EMPTY (so its unparker makes no syscall) and still counted
 * asleep; a spin that sees none goes on to sleep as above (park_spin).
 *
 * The LIFO slot holds the task last woken (or spawned) by the running
 * task; the owner runs it right after the current task, at most LIFO_MAX
 * in a row and within the budget of the tick that started the chain.
 * Others may take it, but only from a worker that looks stuck: its
 * poll count (polls started) has not moved for STUCK_NS while its LIFO
 * slot or ring held work. To be sure someone looks, a push into an empty
 * LIFO slot (and a reschedule into the ring) wakes a worker unless a
 * *sleeping* watcher exists: a parked worker that holds 'watcher' and
 * parks with a timeout (WATCH_MIN..WATCH_MAX ns) while another worker is
 * unparked. The watcher gives the role up (and parks without timeout)
 * once every other worker sleeps, re-reading 'idle' after the release so
 * that a worker unparking meanwhile is never left unwatched.
 *
 * Lifetime: the scheduler (and the runtime handle with it) lives while
 * 'refs' > 0. 'refs' starts at BIAS + 1 (the handle); threads that are
 * not workers of this runtime add one per task they spawn and drop one
 * per task they free; workers count their spawns and frees in their own
 * statistics, which shutdown folds into 'refs' (minus BIAS) once they are
 * joined - so the common paths touch no shared counter. Blocks of the
 * block pool (fut__tls_pool: oneshots from a worker's slab) are counted
 * the same way. A block_on holds one reference while it runs.
 */
#ifndef FUT_RT_MULTI_H
#define FUT_RT_MULTI_H

#include <pthread.h>
#include <unistd.h>

#include "platform/sys.h"
#include "rt/lifo.h"
#include "rt/park_spin.h"
#include "rt/queue.h"
#include "rt/rt_internal.h"
#include "rt/slab.h"
#include "util/mutex.h"

#define DIRECT 0x80000000u /* size_class: DIRECT | bytes from fut__alloc */
#define SLAB_HOME_SHIFT 8  /* size_class: class | (home + 1) << 8 */
#define HOME_SHIFT 4       /* flags: TASK_F_LOCAL | (home + 1) << 4 */

#define SEARCH_MASK ((uintptr_t)0xffff)
#define UNPARK_ONE ((uintptr_t)1 << 16)
#define BIAS ((uintptr_t)1 << (sizeof(uintptr_t) * 8 - 2))

enum { P_EMPTY = 0, P_FUTEX = 1, P_DRIVER = 2, P_NOTIFIED = 3 };
enum { MON_RUN = 0, MON_DORMANT = 1, MON_STOP = 2 }; /* monitor.c */

/* Per-worker statistics: written by the worker only (relaxed load +
 * store; ST_REMOTE too, counted by the owner in rl_drain), read by
 * anyone (stats.c; steal.c reads ST_POLLS, rt/lifo.h ST_POLLS_DONE). */
enum {
    ST_SPAWNED,
    ST_FREED,
    ST_ALIVE,
    ST_POLLS,
    ST_PARKS,
    ST_UNPARKS,
    ST_STEALS,
    ST_STOLEN,
    ST_LIFO,
    ST_GLOBAL,
    ST_BUDGET,
    ST_REMOTE,
    ST_BLOCKS,
    ST_BLOCKS_FREED, /* block pool: allocated here, freed here */
    ST_POLLS_DONE,   /* polls finished (release: see run_one) */
    ST_SPINS,
    ST_SPIN_HITS, /* park spins, and those a wake ended */
    ST_SPIN_NS,   /* a gauge: the next park spin's bound (0: never) */
    ST__COUNT
};

/* What a worker saw of a peer, for steal.c's stuck detection (written
 * and read by that worker only). */
struct seen {
    uintptr_t seq; /* the peer's poll count when first seen busy */
    int64_t since; /* when first seen not moving from it; 0: not yet */
    int armed;
};

/* Task memory (tslab.h): per worker, a struct fut__slab (rt/slab.h) used
 * in whole cache lines (classes of 64 bytes, 64-aligned blocks). Two
 * tasks never share a line, so tasks polled on two workers do not fight
 * over one (yield_many: 35-42 ns per yield with 16-byte-aligned blocks,
 * 21-22 ns with lines). The owner allocates and frees without atomics;
 * other threads free onto a stack the owner takes whole (no ABA). */
#define TS_LINE FUT__SLAB_LINE
#define TS_CLASSES 16 /* up to 1 KiB; larger tasks come from the hook */

struct mt_sched;

/* One worker. Each field names the rooms that write it ("owner": the
 * worker's own thread; after the workers are joined, the shutdown thread
 * in their place); anyone may read the atomics. */
struct mt_worker {
    /* --- read and written by other threads --- */
    /* Owner pushes and pops (schedule.h, worker.c); thieves steal
     * (steal.c, inject.c's batch races them): rt/queue.h's rules. */
    _Alignas(64) struct fut__ring ring;
    /* Owner pushes (schedule.h) and takes (worker.c); a thief takes it
     * from a stuck owner only (steal.c, rt/lifo.h's rules). */
    _Alignas(64) struct fut__lifo lifo; /* a task, or 0 (rt/lifo.h) */
    /* Parker, P_*: the owner moves EMPTY -> FUTEX/DRIVER and back
     * (park.c); any unparker swaps in NOTIFIED (unpark_worker). */
    fut__aword pstate;
    /* In 'sleepers': set by the owner (idle.c to_parked), cleared by a
     * popper (idle.c) or the owner (unpark_self), all under sleep_lock;
     * read without it (acquire) by the owner (worker.c). */
    fut__aword sleeping;
    /* 1 while the owner runs tasks its own park woke, still in
     * 'sleepers' (worker.c run_parked): a popper passes it over (idle.c
     * pop_sleeper). Written by the owner, read by poppers (relaxed:
     * a hint). */
    fut__aword in_run;
    /* Its ST_POLLS at the monitor's last tick (the monitor's alone:
     * monitor.c check_stuck). */
    uintptr_t mon_polls;
    /* A task given to it as it is woken: stored by the popper under
     * sleep_lock (idle.c handoff), taken by the owner (worker.c). */
    fut__aword handoff;
    /* Remote-local queue, a stack (stack_push): anyone pushes
     * (schedule.h rl_push, dump.c), the owner takes (rl_drain). On the
     * line of 'pstate', which every push is followed by a swap of
     * (unpark_worker): one line moves between the threads for a
     * cross-thread wake, not two. */
    fut__aword rl;
    /* Park spin: when an unparker last issued a FUTEX_WAKE to this
     * worker (fut_now_ns). A hint for the spin's rules, stored relaxed
     * after the swap that found P_FUTEX (unpark_worker), read by the
     * owner (park.c); one older than the park is ignored (park_spin.h).
     * On the line the unparker just swapped. */
    fut__aword wake_ns;
    /* Stack of its tasks completed elsewhere: anyone pushes (spawn.c
     * unlink), the owner takes (fut__mt_drain_unlinks). */
    _Alignas(64) fut__aword unlinks;
    _Alignas(64) fut__aword st[ST__COUNT]; /* owner: see ST_* */
    /* --- the worker's own (written by the owner only, unless said) --- */
    _Alignas(64) struct mt_sched *m; /* create.c, before the start */
    int index;                       /* create.c */
    int searching;    /* counted in idle's searching (idle.c, worker.c) */
    int lifo_enabled; /* inside a tick's polls, LIFO cap not reached */
    int lifo_cont;    /* cap reached: the next push continues the chain */
    int global_due;   /* the global queue goes first at the next tick */
    int in_driver;    /* inside driver->park: wakes go to the ring */
    int watching;     /* holds m->watcher (idle.c) */
    int exiting;      /* shutdown: dropping its thread-affine tasks */
    int started;      /* create.c, by the starting thread; shutdown.c */
    struct fut__spin spin; /* park spin: when and how long (park.c) */
    int64_t watch_ns;      /* the watcher's park timeout (idle.c) */
    int64_t dry_since;     /* with a driver: when it last found no
                          work of its own (0: it has some); it steals from
                          a peer's run queue only STEAL_IDLE_NS after
                          (worker.c) */
    uint32_t tick;
    uint32_t countdown; /* ticks to the next maintenance (no division) */
    uint64_t rng;       /* search's random start (worker.c) */
    struct fut_task *lq_head, *lq_tail; /* thread-affine run queue */
    struct fut__list owned;             /* live tasks homed here */
    struct fut__list owned_local;       /* the thread-affine ones */
    uintptr_t n_alive;                  /* spawn.c */
    struct seen *seen;                  /* per peer (steal.c) */
    struct fut__slab tslab;             /* task memory (cache-line blocks) */
    struct fut__slab slab;              /* the block pool's memory */
    struct fut__blockpool pool;         /* fut__tls_pool on this worker */
    pthread_t thread;                   /* create.c; joined by shutdown.c */
};

/* The scheduler. The configuration and 'w' are written by create.c
 * before the workers start and only read afterwards. */
struct mt_sched {
    struct fut__sched base;
    int n;
    int budget;
    int event_interval;
    int64_t spin_ns; /* park spin: the configured bound, 0: adaptive,
                        -1: never */
    int asym;        /* membarrier works: owners take their LIFO slot
                        without a locked instruction (rt/lifo.h) */
    struct mt_worker *w;
    void *w_mem;
    size_t w_bytes;
    /* injection queue and the foreign-spawned tasks (inject.c; spawn.c
     * spawn_foreign and unlink; shutdown.c; dump.c reads 'foreign') */
    fut__mutex inject_lock;
    struct fut_task *ihead, *itail; /* under inject_lock */
    struct fut__list foreign;       /* tasks (inject_lock) */
    int closed;                     /* no spawns (inject_lock) */
    fut__aword inject_n;            /* length hint, stored under the lock */
    fut__aword closing;             /* 'closed' for lock-free readers */
    fut__aword stop;                /* workers exit (shutdown.c) */
    /* idle (idle.c; the owner's to_parked and unpark_self included) */
    fut__aword idle; /* (unparked << 16) | searching */
    fut__mutex sleep_lock;
    int *sleepers; /* under sleep_lock */
    int nsleepers;
    fut__aword watcher;     /* index + 1, or 0 (CAS) */
    fut__aword driver_lock; /* 1 while a worker uses the driver */
    /* Per-worker driver: workers past fut__mt_worker_exit (shutdown.c);
     * the barrier's count, written by mt_start before any stop. */
    fut__aword srcs_out;
    fut__aword srcs_detached; /* workers detached from their event
                                 sources so far (index order) */
    int n_started;
    /* lifetime (destroy.h) and statistics of non-worker threads */
    fut__aword refs;
    fut__aword f_spawned, f_freed, f_remote; /* f_freed: RMW; the others
                                                under inject_lock */
    fut__aword f_handoff;                    /* written under sleep_lock */
    /* the monitor (monitor.c: its rules) */
    fut__aword mon_state; /* MON_RUN, MON_DORMANT, MON_STOP */
    fut__aword mon_wakes; /* sleepers it woke to drive (the monitor's) */
    pthread_t mon_thread;
    int mon_started; /* create.c / shutdown.c */
};

/* The worker running on this thread (worker.c sets it), and the runtime
 * whose lists this thread owns while it shuts it down (shutdown.c);
 * defined in tls.c. */
extern _Thread_local struct mt_worker *fut__mt_tls_w;
extern _Thread_local struct mt_sched *fut__mt_tls_owner;

/* ------------------------------------------------- shared helpers */

static inline struct mt_sched *mt_of(struct fut__sched *s)
{
    return (struct mt_sched *)s;
}

/* This thread's worker if it is one of 'm's. */
static inline struct mt_worker *me_in(struct mt_sched *m)
{
    struct mt_worker *w = fut__mt_tls_w;
    return w && w->m == m ? w : NULL;
}

static inline void stat_add(struct mt_worker *w, int i, uintptr_t n)
{
    fut__store(&w->st[i], fut__load(&w->st[i], FUT__RELAXED) + n,
               FUT__RELAXED);
}

static inline void stat_inc(struct mt_worker *w, int i)
{
    stat_add(w, i, 1);
}

/* The same, published with release (what the counter's readers then
 * need is said where it is called). */
static inline void stat_inc_release(struct mt_worker *w, int i)
{
    fut__store(&w->st[i], fut__load(&w->st[i], FUT__RELAXED) + 1,
               FUT__RELEASE);
}

static inline unsigned task_home(const struct fut_task *t)
{
    return t->flags >> HOME_SHIFT;
}

static inline uint32_t rng_next(struct mt_worker *w)
{
    /* xorshift64* */
    w->rng ^= w->rng >> 12;
    w->rng ^= w->rng << 25;
    w->rng ^= w->rng >> 27;
    return (uint32_t)((w->rng * 0x2545F4914F6CDD1Dull) >> 32);
}

/* The 'owned' lists of tasks (util/list.h through fut_task.owned). */
static inline void list_add(struct fut__list *h, struct fut_task *t)
{
    fut__list_push_front(h, &t->owned);
}

static inline void list_del(struct fut_task *t)
{
    fut__list_remove(&t->owned);
}

/* The first task of non-empty list 'h'. */
static inline struct fut_task *list_first(struct fut__list *h)
{
    return fut__task_of_owned(h->next);
}

/* FIFO of tasks linked by 'next': appends the chain first..last. */
static inline void fifo_push_list(struct fut_task **head,
                                  struct fut_task **tail,
                                  struct fut_task *first,
                                  struct fut_task *last)
{
    last->next = NULL;
    if (*tail)
        (*tail)->next = first;
    else
        *head = first;
    *tail = last;
}

static inline void fifo_push(struct fut_task **head, struct fut_task **tail,
                             struct fut_task *t)
{
    fifo_push_list(head, tail, t, t);
}

static inline struct fut_task *fifo_pop(struct fut_task **head,
                                        struct fut_task **tail)
{
    struct fut_task *t = *head;
    if (t) {
        *head = t->next;
        if (!*head)
            *tail = NULL;
    }
    return t;
}

/* Lock-free stack of tasks linked by 'next' (any thread pushes, one
 * thread takes them all at once: no ABA, a pusher's CAS that succeeds
 * saw the top it linked to). Returns the top the push replaced. Release:
 * 't' and its 'next' before a taker's acquire swap; seq_cst where the
 * caller needs the push ordered against a Dekker check (see callers). */
static inline uintptr_t stack_push(fut__aword *top, struct fut_task *t,
                                   int mo)
{
    uintptr_t old = fut__load(top, FUT__RELAXED);
    do
        t->next = (struct fut_task *)old;
    while (!fut__cas_weak(top, &old, (uintptr_t)t, mo, FUT__RELAXED));
    return old;
}

/* Takes the whole stack, newest first; NULL when empty. Acquire: pairs
 * with the pushers' release. */
static inline struct fut_task *stack_take(fut__aword *top)
{
    if (fut__load(top, FUT__RELAXED) == 0)
        return NULL;
    return (struct fut_task *)fut__swap(top, 0, FUT__ACQUIRE);
}

/* The futex word: the low 32 bits of the parker's aword. */
static inline uint32_t *futex_word(fut__aword *a)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return (uint32_t *)(void *)a + (sizeof(uintptr_t) / 4 - 1);
#else
    return (uint32_t *)(void *)a;
#endif
}

static inline int driver_trylock(struct mt_sched *m)
{
    uintptr_t zero = 0;
    /* Acquire: pairs with the previous holder's release; driver->park is
     * called by one thread at a time and sees what the last one did. */
    return fut__load(&m->driver_lock, FUT__RELAXED) == 0 &&
           fut__cas(&m->driver_lock, &zero, 1, FUT__ACQUIRE, FUT__RELAXED);
}

static inline void driver_unlock(struct mt_sched *m)
{
    fut__store(&m->driver_lock, 0, FUT__RELEASE); /* pairs: trylock */
}

/* One FUTEX_WAKE or driver unpark at most; nothing when 'w' is awake. */
static inline void unpark_worker(struct mt_worker *w)
{
    /* Release: what we published before is visible to the woken worker
     * (pairs with fut__mt_park's acquire swaps). */
    uintptr_t prev = fut__swap(&w->pstate, P_NOTIFIED, FUT__ACQ_REL);
    if (prev == P_FUTEX) {
        /* For the spin's rules (even with the spin off: reading w->m
         * here could miss on a line the worker writes; the clock read
         * is ~20 ns against the syscall's microseconds). */
        fut__store(&w->wake_ns, (uintptr_t)fut_now_ns(), FUT__RELAXED);
        fut__sys_futex_wake(futex_word(&w->pstate), 1);
    } else if (prev == P_DRIVER) {
        struct fut__driver *d = w->m->base.driver;
        /* Per-worker: parked on its own event source, after a spin:
         * wake_ns as above. Shared: the driver's holder, no spin. */
        if (d->per_worker)
            fut__store(&w->wake_ns, (uintptr_t)fut_now_ns(), FUT__RELAXED);
        d->vt->unpark(d, w->index);
    }
}

static inline void lq_push(struct mt_worker *w, struct fut_task *t)
{
    fifo_push(&w->lq_head, &w->lq_tail, t);
}

static inline struct fut_task *lq_pop(struct mt_worker *w)
{
    return fifo_pop(&w->lq_head, &w->lq_tail);
}

static inline int should_wake(struct mt_sched *m, uintptr_t s)
{
    return (s & SEARCH_MASK) == 0 && (s >> 16) < (uintptr_t)m->n;
}

/* Some ring, or the injection queue, holds work. */
static inline int work_visible(struct mt_sched *m)
{
    if (fut__load(&m->inject_n, FUT__RELAXED))
        return 1;
    for (int i = 0; i < m->n; i++)
        if (fut__ring_len(&m->w[i].ring))
            return 1;
    return 0;
}

/* No sleeping watcher: somebody has to be woken to watch. */
static inline int need_watch(struct mt_sched *m)
{
    /* Seq_cst: ordered with the watcher's release and re-read of 'idle'
     * (see the rules: an unparking worker is never left unwatched). */
    uintptr_t cur = fut__load(&m->watcher, FUT__SEQ_CST);
    return cur == 0 || !fut__load(&m->w[cur - 1].sleeping, FUT__SEQ_CST);
}

static inline int any_lifo(struct mt_sched *m)
{
    for (int i = 0; i < m->n; i++)
        if (fut__load(&m->w[i].lifo.task, FUT__RELAXED))
            return 1;
    return 0;
}

/* ------------------------------------------------ the rooms' functions */

/* park.c: sleeps until unparked or 'timeout_ns' (-1: none) passed; in
 * the driver when 'use_driver' and nobody else holds it. Owner. */
void fut__mt_park(struct mt_worker *w, int64_t timeout_ns, int use_driver);

/* monitor.c: the thread that keeps the driver served while a worker runs
 * a long poll (its rules). start: by mt_start, after the workers (0, or
 * FUT_ENOMEM / -errno); stop: first thing in shutdown, joins it. */
/* 1 when the runtime gets a monitor thread (a driver, two workers or
 * more); fut__mt_mon_start starts it then. */
int fut__mt_mon_wanted(const struct mt_sched *m);
int fut__mt_mon_start(struct mt_sched *m);
void fut__mt_mon_stop(struct mt_sched *m);

/* destroy.c: frees the scheduler, its driver and the runtime handle
 * (release_refs, destroy.h, calls it when the last reference goes). */
void fut__mt_destroy(struct mt_sched *m);

/* idle.c */
void fut__mt_notify_slow(struct mt_sched *m);
int fut__mt_handoff(struct mt_sched *m, struct fut_task *t);
int fut__mt_to_searching(struct mt_worker *w);
void fut__mt_from_searching(struct mt_worker *w);
int fut__mt_to_parked(struct mt_worker *w);
void fut__mt_unpark_self(struct mt_worker *w);
void fut__mt_claim_watch(struct mt_worker *w);
void fut__mt_release_watch(struct mt_worker *w);
void fut__mt_watch_idle(struct mt_worker *w);

/* inject.c */
void fut__mt_inject_push_list(struct mt_sched *m, struct fut_task *first,
                              struct fut_task *last, unsigned n);
struct fut_task *fut__mt_inject_take(struct mt_sched *m, unsigned max,
                                     unsigned *got);
struct fut_task *fut__mt_inject_pop_batch(struct mt_worker *w, uintptr_t len);

/* schedule.c: fut__sched_vt.schedule. */
void fut__mt_schedule(struct fut__sched *s, struct fut_task *t);

/* spawn.c: fut__sched_vt's unlink, free_task, drop_here, spawn and
 * block_on; the block pool of a worker (fut__blockpool's alloc/free). */
void fut__mt_unlink(struct fut__sched *s, struct fut_task *t);
void fut__mt_drain_unlinks(struct mt_worker *h);
void fut__mt_free_task(struct fut__sched *s, struct fut_task *t);
int fut__mt_drop_here(struct fut__sched *s, struct fut_task *t);
int fut__mt_spawn(struct fut__sched *s, const struct fut_future *f,
                  size_t size, struct fut_join *join, int local,
                  const char *file, int line);
int fut__mt_block_on(struct fut__sched *s, struct fut_future *f);
void *fut__mt_pool_alloc(struct fut__blockpool *p, size_t size,
                         uint32_t *cls);
void fut__mt_pool_free(struct fut__blockpool *p, void *b, uint32_t cls,
                       size_t size);

/* steal.c */
struct fut_task *fut__mt_steal_peers(struct mt_worker *w);
struct fut_task *fut__mt_steal_stuck(struct mt_worker *w);

/* shutdown.c: the worker's part (thread-affine tasks), and
 * fut__sched_vt.shutdown. */
void fut__mt_worker_exit(struct mt_worker *w);
/* Per-worker driver: after fut__mt_worker_exit, waits for the other
 * workers to get there, then detaches w from its event source (the
 * driver's worker_exit; shutdown.c). */
void fut__mt_source_exit(struct mt_worker *w);
void fut__mt_shutdown(struct fut__sched *s);

/* worker.c: a worker thread's body. */
void *fut__mt_worker_main(void *arg);

/* stats.c: fut__sched_vt's stats, workers and worker_stats. */
void fut__mt_stats(struct fut__sched *s, struct fut_rt_stats *out);
int fut__mt_workers(struct fut__sched *s);
int fut__mt_worker_stats(struct fut__sched *s, int worker,
                         struct fut_rt_stats *out);

/* dump.c: fut__sched_vt.each_task. */
int fut__mt_each_task(struct fut__sched *s, fut__each_task_fn fn, void *ud);

#endif /* FUT_RT_MULTI_H */
