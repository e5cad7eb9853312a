/* SPDX-License-Identifier: MIT */
/* The simulated network's wire (rules: backend_sim.c): segments in flight
 * in their direction's queues, the one delivery timer on the driver's
 * wheel, applying due segments to the endpoints, links (latency,
 * partitions and heals). The socket calls that send segments are
 * backend_sim.c's. One thread: the simulation's. */
#include <string.h>

#include "io/simnet_internal.h"

uint64_t fut__sn_draw(struct fut__backend *n, uint64_t k)
{
    struct fut__simrng *r = fut__tls_simrng ? fut__tls_simrng : &n->rng;
    return fut__simrng_below(r, k);
}

static int64_t now_of(struct fut__backend *n)
{
    return n->clk->now(n->d) - n->d->origin;
}

static struct pair *find_pair(struct pair *l, struct fut_sim_host *a,
                              struct fut_sim_host *b)
{
    for (; l; l = l->next)
        if ((l->a == a && l->b == b) || (l->a == b && l->b == a))
            return l;
    return NULL;
}

/* The entry for 'a' and 'b' in list '*l', made (zeroed) when there is
 * none; NULL: no memory. */
static struct pair *pair_get(struct pair **l, struct fut_sim_host *a,
                             struct fut_sim_host *b)
{
    struct pair *p = find_pair(*l, a, b);
    if (p)
        return p;
    p = fut__alloc(sizeof *p);
    if (!p)
        return NULL;
    memset(p, 0, sizeof *p);
    p->a = a;
    p->b = b;
    p->next = *l;
    *l = p;
    return p;
}

/* 1 when nothing goes from 'src' to 'dst' now: the link is cut, or 'dst'
 * is down (crashed: it answers nothing until restarted). */
static int link_cut(struct fut__backend *n, struct fut_sim_host *src,
                    struct fut_sim_host *dst)
{
    return dst->down || (src != dst && find_pair(n->parts, src, dst));
}

/* 1 when segment 's' cannot go now (link_cut). */
static int cut_off(struct fut__backend *n, const struct seg *s)
{
    return link_cut(n, s->src, s->dst);
}

static int64_t delay(struct fut__backend *n, struct fut_sim_host *a,
                     struct fut_sim_host *b)
{
    struct pair *p = find_pair(n->lats, a, b);
    int64_t lo = p ? p->min_ns : n->min_ns, hi = p ? p->max_ns : n->max_ns;
    int64_t d = lo + (int64_t)fut__sn_draw(n, (uint64_t)(hi - lo) + 1);
    return d > 0 ? d : 1; /* after now: never due within this turn */
}

/* The bandwidth of the link between 'a' and 'b' (0: unlimited). */
static uint64_t bandwidth(struct fut__backend *n, struct fut_sim_host *a,
                          struct fut_sim_host *b)
{
    struct pair *p = find_pair(n->bws, a, b);
    return p ? p->bps : n->bps;
}

/* When a segment of 'len' bytes sent now from 'a' to 'b' has left 'a':
 * now on an unlimited link; else after what the direction carries
 * already, at its bandwidth (the link's propagation delay comes on top:
 * delay). A link whose state cannot be allocated is unlimited once. */
static int64_t leave_at(struct fut__backend *n, struct fut_sim_host *a,
                        struct fut_sim_host *b, size_t len)
{
    int64_t now = now_of(n);
    uint64_t bps = bandwidth(n, a, b);
    if (!bps)
        return now;
    struct pair *l = pair_get(&n->links, a, b);
    if (!l)
        return now;
    int64_t *busy = &l->busy[l->a == a ? 0 : 1];
    int64_t start = *busy > now ? *busy : now;
    *busy = start + (int64_t)(((uint64_t)len * 1000000000u + bps - 1) / bps);
    return *busy;
}

/* Reports 'bits' to the endpoint's handle, as an epoll event would. */
void fut__sn_notify(struct ep *e, unsigned bits)
{
    if (!e->io)
        return;
    if (++e->net->tick == 0)
        e->net->tick = 1;
    fut__io_dispatch(e->io, bits, e->net->tick);
}

/* ------------------------------------------------------------- timing */

