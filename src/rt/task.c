/* SPDX-License-Identifier: MIT */
/* The task: its state word, its waker, its join handle.
 *
 * Rules of the state word ('state'):
 *
 *   bit            meaning
 *   RUNNING        a scheduler owns the task: it is queued or being polled.
 *                  Whoever sets it (spawn, a wake or an abort that found
 *                  the task idle) must queue or run it; nobody else may.
 *   NOTIFIED       woken since its last poll began; the owner polls again.
 *   COMPLETE       the future finished or was cancelled and was dropped;
 *                  'cancelled' says which. Final.
 *   CANCELLED      abort requested; the owner drops the future instead of
 *                  polling it.
 *   JOIN_INTEREST  a join handle exists.
 *   JOIN_WAKER     the join handle's waker is in 'join_waker'; ownership
 *                  follows the cell's rule: the completer owns it iff its
 *                  COMPLETE RMW saw JOIN_WAKER.
 *   REF_ONE..      reference count: one for the live-task list (dropped on
 *                  completion), one for the join handle, one per waker.
 *
 * Transitions (each one RMW on the common path):
 *   wake:     one CAS (task_notify). Saw RUNNING: set NOTIFIED, the owner
 *             will see it. Saw COMPLETE: change nothing. Else: set RUNNING
 *             alone - we own it, queue it. A wake by value drops the
 *             waker's reference in the same CAS (the live-list reference
 *             of a task that is not complete keeps it alive).
 *   run:      fetch_and(~NOTIFIED) by the owner that popped it, only when
 *             NOTIFIED is set (a wake while it ran or was queued): a task
 *             queued by spawn, by a wake of the idle task or by a
 *             self-wake starts with a plain load.
 *   idle:     CAS clearing RUNNING unless NOTIFIED/CANCELLED appeared
 *             (then the owner re-queues or cancels; no wake is lost).
 *   complete: fetch_xor(RUNNING|COMPLETE) by the owner, then unlink and
 *             drop the list's reference; a detached task (no
 *             JOIN_INTEREST) unlinks first and does both in one
 *             fetch_sub - or in no RMW at all when an acquire load finds
 *             the list's reference the only one (nobody else can reach
 *             the task, so nobody reads the word again): it frees it.
 *   abort:    a wake that also sets CANCELLED, and an
 *             idle task is dropped at once by the aborting thread when
 *             its scheduler allows it there (drop_here: the current-thread
 *             runtime's thread; any thread on the multi-thread runtime,
 *             except for a thread-affine task - TASK_F_LOCAL - whose
 *             worker alone may drop it); otherwise it is queued and its
 *             owner drops it instead of polling it.
 *   shutdown: fut__task_shutdown takes a task over whatever RUNNING says
 *             (the current-thread runtime has drained every queue);
 *             fut__task_shutdown_idle only an idle one, like an abort.
 * A queued task needs no reference of its own: it is not complete, so
 * the live-task list's reference keeps it alive (C10: never polled by two
 * threads - only the RUNNING setter queues it; a wake while it runs
 * re-queues it once, through NOTIFIED).
 * Every RMW above stays an RMW on the current-thread runtime too: a waker
 * may be woken or dropped on any thread, and such a wake reaches this
 * word directly (src/rt/sched_current.c's rules list them).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "rt_internal.h"
#include "watchdog.h"

enum {
    RUNNING = 1u << 0,
    NOTIFIED = 1u << 1,
    COMPLETE = 1u << 2,
    CANCELLED = 1u << 3,
    JOIN_INTEREST = 1u << 4,
    JOIN_WAKER = 1u << 5,
    REF_SHIFT = 6,
};
#define REF_ONE ((uintptr_t)1 << REF_SHIFT)
#define REF_MASK (~(REF_ONE - 1))

_Thread_local struct fut__sched *fut__tls_sched;

void fut__task_init(struct fut_task *t, struct fut__sched *s, int joined,
                    const char *file, int line)
{
    uintptr_t st = RUNNING | REF_ONE; /* queued: owned, nothing to clear */
    if (joined)
        st += JOIN_INTEREST + REF_ONE; /* a second reference: the handle */
    fut__aword_init(&t->state, st);
    t->next = NULL;
    fut__list_init(&t->owned);
    t->sched = s;
    t->join_waker.data = NULL;
    t->join_waker.vt = NULL;
    t->cancelled = 0;
