/* SPDX-License-Identifier: MIT */
/* Stealing (multi.h's LIFO rules; the ring's steal-half is rt/queue.c):
 * a searching worker takes half a peer's ring, starting at a random peer;
 * a peer that looks stuck in one long poll also gives up its LIFO slot. */
#include "rt/multi/multi.h"

/* A poll this long makes its worker's queued work stealable from the
 * LIFO slot (10x shorter than the debug slow-poll report). */
#define STUCK_NS (1000 * 1000)

/* Half of 'v's ring into 'w's; returns one task of it, or NULL. */
static struct fut_task *steal_ring(struct mt_worker *w, struct mt_worker *v)
{
    unsigned moved;
    struct fut_task *t = fut__ring_steal(&v->ring, &w->ring, &moved);
    if (t) {
        stat_inc(w, ST_STEALS);
        stat_add(w, ST_STOLEN, moved);
    }
    return t;
}

/* Half the ring of the first peer that has work, from a random start. */
struct fut_task *fut__mt_steal_peers(struct mt_worker *w)
{
    struct mt_sched *m = w->m;
    int start = (int)(rng_next(w) % (uint32_t)m->n);
    for (int i = 0; i < m->n; i++) {
        struct mt_worker *v = &m->w[(start + i) % m->n];
        if (v == w)
            continue;
        struct fut_task *t = steal_ring(w, v);
        if (t)
            return t;
    }
    return NULL;
}

/* Steals from a peer that looks stuck in one long poll (see the rules):
 * half its ring, or else its LIFO slot. Every call takes a look: the
 * first look records the peer's poll count, the second that finds it
 * unchanged records the time (the clock is read only then), and a look
 * at least STUCK_NS after that one, the count still unchanged, steals. */
struct fut_task *fut__mt_steal_stuck(struct mt_worker *w)
{
    struct mt_sched *m = w->m;
    int64_t now = 0;
    for (int i = 0; i < m->n; i++) {
        struct mt_worker *v = &m->w[i];
        struct seen *sn = &w->seen[i];
        if (v == w)
            continue;
        if (!fut__load(&v->lifo.task, FUT__RELAXED) &&
            !fut__ring_len(&v->ring)) {
            sn->armed = 0;
            continue;
        }
        uintptr_t seq = fut__load(&v->st[ST_POLLS], FUT__RELAXED);
        if (!sn->armed || sn->seq != seq) {
            /* It moved: most looks end here, without a clock read. */
            sn->armed = 1;
            sn->seq = seq;
            sn->since = 0;
            continue;
        }
        if (!now)
            now = fut_now_ns();
        if (!sn->since) {
            sn->since = now; /* the first look that found it still */
            continue;
        }
        if (now - sn->since < STUCK_NS)
            continue;
        sn->armed = 0;
        struct fut_task *t = steal_ring(w, v);
        if (t)
            return t;
        /* Only while it is inside a poll (rt/lifo.h's rules). */
        t = fut__lifo_steal(&v->lifo, &v->st[ST_POLLS], &v->st[ST_POLLS_DONE],
                            m->asym);
        if (t) {
            stat_inc(w, ST_STEALS);
            stat_inc(w, ST_STOLEN);
            return t;
        }
    }
    return NULL;
}
