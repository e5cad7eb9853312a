/* SPDX-License-Identifier: MIT */
/* libfut-pq: a libpq connection driven by a fut runtime
 * (include/fut/pq.h): the connection's record, its driver task and the
 * query future; the connect future is in connect.c, the LISTEN stream in
 * listen.c. The connection's rules open internal.h. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* fut_pg_cancels_sent's count; a leaf lock (adapters use the public
 * API only, and so no atomics of libfut's). */
static pthread_mutex_t cancels_lock = PTHREAD_MUTEX_INITIALIZER;
static long cancels_sent;

long fut_pg_cancels_sent(void)
{
    pthread_mutex_lock(&cancels_lock);
    long n = cancels_sent;
    pthread_mutex_unlock(&cancels_lock);
    return n;
}

void fut__pg_copy_msg(char *dst, size_t size, const char *src)
{
    if (!size)
        return;
    snprintf(dst, size, "%s", src ? src : "");
    size_t l = strlen(dst);
    while (l > 0 && (dst[l - 1] == '\n' || dst[l - 1] == '\r'))
        dst[--l] = 0;
}

char *fut__pg_dupstr(const char *s, size_t *size)
{
    *size = strlen(s) + 1;
    char *p = fut_mem_alloc(*size);
    if (p)
        memcpy(p, s, *size);
    return p;
}

void fut__pg_ref(struct fut_pg *pg)
{
    pthread_mutex_lock(&pg->lock);
    pg->refs++;
    pthread_mutex_unlock(&pg->lock);
}

void fut__pg_unref(struct fut_pg *pg)
{
    pthread_mutex_lock(&pg->lock);
    int n = --pg->refs;
    pthread_mutex_unlock(&pg->lock);
    if (n == 0) {
        pthread_mutex_destroy(&pg->lock);
        fut_mem_free(pg, sizeof *pg);
    }
}

/* --------------------------------------------------------------- records */

/* A record with copies of 'n' statements, in one block. */
struct fut_pg_rec *fut__pg_rec_new(int n, const struct fut_pg_stmt *st)
{
    size_t size = sizeof(struct fut_pg_rec) +
                  (size_t)n * (sizeof(PGresult *) + sizeof *st);
    for (int i = 0; i < n; i++) {
        if (!st[i].sql || st[i].nparams < 0 ||
            (st[i].nparams > 0 && !st[i].params))
            return NULL;
        size += strlen(st[i].sql) + 1;
        size += (size_t)st[i].nparams * sizeof(char *);
        for (int j = 0; j < st[i].nparams; j++)
            if (st[i].params[j])
                size += strlen(st[i].params[j]) + 1;
    }
    struct fut_pg_rec *r = fut_mem_alloc(size);
    if (!r)
        return NULL;
    memset(r, 0, size);
    r->size = size;
    r->n = n;
    r->res = (PGresult **)(r + 1);
    r->st = (struct fut_pg_stmt *)(r->res + n);
    /* The parameter pointer arrays, then the strings. */
    const char **pv = (const char **)(r->st + n);
    for (int i = 0; i < n; i++)
        pv += st[i].nparams;
    char *s = (char *)pv;
    pv = (const char **)(r->st + n);
    for (int i = 0; i < n; i++) {
        size_t l = strlen(st[i].sql) + 1;
        memcpy(s, st[i].sql, l);
        r->st[i].sql = s;
        s += l;
        r->st[i].nparams = st[i].nparams;
        r->st[i].params = pv;
        for (int j = 0; j < st[i].nparams; j++) {
            if (!st[i].params[j]) {
                pv[j] = NULL;
                continue;
            }
            l = strlen(st[i].params[j]) + 1;
            memcpy(s, st[i].params[j], l);
            pv[j] = s;
            s += l;
        }
        pv += st[i].nparams;
    }
    r->result = 1; /* not yet */
    return r;
}

void fut__pg_rec_free(struct fut_pg_rec *r)
{
    for (int i = 0; i < r->n; i++)
        if (r->res[i])
            PQclear(r->res[i]);
    fut_waker_drop(&r->waker);
    fut_mem_free(r, r->size);
}

/* A record ends (under the lock, off every list): freed when nobody
 * waits for it, else done and its future woken. */
static void rec_end(struct fut_pg *pg, struct fut_pg_rec *r, int code)
{
    r->where = 0;
    if (pg->hold == r)
        pg->hold = NULL;
    if (r->abandoned || r->internal) {
        fut__pg_rec_free(r);
        return;
    }
    r->done = 1;
    r->result = code;
    if (fut_waker_is_set(&r->waker))
        fut_waker_wake(&r->waker);
}

