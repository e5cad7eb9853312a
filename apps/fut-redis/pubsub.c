/* SPDX-License-Identifier: MIT */
/* pubsub: the registry and the PUBLISH / (P)SUBSCRIBE / (P)UNSUBSCRIBE
 * commands (rules in pubsub.h). The channel table doubles its buckets
 * when it holds more channels than buckets (from PS_BUCKETS), patterns
 * are one list matched on every PUBLISH - as in Redis, PUBLISH costs
 * O(subscribers + patterns). A subscriber's own names are indexed
 * (psnames.h): (UN)SUBSCRIBE of N names is O(N). */
#include "pubsub.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "cmd.h"
#include "db.h"
#include "server.h"

#define PS_BUCKETS 1024

struct ps_chan {
    struct ps_chan *next;
    struct subscriber **subs;
    size_t n, cap;
    size_t len;
    char name[];
};

struct ps_pat {
    struct ps_pat *next;
    struct subscriber *sub;
    size_t len;
    char pat[];
};

struct pubsub {
    pthread_mutex_t mu;
    struct ps_chan **tab; /* nbuckets chains */
    size_t nbuckets;
    size_t nchans;
    struct ps_pat *pats;
    size_t npats;
};

int pubsub_init(struct server *srv)
{
    srv->ps = calloc(1, sizeof *srv->ps);
    if (!srv->ps)
        return -1;
    srv->ps->tab = calloc(PS_BUCKETS, sizeof *srv->ps->tab);
    if (!srv->ps->tab) {
        free(srv->ps);
        srv->ps = NULL;
        return -1;
    }
    srv->ps->nbuckets = PS_BUCKETS;
    pthread_mutex_init(&srv->ps->mu, NULL);
    return 0;
}

void pubsub_fini(struct server *srv)
{
    if (!srv->ps)
        return;
    pthread_mutex_destroy(&srv->ps->mu);
    free(srv->ps->tab);
    free(srv->ps);
    srv->ps = NULL;
}

void psmsg_unref(struct psmsg *m)
{
    /* acq_rel: the last owner sees every other owner's use before free */
    if (m && atomic_fetch_sub_explicit(&m->ref, 1, memory_order_acq_rel) == 1)
        free(m);
}

static void msg_dtor(void *p)
{
    psmsg_unref(*(struct psmsg **)p);
}

size_t pubsub_count_of(const struct client *cl)
{
    return cl->sub ? cl->sub->chans.live + cl->sub->pats.live : 0;
}

static struct subscriber *sub_of(struct client *cl)
{
    if (cl->sub)
        return cl->sub;
    struct subscriber *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    if (fut_mpsc_unbounded_new(sizeof(struct psmsg *), msg_dtor, &s->tx,
                               &s->rx) != 0) {
        free(s);
        return NULL;
    }
    s->cl = cl;
    cl->sub = s;
    return s;
}

/* ----------------------------------------------------------- the registry */

static struct ps_chan **chan_slot(struct pubsub *ps, const char *n,
                                  size_t len)
{
    struct ps_chan **pp = &ps->tab[db_hash(n, len) & (ps->nbuckets - 1)];
    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->len == len && !memcmp((*pp)->name, n, len))
            break;
    return pp;
}

/* Twice the buckets once there are more channels than buckets (under
 * the lock); out of memory: the chains just grow longer. */
static void tab_grow(struct pubsub *ps)
{
    if (ps->nchans <= ps->nbuckets)
        return;
    size_t nb = ps->nbuckets * 2;
    struct ps_chan **tab = calloc(nb, sizeof *tab);
    if (!tab)
        return;
    for (size_t b = 0; b < ps->nbuckets; b++)
        for (struct ps_chan *c = ps->tab[b], *next; c; c = next) {
            next = c->next;
            struct ps_chan **pp = &tab[db_hash(c->name, c->len) & (nb - 1)];
            c->next = *pp;
            *pp = c;
        }
    free(ps->tab);
    ps->tab = tab;
    ps->nbuckets = nb;
}

/* Channel subscribe under the lock: 1 added, 0 already there, -1 OOM. */
static int chan_add(struct pubsub *ps, struct subscriber *s, const char *n,
                    size_t len)
{
    if (psn_find(&s->chans, n, len) >= 0)
        return 0;
    struct ps_chan **pp = chan_slot(ps, n, len), *c = *pp;
    if (!c) {
        c = calloc(1, sizeof *c + len);
        if (!c)
            return -1;
        c->len = len;
        memcpy(c->name, n, len);
        *pp = c;
        ps->nchans++;
        tab_grow(ps); /* 'pp' is stale from here; 'c' is not */
    }
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 4;
        struct subscriber **ns = realloc(c->subs, nc * sizeof *ns);
        if (!ns)
            return -1;
        c->subs = ns;
        c->cap = nc;
    }
    if (psn_add(&s->chans, n, len) != 0)
        return -1;
    c->subs[c->n++] = s;
    return 1;
}

