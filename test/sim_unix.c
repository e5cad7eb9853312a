/* SPDX-License-Identifier: MIT */
/* Unix sockets under simulation (fut/sim.h, src/io/backend_sim.c):
 * fut_unix_listen, fut_unix_connect_init, accept and the stream calls,
 * unchanged, on the simulated TCP machinery; fut_unix_pair and
 * fut_unix_datagram_bind with the datagram calls.
 *   - echo: a server listening at a path of its host, clients on that
 *     host echoing seeded messages (partial reads and writes), every byte
 *     back exactly; the addresses are Unix ones; one trace per seed;
 *   - namespace: paths are per host - a client on another host finds
 *     nothing there (-ENOENT), another host may listen at the same path
 *     and its clients reach that server; a path is taken while its
 *     listener is open; a crash takes the host's listeners with it, and
 *     after the restart the path is free;
 *   - pairs: a stream pair echo, a datagram pair ping-pong after a burst
 *     larger than the receiver's queue (the sender waits, nothing lost or
 *     reordered), two datagram sockets bound to paths (recv_from's path
 *     checked both ways, -ENOENT for a path nobody bound); one trace
 *     per seed;
 *   - pair_crash: a crash of their host kills the pairs and a bound
 *     datagram socket (-ECONNRESET, -ENETDOWN) and frees the path. */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/un.h>

#include "sim_scaffold.h"
#include "test.h"

#define MS 1000000LL
#define PATH "/run/echo.sock"

enum { NCLIENTS = 4, ROUNDS = 5, MAXMSG = 3000 };

struct uxworld {
    int echoed; /* messages echoed back exactly */
    int handled;
    int accepted_unix; /* accepts whose peer address was AF_UNIX */
    unsigned char tag; /* the byte this host's server greets with */
};

/* The handler: greets with the server's tag byte, then echoes to EOF. */
struct uxhandler {
    struct fut_future base;
    struct uxworld *w;
    struct fut_io *conn;
    char buf[1024];
    struct fut_io_read rd;
    struct fut_io_write_all wa;
};

static int uxhandler_poll(struct fut_future *f, struct fut_context *cx)
{
    struct uxhandler *h = (struct uxhandler *)f;
    FUT_BEGIN(f);
    h->buf[0] = (char)h->w->tag;
    fut_io_write_all_init(&h->wa, h->conn, h->buf, 1);
    FUT_AWAIT(f, &h->wa);
    ck_assert_int_eq(h->wa.result, 1);
    for (;;) {
        fut_io_read_init(&h->rd, h->conn, h->buf, sizeof h->buf);
        FUT_AWAIT(f, &h->rd);
        if (h->rd.result <= 0)
            break;
        fut_io_write_all_init(&h->wa, h->conn, h->buf, (size_t)h->rd.result);
        FUT_AWAIT(f, &h->wa);
        ck_assert_int_eq(h->wa.result, h->rd.result);
    }
    ck_assert_int_eq(h->rd.result, 0);
    sim_close(&h->conn);
    h->w->handled++;
    FUT_END(f);
}

SIM_CLOSE_CLEANUP(uxhandler_cleanup, uxhandler, conn)
FUT_ASYNC_VTABLE(uxhandler_vt, "ux_handler", uxhandler_poll,
                 uxhandler_cleanup);

/* The server: listens at PATH, serves 'n' connections, then closes. */
struct uxserver {
    struct fut_future base;
    struct uxworld *w;
    struct fut_io *l;
    struct fut_accept a;
    int n, k;
    struct fut_join *hj;
};

static int uxserver_poll(struct fut_future *f, struct fut_context *cx)
{
    struct uxserver *s = (struct uxserver *)f;
    FUT_BEGIN(f);
    ck_assert_int_eq(fut_unix_listen(PATH, 8, &s->l), 0);
    {
        struct sockaddr_storage ss;
        socklen_t len;
        ck_assert_int_eq(fut_io_local_addr(s->l, &ss, &len), 0);
        ck_assert_int_eq(ss.ss_family, AF_UNIX);
        ck_assert_str_eq(((struct sockaddr_un *)&ss)->sun_path, PATH);
    }
    for (s->k = 0; s->k < s->n; s->k++) {
        fut_accept_init(&s->a, s->l);
        FUT_AWAIT(f, &s->a);
        ck_assert_int_eq(s->a.result, 0);
        if (s->a.peer.ss_family == AF_UNIX)
            s->w->accepted_unix++;
        struct uxhandler h;
        memset(&h, 0, sizeof h);
        fut_future_init(&h.base, &uxhandler_vt);
        h.w = s->w;
        h.conn = s->a.conn;
        ck_assert_int_eq(fut_spawn(NULL, &h, sizeof h, &s->hj[s->k]), 0);
    }
    sim_close(&s->l);
    FUT_END(f);
}

