/* SPDX-License-Identifier: MIT */
/* The simulation's network: the third backend (backend.h), serving TCP
 * sockets from memory in virtual time (fut/sim.h, docs/simulation.md).
 *
 * A simulated socket is an endpoint ('struct ep') with a real placeholder
 * fd (an eventfd nobody reads), so fd-keyed tables and fut_io_fd keep
 * working; the socket calls on it (socket, bind, listen, connect,
 * shutdown, *sockopt, getsockname, close) come here through the syscall
 * shim's hook (platform/sys.h), its reads, writes and accepts through
 * this backend's 'op', which runs the reactor's readiness step
 * (fut__io_do_with) with sim_call in place of the syscall. Readiness is
 * the reactor's word: a change that may let an operation go on (bytes
 * arrived, room to write, a connection to accept, established, reset)
 * is reported with fut__io_dispatch, as epoll would.
 *
 * Rules:
 *   - one thread: the simulation's. Only the fd table (fd -> endpoint,
 *     for the hook, which sees an fd number) is shared by every
 *     simulation of the process, under 'table_lock'. An entry lives
 *     exactly while its placeholder fd is open by us (removed before the
 *     placeholder's close; at the network's free, entries go and the
 *     placeholders stay open for the handles that still hold them), so a
 *     number in the table is never another thread's fd: a caller on
 *     another thread that reads 'table_live' stale finds nothing either
 *     way;
 *   - every segment (SYN, SYN-ACK, data, FIN, RST) goes into the queue of
 *     its direction (the receiving endpoint's 'inq'; a SYN into its
 *     sender's 'synq') with its delivery time: the send's virtual time
 *     plus a delay drawn from the seed for the link (fut_sim_latency),
 *     never before the segment ahead of it, so a direction is ordered;
 *   - one timer of the driver's wheel is armed for the earliest head of
 *     a queue; when it fires, every queue's due segments are applied in
 *     the order of the endpoints' creation (never addresses);
 *   - a queue whose head's link is partitioned stalls (TCP retransmits):
 *     nothing of that direction is applied until fut_sim_heal, which
 *     gives the stalled queues new delivery times from the heal on;
 *   - the sizes of reads and writes are cut at random (the seed) so that
 *     partial transfers happen; a write takes at most the room left in
 *     the peer's window (SNDBUF bytes sent and not yet read);
 *   - an endpoint lives until the network is freed (closed ones too:
 *     segments may still arrive for them, answered with RST).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>

#include "io/io_internal.h"
#include "io/simnet.h"
#include "platform/simrng.h"
#include "platform/sys.h"

#define SNDBUF (64 * 1024)
#define FIRST_PORT 49152
#define DEFAULT_MIN_NS 1000000
#define DEFAULT_MAX_NS 3000000

enum { SEG_SYN, SEG_SYNACK, SEG_DATA, SEG_FIN, SEG_RST };
enum { ST_NEW, ST_CONNECTING, ST_OPEN, ST_DEAD };

struct ep;

/* A segment in flight. */
struct seg {
    struct seg *next;     /* the next of its direction's queue */
    int64_t at;           /* virtual delivery time (ns since the start) */
    int kind;             /* SEG_* */
    struct ep *from, *to; /* SYN: 'to' NULL, 'dst'/'dport' name it;
                             a refusal's RST: 'from' NULL */
    struct fut_sim_host *src, *dst; /* the link (partitions, latency) */
    int dport;                      /* SYN: the port connected to */
    size_t len;                     /* DATA: bytes in 'data' */
    char data[];
};

/* One direction's segments, in delivery order. */
struct queue {
    struct seg *head, *tail;
};

struct fut_sim_host {
    struct fut_sim_host *next; /* net->hosts, creation order */
    struct fut__backend *net;  /* its network */
    struct fut_runtime *rt;    /* fut_sim_host_new's (NULL: the default) */
    int family;                /* AF_INET or AF_INET6 */
    unsigned char addr[16];    /* its address (4 bytes for IPv4) */
    int next_port;             /* the next ephemeral port */
};

