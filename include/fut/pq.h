/* SPDX-License-Identifier: MIT */
/** \file
 * fut pq: a libpq (PostgreSQL) connection driven by a fut runtime - an
 * asynchronous connect, a future per query (with text parameters) or per
 * pipelined batch of queries, completing with the server's PGresults,
 * and LISTEN/NOTIFY as a stream. The header of libfut-pq (pkg-config
 * fut-pq), a library apart from libfut: a program that does not use it
 * does not link it (nor libpq). Built only where pkg-config finds libpq
 * (FUT_PQ=AUTO|ON|OFF); docs/ecosystem.md, "libpq", has the
 * cancel-safety table.
 *
 * Use:
 * \code
 *   // a fiber:
 *   struct fut_pg *pg; char err[256];
 *   if (fut_pg_open("host=/run/postgresql dbname=app", &pg, err,
 *                   sizeof err) < 0) ...;          // err: libpq's message
 *   const char *params[] = {"42"};
 *   PGresult *res;
 *   int e = fut_pg_exec(pg, &res, "SELECT $1::int + 1", 1, params);
 *   // e == 0: res is yours (PQclear); a server error is a result whose
 *   // PQresultStatus is PGRES_FATAL_ERROR (PQresultErrorMessage)
 *   fut_pg_close(pg);
 * \endcode
 *
 * How it runs. The connection is put in non-blocking and pipeline mode
 * (PQenterPipelineMode) once connected: every query future sends its
 * queries (PQsendQueryParams) and a sync (PQpipelineSync) at its first
 * poll, so the queries of one connection are pipelined in the order of
 * their first polls, and a failed query aborts only its own batch. A
 * driver task awaits the socket (fut_fd_ready on a dup(2) of libpq's
 * socket, so libpq may close its own at any time: a failed connection, a
 * connect trying the next address) and calls PQconsumeInput, PQgetResult
 * and PQflush. Only single statements can be sent (pipeline mode uses
 * the extended protocol: no "SELECT 1; SELECT 2" in one string, no
 * COPY).
 *
 * Threads. libpq is not thread-safe on one connection: every libpq call
 * on it runs under the connection's mutex, so its futures may be polled
 * and dropped on any thread of its runtime. fut_pg_close: on a thread of
 * the connection's runtime; close it before the runtime is freed.
 *
 * Errors: FUT_ECANCELED (the connection was closed with fut_pg_close
 * before the answer came), -ECONNRESET (the connection failed: the
 * server went away; fut_pg_error_message says what libpq said),
 * -ECONNREFUSED (a connect failed; the future's 'error' says why),
 * FUT_ENOMEM, FUT_EINVAL (a NULL argument, no runtime). An error the
 * server reports for a query (a syntax error, a constraint) is a
 * PGresult with status PGRES_FATAL_ERROR: result 0, the message in
 * PQresultErrorMessage.
 */
#ifndef FUT_PQ_H
#define FUT_PQ_H

#include <libpq-fe.h>

#include "fut/core.h"
#include "fut/fd.h"
#include "fut/stream.h"

FUT_BEGIN_DECLS

/** A libpq connection driven by a fut runtime. Opaque. */
struct fut_pg;
/** private: the adapter's record of a query batch. */
struct fut_pg_rec;
/** private: the adapter's record of a LISTEN stream. */
struct fut_pg_lis;

/** fut_pg_connect: connects with 'conninfo' (PQconnectStart's string:
 * "host=/tmp port=5432 dbname=x user=y", or a URI) without blocking:
 * PQconnectPoll driven by the socket's readiness, following libpq to a
 * new socket when it tries the next address. Output: 'result' = 0 with
 * 'pg' (yours: fut_pg_close), or -ECONNREFUSED with libpq's message in
 * 'error' (the server refused, is not there, or authentication failed),
 * FUT_ENOMEM, FUT_EINVAL (no runtime with I/O on this thread, 'conninfo'
 * NULL), or fut_fd_register's error.
 * libpq resolves a host name with a blocking getaddrinfo inside
 * PQconnectStart / PQconnectPoll, which run in this future's poll: give
 * a Unix socket directory, an IP address, or 'hostaddr' (resolve names
 * first with fut_getaddrinfo_init) to keep the poll from blocking.
 * cancel-safe: a drop closes the half-made connection (PQfinish); the
 * server sees a client that went away. Thread: a runtime's (the
 * connection then belongs to the runtime that completed it). */
struct fut_pg_connect {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    char *conninfo;         /**< private: a copy */
    size_t conninfo_size;   /**< private */
    PGconn *conn;           /**< private */
    struct fut_fd *fd;      /**< private: the registered dup */
    int dupfd;              /**< private: the dup */
    int sock;               /**< private: libpq's socket */
    struct fut_fd_ready rd; /**< private */
    unsigned waiting;       /**< private */
    int polling;            /**< private: PQconnectPoll's last answer */
    int result;             /**< output */
    struct fut_pg *pg;      /**< output: yours when result is 0 */
    char error[256];        /**< output: libpq's message when it failed */
};

