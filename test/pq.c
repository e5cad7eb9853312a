/* SPDX-License-Identifier: MIT */
/* libfut-pq (include/fut/pq.h) against a real PostgreSQL 15 that this
 * program starts: initdb in a fresh directory, pg_ctl start on a Unix
 * socket there and a free TCP port on 127.0.0.1, as the 'postgres' user
 * when run as root (setuid in the child, as runuser would), and stopped at the end by a watchdog
 * process that also runs when this one dies (ctest's timeout). One
 * cluster per process; each case runs in the forked child. Exit 77 when
 * PostgreSQL 15's binaries are absent.
 * Cases: queries (parameters, NULLs, a syntax error whose message
 * reaches the caller, a batch with a failing statement, a pipeline of
 * 1,000 queries, a connect that fails), conns (100 connections at
 * once), notify (LISTEN/NOTIFY as a stream: in order, a slow consumer's
 * bound, UNLISTEN on drop, the end on close), dropped (a query dropped
 * at every PENDING and at many moments of its run, the connection right
 * after each drop; a long query dropped is cancelled on the server),
 * killed (the backend killed mid-query, then the whole server stopped
 * mid-query: a clear error, no hang), example (examples/pg_fibers).
 * Every case runs on both backends and both flavors; each ends with the
 * allocator's leak check (the adapter allocates through fut_mem_alloc). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fut/pq.h"
#include "fut/testing.h"
#include "test.h"

#define MS (1000LL * 1000LL)
#define PGBIN "/usr/lib/postgresql/15/bin"

/* ------------------------------------------------------------- server */

static char dir[256];      /* the cluster's directory (and socket dir) */
static int port;           /* its TCP port */
static char conninfo[512]; /* over the Unix socket */
static char conninfo_tcp[512];
static pid_t watchdog = -1;
static int watchdog_fd = -1;

/* Runs argv (as the 'postgres' user when we are root: initdb and the
 * server refuse root), output to 'log'; returns the exit status (or
 * -1). */
static int run_as_pg(const char *const *argv, const char *log)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open(log ? log : "/dev/null",
                      O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        if (getuid() == 0) {
            struct passwd *pw = getpwnam("postgres");
            if (!pw || initgroups(pw->pw_name, pw->pw_gid) < 0 ||
                setgid(pw->pw_gid) < 0 || setuid(pw->pw_uid) < 0)
                _exit(126);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof a;
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) < 0 ||
        getsockname(s, (struct sockaddr *)&a, &l) < 0) {
        perror("free_port");
        exit(1);
    }
    close(s);
    return ntohs(a.sin_port);
}

static void server_stop(void)
{
    char data[300];
    snprintf(data, sizeof data, "%s/data", dir);
    const char *stop[] = {PGBIN "/pg_ctl", "-D", data,   "-m",
                          "immediate",     "-w", "stop", NULL};
    run_as_pg(stop, NULL);
}

/* The watchdog: a process of its own session (ctest kills our group on
 * a timeout) that waits for our end - the pipe's EOF, however we end -
 * then stops the server and removes the directory. */
static void watchdog_start(void)
{
    int p[2];
    if (pipe(p) < 0) {
        perror("pipe");
        exit(1);
    }
    watchdog = fork();
    if (watchdog == 0) {
        setsid();
        close(p[1]);
        char c;
        while (read(p[0], &c, 1) != 0)
            ;
        server_stop();
        /* The removal (a second) is not waited for. */
        if (fork() == 0) {
            execlp("rm", "rm", "-rf", dir, (char *)NULL);
            _exit(127);
        }
        _exit(0);
    }
    close(p[0]);
    watchdog_fd = p[1];
    fcntl(watchdog_fd, F_SETFD, FD_CLOEXEC);
}

static int initdb(const char *data, const char *log)
{
    const char *argv[] = {
        PGBIN "/initdb", "-D",        data, "-A",   "trust",      "-U",
        "postgres",      "--no-sync", "-E", "UTF8", "--locale=C", NULL};
    return run_as_pg(argv, log);
}

/* An initdb costs a second or more of CPU, and the area runs two dozen
 * processes per build: the first one makes a template cluster in the
 * build directory (FUT_PQ_TEMPLATE, renamed into place whole, so
 * concurrent processes see it complete or not at all), every process
 * copies it. Returns 1 when 'data' was made so; 0 (and the caller runs
 * initdb itself) when the template cannot be made or copied - e.g. when
 * the 'postgres' user cannot reach the build directory. */
