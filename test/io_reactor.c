/* SPDX-License-Identifier: MIT */
/* The reactor (C5 for I/O readiness, C6, C11): an event landing between a
 * poll's EAGAIN and its waker registration is never lost (forced
 * deterministically, and raced by a second thread); registration happens
 * once per fd and is undone at close; an fd outlives its runtime; a
 * dropped future leaves no waker behind; no runtime means FUT_EINVAL. */
#include <pthread.h>
#include <sys/socket.h>

#include "io/io_internal.h"
#include "io_helpers.h"
#include "platform/sys.h"

static void write_later(struct fut_runtime *rt, int fd, int ms);

static void pair(struct fut_io **a, struct fut_io **b)
{
    ASSERT_EQ(fut_unix_pair(SOCK_STREAM, a, b), 0);
}

/* A read of one byte under a 2 s timeout: a lost wakeup shows as
 * FUT_ETIMEDOUT instead of a hang. */
/* The same as a task of its own (so no earlier waker of the same task is
 * left in the fd's slot to hide a lost registration). */
struct read_task {
    struct fut_future base;
    struct fut_io *io;
    struct fut_io_read rd;
    struct fut_timeout to;
    char c;
    ssize_t result;
};

static int read_task_poll(struct fut_future *f, struct fut_context *cx)
{
    struct read_task *t = (struct read_task *)f;
    FUT_BEGIN(f);
    fut_io_read_init(&t->rd, t->io, &t->c, 1);
    fut_timeout_init(&t->to, &t->rd.base, fut_now_ns() + 2000 * MS);
    FUT_AWAIT(f, &t->to);
    t->result = t->to.result == 0 ? t->rd.result : t->to.result;
    FUT_END(f);
}
FUT_ASYNC_VTABLE(read_task_vt, "read_task", read_task_poll, NULL);

static ssize_t read_one_task(struct fut_runtime *rt, struct fut_io *io)
{
    struct read_task t;
    memset(&t, 0, sizeof t);
    fut_future_init(&t.base, &read_task_vt);
    t.io = io;
    struct fut_join j;
    ASSERT_EQ(fut_spawn(rt, &t, sizeof t, &j), 0);
    ASSERT_EQ(fut_block_on(rt, &j.base), 0);
    ssize_t r = ((struct read_task *)fut_join_output(&j))->result;
    fut_drop(&j.base);
    return r;
}

static ssize_t read_one(struct fut_runtime *rt, struct fut_io *io, char *c)
{
    struct fut_io_read rd;
    struct fut_timeout to;
    fut_io_read_init(&rd, io, c, 1);
    fut_timeout_init(&to, &rd.base, fut_now_ns() + 2000 * MS);
    ASSERT_EQ(fut_block_on(rt, &to.base), 0);
    ssize_t r = to.result == 0 ? rd.result : to.result;
    fut_drop(&to.base);
    return r;
}

/* --------------------------------------- forced: dispatch inside EAGAIN */

/* Right after the read's EAGAIN (before it clears readiness and
 * registers its waker), the peer writes and the driver dispatches the
 * event: the readiness word gets a newer tick, so the clear must not
 * wipe it (the ABA guard), and the read completes. */
struct forced {
    int peer_fd, hits;
};

static void after_read(int op, int fd, long res, void *ud)
{
    struct forced *x = ud;
    (void)op;
    if (res != -EAGAIN || fd == x->peer_fd)
        return;
    x->hits++;
    ck_assert_int_eq(write(x->peer_fd, "r", 1), 1);
    struct fut__driver *d = fut__tls_sched->driver;
    d->vt->park(d, 0, 0, 1); /* the event is dispatched now */
}

START_TEST(race_forced_between_eagain_and_register)
{
    struct fut_runtime *rt = rt_make(0);
    struct fut_io *a, *b;
    pair(&a, &b);
    struct forced x = {fut_io_fd(b), 0};
    char c;
    /* Register 'a' once (an fd that never waited is not in epoll). */
    ck_assert_int_eq(write(fut_io_fd(b), "0", 1), 1);
    fut__sys_reset();
    fut__sys_set_hook(FUT__SYS_READ, after_read, &x);
    int iters = TEST_ITERS(2000, 300);
    for (int i = 0; i < iters; i++) {
        ASSERT_EQ(read_one(rt, a, &c), 1);
        /* Drain whatever the hook wrote so the next read hits EAGAIN. */
        char tmp[64];
        while (read(fut_io_fd(a), tmp, sizeof tmp) > 0)
            ;
    }
    fut__sys_reset();
    ck_assert_msg(x.hits >= iters - 1, "hook ran %d times", x.hits);
    fut_io_close(a);
    fut_io_close(b);
    fut_runtime_free(rt);
}
END_TEST