static void timer_wake(const void *data);
static struct fut_waker timer_clone(const void *data);
static void timer_nop(const void *data)
{
    (void)data;
}
static const struct fut_waker_vtable timer_vt = {timer_clone, timer_wake,
                                                 timer_wake, timer_nop};
static struct fut_waker timer_clone(const void *data)
{
    struct fut_waker w = {data, &timer_vt};
    return w;
}

static void deliver(struct fut__backend *n);

/* Arms the timer for 'at' unless it is armed for that already. */
static void arm_at(struct fut__backend *n, int64_t at)
{
    if (n->armed && n->armed_at == at)
        return;
    if (n->armed)
        n->clk->cancel(&n->tm);
    struct fut_waker w = timer_clone(n);
    n->armed = 1;
    n->armed_at = at;
    if (n->clk->arm(n->d, &n->tm, n->d->origin + at, &w)) {
        n->armed = 0; /* due already: deliver now */
        n->clk->cancel(&n->tm);
        deliver(n);
    }
}

/* The timer for the earliest head of a queue that is not cut off. */
static void rearm(struct fut__backend *n)
{
    int64_t next = INT64_MAX;
    for (struct ep *e = n->eps; e; e = e->next) {
        struct seg *h[2] = {e->inq.head, e->synq.head};
        for (int i = 0; i < 2; i++)
            if (h[i] && h[i]->at < next && !cut_off(n, h[i]))
                next = h[i]->at;
    }
    /* Datagrams are due even across a cut: they are dropped then. */
    if (n->dgq.head && n->dgq.head->at < next)
        next = n->dgq.head->at;
    if (next != INT64_MAX) {
        arm_at(n, next);
    } else if (n->armed) {
        n->clk->cancel(&n->tm);
        n->armed = 0;
    }
}

/* Sends a segment of 'kind' from 'from' (host 'src') to 'to'; for a SYN
 * ('to' NULL) to port 'dport' of 'dst'. A segment that cannot be
 * allocated is lost: the connection is then reset, like a peer out of
 * memory. */
static void send_from(struct fut__backend *n, struct fut_sim_host *src,
                      struct ep *from, int kind, struct ep *to,
                      struct fut_sim_host *dst, int dport, const void *data,
                      size_t len)
{
    struct seg *s = fut__alloc(sizeof *s + len);
    if (!s)
        return;
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->from = from;
    s->to = to;
    s->src = src;
    s->dst = to ? to->host : dst;
    s->dport = dport;
    s->len = len;
    if (len)
        memcpy(s->data, data, len);
    struct queue *q = to ? &to->inq : &from->synq;
    s->at = leave_at(n, s->src, s->dst, len);
    s->at += delay(n, s->src, s->dst);
    if (q->tail && q->tail->at > s->at)
        s->at = q->tail->at; /* a direction stays in order */
    if (q->tail)
        q->tail->next = s;
    else
        q->head = s;
    q->tail = s;
    if (!n->armed || s->at < n->armed_at)
        arm_at(n, s->at);
}

/* On a bandwidth-limited link data goes in pieces of at most BW_CHUNK
 * bytes, each arriving when the link has carried it: a large write
 * reaches the reader spread over time, as it would from a real link. */
void fut__sn_send(struct ep *from, int kind, struct ep *to,
                  struct fut_sim_host *dst, int dport, const void *data,
                  size_t len)
{
    struct fut__backend *n = from->net;
    if (kind == SEG_DATA && len > BW_CHUNK &&
        bandwidth(n, from->host, to->host)) {
        const char *p = data;
        for (size_t off = 0; off < len; off += BW_CHUNK) {
            size_t k = len - off < BW_CHUNK ? len - off : BW_CHUNK;
            send_from(n, from->host, from, kind, to, dst, dport, p + off, k);
        }
        return;
    }
    send_from(n, from->host, from, kind, to, dst, dport, data, len);
}

void fut__sn_poke(struct ep *e)
{
    send_from(e->net, e->host, e, SEG_POKE, e, NULL, 0, NULL, 0);
}

void fut__sn_rst(struct ep *from, struct ep *to)
{
    if (to && to->state != ST_DEAD)
        fut__sn_send(from, SEG_RST, to, NULL, 0, NULL, 0);
}