static int template_copy(const char *data)
{
    char tmp[400], tdata[450];
    if (access(FUT_PQ_TEMPLATE "/data/PG_VERSION", R_OK) != 0) {
        snprintf(tmp, sizeof tmp, "%s.XXXXXX", FUT_PQ_TEMPLATE);
        if (!mkdtemp(tmp))
            return 0;
        struct passwd *pw = getuid() == 0 ? getpwnam("postgres") : NULL;
        if (pw && chown(tmp, pw->pw_uid, pw->pw_gid) < 0)
            pw = NULL;
        snprintf(tdata, sizeof tdata, "%s/data", tmp);
        const char *rm[] = {"/bin/rm", "-rf", tmp, NULL};
        if ((getuid() == 0 && !pw) || initdb(tdata, NULL) != 0 ||
            rename(tmp, FUT_PQ_TEMPLATE) != 0) {
            /* failed, or another process was first: drop ours */
            run_as_pg(rm, NULL);
            rmdir(tmp);
        }
    }
    const char *cp[] = {"/bin/cp", "-a", FUT_PQ_TEMPLATE "/data", data, NULL};
    if (run_as_pg(cp, NULL) == 0)
        return 1;
    const char *rm[] = {"/bin/rm", "-rf", data, NULL};
    run_as_pg(rm, NULL);
    return 0;
}

static void server_start(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/futpq.XXXXXX", t ? t : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
    if (getuid() == 0) {
        /* The 'postgres' user owns the directory (initdb refuses root). */
        struct passwd *pw = getpwnam("postgres");
        if (!pw || chown(dir, pw->pw_uid, pw->pw_gid) < 0) {
            printf("SKIP: no 'postgres' user to run the server as\n");
            rmdir(dir);
            exit(77);
        }
    }
    chmod(dir, 0700);
    watchdog_start();
    char data[300], log[300], opts[600], ilog[300];
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(log, sizeof log, "%s/server.log", dir);
    snprintf(ilog, sizeof ilog, "%s/initdb.log", dir);
    if (!template_copy(data) && initdb(data, ilog) != 0) {
        fprintf(stderr, "initdb failed: see %s\n", ilog);
        exit(1);
    }
    port = free_port();
    snprintf(opts, sizeof opts,
             "-k %s -p %d -c listen_addresses=127.0.0.1 -F "
             "-c max_connections=150 -c shared_buffers=16MB",
             dir, port);
    const char *start[] = {
        PGBIN "/pg_ctl", "-D", data, "-l", log, "-w", "-t", "60", "-o", opts,
        "start",         NULL};
    if (run_as_pg(start, NULL) != 0) {
        fprintf(stderr, "pg_ctl start failed: see %s\n", log);
        exit(1);
    }
    snprintf(conninfo, sizeof conninfo,
             "host=%s port=%d user=postgres dbname=postgres", dir, port);
    snprintf(conninfo_tcp, sizeof conninfo_tcp,
             "host=127.0.0.1 port=%d user=postgres dbname=postgres "
             "connect_timeout=10",
             port);
}

/* -------------------------------------------------------------- tools */

/* Runs fn on a fiber of a fresh runtime (the flavor of the test). */
static void run_fiber(fut_fiber_fn fn, void *arg)
{
    struct fut_runtime *rt = fut_test_rt();
    intptr_t v = -1;
    ASSERT_EQ(fut_fiber_run(rt, fn, arg, NULL, &v), 0);
    ASSERT_EQ(v, 0);
    fut_runtime_free(rt);
}

static struct fut_pg *open_pg(void)
{
    struct fut_pg *pg = NULL;
    char err[256];
    int rc = fut_pg_open(conninfo, &pg, err, sizeof err);
    ck_assert_msg(rc == 0, "connect: %s: %s", fut_strerror(rc), err);
    return pg;
}

/* Runs 'sql' and checks its status; returns the result (yours). */
static PGresult *must(struct fut_pg *pg, ExecStatusType want, const char *sql,
                      int n, const char *const *params)
{
    PGresult *res = NULL;
    int rc = fut_pg_exec(pg, &res, sql, n, params);
    ck_assert_msg(rc == 0, "%s: %s", sql, fut_strerror(rc));
    ck_assert_ptr_nonnull(res);
    ck_assert_msg(PQresultStatus(res) == want, "%s: %s (%s)", sql,
                  PQresStatus(PQresultStatus(res)),
                  PQresultErrorMessage(res));
    return res;
}

