/* SPDX-License-Identifier: MIT */
/* Models of the bounded mpsc channel (src/sync/mpsc_bounded.c, with
 * src/sync/semaphore.c and src/sync/waitq.c), run by the model checker in
 * SC and x86-TSO, with capacity 1 so every message reuses the one slot:
 *
 *   - the slot hand-off: a sender overwrites the slot only after the
 *     receiver has read it (the message bytes are plain-annotated, so an
 *     unordered reuse is a data race), and every message arrives once, in
 *     order, then the end (C15);
 *   - no lost wakeup on either side (a parked thread nobody unparks is a
 *     deadlock), including the window where a sender has claimed the slot
 *     but not written it when the receiver goes to sleep;
 *   - room handed to a send that is then dropped goes to the next sender;
 *   - a send racing with the receiver's drop: the message is delivered to
 *     the channel (and so to the dtor) xor refused (ECLOSED), never both,
 *     never neither; no leak;
 *   - senders queued for room are served first: a try_send never barges.
 *
 *   model_mpsc [--expect KIND] [--mem sc|tso] [MODEL...]
 *
 * as model_cell (see its header and README.md). Wakers are test objects:
 * a leaked clone leaks its block, a double drop fails an assertion.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fut/chan.h"
#include "mc.h"

#define L __FILE__, __LINE__

void fut__assert_fail(const char *expr, const char *file, int line)
{
    mc__assert(0, expr, "library assertion", file, line);
    abort();
}

#include "mc_tasks.h"

/* Polls 'f' to READY on this model thread, parking on PENDING. */
static void run(struct fut_future *f)
{
    struct fut_context cx;
    fut_context_init(&cx, (struct fut_waker){my_task(), &task_vt});
    while (fut_poll(f, &cx) == FUT_PENDING)
        mc_park();
    fut_drop(f);
}

/* Futures live in mc_alloc'd blocks, not on model-thread stacks: under
 * TSO a relaxed store to a future's state word may still sit in the store
 * buffer when its frame is gone, and the checker flushes it into the
 * reused stack at thread exit; mc_free drains the buffer first. */
#define NEW(p) mc_alloc(sizeof *(p), L)

/* --------------------------------------------------------------- shared */

static struct fut_mpsc_tx tx, tx2;
static struct fut_mpsc_rx rx;
static int dtors;

static void count_dtor(void *msg)
{
    (void)msg;
    dtors++;
}

static void chan_setup(void)
{
    tasks_reset();
    dtors = 0;
    mc_assert(fut_mpsc_new(1, sizeof(int), count_dtor, &tx, &rx) == 0, "new");
}

static int send_one(struct fut_mpsc_tx *t, int v)
{
    struct fut_mpsc_send *s = NEW(s);
    fut_mpsc_send_init(s, t, &v);
    run(&s->base);
    int r = s->result;
    mc_free(s, L);
    return r;
}

static int recv_one(int *out)
{
    struct fut_mpsc_recv *r = NEW(r);
    fut_mpsc_recv_init(r, &rx, out);
    run(&r->base);
    int res = r->result;
    mc_free(r, L);
    return res;
}

/* A sender thread: sends 1 and 2 on 'tx', then drops it. */
static int sent_ret[2];

static void sender12(void *arg)
{
    (void)arg;
    sent_ret[0] = send_one(&tx, 1);
    sent_ret[1] = send_one(&tx, 2);
    fut_mpsc_tx_drop(&tx);
}

/* (1) one sender, two messages through capacity 1: the slot is reused
 * (hand-off), both arrive in order, then the end. */
static void m_send_recv(void)
{
    chan_setup();
    int th = mc_spawn(sender12, NULL);
    int a = 0, b = 0, c = 0;
    int r1 = recv_one(&a), r2 = recv_one(&b), r3 = recv_one(&c);
    mc_join(th);
    mc_assert(r1 == 0 && a == 1 && r2 == 0 && b == 2,
              "messages lost, doubled or reordered");
    mc_assert(r3 == FUT_ECLOSED, "no end of stream after the last sender");
    mc_assert(sent_ret[0] == 0 && sent_ret[1] == 0, "a send failed");
    fut_mpsc_rx_drop(&rx);
    mc_assert(dtors == 0, "a received message went to the dtor");
    tasks_finish();
}

