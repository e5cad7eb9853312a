/* SPDX-License-Identifier: MIT */
/* The write-once cell and the oneshot: contracts C1-C5 (DESIGN.md),
 * single-threaded semantics first, then races on real threads. The
 * exhaustive interleaving proofs are in test/mc; these tests run the real
 * build (and its TSan variant) on real hardware. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "test.h"

/* A waker that counts wakes, clones and drops (atomic: any thread). */
struct wake_counter {
    atomic_int wakes;
    atomic_int live; /* clones not yet dropped */
};

static struct fut_waker wc_clone(const void *data);
static void wc_wake_by_ref(const void *data)
{
    atomic_fetch_add(&((struct wake_counter *)data)->wakes, 1);
}
static void wc_drop(const void *data)
{
    atomic_fetch_sub(&((struct wake_counter *)data)->live, 1);
}
static void wc_wake(const void *data)
{
    wc_wake_by_ref(data);
    wc_drop(data);
}
static const struct fut_waker_vtable wc_vt = {wc_clone, wc_wake,
                                              wc_wake_by_ref, wc_drop};
static struct fut_waker wc_clone(const void *data)
{
    atomic_fetch_add(&((struct wake_counter *)data)->live, 1);
    struct fut_waker w = {data, &wc_vt};
    return w;
}

static void wc_context(struct fut_context *cx, struct wake_counter *wc)
{
    atomic_init(&wc->wakes, 0);
    atomic_init(&wc->live, 0);
    struct fut_waker w = {wc, &wc_vt}; /* borrowed by the context */
    fut_context_init(cx, w);
}

/* ------------------------------------------------ C1-C4, one thread */

START_TEST(c1_states_pending_ready_taken)
{
    struct fut_cell c;
    uint64_t slot, out = 0, v = 42;
    fut_cell_init(&c, &slot, sizeof slot);
    ASSERT_EQ(fut_cell_is_complete(&c), 0);
    ASSERT_EQ(fut_cell_take(&c, &out), FUT_EAGAIN); /* PENDING */
    ASSERT_EQ(fut_cell_complete(&c, &v), 0);        /* -> READY */
    ASSERT_EQ(fut_cell_is_complete(&c), 1);
    ASSERT_EQ(fut_cell_take(&c, &out), 1); /* -> TAKEN */
    ASSERT_EQ(out, 42);
    ASSERT_EQ(fut_cell_take(&c, &out), 0);           /* absent, not error */
    ASSERT_EQ(fut_cell_complete(&c, &v), FUT_ELOST); /* write-once */
}
END_TEST

START_TEST(c2_loser_keeps_value)
{
    struct fut_cell c;
    char slot[16], out[16];
    char a[16] = "first", b[16] = "second";
    fut_cell_init(&c, slot, sizeof slot);
    ASSERT_EQ(fut_cell_complete(&c, a), 0);
    ASSERT_EQ(fut_cell_complete(&c, b), FUT_ELOST);
    ASSERT_EQ(strcmp(b, "second"), 0); /* the loser's value untouched */
    ASSERT_EQ(fut_cell_take(&c, out), 1);
    ASSERT_EQ(strcmp(out, "first"), 0); /* nothing overwritten */
}
END_TEST

START_TEST(c5_poll_registers_then_wakes)
{
    struct fut_cell c;
    uint64_t slot, out = 0, v = 7;
    int got = -1;
    struct wake_counter wc;
    struct fut_context cx;
    wc_context(&cx, &wc);
    fut_cell_init(&c, &slot, sizeof slot);
    ASSERT_EQ(fut_cell_poll(&c, &cx, &out, &got), FUT_PENDING);
    ASSERT_EQ(atomic_load(&wc.live), 1); /* a clone is registered */
    ASSERT_EQ(fut_cell_poll(&c, &cx, &out, &got), FUT_PENDING);
    ASSERT_EQ(atomic_load(&wc.live), 1); /* will_wake: not re-cloned */
    ASSERT_EQ(fut_cell_complete(&c, &v), 0);
    ASSERT_EQ(atomic_load(&wc.wakes), 1); /* woken exactly once */
    ASSERT_EQ(atomic_load(&wc.live), 0);  /* wake consumed the clone */
    ASSERT_EQ(fut_cell_poll(&c, &cx, &out, &got), FUT_READY);
    ASSERT_EQ(got, 1);
    ASSERT_EQ(out, 7);
    ASSERT_EQ(fut_cell_poll(&c, &cx, &out, &got), FUT_READY); /* C8 */
    ASSERT_EQ(got, 0);
}
END_TEST

