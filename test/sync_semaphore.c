/* SPDX-License-Identifier: MIT */
/* The semaphore (include/fut/sync.h): acquire N, try_acquire, release,
 * add/forget, close; strict FIFO with partial grants; a dropped acquire
 * hands on what it was given (C11, C12: loses-position, nothing lost);
 * drop-at-every-PENDING; permits conserved under load across threads. */
#include <sched.h>
#include "sync_util.h"

START_TEST(basics)
{
    struct fut_semaphore s;
    fut_semaphore_init(&s, 3);
    ASSERT_EQ(fut_semaphore_available(&s), 3);
    struct fut_semaphore_permit a, b, z;
    ASSERT_EQ(fut_semaphore_try_acquire(&s, 2, &a), 0);
    ASSERT_EQ(a.n, 2);
    ASSERT_EQ(fut_semaphore_available(&s), 1);
    ASSERT_EQ(fut_semaphore_try_acquire(&s, 2, &b), FUT_EAGAIN);
    ASSERT_TRUE(b.sem == NULL);
    ASSERT_EQ(fut_semaphore_try_acquire(&s, 0, &z), 0); /* empty permit */
    ASSERT_EQ(fut_semaphore_release(&z), 0);
    ASSERT_EQ(fut_semaphore_release(&a), 0);
    ASSERT_EQ(fut_semaphore_release(&a), FUT_EINVAL); /* already given back */
    ASSERT_EQ(fut_semaphore_available(&s), 3);
    ASSERT_EQ(fut_semaphore_add_permits(&s, 2), 0);
    ASSERT_EQ(fut_semaphore_available(&s), 5);
    ASSERT_EQ(fut_semaphore_add_permits(&s, FUT_SEMAPHORE_MAX_PERMITS),
              FUT_EINVAL);
    ASSERT_EQ(fut_semaphore_available(&s), 5);
    ASSERT_EQ(fut_semaphore_try_acquire(&s, 5, &a), 0);
    fut_semaphore_forget(&a); /* gone for good */
    ASSERT_EQ(fut_semaphore_available(&s), 0);
    ASSERT_EQ(fut_semaphore_release(&a), FUT_EINVAL);
    /* n == 0 future: READY at once with an empty permit. */
    struct twaker w = {0, 0};
    struct fut_semaphore_acquire f;
    fut_semaphore_acquire_init(&f, &s, 0);
    ASSERT_EQ(tpoll(&f, &w), FUT_READY);
    ASSERT_EQ(f.result, 0);
    ASSERT_TRUE(f.permit.sem == NULL);
    fut_drop(&f.base);
    fut_semaphore_fini(&s);
}
END_TEST

/* Close: queued acquires complete with FUT_ECLOSED (permits partly
 * granted to them are returned), later ones fail at once; permits still
 * held can be released. */
START_TEST(close_wakes)
{
    struct fut_semaphore s;
    fut_semaphore_init(&s, 1);
    struct fut_semaphore_permit held;
    ASSERT_EQ(fut_semaphore_try_acquire(&s, 1, &held), 0);
    struct twaker w = {0, 0};
    struct fut_semaphore_acquire f;
    fut_semaphore_acquire_init(&f, &s, 3);
    ASSERT_EQ(tpoll(&f, &w), FUT_PENDING);
    ASSERT_EQ(fut_semaphore_add_permits(&s, 2), 0); /* partial grant: 2 */
    ASSERT_EQ(fut_semaphore_available(&s), 0);
    ASSERT_EQ(w.wakes, 0);
    ASSERT_TRUE(!fut_semaphore_is_closed(&s));
    fut_semaphore_close(&s);
    ASSERT_TRUE(fut_semaphore_is_closed(&s));
    ASSERT_EQ(w.wakes, 1);
    ASSERT_EQ(fut_semaphore_available(&s), 2); /* the partial grant back */
    ASSERT_EQ(tpoll(&f, &w), FUT_READY);
    ASSERT_EQ(f.result, FUT_ECLOSED);
    ASSERT_TRUE(f.permit.sem == NULL);
    fut_drop(&f.base);
    struct fut_semaphore_permit p;
    ASSERT_EQ(fut_semaphore_try_acquire(&s, 1, &p), FUT_ECLOSED);
    fut_semaphore_acquire_init(&f, &s, 1);
    ASSERT_EQ(tpoll(&f, &w), FUT_READY);
    ASSERT_EQ(f.result, FUT_ECLOSED);
    fut_drop(&f.base);
    ASSERT_EQ(fut_semaphore_release(&held), 0);
    ASSERT_EQ(fut_semaphore_available(&s), 3);
    fut_semaphore_close(&s); /* idempotent */
    fut_semaphore_fini(&s);
    ASSERT_EQ(w.refs, 0);
}
END_TEST

