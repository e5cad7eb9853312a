/* SPDX-License-Identifier: MIT */
/* The simulated network (fut/sim.h, src/io/backend_sim.c): an echo
 * server and many clients on their own hosts in one simulation give one
 * trace over 100 reruns of a seed and other traces on other seeds, with
 * every byte echoed exactly (no loss, duplication or reordering); the
 * link's latency shows in virtual time; a connect nobody listens for is
 * refused; a reset surfaces as ECONNRESET to the reader; a partition
 * stalls a request until a client's fut_timeout fires in virtual time,
 * and the reply arrives after the heal. Everything here runs through the
 * unchanged fut_tcp_* and stream calls. */
#include <errno.h>
#include <string.h>

#include "sim_scaffold.h"
#include "test.h"

#define MS 1000000LL

/* -------------------------------------------------------------- echo */

enum { CLIENTS = 12, ROUNDS = 6, MAXMSG = 700 };

struct world {
    struct sockaddr_storage srv;
    socklen_t srvlen;
    int handled, echoed_ok, bytes, sent;
    uint64_t order; /* the order in which handlers finished */
    struct fut_join hj[CLIENTS];
    int nh;
    int chaos; /* the chaos case: errors expected, handlers detached */
};

/* The byte 'i' of round 'k' of client 'id': every message differs. */
static unsigned char pattern(int id, int k, size_t i)
{
    return (unsigned char)(id * 131 + k * 31 + (int)i * 7 + (int)(i >> 8));
}

struct handler {
    struct fut_future base;
    struct world *w;
    struct fut_io *conn;
    char buf[1024];
    struct fut_io_read rd;
    struct fut_io_write_all wa;
    int id;
};

static int handler_poll(struct fut_future *f, struct fut_context *cx)
{
    struct handler *h = (struct handler *)f;
    FUT_BEGIN(f);
    for (;;) {
        fut_io_read_init(&h->rd, h->conn, h->buf, sizeof h->buf);
        FUT_AWAIT(f, &h->rd);
        if (h->rd.result <= 0)
            break;
        h->w->bytes += (int)h->rd.result;
        fut_io_write_all_init(&h->wa, h->conn, h->buf, (size_t)h->rd.result);
        FUT_AWAIT(f, &h->wa);
        if (h->w->chaos && h->wa.result < 0)
            break;
        ck_assert_int_eq(h->wa.result, h->rd.result);
    }
    if (!h->w->chaos)
        ck_assert_int_eq(h->rd.result, 0); /* the client's close: EOF */
    sim_close(&h->conn);
    h->w->handled++;
    h->w->order = h->w->order * 31 + (uint64_t)h->id;
    FUT_END(f);
}

SIM_CLOSE_CLEANUP(handler_cleanup, handler, conn)
FUT_ASYNC_VTABLE(handler_vt, "handler", handler_poll, handler_cleanup);

/* The server: listens on its host's address, accepts 'n' connections,
 * one handler task each (the shape of examples/echo_server). */
struct server {
    struct fut_future base;
    struct world *w;
    struct fut_io *l;
    struct fut_accept a;
    int n;
};

static int server_poll(struct fut_future *f, struct fut_context *cx)
{
    struct server *s = (struct server *)f;
    FUT_BEGIN(f);
    ck_assert_int_eq(fut_tcp_listen((struct sockaddr *)&s->w->srv,
                                    s->w->srvlen, 16, &s->l),
                     0);
    while (s->w->nh < s->n) {
        fut_accept_init(&s->a, s->l);
        FUT_AWAIT(f, &s->a);
        ck_assert_int_eq(s->a.result, 0);
        struct handler h;
        memset(&h, 0, sizeof h);
        fut_future_init(&h.base, &handler_vt);
        h.w = s->w;
        h.conn = s->a.conn;
        h.id = s->w->nh;
        ck_assert_int_eq(fut_spawn(NULL, &h, sizeof h,
                                   s->w->chaos ? NULL : &s->w->hj[s->w->nh]),
                         0);
        s->w->nh++;
    }
    sim_close(&s->l);
    FUT_END(f);
}

SIM_CLOSE_CLEANUP(server_cleanup, server, l)
FUT_ASYNC_VTABLE(server_vt, "server", server_poll, server_cleanup);

/* A client: connects, then ROUNDS times writes a message of a seeded
 * length and reads the echo back, checking every byte. */
struct client {
    struct fut_future base;
    struct world *w;
    int id, k;
    struct fut_connect c;
    struct fut_io *io;
    size_t len;
    unsigned char out[MAXMSG], in[MAXMSG];
    struct sim_echo_round er;
};

static int client_poll(struct fut_future *f, struct fut_context *cx)
{
    struct client *c = (struct client *)f;
    FUT_BEGIN(f);
    fut_tcp_connect_init(&c->c, (struct sockaddr *)&c->w->srv, c->w->srvlen,
                         -1);
    FUT_AWAIT(f, &c->c);
    ck_assert_int_eq(c->c.result, 0);
    c->io = c->c.conn;
    for (c->k = 0; c->k < ROUNDS; c->k++) {
        c->len = 1 + (size_t)(fut_sim_random() % MAXMSG);
        for (size_t i = 0; i < c->len; i++)
            c->out[i] = pattern(c->id, c->k, i);
        sim_echo_round_init(&c->er, c->io, c->out, c->in, c->len, c->id,
                            c->k);
        FUT_AWAIT(f, &c->er);
        c->w->sent += (int)c->len;
        c->w->echoed_ok++;
    }
    sim_close(&c->io);
    FUT_END(f);
}

