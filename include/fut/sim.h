/* SPDX-License-Identifier: MIT */
/** \file
 * fut simulation: a deterministic runtime for tests (docs/simulation.md).
 *
 * A simulation runtime is a current-thread runtime (fut/rt.h) to every
 * other call - fut_spawn, fut_block_on, join handles, timers, channels -
 * with its choices taken from a seed: the next ready task is picked by a
 * seeded generator (not FIFO), time is virtual (it starts at 0 and jumps
 * to the next timer when every task is idle), and blocking-pool work
 * (fut_spawn_blocking, fs) runs inline, on the runtime's thread, at the
 * poll that submits it. The same seed and the same program give the same
 * sequence of polls; FUT_SIM_SEED reruns a failing seed, FUT_SIM_VERBOSE
 * prints each simulation's trace hash, FUT_SIM_CHECK runs each seed twice
 * and names the first step where they differ.
 *
 * The network is simulated for TCP, UDP and Unix stream and datagram
 * sockets and socket pairs (below:
 * hosts, latency, bandwidth, partitions, resets, accept backlogs, host
 * crashes and restarts, UDP loss, duplication and reordering;
 * docs/simulation.md): fut_tcp_*, fut_udp_*, fut_unix_listen,
 * fut_unix_connect_init, fut_unix_datagram_bind, fut_unix_pair and the
 * stream and datagram calls work
 * unchanged on simulated sockets. On request (below): N workers emulated on the one
 * thread (cfg->workers > 1: per-worker queues, LIFO slots, stealing, all
 * decided by the seed); seeded faults of the allocator hook, the file
 * calls and the simulated sockets (fut_sim_set_faults); an invariant
 * checked after every step (fut_sim_set_invariant); a swarm over many
 * seeds that also chooses the faults per seed and prints the replay of
 * the first failure (fut_sim_swarm).
 *
 * Not simulated (yet): pipes and other fds (refused with FUT_EINVAL).
 */
#ifndef FUT_SIM_H
#define FUT_SIM_H

#include "fut/rt.h"

FUT_BEGIN_DECLS

/** What a simulation did (fut_sim_report, fut_sim_run). */
struct fut_sim_report {
    uint64_t seed;      /**< the seed it ran with (FUT_SIM_SEED's, if set) */
    uint64_t steps;     /**< polls so far: tasks' and the block_on futures' */
    int64_t virtual_ns; /**< virtual time since the start (ns) */
    uint64_t trace;     /**< the trace hash over every poll (which task -
                           its spawn number, never its address - its
                           result, the virtual time) */
    uint64_t leak_step; /**< fut_sim_run under FUT_SIM_CHECK=1: the first
                           step (1-based) where the second run differed
                           from the first; 0: none */
};

/** Creates a simulation runtime running on seed 'seed'; the environment
 * variable FUT_SIM_SEED=N (decimal or 0x hex) replaces 'seed', so a
 * failing seed reruns exactly. 'cfg' as for fut_runtime_new (NULL: the
 * defaults); its flavor must be FUT_RT_CURRENT_THREAD and it must have a
 * driver (no_driver 0); start_paused and io_backend are ignored (the
 * clock is virtual, the network simulated); 'workers' above 1 (at most
 * 256) emulates that many workers on the one thread (docs/simulation.md).
 * Returns 0 with '*out' set (free it with fut_runtime_free, which prints
 * the FUT_SIM_VERBOSE=1 line
 * "fut-sim seed=N steps=S virtual_ns=T trace=HEX" on stderr), FUT_EINVAL
 * (a bad or multi-thread config, no driver), FUT_ENOMEM, or the driver's
 * error. Every task must be spawned and run on the thread that calls
 * fut_block_on; a spawn or wake from another thread works but breaks
 * determinism. A fut_block_on of the runtime that finds nothing that
 * could ever go on (no task ready, no timer armed: every task waits for
 * something no one will do) does not sleep: it prints "fut-sim: seed=N
 * deadlock after step S" on stderr and returns -EDEADLK (a wake from
 * another thread is not waited for). Thread: any. */