/* SELECT $1::int + 0 with 'v', checked: the connection answers its own
 * query. */
static void echo_ok(struct fut_pg *pg, int v)
{
    char s[32];
    snprintf(s, sizeof s, "%d", v);
    const char *p[] = {s};
    PGresult *res = must(pg, PGRES_TUPLES_OK, "SELECT $1::int + 0", 1, p);
    ck_assert_str_eq(PQgetvalue(res, 0, 0), s);
    PQclear(res);
}

/* Polls 'inner' once, then again after each of 'yields' yields, READY
 * whether 'inner' is or not; 'inner' is left as it stands. */
struct poll_some {
    struct fut_future base;
    struct fut_future *inner;
    int yields;
};

static int poll_some_poll(struct fut_future *f, struct fut_context *cx)
{
    struct poll_some *p = (struct poll_some *)f;
    if (fut_poll(p->inner, cx) == FUT_READY || p->yields-- == 0)
        return FUT_READY;
    fut_waker_wake_by_ref(&cx->waker);
    return FUT_PENDING;
}

static const struct fut_future_vtable poll_some_vt = {poll_some_poll, 0,
                                                      "poll_some", 0};

static void poll_some(struct fut_future *inner, int yields)
{
    struct poll_some p;
    fut_future_init(&p.base, &poll_some_vt);
    p.inner = inner;
    p.yields = yields;
    ASSERT_EQ(fut_await(&p), 0);
}

/* ------------------------------------------------------------ queries */

#define NPIPE 1000

