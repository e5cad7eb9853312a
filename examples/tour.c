/* SPDX-License-Identifier: MIT */
/* A tour of fut: each section exercises one idea of the runtime and prints
 * what happens, step by step. Run it: it ends by checking that every
 * allocation made through fut's allocator hook was given back.
 *
 *   1. a write-once cell: completed, taken, taken again (absent)
 *   2. two threads race to complete one cell: one wins, one is told
 *   3. a select between a channel and a future that never finishes: the
 *      winner is reported, the loser is dropped and its channel closed
 *   4. a task aborted while it waits: dropped, its handle says cancelled
 *   5. a stream mapped, filtered and folded
 *   6. timers: a sleep, and a timeout that drops its inner future
 *   7. sockets: a TCP echo over loopback between two tasks
 *   8. a pipeline: producers -> mpsc -> workers -> broadcast
 *      (tour_pipeline.c)
 *   9. task scopes, cancel tokens, the task dump, graceful shutdown
 *      (tour_scope.c)
 *  10. the runtime's counters
 *
 * Run: bash scripts/tour.sh (builds fut in build/, Release, and runs
 * ./build/examples/tour), or cmake --build <dir> --target tour and
 * <dir>/examples/tour in a build of your own. It exits 0 when every
 * check passed.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <fut.h>

#include "cmdline.h"

static int failures;
int tour_scope(struct fut_runtime *rt);

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            printf("   !! check failed: %s (line %d)\n", #cond, __LINE__);   \
            failures++;                                                      \
        }                                                                    \
    } while (0)

static void section(const char *title)
{
    printf("\n== %s\n", title);
}

/* ---------------------------------------------------------- 1. a cell */

static void tour_cell(void)
{
    section("1. a write-once cell: PENDING -> READY -> TAKEN");
    struct fut_cell c;
    uint64_t slot, out = 0, v = 42;
    fut_cell_init(&c, &slot, sizeof slot);
    int r = fut_cell_take(&c, &out);
    printf("   take while pending     -> %s (still PENDING)\n",
           fut_err_name(r));
    r = fut_cell_complete(&c, &v);
    printf("   complete(42)           -> %d (this completer won)\n", r);
    r = fut_cell_complete(&c, &v);
    printf("   complete(42) again     -> %s (write-once: the loser keeps "
           "its value)\n",
           fut_err_name(r));
    r = fut_cell_take(&c, &out);
    printf("   take                   -> %d, value %llu\n", r,
           (unsigned long long)out);
    CHECK(r == 1 && out == 42);
    r = fut_cell_take(&c, &out);
    printf("   take again             -> %d (absent: taken already, not an "
           "error)\n",
           r);
    CHECK(r == 0);
}

/* ------------------------------------------------ 2. racing completers */

struct racer {
    struct fut_cell *cell;
    uint64_t value;
    int result;
};

static void *race(void *arg)
{
    struct racer *r = arg;
    r->result = fut_cell_complete(r->cell, &r->value);
    return NULL;
}

static void tour_race(void)
{
    section("2. two threads race to complete one cell");
    struct fut_cell c;
    uint64_t slot, out = 0;
    fut_cell_init(&c, &slot, sizeof slot);
    struct racer a = {&c, 111, -1}, b = {&c, 222, -1};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, race, &a);
    pthread_create(&tb, NULL, race, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    printf("   thread A (111) -> %s\n",
           a.result ? fut_err_name(a.result) : "won");
    printf("   thread B (222) -> %s\n",
           b.result ? fut_err_name(b.result) : "won");
    fut_cell_take(&c, &out);
    printf("   the cell holds %llu: exactly one winner, one FUT_ELOST\n",
           (unsigned long long)out);
    CHECK((a.result == 0) != (b.result == 0));
    CHECK(out == (a.result == 0 ? 111u : 222u));
}

/* ----------------------------------------------------- 3. select drops */

/* Never completes; counts its drop. */
struct never {
    struct fut_future base;
    int *drops;
};
static int never_poll(struct fut_future *f, struct fut_context *cx)
{
    (void)f;
    (void)cx;
    return FUT_PENDING; /* nothing to wait for: it is dropped, not woken */
}
static void never_drop(struct fut_future *f)
{
    (*((struct never *)f)->drops)++;
}
static const struct fut_future_vtable never_vt = {never_poll, never_drop,
                                                  "never", NULL};

/* A task that sends one value on its channel. */
struct sender {
    struct fut_future base;
    struct fut_oneshot_tx tx;
    uint64_t value;
};
static int sender_poll(struct fut_future *f, struct fut_context *cx)
{
    struct sender *s = (struct sender *)f;
    (void)cx;
    printf("   [task] sending %llu\n", (unsigned long long)s->value);
    fut_oneshot_send(&s->tx, &s->value);
    return FUT_READY;
}
static void sender_drop(struct fut_future *f)
{
    fut_oneshot_tx_drop(&((struct sender *)f)->tx);
}
static const struct fut_future_vtable sender_vt = {sender_poll, sender_drop,
                                                   "sender", NULL};

