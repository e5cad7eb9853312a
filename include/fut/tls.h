/* SPDX-License-Identifier: MIT */
/** \file
 * fut TLS (libfut-tls, pkg-config fut-tls): TLS 1.2 and 1.3 over any fut
 * byte stream (a 'struct fut_io *': TCP, Unix, pipe), on OpenSSL 3
 * through memory BIOs that the stream owns. The runtime, not OpenSSL,
 * owns the socket: OpenSSL only encrypts into and decrypts from buffers,
 * and every operation is a future that can be dropped (docs/tls.md).
 *
 * Objects:
 *   - a context (struct fut_tls_ctx): the role (client or server), the
 *     certificate and key (server), the trust store and verification
 *     (client), ALPN, the protocol versions. Configure it from one thread,
 *     then share it between streams on any threads; it must outlive them;
 *   - a stream (struct fut_tls): one TLS connection over a fut_io that
 *     the caller keeps owning (close it after fut_tls_free).
 *
 * Rules common to every future in this file:
 *   - the output is 'result' in the future's struct: >= 0 or a negative
 *     code, final once READY; polls after READY return READY (C8);
 *   - codes: the -errno of the byte stream (-ECONNRESET, -EPIPE, ...);
 *     FUT_ETLS (a TLS failure: alert, protocol, configuration);
 *     FUT_ETLSCERT (the peer's certificate failed verification);
 *     FUT_ETLSTRUNC (end of stream without the peer's close_notify: the
 *     data may have been truncated by an attacker); FUT_ENOMEM; FUT_EINVAL
 *     (misuse, or the fut_io's own rules, io.h). After a TLS or stream
 *     failure the stream is broken: every later future completes with the
 *     same code. fut_tls_error_message says what OpenSSL said;
 *   - one stream, one task: the futures of a stream are polled by one
 *     task (or with polls that never overlap); at most one read and one
 *     write (or flush, handshake, shutdown) future at a time. A read and a
 *     write of the same stream may both be pending in that task (under
 *     fut_join or fut_select);
 *   - buffers passed in are borrowed until the future is READY or
 *     dropped;
 *   - outgoing records (ciphertext) are queued in the stream and sent by
 *     whichever future of the stream runs next: every future first
 *     finishes sending what is queued (a send that was PENDING is resumed,
 *     never restarted nor skipped), so a dropped future never loses or
 *     repeats a record;
 *   - a deadline: wrap the future in fut_timeout (time.h); the handshake
 *     has none of its own;
 *   - a stream may outlive its runtime: its next future may run on
 *     another runtime (a send in flight at fut_runtime_free is finished
 *     there and not repeated: docs/tls.md, "Runtimes").
 * Thread: a future is polled and dropped by one thread at a time.
 */
#ifndef FUT_TLS_H
#define FUT_TLS_H

#include <sys/types.h>

#include "fut/core.h"
#include "fut/io.h"

FUT_BEGIN_DECLS

/* ------------------------------------------------------------- contexts */

/** A TLS context: the configuration streams are made from. Opaque. */
struct fut_tls_ctx;

/** The role of a context. */
enum fut_tls_role {
    FUT_TLS_CLIENT = 0, /**< connects; verifies the server by default */
    FUT_TLS_SERVER = 1  /**< accepts; needs a certificate and key */
};

/** Protocol versions for fut_tls_ctx_set_versions. */
enum fut_tls_version {
    FUT_TLS_ANY = 0,     /**< no bound */
    FUT_TLS_1_2 = 0x303, /**< TLS 1.2 */
    FUT_TLS_1_3 = 0x304  /**< TLS 1.3 */
};

/** Makes a context for 'role'. Client: verification ON against the
 * system trust store (OpenSSL's default paths), TLS 1.2 and 1.3. Server:
 * TLS 1.2 and 1.3, session tickets on, no client certificate asked.
 * Returns 0 with '*out' set, FUT_ENOMEM, FUT_ETLS (OpenSSL refused: see
 * fut_tls_ctx_error_message) or FUT_EINVAL. Free it with
 * fut_tls_ctx_free. Thread: any. */
