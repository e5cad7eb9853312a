/* SPDX-License-Identifier: MIT */
/* The simulated network's state, shared by its three parts: the
 * operations (backend_sim.c: reads, writes, accepts, datagrams, the
 * backend's table), the socket calls (simnet_socket.c: the syscall hook,
 * the fd table, addresses) and the wire (simnet_wire.c: segments in
 * flight, their queues, the delivery timer, links, partitions, crashed
 * hosts). Rules: backend_sim.c's opening comment. One thread: the
 * simulation's (but the fd table: simnet_socket.c). */
#ifndef FUT_IO_SIMNET_INTERNAL_H
#define FUT_IO_SIMNET_INTERNAL_H

#include <string.h>
#include <sys/socket.h>

#include "io/io_internal.h"
#include "io/simnet.h"
#include "platform/simrng.h"

#define SNDBUF (64 * 1024)
#define FIRST_PORT 49152
#define DEFAULT_MIN_NS 1000000
#define DEFAULT_MAX_NS 3000000
#define MAX_BACKLOG 4096     /* Linux's default net.core.somaxconn */
#define UDP_MAX 65507        /* the largest IPv4 UDP payload */
#define UDP_RCVBUF 212992    /* Linux's default net.core.rmem_default */
#define BW_CHUNK (16 * 1024) /* a bandwidth-limited write's piece */
#define UNIX_PATH 108        /* sizeof sun_path */

/* SEG_POKE: an endpoint's own note to itself, reporting readiness again
 * after a seeded spurious EAGAIN (FUT_SIM_FAULT_EAGAIN). */
/* SEG_DGRAM: a UDP datagram, in the network's datagram queue. */
enum { SEG_SYN, SEG_SYNACK, SEG_DATA, SEG_FIN, SEG_RST, SEG_POKE, SEG_DGRAM };
enum { ST_NEW, ST_CONNECTING, ST_OPEN, ST_DEAD };
/* What an endpoint is: a TCP socket, a UDP socket, a Unix stream socket
 * (a stream like TCP's, named by a path in its host's namespace), a Unix
 * datagram socket (a queue of datagrams like UDP's, named by a path; its
 * datagrams never cross the wire: a send puts them straight into the
 * receiver's queue, as Linux does). */
enum { K_TCP, K_UDP, K_UNIX, K_UNIXDG };

struct ep;

/* A segment in flight. */
struct seg {
    struct seg *next;     /* the next of its direction's queue */
    int64_t at;           /* virtual delivery time (ns since the start) */
    int kind;             /* SEG_* */
    struct ep *from, *to; /* SYN: 'to' NULL, 'dst'/'dport' name it;
                             a refusal's RST: 'from' NULL */
    struct fut_sim_host *src, *dst; /* the link (partitions, latency) */
    int dport;                      /* SYN, DGRAM: the port sent to */
    int sport;                      /* DGRAM: the sender's port */
    int held;                       /* DGRAM: held back (reordered) */
    size_t len; /* DATA, DGRAM: bytes in 'data'; a Unix SYN: the path */
    char data[];
};

/* One direction's segments, in delivery order. */
struct queue {
    struct seg *head, *tail;
};

/* A datagram a UDP socket received, not read yet. */
struct dgram {
    struct dgram *next;
    struct fut_sim_host *src; /* the sender's host and port */
    int sport;
    char spath[UNIX_PATH]; /* K_UNIXDG: the sender's path ("": unnamed) */
    size_t len;
    char data[];
};