static intptr_t queries_fiber(void *arg)
{
    (void)arg;
    struct fut_pg *pg = open_pg();
    PGresult *res =
        must(pg, PGRES_TUPLES_OK,
             "SELECT x, x * x FROM generate_series(1, 100) x", 0, NULL);
    ASSERT_EQ(PQntuples(res), 100);
    ck_assert_str_eq(PQgetvalue(res, 99, 1), "10000");
    PQclear(res);
    /* Parameters, a NULL among them, text round trip. */
    const char *p[] = {"21", NULL, "it's \"quoted\""};
    res = must(pg, PGRES_TUPLES_OK,
               "SELECT $1::int * 2, $2::text IS NULL, $3::text", 3, p);
    ck_assert_str_eq(PQgetvalue(res, 0, 0), "42");
    ck_assert_str_eq(PQgetvalue(res, 0, 1), "t");
    ck_assert_str_eq(PQgetvalue(res, 0, 2), "it's \"quoted\"");
    PQclear(res);
    PQclear(
        must(pg, PGRES_COMMAND_OK, "CREATE TEMP TABLE t (a int)", 0, NULL));
    /* A syntax error: the server's message reaches the caller. */
    res = must(pg, PGRES_FATAL_ERROR, "SELEC 1", 0, NULL);
    ck_assert_msg(strstr(PQresultErrorMessage(res), "syntax error"),
                  "message: %s", PQresultErrorMessage(res));
    ck_assert_str_eq(PQresultErrorField(res, PG_DIAG_SQLSTATE), "42601");
    PQclear(res);
    echo_ok(pg, 7); /* usable after the error */
    /* A batch with a failing statement: those after it are aborted, the
     * batch is one transaction (the insert before is rolled back). */
    struct fut_pg_stmt b[] = {{"INSERT INTO t VALUES (1)", 0, NULL},
                              {"SELECT 1/0", 0, NULL},
                              {"INSERT INTO t VALUES (2)", 0, NULL}};
    PGresult *br[3];
    ASSERT_EQ(fut_pg_exec_batch(pg, 3, b, br), 0);
    ASSERT_EQ(PQresultStatus(br[0]), PGRES_COMMAND_OK);
    ASSERT_EQ(PQresultStatus(br[1]), PGRES_FATAL_ERROR);
    ck_assert_msg(strstr(PQresultErrorMessage(br[1]), "division by zero"),
                  "%s", PQresultErrorMessage(br[1]));
    ASSERT_EQ(PQresultStatus(br[2]), PGRES_PIPELINE_ABORTED);
    for (int i = 0; i < 3; i++)
        PQclear(br[i]);
    res = must(pg, PGRES_TUPLES_OK, "SELECT count(*) FROM t", 0, NULL);
    ck_assert_str_eq(PQgetvalue(res, 0, 0), "0");
    PQclear(res);
    /* A pipeline of 1,000 queries in one batch. */
    struct fut_pg_stmt *st = calloc(NPIPE, sizeof *st);
    char(*vals)[16] = calloc(NPIPE, sizeof *vals);
    const char **pv = calloc(NPIPE, sizeof *pv);
    PGresult **rs = calloc(NPIPE, sizeof *rs);
    for (int i = 0; i < NPIPE; i++) {
        snprintf(vals[i], sizeof vals[i], "%d", i);
        pv[i] = vals[i];
        st[i] = (struct fut_pg_stmt){"SELECT $1::int * 2", 1, &pv[i]};
    }
    int64_t t0 = fut_now_ns();
    ASSERT_EQ(fut_pg_exec_batch(pg, NPIPE, st, rs), 0);
    int64_t t1 = fut_now_ns();
    for (int i = 0; i < NPIPE; i++) {
        ASSERT_EQ(PQresultStatus(rs[i]), PGRES_TUPLES_OK);
        ASSERT_EQ(atoi(PQgetvalue(rs[i], 0, 0)), 2 * i);
        PQclear(rs[i]);
    }
    if (getenv("PQ_TEST_VERBOSE"))
        printf("pipeline of %d: %.1f ms\n", NPIPE, (double)(t1 - t0) / 1e6);
    /* 1,000 single-query futures polled before any answer: pipelined
     * too (one connection, answers in order). */
    struct fut_pg_query *qs = calloc(NPIPE, sizeof *qs);
    for (int i = 0; i < NPIPE; i++) {
        const char *one[] = {pv[i]};
        fut_pg_query_init(&qs[i], pg, "SELECT $1::int + 1", 1, one);
        poll_some(&qs[i].base, 0);
    }
    for (int i = 0; i < NPIPE; i++) {
        ASSERT_EQ(fut_await(&qs[i]), 0);
        ASSERT_EQ(qs[i].result, 0);
        ASSERT_EQ(atoi(PQgetvalue(qs[i].res, 0, 0)), i + 1);
        PQclear(qs[i].res);
        fut_drop(&qs[i].base);
    }
    free(qs);
    free(st);
    free(vals);
    free(pv);
    free(rs);
    /* Misuse that returns an error. */
    struct fut_pg_query q;
    fut_pg_query_init(&q, pg, NULL, 0, NULL);
    ASSERT_EQ(fut_await(&q), 0);
    ASSERT_EQ(q.result, FUT_EINVAL);
    /* Pending when the connection is closed: FUT_ECANCELED. */
    fut_pg_query_init(&q, pg, "SELECT pg_sleep(10)", 0, NULL);
    poll_some(&q.base, 0);
    ASSERT_TRUE(!fut_is_ready(&q.base));
    fut_pg_close(pg);
    ASSERT_EQ(fut_await(&q), 0);
    ASSERT_EQ(q.result, FUT_ECANCELED);
    ASSERT_TRUE(q.res == NULL);
    /* Over TCP too. */
    char err[256];
    ASSERT_EQ(fut_pg_open(conninfo_tcp, &pg, err, sizeof err), 0);
    echo_ok(pg, 11);
    fut_pg_close(pg);
    /* A connect that fails: libpq's message reaches the caller. */
    char bad[600];
    snprintf(bad, sizeof bad, "host=127.0.0.1 port=%d user=postgres", 1);
    pg = NULL;
    ASSERT_EQ(fut_pg_open(bad, &pg, err, sizeof err), -ECONNREFUSED);
    ASSERT_TRUE(pg == NULL);
    ck_assert_msg(strstr(err, "refused"), "message: %s", err);
    snprintf(bad, sizeof bad, "%s dbname=nosuchdb", conninfo);
    ASSERT_EQ(fut_pg_open(bad, &pg, err, sizeof err), -ECONNREFUSED);
    ck_assert_msg(strstr(err, "nosuchdb"), "message: %s", err);
    return 0;
}

START_TEST(queries)
{
    run_fiber(queries_fiber, NULL);
}
END_TEST

/* -------------------------------------------------------------- conns */

#define NCONN 100