/* A socket: a listener, or one end of a connection. */
struct ep {
    struct ep *next; /* net->eps, creation order */
    struct fut__backend *net;
    struct fut_sim_host *host; /* where it lives */
    int fd;             /* placeholder, -1: none (not accepted, closed) */
    struct fut__io *io; /* the registered handle, or NULL */
    int listener;       /* listen() ran */
    int state;          /* ST_* */
    int port;           /* local port, 0: not bound yet */
    struct fut_sim_host *rhost; /* the peer's host and port */
    int rport;
    struct ep *peer; /* the other end, once the SYN arrived */
    int closed;      /* the user closed it (the fd is gone) */
    int rd_eof;      /* the peer's FIN arrived */
    int rd_shut;     /* shutdown(SHUT_RD) */
    int wr_shut;     /* FIN sent */
    int err;         /* errno to report once (SO_ERROR, next op) */
    char *rx;        /* bytes arrived, not read: rx[rx_off, rx_len) */
    size_t rx_off, rx_len, rx_cap;
    size_t unacked;    /* bytes sent to the peer, not yet read by it */
    struct queue inq;  /* segments toward this endpoint */
    struct queue synq; /* this endpoint's SYN */
    struct ep *aq_head, *aq_tail; /* listener: connections to accept */
    struct ep *aq_next;           /* in its listener's queue */
};

/* A pair of hosts: a partition, or a link's latency. */
struct pair {
    struct pair *next;
    struct fut_sim_host *a, *b;
    int64_t min_ns, max_ns; /* latency (partitions: unused) */
};

/* The network (the backend's state). */
struct fut__backend {
    struct fut__iodrv *d;                /* its driver */
    const struct fut__simnet_clock *clk; /* the driver's (simnet.h) */
    struct ep *eps, *eps_tail;           /* every endpoint, in order */
    struct fut_sim_host *hosts;          /* every host, in order */
    struct fut_sim_host *deflt;          /* 127.0.0.1 */
    struct pair *parts, *lats;           /* cut links; link latencies */
    int64_t min_ns, max_ns;              /* the default latency */
    struct fut__simrng rng; /* draws outside the simulation's polls */
    uint32_t tick;          /* the readiness word's event tick */
    struct fut__timer tm;   /* the delivery timer */
    int armed;              /* 'tm' is armed ... */
    int64_t armed_at;       /* ... for this time */
};

_Thread_local struct fut_sim_host *fut__simnet_current;

/* ------------------------------------------------------------ fd table */

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ep **table; /* indexed by fd */
static size_t table_cap;
static fut__aword table_live; /* entries; relaxed: the hook's hint */

static int table_put(int fd, struct ep *e)
{
    int r = 0;
    pthread_mutex_lock(&table_lock);
    if ((size_t)fd >= table_cap) {
        size_t cap = table_cap ? table_cap : 64;
        while (cap <= (size_t)fd)
            cap *= 2;
        struct ep **n = fut__alloc(cap * sizeof *n);
        if (!n) {
            r = FUT_ENOMEM;
        } else {
            memset(n, 0, cap * sizeof *n);
            if (table)
                memcpy(n, table, table_cap * sizeof *n);
            fut__free(table, table_cap * sizeof *n);
            table = n;
            table_cap = cap;
        }
    }
    if (r == 0) {
        table[fd] = e;
        fut__store(&table_live, fut__load(&table_live, FUT__RELAXED) + 1,
                   FUT__RELAXED);
    }
    pthread_mutex_unlock(&table_lock);
    return r;
}

static struct ep *table_get(int fd)
{
    if (fd < 0 || fut__load(&table_live, FUT__RELAXED) == 0)
        return NULL;
    pthread_mutex_lock(&table_lock);
    struct ep *e = (size_t)fd < table_cap ? table[fd] : NULL;
    pthread_mutex_unlock(&table_lock);
    return e;
}

