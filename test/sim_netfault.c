/* SPDX-License-Identifier: MIT */
/* The simulated network's faults (fut/sim.h, src/io/backend_sim.c,
 * src/io/simnet_wire.c): a listener's backlog is honoured (connects
 * beyond backlog + 1 waiting are refused, and go through again once the
 * server accepts); a host crash drops the tasks spawned on it, closes its
 * listeners and resets its connections at the peers, and after a restart
 * the server spawned again on the same address serves the clients'
 * reconnect loops, one trace per seed; the swarm's socket faults (a
 * spurious EAGAIN, a reset) strike per seed, repeat exactly for a seed,
 * lose no byte, and are named in the swarm's failure line. Everything
 * runs through the unchanged fut_tcp_* and stream calls. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "sim_scaffold.h"
#include "test.h"

#define MS 1000000LL

/* ------------------------------------------------- an echo server */

/* What the server side did (the tasks run copies: they count here). */
struct srv_stats {
    int live;        /* server and handler tasks alive (spawned, not
                        dropped) */
    int dropped;     /* tasks dropped before they finished */
    int errors;      /* reads or writes that failed at the server */
    int accepts;     /* connections accepted */
    int accept_fail; /* accepts that failed */
};

struct handler {
    struct fut_future base;
    struct srv_stats *st;
    struct fut_io *conn;
    char buf[256];
    struct fut_io_read rd;
    struct fut_io_write_all wa;
    int done;
};

static int handler_poll(struct fut_future *f, struct fut_context *cx)
{
    struct handler *h = (struct handler *)f;
    FUT_BEGIN(f);
    for (;;) {
        fut_io_read_init(&h->rd, h->conn, h->buf, sizeof h->buf);
        FUT_AWAIT(f, &h->rd);
        if (h->rd.result <= 0) {
            h->st->errors += h->rd.result < 0;
            break;
        }
        fut_io_write_all_init(&h->wa, h->conn, h->buf, (size_t)h->rd.result);
        FUT_AWAIT(f, &h->wa);
        if (h->wa.result < 0) {
            h->st->errors++;
            break;
        }
    }
    h->done = 1;
    FUT_END(f);
}

static void handler_cleanup(struct fut_future *f)
{
    struct handler *h = (struct handler *)f;
    if (h->conn)
        fut_io_close(h->conn);
    h->st->live--;
    h->st->dropped += !h->done;
}
FUT_ASYNC_VTABLE(handler_vt, "handler", handler_poll, handler_cleanup);

/* Listens on 'at' with 'backlog', sleeps 'delay' (virtual), then accepts
 * 'max' connections (0: for ever), one handler task each, spawned on
 * the server's host. */
struct server {
    struct fut_future base;
    struct sockaddr_storage at;
    socklen_t atlen;
    int backlog, max, n, done;
    int64_t delay;
    struct fut_sim_host *host;
    struct srv_stats *st;
    struct fut_io *l;
    struct fut_sleep sl;
    struct fut_accept a;
};

static int server_poll(struct fut_future *f, struct fut_context *cx)
{
    struct server *s = (struct server *)f;
    FUT_BEGIN(f);
    ck_assert_int_eq(fut_tcp_listen((struct sockaddr *)&s->at, s->atlen,
                                    s->backlog, &s->l),
                     0);
    if (s->delay) {
        fut_sleep_init(&s->sl, s->delay);
        FUT_AWAIT(f, &s->sl);
    }
    while (!s->max || s->n < s->max) {
        fut_accept_init(&s->a, s->l);
        FUT_AWAIT(f, &s->a);
        if (s->a.result != 0) { /* the listener is gone */
            s->st->accept_fail++;
            break;
        }
        s->n++;
        s->st->accepts++;
        struct handler h;
        memset(&h, 0, sizeof h);
        fut_future_init(&h.base, &handler_vt);
        h.st = s->st;
        h.conn = s->a.conn;
        s->st->live++;
        if (fut_sim_spawn_on(s->host, &h, sizeof h, NULL) != 0) {
            s->st->live--;
            fut_io_close(h.conn);
        }
    }
    s->done = 1;
    FUT_END(f);
}

