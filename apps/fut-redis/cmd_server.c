/* SPDX-License-Identifier: MIT */
/* cmd_server: PING ECHO SELECT QUIT COMMAND HELLO CLIENT INFO. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cmd.h"
#include "pubsub.h"
#include "server.h"

/* The Redis version fut-redis answers as (clients check it). */
#define COMPAT_VERSION "7.0.15"

void cmd_ping(struct cmd_ctx *c)
{
    if (c->argc > 2) {
        resp_add_error(c->out, "ERR wrong number of arguments for 'ping' "
                               "command");
        return;
    }
    if (pubsub_count_of(c->cl) > 0) { /* RESP2 subscribed mode */
        resp_add_array(c->out, 2);
        resp_add_bulk_str(c->out, "pong");
        if (c->argc == 2)
            resp_add_bulk(c->out, c->argv[1].p, c->argv[1].len);
        else
            resp_add_bulk(c->out, "", 0);
    } else if (c->argc == 2) {
        resp_add_bulk(c->out, c->argv[1].p, c->argv[1].len);
    } else {
        resp_add_simple(c->out, "PONG");
    }
}

void cmd_echo(struct cmd_ctx *c)
{
    resp_add_bulk(c->out, c->argv[1].p, c->argv[1].len);
}

void cmd_select(struct cmd_ctx *c)
{
    long long id;
    if (!arg_ll(c, 1, &id))
        return;
    if (id != 0) /* one database, as redis-server --databases 1 */
        resp_add_error(c->out, "ERR DB index is out of range");
    else
        resp_add_ok(c->out);
}

void cmd_quit(struct cmd_ctx *c)
{
    resp_add_ok(c->out);
    c->cl->close_after_reply = 1;
}

/* ----------------------------------------------------------------- COMMAND */

static void command_info(struct cmd_ctx *c, const struct command *k)
{
    resp_add_array(c->out, 10);
    resp_add_bulk_str(c->out, k->name);
    resp_add_int(c->out, k->arity);
    int nf = !!(k->flags & CMD_WRITE) + !!(k->flags & CMD_DENYOOM) +
             !!(k->flags & CMD_PUBSUB) + !(k->flags & CMD_WRITE);
    resp_add_array(c->out, nf);
    if (k->flags & CMD_WRITE)
        resp_add_simple(c->out, "write");
    else
        resp_add_simple(c->out, "readonly");
    if (k->flags & CMD_DENYOOM)
        resp_add_simple(c->out, "denyoom");
    if (k->flags & CMD_PUBSUB)
        resp_add_simple(c->out, "pubsub");
    resp_add_int(c->out, k->first_key);
    resp_add_int(c->out, k->last_key);
    resp_add_int(c->out, k->step);
    for (int i = 0; i < 4; i++) /* acl categories, tips, key specs, subs */
        resp_add_array(c->out, 0);
}

static const struct command *find_cmd(const struct resp_arg *a)
{
    for (size_t i = 0; i < cmd_count; i++)
        if (arg_is(a, cmd_table[i].name))
            return &cmd_table[i];
    return NULL;
}

static void unknown_sub(struct cmd_ctx *c, const char *cmd)
{
    resp_add_errorf(c->out, "ERR unknown subcommand '%.*s'. Try %s HELP.",
                    (int)(c->argv[1].len > 128 ? 128 : c->argv[1].len),
                    c->argv[1].p, cmd);
}

void cmd_command(struct cmd_ctx *c)
{
    if (c->argc == 1) {
        resp_add_array(c->out, (long long)cmd_count);
        for (size_t i = 0; i < cmd_count; i++)
            command_info(c, &cmd_table[i]);
    } else if (arg_is(&c->argv[1], "count") && c->argc == 2) {
        resp_add_int(c->out, (long long)cmd_count);
    } else if (arg_is(&c->argv[1], "info")) {
        resp_add_array(c->out, (long long)c->argc - 2);
        for (size_t i = 2; i < c->argc; i++) {
            const struct command *k = find_cmd(&c->argv[i]);
            if (k)
                command_info(c, k);
            else
                resp_add_null_array(c->out);
        }
    } else if (arg_is(&c->argv[1], "docs")) {
        resp_add_array(c->out, 0); /* no docs: redis-cli uses its own */
    } else {
        unknown_sub(c, "COMMAND");
    }
}

/* ------------------------------------------------------------ HELLO CLIENT */

static int name_ok(const struct resp_arg *a)
{
    for (size_t i = 0; i < a->len; i++)
        if (a->p[i] < '!' || a->p[i] > '~')
            return 0;
    return 1;
}

static void set_name(struct client *cl, const struct resp_arg *a)
{
    free(cl->name);
    cl->name = NULL;
    if (a->len) {
        cl->name = malloc(a->len + 1);
        if (cl->name) {
            memcpy(cl->name, a->p, a->len);
            cl->name[a->len] = '\0';
        }
    }
}

