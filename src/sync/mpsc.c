/* Multi-producer, single-consumer channels: bounded (a lock-free ring)
 * and unbounded (a growable ring under a short lock).
 *
 * ---------------------------------------------------------------- bounded
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
 * End of stream: 'senders' counts senders and permits; the last one to go
 * wakes the receiver, which checks 'senders' after registering (so one of
 * the two sees the other). After close, the end is "CLOSED, tail == head
 * and every credit back" in one snapshot of W; permit drops after CLOSED
 * wake the receiver.
 *
 * Lifetime: 'refs' counts every handle and permit; the last release
 * frees the block, passing unreceived messages to the dtor.
 *
 * -------------------------------------------------------------- unbounded
 *
 * A ring buffer ('ubuf', 'ucap' a power of two) under 'ulock', doubled
 * when full; the receiver's waker is in 'uwaker' under the same lock and
 * woken after unlocking. 'uclosed' (under the lock) refuses sends.
 *
 * Seeded bugs (FUT_MC_BUG_*, model-checker builds only): MPSC_EARLY_CREDIT
 * returns the credit before reading the slot; MPSC_NO_WAKE makes senders
 * ignore RX_WAITING; MPSC_NO_RETRY lets the receiver sleep although a
 * claim of 'head' is in flight; MPSC_BARGE lets the one-CAS send ignore
 * queued senders. See test/mc/model_mpsc.c.
 */
#include <string.h>

#include "fut/chan.h"
#include "sync/sync_internal.h"

#define RX_WAITING FUT__SEM_AUX
#define TAIL_SHIFT 32
#define TAIL_ONE ((uintptr_t)1 << TAIL_SHIFT)
#define CREDIT_MASK (((uintptr_t)1 << (TAIL_SHIFT - FUT__SEM_SHIFT)) - 1)

_Static_assert(FUT_MPSC_MAX_CAPACITY <= CREDIT_MASK,
               "the capacity must fit the credit field");

struct slot {
    fut__aword seq; /* position + 1 once written; the message follows */
};

struct fut__mpsc {
    /* read-only after creation */
    size_t msg_size;
    size_t stride;      /* bounded: bytes per slot */
    size_t alloc_size;  /* bytes of this block */
    uint32_t mask;      /* bounded: slots - 1 */
    uint32_t cap;       /* bounded: capacity */
    int bounded;
    void (*dtor)(void *msg);
    unsigned char *slots;
    fut__aword senders; /* senders + permits */
    fut__aword refs;    /* senders + permits + receiver */
    fut__aword rx_gone; /* 1 once the receiver was dropped */
    char pad0[64];
    struct fut__sem sem; /* bounded: W (see the rules) and sender queue */
    char pad1[64];
    /* the receiver's (read by the last handle at free time) */
    uint32_t head;
    int ended; /* the receiver returned the end */
    struct fut__awaker rx_waker;
    /* unbounded: under 'ulock' */
    struct fut__lock ulock;
    int uclosed;
    unsigned char *ubuf;
    size_t ucap, uhead, ulen;
    struct fut_waker uwaker;
    char pad2[64];
};

/* Message copies: constant sizes become plain moves. */
static inline void copy_msg(void *dst, const void *src, size_t n)
{
    switch (n) {
    case 4:
        memcpy(dst, src, 4);
        break;
    case 8:
        memcpy(dst, src, 8);
        break;
    case 16:
        memcpy(dst, src, 16);
        break;
    default:
        memcpy(dst, src, n);
        break;
    }
}

static inline struct slot *slot_at(struct fut__mpsc *ch, uint32_t pos)
{
    return (struct slot *)(void *)(ch->slots +
                                   (size_t)(pos & ch->mask) * ch->stride);
}

static inline void *slot_msg(struct slot *s)
{
    return (unsigned char *)s + sizeof(fut__aword);
}

/* -------------------------------------------------------------- lifetime */

