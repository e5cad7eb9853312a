/* SPDX-License-Identifier: MIT */
/* The waiting machinery of src/sync (waitq.c; never installed):
 *
 *   fut__lock      (util/lock.h) the futex lock every primitive here
 *                  takes for its short critical sections;
 *   fut__wnode     the intrusive waiter node embedded in a waiting future
 *                  (storage: struct fut_sync_waiter in fut/sync.h);
 *   fut__wakeset   wakers collected under a lock and woken after it is
 *                  released (two-phase firing, libuv uv__run_timers);
 *   fut__awaker    Tokio's AtomicWaker: one registrant, any number of
 *                  wakers, lock-free.
 *
 * Below every primitive of src/sync: the semaphore core
 * (sync_internal.h, semaphore.c) is built on it, not the other way round.
 * Lock order: every lock here is a leaf. No code holds one while calling
 * a waker, a destructor or the allocator's free of another primitive.
 */
#ifndef FUT_SYNC_WAITQ_H
#define FUT_SYNC_WAITQ_H

#include "fut/sync.h"
#include "internal.h"
#include "util/list.h"
#include "util/lock.h"

_Static_assert(sizeof(uintptr_t) == 8, "src/sync assumes 64-bit words");

/* ---------------------------------------------------------- waiter node */

/* A waiter node lives inside the waiting future (no allocation to wait).
 * 'link' and 'waker' are touched only under the owning primitive's lock;
 * 'st' is written under it too (the last write of a waker-side thread to
 * the node is a release store of 'st') and read by the poller without it
 * (acquire). Once the poller has seen a final 'st' the node is its own
 * again: nobody else touches it, so the future may complete and go away. */
struct fut__wnode {
    struct fut__list link;
    struct fut_waker waker;
    fut__aword st;
    uintptr_t aux; /* per primitive (the semaphore: permits wanted) */
};

_Static_assert(sizeof(struct fut__wnode) <= sizeof(struct fut_sync_waiter),
               "struct fut_sync_waiter too small");

static inline struct fut__wnode *fut__wnode_of(struct fut_sync_waiter *w)
{
    return (struct fut__wnode *)(void *)w;
}

static inline struct fut__wnode *fut__wnode_from_link(struct fut__list *l)
{
    return fut__container_of(l, struct fut__wnode, link);
}

static inline void fut__wnode_init(struct fut__wnode *n, uintptr_t st)
{
    fut__list_init(&n->link);
    n->waker.data = 0;
    n->waker.vt = 0;
    fut__aword_init(&n->st, st);
    n->aux = 0;
}

/* Under the primitive's lock: takes 'n' off its list (if it is on one)
 * and takes its waker; the caller drops the waker after unlocking. */
static inline struct fut_waker fut__wnode_unlink(struct fut__wnode *n)
{
    if (fut__list_linked(&n->link))
        fut__list_remove(&n->link);
    struct fut_waker old = n->waker;
    n->waker.vt = 0;
    return old;
}

/* Under the primitive's lock: queues 'n' at the back of 'waiters' with
 * 'w' as its waker (kept when it would wake the same task). Returns the
 * waker replaced, which the caller drops after unlocking. */
static inline struct fut_waker fut__wnode_wait(struct fut__wnode *n,
                                               struct fut__list *waiters,
                                               const struct fut_waker *w)
{
    struct fut_waker old = FUT_WAKER_NONE;
    if (!fut_waker_is_set(&n->waker) || !fut_waker_will_wake(&n->waker, w)) {
        old = n->waker;
        fut__waker_store(&n->waker, fut_waker_clone(w));
    }
    fut__list_push_back(waiters, &n->link);
    return old;
}

/* --------------------------------------------------------------- wakeset */

/* Wakers taken out of nodes under a lock, woken after unlocking. The batch
 * bounds the stack use; a primitive with more waiters to wake unlocks,
 * wakes a batch and relocks (fut__wake_all_locked). */
#define FUT__WAKE_BATCH 32

struct fut__wakeset {
    int n;
    struct fut_waker w[FUT__WAKE_BATCH];
};

static inline void fut__wakeset_init(struct fut__wakeset *ws)
{
    ws->n = 0;
}

static inline int fut__wakeset_full(const struct fut__wakeset *ws)
{
    return ws->n == FUT__WAKE_BATCH;
}

/* Moves the waker in '*slot' (if any) into the set; the slot is left
 * empty. The set must not be full. */
static inline void fut__wakeset_take(struct fut__wakeset *ws,
                                     struct fut_waker *slot)
{
    if (!fut_waker_is_set(slot))
        return;
    ws->w[ws->n++] = *slot;
    slot->vt = 0;
    slot->data = 0;
}

/* Wakes (and consumes) every waker in the set; call it unlocked. */
void fut__wakeset_wake(struct fut__wakeset *ws);

/* With 'lock' held: for every node on 'list' (in order), takes its waker,
 * unlinks it and stores 'st' into it (release), then wakes the wakers
 * with the lock released, FUT__WAKE_BATCH at a time. Returns with the
 * lock held again. The list is first moved to a local sentinel, so nodes
 * that join 'list' while the lock is dropped are not woken; a node that
 * is dropped or polled meanwhile unlinks itself from the local list under
 * the same lock. */
void fut__wake_all_locked(struct fut__lock *lock, struct fut__list *list,
                          uintptr_t st);

/* --------------------------------------------------------- atomic waker */

/* Tokio's AtomicWaker. One thread at a time registers (the owner of the
 * receiving side); any thread wakes. See waitq.c for the rules. */
struct fut__awaker {
    fut__aword state;
    struct fut_waker waker;
};

void fut__awaker_init(struct fut__awaker *a);
/* Registers a clone of 'w' (keeps the old one if it will wake the same
 * task). A wake that races with the registration is never lost: the
 * registrant then wakes 'w' itself. */
void fut__awaker_register(struct fut__awaker *a, const struct fut_waker *w);
/* Takes the registered waker, if any, and wakes it. Any thread. */
void fut__awaker_wake(struct fut__awaker *a);
/* The registrant withdraws: drops the registered waker, if any. */
void fut__awaker_clear(struct fut__awaker *a);

#endif /* FUT_SYNC_WAITQ_H */