void cmd_hello(struct cmd_ctx *c)
{
    size_t j = 1;
    if (c->argc >= 2) {
        long long ver;
        if (!resp_str2ll(c->argv[1].p, c->argv[1].len, &ver)) {
            resp_add_error(c->out, "ERR Protocol version is not an integer "
                                   "or out of range");
            return;
        }
        if (ver != 2) { /* RESP3 is not supported (README) */
            resp_add_error(c->out, "NOPROTO unsupported protocol version");
            return;
        }
        j = 2;
    }
    const struct resp_arg *setname = NULL;
    for (; j < c->argc; j++) {
        if (arg_is(&c->argv[j], "setname") && j + 1 < c->argc) {
            setname = &c->argv[++j];
            if (!name_ok(setname)) {
                resp_add_error(c->out, "ERR Client names cannot contain "
                                       "spaces, newlines or special "
                                       "characters.");
                return;
            }
        } else {
            resp_add_errorf(c->out, "ERR Syntax error in HELLO option '%.*s'",
                            (int)c->argv[j].len, c->argv[j].p);
            return;
        }
    }
    if (setname)
        set_name(c->cl, setname);
    resp_add_array(c->out, 14);
    resp_add_bulk_str(c->out, "server");
    resp_add_bulk_str(c->out, "redis");
    resp_add_bulk_str(c->out, "version");
    resp_add_bulk_str(c->out, COMPAT_VERSION);
    resp_add_bulk_str(c->out, "proto");
    resp_add_int(c->out, 2);
    resp_add_bulk_str(c->out, "id");
    resp_add_int(c->out, (long long)c->cl->id);
    resp_add_bulk_str(c->out, "mode");
    resp_add_bulk_str(c->out, "standalone");
    resp_add_bulk_str(c->out, "role");
    resp_add_bulk_str(c->out, "master");
    resp_add_bulk_str(c->out, "modules");
    resp_add_array(c->out, 0);
}

void cmd_client(struct cmd_ctx *c)
{
    if (arg_is(&c->argv[1], "setname")) {
        if (c->argc != 3) {
            resp_add_error(c->out, "ERR wrong number of arguments for "
                                   "'client|setname' command");
        } else if (!name_ok(&c->argv[2])) {
            resp_add_error(c->out, "ERR Client names cannot contain spaces, "
                                   "newlines or special characters.");
        } else {
            set_name(c->cl, &c->argv[2]);
            resp_add_ok(c->out);
        }
    } else if (arg_is(&c->argv[1], "getname")) {
        if (c->argc != 2)
            resp_add_error(c->out, "ERR wrong number of arguments for "
                                   "'client|getname' command");
        else if (c->cl->name)
            resp_add_bulk_str(c->out, c->cl->name);
        else
            resp_add_null(c->out);
    } else if (arg_is(&c->argv[1], "id") && c->argc == 2) {
        resp_add_int(c->out, (long long)c->cl->id);
    } else {
        unknown_sub(c, "CLIENT");
    }
}

/* ------------------------------------------------------------------ CONFIG */

/* CONFIG GET over the parameters fut-redis has (redis-benchmark asks for
 * 'save' and 'appendonly' at start). Values as Redis prints them. */
static void config_get(struct cmd_ctx *c)
{
    const struct server_config *k = &c->srv->cfg;
    char v[8][24];
    snprintf(v[0], sizeof v[0], "%d", c->srv->tcp_port);
    snprintf(v[1], sizeof v[1], "%ld", k->maxclients);
    snprintf(v[2], sizeof v[2], "%lld", k->maxmemory);
    snprintf(v[3], sizeof v[3], "%ld", k->timeout_s);
    snprintf(v[4], sizeof v[4], "%lld", k->lim.max_bulk);
    const struct {
        const char *name, *val;
    } params[] = {
        {"save", ""},
        {"appendonly", "no"},
        {"databases", "1"},
        {"port", v[0]},
        {"maxclients", v[1]},
        {"maxmemory", v[2]},
        {"maxmemory-policy", "noeviction"},
        {"timeout", v[3]},
        {"proto-max-bulk-len", v[4]},
    };
    size_t np = sizeof params / sizeof params[0], hits = 0;
    int match[sizeof params / sizeof params[0]] = {0};
    for (size_t i = 0; i < np; i++)
        for (size_t j = 2; j < c->argc && !match[i]; j++)
            hits += match[i] =
                glob_match(c->argv[j].p, c->argv[j].len, params[i].name,
                           strlen(params[i].name));
    resp_add_array(c->out, (long long)hits * 2);
    for (size_t i = 0; i < np; i++)
        if (match[i]) {
            resp_add_bulk_str(c->out, params[i].name);
            resp_add_bulk_str(c->out, params[i].val);
        }
}