FUT_EXTERN int fut_tls_ctx_new(enum fut_tls_role role,
                               struct fut_tls_ctx **out);

/** Frees a context (NULL: nothing). Every stream made from it must have
 * been freed. Thread: any, once. */
FUT_EXTERN void fut_tls_ctx_free(struct fut_tls_ctx *c);

/** Server (or a client that presents a certificate): the certificate
 * chain (PEM: the leaf first, then intermediates) and the private key
 * (PEM: RSA or ECDSA, not encrypted) from files. Returns 0, FUT_ETLS (a
 * file unreadable or not PEM, or a key that does not match the
 * certificate; the reason in fut_tls_ctx_error_message) or FUT_EINVAL.
 * Thread: before the first stream, one thread. */
FUT_EXTERN int fut_tls_ctx_use_cert_files(struct fut_tls_ctx *c,
                                          const char *chain_path,
                                          const char *key_path);

/** As fut_tls_ctx_use_cert_files with the PEM text in memory ('chain',
 * 'chain_len' and 'key', 'key_len' bytes; copied, nothing is kept). */
FUT_EXTERN int fut_tls_ctx_use_cert_pem(struct fut_tls_ctx *c,
                                        const char *chain, size_t chain_len,
                                        const char *key, size_t key_len);

/** Client: trusts the CA certificates of the PEM file 'path' INSTEAD OF
 * the system store (a private CA). Returns 0, FUT_ETLS or FUT_EINVAL.
 * Thread: before the first stream, one thread. */
FUT_EXTERN int fut_tls_ctx_trust_file(struct fut_tls_ctx *c,
                                      const char *path);

/** As fut_tls_ctx_trust_file with PEM text in memory ('len' bytes). */
FUT_EXTERN int fut_tls_ctx_trust_pem(struct fut_tls_ctx *c, const char *pem,
                                     size_t len);

/** Turns verification of the peer's certificate on (1, the client's
 * default) or off (0: any certificate is accepted - for tests only; the
 * connection is then open to a man in the middle). On a server, 1 asks
 * the client for a certificate and requires one that verifies against
 * the trust store set with fut_tls_ctx_trust_file/_pem. Returns 0 or
 * FUT_EINVAL. Thread: before the first stream, one thread. */
FUT_EXTERN int fut_tls_ctx_set_verify(struct fut_tls_ctx *c, int on);

/** Bounds the protocol version: 'min' and 'max' are FUT_TLS_1_2,
 * FUT_TLS_1_3 or FUT_TLS_ANY. Returns 0, FUT_ETLS or FUT_EINVAL.
 * Thread: before the first stream, one thread. */
FUT_EXTERN int fut_tls_ctx_set_versions(struct fut_tls_ctx *c,
                                        enum fut_tls_version min,
                                        enum fut_tls_version max);

/** Where a server's private-key operation (the handshake's signature)
 * runs: FUT_TLS_KEYOP_AUTO (the default) on the blocking pool when the
 * key is RSA - an RSA-2048 signature costs 0.3 to 1.7 ms of a core,
 * which would stall every connection of the worker - and inline for
 * ECDSA (a resumption signs nothing and stays inline);
 * FUT_TLS_KEYOP_POOL always on the pool;
 * FUT_TLS_KEYOP_INLINE always inside the handshake's poll. docs/tls.md,
 * "Key operations", has the measurements. A runtime without a blocking
 * pool signs inline. */
enum fut_tls_keyop {
    FUT_TLS_KEYOP_AUTO = 0,  /**< pool for RSA, inline otherwise */
    FUT_TLS_KEYOP_POOL = 1,  /**< always on the blocking pool */
    FUT_TLS_KEYOP_INLINE = 2 /**< always inline */
};
/** Sets where a server context's key operations run (enum fut_tls_keyop;
 * the default is FUT_TLS_KEYOP_AUTO). Streams made before keep their
 * context's setting at the time of their handshake steps. A client
 * context takes the setting and never signs. Returns 0 or FUT_EINVAL.
 * Thread: before the first stream, one thread. */
FUT_EXTERN int fut_tls_ctx_set_key_offload(struct fut_tls_ctx *c,
                                           enum fut_tls_keyop mode);

