/* SPDX-License-Identifier: MIT */
/* Self-tests of the model checker: classic litmus tests whose answers are
 * known, so the checker is trusted only once they all come out right.
 *
 * Each case names a memory mode and the expected result (MC_OK or a
 * failure kind). Outcome cases also record, across all executions, which
 * results the threads observed: exploring every schedule must produce
 * exactly the outcomes the memory model allows (no more: soundness of the
 * model; no fewer: completeness of the search).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc.h"

#define RLX memory_order_relaxed
#define ACQ memory_order_acquire
#define REL memory_order_release
#define SC memory_order_seq_cst
#define L __FILE__, __LINE__

static _Atomic uintptr_t x, y, z;
static int data;
static uintptr_t r1, r2;
static unsigned outcomes; /* bit (r1 << 1 | r2), across executions */
static struct mc_mutex mu;
static void *blk;

static void reset(void)
{
    mc_init(&x, 0);
    mc_init(&y, 0);
    mc_init(&z, 0);
    mc_label(&x, sizeof x, "x");
    mc_label(&y, sizeof y, "y");
    mc_label(&z, sizeof z, "z");
    mc_label(&data, sizeof data, "data");
    data = 0;
    r1 = r2 = 0;
}

static void run2(void (*a)(void *), void (*b)(void *))
{
    int t1 = mc_spawn(a, 0);
    int t2 = mc_spawn(b, 0);
    mc_join(t1);
    mc_join(t2);
}

/* ---------------------------------------------------------- lost update */

static void incr(void *arg)
{
    (void)arg;
    uintptr_t v = mc_load(&x, SC, L);
    mc_store(&x, v + 1, SC, L);
}

static void lost_update(void)
{
    reset();
    run2(incr, incr);
    mc_assert(mc_load(&x, SC, L) == 2, "an increment was lost");
}

static void incr_rmw(void *arg)
{
    (void)arg;
    mc_rmw(&x, MC_ADD, 1, RLX, L);
}

static void rmw_update(void)
{
    reset();
    run2(incr_rmw, incr_rmw);
    mc_assert(mc_load(&x, SC, L) == 2, "an increment was lost");
}

/* ----------------------------------------------------- store buffering */

static int sb_order = REL;

static void sb_a(void *arg)
{
    (void)arg;
    mc_store(&x, 1, sb_order, L);
    r1 = mc_load(&y, sb_order == SC ? SC : ACQ, L);
}

static void sb_b(void *arg)
{
    (void)arg;
    mc_store(&y, 1, sb_order, L);
    r2 = mc_load(&x, sb_order == SC ? SC : ACQ, L);
}

static void sb(void)
{
    reset();
    run2(sb_a, sb_b);
    outcomes |= 1u << (r1 << 1 | r2);
    mc_assert(r1 || r2, "both loads read 0 (store buffering)");
}

static void sb_rel(void)
{
    sb_order = REL;
    sb();
}

static void sb_sc(void)
{
    sb_order = SC;
    sb();
}

/* Outcome version: records without asserting. */
static void sb_outcomes(void)
{
    reset();
    sb_order = REL;
    run2(sb_a, sb_b);
    outcomes |= 1u << (r1 << 1 | r2);
}

/* Dekker with relaxed stores and seq_cst fences: fences restore SC. */
static void sbf_a(void *arg)
{
    (void)arg;
    mc_store(&x, 1, RLX, L);
    mc_fence(SC, L);
    r1 = mc_load(&y, RLX, L);
}

static void sbf_b(void *arg)
{
    (void)arg;
    mc_store(&y, 1, RLX, L);
    mc_fence(SC, L);
    r2 = mc_load(&x, RLX, L);
}

static void sb_fenced(void)
{
    reset();
    run2(sbf_a, sbf_b);
    mc_assert(r1 || r2, "both loads read 0 despite the fences");
}

/* Asymmetric Dekker: A stores and loads with only a compiler barrier in
 * between, B stores, runs membarrier, loads. TSO lets A's load pass its
 * own buffered store; the membarrier flushes A's buffer (or A's load comes
 * after it and sees B's store), so the two cannot both read 0. Without
 * it: store buffering again. */
static int sbm_barrier = 1;

static void sbm_a(void *arg)
{
    (void)arg;
    mc_store(&x, 1, RLX, L);
    r1 = mc_load(&y, RLX, L);
}

static void sbm_b(void *arg)
{
    (void)arg;
    mc_store(&y, 1, RLX, L);
    if (sbm_barrier)
        mc_membarrier(L);
    r2 = mc_load(&x, RLX, L);
}

