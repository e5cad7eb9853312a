/* The multi-thread work-stealing scheduler (Tokio's multi_thread): N
 * worker threads, each with a bounded local ring (queue.c), a stealable
 * LIFO slot and a queue of thread-affine tasks; a global injection queue
 * for tasks queued from outside the workers; parking on futexes (or in
 * the driver) with a count of searching workers. docs/scheduler.md has
 * the design and the reasons; this block is the contract.
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
 *   - after the workers are joined, the shutdown thread ('tls_owner') is
 *     the owner of everything the workers owned.
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
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "io/driver.h"
#include "rt/lifo.h"
#include "rt/park_spin.h"
#include "rt/queue.h"
#include "rt/rt_internal.h"
#include "rt/slab.h"
#include "util/mutex.h"

#define MT_MAX_WORKERS 256
/* Tokio's MAX_LIFO_POLLS_PER_TICK: a ping-pong pair cannot monopolise a
 * worker through its LIFO slot. */
#define LIFO_MAX 3
/* A poll this long makes its worker's queued work stealable from the
 * LIFO slot (10x shorter than the debug slow-poll report). */
#define STUCK_NS (1000 * 1000)
#define WATCH_MIN_NS (1000 * 1000)
#define WATCH_MAX_NS (8 * 1000 * 1000)
/* The shutdown loop's pause while other threads finish handing tasks
 * over (an abort dropping in place, a wake queueing). */
#define SHUTDOWN_PAUSE_NS (50 * 1000)

#define DIRECT 0x80000000u  /* size_class: DIRECT | bytes from fut__alloc */
#define SLAB_HOME_SHIFT 8   /* size_class: class | (home + 1) << 8 */
#define HOME_SHIFT 4        /* flags: TASK_F_LOCAL | (home + 1) << 4 */

#define SEARCH_MASK ((uintptr_t)0xffff)
#define UNPARK_ONE ((uintptr_t)1 << 16)
#define BIAS ((uintptr_t)1 << (sizeof(uintptr_t) * 8 - 2))

enum { P_EMPTY = 0, P_FUTEX = 1, P_DRIVER = 2, P_NOTIFIED = 3 };

/* Per-worker statistics: written by the worker only (relaxed load +
 * store), read by anyone; REMOTE is the exception (pushers add). */
enum {
    ST_SPAWNED, ST_FREED, ST_ALIVE, ST_POLLS, ST_PARKS, ST_UNPARKS,
    ST_STEALS, ST_STOLEN, ST_LIFO, ST_GLOBAL, ST_BUDGET, ST_REMOTE,
    ST_BLOCKS, ST_BLOCKS_FREED, /* block pool: allocated here, freed here */
    ST_POLLS_DONE, /* polls finished (release: see run_one) */
    ST_SPINS, ST_SPIN_HITS, /* park spins, and those a wake ended */
    ST_SPIN_NS, /* a gauge: the next park spin's bound (0: never) */
    ST__COUNT
};

struct seen {
    uintptr_t seq; /* the peer's poll count when first seen busy */
    int64_t since; /* when first seen not moving from it; 0: not yet */
    int armed;
};

/* Task memory: per worker, like rt/slab.c, but in whole cache lines
 * (classes of 64 bytes, 64-aligned blocks). Two tasks never share a line,
 * so tasks polled on two workers do not fight over one (yield_many: 35-42
 * ns per yield with 16-byte-aligned blocks, 21-22 ns with lines). The
 * owner allocates and frees without atomics; other threads free onto a
 * stack the owner takes whole (no ABA). */
#define TS_LINE 64
#define TS_CLASSES 16 /* up to 1 KiB; larger tasks come from the hook */
#define TS_CHUNK (64 * 1024)

struct ts_chunk {
    struct ts_chunk *next;
    void *raw; /* what fut__alloc returned */
};

struct tslab {
    void *free[TS_CLASSES + 1]; /* owner only */
    fut__aword remote;          /* blocks freed elsewhere */
    struct ts_chunk *chunks;
    char *bump;
    size_t left;
};

struct mt_sched;

struct mt_worker {
    /* --- read and written by other threads --- */
    _Alignas(64) struct fut__ring ring;
    _Alignas(64) struct fut__lifo lifo; /* a task, or 0 (rt/lifo.h) */
    fut__aword pstate;             /* parker: P_* */
    fut__aword sleeping;           /* in 'sleepers' (set under sleep_lock) */
    fut__aword handoff;            /* a task given to it as it is woken */
    /* Remote-local queue, a stack (stack_push). On the line of 'pstate',
     * which every push is followed by a swap of (unpark_worker): one
     * line moves between the threads for a cross-thread wake, not two. */
    fut__aword rl;
    /* Park spin: when an unparker last issued a FUTEX_WAKE to this
     * worker (fut_now_ns). A hint for the spin's rules, stored relaxed
     * after the swap that found P_FUTEX; one older than the park is
     * ignored (park_spin.h). On the line the unparker just swapped. */
    fut__aword wake_ns;
    _Alignas(64) fut__aword unlinks; /* stack of tasks completed elsewhere */
    _Alignas(64) fut__aword st[ST__COUNT];
    /* --- the worker's own --- */
    _Alignas(64) struct mt_sched *m;
    int index;
    int searching;    /* counted in idle's searching */
    int lifo_enabled; /* inside a tick's polls, LIFO cap not reached */
    int lifo_cont;    /* cap reached: the next push continues the chain */
    int global_due;   /* the global queue goes first at the next tick */
    int in_driver;    /* inside driver->park: wakes go to the ring */
    int watching;     /* holds m->watcher */
    int exiting;      /* shutdown: dropping its thread-affine tasks */
    int started;
    struct fut__spin spin; /* park spin: when and how long (park_spin.h) */
    int64_t watch_ns;
    uint32_t tick;
    uint32_t countdown; /* ticks to the next maintenance (no division) */
    uint64_t rng;
    struct fut_task *lq_head, *lq_tail; /* thread-affine run queue */
    struct fut_task owned;        /* sentinel: live tasks homed here */
    struct fut_task owned_local;  /* sentinel: thread-affine ones */
    uintptr_t n_alive;
    struct seen *seen;            /* per peer */
    struct tslab tslab;           /* task memory (cache-line blocks) */
    struct fut__slab slab;        /* the block pool's memory */
    struct fut__blockpool pool;   /* fut__tls_pool on this worker */
    pthread_t thread;
};

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
    /* injection queue and the foreign-spawned tasks */
    fut__mutex inject_lock;
    struct fut_task *ihead, *itail;  /* under inject_lock */
    struct fut_task foreign;         /* sentinel (inject_lock) */
    int closed;                      /* no spawns (inject_lock) */
    fut__aword inject_n;             /* length hint */
    fut__aword closing;              /* mirrors 'closed' for lock-free readers */
    fut__aword stop;                 /* workers exit */
    /* idle */
    fut__aword idle;                 /* (unparked << 16) | searching */
    fut__mutex sleep_lock;
    int *sleepers;                   /* under sleep_lock */
    int nsleepers;
    fut__aword watcher;              /* index + 1, or 0 */
    fut__aword driver_lock;          /* 1 while a worker uses the driver */
    /* lifetime and statistics of non-worker threads */
    fut__aword refs;
    fut__aword f_spawned, f_freed, f_remote;
    fut__aword f_handoff;            /* written under sleep_lock */
};

/* The worker running on this thread, and the runtime whose lists this
 * thread owns while it shuts it down. */
static _Thread_local struct mt_worker *tls_w;
static _Thread_local struct mt_sched *tls_owner;

static struct mt_sched *mt_of(struct fut__sched *s)
{
    return (struct mt_sched *)s;
}

/* This thread's worker if it is one of 'm's. */
static struct mt_worker *me_in(struct mt_sched *m)
{
    struct mt_worker *w = tls_w;
    return w && w->m == m ? w : NULL;
}

static void stat_add(struct mt_worker *w, int i, uintptr_t n)
{
    fut__store(&w->st[i], fut__load(&w->st[i], FUT__RELAXED) + n,
               FUT__RELAXED);
}

static void stat_inc(struct mt_worker *w, int i)
{
    stat_add(w, i, 1);
}

/* The same, published with release (what the counter's readers then
 * need is said where it is called). */
static void stat_inc_release(struct mt_worker *w, int i)
{
    fut__store(&w->st[i], fut__load(&w->st[i], FUT__RELAXED) + 1,
               FUT__RELEASE);
}

static unsigned task_home(const struct fut_task *t)
{
    return t->flags >> HOME_SHIFT;
}

static uint32_t rng_next(struct mt_worker *w)
{
    /* xorshift64* */
    w->rng ^= w->rng >> 12;
    w->rng ^= w->rng << 25;
    w->rng ^= w->rng >> 27;
    return (uint32_t)((w->rng * 0x2545F4914F6CDD1Dull) >> 32);
}

static void release_refs(struct mt_sched *m, uintptr_t k);

/* ------------------------------------------------------------ lists */

static void list_init(struct fut_task *h)
{
    h->owned_next = h->owned_prev = h;
}

static int list_empty(const struct fut_task *h)
{
    return h->owned_next == h;
}

static void list_add(struct fut_task *h, struct fut_task *t)
{
    t->owned_next = h->owned_next;
    t->owned_prev = h;
    h->owned_next->owned_prev = t;
    h->owned_next = t;
}

static void list_del(struct fut_task *t)
{
    t->owned_prev->owned_next = t->owned_next;
    t->owned_next->owned_prev = t->owned_prev;
    t->owned_next = t->owned_prev = t;
}

/* Moves every task of 'from' to 'to'. */
static void list_splice(struct fut_task *to, struct fut_task *from)
{
    while (!list_empty(from)) {
        struct fut_task *t = from->owned_next;
        list_del(t);
        list_add(to, t);
    }
}

/* FIFO of tasks linked by 'next': appends the chain first..last. */
static void fifo_push_list(struct fut_task **head, struct fut_task **tail,
                           struct fut_task *first, struct fut_task *last)
{
    last->next = NULL;
    if (*tail)
        (*tail)->next = first;
    else
        *head = first;
    *tail = last;
}

static void fifo_push(struct fut_task **head, struct fut_task **tail,
                      struct fut_task *t)
{
    fifo_push_list(head, tail, t, t);
}

