/* SPDX-License-Identifier: MIT */
/* Fibers (include/fut/fiber.h): spawn (runtime and scope), fn's value as
 * the task's result, fut_await under every kind of fut future (timeout,
 * select, channels, sync, scopes, I/O), the wrappers, misuse, cancel
 * (abort, drop before the first poll, scope cancel, the dump of a fiber
 * that keeps awaiting), the stack pool, the guard page, migration
 * between workers. Cases in MT_CASES run on both runtimes. */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fiber/fiber_internal.h"
#include "rt/rt_internal.h"
#include "test.h"

#define MS (1000LL * 1000)

static struct fut_runtime *rt;

static void rt_free(void)
{
    fut_runtime_free(rt);
    rt = NULL;
}

/* ------------------------------------------------------------- basics */

static intptr_t add_one(void *arg)
{
    return (intptr_t)arg + 1;
}

static intptr_t spawner(void *arg)
{
    (void)arg;
    struct fut_join j[8];
    for (intptr_t i = 0; i < 8; i++)
        ck_assert_int_eq(
            fut_fiber_spawn(NULL, add_one, (void *)i, NULL, &j[i]), 0);
    intptr_t sum = 0;
    for (int i = 0; i < 8; i++) {
        intptr_t v = -1;
        ck_assert_int_eq(fut_fiber_join(&j[i], &v), 0);
        ck_assert_int_eq(v, i + 1);
        sum += v;
    }
    return sum;
}

START_TEST(basic)
{
    rt = fut_test_rt();
    intptr_t v = 0;
    ASSERT_EQ(fut_fiber_run(rt, add_one, (void *)41, NULL, &v), 0);
    ASSERT_EQ(v, 42);
    ASSERT_EQ(fut_fiber_run(rt, spawner, NULL, NULL, &v), 0);
    ASSERT_EQ(v, 36);
    /* An ordinary join handle: block_on it, read the value. */
    struct fut_join j;
    ASSERT_EQ(fut_fiber_spawn(rt, add_one, (void *)6, NULL, &j), 0);
    ASSERT_EQ(fut_block_on(rt, &j.base), 0);
    ASSERT_EQ(j.result, 0);
    ASSERT_EQ(fut_fiber_value(&j), 7);
    fut_drop(&j.base);
    /* Bad input: a clear code, nothing spawned, nothing leaked. */
    ASSERT_EQ(fut_fiber_spawn(rt, NULL, NULL, NULL, &j), FUT_EINVAL);
    fut_drop(&j.base);
    rt_free();
    ASSERT_EQ(fut_fiber_spawn(NULL, add_one, NULL, NULL, NULL), FUT_EINVAL);
}
END_TEST

/* ------------------------------------------- every kind of future */

static intptr_t sleeper(void *arg)
{
    int64_t t0 = fut_time_now();
    ck_assert_int_eq(fut_sleep((int64_t)(intptr_t)arg), 0);
    return (intptr_t)((fut_time_now() - t0) / MS);
}

static intptr_t kinds(void *arg)
{
    (void)arg;
    /* time: a sleep of 20 ms takes at least 20 ms. */
    struct fut_join sj;
    ck_assert_int_eq(
        fut_fiber_spawn(NULL, sleeper, (void *)(20 * MS), NULL, &sj), 0);
    intptr_t slept = 0;
    ck_assert_int_eq(fut_fiber_join(&sj, &slept), 0);
    ck_assert(slept >= 20);
    /* timeout: a pending future times out and is dropped (C13); a ready
     * one completes. */
    struct fut_pending p;
    fut_pending_init(&p);
    ck_assert_int_eq(fut_timeout_await(&p, 5 * MS), FUT_ETIMEDOUT);
    ck_assert(p.base.flags & FUT_F_DROPPED);
    struct fut_ready r;
    fut_ready_init(&r, 9);
    ck_assert_int_eq(fut_timeout_await(&r, 5 * MS), 0);
    ck_assert_int_eq(r.value, 9);
    /* select: a sleep against a pending future; the sleep wins. */
    struct fut_sleep s;
    fut_sleep_init(&s, 2 * MS);
    fut_pending_init(&p);
    struct fut_select2 sel;
    fut_select2_init(&sel, &p.base, &s.base, FUT_SELECT_FAIR);
    ck_assert_int_eq(fut_await(&sel), 0);
    ck_assert_int_eq(sel.winner, 1);
    /* sync: a mutex held by this fiber, then free. */
    struct fut_mutex m;
    fut_mutex_init(&m);
    struct fut_mutex_lock lk;
    fut_mutex_lock_init(&lk, &m);
    ck_assert_int_eq(fut_await(&lk), 0);
    ck_assert(fut_mutex_is_locked(&m));
    ck_assert_int_eq(fut_mutex_unlock(&lk.guard), 0);
    fut_mutex_fini(&m);
    /* scope: fiber children, awaited as the scope future. */
    struct fut_scope sc;
    fut_scope_init(&sc, NULL, FUT_SCOPE_FAIL_FAST);
    for (intptr_t i = 0; i < 4; i++)
        ck_assert_int_eq(fut_scope_fiber_spawn(&sc, add_one, (void *)i, NULL),
                         0);
    ck_assert_int_eq(fut_await(&sc), 0);
    ck_assert_int_eq(sc.result, 0);
    ck_assert_int_eq(sc.spawned, 4);
    return 1;
}

