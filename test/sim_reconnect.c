/* SPDX-License-Identifier: MIT */
/* A seeded application bug on the simulated network (issue 34's fourth):
 * a reconnect loop that never recovers after a partition heals. A client
 * on its own host asks an echo server for a 4-byte pong every 200 ms on
 * a new connection, each step under a 100 ms deadline (fut_timeout), and
 * backs off 100 ms after a failure; after 8 failures in a row its circuit
 * breaker opens. The bug: an open breaker never lets a probe through (no
 * half-open state), so a partition long enough to open it cuts the client
 * off for good, although the network healed. In one seed of 20 a chaos
 * task partitions the two hosts at a seeded time for a seeded length (0
 * to 2.5 s); the run fails when the client had no answer after the heal
 * by the end (6 s of virtual time). The swarm finds the seed and reruns
 * it with FUT_SIM_SEED to the same trace; the fixed client (a probe every
 * 500 ms while open) recovers on every seed. Everything goes through the
 * unchanged fut_tcp_* and stream calls. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_scaffold.h"
#include "test.h"

#define MS 1000000LL

enum {
    END_MS = 6000,     /* the client stops asking then */
    EVERY_MS = 200,    /* one request per 200 ms */
    DEADLINE_MS = 100, /* per connect, per round trip */
    BACKOFF_MS = 100,  /* after a failure */
    OPEN_AFTER = 8,    /* failures in a row that open the breaker */
    PROBE_MS = 500,    /* the fix: a probe this often while open */
};

struct world {
    int fixed; /* the client has the half-open probe */
    struct sockaddr_storage srv;
    socklen_t srvlen;
    struct fut_sim_host *sh, *ch;
    int64_t healed_at; /* virtual ns of the heal; 0: no partition */
    int64_t last_ok;   /* virtual ns of the last answer */
    int answers, failures_max;
};

/* ------------------------------------------------------------ the server */

struct pong {
    struct fut_future base;
    struct fut_io *conn;
    char buf[4];
    struct fut_io_read rd;
    struct fut_io_write_all wa;
};

/* Echoes one 4-byte request (whatever comes, the server answers what it
 * got: the client checks), then closes. */
static int pong_poll(struct fut_future *f, struct fut_context *cx)
{
    struct pong *p = (struct pong *)f;
    FUT_BEGIN(f);
    fut_io_read_init(&p->rd, p->conn, p->buf, sizeof p->buf);
    FUT_AWAIT(f, &p->rd);
    if (p->rd.result > 0) {
        fut_io_write_all_init(&p->wa, p->conn, p->buf, (size_t)p->rd.result);
        FUT_AWAIT(f, &p->wa);
    }
    sim_close(&p->conn);
    FUT_END(f);
}

SIM_CLOSE_CLEANUP(pong_cleanup, pong, conn)
FUT_ASYNC_VTABLE(pong_vt, "pong", pong_poll, pong_cleanup);

struct server {
    struct fut_future base;
    struct world *w;
    struct fut_io *l;
    struct fut_accept a;
};

static int server_poll(struct fut_future *f, struct fut_context *cx)
{
    struct server *s = (struct server *)f;
    FUT_BEGIN(f);
    ck_assert_int_eq(fut_tcp_listen((struct sockaddr *)&s->w->srv,
                                    s->w->srvlen, 16, &s->l),
                     0);
    for (;;) { /* until the runtime goes (the run's end drops it) */
        fut_accept_init(&s->a, s->l);
        FUT_AWAIT(f, &s->a);
        if (s->a.result != 0)
            continue;
        struct pong p;
        memset(&p, 0, sizeof p);
        fut_future_init(&p.base, &pong_vt);
        p.conn = s->a.conn;
        ck_assert_int_eq(fut_spawn(NULL, &p, sizeof p, NULL), 0);
    }
    FUT_END(f);
}

SIM_CLOSE_CLEANUP(server_cleanup, server, l)
FUT_ASYNC_VTABLE(server_vt, "server", server_poll, server_cleanup);

/* ------------------------------------------------------------ the client */

struct client {
    struct fut_future base;
    struct world *w;
    int failures, open;
    int64_t probe_at;
    struct fut_connect c;
    struct fut_io *io;
    char in[4];
    size_t got;
    struct fut_io_write_all wa;
    struct fut_io_read rd;
    struct fut_timeout to;
    struct fut_sleep s;
};

