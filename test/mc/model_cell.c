/* SPDX-License-Identifier: MIT */
/* Models of the write-once cell and the oneshot channel (src/core/cell.c,
 * contracts C1-C5 and C11), run by the model checker in SC and x86-TSO.
 *
 *   model_cell [--expect KIND] [--mem sc|tso] [MODEL...]
 *
 * Without MODEL every model runs; without --mem both modes do. With
 * --expect (the seeded-bug builds) the exit status is 1 when a model
 * failed with that kind (the bug was caught), 0 when every model passed
 * (the bug survived), and the program aborts on a failure of another kind,
 * so that only the expected catch counts as a pass under WILL_FAIL.
 *
 * Wakers are test objects: data points to an mc_alloc'd task record with
 * a reference count, so a clone that is never dropped leaks its block, a
 * double drop fails an assertion, and a use after the last drop is a use
 * after free. Waking unparks the task's model thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fut/cell.h"
#include "mc.h"

#define L __FILE__, __LINE__

/* The library's assertion hook: a failed FUT_CHECK fails the execution. */
void fut__assert_fail(const char *expr, const char *file, int line)
{
    mc__assert(0, expr, "library assertion", file, line);
    abort();
}

/* ---------------------------------------------------------- test wakers */

struct task {
    int tid;
    int refs;
};

static const struct fut_waker_vtable task_vt;

static struct task *task_of(const void *data)
{
    mc_assert(mc_block_live(data), "waker used after its last reference "
                                   "was dropped");
    return (struct task *)data;
}

static void task_release(struct task *t)
{
    mc_assert(t->refs > 0, "waker dropped more often than cloned");
    if (--t->refs == 0)
        mc_free(t, L);
}

static struct fut_waker task_clone(const void *data)
{
    struct task *t = task_of(data);
    t->refs++;
    return (struct fut_waker){t, &task_vt};
}

static void task_wake(const void *data)
{
    struct task *t = task_of(data);
    mc_unpark(t->tid);
    task_release(t);
}

static void task_wake_by_ref(const void *data)
{
    mc_unpark(task_of(data)->tid);
}

static void task_drop(const void *data)
{
    task_release(task_of(data));
}

static const struct fut_waker_vtable task_vt = {task_clone, task_wake,
                                                task_wake_by_ref, task_drop};

/* A task for the calling thread, holding one (the base) reference. */
static struct task *task_new(void)
{
    struct task *t = mc_alloc(sizeof *t, L);
    t->tid = mc_self();
    t->refs = 1;
    return t;
}

static struct fut_context task_cx(struct task *t)
{
    struct fut_context cx;
    fut_context_init(&cx, (struct fut_waker){t, &task_vt});
    return cx;
}

/* Every clone the library took must have been dropped or woken. */
static void task_finish(struct task *t)
{
    mc_assert(t->refs == 1, "a waker clone was leaked");
    task_release(t);
}

/* ------------------------------------------------------------ the cell */

static struct fut_cell cell;
static int slot;

struct completer {
    int value;
    int ret;
};
static struct completer comp[2];

static void cell_setup(void)
{
    fut_cell_init(&cell, &slot, sizeof slot);
    mc_label(&cell, sizeof cell, "cell");
    mc_label(&slot, sizeof slot, "slot");
    slot = 0;
    comp[0] = (struct completer){11, 1};
    comp[1] = (struct completer){22, 1};
}

static void complete_thread(void *arg)
{
    struct completer *c = arg;
    c->ret = fut_cell_complete(&cell, &c->value);
}

/* Polls until READY, parking on PENDING (the task is woken by unpark). */
static int poll_until_ready(struct fut_context *cx, int *out)
{
    int got = -1;
    while (fut_cell_poll(&cell, cx, out, &got) == FUT_PENDING)
        mc_park();
    return got;
}

/* (1) poll || complete: the poller gets the value (no lost wakeup, C4,
 * C5), and a poll after READY says "absent" (C8). */
