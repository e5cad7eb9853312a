/* SPDX-License-Identifier: MIT */
/* The simulation runtime (fut/sim.h, docs/simulation.md): one seed gives
 * one trace over 100 reruns of a scenario of tasks, a channel, sleeps and
 * timeouts; other seeds give other interleavings; hours of virtual time
 * pass in milliseconds; FUT_SIM_CHECK catches a task that reads the real
 * clock, and one that decides on its task's address, and names the step; a lost update is found by a loop over seeds
 * and replayed from its seed; blocking work runs inline; a teardown with
 * tasks pending drops them; what a simulation refuses. */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "sim_bugs.h"
#include "test.h"

#define MS 1000000LL

/* ------------------------------------------------------- the scenario */

/* Producers send (id, k) into a bounded channel after seed-dependent
 * sleeps and yields; the consumer receives with a timeout and folds what
 * it got, in order, into 'sum'. */
struct mix {
    struct fut_mpsc_tx tx;
    struct fut_mpsc_rx rx;
    uint64_t sum;
    int timeouts, got;
    int leak; /* plant a determinism leak: 1 a real-clock decision,
                 2 one made on an address */
};

struct producer {
    struct fut_future base;
    struct mix *m;
    struct fut_mpsc_tx tx;
    int id, k, i, n;
    int msg;
    struct fut_sleep s;
    struct fut_yield y;
    struct fut_mpsc_send send;
};

static void producer_cleanup(struct fut_future *f)
{
    fut_mpsc_tx_drop(&((struct producer *)f)->tx);
}

