/* SPDX-License-Identifier: MIT */
/* cmd_string: GET SET SETNX GETDEL MGET MSET INCR DECR INCRBY DECRBY
 * APPEND STRLEN, with Redis 7.0's replies and errors. */
#include <limits.h>
#include <string.h>

#include "cmd.h"
#include "server.h"

static void reply_string(struct cmd_ctx *c, struct entry *e)
{
    resp_add_bulk(c->out, entry_val(e), e->vlen);
}

void cmd_get(struct cmd_ctx *c)
{
    struct shard *sh;
    uint64_t h;
    struct entry **pp = key_find(c, 1, &sh, &h);
    if (!pp)
        resp_add_null(c->out);
    else if ((*pp)->type != OBJ_STRING)
        reply_wrongtype(c);
    else
        reply_string(c, *pp);
    key_unlock(sh);
}

/* SET's options (Redis' parseExtendedStringArgumentsOrReply). */
#define SET_NX 1
#define SET_XX 2
#define SET_GET 4
#define SET_KEEPTTL 8
#define SET_EX 16
#define SET_PX 32
#define SET_EXAT 64
#define SET_PXAT 128
#define SET_EXPIRE (SET_EX | SET_PX | SET_EXAT | SET_PXAT)

static int set_options(struct cmd_ctx *c, int *flags, size_t *exp_arg)
{
    static const struct {
        const char *name;
        int flag, excl;
    } opts[] = {
        {"nx", SET_NX, SET_XX},
        {"xx", SET_XX, SET_NX},
        {"get", SET_GET, 0},
        {"keepttl", SET_KEEPTTL, SET_EXPIRE},
        {"ex", SET_EX, SET_KEEPTTL | SET_EXPIRE},
        {"px", SET_PX, SET_KEEPTTL | SET_EXPIRE},
        {"exat", SET_EXAT, SET_KEEPTTL | SET_EXPIRE},
        {"pxat", SET_PXAT, SET_KEEPTTL | SET_EXPIRE},
    };
    *flags = 0;
    for (size_t j = 3; j < c->argc; j++) {
        size_t k;
        for (k = 0; k < sizeof opts / sizeof opts[0]; k++)
            if (arg_is(&c->argv[j], opts[k].name))
                break;
        if (k == sizeof opts / sizeof opts[0] || (*flags & opts[k].excl)) {
            reply_syntax(c);
            return 0;
        }
        if (opts[k].flag & SET_EXPIRE) {
            if (j + 1 >= c->argc) {
                reply_syntax(c);
                return 0;
            }
            *exp_arg = ++j;
        }
        *flags |= opts[k].flag;
    }
    return 1;
}

/* The expiry of SET (Redis' getExpireMillisecondsOrReply): absolute ms,
 * or 0 with the error replied. */
static int64_t set_expire(struct cmd_ctx *c, int flags, size_t i)
{
    long long v;
    if (!arg_ll(c, i, &v))
        return 0;
    int secs = flags & (SET_EX | SET_EXAT);
    if (v <= 0 || (secs && v > LLONG_MAX / 1000)) {
        resp_add_error(c->out, "ERR invalid expire time in 'set' command");
        return 0;
    }
    if (secs)
        v *= 1000;
    if (flags & (SET_EX | SET_PX)) {
        if (v > LLONG_MAX - c->now_ms) {
            resp_add_error(c->out, "ERR invalid expire time in 'set' "
                                   "command");
            return 0;
        }
        v += c->now_ms;
    }
    return v;
}

void cmd_set(struct cmd_ctx *c)
{
    int flags;
    size_t exp_arg = 0;
    int64_t expire = 0;
    if (!set_options(c, &flags, &exp_arg))
        return;
    if ((flags & SET_EXPIRE) && (expire = set_expire(c, flags, exp_arg)) == 0)
        return;
    struct shard *sh;
    uint64_t h;
    struct entry **pp = key_find(c, 1, &sh, &h);
    if (flags & SET_GET) {
        if (pp && (*pp)->type != OBJ_STRING) {
            reply_wrongtype(c);
            goto out;
        }
        if (pp)
            reply_string(c, *pp);
        else
            resp_add_null(c->out);
    }
    if (((flags & SET_NX) && pp) || ((flags & SET_XX) && !pp)) {
        if (!(flags & SET_GET))
            resp_add_null(c->out);
        goto out;
    }
    if (expire && expire <= c->now_ms) { /* EXAT/PXAT in the past */
        if (pp)
            db_delete(c->db, sh, pp);
    } else if (!db_set_string(c->db, sh, c->argv[1].p, c->argv[1].len, h,
                              c->argv[2].p, c->argv[2].len, expire,
                              flags & SET_KEEPTTL, c->now_ms)) {
        c->out->oom = 1;
        goto out;
    }
    if (!(flags & SET_GET))
        resp_add_ok(c->out);
out:
    key_unlock(sh);
}

void cmd_setnx(struct cmd_ctx *c)
{
    struct shard *sh;
    uint64_t h;
    struct entry **pp = key_find(c, 1, &sh, &h);
    if (pp) {
        resp_add_int(c->out, 0);
    } else if (db_set_string(c->db, sh, c->argv[1].p, c->argv[1].len, h,
                             c->argv[2].p, c->argv[2].len, 0, 0, c->now_ms)) {
        resp_add_int(c->out, 1);
    } else {
        c->out->oom = 1;
    }
    key_unlock(sh);
}

