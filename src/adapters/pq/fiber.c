/* SPDX-License-Identifier: MIT */
/* libfut-pq's fiber wrappers (include/fut/pq.h, "fibers"): the connect
 * and query futures, or a LISTEN stream's next item, awaited with
 * fut_await. */
#include <stdio.h>

#include "fut.h"
#include "fut/pq.h"

int fut_pg_open_at(const char *file, int line, const char *conninfo,
                   struct fut_pg **pg, char *err, size_t errsize)
{
    if (err && errsize)
        err[0] = 0;
    if (!conninfo || !pg)
        return FUT_EINVAL;
    *pg = NULL;
    struct fut_pg_connect c;
    fut_pg_connect_init(&c, conninfo);
    int rc = fut_await_at(&c.base, file, line);
    if (rc == 0 && c.result == 0)
        *pg = c.pg;
    else if (err && errsize)
        snprintf(err, errsize, "%s", c.error);
    /* Outside a fiber (release builds) fut_await leaves 'c' as it was:
     * its copy of 'conninfo' goes here. Idempotent otherwise. */
    fut_drop(&c.base);
    return rc != 0 ? rc : c.result;
}

int fut_pg_exec_batch_at(const char *file, int line, struct fut_pg *pg, int n,
                         const struct fut_pg_stmt *stmts, PGresult **results)
{
    if (!pg || !stmts || !results || n < 1)
        return FUT_EINVAL;
    struct fut_pg_query q;
    fut_pg_pipeline_init(&q, pg, n, stmts, results);
    int rc = fut_await_at(&q.base, file, line);
    fut_drop(&q.base);
    return rc != 0 ? rc : q.result;
}

int fut_pg_exec_at(const char *file, int line, struct fut_pg *pg,
                   PGresult **res, const char *sql, int nparams,
                   const char *const *params)
{
    if (!res)
        return FUT_EINVAL;
    *res = NULL;
    struct fut_pg_stmt st = {sql, nparams, params};
    return fut_pg_exec_batch_at(file, line, pg, 1, &st, res);
}

/* One poll_next of a stream, as a future. */
struct next_fut {
    struct fut_future base;
    struct fut_pg_listen *s;
    struct fut_pg_notification *n;
    int result; /* 0: an item in *n; 1: the end */
};

static int next_poll(struct fut_future *f, struct fut_context *cx)
{
    struct next_fut *n = (struct next_fut *)f;
    int k = fut_stream_poll_next(&n->s->base, cx, n->n);
    if (k == FUT_PENDING)
        return FUT_PENDING;
    n->result = k == FUT_STREAM_ITEM ? 0 : 1;
    return FUT_READY;
}

static const struct fut_future_vtable next_vt = {next_poll, 0,
                                                 "fut_pg_listen_next", 0};

int fut_pg_listen_next_at(const char *file, int line, struct fut_pg_listen *s,
                          struct fut_pg_notification *n)
{
    if (!s || !n)
        return FUT_EINVAL;
    struct next_fut f;
    fut_future_init(&f.base, &next_vt);
    f.s = s;
    f.n = n;
    f.result = 0;
    int rc = fut_await_at(&f.base, file, line);
    return rc != 0 ? rc : f.result;
}
