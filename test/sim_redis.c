/* SPDX-License-Identifier: MIT */
/* apps/fut-redis under simulation: the server's own code (futredis_core:
 * its acceptor, connection tasks, commands, pub/sub, cron and graceful
 * shutdown, run through server_task as its main's server_run does) on
 * host 10.0.0.1 of a simulated network, and checking clients, fibers on
 * hosts of their own, speaking RESP over fut's TCP calls:
 *
 *  - NCLIENTS data clients each run NOPS seeded commands - SET/GET on a
 *    string key, INCR/GET on a counter, LPUSH/RPOP/LRANGE on a list (keys
 *    of their own), INCR on one counter all share, PUBLISH on a channel -
 *    each reply checked against a model of the state it must give;
 *  - NSUB subscribers SUBSCRIBE first and check every message: no
 *    duplicate, every confirmed PUBLISH there, each publisher's confirmed
 *    ones in order, nothing nobody published;
 *  - a chaos task (in the "partition" cases) cuts client hosts off the
 *    server for 50-600 ms at seeded times. A client whose reply does not
 *    come in REPLY_MS gives up that connection (the command is then
 *    ambiguous: it may be run later, when the stalled request gets
 *    through), reconnects, re-checks the keys it used with the ambiguous
 *    command applied or not, and goes on with keys of a new generation;
 *  - at the end, once the network is healed and quiet, a checker reads
 *    every key of every generation (the state must be the model's, with
 *    each ambiguous command applied or not, and no less than a re-check
 *    saw), the shared counter (at least the replies counted, at most the
 *    attempts; every INCR reply distinct), then publishes "fin", after
 *    which the subscribers check what they got, and the test stops the
 *    server (its stop token: signals are not simulated) and checks that
 *    every connection was closed.
 *
 * Seeds draw their latencies; one seed gives one trace over reruns. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"
#include "sim_apps.h"
#include "test.h"

#define MS 1000000LL

enum {
    NCLIENTS = 10,
    NSUB = 3,
    NOPS = 80,
    MAXGEN = NOPS + 1,
    REPLY_MS = 250, /* a reply later than this: the connection is given up */
    MAXELEM = 128,  /* array replies */
    ELEMLEN = 48,
};

/* ------------------------------------------------------------- a reply */

struct elem {
    int nil;
    char s[ELEMLEN];
};

struct reply {
    char type;   /* + - : $ * */
    long long n; /* ':' value; '$' length (-1: nil); '*' count */
    char s[256]; /* '+', '-', '$' text */
    struct elem e[MAXELEM];
};

/* A connection's read buffer. */
struct rconn {
    struct fut_io *io;
    char buf[8192];
    size_t have;
};

/* Parses a line ending at "\r\n" from 'p' (n bytes): its length without
 * the "\r\n", or -1 when incomplete. */
static long line_len(const char *p, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++)
        if (p[i] == '\r' && p[i + 1] == '\n')
            return (long)i;
    return -1;
}

/* A bulk string at 'p': 1 with *used set, 0 incomplete, -1 bad. */
static int parse_bulk(const char *p, size_t n, char *out, size_t cap,
                      long long *len, size_t *used)
{
    long l = line_len(p, n);
    if (l < 0)
        return 0;
    if (p[0] != '$')
        return -1;
    *len = strtoll(p + 1, NULL, 10);
    size_t off = (size_t)l + 2;
    if (*len < 0) {
        *used = off;
        out[0] = 0;
        return 1;
    }
    if (n < off + (size_t)*len + 2)
        return 0;
    if ((size_t)*len >= cap)
        return -1;
    memcpy(out, p + off, (size_t)*len);
    out[*len] = 0;
    *used = off + (size_t)*len + 2;
    return 1;
}