void cmd_getdel(struct cmd_ctx *c)
{
    struct shard *sh;
    uint64_t h;
    struct entry **pp = key_find(c, 1, &sh, &h);
    if (!pp) {
        resp_add_null(c->out);
    } else if ((*pp)->type != OBJ_STRING) {
        reply_wrongtype(c);
    } else {
        reply_string(c, *pp);
        db_delete(c->db, sh, pp);
    }
    key_unlock(sh);
}

void cmd_mget(struct cmd_ctx *c)
{
    uint64_t set[DB_SET_WORDS];
    db_lock_keys(c->db, c->argv, 1, c->argc - 1, 1, set);
    resp_add_array(c->out, (long long)c->argc - 1);
    for (size_t i = 1; i < c->argc; i++) {
        struct shard *sh;
        uint64_t h;
        struct entry **pp = key_find_locked(c, i, &sh, &h);
        if (pp && (*pp)->type == OBJ_STRING)
            reply_string(c, *pp);
        else
            resp_add_null(c->out);
    }
    db_unlock_keys(c->db, set);
}

void cmd_mset(struct cmd_ctx *c)
{
    if (c->argc % 2 == 0) {
        resp_add_error(c->out, "ERR wrong number of arguments for 'mset' "
                               "command");
        return;
    }
    uint64_t set[DB_SET_WORDS];
    /* atomic over every key: all their shards are held at once */
    db_lock_keys(c->db, c->argv, 1, c->argc - 2, 2, set);
    for (size_t i = 1; i + 1 < c->argc; i += 2) {
        uint64_t h = db_hash(c->argv[i].p, c->argv[i].len);
        if (!db_set_string(c->db, db_shard(c->db, h), c->argv[i].p,
                           c->argv[i].len, h, c->argv[i + 1].p,
                           c->argv[i + 1].len, 0, 0, c->now_ms))
            c->out->oom = 1;
    }
    db_unlock_keys(c->db, set);
    resp_add_ok(c->out);
}

/* INCR & co (Redis' incrDecrCommand). */
static void incr_by(struct cmd_ctx *c, long long by)
{
    struct shard *sh;
    uint64_t h;
    struct entry **pp = key_find(c, 1, &sh, &h);
    long long v = 0;
    if (pp && (*pp)->type != OBJ_STRING) {
        reply_wrongtype(c);
        goto out;
    }
    if (pp && !resp_str2ll(entry_val(*pp), (*pp)->vlen, &v)) {
        resp_add_error(c->out, "ERR value is not an integer or out of range");
        goto out;
    }
    if ((by < 0 && v < 0 && by < LLONG_MIN - v) ||
        (by > 0 && v > 0 && by > LLONG_MAX - v)) {
        resp_add_error(c->out, "ERR increment or decrement would overflow");
        goto out;
    }
    v += by;
    char num[24];
    int n = resp_ll2str(num, v);
    if (!db_set_string(c->db, sh, c->argv[1].p, c->argv[1].len, h, num,
                       (size_t)n, 0, 1, c->now_ms)) {
        c->out->oom = 1;
        goto out;
    }
    resp_add_int(c->out, v);
out:
    key_unlock(sh);
}

void cmd_incr(struct cmd_ctx *c)
{
    incr_by(c, 1);
}

void cmd_decr(struct cmd_ctx *c)
{
    incr_by(c, -1);
}

void cmd_incrby(struct cmd_ctx *c)
{
    long long by;
    if (arg_ll(c, 2, &by))
        incr_by(c, by);
}

void cmd_decrby(struct cmd_ctx *c)
{
    long long by;
    if (!arg_ll(c, 2, &by))
        return;
    if (by == LLONG_MIN) {
        resp_add_error(c->out, "ERR decrement would overflow");
        return;
    }
    incr_by(c, -by);
}

void cmd_append(struct cmd_ctx *c)
{
    struct shard *sh;
    uint64_t h;
    struct entry **pp = key_find(c, 1, &sh, &h);
    if (!pp) {
        struct entry *e =
            db_set_string(c->db, sh, c->argv[1].p, c->argv[1].len, h,
                          c->argv[2].p, c->argv[2].len, 0, 0, c->now_ms);
        if (e)
            resp_add_int(c->out, (long long)e->vlen);
        else
            c->out->oom = 1;
    } else if ((*pp)->type != OBJ_STRING) {
        reply_wrongtype(c);
    } else if ((long long)(*pp)->vlen + (long long)c->argv[2].len >
               c->srv->cfg.lim.max_bulk) {
        resp_add_error(c->out, "ERR string exceeds maximum allowed size "
                               "(proto-max-bulk-len)");
    } else if (db_append(c->db, sh, pp, c->argv[2].p, c->argv[2].len) == 0) {
        resp_add_int(c->out, (long long)(*pp)->vlen);
    } else {
        c->out->oom = 1;
    }
    key_unlock(sh);
}

void cmd_strlen(struct cmd_ctx *c)
{
    struct shard *sh;
    uint64_t h;
    struct entry **pp = key_find(c, 1, &sh, &h);
    if (!pp)
        resp_add_int(c->out, 0);
    else if ((*pp)->type != OBJ_STRING)
        reply_wrongtype(c);
    else
        resp_add_int(c->out, (long long)(*pp)->vlen);
    key_unlock(sh);
}