static void m_poll_complete(void)
{
    cell_setup();
    struct task *t = task_new();
    struct fut_context cx = task_cx(t);
    int th = mc_spawn(complete_thread, &comp[0]);
    int out = 0;
    int got = poll_until_ready(&cx, &out);
    mc_join(th);
    mc_assert(got == 1 && out == 11, "the poller did not get the value");
    mc_assert(comp[0].ret == 0, "the only completer did not win");
    mc_assert(fut_cell_poll(&cell, &cx, &out, &got) == FUT_READY && !got,
              "a poll after READY must be READY with 'absent'");
    task_finish(t);
}

/* (1b) the same, but the second poll comes with another waker, so the
 * poller must take its first one back (the CAS on WAKER) first. */
static void m_poll_rewake_complete(void)
{
    cell_setup();
    struct task *t1 = task_new(), *t2 = task_new();
    struct fut_context cx1 = task_cx(t1), cx2 = task_cx(t2);
    int th = mc_spawn(complete_thread, &comp[0]);
    int out = 0, got = -1;
    if (fut_cell_poll(&cell, &cx1, &out, &got) == FUT_PENDING)
        got = poll_until_ready(&cx2, &out);
    mc_join(th);
    mc_assert(got == 1 && out == 11, "the poller did not get the value");
    task_finish(t1);
    task_finish(t2);
}

/* (1c) the poller polls twice with the same waker before parking: the
 * second registration must see that the waker already in the slot will
 * do (fut_waker_will_wake) while a completion may be landing. */
static void m_poll_twice_complete(void)
{
    cell_setup();
    struct task *t = task_new();
    struct fut_context cx = task_cx(t);
    int th = mc_spawn(complete_thread, &comp[0]);
    int out = 0, got = -1;
    if (fut_cell_poll(&cell, &cx, &out, &got) == FUT_PENDING)
        got = poll_until_ready(&cx, &out);
    mc_join(th);
    mc_assert(got == 1 && out == 11, "the poller did not get the value");
    task_finish(t);
}

/* (2) complete || complete, with a poller: one winner (C2), its value is
 * the one delivered. Three threads: preemption-bounded. */
static void m_complete_complete(void)
{
    cell_setup();
    struct task *t = task_new();
    struct fut_context cx = task_cx(t);
    int a = mc_spawn(complete_thread, &comp[0]);
    int b = mc_spawn(complete_thread, &comp[1]);
    int out = 0;
    int got = poll_until_ready(&cx, &out);
    mc_join(a);
    mc_join(b);
    int r0 = comp[0].ret, r1 = comp[1].ret;
    mc_assert((r0 == 0 && r1 == FUT_ELOST) || (r1 == 0 && r0 == FUT_ELOST),
              "not exactly one winner, the loser told FUT_ELOST");
    mc_assert(got == 1 && out == (r0 == 0 ? 11 : 22),
              "the consumer did not get the winner's value");
    task_finish(t);
}

/* (2b) complete || complete without a poller, then take: two threads,
 * so exhaustive. */
static void m_complete_complete_take(void)
{
    cell_setup();
    int a = mc_spawn(complete_thread, &comp[0]);
    complete_thread(&comp[1]);
    mc_join(a);
    int r0 = comp[0].ret, r1 = comp[1].ret, out = 0;
    mc_assert((r0 == 0 && r1 == FUT_ELOST) || (r1 == 0 && r0 == FUT_ELOST),
              "not exactly one winner, the loser told FUT_ELOST");
    mc_assert(fut_cell_take(&cell, &out) == 1 && out == (r0 == 0 ? 11 : 22),
              "the taker did not get the winner's value");
}

/* (3) take || take after complete: exactly one gets the value (C3). */
static int took[2], took_val[2];

static void take_thread(void *arg)
{
    int i = (int)(intptr_t)arg;
    int r;
    while ((r = fut_cell_take(&cell, &took_val[i])) == FUT_EAGAIN)
        mc_yield(L);
    took[i] = r;
}

static void check_takes(void)
{
    mc_assert(took[0] + took[1] == 1, "not exactly one taker got it");
    mc_assert(took_val[took[0] ? 0 : 1] == 11, "the taker got a bad value");
}

static void m_take_take(void)
{
    cell_setup();
    took_val[0] = took_val[1] = 0;
    mc_assert(fut_cell_complete(&cell, &comp[0].value) == 0, "complete");
    int th = mc_spawn(take_thread, (void *)(intptr_t)1);
    take_thread((void *)(intptr_t)0);
    mc_join(th);
    check_takes();
}