static void table_del(int fd)
{
    pthread_mutex_lock(&table_lock);
    if ((size_t)fd < table_cap && table[fd]) {
        table[fd] = NULL;
        uintptr_t live = fut__load(&table_live, FUT__RELAXED) - 1;
        fut__store(&table_live, live, FUT__RELAXED);
        if (live == 0) { /* nothing left: give the memory back */
            fut__free(table, table_cap * sizeof *table);
            table = NULL;
            table_cap = 0;
        }
    }
    pthread_mutex_unlock(&table_lock);
}

/* ------------------------------------------------------------- helpers */

static uint64_t draw_below(struct fut__backend *n, uint64_t k)
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

static int cut_off(struct fut__backend *n, const struct seg *s)
{
    return s->src != s->dst && find_pair(n->parts, s->src, s->dst);
}

static int64_t delay(struct fut__backend *n, struct fut_sim_host *a,
                     struct fut_sim_host *b)
{
    struct pair *p = find_pair(n->lats, a, b);
    int64_t lo = p ? p->min_ns : n->min_ns, hi = p ? p->max_ns : n->max_ns;
    int64_t d = lo + (int64_t)draw_below(n, (uint64_t)(hi - lo) + 1);
    return d > 0 ? d : 1; /* after now: never due within this turn */
}

/* Reports 'bits' to the endpoint's handle, as an epoll event would. */
static void notify(struct ep *e, unsigned bits)
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

static void send_seg(struct ep *from, int kind, struct ep *to,
                     struct fut_sim_host *dst, int dport, const void *data,
                     size_t len)
{
    send_from(from->net, from->host, from, kind, to, dst, dport, data, len);
}

static void send_rst(struct ep *from, struct ep *to)
{
    if (to && to->state != ST_DEAD)
        send_seg(from, SEG_RST, to, NULL, 0, NULL, 0);
}

/* Aborts 'e' with error 'err' (0: none to report): its unread bytes go,
 * every operation ends. */
static void kill_ep(struct ep *e, int err)
{
    e->state = ST_DEAD;
    e->err = e->closed ? 0 : err;
    e->rx_off = e->rx_len = 0;
    notify(e, FUT__RD_ALL);
}

static struct ep *ep_new(struct fut__backend *n, struct fut_sim_host *h)
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

static struct ep *find_listener(struct fut__backend *n,
                                struct fut_sim_host *h, int port)
{
    for (struct ep *e = n->eps; e; e = e->next)
        if (e->listener && !e->closed && e->host == h && e->port == port)
            return e;
    return NULL;
}

static int ephemeral(struct fut__backend *n, struct fut_sim_host *h)
{
    int p;
    do {
        p = h->next_port++;
        if (h->next_port > 65535)
            h->next_port = FIRST_PORT;
    } while (find_listener(n, h, p));
    return p;
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
    struct ep *l = find_listener(n, s->dst, s->dport);
    struct ep *a = l ? ep_new(n, s->dst) : NULL;
    if (!a) { /* nobody listens: refused */
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
    notify(l, FUT__RD_READ);
    send_seg(a, SEG_SYNACK, c, NULL, 0, NULL, 0);
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
            send_rst(e, s->from);
            break;
        }
        e->state = ST_OPEN;
        notify(e, FUT__RD_WRITE);
        break;
    case SEG_DATA:
        if (e->state == ST_DEAD)
            break;
        if (e->closed || e->rd_shut || rx_append(e, s->data, s->len) < 0) {
            send_rst(e, s->from); /* nobody will read it */
            kill_ep(e, ECONNRESET);
            break;
        }
        notify(e, FUT__RD_READ);
        break;
    case SEG_FIN:
        if (e->state == ST_DEAD)
            break;
        e->rd_eof = 1;
        notify(e, FUT__RD_READ | FUT__RD_RCLOSED);
        break;
    case SEG_RST:
        if (e->state != ST_DEAD)
            kill_ep(e, e->state == ST_CONNECTING ? ECONNREFUSED : ECONNRESET);
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

/* ------------------------------------------------------- the socket calls */

static void fill_addr(const struct fut_sim_host *h, int port, void *out,
                      socklen_t *lenp)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t len;
    if (h->family == AF_INET) {
        struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        memcpy(&v4->sin_addr, h->addr, 4);
        len = sizeof *v4;
    } else {
        struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        memcpy(&v6->sin6_addr, h->addr, 16);
        len = sizeof *v6;
    }
    if (out && lenp) {
        memcpy(out, &ss, *lenp < len ? *lenp : len);
        *lenp = len;
    }
}

