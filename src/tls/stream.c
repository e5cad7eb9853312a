/* SPDX-License-Identifier: MIT */
/* TLS streams (include/fut/tls.h): the object over a fut_io, its record
 * pump (flush, fill, handshake: the steps every future of
 * src/tls/futures.c runs), the failure mapping, the queries after the
 * handshake and session resumption. The stream's rules are the opening
 * comment of src/tls/tls_internal.h. */
#include <arpa/inet.h>
#include <pthread.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "internal.h"
#include "tls/tls_internal.h"

int fut_tls_new(struct fut_tls_ctx *c, struct fut_io *io, const char *name,
                struct fut_tls **out)
{
    FUT_ARG_CHECK(out, "'out' is NULL");
    *out = NULL;
    FUT_ARG_CHECK(c, "'c' is NULL");
    FUT_ARG_CHECK(io, "'io' is NULL");
    struct fut_tls *t = fut_mem_alloc(sizeof *t);
    if (!t)
        return FUT_ENOMEM;
    memset(t, 0, offsetof(struct fut_tls, obuf));
    t->ctx = c;
    t->io = io;
    ERR_clear_error();
    t->ssl = SSL_new(c->ssl);
    if (t->ssl)
        SSL_set_app_data(t->ssl, t); /* for context.c's client_hello */
    t->rbio = BIO_new(BIO_s_mem());
    t->wbio = BIO_new(BIO_s_mem());
    if (!t->ssl || !t->rbio || !t->wbio) {
        ERR_clear_error();
        BIO_free(t->rbio);
        BIO_free(t->wbio);
        SSL_free(t->ssl);
        fut_mem_free(t, sizeof *t);
        return FUT_ENOMEM;
    }
    /* Empty: "retry later" (WANT_READ) until the byte stream ends. */
    BIO_set_mem_eof_return(t->rbio, -1);
    SSL_set_bio(t->ssl, t->rbio, t->wbio);
    int r = 0;
    if (c->role == FUT_TLS_CLIENT) {
        SSL_set_connect_state(t->ssl);
        if (name) {
            unsigned char ip[16];
            if (inet_pton(AF_INET, name, ip) == 1 ||
                inet_pton(AF_INET6, name, ip) == 1) {
                if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl),
                                                  name) != 1)
                    r = FUT_ETLS;
            } else if (SSL_set_tlsext_host_name(t->ssl, name) != 1 ||
                       SSL_set1_host(t->ssl, name) != 1) {
                r = FUT_ETLS;
            }
        }
    } else {
        SSL_set_accept_state(t->ssl);
    }
    if (r) {
        ERR_clear_error();
        SSL_free(t->ssl);
        fut_mem_free(t, sizeof *t);
        return r;
    }
    *out = t;
    return 0;
}

static void fut__tls_key_wait(struct fut_tls *t);

void fut_tls_free(struct fut_tls *t)
{
    if (!t)
        return;
    fut__tls_key_wait(t);
    if (t->wr_busy)
        fut_drop(&t->wr.base);
    fut__tls_release_read(t);
    SSL_free(t->ssl); /* frees both BIOs */
    fut_mem_free(t, sizeof *t);
}

struct fut_io *fut_tls_io(const struct fut_tls *t)
{
    return t ? t->io : NULL;
}

const char *fut_tls_error_message(const struct fut_tls *t)
{
    return t ? t->msg : "";
}

/* ------------------------------------------------------ key operations */

/* A server with an RSA key signs while it processes the ClientHello (the
 * CertificateVerify of TLS 1.3, the ServerKeyExchange of TLS 1.2 with
 * ECDHE): about 0.3-1.7 ms of a core for RSA-2048, which would stall
 * every connection of the worker. Those steps run on the blocking pool as
 * one SSL_do_handshake over the stream's memory BIOs; ECDSA signs in tens
 * of microseconds and stays inline. Every step starts inline: OpenSSL
 * calls context.c's client_hello once it has read a whole ClientHello, before
 * it signs; a ClientHello that asks for a resumption (a PSK in TLS 1.3, a
 * session ticket or session id in TLS 1.2) goes on inline, as no
 * signature is made; one that does not pauses the step
 * (SSL_CLIENT_HELLO_RETRY), which then runs again on the pool with
 * 'kj_job' set, where the callback lets it go on. A resumption the server
 * refuses (an expired ticket) falls back to a full handshake inline: one
 * signature on the worker. A TLS 1.2 client that chose RSA key exchange
 * makes the server decrypt its key exchange with the key, a step later:
 * 'kj_decrypt' sends that step to the pool as well. */

