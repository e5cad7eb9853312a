/* SPDX-License-Identifier: MIT */
/* The current-thread scheduler's simulation mode: its run queue (the
 * seeded pick) and the steps of its trace. The scheduler itself, and the
 * rules that hold in both modes, are src/rt/sched_current.c's; the state
 * both files share is sched_current.h.
 *
 * Rules of simulation mode (base.sim set: fut_sim_new,
 * docs/simulation.md): the same scheduler, with four changes and
 * sched_current.c's rules unchanged:
 *   - the next task is picked from the local queue by the simulation's
 *     seeded generator (uniformly), not FIFO;
 *   - every task carries a struct fut__sim_tag at the end of its
 *     allocation (always a direct one), with its spawn sequence number,
 *     given on the runtime thread (at the spawn, or when a spawn from
 *     another thread is taken off the remote queue): the task's name in
 *     the trace, never its address;
 *   - every poll (tasks and the block_on future, id 0) is a step of the
 *     trace (rt/sim_trace.c); FUT_SIM_CHECK's compare run stops at the
 *     first step that differs: block_on returns FUT_ECANCELED, then and
 *     in every later call;
 *   - a park that nothing could ever end (no task ready, no timer armed,
 *     the driver 'stalled') is a deadlock: block_on returns -EDEADLK
 *     (a later block_on may bring what ends it).
 * fut__tls_simrng points at the generator while block_on or shutdown
 * runs, so select's fair start (src/core) draws from the seed too.
 * Faults and invariants (src/rt/sim_swarm.c), simulation mode only:
 *   - fut__tls_simfault points at the simulation's seeded faults while
 *     block_on runs (when any kind is on), never during shutdown: a drop
 *     never meets an injected failure;
 *   - with N emulated workers (sim->workers, src/rt/sim_workers.c) the
 *     local run queue is replaced by their queues: push_local goes to the
 *     running worker's LIFO slot (or the injection queue), a requeue to
 *     the back of its queue, pop_local asks the emulation (seeded);
 *     'qlen' still counts every queued task;
 *   - after every step the user's invariant (if set) runs; the first
 *     failure stops the run as a divergence does (block_on returns
 *     FUT_ECANCELED, then and in every later call).
 */
#include "rt/sched_current.h"

/* ------------------------------------------------------------- queues */

/* The ring's slot of the queue's k-th task. */
static struct fut_task **ring_at(struct ct_sched *c, size_t k)
{
    return &c->ring[(c->rfirst + k) & (c->rcap - 1)];
}

/* Room for one more in the ring; 0 when it cannot grow (the queue moves
 * to the list for good, in order). */
static int ring_room(struct ct_sched *c)
{
    if (c->qlen < c->rcap)
        return 1;
    size_t cap = c->rcap ? c->rcap * 2 : 256;
    c->base.sim->fault.hold++; /* the runtime's own: no seeded fault */
    struct fut_task **n = fut__alloc(cap * sizeof *n);
    c->base.sim->fault.hold--;
    if (n) {
        for (size_t i = 0; i < c->qlen; i++)
            n[i] = *ring_at(c, i);
    } else {
        size_t len = c->qlen;
        c->qlen = 0;
        for (size_t i = 0; i < len; i++)
            list_push(c, *ring_at(c, i));
        c->rlist = 1;
    }
    if (c->ring)
        fut__free(c->ring, c->rcap * sizeof *c->ring);
    c->ring = n;
    c->rcap = n ? cap : 0;
    c->rfirst = 0;
    return n != NULL;
}

/* Takes the ring's k-th task, the others keeping their order (the
 * shorter side moves). */
static struct fut_task *ring_take(struct ct_sched *c, size_t k)
{
    struct fut_task *t = *ring_at(c, k);
    if (k < c->qlen / 2) {
        for (size_t i = k; i > 0; i--)
            *ring_at(c, i) = *ring_at(c, i - 1);
        c->rfirst = (c->rfirst + 1) & (c->rcap - 1);
    } else {
        for (size_t i = k; i + 1 < c->qlen; i++)
            *ring_at(c, i) = *ring_at(c, i + 1);
    }
    c->qlen--;
    return t;
}

