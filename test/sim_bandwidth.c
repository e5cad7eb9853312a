/* SPDX-License-Identifier: MIT */
/* A link's bandwidth under simulation (fut_sim_bandwidth): bytes per
 * second of virtual time, per direction, shared by what crosses the link.
 *   - tcp: 1 MB written at once over a 1 MB/s link with a 1 ms delay
 *     arrives in about 1 s of virtual time, spread over it (about half
 *     after half a second), and over an unlimited link in a few window
 *     round trips of 1 ms (the 64 KiB window re-opens as the reader
 *     reads);
 *   - udp: 100 datagrams of 10,000 bytes sent at once over the 1 MB/s
 *     link arrive one every 10 ms, the last after about 1 s;
 *   - same_seed: one trace per seed with a bandwidth set. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim_scaffold.h"
#include "test.h"

#define MS 1000000LL
#define TOTAL 1000000
#define BPS 1000000

struct bw {
    struct sockaddr_storage srv;
    socklen_t srvlen;
    int64_t t_start; /* the client's write began */
    int64_t t_first; /* the server read its first byte */
    int64_t t_last;  /* ... its last */
    int64_t half;    /* bytes read by t_start + 500 ms */
    int64_t got;     /* bytes read */
};

static unsigned char *payload;

struct sink {
    struct fut_future base;
    struct bw *w;
    struct fut_io *l, *conn;
    struct fut_accept a;
    char buf[65536];
    struct fut_io_read rd;
};

static int sink_poll(struct fut_future *f, struct fut_context *cx)
{
    struct sink *s = (struct sink *)f;
    FUT_BEGIN(f);
    ck_assert_int_eq(
        fut_tcp_listen((struct sockaddr *)&s->w->srv, s->w->srvlen, 4, &s->l),
        0);
    fut_accept_init(&s->a, s->l);
    FUT_AWAIT(f, &s->a);
    ck_assert_int_eq(s->a.result, 0);
    s->conn = s->a.conn;
    for (;;) {
        fut_io_read_init(&s->rd, s->conn, s->buf, sizeof s->buf);
        FUT_AWAIT(f, &s->rd);
        ck_assert_int_ge(s->rd.result, 0);
        if (s->rd.result == 0)
            break;
        if (!s->w->got)
            s->w->t_first = fut_time_now();
        ck_assert(memcmp(s->buf, payload + s->w->got, (size_t)s->rd.result) ==
                  0);
        s->w->got += s->rd.result;
        s->w->t_last = fut_time_now();
        if (s->w->t_last <= s->w->t_start + 500 * MS)
            s->w->half = s->w->got;
    }
    FUT_END(f);
}

static void sink_cleanup(struct fut_future *f)
{
    struct sink *s = (struct sink *)f;
    if (s->conn)
        fut_io_close(s->conn);
    if (s->l)
        fut_io_close(s->l);
}
FUT_ASYNC_VTABLE(sink_vt, "bw_sink", sink_poll, sink_cleanup);

struct source {
    struct fut_future base;
    struct bw *w;
    struct fut_connect c;
    struct fut_io *io;
    struct fut_io_write_all wa;
};

static int source_poll(struct fut_future *f, struct fut_context *cx)
{
    struct source *s = (struct source *)f;
    FUT_BEGIN(f);
    fut_tcp_connect_init(&s->c, (struct sockaddr *)&s->w->srv, s->w->srvlen,
                         -1);
    FUT_AWAIT(f, &s->c);
    ck_assert_int_eq(s->c.result, 0);
    s->io = s->c.conn;
    s->w->t_start = fut_time_now();
    fut_io_write_all_init(&s->wa, s->io, payload, TOTAL);
    FUT_AWAIT(f, &s->wa);
    ck_assert_int_eq(s->wa.result, TOTAL);
    ck_assert_int_eq(fut_io_shutdown(s->io, SHUT_WR), 0);
    FUT_END(f);
}

SIM_CLOSE_CLEANUP(source_cleanup, source, io)
FUT_ASYNC_VTABLE(source_vt, "bw_source", source_poll, source_cleanup);

/* The link's bandwidth for tcp_run (0: unlimited). */
static int64_t bw_bps;