START_TEST(c5_rewake_with_other_waker)
{
    struct fut_cell c;
    uint64_t slot, out = 0, v = 9;
    int got;
    struct wake_counter w1, w2;
    struct fut_context cx1, cx2;
    wc_context(&cx1, &w1);
    wc_context(&cx2, &w2);
    fut_cell_init(&c, &slot, sizeof slot);
    ASSERT_EQ(fut_cell_poll(&c, &cx1, &out, &got), FUT_PENDING);
    ASSERT_EQ(fut_cell_poll(&c, &cx2, &out, &got), FUT_PENDING);
    ASSERT_EQ(atomic_load(&w1.live), 0); /* the old waker was dropped */
    ASSERT_EQ(atomic_load(&w2.live), 1);
    ASSERT_EQ(fut_cell_complete(&c, &v), 0);
    ASSERT_EQ(atomic_load(&w1.wakes), 0);
    ASSERT_EQ(atomic_load(&w2.wakes), 1); /* the latest waker is woken */
}
END_TEST

START_TEST(cell_close_refuses_completion)
{
    struct fut_cell c;
    uint64_t slot, out, v = 1;
    int got;
    struct wake_counter wc;
    struct fut_context cx;
    wc_context(&cx, &wc);
    fut_cell_init(&c, &slot, sizeof slot);
    ASSERT_EQ(fut_cell_poll(&c, &cx, &out, &got), FUT_PENDING);
    ASSERT_EQ(fut_cell_close(&c), 0);    /* nothing published */
    ASSERT_EQ(atomic_load(&wc.live), 0); /* registered waker dropped */
    ASSERT_EQ(fut_cell_complete(&c, &v), FUT_ECLOSED);
    ASSERT_EQ(atomic_load(&wc.wakes), 0);
    /* Close after publish: the closer learns it owns the bytes. */
    fut_cell_init(&c, &slot, sizeof slot);
    ASSERT_EQ(fut_cell_complete(&c, &v), 0);
    ASSERT_EQ(fut_cell_close(&c), 1);
}
END_TEST

/* ------------------------------------------------------------- oneshot */

static int dtor_calls;
static void count_dtor(void *v)
{
    (void)v;
    dtor_calls++;
}

START_TEST(oneshot_send_recv)
{
    struct fut_oneshot_tx tx;
    struct fut_oneshot_rx rx;
    ASSERT_EQ(fut_oneshot_new(sizeof(uint64_t), NULL, &tx, &rx), 0);
    uint64_t v = 5, out = 0;
    ASSERT_EQ(fut_oneshot_try_recv(&rx, &out), FUT_EEMPTY);
    ASSERT_EQ(fut_oneshot_send(&tx, &v), 0);
    ASSERT_TRUE(tx.ch == NULL); /* consumed */
    ASSERT_EQ(fut_oneshot_try_recv(&rx, &out), 0);
    ASSERT_EQ(out, 5);
    ASSERT_TRUE(rx.ch == NULL);
}
END_TEST

START_TEST(oneshot_sender_drop_closes)
{
    struct fut_oneshot_tx tx;
    struct fut_oneshot_rx rx;
    ASSERT_EQ(fut_oneshot_new(8, NULL, &tx, &rx), 0);
    struct fut_oneshot_recv r;
    uint64_t out;
    fut_oneshot_recv_init(&r, &rx, &out);
    struct wake_counter wc;
    struct fut_context cx;
    wc_context(&cx, &wc);
    ASSERT_EQ(fut_poll(&r.base, &cx), FUT_PENDING);
    fut_oneshot_tx_drop(&tx);
    ASSERT_EQ(atomic_load(&wc.wakes), 1);
    ASSERT_EQ(fut_poll(&r.base, &cx), FUT_READY);
    ASSERT_EQ(r.result, FUT_ECLOSED);
    ASSERT_EQ(fut_poll(&r.base, &cx), FUT_READY); /* C8: same result */
    ASSERT_EQ(r.result, FUT_ECLOSED);
    fut_drop(&r.base);
    ASSERT_EQ(atomic_load(&wc.live), 0);
}
END_TEST