/* One reply from 'p': 1 (consumed '*used'), 0 incomplete, -1 bad. */
static int parse_reply(const char *p, size_t n, struct reply *r, size_t *used)
{
    long l = line_len(p, n);
    if (l < 0)
        return 0;
    r->type = p[0];
    switch (p[0]) {
    case '+':
    case '-':
        if ((size_t)l >= sizeof r->s)
            return -1;
        memcpy(r->s, p + 1, (size_t)l - 1);
        r->s[l - 1] = 0;
        *used = (size_t)l + 2;
        return 1;
    case ':':
        r->n = strtoll(p + 1, NULL, 10);
        *used = (size_t)l + 2;
        return 1;
    case '$':
        return parse_bulk(p, n, r->s, sizeof r->s, &r->n, used);
    case '*': {
        r->n = strtoll(p + 1, NULL, 10);
        if (r->n > MAXELEM)
            return -1;
        size_t off = (size_t)l + 2;
        for (long long i = 0; i < r->n; i++) {
            size_t u;
            long long len;
            int k;
            if (off < n && p[off] == ':') { /* subscribe's count */
                long m = line_len(p + off, n - off);
                if (m < 0)
                    return 0;
                snprintf(r->e[i].s, ELEMLEN, "%.*s", (int)m - 1, p + off + 1);
                r->e[i].nil = 0;
                off += (size_t)m + 2;
                continue;
            }
            k = parse_bulk(p + off, n - off, r->e[i].s, ELEMLEN, &len, &u);
            if (k <= 0)
                return k;
            r->e[i].nil = len < 0;
            off += u;
        }
        *used = off;
        return 1;
    }
    default:
        return -1;
    }
}

/* Reads one reply (deadline 'ms' from now, < 0: none). 0, FUT_ETIMEDOUT,
 * or another error (EOF: -EPIPE; a reply it cannot parse: FUT_EINVAL). */
static int read_reply(struct rconn *c, struct reply *r, int64_t ms)
{
    int64_t until = ms < 0 ? -1 : fut_time_now() + ms * MS;
    for (;;) {
        size_t used;
        int k = parse_reply(c->buf, c->have, r, &used);
        if (k < 0)
            return FUT_EINVAL;
        if (k > 0) {
            memmove(c->buf, c->buf + used, c->have - used);
            c->have -= used;
            return 0;
        }
        if (c->have == sizeof c->buf)
            return FUT_EINVAL;
        struct fut_io_read rd;
        fut_io_read_init(&rd, c->io, c->buf + c->have,
                         sizeof c->buf - c->have);
        int t = until < 0 ? fut_await(&rd)
                          : fut_timeout_await(&rd, until - fut_time_now());
        if (t != 0)
            return t;
        if (rd.result <= 0)
            return rd.result == 0 ? -EPIPE : (int)rd.result;
        c->have += (size_t)rd.result;
    }
}

/* Sends a command of 'argc' words. 0 or the write's error. */
static int send_cmd(struct rconn *c, int argc, const char **argv)
{
    char out[1024];
    size_t n = (size_t)snprintf(out, sizeof out, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++)
        n += (size_t)snprintf(out + n, sizeof out - n, "$%zu\r\n%s\r\n",
                              strlen(argv[i]), argv[i]);
    ssize_t w = fut_write_all(c->io, out, n);
    return w == (ssize_t)n ? 0 : w < 0 ? (int)w : FUT_EINVAL;
}

/* ------------------------------------------------------------ the world */

enum op {
    OP_NONE,
    OP_SET,
    OP_GET,
    OP_INCR,
    OP_GETN,
    OP_LPUSH,
    OP_RPOP,
    OP_LRANGE,
    OP_SHARED,
    OP_PUBLISH,
    OP_COUNT
};

/* What a generation's keys must hold ('pending': the command its
 * connection was given up on, applied or not). */
struct model {
    int sval;       /* the string's value id, -1: unset */
    long long n;    /* the counter (0: unset) */
    int list[NOPS]; /* value ids, left to right */
    int len;
    enum op pending;
    int parg;   /* its value id */
    int landed; /* a re-check saw it applied */
};