fut__aword fut__tls_key_jobs;
fut__aword fut__tls_key_job_thread;

static intptr_t key_job(void *arg)
{
    struct fut_tls *t = arg;
    ERR_clear_error(); /* this thread's queue */
    int rc = SSL_do_handshake(t->ssl);
    int e = rc == 1 ? SSL_ERROR_NONE : SSL_get_error(t->ssl, rc);
    t->kj_msg[0] = '\0';
    if (rc != 1 && e != SSL_ERROR_WANT_READ)
        fut__tls_drain_errors(t->kj_msg, sizeof t->kj_msg, NULL);
    else
        ERR_clear_error();
    t->kj_rc = rc;
    t->kj_e = e;
    /* The pool thread's OpenSSL state (its error queue, its random
     * generators) goes now, not at the thread's exit: a pool thread may
     * still be exiting when the process does (the pool does not wait for
     * that), and LeakSanitizer then reports the error queue. It costs a
     * fresh generator on this thread's next job: noise next to the
     * signature. */
    OPENSSL_thread_stop();
    fut__fetch_add(&fut__tls_key_jobs, 1, FUT__RELAXED);
    fut__store(&fut__tls_key_job_thread, (uintptr_t)pthread_self(),
               FUT__RELAXED);
    return 0;
}

/* The cipher chosen uses RSA key exchange (TLS 1.2 without ECDHE). */
static int rsa_key_exchange(SSL *s)
{
    const SSL_CIPHER *c = SSL_get_pending_cipher(s);
    if (!c)
        c = SSL_get_current_cipher(s);
    return c && SSL_CIPHER_get_kx_nid(c) == NID_kx_rsa;
}

int fut__tls_key_settle(struct fut_tls *t, struct fut_context *cx)
{
    if (!t->kj_busy)
        return FUT_READY;
    if (fut_poll(&t->kj.base, cx) == FUT_PENDING)
        return FUT_PENDING;
    int r = t->kj.result;
    fut_drop(&t->kj.base);
    t->kj_busy = 0;
    t->kj_job = 0;
    if (r == 0)
        t->kj_ready = 1; /* the handshake loop takes the results */
    else
        t->kj_off = 1; /* no pool here (or it refused): inline from now */
    return FUT_READY;
}

/* The next handshake step, on the pool: PENDING while it runs. */
static int key_job_start(struct fut_tls *t, struct fut_context *cx)
{
    t->kj_job = 1;
    fut_spawn_blocking_init(&t->kj, key_job, t);
    t->kj_busy = 1;
    return fut__tls_key_settle(t, cx);
}

/* fut_tls_free of a stream whose key operation is in flight: the job may
 * be running on the SSL, so it is awaited here, on this thread (at most
 * one signature and the pool's queue), never dropped. */
struct key_waiter {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int woken;
};

