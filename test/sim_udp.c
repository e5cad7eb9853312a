/* SPDX-License-Identifier: MIT */
/* UDP under simulation (fut/sim.h, src/io/backend_sim.c): fut_udp_bind,
 * fut_udp_connect, fut_io_send_to / fut_io_recv_from and the stream calls
 * on datagram sockets, unchanged, between named hosts.
 *   - retry: a request/response client that retries on a timeout finishes
 *     every request under seeded loss, duplication and reordering over
 *     many seeds; every datagram is accounted for (fut_sim_udp_stats),
 *     and what the programs read is what the network says was read; the
 *     faults happened (lost, duplicated, held back; stale replies and
 *     requests out of order seen by the programs);
 *   - same_seed: one seed gives one trace and the same counts over
 *     reruns, other seeds other traces;
 *   - rules: partitions drop datagrams (sent into one, or in flight when
 *     it comes), a crashed host's sockets are gone (-ENETDOWN, datagrams
 *     to it dropped, its port free after the restart), a connected
 *     socket takes only its peer's, recvfrom names the sender, a short
 *     buffer truncates, a peek leaves the datagram, the errors. */
#include <errno.h>
#include <string.h>

#include "sim_scaffold.h"
#include "test.h"

#define MS 1000000LL

/* ------------------------------------------------------------ retry */

enum { UCLIENTS = 4, REQS = 12, MAXBODY = 200, HDR = 8 };

struct uworld {
    struct sockaddr_storage srv;
    socklen_t srvlen;
    int server_rx; /* datagrams the server read */
    int client_rx; /* datagrams the clients read */
    int stale;     /* replies to an earlier request, or a second copy */
    int retries;   /* requests sent again after a timeout */
    int done;      /* requests answered, checked byte for byte */
    int behind;    /* requests the server saw after a later one */
    int last_seq[UCLIENTS];
    uint32_t loss, dup, reorder;
};

static unsigned char body_byte(int id, int seq, size_t i)
{
    return (unsigned char)(id * 37 + seq * 11 + (int)i * 5);
}

