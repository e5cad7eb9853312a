/* SPDX-License-Identifier: MIT */
/* Tasks and the runtime: spawn/join/abort/detach, wakes (C9, C10),
 * cancellation (C11), the coop budget, cross-thread wakes and spawns,
 * shutdown, block_on, async functions, the debug contract checks
 * (C6-C8) and the version of the library linked against the headers'. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "test.h"

/* ------------------------------------------------------------ helpers */

/* An async function awaiting one child future it holds by pointer. */
struct await_one {
    struct fut_future base;
    struct fut_future *child;
    int *cleanups;
};

static int await_one_poll(struct fut_future *f, struct fut_context *cx)
{
    struct await_one *a = (struct await_one *)f;
    FUT_BEGIN(f);
    FUT_AWAIT(f, a->child);
    FUT_END(f);
}

static void await_one_cleanup(struct fut_future *f)
{
    struct await_one *a = (struct await_one *)f;
    if (a->cleanups)
        (*a->cleanups)++;
}
FUT_ASYNC_VTABLE(await_one_vt, "await_one", await_one_poll,
                 await_one_cleanup);

/* A future awaiting a oneshot receiver it owns. The receive future
 * points into the struct ('value'), so it is set up on the first poll,
 * after fut_spawn copied the struct into the task (a future must not
 * hold pointers into itself before its first poll). */
struct recv_task {
    struct fut_future base;
    struct fut_oneshot_rx rx;
    struct fut_oneshot_recv r;
    uint64_t value;
    int *drops;
};

static int recv_task_poll(struct fut_future *f, struct fut_context *cx)
{
    struct recv_task *t = (struct recv_task *)f;
    FUT_BEGIN(f);
    fut_oneshot_recv_init(&t->r, &t->rx, &t->value);
    FUT_AWAIT(f, &t->r);
    FUT_END(f);
}

static void recv_task_cleanup(struct fut_future *f)
{
    struct recv_task *t = (struct recv_task *)f;
    fut_oneshot_rx_drop(&t->rx); /* not yet handed to 'r': ours */
    if (!fut_is_ready(f) && t->drops)
        (*t->drops)++;
}
FUT_ASYNC_VTABLE(recv_task_vt, "recv_task", recv_task_poll,
                 recv_task_cleanup);

static void recv_task_init(struct recv_task *t, struct fut_oneshot_rx *rx,
                           int *drops)
{
    fut_future_init(&t->base, &recv_task_vt);
    t->rx = *rx;
    rx->ch = NULL;
    t->value = 0;
    t->drops = drops;
}

/* ------------------------------------------------------- spawn and join */

START_TEST(spawn_join_output)
{
    struct fut_runtime *rt = fut_test_rt();
    int polls = 0, drops = 0;
    struct counting_future cf;
    counting_future_init(&cf, 2, 1, &polls, &drops, 1234);
    struct fut_join j;
    ASSERT_EQ(fut_spawn(rt, &cf, sizeof cf, &j), 0);
    intptr_t v = 0;
    FUT_JOIN_OUTPUT(&j, struct counting_future, value, &v);
    ASSERT_EQ(fut_block_on(rt, &j.base), 0);
    ASSERT_EQ(j.result, 0);
    ASSERT_EQ(v, 1234);
    ASSERT_EQ(polls, 3);
    ASSERT_EQ(drops, 1); /* the future's drop ran once, after READY */
    /* C8: polling the handle again gives the same result. */
    ASSERT_EQ(fut_block_on(rt, &j.base), 0);
    ASSERT_EQ(j.result, 0);
    fut_drop(&j.base);
    fut_runtime_free(rt);
}
END_TEST

/* Task memory honours the future's alignment: a 16-aligned struct lands
 * 16-aligned, also between tasks of sizes that are only 8-aligned (the
 * slab packs 8-granular blocks; see slab.h). Spawned from inside the
 * runtime, where tasks come from the slab. */
struct aligned16 {
    struct fut_future base;
    _Alignas(16) unsigned char v[16];
    int *misaligned, *ran;
};
static int aligned16_poll(struct fut_future *f, struct fut_context *cx)
{
    struct aligned16 *a = (struct aligned16 *)f;
    (void)cx;
    (*a->ran)++;
    if ((uintptr_t)f % 16 != 0)
        (*a->misaligned)++;
    return FUT_READY;
}
static const struct fut_future_vtable aligned16_vt = {aligned16_poll, NULL,
                                                      "aligned16", NULL};