START_TEST(await_kinds)
{
    rt = fut_test_rt();
    intptr_t v = 0;
    ASSERT_EQ(fut_fiber_run(rt, kinds, NULL, NULL, &v), 0);
    ASSERT_EQ(v, 1);
    rt_free();
}
END_TEST

/* channels: a producer fiber and a consumer fiber on a bounded mpsc of
 * capacity 2 (the producer waits for room: fut_send suspends). */
struct chan_pair {
    struct fut_mpsc_tx tx;
    struct fut_mpsc_rx rx;
};

static intptr_t producer(void *arg)
{
    struct chan_pair *c = arg;
    for (int i = 1; i <= 100; i++)
        ck_assert_int_eq(fut_send(&c->tx, &i), 0);
    fut_mpsc_tx_drop(&c->tx);
    return 0;
}

static intptr_t consumer(void *arg)
{
    struct chan_pair *c = arg;
    intptr_t sum = 0;
    int v, r;
    while ((r = fut_recv(&c->rx, &v)) == 0)
        sum += v;
    ck_assert_int_eq(r, FUT_ECLOSED);
    return sum;
}

START_TEST(channels)
{
    rt = fut_test_rt();
    struct chan_pair c;
    ASSERT_EQ(fut_mpsc_new(2, sizeof(int), NULL, &c.tx, &c.rx), 0);
    struct fut_join jp, jc;
    ASSERT_EQ(fut_fiber_spawn(rt, producer, &c, NULL, &jp), 0);
    ASSERT_EQ(fut_fiber_spawn(rt, consumer, &c, NULL, &jc), 0);
    ASSERT_EQ(fut_block_on(rt, &jc.base), 0);
    ASSERT_EQ(fut_fiber_value(&jc), 5050);
    ASSERT_EQ(fut_block_on(rt, &jp.base), 0);
    fut_drop(&jp.base);
    fut_drop(&jc.base);
    fut_mpsc_rx_drop(&c.rx);
    rt_free();
}
END_TEST

/* I/O: a TCP echo between fibers (fut_accept, fut_connect, fut_read,
 * fut_write_all), 200 KiB through a 4 KiB buffer. */
#define IO_BYTES (200 * 1024)

static intptr_t echo_srv(void *arg)
{
    struct fut_io *ln = arg, *c = NULL;
    ck_assert_int_eq(fut_accept(ln, &c), 0);
    char buf[4096];
    ssize_t n, total = 0;
    while ((n = fut_read(c, buf, sizeof buf)) > 0) {
        ck_assert_int_eq(fut_write_all(c, buf, (size_t)n), n);
        total += n;
    }
    fut_io_close(c);
    return total;
}

static intptr_t echo_cli_reader(void *arg)
{
    struct fut_io *rd = arg;
    char buf[1000];
    ssize_t n, total = 0;
    while ((n = fut_read(rd, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < n; i++)
            ck_assert_int_eq((unsigned char)buf[i],
                             (unsigned char)((total + i) % 251));
        total += n;
    }
    return total;
}

static intptr_t echo_cli(void *arg)
{
    int port = (int)(intptr_t)arg;
    struct sockaddr_storage ss;
    socklen_t len;
    ck_assert_int_eq(fut_addr_parse("127.0.0.1", port, &ss, &len), 0);
    struct fut_io *c = NULL, *rd, *wr;
    ck_assert_int_eq(fut_connect((struct sockaddr *)&ss, len, -1, &c), 0);
    ck_assert_int_eq(fut_io_split(c, &rd, &wr), 0);
    struct fut_join jr;
    ck_assert_int_eq(fut_fiber_spawn(NULL, echo_cli_reader, rd, NULL, &jr),
                     0);
    static unsigned char data[IO_BYTES];
    for (int i = 0; i < IO_BYTES; i++)
        data[i] = (unsigned char)(i % 251);
    ck_assert_int_eq(fut_write_all(wr, data, sizeof data), IO_BYTES);
    fut_io_close(wr); /* shuts down the write side: the server sees EOF */
    intptr_t got = 0;
    ck_assert_int_eq(fut_fiber_join(&jr, &got), 0);
    fut_io_close(rd);
    return got;
}

START_TEST(io_echo)
{
    rt = fut_test_rt();
    struct sockaddr_storage ss;
    socklen_t len;
    ASSERT_EQ(fut_addr_parse("127.0.0.1", 0, &ss, &len), 0);
    struct fut_io *ln;
    ASSERT_EQ(fut_tcp_listen((struct sockaddr *)&ss, len, 0, &ln), 0);
    ASSERT_EQ(fut_io_local_addr(ln, &ss, &len), 0);
    struct fut_join js;
    ASSERT_EQ(fut_fiber_spawn(rt, echo_srv, ln, NULL, &js), 0);
    intptr_t got = 0;
    ASSERT_EQ(fut_fiber_run(rt, echo_cli,
                            (void *)(intptr_t)fut_addr_port(&ss), NULL, &got),
              0);
    ASSERT_EQ(got, IO_BYTES);
    ASSERT_EQ(fut_block_on(rt, &js.base), 0);
    ASSERT_EQ(fut_fiber_value(&js), IO_BYTES);
    fut_drop(&js.base);
    fut_io_close(ln);
    rt_free();
}
END_TEST

/* Runs child() in a forked process with its stderr into 'buf' (NUL-
 * terminated); returns its wait status. */
static int run_child(void (*child)(void), char *buf, size_t len)
{
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        dup2(pfd[1], 2);
        child();
        _exit(0);
    }
    close(pfd[1]);
    size_t got = 0;
    ssize_t n;
    while (got < len - 1 && (n = read(pfd[0], buf + got, len - 1 - got)) > 0)
        got += (size_t)n;
    buf[got] = 0;
    close(pfd[0]);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    return st;
}

