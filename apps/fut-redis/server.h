/* SPDX-License-Identifier: MIT */
/* server: the listeners, the connection tasks and their limits
 * (--maxclients, --timeout, the pub/sub output limit), the active expiry
 * task, graceful shutdown. main.c fills the config and calls server_run.
 *
 * Rules (threads): with --workers N the connection tasks run on the
 * multi-thread runtime's workers and move between them; everything in
 * 'struct server' they share is either read-only after start (cfg,
 * backend, the clocks' origins) or an atomic counter, or has its own lock
 * (the keyspace shards, the pub/sub registry). The counters are relaxed
 * (statistics read by INFO; 'clients' is an admission counter and orders
 * nothing else) except 'shutting' and 'busy', the shutdown handshake
 * (seq_cst, see server.c).
 */
#ifndef FUT_REDIS_SERVER_H
#define FUT_REDIS_SERVER_H

#include <stdatomic.h>
#include <stdint.h>

#include "db.h"
#include "fut.h"
#include "resp.h"

struct pubsub;

#define SERVER_MAX_BINDS 16

struct server_config {
    int port; /* --port; 0 with --unixsocket: no TCP */
    const char *bind[SERVER_MAX_BINDS]; /* --bind, numeric addresses */
    int nbind;
    const char *unixsocket; /* --unixsocket path, or NULL */
    long maxclients;        /* --maxclients (default 10000) */
    long long maxmemory;    /* --maxmemory bytes, 0: no limit */
    long timeout_s;         /* --timeout: idle clients closed; 0: never */
    int workers;            /* --workers: 0 = current-thread runtime */
    int io_backend;         /* --io-backend: enum fut_io_backend_kind */
    struct resp_limits lim; /* --proto-max-bulk-len, inline limit */
    long long pubsub_hard;  /* client-output-buffer-limit pubsub */
    long long pubsub_soft;
    long pubsub_soft_s;
};

struct server {
    struct server_config cfg;
    struct db db;
    struct pubsub *ps;
    int tcp_port;         /* the port actually bound (0: none) */
    int64_t start_ns;     /* runtime clock at start */
    int64_t unix_ms0;     /* wall clock at start (ms) */
    const char *backend;  /* fut_runtime_backend: "epoll", ... */
    atomic_llong next_id; /* client ids */
    atomic_llong clients; /* connected now */
    atomic_llong total_connections;
    atomic_llong total_commands;
    atomic_llong rejected;      /* over --maxclients */
    atomic_llong pubsub_killed; /* over the output limit */
    atomic_llong timed_out;     /* idle over --timeout */
    atomic_int shutting;        /* SIGTERM/SIGINT seen (seq_cst) */
    atomic_llong busy;          /* connections between a read and
                                        the end of its replies (seq_cst) */
};

/* Redis' defaults (port 6379, maxclients 10000, 512 MB bulks, pubsub
 * output limit 32mb 8mb 60) and bind 127.0.0.1. */
void server_config_init(struct server_config *cfg);
/* Sets up 'srv' with 'cfg' (copied; its strings must outlive 'srv'): the
 * keyspace (1 shard, or 16 per worker with --workers) and the pub/sub
 * registry. 0, or -1 (no memory). server_fini releases it, after the
 * runtime that ran it was freed (its tasks hold pointers into 'srv'). */
int server_init(struct server *srv, const struct server_config *cfg);
void server_fini(struct server *srv);
/* The keyspace clock: Unix time in ms, advanced by the runtime's clock
 * (fut_time_now), so that TTLs follow the runtime. Thread: any. */
int64_t server_now_ms(const struct server *srv);

/* The listeners server_task opened (server.c). */
#define MAX_LISTENERS (SERVER_MAX_BINDS + 1)

struct listeners {
    struct fut_io *io[MAX_LISTENERS];   /* open, until an acceptor owns it */
    struct fut_join acc[MAX_LISTENERS]; /* the acceptors' handles */
    int n;                              /* listeners opened */
    int spawned;                        /* io[0 .. spawned) are owned */
};

/* server_run's body as a future, for a caller that runs it on a runtime
 * of its own (test/sim_redis.c: under simulation, where sockets must be
 * made inside the runtime). Its first poll opens the listeners and spawns
 * the acceptors and the cron task on 'rt'; it then serves until 'sig'
 * delivers SIGINT/SIGTERM or, when 'sig' is NULL, until 'stop' is
 * cancelled (one of the two must be given); then shuts down gracefully (stops accepting, waits up to 5 s
 * for the replies in flight). Output 'result': 0, or 1 when a listener
 * could not be opened or a task spawned (printed). Dropping it closes the
 * listeners; the connection and cron tasks stay on 'rt' (freeing 'rt'
 * drops them: before server_fini). Must not move after its first poll. */
struct server_task {
    struct fut_future base;
    int result; /* output */
    /* private */
    struct server *srv;
    struct fut_runtime *rt;
    struct fut_io *sig;
    struct fut_token *stop;
    struct listeners ls;
    struct fut_signal_recv rx;
    struct fut_token_wait tw;
    struct fut_sleep pause;
    int64_t deadline;
};
void server_task_init(struct server_task *t, struct server *srv,
                      struct fut_runtime *rt, struct fut_io *sig,
                      struct fut_token *stop);
/* Opens the listeners, runs the server on 'rt' until SIGINT/SIGTERM
 * (opened by the caller as 'sig', see fut_signal_open), shuts it down
 * gracefully and returns the exit code (0, or 1 when a listener could not
 * be opened: the reason is printed). Frees nothing of 'rt'. Thread: the
 * one that created 'rt' and 'sig'. */
int server_run(struct server *srv, struct fut_runtime *rt,
               struct fut_io *sig);

#endif
