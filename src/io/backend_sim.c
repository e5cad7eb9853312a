/* SPDX-License-Identifier: MIT */
/* The simulation's network: the third backend (backend.h), serving TCP,
 * UDP and Unix stream and datagram sockets and socket pairs from memory
 * in virtual time (fut/sim.h, docs/simulation.md). A Unix stream socket
 * is a TCP endpoint named by a path of its host instead of a port (the
 * same segments and rules); a UDP socket has a queue of datagrams
 * received instead of a stream; a Unix datagram socket has one too, but
 * its datagrams never travel: a send appends to the receiver's queue at
 * once (reliable and ordered), and a full queue makes the sender wait
 * (EAGAIN, then write readiness when the receiver reads), as on Linux.
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
 * is reported with fut__io_dispatch, as epoll would. This file has the
 * socket calls, the operations and the backend's table; the wire -
 * segments in flight, their queues and timer, links and crashed hosts -
 * is simnet_wire.c's; the state both share, simnet_internal.h.
 *
 * Rules (of both files):
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
 *     segments may still arrive for them, answered with RST);
 *   - datagrams go into one queue of the network ('dgq'), by delivery
 *     time (stable), addressed to a host and port, not an endpoint: the
 *     socket bound there when one arrives takes it. A datagram not held
 *     back (fut_sim_udp_faults) is never due before one its socket sent
 *     earlier to the same place. A cut link or a down host drops
 *     datagrams, at the send and at the arrival (TCP stalls instead);
 *     each datagram's fate is counted once (fut_sim_udp_stats);
 *   - bandwidth: each direction of a limited link carries one thing at
 *     a time ('links': when it is free again); a segment leaves when the
 *     direction has carried it, then takes the link's delay.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/un.h>

#include "io/simnet_internal.h"
#include "platform/simfault.h"
#include "platform/sys.h"

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

/* ------------------------------------------------------- the socket calls */

/* A free port of host 'h' for a socket of 'kind' (UDP ports are a
 * namespace of their own, as in the kernel). */
static int ephemeral(struct fut__backend *n, struct fut_sim_host *h, int kind)
{
    int p;
    do {
        p = h->next_port++;
        if (h->next_port > 65535)
            h->next_port = FIRST_PORT;
    } while (kind == K_UDP ? fut__sn_udp_bound(n, h, p) != NULL
                           : fut__sn_listener(n, h, p) != NULL);
    return p;
}

/* A Unix address: 'path' ("" : an unnamed socket, the family only). */
static void fill_unix(const char *path, void *out, socklen_t *lenp)
{
    struct sockaddr_un sun;
    memset(&sun, 0, sizeof sun);
    sun.sun_family = AF_UNIX;
    size_t plen = strlen(path);
    memcpy(sun.sun_path, path, plen);
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
                                (plen ? plen + 1 : 0));
    if (out && lenp) {
        memcpy(out, &sun, *lenp < len ? *lenp : len);
        *lenp = len;
    }
}

/* The path of Unix address 'sa' into 'path'; FUT_EINVAL when it is not
 * one, or names nothing (the abstract namespace is not simulated). */
static int parse_unix(const void *sa, socklen_t len, char path[UNIX_PATH])
{
    const struct sockaddr_un *sun = sa;
    size_t off = offsetof(struct sockaddr_un, sun_path);
    if (!sa || len <= off || sun->sun_family != AF_UNIX || !sun->sun_path[0])
        return FUT_EINVAL;
    size_t max = len - off < UNIX_PATH ? len - off : UNIX_PATH;
    size_t plen = strnlen(sun->sun_path, max);
    if (plen >= UNIX_PATH)
        return FUT_EINVAL;
    memcpy(path, sun->sun_path, plen);
    path[plen] = '\0';
    return 0;
}

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

