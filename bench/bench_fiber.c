/* SPDX-License-Identifier: MIT */
/* The fiber benchmarks (issue 20): the shapes of three core benchmarks of
 * ../shared/peers, written with fibers (include/fut/fiber.h), on the
 * current-thread runtime. Targets in bench/targets.txt under "issue 20".
 *
 *   bench_fiber list
 *   bench_fiber bench <fiber_yield|fiber_spawn|idle_fiber> ct
 *
 *   fiber_yield  yield_many: 1 warm-up + 100 timed rounds; a round spawns
 *                200 fibers that each call fut_fiber_yield() 1,000 times
 *                and joins them in spawn order. ns per yield. Compared
 *                with fut's state-machine yield_many (bench_core) and Go's
 *                yield_many at GOMAXPROCS=1. FIBER_YIELD_ROUNDS=N in the
 *                environment times N rounds instead (callgrind: two runs
 *                of different N, the difference over the yields).
 *   fiber_spawn  spawn_many: 1 warm-up + timed rounds; a round spawns N
 *                fibers whose fn returns its index, keeps the handles,
 *                joins them in spawn order and checks the sum. ns per
 *                fiber (spawn + run + join). N is 10,000, not the peers'
 *                100,000, with 400 rounds (the peers' 4,000,000 fibers in
 *                all): each stack is two mappings (guard + usable), so
 *                100,000 stacks at once need vm.max_map_count above
 *                200,000 and the default 65,530 allows about 32,000
 *                (docs/fibers.md, "Limits").
 *   idle_fiber   idle_task_pending: RSS before, spawn N = 8,192 fibers
 *                that each count themselves and park in fut_read on their
 *                own socketpair (a 4 KiB buffer on the fiber's stack, as
 *                examples/echo_fiber has), wait until all parked, RSS
 *                after; exit without shutdown. Bytes per fiber. The pairs
 *                are made before the first sample (as the peer's
 *                idle_task_oneshot allocates its senders first), so the
 *                figure is the fiber, its task, its read future and its
 *                stack pages. stack_bytes = the resident bytes of the
 *                stacks (the 64 KiB mappings in /proc/self/smaps) per
 *                fiber; heap_bytes = the rest. N is bounded by file
 *                descriptors (two per fiber; RLIMIT_NOFILE is raised to
 *                its hard limit) and by the mapping count.
 *
 * Every body is a fiber run with fut_fiber_run, the counterpart of the
 * peers' block_on(spawn(body)). A failed check exits 1 (common.h).
 */
#include <sys/resource.h>
#include <sys/socket.h>

#include "common.h"

/* ---------------------------------------------------------- parameters */

#define YIELD_TASKS 200
#define YIELD_PER_TASK 1000
#define YIELD_ROUNDS 100
#define SPAWN_N 10000
#define SPAWN_ROUNDS 400
#define IDLE_N 8192
#define IDLE_BUF 4096

static void spawn_checked(fut_fiber_fn fn, void *arg, struct fut_join *j)
{
    int r = fut_fiber_spawn(NULL, fn, arg, NULL, j);
    BENCH_CHECK(r == 0, "fut_fiber_spawn: %s", fut_strerror(r));
}

static void join_checked(struct fut_join *j, intptr_t *value)
{
    int r = fut_fiber_join(j, value);
    BENCH_CHECK(r == 0, "fut_fiber_join: %s", fut_strerror(r));
}

static void run_body(struct fut_runtime *rt, fut_fiber_fn body,
                     const char *config)
{
    int r = fut_fiber_run(rt, body, (void *)config, NULL, NULL);
    BENCH_CHECK(r == 0, "fut_fiber_run: %s", fut_strerror(r));
    bench_print_stats(rt);
}

/* --------------------------------------------------------- fiber_yield */

static intptr_t yielder(void *arg)
{
    (void)arg;
    for (int i = 0; i < YIELD_PER_TASK; i++)
        BENCH_CHECK(fut_fiber_yield() == 0, "fiber_yield: cancelled");
    return 0;
}

static void yield_round(void)
{
    struct fut_join h[YIELD_TASKS];
    for (int i = 0; i < YIELD_TASKS; i++)
        spawn_checked(yielder, NULL, &h[i]);
    for (int i = 0; i < YIELD_TASKS; i++)
        join_checked(&h[i], NULL);
}

/* The timed rounds: YIELD_ROUNDS, or FIBER_YIELD_ROUNDS from the
 * environment (callgrind's two runs of different lengths). */
static int yield_rounds(void)
{
    const char *e = getenv("FIBER_YIELD_ROUNDS");
    int n = e ? atoi(e) : 0;
    return n > 0 ? n : YIELD_ROUNDS;
}

static intptr_t yield_body(void *config)
{
    int rounds = yield_rounds();
    yield_round(); /* warm-up: the stack pool fills */
    struct bench_meter m;
    bench_meter_start(&m);
    for (int r = 0; r < rounds; r++)
        yield_round();
    bench_report(&m, "fiber_yield", config,
                 (uint64_t)YIELD_TASKS * YIELD_PER_TASK * (uint64_t)rounds,
                 "ns/yield", "");
    return 0;
}

static void run_fiber_yield(struct fut_runtime *rt, const char *config)
{
    run_body(rt, yield_body, config);
}

/* --------------------------------------------------------- fiber_spawn */

static intptr_t identity(void *arg)
{
    return (intptr_t)arg;
}