/* The host and port of 'sa'; '*any' = 1 for the wildcard address, '*lo'
 * for loopback. FUT_EINVAL for another family. */
static int parse_addr(const void *sa, socklen_t len, int *family,
                      unsigned char ip[16], int *port, int *any, int *lo)
{
    const struct sockaddr *a = sa;
    static const unsigned char zero[16];
    memset(ip, 0, 16);
    if (a && a->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *v4 = sa;
        memcpy(ip, &v4->sin_addr, 4);
        *family = AF_INET;
        *port = ntohs(v4->sin_port);
        *any = memcmp(ip, zero, 4) == 0;
        *lo = ip[0] == 127;
        return 0;
    }
    if (a && a->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *v6 = sa;
        memcpy(ip, &v6->sin6_addr, 16);
        *family = AF_INET6;
        *port = ntohs(v6->sin6_port);
        *any = memcmp(ip, zero, 16) == 0;
        *lo = memcmp(ip, zero, 15) == 0 && ip[15] == 1;
        return 0;
    }
    return FUT_EINVAL;
}

static struct fut_sim_host *host_by_ip(struct fut__backend *n, int family,
                                       const unsigned char ip[16])
{
    for (struct fut_sim_host *h = n->hosts; h; h = h->next)
        if (h->family == family &&
            memcmp(h->addr, ip, family == AF_INET ? 4 : 16) == 0)
            return h;
    return NULL;
}

static long do_socket(struct fut__backend *n)
{
    struct fut_sim_host *h = fut__simnet_current;
    if (!h || h->net != n)
        h = n->deflt;
    struct ep *e = ep_new(n, h);
    if (!e)
        return FUT_ENOMEM;
    int fd = fut__sys_eventfd();
    if (fd < 0)
        return fd; /* 'e' stays, unused, until the network goes */
    int r = table_put(fd, e);
    if (r < 0) {
        fut__sys_close(fd);
        return r;
    }
    e->fd = fd;
    return fd;
}

static long do_bind(struct ep *e, const void *sa, socklen_t len)
{
    int family, port, any, lo;
    unsigned char ip[16];
    if (parse_addr(sa, len, &family, ip, &port, &any, &lo) < 0)
        return FUT_EINVAL;
    if (e->port || e->state != ST_NEW)
        return FUT_EINVAL;
    struct fut_sim_host *h = e->host;
    if (!any && !lo) {
        h = host_by_ip(e->net, family, ip);
        if (!h)
            return -EADDRNOTAVAIL;
    }
    if (port && find_listener(e->net, h, port))
        return -EADDRINUSE;
    e->host = h; /* a bind to a host's address puts it there */
    e->port = port ? port : ephemeral(e->net, h);
    return 0;
}

static long do_listen(struct ep *e)
{
    if (e->state != ST_NEW)
        return FUT_EINVAL;
    if (!e->port)
        e->port = ephemeral(e->net, e->host);
    e->listener = 1;
    return 0;
}