START_TEST(oneshot_receiver_gone_hands_value_back)
{
    struct fut_oneshot_tx tx;
    struct fut_oneshot_rx rx;
    dtor_calls = 0;
    ASSERT_EQ(fut_oneshot_new(8, count_dtor, &tx, &rx), 0);
    ASSERT_EQ(fut_oneshot_tx_is_closed(&tx), 0);
    fut_oneshot_rx_drop(&rx);
    ASSERT_EQ(fut_oneshot_tx_is_closed(&tx), 1);
    uint64_t v = 3;
    ASSERT_EQ(fut_oneshot_send(&tx, &v), FUT_ECLOSED);
    ASSERT_EQ(dtor_calls, 0); /* still the caller's: not destroyed */
}
END_TEST

START_TEST(oneshot_unreceived_value_destroyed)
{
    struct fut_oneshot_tx tx;
    struct fut_oneshot_rx rx;
    dtor_calls = 0;
    ASSERT_EQ(fut_oneshot_new(8, count_dtor, &tx, &rx), 0);
    uint64_t v = 3;
    ASSERT_EQ(fut_oneshot_send(&tx, &v), 0);
    fut_oneshot_rx_drop(&rx);
    ASSERT_EQ(dtor_calls, 1); /* delivered, never received: destroyed */
}
END_TEST

START_TEST(oneshot_recv_drop_at_pending)
{
    /* cancel-safe: dropping the receive future drops the receiver; the
     * sender is told and keeps its value. */
    struct fut_oneshot_tx tx;
    struct fut_oneshot_rx rx;
    ASSERT_EQ(fut_oneshot_new(8, NULL, &tx, &rx), 0);
    struct fut_oneshot_recv r;
    uint64_t out;
    fut_oneshot_recv_init(&r, &rx, &out);
    struct wake_counter wc;
    struct fut_context cx;
    wc_context(&cx, &wc);
    ASSERT_EQ(fut_poll(&r.base, &cx), FUT_PENDING);
    fut_drop(&r.base);
    ASSERT_EQ(atomic_load(&wc.live), 0); /* waker unregistered (C11) */
    uint64_t v = 1;
    ASSERT_EQ(fut_oneshot_send(&tx, &v), FUT_ECLOSED);
}
END_TEST

/* An allocator hook that refuses every allocation. */
static void *refuse_all(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud;
    (void)osize;
    if (nsize == 0)
        free(ptr);
    return NULL;
}

START_TEST(oneshot_new_enomem)
{
    long before = fut_alloc_live();
    struct fut_oneshot_tx tx;
    struct fut_oneshot_rx rx;
    fut_set_allocator(refuse_all, NULL);
    ASSERT_EQ(fut_oneshot_new(8, NULL, &tx, &rx), FUT_ENOMEM);
    fut_set_allocator(NULL, NULL);
    ASSERT_TRUE(tx.ch == NULL && rx.ch == NULL);
    ASSERT_EQ(fut_alloc_live(), before);
}
END_TEST

/* --------------------------------------------------- races, real threads
 *
 * Two threads meet at a spinning barrier before every iteration, so each
 * iteration is a fresh race on a fresh cell, 10^6 times (10^5 in TSan). */

#define RACE_ITERS TEST_ITERS(1000000, 100000)

struct race {
    atomic_uint gen;     /* bumped by the leader to start an iteration */
    atomic_uint arrived; /* followers that finished the iteration */
    struct fut_cell cell;
    uint64_t slot;
    int results[2];
    uint64_t outs[2];
    struct wake_counter wc;
    long failures;
};

/* Spins, yielding the CPU now and then: the machine may have fewer free
 * cores than spinning threads. */
static void spin_until(atomic_uint *a, unsigned v)
{
    for (unsigned n = 0; atomic_load_explicit(a, memory_order_acquire) != v;
         n++)
        if ((n & 255) == 255)
            sched_yield();
}

enum race_kind { COMPLETE_VS_POLL, COMPLETE_VS_COMPLETE, TAKE_VS_TAKE };

