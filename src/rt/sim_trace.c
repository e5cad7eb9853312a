/* SPDX-License-Identifier: MIT */
/* The simulation's trace: every poll the simulation scheduler makes is a
 * step, hashed with the task's spawn sequence number, the poll's result
 * and the virtual time - nothing that depends on addresses, ASLR or the
 * real clock - so one seed gives one hash. FUT_SIM_CHECK's record and
 * compare live here too (madsim's MADSIM_TEST_CHECK_DETERMINISM). One
 * thread: the simulation's. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "rt/sim_trace.h"
#include "rt/sim_workers.h"

struct fut__sim *fut__sim_new(uint64_t seed)
{
    struct fut__sim *s = fut__alloc(sizeof *s);
    if (!s)
        return NULL;
    memset(s, 0, sizeof *s);
    s->seed = seed;
    fut__simrng_seed(&s->rng, seed);
    s->trace = fut__simrng_mix(seed ^ 0x73696d2d74726163ull);
    /* The faults' own stream: turning them on leaves the schedule's. */
    fut__simrng_seed(&s->fault.rng, seed ^ 0x73696d2d6661756cull);
    return s;
}

void fut__sim_free(struct fut__sim *s)
{
    if (!s)
        return;
    if (s->fault_counted)
        fut__simfault_count(-1);
    fut__simw_free(s->workers);
    if (s->rec)
        fut__free(s->rec, s->cap * sizeof *s->rec);
    fut__free(s, sizeof *s);
}

int64_t fut__sim_now(const struct fut__sim *s)
{
    return s->now ? s->now(s->now_ud) : 0;
}

static uint64_t hash_in(uint64_t h, uint64_t v)
{
    return fut__simrng_mix(h ^ fut__simrng_mix(v + 0x9E3779B97F4A7C15ull));
}

/* RECORD: appends 'st'; a record that cannot grow (no memory) stops
 * recording, and the compare run then reports the end of the record. */
static void record(struct fut__sim *s, const struct fut__sim_step *st)
{
    if (s->nrec == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        s->fault.hold++; /* the record is not the program's: no fault */
        struct fut__sim_step *n = fut__alloc(cap * sizeof *n);
        s->fault.hold--;
        if (!n) {
            s->mode = FUT__SIM_PLAIN;
            return;
        }
        if (s->rec) {
            memcpy(n, s->rec, s->nrec * sizeof *n);
            fut__free(s->rec, s->cap * sizeof *n);
        }
        s->rec = n;
        s->cap = cap;
    }
    s->rec[s->nrec++] = *st;
}

int fut__sim_step(struct fut__sim *s, uint64_t task, int result,
                  const char *file, int line)
{
    struct fut__sim_step st;
    st.task = task;
    st.result = result;
    st.vns = fut__sim_now(s);
    st.file = file;
    st.line = line;
    uint64_t h = hash_in(s->trace, task);
    h = hash_in(h, (uint64_t)result);
    st.hash = hash_in(h, (uint64_t)st.vns);
    s->trace = st.hash;
    s->steps++;
    if (s->mode == FUT__SIM_RECORD)
        record(s, &st);
    else if (s->mode == FUT__SIM_COMPARE && !s->leak_step &&
             (s->steps > s->nexpect ||
              s->expect[s->steps - 1].hash != st.hash)) {
        s->leak_step = s->steps;
        s->leak_got = st;
        return 1;
    }
    return 0;
}

int fut__sim_check(struct fut__sim *s)
{
    if (!s->invariant || s->invariant_step)
        return 0;
    s->fault.hold++; /* the check is not the program: no fault in it */
    int r = s->invariant(s->invariant_ud);
    s->fault.hold--;
    if (r == 0)
        return 0;
    s->invariant_step = s->steps;
    s->invariant_code = r;
    fprintf(stderr,
            "fut-sim: seed=%" PRIu64
            " invariant failed (%d) after step %" PRIu64
            " at virtual_ns=%" PRId64 "\n",
            s->seed, r, s->steps, fut__sim_now(s));
    return 1;
}

void fut__sim_deadlock(const struct fut__sim *s)
{
    fprintf(stderr,
            "fut-sim: seed=%" PRIu64 " deadlock after step %" PRIu64
            ": no task is ready and no timer is armed\n",
            s->seed, s->steps);
}

void fut__sim_print(const struct fut__sim *s)
{
    fprintf(stderr,
            "fut-sim seed=%" PRIu64 " steps=%" PRIu64 " virtual_ns=%" PRId64
            " trace=%016" PRIx64 "\n",
            s->seed, s->steps, fut__sim_now(s), s->trace);
}
