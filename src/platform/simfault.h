/* SPDX-License-Identifier: MIT */
/* The simulation's seeded faults (src/platform/simfault.c): while a
 * simulation runtime whose faults are on runs on this thread (inside its
 * fut_block_on), the allocator hook (alloc.c), the syscall shim (sys.c)
 * and the simulated network (io/backend_sim.c) ask here whether this
 * call fails. Every answer comes from the
 * fault generator, seeded from the simulation's seed, so one seed gives
 * the same failures at the same calls. One thread: the simulation's. */
#ifndef FUT_PLATFORM_SIMFAULT_H
#define FUT_PLATFORM_SIMFAULT_H

#include <stdint.h>

#include "platform/simrng.h"
#include "util/atomic.h"

/* The kinds (the same bits as fut/sim.h's FUT_SIM_FAULT_*). */
enum {
    FUT__SIMFAULT_ALLOC = 1u,  /* fut__alloc returns NULL */
    FUT__SIMFAULT_EINTR = 2u,  /* a read/write/pread/pwrite gives -EINTR */
    FUT__SIMFAULT_FS = 4u,     /* a file call gives an error */
    FUT__SIMFAULT_EAGAIN = 8u, /* a simulated socket read/write: EAGAIN */
    FUT__SIMFAULT_RESET = 16u, /* a simulated connection is reset */
    FUT__SIMFAULT_ALL = 31u,
    FUT__SIMFAULT_KINDS = 5 /* bits in ALL */
};

struct fut__simfault {
    unsigned kinds;         /* which are on */
    uint32_t ppm;           /* chance per call, in parts per million */
    int hold;               /* > 0: nothing fails (the runtime's own work) */
    struct fut__simrng rng; /* the fault generator */
    uint64_t injected[FUT__SIMFAULT_KINDS]; /* per kind (bit index) */
};

/* The faults of the simulation running on this thread, or NULL. Set and
 * restored by the simulation scheduler around its block_on. */
extern _Thread_local struct fut__simfault *fut__tls_simfault;

/* The number of simulations with faults on, any thread: a hint that lets
 * the allocator's fast path skip the thread-local look-up (relaxed; a
 * simulation counts itself in before its first block_on, on its thread,
 * with fut__simfault_count - defined in sys.c, whose fast-path hint it
 * recomputes too). */
extern fut__aword fut__simfault_users;

/* 1 when this call of kind 'kind' must fail (this thread's simulation has
 * the kind on and the generator says so), else 0. */
int fut__simfault_hit(unsigned kind);

/* Counts a simulation with faults in (+1) or out (-1); the syscall shim
 * takes its slow path while any is counted (defined in sys.c). */
void fut__simfault_count(int delta);

#endif /* FUT_PLATFORM_SIMFAULT_H */
