/* SPDX-License-Identifier: MIT */
/* Task scopes (include/fut/scope.h): children, their records, the
 * scope's cancellation and the drop that waits for every child.
 *
 * A child is a task whose future is a 'struct child' wrapper with the
 * user's future inline after it (one allocation: the task). The wrapper
 * holds the child's node: its link in the scope's lists and its state.
 * The scope keeps the task's join reference (not a join handle: just the
 * reference, taken with fut_spawn's handle and released with
 * fut_join_detach) from the spawn until its record is consumed, so the
 * node stays valid while the scope can reach it.
 *
 * Rules of the scope ('struct core', under 'lock' unless said):
 *   live        linked children whose future has not finished;
 *   finished    records of finished children not consumed yet;
 *   outstanding linked children not consumed (live + finished);
 *   cancelled   set once (cancel, FAIL_FAST failure, drop): no spawn
 *               starts afterwards ('closed' mirrors it for the lock-free
 *               pre-check of spawn; a spawn that passed the check links
 *               its child and aborts it itself);
 *   waker       the owner's (join / next), taken by the finisher.
 *
 * Rules of a child's 'st' (the owner of the child's inner future):
 *   0     idle: nobody touches the inner future;
 *   BUSY  one thread is inside it: the task's poll, the task's drop
 *         (abort, shutdown), or the scope's drop taking it over; set by
 *         CAS from 0 only, so there is one owner at a time;
 *   DONE  the inner future is dropped and its record published. Final:
 *         after DONE nobody touches the inner future or the scope.
 *   poll:  CAS 0 -> BUSY (fails: DONE, or the scope's drop owns it - the
 *          task just ends, READY), poll inner; PENDING: store 0; READY:
 *          drop inner, finish, store DONE.
 *   drop (task's):  CAS 0 -> BUSY, drop inner, finish, DONE; a failing
 *          CAS means someone else finishes.
 *   scope drop (settle): CAS 0 -> BUSY and do the same on its own thread;
 *          BUSY: a poll runs elsewhere - wait for DONE (spin, then yield,
 *          then sleep 20 us): the poll ends in bounded time (C6) and the
 *          task then sees CANCELLED (the scope aborted it) and drops it.
 * finish() publishes the record (moves the node to 'finished') as its
 * last touch of the scope: the owner may consume it, complete and free
 * the scope right after. A FAIL_FAST failure therefore cancels the
 * siblings before publishing its own record.
 *
 * Lock order: the scope's lock is a leaf: no waker, drop or abort runs
 * under it.
 */
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fut/scope.h"
#include "rt/rt_internal.h"
#include "rt/watchdog.h"
#include "scope/scope_internal.h"

enum { BUSY = 1, DONE = 2 };

/* Futures up to this size are staged on the stack for the spawn's copy. */
#define STAGE_STACK 8192

_Static_assert(sizeof(struct fut__scope_core) <=
                   sizeof(((struct fut_scope *)0)->priv_),
               "struct fut_scope's private storage too small");

static struct fut__scope_core *core_of(struct fut_scope *s)
{
    return (struct fut__scope_core *)(void *)s->priv_;
}

static struct fut_future *inner_of(struct fut__scope_child *c)
{
    return (struct fut_future *)(void *)((char *)c + FUT__SCOPE_CHILD_HDR);
}

/* The child a poll of this thread is inside (a scope dropped from its
 * own child would wait for itself: a programming error we catch). */
static _Thread_local struct fut__scope_child *polling_child;

/* ------------------------------------------------------ task references */

static void task_abort(struct fut_task *t)
{
    struct fut_join j;
    fut__join_init(&j, t); /* a view: borrows the scope's reference */
    fut_join_abort(&j);
}

/* Releases the join reference the scope took at spawn (may free 't'). */
static void task_release(struct fut_task *t)
{
    struct fut_join j;
    fut__join_init(&j, t);
    fut_join_detach(&j);
}

/* --------------------------------------------------------- cancellation */

/* Cancels the scope: marks it, cancels the token, aborts every live child
 * but 'except' (the failing child calling us). Never waits. */