SIM_CLOSE_CLEANUP(client_cleanup, client, io)
FUT_ASYNC_VTABLE(client_vt, "client", client_poll, client_cleanup);

/* fut_sim_fn: the server on 10.0.0.1, client i on 10.0.1.(i+1). */
static int echo_run(struct fut_runtime *rt, void *ud)
{
    struct world *w = ud;
    memset(w, 0, sizeof *w);
    struct fut_sim_host *sh, *ch[CLIENTS];
    ck_assert_int_eq(fut_sim_host_new(rt, "10.0.0.1", &sh), 0);
    ck_assert_int_eq(fut_addr_parse("10.0.0.1", 7000, &w->srv, &w->srvlen),
                     0);
    struct fut_join sj, cj[CLIENTS];
    struct server s;
    memset(&s, 0, sizeof s);
    fut_future_init(&s.base, &server_vt);
    s.w = w;
    s.n = CLIENTS;
    ck_assert_int_eq(fut_sim_spawn_on(sh, &s, sizeof s, &sj), 0);
    for (int i = 0; i < CLIENTS; i++) {
        char addr[32];
        snprintf(addr, sizeof addr, "10.0.1.%d", i + 1);
        ck_assert_int_eq(fut_sim_host_new(rt, addr, &ch[i]), 0);
        struct client c;
        memset(&c, 0, sizeof c);
        fut_future_init(&c.base, &client_vt);
        c.w = w;
        c.id = i;
        ck_assert_int_eq(fut_sim_spawn_on(ch[i], &c, sizeof c, &cj[i]), 0);
    }
    int r = 0;
    for (int i = 0; i < CLIENTS; i++) {
        int b = fut_block_on(rt, &cj[i].base);
        if (b || cj[i].result)
            r = b ? b : cj[i].result;
        fut_drop(&cj[i].base);
    }
    int b = fut_block_on(rt, &sj.base);
    if (b || sj.result)
        r = b ? b : sj.result;
    fut_drop(&sj.base);
    for (int i = 0; i < w->nh; i++) {
        b = fut_block_on(rt, &w->hj[i].base);
        if (b || w->hj[i].result)
            r = b ? b : w->hj[i].result;
        fut_drop(&w->hj[i].base);
    }
    /* Every byte sent reached the server once, and came back intact. */
    if (r == 0 && (w->handled != CLIENTS ||
                   w->echoed_ok != CLIENTS * ROUNDS || w->bytes != w->sent))
        r = 1;
    return r;
}

static struct fut_sim_report echo_once(uint64_t seed, struct world *w)
{
    struct fut_sim_report rep;
    ASSERT_EQ(fut_sim_run(NULL, seed, echo_run, w, &rep), 0);
    return rep;
}

START_TEST(echo_same_seed)
{
    unsetenv("FUT_SIM_SEED");
    struct world w;
    struct fut_sim_report r0 = echo_once(42, &w);
    uint64_t order0 = w.order;
    int bytes0 = w.bytes;
    ASSERT_TRUE(r0.steps > 200);
    ASSERT_TRUE(r0.virtual_ns > 0);
    ASSERT_EQ(w.handled, CLIENTS);
    /* FUT_SIM_CHECK's second run follows the first step by step. */
    setenv("FUT_SIM_CHECK", "1", 1);
    struct fut_sim_report rc = echo_once(42, &w);
    unsetenv("FUT_SIM_CHECK");
    ASSERT_EQ(rc.leak_step, 0);
    ASSERT_EQ(rc.trace, r0.trace);
    for (int i = 1; i < TEST_ITERS(100, 20); i++) {
        struct fut_sim_report r = echo_once(42, &w);
        ck_assert_msg(r.trace == r0.trace && r.steps == r0.steps &&
                          r.virtual_ns == r0.virtual_ns &&
                          w.order == order0 && w.bytes == bytes0,
                      "run %d: trace %016llx vs %016llx", i,
                      (unsigned long long)r.trace,
                      (unsigned long long)r0.trace);
    }
}
END_TEST

START_TEST(echo_seeds_differ)
{
    unsetenv("FUT_SIM_SEED");
    enum { N = 20 };
    uint64_t traces[N], orders[N];
    int64_t vns[N];
    int distinct = 0, distinct_orders = 0, distinct_times = 0;
    for (int i = 0; i < N; i++) {
        struct world w;
        struct fut_sim_report r = echo_once((uint64_t)i * 7919u + 5u, &w);
        traces[i] = r.trace;
        orders[i] = w.order;
        vns[i] = r.virtual_ns;
        int seen = 0, seen_o = 0, seen_t = 0;
        for (int k = 0; k < i; k++) {
            seen |= traces[k] == traces[i];
            seen_o |= orders[k] == orders[i];
            seen_t |= vns[k] == vns[i];
        }
        distinct += !seen;
        distinct_orders += !seen_o;
        distinct_times += !seen_t;
    }
    /* Other interleavings and other delays, not only other hashes (the
     * end time is the slowest of many clients': it varies less). */
    ck_assert_msg(distinct == N && distinct_orders > N / 2 &&
                      distinct_times > 2,
                  "%d distinct traces, %d orders, %d end times over %d",
                  distinct, distinct_orders, distinct_times, N);
}
END_TEST

