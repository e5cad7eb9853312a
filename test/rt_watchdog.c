/* SPDX-License-Identifier: MIT */
/* The long-poll watchdog (src/rt/watchdog.c, rt.h's slow_poll_ns and
 * FUT_WATCHDOG_MS): a poll that runs past the threshold is reported while
 * it runs, naming the task as the user named it (a future's vtable name,
 * a fiber's name, a scope child's future) and the thread polling it, and
 * a task dump made meanwhile shows it. Every case sets FUT_WATCHDOG_MS=50,
 * so release builds run the watchdog too; the .mt variants run on two
 * workers. Timing is generous: a report must come before the poll ends,
 * and a poll spins until it came (at least 300 ms, at most 20 s). */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define MS (1000LL * 1000)
#define SPIN_MIN (300 * MS)
#define SPIN_MAX (20000 * MS)

/* ------------------------------------------------------ report capture */

static atomic_int spinning; /* a spinner is inside its poll */
static atomic_int hold;     /* spinners wait for 'dumped' too */
static atomic_int dumped;   /* the waiting dumper is done */
static atomic_int during;   /* reports naming 'want' while it was */
static pthread_mutex_t msg_lock = PTHREAD_MUTEX_INITIALIZER;
/* Under msg_lock: the name the case expects ("'spinner'"); the first
 * long-poll report naming it while it spun, and the first of any task
 * (for the failure message: another task's poll may be long too on a
 * loaded machine); a slow-poll report naming it (debug builds), and the
 * last of any task. */
static const char *want = "";
static char first_msg[512], first_any[512];
static char slow_msg[512], slow_any[512];

static void capture(void *ud, const char *kind, const char *msg)
{
    (void)ud;
    pthread_mutex_lock(&msg_lock);
    int named = strstr(msg, want) != NULL;
    if (strcmp(kind, "slow-poll") == 0) {
        snprintf(slow_any, sizeof slow_any, "%s", msg);
        if (named)
            snprintf(slow_msg, sizeof slow_msg, "%s", msg);
    }
    if (strcmp(kind, "long-poll") == 0 && atomic_load(&spinning)) {
        if (!first_any[0])
            snprintf(first_any, sizeof first_any, "%s", msg);
        if (named && atomic_load(&during) == 0)
            snprintf(first_msg, sizeof first_msg, "%s", msg);
        if (named)
            atomic_fetch_add(&during, 1);
    }
    pthread_mutex_unlock(&msg_lock);
}

/* A runtime (fut_test_rt) with the watchdog at 50 ms, reports captured;
 * 'name' is what the case expects them to call the long poll. */
static struct fut_runtime *watched_rt(const char *name)
{
    setenv("FUT_WATCHDOG_MS", "50", 1);
    atomic_store(&spinning, 0);
    atomic_store(&during, 0);
    atomic_store(&hold, 0);
    atomic_store(&dumped, 0);
    pthread_mutex_lock(&msg_lock);
    want = name;
    first_msg[0] = first_any[0] = slow_msg[0] = slow_any[0] = 0;
    pthread_mutex_unlock(&msg_lock);
    fut_set_report_hook(capture, NULL);
    return fut_test_rt();
}

static void watched_rt_free(struct fut_runtime *rt)
{
    fut_runtime_free(rt);
    fut_set_report_hook(NULL, NULL);
    unsetenv("FUT_WATCHDOG_MS");
}

/* Spins (a poll that blocks: what the watchdog is for) for SPIN_MIN and
 * until a report came (and, with 'hold', a dump was made), at most
 * SPIN_MAX. */
static void spin(void)
{
    int64_t t0 = fut_now_ns();
    atomic_store(&spinning, 1);
    for (;;) {
        int64_t d = fut_now_ns() - t0;
        int held = atomic_load(&hold) && !atomic_load(&dumped);
        if (d >= SPIN_MAX ||
            (d >= SPIN_MIN && atomic_load(&during) > 0 && !held))
            break;
    }
    atomic_store(&spinning, 0);
}

/* The first report naming the task, checked: the thread, an elapsed
 * time at least the threshold, the spawn site (debug builds). */