static void sb_membarrier(void)
{
    reset();
    sbm_barrier = 1;
    run2(sbm_a, sbm_b);
    mc_assert(r1 || r2, "both loads read 0 despite the membarrier");
}

static void sb_no_membarrier(void)
{
    reset();
    sbm_barrier = 0;
    run2(sbm_a, sbm_b);
    mc_assert(r1 || r2, "both loads read 0 (store buffering)");
}

/* ------------------------------------------------------ message passing */

static int mp_kind; /* 0 relaxed, 1 release/acquire, 2 fences */

static void mp_send(void *arg)
{
    (void)arg;
    mc_plain_write(&data, sizeof data, L);
    data = 42;
    if (mp_kind == 2)
        mc_fence(REL, L);
    mc_store(&x, 1, mp_kind == 1 ? REL : RLX, L);
}

static void mp_recv(void *arg)
{
    (void)arg;
    if (!mc_load(&x, mp_kind == 1 ? ACQ : RLX, L))
        return;
    if (mp_kind == 2)
        mc_fence(ACQ, L);
    mc_plain_read(&data, sizeof data, L);
    mc_assert(data == 42, "flag seen before the data");
}

static void mp_relaxed(void)
{
    reset();
    mp_kind = 0;
    run2(mp_send, mp_recv);
}

static void mp_relacq(void)
{
    reset();
    mp_kind = 1;
    run2(mp_send, mp_recv);
}

static void mp_fence(void)
{
    reset();
    mp_kind = 2;
    run2(mp_send, mp_recv);
}

/* A release fence without the reader's acquire fence orders nothing. */
static void mpf_recv_noacq(void *arg)
{
    (void)arg;
    if (mc_load(&x, RLX, L)) {
        mc_plain_read(&data, sizeof data, L);
    }
}

static void mp_fence_half(void)
{
    reset();
    mp_kind = 2;
    run2(mp_send, mpf_recv_noacq);
}

/* TSO keeps stores in order: (flag = 1, data = 0) is impossible even with
 * relaxed atomics, and the three other outcomes must all show up. */
static void mpo_send(void *arg)
{
    (void)arg;
    mc_store(&y, 1, RLX, L);
    mc_store(&x, 1, RLX, L);
}

static void mpo_recv(void *arg)
{
    (void)arg;
    r1 = mc_load(&x, RLX, L);
    r2 = mc_load(&y, RLX, L);
}

static void mp_outcomes(void)
{
    reset();
    run2(mpo_send, mpo_recv);
    outcomes |= 1u << (r1 << 1 | r2);
}

/* Load buffering: (1, 1) is impossible in SC and TSO. */
static void lb_a(void *arg)
{
    (void)arg;
    r1 = mc_load(&x, RLX, L);
    mc_store(&y, 1, RLX, L);
}

static void lb_b(void *arg)
{
    (void)arg;
    r2 = mc_load(&y, RLX, L);
    mc_store(&x, 1, RLX, L);
}

static void lb_outcomes(void)
{
    reset();
    run2(lb_a, lb_b);
    outcomes |= 1u << (r1 << 1 | r2);
}

/* Release sequence: a relaxed RMW in between does not break it. */
static void rs_send(void *arg)
{
    (void)arg;
    mc_plain_write(&data, sizeof data, L);
    data = 7;
    mc_store(&x, 1, REL, L);
}

static void rs_bump(void *arg)
{
    (void)arg;
    mc_rmw(&x, MC_ADD, 1, RLX, L);
}

static void rs_recv(void *arg)
{
    (void)arg;
    if (mc_load(&x, ACQ, L) == 2) {
        mc_plain_read(&data, sizeof data, L);
        mc_assert(data == 7, "release sequence");
    }
}

static void release_seq(void)
{
    reset();
    int a = mc_spawn(rs_send, 0), b = mc_spawn(rs_bump, 0);
    int c = mc_spawn(rs_recv, 0);
    mc_join(a);
    mc_join(b);
    mc_join(c);
}

/* ------------------------------------------------- blocking and memory */

static void unparker(void *arg)
{
    (void)arg;
    mc_plain_write(&data, sizeof data, L);
    data = 1;
    mc_unpark(0);
}

static void park_ok(void)
{
    reset();
    int t = mc_spawn(unparker, 0);
    mc_park();                            /* the permit may have come first */
    mc_plain_read(&data, sizeof data, L); /* ordered by unpark -> park */
    mc_join(t);
}

static void nothing(void *arg)
{
    (void)arg;
}

static void park_lost(void)
{
    reset();
    int t = mc_spawn(nothing, 0);
    mc_park();
    mc_join(t);
}

