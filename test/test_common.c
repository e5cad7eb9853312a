/* SPDX-License-Identifier: MIT */
/* Shared test helpers; see test.h. */
#include <time.h>

#include "test.h"

static long live_at_start;

int fut_test_rt_is_mt(void)
{
    const char *e = getenv("FUT_TEST_RT");
    return e && e[0] == 'm' && e[1] == 't';
}

struct fut_runtime *fut_test_rt(void)
{
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    if (fut_test_rt_is_mt()) {
        cfg.flavor = FUT_RT_MULTI_THREAD;
        cfg.workers = 2;
    }
    struct fut_runtime *rt = NULL;
    int r = fut_runtime_new(&cfg, &rt);
    ck_assert_msg(r == 0, "fut_runtime_new: %s", fut_strerror(r));
    return rt;
}

void fut_test_setup(void)
{
    live_at_start = fut_alloc_live();
}

void fut_test_teardown(void)
{
    long live = fut_alloc_live();
    ck_assert_msg(live == live_at_start,
                  "leak check: %ld blocks allocated through the hook are "
                  "still live (expected %ld)",
                  live, live_at_start);
}

TCase *fut_test_tcase(Suite *s, const char *name)
{
    TCase *tc = tcase_create(name);
    tcase_add_checked_fixture(tc, fut_test_setup, fut_test_teardown);
    tcase_set_timeout(tc, 600);
    suite_add_tcase(s, tc);
    return tc;
}

int fut_test_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    int ran = srunner_ntests_run(sr);
    srunner_free(sr);
    /* CTest names a case through CK_RUN_CASE: a name that matches none
     * (a case renamed in the .c but not in its .cmake) would run nothing
     * and pass. */
    if (ran == 0) {
        fprintf(stderr, "no test ran (CK_RUN_CASE=%s CK_RUN_SUITE=%s)\n",
                getenv("CK_RUN_CASE") ? getenv("CK_RUN_CASE") : "",
                getenv("CK_RUN_SUITE") ? getenv("CK_RUN_SUITE") : "");
        return EXIT_FAILURE;
    }
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

void fut_test_run_pending(struct fut_runtime *rt)
{
    for (int i = 0; i < 8; i++) {
        struct fut_yield y;
        fut_yield_init(&y);
        ck_assert_int_eq(fut_block_on(rt, &y.base), 0);
    }
    if (!fut_test_rt_is_mt())
        return;
    /* Workers run on their own: wait until the poll count stands still
     * for five 2 ms rounds and 20 ms have passed (at most ~2 s). A task
     * queued for a worker that the kernel has not run yet moves no count:
     * three rounds alone (6 ms) returned before a task spawned from this
     * thread was polled once on a loaded machine (core_task.spawn.mt
     * under ASan beside other builds: polls 0 vs 2). */
    uint64_t last = (uint64_t)-1;
    for (int still = 0, n = 0; (still < 5 || n < 10) && n < 1000; n++) {
        struct fut_rt_stats st;
        fut_runtime_stats(rt, &st);
        still = st.polls == last ? still + 1 : 0;
        last = st.polls;
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static int counting_poll(struct fut_future *f, struct fut_context *cx)
{
    struct counting_future *c = (struct counting_future *)f;
    if (c->polls)
        (*c->polls)++;
    if (c->pending_polls > 0) {
        c->pending_polls--;
        if (c->self_wake)
            fut_waker_wake_by_ref(&cx->waker);
        return FUT_PENDING;
    }
    return FUT_READY;
}

static void counting_drop(struct fut_future *f)
{
    struct counting_future *c = (struct counting_future *)f;
    if (c->drops)
        (*c->drops)++;
}

static const struct fut_future_vtable counting_vt = {
    counting_poll, counting_drop, "counting", NULL};

void counting_future_init(struct counting_future *f, int pending_polls,
                          int self_wake, int *polls, int *drops,
                          intptr_t value)
{
    fut_future_init(&f->base, &counting_vt);
    f->pending_polls = pending_polls;
    f->self_wake = self_wake;
    f->polls = polls;
    f->drops = drops;
    f->value = value;
}

intptr_t fut_test_acceptor_main(void *arg)
{
    struct fut_test_acceptor *a = arg;
    for (int i = 0; i < a->n; i++) {
        struct fut_io *c;
        if (fut_accept(a->ln, &c) != 0)
            return -1;
        fut_tcp_set_nodelay(c, 1);
        if (fut_fiber_spawn(fut_runtime_current(), a->conn, c, NULL,
                            &a->joins[i]) != 0) {
            fut_io_close(c);
            return -1;
        }
    }
    return 0;
}
