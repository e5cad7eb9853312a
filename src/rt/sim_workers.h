/* SPDX-License-Identifier: MIT */
/* N workers emulated on the simulation's one thread (src/rt/sim_workers.c):
 * the multi-thread scheduler's queue shapes - a LIFO slot and a local
 * queue per worker, a global injection queue, stealing half a peer's
 * queue - with every choice (which worker goes next, when it looks at the
 * injection queue, which peer it steals from) taken from the simulation's
 * seeded generator. One thread: the simulation's. */
#ifndef FUT_RT_SIM_WORKERS_H
#define FUT_RT_SIM_WORKERS_H

#include <stddef.h>

#include "platform/simrng.h"

struct fut_task;

/* A queue linked through fut_task.next. */
struct fut__simq {
    struct fut_task *head, *tail;
    size_t len;
};

struct fut__simw_worker {
    struct fut__simq q;    /* the local queue (unbounded) */
    struct fut_task *lifo; /* the LIFO slot, or NULL */
    int lifo_run;          /* LIFO polls in a row (at most LIFO_MAX) */
};

struct fut__simw {
    int n;   /* workers (>= 2) */
    int cur; /* the worker whose poll runs now; -1: none */
    struct fut__simq inject;
    uint64_t steals, lifo_polls; /* statistics */
    struct fut__simw_worker w[]; /* n of them */
};

/* A new emulation of 'n' (2..256) workers (fut__alloc'd), or NULL. */
struct fut__simw *fut__simw_new(int n);
void fut__simw_free(struct fut__simw *w);
/* A task scheduled (woken or spawned): into the running worker's LIFO
 * slot (its old occupant to the back of that worker's queue), or the
 * injection queue when no worker's poll runs (the fut_block_on future,
 * another thread's spawn taken off the remote queue). */
void fut__simw_schedule(struct fut__simw *w, struct fut_task *t);
/* A task that yielded (requeued by its poll): the back of the running
 * worker's queue (the injection queue when none runs). */
void fut__simw_yield(struct fut__simw *w, struct fut_task *t);
/* The next task to poll, its worker made the running one ('cur'), or
 * NULL when every queue is empty. The worker and what it looks at are
 * drawn from 'rng'. */
struct fut_task *fut__simw_next(struct fut__simw *w, struct fut__simrng *rng);
/* Any queued task (shutdown: the order does not matter), or NULL. */
struct fut_task *fut__simw_take_any(struct fut__simw *w);

#endif /* FUT_RT_SIM_WORKERS_H */