static void server_cleanup(struct fut_future *f)
{
    struct server *s = (struct server *)f;
    if (s->l)
        fut_io_close(s->l);
    s->st->live--;
    s->st->dropped += !s->done;
}
FUT_ASYNC_VTABLE(server_vt, "server", server_poll, server_cleanup);

static int spawn_server(struct fut_sim_host *host, const char *addr,
                        int backlog, int max, int64_t delay,
                        struct srv_stats *st, struct fut_join *j)
{
    struct server s;
    memset(&s, 0, sizeof s);
    fut_future_init(&s.base, &server_vt);
    ck_assert_int_eq(fut_addr_parse(addr, 7000, &s.at, &s.atlen), 0);
    s.backlog = backlog;
    s.max = max;
    s.delay = delay;
    s.host = host;
    s.st = st;
    st->live++;
    int r = fut_sim_spawn_on(host, &s, sizeof s, j);
    if (r)
        st->live--;
    return r;
}

/* ------------------------------------------------------------ backlog */

/* A client that connects once, then sends one byte and reads its echo. */
struct oneshot {
    struct fut_future base;
    struct sockaddr_storage to;
    socklen_t tolen;
    int64_t after; /* sleeps this long first (virtual ns) */
    struct fut_sleep sl;
    struct fut_connect c;
    struct fut_io *io;
    struct fut_io_write_all wa;
    struct fut_io_read rd;
    char b;
    int *connected, *refused, *echoed;
};

static int oneshot_poll(struct fut_future *f, struct fut_context *cx)
{
    struct oneshot *o = (struct oneshot *)f;
    FUT_BEGIN(f);
    if (o->after) {
        fut_sleep_init(&o->sl, o->after);
        FUT_AWAIT(f, &o->sl);
    }
    fut_tcp_connect_init(&o->c, (struct sockaddr *)&o->to, o->tolen, -1);
    FUT_AWAIT(f, &o->c);
    if (o->c.result == -ECONNREFUSED) {
        (*o->refused)++;
        FUT_RETURN(f);
    }
    ck_assert_int_eq(o->c.result, 0);
    (*o->connected)++;
    o->io = o->c.conn;
    fut_io_write_all_init(&o->wa, o->io, "x", 1);
    FUT_AWAIT(f, &o->wa);
    ck_assert_int_eq(o->wa.result, 1);
    fut_io_read_init(&o->rd, o->io, &o->b, 1);
    FUT_AWAIT(f, &o->rd);
    ck_assert_int_eq(o->rd.result, 1);
    ck_assert_int_eq(o->b, 'x');
    (*o->echoed)++;
    FUT_END(f);
}

SIM_CLOSE_CLEANUP(oneshot_cleanup, oneshot, io)
FUT_ASYNC_VTABLE(oneshot_vt, "oneshot", oneshot_poll, oneshot_cleanup);

struct blog {
    int backlog;      /* the server's */
    int first, later; /* clients at once; clients after the accepts */
    int connected, refused, echoed;
    struct srv_stats st;
};

/* The server on 10.0.0.1 sleeps 1 s before it accepts anything: the
 * 'first' clients, connecting at once, fill its queue; 'later' more
 * connect at 2 s, when it accepts at once. */
static int backlog_run(struct fut_runtime *rt, void *ud)
{
    struct blog *b = ud;
    b->connected = b->refused = b->echoed = 0;
    memset(&b->st, 0, sizeof b->st);
    int n = b->first + b->later;
    struct fut_sim_host *sh;
    ck_assert_int_eq(fut_sim_host_new(rt, "10.0.0.1", &sh), 0);
    struct fut_join sj, cj[16];
    ck_assert_int_le(n, 16);
    ck_assert_int_eq(
        spawn_server(sh, "10.0.0.1", b->backlog, 0, 1000 * MS, &b->st, &sj),
        0);
    for (int i = 0; i < n; i++) {
        char addr[32];
        snprintf(addr, sizeof addr, "10.0.1.%d", i + 1);
        struct fut_sim_host *ch;
        ck_assert_int_eq(fut_sim_host_new(rt, addr, &ch), 0);
        struct oneshot o;
        memset(&o, 0, sizeof o);
        fut_future_init(&o.base, &oneshot_vt);
        ck_assert_int_eq(fut_addr_parse("10.0.0.1", 7000, &o.to, &o.tolen),
                         0);
        o.after = i < b->first ? 0 : 2000 * MS;
        o.connected = &b->connected;
        o.refused = &b->refused;
        o.echoed = &b->echoed;
        ck_assert_int_eq(fut_sim_spawn_on(ch, &o, sizeof o, &cj[i]), 0);
    }
    int r = 0;
    for (int i = 0; i < n; i++) {
        int x = fut_block_on(rt, &cj[i].base);
        if (x || cj[i].result)
            r = x ? x : cj[i].result;
        fut_drop(&cj[i].base);
    }
    fut_drop(&sj.base); /* aborts the server; its handlers go at the end */
    return r;
}

