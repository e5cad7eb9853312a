/* What every layer reports through: the names of result codes, the
 * failure of an assertion (FUT_ASSERT, file:line, abort) and the debug
 * report hook (fut_set_report_hook). Below core: it knows nothing of
 * futures. */
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
