/* SPDX-License-Identifier: MIT */
/* Misuse of the public API (docs/design.md, "Programming errors").
 *
 * null_args walks every FUT_EXTERN function of include/fut/ (the table
 * test/misuse/gen_api_null.py generates at build time) with NULL in each
 * pointer argument that has no documented NULL meaning, each call in a
 * forked child: the child must return an error code, or - a function
 * that cannot report one - abort in debug builds with "fut: <function>:",
 * never crash, hang or draw a sanitizer report. The other cases are the
 * misuses issue 21 found: a runtime freed twice, a join handle copied and
 * dropped after the original, a oneshot sent twice, a cell completed by
 * two owners, and the runtime's lifetime promise (spawn on a freed
 * runtime while a join handle lives); and issue 30's: every call given a
 * runtime, on a freed or never-made one (debug builds abort naming it);
 * and issue 32's foreign fds (fut/fd.h): an fd registered twice, a
 * handle used after its deregistration, its fd closed before it, two
 * waiters for one direction.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "misuse/api_null.h"
#include "test.h"

_Alignas(64) unsigned char blank[12][API_BLANK_SIZE];
void stub_fn(void)
{
}

/* ------------------------------------------------------ child processes */

struct child {
    int status;     /* waitpid's */
    long result;    /* what the call returned (exited normally) */
    int returned;   /* the call returned */
    char out[4096]; /* its stderr (and the result line) */
};

/* Runs fn in a forked child whose stderr is captured; 10 s at most. */
static void run_child(long (*fn)(void *), void *arg, struct child *c)
{
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    fflush(stderr);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(p[0]);
        dup2(p[1], 2);
        alarm(10);
        long r = fn(arg);
        dprintf(2, "\nRESULT %ld\n", r);
        _exit(0); /* no exit handlers: a leak of a misused call is fine */
    }
    close(p[1]);
    size_t n = 0;
    ssize_t k;
    while ((k = read(p[0], c->out + n, sizeof c->out - 1 - n)) > 0 ||
           (k < 0 && errno == EINTR))
        if (k > 0)
            n += (size_t)k;
    c->out[n] = 0;
    close(p[0]);
    ck_assert_int_eq(waitpid(pid, &c->status, 0), pid);
    const char *res = strstr(c->out, "\nRESULT ");
    c->returned = WIFEXITED(c->status) && WEXITSTATUS(c->status) == 0 && res;
    c->result = c->returned ? strtol(res + 8, NULL, 10) : 0;
}

static int sanitizer_report(const char *out)
{
    return strstr(out, "Sanitizer") || strstr(out, "runtime error:");
}

/* The debug abort that names 'fn'. */
static int debug_abort(const struct child *c, const char *fn)
{
    char want[160];
    snprintf(want, sizeof want, "fut: %s: ", fn);
    return WIFSIGNALED(c->status) && WTERMSIG(c->status) == SIGABRT &&
           strstr(c->out, want) && !sanitizer_report(c->out);
}

/* ------------------------------------------------------------- null_args */

static long call_case(void *arg)
{
    return ((const struct api_case *)arg)->call();
}

/* Why case 'a' failed, or NULL. */
static const char *verdict(const struct api_case *a, const struct child *c)
{
    if (sanitizer_report(c->out))
        return "sanitizer report";
    if (debug_abort(c, a->fn))
        return NULL;
    if (!c->returned)
        return WIFSIGNALED(c->status) ? strsignal(WTERMSIG(c->status))
                                      : "exited";
    switch (a->cls) {
    case API_ERR:
        return c->result < 0 ? NULL : "returned no error code";
    case API_VOID:
    case API_NOERR:
#ifdef FUT_DEBUG
        return "returned without the debug abort";
#else
        return NULL; /* release builds: "does what the docs say" */
#endif
    case API_VALUE:
        return NULL;
    }
    return "?";
}

