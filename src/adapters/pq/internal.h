/* SPDX-License-Identifier: MIT */
/* libfut-pq's internal header: the connection's record, shared by
 * pq.c (the record, its driver task, the query future), connect.c (the
 * connect future) and listen.c (the LISTEN stream). The adapter sits on
 * fut's public API only: fut_fd_register / fut_fd_ready for the socket,
 * fut_spawn for the driver, fut_spawn_blocking_init for PQcancel.
 * Names here are fut__pg_*: the version script exports fut_pg_* only.
 *
 * Rules (the connection's state machine; docs/ecosystem.md, "libpq"):
 *   - One mutex per connection, 'lock', guards every field of struct
 *     fut_pg, of its records and listeners, and every libpq call on the
 *     connection. It is the only lock but the leaf 'cancels_lock'.
 *   - The socket fut watches is a dup(2) of libpq's, owned by the
 *     adapter: libpq closes its own socket whenever it likes (a failed
 *     read drops the connection inside PQconsumeInput; a connect moving
 *     to the next address), and the dup keeps the file open until the
 *     adapter has deregistered it (fd.h: close only after deregister).
 *   - A record (struct fut_pg_rec) is one batch: its statements, then a
 *     sync. It sits on 'sendq' (given by a future, not yet to libpq)
 *     then on 'fly' (given to libpq, in order: results come back in that
 *     order) until the sync's PGRES_PIPELINE_SYNC result. The future
 *     points at it; whoever lets go last frees it, under the lock: the
 *     future's drop frees a record that is done or still on 'sendq', and
 *     marks one on 'fly' 'abandoned', which the driver frees with its
 *     results when its sync comes (the drain). Nothing is ever written
 *     to a future's memory but by its own poll.
 *   - Cancel: a record dropped on 'fly' while it is the only one there
 *     gets a server-side cancel: 'cancel' goes 1 (wanted), the driver
 *     takes a PGcancel and runs PQcancel on the blocking pool ('cancel'
 *     2), and back to 0 when it returned. 'hold' points at the record
 *     being cancelled until its sync came. While 'cancel' or 'hold' is
 *     set, 'sendq' is not given to libpq: a cancel can only reach the
 *     backend while it runs the dropped batch, or idle (where the server
 *     ignores it), never a query given after the drop.
 *   - The driver awaits READABLE always and WRITABLE while PQflush left
 *     data ('flushing'); it clears a readiness only when poll(2) with
 *     timeout 0 says the fd would block (libpq does not say it saw
 *     EAGAIN).
 *   - The connection's memory is counted by 'refs': the user (until
 *     fut_pg_close), the driver task, every future and stream from its
 *     init to its drop.
 */
#ifndef FUT_ADAPTERS_PQ_INTERNAL_H
#define FUT_ADAPTERS_PQ_INTERNAL_H

#include <pthread.h>
#include <stddef.h>

#include "fut.h"
#include "fut/pq.h"

struct fut_pg_rec {
    struct fut_pg_rec *next; /* on 'sendq' or 'fly' */
    size_t size;             /* of this block */
    int n;                   /* statements */
    int cur;                 /* the statement whose results come now */
    int where;               /* 0 none, 1 sendq, 2 fly */
    int abandoned, done, result;
    int internal; /* the adapter's own (LISTEN/UNLISTEN): nobody waits */
    struct fut_waker waker;
    PGresult **res;         /* n results */
    struct fut_pg_stmt *st; /* n statements, copied into this block */
};

struct note {
    struct note *next;
    PGnotify *n;
    unsigned long lost;
};

struct fut_pg_lis {
    struct fut_pg_lis *next; /* on the connection's list while linked */
    int linked, done, result;
    char *channel;
    size_t chsize;
    struct note *head, *tail;
    size_t queued, max_queued;
    unsigned long lost, lost_total;
    struct fut_waker waker;
};

struct fut_pg {
    pthread_mutex_t lock;    /* see the rules at the top */
    PGconn *conn;            /* NULL once closed */
    struct fut_fd *fd;       /* the dup's registration; NULL once ended */
    int dupfd;               /* the dup, -1 once closed */
    int status;              /* 0, or why it ended */
    int refs;                /* holders of this memory */
    int flushing;            /* PQflush left data */
    int cancel;              /* 0, 1 wanted, 2 running */
    struct fut_pg_rec *hold; /* being cancelled: sendq waits */
    struct fut_waker driver; /* the driver task */
    struct fut_pg_rec *sendq, *sendq_tail, *fly, *fly_tail;
    struct fut_pg_lis *lis;
    char errmsg[256];
};

/* Helpers (pq.c). */
void fut__pg_copy_msg(char *dst, size_t size, const char *src);
char *fut__pg_dupstr(const char *s, size_t *size);
void fut__pg_ref(struct fut_pg *pg);
void fut__pg_unref(struct fut_pg *pg);

/* Records (pq.c): a record with copies of 'n' statements, in one block
 * (NULL: no memory or a bad statement); freed with its results; pushed
 * at a list's tail (under the lock). */
struct fut_pg_rec *fut__pg_rec_new(int n, const struct fut_pg_stmt *st);
void fut__pg_rec_free(struct fut_pg_rec *r);
void fut__pg_push(struct fut_pg_rec **head, struct fut_pg_rec **tail,
                  struct fut_pg_rec *r);
void fut__pg_lis_free_queue(struct fut_pg_lis *l);

/* The connection (pq.c, under the lock): wake its driver; give 'sendq'
 * to libpq unless a cancel holds it. */
void fut__pg_wake_driver(struct fut_pg *pg);
void fut__pg_send_queued(struct fut_pg *pg);

int fut__pg_start(PGconn *conn, struct fut_fd *fd, int dupfd,
                  struct fut_pg **out);

#endif
