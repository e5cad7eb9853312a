/* SPDX-License-Identifier: MIT */
/* The library's mutex, behind one name so a checker can take it over:
 * the futex lock of util/lock.h (a pthread mutex cost ~55 instructions a
 * lock/unlock pair, three pairs per echo round trip). Not for use with
 * pthread_cond_* (the blocking pool keeps a pthread mutex for that). */
#ifndef FUT_UTIL_MUTEX_H
#define FUT_UTIL_MUTEX_H

#include "util/lock.h"

typedef struct fut__lock fut__mutex;

#define FUT__MUTEX_INIT FUT__LOCK_INIT
/* Returns 0, as pthread_mutex_init did (callers still check it). */
static inline void fut__mutex_init(fut__mutex *m)
{
    fut__lock_init(m); /* the futex lock: nothing to allocate, no failure */
}

#define fut__mutex_destroy(m) ((void)(m))
#define fut__mutex_lock(m) fut__lock_acquire(m)
#define fut__mutex_trylock(m) fut__lock_try(m) /* 1: taken */
#define fut__mutex_unlock(m) fut__lock_release(m)

#endif /* FUT_UTIL_MUTEX_H */
