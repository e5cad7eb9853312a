/* SPDX-License-Identifier: MIT */
/* The bounded flavor of the mpsc channel (fut_mpsc_new): a lock-free
 * ring whose free capacity is a FIFO semaphore core, behind the core of
 * mpsc_chan.c; with the permits, which only this flavor has.
 *
 * Rules. One word, 'sem.state' (W), holds everything senders and the
 * receiver race on:
 *
 *   bits 32..63  tail: the next position to claim (mod 2^32)
 *   bits  3..31  free credits (capacity not taken by a message or a
 *                reservation), the permit field of the FIFO semaphore
 *                core (semaphore.c), whose rules and waiter queue govern
 *                senders waiting for room
 *   bit 2        RX_WAITING: the receiver sleeps (its waker is in
 *                'rx_waker'); whoever clears it must wake it
 *   bit 1        CLOSED (receiver closed or dropped): no new credits
 *   bit 0        WAITERS: senders are queued for room
 *
 * Slot p mod N (N = capacity rounded up to a power of two) holds the
 * message of position p; its 'seq' is p + 1 (mod 2^32) once the message
 * is written (release store), so the receiver, which owns 'head', knows
 * the slot at 'head' is ready when it reads seq == head + 1 (acquire).
 *
 *   - send (fast path): ONE CAS on W takes a credit, takes position
 *     'tail', and clears RX_WAITING - refused while WAITERS or CLOSED is
 *     set, so senders that queued for room are served first (FIFO). Then
 *     write the slot, store seq, and wake the receiver if the CAS cleared
 *     RX_WAITING.
 *   - send (slow path), reserve, permits: the credit comes from the
 *     semaphore core (try_acquire, or a grant to the queued waiter node
 *     inside the future); the position from a second CAS on W
 *     (claim_held), which also clears RX_WAITING.
 *   - receive: read the slot at 'head', head += 1, give the credit back
 *     with the semaphore's release (ONE fetch_add on W; when WAITERS was
 *     set it hands the credit to the first queued sender).
 *   - the receiver goes to sleep by registering its waker in 'rx_waker'
 *     and then setting RX_WAITING with a fetch_or, which also returns the
 *     tail: if tail == head, any later claim sees the flag (one RMW
 *     order on W) and wakes us; if tail != head a sender claimed 'head'
 *     before our flag and has not written it yet - it will not wake us, so
 *     we retry (wake ourselves, PENDING) instead of sleeping. That window
 *     is a few instructions long.
 *
 * Why a claimed slot is free (the slot hand-off): all updates of W are
 * RMWs. A claim of position p reads W with free credits >= 0, so at most
 * 'capacity' positions and reservations are outstanding: positions up to
 * p - capacity >= p - N were received and their credits returned earlier
 * in W's order. The receiver's credit release (release) follows its read
 * of the slot and the claim's CAS is acquire, so the read happens before
 * the overwrite. A reservation holds a credit without a position, so the
 * argument covers permits too.
 *
 * End of stream (see mpsc_chan.c for the senders' count): after close,
 * the end is "CLOSED, tail == head and every credit back" in one snapshot
 * of W; permit drops after CLOSED wake the receiver.
 *
 * Seeded bugs (FUT_MC_BUG_*, model-checker builds only): MPSC_EARLY_CREDIT
 * returns the credit before reading the slot; MPSC_NO_WAKE makes senders
 * ignore RX_WAITING; MPSC_NO_RETRY lets the receiver sleep although a
 * claim of 'head' is in flight; MPSC_BARGE lets the one-CAS send ignore
 * queued senders. See test/mc/model_mpsc.c.
 */
#include "sync/mpsc_chan.h"

#define RX_WAITING FUT__SEM_AUX
#define TAIL_SHIFT 32
#define TAIL_ONE ((uintptr_t)1 << TAIL_SHIFT)
#define CREDIT_MASK (((uintptr_t)1 << (TAIL_SHIFT - FUT__SEM_SHIFT)) - 1)

_Static_assert(FUT_MPSC_MAX_CAPACITY <= CREDIT_MASK,
               "the capacity must fit the credit field");

struct slot {
    fut__aword seq; /* position + 1 once written; the message follows */
};

static inline struct slot *slot_at(struct fut__mpsc *ch, uint32_t pos)
{
    return (struct slot *)(void *)(ch->slots +
                                   (size_t)(pos & ch->mask) * ch->stride);
}

