/* SPDX-License-Identifier: MIT */
/* The futures of a TLS stream (include/fut/tls.h): handshake, read,
 * write, flush, shutdown. Each poll runs the record pump of
 * src/tls/stream.c; plaintext meets OpenSSL only in the poll that returns
 * READY (the cancel-safety of each future rests on that). */
#include <string.h>

#include <openssl/err.h>

#include "internal.h"
#include "tls/tls_internal.h"

/* Sends what is queued as far as the socket takes it now; a send left
 * PENDING stays in the stream for the next future. A failure is kept in
 * t->err for the next future. */
static void push(struct fut_tls *t, struct fut_context *cx)
{
    int r;
    if (t->wr_busy || BIO_pending(t->wbio) > 0)
        (void)fut__tls_flush(t, cx, &r);
}

/* The opening of a read or write: len == 0 is READY with 0 at once;
 * then the handshake, if it has not completed. FUT_READY with '*done' =
 * 1 when the future is READY with '*result' stored, 0 when it goes on. */
static int opening(struct fut_tls *t, struct fut_context *cx, size_t len,
                   ssize_t *result, int *done)
{
    int r;
    *done = 1;
    if (len == 0) {
        *result = 0;
        return FUT_READY;
    }
    if (fut__tls_handshake(t, cx, &r) == FUT_PENDING)
        return FUT_PENDING;
    if (r < 0) {
        *result = r;
        return FUT_READY;
    }
    *done = 0;
    return FUT_READY;
}

/* ------------------------------------------------------------ handshake */

static int handshake_poll(struct fut_future *fb, struct fut_context *cx)
{
    struct fut_tls_handshake *f = (struct fut_tls_handshake *)fb;
    int r;
    if (fut__tls_handshake(f->t, cx, &r) == FUT_PENDING)
        return FUT_PENDING;
    f->result = r;
    return FUT_READY;
}

/* A read or handshake future's drop: the inner read may go (cancel-safe);
 * the inner write stays, for the next future. */
static void reader_drop(struct fut_future *fb)
{
    struct fut_tls_handshake *f = (struct fut_tls_handshake *)fb;
    fut__tls_release_read(f->t);
}

static const struct fut_future_vtable handshake_vt = {
    handshake_poll, reader_drop, "tls_handshake", NULL};

void fut_tls_handshake_init(struct fut_tls_handshake *f, struct fut_tls *t)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(t, "'t' is NULL");
    fut_future_init(&f->base, &handshake_vt);
    f->t = t;
    f->result = 0;
}

/* ----------------------------------------------------------------- read */

static int read_poll(struct fut_future *fb, struct fut_context *cx)
{
    struct fut_tls_read *f = (struct fut_tls_read *)fb;
    struct fut_tls *t = f->t;
    int r;
    if (opening(t, cx, f->len, &f->result, &r) == FUT_PENDING)
        return FUT_PENDING;
    if (r)
        return FUT_READY;
    for (;;) {
        /* Queued records move on, but a read does not wait for them:
         * two peers that both write before they read must not stall. */
        push(t, cx);
        if (t->err) {
            f->result = t->err;
            return FUT_READY;
        }
        size_t got = 0;
        ERR_clear_error();
        int rc = SSL_read_ex(t->ssl, f->buf, f->len, &got);
        if (rc == 1) {
            f->result = (ssize_t)got;
            push(t, cx); /* a KeyUpdate answer, say */
            return FUT_READY;
        }
        int e = SSL_get_error(t->ssl, rc);
        if (e == SSL_ERROR_ZERO_RETURN) {
            ERR_clear_error();
            f->result = 0;
            return FUT_READY;
        }
        if (e != SSL_ERROR_WANT_READ) {
            f->result = fut__tls_fail(t, cx, rc);
            return FUT_READY;
        }
        if (fut__tls_fill(t, cx, &r) == FUT_PENDING)
            return FUT_PENDING;
        if (r < 0) {
            f->result = r;
            return FUT_READY;
        }
    }
}

static void read_drop(struct fut_future *fb)
{
    fut__tls_release_read(((struct fut_tls_read *)fb)->t);
}

static const struct fut_future_vtable read_vt = {read_poll, read_drop,
                                                 "tls_read", NULL};