FUT_EXTERN int fut_sim_new(const struct fut_rt_config *cfg, uint64_t seed,
                           struct fut_runtime **out);

/** Fills '*out' with what the simulation runtime 'rt' did so far.
 * Returns 0, or FUT_EINVAL when 'rt' is not a simulation runtime. Thread:
 * the thread running the simulation, outside fut_block_on or inside it
 * (from a task). */
FUT_EXTERN int fut_sim_report(struct fut_runtime *rt,
                              struct fut_sim_report *out);

/** A simulation's body (fut_sim_run): spawn and fut_block_on on 'rt',
 * return 0 for success or any other value for a failure. It must not
 * free 'rt'. */
typedef int (*fut_sim_fn)(struct fut_runtime *rt, void *ud);

/** Runs one simulation: creates a simulation runtime on 'seed' (as
 * fut_sim_new, FUT_SIM_SEED included), calls 'fn'(rt, ud), fills '*out'
 * (may be NULL) and frees the runtime. Returns what 'fn' returned, or
 * fut_sim_new's error. A run whose 'fn' does not return 0 prints
 * "fut-sim: seed=N failed (R); rerun with FUT_SIM_SEED=N" on stderr.
 * With FUT_SIM_CHECK=1 in the environment it runs the seed twice, the
 * second run stopping at the first poll that differs from the first
 * (its fut_block_on then returns FUT_ECANCELED); such a difference is
 * printed, naming the step, the task (spawn number and site) and what
 * each run did there, and gives FUT_ECANCELED with out->leak_step set.
 * 'fn' must give the same result for the same seed: it may keep state in
 * 'ud' only if it resets it at its start. Thread: any. */
FUT_EXTERN int fut_sim_run(const struct fut_rt_config *cfg, uint64_t seed,
                           fut_sim_fn fn, void *ud,
                           struct fut_sim_report *out);

/** The next 64 bits of the seeded generator of the simulation running on
 * this thread (inside its fut_block_on: in a task), for a simulated
 * program's own random choices. Outside a simulation: 0. Thread: the
 * simulation's. */
FUT_EXTERN uint64_t fut_sim_random(void);

/* ------------------------------------------------ the simulated network */

/* A simulation has a network of hosts, each with one address, on which
 * TCP, UDP and Unix streams run in memory and in virtual time (UDP:
 * fut_sim_udp_faults; Unix: paths per host, a connection or a stream
 * pair like TCP's over the host's own link, datagrams reliable, ordered
 * and at once, a sender waiting while its receiver's queue is full;
 * docs/simulation.md): a socket created by a task
 * belongs to the host the task runs on (fut_sim_spawn_on; else the
 * default host, 127.0.0.1), a listener or a connect names a host by its
 * address (127.0.0.1 and ::1: the socket's own host), and every segment
 * takes a delay drawn from the seed for its link (fut_sim_latency;
 * default 1 to 3 ms). Streams are reliable and ordered; reads and writes
 * return partial counts chosen by the seed; a connect to a port nobody
 * listens on fails with -ECONNREFUSED, to an address no host has with
 * -ENETUNREACH; a write takes at most 64 KiB not yet read by the peer;
 * a listener's accept queue holds at most backlog + 1 connections (the
 * listen backlog, at most 4096: fut_tcp_listen's), a connect beyond that
 * is refused (-ECONNREFUSED after the round trip).
 * All calls below: on the simulation's thread; their hosts belong to the
 * runtime and go with it. */

/** A host of a simulation's network (fut_sim_host_new). */
struct fut_sim_host;
struct fut_io;

/** Adds a host with the IPv4 or IPv6 address 'addr' (text, e.g.
 * "10.0.0.1") to the network of simulation runtime 'rt'. Returns 0 with
 * '*out' set (owned by 'rt'), FUT_EINVAL (not a simulation runtime, not
 * an address, or the address is taken: 127.0.0.1 is the default host's),
 * FUT_ENOMEM. */
