/* SPDX-License-Identifier: MIT */
/* The tour's structured-concurrency section (called from tour.c):
 *
 *   a. a task scope: children spawned into it, results taken as they
 *      finish (fut_scope_next), the scope joined;
 *   b. fail-fast: the first failing child cancels its siblings, which
 *      are dropped before the scope completes with the error;
 *   c. a cancel token: fut_until_cancelled drops a job where it stood;
 *   d. the await-tree dump of the live tasks;
 *   e. graceful shutdown in one call (fut_shutdown): cancel the token,
 *      let the children finish within a grace period, drop the rest.
 *
 * tour_scope(rt) prints each step and returns the number of failed
 * checks.
 *
 * Run: it is section 9 of the tour (bash scripts/tour.sh, see tour.c).
 */
#include <stdio.h>
#include <string.h>

#include <fut.h>

int tour_scope(struct fut_runtime *rt);

static int failures;

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            printf("   !! check failed: %s (line %d)\n", #cond, __LINE__);   \
            failures++;                                                      \
        }                                                                    \
    } while (0)

#define MS (1000LL * 1000)

/* A worker: sleeps 'ms', then completes with 'rc' and value 'id * id'. */
struct worker {
    struct fut_future base;
    int id, ms, rc;
    intptr_t value;
    struct fut_sleep s;
};

static int drops; /* workers dropped before they finished */

static int worker_poll(struct fut_future *f, struct fut_context *cx)
{
    struct worker *w = (struct worker *)f;
    FUT_BEGIN(f);
    fut_sleep_init(&w->s, w->ms * MS);
    FUT_AWAIT(f, &w->s);
    w->value = (intptr_t)w->id * w->id;
    w->ms = -1; /* finished */
    FUT_END(f);
}

static void worker_cleanup(struct fut_future *f)
{
    if (((struct worker *)f)->ms >= 0) {
        drops++;
        printf("   [worker %d] dropped while it slept\n",
               ((struct worker *)f)->id);
    }
}
FUT_ASYNC_VTABLE(worker_vt, "worker", worker_poll, worker_cleanup);

static int spawn_worker(struct fut_scope *s, int id, int ms, int rc)
{
    struct worker w;
    memset(&w, 0, sizeof w);
    fut_future_init(&w.base, &worker_vt);
    w.id = id;
    w.ms = ms;
    w.rc = rc;
    struct fut_scope_opts o;
    fut_scope_opts_init(&o);
    FUT_SCOPE_RESULT(&o, struct worker, rc);
    FUT_SCOPE_VALUE(&o, struct worker, value);
    o.tag = id;
    return fut_scope_spawn(s, &w, sizeof w, &o);
}

/* ------------------------------------------------------ a. and b. scopes */

struct join_demo {
    struct fut_future base;
    int fail;
    struct fut_scope scope;
    struct fut_scope_next next;
    long sum;
};

