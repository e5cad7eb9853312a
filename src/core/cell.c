/* SPDX-License-Identifier: MIT */
/* The write-once cell (C1-C5) and the oneshot channel built on it.
 *
 * Rules of the state word ('state', one fut__aword):
 *
 *   bit         set by          meaning
 *   COMPLETING  a completer     won the race (first to set it); now copying
 *   READY       the winner      value published (release): PENDING -> READY
 *   TAKEN       a consumer      value taken: READY -> TAKEN; set once
 *   WAKER       the poller      the poller's waker is in the waker slot
 *   RX_CLOSED   the poller      consumer gone (fut_cell_close / rx drop)
 *   TX_CLOSED   oneshot sender  sender dropped without a value
 *   GEN (bits GEN_SHIFT..)      registrations so far (wraps); every CAS
 *                               that sets WAKER adds GEN_ONE
 *
 * PENDING is "none of COMPLETING, READY, TAKEN". The only transitions are
 * PENDING -> (COMPLETING) -> READY -> TAKEN.
 *
 * Who owns the waker slot (the heart of C5):
 *   - the poller writes the slot while WAKER is clear, then sets WAKER
 *     (and bumps GEN) with one CAS, which fails if READY or TX_CLOSED
 *     landed first - then it drops the waker itself;
 *   - a completer publishes READY with one RMW: if that RMW saw WAKER
 *     (and not RX_CLOSED), the completer owns the slot's waker and wakes
 *     it; the word never says WAKER|READY unless the completer owns it;
 *   - to replace its waker, the poller first clears WAKER by CAS, which
 *     fails if READY arrived (then the completer owns the old one);
 *   - the oneshot's sender reads the slot *before* its publishing CAS,
 *     which expects the state it loaded - WAKER and GEN included. The
 *     poller rewrites the slot only after a CAS that clears WAKER, and
 *     sets it again with a new GEN, so a publishing CAS that succeeds
 *     proves that the waker read is the one registered (no ABA: GEN), and
 *     one that fails read nothing it may use. The slot is therefore two
 *     relaxed atomic words: the sender may read while the poller writes.
 * So exactly one side ever uses the slot's waker after a completion, and a
 * poll racing a completion either sees READY or is woken (no lost wakeup).
 *
 * Orderings: READY is set with release and every consumer-side load/CAS
 * that may observe it is acquire (C4: bytes before flag). WAKER is set with
 * release so the completer's acquire (RMW, or the sender's load) sees the
 * slot's contents.
 *
 * Seeded bugs (FUT_MC_BUG_*, model-checker builds only) break one rule
 * each, so the checker can be shown to catch them; see test/mc.
 */
#include <string.h>

#include "fut/cell.h"
#include "internal.h"

enum {
    COMPLETING = 1u << 0,
    READY = 1u << 1,
    TAKEN = 1u << 2,
    WAKER = 1u << 3,
    RX_CLOSED = 1u << 4,
    TX_CLOSED = 1u << 5,
    GEN_SHIFT = 8,
};
#define GEN_ONE ((uintptr_t)1 << GEN_SHIFT)

#ifdef FUT_MC_BUG_NO_GEN
#define GEN_STEP 0 /* (f): registrations leave GEN alone - ABA */
#else
#define GEN_STEP GEN_ONE
#endif

#ifdef FUT_MC_BUG_NO_ACQUIRE
#define CONSUME_MO FUT__RELAXED /* (c): value read without the acquire */
#else
#define CONSUME_MO FUT__ACQUIRE
#endif

struct fut__cell {
    fut__aword state;
    fut__aword wdata, wvt; /* the poller's waker; see the ownership rules */
    void *slot;            /* where the value's bytes live */
    uint32_t size;         /* of the value */
    uint32_t size_class;   /* oneshot: slab class of the block */
#ifdef FUT_MC_BUG_PLAIN_STORE
    fut__aword wflag; /* (b): a registration flag set with a plain store */
#endif
};

_Static_assert(sizeof(struct fut__cell) <= sizeof(struct fut_cell),
               "struct fut_cell too small");

static struct fut__cell *cell_of(struct fut_cell *c)
{
    return (struct fut__cell *)(void *)c;
}

/* The waker slot. Relaxed: what orders it is the state word (rules). */
static struct fut_waker slot_read(struct fut__cell *c)
{
    struct fut_waker w;
    w.data = (const void *)fut__load(&c->wdata, FUT__RELAXED);
    w.vt = (const struct fut_waker_vtable *)fut__load(&c->wvt, FUT__RELAXED);
    return w;
}