#ifdef FUT_DEBUG
    t->spawn_file = file;
    t->spawn_line = line;
    fut__aword_init(&t->waker_refs, 0);
#else
    (void)file;
    (void)line;
#endif
}

static void task_ref_dec(struct fut_task *t)
{
    /* Release: our uses of the task happen before the free; acquire: the
     * freeing thread sees everyone else's. */
    uintptr_t prev = fut__fetch_sub(&t->state, REF_ONE, FUT__ACQ_REL);
    FUT_ASSERT((prev & REF_MASK) != 0);
    if ((prev & REF_MASK) == REF_ONE)
        t->sched->vt->free_task(t->sched, t);
}

void fut__task_ref_inc(struct fut_task *t)
{
    fut__fetch_add(&t->state, REF_ONE, FUT__RELAXED); /* caller holds one */
}

void fut__task_ref_dec(struct fut_task *t)
{
    task_ref_dec(t);
}

/* ---------------------------------------------------------- completion */

/* The owner (holding RUNNING) finished the task: publish COMPLETE, wake the
 * joiner, leave the live list. The future was dropped already. */
static void task_complete(struct fut_task *t, int cancelled)
{
    t->cancelled = (uint16_t)cancelled;
    if (!(fut__load(&t->state, FUT__RELAXED) & JOIN_INTEREST)) {
        /* Detached (no join handle, and none can appear): no joiner
         * reads the output or 'cancelled', no join waker exists. Leave
         * the live list while we still own the task (RUNNING: in no
         * queue, 'next' free), then publish COMPLETE and drop the list's
         * reference in one RMW: RUNNING is set and COMPLETE clear, so
         * subtracting RUNNING + REF_ONE - COMPLETE clears the one, sets
         * the other and takes one reference, without a carry into any
         * other bit. Release: our drop of the future before whoever
         * frees; acquire: their uses before our free. */
        t->sched->vt->unlink(t->sched, t);
#ifndef FUT_MC_BUG_UNIQUE_RELAXED
        /* Acquire: pairs with the release of every reference dropped
         * before (a waker's drop or wake), so their uses of the task
         * happen before our free. */
        uintptr_t s = fut__load(&t->state, FUT__ACQUIRE);
#else
        /* Seeded bug (test/mc): the count read without the acquire. */
        uintptr_t s = fut__load(&t->state, FUT__RELAXED);
#endif
        if ((s & REF_MASK) == REF_ONE) {
            /* The list's reference is the only one: no other thread can
             * reach the task (a new reference is cloned from an existing
             * one), so nobody reads COMPLETE - free it without an RMW. */
            t->sched->vt->free_task(t->sched, t);
            return;
        }
        uintptr_t prev = fut__fetch_sub(
            &t->state, RUNNING + REF_ONE - COMPLETE, FUT__ACQ_REL);
        FUT_ASSERT((prev & (RUNNING | COMPLETE)) == RUNNING);
        FUT_ASSERT((prev & REF_MASK) != 0);
        if ((prev & REF_MASK) == REF_ONE)
            t->sched->vt->free_task(t->sched, t);
        return;
    }
    /* Release: the output and 'cancelled' before COMPLETE (pairs with the
     * join handle's acquire). Acquire: the join waker's slot contents. */
    uintptr_t prev =
        fut__fetch_xor(&t->state, RUNNING | COMPLETE, FUT__ACQ_REL);
    FUT_ASSERT(prev & RUNNING);
    if ((prev & (JOIN_INTEREST | JOIN_WAKER)) ==
        (JOIN_INTEREST | JOIN_WAKER)) {
        /* Copy, never clear: the joiner may still be reading the slot
         * (will_wake) until its CAS fails on COMPLETE. */
        struct fut_waker w = t->join_waker;
        fut_waker_wake(&w);
    }
    t->sched->vt->unlink(t->sched, t);
    task_ref_dec(t); /* the live-list reference */
}

