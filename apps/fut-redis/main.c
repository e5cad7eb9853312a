/* SPDX-License-Identifier: MIT */
/* fut-redis: a Redis-compatible server on fut (README.md).
 *
 *   fut-redis [--port N] [--bind ADDR...] [--unixsocket PATH]
 *             [--maxclients N] [--maxmemory BYTES]
 *             [--maxmemory-policy noeviction] [--timeout SECONDS]
 *             [--proto-max-bulk-len BYTES]
 *             [--client-output-buffer-limit "pubsub HARD SOFT SECONDS"]
 *             [--workers N] [--io-backend auto|epoll|io_uring]
 *
 * Options are spelled as redis-server's (names case-insensitive, sizes
 * with Redis' units: 1k = 1000, 1kb = 1024, m/mb, g/gb). --help (or -h)
 * prints the usage on stdout (exit 0). An unknown option, a missing or
 * bad value, an extra argument is an error naming it, followed by the
 * usage on stderr (exit 2).
 * Startup lines go to stderr: "backend: <name>", "listening on ...".
 * SIGINT/SIGTERM: graceful shutdown, exit 0.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fut.h"
#include "server.h"

/* Redis' memtoull: a byte count with an optional unit. 1 on success. */
static int parse_bytes(const char *s, long long *out)
{
    static const struct {
        const char *unit;
        long long mul;
    } units[] = {
        {"", 1},           {"b", 1},
        {"k", 1000},       {"kb", 1024},
        {"m", 1000000},    {"mb", 1024 * 1024},
        {"g", 1000000000}, {"gb", 1024LL * 1024 * 1024},
    };
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || errno || v < 0 || !isdigit((unsigned char)*s))
        return 0;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcasecmp(end, units[i].unit) != 0)
            continue;
        if (v > LLONG_MAX / units[i].mul)
            return 0;
        *out = v * units[i].mul;
        return 1;
    }
    return 0;
}

/* A decimal in [lo, hi]. 1 on success. */
static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi)
        return 0;
    *out = v;
    return 1;
}

static int parse_backend(const char *s, int *out)
{
    if (!strcmp(s, "auto"))
        *out = FUT_IO_AUTO;
    else if (!strcmp(s, "epoll"))
        *out = FUT_IO_EPOLL;
    else if (!strcmp(s, "io_uring"))
        *out = FUT_IO_URING;
    else
        return 0;
    return 1;
}

/* "pubsub <hard> <soft> <seconds>", as one argument or four. Only the
 * pubsub class exists in fut-redis (normal clients are unlimited, as
 * Redis' default; there are no replicas). */
static int parse_obuf(char **v, int n, struct server_config *cfg)
{
    char buf[256], *w[4];
    int k = 0;
    if (n == 1) {
        snprintf(buf, sizeof buf, "%s", v[0]);
        for (char *t = strtok(buf, " "); t && k < 4; t = strtok(NULL, " "))
            w[k++] = t;
    } else {
        for (; k < n && k < 4; k++)
            w[k] = v[k];
    }
    long secs;
    return k == 4 && strcasecmp(w[0], "pubsub") == 0 &&
           parse_bytes(w[1], &cfg->pubsub_hard) &&
           parse_bytes(w[2], &cfg->pubsub_soft) &&
           parse_long(w[3], 0, INT_MAX, &secs) &&
           (cfg->pubsub_soft_s = secs, 1);
}

/* Applies option 'name' with its 'n' values; 1 done, 0 bad value. */
static int apply(const char *name, char **v, int n, struct server_config *c)
{
    long l;
    if (!strcasecmp(name, "bind")) {
        if (n > SERVER_MAX_BINDS)
            return 0;
        for (c->nbind = 0; c->nbind < n; c->nbind++)
            c->bind[c->nbind] = v[c->nbind];
        return n > 0;
    }
    if (!strcasecmp(name, "client-output-buffer-limit"))
        return parse_obuf(v, n, c);
    if (n != 1)
        return 0;
    if (!strcasecmp(name, "port"))
        return parse_long(v[0], 0, 65535, &l) && (c->port = (int)l, 1);
    if (!strcasecmp(name, "unixsocket"))
        return (c->unixsocket = v[0], 1);
    if (!strcasecmp(name, "maxclients"))
        return parse_long(v[0], 1, INT_MAX, &c->maxclients);
    if (!strcasecmp(name, "maxmemory"))
        return parse_bytes(v[0], &c->maxmemory);
    if (!strcasecmp(name, "maxmemory-policy"))
        return strcasecmp(v[0], "noeviction") == 0; /* the only one */
    if (!strcasecmp(name, "timeout"))
        return parse_long(v[0], 0, INT_MAX, &c->timeout_s);
    if (!strcasecmp(name, "proto-max-bulk-len"))
        return parse_bytes(v[0], &c->lim.max_bulk) &&
               c->lim.max_bulk >= 1024 * 1024; /* Redis' minimum */
    if (!strcasecmp(name, "workers"))
        return parse_long(v[0], 0, 256, &l) && (c->workers = (int)l, 1);
    if (!strcasecmp(name, "io-backend"))
        return parse_backend(v[0], &c->io_backend);
    return -1;
}

