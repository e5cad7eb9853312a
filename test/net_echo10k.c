/* SPDX-License-Identifier: MIT */
/* 10,000 concurrent loopback connections to an echo server, each
 * exchanging messages: no error, no leak. The server runs in a forked
 * child (its own runtime and its own 20,000-fd limit: a client end and a
 * server end per connection would not fit one process); all 10,000 are
 * open at the same time before any is closed. */
#include <sys/wait.h>

#include "net_echo.h"

static int n_conns, connected, exchanged, finished, errors;

struct big_client {
    struct fut_future base;
    struct echo_client c;
    struct fut_sleep s;
    int64_t deadline;
};

static int big_client_poll(struct fut_future *f, struct fut_context *cx)
{
    struct big_client *b = (struct big_client *)f;
    FUT_BEGIN(f);
    FUT_AWAIT(f, &b->c);
    connected++;
    if (b->c.result != 0)
        errors++;
    exchanged++;
    /* Hold the connection until every client has exchanged. */
    while (exchanged < n_conns && fut_now_ns() < b->deadline) {
        fut_sleep_init(&b->s, 20 * MS);
        FUT_AWAIT(f, &b->s);
    }
    if (exchanged < n_conns)
        errors++;
    FUT_END(f);
}

static void big_client_cleanup(struct fut_future *f)
{
    struct big_client *b = (struct big_client *)f;
    if (b->c.io)
        fut_io_close(b->c.io);
    finished++;
}
FUT_ASYNC_VTABLE(big_client_vt, "big_client", big_client_poll,
                 big_client_cleanup);

struct driver_task {
    struct fut_future base;
    int port, spawned;
    int64_t deadline;
    struct fut_sleep s;
};

static int driver_poll(struct fut_future *f, struct fut_context *cx)
{
    struct driver_task *d = (struct driver_task *)f;
    FUT_BEGIN(f);
    /* Waves of 500 connects, so the listen backlog never overflows
     * (that would cost SYN retransmits of a second each). */
    while (d->spawned < n_conns && fut_now_ns() < d->deadline) {
        for (int k = 0; k < 500 && d->spawned < n_conns; k++, d->spawned++) {
            struct big_client b;
            fut_future_init(&b.base, &big_client_vt);
            echo_client_init(&b.c, d->port, 3, 64);
            b.c.keep_open = 1;
            b.deadline = d->deadline;
            if (fut_spawn(NULL, &b, sizeof b, NULL) != 0)
                errors++;
        }
        while (connected < d->spawned && fut_now_ns() < d->deadline) {
            fut_sleep_init(&d->s, 2 * MS);
            FUT_AWAIT(f, &d->s);
        }
    }
    while (finished < n_conns && fut_now_ns() < d->deadline) {
        fut_sleep_init(&d->s, 10 * MS);
        FUT_AWAIT(f, &d->s);
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(driver_vt, "driver", driver_poll, NULL);

/* The server process: serves until its control pipe closes. */
static void serve(struct fut_io *l, int ctl, long live_expected)
{
    struct fut_runtime *rt = rt_make(0);
    struct echo_stats st;
    memset(&st, 0, sizeof st);
    struct echo_server srv;
    echo_server_init(&srv, l, &st);
    struct fut_join js;
    int bad = fut_spawn(rt, &srv, sizeof srv, &js) != 0;
    struct fut_io *c;
    bad |= fut_io_from_fd(ctl, &c) != 0;
    char buf[1];
    struct fut_io_read rd;
    fut_io_read_init(&rd, c, buf, 1);
    fut_block_on(rt, &rd.base); /* EOF: the test is over */
    fut_drop(&rd.base);
    fut_drop(&js.base);
    fut_runtime_free(rt);
    fut_io_close(c);
    fut_io_close(l);
    bad |= atomic_load(&st.failed) != 0 || atomic_load(&st.live) != 0;
    bad |= fut_alloc_live() != live_expected;
    fprintf(stderr, "echo10k server: accepted %ld, failed %ld, live %ld\n",
            atomic_load(&st.accepted), atomic_load(&st.failed),
            fut_alloc_live() - live_expected);
    _exit(bad ? 1 : 0);
}

START_TEST(echo_10k_connections)
{
    n_conns = TEST_ITERS(10000, 2000);
    int port;
    struct fut_io *l = listen_any(&port);
    int ctl[2];
    ASSERT_EQ(pipe(ctl), 0);
    long live = fut_alloc_live();
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        close(ctl[1]);
        serve(l, ctl[0], live - 1);
    }
    close(ctl[0]);
    fut_io_close(l); /* the child's copy serves */
    struct fut_runtime *rt = rt_make(0);
    struct driver_task d;
    memset(&d, 0, sizeof d);
    fut_future_init(&d.base, &driver_vt);
    d.port = port;
    d.deadline = fut_now_ns() + 120000 * MS;
    int64_t t0 = fut_now_ns();
    ASSERT_EQ(fut_block_on(rt, &d.base), 0);
    fut_drop(&d.base);
    fut_runtime_free(rt);
    close(ctl[1]);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    fprintf(stderr, "echo10k: %d connections in %lld ms\n", n_conns,
            (long long)((fut_now_ns() - t0) / MS));
    ASSERT_EQ(errors, 0);
    ASSERT_EQ(connected, n_conns);
    ASSERT_EQ(exchanged, n_conns);
    ASSERT_EQ(finished, n_conns);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "server process status %d", status);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("net_echo10k");
    TCase *tc = fut_test_tcase(s, "echo10k");
    tcase_add_test(tc, echo_10k_connections);
    return fut_test_run(s);
}
