/* SPDX-License-Identifier: MIT */
/* Models of the task state word (src/rt/task.c; contracts C10 and C11)
 * driven the way the multi-thread scheduler drives it, run by the model
 * checker in SC and x86-TSO.
 *
 *   model_task [--expect KIND] [--mem sc|tso] [MODEL...]
 *
 * Same driver conventions as model_cell.c. The body thread is the
 * worker: it pops tasks from the model scheduler's queue and runs them
 * with fut__task_poll, parking (mc_park) when the queue is empty until a
 * schedule() or the task's completion unparks it. Other model threads
 * wake (through waker clones the future handed out), abort (through the
 * join handle) or drop the join handle. Tasks are mc_alloc'd, so a
 * leaked task (a reference never dropped) is a leak, a double free is a
 * double free, a use after the last reference is a use after free; a
 * lost wake leaves the worker parked with nobody to unpark it: a
 * deadlock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc.h"
#include "rt/rt_internal.h"

#define L __FILE__, __LINE__

void fut__assert_fail(const char *expr, const char *file, int line)
{
    mc__assert(0, expr, "library assertion", file, line);
    abort();
}

/* ------------------------------------------------ the model scheduler */

/* One task, so the run queue is one slot: queueing a task that is
 * queued already is a failure. The counters are atomics because any
 * thread may schedule, complete or free (they are oracles, not part of
 * the protocol under test: relaxed, read after the joins). */
struct msched {
    struct fut__sched base;
    fut__aword q;         /* the queued task, or 0 */
    fut__aword scheduled; /* schedule() calls */
    fut__aword completed; /* unlink() calls: completions */
    fut__aword freed;
    int drop_here; /* what drop_here answers */
    int worker;    /* tid of the worker (the body) */
};

static struct msched ms;

static void m_schedule(struct fut__sched *s, struct fut_task *t)
{
    (void)s;
    /* Release: the task's state before the worker's acquire swap (what a
     * real run queue's lock would give). */
    uintptr_t prev = fut__swap(&ms.q, (uintptr_t)t, FUT__ACQ_REL);
    mc_assert(prev == 0, "queued while queued");
    fut__fetch_add(&ms.scheduled, 1, FUT__RELAXED);
    mc_unpark(ms.worker);
}

static void m_unlink(struct fut__sched *s, struct fut_task *t)
{
    (void)s;
    (void)t;
    fut__fetch_add(&ms.completed, 1, FUT__RELEASE); /* pairs: worker */
    mc_unpark(ms.worker);
}

static void m_free(struct fut__sched *s, struct fut_task *t)
{
    (void)s;
    fut__fetch_add(&ms.freed, 1, FUT__RELAXED);
    mc_free(t, L);
}

static int m_drop_here(struct fut__sched *s, struct fut_task *t)
{
    (void)s;
    (void)t;
    return ms.drop_here;
}

static const struct fut__sched_vt m_vt = {.schedule = m_schedule,
                                          .unlink = m_unlink,
                                          .free_task = m_free,
                                          .drop_here = m_drop_here};

/* ----------------------------------------------------- the future */

/* READY at its 'need'-th poll; every PENDING poll hands a clone of its
 * waker to 'out' (published with release: the waking thread's acquire
 * load pairs with it). Checks C10 (no two polls at once) and C11 (no
 * poll after the drop, one drop). */
struct mfut {
    struct fut_future base;
    int need;
};

static int polls, drops, in_poll;
static struct fut_waker handed;
static fut__aword handed_flag; /* 1: 'handed' holds a waker for the waker */
static int clone_on_ready;     /* hand a waker out on the READY poll too */
static int self_wake;          /* the first poll also wakes itself */
static int spawn_waker;        /* the first hand-out starts the waker */
static int waker_tid = -1;

static void waker_thread(void *arg);

static void hand_out(struct fut_context *cx)
{
    if (fut__load(&handed_flag, FUT__RELAXED))
        return; /* the previous one was not taken yet */
    mc_plain_write(&handed, sizeof handed, L);
    handed = fut_waker_clone(&cx->waker);
    fut__store(&handed_flag, 1, FUT__RELEASE);
    if (spawn_waker && waker_tid < 0)
        waker_tid = mc_spawn(waker_thread, 0); /* no spinning for it */
}

static int mfut_poll(struct fut_future *f, struct fut_context *cx)
{
    struct mfut *m = (struct mfut *)f;
    mc_assert(!drops, "polled after its drop");
    mc_assert(!in_poll, "polled by two threads at once");
    in_poll = 1;
    int r = ++polls >= m->need ? FUT_READY : FUT_PENDING;
    if (r == FUT_PENDING || clone_on_ready)
        hand_out(cx);
    if (r == FUT_PENDING && self_wake && polls == 1)
        fut_waker_wake_by_ref(&cx->waker); /* a yield: no RMW (task.c) */
    in_poll = 0;
    return r;
}

static void mfut_drop(struct fut_future *f)
{
    (void)f;
    mc_assert(!in_poll, "dropped during a poll");
    drops++;
}

