/* SPDX-License-Identifier: MIT */
/* The current-thread scheduler: every task runs on the thread inside
 * fut_block_on (Tokio's current_thread).
 *
 * Rules:
 *   - the local run queue, the live-task list, the slab's local lists and
 *     the 'shutting_down' flag belong to the runtime thread: the thread
 *     inside block_on (fut__tls_sched == this), or the thread in
 *     fut_runtime_free;
 *   - other threads reach the scheduler only through the remote queue
 *     (under 'lock'), the parker, 'main_woken' and the reference count;
 *   - another thread unparks the runtime thread under 'lock' and only
 *     while 'closed' is clear: shutdown sets 'closed' under it before it
 *     frees the driver, so no unparker is ever inside the driver (its
 *     eventfd, its memory) when it goes - the race TSan found in
 *     sync_mpsc.stress_runtimes (a producer's last wake writing to the
 *     eventfd that the consumer's runtime thread was closing);
 *   - a task spawned from another thread is queued remotely with
 *     TASK_F_UNLINKED and joins the live list when the runtime thread
 *     takes it off the remote queue;
 *   - the scheduler's memory lives while any task or main-future waker
 *     does, so a waker or join handle that outlives fut_runtime_free stays
 *     safe. Counting that with an atomic per task cost two locked
 *     instructions per spawn, so 'refs' starts at BIAS + 1 and only the
 *     rare paths touch it: a task freed off the runtime thread, a task
 *     spawned from another thread (TASK_F_FOREIGN: +1 at spawn, -1 at its
 *     free wherever it happens), a main-waker clone. Tasks spawned and
 *     freed on the runtime thread are counted by the plain 'n_spawned' /
 *     'n_freed'. At shutdown, BIAS + 1 - (n_spawned - n_freed) is taken
 *     off 'refs', which leaves exactly the number of blocks still alive;
 *     the free that brings it to 0 frees the scheduler.
 *
 * Atomic read-modify-writes on the run path (issue 35: which a single
 * runtime thread can do without, and which it cannot):
 *   - removed: the swap of 'main_woken' on every batch. block_on reads it
 *     (relaxed) and swaps it only when it reads 1. Main wakers on any
 *     thread only set it; only the runtime thread clears it, so a 0 read
 *     leaves nothing to clear, and a wake after that read is seen by the
 *     next batch's read or by park's acquire load before it sleeps (the
 *     waker's unpark, after its store, ends that sleep);
 *   - not RMWs already: the local run queue, the batch 'countdown' (a
 *     register while block_on runs) and the runtime thread's statistics
 *     (one writer: relaxed load + store, still atomics because
 *     fut_runtime_stats reads them from any thread);
 *   - kept, because another thread can race with them: every RMW on a
 *     task's state word (src/rt/task.c), the same code as the
 *     multi-thread runtime's. A waker cloned into another thread calls
 *     fut_waker_wake there, and that wake goes straight to the state word
 *     (only its queueing goes through the remote queue), so on one
 *     runtime thread too: the wake's CAS (two wakes of an idle task: one
 *     alone may set RUNNING and queue it), the poll's fetch_and of
 *     NOTIFIED and the idle CAS (a remote wake that sets NOTIFIED between
 *     a plain load and store would be lost: test/core_task.c
 *     remote_wake_pingpong, and the model checker's mc_task_wake_run),
 *     the waker clone's fetch_add and every reference drop (a remote
 *     waker drops its reference concurrently), and completion (the last
 *     reference may be a remote waker's; a detached task whose list
 *     reference is its only one is freed without an RMW already);
 *   - kept: the remote queue's counters (push_remote: any thread), 'refs'
 *     (any thread, rare paths only), 'in_block_on' (once per block_on).
 *
 * Fairness: the main future is polled when woken, between batches of at
 * most 'event_interval' tasks; the remote queue is drained every
 * 'event_interval' ticks and whenever the local queue runs dry.
 *
 * Simulation mode (base.sim set): src/rt/sched_current_sim.c's rules.
 */