static long do_connect(struct ep *e, const void *sa, socklen_t len)
{
    int family, port, any, lo;
    unsigned char ip[16];
    if (parse_addr(sa, len, &family, ip, &port, &any, &lo) < 0)
        return FUT_EINVAL;
    if (e->listener)
        return FUT_EINVAL;
    if (e->state == ST_CONNECTING)
        return -EALREADY;
    if (e->state != ST_NEW)
        return -EISCONN;
    struct fut_sim_host *h = lo ? e->host : host_by_ip(e->net, family, ip);
    if (!h || any)
        return -ENETUNREACH;
    if (!e->port)
        e->port = ephemeral(e->net, e->host);
    e->rhost = h;
    e->rport = port;
    e->state = ST_CONNECTING;
    send_seg(e, SEG_SYN, NULL, h, port, NULL, 0);
    return -EINPROGRESS;
}

static long do_shutdown(struct ep *e, int how)
{
    if (e->state != ST_OPEN)
        return -ENOTCONN;
    if ((how == SHUT_WR || how == SHUT_RDWR) && !e->wr_shut) {
        e->wr_shut = 1;
        send_seg(e, SEG_FIN, e->peer, NULL, 0, NULL, 0);
    }
    if (how == SHUT_RD || how == SHUT_RDWR) {
        e->rd_shut = 1;
        notify(e, FUT__RD_READ | FUT__RD_RCLOSED);
    }
    return 0;
}

static void ep_close(struct ep *e)
{
    e->closed = 1;
    if (e->listener) { /* connections nobody accepted are reset */
        struct ep *a;
        while ((a = e->aq_head)) {
            e->aq_head = a->aq_next;
            a->closed = 1;
            send_rst(a, a->peer);
            a->state = ST_DEAD;
        }
        e->aq_tail = NULL;
        return;
    }
    if (e->state != ST_OPEN)
        return; /* connecting: the SYN-ACK is answered with RST */
    if (e->rx_len > e->rx_off) { /* unread bytes: abort (as Linux) */
        send_rst(e, e->peer);
        e->state = ST_DEAD;
    } else if (!e->wr_shut) {
        e->wr_shut = 1;
        send_seg(e, SEG_FIN, e->peer, NULL, 0, NULL, 0);
    }
}

static long do_getsockopt(struct ep *e, int level, int name, void *out,
                          socklen_t *lenp)
{
    int v = 0;
    if (level == SOL_SOCKET && name == SO_ERROR) {
        v = e->err;
        e->err = 0;
    } else if (level == SOL_SOCKET && name == SO_TYPE) {
        v = SOCK_STREAM;
    } else if (level == SOL_SOCKET && name == SO_ACCEPTCONN) {
        v = e->listener;
    }
    if (out && lenp && *lenp >= sizeof v) {
        memcpy(out, &v, sizeof v);
        *lenp = sizeof v;
    }
    return 0;
}

static long do_getsockname(struct ep *e, int peer, void *out, socklen_t *lenp)
{
    if (!peer) {
        fill_addr(e->host, e->port, out, lenp);
        return 0;
    }
    if (!e->rhost || e->state == ST_CONNECTING || e->state == ST_NEW)
        return -ENOTCONN;
    fill_addr(e->rhost, e->rport, out, lenp);
    return 0;
}

