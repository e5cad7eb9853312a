/* SPDX-License-Identifier: MIT */
/* Unix stream sockets under simulation (fut/sim.h, src/io/backend_sim.c):
 * fut_unix_listen, fut_unix_connect_init, accept and the stream calls,
 * unchanged, on the simulated TCP machinery.
 *   - echo: a server listening at a path of its host, clients on that
 *     host echoing seeded messages (partial reads and writes), every byte
 *     back exactly; the addresses are Unix ones; one trace per seed;
 *   - namespace: paths are per host - a client on another host finds
 *     nothing there (-ENOENT), another host may listen at the same path
 *     and its clients reach that server; a path is taken while its
 *     listener is open; a crash takes the host's listeners with it, and
 *     after the restart the path is free. */
#include <errno.h>
#include <string.h>
#include <sys/un.h>

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
    fut_io_close(h->conn);
    h->conn = NULL;
    h->w->handled++;
    FUT_END(f);
}

static void uxhandler_cleanup(struct fut_future *f)
{
    struct uxhandler *h = (struct uxhandler *)f;
    if (h->conn)
        fut_io_close(h->conn);
}
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
    fut_io_close(s->l);
    s->l = NULL;
    FUT_END(f);
}

static void uxserver_cleanup(struct fut_future *f)
{
    struct uxserver *s = (struct uxserver *)f;
    if (s->l)
        fut_io_close(s->l);
}
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
    size_t len, got;
    unsigned char out[MAXMSG], in[MAXMSG];
    struct fut_io_write_all wa;
    struct fut_io_read rd;
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
        fut_io_write_all_init(&c->wa, c->io, c->out, c->len);
        FUT_AWAIT(f, &c->wa);
        ck_assert_int_eq(c->wa.result, (ssize_t)c->len);
        for (c->got = 0; c->got < c->len; c->got += (size_t)c->rd.result) {
            fut_io_read_init(&c->rd, c->io, c->in + c->got, c->len - c->got);
            FUT_AWAIT(f, &c->rd);
            ck_assert_int_gt(c->rd.result, 0);
        }
        ck_assert(memcmp(c->in, c->out, c->len) == 0);
        c->w->echoed++;
    }
    fut_io_close(c->io);
    c->io = NULL;
    FUT_END(f);
}

static void uxclient_cleanup(struct fut_future *f)
{
    struct uxclient *c = (struct uxclient *)f;
    if (c->io)
        fut_io_close(c->io);
}
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

static void idle_cleanup(struct fut_future *f)
{
    struct idle_listener *s = (struct idle_listener *)f;
    if (s->l)
        fut_io_close(s->l);
}
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
    fut_io_close(s->l);
    s->l = NULL;
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

int main(void)
{
    Suite *s = suite_create("sim_unix");
    TCase *tc = fut_test_tcase(s, "echo");
    tcase_add_test(tc, echo);
    tc = fut_test_tcase(s, "namespace");
    tcase_add_test(tc, namespace);
    return fut_test_run(s);
}
