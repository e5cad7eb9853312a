/* SPDX-License-Identifier: MIT */
/* Machinery shared by the channels and locks of src/sync (never
 * installed): the waiting machinery of waitq.h (fut__lock, fut__wnode,
 * fut__wakeset, fut__awaker; waitq.c), and
 *
 *   fut__sem       the FIFO semaphore core under the semaphore, the mutex,
 *                  the rwlock and the bounded mpsc's capacity
 *                  (semaphore.c).
 *
 * Lock order: every lock here is a leaf. No code holds one while calling
 * a waker, a destructor or the allocator's free of another primitive.
 */
#ifndef FUT_SYNC_INTERNAL_H
#define FUT_SYNC_INTERNAL_H

#include "sync/waitq.h"

/* ------------------------------------------------------- semaphore core */

/* The state word: permits in bits [FUT__SEM_SHIFT, FUT__SEM_SHIFT +
 * width of 'pmask'), three flags below; bits above the permit field are
 * the embedder's (the bounded mpsc keeps its tail position there), and
 * every update here preserves them. See semaphore.c for the rules. */
#define FUT__SEM_WAITERS ((uintptr_t)1) /* the waiter list is not empty */
#define FUT__SEM_CLOSED ((uintptr_t)2)  /* acquires fail with ECLOSED */
#define FUT__SEM_AUX ((uintptr_t)4)     /* the embedder's flag */
#define FUT__SEM_SHIFT 3
#define FUT__SEM_ONE ((uintptr_t)1 << FUT__SEM_SHIFT)

struct fut__sem {
    fut__aword state;
    struct fut__lock lock;
    struct fut__list waiters; /* struct fut__wnode, FIFO, under 'lock' */
    uintptr_t pmask;          /* mask of the permit field (after shift) */
};

_Static_assert(sizeof(struct fut__sem) <= sizeof(struct fut_semaphore),
               "struct fut_semaphore too small");

/* Tags of a semaphore waiter's 'st' (low 2 bits); QUEUED carries the
 * permits still needed above them. */
#define FUT__SEMW_IDLE ((uintptr_t)0)    /* holds nothing, not queued */
#define FUT__SEMW_QUEUED ((uintptr_t)1)  /* on the list; need = st >> 2 */
#define FUT__SEMW_GRANTED ((uintptr_t)2) /* holds 'aux' permits */
#define FUT__SEMW_CLOSED ((uintptr_t)3)  /* the semaphore was closed */
#define FUT__SEMW_TAG(st) ((st)&3)

static inline uintptr_t fut__sem_permits(const struct fut__sem *s,
                                         uintptr_t st)
{
    return (st >> FUT__SEM_SHIFT) & s->pmask;
}

void fut__sem_init(struct fut__sem *s, uintptr_t permits, uintptr_t pmask);

/* 0 with 'n' permits taken; FUT_EAGAIN when there are fewer, or when
 * waiters are queued (FIFO: no barging); FUT_ECLOSED. */
int fut__sem_try_acquire(struct fut__sem *s, uintptr_t n);

void fut__sem_release_slow(struct fut__sem *s);

/* Returns 'n' permits (fetch_add; hands them to queued waiters first). */
static inline void fut__sem_release(struct fut__sem *s, uintptr_t n)
{
    /* Release: what the holder did with its permits happens before the
     * next acquirer (its acquire CAS reads this value or a later RMW of
     * the same release sequence). */
    uintptr_t old = fut__fetch_add(&s->state, n * FUT__SEM_ONE, FUT__RELEASE);
    if (old & FUT__SEM_WAITERS)
        fut__sem_release_slow(s);
}

/* As fut__sem_release, but refuses with FUT_EINVAL (changing nothing)
 * when the free permits would exceed 'max' (a release of permits that
 * were not held). */
int fut__sem_release_max(struct fut__sem *s, uintptr_t n, uintptr_t max);

/* Sets CLOSED and wakes every waiter (their polls give FUT_ECLOSED);
 * permits partially granted to them are returned. Idempotent. */
void fut__sem_close(struct fut__sem *s);

/* Prepares waiter 'w' to acquire 'n' permits (n <= pmask). */
void fut__semw_init(struct fut__wnode *w, uintptr_t n);

/* Polls waiter 'w': FUT_READY when it holds its permits (tag GRANTED) or
 * the semaphore is closed (tag CLOSED); FUT_PENDING having queued or
 * re-registered cx's waker. Does not call fut_coop_proceed (the caller
 * does, and may keep a grant across a PENDING). */
int fut__sem_poll(struct fut__sem *s, struct fut__wnode *w,
                  struct fut_context *cx);

/* fut__sem_poll with the coop budget (Tokio's coop): a fresh waiter
 * spends its unit before trying; a waiter granted from the queue after.
 * What a future's poll calls. */
int fut__sem_poll_coop(struct fut__sem *s, struct fut__wnode *w,
                       struct fut_context *cx);

/* Cancels waiter 'w' in any state: a queued waiter is unlinked and its
 * partial grant handed on; a granted one's permits are released (to the
 * next waiter). Leaves 'w' IDLE. */
void fut__sem_cancel(struct fut__sem *s, struct fut__wnode *w);

#endif /* FUT_SYNC_INTERNAL_H */
