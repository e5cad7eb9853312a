/* SPDX-License-Identifier: MIT */
/* The meter and RESULT line of the client benchmarks (issue 32: curl_get,
 * hiredis_get, pg_select1), shared by fut's programs (bench_curl.c,
 * bench_hiredis.c, bench_pq.c) and their references (curl_multi_poll.c,
 * hiredis_libuv.c, pgbench_run.c), which do not link fut - so nothing
 * here needs fut.h.
 *
 * The figure judged is the client's CPU: user + system time of the whole
 * client process (getrusage(RUSAGE_SELF): every thread) over the timed
 * region, per operation, as 'value' in unit client_cpu_us_per_op. The
 * rate (operations per wall second) and the wall time come along; the
 * server is another process and is not in the figure.
 *
 *   RESULT bench=B peer=P config=C value=CPU_US unit=client_cpu_us_per_op
 *          ops=N wall_ms=W user_ms=U sys_ms=S <rate>=R conns=K
 *          maxrss_kb=M load1=L [extra]
 * (load1: the machine's 1-minute load average at the end.)
 */
#ifndef FUT_BENCH_CLIENT_H
#define FUT_BENCH_CLIENT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

/* A failed check: what went wrong on stderr, exit 1 (a benchmark whose
 * work was wrong has no figure). */
#define CLIENT_CHECK(cond, ...)                                              \
    do {                                                                     \
        if (__builtin_expect(!(cond), 0)) {                                  \
            fprintf(stderr, "bench: check failed: ");                        \
            fprintf(stderr, __VA_ARGS__);                                    \
            fprintf(stderr, "\n");                                           \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

struct client_meter {
    int64_t t0;      /* CLOCK_MONOTONIC at the start, ns */
    double user0_ms; /* the process's user CPU at the start */
    double sys0_ms;  /* its system CPU */
};

static inline int64_t client_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void client_cpu(double *user_ms, double *sys_ms)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *user_ms = ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3;
    *sys_ms = ru.ru_stime.tv_sec * 1e3 + ru.ru_stime.tv_usec / 1e3;
}

/* The machine's 1-minute load average now (-1: unknown): the machine is
 * shared, and a figure is read with the load it was measured under. */
static inline double client_load1(void)
{
    double load1 = -1;
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) {
        if (fscanf(la, "%lf", &load1) != 1)
            load1 = -1;
        fclose(la);
    }
    return load1;
}

static inline void client_meter_start(struct client_meter *m)
{
    client_cpu(&m->user0_ms, &m->sys0_ms);
    m->t0 = client_now_ns();
}

/* Prints the RESULT line of the region 'm' started: 'ops' operations
 * over 'conns' connections; 'rate' names the rate field
 * ("transfers_per_s"); 'extra' (may be NULL) is appended. */
static inline void client_report(const struct client_meter *m,
                                 const char *bench, const char *peer,
                                 const char *config, uint64_t ops,
                                 const char *rate, int conns,
                                 const char *extra)
{
    int64_t wall = client_now_ns() - m->t0;
    double u, s;
    client_cpu(&u, &s);
    u -= m->user0_ms;
    s -= m->sys0_ms;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double load1 = client_load1();
    printf("RESULT bench=%s peer=%s config=%s value=%.2f "
           "unit=client_cpu_us_per_op ops=%llu wall_ms=%.1f user_ms=%.1f "
           "sys_ms=%.1f %s=%.0f conns=%d maxrss_kb=%ld load1=%.2f%s%s\n",
           bench, peer, config, (u + s) * 1e3 / (double)ops,
           (unsigned long long)ops, (double)wall / 1e6, u, s, rate,
           (double)ops * 1e9 / (double)wall, conns, ru.ru_maxrss, load1,
           extra && extra[0] ? " " : "", extra ? extra : "");
    fflush(stdout);
}

/* The server's port from the environment variable 'var' (bench/run.sh
 * starts the server and sets it); exits 2 with a message when unset. */
static inline int client_port(const char *var, const char *server)
{
    const char *p = getenv(var);
    int port = p ? atoi(p) : 0;
    if (port <= 0 || port > 65535) {
        fprintf(stderr,
                "bench: %s is not set: start %s and give its port in %s "
                "(bench/run.sh does)\n",
                var, server, var);
        exit(2);
    }
    return port;
}

#endif /* FUT_BENCH_CLIENT_H */
