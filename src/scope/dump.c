/* SPDX-License-Identifier: MIT */
/* The await-tree dump (fut_runtime_dump, include/fut/scope.h).
 *
 * Every future records the child it awaits ('awaiting') or lists its
 * children ('children'), so a task's await chain can be walked from its
 * top future. The scheduler's each_task (struct fut__sched_vt) hands us
 * every live task, one call at a time, on a thread that owns the task's
 * list (sched_current.c's and src/rt/multi/dump.c's); with deep = 1 no
 * other thread polls any task meanwhile, so the chains hold still while we
 * read them. It lives in scope/, above the runtime: a record names the
 * scope a task belongs to (scope.c's fut__scope_*).
 *
 * Two phases (STYLE: collect, then act): inside each_task every task is
 * rendered into a record (text, and the task owning its scope, if it is
 * a scope's child); after it returned - the runtime runs again - the
 * records are printed as a tree: scope children under the task that
 * polls their scope. No task is touched in the second phase.
 *
 * What stays racy, and why that is acceptable:
 *   - an abort of an idle task from a thread that is not a worker (a
 *     join handle dropped on a block_on thread, fut_scope_cancel from a
 *     foreign thread) drops it in place and may run while we walk it: the
 *     walk then reads a future being dropped. Futures are never freed by
 *     their drop (the task memory stays until its last reference, which
 *     the task list holds), so the reads stay inside live memory; a
 *     pointer read mid-drop can be stale, which is why the walk stops at
 *     futures marked DROPPED and bounds its depth. A dump is a
 *     diagnostic; this window needs a foreign-thread abort during it;
 *   - the scope owner recorded by a scope poll is read relaxed: a scope
 *     that changed hands may be shown under its previous owner.
 *
 * Long polls: before the walk, the watchdog's slots (rt/watchdog.h) are
 * read for polls it found long; a task among them is marked "[in a long
 * poll for N ms on ...]", and one that is not listed (its worker is
 * stuck in that poll and did not answer) gets a line of its own from
 * what the slot holds. Names: deep, a task is named as reports name it
 * (fut__task_label: a fiber by its name, a scope child by the future it
 * wraps); shallow, another worker may be completing it, so only what
 * stays put is read (the vtable names), and a long poll's name comes
 * from its slot.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rt/rt_internal.h"
#include "rt/watchdog.h"
#include "scope/scope_internal.h"

/* A layer above (src/fiber) describes the futures it knows - where a
 * fiber is parked - through this hook, set before its first spawn
 * (relaxed: it only ever changes from 0 to the one function). */
fut__aword fut__dump_describe_hook;

static int describe(struct fut_future *f, char *buf, size_t len)
{
    fut__dump_describe_fn fn = (fut__dump_describe_fn)fut__load(
        &fut__dump_describe_hook, FUT__RELAXED);
    return fn ? fn(f, buf, len) : 0;
}

#define MAX_DEPTH 12
#define MAX_KIDS 8
#define REC_TEXT 1024

struct rec {
    struct fut_task *task;
    struct fut_task *parent; /* owner of the scope it is a child of */
    char *text;
    size_t len;
    int printed;
};

struct out {
    char *buf;
    size_t len, pos; /* pos may run past len: the length needed */
};