static void slot_write(struct fut__cell *c, struct fut_waker w)
{
    fut__store(&c->wdata, (uintptr_t)w.data, FUT__RELAXED);
    fut__store(&c->wvt, (uintptr_t)w.vt, FUT__RELAXED);
}

/* Drops the waker in the slot (the caller owns it). */
static void slot_drop(struct fut__cell *c)
{
    struct fut_waker w = slot_read(c);
    fut_waker_drop(&w);
}

static void cell_setup(struct fut__cell *c, void *slot, size_t size)
{
    fut__aword_init(&c->state, 0);
    fut__aword_init(&c->wdata, 0);
    fut__aword_init(&c->wvt, 0);
    c->slot = slot;
    c->size = (uint32_t)size;
    c->size_class = 0;
#ifdef FUT_MC_BUG_PLAIN_STORE
    fut__aword_init(&c->wflag, 0);
#endif
}

void fut_cell_init(struct fut_cell *c, void *slot, size_t size)
{
    FUT_ARG_VOID(c, "'c' is NULL");
    FUT_ARG_VOID(slot || !size, "'slot' is NULL");
    FUT_CHECK(size <= UINT32_MAX - 256);
    cell_setup(cell_of(c), slot, size);
}

/* ---------------------------------------------------- waker registration */

#ifndef FUT_MC_BUG_PLAIN_STORE
/* Registers 'w' as the poller's waker. 's' is the state last loaded
 * (no TAKEN, READY or TX_CLOSED in it). Returns the state seen after
 * registering: if it holds READY or TX_CLOSED the completion landed first
 * and the caller must look again (the waker is then not registered). */
static uintptr_t cell_register(struct fut__cell *c, uintptr_t s,
                               const struct fut_waker *w)
{
    if (s & WAKER) {
        /* Ours while WAKER is set; others may only read it. */
        struct fut_waker cur = slot_read(c);
        if (fut_waker_will_wake(&cur, w))
            return s;
        /* Take the slot back; fails if a completion now owns it. */
        do {
            if (s & (READY | TX_CLOSED))
                return s;
        } while (!fut__cas(&c->state, &s, s & ~(uintptr_t)WAKER, FUT__ACQUIRE,
                           CONSUME_MO));
        s &= ~(uintptr_t)WAKER;
        fut_waker_drop(&cur);
    }
    slot_write(c, fut_waker_clone(w)); /* two word stores */
    for (;;) {
#ifndef FUT_MC_BUG_NO_RECHECK
        if (s & (READY | TX_CLOSED)) {
            /* The completion came first and never saw this waker. */
            slot_drop(c);
            return s;
        }
#endif
        /* Release: publishes the slot to the completer's acquire.
         * Acquire (both outcomes): READY's release, if it is there. */
        uintptr_t n = (s | WAKER) + GEN_STEP;
        if (fut__cas(&c->state, &s, n, FUT__ACQ_REL, CONSUME_MO))
            return n;
    }
}

/* Completer side, after its publishing RMW returned 'prev'. */
static void cell_wake(struct fut__cell *c, uintptr_t prev)
{
    if ((prev & WAKER) && !(prev & RX_CLOSED)) {
        struct fut_waker w = slot_read(c); /* ours now (rules) */
        fut_waker_wake(&w);
    }
}

static uintptr_t cell_publish(struct fut__cell *c, uintptr_t bits)
{
#ifdef FUT_MC_BUG_WAKE_EARLY
    /* (e): wakes the poller before READY is visible. */
    uintptr_t s = fut__load(&c->state, FUT__ACQUIRE);
    if ((s & WAKER) && fut__cas(&c->state, &s, s & ~(uintptr_t)WAKER,
                                FUT__ACQUIRE, FUT__ACQUIRE))
        cell_wake(c, s);
    return fut__fetch_or(&c->state, bits, FUT__ACQ_REL) & ~(uintptr_t)WAKER;
#else
    /* Release: publishes the value bytes (pairs with the consumer's
     * acquire load). Acquire: sees the waker the poller published. */
    return fut__fetch_or(&c->state, bits, FUT__ACQ_REL);
#endif
}

#else /* FUT_MC_BUG_PLAIN_STORE: (b) registration by plain store + re-load */

