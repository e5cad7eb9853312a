/* SPDX-License-Identifier: MIT */
/* cmd_keys: DEL EXISTS EXPIRE PEXPIRE TTL PTTL PERSIST DBSIZE FLUSHALL. */
#include <limits.h>

#include "cmd.h"

void cmd_del(struct cmd_ctx *c)
{
    uint64_t set[DB_SET_WORDS];
    long long n = 0;
    db_lock_keys(c->db, c->argv, 1, c->argc - 1, 1, set);
    for (size_t i = 1; i < c->argc; i++) {
        struct shard *sh;
        uint64_t h;
        struct entry **pp = key_find_locked(c, i, &sh, &h);
        if (pp) {
            db_delete(c->db, sh, pp);
            n++;
        }
    }
    db_unlock_keys(c->db, set);
    resp_add_int(c->out, n);
}

void cmd_exists(struct cmd_ctx *c)
{
    uint64_t set[DB_SET_WORDS];
    long long n = 0;
    db_lock_keys(c->db, c->argv, 1, c->argc - 1, 1, set);
    for (size_t i = 1; i < c->argc; i++) {
        struct shard *sh;
        uint64_t h;
        n += key_find_locked(c, i, &sh, &h) != NULL;
    }
    db_unlock_keys(c->db, set);
    resp_add_int(c->out, n);
}

/* EXPIRE's NX XX GT LT (Redis' parseExtendedExpireArgumentsOrReply). */
#define EXP_NX 1
#define EXP_XX 2
#define EXP_GT 4
#define EXP_LT 8

static int expire_flags(struct cmd_ctx *c, int *flags)
{
    *flags = 0;
    for (size_t j = 3; j < c->argc; j++) {
        if (arg_is(&c->argv[j], "nx"))
            *flags |= EXP_NX;
        else if (arg_is(&c->argv[j], "xx"))
            *flags |= EXP_XX;
        else if (arg_is(&c->argv[j], "gt"))
            *flags |= EXP_GT;
        else if (arg_is(&c->argv[j], "lt"))
            *flags |= EXP_LT;
        else {
            resp_add_errorf(c->out, "ERR Unsupported option %.*s",
                            (int)c->argv[j].len, c->argv[j].p);
            return 0;
        }
    }
    if ((*flags & EXP_NX) && (*flags & (EXP_XX | EXP_GT | EXP_LT))) {
        resp_add_error(c->out, "ERR NX and XX, GT or LT options at the same "
                               "time are not compatible");
        return 0;
    }
    if ((*flags & EXP_GT) && (*flags & EXP_LT)) {
        resp_add_error(c->out, "ERR GT and LT options at the same time are "
                               "not compatible");
        return 0;
    }
    return 1;
}

/* 1 when the flags refuse the new expiry 'when' over 'cur' (0: none). */
static int expire_refused(int flags, int64_t cur, int64_t when)
{
    if ((flags & EXP_NX) && cur)
        return 1;
    if ((flags & EXP_XX) && !cur)
        return 1;
    if ((flags & EXP_GT) && (!cur || when <= cur))
        return 1;
    if ((flags & EXP_LT) && cur && when >= cur)
        return 1;
    return 0;
}

static void expire_generic(struct cmd_ctx *c, int secs, const char *name)
{
    int flags;
    long long when;
    if (!expire_flags(c, &flags) || !arg_ll(c, 2, &when))
        return;
    if (secs) {
        if (when > LLONG_MAX / 1000 || when < LLONG_MIN / 1000)
            goto bad;
        when *= 1000;
    }
    if (when > LLONG_MAX - c->now_ms)
        goto bad;
    when += c->now_ms;
    struct shard *sh;
    uint64_t h;
    struct entry **pp = key_find(c, 1, &sh, &h);
    if (!pp || expire_refused(flags, (*pp)->expire_ms, when)) {
        resp_add_int(c->out, 0);
    } else if (when <= c->now_ms) {
        db_delete(c->db, sh, pp); /* already expired: gone at once */
        resp_add_int(c->out, 1);
    } else {
        db_set_expire(sh, *pp, when);
        resp_add_int(c->out, 1);
    }
    key_unlock(sh);
    return;
bad:
    resp_add_errorf(c->out, "ERR invalid expire time in '%s' command", name);
}

void cmd_expire(struct cmd_ctx *c)
{
    expire_generic(c, 1, "expire");
}

void cmd_pexpire(struct cmd_ctx *c)
{
    expire_generic(c, 0, "pexpire");
}

static void ttl_generic(struct cmd_ctx *c, int ms)
{
    struct shard *sh;
    uint64_t h;
    struct entry **pp = key_find(c, 1, &sh, &h);
    if (!pp) {
        resp_add_int(c->out, -2);
    } else if (!(*pp)->expire_ms) {
        resp_add_int(c->out, -1);
    } else {
        long long ttl = (*pp)->expire_ms - c->now_ms;
        if (ttl < 0)
            ttl = 0;
        resp_add_int(c->out, ms ? ttl : (ttl + 500) / 1000);
    }
    key_unlock(sh);
}

void cmd_ttl(struct cmd_ctx *c)
{
    ttl_generic(c, 0);
}

void cmd_pttl(struct cmd_ctx *c)
{
    ttl_generic(c, 1);
}

void cmd_persist(struct cmd_ctx *c)
{
    struct shard *sh;
    uint64_t h;
    struct entry **pp = key_find(c, 1, &sh, &h);
    if (pp && (*pp)->expire_ms) {
        db_set_expire(sh, *pp, 0);
        resp_add_int(c->out, 1);
    } else {
        resp_add_int(c->out, 0);
    }
    key_unlock(sh);
}

void cmd_dbsize(struct cmd_ctx *c)
{
    db_lock_all(c->db);
    size_t n = db_size(c->db);
    db_unlock_all(c->db);
    resp_add_int(c->out, (long long)n);
}

void cmd_flushall(struct cmd_ctx *c)
{
    if (c->argc > 2 || (c->argc == 2 && !arg_is(&c->argv[1], "sync") &&
                        !arg_is(&c->argv[1], "async"))) {
        reply_syntax(c);
        return;
    }
    db_lock_all(c->db);
    db_flush(c->db);
    db_unlock_all(c->db);
    resp_add_ok(c->out);
}