/* -------------------------------------------- one client, step by step */

/* What a probe saw, and when (virtual ns). */
struct pout {
    int64_t t_connect, t_echo, t_timeout;
    int connect_result, read_result, timeout_result;
    char echo[4];
};

/* A scripted client for the cases below. */
struct probe {
    struct fut_future base;
    struct sockaddr_storage to;
    socklen_t tolen;
    int mode; /* see each case */
    struct fut_sim_host *me, *peer;
    struct fut_connect c;
    struct fut_io *io;
    char buf[64];
    struct fut_io_write_all wa;
    struct fut_io_read rd;
    struct fut_timeout to_;
    int64_t t0;
    size_t got;
    struct pout *r; /* what it saw (the task runs a copy) */
};

enum { P_ECHO, P_PARTITION, P_RESET_WAIT };

static int probe_poll(struct fut_future *f, struct fut_context *cx)
{
    struct probe *p = (struct probe *)f;
    FUT_BEGIN(f);
    p->t0 = fut_time_now();
    fut_tcp_connect_init(&p->c, (struct sockaddr *)&p->to, p->tolen, -1);
    FUT_AWAIT(f, &p->c);
    p->r->connect_result = p->c.result;
    p->r->t_connect = fut_time_now() - p->t0;
    if (p->c.result != 0)
        FUT_RETURN(f);
    p->io = p->c.conn;
    if (p->mode == P_PARTITION)
        ck_assert_int_eq(fut_sim_partition(p->me, p->peer), 0);
    p->t0 = fut_time_now();
    fut_io_write_all_init(&p->wa, p->io, "ping", 4);
    FUT_AWAIT(f, &p->wa);
    ck_assert_int_eq(p->wa.result, 4);
    if (p->mode == P_PARTITION) {
        /* Cut off: the request stalls; the timeout fires on time. */
        fut_io_read_init(&p->rd, p->io, p->buf, sizeof p->buf);
        fut_timeout_init(&p->to_, &p->rd.base, fut_time_now() + 500 * MS);
        FUT_AWAIT(f, &p->to_);
        p->r->timeout_result = p->to_.result;
        p->r->t_timeout = fut_time_now() - p->t0;
        ck_assert_int_eq(fut_sim_heal(p->me, p->peer), 0);
        p->t0 = fut_time_now();
    }
    for (p->got = 0; p->got < 4; p->got += (size_t)p->rd.result) {
        fut_io_read_init(&p->rd, p->io, p->buf + p->got, 4 - p->got);
        FUT_AWAIT(f, &p->rd);
        p->r->read_result = (int)p->rd.result;
        if (p->rd.result <= 0)
            break;
    }
    p->r->t_echo = fut_time_now() - p->t0;
    memcpy(p->r->echo, p->buf, 4);
    FUT_END(f);
}

SIM_CLOSE_CLEANUP(probe_cleanup, probe, io)
FUT_ASYNC_VTABLE(probe_vt, "probe", probe_poll, probe_cleanup);

/* An echo server for one connection; with 'reset' it resets the
 * connection as soon as the first bytes arrived, without answering. */
struct one {
    struct fut_future base;
    struct sockaddr_storage at;
    socklen_t atlen;
    int reset;
    struct fut_io *l, *conn;
    struct fut_accept a;
    char buf[64];
    struct fut_io_read rd;
    struct fut_io_write_all wa;
    int after_reset;
};

static int one_poll(struct fut_future *f, struct fut_context *cx)
{
    struct one *o = (struct one *)f;
    FUT_BEGIN(f);
    ck_assert_int_eq(
        fut_tcp_listen((struct sockaddr *)&o->at, o->atlen, 4, &o->l), 0);
    fut_accept_init(&o->a, o->l);
    FUT_AWAIT(f, &o->a);
    ck_assert_int_eq(o->a.result, 0);
    o->conn = o->a.conn;
    for (;;) {
        fut_io_read_init(&o->rd, o->conn, o->buf, sizeof o->buf);
        FUT_AWAIT(f, &o->rd);
        if (o->rd.result <= 0)
            break;
        if (o->reset) {
            ck_assert_int_eq(fut_sim_reset(o->conn), 0);
            ck_assert_int_eq(fut_sim_reset(o->conn), FUT_EINVAL);
            fut_io_read_init(&o->rd, o->conn, o->buf, sizeof o->buf);
            FUT_AWAIT(f, &o->rd);
            o->after_reset = (int)o->rd.result;
            break;
        }
        fut_io_write_all_init(&o->wa, o->conn, o->buf, (size_t)o->rd.result);
        FUT_AWAIT(f, &o->wa);
    }
    FUT_END(f);
}

