/* SPDX-License-Identifier: MIT */
/* The simulation's seeded faults, user invariants and the swarm
 * (fut/sim.h): fut_sim_set_faults turns kinds of the fault shim
 * (platform/simfault.h: the allocator hook, the syscall shim's file
 * calls) on for one simulation; fut_sim_set_invariant hooks a check the
 * scheduler runs after every step (sched_current.c, sim_trace.c);
 * fut_sim_swarm runs a scenario over many seeds, each seed choosing
 * which fault kinds are on (swarm testing: Groce et al., "Swarm
 * Testing", ISSTA 2012), and prints the replay of the first failure. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fut/sim.h"
#include "rt/rt_internal.h"
#include "rt/sim_trace.h"

#ifndef FUT_GIT_COMMIT
#define FUT_GIT_COMMIT "unknown"
#endif

#define DEFAULT_PPM 2000u

static struct fut__sim *sim_of(struct fut_runtime *rt)
{
    return rt ? rt->sched->sim : NULL;
}

int fut_sim_set_faults(struct fut_runtime *rt, unsigned kinds, uint32_t ppm)
{
    FUT_ARG_CHECK(rt, "'rt' is NULL");
    FUT_RT_LIVE(rt);
    struct fut__sim *s = sim_of(rt);
    if (!s || (kinds & ~FUT_SIM_FAULT_ALL) || ppm > 1000000 ||
        (ppm == 1000000 &&
         (kinds & (FUT_SIM_FAULT_EINTR | FUT_SIM_FAULT_EAGAIN))))
        return FUT_EINVAL;
    s->fault.kinds = kinds;
    s->fault.ppm = ppm;
    if (kinds && !s->fault_counted) { /* the fast paths look here now */
        s->fault_counted = 1;
        fut__simfault_count(1);
    }
    /* Inside a block_on (from a task): take effect at once. */
    if (fut__tls_sched == rt->sched)
        fut__tls_simfault = kinds ? &s->fault : NULL;
    return 0;
}

uint64_t fut_sim_faults_injected(struct fut_runtime *rt, unsigned kinds)
{
    struct fut__sim *s = sim_of(rt);
    if (!s)
        return 0;
    uint64_t n = 0;
    for (int i = 0; i < FUT__SIMFAULT_KINDS; i++)
        if (kinds & (1u << i))
            n += s->fault.injected[i];
    return n;
}

int fut_sim_set_invariant(struct fut_runtime *rt, fut_sim_invariant_fn fn,
                          void *ud)
{
    FUT_ARG_CHECK(rt, "'rt' is NULL");
    FUT_RT_LIVE(rt);
    struct fut__sim *s = sim_of(rt);
    if (!s)
        return FUT_EINVAL;
    s->invariant = fn;
    s->invariant_ud = ud;
    return 0;
}

uint64_t fut_sim_invariant_failed(struct fut_runtime *rt)
{
    struct fut__sim *s = sim_of(rt);
    return s ? s->invariant_step : 0;
}

/* ------------------------------------------------------------- the swarm */

/* The fault kinds seed 'seed' turns on out of 'allowed': each with
 * chance 1/2, from the seed alone (so the replay chooses the same). */
static unsigned choose_faults(uint64_t seed, unsigned allowed)
{
    return (unsigned)fut__simrng_mix(seed ^ 0x737761726d2d6661ull) & allowed;
}

/* One seed's run: the swarm's settings, then the scenario. */
struct swarm_run {
    const struct fut_sim_swarm *sw;
    fut_sim_fn fn;
    void *ud;
    unsigned faults;
    uint32_t ppm;
    uint64_t injected, invariant_step;
};

static int swarm_fn(struct fut_runtime *rt, void *ud)
{
    struct swarm_run *w = ud;
    w->injected = 0;
    w->invariant_step = 0;
    fut_sim_set_faults(rt, w->faults, w->ppm);
    fut_sim_set_invariant(rt, w->sw->invariant, w->sw->invariant_ud);
    int r = w->fn(rt, w->ud);
    w->injected = fut_sim_faults_injected(rt, FUT_SIM_FAULT_ALL);
    w->invariant_step = fut_sim_invariant_failed(rt);
    return r == 0 && w->invariant_step ? FUT_ECANCELED : r;
}

