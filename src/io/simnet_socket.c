/* SPDX-License-Identifier: MIT */
/* The simulated network's socket calls: what the syscall shim's hook
 * (platform/sys.h) hands over for a simulated socket - socket,
 * socketpair, bind, listen, connect, shutdown, *sockopt, getsockname,
 * close - with the fd table that finds an endpoint by its placeholder
 * fd, and the socket addresses (IPv4, IPv6, Unix paths) both these calls
 * and the operations (backend_sim.c) read and write. Rules: backend_sim.c's
 * opening comment; the state, simnet_internal.h. */
#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/un.h>

#include "io/simnet_internal.h"
#include "platform/sys.h"

_Thread_local struct fut_sim_host *fut__simnet_current;

/* ------------------------------------------------------------ fd table */

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ep **table; /* indexed by fd */
static size_t table_cap;
static fut__aword table_live; /* entries; relaxed: the hook's hint */

int fut__sn_table_put(int fd, struct ep *e)
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

struct ep *fut__sn_table_get(int fd)
{
    if (fd < 0 || fut__load(&table_live, FUT__RELAXED) == 0)
        return NULL;
    pthread_mutex_lock(&table_lock);
    struct ep *e = (size_t)fd < table_cap ? table[fd] : NULL;
    pthread_mutex_unlock(&table_lock);
    return e;
}

void fut__sn_table_del(int fd)
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

/* A Unix address: 'path' ("" : an unnamed socket, the family only). */
void fut__sn_fill_unix(const char *path, void *out, socklen_t *lenp)
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
int fut__sn_parse_unix(const void *sa, socklen_t len, char path[UNIX_PATH])
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

void fut__sn_fill_addr(const struct fut_sim_host *h, int port, void *out,
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
int fut__sn_parse_addr(const void *sa, socklen_t len, int *family,
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
    int r = fut__sn_table_put(fd, e);
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
    if (fut__sn_parse_unix(sa, len, path) < 0)
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
    if (fut__sn_parse_addr(sa, len, &family, ip, &port, &any, &lo) < 0)
        return FUT_EINVAL;
    if (e->port || e->state != ST_NEW)
        return FUT_EINVAL;
    struct fut_sim_host *h = e->host;
    if (!any && !lo) {
        h = fut__sn_host_by_ip(e->net, family, ip);
        if (!h)
            return -EADDRNOTAVAIL;
    }
    if (port && (e->kind == K_UDP ? fut__sn_udp_bound(e->net, h, port)
                                  : fut__sn_listener(e->net, h, port)))
        return -EADDRINUSE;
    e->host = h; /* a bind to a host's address puts it there */
    e->port = port ? port : fut__sn_ephemeral(e->net, h, e->kind);
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
        e->port = fut__sn_ephemeral(e->net, e->host, K_TCP);
    e->listener = 1;
    return 0;
}

/* A datagram socket's connect only records the peer (never blocks). */
static long connect_udp(struct ep *e, const void *sa, socklen_t len)
{
    int family, port, any, lo;
    unsigned char ip[16];
    if (fut__sn_parse_addr(sa, len, &family, ip, &port, &any, &lo) < 0)
        return FUT_EINVAL;
    struct fut_sim_host *h =
        lo || any ? e->host : fut__sn_host_by_ip(e->net, family, ip);
    if (!h)
        return -ENETUNREACH;
    if (!e->port)
        e->port = fut__sn_ephemeral(e->net, e->host, K_UDP);
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
    if (fut__sn_parse_unix(sa, len, path) < 0)
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
struct ep *fut__sn_unixdg_bound(struct fut__backend *n,
                                struct fut_sim_host *h, const char *path)
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
    if (fut__sn_parse_unix(sa, len, path) < 0)
        return FUT_EINVAL;
    struct ep *t = fut__sn_unixdg_bound(e->net, e->host, path);
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
    if (fut__sn_parse_addr(sa, len, &family, ip, &port, &any, &lo) < 0)
        return FUT_EINVAL;
    if (e->listener)
        return FUT_EINVAL;
    if (e->crashed)
        return -ENETDOWN;
    if (e->state == ST_CONNECTING)
        return -EALREADY;
    if (e->state != ST_NEW)
        return -EISCONN;
    struct fut_sim_host *h =
        lo ? e->host : fut__sn_host_by_ip(e->net, family, ip);
    if (!h || any)
        return -ENETUNREACH;
    if (!e->port)
        e->port = fut__sn_ephemeral(e->net, e->host, K_TCP);
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

static void ep_close(struct ep *e)
{
    e->closed = 1;
    if (e->kind == K_UDP || e->kind == K_UNIXDG) { /* never read */
        fut__sn_dq_drop(e);
        if (e->kind == K_UNIXDG)
            fut__sn_unixdg_wake(e->net); /* a waiting sender is refused now */
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
        fut__sn_fill_unix(peer ? e->peer->path : e->path, out, lenp);
        return 0;
    }
    if (e->kind == K_UNIX) {
        if (peer && e->state != ST_OPEN)
            return -ENOTCONN;
        fut__sn_fill_unix(peer ? e->rpath : e->path, out, lenp);
        return 0;
    }
    if (!peer) {
        fut__sn_fill_addr(e->host, e->port, out, lenp);
        return 0;
    }
    if (!e->rhost || (e->kind == K_TCP &&
                      (e->state == ST_CONNECTING || e->state == ST_NEW)))
        return -ENOTCONN;
    fut__sn_fill_addr(e->rhost, e->rport, out, lenp);
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
    struct ep *a = fut__sn_table_get((int)fa);
    if (fb < 0) {
        fut__sn_table_del((int)fa);
        a->fd = -1;
        fut__sys_close((int)fa);
        a->closed = 1;
        return fb;
    }
    struct ep *b = fut__sn_table_get((int)fb);
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

/* The simulated backend's table (fut__backend_sim), as
 * fut__sn_hook_install recorded it: named here, it would make this file
 * and backend_sim.c call each other. Relaxed: set before the hook is
 * (same thread), always to the same value; a thread that runs a
 * simulated driver got it after its creation, whose thread had set it. */
static fut__aword sim_backend_vt;

static const struct fut__backend_vt *sim_vt(void)
{
    return (const struct fut__backend_vt *)fut__load(&sim_backend_vt,
                                                     FUT__RELAXED);
}

/* The shim's hook (platform/sys.h). */
static int net_hook(struct fut__sys_netcall *c, long *res)
{
    if (c->op == FUT__SYS_SOCKET) {
        struct fut__iodrv *d = fut__iodrv_current();
        if (!d || d->bvt != sim_vt())
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
        if (!d || d->bvt != sim_vt())
            return 0;
        int type = c->b & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c->a == AF_UNIX && (type == SOCK_STREAM || type == SOCK_DGRAM))
            *res = do_pair(d->be, type == SOCK_STREAM ? K_UNIX : K_UNIXDG,
                           c->out);
        else
            *res = FUT_EINVAL;
        return 1;
    }
    struct ep *e = fut__sn_table_get(c->fd);
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
        fut__sn_table_del(c->fd);
        e->fd = -1;
        *res = fut__sys_close(c->fd); /* the placeholder: the kernel's */
        ep_close(e);
        return 1;
    default:
        return 0;
    }
}

void fut__sn_hook_install(const struct fut__backend_vt *vt)
{
    fut__store(&sim_backend_vt, (uintptr_t)vt, FUT__RELAXED);
    /* Relaxed: set once per process, always to the same function. */
    fut__store(&fut__sys_net, (uintptr_t)net_hook, FUT__RELAXED);
}
