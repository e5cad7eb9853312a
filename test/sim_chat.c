/* SPDX-License-Identifier: MIT */
/* examples/chat_fiber's own code under simulation: its acceptor and
 * client fibers, its broadcast, its scope and graceful shutdown, compiled
 * from the example's source (its main renamed; it runs through the
 * example's serve()), on host 10.0.0.1 of a simulated network. NCLIENTS
 * clients, fibers on hosts of their own, join; once every one is in the
 * example's client list (the chat drops lines sent before a client
 * joined: that is its protocol), each sends NLINES lines of seeded
 * lengths (up to 3000 bytes: longer than the example's 1 KiB message
 * pieces, shorter than its 4 KiB line buffer), each written in one to
 * three seeded pieces with seeded pauses, and reads until it has every
 * other client's lines. Each reader checks that it gets every other
 * client's lines exactly once, in the order they were sent, byte for
 * byte, and none of its own. Meanwhile a chaos task partitions client
 * hosts from the server for seeded times and heals them (TCP stalls and
 * then delivers: the chat tolerates it; a reset would lose lines, which
 * the protocol does not promise to survive, so there are none) and each
 * seed draws its own latencies. Signals are not simulated: the example
 * runs without them and the test ends it by cancelling its scope's token
 * (what its shutdown does on SIGINT). One seed gives one trace over
 * reruns; the swarm runs many seeds. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sim_apps.h"
#include "test.h"

int chat_fiber_main(int argc, char **argv);
#define main chat_fiber_main
#include "chat_fiber.c"
#undef main

#define MS 1000000LL

enum { NCLIENTS = 8, NLINES = 20, MAXLINE = 3000 };

struct chatter;

struct world {
    struct sockaddr_storage at;
    socklen_t atlen;
    struct fut_sim_host *srv;
    struct fut_sim_host *hosts[NCLIENTS];
    int chaos; /* partitions on */
    int done;  /* the clients finished: chaos stops */
    int partitions;
    int lines_ok; /* lines received and checked, over all clients */
    char fail[256];
};

static void flunk(struct world *w, const char *fmt, ...)
{
    if (w->fail[0])
        return; /* the first failure is the one to read */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->fail, sizeof w->fail, fmt, ap);
    va_end(ap);
}

/* The payload byte 'i' of line 'k' of client 'id'. */
static char pattern(int id, int k, size_t i)
{
    return (char)('a' + (id * 7 + k * 13 + (int)i * 3 + (int)(i >> 5)) % 26);
}

struct chatter {
    struct world *w;
    int id;
    struct fut_io *rd, *wr;
    int next[NCLIENTS]; /* the next line expected from each client */
    char buf[2 * MAXLINE];
    char line[MAXLINE + 32];
};

/* Checks one line (without its '\n') from the server. */
static void check_line(struct chatter *c, const char *p, size_t n)
{
    int id, k, len, off = 0;
    if (sscanf(p, "%d %d %d %n", &id, &k, &len, &off) != 3 || off <= 0) {
        flunk(c->w, "client %d: a line it cannot parse (%zu bytes)", c->id,
              n);
        return;
    }
    if (id < 0 || id >= NCLIENTS || id == c->id) {
        flunk(c->w, "client %d: a line from client %d", c->id, id);
        return;
    }
    if (k != c->next[id]) {
        flunk(c->w, "client %d: line %d of client %d where %d was due", c->id,
              k, id, c->next[id]);
        return;
    }
    if ((size_t)off + (size_t)len != n) {
        flunk(c->w, "client %d: line %d of client %d has %zu bytes, not %d",
              c->id, k, id, n - (size_t)off, len);
        return;
    }
    for (int i = 0; i < len; i++)
        if (p[off + i] != pattern(id, k, (size_t)i)) {
            flunk(c->w, "client %d: line %d of client %d differs at %d",
                  c->id, k, id, i);
            return;
        }
    c->next[id]++;
    c->w->lines_ok++;
}

/* Reads until every other client's NLINES lines came. */
static intptr_t reader(void *arg)
{
    struct chatter *c = arg;
    size_t have = 0;
    int want = (NCLIENTS - 1) * NLINES, got = 0;
    while (got < want && !c->w->fail[0]) {
        if (have == sizeof c->buf) {
            flunk(c->w, "client %d: a line longer than %zu", c->id, have);
            break;
        }
        ssize_t r = fut_read(c->rd, c->buf + have, sizeof c->buf - have);
        if (r <= 0) {
            flunk(c->w, "client %d: read %zd after %d lines", c->id, r, got);
            break;
        }
        have += (size_t)r;
        char *s = c->buf, *nl;
        while ((nl = memchr(s, '\n', have - (size_t)(s - c->buf)))) {
            check_line(c, s, (size_t)(nl - s));
            got++;
            s = nl + 1;
        }
        have -= (size_t)(s - c->buf);
        memmove(c->buf, s, have);
    }
    return 0;
}