static intptr_t conn_fiber(void *arg)
{
    int i = (int)(intptr_t)arg;
    struct fut_pg *pg = open_pg();
    char s[16];
    snprintf(s, sizeof s, "%d", i);
    const char *p[] = {s};
    /* All connections hold a query at the same time (pg_sleep). */
    PGresult *res =
        must(pg, PGRES_TUPLES_OK, "SELECT $1::int, pg_sleep(0.2)", 1, p);
    ck_assert_str_eq(PQgetvalue(res, 0, 0), s);
    PQclear(res);
    echo_ok(pg, i);
    fut_pg_close(pg);
    return 0;
}

static intptr_t conns_fiber(void *arg)
{
    (void)arg;
    static struct fut_join joins[NCONN];
    int64_t t0 = fut_now_ns();
    for (int i = 0; i < NCONN; i++)
        ASSERT_EQ(fut_fiber_spawn(NULL, conn_fiber, (void *)(intptr_t)i, NULL,
                                  &joins[i]),
                  0);
    for (int i = 0; i < NCONN; i++) {
        intptr_t v = -1;
        ASSERT_EQ(fut_fiber_join(&joins[i], &v), 0);
        ASSERT_EQ(v, 0);
    }
    /* 100 x 0.2 s of pg_sleep at once, not one after the other. */
    ck_assert_msg(fut_now_ns() - t0 < 10000 * MS, "took %lld ms",
                  (long long)((fut_now_ns() - t0) / MS));
    return 0;
}

START_TEST(conns)
{
    run_fiber(conns_fiber, NULL);
}
END_TEST

/* ------------------------------------------------------------- notify */

static void expect_note(struct fut_pg_listen *s, const char *ch,
                        const char *payload, unsigned long lost)
{
    struct fut_pg_notification n;
    ASSERT_EQ(fut_pg_listen_next(s, &n), 0);
    ck_assert_str_eq(n.notify->relname, ch);
    ck_assert_str_eq(n.notify->extra, payload);
    ASSERT_EQ(n.lost, lost);
    PQfreemem(n.notify);
}

/* One poll_next of a stream under a 1 ms timeout: the LISTEN goes out. */
struct poke {
    struct fut_future base;
    struct fut_pg_listen *s;
    struct fut_pg_notification n;
};

static int poke_poll(struct fut_future *f, struct fut_context *cx)
{
    struct poke *p = (struct poke *)f;
    int k = fut_stream_poll_next(&p->s->base, cx, &p->n);
    ck_assert_int_eq(k, FUT_PENDING);
    return FUT_PENDING;
}

static const struct fut_future_vtable poke_vt = {poke_poll, 0, "poke", 0};

/* Starts 's' and waits until its LISTEN took effect: a query given
 * after it on the same connection completed. */
static void listening(struct fut_pg *l, struct fut_pg_listen *s)
{
    struct poke k;
    fut_future_init(&k.base, &poke_vt);
    k.s = s;
    ASSERT_EQ(fut_timeout_await(&k, 1 * MS), FUT_ETIMEDOUT);
    PQclear(must(l, PGRES_TUPLES_OK, "SELECT 1", 0, NULL));
}

static void notify(struct fut_pg *pg, const char *ch, const char *payload)
{
    const char *p[] = {ch, payload};
    PQclear(must(pg, PGRES_TUPLES_OK, "SELECT pg_notify($1, $2)", 2, p));
}

static intptr_t notify_fiber(void *arg)
{
    (void)arg;
    struct fut_pg *l = open_pg(), *n = open_pg();
    struct fut_pg_listen s, slow, dup;
    fut_pg_listen_init(&s, l, "Chan", 0); /* case kept: it is quoted */
    listening(l, &s);
    char buf[32];
    for (int i = 0; i < 100; i++) {
        snprintf(buf, sizeof buf, "m%d", i);
        notify(n, "Chan", buf);
    }
    for (int i = 0; i < 100; i++) {
        snprintf(buf, sizeof buf, "m%d", i);
        expect_note(&s, "Chan", buf, 0);
    }
    /* The listener's own notification comes through too. */
    notify(l, "Chan", "self");
    expect_note(&s, "Chan", "self", 0);
    /* One stream per channel and connection. */
    fut_pg_listen_init(&dup, l, "Chan", 0);
    struct fut_pg_notification m;
    ASSERT_EQ(fut_pg_listen_next(&dup, &m), 1);
    ASSERT_EQ(dup.result, -EEXIST);
    fut_stream_drop(&dup.base);
    /* A slow consumer: 4 queued, the rest counted as lost. */
    fut_pg_listen_init(&slow, l, "slow", 4);
    listening(l, &slow);
    for (int i = 0; i < 20; i++) {
        snprintf(buf, sizeof buf, "s%d", i);
        notify(n, "slow", buf);
    }
    /* All 20 reach the adapter meanwhile (the driver reads them). */
    fut_sleep(300 * MS);
    for (int i = 0; i < 4; i++) {
        snprintf(buf, sizeof buf, "s%d", i);
        expect_note(&slow, "slow", buf, 0);
    }
    notify(n, "slow", "end");
    expect_note(&slow, "slow", "end", 16);
    ASSERT_EQ(slow.lost_total, 16);
    /* Dropped: UNLISTEN goes out; the session listens to 'slow' only. */
    fut_stream_drop(&s.base);
    PGresult *res =
        must(l, PGRES_TUPLES_OK,
             "SELECT array_agg(c) FROM pg_listening_channels() c", 0, NULL);
    ck_assert_str_eq(PQgetvalue(res, 0, 0), "{slow}");
    PQclear(res);
    /* Closing ends the stream still open. */
    fut_pg_close(l);
    ASSERT_EQ(fut_pg_listen_next(&slow, &m), 1);
    ASSERT_EQ(slow.result, FUT_ECANCELED);
    fut_stream_drop(&slow.base);
    fut_pg_close(n);
    return 0;
}

