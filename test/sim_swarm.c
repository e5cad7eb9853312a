/* SPDX-License-Identifier: MIT */
/* The simulation's swarm, invariants and seeded faults (fut/sim.h,
 * docs/simulation.md): a swarm of 10,000 seeds over fut's own channels,
 * mutex, semaphore and scopes with invariants checked after every step;
 * seeded application bugs (a lost update, a shutdown that loses an
 * accepted but unserved item, a timeout that leaves a reply half
 * written) found by the swarm and replayed from the seed with
 * FUT_SIM_SEED; an invariant that stops a run at its step and
 * the replay lines; seeded allocation, EINTR and file faults that repeat
 * exactly for a seed; a spawn during teardown refused cleanly. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim_bugs.h"
#include "test.h"

#define MS 1000000LL

/* A swarm that prints nothing: the cases that expect a failure. */
static struct fut_sim_swarm quiet_swarm(void)
{
    struct fut_sim_swarm sw;
    memset(&sw, 0, sizeof sw);
    sw.quiet = 1;
    return sw;
}

/* ------------------------------------ channels, sync, scopes: the swarm */

enum { NPROD = 3, NMSG = 4, NLOCK = 3, NSEM = 4, SEM_PERMITS = 2, NKID = 3 };

struct prim {
    /* the channel: every (producer, k) once, each producer in order */
    struct fut_mpsc_tx tx;
    struct fut_mpsc_rx rx;
    int sent, got, dup, disorder, timeouts;
    int next[NPROD];  /* the next k expected from each producer */
    int spawned_prod; /* producers that were spawned */
    /* the mutex: at most one inside */
    struct fut_mutex mu;
    int inside, in_max, locked_total, spawned_lock;
    /* the semaphore: at most SEM_PERMITS holders */
    struct fut_semaphore sem;
    int holders, hold_max, spawned_sem;
    /* the scope: every child joined (finished or dropped) */
    struct fut_scope scope;
    int kids_spawned, kids_ended, kids_done;
    int cancel_scope; /* the seed cancels the scope midway */
};

/* After every step: what must hold between any two polls. */
static int prim_invariant(void *ud)
{
    struct prim *p = ud;
    if (p->inside > 1)
        return 1; /* two tasks inside the mutex */
    if (p->holders > SEM_PERMITS)
        return 2; /* more holders than permits */
    if (p->dup)
        return 3; /* a message received twice */
    if (p->disorder)
        return 4; /* a producer's messages out of order */
    if (p->got > p->sent)
        return 5; /* received more than was sent */
    if (p->kids_ended > p->kids_spawned)
        return 6;
    return 0;
}

struct prod {
    struct fut_future base;
    struct prim *p;
    struct fut_mpsc_tx tx;
    int id, k, msg;
    struct fut_yield y;
    struct fut_mpsc_send send;
};

static void prod_cleanup(struct fut_future *f)
{
    fut_mpsc_tx_drop(&((struct prod *)f)->tx);
}

