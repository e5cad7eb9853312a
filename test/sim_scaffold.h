/* SPDX-License-Identifier: MIT */
/* Scaffolding the simulated-network tests (test/sim_*.c) share: a poll's
 * close of the connection or listener its future holds, the cleanup hook
 * that closes it when the future is dropped before, and one echo round of a client (write a
 * message, read it back, compare). What differs between the tests - their
 * counters, their checks, what a server does - stays in each test. */
#ifndef FUT_TEST_SIM_SCAFFOLD_H
#define FUT_TEST_SIM_SCAFFOLD_H

#include <stddef.h>

#include "fut.h"

/* Closes '*io' and sets it to NULL: a poll's own close of a handle its
 * future holds, so that the cleanup hook below finds nothing to close. */
static inline void sim_close(struct fut_io **io)
{
    fut_io_close(*io);
    *io = NULL;
}

/* Defines 'static void fn(struct fut_future *f)', the cleanup hook (the
 * FUT_ASYNC_VTABLE's) of a future of 'struct type' that closes the handle
 * in its field 'member' when it is not NULL: the future dropped before
 * its poll closed it and set it to NULL (cancelled, or the runtime's end). */
#define SIM_CLOSE_CLEANUP(fn, type, member)                                  \
    static void fn(struct fut_future *f)                                     \
    {                                                                        \
        struct type *x_ = (struct type *)f;                                  \
        if (x_->member)                                                      \
            fut_io_close(x_->member);                                        \
    }

/* One echo round on connection 'io' (test/sim_scaffold.c): writes the
 * 'len' bytes of 'out', reads 'len' bytes back into 'in' and checks that
 * they are the same bytes. Each step is checked (ck_assert): the write
 * takes all 'len' bytes, every read gives more than 0 (an EOF or an error
 * before the whole echo fails the test), and the comparison's message
 * names client 'id' and round 'k'. Result: always 0 (a failed check ends
 * the test). 'out' and 'in' are the caller's and live while it runs. */
struct sim_echo_round {
    struct fut_future base;
    struct fut_io *io;
    const unsigned char *out;
    unsigned char *in;
    size_t len, got;
    int id, k;
    struct fut_io_write_all wa;
    struct fut_io_read rd;
};

void sim_echo_round_init(struct sim_echo_round *e, struct fut_io *io,
                         const unsigned char *out, unsigned char *in,
                         size_t len, int id, int k);

#endif /* FUT_TEST_SIM_SCAFFOLD_H */