static void spawn_round(struct fut_join *h)
{
    for (intptr_t i = 0; i < SPAWN_N; i++)
        spawn_checked(identity, (void *)i, &h[i]);
    uint64_t sum = 0;
    for (size_t i = 0; i < SPAWN_N; i++) {
        intptr_t v = -1;
        join_checked(&h[i], &v);
        sum += (uint64_t)v;
    }
    BENCH_CHECK(sum == (uint64_t)SPAWN_N * (SPAWN_N - 1) / 2,
                "fiber_spawn: sum %llu", (unsigned long long)sum);
}

static intptr_t spawn_body(void *config)
{
    /* The handles of a round, allocated once (the peers allocate the
     * Vec per round: a malloc + free of 320 KB, noise next to 10,000
     * spawns). */
    struct fut_join *h = malloc(SPAWN_N * sizeof *h);
    BENCH_CHECK(h != NULL, "out of memory");
    spawn_round(h); /* warm-up */
    struct bench_meter m;
    bench_meter_start(&m);
    for (int r = 0; r < SPAWN_ROUNDS; r++)
        spawn_round(h);
    bench_report(&m, "fiber_spawn", config, (uint64_t)SPAWN_N * SPAWN_ROUNDS,
                 "ns/fiber", "fibers_per_round=10000");
    free(h);
    return 0;
}

static void run_fiber_spawn(struct fut_runtime *rt, const char *config)
{
    run_body(rt, spawn_body, config);
}

/* ---------------------------------------------------------- idle_fiber */

struct idle_shared {
    struct fut_io *rd[IDLE_N]; /* the ends the fibers read */
    struct fut_io *wr[IDLE_N]; /* the other ends, never written */
    size_t parked;             /* fibers that reached their read */
};

static struct idle_shared idle;

static intptr_t idle_reader(void *arg)
{
    struct fut_io *io = arg;
    char buf[IDLE_BUF];
    idle.parked++; /* one thread: the current-thread runtime */
    ssize_t n = fut_read(io, buf, sizeof buf); /* parks forever */
    BENCH_CHECK(0, "idle_fiber: the read returned %zd", n);
    return 0;
}

/* The resident bytes of the stacks: the mappings of exactly the default
 * usable size (the guard page is a mapping of its own). */
static uint64_t stack_rss_bytes(void)
{
    FILE *fp = fopen("/proc/self/smaps", "r");
    BENCH_CHECK(fp != NULL, "cannot open /proc/self/smaps");
    char line[256];
    int in_stack = 0;
    uint64_t total = 0;
    while (fgets(line, sizeof line, fp)) {
        unsigned long lo, hi, kb;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) /* a mapping's line */
            in_stack = hi - lo == 64 * 1024;
        else if (in_stack && sscanf(line, "Rss: %lu kB", &kb) == 1)
            total += (uint64_t)kb * 1024;
    }
    fclose(fp);
    return total;
}

static void raise_fd_limit(void)
{
    struct rlimit rl;
    BENCH_CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0, "getrlimit");
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    BENCH_CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0, "getrlimit");
    BENCH_CHECK(rl.rlim_cur >= 2 * IDLE_N + 64,
                "idle_fiber: needs %d file descriptors (ulimit -n is %llu)",
                2 * IDLE_N + 64, (unsigned long long)rl.rlim_cur);
}

static intptr_t idle_body(void *config)
{
    raise_fd_limit();
    for (size_t i = 0; i < IDLE_N; i++) {
        int r = fut_unix_pair(SOCK_STREAM, &idle.rd[i], &idle.wr[i]);
        BENCH_CHECK(r == 0, "fut_unix_pair: %s", fut_strerror(r));
    }
    fut_fiber_yield(); /* the pool and the driver settle */
    uint64_t rss0 = bench_rss_bytes(), st0 = stack_rss_bytes();
    int64_t t0 = bench_now_ns();
    for (size_t i = 0; i < IDLE_N; i++)
        spawn_checked(idle_reader, idle.rd[i], NULL);
    while (idle.parked < IDLE_N)
        fut_fiber_yield(); /* each fiber runs to its read */
    uint64_t rss1 = bench_rss_bytes(), st1 = stack_rss_bytes();
    double wall = (double)(bench_now_ns() - t0);
    double per = ((double)rss1 - (double)rss0) / IDLE_N;
    double stack = ((double)st1 - (double)st0) / IDLE_N;
    printf("RESULT bench=idle_fiber peer=fut config=%s value=%.1f "
           "unit=bytes/fiber ops=%d wall_ms=%.1f spawn_ns_per_fiber=%.1f "
           "maxrss_kb=%ld rss_before_kb=%llu rss_after_kb=%llu "
           "stack_bytes=%.1f heap_bytes=%.1f\n",
           (const char *)config, per, IDLE_N, wall / 1e6, wall / IDLE_N,
           bench_maxrss_kb(), (unsigned long long)(rss0 / 1024),
           (unsigned long long)(rss1 / 1024), stack, per - stack);
    fflush(stdout);
    exit(0); /* no shutdown of the parked fibers, as the peer */
}

static void run_idle_fiber(struct fut_runtime *rt, const char *config)
{
    run_body(rt, idle_body, config);
}

/* ---------------------------------------------------------------- main */

static const struct bench_entry benches[] = {
    {"fiber_yield", "ct", run_fiber_yield},
    {"fiber_spawn", "ct", run_fiber_spawn},
    {"idle_fiber", "ct", run_idle_fiber},
};

int main(int argc, char **argv)
{
    return bench_main(argc, argv, benches,
                      sizeof benches / sizeof benches[0]);
}