static const struct fut_future_vtable mfut_vt = {mfut_poll, mfut_drop, "mfut",
                                                 NULL};

static struct fut_task *task;
static struct fut_join join;

static void setup(int need, int joined, int drop_here)
{
    memset(&ms, 0, sizeof ms);
    ms.base.vt = &m_vt;
    ms.base.slow_poll_ns = -1;
    ms.drop_here = drop_here;
    ms.worker = mc_self();
    mc_init(&ms.q, 0);
    mc_init(&ms.scheduled, 0);
    mc_init(&ms.completed, 0);
    mc_init(&ms.freed, 0);
    polls = drops = in_poll = 0;
    clone_on_ready = 0;
    self_wake = 0;
    spawn_waker = 0;
    waker_tid = -1;
    handed.vt = NULL;
    handed.data = NULL;
    mc_init(&handed_flag, 0);
    task = mc_alloc(FUT__TASK_HDR + sizeof(struct mfut), L);
    mc_label(task, FUT__TASK_HDR, "task");
    struct mfut *f = (struct mfut *)fut__task_future(task);
    fut_future_init(&f->base, &mfut_vt);
    f->need = need;
    fut__task_init(task, &ms.base, joined, L);
    task->flags = 0;
    task->size_class = 0;
    if (joined)
        fut__join_init(&join, task);
    /* The spawn queues it (it is born RUNNING|NOTIFIED). */
    mc_init(&ms.q, (uintptr_t)task);
}

/* The worker: runs the task until it completed (here or elsewhere).
 * Returns the number of re-queues through RESCHEDULE (run again at
 * once: the worker's own queue). */
static int worker_run(void)
{
    int resched = 0;
    for (;;) {
        /* Acquire: pairs with m_schedule's release. */
        struct fut_task *t =
            (struct fut_task *)fut__swap(&ms.q, 0, FUT__ACQ_REL);
        if (!t) {
            if (fut__load(&ms.completed, FUT__ACQUIRE))
                return resched;
            mc_park(); /* a schedule or the completion unparks us */
            continue;
        }
        int budget = -1;
        while (fut__task_poll(t, &budget) == FUT__RUN_RESCHEDULE)
            resched++;
    }
}

/* Takes the waker the future handed out, if there is one. */
static int take_handed(struct fut_waker *w)
{
    /* Load first: a spinning swap would be a write every turn, and a
     * spin must only read to let mc_yield put it to sleep. Acquire:
     * pairs with hand_out's release store. */
    if (!fut__load(&handed_flag, FUT__RELAXED) ||
        !fut__swap(&handed_flag, 0, FUT__ACQUIRE))
        return 0;
    mc_plain_read(&handed, sizeof handed, L);
    *w = handed;
    return 1;
}

/* Wakes through the waker the future handed out (waits for it). */
static void waker_thread(void *arg)
{
    (void)arg;
    struct fut_waker w;
    while (!take_handed(&w))
        mc_yield(L);
    fut_waker_wake(&w);
}

/* A waker left with nobody to take it is dropped at the end. */
static void drop_handed(void)
{
    struct fut_waker w;
    if (take_handed(&w))
        fut_waker_drop(&w);
}

static void noop_fn(const void *d)
{
    (void)d;
}

static struct fut_waker noop_clone(const void *d);
static const struct fut_waker_vtable noop_vt = {noop_clone, noop_fn, noop_fn,
                                                noop_fn};
static struct fut_waker noop_clone(const void *d)
{
    return (struct fut_waker){d, &noop_vt};
}

/* (1) wake || run-to-idle: the wake lands during the first poll, between
 * the poll and the idle CAS, or after it; in every case the task runs
 * exactly twice and is re-queued exactly once (by NOTIFIED or by the
 * waker's schedule) - no lost wake (a lost one parks the worker for
 * ever: deadlock), no double queueing. */
static void m_wake_run(void)
{
    setup(2, 0, 1);
    spawn_waker = 1;
    int resched = worker_run();
    mc_join(waker_tid);
    mc_assert(polls == 2, "not polled exactly twice");
    mc_assert(resched + (int)fut__load(&ms.scheduled, FUT__RELAXED) == 1,
              "not re-queued exactly once");
    mc_assert(drops == 1, "not dropped exactly once");
    mc_assert(fut__load(&ms.freed, FUT__RELAXED) == 1, "not freed");
}

/* (1b) a self-wake (recorded thread-locally, no RMW) || a wake from
 * another thread: either way the task is re-queued exactly once and runs
 * exactly twice - the two wakes merge, neither is lost. */
static void m_selfwake_wake(void)
{
    setup(2, 0, 1);
    self_wake = 1;
    spawn_waker = 1;
    int resched = worker_run();
    mc_join(waker_tid);
    mc_assert(polls == 2, "not polled exactly twice");
    mc_assert(resched + (int)fut__load(&ms.scheduled, FUT__RELAXED) == 1,
              "not re-queued exactly once");
    mc_assert(drops == 1, "not dropped exactly once");
    mc_assert(fut__load(&ms.freed, FUT__RELAXED) == 1, "not freed");
}

