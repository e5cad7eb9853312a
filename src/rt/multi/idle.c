/* SPDX-License-Identifier: MIT */
/* The idle protocol (multi.h's "Idle protocol" rules, Tokio's idle.rs):
 * the count of unparked and searching workers in 'idle', the sleepers
 * under 'sleep_lock', who is woken for new work (notify_parked, idle.h)
 * or for a task from another thread (handoff), and the watcher of the
 * LIFO slots (multi.h's LIFO rules). */
#include "rt/multi/idle.h"

/* The watcher's timed park: from WATCH_MIN_NS, doubled up to WATCH_MAX_NS
 * while its looks find nothing. */
#define WATCH_MIN_NS (1000 * 1000)
#define WATCH_MAX_NS (8 * 1000 * 1000)

/* Pops a sleeper, preferring one on a futex (one FUTEX_WAKE) or in its
 * park spin (no syscall) to the one in the driver (an eventfd write and an
 * epoll return), and any of them to one that runs tasks its own park woke
 * ('in_run', worker.c run_parked): that worker stays in 'sleepers' while
 * it runs them, and popping it wakes nobody - worse, it is then counted
 * as searching until that poll returns, so every notify_parked meanwhile
 * (the monitor's too) wakes nobody: a task spinning in that poll stalled
 * the driver (rt_multi_stall.timers, 98 ms late once in TSan-release).
 * Relaxed loads: hints (a wrong pick costs a wake, as before). sleep_lock. */
static struct mt_worker *pop_sleeper(struct mt_sched *m)
{
    int pick = -1, rank = -1;
    for (int i = m->nsleepers - 1; i >= 0 && rank < 2; i--) {
        struct mt_worker *v = &m->w[m->sleepers[i]];
        int r = fut__load(&v->in_run, FUT__RELAXED)               ? 0
                : fut__load(&v->pstate, FUT__RELAXED) == P_DRIVER ? 1
                                                                  : 2;
        if (r > rank) {
            rank = r;
            pick = i;
        }
    }
    struct mt_worker *v = &m->w[m->sleepers[pick]];
    m->sleepers[pick] = m->sleepers[--m->nsleepers];
    return v;
}

/* notify_parked's slow half (idle.h): somebody may have to be woken. */
void fut__mt_notify_slow(struct mt_sched *m)
{
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
int fut__mt_handoff(struct mt_sched *m, struct fut_task *t)
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

int fut__mt_to_searching(struct mt_worker *w)
{
    struct mt_sched *m = w->m;
    uintptr_t s = fut__load(&m->idle, FUT__SEQ_CST);
    if (2 * (s & SEARCH_MASK) >= (uintptr_t)m->n)
        return 0; /* half the workers search already */
    fut__fetch_add(&m->idle, 1, FUT__SEQ_CST);
    w->searching = 1;
    return 1;
}

void fut__mt_from_searching(struct mt_worker *w)
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
int fut__mt_to_parked(struct mt_worker *w)
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
void fut__mt_unpark_self(struct mt_worker *w)
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

void fut__mt_claim_watch(struct mt_worker *w)
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

void fut__mt_release_watch(struct mt_worker *w)
{
    if (!w->watching)
        return;
    uintptr_t me = (uintptr_t)w->index + 1;
    fut__cas(&w->m->watcher, &me, 0, FUT__SEQ_CST, FUT__RELAXED);
    w->watching = 0;
}

/* A timed park of the watcher found nothing: back off, or give the role
 * up when every other worker sleeps (then re-read: see the rules). */
void fut__mt_watch_idle(struct mt_worker *w)
{
    struct mt_sched *m = w->m;
    if ((fut__load(&m->idle, FUT__SEQ_CST) >> 16) == 0) {
        fut__mt_release_watch(w);
        if ((fut__load(&m->idle, FUT__SEQ_CST) >> 16) != 0)
            fut__mt_claim_watch(w);
        return;
    }
    if (w->watch_ns < WATCH_MAX_NS)
        w->watch_ns *= 2;
}