/* ------------------------------------------------------------- misuse */

#ifdef FUT_DEBUG
/* Awaits outside a fiber when 'run'; returns the line of that await. */
static int misuse_await(int run)
{
    struct fut_yield y;
    fut_yield_init(&y);
    if (run)
        fut_await(&y);
    return __LINE__ - 1;
}

static void misuse_child(void)
{
    fprintf(stderr, "returned %d\n", misuse_await(1));
}
#endif

START_TEST(misuse)
{
    /* Outside a fiber: debug builds abort naming this file and line,
     * others return FUT_EINVAL and leave the future alone. */
    ASSERT_EQ(fut_in_fiber(), 0);
#ifdef FUT_DEBUG
    char buf[1024];
    int st = run_child(misuse_child, buf, sizeof buf);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT,
                  "child status %d, stderr: %s", st, buf);
    char where[64];
    snprintf(where, sizeof where, "fiber.c:%d", misuse_await(0));
    ck_assert_msg(strstr(buf, "fut_await outside a fiber") &&
                      strstr(buf, where),
                  "stderr lacks '%s': %s", where, buf);
#else
    struct fut_yield y;
    fut_yield_init(&y);
    ASSERT_EQ(fut_await(&y), FUT_EINVAL);
    ASSERT_EQ(y.base.flags, 0); /* neither polled nor dropped */
    ASSERT_EQ(fut_sleep(1), FUT_EINVAL);
#endif
}
END_TEST

/* -------------------------------------------------------------- cancel */

struct cancel_rec {
    int started, first, later, later_now, returned;
    int drops; /* of the awaited future */
};

/* A future that never completes and counts its drop. */
struct never {
    struct fut_future base;
    int *drops;
};
static int never_poll(struct fut_future *f, struct fut_context *cx)
{
    (void)f;
    (void)cx;
    return FUT_PENDING; /* the test wakes nothing: it cancels */
}
static void never_drop(struct fut_future *f)
{
    (*((struct never *)f)->drops)++;
}
static const struct fut_future_vtable never_vt = {never_poll, never_drop,
                                                  "never", NULL};

static intptr_t cancellee(void *arg)
{
    struct cancel_rec *c = arg;
    /* Release: pairs with the driver's acquire (another worker may poll
     * the driver on the multi-thread runtime). */
    __atomic_store_n(&c->started, 1, __ATOMIC_RELEASE);
    struct fut_sleep s;
    fut_sleep_init(&s, 3600LL * 1000 * MS);
    c->first = fut_await(&s);
    ck_assert(s.base.flags & FUT_F_DROPPED);
    /* Every later await returns at once, without a poll. */
    struct never nv = {{0}, &c->drops};
    fut_future_init(&nv.base, &never_vt);
    int64_t t0 = fut_now_ns();
    c->later = fut_await(&nv);
    c->later_now = fut_sleep(3600LL * 1000 * MS) == FUT_ECANCELED &&
                   fut_now_ns() - t0 < 1000 * MS;
    /* Release: pairs with wait_set's acquire (another thread may look). */
    __atomic_store_n(&c->returned, 1, __ATOMIC_RELEASE);
    return -1;
}

static intptr_t abort_driver(void *arg)
{
    struct cancel_rec *c = arg;
    struct fut_join j;
    ck_assert_int_eq(fut_fiber_spawn(NULL, cancellee, c, NULL, &j), 0);
    while (!__atomic_load_n(&c->started, __ATOMIC_ACQUIRE))
        fut_fiber_yield();
    ck_assert_int_eq(fut_sleep(5 * MS), 0); /* parked in its sleep */
    fut_join_abort(&j);
    intptr_t v = 0;
    ck_assert_int_eq(fut_fiber_join(&j, &v), FUT_ECANCELED);
    /* The join completed only after fn returned (its stack freed after
     * that). */
    ck_assert(c->returned);
    return 0;
}

/* Runs 'driver' (which cancels a fiber recording into 'c') on a new
 * runtime: the cancelled fiber's await in progress and a later one
 * returned FUT_ECANCELED, and fn returned. */
static void run_cancelled(fut_fiber_fn driver, struct cancel_rec *c)
{
    rt = fut_test_rt();
    memset(c, 0, sizeof *c);
    ASSERT_EQ(fut_fiber_run(rt, driver, c, NULL, NULL), 0);
    ASSERT_EQ(c->first, FUT_ECANCELED);
    ASSERT_EQ(c->later, FUT_ECANCELED);
    ASSERT_EQ(c->returned, 1);
}

START_TEST(cancel_abort)
{
    struct cancel_rec c;
    run_cancelled(abort_driver, &c);
    ASSERT_EQ(c.drops, 1);
    ASSERT_EQ(c.later_now, 1);
    rt_free();
}
END_TEST

/* Runs the runtime's pending work until '*flag' is set (acquire: pairs
 * with cancellee's release stores), 10 s at most: on the multi-thread
 * runtime a worker does it, and a loaded machine may not run that worker
 * for a while (the fixed settling of fut_test_run_pending was not always
 * enough: load 14 under ASan). */
static void wait_set(int *flag)
{
    int64_t end = fut_now_ns() + 10000 * MS;
    fut_test_run_pending(rt);
    while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE) && fut_now_ns() < end)
        fut_test_run_pending(rt);
}

