/* SPDX-License-Identifier: MIT */
/* Models of the multi-thread scheduler's local ring (src/rt/queue.c) with
 * capacity 4, run by the model checker in SC and x86-TSO.
 *
 *   model_queue [--expect KIND] [--mem sc|tso] [MODEL...]
 *
 * Same driver conventions as model_cell.c. The items are task headers
 * (only their 'next' link is used, by the overflow batch); every model
 * checks that each pushed task comes out exactly once - by the owner's
 * pop, a steal or an overflow batch - and that the slot hand-over is
 * ordered (the ring annotates its slot accesses, so a missing acquire
 * or release is a data race even under SC).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc.h"
#include "rt/lifo.h"
#include "rt/queue.h"
#include "rt/rt_internal.h"

#define L __FILE__, __LINE__

void fut__assert_fail(const char *expr, const char *file, int line)
{
    mc__assert(0, expr, "library assertion", file, line);
    abort();
}

#define NT 8

static struct fut__ring owner_q, thief_q, thief2_q;
static struct fut_task tasks[NT];
/* How often each task came out, per consumer (summed after the joins,
 * so the counts themselves are not shared). */
static int got_owner[NT], got_thief[NT], got_thief2[NT];

static int idx(struct fut_task *t)
{
    mc_assert(t >= tasks && t < tasks + NT, "not a task of the model");
    return (int)(t - tasks);
}

static void setup(void)
{
    fut__ring_init(&owner_q);
    fut__ring_init(&thief_q);
    fut__ring_init(&thief2_q);
    mc_label(&owner_q, sizeof owner_q, "owner_q");
    mc_label(&thief_q, sizeof thief_q, "thief_q");
    mc_label(&thief2_q, sizeof thief2_q, "thief2_q");
    memset(tasks, 0, sizeof tasks);
    memset(got_owner, 0, sizeof got_owner);
    memset(got_thief, 0, sizeof got_thief);
    memset(got_thief2, 0, sizeof got_thief2);
}

/* Owner push; an overflow batch counts as taken by the owner (it moves
 * to the injection queue, which the owner holds here). */
static void push(int i)
{
    struct fut_task *last = NULL;
    unsigned n = 0, k = 0;
    struct fut_task *b = fut__ring_push(&owner_q, &tasks[i], &last, &n);
    if (!b)
        return;
    for (struct fut_task *p = b; p; p = p->next, k++) {
        got_owner[idx(p)]++;
        mc_assert(p->next || p == last, "the batch's last is wrong");
    }
    mc_assert(k == n, "the overflow batch has the wrong length");
}

static void drain_owner(void)
{
    struct fut_task *t;
    while ((t = fut__ring_pop(&owner_q)))
        got_owner[idx(t)]++;
}

/* One steal into 'dst', then the thief runs what it got. */
static void steal_once(struct fut__ring *dst, int *got)
{
    unsigned moved = 0;
    struct fut_task *t = fut__ring_steal(&owner_q, dst, &moved);
    if (!t) {
        mc_assert(moved == 0, "a failed steal moved tasks");
        return;
    }
    got[idx(t)]++;
    unsigned more = 0;
    while ((t = fut__ring_pop(dst))) {
        got[idx(t)]++;
        more++;
    }
    mc_assert(more + 1 == moved, "the steal moved another number of tasks");
}

static void thief(void *arg)
{
    (void)arg;
    steal_once(&thief_q, got_thief);
}

static void thief2(void *arg)
{
    (void)arg;
    steal_once(&thief2_q, got_thief2);
}

static void check_exactly_once(int n)
{
    for (int i = 0; i < n; i++) {
        int c = got_owner[i] + got_thief[i] + got_thief2[i];
        mc_assert(c != 0, "a pushed task was lost");
        mc_assert(c == 1, "a task was taken twice");
    }
}

/* (1) push 3 || steal, then the owner pops the rest. */
static void m_push_steal(void)
{
    setup();
    int th = mc_spawn(thief, 0);
    for (int i = 0; i < 3; i++)
        push(i);
    drain_owner();
    mc_join(th);
    check_exactly_once(3);
}

/* (2) pop || steal on a filled ring: the owner's pop CAS and the thief's
 * claim CAS race on the same head. */
static void m_pop_steal(void)
{
    setup();
    for (int i = 0; i < 3; i++)
        push(i);
    int th = mc_spawn(thief, 0);
    drain_owner();
    mc_join(th);
    check_exactly_once(3);
}