static long do_socket(struct fut__backend *n, int kind)
{
    struct fut_sim_host *h = fut__simnet_current;
    if (!h || h->net != n)
        h = n->deflt;
    if (h->down)
        return -ENETDOWN; /* a poll of a crashed host's task ends it */
    struct ep *e = fut__sn_ep_new(n, h);
    if (!e)
        return FUT_ENOMEM;
    e->kind = kind;
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

/* A Unix path is a name in its host's namespace (each host a machine
 * with its own file system): taken while a listener bound to it is open,
 * or a socket bound to it that has not connected (the connections a
 * listener accepted carry its path as their name, but do not hold it). */
static long bind_unix(struct ep *e, const void *sa, socklen_t len)
{
    char path[UNIX_PATH];
    if (parse_unix(sa, len, path) < 0)
        return FUT_EINVAL;
    if (e->path[0] || e->state != ST_NEW)
        return FUT_EINVAL;
    /* A datagram socket stays ST_NEW: bound, it holds its path. */
    for (struct ep *o = e->net->eps; o; o = o->next)
        if ((o->kind == K_UNIX || o->kind == K_UNIXDG) && o != e &&
            o->host == e->host && !o->closed && !o->crashed &&
            strcmp(o->path, path) == 0 && (o->listener || o->state == ST_NEW))
            return -EADDRINUSE;
    memcpy(e->path, path, sizeof path);
    return 0;
}

static long do_bind(struct ep *e, const void *sa, socklen_t len)
{
    int family, port, any, lo;
    unsigned char ip[16];
    if (e->crashed)
        return -ENETDOWN;
    if (e->kind == K_UNIX || e->kind == K_UNIXDG)
        return bind_unix(e, sa, len);
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
    if (port && (e->kind == K_UDP ? fut__sn_udp_bound(e->net, h, port)
                                  : fut__sn_listener(e->net, h, port)))
        return -EADDRINUSE;
    e->host = h; /* a bind to a host's address puts it there */
    e->port = port ? port : ephemeral(e->net, h, e->kind);
    return 0;
}

/* The accept queue holds at most backlog + 1 connections (Linux's rule);
 * backlog is bounded by MAX_BACKLOG, a negative one means that bound. */
static long do_listen(struct ep *e, int backlog)
{
    if (e->crashed)
        return -ENETDOWN;
    if (e->kind == K_UNIXDG)
        return -EOPNOTSUPP;
    if (e->state != ST_NEW || e->kind == K_UDP ||
        (e->kind == K_UNIX && !e->path[0]))
        return FUT_EINVAL;
    e->backlog = backlog < 0 || backlog > MAX_BACKLOG ? MAX_BACKLOG : backlog;
    if (!e->port && e->kind == K_TCP)
        e->port = ephemeral(e->net, e->host, K_TCP);
    e->listener = 1;
    return 0;
}

/* A datagram socket's connect only records the peer (never blocks). */
static long connect_udp(struct ep *e, const void *sa, socklen_t len)
{
    int family, port, any, lo;
    unsigned char ip[16];
    if (parse_addr(sa, len, &family, ip, &port, &any, &lo) < 0)
        return FUT_EINVAL;
    struct fut_sim_host *h =
        lo || any ? e->host : host_by_ip(e->net, family, ip);
    if (!h)
        return -ENETUNREACH;
    if (!e->port)
        e->port = ephemeral(e->net, e->host, K_UDP);
    e->rhost = h;
    e->rport = port;
    return 0;
}

/* A Unix connect goes to a path of the socket's own host: as TCP's, by
 * a SYN over the host's own link (the path in its data), except that a
 * path nobody listens on fails at once (-ENOENT, as a missing file). */
static long connect_unix(struct ep *e, const void *sa, socklen_t len)
{
    char path[UNIX_PATH];
    if (parse_unix(sa, len, path) < 0)
        return FUT_EINVAL;
    if (e->listener)
        return FUT_EINVAL;
    if (e->state == ST_CONNECTING)
        return -EALREADY;
    if (e->state != ST_NEW)
        return -EISCONN;
    if (!fut__sn_unix_listener(e->net, e->host, path))
        return -ENOENT;
    memcpy(e->rpath, path, sizeof path);
    e->rhost = e->host;
    e->state = ST_CONNECTING;
    fut__sn_send(e, SEG_SYN, NULL, e->host, 0, path, strlen(path) + 1);
    return -EINPROGRESS;
}

/* The open Unix datagram socket bound to 'path' on host 'h', or NULL. */
static struct ep *unixdg_bound(struct fut__backend *n, struct fut_sim_host *h,
                               const char *path)
{
    for (struct ep *o = n->eps; o; o = o->next)
        if (o->kind == K_UNIXDG && o->host == h && !o->closed &&
            !o->crashed && strcmp(o->path, path) == 0)
            return o;
    return NULL;
}

/* A Unix datagram socket's connect records its peer (never blocks). */
static long connect_unixdg(struct ep *e, const void *sa, socklen_t len)
{
    char path[UNIX_PATH];
    if (parse_unix(sa, len, path) < 0)
        return FUT_EINVAL;
    struct ep *t = unixdg_bound(e->net, e->host, path);
    if (!t)
        return -ENOENT;
    e->peer = t;
    memcpy(e->rpath, path, sizeof path);
    return 0;
}

static long do_connect(struct ep *e, const void *sa, socklen_t len)
{
    int family, port, any, lo;
    unsigned char ip[16];
    if (e->crashed)
        return -ENETDOWN;
    if (e->kind == K_UDP)
        return connect_udp(e, sa, len);
    if (e->kind == K_UNIX)
        return connect_unix(e, sa, len);
    if (e->kind == K_UNIXDG)
        return connect_unixdg(e, sa, len);
    if (parse_addr(sa, len, &family, ip, &port, &any, &lo) < 0)
        return FUT_EINVAL;
    if (e->listener)
        return FUT_EINVAL;
    if (e->crashed)
        return -ENETDOWN;
    if (e->state == ST_CONNECTING)
        return -EALREADY;
    if (e->state != ST_NEW)
        return -EISCONN;
    struct fut_sim_host *h = lo ? e->host : host_by_ip(e->net, family, ip);
    if (!h || any)
        return -ENETUNREACH;
    if (!e->port)
        e->port = ephemeral(e->net, e->host, K_TCP);
    e->rhost = h;
    e->rport = port;
    e->state = ST_CONNECTING;
    fut__sn_send(e, SEG_SYN, NULL, h, port, NULL, 0);
    return -EINPROGRESS;
}

static long do_shutdown(struct ep *e, int how)
{
    if (e->kind == K_UDP)
        return e->rhost ? 0 : -ENOTCONN; /* nothing to tell a peer */
    if (e->kind == K_UNIXDG)
        return e->peer ? 0 : -ENOTCONN;
    if (e->state != ST_OPEN)
        return -ENOTCONN;
    if ((how == SHUT_WR || how == SHUT_RDWR) && !e->wr_shut) {
        e->wr_shut = 1;
        fut__sn_send(e, SEG_FIN, e->peer, NULL, 0, NULL, 0);
    }
    if (how == SHUT_RD || how == SHUT_RDWR) {
        e->rd_shut = 1;
        fut__sn_notify(e, FUT__RD_READ | FUT__RD_RCLOSED);
    }
    return 0;
}

/* Write readiness to every Unix datagram socket that found a queue
 * full (room was made, or the receiver went): in creation order. */
static void unixdg_wake(struct fut__backend *n)
{
    for (struct ep *o = n->eps; o; o = o->next)
        if (o->kind == K_UNIXDG && o->dg_wait) {
            o->dg_wait = 0;
            fut__sn_notify(o, FUT__RD_WRITE);
        }
}

static void ep_close(struct ep *e)
{
    e->closed = 1;
    if (e->kind == K_UDP || e->kind == K_UNIXDG) { /* never read */
        fut__sn_dq_drop(e);
        if (e->kind == K_UNIXDG)
            unixdg_wake(e->net); /* a waiting sender is refused now */
        return;
    }
    if (e->listener) { /* connections nobody accepted are reset */
        struct ep *a;
        while ((a = e->aq_head)) {
            e->aq_head = a->aq_next;
            a->closed = 1;
            fut__sn_rst(a, a->peer);
            a->state = ST_DEAD;
        }
        e->aq_tail = NULL;
        e->aq_len = 0;
        return;
    }
    if (e->state != ST_OPEN)
        return; /* connecting: the SYN-ACK is answered with RST */
    if (e->rx_len > e->rx_off) { /* unread bytes: abort (as Linux) */
        fut__sn_rst(e, e->peer);
        e->state = ST_DEAD;
    } else if (!e->wr_shut) {
        e->wr_shut = 1;
        fut__sn_send(e, SEG_FIN, e->peer, NULL, 0, NULL, 0);
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
        v = e->kind == K_UDP || e->kind == K_UNIXDG ? SOCK_DGRAM
                                                    : SOCK_STREAM;
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
    if (e->kind == K_UNIXDG) {
        if (peer && !e->peer)
            return -ENOTCONN;
        fill_unix(peer ? e->peer->path : e->path, out, lenp);
        return 0;
    }
    if (e->kind == K_UNIX) {
        if (peer && e->state != ST_OPEN)
            return -ENOTCONN;
        fill_unix(peer ? e->rpath : e->path, out, lenp);
        return 0;
    }
    if (!peer) {
        fill_addr(e->host, e->port, out, lenp);
        return 0;
    }
    if (!e->rhost || (e->kind == K_TCP &&
                      (e->state == ST_CONNECTING || e->state == ST_NEW)))
        return -ENOTCONN;
    fill_addr(e->rhost, e->rport, out, lenp);
    return 0;
}

/* socketpair: two endpoints of 'kind' (K_UNIX, K_UNIXDG) on the
 * polling task's host, unnamed, each the other's peer: a stream pair is
 * an open connection (its bytes take the host's own link, as a Unix
 * connection's there), a datagram pair sends to each other. */
static long do_pair(struct fut__backend *n, int kind, int *sv)
{
    long fa = do_socket(n, kind);
    if (fa < 0)
        return fa;
    long fb = do_socket(n, kind);
    struct ep *a = table_get((int)fa);
    if (fb < 0) {
        table_del((int)fa);
        a->fd = -1;
        fut__sys_close((int)fa);
        a->closed = 1;
        return fb;
    }
    struct ep *b = table_get((int)fb);
    a->peer = b;
    b->peer = a;
    if (kind == K_UNIX) {
        a->state = b->state = ST_OPEN;
        a->rhost = b->rhost = a->host;
    }
    sv[0] = (int)fa;
    sv[1] = (int)fb;
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
        int inet = c->a == AF_INET || c->a == AF_INET6;
        if (inet && type == SOCK_STREAM)
            *res = do_socket(d->be, K_TCP);
        else if (inet && type == SOCK_DGRAM)
            *res = do_socket(d->be, K_UDP);
        else if (c->a == AF_UNIX && type == SOCK_STREAM)
            *res = do_socket(d->be, K_UNIX);
        else if (c->a == AF_UNIX && type == SOCK_DGRAM)
            *res = do_socket(d->be, K_UNIXDG);
        else
            *res = FUT_EINVAL; /* not simulated: no real socket either */
        return 1;
    }
    if (c->op == FUT__SYS_SOCKETPAIR) {
        struct fut__iodrv *d = fut__iodrv_current();
        if (!d || d->bvt != &fut__backend_sim)
            return 0;
        int type = c->b & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c->a == AF_UNIX && (type == SOCK_STREAM || type == SOCK_DGRAM))
            *res = do_pair(d->be, type == SOCK_STREAM ? K_UNIX : K_UNIXDG,
                           c->out);
        else
            *res = FUT_EINVAL;
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
        *res = do_listen(e, c->a);
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
    if (len > 1 && fut__sn_draw(n, 4) == 0)
        return 1 + (size_t)fut__sn_draw(n, len - 1);
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
            fut__sn_notify(e->peer, FUT__RD_WRITE);
        }
        return (long)n;
    }
    if (!len || e->state == ST_DEAD || e->rd_eof || e->rd_shut)
        return 0;
    return e->state == ST_NEW ? -ENOTCONN : -EAGAIN;
}