static void chan_free(struct fut__mpsc *ch)
{
    if (ch->bounded) {
        uint32_t tail = (uint32_t)(fut__load(&ch->sem.state, FUT__RELAXED) >>
                                   TAIL_SHIFT);
        for (uint32_t p = ch->head; p != tail; p++) {
            struct slot *sl = slot_at(ch, p);
            FUT_ASSERT((uint32_t)fut__load(&sl->seq, FUT__RELAXED) ==
                       (uint32_t)(p + 1));
            fut__plain_read(slot_msg(sl), ch->msg_size);
            if (ch->dtor)
                ch->dtor(slot_msg(sl));
        }
    } else if (ch->ubuf) {
        FUT_ASSERT(ch->ulen == 0); /* the receiver's drop drained it */
        fut__free(ch->ubuf, ch->ucap * ch->msg_size);
    }
    fut__free(ch, ch->alloc_size);
}

static void ref_release(struct fut__mpsc *ch)
{
    /* Acq_rel: every handle's last access happens before the free. */
    if (fut__fetch_sub(&ch->refs, 1, FUT__ACQ_REL) == 1)
        chan_free(ch);
}

static void wake_rx(struct fut__mpsc *ch)
{
    if (ch->bounded) {
        fut__awaker_wake(&ch->rx_waker);
        return;
    }
    fut__lock_acquire(&ch->ulock);
    struct fut_waker w = ch->uwaker;
    ch->uwaker.vt = 0;
    fut__lock_release(&ch->ulock);
    if (fut_waker_is_set(&w))
        fut_waker_wake(&w);
}

/* A sender or a permit goes away. */
static void sender_release(struct fut__mpsc *ch)
{
    /* Acq_rel: our sends happen before the receiver's end check. */
    if (fut__fetch_sub(&ch->senders, 1, FUT__ACQ_REL) == 1)
        wake_rx(ch);
    ref_release(ch);
}

static void sender_acquire(struct fut__mpsc *ch)
{
    /* Relaxed: the caller holds a reference already. */
    fut__fetch_add(&ch->senders, 1, FUT__RELAXED);
    fut__fetch_add(&ch->refs, 1, FUT__RELAXED);
}

static int chan_new(size_t capacity, size_t msg_size, void (*dtor)(void *),
                    struct fut_mpsc_tx *tx, struct fut_mpsc_rx *rx)
{
    tx->ch = NULL;
    rx->ch = NULL;
    int bounded = capacity != 0;
    if (msg_size == 0 || msg_size > ((size_t)1 << 32) ||
        capacity > FUT_MPSC_MAX_CAPACITY)
        return FUT_EINVAL;
    size_t slots = 1, stride = 0, bytes = sizeof(struct fut__mpsc);
    if (bounded) {
        while (slots < capacity)
            slots <<= 1;
        stride = (sizeof(fut__aword) + msg_size + 7) & ~(size_t)7;
        if (stride > (SIZE_MAX - bytes) / slots)
            return FUT_EINVAL;
        bytes += slots * stride;
    }
    struct fut__mpsc *ch = fut__alloc(bytes);
    if (!ch)
        return FUT_ENOMEM;
    memset(ch, 0, sizeof *ch);
    ch->msg_size = msg_size;
    ch->stride = stride;
    ch->alloc_size = bytes;
    ch->mask = (uint32_t)(slots - 1);
    ch->cap = (uint32_t)capacity;
    ch->bounded = bounded;
    ch->dtor = dtor;
    ch->slots = (unsigned char *)ch + sizeof *ch;
    fut__aword_init(&ch->senders, 1);
    fut__aword_init(&ch->refs, 2);
    fut__aword_init(&ch->rx_gone, 0);
    fut__sem_init(&ch->sem, bounded ? capacity : 0, CREDIT_MASK);
    for (size_t i = 0; bounded && i < slots; i++)
        fut__aword_init(&slot_at(ch, (uint32_t)i)->seq, 0);
    ch->head = 0;
    ch->ended = 0;
    fut__awaker_init(&ch->rx_waker);
    fut__lock_init(&ch->ulock);
    ch->uwaker.vt = 0;
    ch->uwaker.data = 0;
    tx->ch = ch;
    rx->ch = ch;
    tx->gen = FUT_HANDLE_NEW(ch);
    rx->gen = FUT_HANDLE_NEW(ch);
    return 0;
}

int fut_mpsc_new(size_t capacity, size_t msg_size, void (*dtor)(void *msg),
                 struct fut_mpsc_tx *tx, struct fut_mpsc_rx *rx)
{
    FUT_ARG_CHECK(tx, "'tx' is NULL");
    FUT_ARG_CHECK(rx, "'rx' is NULL");
    if (capacity == 0) {
        tx->ch = NULL;
        rx->ch = NULL;
        return FUT_EINVAL;
    }
    return chan_new(capacity, msg_size, dtor, tx, rx);
}