static inline void *slot_msg(struct slot *s)
{
    return (unsigned char *)s + sizeof(fut__aword);
}

/* ------------------------------------------------------------------ send */

/* Takes a credit and a position with one CAS. 0, FUT_EFULL, FUT_ECLOSED. */
static int claim_fast(struct fut__mpsc *ch, uint32_t *pos, uintptr_t *was)
{
    uintptr_t s = fut__load(&ch->sem.state, FUT__RELAXED);
    for (;;) {
        if (s & FUT__SEM_CLOSED)
            return FUT_ECLOSED;
#ifndef FUT_MC_BUG_MPSC_BARGE
        if ((s & FUT__SEM_WAITERS) || fut__sem_permits(&ch->sem, s) == 0)
            return FUT_EFULL;
#else
        if (fut__sem_permits(&ch->sem, s) == 0) /* ignores queued senders */
            return FUT_EFULL;
#endif
        uintptr_t ns = (s - FUT__SEM_ONE + TAIL_ONE) & ~RX_WAITING;
        /* Acquire: pairs with the receiver's credit release, so the slot
         * we are about to overwrite was read (the slot hand-off). */
        if (fut__cas(&ch->sem.state, &s, ns, FUT__ACQUIRE, FUT__RELAXED))
            break;
    }
    *pos = (uint32_t)(s >> TAIL_SHIFT);
    *was = s;
    return 0;
}

/* With a credit held (permit or granted send): takes a position. */
static void claim_held(struct fut__mpsc *ch, uint32_t *pos, uintptr_t *was)
{
    uintptr_t s = fut__load(&ch->sem.state, FUT__RELAXED);
    /* Acquire: as in claim_fast (the argument counts held credits). */
    while (!fut__cas(&ch->sem.state, &s, (s + TAIL_ONE) & ~RX_WAITING,
                     FUT__ACQUIRE, FUT__RELAXED))
        ;
    *pos = (uint32_t)(s >> TAIL_SHIFT);
    *was = s;
}

static inline void publish(struct fut__mpsc *ch, uint32_t pos, uintptr_t was,
                           const void *msg)
{
    struct slot *sl = slot_at(ch, pos);
    FUT_ASSERT((uint32_t)fut__load(&sl->seq, FUT__RELAXED) !=
               (uint32_t)(pos + 1));
    fut__plain_write(slot_msg(sl), ch->msg_size);
    fut__copy_value(slot_msg(sl), msg, ch->msg_size);
    /* Release: the bytes before the flag (pairs with the receiver's
     * acquire load of 'seq'). */
    fut__store(&sl->seq, (uintptr_t)(uint32_t)(pos + 1), FUT__RELEASE);
#ifndef FUT_MC_BUG_MPSC_NO_WAKE
    if (FUT_UNLIKELY(was & RX_WAITING))
        fut__awaker_wake(&ch->rx_waker);
#else
    (void)was;
#endif
}

/* Gives a held credit back without sending (permit drop, refused send). */
static void credit_return(struct fut__mpsc *ch)
{
    /* Release: as fut__sem_release. */
    uintptr_t old =
        fut__fetch_add(&ch->sem.state, FUT__SEM_ONE, FUT__RELEASE);
    if (old & FUT__SEM_WAITERS)
        fut__sem_release_slow(&ch->sem);
    if (old & FUT__SEM_CLOSED)
        fut__awaker_wake(&ch->rx_waker); /* it may wait for all credits */
}

/* Sends with a credit held. 0, or FUT_ECLOSED (receiver dropped: the
 * credit is given back, 'msg' not read). */
static int send_held(struct fut__mpsc *ch, const void *msg)
{
    /* Acquire: pairs with the receiver's release store in fut_mpsc_rx_drop
     * (mpsc_chan.c). */
    if (fut__load(&ch->rx_gone, FUT__ACQUIRE)) {
        credit_return(ch);
        return FUT_ECLOSED;
    }
    uint32_t pos;
    uintptr_t was;
    claim_held(ch, &pos, &was);
    publish(ch, pos, was, msg);
    return 0;
}

static int b_try_send(struct fut__mpsc *ch, const void *msg)
{
    uint32_t pos;
    uintptr_t was;
    int r = claim_fast(ch, &pos, &was);
    if (r)
        return r;
    publish(ch, pos, was, msg);
    return 0;
}

/* ------------------------------------------------ send and reserve futures */