/* The bytes a write operation gives: its buffer, or its iovecs. */
static size_t op_len(const struct fut__op *op)
{
    if (op->kind != FUT__OP_WRITEV && op->kind != FUT__OP_SENDV)
        return op->len;
    size_t total = 0;
    for (int i = 0; i < op->iovcnt; i++)
        total += op->iov[i].iov_len;
    return total;
}

/* The first 'n' (> 0) of those bytes in a new buffer of 'n' (the
 * caller frees it), or NULL: no memory. */
static char *op_gather(const struct fut__op *op, size_t n)
{
    char *buf = fut__alloc(n);
    if (!buf)
        return NULL;
    if (op->kind != FUT__OP_WRITEV && op->kind != FUT__OP_SENDV) {
        memcpy(buf, op->buf, n);
        return buf;
    }
    size_t off = 0;
    for (int i = 0; i < op->iovcnt && off < n; i++) {
        size_t k =
            op->iov[i].iov_len < n - off ? op->iov[i].iov_len : n - off;
        memcpy(buf + off, op->iov[i].iov_base, k);
        off += k;
    }
    return buf;
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
    size_t total = op_len(op);
    if (total == 0)
        return 0;
    size_t room = SNDBUF - e->unacked;
    size_t n = cut_len(e->net, total < room ? total : room);
    char *buf = op_gather(op, n);
    if (!buf)
        return FUT_ENOMEM;
    fut__sn_send(e, SEG_DATA, e->peer, NULL, 0, buf, n);
    fut__free(buf, n);
    e->unacked += n;
    return (long)n;
}