static void task_cancel_owned(struct fut_task *t)
{
    fut_drop(fut__task_future(t));
    task_complete(t, 1);
}

/* ------------------------------------------------------------------ wake */

/* The wake RMW, one CAS: a task that is running or queued (RUNNING) gets
 * NOTIFIED - its owner polls it again; an idle one gets RUNNING alone -
 * the caller now owns it and must queue (or cancel) it, and its first
 * poll finds no NOTIFIED to clear (no second RMW); a complete one is left
 * as it is. 'bits' (CANCELLED, for an abort) go with either. 'drop' is
 * REF_ONE when the caller's reference goes with the wake (a wake by
 * value), else 0: a task that is not complete still holds the live-list
 * reference, so dropping ours in the same RMW cannot free it; a complete
 * one has ours dropped by task_ref_dec (which may free it). Returns 1
 * when the caller now owns an idle task. */
static int task_notify(struct fut_task *t, uintptr_t bits, uintptr_t drop)
{
    uintptr_t s = fut__load(&t->state, FUT__RELAXED);
    for (;;) {
        if (s & COMPLETE) {
            /* Wakes after the end are harmless (C9). */
            if (drop)
                task_ref_dec(t);
            return 0;
        }
        FUT_ASSERT(!drop || (s & REF_MASK) >= 2 * REF_ONE);
#ifdef FUT_MC_BUG_WAKE_NO_NOTIFY
        /* Seeded bug (test/mc): a wake that finds the task running leaves
         * it alone instead of marking it NOTIFIED - the wake is lost. */
        uintptr_t n = (s & RUNNING) ? s : (s | bits | RUNNING);
#else
        uintptr_t n = s | bits | ((s & RUNNING) ? NOTIFIED : RUNNING);
#endif
        /* Release: what the waker wrote before waking is visible to the
         * poll it causes (through the queue hand-off), and our uses of
         * the task come before a free by whoever drops the last
         * reference; acquire: a task we now own is seen whole. */
        if (fut__cas(&t->state, &s, n - drop, FUT__ACQ_REL, FUT__RELAXED))
            return !(s & RUNNING);
    }
}

/* The task this thread is polling, and whether it woke itself during
 * that poll: a self-wake (yield_now, a budget yield) is recorded here
 * without touching the state word, and the poll's end re-queues the task
 * as if NOTIFIED were set. Only the polling thread reads or writes these,
 * and only it can see its own task here, so no wake is lost: a wake from
 * any other thread goes through the state word. */
static _Thread_local struct fut_task *polling;
static _Thread_local int self_woken;

static void task_wake_by_ref(const void *data)
{
    struct fut_task *t = (struct fut_task *)data;
    if (t == polling) {
        self_woken = 1;
        return;
    }
    if (task_notify(t, 0, 0))
        t->sched->vt->schedule(t->sched, t);
}

static void task_waker_drop(const void *data)
{
    struct fut_task *t = (struct fut_task *)data;
#ifdef FUT_DEBUG
    fut__fetch_sub(&t->waker_refs, 1, FUT__RELEASE); /* pairs: C7 check */
#endif
    task_ref_dec(t);
}

/* A wake by value: the wake and the drop of the waker's reference are
 * one RMW (task_notify). Debug builds keep them apart: the C7 check's
 * waker count must fall only after the wake is visible, and once our
 * reference is dropped the task may be gone. */
static void task_wake(const void *data)
{
#ifdef FUT_DEBUG
    task_wake_by_ref(data);
    task_waker_drop(data);
#else
    struct fut_task *t = (struct fut_task *)data;
    if (t == polling) {
        self_woken = 1;
        task_ref_dec(t); /* ours; the running task holds the list's */
        return;
    }
    if (task_notify(t, 0, REF_ONE))
        t->sched->vt->schedule(t->sched, t);
#endif
}

static struct fut_waker task_waker_clone(const void *data)
{
    struct fut_task *t = (struct fut_task *)data;
    fut__fetch_add(&t->state, REF_ONE, FUT__RELAXED); /* caller holds one */
#ifdef FUT_DEBUG
    fut__fetch_add(&t->waker_refs, 1, FUT__RELAXED);
#endif
    struct fut_waker w = {t, &fut__task_waker_vt};
    return w;
}

