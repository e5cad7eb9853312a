/* SPDX-License-Identifier: MIT */
/* libfut-hiredis: a hiredis redisAsyncContext driven by a fut runtime
 * (include/fut/hiredis.h). The context's record and its driver task, the
 * command future, the subscription stream. It sits on fut's public API
 * only: fut_fd_register and fut_fd_ready for the socket, fut_spawn for
 * the driver.
 *
 * Rules (the context's state machine; docs/ecosystem.md, "hiredis"):
 *   - One mutex per context, 'lock', guards every field of struct
 *     fut_redis and of its records, and every hiredis call on the
 *     context: the driver's HandleRead/HandleWrite, the command and
 *     subscription futures' redisAsync*Command, fut_redis_close's
 *     redisAsyncFree. hiredis calls back (ev hooks, reply callbacks)
 *     only from inside those calls, so the callbacks run with 'lock'
 *     held and never take it. It is the only lock but the leaf
 *     'live_lock'.
 *   - 'want' is what hiredis asked for through ev.addRead/delRead/
 *     addWrite/delWrite. A hook that adds a bit wakes the driver
 *     (its waker is set under 'lock' before the driver reads 'want' and
 *     unlocks to await, so an add that comes after that read always
 *     finds the waker: no lost wakeup).
 *   - The driver clears a readiness (fut_fd_clear_ready with the wait's
 *     tick) only when poll(2), timeout 0, after hiredis's one read or
 *     write says the fd would block: hiredis does one read() per
 *     HandleRead and cannot tell us it saw EAGAIN. Otherwise the cached
 *     readiness makes the next wait return at once and hiredis reads
 *     again. An edge newer than the tick survives the clear.
 *   - 'ac' goes NULL in ev.cleanup, which hiredis calls from
 *     redisAsyncFree (fut_redis_close, or its own free after an error or
 *     EOF) after it completed every pending callback and before it
 *     closes the fd: the cleanup deregisters the fd there, sets
 *     'status', and wakes the driver, which then ends.
 *   - A record (struct fut_redis_rec) is the privdata hiredis holds for a
 *     command or a subscription; the future or stream only points at
 *     it. 'refs' counts its holders: the future/stream (until its drop)
 *     and hiredis (until the reply callback of a command, or a NULL or
 *     "unsubscribe" callback of a subscription). A dropped future marks
 *     it 'abandoned': a reply that comes later is not taken, so hiredis
 *     frees it; the record itself goes with the last holder. Nothing is
 *     ever written to a future's memory from a callback.
 *   - hiredis 0.14's redisProcessCallbacks keeps the last callback it ran
 *     in a local and runs it again for a pub/sub reply of a channel it
 *     has no callback for (a message that arrives after the channel's
 *     "unsubscribe"): a stale call with a record hiredis already let go
 *     of. So a record whose last holder was hiredis is not freed in the
 *     callback but put on 'dead', freed when the hiredis call that ran
 *     the callback has returned (flush_dead, before the lock goes); and
 *     a callback for a record marked 'gone' (hiredis let go) does
 *     nothing.
 *   - The context's memory is counted by 'refs' too: the user (until
 *     fut_redis_close), the driver task, and every command future and
 *     stream from its init to its drop.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fut.h"
#include "hiredis_internal.h"

/* ------------------------------------------------------- counted memory */

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static long live_blocks; /* the adapter's blocks alive (fut_redis_live) */

static void live_add(long d)
{
    pthread_mutex_lock(&live_lock);
    live_blocks += d;
    pthread_mutex_unlock(&live_lock);
}

static void *xcalloc(size_t n)
{
    void *p = calloc(1, n);
    if (p)
        live_add(1);
    return p;
}

static void xfree(void *p)
{
    if (p) {
        free(p);
        live_add(-1);
    }
}

long fut_redis_live(void)
{
    pthread_mutex_lock(&live_lock);
    long n = live_blocks;
    pthread_mutex_unlock(&live_lock);
    return n;
}