static long sim_accept(struct ep *l, const struct fut__op *op)
{
    if (!l->listener || l->crashed)
        return FUT_EINVAL; /* not listening (its host crashed) */
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
    l->aq_len--;
    if (!l->aq_head)
        l->aq_tail = NULL;
    a->aq_next = NULL;
    a->fd = fd;
    if (op->addr && op->alen) {
        *op->alen = sizeof(struct sockaddr_storage);
        if (a->kind == K_UNIX)
            fill_unix(a->rpath, op->addr, op->alen);
        else
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

/* The seeded socket faults (fut_sim_set_faults) on a read or a write of
 * an open connection: 0 (none), or what the call returns instead. A
 * reset is fut_sim_reset's, reported by this call; a spurious EAGAIN
 * is followed by readiness reported again after the host's own delay
 * (SEG_POKE), as a later epoll edge: the reactor clears readiness on
 * EAGAIN, so without that edge the operation would wait for ever. */
static long sock_fault(struct ep *e)
{
    if (e->listener || e->state != ST_OPEN)
        return 0;
    if (fut__simfault_hit(FUT__SIMFAULT_RESET)) {
        fut__sn_rst(e, e->peer);
        fut__sn_kill(e, 0);
        return -ECONNRESET;
    }
    if (fut__simfault_hit(FUT__SIMFAULT_EAGAIN)) {
        fut__sn_poke(e);
        return -EAGAIN;
    }
    return 0;
}

/* A UDP socket's receive (read, recv, recvfrom): its first datagram,
 * cut to 'len' (the rest of it is lost, as recv(2) does); with MSG_PEEK
 * it stays. The sender's address to op->addr for RECVFROM. */
static long udp_recv(struct ep *e, const struct fut__op *op)
{
    if (e->crashed)
        return -ENETDOWN;
    struct dgram *g = e->dq_head;
    if (!g)
        return -EAGAIN;
    size_t k = g->len < op->len ? g->len : op->len;
    memcpy(op->buf, g->data, k);
    if (op->kind == FUT__OP_RECVFROM && op->addr && op->alen) {
        *op->alen = sizeof(struct sockaddr_storage);
        if (e->kind == K_UNIXDG)
            fill_unix(g->spath, op->addr, op->alen);
        else
            fill_addr(g->src, g->sport, op->addr, op->alen);
    }
    if (op->flags & MSG_PEEK)
        return (long)k;
    e->dq_head = g->next;
    if (!e->dq_head)
        e->dq_tail = NULL;
    e->dq_bytes -= g->len + 256;
    fut__free(g, sizeof *g + g->len);
    if (e->kind == K_UNIXDG)
        unixdg_wake(e->net);
    else
        e->net->udp.read++;
    return (long)k;
}

/* A UDP socket's send (sendto, or send/write/writev to the connected
 * peer): one datagram, never blocking (a datagram the network cannot
 * carry is lost on the way, not refused here). */
static long udp_send(struct ep *e, const struct fut__op *op)
{
    if (e->crashed)
        return -ENETDOWN;
    struct fut_sim_host *dst = e->rhost;
    int dport = e->rport;
    if (op->kind == FUT__OP_SENDTO) {
        int family, any, lo;
        unsigned char ip[16];
        if (parse_addr(op->addr, *op->alen, &family, ip, &dport, &any, &lo) <
            0)
            return FUT_EINVAL;
        dst = lo || any ? e->host : host_by_ip(e->net, family, ip);
        if (!dst)
            return -ENETUNREACH;
    } else if (!dst) {
        return -EDESTADDRREQ;
    }
    size_t total = op_len(op);
    if (total > UDP_MAX)
        return -EMSGSIZE;
    char *buf = total ? op_gather(op, total) : NULL;
    if (total && !buf)
        return FUT_ENOMEM;
    if (!e->port)
        e->port = ephemeral(e->net, e->host, K_UDP);
    fut__sn_dgram(e, dst, dport, buf, total);
    fut__free(buf, total);
    return (long)total;
}

/* A Unix datagram socket's send (sendto a path, or send/write/writev to
 * its peer): the datagram goes straight into the receiver's queue; a
 * full one (UDP_RCVBUF, counted as UDP's) gives -EAGAIN and write
 * readiness again when the receiver reads or goes. */
static long unixdg_send(struct ep *e, const struct fut__op *op)
{
    if (e->crashed)
        return -ENETDOWN;
    struct ep *t = e->peer;
    if (op->kind == FUT__OP_SENDTO) {
        char path[UNIX_PATH];
        if (parse_unix(op->addr, *op->alen, path) < 0)
            return FUT_EINVAL;
        t = unixdg_bound(e->net, e->host, path);
        if (!t)
            return -ENOENT; /* no socket file there */
    } else if (!t) {
        return -ENOTCONN;
    }
    if (t->closed || t->crashed)
        return -ECONNREFUSED;
    size_t total = op_len(op);
    if (total + 256 > UDP_RCVBUF)
        return -EMSGSIZE;
    if (t->dq_bytes + total + 256 > UDP_RCVBUF) {
        e->dg_wait = 1;
        return -EAGAIN;
    }
    struct dgram *g = fut__alloc(sizeof *g + total);
    if (!g)
        return FUT_ENOMEM;
    memset(g, 0, sizeof *g);
    if (total) {
        char *buf = op_gather(op, total);
        if (!buf) {
            fut__free(g, sizeof *g + total);
            return FUT_ENOMEM;
        }
        memcpy(g->data, buf, total);
        fut__free(buf, total);
    }
    g->src = e->host;
    g->len = total;
    memcpy(g->spath, e->path, sizeof g->spath);
    if (t->dq_tail)
        t->dq_tail->next = g;
    else
        t->dq_head = g;
    t->dq_tail = g;
    t->dq_bytes += total + 256;
    fut__sn_notify(t, FUT__RD_READ);
    return (long)total;
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
    if ((e->kind == K_UDP || e->kind == K_UNIXDG) &&
        op->kind == FUT__OP_ACCEPT)
        return FUT_EINVAL; /* not a listener */
    if (e->kind == K_UDP)
        return fut__op_dir(op) == FUT__DIR_READ ? udp_recv(e, op)
                                                : udp_send(e, op);
    if (e->kind == K_UNIXDG)
        return fut__op_dir(op) == FUT__DIR_READ ? udp_recv(e, op)
                                                : unixdg_send(e, op);
    long fault = op->kind == FUT__OP_ACCEPT ? 0 : sock_fault(e);
    if (fault)
        return fault;
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
        return -EOPNOTSUPP; /* recvfrom, sendto on a stream */
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
        fut__sn_drop_queue(&e->inq);
        fut__sn_drop_queue(&e->synq);
        fut__sn_dq_drop(e);
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
    fut__sn_drop_queue(&n->dgq);
    free_pairs(n->parts);
    free_pairs(n->lats);
    free_pairs(n->udpf);
    free_pairs(n->bws);
    free_pairs(n->links);
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

int fut__simnet_reset(struct fut__io *io)
{
    struct fut__iodrv *d = fut__iodrv_current();
    struct ep *e = io->bstate[0] ? io->bstate[0] : table_get(io->fd);
    if (!e || e->listener || e->state != ST_OPEN ||
        (d && d->bvt == &fut__backend_sim && e->net != d->be))
        return FUT_EINVAL;
    fut__sn_rst(e, e->peer);
    fut__sn_kill(e, ECONNRESET);
    return 0;
}