/* sched_current.h. Out of line, so that push_local stays small enough to
 * inline on every other runtime. */
__attribute__((noinline)) int fut__ct_sim_push(struct ct_sched *c,
                                               struct fut_task *t)
{
    if (FUT_UNLIKELY(simw(c))) { /* a LIFO slot, or injection */
        c->qlen++;
        fut__simw_schedule(simw(c), t);
        return 1;
    }
    if (ring_room(c)) {
        *ring_at(c, c->qlen) = t;
        c->qlen++;
        return 1;
    }
    return 0;
}

/* Unlinks the task at a seeded position (the list, once the ring could
 * not grow). */
static struct fut_task *pop_seeded(struct ct_sched *c)
{
    uint64_t k = fut__simrng_below(&c->base.sim->rng, c->qlen);
    struct fut_task *prev = NULL, *t = c->head;
    while (k--) {
        prev = t;
        t = t->next;
    }
    if (prev)
        prev->next = t->next;
    else
        c->head = t->next;
    if (c->tail == t)
        c->tail = prev;
    c->qlen--;
    return t;
}

/* sched_current.h: pop_local's pick (see the rules). Out of line, as
 * fut__ct_sim_push. */
__attribute__((noinline)) struct fut_task *fut__ct_sim_pop(struct ct_sched *c)
{
    if (FUT_UNLIKELY(simw(c))) { /* seeded worker, or any at shutdown */
        struct fut_task *t = c->shutting_down
                                 ? fut__simw_take_any(simw(c))
                                 : fut__simw_next(simw(c), &c->base.sim->rng);
        if (t)
            c->qlen--;
        return t;
    }
    if (c->ring) { /* the seeded pick (pop_seeded's draw), or the head */
        if (!c->qlen)
            return NULL;
        size_t k = c->qlen > 1 && !c->shutting_down
                       ? (size_t)fut__simrng_below(&c->base.sim->rng, c->qlen)
                       : 0;
        return ring_take(c, k);
    }
    if (c->qlen > 1 && !c->shutting_down)
        return pop_seeded(c);
    return list_pop(c);
}

/* ---------------------------------------------------------- trace steps */

/* One step of the trace, then the user's invariant; either failure stops
 * the run (see the rules). */
static void trace_step(struct ct_sched *c, uint64_t task, int result,
                       const char *file, int line)
{
    if (fut__sim_step(c->base.sim, task, result, file, line))
        c->sim_stopped = SIM_DIVERGED;
    else if (fut__sim_check(c->base.sim))
        c->sim_stopped = SIM_INVARIANT;
}

/* sched_current.h: the block_on future's poll (task 0), 'base.sim' set. */
void fut__ct_sim_main_step(struct ct_sched *c, int ready)
{
    trace_step(c, 0, ready ? FUT__SIM_DONE : FUT__SIM_PENDING, "fut_block_on",
               0);
}

/* sched_current.h: after a task's poll, the step of the trace, the
 * requeue (to the back of its emulated worker's queue, or of the one
 * queue) and the end of the worker's poll. Out of line: run_task keeps
 * one call of fut__task_run, which LTO then inlines with fut__task_poll
 * (two calls kept both out of line: +43 instructions per poll). */
__attribute__((noinline)) void
fut__ct_sim_ran_task(struct ct_sched *c, struct fut_task *t,
                     const struct fut__sim_tag *g, enum fut__run_result r)
{
    trace_step(c, g->id,
               r == FUT__RUN_DONE         ? FUT__SIM_DONE
               : r == FUT__RUN_RESCHEDULE ? FUT__SIM_REQUEUED
                                          : FUT__SIM_PENDING,
               g->file, g->line);
    if (r == FUT__RUN_RESCHEDULE) {
        if (simw(c)) { /* the back of its worker's queue */
            c->qlen++;
            fut__simw_yield(simw(c), t);
        } else {
            push_local(c, t); /* to the back: the others go first */
        }
    }
    if (simw(c))
        simw(c)->cur = -1; /* no worker's poll runs now */
}