START_TEST(notify_case)
{
    run_fiber(notify_fiber, NULL);
}
END_TEST

/* ------------------------------------------------------------ dropped */

/* Polls a query and drops it at its 'drop_at'-th PENDING (READY when
 * the query completed first). */
struct dropper {
    struct fut_future base;
    struct fut_pg_query *q;
    int pendings, drop_at, dropped;
};

static int dropper_poll(struct fut_future *f, struct fut_context *cx)
{
    struct dropper *d = (struct dropper *)f;
    if (fut_poll(&d->q->base, cx) == FUT_READY)
        return FUT_READY;
    if (++d->pendings == d->drop_at) {
        fut_drop(&d->q->base);
        d->dropped = 1;
        return FUT_READY;
    }
    return FUT_PENDING;
}

static const struct fut_future_vtable dropper_vt = {dropper_poll, 0,
                                                    "dropper", 0};

#define BIGQ "SELECT x, repeat('y', 100) FROM generate_series(1, 5000) x"

/* Runs BIGQ dropped at its 'k'-th PENDING (0: to completion); returns
 * its PENDING count. */
static int run_dropped_at(struct fut_pg *pg, int k)
{
    struct fut_pg_query q;
    fut_pg_query_init(&q, pg, BIGQ, 0, NULL);
    struct dropper d;
    fut_future_init(&d.base, &dropper_vt);
    d.q = &q;
    d.pendings = 0;
    d.drop_at = k;
    d.dropped = 0;
    ASSERT_EQ(fut_await(&d), 0);
    if (!d.dropped) {
        ASSERT_EQ(q.result, 0);
        ASSERT_EQ(PQntuples(q.res), 5000);
        PQclear(q.res);
        fut_drop(&q.base);
    }
    return d.pendings;
}

static intptr_t dropped_fiber(void *arg)
{
    (void)arg;
    struct fut_pg *pg = open_pg();
    /* At every PENDING of a run to completion. */
    int n = run_dropped_at(pg, 0);
    ck_assert_int_ge(n, 1);
    for (int k = 1; k <= n; k++) {
        run_dropped_at(pg, k);
        echo_ok(pg, k);
    }
    /* At many moments of the query's life: given to libpq but not yet
     * written, written, the server running it, the answer half read. */
    int inflight = 0;
    for (int i = 0; i < 60; i++) {
        struct fut_pg_query q;
        fut_pg_query_init(&q, pg, BIGQ, 0, NULL);
        if (i < 10)
            poll_some(&q.base, i);
        else
            (void)fut_timeout_await(&q, (i - 10) * 200 * 1000LL);
        if (!fut_is_ready(&q.base))
            inflight++;
        else if (q.result == 0)
            PQclear(q.res);
        fut_drop(&q.base);
        echo_ok(pg, i);
    }
    ck_assert_int_ge(inflight, 10);
    /* A long query dropped: the server is asked to stop it, so the next
     * query answers at once, not after 30 s. */
    long before = fut_pg_cancels_sent();
    struct fut_pg_query q;
    fut_pg_query_init(&q, pg, "SELECT pg_sleep(30)", 0, NULL);
    ASSERT_EQ(fut_timeout_await(&q, 200 * MS), FUT_ETIMEDOUT);
    fut_drop(&q.base);
    int64_t t0 = fut_now_ns();
    echo_ok(pg, 1234);
    ck_assert_msg(fut_now_ns() - t0 < 10000 * MS, "next query took %lld ms",
                  (long long)((fut_now_ns() - t0) / MS));
    ck_assert_int_gt(fut_pg_cancels_sent(), before);
    /* Dropped in a pipeline (not alone in flight: no cancel, drained). */
    struct fut_pg_query a, b;
    fut_pg_query_init(&a, pg, "SELECT pg_sleep(0.05)", 0, NULL);
    fut_pg_query_init(&b, pg, "SELECT 5", 0, NULL);
    poll_some(&a.base, 0);
    poll_some(&b.base, 0);
    fut_drop(&a.base);
    ASSERT_EQ(fut_await(&b), 0);
    ASSERT_EQ(b.result, 0);
    ck_assert_str_eq(PQgetvalue(b.res, 0, 0), "5");
    PQclear(b.res);
    fut_drop(&b.base);
    echo_ok(pg, 99);
    /* Dropped then closed at once: nothing leaks. */
    fut_pg_query_init(&q, pg, "SELECT pg_sleep(30)", 0, NULL);
    poll_some(&q.base, 1);
    fut_drop(&q.base);
    fut_pg_close(pg);
    return 0;
}