FUT_EXTERN int fut_sim_host_new(struct fut_runtime *rt, const char *addr,
                                struct fut_sim_host **out);

/** fut_spawn on host 'host''s runtime, the task running "on" 'host':
 * every socket its polls create is one of 'host''s (its listeners bind
 * there, its connects leave from there). Tasks it spawns run on the
 * default host unless spawned with this call too. fut_join_output of
 * the handle is not the future's output (a wrapper's): keep outputs in
 * memory the future points to. Returns what fut_spawn returns;
 * FUT_EINVAL when 'host' is NULL; FUT_ESHUTDOWN when it is down
 * (fut_sim_crash; the future stays the caller's). */
#define fut_sim_spawn_on(host, f, size, join)                                \
    fut_sim_spawn_on_at((host), FUT_AS_FUTURE(f), (size), (join), __FILE__,  \
                        __LINE__)
/** The function behind fut_sim_spawn_on(). */
FUT_EXTERN int fut_sim_spawn_on_at(struct fut_sim_host *host,
                                   const struct fut_future *f, size_t size,
                                   struct fut_join *join, const char *file,
                                   int line);

/** Cuts the link between hosts 'a' and 'b' (both directions): segments
 * between them stall (as TCP retransmits) until fut_sim_heal; a connect
 * across it waits (its deadline or a fut_timeout ends it). Returns 0,
 * FUT_EINVAL (a NULL host, or hosts of two networks), FUT_ENOMEM. */
FUT_EXTERN int fut_sim_partition(struct fut_sim_host *a,
                                 struct fut_sim_host *b);

/** Heals the link between 'a' and 'b': what stalled is delivered again,
 * each segment after a new delay from now, in order. Returns 0 (also for
 * a link that was not cut) or FUT_EINVAL (as fut_sim_partition). */
FUT_EXTERN int fut_sim_heal(struct fut_sim_host *a, struct fut_sim_host *b);

/** Sets the one-way delay of the link between 'a' and 'b' ('a' and 'b'
 * NULL: of every link without its own setting) of simulation 'rt' to a
 * value drawn from the seed, uniform in [min_ns, max_ns], per segment.
 * A direction stays ordered (a segment never overtakes the one before).
 * Applies to segments sent from now on. Returns 0, FUT_EINVAL (not a
 * simulation, min_ns < 0, max_ns < min_ns, only one host NULL, a host of
 * another runtime), FUT_ENOMEM. */
FUT_EXTERN int fut_sim_latency(struct fut_runtime *rt, struct fut_sim_host *a,
                               struct fut_sim_host *b, int64_t min_ns,
                               int64_t max_ns);

/** Sets the UDP faults of the link between 'a' and 'b' (both directions;
 * 'a' and 'b' NULL: of every link without its own setting) of
 * simulation 'rt': each datagram sent over it is lost with chance
 * 'loss_ppm' per million, else duplicated (a second copy, with its own
 * delay) with chance 'dup_ppm', and each copy is held back with chance
 * 'reorder_ppm' (an extra delay of up to four times the link's largest
 * delay, so that datagrams sent after it may arrive before it; a copy
 * not held back arrives after the ones its socket sent earlier to the
 * same address). Every draw is the seed's; a rate of 0 draws nothing.
 * Default: 0, 0, 0 (datagrams arrive once and in order unless a
 * partition, a crash or a full receive buffer drops them). Applies to
 * datagrams sent from now on. Returns 0, FUT_EINVAL (not a simulation, a
 * rate above 1,000,000, only one host NULL, a host of another runtime),
 * FUT_ENOMEM. Thread: the simulation's, inside or outside fut_block_on.
 * Not a future: nothing to cancel. */
FUT_EXTERN int fut_sim_udp_faults(struct fut_runtime *rt,
                                  struct fut_sim_host *a,
                                  struct fut_sim_host *b, uint32_t loss_ppm,
                                  uint32_t dup_ppm, uint32_t reorder_ppm);