/* Strict FIFO: the head accumulates a partial grant and nobody behind
 * it is served first, not even a waiter that wants fewer permits; a
 * try_acquire does not barge past the queue. */
START_TEST(fifo_partial)
{
    struct fut_semaphore s;
    fut_semaphore_init(&s, 0);
    uintptr_t want[3] = {3, 1, 2};
    struct fut_semaphore_acquire f[3];
    struct twaker w[3] = {{0, 0}, {0, 0}, {0, 0}};
    for (int i = 0; i < 3; i++) {
        fut_semaphore_acquire_init(&f[i], &s, want[i]);
        ASSERT_EQ(tpoll(&f[i], &w[i]), FUT_PENDING);
    }
    struct fut_semaphore_permit p;
    ASSERT_EQ(fut_semaphore_add_permits(&s, 1), 0);
    ASSERT_EQ(w[0].wakes + w[1].wakes + w[2].wakes, 0); /* 1 of 3 to A */
    ASSERT_EQ(fut_semaphore_try_acquire(&s, 1, &p), FUT_EAGAIN);
    ASSERT_EQ(fut_semaphore_add_permits(&s, 2), 0);
    ASSERT_EQ(w[0].wakes, 1); /* A complete */
    ASSERT_EQ(w[1].wakes + w[2].wakes, 0);
    ASSERT_EQ(tpoll(&f[1], &w[1]), FUT_PENDING); /* B still waits */
    ASSERT_EQ(fut_semaphore_add_permits(&s, 3), 0);
    ASSERT_EQ(w[1].wakes, 1);
    ASSERT_EQ(w[2].wakes, 1);
    ASSERT_EQ(fut_semaphore_available(&s), 0);
    for (int i = 0; i < 3; i++) {
        ASSERT_EQ(tpoll(&f[i], &w[i]), FUT_READY);
        ASSERT_EQ(f[i].result, 0);
        ASSERT_EQ(f[i].permit.n, want[i]);
        /* Dropping after READY releases nothing: the permit is ours. */
        fut_drop(&f[i].base);
        ASSERT_EQ(fut_semaphore_available(&s), 0);
    }
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(fut_semaphore_release(&f[i].permit), 0);
    ASSERT_EQ(fut_semaphore_available(&s), 6);
    fut_semaphore_fini(&s);
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(w[i].refs, 0);
}
END_TEST

/* Fairness over many waiters: completions come in queueing order. */
START_TEST(fifo_order_many)
{
    enum { N = 50 };
    struct fut_semaphore s;
    fut_semaphore_init(&s, 0);
    static struct fut_semaphore_acquire f[N];
    static struct twaker w[N];
    for (int i = 0; i < N; i++) {
        memset(&w[i], 0, sizeof w[i]);
        fut_semaphore_acquire_init(&f[i], &s, 1 + (uintptr_t)(i % 3));
        ASSERT_EQ(tpoll(&f[i], &w[i]), FUT_PENDING);
    }
    int done = 0;
    while (done < N) {
        ASSERT_EQ(fut_semaphore_add_permits(&s, 1), 0);
        for (int i = 0; i < N; i++) {
            if (w[i].wakes && !fut_is_ready(&f[i].base)) {
                ASSERT_EQ(i, done); /* never out of order */
                ASSERT_EQ(tpoll(&f[i], &w[i]), FUT_READY);
                done++;
            }
        }
    }
    for (int i = 0; i < N; i++) {
        fut_semaphore_release(&f[i].permit);
        fut_drop(&f[i].base);
        ASSERT_EQ(w[i].refs, 0);
    }
    fut_semaphore_fini(&s);
}
END_TEST