static struct fut_task *fifo_pop(struct fut_task **head,
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
static uintptr_t stack_push(fut__aword *top, struct fut_task *t, int mo)
{
    uintptr_t old = fut__load(top, FUT__RELAXED);
    do
        t->next = (struct fut_task *)old;
    while (!fut__cas_weak(top, &old, (uintptr_t)t, mo, FUT__RELAXED));
    return old;
}

/* Takes the whole stack, newest first; NULL when empty. Acquire: pairs
 * with the pushers' release. */
static struct fut_task *stack_take(fut__aword *top)
{
    if (fut__load(top, FUT__RELAXED) == 0)
        return NULL;
    return (struct fut_task *)fut__swap(top, 0, FUT__ACQUIRE);
}

/* ----------------------------------------------------------- parking */

/* The futex word: the low 32 bits of the parker's aword. */
static uint32_t *futex_word(fut__aword *a)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return (uint32_t *)(void *)a + (sizeof(uintptr_t) / 4 - 1);
#else
    return (uint32_t *)(void *)a;
#endif
}

static void futex_wait(fut__aword *a, uint32_t val, int64_t ns)
{
    struct timespec ts, *tp = NULL;
    if (ns >= 0) {
        ts.tv_sec = ns / 1000000000;
        ts.tv_nsec = ns % 1000000000;
        tp = &ts;
    }
    syscall(SYS_futex, futex_word(a), FUTEX_WAIT_PRIVATE, val, tp, NULL, 0);
}

static int driver_trylock(struct mt_sched *m)
{
    uintptr_t zero = 0;
    /* Acquire: pairs with the previous holder's release; driver->park is
     * called by one thread at a time and sees what the last one did. */
    return fut__load(&m->driver_lock, FUT__RELAXED) == 0 &&
           fut__cas(&m->driver_lock, &zero, 1, FUT__ACQUIRE, FUT__RELAXED);
}

static void driver_unlock(struct mt_sched *m)
{
    fut__store(&m->driver_lock, 0, FUT__RELEASE); /* pairs: trylock */
}

static void notify_parked(struct mt_sched *m);

/* fut__driver.interest: the idle driver got an fd or a timer while
 * every parker might be asleep on its futex; wake one (if nobody
 * searches: a searcher parks later and takes the driver itself). */
static void driver_interest(struct fut__driver *d, void *ud)
{
    (void)d;
    notify_parked((struct mt_sched *)ud);
}

/* Park spin (docs/scheduler.md): before it sleeps, a worker watches its
 * parker for up to its spin bound; an unparker that finds it EMPTY
 * meanwhile leaves the permit without a syscall, and the worker takes it
 * without sleeping. When it spins and for how long: park_spin.h. The
 * permit's orderings are park_parker's. */
#define SPIN_CHECKS 8 /* permit checks between clock reads */

/* Returns 1 when a permit arrived before 'end' (fut_now_ns). */
static int park_spin(struct mt_worker *w, int64_t end)
{
    stat_inc(w, ST_SPINS);
    for (;;) {
        for (int i = 0; i < SPIN_CHECKS; i++) {
            /* Relaxed: the acquire swap that takes the permit follows. */
            if (fut__load(&w->pstate, FUT__RELAXED) == P_NOTIFIED)
                return 1;
            fut__cpu_relax();
        }
        if (fut_now_ns() >= end)
            return 0;
    }
}

/* After a futex sleep of a park that began at 't0' ('spun': it spun
 * first): the rules learn when the wake came (wake_ns). */
static void spin_learn(struct mt_worker *w, int64_t t0, int spun)
{
    int64_t now = fut_now_ns();
    /* Relaxed: a hint (see wake_ns); a stale one is older than t0. */
    int64_t at = (int64_t)fut__load(&w->wake_ns, FUT__RELAXED);
    int64_t was = w->spin.bound;
    fut__spin_slept(&w->spin, spun, t0, at, now);
    if (w->spin.bound != was)
        fut__store(&w->st[ST_SPIN_NS], (uintptr_t)w->spin.bound,
                   FUT__RELAXED);
}

/* Sleeps until unparked or 'timeout_ns' (-1: none) passed; in the driver
 * when 'use_driver' and nobody else holds it (the driver then dispatches
 * I/O and timers, waking tasks into this worker's ring). */
static void park_parker(struct mt_worker *w, int64_t timeout_ns,
                        int use_driver)
{
    struct mt_sched *m = w->m;
    /* Acquire: pairs with the unparker's release swap. */
    if (fut__swap(&w->pstate, P_EMPTY, FUT__ACQUIRE) == P_NOTIFIED)
        return;
    struct fut__driver *d = m->base.driver;
    /* A driver still 'undriven' has nothing to wait for: straight to the
     * futex, without the driver's two locks (lines both workers write:
     * xthread_wake paid them on every hop). Seq_cst: a registration
     * clears 'undriven', then (notify_parked) fences and reads 'idle';
     * we RMW'd 'idle' and fenced (park_worker) before reading it - one
     * of the two sees the other, so either we take the driver or the
     * registration wakes a sleeper to come and drive (Dekker). */
    int drv = use_driver && d &&
              !fut__load(&d->undriven, FUT__SEQ_CST) && driver_trylock(m);
    if (drv && d->vt->idle(d)) {
        /* Nothing to wait for in epoll: sleep on our futex, which a
         * cross-thread wake reaches for less than the driver's eventfd
         * (xthread_wake). The first fd or timer from now on calls
         * driver_interest, which wakes a sleeper to come and drive. */
        driver_unlock(m);
        drv = 0;
    }
    /* Spin only before a futex sleep: every wake of that comes through
     * 'pstate', which the spin watches; a worker about to wait in epoll
     * would not see the I/O it waits for. */
    int learn = !drv && m->spin_ns >= 0; /* a futex park, spin on */
    int64_t t0 = 0;
    int spun = 0;
    if (learn) {
        t0 = fut_now_ns();
        spun = w->spin.credit > 0;
        if (spun && park_spin(w, t0 + w->spin.bound)) {
            /* Acquire: pairs with the unparker's release swap. */
            fut__swap(&w->pstate, P_EMPTY, FUT__ACQUIRE);
            stat_inc(w, ST_SPIN_HITS);
            fut__spin_hit(&w->spin);
            return;
        }
    }
    uintptr_t e = P_EMPTY;
    if (!fut__cas(&w->pstate, &e, drv ? P_DRIVER : P_FUTEX, FUT__ACQ_REL,
                  FUT__ACQUIRE)) {
        /* Notified in between: consume the permit. */
        fut__store(&w->pstate, P_EMPTY, FUT__RELAXED);
        if (drv)
            driver_unlock(m);
        if (learn)
            fut__spin_hit(&w->spin); /* as good as a hit */
        return;
    }
    stat_inc(w, ST_PARKS);
    if (drv) {
        w->in_driver = 1;
        d->vt->park(d, timeout_ns);
        w->in_driver = 0;
        driver_unlock(m);
    } else {
        futex_wait(&w->pstate, P_FUTEX, timeout_ns);
    }
    fut__swap(&w->pstate, P_EMPTY, FUT__ACQUIRE); /* pairs: unpark */
    if (learn)
        spin_learn(w, t0, spun);
}

/* One FUTEX_WAKE or driver unpark at most; nothing when 'w' is awake. */
static void unpark_worker(struct mt_worker *w)
{
    /* Release: what we published before is visible to the woken worker
     * (pairs with park_parker's acquire swaps). */
    uintptr_t prev = fut__swap(&w->pstate, P_NOTIFIED, FUT__ACQ_REL);
    if (prev == P_FUTEX) {
        /* For the spin's rules (even with the spin off: reading w->m
         * here could miss on a line the worker writes; the clock read
         * is ~20 ns against the syscall's microseconds). */
        fut__store(&w->wake_ns, (uintptr_t)fut_now_ns(), FUT__RELAXED);
        syscall(SYS_futex, futex_word(&w->pstate), FUTEX_WAKE_PRIVATE, 1,
                NULL, NULL, 0);
    }
    else if (prev == P_DRIVER)
        w->m->base.driver->vt->unpark(w->m->base.driver);
}

/* ---------------------------------------------------- injection queue */

/* Queues a list (linked by 'next') on the injection queue; wakes a
 * worker to take it unless the runtime is stopping. */
static void inject_push_list(struct mt_sched *m, struct fut_task *first,
                             struct fut_task *last, unsigned n)
{
    fut__mutex_lock(&m->inject_lock);
    fifo_push_list(&m->ihead, &m->itail, first, last);
    /* Relaxed: a hint; the queue itself is read under the lock. The
     * statistic is written under it too (no locked instruction). */
    fut__store(&m->inject_n, fut__load(&m->inject_n, FUT__RELAXED) + n,
               FUT__RELAXED);
    fut__store(&m->f_remote, fut__load(&m->f_remote, FUT__RELAXED) + n,
               FUT__RELAXED);
    fut__mutex_unlock(&m->inject_lock);
    if (!fut__load(&m->stop, FUT__RELAXED))
        notify_parked(m);
}

static void inject_push(struct mt_sched *m, struct fut_task *t)
{
    inject_push_list(m, t, t, 1);
}

/* Takes up to 'max' tasks (linked by 'next'); returns the first. */
static struct fut_task *inject_take(struct mt_sched *m, unsigned max,
                                    unsigned *got)
{
    *got = 0;
    if (fut__load(&m->inject_n, FUT__RELAXED) == 0)
        return NULL;
    fut__mutex_lock(&m->inject_lock);
    struct fut_task *first = m->ihead, *t = first, *prev = NULL;
    unsigned n = 0;
    while (t && n < max) {
        prev = t;
        t = t->next;
        n++;
    }
    if (n) {
        m->ihead = t;
        if (!t)
            m->itail = NULL;
        prev->next = NULL;
        fut__store(&m->inject_n, fut__load(&m->inject_n, FUT__RELAXED) - n,
                   FUT__RELAXED);
    }
    fut__mutex_unlock(&m->inject_lock);
    *got = n;
    return n ? first : NULL;
}

/* A worker's share of the injection queue: one task to run and up to
 * half a ring more into its ring (Tokio pulls batches the same way). */
static struct fut_task *inject_pop_batch(struct mt_worker *w)
{
    struct mt_sched *m = w->m;
    uintptr_t len = fut__load(&m->inject_n, FUT__RELAXED);
    if (len == 0)
        return NULL;
    unsigned max = (unsigned)(len / (uintptr_t)m->n + 1);
    if (max > FUT__RING_CAP / 2)
        max = FUT__RING_CAP / 2;
    while (max > 1 && !fut__ring_has_room(&w->ring, max - 1))
        max /= 2;
    unsigned got;
    struct fut_task *t = inject_take(m, max, &got);
    if (!t)
        return NULL;
    stat_add(w, ST_GLOBAL, got);
    for (struct fut_task *q = t->next; q;) {
        struct fut_task *next = q->next, *last;
        unsigned n;
        struct fut_task *ov = fut__ring_push(&w->ring, q, &last, &n);
        if (ov)
            inject_push_list(m, ov, last, n); /* raced a thief: rare */
        q = next;
    }
    return t;
}