/* Aborts 'e' with error 'err' (0: none to report): its unread bytes go,
 * every operation ends. */
void fut__sn_kill(struct ep *e, int err)
{
    e->state = ST_DEAD;
    e->err = e->closed ? 0 : err;
    e->rx_off = e->rx_len = 0;
    fut__sn_notify(e, FUT__RD_ALL);
}

struct ep *fut__sn_ep_new(struct fut__backend *n, struct fut_sim_host *h)
{
    struct ep *e = fut__alloc(sizeof *e);
    if (!e)
        return NULL;
    memset(e, 0, sizeof *e);
    e->net = n;
    e->host = h;
    e->fd = -1;
    if (n->eps_tail)
        n->eps_tail->next = e;
    else
        n->eps = e;
    n->eps_tail = e;
    return e;
}

struct ep *fut__sn_listener(struct fut__backend *n, struct fut_sim_host *h,
                            int port)
{
    for (struct ep *e = n->eps; e; e = e->next)
        if (e->kind == K_TCP && e->listener && !e->closed && !e->crashed &&
            e->host == h && e->port == port)
            return e;
    return NULL;
}

struct ep *fut__sn_unix_listener(struct fut__backend *n,
                                 struct fut_sim_host *h, const char *path)
{
    for (struct ep *e = n->eps; e; e = e->next)
        if (e->kind == K_UNIX && e->listener && !e->closed && !e->crashed &&
            e->host == h && strcmp(e->path, path) == 0)
            return e;
    return NULL;
}

struct ep *fut__sn_udp_bound(struct fut__backend *n, struct fut_sim_host *h,
                             int port)
{
    for (struct ep *e = n->eps; e; e = e->next)
        if (e->kind == K_UDP && e->port == port && port && !e->closed &&
            !e->crashed && e->host == h)
            return e;
    return NULL;
}

/* ---------------------------------------------------------- delivery */

static int rx_append(struct ep *e, const char *p, size_t len)
{
    if (e->rx_off && e->rx_off == e->rx_len)
        e->rx_off = e->rx_len = 0;
    if (e->rx_len + len > e->rx_cap) {
        size_t have = e->rx_len - e->rx_off;
        size_t cap = e->rx_cap ? e->rx_cap : 4096;
        while (cap < have + len)
            cap *= 2;
        char *b = fut__alloc(cap);
        if (!b)
            return FUT_ENOMEM;
        if (have)
            memcpy(b, e->rx + e->rx_off, have);
        fut__free(e->rx, e->rx_cap);
        e->rx = b;
        e->rx_cap = cap;
        e->rx_off = 0;
        e->rx_len = have;
    }
    memcpy(e->rx + e->rx_len, p, len);
    e->rx_len += len;
    return 0;
}

static void apply_syn(struct fut__backend *n, struct seg *s)
{
    struct ep *c = s->from;
    struct ep *l = c->kind == K_UNIX
                       ? fut__sn_unix_listener(n, s->dst, s->data)
                       : fut__sn_listener(n, s->dst, s->dport);
    /* Nobody listens, or the accept queue holds more than the backlog
     * (Linux's test: backlog + 1 wait at most): refused. */
    struct ep *a =
        l && l->aq_len <= l->backlog ? fut__sn_ep_new(n, s->dst) : NULL;
    if (!a) {
        if (c->state != ST_DEAD)
            send_from(n, s->dst, NULL, SEG_RST, c, NULL, 0, NULL, 0);
        return;
    }
    a->state = ST_OPEN;
    a->kind = c->kind;
    if (c->kind == K_UNIX) { /* named by the listener's path (Linux) */
        memcpy(a->path, l->path, sizeof a->path);
        memcpy(a->rpath, c->path, sizeof a->rpath);
    }
    a->port = s->dport;
    a->rhost = c->host;
    a->rport = c->port;
    a->peer = c;
    c->peer = a;
    if (l->aq_tail)
        l->aq_tail->aq_next = a;
    else
        l->aq_head = a;
    l->aq_tail = a;
    l->aq_len++;
    fut__sn_notify(l, FUT__RD_READ);
    fut__sn_send(a, SEG_SYNACK, c, NULL, 0, NULL, 0);
}