static uintptr_t cell_register(struct fut__cell *c, uintptr_t s,
                               const struct fut_waker *w)
{
    if (fut__load(&c->wflag, FUT__RELAXED))
        return s; /* registered once already (the models poll once) */
    slot_write(c, fut_waker_clone(w));
    fut__store(&c->wflag, 1, FUT__RELEASE); /* the bug: not an RMW */
    s = fut__load(&c->state, FUT__ACQUIRE);
    if ((s & (READY | TX_CLOSED)) && fut__swap(&c->wflag, 0, FUT__ACQUIRE))
        slot_drop(c);
    return s;
}

static void cell_wake(struct fut__cell *c, uintptr_t prev)
{
    (void)prev;
    if (fut__swap(&c->wflag, 0, FUT__ACQ_REL)) {
        struct fut_waker w = slot_read(c);
        fut_waker_wake(&w);
    }
}

static uintptr_t cell_publish(struct fut__cell *c, uintptr_t bits)
{
    return fut__fetch_or(&c->state, bits, FUT__ACQ_REL);
}
#endif

/* ------------------------------------------------------------ generic cell */

int fut_cell_complete(struct fut_cell *cc, const void *value)
{
    FUT_ARG_CHECK(cc, "'c' is NULL");
    FUT_ARG_CHECK(value, "'value' is NULL");
    struct fut__cell *c = cell_of(cc);
#ifdef FUT_MC_BUG_CHECK_THEN_ACT
    /* (d): check, then act - two completers can both pass the check. */
    uintptr_t s = fut__load(&c->state, FUT__RELAXED);
    if (s & (COMPLETING | READY))
        return FUT_ELOST;
    fut__store(&c->state, s | COMPLETING, FUT__RELAXED);
    uintptr_t won = s & ~(uintptr_t)(COMPLETING | READY);
#else
    /* The one RMW that picks the winner (C2): the first to set
     * COMPLETING. Relaxed: the RMW order on 'state' alone decides. */
    uintptr_t won = fut__fetch_or(&c->state, COMPLETING, FUT__RELAXED);
#endif
    /* A closed consumer wins over a lost race: nobody will read. */
    if (won & RX_CLOSED)
        return FUT_ECLOSED;
    if (won & (COMPLETING | READY))
        return FUT_ELOST;
    fut__plain_write(c->slot, c->size);
    fut__copy_value(c->slot, value, c->size);
    uintptr_t prev = cell_publish(c, READY);
    cell_wake(c, prev);
    /* The consumer closed while we copied: it will never read the value,
     * which is still the caller's. */
    return (prev & RX_CLOSED) ? FUT_ECLOSED : 0;
}

/* Claims the value with TAKEN; returns 1 (claimed), 0 (absent) or
 * FUT_EAGAIN (pending). '*sp' is the state last seen. */
static int cell_claim(struct fut__cell *c, uintptr_t *sp, void *out)
{
    uintptr_t s = *sp;
    for (;;) {
        if (s & TAKEN)
            return 0;
        if (!(s & READY))
            return (s & (RX_CLOSED | TX_CLOSED)) ? 0 : FUT_EAGAIN;
        /* Acquire on both outcomes: pairs with the publishing release. */
        if (fut__cas(&c->state, &s, s | TAKEN, CONSUME_MO, CONSUME_MO))
            break;
    }
    fut__plain_read(c->slot, c->size);
    fut__copy_value(out, c->slot, c->size);
    *sp = s | TAKEN;
    return 1;
}

int fut_cell_take(struct fut_cell *cc, void *out)
{
    FUT_ARG_CHECK(out, "'out' is NULL");
    FUT_ARG_CHECK(cc, "'c' is NULL");
    struct fut__cell *c = cell_of(cc);
    uintptr_t s = fut__load(&c->state, CONSUME_MO); /* pairs: publish */
    return cell_claim(c, &s, out);
}

int fut_cell_poll(struct fut_cell *cc, struct fut_context *cx, void *out,
                  int *got)
{
    FUT_ARG_CHECK(cc, "'c' is NULL");
    FUT_ARG_CHECK(cx, "'cx' is NULL");
    FUT_ARG_CHECK(got, "'got' is NULL");
    struct fut__cell *c = cell_of(cc);
    uintptr_t s = fut__load(&c->state, CONSUME_MO); /* pairs: publish */
    for (;;) {
        int r = cell_claim(c, &s, out);
        if (r != FUT_EAGAIN) {
            *got = r;
            return FUT_READY;
        }
        s = cell_register(c, s, &cx->waker);
        if (!(s & (READY | TX_CLOSED)))
            return FUT_PENDING;
    }
}