static void locked_incr(void *arg)
{
    (void)arg;
    mc_mutex_lock(&mu);
    mc_plain_read(&data, sizeof data, L);
    int v = data;
    mc_plain_write(&data, sizeof data, L);
    data = v + 1;
    mc_mutex_unlock(&mu);
}

static void mutex_counter(void)
{
    reset();
    mc_mutex_init(&mu);
    run2(locked_incr, locked_incr);
    mc_plain_read(&data, sizeof data, L);
    mc_assert(data == 2, "an increment was lost under the mutex");
}

static void unlocked_incr(void *arg)
{
    (void)arg;
    mc_plain_write(&data, sizeof data, L);
    data++;
}

static void plain_counter(void)
{
    reset();
    run2(unlocked_incr, unlocked_incr);
}

static void leak(void)
{
    reset();
    blk = mc_alloc(16, L);
}

static void double_free(void)
{
    reset();
    blk = mc_alloc(16, L);
    mc_free(blk, L);
    mc_free(blk, L);
}

static void use_after_free_reader(void *arg)
{
    (void)arg;
    mc_plain_read(blk, 8, L);
}

/* The reader is joined before the free: ordered, no failure. */
static void free_after_join(void)
{
    reset();
    blk = mc_alloc(16, L);
    int t = mc_spawn(use_after_free_reader, 0);
    mc_join(t);
    mc_free(blk, L);
}

/* The free races with the reader: caught whichever runs first. */
static void free_race(void)
{
    reset();
    blk = mc_alloc(16, L);
    int t = mc_spawn(use_after_free_reader, 0);
    mc_free(blk, L);
    mc_join(t);
}

/* The reader tells the freer it is done; only an acquire orders the
 * free after the read. */
static int done_order;

static void reader_then_flag(void *arg)
{
    (void)arg;
    mc_plain_read(blk, 8, L);
    mc_store(&x, 1, done_order, L);
}

static void free_after_flag(void)
{
    reset();
    blk = mc_alloc(16, L);
    int t = mc_spawn(reader_then_flag, 0);
    while (!mc_load(&x, done_order == REL ? ACQ : RLX, L))
        mc_yield(L);
    mc_free(blk, L);
    mc_join(t);
}

static void free_acquired(void)
{
    done_order = REL;
    free_after_flag();
}

static void free_unordered(void)
{
    done_order = RLX;
    free_after_flag();
}

static void atomic_after_free(void)
{
    reset();
    _Atomic uintptr_t *p = mc_alloc(sizeof *p, L);
    mc_init(p, 0);
    mc_free(p, L);
    mc_load(p, RLX, L);
}

/* Spin-wait for a relaxed flag: needs the TSO flush to be scheduled. */
static void setter(void *arg)
{
    (void)arg;
    mc_store(&x, 1, RLX, L);
}

static void spin_ok(void)
{
    reset();
    int t = mc_spawn(setter, 0);
    while (!mc_load(&x, ACQ, L))
        mc_yield(L);
    mc_join(t);
}

static void spin_forever(void)
{
    reset();
    int t = mc_spawn(nothing, 0);
    while (!mc_load(&x, ACQ, L))
        mc_yield(L);
    mc_join(t);
}

/* ---------------------------------------------------------------- table */

struct lcase {
    const char *name;
    void (*body)(void);
    int mem;
    int expect;
    int preempt;      /* -1: unbounded */
    unsigned allowed; /* outcome cases: the exact outcome set; else 0 */
};