static void one_cleanup(struct fut_future *f)
{
    struct one *o = (struct one *)f;
    if (o->conn)
        fut_io_close(o->conn);
    if (o->l)
        fut_io_close(o->l);
}
FUT_ASYNC_VTABLE(one_vt, "one", one_poll, one_cleanup);

/* Runs a server ('o', unless NULL) on 10.0.0.1 and probe 'p' on
 * 10.0.0.2 with a fixed 10 ms latency between them, on seed 'seed'. */
static void pair_run(uint64_t seed, struct one *o, struct probe *p,
                     int srv_port, const char *to, int to_port)
{
    struct fut_runtime *rt;
    ASSERT_EQ(fut_sim_new(NULL, seed, &rt), 0);
    struct fut_sim_host *s, *c, *x;
    ASSERT_EQ(fut_sim_host_new(rt, "10.0.0.1", &s), 0);
    ASSERT_EQ(fut_sim_host_new(rt, "10.0.0.2", &c), 0);
    ASSERT_EQ(fut_sim_host_new(rt, "10.0.0.1", &x), FUT_EINVAL);
    ASSERT_EQ(fut_sim_host_new(rt, "127.0.0.1", &x), FUT_EINVAL);
    ASSERT_EQ(fut_sim_host_new(rt, "not an address", &x), FUT_EINVAL);
    ASSERT_EQ(fut_sim_latency(rt, s, c, 10 * MS, 10 * MS), 0);
    ASSERT_EQ(fut_sim_latency(rt, s, NULL, 1, 2), FUT_EINVAL);
    ASSERT_EQ(fut_sim_latency(rt, NULL, NULL, 5, 2), FUT_EINVAL);
    struct fut_join oj, pj;
    if (o) {
        fut_future_init(&o->base, &one_vt);
        ASSERT_EQ(fut_addr_parse("10.0.0.1", srv_port, &o->at, &o->atlen), 0);
        ASSERT_EQ(fut_sim_spawn_on(s, o, sizeof *o, &oj), 0);
    }
    fut_future_init(&p->base, &probe_vt);
    p->me = c;
    p->peer = s;
    ASSERT_EQ(fut_addr_parse(to, to_port, &p->to, &p->tolen), 0);
    /* The probe's results are read from its copy in the task. */
    ASSERT_EQ(fut_sim_spawn_on(c, p, sizeof *p, &pj), 0);
    ASSERT_EQ(fut_block_on(rt, &pj.base), 0);
    ASSERT_EQ(pj.result, 0);
    fut_drop(&pj.base);
    if (o) {
        ASSERT_EQ(fut_block_on(rt, &oj.base), 0);
        fut_drop(&oj.base);
    }
    fut_runtime_free(rt);
}

/* Every segment takes the link's 10 ms: a connect is a SYN and its
 * SYN-ACK (20 ms), an echo a request and its reply (20 ms), in virtual
 * time. */
START_TEST(latency_in_virtual_time)
{
    unsetenv("FUT_SIM_SEED");
    for (uint64_t seed = 1; seed <= 5; seed++) {
        struct one o;
        memset(&o, 0, sizeof o);
        struct probe p;
        memset(&p, 0, sizeof p);
        struct pout r;
        memset(&r, 0, sizeof r);
        p.r = &r;
        p.mode = P_ECHO;
        pair_run(seed, &o, &p, 7000, "10.0.0.1", 7000);
        ASSERT_EQ(r.connect_result, 0);
        ASSERT_EQ(r.t_connect, 20 * MS);
        ASSERT_EQ(r.read_result > 0, 1);
        ASSERT_EQ(r.t_echo, 20 * MS);
        ASSERT_TRUE(memcmp(r.echo, "ping", 4) == 0);
    }
}
END_TEST

/* Nobody listens on the port: refused after the round trip; no host has
 * the address: unreachable at once. */
START_TEST(refused)
{
    unsetenv("FUT_SIM_SEED");
    struct probe p;
    memset(&p, 0, sizeof p);
    struct pout r;
    memset(&r, 0, sizeof r);
    p.r = &r;
    pair_run(3, NULL, &p, 0, "10.0.0.1", 7001);
    ASSERT_EQ(r.connect_result, -ECONNREFUSED);
    ASSERT_EQ(r.t_connect, 20 * MS);
    memset(&r, 0, sizeof r);
    memset(&p, 0, sizeof p);
    p.r = &r;
    pair_run(3, NULL, &p, 0, "10.9.9.9", 7000);
    ASSERT_EQ(r.connect_result, -ENETUNREACH);
    ASSERT_EQ(r.t_connect, 0);
}
END_TEST

/* The server resets the connection after the first bytes: the client's
 * pending read gets ECONNRESET (after the RST's 10 ms), the server's own
 * next read at once. */
START_TEST(reset_mid_stream)
{
    unsetenv("FUT_SIM_SEED");
    for (uint64_t seed = 1; seed <= 5; seed++) {
        struct one o;
        memset(&o, 0, sizeof o);
        o.reset = 1;
        struct probe p;
        memset(&p, 0, sizeof p);
        struct pout r;
        memset(&r, 0, sizeof r);
        p.r = &r;
        pair_run(seed, &o, &p, 7000, "10.0.0.1", 7000);
        ASSERT_EQ(r.connect_result, 0);
        ASSERT_EQ(r.read_result, -ECONNRESET);
        ASSERT_EQ(r.t_echo, 20 * MS); /* request 10 ms, RST 10 ms */
    }
}
END_TEST

