/* SPDX-License-Identifier: MIT */
/** \file
 * fut sync: async locks and signals - semaphore, mutex, rwlock, notify,
 * barrier. (Channels are in fut/chan.h.)
 *
 * Every object here lives in caller storage (fut_x_init / fut_x_fini) and
 * never allocates; waiting never allocates either: the waiter node is
 * inside the waiting future (struct fut_sync_waiter). Every object may be
 * used from any number of threads at once; a future (like any future) is
 * polled and dropped by one thread at a time, which may change between
 * polls. Guards and permits are plain values that may be handed to, and
 * released on, another thread.
 *
 * Fairness: the semaphore, and so the mutex and the rwlock built on it,
 * serve waiters in strict FIFO order: a waiter is never overtaken, not
 * even by a later one that wants fewer permits, and a try_* call fails
 * while anybody is queued.
 *
 * Cancel safety (C12), declared on each future below:
 *   cancel-safe     dropping it before READY loses nothing;
 *   loses-position  dropping it loses its place in the queue - nothing
 *                   else: if permits (or the lock, or a notification) had
 *                   already been handed to it, the drop passes them on to
 *                   the next waiter.
 * Dropping any of these futures after READY releases nothing: the output
 * (a guard, a permit) is the caller's.
 *
 * Results: int >= 0 or a negative FUT_E* code (fut/core.h). Misuse that a
 * program can recover from (unlocking with an empty guard, releasing a
 * lock that is not held) returns FUT_EINVAL; programming errors that
 * corrupt state (fini with waiters queued) abort (FUT_ASSERT).
 */
#ifndef FUT_SYNC_H
#define FUT_SYNC_H

#include "fut/core.h"

FUT_BEGIN_DECLS

/** Private storage of the waiter node inside a waiting future: a list link,
 * the waker to call, and a state word. Do not touch. */
struct fut_sync_waiter {
    uintptr_t priv_[6];
};

/* ------------------------------------------------------------- semaphore */

/** The largest permit count a semaphore may hold. */
#define FUT_SEMAPHORE_MAX_PERMITS (UINTPTR_MAX >> 4)

/** A counting semaphore (Tokio's batch semaphore): acquire N permits at a
 * time, FIFO, closable. Fields are private. */
struct fut_semaphore {
    uintptr_t priv_[5];
};

/** Permits held: 'n' permits of 'sem'. Returned with
 * fut_semaphore_release; an empty permit has sem == NULL. A permit is a
 * value: it may be released from any thread. Do not copy it and release
 * both copies. */
struct fut_semaphore_permit {
    struct fut_semaphore *sem; /**< the semaphore, or NULL: empty */
    uintptr_t n;               /**< permits held */
};

/** Initialises 's' with 'permits' free permits (<=
 * FUT_SEMAPHORE_MAX_PERMITS; more aborts). */
FUT_EXTERN void fut_semaphore_init(struct fut_semaphore *s,
                                   uintptr_t permits);

/** Finalises 's'. No future may be waiting on it (aborts in debug builds
 * otherwise); permits still held elsewhere must not be released later. */
FUT_EXTERN void fut_semaphore_fini(struct fut_semaphore *s);

/** Free permits right now (a snapshot). Thread: any. */
FUT_EXTERN uintptr_t fut_semaphore_available(const struct fut_semaphore *s);

/** Takes 'n' permits without waiting. Returns 0 with '*out' holding them;
 * FUT_EAGAIN when fewer than 'n' are free or when other acquirers are
 * queued (no barging past them); FUT_ECLOSED when the semaphore is
 * closed. On failure '*out' is an empty permit. Thread: any. */
FUT_EXTERN int fut_semaphore_try_acquire(struct fut_semaphore *s, uintptr_t n,
                                         struct fut_semaphore_permit *out);

/** Gives the permits in '*p' back (waking queued acquirers, first come
 * first served) and empties '*p'. Returns 0, or FUT_EINVAL for an empty
 * permit. Permits are returned even when the semaphore is closed.
 * Thread: any. */
FUT_EXTERN int fut_semaphore_release(struct fut_semaphore_permit *p);