int fut_mpsc_unbounded_new(size_t msg_size, void (*dtor)(void *msg),
                           struct fut_mpsc_tx *tx, struct fut_mpsc_rx *rx)
{
    FUT_ARG_CHECK(tx, "'tx' is NULL");
    FUT_ARG_CHECK(rx, "'rx' is NULL");
    return chan_new(0, msg_size, dtor, tx, rx);
}

int fut_mpsc_tx_clone(const struct fut_mpsc_tx *tx, struct fut_mpsc_tx *out)
{
    FUT_ARG_CHECK(tx, "'tx' is NULL");
    FUT_ARG_CHECK(out, "'out' is NULL");
    out->ch = tx->ch;
    out->gen = 0;
    if (!tx->ch)
        return FUT_EINVAL;
    FUT_HANDLE_CHECK(tx->ch, tx->gen, __func__);
    sender_acquire(tx->ch);
    out->gen = FUT_HANDLE_NEW(tx->ch);
    return 0;
}

void fut_mpsc_tx_drop(struct fut_mpsc_tx *tx)
{
    FUT_ARG_VOID(tx, "'tx' is NULL");
    struct fut__mpsc *ch = tx->ch;
    if (!ch)
        return;
    FUT_HANDLE_END(ch, tx->gen, __func__);
    tx->ch = NULL;
    sender_release(ch);
}

int fut_mpsc_tx_is_closed(const struct fut_mpsc_tx *tx)
{
    FUT_ARG_OR(tx, "'tx' is NULL", 0);
    struct fut__mpsc *ch = tx->ch;
    if (!ch)
        return 1;
    FUT_HANDLE_CHECK(ch, tx->gen, __func__);
    if (ch->bounded)
        return (fut__load(&ch->sem.state, FUT__RELAXED) &
                FUT__SEM_CLOSED) != 0;
    fut__lock_acquire(&ch->ulock);
    int c = ch->uclosed;
    fut__lock_release(&ch->ulock);
    return c;
}

/* ------------------------------------------------------- bounded: send */

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

static inline void publish(struct fut__mpsc *ch, uint32_t pos,
                           uintptr_t was, const void *msg)
{
    struct slot *sl = slot_at(ch, pos);
    FUT_ASSERT((uint32_t)fut__load(&sl->seq, FUT__RELAXED) !=
               (uint32_t)(pos + 1));
    fut__plain_write(slot_msg(sl), ch->msg_size);
    copy_msg(slot_msg(sl), msg, ch->msg_size);
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
    uintptr_t old = fut__fetch_add(&ch->sem.state, FUT__SEM_ONE,
                                   FUT__RELEASE);
    if (old & FUT__SEM_WAITERS)
        fut__sem_release_slow(&ch->sem);
    if (old & FUT__SEM_CLOSED)
        fut__awaker_wake(&ch->rx_waker); /* it may wait for all credits */
}

/* Sends with a credit held. 0, or FUT_ECLOSED (receiver dropped: the
 * credit is given back, 'msg' not read). */
