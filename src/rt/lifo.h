/* SPDX-License-Identifier: MIT */
/* The LIFO slot of a multi-thread worker: one task, filled only by its
 * owner (the task the running task woke or spawned), emptied by the owner
 * between two polls or by a thief that found the owner stuck inside one
 * poll (rt/multi/multi.h says when a thief may look).
 *
 * The owner empties its slot after nearly every poll, so its take avoids
 * the locked instruction a swap costs; a thief pays instead, with an
 * asymmetric fence (Linux membarrier: a full barrier in every thread of
 * the process, at some instant P during the call). Rules:
 *   - the owner stores 'started' (polls begun) with release before each
 *     poll and 'done' (polls finished) with release after it; it takes
 *     the slot only between the two (after 'done'), in this order: a
 *     compiler barrier, a load of 'thief' (acquire); when that reads 0,
 *     a plain load and store empty the slot - the load after the look at
 *     'thief', never before; otherwise a swap does;
 *   - a thief stores 'thief' = 1, runs membarrier, then reads 'started'
 *     and 'done' (acquire); only if done < started (the owner is inside a
 *     poll) does it swap the slot; then it clears 'thief' (release);
 *   - no task is taken twice: an owner's load of 'thief' after P reads 1
 *     (it swaps: RMW against RMW) or the thief's clear, which follows its
 *     swap (the owner's load of the slot then sees that swap). A load of
 *     'thief' before P finished, with the 'done' store before it, by P,
 *     so a thief reading done < started sees a 'started' stored after
 *     that take: the take's store of 0 happens before the thief's swap,
 *     which finds the slot empty or holding a task of the new poll
 *     (whose take comes after P);
 *   - only the owner fills the slot, and thieves only empty it: into a
 *     slot the owner sees empty, a store will do; into a full one it
 *     swaps, since the task there may be leaving with a thief;
 *   - without membarrier (an old kernel, a seccomp filter), 'asym' is 0:
 *     the owner always swaps and thieves skip the fence.
 * The model checker's queue models check these rules (lifo_take_steal),
 * in SC and TSO, with membarrier as a drain of every store buffer.
 */
#ifndef FUT_RT_LIFO_H
#define FUT_RT_LIFO_H

#include "internal.h"

struct fut_task;

struct fut__lifo {
    fut__aword task;  /* the task, or 0 */
    fut__aword thief; /* 1 while a thief steals (see the rules) */
};

#ifdef FUT_MODEL_CHECK
#define fut__membarrier() (mc_membarrier(__FILE__, __LINE__), 0)
#else
#include "platform/membarrier.h"
#endif

static inline void fut__lifo_init(struct fut__lifo *l)
{
    fut__aword_init(&l->task, 0);
    fut__aword_init(&l->thief, 0);
}

/* Owner: puts 't' in the slot. Returns the task it displaced (for the
 * run queue), or NULL. Release: the task's state before a thief's
 * acquire swap. */
static inline struct fut_task *fut__lifo_push(struct fut__lifo *l,
                                              struct fut_task *t)
{
    if (fut__load(&l->task, FUT__RELAXED) == 0) {
        fut__store(&l->task, (uintptr_t)t, FUT__RELEASE);
        return NULL;
    }
    /* Acquire: the displaced task, if a thief did not take it. (We may
     * see our own old store after a thief emptied it: the swap finds 0.) */
    return (struct fut_task *)fut__swap(&l->task, (uintptr_t)t, FUT__ACQ_REL);
}

/* Owner, between polls (after its release store of 'done'): the task in
 * the slot, or NULL. */
static inline struct fut_task *fut__lifo_take(struct fut__lifo *l, int asym)
{
#ifdef FUT_MC_BUG_LIFO_LOAD_FIRST
    /* Seeded bug (test/mc): the slot loaded before the look at 'thief' -
     * a whole steal fits between the two (the checker found this one). */
    uintptr_t early = fut__load(&l->task, FUT__RELAXED);
    if (asym && early && !fut__load(&l->thief, FUT__ACQUIRE)) {
        fut__store(&l->task, 0, FUT__RELAXED);
        return (struct fut_task *)early;
    }
#endif
    if (asym) {
        fut__compiler_fence(); /* 'done', then the look at 'thief' */
        /* Acquire: a thief's clear comes after its swap, which the
         * load of the slot below then sees. */
        if (!fut__load(&l->thief, FUT__ACQUIRE)) {
            uintptr_t t = fut__load(&l->task, FUT__RELAXED);
            if (t)
                fut__store(&l->task, 0, FUT__RELAXED);
            return (struct fut_task *)t;
        }
    }
    /* Acquire: a task pushed before a thief's interest is ours whole. */
    return (struct fut_task *)fut__swap(&l->task, 0, FUT__ACQ_REL);
}

/* A thief: the task of a worker whose poll count 'started' it saw stuck,
 * or NULL when the slot is empty or the owner is between polls (it may
 * be taking: look again later). */
static inline struct fut_task *fut__lifo_steal(struct fut__lifo *l,
                                               fut__aword *started,
                                               fut__aword *done, int asym)
{
    if (!fut__load(&l->task, FUT__RELAXED))
        return NULL;
    if (asym) {
        fut__store(&l->thief, 1, FUT__RELAXED);
#ifndef FUT_MC_BUG_LIFO_NO_MEMBARRIER
        if (fut__membarrier() != 0) {
            fut__store(&l->thief, 0, FUT__RELEASE);
            return NULL;
        }
#endif
        /* Acquire: the owner's take before a 'started' we see. 'done'
         * is read second: it may have passed the 'started' we read (the
         * owner finished another poll meanwhile: between polls too). */
        uintptr_t s = fut__load(started, FUT__ACQUIRE);
        uintptr_t d = fut__load(done, FUT__ACQUIRE);
#ifndef FUT_MC_BUG_LIFO_NO_POLL_CHECK
        if ((intptr_t)(s - d) <= 0) {
            fut__store(&l->thief, 0, FUT__RELEASE);
            return NULL;
        }
#else
        (void)s;
        (void)d;
#endif
    }
    /* Acquire: pairs with the owner's release push. */
    struct fut_task *t =
        (struct fut_task *)fut__swap(&l->task, 0, FUT__ACQ_REL);
    if (asym)
        fut__store(&l->thief, 0, FUT__RELEASE);
    return t;
}

#endif /* FUT_RT_LIFO_H */