START_TEST(null_args)
{
    setenv("FUT_NO_ADDR2LINE", "1", 1); /* 300 aborts: no addr2line each */
    char failed[1500] = "";
    size_t len = 0;
    int nfail = 0;
    for (int i = 0; i < api_ncases; i++) {
        struct child c;
        run_child(call_case, (void *)&api_cases[i], &c);
        const char *why = verdict(&api_cases[i], &c);
        if (!why)
            continue;
        nfail++;
        char *nl = strchr(c.out, '\n');
        int first = nl ? (int)(nl - c.out) : (int)strlen(c.out);
        fprintf(stderr, "api_misuse: %s(%s = NULL): %s [%.*s]\n",
                api_cases[i].fn, api_cases[i].arg, why,
                first > 160 ? 160 : first, c.out);
        if (len < sizeof failed - 80)
            len +=
                (size_t)snprintf(failed + len, sizeof failed - len, " %s(%s)",
                                 api_cases[i].fn, api_cases[i].arg);
    }
    unsetenv("FUT_NO_ADDR2LINE");
    ck_assert_msg(nfail == 0, "%d of %d NULL-argument calls failed:%s", nfail,
                  api_ncases, failed);
    ck_assert_int_gt(api_ncases, 250); /* the table was generated */
}
END_TEST

/* fut_drop is inline (fut/core.h): it checks in every build. */
static long drop_null_future(void *arg)
{
    struct fut_future zero = {0};
    fut_drop(arg ? &zero : NULL);
    return 0;
}

START_TEST(drop_null_aborts_in_every_build)
{
    struct child c;
    run_child(drop_null_future, NULL, &c);
    ck_assert_msg(debug_abort(&c, "fut_drop"), "%s", c.out);
    ck_assert_msg(strstr(c.out, "the future is NULL"), "%s", c.out);
    run_child(drop_null_future, (void *)1, &c);
    ck_assert_msg(debug_abort(&c, "fut_drop"), "%s", c.out);
    ck_assert_msg(strstr(c.out, "never initialised"), "%s", c.out);
}
END_TEST

/* ------------------------------------------- the runtime's lifetime promise */

/* A task that stays pending until the runtime drops it. */
static struct fut_runtime *lifetime_rt(int mt)
{
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    if (mt) {
        cfg.flavor = FUT_RT_MULTI_THREAD;
        cfg.workers = 2;
    }
    struct fut_runtime *rt;
    ASSERT_EQ(fut_runtime_new(&cfg, &rt), 0);
    return rt;
}

static void free_with_live_join(int mt)
{
    struct fut_runtime *rt = lifetime_rt(mt);
    struct fut_pending p;
    fut_pending_init(&p);
    struct fut_join j;
    ASSERT_EQ(fut_spawn(rt, &p, sizeof p, &j), 0);
    fut_runtime_free(rt); /* drops the task; 'j' keeps the memory alive */
    struct fut_pending p2;
    fut_pending_init(&p2);
    struct fut_join j2;
    ASSERT_EQ(fut_spawn(rt, &p2, sizeof p2, &j2), FUT_ESHUTDOWN);
    fut_drop(&j2.base); /* an empty handle */
    ASSERT_EQ(fut_spawn(rt, &p2, sizeof p2, NULL), FUT_ESHUTDOWN);
    if (!mt)
        ASSERT_EQ(fut_block_on(rt, &j.base), FUT_ESHUTDOWN);
    ASSERT_EQ(fut_block_on(NULL, &j.base), 0);
    ASSERT_EQ(j.result, FUT_ECANCELED);
    fut_drop(&j.base); /* the last reference: the runtime's memory goes */
}

START_TEST(free_with_live_join_ct)
{
    free_with_live_join(0);
}
END_TEST

START_TEST(free_with_live_join_mt)
{
    free_with_live_join(1);
}
END_TEST