/** What happened to the datagrams of a simulation (fut_sim_udp_stats).
 * Every datagram sent is accounted for: sent + duplicated == lost + cut
 * + no_socket + overflow + delivered + in_flight, and delivered - read
 * are the ones a socket received and nobody read (still queued, or
 * dropped with their socket at its close or its host's crash). */
struct fut_sim_udp_stats {
    uint64_t sent;       /**< datagrams sent by the programs */
    uint64_t duplicated; /**< of those, sent twice by the network */
    uint64_t reordered;  /**< copies held back (fut_sim_udp_faults) */
    uint64_t lost;       /**< lost by the seed's loss rate */
    uint64_t cut;        /**< dropped by a partition or a host that was
                            down, when sent or on arrival */
    uint64_t no_socket;  /**< arrived where no socket was bound to the
                            port (or a connected one that takes only its
                            peer's) */
    uint64_t overflow;   /**< arrived at a full receive buffer (212,992
                            bytes, each datagram counted 256 bytes more
                            than its payload) */
    uint64_t delivered;  /**< put into a socket's receive queue */
    uint64_t read;       /**< taken by a receive (not by a peek) */
    uint64_t in_flight;  /**< on their way now */
};

/** Fills '*out' with the datagram counts of simulation 'rt' so far.
 * Returns 0, or FUT_EINVAL ('rt' is not a simulation: '*out' zeroed).
 * Thread: the simulation's, inside or outside fut_block_on. Not a
 * future: nothing to cancel. */
FUT_EXTERN int fut_sim_udp_stats(struct fut_runtime *rt,
                                 struct fut_sim_udp_stats *out);

/** Sets the bandwidth of the link between 'a' and 'b' ('a' and 'b' NULL:
 * of every link without its own setting, the loopback of a host
 * included) of simulation 'rt' to 'bytes_per_sec' in each direction (0:
 * unlimited, the default). A segment or datagram of L bytes leaves its
 * host L / bytes_per_sec seconds of virtual time after the direction
 * finished carrying what was sent before it over the link (TCP, Unix
 * and UDP alike, every connection sharing it), then takes the link's
 * delay (fut_sim_latency); on a limited link TCP data goes in pieces of
 * at most 16 KiB, so a large write reaches the reader spread over time.
 * Applies to what is sent from now on. Returns 0, FUT_EINVAL (not a
 * simulation, only one host NULL, a host of another runtime),
 * FUT_ENOMEM. Thread: the simulation's, inside or outside fut_block_on.
 * Not a future: nothing to cancel. */
FUT_EXTERN int fut_sim_bandwidth(struct fut_runtime *rt,
                                 struct fut_sim_host *a,
                                 struct fut_sim_host *b,
                                 uint64_t bytes_per_sec);

/** Crashes host 'host': every task spawned on it with fut_sim_spawn_on
 * that has not finished is aborted (fut_join_abort: dropped at once when
 * idle, after its poll when running - the normal drop path, so its join
 * handle gives FUT_ECANCELED and its scopes drop their children); every
 * socket of the host dies first: its connections are reset at their
 * peers (their next read or write, after the link's delay, gives
 * -ECONNRESET; bytes in flight are lost), its listeners are gone. Until
 * fut_sim_restart the host is down: segments toward it wait (as TCP
 * retransmits; a connect to it waits for its deadline), fut_sim_spawn_on
 * on it gives FUT_ESHUTDOWN, and a socket call of a poll still running
 * there gives -ENETDOWN. Tasks the host's tasks spawned with fut_spawn
 * run on the default host and are not aborted. Returns 0, or FUT_EINVAL
 * (NULL, already down, or not called from inside the fut_block_on of the
 * host's runtime). Thread: the simulation's, inside its fut_block_on
 * (from a task or the block_on future). */
FUT_EXTERN int fut_sim_crash(struct fut_sim_host *host);

