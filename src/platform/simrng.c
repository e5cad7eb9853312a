/* SPDX-License-Identifier: MIT */
/* The simulation's seeded generator: xoshiro256** (Blackman and Vigna),
 * its state filled by splitmix64 from the 64-bit seed. Written from the
 * published algorithms; plain per-thread state, no atomics: a simulation
 * runs on one thread. */
#include "platform/simrng.h"

_Thread_local struct fut__simrng *fut__tls_simrng;

uint64_t fut__simrng_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void fut__simrng_seed(struct fut__simrng *r, uint64_t seed)
{
    /* splitmix64: a Weyl sequence through the finaliser; never all 0. */
    for (int i = 0; i < 4; i++) {
        seed += 0x9E3779B97F4A7C15ull;
        r->s[i] = fut__simrng_mix(seed);
    }
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t fut__simrng_next(struct fut__simrng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

uint64_t fut__simrng_below(struct fut__simrng *r, uint64_t n)
{
    /* Values at or above the largest multiple of n are redrawn. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = fut__simrng_next(r);
    while (x >= limit);
    return x % n;
}