struct racer {
    struct race *r;
    int id;
    enum race_kind kind;
};

/* Consumer side of COMPLETE_VS_POLL: poll; if PENDING, the completion
 * must wake us (C5); then poll again and find the value. */
static void poll_side(struct race *r)
{
    struct fut_context cx;
    struct fut_waker w = {&r->wc, &wc_vt};
    fut_context_init(&cx, w);
    int got = 0;
    uint64_t out = 0;
    if (fut_cell_poll(&r->cell, &cx, &out, &got) == FUT_PENDING) {
        /* Bounded wait for the wake: a lost wakeup is a failure, not a
         * hang. */
        for (long spins = 0; atomic_load(&r->wc.wakes) == 0; spins++) {
            if ((spins & 255) == 255)
                sched_yield();
            if (spins > 100000000L) {
                r->failures++;
                return;
            }
        }
        if (fut_cell_poll(&r->cell, &cx, &out, &got) != FUT_READY) {
            r->failures++;
            return;
        }
    }
    if (got != 1 || out != 0xabcdef) /* C4: the whole value */
        r->failures++;
}

/* Shifts the two racers against each other by a pseudo-random number
 * of spins per iteration: the follower sees the start signal a cache
 * miss late, so without this their critical windows would rarely meet. */
static void jitter(unsigned i, int id)
{
    unsigned h = (i * 2654435761u) ^ (unsigned)(id * 40503);
    h ^= h >> 15;
    for (volatile unsigned n = h % 512; n > 0; n--)
        ;
}

static void race_step(struct racer *me, unsigned i)
{
    jitter(i, me->id);
    struct race *r = me->r;
    uint64_t v = (uint64_t)me->id + 1;
    (void)i;
    switch (me->kind) {
    case COMPLETE_VS_POLL:
        if (me->id == 0) {
            v = 0xabcdef;
            r->results[0] = fut_cell_complete(&r->cell, &v);
        } else {
            poll_side(r);
        }
        break;
    case COMPLETE_VS_COMPLETE:
        r->results[me->id] = fut_cell_complete(&r->cell, &v);
        break;
    case TAKE_VS_TAKE:
        r->results[me->id] = fut_cell_take(&r->cell, &r->outs[me->id]);
        break;
    }
}

/* The second racer; the test's own thread is the first. */
static void *follower(void *arg)
{
    struct racer *me = arg;
    struct race *r = me->r;
    for (unsigned i = 1; i <= RACE_ITERS; i++) {
        spin_until(&r->gen, i);
        race_step(me, i);
        atomic_store_explicit(&r->arrived, i, memory_order_release);
    }
    return NULL;
}

static void check_iteration(struct race *r, enum race_kind kind)
{
    uint64_t out = 0;
    switch (kind) {
    case COMPLETE_VS_POLL:
        if (r->results[0] != 0 || atomic_load(&r->wc.live) != 0)
            r->failures++;
        break;
    case COMPLETE_VS_COMPLETE: {
        /* C2: exactly one winner, the loser told FUT_ELOST. */
        int w0 = r->results[0] == 0, w1 = r->results[1] == 0;
        int l0 = r->results[0] == FUT_ELOST, l1 = r->results[1] == FUT_ELOST;
        if (!((w0 && l1) || (w1 && l0)))
            r->failures++;
        if (fut_cell_take(&r->cell, &out) != 1 || out != (w0 ? 1u : 2u))
            r->failures++;
        break;
    }
    case TAKE_VS_TAKE: {
        /* C3: one value, one "absent". */
        int g0 = r->results[0] == 1, g1 = r->results[1] == 1;
        int a0 = r->results[0] == 0, a1 = r->results[1] == 0;
        if (!((g0 && a1) || (g1 && a0)))
            r->failures++;
        if (r->outs[g0 ? 0 : 1] != 77)
            r->failures++;
        break;
    }
    }
}