static void kw_wake(const void *data)
{
    struct key_waiter *w = (struct key_waiter *)(uintptr_t)data;
    pthread_mutex_lock(&w->lock);
    w->woken = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

static struct fut_waker kw_clone(const void *data);

static void kw_drop(const void *data)
{
    (void)data;
}

static const struct fut_waker_vtable kw_vt = {kw_clone, kw_wake, kw_wake,
                                              kw_drop};

static struct fut_waker kw_clone(const void *data)
{
    struct fut_waker w = {data, &kw_vt};
    return w;
}

static void fut__tls_key_wait(struct fut_tls *t)
{
    if (!t->kj_busy)
        return;
    struct key_waiter w;
    pthread_mutex_init(&w.lock, NULL);
    pthread_cond_init(&w.cond, NULL);
    w.woken = 0;
    struct fut_context cx;
    fut_context_init(&cx, kw_clone(&w));
    while (fut__tls_key_settle(t, &cx) == FUT_PENDING) {
        pthread_mutex_lock(&w.lock);
        while (!w.woken)
            pthread_cond_wait(&w.cond, &w.lock);
        w.woken = 0;
        pthread_mutex_unlock(&w.lock);
    }
    /* the pool keeps no clone once the job is DONE and dropped */
    pthread_cond_destroy(&w.cond);
    pthread_mutex_destroy(&w.lock);
}

/* ------------------------------------------------------------ the pump */

int fut__tls_flush(struct fut_tls *t, struct fut_context *cx, int *res)
{
    if (t->kj_busy && fut__tls_key_settle(t, cx) == FUT_PENDING)
        return FUT_PENDING;
    if (t->io_failed) {
        *res = t->err;
        return FUT_READY;
    }
    for (;;) {
        if (t->wr_busy) {
            if (fut_poll(&t->wr.base, cx) == FUT_PENDING)
                return FUT_PENDING;
            ssize_t n = t->wr.result;
            fut_drop(&t->wr.base);
            t->wr_busy = 0;
            if (n <= 0) {
                t->io_failed = 1;
                if (!t->err) {
                    t->err = n < 0 ? (int)n : -EPIPE;
                    snprintf(t->msg, sizeof t->msg, "sending: %s",
                             fut_strerror(t->err));
                }
                *res = t->err;
                return FUT_READY;
            }
            t->ooff += (size_t)n;
        }
        if (t->ooff == t->olen) {
            t->ooff = t->olen = 0;
            int n = BIO_read(t->wbio, t->obuf, (int)sizeof t->obuf);
            if (n <= 0) {
                *res = 0;
                return FUT_READY;
            }
            t->olen = (size_t)n;
        }
        fut_io_write_init(&t->wr, t->io, t->obuf + t->ooff,
                          t->olen - t->ooff);
        t->wr_busy = 1;
    }
}

void fut__tls_release_read(struct fut_tls *t)
{
    if (t->rd_busy) {
        fut_drop(&t->rd.base);
        t->rd_busy = 0;
    }
}

int fut__tls_fill(struct fut_tls *t, struct fut_context *cx, int *res)
{
    if (t->kj_busy && fut__tls_key_settle(t, cx) == FUT_PENDING)
        return FUT_PENDING;
    if (t->eof) {
        *res = 0;
        return FUT_READY;
    }
    if (!t->rd_busy) {
        fut_io_read_init(&t->rd, t->io, t->ibuf, sizeof t->ibuf);
        t->rd_busy = 1;
    }
    if (fut_poll(&t->rd.base, cx) == FUT_PENDING)
        return FUT_PENDING;
    ssize_t n = t->rd.result;
    fut__tls_release_read(t);
    if (n < 0) {
        t->io_failed = 1;
        if (!t->err) {
            t->err = (int)n;
            snprintf(t->msg, sizeof t->msg, "receiving: %s",
                     fut_strerror(t->err));
        }
        *res = t->err;
        return FUT_READY;
    }
    if (n == 0) {
        t->eof = 1;
        BIO_set_mem_eof_return(t->rbio, 0);
        *res = 0;
        return FUT_READY;
    }
    if (BIO_write(t->rbio, t->ibuf, (int)n) != (int)n) {
        ERR_clear_error();
        t->err = FUT_ENOMEM;
        snprintf(t->msg, sizeof t->msg, "receiving: out of memory");
        *res = t->err;
        return FUT_READY;
    }
    *res = (int)n;
    return FUT_READY;
}

int fut__tls_fail(struct fut_tls *t, struct fut_context *cx, int rc)
{
    return fut__tls_fail_e(t, cx, SSL_get_error(t->ssl, rc), NULL);
}

int fut__tls_fail_e(struct fut_tls *t, struct fut_context *cx, int e,
                    const char *drained)
{
    long vr = SSL_get_verify_result(t->ssl);
    int code;
    char head[160];
    head[0] = '\0';
    if (!t->hs_done && vr != X509_V_OK) {
        code = FUT_ETLSCERT;
        snprintf(head, sizeof head, "certificate verify failed: %s",
                 X509_verify_cert_error_string(vr));
    } else if (t->eof &&
               !(SSL_get_shutdown(t->ssl) & SSL_RECEIVED_SHUTDOWN)) {
        code = FUT_ETLSTRUNC;
        snprintf(head, sizeof head, "the peer closed without close_notify");
    } else if (e == SSL_ERROR_SSL || e == SSL_ERROR_SYSCALL) {
        code = FUT_ETLS;
    } else {
        code = FUT_ETLS;
        snprintf(head, sizeof head, "unexpected SSL_get_error %d", e);
    }
    if (!t->err) {
        t->err = code;
        t->msg[0] = '\0';
        fut__tls_drain_errors(t->msg, sizeof t->msg, head[0] ? head : NULL);
        size_t off = strlen(t->msg);
        if (drained && drained[0] && off + 3 < sizeof t->msg)
            snprintf(t->msg + off, sizeof t->msg - off, "%s%s",
                     off ? "; " : "", drained);
    } else {
        ERR_clear_error();
    }
    /* An alert OpenSSL queued for the peer: one try, no wait (the stream
     * is broken; its drop or free releases a send left pending). */
    if (t->err != FUT_ETLSTRUNC && (t->wr_busy || BIO_pending(t->wbio) > 0)) {
        int r, save = t->err;
        (void)fut__tls_flush(t, cx, &r);
        t->err = save;
    }
    return t->err;
}

int fut__tls_handshake(struct fut_tls *t, struct fut_context *cx, int *res)
{
    for (;;) {
        if (t->kj_busy && fut__tls_key_settle(t, cx) == FUT_PENDING)
            return FUT_PENDING;
        if (t->err) {
            *res = t->err;
            return FUT_READY;
        }
        /* Done and its last flight sent: nothing to wait for (records
         * queued since are the next future's business, not a reason for a
         * read to wait). */
        if (t->hs_sent) {
            *res = 0;
            return FUT_READY;
        }
        /* Whatever is queued goes first, to its end: the peer may be
         * waiting for exactly these records (tokio-rustls #112). */
        if (fut__tls_flush(t, cx, res) == FUT_PENDING)
            return FUT_PENDING;
        if (*res < 0)
            return FUT_READY;
        if (t->hs_done) {
            t->hs_sent = 1;
            *res = 0;
            return FUT_READY;
        }
        int rc, e;
        const char *drained = NULL;
        if (t->kj_ready) { /* a step that ran on the blocking pool */
            t->kj_ready = 0;
            rc = t->kj_rc;
            e = t->kj_e;
            drained = t->kj_msg;
            /* The server's flight ends with Finished (TLS 1.3, and a
             * resumption) or ServerHelloDone (TLS 1.2): the signature is
             * made, later steps run inline. After a HelloRetryRequest
             * the next ClientHello meets the callback again. */
            OSSL_HANDSHAKE_STATE st = SSL_get_state(t->ssl);
            /* TLS 1.2 with RSA key exchange: the server's flight signed
             * nothing, the client's key exchange is decrypted with the
             * key - the step that reads it goes to the pool too. */
            t->kj_decrypt = rc != 1 && st == TLS_ST_SW_SRVR_DONE &&
                            rsa_key_exchange(t->ssl);
            if (rc == 1 || st == TLS_ST_SW_FINISHED ||
                st == TLS_ST_SW_SRVR_DONE || ++t->kj_steps >= 4)
                t->kj_off = 1;
        } else if (t->kj_decrypt && BIO_pending(t->rbio) > 0) {
            if (key_job_start(t, cx) == FUT_PENDING)
                return FUT_PENDING;
            continue;
        } else {
            ERR_clear_error();
            rc = SSL_do_handshake(t->ssl);
            e = rc == 1 ? SSL_ERROR_NONE : SSL_get_error(t->ssl, rc);
            if (e == SSL_ERROR_WANT_CLIENT_HELLO_CB) {
                /* A ClientHello that makes the server sign: that step
                 * runs again on the pool (key operations, above). */
                if (key_job_start(t, cx) == FUT_PENDING)
                    return FUT_PENDING;
                continue;
            }
        }
        if (rc == 1) {
            t->hs_done = 1;
            const unsigned char *p = NULL;
            unsigned int len = 0;
            SSL_get0_alpn_selected(t->ssl, &p, &len);
            if (p && len < sizeof t->alpn) {
                memcpy(t->alpn, p, len);
                t->alpn[len] = '\0';
            }
            continue; /* flush the last flight */
        }
        if (e != SSL_ERROR_WANT_READ) {
            *res = fut__tls_fail_e(t, cx, e, drained);
            return FUT_READY;
        }
        if (BIO_pending(t->wbio) > 0)
            continue; /* our flight first */
        if (fut__tls_fill(t, cx, res) == FUT_PENDING)
            return FUT_PENDING;
        if (*res < 0)
            return FUT_READY;
        /* > 0: more input for OpenSSL; 0: EOF, which OpenSSL now sees */
    }
}

/* ------------------------------------------------------------ queries */

int fut_tls_is_handshake_done(const struct fut_tls *t)
{
    FUT_ARG_OR(t, "'t' is NULL", 0);
    return t->hs_done;
}

const char *fut_tls_alpn(const struct fut_tls *t)
{
    return t ? t->alpn : "";
}

const char *fut_tls_version(const struct fut_tls *t)
{
    return t && t->hs_done ? SSL_get_version(t->ssl) : "";
}

const char *fut_tls_cipher(const struct fut_tls *t)
{
    const char *s = t && t->hs_done ? SSL_get_cipher_name(t->ssl) : NULL;
    return s ? s : "";
}

ssize_t fut_tls_peer_cert_der(const struct fut_tls *t, void *buf, size_t cap)
{
    FUT_ARG_CHECK(t, "'t' is NULL");
    FUT_ARG_CHECK(buf || !cap, "'buf' is NULL");
    X509 *x = t->hs_done ? SSL_get0_peer_certificate(t->ssl) : NULL;
    if (!x)
        return 0;
    int len = i2d_X509(x, NULL);
    if (len < 0) {
        ERR_clear_error();
        return FUT_ENOMEM;
    }
    if (buf && cap >= (size_t)len) {
        unsigned char *p = buf;
        i2d_X509(x, &p);
    } else if (buf && cap) {
        unsigned char *tmp = fut_mem_alloc((size_t)len);
        if (!tmp)
            return FUT_ENOMEM;
        unsigned char *p = tmp;
        i2d_X509(x, &p);
        memcpy(buf, tmp, cap);
        fut_mem_free(tmp, (size_t)len);
    }
    return len;
}

size_t fut_tls_peer_subject(const struct fut_tls *t, char *buf, size_t cap)
{
    FUT_ARG_OR(t, "'t' is NULL", 0);
    FUT_ARG_OR(buf || !cap, "'buf' is NULL", 0);
    if (cap)
        buf[0] = '\0';
    X509 *x = t && t->hs_done ? SSL_get0_peer_certificate(t->ssl) : NULL;
    if (!x || cap == 0)
        return 0;
    BIO *b = BIO_new(BIO_s_mem());
    if (!b) {
        ERR_clear_error();
        return 0;
    }
    X509_NAME_print_ex(b, X509_get_subject_name(x), 0, XN_FLAG_RFC2253);
    int n =
        BIO_read(b, buf, (int)(cap - 1 > INT32_MAX ? INT32_MAX : cap - 1));
    BIO_free(b);
    size_t len = n > 0 ? (size_t)n : 0;
    buf[len] = '\0';
    return len;
}

/* ------------------------------------------------------------ sessions */

int fut_tls_get_session(struct fut_tls *t, struct fut_tls_session **out)
{
    FUT_ARG_CHECK(out, "'out' is NULL");
    *out = NULL;
    FUT_ARG_CHECK(t, "'t' is NULL");
    SSL_SESSION *s = SSL_get1_session(t->ssl);
    if (s && !SSL_SESSION_is_resumable(s)) {
        SSL_SESSION_free(s);
        s = NULL;
    }
    *out = (struct fut_tls_session *)s;
    return 0;
}

int fut_tls_set_session(struct fut_tls *t, const struct fut_tls_session *s)
{
    FUT_ARG_CHECK(t && s, "'t' or 's' is NULL");
    FUT_ARG_CHECK(SSL_in_before(t->ssl), "the handshake has started");
    ERR_clear_error();
    if (SSL_set_session(t->ssl, (SSL_SESSION *)(uintptr_t)s) != 1) {
        ERR_clear_error();
        return FUT_ETLS;
    }
    return 0;
}

void fut_tls_session_free(struct fut_tls_session *s)
{
    SSL_SESSION_free((SSL_SESSION *)s);
}

int fut_tls_session_reused(const struct fut_tls *t)
{
    FUT_ARG_OR(t, "'t' is NULL", 0);
    return t->hs_done && SSL_session_reused(t->ssl);
}