START_TEST(backlog)
{
    unsetenv("FUT_SIM_SEED");
    struct blog b;
    memset(&b, 0, sizeof b);
    /* Backlog 2: three wait (Linux's backlog + 1), three are refused;
     * once the server accepted them, three later clients all get in
     * (their SYNs may land in one tick, before the server accepts). */
    b.backlog = 2;
    b.first = 6;
    b.later = 3;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        struct fut_sim_report r1, r2;
        ASSERT_EQ(fut_sim_run(NULL, seed, backlog_run, &b, &r1), 0);
        ck_assert_msg(b.connected == 3 + 3 && b.refused == 3 &&
                          b.echoed == 6 && b.st.accepts == 6,
                      "seed %llu: connected %d refused %d echoed %d "
                      "accepts %d",
                      (unsigned long long)seed, b.connected, b.refused,
                      b.echoed, b.st.accepts);
        ASSERT_EQ(fut_sim_run(NULL, seed, backlog_run, &b, &r2), 0);
        ASSERT_EQ(r1.trace, r2.trace);
        ASSERT_EQ(r1.steps, r2.steps);
    }
    /* Backlog 1: two wait. Backlog 0 is fut_tcp_listen's SOMAXCONN
     * (the simulation's bound is 4096), so all six wait. */
    b.backlog = 1;
    b.later = 0;
    ASSERT_EQ(fut_sim_run(NULL, 7, backlog_run, &b, NULL), 0);
    ASSERT_EQ(b.connected, 2);
    ASSERT_EQ(b.refused, 4);
    ASSERT_EQ(b.echoed, 2);
    b.backlog = 0;
    ASSERT_EQ(fut_sim_run(NULL, 7, backlog_run, &b, NULL), 0);
    ASSERT_EQ(b.connected, 6);
    ASSERT_EQ(b.refused, 0);
    ASSERT_EQ(b.echoed, 6);
}
END_TEST

/* ------------------------------------------------- crash and restart */

enum { RCLIENTS = 3, ANSWERS = 30 };

/* A client with a reconnect loop: connects (200 ms deadline, 50 ms
 * pause after a failure), then asks for an echo every 20 ms, each under
 * a 300 ms deadline; any failure closes the connection and reconnects.
 * It stops after ANSWERS exact answers. */
struct rclient {
    struct fut_future base;
    struct sockaddr_storage to;
    socklen_t tolen;
    int id, got, k;
    int resets, others, connects; /* ECONNRESET seen, other failures */
    int got_at_crash;             /* answers when the host crashed */
    struct fut_connect c;
    struct fut_io *io;
    char out[16], in[16];
    size_t len, n;
    struct fut_io_write_all wa;
    struct fut_io_read rd;
    struct fut_timeout to_;
    struct fut_sleep sl;
    struct rclient *self; /* where the test reads the counts */
};

/* Counts a failure 'err' and drops the connection. */
static void rclient_fail(struct rclient *c, long err)
{
    if (err == -ECONNRESET)
        c->self->resets++;
    else
        c->self->others++;
    sim_close(&c->io);
}