void fut__pg_push(struct fut_pg_rec **head, struct fut_pg_rec **tail,
                  struct fut_pg_rec *r)
{
    r->next = NULL;
    if (*tail)
        (*tail)->next = r;
    else
        *head = r;
    *tail = r;
}

static struct fut_pg_rec *pop(struct fut_pg_rec **head,
                              struct fut_pg_rec **tail)
{
    struct fut_pg_rec *r = *head;
    if (r) {
        *head = r->next;
        if (!*head)
            *tail = NULL;
        r->next = NULL;
    }
    return r;
}

static void unlink_rec(struct fut_pg_rec **head, struct fut_pg_rec **tail,
                       struct fut_pg_rec *r)
{
    struct fut_pg_rec *prev = NULL;
    for (struct fut_pg_rec *p = *head; p; prev = p, p = p->next) {
        if (p != r)
            continue;
        if (prev)
            prev->next = p->next;
        else
            *head = p->next;
        if (*tail == p)
            *tail = prev;
        p->next = NULL;
        return;
    }
}

/* ------------------------------------------------------------ listeners */

void fut__pg_lis_free_queue(struct fut_pg_lis *l)
{
    while (l->head) {
        struct note *n = l->head;
        l->head = n->next;
        PQfreemem(n->n);
        fut_mem_free(n, sizeof *n);
    }
    l->tail = NULL;
    l->queued = 0;
}

static void lis_end(struct fut_pg *pg, struct fut_pg_lis *l, int code)
{
    struct fut_pg_lis **p = &pg->lis;
    while (*p && *p != l)
        p = &(*p)->next;
    if (*p)
        *p = l->next;
    l->linked = 0;
    l->done = 1;
    l->result = code;
    if (fut_waker_is_set(&l->waker))
        fut_waker_wake_by_ref(&l->waker);
}

/* Hands libpq's notifications to their streams (under the lock). */
static void deliver_notes(struct fut_pg *pg)
{
    PGnotify *n;
    while ((n = PQnotifies(pg->conn))) {
        struct fut_pg_lis *l = pg->lis;
        while (l && strcmp(l->channel, n->relname) != 0)
            l = l->next;
        struct note *q = NULL;
        if (l && l->queued < l->max_queued)
            q = fut_mem_alloc(sizeof *q);
        if (!q) {
            if (l) {
                l->lost++;
                l->lost_total++;
            }
            PQfreemem(n);
            continue;
        }
        q->next = NULL;
        q->n = n;
        q->lost = l->lost;
        l->lost = 0;
        if (l->tail)
            l->tail->next = q;
        else
            l->head = q;
        l->tail = q;
        l->queued++;
        if (fut_waker_is_set(&l->waker))
            fut_waker_wake_by_ref(&l->waker);
    }
}

/* ----------------------------------------------------- the connection */

void fut__pg_wake_driver(struct fut_pg *pg)
{
    if (fut_waker_is_set(&pg->driver))
        fut_waker_wake_by_ref(&pg->driver);
}

/* The connection ended (under the lock): every record and stream learns
 * 'code', the socket is deregistered and the dup closed. */
static void pg_end(struct fut_pg *pg, int code)
{
    if (pg->conn && !pg->status && code != FUT_ECANCELED)
        fut__pg_copy_msg(pg->errmsg, sizeof pg->errmsg,
                         PQerrorMessage(pg->conn));
    if (!pg->status)
        pg->status = code;
    struct fut_pg_rec *r;
    while ((r = pop(&pg->fly, &pg->fly_tail)))
        rec_end(pg, r, pg->status);
    while ((r = pop(&pg->sendq, &pg->sendq_tail)))
        rec_end(pg, r, pg->status);
    while (pg->lis)
        lis_end(pg, pg->lis, pg->status);
    if (pg->fd) {
        fut_fd_deregister(pg->fd);
        pg->fd = NULL;
    }
    if (pg->dupfd >= 0) {
        close(pg->dupfd);
        pg->dupfd = -1;
    }
    pg->flushing = 0;
    fut__pg_wake_driver(pg);
}

static void pg_flush(struct fut_pg *pg)
{
    int f = PQflush(pg->conn);
    if (f < 0) {
        pg_end(pg, -ECONNRESET);
        return;
    }
    if (f > 0 && !pg->flushing) {
        pg->flushing = 1;
        fut__pg_wake_driver(pg);
    }
    pg->flushing = f > 0;
}