/* The main future of section 3: selects between a receive and 'never'. */
struct selector {
    struct fut_future base;
    struct fut_oneshot_rx rx;
    struct fut_oneshot_recv recv;
    struct never nv;
    struct fut_select2 sel;
    uint64_t got;
    int never_drops;
};
static int selector_poll(struct fut_future *f, struct fut_context *cx)
{
    struct selector *s = (struct selector *)f;
    FUT_BEGIN(f);
    fut_oneshot_recv_init(&s->recv, &s->rx, &s->got);
    fut_future_init(&s->nv.base, &never_vt);
    s->nv.drops = &s->never_drops;
    fut_select2_init(&s->sel, &s->recv.base, &s->nv.base, FUT_SELECT_FAIR);
    printf("   select(recv, never) polled: both branches pending\n");
    FUT_AWAIT(f, &s->sel);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(selector_vt, "selector", selector_poll, NULL);

static void tour_select(struct fut_runtime *rt)
{
    section("3. select: the first ready branch wins, the loser is dropped");
    struct fut_oneshot_tx tx;
    struct selector s;
    memset(&s, 0, sizeof s);
    fut_future_init(&s.base, &selector_vt);
    if (fut_oneshot_new(sizeof(uint64_t), NULL, &tx, &s.rx) != 0)
        return;
    struct sender snd;
    fut_future_init(&snd.base, &sender_vt);
    snd.tx = tx;
    snd.value = 7;
    fut_spawn(rt, &snd, sizeof snd, NULL);
    fut_block_on(rt, &s.base);
    printf("   winner: branch %d (recv) with %llu; the 'never' branch was "
           "dropped %d time(s)\n",
           s.sel.winner, (unsigned long long)s.got, s.never_drops);
    CHECK(s.sel.winner == 0 && s.got == 7 && s.never_drops == 1);
    fut_drop(&s.base);
}

/* --------------------------------------------------- 4. abort a task */

/* Waits for a value that never comes (main keeps the sender). */
struct waiter {
    struct fut_future base;
    struct fut_oneshot_rx rx;
    struct fut_oneshot_recv recv;
    uint64_t got;
    int *dropped;
};
static int waiter_poll(struct fut_future *f, struct fut_context *cx)
{
    struct waiter *w = (struct waiter *)f;
    FUT_BEGIN(f);
    printf("   [task] waiting on a channel\n");
    fut_oneshot_recv_init(&w->recv, &w->rx, &w->got);
    FUT_AWAIT(f, &w->recv);
    FUT_END(f);
}
static void waiter_cleanup(struct fut_future *f)
{
    struct waiter *w = (struct waiter *)f;
    fut_oneshot_rx_drop(&w->rx);
    if (!fut_is_ready(f)) {
        *w->dropped = 1;
        printf("   [task] dropped where it stood: its receiver went with "
               "it\n");
    }
}
FUT_ASYNC_VTABLE(waiter_vt, "waiter", waiter_poll, waiter_cleanup);

static void tour_abort(struct fut_runtime *rt)
{
    section("4. abort a task that is waiting");
    struct fut_oneshot_tx tx;
    int dropped = 0;
    struct waiter w;
    memset(&w, 0, sizeof w);
    fut_future_init(&w.base, &waiter_vt);
    w.dropped = &dropped;
    if (fut_oneshot_new(sizeof(uint64_t), NULL, &tx, &w.rx) != 0)
        return;
    struct fut_join j;
    fut_spawn(rt, &w, sizeof w, &j);
    struct fut_yield y;
    fut_yield_init(&y);
    fut_block_on(rt, &y.base); /* the task runs once and waits */
    printf("   abort()\n");
    fut_join_abort(&j);
    fut_block_on(rt, &j.base);
    printf("   join -> %s\n", fut_err_name(j.result));
    uint64_t v = 1;
    int r = fut_oneshot_send(&tx, &v);
    printf("   a late send -> %s: nobody is left to receive\n",
           fut_err_name(r));
    CHECK(j.result == FUT_ECANCELED && dropped == 1 && r == FUT_ECLOSED);
    fut_drop(&j.base);
}

/* ------------------------------------------------- 5. fold a stream */

static void square(const void *in, void *out, void *ud)
{
    (void)ud;
    *(int64_t *)out = *(const int64_t *)in * *(const int64_t *)in;
}
static int is_even(const void *item, void *ud)
{
    (void)ud;
    return *(const int64_t *)item % 2 == 0;
}
static intptr_t add(intptr_t acc, const void *item, void *ud)
{
    (void)ud;
    return acc + (intptr_t) * (const int64_t *)item;
}

static void tour_stream(struct fut_runtime *rt)
{
    section("5. a stream: 1..10 -> square -> keep even -> sum");
    static const int64_t items[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    struct fut_stream_array src;
    struct fut_stream_map sq;
    struct fut_stream_filter ev;
    struct fut_stream_fold sum;
    fut_stream_array_init(&src, items, 10, sizeof items[0]);
    fut_stream_map_init(&sq, &src.base, sizeof(int64_t), square, NULL, NULL);
    fut_stream_filter_init(&ev, &sq.base, is_even, NULL);
    fut_stream_fold_init(&sum, &ev.base, 0, add, NULL, NULL);
    fut_block_on(rt, &sum.base);
    printf("   4 + 16 + 36 + 64 + 100 = %ld\n", (long)sum.acc);
    CHECK(sum.acc == 220);
    fut_drop(&sum.base);
}

/* ------------------------------------------- 6. timers and timeouts */

struct timed {
    struct fut_future base;
    struct fut_sleep nap;
    struct never nv;
    struct fut_timeout to;
    int never_drops;
    int64_t t0, slept_ns, waited_ns;
    int to_result;
};
static int timed_poll(struct fut_future *f, struct fut_context *cx)
{
    struct timed *t = (struct timed *)f;
    FUT_BEGIN(f);
    t->t0 = fut_time_now();
    fut_sleep_init(&t->nap, 20 * 1000 * 1000);
    printf("   sleep(20 ms)\n");
    FUT_AWAIT(f, &t->nap);
    t->slept_ns = fut_time_now() - t->t0;
    fut_future_init(&t->nv.base, &never_vt);
    t->nv.drops = &t->never_drops;
    t->t0 = fut_time_now();
    fut_timeout_init(&t->to, &t->nv.base, t->t0 + 30 * 1000 * 1000);
    printf("   timeout(never, 30 ms)\n");
    FUT_AWAIT(f, &t->to);
    t->waited_ns = fut_time_now() - t->t0;
    t->to_result = t->to.result;
    FUT_END(f);
}
FUT_ASYNC_VTABLE(timed_vt, "timed", timed_poll, NULL);

static void tour_timers(struct fut_runtime *rt)
{
    section("6. timers: a sleep, and a timeout that drops its inner future");
    struct timed t;
    memset(&t, 0, sizeof t);
    fut_future_init(&t.base, &timed_vt);
    fut_block_on(rt, &t.base);
    printf("   slept %.1f ms\n", t.slept_ns / 1e6);
    printf("   timeout -> %s after %.1f ms; the inner future was dropped %d "
           "time(s) where it stood\n",
           fut_err_name(t.to_result), t.waited_ns / 1e6, t.never_drops);
    CHECK(t.slept_ns >= 20 * 1000 * 1000);
    CHECK(t.to_result == FUT_ETIMEDOUT && t.never_drops == 1);
    fut_drop(&t.base);
}

/* ------------------------------------------------------- 7. sockets */

/* Server task: accepts one connection, reads, writes it back, closes. */
struct echo_once {
    struct fut_future base;
    struct fut_io *listener;
    struct fut_accept acc;
    struct fut_io_read rd;
    struct fut_io_write_all wr;
    char buf[64];
};
static int echo_once_poll(struct fut_future *f, struct fut_context *cx)
{
    struct echo_once *e = (struct echo_once *)f;
    FUT_BEGIN(f);
    fut_accept_init(&e->acc, e->listener);
    FUT_AWAIT(f, &e->acc);
    if (e->acc.result != 0)
        FUT_RETURN(f);
    printf("   [server] accepted a connection\n");
    fut_io_read_init(&e->rd, e->acc.conn, e->buf, sizeof e->buf);
    FUT_AWAIT(f, &e->rd);
    if (e->rd.result > 0) {
        printf("   [server] read %zd bytes, writing them back\n",
               e->rd.result);
        fut_io_write_all_init(&e->wr, e->acc.conn, e->buf,
                              (size_t)e->rd.result);
        FUT_AWAIT(f, &e->wr);
    }
    fut_io_close(e->acc.conn);
    e->acc.conn = NULL;
    FUT_END(f);
}
static void echo_once_cleanup(struct fut_future *f)
{
    struct echo_once *e = (struct echo_once *)f;
    if (e->acc.conn && fut_is_ready(&e->acc.base))
        fut_io_close(e->acc.conn);
}
FUT_ASYNC_VTABLE(echo_once_vt, "echo_once", echo_once_poll,
                 echo_once_cleanup);

/* Client (the main future): connects, sends "ping", reads the echo. */
struct client {
    struct fut_future base;
    struct sockaddr_storage addr;
    socklen_t len;
    struct fut_connect conn;
    struct fut_io_write_all wr;
    struct fut_io_read rd;
    char buf[64];
    ssize_t got;
};
static int client_poll(struct fut_future *f, struct fut_context *cx)
{
    struct client *c = (struct client *)f;
    FUT_BEGIN(f);
    fut_tcp_connect_init(&c->conn, (struct sockaddr *)&c->addr, c->len,
                         fut_time_now() + 1000 * 1000 * 1000);
    FUT_AWAIT(f, &c->conn);
    if (c->conn.result != 0)
        FUT_RETURN(f);
    printf("   [client] connected, sending \"ping\"\n");
    fut_io_write_all_init(&c->wr, c->conn.conn, "ping", 4);
    FUT_AWAIT(f, &c->wr);
    fut_io_read_init(&c->rd, c->conn.conn, c->buf, sizeof c->buf);
    FUT_AWAIT(f, &c->rd);
    c->got = c->rd.result;
    fut_io_close(c->conn.conn);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(client_vt, "client", client_poll, NULL);

static void tour_sockets(struct fut_runtime *rt)
{
    section("7. sockets: a TCP echo over loopback between two tasks");
    struct sockaddr_storage ss;
    socklen_t len;
    struct fut_io *lst;
    if (fut_addr_parse("127.0.0.1", 0, &ss, &len) != 0 ||
        fut_tcp_listen((struct sockaddr *)&ss, len, 16, &lst) != 0) {
        printf("   cannot listen on loopback\n");
        failures++;
        return;
    }
    fut_io_local_addr(lst, &ss, &len);
    printf("   listening on 127.0.0.1:%d\n", fut_addr_port(&ss));
    struct echo_once srv;
    memset(&srv, 0, sizeof srv);
    fut_future_init(&srv.base, &echo_once_vt);
    srv.listener = lst;
    struct fut_join sj;
    fut_spawn(rt, &srv, sizeof srv, &sj);
    struct client c;
    memset(&c, 0, sizeof c);
    fut_future_init(&c.base, &client_vt);
    c.addr = ss;
    c.len = len;
    fut_block_on(rt, &c.base);
    printf("   [client] got back %zd bytes: \"%.*s\"\n", c.got,
           c.got > 0 ? (int)c.got : 0, c.buf);
    CHECK(c.got == 4 && memcmp(c.buf, "ping", 4) == 0);
    fut_block_on(rt, &sj.base);
    fut_drop(&sj.base);
    fut_drop(&c.base);
    fut_io_close(lst);
}

int tour_pipeline(void); /* examples/tour_pipeline.c */

static const char usage_text[] =
    "usage: tour\n"
    "  A walk through fut's API, section by section, each checked; it\n"
    "  takes no arguments. Exit 0: every check passed.\n"
    "  -h, --help   this text\n";

int main(int argc, char **argv)
{
    if (argc > 1) { /* --help, or an argument the tour does not take */
        int help = ex_is_help(argv[1]) && argc == 2;
        if (!help)
            ex_bad("tour",
                   ex_is_help(argv[1]) ? "extra argument"
                                       : "unknown argument",
                   argv[ex_is_help(argv[1]) ? 2 : 1]);
        return ex_usage(help, usage_text);
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("fut tour: futures as write-once cells\n");
    struct fut_runtime *rt;
    int r = fut_runtime_new(NULL, &rt);
    if (r != 0) {
        printf("fut_runtime_new: %s\n", fut_strerror(r));
        return 1;
    }
    tour_cell();
    tour_race();
    tour_select(rt);
    tour_abort(rt);
    tour_stream(rt);
    tour_timers(rt);
    tour_sockets(rt);
    section("8. a pipeline: producers -> mpsc -> workers -> broadcast");
    CHECK(tour_pipeline() == 0); /* examples/tour_pipeline.c */
    failures += tour_scope(rt);  /* examples/tour_scope.c */
    section("10. the runtime's counters");
    struct fut_rt_stats st;
    fut_runtime_stats(rt, &st);
    printf("   tasks spawned %llu, alive %llu, polls %llu, parks %llu\n",
           (unsigned long long)st.spawned, (unsigned long long)st.alive,
           (unsigned long long)st.polls, (unsigned long long)st.parks);
    fut_runtime_free(rt);
    printf("\nshutdown: %ld blocks still allocated through fut's hook\n",
           fut_alloc_live());
    CHECK(fut_alloc_live() == 0);
    printf("%s\n", failures ? "tour: FAILED" : "tour: all checks passed");
    return failures ? 1 : 0;
}