/* A partition right after the connect: the request stalls, the client's
 * 500 ms timeout fires at exactly 500 ms of virtual time; after the heal
 * the request goes again (10 ms) and its echo comes back (10 ms). */
START_TEST(partition_until_heal)
{
    unsetenv("FUT_SIM_SEED");
    for (uint64_t seed = 1; seed <= 5; seed++) {
        struct one o;
        memset(&o, 0, sizeof o);
        struct probe p;
        memset(&p, 0, sizeof p);
        struct pout r;
        memset(&r, 0, sizeof r);
        p.r = &r;
        p.mode = P_PARTITION;
        pair_run(seed, &o, &p, 7000, "10.0.0.1", 7000);
        ASSERT_EQ(r.connect_result, 0);
        ASSERT_EQ(r.timeout_result, FUT_ETIMEDOUT);
        ASSERT_EQ(r.t_timeout, 500 * MS);
        ASSERT_TRUE(r.read_result > 0);
        ASSERT_EQ(r.t_echo, 20 * MS);
        ASSERT_TRUE(memcmp(r.echo, "ping", 4) == 0);
    }
}
END_TEST

/* ------------------------------------------------------------ closing */

/* What the closing scenario saw. */
struct closes {
    struct sockaddr_storage a1, a2;
    socklen_t l1, l2;
    char got[8];
    int got_len, eof, unread_read, backlog_read, srv_got;
};

/* Server side: on port 7000 a half-close exchange, then a connection
 * closed with bytes unread; on port 7001 a listener that never accepts
 * and is closed with a connection in its backlog. */
struct closer {
    struct fut_future base;
    struct closes *x;
    struct fut_io *l, *l2, *c;
    struct fut_accept a;
    char buf[16];
    struct fut_io_read rd;
    struct fut_io_write_all wa;
    struct fut_sleep s;
};

static int closer_poll(struct fut_future *f, struct fut_context *cx)
{
    struct closer *k = (struct closer *)f;
    FUT_BEGIN(f);
    ck_assert_int_eq(
        fut_tcp_listen((struct sockaddr *)&k->x->a1, k->x->l1, 4, &k->l), 0);
    ck_assert_int_eq(
        fut_tcp_listen((struct sockaddr *)&k->x->a2, k->x->l2, 4, &k->l2), 0);
    /* 1: read to EOF (the client's SHUT_WR), answer, close. */
    fut_accept_init(&k->a, k->l);
    FUT_AWAIT(f, &k->a);
    ck_assert_int_eq(k->a.result, 0);
    k->c = k->a.conn;
    for (;;) {
        fut_io_read_init(&k->rd, k->c, k->buf, sizeof k->buf);
        FUT_AWAIT(f, &k->rd);
        ck_assert_int_ge(k->rd.result, 0);
        if (k->rd.result == 0)
            break;
        k->x->srv_got += (int)k->rd.result;
    }
    fut_io_write_all_init(&k->wa, k->c, "bye", 3);
    FUT_AWAIT(f, &k->wa);
    ck_assert_int_eq(k->wa.result, 3);
    fut_io_close(k->c);
    /* 2: a connection closed with its bytes unread: reset. */
    fut_accept_init(&k->a, k->l);
    FUT_AWAIT(f, &k->a);
    ck_assert_int_eq(k->a.result, 0);
    k->c = k->a.conn;
    fut_sleep_init(&k->s, 50 * MS);
    FUT_AWAIT(f, &k->s);
    sim_close(&k->c);
    /* 3: the other listener goes with a connection nobody accepted. */
    sim_close(&k->l2);
    sim_close(&k->l);
    FUT_END(f);
}

static void closer_cleanup(struct fut_future *f)
{
    struct closer *k = (struct closer *)f;
    if (k->c)
        fut_io_close(k->c);
    if (k->l)
        fut_io_close(k->l);
    if (k->l2)
        fut_io_close(k->l2);
}
FUT_ASYNC_VTABLE(closer_vt, "closer", closer_poll, closer_cleanup);

struct closee {
    struct fut_future base;
    struct closes *x;
    struct fut_connect c;
    struct fut_io *io, *io2, *io3;
    char buf[16];
    struct fut_io_read rd;
    struct fut_io_write_all wa;
};

