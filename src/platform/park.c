/* SPDX-License-Identifier: MIT */
/* Thread parking on a futex (std::thread::park semantics): one permit;
 * an unpark before the park makes that park return at once.
 *
 * Rules of 'state':
 *   EMPTY -> PARKED    the parking thread, before it sleeps
 *   PARKED -> NOTIFIED an unparker, which then calls FUTEX_WAKE
 *   EMPTY -> NOTIFIED  an unparker, no syscall (the permit is stored)
 *   * -> EMPTY         the parking thread, when it returns
 */
#include "internal.h"
#include "platform/park.h"
#include "platform/sys.h"

enum { EMPTY = 0, PARKED = 1, NOTIFIED = 2 };

void fut__parker_init(struct fut__parker *p)
{
    fut__futex_init(&p->state, EMPTY);
}

void fut__parker_park(struct fut__parker *p, int64_t timeout_ns)
{
    /* Acquire: pairs with the unparker's release, so whatever it
     * published before unparking is visible when we return. */
    if (fut__futex_swap(&p->state, EMPTY, FUT__ACQUIRE) == NOTIFIED)
        return;
    uint32_t expect = EMPTY;
    /* Acquire (both ways): a failure saw NOTIFIED, pairs with the
     * unparker's release as above. */
    if (!fut__futex_cas(&p->state, &expect, PARKED, FUT__ACQUIRE,
                        FUT__ACQUIRE)) {
        fut__futex_store(&p->state, EMPTY, FUT__RELAXED);
        return; /* notified in between */
    }
    fut__sys_futex_wait(fut__futex_addr(&p->state), PARKED, timeout_ns);
    /* Acquire: pairs with the unparker's release. */
    fut__futex_swap(&p->state, EMPTY, FUT__ACQUIRE);
}

void fut__parker_unpark(struct fut__parker *p)
{
    /* Release: pairs with park's acquire exchange. */
    if (fut__futex_swap(&p->state, NOTIFIED, FUT__RELEASE) == PARKED)
        fut__sys_futex_wake(fut__futex_addr(&p->state), 1);
}