static void apply(struct fut__backend *n, struct seg *s)
{
    struct ep *e = s->to;
    switch (s->kind) {
    case SEG_SYN:
        apply_syn(n, s);
        break;
    case SEG_SYNACK:
        if (e->closed || e->state != ST_CONNECTING) {
            fut__sn_rst(e, s->from);
            break;
        }
        e->state = ST_OPEN;
        fut__sn_notify(e, FUT__RD_WRITE);
        break;
    case SEG_DATA:
        if (e->state == ST_DEAD)
            break;
        if (e->closed || e->rd_shut || rx_append(e, s->data, s->len) < 0) {
            fut__sn_rst(e, s->from); /* nobody will read it */
            fut__sn_kill(e, ECONNRESET);
            break;
        }
        fut__sn_notify(e, FUT__RD_READ);
        break;
    case SEG_FIN:
        if (e->state == ST_DEAD)
            break;
        e->rd_eof = 1;
        fut__sn_notify(e, FUT__RD_READ | FUT__RD_RCLOSED);
        break;
    case SEG_RST:
        if (e->state != ST_DEAD)
            fut__sn_kill(e, e->state == ST_CONNECTING ? ECONNREFUSED
                                                      : ECONNRESET);
        break;
    case SEG_POKE:
        if (e->state != ST_DEAD)
            fut__sn_notify(e, FUT__RD_READ | FUT__RD_WRITE);
        break;
    }
}

/* A datagram arrives: to the socket bound to its port (a connected one
 * takes only its peer's), unless the link was cut meanwhile or the
 * socket's buffer is full (each datagram counts 256 bytes more than its
 * payload, as the kernel's accounting does roughly). */
static void apply_dgram(struct fut__backend *n, struct seg *s)
{
    if (link_cut(n, s->src, s->dst)) {
        n->udp.cut++;
        return;
    }
    struct ep *e = fut__sn_udp_bound(n, s->dst, s->dport);
    if (!e || (e->rhost && (e->rhost != s->src || e->rport != s->sport))) {
        n->udp.no_socket++;
        return;
    }
    struct dgram *g = NULL;
    if (e->dq_bytes + s->len + 256 <= UDP_RCVBUF)
        g = fut__alloc(sizeof *g + s->len);
    if (!g) {
        n->udp.overflow++;
        return;
    }
    g->next = NULL;
    g->src = s->src;
    g->sport = s->sport;
    g->len = s->len;
    memcpy(g->data, s->data, s->len);
    if (e->dq_tail)
        e->dq_tail->next = g;
    else
        e->dq_head = g;
    e->dq_tail = g;
    e->dq_bytes += s->len + 256;
    n->udp.delivered++;
    fut__sn_notify(e, FUT__RD_READ);
}

void fut__sn_dq_drop(struct ep *e)
{
    struct dgram *g = e->dq_head;
    while (g) {
        struct dgram *next = g->next;
        fut__free(g, sizeof *g + g->len);
        g = next;
    }
    e->dq_head = e->dq_tail = NULL;
    e->dq_bytes = 0;
}

/* Applies every due segment that is not cut off, endpoint by endpoint in
 * creation order (see the rules); then arms the timer for the next. */
static void deliver(struct fut__backend *n)
{
    int64_t now = now_of(n);
    for (struct ep *e = n->eps; e; e = e->next) {
        struct queue *qs[2] = {&e->synq, &e->inq};
        for (int i = 0; i < 2; i++) {
            struct queue *q = qs[i];
            struct seg *s;
            while ((s = q->head) && s->at <= now && !cut_off(n, s)) {
                q->head = s->next;
                if (!q->head)
                    q->tail = NULL;
                apply(n, s);
                fut__free(s, sizeof *s + s->len);
            }
        }
    }
    struct seg *s;
    while ((s = n->dgq.head) && s->at <= now) {
        n->dgq.head = s->next;
        if (!n->dgq.head)
            n->dgq.tail = NULL;
        apply_dgram(n, s);
        fut__free(s, sizeof *s + s->len);
    }
    rearm(n);
}

static void timer_wake(const void *data)
{
    struct fut__backend *n = (struct fut__backend *)data;
    n->armed = 0;
    deliver(n);
}

static void retime(struct fut__backend *n);

