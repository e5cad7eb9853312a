/* SPDX-License-Identifier: MIT */
/* Shared helpers of fut's benchmark programs (bench/bench_*.c): timing,
 * CPU and memory meters, the RESULT line of ../shared/peers, runtime
 * flavors, and a table-driven main().
 *
 * Every program built from this header answers the same two commands,
 * which is how bench/run.sh finds out what a build supports:
 *
 *   <prog> list                     one line "<name> <flavor>" per
 *                                   benchmark and flavor this build can run
 *   <prog> bench <name> [<flavor>]  runs one benchmark (flavor default ct)
 *
 * flavor: ct = current_thread, mt1 / mt2 = multi_thread with 1 / 2
 * workers (config names as the Tokio peer prints them); mt2nospin =
 * mt2 with the park spin off (park_spin_ns = -1, config
 * multi_thread_w2_nospin: xthread_wake, to show what the spin is worth
 * against the futex floor, which does not spin). A flavor the
 * linked fut cannot create (fut_runtime_new says FUT_EINVAL) is reported
 * on stderr and the program exits 77 (skip), like liburing's tests.
 *
 * Benchmarks are programs, not tests: a failed check (a wrong sum, a
 * failed spawn) prints what went wrong and exits 1. Everything here is
 * static inline so each program is one .c file plus this header.
 */
#ifndef FUT_BENCH_COMMON_H
#define FUT_BENCH_COMMON_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "fut.h"

#define BENCH_EXIT_SKIP 77 /* the flavor or benchmark is not supported */

/* ------------------------------------------------------------ failures */

static inline void bench_fail(const char *fmt, ...)
    __attribute__((noreturn, format(printf, 1, 2)));
static inline void bench_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bench: check failed: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    fflush(stdout);
    exit(1);
}

/* Aborts the benchmark with a message unless 'cond' holds. Always on:
 * these are the peers' assert_eq!/unwrap() checks. */
#define BENCH_CHECK(cond, ...)                                               \
    do {                                                                     \
        if (__builtin_expect(!(cond), 0))                                    \
            bench_fail(__VA_ARGS__);                                         \
    } while (0)

/* std::hint::black_box: hides 'v' from the optimiser. */
static inline uint64_t bench_black_box(uint64_t v)
{
    __asm__ volatile("" : "+r"(v));
    return v;
}

/* -------------------------------------------------------------- meters */

static inline int64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* User + system CPU of the whole process (all threads), in ms. */
static inline double bench_cpu_ms(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3 +
           ru.ru_stime.tv_sec * 1e3 + ru.ru_stime.tv_usec / 1e3;
}