/* The shim's hook (platform/sys.h). */
static int net_hook(struct fut__sys_netcall *c, long *res)
{
    if (c->op == FUT__SYS_SOCKET) {
        struct fut__iodrv *d = fut__iodrv_current();
        if (!d || d->bvt != &fut__backend_sim)
            return 0;
        int type = c->b & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
        if ((c->a == AF_INET || c->a == AF_INET6) && type == SOCK_STREAM)
            *res = do_socket(d->be);
        else
            *res = FUT_EINVAL; /* not simulated: no real socket either */
        return 1;
    }
    struct ep *e = table_get(c->fd);
    if (!e)
        return 0;
    switch (c->op) {
    case FUT__SYS_BIND:
        *res = do_bind(e, c->in, c->len);
        return 1;
    case FUT__SYS_LISTEN:
        *res = do_listen(e);
        return 1;
    case FUT__SYS_CONNECT:
        *res = do_connect(e, c->in, c->len);
        return 1;
    case FUT__SYS_SHUTDOWN:
        *res = do_shutdown(e, c->a);
        return 1;
    case FUT__SYS_SETSOCKOPT:
        *res = 0; /* every option is accepted and has no effect */
        return 1;
    case FUT__SYS_GETSOCKOPT:
        *res = do_getsockopt(e, c->a, c->b, c->out, c->lenp);
        return 1;
    case FUT__SYS_GETSOCKNAME:
        *res = do_getsockname(e, c->a, c->out, c->lenp);
        return 1;
    case FUT__SYS_CLOSE:
        table_del(c->fd);
        e->fd = -1;
        *res = fut__sys_close(c->fd); /* the placeholder: the kernel's */
        ep_close(e);
        return 1;
    default:
        return 0;
    }
}

/* ------------------------------------------------------ the operations */

/* A length cut at random to [1, len] (a partial transfer), 1 in 4. */
static size_t cut_len(struct fut__backend *n, size_t len)
{
    if (len > 1 && draw_below(n, 4) == 0)
        return 1 + (size_t)draw_below(n, len - 1);
    return len;
}

static long sim_read(struct ep *e, void *buf, size_t len, int peek)
{
    if (e->listener)
        return FUT_EINVAL;
    if (e->err) {
        long r = -e->err;
        e->err = 0;
        return r;
    }
    size_t avail = e->rx_len - e->rx_off;
    if (avail && len) {
        size_t n = cut_len(e->net, len < avail ? len : avail);
        memcpy(buf, e->rx + e->rx_off, n);
        if (peek)
            return (long)n;
        e->rx_off += n;
        if (e->peer) { /* room in the peer's window */
            e->peer->unacked -= n;
            notify(e->peer, FUT__RD_WRITE);
        }
        return (long)n;
    }
    if (!len || e->state == ST_DEAD || e->rd_eof || e->rd_shut)
        return 0;
    return e->state == ST_NEW ? -ENOTCONN : -EAGAIN;
}

static long sim_write(struct ep *e, const struct fut__op *op)
{
    if (e->listener)
        return FUT_EINVAL;
    if (e->err) {
        long r = -e->err;
        e->err = 0;
        return r;
    }
    if (e->state == ST_DEAD || e->wr_shut)
        return -EPIPE;
    if (e->state == ST_NEW)
        return -ENOTCONN;
    if (e->state == ST_CONNECTING || e->unacked >= SNDBUF)
        return -EAGAIN;
    struct iovec one = {op->buf, op->len};
    const struct iovec *iov = &one;
    int cnt = 1;
    if (op->kind == FUT__OP_WRITEV || op->kind == FUT__OP_SENDV) {
        iov = op->iov;
        cnt = op->iovcnt;
    }
    size_t total = 0;
    for (int i = 0; i < cnt; i++)
        total += iov[i].iov_len;
    if (total == 0)
        return 0;
    size_t room = SNDBUF - e->unacked;
    size_t n = cut_len(e->net, total < room ? total : room);
    char *buf = fut__alloc(n);
    if (!buf)
        return FUT_ENOMEM;
    size_t off = 0;
    for (int i = 0; i < cnt && off < n; i++) {
        size_t k = iov[i].iov_len < n - off ? iov[i].iov_len : n - off;
        memcpy(buf + off, iov[i].iov_base, k);
        off += k;
    }
    send_seg(e, SEG_DATA, e->peer, NULL, 0, buf, n);
    fut__free(buf, n);
    e->unacked += n;
    return (long)n;
}

