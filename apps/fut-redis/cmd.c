/* SPDX-License-Identifier: MIT */
/* cmd: the command table, lookup and dispatch, with the checks Redis 7.0
 * makes before a command runs, in its order (processCommand): unknown
 * command, arity, maxmemory (noeviction), the subscribed-mode subset. */
#include "cmd.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <string.h>

#include "pubsub.h"
#include "server.h"

#define W CMD_WRITE
#define M CMD_DENYOOM
#define P CMD_PUBSUB

const struct command cmd_table[] = {
    {"get", 2, 0, cmd_get, 1, 1, 1},
    {"set", -3, W | M, cmd_set, 1, 1, 1},
    {"setnx", 3, W | M, cmd_setnx, 1, 1, 1},
    {"getdel", 2, W, cmd_getdel, 1, 1, 1},
    {"mget", -2, 0, cmd_mget, 1, -1, 1},
    {"mset", -3, W | M, cmd_mset, 1, -1, 2},
    {"incr", 2, W | M, cmd_incr, 1, 1, 1},
    {"decr", 2, W | M, cmd_decr, 1, 1, 1},
    {"incrby", 3, W | M, cmd_incrby, 1, 1, 1},
    {"decrby", 3, W | M, cmd_decrby, 1, 1, 1},
    {"append", 3, W | M, cmd_append, 1, 1, 1},
    {"strlen", 2, 0, cmd_strlen, 1, 1, 1},
    {"lpush", -3, W | M, cmd_lpush, 1, 1, 1},
    {"rpush", -3, W | M, cmd_rpush, 1, 1, 1},
    {"lpop", -2, W, cmd_lpop, 1, 1, 1},
    {"rpop", -2, W, cmd_rpop, 1, 1, 1},
    {"lrange", 4, 0, cmd_lrange, 1, 1, 1},
    {"llen", 2, 0, cmd_llen, 1, 1, 1},
    {"del", -2, W, cmd_del, 1, -1, 1},
    {"exists", -2, 0, cmd_exists, 1, -1, 1},
    {"expire", -3, W, cmd_expire, 1, 1, 1},
    {"pexpire", -3, W, cmd_pexpire, 1, 1, 1},
    {"ttl", 2, 0, cmd_ttl, 1, 1, 1},
    {"pttl", 2, 0, cmd_pttl, 1, 1, 1},
    {"persist", 2, W, cmd_persist, 1, 1, 1},
    {"dbsize", 1, 0, cmd_dbsize, 0, 0, 0},
    {"flushall", -1, W, cmd_flushall, 0, 0, 0},
    {"ping", -1, P, cmd_ping, 0, 0, 0},
    {"echo", 2, 0, cmd_echo, 0, 0, 0},
    {"select", 2, 0, cmd_select, 0, 0, 0},
    {"quit", -1, P, cmd_quit, 0, 0, 0},
    {"command", -1, 0, cmd_command, 0, 0, 0},
    {"hello", -1, 0, cmd_hello, 0, 0, 0},
    {"client", -2, 0, cmd_client, 0, 0, 0},
    {"info", -1, 0, cmd_info, 0, 0, 0},
    {"config", -2, 0, cmd_config, 0, 0, 0},
    {"publish", 3, 0, cmd_publish, 0, 0, 0},
    {"subscribe", -2, P, cmd_subscribe, 0, 0, 0},
    {"unsubscribe", -1, P, cmd_unsubscribe, 0, 0, 0},
    {"psubscribe", -2, P, cmd_psubscribe, 0, 0, 0},
    {"punsubscribe", -1, P, cmd_punsubscribe, 0, 0, 0},
};
const size_t cmd_count = sizeof cmd_table / sizeof cmd_table[0];

/* Lookup: an open-addressing table over the lower-case names, built
 * once. */
#define LOOKUP_SIZE 128
static const struct command *lookup_tab[LOOKUP_SIZE];
static pthread_once_t lookup_once = PTHREAD_ONCE_INIT;

static unsigned name_hash(const char *s, size_t n)
{
    unsigned h = 5381;
    for (size_t i = 0; i < n; i++)
        h = h * 33 + (unsigned char)s[i];
    return h;
}

static void lookup_build(void)
{
    for (size_t i = 0; i < cmd_count; i++) {
        const char *nm = cmd_table[i].name;
        unsigned h = name_hash(nm, strlen(nm)) % LOOKUP_SIZE;
        while (lookup_tab[h])
            h = (h + 1) % LOOKUP_SIZE;
        lookup_tab[h] = &cmd_table[i];
    }
}