/* The stock drop harness (fut/testing.h) over a whole session as one
 * future - connect, a query of 5,000 rows, close - dropped at each of
 * its PENDINGs, connect's included: the half-made connection is closed,
 * the dropped query's connection too (its driver ends, its cancel, if
 * one was started, finishes), and nothing of the adapter's is left (the
 * harness's allocation check). */
struct session {
    struct fut_future base;
    int state; /* 0 connecting, 1 querying, 2 done */
    struct fut_pg_connect c;
    struct fut_pg_query q;
    struct fut_pg *pg;
};

static int session_poll(struct fut_future *f, struct fut_context *cx)
{
    struct session *s = (struct session *)f;
    if (s->state == 0) {
        if (fut_poll(&s->c.base, cx) == FUT_PENDING)
            return FUT_PENDING;
        ck_assert_msg(s->c.result == 0, "connect: %s", s->c.error);
        s->pg = s->c.pg;
        fut_drop(&s->c.base);
        fut_pg_query_init(&s->q, s->pg, BIGQ, 0, NULL);
        s->state = 1;
    }
    if (fut_poll(&s->q.base, cx) == FUT_PENDING)
        return FUT_PENDING;
    ASSERT_EQ(s->q.result, 0);
    ASSERT_EQ(PQntuples(s->q.res), 5000);
    PQclear(s->q.res);
    fut_drop(&s->q.base);
    fut_pg_close(s->pg);
    s->state = 2;
    return FUT_READY;
}

static void session_drop(struct fut_future *f)
{
    struct session *s = (struct session *)f;
    if (s->state == 0) {
        fut_drop(&s->c.base);
    } else if (s->state == 1) {
        fut_drop(&s->q.base);
        fut_pg_close(s->pg);
    }
    s->state = 2;
}

static const struct fut_future_vtable session_vt = {
    session_poll, session_drop, "session", 0};

static struct session the_session;

static struct fut_future *make_session(void *ud, struct fut_runtime *rt)
{
    (void)ud;
    (void)rt;
    memset(&the_session, 0, sizeof the_session);
    fut_future_init(&the_session.base, &session_vt);
    fut_pg_connect_init(&the_session.c, conninfo);
    return &the_session.base;
}

START_TEST(dropped)
{
    run_fiber(dropped_fiber, NULL);
    struct fut_harness h;
    fut_harness_init(&h, make_session, NULL, NULL);
    int r = fut_harness_run(&h);
    ck_assert_msg(r == 0, "harness: %d, first failure at %ld: %s", r,
                  h.first_failure, h.msg);
    ck_assert_msg(h.pendings >= 3, "only %ld PENDINGs", h.pendings);
    if (getenv("PQ_TEST_VERBOSE"))
        printf("harness: %ld PENDINGs, %ld runs\n", h.pendings, h.runs);
}
END_TEST

/* ------------------------------------------------------------- killed */

struct killer {
    pthread_t t;
    pid_t pid;  /* kill it with SIGKILL, or */
    int server; /* stop the whole server (pg_ctl -m immediate) */
};