struct fut_sim_host {
    struct fut_sim_host *next; /* net->hosts, creation order */
    struct fut__backend *net;  /* its network */
    struct fut_runtime *rt;    /* fut_sim_host_new's (NULL: the default) */
    int family;                /* AF_INET or AF_INET6 */
    unsigned char addr[16];    /* its address (4 bytes for IPv4) */
    int next_port;             /* the next ephemeral port */
    int down;                  /* crashed, not restarted yet */
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
    struct ep *aq_head, *aq_tail;    /* listener: connections to accept */
    struct ep *aq_next;              /* in its listener's queue */
    int aq_len;                      /* listener: connections in its queue */
    int backlog;                     /* listener: more than this many
                                     waiting refuses a connect */
    int crashed;                     /* its host crashed (listener: gone) */
    int kind;                        /* K_TCP, K_UDP, K_UNIX */
    char path[UNIX_PATH];            /* K_UNIX: its name ("": none) */
    char rpath[UNIX_PATH];           /* K_UNIX: the peer's name */
    struct dgram *dq_head, *dq_tail; /* K_UDP, K_UNIXDG: datagrams to
                                        read */
    size_t dq_bytes;                 /* ... their bytes (UDP_RCVBUF) */
    int dg_wait; /* K_UNIXDG: a send found a receiver's queue full */
};

/* A pair of hosts: a partition, a link's latency, its UDP faults, its
 * bandwidth, or (links) the state of a bandwidth-limited link. */
struct pair {
    struct pair *next;
    struct fut_sim_host *a, *b;
    int64_t min_ns, max_ns;      /* lats: latency */
    uint32_t loss, dup, reorder; /* udpf: chances per million */
    uint64_t bps;                /* bws: bytes per second, 0: no limit */
    int64_t busy[2];             /* links: when the direction a->b
                                        ([0]) and b->a ([1]) is free */
};

/* The network (the backend's state). */
struct fut__backend {
    struct fut__iodrv *d;                /* its driver */
    const struct fut__simnet_clock *clk; /* the driver's (simnet.h) */
    struct ep *eps, *eps_tail;           /* every endpoint, in order */
    struct fut_sim_host *hosts;          /* every host, in order */
    struct fut_sim_host *deflt;          /* 127.0.0.1 */
    struct pair *parts, *lats;           /* cut links; link latencies */
    struct pair *udpf, *bws, *links;     /* UDP faults; bandwidths; the
                                            limited links' state */
    int64_t min_ns, max_ns;              /* the default latency */
    uint32_t loss, dup, reorder;         /* the default UDP faults */
    uint64_t bps;                        /* the default bandwidth */
    struct queue dgq;                    /* datagrams in flight, by time */
    struct fut__simnet_udp_stats udp;    /* fut_sim_udp_stats */
    struct fut__simrng rng; /* draws outside the simulation's polls */
    uint32_t tick;          /* the readiness word's event tick */
    struct fut__timer tm;   /* the delivery timer */
    int armed;              /* 'tm' is armed ... */
    int64_t armed_at;       /* ... for this time */
};

/* ------------------------------------------------ the wire (simnet_wire.c) */

/* A draw below 'k' from the seed (the polling task's generator, or the
 * network's own outside the simulation's polls). */
uint64_t fut__sn_draw(struct fut__backend *n, uint64_t k);
/* Reports 'bits' to the endpoint's handle, as an epoll event would. */
void fut__sn_notify(struct ep *e, unsigned bits);
/* Sends a segment of 'kind' from 'from' to 'to'; a SYN ('to' NULL) goes
 * to port 'dport' of 'dst'. */
void fut__sn_send(struct ep *from, int kind, struct ep *to,
                  struct fut_sim_host *dst, int dport, const void *data,
                  size_t len);
/* Sends a reset from 'from' to 'to' (nothing when 'to' is NULL or dead). */
void fut__sn_rst(struct ep *from, struct ep *to);
/* Aborts 'e' with error 'err' (0: none to report): its unread bytes go,
 * every operation ends. */
void fut__sn_kill(struct ep *e, int err);
/* A new endpoint on host 'h', last in creation order; NULL: no memory. */
struct ep *fut__sn_ep_new(struct fut__backend *n, struct fut_sim_host *h);
/* The open listener on port 'port' of host 'h', or NULL. */
struct ep *fut__sn_listener(struct fut__backend *n, struct fut_sim_host *h,
                            int port);

/* Sends a datagram of 'len' bytes from UDP socket 'from' to port
 * 'dport' of host 'dst', with the link's loss, duplication and
 * reordering (fut_sim_udp_faults). */
