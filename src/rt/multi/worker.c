/* SPDX-License-Identifier: MIT */
/* The worker loop (Tokio's worker.rs): the next task (handoff, the global
 * queue every 'event_interval' ticks, 'lq', the LIFO slot, the ring,
 * 'rl', the injection queue), a tick that runs it and the LIFO chain it
 * starts within one budget, maintenance every 'event_interval' ticks,
 * search (steal.c) and park (idle.c, park.c) when there is nothing. */
#include "rt/multi/schedule.h"
#include "rt/watchdog.h"

/* Tokio's MAX_LIFO_POLLS_PER_TICK: a ping-pong pair cannot monopolise a
 * worker through its LIFO slot. */
#define LIFO_MAX 3

/* Work of ours other than thread-affine tasks. */
static int has_other_work(struct mt_worker *w)
{
    return fut__load(&w->handoff, FUT__RELAXED) ||
           fut__load(&w->lifo.task, FUT__RELAXED) || fut__ring_len(&w->ring);
}

/* Whether each worker parks on an event source of its own, where its
 * fds' I/O completes (a per-worker driver, rt_internal.h). */
static int per_worker(struct mt_sched *m)
{
    struct fut__driver *d = m->base.driver;
    return d && d->per_worker;
}

static int has_own_work(struct mt_worker *w)
{
    return w->lq_head || fut__load(&w->rl, FUT__RELAXED) || has_other_work(w);
}

static void poll_driver(struct mt_worker *w)
{
    struct mt_sched *m = w->m;
    struct fut__driver *d = m->base.driver;
    if (d && d->per_worker) { /* our source, always; timers if locked */
        int drive = driver_trylock(m);
        w->in_driver = 1;
        d->vt->park(d, w->index, 0, drive);
        w->in_driver = 0;
        if (drive)
            driver_unlock(m);
        /* What our source woke has its fds here: no thief is woken for it
         * (docs/scheduler.md, "Locality"), only a watcher if none sleeps
         * (a stuck poll must not strand it). */
        if (m->n > 1 && fut__ring_len(&w->ring) > 1 && need_watch(m))
            notify_parked(m);
        return;
    }
    if (!d || !driver_trylock(m))
        return;
    w->in_driver = 1;
    d->vt->park(d, w->index, 0, 1);
    w->in_driver = 0;
    driver_unlock(m);
    if (m->n > 1 && fut__ring_len(&w->ring) > 1)
        notify_parked(m);
}

/* Every 'event_interval' ticks. */
static void maintenance(struct mt_worker *w)
{
    fut__mt_drain_unlinks(w);
    rl_drain(w);
    poll_driver(w);
    if (w->m->n > 1) {
        struct fut_task *t = fut__mt_steal_stuck(w);
        if (t)
            push_ring(w, t, PUSH_NEW);
    }
}