static const char usage_text[] =
    "usage: fut-redis [--port N] [--bind ADDR...] [--unixsocket PATH]\n"
    "                 [--maxclients N] [--maxmemory BYTES]\n"
    "                 [--maxmemory-policy noeviction] [--timeout SECONDS]\n"
    "                 [--proto-max-bulk-len BYTES]\n"
    "                 [--client-output-buffer-limit "
    "\"pubsub HARD SOFT SECONDS\"]\n"
    "                 [--workers N] [--io-backend auto|epoll|io_uring]\n"
    "  A Redis-compatible server (default port 6379). Options as\n"
    "  redis-server's; sizes take 1k/1kb, m/mb, g/gb. -h, --help: this "
    "text.\n";

/* Parses argv as redis-server does ("--name value..."; the values run to
 * the next "--"). 0, 1 (--help), or -1 with the error printed. */
static int parse_args(int argc, char **argv, struct server_config *cfg)
{
    for (int i = 1; i < argc;) {
        const char *opt = argv[i];
        if (!strcmp(opt, "--help") || !strcmp(opt, "-h"))
            return 1;
        if (strncmp(opt, "--", 2) != 0 || !opt[2]) {
            fprintf(stderr,
                    "fut-redis: unexpected argument '%s' (config "
                    "files are not supported: use --options)\n",
                    opt);
            return -1;
        }
        int n = 0;
        while (i + 1 + n < argc && strncmp(argv[i + 1 + n], "--", 2) != 0)
            n++;
        int r = apply(opt + 2, argv + i + 1, n, cfg);
        if (r < 0) {
            fprintf(stderr, "fut-redis: unknown option '%s'\n", opt);
            return -1;
        }
        if (r == 0) {
            fprintf(stderr, "fut-redis: bad value for '%s'%s%s\n", opt,
                    n ? ": " : " (missing)", n ? argv[i + 1] : "");
            return -1;
        }
        i += 1 + n;
    }
    return 0;
}

static int make_runtime(const struct server_config *cfg,
                        struct fut_runtime **rt)
{
    struct fut_rt_config rc;
    fut_rt_config_init(&rc);
    rc.io_backend = cfg->io_backend;
    if (cfg->workers > 0) {
        rc.flavor = FUT_RT_MULTI_THREAD;
        rc.workers = cfg->workers;
    }
    int r = fut_runtime_new(&rc, rt);
    if (r < 0) {
        const char *why = fut_io_backend_error();
        fprintf(stderr, "fut-redis: runtime: %s%s%s\n", fut_strerror(r),
                *why ? ": " : "", why);
        return -1;
    }
    fprintf(stderr, "backend: %s\n", fut_runtime_backend(*rt));
    return 0;
}

int main(int argc, char **argv)
{
    struct server_config cfg;
    server_config_init(&cfg);
    int r = parse_args(argc, argv, &cfg);
    if (r != 0) { /* --help: stdout, 0; a bad argument: stderr, 2 */
        fputs(usage_text, r > 0 ? stdout : stderr);
        return r > 0 ? 0 : 2;
    }
    /* Signals first: threads started later inherit the blocked mask. */
    int sigs[2] = {SIGINT, SIGTERM};
    struct fut_io *sig;
    r = fut_signal_open(sigs, 2, &sig);
    if (r < 0) {
        fprintf(stderr, "fut-redis: signals: %s\n", fut_strerror(r));
        return 1;
    }
    struct fut_runtime *rt;
    if (make_runtime(&cfg, &rt) != 0) {
        fut_io_close(sig);
        return 1;
    }
    struct server srv;
    if (server_init(&srv, &cfg) != 0) {
        fprintf(stderr, "fut-redis: out of memory\n");
        fut_runtime_free(rt);
        fut_io_close(sig);
        return 1;
    }
    int code = server_run(&srv, rt, sig);
    fut_runtime_free(rt); /* drops every connection: before server_fini */
    server_fini(&srv);
    fut_io_close(sig);
    if (code == 0)
        fprintf(stderr, "fut-redis: bye\n");
    return code;
}