static int tcp_run(struct fut_runtime *rt, void *ud)
{
    struct bw *w = ud;
    memset(w, 0, sizeof *w);
    struct fut_sim_host *a, *b;
    ck_assert_int_eq(fut_sim_host_new(rt, "10.0.0.1", &a), 0);
    ck_assert_int_eq(fut_sim_host_new(rt, "10.0.0.2", &b), 0);
    ck_assert_int_eq(fut_sim_latency(rt, a, b, 1 * MS, 1 * MS), 0);
    ck_assert_int_eq(fut_sim_bandwidth(rt, a, b, (uint64_t)bw_bps), 0);
    ck_assert_int_eq(fut_addr_parse("10.0.0.2", 9000, &w->srv, &w->srvlen),
                     0);
    struct sink s;
    memset(&s, 0, sizeof s);
    fut_future_init(&s.base, &sink_vt);
    s.w = w;
    struct source c;
    memset(&c, 0, sizeof c);
    fut_future_init(&c.base, &source_vt);
    c.w = w;
    struct fut_join sj, cj;
    ck_assert_int_eq(fut_sim_spawn_on(b, &s, sizeof s, &sj), 0);
    ck_assert_int_eq(fut_sim_spawn_on(a, &c, sizeof c, &cj), 0);
    ck_assert_int_eq(fut_block_on(rt, &cj.base), 0);
    ck_assert_int_eq(fut_block_on(rt, &sj.base), 0);
    fut_drop(&cj.base);
    fut_drop(&sj.base);
    ck_assert_int_eq(w->got, TOTAL);
    return 0;
}

START_TEST(tcp)
{
    unsetenv("FUT_SIM_SEED");
    payload = malloc(TOTAL);
    for (int i = 0; i < TOTAL; i++)
        payload[i] = (unsigned char)(i * 7 + (i >> 9));
    struct bw w;
    int64_t worst_lim = 0, best_lim = INT64_MAX, worst_free = 0;
    for (int seed = 1; seed <= TEST_ITERS(10, 3); seed++) {
        bw_bps = BPS;
        ASSERT_EQ(fut_sim_run(NULL, (uint64_t)seed, tcp_run, &w, NULL), 0);
        int64_t d = w.t_last - w.t_start;
        worst_lim = d > worst_lim ? d : worst_lim;
        best_lim = d < best_lim ? d : best_lim;
        /* Spread: the first bytes early, about half by 0.5 s. */
        ck_assert_int_le(w.t_first - w.t_start, 30 * MS);
        ck_assert_int_ge(w.half, TOTAL * 4 / 10);
        ck_assert_int_le(w.half, TOTAL * 6 / 10);
        bw_bps = 0;
        ASSERT_EQ(fut_sim_run(NULL, (uint64_t)seed, tcp_run, &w, NULL), 0);
        d = w.t_last - w.t_start;
        worst_free = d > worst_free ? d : worst_free;
        ck_assert_int_ge(d, 1 * MS);
    }
    fprintf(stderr,
            "bandwidth: 1 MB at 1 MB/s: %.3f-%.3f s; unlimited: <= %.3f s\n",
            best_lim / 1e9, worst_lim / 1e9, worst_free / 1e9);
    ck_assert_int_ge(best_lim, 1000 * MS);
    ck_assert_int_le(worst_lim, 1100 * MS);
    /* 1 MB through a 64 KiB window: 16 windows, each a 1 ms delay (on
     * the 1 ms timer tick), at most a few of them each. */
    ck_assert_int_le(worst_free, 80 * MS);
    free(payload);
    payload = NULL;
}
END_TEST

/* ------------------------------------------------------------ udp */

enum { NDGRAM = 100, DGRAM = 10000 };

struct ubw {
    struct fut_future base;
    struct fut_io *sa, *sb;
    struct sockaddr_storage ab, bb;
    socklen_t al, bl;
    unsigned char buf[DGRAM];
    struct fut_io_send_to st;
    struct fut_io_recv_from rf;
    int i;
    int64_t t0, *at; /* arrival times, after t0 */
};

