/* SPDX-License-Identifier: MIT */
/* libfut-pq's LISTEN stream (fut_pg_listen_init): LISTEN on its first
 * poll, the notifications the driver delivered (pq.c), UNLISTEN on
 * drop. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* -------------------------------------------------------------- listen */

/* Sends "LISTEN/UNLISTEN channel" as an internal record (under the
 * lock); 0 or a negative code. */
static int send_internal(struct fut_pg *pg, const char *verb,
                         const char *channel)
{
    char *id = PQescapeIdentifier(pg->conn, channel, strlen(channel));
    if (!id)
        return FUT_ENOMEM;
    size_t l = strlen(verb) + strlen(id) + 2;
    char *sql = fut_mem_alloc(l);
    if (!sql) {
        PQfreemem(id);
        return FUT_ENOMEM;
    }
    snprintf(sql, l, "%s %s", verb, id);
    PQfreemem(id);
    struct fut_pg_stmt st = {sql, 0, NULL};
    struct fut_pg_rec *r = fut__pg_rec_new(1, &st);
    fut_mem_free(sql, l);
    if (!r)
        return FUT_ENOMEM;
    r->internal = 1;
    r->where = 1;
    fut__pg_push(&pg->sendq, &pg->sendq_tail, r);
    fut__pg_send_queued(pg);
    return 0;
}

static void lis_free(struct fut_pg_lis *l)
{
    fut__pg_lis_free_queue(l);
    fut_waker_drop(&l->waker);
    fut_mem_free(l->channel, l->chsize);
    fut_mem_free(l, sizeof *l);
}

static int listen_first(struct fut_pg_listen *s, struct fut_context *cx)
{
    struct fut_pg *pg = s->pg;
    struct fut_pg_lis *l = s->lis;
    pthread_mutex_lock(&pg->lock);
    int rc = 0;
    if (pg->status || !pg->conn)
        rc = pg->status ? pg->status : FUT_ECANCELED;
    for (struct fut_pg_lis *p = pg->lis; !rc && p; p = p->next)
        if (strcmp(p->channel, l->channel) == 0)
            rc = -EEXIST;
    if (!rc)
        rc = send_internal(pg, "LISTEN", l->channel);
    if (!rc) {
        l->next = pg->lis;
        pg->lis = l;
        l->linked = 1;
        fut_waker_set(&l->waker, &cx->waker);
    } else {
        l->done = 1;
        l->result = rc;
    }
    pthread_mutex_unlock(&pg->lock);
    return rc;
}

static int listen_poll_next(struct fut_stream *base, struct fut_context *cx,
                            void *item)
{
    struct fut_pg_listen *s = (struct fut_pg_listen *)base;
    struct fut_pg_lis *l = s->lis;
    if (!s->pg || !l) {
        if (!s->result)
            s->result = FUT_EINVAL;
        return FUT_STREAM_END;
    }
    struct fut_pg *pg = s->pg;
    if (!l->linked && !l->done) {
        int rc = listen_first(s, cx);
        if (rc < 0) {
            s->result = rc;
            return FUT_STREAM_END;
        }
        return FUT_PENDING;
    }
    int out = FUT_PENDING;
    pthread_mutex_lock(&pg->lock);
    s->lost_total = l->lost_total;
    if (l->head && fut_coop_proceed(cx)) {
        struct note *n = l->head;
        l->head = n->next;
        if (!l->head)
            l->tail = NULL;
        l->queued--;
        struct fut_pg_notification m = {n->n, n->lost};
        memcpy(item, &m, sizeof m);
        fut_mem_free(n, sizeof *n);
        out = FUT_STREAM_ITEM;
    } else if (!l->head && l->done) {
        s->result = l->result;
        out = FUT_STREAM_END;
    } else {
        fut_waker_set(&l->waker, &cx->waker);
    }
    pthread_mutex_unlock(&pg->lock);
    return out;
}

static void listen_drop(struct fut_stream *base)
{
    struct fut_pg_listen *s = (struct fut_pg_listen *)base;
    struct fut_pg *pg = s->pg;
    struct fut_pg_lis *l = s->lis;
    s->lis = NULL;
    if (!pg) {
        if (l)
            lis_free(l);
        return;
    }
    if (l) {
        pthread_mutex_lock(&pg->lock);
        if (l->linked) {
            struct fut_pg_lis **p = &pg->lis;
            while (*p && *p != l)
                p = &(*p)->next;
            if (*p)
                *p = l->next;
            if (pg->fd)
                (void)send_internal(pg, "UNLISTEN", l->channel);
        }
        lis_free(l);
        pthread_mutex_unlock(&pg->lock);
    }
    s->pg = NULL;
    fut__pg_unref(pg);
}

static const struct fut_stream_vtable listen_vt = {
    listen_poll_next, listen_drop, "fut_pg_listen"};

void fut_pg_listen_init(struct fut_pg_listen *s, struct fut_pg *pg,
                        const char *channel, size_t max_queued)
{
    fut_stream_init(&s->base, &listen_vt, sizeof(struct fut_pg_notification));
    s->pg = pg;
    s->lis = NULL;
    s->result = 0;
    s->lost_total = 0;
    if (pg)
        fut__pg_ref(pg);
    if (!pg || !channel) {
        s->result = FUT_EINVAL;
        return;
    }
    struct fut_pg_lis *l = fut_mem_alloc(sizeof *l);
    if (l) {
        memset(l, 0, sizeof *l);
        l->channel = fut__pg_dupstr(channel, &l->chsize);
        if (!l->channel) {
            fut_mem_free(l, sizeof *l);
            l = NULL;
        }
    }
    if (!l) {
        s->result = FUT_ENOMEM;
        return;
    }
    l->max_queued = max_queued ? max_queued : 1024;
    s->lis = l;
}