SIM_CLOSE_CLEANUP(uxserver_cleanup, uxserver, l)
FUT_ASYNC_VTABLE(uxserver_vt, "ux_server", uxserver_poll, uxserver_cleanup);

static unsigned char pattern(int id, int k, size_t i)
{
    return (unsigned char)(id * 29 + k * 13 + (int)i * 3 + (int)(i >> 7));
}

/* A client: connects to PATH on its host, checks the greeting (the tag
 * of the server it reached), echoes ROUNDS seeded messages. */
struct uxclient {
    struct fut_future base;
    struct uxworld *w;
    int id, k;
    unsigned char expect_tag;
    int expect_err; /* the connect's expected error (0: it connects) */
    struct fut_connect c;
    struct fut_io *io;
    size_t len;
    unsigned char out[MAXMSG], in[MAXMSG];
    struct fut_io_read rd;
    struct sim_echo_round er;
    struct fut_sleep sl;
};

static int uxclient_poll(struct fut_future *f, struct fut_context *cx)
{
    struct uxclient *c = (struct uxclient *)f;
    FUT_BEGIN(f);
    /* The servers listen in their first poll, at time 0. */
    fut_sleep_init(&c->sl, 1 * MS);
    FUT_AWAIT(f, &c->sl);
    fut_unix_connect_init(&c->c, PATH, fut_time_now() + 1000 * MS);
    FUT_AWAIT(f, &c->c);
    ck_assert_int_eq(c->c.result, c->expect_err);
    if (c->expect_err)
        FUT_RETURN(f);
    c->io = c->c.conn;
    {
        struct sockaddr_storage ss;
        socklen_t len;
        ck_assert_int_eq(fut_io_peer_addr(c->io, &ss, &len), 0);
        ck_assert_int_eq(ss.ss_family, AF_UNIX);
        ck_assert_str_eq(((struct sockaddr_un *)&ss)->sun_path, PATH);
    }
    fut_io_read_init(&c->rd, c->io, c->in, 1);
    FUT_AWAIT(f, &c->rd);
    ck_assert_int_eq(c->rd.result, 1);
    ck_assert_int_eq(c->in[0], c->expect_tag);
    for (c->k = 0; c->k < ROUNDS; c->k++) {
        c->len = 1 + (size_t)(fut_sim_random() % MAXMSG);
        for (size_t i = 0; i < c->len; i++)
            c->out[i] = pattern(c->id, c->k, i);
        sim_echo_round_init(&c->er, c->io, c->out, c->in, c->len, c->id,
                            c->k);
        FUT_AWAIT(f, &c->er);
        c->w->echoed++;
    }
    sim_close(&c->io);
    FUT_END(f);
}

SIM_CLOSE_CLEANUP(uxclient_cleanup, uxclient, io)
FUT_ASYNC_VTABLE(uxclient_vt, "ux_client", uxclient_poll, uxclient_cleanup);

static void spawn_client(struct fut_sim_host *h, struct uxworld *w, int id,
                         unsigned char tag, int err, struct fut_join *j)
{
    struct uxclient c;
    memset(&c, 0, sizeof c);
    fut_future_init(&c.base, &uxclient_vt);
    c.w = w;
    c.id = id;
    c.expect_tag = tag;
    c.expect_err = err;
    ck_assert_int_eq(fut_sim_spawn_on(h, &c, sizeof c, j), 0);
}

static void spawn_server(struct fut_sim_host *h, struct uxworld *w, int n,
                         struct fut_join *hj, struct fut_join *j)
{
    struct uxserver s;
    memset(&s, 0, sizeof s);
    fut_future_init(&s.base, &uxserver_vt);
    s.w = w;
    s.n = n;
    s.hj = hj;
    ck_assert_int_eq(fut_sim_spawn_on(h, &s, sizeof s, j), 0);
}

static int join_all(struct fut_runtime *rt, struct fut_join *j, int n)
{
    int r = 0;
    for (int i = 0; i < n; i++) {
        int b = fut_block_on(rt, &j[i].base);
        if (b)
            r = b;
        fut_drop(&j[i].base);
    }
    return r;
}

static int echo_run(struct fut_runtime *rt, void *ud)
{
    struct uxworld *w = ud;
    memset(w, 0, sizeof *w);
    w->tag = 'S';
    struct fut_sim_host *sh;
    ck_assert_int_eq(fut_sim_host_new(rt, "10.0.0.1", &sh), 0);
    struct fut_join sj, hj[NCLIENTS], cj[NCLIENTS];
    spawn_server(sh, w, NCLIENTS, hj, &sj);
    for (int i = 0; i < NCLIENTS; i++)
        spawn_client(sh, w, i, 'S', 0, &cj[i]);
    int r = join_all(rt, cj, NCLIENTS);
    r = r ? r : join_all(rt, hj, NCLIENTS);
    fut_drop(&sj.base);
    ck_assert_int_eq(r, 0);
    ck_assert_int_eq(w->echoed, NCLIENTS * ROUNDS);
    ck_assert_int_eq(w->handled, NCLIENTS);
    ck_assert_int_eq(w->accepted_unix, NCLIENTS);
    return 0;
}

