/* SPDX-License-Identifier: MIT */
/* What every layer reports through: the names of result codes, the
 * failure of an assertion (FUT_ASSERT, file:line, abort) and the debug
 * report hook (fut_set_report_hook). Below core: it knows nothing of
 * futures. */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ----------------------------------------------------------------- errors */

const char *fut_strerror(int err)
{
    switch (err) {
#define FUT__ERRNO_MSG(name, val, msg)                                       \
    case (val):                                                              \
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
#define FUT__ERRNO_NAME(name, val, msg)                                      \
    case (val):                                                              \
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

/* The hook (0: the default). Reports come from any thread - a task's
 * poll, the long-poll watchdog's thread (rt/watchdog.c) - while a test may
 * install a hook: both words are atomics. 'ud' is stored before 'fn'
 * (release; the reporter's acquire load of 'fn' pairs with it), so a
 * reporter that sees a hook sees its 'ud' unless another set runs at the
 * same time. */
static fut__aword report_fn;
static fut__aword report_ud;
static fut__aword report_count; /* statistics: relaxed */

void fut_set_report_hook(fut_report_fn fn, void *ud)
{
    fut__store(&report_ud, (uintptr_t)(fn ? ud : NULL), FUT__RELAXED);
    fut__store(&report_fn, (uintptr_t)fn, FUT__RELEASE);
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
    fut_report_fn fn = (fut_report_fn)fut__load(&report_fn, FUT__ACQUIRE);
    void *ud = (void *)fut__load(&report_ud, FUT__RELAXED);
    (fn ? fn : default_report)(ud, kind, buf);
}

/* ------------------------------------------------------ programming errors */

/* fut__misuse prints "fut: <function>: <what was wrong>", then where the
 * call came from - the caller's symbol and, when the caller was built
 * with -g and addr2line is installed, its file:line - and aborts. It runs
 * only on the way to an abort, so it may fork addr2line. */

/* Writes the caller's file:line (from addr2line) into 'out'; 0 on success. */
static int caller_line(const char *obj, uintptr_t off, char *out, size_t n)
{
    if (getenv("FUT_NO_ADDR2LINE"))
        return -1;
    char cmd[1200];
    /* 'off' is a return address: the call is the byte before it. */
    snprintf(cmd, sizeof cmd,
             "addr2line -C -f -i -e '%s' 0x%" PRIxPTR " 2>/dev/null", obj,
             off - 1);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    /* Pairs of lines (function, file:line), innermost inline first: the
     * last pair is the function that was compiled, the caller's line. */
    char fn[256], loc[512], best[800] = "";
    while (fgets(fn, sizeof fn, p) && fgets(loc, sizeof loc, p)) {
        fn[strcspn(fn, "\n")] = 0;
        loc[strcspn(loc, "\n")] = 0;
        if (loc[0] != '?')
            snprintf(best, sizeof best, "%s at %s", fn, loc);
    }
    pclose(p);
    if (!best[0])
        return -1;
    snprintf(out, n, "%s", best);
    return 0;
}

/* "main at app.c:12", or "main+0x1c in ./app" without line info. */
static void describe_caller(const void *caller, char *out, size_t n)
{
    Dl_info info;
    if (!caller || !dladdr(caller, &info) || !info.dli_fname) {
        snprintf(out, n, "%p", caller);
        return;
    }
    /* A shared object or PIE is linked at 0: its addresses are offsets
     * from its load base. */
    uintptr_t off = (uintptr_t)caller - (uintptr_t)info.dli_fbase;
    /* The main program's name may be relative to a directory the
     * process has left: ask its own link for it. */
    if (caller_line(info.dli_fname, off, out, n) == 0 ||
        caller_line("/proc/self/exe", off, out, n) == 0)
        return;
    if (info.dli_sname)
        snprintf(out, n, "%s+0x%" PRIxPTR " in %s", info.dli_sname,
                 (uintptr_t)caller - (uintptr_t)info.dli_saddr,
                 info.dli_fname);
    else
        snprintf(out, n, "0x%" PRIxPTR " in %s", off, info.dli_fname);
}

__attribute__((noinline)) void fut__misuse(const char *fn, const char *what,
                                           const void *caller)
{
    /* Called from a header's inline function: the return address is in
     * the code the user compiled, where the call was made. */
    if (!caller)
        caller = __builtin_return_address(0);
    char where[900];
    describe_caller(caller, where, sizeof where);
    fprintf(stderr, "fut: %s: %s (called from %s)\n", fn, what, where);
    fflush(stderr);
    abort();
}
