/* SPDX-License-Identifier: MIT */
/* The current-thread scheduler's state, shared by its two files:
 * sched_current.c (the scheduler; its opening block has the rules) and
 * sched_current_sim.c (simulation mode's run queue and trace steps; its
 * opening block has that mode's rules). Private to these two.
 *
 * Here too: the local run queue's push, inline as it was when this was
 * one file. The simulation's paths stay out of line behind one
 * FUT_UNLIKELY test (fut__ct_sim_push, fut__ct_sim_pop,
 * fut__ct_sim_ran_task are noinline), so the common path saves no
 * registers for them; the tags' accessors are inline here because the
 * scheduler's spawn, poll and remote drain read them. The list's own
 * calls stay inside this header, so sched_current_sim.c calls nothing
 * in sched_current.c (scripts/check-layers.sh: no circle). */
#ifndef FUT_RT_SCHED_CURRENT_H
#define FUT_RT_SCHED_CURRENT_H

#include "rt/rt_internal.h"
#include "rt/sim_trace.h"
#include "rt/sim_workers.h"
#include "rt/slab.h"
#include "util/mutex.h"

enum {
    SIM_DIVERGED = 1,
    SIM_DEADLOCK = 2,
    SIM_INVARIANT = 3
}; /* sim_stopped */

struct ct_sched {
    struct fut__sched base;
    /* runtime thread only */
    struct fut_task *head, *tail; /* local run queue (FIFO) */
    size_t qlen;                  /* tasks in it */
    /* Simulation: the local run queue as a ring of 'rcap' (a power of
     * two) slots from 'rfirst', so the seeded pick is a memmove, not a
     * list walk; the same FIFO order, so the same picks. NULL with
     * 'rlist' set: growing it failed, the list above is used. */
    struct fut_task **ring;
    size_t rcap, rfirst;
    int rlist;
    int sim_stopped; /* simulation: SIM_DIVERGED, _DEADLOCK, _INVARIANT */
    struct fut__list owned; /* live tasks (fut_task.owned) */
    struct fut__slab slab;
    int budget;
    int event_interval;
    int shutting_down;
    int shut_down; /* refs converted: every free now counts in 'refs' */
    int countdown; /* tasks until the next remote check */
    /* any thread */
    fut__mutex lock;
    struct fut_task *rhead, *rtail; /* remote queue (under lock) */
    int closed;                     /* no more remote pushes (under lock) */
    fut__aword remote_n;            /* tasks in the remote queue */
    fut__aword in_block_on;         /* 1 while a block_on runs */
    fut__aword main_woken;          /* the main future was woken */
    fut__aword refs;                /* sched_current.c's rules */
    struct fut__parker parker;
    /* statistics: written by the runtime thread, read by anyone */
    fut__aword n_spawned, n_freed; /* runtime thread's (single writer) */
    fut__aword n_spawned_foreign, n_freed_foreign; /* any thread: RMW */
    fut__aword n_polls, n_remote, n_parks, n_budget;
    fut__aword n_blocks, n_blocks_freed; /* pool blocks (runtime thread) */
    struct fut__blockpool pool;          /* oneshots etc. from the slab */
};

/* ------------------------------------------------------------- queues */

/* Simulation of N workers (sim_workers.h), or NULL. */
static inline struct fut__simw *simw(struct ct_sched *c)
{
    return c->base.sim ? c->base.sim->workers : NULL;
}

/* sched_current_sim.c: push_local's queue in simulation mode (the
 * emulated workers' or the ring); 0 when the ring cannot grow (the list
 * takes the task). */
int fut__ct_sim_push(struct ct_sched *c, struct fut_task *t);

/* sched_current_sim.c: pop_local's pick in simulation mode (seeded). */
struct fut_task *fut__ct_sim_pop(struct ct_sched *c);

static inline void list_push(struct ct_sched *c, struct fut_task *t)
{
    c->qlen++;
    t->next = NULL;
    if (c->tail)
        c->tail->next = t;
    else
        c->head = t;
    c->tail = t;
}

static inline struct fut_task *list_pop(struct ct_sched *c)
{
    struct fut_task *t = c->head;
    if (t) {
        c->qlen--;
        c->head = t->next;
        if (!c->head)
            c->tail = NULL;
    }
    return t;
}

FUT__HOT_INLINE void push_local(struct ct_sched *c, struct fut_task *t)
{
    if (FUT_UNLIKELY(c->base.sim) && !c->rlist && fut__ct_sim_push(c, t))
        return;
    list_push(c, t);
}

/* ------------------------------------------------------------ simulation */

/* A simulation task's tag: the end of its (direct) allocation. */
static inline struct fut__sim_tag *sim_tag(struct fut_task *t)
{
    size_t bytes = t->size_class & ~0x80000000u; /* DIRECT: sched_current.c */
    return (struct fut__sim_tag *)(void *)((char *)t + bytes -
                                           sizeof(struct fut__sim_tag));
}

/* Gives a simulation task its sequence number (runtime thread). */
static inline void sim_name(struct ct_sched *c, struct fut_task *t)
{
    if (c->base.sim)
        sim_tag(t)->id = ++c->base.sim->next_id;
}

/* sched_current_sim.c: a poll of the block_on future (task 0) as a step
 * of the trace. */
void fut__ct_sim_main_step(struct ct_sched *c, int ready);

/* Counts a poll of the block_on future into the trace (simulation). */
static inline void sim_main_step(struct ct_sched *c, int ready)
{
    if (c->base.sim)
        fut__ct_sim_main_step(c, ready);
}

/* sched_current_sim.c: after the poll of 't' (tagged 'g', copied before
 * the poll: a DONE task may be freed by it), simulation mode's step,
 * requeue and end of the emulated worker's poll. */
void fut__ct_sim_ran_task(struct ct_sched *c, struct fut_task *t,
                          const struct fut__sim_tag *g,
                          enum fut__run_result r);

#endif