/* ----------------------------------------------------------- structures */

/* A queued pub/sub message. */
struct msg_node {
    struct msg_node *next;
    redisReply *reply;  /* moved out of hiredis's, ours until handed over */
    unsigned long lost; /* messages dropped just before this one */
};

struct fut_redis_rec {
    int refs; /* holders: the future/stream, hiredis */
    int gone; /* hiredis let go: later calls are stale */
    struct fut_redis_rec *next_dead; /* on the context's 'dead' list */
    int abandoned;                   /* the future/stream was dropped */
    int done;               /* command: replied; subscription: ended */
    int result;             /* 0 or the error that ended it */
    redisReply *reply;      /* command: the reply, until taken */
    struct fut_waker waker; /* the future/stream waiting for it */
    /* subscriptions */
    struct fut_redis_rec *next_sub; /* the context's list ('subs') */
    char *channel;                  /* the name (ours) */
    struct msg_node *head, *tail;   /* queued messages */
    size_t queued, max_queued;      /* their count and bound */
    unsigned long lost, lost_total; /* dropped: since last queued, all */
};

struct fut_redis {
    pthread_mutex_t lock;       /* see the rules at the top */
    redisAsyncContext *ac;      /* NULL once hiredis freed it */
    struct fut_fd *fd;          /* its fd's registration, while 'ac' */
    unsigned want;              /* FUT_FD_READABLE/WRITABLE hiredis wants */
    int status;                 /* 0, or why 'ac' ended */
    int refs;                   /* holders of this memory (the rules) */
    struct fut_waker driver;    /* the driver task */
    struct fut_redis_rec *subs; /* subscriptions hiredis holds */
    struct fut_redis_rec *dead; /* records to free after a hiredis call */
};

/* Why a context ended or a pending command got no reply: hiredis set an
 * error (EOF, I/O, a failed connect) or it was fut_redis_close. */
static int closed_code(const redisAsyncContext *ac)
{
    return ac->c.err ? -ECONNRESET : FUT_ECANCELED;
}

static void redis_ref(struct fut_redis *r)
{
    pthread_mutex_lock(&r->lock);
    r->refs++;
    pthread_mutex_unlock(&r->lock);
}

static void redis_unref(struct fut_redis *r)
{
    pthread_mutex_lock(&r->lock);
    int n = --r->refs;
    pthread_mutex_unlock(&r->lock);
    if (n == 0) {
        pthread_mutex_destroy(&r->lock);
        xfree(r);
    }
}

/* Moves hiredis's reply into one of ours and leaves it an empty NIL
 * shell, which its freeReplyObject (after our callback) frees alone. */
static redisReply *take_reply(void *reply)
{
    redisReply *src = reply, *dst = malloc(sizeof *dst);
    if (!dst)
        return NULL;
    *dst = *src;
    src->type = REDIS_REPLY_NIL;
    src->str = NULL;
    src->len = 0;
    src->element = NULL;
    src->elements = 0;
    return dst;
}

/* ------------------------------------------------------------- records */

static struct fut_redis_rec *rec_new(void)
{
    struct fut_redis_rec *rec = xcalloc(sizeof *rec);
    if (rec)
        rec->refs = 2; /* the future/stream and hiredis */
    return rec;
}

static void rec_free_queue(struct fut_redis_rec *rec)
{
    while (rec->head) {
        struct msg_node *n = rec->head;
        rec->head = n->next;
        freeReplyObject(n->reply);
        xfree(n);
    }
    rec->tail = NULL;
    rec->queued = 0;
}

/* Drops one holder's reference (under the context's lock). */
static void rec_unref(struct fut_redis_rec *rec)
{
    if (--rec->refs > 0)
        return;
    if (rec->reply)
        freeReplyObject(rec->reply);
    rec_free_queue(rec);
    fut_waker_drop(&rec->waker);
    xfree(rec->channel);
    xfree(rec);
}

