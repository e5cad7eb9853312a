/* SPDX-License-Identifier: MIT */
/* The timing wheel as a data structure (src/time/wheel.c): deadlines fire
 * at exactly their tick, never early; cancelled entries never fire; far
 * deadlines wrap the top level without firing early; insert and remove
 * never allocate. */
#include <string.h>

#include "test.h"
#include "time/wheel.h"

static uint64_t rng_state;
static uint64_t rng(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Every entry comes out at exactly its tick when the wheel is polled
 * one tick at a time (order of firing), across every level. */
START_TEST(wheel_fires_in_order)
{
    enum { N = 20000 };
    static struct fut__tentry e[N];
    static struct fut__wheel w;
    fut__wheel_init(&w, 0);
    rng_state = 7;
    uint64_t maxwhen = 0;
    for (int i = 0; i < N; i++) {
        memset(&e[i], 0, sizeof e[i]);
        /* Mostly near, some on every level up to ~2^26 ticks. */
        int shift = (int)(rng() % 27);
        e[i].when = 1 + rng() % ((uint64_t)1 << shift);
        if (e[i].when > maxwhen)
            maxwhen = e[i].when;
        ASSERT_EQ(fut__wheel_insert(&w, &e[i]), 0);
    }
    long alloc0 = fut_alloc_count();
    int fired = 0;
    uint64_t now = 0, last = 0;
    while (fired < N) {
        /* Jump to the next possible expiry, like the driver does. */
        uint64_t next = fut__wheel_next(&w);
        ck_assert_msg(next != UINT64_MAX && next >= now, "next %llu now %llu",
                      (unsigned long long)next, (unsigned long long)now);
        now = next;
        struct fut__tentry *x;
        while ((x = fut__wheel_poll(&w, now))) {
            ck_assert_msg(x->when == now, "entry due %llu fired at %llu",
                          (unsigned long long)x->when,
                          (unsigned long long)now);
            ck_assert(x->when >= last);
            last = x->when;
            fired++;
        }
    }
    ASSERT_EQ(now, maxwhen);
    ASSERT_EQ(w.count, 0);
    ASSERT_EQ(fut__wheel_next(&w), UINT64_MAX);
    ASSERT_EQ(fut_alloc_count(), alloc0); /* never allocates */
}
END_TEST

/* Polling with coarse jumps: everything due by 'now' comes out, nothing
 * due later does. */
START_TEST(wheel_coarse_jumps)
{
    enum { N = 5000 };
    static struct fut__tentry e[N];
    static struct fut__wheel w;
    fut__wheel_init(&w, 1000);
    rng_state = 11;
    for (int i = 0; i < N; i++) {
        memset(&e[i], 0, sizeof e[i]);
        e[i].when = 1001 + rng() % 300000;
        ASSERT_EQ(fut__wheel_insert(&w, &e[i]), 0);
    }
    int fired = 0;
    for (uint64_t now = 1000; fired < N; now += 1 + rng() % 5000) {
        struct fut__tentry *x;
        while ((x = fut__wheel_poll(&w, now))) {
            ck_assert(x->when <= now);
            x->slot = 0xee; /* mark fired */
            fired++;
        }
        for (int i = 0; i < N; i += 97)
            if (e[i].when <= now)
                ASSERT_EQ(e[i].linked, 0);
            else
                ASSERT_EQ(e[i].linked, 1);
    }
    ASSERT_EQ(w.count, 0);
}
END_TEST

/* Of 10^6 entries cancelled before their deadline, none fires; removal
 * is O(1) and leaves the wheel empty. */
START_TEST(wheel_million_cancelled)
{
    enum { N = 1000000 };
    struct fut__tentry *e = calloc(N, sizeof *e);
    ck_assert(e != NULL);
    static struct fut__wheel w;
    fut__wheel_init(&w, 0);
    rng_state = 1;
    for (int i = 0; i < N; i++) {
        e[i].when = 1 + rng() % 100;
        ASSERT_EQ(fut__wheel_insert(&w, &e[i]), 0);
    }
    ASSERT_EQ(w.count, N);
    /* Advance half way: the earliest ones fire, the rest we cancel. */
    int fired = 0;
    struct fut__tentry *x;
    while ((x = fut__wheel_poll(&w, 10)))
        fired++;
    int early = 0;
    for (int i = 0; i < N; i++)
        if (e[i].when <= 10)
            early++;
    ASSERT_EQ(fired, early);
    for (int i = 0; i < N; i++)
        if (e[i].linked)
            fut__wheel_remove(&w, &e[i]);
    ASSERT_EQ(w.count, 0);
    ASSERT_EQ(fut__wheel_poll(&w, UINT64_MAX / 2), NULL);
    ASSERT_EQ(fut__wheel_next(&w), UINT64_MAX);
    free(e);
}
END_TEST

/* Deadlines past the top level (64^6 ms) are re-filed, never fired early,
 * and fire at their tick. */
START_TEST(wheel_far_deadlines)
{
    static struct fut__tentry e[4];
    static struct fut__wheel w;
    fut__wheel_init(&w, 5);
    uint64_t span = (uint64_t)1 << 36;
    uint64_t when[4] = {span - 1, span + 12345, 3 * span + 7, 40};
    for (int i = 0; i < 4; i++) {
        memset(&e[i], 0, sizeof e[i]);
        e[i].when = when[i];
        ASSERT_EQ(fut__wheel_insert(&w, &e[i]), 0);
    }
    int fired = 0;
    uint64_t now = 5;
    while (fired < 4) {
        uint64_t next = fut__wheel_next(&w);
        ck_assert(next >= now && next != UINT64_MAX);
        now = next;
        struct fut__tentry *x;
        while ((x = fut__wheel_poll(&w, now))) {
            ck_assert_msg(x->when == now, "due %llu at %llu",
                          (unsigned long long)x->when,
                          (unsigned long long)now);
            fired++;
        }
    }
    ASSERT_EQ(now, 3 * span + 7);
}
END_TEST

/* An entry already due is refused (the caller fires it at once). */
START_TEST(wheel_due_refused)
{
    static struct fut__wheel w;
    struct fut__tentry e;
    memset(&e, 0, sizeof e);
    fut__wheel_init(&w, 100);
    e.when = 100;
    ASSERT_EQ(fut__wheel_insert(&w, &e), 1);
    e.when = 3;
    ASSERT_EQ(fut__wheel_insert(&w, &e), 1);
    e.when = 101;
    ASSERT_EQ(fut__wheel_insert(&w, &e), 0);
    ASSERT_EQ(fut__wheel_next(&w), 101);
    ASSERT_EQ(fut__wheel_poll(&w, 100), NULL);
    ASSERT_EQ(fut__wheel_poll(&w, 101), &e);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("time_wheel");
    TCase *tc = fut_test_tcase(s, "order");
    tcase_add_test(tc, wheel_fires_in_order);
    tcase_add_test(tc, wheel_coarse_jumps);
    tcase_add_test(tc, wheel_due_refused);
    tc = fut_test_tcase(s, "cancel");
    tcase_add_test(tc, wheel_million_cancelled);
    tc = fut_test_tcase(s, "far");
    tcase_add_test(tc, wheel_far_deadlines);
    return fut_test_run(s);
}