struct align_spawner {
    struct fut_future base;
    int misaligned, ran, rc;
};
static int align_spawner_poll(struct fut_future *f, struct fut_context *cx)
{
    struct align_spawner *sp = (struct align_spawner *)f;
    (void)cx;
    for (int i = 0; i < 64; i++) {
        struct counting_future cf; /* 56 bytes: an 8-aligned task block */
        counting_future_init(&cf, 0, 0, NULL, NULL, 0);
        struct aligned16 a;
        fut_future_init(&a.base, &aligned16_vt);
        a.misaligned = &sp->misaligned;
        a.ran = &sp->ran;
        sp->rc |= fut_spawn(NULL, &cf, sizeof cf, NULL);
        sp->rc |= fut_spawn(NULL, &a, sizeof a, NULL);
    }
    return FUT_READY;
}
static const struct fut_future_vtable align_spawner_vt = {
    align_spawner_poll, NULL, "align_spawner", NULL};

START_TEST(spawn_respects_alignment)
{
    if (fut_test_rt_is_mt())
        return; /* plain counters below; the slab is the same code */
    struct fut_runtime *rt = fut_test_rt();
    struct align_spawner sp;
    memset(&sp, 0, sizeof sp);
    fut_future_init(&sp.base, &align_spawner_vt);
    ASSERT_EQ(fut_block_on(rt, &sp.base), 0);
    fut_test_run_pending(rt);
    ASSERT_EQ(sp.rc, 0);
    ASSERT_EQ(sp.ran, 64);
    ASSERT_EQ(sp.misaligned, 0);
    fut_runtime_free(rt);
}
END_TEST

START_TEST(spawn_detached_runs)
{
    struct fut_runtime *rt = fut_test_rt();
    int polls = 0, drops = 0;
    struct counting_future cf;
    counting_future_init(&cf, 1, 1, &polls, &drops, 0);
    ASSERT_EQ(fut_spawn(rt, &cf, sizeof cf, NULL), 0);
    fut_test_run_pending(rt);
    ASSERT_EQ(polls, 2);
    ASSERT_EQ(drops, 1);
    fut_runtime_free(rt);
}
END_TEST

START_TEST(spawn_bad_input)
{
    struct fut_join j;
    struct counting_future cf;
    counting_future_init(&cf, 0, 0, NULL, NULL, 0);
    /* No runtime given and none current. */
    ASSERT_EQ(fut_spawn(NULL, &cf, sizeof cf, &j), FUT_EINVAL);
    ASSERT_TRUE(j.task == NULL);
    fut_drop(&j.base); /* an empty handle drops harmlessly */
    struct fut_runtime *rt = fut_test_rt();
    ASSERT_EQ(fut_spawn_at(rt, &cf.base, 1, &j, __FILE__, __LINE__),
              FUT_EINVAL); /* smaller than a future header */
    fut_runtime_free(rt);
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    cfg.budget = -1;
    ASSERT_EQ(fut_runtime_new(&cfg, &rt), FUT_EINVAL);
    fut_rt_config_init(&cfg);
    cfg.flavor = 42;
    ASSERT_EQ(fut_runtime_new(&cfg, &rt), FUT_EINVAL);
}
END_TEST

/* ----------------------------------------------- C10: wake while running */

/* Wakes itself twice during its first poll: must be polled exactly once
 * more (one reschedule), not twice. */
struct double_wake {
    struct fut_future base;
    int polls;
};

static int double_wake_poll(struct fut_future *f, struct fut_context *cx)
{
    struct double_wake *d = (struct double_wake *)f;
    if (++d->polls > 1)
        return FUT_READY;
    struct fut_waker w = fut_waker_clone(&cx->waker);
    fut_waker_wake_by_ref(&w);
    fut_waker_wake(&w);
    fut_waker_wake_by_ref(&cx->waker);
    return FUT_PENDING;
}
static const struct fut_future_vtable double_wake_vt = {
    double_wake_poll, NULL, "double_wake", NULL};

START_TEST(c10_wake_while_running_reschedules_once)
{
    struct fut_runtime *rt = fut_test_rt();
    struct double_wake d;
    fut_future_init(&d.base, &double_wake_vt);
    d.polls = 0;
    struct fut_join j;
    ASSERT_EQ(fut_spawn(rt, &d, sizeof d, &j), 0);
    int polls = 0;
    FUT_JOIN_OUTPUT(&j, struct double_wake, polls, &polls);
    ASSERT_EQ(fut_block_on(rt, &j.base), 0);
    ASSERT_EQ(polls, 2);
    struct fut_rt_stats st;
    fut_runtime_stats(rt, &st);
    ASSERT_EQ(st.polls, 2); /* never queued twice */
    fut_drop(&j.base);
    fut_runtime_free(rt);
}
END_TEST

/* -------------------------------------------------- C11: cancellation */