START_TEST(echo)
{
    unsetenv("FUT_SIM_SEED");
    struct uxworld w;
    struct fut_sim_report first, rep;
    for (int run = 0; run < TEST_ITERS(20, 5); run++) {
        ASSERT_EQ(fut_sim_run(NULL, 5, echo_run, &w, &rep), 0);
        if (run == 0)
            first = rep;
        ck_assert_uint_eq(rep.trace, first.trace);
        ck_assert_int_eq(rep.virtual_ns, first.virtual_ns);
    }
    uint64_t traces[20];
    int distinct = 0;
    for (int seed = 1; seed <= TEST_ITERS(20, 6); seed++) {
        ASSERT_EQ(fut_sim_run(NULL, (uint64_t)seed, echo_run, &w, &rep), 0);
        int seen = 0;
        for (int i = 0; i < distinct; i++)
            seen |= traces[i] == rep.trace;
        if (!seen)
            traces[distinct++] = rep.trace;
    }
    ck_assert_int_ge(distinct, TEST_ITERS(19, 5));
}
END_TEST

/* ------------------------------------------------------------ namespace */

/* Listens at PATH on its host after 1 ms (when the servers started at
 * the same time listen), and closes at once: the listen's result. */
struct taken {
    struct fut_future base;
    int *result;
    struct fut_sleep sl;
};

