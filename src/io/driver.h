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
/* The driver of a simulation runtime (fut/sim.h): fut__driver_new with
 * the paused clock, starting at 0 instead of the real clock; fds are
 * refused (FUT_EINVAL) and blocking jobs run inline at their first poll.
 * Current-thread only, like start_paused. */
int fut__driver_new_sim(struct fut__sched *s, const struct fut_rt_config *cfg,
                        struct fut__driver **out);
/* Virtual time since the start of 'd' (ns): the simulation's clock. */
int64_t fut__driver_vnow(struct fut__driver *d);

#endif /* FUT_IO_DRIVER_H */