/* The event lands after the poll saw no readiness and before it
 * registered its waker: the dispatcher finds no waker, so only the
 * re-check under the fd's lock saves the wakeup. */
static void before_register(int op, int fd, long res, void *ud)
{
    struct forced *x = ud;
    (void)op;
    (void)res;
    if (fd == x->peer_fd)
        return;
    x->hits++;
    ck_assert_int_eq(write(x->peer_fd, "r", 1), 1);
    struct fut__driver *d = fut__tls_sched->driver;
    d->vt->park(d, 0, 0, 1);
}

START_TEST(race_forced_before_register)
{
    struct fut_runtime *rt = rt_make(0);
    struct fut_io *a, *b;
    pair(&a, &b);
    struct forced x = {fut_io_fd(b), 0};
    char c;
    ck_assert_int_eq(write(fut_io_fd(b), "0", 1), 1);
    ASSERT_EQ(read_one(rt, a, &c), 1); /* readiness now cleared */
    /* Register it (the first wait) without the hook. */
    write_later(rt, fut_io_fd(b), 1);
    ASSERT_EQ(read_one(rt, a, &c), 1);
    fut__sys_reset();
    fut__sys_set_hook(FUT__SYS_PREWAIT, before_register, &x);
    int iters = TEST_ITERS(2000, 300);
    for (int i = 0; i < iters; i++)
        ASSERT_EQ(read_one_task(rt, a), 1);
    fut__sys_reset();
    ck_assert(x.hits >= iters);
    fut_io_close(a);
    fut_io_close(b);
    fut_runtime_free(rt);
}
END_TEST

/* ---------------------------------------------- raced: a second thread */

struct racer {
    int fd;
    atomic_int turn; /* bytes the reader has consumed */
    int total;
};

static void *writer_thread(void *arg)
{
    struct racer *r = arg;
    unsigned x = 12345;
    for (int i = 0; i < r->total; i++) {
        /* Wait until the reader took the previous byte, then write after
         * a random short delay: the write lands anywhere in the reader's
         * next poll (before, during, after its EAGAIN). */
        int64_t t0 = fut_now_ns();
        while (atomic_load(&r->turn) < i) {
            if (fut_now_ns() - t0 > 5000 * MS)
                return NULL;
        }
        x = x * 1103515245 + 12345;
        for (volatile unsigned k = (x >> 16) % 2000; k > 0; k--)
            ;
        char c = (char)i;
        if (write(r->fd, &c, 1) != 1)
            return NULL;
    }
    return NULL;
}

/* A socket pair whose 'b' end a writer thread feeds, one byte per turn. */
static void racer_start(struct fut_io **a, struct fut_io **b, struct racer *r,
                        pthread_t *th)
{
    pair(a, b);
    r->fd = fut_io_fd(*b);
    atomic_init(&r->turn, 0);
    r->total = TEST_ITERS(20000, 2000);
    ASSERT_EQ(pthread_create(th, NULL, writer_thread, r), 0);
}

START_TEST(race_second_thread_writer)
{
    struct fut_runtime *rt = rt_make(0);
    struct fut_io *a, *b;
    struct racer r;
    pthread_t th;
    racer_start(&a, &b, &r, &th);
    int ok = 1;
    for (int i = 0; i < r.total && ok; i++) {
        char c;
        ssize_t n = read_one(rt, a, &c);
        ok = n == 1 && c == (char)i;
        ck_assert_msg(ok, "byte %d: %zd (%s)", i, n, fut_strerror((int)n));
        atomic_store(&r.turn, i + 1);
    }
    pthread_join(th, NULL);
    fut_io_close(a);
    fut_io_close(b);
    fut_runtime_free(rt);
}
END_TEST

/* The same race with every read in one task: its waker stays in the
 * fd's slot between events and each wait after the first takes no lock
 * (reactor.c's 'kept' rule), so a dispatcher that took the waker out, or
 * missed it, shows as a read timing out. */