/* hiredis lets go of 'rec' (in one of its callbacks, under the lock):
 * freed by flush_dead after the hiredis call returns, if it was the last
 * holder (see the rules). */
static void rec_hiredis_done(struct fut_redis *r, struct fut_redis_rec *rec)
{
    rec->gone = 1;
    if (rec->refs == 1) {
        rec->next_dead = r->dead;
        r->dead = rec;
        return;
    }
    rec_unref(rec);
}

/* Frees the records hiredis let go of last (under the lock, after the
 * hiredis call that ran their callbacks has returned). */
static void flush_dead(struct fut_redis *r)
{
    while (r->dead) {
        struct fut_redis_rec *rec = r->dead;
        r->dead = rec->next_dead;
        rec_unref(rec);
    }
}

static void rec_wake(struct fut_redis_rec *rec)
{
    if (fut_waker_is_set(&rec->waker))
        fut_waker_wake(&rec->waker);
}

/* ------------------------------------------------------ hiredis's hooks */

static void want_add(struct fut_redis *r, unsigned bit)
{
    if (r->want & bit)
        return;
    r->want |= bit;
    if (fut_waker_is_set(&r->driver))
        fut_waker_wake_by_ref(&r->driver);
}

static void ev_add_read(void *p)
{
    want_add(p, FUT_FD_READABLE);
}

static void ev_del_read(void *p)
{
    ((struct fut_redis *)p)->want &= ~FUT_FD_READABLE;
}

static void ev_add_write(void *p)
{
    want_add(p, FUT_FD_WRITABLE);
}

static void ev_del_write(void *p)
{
    ((struct fut_redis *)p)->want &= ~FUT_FD_WRITABLE;
}

/* hiredis frees the context: every callback has run, the fd is still
 * open. Deregister it and let the driver end. */
static void ev_cleanup(void *p)
{
    struct fut_redis *r = p;
    if (!r->status)
        r->status = closed_code(r->ac);
    fut_fd_deregister(r->fd);
    r->fd = NULL;
    r->ac = NULL;
    r->want = 0;
    if (fut_waker_is_set(&r->driver))
        fut_waker_wake_by_ref(&r->driver);
}

/* ------------------------------------------------------------- driver */

/* The driver task's future: awaits what hiredis wants, calls it. */
struct driver {
    struct fut_future base;
    struct fut_redis *r;    /* NULL once it let go of the context */
    struct fut_fd_ready rd; /* the wait, while 'waiting' */
    unsigned waiting;       /* the interest 'rd' waits for, or 0 */
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
    if (!d->r)
        return;
    pthread_mutex_lock(&d->r->lock);
    fut_waker_drop(&d->r->driver);
    pthread_mutex_unlock(&d->r->lock);
    redis_unref(d->r);
    d->r = NULL;
}

/* hiredis reads or writes once; clear what poll(2) says would block (a
 * failed poll keeps the readiness: hiredis will see for itself). */
static void driver_clear(struct fut_redis *r, unsigned ev, uint32_t tick)
{
    fut_fd_clear_if_blocked(r->fd, ev, tick);
}

/* One readiness event: let hiredis write, then read (under the lock). A
 * failed wait (not a deregistration) ends the context. */
static void driver_handle(struct fut_redis *r, int ev, uint32_t tick)
{
    pthread_mutex_lock(&r->lock);
    if (ev < 0) {
        if (r->ac) {
            r->status = ev;
            redisAsyncFree(r->ac);
        }
    } else {
        if (r->ac && (ev & FUT_FD_WRITABLE) && (r->want & FUT_FD_WRITABLE))
            redisAsyncHandleWrite(r->ac);
        if (r->ac && (ev & FUT_FD_READABLE) && (r->want & FUT_FD_READABLE))
            redisAsyncHandleRead(r->ac);
        if (r->ac)
            driver_clear(r, (unsigned)ev, tick);
    }
    flush_dead(r);
    pthread_mutex_unlock(&r->lock);
}

