/* Result codes, the noop waker, async-function drop, the leaf futures and
 * the debug report hook. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ----------------------------------------------------------------- errors */

const char *fut_strerror(int err)
{
    switch (err) {
#define FUT__ERRNO_MSG(name, val, msg)                                        \
    case (val):                                                               \
        return (msg);
        FUT_ERRNO_MAP(FUT__ERRNO_MSG)
#undef FUT__ERRNO_MSG
    default:
        break;
    }
    if (err >= 0)
        return "success";
    const char *d = strerrordesc_np(-err); /* static, thread-safe */
    return d ? d : "unknown error";
}

const char *fut_err_name(int err)
{
    switch (err) {
#define FUT__ERRNO_NAME(name, val, msg)                                       \
    case (val):                                                               \
        return "FUT_" #name;
        FUT_ERRNO_MAP(FUT__ERRNO_NAME)
#undef FUT__ERRNO_NAME
    default:
        break;
    }
    if (err >= 0)
        return "OK";
    const char *n = strerrorname_np(-err);
    return n ? n : "EUNKNOWN";
}

/* ------------------------------------------------------------ assertions */

void fut__assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "fut: %s:%d: assertion failed: %s\n", file, line, expr);
    fflush(stderr);
    abort();
}

/* ------------------------------------------------------------ noop waker */

static struct fut_waker noop_clone(const void *data);
static void noop_fn(const void *data)
{
    (void)data;
}
static const struct fut_waker_vtable noop_vt = {noop_clone, noop_fn, noop_fn,
                                                noop_fn};
static struct fut_waker noop_clone(const void *data)
{
    struct fut_waker w = {data, &noop_vt};
    return w;
}

struct fut_waker fut_waker_noop(void)
{
    struct fut_waker w = {0, &noop_vt};
    return w;
}

/* ------------------------------------------------------- async functions */

void fut_async_drop(struct fut_future *f)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    if (f->awaiting) {
        fut_drop(f->awaiting);
        f->awaiting = NULL;
    }
}

/* ---------------------------------------------------------- leaf futures */

static int ready_poll(struct fut_future *f, struct fut_context *cx)
{
    (void)f;
    (void)cx;
    return FUT_READY;
}
static const struct fut_future_vtable ready_vt = {ready_poll, NULL, "ready",
                                                  NULL};

void fut_ready_init(struct fut_ready *f, intptr_t value)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    fut_future_init(&f->base, &ready_vt);
    f->value = value;
}

static int pending_poll(struct fut_future *f, struct fut_context *cx)
{
    (void)f;
    (void)cx;
    return FUT_PENDING;
}
static const struct fut_future_vtable pending_vt = {pending_poll, NULL,
                                                    "pending", NULL};

void fut_pending_init(struct fut_pending *f)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    fut_future_init(&f->base, &pending_vt);
}

static int lazy_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_lazy *l = (struct fut_lazy *)f;
    (void)cx;
    l->value = l->fn(l->arg);
    return FUT_READY;
}
static const struct fut_future_vtable lazy_vt = {lazy_poll, NULL, "lazy",
                                                 NULL};

void fut_lazy_init(struct fut_lazy *f, intptr_t (*fn)(void *), void *arg)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(fn, "'fn' is NULL");
    fut_future_init(&f->base, &lazy_vt);
    f->fn = fn;
    f->arg = arg;
    f->value = 0;
}

static int yield_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_yield *y = (struct fut_yield *)f;
    if (y->yielded)
        return FUT_READY;
    y->yielded = 1;
    fut_waker_wake_by_ref(&cx->waker);
    return FUT_PENDING;
}
static const struct fut_future_vtable yield_vt = {yield_poll, NULL,
                                                  "yield_now", NULL};

void fut_yield_init(struct fut_yield *f)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    fut_future_init(&f->base, &yield_vt);
    f->yielded = 0;
}

/* -------------------------------------------------------------- reports */

static void default_report(void *ud, const char *kind, const char *msg)
{
    (void)ud;
    fprintf(stderr, "fut: [%s] %s\n", kind, msg);
}

static fut_report_fn report_fn = default_report;
static void *report_ud;
static fut__aword report_count; /* statistics: relaxed */

void fut_set_report_hook(fut_report_fn fn, void *ud)
{
    report_fn = fn ? fn : default_report;
    report_ud = fn ? ud : NULL;
}

long fut_report_count(void)
{
    return (long)fut__load(&report_count, FUT__RELAXED);
}

void fut__report(const char *kind, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fut__fetch_add(&report_count, 1, FUT__RELAXED);
    report_fn(report_ud, kind, buf);
}