static int ubw_poll(struct fut_future *f, struct fut_context *cx)
{
    struct ubw *u = (struct ubw *)f;
    FUT_BEGIN(f);
    ck_assert_int_eq(fut_addr_parse("10.0.0.1", 7000, &u->ab, &u->al), 0);
    ck_assert_int_eq(fut_addr_parse("10.0.0.2", 7000, &u->bb, &u->bl), 0);
    ck_assert_int_eq(fut_udp_bind((struct sockaddr *)&u->ab, u->al, &u->sa),
                     0);
    ck_assert_int_eq(fut_udp_bind((struct sockaddr *)&u->bb, u->bl, &u->sb),
                     0);
    u->t0 = fut_time_now();
    for (u->i = 0; u->i < NDGRAM; u->i++) {
        memset(u->buf, u->i, sizeof u->buf);
        fut_io_send_to_init(&u->st, u->sa, u->buf, DGRAM, 0,
                            (struct sockaddr *)&u->bb, u->bl);
        FUT_AWAIT(f, &u->st);
        ck_assert_int_eq(u->st.result, DGRAM);
    }
    ck_assert_int_eq(fut_time_now(), u->t0); /* sending took no time */
    for (u->i = 0; u->i < NDGRAM; u->i++) {
        fut_io_recv_from_init(&u->rf, u->sb, u->buf, sizeof u->buf, 0);
        FUT_AWAIT(f, &u->rf);
        ck_assert_int_eq(u->rf.result, DGRAM);
        ck_assert_int_eq(u->buf[0], u->i); /* in order */
        u->at[u->i] = fut_time_now() - u->t0;
    }
    FUT_END(f);
}

static void ubw_cleanup(struct fut_future *f)
{
    struct ubw *u = (struct ubw *)f;
    if (u->sa)
        fut_io_close(u->sa);
    if (u->sb)
        fut_io_close(u->sb);
}
FUT_ASYNC_VTABLE(ubw_vt, "bw_udp", ubw_poll, ubw_cleanup);

static int64_t udp_at[NDGRAM];

static int udp_run(struct fut_runtime *rt, void *ud)
{
    (void)ud;
    struct fut_sim_host *a, *b;
    ck_assert_int_eq(fut_sim_host_new(rt, "10.0.0.1", &a), 0);
    ck_assert_int_eq(fut_sim_host_new(rt, "10.0.0.2", &b), 0);
    ck_assert_int_eq(fut_sim_latency(rt, a, b, 1 * MS, 1 * MS), 0);
    ck_assert_int_eq(fut_sim_bandwidth(rt, NULL, NULL, BPS), 0);
    struct ubw *u = calloc(1, sizeof *u);
    fut_future_init(&u->base, &ubw_vt);
    u->at = udp_at;
    struct fut_join j;
    ck_assert_int_eq(fut_spawn(rt, u, sizeof *u, &j), 0);
    free(u);
    ck_assert_int_eq(fut_block_on(rt, &j.base), 0);
    fut_drop(&j.base);
    return 0;
}

START_TEST(udp)
{
    unsetenv("FUT_SIM_SEED");
    for (int seed = 1; seed <= TEST_ITERS(10, 3); seed++) {
        memset(udp_at, 0, sizeof udp_at);
        ASSERT_EQ(fut_sim_run(NULL, (uint64_t)seed, udp_run, NULL, NULL), 0);
        /* 10 ms on the link each (10,000 bytes at 1 MB/s), then 1 ms of
         * delay, on the 1 ms timer tick. */
        ck_assert_int_ge(udp_at[0], 11 * MS);
        ck_assert_int_le(udp_at[0], 13 * MS);
        for (int i = 1; i < NDGRAM; i++) {
            ck_assert_int_ge(udp_at[i] - udp_at[i - 1], 9 * MS);
            ck_assert_int_le(udp_at[i] - udp_at[i - 1], 11 * MS);
        }
        ck_assert_int_ge(udp_at[NDGRAM - 1], 1001 * MS);
        ck_assert_int_le(udp_at[NDGRAM - 1], 1003 * MS);
    }
}
END_TEST

START_TEST(same_seed)
{
    unsetenv("FUT_SIM_SEED");
    payload = malloc(TOTAL);
    memset(payload, 'p', TOTAL);
    struct bw w;
    struct fut_sim_report first, rep;
    bw_bps = BPS / 2;
    for (int run = 0; run < TEST_ITERS(5, 2); run++) {
        ASSERT_EQ(fut_sim_run(NULL, 3, tcp_run, &w, &rep), 0);
        if (run == 0)
            first = rep;
        ck_assert_uint_eq(rep.trace, first.trace);
        ck_assert_int_eq(rep.virtual_ns, first.virtual_ns);
    }
    ck_assert_int_ge(first.virtual_ns, 2000 * MS); /* 1 MB at 0.5 MB/s */
    free(payload);
    payload = NULL;
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_bandwidth");
    TCase *tc = fut_test_tcase(s, "tcp");
    tcase_add_test(tc, tcp);
    tc = fut_test_tcase(s, "udp");
    tcase_add_test(tc, udp);
    tc = fut_test_tcase(s, "same_seed");
    tcase_add_test(tc, same_seed);
    return fut_test_run(s);
}