void fut__sn_dgram(struct ep *from, struct fut_sim_host *dst, int dport,
                   const void *data, size_t len);
/* The open UDP socket bound to port 'port' of host 'h', or NULL. */
struct ep *fut__sn_udp_bound(struct fut__backend *n, struct fut_sim_host *h,
                             int port);
/* The open Unix stream listener at 'path' on host 'h', or NULL. */
struct ep *fut__sn_unix_listener(struct fut__backend *n,
                                 struct fut_sim_host *h, const char *path);
/* Frees the datagrams UDP socket 'e' holds (they are never read). */
void fut__sn_dq_drop(struct ep *e);

/* Frees every segment of 'q' and empties it. */
void fut__sn_drop_queue(struct queue *q);
/* Sends 'e' a SEG_POKE after the delay of its host's own link. */
void fut__sn_poke(struct ep *e);

/* ---------------------------------- the socket calls (simnet_socket.c) */

/* Installs the shim's hook (platform/sys.h), which hands this file the
 * socket calls on a simulated socket: those of a task whose driver's
 * backend is 'vt' (fut__backend_sim), or on an fd the table holds. */
void fut__sn_hook_install(const struct fut__backend_vt *vt);

/* The fd table (every simulation's, under a lock): endpoint 'e' for
 * placeholder 'fd' (0 or FUT_ENOMEM), the endpoint of 'fd' (NULL: none),
 * and the entry's removal (before the placeholder's close). */
int fut__sn_table_put(int fd, struct ep *e);
struct ep *fut__sn_table_get(int fd);
void fut__sn_table_del(int fd);

/* A Unix address: 'path' ("" : an unnamed socket, the family only) into
 * 'out' (at most '*lenp' bytes; '*lenp' = its length). */
void fut__sn_fill_unix(const char *path, void *out, socklen_t *lenp);
/* The path of Unix address 'sa' into 'path'; FUT_EINVAL when it is not
 * one, or names nothing (the abstract namespace is not simulated). */
int fut__sn_parse_unix(const void *sa, socklen_t len, char path[UNIX_PATH]);
/* Host 'h''s address and 'port' into 'out', as fut__sn_fill_unix. */
void fut__sn_fill_addr(const struct fut_sim_host *h, int port, void *out,
                       socklen_t *lenp);
/* The host and port of 'sa'; '*any' = 1 for the wildcard address, '*lo'
 * for loopback. FUT_EINVAL for another family. */
int fut__sn_parse_addr(const void *sa, socklen_t len, int *family,
                       unsigned char ip[16], int *port, int *any, int *lo);
/* The open Unix datagram socket bound to 'path' on host 'h', or NULL. */
struct ep *fut__sn_unixdg_bound(struct fut__backend *n,
                                struct fut_sim_host *h, const char *path);

/* Inline: the operations (backend_sim.c) call these per datagram, and
 * had them inlined when they were that file's statics. */

/* A free port of host 'h' for a socket of 'kind' (UDP ports are a
 * namespace of their own, as in the kernel). */
static inline int fut__sn_ephemeral(struct fut__backend *n,
                                    struct fut_sim_host *h, int kind)
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

/* The host of address 'ip' of 'family', or NULL. */
static inline struct fut_sim_host *
fut__sn_host_by_ip(struct fut__backend *n, int family,
                   const unsigned char ip[16])
{
    for (struct fut_sim_host *h = n->hosts; h; h = h->next)
        if (h->family == family &&
            memcmp(h->addr, ip, family == AF_INET ? 4 : 16) == 0)
            return h;
    return NULL;
}

/* Write readiness to every Unix datagram socket that found a queue
 * full (room was made, or the receiver went): in creation order. */
static inline void fut__sn_unixdg_wake(struct fut__backend *n)
{
    for (struct ep *o = n->eps; o; o = o->next)
        if (o->kind == K_UNIXDG && o->dg_wait) {
            o->dg_wait = 0;
            fut__sn_notify(o, FUT__RD_WRITE);
        }
}

#endif /* FUT_IO_SIMNET_INTERNAL_H */