void fut_tls_read_init(struct fut_tls_read *f, struct fut_tls *t, void *buf,
                       size_t len)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(t, "'t' is NULL");
    FUT_ARG_VOID(buf || !len, "'buf' is NULL");
    fut_future_init(&f->base, &read_vt);
    f->t = t;
    f->buf = buf;
    f->len = len;
    f->result = 0;
}

/* ---------------------------------------------------------------- write */

static int write_poll(struct fut_future *fb, struct fut_context *cx)
{
    struct fut_tls_write *f = (struct fut_tls_write *)fb;
    struct fut_tls *t = f->t;
    int r;
    if (opening(t, cx, f->len, &f->result, &r) == FUT_PENDING)
        return FUT_PENDING;
    if (r)
        return FUT_READY;
    /* Backpressure and order: the records of earlier writes are all on
     * the socket before this one takes a byte. */
    if (fut__tls_flush(t, cx, &r) == FUT_PENDING)
        return FUT_PENDING;
    if (r < 0) {
        f->result = r;
        return FUT_READY;
    }
    if (t->shut_queued) {
        f->result = -EPIPE;
        return FUT_READY;
    }
    size_t n = f->len < FUT_TLS_WRITE_MAX ? f->len : FUT_TLS_WRITE_MAX;
    size_t took = 0;
    ERR_clear_error();
    int rc = SSL_write_ex(t->ssl, f->buf, n, &took);
    if (rc != 1) {
        /* A memory BIO takes everything, and renegotiation is off: any
         * failure here is final. */
        f->result = fut__tls_fail(t, cx, rc);
        return FUT_READY;
    }
    f->result = (ssize_t)took;
    push(t, cx);
    return FUT_READY;
}

static const struct fut_future_vtable write_vt = {write_poll, NULL,
                                                  "tls_write", NULL};

void fut_tls_write_init(struct fut_tls_write *f, struct fut_tls *t,
                        const void *buf, size_t len)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(t, "'t' is NULL");
    FUT_ARG_VOID(buf || !len, "'buf' is NULL");
    fut_future_init(&f->base, &write_vt);
    f->t = t;
    f->buf = buf;
    f->len = len;
    f->result = 0;
}

/* ---------------------------------------------------------------- flush */

static int flush_poll(struct fut_future *fb, struct fut_context *cx)
{
    struct fut_tls_flush *f = (struct fut_tls_flush *)fb;
    int r;
    /* After a TLS failure too: the alert OpenSSL queued goes out. */
    if (fut__tls_flush(f->t, cx, &r) == FUT_PENDING)
        return FUT_PENDING;
    f->result = f->t->err ? f->t->err : r;
    return FUT_READY;
}

static const struct fut_future_vtable flush_vt = {flush_poll, NULL,
                                                  "tls_flush", NULL};

void fut_tls_flush_init(struct fut_tls_flush *f, struct fut_tls *t)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(t, "'t' is NULL");
    fut_future_init(&f->base, &flush_vt);
    f->t = t;
    f->result = 0;
}

/* ------------------------------------------------------------- shutdown */

static int shutdown_poll(struct fut_future *fb, struct fut_context *cx)
{
    struct fut_tls_shutdown *f = (struct fut_tls_shutdown *)fb;
    struct fut_tls *t = f->t;
    int r;
    if (t->err) { /* the alert OpenSSL queued goes out; no close_notify */
        if (fut__tls_flush(t, cx, &r) == FUT_PENDING)
            return FUT_PENDING;
        f->result = t->err;
        return FUT_READY;
    }
    if (!t->hs_done) {
        f->result = 0;
        return FUT_READY;
    }
    if (!t->shut_queued) {
        ERR_clear_error();
        int rc = SSL_shutdown(t->ssl); /* 0: sent, 1: both ways */
        if (rc < 0) {
            f->result = fut__tls_fail(t, cx, rc);
            return FUT_READY;
        }
        t->shut_queued = 1;
    }
    if (fut__tls_flush(t, cx, &r) == FUT_PENDING)
        return FUT_PENDING;
    f->result = r;
    return FUT_READY;
}

static const struct fut_future_vtable shutdown_vt = {shutdown_poll, NULL,
                                                     "tls_shutdown", NULL};

void fut_tls_shutdown_init(struct fut_tls_shutdown *f, struct fut_tls *t)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(t, "'t' is NULL");
    fut_future_init(&f->base, &shutdown_vt);
    f->t = t;
    f->result = 0;
}
