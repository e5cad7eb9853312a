/* Thread parking on a futex (std::thread::park semantics): one permit;
 * an unpark before the park makes that park return at once.
 *
 * Rules of 'state':
 *   EMPTY -> PARKED    the parking thread, before it sleeps
 *   PARKED -> NOTIFIED an unparker, which then calls FUTEX_WAKE
 *   EMPTY -> NOTIFIED  an unparker, no syscall (the permit is stored)
 *   * -> EMPTY         the parking thread, when it returns
 */
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "platform/park.h"

enum { EMPTY = 0, PARKED = 1, NOTIFIED = 2 };

void fut__parker_init(struct fut__parker *p)
{
    atomic_init(&p->state, EMPTY);
}

static void futex_wait(_Atomic uint32_t *addr, uint32_t val, int64_t ns)
{
    struct timespec ts, *tp = NULL;
    if (ns >= 0) {
        ts.tv_sec = ns / 1000000000;
        ts.tv_nsec = ns % 1000000000;
        tp = &ts;
    }
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, val, tp, NULL, 0);
}

void fut__parker_park(struct fut__parker *p, int64_t timeout_ns)
{
    /* Acquire: pairs with the unparker's release, so whatever it
     * published before unparking is visible when we return. */
    if (atomic_exchange_explicit(&p->state, EMPTY, memory_order_acquire) ==
        NOTIFIED)
        return;
    uint32_t expect = EMPTY;
    if (!atomic_compare_exchange_strong_explicit(&p->state, &expect, PARKED,
                                                 memory_order_acquire,
                                                 memory_order_acquire)) {
        atomic_store_explicit(&p->state, EMPTY, memory_order_relaxed);
        return; /* notified in between */
    }
    futex_wait(&p->state, PARKED, timeout_ns);
    atomic_exchange_explicit(&p->state, EMPTY, memory_order_acquire);
}

void fut__parker_unpark(struct fut__parker *p)
{
    /* Release: pairs with park's acquire exchange. */
    if (atomic_exchange_explicit(&p->state, NOTIFIED, memory_order_release) ==
        PARKED)
        syscall(SYS_futex, (uint32_t *)&p->state, FUTEX_WAKE_PRIVATE, 1,
                NULL, NULL, 0);
}
