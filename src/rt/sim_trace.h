/* SPDX-License-Identifier: MIT */
/* The simulation's state as its scheduler sees it (src/rt/sim_trace.c):
 * the seeded generator, the step count, the trace hash, and the records
 * of FUT_SIM_CHECK's two runs. One thread only: the thread running the
 * simulation runtime (it has no other). */
#ifndef FUT_RT_SIM_TRACE_H
#define FUT_RT_SIM_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "platform/simfault.h"
#include "platform/simrng.h"

struct fut__simw;

/* One step of the trace: a poll. 'task' is the task's spawn sequence
 * number (1, 2, ...; 0 = the block_on future), never an address. */
struct fut__sim_step {
    uint64_t hash; /* the trace hash after this step */
    uint64_t task;
    int64_t vns; /* virtual time at the poll (ns since the start) */
    int result;  /* FUT__SIM_PENDING / _REQUEUED / _DONE */
    int line;    /* spawn site (reports only, never hashed) */
    const char *file;
};

enum { FUT__SIM_PENDING = 0, FUT__SIM_REQUEUED = 1, FUT__SIM_DONE = 2 };

/* FUT_SIM_CHECK's modes: the first run records every step, the second
 * compares against the record and stops at the first difference. */
enum { FUT__SIM_PLAIN = 0, FUT__SIM_RECORD = 1, FUT__SIM_COMPARE = 2 };

/* The tag a simulation task carries at the end of its allocation: its
 * identity in the trace. */
struct fut__sim_tag {
    uint64_t id;
    const char *file;
    int line;
};

struct fut__sim {
    struct fut__simrng rng;
    uint64_t seed;
    uint64_t steps;
    uint64_t trace;
    uint64_t next_id; /* the last spawn sequence number given */
    int verbose;      /* FUT_SIM_VERBOSE: the line at the end */
    /* The virtual clock (ns since the start), from the driver. */
    int64_t (*now)(void *ud);
    void *now_ud;
    /* FUT_SIM_CHECK */
    int mode;
    struct fut__sim_step *rec; /* RECORD: every step (fut__alloc'd) */
    size_t nrec, cap;
    const struct fut__sim_step *expect; /* COMPARE: the first run's */
    size_t nexpect;
    uint64_t leak_step; /* COMPARE: first step that differs (1-based) */
    struct fut__sim_step leak_got; /* ... and what this run did there */
    /* Faults and invariants (fut_sim_set_faults, fut_sim_set_invariant,
     * fut_sim_swarm: src/rt/sim_swarm.c). */
    struct fut__simfault fault; /* kinds 0: none; its rng seeded here */
    int fault_counted;          /* counted in fut__simfault_users */
    int (*invariant)(void *ud); /* after every step; 0: it holds */
    void *invariant_ud;
    uint64_t invariant_step; /* the first step it failed at; 0: none */
    int invariant_code;      /* what it returned there */
    struct fut__sim_step invariant_at; /* that step */
    struct fut__simw *workers; /* N emulated workers, or NULL (one queue) */
};

/* A new simulation state for 'seed' (fut__alloc'd), or NULL. */
struct fut__sim *fut__sim_new(uint64_t seed);
/* Frees 's' and its record. */
void fut__sim_free(struct fut__sim *s);
/* Counts one poll into the trace. Returns 1 when the run must stop (the
 * compare run differs from the record here), else 0. */
int fut__sim_step(struct fut__sim *s, uint64_t task, int result,
                  const char *file, int line);
/* The virtual time now (0 when the runtime has no clock). */
int64_t fut__sim_now(const struct fut__sim *s);
/* Reports a deadlock (every task waits, nothing could wake one) on
 * stderr, with the seed and the step. */
void fut__sim_deadlock(const struct fut__sim *s);
/* Runs the invariant (if any) after the step just counted. Returns 1
 * when it failed (the run must stop; printed on stderr), else 0. */
int fut__sim_check(struct fut__sim *s);
/* FUT_SIM_VERBOSE's line, on stderr. */
void fut__sim_print(const struct fut__sim *s);

#endif /* FUT_RT_SIM_TRACE_H */
