/* SPDX-License-Identifier: MIT */
/* The slow paths of fut__lock (util/lock.h): the contended acquire and
 * the wake of a sleeper. */
#include "platform/sys.h"
#include "util/lock.h"

#ifndef FUT_MODEL_CHECK

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "the futex word is the low half of the lock word");

/* The futex word: the low half of the lock word. */
static uint32_t *futex_word(fut__aword *w)
{
    return (uint32_t *)(void *)w;
}

/* Contended acquire: spin a little (the critical sections are a few
 * dozen instructions), then mark the word contended and sleep. */
void fut__lock_slow(struct fut__lock *l)
{
    for (int i = 0; i < 100; i++) {
        uintptr_t z = 0;
        if (fut__load(&l->w, FUT__RELAXED) == 0 &&
            fut__cas(&l->w, &z, 1, FUT__ACQUIRE, FUT__RELAXED))
            return;
        fut__cpu_relax();
    }
    /* Acquire: as in fut__lock_acquire. Storing 2 makes the holder's
     * release wake a sleeper; we may have taken the lock with 2 in it,
     * which only costs one spurious FUTEX_WAKE. */
    while (fut__swap(&l->w, 2, FUT__ACQUIRE) != 0)
        fut__sys_futex_wait(futex_word(&l->w), 2, -1);
}

void fut__lock_wake(struct fut__lock *l)
{
    fut__sys_futex_wake(futex_word(&l->w), 1);
}

#else /* FUT_MODEL_CHECK: the checker schedules the spin */

void fut__lock_slow(struct fut__lock *l)
{
    for (;;) {
        uintptr_t z = 0;
        if (fut__cas(&l->w, &z, 1, FUT__ACQUIRE, FUT__RELAXED))
            return;
        fut__spin_hint();
    }
}

void fut__lock_wake(struct fut__lock *l)
{
    (void)l;
}

#endif
