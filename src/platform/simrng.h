/* SPDX-License-Identifier: MIT */
/* The simulation's seeded generator (src/platform/simrng.c): xoshiro256**
 * seeded through splitmix64, and the thread's current generator - set
 * while a simulation runtime (include/fut/sim.h) runs on this thread, so
 * that every random choice the library makes there (select's fair start,
 * the simulation's own run-queue pick) comes from the seed. */
#ifndef FUT_PLATFORM_SIMRNG_H
#define FUT_PLATFORM_SIMRNG_H

#include <stdint.h>

struct fut__simrng {
    uint64_t s[4];
};

/* Seeds 'r' from 'seed' (any value, 0 included). */
void fut__simrng_seed(struct fut__simrng *r, uint64_t seed);
/* The next 64 bits of 'r'. */
uint64_t fut__simrng_next(struct fut__simrng *r);
/* A uniform index in [0, n), n > 0 (rejection: no modulo bias). */
uint64_t fut__simrng_below(struct fut__simrng *r, uint64_t n);
/* splitmix64's finaliser: a 64-bit mix (the trace hash's step). */
uint64_t fut__simrng_mix(uint64_t z);

/* The generator of the simulation running on this thread, or NULL (no
 * simulation: callers use their own randomness). Set and restored by the
 * simulation scheduler around its block_on and shutdown. */
extern _Thread_local struct fut__simrng *fut__tls_simrng;

#endif /* FUT_PLATFORM_SIMRNG_H */