static int closee_poll(struct fut_future *f, struct fut_context *cx)
{
    struct closee *k = (struct closee *)f;
    FUT_BEGIN(f);
    fut_tcp_connect_init(&k->c, (struct sockaddr *)&k->x->a1, k->x->l1, -1);
    FUT_AWAIT(f, &k->c);
    ck_assert_int_eq(k->c.result, 0);
    k->io = k->c.conn;
    fut_io_write_all_init(&k->wa, k->io, "hello", 5);
    FUT_AWAIT(f, &k->wa);
    ck_assert_int_eq(fut_io_shutdown(k->io, SHUT_WR), 0);
    for (;;) {
        fut_io_read_init(&k->rd, k->io, k->buf, sizeof k->buf);
        FUT_AWAIT(f, &k->rd);
        ck_assert_int_ge(k->rd.result, 0);
        if (k->rd.result == 0)
            break;
        memcpy(k->x->got + k->x->got_len, k->buf, (size_t)k->rd.result);
        k->x->got_len += (int)k->rd.result;
    }
    k->x->eof = 1;
    /* 2 */
    fut_tcp_connect_init(&k->c, (struct sockaddr *)&k->x->a1, k->x->l1, -1);
    FUT_AWAIT(f, &k->c);
    ck_assert_int_eq(k->c.result, 0);
    k->io2 = k->c.conn;
    fut_io_write_all_init(&k->wa, k->io2, "junk", 4);
    FUT_AWAIT(f, &k->wa);
    /* 3: connected (in the backlog) before the listener goes */
    fut_tcp_connect_init(&k->c, (struct sockaddr *)&k->x->a2, k->x->l2, -1);
    FUT_AWAIT(f, &k->c);
    ck_assert_int_eq(k->c.result, 0);
    k->io3 = k->c.conn;
    fut_io_read_init(&k->rd, k->io2, k->buf, sizeof k->buf);
    FUT_AWAIT(f, &k->rd);
    k->x->unread_read = (int)k->rd.result;
    fut_io_read_init(&k->rd, k->io3, k->buf, sizeof k->buf);
    FUT_AWAIT(f, &k->rd);
    k->x->backlog_read = (int)k->rd.result;
    FUT_END(f);
}

static void closee_cleanup(struct fut_future *f)
{
    struct closee *k = (struct closee *)f;
    if (k->io)
        fut_io_close(k->io);
    if (k->io2)
        fut_io_close(k->io2);
    if (k->io3)
        fut_io_close(k->io3);
}
FUT_ASYNC_VTABLE(closee_vt, "closee", closee_poll, closee_cleanup);

START_TEST(closes)
{
    unsetenv("FUT_SIM_SEED");
    for (uint64_t seed = 1; seed <= 10; seed++) {
        struct closes x;
        memset(&x, 0, sizeof x);
        ASSERT_EQ(fut_addr_parse("10.0.0.1", 7000, &x.a1, &x.l1), 0);
        ASSERT_EQ(fut_addr_parse("10.0.0.1", 7001, &x.a2, &x.l2), 0);
        struct fut_runtime *rt;
        ASSERT_EQ(fut_sim_new(NULL, seed, &rt), 0);
        struct fut_sim_host *s, *c;
        ASSERT_EQ(fut_sim_host_new(rt, "10.0.0.1", &s), 0);
        ASSERT_EQ(fut_sim_host_new(rt, "10.0.0.2", &c), 0);
        struct closer k;
        memset(&k, 0, sizeof k);
        fut_future_init(&k.base, &closer_vt);
        k.x = &x;
        struct closee e;
        memset(&e, 0, sizeof e);
        fut_future_init(&e.base, &closee_vt);
        e.x = &x;
        struct fut_join kj, ej;
        ASSERT_EQ(fut_sim_spawn_on(s, &k, sizeof k, &kj), 0);
        ASSERT_EQ(fut_sim_spawn_on(c, &e, sizeof e, &ej), 0);
        ASSERT_EQ(fut_block_on(rt, &ej.base), 0);
        ASSERT_EQ(ej.result, 0);
        ASSERT_EQ(fut_block_on(rt, &kj.base), 0);
        ASSERT_EQ(kj.result, 0);
        fut_drop(&ej.base);
        fut_drop(&kj.base);
        fut_runtime_free(rt);
        ASSERT_EQ(x.srv_got, 5);
        ASSERT_EQ(x.got_len, 3);
        ASSERT_TRUE(memcmp(x.got, "bye", 3) == 0);
        ASSERT_EQ(x.eof, 1);
        ASSERT_EQ(x.unread_read, -ECONNRESET);
        ASSERT_EQ(x.backlog_read, -ECONNRESET);
    }
}
END_TEST

/* A runtime freed while connections wait: tasks dropped, sockets closed,
 * nothing leaked (the harness's leak check); a socket the test kept past
 * the free is closed by the kernel. A Unix datagram socket and a pair
 * made mid-exchange work (simulated: test/sim_unix.c) and close cleanly. */
struct udp_try {
    struct fut_future base;
    int result;
};

static int udp_try_poll(struct fut_future *f, struct fut_context *cx)
{
    (void)cx;
    struct fut_io *io = NULL, *a = NULL, *b = NULL;
    int r = fut_unix_datagram_bind(NULL, &io);
    if (io)
        fut_io_close(io);
    if (r == 0)
        r = fut_unix_pair(SOCK_DGRAM, &a, &b);
    if (a) {
        fut_io_close(a);
        fut_io_close(b);
    }
    ((struct udp_try *)f)->result = r;
    return FUT_READY;
}
static const struct fut_future_vtable udp_try_vt = {udp_try_poll, NULL,
                                                    "unix_dgram_try", 0};