#include <string.h>

#include "rt/sched_current.h"
#include "rt/watchdog.h"

#define TASK_F_UNLINKED 2u

#define TASK_F_FOREIGN                                                       \
    4u /* spawned off the runtime thread: counted in refs */
#define BIAS ((uintptr_t)1 << 40)

static struct ct_sched *ct_of(struct fut__sched *s)
{
    return (struct ct_sched *)s;
}

static void stat_inc(fut__aword *a)
{
    /* Statistics only: one writer thread, relaxed load + store. */
    fut__store(a, fut__load(a, FUT__RELAXED) + 1, FUT__RELAXED);
}

/* Takes 'n' off 'refs'; frees the scheduler when that was the rest. */
static void ct_release(struct ct_sched *c, uintptr_t n)
{
    /* Release/acquire: every user's last access before the free. */
    if (fut__fetch_sub(&c->refs, n, FUT__ACQ_REL) != n)
        return;
    fut__slab_fini(&c->slab);
    fut__mutex_destroy(&c->lock);
    fut__sim_free(c->base.sim);
    FUT_RT_FORGET(c->base.rt);
    fut__free(c->base.rt, sizeof *c->base.rt); /* lives as long (rt.h) */
    fut__free(c, sizeof *c);
}

static void ct_ref_dec(struct ct_sched *c)
{
    ct_release(c, 1);
}

static int on_runtime_thread(struct ct_sched *c)
{
    return fut__tls_sched == &c->base;
}

static void unpark(struct ct_sched *c);
static void unpark_locked(struct ct_sched *c);

/* ------------------------------------------------------------- queues */

/* push_local and the list are sched_current.h's, simulation mode's queue
 * sched_current_sim.c's. */
FUT__HOT_INLINE struct fut_task *pop_local(struct ct_sched *c)
{
    if (FUT_UNLIKELY(c->base.sim))
        return fut__ct_sim_pop(c);
    return list_pop(c);
}

static void link_owned(struct ct_sched *c, struct fut_task *t)
{
    fut__list_push_front(&c->owned, &t->owned);
}

/* Returns 0 when the runtime no longer accepts tasks (shut down). */
static int push_remote(struct ct_sched *c, struct fut_task *t)
{
    fut__mutex_lock(&c->lock);
    if (c->closed) {
        fut__mutex_unlock(&c->lock);
        return 0;
    }
    t->next = NULL;
    if (c->rtail)
        c->rtail->next = t;
    else
        c->rhead = t;
    c->rtail = t;
    /* Relaxed: a hint; the queue itself is read under the lock. */
    fut__fetch_add(&c->remote_n, 1, FUT__RELAXED);
    unpark_locked(c); /* see the rules: under the lock */
    fut__mutex_unlock(&c->lock);
    fut__fetch_add(&c->n_remote, 1, FUT__RELAXED);
    return 1;
}

/* Moves the remote queue to the local one; returns how many. */
static int drain_remote(struct ct_sched *c)
{
    if (fut__load(&c->remote_n, FUT__RELAXED) == 0)
        return 0;
    fut__mutex_lock(&c->lock);
    struct fut_task *t = c->rhead;
    c->rhead = c->rtail = NULL;
    fut__store(&c->remote_n, 0, FUT__RELAXED);
    fut__mutex_unlock(&c->lock);
    int n = 0;
    while (t) {
        struct fut_task *next = t->next;
        if (t->flags & TASK_F_UNLINKED) {
            t->flags &= (uint16_t)~TASK_F_UNLINKED;
            link_owned(c, t);
            sim_name(c, t);
        }
        push_local(c, t);
        t = next;
        n++;
    }
    return n;
}

/* ------------------------------------------------------ scheduler vtable */

