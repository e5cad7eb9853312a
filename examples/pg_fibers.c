/* SPDX-License-Identifier: MIT */
/* pg_fibers: fibers running queries on a small pool of PostgreSQL
 * connections, with the libpq adapter (libfut_pq, include/fut/pq.h).
 *
 *   ./build/examples/pg_fibers [CONNINFO [POOL [QUERIES]]]
 *
 * Opens POOL connections (default 4) with CONNINFO (libpq's connection
 * string; default $PG_CONNINFO, or "" - then libpq's own PGHOST,
 * PGPORT, ... variables), then runs QUERIES fibers (default 20) at once;
 * each takes a connection from the pool (waiting on a semaphore while
 * all are busy), runs "SELECT $1::int * $1::int, pg_backend_pid()" with
 * its number, gives the connection back and prints
 * "query N: N*N on backend PID". Exit status 0 when every query
 * answered, 1 otherwise, 2 for a bad command line. Built when the
 * adapter is (FUT_PQ). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fut.h"
#include "fut/pq.h"

#define MAX_POOL 64

/* The pool: the connections, which are free, and a semaphore counting
 * the free ones. One runtime thread: no lock needed around 'busy'. */
struct pool {
    struct fut_pg *conn[MAX_POOL];
    int busy[MAX_POOL];
    int n;
    struct fut_semaphore free;
};

static struct pool pool;
static int failures;

/* Waits for a free connection; returns its index. */
static int pool_take(struct fut_semaphore_permit *permit)
{
    struct fut_semaphore_acquire a;
    fut_semaphore_acquire_init(&a, &pool.free, 1);
    if (fut_await(&a) != 0 || a.result != 0)
        return -1;
    *permit = a.permit;
    for (int i = 0; i < pool.n; i++) {
        if (!pool.busy[i]) {
            pool.busy[i] = 1;
            return i;
        }
    }
    return -1; /* not reached: a permit means a free connection */
}

static void pool_give(int i, struct fut_semaphore_permit *permit)
{
    pool.busy[i] = 0;
    fut_semaphore_release(permit);
}

static intptr_t query_fiber(void *arg)
{
    int n = (int)(intptr_t)arg;
    struct fut_semaphore_permit permit;
    int c = pool_take(&permit);
    if (c < 0)
        return 1;
    char num[16];
    snprintf(num, sizeof num, "%d", n);
    const char *params[] = {num};
    PGresult *res = NULL;
    int rc =
        fut_pg_exec(pool.conn[c], &res,
                    "SELECT $1::int * $1::int, pg_backend_pid()", 1, params);
    pool_give(c, &permit);
    if (rc != 0) {
        char msg[256];
        printf("query %d: failed: %s (%s)\n", n, fut_strerror(rc),
               fut_pg_error_message(pool.conn[c], msg, sizeof msg));
        return 1;
    }
    int ok = PQresultStatus(res) == PGRES_TUPLES_OK;
    if (ok)
        printf("query %d: %s on backend %s\n", n, PQgetvalue(res, 0, 0),
               PQgetvalue(res, 0, 1));
    else
        printf("query %d: server error: %s", n, PQresultErrorMessage(res));
    PQclear(res);
    return ok ? 0 : 1;
}

struct args {
    const char *conninfo;
    int queries;
};

static intptr_t main_fiber(void *p)
{
    struct args *a = p;
    int opened = 0;
    for (int i = 0; i < pool.n; i++) {
        char err[256];
        int rc = fut_pg_open(a->conninfo, &pool.conn[i], err, sizeof err);
        if (rc != 0) {
            fprintf(stderr, "pg_fibers: connect: %s: %s\n", fut_strerror(rc),
                    err);
            break;
        }
        opened++;
    }
    if (opened == pool.n) {
        struct fut_join *joins = calloc((size_t)a->queries, sizeof *joins);
        int spawned = 0;
        for (int i = 0; joins && i < a->queries; i++, spawned++)
            if (fut_fiber_spawn(NULL, query_fiber, (void *)(intptr_t)i, NULL,
                                &joins[i]) != 0)
                break;
        for (int i = 0; i < spawned; i++) {
            intptr_t v = 1;
            if (fut_fiber_join(&joins[i], &v) != 0 || v != 0)
                failures++;
        }
        failures += a->queries - spawned;
        free(joins);
    } else {
        failures++;
    }
    for (int i = 0; i < opened; i++)
        fut_pg_close(pool.conn[i]);
    return 0;
}

int main(int argc, char **argv)
{
    struct args a = {getenv("PG_CONNINFO"), 20};
    if (!a.conninfo)
        a.conninfo = "";
    pool.n = 4;
    if (argc > 4 || (argc > 1 && strcmp(argv[1], "--help") == 0)) {
        fprintf(stderr, "usage: pg_fibers [CONNINFO [POOL [QUERIES]]]\n");
        return 2;
    }
    if (argc > 1)
        a.conninfo = argv[1];
    if (argc > 2)
        pool.n = atoi(argv[2]);
    if (argc > 3)
        a.queries = atoi(argv[3]);
    if (pool.n < 1 || pool.n > MAX_POOL || a.queries < 0) {
        fprintf(stderr, "pg_fibers: POOL is 1..%d, QUERIES >= 0\n", MAX_POOL);
        return 2;
    }
    fut_semaphore_init(&pool.free, (uintptr_t)pool.n);
    struct fut_runtime *rt = NULL;
    if (fut_runtime_new(NULL, &rt) != 0) {
        fprintf(stderr, "pg_fibers: no runtime\n");
        return 1;
    }
    intptr_t v = 0;
    int rc = fut_fiber_run(rt, main_fiber, &a, NULL, &v);
    fut_runtime_free(rt);
    fut_semaphore_fini(&pool.free);
    if (rc != 0) {
        fprintf(stderr, "pg_fibers: %s\n", fut_strerror(rc));
        return 1;
    }
    return failures ? 1 : 0;
}
