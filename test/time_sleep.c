/* SPDX-License-Identifier: MIT */
/* Sleep, timeout and interval on a runtime (C11, C12, C13): order of
 * firing, never early, timeout drops inner where it stood, 10^6 cancelled
 * timers never fire, the paused clock runs hour-long timeouts in
 * milliseconds, and each missed-tick behaviour of the interval. */
#include "io/io_internal.h"
#include "io_helpers.h"

/* ------------------------------------------------------ firing order */

struct sleeper {
    struct fut_future base;
    struct fut_sleep s;
    int idx;
    int64_t deadline;
    int *order, *n, *early;
};

static int sleeper_poll(struct fut_future *f, struct fut_context *cx)
{
    struct sleeper *t = (struct sleeper *)f;
    FUT_BEGIN(f);
    fut_sleep_until_init(&t->s, t->deadline);
    FUT_AWAIT(f, &t->s);
    if (t->s.result != 0 || fut_time_now() < t->deadline)
        __atomic_fetch_add(t->early, 1, __ATOMIC_RELAXED);
    /* Atomic: on the multi-thread runtime two workers may get here at
     * once (block_on's join gives the main thread the order[] writes). */
    t->order[__atomic_fetch_add(t->n, 1, __ATOMIC_RELAXED)] = t->idx;
    FUT_END(f);
}
FUT_ASYNC_VTABLE(sleeper_vt, "sleeper", sleeper_poll, NULL);