static void ct_schedule(struct fut__sched *s, struct fut_task *t)
{
    struct ct_sched *c = ct_of(s);
    if (on_runtime_thread(c)) {
        if (!c->shutting_down)
            push_local(c, t);
        /* During shutdown the task stays RUNNING in the live list and is
         * dropped by the shutdown loop. */
        return;
    }
    push_remote(c, t);
    /* Refused (shut down): the shutdown loop or a later drop of the task
     * deals with it; the waker's reference is the caller's to drop. */
}

static void ct_unlink(struct fut__sched *s, struct fut_task *t)
{
    (void)s;
    fut__list_remove(&t->owned);
}

/* 'size_class' holds a slab class, or DIRECT | bytes for a block that
 * came straight from the allocator hook. */
#define DIRECT 0x80000000u

static void ct_free_task(struct fut__sched *s, struct fut_task *t)
{
    struct ct_sched *c = ct_of(s);
    uint32_t cls = t->size_class;
    int local = on_runtime_thread(c) && !c->shut_down;
    int foreign = (t->flags & TASK_F_FOREIGN) != 0;
    if (cls & DIRECT)
        fut__free(t, cls & ~DIRECT);
    else if (local)
        fut__slab_free_local(&c->slab, t, cls, 0);
    else
        fut__slab_free_remote(&c->slab, t, cls, 0);
    if (local && !foreign) {
        stat_inc(&c->n_freed); /* no reference was taken: see the rules */
        return;
    }
    fut__fetch_add(&c->n_freed_foreign, 1, FUT__RELAXED);
    ct_ref_dec(c);
}

/* The block pool: the slab, on the runtime thread; blocks pin the
 * scheduler's memory exactly as tasks do (see the rules). */
static void *ct_pool_alloc(struct fut__blockpool *p, size_t size,
                           uint32_t *cls)
{
    struct ct_sched *c = fut__container_of(p, struct ct_sched, pool);
    void *b = fut__slab_alloc(&c->slab, size, cls);
    if (b)
        stat_inc(&c->n_blocks);
    return b;
}

static void ct_pool_free(struct fut__blockpool *p, void *b, uint32_t cls,
                         size_t size)
{
    struct ct_sched *c = fut__container_of(p, struct ct_sched, pool);
    int local = on_runtime_thread(c) && !c->shut_down;
    if (cls == 0)
        fut__free(b, size);
    else if (local)
        fut__slab_free_local(&c->slab, b, cls, size);
    else
        fut__slab_free_remote(&c->slab, b, cls, size);
    if (local)
        stat_inc(&c->n_blocks_freed);
    else
        ct_ref_dec(c);
}

static const struct fut__sched_vt ct_vt;

/* ------------------------------------------------------------ main waker */

static void main_wake_by_ref(const void *data)
{
    struct ct_sched *c = (struct ct_sched *)data;
    /* Release: pairs with block_on's acquire swap. */
    fut__store(&c->main_woken, 1, FUT__RELEASE);
    if (!on_runtime_thread(c))
        unpark(c);
}

static void main_drop(const void *data)
{
    ct_ref_dec((struct ct_sched *)data);
}

static void main_wake(const void *data)
{
    main_wake_by_ref(data);
    main_drop(data);
}

static struct fut_waker main_clone(const void *data);
static const struct fut_waker_vtable main_waker_vt = {
    main_clone, main_wake, main_wake_by_ref, main_drop};

static struct fut_waker main_clone(const void *data)
{
    struct ct_sched *c = (struct ct_sched *)data;
    fut__fetch_add(&c->refs, 1, FUT__RELAXED); /* caller holds one */
    struct fut_waker w = {data, &main_waker_vt};
    return w;
}

/* ---------------------------------------------------------------- public */