/* Dropping a waiter hands on what it was given: a partial grant (queued
 * at the head) and a full grant it never observed. */
START_TEST(drop_hands_on)
{
    struct fut_semaphore s;
    fut_semaphore_init(&s, 0);
    struct fut_semaphore_acquire a, b, c;
    struct twaker wa = {0, 0}, wb = {0, 0}, wc = {0, 0};
    fut_semaphore_acquire_init(&a, &s, 2);
    fut_semaphore_acquire_init(&b, &s, 1);
    fut_semaphore_acquire_init(&c, &s, 1);
    ASSERT_EQ(tpoll(&a, &wa), FUT_PENDING);
    ASSERT_EQ(tpoll(&b, &wb), FUT_PENDING);
    ASSERT_EQ(tpoll(&c, &wc), FUT_PENDING);
    ASSERT_EQ(fut_semaphore_add_permits(&s, 1), 0); /* 1 of 2 to a */
    ASSERT_EQ(wb.wakes, 0);
    fut_drop(&a.base); /* its partial grant goes to b */
    ASSERT_EQ(wb.wakes, 1);
    ASSERT_EQ(wa.refs, 0);
    ASSERT_EQ(fut_semaphore_available(&s), 0);
    /* b was granted but never polled: its drop passes the permit to c. */
    fut_drop(&b.base);
    ASSERT_EQ(wc.wakes, 1);
    ASSERT_EQ(tpoll(&c, &wc), FUT_READY);
    ASSERT_EQ(c.result, 0);
    ASSERT_EQ(fut_semaphore_available(&s), 0);
    fut_drop(&c.base);
    ASSERT_EQ(fut_semaphore_release(&c.permit), 0);
    ASSERT_EQ(fut_semaphore_available(&s), 1);
    /* And a lone waiter's dropped grant returns to the semaphore. */
    struct fut_semaphore_permit p;
    ASSERT_EQ(fut_semaphore_try_acquire(&s, 1, &p), 0);
    fut_semaphore_acquire_init(&a, &s, 1);
    ASSERT_EQ(tpoll(&a, &wa), FUT_PENDING);
    ASSERT_EQ(fut_semaphore_release(&p), 0);
    ASSERT_EQ(fut_semaphore_available(&s), 0); /* granted to a */
    fut_drop(&a.base);
    ASSERT_EQ(fut_semaphore_available(&s), 1);
    fut_semaphore_fini(&s);
    ASSERT_EQ(wa.refs + wb.refs + wc.refs, 0);
}
END_TEST

/* Coop budget: a fresh acquire with the budget spent takes nothing. */
START_TEST(coop_budget)
{
    struct fut_semaphore s;
    fut_semaphore_init(&s, 2);
    struct twaker w = {0, 0};
    struct fut_semaphore_acquire f;
    fut_semaphore_acquire_init(&f, &s, 2);
    ASSERT_EQ(tpoll_no_budget(&f, &w), FUT_PENDING);
    ASSERT_EQ(w.wakes, 1);
    ASSERT_EQ(fut_semaphore_available(&s), 2);
    ASSERT_EQ(tpoll(&f, &w), FUT_READY);
    ASSERT_EQ(fut_semaphore_available(&s), 0);
    fut_semaphore_release(&f.permit);
    fut_drop(&f.base);
    fut_semaphore_fini(&s);
    ASSERT_EQ(w.refs, 0);
}
END_TEST

