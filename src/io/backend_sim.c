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
 * operations and the backend's table; the socket calls - the fd table,
 * addresses, the shim's hook - are simnet_socket.c's; the wire -
 * segments in flight, their queues and timer, links and crashed hosts -
 * is simnet_wire.c's; the state they share, simnet_internal.h.
 *
 * Rules (of the three files):
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
#include <string.h>
#include <sys/socket.h>

#include "io/simnet_internal.h"
#include "platform/simfault.h"
#include "platform/sys.h"

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
    int r = fut__sn_table_put(fd, a);
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
            fut__sn_fill_unix(a->rpath, op->addr, op->alen);
        else
            fut__sn_fill_addr(a->rhost, a->rport, op->addr, op->alen);
    }
    return fd;
}

static struct ep *ep_of(struct fut__backend *b, struct fut__io *io)
{
    struct ep *e = io->bstate[0];
    if (!e) {
        e = fut__sn_table_get(io->fd);
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
            fut__sn_fill_unix(g->spath, op->addr, op->alen);
        else
            fut__sn_fill_addr(g->src, g->sport, op->addr, op->alen);
    }
    if (op->flags & MSG_PEEK)
        return (long)k;
    e->dq_head = g->next;
    if (!e->dq_head)
        e->dq_tail = NULL;
    e->dq_bytes -= g->len + 256;
    fut__free(g, sizeof *g + g->len);
    if (e->kind == K_UNIXDG)
        fut__sn_unixdg_wake(e->net);
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
        if (fut__sn_parse_addr(op->addr, *op->alen, &family, ip, &dport, &any,
                               &lo) < 0)
            return FUT_EINVAL;
        dst = lo || any ? e->host : fut__sn_host_by_ip(e->net, family, ip);
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
        e->port = fut__sn_ephemeral(e->net, e->host, K_UDP);
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
        if (fut__sn_parse_unix(op->addr, *op->alen, path) < 0)
            return FUT_EINVAL;
        t = fut__sn_unixdg_bound(e->net, e->host, path);
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
    fut__sn_hook_install(&fut__backend_sim);
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
            fut__sn_table_del(e->fd);
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
    if (fut__sn_host_by_ip(b, family, ip))
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
    struct ep *e = io->bstate[0] ? io->bstate[0] : fut__sn_table_get(io->fd);
    if (!e || e->listener || e->state != ST_OPEN ||
        (d && d->bvt == &fut__backend_sim && e->net != d->be))
        return FUT_EINVAL;
    fut__sn_rst(e, e->peer);
    fut__sn_kill(e, ECONNRESET);
    return 0;
}