int fut__ct_new(struct fut_runtime *rt, const struct fut_rt_config *cfg,
                fut__driver_new_fn driver_new, struct fut__sched **out)
{
    struct ct_sched *c = fut__alloc(sizeof *c);
    if (!c)
        return FUT_ENOMEM;
    memset(c, 0, sizeof *c);
    fut__list_init(&c->owned);
    c->base.vt = &ct_vt;
    c->base.rt = rt;
    c->base.slow_poll_ns = cfg->slow_poll_ns;
    fut__slab_init(&c->slab);
    c->pool.alloc = ct_pool_alloc;
    c->pool.free = ct_pool_free;
    fut__pool_init_cache(&c->pool);
    c->budget = cfg->budget;
    c->event_interval = cfg->event_interval;
    c->countdown = cfg->event_interval;
    fut__mutex_init(&c->lock);
    fut__aword_init(&c->remote_n, 0);
    fut__aword_init(&c->in_block_on, 0);
    fut__aword_init(&c->main_woken, 0);
    fut__aword_init(&c->refs, BIAS + 1);
    fut__parker_init(&c->parker);
    if (!cfg->no_driver) {
        int r = driver_new(&c->base, cfg, &c->base.driver);
        if (r) {
            fut__mutex_destroy(&c->lock);
            fut__slab_fini(&c->slab);
            fut__free(c, sizeof *c);
            return r;
        }
    }
    *out = &c->base;
    return 0;
}

/* 'thread_affine' is ignored: every task runs on the thread inside
 * block_on. */
static int ct_spawn(struct fut__sched *s, const struct fut_future *f,
                    size_t size, struct fut_join *join, int thread_affine,
                    const char *file, int line)
{
    struct ct_sched *c = ct_of(s);
    int local = on_runtime_thread(c);
    if (join)
        fut__join_init(join, NULL);
    if (local && c->shutting_down)
        return FUT_ESHUTDOWN;
    uint32_t cls = 0;
    size_t bytes = FUT__TASK_HDR + size;
    if (s->sim) /* the tag after the future, aligned (sched_current_sim.c) */
        bytes = FUT__TASK_HDR + ((size + 7) & ~(size_t)7) +
                sizeof(struct fut__sim_tag);
    if (bytes >= DIRECT)
        return FUT_EINVAL;
    struct fut_task *t = local && !s->sim
                             ? fut__slab_alloc(&c->slab, bytes, &cls)
                             : fut__alloc(bytes);
    if (!t)
        return FUT_ENOMEM;
    memcpy(fut__task_future(t), f, size);
    fut__task_init(t, s, join != NULL, file, line);
    t->size_class = cls ? cls : (DIRECT | (uint32_t)bytes);
    t->flags = local ? 0 : TASK_F_UNLINKED | TASK_F_FOREIGN;
    if (s->sim) {
        struct fut__sim_tag *g = sim_tag(t);
        g->id = 0; /* named on the runtime thread */
        g->file = file;
        g->line = line;
        if (local)
            sim_name(c, t);
    }
    if (!local) /* the task's (see the rules) */
        fut__fetch_add(&c->refs, 1, FUT__RELAXED);
    /* The handle before the task is queued: from another thread, the
     * runtime's thread may poll it at once, and the task may read its
     * own handle (fut_join_abort). */
    if (join)
        fut__join_init(join, t);
    if (local) {
        link_owned(c, t);
        push_local(c, t);
    } else if (!push_remote(c, t)) {
        if (join) { /* never published: the handle goes back to empty */
            FUT_HANDLE_END(t, join->gen, "fut_spawn");
            fut__join_init(join, NULL);
        }
        fut__free(t, bytes);
        ct_ref_dec(c);
        return FUT_ESHUTDOWN;
    }
    if (local)
        stat_inc(&c->n_spawned);
    else
        fut__fetch_add(&c->n_spawned_foreign, 1, FUT__RELAXED);
    return 0;
}

/* 'sim': c->base.sim is set (block_on reads it once: the poll may write
 * memory the compiler cannot rule out, so it would be re-read per task). */