/* (2) wake || complete: the waker the READY poll handed out wakes while
 * the task completes: it is never queued again, never polled again, and
 * the waker's reference is the last one or not - freed exactly once. */
static void m_wake_complete(void)
{
    setup(1, 0, 1);
    clone_on_ready = 1;
    spawn_waker = 1;
    int resched = worker_run();
    mc_join(waker_tid);
    mc_assert(polls == 1, "polled after completing");
    mc_assert(resched == 0 && fut__load(&ms.scheduled, FUT__RELAXED) == 0,
              "queued after completing");
    mc_assert(drops == 1 && fut__load(&ms.freed, FUT__RELAXED) == 1,
              "not dropped and freed once");
}

/* (3) abort || run (with a wake first, when the first poll handed the
 * waker out already, so completion races the abort too): the future is
 * dropped exactly once and never polled after; when the abort finds it
 * idle it is dropped by the aborter (drop_here) or by the worker when it
 * pops it; when it finds it running, right after that poll - unless that
 * poll completed it (READY wins, result 0). */
static void aborter_thread(void *arg)
{
    (void)arg;
    struct fut_waker w;
    if (take_handed(&w))
        fut_waker_wake(&w); /* lets the second poll race the abort */
    fut_join_abort(&join);
}

static void abort_run(int drop_here)
{
    setup(2, 1, drop_here);
    int th = mc_spawn(aborter_thread, 0);
    worker_run();
    mc_join(th);
    drop_handed();
    mc_assert(drops == 1, "not dropped exactly once");
    mc_assert(polls <= 2, "polled too often");
    struct fut_context cx;
    fut_context_init(&cx, (struct fut_waker){0, &noop_vt});
    mc_assert(fut_poll(&join.base, &cx) == FUT_READY, "join not ready");
    mc_assert(join.result == (polls == 2 ? 0 : FUT_ECANCELED),
              "the join result disagrees with what ran");
    fut_drop(&join.base);
    mc_assert(fut__load(&ms.freed, FUT__RELAXED) == 1, "not freed");
}

static void m_abort_run(void)
{
    abort_run(1);
}

static void m_abort_run_queued(void)
{
    abort_run(0);
}

/* (4) join-drop || complete: a registered join handle is dropped on
 * another thread while the task completes: the join waker is dropped or
 * woken exactly once (a test waker with a count), the task freed exactly
 * once. */
struct jw {
    int refs;
    int wakes;
};
static struct jw *jwk;
static const struct fut_waker_vtable jw_vt;

static struct fut_waker jw_clone(const void *d)
{
    mc_assert(mc_block_live(d), "join waker used after its last drop");
    ((struct jw *)d)->refs++;
    return (struct fut_waker){d, &jw_vt};
}

static void jw_release(struct jw *j)
{
    mc_assert(j->refs > 0, "join waker dropped too often");
    if (--j->refs == 0)
        mc_free(j, L);
}

static void jw_wake(const void *d)
{
    ((struct jw *)d)->wakes++;
    jw_release((struct jw *)d);
}

static void jw_wake_by_ref(const void *d)
{
    ((struct jw *)d)->wakes++;
}

static void jw_drop(const void *d)
{
    jw_release((struct jw *)d);
}

static const struct fut_waker_vtable jw_vt = {jw_clone, jw_wake,
                                              jw_wake_by_ref, jw_drop};

static void join_dropper(void *arg)
{
    (void)arg;
    fut_drop(&join.base);
}

static void m_joindrop_complete(void)
{
    setup(1, 1, 1);
    jwk = mc_alloc(sizeof *jwk, L);
    jwk->refs = 1;
    jwk->wakes = 0;
    struct fut_context cx;
    fut_context_init(&cx, (struct fut_waker){jwk, &jw_vt});
    mc_assert(fut_poll(&join.base, &cx) == FUT_PENDING, "not done yet");
    int th = mc_spawn(join_dropper, 0);
    worker_run();
    mc_join(th);
    mc_assert(drops == 1 && polls <= 1, "not dropped exactly once");
    mc_assert(jwk->refs == 1, "the join waker's clone leaked");
    mc_assert(fut__load(&ms.freed, FUT__RELAXED) == 1, "not freed");
    jw_release(jwk);
}

/* ---------------------------------------------------------------- driver */

static const struct mc_model models[] = {
    {"wake_run", m_wake_run, -1},
    {"selfwake_wake", m_selfwake_wake, -1},
    {"wake_complete", m_wake_complete, -1},
    {"abort_run", m_abort_run, -1},
    {"abort_run_queued", m_abort_run_queued, -1},
    {"joindrop_complete", m_joindrop_complete, -1},
};

int main(int argc, char **argv)
{
    return mc_model_main("model_task", models,
                         sizeof models / sizeof models[0], argc, argv);
}