void cmd_config(struct cmd_ctx *c)
{
    if (!arg_is(&c->argv[1], "get")) {
        unknown_sub(c, "CONFIG");
    } else if (c->argc < 3) {
        resp_add_error(c->out, "ERR wrong number of arguments for "
                               "'config|get' command");
    } else {
        config_get(c);
    }
}

/* -------------------------------------------------------------------- INFO */

#define LD(x) ((long long)atomic_load_explicit(&(x), memory_order_relaxed))

static void info_server(struct server *s, char *b, size_t cap, size_t *n)
{
    struct utsname u;
    uname(&u);
    int64_t up = (fut_time_now() - s->start_ns) / 1000000000;
    *n += (size_t)snprintf(
        b + *n, cap - *n,
        "# Server\r\nredis_version:%s\r\nfut_redis_version:0.1.0\r\n"
        "redis_mode:standalone\r\nos:%s %s %s\r\narch_bits:%d\r\n"
        "multiplexing_api:%s\r\nio_threads_active:0\r\nfut_workers:%d\r\n"
        "process_id:%ld\r\ntcp_port:%d\r\nuptime_in_seconds:%lld\r\n"
        "uptime_in_days:%lld\r\nhz:10\r\n",
        COMPAT_VERSION, u.sysname, u.release, u.machine,
        (int)(sizeof(void *) * 8), s->backend, s->cfg.workers, (long)getpid(),
        s->tcp_port, (long long)up, (long long)up / 86400);
}

static void info_rest(struct server *s, const char *sec, char *b, size_t cap,
                      size_t *n)
{
    size_t chans, pats;
    if (!strcmp(sec, "clients")) {
        *n += (size_t)snprintf(b + *n, cap - *n,
                               "# Clients\r\nconnected_clients:%lld\r\n"
                               "maxclients:%ld\r\n",
                               LD(s->clients), s->cfg.maxclients);
    } else if (!strcmp(sec, "memory")) {
        *n += (size_t)snprintf(b + *n, cap - *n,
                               "# Memory\r\nused_memory:%lld\r\n"
                               "maxmemory:%lld\r\n"
                               "maxmemory_policy:noeviction\r\n"
                               "fut_alloc_live:%ld\r\n",
                               LD(s->db.used), s->cfg.maxmemory,
                               fut_alloc_live());
    } else if (!strcmp(sec, "stats")) {
        pubsub_stats(s, &chans, &pats);
        *n += (size_t)snprintf(
            b + *n, cap - *n,
            "# Stats\r\ntotal_connections_received:%lld\r\n"
            "total_commands_processed:%lld\r\nrejected_connections:%lld\r\n"
            "expired_keys:%lld\r\nclient_output_buffer_limit_disconnections:"
            "%lld\r\nclient_timeout_disconnections:%lld\r\n"
            "pubsub_channels:%zu\r\npubsub_patterns:%zu\r\n",
            LD(s->total_connections), LD(s->total_commands), LD(s->rejected),
            LD(s->db.expired), LD(s->pubsub_killed), LD(s->timed_out), chans,
            pats);
    } else if (!strcmp(sec, "keyspace")) {
        db_lock_all(&s->db);
        size_t keys = db_size(&s->db), exp = db_expires(&s->db);
        db_unlock_all(&s->db);
        *n += (size_t)snprintf(b + *n, cap - *n, "# Keyspace\r\n");
        if (keys)
            *n += (size_t)snprintf(b + *n, cap - *n,
                                   "db0:keys=%zu,expires=%zu,avg_ttl=0\r\n",
                                   keys, exp);
    }
}

void cmd_info(struct cmd_ctx *c)
{
    static const char *all[] = {"server", "clients", "memory", "stats",
                                "keyspace"};
    char b[4096];
    size_t n = 0;
    int want[5] = {0};
    int any = 0;
    for (size_t i = 1; i < c->argc; i++)
        for (int k = 0; k < 5; k++)
            if (arg_is(&c->argv[i], all[k]) || arg_is(&c->argv[i], "all") ||
                arg_is(&c->argv[i], "default") ||
                arg_is(&c->argv[i], "everything"))
                want[k] = any = 1;
    if (c->argc == 1)
        for (int k = 0; k < 5; k++)
            want[k] = any = 1;
    for (int k = 0; k < 5 && any; k++) {
        if (!want[k])
            continue;
        if (n)
            n += (size_t)snprintf(b + n, sizeof b - n, "\r\n");
        if (k == 0)
            info_server(c->srv, b, sizeof b, &n);
        else
            info_rest(c->srv, all[k], b, sizeof b, &n);
    }
    resp_add_bulk(c->out, b, n < sizeof b ? n : sizeof b - 1);
}
