/* SPDX-License-Identifier: MIT */
/* Helpers shared by the sync_* tests: a counting test waker for manual,
 * single-threaded polling, and a tiny thread pool whose threads drive
 * futures with fut_block_on(NULL, f) (the thread-parking block_on). */
#ifndef FUT_TEST_SYNC_UTIL_H
#define FUT_TEST_SYNC_UTIL_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "test.h"

/* ------------------------------------------------------- counting waker */

/* Counts wakes and live clones; for polls made by the test thread only. */
struct twaker {
    long wakes; /* wake + wake_by_ref calls */
    long refs;  /* clones alive (must be 0 at the end) */
};

static struct fut_waker twaker_clone(const void *d);
static void twaker_wake_by_ref(const void *d)
{
    ((struct twaker *)d)->wakes++;
}
static void twaker_drop(const void *d)
{
    ((struct twaker *)d)->refs--;
}
static void twaker_wake(const void *d)
{
    twaker_wake_by_ref(d);
    twaker_drop(d);
}
static const struct fut_waker_vtable twaker_vt = {
    twaker_clone, twaker_wake, twaker_wake_by_ref, twaker_drop};
static struct fut_waker twaker_clone(const void *d)
{
    ((struct twaker *)d)->refs++;
    struct fut_waker w = {d, &twaker_vt};
    return w;
}

static inline struct fut_context twaker_cx(struct twaker *t)
{
    struct fut_context cx;
    struct fut_waker w = {t, &twaker_vt};
    fut_context_init(&cx, w);
    return cx;
}

/* Polls 'f' once with the counting waker 't' and a spent coop budget:
 * a leaf future must then return PENDING, having woken 't' and changed
 * nothing (core.h's fut_coop_proceed contract). */
static inline int tpoll_no_budget(void *f, struct twaker *t)
{
    struct fut_context cx = twaker_cx(t);
    cx.budget = 0;
    return fut_poll(FUT_AS_FUTURE(f), &cx);
}

/* Polls 'f' once with the counting waker 't'. */
static inline int tpoll(void *f, struct twaker *t)
{
    struct fut_context cx = twaker_cx(t);
    return fut_poll(FUT_AS_FUTURE(f), &cx);
}

/* ------------------------------------------------------------- threads */

#define TPOOL_MAX 16

struct tpool {
    pthread_t th[TPOOL_MAX];
    int n;
};

/* The start gate: block_on_thread bodies wait for it, so the threads of a
 * pool start together (on a loaded machine, threads started one by one
 * may otherwise run one after the other and never contend). Closed by the
 * first tpool_start, opened by tpool_join. */
static atomic_int tgate_open;

static inline void tpool_start(struct tpool *p, void *(*fn)(void *),
                               void *arg)
{
    ck_assert_int_lt(p->n, TPOOL_MAX);
    if (p->n == 0)
        atomic_store(&tgate_open, 0);
    ck_assert_int_eq(pthread_create(&p->th[p->n], NULL, fn, arg), 0);
    p->n++;
}

static inline void tpool_join(struct tpool *p)
{
    atomic_store(&tgate_open, 1);
    for (int i = 0; i < p->n; i++)
        pthread_join(p->th[i], NULL);
    p->n = 0;
}

/* A thread body that runs the future 'arg' to completion with
 * fut_block_on(NULL, arg), once the pool's start gate opens. */
static inline void *block_on_thread(void *arg)
{
    while (!atomic_load(&tgate_open))
        sched_yield();
    fut_block_on(NULL, FUT_AS_FUTURE(arg));
    return NULL;
}

/* As block_on_thread, but starts at once (ahead of the gated threads). */
static inline void *block_on_thread_now(void *arg)
{
    fut_block_on(NULL, FUT_AS_FUTURE(arg));
    return NULL;
}

/* Cheap per-thread pseudo-random numbers (xorshift). */
static inline uint32_t xrand(uint32_t *s)
{
    uint32_t x = *s ? *s : 0x9e3779b9u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

/* ------------------------------------------------- drop at every PENDING */

/* Runs the drop-at-every-PENDING harness (fut/testing.h) over 'make',
 * failing the test on any failed run; at least 'min_pendings' PENDING
 * points must have been exercised (so the scenario really waits). */
static inline void run_harness(fut_harness_make_fn make,
                               fut_harness_check_fn check, void *ud,
                               long min_pendings)
{
    struct fut_harness h;
    fut_harness_init(&h, make, check, ud);
    int r = fut_harness_run(&h);
    ck_assert_msg(r == 0, "harness: %d (%s), first failure k=%ld: %s", r,
                  fut_err_name(r), h.first_failure, h.msg);
    ck_assert_msg(h.pendings >= min_pendings,
                  "only %ld PENDING points exercised", h.pendings);
    ck_assert_int_eq(h.runs, h.pendings + 1);
}

/* An async-function step that yields 'n' times: past the current-thread
 * scheduler's batch (61 ticks) when n >= 64, so the main future of a
 * block_on is polled in between. */
struct yield_n {
    struct fut_future base;
    struct fut_yield y;
    int left;
};

static int yield_n_poll(struct fut_future *f, struct fut_context *cx)
{
    struct yield_n *y = (struct yield_n *)f;
    while (y->left > 0) {
        if (fut_poll(&y->y.base, cx) == FUT_PENDING)
            return FUT_PENDING;
        y->left--;
        fut_yield_init(&y->y);
    }
    return FUT_READY;
}

static const struct fut_future_vtable yield_n_vt = {yield_n_poll, NULL,
                                                    "yield_n", NULL};

static inline void yield_n_init(struct yield_n *y, int n)
{
    fut_future_init(&y->base, &yield_n_vt);
    fut_yield_init(&y->y);
    y->left = n;
}

#endif /* FUT_TEST_SYNC_UTIL_H */