START_TEST(teardown)
{
    unsetenv("FUT_SIM_SEED");
    struct fut_runtime *rt;
    ASSERT_EQ(fut_sim_new(NULL, 9, &rt), 0);
    struct world w;
    memset(&w, 0, sizeof w);
    ASSERT_EQ(fut_addr_parse("127.0.0.1", 7000, &w.srv, &w.srvlen), 0);
    struct server s;
    memset(&s, 0, sizeof s);
    fut_future_init(&s.base, &server_vt);
    s.w = &w;
    s.n = CLIENTS;
    ASSERT_EQ(fut_spawn(rt, &s, sizeof s, NULL), 0);
    for (int i = 0; i < 3; i++) {
        struct client c;
        memset(&c, 0, sizeof c);
        fut_future_init(&c.base, &client_vt);
        c.w = &w;
        c.id = i;
        ASSERT_EQ(fut_spawn(rt, &c, sizeof c, NULL), 0);
    }
    struct fut_sleep sl;
    fut_sleep_init(&sl, 3 * MS); /* mid-exchange */
    ASSERT_EQ(fut_block_on(rt, &sl.base), 0);
    fut_drop(&sl.base);
    struct udp_try u;
    fut_future_init(&u.base, &udp_try_vt);
    ASSERT_EQ(fut_block_on(rt, &u.base), 0);
    ASSERT_EQ(u.result, 0);
    fut_runtime_free(rt);
    ASSERT_TRUE(w.nh > 0); /* they had connected */
    for (int i = 0; i < w.nh; i++) {
        ASSERT_EQ(fut_block_on(NULL, &w.hj[i].base), 0);
        fut_drop(&w.hj[i].base);
    }
}
END_TEST

/* -------------------------------------------------------------- chaos */

/* Many seeds of clients talking to the echo server while a chaos task
 * partitions and heals links and resets connections at seeded times:
 * whatever happens, what a client reads back is exactly a prefix of
 * what it sent (nothing lost in the middle, duplicated, reordered or
 * corrupted), every wait ends (timeouts in virtual time, no deadlock),
 * and nothing leaks. */
enum { CCLIENTS = 6 };

struct chaos_client {
    struct fut_future base;
    struct world *w;
    struct fut_io **slot; /* published while connected, for resets */
    int id, k;
    struct fut_connect c;
    struct fut_io *io;
    size_t len, got;
    unsigned char out[MAXMSG], in[MAXMSG];
    struct fut_io_write_all wa;
    struct fut_io_read rd;
    struct fut_timeout to;
    int *fails;
};

static int chaos_client_poll(struct fut_future *f, struct fut_context *cx)
{
    struct chaos_client *c = (struct chaos_client *)f;
    FUT_BEGIN(f);
    fut_tcp_connect_init(&c->c, (struct sockaddr *)&c->w->srv, c->w->srvlen,
                         fut_time_now() + 2000 * MS);
    FUT_AWAIT(f, &c->c);
    if (c->c.result != 0) {
        ck_assert_int_eq(c->c.result, FUT_ETIMEDOUT);
        (*c->fails)++;
        FUT_RETURN(f);
    }
    c->io = c->c.conn;
    *c->slot = c->io;
    for (c->k = 0; c->k < ROUNDS; c->k++) {
        c->len = 1 + (size_t)(fut_sim_random() % MAXMSG);
        for (size_t i = 0; i < c->len; i++)
            c->out[i] = pattern(c->id, c->k, i);
        fut_io_write_all_init(&c->wa, c->io, c->out, c->len);
        FUT_AWAIT(f, &c->wa);
        if (c->wa.result < 0)
            break;
        for (c->got = 0; c->got < c->len; c->got += (size_t)c->rd.result) {
            fut_io_read_init(&c->rd, c->io, c->in + c->got, c->len - c->got);
            fut_timeout_init(&c->to, &c->rd.base, fut_time_now() + 3000 * MS);
            FUT_AWAIT(f, &c->to);
            if (c->to.result != 0 || c->rd.result <= 0)
                break;
        }
        /* The invariant: what came back is what went out, so far. */
        ck_assert_msg(memcmp(c->in, c->out, c->got) == 0,
                      "client %d round %d: echo differs", c->id, c->k);
        if (c->got < c->len)
            break;
        c->w->echoed_ok++;
    }
    if (c->k < ROUNDS)
        (*c->fails)++;
    *c->slot = NULL;
    sim_close(&c->io);
    FUT_END(f);
}

static void chaos_client_cleanup(struct fut_future *f)
{
    struct chaos_client *c = (struct chaos_client *)f;
    if (c->io) {
        *c->slot = NULL;
        fut_io_close(c->io);
    }
}
FUT_ASYNC_VTABLE(chaos_client_vt, "chaos_client", chaos_client_poll,
                 chaos_client_cleanup);

struct monkey {
    struct fut_future base;
    struct fut_sim_host *srv, **cl;
    struct fut_io **slots;
    int i, who, what, *stop, *resets, *cuts;
    struct fut_sleep s;
};

