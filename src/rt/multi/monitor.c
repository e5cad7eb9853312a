/* SPDX-License-Identifier: MIT */
/* The monitor (Go's sysmon, for one job): a thread per multi-thread
 * runtime with a driver and two workers or more, that keeps I/O and
 * timers served while a worker runs one long poll. With a per-worker
 * driver (rt_internal.h) it keeps the timers served - whichever worker
 * parks with the driver's trylock drives them - and wakes a sleeping
 * worker when one is stuck in a poll (check_stuck), so that a peer's
 * park serves the stuck worker's event source (the driver's business;
 * docs/scheduler.md, "The monitor", and docs/io.md, "What a busy task
 * can delay").
 *
 * Why: a worker that returns from the driver runs what it woke itself,
 * and the other workers may be asleep on their futexes (they lost the
 * driver's trylock when they parked). If that task's poll is long (a
 * handler that spins 500 ms), nobody waits in epoll and nobody fires
 * timers until it returns: every connection and timer of the runtime
 * stalls behind one task. Waking a sleeper each time a worker leaves the
 * driver would cost a futex wake per request; the monitor costs a timed
 * sleep per tick while workers are awake, and nothing while all sleep.
 *
 * Rules of 'mon_state' (MON_RUN, MON_DORMANT, MON_STOP) and the tick:
 *   - while some worker is awake (pstate P_EMPTY or P_NOTIFIED) the
 *     monitor ticks every MON_TICK_NS. A tick that finds the driver's
 *     'turns' (parks and polls begun, driver.c) unchanged since the last
 *     tick, its lock free, and the driver with something to wait for (not
 *     'undriven') calls notify_parked: a sleeper wakes, finds no work and
 *     parks in the free driver. So readiness and timers wait about two
 *     ticks and a wake at most while a worker is free to drive.
 *   - after MON_IDLE_TICKS ticks in a row with every worker asleep it
 *     goes dormant: stores MON_DORMANT (seq_cst), reads every pstate again
 *     (seq_cst) and sleeps on mon_state's futex word unless one is awake.
 *   - a worker that slept swaps its pstate back to P_EMPTY (an RMW,
 *     seq_cst, park.c) and then reads mon_state (seq_cst, park.c mon_kick):
 *     on MON_DORMANT it CASes MON_RUN in and wakes the futex. Dekker: the
 *     monitor's re-read sees the worker awake, or the worker sees
 *     MON_DORMANT and wakes it: the monitor never stays dormant while a
 *     worker is awake.
 *   - shutdown stores MON_STOP and wakes the futex before anything else,
 *     then joins the monitor; the monitor reads the scheduler only until
 *     it sees MON_STOP.
 *
 * The monitor also hosts the runtime's long-poll watchdog when it has one
 * (src/rt/watchdog.c, fut__watch_host): each tick with a worker awake
 * scans the workers' poll slots, so one thread watches the workers for
 * both jobs. A worker inside a poll is awake, so the monitor is not
 * dormant while a poll could be long; fut_runtime_free stops the scans
 * (fut__watch_stop) before the shutdown stops the monitor.
 */
#include <errno.h>
#include <stdio.h>

#include "rt/multi/idle.h"
#include "rt/watchdog.h"

#define MON_TICK_NS (2 * 1000 * 1000)
#define MON_IDLE_TICKS 25 /* dormant after 50 ms with every worker asleep */

/* Seq_cst: the dormant re-read pairs with the workers' swaps (rules). */
static int any_awake(struct mt_sched *m)
{
    for (int i = 0; i < m->n; i++) {
        uintptr_t p = fut__load(&m->w[i].pstate, FUT__SEQ_CST);
        if (p == P_EMPTY || p == P_NOTIFIED)
            return 1;
    }
    return 0;
}

/* Sleeps until a worker wakes up or shutdown; 0 on MON_STOP. */
static int go_dormant(struct mt_sched *m)
{
    uintptr_t run = MON_RUN;
    if (!fut__cas(&m->mon_state, &run, MON_DORMANT, FUT__SEQ_CST,
                  FUT__SEQ_CST))
        return run != MON_STOP;
    /* Seq_cst: pairs with the worker's pstate swap and its read of
     * mon_state (see the rules). */
    if (any_awake(m)) {
        uintptr_t d = MON_DORMANT;
        fut__cas(&m->mon_state, &d, MON_RUN, FUT__SEQ_CST, FUT__SEQ_CST);
        return d != MON_STOP;
    }
    while (fut__load(&m->mon_state, FUT__ACQUIRE) == MON_DORMANT)
        fut__sys_futex_wait(futex_word(&m->mon_state), MON_DORMANT, -1);
    return fut__load(&m->mon_state, FUT__ACQUIRE) != MON_STOP;
}