/* (3b) take || take || complete: the takers spin (mc_yield) on PENDING. */
static void m_take_take_complete(void)
{
    cell_setup();
    took_val[0] = took_val[1] = 0;
    int a = mc_spawn(take_thread, (void *)(intptr_t)0);
    int b = mc_spawn(take_thread, (void *)(intptr_t)1);
    complete_thread(&comp[0]);
    mc_join(a);
    mc_join(b);
    mc_assert(comp[0].ret == 0, "the only completer did not win");
    check_takes();
}

/* (4) close || complete, after a poll registered the waker: the waker is
 * dropped exactly once (by close or by the completer's wake), and exactly
 * one side owns the value: complete returns 0 iff close returns 1. */
static void m_close_complete(void)
{
    cell_setup();
    struct task *t = task_new();
    struct fut_context cx = task_cx(t);
    int out = 0, got = -1;
    mc_assert(fut_cell_poll(&cell, &cx, &out, &got) == FUT_PENDING,
              "nothing was completed yet");
    int th = mc_spawn(complete_thread, &comp[0]);
    int owned = fut_cell_close(&cell);
    mc_join(th);
    int r = comp[0].ret;
    mc_assert(r == 0 || r == FUT_ECLOSED, "complete after close");
    mc_assert((r == 0) == (owned == 1),
              "complete's result disagrees with close's");
    if (owned) {
        mc_plain_read(&slot, sizeof slot, L);
        mc_assert(slot == 11, "close returned 1 but the slot is wrong");
    }
    task_finish(t);
}

/* --------------------------------------------------------------- oneshot */

static struct fut_oneshot_tx tx;
static struct fut_oneshot_rx rx;
static struct fut_oneshot_recv recv_f;
static int recv_out, send_ret, dtors;

static void value_dtor(void *v)
{
    mc_assert(*(int *)v == 7, "the dtor got a bad value");
    dtors++;
}

static void oneshot_setup(void)
{
    send_ret = 1;
    dtors = 0;
    recv_out = 0;
    mc_assert(fut_oneshot_new(sizeof(int), value_dtor, &tx, &rx) == 0,
              "oneshot_new");
    fut_oneshot_recv_init(&recv_f, &rx, &recv_out);
}

static void send_thread(void *arg)
{
    (void)arg;
    int v = 7;
    send_ret = fut_oneshot_send(&tx, &v);
}

static void tx_drop_thread(void *arg)
{
    (void)arg;
    fut_oneshot_tx_drop(&tx);
}

static void recv_until_ready(struct fut_context *cx)
{
    while (fut_poll(&recv_f.base, cx) == FUT_PENDING)
        mc_park();
}

/* (5a) recv-future poll || send: delivered once, no dtor, block freed
 * once (the leak and double-free checks). */
static void m_oneshot_recv_send(void)
{
    oneshot_setup();
    struct task *t = task_new();
    struct fut_context cx = task_cx(t);
    int th = mc_spawn(send_thread, 0);
    recv_until_ready(&cx);
    mc_join(th);
    mc_assert(recv_f.result == 0 && recv_out == 7, "value not received");
    mc_assert(send_ret == 0, "send failed with a live receiver");
    mc_assert(dtors == 0, "a received value was destroyed");
    fut_drop(&recv_f.base);
    task_finish(t);
}

/* (5b) rx drop || send, after one poll: the value is destroyed exactly
 * once or handed back to the sender (FUT_ECLOSED), never both, never
 * neither - unless the poll received it. */
static void m_oneshot_rxdrop_send(void)
{
    oneshot_setup();
    struct task *t = task_new();
    struct fut_context cx = task_cx(t);
    int th = mc_spawn(send_thread, 0);
    int received = fut_poll(&recv_f.base, &cx) == FUT_READY;
    fut_drop(&recv_f.base);
    mc_join(th);
    mc_assert(send_ret == 0 || send_ret == FUT_ECLOSED, "send result");
    if (received)
        mc_assert(recv_f.result == 0 && recv_out == 7, "bad receive");
    mc_assert(received + dtors == (send_ret == 0),
              "a sent value must be received or destroyed exactly once, "
              "a refused one neither");
    task_finish(t);
}

