/* SPDX-License-Identifier: MIT */
/* A worker's parker (multi.h's "Parker" rules): the park spin, then a
 * sleep on the worker's futex or in the driver. The unparker's half,
 * unpark_worker, is inline in multi.h (every room wakes workers). */
#include <time.h>

#include "rt/multi/multi.h"

/* A worker back from a sleep, its pstate swapped to P_EMPTY (seq_cst):
 * a dormant monitor is woken (monitor.c's rules). */
static void mon_kick(struct mt_sched *m)
{
    /* Seq_cst: pairs with the monitor's store of MON_DORMANT and its
     * re-read of the pstates. */
    if (fut__load(&m->mon_state, FUT__SEQ_CST) != MON_DORMANT)
        return;
    uintptr_t d = MON_DORMANT;
    if (fut__cas(&m->mon_state, &d, MON_RUN, FUT__SEQ_CST, FUT__RELAXED))
        fut__sys_futex_wake(futex_word(&m->mon_state), 1);
}

/* Park spin (docs/scheduler.md): before it sleeps, a worker watches its
 * parker for up to its spin bound; an unparker that finds it EMPTY
 * meanwhile leaves the permit without a syscall, and the worker takes it
 * without sleeping. When it spins and for how long: park_spin.h. The
 * permit's orderings are fut__mt_park's. */
#define SPIN_CHECKS 8 /* permit checks between clock reads */

/* Returns 1 when a permit arrived before 'end' (fut_now_ns), 2 when
 * the worker's own event source ('rd': a per-worker driver, else NULL)
 * has something for it (the driver's 'ready'), 0 at 'end'. */
static int park_spin(struct mt_worker *w, int64_t end, struct fut__driver *rd)
{
    stat_inc(w, ST_SPINS);
    for (;;) {
        for (int i = 0; i < SPIN_CHECKS; i++) {
            /* Relaxed: the acquire swap that takes the permit follows. */
            if (fut__load(&w->pstate, FUT__RELAXED) == P_NOTIFIED)
                return 1;
            fut__cpu_relax();
        }
        if (rd && rd->vt->ready(rd, w->index))
            return 2;
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

/* The spin before a sleep, from 't0': 1 when it took a permit (the park
 * is over), 2 when the worker's event source ('rd', or NULL) has work,
 * 0 to sleep. */
static int spin_first(struct mt_worker *w, int64_t t0, int spun,
                      struct fut__driver *rd)
{
    int got = spun ? park_spin(w, t0 + w->spin.bound, rd) : 0;
    if (got == 1) {
        /* Acquire: pairs with the unparker's release swap. */
        fut__swap(&w->pstate, P_EMPTY, FUT__ACQUIRE);
        stat_inc(w, ST_SPIN_HITS);
        fut__spin_hit(&w->spin);
    }
    return got;
}

/* A per-worker driver (fut__driver.per_worker): a worker always sleeps
 * on its own event source, where its fds' I/O completes; the one that
 * gets the driver's trylock also drives timers. The park spin comes
 * first, as before a futex sleep, and also ends when the source has
 * something (the driver's 'ready': what waits there does not wait for
 * the spin). The permit's orderings are fut__mt_park's. */
static void park_own(struct mt_worker *w, struct fut__driver *d,
                     int64_t timeout_ns, int use_driver)
{
    struct mt_sched *m = w->m;
    int learn = m->spin_ns >= 0;
    int64_t t0 = 0;
    int spun = 0;
    if (learn) {
        t0 = fut_now_ns();
        spun = w->spin.credit > 0;
        int got = spin_first(w, t0, spun, d);
        if (got == 1)
            return;
        if (got == 2) {
            learn = 0; /* no sleep to learn from: the source had work */
            timeout_ns = 0;
        }
    }
    int drive = use_driver && driver_trylock(m);
    uintptr_t e = P_EMPTY;
    if (!fut__cas(&w->pstate, &e, P_DRIVER, FUT__ACQ_REL, FUT__ACQUIRE)) {
        /* Notified in between: consume the permit. */
        fut__store(&w->pstate, P_EMPTY, FUT__RELAXED);
        if (drive)
            driver_unlock(m);
        if (learn)
            fut__spin_hit(&w->spin); /* as good as a hit */
        return;
    }
    stat_inc(w, ST_PARKS);
    w->in_driver = 1;
    d->vt->park(d, w->index, timeout_ns, drive);
    w->in_driver = 0;
    if (drive)
        driver_unlock(m);
    /* Acquire: pairs with unpark; seq_cst and the kick: as in
     * fut__mt_park. */
    fut__swap(&w->pstate, P_EMPTY, FUT__SEQ_CST);
    mon_kick(m);
    if (learn)
        spin_learn(w, t0, spun);
}

/* Sleeps until unparked or 'timeout_ns' (-1: none) passed; in the driver
 * when 'use_driver' and nobody else holds it (the driver then dispatches
 * I/O and timers, waking tasks into this worker's ring). */
void fut__mt_park(struct mt_worker *w, int64_t timeout_ns, int use_driver)
{
    struct mt_sched *m = w->m;
    /* Acquire: pairs with the unparker's release swap. */
    if (fut__swap(&w->pstate, P_EMPTY, FUT__ACQUIRE) == P_NOTIFIED)
        return;
    struct fut__driver *d = m->base.driver;
    if (d && d->per_worker) {
        park_own(w, d, timeout_ns, use_driver);
        return;
    }
    /* A driver still 'undriven' has nothing to wait for: straight to the
     * futex, without the driver's two locks (lines both workers write:
     * xthread_wake paid them on every hop). Seq_cst: a registration
     * clears 'undriven', then (notify_parked) fences and reads 'idle';
     * we RMW'd 'idle' and fenced (park_worker) before reading it - one
     * of the two sees the other, so either we take the driver or the
     * registration wakes a sleeper to come and drive (Dekker). */
    int drv = use_driver && d && !fut__load(&d->undriven, FUT__SEQ_CST) &&
              driver_trylock(m);
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
        if (spin_first(w, t0, spun, NULL))
            return;
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
        d->vt->park(d, w->index, timeout_ns, 1);
        w->in_driver = 0;
        driver_unlock(m);
    } else {
        fut__sys_futex_wait(futex_word(&w->pstate), P_FUTEX, timeout_ns);
    }
    /* Acquire: pairs with unpark. Seq_cst, then the monitor's state: a
     * dormant monitor is woken (monitor.c's rules). */
    fut__swap(&w->pstate, P_EMPTY, FUT__SEQ_CST);
    mon_kick(m);
    if (learn)
        spin_learn(w, t0, spun);
}