/* ---------------------------------------------------------- idle */

static int should_wake(struct mt_sched *m, uintptr_t s)
{
    return (s & SEARCH_MASK) == 0 && (s >> 16) < (uintptr_t)m->n;
}

/* Pops a sleeper, preferring one on a futex (one FUTEX_WAKE) to the one
 * in the driver (an eventfd write and an epoll return). sleep_lock. */
static struct mt_worker *pop_sleeper(struct mt_sched *m)
{
    int pick = m->nsleepers - 1;
    for (int i = m->nsleepers - 1; i >= 0; i--)
        if (fut__load(&m->w[m->sleepers[i]].pstate, FUT__RELAXED) !=
            P_DRIVER) {
            pick = i;
            break;
        }
    struct mt_worker *v = &m->w[m->sleepers[pick]];
    m->sleepers[pick] = m->sleepers[--m->nsleepers];
    return v;
}

/* Work was made stealable: start one sleeping worker unless somebody
 * searches already (see the rules). */
static void notify_parked(struct mt_sched *m)
{
    /* Seq_cst fence: the push we just made against a parker's RMW on
     * 'idle' followed by its fence and queue check (Dekker). */
    fut__fence(FUT__SEQ_CST);
    if (!should_wake(m, fut__load(&m->idle, FUT__RELAXED)))
        return;
    fut__mutex_lock(&m->sleep_lock);
    if (!should_wake(m, fut__load(&m->idle, FUT__RELAXED)) ||
        m->nsleepers == 0) {
        fut__mutex_unlock(&m->sleep_lock);
        return;
    }
    fut__fetch_add(&m->idle, UNPARK_ONE | 1, FUT__SEQ_CST);
    struct mt_worker *v = pop_sleeper(m);
    /* Release: pairs with the woken worker's acquire load. */
    fut__store(&v->sleeping, 0, FUT__RELEASE);
    fut__mutex_unlock(&m->sleep_lock);
    unpark_worker(v);
}

/* A task woken from a thread that is not a worker goes straight to a
 * sleeping worker, which is woken for it: no injection queue, whose lock
 * would cost both threads a cache miss (xthread_wake). The sleeper is
 * popped as notify_parked pops one; it takes 'handoff' before anything
 * else. Returns 0 when nobody sleeps or somebody searches already: the
 * caller queues the task on the injection queue. */
static int handoff(struct mt_sched *m, struct fut_task *t)
{
    if (!should_wake(m, fut__load(&m->idle, FUT__SEQ_CST)))
        return 0;
    fut__mutex_lock(&m->sleep_lock);
    if (!should_wake(m, fut__load(&m->idle, FUT__RELAXED)) ||
        m->nsleepers == 0) {
        fut__mutex_unlock(&m->sleep_lock);
        return 0;
    }
    fut__fetch_add(&m->idle, UNPARK_ONE | 1, FUT__SEQ_CST);
    struct mt_worker *v = pop_sleeper(m);
    /* Only a popper writes 'handoff', once per park of its worker, which
     * takes it before it can sleep again. Release (with 'sleeping'):
     * the task before the worker's acquire. */
    fut__store(&v->handoff, (uintptr_t)t, FUT__RELEASE);
    fut__store(&v->sleeping, 0, FUT__RELEASE);
    fut__store(&m->f_handoff, fut__load(&m->f_handoff, FUT__RELAXED) + 1,
               FUT__RELAXED);
    fut__mutex_unlock(&m->sleep_lock);
    unpark_worker(v);
    return 1;
}

static int to_searching(struct mt_worker *w)
{
    struct mt_sched *m = w->m;
    uintptr_t s = fut__load(&m->idle, FUT__SEQ_CST);
    if (2 * (s & SEARCH_MASK) >= (uintptr_t)m->n)
        return 0; /* half the workers search already */
    fut__fetch_add(&m->idle, 1, FUT__SEQ_CST);
    w->searching = 1;
    return 1;
}

/* Some ring, or the injection queue, holds work. */
static int work_visible(struct mt_sched *m)
{
    if (fut__load(&m->inject_n, FUT__RELAXED))
        return 1;
    for (int i = 0; i < m->n; i++)
        if (fut__ring_len(&m->w[i].ring))
            return 1;
    return 0;
}

/* No sleeping watcher: somebody has to be woken to watch. */
static int need_watch(struct mt_sched *m)
{
    /* Seq_cst: ordered with the watcher's release and re-read of 'idle'
     * (see the rules: an unparking worker is never left unwatched). */
    uintptr_t cur = fut__load(&m->watcher, FUT__SEQ_CST);
    return cur == 0 ||
           !fut__load(&m->w[cur - 1].sleeping, FUT__SEQ_CST);
}

static int any_lifo(struct mt_sched *m)
{
    for (int i = 0; i < m->n; i++)
        if (fut__load(&m->w[i].lifo.task, FUT__RELAXED))
            return 1;
    return 0;
}

static void from_searching(struct mt_worker *w)
{
    struct mt_sched *m = w->m;
    w->searching = 0;
    uintptr_t prev = fut__fetch_sub(&m->idle, 1, FUT__SEQ_CST);
    if ((prev & SEARCH_MASK) != 1)
        return;
    /* The last searcher found work. Tokio then always wakes another
     * worker; we do when there is more to find (xthread_wake would pay a
     * futex wake per hop otherwise). For parallelism only - no wake
     * depends on it (the parkers' re-check does) - so no fence. */
    if (work_visible(m) || (need_watch(m) && any_lifo(m)))
        notify_parked(m);
}

/* Returns 1 when this was the last searcher. */
static int to_parked(struct mt_worker *w)
{
    struct mt_sched *m = w->m;
    fut__mutex_lock(&m->sleep_lock);
    uintptr_t dec = UNPARK_ONE + (w->searching ? 1 : 0);
    uintptr_t prev = fut__fetch_sub(&m->idle, dec, FUT__SEQ_CST);
    int last = w->searching && (prev & SEARCH_MASK) == 1;
    w->searching = 0;
    m->sleepers[m->nsleepers++] = w->index;
    fut__store(&w->sleeping, 1, FUT__RELAXED);
    fut__mutex_unlock(&m->sleep_lock);
    return last;
}

/* Leaves 'sleepers' to run work found while parked. */
static void unpark_self(struct mt_worker *w)
{
    struct mt_sched *m = w->m;
    fut__mutex_lock(&m->sleep_lock);
    if (fut__load(&w->sleeping, FUT__RELAXED)) {
        for (int i = 0; i < m->nsleepers; i++)
            if (m->sleepers[i] == w->index) {
                m->sleepers[i] = m->sleepers[--m->nsleepers];
                break;
            }
        fut__store(&w->sleeping, 0, FUT__RELAXED);
        fut__fetch_add(&m->idle, UNPARK_ONE, FUT__SEQ_CST);
    } else {
        w->searching = 1; /* popped meanwhile: counted as a searcher */
    }
    fut__mutex_unlock(&m->sleep_lock);
    stat_inc(w, ST_UNPARKS);
}

static void claim_watch(struct mt_worker *w)
{
    struct mt_sched *m = w->m;
    uintptr_t me = (uintptr_t)w->index + 1;
    uintptr_t cur = fut__load(&m->watcher, FUT__SEQ_CST);
    for (;;) {
        if (cur == me)
            break;
        if (cur != 0 && fut__load(&m->w[cur - 1].sleeping, FUT__SEQ_CST))
            return; /* a sleeping watcher exists */
        if (fut__cas(&m->watcher, &cur, me, FUT__SEQ_CST, FUT__SEQ_CST))
            break;
    }
    w->watching = 1;
    w->watch_ns = WATCH_MIN_NS;
}

static void release_watch(struct mt_worker *w)
{
    if (!w->watching)
        return;
    uintptr_t me = (uintptr_t)w->index + 1;
    fut__cas(&w->m->watcher, &me, 0, FUT__SEQ_CST, FUT__RELAXED);
    w->watching = 0;
}

/* ------------------------------------------------------- scheduling */

static void lq_push(struct mt_worker *w, struct fut_task *t)
{
    fifo_push(&w->lq_head, &w->lq_tail, t);
}

/* A stack, not a locked FIFO: one RMW on the push and one on the take,
 * no lock line shared by the two threads (xthread_wake: two lock/unlock
 * pairs per hop before); the take restores the order of the pushes. */
static void rl_push(struct mt_worker *home, struct fut_task *t)
{
    (void)stack_push(&home->rl, t, FUT__RELEASE);
    unpark_worker(home); /* a permit if it is awake: it looks at 'rl' */
}

/* The owner (or the shutdown thread) takes 'rl'. ST_REMOTE is counted
 * here, by the owner, not by the pushers: an RMW on the home's counter
 * line by another thread was a cache miss on every cross-thread wake. */
static void rl_drain(struct mt_worker *w)
{
    struct fut_task *t = stack_take(&w->rl), *fifo = NULL;
    if (!t)
        return;
    struct fut_task *newest = t;
    uintptr_t n = 0;
    while (t) { /* newest first: reverse */
        struct fut_task *next = t->next;
        t->next = fifo;
        fifo = t;
        t = next;
        n++;
    }
    stat_add(w, ST_REMOTE, n);
    fifo_push_list(&w->lq_head, &w->lq_tail, fifo, newest);
}

enum push_kind { PUSH_NEW, PUSH_RESCHEDULE };

/* Into the ring, overflowing to the injection queue. New work going into
 * an empty ring wakes a thief (parallelism); a reschedule only makes
 * sure a watcher exists (a yield loop must not bounce between workers,
 * but must not be stranded by a stuck poll either). */
FUT__HOT_INLINE void push_ring(struct mt_worker *w, struct fut_task *t,
                      enum push_kind kind)
{
    struct mt_sched *m = w->m;
    int was_empty;
    if (!fut__ring_try_push(&w->ring, t, &was_empty)) {
        unsigned n;
        struct fut_task *last;
        struct fut_task *ov = fut__ring_push_ex(&w->ring, t, &last, &n,
                                                &was_empty);
        if (ov) {
            inject_push_list(m, ov, last, n);
            return;
        }
    }
    if (w->in_driver || m->n == 1 || !was_empty)
        return; /* after a driver park the worker notifies in one go */
    if (kind == PUSH_NEW || need_watch(m))
        notify_parked(m);
}

