/* SPDX-License-Identifier: MIT */
/* A seeded application bug that the simulation tests share (test/sim.c,
 * test/sim_swarm.c): two tasks add 1 to a shared counter with an await
 * between the read and the write - a lost update when the other's read
 * falls in between. Included by one .c file each (static functions). */
#ifndef FUT_TEST_SIM_BUGS_H
#define FUT_TEST_SIM_BUGS_H

#include "test.h"

struct adder {
    struct fut_future base;
    int *counter;
    int delay, v;
    struct fut_yield y;
};

static int adder_poll(struct fut_future *f, struct fut_context *cx)
{
    struct adder *a = (struct adder *)f;
    FUT_BEGIN(f);
    while (a->delay-- > 0) {
        fut_yield_init(&a->y);
        FUT_AWAIT(f, &a->y);
    }
    a->v = *a->counter;
    fut_yield_init(&a->y); /* the bug: an await between read and write */
    FUT_AWAIT(f, &a->y);
    *a->counter = a->v + 1;
    FUT_END(f);
}
FUT_ASYNC_VTABLE(adder_vt, "adder", adder_poll, NULL);

/* Runs the two adders on 'rt', the second after 'delay' yields (the
 * FIFO order of a real runtime never overlaps them when delay > 0).
 * Returns 0 when no update was lost, 1 when one was. */
static int adders_join(struct fut_runtime *rt, int *counter, int delay)
{
    *counter = 0;
    struct fut_join j[2];
    for (int i = 0; i < 2; i++) {
        struct adder a;
        fut_future_init(&a.base, &adder_vt);
        a.counter = counter;
        a.delay = i * delay;
        ck_assert_int_eq(fut_spawn(rt, &a, sizeof a, &j[i]), 0);
    }
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(fut_block_on(rt, &j[i].base), 0);
        fut_drop(&j[i].base);
    }
    return *counter == 2 ? 0 : 1;
}

#endif /* FUT_TEST_SIM_BUGS_H */