int fut__simnet_partition(struct fut_sim_host *a, struct fut_sim_host *b,
                          int on)
{
    struct fut__backend *n = a->net;
    struct pair **pp = &n->parts;
    while (*pp && !((*pp)->a == a && (*pp)->b == b) &&
           !((*pp)->a == b && (*pp)->b == a))
        pp = &(*pp)->next;
    if (on) {
        if (*pp || a == b)
            return 0;
        struct pair *p = fut__alloc(sizeof *p);
        if (!p)
            return FUT_ENOMEM;
        memset(p, 0, sizeof *p);
        p->a = a;
        p->b = b;
        *pp = p;
        return 0;
    }
    if (!*pp)
        return 0;
    struct pair *p = *pp;
    *pp = p->next;
    fut__free(p, sizeof *p);
    retime(n);
    return 0;
}

/* Stalled directions go again, retransmitted from now on: each segment
 * after a new delay, in order; then the timer for the earliest. */
static void retime(struct fut__backend *n)
{
    int64_t now = now_of(n);
    for (struct ep *e = n->eps; e; e = e->next) {
        struct queue *qs[2] = {&e->synq, &e->inq};
        for (int i = 0; i < 2; i++) {
            struct seg *s = qs[i]->head;
            if (!s || s->at > now || cut_off(n, s))
                continue;
            int64_t last = 0;
            for (; s; s = s->next) {
                int64_t at = now + delay(n, s->src, s->dst);
                if (at < last)
                    at = last;
                if (at > s->at)
                    s->at = at;
                last = s->at;
            }
        }
    }
    rearm(n);
}

int fut__simnet_latency(struct fut__backend *b, struct fut_sim_host *x,
                        struct fut_sim_host *y, int64_t min_ns,
                        int64_t max_ns)
{
    if (!x || !y) {
        b->min_ns = min_ns;
        b->max_ns = max_ns;
        return 0;
    }
    struct pair *p = pair_get(&b->lats, x, y);
    if (!p)
        return FUT_ENOMEM;
    p->min_ns = min_ns;
    p->max_ns = max_ns;
    return 0;
}

int fut__simnet_udp_faults(struct fut__backend *b, struct fut_sim_host *x,
                           struct fut_sim_host *y, uint32_t loss,
                           uint32_t dup, uint32_t reorder)
{
    if (!x) {
        b->loss = loss;
        b->dup = dup;
        b->reorder = reorder;
        return 0;
    }
    struct pair *p = pair_get(&b->udpf, x, y);
    if (!p)
        return FUT_ENOMEM;
    p->loss = loss;
    p->dup = dup;
    p->reorder = reorder;
    return 0;
}

int fut__simnet_bandwidth(struct fut__backend *b, struct fut_sim_host *x,
                          struct fut_sim_host *y, uint64_t bps)
{
    if (!x) {
        b->bps = bps;
        return 0;
    }
    struct pair *p = pair_get(&b->bws, x, y);
    if (!p)
        return FUT_ENOMEM;
    p->bps = bps;
    return 0;
}

void fut__simnet_udp_stats(struct fut__backend *b,
                           struct fut__simnet_udp_stats *out)
{
    *out = b->udp;
    out->in_flight = 0;
    for (struct seg *s = b->dgq.head; s; s = s->next)
        out->in_flight++;
}

/* ---------------------------------------------------------- datagrams */

/* The largest one-way delay of the link between 'a' and 'b'. */
static int64_t link_max(struct fut__backend *n, struct fut_sim_host *a,
                        struct fut_sim_host *b)
{
    struct pair *p = find_pair(n->lats, a, b);
    return p ? p->max_ns : n->max_ns;
}

/* Puts one copy of a datagram into the network's queue, by delivery
 * time (after those due at the same time: stable). A datagram not held
 * back arrives after the ones its socket sent before to the same place
 * (a path keeps order); a held one gets an extra delay of up to four
 * times the link's largest, and what is sent after it may overtake it. */