static int send_held(struct fut__mpsc *ch, const void *msg)
{
    /* Acquire: pairs with the receiver's release store in rx_drop. */
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

/* --------------------------------------------------- unbounded: send */

static int u_grow(struct fut__mpsc *ch)
{
    size_t ncap = ch->ucap ? ch->ucap * 2 : 16;
    if (ncap > SIZE_MAX / ch->msg_size)
        return FUT_ENOMEM;
    unsigned char *nb = fut__alloc(ncap * ch->msg_size);
    if (!nb)
        return FUT_ENOMEM;
    for (size_t i = 0; i < ch->ulen; i++)
        memcpy(nb + i * ch->msg_size,
               ch->ubuf + ((ch->uhead + i) & (ch->ucap - 1)) * ch->msg_size,
               ch->msg_size);
    if (ch->ubuf)
        fut__free(ch->ubuf, ch->ucap * ch->msg_size);
    ch->ubuf = nb;
    ch->ucap = ncap;
    ch->uhead = 0;
    return 0;
}

static int u_push(struct fut__mpsc *ch, const void *msg)
{
    fut__lock_acquire(&ch->ulock);
    if (ch->uclosed) {
        fut__lock_release(&ch->ulock);
        return FUT_ECLOSED;
    }
    if (ch->ulen == ch->ucap) {
        int r = u_grow(ch);
        if (r) {
            fut__lock_release(&ch->ulock);
            return r;
        }
    }
    size_t at = (ch->uhead + ch->ulen) & (ch->ucap - 1);
    copy_msg(ch->ubuf + at * ch->msg_size, msg, ch->msg_size);
    ch->ulen++;
    struct fut_waker w = ch->uwaker;
    ch->uwaker.vt = 0;
    fut__lock_release(&ch->ulock);
    if (fut_waker_is_set(&w))
        fut_waker_wake(&w);
    return 0;
}

/* ------------------------------------------------------------ try_send */

int fut_mpsc_try_send(struct fut_mpsc_tx *tx, const void *msg)
{
    FUT_ARG_CHECK(tx, "'tx' is NULL");
    FUT_ARG_CHECK(msg, "'msg' is NULL");
    struct fut__mpsc *ch = tx->ch;
    if (!ch) {
        FUT_MISUSE("the sender was dropped");
        return FUT_EINVAL;
    }
    FUT_HANDLE_CHECK(ch, tx->gen, __func__);
    if (!ch->bounded)
        return u_push(ch, msg);
    uint32_t pos;
    uintptr_t was;
    int r = claim_fast(ch, &pos, &was);
    if (r)
        return r;
    publish(ch, pos, was, msg);
    return 0;
}

/* ------------------------------------------------ send and reserve futures */

/* Gets a credit for a send or reserve future (bounded). FUT_READY with
 * '*r' = 0 (credit held; the node is IDLE again), 1 ('fast' was sent
 * already) or FUT_ECLOSED; or FUT_PENDING. 'fast' (may be NULL): a fresh
 * send tries the one-CAS send first. */
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

static inline int credit_poll(struct fut__mpsc *ch, struct fut__wnode *w,
                              struct fut_context *cx, int *r,
                              const void *fast)
{
    int fresh = FUT__SEMW_TAG(fut__load(&w->st, FUT__RELAXED)) ==
                FUT__SEMW_IDLE;
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

static int send_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_mpsc_send *s = (struct fut_mpsc_send *)f;
    struct fut__mpsc *ch = s->tx->ch;
    FUT_CHECK(ch != NULL);
    if (!ch->bounded) {
        if (!fut_coop_proceed(cx))
            return FUT_PENDING;
        s->result = u_push(ch, s->msg);
        return FUT_READY;
    }
    int r;
    if (credit_poll(ch, fut__wnode_of(&s->w), cx, &r, s->msg) ==
        FUT_PENDING)
        return FUT_PENDING;
    if (r == 0)
        r = send_held(ch, s->msg);
    s->result = r == 1 ? 0 : r;
    return FUT_READY;
}

static void send_drop(struct fut_future *f)
{
    struct fut_mpsc_send *s = (struct fut_mpsc_send *)f;
    struct fut__mpsc *ch = s->tx->ch;
    if (ch && ch->bounded)
        credit_cancel(ch, fut__wnode_of(&s->w));
}

static const struct fut_future_vtable send_vt = {send_poll, send_drop,
                                                 "mpsc_send", 0};

void fut_mpsc_send_init(struct fut_mpsc_send *f, struct fut_mpsc_tx *tx,
                        const void *msg)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(tx, "'tx' is NULL");
    FUT_ARG_VOID(msg, "'msg' is NULL");
    if (tx->ch)
        FUT_HANDLE_CHECK(tx->ch, tx->gen, __func__);
    fut_future_init(&f->base, &send_vt);
    f->tx = tx;
    f->msg = msg;
    fut__semw_init(fut__wnode_of(&f->w), 1);
    f->result = FUT_ECLOSED;
}

int fut_mpsc_try_reserve(struct fut_mpsc_tx *tx, struct fut_mpsc_permit *p)
{
    FUT_ARG_CHECK(tx, "'tx' is NULL");
    FUT_ARG_CHECK(p, "'p' is NULL");
    struct fut__mpsc *ch = tx->ch;
    p->ch = NULL;
    if (!ch) {
        FUT_MISUSE("the sender was dropped");
        return FUT_EINVAL;
    }
    FUT_HANDLE_CHECK(ch, tx->gen, __func__);
    if (!ch->bounded)
        return FUT_EINVAL;
    int r = fut__sem_try_acquire(&ch->sem, 1);
    if (r)
        return r == FUT_EAGAIN ? FUT_EFULL : r;
    sender_acquire(ch);
    p->ch = ch;
    return 0;
}

