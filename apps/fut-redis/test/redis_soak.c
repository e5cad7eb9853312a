/* SPDX-License-Identifier: MIT */
/* fut-redis's memory under repeated load (issue 31: memory bounded on
 * every backend and flavor):
 *   soak   six rounds of redis-benchmark (--threads 2 -c 200 -P 16, set,
 *          get, incr, lpush, rpop); after each, once the server has been
 *          idle for SETTLE_MS, INFO's fut_alloc_live (the library's live
 *          allocations) and the server's VmRSS. From round 3 on neither
 *          may exceed its round-2 value by more than 10% (round 1 warms
 *          the heap up, round 2 is the reference), or by a floor where
 *          that is more: LIVE_FLOOR blocks (the INFO connection's own
 *          state is counted, from a pool or not: +-3 seen) and RSS_FLOOR
 *          (io_uring's 16 KiB fallback recv buffers after -ENOBUFS make a
 *          round's peak, and so the high-water mark, step by up to 0.8 MB
 *          now and then: seen once in 20 rounds). And idle, the library
 *          holds at most IDLE_SLACK blocks more than before the first
 *          round (its pools shrink when unused: on io_uring the rings'
 *          op, buffer and chunk pools).
 * Registered as an I/O area: .soak on epoll, .soak.uring on io_uring, and
 * .mt / .mt.uring with --workers 2 (the case that grew: ops a worker
 * issued on another worker's fds ended on the fd ring's free lists).
 * The server runs with glibc's malloc tuned (MALLOC_TUNED): one arena, no
 * trim, a fixed mmap threshold, so its RSS is the heap's high-water mark,
 * which memory that piles up raises round after round and reuse does not
 * (untuned, per-thread arenas and trims swing it by 10-25% between
 * identical rounds, on epoll too). Under ASan and TSan only
 * fut_alloc_live is judged (their allocators' quarantine and shadow move
 * the RSS), with a fifth of the requests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "test.h"

#define ROUNDS 6
#define SETTLE_MS 1000 /* > 2 x the io_uring pools' trim (2 x 250 ms) */
#define IDLE_SLACK 64
#define LIVE_FLOOR 16  /* blocks */
#define RSS_FLOOR 1024 /* kB */
#define MALLOC_TUNED                                                         \
    "glibc.malloc.arena_max=1:glibc.malloc.trim_threshold=1073741824:"       \
    "glibc.malloc.mmap_threshold=4194304"

#if defined(__has_feature) /* clang 14 defines no __SANITIZE_ADDRESS__ */
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FUT_SOAK_SANITIZED
#endif
#endif
#if defined(FUT_TEST_TSAN) || defined(__SANITIZE_ADDRESS__) ||               \
    defined(FUT_SOAK_SANITIZED)
#define SANITIZED 1
#define REQUESTS 10000 /* per test of a round: the server is 5-20x slower */
#else
#define SANITIZED 0
#define REQUESTS 50000
#endif

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* The VmRSS of process 'pid', in kB. */
static long rss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "no %s", path);
    long kb = -1;
    while (kb < 0 && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6))
            kb = atol(line + 6);
    fclose(f);
    ck_assert_msg(kb > 0, "no VmRSS in %s", path);
    return kb;
}

/* One round of load; fails the case unless redis-benchmark exits 0. */
static void load_round(const struct srvproc *p, int n)
{
    char out[300];
    snprintf(out, sizeof out, "%s/bench.out", harness_dir());
    int st = harness_sh("redis-benchmark -p %d --threads 2 -c 200 -P 16 "
                        "-n %d -t set,get,incr,lpush,rpop -q > %s 2>&1",
                        p->port, n, out);
    if (st != 0) {
        char *o = harness_slurp(out, NULL);
        ck_abort_msg("redis-benchmark exit %d: %s", st, o);
    }
}

/* Fails the case when a value of rounds 3.. is over 110% of round 2's
 * and over round 2's + 'least'. */
static void check_flat(const char *what, const long long *v, long long least)
{
    long long most = v[2] + (v[2] / 10 > least ? v[2] / 10 : least);
    char series[512];
    size_t n = 0;
    for (int r = 1; r <= ROUNDS; r++)
        n += (size_t)snprintf(series + n, sizeof series - n, " %lld", v[r]);
    for (int r = 3; r <= ROUNDS; r++)
        ck_assert_msg(v[r] <= most,
                      "%s grew: round %d %lld > %lld (round 2 %lld + "
                      "max(10%%, %lld); rounds:%s)",
                      what, r, v[r], most, v[2], least, series);
}

START_TEST(soak)
{
    setenv("GLIBC_TUNABLES", MALLOC_TUNED, 1); /* the server's */
    struct srvproc p;
    fut_redis_start(&p, NULL, NULL);
    unsetenv("GLIBC_TUNABLES");
    long long live[ROUNDS + 1], rss[ROUNDS + 1];
    live[0] = info_field(&p, "fut_alloc_live");
    for (int r = 1; r <= ROUNDS; r++) {
        load_round(&p, REQUESTS);
        sleep_ms(SETTLE_MS);
        live[r] = info_field(&p, "fut_alloc_live");
        rss[r] = rss_kb(p.pid);
        printf("round %d: fut_alloc_live %lld, VmRSS %lld kB\n", r, live[r],
               rss[r]);
        fflush(stdout); /* a failed case's output is shown too */
    }
    check_flat("fut_alloc_live", live, LIVE_FLOOR);
    for (int r = 1; r <= ROUNDS; r++)
        ck_assert_msg(live[r] <= live[0] + IDLE_SLACK,
                      "idle after round %d: fut_alloc_live %lld, before the "
                      "load %lld (pools not shrunk)",
                      r, live[r], live[0]);
    if (!SANITIZED)
        check_flat("VmRSS (kB)", rss, RSS_FLOOR);
    ck_assert_int_eq(srv_stop(&p), 0);
    harness_cleanup();
}
END_TEST

int main(void)
{
    static const char *const progs[] = {"redis-benchmark", NULL};
    harness_require(progs);
    Suite *s = suite_create("redis_soak");
    tcase_add_test(fut_test_tcase(s, "soak"), soak);
    return fut_test_run(s);
}
