/* SPDX-License-Identifier: MIT */
/* The simulation's public calls (fut/sim.h): the seed and the switches
 * from the environment (FUT_SIM_SEED, FUT_SIM_VERBOSE, FUT_SIM_CHECK),
 * one run or FUT_SIM_CHECK's two, and their reports. The runtime itself
 * is runtime.c's (fut__sim_runtime_new): the current-thread scheduler in
 * simulation mode (src/rt/sched_current.c) over the simulation's driver
 * (src/io/driver.c); the trace is src/rt/sim_trace.c's. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fut/sim.h"
#include "rt/rt_internal.h"
#include "rt/sim_trace.h"
#include "rt/sim_workers.h"

/* 1 when the environment variable 'name' is set to something other
 * than "" or "0". */
static int env_on(const char *name)
{
    const char *e = getenv(name);
    return e && *e && strcmp(e, "0") != 0;
}

/* FUT_SIM_SEED's seed, or 'seed' when it is unset or not a number. */
static uint64_t env_seed(uint64_t seed)
{
    const char *e = getenv("FUT_SIM_SEED");
    if (!e || !*e)
        return seed;
    char *end;
    unsigned long long v = strtoull(e, &end, 0);
    return *end ? seed : (uint64_t)v;
}

int fut_sim_new(const struct fut_rt_config *cfg, uint64_t seed,
                struct fut_runtime **out)
{
    FUT_ARG_CHECK(out, "'out' is NULL");
    *out = NULL;
    if (cfg && (cfg->workers < 0 || cfg->workers > 256))
        return FUT_EINVAL; /* emulated workers: as fut_runtime_new's */
    int r = fut__sim_runtime_new(cfg, env_seed(seed), out);
    if (r == 0)
        (*out)->sched->sim->verbose = env_on("FUT_SIM_VERBOSE");
    /* cfg->workers > 1: N workers emulated (src/rt/sim_workers.c). */
    if (r == 0 && cfg && cfg->workers > 1) {
        struct fut__simw *w = fut__simw_new(cfg->workers);
        if (!w) {
            fut_runtime_free(*out);
            *out = NULL;
            return FUT_ENOMEM;
        }
        (*out)->sched->sim->workers = w;
    }
    return r;
}

int fut_sim_report(struct fut_runtime *rt, struct fut_sim_report *out)
{
    FUT_ARG_CHECK(rt, "'rt' is NULL");
    FUT_RT_LIVE(rt);
    FUT_ARG_CHECK(out, "'out' is NULL");
    memset(out, 0, sizeof *out);
    const struct fut__sim *s = rt->sched->sim;
    if (!s)
        return FUT_EINVAL;
    out->seed = s->seed;
    out->steps = s->steps;
    out->virtual_ns = fut__sim_now(s);
    out->trace = s->trace;
    out->leak_step = s->leak_step;
    return 0;
}

uint64_t fut_sim_random(void)
{
    return fut__tls_simrng ? fut__simrng_next(fut__tls_simrng) : 0;
}

/* ------------------------------------------------------------ the runs */

/* One run, and what FUT_SIM_CHECK keeps of it. */
struct run {
    int mode; /* FUT__SIM_PLAIN / RECORD / COMPARE */
    const struct fut__sim_step *expect; /* COMPARE: the first run's */
    size_t nexpect;
    struct fut__sim_step *rec; /* RECORD: taken from the runtime */
    size_t nrec, cap;
    int recorded;              /* RECORD: the record is complete */
    struct fut__sim_step got;  /* COMPARE: the step that differed */
    struct fut_sim_report rep; /* at its end */
    int made;                  /* the runtime was made (else: its error) */
};

static int run_once(const struct fut_rt_config *cfg, uint64_t seed,
                    fut_sim_fn fn, void *ud, struct run *run)
{
    struct fut_runtime *rt;
    int r = fut_sim_new(cfg, seed, &rt);
    run->made = r == 0;
    if (r)
        return r;
    struct fut__sim *s = rt->sched->sim;
    s->mode = run->mode;
    s->expect = run->expect;
    s->nexpect = run->nexpect;
    r = fn(rt, ud);
    fut_sim_report(rt, &run->rep);
    if (run->mode == FUT__SIM_RECORD) {
        run->recorded = s->mode == FUT__SIM_RECORD; /* memory lasted */
        run->rec = s->rec;
        run->nrec = s->nrec;
        run->cap = s->cap;
        s->rec = NULL; /* ours now */
    }
    run->got = s->leak_got;
    fut_runtime_free(rt);
    return r;
}

static void print_step(const char *which, const struct fut__sim_step *st)
{
    if (!st) {
        fprintf(stderr, "  %s run: had ended\n", which);
        return;
    }
    const char *res[] = {"pending", "requeued", "done"};
    fprintf(stderr,
            "  %s run: task #%" PRIu64
            " (%s:%d) polled %s at virtual_ns=%" PRId64 "\n",
            which, st->task, st->file ? st->file : "?", st->line,
            res[st->result], st->vns);
}

/* FUT_SIM_CHECK's verdict on the second run 'b' against the first 'a':
 * 0, or FUT_ECANCELED with the difference printed. */
static int compare(const struct run *a, struct run *b)
{
    uint64_t k = b->rep.leak_step;
    const struct fut__sim_step *got = &b->got;
    if (!k && b->rep.steps < a->nrec) { /* the second ended early */
        k = b->rep.steps + 1;
        got = NULL;
    }
    if (!k)
        return 0;
    b->rep.leak_step = k;
    fprintf(stderr,
            "fut-sim: determinism leak: seed=%" PRIu64
            " differs at step %" PRIu64 " (FUT_SIM_CHECK)\n",
            b->rep.seed, k);
    print_step("first", k <= a->nrec ? &a->rec[k - 1] : NULL);
    print_step("second", got);
    return FUT_ECANCELED;
}

int fut_sim_run(const struct fut_rt_config *cfg, uint64_t seed, fut_sim_fn fn,
                void *ud, struct fut_sim_report *out)
{
    FUT_ARG_CHECK(fn, "'fn' is NULL");
    int check = env_on("FUT_SIM_CHECK");
    struct run a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    a.mode = check ? FUT__SIM_RECORD : FUT__SIM_PLAIN;
    int r = run_once(cfg, seed, fn, ud, &a);
    struct run *last = &a;
    if (a.made && r == 0 && check && a.recorded) {
        b.mode = FUT__SIM_COMPARE;
        b.expect = a.rec;
        b.nexpect = a.nrec;
        int r2 = run_once(cfg, seed, fn, ud, &b);
        last = &b;
        if (b.made) {
            int leak = compare(&a, &b);
            r = leak ? leak : r2;
        } else {
            r = r2;
        }
    }
    if (a.rec)
        fut__free(a.rec, a.cap * sizeof *a.rec);
    if (out)
        *out = last->rep;
    if (r != 0 && last->made && !last->rep.leak_step)
        fprintf(stderr,
                "fut-sim: seed=%" PRIu64 " failed (%d); rerun with "
                "FUT_SIM_SEED=%" PRIu64 "\n",
                last->rep.seed, r, last->rep.seed);
    return r;
}