static int monkey_poll(struct fut_future *f, struct fut_context *cx)
{
    struct monkey *m = (struct monkey *)f;
    FUT_BEGIN(f);
    for (m->i = 0; m->i < 12 && !*m->stop; m->i++) {
        fut_sleep_init(&m->s, (int64_t)(1 + fut_sim_random() % 40) * MS);
        FUT_AWAIT(f, &m->s);
        /* (no switch around an await: the async macros own it) */
        m->who = (int)(fut_sim_random() % CCLIENTS);
        m->what = (int)(fut_sim_random() % 3);
        if (m->what == 0 && m->slots[m->who] &&
            fut_sim_reset(m->slots[m->who]) == 0)
            (*m->resets)++;
        if (m->what == 1) {
            ck_assert_int_eq(fut_sim_partition(m->srv, m->cl[m->who]), 0);
            (*m->cuts)++;
            fut_sleep_init(&m->s,
                           (int64_t)(1 + fut_sim_random() % 1500) * MS);
            FUT_AWAIT(f, &m->s);
            ck_assert_int_eq(fut_sim_heal(m->srv, m->cl[m->who]), 0);
        }
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(monkey_vt, "monkey", monkey_poll, NULL);

struct chaos_stats {
    int fails, resets, cuts, ok;
};

static int chaos_run(struct fut_runtime *rt, void *ud)
{
    struct chaos_stats *st = ud;
    struct world w;
    memset(&w, 0, sizeof w);
    w.chaos = 1;
    struct fut_io *slots[CCLIENTS];
    memset(slots, 0, sizeof slots);
    int stop = 0;
    struct fut_sim_host *sh, *ch[CCLIENTS];
    ck_assert_int_eq(fut_sim_host_new(rt, "10.0.0.1", &sh), 0);
    ck_assert_int_eq(fut_addr_parse("10.0.0.1", 7000, &w.srv, &w.srvlen), 0);
    struct server s;
    memset(&s, 0, sizeof s);
    fut_future_init(&s.base, &server_vt);
    s.w = &w;
    s.n = CCLIENTS;
    ck_assert_int_eq(fut_sim_spawn_on(sh, &s, sizeof s, NULL), 0);
    struct fut_join cj[CCLIENTS], mj;
    for (int i = 0; i < CCLIENTS; i++) {
        char addr[32];
        snprintf(addr, sizeof addr, "10.0.2.%d", i + 1);
        ck_assert_int_eq(fut_sim_host_new(rt, addr, &ch[i]), 0);
        struct chaos_client c;
        memset(&c, 0, sizeof c);
        fut_future_init(&c.base, &chaos_client_vt);
        c.w = &w;
        c.id = i;
        c.slot = &slots[i];
        c.fails = &st->fails;
        ck_assert_int_eq(fut_sim_spawn_on(ch[i], &c, sizeof c, &cj[i]), 0);
    }
    struct monkey m;
    memset(&m, 0, sizeof m);
    fut_future_init(&m.base, &monkey_vt);
    m.srv = sh;
    m.cl = ch;
    m.slots = slots;
    m.stop = &stop;
    m.resets = &st->resets;
    m.cuts = &st->cuts;
    ck_assert_int_eq(fut_spawn(rt, &m, sizeof m, &mj), 0);
    int r = 0;
    for (int i = 0; i < CCLIENTS; i++) {
        int b = fut_block_on(rt, &cj[i].base);
        if (b || cj[i].result)
            r = b ? b : cj[i].result;
        fut_drop(&cj[i].base);
    }
    stop = 1;
    int b = fut_block_on(rt, &mj.base);
    if (b)
        r = b;
    fut_drop(&mj.base);
    st->ok += w.echoed_ok;
    return r; /* the server and the handlers go with the runtime */
}

START_TEST(chaos)
{
    unsetenv("FUT_SIM_SEED");
    struct chaos_stats st;
    memset(&st, 0, sizeof st);
    int seeds = TEST_ITERS(300, 60);
    for (int seed = 1; seed <= seeds; seed++)
        ASSERT_EQ(fut_sim_run(NULL, (uint64_t)seed, chaos_run, &st, NULL), 0);
    fprintf(stderr,
            "chaos: %d seeds: resets %d cuts %d failed clients %d "
            "echoes %d\n",
            seeds, st.resets, st.cuts, st.fails, st.ok);
    /* The faults happened, and so did plenty of good exchanges. */
    ck_assert_msg(st.resets > seeds / 4 && st.cuts > seeds / 2 &&
                      st.fails > seeds / 4 && st.ok > seeds * CCLIENTS,
                  "resets %d cuts %d failed clients %d echoes %d", st.resets,
                  st.cuts, st.fails, st.ok);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_net");
    TCase *tc = fut_test_tcase(s, "echo_same_seed");
    tcase_add_test(tc, echo_same_seed);
    tc = fut_test_tcase(s, "echo_seeds_differ");
    tcase_add_test(tc, echo_seeds_differ);
    tc = fut_test_tcase(s, "latency");
    tcase_add_test(tc, latency_in_virtual_time);
    tc = fut_test_tcase(s, "refused");
    tcase_add_test(tc, refused);
    tc = fut_test_tcase(s, "reset");
    tcase_add_test(tc, reset_mid_stream);
    tc = fut_test_tcase(s, "partition");
    tcase_add_test(tc, partition_until_heal);
    tc = fut_test_tcase(s, "closes");
    tcase_add_test(tc, closes);
    tc = fut_test_tcase(s, "teardown");
    tcase_add_test(tc, teardown);
    tc = fut_test_tcase(s, "chaos");
    tcase_add_test(tc, chaos);
    return fut_test_run(s);
}