/* Gives 'sendq' to libpq unless a cancel holds it (under the lock). */
void fut__pg_send_queued(struct fut_pg *pg)
{
    if (!pg->fd || pg->cancel || pg->hold || !pg->sendq)
        return;
    struct fut_pg_rec *r;
    while ((r = pop(&pg->sendq, &pg->sendq_tail))) {
        int ok = 1;
        for (int i = 0; ok && i < r->n; i++)
            ok = PQsendQueryParams(pg->conn, r->st[i].sql, r->st[i].nparams,
                                   NULL, r->st[i].params, NULL, NULL, 0);
        if (ok)
            ok = PQpipelineSync(pg->conn);
        if (!ok) {
            /* libpq refused: the connection is gone (or the record
             * cannot be sent - fail it with the connection). */
            fut__pg_push(&pg->fly, &pg->fly_tail, r);
            r->where = 2;
            pg_end(pg, -ECONNRESET);
            return;
        }
        r->where = 2;
        fut__pg_push(&pg->fly, &pg->fly_tail, r);
    }
    pg_flush(pg);
}

/* Reads what the server sent and hands it out (under the lock). */
static void pg_input(struct fut_pg *pg)
{
    if (!PQconsumeInput(pg->conn)) {
        pg_end(pg, -ECONNRESET);
        return;
    }
    deliver_notes(pg);
    while (pg->fly && !PQisBusy(pg->conn)) {
        struct fut_pg_rec *r = pg->fly;
        PGresult *res = PQgetResult(pg->conn);
        if (!res) {
            r->cur++; /* the end of a statement's results */
            continue;
        }
        if (PQresultStatus(res) == PGRES_PIPELINE_SYNC) {
            PQclear(res);
            pop(&pg->fly, &pg->fly_tail);
            rec_end(pg, r, 0);
            continue;
        }
        if (r->cur < r->n && !r->res[r->cur])
            r->res[r->cur] = res;
        else
            PQclear(res); /* a statement's second result: not kept */
    }
    deliver_notes(pg);
    if (PQstatus(pg->conn) == CONNECTION_BAD)
        pg_end(pg, -ECONNRESET);
}

void fut_pg_close(struct fut_pg *pg)
{
    if (!pg)
        return;
    pthread_mutex_lock(&pg->lock);
    if (pg->conn) {
        pg_end(pg, FUT_ECANCELED);
        PQfinish(pg->conn);
        pg->conn = NULL;
    }
    pthread_mutex_unlock(&pg->lock);
    fut__pg_unref(pg);
}

int fut_pg_status(struct fut_pg *pg)
{
    if (!pg)
        return FUT_EINVAL;
    pthread_mutex_lock(&pg->lock);
    int s = pg->status;
    pthread_mutex_unlock(&pg->lock);
    return s;
}

char *fut_pg_error_message(struct fut_pg *pg, char *buf, size_t size)
{
    if (!buf || !size)
        return buf;
    buf[0] = 0;
    if (!pg)
        return buf;
    pthread_mutex_lock(&pg->lock);
    if (pg->status)
        fut__pg_copy_msg(buf, size, pg->errmsg);
    else if (pg->conn)
        fut__pg_copy_msg(buf, size, PQerrorMessage(pg->conn));
    pthread_mutex_unlock(&pg->lock);
    return buf;
}

int fut_pg_backend_pid(struct fut_pg *pg)
{
    if (!pg)
        return 0;
    pthread_mutex_lock(&pg->lock);
    int pid = pg->conn ? PQbackendPID(pg->conn) : 0;
    pthread_mutex_unlock(&pg->lock);
    return pid;
}

/* --------------------------------------------------------------- driver */

static intptr_t cancel_job(void *arg)
{
    char err[256];
    int ok = PQcancel(arg, err, sizeof err);
    PQfreeCancel(arg);
    if (ok) {
        pthread_mutex_lock(&cancels_lock);
        cancels_sent++;
        pthread_mutex_unlock(&cancels_lock);
    }
    return ok;
}

/* The driver task's future. */
struct driver {
    struct fut_future base;
    struct fut_pg *pg;      /* NULL once it let go */
    struct fut_fd_ready rd; /* the wait, while 'waiting' */
    unsigned waiting;
    struct fut_blocking job; /* PQcancel, while 'canceling' */
    int canceling;
};

static void driver_stop_wait(struct driver *d)
{
    if (d->waiting) {
        fut_drop(&d->rd.base);
        d->waiting = 0;
    }
}