static void push_lifo(struct mt_worker *w, struct fut_task *t)
{
    struct mt_sched *m = w->m;
    /* A store into an empty slot, a swap into a full one (rt/lifo.h). */
    struct fut_task *prev = fut__lifo_push(&w->lifo, t);
    if (prev) {
        push_ring(w, prev, PUSH_NEW);
        return;
    }
    /* No fence needed between the store and need_watch's seq_cst loads:
     * what keeps a watcher is ordering against our unpark RMW on 'idle',
     * which precedes both (see the rules); the watcher sees the slot
     * itself at its next look, a millisecond later. */
    if (m->n > 1 && need_watch(m))
        notify_parked(m);
}

/* A push a task makes into the ring: new work (a thief may help), or the
 * continuation of a capped LIFO chain (see run_tick). */
static enum push_kind push_kind_now(struct mt_worker *w)
{
    if (!w->lifo_cont)
        return PUSH_NEW;
    w->lifo_cont = 0;
    return PUSH_RESCHEDULE;
}

/* mt_schedule from a thread that is not one of our workers. It holds a
 * reference on the scheduler while it is in here: once the task has
 * landed in a queue, a concurrent shutdown may drop it, and with it the
 * last reference, while we still unpark a worker (the task alone, which
 * the wake's reference was folded into, no longer pins anything). The
 * scheduler is alive on entry: the task is RUNNING and in no queue, and
 * shutdown_all waits for such a task to land. */
__attribute__((noinline)) static void schedule_foreign(struct mt_sched *m,
                                                       struct fut_task *t)
{
    fut__fetch_add(&m->refs, 1, FUT__RELAXED);
    if (fut__task_is_local(t))
        rl_push(&m->w[task_home(t) - 1], t);
    else if (fut__load(&m->stop, FUT__RELAXED) || !handoff(m, t))
        inject_push(m, t);
    release_refs(m, 1);
}

static void mt_schedule(struct fut__sched *s, struct fut_task *t)
{
    struct mt_sched *m = mt_of(s);
    struct mt_worker *w = me_in(m);
    if (!w) {
        schedule_foreign(m, t);
        return;
    }
    if (fut__task_is_local(t)) {
        struct mt_worker *home = &m->w[task_home(t) - 1];
        if (w == home)
            lq_push(w, t);
        else
            rl_push(home, t);
        return;
    }
    if (w->exiting) {
        inject_push(m, t);
        return;
    }
    if (w->lifo_enabled && !w->in_driver)
        push_lifo(w, t);
    else
        push_ring(w, t, push_kind_now(w));
}

/* ------------------------------------------------------- task memory */

static void ts_init(struct tslab *s)
{
    memset(s->free, 0, sizeof s->free);
    fut__aword_init(&s->remote, 0);
    s->chunks = NULL;
    s->bump = NULL;
    s->left = 0;
}

static void ts_fini(struct tslab *s)
{
    struct ts_chunk *c = s->chunks;
    while (c) {
        struct ts_chunk *next = c->next;
        fut__free(c->raw, TS_CHUNK + TS_LINE);
        c = next;
    }
    s->chunks = NULL;
}

/* Owner: moves the blocks freed elsewhere to the free lists. */
static void ts_drain(struct tslab *s)
{
    /* Acquire: pairs with ts_free_remote's release CAS. */
    void **b = (void **)fut__swap(&s->remote, 0, FUT__ACQUIRE);
    while (b) {
        void **next = (void **)b[0];
        uint32_t cls = (uint32_t)(uintptr_t)b[1];
        b[0] = s->free[cls];
        s->free[cls] = b;
        b = next;
    }
}

/* Owner. '*cls' = 1..TS_CLASSES, or 0 for a block from the hook. */
static void *ts_alloc(struct tslab *s, size_t bytes, uint32_t *cls)
{
    uint32_t c = (uint32_t)((bytes + TS_LINE - 1) / TS_LINE);
    if (c > TS_CLASSES) {
        *cls = 0;
        return fut__alloc(bytes);
    }
    *cls = c;
    void **b = s->free[c];
    if (!b && fut__load(&s->remote, FUT__RELAXED)) {
        ts_drain(s);
        b = s->free[c];
    }
    if (b) {
        s->free[c] = b[0];
        return b;
    }
    size_t need = (size_t)c * TS_LINE;
    if (s->left < need) {
        void *raw = fut__alloc(TS_CHUNK + TS_LINE);
        if (!raw)
            return NULL;
        struct ts_chunk *ch = (struct ts_chunk *)(((uintptr_t)raw + TS_LINE - 1) &
                                                  ~(uintptr_t)(TS_LINE - 1));
        ch->raw = raw;
        ch->next = s->chunks;
        s->chunks = ch;
        s->bump = (char *)ch + TS_LINE; /* the header takes one line */
        s->left = TS_CHUNK - TS_LINE;
    }
    void *p = s->bump;
    s->bump += need;
    s->left -= need;
    return p;
}

static void ts_free_local(struct tslab *s, void *p, uint32_t cls)
{
    void **b = p;
    b[0] = s->free[cls];
    s->free[cls] = b;
}

static void ts_free_remote(struct tslab *s, void *p, uint32_t cls)
{
    void **b = p;
    b[1] = (void *)(uintptr_t)cls;
    uintptr_t head = fut__load(&s->remote, FUT__RELAXED);
    do {
        b[0] = (void *)head;
        /* Release: the link and class before the block is visible. */
    } while (!fut__cas_weak(&s->remote, &head, (uintptr_t)b, FUT__RELEASE,
                            FUT__RELAXED));
}

/* --------------------------------------------------- unlink and free */

static void alive_dec(struct mt_worker *h)
{
    h->n_alive--;
    fut__store(&h->st[ST_ALIVE], h->n_alive, FUT__RELAXED);
}

static void mt_unlink(struct fut__sched *s, struct fut_task *t)
{
    struct mt_sched *m = mt_of(s);
    unsigned home = task_home(t);
    if (home == 0) {
        fut__mutex_lock(&m->inject_lock);
        list_del(t);
        fut__mutex_unlock(&m->inject_lock);
        return;
    }
    struct mt_worker *h = &m->w[home - 1];
    if (tls_w == h || tls_owner == m) {
        list_del(t);
        alive_dec(h);
        return;
    }
    /* Completed away from home: the home unlinks it; our reference keeps
     * the task alive until then. 'next' is free: no queue holds a
     * completed task. */
    fut__task_ref_inc(t);
    /* Seq_cst: against the home's "sleeping = 1; fence; look at
     * 'unlinks'" - a sleeping home is woken to free the tasks, one wake
     * per batch (the push onto an empty stack). */
    uintptr_t head = stack_push(&h->unlinks, t, FUT__SEQ_CST);
    if (head == 0 && fut__load(&h->sleeping, FUT__SEQ_CST))
        unpark_worker(h);
}

/* Owner (or the shutdown thread): unlinks the tasks completed elsewhere. */
static void drain_unlinks(struct mt_worker *h)
{
    struct fut_task *t = stack_take(&h->unlinks);
    while (t) {
        struct fut_task *next = t->next;
        list_del(t);
        alive_dec(h);
        fut__task_ref_dec(t); /* may free it */
        t = next;
    }
}

static void mt_free_task(struct fut__sched *s, struct fut_task *t)
{
    struct mt_sched *m = mt_of(s);
    struct mt_worker *w = me_in(m);
    uint32_t cls = t->size_class;
    if (cls & DIRECT) {
        fut__free(t, cls & ~DIRECT);
    } else {
        struct mt_worker *h = &m->w[(cls >> SLAB_HOME_SHIFT) - 1];
        uint32_t c = cls & ((1u << SLAB_HOME_SHIFT) - 1);
        if (h == w)
            ts_free_local(&h->tslab, t, c);
        else
            ts_free_remote(&h->tslab, t, c);
    }
    if (w) {
        stat_inc(w, ST_FREED);
    } else {
        fut__fetch_add(&m->f_freed, 1, FUT__RELAXED);
        release_refs(m, 1);
    }
}

/* The block pool of worker 'h': its slab, on its own thread (alloc);
 * freed from anywhere. Blocks pin the scheduler like tasks do. */
static void *pool_alloc(struct fut__blockpool *p, size_t size, uint32_t *cls)
{
    struct mt_worker *h = fut__container_of(p, struct mt_worker, pool);
    void *b = fut__slab_alloc(&h->slab, size, cls);
    if (b)
        stat_inc(h, ST_BLOCKS);
    return b;
}

static void pool_free(struct fut__blockpool *p, void *b, uint32_t cls,
                      size_t size)
{
    struct mt_worker *h = fut__container_of(p, struct mt_worker, pool);
    struct mt_sched *m = h->m;
    struct mt_worker *w = me_in(m);
    if (cls == 0)
        fut__free(b, size);
    else if (w == h)
        fut__slab_free_local(&h->slab, b, cls, size);
    else
        fut__slab_free_remote(&h->slab, b, cls, size);
    if (w)
        stat_inc(w, ST_BLOCKS_FREED);
    else
        release_refs(m, 1);
}

/* An abort that found 't' idle drops it on the spot - on any thread: our
 * futures may move between threads - unless it is thread-affine and this
 * is not its worker (then its worker drops it at its next tick). */
static int mt_drop_here(struct fut__sched *s, struct fut_task *t)
{
    if (!fut__task_is_local(t))
        return 1;
    struct mt_worker *w = me_in(mt_of(s));
    return w && task_home(t) == (unsigned)w->index + 1;
}

static const struct fut__sched_vt mt_vt = {mt_schedule, mt_unlink,
                                           mt_free_task, mt_drop_here};

/* ------------------------------------------------------------ worker */

/* Work of ours other than thread-affine tasks. */
static int has_other_work(struct mt_worker *w)
{
    return fut__load(&w->handoff, FUT__RELAXED) ||
           fut__load(&w->lifo.task, FUT__RELAXED) || fut__ring_len(&w->ring);
}

static int has_own_work(struct mt_worker *w)
{
    return w->lq_head || fut__load(&w->rl, FUT__RELAXED) ||
           has_other_work(w);
}

/* Steals from a peer that looks stuck in one long poll (see the rules):
 * half its ring, or else its LIFO slot. Every call takes a look: the
 * first look records the peer's poll count, the second that finds it
 * unchanged records the time (the clock is read only then), and a look
 * at least STUCK_NS after that one, the count still unchanged, steals. */
