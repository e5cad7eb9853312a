/* SPDX-License-Identifier: MIT */
/* The per-worker ring; see queue.h.
 *
 * Rules:
 *   - 'tail' is written by the owner only, with release after the slot
 *     it publishes; stealers read it with acquire;
 *   - 'head' packs steal (high half) and real (low half) and changes by
 *     CAS only: the owner's pop advances real (and steal with it when no
 *     steal is in progress); a stealer claims [real, real + n) by moving
 *     real alone, copies the claimed slots out, then sets steal = real
 *     with a second CAS, which releases the slots;
 *   - the owner may write a slot only when it lies outside [steal, tail):
 *     push checks 'tail - steal < CAP', so slots a stealer is still
 *     copying are never overwritten (the reason steal and real are two
 *     indices: a claimed-but-uncopied range is neither free nor ours);
 *   - only one steal at a time (a second stealer sees steal != real and
 *     gives up), which also keeps push_overflow from racing a copy;
 *   - indices run modulo 2^(half a word); the capacity is a power of two
 *     that divides it, so 'index & MASK' is the slot.
 * Each task in the ring is owned by the ring (its RUNNING bit was set by
 * whoever queued it) and leaves it exactly once: by the owner's pop, by
 * a steal claim or by push_overflow - all three are CASes on 'head' from
 * the same value, so exactly one wins (the seeded bug
 * FUT_MC_BUG_STEAL_NO_CAS claims with a plain store and the model
 * checker sees a task taken twice).
 */
#include "rt/queue.h"
#include "rt/rt_internal.h"

#define HALF FUT__RING_HALF
#define IDX FUT__RING_IDX
#define MASK FUT__RING_MASK

_Static_assert((FUT__RING_CAP & (FUT__RING_CAP - 1)) == 0,
               "the ring capacity is a power of two");
_Static_assert(FUT__RING_CAP >= 2 && FUT__RING_CAP <= (1u << 15),
               "the ring capacity fits half a word's index space");

static uintptr_t pack(uintptr_t steal, uintptr_t real)
{
    return ((steal & IDX) << HALF) | (real & IDX);
}

static uintptr_t steal_of(uintptr_t head)
{
    return head >> HALF;
}

static uintptr_t real_of(uintptr_t head)
{
    return head & IDX;
}

/* Distance from 'a' to 'b' in index space. */
static uintptr_t dist(uintptr_t a, uintptr_t b)
{
    return (b - a) & IDX;
}

void fut__ring_init(struct fut__ring *r)
{
    fut__aword_init(&r->head, 0);
    fut__aword_init(&r->tail, 0);
    for (unsigned i = 0; i < FUT__RING_CAP; i++)
        r->buf[i] = NULL;
}

static void slot_write(struct fut__ring *r, uintptr_t i, struct fut_task *t)
{
    fut__plain_write(&r->buf[i & MASK], sizeof(r->buf[0]));
    r->buf[i & MASK] = t;
}

static struct fut_task *slot_read(struct fut__ring *r, uintptr_t i)
{
    fut__plain_read(&r->buf[i & MASK], sizeof(r->buf[0]));
    return r->buf[i & MASK];
}

/* The ring is full and no steal is in progress: take the older half out
 * (one CAS claims it, like a steal), chain it with 't'. NULL when a
 * consumer moved 'head' first (the caller retries). */
static struct fut_task *push_overflow(struct fut__ring *r, struct fut_task *t,
                                      uintptr_t real, struct fut_task **last,
                                      unsigned *n)
{
    const uintptr_t half = FUT__RING_CAP / 2;
    uintptr_t prev = pack(real, real);
    /* Release: nothing to publish; the claim only has to be one RMW that
     * beats any concurrent pop or steal claim of the same head value.
     * Acquire is not needed: the slots were written by us. */
    if (!fut__cas(&r->head, &prev, pack(real + half, real + half),
                  FUT__RELEASE, FUT__RELAXED))
        return NULL;
    struct fut_task *first = slot_read(r, real), *p = first;
    for (uintptr_t i = 1; i < half; i++) {
        struct fut_task *q = slot_read(r, real + i);
        p->next = q;
        p = q;
    }
    p->next = t;
    t->next = NULL;
    *last = t;
    *n = (unsigned)half + 1;
    return first;
}

struct fut_task *fut__ring_push(struct fut__ring *r, struct fut_task *t,
                                struct fut_task **last, unsigned *n)
{
    int was_empty;
    return fut__ring_push_ex(r, t, last, n, &was_empty);
}