static int driver_poll(struct fut_future *f, struct fut_context *cx)
{
    struct driver *d = (struct driver *)f;
    struct fut_redis *r = d->r;
    for (;;) {
        pthread_mutex_lock(&r->lock);
        if (!r->ac) {
            pthread_mutex_unlock(&r->lock);
            driver_release(d);
            return FUT_READY;
        }
        unsigned want = r->want;
        struct fut_fd *h = r->fd;
        fut_waker_set(&r->driver, &cx->waker);
        pthread_mutex_unlock(&r->lock);
        if (d->waiting != want)
            driver_stop_wait(d);
        if (!want)
            return FUT_PENDING; /* an add hook wakes us */
        if (!d->waiting) {
            fut_fd_ready_init(&d->rd, h, want);
            d->waiting = want;
        }
        if (fut_poll(&d->rd.base, cx) == FUT_PENDING)
            return FUT_PENDING;
        int ev = d->rd.result;
        uint32_t tick = d->rd.tick;
        driver_stop_wait(d);
        driver_handle(r, ev, tick);
    }
}

static void driver_drop(struct fut_future *f)
{
    driver_release((struct driver *)f);
}

static const struct fut_future_vtable driver_vt = {driver_poll, driver_drop,
                                                   "fut_redis_driver", 0};

/* ------------------------------------------------------------ context */

int fut_redis_attach(redisAsyncContext *ac, struct fut_redis **out)
{
    if (!ac || !out || ac->ev.data)
        return FUT_EINVAL;
    if (ac->err)
        return -ECONNREFUSED;
    struct fut_redis *r = xcalloc(sizeof *r);
    if (!r)
        return FUT_ENOMEM;
    pthread_mutex_init(&r->lock, NULL);
    int rc = fut_fd_register(ac->c.fd, &r->fd);
    if (rc < 0)
        goto fail_reg;
    r->ac = ac;
    r->refs = 2; /* the user, the driver */
    struct driver d;
    memset(&d, 0, sizeof d);
    fut_future_init(&d.base, &driver_vt);
    d.r = r;
    rc = fut_spawn(NULL, &d, sizeof d, NULL);
    if (rc < 0)
        goto fail_spawn;
    /* The driver may run already: the hooks go in under the lock. */
    pthread_mutex_lock(&r->lock);
    ac->ev.data = r;
    ac->ev.addRead = ev_add_read;
    ac->ev.delRead = ev_del_read;
    ac->ev.addWrite = ev_add_write;
    ac->ev.delWrite = ev_del_write;
    ac->ev.cleanup = ev_cleanup;
    pthread_mutex_unlock(&r->lock);
    *out = r;
    return 0;
fail_spawn:
    fut_fd_deregister(r->fd);
fail_reg:
    pthread_mutex_destroy(&r->lock);
    xfree(r);
    return rc;
}

static int connect_done(redisAsyncContext *ac, struct fut_redis **out)
{
    if (!ac)
        return FUT_ENOMEM;
    int rc = fut_redis_attach(ac, out);
    if (rc < 0)
        redisAsyncFree(ac);
    return rc;
}

int fut_redis_connect(const char *ip, int port, struct fut_redis **out)
{
    if (!ip || !out)
        return FUT_EINVAL;
    return connect_done(redisAsyncConnect(ip, port), out);
}

int fut_redis_connect_unix(const char *path, struct fut_redis **out)
{
    if (!path || !out)
        return FUT_EINVAL;
    return connect_done(redisAsyncConnectUnix(path), out);
}

void fut_redis_close(struct fut_redis *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    if (r->ac)
        redisAsyncFree(r->ac); /* callbacks, then ev_cleanup */
    flush_dead(r);
    pthread_mutex_unlock(&r->lock);
    redis_unref(r);
}