static struct fut_task *steal_stuck(struct mt_worker *w)
{
    struct mt_sched *m = w->m;
    int64_t now = 0;
    for (int i = 0; i < m->n; i++) {
        struct mt_worker *v = &m->w[i];
        struct seen *sn = &w->seen[i];
        if (v == w)
            continue;
        if (!fut__load(&v->lifo.task, FUT__RELAXED) &&
            !fut__ring_len(&v->ring)) {
            sn->armed = 0;
            continue;
        }
        uintptr_t seq = fut__load(&v->st[ST_POLLS], FUT__RELAXED);
        if (!sn->armed || sn->seq != seq) {
            /* It moved: most looks end here, without a clock read. */
            sn->armed = 1;
            sn->seq = seq;
            sn->since = 0;
            continue;
        }
        if (!now)
            now = fut_now_ns();
        if (!sn->since) {
            sn->since = now; /* the first look that found it still */
            continue;
        }
        if (now - sn->since < STUCK_NS)
            continue;
        sn->armed = 0;
        unsigned moved;
        struct fut_task *t = fut__ring_steal(&v->ring, &w->ring, &moved);
        if (t) {
            stat_inc(w, ST_STEALS);
            stat_add(w, ST_STOLEN, moved);
            return t;
        }
        /* Only while it is inside a poll (rt/lifo.h's rules). */
        t = fut__lifo_steal(&v->lifo, &v->st[ST_POLLS],
                            &v->st[ST_POLLS_DONE], m->asym);
        if (t) {
            stat_inc(w, ST_STEALS);
            stat_inc(w, ST_STOLEN);
            return t;
        }
    }
    return NULL;
}

static void poll_driver(struct mt_worker *w)
{
    struct mt_sched *m = w->m;
    struct fut__driver *d = m->base.driver;
    if (!d || !driver_trylock(m))
        return;
    w->in_driver = 1;
    d->vt->park(d, 0);
    w->in_driver = 0;
    driver_unlock(m);
    if (m->n > 1 && fut__ring_len(&w->ring) > 1)
        notify_parked(m);
}

/* Every 'event_interval' ticks. */
static void maintenance(struct mt_worker *w)
{
    drain_unlinks(w);
    rl_drain(w);
    poll_driver(w);
    if (w->m->n > 1) {
        struct fut_task *t = steal_stuck(w);
        if (t)
            push_ring(w, t, PUSH_NEW);
    }
}

static struct fut_task *lq_pop(struct mt_worker *w)
{
    return fifo_pop(&w->lq_head, &w->lq_tail);
}

static struct fut_task *next_task(struct mt_worker *w)
{
    struct mt_sched *m = w->m;
    struct fut_task *t;
    if (fut__load(&w->handoff, FUT__RELAXED)) {
        /* Acquire: pairs with handoff()'s release. */
        t = (struct fut_task *)fut__swap(&w->handoff, 0, FUT__ACQUIRE);
        stat_inc(w, ST_GLOBAL);
        return t;
    }
    if (w->global_due) {
        /* Fairness for the injection queue (Tokio's global queue
         * interval): every Nth tick it goes first. */
        w->global_due = 0;
        unsigned got;
        if ((t = inject_take(m, 1, &got))) {
            stat_inc(w, ST_GLOBAL);
            return t;
        }
    }
    /* Thread-affine tasks alternate with the ring. */
    if (w->lq_head && ((w->tick & 1) || !fut__ring_len(&w->ring)))
        return lq_pop(w);
    if (fut__load(&w->lifo.task, FUT__RELAXED) &&
        (t = (struct fut_task *)fut__swap(&w->lifo.task, 0, FUT__ACQ_REL)))
        return t;
    if ((t = fut__ring_pop(&w->ring)))
        return t;
    rl_drain(w);
    if ((t = lq_pop(w)))
        return t;
    return inject_pop_batch(w);
}

__attribute__((noinline)) static struct fut_task *search(
    struct mt_worker *w)
{
    struct mt_sched *m = w->m;
    if (!w->searching && !to_searching(w))
        return NULL;
    int start = (int)(rng_next(w) % (uint32_t)m->n);
    for (int i = 0; i < m->n; i++) {
        struct mt_worker *v = &m->w[(start + i) % m->n];
        if (v == w)
            continue;
        unsigned moved;
        struct fut_task *t = fut__ring_steal(&v->ring, &w->ring, &moved);
        if (t) {
            stat_inc(w, ST_STEALS);
            stat_add(w, ST_STOLEN, moved);
            return t;
        }
    }
    struct fut_task *t = steal_stuck(w);
    if (!t)
        t = inject_pop_batch(w);
    return t;
}

/* A timed park of the watcher found nothing: back off, or give the role
 * up when every other worker sleeps (then re-read: see the rules). */
static void watch_idle(struct mt_worker *w)
{
    struct mt_sched *m = w->m;
    if ((fut__load(&m->idle, FUT__SEQ_CST) >> 16) == 0) {
        release_watch(w);
        if ((fut__load(&m->idle, FUT__SEQ_CST) >> 16) != 0)
            claim_watch(w);
        return;
    }
    if (w->watch_ns < WATCH_MAX_NS)
        w->watch_ns *= 2;
}

static void run_tick(struct mt_worker *w, struct fut_task *t);

/* A sleeping worker woken for its thread-affine tasks alone (a wake from
 * another thread, through 'rl') runs them without leaving 'sleepers':
 * no sleep_lock and no RMW on 'idle' either way (xthread_wake: two
 * lock/unlock pairs and two RMWs per hop, on lines both workers write).
 * Still counted as asleep meanwhile, it may be popped by notify_parked
 * (or handoff): that pop's unpark leaves a permit, so the next park
 * returns at once and sees 'sleeping' clear - looking at it here only
 * leaves sooner, through the usual path, as a poll that gave us other
 * work (ring, LIFO slot, handoff) does. Returns 1 when it ran tasks and
 * nothing else is here: the caller parks again, still counted. */
static int run_parked(struct mt_worker *w)
{
    int ran = 0;
    for (;;) {
        /* Acquire: pairs with notify_parked's release store. */
        if (!fut__load(&w->sleeping, FUT__ACQUIRE) || has_other_work(w))
            return 0;
        rl_drain(w);
        struct fut_task *t = lq_pop(w);
        if (!t)
            return ran;
        ran = 1;
        run_tick(w, t);
    }
}

/* Parks until there is work. Returns a task found while parked (the
 * watcher stealing from a stuck worker) or NULL. */
__attribute__((noinline)) static struct fut_task *park_worker(
    struct mt_worker *w)
{
    struct mt_sched *m = w->m;
    drain_unlinks(w);
    int last = to_parked(w);
    /* Seq_cst fence: pairs with notify_parked's (see the rules). */
    fut__fence(FUT__SEQ_CST);
    if (has_own_work(w)) {
        unpark_self(w);
        return NULL;
    }
    drain_unlinks(w); /* pushed before we were seen sleeping */
    /* Every parker looks once more (Tokio: the last searcher does; a
     * worker may also come here without searching, see worker_loop). */
    (void)last;
    if (work_visible(m))
        notify_parked(m); /* may pick us: our park then returns at once */
    /* Watch (a timed park) only while some queue holds work a stuck
     * worker could strand: with nothing queued anywhere, a timer armed and
     * cancelled on every park costs more than the wake itself
     * (xthread_wake: 2.6x the futex floor with, 1.9x without). Work
     * queued later wakes a sleeper to watch (need_watch in push_lifo and
     * push_ring), which claims the role in the loop below. */
    if (m->n > 1 && (fut__load(&m->idle, FUT__SEQ_CST) >> 16) != 0 &&
        (any_lifo(m) || work_visible(m)))
        claim_watch(w);
    for (;;) {
        park_parker(w, w->watching ? w->watch_ns : -1, 1);
        if (fut__load(&m->stop, FUT__ACQUIRE)) {
            release_watch(w);
            return NULL;
        }
        /* Acquire: pairs with notify_parked's release store. */
        if (!fut__load(&w->sleeping, FUT__ACQUIRE)) {
            w->searching = 1; /* notify_parked counted us */
            release_watch(w);
            stat_inc(w, ST_UNPARKS);
            return NULL;
        }
        if (has_own_work(w)) {
            if (!run_parked(w)) {
                unpark_self(w);
                release_watch(w);
                if (m->n > 1 && fut__ring_len(&w->ring) > 1)
                    notify_parked(m); /* the driver woke several */
                return NULL;
            }
            stat_inc(w, ST_UNPARKS); /* woke with work, ran it */
        }
        drain_unlinks(w); /* what woke us, maybe */
        if (w->watching) {
            struct fut_task *t = steal_stuck(w);
            if (t) {
                unpark_self(w);
                release_watch(w);
                return t;
            }
            watch_idle(w);
        } else if (m->n > 1 && any_lifo(m) &&
                   (fut__load(&m->idle, FUT__SEQ_CST) >> 16) != 0) {
            claim_watch(w); /* woken by a LIFO push to watch */
        }
    }
}

static void run_one(struct mt_worker *w, struct fut_task *t, int *budget)
{
    struct mt_sched *m = w->m;
    /* Before: counted once it started. Release: steal_stuck reads it for
     * the stuck detection, and a thief of the LIFO slot (acquire) needs
     * the slot's last take before it (rt/lifo.h). */
    stat_inc_release(w, ST_POLLS);
    enum fut__run_result r = fut__task_poll(t, budget);
    /* Release, after the poll: a thread that reads it (acquire, in
     * fut_runtime_stats) sees everything the poll did, so a test that
     * waits for "no more polls" may then read what the tasks wrote (free
     * on x86: a plain store). */
    stat_inc_release(w, ST_POLLS_DONE);
    if (r == FUT__RUN_DONE)
        return;
    if (*budget == 0)
        stat_inc(w, ST_BUDGET);
    if (r == FUT__RUN_RESCHEDULE) {
        /* Woken during its own poll (a yield, or a wake from elsewhere
         * while it ran): to the back, so the others go first. */
        if (fut__task_is_local(t)) {
            lq_push(w, t);
            return;
        }
        /* Alone in the ring, it would run again at once: a task waiting
         * in the global queue goes ahead of it (a yield means "let the
         * others run"; without this one task yielding on budget keeps
         * them waiting up to event_interval ticks). */
        unsigned got;
        struct fut_task *g;
        if (fut__load(&m->inject_n, FUT__RELAXED) &&
            !fut__ring_len(&w->ring) && (g = inject_take(m, 1, &got))) {
            stat_inc(w, ST_GLOBAL);
            push_ring(w, g, PUSH_NEW);
        }
        push_ring(w, t, PUSH_RESCHEDULE);
    }
}

/* One scheduler tick: 't' with a fresh budget, then the LIFO chain it
 * starts, charged to the same budget and capped. Flattened: every call
 * in it is inlined, fut__task_poll too (task.c, in LTO builds): yield_many
 * mt2 264 -> 244 instructions per yield (callgrind). */