static const struct command *lookup(const struct resp_arg *a)
{
    char low[16];
    if (a->len >= sizeof low)
        return NULL;
    for (size_t i = 0; i < a->len; i++)
        low[i] = (char)tolower((unsigned char)a->p[i]);
    pthread_once(&lookup_once, lookup_build);
    for (unsigned h = name_hash(low, a->len) % LOOKUP_SIZE; lookup_tab[h];
         h = (h + 1) % LOOKUP_SIZE) {
        const char *nm = lookup_tab[h]->name;
        if (strlen(nm) == a->len && !memcmp(nm, low, a->len))
            return lookup_tab[h];
    }
    return NULL;
}

/* Redis formats arguments with %s: they end at their first NUL. */
static int cstr_len(const struct resp_arg *a, int max)
{
    const char *z = memchr(a->p, '\0', a->len);
    size_t n = z ? (size_t)(z - a->p) : a->len;
    return n > (size_t)max ? max : (int)n;
}

static void reply_unknown(struct resp_out *o, struct resp_arg *argv,
                          size_t argc)
{
    char args[512];
    size_t used = 0;
    for (size_t i = 1; i < argc && used < 128; i++) {
        int n = cstr_len(&argv[i], 128 - (int)used);
        used += (size_t)snprintf(args + used, sizeof args - used, "'%.*s' ",
                                 n, argv[i].p);
    }
    args[used] = '\0';
    resp_add_errorf(o,
                    "ERR unknown command '%.*s', with args beginning "
                    "with: %s",
                    cstr_len(&argv[0], 128), argv[0].p, args);
}

void cmd_dispatch(struct server *srv, struct client *cl,
                  struct resp_arg *argv, size_t argc)
{
    struct resp_out *o = &cl->out;
    const struct command *cmd = lookup(&argv[0]);
    atomic_fetch_add_explicit(&srv->total_commands, 1, memory_order_relaxed);
    if (!cmd) {
        reply_unknown(o, argv, argc);
        return;
    }
    if ((cmd->arity > 0 && argc != (size_t)cmd->arity) ||
        argc < (size_t)(cmd->arity < 0 ? -cmd->arity : cmd->arity)) {
        resp_add_errorf(o, "ERR wrong number of arguments for '%s' command",
                        cmd->name);
        return;
    }
    if (srv->cfg.maxmemory && (cmd->flags & CMD_DENYOOM) &&
        atomic_load_explicit(&srv->db.used, memory_order_relaxed) >
            srv->cfg.maxmemory) {
        resp_add_error(o, "OOM command not allowed when used memory > "
                          "'maxmemory'.");
        return;
    }
    if (cl->sub && !(cmd->flags & CMD_PUBSUB) && pubsub_count_of(cl) > 0) {
        resp_add_errorf(o,
                        "ERR Can't execute '%s': only (P|S)SUBSCRIBE / "
                        "(P|S)UNSUBSCRIBE / PING / QUIT / RESET are "
                        "allowed in this context",
                        cmd->name);
        return;
    }
    struct cmd_ctx c = {srv, &srv->db, cl, o, argv, argc, server_now_ms(srv)};
    cmd->fn(&c);
}

/* ----------------------------------------------------------------- helpers */

int arg_is(const struct resp_arg *a, const char *lower)
{
    size_t n = strlen(lower);
    if (a->len != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)a->p[i]) != lower[i])
            return 0;
    return 1;
}

int arg_ll(struct cmd_ctx *c, size_t i, long long *v)
{
    if (resp_str2ll(c->argv[i].p, c->argv[i].len, v))
        return 1;
    resp_add_error(c->out, "ERR value is not an integer or out of range");
    return 0;
}

void reply_wrongtype(struct cmd_ctx *c)
{
    resp_add_error(c->out, "WRONGTYPE Operation against a key holding the "
                           "wrong kind of value");
}

void reply_syntax(struct cmd_ctx *c)
{
    resp_add_error(c->out, "ERR syntax error");
}

static struct entry **find(struct cmd_ctx *c, size_t i, struct shard **sh,
                           uint64_t *h, int lock)
{
    *h = db_hash(c->argv[i].p, c->argv[i].len);
    *sh = db_shard(c->db, *h);
    if (lock)
        pthread_mutex_lock(&(*sh)->mu);
    return db_find(c->db, *sh, c->argv[i].p, c->argv[i].len, *h, c->now_ms);
}

struct entry **key_find_locked(struct cmd_ctx *c, size_t i, struct shard **sh,
                               uint64_t *h)
{
    return find(c, i, sh, h, 0);
}

struct entry **key_find(struct cmd_ctx *c, size_t i, struct shard **sh,
                        uint64_t *h)
{
    return find(c, i, sh, h, 1);
}

void key_unlock(struct shard *sh)
{
    pthread_mutex_unlock(&sh->mu);
}