static int prod_poll(struct fut_future *f, struct fut_context *cx)
{
    struct prod *p = (struct prod *)f;
    FUT_BEGIN(f);
    for (p->k = 0; p->k < NMSG; p->k++) {
        if (fut_sim_random() & 1) {
            fut_yield_init(&p->y);
            FUT_AWAIT(f, &p->y);
        }
        p->msg = p->id * 100 + p->k;
        fut_mpsc_send_init(&p->send, &p->tx, &p->msg);
        FUT_AWAIT(f, &p->send);
        if (p->send.result != 0)
            break;
        p->p->sent++;
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(prod_vt, "prod", prod_poll, prod_cleanup);

struct cons {
    struct fut_future base;
    struct prim *p;
    int msg;
    struct fut_mpsc_recv recv;
    struct fut_timeout to;
};

static int cons_poll(struct fut_future *f, struct fut_context *cx)
{
    struct cons *c = (struct cons *)f;
    struct prim *p = c->p;
    FUT_BEGIN(f);
    for (;;) {
        /* A receive under a short timeout: dropped at a seeded point,
         * it must lose no message (recv is cancel-safe). */
        fut_mpsc_recv_init(&c->recv, &p->rx, &c->msg);
        fut_timeout_init(&c->to, &c->recv.base,
                         fut_time_now() + (int64_t)(fut_sim_random() % 3));
        FUT_AWAIT(f, &c->to);
        if (c->to.result == FUT_ETIMEDOUT) {
            p->timeouts++;
            continue;
        }
        if (c->recv.result != 0)
            break; /* closed: every producer is done */
        int id = c->msg / 100, k = c->msg % 100;
        if (id < 0 || id >= NPROD || k < p->next[id])
            p->dup = 1;
        else if (k > p->next[id])
            p->disorder = 1;
        else
            p->next[id]++;
        p->got++;
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(cons_vt, "cons", cons_poll, NULL);

struct locker {
    struct fut_future base;
    struct prim *p;
    int i;
    struct fut_mutex_lock lk;
    struct fut_semaphore_acquire acq;
    struct fut_yield y;
    int sem; /* 1: the semaphore, 0: the mutex */
};

static int locker_poll(struct fut_future *f, struct fut_context *cx)
{
    struct locker *l = (struct locker *)f;
    struct prim *p = l->p;
    FUT_BEGIN(f);
    for (l->i = 0; l->i < 2; l->i++) {
        if (l->sem) {
            fut_semaphore_acquire_init(&l->acq, &p->sem, 1);
            FUT_AWAIT(f, &l->acq);
            if (l->acq.result != 0)
                break;
            if (++p->holders > p->hold_max)
                p->hold_max = p->holders;
        } else {
            fut_mutex_lock_init(&l->lk, &p->mu);
            FUT_AWAIT(f, &l->lk);
            if (++p->inside > p->in_max)
                p->in_max = p->inside;
        }
        fut_yield_init(&l->y); /* inside: let the others try */
        FUT_AWAIT(f, &l->y);
        if (l->sem) {
            p->holders--;
            fut_semaphore_release(&l->acq.permit);
        } else {
            p->inside--;
            p->locked_total++;
            fut_mutex_unlock(&l->lk.guard);
        }
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(locker_vt, "locker", locker_poll, NULL);

struct kid {
    struct fut_future base;
    struct prim *p;
    int64_t ns;
    struct fut_sleep s;
};

static int kid_poll(struct fut_future *f, struct fut_context *cx)
{
    struct kid *k = (struct kid *)f;
    FUT_BEGIN(f);
    fut_sleep_init(&k->s, k->ns);
    FUT_AWAIT(f, &k->s);
    k->p->kids_done++;
    FUT_END(f);
}

/* Every child ends here, run to completion or dropped. */
static void kid_cleanup(struct fut_future *f)
{
    ((struct kid *)f)->p->kids_ended++;
}
FUT_ASYNC_VTABLE(kid_vt, "kid", kid_poll, kid_cleanup);

/* The owner: spawns the children into the scope, cancels it at a seeded
 * point (some seeds), and waits for the scope. */
struct owner {
    struct fut_future base;
    struct prim *p;
    int i;
    struct fut_sleep s;
    struct fut_scope_next next;
};

static int owner_poll(struct fut_future *f, struct fut_context *cx)
{
    struct owner *o = (struct owner *)f;
    struct prim *p = o->p;
    FUT_BEGIN(f);
    for (o->i = 0; o->i < NKID; o->i++) {
        struct kid k;
        memset(&k, 0, sizeof k);
        fut_future_init(&k.base, &kid_vt);
        k.p = p;
        k.ns = (int64_t)(fut_sim_random() % 3) * MS;
        if (fut_scope_spawn(&p->scope, &k, sizeof k, NULL) == 0)
            p->kids_spawned++;
    }
    if (p->cancel_scope) {
        fut_sleep_init(&o->s, MS);
        FUT_AWAIT(f, &o->s);
        fut_scope_cancel(&p->scope);
    }
    for (;;) { /* joins every child: records until none is outstanding */
        fut_scope_next_init(&o->next, &p->scope);
        FUT_AWAIT(f, &o->next);
        if (!o->next.has)
            break;
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(owner_vt, "owner", owner_poll, NULL);

static int spawn_joined(struct fut_runtime *rt, struct fut_future *f,
                        size_t size, struct fut_join *j, int *n)
{
    int r = fut_spawn_at(rt, f, size, &j[*n], __FILE__, __LINE__);
    if (r == 0)
        (*n)++;
    return r;
}

/* fut_sim_fn: the scenario; its checks at the end. */
static int prim_run(struct fut_runtime *rt, void *ud)
{
    struct prim *p = ud;
    memset(p, 0, sizeof *p);
    p->cancel_scope = (int)(fut_sim_random() & 1);
    if (fut_mpsc_new(2, sizeof(int), NULL, &p->tx, &p->rx) != 0)
        return 0; /* an injected allocation failure: nothing to check */
    fut_mutex_init(&p->mu);
    fut_semaphore_init(&p->sem, SEM_PERMITS);
    fut_scope_init(&p->scope, rt, FUT_SCOPE_SUPERVISE);
    struct fut_join j[NPROD + 1 + NLOCK + NSEM + 1];
    int n = 0;
    for (int i = 0; i < NPROD; i++) {
        struct prod pr;
        memset(&pr, 0, sizeof pr);
        fut_future_init(&pr.base, &prod_vt);
        pr.p = p;
        pr.id = i;
        if (fut_mpsc_tx_clone(&p->tx, &pr.tx) != 0)
            continue;
        if (spawn_joined(rt, &pr.base, sizeof pr, j, &n) == 0)
            p->spawned_prod++;
        else
            fut_mpsc_tx_drop(&pr.tx);
    }
    fut_mpsc_tx_drop(&p->tx);
    struct cons c;
    memset(&c, 0, sizeof c);
    fut_future_init(&c.base, &cons_vt);
    c.p = p;
    int have_cons = spawn_joined(rt, &c.base, sizeof c, j, &n) == 0;
    for (int i = 0; i < NLOCK + NSEM; i++) {
        struct locker l;
        memset(&l, 0, sizeof l);
        fut_future_init(&l.base, &locker_vt);
        l.p = p;
        l.sem = i >= NLOCK;
        if (spawn_joined(rt, &l.base, sizeof l, j, &n) == 0 && !l.sem)
            p->spawned_lock++;
    }
    struct owner o;
    memset(&o, 0, sizeof o);
    fut_future_init(&o.base, &owner_vt);
    o.p = p;
    spawn_joined(rt, &o.base, sizeof o, j, &n);
    int r = 0;
    for (int i = 0; i < n; i++) { /* every task joined: no waiter left */
        int b = fut_block_on(rt, &j[i].base);
        if (b != 0 && r == 0)
            r = b; /* a deadlock (-EDEADLK) or a stopped run */
        fut_drop(&j[i].base);
    }
    if (!have_cons) /* nobody receives: the producers wait for ever */
        fut_mpsc_close(&p->rx);
    fut_mpsc_rx_drop(&p->rx);
    if (r == 0) {
        if (have_cons && p->got != p->sent)
            r = 10; /* a message lost */
        if (have_cons && p->sent != p->spawned_prod * NMSG)
            r = 11;
        if (p->locked_total != p->spawned_lock * 2)
            r = 12;
        if (fut_mutex_is_locked(&p->mu) ||
            fut_semaphore_available(&p->sem) != SEM_PERMITS)
            r = 13; /* a lock or permit left behind */
        if (p->kids_ended != p->kids_spawned)
            r = 14; /* a child not joined */
        if (!p->cancel_scope && p->kids_done != p->kids_spawned)
            r = 15;
    }
    fut_drop(&p->scope.base);
    fut_mutex_fini(&p->mu);
    fut_semaphore_fini(&p->sem);
    return r;
}

START_TEST(primitives_swarm)
{
    /* FUT_SIM_SEED=N (the replay line's) runs seed N only. */
    const char *replay = getenv("FUT_SIM_SEED");
    struct prim p;
    struct fut_sim_swarm sw;
    memset(&sw, 0, sizeof sw);
    sw.faults = FUT_SIM_FAULT_ALLOC; /* spawns and the channel may fail */
    sw.fault_ppm = 3000;
    sw.invariant = prim_invariant;
    sw.invariant_ud = &p;
    sw.replay = "CK_RUN_CASE=primitives test/test_sim_swarm";
    struct fut_sim_swarm_result res;
    int64_t t0 = fut_now_ns();
    int r = fut_sim_swarm(&sw, 1, 10000, prim_run, &p, &res);
    int64_t ms = (fut_now_ns() - t0) / MS;
    ck_assert_msg(r == 0, "seed %llu failed (%d), invariant step %llu",
                  (unsigned long long)res.failed_seed, r,
                  (unsigned long long)res.invariant_step);
    ASSERT_EQ(res.seeds, replay && *replay ? 1 : 10000);
    fprintf(stderr, "primitives swarm: %llu seeds in %lld ms\n",
            (unsigned long long)res.seeds, (long long)ms);
}
END_TEST

/* --------------------------------------------------- seeded bug: lost update */

struct lost {
    int counter;
    int delay; /* yields of the second adder before its read */
};

/* The lost update of sim_bugs.h. */
static int lost_update_run(struct fut_runtime *rt, void *ud)
{
    struct lost *l = ud;
    return adders_join(rt, &l->counter, l->delay);
}

/* Finds the bug of 'fn' with a swarm within 10,000 seeds, then replays
 * the seed with FUT_SIM_SEED: the same failure and the same trace. */
static void find_and_replay(const char *name, fut_sim_fn fn, void *ud,
                            unsigned faults)
{
    unsetenv("FUT_SIM_SEED");
    struct fut_sim_swarm sw = quiet_swarm();
    sw.faults = faults;
    struct fut_sim_swarm_result a, b;
    int r = fut_sim_swarm(&sw, 1, 10000, fn, ud, &a);
    ck_assert_msg(r != 0, "%s: not found in 10,000 seeds", name);
    ASSERT_EQ(a.status, r);
    fprintf(stderr, "%s: found at seed %llu after %llu seeds\n", name,
            (unsigned long long)a.failed_seed, (unsigned long long)a.seeds);
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)a.failed_seed);
    setenv("FUT_SIM_SEED", seed, 1);
    int r2 = fut_sim_swarm(&sw, 999999, 10000, fn, ud, &b); /* the replay */
    unsetenv("FUT_SIM_SEED");
    ASSERT_EQ(r2, r);
    ASSERT_EQ(b.seeds, 1);
    ASSERT_EQ(b.failed_seed, a.failed_seed);
    ASSERT_EQ(b.faults, a.faults);
    ASSERT_EQ(b.report.trace, a.report.trace);
    ASSERT_EQ(b.report.steps, a.report.steps);
}

START_TEST(lost_update_found)
{
    struct lost l = {.delay = 12};
    find_and_replay("lost update", lost_update_run, &l, 0);
}
END_TEST

/* ------------------------- seeded bug: a shutdown that loses an item */

/* A server modelled with channels: clients' "connections" arrive on a
 * listener channel; the acceptor takes each (accepted++) and hands it to
 * the worker over a work channel; a shutdown at 2 ms stops both. The bug
 * (fixed = 0): the worker stops as soon as it sees the shutdown flag, so
 * a connection accepted but not yet served is lost. Fixed: the worker
 * stops only when the work channel is closed and drained. */
struct srv {
    struct fut_mpsc_tx ltx, wtx;
    struct fut_mpsc_rx lrx, wrx;
    int stop, accepted, served, fixed;
};

struct client {
    struct fut_future base;
    struct srv *s;
    int i, conn;
    struct fut_sleep sl;
};

static int client_poll(struct fut_future *f, struct fut_context *cx)
{
    struct client *c = (struct client *)f;
    FUT_BEGIN(f);
    for (c->i = 0; c->i < 4; c->i++) {
        fut_sleep_init(&c->sl, MS);
        FUT_AWAIT(f, &c->sl);
        c->conn = c->i;
        if (fut_mpsc_try_send(&c->s->ltx, &c->conn) != 0)
            break; /* refused: the server is gone */
    }
    fut_mpsc_tx_drop(&c->s->ltx);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(client_vt, "client", client_poll, NULL);

struct acceptor {
    struct fut_future base;
    struct srv *s;
    int conn;
    struct fut_mpsc_recv recv;
    struct fut_yield y;
    struct fut_mpsc_send send;
};

static int acceptor_poll(struct fut_future *f, struct fut_context *cx)
{
    struct acceptor *a = (struct acceptor *)f;
    struct srv *s = a->s;
    FUT_BEGIN(f);
    for (;;) {
        fut_mpsc_recv_init(&a->recv, &s->lrx, &a->conn);
        FUT_AWAIT(f, &a->recv);
        if (a->recv.result != 0 || s->stop)
            break; /* not accepted: the listener is closed */
        s->accepted++;
        fut_yield_init(&a->y); /* the hand-off takes a moment */
        FUT_AWAIT(f, &a->y);
        fut_mpsc_send_init(&a->send, &s->wtx, &a->conn);
        FUT_AWAIT(f, &a->send);
    }
    fut_mpsc_close(&s->lrx);
    fut_mpsc_tx_drop(&s->wtx); /* the worker sees the end */
    FUT_END(f);
}
FUT_ASYNC_VTABLE(acceptor_vt, "acceptor", acceptor_poll, NULL);

struct worker {
    struct fut_future base;
    struct srv *s;
    int conn;
    struct fut_mpsc_recv recv;
    struct fut_timeout to;
};

static int worker_poll(struct fut_future *f, struct fut_context *cx)
{
    struct worker *w = (struct worker *)f;
    struct srv *s = w->s;
    FUT_BEGIN(f);
    for (;;) {
        if (s->stop && !s->fixed)
            break; /* the bug: what is queued is dropped */
        fut_mpsc_recv_init(&w->recv, &s->wrx, &w->conn);
        fut_timeout_init(&w->to, &w->recv.base, fut_time_now() + MS / 2);
        FUT_AWAIT(f, &w->to);
        if (w->to.result == FUT_ETIMEDOUT)
            continue;
        if (w->recv.result != 0)
            break; /* closed and drained */
        s->served++;
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(worker_vt, "worker", worker_poll, NULL);

struct stopper {
    struct fut_future base;
    struct srv *s;
    struct fut_sleep sl;
};

static int stopper_poll(struct fut_future *f, struct fut_context *cx)
{
    struct stopper *st = (struct stopper *)f;
    FUT_BEGIN(f);
    fut_sleep_init(&st->sl, 2 * MS);
    FUT_AWAIT(f, &st->sl);
    st->s->stop = 1;
    fut_mpsc_close(&st->s->lrx); /* stop accepting */
    FUT_END(f);
}
FUT_ASYNC_VTABLE(stopper_vt, "stopper", stopper_poll, NULL);

static int shutdown_run(struct fut_runtime *rt, void *ud)
{
    struct srv *s = ud;
    int fixed = s->fixed;
    memset(s, 0, sizeof *s);
    s->fixed = fixed;
    ck_assert_int_eq(fut_mpsc_new(8, sizeof(int), NULL, &s->ltx, &s->lrx), 0);
    ck_assert_int_eq(fut_mpsc_new(1, sizeof(int), NULL, &s->wtx, &s->wrx), 0);
    struct fut_join j[4];
    struct client c = {.s = s};
    fut_future_init(&c.base, &client_vt);
    struct acceptor a = {.s = s};
    fut_future_init(&a.base, &acceptor_vt);
    struct worker w = {.s = s};
    fut_future_init(&w.base, &worker_vt);
    struct stopper st = {.s = s};
    fut_future_init(&st.base, &stopper_vt);
    ck_assert_int_eq(fut_spawn(rt, &c, sizeof c, &j[0]), 0);
    ck_assert_int_eq(fut_spawn(rt, &a, sizeof a, &j[1]), 0);
    ck_assert_int_eq(fut_spawn(rt, &w, sizeof w, &j[2]), 0);
    ck_assert_int_eq(fut_spawn(rt, &st, sizeof st, &j[3]), 0);
    int r = 0;
    for (int i = 0; i < 4; i++) {
        int b = fut_block_on(rt, &j[i].base);
        if (b && !r)
            r = b;
        fut_drop(&j[i].base);
    }
    fut_mpsc_rx_drop(&s->lrx);
    fut_mpsc_rx_drop(&s->wrx);
    if (r == 0 && s->served != s->accepted)
        r = 1; /* an accepted connection was never served */
    return r;
}

START_TEST(shutdown_loses_item_found)
{
    struct srv s;
    memset(&s, 0, sizeof s);
    find_and_replay("shutdown loses an accepted item", shutdown_run, &s, 0);
    /* The fixed server passes the same seeds. */
    s.fixed = 1;
    struct fut_sim_swarm sw = quiet_swarm();
    struct fut_sim_swarm_result res;
    ASSERT_EQ(fut_sim_swarm(&sw, 1, 10000, shutdown_run, &s, &res), 0);
    ASSERT_EQ(res.seeds, 10000);
}
END_TEST

/* ------------------------------------------ an invariant stops the run */

struct bank {
    int a, b;
};

struct transfer {
    struct fut_future base;
    struct bank *k;
    struct fut_yield y;
};

static int transfer_poll(struct fut_future *f, struct fut_context *cx)
{
    struct transfer *t = (struct transfer *)f;
    FUT_BEGIN(f);
    t->k->a -= 10;
    fut_yield_init(&t->y); /* the money is nowhere for a moment */
    FUT_AWAIT(f, &t->y);
    t->k->b += 10;
    FUT_END(f);
}
FUT_ASYNC_VTABLE(transfer_vt, "transfer", transfer_poll, NULL);

static int bank_invariant(void *ud)
{
    struct bank *k = ud;
    return k->a + k->b == 100 ? 0 : 7;
}

static int bank_run(struct fut_runtime *rt, void *ud)
{
    struct bank *k = ud;
    k->a = 100;
    k->b = 0;
    struct transfer t = {.k = k};
    fut_future_init(&t.base, &transfer_vt);
    struct fut_join j;
    ck_assert_int_eq(fut_spawn(rt, &t, sizeof t, &j), 0);
    int r = fut_block_on(rt, &j.base);
    fut_drop(&j.base);
    return r;
}

START_TEST(invariant_stops_at_step)
{
    unsetenv("FUT_SIM_SEED");
    struct bank k;
    /* By hand: the step is the task's first poll (step 2: the block_on
     * future's poll is step 1). */
    struct fut_runtime *rt;
    ASSERT_EQ(fut_sim_new(NULL, 5, &rt), 0);
    ASSERT_EQ(fut_sim_set_invariant(rt, bank_invariant, &k), 0);
    ASSERT_EQ(bank_run(rt, &k), FUT_ECANCELED);
    ASSERT_EQ(fut_sim_invariant_failed(rt), 2);
    struct fut_sim_report rep;
    ASSERT_EQ(fut_sim_report(rt, &rep), 0);
    ASSERT_EQ(rep.steps, 2); /* stopped there: nothing ran after */
    fut_runtime_free(rt);
    /* Without the invariant the same run passes. */
    ASSERT_EQ(fut_sim_new(NULL, 5, &rt), 0);
    ASSERT_EQ(bank_run(rt, &k), 0);
    ASSERT_EQ(fut_sim_invariant_failed(rt), 0);
    fut_runtime_free(rt);
    ASSERT_EQ(fut_sim_set_invariant(NULL, bank_invariant, &k), FUT_EINVAL);

    /* Through the swarm, which prints the replay lines: catch stderr. */
    struct fut_sim_swarm sw;
    memset(&sw, 0, sizeof sw);
    sw.invariant = bank_invariant;
    sw.invariant_ud = &k;
    sw.faults = FUT_SIM_FAULT_ALL;
    sw.commit = "c0ffee";
    char path[] = "/tmp/fut_sim_swarm_XXXXXX";
    int fd = mkstemp(path);
    ASSERT_TRUE(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    struct fut_sim_swarm_result res;
    int r = fut_sim_swarm(&sw, 40, 10, bank_run, &k, &res);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char out[2048];
    ssize_t n = pread(fd, out, sizeof out - 1, 0);
    close(fd);
    unlink(path);
    ASSERT_TRUE(n > 0);
    out[n] = '\0';
    ASSERT_EQ(r, FUT_ECANCELED);
    ASSERT_EQ(res.failed_seed, 40);
    ASSERT_EQ(res.seeds, 1);
    ASSERT_EQ(res.invariant_step, 2);
    char want[256];
    snprintf(want, sizeof want,
             "fut-sim: swarm: seed=40 failed (%d) after 2 steps "
             "commit=c0ffee faults=",
             FUT_ECANCELED);
    ck_assert_msg(strstr(out, want), "no summary line in:\n%s", out);
    ck_assert_msg(strstr(out, "invariant at step 2\n"), "%s", out);
    ck_assert_msg(strstr(out, "fut-sim: replay: FUT_SIM_SEED=40 "), "%s",
                  out);
    ck_assert_msg(strstr(out, "test_sim_swarm"), "no command in:\n%s", out);
}
END_TEST

/* --------------------------------------------------------- seeded faults */

struct fsrun {
    const char *path;
    unsigned kinds;
    uint32_t ppm;
    /* out */
    int ok, errors;
    uint64_t injected[3];
};

struct fsio {
    struct fut_future base;
    struct fsrun *s;
    int fd, i;
    char wbuf[64], rbuf[64];
    struct fut_fs op;
};

static int fsio_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fsio *io = (struct fsio *)f;
    struct fsrun *s = io->s;
    FUT_BEGIN(f);
    io->fd = -1;
    fut_fs_open_init(&io->op, s->path, O_RDWR, 0);
    FUT_AWAIT(f, &io->op);
    if (io->op.result < 0)
        goto failed;
    io->fd = (int)io->op.result;
    for (io->i = 0; io->i < 4; io->i++) {
        memset(io->wbuf, 'a' + io->i, sizeof io->wbuf);
        fut_fs_write_init(&io->op, io->fd, io->wbuf, sizeof io->wbuf,
                          io->i * 64);
        FUT_AWAIT(f, &io->op);
        if (io->op.result != (ssize_t)sizeof io->wbuf)
            goto failed;
        fut_fs_read_init(&io->op, io->fd, io->rbuf, sizeof io->rbuf,
                         io->i * 64);
        FUT_AWAIT(f, &io->op);
        if (io->op.result != (ssize_t)sizeof io->rbuf)
            goto failed;
        /* Whatever failed, what was read is what was written. */
        ck_assert(memcmp(io->rbuf, io->wbuf, sizeof io->rbuf) == 0);
    }
    close(io->fd);
    s->ok++;
    FUT_RETURN(f);
failed:
    if (io->fd >= 0)
        close(io->fd);
    s->errors++;
    FUT_END(f);
}
FUT_ASYNC_VTABLE(fsio_vt, "fsio", fsio_poll, NULL);

static int fs_run(struct fut_runtime *rt, void *ud)
{
    struct fsrun *s = ud;
    s->ok = s->errors = 0;
    ck_assert_int_eq(fut_sim_set_faults(rt, s->kinds, s->ppm), 0);
    struct fut_join j[3];
    int n = 0;
    for (int i = 0; i < 3; i++) {
        struct fsio io = {.s = s};
        fut_future_init(&io.base, &fsio_vt);
        if (fut_spawn(rt, &io, sizeof io, &j[n]) == 0)
            n++; /* else: an injected allocation failure */
        else
            s->errors++;
    }
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(fut_block_on(rt, &j[i].base), 0);
        fut_drop(&j[i].base);
    }
    for (int k = 0; k < 3; k++)
        s->injected[k] = fut_sim_faults_injected(rt, 1u << k);
    return 0;
}

START_TEST(faults_seeded)
{
    unsetenv("FUT_SIM_SEED");
    char path[] = "/tmp/fut_sim_faults_XXXXXX";
    int fd = mkstemp(path);
    ASSERT_TRUE(fd >= 0);
    close(fd);
    struct fsrun s;
    memset(&s, 0, sizeof s);
    s.path = path;
    /* Every kind, at 1 in 20: the same seed gives the same faults, the
     * same outcome and the same trace; over 60 seeds each kind strikes. */
    s.kinds = FUT_SIM_FAULT_ALL;
    s.ppm = 50000;
    uint64_t total[3] = {0, 0, 0};
    int errors = 0, oks = 0;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        struct fut_sim_report r1, r2;
        ASSERT_EQ(fut_sim_run(NULL, seed, fs_run, &s, &r1), 0);
        struct fsrun first = s;
        ASSERT_EQ(fut_sim_run(NULL, seed, fs_run, &s, &r2), 0);
        ASSERT_EQ(r1.trace, r2.trace);
        ASSERT_EQ(first.ok, s.ok);
        ASSERT_EQ(first.errors, s.errors);
        for (int k = 0; k < 3; k++) {
            ASSERT_EQ(first.injected[k], s.injected[k]);
            total[k] += s.injected[k];
        }
        errors += s.errors;
        oks += s.ok;
    }
    ck_assert_msg(total[0] > 0 && total[1] > 0 && total[2] > 0,
                  "injected alloc %llu eintr %llu fs %llu",
                  (unsigned long long)total[0], (unsigned long long)total[1],
                  (unsigned long long)total[2]);
    ASSERT_TRUE(errors > 0 && oks > 0);
    /* EINTR alone, one call in two: fut retries, every run succeeds. */
    s.kinds = FUT_SIM_FAULT_EINTR;
    s.ppm = 500000;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        ASSERT_EQ(fut_sim_run(NULL, seed, fs_run, &s, NULL), 0);
        ASSERT_EQ(s.ok, 3);
        ASSERT_EQ(s.errors, 0);
        ASSERT_TRUE(s.injected[1] > 0);
    }
    /* No faults: no failures. */
    s.kinds = 0;
    ASSERT_EQ(fut_sim_run(NULL, 3, fs_run, &s, NULL), 0);
    ASSERT_EQ(s.ok, 3);
    ASSERT_EQ(s.injected[0] + s.injected[1] + s.injected[2], 0);
    unlink(path);
    /* Refusals. */
    struct fut_runtime *rt;
    ASSERT_EQ(fut_runtime_new(NULL, &rt), 0);
    ASSERT_EQ(fut_sim_set_faults(rt, FUT_SIM_FAULT_ALLOC, 10), FUT_EINVAL);
    fut_runtime_free(rt);
    ASSERT_EQ(fut_sim_new(NULL, 1, &rt), 0);
    ASSERT_EQ(fut_sim_set_faults(rt, 32, 10), FUT_EINVAL); /* unknown */
    ASSERT_EQ(fut_sim_set_faults(rt, FUT_SIM_FAULT_EINTR, 1000000),
              FUT_EINVAL);
    ASSERT_EQ(fut_sim_set_faults(rt, FUT_SIM_FAULT_EAGAIN, 1000000),
              FUT_EINVAL);
    ASSERT_EQ(fut_sim_set_faults(rt, FUT_SIM_FAULT_RESET, 1000000), 0);
    fut_runtime_free(rt);
}
END_TEST

/* ----------------------------------------- a spawn during the teardown */

struct late {
    struct fut_future base;
    int *spawn_result;
    struct fut_sleep s;
};

static int nop_poll(struct fut_future *f, struct fut_context *cx)
{
    (void)cx;
    FUT_BEGIN(f);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(nop_vt, "nop", nop_poll, NULL);

static int late_poll(struct fut_future *f, struct fut_context *cx)
{
    struct late *l = (struct late *)f;
    FUT_BEGIN(f);
    fut_sleep_init(&l->s, 3600 * 1000 * MS);
    FUT_AWAIT(f, &l->s);
    FUT_END(f);
}

/* Dropped by the teardown: spawns (the runtime must refuse it). */
static void late_cleanup(struct fut_future *f)
{
    struct late *l = (struct late *)f;
    struct fut_future n;
    fut_future_init(&n, &nop_vt);
    struct fut_join j;
    *l->spawn_result = fut_spawn(NULL, &n, sizeof n, &j);
    fut_drop(&j.base); /* empty: nothing */
}
FUT_ASYNC_VTABLE(late_vt, "late", late_poll, late_cleanup);

static int late_run(struct fut_runtime *rt, void *ud)
{
    struct late l = {.spawn_result = ud};
    fut_future_init(&l.base, &late_vt);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(fut_spawn(rt, &l, sizeof l, NULL), 0);
    struct fut_yield y;
    fut_yield_init(&y);
    return fut_block_on(rt, &y.base); /* the tasks wait: torn down */
}

START_TEST(teardown_spawn_dropped)
{
    unsetenv("FUT_SIM_SEED");
    int res = 1;
    long live = fut_alloc_live();
    for (uint64_t seed = 1; seed <= 20; seed++) {
        res = 1;
        ASSERT_EQ(fut_sim_run(NULL, seed, late_run, &res, NULL), 0);
        ASSERT_EQ(res, FUT_ESHUTDOWN);
    }
    ASSERT_EQ(fut_alloc_live(), live);
}
END_TEST

/* ------------------------------------------------- N emulated workers */

/* One poll spawns three children: with workers emulated the last lands
 * in the spawner's LIFO slot and the first two in its queue, so the
 * first child to run is the last spawned (the LIFO slot) or the first
 * (stolen from the queue's head) - never the middle one, which a single
 * seeded queue picks first in about a third of the seeds. */
struct order {
    int first, ran;
};

struct child {
    struct fut_future base;
    struct order *o;
    int id;
};

static int child_poll(struct fut_future *f, struct fut_context *cx)
{
    struct child *c = (struct child *)f;
    (void)cx;
    if (c->o->ran++ == 0)
        c->o->first = c->id;
    return FUT_READY;
}
static const struct fut_future_vtable child_vt = {child_poll, NULL, "child",
                                                  0};

struct spawner {
    struct fut_future base;
    struct order *o;
};

static int spawner_poll(struct fut_future *f, struct fut_context *cx)
{
    struct spawner *s = (struct spawner *)f;
    (void)cx;
    for (int i = 0; i < 3; i++) {
        struct child c = {.o = s->o, .id = i};
        fut_future_init(&c.base, &child_vt);
        ck_assert_int_eq(fut_spawn(NULL, &c, sizeof c, NULL), 0);
    }
    return FUT_READY;
}
static const struct fut_future_vtable spawner_vt = {spawner_poll, NULL,
                                                    "spawner", 0};

static int order_run(struct fut_runtime *rt, void *ud)
{
    struct order *o = ud;
    memset(o, 0, sizeof *o);
    struct spawner sp = {.o = o};
    fut_future_init(&sp.base, &spawner_vt);
    struct fut_join j;
    ck_assert_int_eq(fut_spawn(rt, &sp, sizeof sp, &j), 0);
    ck_assert_int_eq(fut_block_on(rt, &j.base), 0);
    fut_drop(&j.base);
    fut_test_run_pending(rt);
    ck_assert_int_eq(o->ran, 3);
    return 0;
}

START_TEST(workers_emulated)
{
    unsetenv("FUT_SIM_SEED");
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    cfg.workers = 4;
    struct order o;
    int first1[3] = {0, 0, 0}, firstw[3] = {0, 0, 0};
    for (uint64_t seed = 1; seed <= 300; seed++) {
        ASSERT_EQ(fut_sim_run(NULL, seed, order_run, &o, NULL), 0);
        first1[o.first]++;
        ASSERT_EQ(fut_sim_run(&cfg, seed, order_run, &o, NULL), 0);
        firstw[o.first]++;
    }
    ck_assert_msg(firstw[1] == 0 && firstw[0] > 0 && firstw[2] > 0 &&
                      first1[1] > 0,
                  "first: one queue %d/%d/%d, 4 workers %d/%d/%d", first1[0],
                  first1[1], first1[2], firstw[0], firstw[1], firstw[2]);
    /* One seed, one trace, with workers too; and not the one-queue one. */
    struct fut_sim_report a, b, c;
    struct prim p;
    ASSERT_EQ(fut_sim_run(&cfg, 77, prim_run, &p, &a), 0);
    ASSERT_EQ(fut_sim_run(&cfg, 77, prim_run, &p, &b), 0);
    ASSERT_EQ(fut_sim_run(NULL, 77, prim_run, &p, &c), 0);
    ASSERT_EQ(a.trace, b.trace);
    ASSERT_NE(a.trace, c.trace);
    /* The swarm over the primitives and the lost update, on 4 workers. */
    struct fut_sim_swarm sw;
    memset(&sw, 0, sizeof sw);
    sw.cfg = &cfg;
    sw.invariant = prim_invariant;
    sw.invariant_ud = &p;
    struct fut_sim_swarm_result res;
    ASSERT_EQ(fut_sim_swarm(&sw, 1, 2000, prim_run, &p, &res), 0);
    ASSERT_EQ(res.seeds, 2000);
    sw = quiet_swarm();
    sw.cfg = &cfg;
    struct lost l = {.delay = 6};
    ASSERT_NE(fut_sim_swarm(&sw, 1, 10000, lost_update_run, &l, &res), 0);
    fprintf(stderr, "lost update on 4 workers: found at seed %llu\n",
            (unsigned long long)res.failed_seed);
    /* A bad count is refused as fut_runtime_new refuses it. */
    struct fut_runtime *rt;
    cfg.workers = 100000;
    ASSERT_EQ(fut_sim_new(&cfg, 1, &rt), FUT_EINVAL);
}
END_TEST

/* ------------- seeded bug: a timeout that leaves a reply half written */

/* A protocol over a channel of ints (capacity 1, a socket's buffer): the
 * server writes each reply as a header (-1 - id) then a body (id), under
 * a 1 ms timeout per reply; the client reads promptly but stalls for
 * 2 ms now and then (seeded). The bug (fixed = 0): a timeout between the two writes leaves
 * the header alone, the server goes on with the next reply, and the
 * client reads a header where a body belongs - out of sync. Fixed: a
 * timed-out reply closes the stream (the client sees the end, not
 * garbage). */
enum { REPLIES = 6 };

struct proto {
    struct fut_mpsc_tx tx;
    struct fut_mpsc_rx rx;
    int fixed, desync, bodies;
};

struct write_reply {
    struct fut_future base;
    struct fut_mpsc_tx *tx;
    int part[2], i;
    struct fut_mpsc_send send;
};

static int write_reply_poll(struct fut_future *f, struct fut_context *cx)
{
    struct write_reply *w = (struct write_reply *)f;
    FUT_BEGIN(f);
    for (w->i = 0; w->i < 2; w->i++) {
        fut_mpsc_send_init(&w->send, w->tx, &w->part[w->i]);
        FUT_AWAIT(f, &w->send);
        if (w->send.result != 0)
            break;
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(write_reply_vt, "write_reply", write_reply_poll, NULL);

struct replier {
    struct fut_future base;
    struct proto *p;
    int id;
    struct write_reply wr;
    struct fut_timeout to;
};

static int replier_poll(struct fut_future *f, struct fut_context *cx)
{
    struct replier *r = (struct replier *)f;
    struct proto *p = r->p;
    FUT_BEGIN(f);
    for (r->id = 0; r->id < REPLIES; r->id++) {
        fut_future_init(&r->wr.base, &write_reply_vt);
        r->wr.tx = &p->tx;
        r->wr.part[0] = -1 - r->id;
        r->wr.part[1] = r->id;
        r->wr.i = 0;
        fut_timeout_init(&r->to, &r->wr.base, fut_time_now() + MS);
        FUT_AWAIT(f, &r->to);
        if (r->to.result == FUT_ETIMEDOUT && r->wr.i == 1 && p->fixed)
            break; /* half written: close the stream */
    }
    fut_mpsc_tx_drop(&p->tx);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(replier_vt, "replier", replier_poll, NULL);

struct reader {
    struct fut_future base;
    struct proto *p;
    int v, want_body;
    struct fut_sleep s;
    struct fut_mpsc_recv recv;
};

static int reader_poll(struct fut_future *f, struct fut_context *cx)
{
    struct reader *r = (struct reader *)f;
    struct proto *p = r->p;
    FUT_BEGIN(f);
    r->want_body = -1;
    for (;;) {
        /* Mostly prompt; now and then a 2 ms stall (a GC, a page-in). */
        fut_sleep_init(&r->s, fut_sim_random() % 200 == 0 ? 2 * MS : 0);
        FUT_AWAIT(f, &r->s);
        fut_mpsc_recv_init(&r->recv, &p->rx, &r->v);
        FUT_AWAIT(f, &r->recv);
        if (r->recv.result != 0)
            break; /* the end */
        if (r->want_body >= 0) {
            if (r->v != r->want_body)
                p->desync = 1; /* a header (or another body) here */
            else
                p->bodies++;
            r->want_body = -1;
        } else if (r->v < 0) {
            r->want_body = -1 - r->v;
        } else {
            p->desync = 1; /* a body without its header */
        }
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(reader_vt, "reader", reader_poll, NULL);

static int proto_run(struct fut_runtime *rt, void *ud)
{
    struct proto *p = ud;
    int fixed = p->fixed;
    memset(p, 0, sizeof *p);
    p->fixed = fixed;
    ck_assert_int_eq(fut_mpsc_new(1, sizeof(int), NULL, &p->tx, &p->rx), 0);
    struct replier w = {.p = p};
    fut_future_init(&w.base, &replier_vt);
    struct reader r = {.p = p};
    fut_future_init(&r.base, &reader_vt);
    struct fut_join j[2];
    ck_assert_int_eq(fut_spawn(rt, &w, sizeof w, &j[0]), 0);
    ck_assert_int_eq(fut_spawn(rt, &r, sizeof r, &j[1]), 0);
    int res = 0;
    for (int i = 0; i < 2; i++) {
        int b = fut_block_on(rt, &j[i].base);
        if (b && !res)
            res = b;
        fut_drop(&j[i].base);
    }
    fut_mpsc_rx_drop(&p->rx);
    return res ? res : p->desync; /* 1: the protocol is out of sync */
}

START_TEST(timeout_half_reply_found)
{
    struct proto p;
    memset(&p, 0, sizeof p);
    find_and_replay("timeout leaves a reply half written", proto_run, &p, 0);
    /* Closing the stream on a half-written reply: never out of sync. */
    p.fixed = 1;
    struct fut_sim_swarm sw = quiet_swarm();
    struct fut_sim_swarm_result res;
    ASSERT_EQ(fut_sim_swarm(&sw, 1, 10000, proto_run, &p, &res), 0);
    ASSERT_EQ(res.seeds, 10000);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_swarm");
    TCase *tc = fut_test_tcase(s, "primitives");
    tcase_add_test(tc, primitives_swarm);
    tc = fut_test_tcase(s, "lost_update");
    tcase_add_test(tc, lost_update_found);
    tc = fut_test_tcase(s, "shutdown_loss");
    tcase_add_test(tc, shutdown_loses_item_found);
    tc = fut_test_tcase(s, "half_reply");
    tcase_add_test(tc, timeout_half_reply_found);
    tc = fut_test_tcase(s, "invariant");
    tcase_add_test(tc, invariant_stops_at_step);
    tc = fut_test_tcase(s, "faults");
    tcase_add_test(tc, faults_seeded);
    tc = fut_test_tcase(s, "teardown_spawn");
    tcase_add_test(tc, teardown_spawn_dropped);
    tc = fut_test_tcase(s, "workers");
    tcase_add_test(tc, workers_emulated);
    return fut_test_run(s);
}