__attribute__((flatten)) static void run_tick(struct mt_worker *w,
                                              struct fut_task *t)
{
    struct mt_sched *m = w->m;
    if (w->searching)
        from_searching(w);
    w->tick++;
    int budget = m->budget;
    w->lifo_enabled = 1;
    run_one(w, t, &budget);
    for (int polls = 0; fut__load(&w->lifo.task, FUT__RELAXED); polls++) {
        /* After run_one's store of ST_POLLS_DONE: no locked instruction
         * unless a thief is looking (rt/lifo.h). */
        struct fut_task *l = fut__lifo_take(&w->lifo, m->asym);
        if (!l)
            break;
        if (budget == 0) {
            /* The tick's budget is spent: the chain goes on at a later
             * tick (on this worker: no thief is woken for it). */
            push_ring(w, l, PUSH_RESCHEDULE);
            break;
        }
        if (polls + 1 >= LIFO_MAX) {
            /* The last LIFO poll of the tick: its wakes go to the ring,
             * the first of them - the one the chain would have run next
             * - like a reschedule (not a reason to wake a thief). */
            w->lifo_enabled = 0;
            w->lifo_cont = 1;
        }
        stat_inc(w, ST_LIFO);
        run_one(w, l, &budget);
    }
    w->lifo_enabled = 0;
    w->lifo_cont = 0;
    if (--w->countdown == 0) {
        w->countdown = (uint32_t)m->event_interval;
        w->global_due = 1;
        maintenance(w);
    }
}


/* Drops the idle tasks of a list this thread owns; tasks owned elsewhere
 * for now (running, queued, being handed over) stay. Returns 1 when some
 * stayed. */
static int take_over(struct fut_task *head)
{
    struct fut_task tried;
    list_init(&tried);
    while (!list_empty(head)) {
        struct fut_task *t = head->owned_next;
        list_del(t);
        list_add(&tried, t);
        /* Completing unlinks it from 'tried'. */
        fut__task_shutdown_idle(t);
    }
    int left = !list_empty(&tried);
    list_splice(head, &tried);
    return left;
}

/* Shutdown, on the worker: drop every thread-affine task here. */
static void worker_exit(struct mt_worker *w)
{
    w->exiting = 1;
    release_watch(w);
    for (;;) {
        drain_unlinks(w);
        rl_drain(w);
        struct fut_task *t;
        while ((t = lq_pop(w)))
            fut__task_cancel(t);
        if (!take_over(&w->owned_local) && !w->lq_head &&
            !fut__load(&w->rl, FUT__RELAXED))
            break;
        /* A thread is handing one of them over ('rl' unparks us). */
        park_parker(w, 1000 * 1000, 0);
    }
}

/* Flattened: run_tick and next_task inline into the loop (gcc had done
 * so on its own until run_tick grew past its limit for functions called
 * once: a call and six register saves per tick, yield_many mt2 244 -> 257
 * instructions per yield). search and park_worker stay calls (noinline):
 * flattening them in too made yield_many slower in time (code layout).
 * callgrind: 238 per yield; timing: yield_many mt2 paired 0.91 of the
 * unflattened loop, spawn_many 0.88, oneshot 0.98-1.07 (noise). */
__attribute__((flatten)) static void worker_loop(struct mt_worker *w)
{
    struct mt_sched *m = w->m;
    while (!fut__load(&m->stop, FUT__ACQUIRE)) {
        struct fut_task *t = next_task(w);
        /* Search only when there is something to find: a worker that
         * ran out of work while every queue is empty goes to sleep
         * without the searcher's RMWs (its park re-checks the queues). */
        if (!t && m->n > 1 &&
            (w->searching || work_visible(m) || any_lifo(m)))
            t = search(w);
        if (!t)
            t = park_worker(w);
        if (t)
            run_tick(w, t);
    }
}

static void *worker_main(void *arg)
{
    struct mt_worker *w = arg;
    tls_w = w;
    fut__tls_sched = &w->m->base;
    fut__tls_pool = &w->pool;
    worker_loop(w);
    worker_exit(w);
    fut__pool_flush(&w->pool); /* still its owner (see internal.h) */
    fut__tls_pool = NULL;
    fut__tls_sched = NULL;
    tls_w = NULL;
    return NULL;
}

/* ------------------------------------------------------------- spawn */

static struct fut_task *task_alloc_worker(struct mt_worker *w, size_t bytes)
{
    /* Tasks of ours that finished on other workers wait on 'unlinks'
     * until we tick 'event_interval' times or park; a task that spawns in
     * a loop (a scope of 100,000 children) may do neither for long. Free
     * them before the slab carves new memory, or every round of such a
     * loop takes fresh chunks (scope_join mt2: 25 MB a round). */
    size_t lines = (bytes + TS_LINE - 1) / TS_LINE;
    if (lines <= TS_CLASSES && !w->tslab.free[lines] &&
        fut__load(&w->unlinks, FUT__RELAXED))
        drain_unlinks(w);
    uint32_t cls = 0;
    struct fut_task *t = ts_alloc(&w->tslab, bytes, &cls);
    if (!t)
        return NULL;
    t->size_class = cls ? cls | ((uint32_t)w->index + 1) << SLAB_HOME_SHIFT
                        : DIRECT | (uint32_t)bytes;
    return t;
}

static int spawn_worker(struct mt_worker *w, const struct fut_future *f,
                        size_t size, struct fut_join *join, int local,
                        const char *file, int line)
{
    struct mt_sched *m = w->m;
    if (w->exiting || fut__load(&m->closing, FUT__RELAXED))
        return FUT_ESHUTDOWN;
    struct fut_task *t = task_alloc_worker(w, FUT__TASK_HDR + size);
    if (!t)
        return FUT_ENOMEM;
    memcpy(fut__task_future(t), f, size);
    fut__task_init(t, &m->base, join != NULL, file, line);
    t->flags = (uint16_t)((local ? TASK_F_LOCAL : 0) |
                          ((unsigned)w->index + 1) << HOME_SHIFT);
    list_add(local ? &w->owned_local : &w->owned, t);
    w->n_alive++;
    fut__store(&w->st[ST_ALIVE], w->n_alive, FUT__RELAXED);
    stat_inc(w, ST_SPAWNED);
    if (join)
        fut__join_init(join, t);
    if (local)
        lq_push(w, t);
    else if (w->lifo_enabled)
        push_lifo(w, t);
    else
        push_ring(w, t, push_kind_now(w));
    return 0;
}

static int spawn_foreign(struct mt_sched *m, const struct fut_future *f,
                         size_t size, struct fut_join *join,
                         const char *file, int line)
{
    size_t bytes = FUT__TASK_HDR + size;
    struct fut_task *t = fut__alloc(bytes);
    if (!t)
        return FUT_ENOMEM;
    memcpy(fut__task_future(t), f, size);
    fut__task_init(t, &m->base, join != NULL, file, line);
    t->size_class = DIRECT | (uint32_t)bytes;
    t->flags = 0; /* home: the foreign list */
    /* Before anyone can free it (see the lifetime rules): one for the
     * task, one for us until notify_parked is done - a worker may run
     * and free the task, and a concurrent shutdown finish, before it. */
    fut__fetch_add(&m->refs, 2, FUT__RELAXED);
    fut__mutex_lock(&m->inject_lock);
    if (m->closed) {
        fut__mutex_unlock(&m->inject_lock);
        fut__free(t, bytes);
        release_refs(m, 2);
        return FUT_ESHUTDOWN;
    }
    list_add(&m->foreign, t);
    fifo_push(&m->ihead, &m->itail, t);
    fut__store(&m->inject_n, fut__load(&m->inject_n, FUT__RELAXED) + 1,
               FUT__RELAXED);
    fut__store(&m->f_remote, fut__load(&m->f_remote, FUT__RELAXED) + 1,
               FUT__RELAXED);
    fut__store(&m->f_spawned, fut__load(&m->f_spawned, FUT__RELAXED) + 1,
               FUT__RELAXED);
    fut__mutex_unlock(&m->inject_lock);
    if (join)
        fut__join_init(join, t);
    notify_parked(m);
    release_refs(m, 1);
    return 0;
}

int fut__mt_spawn(struct fut__sched *s, const struct fut_future *f,
                  size_t size, struct fut_join *join, int local,
                  const char *file, int line)
{
    struct mt_sched *m = mt_of(s);
    struct mt_worker *w = me_in(m);
    if (join)
        fut__join_init(join, NULL);
    if (local && !w)
        return FUT_EINVAL; /* thread-affine tasks live on a worker */
    if (FUT__TASK_HDR + size >= DIRECT)
        return FUT_EINVAL;
    if (w)
        return spawn_worker(w, f, size, join, local, file, line);
    return spawn_foreign(m, f, size, join, file, line);
}

/* ---------------------------------------------------------- block_on */

int fut__mt_block_on(struct fut__sched *s, struct fut_future *f)
{
    struct mt_sched *m = mt_of(s);
    if (fut__tls_sched == s)
        return FUT_EBUSY; /* on a worker, or nested */
    fut__fetch_add(&m->refs, 1, FUT__RELAXED); /* the handle holds one */
    struct fut__sched *saved = fut__tls_sched;
    fut__tls_sched = s; /* spawns from 'f' go to this runtime */
    int r = fut__block_on_thread(f);
    fut__tls_sched = saved;
    release_refs(m, 1);
    return r;
}

/* --------------------------------------------------------- lifecycle */

static void mt_destroy(struct mt_sched *m)
{
    if (m->base.driver)
        m->base.driver->vt->free(m->base.driver);
    if (m->w) {
        for (int i = 0; i < m->n; i++) {
            fut__slab_fini(&m->w[i].slab);
            ts_fini(&m->w[i].tslab);
            if (m->w[i].seen)
                fut__free(m->w[i].seen, sizeof(struct seen) * (size_t)m->n);
        }
        fut__free(m->w_mem, m->w_bytes);
    }
    if (m->sleepers)
        fut__free(m->sleepers, sizeof(int) * (size_t)m->n);
    fut__mutex_destroy(&m->sleep_lock);
    fut__mutex_destroy(&m->inject_lock);
    fut__runtime_dealloc(m->base.rt);
    fut__free(m, sizeof *m);
}

static void release_refs(struct mt_sched *m, uintptr_t k)
{
    /* Release/acquire: every user's last access before the free. */
    if (fut__fetch_sub(&m->refs, k, FUT__ACQ_REL) == k)
        mt_destroy(m);
}