/* Frees the runtime while a fiber running 'fn' (a cancel_rec's
 * recorder, which never returns on its own) is parked: the shutdown
 * unwinds it, its await in progress and a later one cancelled. */
static void shutdown_parked(fut_fiber_fn fn)
{
    struct cancel_rec d;
    memset(&d, 0, sizeof d);
    ASSERT_EQ(fut_fiber_spawn(rt, fn, &d, NULL, NULL), 0);
    wait_set(&d.started);
    ASSERT_EQ(d.started, 1);
    ASSERT_EQ(__atomic_load_n(&d.returned, __ATOMIC_ACQUIRE), 0);
    rt_free();
    ASSERT_EQ(d.returned, 1);
    ASSERT_EQ(d.first, FUT_ECANCELED);
    ASSERT_EQ(d.later, FUT_ECANCELED);
}

/* Dropped before its first poll (a spawn then an immediate drop of the
 * handle; and a runtime shut down with a parked fiber): fn still runs
 * once, cancelled from its first await. */
START_TEST(cancel_unstarted)
{
    rt = fut_test_rt();
    struct cancel_rec c;
    memset(&c, 0, sizeof c);
    struct fut_join j;
    ASSERT_EQ(fut_fiber_spawn(rt, cancellee, &c, NULL, &j), 0);
    fut_drop(&j.base); /* aborts; the task is dropped by its runtime */
    wait_set(&c.returned);
    ASSERT_EQ(c.returned, 1);
    ASSERT_EQ(c.first, FUT_ECANCELED);
    /* Shutdown with a fiber parked in its sleep. */
    shutdown_parked(cancellee);
}
END_TEST

/* Cancelling a scope unwinds its fiber children before the scope's
 * drop returns; they may borrow from the owner's stack. */
#define SCOPE_KIDS 6
static intptr_t scope_owner(void *arg)
{
    (void)arg;
    struct cancel_rec recs[SCOPE_KIDS];
    memset(recs, 0, sizeof recs);
    struct fut_scope sc;
    fut_scope_init(&sc, NULL, FUT_SCOPE_FAIL_FAST);
    for (int i = 0; i < SCOPE_KIDS; i++)
        ck_assert_int_eq(
            fut_scope_fiber_spawn(&sc, cancellee, &recs[i], NULL), 0);
    ck_assert_int_eq(fut_sleep(20 * MS), 0);
    fut_scope_cancel(&sc);
    ck_assert_int_eq(fut_await(&sc), 0);
    ck_assert_int_eq(sc.result, FUT_ECANCELED);
    ck_assert_int_eq(sc.cancelled, SCOPE_KIDS);
    for (int i = 0; i < SCOPE_KIDS; i++) {
        ck_assert_int_eq(recs[i].returned, 1);
        ck_assert_int_eq(recs[i].first, FUT_ECANCELED);
    }
    return 0;
}

START_TEST(cancel_scope)
{
    rt = fut_test_rt();
    ASSERT_EQ(fut_fiber_run(rt, scope_owner, NULL, NULL, NULL), 0);
    rt_free();
}
END_TEST

/* A fiber whose fn returns a negative value fails its scope (FAIL_FAST):
 * the sibling is cancelled, the scope reports the error. */
static intptr_t failer(void *arg)
{
    (void)arg;
    fut_sleep(2 * MS);
    return FUT_ECLOSED;
}

static intptr_t fail_owner(void *arg)
{
    struct cancel_rec *c = arg;
    struct fut_scope sc;
    fut_scope_init(&sc, NULL, FUT_SCOPE_FAIL_FAST);
    ck_assert_int_eq(fut_scope_fiber_spawn(&sc, cancellee, c, NULL), 0);
    ck_assert_int_eq(fut_scope_fiber_spawn(&sc, failer, NULL, NULL), 0);
    ck_assert_int_eq(fut_await(&sc), 0);
    return sc.result;
}

START_TEST(scope_fail_fast)
{
    rt = fut_test_rt();
    struct cancel_rec c;
    memset(&c, 0, sizeof c);
    intptr_t v = 0;
    ASSERT_EQ(fut_fiber_run(rt, fail_owner, &c, NULL, &v), 0);
    ASSERT_EQ(v, FUT_ECLOSED);
    ASSERT_EQ(c.returned, 1);
    ASSERT_EQ(c.first, FUT_ECANCELED);
    rt_free();
}
END_TEST

/* --------------------------------------------------------------- dump */

static char dump_buf[16384], dump_cancel_buf[16384];
static int dump_await_line;

static intptr_t parked(void *arg)
{
    (void)arg;
    struct fut_sleep s;
    fut_sleep_init(&s, 3600LL * 1000 * MS);
    dump_await_line = __LINE__ + 1;
    fut_await(&s);
    /* Cancelled, and keeps awaiting: a dump taken now shows it. */
    struct fut_yield y;
    fut_yield_init(&y);
    ck_assert_int_eq(fut_await(&y), FUT_ECANCELED);
    ck_assert(
        fut_runtime_dump(NULL, dump_cancel_buf, sizeof dump_cancel_buf) > 0);
    return 0;
}

static intptr_t dump_driver(void *arg)
{
    (void)arg;
    struct fut_fiber_opts o;
    fut_fiber_opts_init(&o);
    o.name = "parked-one";
    struct fut_join j;
    ck_assert_int_eq(fut_fiber_spawn(NULL, parked, NULL, &o, &j), 0);
    ck_assert_int_eq(fut_sleep(10 * MS), 0);
    ck_assert(fut_runtime_dump(NULL, dump_buf, sizeof dump_buf) > 0);
    fut_join_abort(&j);
    ck_assert_int_eq(fut_fiber_join(&j, NULL), FUT_ECANCELED);
    return 0;
}