static int64_t now_ms(void)
{
    return fut_time_now() / MS;
}

/* One failure: the connection (if any) closed, the breaker counted. */
static void failed(struct client *c)
{
    if (c->io) {
        sim_close(&c->io);
    }
    if (++c->failures > c->w->failures_max)
        c->w->failures_max = c->failures;
    if (c->failures >= OPEN_AFTER && !c->open) {
        c->open = 1;
        c->probe_at = fut_time_now() + PROBE_MS * MS;
    }
}

static int client_poll(struct fut_future *f, struct fut_context *cx)
{
    struct client *c = (struct client *)f;
    FUT_BEGIN(f);
    while (now_ms() < END_MS) {
        if (c->open) { /* the breaker: no attempt while it is open */
            int probe = c->w->fixed && fut_time_now() >= c->probe_at;
            if (!probe) {
                fut_sleep_init(&c->s, BACKOFF_MS * MS);
                FUT_AWAIT(f, &c->s);
                continue;
            }
            c->probe_at = fut_time_now() + PROBE_MS * MS; /* half-open */
        }
        fut_tcp_connect_init(&c->c, (struct sockaddr *)&c->w->srv,
                             c->w->srvlen, -1);
        fut_timeout_init(&c->to, &c->c.base,
                         fut_time_now() + DEADLINE_MS * MS);
        FUT_AWAIT(f, &c->to);
        if (c->to.result != 0 || c->c.result != 0) {
            failed(c);
        } else {
            c->io = c->c.conn;
            fut_io_write_all_init(&c->wa, c->io, "ping", 4);
            fut_timeout_init(&c->to, &c->wa.base,
                             fut_time_now() + DEADLINE_MS * MS);
            FUT_AWAIT(f, &c->to);
            c->got = 0;
            while (c->to.result == 0 && c->wa.result == 4 && c->got < 4) {
                fut_io_read_init(&c->rd, c->io, c->in + c->got, 4 - c->got);
                fut_timeout_init(&c->to, &c->rd.base,
                                 fut_time_now() + DEADLINE_MS * MS);
                FUT_AWAIT(f, &c->to);
                if (c->to.result != 0 || c->rd.result <= 0)
                    break;
                c->got += (size_t)c->rd.result;
            }
            if (c->got == 4) {
                ck_assert(!memcmp(c->in, "ping", 4));
                sim_close(&c->io);
                c->failures = 0;
                c->open = 0;
                c->w->answers++;
                c->w->last_ok = fut_time_now();
            } else {
                failed(c);
            }
        }
        fut_sleep_init(&c->s, (c->failures ? BACKOFF_MS : EVERY_MS) * MS);
        FUT_AWAIT(f, &c->s);
    }
    FUT_END(f);
}

SIM_CLOSE_CLEANUP(client_cleanup, client, io)
FUT_ASYNC_VTABLE(client_vt, "client", client_poll, client_cleanup);

/* ------------------------------------------------------------- the chaos */

/* In one seed of 20: a partition between the hosts at a seeded time in
 * the first second, healed after a seeded 0-2.5 s. */
struct chaos {
    struct fut_future base;
    struct world *w;
    int64_t len;
    struct fut_sleep s;
};

static int chaos_poll(struct fut_future *f, struct fut_context *cx)
{
    struct chaos *k = (struct chaos *)f;
    FUT_BEGIN(f);
    if (fut_sim_random() % 20 != 0)
        FUT_RETURN(f);
    fut_sleep_init(&k->s, (int64_t)(fut_sim_random() % 1000) * MS);
    FUT_AWAIT(f, &k->s);
    ck_assert_int_eq(fut_sim_partition(k->w->sh, k->w->ch), 0);
    k->len = (int64_t)(fut_sim_random() % 2500) * MS;
    fut_sleep_init(&k->s, k->len);
    FUT_AWAIT(f, &k->s);
    ck_assert_int_eq(fut_sim_heal(k->w->sh, k->w->ch), 0);
    k->w->healed_at = fut_time_now();
    FUT_END(f);
}
FUT_ASYNC_VTABLE(chaos_vt, "chaos", chaos_poll, NULL);