/* A waiter re-polled with a different waker: the new one is woken. */
START_TEST(waker_replaced)
{
    struct fut_semaphore s;
    fut_semaphore_init(&s, 0);
    struct fut_semaphore_acquire f;
    struct twaker w1 = {0, 0}, w2 = {0, 0};
    fut_semaphore_acquire_init(&f, &s, 1);
    ASSERT_EQ(tpoll(&f, &w1), FUT_PENDING);
    ASSERT_EQ(tpoll(&f, &w2), FUT_PENDING);
    ASSERT_EQ(w1.refs, 0);
    ASSERT_EQ(w2.refs, 1);
    ASSERT_EQ(fut_semaphore_add_permits(&s, 1), 0);
    ASSERT_EQ(w1.wakes, 0);
    ASSERT_EQ(w2.wakes, 1);
    ASSERT_EQ(tpoll(&f, &w2), FUT_READY);
    fut_semaphore_release(&f.permit);
    fut_drop(&f.base);
    fut_semaphore_fini(&s);
}
END_TEST

/* ----------------------------------------------- drop at every PENDING */

static struct fut_semaphore hsem;
static long other_done; /* acquisitions completed by the other task */

/* A task contending with the future under test: 3 times acquire 2,
 * hold across yields, release. */
struct contender {
    struct fut_future base;
    struct fut_semaphore_acquire a;
    struct yield_n y;
    int i;
};

static int contender_poll(struct fut_future *f, struct fut_context *cx)
{
    struct contender *c = (struct contender *)f;
    FUT_BEGIN(f);
    for (c->i = 0; c->i < 3; c->i++) {
        fut_semaphore_acquire_init(&c->a, &hsem, 2);
        FUT_AWAIT(f, &c->a);
        yield_n_init(&c->y, 70);
        FUT_AWAIT(f, &c->y);
        fut_semaphore_release(&c->a.permit);
        other_done++;
    }
    FUT_END(f);
}

static void contender_cleanup(struct fut_future *f)
{
    fut_semaphore_release(&((struct contender *)f)->a.permit);
}

FUT_ASYNC_VTABLE(contender_vt, "contender", contender_poll,
                 contender_cleanup);

/* The future under test: 3 times acquire 2 of the 3 permits, hold
 * across yields, release. */
struct taker {
    struct fut_future base;
    struct fut_semaphore_acquire a;
    struct yield_n y;
    int i;
};

static int taker_poll(struct fut_future *f, struct fut_context *cx)
{
    struct taker *t = (struct taker *)f;
    FUT_BEGIN(f);
    for (t->i = 0; t->i < 3; t->i++) {
        fut_semaphore_acquire_init(&t->a, &hsem, 2);
        FUT_AWAIT(f, &t->a);
        yield_n_init(&t->y, 70);
        FUT_AWAIT(f, &t->y);
        fut_semaphore_release(&t->a.permit);
    }
    FUT_END(f);
}

static void taker_cleanup(struct fut_future *f)
{
    fut_semaphore_release(&((struct taker *)f)->a.permit);
}

FUT_ASYNC_VTABLE(taker_vt, "taker", taker_poll, taker_cleanup);

static struct taker under;

static struct fut_future *make_taker(void *ud, struct fut_runtime *rt)
{
    (void)ud;
    fut_semaphore_init(&hsem, 3);
    other_done = 0;
    struct contender c;
    memset(&c, 0, sizeof c);
    fut_future_init(&c.base, &contender_vt);
    ck_assert_int_eq(fut_spawn(rt, &c, sizeof c, NULL), 0);
    memset(&under, 0, sizeof under);
    fut_future_init(&under.base, &taker_vt);
    return &under.base;
}

/* Nothing lost: every permit is back, and the contender (which competes
 * for the same permits) finished all its rounds - a grant the dropped
 * future had received was handed on to it. */
static int check_permits(void *ud, int k)
{
    (void)ud;
    (void)k;
    int ok = fut_semaphore_available(&hsem) == 3 && other_done == 3;
    fut_semaphore_fini(&hsem);
    return !ok;
}