/* Two completers of one cell are its contract, not a misuse (C2: racing
 * completers get one winner): the second is told FUT_ELOST and keeps its
 * value, in every build. A oneshot has one sender: see below. */
START_TEST(cell_second_completer_loses)
{
    int slot = 0;
    struct fut_cell cell;
    fut_cell_init(&cell, &slot, sizeof slot);
    int a = 1, b = 2;
    ASSERT_EQ(fut_cell_complete(&cell, &a), 0);
    ASSERT_EQ(fut_cell_complete(&cell, &b), FUT_ELOST);
    int out = 0;
    ASSERT_EQ(fut_cell_take(&cell, &out), 1);
    ASSERT_EQ(out, 1);
}
END_TEST

/* A consumed oneshot sender: FUT_EINVAL in release builds, the debug
 * abort in debug builds (below). */
static long oneshot_consumed(void *arg)
{
    (void)arg;
    struct fut_oneshot_tx tx;
    struct fut_oneshot_rx rx;
    fut_oneshot_new(sizeof(int), NULL, &tx, &rx);
    int v = 1;
    fut_oneshot_send(&tx, &v);
    long r = fut_oneshot_send(&tx, &v);
    fut_oneshot_rx_drop(&rx);
    return r;
}

START_TEST(oneshot_send_on_consumed_sender)
{
    struct child c;
    run_child(oneshot_consumed, NULL, &c);
#ifdef FUT_DEBUG
    ck_assert_msg(debug_abort(&c, "fut_oneshot_send"), "%s", c.out);
    ck_assert_msg(strstr(c.out, "sends once"), "%s", c.out);
#else
    ck_assert_msg(c.returned && c.result == FUT_EINVAL, "%s", c.out);
#endif
}
END_TEST

/* --------------------------------------------- debug aborts for misuse */

#ifdef FUT_DEBUG
static long free_twice(void *arg)
{
    struct fut_runtime *rt = lifetime_rt(0);
    struct fut_pending p;
    fut_pending_init(&p);
    struct fut_join j;
    if (arg) /* a live join handle keeps the runtime's memory */
        fut_spawn(rt, &p, sizeof p, &j);
    fut_runtime_free(rt);
    fut_runtime_free(rt);
    return 0;
}

START_TEST(runtime_freed_twice)
{
    struct child c;
    run_child(free_twice, NULL, &c);
    ck_assert_msg(debug_abort(&c, "fut_runtime_free"), "%s", c.out);
    run_child(free_twice, (void *)1, &c);
    ck_assert_msg(debug_abort(&c, "fut_runtime_free"), "%s", c.out);
}
END_TEST

static long join_copy(void *arg)
{
    struct fut_runtime *rt = lifetime_rt(arg != NULL);
    struct fut_pending p;
    fut_pending_init(&p);
    struct fut_join j;
    fut_spawn(rt, &p, sizeof p, &j);
    struct fut_join copy = j; /* a handle must not be copied */
    fut_drop(&j.base);
    fut_drop(&copy.base);
    return 0;
}

START_TEST(join_copy_dropped_after_original)
{
    struct child c;
    run_child(join_copy, NULL, &c);
    ck_assert_msg(debug_abort(&c, "fut_drop (a join handle)"), "%s", c.out);
    run_child(join_copy, (void *)1, &c);
    ck_assert_msg(debug_abort(&c, "fut_drop (a join handle)"), "%s", c.out);
}
END_TEST

static long oneshot_twice(void *arg)
{
    (void)arg;
    struct fut_oneshot_tx tx;
    struct fut_oneshot_rx rx;
    fut_oneshot_new(sizeof(int), NULL, &tx, &rx);
    struct fut_oneshot_tx copy = tx;
    int v = 1;
    fut_oneshot_send(&tx, &v);
    return fut_oneshot_send(&copy, &v);
}

START_TEST(oneshot_sent_twice)
{
    struct child c;
    run_child(oneshot_twice, NULL, &c);
    ck_assert_msg(debug_abort(&c, "fut_oneshot_send"), "%s", c.out);
}
END_TEST