struct reader_task {
    struct fut_future base;
    struct fut_io *io;
    struct racer *r;
    struct fut_io_read rd;
    struct fut_timeout to;
    char c;
    int i;
    int64_t deadline;
    ssize_t bad; /* 0, or the failing read's result (1: wrong byte) */
};

static int reader_task_poll(struct fut_future *f, struct fut_context *cx)
{
    struct reader_task *t = (struct reader_task *)f;
    FUT_BEGIN(f);
    for (t->i = 0; t->i < t->r->total; t->i++) {
        fut_io_read_init(&t->rd, t->io, &t->c, 1);
        t->deadline = fut_now_ns() + 2000 * MS;
        fut_timeout_init(&t->to, &t->rd.base, t->deadline);
        FUT_AWAIT(f, &t->to);
        /* A read woken only by its deadline completes (the byte is there
         * by then): the clock tells the lost wakeup. */
        if (t->to.result != 0 || fut_now_ns() >= t->deadline)
            t->bad = FUT_ETIMEDOUT;
        else if (t->rd.result != 1 || t->c != (char)t->i)
            t->bad = t->rd.result != 1 ? t->rd.result : 1;
        if (t->bad)
            break;
        atomic_store(&t->r->turn, t->i + 1);
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(reader_task_vt, "reader_task", reader_task_poll, NULL);

START_TEST(race_second_thread_writer_one_task)
{
    struct fut_runtime *rt = rt_make(0);
    struct fut_io *a, *b;
    struct racer r;
    pthread_t th;
    racer_start(&a, &b, &r, &th);
    struct reader_task t;
    memset(&t, 0, sizeof t);
    fut_future_init(&t.base, &reader_task_vt);
    t.io = a;
    t.r = &r;
    struct fut_join j;
    ASSERT_EQ(fut_spawn(rt, &t, sizeof t, &j), 0);
    ASSERT_EQ(fut_block_on(rt, &j.base), 0);
    struct reader_task *out = fut_join_output(&j);
    ck_assert_msg(out->bad == 0, "byte %d: %zd (%s)", out->i, out->bad,
                  fut_strerror((int)out->bad));
    fut_drop(&j.base);
    atomic_store(&r.turn, r.total); /* a failed reader: let the writer go */
    pthread_join(th, NULL);
    fut_io_close(a);
    fut_io_close(b);
    fut_runtime_free(rt);
}
END_TEST

/* --------------------------------------------------- registration */

/* Writes one byte to 'fd' after 'ms' milliseconds. */
struct later_write {
    struct fut_future base;
    struct fut_sleep s;
    int fd, ms;
};

static int later_write_poll(struct fut_future *f, struct fut_context *cx)
{
    struct later_write *w = (struct later_write *)f;
    FUT_BEGIN(f);
    fut_sleep_init(&w->s, w->ms * MS);
    FUT_AWAIT(f, &w->s);
    ck_assert_int_eq(write(w->fd, "L", 1), 1);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(later_write_vt, "later_write", later_write_poll, NULL);

static void write_later(struct fut_runtime *rt, int fd, int ms)
{
    struct later_write w;
    fut_future_init(&w.base, &later_write_vt);
    w.fd = fd;
    w.ms = ms;
    ASSERT_EQ(fut_spawn(rt, &w, sizeof w, NULL), 0);
}

START_TEST(register_once_unregister_at_close)
{
    struct fut_runtime *rt = rt_make(0);
    struct fut_io *a, *b;
    pair(&a, &b);
    fut__sys_reset();
    fut__sys_count_calls(1);
    char c;
    /* Data already there: the read never touches epoll. */
    ck_assert_int_eq(write(fut_io_fd(b), "x", 1), 1);
    ASSERT_EQ(read_one(rt, a, &c), 1);
    ASSERT_EQ(fut__sys_calls(FUT__SYS_EPOLL_CTL), 0);
    /* 30 reads that each wait: one registration in all. */
    for (int i = 0; i < 30; i++) {
        write_later(rt, fut_io_fd(b), 1);
        ASSERT_EQ(read_one(rt, a, &c), 1);
    }
    ASSERT_EQ(fut__sys_calls(FUT__SYS_EPOLL_CTL), 1);
    fut_io_close(a); /* unregistered: EPOLL_CTL_DEL */
    ASSERT_EQ(fut__sys_calls(FUT__SYS_EPOLL_CTL), 2);
    fut_io_close(b); /* never waited: nothing to undo */
    ASSERT_EQ(fut__sys_calls(FUT__SYS_EPOLL_CTL), 2);
    fut__sys_reset();
    fut_runtime_free(rt);
}
END_TEST

/* An fd registered with a runtime that is freed can wait on the next. */
START_TEST(fd_outlives_runtime)
{
    struct fut_io *a, *b;
    pair(&a, &b);
    char c;
    for (int round = 0; round < 3; round++) {
        struct fut_runtime *rt = rt_make(0);
        write_later(rt, fut_io_fd(b), 2);
        ASSERT_EQ(read_one(rt, a, &c), 1);
        fut_runtime_free(rt);
    }
    fut_io_close(a);
    fut_io_close(b);
}
END_TEST

/* Without a runtime (or on another runtime than its own) a wait fails
 * with FUT_EINVAL; a read that need not wait works anywhere. */
START_TEST(no_runtime_einval)
{
    struct fut_io *a, *b;
    pair(&a, &b);
    char c;
    struct fut_io_read rd;
    fut_io_read_init(&rd, a, &c, 1);
    ASSERT_EQ(fut_block_on(NULL, &rd.base), 0);
    ASSERT_EQ(rd.result, FUT_EINVAL);
    fut_drop(&rd.base);
    ck_assert_int_eq(write(fut_io_fd(b), "y", 1), 1);
    fut_io_read_init(&rd, a, &c, 1);
    ASSERT_EQ(fut_block_on(NULL, &rd.base), 0);
    ASSERT_EQ(rd.result, 1);
    fut_drop(&rd.base);
    struct fut_runtime *rt1 = rt_make(0), *rt2 = rt_make(0);
    write_later(rt1, fut_io_fd(b), 1);
    ASSERT_EQ(read_one(rt1, a, &c), 1); /* registered with rt1 */
    fut_io_read_init(&rd, a, &c, 1);
    ASSERT_EQ(fut_block_on(rt2, &rd.base), 0);
    ASSERT_EQ(rd.result, FUT_EINVAL);
    fut_drop(&rd.base);
    fut_runtime_free(rt1);
    fut_runtime_free(rt2);
    fut_io_close(a);
    fut_io_close(b);
}
END_TEST

/* C11: a read dropped while waiting takes its waker out of the fd. */
struct drop_pending {
    struct fut_io *a;
    int empty_after;
};

static void drop_pending_fn(void *ud)
{
    struct drop_pending *d = ud;
    struct count_waker cw;
    atomic_init(&cw.wakes, 0);
    struct fut_context cx = cw_context(&cw);
    char c;
    struct fut_io_read rd;
    fut_io_read_init(&rd, d->a, &c, 1);
    ASSERT_EQ(fut_poll(&rd.base, &cx), FUT_PENDING);
    ASSERT_TRUE(fut_waker_is_set(&d->a->core->rd));
    fut_drop(&rd.base);
    d->empty_after = !fut_waker_is_set(&d->a->core->rd);
}

START_TEST(drop_unregisters_waker)
{
    struct fut_runtime *rt = rt_make(0);
    struct fut_io *a, *b;
    pair(&a, &b);
    struct drop_pending d = {a, 0};
    run_on(rt, drop_pending_fn, &d);
    ASSERT_EQ(d.empty_after, 1);
    fut_io_close(a);
    fut_io_close(b);
    fut_runtime_free(rt);
}
END_TEST

/* A task that yields 'n' times: the scheduler polls its driver without
 * blocking every event_interval (61) of its polls. */
struct yielder {
    struct fut_future base;
    int n;
    struct fut_yield y;
};

static int yielder_poll(struct fut_future *f, struct fut_context *cx)
{
    struct yielder *t = (struct yielder *)f;
    FUT_BEGIN(f);
    for (; t->n > 0; t->n--) {
        fut_yield_init(&t->y);
        FUT_AWAIT(f, &t->y);
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(yielder_vt, "yielder", yielder_poll, NULL);

static void run_yielder(struct fut_runtime *rt, int n)
{
    struct yielder y;
    fut_future_init(&y.base, &yielder_vt);
    y.n = n;
    struct fut_join j;
    ASSERT_EQ(fut_spawn(rt, &y, sizeof y, &j), 0);
    ASSERT_EQ(fut_block_on(rt, &j.base), 0);
    ASSERT_EQ(j.result, 0);
    fut_drop(&j.base);
}

/* A sleep that says when its first poll (which arms its timer) is over:
 * on the multi-thread runtime the test below must not measure before the
 * timer exists (a sleep spawned from this thread is handed to a sleeping
 * worker, which the OS may not run before 10,000 yields are done: a
 * fresh-clone CI run under ASan once saw no epoll_wait at all, most
 * likely that way). */
struct armed_sleep {
    struct fut_future base;
    struct fut_sleep sl;
    atomic_int *armed;
};

static int armed_sleep_poll(struct fut_future *f, struct fut_context *cx)
{
    struct armed_sleep *a = (struct armed_sleep *)f;
    int r = fut_poll(&a->sl.base, cx);
    atomic_store(a->armed, 1);
    return r;
}

static void armed_sleep_drop(struct fut_future *f)
{
    fut_drop(&((struct armed_sleep *)f)->sl.base);
}

static const struct fut_future_vtable armed_sleep_vt = {
    armed_sleep_poll, armed_sleep_drop, "armed_sleep", NULL};

/* The every-61-ticks look at the driver of a busy runtime makes no
 * syscall while nothing is registered (10,000 yields: ~164 looks, each
 * an epoll_wait before), and still does when a timer is armed (on the
 * current-thread runtime every look polls; on the multi-thread one a
 * parked worker holds the driver in its timed wait instead, and a busy
 * worker's look finds it taken). */
START_TEST(busy_idle_driver_no_syscall)
{
    struct fut_runtime *rt = rt_make(0);
    run_yielder(rt, 100); /* warm: workers started, first parks done */
    fut__sys_reset();
    fut__sys_count_calls(1);
    run_yielder(rt, 10000);
    long idle_waits = fut__sys_calls(FUT__SYS_EPOLL_WAIT);
    ck_assert_msg(idle_waits <= 4,
                  "%ld epoll_wait calls for 10,000 yields with nothing "
                  "registered",
                  idle_waits);
    static atomic_int armed;
    atomic_store(&armed, 0);
    struct armed_sleep sl;
    fut_future_init(&sl.base, &armed_sleep_vt);
    fut_sleep_init(&sl.sl, 10LL * 1000 * 1000 * 1000);
    sl.armed = &armed;
    struct fut_join sj;
    ASSERT_EQ(fut_spawn(rt, &sl, sizeof sl, &sj), 0);
    if (fut_test_rt_is_mt()) { /* current-thread: polled in block_on */
        for (int i = 0; i < 5000 && !atomic_load(&armed); i++)
            usleep(1000);
        ASSERT_EQ(atomic_load(&armed), 1);
    }
    run_yielder(rt, 10000);
    long timer_waits = fut__sys_calls(FUT__SYS_EPOLL_WAIT) - idle_waits;
    if (!fut_test_rt_is_mt())
        ck_assert_msg(timer_waits >= 100,
                      "%ld epoll_wait calls for 10,000 yields with a timer "
                      "armed",
                      timer_waits);
    else
        ck_assert_int_ge(timer_waits, 1);
    fut_drop(&sj.base); /* aborts the sleeper */
    fut__sys_reset();
    fut_runtime_free(rt);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("io_reactor");
    TCase *tc = fut_test_tcase(s, "forced");
    tcase_add_test(tc, race_forced_between_eagain_and_register);
    tcase_add_test(tc, race_forced_before_register);
    tc = fut_test_tcase(s, "race");
    tcase_add_test(tc, race_second_thread_writer);
    tcase_add_test(tc, race_second_thread_writer_one_task);
    tc = fut_test_tcase(s, "register");
    tcase_add_test(tc, register_once_unregister_at_close);
    tcase_add_test(tc, fd_outlives_runtime);
    tcase_add_test(tc, no_runtime_einval);
    tcase_add_test(tc, drop_unregisters_waker);
    tc = fut_test_tcase(s, "driver");
    tcase_add_test(tc, busy_idle_driver_no_syscall);
    return fut_test_run(s);
}
