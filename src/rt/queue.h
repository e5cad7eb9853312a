/* SPDX-License-Identifier: MIT */
/* The per-worker run queue of the multi-thread scheduler: a bounded ring
 * of task pointers with one owner (push at the back, pop at the front)
 * and any number of stealers that take half of it at once (Tokio's
 * multi_thread/queue.rs). See queue.c for the rules.
 *
 * The capacity is 256; the model checker (FUT_MODEL_CHECK) and test
 * builds with FUT_RT_TESTING use 4 so that "full" and "wraps around" are
 * reached in a few steps (Tokio's loom capacity).
 */
#ifndef FUT_RT_QUEUE_H
#define FUT_RT_QUEUE_H

#include "internal.h"

struct fut_task;

#ifndef FUT__RING_CAP
#if defined(FUT_MODEL_CHECK) || defined(FUT_RT_TESTING)
#define FUT__RING_CAP 4u
#else
#define FUT__RING_CAP 256u
#endif
#endif

struct fut__ring {
    /* Two indices in one word: 'steal' (high half) and 'real' (low
     * half). real is the next task to take; steal < real while a stealer
     * copies the tasks in [steal, real) out. Written by CAS only. */
    fut__aword head;
    /* Next free slot; written by the owner only (release). */
    fut__aword tail;
    /* Slots; written by the owner before it publishes 'tail'. */
    struct fut_task *buf[FUT__RING_CAP];
};

/* Index arithmetic (queue.c's rules): 'head' packs steal (high half)
 * and real (low half); indices run modulo 2^(half a word). */
#define FUT__RING_HALF (sizeof(uintptr_t) * 4)
#define FUT__RING_IDX ((((uintptr_t)1) << FUT__RING_HALF) - 1)
#define FUT__RING_MASK ((uintptr_t)FUT__RING_CAP - 1)

void fut__ring_init(struct fut__ring *r);

/* Owner: the common case of fut__ring_push_ex, inline: when the ring has
 * room outside any range a stealer may still be copying, puts 't' at the
 * back, sets '*was_empty' and returns 1; otherwise returns 0 and changes
 * nothing (the caller then calls fut__ring_push_ex). */
static inline int fut__ring_try_push(struct fut__ring *r, struct fut_task *t,
                                     int *was_empty)
{
    /* Acquire: pairs with the release CAS that ends a steal, so the
     * stealer's reads of the slots happen before we overwrite them. */
    uintptr_t head = fut__load(&r->head, FUT__ACQUIRE);
    uintptr_t tail = fut__load(&r->tail, FUT__RELAXED); /* ours */
    if (((tail - (head >> FUT__RING_HALF)) & FUT__RING_IDX) >= FUT__RING_CAP)
        return 0;
    *was_empty = (head & FUT__RING_IDX) == tail;
    fut__plain_write(&r->buf[tail & FUT__RING_MASK], sizeof(r->buf[0]));
    r->buf[tail & FUT__RING_MASK] = t;
    /* Release: the slot before the index that publishes it (pairs with
     * the stealers' acquire load of 'tail'). */
    fut__store(&r->tail, (tail + 1) & FUT__RING_IDX, FUT__RELEASE);
    return 1;
}

/* Owner: pushes 't' at the back. Returns NULL when it went in; when the
 * ring is full, returns a list linked by 'next' (NULL-terminated, '*last'
 * its last task, '*n' its length) holding 't' and the older half of the
 * ring, all taken out of it: the caller moves them to the injection
 * queue (Tokio's push_overflow). */
struct fut_task *fut__ring_push(struct fut__ring *r, struct fut_task *t,
                                struct fut_task **last, unsigned *n);
/* The same; '*was_empty' = 1 when 't' went into an empty ring. */
struct fut_task *fut__ring_push_ex(struct fut__ring *r, struct fut_task *t,
                                   struct fut_task **last, unsigned *n,
                                   int *was_empty);

/* Owner: fut__ring_pop's loop, for a steal in progress or a lost CAS. */
struct fut_task *fut__ring_pop_slow(struct fut__ring *r);

/* Owner: takes the task at the front, or NULL when empty. The common
 * case (no steal in progress, the CAS won) is inline. */
static inline struct fut_task *fut__ring_pop(struct fut__ring *r)
{
    /* Acquire: as in fut__ring_try_push. */
    uintptr_t head = fut__load(&r->head, FUT__ACQUIRE);
    uintptr_t real = head & FUT__RING_IDX;
    if (real == fut__load(&r->tail, FUT__RELAXED)) /* tail: ours */
        return NULL;
    if ((head >> FUT__RING_HALF) == real) {
        /* No steal in progress: steal follows real. Acq_rel, as Tokio:
         * the CAS decides between us and a stealer claiming the task. */
        uintptr_t next = (real + 1) & FUT__RING_IDX;
        if (fut__cas(&r->head, &head, (next << FUT__RING_HALF) | next,
                     FUT__ACQ_REL, FUT__ACQUIRE)) {
            fut__plain_read(&r->buf[real & FUT__RING_MASK],
                            sizeof(r->buf[0]));
            return r->buf[real & FUT__RING_MASK];
        }
    }
    return fut__ring_pop_slow(r);
}

/* Any thread but the owner of 'src', which must be the owner of 'dst':
 * moves half of the tasks in 'src' (rounded up) to 'dst' and returns one
 * of them to run now, or NULL (nothing to steal, another steal in
 * progress, or no room in 'dst'). '*moved' = tasks taken from 'src'
 * (the returned one included). */
struct fut_task *fut__ring_steal(struct fut__ring *src, struct fut__ring *dst,
                                 unsigned *moved);

/* Any thread: number of tasks in the ring (a snapshot; exact for the
 * owner when nobody steals). */
static inline unsigned fut__ring_len(struct fut__ring *r)
{
    uintptr_t head = fut__load(&r->head, FUT__ACQUIRE);
    uintptr_t tail = fut__load(&r->tail, FUT__ACQUIRE);
    uintptr_t n = (tail - (head & FUT__RING_IDX)) & FUT__RING_IDX;
    /* A torn snapshot (the owner moved on between the loads) is busy. */
    return n > FUT__RING_CAP ? FUT__RING_CAP : (unsigned)n;
}

/* Owner: room for 'n' more pushes without overflow. */
int fut__ring_has_room(struct fut__ring *r, unsigned n);

#endif /* FUT_RT_QUEUE_H */