/* (2) two senders, one message each: exactly once each, then the end.
 * Three threads: preemption-bounded. */
static void sender_v(void *arg)
{
    struct fut_mpsc_tx *t = arg;
    int v = t == &tx ? 1 : 2;
    mc_assert(send_one(t, v) == 0, "send failed");
    fut_mpsc_tx_drop(t);
}

static void m_two_senders(void)
{
    chan_setup();
    mc_assert(fut_mpsc_tx_clone(&tx, &tx2) == 0, "clone");
    int a = mc_spawn(sender_v, &tx);
    int b = mc_spawn(sender_v, &tx2);
    int x = 0, y = 0, z = 0;
    int r1 = recv_one(&x), r2 = recv_one(&y), r3 = recv_one(&z);
    mc_join(a);
    mc_join(b);
    mc_assert(r1 == 0 && r2 == 0 && x + y == 3 && x != y,
              "not each message exactly once");
    mc_assert(r3 == FUT_ECLOSED, "no end of stream");
    fut_mpsc_rx_drop(&rx);
    tasks_finish();
}

/* (3) the channel is full; sender A queues for room and is then dropped
 * (cancelled) while the receiver frees the slot; sender B sends. The
 * room that may have been handed to A must reach B (else B sleeps for
 * ever: deadlock). */
static void dropped_sender(void *arg)
{
    (void)arg;
    struct fut_context cx;
    fut_context_init(&cx, (struct fut_waker){my_task(), &task_vt});
    int v = 9;
    struct fut_mpsc_send *s = NEW(s);
    fut_mpsc_send_init(s, &tx2, &v);
    int r = fut_poll(&s->base, &cx);
    fut_drop(&s->base); /* cancelled wherever it stood */
    mc_free(s, L);
    fut_mpsc_tx_drop(&tx2);
    sent_ret[0] = r == FUT_READY ? 9 : 0; /* READY: 9 was sent */
}

static void sender5(void *arg)
{
    (void)arg;
    sent_ret[1] = send_one(&tx, 5);
    fut_mpsc_tx_drop(&tx);
}

static void m_drop_hands_on(void)
{
    chan_setup();
    mc_assert(fut_mpsc_tx_clone(&tx, &tx2) == 0, "clone");
    int zero = 0;
    mc_assert(fut_mpsc_try_send(&tx, &zero) == 0, "prefill");
    sent_ret[0] = sent_ret[1] = -1;
    int a = mc_spawn(dropped_sender, NULL);
    int b = mc_spawn(sender5, NULL);
    int got[4] = {-1, -1, -1, -1}, n = 0;
    while (n < 4 && recv_one(&got[n]) == 0)
        n++;
    mc_join(a);
    mc_join(b);
    int sum = 0;
    for (int i = 1; i < n; i++)
        sum += got[i];
    mc_assert(got[0] == 0 && sent_ret[1] == 0, "prefill or B's send");
    mc_assert(sum == 5 + sent_ret[0] && n == (sent_ret[0] ? 3 : 2),
              "a message was lost or invented");
    fut_mpsc_rx_drop(&rx);
    tasks_finish();
}

/* (4) a send racing with the receiver's drop: delivered (then passed to
 * the dtor) xor refused with ECLOSED; nothing leaks. */
static int race_ret;

static void racing_sender(void *arg)
{
    (void)arg;
    race_ret = send_one(&tx, 7);
    fut_mpsc_tx_drop(&tx);
}

static void m_send_rxdrop(void)
{
    chan_setup();
    int th = mc_spawn(racing_sender, NULL);
    fut_mpsc_rx_drop(&rx);
    mc_join(th);
    mc_assert((race_ret == 0 && dtors == 1) ||
                  (race_ret == FUT_ECLOSED && dtors == 0),
              "the message was both refused and kept, or neither");
    tasks_finish();
}

