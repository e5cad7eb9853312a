/* SPDX-License-Identifier: MIT */
/* The park spin's rules: when a multi-thread worker that ran out of work
 * watches its parker before a futex sleep, and for how long
 * (rt/multi/park.c runs the spin; docs/scheduler.md, "Park
 * spin", says why). The state is the worker's own: no atomics here.
 *
 * Rules:
 *   - a worker spins while it has credits: a spin that a wake ends (a
 *     hit) refills SPIN_CREDIT of them; a spin that ends in a sleep spends
 *     one;
 *   - with no credit it parks without spinning. A sleep whose wake was
 *     issued within 'bound' of the park's start (a spin would have caught
 *     it: "soon") counts towards a probe; after 'gap' soon sleeps the
 *     worker gets one credit back (a probe). Each time the credits run out
 *     'gap' doubles (up to GAP_MAX); a hit resets it to 1. So a worker
 *     whose wakes come late never spins after its credits are gone, and
 *     one whose wakes come soon but whose spins still miss (another
 *     thread needs its CPU to answer) spins at ever rarer probes;
 *   - the bound is the configured one, or (adaptive, park_spin_ns = 0)
 *     twice the worker's wake latency: the time from an unparker's
 *     FUTEX_WAKE to the woken worker running, a moving average (1/8,
 *     from the first sample) of the sleeps that a timed wake ended, each
 *     sample at most MAX_NS, the bound clamped to MIN_NS..MAX_NS. A
 *     spin that long costs at most what the sleep and the wake cost the
 *     two threads (spin-then-block's rule of thumb), and it outlasts the
 *     wake latency of the thread that is to answer, so a ping-pong whose
 *     threads both sleep can catch the answer and then stay awake.
 */
#ifndef FUT_RT_PARK_SPIN_H
#define FUT_RT_PARK_SPIN_H

#include <stdint.h>

enum {
    FUT__SPIN_CREDIT = 3,
    FUT__SPIN_GAP_MAX = 64,
};
#define FUT__SPIN_MIN_NS ((int64_t)1000)
#define FUT__SPIN_MAX_NS ((int64_t)64000)

struct fut__spin {
    int64_t bound;    /* the next spin's length (ns) */
    int64_t fixed;    /* the configured bound, or 0: adaptive */
    int64_t wake_lat; /* adaptive: the average wake latency (ns), 0: none */
    int credit;       /* spins left before the worker stops spinning */
    int gap;          /* soon sleeps that grant the next probe */
    int soon;         /* soon sleeps since the credits ran out */
};

/* 'fixed': the configured bound (ns), or 0 for the adaptive one. */
static inline void fut__spin_init(struct fut__spin *s, int64_t fixed)
{
    s->fixed = fixed;
    s->bound = fixed ? fixed : FUT__SPIN_MIN_NS;
    s->wake_lat = 0;
    s->credit = FUT__SPIN_CREDIT;
    s->gap = 1;
    s->soon = 0;
}

/* A wake ended the spin, or landed before the sleep: keep spinning. */
static inline void fut__spin_hit(struct fut__spin *s)
{
    s->credit = FUT__SPIN_CREDIT;
    s->gap = 1;
    s->soon = 0;
}

static inline void fut__spin_adapt(struct fut__spin *s, int64_t lat)
{
    if (lat > FUT__SPIN_MAX_NS)
        lat = FUT__SPIN_MAX_NS; /* a preempted thread is not a wake */
    s->wake_lat = s->wake_lat ? s->wake_lat + (lat - s->wake_lat) / 8 : lat;
    int64_t b = 2 * s->wake_lat;
    s->bound = b < FUT__SPIN_MIN_NS   ? FUT__SPIN_MIN_NS
               : b > FUT__SPIN_MAX_NS ? FUT__SPIN_MAX_NS
                                      : b;
}

/* After a futex sleep of a park that began at 't0' (after a spin when
 * 'spun') and ended at 'now'; 'at' is when the unparker that ended it
 * issued its FUTEX_WAKE, or -1 when no timed wake did (a timeout, a
 * stale stamp). */
static inline void fut__spin_slept(struct fut__spin *s, int spun, int64_t t0,
                                   int64_t at, int64_t now)
{
    int timed = at >= t0 && at <= now;
    /* Soon: a spin of this park's bound would have caught the wake. */
    int soon = timed && at - t0 <= s->bound;
    if (timed && !s->fixed)
        fut__spin_adapt(s, now - at);
    if (spun) {
        if (--s->credit == 0) {
            s->soon = 0;
            if (s->gap < FUT__SPIN_GAP_MAX)
                s->gap *= 2;
        }
        return;
    }
    if (soon && ++s->soon >= s->gap) {
        s->soon = 0;
        s->credit = 1; /* a probe */
    }
}

#endif /* FUT_RT_PARK_SPIN_H */