static const struct lcase cases[] = {
    {"lost_update", lost_update, MC_MEM_SC, MC_FAIL_ASSERT, -1, 0},
    {"rmw_update", rmw_update, MC_MEM_TSO, MC_OK, -1, 0},
    {"lost_update_bound0", lost_update, MC_MEM_SC, MC_OK, 0, 0},
    {"lost_update_bound1", lost_update, MC_MEM_SC, MC_FAIL_ASSERT, 1, 0},
    {"sb_release", sb_rel, MC_MEM_SC, MC_OK, -1, 0},
    {"sb_release", sb_rel, MC_MEM_TSO, MC_FAIL_ASSERT, -1, 0},
    {"sb_seq_cst", sb_sc, MC_MEM_TSO, MC_OK, -1, 0},
    {"sb_fenced", sb_fenced, MC_MEM_TSO, MC_OK, -1, 0},
    {"sb_membarrier", sb_membarrier, MC_MEM_TSO, MC_OK, -1, 0},
    {"sb_no_membarrier", sb_no_membarrier, MC_MEM_TSO, MC_FAIL_ASSERT, -1, 0},
    {"sb_outcomes", sb_outcomes, MC_MEM_SC, MC_OK, -1, 0xe},
    {"sb_outcomes", sb_outcomes, MC_MEM_TSO, MC_OK, -1, 0xf},
    {"mp_relaxed", mp_relaxed, MC_MEM_SC, MC_FAIL_RACE, -1, 0},
    {"mp_relaxed", mp_relaxed, MC_MEM_TSO, MC_FAIL_RACE, -1, 0},
    {"mp_release_acquire", mp_relacq, MC_MEM_SC, MC_OK, -1, 0},
    {"mp_release_acquire", mp_relacq, MC_MEM_TSO, MC_OK, -1, 0},
    {"mp_fences", mp_fence, MC_MEM_SC, MC_OK, -1, 0},
    {"mp_fences", mp_fence, MC_MEM_TSO, MC_OK, -1, 0},
    {"mp_release_fence_only", mp_fence_half, MC_MEM_SC, MC_FAIL_RACE, -1, 0},
    {"mp_outcomes", mp_outcomes, MC_MEM_TSO, MC_OK, -1, 0xb},
    {"lb_outcomes", lb_outcomes, MC_MEM_TSO, MC_OK, -1, 0x7},
    {"release_sequence", release_seq, MC_MEM_TSO, MC_OK, 2, 0},
    {"park_permit", park_ok, MC_MEM_TSO, MC_OK, -1, 0},
    {"park_lost_wakeup", park_lost, MC_MEM_SC, MC_FAIL_DEADLOCK, -1, 0},
    {"mutex_counter", mutex_counter, MC_MEM_TSO, MC_OK, -1, 0},
    {"plain_counter", plain_counter, MC_MEM_SC, MC_FAIL_RACE, -1, 0},
    {"leak", leak, MC_MEM_SC, MC_FAIL_LEAK, -1, 0},
    {"double_free", double_free, MC_MEM_SC, MC_FAIL_DOUBLE_FREE, -1, 0},
    {"free_after_join", free_after_join, MC_MEM_SC, MC_OK, -1, 0},
    {"free_race", free_race, MC_MEM_SC, MC_FAIL_UAF, -1, 0},
    {"free_acquired", free_acquired, MC_MEM_TSO, MC_OK, -1, 0},
    {"free_unordered", free_unordered, MC_MEM_SC, MC_FAIL_UAF, -1, 0},
    {"atomic_after_free", atomic_after_free, MC_MEM_SC, MC_FAIL_UAF, -1, 0},
    {"spin_yield", spin_ok, MC_MEM_TSO, MC_OK, -1, 0},
    {"spin_forever", spin_forever, MC_MEM_TSO, MC_FAIL_LIVELOCK, -1, 0},
};

static int run_case(const struct lcase *c)
{
    struct mc_opts o = mc_defaults(c->mem);
    o.preempt = c->preempt;
    o.quiet = getenv("MC_TRACE") == 0 && c->expect != MC_OK;
    outcomes = 0;
    int r = mc_check(c->name, c->body, &o);
    if (mc_skipped())
        return 0;
    int bad = r != c->expect;
    if (bad)
        printf("  LITMUS MISMATCH: %s expected '%s', got '%s'\n", c->name,
               mc_fail_name(c->expect), mc_fail_name(r));
    if (c->allowed && outcomes != c->allowed) {
        printf("  LITMUS MISMATCH: %s observed outcomes %#x, the memory "
               "model allows exactly %#x\n",
               c->name, outcomes, c->allowed);
        bad = 1;
    }
    return bad;
}

/* A failure found by the DFS must come back when its replay string is
 * given (deterministic replay). */
static int replay_roundtrip(void)
{
    struct mc_opts o = mc_defaults(MC_MEM_TSO);
    o.quiet = 1;
    if (mc_check("replay_source", sb_rel, &o) != MC_FAIL_ASSERT)
        return 1;
    static char str[16384];
    snprintf(str, sizeof str, "%s", mc_replay_string());
    o.replay = str;
    int r = mc_check("replay_source", sb_rel, &o);
    if (r != MC_FAIL_ASSERT)
        printf("  LITMUS MISMATCH: replay of '%s' gave '%s'\n", str,
               mc_fail_name(r));
    return r != MC_FAIL_ASSERT;
}

int main(void)
{
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        bad += run_case(&cases[i]);
    if (!getenv("MC_REPLAY") && !getenv("MC_FILTER"))
        bad += replay_roundtrip();
    printf("litmus: %s (%d mismatches)\n", bad ? "FAIL" : "all as expected",
           bad);
    return bad != 0;
}
