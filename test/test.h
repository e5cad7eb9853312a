/* SPDX-License-Identifier: MIT */
/* Shared test helpers (Check under CTest). Every test case runs with the
 * leak fixture: the allocator hook's live-block count must be back to its
 * start value when the case ends (libuv's MAKE_VALGRIND_HAPPY). */
#ifndef FUT_TEST_H
#define FUT_TEST_H

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fut.h"

#define ASSERT_EQ(a, b)                                                      \
    do {                                                                     \
        long long a_ = (long long)(a), b_ = (long long)(b);                  \
        ck_assert_msg(a_ == b_, "%s == %s failed: %lld vs %lld", #a, #b, a_, \
                      b_);                                                   \
    } while (0)
#define ASSERT_NE(a, b)                                                      \
    do {                                                                     \
        long long a_ = (long long)(a), b_ = (long long)(b);                  \
        ck_assert_msg(a_ != b_, "%s != %s failed: both %lld", #a, #b, a_);   \
    } while (0)
#define ASSERT_TRUE(e) ck_assert_msg((e), "expected true: %s", #e)

/* Iteration counts: sanitizer builds run fewer (TSan is ~10x slower). */
#if defined(FUT_TEST_TSAN)
#define TEST_ITERS(plain, tsan) (tsan)
#else
#define TEST_ITERS(plain, tsan) (plain)
#endif

/* Creates the runtime a parameterised test runs on: current-thread, or
 * multi-thread with 2 workers when the environment has FUT_TEST_RT=mt
 * (ctest registers such cases twice: <area>.<case> and <area>.<case>.mt).
 * Aborts the test if creation fails. */
struct fut_runtime *fut_test_rt(void);
/* Lets 'rt' run the tasks that are ready: block_on of a future that
 * yields a number of times (enough for remote queues to drain). */
void fut_test_run_pending(struct fut_runtime *rt);

/* 1 when FUT_TEST_RT=mt. */
int fut_test_rt_is_mt(void);

/* Leak fixture (test/test_common.c). */
void fut_test_setup(void);
void fut_test_teardown(void);

/* Adds a TCase named 'name' with the leak fixture and a generous timeout
 * (ctest's TIMEOUT is the real watchdog), to 's'. */
TCase *fut_test_tcase(Suite *s, const char *name);

/* Runs the suite the way CTest expects (CK_RUN_CASE picks one case);
 * returns the process exit code. */
int fut_test_run(Suite *s);

/* A future that counts its polls and drops, for lifecycle tests: PENDING
 * 'pending_polls' times (waking itself when 'self_wake'), then READY. */
struct counting_future {
    struct fut_future base;
    int pending_polls; /* PENDING answers left before READY */
    int self_wake;     /* wake the task before each PENDING */
    int *polls;        /* incremented on every poll (may be NULL) */
    int *drops;        /* incremented on drop (may be NULL) */
    intptr_t value;    /* output */
};
void counting_future_init(struct counting_future *f, int pending_polls,
                          int self_wake, int *polls, int *drops,
                          intptr_t value);

/* A fiber that accepts 'n' connections on 'ln' (TCP_NODELAY on each) and
 * spawns a fiber 'conn'(connection) for each on the current runtime,
 * joined by joins[i]. Spawn it with the struct as its argument; it
 * returns 0, or -1 when an accept or a spawn failed. */
struct fut_test_acceptor {
    struct fut_io *ln;
    int n;
    intptr_t (*conn)(void *io);
    struct fut_join *joins;
};
intptr_t fut_test_acceptor_main(void *arg);

#endif /* FUT_TEST_H */