static void check_report(void)
{
    char msg[512], any[512], slow[512], slow_other[512];
    pthread_mutex_lock(&msg_lock);
    snprintf(msg, sizeof msg, "%s", first_msg);
    snprintf(any, sizeof any, "%s", first_any);
    snprintf(slow, sizeof slow, "%s", slow_msg);
    snprintf(slow_other, sizeof slow_other, "%s", slow_any);
    const char *name = want;
    pthread_mutex_unlock(&msg_lock);
    ck_assert_msg(any[0], "no long-poll report while the poll ran");
    ck_assert_msg(msg[0], "no long-poll report names %s; the first: %s", name,
                  any);
    ck_assert_msg(!strstr(msg, "'scope_child'"), "wrapper named: %s", msg);
    if (fut_test_rt_is_mt())
        ck_assert_msg(strstr(msg, "on worker "), "no worker: %s", msg);
    else
        ck_assert_msg(strstr(msg, "on the runtime's thread"), "no thread: %s",
                      msg);
    const char *p = strstr(msg, "in one poll for ");
    ck_assert_msg(p, "no elapsed time: %s", msg);
    long ms = strtol(p + strlen("in one poll for "), NULL, 10);
    ck_assert_msg(ms >= 50, "elapsed %ld ms < the threshold: %s", ms, msg);
#ifdef FUT_DEBUG
    ck_assert_msg(strstr(msg, "rt_watchdog.c:"), "no spawn site: %s", msg);
    /* The report after the poll names it the same way (the fiber had
     * returned by then: its name was taken before the poll). */
    ck_assert_msg(slow[0], "no slow-poll report names %s; the last: %s", name,
                  slow_other);
#else
    (void)slow;
    (void)slow_other;
#endif
}

/* Threads of this process named 'comm' (/proc/self/task/N/comm). */
static int threads_named(const char *comm)
{
    DIR *d = opendir("/proc/self/task");
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char path[300], name[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = e->d_name[0] != '.' ? fopen(path, "r") : NULL;
        if (!f)
            continue;
        if (fgets(name, sizeof name, f))
            name[strcspn(name, "\n")] = 0;
        fclose(f);
        n += !strcmp(name, comm);
    }
    closedir(d);
    return n;
}

/* One thread watches a runtime: its own watchdog thread, or on two
 * workers the monitor, which hosts the watchdog's scans. */
static void check_threads(void)
{
    if (fut_test_rt_is_mt()) {
        ck_assert_int_eq(threads_named("fut-watchdog"), 0);
        ck_assert_int_eq(threads_named("fut-monitor"), 1);
    } else {
        ck_assert_int_eq(threads_named("fut-watchdog"), 1);
    }
}

/* ------------------------------------------------------------- spinner */

struct spinner {
    struct fut_future base;
};

static int spinner_poll(struct fut_future *f, struct fut_context *cx)
{
    (void)f;
    (void)cx;
    spin();
    return FUT_READY;
}

static const struct fut_future_vtable spinner_vt = {spinner_poll, NULL,
                                                    "spinner", NULL};

static void run_spawned(struct fut_runtime *rt, struct fut_future *f,
                        size_t size)
{
    struct fut_join j;
    ASSERT_EQ(fut_spawn(rt, f, size, &j), 0);
    ASSERT_EQ(fut_block_on(rt, &j.base), 0);
    ASSERT_EQ(j.result, 0);
    fut_drop(&j.base);
}

START_TEST(long_poll_reported)
{
    struct fut_runtime *rt = watched_rt("'spinner'");
    struct spinner s;
    fut_future_init(&s.base, &spinner_vt);
    run_spawned(rt, &s.base, sizeof s);
    check_report();
    check_threads();
    watched_rt_free(rt);
}
END_TEST

/* ------------------------------------------------------ names: fibers */

static intptr_t fiber_spin(void *arg)
{
    (void)arg;
    spin();
    return 7;
}

START_TEST(fiber_reported_by_name)
{
    struct fut_runtime *rt = watched_rt("'blocking-fiber'");
    struct fut_fiber_opts o;
    fut_fiber_opts_init(&o);
    o.name = "blocking-fiber";
    intptr_t v = 0;
    ASSERT_EQ(fut_fiber_run(rt, fiber_spin, NULL, &o, &v), 0);
    ASSERT_EQ(v, 7);
    check_report();
    watched_rt_free(rt);
}
END_TEST

/* ------------------------------------------------- names: scope children */

struct owner {
    struct fut_future base;
    struct fut_scope scope;
};