/** Initialises 'f' to connect with 'conninfo' (copied). Thread: any. */
FUT_EXTERN void fut_pg_connect_init(struct fut_pg_connect *f,
                                    const char *conninfo);

/** Closes the connection (PQfinish): every query still pending completes
 * with FUT_ECANCELED, every LISTEN stream ends, the driver task ends.
 * 'pg' must not be used again; futures and streams over it stay valid
 * until they are dropped (they hold its memory). NULL: nothing. Thread:
 * one of the connection's runtime. */
FUT_EXTERN void fut_pg_close(struct fut_pg *pg);

/** 0 while the connection is up; once it ended, why: FUT_ECANCELED
 * (fut_pg_close) or -ECONNRESET. Thread: any. */
FUT_EXTERN int fut_pg_status(struct fut_pg *pg);

/** Copies libpq's last connection-level message (PQerrorMessage, the
 * trailing newline cut) into 'buf' ('size' bytes, always terminated);
 * returns 'buf'. An empty string when libpq has none. Thread: any. */
FUT_EXTERN char *fut_pg_error_message(struct fut_pg *pg, char *buf,
                                      size_t size);

/** The backend's process id (PQbackendPID), 0 once closed. */
FUT_EXTERN int fut_pg_backend_pid(struct fut_pg *pg);

/** Server-side cancels the adapter sent (PQcancel through the blocking
 * pool, after a query was dropped in flight) since the process started,
 * all connections: for tests and statistics. Thread: any. */
FUT_EXTERN long fut_pg_cancels_sent(void);

/** One statement of a batch: 'sql' with 'nparams' text parameters
 * ('params[i]' NULL is SQL NULL; '$1' ... in 'sql'). */
struct fut_pg_stmt {
    const char *sql;           /**< the statement */
    int nparams;               /**< the number of parameters */
    const char *const *params; /**< their text values (NULL: NULL) */
};

/** fut_pg_query: one statement, or a batch of them sent in one round
 * trip (pipeline mode: every statement, then one sync). The statements
 * and parameters are copied at init; they are given to libpq at the
 * first poll. Output: 'result' = 0 with one PGresult per statement
 * (yours: PQclear each): in 'res' for fut_pg_query_init, in the caller's
 * array for fut_pg_pipeline_init. A statement the server rejects has a
 * PGRES_FATAL_ERROR result (PQresultErrorMessage), and the statements
 * after it in the same batch PGRES_PIPELINE_ABORTED (they did not run;
 * the batch is one implicit transaction unless it has BEGIN/COMMIT). Or
 * a negative code (see the top) and no result.
 * cancel-safe for the connection: a drop before the first poll sends
 * nothing; a drop after it leaves the batch in flight, and the adapter
 * reads and frees its results when they come, so the next query on the
 * connection gets its own answer. When the dropped batch is the only one
 * in flight, the adapter also asks the server to stop it (PQcancel, run
 * on the blocking pool because it blocks), and holds queries given
 * meanwhile until the dropped batch's results were drained and the
 * cancel request delivered, so that the cancel can only hit the dropped
 * batch. Whether the dropped statements ran is then unknown (loses-data
 * for statements with effects you must confirm). docs/ecosystem.md,
 * "libpq", walks the case. */
struct fut_pg_query {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    struct fut_pg *pg;      /**< private */
    struct fut_pg_rec *rec; /**< private */
    PGresult **out;         /**< private: the batch's result array */
    int sent;               /**< private */
    int result;             /**< output: 0 or a negative code */
    PGresult *res;          /**< output: fut_pg_query_init's result */
};

/** Initialises 'f' to run 'sql' with 'nparams' text parameters on 'pg'.
 * A NULL 'pg' or 'sql', or an allocation failure, completes it with
 * FUT_EINVAL / FUT_ENOMEM at the first poll. Thread: any. */
FUT_EXTERN void fut_pg_query_init(struct fut_pg_query *f, struct fut_pg *pg,
                                  const char *sql, int nparams,
                                  const char *const *params);

/** Initialises 'f' to run the 'n' statements 'stmts' (n >= 1) as one
 * pipelined batch; at READY with result 0, 'results[i]' is statement
 * i's PGresult (yours). 'results' must stay valid until 'f' is READY or
 * dropped; it is written only by the poll that returns READY. Thread:
 * any. */
FUT_EXTERN void fut_pg_pipeline_init(struct fut_pg_query *f,
                                     struct fut_pg *pg, int n,
                                     const struct fut_pg_stmt *stmts,
                                     PGresult **results);

