/* SPDX-License-Identifier: MIT */
/* TLS contexts (include/fut/tls.h): an SSL_CTX configured for fut's
 * streams - the role, certificate and key, trust store, verification,
 * versions, ALPN - and the OpenSSL error drain the streams use too. */
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "internal.h"
#include "tls/tls_internal.h"

void fut__tls_drain_errors(char *msg, size_t cap, const char *prefix)
{
    size_t off = strlen(msg);
    if (prefix && off + 1 < cap)
        off += (size_t)snprintf(msg + off, cap - off, "%s%s", off ? "; " : "",
                                prefix);
    unsigned long e;
    while ((e = ERR_get_error()) != 0) {
        char one[256];
        ERR_error_string_n(e, one, sizeof one);
        if (off + 1 < cap)
            off += (size_t)snprintf(msg + off, cap - off, "%s%s",
                                    off ? "; " : "", one);
    }
    if (off >= cap)
        msg[cap - 1] = '\0';
}

/* Records a failed configuration call: FUT_ETLS with OpenSSL's words. */
static int ctx_fail(struct fut_tls_ctx *c, const char *what)
{
    c->msg[0] = '\0';
    fut__tls_drain_errors(c->msg, sizeof c->msg, what);
    return FUT_ETLS;
}

static int alpn_select(SSL *s, const unsigned char **out,
                       unsigned char *outlen, const unsigned char *in,
                       unsigned int inlen, void *arg)
{
    (void)s;
    struct fut_tls_ctx *c = arg;
    unsigned char *sel = NULL;
    if (c->alpn &&
        SSL_select_next_proto(&sel, outlen, c->alpn, (unsigned)c->alpn_len,
                              in, inlen) == OPENSSL_NPN_NEGOTIATED) {
        *out = sel;
        return SSL_TLSEXT_ERR_OK;
    }
    return SSL_TLSEXT_ERR_NOACK;
}

/* TLS 1.2 offers carry no supported_versions extension: only there is a
 * session id a resumption (TLS 1.3 clients send a random one). */
static int hello_resumes(SSL *s)
{
    const unsigned char *p;
    size_t len;
    if (SSL_client_hello_get0_ext(s, TLSEXT_TYPE_psk, &p, &len) == 1)
        return 1;
    if (SSL_client_hello_get0_ext(s, TLSEXT_TYPE_session_ticket, &p, &len) ==
            1 &&
        len > 0)
        return 1;
    if (SSL_client_hello_get0_ext(s, TLSEXT_TYPE_supported_versions, &p,
                                  &len) == 1)
        return 0;
    return SSL_client_hello_get0_session_id(s, &p) > 0;
}

/* OpenSSL's ClientHello callback of every server context (stream.c, "key
 * operations"): a step that would sign is paused (RETRY), to run again
 * on the blocking pool with 'kj_job' set. */
static int client_hello(SSL *s, int *alert, void *arg)
{
    (void)alert;
    (void)arg;
    struct fut_tls *t = SSL_get_app_data(s);
    if (!t || !t->ctx->key_offload || t->kj_off || t->kj_job ||
        hello_resumes(s))
        return SSL_CLIENT_HELLO_SUCCESS;
    return SSL_CLIENT_HELLO_RETRY; /* to the pool (fut__tls_handshake) */
}

