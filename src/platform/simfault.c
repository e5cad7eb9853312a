/* SPDX-License-Identifier: MIT */
/* The simulation's seeded faults (simfault.h). */
#include "platform/simfault.h"

_Thread_local struct fut__simfault *fut__tls_simfault;
fut__aword fut__simfault_users;

int fut__simfault_hit(unsigned kind)
{
    struct fut__simfault *f = fut__tls_simfault;
    if (!f || !(f->kinds & kind) || f->hold > 0 || f->ppm == 0)
        return 0;
    if (fut__simrng_below(&f->rng, 1000000) >= f->ppm)
        return 0;
    f->injected[__builtin_ctz(kind)]++; /* one kind per call */
    return 1;
}