static void outf(struct out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void outf(struct out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->pos < o->len ? o->len - o->pos : 0;
    int n = vsnprintf(room ? o->buf + o->pos : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->pos += (size_t)n;
}

#define MAX_LONG 16

struct ctx {
    struct rec *recs;
    size_t n, cap;
    int oom;
    struct fut__watch *watch;
    struct fut__watch_long longs[MAX_LONG];
    int nlong;
    int matched[MAX_LONG];
};

/* The polls the watchdog found long, before the walk. */
static void gather_longs(struct ctx *c, struct fut__sched *s)
{
    c->watch = s->watch;
    c->nlong = 0;
    for (int i = 0; c->watch && i < c->watch->n && c->nlong < MAX_LONG; i++)
        if (fut__watch_long_poll(c->watch, i, &c->longs[c->nlong]))
            c->matched[c->nlong++] = 0;
}

/* "on worker 1" / "on the runtime's thread". */
static void where(struct out *o, struct ctx *c, int slot)
{
    if (c->watch->multi)
        outf(o, "on worker %d", slot);
    else
        outf(o, "on the runtime's thread");
}

/* Marks 't' when it is in a long poll. */
static void mark_long(struct out *o, struct ctx *c, struct fut_task *t)
{
    for (int i = 0; i < c->nlong; i++)
        if (c->longs[i].task == (uintptr_t)t) {
            c->matched[i] = 1;
            outf(o, " [in a long poll for %lld ms ",
                 (long long)(c->longs[i].elapsed_ns / 1000000));
            where(o, c, c->longs[i].slot);
            outf(o, "]");
        }
}

/* The long polls of tasks the walk did not list. */
static void print_unlisted_longs(struct out *o, struct ctx *c)
{
    for (int i = 0; i < c->nlong; i++)
        if (!c->matched[i]) {
            outf(o, "task %p %s [in a long poll for %lld ms ",
                 (void *)c->longs[i].task, c->longs[i].what,
                 (long long)(c->longs[i].elapsed_ns / 1000000));
            where(o, c, c->longs[i].slot);
            outf(o, "; not walked]\n");
        }
}

static void walk(struct out *o, struct fut_future *f, int depth);

/* The futures 'f' waits on, one level below 'depth'. */
static void walk_kids(struct out *o, struct fut_future *f, int depth)
{
    if (f->flags & FUT_F_DROPPED)
        return;
    if (f->vt->children) {
        struct fut_future *kids[MAX_KIDS];
        size_t n = f->vt->children(f, kids, MAX_KIDS);
        for (size_t i = 0; i < n && i < MAX_KIDS; i++)
            walk(o, kids[i], depth + 1);
        if (n > MAX_KIDS)
            outf(o, "%*s(+%zu more)\n", 2 * (depth + 1), "", n - MAX_KIDS);
    } else if (f->awaiting) {
        walk(o, f->awaiting, depth + 1);
    }
}

static void walk(struct out *o, struct fut_future *f, int depth)
{
    if (!f || !f->vt)
        return;
    if (depth > MAX_DEPTH) {
        outf(o, "%*s...\n", 2 * depth, "");
        return;
    }
    char desc[160];
    if (fut__scope_describe(f, desc, sizeof desc)) {
        outf(o, "%*s%s\n", 2 * depth, "", desc);
        return; /* its children are tasks: listed under this task */
    }
    if (describe(f, desc, sizeof desc)) {
        /* A fiber: where it is parked, then the future it awaits. */
        outf(o, "%*s%s\n", 2 * depth, "", desc);
        walk_kids(o, f, depth);
        return;
    }
    int done_child = 0;
    if (fut__scope_of_child(f, &done_child)) {
        /* The wrapper of a scope child: show the user's future only. */
        struct fut_future *k[1];
        if (f->vt->children(f, k, 1) == 1)
            walk(o, k[0], depth);
        return;
    }
    const char *name = f->vt->name ? f->vt->name : "?";
    outf(o, "%*s%s%s\n", 2 * depth, "", name,
         (f->flags & FUT_F_READY) ? " [ready]" : "");
    walk_kids(o, f, depth);
}

/* Inside each_task: render task 't'. */
static void collect(void *ud, struct fut_task *t, int deep)
{
    struct ctx *c = ud;
    struct fut_join view;
    fut__join_init(&view, NULL);
    view.task = t; /* borrows the list's reference; gen 0: unregistered */
    if (fut_join_is_finished(&view))
        return; /* completed elsewhere, not unlinked yet */
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        struct rec *r = fut__alloc(cap * sizeof *r);
        if (!r) {
            c->oom = 1;
            return;
        }
        if (c->n)
            memcpy(r, c->recs, c->n * sizeof *r);
        if (c->recs)
            fut__free(c->recs, c->cap * sizeof *r);
        c->recs = r;
        c->cap = cap;
    }
    char text[REC_TEXT];
    struct out o = {text, sizeof text, 0};
    struct fut_future *top = fut__task_future(t);
    int done = 0;
    struct fut_scope *sc = fut__scope_of_child(top, &done);
    struct fut_future *shown = top;
    struct fut_future *k[1];
    if (sc && top->vt->children(top, k, 1) == 1)
        shown = k[0];
    struct fut__task_label l = {shown->vt->name ? shown->vt->name : "?", 0,
                                NULL, 0};
    if (deep)
        fut__task_label(t, &l);
    outf(&o, "task %p '%s'", (void *)t, l.name);
#ifdef FUT_DEBUG
    outf(&o, " spawned at %s:%d", t->spawn_file, t->spawn_line);
#endif
    if (sc)
        outf(&o, " (child of scope %p)", (void *)sc);
    mark_long(&o, c, t);
    char fdesc[160];
    if (describe(shown, fdesc, sizeof fdesc))
        outf(&o, ": %s", fdesc); /* where the fiber is parked */
    outf(&o, "\n");
    if (deep)
        walk_kids(&o, shown, 0);
    size_t len = o.pos < sizeof text ? o.pos : sizeof text - 1;
    char *copy = fut__alloc(len + 1);
    if (!copy) {
        c->oom = 1;
        return;
    }
    memcpy(copy, text, len);
    copy[len] = 0;
    struct rec *r = &c->recs[c->n++];
    r->task = t;
    r->parent = sc ? fut__scope_owner(sc) : NULL;
    r->text = copy;
    r->len = len;
    r->printed = 0;
}

static void print_rec(struct out *o, struct ctx *c, struct rec *r, int depth)
{
    r->printed = 1;
    const char *p = r->text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        outf(o, "%*s%.*s\n", 2 * depth, "", (int)n, p);
        p += n + (nl ? 1 : 0);
    }
    for (size_t i = 0; i < c->n; i++)
        if (!c->recs[i].printed && c->recs[i].parent == r->task)
            print_rec(o, c, &c->recs[i], depth + 1);
}