START_TEST(sleep_firing_order)
{
    enum { N = 40 };
    struct fut_runtime *rt = rt_make(0);
    int order[N], n = 0, early = 0;
    int64_t now = fut_now_ns();
    struct fut_join j[N];
    for (int i = 0; i < N; i++) {
        struct sleeper t;
        fut_future_init(&t.base, &sleeper_vt);
        t.idx = (i * 17) % N; /* spawned out of deadline order */
        t.deadline = now + (t.idx + 1) * 3 * MS;
        t.order = order;
        t.n = &n;
        t.early = &early;
        ASSERT_EQ(fut_spawn(rt, &t, sizeof t, &j[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        ASSERT_EQ(fut_block_on(rt, &j[i].base), 0);
        ASSERT_EQ(j[i].result, 0);
        fut_drop(&j[i].base);
    }
    ASSERT_EQ(n, N);
    ASSERT_EQ(early, 0);
    /* The wheel wakes them in deadline order; on one thread they also run
     * in that order. On two workers a task woken first may be run later
     * (its worker preempted by the kernel for more than the 3 ms between
     * deadlines on a loaded machine): every one ran, none early. */
    int seen[N] = {0};
    for (int i = 0; i < N; i++) {
        if (!fut_test_rt_is_mt())
            ASSERT_EQ(order[i], i);
        ck_assert(order[i] >= 0 && order[i] < N && !seen[order[i]]);
        seen[order[i]] = 1;
    }
    ck_assert(fut_now_ns() - now >= N * 3 * MS);
    fut_runtime_free(rt);
}
END_TEST

START_TEST(sleep_never_early)
{
    struct fut_runtime *rt = rt_make(0);
    for (int i = 0; i < 5; i++) {
        struct fut_sleep s;
        int64_t t0 = fut_now_ns();
        fut_sleep_init(&s, (i + 1) * 2 * MS + 300000);
        ASSERT_EQ(fut_block_on(rt, &s.base), 0);
        ASSERT_EQ(s.result, 0);
        ck_assert(fut_now_ns() - t0 >= (i + 1) * 2 * MS + 300000);
        fut_drop(&s.base);
    }
    /* A deadline in the past or 0: READY at once. */
    struct fut_sleep s;
    fut_sleep_until_init(&s, 0);
    ASSERT_EQ(fut_block_on(rt, &s.base), 0);
    ASSERT_EQ(s.result, 0);
    fut_drop(&s.base);
    fut_runtime_free(rt);
}
END_TEST

/* Without a runtime a sleep that must wait reports FUT_EINVAL; one that
 * need not wait completes. */
START_TEST(sleep_without_runtime)
{
    struct fut_sleep s;
    fut_sleep_init(&s, 5 * MS);
    ASSERT_EQ(fut_block_on(NULL, &s.base), 0);
    ASSERT_EQ(s.result, FUT_EINVAL);
    fut_drop(&s.base);
    fut_sleep_until_init(&s, fut_now_ns() - 1);
    ASSERT_EQ(fut_block_on(NULL, &s.base), 0);
    ASSERT_EQ(s.result, 0);
    fut_drop(&s.base);
    /* A runtime without a driver is the same. */
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    cfg.no_driver = 1;
    struct fut_runtime *rt;
    ASSERT_EQ(fut_runtime_new(&cfg, &rt), 0);
    fut_sleep_init(&s, 5 * MS);
    ASSERT_EQ(fut_block_on(rt, &s.base), 0);
    ASSERT_EQ(s.result, FUT_EINVAL);
    fut_drop(&s.base);
    fut_runtime_free(rt);
}
END_TEST

/* A sleep polled again with another waker wakes that one, not the first
 * (fut__timer_poll's lock-free re-poll on a current-thread runtime skips
 * only a slot that holds the same waker); polled twice with the same
 * waker, it is woken once. */
struct two_wakers {
    struct count_waker a, b;
    struct fut_sleep s, t;
};

static void poll_with_two(void *ud)
{
    struct two_wakers *w = ud;
    struct fut_context ca = cw_context(&w->a), cb = cw_context(&w->b);
    fut_sleep_init(&w->s, 5 * MS);
    ASSERT_EQ(fut_poll(&w->s.base, &ca), FUT_PENDING);
    ASSERT_EQ(fut_poll(&w->s.base, &cb), FUT_PENDING);
    fut_sleep_init(&w->t, 5 * MS);
    ASSERT_EQ(fut_poll(&w->t.base, &ca), FUT_PENDING);
    ASSERT_EQ(fut_poll(&w->t.base, &ca), FUT_PENDING);
}

START_TEST(sleep_repoll_new_waker)
{
    struct fut_runtime *rt = rt_make(0);
    struct two_wakers w;
    atomic_init(&w.a.wakes, 0);
    atomic_init(&w.b.wakes, 0);
    run_on(rt, poll_with_two, &w);
    struct fut_sleep after; /* the driver runs past both deadlines */
    fut_sleep_init(&after, 60 * MS);
    ASSERT_EQ(fut_block_on(rt, &after.base), 0);
    fut_drop(&after.base);
    ck_assert_msg(
        atomic_load(&w.b.wakes) == 1 && atomic_load(&w.a.wakes) == 1,
        "the second waker woken %ld times, the first %ld (want "
        "1 and 1: s wakes b, t wakes a once)",
        (long)atomic_load(&w.b.wakes), (long)atomic_load(&w.a.wakes));
    fut_drop(&w.s.base);
    fut_drop(&w.t.base);
    fut_runtime_free(rt);
}
END_TEST

START_TEST(sleep_reset_rearms)
{
    struct fut_runtime *rt = rt_make(0);
    struct fut_sleep s;
    fut_sleep_init(&s, 3 * MS);
    ASSERT_EQ(fut_block_on(rt, &s.base), 0);
    int64_t t0 = fut_now_ns();
    fut_sleep_reset(&s, t0 + 4 * MS);
    ASSERT_TRUE(!fut_is_ready(&s.base));
    ASSERT_EQ(fut_block_on(rt, &s.base), 0);
    ck_assert(fut_now_ns() - t0 >= 4 * MS);
    fut_drop(&s.base);
    fut_runtime_free(rt);
}
END_TEST

/* A deadline pushed later while the sleep waits (fut_sleep_reset's cheap
 * path): every 5 ms a short 'tick' sleep fires and the task moves the
 * 'idle' sleep's deadline to now + 30 ms, 'pushes' times; then it waits.
 * The sleep must fire at the last deadline, never at one it was armed
 * with before (its timer fires there and must be re-armed), and the
 * pushes must leave the timer where it is (no wheel operation: its tick
 * unchanged, still armed). Then a deadline moved earlier fires at the
 * earlier time. */
struct pusher {
    struct fut_future base;
    struct fut_sleep idle, tick;
    int step, pushes, moved_tick;
    int64_t last_deadline, done_at, early_deadline;
};

static int pusher_poll(struct fut_future *f, struct fut_context *cx)
{
    struct pusher *p = (struct pusher *)f;
    struct fut__timer *t = fut__timer_of(&p->idle.timer);
    switch (p->step) {
    case 0:
        p->last_deadline = fut_time_now() + 30 * MS;
        fut_sleep_until_init(&p->idle, p->last_deadline);
        fut_sleep_init(&p->tick, 5 * MS);
        p->step = 1;
        /* fall through */
    case 1:
        while (p->pushes < 20) {
            if (fut_poll(&p->idle.base, cx) == FUT_READY) {
                /* Before the pushes end: right only if this thread was
                 * held up for longer than 30 ms (a loaded machine). */
                p->done_at = fut_time_now();
                p->step = 3;
                return FUT_READY;
            }
            if (fut_poll(&p->tick.base, cx) == FUT_PENDING)
                return FUT_PENDING;
            uint64_t when = t->e.when;
            int armed =
                fut__load(&t->state, FUT__RELAXED) == FUT__TIMER_ARMED;
            p->last_deadline = fut_time_now() + 30 * MS;
            fut_sleep_reset(&p->idle, p->last_deadline);
            if (armed &&
                (t->e.when != when ||
                 fut__load(&t->state, FUT__RELAXED) != FUT__TIMER_ARMED))
                p->moved_tick++; /* a wheel operation for a later deadline */
            p->pushes++;
            fut_sleep_reset(&p->tick, fut_time_now() + 5 * MS);
        }
        p->step = 2;
        /* fall through */
    case 2:
        if (fut_poll(&p->idle.base, cx) == FUT_PENDING)
            return FUT_PENDING;
        p->done_at = fut_time_now();
        /* Earlier: armed 2 s ahead, moved to 5 ms ahead. */
        fut_sleep_reset(&p->idle, fut_time_now() + 2000 * MS);
        if (fut_poll(&p->idle.base, cx) == FUT_READY)
            return FUT_READY;
        p->early_deadline = fut_time_now() + 5 * MS;
        fut_sleep_reset(&p->idle, p->early_deadline);
        p->step = 4;
        /* fall through */
    case 4:
        if (fut_poll(&p->idle.base, cx) == FUT_PENDING)
            return FUT_PENDING;
        p->early_deadline = fut_time_now() - p->early_deadline;
        p->step = 5;
        return FUT_READY;
    default:
        return FUT_READY;
    }
}

static void pusher_drop(struct fut_future *f)
{
    struct pusher *p = (struct pusher *)f;
    if (p->step) {
        fut_drop(&p->idle.base);
        fut_drop(&p->tick.base);
    }
}

static const struct fut_future_vtable pusher_vt = {pusher_poll, pusher_drop,
                                                   "pusher", NULL};

START_TEST(sleep_reset_later_is_cheap)
{
    struct fut_runtime *rt = rt_make(0);
    struct pusher p;
    memset(&p, 0, sizeof p);
    fut_future_init(&p.base, &pusher_vt);
    int64_t t0 = fut_time_now();
    ASSERT_EQ(fut_block_on(rt, &p.base), 0);
    fprintf(stderr,
            "pushed %d times over %lld ms; fired %lld ms after the last "
            "deadline; moved earlier: fired %lld ms after it\n",
            p.pushes, (long long)((p.done_at - t0) / MS),
            (long long)((p.done_at - p.last_deadline) / MS),
            (long long)(p.early_deadline / MS));
    ASSERT_EQ(p.moved_tick, 0); /* no wheel operation for a push */
    ASSERT_EQ(p.idle.result, 0);
    ck_assert_msg(p.done_at >= p.last_deadline,
                  "fired %lld ns before its deadline (after %d pushes)",
                  (long long)(p.last_deadline - p.done_at), p.pushes);
    if (p.step == 3) { /* held up past a deadline (see pusher_poll) */
        fut_drop(&p.base);
        fut_runtime_free(rt);
        return;
    }
    ASSERT_EQ(p.step, 5);
    ASSERT_EQ(p.pushes, 20); /* 20 x 5 ms: past the first 30 ms */
    /* Moved earlier: fired at (not before) the 5 ms deadline, long
     * before the 2 s one it was armed for (generous: a loaded machine
     * and the sanitizers). */
    ck_assert(p.early_deadline >= 0);
    ck_assert_msg(p.early_deadline < 1000 * MS, "fired %lld ms late",
                  (long long)(p.early_deadline / MS));
    fut_drop(&p.base);
    fut_runtime_free(rt);
}
END_TEST

/* ------------------------------------------------------------ timeout */

struct timeout_main {
    struct fut_future base;
    struct counting_future inner;
    struct fut_timeout to;
    int64_t deadline;
    int pending_polls, self_wake;
    int polls, drops, drops_at_ready, result, started;
};

static int timeout_main_poll(struct fut_future *f, struct fut_context *cx)
{
    struct timeout_main *m = (struct timeout_main *)f;
    if (!m->started) {
        counting_future_init(&m->inner, m->pending_polls, m->self_wake,
                             &m->polls, &m->drops, 5);
        fut_timeout_init(&m->to, &m->inner.base, m->deadline);
        m->started = 1;
    }
    if (fut_poll(&m->to.base, cx) == FUT_PENDING)
        return FUT_PENDING;
    /* Polled by hand (not FUT_AWAIT) to look at inner before the timeout
     * itself is dropped. */
    m->result = m->to.result;
    m->drops_at_ready = m->drops;
    fut_drop(&m->to.base);
    return FUT_READY;
}

static void timeout_main_drop(struct fut_future *f)
{
    struct timeout_main *m = (struct timeout_main *)f;
    if (m->started)
        fut_drop(&m->to.base);
}

static const struct fut_future_vtable timeout_main_vt = {
    timeout_main_poll, timeout_main_drop, "timeout_main", NULL};

static void timeout_main_init(struct timeout_main *m, int pending, int wake,
                              int64_t deadline)
{
    memset(m, 0, sizeof *m);
    fut_future_init(&m->base, &timeout_main_vt);
    m->pending_polls = pending;
    m->self_wake = wake;
    m->deadline = deadline;
}

/* C13: the timer wins, inner is dropped where it stood (at once, before
 * the timeout itself is dropped) and the result is FUT_ETIMEDOUT. */
START_TEST(timeout_drops_inner)
{
    struct fut_runtime *rt = rt_make(0);
    struct timeout_main m;
    int64_t t0 = fut_now_ns();
    timeout_main_init(&m, 1 << 30, 0, t0 + 20 * MS);
    struct fut_join j;
    ASSERT_EQ(fut_spawn(rt, &m, sizeof m, &j), 0);
    ASSERT_EQ(fut_block_on(rt, &j.base), 0);
    struct timeout_main *out = fut_join_output(&j);
    ASSERT_EQ(out->result, FUT_ETIMEDOUT);
    ASSERT_EQ(out->drops_at_ready, 1);
    ASSERT_EQ(out->drops, 1);
    ck_assert(out->polls >= 1 && out->polls <= 2);
    ck_assert(fut_now_ns() - t0 >= 20 * MS);
    fut_drop(&j.base);
    fut_runtime_free(rt);
}
END_TEST

/* Inner first: result 0, inner not dropped by the timeout before its own
 * drop, and the timer is disarmed (the wheel is empty). */
static void wheel_empty(void *ud)
{
    *(size_t *)ud = fut__iodrv_current()->wheel.count;
}

START_TEST(timeout_inner_wins)
{
    struct fut_runtime *rt = rt_make(0);
    struct timeout_main m;
    timeout_main_init(&m, 3, 1, fut_now_ns() + 10000 * MS);
    ASSERT_EQ(fut_block_on(rt, &m.base), 0);
    ASSERT_EQ(m.result, 0);
    ASSERT_EQ(m.drops_at_ready, 0);
    ASSERT_EQ(m.drops, 1); /* dropping the timeout dropped inner */
    ASSERT_EQ(m.polls, 4);
    ASSERT_EQ(m.inner.value, 5);
    size_t count = 99;
    run_on(rt, wheel_empty, &count);
    ASSERT_EQ(count, 0);
    fut_drop(&m.base);
    fut_runtime_free(rt);
}
END_TEST

/* Dropping the timeout (a cancel from outside) drops inner and disarms. */
START_TEST(timeout_dropped_early)
{
    struct fut_runtime *rt = rt_make(0);
    struct timeout_main m;
    timeout_main_init(&m, 1 << 30, 0, fut_now_ns() + 10000 * MS);
    struct fut_join j;
    ASSERT_EQ(fut_spawn(rt, &m, sizeof m, &j), 0);
    fut_test_run_pending(rt);
    fut_drop(&j.base); /* aborts the task: its future is dropped */
    fut_test_run_pending(rt);
    size_t count = 99;
    run_on(rt, wheel_empty, &count);
    ASSERT_EQ(count, 0);
    fut_runtime_free(rt);
}
END_TEST

/* ------------------------------------------------------- paused clock */

struct hour_main {
    struct fut_future base;
    struct fut_sleep s;
    struct fut_pending never;
    struct fut_timeout to;
    int64_t t0, t1, t2;
    int result;
};

static int hour_poll(struct fut_future *f, struct fut_context *cx)
{
    struct hour_main *m = (struct hour_main *)f;
    FUT_BEGIN(f);
    m->t0 = fut_time_now();
    fut_sleep_init(&m->s, 3600 * 1000 * MS);
    FUT_AWAIT(f, &m->s);
    m->t1 = fut_time_now();
    fut_pending_init(&m->never);
    fut_timeout_init(&m->to, &m->never.base,
                     fut_time_now() + 7200 * 1000 * MS);
    FUT_AWAIT(f, &m->to);
    m->result = m->to.result;
    m->t2 = fut_time_now();
    FUT_END(f);
}
FUT_ASYNC_VTABLE(hour_vt, "hour", hour_poll, NULL);

START_TEST(paused_hour_long_timeouts)
{
    struct fut_runtime *rt = rt_make(1);
    struct hour_main m;
    memset(&m, 0, sizeof m);
    fut_future_init(&m.base, &hour_vt);
    int64_t w0 = fut_now_ns();
    struct fut_join j;
    ASSERT_EQ(fut_spawn(rt, &m, sizeof m, &j), 0);
    ASSERT_EQ(fut_block_on(rt, &j.base), 0);
    struct hour_main *o = fut_join_output(&j);
    ASSERT_EQ(o->result, FUT_ETIMEDOUT);
    ck_assert(o->t1 - o->t0 >= 3600 * 1000 * MS);
    ck_assert(o->t1 - o->t0 < 3601 * 1000 * MS);
    ck_assert(o->t2 - o->t1 >= 7200 * 1000 * MS);
    ck_assert_msg(fut_now_ns() - w0 < 2000 * MS, "took %lld ms of real time",
                  (long long)((fut_now_ns() - w0) / MS));
    fut_drop(&j.base);
    fut_runtime_free(rt);
}
END_TEST

static void advance_in(void *ud)
{
    *(int *)ud = fut_time_advance(5 * MS);
}

static void now_in(void *ud)
{
    *(int64_t *)ud = fut_time_now();
}

START_TEST(paused_config_checks)
{
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    cfg.start_paused = 1;
    cfg.flavor = FUT_RT_MULTI_THREAD;
    cfg.workers = 2;
    struct fut_runtime *rt = NULL;
    ASSERT_EQ(fut_runtime_new(&cfg, &rt), FUT_EINVAL);
    ASSERT_EQ(fut_time_advance(5), FUT_EINVAL); /* no runtime here */
    rt = rt_make(0);
    int r = 0;
    run_on(rt, advance_in, &r);
    ASSERT_EQ(r, FUT_EINVAL); /* not paused */
    fut_runtime_free(rt);
    rt = rt_make(1);
    int64_t before = 0;
    r = 1;
    run_on(rt, now_in, &before);
    run_on(rt, advance_in, &r);
    ASSERT_EQ(r, 0);
    int64_t after = 0;
    run_on(rt, now_in, &after);
    ASSERT_EQ(after - before, 5 * MS);
    fut_runtime_free(rt);
}
END_TEST

/* ----------------------------------------------------------- interval */

struct iv_main {
    struct fut_future base;
    struct fut_interval iv;
    struct fut_interval_tick t;
    int mode, i;
    int64_t ticks[5], taken[5];
};

static int iv_poll(struct fut_future *f, struct fut_context *cx)
{
    struct iv_main *m = (struct iv_main *)f;
    FUT_BEGIN(f);
    fut_interval_init(&m->iv, 0, 10 * MS, m->mode);
    for (m->i = 0; m->i < 5; m->i++) {
        fut_interval_tick_init(&m->t, &m->iv);
        FUT_AWAIT(f, &m->t);
        ck_assert_int_eq(m->t.result, 0);
        m->ticks[m->i] = m->t.tick;
        m->taken[m->i] = fut_time_now();
        if (m->i == 0)
            fut_time_advance(35 * MS); /* miss three ticks */
    }
    FUT_END(f);
}
static void iv_cleanup(struct fut_future *f)
{
    fut_stream_drop(&((struct iv_main *)f)->iv.base);
}
FUT_ASYNC_VTABLE(iv_vt, "interval_main", iv_poll, iv_cleanup);

static void run_interval(int mode, int64_t *ticks, int64_t *taken)
{
    struct fut_runtime *rt = rt_make(1);
    struct iv_main m;
    memset(&m, 0, sizeof m);
    fut_future_init(&m.base, &iv_vt);
    m.mode = mode;
    ASSERT_EQ(fut_block_on(rt, &m.base), 0);
    for (int i = 0; i < 5; i++) {
        ticks[i] = m.ticks[i] - m.ticks[0];
        taken[i] = m.taken[i] - m.ticks[0];
    }
    fut_drop(&m.base);
    fut_runtime_free(rt);
}

START_TEST(interval_missed_burst)
{
    int64_t tk[5], tn[5];
    run_interval(FUT_MISSED_BURST, tk, tn);
    int64_t want[5] = {0, 10, 20, 30, 40};
    int64_t at[5] = {0, 35, 35, 35, 40};
    for (int i = 0; i < 5; i++) {
        ASSERT_EQ(tk[i], want[i] * MS);
        ASSERT_EQ(tn[i], at[i] * MS);
    }
}
END_TEST

START_TEST(interval_missed_delay)
{
    int64_t tk[5], tn[5];
    run_interval(FUT_MISSED_DELAY, tk, tn);
    int64_t want[5] = {0, 10, 45, 55, 65};
    for (int i = 0; i < 5; i++) {
        ASSERT_EQ(tk[i], want[i] * MS);
        ASSERT_EQ(tn[i], (i == 1 ? 35 : want[i]) * MS);
    }
}
END_TEST

START_TEST(interval_missed_skip)
{
    int64_t tk[5], tn[5];
    run_interval(FUT_MISSED_SKIP, tk, tn);
    int64_t want[5] = {0, 10, 40, 50, 60};
    for (int i = 0; i < 5; i++) {
        ASSERT_EQ(tk[i], want[i] * MS);
        ASSERT_EQ(tn[i], (i == 1 ? 35 : want[i]) * MS);
    }
}
END_TEST

/* ------------------------------------------- 10^6 cancelled timers */

struct million {
    struct count_waker cw;
    long armed;
};

static void arm_and_cancel(void *ud)
{
    struct million *m = ud;
    /* Batches of 10,000: armed, then all cancelled well before the
     * earliest deadline (20 ms after arming) even in sanitizer builds. */
    enum { BATCH = 10000 };
    int rounds = TEST_ITERS(100, 20);
    struct fut_sleep *s = malloc(BATCH * sizeof *s);
    ck_assert(s != NULL);
    struct fut_context cx = cw_context(&m->cw);
    uint64_t x = 1;
    for (int round = 0; round < rounds; round++) {
        for (int i = 0; i < BATCH; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            int64_t d = (int64_t)(20 + (x >> 33) % 100) * MS;
            fut_sleep_until_init(&s[i], fut_time_now() + d);
            int pr = fut_poll(&s[i].base, &cx);
            ck_assert_msg(pr == FUT_PENDING, "round %d i %d: READY (%s)",
                          round, i, fut_strerror(s[i].result));
            m->armed++;
        }
        for (int i = 0; i < BATCH; i++)
            fut_drop(&s[i].base);
    }
    ASSERT_EQ(fut__iodrv_current()->wheel.count, 0);
    free(s);
}

START_TEST(million_cancelled_never_fire)
{
    struct fut_runtime *rt = rt_make(0);
    struct million m;
    atomic_init(&m.cw.wakes, 0);
    m.armed = 0;
    run_on(rt, arm_and_cancel, &m);
    /* Let every deadline pass with the driver running. */
    struct fut_sleep s;
    fut_sleep_init(&s, 150 * MS);
    ASSERT_EQ(fut_block_on(rt, &s.base), 0);
    fut_drop(&s.base);
    ASSERT_EQ(m.armed, TEST_ITERS(1000000, 200000));
    ASSERT_EQ(atomic_load(&m.cw.wakes), 0);
    fut_runtime_free(rt);
}
END_TEST

/* ------------------------------------------------ drop at every PENDING */

static struct fut_sleep h_sleep;
static struct fut_future *make_sleep(void *ud, struct fut_runtime *rt)
{
    (void)ud;
    (void)rt;
    fut_sleep_init(&h_sleep, 3 * MS);
    return &h_sleep.base;
}

static struct timeout_main h_to;
static struct fut_future *make_timeout(void *ud, struct fut_runtime *rt)
{
    (void)rt;
    intptr_t wins = (intptr_t)ud;
    timeout_main_init(&h_to, wins ? 4 : 1 << 30, wins != 0,
                      fut_now_ns() + (wins ? 5000 : 4) * MS);
    return &h_to.base;
}

static int check_timeout(void *ud, int k)
{
    (void)ud;
    (void)k;
    return h_to.drops == (h_to.polls > 0 ? 1 : 0) ? 0 : 1;
}

START_TEST(drop_at_every_pending)
{
    struct fut_harness h;
    fut_harness_init(&h, make_sleep, NULL, NULL);
    ASSERT_EQ(fut_harness_run(&h), 0);
    ck_assert(h.pendings >= 1);
    for (intptr_t wins = 0; wins < 2; wins++) {
        fut_harness_init(&h, make_timeout, check_timeout, (void *)wins);
        int r = fut_harness_run(&h);
        ck_assert_msg(r == 0, "timeout(wins=%d): %s", (int)wins, h.msg);
        ck_assert(h.pendings >= 1);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("time_sleep");
    TCase *tc = fut_test_tcase(s, "sleep");
    tcase_add_test(tc, sleep_firing_order);
    tcase_add_test(tc, sleep_never_early);
    tcase_add_test(tc, sleep_without_runtime);
    tcase_add_test(tc, sleep_repoll_new_waker);
    tcase_add_test(tc, sleep_reset_rearms);
    tcase_add_test(tc, sleep_reset_later_is_cheap);
    tc = fut_test_tcase(s, "timeout");
    tcase_add_test(tc, timeout_drops_inner);
    tcase_add_test(tc, timeout_inner_wins);
    tcase_add_test(tc, timeout_dropped_early);
    tc = fut_test_tcase(s, "paused");
    tcase_add_test(tc, paused_hour_long_timeouts);
    tcase_add_test(tc, paused_config_checks);
    tc = fut_test_tcase(s, "interval");
    tcase_add_test(tc, interval_missed_burst);
    tcase_add_test(tc, interval_missed_delay);
    tcase_add_test(tc, interval_missed_skip);
    tc = fut_test_tcase(s, "million");
    tcase_add_test(tc, million_cancelled_never_fire);
    tc = fut_test_tcase(s, "harness");
    tcase_add_test(tc, drop_at_every_pending);
    return fut_test_run(s);
}