int fut_mpsc_permit_send(struct fut_mpsc_permit *p, const void *msg)
{
    FUT_ARG_CHECK(msg, "'msg' is NULL");
    FUT_ARG_CHECK(p, "'p' is NULL");
    struct fut__mpsc *ch = p->ch;
    if (!ch)
        return FUT_EINVAL;
    p->ch = NULL;
    int r = send_held(ch, msg);
    sender_release(ch);
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
    sender_release(ch);
}

static int reserve_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_mpsc_reserve *rs = (struct fut_mpsc_reserve *)f;
    struct fut__mpsc *ch = rs->tx->ch;
    FUT_CHECK(ch != NULL);
    if (!ch->bounded) {
        rs->result = FUT_EINVAL;
        return FUT_READY;
    }
    int r;
    if (credit_poll(ch, fut__wnode_of(&rs->w), cx, &r, NULL) ==
        FUT_PENDING)
        return FUT_PENDING;
    rs->result = r;
    if (r == 0) {
        sender_acquire(ch);
        rs->permit.ch = ch;
    }
    return FUT_READY;
}

static void reserve_drop(struct fut_future *f)
{
    struct fut_mpsc_reserve *rs = (struct fut_mpsc_reserve *)f;
    struct fut__mpsc *ch = rs->tx->ch;
    if (ch && ch->bounded)
        credit_cancel(ch, fut__wnode_of(&rs->w));
}

static const struct fut_future_vtable reserve_vt = {
    reserve_poll, reserve_drop, "mpsc_reserve", 0};

void fut_mpsc_reserve_init(struct fut_mpsc_reserve *f,
                           struct fut_mpsc_tx *tx)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(tx, "'tx' is NULL");
    if (tx->ch)
        FUT_HANDLE_CHECK(tx->ch, tx->gen, __func__);
    fut_future_init(&f->base, &reserve_vt);
    f->tx = tx;
    fut__semw_init(fut__wnode_of(&f->w), 1);
    f->result = FUT_ECLOSED;
    f->permit.ch = NULL;
}

/* ---------------------------------------------------- bounded: receive */

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
    copy_msg(out, slot_msg(sl), ch->msg_size);
#else
    fut__plain_read(slot_msg(sl), ch->msg_size);
    copy_msg(out, slot_msg(sl), ch->msg_size);
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
        uintptr_t w = fut__fetch_or(&ch->sem.state, RX_WAITING,
                                    FUT__ACQ_REL);
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

/* -------------------------------------------------- unbounded: receive */

/* Under the lock, with ulen > 0. */
static void u_take(struct fut__mpsc *ch, void *out)
{
    copy_msg(out, ch->ubuf + ch->uhead * ch->msg_size, ch->msg_size);
    ch->uhead = (ch->uhead + 1) & (ch->ucap - 1);
    ch->ulen--;
}

static int u_poll_recv(struct fut__mpsc *ch, struct fut_context *cx,
                       void *out, int *result, int *registered)
{
    if (ch->ended) {
        *result = FUT_ECLOSED;
        return FUT_READY;
    }
    /* Spent before we know (a PENDING poll costs one unit): calling it
     * under the lock could run a wake there. */
    if (!fut_coop_proceed(cx))
        return FUT_PENDING;
    struct fut_waker old = FUT_WAKER_NONE;
    fut__lock_acquire(&ch->ulock);
    if (ch->ulen) {
        u_take(ch, out);
        fut__lock_release(&ch->ulock);
        *result = 0;
        return FUT_READY;
    }
    /* Acquire: the last sender's sends are visible (its decrement comes
     * before its lock; see wake_rx). */
    if (ch->uclosed || fut__load(&ch->senders, FUT__ACQUIRE) == 0) {
        fut__lock_release(&ch->ulock);
        ch->ended = 1;
        *result = FUT_ECLOSED;
        return FUT_READY;
    }
    if (!fut_waker_is_set(&ch->uwaker) ||
        !fut_waker_will_wake(&ch->uwaker, &cx->waker)) {
        old = ch->uwaker;
        fut__waker_store(&ch->uwaker, fut_waker_clone(&cx->waker));
    }
    *registered = 1;
    fut__lock_release(&ch->ulock);
    fut_waker_drop(&old);
    return FUT_PENDING;
}