static long sim_accept(struct ep *l, const struct fut__op *op)
{
    if (!l->listener)
        return FUT_EINVAL;
    struct ep *a = l->aq_head;
    if (!a)
        return -EAGAIN;
    int fd = fut__sys_eventfd();
    if (fd < 0)
        return fd;
    int r = table_put(fd, a);
    if (r < 0) {
        fut__sys_close(fd);
        return r;
    }
    l->aq_head = a->aq_next;
    if (!l->aq_head)
        l->aq_tail = NULL;
    a->aq_next = NULL;
    a->fd = fd;
    if (op->addr && op->alen) {
        *op->alen = sizeof(struct sockaddr_storage);
        fill_addr(a->rhost, a->rport, op->addr, op->alen);
    }
    return fd;
}

static struct ep *ep_of(struct fut__backend *b, struct fut__io *io)
{
    struct ep *e = io->bstate[0];
    if (!e) {
        e = table_get(io->fd);
        if (e && e->net != b)
            e = NULL; /* another simulation's */
    }
    return e;
}

/* fut__io_do_with's call: the operation on the endpoint. */
static long sim_call(struct fut__io *io, const struct fut__op *op)
{
    struct fut__iodrv *d = fut__iodrv_current();
    struct ep *e = ep_of(d->be, io);
    /* A short transfer here is the seed's cut, not a drained buffer: the
     * next operation finds out (EAGAIN) and clears readiness then. */
    fut__sys_shortened = 1;
    if (!e)
        return FUT_EINVAL;
    switch (op->kind) {
    case FUT__OP_READ:
    case FUT__OP_RECV:
        return sim_read(e, op->buf, op->len, (op->flags & MSG_PEEK) != 0);
    case FUT__OP_WRITE:
    case FUT__OP_SEND:
    case FUT__OP_WRITEV:
    case FUT__OP_SENDV:
        return sim_write(e, op);
    case FUT__OP_ACCEPT:
        return sim_accept(e, op);
    default:
        return -EOPNOTSUPP; /* datagrams are not simulated */
    }
}

/* ---------------------------------------------------------- the table */

static int sim_create(struct fut__backend **out, int wakefd)
{
    (void)wakefd; /* a simulation's park never sleeps (driver.c) */
    struct fut__backend *n = fut__alloc(sizeof *n);
    if (!n)
        return FUT_ENOMEM;
    memset(n, 0, sizeof *n);
    n->min_ns = DEFAULT_MIN_NS;
    n->max_ns = DEFAULT_MAX_NS;
    fut__simrng_seed(&n->rng, 0x73696d6e6574ull);
    fut__aword_init(&n->tm.state, FUT__TIMER_IDLE); /* fut__timer_init */
    int r = fut__simnet_host_new(n, NULL, "127.0.0.1", &n->deflt);
    if (r < 0) {
        fut__free(n, sizeof *n);
        return r;
    }
    /* Relaxed: set once per process, always to the same function. */
    fut__store(&fut__sys_net, (uintptr_t)net_hook, FUT__RELAXED);
    *out = n;
    return 0;
}

static void free_queue(struct queue *q)
{
    struct seg *s = q->head;
    while (s) {
        struct seg *next = s->next;
        fut__free(s, sizeof *s + s->len);
        s = next;
    }
}

static void free_pairs(struct pair *p)
{
    while (p) {
        struct pair *next = p->next;
        fut__free(p, sizeof *p);
        p = next;
    }
}

static void sim_destroy(struct fut__backend *n)
{
    /* The timer was killed with the driver's (drv_shutdown). */
    struct ep *e = n->eps;
    while (e) {
        struct ep *next = e->next;
        if (e->fd >= 0) /* a handle outlives us: its close is the kernel's */
            table_del(e->fd);
        free_queue(&e->inq);
        free_queue(&e->synq);
        fut__free(e->rx, e->rx_cap);
        fut__free(e, sizeof *e);
        e = next;
    }
    struct fut_sim_host *h = n->hosts;
    while (h) {
        struct fut_sim_host *next = h->next;
        fut__free(h, sizeof *h);
        h = next;
    }
    free_pairs(n->parts);
    free_pairs(n->lats);
    fut__free(n, sizeof *n);
}

