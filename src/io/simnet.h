/* SPDX-License-Identifier: MIT */
/* The simulated network (backend_sim.c, simnet_socket.c, simnet_wire.c) as the simulation's public calls
 * (src/rt/sim_net.c, fut/sim.h) and the driver see it. One thread: the
 * simulation's. */
#ifndef FUT_IO_SIMNET_H
#define FUT_IO_SIMNET_H

#include <stdint.h>

struct fut__backend;
struct fut__iodrv;
struct fut__io;
struct fut_runtime;
struct fut_sim_host;

/* The driver's clock and timers as the network uses them: handed down
 * by driver.c (the backends sit below it and never call it). */
struct fut__timer;
struct fut_waker;
struct fut__simnet_clock {
    int64_t (*now)(struct fut__iodrv *d);
    int (*arm)(struct fut__iodrv *d, struct fut__timer *t, int64_t deadline,
               const struct fut_waker *w);
    void (*cancel)(struct fut__timer *t);
};

/* The network 'b' (fut__backend_sim's state) runs on driver 'd' with
 * its clock and timer wheel 'c' (driver.c, right after create). */
void fut__simnet_bind(struct fut__backend *b, struct fut__iodrv *d,
                      const struct fut__simnet_clock *c);

/* The host whose sockets a poll creates (fut_sim_spawn_on sets it around
 * each poll of its task); NULL: the network's default host, 127.0.0.1. */
extern _Thread_local struct fut_sim_host *fut__simnet_current;

/* fut_sim_host_new: a host with the IPv4 or IPv6 address 'addr'. 0,
 * FUT_EINVAL (not an address, or taken), FUT_ENOMEM. */
int fut__simnet_host_new(struct fut__backend *b, struct fut_runtime *rt,
                         const char *addr, struct fut_sim_host **out);
/* fut_sim_partition / fut_sim_heal: segments between 'a' and 'b' are
 * held (on) or go again (off). 0 or FUT_ENOMEM. */
int fut__simnet_partition(struct fut_sim_host *a, struct fut_sim_host *b,
                          int on);
/* fut_sim_latency: a link's one-way delay, uniform in [min, max] ns
 * ('a' and 'b' NULL: every link without its own). 0 or FUT_ENOMEM. */
int fut__simnet_latency(struct fut__backend *b, struct fut_sim_host *x,
                        struct fut_sim_host *y, int64_t min_ns,
                        int64_t max_ns);
/* fut_sim_reset: resets the connection of simulated socket 'io'. 0, or
 * FUT_EINVAL (not a simulated connected socket). */
int fut__simnet_reset(struct fut__io *io);
/* fut_sim_crash: host 'h''s sockets die (connections reset at their
 * peers, listeners gone) and it is down - segments toward it wait -
 * until fut__simnet_restart. 0, or FUT_EINVAL (down already). Its tasks
 * are the caller's (sim_net.c). */
int fut__simnet_crash(struct fut_sim_host *h);
/* fut_sim_restart: host 'h' is up again, with no sockets; what waited
 * for it goes. 0, or FUT_EINVAL (it is not down). */
int fut__simnet_restart(struct fut_sim_host *h);
/* 1 when host 'h' is down (crashed, not restarted). */
int fut__simnet_down(struct fut_sim_host *h);
/* The datagram counts of a network (fut_sim_udp_stats says each). */
struct fut__simnet_udp_stats {
    uint64_t sent, duplicated, reordered, lost, cut, no_socket, overflow,
        delivered, read, in_flight;
};
/* fut_sim_udp_stats: the counts so far ('in_flight' counted now). */
void fut__simnet_udp_stats(struct fut__backend *b,
                           struct fut__simnet_udp_stats *out);
/* fut_sim_udp_faults, fut_sim_bandwidth: a link's settings ('x' and 'y'
 * NULL: the default of every link without its own). 0 or FUT_ENOMEM. */
int fut__simnet_udp_faults(struct fut__backend *b, struct fut_sim_host *x,
                           struct fut_sim_host *y, uint32_t loss,
                           uint32_t dup, uint32_t reorder);
int fut__simnet_bandwidth(struct fut__backend *b, struct fut_sim_host *x,
                          struct fut_sim_host *y, uint64_t bps);
/* The network of host 'h', and the runtime it was made for. */
struct fut__backend *fut__simnet_of(struct fut_sim_host *h);
struct fut_runtime *fut__simnet_rt(struct fut_sim_host *h);

#endif /* FUT_IO_SIMNET_H */