static long mpsc_copy(void *arg)
{
    struct fut_mpsc_tx tx;
    struct fut_mpsc_rx rx;
    fut_mpsc_new(4, sizeof(int), NULL, &tx, &rx);
    if (arg) { /* the receiver, copied */
        struct fut_mpsc_rx copy = rx;
        fut_mpsc_rx_drop(&rx);
        fut_mpsc_rx_drop(&copy);
    } else {
        struct fut_mpsc_tx copy = tx;
        fut_mpsc_tx_drop(&tx);
        int v = 1;
        return fut_mpsc_try_send(&copy, &v);
    }
    return 0;
}

START_TEST(mpsc_handle_copy_used_after_original)
{
    struct child c;
    run_child(mpsc_copy, NULL, &c);
    ck_assert_msg(debug_abort(&c, "fut_mpsc_try_send"), "%s", c.out);
    run_child(mpsc_copy, (void *)1, &c);
    ck_assert_msg(debug_abort(&c, "fut_mpsc_rx_drop"), "%s", c.out);
}
END_TEST

static long bcast_watch_copy(void *arg)
{
    int v = 1;
    if (arg) { /* a watch sender, copied */
        struct fut_watch_tx tx;
        struct fut_watch_rx rx;
        fut_watch_new(sizeof v, &v, &tx, &rx);
        struct fut_watch_tx copy = tx;
        fut_watch_tx_drop(&tx);
        return fut_watch_send(&copy, &v);
    }
    struct fut_broadcast_tx tx; /* a broadcast receiver, copied */
    struct fut_broadcast_rx rx;
    fut_broadcast_new(4, sizeof v, &tx, &rx);
    struct fut_broadcast_rx copy = rx;
    fut_broadcast_rx_drop(&rx);
    fut_broadcast_rx_drop(&copy);
    return 0;
}

START_TEST(broadcast_watch_copy_used_after_original)
{
    struct child c;
    run_child(bcast_watch_copy, NULL, &c);
    ck_assert_msg(debug_abort(&c, "fut_broadcast_rx_drop"), "%s", c.out);
    run_child(bcast_watch_copy, (void *)1, &c);
    ck_assert_msg(debug_abort(&c, "fut_watch_send"), "%s", c.out);
}
END_TEST

/* Every public call given a runtime checks it against the registry of
 * live runtimes (src/platform/handles.c) before reading it: a runtime
 * freed with no join handle alive (its memory gone) is an abort naming
 * the call - never a read of freed memory (ASan would report one before
 * the abort: debug_abort() fails on a sanitizer report). */
static intptr_t fiber_fn(void *arg)
{
    return (intptr_t)arg;
}

static long use_rt(struct fut_runtime *rt, int call)
{
    struct fut_pending p;
    fut_pending_init(&p);
    struct fut_join j;
    struct fut_rt_stats st;
    struct fut_scope sc;
    char buf[64];
    switch (call) {
    case 0:
        return fut_spawn(rt, &p, sizeof p, &j);
    case 1:
        return fut_spawn(rt, &p, sizeof p, NULL);
    case 2:
        return fut_block_on(rt, &p.base);
    case 3:
        fut_runtime_free(rt);
        return 0;
    case 4:
        fut_runtime_stats(rt, &st);
        return 0;
    case 5:
        return fut_runtime_workers(rt);
    case 6:
        return fut_runtime_worker_stats(rt, 0, &st);
    case 7:
        return (long)(intptr_t)fut_runtime_backend(rt);
    case 8:
        return fut_runtime_dump(rt, buf, sizeof buf);
    case 9:
        return fut_fiber_spawn(rt, fiber_fn, NULL, NULL, &j);
    case 10:
        return fut_fiber_run(rt, fiber_fn, NULL, NULL, NULL);
    case 11:
        fut_scope_init(&sc, rt, FUT_SCOPE_SUPERVISE);
        return 0;
    }
    return 0;
}