/* The part of credit_poll that goes through the semaphore core: queue
 * for a credit, or collect one granted from the queue. Out of line, so
 * the one-CAS send that precedes it inlines without its register saves. */
__attribute__((noinline)) static int credit_wait(struct fut__mpsc *ch,
                                                 struct fut__wnode *w,
                                                 struct fut_context *cx,
                                                 int *r, int fresh)
{
    if (fut__sem_poll(&ch->sem, w, cx) == FUT_PENDING)
        return FUT_PENDING;
    uintptr_t st = fut__load(&w->st, FUT__RELAXED);
    if (FUT__SEMW_TAG(st) == FUT__SEMW_CLOSED) {
        fut__store(&w->st, FUT__SEMW_IDLE, FUT__RELAXED);
        *r = FUT_ECLOSED;
        return FUT_READY;
    }
    /* Granted from the queue: keep the grant across a coop PENDING (a
     * drop hands it on). */
    if (!fresh && !fut_coop_proceed(cx))
        return FUT_PENDING;
    fut__store(&w->st, FUT__SEMW_IDLE, FUT__RELAXED);
    *r = 0;
    return FUT_READY;
}

/* Gets a credit for a send or reserve future. FUT_READY with '*r' = 0
 * (credit held; the node is IDLE again), 1 ('fast' was sent already) or
 * FUT_ECLOSED; or FUT_PENDING. 'fast' (may be NULL): a fresh send tries
 * the one-CAS send first. */
static inline int credit_poll(struct fut__mpsc *ch, struct fut__wnode *w,
                              struct fut_context *cx, int *r,
                              const void *fast)
{
    int fresh =
        FUT__SEMW_TAG(fut__load(&w->st, FUT__RELAXED)) == FUT__SEMW_IDLE;
    if (fresh) {
        /* Spend the budget unit before trying (see fut__sem_poll_coop). */
        if (!fut_coop_proceed(cx))
            return FUT_PENDING;
        if (fast) {
            uint32_t pos;
            uintptr_t was;
            int e = claim_fast(ch, &pos, &was);
            if (FUT_LIKELY(e != FUT_EFULL)) {
                if (e == 0)
                    publish(ch, pos, was, fast);
                *r = e == 0 ? 1 : e;
                return FUT_READY;
            }
        }
    }
    return credit_wait(ch, w, cx, r, fresh);
}

/* Drop of a send/reserve future: hands a grant on (semaphore core), and
 * tells a receiver waiting for the last credit after close. */
static void credit_cancel(struct fut__mpsc *ch, struct fut__wnode *w)
{
    if (FUT__SEMW_TAG(fut__load(&w->st, FUT__ACQUIRE)) == FUT__SEMW_IDLE)
        return;
    fut__sem_cancel(&ch->sem, w);
    if (fut__load(&ch->sem.state, FUT__RELAXED) & FUT__SEM_CLOSED)
        fut__awaker_wake(&ch->rx_waker);
}

static int b_send_poll(struct fut_mpsc_send *s, struct fut_context *cx,
                       struct fut__mpsc *ch)
{
    int r;
    if (credit_poll(ch, fut__wnode_of(&s->w), cx, &r, s->msg) == FUT_PENDING)
        return FUT_PENDING;
    if (r == 0)
        r = send_held(ch, s->msg);
    s->result = r == 1 ? 0 : r;
    return FUT_READY;
}

static int b_reserve_poll(struct fut__mpsc *ch, struct fut__wnode *w,
                          struct fut_context *cx, int *r)
{
    return credit_poll(ch, w, cx, r, NULL);
}

static int b_try_reserve(struct fut__mpsc *ch)
{
    int r = fut__sem_try_acquire(&ch->sem, 1);
    return r == FUT_EAGAIN ? FUT_EFULL : r;
}

static int b_is_closed(struct fut__mpsc *ch)
{
    return (fut__load(&ch->sem.state, FUT__RELAXED) & FUT__SEM_CLOSED) != 0;
}

/* --------------------------------------------------------------- permits */

int fut_mpsc_permit_send(struct fut_mpsc_permit *p, const void *msg)
{
    FUT_ARG_CHECK(msg, "'msg' is NULL");
    FUT_ARG_CHECK(p, "'p' is NULL");
    struct fut__mpsc *ch = p->ch;
    if (!ch)
        return FUT_EINVAL;
    p->ch = NULL;
    int r = send_held(ch, msg);
    fut__mpsc_sender_release(ch);
    return r;
}