static int worker_init(struct mt_sched *m, struct mt_worker *w, int i)
{
    memset(w, 0, sizeof *w);
    w->m = m;
    w->index = i;
    fut__ring_init(&w->ring);
    fut__lifo_init(&w->lifo);
    fut__aword_init(&w->pstate, P_EMPTY);
    fut__aword_init(&w->sleeping, 0);
    fut__aword_init(&w->handoff, 0);
    fut__aword_init(&w->unlinks, 0);
    fut__aword_init(&w->rl, 0);
    fut__aword_init(&w->wake_ns, 0);
    for (int k = 0; k < ST__COUNT; k++)
        fut__aword_init(&w->st[k], 0);
    list_init(&w->owned);
    list_init(&w->owned_local);
    fut__slab_init(&w->slab);
    ts_init(&w->tslab);
    w->pool.alloc = pool_alloc;
    w->pool.free = pool_free;
    fut__pool_init_cache(&w->pool);
    w->rng = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);
    w->countdown = (uint32_t)m->event_interval;
    fut__spin_init(&w->spin, m->spin_ns > 0 ? m->spin_ns : 0);
    fut__aword_init(&w->st[ST_SPIN_NS],
                    m->spin_ns >= 0 ? (uintptr_t)w->spin.bound : 0);
    w->global_due = 1;
    if (m->n > 1) {
        w->seen = fut__alloc(sizeof(struct seen) * (size_t)m->n);
        if (!w->seen)
            return FUT_ENOMEM;
        memset(w->seen, 0, sizeof(struct seen) * (size_t)m->n);
    }
    return 0;
}

static int workers_new(struct mt_sched *m)
{
    m->w_bytes = sizeof(struct mt_worker) * (size_t)m->n + 63;
    m->w_mem = fut__alloc(m->w_bytes);
    if (!m->w_mem)
        return FUT_ENOMEM;
    m->w = (struct mt_worker *)(((uintptr_t)m->w_mem + 63) & ~(uintptr_t)63);
    for (int i = 0; i < m->n; i++) {
        int r = worker_init(m, &m->w[i], i);
        if (r) {
            while (--i >= 0) {
                if (m->w[i].seen)
                    fut__free(m->w[i].seen,
                              sizeof(struct seen) * (size_t)m->n);
            }
            fut__free(m->w_mem, m->w_bytes);
            m->w = NULL;
            return r;
        }
    }
    return 0;
}

int fut__mt_new(struct fut_runtime *rt, const struct fut_rt_config *cfg,
                struct fut__sched **out)
{
    int n = cfg->workers;
    if (n == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n = c < 1 ? 1 : c > MT_MAX_WORKERS ? MT_MAX_WORKERS : (int)c;
    }
    if (n > MT_MAX_WORKERS)
        return FUT_EINVAL;
    struct mt_sched *m = fut__alloc(sizeof *m);
    if (!m)
        return FUT_ENOMEM;
    memset(m, 0, sizeof *m);
    m->base.vt = &mt_vt;
    m->base.rt = rt;
    m->base.slow_poll_ns = cfg->slow_poll_ns;
    m->n = n;
    m->budget = cfg->budget;
    m->event_interval = cfg->event_interval;
    m->spin_ns = cfg->park_spin_ns;
    m->asym = fut__membarrier_init();
    list_init(&m->foreign);
    fut__aword_init(&m->inject_n, 0);
    fut__aword_init(&m->closing, 0);
    fut__aword_init(&m->stop, 0);
    fut__aword_init(&m->idle, (uintptr_t)n << 16); /* all unparked */
    fut__aword_init(&m->watcher, 0);
    fut__aword_init(&m->driver_lock, 0);
    fut__aword_init(&m->refs, BIAS + 1);
    fut__aword_init(&m->f_spawned, 0);
    fut__aword_init(&m->f_freed, 0);
    fut__aword_init(&m->f_remote, 0);
    fut__aword_init(&m->f_handoff, 0);
    int r = FUT_ENOMEM;
    if (fut__mutex_init(&m->inject_lock) != 0)
        goto fail_m;
    if (fut__mutex_init(&m->sleep_lock) != 0)
        goto fail_inject;
    m->sleepers = fut__alloc(sizeof(int) * (size_t)n);
    if (!m->sleepers)
        goto fail_sleep;
    if ((r = workers_new(m)) != 0)
        goto fail_sleepers;
    if (!cfg->no_driver &&
        (r = fut__driver_new(&m->base, cfg, &m->base.driver)) != 0)
        goto fail_workers;
    if (m->base.driver) {
        m->base.driver->interest = driver_interest;
        m->base.driver->interest_ud = m;
    }
    *out = &m->base;
    return 0;
fail_workers:
    for (int i = 0; i < n; i++) {
        if (m->w[i].seen)
            fut__free(m->w[i].seen, sizeof(struct seen) * (size_t)n);
    }
    fut__free(m->w_mem, m->w_bytes);
fail_sleepers:
    fut__free(m->sleepers, sizeof(int) * (size_t)n);
fail_sleep:
    fut__mutex_destroy(&m->sleep_lock);
fail_inject:
    fut__mutex_destroy(&m->inject_lock);
fail_m:
    fut__free(m, sizeof *m);
    return r;
}

int fut__mt_start(struct fut__sched *s)
{
    struct mt_sched *m = mt_of(s);
    for (int i = 0; i < m->n; i++) {
        struct mt_worker *w = &m->w[i];
        int r = pthread_create(&w->thread, NULL, worker_main, w);
        if (r) {
            fut__mt_shutdown(s); /* joins the ones started */
            return r == ENOMEM ? FUT_ENOMEM : -r;
        }
        w->started = 1;
        char name[16];
        snprintf(name, sizeof name, "fut-worker-%u", (unsigned)i % 1000u);
        pthread_setname_np(w->thread, name);
    }
    return 0;
}

/* Takes every queued task of worker 'w' (now ours) and drops it. */
static void cancel_queued(struct mt_worker *w)
{
    struct fut_task *t;
    rl_drain(w);
    while ((t = lq_pop(w)))
        fut__task_cancel(t);
    if ((t = (struct fut_task *)fut__swap(&w->handoff, 0, FUT__ACQUIRE)))
        fut__task_cancel(t);
    if ((t = (struct fut_task *)fut__swap(&w->lifo.task, 0, FUT__ACQUIRE)))
        fut__task_cancel(t);
    while ((t = fut__ring_pop(&w->ring)))
        fut__task_cancel(t);
}

static void cancel_inject(struct mt_sched *m)
{
    unsigned got;
    struct fut_task *t = inject_take(m, ~0u, &got);
    while (t) {
        struct fut_task *next = t->next;
        fut__task_cancel(t);
        t = next;
    }
}

/* take_over for the foreign list: under the lock, one task at a time,
 * with a reference (its completion elsewhere may free it otherwise). */
static int take_over_foreign(struct mt_sched *m)
{
    struct fut_task tried;
    list_init(&tried);
    fut__mutex_lock(&m->inject_lock);
    while (!list_empty(&m->foreign)) {
        struct fut_task *t = m->foreign.owned_next;
        list_del(t);
        list_add(&tried, t);
        fut__task_ref_inc(t);
        fut__mutex_unlock(&m->inject_lock);
        fut__task_shutdown_idle(t);
        fut__task_ref_dec(t);
        fut__mutex_lock(&m->inject_lock);
    }
    int left = !list_empty(&tried);
    list_splice(&m->foreign, &tried);
    fut__mutex_unlock(&m->inject_lock);
    return left;
}

/* After the workers are joined: drop every task, waiting for the ones
 * other threads are handing over. */
static void shutdown_all(struct mt_sched *m)
{
    /* The drops run "in" the runtime: fut_runtime_current() is it, so a
     * spawn from a drop is refused (FUT_ESHUTDOWN) rather than lost. */
    struct fut__sched *saved = fut__tls_sched;
    fut__tls_sched = &m->base;
    tls_owner = m;
    for (;;) {
        int left = 0;
        for (int i = 0; i < m->n; i++) {
            drain_unlinks(&m->w[i]);
            cancel_queued(&m->w[i]);
        }
        cancel_inject(m);
        for (int i = 0; i < m->n; i++) {
            FUT_ASSERT(list_empty(&m->w[i].owned_local));
            left |= take_over(&m->w[i].owned);
            left |= take_over(&m->w[i].owned_local);
        }
        left |= take_over_foreign(m);
        for (int i = 0; i < m->n; i++)
            left |= fut__load(&m->w[i].unlinks, FUT__RELAXED) != 0;
        left |= fut__load(&m->inject_n, FUT__RELAXED) != 0;
        if (!left)
            break;
        struct timespec ts = {0, SHUTDOWN_PAUSE_NS};
        nanosleep(&ts, NULL);
    }
    tls_owner = NULL;
    fut__tls_sched = saved;
}

void fut__mt_shutdown(struct fut__sched *s)
{
    struct mt_sched *m = mt_of(s);
    FUT_CHECK(fut__tls_sched != s); /* not from a worker or a block_on */
    fut__mutex_lock(&m->inject_lock);
    m->closed = 1;
    fut__mutex_unlock(&m->inject_lock);
    fut__store(&m->closing, 1, FUT__RELEASE);
    fut__store(&m->stop, 1, FUT__RELEASE); /* pairs: the workers' loads */
    for (int i = 0; i < m->n; i++)
        if (m->w[i].started)
            unpark_worker(&m->w[i]);
    for (int i = 0; i < m->n; i++)
        if (m->w[i].started)
            pthread_join(m->w[i].thread, NULL);
    shutdown_all(m);
    if (m->base.driver) /* freed in mt_destroy (see fut__driver_vt) */
        m->base.driver->vt->shutdown(m->base.driver);
    /* Fold the workers' counts in (see the lifetime rules), drop the
     * handle's reference. */
    uintptr_t net = 0;
    for (int i = 0; i < m->n; i++)
        net += fut__load(&m->w[i].st[ST_SPAWNED], FUT__RELAXED) -
               fut__load(&m->w[i].st[ST_FREED], FUT__RELAXED) +
               fut__load(&m->w[i].st[ST_BLOCKS], FUT__RELAXED) -
               fut__load(&m->w[i].st[ST_BLOCKS_FREED], FUT__RELAXED);
    release_refs(m, BIAS + 1 - net);
}

/* ------------------------------------------------------------ stats */