static int chan_del(struct pubsub *ps, struct subscriber *s, const char *n,
                    size_t len)
{
    long i = psn_find(&s->chans, n, len);
    if (i < 0)
        return 0;
    struct ps_chan **pp = chan_slot(ps, n, len), *c = *pp;
    for (size_t k = 0; c && k < c->n; k++)
        if (c->subs[k] == s) {
            c->subs[k] = c->subs[--c->n];
            break;
        }
    if (c && c->n == 0) {
        *pp = c->next;
        free(c->subs);
        free(c);
        ps->nchans--;
    }
    psn_del(&s->chans, i); /* last: 'n' may be its bytes */
    return 1;
}

static int pat_add(struct pubsub *ps, struct subscriber *s, const char *p,
                   size_t len)
{
    if (psn_find(&s->pats, p, len) >= 0)
        return 0;
    struct ps_pat *e = malloc(sizeof *e + len);
    if (!e || psn_add(&s->pats, p, len) != 0) {
        free(e);
        return -1;
    }
    e->sub = s;
    e->len = len;
    memcpy(e->pat, p, len);
    e->next = ps->pats;
    ps->pats = e;
    ps->npats++;
    return 1;
}

static int pat_del(struct pubsub *ps, struct subscriber *s, const char *p,
                   size_t len)
{
    long i = psn_find(&s->pats, p, len);
    if (i < 0)
        return 0;
    for (struct ps_pat **pp = &ps->pats; *pp; pp = &(*pp)->next) {
        struct ps_pat *e = *pp;
        if (e->sub == s && e->len == len && !memcmp(e->pat, p, len)) {
            *pp = e->next;
            free(e);
            ps->npats--;
            break;
        }
    }
    psn_del(&s->pats, i); /* last: 'p' may be its bytes */
    return 1;
}

void pubsub_client_gone(struct server *srv, struct client *cl)
{
    struct subscriber *s = cl->sub;
    if (!s)
        return;
    struct pubsub *ps = srv->ps;
    pthread_mutex_lock(&ps->mu);
    const struct ps_name *nm;
    while ((nm = psn_first(&s->chans)))
        chan_del(ps, s, nm->s, nm->len);
    while ((nm = psn_first(&s->pats)))
        pat_del(ps, s, nm->s, nm->len);
    pthread_mutex_unlock(&ps->mu);
    /* no publisher can reach 's' now */
    fut_mpsc_tx_drop(&s->tx);
    fut_mpsc_rx_drop(&s->rx); /* buffered messages go to msg_dtor */
    psn_free(&s->chans);
    psn_free(&s->pats);
    free(s);
    cl->sub = NULL;
}

void pubsub_stats(struct server *srv, size_t *channels, size_t *patterns)
{
    pthread_mutex_lock(&srv->ps->mu);
    *channels = srv->ps->nchans;
    *patterns = srv->ps->npats;
    pthread_mutex_unlock(&srv->ps->mu);
}

/* ---------------------------------------------------------------- publish */

static struct psmsg *msg_new(const char *kind, const struct resp_arg *pat,
                             const struct resp_arg *ch,
                             const struct resp_arg *m)
{
    size_t cap = 64 + (pat ? pat->len : 0) + ch->len + m->len;
    struct psmsg *msg = malloc(sizeof *msg + cap);
    if (!msg)
        return NULL;
    atomic_init(&msg->ref, 0);
    int n = sprintf(msg->data, "*%d\r\n$%zu\r\n%s\r\n", pat ? 4 : 3,
                    strlen(kind), kind);
    if (pat)
        n += sprintf(msg->data + n, "$%zu\r\n%.*s\r\n", pat->len,
                     (int)pat->len, pat->p);
    n += sprintf(msg->data + n, "$%zu\r\n", ch->len);
    memcpy(msg->data + n, ch->p, ch->len);
    n += (int)ch->len;
    n += sprintf(msg->data + n, "\r\n$%zu\r\n", m->len);
    memcpy(msg->data + n, m->p, m->len);
    n += (int)m->len;
    memcpy(msg->data + n, "\r\n", 2);
    msg->len = (size_t)n + 2;
    return msg;
}