int fut_redis_status(struct fut_redis *r)
{
    if (!r)
        return FUT_EINVAL;
    pthread_mutex_lock(&r->lock);
    int s = r->ac ? 0 : r->status;
    pthread_mutex_unlock(&r->lock);
    return s;
}

/* ------------------------------------------------------------ commands */

/* A command's reply (or NULL: the context ends), under the lock. */
static void on_reply(redisAsyncContext *ac, void *reply, void *priv)
{
    struct fut_redis_rec *rec = priv;
    if (rec->gone)
        return; /* a stale call (see the rules) */
    if (!rec->abandoned) {
        if (reply) {
            rec->reply = take_reply(reply);
            rec->result = rec->reply ? 0 : FUT_ENOMEM;
        } else {
            rec->result = closed_code(ac);
        }
        rec->done = 1;
        rec_wake(rec);
    }
    rec_hiredis_done(ac->ev.data, rec);
}

/* The first poll: hand the command to hiredis. */
static int cmd_send(struct fut_redis_cmd *f, struct fut_context *cx)
{
    struct fut_redis *r = f->r;
    if (f->result < 0)
        return FUT_READY; /* the init failed */
    struct fut_redis_rec *rec = rec_new();
    if (!rec) {
        f->result = FUT_ENOMEM;
        return FUT_READY;
    }
    fut_waker_set(&rec->waker, &cx->waker);
    pthread_mutex_lock(&r->lock);
    int rc = r->ac ? redisAsyncFormattedCommand(r->ac, on_reply, rec, f->cmd,
                                                (size_t)f->len)
                   : REDIS_ERR;
    int status = r->ac ? -ECONNRESET : r->status;
    if (rc != REDIS_OK) {
        rec->refs = 1; /* hiredis took nothing */
        rec_unref(rec);
        rec = NULL;
    }
    pthread_mutex_unlock(&r->lock);
    redisFreeCommand(f->cmd);
    f->cmd = NULL;
    if (!rec) {
        f->result = status;
        return FUT_READY;
    }
    f->rec = rec;
    return FUT_PENDING;
}

static int cmd_poll(struct fut_future *base, struct fut_context *cx)
{
    struct fut_redis_cmd *f = (struct fut_redis_cmd *)base;
    if (!f->r)
        return FUT_READY; /* no context: FUT_EINVAL */
    if (!f->rec)
        return cmd_send(f, cx);
    struct fut_redis *r = f->r;
    pthread_mutex_lock(&r->lock);
    struct fut_redis_rec *rec = f->rec;
    if (!rec->done || !fut_coop_proceed(cx)) {
        fut_waker_set(&rec->waker, &cx->waker);
        pthread_mutex_unlock(&r->lock);
        return FUT_PENDING;
    }
    f->result = rec->result;
    f->reply = rec->reply;
    rec->reply = NULL;
    pthread_mutex_unlock(&r->lock);
    return FUT_READY;
}

static void cmd_drop(struct fut_future *base)
{
    struct fut_redis_cmd *f = (struct fut_redis_cmd *)base;
    struct fut_redis *r = f->r;
    if (f->cmd)
        redisFreeCommand(f->cmd);
    f->cmd = NULL;
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    if (f->rec) {
        f->rec->abandoned = 1;
        fut_waker_drop(&f->rec->waker);
        rec_unref(f->rec);
        f->rec = NULL;
    }
    pthread_mutex_unlock(&r->lock);
    f->r = NULL;
    redis_unref(r);
}

static const struct fut_future_vtable cmd_vt = {cmd_poll, cmd_drop,
                                                "fut_redis_cmd", 0};

/* The common part of the inits: 'len' is the formatter's result. */
static void cmd_init(struct fut_redis_cmd *f, struct fut_redis *r, int len)
{
    fut_future_init(&f->base, &cmd_vt);
    f->r = r;
    f->rec = NULL;
    f->reply = NULL;
    f->len = len;
    f->result = 0;
    if (len < 0) {
        f->cmd = NULL;
        f->result = len == -2 ? FUT_ENOMEM : FUT_EINVAL;
    }
    if (r)
        redis_ref(r);
    else
        f->result = FUT_EINVAL;
}