static int rclient_poll(struct fut_future *f, struct fut_context *cx)
{
    struct rclient *c = (struct rclient *)f;
    FUT_BEGIN(f);
    while (c->got < ANSWERS) {
        if (!c->io) {
            fut_tcp_connect_init(&c->c, (struct sockaddr *)&c->to, c->tolen,
                                 fut_time_now() + 200 * MS);
            FUT_AWAIT(f, &c->c);
            if (c->c.result != 0) {
                fut_sleep_init(&c->sl, 50 * MS);
                FUT_AWAIT(f, &c->sl);
                continue;
            }
            c->io = c->c.conn;
            c->self->connects++;
        }
        c->len =
            (size_t)snprintf(c->out, sizeof c->out, "c%d.%d;", c->id, c->k++);
        fut_io_write_all_init(&c->wa, c->io, c->out, c->len);
        FUT_AWAIT(f, &c->wa);
        if (c->wa.result < 0) {
            rclient_fail(c, c->wa.result);
            continue;
        }
        for (c->n = 0; c->n < c->len; c->n += (size_t)c->rd.result) {
            fut_io_read_init(&c->rd, c->io, c->in + c->n, c->len - c->n);
            fut_timeout_init(&c->to_, &c->rd.base, fut_time_now() + 300 * MS);
            FUT_AWAIT(f, &c->to_);
            if (c->to_.result != 0 || c->rd.result <= 0)
                break;
        }
        if (c->n < c->len) {
            rclient_fail(c, c->to_.result       ? c->to_.result
                            : c->rd.result == 0 ? -EPIPE
                                                : c->rd.result);
            continue;
        }
        ck_assert_msg(memcmp(c->in, c->out, c->len) == 0,
                      "client %d: a wrong answer", c->id);
        c->got++;
        c->self->got = c->got;
        fut_sleep_init(&c->sl, 20 * MS);
        FUT_AWAIT(f, &c->sl);
    }
    sim_close(&c->io);
    FUT_END(f);
}

SIM_CLOSE_CLEANUP(rclient_cleanup, rclient, io)
FUT_ASYNC_VTABLE(rclient_vt, "rclient", rclient_poll, rclient_cleanup);

struct crashw {
    struct rclient cl[RCLIENTS]; /* the counts (the tasks run copies) */
    struct srv_stats st;
    struct fut_join sj[2]; /* the server before and after the restart */
    int live_after_crash, dropped_by_crash;
    int64_t t_crash, t_restart;
    int no_restart; /* break it: never restart */
};

/* The chaos: crashes the server's host at a seeded time, checks what
 * the crash did and refused, restarts it after a seeded pause and spawns
 * the server again on the same address. */
struct chaos {
    struct fut_future base;
    struct crashw *w;
    struct fut_sim_host *sh;
    struct fut_sleep sl;
};

