/* SPDX-License-Identifier: MIT */
/* The asymmetric fence (Linux membarrier, src/platform/membarrier.c). */
#ifndef FUT_PLATFORM_MEMBARRIER_H
#define FUT_PLATFORM_MEMBARRIER_H

/* Registers the process for membarrier; 1 when it can be used. */
int fut__membarrier_init(void);
/* The asymmetric fence; 0, or -errno (then nothing was ordered). */
int fut__membarrier(void);

#endif /* FUT_PLATFORM_MEMBARRIER_H */