static void dgram_queue(struct fut__backend *n, struct ep *from,
                        struct fut_sim_host *dst, int dport, const void *data,
                        size_t len, int held)
{
    struct seg *s = fut__alloc(sizeof *s + len);
    if (!s) {
        n->udp.lost++; /* as a full queue on the way would */
        return;
    }
    memset(s, 0, sizeof *s);
    s->kind = SEG_DGRAM;
    s->from = from;
    s->src = from->host;
    s->dst = dst;
    s->dport = dport;
    s->sport = from->port;
    s->held = held;
    s->len = len;
    if (len)
        memcpy(s->data, data, len);
    s->at = leave_at(n, s->src, dst, len) + delay(n, s->src, dst);
    if (held)
        s->at += 1 + (int64_t)fut__sn_draw(
                         n, 4 * (uint64_t)link_max(n, s->src, dst) + 1);
    struct seg **pp = &n->dgq.head;
    for (struct seg *q = n->dgq.head; q; q = q->next)
        if (!held && !q->held && q->from == from && q->dst == dst &&
            q->dport == dport && q->at > s->at)
            s->at = q->at;
    while (*pp && (*pp)->at <= s->at)
        pp = &(*pp)->next;
    s->next = *pp;
    *pp = s;
    if (!s->next)
        n->dgq.tail = s;
    if (!n->armed || s->at < n->armed_at)
        arm_at(n, s->at);
}

void fut__sn_dgram(struct ep *from, struct fut_sim_host *dst, int dport,
                   const void *data, size_t len)
{
    struct fut__backend *n = from->net;
    struct fut_sim_host *src = from->host;
    struct pair *p = find_pair(n->udpf, src, dst);
    uint32_t loss = p ? p->loss : n->loss, dup = p ? p->dup : n->dup,
             reorder = p ? p->reorder : n->reorder;
    n->udp.sent++;
    if (loss && fut__sn_draw(n, 1000000) < loss) {
        n->udp.lost++;
        return;
    }
    if (link_cut(n, src, dst)) {
        n->udp.cut++; /* into a partition, or to a host that is down */
        return;
    }
    int copies = 1;
    if (dup && fut__sn_draw(n, 1000000) < dup) {
        copies = 2;
        n->udp.duplicated++;
    }
    for (int i = 0; i < copies; i++) {
        int held = reorder && fut__sn_draw(n, 1000000) < reorder;
        if (held)
            n->udp.reordered++;
        dgram_queue(n, from, dst, dport, data, len, held);
    }
}

/* ------------------------------------------------------ crash, restart */

void fut__sn_drop_queue(struct queue *q)
{
    struct seg *s = q->head;
    while (s) {
        struct seg *next = s->next;
        fut__free(s, sizeof *s + s->len);
        s = next;
    }
    q->head = q->tail = NULL;
}

int fut__simnet_crash(struct fut_sim_host *h)
{
    struct fut__backend *n = h->net;
    if (h->down)
        return FUT_EINVAL;
    h->down = 1;
    /* Every socket of the host dies: what was on its way to it or
     * waiting to leave it (its SYN) is lost, its connections are reset
     * at their peers (as a kernel does for the sockets of a killed
     * process that has unread bytes), its listeners are gone. Endpoints
     * in creation order, so the resets leave in a seeded order. */
    for (struct ep *e = n->eps; e; e = e->next) {
        if (e->host != h || e->crashed)
            continue;
        e->crashed = 1;
        fut__sn_drop_queue(&e->inq);
        fut__sn_drop_queue(&e->synq);
        if (e->kind == K_UDP || e->kind == K_UNIXDG) { /* gone: what it
                                                         held is lost */
            fut__sn_dq_drop(e);
            fut__sn_notify(e, FUT__RD_ALL);
            continue;
        }
        if (e->listener) {
            e->aq_head = e->aq_tail = NULL; /* they die in this loop */
            e->aq_len = 0;
            fut__sn_notify(e, FUT__RD_READ); /* an accept ends */
            continue;
        }
        if (e->state == ST_DEAD || e->state == ST_NEW)
            continue;
        fut__sn_rst(e, e->peer);
        fut__sn_kill(e, ECONNRESET);
    }
    rearm(n);
    return 0;
}

int fut__simnet_down(struct fut_sim_host *h)
{
    return h->down;
}

int fut__simnet_restart(struct fut_sim_host *h)
{
    if (!h->down)
        return FUT_EINVAL;
    h->down = 0;
    retime(h->net); /* what waited for it (SYNs) goes now */
    return 0;
}