int fut_cell_close(struct fut_cell *cc)
{
    FUT_ARG_CHECK(cc, "'c' is NULL");
    struct fut__cell *c = cell_of(cc);
    /* Acq_rel: acquire pairs with a publish (the value bytes may be
     * released by our caller); release orders our slot writes before a
     * completer that now sees RX_CLOSED. */
    uintptr_t prev = fut__fetch_or(&c->state, RX_CLOSED, FUT__ACQ_REL);
    if ((prev & WAKER) && !(prev & (READY | TX_CLOSED)))
        slot_drop(c); /* no completer saw it: ours */
    return (prev & READY) && !(prev & TAKEN);
}

int fut_cell_is_complete(const struct fut_cell *cc)
{
    FUT_ARG_OR(cc, "'c' is NULL", 0);
    struct fut__cell *c = cell_of((struct fut_cell *)cc);
    return (fut__load(&c->state, FUT__ACQUIRE) & READY) != 0;
}

/* ---------------------------------------------------------------- oneshot
 *
 * One allocation: the cell, the dtor, then the value bytes. There is one
 * sender and one receiver, so no completer race exists: send skips the
 * COMPLETING step and publishes with one CAS that also validates the
 * waker it read before (see the ownership rules): after that CAS the
 * sender never touches the block again, it wakes from its copy. Lifetime
 * rides on the same word (no separate refcount, no TAKEN):
 *   - the sender is finished at its publishing CAS (READY or TX_CLOSED),
 *     or when it finds RX_CLOSED instead (then it does not publish);
 *   - the receiver is finished when it sees READY or TX_CLOSED (take,
 *     or a drop whose RX_CLOSED RMW saw them), or sets RX_CLOSED first;
 *   - whoever finishes second frees the block: the receiver when it saw
 *     the sender's publish, the sender when it saw RX_CLOSED.
 */
struct fut__oneshot {
    struct fut__cell cell;
    void (*dtor)(void *value);
    struct fut__blockpool *pool; /* where the block came from, or NULL */
    /* value bytes follow, aligned for any type */
};

#define ONESHOT_HDR                                                          \
    ((sizeof(struct fut__oneshot) + _Alignof(max_align_t) - 1) &             \
     ~(_Alignof(max_align_t) - 1))

static size_t oneshot_bytes(const struct fut__oneshot *ch)
{
    return ONESHOT_HDR + ch->cell.size;
}

/* Gives the block back to the pool (or the hook) it came from. */
static void oneshot_release(struct fut__oneshot *ch)
{
#ifndef FUT_MODEL_CHECK
    if (ch->pool) {
        fut__pool_put(ch->pool, ch, (uint32_t)ch->cell.size_class,
                      oneshot_bytes(ch));
        return;
    }
#endif
    fut__free(ch, oneshot_bytes(ch));
}

/* Frees the block; 'undelivered' = a value was delivered into the channel
 * (the sender saw no RX_CLOSED when it published) and never received, so
 * the channel owns it and passes it to the dtor. */
static void oneshot_free(struct fut__oneshot *ch, int undelivered)
{
    if (undelivered && ch->dtor) {
        fut__plain_read(ch->cell.slot, ch->cell.size);
        ch->dtor(ch->cell.slot);
    }
    oneshot_release(ch);
}

int fut_oneshot_new(size_t size, void (*dtor)(void *value),
                    struct fut_oneshot_tx *tx, struct fut_oneshot_rx *rx)
{
    FUT_ARG_CHECK(tx, "'tx' is NULL");
    FUT_ARG_CHECK(rx, "'rx' is NULL");
    struct fut__blockpool *pool = NULL;
    uint32_t cls = 0;
    struct fut__oneshot *ch;
    if (size > UINT32_MAX - 256) {
        tx->ch = 0;
        rx->ch = 0;
        return FUT_EINVAL;
    }
#ifndef FUT_MODEL_CHECK
    pool = fut__tls_pool;
    if (pool)
        ch = fut__pool_get(pool, ONESHOT_HDR + size, &cls);
    else
#endif
        ch = fut__alloc(ONESHOT_HDR + size);
    if (!ch) {
        tx->ch = 0;
        rx->ch = 0;
        return FUT_ENOMEM;
    }
    cell_setup(&ch->cell, (char *)ch + ONESHOT_HDR, size);
    ch->cell.size_class = cls;
    ch->dtor = dtor;
    ch->pool = pool;
    tx->ch = ch;
    rx->ch = ch;
    tx->gen = FUT_HANDLE_NEW(ch);
    rx->gen = FUT_HANDLE_NEW(ch);
    return 0;
}