/* Sends 'm' to 's' unless 's' is over the hard limit. 1 sent. */
static int deliver(struct server *srv, struct subscriber *s, struct psmsg *m)
{
    long long q = atomic_load_explicit(&s->queued, memory_order_relaxed) +
                  atomic_load_explicit(&s->outbuf, memory_order_relaxed);
    if (srv->cfg.pubsub_hard &&
        q + (long long)m->len > srv->cfg.pubsub_hard) {
        if (!atomic_exchange_explicit(&s->kill, 1, memory_order_relaxed)) {
            struct psmsg *none = NULL; /* wakes the connection to close */
            fut_mpsc_try_send(&s->tx, &none);
            atomic_fetch_add_explicit(&srv->pubsub_killed, 1,
                                      memory_order_relaxed);
        }
        return 0;
    }
    atomic_fetch_add_explicit(&m->ref, 1, memory_order_relaxed);
    if (fut_mpsc_try_send(&s->tx, &m) != 0) {
        atomic_fetch_sub_explicit(&m->ref, 1, memory_order_relaxed);
        return 0;
    }
    atomic_fetch_add_explicit(&s->queued, (long long)m->len,
                              memory_order_relaxed);
    return 1;
}

/* A message no subscriber took is freed here; otherwise the last
 * subscriber's unref frees it. 'hold' keeps it alive while sending. */
static void msg_release_hold(struct psmsg *m)
{
    psmsg_unref(m);
}

void cmd_publish(struct cmd_ctx *c)
{
    struct pubsub *ps = c->srv->ps;
    long long receivers = 0;
    pthread_mutex_lock(&ps->mu);
    struct ps_chan *ch = *chan_slot(ps, c->argv[1].p, c->argv[1].len);
    if (ch && ch->n) {
        struct psmsg *m = msg_new("message", NULL, &c->argv[1], &c->argv[2]);
        if (m) {
            atomic_store_explicit(&m->ref, 1,
                                  memory_order_relaxed); /* hold */
            for (size_t i = 0; i < ch->n; i++)
                receivers += deliver(c->srv, ch->subs[i], m);
            msg_release_hold(m);
        }
    }
    for (struct ps_pat *p = ps->pats; p; p = p->next) {
        if (!glob_match(p->pat, p->len, c->argv[1].p, c->argv[1].len))
            continue;
        struct resp_arg pa = {p->pat, p->len};
        struct psmsg *m = msg_new("pmessage", &pa, &c->argv[1], &c->argv[2]);
        if (!m)
            continue;
        atomic_store_explicit(&m->ref, 1, memory_order_relaxed);
        receivers += deliver(c->srv, p->sub, m);
        msg_release_hold(m);
    }
    pthread_mutex_unlock(&ps->mu);
    resp_add_int(c->out, receivers);
}

/* --------------------------------------------------- (un)subscribe replies */

/* Moves the messages queued for this client into its output. Called
 * under the registry lock right after an (un)subscription changed, before
 * its reply is appended: every message queued then was published before
 * the change (deliver runs under the lock), and Redis writes those before
 * the reply, the ones published after it behind the reply (its commands
 * and publishes run one at a time). Without it, a 'message' of a channel
 * could follow its 'unsubscribe' reply; drained after the lock, a message
 * published just after a SUBSCRIBE would come before its reply. A NULL (a
 * publisher found the client over its hard limit) closes the client after
 * this batch's replies. Commands run with no write in flight (server.c,
 * step 2), so the output is where they go. */
static void drain_queued(struct cmd_ctx *c)
{
    struct subscriber *s = c->cl->sub;
    struct psmsg *m;
    while (s && fut_mpsc_try_recv(&s->rx, &m) == 0) {
        if (!m) {
            c->cl->close_after_reply = 1;
            continue;
        }
        resp_add_raw(c->out, m->data, m->len);
        atomic_fetch_sub_explicit(&s->queued, (long long)m->len,
                                  memory_order_relaxed);
        psmsg_unref(m);
    }
}

static void reply_sub(struct cmd_ctx *c, const char *kind,
                      const struct resp_arg *name, size_t count)
{
    resp_add_array(c->out, 3);
    resp_add_bulk_str(c->out, kind);
    if (name)
        resp_add_bulk(c->out, name->p, name->len);
    else
        resp_add_null(c->out);
    resp_add_int(c->out, (long long)count);
}

typedef int (*ps_op)(struct pubsub *, struct subscriber *, const char *,
                     size_t);

/* One (un)subscription under the registry lock, then the messages queued
 * before it into the output (drain_queued). Returns op's result. */
static int change(struct cmd_ctx *c, ps_op op, struct subscriber *s,
                  const char *name, size_t len)
{
    pthread_mutex_lock(&c->srv->ps->mu);
    int r = op(c->srv->ps, s, name, len);
    drain_queued(c);
    pthread_mutex_unlock(&c->srv->ps->mu);
    return r;
}

