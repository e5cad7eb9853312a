/* SPDX-License-Identifier: MIT */
/* Helpers of the tests that run real applications under simulation
 * (test/sim_chat.c, test/sim_redis.c): their clients are fibers, and a
 * fiber cannot be spawned on a simulated host (fut_sim_spawn_on takes a
 * future); so a client's connect runs as a small task on its host (a
 * socket belongs to the host of the task that creates it: fut/sim.h) and
 * the fiber awaits it. The connection it returns works from any task. */
#ifndef FUT_TEST_SIM_APPS_H
#define FUT_TEST_SIM_APPS_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fut.h"
#include "test.h"

/* Seeds to run: 'plain', or 'san' in an ASan or TSan build (whose
 * fibers and checks make a seed several times slower). */
#if defined(FUT_TEST_TSAN) || defined(__SANITIZE_ADDRESS__)
#define SIM_ITERS(plain, san) (san)
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SIM_ITERS(plain, san) (san)
#endif
#endif
#ifndef SIM_ITERS
#define SIM_ITERS(plain, san) (plain)
#endif

struct sim_dial {
    struct fut_future base;
    const struct sockaddr_storage *at;
    socklen_t atlen;
    int64_t deadline;    /* absolute virtual ns, -1: none */
    struct fut_io **out; /* the connection, or NULL */
    int *result;         /* 0, or the connect's error */
    struct fut_connect c;
};

static int sim_dial_poll(struct fut_future *f, struct fut_context *cx)
{
    struct sim_dial *d = (struct sim_dial *)f;
    FUT_BEGIN(f);
    /* Inside the poll: the socket is made on this task's host. */
    fut_tcp_connect_init(&d->c, (const struct sockaddr *)d->at, d->atlen,
                         d->deadline);
    FUT_AWAIT(f, &d->c);
    *d->result = d->c.result;
    *d->out = d->c.result == 0 ? d->c.conn : NULL;
    FUT_END(f);
}
FUT_ASYNC_VTABLE(sim_dial_vt, "sim_dial", sim_dial_poll, NULL);

/* On a fiber: connects from host 'h' to 'at' (deadline 'timeout_ns' from
 * now, < 0: none). 0 with '*io' set, or the connect's error
 * (FUT_ETIMEDOUT, -ECONNREFUSED, ...) or FUT_ECANCELED. */
static inline int sim_dial(struct fut_sim_host *h,
                           const struct sockaddr_storage *at, socklen_t atlen,
                           int64_t timeout_ns, struct fut_io **io)
{
    int result = FUT_ECANCELED;
    struct sim_dial d;
    memset(&d, 0, sizeof d);
    fut_future_init(&d.base, &sim_dial_vt);
    d.at = at;
    d.atlen = atlen;
    d.deadline = timeout_ns < 0 ? -1 : fut_time_now() + timeout_ns;
    d.out = io;
    d.result = &result;
    *io = NULL;
    struct fut_join j;
    int r = fut_sim_spawn_on(h, &d, sizeof d, &j);
    if (r != 0)
        return r;
    r = fut_await(&j); /* cancelled: the handle's drop aborts the dial */
    if (r == 0 && j.result != 0)
        r = j.result;
    return r != 0 ? r : result;
}

/* A chaos fiber (sim_chaos): until '*done', waits a seeded gap in
 * [gap_min, gap_max] ms, cuts a seeded host of 'hosts' off 'srv' for a
 * seeded [cut_min, cut_max] ms, heals it. */
struct sim_chaos {
    struct fut_sim_host *srv;
    struct fut_sim_host **hosts;
    int nhosts;
    int gap_min, gap_max, cut_min, cut_max; /* ms */
    const int *done;
    int partitions; /* made so far */
};

static inline intptr_t sim_chaos(void *arg)
{
    struct sim_chaos *x = arg;
    const int64_t ms = 1000000;
    while (!*x->done) {
        fut_sleep(ms * (x->gap_min +
                        (int64_t)(fut_sim_random() %
                                  (uint64_t)(x->gap_max - x->gap_min + 1))));
        if (*x->done)
            break;
        struct fut_sim_host *h =
            x->hosts[fut_sim_random() % (uint64_t)x->nhosts];
        fut_sim_partition(x->srv, h);
        x->partitions++;
        fut_sleep(ms * (x->cut_min +
                        (int64_t)(fut_sim_random() %
                                  (uint64_t)(x->cut_max - x->cut_min + 1))));
        fut_sim_heal(x->srv, h);
    }
    return 0;
}

/* Determinism of a scenario: 'fn' on 'seed' gave '*r0' (the caller's
 * first run, checked by it); 'reruns' - 1 more runs on 'seed' must give
 * the same trace and step count, and each of 'others' seeds from
 * 'other0' a trace of its own. Unsets FUT_SIM_SEED (it would pin every
 * run to one seed). */
static inline void sim_check_traces(fut_sim_fn fn, void *ud, uint64_t seed,
                                    const struct fut_sim_report *r0,
                                    int reruns, uint64_t other0, int others)
{
    struct fut_sim_report rep;
    for (int i = 1; i < reruns; i++) {
        ASSERT_EQ(fut_sim_run(NULL, seed, fn, ud, &rep), 0);
        ck_assert_msg(rep.trace == r0->trace && rep.steps == r0->steps,
                      "run %d: trace %016llx vs %016llx", i,
                      (unsigned long long)rep.trace,
                      (unsigned long long)r0->trace);
    }
    int differ = 0;
    for (uint64_t s = other0; s < other0 + (uint64_t)others; s++) {
        ASSERT_EQ(fut_sim_run(NULL, s, fn, ud, &rep), 0);
        differ += rep.trace != r0->trace;
    }
    ASSERT_EQ(differ, others);
}