struct fut_task *fut__ring_push_ex(struct fut__ring *r, struct fut_task *t,
                                   struct fut_task **last, unsigned *n,
                                   int *was_empty)
{
    *was_empty = 0;
    for (;;) {
        if (fut__ring_try_push(r, t, was_empty))
            return NULL;
        /* Full as of that look. Acquire: as in fut__ring_try_push. */
        uintptr_t head = fut__load(&r->head, FUT__ACQUIRE);
        uintptr_t tail = fut__load(&r->tail, FUT__RELAXED); /* ours */
        if (dist(steal_of(head), tail) < FUT__RING_CAP)
            continue; /* a steal ended meanwhile: room now */
        if (steal_of(head) != real_of(head)) {
            /* A stealer is copying half of us out: room is coming, but
             * do not wait for it (Tokio does the same). */
            t->next = NULL;
            *last = t;
            *n = 1;
            return t;
        }
        struct fut_task *batch = push_overflow(r, t, real_of(head), last, n);
        if (batch)
            return batch;
    }
}

struct fut_task *fut__ring_pop_slow(struct fut__ring *r)
{
    /* Acquire: as in push (the slot we are about to read was not written
     * by a stealer, but a steal that just ended released the range). */
    uintptr_t head = fut__load(&r->head, FUT__ACQUIRE);
    for (;;) {
        uintptr_t steal = steal_of(head), real = real_of(head);
        uintptr_t tail = fut__load(&r->tail, FUT__RELAXED); /* ours */
        if (real == tail)
            return NULL;
        uintptr_t next = (real + 1) & IDX;
        /* No steal in progress: steal follows real. Otherwise leave it:
         * the stealer's second CAS moves it. */
        uintptr_t nh = steal == real ? pack(next, next) : pack(steal, next);
        /* Acq_rel, as Tokio: the CAS is what decides between us and a
         * stealer claiming the same task; acquire on failure reloads. */
        if (fut__cas(&r->head, &head, nh, FUT__ACQ_REL, FUT__ACQUIRE))
            return slot_read(r, real);
    }
}

/* Claims half of 'src' and copies it into dst's slots from 'dtail' on
 * (not yet published). Returns how many. */
static uintptr_t steal_into(struct fut__ring *src, struct fut__ring *dst,
                            uintptr_t dtail)
{
    /* Acquire: a steal that ended released its range (we may reuse the
     * same slots' contents only after it). */
    uintptr_t prev = fut__load(&src->head, FUT__ACQUIRE);
    uintptr_t next, n;
    for (;;) {
        uintptr_t steal = steal_of(prev), real = real_of(prev);
        if (steal != real)
            return 0; /* another stealer is copying */
        /* Acquire: pairs with the owner's release store of 'tail': the
         * slots up to it are written. */
        uintptr_t tail = fut__load(&src->tail, FUT__ACQUIRE);
        n = dist(real, tail);
        n -= n / 2;
        if (n == 0)
            return 0;
        next = pack(steal, real + n);
#ifdef FUT_MC_BUG_STEAL_NO_CAS
        /* Seeded bug: claim with a store; a pop racing it takes a task
         * this steal copies too. */
        fut__store(&src->head, next, FUT__RELEASE);
        break;
#else
        /* Acq_rel: the claim races the owner's pop and push_overflow on
         * the same head value (exactly one wins). */
        if (fut__cas(&src->head, &prev, next, FUT__ACQ_REL, FUT__ACQUIRE))
            break;
#endif
    }
    uintptr_t first = real_of(prev);
    for (uintptr_t i = 0; i < n; i++)
        slot_write(dst, dtail + i, slot_read(src, first + i));
    /* Release the range: steal = real (which the owner's pops may have
     * moved on meanwhile). Release: our slot reads happen before the
     * owner overwrites them (pairs with push's acquire of 'head'). */
    prev = next;
    for (;;) {
        uintptr_t real = real_of(prev);
        if (fut__cas(&src->head, &prev, pack(real, real), FUT__ACQ_REL,
                     FUT__ACQUIRE))
            return n;
    }
}

struct fut_task *fut__ring_steal(struct fut__ring *src, struct fut__ring *dst,
                                 unsigned *moved)
{
    uintptr_t dtail = fut__load(&dst->tail, FUT__RELAXED); /* ours */
    /* Acquire: as in push - we are about to write dst's slots. */
    uintptr_t dsteal = steal_of(fut__load(&dst->head, FUT__ACQUIRE));
    if (dist(dsteal, dtail) > FUT__RING_CAP / 2)
        return NULL; /* no room for what we could take */
    uintptr_t n = steal_into(src, dst, dtail);
    *moved = (unsigned)n;
    if (n == 0)
        return NULL;
    n--; /* the last one copied is run now, not published */
    struct fut_task *ret = slot_read(dst, dtail + n);
    if (n)
        /* Release: the copied slots before the index (pairs with the
         * acquire of whoever steals from us next). */
        fut__store(&dst->tail, (dtail + n) & IDX, FUT__RELEASE);
    return ret;
}

int fut__ring_has_room(struct fut__ring *r, unsigned n)
{
    uintptr_t head = fut__load(&r->head, FUT__ACQUIRE);
    uintptr_t tail = fut__load(&r->tail, FUT__RELAXED);
    return dist(steal_of(head), tail) + n <= FUT__RING_CAP;
}