static int chaos_poll(struct fut_future *f, struct fut_context *cx)
{
    struct chaos *k = (struct chaos *)f;
    struct crashw *w = k->w;
    FUT_BEGIN(f);
    fut_sleep_init(&k->sl, (int64_t)(100 + fut_sim_random() % 300) * MS);
    FUT_AWAIT(f, &k->sl);
    w->dropped_by_crash = w->st.dropped;
    ck_assert_int_eq(fut_sim_crash(k->sh), 0);
    w->t_crash = fut_time_now();
    for (int i = 0; i < RCLIENTS; i++)
        w->cl[i].got_at_crash = w->cl[i].got;
    ck_assert_int_eq(fut_sim_crash(k->sh), FUT_EINVAL); /* down already */
    {
        struct handler h;
        memset(&h, 0, sizeof h);
        fut_future_init(&h.base, &handler_vt);
        ck_assert_int_eq(fut_sim_spawn_on(k->sh, &h, sizeof h, NULL),
                         FUT_ESHUTDOWN);
    }
    /* Idle tasks went at once; one that was queued goes at its turn. */
    fut_sleep_init(&k->sl, 1 * MS);
    FUT_AWAIT(f, &k->sl);
    w->live_after_crash = w->st.live;
    w->dropped_by_crash = w->st.dropped - w->dropped_by_crash;
    if (w->no_restart)
        FUT_RETURN(f);
    fut_sleep_init(&k->sl, (int64_t)(50 + fut_sim_random() % 800) * MS);
    FUT_AWAIT(f, &k->sl);
    ck_assert_int_eq(fut_sim_restart(k->sh), 0);
    ck_assert_int_eq(fut_sim_restart(k->sh), FUT_EINVAL); /* up already */
    w->t_restart = fut_time_now();
    ck_assert_int_eq(
        spawn_server(k->sh, "10.0.0.1", 16, 0, 0, &w->st, &w->sj[1]), 0);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(chaos_vt, "chaos", chaos_poll, NULL);

static int crash_run(struct fut_runtime *rt, void *ud)
{
    struct crashw *w = ud;
    int no_restart = w->no_restart;
    memset(w, 0, sizeof *w);
    w->no_restart = no_restart;
    struct fut_sim_host *sh;
    ck_assert_int_eq(fut_sim_host_new(rt, "10.0.0.1", &sh), 0);
    ck_assert_int_eq(fut_sim_crash(sh), FUT_EINVAL);   /* not in block_on */
    ck_assert_int_eq(fut_sim_restart(sh), FUT_EINVAL); /* not down */
    ck_assert_int_eq(
        spawn_server(sh, "10.0.0.1", 16, 0, 0, &w->st, &w->sj[0]), 0);
    struct fut_join cj[RCLIENTS], kj;
    for (int i = 0; i < RCLIENTS; i++) {
        char addr[32];
        snprintf(addr, sizeof addr, "10.0.1.%d", i + 1);
        struct fut_sim_host *ch;
        ck_assert_int_eq(fut_sim_host_new(rt, addr, &ch), 0);
        struct rclient c;
        memset(&c, 0, sizeof c);
        fut_future_init(&c.base, &rclient_vt);
        ck_assert_int_eq(fut_addr_parse("10.0.0.1", 7000, &c.to, &c.tolen),
                         0);
        c.id = i;
        c.self = &w->cl[i];
        ck_assert_int_eq(fut_sim_spawn_on(ch, &c, sizeof c, &cj[i]), 0);
    }
    struct chaos k;
    memset(&k, 0, sizeof k);
    fut_future_init(&k.base, &chaos_vt);
    k.w = w;
    k.sh = sh;
    ck_assert_int_eq(fut_spawn(rt, &k, sizeof k, &kj), 0);
    int r = 0;
    ck_assert_int_eq(fut_block_on(rt, &kj.base), 0);
    ck_assert_int_eq(kj.result, 0);
    fut_drop(&kj.base);
    /* The first server was aborted by the crash. */
    ck_assert_int_eq(fut_block_on(rt, &w->sj[0].base), 0);
    ck_assert_int_eq(w->sj[0].result, FUT_ECANCELED);
    fut_drop(&w->sj[0].base);
    if (w->no_restart) { /* the clients never finish: stop them */
        struct fut_sleep sl;
        fut_sleep_init(&sl, 3000 * MS);
        fut_block_on(rt, &sl.base);
        for (int i = 0; i < RCLIENTS; i++) {
            fut_join_abort(&cj[i]);
            fut_block_on(rt, &cj[i].base);
            fut_drop(&cj[i].base);
        }
        return 0;
    }
    for (int i = 0; i < RCLIENTS; i++) {
        int x = fut_block_on(rt, &cj[i].base);
        if (x || cj[i].result)
            r = x ? x : cj[i].result;
        fut_drop(&cj[i].base);
    }
    fut_join_abort(&w->sj[1]);
    fut_block_on(rt, &w->sj[1].base);
    fut_drop(&w->sj[1].base);
    return r;
}

START_TEST(crash_restart)
{
    unsetenv("FUT_SIM_SEED");
    struct crashw w;
    memset(&w, 0, sizeof w);
    int seeds = TEST_ITERS(50, 10), resets = 0;
    for (int seed = 1; seed <= seeds; seed++) {
        struct fut_sim_report r1, r2;
        ASSERT_EQ(fut_sim_run(NULL, (uint64_t)seed, crash_run, &w, &r1), 0);
        /* Every task of the host went with the crash: the server and the
         * handler of each connected client, through their drops. */
        ck_assert_msg(w.live_after_crash == 0 &&
                          w.dropped_by_crash >= 1 + RCLIENTS,
                      "seed %d: %d live after the crash, %d dropped", seed,
                      w.live_after_crash, w.dropped_by_crash);
        for (int i = 0; i < RCLIENTS; i++) {
            struct rclient *c = &w.cl[i];
            /* Answers before the crash and after the restart; each saw
             * its connection reset, and reconnected. */
            ck_assert_msg(c->got == ANSWERS && c->got_at_crash > 0 &&
                              c->got_at_crash < ANSWERS && c->resets >= 1 &&
                              c->connects >= 2,
                          "seed %d client %d: got %d (%d at the crash) "
                          "resets %d others %d connects %d",
                          seed, i, c->got, c->got_at_crash, c->resets,
                          c->others, c->connects);
            resets += c->resets;
        }
        ck_assert_int_gt(w.t_restart, w.t_crash);
        /* The same seed: the same run. */
        struct crashw w2;
        memset(&w2, 0, sizeof w2);
        ASSERT_EQ(fut_sim_run(NULL, (uint64_t)seed, crash_run, &w2, &r2), 0);
        ASSERT_EQ(r1.trace, r2.trace);
        ASSERT_EQ(r1.steps, r2.steps);
        ASSERT_EQ(r1.virtual_ns, r2.virtual_ns);
        ASSERT_EQ(w.t_crash, w2.t_crash);
        for (int i = 0; i < RCLIENTS; i++)
            ASSERT_EQ(w.cl[i].connects, w2.cl[i].connects);
    }
    ASSERT_TRUE(resets >= seeds * RCLIENTS);
    fprintf(stderr,
            "crash_restart: %d seeds: %d resets seen; seed %d: crash at "
            "%lld ms, restart at %lld ms, client 0: %d answers at the "
            "crash, %d connects, %d other failures\n",
            seeds, resets, seeds, (long long)(w.t_crash / MS),
            (long long)(w.t_restart / MS), w.cl[0].got_at_crash,
            w.cl[0].connects, w.cl[0].others);
    /* FUT_SIM_CHECK's second run follows the first step by step. */
    setenv("FUT_SIM_CHECK", "1", 1);
    struct fut_sim_report rc;
    ASSERT_EQ(fut_sim_run(NULL, 5, crash_run, &w, &rc), 0);
    unsetenv("FUT_SIM_CHECK");
    ASSERT_EQ(rc.leak_step, 0);
    /* Never restarted: nobody answers the clients again (their connects
     * wait for the host, then time out; an answer already on its way
     * when the host crashed may still arrive). */
    w.no_restart = 1;
    ASSERT_EQ(fut_sim_run(NULL, 5, crash_run, &w, NULL), 0);
    for (int i = 0; i < RCLIENTS; i++) {
        ck_assert_int_le(w.cl[i].got, w.cl[i].got_at_crash + 1);
        ck_assert_int_ge(w.cl[i].resets, 1);
        ck_assert_int_eq(w.cl[i].connects, 1);
    }
}
END_TEST

/* ------------------------------------------------ socket faults */

enum { FCLIENTS = 4 };

struct faultw {
    unsigned kinds;
    uint32_t ppm;
    struct rclient cl[FCLIENTS];
    struct srv_stats st;
    uint64_t eagain, reset; /* injected */
};

/* The server on 10.0.0.1 and FCLIENTS reconnecting clients on their
 * own hosts, counting into 'w'. */
static void echo_world(struct fut_runtime *rt, struct faultw *w,
                       struct fut_join *sj, struct fut_join *cj)
{
    struct fut_sim_host *sh;
    ck_assert_int_eq(fut_sim_host_new(rt, "10.0.0.1", &sh), 0);
    ck_assert_int_eq(spawn_server(sh, "10.0.0.1", 16, 0, 0, &w->st, sj), 0);
    for (int i = 0; i < FCLIENTS; i++) {
        char addr[32];
        snprintf(addr, sizeof addr, "10.0.1.%d", i + 1);
        struct fut_sim_host *ch;
        ck_assert_int_eq(fut_sim_host_new(rt, addr, &ch), 0);
        struct rclient c;
        memset(&c, 0, sizeof c);
        fut_future_init(&c.base, &rclient_vt);
        ck_assert_int_eq(fut_addr_parse("10.0.0.1", 7000, &c.to, &c.tolen),
                         0);
        c.id = i;
        c.self = &w->cl[i];
        ck_assert_int_eq(fut_sim_spawn_on(ch, &c, sizeof c, &cj[i]), 0);
    }
}

static int faults_run(struct fut_runtime *rt, void *ud)
{
    struct faultw *w = ud;
    memset(w->cl, 0, sizeof w->cl);
    memset(&w->st, 0, sizeof w->st);
    ck_assert_int_eq(fut_sim_set_faults(rt, w->kinds, w->ppm), 0);
    struct fut_join sj, cj[FCLIENTS];
    echo_world(rt, w, &sj, cj);
    int r = 0;
    for (int i = 0; i < FCLIENTS; i++) {
        int x = fut_block_on(rt, &cj[i].base);
        if (x || cj[i].result)
            r = x ? x : cj[i].result;
        fut_drop(&cj[i].base);
    }
    fut_drop(&sj.base);
    w->eagain = fut_sim_faults_injected(rt, FUT_SIM_FAULT_EAGAIN);
    w->reset = fut_sim_faults_injected(rt, FUT_SIM_FAULT_RESET);
    return r;
}

START_TEST(socket_faults)
{
    unsetenv("FUT_SIM_SEED");
    struct faultw w;
    memset(&w, 0, sizeof w);
    /* Spurious EAGAIN on one read or write in five: every answer still
     * comes, exact, with no failure and no reconnect; the clients take
     * longer in virtual time (over ten seeds). */
    uint64_t eagain = 0;
    int64_t t_clean = 0, t_eagain = 0;
    for (uint64_t seed = 1; seed <= 10; seed++) {
        struct fut_sim_report clean, r1, r2;
        w.kinds = 0;
        w.ppm = 0;
        ASSERT_EQ(fut_sim_run(NULL, seed, faults_run, &w, &clean), 0);
        w.kinds = FUT_SIM_FAULT_EAGAIN;
        w.ppm = 200000;
        ASSERT_EQ(fut_sim_run(NULL, seed, faults_run, &w, &r1), 0);
        ck_assert_int_gt(w.eagain, 0);
        ASSERT_EQ(w.reset, 0);
        uint64_t e1 = w.eagain;
        for (int i = 0; i < FCLIENTS; i++) {
            ASSERT_EQ(w.cl[i].got, ANSWERS);
            ASSERT_EQ(w.cl[i].connects, 1);
            ASSERT_EQ(w.cl[i].resets + w.cl[i].others, 0);
        }
        ASSERT_EQ(w.st.errors, 0);
        t_clean += clean.virtual_ns;
        t_eagain += r1.virtual_ns;
        ASSERT_EQ(fut_sim_run(NULL, seed, faults_run, &w, &r2), 0);
        ASSERT_EQ(r1.trace, r2.trace);
        ASSERT_EQ(e1, w.eagain);
        eagain += e1;
    }
    ck_assert_msg(t_eagain > t_clean, "EAGAIN took no longer: %lld vs %lld",
                  (long long)t_eagain, (long long)t_clean);
    /* Resets on one call in 100: the clients see ECONNRESET (or, when
     * the server's side was reset, the reset on their next call) and
     * reconnect; the same seed resets the same calls. */
    uint64_t resets = 0;
    int seen = 0;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        struct fut_sim_report r1, r2;
        w.kinds = FUT_SIM_FAULT_RESET | FUT_SIM_FAULT_EAGAIN;
        w.ppm = 10000;
        ASSERT_EQ(fut_sim_run(NULL, seed, faults_run, &w, &r1), 0);
        uint64_t rs = w.reset;
        int s1 = 0;
        for (int i = 0; i < FCLIENTS; i++) {
            ASSERT_EQ(w.cl[i].got, ANSWERS);
            ck_assert_int_eq(w.cl[i].connects,
                             1 + w.cl[i].resets + w.cl[i].others);
            s1 += w.cl[i].resets;
        }
        /* Each reset ends one connection: one failure at the client. */
        ASSERT_TRUE((uint64_t)s1 <= rs);
        ASSERT_EQ(fut_sim_run(NULL, seed, faults_run, &w, &r2), 0);
        ASSERT_EQ(r1.trace, r2.trace);
        ASSERT_EQ(rs, w.reset);
        resets += rs;
        seen += s1;
    }
    fprintf(stderr,
            "socket_faults: eagain %llu (virtual %lld vs %lld ms clean), "
            "resets %llu injected, %d seen by clients\n",
            (unsigned long long)eagain, (long long)(t_eagain / MS),
            (long long)(t_clean / MS), (unsigned long long)resets, seen);
    ck_assert_msg(eagain > 100 && resets > 10 && seen > 10,
                  "eagain %llu resets %llu seen %d",
                  (unsigned long long)eagain, (unsigned long long)resets,
                  seen);
}
END_TEST