void fut__redis_cmd_vinit(struct fut_redis_cmd *f, struct fut_redis *r,
                          const char *fmt, va_list ap)
{
    f->cmd = NULL;
    int len = fmt ? redisvFormatCommand(&f->cmd, fmt, ap) : -1;
    cmd_init(f, r, len);
}

void fut_redis_cmd_init(struct fut_redis_cmd *f, struct fut_redis *r,
                        const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fut__redis_cmd_vinit(f, r, fmt, ap);
    va_end(ap);
}

void fut_redis_cmd_argv_init(struct fut_redis_cmd *f, struct fut_redis *r,
                             int argc, const char **argv,
                             const size_t *argvlen)
{
    f->cmd = NULL;
    int len =
        argv ? redisFormatCommandArgv(&f->cmd, argc, argv, argvlen) : -1;
    cmd_init(f, r, len);
}

/* ------------------------------------------------------- subscriptions */

static void sub_unlink(struct fut_redis *r, struct fut_redis_rec *rec)
{
    for (struct fut_redis_rec **p = &r->subs; *p; p = &(*p)->next_sub) {
        if (*p == rec) {
            *p = rec->next_sub;
            return;
        }
    }
}

static void sub_end(struct fut_redis *r, struct fut_redis_rec *rec, int code)
{
    sub_unlink(r, rec);
    if (!rec->done) {
        rec->done = 1;
        rec->result = code;
        rec_wake(rec);
    }
    rec_hiredis_done(r, rec);
}

static void sub_queue(struct fut_redis_rec *rec, void *reply)
{
    if (rec->abandoned)
        return; /* hiredis frees it */
    struct msg_node *n = NULL;
    if (rec->queued < rec->max_queued && (n = xcalloc(sizeof *n)) &&
        !(n->reply = take_reply(reply))) {
        xfree(n);
        n = NULL;
    }
    if (!n) {
        rec->lost++;
        rec->lost_total++;
        return;
    }
    n->lost = rec->lost;
    rec->lost = 0;
    if (rec->tail)
        rec->tail->next = n;
    else
        rec->head = n;
    rec->tail = n;
    rec->queued++;
    rec_wake(rec);
}

static int is_kind(const redisReply *rep, const char *kind)
{
    return rep->type == REDIS_REPLY_ARRAY && rep->elements >= 3 &&
           rep->element[0]->type == REDIS_REPLY_STRING &&
           strcasecmp(rep->element[0]->str, kind) == 0;
}

/* Every reply for a subscription's channel (under the lock). */
static void on_message(redisAsyncContext *ac, void *reply, void *priv)
{
    struct fut_redis_rec *rec = priv;
    struct fut_redis *r = ac->ev.data;
    if (rec->gone)
        return; /* a stale call (see the rules) */
    if (!reply)
        sub_end(r, rec, closed_code(ac));
    else if (is_kind(reply, "message"))
        sub_queue(rec, reply);
    else if (is_kind(reply, "unsubscribe"))
        sub_end(r, rec, 0); /* hiredis forgot the channel */
}

static struct fut_redis_rec *sub_find(struct fut_redis *r, const char *ch)
{
    for (struct fut_redis_rec *p = r->subs; p; p = p->next_sub)
        if (strcmp(p->channel, ch) == 0)
            return p;
    return NULL;
}

/* The first poll: SUBSCRIBE (under the lock); 0 or why it ends. */
static int sub_start(struct fut_redis_sub *s, struct fut_redis_rec *rec)
{
    struct fut_redis *r = s->r;
    if (!r->ac)
        return r->status;
    if (sub_find(r, s->channel))
        return -EEXIST;
    rec->channel = s->channel;
    rec->max_queued = s->max_queued;
    if (redisAsyncCommand(r->ac, on_message, rec, "SUBSCRIBE %s",
                          rec->channel) != REDIS_OK) {
        rec->channel = NULL;
        return -ECONNRESET;
    }
    s->channel = NULL; /* the record's now */
    rec->next_sub = r->subs;
    r->subs = rec;
    return 0;
}