/* Peak RSS of the process so far (ru_maxrss), in KiB. */
static inline long bench_maxrss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* Current RSS in bytes: resident pages of /proc/self/statm x page size
 * (what the peers' idle_task benchmarks sample). */
static inline uint64_t bench_rss_bytes(void)
{
    FILE *fp = fopen("/proc/self/statm", "r");
    unsigned long size = 0, resident = 0;
    BENCH_CHECK(fp != NULL, "cannot open /proc/self/statm");
    int n = fscanf(fp, "%lu %lu", &size, &resident);
    fclose(fp);
    BENCH_CHECK(n == 2, "cannot parse /proc/self/statm");
    return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* The timed region of a benchmark: wall clock and process CPU. */
struct bench_meter {
    int64_t t0; /* bench_now_ns() at the start */
    double c0;  /* bench_cpu_ms() at the start */
};

static inline void bench_meter_start(struct bench_meter *m)
{
    m->t0 = bench_now_ns();
    m->c0 = bench_cpu_ms();
}

/* Prints the peers' RESULT line (../shared/peers/README.md, Conventions)
 * for the region started by 'm': value = wall ns / ops in 'unit',
 * cpu_ms over the region, maxrss_kb at the end, then 'extra' (may be
 * NULL or "") as further key=value fields. */
static inline void bench_report(const struct bench_meter *m,
                                const char *bench, const char *config,
                                uint64_t ops, const char *unit,
                                const char *extra)
{
    double wall_ns = (double)(bench_now_ns() - m->t0);
    double cpu = bench_cpu_ms() - m->c0;
    printf("RESULT bench=%s peer=fut config=%s value=%.1f unit=%s ops=%llu "
           "wall_ms=%.1f cpu_ms=%.1f cpu_ns_per_op=%.1f maxrss_kb=%ld%s%s\n",
           bench, config, wall_ns / (double)ops, unit,
           (unsigned long long)ops, wall_ns / 1e6, cpu,
           cpu * 1e6 / (double)ops, bench_maxrss_kb(),
           extra && extra[0] ? " " : "", extra ? extra : "");
    fflush(stdout);
}

/* ------------------------------------------------------------- flavors */

struct bench_flavor {
    const char *arg;      /* command-line name: ct, mt1, mt2 */
    const char *config;   /* RESULT config name, as the Tokio peer's */
    int rt_flavor;        /* enum fut_rt_flavor */
    int workers;          /* multi-thread worker count */
    int64_t park_spin_ns; /* fut_rt_config.park_spin_ns (0: default) */
};

/* The flavor called 'arg', or NULL. */
static inline const struct bench_flavor *bench_flavor_find(const char *arg)
{
    static const struct bench_flavor flavors[] = {
        {"ct", "current_thread", FUT_RT_CURRENT_THREAD, 0, 0},
        {"mt1", "multi_thread_w1", FUT_RT_MULTI_THREAD, 1, 0},
        {"mt2", "multi_thread_w2", FUT_RT_MULTI_THREAD, 2, 0},
        {"mt2nospin", "multi_thread_w2_nospin", FUT_RT_MULTI_THREAD, 2, -1},
    };
    for (size_t i = 0; i < sizeof flavors / sizeof flavors[0]; i++)
        if (strcmp(flavors[i].arg, arg) == 0)
            return &flavors[i];
    return NULL;
}

/* fut_runtime_new for 'fl'; returns its result. */
static inline int bench_runtime_try(const struct bench_flavor *fl,
                                    struct fut_runtime **rt)
{
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    cfg.flavor = fl->rt_flavor;
    cfg.workers = fl->workers;
    cfg.park_spin_ns = fl->park_spin_ns;
    return fut_runtime_new(&cfg, rt);
}

/* 1 when this build of fut can create a runtime of flavor 'fl'. */
static inline int bench_flavor_supported(const struct bench_flavor *fl)
{
    struct fut_runtime *rt = NULL;
    if (bench_runtime_try(fl, &rt) != 0)
        return 0;
    fut_runtime_free(rt);
    return 1;
}

/* Creates the runtime for 'fl'; exits 77 when this fut cannot make one
 * (FUT_EINVAL: the flavor does not exist yet), 1 on other errors. */
static inline struct fut_runtime *
bench_runtime_new(const struct bench_flavor *fl)
{
    struct fut_runtime *rt = NULL;
    int r = bench_runtime_try(fl, &rt);
    if (r == FUT_EINVAL || r == FUT_ENOSYS || r == FUT_EPERM) {
        /* FUT_ENOSYS / FUT_EPERM: the I/O backend FUT_IO_BACKEND asks
         * for cannot be had here (io_uring: the build or the kernel) */
        fprintf(stderr,
                "bench: unsupported: config %s (fut_runtime_new: %s): this "
                "build of fut has no such runtime%s%s\n",
                fl->config, fut_err_name(r),
                r == FUT_EINVAL ? "" : " or I/O backend: ",
                r == FUT_EINVAL ? "" : fut_io_backend_error());
        exit(BENCH_EXIT_SKIP);
    }
    BENCH_CHECK(r == 0, "fut_runtime_new(%s): %s", fl->config,
                fut_strerror(r));
    return rt;
}

/* Runs 'body' ('size' bytes, not yet polled) as a spawned task and blocks
 * until it completes: the peers' rt.block_on(spawn(body)), so the body
 * runs as a task (on a worker in multi_thread) and its spawns go where a
 * task's spawns go. */
/* BENCH_STATS=1 in the environment: every worker's counters on stderr
 * after the run (where the tasks ran, stole, parked), to tell a
 * scheduling effect from a code-path one when a figure moves. */
static inline void bench_print_stats(struct fut_runtime *rt)
{
    const char *e = getenv("BENCH_STATS");
    if (!e || !*e || *e == '0')
        return;
    int n = fut_runtime_workers(rt);
    for (int i = 0; i < n; i++) {
        struct fut_rt_stats s;
        if (fut_runtime_worker_stats(rt, i, &s) != 0)
            continue;
        fprintf(stderr,
                "stats worker=%d spawned=%llu polls=%llu remote=%llu "
                "parks=%llu unparks=%llu steals=%llu stolen=%llu "
                "lifo=%llu global=%llu budget=%llu\n",
                i, (unsigned long long)s.spawned, (unsigned long long)s.polls,
                (unsigned long long)s.remote_wakes,
                (unsigned long long)s.parks, (unsigned long long)s.unparks,
                (unsigned long long)s.steals, (unsigned long long)s.stolen,
                (unsigned long long)s.lifo_hits,
                (unsigned long long)s.global_polls,
                (unsigned long long)s.budget_yields);
    }
}

static inline void bench_run_task(struct fut_runtime *rt,
                                  struct fut_future *body, size_t size)
{
    struct fut_join j;
    int r = fut_spawn(rt, body, size, &j);
    BENCH_CHECK(r == 0, "spawn of the benchmark body: %s", fut_strerror(r));
    r = fut_block_on(rt, &j.base);
    BENCH_CHECK(r == 0, "fut_block_on: %s", fut_strerror(r));
    BENCH_CHECK(j.result == 0, "the benchmark body did not complete: %s",
                fut_strerror(j.result));
    fut_drop(&j.base);
    bench_print_stats(rt);
}

/* The RESULT config of an I/O benchmark on 'rt': the flavor's config
 * ('config'), with "_uring" appended when the runtime runs on io_uring -
 * the names of the server rows (bench/README.md): current_thread is
 * epoll, current_thread_uring io_uring. Written into 'buf' ('n' bytes). */
static inline const char *bench_io_config(struct fut_runtime *rt,
                                          const char *config, char *buf,
                                          size_t n)
{
    int uring = strcmp(fut_runtime_backend(rt), "io_uring") == 0;
    int k = snprintf(buf, n, "%s%s", config, uring ? "_uring" : "");
    BENCH_CHECK(k >= 0 && (size_t)k < n, "config name too long: %s", config);
    return buf;
}

/* bench_fanout: a future that spawns 'n' tasks - spawn(arg, i, &h[i])
 * makes the i-th and spawns it with join handle h[i] (failing the
 * benchmark itself if it cannot) - then awaits their handles in order;
 * each must complete (a cancelled one fails the benchmark, named by
 * 'what'). 'h' holds 'n' handles and outlives the future. */
struct bench_fanout {
    struct fut_future base;
    const char *what;
    void (*spawn)(void *arg, int i, struct fut_join *h);
    void *arg;
    struct fut_join *h;
    int n;
    int k; /* the next handle to await */
};

static inline int bench_fanout_poll(struct fut_future *f,
                                    struct fut_context *cx)
{
    struct bench_fanout *p = (struct bench_fanout *)f;
    FUT_BEGIN(f);
    for (int i = 0; i < p->n; i++)
        p->spawn(p->arg, i, &p->h[i]);
    for (p->k = 0; p->k < p->n; p->k++) {
        FUT_AWAIT(f, &p->h[p->k]);
        BENCH_CHECK(p->h[p->k].result == 0, "%s: a task was cancelled",
                    p->what);
    }
    FUT_END(f);
}

/* Drop: the awaited handle (fut_async_drop) and the ones not reached. */
static inline void bench_fanout_drop(struct fut_future *f)
{
    struct bench_fanout *p = (struct bench_fanout *)f;
    fut_async_drop(f);
    if (f->resume != 0 && f->resume != UINT32_MAX)
        for (int i = p->k + 1; i < p->n; i++)
            fut_drop(&p->h[i].base);
}

static inline void bench_fanout_init(struct bench_fanout *p, const char *what,
                                     void (*spawn)(void *, int,
                                                   struct fut_join *),
                                     void *arg, struct fut_join *h, int n)
{
    static const struct fut_future_vtable vt = {
        bench_fanout_poll, bench_fanout_drop, "bench_fanout", 0};
    fut_future_init(&p->base, &vt);
    p->what = what;
    p->spawn = spawn;
    p->arg = arg;
    p->h = h;
    p->n = n;
    p->k = 0;
}

/* ---------------------------------------------------------------- main */

/* One benchmark of a program's table. */
struct bench_entry {
    const char *name;    /* as in the RESULT line and on the command line */
    const char *flavors; /* the flavors it has: "ct mt2" */
    /* Runs the benchmark on 'rt' and prints its RESULT line; 'config' is
     * the RESULT config name. May exit() itself (idle_task_*). */
    void (*run)(struct fut_runtime *rt, const char *config);
};

/* 1 when the space-separated word list 'list' contains 'word'. */
static inline int bench_word_in(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; *p;) {
        while (*p == ' ')
            p++;
        size_t k = strcspn(p, " ");
        if (k == n && strncmp(p, word, n) == 0)
            return 1;
        p += k;
    }
    return 0;
}

static inline void bench_usage(const char *prog,
                               const struct bench_entry *tab, size_t n)
{
    fprintf(
        stderr,
        "usage: %s list | bench <name> [ct|mt1|mt2|mt2nospin]\nnames:", prog);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, " %s", tab[i].name);
    fprintf(stderr, "\n");
}