/* The number of clients in the example's list. */
static int joined(void)
{
    int n = 0;
    pthread_mutex_lock(&lock);
    for (struct client *cl = clients; cl; cl = cl->next)
        n++;
    pthread_mutex_unlock(&lock);
    return n;
}

static intptr_t chatter(void *arg)
{
    struct chatter *c = arg;
    struct world *w = c->w;
    struct fut_io *io;
    int r = sim_dial(w->hosts[c->id], &w->at, w->atlen, -1, &io);
    if (r != 0) {
        flunk(w, "client %d: connect: %s", c->id, fut_strerror(r));
        return 0;
    }
    fut_io_split(io, &c->rd, &c->wr);
    while (joined() < NCLIENTS) /* the protocol: lines go to those in */
        fut_sleep(MS);
    struct fut_join rj;
    if (fut_fiber_spawn(NULL, reader, c, NULL, &rj) != 0) {
        flunk(w, "client %d: spawn", c->id);
        goto out;
    }
    char *line = c->line;
    for (int k = 0; k < NLINES && !w->fail[0]; k++) {
        int len = 1 + (int)(fut_sim_random() % MAXLINE);
        size_t n = (size_t)snprintf(line, sizeof c->line, "%d %d %d ", c->id,
                                    k, len);
        for (int i = 0; i < len; i++)
            line[n++] = pattern(c->id, k, (size_t)i);
        line[n++] = '\n';
        /* One to three pieces, a pause of 0-9 ms before each. */
        int pieces = 1 + (int)(fut_sim_random() % 3);
        size_t off = 0;
        for (int p = 0; p < pieces; p++) {
            size_t part =
                p == pieces - 1 ? n - off : (n - off) * (size_t)(p + 1) / 4;
            fut_sleep((int64_t)(fut_sim_random() % 10) * MS);
            if (fut_write_all(c->wr, line + off, part) != (ssize_t)part) {
                flunk(w, "client %d: write of line %d failed", c->id, k);
                break;
            }
            off += part;
        }
    }
    fut_fiber_join(&rj, NULL);
    for (int j = 0; j < NCLIENTS && !w->fail[0]; j++)
        if (j != c->id && c->next[j] != NLINES)
            flunk(w, "client %d: %d lines of client %d", c->id, c->next[j],
                  j);
out:
    fut_io_close(c->rd);
    fut_io_close(c->wr);
    return 0;
}

/* Runs the clients (and the chaos), then stops the example's server as
 * its SIGINT would: cancels its scope's token. */
static intptr_t driver(void *arg)
{
    struct world *w = arg;
    static struct chatter cs[NCLIENTS];
    struct fut_join cj[NCLIENTS], xj;
    /* Cuts a seeded client host off the server for 5-200 ms, every 5-60
     * ms, until the clients are done. */
    struct sim_chaos x = {w->srv, w->hosts, NCLIENTS, 5, 60,
                          5,      200,      &w->done, 0};
    int chaos_on =
        w->chaos && fut_fiber_spawn(NULL, sim_chaos, &x, NULL, &xj) == 0;
    for (int i = 0; i < NCLIENTS; i++) {
        memset(&cs[i], 0, sizeof cs[i]);
        cs[i].w = w;
        cs[i].id = i;
        ck_assert_int_eq(fut_fiber_spawn(NULL, chatter, &cs[i], NULL, &cj[i]),
                         0);
    }
    for (int i = 0; i < NCLIENTS; i++)
        fut_fiber_join(&cj[i], NULL);
    w->done = 1;
    if (chaos_on)
        fut_fiber_join(&xj, NULL);
    w->partitions = x.partitions;
    fut_token_cancel(fut_scope_token(&scope));
    return 0;
}

/* The listener, made on the server's host (a task of its). */
struct open_listener {
    struct fut_future base;
    struct world *w;
};

static int open_listener_poll(struct fut_future *f, struct fut_context *cx)
{
    struct open_listener *o = (struct open_listener *)f;
    (void)cx;
    ln = NULL;
    if (fut_tcp_listen((struct sockaddr *)&o->w->at, o->w->atlen, 0, &ln))
        ln = NULL; /* chat_run sees it */
    return FUT_READY;
}
FUT_ASYNC_VTABLE(open_listener_vt, "open_listener", open_listener_poll, NULL);

/* fut_sim_fn: the example's server on 10.0.0.1:7000, client i on
 * 10.0.1.(i+1); seeded latencies. */
