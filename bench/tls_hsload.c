/* SPDX-License-Identifier: MIT */
/* tls_hsload: a TLS handshake load generator (plain C on OpenSSL, no fut),
 * the client of bench/run.sh's tls_handshakes rows (issue 33).
 *
 *   tls_hsload PORT PEER CONFIG [KEY]
 *   env: HS_CONNS (50) connections at a time, HS_SECS (5) seconds,
 *        HS_TLS (1.3 or 1.2; 1.3 by default), HS_TOTAL (0): when > 0,
 *        exactly that many connections, however long they take (for a
 *        count under callgrind: bench/callgrind_tls.sh)
 *
 * CONNS connections to 127.0.0.1:PORT at once, each one after the other:
 * a new TCP connection, a full handshake (a fresh SSL with no session set,
 * SSL_OP_NO_TICKET and no client session cache: nothing to resume; a
 * resumed handshake is counted as a failure), then close_notify, the
 * server's records read until it closes (its close_notify or EOF: the
 * TLS 1.3 session tickets a server sends after the handshake are read and
 * dropped), close. Non-blocking sockets on one epoll, one thread. New
 * connections start for SECS; the ones in flight then finish (10 s at
 * most), so that every handshake the server made is counted. The chain is
 * not verified (SSL_VERIFY_NONE; the server's CertificateVerify signature
 * is checked by the protocol all the same); SNI "localhost", ALPN
 * "http/1.1".
 *
 * Prints one line:
 *   RESULT bench=tls_handshakes peer=PEER config=CONFIG value=<handshakes/s>
 *     unit=hs/s ops=<handshakes> wall_ms=... conns=... key=KEY tls=TLSv1.3
 *     cipher=... failed=... client_cpu_ms=...
 * exit 1 when no handshake completed.
 *
 * Why not `openssl s_time -new`: it runs one connection at a time
 * (blocking), so the server idles during every round trip and the
 * client's own handshake work, and it cannot turn off the tickets'
 * reception; the rates it gives depend on the client's latency more than
 * on the server. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 4096

enum st { IDLE, CONNECTING, HANDSHAKE, CLOSING };

struct slot {
    int fd;
    enum st st;
    SSL *ssl;
};

static SSL_CTX *ctx;
static int ep, port;
static long done, failed;
static char cipher[64] = "-", version[16] = "-";

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void finish(struct slot *s, int ok)
{
    if (!ok)
        failed++;
    if (s->ssl)
        SSL_free(s->ssl);
    s->ssl = NULL;
    if (s->fd >= 0)
        close(s->fd); /* also leaves the epoll set */
    s->fd = -1;
    s->st = IDLE;
    ERR_clear_error();
}

static void want(struct slot *s, uint32_t ev)
{
    struct epoll_event e = {.events = ev, .data.ptr = s};
    if (epoll_ctl(ep, EPOLL_CTL_MOD, s->fd, &e) != 0)
        finish(s, 0);
}

/* Waits for what OpenSSL asked for after a call that returned r. 0: wait,
 * 1: done (EOF / close_notify / an error the caller decides on). */
static int wait_for(struct slot *s, int r)
{
    switch (SSL_get_error(s->ssl, r)) {
    case SSL_ERROR_WANT_READ:
        want(s, EPOLLIN);
        return 0;
    case SSL_ERROR_WANT_WRITE:
        want(s, EPOLLOUT);
        return 0;
    default:
        return 1;
    }
}

static void start(struct slot *s)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    s->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->fd < 0) {
        finish(s, 0);
        return;
    }
    int one = 1;
    setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct epoll_event e = {.events = EPOLLOUT, .data.ptr = s};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, s->fd, &e) != 0) {
        finish(s, 0);
        return;
    }
    s->st = CONNECTING;
    if (connect(s->fd, (struct sockaddr *)&a, sizeof a) != 0 &&
        errno != EINPROGRESS)
        finish(s, 0);
}