/** An item of a LISTEN stream. */
struct fut_pg_notification {
    /** libpq's notification: relname (the channel), be_pid (the
     * notifying backend), extra (the payload). Yours: PQfreemem. */
    PGnotify *notify;
    /** notifications dropped just before this one because the queue was
     * full (see fut_pg_listen) */
    unsigned long lost;
};

/** fut_pg_listen: LISTEN on one channel, as a stream of struct
 * fut_pg_notification (C15). The LISTEN is sent at the first poll (the
 * channel name exactly as given: it is quoted); notifications for the
 * channel are queued in the adapter until the stream is polled. A query
 * given on the same connection after that first poll completes after
 * the LISTEN took effect. The queue holds at most 'max_queued'
 * notifications: a consumer that falls behind loses the newest ones
 * beyond it, and the next item it gets says how many ('lost';
 * 'lost_total' counts them all). The stream ends (FUT_STREAM_END) when
 * the connection ends: 'result' then says why (FUT_ECANCELED:
 * fut_pg_close; -ECONNRESET). One stream per channel and connection: a
 * second one ends at once with -EEXIST.
 * Dropping the stream sends UNLISTEN for the channel and frees the
 * queued notifications (loses-data: they go with the stream). */
struct fut_pg_listen {
    struct fut_stream base;   /**< the stream header */
    struct fut_pg *pg;        /**< private */
    struct fut_pg_lis *lis;   /**< private: set once listening */
    int result;               /**< read-only: why it ended (after END) */
    unsigned long lost_total; /**< read-only: notifications lost so far */
};

/** Initialises 's' to LISTEN on 'channel' (copied) on 'pg', queueing at
 * most 'max_queued' notifications (0: 1024). A NULL 'pg' or 'channel',
 * or an allocation failure, ends it at the first poll with FUT_EINVAL /
 * FUT_ENOMEM. Thread: any. */
FUT_EXTERN void fut_pg_listen_init(struct fut_pg_listen *s, struct fut_pg *pg,
                                   const char *channel, size_t max_queued);

/* ------------------------------------------------------------ fibers */

/** Connects from a fiber: 0 with '*pg' (yours: fut_pg_close), or a
 * negative code (fut_pg_connect's; FUT_ECANCELED when the fiber is
 * cancelled) with libpq's message in 'err' ('errsize' bytes; may be
 * NULL). Aborts in debug builds / returns FUT_EINVAL outside a fiber. */
#define fut_pg_open(conninfo, pg, err, errsize)                              \
    fut_pg_open_at(__FILE__, __LINE__, (conninfo), (pg), (err), (errsize))
/** The function behind fut_pg_open(), which passes its call site. */
FUT_EXTERN int fut_pg_open_at(const char *file, int line,
                              const char *conninfo, struct fut_pg **pg,
                              char *err, size_t errsize);

/** Runs one statement from a fiber: 0 with '*res' (yours: PQclear; check
 * PQresultStatus), or a negative code (see the top; FUT_ECANCELED also
 * when the fiber is cancelled: the query's drop, above, says what that
 * does). */
#define fut_pg_exec(pg, res, sql, nparams, params)                           \
    fut_pg_exec_at(__FILE__, __LINE__, (pg), (res), (sql), (nparams),        \
                   (params))
/** The function behind fut_pg_exec(), which passes its call site. */
FUT_EXTERN int fut_pg_exec_at(const char *file, int line, struct fut_pg *pg,
                              PGresult **res, const char *sql, int nparams,
                              const char *const *params);

/** Runs 'n' statements as one pipelined batch from a fiber: 0 with
 * 'results[0..n-1]' (yours), or a negative code and no result. */
#define fut_pg_exec_batch(pg, n, stmts, results)                             \
    fut_pg_exec_batch_at(__FILE__, __LINE__, (pg), (n), (stmts), (results))
/** The function behind fut_pg_exec_batch(), which passes its call site. */
FUT_EXTERN int fut_pg_exec_batch_at(const char *file, int line,
                                    struct fut_pg *pg, int n,
                                    const struct fut_pg_stmt *stmts,
                                    PGresult **results);

/** The next notification of a LISTEN stream from a fiber: 0 with '*n', 1
 * when the stream ended (s->result says why), FUT_ECANCELED when the
 * fiber is cancelled (nothing is lost). */
#define fut_pg_listen_next(s, n)                                             \
    fut_pg_listen_next_at(__FILE__, __LINE__, (s), (n))
/** The function behind fut_pg_listen_next(), which passes its call site. */
FUT_EXTERN int fut_pg_listen_next_at(const char *file, int line,
                                     struct fut_pg_listen *s,
                                     struct fut_pg_notification *n);

FUT_END_DECLS

#endif /* FUT_PQ_H */