struct world {
    int chaos;
    struct server srv;
    int srv_live; /* 'srv' initialised (server_fini before the next) */
    struct fut_token stop;
    struct sockaddr_storage at;
    socklen_t atlen;
    struct fut_sim_host *sh, *checkh;
    struct fut_sim_host *hosts[NCLIENTS + NSUB]; /* clients, subscribers */
    struct fut_sim_host **ch, **subh;
    int done, partitions, timeouts, subscribed;
    struct model m[NCLIENTS][MAXGEN];
    int gens[NCLIENTS];
    /* the shared counter */
    long long shared_ok, shared_amb;
    unsigned char seen[NCLIENTS * NOPS + 2];
    /* pub/sub: per publisher and sequence number */
    unsigned char published[NCLIENTS][NOPS]; /* 1 attempted, 2 confirmed */
    int npub[NCLIENTS];
    int replies_checked;
    char fail[256];
};

static void flunk(struct world *w, const char *fmt, ...)
{
    if (w->fail[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->fail, sizeof w->fail, fmt, ap);
    va_end(ap);
}

static void key(char *k, size_t cap, int id, int gen, char t)
{
    snprintf(k, cap, "c%d:g%d:%c", id, gen, t);
}

static void val(char *v, size_t cap, int id, int vid)
{
    snprintf(v, cap, "v%d.%d", id, vid);
}

/* Applies 'op' with value 'arg' to 'm'. */
static void apply(struct model *m, enum op op, int arg)
{
    switch (op) {
    case OP_SET:
        m->sval = arg;
        break;
    case OP_INCR:
        m->n++;
        break;
    case OP_LPUSH:
        memmove(m->list + 1, m->list, (size_t)m->len * sizeof m->list[0]);
        m->list[0] = arg;
        m->len++;
        break;
    case OP_RPOP:
        if (m->len)
            m->len--;
        break;
    default:
        break;
    }
}

/* 1 when the three keys as read ('s', 'n', 'l') are what 'm' says. */
static int state_is(const struct model *m, int id, const struct reply *s,
                    const struct reply *n, const struct reply *l)
{
    char v[ELEMLEN];
    if (m->sval < 0 ? !(s->type == '$' && s->n < 0)
                    : (val(v, sizeof v, id, m->sval),
                       s->type != '$' || strcmp(s->s, v) != 0))
        return 0;
    if (m->n == 0 ? !(n->type == '$' && n->n < 0)
                  : (n->type != '$' || strtoll(n->s, NULL, 10) != m->n))
        return 0;
    if (l->type != '*' || l->n != m->len)
        return 0;
    for (int i = 0; i < m->len; i++) {
        val(v, sizeof v, id, m->list[i]);
        if (l->e[i].nil || strcmp(l->e[i].s, v) != 0)
            return 0;
    }
    return 1;
}

/* Reads generation 'gen''s keys of client 'id' on 'c' and checks them
 * against its model, with the ambiguous command applied or not. 0, or
 * the connection's error (the caller reconnects and tries again). */
static int recheck(struct world *w, struct rconn *c, int id, int gen)
{
    struct reply *r = malloc(3 * sizeof *r); /* big for a fiber's stack */
    if (!r) {
        flunk(w, "no memory");
        return 0;
    }
    char ks[32], kn[32], kl[32];
    key(ks, sizeof ks, id, gen, 's');
    key(kn, sizeof kn, id, gen, 'n');
    key(kl, sizeof kl, id, gen, 'l');
    const char *a0[] = {"GET", ks}, *a1[] = {"GET", kn},
               *a2[] = {"LRANGE", kl, "0", "-1"};
    int e = send_cmd(c, 2, a0);
    if (!e)
        e = read_reply(c, &r[0], REPLY_MS);
    if (!e)
        e = send_cmd(c, 2, a1);
    if (!e)
        e = read_reply(c, &r[1], REPLY_MS);
    if (!e)
        e = send_cmd(c, 4, a2);
    if (!e)
        e = read_reply(c, &r[2], REPLY_MS);
    if (e) {
        free(r);
        if (e == FUT_EINVAL)
            flunk(w, "client %d: a reply it cannot parse", id);
        return e;
    }
    struct model *m = &w->m[id][gen], with = *m;
    apply(&with, m->pending, m->parg);
    if (!m->landed && state_is(m, id, &r[0], &r[1], &r[2])) {
        free(r);
        return 0;
    }
    if (m->pending != OP_NONE && state_is(&with, id, &r[0], &r[1], &r[2])) {
        m->landed = 1;
        free(r);
        return 0;
    }
    flunk(w,
          "client %d generation %d: keys hold what no command gave "
          "(s %c%s, n %c%s, list of %lld)",
          id, gen, r[0].type, r[0].s, r[1].type, r[1].s, r[2].n);
    free(r);
    return 0;
}

/* ----------------------------------------------------------- a client */

struct client {
    struct world *w;
    int id;
    struct rconn c;
    struct reply r;
    long long last_shared;
};

/* Connects (again) from 'h', retrying every 20 ms until it works. */
static int connect_retry(struct world *w, struct fut_sim_host *h,
                         struct rconn *c)
{
    for (int tries = 0; tries < 1000; tries++) {
        c->have = 0;
        if (sim_dial(h, &w->at, w->atlen, 300 * MS, &c->io) == 0)
            return 0;
        fut_sleep(20 * MS);
    }
    flunk(w, "no connection after 1000 tries");
    return -1;
}

/* Checks the reply 'r' to 'op' (value 'arg') of client 'cl' and updates
 * the model. */
static void check(struct client *cl, struct model *m, enum op op, int arg,
                  int seq)
{
    struct world *w = cl->w;
    const struct reply *r = &cl->r;
    char v[ELEMLEN];
    int ok = 1;
    switch (op) {
    case OP_SET:
        ok = r->type == '+' && !strcmp(r->s, "OK");
        break;
    case OP_GET:
        if (m->sval < 0)
            ok = r->type == '$' && r->n < 0;
        else
            ok = r->type == '$' &&
                 (val(v, sizeof v, cl->id, m->sval), !strcmp(r->s, v));
        break;
    case OP_INCR:
        ok = r->type == ':' && r->n == m->n + 1;
        break;
    case OP_GETN:
        ok = m->n == 0 ? r->type == '$' && r->n < 0
                       : r->type == '$' && strtoll(r->s, NULL, 10) == m->n;
        break;
    case OP_LPUSH:
        ok = r->type == ':' && r->n == m->len + 1;
        break;
    case OP_RPOP:
        if (!m->len)
            ok = r->type == '$' && r->n < 0;
        else
            ok = r->type == '$' &&
                 (val(v, sizeof v, cl->id, m->list[m->len - 1]),
                  !strcmp(r->s, v));
        break;
    case OP_LRANGE:
        ok = r->type == '*' && r->n == m->len;
        for (int i = 0; ok && i < m->len; i++)
            ok =
                (val(v, sizeof v, cl->id, m->list[i]), !strcmp(r->e[i].s, v));
        break;
    case OP_SHARED:
        ok = r->type == ':' && r->n > cl->last_shared &&
             r->n <= NCLIENTS * NOPS && !w->seen[r->n];
        if (ok) {
            w->seen[r->n] = 1;
            cl->last_shared = r->n;
            w->shared_ok++;
        }
        break;
    case OP_PUBLISH:
        ok = r->type == ':' && r->n == NSUB;
        if (ok)
            w->published[cl->id][seq] = 2;
        break;
    default:
        break;
    }
    if (!ok) {
        flunk(w, "client %d: command %d (value %d): wrong reply %c %lld %s",
              cl->id, (int)op, arg, r->type, r->n, r->s);
        return;
    }
    w->replies_checked++;
    apply(m, op, arg);
}

static intptr_t data_client(void *arg)
{
    struct client *cl = arg;
    struct world *w = cl->w;
    int gen = 0, given_up = 0;
    if (connect_retry(w, w->ch[cl->id], &cl->c))
        return 0;
    for (int k = 0; k < NOPS && !w->fail[0]; k++) {
        if (given_up) { /* reconnect, re-check the last generation */
            fut_io_close(cl->c.io);
            cl->c.io = NULL;
            if (connect_retry(w, w->ch[cl->id], &cl->c))
                return 0;
            if (recheck(w, &cl->c, cl->id, gen) != 0)
                continue; /* given up again: reconnect */
            given_up = 0;
            gen++;
            w->gens[cl->id] = gen + 1;
        }
        fut_sleep((int64_t)(fut_sim_random() % 16) * MS);
        struct model *m = &w->m[cl->id][gen];
        enum op op = (enum op)(1 + fut_sim_random() % (OP_COUNT - 1));
        char kb[32], vb[32], mb[48];
        const char *argv[4];
        int argc = 2, seq = 0;
        switch (op) {
        case OP_SET:
        case OP_GET:
            key(kb, sizeof kb, cl->id, gen, 's');
            break;
        case OP_INCR:
        case OP_GETN:
            key(kb, sizeof kb, cl->id, gen, 'n');
            break;
        default:
            key(kb, sizeof kb, cl->id, gen, 'l');
            break;
        }
        argv[1] = kb;
        switch (op) {
        case OP_SET:
            argv[0] = "SET";
            val(vb, sizeof vb, cl->id, k);
            argv[argc++] = vb;
            break;
        case OP_GET:
        case OP_GETN:
            argv[0] = "GET";
            break;
        case OP_INCR:
            argv[0] = "INCR";
            break;
        case OP_LPUSH:
            argv[0] = "LPUSH";
            val(vb, sizeof vb, cl->id, k);
            argv[argc++] = vb;
            break;
        case OP_RPOP:
            argv[0] = "RPOP";
            break;
        case OP_LRANGE:
            argv[0] = "LRANGE";
            argv[argc++] = "0";
            argv[argc++] = "-1";
            break;
        case OP_SHARED:
            argv[0] = "INCR";
            argv[1] = "shared";
            break;
        default: /* OP_PUBLISH */
            seq = w->npub[cl->id]++;
            argv[0] = "PUBLISH";
            argv[1] = "news";
            snprintf(mb, sizeof mb, "m:%d:%d", cl->id, seq);
            argv[argc++] = mb;
            w->published[cl->id][seq] = 1;
            break;
        }
        int e = send_cmd(&cl->c, argc, argv);
        if (!e)
            e = read_reply(&cl->c, &cl->r, REPLY_MS);
        if (e == FUT_EINVAL) {
            flunk(w, "client %d: a reply it cannot parse", cl->id);
            break;
        }
        if (e) { /* ambiguous: run or not, maybe later */
            w->timeouts++;
            given_up = 1;
            if (op == OP_SHARED)
                w->shared_amb++;
            else if (op != OP_PUBLISH) {
                m->pending = op == OP_GET || op == OP_GETN || op == OP_LRANGE
                                 ? OP_NONE
                                 : op;
                m->parg = k;
            }
            continue;
        }
        check(cl, m, op, k, seq);
    }
    if (cl->c.io)
        fut_io_close(cl->c.io);
    return 0;
}

/* --------------------------------------------------------- subscribers */

struct subscriber {
    struct world *w;
    int id;
    struct rconn c;
    struct reply r;
    unsigned char got[NCLIENTS][NOPS];
    int last_confirmed[NCLIENTS]; /* the last confirmed seq seen, -1 */
    int fin;
};

static intptr_t subscriber(void *arg)
{
    struct subscriber *s = arg;
    struct world *w = s->w;
    if (connect_retry(w, w->subh[s->id], &s->c))
        return 0;
    const char *argv[] = {"SUBSCRIBE", "news"};
    if (send_cmd(&s->c, 2, argv) || read_reply(&s->c, &s->r, -1) ||
        s->r.type != '*' || s->r.n != 3 || strcmp(s->r.e[0].s, "subscribe") ||
        strcmp(s->r.e[2].s, "1")) {
        flunk(w, "subscriber %d: SUBSCRIBE failed", s->id);
        goto out;
    }
    w->subscribed++;
    for (int i = 0; i < NCLIENTS; i++)
        s->last_confirmed[i] = -1;
    while (!w->fail[0]) {
        if (read_reply(&s->c, &s->r, -1) || s->r.type != '*' || s->r.n != 3 ||
            strcmp(s->r.e[0].s, "message") || strcmp(s->r.e[1].s, "news")) {
            flunk(w, "subscriber %d: not a message", s->id);
            break;
        }
        if (!strcmp(s->r.e[2].s, "fin")) {
            s->fin = 1;
            break;
        }
        int id, seq;
        if (sscanf(s->r.e[2].s, "m:%d:%d", &id, &seq) != 2 || id < 0 ||
            id >= NCLIENTS || seq < 0 || seq >= NOPS ||
            !w->published[id][seq]) {
            flunk(w, "subscriber %d: message %s nobody sent", s->id,
                  s->r.e[2].s);
            break;
        }
        if (s->got[id][seq]++) {
            flunk(w, "subscriber %d: message %s twice", s->id, s->r.e[2].s);
            break;
        }
        /* Confirmed ones in order (a given-up one may come late). */
        if (w->published[id][seq] == 2) {
            if (seq < s->last_confirmed[id]) {
                flunk(w, "subscriber %d: %s after m:%d:%d", s->id,
                      s->r.e[2].s, id, s->last_confirmed[id]);
                break;
            }
            s->last_confirmed[id] = seq;
        }
    }
out:
    fut_io_close(s->c.io);
    return 0;
}

/* -------------------------------------------------------------- driver */

/* The end: every generation's keys, the shared counter, "fin". */
static void final_check(struct world *w)
{
    struct rconn c;
    memset(&c, 0, sizeof c);
    if (connect_retry(w, w->checkh, &c))
        return;
    for (int id = 0; id < NCLIENTS && !w->fail[0]; id++)
        for (int g = 0; g < w->gens[id] && !w->fail[0]; g++)
            if (recheck(w, &c, id, g) != 0)
                flunk(w, "checker: no reply");
    static struct reply r;
    const char *a0[] = {"GET", "shared"}, *a1[] = {"PUBLISH", "news", "fin"};
    if (!w->fail[0] && (send_cmd(&c, 2, a0) || read_reply(&c, &r, REPLY_MS)))
        flunk(w, "checker: no reply");
    long long v = r.type == '$' && r.n >= 0 ? strtoll(r.s, NULL, 10) : 0;
    if (!w->fail[0] && (v < w->shared_ok || v > w->shared_ok + w->shared_amb))
        flunk(w, "shared counter %lld: %lld replies, %lld ambiguous", v,
              w->shared_ok, w->shared_amb);
    for (long long i = v + 1; !w->fail[0] && i <= NCLIENTS * NOPS; i++)
        if (w->seen[i])
            flunk(w, "INCR replied %lld, the counter is %lld", i, v);
    if (!w->fail[0] && (send_cmd(&c, 3, a1) || read_reply(&c, &r, REPLY_MS) ||
                        r.type != ':' || r.n != NSUB))
        flunk(w, "checker: PUBLISH fin");
    fut_io_close(c.io);
}

static intptr_t driver(void *arg)
{
    struct world *w = arg;
    static struct client cs[NCLIENTS];
    static struct subscriber ss[NSUB];
    struct fut_join cj[NCLIENTS], sj[NSUB], xj;
    for (int i = 0; i < NSUB; i++) {
        memset(&ss[i], 0, sizeof ss[i]);
        ss[i].w = w;
        ss[i].id = i;
        ck_assert_int_eq(
            fut_fiber_spawn(NULL, subscriber, &ss[i], NULL, &sj[i]), 0);
    }
    while (w->subscribed < NSUB && !w->fail[0])
        fut_sleep(MS);
    /* Cuts a seeded client's or subscriber's host off the server for
     * 50-600 ms, every 10-150 ms, until the clients are done. */
    struct sim_chaos x = {w->sh, w->hosts, NCLIENTS + NSUB, 10, 150,
                          50,    600,      &w->done,        0};
    int chaos_on =
        w->chaos && fut_fiber_spawn(NULL, sim_chaos, &x, NULL, &xj) == 0;
    for (int i = 0; i < NCLIENTS; i++) {
        memset(&cs[i], 0, sizeof cs[i]);
        cs[i].w = w;
        cs[i].id = i;
        ck_assert_int_eq(
            fut_fiber_spawn(NULL, data_client, &cs[i], NULL, &cj[i]), 0);
    }
    for (int i = 0; i < NCLIENTS; i++)
        fut_fiber_join(&cj[i], NULL);
    w->done = 1;
    if (chaos_on)
        fut_fiber_join(&xj, NULL); /* it healed what it cut */
    w->partitions = x.partitions;
    fut_sleep(500 * MS); /* whatever stalled has arrived */
    final_check(w);
    for (int i = 0; i < NSUB; i++) {
        if (w->fail[0]) /* a subscriber may wait for ever */
            fut_join_abort(&sj[i]);
        fut_fiber_join(&sj[i], NULL);
        if (w->fail[0])
            continue;
        struct subscriber *s = &ss[i];
        if (!s->fin)
            flunk(w, "subscriber %d: no fin", i);
        for (int p = 0; p < NCLIENTS && !w->fail[0]; p++)
            for (int q = 0; q < w->npub[p]; q++)
                if (w->published[p][q] == 2 && !s->got[p][q])
                    flunk(w, "subscriber %d: m:%d:%d lost", i, p, q);
    }
    fut_sleep(100 * MS); /* the server sees the last closes */
    fut_token_cancel(&w->stop);
    return 0;
}

static struct world world; /* big */
static int total_timeouts; /* over a swarm's seeds */

/* fut_sim_fn: fut-redis on 10.0.0.1:6379, data client i on 10.0.1.(i+1),
 * subscriber i on 10.0.2.(i+1), the checker on 10.0.3.1. */
static int redis_run(struct fut_runtime *rt, void *ud)
{
    struct world *w = ud;
    int chaos_on = w->chaos;
    if (w->srv_live)
        server_fini(&w->srv); /* the last seed's runtime is freed */
    memset(w, 0, sizeof *w);
    w->chaos = chaos_on;
    w->ch = w->hosts;
    w->subh = w->hosts + NCLIENTS;
    struct server_config cfg;
    server_config_init(&cfg);
    cfg.bind[0] = "10.0.0.1";
    cfg.nbind = 1;
    if (server_init(&w->srv, &cfg) != 0)
        return 2;
    w->srv_live = 1;
    fut_token_init(&w->stop);
    if (fut_addr_parse("10.0.0.1", 6379, &w->at, &w->atlen) ||
        fut_sim_host_new(rt, "10.0.0.1", &w->sh) ||
        fut_sim_host_new(rt, "10.0.3.1", &w->checkh))
        return 2;
    for (int i = 0; i < NCLIENTS + NSUB; i++) {
        char addr[32];
        snprintf(addr, sizeof addr, "10.0.%d.%d", i < NCLIENTS ? 1 : 2,
                 (i < NCLIENTS ? i : i - NCLIENTS) + 1);
        if (fut_sim_host_new(
                rt, addr, i < NCLIENTS ? &w->ch[i] : &w->subh[i - NCLIENTS]))
            return 2;
    }
    int64_t lo = (int64_t)(fut_sim_random() % 3) * MS;
    fut_sim_latency(rt, NULL, NULL, lo,
                    lo + (int64_t)(fut_sim_random() % 30) * MS);
    for (int i = 0; i < NCLIENTS; i++)
        w->gens[i] = 1;
    for (int i = 0; i < NCLIENTS; i++)
        for (int g = 0; g < MAXGEN; g++)
            w->m[i][g].sval = -1;
    struct fut_join dj;
    if (fut_fiber_spawn(rt, driver, w, NULL, &dj) != 0)
        return 4;
    /* The server as its main runs it (server_run), stopped by the token
     * instead of a signal; it binds 10.0.0.1, so its sockets are made
     * on the server's host. */
    struct server_task t;
    server_task_init(&t, &w->srv, rt, NULL, &w->stop);
    int r = fut_block_on(rt, &t.base);
    fut_drop(&t.base);
    int d = fut_block_on(rt, &dj.base);
    fut_drop(&dj.base);
    fut_token_fini(&w->stop);
    total_timeouts += w->timeouts;
    if (w->fail[0]) {
        fprintf(stderr, "sim_redis: %s\n", w->fail);
        return 1;
    }
    if (r != 0 || t.result != 0 || d != 0)
        return 5;
    if (atomic_load(&w->srv.clients) != 0)
        return 6; /* a connection the server did not close */
    return 0;
}

static void world_fini(void)
{
    if (world.srv_live)
        server_fini(&world.srv);
    world.srv_live = 0;
}

START_TEST(same_seed)
{
    unsetenv("FUT_SIM_SEED");
    struct fut_sim_report r0;
    world.chaos = 1;
    ASSERT_EQ(fut_sim_run(NULL, 11, redis_run, &world, &r0), 0);
    ck_assert_int_gt(world.partitions, 0);
    ck_assert_int_gt(world.replies_checked, NCLIENTS * NOPS / 2);
    sim_check_traces(redis_run, &world, 11, &r0, SIM_ITERS(10, 3), 100, 5);
    world_fini();
}
END_TEST

/* The swarm from 'first' (FUT_SIM_SEED=N: seed N only, the replay that
 * its failure line prints) on 'cfg' (NULL: one queue); the timeouts of
 * all its seeds. */
static int redis_swarm(int chaos, uint64_t first, const char *replay,
                       const struct fut_rt_config *cfg)
{
    struct fut_sim_swarm sw;
    memset(&sw, 0, sizeof sw);
    sw.replay = replay;
    sw.cfg = cfg;
    world.chaos = chaos;
    total_timeouts = 0;
    ASSERT_EQ(fut_sim_swarm(&sw, first, SIM_ITERS(300, 30), redis_run, &world,
                            NULL),
              0);
    return total_timeouts;
}

/* No partitions: every reply exact, nothing ambiguous. */
START_TEST(seeds)
{
    ASSERT_EQ(redis_swarm(0, 1000, "CK_RUN_CASE=seeds test_sim_redis", NULL),
              0);
    ASSERT_EQ(world.replies_checked, NCLIENTS * NOPS);
    world_fini();
}
END_TEST

/* Partitions mid-run: clients time out, reconnect and re-check. */
START_TEST(partition)
{
    int t =
        redis_swarm(1, 5000, "CK_RUN_CASE=partition test_sim_redis", NULL);
    if (!getenv("FUT_SIM_SEED"))
        ck_assert_int_gt(t, SIM_ITERS(300, 30) / 4); /* replies were cut */
    world_fini();
}
END_TEST

/* Partitions, and 4 workers emulated (fut/sim.h): the connection tasks
 * polled in the orders the multi-thread runtime's queues give. */
START_TEST(workers)
{
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    cfg.workers = 4;
    int t = redis_swarm(1, 9000, "CK_RUN_CASE=workers test_sim_redis", &cfg);
    if (!getenv("FUT_SIM_SEED"))
        ck_assert_int_gt(t, 0);
    world_fini();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_redis");
    TCase *tc = fut_test_tcase(s, "same_seed");
    tcase_add_test(tc, same_seed);
    tc = fut_test_tcase(s, "seeds");
    tcase_add_test(tc, seeds);
    tc = fut_test_tcase(s, "partition");
    tcase_add_test(tc, partition);
    tc = fut_test_tcase(s, "workers");
    tcase_add_test(tc, workers);
    return fut_test_run(s);
}
