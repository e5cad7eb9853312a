/* SPDX-License-Identifier: MIT */
/* The I/O + timer + blocking-pool driver a scheduler parks in: the one
 * entry point the schedulers call (the rest goes through
 * struct fut__driver_vt in rt/rt_internal.h). */
#ifndef FUT_IO_DRIVER_H
#define FUT_IO_DRIVER_H

#include "rt/rt_internal.h"

/* Creates the driver of a runtime being created with 'cfg' (its I/O
 * reactor over epoll, timer wheel, clock and blocking pool; threads of
 * the pool start on demand). Returns 0 with '*out' set; FUT_EINVAL for
 * a bad config (negative pool settings; start_paused with the
 * multi-thread flavor); FUT_ENOMEM or -errno (-EMFILE, ...) from epoll or
 * eventfd creation, with nothing leaked. 's' is the scheduler that will
 * park in it. */
int fut__driver_new(struct fut__sched *s, const struct fut_rt_config *cfg,
                    struct fut__driver **out);

#endif /* FUT_IO_DRIVER_H */
