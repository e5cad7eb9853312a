/* SPDX-License-Identifier: MIT */
/* cmd: the command table and dispatch. Every command runs to its end
 * inside one poll of its connection's task (it never awaits): it reads
 * its arguments (slices of the read buffer, resp.h), locks the keyspace
 * shards of its keys (db.h), appends its reply to the client's output
 * and returns. The cmd_*.c files hold the commands by family. */
#ifndef FUT_REDIS_CMD_H
#define FUT_REDIS_CMD_H

#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "db.h"
#include "resp.h"

struct cmd_ctx {
    struct server *srv;
    struct db *db;
    struct client *cl;
    struct resp_out *out;
    struct resp_arg *argv;
    size_t argc;
    int64_t now_ms; /* the runtime's clock, once per command */
};

#define CMD_WRITE 1u   /* changes the keyspace */
#define CMD_DENYOOM 2u /* refused over --maxmemory (noeviction) */
#define CMD_PUBSUB 4u  /* allowed in subscribed mode (RESP2) */

struct command {
    const char *name; /* lower case */
    int arity;        /* Redis': n exact, -n at least n */
    unsigned flags;
    void (*fn)(struct cmd_ctx *c);
    int first_key, last_key, step; /* COMMAND's key positions */
};

/* Runs argv[0 .. argc) for 'cl': lookup, arity, subscribed-mode and
 * maxmemory checks, then the command. Replies go to cl->out. */
void cmd_dispatch(struct server *srv, struct client *cl,
                  struct resp_arg *argv, size_t argc);

/* The table (cmd.c) and its size, for COMMAND. */
extern const struct command cmd_table[];
extern const size_t cmd_count;

/* Helpers shared by the cmd_*.c files. */
int arg_is(const struct resp_arg *a, const char *lower);
int arg_ll(struct cmd_ctx *c, size_t i, long long *v); /* replies on error */
void reply_wrongtype(struct cmd_ctx *c);
void reply_syntax(struct cmd_ctx *c);
/* Locks the shard of argv[i], finds the key; *sh and *h are set. */
struct entry **key_find(struct cmd_ctx *c, size_t i, struct shard **sh,
                        uint64_t *h);
/* The same with the shard already locked (db_lock_keys: commands over
 * several keys lock all their shards first, so that other workers see
 * the command happen at one instant, as Redis' single thread does). */
struct entry **key_find_locked(struct cmd_ctx *c, size_t i, struct shard **sh,
                               uint64_t *h);
void key_unlock(struct shard *sh);

/* The commands (cmd_string.c, cmd_list.c, cmd_keys.c, cmd_server.c,
 * pubsub.c). */
#define CMD_FN(n) void n(struct cmd_ctx *c)
CMD_FN(cmd_get);
CMD_FN(cmd_set);
CMD_FN(cmd_setnx);
CMD_FN(cmd_getdel);
CMD_FN(cmd_mget);
CMD_FN(cmd_mset);
CMD_FN(cmd_incr);
CMD_FN(cmd_decr);
CMD_FN(cmd_incrby);
CMD_FN(cmd_decrby);
CMD_FN(cmd_append);
CMD_FN(cmd_strlen);
CMD_FN(cmd_lpush);
CMD_FN(cmd_rpush);
CMD_FN(cmd_lpop);
CMD_FN(cmd_rpop);
CMD_FN(cmd_lrange);
CMD_FN(cmd_llen);
CMD_FN(cmd_del);
CMD_FN(cmd_exists);
CMD_FN(cmd_expire);
CMD_FN(cmd_pexpire);
CMD_FN(cmd_ttl);
CMD_FN(cmd_pttl);
CMD_FN(cmd_persist);
CMD_FN(cmd_dbsize);
CMD_FN(cmd_flushall);
CMD_FN(cmd_ping);
CMD_FN(cmd_echo);
CMD_FN(cmd_select);
CMD_FN(cmd_quit);
CMD_FN(cmd_command);
CMD_FN(cmd_hello);
CMD_FN(cmd_client);
CMD_FN(cmd_info);
CMD_FN(cmd_config);
CMD_FN(cmd_publish);
CMD_FN(cmd_subscribe);
CMD_FN(cmd_unsubscribe);
CMD_FN(cmd_psubscribe);
CMD_FN(cmd_punsubscribe);

#endif