static int join_demo_poll(struct fut_future *f, struct fut_context *cx)
{
    struct join_demo *d = (struct join_demo *)f;
    FUT_BEGIN(f);
    fut_scope_init(&d->scope, NULL, FUT_SCOPE_FAIL_FAST);
    for (int i = 1; i <= 4; i++)
        spawn_worker(&d->scope, i, d->fail ? 10 * i : 5 * (5 - i),
                     d->fail && i == 2 ? -EIO : 0);
    for (;;) {
        fut_scope_next_init(&d->next, &d->scope);
        FUT_AWAIT(f, &d->next);
        if (!d->next.has)
            break;
        printf("   child %ld finished: %s, value %ld\n",
               (long)d->next.done.tag,
               d->next.done.completed ? fut_err_name(d->next.done.result)
                                      : "dropped",
               (long)d->next.done.value);
        d->sum += d->next.done.value;
    }
    FUT_AWAIT(f, &d->scope);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(join_demo_vt, "join_demo", join_demo_poll, NULL);

static void tour_join(struct fut_runtime *rt, int fail)
{
    static struct join_demo d;
    memset(&d, 0, sizeof d);
    fut_future_init(&d.base, &join_demo_vt);
    d.fail = fail;
    drops = 0;
    fut_block_on(rt, &d.base);
    printf("   scope: %s, %llu failed, %llu dropped\n",
           fut_err_name(d.scope.result), (unsigned long long)d.scope.failed,
           (unsigned long long)d.scope.cancelled);
    if (!fail) {
        CHECK(d.scope.result == 0 && d.sum == 1 + 4 + 9 + 16);
    } else {
        /* Child 1 finished before 2 failed; 3 and 4 were dropped. */
        CHECK(d.scope.result == -EIO && d.scope.failed == 1);
        CHECK(d.scope.cancelled == 2 && drops == 2);
    }
    fut_drop(&d.base);
}

/* ------------------------------------------------------ c. until_cancelled */

struct cancel_demo {
    struct fut_future base;
    struct fut_token tok;
    struct fut_pending forever;
    struct fut_until_cancelled until;
    struct fut_sleep s;
    struct fut_join canceller;
};

struct canceller {
    struct fut_future base;
    struct fut_token *tok;
    struct fut_sleep s;
};

static int canceller_poll(struct fut_future *f, struct fut_context *cx)
{
    struct canceller *c = (struct canceller *)f;
    FUT_BEGIN(f);
    fut_sleep_init(&c->s, 10 * MS);
    FUT_AWAIT(f, &c->s);
    printf("   [canceller] fut_token_cancel\n");
    fut_token_cancel(c->tok);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(canceller_vt, "canceller", canceller_poll, NULL);

static int cancel_demo_poll(struct fut_future *f, struct fut_context *cx)
{
    struct cancel_demo *d = (struct cancel_demo *)f;
    FUT_BEGIN(f);
    fut_token_init(&d->tok);
    {
        struct canceller c;
        fut_future_init(&c.base, &canceller_vt);
        c.tok = &d->tok;
        fut_spawn(NULL, &c, sizeof c, &d->canceller);
    }
    fut_pending_init(&d->forever);
    fut_until_cancelled_init(&d->until, &d->forever.base, &d->tok);
    printf("   running a job that never ends, until the token fires\n");
    FUT_AWAIT(f, &d->until);
    printf("   until_cancelled: %s (the job was dropped where it stood)\n",
           fut_err_name(d->until.result));
    FUT_AWAIT(f, &d->canceller);
    fut_token_fini(&d->tok);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(cancel_demo_vt, "cancel_demo", cancel_demo_poll, NULL);

/* --------------------------------------------------- d. and e. shutdown */

/* A service child: works in 5 ms steps until the token is cancelled,
 * then finishes its step and returns - unless it is 'stubborn', which
 * ignores the token and is dropped at the end of the grace period. */
struct service {
    struct fut_future base;
    struct fut_token *tok;
    int id, stubborn, steps, done;
    struct fut_sleep s;
};

static int service_poll(struct fut_future *f, struct fut_context *cx)
{
    struct service *v = (struct service *)f;
    FUT_BEGIN(f);
    while (v->stubborn || !fut_token_is_cancelled(v->tok)) {
        fut_sleep_init(&v->s, 5 * MS);
        FUT_AWAIT(f, &v->s);
        v->steps++;
    }
    printf("   [service %d] saw the token: finished cleanly\n", v->id);
    v->done = 1;
    FUT_END(f);
}

static void service_cleanup(struct fut_future *f)
{
    struct service *v = (struct service *)f;
    if (!v->done)
        printf("   [service %d] dropped at the end of the grace period\n",
               v->id);
}
FUT_ASYNC_VTABLE(service_vt, "service", service_poll, service_cleanup);

struct shutdown_demo {
    struct fut_future base;
    struct fut_token trigger;
    struct fut_scope scope;
    struct fut_shutdown sd;
    struct fut_sleep s;
    char dump[4096];
};

static int shutdown_demo_poll(struct fut_future *f, struct fut_context *cx)
{
    struct shutdown_demo *d = (struct shutdown_demo *)f;
    FUT_BEGIN(f);
    fut_token_init(&d->trigger);
    fut_scope_init(&d->scope, NULL, FUT_SCOPE_SUPERVISE);
    for (int i = 1; i <= 3; i++) {
        struct service v;
        memset(&v, 0, sizeof v);
        fut_future_init(&v.base, &service_vt);
        v.tok = fut_scope_token(&d->scope);
        v.id = i;
        v.stubborn = i == 3;
        fut_scope_spawn(&d->scope, &v, sizeof v, NULL);
    }
    fut_sleep_init(&d->s, 12 * MS);
    FUT_AWAIT(f, &d->s);
    fut_runtime_dump(NULL, d->dump, sizeof d->dump);
    printf("   the await tree (fut_runtime_dump):\n%s", d->dump);
    /* One call: signals (none here), a trigger token, a grace period. */
    fut_shutdown_init(&d->sd, &d->scope, &d->trigger, NULL, 30 * MS);
    fut_token_cancel(&d->trigger); /* as SIGTERM would */
    FUT_AWAIT(f, &d->sd);
    printf("   shutdown: %s, %llu child dropped after the grace period\n",
           fut_err_name(d->sd.result), (unsigned long long)d->sd.dropped);
    fut_drop(&d->scope.base);
    fut_token_fini(&d->trigger);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(shutdown_demo_vt, "shutdown_demo", shutdown_demo_poll, NULL);

int tour_scope(struct fut_runtime *rt)
{
    failures = 0;
    printf("\n== 9a. a task scope: children joined as they finish\n");
    tour_join(rt, 0);
    printf("\n== 9b. fail-fast: the first error cancels the siblings\n");
    tour_join(rt, 1);

    printf("\n== 9c. a cancel token and fut_until_cancelled\n");
    static struct cancel_demo c;
    memset(&c, 0, sizeof c);
    fut_future_init(&c.base, &cancel_demo_vt);
    fut_block_on(rt, &c.base);
    CHECK(c.until.result == FUT_ECANCELED);
    fut_drop(&c.base);

    printf("\n== 9d/e. the task dump, then a graceful shutdown\n");
    static struct shutdown_demo d;
    memset(&d, 0, sizeof d);
    fut_future_init(&d.base, &shutdown_demo_vt);
    fut_block_on(rt, &d.base);
    CHECK(strstr(d.dump, "'service'") != NULL);
    CHECK(d.sd.result == FUT_ETIMEDOUT && d.sd.dropped == 1);
    fut_drop(&d.base);
    return failures;
}