/** Empties '*p' without returning its permits to the semaphore (they are
 * gone for good, e.g. to shrink it). */
FUT_EXTERN void fut_semaphore_forget(struct fut_semaphore_permit *p);

/** Adds 'n' new permits. Returns 0, or FUT_EINVAL when the count would
 * exceed FUT_SEMAPHORE_MAX_PERMITS (nothing is added). Thread: any. */
FUT_EXTERN int fut_semaphore_add_permits(struct fut_semaphore *s,
                                         uintptr_t n);

/** Closes 's': every queued acquire completes with FUT_ECLOSED, and every
 * later acquire and try_acquire fails with it. Permits already held stay
 * valid. Idempotent. Thread: any. */
FUT_EXTERN void fut_semaphore_close(struct fut_semaphore *s);

/** 1 once 's' was closed. */
FUT_EXTERN int fut_semaphore_is_closed(const struct fut_semaphore *s);

/** The acquire future: waits for 'n' permits (n == 0: READY at once, with
 * an empty permit). Output: 'result' = 0 with 'permit' holding them, or
 * FUT_ECLOSED when the semaphore was closed first ('permit' empty). Polls
 * after READY return READY with the output unchanged.
 * loses-position: dropping it before READY gives up its place in the
 * queue; permits already handed to it (partly or all) go to the next
 * waiters - none is lost. Dropping it after READY leaves 'permit' with
 * the caller. */
struct fut_semaphore_acquire {
    struct fut_future base;    /**< the future header (fut_poll, fut_drop) */
    struct fut_semaphore *sem; /**< private */
    struct fut_sync_waiter w;  /**< private */
    int result;                /**< output */
    struct fut_semaphore_permit permit; /**< output */
};

/** Initialises 'f' to acquire 'n' (<= FUT_SEMAPHORE_MAX_PERMITS) permits
 * of 's'. Nothing happens before the first poll. */
FUT_EXTERN void fut_semaphore_acquire_init(struct fut_semaphore_acquire *f,
                                           struct fut_semaphore *s,
                                           uintptr_t n);

/* ----------------------------------------------------------------- mutex */

/** An async mutex: FIFO-fair (a semaphore of one permit). It protects
 * whatever the caller associates with it; the lock is held by a guard.
 * Fields are private. */
struct fut_mutex {
    uintptr_t priv_[5];
};

/** Holds the lock of 'm'; empty (m == NULL) once unlocked. A value: it may
 * be unlocked from another thread. Do not copy a guard and unlock both
 * copies (the second unlock of a mutex that is free again is detected and
 * refused, but one that somebody else locked meanwhile is not). */
struct fut_mutex_guard {
    struct fut_mutex *m; /**< the mutex locked, or NULL: empty */
};

/** Initialises 'm', unlocked. 'm' must not move afterwards (its waiter
 * list points into it). */
FUT_EXTERN void fut_mutex_init(struct fut_mutex *m);
/** Finalises 'm': it must be unlocked with nobody waiting (aborts in debug
 * builds otherwise). */
FUT_EXTERN void fut_mutex_fini(struct fut_mutex *m);

/** Locks without waiting. Returns 0 with '*g' holding the lock, or
 * FUT_EBUSY when it is locked or others are queued for it ('*g' empty).
 * Thread: any. */
FUT_EXTERN int fut_mutex_try_lock(struct fut_mutex *m,
                                  struct fut_mutex_guard *g);

/** Releases the lock held by '*g' (the next queued locker gets it) and
 * empties '*g'. Returns 0; FUT_EINVAL when '*g' is empty (unlocked
 * already) or its mutex is not locked (a stale copy): nothing changes.
 * Thread: any. */
FUT_EXTERN int fut_mutex_unlock(struct fut_mutex_guard *g);

/** 1 when 'm' is locked right now (a snapshot). */
FUT_EXTERN int fut_mutex_is_locked(const struct fut_mutex *m);

/** The lock future. Output: 'guard', holding the lock. Polls after READY
 * return READY with the guard unchanged (unlock it once).
 * loses-position: dropping it before READY gives up its place in the
 * queue; if the lock had just been handed to it, the lock goes to the
 * next waiter (or becomes free). */