static int u_try_recv(struct fut__mpsc *ch, void *out)
{
    if (ch->ended)
        return FUT_ECLOSED;
    fut__lock_acquire(&ch->ulock);
    int r = FUT_EEMPTY;
    if (ch->ulen) {
        u_take(ch, out);
        r = 0;
    } else if (ch->uclosed || fut__load(&ch->senders, FUT__ACQUIRE) == 0) {
        ch->ended = 1;
        r = FUT_ECLOSED;
    }
    fut__lock_release(&ch->ulock);
    return r;
}

/* ------------------------------------------------------------- receiver */

int fut_mpsc_try_recv(struct fut_mpsc_rx *rx, void *out)
{
    FUT_ARG_CHECK(rx, "'rx' is NULL");
    FUT_ARG_CHECK(out, "'out' is NULL");
    struct fut__mpsc *ch = rx->ch;
    if (!ch) {
        FUT_MISUSE("the receiver was dropped");
        return FUT_EINVAL;
    }
    FUT_HANDLE_CHECK(ch, rx->gen, __func__);
    return ch->bounded ? b_try_recv(ch, out) : u_try_recv(ch, out);
}

static int poll_recv(struct fut__mpsc *ch, struct fut_context *cx,
                     void *out, int *result, int *registered)
{
    FUT_CHECK(ch != NULL); /* receive on a dropped receiver */
    return ch->bounded ? b_poll_recv(ch, cx, out, result, registered)
                       : u_poll_recv(ch, cx, out, result, registered);
}

int fut_mpsc_poll_recv(struct fut_mpsc_rx *rx, struct fut_context *cx,
                       void *out, int *result)
{
    FUT_ARG_CHECK(rx, "'rx' is NULL");
    FUT_ARG_CHECK(cx, "'cx' is NULL");
    FUT_ARG_CHECK(out, "'out' is NULL");
    FUT_ARG_CHECK(result, "'result' is NULL");
    if (!rx->ch) {
        FUT_MISUSE("the receiver was dropped");
        return FUT_EINVAL;
    }
    FUT_HANDLE_CHECK(rx->ch, rx->gen, __func__);
    int registered = 0;
    return poll_recv(rx->ch, cx, out, result, &registered);
}

void fut_mpsc_close(struct fut_mpsc_rx *rx)
{
    FUT_ARG_VOID(rx, "'rx' is NULL");
    struct fut__mpsc *ch = rx->ch;
    if (!ch) {
        FUT_MISUSE("the receiver was dropped");
        return;
    }
    FUT_HANDLE_CHECK(ch, rx->gen, __func__);
    if (ch->bounded) {
        fut__sem_close(&ch->sem);
        return;
    }
    fut__lock_acquire(&ch->ulock);
    ch->uclosed = 1;
    fut__lock_release(&ch->ulock);
}

void fut_mpsc_rx_drop(struct fut_mpsc_rx *rx)
{
    FUT_ARG_VOID(rx, "'rx' is NULL");
    struct fut__mpsc *ch = rx->ch;
    if (!ch)
        return;
    FUT_HANDLE_END(ch, rx->gen, __func__);
    rx->ch = NULL;
    /* Release: pairs with send_held's acquire load. */
    fut__store(&ch->rx_gone, 1, FUT__RELEASE);
    if (ch->bounded) {
        fut__sem_close(&ch->sem); /* queued senders: FUT_ECLOSED */
        struct slot *sl;
        while (slot_ready(ch, &sl)) {
            fut__plain_read(slot_msg(sl), ch->msg_size);
            if (ch->dtor)
                ch->dtor(slot_msg(sl));
            ch->head++;
        }
        fut__awaker_clear(&ch->rx_waker);
    } else {
        fut__lock_acquire(&ch->ulock);
        ch->uclosed = 1;
        unsigned char *buf = ch->ubuf;
        size_t cap = ch->ucap, head = ch->uhead, len = ch->ulen;
        struct fut_waker w = ch->uwaker;
        ch->uwaker.vt = 0;
        ch->ubuf = NULL;
        ch->ucap = ch->ulen = ch->uhead = 0;
        fut__lock_release(&ch->ulock);
        for (size_t i = 0; i < len && ch->dtor; i++)
            ch->dtor(buf + ((head + i) & (cap - 1)) * ch->msg_size);
        if (buf)
            fut__free(buf, cap * ch->msg_size);
        fut_waker_drop(&w);
    }
    ref_release(ch);
}