int fut_tls_ctx_new(enum fut_tls_role role, struct fut_tls_ctx **out)
{
    FUT_ARG_CHECK(out, "'out' is NULL");
    FUT_ARG_CHECK(role == FUT_TLS_CLIENT || role == FUT_TLS_SERVER,
                  "'role' is not FUT_TLS_CLIENT or FUT_TLS_SERVER");
    *out = NULL;
    struct fut_tls_ctx *c = fut_mem_alloc(sizeof *c);
    if (!c)
        return FUT_ENOMEM;
    memset(c, 0, sizeof *c);
    c->role = role;
    ERR_clear_error();
    c->ssl = SSL_CTX_new(role == FUT_TLS_CLIENT ? TLS_client_method()
                                                : TLS_server_method());
    if (!c->ssl) {
        ERR_clear_error();
        fut_mem_free(c, sizeof *c);
        return FUT_ENOMEM;
    }
    SSL_CTX_set_min_proto_version(c->ssl, TLS1_2_VERSION);
    /* A write is retried with the same bytes only within one future, but
     * the buffer may be another copy of them; renegotiation (TLS 1.2)
     * could make SSL_write wait for a read, so it is refused. */
    SSL_CTX_set_mode(c->ssl, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_options(c->ssl, SSL_OP_NO_RENEGOTIATION);
    if (role == FUT_TLS_CLIENT) {
        SSL_CTX_set_verify(c->ssl, SSL_VERIFY_PEER, NULL);
        if (SSL_CTX_set_default_verify_paths(c->ssl) != 1) {
            int r = ctx_fail(c, "system trust store");
            SSL_CTX_free(c->ssl);
            fut_mem_free(c, sizeof *c);
            return r;
        }
    } else {
        static const unsigned char sid[] = "fut-tls";
        SSL_CTX_set_session_id_context(c->ssl, sid, sizeof sid - 1);
        SSL_CTX_set_verify(c->ssl, SSL_VERIFY_NONE, NULL);
        SSL_CTX_set_client_hello_cb(c->ssl, client_hello, NULL);
    }
    SSL_CTX_set_alpn_select_cb(c->ssl, alpn_select, c);
    *out = c;
    return 0;
}

void fut_tls_ctx_free(struct fut_tls_ctx *c)
{
    if (!c)
        return;
    SSL_CTX_free(c->ssl);
    if (c->alpn)
        fut_mem_free(c->alpn, c->alpn_len);
    fut_mem_free(c, sizeof *c);
}

/* After a key was set: RSA keys sign on the blocking pool (stream.c). */
static void note_key(struct fut_tls_ctx *c)
{
    EVP_PKEY *k = SSL_CTX_get0_privatekey(c->ssl);
    int id = k ? EVP_PKEY_get_base_id(k) : EVP_PKEY_NONE;
    c->key_rsa = id == EVP_PKEY_RSA || id == EVP_PKEY_RSA_PSS;
    c->key_offload = c->keyop == FUT_TLS_KEYOP_POOL ||
                     (c->keyop == FUT_TLS_KEYOP_AUTO && c->key_rsa);
}

int fut_tls_ctx_set_key_offload(struct fut_tls_ctx *c,
                                enum fut_tls_keyop mode)
{
    FUT_ARG_CHECK(c, "'c' is NULL");
    FUT_ARG_CHECK(mode == FUT_TLS_KEYOP_AUTO || mode == FUT_TLS_KEYOP_POOL ||
                      mode == FUT_TLS_KEYOP_INLINE,
                  "unknown mode");
    c->keyop = mode;
    c->key_offload = mode == FUT_TLS_KEYOP_POOL ||
                     (mode == FUT_TLS_KEYOP_AUTO && c->key_rsa);
    return 0;
}

int fut_tls_ctx_use_cert_files(struct fut_tls_ctx *c, const char *chain_path,
                               const char *key_path)
{
    FUT_ARG_CHECK(c, "'c' is NULL");
    FUT_ARG_CHECK(chain_path && key_path, "a path is NULL");
    c->msg[0] = '\0';
    ERR_clear_error();
    if (SSL_CTX_use_certificate_chain_file(c->ssl, chain_path) != 1)
        return ctx_fail(c, chain_path);
    if (SSL_CTX_use_PrivateKey_file(c->ssl, key_path, SSL_FILETYPE_PEM) != 1)
        return ctx_fail(c, key_path);
    if (SSL_CTX_check_private_key(c->ssl) != 1)
        return ctx_fail(c, "the key does not match the certificate");
    note_key(c);
    return 0;
}

int fut_tls_ctx_use_cert_pem(struct fut_tls_ctx *c, const char *chain,
                             size_t chain_len, const char *key,
                             size_t key_len)
{
    FUT_ARG_CHECK(c, "'c' is NULL");
    FUT_ARG_CHECK(chain && key, "a PEM buffer is NULL");
    FUT_ARG_CHECK(chain_len <= INT32_MAX && key_len <= INT32_MAX,
                  "PEM text too long");
    c->msg[0] = '\0';
    ERR_clear_error();
    int r = 0;
    BIO *b = BIO_new_mem_buf(chain, (int)chain_len);
    X509 *leaf = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    if (!leaf || SSL_CTX_use_certificate(c->ssl, leaf) != 1) {
        r = ctx_fail(c, "certificate");
    } else {
        SSL_CTX_clear_chain_certs(c->ssl);
        X509 *x;
        while (r == 0 && (x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
            if (SSL_CTX_add0_chain_cert(c->ssl, x) != 1) {
                X509_free(x);
                r = ctx_fail(c, "chain certificate");
            }
        }
        ERR_clear_error(); /* the end of the PEM text */
    }
    X509_free(leaf);
    BIO_free(b);
    if (r)
        return r;
    b = BIO_new_mem_buf(key, (int)key_len);
    EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
    if (!k || SSL_CTX_use_PrivateKey(c->ssl, k) != 1)
        r = ctx_fail(c, "private key");
    else if (SSL_CTX_check_private_key(c->ssl) != 1)
        r = ctx_fail(c, "the key does not match the certificate");
    EVP_PKEY_free(k);
    BIO_free(b);
    if (r == 0)
        note_key(c);
    return r;
}

/* A fresh store replaces the context's (the system paths go). */
static X509_STORE *new_store(struct fut_tls_ctx *c)
{
    X509_STORE *st = X509_STORE_new();
    if (st)
        SSL_CTX_set_cert_store(c->ssl, st);
    return st;
}

int fut_tls_ctx_trust_file(struct fut_tls_ctx *c, const char *path)
{
    FUT_ARG_CHECK(c, "'c' is NULL");
    FUT_ARG_CHECK(path, "'path' is NULL");
    c->msg[0] = '\0';
    ERR_clear_error();
    X509_STORE *st = new_store(c);
    if (!st)
        return FUT_ENOMEM;
    if (X509_STORE_load_file(st, path) != 1)
        return ctx_fail(c, path);
    return 0;
}

int fut_tls_ctx_trust_pem(struct fut_tls_ctx *c, const char *pem, size_t len)
{
    FUT_ARG_CHECK(c, "'c' is NULL");
    FUT_ARG_CHECK(pem, "'pem' is NULL");
    FUT_ARG_CHECK(len <= INT32_MAX, "PEM text too long");
    c->msg[0] = '\0';
    ERR_clear_error();
    X509_STORE *st = new_store(c);
    if (!st)
        return FUT_ENOMEM;
    BIO *b = BIO_new_mem_buf(pem, (int)len);
    if (!b)
        return FUT_ENOMEM;
    int n = 0, r = 0;
    X509 *x;
    while (r == 0 && (x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
        if (X509_STORE_add_cert(st, x) != 1)
            r = ctx_fail(c, "trusted certificate");
        X509_free(x);
        n++;
    }
    BIO_free(b);
    if (r == 0 && n == 0)
        return ctx_fail(c, "no certificate in the PEM text");
    ERR_clear_error();
    return r;
}

int fut_tls_ctx_set_verify(struct fut_tls_ctx *c, int on)
{
    FUT_ARG_CHECK(c, "'c' is NULL");
    int mode = SSL_VERIFY_NONE;
    if (on)
        mode = c->role == FUT_TLS_CLIENT
                   ? SSL_VERIFY_PEER
                   : SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    SSL_CTX_set_verify(c->ssl, mode, NULL);
    return 0;
}

static int version_ok(enum fut_tls_version v)
{
    return v == FUT_TLS_ANY || v == FUT_TLS_1_2 || v == FUT_TLS_1_3;
}

int fut_tls_ctx_set_versions(struct fut_tls_ctx *c, enum fut_tls_version min,
                             enum fut_tls_version max)
{
    FUT_ARG_CHECK(c, "'c' is NULL");
    FUT_ARG_CHECK(version_ok(min) && version_ok(max), "unknown version");
    c->msg[0] = '\0';
    ERR_clear_error();
    if (SSL_CTX_set_min_proto_version(c->ssl,
                                      min ? (int)min : TLS1_2_VERSION) != 1 ||
        SSL_CTX_set_max_proto_version(c->ssl, (int)max) != 1)
        return ctx_fail(c, "protocol version");
    return 0;
}

int fut_tls_ctx_set_alpn(struct fut_tls_ctx *c, const char *const *protos,
                         size_t n)
{
    FUT_ARG_CHECK(c, "'c' is NULL");
    FUT_ARG_CHECK(protos || n == 0, "'protos' is NULL");
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        FUT_ARG_CHECK(protos[i], "a protocol name is NULL");
        size_t l = strlen(protos[i]);
        FUT_ARG_CHECK(l >= 1 && l <= 255, "a protocol name is empty or long");
        len += 1 + l;
    }
    unsigned char *w = NULL;
    if (len) {
        w = fut_mem_alloc(len);
        if (!w)
            return FUT_ENOMEM;
        size_t off = 0;
        for (size_t i = 0; i < n; i++) {
            size_t l = strlen(protos[i]);
            w[off++] = (unsigned char)l;
            memcpy(w + off, protos[i], l);
            off += l;
        }
    }
    if (c->role == FUT_TLS_CLIENT &&
        SSL_CTX_set_alpn_protos(c->ssl, w, (unsigned)len) != 0) {
        if (w)
            fut_mem_free(w, len);
        return ctx_fail(c, "ALPN");
    }
    if (c->alpn)
        fut_mem_free(c->alpn, c->alpn_len);
    c->alpn = w;
    c->alpn_len = len;
    return 0;
}

const char *fut_tls_ctx_error_message(const struct fut_tls_ctx *c)
{
    return c ? c->msg : "";
}