struct fut_mutex_lock {
    struct fut_future base;   /**< the future header (fut_poll, fut_drop) */
    struct fut_mutex *m;      /**< private */
    struct fut_sync_waiter w; /**< private */
    struct fut_mutex_guard guard; /**< output */
};

/** Initialises 'f' to lock 'm'. Nothing happens before the first poll. */
FUT_EXTERN void fut_mutex_lock_init(struct fut_mutex_lock *f,
                                    struct fut_mutex *m);

/* ---------------------------------------------------------------- rwlock */

/** Readers that may hold an rwlock at once. */
#define FUT_RWLOCK_MAX_READERS ((uintptr_t)1 << 28)

/** A reader-writer lock: any number of readers or one writer (Tokio's
 * RwLock: a FIFO semaphore of FUT_RWLOCK_MAX_READERS permits; a reader
 * takes one, a writer all).
 * Writer-preferring, by FIFO order: once a writer is queued, readers
 * that arrive after it queue behind it instead of joining the readers
 * inside, so a stream of readers cannot starve a writer; the writer gets
 * the lock as soon as the readers that came before it leave. Readers
 * queued behind a writer get the lock together when it leaves. Fields are
 * private. */
struct fut_rwlock {
    uintptr_t priv_[5];
};

/** Guards: hold the lock for reading / writing; empty once unlocked. The
 * same copy rule as fut_mutex_guard. */
struct fut_rwlock_read_guard {
    struct fut_rwlock *l; /**< the lock held, or NULL: empty */
};
/** The write guard (see fut_rwlock_read_guard). */
struct fut_rwlock_write_guard {
    struct fut_rwlock *l; /**< the lock held, or NULL: empty */
};

/** Initialises 'l', unlocked. 'l' must not move afterwards (its waiter
 * list points into it). */
FUT_EXTERN void fut_rwlock_init(struct fut_rwlock *l);
/** Finalises 'l': unlocked, nobody waiting (aborts in debug builds). */
FUT_EXTERN void fut_rwlock_fini(struct fut_rwlock *l);

/** Without waiting: 0 with the guard set, or FUT_EBUSY (guard empty) when
 * the lock cannot be taken now or others are queued. Thread: any. */
FUT_EXTERN int fut_rwlock_try_read(struct fut_rwlock *l,
                                   struct fut_rwlock_read_guard *g);
/** The same for writing. */
FUT_EXTERN int fut_rwlock_try_write(struct fut_rwlock *l,
                                    struct fut_rwlock_write_guard *g);

/** Release the lock held by the guard and empty it. 0, or FUT_EINVAL when
 * the guard is empty or the lock is not held that way (nothing changes).
 * Thread: any. */
FUT_EXTERN int fut_rwlock_read_unlock(struct fut_rwlock_read_guard *g);
/** The same for a write guard. */
FUT_EXTERN int fut_rwlock_write_unlock(struct fut_rwlock_write_guard *g);

/** Turns a write lock into a read lock without letting a writer in
 * between: readers queued (at the front) may then join. 0 with '*w'
 * emptied and '*r' set, or FUT_EINVAL when '*w' is empty. */
FUT_EXTERN int fut_rwlock_downgrade(struct fut_rwlock_write_guard *w,
                                    struct fut_rwlock_read_guard *r);

/** The read-lock future. Output: 'guard'. Polls after READY return READY.
 * loses-position (as fut_mutex_lock: a grant already made is passed on). */
struct fut_rwlock_read {
    struct fut_future base;   /**< the future header (fut_poll, fut_drop) */
    struct fut_rwlock *l;     /**< private */
    struct fut_sync_waiter w; /**< private */
    struct fut_rwlock_read_guard guard; /**< output */
};
/** Initialises 'f' to lock 'l' for reading. Nothing happens before the
 * first poll. */
FUT_EXTERN void fut_rwlock_read_init(struct fut_rwlock_read *f,
                                     struct fut_rwlock *l);