/** ALPN: 'protos' = 'n' protocol names ("h2", "http/1.1"; 1..255 bytes
 * each), copied. Client: the names offered, in order. Server: the names
 * it accepts, in its order of preference: the first of them the client
 * offered is selected; when none is, the handshake goes on without ALPN
 * (fut_tls_alpn gives ""). Returns 0, FUT_ENOMEM or FUT_EINVAL.
 * Thread: before the first stream, one thread. */
FUT_EXTERN int fut_tls_ctx_set_alpn(struct fut_tls_ctx *c,
                                    const char *const *protos, size_t n);

/** What OpenSSL said about the last failed call on 'c' ("" when none).
 * Valid until the next call on 'c'. */
FUT_EXTERN const char *fut_tls_ctx_error_message(const struct fut_tls_ctx *c);

/* -------------------------------------------------------------- streams */

/** A TLS stream over a struct fut_io. Opaque. */
struct fut_tls;

/** Makes a stream of context 'c' over 'io' (borrowed: it must outlive
 * the stream; the stream is the only user of 'io' while it lives).
 * 'name' (client): the server's name, sent as SNI and checked against
 * the certificate (a DNS name, or an IP address literal: then checked
 * as an IP and not sent as SNI); NULL: no SNI and no name check (the
 * chain is still verified: use a name). Server: 'name' is ignored.
 * Nothing is sent until a future runs. Returns 0 with '*out' set,
 * FUT_ENOMEM, FUT_ETLS or FUT_EINVAL. Thread: any. */
FUT_EXTERN int fut_tls_new(struct fut_tls_ctx *c, struct fut_io *io,
                           const char *name, struct fut_tls **out);

/** Frees a stream (NULL: nothing). Every future of it must have been
 * dropped. Sends nothing (use fut_tls_shutdown_init first for a clean
 * close); 'io' stays open and the caller's. Queued records not yet sent
 * are discarded. When a handshake step of the stream is running on the
 * blocking pool (a server's signature, fut_tls_ctx_set_key_offload), it
 * waits on the calling thread until that step returned (about one
 * signature plus the pool's queue). Thread: any, once. */
FUT_EXTERN void fut_tls_free(struct fut_tls *t);

/** The byte stream under 't'. */
FUT_EXTERN struct fut_io *fut_tls_io(const struct fut_tls *t);

/** What OpenSSL said about the stream's failure: the OpenSSL error queue
 * as it was when the failure happened, drained into the stream, or the
 * certificate verification error; "" when nothing failed. Valid until
 * fut_tls_free. */
FUT_EXTERN const char *fut_tls_error_message(const struct fut_tls *t);

/** 1 once the handshake completed. */
FUT_EXTERN int fut_tls_is_handshake_done(const struct fut_tls *t);

/** The protocol ALPN selected ("" when none), after the handshake.
 * Valid until fut_tls_free. */
FUT_EXTERN const char *fut_tls_alpn(const struct fut_tls *t);

/** The negotiated version ("TLSv1.3", "TLSv1.2") and cipher suite
 * ("TLS_AES_256_GCM_SHA384", ...); static strings; "" before the
 * handshake. */
FUT_EXTERN const char *fut_tls_version(const struct fut_tls *t);
/** The negotiated cipher suite; see fut_tls_version. */
FUT_EXTERN const char *fut_tls_cipher(const struct fut_tls *t);

/** The peer's certificate (DER) after the handshake: copies up to 'cap'
 * bytes into 'buf' (may be NULL when cap is 0) and returns its full
 * length; 0 when the peer sent none (a client usually does not);
 * FUT_ENOMEM. */
FUT_EXTERN ssize_t fut_tls_peer_cert_der(const struct fut_tls *t, void *buf,
                                         size_t cap);

/** The subject of the peer's certificate, one line ("CN=localhost"),
 * into 'buf' ('cap' bytes, NUL-terminated, truncated to fit). Returns the
 * length written (0: no certificate). */
FUT_EXTERN size_t fut_tls_peer_subject(const struct fut_tls *t, char *buf,
                                       size_t cap);

/* ---------------------------------------------------- session resumption */