/* Sender's last step: publish 'bits' (READY or TX_CLOSED) unless the
 * receiver is gone, waking it if it registered. Returns the state the
 * publish replaced, or one with RX_CLOSED when it did not publish (and
 * freed the block: the receiver finished first, so nothing was
 * delivered). */
static uintptr_t oneshot_tx_finish(struct fut__oneshot *ch, uintptr_t bits)
{
    struct fut__cell *c = &ch->cell;
#ifdef FUT_MC_BUG_WAKE_EARLY
    /* (e): wakes the receiver before READY is visible, then publishes
     * without looking at the slot again. */
    uintptr_t e = fut__load(&c->state, FUT__ACQUIRE);
    if ((e & WAKER) && !(e & RX_CLOSED) &&
        fut__cas(&c->state, &e, e & ~(uintptr_t)WAKER, FUT__ACQUIRE,
                 FUT__ACQUIRE)) {
        struct fut_waker ew = slot_read(c);
        fut_waker_wake(&ew);
    }
    uintptr_t ep = fut__fetch_or(&c->state, bits, FUT__ACQ_REL);
    if (ep & RX_CLOSED)
        oneshot_free(ch, 0);
    return ep;
#else
    /* Acquire: a WAKER seen here brings the slot's contents with it. */
    uintptr_t s = fut__load(&c->state, FUT__ACQUIRE);
    for (;;) {
        if (s & RX_CLOSED) {
            /* The receiver finished first and will not touch the block
             * (it frees only after seeing our publish). */
            oneshot_free(ch, 0);
            return s;
        }
        struct fut_waker w = {0, 0};
        if (s & WAKER)
            w = slot_read(c); /* ours if the CAS below succeeds */
        /* Release: the value bytes (and our reads of the slot) before the
         * receiver, which may free the block once it sees 'bits'.
         * Acquire on failure: a new WAKER's slot contents. */
        if (fut__cas(&c->state, &s, s | bits, FUT__RELEASE, FUT__ACQUIRE)) {
            if (s & WAKER)
                fut_waker_wake(&w);
            return s;
        }
    }
#endif
}

int fut_oneshot_send(struct fut_oneshot_tx *tx, const void *value)
{
    FUT_ARG_CHECK(tx, "'tx' is NULL");
    FUT_ARG_CHECK(value, "'value' is NULL");
    struct fut__oneshot *ch = tx->ch;
    if (!ch) {
        FUT_MISUSE("the sender was used already (a oneshot sends once)");
        return FUT_EINVAL; /* the value is still the caller's */
    }
    FUT_HANDLE_END(ch, tx->gen, __func__);
    tx->ch = 0;
    fut__plain_write(ch->cell.slot, ch->cell.size);
    fut__copy_value(ch->cell.slot, value, ch->cell.size);
    /* The receiver closed before the publish: the value was not
     * delivered; it is still the caller's (the slot copy is dead). */
    return (oneshot_tx_finish(ch, READY) & RX_CLOSED) ? FUT_ECLOSED : 0;
}

void fut_oneshot_tx_drop(struct fut_oneshot_tx *tx)
{
    FUT_ARG_VOID(tx, "'tx' is NULL");
    struct fut__oneshot *ch = tx->ch;
    if (!ch)
        return;
    FUT_HANDLE_END(ch, tx->gen, __func__);
    tx->ch = 0;
    (void)oneshot_tx_finish(ch, TX_CLOSED);
}

int fut_oneshot_tx_is_closed(const struct fut_oneshot_tx *tx)
{
    FUT_ARG_OR(tx, "'tx' is NULL", 0);
    if (!tx->ch)
        return 1;
    FUT_HANDLE_CHECK(tx->ch, tx->gen, __func__);
    return (fut__load(&tx->ch->cell.state, FUT__ACQUIRE) & RX_CLOSED) != 0;
}

/* The receiver is finished with a value or a close seen in 's' (READY or
 * TX_CLOSED set): the sender is finished too, so the block is ours. */
static int oneshot_rx_finish(struct fut__oneshot *ch, uintptr_t s, void *out)
{
    int r = FUT_ECLOSED;
    if (s & READY) {
        fut__plain_read(ch->cell.slot, ch->cell.size);
        fut__copy_value(out, ch->cell.slot, ch->cell.size);
        r = 0;
    }
    oneshot_release(ch);
    return r;
}