static inline void bench_list(const struct bench_entry *tab, size_t n)
{
    static const char *const all[] = {"ct", "mt1", "mt2", "mt2nospin"};
    enum { N_ALL = sizeof all / sizeof all[0] };
    int ok[N_ALL];
    for (int k = 0; k < N_ALL; k++)
        ok[k] = bench_flavor_supported(bench_flavor_find(all[k]));
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < N_ALL; k++)
            if (ok[k] && bench_word_in(tab[i].flavors, all[k]))
                printf("%s %s\n", tab[i].name, all[k]);
}

/* The whole main() of a benchmark program over its table. Exit codes: 0
 * ran, 1 a check failed, 2 usage, 77 unsupported flavor. */
static inline int bench_main(int argc, char **argv,
                             const struct bench_entry *tab, size_t n)
{
#ifdef BENCH_LIB_DEBUG
    fprintf(stderr, "bench: warning: fut was built with debug checks "
                    "(FUT_DEBUG): numbers are not representative\n");
#endif
    if (argc == 2 && strcmp(argv[1], "list") == 0) {
        bench_list(tab, n);
        return 0;
    }
    if (argc < 3 || argc > 4 || strcmp(argv[1], "bench") != 0) {
        bench_usage(argv[0], tab, n);
        return 2;
    }
    const struct bench_entry *e = NULL;
    for (size_t i = 0; i < n; i++)
        if (strcmp(tab[i].name, argv[2]) == 0)
            e = &tab[i];
    const struct bench_flavor *fl =
        bench_flavor_find(argc == 4 ? argv[3] : "ct");
    if (!e || !fl) {
        bench_usage(argv[0], tab, n);
        return 2;
    }
    if (!bench_word_in(e->flavors, fl->arg)) {
        fprintf(stderr, "bench: unsupported: %s has no %s variant\n", e->name,
                fl->config);
        return BENCH_EXIT_SKIP;
    }
    long live0 = fut_alloc_live();
    struct fut_runtime *rt = bench_runtime_new(fl);
    e->run(rt, fl->config);
    fut_runtime_free(rt);
    long live = fut_alloc_live();
    if (live != live0)
        fprintf(stderr,
                "bench: warning: %ld blocks still allocated "
                "through fut after shutdown\n",
                live - live0);
    return 0;
}

#endif /* FUT_BENCH_COMMON_H */