/** A TLS session that a client may resume (a ticket). Opaque. */
struct fut_tls_session;

/** Client: the session of 't' to resume later (NULL '*out' when there
 * is none yet). TLS 1.3 sends tickets after the handshake: take the
 * session after a read returned data (or at the end of the connection).
 * Returns 0 with '*out' set (free it with fut_tls_session_free), or
 * FUT_ENOMEM. Thread: as the stream. */
FUT_EXTERN int fut_tls_get_session(struct fut_tls *t,
                                   struct fut_tls_session **out);

/** Client: offers 's' (borrowed; may be freed after the call) for
 * resumption in the handshake of 't', which must not have started.
 * Returns 0, FUT_ETLS or FUT_EINVAL. */
FUT_EXTERN int fut_tls_set_session(struct fut_tls *t,
                                   const struct fut_tls_session *s);

/** Frees a session (NULL: nothing). Thread: any. */
FUT_EXTERN void fut_tls_session_free(struct fut_tls_session *s);

/** 1 when the handshake of 't' resumed a session (no full handshake). */
FUT_EXTERN int fut_tls_session_reused(const struct fut_tls *t);

/* -------------------------------------------------------------- futures */

/** fut_tls_handshake: runs the handshake to its end. Output: 'result' =
 * 0, or a code (FUT_ETLSCERT for a certificate the client refuses: an
 * unknown CA, a wrong name, an expired certificate; FUT_ETLS; the byte
 * stream's -errno; FUT_ETLSTRUNC when the peer closed in the middle).
 * Progresses on read or write readiness alike: it first finishes the
 * records queued to send, then reads the peer's when OpenSSL asks for
 * them. READY at once when the handshake is already done.
 * cancel-safe: dropped, the stream keeps its state (records received
 * stay in the stream, records queued to send are sent by the next
 * future); a new handshake future continues where it stopped. A read,
 * write or shutdown future also runs the handshake first when it has not
 * completed. Deadline: wrap it in fut_timeout. */
struct fut_tls_handshake {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    struct fut_tls *t;      /**< private */
    int result;             /**< output */
};
/** Initialises 'f' to run the handshake of 't'. */
FUT_EXTERN void fut_tls_handshake_init(struct fut_tls_handshake *f,
                                       struct fut_tls *t);

/** fut_tls_read: reads up to 'len' bytes of plaintext. Output: 'result'
 * = bytes read (> 0), 0 when the peer closed cleanly (close_notify, or
 * len == 0), FUT_ETLSTRUNC at end of stream without close_notify, or
 * another code (rules above).
 * cancel-safe: decrypted bytes are copied to 'buf' only by the poll that
 * returns READY; dropped earlier, every byte received stays in the stream
 * for the next read (ciphertext in the stream's input, plaintext inside
 * OpenSSL). A read also sends records queued by earlier futures as far as
 * the socket takes them now, without waiting for them (two peers that
 * both write before they read do not stall). */
struct fut_tls_read {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    struct fut_tls *t;      /**< private */
    void *buf;              /**< private */
    size_t len;             /**< private */
    ssize_t result;         /**< output */
};
/** Initialises 'f' to read up to 'len' bytes of 't' into 'buf' (borrowed
 * until READY or the drop). */
FUT_EXTERN void fut_tls_read_init(struct fut_tls_read *f, struct fut_tls *t,
                                  void *buf, size_t len);

/** The most plaintext a write future takes at once (one TLS record). */
#define FUT_TLS_WRITE_MAX 16384

/** fut_tls_write: hands up to 'len' bytes (at most FUT_TLS_WRITE_MAX) of
 * plaintext to the record layer. Output: 'result' = bytes taken (> 0; may
 * be fewer than asked), 0 when len == 0, or a code (rules above).
 * Before it takes anything it finishes sending the records queued by
 * earlier futures (backpressure: one write's records at most wait in the
 * stream); the records of the bytes it takes are then sent as far as the
 * socket allows without waiting, and the rest by the next future of the
 * stream (a write, read, flush or shutdown): call fut_tls_flush_init
 * when nothing else follows.
 * cancel-safe, all or nothing: the bytes are taken (encrypted) only in
 * the poll that returns READY, whole ('result' of them); a write dropped
 * before READY took none of them, so the caller writes the same bytes
 * again and the peer receives each byte exactly once. */