/* The task dump shows a parked fiber with its name, the file:line of
 * its fut_await and the awaited future; and a cancelled fiber that
 * keeps awaiting as cancelled. */
START_TEST(dump)
{
    rt = fut_test_rt();
    ASSERT_EQ(fut_fiber_run(rt, dump_driver, NULL, NULL, NULL), 0);
    char want[160];
    snprintf(want, sizeof want,
             "fiber 'parked-one' parked in fut_await at %s:%d", __FILE__,
             dump_await_line);
    ck_assert_msg(strstr(dump_buf, want), "want '%s' in: %s", want, dump_buf);
    ck_assert_msg(strstr(dump_buf, "\n  sleep"), "no awaited sleep in: %s",
                  dump_buf);
    ck_assert_msg(strstr(dump_cancel_buf, "fiber 'parked-one'") &&
                      strstr(dump_cancel_buf, "cancelled"),
                  "dump during the unwinding: %s", dump_cancel_buf);
    rt_free();
}
END_TEST

/* ------------------------------------------------------------ yields */

/* fut_fiber_yield lets every task that is ready run before the fiber
 * goes on (on the current-thread runtime, exactly once each, FIFO), and a
 * fiber that yields in a loop starves nobody: more yielders than workers
 * spin until a fiber spawned once they all spin has yielded YIELD_TURNS
 * times itself. A yield that did not let the others run would keep every
 * worker in a yielder (YIELD_LIMIT fails it, rather than the timeout). */
#define YIELD_KIDS 8
#define YIELD_SPINNERS 4 /* > the 2 workers of the .mt variant */
#define YIELD_TURNS 100
#define YIELD_LIMIT 1000000L
static int yield_count, yield_flag, yield_started;

static intptr_t yield_kid(void *arg)
{
    (void)arg;
    __atomic_add_fetch(&yield_count, 1, __ATOMIC_RELAXED);
    return 0;
}

static intptr_t yield_spinner(void *arg)
{
    (void)arg;
    long n = 0;
    __atomic_add_fetch(&yield_started, 1, __ATOMIC_RELAXED);
    /* Acquire: pairs with yield_setter's release. */
    while (!__atomic_load_n(&yield_flag, __ATOMIC_ACQUIRE)) {
        ck_assert_int_eq(fut_fiber_yield(), 0);
        ck_assert_msg(++n < YIELD_LIMIT, "a yielder starved the others");
    }
    return n;
}

static intptr_t yield_setter(void *arg)
{
    (void)arg;
    for (int i = 0; i < YIELD_TURNS; i++)
        ck_assert_int_eq(fut_fiber_yield(), 0);
    __atomic_store_n(&yield_flag, 1, __ATOMIC_RELEASE);
    return 0;
}

static intptr_t yield_driver(void *arg)
{
    (void)arg;
    for (int i = 0; i < YIELD_KIDS; i++)
        ck_assert_int_eq(fut_fiber_spawn(NULL, yield_kid, NULL, NULL, NULL),
                         0);
    ck_assert_int_eq(fut_fiber_yield(), 0);
    if (!fut_test_rt_is_mt()) /* every kid ran, once, before we went on */
        ck_assert_int_eq(__atomic_load_n(&yield_count, __ATOMIC_RELAXED),
                         YIELD_KIDS);
    struct fut_join sp[YIELD_SPINNERS], st;
    for (int i = 0; i < YIELD_SPINNERS; i++)
        ck_assert_int_eq(
            fut_fiber_spawn(NULL, yield_spinner, NULL, NULL, &sp[i]), 0);
    /* Every spinner spinning before the setter exists: a yield that
     * kept its worker would keep this driver or a spinner on every
     * worker, and the setter would never run. */
    for (long n = 0;
         __atomic_load_n(&yield_started, __ATOMIC_RELAXED) < YIELD_SPINNERS;)
        ck_assert_msg(fut_fiber_yield() == 0 && ++n < YIELD_LIMIT,
                      "the spinners never started");
    ck_assert_int_eq(fut_fiber_spawn(NULL, yield_setter, NULL, NULL, &st), 0);
    ck_assert_int_eq(fut_fiber_join(&st, NULL), 0);
    for (int i = 0; i < YIELD_SPINNERS; i++) {
        intptr_t v = 0;
        ck_assert_int_eq(fut_fiber_join(&sp[i], &v), 0);
        /* FIFO: a spinner yields once per turn of the setter's. */
        if (!fut_test_rt_is_mt())
            ck_assert_int_le(v, YIELD_TURNS + 2);
    }
    return 0;
}

START_TEST(yield_fair)
{
    rt = fut_test_rt();
    yield_count = yield_flag = yield_started = 0;
    ASSERT_EQ(fut_fiber_run(rt, yield_driver, NULL, NULL, NULL), 0);
    ASSERT_EQ(yield_count, YIELD_KIDS);
    rt_free();
}
END_TEST

/* The yield's prefetch hint (fut__ct_peek_next, src/rt/rt_internal.h):
 * on the current-thread runtime, the head of the local run queue - the
 * task the scheduler polls next, the first spawned of those queued, not
 * the fiber asking (it is being polled, not queued) -; NULL on the
 * multi-thread runtime, in a simulation (its pick is seeded) and off any
 * runtime. The yields around it keep their order: the spawned fibers
 * run, in spawn order, before the yield returns. */
