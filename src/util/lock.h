/* SPDX-License-Identifier: MIT */
/* fut__lock: the library's lock, one fut__aword (a futex mutex).
 *
 * Rules of 'w': 0 free, 1 held, 2 held and a thread may sleep on the
 * futex (Drepper's "mutex2", as Rust's std Mutex on Linux). An
 * uncontended acquire is one CAS and a release one swap, where a
 * pthread mutex costs about 55 instructions a pair (callgrind, glibc
 * 2.36) - and the reactor, the timers and the schedulers take one on
 * every I/O. A contended acquirer spins a little (critical sections here
 * are short), then stores 2 and sleeps; a release that finds 2 wakes one
 * sleeper. No fairness, no recursion, no owner check. The model-checker
 * build never stores 2: a contended acquirer spins with fut__spin_hint,
 * which the checker schedules (it wakes the spinner when another thread
 * writes). util/mutex.h's fut__mutex is this lock. */
#ifndef FUT_UTIL_LOCK_H
#define FUT_UTIL_LOCK_H

#include "util/atomic.h"

struct fut__lock {
    fut__aword w; /* 0, 1 or 2: see the rules */
};

/* A static lock's initializer. */
#define FUT__LOCK_INIT                                                       \
    {                                                                        \
        0                                                                    \
    }

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

/* One CAS, no wait: 1 when the caller now holds 'l', else 0 (held by
 * another). Acquire: pairs with the release in fut__lock_release. */
static inline int fut__lock_try(struct fut__lock *l)
{
    uintptr_t z = 0;
    return fut__cas(&l->w, &z, 1, FUT__ACQUIRE, FUT__RELAXED);
}

static inline void fut__lock_release(struct fut__lock *l)
{
    /* Release: publishes our critical section to the next acquirer. */
    if (fut__swap(&l->w, 0, FUT__RELEASE) == 2)
        fut__lock_wake(l);
}

#endif /* FUT_UTIL_LOCK_H */