/* (5) permits: a reservation held by one thread, the slot's message
 * received by the other, then the permit sends into the reused slot. */
static void permit_sender(void *arg)
{
    (void)arg;
    struct fut_mpsc_reserve *rs = NEW(rs);
    fut_mpsc_reserve_init(rs, &tx);
    run(&rs->base);
    mc_assert(rs->result == 0, "reserve");
    int v = 2;
    mc_assert(fut_mpsc_permit_send(&rs->permit, &v) == 0, "permit send");
    mc_free(rs, L);
    fut_mpsc_tx_drop(&tx);
}

static void m_permit(void)
{
    chan_setup();
    int one = 1;
    mc_assert(fut_mpsc_try_send(&tx, &one) == 0, "prefill");
    int th = mc_spawn(permit_sender, NULL);
    int a = 0, b = 0, c = 0;
    int r1 = recv_one(&a), r2 = recv_one(&b), r3 = recv_one(&c);
    mc_join(th);
    mc_assert(r1 == 0 && a == 1 && r2 == 0 && b == 2 && r3 == FUT_ECLOSED,
              "permit message lost, reordered, or no end");
    fut_mpsc_rx_drop(&rx);
    tasks_finish();
}

/* (6) FIFO among senders: the channel is full and A is queued for room;
 * one thread receives (the credit goes back and must reach A), another
 * try_sends meanwhile and must be refused, even in the instant the credit
 * sits in the word before the receiver hands it to A. */
static void receive_one(void *arg)
{
    (void)arg;
    int v = 0;
    mc_assert(fut_mpsc_try_recv(&rx, &v) == 0 && v == 1, "prefill");
}

static void late_try_send(void *arg)
{
    (void)arg;
    int v = 3;
    mc_assert(fut_mpsc_try_send(&tx2, &v) == FUT_EFULL,
              "a try_send barged past a queued sender");
    fut_mpsc_tx_drop(&tx2);
}

static void m_no_barging(void)
{
    chan_setup();
    mc_assert(fut_mpsc_tx_clone(&tx, &tx2) == 0, "clone");
    int one = 1, two = 2;
    mc_assert(fut_mpsc_try_send(&tx, &one) == 0, "prefill");
    struct fut_mpsc_send *a = NEW(a);
    fut_mpsc_send_init(a, &tx, &two);
    struct fut_context cx;
    fut_context_init(&cx, (struct fut_waker){my_task(), &task_vt});
    mc_assert(fut_poll(&a->base, &cx) == FUT_PENDING, "A queued");
    int r = mc_spawn(receive_one, NULL);
    int b = mc_spawn(late_try_send, NULL);
    while (fut_poll(&a->base, &cx) == FUT_PENDING)
        mc_park();
    mc_join(r);
    mc_join(b);
    mc_assert(a->result == 0, "A's send");
    fut_drop(&a->base);
    mc_free(a, L);
    fut_mpsc_tx_drop(&tx);
    int v = 0;
    mc_assert(fut_mpsc_try_recv(&rx, &v) == 0 && v == 2, "A's message");
    fut_mpsc_rx_drop(&rx);
    tasks_finish();
}

/* ------------------------------------------------------------- driver */

static const struct mc_model models[] = {
    /* Bounds: exhaustive within them; chosen so each run takes seconds
     * (send_recv: 1e5 executions at 4, 1e6 at 5 - both pass). */
    {"send_recv", m_send_recv, 4},
    {"two_senders", m_two_senders, 3},
    {"drop_hands_on", m_drop_hands_on, 3},
    {"send_rxdrop", m_send_rxdrop, -1},
    {"permit", m_permit, 4},
    {"no_barging", m_no_barging, 4},
};

int main(int argc, char **argv)
{
    return mc_model_main("model_mpsc", models,
                         sizeof models / sizeof models[0], argc, argv);
}