static int next_order[3], next_n;

static intptr_t next_kid(void *arg)
{
    /* On the multi-thread runtime the kids run on either worker at once:
     * a slot each (relaxed: the joins order the reads after them). */
    int k = __atomic_fetch_add(&next_n, 1, __ATOMIC_RELAXED);
    next_order[k] = (int)(intptr_t)arg;
    return 0;
}

static intptr_t next_driver(void *arg)
{
    int sim = arg != NULL;
    ck_assert_ptr_null(fut__ct_peek_next()); /* nothing queued */
    struct fut_join j[3];
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(fut_fiber_spawn(NULL, next_kid,
                                         (void *)(intptr_t)(i + 1), NULL,
                                         &j[i]),
                         0);
    if (fut_test_rt_is_mt() || sim)
        ck_assert_ptr_null(fut__ct_peek_next());
    else
        ck_assert_ptr_eq(fut__ct_peek_next(), j[0].task);
    ck_assert_int_eq(fut_fiber_yield(), 0);
    if (!fut_test_rt_is_mt() && !sim) { /* FIFO, all before the yield */
        ck_assert_int_eq(__atomic_load_n(&next_n, __ATOMIC_RELAXED), 3);
        for (int i = 0; i < 3; i++)
            ck_assert_int_eq(next_order[i], i + 1);
        ck_assert_ptr_null(fut__ct_peek_next());
    }
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(fut_fiber_join(&j[i], NULL), 0);
    return 0;
}

START_TEST(yield_next)
{
    ck_assert_ptr_null(fut__ct_peek_next()); /* off any runtime */
    next_n = 0;
    rt = fut_test_rt();
    ASSERT_EQ(fut_fiber_run(rt, next_driver, NULL, NULL, NULL), 0);
    rt_free();
    ASSERT_EQ(fut_sim_new(NULL, 7, &rt), 0);
    next_n = 0;
    ASSERT_EQ(fut_fiber_run(rt, next_driver, (void *)1, NULL, NULL), 0);
    rt_free();
}
END_TEST

/* Each fiber keeps its own floating-point control state on x86-64 (the
 * switch saves MXCSR and the x87 control word, and loads the other
 * side's only when they differ): a fiber that rounds upward keeps doing
 * so across its yields, while the fibers beside it, the driver and the
 * thread that ran the runtime keep rounding to nearest. */
#if defined(__x86_64__)
#define MXCSR_RC (3u << 13) /* rounding control; the low 6 bits are flags */
#define X87_RC (3u << 10)

static unsigned mxcsr_get(void)
{
    unsigned v;
    __asm__ volatile("stmxcsr %0" : "=m"(v));
    return v;
}

static void mxcsr_set(unsigned v)
{
    __asm__ volatile("ldmxcsr %0" : : "m"(v));
}

static unsigned short x87cw_get(void)
{
    unsigned short v;
    __asm__ volatile("fnstcw %0" : "=m"(v));
    return v;
}

static void x87cw_set(unsigned short v)
{
    __asm__ volatile("fldcw %0" : : "m"(v));
}

static intptr_t fp_kid(void *arg)
{
    if (arg) { /* round upward: RC = 10b in both */
        mxcsr_set((mxcsr_get() & ~MXCSR_RC) | (2u << 13));
        x87cw_set((unsigned short)((x87cw_get() & ~X87_RC) | (2u << 10)));
    }
    unsigned want = arg ? 2u << 13 : 0;
    unsigned rc = mxcsr_get() & MXCSR_RC;
    unsigned cw = x87cw_get() & X87_RC;
    ck_assert_uint_eq(rc, want);
    for (int i = 0; i < 20; i++) {
        ck_assert_int_eq(fut_fiber_yield(), 0);
        ck_assert_uint_eq(mxcsr_get() & MXCSR_RC, rc);
        ck_assert_uint_eq(x87cw_get() & X87_RC, cw);
    }
    return 0;
}

static intptr_t fp_driver(void *arg)
{
    (void)arg;
    struct fut_join j[4];
    for (int i = 0; i < 4; i++) /* upward, nearest, upward, nearest */
        ck_assert_int_eq(fut_fiber_spawn(NULL, fp_kid,
                                         (void *)(intptr_t)(i % 2 == 0), NULL,
                                         &j[i]),
                         0);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(fut_fiber_join(&j[i], NULL), 0);
    ck_assert_uint_eq(mxcsr_get() & MXCSR_RC, 0);
    ck_assert_uint_eq(x87cw_get() & X87_RC, 0);
    return 0;
}
#endif

START_TEST(fp_control)
{
#if defined(__x86_64__)
    rt = fut_test_rt();
    ASSERT_EQ(fut_fiber_run(rt, fp_driver, NULL, NULL, NULL), 0);
    ck_assert_uint_eq(mxcsr_get() & MXCSR_RC, 0);
    ck_assert_uint_eq(x87cw_get() & X87_RC, 0);
    rt_free();
#endif
}
END_TEST

/* A fiber cancelled while it is parked in fut_fiber_yield: that yield
 * returns FUT_ECANCELED, every later one too at once; the join completes
 * after fn returned; the dump shows it parked at its yield's line; a
 * runtime shut down with a fiber parked in a yield unwinds it. */
static char yield_dump[16384];
static int yield_line;