static struct fut_task *next_task(struct mt_worker *w)
{
    struct mt_sched *m = w->m;
    struct fut_task *t;
    if (fut__load(&w->handoff, FUT__RELAXED)) {
        /* Acquire: pairs with fut__mt_handoff()'s release. */
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

/* Locality (docs/scheduler.md, "Locality"): a task in a peer's run queue
 * was, most of the time, woken by that peer's event source - with a
 * per-worker driver, where its fd lives, so that run here its next I/O
 * would be handed back there (a cross-thread request); with the shared
 * driver (epoll), by the peer's turn in the driver, which a dry worker
 * can take itself for fresh readiness instead of robbing the batch. So a
 * worker that ran out of work steals from peers only once it has been dry
 * this long - the driver or its own source polled and empty, parked there
 * (or on its futex while a peer drives) meanwhile: park_worker's timed
 * park. The victim's queue waits at most that long for help; a victim
 * stuck in one poll is handled by fut__mt_steal_stuck, which this does
 * not gate. Without a driver there is nothing else to take: no gate. */
#define STEAL_IDLE_NS (50 * 1000)

/* How long 'w', dry since w->dry_since, must still wait before it may
 * steal (<= 0: it may). */
static int64_t dry_left(const struct mt_worker *w)
{
    return w->dry_since + STEAL_IDLE_NS - fut_now_ns();
}

/* Whether a worker with nothing of its own may steal from peers now:
 * always without a driver; with one (either kind), once dry for
 * STEAL_IDLE_NS (the clock starts at the first look). */
static int may_steal(struct mt_worker *w)
{
    if (!w->m->base.driver)
        return 1;
    if (!w->dry_since) {
        w->dry_since = fut_now_ns();
        return 0;
    }
    return dry_left(w) <= 0;
}

/* Whether a peer's run queue holds work (stealable from its ring). */
static int peer_work(struct mt_worker *w)
{
    struct mt_sched *m = w->m;
    for (int i = 0; i < m->n; i++)
        if (&m->w[i] != w && fut__ring_len(&m->w[i].ring))
            return 1;
    return 0;
}

/* Out of work: become a searcher (unless half the workers search
 * already) and steal, else take from the injection queue. */
__attribute__((noinline)) static struct fut_task *search(struct mt_worker *w)
{
    if (!w->searching && !fut__mt_to_searching(w))
        return NULL;
    struct fut_task *t = may_steal(w) ? fut__mt_steal_peers(w) : NULL;
    if (t)
        return t;
    t = fut__mt_steal_stuck(w);
    if (!t)
        t = inject_pop_batch(w);
    return t;
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
        /* Acquire: pairs with idle.c's release store of 'sleeping'. */
        if (!fut__load(&w->sleeping, FUT__ACQUIRE) || has_other_work(w))
            return 0;
        rl_drain(w);
        struct fut_task *t = lq_pop(w);
        if (!t)
            return ran;
        ran = 1;
        /* Relaxed: a hint for poppers (idle.c pop_sleeper). */
        fut__store(&w->in_run, 1, FUT__RELAXED);
        run_tick(w, t);
        fut__store(&w->in_run, 0, FUT__RELAXED);
    }
}

/* Parks until there is work. Returns a task found while parked (the
 * watcher stealing from a stuck worker) or NULL. */
__attribute__((noinline)) static struct fut_task *
park_worker(struct mt_worker *w)
{
    struct mt_sched *m = w->m;
    fut__mt_drain_unlinks(w);
    int last = fut__mt_to_parked(w);
    /* Seq_cst fence: pairs with notify_parked's (see the rules). */
    fut__fence(FUT__SEQ_CST);
    if (has_own_work(w)) {
        fut__mt_unpark_self(w);
        return NULL;
    }
    fut__mt_drain_unlinks(w); /* pushed before we were seen sleeping */
    /* Every parker looks once more (Tokio: the last searcher does; a
     * worker may also come here without searching, see worker_loop).
     * A worker that may not steal yet (may_steal) does not: work in a
     * peer's queue brings it back after a timed park instead, which a
     * notify would cut short (it may pick us: a spin until then). */
    (void)last;
    int gated = m->base.driver && w->dry_since && dry_left(w) > 0;
    /* Relaxed: a hint, as in work_visible (the timed park covers it). */
    if (gated ? fut__load(&m->inject_n, FUT__RELAXED) != 0 : work_visible(m))
        notify_parked(m); /* may pick us: our park then returns at once */
    /* Watch (a timed park) only while some queue holds work a stuck
     * worker could strand: with nothing queued anywhere, a timer armed and
     * cancelled on every park costs more than the wake itself
     * (xthread_wake: 2.6x the futex floor with, 1.9x without). Work
     * queued later wakes a sleeper to watch (need_watch in push_lifo and
     * push_ring), which claims the role in the loop below. */
    if (m->n > 1 && (fut__load(&m->idle, FUT__SEQ_CST) >> 16) != 0 &&
        (any_lifo(m) || work_visible(m)))
        fut__mt_claim_watch(w);
    for (;;) {
        int64_t tmo = w->watching ? w->watch_ns : -1;
        if (gated && peer_work(w)) {
            /* Back to steal once dry for STEAL_IDLE_NS (may_steal). */
            int64_t left = dry_left(w);
            if (left < 1000)
                left = 1000;
            if (tmo < 0 || left < tmo)
                tmo = left;
        }
        fut__mt_park(w, tmo, 1);
        if (fut__load(&m->stop, FUT__ACQUIRE)) {
            fut__mt_release_watch(w);
            return NULL;
        }
        /* Acquire: pairs with idle.c's release store of 'sleeping'. */
        if (!fut__load(&w->sleeping, FUT__ACQUIRE)) {
            w->searching = 1; /* notify_parked counted us */
            fut__mt_release_watch(w);
            stat_inc(w, ST_UNPARKS);
            return NULL;
        }
        if (has_own_work(w)) {
            if (!run_parked(w)) {
                fut__mt_unpark_self(w);
                fut__mt_release_watch(w);
                if (m->n > 1 && fut__ring_len(&w->ring) > 1 &&
                    (!per_worker(m) || need_watch(m)))
                    notify_parked(m); /* the driver woke several */
                return NULL;
            }
            stat_inc(w, ST_UNPARKS); /* woke with work, ran it */
        }
        fut__mt_drain_unlinks(w); /* what woke us, maybe */
        if (gated && dry_left(w) <= 0) {
            gated = 0;
            if (peer_work(w)) { /* dry long enough: go and steal */
                fut__mt_unpark_self(w);
                fut__mt_release_watch(w);
                return NULL;
            }
        }
        if (w->watching) {
            struct fut_task *t = fut__mt_steal_stuck(w);
            if (t) {
                fut__mt_unpark_self(w);
                fut__mt_release_watch(w);
                return t;
            }
            fut__mt_watch_idle(w);
        } else if (m->n > 1 && any_lifo(m) &&
                   (fut__load(&m->idle, FUT__SEQ_CST) >> 16) != 0) {
            fut__mt_claim_watch(w); /* woken by a LIFO push to watch */
        }
    }
}

static void run_one(struct mt_worker *w, struct fut_task *t, int *budget)
{
    struct mt_sched *m = w->m;
    /* Before: counted once it started. Release: steal.c reads it for
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
        fut__mt_from_searching(w);
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
    int own_src = per_worker(m);
    while (!fut__load(&m->stop, FUT__ACQUIRE)) {
        struct fut_task *t = next_task(w);
        if (!t && own_src) {
            /* I/O where the task is (docs/scheduler.md, "Locality"): out
             * of work, a worker polls its own event source before it
             * steals - the tasks it wakes have their fds there; a steal
             * would run them elsewhere and hand their next I/O back
             * here. */
            poll_driver(w);
            t = next_task(w);
        }
        if (t && w->dry_since)
            w->dry_since = 0; /* work of its own: not dry */
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

void *fut__mt_worker_main(void *arg)
{
    struct mt_worker *w = arg;
    fut__mt_tls_w = w;
    fut__tls_sched = &w->m->base;
    fut__tls_pool = &w->pool;
    struct fut__driver *d = w->m->base.driver;
    if (d && d->per_worker)
        d->vt->worker_start(d, w->index);
    struct fut__watch *wd = w->m->base.watch;
    if (wd) { /* our slot; the first worker starts the watchdog */
        fut__watch_bind(wd, w->index);
        fut__watch_start(wd);
    }
    worker_loop(w);
    if (wd)
        fut__watch_unbind(NULL);
    fut__mt_worker_exit(w);
    if (d && d->per_worker)
        fut__mt_source_exit(w);
    fut__pool_flush(&w->pool); /* still its owner (see internal.h) */
    fut__tls_pool = NULL;
    fut__tls_sched = NULL;
    fut__mt_tls_w = NULL;
    return NULL;
}
