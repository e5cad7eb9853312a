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

/* 1 when segment 's' cannot go now: its link is cut, or the host it goes
 * to is down (crashed: it answers nothing until restarted). */
static int cut_off(struct fut__backend *n, const struct seg *s)
{
    return s->dst->down ||
           (s->src != s->dst && find_pair(n->parts, s->src, s->dst));
}

static int64_t delay(struct fut__backend *n, struct fut_sim_host *a,
                     struct fut_sim_host *b)
{
    struct pair *p = find_pair(n->lats, a, b);
    int64_t lo = p ? p->min_ns : n->min_ns, hi = p ? p->max_ns : n->max_ns;
    int64_t d = lo + (int64_t)fut__sn_draw(n, (uint64_t)(hi - lo) + 1);
    return d > 0 ? d : 1; /* after now: never due within this turn */
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
    s->at = now_of(n) + delay(n, s->src, s->dst);
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

void fut__sn_send(struct ep *from, int kind, struct ep *to,
                  struct fut_sim_host *dst, int dport, const void *data,
                  size_t len)
{
    send_from(from->net, from->host, from, kind, to, dst, dport, data, len);
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
        if (e->listener && !e->closed && !e->crashed && e->host == h &&
            e->port == port)
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
    struct ep *l = fut__sn_listener(n, s->dst, s->dport);
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
    struct pair *p = find_pair(b->lats, x, y);
    if (!p) {
        p = fut__alloc(sizeof *p);
        if (!p)
            return FUT_ENOMEM;
        memset(p, 0, sizeof *p);
        p->a = x;
        p->b = y;
        p->next = b->lats;
        b->lats = p;
    }
    p->min_ns = min_ns;
    p->max_ns = max_ns;
    return 0;
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