static void cancel_all(struct fut_scope *s, struct fut__scope_child *except,
                       int user)
{
    struct fut__scope_core *k = core_of(s);
    struct fut__scope_child *list = NULL;
    fut__lock_acquire(&k->lock);
    k->cancelled = 1;
    if (user)
        k->user_cancel = 1;
    /* Relaxed: a hint for spawn's pre-check; the lock orders the rest. */
    fut__store(&k->closed, 1, FUT__RELAXED);
    for (struct fut__list *l = k->live.next; l != &k->live; l = l->next) {
        struct fut__scope_child *c =
            fut__container_of(l, struct fut__scope_child, link);
        if (c == except || c->cqueued)
            continue;
        c->cqueued = 1;             /* one canceller per child */
        fut__task_ref_inc(c->task); /* the node outlives its record */
        c->cnext = list;
        list = c;
    }
    fut__lock_release(&k->lock);
    fut_token_cancel(&s->token);
    while (list) {
        struct fut__scope_child *c = list;
        struct fut_task *t = c->task;
        list = c->cnext;
        task_abort(t);
        fut__task_ref_dec(t);
    }
}

void fut_scope_cancel(struct fut_scope *s)
{
    FUT_ARG_VOID(s, "'s' is NULL");
    cancel_all(s, NULL, 1);
}

/* ---------------------------------------------------------------- finish */

/* Called by the owner of the inner future (BUSY) once it is dropped:
 * reports the child and sets DONE. */
static void finish(struct fut__scope_child *c, int res, int completed)
{
    struct fut_scope *s = c->scope;
    struct fut__scope_core *k = core_of(s);
    if (completed && res < 0 && res != FUT_ECANCELED) {
        int cancel = 0;
        fut__lock_acquire(&k->lock);
        s->failed++;
        if (k->first_error == 0) {
            k->first_error = res;
            cancel = k->policy == FUT_SCOPE_FAIL_FAST && !k->cancelled;
        }
        fut__lock_release(&k->lock);
        if (cancel)
            cancel_all(s, c, 0); /* before our record can complete it */
    }
    fut__lock_acquire(&k->lock);
    c->result = res;
    c->completed = (uint8_t)completed;
    if (c->result_dst)
        *c->result_dst = res;
    if (!completed)
        s->cancelled++;
    if (c->linked) {
        fut__list_remove(&c->link);
        fut__list_push_back(&k->finished, &c->link);
        k->nfinished++;
    } else {
        c->early = 1; /* the spawner publishes it when it links */
    }
    struct fut_waker w = k->waker;
    k->waker.vt = NULL;
    k->waker.data = NULL;
    fut__lock_release(&k->lock);
    /* From here on the scope may be gone: only the waker (ours now) and
     * our own node are touched. */
    if (w.vt)
        fut_waker_wake(&w);
    /* Release: pairs with settle()'s acquire load: the inner's drop and
     * the record happen before the scope's drop returns. */
    fut__store(&c->st, DONE, FUT__RELEASE);
}

/* ------------------------------------------------------- child wrapper */

static void read_outputs(struct fut__scope_child *c, int *res)
{
    const char *in = (const char *)inner_of(c);
    *res = 0;
    if (c->result_off != FUT_SCOPE_NONE)
        memcpy(res, in + c->result_off, sizeof *res);
    if (c->value_off != FUT_SCOPE_NONE)
        memcpy(&c->value, in + c->value_off, sizeof c->value);
    if (c->out_len)
        memcpy(c->out_dst, in + c->out_off, c->out_len);
}