FUT__HOT_INLINE void run_task(struct ct_sched *c, struct fut_task *t, int sim)
{
    stat_inc(&c->n_polls);
    int spent = 0;
    /* Every other runtime polls without the simulation's tag copy. */
    struct fut__sim_tag tag, *g = NULL;
    if (FUT_UNLIKELY(sim)) {
        tag = *sim_tag(t);
        g = &tag;
    }
    enum fut__run_result r = fut__task_run(t, c->budget, &spent);
    if (spent)
        stat_inc(&c->n_budget);
    if (FUT_UNLIKELY(g))
        fut__ct_sim_ran_task(c, t, g, r);
    else if (r == FUT__RUN_RESCHEDULE)
        push_local(c, t); /* to the back: the others go first */
}

/* Lets the driver (if any) dispatch what is ready without blocking. */
static void poll_driver(struct ct_sched *c)
{
    if (c->base.driver)
        c->base.driver->vt->park(c->base.driver, 0, 0, 1);
}

/* Sleeps until something arrives; re-checks after arming the parker's
 * permit so a wake between the checks and the sleep is never lost. */
static void park(struct ct_sched *c)
{
    if (drain_remote(c) || fut__load(&c->main_woken, FUT__ACQUIRE))
        return;
    stat_inc(&c->n_parks);
    struct fut__driver *d = c->base.driver;
    if (d) {
        d->vt->park(d, 0, -1, 1);
        if (c->base.sim && d->stalled) { /* sched_current_sim.c */
            d->stalled = 0;
            if (!c->qlen && !drain_remote(c) &&
                !fut__load(&c->main_woken, FUT__ACQUIRE))
                c->sim_stopped = SIM_DEADLOCK;
        }
    } else
        fut__parker_park(&c->parker, -1);
}

/* Under 'lock', 'closed' clear (see the rules). */
static void unpark_locked(struct ct_sched *c)
{
    if (c->base.driver)
        c->base.driver->vt->unpark(c->base.driver, 0);
    else
        fut__parker_unpark(&c->parker);
}

/* From another thread: nothing once the runtime is shut down (no thread
 * to wake; the driver may be gone). */
static void unpark(struct ct_sched *c)
{
    fut__mutex_lock(&c->lock);
    if (!c->closed)
        unpark_locked(c);
    fut__mutex_unlock(&c->lock);
}