static int taken_poll(struct fut_future *f, struct fut_context *cx)
{
    struct taken *t = (struct taken *)f;
    FUT_BEGIN(f);
    fut_sleep_init(&t->sl, 1 * MS);
    FUT_AWAIT(f, &t->sl);
    {
        struct fut_io *l = NULL;
        *t->result = fut_unix_listen(PATH, 8, &l);
        if (l)
            fut_io_close(l);
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(taken_vt, "ux_taken", taken_poll, NULL);

static int try_listen(struct fut_runtime *rt, struct fut_sim_host *h)
{
    int result = 1;
    struct taken t;
    fut_future_init(&t.base, &taken_vt);
    t.result = &result;
    struct fut_join j;
    ck_assert_int_eq(fut_sim_spawn_on(h, &t, sizeof t, &j), 0);
    ck_assert_int_eq(fut_block_on(rt, &j.base), 0);
    fut_drop(&j.base);
    return result;
}

/* A server that listens at PATH and waits for ever (crash drops it). */
struct idle_listener {
    struct fut_future base;
    struct fut_io *l;
    struct fut_sleep sl;
};

static int idle_poll(struct fut_future *f, struct fut_context *cx)
{
    struct idle_listener *s = (struct idle_listener *)f;
    FUT_BEGIN(f);
    ck_assert_int_eq(fut_unix_listen(PATH, 8, &s->l), 0);
    fut_sleep_init(&s->sl, 3600 * 1000 * MS);
    FUT_AWAIT(f, &s->sl);
    FUT_END(f);
}

SIM_CLOSE_CLEANUP(idle_cleanup, idle_listener, l)
FUT_ASYNC_VTABLE(idle_vt, "ux_idle", idle_poll, idle_cleanup);

/* Crashes 'h' (from inside the simulation) and restarts it. */
struct crasher {
    struct fut_future base;
    struct fut_sim_host *h;
};

static int crasher_poll(struct fut_future *f, struct fut_context *cx)
{
    struct crasher *c = (struct crasher *)f;
    (void)cx;
    ck_assert_int_eq(fut_sim_crash(c->h), 0);
    ck_assert_int_eq(fut_sim_restart(c->h), 0);
    return FUT_READY;
}
FUT_ASYNC_VTABLE(crasher_vt, "ux_crasher", crasher_poll, NULL);

/* Listens at PATH, connects to itself, accepts, closes the listener:
 * the path is free again while both ends of the connection are open. */
struct selfcon {
    struct fut_future base;
    struct fut_io *l, *l2, *a;
    struct fut_connect c;
    struct fut_accept acc;
    int *result;
};

static int selfcon_poll(struct fut_future *f, struct fut_context *cx)
{
    struct selfcon *s = (struct selfcon *)f;
    FUT_BEGIN(f);
    ck_assert_int_eq(fut_unix_listen(PATH, 8, &s->l), 0);
    fut_unix_connect_init(&s->c, PATH, -1);
    FUT_AWAIT(f, &s->c);
    ck_assert_int_eq(s->c.result, 0);
    fut_accept_init(&s->acc, s->l);
    FUT_AWAIT(f, &s->acc);
    ck_assert_int_eq(s->acc.result, 0);
    s->a = s->acc.conn;
    sim_close(&s->l);
    *s->result = fut_unix_listen(PATH, 8, &s->l2);
    FUT_END(f);
}

static void selfcon_cleanup(struct fut_future *f)
{
    struct selfcon *s = (struct selfcon *)f;
    struct fut_io *ios[4] = {s->l, s->l2, s->a, s->c.conn};
    for (int i = 0; i < 4; i++)
        if (ios[i])
            fut_io_close(ios[i]);
}
FUT_ASYNC_VTABLE(selfcon_vt, "ux_selfcon", selfcon_poll, selfcon_cleanup);

static int namespace_run(struct fut_runtime *rt, void *ud)
{
    struct uxworld *w = ud, w2;
    memset(w, 0, sizeof *w);
    memset(&w2, 0, sizeof w2);
    w->tag = 'A';
    w2.tag = 'B';
    struct fut_sim_host *a, *b, *c;
    ck_assert_int_eq(fut_sim_host_new(rt, "10.0.0.1", &a), 0);
    ck_assert_int_eq(fut_sim_host_new(rt, "10.0.0.2", &b), 0);
    ck_assert_int_eq(fut_sim_host_new(rt, "10.0.0.3", &c), 0);
    struct fut_join sa, sb, ha[2], hb[1], cj[4];
    spawn_server(a, w, 2, ha, &sa);
    /* The path is taken on A, free on B. */
    ck_assert_int_eq(try_listen(rt, a), -EADDRINUSE);
    spawn_server(b, &w2, 1, hb, &sb);
    /* Clients: two on A reach A's server, one on B reaches B's, one on
     * C finds nothing at the path. */
    spawn_client(a, w, 0, 'A', 0, &cj[0]);
    spawn_client(b, &w2, 1, 'B', 0, &cj[1]);
    spawn_client(c, w, 2, 0, -ENOENT, &cj[2]);
    spawn_client(a, w, 3, 'A', 0, &cj[3]);
    int r = join_all(rt, cj, 4);
    r = r ? r : join_all(rt, ha, 2);
    r = r ? r : join_all(rt, hb, 1);
    ck_assert_int_eq(r, 0);
    ck_assert_int_eq(w->echoed, 2 * ROUNDS);
    ck_assert_int_eq(w2.echoed, ROUNDS);
    ck_assert_int_eq(fut_block_on(rt, &sa.base), 0);
    ck_assert_int_eq(fut_block_on(rt, &sb.base), 0);
    fut_drop(&sa.base);
    fut_drop(&sb.base);
    /* Both servers closed their listeners: the path is free again. */
    ck_assert_int_eq(try_listen(rt, a), 0);
    /* A crash takes the host's listener with it; after the restart the
     * path is free, and a connect finds nothing there until then. */
    struct idle_listener il;
    memset(&il, 0, sizeof il);
    fut_future_init(&il.base, &idle_vt);
    struct fut_join ij;
    ck_assert_int_eq(fut_sim_spawn_on(c, &il, sizeof il, &ij), 0);
    ck_assert_int_eq(try_listen(rt, c), -EADDRINUSE);
    struct crasher k = {.h = c};
    fut_future_init(&k.base, &crasher_vt);
    struct fut_join kj;
    ck_assert_int_eq(fut_spawn(rt, &k, sizeof k, &kj), 0);
    ck_assert_int_eq(fut_block_on(rt, &kj.base), 0);
    fut_drop(&kj.base);
    ck_assert_int_eq(fut_block_on(rt, &ij.base), 0);
    ck_assert_int_eq(ij.result, FUT_ECANCELED);
    fut_drop(&ij.base);
    spawn_client(c, w, 4, 0, -ENOENT, &cj[0]);
    ck_assert_int_eq(join_all(rt, cj, 1), 0);
    ck_assert_int_eq(try_listen(rt, c), 0);
    /* Accepted connections do not hold their listener's path. */
    int again = 1;
    struct selfcon sc;
    memset(&sc, 0, sizeof sc);
    fut_future_init(&sc.base, &selfcon_vt);
    sc.result = &again;
    struct fut_join scj;
    ck_assert_int_eq(fut_sim_spawn_on(b, &sc, sizeof sc, &scj), 0);
    ck_assert_int_eq(fut_block_on(rt, &scj.base), 0);
    fut_drop(&scj.base);
    ck_assert_int_eq(again, 0);
    return 0;
}

START_TEST(namespace)
{
    unsetenv("FUT_SIM_SEED");
    struct uxworld w;
    for (int seed = 1; seed <= TEST_ITERS(30, 6); seed++)
        ASSERT_EQ(fut_sim_run(NULL, (uint64_t)seed, namespace_run, &w, NULL),
                  0);
}
END_TEST

/* ---------------------------------------------------------------- pairs */

/* The pair and datagram cases: an initiator sends NROUNDS messages of
 * msg_len(k) bytes, the responder gives each back with every byte + 1. */
enum { NROUNDS = 6, NBURST = 100, BURST_LEN = 2500 };
enum { M_STREAM_PAIR, M_DGRAM_PAIR, M_DGRAM_BOUND };
#define PATH_A "/run/a.sock"
#define PATH_B "/run/b.sock"

static size_t msg_len(int k)
{
    return 100 + (size_t)k * 373;
}

struct pworld {
    struct fut_io *sp[2], *dp[2]; /* the stream pair, the datagram pair */
    int rounds[3];                /* rounds checked, by mode */
    int burst_read;               /* burst datagrams read in order */
    int64_t burst_done;           /* virtual time the burst was sent */
};

static struct sockaddr_un un_addr(const char *path, socklen_t *len)
{
    struct sockaddr_un sun;
    memset(&sun, 0, sizeof sun);
    sun.sun_family = AF_UNIX;
    strcpy(sun.sun_path, path);
    *len = sizeof sun;
    return sun;
}

static void check_from(const struct fut_io_recv_from *rf, const char *path)
{
    const struct sockaddr_un *sun = (const struct sockaddr_un *)&rf->addr;
    if (!path) { /* unnamed: the family only */
        ck_assert_int_eq(rf->addrlen, sizeof(sa_family_t));
        return;
    }
    ck_assert_int_eq(rf->addrlen, offsetof(struct sockaddr_un, sun_path) +
                                      strlen(path) + 1);
    ck_assert_str_eq(sun->sun_path, path);
}

/* One transfer of a peer, as a future of its own: sends x->buf[0, len)
 * (the whole of it on the stream, a datagram - to path 'to' when bound),
 * or receives 'len' bytes into x->buf (the stream's in pieces, one
 * datagram whose sender's address is checked: 'from', or unnamed). */
struct pxfer {
    struct fut_future base;
    int mode, send;
    struct fut_io *io;
    unsigned char *buf;
    size_t len, got;
    const char *path; /* send: to; receive: from */
    ssize_t expect;   /* a send_to's result if not 'len' (0: 'len') */
    struct fut_io_read rd;
    struct fut_io_write wr;
    struct fut_io_write_all wa;
    struct fut_io_recv_from rf;
    struct fut_io_send_to st;
    struct sockaddr_un to;
    socklen_t tolen;
};

static int pxfer_poll(struct fut_future *f, struct fut_context *cx)
{
    struct pxfer *x = (struct pxfer *)f;
    FUT_BEGIN(f);
    if (x->send && x->mode == M_STREAM_PAIR) {
        fut_io_write_all_init(&x->wa, x->io, x->buf, x->len);
        FUT_AWAIT(f, &x->wa);
        ck_assert_int_eq(x->wa.result, (ssize_t)x->len);
    } else if (x->send && x->mode == M_DGRAM_PAIR) {
        fut_io_write_init(&x->wr, x->io, x->buf, x->len);
        FUT_AWAIT(f, &x->wr);
        ck_assert_int_eq(x->wr.result, (ssize_t)x->len);
    } else if (x->send) {
        x->to = un_addr(x->path, &x->tolen);
        fut_io_send_to_init(&x->st, x->io, x->buf, x->len, 0,
                            (struct sockaddr *)&x->to, x->tolen);
        FUT_AWAIT(f, &x->st);
        ck_assert_int_eq(x->st.result,
                         x->expect ? x->expect : (ssize_t)x->len);
    } else if (x->mode == M_STREAM_PAIR) {
        for (x->got = 0; x->got < x->len; x->got += (size_t)x->rd.result) {
            fut_io_read_init(&x->rd, x->io, x->buf + x->got, x->len - x->got);
            FUT_AWAIT(f, &x->rd);
            ck_assert_int_gt(x->rd.result, 0);
        }
    } else {
        fut_io_recv_from_init(&x->rf, x->io, x->buf, MAXMSG + 1, 0);
        FUT_AWAIT(f, &x->rf);
        ck_assert_int_eq(x->rf.result, (ssize_t)x->len);
        ck_assert_int_eq(x->rf.addr.ss_family, AF_UNIX);
        check_from(&x->rf, x->mode == M_DGRAM_BOUND ? x->path : NULL);
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(pxfer_vt, "ux_pxfer", pxfer_poll, NULL);

static struct pxfer *pxfer_init(struct pxfer *x, int mode, int send,
                                struct fut_io *io, unsigned char *buf,
                                size_t len, const char *path)
{
    memset(x, 0, sizeof *x);
    fut_future_init(&x->base, &pxfer_vt);
    x->mode = mode;
    x->send = send;
    x->io = io;
    x->buf = buf;
    x->len = len;
    x->path = path;
    return x;
}

#define PSEND(f, c, dst)                                                     \
    FUT_AWAIT(f, pxfer_init(&(c)->x, (c)->mode, 1, (c)->io, (c)->out,        \
                            (c)->len, (dst)))
#define PRECV(f, c, src)                                                     \
    FUT_AWAIT(f, pxfer_init(&(c)->x, (c)->mode, 0, (c)->io, (c)->in,         \
                            (c)->len, (src)))

struct ppeer {
    struct fut_future base;
    struct pworld *w;
    int mode, initiator, k, i;
    size_t len, got;
    struct fut_io *io; /* bound here (M_DGRAM_BOUND), else w's */
    unsigned char out[MAXMSG + 1], in[MAXMSG + 1];
    struct fut_sleep sl;
    struct fut_io_read rd;
    struct pxfer x;
};

static int ppeer_poll(struct fut_future *f, struct fut_context *cx)
{
    struct ppeer *c = (struct ppeer *)f;
    const char *me = c->initiator ? PATH_A : PATH_B;
    const char *other = c->initiator ? PATH_B : PATH_A;
    FUT_BEGIN(f);
    if (c->mode == M_DGRAM_BOUND) {
        ck_assert_int_eq(fut_unix_datagram_bind(me, &c->io), 0);
        /* Bound at time 0 on both sides; nobody at a third path. */
        fut_sleep_init(&c->sl, 1 * MS);
        FUT_AWAIT(f, &c->sl);
        if (c->initiator) {
            c->len = 10;
            memset(c->out, 'x', c->len);
            pxfer_init(&c->x, c->mode, 1, c->io, c->out, c->len,
                       "/run/nobody.sock");
            c->x.expect = -ENOENT; /* no socket file there */
            FUT_AWAIT(f, &c->x);
        }
    }
    if (c->mode == M_DGRAM_PAIR) {
        /* A burst larger than the receiver's queue, read 5 ms later: the
         * sender waits for room, and every datagram comes in order. */
        c->len = BURST_LEN;
        for (c->i = 0; c->i < NBURST; c->i++) {
            if (c->initiator) {
                memset(c->out, c->i, c->len);
                PSEND(f, c, NULL);
            } else {
                if (c->i == 0) {
                    fut_sleep_init(&c->sl, 5 * MS);
                    FUT_AWAIT(f, &c->sl);
                }
                PRECV(f, c, NULL);
                ck_assert_int_eq(c->in[0], (unsigned char)c->i);
                ck_assert_int_eq(c->in[BURST_LEN - 1], (unsigned char)c->i);
                c->w->burst_read++;
            }
        }
        if (c->initiator)
            c->w->burst_done = fut_time_now();
    }
    for (c->k = 0; c->k < NROUNDS; c->k++) {
        c->len = msg_len(c->k);
        if (c->initiator) {
            for (size_t i = 0; i < c->len; i++)
                c->out[i] = pattern(c->mode, c->k, i);
            PSEND(f, c, other);
            PRECV(f, c, other);
            for (size_t i = 0; i < c->len; i++)
                ck_assert_int_eq(
                    c->in[i], (unsigned char)(pattern(c->mode, c->k, i) + 1));
            c->w->rounds[c->mode]++;
        } else {
            PRECV(f, c, other);
            for (size_t i = 0; i < c->len; i++)
                c->out[i] = (unsigned char)(c->in[i] + 1);
            PSEND(f, c, other);
        }
    }
    if (c->mode == M_STREAM_PAIR && c->initiator) {
        /* A close is the other end's EOF. */
        fut_io_close(c->io);
        c->w->sp[1] = NULL;
    } else if (c->mode == M_STREAM_PAIR) {
        fut_io_read_init(&c->rd, c->io, c->in, 1);
        FUT_AWAIT(f, &c->rd);
        ck_assert_int_eq(c->rd.result, 0);
    }
    FUT_END(f);
}

static void ppeer_cleanup(struct fut_future *f)
{
    struct ppeer *c = (struct ppeer *)f;
    if (c->mode == M_DGRAM_BOUND && c->io)
        fut_io_close(c->io);
}
FUT_ASYNC_VTABLE(ppeer_vt, "ux_ppeer", ppeer_poll, ppeer_cleanup);

/* Makes both pairs on its host (fut_unix_pair on the simulated host). */
struct pmaker {
    struct fut_future base;
    struct pworld *w;
};

static int pmaker_poll(struct fut_future *f, struct fut_context *cx)
{
    struct pmaker *m = (struct pmaker *)f;
    (void)cx;
    ck_assert_int_eq(fut_unix_pair(SOCK_STREAM, &m->w->sp[0], &m->w->sp[1]),
                     0);
    ck_assert_int_eq(fut_unix_pair(SOCK_DGRAM, &m->w->dp[0], &m->w->dp[1]),
                     0);
    ck_assert_int_eq(
        fut_unix_pair(SOCK_SEQPACKET, &m->w->dp[0], &m->w->dp[1]),
        FUT_EINVAL);
    return FUT_READY;
}
FUT_ASYNC_VTABLE(pmaker_vt, "ux_pmaker", pmaker_poll, NULL);

static void make_pairs(struct fut_runtime *rt, struct fut_sim_host *h,
                       struct pworld *w)
{
    struct pmaker m = {.w = w};
    fut_future_init(&m.base, &pmaker_vt);
    struct fut_join j;
    ck_assert_int_eq(fut_sim_spawn_on(h, &m, sizeof m, &j), 0);
    ck_assert_int_eq(fut_block_on(rt, &j.base), 0);
    fut_drop(&j.base);
}

static void spawn_peer(struct fut_sim_host *h, struct pworld *w, int mode,
                       int initiator, struct fut_join *j)
{
    struct ppeer c;
    memset(&c, 0, sizeof c);
    fut_future_init(&c.base, &ppeer_vt);
    c.w = w;
    c.mode = mode;
    c.initiator = initiator;
    if (mode == M_STREAM_PAIR)
        c.io = w->sp[initiator];
    else if (mode == M_DGRAM_PAIR)
        c.io = w->dp[initiator];
    ck_assert_int_eq(fut_sim_spawn_on(h, &c, sizeof c, j), 0);
}

static int pairs_run(struct fut_runtime *rt, void *ud)
{
    struct pworld *w = ud;
    memset(w, 0, sizeof *w);
    struct fut_sim_host *h;
    ck_assert_int_eq(fut_sim_host_new(rt, "10.0.0.1", &h), 0);
    make_pairs(rt, h, w);
    struct fut_join j[6];
    for (int mode = 0; mode < 3; mode++) {
        spawn_peer(h, w, mode, 1, &j[2 * mode]);
        spawn_peer(h, w, mode, 0, &j[2 * mode + 1]);
    }
    ck_assert_int_eq(join_all(rt, j, 6), 0);
    for (int mode = 0; mode < 3; mode++)
        ck_assert_int_eq(w->rounds[mode], NROUNDS);
    ck_assert_int_eq(w->burst_read, NBURST);
    ck_assert_int_ge(w->burst_done, 5 * MS); /* it waited for room */
    ck_assert_ptr_null(w->sp[1]); /* the initiator's, closed by it */
    fut_io_close(w->sp[0]);
    fut_io_close(w->dp[0]);
    fut_io_close(w->dp[1]);
    return 0;
}

START_TEST(pairs)
{
    unsetenv("FUT_SIM_SEED");
    struct pworld w;
    struct fut_sim_report first, rep;
    for (int run = 0; run < TEST_ITERS(10, 3); run++) {
        ASSERT_EQ(fut_sim_run(NULL, 7, pairs_run, &w, &rep), 0);
        if (run == 0)
            first = rep;
        ck_assert_uint_eq(rep.trace, first.trace);
        ck_assert_int_eq(rep.virtual_ns, first.virtual_ns);
    }
    uint64_t traces[10];
    int distinct = 0;
    for (int seed = 1; seed <= TEST_ITERS(10, 4); seed++) {
        ASSERT_EQ(fut_sim_run(NULL, (uint64_t)seed, pairs_run, &w, &rep), 0);
        int seen = 0;
        for (int i = 0; i < distinct; i++)
            seen |= traces[i] == rep.trace;
        if (!seen)
            traces[distinct++] = rep.trace;
    }
    ck_assert_int_ge(distinct, 2);
}
END_TEST

/* ---------------------------------------------------------- pair_crash */

/* Binds PATH_A on its host and waits for ever on the stream pair (the
 * crash drops it; the handles stay with the world). */
struct pholder {
    struct fut_future base;
    struct pworld *w;
    struct fut_io **bound;
    unsigned char b[1];
    struct fut_io_read rd;
};

static int pholder_poll(struct fut_future *f, struct fut_context *cx)
{
    struct pholder *p = (struct pholder *)f;
    FUT_BEGIN(f);
    ck_assert_int_eq(fut_unix_datagram_bind(PATH_A, p->bound), 0);
    ck_assert_int_eq(fut_unix_datagram_bind(PATH_A, &p->w->dp[0]),
                     -EADDRINUSE);
    fut_io_read_init(&p->rd, p->w->sp[0], p->b, 1);
    FUT_AWAIT(f, &p->rd);
    ck_abort_msg("the stream pair's read ended before the crash");
    FUT_END(f);
}
FUT_ASYNC_VTABLE(pholder_vt, "ux_pholder", pholder_poll, NULL);

/* After the crash, from another host: every socket of the crashed host
 * is dead, and (restarted) its path is free. */
struct pafter {
    struct fut_future base;
    struct pworld *w;
    struct fut_io *bound;
    unsigned char b[16];
    struct fut_io_read rd;
    struct fut_io_write wr;
};

static int pafter_poll(struct fut_future *f, struct fut_context *cx)
{
    struct pafter *p = (struct pafter *)f;
    FUT_BEGIN(f);
    fut_io_read_init(&p->rd, p->w->sp[1], p->b, 1);
    FUT_AWAIT(f, &p->rd);
    ck_assert_int_eq(p->rd.result, -ECONNRESET);
    fut_io_read_init(&p->rd, p->w->dp[1], p->b, sizeof p->b);
    FUT_AWAIT(f, &p->rd);
    ck_assert_int_eq(p->rd.result, -ENETDOWN);
    fut_io_write_init(&p->wr, p->w->dp[0], p->b, sizeof p->b);
    FUT_AWAIT(f, &p->wr);
    ck_assert_int_eq(p->wr.result, -ENETDOWN);
    fut_io_read_init(&p->rd, p->bound, p->b, sizeof p->b);
    FUT_AWAIT(f, &p->rd);
    ck_assert_int_eq(p->rd.result, -ENETDOWN);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(pafter_vt, "ux_pafter", pafter_poll, NULL);

/* Binds PATH_A on its (restarted) host: the result. */
struct prebind {
    struct fut_future base;
    int *result;
};

static int prebind_poll(struct fut_future *f, struct fut_context *cx)
{
    struct prebind *p = (struct prebind *)f;
    struct fut_io *io = NULL;
    (void)cx;
    *p->result = fut_unix_datagram_bind(PATH_A, &io);
    if (io)
        fut_io_close(io);
    return FUT_READY;
}
FUT_ASYNC_VTABLE(prebind_vt, "ux_prebind", prebind_poll, NULL);

static int pair_crash_run(struct fut_runtime *rt, void *ud)
{
    struct pworld *w = ud;
    memset(w, 0, sizeof *w);
    struct fut_sim_host *h;
    ck_assert_int_eq(fut_sim_host_new(rt, "10.0.0.1", &h), 0);
    make_pairs(rt, h, w);
    struct fut_io *bound = NULL;
    struct pholder ph = {.w = w, .bound = &bound};
    fut_future_init(&ph.base, &pholder_vt);
    struct fut_join hj;
    ck_assert_int_eq(fut_sim_spawn_on(h, &ph, sizeof ph, &hj), 0);
    struct crasher k = {.h = h};
    fut_future_init(&k.base, &crasher_vt);
    struct fut_join kj;
    /* Let the holder bind and wait first. */
    struct fut_sleep sl;
    fut_sleep_init(&sl, 1 * MS);
    ck_assert_int_eq(fut_block_on(rt, &sl.base), 0);
    ck_assert_ptr_nonnull(bound);
    ck_assert_int_eq(fut_spawn(rt, &k, sizeof k, &kj), 0);
    ck_assert_int_eq(fut_block_on(rt, &kj.base), 0);
    fut_drop(&kj.base);
    ck_assert_int_eq(fut_block_on(rt, &hj.base), 0);
    ck_assert_int_eq(hj.result, FUT_ECANCELED);
    fut_drop(&hj.base);
    struct pafter pa = {.w = w, .bound = bound};
    fut_future_init(&pa.base, &pafter_vt);
    struct fut_join aj;
    ck_assert_int_eq(fut_spawn(rt, &pa, sizeof pa, &aj), 0);
    ck_assert_int_eq(fut_block_on(rt, &aj.base), 0);
    fut_drop(&aj.base);
    int again = 1;
    struct prebind pb = {.result = &again};
    fut_future_init(&pb.base, &prebind_vt);
    struct fut_join bj;
    ck_assert_int_eq(fut_sim_spawn_on(h, &pb, sizeof pb, &bj), 0);
    ck_assert_int_eq(fut_block_on(rt, &bj.base), 0);
    fut_drop(&bj.base);
    ck_assert_int_eq(again, 0);
    fut_io_close(bound);
    for (int i = 0; i < 2; i++) {
        fut_io_close(w->sp[i]);
        fut_io_close(w->dp[i]);
    }
    return 0;
}

START_TEST(pair_crash)
{
    unsetenv("FUT_SIM_SEED");
    struct pworld w;
    for (int seed = 1; seed <= TEST_ITERS(10, 3); seed++)
        ASSERT_EQ(fut_sim_run(NULL, (uint64_t)seed, pair_crash_run, &w, NULL),
                  0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_unix");
    TCase *tc = fut_test_tcase(s, "echo");
    tcase_add_test(tc, echo);
    tc = fut_test_tcase(s, "namespace");
    tcase_add_test(tc, namespace);
    tc = fut_test_tcase(s, "pairs");
    tcase_add_test(tc, pairs);
    tc = fut_test_tcase(s, "pair_crash");
    tcase_add_test(tc, pair_crash);
    return fut_test_run(s);
}