static int child_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut__scope_child *c = (struct fut__scope_child *)f;
    uintptr_t z = 0;
    /* Acquire: pairs with the release store of 0 by the previous poll
     * (maybe on another worker) and of DONE by a settle: we see what the
     * last owner of the inner future did. */
    if (!fut__cas(&c->st, &z, BUSY, FUT__ACQUIRE, FUT__ACQUIRE))
        return FUT_READY; /* DONE, or the scope's drop is dropping it */
    struct fut_future *in = inner_of(c);
    struct fut__scope_child *outer = polling_child;
    polling_child = c;
    int r = fut_poll(in, cx);
    polling_child = outer;
    if (r == FUT_PENDING) {
        /* Release: our writes to the inner future before the next owner's
         * acquire CAS (a settle on another thread). */
        fut__store(&c->st, 0, FUT__RELEASE);
        return FUT_PENDING;
    }
    int res;
    read_outputs(c, &res);
    fut_drop(in);
    finish(c, res, 1);
    return FUT_READY;
}

static void child_drop(struct fut_future *f)
{
    struct fut__scope_child *c = (struct fut__scope_child *)f;
    uintptr_t z = 0;
    /* Acquire: as in child_poll. */
    if (!fut__cas(&c->st, &z, BUSY, FUT__ACQUIRE, FUT__ACQUIRE))
        return; /* finished, or being finished by the scope's drop */
    fut_drop(inner_of(c));
    finish(c, FUT_ECANCELED, 0);
}

static size_t child_children(struct fut_future *f, struct fut_future **out,
                             size_t max)
{
    struct fut__scope_child *c = (struct fut__scope_child *)f;
    if (fut__load(&c->st, FUT__RELAXED) == DONE)
        return 0;
    if (max >= 1)
        out[0] = inner_of(c);
    return 1;
}

const struct fut_future_vtable fut__scope_child_vt = {
    child_poll, child_drop, "scope_child", child_children};

/* ------------------------------------------------------------------ drop */