/* One tick's look at the driver: nobody began a park or a poll since
 * 'last' while a worker is awake, so nobody waits in epoll. */
static void check_driver(struct mt_sched *m, uintptr_t *last)
{
    struct fut__driver *d = m->base.driver;
    uintptr_t turns = fut__load(&d->turns, FUT__RELAXED);
    int starved = turns == *last &&
                  fut__load(&m->driver_lock, FUT__RELAXED) == 0 &&
                  !fut__load(&d->undriven, FUT__RELAXED);
    *last = turns;
    if (starved) {
        fut__store(&m->mon_wakes, fut__load(&m->mon_wakes, FUT__RELAXED) + 1,
                   FUT__RELAXED);
        notify_parked(m);
    }
}

/* Per-worker driver: a worker awake inside one poll that has not moved
 * since the last tick is stuck, and its event source is served only from
 * a peer's park, which the driver does in a peer's own waits - but a
 * peer that went to sleep while every source was served sleeps without
 * a bound. Such a tick wakes a sleeper (notify_parked): awake, it parks
 * on its own source again, and the driver serves the stuck one from
 * there (its rules say how soon: docs/scheduler.md, "The monitor"). */
static void check_stuck(struct mt_sched *m)
{
    int stuck = 0, asleep = 0;
    for (int i = 0; i < m->n; i++) {
        struct mt_worker *w = &m->w[i];
        uintptr_t p = fut__load(&w->pstate, FUT__RELAXED);
        /* Relaxed: hints (a wrong guess costs a wake, or a tick). */
        uintptr_t polls = fut__load(&w->st[ST_POLLS], FUT__RELAXED);
        uintptr_t done = fut__load(&w->st[ST_POLLS_DONE], FUT__RELAXED);
        if (p == P_EMPTY && polls == w->mon_polls && polls != done)
            stuck = 1;
        else if (p == P_DRIVER || p == P_FUTEX)
            asleep = 1;
        w->mon_polls = polls;
    }
    if (stuck && asleep) {
        fut__store(&m->mon_wakes, fut__load(&m->mon_wakes, FUT__RELAXED) + 1,
                   FUT__RELAXED);
        notify_parked(m);
    }
}

static void *monitor_main(void *arg)
{
    struct mt_sched *m = arg;
    uintptr_t last = fut__load(&m->base.driver->turns, FUT__RELAXED);
    int asleep = 0;
    while (fut__load(&m->mon_state, FUT__ACQUIRE) != MON_STOP) {
        /* A timed wait on mon_state: shutdown's wake ends it at once. */
        fut__sys_futex_wait(futex_word(&m->mon_state), MON_RUN, MON_TICK_NS);
        if (!any_awake(m)) {
            if (++asleep >= MON_IDLE_TICKS) {
                asleep = 0;
                if (!go_dormant(m))
                    break;
                last = fut__load(&m->base.driver->turns, FUT__RELAXED);
            }
            continue;
        }
        asleep = 0;
        check_driver(m, &last);
        if (m->base.driver->per_worker)
            check_stuck(m);
        if (m->base.watch) /* the long-poll watchdog's scan (hosted) */
            fut__watch_hosted_scan(m->base.watch);
    }
    return NULL;
}

int fut__mt_mon_wanted(const struct mt_sched *m)
{
    return m->base.driver && m->n >= 2;
}

int fut__mt_mon_start(struct mt_sched *m)
{
    if (!fut__mt_mon_wanted(m))
        return 0;
    fut__store(&m->mon_state, MON_RUN, FUT__RELAXED);
    int r = pthread_create(&m->mon_thread, NULL, monitor_main, m);
    if (r)
        return r == ENOMEM || r == EAGAIN ? FUT_ENOMEM : -r;
    m->mon_started = 1;
    pthread_setname_np(m->mon_thread, "fut-monitor");
    return 0;
}

void fut__mt_mon_stop(struct mt_sched *m)
{
    if (!m->mon_started)
        return;
    /* Release: pairs with the monitor's acquire loads. */
    fut__swap(&m->mon_state, MON_STOP, FUT__SEQ_CST);
    fut__sys_futex_wake(futex_word(&m->mon_state), 1);
    pthread_join(m->mon_thread, NULL);
    m->mon_started = 0;
}