static int chat_run(struct fut_runtime *rt, void *ud)
{
    struct world *w = ud;
    int chaos_on = w->chaos;
    memset(w, 0, sizeof *w);
    w->chaos = chaos_on;
    clients = NULL;
    sig = NULL; /* no signals under simulation: the driver stops it */
    if (fut_addr_parse("10.0.0.1", 7000, &w->at, &w->atlen) ||
        fut_sim_host_new(rt, "10.0.0.1", &w->srv))
        return 2;
    for (int i = 0; i < NCLIENTS; i++) {
        char addr[32];
        snprintf(addr, sizeof addr, "10.0.1.%d", i + 1);
        if (fut_sim_host_new(rt, addr, &w->hosts[i]))
            return 2;
    }
    int64_t lo = (int64_t)(fut_sim_random() % 3) * MS;
    fut_sim_latency(rt, NULL, NULL, lo,
                    lo + (int64_t)(fut_sim_random() % 20) * MS);
    struct open_listener o;
    fut_future_init(&o.base, &open_listener_vt);
    o.w = w;
    struct fut_join lj;
    if (fut_sim_spawn_on(w->srv, &o, sizeof o, &lj) ||
        fut_block_on(rt, &lj.base) || !ln) {
        fut_drop(&lj.base);
        return 3;
    }
    fut_drop(&lj.base);
    struct fut_join dj;
    if (fut_fiber_spawn(rt, driver, w, NULL, &dj) != 0)
        return 4;
    int r = serve(rt); /* the example's own: until the driver stops it */
    fut_io_close(ln);
    ln = NULL;
    int d = fut_block_on(rt, &dj.base);
    fut_drop(&dj.base);
    if (w->fail[0]) {
        fprintf(stderr, "sim_chat: %s\n", w->fail);
        return 1;
    }
    if (r != 0 || d != 0 || clients != NULL)
        return 5;
    if (w->lines_ok != NCLIENTS * (NCLIENTS - 1) * NLINES)
        return 6;
    return 0;
}

START_TEST(same_seed)
{
    unsetenv("FUT_SIM_SEED");
    struct world w = {.chaos = 1};
    struct fut_sim_report r0;
    ASSERT_EQ(fut_sim_run(NULL, 7, chat_run, &w, &r0), 0);
    ck_assert_int_gt(w.partitions, 0);
    ASSERT_EQ(w.lines_ok, NCLIENTS * (NCLIENTS - 1) * NLINES);
    sim_check_traces(chat_run, &w, 7, &r0, SIM_ITERS(20, 5), 100, 10);
}
END_TEST

/* Many seeds, without and with partitions. FUT_SIM_SEED=N replays one
 * seed (the replay line says so). */
START_TEST(swarm)
{
    struct world w = {.chaos = 0};
    struct fut_sim_swarm sw;
    memset(&sw, 0, sizeof sw);
    sw.replay = "CK_RUN_CASE=swarm test_sim_chat";
    struct fut_sim_swarm_result res;
    uint64_t n = SIM_ITERS(150, 15);
    ASSERT_EQ(fut_sim_swarm(&sw, 1000, n, chat_run, &w, &res), 0);
    w.chaos = 1;
    ASSERT_EQ(fut_sim_swarm(&sw, 2000, n, chat_run, &w, &res), 0);
}
END_TEST

/* Partitions, and 4 workers emulated (fut/sim.h): the fibers polled in
 * the orders the multi-thread runtime's queues give. */
START_TEST(workers)
{
    struct world w = {.chaos = 1};
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    cfg.workers = 4;
    struct fut_sim_swarm sw;
    memset(&sw, 0, sizeof sw);
    sw.replay = "CK_RUN_CASE=workers test_sim_chat";
    sw.cfg = &cfg;
    ASSERT_EQ(
        fut_sim_swarm(&sw, 3000, SIM_ITERS(150, 15), chat_run, &w, NULL), 0);
}
END_TEST

/* The same traces in every build (sim_apps.h, sim_cross_build): the
 * chat with partitions, on one queue and on 4 emulated workers. */
START_TEST(builds)
{
    struct world w = {.chaos = 1};
    sim_cross_build("sim_chat", NULL, chat_run, &w, 7000);
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    cfg.workers = 4;
    sim_cross_build("sim_chat_w4", &cfg, chat_run, &w, 8000);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_chat");
    TCase *tc = fut_test_tcase(s, "same_seed");
    tcase_add_test(tc, same_seed);
    tc = fut_test_tcase(s, "swarm");
    tcase_add_test(tc, swarm);
    tc = fut_test_tcase(s, "workers");
    tcase_add_test(tc, workers);
    tc = fut_test_tcase(s, "builds");
    tcase_add_test(tc, builds);
    return fut_test_run(s);
}