void fut_mpsc_permit_drop(struct fut_mpsc_permit *p)
{
    FUT_ARG_VOID(p, "'p' is NULL");
    struct fut__mpsc *ch = p->ch;
    if (!ch)
        return;
    p->ch = NULL;
    credit_return(ch);
    fut__mpsc_sender_release(ch);
}

/* --------------------------------------------------------------- receive */

static inline int slot_ready(struct fut__mpsc *ch, struct slot **out)
{
    struct slot *sl = slot_at(ch, ch->head);
    *out = sl;
    /* Acquire: pairs with the sender's release store in publish. */
    return (uint32_t)fut__load(&sl->seq, FUT__ACQUIRE) ==
           (uint32_t)(ch->head + 1);
}

static inline void take(struct fut__mpsc *ch, struct slot *sl, void *out)
{
#ifdef FUT_MC_BUG_MPSC_EARLY_CREDIT
    ch->head++;
    fut__sem_release(&ch->sem, 1); /* the slot may be reused at once */
    fut__plain_read(slot_msg(sl), ch->msg_size);
    fut__copy_value(out, slot_msg(sl), ch->msg_size);
#else
    fut__plain_read(slot_msg(sl), ch->msg_size);
    fut__copy_value(out, slot_msg(sl), ch->msg_size);
    ch->head++;
    /* The credit goes back after the read (release: the slot hand-off). */
    fut__sem_release(&ch->sem, 1);
#endif
}

/* Nothing at 'head' and no claim of it in flight (W = 'w'): is this the
 * end? */
static int b_at_end(struct fut__mpsc *ch, uintptr_t w)
{
    if ((w & FUT__SEM_CLOSED) && fut__sem_permits(&ch->sem, w) == ch->cap)
        return 1;
    /* Acquire: pairs with the last sender's release decrement, so its
     * sends are visible; the caller re-checks the ring. */
    return fut__load(&ch->senders, FUT__ACQUIRE) == 0;
}

static int b_poll_recv(struct fut__mpsc *ch, struct fut_context *cx,
                       void *out, int *result, int *registered)
{
    struct slot *sl;
    if (slot_ready(ch, &sl))
        goto take;
    if (ch->ended)
        goto end;
    fut__awaker_register(&ch->rx_waker, &cx->waker);
    *registered = 1;
    for (;;) {
        /* Acq_rel: the flag tells the next claimer to wake us; acquire
         * sees the credits returned by permit drops (end check). */
        uintptr_t w = fut__fetch_or(&ch->sem.state, RX_WAITING, FUT__ACQ_REL);
        if (slot_ready(ch, &sl))
            goto take;
        if ((uint32_t)(w >> TAIL_SHIFT) != ch->head) {
#ifndef FUT_MC_BUG_MPSC_NO_RETRY
            /* 'head' was claimed before our flag and is being written:
             * its sender will not wake us. Retry, do not sleep. */
            fut__spin_hint();
            fut_waker_wake_by_ref(&cx->waker);
#endif
            return FUT_PENDING;
        }
        if (!b_at_end(ch, w))
            return FUT_PENDING;
        if (slot_ready(ch, &sl))
            goto take;
        w = fut__load(&ch->sem.state, FUT__ACQUIRE);
        if ((uint32_t)(w >> TAIL_SHIFT) == ch->head)
            goto end;
        /* Claims we had not seen (their senders are gone): loop. */
    }
take:
    if (!fut_coop_proceed(cx))
        return FUT_PENDING;
    take(ch, sl, out);
    *result = 0;
    return FUT_READY;
end:
    ch->ended = 1;
    *result = FUT_ECLOSED;
    return FUT_READY;
}

static int b_recv_poll(struct fut_mpsc_recv *r, struct fut_context *cx,
                       struct fut__mpsc *ch)
{
    struct slot *sl;
    /* The message at 'head' is there (b_poll_recv's first step, inlined:
     * the common case of a busy channel). */
    if (slot_ready(ch, &sl)) {
        if (!fut_coop_proceed(cx))
            return FUT_PENDING;
        take(ch, sl, r->out);
        r->result = 0;
    } else if (b_poll_recv(ch, cx, r->out, &r->result, &r->registered) ==
               FUT_PENDING) {
        return FUT_PENDING;
    }
    fut__mpsc_recv_done(ch, r);
    return FUT_READY;
}