/** The write-lock future. Output: 'guard'. Polls after READY return READY.
 * loses-position: dropping it gives up its place; reader slots already
 * handed to it while it waited at the head go to the next waiters. */
struct fut_rwlock_write {
    struct fut_future base;   /**< the future header (fut_poll, fut_drop) */
    struct fut_rwlock *l;     /**< private */
    struct fut_sync_waiter w; /**< private */
    struct fut_rwlock_write_guard guard; /**< output */
};
/** Initialises 'f' to lock 'l' for writing. Nothing happens before the
 * first poll. */
FUT_EXTERN void fut_rwlock_write_init(struct fut_rwlock_write *f,
                                      struct fut_rwlock *l);

/* ---------------------------------------------------------------- notify */

/** Tokio's Notify: wakes tasks without carrying data.
 *   - fut_notify_one wakes the longest-waiting fut_notified; with nobody
 *     waiting it stores one permit (not more: notifications coalesce),
 *     which the next fut_notified consumes at once;
 *   - fut_notify_waiters wakes every fut_notified that exists at the time
 *     of the call - including ones initialised but not yet polled - and
 *     stores no permit.
 * Fields are private. */
struct fut_notify {
    uintptr_t priv_[4];
};

/** Initialises 'n': no permit, nobody waiting. 'n' must not move
 * afterwards (its waiter list points into it). */
FUT_EXTERN void fut_notify_init(struct fut_notify *n);
/** Finalises 'n': no future may be waiting (aborts in debug builds). */
FUT_EXTERN void fut_notify_fini(struct fut_notify *n);

/** Thread: any; never blocks (a short internal lock when somebody waits). */
FUT_EXTERN void fut_notify_one(struct fut_notify *n);
/** Wakes every fut_notified that exists now (see above). Thread: any. */
FUT_EXTERN void fut_notify_waiters(struct fut_notify *n);

/** The wait future. READY once notified: by fut_notify_one (FIFO among
 * waiters, or the stored permit), or by a fut_notify_waiters called after
 * fut_notified_init. No output. Polls after READY return READY.
 * loses-position: dropping it loses its place in the queue; a
 * fut_notify_one that had already chosen it is passed on to the next
 * waiter (or stored as the permit), so no notification is lost. */
struct fut_notified {
    struct fut_future base;   /**< the future header (fut_poll, fut_drop) */
    struct fut_notify *n;     /**< private */
    uintptr_t gen;            /**< private: notify_waiters calls seen */
    struct fut_sync_waiter w; /**< private */
};

/** Initialises 'f' over 'n' (which must outlive it); from now on a
 * fut_notify_waiters releases it. */
FUT_EXTERN void fut_notified_init(struct fut_notified *f,
                                  struct fut_notify *n);

/* --------------------------------------------------------------- barrier */

/** A reusable barrier for 'n' parties: the n-th wait of a generation
 * releases all n; one of them is told it is the leader. Fields are
 * private. */
struct fut_barrier {
    uintptr_t priv_[6];
};

/** n == 0 behaves as n == 1 (every wait is released at once). */
FUT_EXTERN void fut_barrier_init(struct fut_barrier *b, size_t n);
/** Finalises 'b': no future may be waiting (aborts in debug builds). */
FUT_EXTERN void fut_barrier_fini(struct fut_barrier *b);

/** The wait future. Output: 'is_leader' = 1 for exactly one wait of each
 * generation (the one that arrived last), 0 for the others. Polls after
 * READY return READY with the output unchanged.
 * cancel-safe: dropping it before its generation is released withdraws
 * its arrival (the barrier then waits for another party); dropping it
 * after the release changes nothing. */
struct fut_barrier_wait {
    struct fut_future base;   /**< the future header (fut_poll, fut_drop) */
    struct fut_barrier *b;    /**< private */
    struct fut_sync_waiter w; /**< private */
    int is_leader;            /**< output */
};

/** Initialises 'f' to wait at 'b' (which must outlive it). */
FUT_EXTERN void fut_barrier_wait_init(struct fut_barrier_wait *f,
                                      struct fut_barrier *b);

FUT_END_DECLS

#endif /* FUT_SYNC_H */