static const char *const rt_calls[] = {
    "fut_spawn_at",
    "fut_spawn_at",
    "fut_block_on",
    "fut_runtime_free",
    "fut_runtime_stats",
    "fut_runtime_workers",
    "fut_runtime_worker_stats",
    "fut_runtime_backend",
    "fut_runtime_dump",
    "fut_fiber_spawn_at",
    "fut_fiber_run_at",
    "fut_scope_init",
};
#define N_RT_CALLS (int)(sizeof rt_calls / sizeof rt_calls[0])

/* arg: call * 4 + how (bit 0: multi-thread; bit 1: never made). */
static long freed_rt_call(void *arg)
{
    long a = (long)(intptr_t)arg;
    if (a & 2) { /* a pointer fut_runtime_new never returned */
        static _Alignas(64) unsigned char fake[256];
        return use_rt((struct fut_runtime *)(void *)fake, (int)(a >> 2));
    }
    struct fut_runtime *rt = lifetime_rt(a & 1);
    fut_runtime_free(rt); /* no join handle: its memory goes */
    return use_rt(rt, (int)(a >> 2));
}

START_TEST(freed_runtime_calls_abort)
{
    setenv("FUT_NO_ADDR2LINE", "1", 1);
    for (long call = 0; call < N_RT_CALLS; call++)
        for (long how = 0; how < 3; how++) {
            struct child c;
            run_child(freed_rt_call, (void *)(intptr_t)(call * 4 + how), &c);
            ck_assert_msg(debug_abort(&c, rt_calls[call]) &&
                              strstr(c.out, "not a live runtime"),
                          "%s (mt %ld, made %d): %s", rt_calls[call], how & 1,
                          !(how & 2), c.out);
        }
    unsetenv("FUT_NO_ADDR2LINE");
}
END_TEST

/* Freed while a join handle keeps its memory: the spawns (fut_spawn,
 * fut_fiber_spawn, fut_fiber_run) and fut_block_on answer FUT_ESHUTDOWN
 * (free_with_live_join), every other call aborts. */
static long kept_rt_call(void *arg)
{
    struct fut_runtime *rt = lifetime_rt(0);
    struct fut_pending p;
    fut_pending_init(&p);
    struct fut_join j;
    fut_spawn(rt, &p, sizeof p, &j);
    fut_runtime_free(rt);
    return use_rt(rt, (int)(intptr_t)arg);
}

START_TEST(kept_runtime_calls_abort)
{
    setenv("FUT_NO_ADDR2LINE", "1", 1);
    for (long call = 0; call < N_RT_CALLS; call++) {
        struct child c;
        run_child(kept_rt_call, (void *)(intptr_t)call, &c);
        if (call < 3 || call == 9 || call == 10) {
            ck_assert_msg(c.returned && c.result == FUT_ESHUTDOWN, "%s: %s",
                          rt_calls[call], c.out);
            continue;
        }
        ck_assert_msg(debug_abort(&c, rt_calls[call]) &&
                          strstr(c.out, call == 3 ? "freed already"
                                                  : "was freed already"),
                      "%s: %s", rt_calls[call], c.out);
    }
    unsetenv("FUT_NO_ADDR2LINE");
}
END_TEST

/* The message names the caller's file and line when addr2line can. */
static long drop_null(void *arg)
{
    (void)arg;
    fut_join_abort(NULL); /* this line is what the message must name */
    return 0;
}

START_TEST(abort_names_caller)
{
    if (system("command -v addr2line >/dev/null 2>&1") != 0)
        return; /* binutils absent: the symbol is named instead */
    struct child c;
    run_child(drop_null, NULL, &c);
    ck_assert_msg(debug_abort(&c, "fut_join_abort"), "%s", c.out);
    ck_assert_msg(strstr(c.out, "api_misuse.c:"), "no caller line: %s",
                  c.out);
}
END_TEST
/* Foreign fds (fut/fd.h): an fd registered twice, a handle used after
 * its deregistration (its memory kept by a future over it, so the check
 * reads live memory), deregistered twice, its fd closed before the
 * deregistration, two futures waiting for one direction. */
