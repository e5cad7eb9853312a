/* SPDX-License-Identifier: MIT */
/* The fiber wrappers (include/fut/fiber.h): each one is a future on the
 * fiber's stack, fut_await, and that future's result. fut_await reports
 * misuse (outside a fiber) with the caller's file:line, passed through;
 * on a cancel it has dropped the future and returns FUT_ECANCELED.
 * fut_fiber_yield has no future: it is in fiber.c. */
#include "fiber/fiber_internal.h"

ssize_t fut_read_at(struct fut_io *io, void *buf, size_t len,
                    const char *file, int line)
{
    FUT_ARG_CHECK(io, "'io' is NULL");
    FUT_ARG_CHECK(buf || !len, "'buf' is NULL");
    struct fut_io_read rd;
    fut_io_read_init(&rd, io, buf, len);
    int r = fut_await_at(&rd.base, file, line);
    return r != 0 ? r : rd.result;
}

ssize_t fut_write_all_at(struct fut_io *io, const void *buf, size_t len,
                         const char *file, int line)
{
    FUT_ARG_CHECK(io, "'io' is NULL");
    FUT_ARG_CHECK(buf || !len, "'buf' is NULL");
    struct fut_io_write_all wr;
    fut_io_write_all_init(&wr, io, buf, len);
    int r = fut_await_at(&wr.base, file, line);
    return r != 0 ? r : wr.result;
}

int fut_accept_at(struct fut_io *listener, struct fut_io **conn,
                  const char *file, int line)
{
    FUT_ARG_CHECK(listener, "'listener' is NULL");
    FUT_ARG_CHECK(conn, "'conn' is NULL");
    struct fut_accept a;
    fut_accept_init(&a, listener);
    int r = fut_await_at(&a.base, file, line);
    if (r == 0 && a.result == 0)
        *conn = a.conn;
    return r != 0 ? r : a.result;
}

int fut_fd_wait_at(struct fut_fd *h, unsigned interest, uint32_t *tick,
                   const char *file, int line)
{
    FUT_ARG_CHECK(h, "'h' is NULL");
    FUT_ARG_CHECK(tick, "'tick' is NULL");
    struct fut_fd_ready f;
    fut_fd_ready_init(&f, h, interest);
    int r = fut_await_at(&f.base, file, line);
    /* Outside a fiber (release builds) fut_await leaves 'f' as it was:
     * its reference on the handle goes here. Idempotent otherwise. */
    fut_drop(&f.base);
    if (r == 0 && f.result > 0)
        *tick = f.tick;
    return r != 0 ? r : f.result;
}

int fut_connect_at(const struct sockaddr *addr, socklen_t len,
                   int64_t deadline, struct fut_io **conn, const char *file,
                   int line)
{
    FUT_ARG_CHECK(addr, "'addr' is NULL");
    FUT_ARG_CHECK(conn, "'conn' is NULL");
    struct fut_connect c;
    fut_tcp_connect_init(&c, addr, len, deadline);
    int r = fut_await_at(&c.base, file, line);
    if (r == 0 && c.result == 0)
        *conn = c.conn;
    return r != 0 ? r : c.result;
}

int fut_sleep_at(int64_t ns, const char *file, int line)
{
    struct fut_sleep s;
    fut_sleep_init(&s, ns);
    int r = fut_await_at(&s.base, file, line);
    return r != 0 ? r : s.result;
}

int fut_recv_at(struct fut_mpsc_rx *rx, void *out, const char *file, int line)
{
    FUT_ARG_CHECK(rx, "'rx' is NULL");
    FUT_ARG_CHECK(out, "'out' is NULL");
    struct fut_mpsc_recv rv;
    fut_mpsc_recv_init(&rv, rx, out);
    int r = fut_await_at(&rv.base, file, line);
    return r != 0 ? r : rv.result;
}

int fut_send_at(struct fut_mpsc_tx *tx, const void *msg, const char *file,
                int line)
{
    FUT_ARG_CHECK(tx, "'tx' is NULL");
    FUT_ARG_CHECK(msg, "'msg' is NULL");
    struct fut_mpsc_send sd;
    fut_mpsc_send_init(&sd, tx, msg);
    int r = fut_await_at(&sd.base, file, line);
    return r != 0 ? r : sd.result;
}

int fut_timeout_await_at(struct fut_future *f, int64_t ns, const char *file,
                         int line)
{
    FUT_ARG_CHECK(f, "'f' is NULL");
    struct fut_timeout t;
    fut_timeout_init(&t, f, ns < 0 ? -1 : fut_time_now() + ns);
    int r = fut_await_at(&t.base, file, line);
    return r != 0 ? r : t.result;
}

int fut_await_token_at(struct fut_future *f, struct fut_token *token,
                       const char *file, int line)
{
    FUT_ARG_CHECK(f, "'f' is NULL");
    FUT_ARG_CHECK(token, "'token' is NULL");
    struct fut_until_cancelled u;
    fut_until_cancelled_init(&u, f, token);
    int r = fut_await_at(&u.base, file, line);
    return r != 0 ? r : u.result;
}

int fut_fiber_join_at(struct fut_join *j, intptr_t *value, const char *file,
                      int line)
{
    FUT_ARG_CHECK(j, "'j' is NULL");
    intptr_t v = 0;
    FUT_JOIN_OUTPUT(j, struct fut_fiber, value, &v);
    int r = fut_await_at(&j->base, file, line);
    if (r == 0)
        r = j->result;
    if (r == 0 && value)
        *value = v;
    return r;
}