static int owner_poll(struct fut_future *f, struct fut_context *cx)
{
    struct owner *o = (struct owner *)f;
    FUT_BEGIN(f);
    fut_scope_init(&o->scope, NULL, FUT_SCOPE_FAIL_FAST);
    {
        struct spinner s;
        fut_future_init(&s.base, &spinner_vt);
        ck_assert_int_eq(fut_scope_spawn(&o->scope, &s, sizeof s, NULL), 0);
    }
    FUT_AWAIT(f, &o->scope);
    fut_drop(&o->scope.base);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(owner_vt, "owner", owner_poll, NULL);

START_TEST(scope_child_reported_by_name)
{
    struct fut_runtime *rt = watched_rt("'spinner'");
    struct owner o;
    memset(&o, 0, sizeof o);
    fut_future_init(&o.base, &owner_vt);
    run_spawned(rt, &o.base, sizeof o);
    check_report();
    watched_rt_free(rt);
}
END_TEST

/* ------------------------------------------------------------ the dump */

static char dump_buf[16384];
static long dump_r;

/* Current-thread: the long poll dumps the runtime itself, once the
 * watchdog reported it. */
static int self_dumper_poll(struct fut_future *f, struct fut_context *cx)
{
    (void)f;
    (void)cx;
    spin();
    dump_r = fut_runtime_dump(NULL, dump_buf, sizeof dump_buf);
    return FUT_READY;
}

static const struct fut_future_vtable self_dumper_vt = {
    self_dumper_poll, NULL, "self_dumper", NULL};

/* Multi-thread: the block_on thread dumps while a worker spins. */
struct waiting_dumper {
    struct fut_future base;
};

static int waiting_dumper_poll(struct fut_future *f, struct fut_context *cx)
{
    (void)f;
    (void)cx;
    int64_t t0 = fut_now_ns();
    while (atomic_load(&during) == 0 && fut_now_ns() - t0 < SPIN_MAX) {
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    dump_r = fut_runtime_dump(NULL, dump_buf, sizeof dump_buf);
    atomic_store(&dumped, 1); /* the spinner may return now */
    return FUT_READY;
}

static const struct fut_future_vtable waiting_dumper_vt = {
    waiting_dumper_poll, NULL, "waiting_dumper", NULL};

START_TEST(dump_shows_long_poll)
{
    const char *name = fut_test_rt_is_mt() ? "'spinner'" : "'self_dumper'";
    struct fut_runtime *rt = watched_rt(name);
    dump_r = 0;
    dump_buf[0] = 0;
    if (fut_test_rt_is_mt()) {
        atomic_store(&hold, 1); /* it spins until the dump is made */
        struct spinner s;
        fut_future_init(&s.base, &spinner_vt);
        struct fut_join j;
        ASSERT_EQ(fut_spawn(rt, &s, sizeof s, &j), 0);
        struct waiting_dumper d;
        fut_future_init(&d.base, &waiting_dumper_vt);
        ASSERT_EQ(fut_block_on(rt, &d.base), 0);
        ASSERT_EQ(fut_block_on(rt, &j.base), 0);
        fut_drop(&j.base);
    } else {
        struct spinner s;
        fut_future_init(&s.base, &self_dumper_vt);
        run_spawned(rt, &s.base, sizeof s);
    }
    ck_assert_msg(dump_r > 0, "dump failed: %ld", dump_r);
    const char *line = strstr(dump_buf, name);
    ck_assert_msg(line, "%s not in the dump:\n%s", name, dump_buf);
    const char *mark = strstr(line, "[in a long poll for ");
    const char *eol = strchr(line, '\n');
    ck_assert_msg(mark && (!eol || mark < eol),
                  "the long poll is not marked:\n%s", dump_buf);
    long ms = strtol(mark + strlen("[in a long poll for "), NULL, 10);
    ck_assert_msg(ms >= 50, "elapsed %ld ms:\n%s", ms, dump_buf);
    ck_assert_msg(
        strstr(mark, fut_test_rt_is_mt() ? "on worker " : "on the runtime's"),
        "no thread:\n%s", dump_buf);
    watched_rt_free(rt);
}
END_TEST

/* A fiber is dumped under its name. */
static intptr_t fiber_dump(void *arg)
{
    (void)arg;
    dump_r = fut_runtime_dump(NULL, dump_buf, sizeof dump_buf);
    return 0;
}

START_TEST(dump_names_fiber)
{
    struct fut_runtime *rt = watched_rt("'named-fiber'");
    struct fut_fiber_opts o;
    fut_fiber_opts_init(&o);
    o.name = "named-fiber";
    intptr_t v;
    ASSERT_EQ(fut_fiber_run(rt, fiber_dump, NULL, &o, &v), 0);
    ck_assert_msg(dump_r > 0, "dump failed: %ld", dump_r);
    ck_assert_msg(strstr(dump_buf, "'named-fiber'"),
                  "the fiber's task is not named:\n%s", dump_buf);
    ck_assert_msg(!strstr(dump_buf, "'fiber'"), "named 'fiber':\n%s",
                  dump_buf);
    watched_rt_free(rt);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rt_watchdog");
    TCase *tc = fut_test_tcase(s, "report");
    tcase_add_test(tc, long_poll_reported);
    tc = fut_test_tcase(s, "names");
    tcase_add_test(tc, fiber_reported_by_name);
    tcase_add_test(tc, scope_child_reported_by_name);
    tcase_add_test(tc, dump_names_fiber);
    tc = fut_test_tcase(s, "dump");
    tcase_add_test(tc, dump_shows_long_poll);
    return fut_test_run(s);
}
