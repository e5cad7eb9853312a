/* server: the listeners, the connection tasks and their limits
 * (--maxclients, --timeout, the pub/sub output limit), graceful
 * shutdown. main.c fills the config and calls server_run.
 *
 * Rules (threads): with --workers N the connection tasks run on the
 * multi-thread runtime's workers and move between them; everything in
 * 'struct server' they share is either read-only after start (cfg) or an
 * atomic counter (relaxed: statistics, read for INFO; the client count is
 * an admission counter and orders nothing else), or has its own lock (the
 * keyspace shards, the pub/sub registry).
 */
#ifndef FUT_REDIS_SERVER_H
#define FUT_REDIS_SERVER_H

#include <stdatomic.h>
#include <stdint.h>

#include "db.h"
#include "resp.h"

struct fut_runtime;
struct pubsub;

struct server_config {
    int port;                /* --port (0: none unless unixsocket) */
    const char *bind;        /* --bind, one numeric address */
    const char *unixsocket;  /* --unixsocket path, or NULL */
    long maxclients;         /* --maxclients */
    long long maxmemory;     /* --maxmemory bytes, 0: no limit */
    long timeout_s;          /* --timeout: idle clients closed; 0: never */
    int workers;             /* --workers: 0 = current-thread runtime */
    struct resp_limits lim;  /* --proto-max-bulk-len, inline limit */
    long long pubsub_hard;   /* client-output-buffer-limit pubsub */
    long long pubsub_soft;
    long pubsub_soft_s;
};

struct server {
    struct server_config cfg;
    struct db db;
    struct pubsub *ps;
    int tcp_port;            /* the port actually bound */
    int64_t start_ns;        /* runtime clock at start */
    int64_t unix_ms0;        /* wall clock at start (ms) */
    const char *backend;     /* "epoll" */
    atomic_llong next_id;
    atomic_llong clients;            /* connected now */
    atomic_llong total_connections;
    atomic_llong total_commands;
    atomic_llong rejected;           /* over --maxclients */
    atomic_llong pubsub_killed;      /* over the output limit */
    atomic_llong timed_out;
};

void server_config_init(struct server_config *cfg);
/* The keyspace clock: Unix time in ms, advanced by the runtime's clock
 * (fut_time_now), so that TTLs follow the runtime and EXPIREAT-style
 * values mean what they mean in Redis. */
int64_t server_now_ms(const struct server *srv);
/* Runs the server until SIGINT/SIGTERM; returns the exit code. */
int server_run(struct server *srv, struct fut_runtime *rt);

#endif