/* "alloc+eintr+fs+eagain+reset", or "none", into 'buf'. */
static const char *fault_names(unsigned kinds, char *buf, size_t len)
{
    static const char *const names[FUT__SIMFAULT_KINDS] = {
        "alloc", "eintr", "fs", "eagain", "reset"};
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < FUT__SIMFAULT_KINDS; i++)
        if (kinds & (1u << i))
            n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s",
                                  n ? "+" : "", names[i]);
    return n ? buf : "none";
}

/* This process's command line, its arguments joined by spaces (those
 * with a space or a quote single-quoted), from /proc/self/cmdline. */
static void print_cmdline(FILE *out)
{
    FILE *f = fopen("/proc/self/cmdline", "r");
    if (!f) {
        fputs("<the test command>", out);
        return;
    }
    int c, start = 1, quoted = 0;
    char arg[4096];
    size_t n = 0;
    while ((c = fgetc(f)) != EOF) {
        if (c != '\0') {
            if (n < sizeof arg - 1)
                arg[n++] = (char)c;
            continue;
        }
        arg[n] = '\0';
        quoted = strpbrk(arg, " '\"$") != NULL;
        fprintf(out, "%s%s%s%s", start ? "" : " ", quoted ? "'" : "", arg,
                quoted ? "'" : "");
        start = 0;
        n = 0;
    }
    fclose(f);
}

static void print_replay(const struct fut_sim_swarm *sw,
                         const struct fut_sim_swarm_result *res, uint32_t ppm)
{
    char names[48];
    fprintf(stderr,
            "fut-sim: swarm: seed=%" PRIu64 " failed (%d) after %" PRIu64
            " steps commit=%s faults=%s ppm=%" PRIu32 " injected=%" PRIu64,
            res->failed_seed, res->status, res->report.steps,
            sw->commit ? sw->commit : FUT_GIT_COMMIT,
            fault_names(res->faults, names, sizeof names), ppm,
            res->injected);
    if (res->invariant_step)
        fprintf(stderr, " invariant at step %" PRIu64, res->invariant_step);
    fprintf(stderr, "\nfut-sim: replay: FUT_SIM_SEED=%" PRIu64 " ",
            res->failed_seed);
    if (sw->replay)
        fputs(sw->replay, stderr);
    else
        print_cmdline(stderr);
    fputc('\n', stderr);
}

int fut_sim_swarm(const struct fut_sim_swarm *sw, uint64_t first_seed,
                  uint64_t n_seeds, fut_sim_fn fn, void *ud,
                  struct fut_sim_swarm_result *out)
{
    FUT_ARG_CHECK(sw, "'sw' is NULL");
    FUT_ARG_CHECK(fn, "'fn' is NULL");
    uint32_t ppm = sw->fault_ppm ? sw->fault_ppm : DEFAULT_PPM;
    if ((sw->faults & ~FUT_SIM_FAULT_ALL) || ppm >= 1000000)
        return FUT_EINVAL;
    struct fut_sim_swarm_result res;
    memset(&res, 0, sizeof res);
    /* FUT_SIM_SEED=N: the replay runs that seed only. */
    const char *e = getenv("FUT_SIM_SEED");
    if (e && *e) {
        char *end;
        unsigned long long v = strtoull(e, &end, 0);
        if (!*end) {
            first_seed = (uint64_t)v;
            n_seeds = 1;
        }
    }
    struct swarm_run w;
    memset(&w, 0, sizeof w);
    w.sw = sw;
    w.fn = fn;
    w.ud = ud;
    w.ppm = ppm;
    int r = 0;
    for (uint64_t i = 0; i < n_seeds; i++) {
        uint64_t seed = first_seed + i;
        w.faults = choose_faults(seed, sw->faults);
        struct fut_sim_report rep;
        r = fut_sim_run(sw->cfg, seed, swarm_fn, &w, &rep);
        res.seeds++;
        if (r == 0)
            continue;
        res.failed_seed = seed;
        res.status = r;
        res.faults = w.faults;
        res.injected = w.injected;
        res.invariant_step = w.invariant_step;
        res.report = rep;
        if (!sw->quiet)
            print_replay(sw, &res, ppm);
        break;
    }
    if (out)
        *out = res;
    return r;
}