const struct fut_waker_vtable fut__task_waker_vt = {
    task_waker_clone, task_wake, task_wake_by_ref, task_waker_drop};

/* ------------------------------------------------------------------- run */

#ifdef FUT_DEBUG
/* C7: PENDING with no waker alive and no wake pending: it never runs
 * again. Waker count first: once it is 0 nobody can set NOTIFIED later. */
static void check_wakeable(struct fut_task *t)
{
    uintptr_t refs = fut__load(&t->waker_refs, FUT__ACQUIRE);
    uintptr_t s = fut__load(&t->state, FUT__ACQUIRE);
    if (refs == 0 && !self_woken && !(s & (NOTIFIED | CANCELLED))) {
        struct fut__task_label l;
        fut__task_label(t, &l);
        fut__report("never-woken",
                    "task '%s' (spawned at %s:%d) returned PENDING but "
                    "nothing holds its waker: it can never be woken",
                    l.name, l.file, l.line);
    }
}

/* The task's label taken before its poll: a fiber that returns in the
 * poll takes its name with it, so a user name is copied into 'buf'. */
static void label_before(struct fut_task *t, struct fut__task_label *l,
                         char *buf, size_t len)
{
    fut__task_label(t, l);
    if (l->user) {
        snprintf(buf, len, "%s", l->name);
        l->name = buf;
    }
}

static void check_slow(const struct fut__task_label *l, int64_t t0,
                       int64_t limit)
{
    int64_t d = fut_now_ns() - t0;
    if (limit >= 0 && d > limit)
        fut__report("slow-poll",
                    "task '%s' (spawned at %s:%d) was polled for %" PRId64
                    " us (limit %" PRId64 " us): a poll must not block",
                    l->name, l->file, l->line, d / 1000, limit / 1000);
}
#endif

/* The watchdog's poll hooks (watchdog.c); the model checker (test/mc)
 * models the state word alone, without them. */
#ifndef FUT_MODEL_CHECK
static inline struct fut__watch_slot *watch_slot(void)
{
    return fut__tls_watch_slot;
}

static inline void watch_begin(struct fut__watch_slot *ws, struct fut_task *t,
                               const struct fut__task_label *l, int64_t t0)
{
    if (ws)
        fut__watch_begin(ws, t, l, t0);
}

static inline void watch_end(struct fut__watch_slot *ws)
{
    if (ws)
        fut__watch_end(ws);
}
#else
static inline struct fut__watch_slot *watch_slot(void)
{
    return NULL;
}

static inline void watch_begin(struct fut__watch_slot *ws, struct fut_task *t,
                               const struct fut__task_label *l, int64_t t0)
{
    (void)ws;
    (void)t;
    (void)l;
    (void)t0;
}

static inline void watch_end(struct fut__watch_slot *ws)
{
    (void)ws;
}
#endif

enum fut__run_result fut__task_run(struct fut_task *t, int budget,
                                   int *budget_spent)
{
    int left = budget;
    enum fut__run_result r = fut__task_poll(t, &left);
    if (r != FUT__RUN_DONE)
        *budget_spent = left == 0;
    return r;
}