/* (5c) recv-future poll || tx drop: the receiver ends with FUT_ECLOSED. */
static void m_oneshot_poll_txdrop(void)
{
    oneshot_setup();
    struct task *t = task_new();
    struct fut_context cx = task_cx(t);
    int th = mc_spawn(tx_drop_thread, 0);
    recv_until_ready(&cx);
    mc_join(th);
    mc_assert(recv_f.result == FUT_ECLOSED, "closed channel not reported");
    mc_assert(dtors == 0, "dtor without a value");
    fut_drop(&recv_f.base);
    task_finish(t);
}

/* (5d) rx drop || tx drop, after one poll: the block is freed exactly
 * once and the waker dropped exactly once. */
static void m_oneshot_rxdrop_txdrop(void)
{
    oneshot_setup();
    struct task *t = task_new();
    struct fut_context cx = task_cx(t);
    int th = mc_spawn(tx_drop_thread, 0);
    if (fut_poll(&recv_f.base, &cx) == FUT_READY)
        mc_assert(recv_f.result == FUT_ECLOSED, "nothing was sent");
    fut_drop(&recv_f.base);
    mc_join(th);
    mc_assert(dtors == 0, "dtor without a value");
    task_finish(t);
}

/* (5f) recv-future poll with one waker, then with another (the slot is
 * rewritten) || send, which reads the slot before its publishing CAS:
 * the waker woken is the one registered when the CAS succeeded - never
 * the dropped first one (a use after free of its record) - and the
 * receiver is woken (no deadlock). Catches a registration that does not
 * bump GEN (ABA: the CAS succeeds on a rewritten slot). */
static void m_oneshot_rewake_send(void)
{
    oneshot_setup();
    struct task *a = task_new();
    struct task *b = task_new();
    struct fut_context cxa = task_cx(a);
    struct fut_context cxb = task_cx(b);
    int th = mc_spawn(send_thread, 0);
    if (fut_poll(&recv_f.base, &cxa) == FUT_PENDING)
        recv_until_ready(&cxb);
    mc_join(th);
    mc_assert(recv_f.result == 0 && recv_out == 7, "value not received");
    mc_assert(send_ret == 0 && dtors == 0, "send / dtor");
    fut_drop(&recv_f.base);
    task_finish(a);
    task_finish(b);
}

/* (5e) try_recv (spinning on FUT_EEMPTY) || send. */
static void m_oneshot_tryrecv_send(void)
{
    oneshot_setup();
    struct fut_oneshot_rx r = recv_f.rx; /* take the receiver back */
    recv_f.rx.ch = 0;
    int th = mc_spawn(send_thread, 0);
    int out = 0, ret;
    while ((ret = fut_oneshot_try_recv(&r, &out)) == FUT_EEMPTY)
        mc_yield(L);
    mc_join(th);
    mc_assert(ret == 0 && out == 7 && send_ret == 0, "value not received");
    mc_assert(dtors == 0, "a received value was destroyed");
}

/* ---------------------------------------------------------------- driver */

static const struct mc_model models[] = {
    {"poll_complete", m_poll_complete, -1},
    {"poll_rewake_complete", m_poll_rewake_complete, -1},
    {"poll_twice_complete", m_poll_twice_complete, -1},
    {"complete_complete", m_complete_complete, 3},
    {"complete_complete_take", m_complete_complete_take, -1},
    {"take_take", m_take_take, -1},
    {"take_take_complete", m_take_take_complete, 3},
    {"close_complete", m_close_complete, -1},
    {"oneshot_recv_send", m_oneshot_recv_send, -1},
    {"oneshot_rxdrop_send", m_oneshot_rxdrop_send, -1},
    {"oneshot_poll_txdrop", m_oneshot_poll_txdrop, -1},
    {"oneshot_rxdrop_txdrop", m_oneshot_rxdrop_txdrop, -1},
    {"oneshot_tryrecv_send", m_oneshot_tryrecv_send, -1},
    {"oneshot_rewake_send", m_oneshot_rewake_send, -1},
};

int main(int argc, char **argv)
{
    return mc_model_main("model_cell", models,
                         sizeof models / sizeof models[0], argc, argv);
}