static void worker_stats(struct mt_worker *w, struct fut_rt_stats *o)
{
    o->spawned = fut__load(&w->st[ST_SPAWNED], FUT__RELAXED);
    o->alive = fut__load(&w->st[ST_ALIVE], FUT__RELAXED);
    /* Acquire: pairs with run_one's release after each poll. */
    (void)fut__load(&w->st[ST_POLLS_DONE], FUT__ACQUIRE);
    o->polls = fut__load(&w->st[ST_POLLS], FUT__RELAXED);
    o->remote_wakes = fut__load(&w->st[ST_REMOTE], FUT__RELAXED);
    o->parks = fut__load(&w->st[ST_PARKS], FUT__RELAXED);
    o->budget_yields = fut__load(&w->st[ST_BUDGET], FUT__RELAXED);
    o->unparks = fut__load(&w->st[ST_UNPARKS], FUT__RELAXED);
    o->steals = fut__load(&w->st[ST_STEALS], FUT__RELAXED);
    o->stolen = fut__load(&w->st[ST_STOLEN], FUT__RELAXED);
    o->lifo_hits = fut__load(&w->st[ST_LIFO], FUT__RELAXED);
    o->global_polls = fut__load(&w->st[ST_GLOBAL], FUT__RELAXED);
    o->park_spins = fut__load(&w->st[ST_SPINS], FUT__RELAXED);
    o->park_spin_hits = fut__load(&w->st[ST_SPIN_HITS], FUT__RELAXED);
    o->park_spin_bound_ns = fut__load(&w->st[ST_SPIN_NS], FUT__RELAXED);
    o->workers = 1;
}

int fut__mt_workers(struct fut__sched *s)
{
    return mt_of(s)->n;
}

int fut__mt_worker_stats(struct fut__sched *s, int worker,
                         struct fut_rt_stats *out)
{
    struct mt_sched *m = mt_of(s);
    if (worker < 0 || worker >= m->n)
        return FUT_EINVAL;
    worker_stats(&m->w[worker], out);
    return 0;
}

void fut__mt_stats(struct fut__sched *s, struct fut_rt_stats *out)
{
    struct mt_sched *m = mt_of(s);
    uint64_t freed = fut__load(&m->f_freed, FUT__RELAXED);
    memset(out, 0, sizeof *out);
    for (int i = 0; i < m->n; i++) {
        struct fut_rt_stats o;
        worker_stats(&m->w[i], &o);
        out->spawned += o.spawned;
        out->polls += o.polls;
        out->remote_wakes += o.remote_wakes;
        out->parks += o.parks;
        out->budget_yields += o.budget_yields;
        out->unparks += o.unparks;
        out->steals += o.steals;
        out->stolen += o.stolen;
        out->lifo_hits += o.lifo_hits;
        out->global_polls += o.global_polls;
        out->park_spins += o.park_spins;
        out->park_spin_hits += o.park_spin_hits;
        if (o.park_spin_bound_ns > out->park_spin_bound_ns)
            out->park_spin_bound_ns = o.park_spin_bound_ns;
        freed += fut__load(&m->w[i].st[ST_FREED], FUT__RELAXED);
    }
    out->spawned += fut__load(&m->f_spawned, FUT__RELAXED);
    out->remote_wakes += fut__load(&m->f_remote, FUT__RELAXED) +
                         fut__load(&m->f_handoff, FUT__RELAXED);
    /* Counters read one after the other: clamp a stale difference. */
    out->alive = out->spawned > freed ? out->spawned - freed : 0;
    out->workers = (uint32_t)m->n;
}

/* ------------------------------------------------------------ task dump */

/* Task dumps (rt_internal.h, src/rt/dump.c). A worker's task lists are its
 * own, so each other worker is sent a probe: a bare thread-affine task
 * with home 0 (on no live list - its links point to itself, so unlink is
 * a no-op under inject_lock - never woken, freed by whoever completes
 * it; allocated like a spawn, so the lifetime counts balance) pushed on
 * the worker's 'rl' queue. The probes meet at a barrier ('phase'):
 *   0 gather    probes count themselves in 'arrived' and wait;
 *   1 deep      every probe arrived: no worker polls a task until phase
 *               3, so the await trees hold still (but for an abort of an
 *               idle task from a non-worker thread, which drops it in
 *               place: the one race left, documented in docs/scopes.md);
 *   2 shallow   some worker did not arrive within DUMP_WAIT_NS (a long
 *               poll): names only, that worker's tasks unlisted;
 *   3 release   the requester is done; probes return.
 * Each probe lists its own worker's lists; the requester lists its own
 * (when it is a worker) and the foreign list (under inject_lock). Every
 * fn call is made under 'lock' and only while '!closed': a probe that
 * comes late finds the request closed and calls nothing (the request is
 * freed by the last of its references). One dump at a time. */
#define DUMP_WAIT_NS (100LL * 1000 * 1000)

struct dump_req {
    fut__aword refs;    /* the requester and each probe */
    fut__aword arrived; /* probes at the barrier */
    fut__aword walked;  /* probes done listing */
    fut__aword phase;   /* see above */
    fut__mutex lock;    /* serialises fn; guards 'closed' */
    int closed;
    fut__each_task_fn fn;
    void *ud;
};

struct dump_probe {
    struct fut_future base;
    struct dump_req *req;
};

static fut__aword dump_busy; /* one dump at a time (any runtime) */

static void dump_req_unref(struct dump_req *r)
{
    /* Acq_rel: the last one sees every other's use of the request. */
    if (fut__fetch_sub(&r->refs, 1, FUT__ACQ_REL) == 1) {
        fut__mutex_destroy(&r->lock);
        fut__free(r, sizeof *r);
    }
}

static void dump_list(struct dump_req *r, struct fut_task *head, int deep)
{
    fut__mutex_lock(&r->lock);
    if (!r->closed)
        for (struct fut_task *t = head->owned_next; t != head;
             t = t->owned_next)
            r->fn(r->ud, t, deep);
    fut__mutex_unlock(&r->lock);
}

static void dump_wait(void)
{
    struct timespec ts = {0, 20 * 1000};
    nanosleep(&ts, NULL);
}

static int probe_poll(struct fut_future *f, struct fut_context *cx)
{
    struct dump_req *r = ((struct dump_probe *)f)->req;
    struct mt_worker *w = tls_w;
    (void)cx;
    /* Acq_rel: pairs with the requester's acquire load of 'arrived'. */
    fut__fetch_add(&r->arrived, 1, FUT__ACQ_REL);
    uintptr_t ph;
    /* Acquire: pairs with the requester's release store of 'phase'. */
    while ((ph = fut__load(&r->phase, FUT__ACQUIRE)) == 0)
        dump_wait();
    if (ph == 3)
        return FUT_READY;
    dump_list(r, &w->owned, ph == 1);
    dump_list(r, &w->owned_local, ph == 1);
    fut__fetch_add(&r->walked, 1, FUT__RELEASE); /* pairs: requester */
    while (fut__load(&r->phase, FUT__ACQUIRE) != 3)
        dump_wait();
    return FUT_READY;
}

static void probe_drop(struct fut_future *f)
{
    dump_req_unref(((struct dump_probe *)f)->req);
}

static const struct fut_future_vtable probe_vt = {probe_poll, probe_drop,
                                                  "task_dump_probe", NULL};

/* Queues a probe on worker 'to'; 0 when it could not be made. */
static int probe_send(struct mt_sched *m, struct mt_worker *me,
                      struct mt_worker *to, struct dump_req *r)
{
    size_t bytes = FUT__TASK_HDR + sizeof(struct dump_probe);
    struct fut_task *t = fut__alloc(bytes);
    if (!t)
        return 0;
    struct dump_probe *p = (struct dump_probe *)(void *)fut__task_future(t);
    fut_future_init(&p->base, &probe_vt);
    p->req = r;
    fut__fetch_add(&r->refs, 1, FUT__RELAXED); /* we hold one */
    fut__task_init(t, &m->base, 0, __FILE__, __LINE__);
    t->owned_next = t->owned_prev = t; /* on no list */
    t->size_class = DIRECT | (uint32_t)bytes;
    t->flags = TASK_F_LOCAL; /* home 0: see above */
    if (me)
        stat_inc(me, ST_SPAWNED); /* counted like a spawn */
    else
        fut__fetch_add(&m->refs, 1, FUT__RELAXED);
    rl_push(to, t);
    return 1;
}

int fut__mt_each_task(struct fut__sched *s, fut__each_task_fn fn, void *ud)
{
    if (s->vt != &mt_vt)
        return FUT__NOT_THIS_SCHED;
    struct mt_sched *m = mt_of(s);
    struct mt_worker *me = me_in(m);
    if (fut__tls_sched != s)
        return FUT_EINVAL; /* not a worker or block_on of this runtime */
    uintptr_t z = 0;
    if (!fut__cas(&dump_busy, &z, 1, FUT__ACQUIRE, FUT__RELAXED))
        return FUT_EBUSY;
    struct dump_req *r = fut__alloc(sizeof *r);
    if (!r) {
        fut__store(&dump_busy, 0, FUT__RELEASE);
        return FUT_ENOMEM;
    }
    fut__aword_init(&r->refs, 1);
    fut__aword_init(&r->arrived, 0);
    fut__aword_init(&r->walked, 0);
    fut__aword_init(&r->phase, 0);
    fut__mutex_init(&r->lock);
    r->closed = 0;
    r->fn = fn;
    r->ud = ud;
    uintptr_t sent = 0;
    int missing = 0;
    for (int i = 0; i < m->n; i++)
        if (&m->w[i] != me) {
            if (probe_send(m, me, &m->w[i], r))
                sent++;
            else
                missing = 1;
        }
    int64_t end = fut_now_ns() + DUMP_WAIT_NS;
    uintptr_t a;
    while ((a = fut__load(&r->arrived, FUT__ACQUIRE)) < sent &&
           fut_now_ns() < end)
        dump_wait();
    int deep = a == sent && !missing;
    /* Release: pairs with the probes' acquire loads of 'phase'. */
    fut__store(&r->phase, deep ? 1 : 2, FUT__RELEASE);
    if (me) {
        dump_list(r, &me->owned, deep);
        dump_list(r, &me->owned_local, deep);
    }
    fut__mutex_lock(&m->inject_lock);
    dump_list(r, &m->foreign, deep);
    fut__mutex_unlock(&m->inject_lock);
    /* Acquire: pairs with the probes' release increments. */
    while (fut__load(&r->walked, FUT__ACQUIRE) < a)
        dump_wait();
    fut__mutex_lock(&r->lock);
    r->closed = 1; /* late probes call nothing */
    fut__mutex_unlock(&r->lock);
    fut__store(&r->phase, 3, FUT__RELEASE);
    dump_req_unref(r);
    fut__store(&dump_busy, 0, FUT__RELEASE);
    return deep ? 0 : FUT_ETIMEDOUT;
}