static void driver_release(struct driver *d)
{
    driver_stop_wait(d);
    if (d->canceling) {
        fut_drop(&d->job.base); /* a running PQcancel finishes alone */
        d->canceling = 0;
    }
    if (!d->pg)
        return;
    pthread_mutex_lock(&d->pg->lock);
    fut_waker_drop(&d->pg->driver);
    pthread_mutex_unlock(&d->pg->lock);
    fut__pg_unref(d->pg);
    d->pg = NULL;
}

/* Clears what poll(2) says would block (under the lock; a failed poll
 * keeps the readiness: libpq will see for itself). */
static void driver_clear(struct fut_pg *pg, unsigned ev, uint32_t tick)
{
    fut_fd_clear_if_blocked(pg->fd, ev, tick);
}

static void cancel_discard(void *arg, intptr_t v)
{
    (void)arg;
    (void)v; /* the job freed its PGcancel */
}

static int driver_poll(struct fut_future *f, struct fut_context *cx)
{
    struct driver *d = (struct driver *)f;
    struct fut_pg *pg = d->pg;
    for (;;) {
        pthread_mutex_lock(&pg->lock);
        if (!pg->fd) {
            pg->cancel = 0;
            pthread_mutex_unlock(&pg->lock);
            /* A PQcancel on its way is let finish (it frees its
             * PGcancel; dropped before it started, it would not). */
            if (d->canceling && fut_poll(&d->job.base, cx) == FUT_PENDING)
                return FUT_PENDING;
            driver_release(d);
            return FUT_READY;
        }
        if (pg->cancel == 1 && !d->canceling) {
            PGcancel *c = PQgetCancel(pg->conn);
            if (c) {
                fut_spawn_blocking_init(&d->job, cancel_job, c);
                fut_blocking_set_discard(&d->job, cancel_discard);
                d->canceling = 1;
                pg->cancel = 2;
            } else {
                pg->cancel = 0;
            }
        }
        fut__pg_send_queued(pg);
        if (!pg->fd) {
            pthread_mutex_unlock(&pg->lock);
            continue;
        }
        unsigned want =
            FUT_FD_READABLE | (pg->flushing ? FUT_FD_WRITABLE : 0);
        struct fut_fd *h = pg->fd;
        fut_waker_set(&pg->driver, &cx->waker);
        pthread_mutex_unlock(&pg->lock);
        if (d->canceling) {
            if (fut_poll(&d->job.base, cx) == FUT_READY) {
                fut_drop(&d->job.base);
                d->canceling = 0;
                pthread_mutex_lock(&pg->lock);
                pg->cancel = 0;
                pthread_mutex_unlock(&pg->lock);
                continue;
            }
        }
        if (d->waiting != want)
            driver_stop_wait(d);
        if (!d->waiting) {
            fut_fd_ready_init(&d->rd, h, want);
            d->waiting = want;
        }
        if (fut_poll(&d->rd.base, cx) == FUT_PENDING)
            return FUT_PENDING;
        int ev = d->rd.result;
        uint32_t tick = d->rd.tick;
        driver_stop_wait(d);
        pthread_mutex_lock(&pg->lock);
        if (pg->fd != h) {
            /* ended meanwhile */
        } else if (ev < 0) {
            pg_end(pg, ev == FUT_ECANCELED ? -ECONNRESET : ev);
        } else {
            if (ev & FUT_FD_WRITABLE)
                pg_flush(pg);
            if (pg->fd && (ev & FUT_FD_READABLE))
                pg_input(pg);
            if (pg->fd)
                driver_clear(pg, (unsigned)ev, tick);
        }
        pthread_mutex_unlock(&pg->lock);
        /* Short polls (C6): a big answer is read a budget at a time. */
        if (!fut_coop_proceed(cx))
            return FUT_PENDING;
    }
}

static void driver_drop(struct fut_future *f)
{
    driver_release((struct driver *)f);
}

static const struct fut_future_vtable driver_vt = {driver_poll, driver_drop,
                                                   "fut_pg_driver", 0};

/* The connection record over a connected 'conn' (in pipeline mode) and
 * the socket's dup 'dupfd' registered as 'fd', and its driver task: 0
 * and '*out' (the record owns conn, fd and dupfd from then on), or a
 * negative code (the caller keeps them). */
int fut__pg_start(PGconn *conn, struct fut_fd *fd, int dupfd,
                  struct fut_pg **out)
{
    struct fut_pg *pg = fut_mem_alloc(sizeof *pg);
    if (!pg)
        return FUT_ENOMEM;
    memset(pg, 0, sizeof *pg);
    pthread_mutex_init(&pg->lock, NULL);
    pg->conn = conn;
    pg->fd = fd;
    pg->dupfd = dupfd;
    pg->refs = 2; /* the user, the driver */
    struct driver d;
    memset(&d, 0, sizeof d);
    fut_future_init(&d.base, &driver_vt);
    d.pg = pg;
    int rc = fut_spawn(NULL, &d, sizeof d, NULL);
    if (rc < 0) {
        pthread_mutex_destroy(&pg->lock);
        fut_mem_free(pg, sizeof *pg);
        return rc;
    }
    *out = pg;
    return 0;
}

