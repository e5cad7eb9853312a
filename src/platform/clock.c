/* SPDX-License-Identifier: MIT */
/* The monotonic clock every deadline in fut refers to. */
#include <time.h>

#include "internal.h"

int64_t fut_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
