/* SPDX-License-Identifier: MIT */
/* libfut-tls's insides: the context and stream structs and the record
 * pump the futures share (src/tls/stream.c), and the OpenSSL error
 * drain (src/tls/context.c).
 *
 * The stream is a state machine driven by its futures, one poll at a
 * time (the "one stream, one task" rule of fut/tls.h). Its rules:
 *   - the network side is two memory BIOs that OpenSSL owns through the
 *     SSL: 'rbio' holds ciphertext received and not yet decrypted,
 *     'wbio' ciphertext OpenSSL produced and fut has not yet taken;
 *   - outgoing ciphertext moves wbio -> obuf[ooff, olen) -> socket
 *     through ONE inner write future 'wr' that lives in the stream, not in
 *     any user future: once it returned PENDING it is only ever polled
 *     again until READY, never dropped and restarted (on io_uring a
 *     dropped send may have sent part of its copy, so a restart could
 *     repeat or lose bytes) - the tokio-rustls #112 rule; obuf is refilled
 *     only when it is empty, so records leave in order;
 *   - incoming ciphertext moves socket -> ibuf -> rbio through the inner
 *     read future 'rd', and is written into rbio by the same poll that got
 *     it (nothing waits in ibuf across polls), so dropping 'rd' (read is
 *     cancel-safe on every backend, io.h) loses nothing;
 *   - plaintext is only exchanged with OpenSSL (SSL_read_ex/SSL_write_ex)
 *     in the poll that returns READY with it;
 *   - 'err' is sticky: the first failure (TLS or the byte stream's) is
 *     every later future's result; after a TLS failure the records
 *     queued (OpenSSL's alert) are still sent by a flush or shutdown
 *     future, after a failure of the byte stream ('io_failed') nothing;
 *   - socket EOF sets 'eof' and makes rbio report EOF to OpenSSL;
 *   - key operations (stream.c, "key operations"): a server whose key is
 *     RSA runs the handshake steps that may sign - those that process a
 *     ClientHello that asks for no resumption, until one produced the
 *     server's flight - as one SSL_do_handshake on the blocking pool,
 *     through the inner future 'kj'. Every step starts inline; OpenSSL's
 *     ClientHello callback (fut__tls_client_hello) pauses one that would
 *     sign ('kj_job' set while that step runs on the pool). While 'kj_busy' the pool thread owns the SSL (and its BIOs)
 *     and the 'kj_*' results: no other code touches them until 'kj'
 *     returned READY (the pool's DONE store, release, and its poll's
 *     acquire load order the hand-over). Like 'wr', 'kj' is never
 *     dropped while it may run: every future polls it on first
 *     (fut__tls_key_settle), and fut_tls_free waits for it.
 */
#ifndef FUT_TLS_INTERNAL_H
#define FUT_TLS_INTERNAL_H

#include <openssl/ssl.h>

#include "fut/tls.h"
#include "util/atomic.h"

struct fut_tls_ctx {
    SSL_CTX *ssl;
    enum fut_tls_role role;
    unsigned char *alpn; /* wire format: length-prefixed names */
    size_t alpn_len;
    char msg[512];   /* the last failure's text */
    int keyop;       /* enum fut_tls_keyop */
    int key_rsa;     /* the key is RSA */
    int key_offload; /* sign on the blocking pool (keyop, key_rsa) */
};

/* Buffer sizes: one full record and its overhead, both ways. */
#define FUT__TLS_BUF (16384 + 2048)

struct fut_tls {
    struct fut_tls_ctx *ctx;
    struct fut_io *io;
    SSL *ssl;
    BIO *rbio; /* ciphertext received (owned by ssl) */
    BIO *wbio; /* ciphertext to send (owned by ssl) */
    struct fut_io_write wr;
    int wr_busy; /* 'wr' was initialised and has not returned READY */
    size_t ooff, olen;
    struct fut_io_read rd;
    int rd_busy;
    int eof;         /* the byte stream ended */
    int err;         /* sticky failure (0: none) */
    int io_failed;   /* the byte stream failed: nothing more is sent */
    int hs_done;     /* the handshake completed */
    int hs_sent;     /* ... and its last flight was sent */
    int shut_queued; /* close_notify is in wbio (or sent) */
    char alpn[256];
    char msg[512];
    /* the key operation on the blocking pool (see the rules above) */
    struct fut_blocking kj;
    int kj_busy;    /* 'kj' was polled and has not returned READY */
    int kj_ready;   /* its results wait for the handshake loop */
    int kj_off;     /* no more steps off-thread (signed, or no pool) */
    int kj_steps;   /* steps run on the pool (at most 4) */
    int kj_job;     /* the step running on the pool (its ClientHello
                     callback lets it sign) */
    int kj_decrypt; /* TLS 1.2 RSA key exchange: the next step with
                       input (the client's key exchange) to the pool */
    int kj_rc, kj_e;
    char kj_msg[512]; /* the pool thread's OpenSSL errors */
    unsigned char obuf[FUT__TLS_BUF];
    unsigned char ibuf[FUT__TLS_BUF];
};

/* Appends the OpenSSL error queue of this thread to 'msg' (cap bytes,
 * after 'prefix' when not NULL) and empties the queue. */
void fut__tls_drain_errors(char *msg, size_t cap, const char *prefix);

/* The record pump (stream.c). Each returns FUT_PENDING (the waker is
 * registered where progress will come from) or FUT_READY with '*res':
 *   flush      every queued record sent (0) or a failure (< 0);
 *   fill       bytes moved from the socket into rbio (> 0), 0 at EOF, or
 *              a failure;
 *   handshake  0 once the handshake is done, or a failure.
 * A failure is stored in t->err as well. */
int fut__tls_flush(struct fut_tls *t, struct fut_context *cx, int *res);
int fut__tls_fill(struct fut_tls *t, struct fut_context *cx, int *res);
int fut__tls_handshake(struct fut_tls *t, struct fut_context *cx, int *res);
/* Maps the failure of an SSL call (its return 'rc') to a code, stores
 * it in t->err with the message, and tries to send what OpenSSL queued
 * (an alert) without waiting. Returns the code. */
int fut__tls_fail(struct fut_tls *t, struct fut_context *cx, int rc);
/* As fut__tls_fail, with SSL_get_error's answer 'e' taken already and
 * the OpenSSL errors drained into 'drained' (NULL: drain them here). */
int fut__tls_fail_e(struct fut_tls *t, struct fut_context *cx, int e,
                    const char *drained);
/* Polls the key operation if one is in flight: FUT_PENDING while it runs,
 * FUT_READY once the stream is the runtime's again. */
int fut__tls_key_settle(struct fut_tls *t, struct fut_context *cx);
/* Key operations run off the runtime thread (for tests): a count and the
 * last pool thread's pthread_t. Relaxed: statistics. */
extern fut__aword fut__tls_key_jobs;
extern fut__aword fut__tls_key_job_thread;
/* Drops the inner read if it is pending (cancel-safe). */
void fut__tls_release_read(struct fut_tls *t);

#endif /* FUT_TLS_INTERNAL_H */