START_TEST(drop_acquire)
{
    run_harness(make_taker, check_permits, NULL, 3);
}
END_TEST

/* ------------------------------------------------ permits under load */

#define TOTAL 5
static struct fut_semaphore lsem;
static atomic_long in_use; /* permits held right now */
static atomic_long over;   /* times 'in_use' exceeded TOTAL */

/* Acquires 1..3 permits 'n' times; a PENDING acquire is dropped half the
 * time and started again (loses-position: must hand on what it got). */
struct worker {
    struct fut_future base;
    struct fut_semaphore_acquire a;
    int active;
    uint32_t rng;
    uintptr_t want;
    long n, done, drops;
};

static int worker_poll(struct fut_future *f, struct fut_context *cx)
{
    struct worker *w = (struct worker *)f;
    while (w->done < w->n) {
        if (!w->active) {
            w->want = 1 + xrand(&w->rng) % 3;
            fut_semaphore_acquire_init(&w->a, &lsem, w->want);
            w->active = 1;
        }
        if (fut_poll(&w->a.base, cx) == FUT_PENDING) {
            if (xrand(&w->rng) & 1)
                return FUT_PENDING;
            fut_drop(&w->a.base);
            w->active = 0;
            w->drops++;
            continue;
        }
        long now = atomic_fetch_add(&in_use, (long)w->want) + (long)w->want;
        if (now > TOTAL)
            atomic_fetch_add(&over, 1);
        /* Now and then hold the permits across a yield of the CPU, so the
         * other threads find the semaphore short and wait (and drop) even
         * when the machine runs the threads one after another. */
        if ((w->done & 15) == 0)
            sched_yield();
        atomic_fetch_sub(&in_use, (long)w->want);
        fut_semaphore_release(&w->a.permit);
        fut_drop(&w->a.base);
        w->active = 0;
        w->done++;
    }
    return FUT_READY;
}

static void worker_drop(struct fut_future *f)
{
    struct worker *w = (struct worker *)f;
    if (w->active)
        fut_drop(&w->a.base);
}

static const struct fut_future_vtable worker_vt = {worker_poll, worker_drop,
                                                   "worker", NULL};

START_TEST(permits_under_load)
{
    enum { T = 4 };
    long per = TEST_ITERS(100000, 20000);
    fut_semaphore_init(&lsem, TOTAL);
    atomic_store(&in_use, 0);
    atomic_store(&over, 0);
    static struct worker w[T];
    struct tpool p = {.n = 0};
    for (int i = 0; i < T; i++) {
        memset(&w[i], 0, sizeof w[i]);
        fut_future_init(&w[i].base, &worker_vt);
        w[i].n = per;
        w[i].rng = (uint32_t)(i + 1) * 7919u;
        tpool_start(&p, block_on_thread, &w[i]);
    }
    tpool_join(&p);
    long drops = 0;
    for (int i = 0; i < T; i++) {
        ASSERT_EQ(w[i].done, per);
        drops += w[i].drops;
        fut_drop(&w[i].base);
    }
    ASSERT_EQ(atomic_load(&over), 0); /* never more than TOTAL held */
    ASSERT_EQ(fut_semaphore_available(&lsem), TOTAL); /* none lost */
    ck_assert_msg(drops > 0, "no acquire was dropped mid-wait");
    fut_semaphore_fini(&lsem);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sync_semaphore");
    TCase *tc = fut_test_tcase(s, "basic");
    tcase_add_test(tc, basics);
    tcase_add_test(tc, close_wakes);
    tcase_add_test(tc, fifo_partial);
    tcase_add_test(tc, fifo_order_many);
    tcase_add_test(tc, drop_hands_on);
    tcase_add_test(tc, waker_replaced);
    tcase_add_test(tc, coop_budget);
    tc = fut_test_tcase(s, "drop");
    tcase_add_test(tc, drop_acquire);
    tc = fut_test_tcase(s, "load");
    tcase_add_test(tc, permits_under_load);
    return fut_test_run(s);
}