static void run_race(enum race_kind kind)
{
    struct race r;
    memset(&r, 0, sizeof r);
    atomic_init(&r.gen, 0);
    atomic_init(&r.arrived, 0);
    struct racer a = {&r, 0, kind}, b = {&r, 1, kind};
    pthread_t tb;
    ASSERT_EQ(pthread_create(&tb, NULL, follower, &b), 0);
    for (unsigned i = 1; i <= RACE_ITERS; i++) {
        fut_cell_init(&r.cell, &r.slot, sizeof r.slot);
        atomic_store(&r.wc.wakes, 0);
        r.results[0] = r.results[1] = -1;
        r.outs[0] = r.outs[1] = 0;
        if (kind == TAKE_VS_TAKE) {
            uint64_t v = 77;
            fut_cell_complete(&r.cell, &v);
        }
        atomic_store_explicit(&r.gen, i, memory_order_release);
        race_step(&a, i);
        spin_until(&r.arrived, i);
        check_iteration(&r, kind);
    }
    pthread_join(tb, NULL);
    ck_assert_msg(r.failures == 0, "%ld of %d iterations broke the contract",
                  r.failures, RACE_ITERS);
}

START_TEST(c5_race_complete_vs_poll)
{
    run_race(COMPLETE_VS_POLL);
}
END_TEST

START_TEST(c2_race_complete_vs_complete)
{
    run_race(COMPLETE_VS_COMPLETE);
}
END_TEST

START_TEST(c3_race_take_vs_take)
{
    run_race(TAKE_VS_TAKE);
}
END_TEST

/* Oneshot across threads: a sender thread and a receiver polling with a
 * counting waker; every value arrives, every block is freed (leak
 * fixture), whichever side finishes last. */
struct os_race {
    struct fut_oneshot_tx tx;
    atomic_int go;
};

static void *os_sender(void *arg)
{
    struct os_race *o = arg;
    while (!atomic_load(&o->go))
        ;
    uint64_t v = 99;
    fut_oneshot_send(&o->tx, &v);
    return NULL;
}

START_TEST(oneshot_race_send_vs_poll)
{
    long failures = 0;
    for (int i = 0; i < TEST_ITERS(20000, 2000); i++) {
        struct os_race o;
        struct fut_oneshot_rx rx;
        ASSERT_EQ(fut_oneshot_new(8, NULL, &o.tx, &rx), 0);
        atomic_init(&o.go, 0);
        pthread_t t;
        ASSERT_EQ(pthread_create(&t, NULL, os_sender, &o), 0);
        struct fut_oneshot_recv r;
        uint64_t out = 0;
        fut_oneshot_recv_init(&r, &rx, &out);
        struct wake_counter wc;
        struct fut_context cx;
        wc_context(&cx, &wc);
        atomic_store(&o.go, 1);
        while (fut_poll(&r.base, &cx) == FUT_PENDING)
            while (atomic_load(&wc.wakes) == 0)
                sched_yield();
        pthread_join(t, NULL);
        if (r.result != 0 || out != 99 || atomic_load(&wc.live) != 0)
            failures++;
        fut_drop(&r.base);
    }
    ASSERT_EQ(failures, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("core_cell");
    TCase *tc = fut_test_tcase(s, "cell");
    tcase_add_test(tc, c1_states_pending_ready_taken);
    tcase_add_test(tc, c2_loser_keeps_value);
    tcase_add_test(tc, c5_poll_registers_then_wakes);
    tcase_add_test(tc, c5_rewake_with_other_waker);
    tcase_add_test(tc, cell_close_refuses_completion);
    tc = fut_test_tcase(s, "oneshot");
    tcase_add_test(tc, oneshot_send_recv);
    tcase_add_test(tc, oneshot_sender_drop_closes);
    tcase_add_test(tc, oneshot_receiver_gone_hands_value_back);
    tcase_add_test(tc, oneshot_unreceived_value_destroyed);
    tcase_add_test(tc, oneshot_recv_drop_at_pending);
    tcase_add_test(tc, oneshot_new_enomem);
    tc = fut_test_tcase(s, "race_complete_vs_poll");
    tcase_add_test(tc, c5_race_complete_vs_poll);
    tc = fut_test_tcase(s, "race_complete_vs_complete");
    tcase_add_test(tc, c2_race_complete_vs_complete);
    tc = fut_test_tcase(s, "race_take_vs_take");
    tcase_add_test(tc, c3_race_take_vs_take);
    tc = fut_test_tcase(s, "race_oneshot");
    tcase_add_test(tc, oneshot_race_send_vs_poll);
    return fut_test_run(s);
}