static void backoff(unsigned n)
{
    if (n < 64) {
        fut__cpu_relax();
    } else if (n < 128) {
        sched_yield();
    } else {
        struct timespec ts = {0, 20 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* Makes sure 'c' (held by a reference of the caller) has finished: takes
 * its inner future over and drops it here, or waits for the poll that
 * holds it elsewhere. */
static void settle(struct fut__scope_child *c)
{
    for (unsigned n = 0;; n++) {
        /* Acquire: pairs with finish()'s release store of DONE. */
        uintptr_t st = fut__load(&c->st, FUT__ACQUIRE);
        if (st == DONE)
            return;
        uintptr_t z = 0;
        /* Acquire: pairs with the poller's release store of 0. */
        if (st == 0 &&
            fut__cas(&c->st, &z, BUSY, FUT__ACQUIRE, FUT__ACQUIRE)) {
            fut_drop(inner_of(c));
            finish(c, FUT_ECANCELED, 0);
            return;
        }
        /* A scope dropped from inside one of its own children's polls
         * would wait for ever. */
        FUT_CHECK(c != polling_child);
        backoff(n);
        fut__spin_hint();
    }
}

/* Consumes the records on 'finished' (all of them); returns how many. */
static uint64_t consume_all(struct fut__scope_core *k)
{
    struct fut__list local;
    fut__list_init(&local);
    fut__lock_acquire(&k->lock);
    fut__list_splice(&local, &k->finished);
    uint64_t n = k->nfinished;
    k->outstanding -= n;
    k->nfinished = 0;
    fut__lock_release(&k->lock);
    while (!fut__list_empty(&local)) {
        struct fut__list *l = local.next;
        fut__list_remove(l);
        task_release(
            fut__container_of(l, struct fut__scope_child, link)->task);
    }
    return n;
}

static void scope_drop(struct fut_future *f)
{
    struct fut_scope *s = (struct fut_scope *)f;
    struct fut__scope_core *k = core_of(s);
    cancel_all(s, NULL, 0);
    /* Every child still live: settle it. A child that a running sibling
     * spawns meanwhile is linked before that sibling's poll ends (and so
     * before the sibling is DONE): the loop sees it. */
    for (;;) {
        fut__lock_acquire(&k->lock);
        struct fut__list *l = fut__list_front(&k->live);
        struct fut__scope_child *c =
            l ? fut__container_of(l, struct fut__scope_child, link) : NULL;
        if (c)
            fut__task_ref_inc(c->task);
        fut__lock_release(&k->lock);
        if (!c)
            break;
        struct fut_task *t = c->task;
        settle(c);
        fut__task_ref_dec(t);
    }
    consume_all(k);
    FUT_ASSERT(k->outstanding == 0);
    fut__lock_acquire(&k->lock);
    struct fut_waker w = k->waker;
    k->waker.vt = NULL;
    fut__lock_release(&k->lock);
    fut_waker_drop(&w);
    fut_token_fini(&s->token);
}

/* ------------------------------------------------------------------ join */

static void set_result(struct fut_scope *s)
{
    struct fut__scope_core *k = core_of(s);
    s->result = k->first_error   ? k->first_error
                : k->user_cancel ? FUT_ECANCELED
                                 : 0;
}

static int scope_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_scope *s = (struct fut_scope *)f;
    struct fut__scope_core *k = core_of(s);
    /* Relaxed: read by the task dump only. */
    fut__store(&k->owner, (uintptr_t)cx->task, FUT__RELAXED);
    for (;;) {
        consume_all(k);
        fut__lock_acquire(&k->lock);
        int done = k->outstanding == 0;
        int more = k->nfinished != 0;
        if (!done && !more)
            fut_waker_set(&k->waker, &cx->waker);
        fut__lock_release(&k->lock);
        if (more)
            continue; /* finished while we looked: consume them too */
        if (!done)
            return FUT_PENDING;
        set_result(s);
        return FUT_READY;
    }
}

static const struct fut_future_vtable scope_vt = {scope_poll, scope_drop,
                                                  "scope", NULL};

/* ------------------------------------------------------------------ init */

/* 'parent' NULL: a token of its own. */
static void scope_init(struct fut_scope *s, struct fut_runtime *rt,
                       int policy, struct fut_token *parent)
{
    memset(s, 0, sizeof *s);
    fut_future_init(&s->base, &scope_vt);
    if (parent)
        fut_token_init_child(&s->token, parent);
    else
        fut_token_init(&s->token);
    struct fut__scope_core *k = core_of(s);
    fut__lock_init(&k->lock);
    fut__list_init(&k->live);
    fut__list_init(&k->finished);
    k->rt = rt ? rt : fut_runtime_current();
    k->policy = policy;
    fut__aword_init(&k->closed, 0);
    fut__aword_init(&k->owner, 0);
}

void fut_scope_init_child(struct fut_scope *s, struct fut_runtime *rt,
                          int policy, struct fut_token *parent)
{
    FUT_ARG_VOID(s, "'s' is NULL");
    FUT_ARG_VOID(parent, "'parent' is NULL");
    if (rt)
        FUT_RT_LIVE(rt);
    scope_init(s, rt, policy, parent);
}

void fut_scope_init(struct fut_scope *s, struct fut_runtime *rt, int policy)
{
    FUT_ARG_VOID(s, "'s' is NULL");
    if (rt)
        FUT_RT_LIVE(rt);
    scope_init(s, rt, policy, NULL);
}

void fut_scope_opts_init(struct fut_scope_opts *o)
{
    FUT_ARG_VOID(o, "'o' is NULL");
    memset(o, 0, sizeof *o);
    o->result_off = FUT_SCOPE_NONE;
    o->value_off = FUT_SCOPE_NONE;
}

struct fut_token *fut_scope_token(struct fut_scope *s)
{
    FUT_ARG_OR(s, "'s' is NULL", NULL);
    return &s->token;
}

uint64_t fut_scope_outstanding(struct fut_scope *s)
{
    FUT_ARG_OR(s, "'s' is NULL", 0);
    struct fut__scope_core *k = core_of(s);
    fut__lock_acquire(&k->lock);
    uint64_t n = k->outstanding;
    fut__lock_release(&k->lock);
    return n;
}

/* ----------------------------------------------------------------- spawn */

static void child_stage(struct fut__scope_child *c, struct fut_scope *s,
                        const struct fut_scope_opts *o)
{
    memset(c, 0, sizeof *c);
    fut_future_init(&c->base, &fut__scope_child_vt);
    fut__aword_init(&c->st, 0);
    /* 'link' stays zero: it is set when the spawner links the copy (a
     * list node here would point into this staging buffer). */
    c->scope = s;
    c->result_off = o ? o->result_off : FUT_SCOPE_NONE;
    c->value_off = o ? o->value_off : FUT_SCOPE_NONE;
    if (o) {
        c->out_off = o->out_off;
        c->out_len = o->out_dst ? o->out_len : 0;
        c->out_dst = o->out_dst;
        c->result_dst = o->result_dst;
        c->tag = o->tag;
    }
}

/* Links the task's copy of the child into the scope. */
static void child_link(struct fut_scope *s, struct fut_task *t)
{
    struct fut__scope_core *k = core_of(s);
    struct fut__scope_child *c =
        (struct fut__scope_child *)(void *)fut__task_future(t);
    int abort_it = 0;
    fut__lock_acquire(&k->lock);
    c->task = t;
    s->spawned++;
    k->outstanding++;
    if (c->early) {
        fut__list_push_back(&k->finished, &c->link); /* done already */
        k->nfinished++;
    } else {
        fut__list_push_back(&k->live, &c->link);
        c->linked = 1;
        if (k->cancelled) {
            /* Cancelled after our pre-check: nobody else will abort it. */
            abort_it = 1;
            c->cqueued = 1;
            fut__task_ref_inc(t);
        }
    }
    struct fut_waker w = FUT_WAKER_NONE;
    if (c->early) {
        w = k->waker;
        k->waker.vt = NULL;
    }
    fut__lock_release(&k->lock);
    if (w.vt)
        fut_waker_wake(&w);
    if (abort_it) {
        task_abort(t);
        fut__task_ref_dec(t);
    }
}

/* The future a scope child's wrapper runs (rt/watchdog.h's unwrap hook):
 * reports and dumps name the child by it, and by its spawn site, since a
 * scope spawn takes no name. NULL for other futures. */
static struct fut_future *label_unwrap(struct fut_future *f)
{
    if (f->vt != &fut__scope_child_vt)
        return NULL;
    return inner_of((struct fut__scope_child *)f);
}

int fut_scope_spawn_at(struct fut_scope *s, const struct fut_future *f,
                       size_t size, const struct fut_scope_opts *opts,
                       const char *file, int line)
{
    FUT_ARG_CHECK(s, "'s' is NULL");
    FUT_ARG_CHECK(f, "'f' is NULL");
    struct fut__scope_core *k = core_of(s);
    /* Relaxed: a hint; child_link re-checks under the lock. */
    if (fut__load(&k->closed, FUT__RELAXED))
        return FUT_ECANCELED;
    size_t total = FUT__SCOPE_CHILD_HDR + size;
    _Alignas(max_align_t) unsigned char stage[STAGE_STACK];
    unsigned char *buf = stage;
    if (total > sizeof stage && !(buf = fut__alloc(total)))
        return FUT_ENOMEM;
    struct fut__scope_child *c = (struct fut__scope_child *)(void *)buf;
    child_stage(c, s, opts);
    memcpy(buf + FUT__SCOPE_CHILD_HDR, f, size);
    /* Set once (load first: no store to a shared line per spawn). */
    if (!fut__load(&fut__label_unwrap_hook, FUT__RELAXED)) {
        fut__store(&fut__label_unwrap_vt, (uintptr_t)&fut__scope_child_vt,
                   FUT__RELAXED);
        fut__store(&fut__label_unwrap_hook, (uintptr_t)label_unwrap,
                   FUT__RELAXED);
    }
    struct fut_join j;
    int r = fut_spawn_at(k->rt, &c->base, total, &j, file, line);
    if (buf != stage)
        fut__free(buf, total);
    if (r != 0)
        return r;
    /* The handle's reference is the scope's now; the handle itself is
     * not used again (dropping it would abort the child). */
    child_link(s, j.task);
    return 0;
}

/* --------------------------------------------------------- next, stream */

/* Takes one record; 1 with '*out', 0 at the end, -1 when pending (cx's
 * waker registered). */
static int take_one(struct fut_scope *s, struct fut_context *cx,
                    struct fut_scope_done *out)
{
    struct fut__scope_core *k = core_of(s);
    fut__lock_acquire(&k->lock);
    struct fut__list *l = fut__list_front(&k->finished);
    if (!l) {
        int end = k->outstanding == 0;
        if (!end)
            fut_waker_set(&k->waker, &cx->waker);
        fut__lock_release(&k->lock);
        return end ? 0 : -1;
    }
    fut__list_remove(l);
    k->nfinished--;
    k->outstanding--;
    fut__lock_release(&k->lock);
    struct fut__scope_child *c =
        fut__container_of(l, struct fut__scope_child, link);
    out->tag = c->tag;
    out->value = c->value;
    out->result = c->result;
    out->completed = c->completed;
    task_release(c->task);
    return 1;
}

static int next_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_scope_next *n = (struct fut_scope_next *)f;
    struct fut__scope_core *k = core_of(n->scope);
    fut__store(&k->owner, (uintptr_t)cx->task, FUT__RELAXED); /* dumps */
    int r = take_one(n->scope, cx, &n->done);
    if (r < 0)
        return FUT_PENDING;
    n->has = r;
    return FUT_READY;
}

/* Dumps show the scope under the next future that waits on it. */
static size_t next_children(struct fut_future *f, struct fut_future **out,
                            size_t max)
{
    if (max >= 1)
        out[0] = &((struct fut_scope_next *)f)->scope->base;
    return 1;
}

static const struct fut_future_vtable next_vt = {next_poll, NULL,
                                                 "scope_next", next_children};

void fut_scope_next_init(struct fut_scope_next *n, struct fut_scope *s)
{
    FUT_ARG_VOID(n, "'n' is NULL");
    FUT_ARG_VOID(s, "'s' is NULL");
    fut_future_init(&n->base, &next_vt);
    n->scope = s;
    n->has = 0;
    memset(&n->done, 0, sizeof n->done);
}

static int stream_poll_next(struct fut_stream *st, struct fut_context *cx,
                            void *item)
{
    struct fut_scope_stream *ss = (struct fut_scope_stream *)st;
    int r = take_one(ss->scope, cx, (struct fut_scope_done *)item);
    return r < 0 ? FUT_PENDING : r ? FUT_STREAM_ITEM : FUT_STREAM_END;
}

static const struct fut_stream_vtable stream_vt = {stream_poll_next, NULL,
                                                   "scope_stream"};

void fut_scope_stream_init(struct fut_scope_stream *st, struct fut_scope *s)
{
    FUT_ARG_VOID(st, "'st' is NULL");
    FUT_ARG_VOID(s, "'s' is NULL");
    fut_stream_init(&st->base, &stream_vt, sizeof(struct fut_scope_done));
    st->scope = s;
}

/* ------------------------------------------------------------ for dumps */

struct fut_scope *fut__scope_of_child(struct fut_future *f, int *done)
{
    if (f->vt != &fut__scope_child_vt)
        return NULL;
    struct fut__scope_child *c = (struct fut__scope_child *)f;
    *done = fut__load(&c->st, FUT__RELAXED) == DONE;
    return c->scope;
}

struct fut_task *fut__scope_owner(struct fut_scope *s)
{
    return (struct fut_task *)fut__load(&core_of(s)->owner, FUT__RELAXED);
}

int fut__scope_describe(struct fut_future *f, char *buf, size_t len)
{
    if (f->vt != &scope_vt)
        return 0;
    struct fut_scope *s = (struct fut_scope *)f;
    struct fut__scope_core *k = core_of(s);
    fut__lock_acquire(&k->lock);
    unsigned long long live = k->outstanding - k->nfinished;
    unsigned long long fin = k->nfinished;
    int cancelled = k->cancelled;
    fut__lock_release(&k->lock);
    snprintf(buf, len, "scope %p: %llu running, %llu finished, %s%s",
             (void *)s, live, fin,
             k->policy == FUT_SCOPE_SUPERVISE ? "supervise" : "fail-fast",
             cancelled ? ", cancelled" : "");
    return 1;
}