struct fut_tls_write {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    struct fut_tls *t;      /**< private */
    const void *buf;        /**< private */
    size_t len;             /**< private */
    ssize_t result;         /**< output */
};
/** Initialises 'f' to write up to 'len' bytes of 'buf' (borrowed until
 * READY or the drop) to 't'. */
FUT_EXTERN void fut_tls_write_init(struct fut_tls_write *f, struct fut_tls *t,
                                   const void *buf, size_t len);

/** fut_tls_flush: sends every record queued in the stream (after a TLS
 * failure too: OpenSSL's alert). Output: 'result' = 0 or a code (the
 * failure's, on a broken stream).
 * cancel-safe: what was sent stays sent, the rest stays queued (a send
 * in flight is resumed by the next future, never repeated). */
struct fut_tls_flush {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    struct fut_tls *t;      /**< private */
    int result;             /**< output */
};
/** Initialises 'f' to flush 't'. */
FUT_EXTERN void fut_tls_flush_init(struct fut_tls_flush *f,
                                   struct fut_tls *t);

/** fut_tls_shutdown: sends close_notify (after the records queued before
 * it) and waits until it is sent; it does not wait for the peer's (read
 * until 0 for that). The stream can still read, not write (a write
 * then completes with -EPIPE). Output: 'result' = 0 or a code. A stream
 * whose handshake has not completed sends nothing and completes with 0; a stream that failed (FUT_ETLS,
 * FUT_ETLSCERT) sends the alert OpenSSL queued and completes with the
 * failure's code.
 * cancel-safe: the alert is queued once, in the first poll; dropped
 * later, it is sent by the next future (or a new shutdown future). */
struct fut_tls_shutdown {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    struct fut_tls *t;      /**< private */
    int result;             /**< output */
};
/** Initialises 'f' to shut 't' down. */
FUT_EXTERN void fut_tls_shutdown_init(struct fut_tls_shutdown *f,
                                      struct fut_tls *t);

/* ------------------------------------------------------ fiber wrappers */

/** In a fiber (fiber.h): runs the handshake of 't'; returns its result,
 * or FUT_ECANCELED when the fiber was cancelled (the future dropped). */
#define fut_tls_handshake(t) fut_tls_handshake_at((t), __FILE__, __LINE__)
/** The function behind fut_tls_handshake(), with the call site. */
FUT_EXTERN int fut_tls_handshake_at(struct fut_tls *t, const char *file,
                                    int line);

/** In a fiber: fut_tls_read's result (bytes, 0 at a clean close, or a
 * code), or FUT_ECANCELED. */
#define fut_tls_read(t, buf, len)                                            \
    fut_tls_read_at((t), (buf), (len), __FILE__, __LINE__)
/** The function behind fut_tls_read(), with the call site. */
FUT_EXTERN ssize_t fut_tls_read_at(struct fut_tls *t, void *buf, size_t len,
                                   const char *file, int line);

/** In a fiber: writes all 'len' bytes (several write futures) and
 * flushes. Returns 'len' or a code (then part may have been taken:
 * loses-data when cancelled midway, as fut_write_all). */
#define fut_tls_write_all(t, buf, len)                                       \
    fut_tls_write_all_at((t), (buf), (len), __FILE__, __LINE__)
/** The function behind fut_tls_write_all(), with the call site. */
FUT_EXTERN ssize_t fut_tls_write_all_at(struct fut_tls *t, const void *buf,
                                        size_t len, const char *file,
                                        int line);

/** In a fiber: fut_tls_shutdown's result, or FUT_ECANCELED. */
#define fut_tls_shutdown(t) fut_tls_shutdown_at((t), __FILE__, __LINE__)
/** The function behind fut_tls_shutdown(), with the call site. */
FUT_EXTERN int fut_tls_shutdown_at(struct fut_tls *t, const char *file,
                                   int line);

FUT_END_DECLS

#endif /* FUT_TLS_H */
