/* SPDX-License-Identifier: MIT */
/* cmd_list: LPUSH RPUSH LPOP RPOP LRANGE LLEN (Redis 7.0 replies). An
 * emptied list is deleted, as in Redis. */
#include <limits.h>

#include "cmd.h"

static void push(struct cmd_ctx *c, int left)
{
    struct shard *sh;
    uint64_t h;
    struct entry **pp = key_find(c, 1, &sh, &h);
    struct entry *e = pp ? *pp : NULL;
    if (e && e->type != OBJ_LIST) {
        reply_wrongtype(c);
        goto out;
    }
    if (!e &&
        !(e = db_new_list(c->db, sh, c->argv[1].p, c->argv[1].len, h))) {
        c->out->oom = 1;
        goto out;
    }
    for (size_t i = 2; i < c->argc; i++)
        if (rlist_push(c->db, e->list, left, c->argv[i].p, c->argv[i].len) !=
            0) {
            c->out->oom = 1;
            break;
        }
    resp_add_int(c->out, (long long)e->list->len);
out:
    key_unlock(sh);
}

void cmd_lpush(struct cmd_ctx *c)
{
    push(c, 1);
}

void cmd_rpush(struct cmd_ctx *c)
{
    push(c, 0);
}

/* Deletes the key of an emptied list. */
static void drop_if_empty(struct cmd_ctx *c, struct shard *sh,
                          struct entry **pp)
{
    if ((*pp)->list->len == 0)
        db_delete(c->db, sh, pp);
}

static void pop(struct cmd_ctx *c, int left)
{
    long long count = -1;
    if (c->argc > 3) {
        resp_add_error(c->out, left ? "ERR wrong number of arguments for "
                                      "'lpop' command"
                                    : "ERR wrong number of arguments for "
                                      "'rpop' command");
        return;
    }
    if (c->argc == 3 &&
        (!resp_str2ll(c->argv[2].p, c->argv[2].len, &count) || count < 0)) {
        resp_add_error(c->out, "ERR value is out of range, must be positive");
        return;
    }
    struct shard *sh;
    uint64_t h;
    struct entry **pp = key_find(c, 1, &sh, &h);
    if (!pp) {
        if (count >= 0)
            resp_add_null_array(c->out);
        else
            resp_add_null(c->out);
    } else if ((*pp)->type != OBJ_LIST) {
        reply_wrongtype(c);
    } else if (count == 0) {
        resp_add_array(c->out, 0); /* Redis 7.0.15: an empty array */
    } else {
        struct rlist *l = (*pp)->list;
        size_t n = count < 0 ? 1 : (size_t)count;
        if (n > l->len)
            n = l->len;
        if (count >= 0)
            resp_add_array(c->out, (long long)n);
        for (size_t i = 0; i < n; i++) {
            struct litem *it = rlist_pop(c->db, l, left);
            resp_add_bulk(c->out, it->data, it->len);
            db_free_item(c->db, it);
        }
        drop_if_empty(c, sh, pp);
    }
    key_unlock(sh);
}

void cmd_lpop(struct cmd_ctx *c)
{
    pop(c, 1);
}

void cmd_rpop(struct cmd_ctx *c)
{
    pop(c, 0);
}

void cmd_lrange(struct cmd_ctx *c)
{
    long long start, end;
    if (!arg_ll(c, 2, &start) || !arg_ll(c, 3, &end))
        return;
    struct shard *sh;
    uint64_t h;
    struct entry **pp = key_find(c, 1, &sh, &h);
    if (!pp) {
        resp_add_array(c->out, 0);
        goto out;
    }
    if ((*pp)->type != OBJ_LIST) {
        reply_wrongtype(c);
        goto out;
    }
    struct rlist *l = (*pp)->list;
    long long len = (long long)l->len;
    if (start < 0)
        start = len + start;
    if (end < 0)
        end = len + end;
    if (start < 0)
        start = 0;
    if (start > end || start >= len) {
        resp_add_array(c->out, 0);
        goto out;
    }
    if (end >= len)
        end = len - 1;
    resp_add_array(c->out, end - start + 1);
    for (long long i = start; i <= end; i++) {
        struct litem *it = rlist_at(l, (size_t)i);
        resp_add_bulk(c->out, it->data, it->len);
    }
out:
    key_unlock(sh);
}

void cmd_llen(struct cmd_ctx *c)
{
    struct shard *sh;
    uint64_t h;
    struct entry **pp = key_find(c, 1, &sh, &h);
    if (!pp)
        resp_add_int(c->out, 0);
    else if ((*pp)->type != OBJ_LIST)
        reply_wrongtype(c);
    else
        resp_add_int(c->out, (long long)(*pp)->list->len);
    key_unlock(sh);
}