static int producer_poll(struct fut_future *f, struct fut_context *cx)
{
    struct producer *p = (struct producer *)f;
    FUT_BEGIN(f);
    for (p->k = 0; p->k < 6; p->k++) {
        fut_sleep_init(&p->s, (int64_t)((p->id * 7 + p->k) % 4) * MS);
        FUT_AWAIT(f, &p->s);
        /* The planted leaks: how often to yield comes from the real
         * clock, or from the address of the first producer's task (a
         * pointer used as a hash key), so two runs of one seed differ. */
        if (p->m->leak == 1)
            p->n = (int)(fut_now_ns() % 3);
        else if (p->m->leak == 2 && p->id == 0)
            p->n = (int)((((uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15u) >>
                          (40 + p->k * 4)) %
                         3);
        else
            p->n = (p->id + p->k) % 2;
        for (p->i = 0; p->i < p->n; p->i++) {
            fut_yield_init(&p->y);
            FUT_AWAIT(f, &p->y);
        }
        p->msg = p->id * 100 + p->k;
        fut_mpsc_send_init(&p->send, &p->tx, &p->msg);
        FUT_AWAIT(f, &p->send);
        ck_assert_int_eq(p->send.result, 0);
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(producer_vt, "producer", producer_poll, producer_cleanup);

struct consumer {
    struct fut_future base;
    struct mix *m;
    int msg;
    struct fut_mpsc_recv recv;
    struct fut_timeout to;
};

static int consumer_poll(struct fut_future *f, struct fut_context *cx)
{
    struct consumer *c = (struct consumer *)f;
    FUT_BEGIN(f);
    for (;;) {
        fut_mpsc_recv_init(&c->recv, &c->m->rx, &c->msg);
        fut_timeout_init(&c->to, &c->recv.base, fut_time_now() + 2 * MS);
        FUT_AWAIT(f, &c->to);
        if (c->to.result == FUT_ETIMEDOUT) {
            c->m->timeouts++;
            continue;
        }
        if (c->recv.result != 0)
            break; /* closed: every producer is done */
        c->m->got++;
        c->m->sum = c->m->sum * 1000003u + (uint64_t)c->msg;
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(consumer_vt, "consumer", consumer_poll, NULL);

enum { PRODUCERS = 8 };

/* fut_sim_fn: the scenario; 0 when every message arrived. */
static int mix_run(struct fut_runtime *rt, void *ud)
{
    struct mix *m = ud;
    int leak = m->leak;
    memset(m, 0, sizeof *m);
    m->leak = leak;
    ck_assert_int_eq(fut_mpsc_new(4, sizeof(int), NULL, &m->tx, &m->rx), 0);
    struct fut_join j[PRODUCERS + 1];
    for (int i = 0; i < PRODUCERS; i++) {
        struct producer p;
        memset(&p, 0, sizeof p);
        fut_future_init(&p.base, &producer_vt);
        p.m = m;
        p.id = i;
        ck_assert_int_eq(fut_mpsc_tx_clone(&m->tx, &p.tx), 0);
        ck_assert_int_eq(fut_spawn(rt, &p, sizeof p, &j[i]), 0);
    }
    fut_mpsc_tx_drop(&m->tx);
    struct consumer c;
    memset(&c, 0, sizeof c);
    fut_future_init(&c.base, &consumer_vt);
    c.m = m;
    ck_assert_int_eq(fut_spawn(rt, &c, sizeof c, &j[PRODUCERS]), 0);
    int r = 0;
    for (int i = 0; i <= PRODUCERS; i++) {
        int b = fut_block_on(rt, &j[i].base);
        if (b != 0 || j[i].result != 0)
            r = b ? b : j[i].result;
        fut_drop(&j[i].base);
    }
    fut_mpsc_rx_drop(&m->rx);
    if (r == 0 && m->got != PRODUCERS * 6)
        r = 1;
    return r;
}

/* One run of the scenario on 'seed': its report and consumer's fold. */
static struct fut_sim_report mix_once(uint64_t seed, uint64_t *sum)
{
    struct mix m;
    memset(&m, 0, sizeof m);
    struct fut_sim_report rep;
    ASSERT_EQ(fut_sim_run(NULL, seed, mix_run, &m, &rep), 0);
    if (sum)
        *sum = m.sum;
    return rep;
}

START_TEST(same_seed_same_trace)
{
    unsetenv("FUT_SIM_SEED");
    uint64_t seeds[] = {1, 0xdeadbeef};
    for (int s = 0; s < 2; s++) {
        uint64_t sum0, sum;
        struct fut_sim_report r0 = mix_once(seeds[s], &sum0);
        ASSERT_EQ(r0.seed, seeds[s]);
        ASSERT_TRUE(r0.steps > 100);
        ASSERT_TRUE(r0.virtual_ns > 0);
        for (int i = 1; i < 100; i++) {
            struct fut_sim_report r = mix_once(seeds[s], &sum);
            ck_assert_msg(r.trace == r0.trace && r.steps == r0.steps &&
                              r.virtual_ns == r0.virtual_ns && sum == sum0,
                          "seed %llu run %d: trace %016llx vs %016llx",
                          (unsigned long long)seeds[s], i,
                          (unsigned long long)r.trace,
                          (unsigned long long)r0.trace);
        }
    }
}
END_TEST

START_TEST(seeds_differ)
{
    unsetenv("FUT_SIM_SEED");
    uint64_t traces[50], sums[50];
    int distinct = 0, distinct_sums = 0;
    for (int i = 0; i < 50; i++) {
        traces[i] = mix_once((uint64_t)i * 7919u + 3u, &sums[i]).trace;
        int seen = 0, seen_sum = 0;
        for (int k = 0; k < i; k++) {
            seen |= traces[k] == traces[i];
            seen_sum |= sums[k] == sums[i];
        }
        distinct += !seen;
        distinct_sums += !seen_sum;
    }
    /* Interleavings, not only hashes: the consumer saw other orders. */
    ck_assert_msg(distinct > 40 && distinct_sums > 10,
                  "%d distinct traces, %d distinct orders over 50 seeds",
                  distinct, distinct_sums);
}
END_TEST

/* ---------------------------------------------------------- virtual time */

struct sleepy {
    struct fut_future base;
    int i;
    struct fut_sleep s;
    struct fut_pending never;
    struct fut_timeout to;
};

static int sleepy_poll(struct fut_future *f, struct fut_context *cx)
{
    struct sleepy *t = (struct sleepy *)f;
    FUT_BEGIN(f);
    for (t->i = 0; t->i < 180; t->i++) { /* three hours, a minute a step */
        fut_sleep_init(&t->s, 60 * 1000 * MS);
        FUT_AWAIT(f, &t->s);
    }
    fut_pending_init(&t->never); /* and an hour's timeout */
    fut_timeout_init(&t->to, &t->never.base,
                     fut_time_now() + 3600 * 1000 * MS);
    FUT_AWAIT(f, &t->to);
    ck_assert_int_eq(t->to.result, FUT_ETIMEDOUT);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(sleepy_vt, "sleepy", sleepy_poll, NULL);

START_TEST(virtual_time_jumps)
{
    unsetenv("FUT_SIM_SEED");
    int64_t t0 = fut_now_ns();
    struct fut_runtime *rt;
    ASSERT_EQ(fut_sim_new(NULL, 5, &rt), 0);
    struct fut_join j[4];
    for (int i = 0; i < 4; i++) {
        struct sleepy t;
        fut_future_init(&t.base, &sleepy_vt);
        ASSERT_EQ(fut_spawn(rt, &t, sizeof t, &j[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        ASSERT_EQ(fut_block_on(rt, &j[i].base), 0);
        ASSERT_EQ(j[i].result, 0);
        fut_drop(&j[i].base);
    }
    struct fut_sim_report rep;
    ASSERT_EQ(fut_sim_report(rt, &rep), 0);
    ASSERT_EQ(rep.virtual_ns, 4 * 3600 * 1000 * MS);
    fut_runtime_free(rt);
    int64_t wall = fut_now_ns() - t0;
    ck_assert_msg(wall < 2000 * MS, "4 virtual hours took %lld ms of wall",
                  (long long)(wall / MS));
}
END_TEST

/* ------------------------------------------------------ determinism leak */

/* Runs 'fn' on the mix under FUT_SIM_CHECK=1 with stderr in a file;
 * returns what fut_sim_run returned, the report and the text. */
static int checked_run(struct mix *m, struct fut_sim_report *rep, char *text,
                       size_t cap)
{
    char path[] = "/tmp/fut_sim_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    unlink(path);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    setenv("FUT_SIM_CHECK", "1", 1);
    int r = fut_sim_run(NULL, 77, mix_run, m, rep);
    unsetenv("FUT_SIM_CHECK");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fd, text, cap - 1, 0);
    text[n > 0 ? n : 0] = 0;
    close(fd);
    return r;
}

START_TEST(check_names_leak)
{
    unsetenv("FUT_SIM_SEED");
    static char text[8192];
    struct mix m;
    struct fut_sim_report rep;
    /* Deterministic: both runs agree. */
    memset(&m, 0, sizeof m);
    ASSERT_EQ(checked_run(&m, &rep, text, sizeof text), 0);
    ASSERT_EQ(rep.leak_step, 0);
    ck_assert_msg(strstr(text, "determinism leak") == NULL, "%s", text);
    /* The planted leak: 48 real-clock decisions; caught, and named. */
    memset(&m, 0, sizeof m);
    m.leak = 1;
    ASSERT_EQ(checked_run(&m, &rep, text, sizeof text), FUT_ECANCELED);
    ASSERT_TRUE(rep.leak_step >= 1);
    char want[64];
    snprintf(want, sizeof want, "differs at step %llu",
             (unsigned long long)rep.leak_step);
    ck_assert_msg(strstr(text, want) && strstr(text, "sim.c:"), "%s", text);
    /* The other planted leak: decisions made on the tasks' addresses. */
    memset(&m, 0, sizeof m);
    m.leak = 2;
    ASSERT_EQ(checked_run(&m, &rep, text, sizeof text), FUT_ECANCELED);
    ASSERT_TRUE(rep.leak_step >= 1);
    ck_assert_msg(strstr(text, "determinism leak"), "%s", text);
}
END_TEST

/* ---------------------------------------------------- a seeded app bug */

/* The lost update of sim_bugs.h, the second adder 12 yields behind.
 * fut_sim_fn: 0 when no update was lost. */
static int adders_run(struct fut_runtime *rt, void *ud)
{
    return adders_join(rt, ud, 12);
}

START_TEST(seed_search_finds_bug)
{
    unsetenv("FUT_SIM_SEED");
    int counter;
    /* The FIFO runtime never shows it. */
    struct fut_runtime *rt;
    ASSERT_EQ(fut_runtime_new(NULL, &rt), 0);
    ASSERT_EQ(adders_run(rt, &counter), 0);
    fut_runtime_free(rt);
    /* The seeds do. */
    uint64_t found = 0;
    int hit = 0;
    struct fut_sim_report bad;
    for (uint64_t seed = 1; seed <= 10000 && !hit; seed++) {
        fflush(stderr);
        if (fut_sim_run(NULL, seed, adders_run, &counter, &bad) == 1) {
            found = seed;
            hit = 1;
        }
    }
    ck_assert_msg(hit, "no seed of 10,000 lost an update");
    ASSERT_EQ(counter, 1);
    /* Replayed from its seed through FUT_SIM_SEED (the argument is
     * ignored then): the same failure, the same trace. */
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)found);
    setenv("FUT_SIM_SEED", buf, 1);
    for (int i = 0; i < 3; i++) {
        struct fut_sim_report again;
        counter = 0;
        ASSERT_EQ(fut_sim_run(NULL, 123456789, adders_run, &counter, &again),
                  1);
        ASSERT_EQ(counter, 1);
        ASSERT_EQ(again.seed, found);
        ASSERT_TRUE(again.trace == bad.trace);
    }
    unsetenv("FUT_SIM_SEED");
}
END_TEST

/* ------------------------------------------------------ blocking inline */

static pthread_t test_thread;

static intptr_t blocking_fn(void *arg)
{
    ck_assert(pthread_equal(pthread_self(), test_thread));
    return (intptr_t)arg * 2;
}

struct blocker {
    struct fut_future base;
    int id;
    struct fut_blocking b;
    intptr_t value;
};

static int blocker_poll(struct fut_future *f, struct fut_context *cx)
{
    struct blocker *t = (struct blocker *)f;
    FUT_BEGIN(f);
    fut_spawn_blocking_init(&t->b, blocking_fn, (void *)(intptr_t)t->id);
    FUT_AWAIT(f, &t->b);
    ck_assert_int_eq(t->b.result, 0);
    t->value = t->b.value;
    FUT_END(f);
}
FUT_ASYNC_VTABLE(blocker_vt, "blocker", blocker_poll, NULL);

static int blockers_run(struct fut_runtime *rt, void *ud)
{
    (void)ud;
    struct fut_join j[6];
    intptr_t out[6];
    for (int i = 0; i < 6; i++) {
        struct blocker t;
        memset(&t, 0, sizeof t);
        fut_future_init(&t.base, &blocker_vt);
        t.id = i + 1;
        ck_assert_int_eq(fut_spawn(rt, &t, sizeof t, &j[i]), 0);
        FUT_JOIN_OUTPUT(&j[i], struct blocker, value, &out[i]);
    }
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(fut_block_on(rt, &j[i].base), 0);
        ck_assert_int_eq(j[i].result, 0);
        fut_drop(&j[i].base);
        ck_assert_int_eq(out[i], (i + 1) * 2);
    }
    return 0;
}

START_TEST(blocking_runs_inline)
{
    unsetenv("FUT_SIM_SEED");
    test_thread = pthread_self();
    struct fut_sim_report a, b;
    ASSERT_EQ(fut_sim_run(NULL, 9, blockers_run, NULL, &a), 0);
    ASSERT_EQ(fut_sim_run(NULL, 9, blockers_run, NULL, &b), 0);
    ASSERT_TRUE(a.trace == b.trace);
    ASSERT_EQ(a.virtual_ns, 0); /* no time passes for inline work */
}
END_TEST

/* ------------------------------------------------ select's fair start */

/* 64 selects over two ready branches: which one wins is select's random
 * start, drawn from the simulation's seed. */
struct selector {
    struct fut_future base;
    uint64_t wins;
};

static int selector_poll(struct fut_future *f, struct fut_context *cx)
{
    struct selector *t = (struct selector *)f;
    for (int i = 0; i < 64; i++) {
        struct fut_ready a, b;
        struct fut_select2 s;
        fut_ready_init(&a, 0);
        fut_ready_init(&b, 1);
        fut_select2_init(&s, &a.base, &b.base, FUT_SELECT_FAIR);
        ck_assert_int_eq(fut_poll(&s.base, cx), FUT_READY);
        t->wins = t->wins << 1 | (uint64_t)s.winner;
        fut_drop(&s.base);
    }
    return FUT_READY;
}
static const struct fut_future_vtable selector_vt = {selector_poll, NULL,
                                                     "selector", 0};

static uint64_t select_wins(uint64_t seed)
{
    struct fut_runtime *rt;
    ASSERT_EQ(fut_sim_new(NULL, seed, &rt), 0);
    struct selector t;
    fut_future_init(&t.base, &selector_vt);
    t.wins = 0;
    ASSERT_EQ(fut_block_on(rt, &t.base), 0);
    fut_runtime_free(rt);
    return t.wins;
}

START_TEST(select_start_seeded)
{
    unsetenv("FUT_SIM_SEED");
    uint64_t w1 = select_wins(1), w2 = select_wins(2);
    ASSERT_TRUE(w1 == select_wins(1));
    ASSERT_TRUE(w2 == select_wins(2));
    ASSERT_TRUE(w1 != w2);
    ASSERT_TRUE(w1 != 0 && w1 != UINT64_MAX); /* both branches won */
}
END_TEST

/* --------------------------------------------------- teardown, refusals */

START_TEST(teardown_drops_pending)
{
    unsetenv("FUT_SIM_SEED");
    struct fut_runtime *rt;
    ASSERT_EQ(fut_sim_new(NULL, 3, &rt), 0);
    struct mix m;
    memset(&m, 0, sizeof m);
    ASSERT_EQ(fut_mpsc_new(1, sizeof(int), NULL, &m.tx, &m.rx), 0);
    struct fut_join j[4];
    for (int i = 0; i < 3; i++) { /* stuck on a full channel, or a sleep */
        struct producer p;
        memset(&p, 0, sizeof p);
        fut_future_init(&p.base, &producer_vt);
        p.m = &m;
        p.id = i;
        ASSERT_EQ(fut_mpsc_tx_clone(&m.tx, &p.tx), 0);
        ASSERT_EQ(fut_spawn(rt, &p, sizeof p, &j[i]), 0);
    }
    struct sleepy t;
    fut_future_init(&t.base, &sleepy_vt);
    ASSERT_EQ(fut_spawn(rt, &t, sizeof t, &j[3]), 0);
    struct fut_sleep s;
    fut_sleep_init(&s, 30 * MS);
    ASSERT_EQ(fut_block_on(rt, &s.base), 0);
    fut_drop(&s.base);
    fut_runtime_free(rt);
    for (int i = 0; i < 4; i++) {
        ASSERT_TRUE(fut_join_is_finished(&j[i]));
        ASSERT_EQ(fut_block_on(NULL, &j[i].base), 0);
        ASSERT_EQ(j[i].result, FUT_ECANCELED);
        fut_drop(&j[i].base);
    }
    fut_mpsc_tx_drop(&m.tx);
    fut_mpsc_rx_drop(&m.rx);
}
END_TEST

/* A receiver waiting on a channel nobody sends on, no timer armed: the
 * simulation says deadlock instead of hanging; a later block_on that
 * ends the channel ends it. */
struct waiter {
    struct fut_future base;
    struct fut_mpsc_rx *rx;
    int msg;
    struct fut_mpsc_recv recv;
    int result;
};

static int waiter_poll(struct fut_future *f, struct fut_context *cx)
{
    struct waiter *w = (struct waiter *)f;
    FUT_BEGIN(f);
    fut_mpsc_recv_init(&w->recv, w->rx, &w->msg);
    FUT_AWAIT(f, &w->recv);
    w->result = w->recv.result;
    FUT_END(f);
}
FUT_ASYNC_VTABLE(waiter_vt, "waiter", waiter_poll, NULL);

START_TEST(deadlock_reported)
{
    unsetenv("FUT_SIM_SEED");
    struct fut_runtime *rt;
    ASSERT_EQ(fut_sim_new(NULL, 4, &rt), 0);
    struct fut_mpsc_tx tx;
    struct fut_mpsc_rx rx;
    ASSERT_EQ(fut_mpsc_new(1, sizeof(int), NULL, &tx, &rx), 0);
    struct waiter w;
    memset(&w, 0, sizeof w);
    fut_future_init(&w.base, &waiter_vt);
    w.rx = &rx;
    w.result = 1;
    struct fut_join j;
    ASSERT_EQ(fut_spawn(rt, &w, sizeof w, &j), 0);
    int result = 1;
    FUT_JOIN_OUTPUT(&j, struct waiter, result, &result);
    ASSERT_EQ(fut_block_on(rt, &j.base), -EDEADLK);
    /* The sender goes: the stream ends, the waiter finishes. */
    fut_mpsc_tx_drop(&tx);
    ASSERT_EQ(fut_block_on(rt, &j.base), 0);
    ASSERT_EQ(j.result, 0);
    ASSERT_EQ(result, FUT_ECLOSED);
    fut_drop(&j.base);
    fut_runtime_free(rt);
    fut_mpsc_rx_drop(&rx);
}
END_TEST

struct fd_try {
    struct fut_future base;
    int result;
};

static int fd_try_poll(struct fut_future *f, struct fut_context *cx)
{
    (void)cx;
    struct fut_fd *h = NULL;
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    ((struct fd_try *)f)->result = fut_fd_register(p[0], &h);
    close(p[0]);
    close(p[1]);
    return FUT_READY;
}
static const struct fut_future_vtable fd_try_vt = {fd_try_poll, NULL,
                                                   "fd_try", 0};

START_TEST(refusals)
{
    unsetenv("FUT_SIM_SEED");
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    struct fut_runtime *rt = NULL;
    cfg.flavor = FUT_RT_MULTI_THREAD;
    ASSERT_EQ(fut_sim_new(&cfg, 1, &rt), FUT_EINVAL);
    fut_rt_config_init(&cfg);
    cfg.no_driver = 1;
    ASSERT_EQ(fut_sim_new(&cfg, 1, &rt), FUT_EINVAL);
    ASSERT_TRUE(rt == NULL);
    ASSERT_EQ(fut_sim_random(), 0);
    /* Not a simulation: no report. */
    ASSERT_EQ(fut_runtime_new(NULL, &rt), 0);
    struct fut_sim_report rep;
    ASSERT_EQ(fut_sim_report(rt, &rep), FUT_EINVAL);
    fut_runtime_free(rt);
    /* No real I/O in a simulation. */
    ASSERT_EQ(fut_sim_new(NULL, 1, &rt), 0);
    struct fd_try f;
    fut_future_init(&f.base, &fd_try_vt);
    f.result = 1;
    ASSERT_EQ(fut_block_on(rt, &f.base), 0);
    ASSERT_EQ(f.result, FUT_EINVAL);
    fut_runtime_free(rt);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim");
    TCase *tc = fut_test_tcase(s, "same_seed");
    tcase_add_test(tc, same_seed_same_trace);
    tc = fut_test_tcase(s, "seeds_differ");
    tcase_add_test(tc, seeds_differ);
    tc = fut_test_tcase(s, "virtual_time");
    tcase_add_test(tc, virtual_time_jumps);
    tc = fut_test_tcase(s, "check");
    tcase_add_test(tc, check_names_leak);
    tc = fut_test_tcase(s, "seed_search");
    tcase_add_test(tc, seed_search_finds_bug);
    tc = fut_test_tcase(s, "blocking");
    tcase_add_test(tc, blocking_runs_inline);
    tc = fut_test_tcase(s, "select");
    tcase_add_test(tc, select_start_seeded);
    tc = fut_test_tcase(s, "teardown");
    tcase_add_test(tc, teardown_drops_pending);
    tc = fut_test_tcase(s, "deadlock");
    tcase_add_test(tc, deadlock_reported);
    tc = fut_test_tcase(s, "refusals");
    tcase_add_test(tc, refusals);
    return fut_test_run(s);
}
