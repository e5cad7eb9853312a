/* Machinery shared by the channels and locks of src/sync (never
 * installed):
 *
 *   fut__lock      a short-critical-section lock on one fut__aword (a
 *                  futex mutex; a spin on fut__spin_hint under the model
 *                  checker, which sees every step of it);
 *   fut__wnode     the intrusive waiter node embedded in a waiting future
 *                  (storage: struct fut_sync_waiter in fut/sync.h);
 *   fut__wakeset   wakers collected under a lock and woken after it is
 *                  released (two-phase firing, libuv uv__run_timers);
 *   fut__awaker    Tokio's AtomicWaker: one registrant, any number of
 *                  wakers, lock-free;
 *   fut__sem       the FIFO semaphore core under the semaphore, the mutex,
 *                  the rwlock and the bounded mpsc's capacity.
 *
 * Lock order: every lock here is a leaf. No code holds one while calling
 * a waker, a destructor or the allocator's free of another primitive.
 */
#ifndef FUT_SYNC_INTERNAL_H
#define FUT_SYNC_INTERNAL_H

#include "fut/sync.h"
#include "internal.h"
#include "util/list.h"

_Static_assert(sizeof(uintptr_t) == 8, "src/sync assumes 64-bit words");

/* ------------------------------------------------------------------ lock */

/* Rules of 'w': 0 free, 1 held, 2 held and a thread may sleep on the
 * futex (Drepper's "mutex2"). The model-checker build never stores 2: a
 * contended acquirer spins with fut__spin_hint, which the checker
 * schedules (it wakes the spinner when another thread writes). */
struct fut__lock {
    fut__aword w;
};

static inline void fut__lock_init(struct fut__lock *l)
{
    fut__aword_init(&l->w, 0);
}

void fut__lock_slow(struct fut__lock *l);
void fut__lock_wake(struct fut__lock *l);

static inline void fut__lock_acquire(struct fut__lock *l)
{
    uintptr_t z = 0;
    /* Acquire: pairs with the release in fut__lock_release, so the
     * previous holder's critical section happens before ours. */
    if (!fut__cas(&l->w, &z, 1, FUT__ACQUIRE, FUT__RELAXED))
        fut__lock_slow(l);
}

static inline void fut__lock_release(struct fut__lock *l)
{
    /* Release: publishes our critical section to the next acquirer. */
    if (fut__swap(&l->w, 0, FUT__RELEASE) == 2)
        fut__lock_wake(l);
}

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
#define FUT__SEMW_TAG(st) ((st) & 3)

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
    uintptr_t old = fut__fetch_add(&s->state, n * FUT__SEM_ONE,
                                   FUT__RELEASE);
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
