/* SPDX-License-Identifier: MIT */
/* examples/echo_server's own code under simulation: its server, acceptor
 * and connection tasks (the scope, the idle deadline, the graceful
 * shutdown's future), compiled from the example's source unchanged,
 * serve eight clients on their own hosts of a simulated network. Every
 * echo comes back exactly; every connection is served and closed; one
 * seed gives one trace over 20 reruns, other seeds others. Signals are
 * not simulated: the server runs without them (its shutdown then waits
 * for the scope, and the test aborts it at the end). */
#include <errno.h>
#include <string.h>

#include "sim_scaffold.h"
#include "test.h"

int echo_server_main(int argc, char **argv);
#define main echo_server_main
#include "echo_server.c"
#undef main

#define MS 1000000LL

enum { NCLIENTS = 8, NROUNDS = 5, MAXLEN = 3000 };

struct run {
    struct sockaddr_storage at;
    socklen_t atlen;
    int echoed;
    int64_t end_ns;
};

/* The example's server on its host: the listener, then the example's
 * own future (static: big, and it must not move). */
static struct server srv;

struct host_main {
    struct fut_future base;
    struct run *r;
};

static int host_main_poll(struct fut_future *f, struct fut_context *cx)
{
    struct host_main *h = (struct host_main *)f;
    FUT_BEGIN(f);
    memset(&srv, 0, sizeof srv);
    ck_assert_int_eq(fut_tcp_listen((struct sockaddr *)&h->r->at, h->r->atlen,
                                    64, &srv.listener),
                     0);
    fut_future_init(&srv.base, &server_vt);
    FUT_AWAIT(f, &srv.base);
    FUT_END(f);
}

static void host_main_cleanup(struct fut_future *f)
{
    (void)f;
    if (srv.listener)
        fut_io_close(srv.listener);
    srv.listener = NULL;
}
FUT_ASYNC_VTABLE(host_main_vt, "echo_server_host", host_main_poll,
                 host_main_cleanup);

struct eclient {
    struct fut_future base;
    struct run *r;
    int id, k;
    struct fut_connect c;
    struct fut_io *io;
    size_t len;
    unsigned char out[MAXLEN], in[MAXLEN];
    struct sim_echo_round er;
};

static int eclient_poll(struct fut_future *f, struct fut_context *cx)
{
    struct eclient *c = (struct eclient *)f;
    FUT_BEGIN(f);
    fut_tcp_connect_init(&c->c, (struct sockaddr *)&c->r->at, c->r->atlen,
                         -1);
    FUT_AWAIT(f, &c->c);
    ck_assert_int_eq(c->c.result, 0);
    c->io = c->c.conn;
    for (c->k = 0; c->k < NROUNDS; c->k++) {
        c->len = 1 + (size_t)(fut_sim_random() % MAXLEN);
        for (size_t i = 0; i < c->len; i++)
            c->out[i] = (unsigned char)(c->id * 37 + c->k * 11 + (int)i);
        sim_echo_round_init(&c->er, c->io, c->out, c->in, c->len, c->id,
                            c->k);
        FUT_AWAIT(f, &c->er);
        c->r->echoed++;
    }
    sim_close(&c->io);
    FUT_END(f);
}

SIM_CLOSE_CLEANUP(eclient_cleanup, eclient, io)
FUT_ASYNC_VTABLE(eclient_vt, "client", eclient_poll, eclient_cleanup);

/* fut_sim_fn: the example's server on 10.0.0.1:7000, client i on
 * 10.0.1.(i+1); at the end every connection was served and closed. */
static int example_run(struct fut_runtime *rt, void *ud)
{
    struct run *r = ud;
    memset(r, 0, sizeof *r);
    atomic_store(&live, 0);
    atomic_store(&served, 0);
    ck_assert_int_eq(fut_addr_parse("10.0.0.1", 7000, &r->at, &r->atlen), 0);
    struct fut_sim_host *sh;
    ck_assert_int_eq(fut_sim_host_new(rt, "10.0.0.1", &sh), 0);
    struct host_main m;
    fut_future_init(&m.base, &host_main_vt);
    m.r = r;
    struct fut_join mj, cj[NCLIENTS];
    ck_assert_int_eq(fut_sim_spawn_on(sh, &m, sizeof m, &mj), 0);
    for (int i = 0; i < NCLIENTS; i++) {
        char addr[32];
        snprintf(addr, sizeof addr, "10.0.1.%d", i + 1);
        struct fut_sim_host *ch;
        ck_assert_int_eq(fut_sim_host_new(rt, addr, &ch), 0);
        struct eclient c;
        memset(&c, 0, sizeof c);
        fut_future_init(&c.base, &eclient_vt);
        c.r = r;
        c.id = i;
        ck_assert_int_eq(fut_sim_spawn_on(ch, &c, sizeof c, &cj[i]), 0);
    }
    int ret = 0;
    for (int i = 0; i < NCLIENTS; i++) {
        int b = fut_block_on(rt, &cj[i].base);
        if (b || cj[i].result)
            ret = b ? b : cj[i].result;
        fut_drop(&cj[i].base);
    }
    /* Let the connections see their clients' EOF and close. */
    struct fut_sleep s;
    fut_sleep_init(&s, 100 * MS);
    fut_block_on(rt, &s.base);
    fut_drop(&s.base);
    if (atomic_load(&served) != NCLIENTS || atomic_load(&live) != 0)
        ret = 1;
    fut_join_abort(&mj); /* no signals here: stop the server */
    fut_block_on(rt, &mj.base);
    fut_drop(&mj.base);
    if (r->echoed != NCLIENTS * NROUNDS)
        ret = 1;
    return ret;
}

START_TEST(echo_server_example)
{
    unsetenv("FUT_SIM_SEED");
    struct run r;
    struct fut_sim_report r0, rep;
    ASSERT_EQ(fut_sim_run(NULL, 7, example_run, &r, &r0), 0);
    for (int i = 1; i < 20; i++) {
        ASSERT_EQ(fut_sim_run(NULL, 7, example_run, &r, &rep), 0);
        ck_assert_msg(rep.trace == r0.trace && rep.steps == r0.steps,
                      "run %d: trace %016llx vs %016llx", i,
                      (unsigned long long)rep.trace,
                      (unsigned long long)r0.trace);
    }
    int differ = 0;
    for (uint64_t seed = 100; seed < 110; seed++) {
        ASSERT_EQ(fut_sim_run(NULL, seed, example_run, &r, &rep), 0);
        differ += rep.trace != r0.trace;
    }
    ASSERT_EQ(differ, 10);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_example");
    TCase *tc = fut_test_tcase(s, "echo_server");
    tcase_add_test(tc, echo_server_example);
    return fut_test_run(s);
}