static void subscribe_generic(struct cmd_ctx *c, const char *kind, ps_op op)
{
    struct subscriber *s = sub_of(c->cl);
    if (!s) {
        c->out->oom = 1;
        return;
    }
    for (size_t i = 1; i < c->argc; i++) {
        int r = change(c, op, s, c->argv[i].p, c->argv[i].len);
        if (r < 0)
            c->out->oom = 1;
        reply_sub(c, kind, &c->argv[i], pubsub_count_of(c->cl));
    }
}

void cmd_subscribe(struct cmd_ctx *c)
{
    subscribe_generic(c, "subscribe", chan_add);
}

void cmd_psubscribe(struct cmd_ctx *c)
{
    subscribe_generic(c, "psubscribe", pat_add);
}

static void unsubscribe_generic(struct cmd_ctx *c, const char *kind, ps_op op,
                                int pats)
{
    struct subscriber *s = c->cl->sub;
    if (c->argc == 1) { /* everything */
        struct ps_names *set = s ? (pats ? &s->pats : &s->chans) : NULL;
        if (!set || set->live == 0)
            reply_sub(c, kind, NULL, pubsub_count_of(c->cl));
        const struct ps_name *nm;
        while (set && (nm = psn_first(set))) {
            struct resp_arg a = {nm->s, nm->len};
            char tmp[256];
            char *copy = a.len <= sizeof tmp ? tmp : malloc(a.len);
            if (!copy) {
                c->out->oom = 1;
                return;
            }
            memcpy(copy, a.p, a.len);
            a.p = copy;
            change(c, op, s, a.p, a.len);
            reply_sub(c, kind, &a, pubsub_count_of(c->cl));
            if (copy != tmp)
                free(copy);
        }
        return;
    }
    for (size_t i = 1; i < c->argc; i++) {
        if (s)
            change(c, op, s, c->argv[i].p, c->argv[i].len);
        reply_sub(c, kind, &c->argv[i], pubsub_count_of(c->cl));
    }
}

void cmd_unsubscribe(struct cmd_ctx *c)
{
    unsubscribe_generic(c, "unsubscribe", chan_del, 0);
}

void cmd_punsubscribe(struct cmd_ctx *c)
{
    unsubscribe_generic(c, "punsubscribe", pat_del, 1);
}

/* -------------------------------------------------------------------- glob */

/* '*skip' is set once a '*' found no match for the rest of the pattern
 * anywhere in the rest of the string: then no earlier '*' can do better
 * by matching more, and every caller up the recursion gives up at once
 * (Redis 7.0.10's fix for CVE-2022-36021; without it a pattern like
 * "*a*a*a*a*b" takes exponential time). */
static int glob(const char *p, size_t plen, const char *s, size_t slen,
                int *skip)
{
    while (plen && slen) {
        switch (p[0]) {
        case '*':
            while (plen > 1 && p[1] == '*') {
                p++;
                plen--;
            }
            if (plen == 1)
                return 1;
            while (slen) {
                if (glob(p + 1, plen - 1, s, slen, skip))
                    return 1;
                if (*skip)
                    return 0;
                s++;
                slen--;
            }
            *skip = 1;
            return 0;
        case '?':
            break;
        case '[': {
            p++;
            plen--;
            int neg = plen && p[0] == '^', match = 0;
            if (neg) {
                p++;
                plen--;
            }
            for (;;) {
                if (plen == 0) { /* unterminated: Redis steps back */
                    p--;
                    plen++;
                    break;
                }
                if (p[0] == '\\' && plen >= 2) {
                    p++;
                    plen--;
                    match |= p[0] == s[0];
                } else if (p[0] == ']') {
                    break;
                } else if (plen >= 3 && p[1] == '-') {
                    int lo = (unsigned char)p[0], hi = (unsigned char)p[2];
                    int ch = (unsigned char)s[0];
                    if (lo > hi) {
                        int t = lo;
                        lo = hi;
                        hi = t;
                    }
                    match |= ch >= lo && ch <= hi;
                    p += 2;
                    plen -= 2;
                } else {
                    match |= p[0] == s[0];
                }
                p++;
                plen--;
            }
            if (neg)
                match = !match;
            if (!match)
                return 0;
            break;
        }
        case '\\':
            if (plen >= 2) {
                p++;
                plen--;
            }
            /* fall through */
        default:
            if (p[0] != s[0])
                return 0;
            break;
        }
        p++;
        plen--;
        s++;
        slen--;
        if (slen == 0) {
            while (plen && p[0] == '*') {
                p++;
                plen--;
            }
            break;
        }
    }
    return plen == 0 && slen == 0;
}

int glob_match(const char *p, size_t plen, const char *s, size_t slen)
{
    int skip = 0;
    return glob(p, plen, s, slen, &skip);
}