static intptr_t yield_cancellee(void *arg)
{
    struct cancel_rec *c = arg;
    int r;
    /* Release: pairs with the acquire loads of the driver / wait_set. */
    __atomic_store_n(&c->started, 1, __ATOMIC_RELEASE);
    yield_line = __LINE__ + 1;
    while ((r = fut_fiber_yield()) == 0)
        c->drops++; /* here: the yields that returned 0 */
    c->first = r;
    c->later = fut_fiber_yield();
    __atomic_store_n(&c->returned, 1, __ATOMIC_RELEASE);
    return -1;
}

static intptr_t yield_abort_driver(void *arg)
{
    struct cancel_rec *c = arg;
    struct fut_fiber_opts o;
    fut_fiber_opts_init(&o);
    o.name = "yielder";
    struct fut_join j;
    ck_assert_int_eq(fut_fiber_spawn(NULL, yield_cancellee, c, &o, &j), 0);
    while (!__atomic_load_n(&c->started, __ATOMIC_ACQUIRE))
        fut_fiber_yield();
    for (int i = 0; i < 10; i++)
        fut_fiber_yield();
    /* On the current-thread runtime it is parked in its yield now. */
    ck_assert(fut_runtime_dump(NULL, yield_dump, sizeof yield_dump) > 0);
    if (!fut_test_rt_is_mt()) /* parked: its yield returns no 0 now */
        c->later_now = c->drops;
    fut_join_abort(&j);
    ck_assert_int_eq(fut_fiber_join(&j, NULL), FUT_ECANCELED);
    ck_assert(__atomic_load_n(&c->returned, __ATOMIC_ACQUIRE));
    return 0;
}

START_TEST(cancel_yield)
{
    struct cancel_rec c;
    run_cancelled(yield_abort_driver, &c);
    ck_assert_int_ge(c.drops, 1);
    if (!fut_test_rt_is_mt()) {
        ck_assert_int_ge(c.drops, 10);
        ASSERT_EQ(c.drops, c.later_now); /* parked while it was aborted */
        char want[160];
        snprintf(want, sizeof want,
                 "fiber 'yielder' parked in fut_fiber_yield at %s:%d",
                 __FILE__, yield_line);
        ck_assert_msg(strstr(yield_dump, want), "want '%s' in: %s", want,
                      yield_dump);
    }
    /* Shutdown with a fiber parked in a yield (detached, spinning). */
    shutdown_parked(yield_cancellee);
}
END_TEST

/* ---------------------------------------------------------- threads */

#define MIG_FIBERS 16
static _Atomic long mig_total, mig_moves;

/* The thread's id, read anew at each call: pthread_self() is declared
 * __attribute__((const)), so a compiler may reuse its value across a
 * fut_await - on another thread (docs/fibers.md, "Threads"). */
static long thread_id(void)
{
    return (long)syscall(SYS_gettid);
}

static intptr_t migrant(void *arg)
{
    (void)arg;
    long moves = 0;
    long me = thread_id();
    for (int i = 0; i < TEST_ITERS(2000, 300); i++) {
        volatile int local = i; /* lives on the fiber's stack */
        if (i % 16 == 0)
            fut_sleep(100 * 1000); /* woken by whichever worker drives
                                      the timers */
        else
            fut_fiber_yield();
        ck_assert_int_eq(local, i);
        long now = thread_id();
        if (now != me)
            moves++;
        me = now;
        mig_total++;
    }
    mig_moves += moves;
    return moves;
}

START_TEST(threads_migrate)
{
    rt = fut_test_rt();
    mig_total = mig_moves = 0;
    struct fut_join j[MIG_FIBERS];
    for (int i = 0; i < MIG_FIBERS; i++)
        ASSERT_EQ(fut_fiber_spawn(rt, migrant, NULL, NULL, &j[i]), 0);
    for (int i = 0; i < MIG_FIBERS; i++) {
        ASSERT_EQ(fut_block_on(rt, &j[i].base), 0);
        ASSERT_EQ(j[i].result, 0);
        fut_drop(&j[i].base);
    }
    ASSERT_EQ(mig_total, (long)MIG_FIBERS * TEST_ITERS(2000, 300));
    if (!fut_test_rt_is_mt())
        ASSERT_EQ(mig_moves, 0);
    fprintf(stderr,
            "threads_migrate: %ld of %ld resumptions on another "
            "thread\n",
            (long)mig_moves, (long)mig_total);
    rt_free();
}
END_TEST

/* ------------------------------------------------------------ stacks */

#define POOL_FIBERS 40
static intptr_t toucher(void *arg)
{
    volatile char big[32 * 1024];
    for (size_t i = 0; i < sizeof big; i += 512)
        big[i] = (char)i;
    fut_sleep((int64_t)(intptr_t)arg);
    return big[512];
}