/* (3) the ring fills up (capacity 4) and overflows while a steal is in
 * progress: tasks go to the batch, none twice. */
static void m_overflow_steal(void)
{
    setup();
    for (int i = 0; i < 3; i++)
        push(i);
    int th = mc_spawn(thief, 0);
    for (int i = 3; i < 6; i++)
        push(i);
    drain_owner();
    mc_join(th);
    check_exactly_once(6);
}

/* (4) indices wrap around the capacity while a steal runs: slots are
 * reused only after the thief released them. */
static void m_wrap_steal(void)
{
    setup();
    for (int i = 0; i < 3; i++)
        push(i);
    struct fut_task *t = fut__ring_pop(&owner_q);
    if (t)
        got_owner[idx(t)]++;
    int th = mc_spawn(thief, 0);
    for (int i = 3; i < 5; i++)
        push(i);
    t = fut__ring_pop(&owner_q);
    if (t)
        got_owner[idx(t)]++;
    push(5);
    drain_owner();
    mc_join(th);
    check_exactly_once(6);
}

/* (5) two thieves and the owner popping (three threads: bounded). */
static void m_steal_steal(void)
{
    setup();
    for (int i = 0; i < 4; i++)
        push(i);
    int a = mc_spawn(thief, 0);
    int b = mc_spawn(thief2, 0);
    drain_owner();
    mc_join(a);
    mc_join(b);
    check_exactly_once(4);
}

/* ------------------------------------------------------- the LIFO slot */

/* The owner runs ROUNDS polls; poll r stores 'started' = r, wakes task r
 * into the slot (a push), stores 'done' = r and takes the slot, as
 * run_tick does. A thief (rt/multi/steal.c's steal_stuck, which would only
 * look at a worker it saw stuck) tries LIFO_TRIES steals at any moment.
 * Every task must come out exactly once: a take, a steal, a task the
 * push displaced (the owner queues it), or what is left at the end. */
#define LIFO_ROUNDS 2
#define LIFO_TRIES 2
static struct fut__lifo lifo;
static fut__aword started, done;

static void lifo_thief(void *arg)
{
    (void)arg;
    for (int i = 0; i < LIFO_TRIES; i++) {
        struct fut_task *t = fut__lifo_steal(&lifo, &started, &done, 1);
        if (t)
            got_thief[idx(t)]++;
    }
}

static void m_lifo_take_steal(void)
{
    setup();
    fut__lifo_init(&lifo);
    mc_init(&started, 0);
    mc_init(&done, 0);
    mc_label(&lifo, sizeof lifo, "lifo");
    int th = mc_spawn(lifo_thief, 0);
    for (uintptr_t r = 1; r <= LIFO_ROUNDS; r++) {
        fut__store(&started, r, FUT__RELEASE);
        struct fut_task *d = fut__lifo_push(&lifo, &tasks[r - 1]);
        if (d)
            got_owner[idx(d)]++;
        fut__store(&done, r, FUT__RELEASE);
        struct fut_task *t = fut__lifo_take(&lifo, 1);
        if (t)
            got_owner[idx(t)]++;
    }
    mc_join(th);
    struct fut_task *left =
        (struct fut_task *)fut__swap(&lifo.task, 0, FUT__ACQ_REL);
    if (left)
        got_owner[idx(left)]++;
    check_exactly_once(LIFO_ROUNDS);
}

/* ---------------------------------------------------------------- driver */

/* Every ring operation is several atomic steps, so only pop_steal is
 * small enough to explore without a bound (1,000,766 executions); the
 * others run at preemption bound 4 (steal_steal, three threads, and
 * lifo_take_steal at 3: 25,577,486 TSO executions unbounded with one
 * steal try), and ctest adds 20,000 unbounded random schedules of each. */
static const struct mc_model models[] = {
    {"push_steal", m_push_steal, 4},
    {"pop_steal", m_pop_steal, -1},
    {"overflow_steal", m_overflow_steal, 4},
    {"wrap_steal", m_wrap_steal, 4},
    {"steal_steal", m_steal_steal, 3},
    {"lifo_take_steal", m_lifo_take_steal, 3},
};

int main(int argc, char **argv)
{
    return mc_model_main("model_queue", models,
                         sizeof models / sizeof models[0], argc, argv);
}