static void step(struct slot *s)
{
    int r;
    if (s->st == IDLE)
        return;
    if (s->st == CONNECTING) {
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err) {
            finish(s, 0);
            return;
        }
        s->ssl = SSL_new(ctx);
        if (!s->ssl || SSL_set_fd(s->ssl, s->fd) != 1 ||
            SSL_set_tlsext_host_name(s->ssl, "localhost") != 1) {
            finish(s, 0);
            return;
        }
        SSL_set_connect_state(s->ssl);
        s->st = HANDSHAKE;
    }
    if (s->st == HANDSHAKE) {
        r = SSL_do_handshake(s->ssl);
        if (r != 1) {
            if (wait_for(s, r))
                finish(s, 0);
            return;
        }
        if (SSL_session_reused(s->ssl)) {
            finish(s, 0);
            return;
        }
        if (!done) {
            snprintf(cipher, sizeof cipher, "%s",
                     SSL_get_cipher_name(s->ssl));
            snprintf(version, sizeof version, "%s", SSL_get_version(s->ssl));
        }
        done++;
        SSL_shutdown(s->ssl); /* our close_notify */
        s->st = CLOSING;
    }
    /* CLOSING: read (and drop) until the server's close_notify or EOF */
    char buf[4096];
    for (;;) {
        r = SSL_read(s->ssl, buf, sizeof buf);
        if (r > 0)
            continue;
        if (wait_for(s, r))
            finish(s, 1);
        return;
    }
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr,
                "usage: tls_hsload PORT PEER CONFIG [KEY]\n"
                "  env HS_CONNS (50), HS_SECS (5), HS_TLS (1.3|1.2)\n");
        return 2;
    }
    port = atoi(argv[1]);
    const char *key = argc > 4 ? argv[4] : "-";
    int conns = getenv("HS_CONNS") ? atoi(getenv("HS_CONNS")) : 50;
    double secs = getenv("HS_SECS") ? atof(getenv("HS_SECS")) : 5;
    int v12 = getenv("HS_TLS") && !strcmp(getenv("HS_TLS"), "1.2");
    long total = getenv("HS_TOTAL") ? atol(getenv("HS_TOTAL")) : 0,
         started = 0;
    if (total > 0)
        secs = 1e9;
    if (port <= 0 || conns <= 0 || conns > MAX_CONNS || secs <= 0 ||
        total < 0) {
        fprintf(stderr, "tls_hsload: bad port, HS_CONNS or HS_SECS\n");
        return 2;
    }
    static const unsigned char alpn[] = "\x08http/1.1";
    ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx)
        return 2;
    int ver = v12 ? TLS1_2_VERSION : TLS1_3_VERSION;
    SSL_CTX_set_min_proto_version(ctx, ver);
    SSL_CTX_set_max_proto_version(ctx, ver);
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    SSL_CTX_set_alpn_protos(ctx, alpn, sizeof alpn - 1);

    ep = epoll_create1(EPOLL_CLOEXEC);
    static struct slot slots[MAX_CONNS];
    static struct epoll_event evs[256];
    for (int i = 0; i < conns; i++)
        slots[i].fd = -1;
    double t0 = now(), stop = t0 + secs, t1 = t0;
    int running = 1;
    for (;;) {
        int busy = 0;
        for (int i = 0; i < conns; i++) {
            if (slots[i].st == IDLE && running &&
                (!total || started < total)) {
                start(&slots[i]);
                started++;
            }
            busy += slots[i].st != IDLE;
        }
        if (!busy)
            break;
        int n = epoll_wait(ep, evs, 256, 100);
        for (int i = 0; i < n; i++)
            step(evs[i].data.ptr);
        double t = now();
        if (running && t >= stop) {
            running = 0;
            t1 = t;
        }
        if (!running && t > t1 + 10) {
            for (int i = 0; i < conns; i++)
                if (slots[i].st != IDLE)
                    finish(&slots[i], 0);
            break;
        }
    }
    double wall = now() - t0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu_ms = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
                    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
    if (!done) {
        fprintf(stderr, "tls_hsload: no handshake completed (%ld failed)\n",
                failed);
        return 1;
    }
    printf(
        "RESULT bench=tls_handshakes peer=%s config=%s value=%.0f unit=hs/s "
        "ops=%ld wall_ms=%.0f conns=%d key=%s tls=%s cipher=%s failed=%ld "
        "client_cpu_ms=%.0f\n",
        argv[2], argv[3], (double)done / wall, done, wall * 1e3, conns, key,
        version, cipher, failed, cpu_ms);
    SSL_CTX_free(ctx);
    close(ep);
    return 0;
}