/* ---------------------------------------------------------------- query */

static int query_poll(struct fut_future *base, struct fut_context *cx)
{
    struct fut_pg_query *f = (struct fut_pg_query *)base;
    if (!f->pg || !f->rec) {
        if (!f->result)
            f->result = FUT_EINVAL;
        return FUT_READY;
    }
    struct fut_pg *pg = f->pg;
    struct fut_pg_rec *r = f->rec;
    pthread_mutex_lock(&pg->lock);
    if (!f->sent) {
        f->sent = 1;
        fut_waker_set(&r->waker, &cx->waker);
        if (!pg->conn || pg->status) {
            int s = pg->status ? pg->status : FUT_ECANCELED;
            pthread_mutex_unlock(&pg->lock);
            f->rec = NULL;
            fut__pg_rec_free(r);
            f->result = s;
            return FUT_READY;
        }
        fut__pg_push(&pg->sendq, &pg->sendq_tail, r);
        r->where = 1;
        fut__pg_send_queued(pg);
        pthread_mutex_unlock(&pg->lock);
        return FUT_PENDING;
    }
    if (!r->done || !fut_coop_proceed(cx)) {
        fut_waker_set(&r->waker, &cx->waker);
        pthread_mutex_unlock(&pg->lock);
        return FUT_PENDING;
    }
    pthread_mutex_unlock(&pg->lock);
    f->result = r->result;
    if (r->result == 0) {
        PGresult **out = f->out ? f->out : &f->res;
        for (int i = 0; i < r->n; i++) {
            out[i] = r->res[i];
            r->res[i] = NULL;
        }
    }
    f->rec = NULL;
    fut__pg_rec_free(r);
    return FUT_READY;
}

static void query_drop(struct fut_future *base)
{
    struct fut_pg_query *f = (struct fut_pg_query *)base;
    struct fut_pg *pg = f->pg;
    struct fut_pg_rec *r = f->rec;
    f->rec = NULL;
    if (!pg) {
        if (r)
            fut__pg_rec_free(r);
        return;
    }
    if (r) {
        pthread_mutex_lock(&pg->lock);
        if (r->where == 1) {
            unlink_rec(&pg->sendq, &pg->sendq_tail, r);
            fut__pg_rec_free(r);
        } else if (r->where == 2) {
            /* In flight: drained by the driver; cancelled on the
             * server when it is the only batch there (the rules). */
            r->abandoned = 1;
            fut_waker_drop(&r->waker);
            if (pg->fly == r && !r->next && !pg->cancel && !pg->hold &&
                pg->fd) {
                pg->hold = r;
                pg->cancel = 1;
                fut__pg_wake_driver(pg);
            }
        } else {
            fut__pg_rec_free(r);
        }
        pthread_mutex_unlock(&pg->lock);
    }
    f->pg = NULL;
    fut__pg_unref(pg);
}

static const struct fut_future_vtable query_vt = {query_poll, query_drop,
                                                  "fut_pg_query", 0};

void fut_pg_pipeline_init(struct fut_pg_query *f, struct fut_pg *pg, int n,
                          const struct fut_pg_stmt *stmts, PGresult **results)
{
    fut_future_init(&f->base, &query_vt);
    f->pg = pg;
    f->rec = NULL;
    f->out = results;
    f->sent = 0;
    f->res = NULL;
    f->result = 0;
    if (!pg || n < 1 || !stmts) {
        f->result = FUT_EINVAL;
    } else {
        f->rec = fut__pg_rec_new(n, stmts);
        if (!f->rec)
            f->result = FUT_ENOMEM; /* or a NULL statement: see below */
        for (int i = 0; !f->rec && i < n; i++)
            if (!stmts[i].sql || stmts[i].nparams < 0 ||
                (stmts[i].nparams > 0 && !stmts[i].params))
                f->result = FUT_EINVAL;
    }
    if (pg)
        fut__pg_ref(pg);
}

void fut_pg_query_init(struct fut_pg_query *f, struct fut_pg *pg,
                       const char *sql, int nparams,
                       const char *const *params)
{
    struct fut_pg_stmt st = {sql, nparams, params};
    fut_pg_pipeline_init(f, pg, 1, &st, NULL);
}