START_TEST(c11_join_drop_cancels)
{
    struct fut_runtime *rt = fut_test_rt();
    int polls = 0, drops = 0;
    struct counting_future cf;
    counting_future_init(&cf, 1000000, 0, &polls, &drops, 0); /* waits */
    struct fut_join j;
    ASSERT_EQ(fut_spawn(rt, &cf, sizeof cf, &j), 0);
    fut_test_run_pending(rt); /* the task polls once */
    ASSERT_EQ(polls, 1);
    fut_drop(&j.base); /* not from the runtime thread: queued */
    fut_test_run_pending(rt);
    ASSERT_EQ(drops, 1);
    ASSERT_EQ(polls, 1); /* dropped, never polled again */
    fut_runtime_free(rt);
}
END_TEST

/* A task that aborts another task through its handle, from inside the
 * runtime: the idle victim is dropped at once (in place). */
struct aborter {
    struct fut_future base;
    struct fut_join *victim;
    int *victim_drops;
    int drops_seen;
};

static int aborter_poll(struct fut_future *f, struct fut_context *cx)
{
    struct aborter *a = (struct aborter *)f;
    (void)cx;
    fut_join_abort(a->victim);
    a->drops_seen = *a->victim_drops; /* dropped before abort returned */
    return FUT_READY;
}
static const struct fut_future_vtable aborter_vt = {aborter_poll, NULL,
                                                    "aborter", NULL};

START_TEST(c11_abort_idle_drops_at_once)
{
    struct fut_runtime *rt = fut_test_rt();
    int polls = 0, drops = 0;
    struct counting_future cf;
    counting_future_init(&cf, 1000000, 0, &polls, &drops, 0);
    struct fut_join victim;
    ASSERT_EQ(fut_spawn(rt, &cf, sizeof cf, &victim), 0);
    fut_test_run_pending(rt); /* victim now idle */
    struct aborter a;
    fut_future_init(&a.base, &aborter_vt);
    a.victim = &victim;
    a.victim_drops = &drops;
    a.drops_seen = -1;
    struct fut_join aj;
    ASSERT_EQ(fut_spawn(rt, &a, sizeof a, &aj), 0);
    int seen = -1;
    FUT_JOIN_OUTPUT(&aj, struct aborter, drops_seen, &seen);
    ASSERT_EQ(fut_block_on(rt, &aj.base), 0);
    if (!fut_test_rt_is_mt())
        ASSERT_EQ(seen, 1); /* current-thread: dropped in place */
    ASSERT_EQ(fut_block_on(rt, &victim.base), 0);
    ASSERT_EQ(victim.result, FUT_ECANCELED);
    ASSERT_EQ(drops, 1);
    fut_drop(&victim.base);
    fut_drop(&aj.base);
    fut_runtime_free(rt);
}
END_TEST

/* Aborts itself mid-poll: dropped right after the poll returns. */
struct self_abort {
    struct fut_future base;
    struct fut_join *self;
    int polls;
    int *drops;
};

static int self_abort_poll(struct fut_future *f, struct fut_context *cx)
{
    struct self_abort *s = (struct self_abort *)f;
    s->polls++;
    fut_join_abort(s->self);
    fut_waker_wake_by_ref(&cx->waker); /* would run again if not aborted */
    return FUT_PENDING;
}
static void self_abort_drop(struct fut_future *f)
{
    (*((struct self_abort *)f)->drops)++;
}
static const struct fut_future_vtable self_abort_vt = {
    self_abort_poll, self_abort_drop, "self_abort", NULL};

START_TEST(c11_abort_running_drops_after_poll)
{
    struct fut_runtime *rt = fut_test_rt();
    int drops = 0;
    struct fut_join j;
    struct self_abort s;
    fut_future_init(&s.base, &self_abort_vt);
    s.self = &j;
    s.polls = 0;
    s.drops = &drops;
    ASSERT_EQ(fut_spawn(rt, &s, sizeof s, &j), 0);
    ASSERT_EQ(fut_block_on(rt, &j.base), 0);
    ASSERT_EQ(j.result, FUT_ECANCELED);
    ASSERT_EQ(drops, 1);
    fut_drop(&j.base);
    fut_runtime_free(rt);
}
END_TEST

START_TEST(c11_drop_parent_drops_child)
{
    int polls = 0, drops = 0, cleanups = 0;
    struct counting_future cf;
    counting_future_init(&cf, 5, 0, &polls, &drops, 0);
    struct await_one a;
    fut_future_init(&a.base, &await_one_vt);
    a.child = &cf.base;
    a.cleanups = &cleanups;
    struct fut_context cx;
    fut_context_init(&cx, fut_waker_noop());
    ASSERT_EQ(fut_poll(&a.base, &cx), FUT_PENDING);
    ASSERT_TRUE(a.base.awaiting == &cf.base); /* recorded for drop/dump */
    fut_drop(&a.base);
    ASSERT_EQ(drops, 1);    /* the awaited child went with the parent */
    ASSERT_EQ(cleanups, 1); /* then the user's cleanup hook */
    fut_drop(&a.base);      /* idempotent */
    ASSERT_EQ(drops, 1);
    ASSERT_EQ(cleanups, 1);
}
END_TEST