/* ------------------------------------------- the same trace in every build
 *
 * issue 34: one seed gives the same trace in builds with and without
 * sanitizers. scripts/test-all.sh builds plain, ASan, TSan and
 * TSan-release one after the other under one directory; each build's run
 * of this check writes its traces to FUT_SIM_TRACE_DIR/<area>-<build>.txt
 * (set by the area's .cmake: build-test/sim-traces, FUT_SIM_BUILD the
 * build directory's name) and compares them with every other build's
 * file made from the same sources: a seed whose trace, step count or
 * virtual time differs fails here, naming both builds. "The same
 * sources": the file's first line is a stamp of the source tree (git's
 * HEAD and the diff of the working tree, hashed); files of other stamps
 * (an older build) are not compared. Without git (a tarball) or the
 * variables, the traces are only checked within this build. */

#ifdef FUT_SOURCE_DIR
#define SIM_XB_SEEDS 8

static inline int sim_xb_stamp(char *out, size_t len)
{
    out[0] = 0;
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "cd '%s' 2>/dev/null && { git rev-parse HEAD && git diff HEAD "
             "-- src include examples apps test; } 2>/dev/null | git "
             "hash-object --stdin 2>/dev/null",
             FUT_SOURCE_DIR);
    FILE *p = popen(cmd, "r");
    if (!p)
        return 0;
    if (!fgets(out, (int)len, p))
        out[0] = 0;
    pclose(p);
    out[strcspn(out, "\n")] = 0;
    return strlen(out) == 40;
}

struct sim_xb_line {
    uint64_t seed, trace, steps;
    long long vns;
};

/* Reads a traces file: its stamp and up to SIM_XB_SEEDS lines; -1 when
 * it cannot be read. */
static inline int sim_xb_read(const char *path, char *stamp, size_t len,
                              struct sim_xb_line *l)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int n = 0;
    if (!fgets(stamp, (int)len, f)) {
        fclose(f);
        return -1;
    }
    stamp[strcspn(stamp, "\n")] = 0;
    unsigned long long s, t, st;
    long long v;
    while (n < SIM_XB_SEEDS &&
           fscanf(f, "%llu %llx %llu %lld", &s, &t, &st, &v) == 4)
        l[n++] = (struct sim_xb_line){s, t, st, v};
    fclose(f);
    return n;
}

/* Runs 'fn' on seeds seed0 .. seed0 + SIM_XB_SEEDS - 1 with 'cfg', writes
 * the traces as <area>-<build>.txt and compares them with the other
 * builds' files of the same stamp (rules above). */
static inline void sim_cross_build(const char *area,
                                   const struct fut_rt_config *cfg,
                                   fut_sim_fn fn, void *ud, uint64_t seed0)
{
    struct sim_xb_line mine[SIM_XB_SEEDS];
    for (int i = 0; i < SIM_XB_SEEDS; i++) {
        struct fut_sim_report r;
        ASSERT_EQ(fut_sim_run(cfg, seed0 + (uint64_t)i, fn, ud, &r), 0);
        mine[i] = (struct sim_xb_line){r.seed, r.trace, r.steps,
                                       (long long)r.virtual_ns};
    }
    const char *dir = getenv("FUT_SIM_TRACE_DIR");
    const char *build = getenv("FUT_SIM_BUILD");
    char stamp[64];
    if (!dir || !build || !sim_xb_stamp(stamp, sizeof stamp)) {
        fprintf(stderr,
                "%s: no trace directory, build name or git stamp: "
                "traces not compared across builds\n",
                area);
        return;
    }
    mkdir(dir, 0755);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-%s.txt", dir, area, build);
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    fprintf(f, "%s\n", stamp);
    for (int i = 0; i < SIM_XB_SEEDS; i++)
        fprintf(f, "%llu %016llx %llu %lld\n",
                (unsigned long long)mine[i].seed,
                (unsigned long long)mine[i].trace,
                (unsigned long long)mine[i].steps, mine[i].vns);
    ck_assert_int_eq(fclose(f), 0);
    DIR *d = opendir(dir);
    ck_assert(d != NULL);
    size_t alen = strlen(area);
    int compared = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, area, alen) || e->d_name[alen] != '-')
            continue;
        char other[4096], ostamp[64];
        snprintf(other, sizeof other, "%s/%s", dir, e->d_name);
        if (!strcmp(other, path))
            continue;
        struct sim_xb_line theirs[SIM_XB_SEEDS];
        int n = sim_xb_read(other, ostamp, sizeof ostamp, theirs);
        if (n < 0 || strcmp(ostamp, stamp))
            continue; /* another tree's build */
        ck_assert_msg(n == SIM_XB_SEEDS, "%s: %d seeds", other, n);
        for (int i = 0; i < n; i++)
            ck_assert_msg(
                theirs[i].seed == mine[i].seed &&
                    theirs[i].trace == mine[i].trace &&
                    theirs[i].steps == mine[i].steps &&
                    theirs[i].vns == mine[i].vns,
                "seed %llu: trace %016llx (%llu steps, %lld ns) in build "
                "'%s', %016llx (%llu steps, %lld ns) in %s",
                (unsigned long long)mine[i].seed,
                (unsigned long long)mine[i].trace,
                (unsigned long long)mine[i].steps, mine[i].vns, build,
                (unsigned long long)theirs[i].trace,
                (unsigned long long)theirs[i].steps, theirs[i].vns,
                e->d_name);
        compared++;
    }
    closedir(d);
    fprintf(stderr, "%s: %d seeds, traces compared with %d other builds\n",
            area, SIM_XB_SEEDS, compared);
}

#endif /* FUT_SOURCE_DIR */

#endif
