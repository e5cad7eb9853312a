/* SPDX-License-Identifier: MIT */
/* libfut-hiredis's fiber wrappers (include/fut/hiredis.h, "fibers"): a
 * command future or a stream's next item, awaited with fut_await. */
#include <stdarg.h>

#include "fut.h"
#include "hiredis_internal.h"

int fut_redis_call_at(const char *file, int line, struct fut_redis *r,
                      redisReply **reply, const char *fmt, ...)
{
    if (!r || !reply || !fmt)
        return FUT_EINVAL;
    *reply = NULL;
    struct fut_redis_cmd c;
    va_list ap;
    va_start(ap, fmt);
    fut__redis_cmd_vinit(&c, r, fmt, ap);
    va_end(ap);
    int rc = fut_await_at(&c.base, file, line);
    /* Outside a fiber (release builds) fut_await leaves 'c' as it was:
     * its reference on the context goes here. Idempotent otherwise. */
    fut_drop(&c.base);
    if (rc != 0)
        return rc;
    *reply = c.reply;
    return c.result;
}

/* One poll_next of a stream, as a future. */
struct next_fut {
    struct fut_future base;
    struct fut_redis_sub *s;
    struct fut_redis_msg *msg;
    int result; /* 0: an item in *msg; 1: the end */
};

static int next_poll(struct fut_future *f, struct fut_context *cx)
{
    struct next_fut *n = (struct next_fut *)f;
    int k = fut_stream_poll_next(&n->s->base, cx, n->msg);
    if (k == FUT_PENDING)
        return FUT_PENDING;
    n->result = k == FUT_STREAM_ITEM ? 0 : 1;
    return FUT_READY;
}

static const struct fut_future_vtable next_vt = {next_poll, 0,
                                                 "fut_redis_sub_next", 0};

int fut_redis_sub_next_at(struct fut_redis_sub *s, struct fut_redis_msg *msg,
                          const char *file, int line)
{
    if (!s || !msg)
        return FUT_EINVAL;
    struct next_fut n;
    fut_future_init(&n.base, &next_vt);
    n.s = s;
    n.msg = msg;
    n.result = 0;
    int rc = fut_await_at(&n.base, file, line);
    return rc != 0 ? rc : n.result;
}