struct fd_misuse {
    int which, fd;
};

static intptr_t fd_misuse_body(void *p)
{
    struct fd_misuse *m = p;
    struct fut_fd *h, *h2;
    if (fut_fd_register(m->fd, &h) != 0)
        return -1;
    struct fut_fd_ready a, b;
    struct fut_context cx;
    fut_context_init(&cx, fut_waker_noop());
    switch (m->which) {
    case 0:
        return fut_fd_register(m->fd, &h2);
    case 1:
        fut_fd_ready_init(&a, h, FUT_FD_READABLE);
        fut_fd_deregister(h);
        fut_fd_clear_ready(h, FUT_FD_READABLE, 0);
        return 0;
    case 2:
        fut_fd_ready_init(&a, h, FUT_FD_READABLE);
        fut_fd_deregister(h);
        fut_fd_deregister(h);
        return 0;
    case 3:
        close(m->fd); /* before its deregistration */
        fut_fd_deregister(h);
        return 0;
    default:
        fut_fd_ready_init(&a, h, FUT_FD_READABLE);
        fut_fd_ready_init(&b, h, FUT_FD_READABLE | FUT_FD_WRITABLE);
        fut_poll(&a.base, &cx);
        return fut_poll(&b.base, &cx);
    }
}

static long fd_misuse(void *arg)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0)
        return -1;
    struct fd_misuse m = {(int)(intptr_t)arg, sv[0]};
    struct fut_runtime *rt = lifetime_rt(0);
    struct fut_lazy l;
    fut_lazy_init(&l, fd_misuse_body, &m);
    fut_block_on(rt, &l.base);
    return (long)l.value;
}

START_TEST(fd_misuse_aborts)
{
    static const char *const fn[] = {"fut_fd_register", "fut_fd_clear_ready",
                                     "fut_fd_deregister", "fut_fd_deregister",
                                     "fut_poll (fut_fd_ready)"};
    for (int i = 0; i < 5; i++) {
        struct child c;
        run_child(fd_misuse, (void *)(intptr_t)i, &c);
        ck_assert_msg(debug_abort(&c, fn[i]), "case %d: %s", i, c.out);
    }
}
END_TEST
#endif /* FUT_DEBUG */

static Suite *suite(void)
{
    Suite *s = suite_create("api_misuse");
    TCase *tc = fut_test_tcase(s, "null_args");
    tcase_add_test(tc, null_args);
    tcase_add_test(tc, drop_null_aborts_in_every_build);
    tc = fut_test_tcase(s, "lifetime");
    tcase_add_test(tc, free_with_live_join_ct);
    tcase_add_test(tc, free_with_live_join_mt);
    tcase_add_test(tc, cell_second_completer_loses);
    tcase_add_test(tc, oneshot_send_on_consumed_sender);
#ifdef FUT_DEBUG
    tc = fut_test_tcase(s, "debug_aborts");
    tcase_add_test(tc, runtime_freed_twice);
    tcase_add_test(tc, join_copy_dropped_after_original);
    tcase_add_test(tc, oneshot_sent_twice);
    tcase_add_test(tc, mpsc_handle_copy_used_after_original);
    tcase_add_test(tc, broadcast_watch_copy_used_after_original);
    tcase_add_test(tc, abort_names_caller);
    tcase_add_test(tc, freed_runtime_calls_abort);
    tcase_add_test(tc, kept_runtime_calls_abort);
    tcase_add_test(tc, fd_misuse_aborts);
#endif
    return s;
}

int main(void)
{
    return fut_test_run(suite());
}
