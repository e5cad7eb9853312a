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

void fut__ring_init(struct fut__ring *r);

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

/* Owner: takes the task at the front, or NULL when empty. */
struct fut_task *fut__ring_pop(struct fut__ring *r);

/* Any thread but the owner of 'src', which must be the owner of 'dst':
 * moves half of the tasks in 'src' (rounded up) to 'dst' and returns one
 * of them to run now, or NULL (nothing to steal, another steal in
 * progress, or no room in 'dst'). '*moved' = tasks taken from 'src'
 * (the returned one included). */
struct fut_task *fut__ring_steal(struct fut__ring *src, struct fut__ring *dst,
                                 unsigned *moved);

/* Any thread: number of tasks in the ring (a snapshot; exact for the
 * owner when nobody steals). */
unsigned fut__ring_len(struct fut__ring *r);

/* Owner: room for 'n' more pushes without overflow. */
int fut__ring_has_room(struct fut__ring *r, unsigned n);

#endif /* FUT_RT_QUEUE_H */