static void *kill_later(void *p)
{
    struct killer *k = p;
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    if (k->server)
        server_stop();
    else
        kill(k->pid, SIGKILL);
    return NULL;
}

/* A query on 'pg' while the killer strikes: -ECONNRESET with libpq's
 * message, soon; the connection then stays failed. */
static void killed_query(struct fut_pg *pg, struct killer *k)
{
    ASSERT_EQ(pthread_create(&k->t, NULL, kill_later, k), 0);
    int64_t t0 = fut_now_ns();
    PGresult *res = NULL;
    int rc = fut_pg_exec(pg, &res, "SELECT pg_sleep(30)", 0, NULL);
    pthread_join(k->t, NULL);
    ck_assert_msg(rc == -ECONNRESET, "query: %d (%s), status %s", rc,
                  fut_strerror(rc),
                  res ? PQresStatus(PQresultStatus(res)) : "-");
    ck_assert_msg(fut_now_ns() - t0 < 20000 * MS, "no hang");
    char msg[256];
    fut_pg_error_message(pg, msg, sizeof msg);
    ck_assert_msg(msg[0], "no message");
    if (getenv("PQ_TEST_VERBOSE"))
        printf("killed: %s\n", msg);
    ASSERT_EQ(fut_pg_status(pg), -ECONNRESET);
    ASSERT_EQ(fut_pg_exec(pg, &res, "SELECT 1", 0, NULL), -ECONNRESET);
    fut_pg_close(pg);
}

static intptr_t killed_fiber(void *arg)
{
    (void)arg;
    /* The backend killed: the server restarts its backends. */
    struct fut_pg *pg = open_pg();
    struct killer k = {.pid = fut_pg_backend_pid(pg)};
    ck_assert_int_gt(k.pid, 0);
    killed_query(pg, &k);
    /* Back after its recovery: connect again (refused meanwhile, with a
     * message), then the whole server stopped mid-query. */
    char err[256];
    pg = NULL;
    for (int i = 0; i < 200; i++) {
        if (fut_pg_open(conninfo, &pg, err, sizeof err) == 0)
            break;
        ck_assert_msg(err[0], "no message");
        fut_sleep(50 * MS);
    }
    ck_assert_msg(pg, "no connection after recovery: %s", err);
    echo_ok(pg, 3);
    struct killer k2 = {.server = 1};
    killed_query(pg, &k2);
    return 0;
}

START_TEST(killed)
{
    run_fiber(killed_fiber, NULL);
}
END_TEST

/* ------------------------------------------------------------ example */

START_TEST(example)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%s '%s' 4 100 > %s/example.out 2>&1",
             FUT_PG_EXAMPLE, conninfo, dir);
    int st = system(cmd);
    char out[400];
    snprintf(out, sizeof out, "cat %s/example.out", dir);
    if (st != 0)
        ck_assert_int_eq(system(out), 0);
    ck_assert_msg(st == 0, "pg_fibers exited %d", st);
    /* It printed every query's answer. */
    snprintf(cmd, sizeof cmd,
             "grep -c '^query' %s/example.out | grep -qx 100", dir);
    ck_assert_msg(system(cmd) == 0, "not 100 answers");
}
END_TEST

int main(void)
{
    if (access(PGBIN "/initdb", X_OK) != 0 ||
        access(PGBIN "/pg_ctl", X_OK) != 0) {
        printf("SKIP: PostgreSQL 15 is not installed (" PGBIN
               "; Debian: apt-get install postgresql)\n");
        return 77;
    }
    /* libpq writes with send(MSG_NOSIGNAL), but the example's system()
     * and a killed server's socket must never end the test. */
    signal(SIGPIPE, SIG_IGN);
    server_start();
    Suite *s = suite_create("pq");
    tcase_add_test(fut_test_tcase(s, "queries"), queries);
    tcase_add_test(fut_test_tcase(s, "conns"), conns);
    tcase_add_test(fut_test_tcase(s, "notify"), notify_case);
    tcase_add_test(fut_test_tcase(s, "dropped"), dropped);
    tcase_add_test(fut_test_tcase(s, "killed"), killed);
    tcase_add_test(fut_test_tcase(s, "example"), example);
    int rc = fut_test_run(s);
    close(watchdog_fd); /* the watchdog stops the server, cleans up */
    while (waitpid(watchdog, NULL, 0) < 0 && errno == EINTR)
        ;
    return rc;
}