START_TEST(detach_lets_task_finish)
{
    struct fut_runtime *rt = fut_test_rt();
    struct fut_oneshot_tx tx;
    struct fut_oneshot_rx rx;
    ASSERT_EQ(fut_oneshot_new(8, NULL, &tx, &rx), 0);
    int drops = 0;
    struct recv_task t;
    recv_task_init(&t, &rx, &drops);
    struct fut_join j;
    ASSERT_EQ(fut_spawn(rt, &t, sizeof t, &j), 0);
    fut_join_detach(&j);
    fut_drop(&j.base); /* empty: does not cancel */
    fut_test_run_pending(rt);
    uint64_t v = 1;
    ASSERT_EQ(fut_oneshot_send(&tx, &v), 0); /* receiver still alive */
    fut_test_run_pending(rt);
    ASSERT_EQ(drops, 0); /* completed, not cancelled */
    fut_runtime_free(rt);
}
END_TEST

/* ------------------------------------------------------- coop budget */

/* Awaits 'n' oneshots that are all ready: without the budget it would
 * never yield. Records how many of the other task's polls it saw. */
struct greedy {
    struct fut_future base;
    struct fut_oneshot_recv r;
    uint64_t v;
    int i, n;
    atomic_int *other_polls;
    int seen_other;
};