static int has_parent(struct ctx *c, struct rec *r)
{
    if (!r->parent)
        return 0;
    for (size_t i = 0; i < c->n; i++)
        if (c->recs[i].task == r->parent && &c->recs[i] != r)
            return 1;
    return 0;
}

long fut_runtime_dump(struct fut_runtime *rt, char *buf, size_t len)
{
    FUT_ARG_CHECK(buf || !len, "'buf' is NULL");
    if (rt)
        FUT_RT_LIVE(rt);
    struct fut__sched *s = fut__tls_sched;
    if (!s || (rt && s->rt != rt))
        return FUT_EINVAL;
    struct ctx c;
    c.recs = NULL;
    c.n = c.cap = 0;
    c.oom = 0;
    gather_longs(&c, s);
    int r = s->vt->each_task(s, collect, &c);
    if (r != 0 && r != FUT_ETIMEDOUT) {
        FUT_ASSERT(c.n == 0);
        return r;
    }
    struct out o = {buf, len, 0};
    if (len)
        buf[0] = 0;
    outf(&o, "fut task dump: %zu tasks%s%s\n", c.n,
         r == FUT_ETIMEDOUT ? " (a worker did not answer: its tasks are "
                              "missing, names only)"
                            : "",
         c.oom ? " (out of memory: some tasks missing)" : "");
    for (size_t i = 0; i < c.n; i++)
        if (!c.recs[i].printed && !has_parent(&c, &c.recs[i]))
            print_rec(&o, &c, &c.recs[i], 0);
    for (size_t i = 0; i < c.n; i++)
        if (!c.recs[i].printed) /* a cycle of stale owners: flat */
            print_rec(&o, &c, &c.recs[i], 0);
    print_unlisted_longs(&o, &c);
    for (size_t i = 0; i < c.n; i++)
        fut__free(c.recs[i].text, c.recs[i].len + 1);
    if (c.recs)
        fut__free(c.recs, c.cap * sizeof *c.recs);
    if (len && o.pos >= len)
        buf[len - 1] = 0;
    return (long)o.pos;
}