enum fut__run_result fut__task_poll(struct fut_task *t, int *budget)
{
    /* Acquire: pairs with the release of the wake that queued us. A task
     * queued by spawn or a self-wake has no NOTIFIED to clear: no RMW. */
    uintptr_t s = fut__load(&t->state, FUT__ACQUIRE);
    if (s & NOTIFIED)
        s = fut__fetch_and(&t->state, ~(uintptr_t)NOTIFIED, FUT__ACQUIRE);
    FUT_ASSERT((s & (RUNNING | COMPLETE)) == RUNNING);
    if (s & CANCELLED) {
        task_cancel_owned(t);
        return FUT__RUN_DONE;
    }
    struct fut_future *f = fut__task_future(t);
    struct fut_context cx;
    cx.waker.data = t;
    cx.waker.vt = &fut__task_waker_vt;
    cx.budget = *budget;
    cx.task = t;
    struct fut_task *outer = polling;
    polling = t;
    self_woken = 0;
    /* The watchdog's slot (watchdog.c): NULL when none runs; a nested
     * poll (a drop inside a poll) leaves the outer poll's entry. */
    struct fut__watch_slot *ws = outer ? NULL : watch_slot();
#ifdef FUT_DEBUG
    struct fut__task_label l;
    char name[64];
    label_before(t, &l, name, sizeof name);
    int64_t t0 = fut_now_ns();
    watch_begin(ws, t, &l, t0);
    int r = fut_poll(f, &cx);
    watch_end(ws);
    check_slow(&l, t0, t->sched->slow_poll_ns);
#else
    watch_begin(ws, t, NULL, 0);
    int r = fut_poll(f, &cx);
    watch_end(ws);
#endif
    polling = outer;
    *budget = cx.budget;
    if (r == FUT_READY) {
        fut_drop(f);
        task_complete(t, 0);
        return FUT__RUN_DONE;
    }
#ifdef FUT_DEBUG
    check_wakeable(t);
#endif
    s = fut__load(&t->state, FUT__RELAXED);
    for (;;) {
        if (s & CANCELLED) {
            task_cancel_owned(t);
            return FUT__RUN_DONE;
        }
        if ((s & NOTIFIED) || self_woken)
            return FUT__RUN_RESCHEDULE; /* still RUNNING: owner re-queues */
        /* Release: our writes to the future before the next owner's
         * acquire (its wake RMW). */
        if (fut__cas(&t->state, &s, s & ~(uintptr_t)RUNNING, FUT__RELEASE,
                     FUT__RELAXED))
            return FUT__RUN_IDLE;
    }
}

void fut__task_shutdown(struct fut_task *t)
{
    uintptr_t prev = fut__fetch_or(&t->state, CANCELLED | NOTIFIED | RUNNING,
                                   FUT__ACQ_REL);
    FUT_ASSERT(!(prev & COMPLETE));
    (void)prev;
    task_cancel_owned(t);
}

int fut__task_shutdown_idle(struct fut_task *t)
{
    if (!task_notify(t, CANCELLED, 0))
        return 0; /* running, queued or complete: its owner drops it */
    task_cancel_owned(t);
    return 1;
}

void fut__task_cancel(struct fut_task *t)
{
    task_cancel_owned(t);
}

/* ----------------------------------------------------------- join handle */

/* Registers the joiner's waker; returns 1 when COMPLETE is now seen. */
static int join_register(struct fut_task *t, uintptr_t s,
                         const struct fut_waker *w)
{
    if (s & JOIN_WAKER) {
        if (fut_waker_will_wake(&t->join_waker, w))
            return 0;
        do {
            if (s & COMPLETE)
                return 1; /* the completer owns the old waker */
        } while (!fut__cas(&t->state, &s, s & ~(uintptr_t)JOIN_WAKER,
                           FUT__ACQUIRE, FUT__ACQUIRE));
        fut_waker_drop(&t->join_waker);
    }
    fut__waker_store(&t->join_waker, fut_waker_clone(w));
    /* Release: the slot before the bit (pairs with the completer's
     * acquire). Acquire: COMPLETE's release, if it came first. */
    uintptr_t prev = fut__fetch_or(&t->state, JOIN_WAKER, FUT__ACQ_REL);
    if (prev & COMPLETE) {
        fut__fetch_and(&t->state, ~(uintptr_t)JOIN_WAKER, FUT__RELAXED);
        fut_waker_drop(&t->join_waker);
        return 1;
    }
    return 0;
}

static int join_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_join *j = (struct fut_join *)f;
    struct fut_task *t = j->task;
    if (!t) {
        j->result = FUT_ECANCELED; /* detached: nothing to wait for */
        return FUT_READY;
    }
    FUT_HANDLE_CHECK(t, j->gen, "fut_poll (a join handle)");
    uintptr_t s = fut__load(&t->state, FUT__ACQUIRE); /* pairs: complete */
    if (!(s & COMPLETE) && !join_register(t, s, &cx->waker))
        return FUT_PENDING;
    if (!fut_coop_proceed(cx))
        return FUT_PENDING;
    j->result = t->cancelled ? FUT_ECANCELED : 0;
    if (j->result == 0 && j->out_dst)
        memcpy(j->out_dst, (char *)fut__task_future(t) + j->out_off,
               j->out_len);
    return FUT_READY;
}

