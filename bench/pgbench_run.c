/* SPDX-License-Identifier: MIT */
/* pg_select1's reference (issue 32): runs
 *   pgbench -M prepared -c 8 -j 1 -n -f FILE -t 10000 "$BENCH_PG"
 * with FILE holding "SELECT 1;" (80,000 queries: 10,000 per client, each
 * one awaited before the next, as bench_pq's config=current_thread), waits
 * for it with wait4 and prints its RESULT line: the client CPU (user + sys
 * of the pgbench process, from wait4's rusage: its whole life, the 8
 * connects and the prepares included) per query, and pgbench's own rate
 * ("tps = ... (without initial connection time)"; one query per
 * transaction) as queries_per_s. No fut here.
 *
 *   BENCH_PG='host=DIR port=P user=postgres dbname=postgres' \
 *   [PGBENCH=/usr/lib/postgresql/15/bin/pgbench] pgbench_run
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client.h"

#define PB_CONNS 8
#define PB_PER_CLIENT 10000

int main(void)
{
    const char *conninfo = getenv("BENCH_PG");
    const char *pgbench = getenv("PGBENCH");
    if (!pgbench)
        pgbench = "/usr/lib/postgresql/15/bin/pgbench";
    if (!conninfo || !conninfo[0]) {
        fprintf(stderr, "pgbench_run: BENCH_PG is not set (bench/run.sh "
                        "sets it)\n");
        return 2;
    }
    if (access(pgbench, X_OK) != 0) {
        fprintf(stderr, "pgbench_run: no %s (Debian: postgresql)\n", pgbench);
        return 77;
    }
    char file[] = "/tmp/pgbench_select1.XXXXXX";
    int fd = mkstemp(file);
    CLIENT_CHECK(fd >= 0, "mkstemp");
    CLIENT_CHECK(write(fd, "SELECT 1;\n", 10) == 10, "write %s", file);
    close(fd);
    int out[2];
    CLIENT_CHECK(pipe(out) == 0, "pipe");
    char tx[16];
    snprintf(tx, sizeof tx, "%d", PB_PER_CLIENT);
    int64_t t0 = client_now_ns();
    pid_t pid = fork();
    CLIENT_CHECK(pid >= 0, "fork");
    if (pid == 0) {
        dup2(out[1], 1);
        close(out[0]);
        close(out[1]);
        execl(pgbench, "pgbench", "-M", "prepared", "-c", "8", "-j", "1",
              "-n", "-f", file, "-t", tx, conninfo, (char *)NULL);
        perror("exec pgbench");
        _exit(127);
    }
    close(out[1]);
    static char buf[65536];
    size_t len = 0;
    ssize_t k;
    while (len < sizeof buf - 1 &&
           (k = read(out[0], buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t)k;
    buf[len] = 0;
    close(out[0]);
    int st;
    struct rusage ru;
    CLIENT_CHECK(wait4(pid, &st, 0, &ru) == pid, "wait4");
    int64_t wall = client_now_ns() - t0;
    unlink(file);
    fputs(buf, stderr); /* pgbench's report goes to run.sh's log */
    CLIENT_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                 "pgbench failed (status %d)", st);
    long done = 0;
    double tps = 0;
    const char *p = strstr(buf, "actually processed: ");
    CLIENT_CHECK(p && sscanf(p, "actually processed: %ld", &done) == 1,
                 "no transaction count in pgbench's output");
    p = strstr(buf, "tps = ");
    CLIENT_CHECK(p && sscanf(p, "tps = %lf", &tps) == 1,
                 "no tps in pgbench's output");
    CLIENT_CHECK(done == (long)PB_CONNS * PB_PER_CLIENT,
                 "pgbench processed %ld transactions, not %d", done,
                 PB_CONNS * PB_PER_CLIENT);
    double u = ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3;
    double s = ru.ru_stime.tv_sec * 1e3 + ru.ru_stime.tv_usec / 1e3;
    double load1 = client_load1();
    printf("RESULT bench=pg_select1 peer=pgbench config=prepared value=%.2f "
           "unit=client_cpu_us_per_op ops=%ld wall_ms=%.1f user_ms=%.1f "
           "sys_ms=%.1f queries_per_s=%.0f conns=%d maxrss_kb=%ld "
           "load1=%.2f\n",
           (u + s) * 1e3 / (double)done, done, (double)wall / 1e6, u, s, tps,
           PB_CONNS, ru.ru_maxrss, load1);
    return 0;
}