/* fut_sim_fn: the server on 10.0.0.1, the client on 10.0.1.1. 0 when the
 * client had an answer after the heal (or there was no partition); 1
 * when it stayed cut off. */
static int reconnect_run(struct fut_runtime *rt, void *ud)
{
    struct world *w = ud;
    int fixed = w->fixed;
    memset(w, 0, sizeof *w);
    w->fixed = fixed;
    ck_assert_int_eq(fut_sim_host_new(rt, "10.0.0.1", &w->sh), 0);
    ck_assert_int_eq(fut_sim_host_new(rt, "10.0.1.1", &w->ch), 0);
    ck_assert_int_eq(fut_addr_parse("10.0.0.1", 7000, &w->srv, &w->srvlen),
                     0);
    struct server s;
    memset(&s, 0, sizeof s);
    fut_future_init(&s.base, &server_vt);
    s.w = w;
    ck_assert_int_eq(fut_sim_spawn_on(w->sh, &s, sizeof s, NULL), 0);
    struct chaos k;
    memset(&k, 0, sizeof k);
    fut_future_init(&k.base, &chaos_vt);
    k.w = w;
    ck_assert_int_eq(fut_spawn(rt, &k, sizeof k, NULL), 0);
    struct client c;
    memset(&c, 0, sizeof c);
    fut_future_init(&c.base, &client_vt);
    c.w = w;
    struct fut_join cj;
    ck_assert_int_eq(fut_sim_spawn_on(w->ch, &c, sizeof c, &cj), 0);
    ck_assert_int_eq(fut_block_on(rt, &cj.base), 0);
    fut_drop(&cj.base);
    ck_assert_int_gt(w->answers, 0);
    return w->healed_at && w->last_ok < w->healed_at ? 1 : 0;
}

/* ----------------------------------------------------------------- cases */

START_TEST(reconnect_found)
{
    struct world w;
    memset(&w, 0, sizeof w);
    unsetenv("FUT_SIM_SEED");
    struct fut_sim_swarm sw;
    memset(&sw, 0, sizeof sw);
    sw.quiet = 1;
    struct fut_sim_swarm_result a, b;
    int r = fut_sim_swarm(&sw, 1, 10000, reconnect_run, &w, &a);
    ck_assert_msg(r == 1, "not found in 10,000 seeds (%d)", r);
    fprintf(stderr,
            "reconnect never recovers: found at seed %llu after %llu "
            "seeds (breaker opened after %d failures, %d answers)\n",
            (unsigned long long)a.failed_seed, (unsigned long long)a.seeds,
            w.failures_max, w.answers);
    ck_assert_int_ge(w.failures_max, OPEN_AFTER);
    /* The replay: FUT_SIM_SEED reruns that seed alone, to the same end. */
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)a.failed_seed);
    setenv("FUT_SIM_SEED", seed, 1);
    int r2 = fut_sim_swarm(&sw, 999999, 10000, reconnect_run, &w, &b);
    unsetenv("FUT_SIM_SEED");
    ASSERT_EQ(r2, r);
    ASSERT_EQ(b.seeds, 1);
    ASSERT_EQ(b.failed_seed, a.failed_seed);
    ASSERT_EQ(b.report.trace, a.report.trace);
    ASSERT_EQ(b.report.steps, a.report.steps);
    /* The fix (a probe every 500 ms while open) recovers: on that seed,
     * where the breaker opens, and on every other seed. */
    w.fixed = 1;
    struct fut_sim_report rep;
    ASSERT_EQ(fut_sim_run(NULL, a.failed_seed, reconnect_run, &w, &rep), 0);
    ck_assert_int_ge(w.failures_max, OPEN_AFTER);
    ck_assert(w.last_ok > w.healed_at);
    int n = TEST_ITERS(1000, 100);
    for (int i = 1; i <= n; i++)
        ck_assert_msg(
            fut_sim_run(NULL, (uint64_t)i, reconnect_run, &w, &rep) == 0,
            "the fixed client stayed cut off at seed %d", i);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_reconnect");
    TCase *tc = fut_test_tcase(s, "found");
    tcase_add_test(tc, reconnect_found);
    return fut_test_run(s);
}