static void task_abort(struct fut_task *t)
{
    if (!task_notify(t, CANCELLED, 0))
        return;
    /* Idle, and now ours: drop it at once where that is allowed. */
    struct fut__sched *s = t->sched;
    if (s->vt->drop_here ? s->vt->drop_here(s, t) : fut__tls_sched == s)
        task_cancel_owned(t);
    else
        t->sched->vt->schedule(t->sched, t);
}

void fut__task_abort(struct fut_task *t)
{
    task_abort(t);
}

/* Gives up the join handle's interest and reference. */
static void join_release(struct fut_task *t)
{
    uintptr_t s = fut__load(&t->state, FUT__ACQUIRE);
    uintptr_t clear;
    do {
        /* Before COMPLETE the waker slot is ours to clear; after, the
         * completer owned it. */
        clear = JOIN_INTEREST | ((s & COMPLETE) ? 0 : JOIN_WAKER);
    } while (
        !fut__cas(&t->state, &s, s & ~clear, FUT__ACQ_REL, FUT__ACQUIRE));
    if ((clear & JOIN_WAKER) && (s & JOIN_WAKER))
        fut_waker_drop(&t->join_waker);
    task_ref_dec(t);
}

static void join_drop(struct fut_future *f)
{
    struct fut_join *j = (struct fut_join *)f;
    struct fut_task *t = j->task;
    if (!t)
        return;
    FUT_HANDLE_END(t, j->gen, "fut_drop (a join handle)");
    j->task = NULL;
    if (!(f->flags & FUT_F_READY))
        task_abort(t);
    join_release(t);
}

static size_t join_children(struct fut_future *f, struct fut_future **out,
                            size_t max)
{
    (void)f;
    (void)out;
    (void)max;
    return 0; /* the task runs on its own; dumps show it separately */
}

static const struct fut_future_vtable join_vt = {join_poll, join_drop, "join",
                                                 join_children};

void fut__join_init(struct fut_join *j, struct fut_task *t)
{
    fut_future_init(&j->base, &join_vt);
    j->task = t;
    j->result = FUT_ECANCELED;
    j->gen = t ? FUT_HANDLE_NEW(t) : 0;
    j->out_dst = NULL;
    j->out_off = j->out_len = 0;
}

void fut_join_output_to(struct fut_join *j, size_t offset, size_t len,
                        void *dst)
{
    FUT_ARG_VOID(j, "the join handle is NULL");
    FUT_ARG_VOID(dst || !len, "'dst' is NULL");
    if (j->task)
        FUT_HANDLE_CHECK(j->task, j->gen, __func__);
    j->out_dst = dst;
    j->out_off = offset;
    j->out_len = len;
}

void *fut_join_output(const struct fut_join *j)
{
    FUT_ARG_OR(j, "the join handle is NULL", NULL);
    if (j->task)
        FUT_HANDLE_CHECK(j->task, j->gen, __func__);
    if (!j->task || !(j->base.flags & FUT_F_READY) || j->result != 0)
        return NULL;
    return fut__task_future(j->task);
}

void fut_join_abort(struct fut_join *j)
{
    FUT_ARG_VOID(j, "the join handle is NULL");
    if (!j->task)
        return;
    FUT_HANDLE_CHECK(j->task, j->gen, __func__);
    task_abort(j->task);
}

void fut_join_detach(struct fut_join *j)
{
    FUT_ARG_VOID(j, "the join handle is NULL");
    struct fut_task *t = j->task;
    if (!t)
        return;
    FUT_HANDLE_END(t, j->gen, __func__);
    j->task = NULL;
    join_release(t);
}

int fut_join_is_finished(const struct fut_join *j)
{
    if (!j) {
        FUT_MISUSE("the join handle is NULL");
        return 1; /* nothing to wait for */
    }
    if (!j->task)
        return 1;
    FUT_HANDLE_CHECK(j->task, j->gen, __func__);
    return (fut__load(&j->task->state, FUT__ACQUIRE) & COMPLETE) != 0;
}