int fut_oneshot_try_recv(struct fut_oneshot_rx *rx, void *out)
{
    FUT_ARG_CHECK(rx, "'rx' is NULL");
    FUT_ARG_CHECK(out, "'out' is NULL");
    struct fut__oneshot *ch = rx->ch;
    if (!ch) {
        FUT_MISUSE("the receiver was used already (a oneshot receives "
                   "once)");
        return FUT_EINVAL;
    }
    FUT_HANDLE_CHECK(ch, rx->gen, __func__);
    uintptr_t s = fut__load(&ch->cell.state, CONSUME_MO); /* pairs: publish */
    if (!(s & (READY | TX_CLOSED)))
        return FUT_EEMPTY;
    FUT_HANDLE_END(ch, rx->gen, __func__);
    rx->ch = 0;
    return oneshot_rx_finish(ch, s, out);
}

void fut_oneshot_rx_drop(struct fut_oneshot_rx *rx)
{
    FUT_ARG_VOID(rx, "'rx' is NULL");
    struct fut__oneshot *ch = rx->ch;
    if (!ch)
        return;
    FUT_HANDLE_END(ch, rx->gen, __func__);
    rx->ch = 0;
    /* Take our waker back before RX_CLOSED is visible: from then on the
     * sender may free the block. The CAS fails if the sender published
     * first (it then owns the waker). */
    uintptr_t s = fut__load(&ch->cell.state, FUT__ACQUIRE);
    while ((s & WAKER) && !(s & (READY | TX_CLOSED))) {
        if (fut__cas(&ch->cell.state, &s, s & ~(uintptr_t)WAKER, FUT__ACQUIRE,
                     FUT__ACQUIRE)) {
            slot_drop(&ch->cell); /* the sender never used it */
            break;
        }
    }
    /* Acquire: the sender's writes, if it finished (we free the block).
     * Release: our last uses of the block before a sender that frees. */
    uintptr_t prev = fut__fetch_or(&ch->cell.state, RX_CLOSED, FUT__ACQ_REL);
    if (prev & (READY | TX_CLOSED))
        oneshot_free(ch, (prev & READY) != 0);
}

static int oneshot_recv_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_oneshot_recv *r = (struct fut_oneshot_recv *)f;
    struct fut__oneshot *ch = r->rx.ch;
    uintptr_t s = fut__load(&ch->cell.state, CONSUME_MO); /* pairs: publish */
    while (!(s & (READY | TX_CLOSED))) {
        s = cell_register(&ch->cell, s, &cx->waker);
        if (!(s & (READY | TX_CLOSED)))
            return FUT_PENDING;
    }
    if (!fut_coop_proceed(cx))
        return FUT_PENDING;
    FUT_HANDLE_END(ch, r->rx.gen, "fut_poll (oneshot_recv)");
    r->rx.ch = 0;
    r->result = oneshot_rx_finish(ch, s, r->out);
    return FUT_READY;
}

static void oneshot_recv_drop(struct fut_future *f)
{
    struct fut_oneshot_recv *r = (struct fut_oneshot_recv *)f;
    fut_oneshot_rx_drop(&r->rx);
}

static const struct fut_future_vtable oneshot_recv_vt = {
    oneshot_recv_poll, oneshot_recv_drop, "oneshot_recv", 0};

void fut_oneshot_recv_init(struct fut_oneshot_recv *f,
                           struct fut_oneshot_rx *rx, void *out)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(rx, "'rx' is NULL");
    FUT_ARG_VOID(out, "'out' is NULL");
    fut_future_init(&f->base, &oneshot_recv_vt);
    if (rx->ch)
        FUT_HANDLE_CHECK(rx->ch, rx->gen, __func__);
    /* Moved (the handle's registration goes with it), field by field: a
     * whole-struct copy is one 16-byte load of what fut_oneshot_new has
     * just written as an 8- and a 4-byte store, which the CPU cannot
     * forward from the store buffer - it waits for both stores to reach
     * the cache (bench_core oneshot_local: 19.4 -> 16.1 ns per op,
     * medians of 7, AMD EPYC family 25 model 17). */
    f->rx.ch = rx->ch;
    f->rx.gen = rx->gen;
    rx->ch = 0;
    f->out = out;
    f->result = FUT_ECLOSED;
}