static int ct_block_on(struct fut__sched *s, struct fut_future *f)
{
    struct ct_sched *c = ct_of(s);
    if (c->shutting_down) /* freed: its tasks are gone, its driver too */
        return FUT_ESHUTDOWN;
    if (c->sim_stopped) /* simulation mode: sched_current_sim.c */
        return FUT_ECANCELED;
    uintptr_t zero = 0;
    if (!fut__cas(&c->in_block_on, &zero, 1, FUT__ACQUIRE, FUT__RELAXED))
        return FUT_EBUSY;
    struct fut__sched *saved = fut__tls_sched;
    struct fut__blockpool *saved_pool = fut__tls_pool;
    fut__tls_sched = s;
    fut__tls_pool = &c->pool;
    struct fut__simrng *saved_rng = fut__tls_simrng;
    struct fut__simfault *saved_fault = fut__tls_simfault;
    if (s->sim) {
        fut__tls_simrng = &s->sim->rng;
        /* Seeded faults: in the program's polls only (not at shutdown) */
        fut__tls_simfault = s->sim->fault.kinds ? &s->sim->fault : NULL;
    }
    struct fut__watch_slot *saved_ws = NULL;
    if (s->watch) { /* the watchdog starts with the first block_on */
        saved_ws = fut__watch_bind(s->watch, 0);
        fut__watch_start(s->watch);
    }
    struct fut_context cx;
    cx.waker.data = c;
    cx.waker.vt = &main_waker_vt;
    cx.budget = c->budget;
    cx.task = NULL;
    fut__store(&c->main_woken, 1, FUT__RELAXED);
    int ret = 0;
    /* Read once: both are fixed while block_on runs (set at creation);
     * 'countdown' lives in a register while it runs (block_on does not
     * nest: EBUSY), back in 'c' for the next block_on. */
    const int sim = s->sim != NULL;
    const int interval = c->event_interval;
    int countdown = c->countdown;
    for (;;) {
        /* The swap only when a wake is seen (see the rules: no RMW per
         * batch when the main future was not woken). Acquire: pairs with
         * the main waker's release store. */
        if (fut__load(&c->main_woken, FUT__RELAXED) &&
            fut__swap(&c->main_woken, 0, FUT__ACQUIRE)) {
            cx.budget = c->budget;
            int ready = fut_poll(f, &cx) == FUT_READY;
            sim_main_step(c, ready);
            if (ready)
                break;
        }
        int n;
        for (n = 0; n < interval; n++) {
            if (FUT_UNLIKELY(sim) && c->sim_stopped)
                break;
            struct fut_task *t = sim ? fut__ct_sim_pop(c) : list_pop(c);
            if (!t && drain_remote(c))
                t = sim ? fut__ct_sim_pop(c) : list_pop(c);
            if (!t)
                break;
            run_task(c, t, sim);
            if (--countdown == 0) {
                countdown = interval;
                drain_remote(c);
                poll_driver(c);
            }
        }
        if (FUT_UNLIKELY(sim) && c->sim_stopped) {
            ret = c->sim_stopped == SIM_DEADLOCK ? -EDEADLK : FUT_ECANCELED;
            if (c->sim_stopped == SIM_DEADLOCK) {
                fut__sim_deadlock(s->sim);
                c->sim_stopped = 0;
            }
            break;
        }
        if (n == 0)
            park(c);
    }
    c->countdown = countdown;
    fut__pool_flush(&c->pool); /* still its owner (see internal.h) */
    if (s->watch)
        fut__watch_unbind(saved_ws);
    fut__tls_sched = saved;
    fut__tls_pool = saved_pool;
    fut__tls_simrng = saved_rng;
    fut__tls_simfault = saved_fault;
    fut__store(&c->in_block_on, 0, FUT__RELEASE);
    return ret;
}

/* Drops every task; the scheduler's memory, and the runtime handle with
 * it, go with the last reference (see the rules), so a join handle kept
 * past fut_runtime_free can still spawn through the handle and be
 * refused. */
static void ct_shutdown(struct fut__sched *s)
{
    struct ct_sched *c = ct_of(s);
    struct fut__sched *saved = fut__tls_sched;
    struct fut__blockpool *saved_pool = fut__tls_pool;
    fut__tls_sched = s;   /* we are the runtime thread now */
    fut__tls_pool = NULL; /* drops may allocate: not from a dying slab */
    struct fut__simrng *saved_rng = fut__tls_simrng;
    struct fut__simfault *saved_fault = fut__tls_simfault;
    fut__tls_simfault = NULL; /* drops never fail (a fault-free teardown) */
    if (s->sim) {
        fut__tls_simrng = &s->sim->rng;
        if (s->sim->verbose) /* the end of the simulation (fut/sim.h) */
            fut__sim_print(s->sim);
    }
    fut__mutex_lock(&c->lock);
    c->closed = 1;
    fut__mutex_unlock(&c->lock);
    c->shutting_down = 1;
    /* Queued tasks stay RUNNING; take them off the queues first. */
    fut__store(&c->remote_n, 1, FUT__RELAXED); /* force the drain */
    drain_remote(c);
    while (pop_local(c))
        ;
    /* Dropping one task's future can wake others (they stay in the live
     * list, RUNNING) or finish them; loop until the list is empty. */
    while (!fut__list_empty(&c->owned))
        fut__task_shutdown(fut__task_of_owned(c->owned.next));
    if (c->base.driver) {
        /* No unparker can be in it ('closed', see the rules). */
        c->base.driver->vt->shutdown(c->base.driver);
        c->base.driver->vt->free(c->base.driver);
        c->base.driver = NULL;
    }
    if (s->sim)
        s->sim->now = NULL; /* the clock went with the driver */
    if (c->ring) {          /* empty now: nothing is queued during shutdown */
        fut__free(c->ring, c->rcap * sizeof *c->ring);
        c->ring = NULL;
        c->rcap = 0;
    }
    fut__tls_sched = saved;
    fut__tls_pool = saved_pool;
    fut__tls_simrng = saved_rng;
    fut__tls_simfault = saved_fault;
    /* Convert the plain counts into 'refs' (see the rules): what is left
     * is the number of task blocks still referenced somewhere. */
    c->shut_down = 1;
    uintptr_t alive = fut__load(&c->n_spawned, FUT__RELAXED) -
                      fut__load(&c->n_freed, FUT__RELAXED) +
                      fut__load(&c->n_blocks, FUT__RELAXED) -
                      fut__load(&c->n_blocks_freed, FUT__RELAXED);
    ct_release(c, BIAS + 1 - alive); /* may free 'rt' with 'c' */
}