/** Restarts crashed host 'host' with nothing running and no sockets: the
 * test spawns its programs again (fut_sim_spawn_on), which may listen on
 * the ports it had; segments that waited for it go, after a new delay
 * each (a connect that waited reaches whatever listens by then; what was
 * for the old sockets is answered with a reset or dropped). Returns 0,
 * or FUT_EINVAL (NULL, or the host is not down). Thread: the
 * simulation's, inside or outside fut_block_on. */
FUT_EXTERN int fut_sim_restart(struct fut_sim_host *host);

/** Resets the TCP connection of simulated socket 'io' (a fut_io from
 * fut_tcp_connect or an accept): its own next read or write fails with
 * -ECONNRESET at once, its peer's after the link's delay (bytes not yet
 * read are dropped at both ends). Returns 0, or FUT_EINVAL (not a
 * connected simulated socket, or reset already). */
FUT_EXTERN int fut_sim_reset(struct fut_io *io);

/* ----------------------------------------------------------------------
 * Faults, invariants and the swarm (src/rt/sim_swarm.c)
 * ---------------------------------------------------------------------- */

/** Seeded fault kinds (a bit mask; fut_sim_set_faults, fut_sim_swarm). */
#define FUT_SIM_FAULT_ALLOC                                                  \
    1u /**< an allocation through fut's allocator
                                  hook (the runtime's, fut_mem_alloc's)
                                  fails: the call reports FUT_ENOMEM */
#define FUT_SIM_FAULT_EINTR                                                  \
    2u /**< a file read or write (fut_fs_read,
                                  fut_fs_write: pread, pwrite) is
                                  interrupted: -EINTR, which fut retries */
#define FUT_SIM_FAULT_FS                                                     \
    4u /**< a file call fails: open (-ENOENT,
                                  -EACCES, -EMFILE), pread (-EIO,
                                  -EAGAIN), pwrite (-EIO, -ENOSPC,
                                  -EAGAIN), fstat and fsync (-EIO) */
/** A read or write of an open simulated TCP or Unix stream connection
 * fails with a spurious -EAGAIN; readiness is reported again after the
 * host's own link delay (as a later epoll event would), so the operation
 * waits, then goes on. (UDP sockets are not struck.) */
#define FUT_SIM_FAULT_EAGAIN 8u
/** A read or write of an open simulated TCP or Unix stream connection
 * resets it (as fut_sim_reset): that call fails with -ECONNRESET, the
 * peer's next one after the link's delay. */
#define FUT_SIM_FAULT_RESET 16u
#define FUT_SIM_FAULT_ALL 31u /**< every kind above */

/** Turns the seeded faults 'kinds' (FUT_SIM_FAULT_*; 0: none) on for
 * the simulation runtime 'rt': each call of an enabled kind fails with
 * chance 'ppm' / 1,000,000, decided by a generator seeded from the
 * simulation's seed (its own stream: the schedule's draws are not
 * moved), so a seed gives the same failures at the same calls. Faults
 * strike inside fut_block_on only (the program's polls, never the
 * runtime's teardown, the trace record or an invariant). 'ppm' must be
 * below 1,000,000 when EINTR or EAGAIN is on (an always-interrupted
 * read is retried for ever). Returns 0, or FUT_EINVAL ('rt' is not a
 * simulation, an unknown kind, ppm > 1,000,000). Thread: the simulation's, outside
 * fut_block_on or in a task. */
FUT_EXTERN int fut_sim_set_faults(struct fut_runtime *rt, unsigned kinds,
                                  uint32_t ppm);

/** How many faults the simulation runtime 'rt' injected so far, of the
 * kinds in 'kinds' (FUT_SIM_FAULT_*). Not a simulation: 0. Thread: the
 * simulation's. */
FUT_EXTERN uint64_t fut_sim_faults_injected(struct fut_runtime *rt,
                                            unsigned kinds);

/** A user invariant: returns 0 when it holds, anything else when it is
 * broken. It runs on the simulation's thread, between two polls, with
 * no task running: it may read the program's state but must not block,
 * spawn, wake or poll. */
typedef int (*fut_sim_invariant_fn)(void *ud);