/* A client that gives up at the first failure: the swarm's socket
 * faults make it fail. */
static int fragile_run(struct fut_runtime *rt, void *ud)
{
    struct faultw *w = ud;
    memset(w->cl, 0, sizeof w->cl);
    memset(&w->st, 0, sizeof w->st);
    struct fut_join sj, cj[FCLIENTS];
    echo_world(rt, w, &sj, cj);
    for (int i = 0; i < FCLIENTS; i++) {
        fut_block_on(rt, &cj[i].base);
        fut_drop(&cj[i].base);
    }
    fut_drop(&sj.base);
    int fails = 0;
    for (int i = 0; i < FCLIENTS; i++)
        fails += w->cl[i].resets + w->cl[i].others;
    return fails ? 1 : 0;
}

START_TEST(swarm_line)
{
    unsetenv("FUT_SIM_SEED");
    struct faultw w;
    memset(&w, 0, sizeof w);
    struct fut_sim_swarm sw;
    memset(&sw, 0, sizeof sw);
    sw.faults = FUT_SIM_FAULT_EAGAIN | FUT_SIM_FAULT_RESET;
    sw.fault_ppm = 5000;
    sw.commit = "c0ffee";
    sw.replay = "test_sim_netfault";
    char path[] = "/tmp/fut_sim_netfault_XXXXXX";
    int fd = mkstemp(path);
    ASSERT_TRUE(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    struct fut_sim_swarm_result res;
    int r = fut_sim_swarm(&sw, 1, 200, fragile_run, &w, &res);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char out[2048];
    ssize_t n = pread(fd, out, sizeof out - 1, 0);
    close(fd);
    unlink(path);
    ASSERT_TRUE(n > 0);
    out[n] = '\0';
    /* A seed with resets on fails the fragile client; its line names
     * the socket kinds it chose. */
    ASSERT_EQ(r, 1);
    ASSERT_TRUE(res.faults & FUT_SIM_FAULT_RESET);
    ASSERT_TRUE(res.injected > 0);
    char want[128];
    snprintf(want, sizeof want, "fut-sim: swarm: seed=%llu failed (1)",
             (unsigned long long)res.failed_seed);
    ck_assert_msg(strstr(out, want) != NULL, "no '%s' in: %s", want, out);
    ck_assert_msg(strstr(out, "commit=c0ffee faults=") != NULL &&
                      strstr(out, "reset ppm=5000") != NULL,
                  "no socket kinds in: %s", out);
    snprintf(want, sizeof want,
             "fut-sim: replay: FUT_SIM_SEED=%llu "
             "test_sim_netfault",
             (unsigned long long)res.failed_seed);
    ck_assert_msg(strstr(out, want) != NULL, "no '%s' in: %s", want, out);
    /* The replay: that seed alone, with the same faults and trace. */
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)res.failed_seed);
    setenv("FUT_SIM_SEED", seed, 1);
    sw.quiet = 1;
    struct fut_sim_swarm_result again;
    ASSERT_EQ(fut_sim_swarm(&sw, 1, 200, fragile_run, &w, &again), 1);
    unsetenv("FUT_SIM_SEED");
    ASSERT_EQ(again.seeds, 1);
    ASSERT_EQ(again.faults, res.faults);
    ASSERT_EQ(again.injected, res.injected);
    ASSERT_EQ(again.report.trace, res.report.trace);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_netfault");
    TCase *tc = fut_test_tcase(s, "backlog");
    tcase_add_test(tc, backlog);
    tc = fut_test_tcase(s, "crash_restart");
    tcase_add_test(tc, crash_restart);
    tc = fut_test_tcase(s, "socket_faults");
    tcase_add_test(tc, socket_faults);
    tc = fut_test_tcase(s, "swarm_line");
    tcase_add_test(tc, swarm_line);
    return fut_test_run(s);
}