static int b_try_recv(struct fut__mpsc *ch, void *out)
{
    struct slot *sl;
    for (;;) {
        if (slot_ready(ch, &sl)) {
            take(ch, sl, out);
            return 0;
        }
        if (ch->ended)
            return FUT_ECLOSED;
        uintptr_t w = fut__load(&ch->sem.state, FUT__ACQUIRE);
        if ((uint32_t)(w >> TAIL_SHIFT) != ch->head || !b_at_end(ch, w))
            return FUT_EEMPTY;
        if (slot_ready(ch, &sl))
            continue;
        w = fut__load(&ch->sem.state, FUT__ACQUIRE);
        if ((uint32_t)(w >> TAIL_SHIFT) == ch->head) {
            ch->ended = 1;
            return FUT_ECLOSED;
        }
    }
}

static void b_wake_rx(struct fut__mpsc *ch)
{
    fut__awaker_wake(&ch->rx_waker);
}

static void b_withdraw(struct fut__mpsc *ch)
{
    fut__awaker_clear(&ch->rx_waker);
}

static void b_close(struct fut__mpsc *ch)
{
    fut__sem_close(&ch->sem);
}

/* ------------------------------------------------------------- lifetime */

static void b_rx_drop(struct fut__mpsc *ch)
{
    fut__sem_close(&ch->sem); /* queued senders: FUT_ECLOSED */
    struct slot *sl;
    while (slot_ready(ch, &sl)) {
        fut__plain_read(slot_msg(sl), ch->msg_size);
        if (ch->dtor)
            ch->dtor(slot_msg(sl));
        ch->head++;
    }
    fut__awaker_clear(&ch->rx_waker);
}

static void b_free(struct fut__mpsc *ch)
{
    uint32_t tail =
        (uint32_t)(fut__load(&ch->sem.state, FUT__RELAXED) >> TAIL_SHIFT);
    for (uint32_t p = ch->head; p != tail; p++) {
        struct slot *sl = slot_at(ch, p);
        FUT_ASSERT((uint32_t)fut__load(&sl->seq, FUT__RELAXED) ==
                   (uint32_t)(p + 1));
        fut__plain_read(slot_msg(sl), ch->msg_size);
        if (ch->dtor)
            ch->dtor(slot_msg(sl));
    }
}

static const struct fut__mpsc_ops bounded_ops = {
    .try_send = b_try_send,
    .send_poll = b_send_poll,
    .try_reserve = b_try_reserve,
    .reserve_poll = b_reserve_poll,
    .cancel = credit_cancel,
    .is_closed = b_is_closed,
    .wake_rx = b_wake_rx,
    .try_recv = b_try_recv,
    .poll_recv = b_poll_recv,
    .recv_poll = b_recv_poll,
    .withdraw = b_withdraw,
    .close = b_close,
    .rx_drop = b_rx_drop,
    .free = b_free,
};

int fut_mpsc_new(size_t capacity, size_t msg_size, void (*dtor)(void *msg),
                 struct fut_mpsc_tx *tx, struct fut_mpsc_rx *rx)
{
    FUT_ARG_CHECK(tx, "'tx' is NULL");
    FUT_ARG_CHECK(rx, "'rx' is NULL");
    int r = fut__mpsc_prepare(msg_size, tx, rx);
    if (r || capacity == 0 || capacity > FUT_MPSC_MAX_CAPACITY)
        return FUT_EINVAL;
    size_t slots = 1;
    while (slots < capacity)
        slots <<= 1;
    size_t stride = (sizeof(fut__aword) + msg_size + 7) & ~(size_t)7;
    if (stride > (SIZE_MAX - sizeof(struct fut__mpsc)) / slots)
        return FUT_EINVAL;
    struct fut__mpsc *ch =
        fut__mpsc_alloc(&bounded_ops, msg_size, slots * stride, dtor);
    if (!ch)
        return FUT_ENOMEM;
    ch->stride = stride;
    ch->mask = (uint32_t)(slots - 1);
    ch->cap = (uint32_t)capacity;
    fut__sem_init(&ch->sem, capacity, CREDIT_MASK);
    for (size_t i = 0; i < slots; i++)
        fut__aword_init(&slot_at(ch, (uint32_t)i)->seq, 0);
    fut__awaker_init(&ch->rx_waker);
    fut__mpsc_open(ch, tx, rx);
    return 0;
}