/** Runs 'fn'(ud) after every step of the simulation runtime 'rt' (every
 * poll of a task or of the fut_block_on future; NULL: none). The first
 * time it does not return 0 the simulation stops there, as a
 * FUT_SIM_CHECK divergence does: "fut-sim: seed=N invariant failed (R)
 * after step S at virtual_ns=T" goes to stderr and fut_block_on returns
 * FUT_ECANCELED, then and in every later call. Returns 0, or FUT_EINVAL
 * ('rt' is not a simulation). Thread: the simulation's, outside
 * fut_block_on or in a task. */
FUT_EXTERN int fut_sim_set_invariant(struct fut_runtime *rt,
                                     fut_sim_invariant_fn fn, void *ud);

/** The step (1-based) at which the invariant of 'rt' failed, 0 when it
 * has not (or 'rt' is not a simulation). Thread: the simulation's. */
FUT_EXTERN uint64_t fut_sim_invariant_failed(struct fut_runtime *rt);

/** A swarm: one scenario over many seeds (fut_sim_swarm). Zero it, then
 * set what you need. */
struct fut_sim_swarm {
    const struct fut_rt_config *cfg; /**< each runtime's (NULL: defaults) */
    unsigned faults;    /**< the fault kinds the swarm may turn on: each
                           seed turns each of them on with chance 1/2,
                           chosen from the seed (swarm testing) */
    uint32_t fault_ppm; /**< each on kind's chance per call, per million
                           (0: 2000); below 1,000,000 */
    fut_sim_invariant_fn invariant; /**< after every step (NULL: none) */
    void *invariant_ud;             /**< passed to invariant */
    const char *commit; /**< printed in the replay line (NULL: the fut
                           commit the library was configured at, or
                           "unknown") */
    const char *replay; /**< the command that reruns the test, printed
                           after FUT_SIM_SEED=N (NULL: this process's
                           command line, from /proc/self/cmdline) */
    int quiet;          /**< 1: print no replay lines */
};

/** What a swarm found (fut_sim_swarm). */
struct fut_sim_swarm_result {
    uint64_t seeds;               /**< seeds run */
    uint64_t failed_seed;         /**< the failing seed (when status != 0) */
    int status;                   /**< 0, or the failing seed's result */
    unsigned faults;              /**< the fault kinds that seed had on */
    uint64_t injected;            /**< faults injected in its run */
    uint64_t invariant_step;      /**< the step its invariant failed at (0:
                                it did not; the scenario failed) */
    struct fut_sim_report report; /**< its report */
};

/** Runs 'fn'(rt, ud) as fut_sim_run does, on the seeds first_seed,
 * first_seed + 1, ... (n_seeds of them), each on a fresh simulation
 * runtime with the fault kinds its seed chose out of sw->faults and the
 * invariant sw->invariant; stops at the first seed whose 'fn' does not
 * return 0 or whose invariant fails (then 'fn''s result, or
 * FUT_ECANCELED if 'fn' returned 0) and prints, unless sw->quiet:
 *   fut-sim: swarm: seed=N failed (R) after S steps commit=C
 *            faults=alloc+fs ppm=P injected=I [invariant at step K]
 *   fut-sim: replay: FUT_SIM_SEED=N COMMAND
 * (one line each). With FUT_SIM_SEED=N in the environment only seed N
 * runs, with the same fault choice: the replay. FUT_SIM_CHECK applies to
 * every seed (fut_sim_run). Returns 0 (every seed passed), the failing
 * seed's status, or FUT_EINVAL (sw or fn NULL, an unknown kind, a bad
 * ppm). '*out' (may be NULL) gets what was found. 'fn' must reset the
 * state it keeps in 'ud' at its start. Thread: any, outside a runtime. */
FUT_EXTERN int fut_sim_swarm(const struct fut_sim_swarm *sw,
                             uint64_t first_seed, uint64_t n_seeds,
                             fut_sim_fn fn, void *ud,
                             struct fut_sim_swarm_result *out);

FUT_END_DECLS

#endif /* FUT_SIM_H */