/* --------------------------------------------------------- recv future */

/* Withdraws the waker a receive registered (it went to sleep at least
 * once: the fast path registers nothing), so the channel keeps no clone
 * of a waker whose future is gone. */
static void recv_withdraw(struct fut__mpsc *ch)
{
    if (ch->bounded) {
        fut__awaker_clear(&ch->rx_waker);
        return;
    }
    fut__lock_acquire(&ch->ulock);
    struct fut_waker w = ch->uwaker;
    ch->uwaker.vt = 0;
    fut__lock_release(&ch->ulock);
    fut_waker_drop(&w);
}

static int recv_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_mpsc_recv *r = (struct fut_mpsc_recv *)f;
    struct fut__mpsc *ch = r->rx->ch;
    struct slot *sl;
    FUT_CHECK(ch != NULL); /* receive on a dropped receiver */
    /* The message at 'head' is there (b_poll_recv's first step, inlined:
     * the common case of a busy channel). */
    if (FUT_LIKELY(ch->bounded) && slot_ready(ch, &sl)) {
        if (!fut_coop_proceed(cx))
            return FUT_PENDING;
        take(ch, sl, r->out);
        r->result = 0;
    } else if (poll_recv(ch, cx, r->out, &r->result, &r->registered) ==
               FUT_PENDING) {
        return FUT_PENDING;
    }
    /* Withdrawn here rather than at drop, so a drop that comes late can
     * never take the waker of a newer receive. */
    if (r->registered) {
        recv_withdraw(ch);
        r->registered = 0;
    }
    return FUT_READY;
}

static void recv_drop(struct fut_future *f)
{
    struct fut_mpsc_recv *r = (struct fut_mpsc_recv *)f;
    if (r->registered && r->rx->ch)
        recv_withdraw(r->rx->ch);
}

static const struct fut_future_vtable recv_vt = {recv_poll, recv_drop,
                                                 "mpsc_recv", 0};

void fut_mpsc_recv_init(struct fut_mpsc_recv *f, struct fut_mpsc_rx *rx,
                        void *out)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(rx, "'rx' is NULL");
    FUT_ARG_VOID(out, "'out' is NULL");
    if (rx->ch)
        FUT_HANDLE_CHECK(rx->ch, rx->gen, __func__);
    fut_future_init(&f->base, &recv_vt);
    f->rx = rx;
    f->out = out;
    f->result = FUT_ECLOSED;
    f->registered = 0;
}

/* --------------------------------------------------------------- stream */

static int stream_poll_next(struct fut_stream *s, struct fut_context *cx,
                            void *item)
{
    struct fut_mpsc_stream *ms = (struct fut_mpsc_stream *)s;
    int result;
    if (fut_mpsc_poll_recv(&ms->rx, cx, item, &result) == FUT_PENDING)
        return FUT_PENDING;
    return result == 0 ? FUT_STREAM_ITEM : FUT_STREAM_END;
}

static void stream_drop(struct fut_stream *s)
{
    fut_mpsc_rx_drop(&((struct fut_mpsc_stream *)s)->rx);
}

static const struct fut_stream_vtable stream_vt = {stream_poll_next,
                                                   stream_drop, "mpsc_rx"};

void fut_mpsc_stream_init(struct fut_mpsc_stream *s, struct fut_mpsc_rx *rx)
{
    FUT_ARG_VOID(s, "'s' is NULL");
    FUT_ARG_VOID(rx, "'rx' is NULL");
    if (!rx->ch) {
        FUT_MISUSE("the receiver was dropped");
        return;
    }
    FUT_HANDLE_CHECK(rx->ch, rx->gen, __func__);
    fut_stream_init(&s->base, &stream_vt, rx->ch->msg_size);
    s->rx = *rx; /* moved: the registration goes with it */
    rx->ch = NULL;
}