static void put32(unsigned char *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

static uint32_t get32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* The server: answers every datagram with itself, to its sender. */
struct userver {
    struct fut_future base;
    struct uworld *w;
    struct fut_io *io;
    unsigned char buf[HDR + MAXBODY];
    struct fut_io_recv_from rf;
    struct fut_io_send_to st;
};

static int userver_poll(struct fut_future *f, struct fut_context *cx)
{
    struct userver *s = (struct userver *)f;
    FUT_BEGIN(f);
    ck_assert_int_eq(
        fut_udp_bind((struct sockaddr *)&s->w->srv, s->w->srvlen, &s->io), 0);
    for (;;) {
        fut_io_recv_from_init(&s->rf, s->io, s->buf, sizeof s->buf, 0);
        FUT_AWAIT(f, &s->rf);
        ck_assert_int_ge(s->rf.result, HDR);
        s->w->server_rx++;
        int id = (int)get32(s->buf), seq = (int)get32(s->buf + 4);
        ck_assert_int_lt(id, UCLIENTS);
        if (seq < s->w->last_seq[id])
            s->w->behind++;
        else
            s->w->last_seq[id] = seq;
        fut_io_send_to_init(&s->st, s->io, s->buf, (size_t)s->rf.result, 0,
                            (struct sockaddr *)&s->rf.addr, s->rf.addrlen);
        FUT_AWAIT(f, &s->st);
        ck_assert_int_eq(s->st.result, s->rf.result);
    }
    FUT_END(f);
}

SIM_CLOSE_CLEANUP(userver_cleanup, userver, io)
FUT_ASYNC_VTABLE(userver_vt, "udp_server", userver_poll, userver_cleanup);

/* A client: REQS requests, each sent again every 30 ms until its reply
 * (same id, same seq, same bytes) comes back. */
struct uclient {
    struct fut_future base;
    struct uworld *w;
    int id, seq;
    size_t len;
    struct fut_io *io;
    unsigned char out[HDR + MAXBODY], in[HDR + MAXBODY];
    struct fut_io_send_to st;
    struct fut_io_recv_from rf;
    struct fut_timeout to;
};

static int uclient_poll(struct fut_future *f, struct fut_context *cx)
{
    struct uclient *c = (struct uclient *)f;
    FUT_BEGIN(f);
    {
        struct sockaddr_storage any;
        socklen_t alen;
        ck_assert_int_eq(fut_addr_parse("0.0.0.0", 0, &any, &alen), 0);
        ck_assert_int_eq(fut_udp_bind((struct sockaddr *)&any, alen, &c->io),
                         0);
    }
    for (c->seq = 1; c->seq <= REQS; c->seq++) {
        c->len = HDR + (size_t)(fut_sim_random() % MAXBODY);
        put32(c->out, (uint32_t)c->id);
        put32(c->out + 4, (uint32_t)c->seq);
        for (size_t i = HDR; i < c->len; i++)
            c->out[i] = body_byte(c->id, c->seq, i);
        for (;;) {
            fut_io_send_to_init(&c->st, c->io, c->out, c->len, 0,
                                (struct sockaddr *)&c->w->srv, c->w->srvlen);
            FUT_AWAIT(f, &c->st);
            ck_assert_int_eq(c->st.result, (ssize_t)c->len);
        wait:
            fut_io_recv_from_init(&c->rf, c->io, c->in, sizeof c->in, 0);
            fut_timeout_init(&c->to, &c->rf.base, fut_time_now() + 30 * MS);
            FUT_AWAIT(f, &c->to);
            if (c->to.result == FUT_ETIMEDOUT) {
                c->w->retries++;
                continue;
            }
            ck_assert_int_eq(c->to.result, 0);
            ck_assert_int_ge(c->rf.result, HDR);
            c->w->client_rx++;
            /* From the server, to this client. */
            ck_assert_int_eq(c->rf.addrlen, c->w->srvlen);
            ck_assert(memcmp(&c->rf.addr, &c->w->srv, c->w->srvlen) == 0);
            ck_assert_int_eq((int)get32(c->in), c->id);
            if ((int)get32(c->in + 4) != c->seq) {
                ck_assert_int_lt((int)get32(c->in + 4), c->seq);
                c->w->stale++;
                goto wait;
            }
            ck_assert_int_eq(c->rf.result, (ssize_t)c->len);
            ck_assert(memcmp(c->in, c->out, c->len) == 0);
            c->w->done++;
            break;
        }
    }
    sim_close(&c->io);
    FUT_END(f);
}

SIM_CLOSE_CLEANUP(uclient_cleanup, uclient, io)
FUT_ASYNC_VTABLE(uclient_vt, "udp_client", uclient_poll, uclient_cleanup);

/* The counts over the seeds of a run. */
struct utotals {
    uint64_t lost, duplicated, reordered, stale, behind, retries, seeds;
    struct fut_sim_udp_stats last;
    struct fut_sim_report rep;
};

static struct utotals *totals;

static int udp_run(struct fut_runtime *rt, void *ud)
{
    struct uworld *w = ud;
    struct uworld cfg = *w;
    memset(w, 0, sizeof *w);
    w->loss = cfg.loss;
    w->dup = cfg.dup;
    w->reorder = cfg.reorder;
    struct fut_sim_host *sh, *ch[UCLIENTS];
    ck_assert_int_eq(fut_sim_host_new(rt, "10.0.0.1", &sh), 0);
    ck_assert_int_eq(fut_addr_parse("10.0.0.1", 5300, &w->srv, &w->srvlen),
                     0);
    ck_assert_int_eq(
        fut_sim_udp_faults(rt, NULL, NULL, w->loss, w->dup, w->reorder), 0);
    struct userver s;
    memset(&s, 0, sizeof s);
    fut_future_init(&s.base, &userver_vt);
    s.w = w;
    struct fut_join sj, cj[UCLIENTS];
    ck_assert_int_eq(fut_sim_spawn_on(sh, &s, sizeof s, &sj), 0);
    for (int i = 0; i < UCLIENTS; i++) {
        char addr[32];
        snprintf(addr, sizeof addr, "10.0.1.%d", i + 1);
        ck_assert_int_eq(fut_sim_host_new(rt, addr, &ch[i]), 0);
        struct uclient c;
        memset(&c, 0, sizeof c);
        fut_future_init(&c.base, &uclient_vt);
        c.w = w;
        c.id = i;
        ck_assert_int_eq(fut_sim_spawn_on(ch[i], &c, sizeof c, &cj[i]), 0);
    }
    int r = 0;
    for (int i = 0; i < UCLIENTS; i++) {
        int b = fut_block_on(rt, &cj[i].base);
        if (b)
            r = b;
        fut_drop(&cj[i].base);
    }
    fut_join_abort(&sj);
    fut_block_on(rt, &sj.base);
    fut_drop(&sj.base);
    ck_assert_int_eq(r, 0);
    ck_assert_int_eq(w->done, UCLIENTS * REQS);
    struct fut_sim_udp_stats st;
    ck_assert_int_eq(fut_sim_udp_stats(rt, &st), 0);
    /* Every datagram accounted for. */
    ck_assert_uint_eq(st.sent + st.duplicated,
                      st.lost + st.cut + st.no_socket + st.overflow +
                          st.delivered + st.in_flight);
    ck_assert_uint_eq(st.read, (uint64_t)(w->server_rx + w->client_rx));
    ck_assert_uint_ge(st.delivered, st.read);
    ck_assert_uint_eq(st.cut, 0); /* no partition, no crash */
    ck_assert_uint_eq(st.overflow, 0);
    /* Requests sent: one per request and retry. */
    ck_assert_uint_eq(
        st.sent, (uint64_t)(UCLIENTS * REQS + w->retries + w->server_rx));
    if (!w->loss)
        ck_assert_int_eq(w->retries, 0);
    if (totals) {
        totals->lost += st.lost;
        totals->duplicated += st.duplicated;
        totals->reordered += st.reordered;
        totals->stale += (uint64_t)w->stale;
        totals->behind += (uint64_t)w->behind;
        totals->retries += (uint64_t)w->retries;
        totals->seeds++;
        totals->last = st;
    }
    return 0;
}

START_TEST(retry)
{
    unsetenv("FUT_SIM_SEED");
    struct utotals t;
    memset(&t, 0, sizeof t);
    totals = &t;
    struct uworld w;
    memset(&w, 0, sizeof w);
    w.loss = 100000;    /* 10% */
    w.dup = 100000;     /* 10% */
    w.reorder = 150000; /* 15% */
    int seeds = TEST_ITERS(200, 40);
    for (int seed = 1; seed <= seeds; seed++)
        ASSERT_EQ(fut_sim_run(NULL, (uint64_t)seed, udp_run, &w, NULL), 0);
    totals = NULL;
    fprintf(stderr,
            "udp retry: %d seeds: lost %llu duplicated %llu held back %llu "
            "retries %llu stale replies %llu requests behind %llu\n",
            seeds, (unsigned long long)t.lost,
            (unsigned long long)t.duplicated, (unsigned long long)t.reordered,
            (unsigned long long)t.retries, (unsigned long long)t.stale,
            (unsigned long long)t.behind);
    ck_assert_uint_gt(t.lost, 0);
    ck_assert_uint_gt(t.duplicated, 0);
    ck_assert_uint_gt(t.reordered, 0);
    ck_assert_uint_gt(t.retries, 0);
    ck_assert_uint_gt(t.stale, 0);
    ck_assert_uint_gt(t.behind, 0);
    /* Without faults: no retry, nothing lost, stale or behind. */
    memset(&t, 0, sizeof t);
    memset(&w, 0, sizeof w);
    totals = &t;
    for (int seed = 1; seed <= 20; seed++)
        ASSERT_EQ(fut_sim_run(NULL, (uint64_t)seed, udp_run, &w, NULL), 0);
    totals = NULL;
    ck_assert_uint_ge(t.seeds, 20); /* twice each under FUT_SIM_CHECK */
    ck_assert_uint_eq(t.lost + t.duplicated + t.reordered + t.stale +
                          t.behind + t.retries,
                      0);
}
END_TEST

START_TEST(same_seed)
{
    unsetenv("FUT_SIM_SEED");
    struct uworld w;
    memset(&w, 0, sizeof w);
    struct utotals t;
    struct fut_sim_report first, rep;
    struct fut_sim_udp_stats st0;
    for (int run = 0; run < TEST_ITERS(30, 8); run++) {
        memset(&t, 0, sizeof t);
        totals = &t;
        w.loss = 100000;
        w.dup = 100000;
        w.reorder = 150000;
        ASSERT_EQ(fut_sim_run(NULL, 77, udp_run, &w, &rep), 0);
        totals = NULL;
        if (run == 0) {
            first = rep;
            st0 = t.last;
            continue;
        }
        ck_assert_uint_eq(rep.trace, first.trace);
        ck_assert_uint_eq(rep.steps, first.steps);
        ck_assert_int_eq(rep.virtual_ns, first.virtual_ns);
        ck_assert(memcmp(&t.last, &st0, sizeof st0) == 0);
    }
    /* Other seeds, other traces. */
    uint64_t traces[10];
    int distinct = 0;
    for (int seed = 1; seed <= 10; seed++) {
        ASSERT_EQ(fut_sim_run(NULL, (uint64_t)seed, udp_run, &w, &rep), 0);
        int dup = 0;
        for (int i = 0; i < distinct; i++)
            dup |= traces[i] == rep.trace;
        if (!dup)
            traces[distinct++] = rep.trace;
    }
    ck_assert_int_ge(distinct, 9);
}
END_TEST

/* ------------------------------------------------------------ rules */

static struct sockaddr_storage addr_of(const char *host, int port,
                                       socklen_t *len)
{
    struct sockaddr_storage ss;
    ck_assert_int_eq(fut_addr_parse(host, port, &ss, len), 0);
    return ss;
}

struct rules {
    struct fut_future base;
    struct fut_sim_host *a, *b, *c;
    struct fut_io *sa, *sb, *sc;
    struct sockaddr_storage ab, bb, cb; /* their addresses */
    socklen_t al, bl, cl;
    unsigned char buf[64];
    struct fut_io_send_to st;
    struct fut_io_recv_from rf;
    struct fut_io_read rd;
    struct fut_io_write wr;
    struct fut_timeout to;
    struct fut_sleep sl;
    int i;
    int *ok;
};

/* Sends 'n' bytes of buf from 'from' to 'to'. */
#define SEND(io, addr, alen, n)                                              \
    do {                                                                     \
        fut_io_send_to_init(&r->st, (io), r->buf, (n), 0,                    \
                            (struct sockaddr *)&(addr), (alen));             \
        FUT_AWAIT(f, &r->st);                                                \
    } while (0)
/* Receives on 'io' for at most 50 ms (r->to.result: 0 or ETIMEDOUT). */
#define RECV(io, n)                                                          \
    do {                                                                     \
        fut_io_recv_from_init(&r->rf, (io), r->buf, (n), 0);                 \
        fut_timeout_init(&r->to, &r->rf.base, fut_time_now() + 50 * MS);     \
        FUT_AWAIT(f, &r->to);                                                \
    } while (0)

static int rules_poll(struct fut_future *f, struct fut_context *cx)
{
    struct rules *r = (struct rules *)f;
    struct fut_sim_udp_stats st;
    FUT_BEGIN(f);
    /* A bind to a host's address puts the socket on that host. */
    r->ab = addr_of("10.0.0.1", 4000, &r->al);
    r->bb = addr_of("10.0.0.2", 4000, &r->bl);
    r->cb = addr_of("10.0.0.3", 4000, &r->cl);
    ck_assert_int_eq(fut_udp_bind((struct sockaddr *)&r->ab, r->al, &r->sa),
                     0);
    ck_assert_int_eq(fut_udp_bind((struct sockaddr *)&r->bb, r->bl, &r->sb),
                     0);
    ck_assert_int_eq(fut_udp_bind((struct sockaddr *)&r->cb, r->cl, &r->sc),
                     0);
    {
        struct fut_io *dupe;
        ck_assert_int_eq(
            fut_udp_bind((struct sockaddr *)&r->bb, r->bl, &dupe),
            -EADDRINUSE);
        int type = 0;
        ck_assert_int_eq(fut_io_get_option(r->sa, SOL_SOCKET, SO_TYPE, &type),
                         0);
        ck_assert_int_eq(type, SOCK_DGRAM);
    }
    /* recvfrom names the sender; a short buffer truncates (the rest is
     * gone); a peek leaves the datagram. */
    memset(r->buf, 'x', 10);
    SEND(r->sa, r->bb, r->bl, 10);
    ck_assert_int_eq(r->st.result, 10);
    fut_io_peek_init(&r->rd, r->sb, r->buf, 3);
    FUT_AWAIT(f, &r->rd);
    ck_assert_int_eq(r->rd.result, 3);
    RECV(r->sb, 4);
    ck_assert_int_eq(r->to.result, 0);
    ck_assert_int_eq(r->rf.result, 4);
    ck_assert_int_eq(r->rf.addrlen, r->al);
    ck_assert(memcmp(&r->rf.addr, &r->ab, r->al) == 0);
    RECV(r->sb, sizeof r->buf);
    ck_assert_int_eq(r->to.result, FUT_ETIMEDOUT); /* nothing left */
    /* Errors. */
    fut_io_write_init(&r->wr, r->sa, r->buf, 4);
    FUT_AWAIT(f, &r->wr);
    ck_assert_int_eq(r->wr.result, -EDESTADDRREQ); /* not connected */
    {
        socklen_t l;
        struct sockaddr_storage nowhere = addr_of("10.9.9.9", 1, &l);
        fut_io_send_to_init(&r->st, r->sa, r->buf, 4, 0,
                            (struct sockaddr *)&nowhere, l);
    }
    FUT_AWAIT(f, &r->st);
    ck_assert_int_eq(r->st.result, -ENETUNREACH);
    {
        static unsigned char big[70000];
        fut_io_send_to_init(&r->st, r->sa, big, sizeof big, 0,
                            (struct sockaddr *)&r->bb, r->bl);
    }
    FUT_AWAIT(f, &r->st);
    ck_assert_int_eq(r->st.result, -EMSGSIZE);
    /* A datagram to a port nobody bound is dropped. */
    {
        socklen_t l;
        struct sockaddr_storage closed = addr_of("10.0.0.2", 4999, &l);
        fut_io_send_to_init(&r->st, r->sa, r->buf, 4, 0,
                            (struct sockaddr *)&closed, l);
    }
    FUT_AWAIT(f, &r->st);
    fut_sleep_init(&r->sl, 20 * MS);
    FUT_AWAIT(f, &r->sl);
    fut_sim_udp_stats(fut_runtime_current(), &st);
    ck_assert_uint_eq(st.no_socket, 1);

    /* A connected socket sends to its peer with write and takes only its
     * peer's datagrams. */
    ck_assert_int_eq(fut_udp_connect(r->sb, (struct sockaddr *)&r->ab, r->al),
                     0);
    memset(r->buf, 'c', 5);
    SEND(r->sc, r->bb, r->bl, 5); /* from C: filtered */
    SEND(r->sa, r->bb, r->bl, 6); /* from A: taken */
    fut_io_read_init(&r->rd, r->sb, r->buf, sizeof r->buf);
    FUT_AWAIT(f, &r->rd);
    ck_assert_int_eq(r->rd.result, 6);
    fut_sleep_init(&r->sl, 20 * MS); /* C's may come later */
    FUT_AWAIT(f, &r->sl);
    fut_sim_udp_stats(fut_runtime_current(), &st);
    ck_assert_uint_eq(st.no_socket, 2);
    fut_io_write_init(&r->wr, r->sb, r->buf, 7);
    FUT_AWAIT(f, &r->wr);
    ck_assert_int_eq(r->wr.result, 7);
    RECV(r->sa, sizeof r->buf);
    ck_assert_int_eq(r->to.result, 0);
    ck_assert_int_eq(r->rf.result, 7);
    ck_assert(memcmp(&r->rf.addr, &r->bb, r->bl) == 0);

    /* A partition drops what is sent into it and what is on its way when
     * it comes; after the heal datagrams go again. */
    ck_assert_int_eq(fut_sim_partition(r->a, r->b), 0);
    for (r->i = 0; r->i < 5; r->i++) {
        SEND(r->sa, r->bb, r->bl, 8);
        ck_assert_int_eq(r->st.result, 8); /* the sender cannot tell */
    }
    ck_assert_int_eq(fut_sim_heal(r->a, r->b), 0);
    RECV(r->sb, sizeof r->buf);
    ck_assert_int_eq(r->to.result, FUT_ETIMEDOUT);
    fut_sim_udp_stats(fut_runtime_current(), &st);
    ck_assert_uint_eq(st.cut, 5);
    SEND(r->sa, r->bb, r->bl, 8);                       /* in flight ... */
    ck_assert_int_eq(fut_sim_partition(r->a, r->b), 0); /* ... cut */
    fut_sleep_init(&r->sl, 20 * MS);
    FUT_AWAIT(f, &r->sl);
    ck_assert_int_eq(fut_sim_heal(r->a, r->b), 0);
    RECV(r->sb, sizeof r->buf);
    ck_assert_int_eq(r->to.result, FUT_ETIMEDOUT);
    fut_sim_udp_stats(fut_runtime_current(), &st);
    ck_assert_uint_eq(st.cut, 6);
    SEND(r->sa, r->bb, r->bl, 9);
    RECV(r->sb, sizeof r->buf);
    ck_assert_int_eq(r->to.result, 0);
    ck_assert_int_eq(r->rf.result, 9);

    /* A crashed host's sockets are gone: their calls fail, datagrams to
     * it are dropped, and after the restart its port is free. */
    SEND(r->sa, r->bb, r->bl, 3); /* in flight when B crashes */
    ck_assert_int_eq(fut_sim_crash(r->b), 0);
    fut_io_read_init(&r->rd, r->sb, r->buf, sizeof r->buf);
    FUT_AWAIT(f, &r->rd);
    ck_assert_int_eq(r->rd.result, -ENETDOWN);
    SEND(r->sa, r->bb, r->bl, 3); /* to a host that is down */
    fut_sleep_init(&r->sl, 20 * MS);
    FUT_AWAIT(f, &r->sl);
    fut_sim_udp_stats(fut_runtime_current(), &st);
    ck_assert_uint_eq(st.cut, 8);
    ck_assert_int_eq(fut_sim_restart(r->b), 0);
    fut_io_close(r->sb);
    ck_assert_int_eq(fut_udp_bind((struct sockaddr *)&r->bb, r->bl, &r->sb),
                     0);
    SEND(r->sa, r->bb, r->bl, 11);
    RECV(r->sb, sizeof r->buf);
    ck_assert_int_eq(r->to.result, 0);
    ck_assert_int_eq(r->rf.result, 11);
    fut_sim_udp_stats(fut_runtime_current(), &st);
    ck_assert_uint_eq(st.sent + st.duplicated,
                      st.lost + st.cut + st.no_socket + st.overflow +
                          st.delivered + st.in_flight);
    ck_assert_uint_eq(st.lost + st.duplicated + st.reordered, 0);
    *r->ok = 1;
    FUT_END(f);
}

static void rules_cleanup(struct fut_future *f)
{
    struct rules *r = (struct rules *)f;
    struct fut_io **ios[3] = {&r->sa, &r->sb, &r->sc};
    for (int i = 0; i < 3; i++)
        if (*ios[i])
            fut_io_close(*ios[i]);
}
FUT_ASYNC_VTABLE(rules_vt, "udp_rules", rules_poll, rules_cleanup);

static int rules_run(struct fut_runtime *rt, void *ud)
{
    int *ok = ud;
    *ok = 0;
    struct rules r;
    memset(&r, 0, sizeof r);
    fut_future_init(&r.base, &rules_vt);
    r.ok = ok;
    ck_assert_int_eq(fut_sim_host_new(rt, "10.0.0.1", &r.a), 0);
    ck_assert_int_eq(fut_sim_host_new(rt, "10.0.0.2", &r.b), 0);
    ck_assert_int_eq(fut_sim_host_new(rt, "10.0.0.3", &r.c), 0);
    struct fut_join j;
    ck_assert_int_eq(fut_spawn(rt, &r, sizeof r, &j), 0);
    int b = fut_block_on(rt, &j.base);
    fut_drop(&j.base);
    return b ? b : !*ok;
}

START_TEST(rules)
{
    unsetenv("FUT_SIM_SEED");
    int ok;
    for (int seed = 1; seed <= TEST_ITERS(20, 5); seed++)
        ASSERT_EQ(fut_sim_run(NULL, (uint64_t)seed, rules_run, &ok, NULL), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_udp");
    TCase *tc = fut_test_tcase(s, "retry");
    tcase_add_test(tc, retry);
    tc = fut_test_tcase(s, "same_seed");
    tcase_add_test(tc, same_seed);
    tc = fut_test_tcase(s, "rules");
    tcase_add_test(tc, rules);
    return fut_test_run(s);
}