static int greedy_poll(struct fut_future *f, struct fut_context *cx)
{
    struct greedy *g = (struct greedy *)f;
    FUT_BEGIN(f);
    for (g->i = 0; g->i < g->n; g->i++) {
        {
            struct fut_oneshot_tx tx;
            struct fut_oneshot_rx rx;
            if (fut_oneshot_new(8, NULL, &tx, &rx) != 0)
                FUT_RETURN(f);
            uint64_t one = 1;
            fut_oneshot_send(&tx, &one);
            fut_oneshot_recv_init(&g->r, &rx, &g->v);
        }
        FUT_AWAIT(f, &g->r);
    }
    g->seen_other = atomic_load(g->other_polls);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(greedy_vt, "greedy", greedy_poll, NULL);

struct ticker {
    struct fut_future base;
    atomic_int *polls;
};
static int ticker_poll(struct fut_future *f, struct fut_context *cx)
{
    atomic_fetch_add(((struct ticker *)f)->polls, 1);
    (void)cx;
    return FUT_READY;
}
static const struct fut_future_vtable ticker_vt = {ticker_poll, NULL,
                                                   "ticker", NULL};

START_TEST(coop_budget_yields)
{
    struct fut_runtime *rt = fut_test_rt();
    atomic_int other = 0;
    struct greedy g;
    memset(&g, 0, sizeof g);
    fut_future_init(&g.base, &greedy_vt);
    g.n = 1000;
    g.other_polls = &other;
    struct fut_join gj;
    ASSERT_EQ(fut_spawn(rt, &g, sizeof g, &gj), 0);
    struct ticker t;
    fut_future_init(&t.base, &ticker_vt);
    t.polls = &other;
    ASSERT_EQ(fut_spawn(rt, &t, sizeof t, NULL), 0);
    int seen = 0;
    FUT_JOIN_OUTPUT(&gj, struct greedy, seen_other, &seen);
    ASSERT_EQ(fut_block_on(rt, &gj.base), 0);
    /* The ticker, queued behind the greedy task, ran before it finished
     * its 1000 ready receives: the budget (128) made it yield. */
    ASSERT_EQ(seen, 1);
    struct fut_rt_stats st;
    fut_runtime_stats(rt, &st);
    ASSERT_TRUE(st.budget_yields >= 7); /* 1000 / 128 */
    fut_drop(&gj.base);
    fut_runtime_free(rt);
}
END_TEST

/* --------------------------------------------- cross-thread wakes/spawn */

struct sender_arg {
    struct fut_oneshot_tx tx;
    uint64_t value;
    int delay_ms;
};

static void *sender_thread(void *arg)
{
    struct sender_arg *s = arg;
    struct timespec ts = {0, s->delay_ms * 1000000L};
    nanosleep(&ts, NULL);
    fut_oneshot_send(&s->tx, &s->value);
    return NULL;
}

START_TEST(wake_from_foreign_thread)
{
    struct fut_runtime *rt = fut_test_rt();
    for (int i = 0; i < 20; i++) {
        struct sender_arg s;
        struct fut_oneshot_rx rx;
        ASSERT_EQ(fut_oneshot_new(8, NULL, &s.tx, &rx), 0);
        s.value = 1000 + (uint64_t)i;
        s.delay_ms = i % 3;
        struct recv_task t;
        recv_task_init(&t, &rx, NULL);
        struct fut_join j;
        ASSERT_EQ(fut_spawn(rt, &t, sizeof t, &j), 0);
        uint64_t got = 0;
        FUT_JOIN_OUTPUT(&j, struct recv_task, value, &got);
        pthread_t th;
        ASSERT_EQ(pthread_create(&th, NULL, sender_thread, &s), 0);
        ASSERT_EQ(fut_block_on(rt, &j.base), 0);
        pthread_join(th, NULL);
        ASSERT_EQ(got, 1000 + (uint64_t)i);
        fut_drop(&j.base);
    }
    struct fut_rt_stats st;
    fut_runtime_stats(rt, &st);
    if (!fut_test_rt_is_mt())
        ASSERT_TRUE(st.parks >= 1); /* it slept, and was woken */
    fut_runtime_free(rt);
}
END_TEST

struct spawner_arg {
    struct fut_runtime *rt;
    struct fut_oneshot_tx tx;
    int rc;
};

/* Spawned from a foreign thread: sends 7 on its channel. */
struct send_seven {
    struct fut_future base;
    struct fut_oneshot_tx tx;
};
static int send_seven_poll(struct fut_future *f, struct fut_context *cx)
{
    (void)cx;
    uint64_t v = 7;
    fut_oneshot_send(&((struct send_seven *)f)->tx, &v);
    return FUT_READY;
}
static void send_seven_drop(struct fut_future *f)
{
    fut_oneshot_tx_drop(&((struct send_seven *)f)->tx);
}
static const struct fut_future_vtable send_seven_vt = {
    send_seven_poll, send_seven_drop, "send_seven", NULL};

static void *spawner_thread(void *arg)
{
    struct spawner_arg *s = arg;
    struct send_seven f;
    fut_future_init(&f.base, &send_seven_vt);
    f.tx = s->tx;
    s->rc = fut_spawn(s->rt, &f, sizeof f, NULL);
    if (s->rc != 0)
        fut_oneshot_tx_drop(&f.tx); /* spawn failed: still ours */
    return NULL;
}

START_TEST(spawn_from_foreign_thread)
{
    struct fut_runtime *rt = fut_test_rt();
    struct spawner_arg s;
    struct fut_oneshot_rx rx;
    ASSERT_EQ(fut_oneshot_new(8, NULL, &s.tx, &rx), 0);
    s.rt = rt;
    s.rc = -1;
    struct fut_oneshot_recv r;
    uint64_t got = 0;
    fut_oneshot_recv_init(&r, &rx, &got);
    pthread_t th;
    ASSERT_EQ(pthread_create(&th, NULL, spawner_thread, &s), 0);
    ASSERT_EQ(fut_block_on(rt, &r.base), 0);
    pthread_join(th, NULL);
    ASSERT_EQ(s.rc, 0);
    ASSERT_EQ(r.result, 0);
    ASSERT_EQ(got, 7);
    fut_runtime_free(rt);
}
END_TEST

/* A remote thread wakes a task in a tight ping-pong: it bumps 'seq',
 * wakes the task's waker and waits for the task to acknowledge that
 * value. The task acknowledges, then spins a little before it returns
 * PENDING, so most wakes land while it is still running (its idle
 * transition races with the remote wake's, the window issue 35's
 * current-thread run path must keep atomic). A lost wake leaves the task
 * idle with 'seq' unacknowledged: the thread sees no acknowledgement
 * within 5 s, counts it in 'lost' and ends the task with a last wake. */
#define PINGPONG_ROUNDS 20000

struct pingpong {
    atomic_uint seq, ack;
    atomic_int have_waker, lost;
    struct fut_waker waker; /* the task's; written before have_waker */
};

struct pingpong_task {
    struct fut_future base;
    struct pingpong *pp;
};

static int pingpong_poll(struct fut_future *f, struct fut_context *cx)
{
    struct pingpong *pp = ((struct pingpong_task *)f)->pp;
    if (!atomic_load(&pp->have_waker)) {
        pp->waker = fut_waker_clone(&cx->waker);
        atomic_store(&pp->have_waker, 1);
    }
    unsigned v = atomic_load(&pp->seq);
    atomic_store(&pp->ack, v);
    if (v >= PINGPONG_ROUNDS)
        return FUT_READY;
    for (volatile int i = 0; i < (int)(v % 64); i++)
        ; /* widens the window between the ack and the idle transition */
    return FUT_PENDING;
}
static const struct fut_future_vtable pingpong_vt = {pingpong_poll, NULL,
                                                     "pingpong", NULL};

static void *pingpong_thread(void *arg)
{
    struct pingpong *pp = arg;
    while (!atomic_load(&pp->have_waker))
        sched_yield();
    for (unsigned i = 1; i <= PINGPONG_ROUNDS; i++) {
        atomic_store(&pp->seq, i);
        fut_waker_wake_by_ref(&pp->waker);
        int64_t t0 = fut_now_ns();
        for (int spin = 0; atomic_load(&pp->ack) != i; spin++) {
            if (spin > 200) /* a loaded machine, valgrind: let it run */
                sched_yield();
            if (fut_now_ns() - t0 > 5000000000) { /* the wake was lost */
                atomic_fetch_add(&pp->lost, 1);
                atomic_store(&pp->seq, PINGPONG_ROUNDS);
                fut_waker_wake_by_ref(&pp->waker);
                fut_waker_drop(&pp->waker);
                return NULL;
            }
        }
    }
    fut_waker_drop(&pp->waker);
    return NULL;
}

START_TEST(remote_wake_pingpong)
{
    struct fut_runtime *rt = fut_test_rt();
    struct pingpong pp;
    memset(&pp, 0, sizeof pp);
    struct pingpong_task t;
    fut_future_init(&t.base, &pingpong_vt);
    t.pp = &pp;
    struct fut_join j;
    ASSERT_EQ(fut_spawn(rt, &t, sizeof t, &j), 0);
    pthread_t th;
    ASSERT_EQ(pthread_create(&th, NULL, pingpong_thread, &pp), 0);
    ASSERT_EQ(fut_block_on(rt, &j.base), 0);
    pthread_join(th, NULL);
    ASSERT_EQ(atomic_load(&pp.lost), 0);
    ASSERT_EQ(atomic_load(&pp.ack), PINGPONG_ROUNDS);
    fut_drop(&j.base);
    fut_runtime_free(rt);
}
END_TEST

START_TEST(block_on_without_runtime)
{
    struct sender_arg s;
    struct fut_oneshot_rx rx;
    ASSERT_EQ(fut_oneshot_new(8, NULL, &s.tx, &rx), 0);
    s.value = 55;
    s.delay_ms = 5;
    struct fut_oneshot_recv r;
    uint64_t got = 0;
    fut_oneshot_recv_init(&r, &rx, &got);
    pthread_t th;
    ASSERT_EQ(pthread_create(&th, NULL, sender_thread, &s), 0);
    ASSERT_EQ(fut_block_on(NULL, &r.base), 0); /* parks on a futex */
    pthread_join(th, NULL);
    ASSERT_EQ(got, 55);
}
END_TEST

/* block_on from inside a poll of the same runtime is refused. */
struct nested {
    struct fut_future base;
    int rc;
};
static int nested_poll(struct fut_future *f, struct fut_context *cx)
{
    struct nested *n = (struct nested *)f;
    struct fut_yield y;
    (void)cx;
    fut_yield_init(&y);
    n->rc = fut_block_on(fut_runtime_current(), &y.base);
    return FUT_READY;
}
static const struct fut_future_vtable nested_vt = {nested_poll, NULL,
                                                   "nested", NULL};

START_TEST(block_on_nested_is_busy)
{
    struct fut_runtime *rt = fut_test_rt();
    struct nested n;
    fut_future_init(&n.base, &nested_vt);
    n.rc = 0;
    ASSERT_EQ(fut_block_on(rt, &n.base), 0);
    ASSERT_EQ(n.rc, FUT_EBUSY);
    fut_runtime_free(rt);
}
END_TEST

/* ------------------------------------------------------------ shutdown */

START_TEST(shutdown_drops_every_task)
{
    struct fut_runtime *rt = fut_test_rt();
    enum { N = 200 };
    int drops = 0;
    /* Tasks waiting forever, tasks waiting on channels whose senders are
     * held by other tasks (dropping those wakes the receivers during the
     * shutdown), and a handle that outlives the runtime. */
    for (int i = 0; i < N; i++) {
        struct fut_oneshot_tx tx;
        struct fut_oneshot_rx rx;
        ASSERT_EQ(fut_oneshot_new(8, NULL, &tx, &rx), 0);
        struct recv_task t;
        recv_task_init(&t, &rx, &drops);
        ASSERT_EQ(fut_spawn(rt, &t, sizeof t, NULL), 0);
        struct send_seven holder; /* never polled: dropped at shutdown */
        fut_future_init(&holder.base, &send_seven_vt);
        holder.tx = tx;
        ASSERT_EQ(fut_spawn(rt, &holder, sizeof holder, NULL), 0);
    }
    int cdrops = 0;
    struct counting_future forever;
    counting_future_init(&forever, 1 << 30, 0, NULL, &cdrops, 0);
    struct fut_join kept;
    ASSERT_EQ(fut_spawn(rt, &forever, sizeof forever, &kept), 0);
    fut_runtime_free(rt); /* some tasks never even ran */
    ASSERT_EQ(cdrops, 1);
    /* The runtime never ran: every receiver was dropped, none polled -
     * including those a sender's drop woke during the shutdown. */
    ASSERT_EQ(drops, N);
    ASSERT_EQ(fut_join_is_finished(&kept), 1);
    struct fut_context cx;
    fut_context_init(&cx, fut_waker_noop());
    ASSERT_EQ(fut_poll(&kept.base, &cx), FUT_READY);
    ASSERT_EQ(kept.result, FUT_ECANCELED);
    fut_drop(&kept.base); /* frees the last of the runtime's memory */
}
END_TEST

/* Its drop tries to spawn: during shutdown that must be refused. */
struct spawn_on_drop {
    struct fut_future base;
    int *rc;
};
static void spawn_on_drop_drop(struct fut_future *f)
{
    struct counting_future cf;
    counting_future_init(&cf, 0, 0, NULL, NULL, 0);
    *((struct spawn_on_drop *)f)->rc = fut_spawn(NULL, &cf, sizeof cf, NULL);
}
static const struct fut_future_vtable spawn_on_drop_vt = {
    NULL, spawn_on_drop_drop, "spawn_on_drop", NULL};

START_TEST(spawn_during_shutdown_refused)
{
    struct fut_runtime *rt = fut_test_rt();
    int rc = 1;
    struct spawn_on_drop s;
    fut_future_init(&s.base, &spawn_on_drop_vt);
    s.rc = &rc;
    ASSERT_EQ(fut_spawn(rt, &s, sizeof s, NULL), 0);
    fut_runtime_free(rt); /* drops the never-polled task */
    ASSERT_EQ(rc, FUT_ESHUTDOWN);
}
END_TEST

/* ------------------------------------------------- debug checks C6, C7 */

#ifdef FUT_DEBUG
static int never_woken_reports, slow_reports;
static void count_reports(void *ud, const char *kind, const char *msg)
{
    (void)ud;
    (void)msg;
    if (strcmp(kind, "never-woken") == 0)
        never_woken_reports++;
    if (strcmp(kind, "slow-poll") == 0)
        slow_reports++;
}

/* Returns PENDING without registering the waker: a C7 violation. */
struct forgetful {
    struct fut_future base;
    int polls;
};
static int forgetful_poll(struct fut_future *f, struct fut_context *cx)
{
    (void)cx;
    return ++((struct forgetful *)f)->polls > 1 ? FUT_READY : FUT_PENDING;
}
static const struct fut_future_vtable forgetful_vt = {forgetful_poll, NULL,
                                                      "forgetful", NULL};

START_TEST(c7_pending_without_waker_reported)
{
    never_woken_reports = 0;
    fut_set_report_hook(count_reports, NULL);
    struct fut_runtime *rt = fut_test_rt();
    struct forgetful f;
    fut_future_init(&f.base, &forgetful_vt);
    f.polls = 0;
    ASSERT_EQ(fut_spawn(rt, &f, sizeof f, NULL), 0);
    /* A well-behaved waiter is not reported. */
    struct fut_oneshot_tx tx;
    struct fut_oneshot_rx rx;
    ASSERT_EQ(fut_oneshot_new(8, NULL, &tx, &rx), 0);
    struct recv_task t;
    recv_task_init(&t, &rx, NULL);
    ASSERT_EQ(fut_spawn(rt, &t, sizeof t, NULL), 0);
    fut_test_run_pending(rt);
    ASSERT_EQ(never_woken_reports, 1);
    fut_oneshot_tx_drop(&tx);
    fut_runtime_free(rt);
    fut_set_report_hook(NULL, NULL);
}
END_TEST

struct sleepy {
    struct fut_future base;
};
static int sleepy_poll(struct fut_future *f, struct fut_context *cx)
{
    (void)f;
    (void)cx;
    struct timespec ts = {0, 20 * 1000000L}; /* blocks: a C6 violation */
    nanosleep(&ts, NULL);
    return FUT_READY;
}
static const struct fut_future_vtable sleepy_vt = {sleepy_poll, NULL,
                                                   "sleepy", NULL};

START_TEST(c6_slow_poll_reported)
{
    slow_reports = 0;
    fut_set_report_hook(count_reports, NULL);
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    cfg.slow_poll_ns = 5 * 1000 * 1000;
    struct fut_runtime *rt;
    ASSERT_EQ(fut_runtime_new(&cfg, &rt), 0);
    struct sleepy s;
    fut_future_init(&s.base, &sleepy_vt);
    struct fut_join j;
    ASSERT_EQ(fut_spawn(rt, &s, sizeof s, &j), 0);
    ASSERT_EQ(fut_block_on(rt, &j.base), 0);
    ASSERT_EQ(slow_reports, 1);
    fut_drop(&j.base);
    fut_runtime_free(rt);
    fut_set_report_hook(NULL, NULL);
}
END_TEST
#endif

/* ----------------------------------------------------- async functions */

struct yielder {
    struct fut_future base;
    int i, n;
};
static int yielder_poll(struct fut_future *f, struct fut_context *cx)
{
    struct yielder *y = (struct yielder *)f;
    FUT_BEGIN(f);
    for (y->i = 0; y->i < y->n; y->i++)
        FUT_YIELD(f);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(yielder_vt, "yielder", yielder_poll, NULL);

START_TEST(async_yield_interleaves)
{
    struct fut_runtime *rt = fut_test_rt();
    struct yielder a, b;
    fut_future_init(&a.base, &yielder_vt);
    fut_future_init(&b.base, &yielder_vt);
    a.n = 100;
    b.n = 100;
    struct fut_join ja, jb;
    ASSERT_EQ(fut_spawn(rt, &a, sizeof a, &ja), 0);
    ASSERT_EQ(fut_spawn(rt, &b, sizeof b, &jb), 0);
    ASSERT_EQ(fut_block_on(rt, &jb.base), 0);
    ASSERT_EQ(fut_join_is_finished(&ja), 1); /* FIFO: a ran alongside */
    struct fut_rt_stats st;
    fut_runtime_stats(rt, &st);
    ASSERT_EQ(st.polls, 202);
    fut_drop(&ja.base);
    fut_drop(&jb.base);
    fut_runtime_free(rt);
}
END_TEST

START_TEST(waker_noop_and_will_wake)
{
    struct fut_waker a = fut_waker_noop();
    struct fut_waker b = fut_waker_clone(&a);
    ASSERT_TRUE(fut_waker_will_wake(&a, &b));
    fut_waker_wake_by_ref(&b);
    fut_waker_wake(&b); /* consumes */
    ASSERT_EQ(fut_waker_is_set(&b), 0);
    struct fut_waker slot = FUT_WAKER_NONE;
    fut_waker_set(&slot, &a);
    ASSERT_TRUE(fut_waker_will_wake(&slot, &a));
    fut_waker_drop(&slot);
    ASSERT_EQ(fut_waker_is_set(&slot), 0);
    ASSERT_TRUE(strcmp(fut_err_name(FUT_ECLOSED), "FUT_ECLOSED") == 0);
    ASSERT_TRUE(strcmp(fut_err_name(FUT_ETIMEDOUT), "ETIMEDOUT") == 0);
    ASSERT_TRUE(fut_strerror(FUT_ELAGGED) != NULL);
}
END_TEST

/* ------------------------------------------------------------- version */

START_TEST(version_linked_is_headers)
{
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", FUT_VERSION_MAJOR,
             FUT_VERSION_MINOR, FUT_VERSION_PATCH);
    ASSERT_EQ(fut_version(), (unsigned)FUT_VERSION_HEX);
    ASSERT_EQ(FUT_VERSION_HEX, (FUT_VERSION_MAJOR << 16) |
                                   (FUT_VERSION_MINOR << 8) |
                                   FUT_VERSION_PATCH);
    ASSERT_TRUE(strcmp(FUT_VERSION_STRING, want) == 0);
    ASSERT_TRUE(strcmp(fut_version_string(), want) == 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("core_task");
    TCase *tc = fut_test_tcase(s, "spawn");
    tcase_add_test(tc, spawn_join_output);
    tcase_add_test(tc, spawn_detached_runs);
    tcase_add_test(tc, spawn_respects_alignment);
    tcase_add_test(tc, spawn_bad_input);
    tcase_add_test(tc, c10_wake_while_running_reschedules_once);
    tc = fut_test_tcase(s, "cancel");
    tcase_add_test(tc, c11_join_drop_cancels);
    tcase_add_test(tc, c11_abort_idle_drops_at_once);
    tcase_add_test(tc, c11_abort_running_drops_after_poll);
    tcase_add_test(tc, c11_drop_parent_drops_child);
    tcase_add_test(tc, detach_lets_task_finish);
    tc = fut_test_tcase(s, "coop");
    tcase_add_test(tc, coop_budget_yields);
    tcase_add_test(tc, async_yield_interleaves);
    tc = fut_test_tcase(s, "threads");
    tcase_add_test(tc, wake_from_foreign_thread);
    tcase_add_test(tc, spawn_from_foreign_thread);
    tcase_add_test(tc, remote_wake_pingpong);
    tcase_add_test(tc, block_on_without_runtime);
    tcase_add_test(tc, block_on_nested_is_busy);
    tc = fut_test_tcase(s, "shutdown");
    tcase_add_test(tc, shutdown_drops_every_task);
    tcase_add_test(tc, spawn_during_shutdown_refused);
    tc = fut_test_tcase(s, "waker");
    tcase_add_test(tc, waker_noop_and_will_wake);
#ifdef FUT_DEBUG
    tc = fut_test_tcase(s, "debug_checks");
    tcase_add_test(tc, c7_pending_without_waker_reported);
    tcase_add_test(tc, c6_slow_poll_reported);
#endif
    tc = fut_test_tcase(s, "version");
    tcase_add_test(tc, version_linked_is_headers);
    return fut_test_run(s);
}
