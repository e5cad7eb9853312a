/* SPDX-License-Identifier: MIT */
/* A thread parker on a futex (src/platform/park.c). */
#ifndef FUT_PLATFORM_PARK_H
#define FUT_PLATFORM_PARK_H

#include <stdint.h>

#include "util/atomic.h"

/* A one-permit parker on a futex (std::thread::park): unpark before park
 * makes the next park return at once. */
struct fut__parker {
    fut__futex_word state; /* EMPTY, PARKED, NOTIFIED */
};
void fut__parker_init(struct fut__parker *p);
/* Sleeps until unparked or 'timeout_ns' (-1 = forever) elapsed. */
void fut__parker_park(struct fut__parker *p, int64_t timeout_ns);
void fut__parker_unpark(struct fut__parker *p);

#endif /* FUT_PLATFORM_PARK_H */