static int sim_op(struct fut__backend *b, struct fut__io *io,
                  const struct fut__op *op, struct fut_context *cx, long *res)
{
    if (!ep_of(b, io)) /* a real fd: tried, refused at registration */
        return fut__io_do(b, io, op, cx, res);
    return fut__io_do_with(io, op, cx, res, sim_call);
}

static int sim_watch(struct fut__backend *b, struct fut__io *io)
{
    struct ep *e = ep_of(b, io);
    if (!e)
        return FUT_EINVAL; /* no real I/O in a simulation (fut/sim.h) */
    e->io = io;
    io->bstate[0] = e;
    return 0;
}

static int sim_unwatch(struct fut__backend *b, struct fut__io *io)
{
    struct ep *e = io->bstate[0];
    (void)b;
    if (e)
        e->io = NULL;
    io->bstate[0] = NULL;
    return 0;
}

static int sim_forget(struct fut__backend *b, struct fut__io *io, int detach)
{
    (void)detach;
    sim_unwatch(b, io);
    return 0;
}

static int sim_wait(struct fut__backend *b, int64_t timeout_ns, uint32_t tick,
                    int *woken)
{
    (void)b;
    (void)timeout_ns;
    (void)tick;
    (void)woken;
    return 0; /* segments arrive by the timer */
}

const struct fut__backend_vt fut__backend_sim = {
    .name = "sim",
    .create = sim_create,
    .destroy = sim_destroy,
    .op = sim_op,
    .op_drop = NULL,
    .watch = sim_watch,
    .unwatch = sim_unwatch,
    .unwatch_by_number = 0,
    .forget = sim_forget,
    .wait = sim_wait,
};

/* ------------------------------------------------------- the test API */

void fut__simnet_bind(struct fut__backend *b, struct fut__iodrv *d,
                      const struct fut__simnet_clock *c)
{
    b->d = d;
    b->clk = c;
}

struct fut__backend *fut__simnet_of(struct fut_sim_host *h)
{
    return h->net;
}

struct fut_runtime *fut__simnet_rt(struct fut_sim_host *h)
{
    return h->rt;
}

int fut__simnet_host_new(struct fut__backend *b, struct fut_runtime *rt,
                         const char *addr, struct fut_sim_host **out)
{
    unsigned char ip[16];
    memset(ip, 0, sizeof ip);
    int family = AF_INET;
    if (!addr)
        return FUT_EINVAL;
    if (inet_pton(AF_INET, addr, ip) != 1) {
        family = AF_INET6;
        if (inet_pton(AF_INET6, addr, ip) != 1)
            return FUT_EINVAL;
    }
    if (host_by_ip(b, family, ip))
        return FUT_EINVAL;
    struct fut_sim_host *h = fut__alloc(sizeof *h);
    if (!h)
        return FUT_ENOMEM;
    memset(h, 0, sizeof *h);
    h->net = b;
    h->rt = rt;
    h->family = family;
    memcpy(h->addr, ip, sizeof ip);
    h->next_port = FIRST_PORT;
    struct fut_sim_host **tail = &b->hosts;
    while (*tail)
        tail = &(*tail)->next;
    *tail = h;
    *out = h;
    return 0;
}

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
    /* Stalled directions go again, retransmitted from now on. */
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
    return 0;
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

int fut__simnet_reset(struct fut__io *io)
{
    struct fut__iodrv *d = fut__iodrv_current();
    struct ep *e = io->bstate[0] ? io->bstate[0] : table_get(io->fd);
    if (!e || e->listener || e->state != ST_OPEN ||
        (d && d->bvt == &fut__backend_sim && e->net != d->be))
        return FUT_EINVAL;
    send_rst(e, e->peer);
    kill_ep(e, ECONNRESET);
    return 0;
}
