/* SPDX-License-Identifier: MIT */
/* The fiber wrappers of the TLS futures (include/fut/tls.h): each one is
 * a future on the fiber's stack, fut_await_at, and that future's result
 * (FUT_ECANCELED when the fiber was cancelled: the future was dropped). */
#include "fut/fiber.h"
#include "internal.h"
#include "tls/tls_internal.h"

int fut_tls_handshake_at(struct fut_tls *t, const char *file, int line)
{
    FUT_ARG_CHECK(t, "'t' is NULL");
    struct fut_tls_handshake h;
    fut_tls_handshake_init(&h, t);
    int r = fut_await_at(&h.base, file, line);
    return r != 0 ? r : h.result;
}

ssize_t fut_tls_read_at(struct fut_tls *t, void *buf, size_t len,
                        const char *file, int line)
{
    FUT_ARG_CHECK(t, "'t' is NULL");
    FUT_ARG_CHECK(buf || !len, "'buf' is NULL");
    struct fut_tls_read rd;
    fut_tls_read_init(&rd, t, buf, len);
    int r = fut_await_at(&rd.base, file, line);
    return r != 0 ? r : rd.result;
}

ssize_t fut_tls_write_all_at(struct fut_tls *t, const void *buf, size_t len,
                             const char *file, int line)
{
    FUT_ARG_CHECK(t, "'t' is NULL");
    FUT_ARG_CHECK(buf || !len, "'buf' is NULL");
    size_t done = 0;
    while (done < len) {
        struct fut_tls_write wr;
        fut_tls_write_init(&wr, t, (const char *)buf + done, len - done);
        int r = fut_await_at(&wr.base, file, line);
        if (r != 0)
            return r;
        if (wr.result < 0)
            return wr.result;
        done += (size_t)wr.result;
    }
    struct fut_tls_flush fl;
    fut_tls_flush_init(&fl, t);
    int r = fut_await_at(&fl.base, file, line);
    if (r != 0)
        return r;
    return fl.result < 0 ? fl.result : (ssize_t)len;
}

int fut_tls_shutdown_at(struct fut_tls *t, const char *file, int line)
{
    FUT_ARG_CHECK(t, "'t' is NULL");
    struct fut_tls_shutdown s;
    fut_tls_shutdown_init(&s, t);
    int r = fut_await_at(&s.base, file, line);
    return r != 0 ? r : s.result;
}