static int sub_poll_first(struct fut_redis_sub *s, struct fut_context *cx)
{
    struct fut_redis_rec *rec = s->channel ? rec_new() : NULL;
    if (!rec) {
        if (!s->result) /* FUT_EINVAL from the init: no channel */
            s->result = FUT_ENOMEM;
        return FUT_STREAM_END;
    }
    fut_waker_set(&rec->waker, &cx->waker);
    pthread_mutex_lock(&s->r->lock);
    int rc = sub_start(s, rec);
    if (rc < 0) {
        rec->refs = 1;
        rec_unref(rec);
    }
    pthread_mutex_unlock(&s->r->lock);
    if (rc < 0) {
        s->result = rc;
        return FUT_STREAM_END;
    }
    s->rec = rec;
    return FUT_PENDING;
}

static int sub_poll_next(struct fut_stream *base, struct fut_context *cx,
                         void *item)
{
    struct fut_redis_sub *s = (struct fut_redis_sub *)base;
    if (!s->r) {
        s->result = FUT_EINVAL;
        return FUT_STREAM_END;
    }
    if (!s->rec)
        return sub_poll_first(s, cx);
    struct fut_redis_rec *rec = s->rec;
    int out = FUT_PENDING;
    pthread_mutex_lock(&s->r->lock);
    s->lost_total = rec->lost_total;
    if (rec->head && fut_coop_proceed(cx)) {
        struct msg_node *n = rec->head;
        rec->head = n->next;
        if (!rec->head)
            rec->tail = NULL;
        rec->queued--;
        struct fut_redis_msg m = {n->reply, n->lost};
        memcpy(item, &m, sizeof m);
        xfree(n);
        out = FUT_STREAM_ITEM;
    } else if (!rec->head && rec->done) {
        s->result = rec->result;
        out = FUT_STREAM_END;
    } else {
        fut_waker_set(&rec->waker, &cx->waker);
    }
    pthread_mutex_unlock(&s->r->lock);
    return out;
}

static void sub_drop(struct fut_stream *base)
{
    struct fut_redis_sub *s = (struct fut_redis_sub *)base;
    struct fut_redis *r = s->r;
    xfree(s->channel);
    s->channel = NULL;
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    struct fut_redis_rec *rec = s->rec;
    if (rec) {
        rec->abandoned = 1;
        rec_free_queue(rec);
        fut_waker_drop(&rec->waker);
        /* hiredis answers with an "unsubscribe" reply, which lets go of
         * its reference (or with NULL, if the context ends first). */
        if (!rec->done && r->ac)
            redisAsyncCommand(r->ac, NULL, NULL, "UNSUBSCRIBE %s",
                              rec->channel);
        rec_unref(rec);
        s->rec = NULL;
    }
    pthread_mutex_unlock(&r->lock);
    s->r = NULL;
    redis_unref(r);
}

static const struct fut_stream_vtable sub_vt = {sub_poll_next, sub_drop,
                                                "fut_redis_sub"};

void fut_redis_sub_init(struct fut_redis_sub *s, struct fut_redis *r,
                        const char *channel, size_t max_queued)
{
    fut_stream_init(&s->base, &sub_vt, sizeof(struct fut_redis_msg));
    s->r = r;
    s->rec = NULL;
    s->max_queued = max_queued ? max_queued : 1024;
    s->result = channel ? 0 : FUT_EINVAL;
    s->lost_total = 0;
    size_t n = channel ? strlen(channel) + 1 : 0;
    s->channel = n ? xcalloc(n) : NULL;
    if (s->channel)
        memcpy(s->channel, channel, n);
    if (r)
        redis_ref(r);
}