static void ct_stats(struct fut__sched *s, struct fut_rt_stats *out)
{
    struct ct_sched *c = ct_of(s);
    out->spawned = fut__load(&c->n_spawned, FUT__RELAXED) +
                   fut__load(&c->n_spawned_foreign, FUT__RELAXED);
    out->alive = out->spawned - fut__load(&c->n_freed, FUT__RELAXED) -
                 fut__load(&c->n_freed_foreign, FUT__RELAXED);
    out->polls = fut__load(&c->n_polls, FUT__RELAXED);
    out->remote_wakes = fut__load(&c->n_remote, FUT__RELAXED);
    out->parks = fut__load(&c->n_parks, FUT__RELAXED);
    out->budget_yields = fut__load(&c->n_budget, FUT__RELAXED);
    out->workers = 1;
}

static int ct_workers(struct fut__sched *s)
{
    return 1;
}

static int ct_worker_stats(struct fut__sched *s, int worker,
                           struct fut_rt_stats *out)
{
    if (worker != 0)
        return FUT_EINVAL;
    ct_stats(s, out);
    return 0;
}

/* ------------------------------------------------------- prefetch hint */

/* rt_internal.h: the head of the local queue, read-only, for a yield's
 * prefetch of what runs next. Kept apart from the queue code above. */
struct fut_task *fut__ct_peek_next(void)
{
    struct fut__sched *s = fut__tls_sched;
    if (!s || s->vt != &ct_vt || s->sim)
        return NULL;
    return ct_of(s)->head;
}

/* ------------------------------------------------------------ task dump */

/* Task dumps (rt_internal.h): the live list belongs to the runtime thread,
 * so only that thread may walk it; every task is idle or queued while it
 * does (the caller is the only poll running), and other threads' aborts
 * only queue (drop_here is NULL): deep. Tasks spawned from other threads
 * and not taken off the remote queue yet are not listed. */
static int ct_each_task(struct fut__sched *s, fut__each_task_fn fn, void *ud)
{
    struct ct_sched *c = ct_of(s);
    if (fut__tls_sched != s)
        return FUT_EINVAL;
    for (struct fut__list *n = c->owned.next; n != &c->owned; n = n->next)
        fn(ud, fut__task_of_owned(n), 1);
    return 0;
}

static const struct fut__sched_vt ct_vt = {
    .schedule = ct_schedule,
    .unlink = ct_unlink,
    .free_task = ct_free_task,
    .drop_here = NULL,
    .start = NULL,
    .block_on = ct_block_on,
    .spawn = ct_spawn,
    .shutdown = ct_shutdown,
    .stats = ct_stats,
    .workers = ct_workers,
    .worker_stats = ct_worker_stats,
    .each_task = ct_each_task,
};