START_TEST(stack_pool)
{
    rt = fut_test_rt();
    fut__stack_pool_drain();
    fut__stack_pool_window(0);
    struct fut_join j[POOL_FIBERS];
    size_t parked, live;
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < POOL_FIBERS; i++)
            ASSERT_EQ(fut_fiber_spawn(rt, toucher, (void *)(intptr_t)(5 * MS),
                                      NULL, &j[i]),
                      0);
        fut__stack_pool_counts(0, &parked, &live);
        ASSERT_EQ(live, POOL_FIBERS);
        /* The second burst takes every stack from the pool. */
        ASSERT_EQ(parked, 0);
        for (int i = 0; i < POOL_FIBERS; i++) {
            ASSERT_EQ(fut_block_on(rt, &j[i].base), 0);
            ASSERT_EQ(fut_fiber_value(&j[i]), (char)512);
            fut_drop(&j[i].base);
        }
        /* The burst's peak is kept: every stack parked, none unmapped. */
        fut__stack_pool_counts(0, &parked, &live);
        ASSERT_EQ(parked, POOL_FIBERS);
        ASSERT_EQ(live, 0);
    }
    /* Another size has a pool of its own (a TLS server's larger stacks):
     * its second spawn maps nothing; the default pool is untouched. */
    struct fut_fiber_opts o;
    fut_fiber_opts_init(&o);
    o.stack_size = 1024 * 1024;
    for (int k = 0; k < 2; k++) {
        ASSERT_EQ(fut_fiber_spawn(rt, toucher, 0, &o, &j[0]), 0);
        fut__stack_pool_counts(o.stack_size, &parked, &live);
        ASSERT_EQ(live, 1);
        ASSERT_EQ(parked, 0);
        ASSERT_EQ(fut_block_on(rt, &j[0].base), 0);
        fut_drop(&j[0].base);
        fut__stack_pool_counts(o.stack_size, &parked, &live);
        ASSERT_EQ(parked, 1);
        ASSERT_EQ(live, 0);
    }
    /* Four sizes have pools; a fifth is mapped and unmapped each time. */
    for (size_t k = 1; k <= 3; k++) {
        o.stack_size = (2 * k + 1) * 128 * 1024; /* not the default */
        ASSERT_EQ(fut_fiber_spawn(rt, toucher, 0, &o, &j[0]), 0);
        ASSERT_EQ(fut_block_on(rt, &j[0].base), 0);
        fut_drop(&j[0].base);
        fut__stack_pool_counts(o.stack_size, &parked, &live);
        ASSERT_EQ(parked, k < 3 ? 1 : 0);
    }
    fut__stack_pool_counts(0, &parked, &live);
    ASSERT_EQ(parked, POOL_FIBERS);
    /* Two quiet windows later the peak is forgotten: the pool shrinks to
     * its hot 16, at most 32 unmaps per spawn or join. */
    fut__stack_pool_window(20 * MS);
    for (int k = 0; k < 3; k++) {
        usleep(30 * 1000);
        ASSERT_EQ(fut_fiber_spawn(rt, toucher, 0, NULL, &j[0]), 0);
        ASSERT_EQ(fut_block_on(rt, &j[0].base), 0);
        fut_drop(&j[0].base);
    }
    fut__stack_pool_counts(0, &parked, &live);
    ASSERT_EQ(parked, 16);
    ASSERT_EQ(live, 0);
    fut__stack_pool_window(0);
    fut__stack_pool_drain();
    rt_free();
}
END_TEST

static volatile int deep_limit = 1 << 30; /* far beyond any stack */

static int deep(int n)
{
    volatile char pad[512];
    pad[0] = (char)n;
    if (n >= deep_limit)
        return pad[0];
    return deep(n + 1) + pad[0];
}

static intptr_t overflower(void *arg)
{
    (void)arg;
    return deep(0);
}

/* Stack overflow: the guard page stops it; every build without a
 * sanitizer (whose runtime owns SIGSEGV) names the fiber and its spawn
 * site, then dies of SIGSEGV. */
static void overflow_child(void)
{
    struct fut_runtime *r2;
    if (fut_runtime_new(NULL, &r2) != 0)
        _exit(3);
    struct fut_fiber_opts o;
    fut_fiber_opts_init(&o);
    o.name = "deep-one";
    fut_fiber_run(r2, overflower, NULL, &o, NULL);
}

START_TEST(stack_overflow)
{
    char buf[4096];
    int st = run_child(overflow_child, buf, sizeof buf);
    ck_assert_msg(!(WIFEXITED(st) && WEXITSTATUS(st) == 0),
                  "the overflow did not stop the child");
#if !defined(FUT__ASAN) && !defined(FUT__TSAN)
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "status %d: %s",
                  st, buf);
    ck_assert_msg(strstr(buf, "stack overflow in fiber 'deep-one'"),
                  "no report: %s", buf);
    ck_assert_msg(strstr(buf, "fiber.c:"), "no spawn site: %s", buf);
#endif
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fiber");
    tcase_add_test(fut_test_tcase(s, "basic"), basic);
    tcase_add_test(fut_test_tcase(s, "yield_next"), yield_next);
    tcase_add_test(fut_test_tcase(s, "await_kinds"), await_kinds);
    tcase_add_test(fut_test_tcase(s, "channels"), channels);
    tcase_add_test(fut_test_tcase(s, "io_echo"), io_echo);
    tcase_add_test(fut_test_tcase(s, "misuse"), misuse);
    tcase_add_test(fut_test_tcase(s, "cancel_abort"), cancel_abort);
    tcase_add_test(fut_test_tcase(s, "cancel_unstarted"), cancel_unstarted);
    tcase_add_test(fut_test_tcase(s, "cancel_scope"), cancel_scope);
    tcase_add_test(fut_test_tcase(s, "scope_fail_fast"), scope_fail_fast);
    tcase_add_test(fut_test_tcase(s, "dump"), dump);
    tcase_add_test(fut_test_tcase(s, "yield_fair"), yield_fair);
    tcase_add_test(fut_test_tcase(s, "fp_control"), fp_control);
    tcase_add_test(fut_test_tcase(s, "cancel_yield"), cancel_yield);
    tcase_add_test(fut_test_tcase(s, "threads_migrate"), threads_migrate);
    tcase_add_test(fut_test_tcase(s, "stack_pool"), stack_pool);
    tcase_add_test(fut_test_tcase(s, "stack_overflow"), stack_overflow);
    return fut_test_run(s);
}
