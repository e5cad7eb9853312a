/* SPDX-License-Identifier: MIT */
/* TLS (libfut-tls, include/fut/tls.h) against real OpenSSL peers:
 * fut client <-> fut server in process (handshake with RSA and ECDSA
 * certificates, a 1 MiB echo, ALPN, close_notify vs an unclean close,
 * refused names and CAs, session resumption), a fut server against
 * `openssl s_client` and a fut client against `openssl s_server` (TLS 1.2
 * and 1.3, spawned here, bounded in time), plain HTTP and garbage sent
 * to a fut server, and the drop loops: read, write and handshake futures
 * dropped at their PENDING points and started again, the bytes checked
 * exactly. Certificates are made at start-up with `openssl req` in a
 * temporary directory. Every case ends with the leak check. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "fut/tls.h"
#include "io_helpers.h"
#include "tls_certs.h"
#include "tls/tls_internal.h"

extern char **environ;

/* ------------------------------------------------------------ certificates */

static char dir[64];
static char rsa_crt[128], rsa_key[128], ec_crt[128], ec_key[128];
static char big_crt[128], big_key[128];
static char exp_ca[128], exp_crt[128], exp_key[128];

static int make_certs(void)
{
    strcpy(dir, "/tmp/fut-tls-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(rsa_crt, sizeof rsa_crt, "%s/rsa.crt", dir);
    snprintf(rsa_key, sizeof rsa_key, "%s/rsa.key", dir);
    snprintf(ec_crt, sizeof ec_crt, "%s/ec.crt", dir);
    snprintf(ec_key, sizeof ec_key, "%s/ec.key", dir);
    snprintf(big_crt, sizeof big_crt, "%s/big.crt", dir);
    snprintf(big_key, sizeof big_key, "%s/big.key", dir);
    snprintf(exp_ca, sizeof exp_ca, "%s/exp-ca.crt", dir);
    snprintf(exp_crt, sizeof exp_crt, "%s/exp.crt", dir);
    snprintf(exp_key, sizeof exp_key, "%s/exp.key", dir);
    /* ~12 KiB of names: a server flight larger than a small socket
     * buffer, so the handshake's flush must wait. */
    static char extra[20000];
    size_t off = 0;
    for (int i = 0; i < 400 && off + 64 < sizeof extra; i++)
        off += (size_t)snprintf(extra + off, sizeof extra - off,
                                ",DNS:name-%03d.padding.example.invalid", i);
    if (tls_make_cert("-newkey rsa:2048", rsa_crt, rsa_key, NULL) ||
        tls_make_cert("-newkey ec -pkeyopt ec_paramgen_curve:P-256", ec_crt,
                      ec_key, NULL) ||
        tls_make_cert("-newkey rsa:2048", big_crt, big_key, extra) ||
        tls_make_expired_cert(dir, exp_ca, exp_crt, exp_key))
        return -1;
    return 0;
}

static void remove_certs(void)
{
    tls_remove_dir(dir);
}

static struct fut_tls_ctx *server_ctx(const char *crt, const char *key)
{
    struct fut_tls_ctx *c = NULL;
    ASSERT_EQ(fut_tls_ctx_new(FUT_TLS_SERVER, &c), 0);
    int r = fut_tls_ctx_use_cert_files(c, crt, key);
    ck_assert_msg(r == 0, "cert: %s", fut_tls_ctx_error_message(c));
    return c;
}

static struct fut_tls_ctx *client_ctx(const char *trust)
{
    struct fut_tls_ctx *c = NULL;
    ASSERT_EQ(fut_tls_ctx_new(FUT_TLS_CLIENT, &c), 0);
    if (trust) {
        int r = fut_tls_ctx_trust_file(c, trust);
        ck_assert_msg(r == 0, "trust: %s", fut_tls_ctx_error_message(c));
    }
    return c;
}

static unsigned char pat(size_t i)
{
    return (unsigned char)(i % 251 + (i / 251) % 3);
}

static struct fut_fiber_opts *big_stack(void)
{
    static struct fut_fiber_opts o;
    fut_fiber_opts_init(&o);
    o.stack_size = 512 * 1024;
    return &o;
}

/* --------------------------------------------- fut client <-> fut server */

/* One side of an in-process connection. */
struct side {
    struct fut_tls_ctx *ctx;
    struct fut_io *listener; /* server */
    int port;
    const char *name;              /* client: the name to check */
    size_t total;                  /* client: bytes to echo */
    int unclean;                   /* client: close without close_notify */
    struct fut_tls_session *offer; /* client: session to resume */
    struct fut_tls_session *got;   /* client: session to keep */
    /* results */
    int hs;
    ssize_t last; /* the result of the last read */
    int reused;
    char alpn[32], version[16], cipher[64], subject[128];
    char msg[512];
    ssize_t der;
};

static void record(struct side *s, struct fut_tls *t, int hs)
{
    s->hs = hs;
    snprintf(s->msg, sizeof s->msg, "%s", fut_tls_error_message(t));
    snprintf(s->alpn, sizeof s->alpn, "%s", fut_tls_alpn(t));
    snprintf(s->version, sizeof s->version, "%s", fut_tls_version(t));
    snprintf(s->cipher, sizeof s->cipher, "%s", fut_tls_cipher(t));
    fut_tls_peer_subject(t, s->subject, sizeof s->subject);
    s->der = fut_tls_peer_cert_der(t, NULL, 0);
    s->reused = fut_tls_session_reused(t);
}

/* Server: accept one connection, echo until the client closes, answer a
 * close_notify with one. */
static intptr_t echo_server(void *arg)
{
    struct side *s = arg;
    struct fut_io *io = NULL;
    if (fut_accept(s->listener, &io) != 0)
        return -1;
    struct fut_tls *t = NULL;
    ASSERT_EQ(fut_tls_new(s->ctx, io, NULL, &t), 0);
    int hs = fut_tls_handshake(t);
    record(s, t, hs);
    char *buf = malloc(20000); /* not static: fibers may move threads */
    s->last = hs;
    while (hs == 0) {
        ssize_t n = fut_tls_read(t, buf, 20000);
        s->last = n;
        if (n <= 0)
            break;
        if (fut_tls_write_all(t, buf, (size_t)n) != n)
            break;
    }
    /* a clean close answered; after a failure, the alert goes out */
    if (s->last <= 0)
        fut_tls_shutdown(t);
    if (s->last < 0)
        snprintf(s->msg, sizeof s->msg, "%s", fut_tls_error_message(t));
    free(buf);
    fut_tls_free(t);
    fut_io_close(io);
    return 0;
}

static intptr_t echo_client(void *arg)
{
    struct side *s = arg;
    struct sockaddr_storage ss;
    socklen_t len;
    fut_addr_parse("127.0.0.1", s->port, &ss, &len);
    struct fut_io *io = NULL;
    if (fut_connect((struct sockaddr *)&ss, len, -1, &io) != 0)
        return -1;
    struct fut_tls *t = NULL;
    ASSERT_EQ(fut_tls_new(s->ctx, io, s->name, &t), 0);
    if (s->offer)
        ASSERT_EQ(fut_tls_set_session(t, s->offer), 0);
    int hs = fut_tls_handshake(t);
    record(s, t, hs);
    intptr_t bad = 0;
    if (hs != 0) /* sends the alert OpenSSL queued */
        ASSERT_EQ(fut_tls_shutdown(t), hs);
    if (hs == 0) {
        size_t chunk = 65536;
        unsigned char *out = malloc(chunk), *in = malloc(chunk);
        for (size_t done = 0; done < s->total && !bad; done += chunk) {
            size_t n = s->total - done < chunk ? s->total - done : chunk;
            for (size_t i = 0; i < n; i++)
                out[i] = pat(done + i);
            if (fut_tls_write_all(t, out, n) != (ssize_t)n) {
                bad = -2;
                break;
            }
            for (size_t got = 0; got < n;) {
                ssize_t r = fut_tls_read(t, in + got, n - got);
                if (r <= 0) {
                    bad = -3;
                    break;
                }
                got += (size_t)r;
            }
            if (!bad && memcmp(in, out, n) != 0)
                bad = -4;
        }
        free(out);
        free(in);
        fut_tls_get_session(t, &s->got);
        if (!s->unclean) {
            ASSERT_EQ(fut_tls_shutdown(t), 0);
            char c;
            s->last = fut_tls_read(t, &c, 1);
        }
    }
    fut_tls_free(t);
    fut_io_close(io);
    return bad;
}

/* Runs one connection; returns the client fiber's value. */
static intptr_t run_pair(struct fut_runtime *rt, struct side *srv,
                         struct side *cli)
{
    srv->listener = listen_any(&cli->port);
    struct fut_join js, jc;
    ASSERT_EQ(fut_fiber_spawn(rt, echo_server, srv, big_stack(), &js), 0);
    ASSERT_EQ(fut_fiber_spawn(rt, echo_client, cli, big_stack(), &jc), 0);
    ASSERT_EQ(fut_block_on(rt, &jc.base), 0);
    ASSERT_EQ(jc.result, 0);
    intptr_t v = fut_fiber_value(&jc);
    fut_drop(&jc.base);
    ASSERT_EQ(fut_block_on(rt, &js.base), 0);
    ASSERT_EQ(js.result, 0);
    ASSERT_EQ(fut_fiber_value(&js), 0);
    fut_drop(&js.base);
    fut_io_close(srv->listener);
    return v;
}

/* A server on crt/key and a client trusting 'trust' (NULL: the system
 * store), checking "localhost"; sides_free releases what a run left. */
static void sides_init(struct side *srv, struct side *cli, const char *crt,
                       const char *key, const char *trust, size_t total)
{
    memset(srv, 0, sizeof *srv);
    memset(cli, 0, sizeof *cli);
    srv->ctx = server_ctx(crt, key);
    cli->ctx = client_ctx(trust);
    cli->name = "localhost";
    cli->total = total;
}

static void sides_free(struct side *srv, struct side *cli)
{
    fut_tls_session_free(cli->got);
    fut_tls_ctx_free(srv->ctx);
    fut_tls_ctx_free(cli->ctx);
}

static void echo_with(const char *crt, const char *key, size_t total)
{
    struct fut_runtime *rt = rt_make(0);
    struct side srv, cli;
    sides_init(&srv, &cli, crt, key, crt, total);
    intptr_t v = run_pair(rt, &srv, &cli);
    ck_assert_msg(cli.hs == 0, "client handshake: %s (%s)",
                  fut_strerror(cli.hs), cli.msg);
    ck_assert_msg(v == 0, "echo failed: %ld", (long)v);
    ck_assert_str_eq(cli.version, "TLSv1.3");
    ck_assert_msg(cli.cipher[0] != '\0', "no cipher");
    ck_assert_str_eq(cli.subject, "CN=localhost");
    ck_assert_msg(cli.der > 100, "peer DER %ld", (long)cli.der);
    ASSERT_EQ(srv.der, 0); /* no client certificate */
    /* close_notify both ways: each side read 0 */
    ASSERT_EQ(srv.last, 0);
    ASSERT_EQ(cli.last, 0);
    sides_free(&srv, &cli);
    fut_runtime_free(rt);
}

START_TEST(tls_echo_rsa)
{
    echo_with(rsa_crt, rsa_key, 1 << 20);
}
END_TEST

START_TEST(tls_echo_ecdsa)
{
    echo_with(ec_crt, ec_key, 1 << 20);
}
END_TEST

/* The certificate and key given as PEM text in memory. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s", path);
    static char buf[3][32768];
    static int which;
    char *b = buf[which++ % 3];
    *len = fread(b, 1, sizeof buf[0], f);
    fclose(f);
    return b;
}

START_TEST(tls_cert_pem_memory)
{
    struct fut_runtime *rt = rt_make(0);
    struct side srv, cli;
    memset(&srv, 0, sizeof srv);
    memset(&cli, 0, sizeof cli);
    size_t cl, kl;
    const char *crt = slurp(ec_crt, &cl), *key = slurp(ec_key, &kl);
    ASSERT_EQ(fut_tls_ctx_new(FUT_TLS_SERVER, &srv.ctx), 0);
    ASSERT_EQ(fut_tls_ctx_use_cert_pem(srv.ctx, crt, cl, key, kl), 0);
    /* a key that does not match is refused, with OpenSSL's words */
    size_t rl;
    const char *rkey = slurp(rsa_key, &rl);
    struct fut_tls_ctx *bad = NULL;
    ASSERT_EQ(fut_tls_ctx_new(FUT_TLS_SERVER, &bad), 0);
    ASSERT_EQ(fut_tls_ctx_use_cert_pem(bad, crt, cl, rkey, rl), FUT_ETLS);
    ck_assert_msg(fut_tls_ctx_error_message(bad)[0] != '\0', "no message");
    fut_tls_ctx_free(bad);
    ASSERT_EQ(fut_tls_ctx_new(FUT_TLS_CLIENT, &cli.ctx), 0);
    ASSERT_EQ(fut_tls_ctx_trust_pem(cli.ctx, crt, cl), 0);
    cli.name = "127.0.0.1"; /* an IP literal: checked as an IP */
    cli.total = 1000;
    ASSERT_EQ(run_pair(rt, &srv, &cli), 0);
    ASSERT_EQ(cli.hs, 0);
    fut_tls_session_free(cli.got);
    fut_tls_ctx_free(srv.ctx);
    fut_tls_ctx_free(cli.ctx);
    fut_runtime_free(rt);
}
END_TEST

/* ------------------------------------------------------------------ ALPN */

START_TEST(tls_alpn_select)
{
    struct fut_runtime *rt = rt_make(0);
    static const char *const offer[] = {"h2", "http/1.1"};
    static const char *const accept1[] = {"http/1.1", "h2"};
    static const char *const accept2[] = {"imap"};
    for (int round = 0; round < 2; round++) {
        struct side srv, cli;
        sides_init(&srv, &cli, rsa_crt, rsa_key, rsa_crt, 10);
        ASSERT_EQ(fut_tls_ctx_set_alpn(cli.ctx, offer, 2), 0);
        ASSERT_EQ(fut_tls_ctx_set_alpn(srv.ctx, round ? accept2 : accept1,
                                       round ? 1 : 2),
                  0);
        ASSERT_EQ(run_pair(rt, &srv, &cli), 0);
        /* the server's preference wins; no common name: no ALPN */
        ck_assert_str_eq(cli.alpn, round ? "" : "http/1.1");
        ck_assert_str_eq(srv.alpn, round ? "" : "http/1.1");
        sides_free(&srv, &cli);
    }
    fut_runtime_free(rt);
}
END_TEST

/* ----------------------------------------------------------------- close */

START_TEST(tls_close_clean_vs_unclean)
{
    struct fut_runtime *rt = rt_make(0);
    for (int unclean = 0; unclean < 2; unclean++) {
        struct side srv, cli;
        sides_init(&srv, &cli, rsa_crt, rsa_key, rsa_crt, 5000);
        cli.unclean = unclean;
        ASSERT_EQ(run_pair(rt, &srv, &cli), 0);
        if (unclean) {
            ck_assert_msg(srv.last == FUT_ETLSTRUNC, "server read: %s",
                          fut_strerror((int)srv.last));
            ck_assert_msg(strstr(srv.msg, "close_notify") != NULL, "%s",
                          srv.msg);
        } else {
            ASSERT_EQ(srv.last, 0);
            ASSERT_EQ(cli.last, 0);
        }
        sides_free(&srv, &cli);
    }
    fut_runtime_free(rt);
}
END_TEST

/* ---------------------------------------------------------- verification */

START_TEST(tls_verify_refuses)
{
    struct fut_runtime *rt = rt_make(0);
    /* 0: wrong name; 1: unknown CA (another certificate trusted);
     * 2: the system store (does not know ours); 3: verification off */
    for (int round = 0; round < 4; round++) {
        struct side srv, cli;
        sides_init(&srv, &cli, rsa_crt, rsa_key,
                   round == 1   ? ec_crt
                   : round == 2 ? NULL
                                : rsa_crt,
                   100);
        cli.name = round == 0 ? "wrong.example" : "localhost";
        if (round == 3) {
            ASSERT_EQ(fut_tls_ctx_set_verify(cli.ctx, 0), 0);
            cli.name = "wrong.example";
        }
        intptr_t v = run_pair(rt, &srv, &cli);
        if (round == 3) {
            ASSERT_EQ(cli.hs, 0);
            ASSERT_EQ(v, 0);
        } else {
            ck_assert_msg(cli.hs == FUT_ETLSCERT, "round %d: client %s (%s)",
                          round, fut_strerror(cli.hs), cli.msg);
            ck_assert_msg(strstr(cli.msg, "verify") != NULL, "%s", cli.msg);
            /* the server hears the client's alert */
            ck_assert_msg(srv.hs == FUT_ETLS, "round %d: server %s (%s)",
                          round, fut_strerror(srv.hs), srv.msg);
            ck_assert_msg(srv.msg[0] != '\0', "no server message");
        }
        sides_free(&srv, &cli);
    }
    fut_runtime_free(rt);
}
END_TEST

/* A certificate that expired in 2020, signed by a CA the client trusts:
 * refused for its dates alone, and the message says so. */
START_TEST(tls_verify_expired)
{
    struct fut_runtime *rt = rt_make(0);
    struct side srv, cli;
    sides_init(&srv, &cli, exp_crt, exp_key, exp_ca, 100);
    (void)run_pair(rt, &srv, &cli);
    ck_assert_msg(cli.hs == FUT_ETLSCERT, "client %s (%s)",
                  fut_strerror(cli.hs), cli.msg);
    ck_assert_msg(strstr(cli.msg, "expired") != NULL, "%s", cli.msg);
    ck_assert_msg(srv.hs == FUT_ETLS, "server %s (%s)", fut_strerror(srv.hs),
                  srv.msg);
    sides_free(&srv, &cli);
    /* the same chain with verification off: only the dates were wrong */
    sides_init(&srv, &cli, exp_crt, exp_key, exp_ca, 100);
    ASSERT_EQ(fut_tls_ctx_set_verify(cli.ctx, 0), 0);
    ASSERT_EQ(run_pair(rt, &srv, &cli), 0);
    ck_assert_msg(cli.hs == 0, "verification off: %s (%s)",
                  fut_strerror(cli.hs), cli.msg);
    sides_free(&srv, &cli);
    fut_runtime_free(rt);
}
END_TEST

/* ------------------------------------------------------------ resumption */

START_TEST(tls_session_resumption)
{
    struct fut_runtime *rt = rt_make(0);
    enum fut_tls_version vs[2] = {FUT_TLS_1_3, FUT_TLS_1_2};
    for (int i = 0; i < 2; i++) {
        struct side srv, cli;
        sides_init(&srv, &cli, rsa_crt, rsa_key, rsa_crt, 100);
        ASSERT_EQ(fut_tls_ctx_set_versions(cli.ctx, vs[i], vs[i]), 0);
        ASSERT_EQ(run_pair(rt, &srv, &cli), 0);
        ASSERT_EQ(cli.reused, 0);
        ck_assert_msg(cli.got != NULL, "no session to resume (%d)", i);
        struct fut_tls_session *s = cli.got;
        cli.got = NULL;
        cli.offer = s;
        /* An RSA server signs nothing to resume: no trip to the pool. */
        uintptr_t jobs = fut__load(&fut__tls_key_jobs, FUT__RELAXED);
        ASSERT_EQ(run_pair(rt, &srv, &cli), 0);
        ck_assert_msg(cli.reused == 1 && srv.reused == 1, "%s: not resumed",
                      i ? "TLS 1.2" : "TLS 1.3");
        jobs = fut__load(&fut__tls_key_jobs, FUT__RELAXED) - jobs;
        ck_assert_msg(jobs == 0, "%s: a resumption made %lu key jobs",
                      i ? "TLS 1.2" : "TLS 1.3", (unsigned long)jobs);
        ck_assert_str_eq(cli.version, i ? "TLSv1.2" : "TLSv1.3");
        fut_tls_session_free(s);
        sides_free(&srv, &cli);
    }
    fut_runtime_free(rt);
}
END_TEST

/* ------------------------------------------------ real OpenSSL programs */

/* Spawns argv with stdin from 'in_fd' (-1: /dev/null) and stdout +
 * stderr into the file 'out'. */
static pid_t spawn_tool(char *const argv[], int in_fd, const char *out)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (in_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
    else
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out,
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int r = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    ck_assert_msg(r == 0, "spawn %s: %s", argv[0], strerror(r));
    return pid;
}

/* Waits up to 'ms' for 'pid', then kills it. Returns its exit status
 * (-1: killed). */
static int reap(pid_t pid, int ms)
{
    int st;
    for (int i = 0; i < ms / 10; i++) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}

static void read_file(const char *path, char *buf, size_t cap)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* Server for s_client: one connection, read a line, answer "pong:"
 * and the line, close_notify. */
struct line_server {
    struct fut_tls_ctx *ctx;
    struct fut_io *listener;
    int hs;
    int reused; /* the handshake resumed a session */
    char version[16];
    char alpn[32];
    char msg[512];
};

static intptr_t line_server_fn(void *arg)
{
    struct line_server *s = arg;
    struct fut_io *io = NULL;
    struct fut_accept acc;
    fut_accept_init(&acc, s->listener);
    int r = fut_timeout_await(&acc, 20000 * MS);
    if (r != 0 || acc.result != 0)
        return -1;
    io = acc.conn;
    struct fut_tls *t = NULL;
    ASSERT_EQ(fut_tls_new(s->ctx, io, NULL, &t), 0);
    s->hs = fut_tls_handshake(t);
    snprintf(s->version, sizeof s->version, "%s", fut_tls_version(t));
    const char *alpn = fut_tls_alpn(t);
    snprintf(s->alpn, sizeof s->alpn, "%s", alpn ? alpn : "");
    s->reused = fut_tls_session_reused(t);
    snprintf(s->msg, sizeof s->msg, "%s", fut_tls_error_message(t));
    intptr_t v = -2;
    if (s->hs == 0) {
        char line[256];
        size_t got = 0;
        while (got < sizeof line - 1 && !memchr(line, '\n', got)) {
            ssize_t n = fut_tls_read(t, line + got, sizeof line - 1 - got);
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        char reply[300];
        int len = snprintf(reply, sizeof reply, "pong:%.*s", (int)got, line);
        if (fut_tls_write_all(t, reply, (size_t)len) == len &&
            fut_tls_shutdown(t) == 0)
            v = 0;
    }
    fut_tls_free(t);
    fut_io_close(io);
    return v;
}

/* One s_client connection to a line_server with the server context
 * 'ctx' (the caller's; its chain is 'crt') and s_client's extra flags
 * 'flags' (NULL-ended, at most 6); what s_client printed goes to 'text'.
 * Returns the server fiber's value. */
static intptr_t s_client_round(struct line_server *s, struct fut_tls_ctx *ctx,
                               const char *crt, const char *const *flags,
                               char *text, size_t cap)
{
    struct fut_runtime *rt = rt_make(0);
    memset(s, 0, sizeof *s);
    s->ctx = ctx;
    int port;
    s->listener = listen_any(&port);
    char connect[64], out[128];
    snprintf(connect, sizeof connect, "127.0.0.1:%d", port);
    snprintf(out, sizeof out, "%s/s_client.out", dir);
    int in[2];
    ASSERT_EQ(pipe(in), 0);
    char *argv[16] = {"openssl",     "s_client",  "-connect",
                      connect,       "-CAfile",   (char *)crt,
                      "-servername", "localhost", "-verify_return_error",
                      "-ign_eof"};
    int n = 10;
    for (int i = 0; flags[i] && i < 6; i++)
        argv[n++] = (char *)flags[i];
    argv[n] = NULL;
    pid_t pid = spawn_tool(argv, in[0], out);
    close(in[0]);
    ck_assert_int_eq(write(in[1], "hello\n", 6), 6);
    struct fut_join j;
    ASSERT_EQ(fut_fiber_spawn(rt, line_server_fn, s, big_stack(), &j), 0);
    ASSERT_EQ(fut_block_on(rt, &j.base), 0);
    intptr_t v = fut_fiber_value(&j);
    fut_drop(&j.base);
    close(in[1]);
    (void)reap(pid, 10000);
    read_file(out, text, cap);
    fut_io_close(s->listener);
    fut_runtime_free(rt);
    return v;
}

START_TEST(tls_server_vs_s_client)
{
    const char *vflag[2] = {"-tls1_2", "-tls1_3"};
    const char *vname[2] = {"TLSv1.2", "TLSv1.3"};
    for (int i = 0; i < 2; i++) {
        struct line_server s;
        const char *flags[] = {vflag[i], NULL};
        char text[16384];
        struct fut_tls_ctx *ctx = server_ctx(ec_crt, ec_key);
        intptr_t v =
            s_client_round(&s, ctx, ec_crt, flags, text, sizeof text);
        fut_tls_ctx_free(ctx);
        ck_assert_msg(s.hs == 0, "handshake: %s (%s)", fut_strerror(s.hs),
                      s.msg);
        ck_assert_msg(v == 0, "server: %ld", (long)v);
        ck_assert_str_eq(s.version, vname[i]);
        ck_assert_msg(strstr(text, "pong:hello") != NULL, "s_client said: %s",
                      text);
        ck_assert_msg(strstr(text, "Verify return code: 0") != NULL,
                      "s_client did not verify us: %s", text);
    }
}
END_TEST

/* s_client offers ALPN "h2,http/1.1" to a server that speaks http/1.1
 * (both sides say http/1.1), saves its session (-sess_out) and resumes
 * it on a second connection to the same context (-sess_in): s_client
 * says "Reused", the server's stream says resumed; TLS 1.3 and 1.2. */
START_TEST(tls_s_client_alpn_resume)
{
    const char *vflag[2] = {"-tls1_3", "-tls1_2"};
    for (int i = 0; i < 2; i++) {
        static const char *const protos[] = {"http/1.1"};
        struct fut_tls_ctx *ctx = server_ctx(ec_crt, ec_key);
        ASSERT_EQ(fut_tls_ctx_set_alpn(ctx, protos, 1), 0);
        char sess[128];
        snprintf(sess, sizeof sess, "%s/s_client.sess", dir);
        for (int round = 0; round < 2; round++) {
            struct line_server s;
            const char *flags[] = {
                vflag[i],      "-alpn",
                "h2,http/1.1", round ? "-sess_in" : "-sess_out",
                sess,          NULL};
            static char text[16384];
            intptr_t v =
                s_client_round(&s, ctx, ec_crt, flags, text, sizeof text);
            ck_assert_msg(s.hs == 0 && v == 0, "%s round %d: %s (%s)",
                          vflag[i], round, fut_strerror(s.hs), s.msg);
            ck_assert_str_eq(s.alpn, "http/1.1");
            ck_assert_msg(strstr(text, "ALPN protocol: http/1.1") != NULL,
                          "s_client said: %s", text);
            ck_assert_msg(s.reused == round, "%s round %d: reused %d",
                          vflag[i], round, s.reused);
            ck_assert_msg(strstr(text, round ? "Reused," : "New,") != NULL,
                          "%s round %d: s_client said: %s", vflag[i], round,
                          text);
        }
        unlink(sess);
        fut_tls_ctx_free(ctx);
    }
}
END_TEST

/* A port nobody listens on right now. */
static int free_port(void)
{
    int port;
    struct fut_io *l = listen_any(&port);
    fut_io_close(l);
    return port;
}

struct http_client {
    struct fut_tls_ctx *ctx;
    int port;
    int hs;
    ssize_t last;
    char version[16];
    char resp[8192];
    size_t got;
    char msg[512];
};

static intptr_t http_client_fn(void *arg)
{
    struct http_client *c = arg;
    struct sockaddr_storage ss;
    socklen_t len;
    fut_addr_parse("127.0.0.1", c->port, &ss, &len);
    struct fut_io *io = NULL;
    /* s_server is starting: try for up to 10 s */
    for (int i = 0; i < 200; i++) {
        if (fut_connect((struct sockaddr *)&ss, len, -1, &io) == 0)
            break;
        io = NULL;
        fut_sleep(50 * MS);
    }
    if (!io)
        return -1;
    struct fut_tls *t = NULL;
    ASSERT_EQ(fut_tls_new(c->ctx, io, "localhost", &t), 0);
    c->hs = fut_tls_handshake(t);
    snprintf(c->version, sizeof c->version, "%s", fut_tls_version(t));
    if (c->hs == 0) {
        static const char req[] = "GET / HTTP/1.0\r\n\r\n";
        fut_tls_write_all(t, req, sizeof req - 1);
        for (;;) {
            ssize_t n = fut_tls_read(t, c->resp + c->got,
                                     sizeof c->resp - 1 - c->got);
            c->last = n;
            if (n <= 0)
                break;
            c->got += (size_t)n;
            if (c->got == sizeof c->resp - 1)
                break;
        }
        c->resp[c->got] = '\0';
    }
    snprintf(c->msg, sizeof c->msg, "%s", fut_tls_error_message(t));
    fut_tls_free(t);
    fut_io_close(io);
    return 0;
}

START_TEST(tls_client_vs_s_server)
{
    const char *vflag[2] = {"-tls1_2", "-tls1_3"};
    const char *vname[2] = {"TLSv1.2", "TLSv1.3"};
    for (int i = 0; i < 2; i++) {
        struct fut_runtime *rt = rt_make(0);
        struct http_client c;
        memset(&c, 0, sizeof c);
        c.ctx = client_ctx(rsa_crt);
        c.port = free_port();
        char port[16], out[128];
        snprintf(port, sizeof port, "%d", c.port);
        snprintf(out, sizeof out, "%s/s_server.out", dir);
        char *argv[] = {"openssl", "s_server", "-accept",
                        port,      "-cert",    rsa_crt,
                        "-key",    rsa_key,    (char *)vflag[i],
                        "-www",    "-naccept", "1",
                        NULL};
        pid_t pid = spawn_tool(argv, -1, out);
        struct fut_join j;
        ASSERT_EQ(fut_fiber_spawn(rt, http_client_fn, &c, big_stack(), &j),
                  0);
        ASSERT_EQ(fut_block_on(rt, &j.base), 0);
        intptr_t v = fut_fiber_value(&j);
        fut_drop(&j.base);
        int st = reap(pid, 5000);
        char text[4096];
        read_file(out, text, sizeof text);
        ck_assert_msg(v == 0, "no connection to s_server: %s", text);
        ck_assert_msg(c.hs == 0, "handshake: %s (%s)", fut_strerror(c.hs),
                      c.msg);
        ck_assert_str_eq(c.version, vname[i]);
        ck_assert_msg(strncmp(c.resp, "HTTP/1.0 200 ok", 15) == 0,
                      "response: %s", c.resp);
        /* s_server -www closes with close_notify */
        ck_assert_msg(c.last == 0, "last read: %s (%s)",
                      fut_strerror((int)c.last), c.msg);
        (void)st;
        fut_tls_ctx_free(c.ctx);
        fut_runtime_free(rt);
    }
}
END_TEST

/* ------------------------------------------------------------ bad input */

struct raw_client {
    int port;
    const void *bytes;
    size_t len;
};

static intptr_t raw_client_fn(void *arg)
{
    struct raw_client *c = arg;
    struct sockaddr_storage ss;
    socklen_t len;
    fut_addr_parse("127.0.0.1", c->port, &ss, &len);
    struct fut_io *io = NULL;
    if (fut_connect((struct sockaddr *)&ss, len, -1, &io) != 0)
        return -1;
    fut_write_all(io, c->bytes, c->len);
    fut_io_shutdown(io, SHUT_WR); /* EOF: a server waiting for more ends */
    char buf[4096];
    while (fut_read(io, buf, sizeof buf) > 0) {
    }
    fut_io_close(io);
    return 0;
}

START_TEST(tls_bad_input)
{
    static const char http[] = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
    static unsigned char junk[4096];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (unsigned char)(i * 7919 + 13);
    junk[0] = 0x16; /* a handshake record type, then nonsense */
    for (int round = 0; round < 3; round++) {
        struct fut_runtime *rt = rt_make(0);
        struct side srv;
        memset(&srv, 0, sizeof srv);
        srv.ctx = server_ctx(rsa_crt, rsa_key);
        struct raw_client c;
        srv.listener = listen_any(&c.port);
        c.bytes = round == 0 ? (const void *)http : junk;
        c.len = round == 0 ? sizeof http - 1 : round == 1 ? sizeof junk : 3;
        struct fut_join js, jc;
        ASSERT_EQ(fut_fiber_spawn(rt, echo_server, &srv, big_stack(), &js),
                  0);
        ASSERT_EQ(fut_fiber_spawn(rt, raw_client_fn, &c, big_stack(), &jc),
                  0);
        ASSERT_EQ(fut_block_on(rt, &js.base), 0);
        fut_drop(&js.base);
        ASSERT_EQ(fut_block_on(rt, &jc.base), 0);
        fut_drop(&jc.base);
        if (round < 2) {
            ck_assert_msg(srv.hs == FUT_ETLS, "round %d: %s (%s)", round,
                          fut_strerror(srv.hs), srv.msg);
            ck_assert_msg(srv.msg[0] != '\0', "no message");
        } else {
            /* three bytes, then EOF: cut short, not a TLS error */
            ck_assert_msg(srv.hs == FUT_ETLSTRUNC, "round 2: %s (%s)",
                          fut_strerror(srv.hs), srv.msg);
        }
        fut_io_close(srv.listener);
        fut_tls_ctx_free(srv.ctx);
        fut_runtime_free(rt);
    }
}
END_TEST

/* One server, three connections at once: a peer that sends a ClientHello
 * and then stops (the server's handshake deadline, fut_timeout, ends it),
 * a ClientHello record cut in half and EOF (a truncated record), and a
 * good client served while the first still waits. */
enum { STALL, TRUNC, GOOD, NCONN };

struct multi {
    struct fut_tls_ctx *sctx, *cctx;
    struct fut_io *listener;
    int port;
    int64_t deadline_ns; /* the server's handshake deadline */
    int hs[NCONN];       /* per connection, in accept order */
    int done[NCONN];
    char msg[NCONN][256];
    int good_while_stalled; /* GOOD finished before STALL ended */
    int64_t stall_ns;       /* how long the staller was held */
};

struct multi_conn {
    struct multi *m;
    int i;
    struct fut_io *io;
};

static intptr_t multi_conn_fn(void *arg)
{
    struct multi_conn *c = arg;
    struct multi *m = c->m;
    struct fut_tls *t = NULL;
    ASSERT_EQ(fut_tls_new(m->sctx, c->io, NULL, &t), 0);
    struct fut_tls_handshake hs;
    fut_tls_handshake_init(&hs, t);
    int r = fut_timeout_await(&hs, m->deadline_ns);
    if (r == 0)
        r = hs.result;
    if (r == 0) { /* one line back, then close_notify */
        char buf[64];
        ssize_t n = fut_tls_read(t, buf, sizeof buf);
        if (n > 0 && fut_tls_write_all(t, buf, (size_t)n) != n)
            r = -1;
        fut_tls_shutdown(t);
    } else if (r != FUT_ETIMEDOUT) {
        fut_tls_shutdown(t); /* the alert, if any */
    }
    m->hs[c->i] = r;
    snprintf(m->msg[c->i], sizeof m->msg[c->i], "%s",
             fut_tls_error_message(t));
    fut_tls_free(t);
    fut_io_close(c->io);
    m->done[c->i] = 1;
    return 0;
}

static intptr_t multi_server_fn(void *arg)
{
    struct multi *m = arg;
    struct multi_conn c[NCONN];
    struct fut_join j[NCONN];
    for (int i = 0; i < NCONN; i++) {
        c[i].m = m;
        c[i].i = i;
        if (fut_accept(m->listener, &c[i].io) != 0)
            return -1;
        ASSERT_EQ(fut_fiber_spawn(fut_runtime_current(), multi_conn_fn, &c[i],
                                  big_stack(), &j[i]),
                  0);
    }
    for (int i = 0; i < NCONN; i++) {
        fut_await(&j[i]);
        fut_drop(&j[i].base);
    }
    return 0;
}

static struct fut_io *multi_connect(int port)
{
    struct sockaddr_storage ss;
    socklen_t len;
    fut_addr_parse("127.0.0.1", port, &ss, &len);
    struct fut_io *io = NULL;
    ASSERT_EQ(fut_connect((struct sockaddr *)&ss, len, -1, &io), 0);
    return io;
}

/* A real ClientHello, from an OpenSSL client over memory BIOs. */
static size_t client_hello(unsigned char *buf, size_t cap)
{
    SSL_CTX *sc = SSL_CTX_new(TLS_client_method());
    SSL *ssl = SSL_new(sc);
    BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
    ck_assert(sc && ssl && rb && wb);
    SSL_set_bio(ssl, rb, wb);
    SSL_set_connect_state(ssl);
    ASSERT_EQ(SSL_do_handshake(ssl), -1); /* wants the server's answer */
    int n = BIO_read(wb, buf, (int)cap);
    SSL_free(ssl);
    SSL_CTX_free(sc);
    ck_assert_msg(n > 100, "ClientHello %d bytes", n);
    return (size_t)n;
}

static intptr_t multi_clients_fn(void *arg)
{
    struct multi *m = arg;
    unsigned char *hello = malloc(4096), *buf = malloc(20000);
    size_t hlen = client_hello(hello, 4096);
    /* STALL: the ClientHello, the server's first flight read, then
     * nothing. */
    int64_t t0 = fut_now_ns();
    struct fut_io *stall = multi_connect(m->port);
    ASSERT_EQ(fut_write_all(stall, hello, hlen), (ssize_t)hlen);
    ck_assert_msg(fut_read(stall, buf, 20000) > 0, "no ServerHello");
    /* TRUNC: half the ClientHello record, then EOF. */
    struct fut_io *trunc = multi_connect(m->port);
    ASSERT_EQ(fut_write_all(trunc, hello, hlen / 2), (ssize_t)(hlen / 2));
    fut_io_shutdown(trunc, SHUT_WR);
    while (fut_read(trunc, buf, 20000) > 0) {
    }
    fut_io_close(trunc);
    /* GOOD: a whole exchange while STALL is held. */
    struct fut_io *io = multi_connect(m->port);
    struct fut_tls *t = NULL;
    ASSERT_EQ(fut_tls_new(m->cctx, io, "localhost", &t), 0);
    intptr_t bad = 0;
    if (fut_tls_handshake(t) != 0 || fut_tls_write_all(t, "ping\n", 5) != 5 ||
        fut_tls_read(t, buf, 20000) != 5 || memcmp(buf, "ping\n", 5) != 0 ||
        fut_tls_shutdown(t) != 0)
        bad = -2;
    fut_tls_free(t);
    fut_io_close(io);
    m->good_while_stalled = !m->done[STALL];
    /* STALL: the server closes it at its deadline. */
    while (fut_read(stall, buf, 20000) > 0) {
    }
    m->stall_ns = fut_now_ns() - t0;
    fut_io_close(stall);
    free(hello);
    free(buf);
    return bad;
}

START_TEST(tls_bad_input_serves_others)
{
    struct fut_runtime *rt = rt_make(0);
    struct multi m;
    memset(&m, 0, sizeof m);
    m.sctx = server_ctx(ec_crt, ec_key);
    m.cctx = client_ctx(ec_crt);
    m.deadline_ns = 2000 * MS;
    m.listener = listen_any(&m.port);
    struct fut_join js, jc;
    ASSERT_EQ(fut_fiber_spawn(rt, multi_server_fn, &m, big_stack(), &js), 0);
    ASSERT_EQ(fut_fiber_spawn(rt, multi_clients_fn, &m, big_stack(), &jc), 0);
    ASSERT_EQ(fut_block_on(rt, &jc.base), 0);
    ASSERT_EQ(fut_fiber_value(&jc), 0);
    fut_drop(&jc.base);
    ASSERT_EQ(fut_block_on(rt, &js.base), 0);
    ASSERT_EQ(fut_fiber_value(&js), 0);
    fut_drop(&js.base);
    ck_assert_msg(m.hs[STALL] == FUT_ETIMEDOUT, "stalled: %s (%s)",
                  fut_strerror(m.hs[STALL]), m.msg[STALL]);
    ck_assert_msg(m.hs[TRUNC] == FUT_ETLSTRUNC, "truncated: %s (%s)",
                  fut_strerror(m.hs[TRUNC]), m.msg[TRUNC]);
    ck_assert_msg(m.hs[GOOD] == 0, "good: %s (%s)", fut_strerror(m.hs[GOOD]),
                  m.msg[GOOD]);
    ck_assert_msg(m.good_while_stalled, "the good client waited for the "
                                        "stalled one");
    /* held for the deadline, and closed soon after it */
    ck_assert_msg(m.stall_ns >= m.deadline_ns - 50 * MS &&
                      m.stall_ns < m.deadline_ns + 3000 * MS,
                  "stalled peer held %lld ms", (long long)(m.stall_ns / MS));
    fut_io_close(m.listener);
    fut_tls_ctx_free(m.sctx);
    fut_tls_ctx_free(m.cctx);
    fut_runtime_free(rt);
}
END_TEST

/* ---------------------------------------------------------- drop loops */

enum { D_HS, D_READ, D_WRITE };

/* Runs a handshake, a read-everything or a write-everything on one
 * stream through a sequence of futures: at the PENDING numbered
 * 'drop_at' (1-based; -1: at every PENDING but the first after a restart)
 * the future is dropped and a new one continues. Reads check every byte
 * against pat(); writes restart at 'done' (a dropped write took
 * nothing). Output: 'result' = 0 or a code / -1000 on a wrong byte. */
struct dropper {
    struct fut_future base;
    struct fut_tls *t;
    int kind;
    union {
        struct fut_tls_handshake hs;
        struct fut_tls_read rd;
        struct fut_tls_write wr;
    } u;
    int live, fresh;
    int stop_at_total;       /* a read ends at 'total', not at close_notify */
    struct fut_tls_flush fl; /* a write run ends with a flush */
    int flushing;
    long pendings, drop_at, drops, drops_in_flush;
    size_t total, done;
    unsigned char buf[3000];
    int result;
};

static struct fut_future *dropper_op(struct dropper *d)
{
    return d->kind == D_HS     ? &d->u.hs.base
           : d->kind == D_READ ? &d->u.rd.base
                               : &d->u.wr.base;
}

static int dropper_poll(struct fut_future *fb, struct fut_context *cx)
{
    struct dropper *d = (struct dropper *)fb;
    for (;;) {
        if (d->flushing) { /* a write run's end: its last records out */
            if (fut_poll(&d->fl.base, cx) == FUT_PENDING)
                return FUT_PENDING;
            fut_drop(&d->fl.base);
            d->flushing = 0;
            d->result = d->fl.result;
            return FUT_READY;
        }
        if (!d->live) {
            if (d->kind == D_HS) {
                fut_tls_handshake_init(&d->u.hs, d->t);
            } else if (d->kind == D_READ) {
                /* odd sizes: reads end inside records */
                fut_tls_read_init(&d->u.rd, d->t, d->buf,
                                  1000 + d->done % 1999);
            } else {
                size_t n = d->total - d->done;
                if (n > sizeof d->buf)
                    n = sizeof d->buf;
                for (size_t i = 0; i < n; i++)
                    d->buf[i] = pat(d->done + i);
                fut_tls_write_init(&d->u.wr, d->t, d->buf, n);
            }
            d->live = 1;
        }
        struct fut_future *op = dropper_op(d);
        if (fut_poll(op, cx) == FUT_PENDING) {
            if (d->fresh) {
                d->fresh = 0;
                return FUT_PENDING;
            }
            d->pendings++;
            if (d->drop_at == -1 || d->pendings == d->drop_at) {
                d->drops++;
                if (d->t->wr_busy)
                    d->drops_in_flush++;
                fut_drop(op);
                d->live = 0;
                d->fresh = 1;
                continue;
            }
            return FUT_PENDING;
        }
        d->fresh = 0;
        fut_drop(op);
        d->live = 0;
        ssize_t r = d->kind == D_HS     ? d->u.hs.result
                    : d->kind == D_READ ? d->u.rd.result
                                        : d->u.wr.result;
        if (r < 0 || d->kind == D_HS) {
            d->result = (int)r;
            return FUT_READY;
        }
        if (d->kind == D_READ) {
            if (r == 0) {
                d->result = d->done == d->total ? 0 : -1001;
                return FUT_READY;
            }
            for (ssize_t i = 0; i < r; i++)
                if (d->buf[i] != pat(d->done + (size_t)i)) {
                    d->result = -1000;
                    return FUT_READY;
                }
        }
        d->done += (size_t)r;
        if (d->kind == D_WRITE && d->done == d->total) {
            fut_tls_flush_init(&d->fl, d->t);
            d->flushing = 1;
            continue;
        }
        if (d->stop_at_total && d->done == d->total) {
            d->result = 0;
            return FUT_READY;
        }
    }
}

static void dropper_drop(struct fut_future *fb)
{
    struct dropper *d = (struct dropper *)fb;
    if (d->live)
        fut_drop(dropper_op(d));
    if (d->flushing)
        fut_drop(&d->fl.base);
    d->live = d->flushing = 0;
}

static const struct fut_future_vtable dropper_vt = {
    dropper_poll, dropper_drop, "dropper", NULL};

static void dropper_init(struct dropper *d, struct fut_tls *t, int kind,
                         long drop_at, size_t total)
{
    memset(d, 0, sizeof *d);
    fut_future_init(&d->base, &dropper_vt);
    d->t = t;
    d->kind = kind;
    d->drop_at = drop_at;
    d->total = total;
}

/* The peer of a drop run: its own stream, on a fiber. */
struct peer {
    struct fut_tls *t;
    int kind; /* what the peer does: D_READ or D_WRITE everything, or
                 D_HS: handshake, then read "ping" */
    size_t total;
    intptr_t result;
};

static intptr_t peer_fn(void *arg)
{
    struct peer *p = arg;
    int hs = fut_tls_handshake(p->t);
    if (hs != 0)
        return hs;
    if (p->kind == D_HS) {
        char b[4];
        size_t got = 0;
        while (got < 4) {
            ssize_t n = fut_tls_read(p->t, b + got, 4 - got);
            if (n <= 0)
                return n < 0 ? n : -1001;
            got += (size_t)n;
        }
        return memcmp(b, "ping", 4) == 0 ? 0 : -1000;
    }
    if (p->kind == D_WRITE) {
        unsigned char *b = malloc(p->total);
        for (size_t i = 0; i < p->total; i++)
            b[i] = pat(i);
        ssize_t n = fut_tls_write_all(p->t, b, p->total);
        free(b);
        if (n != (ssize_t)p->total)
            return n < 0 ? n : -1002;
        return fut_tls_shutdown(p->t);
    }
    /* read everything, byte-exact, until close_notify */
    unsigned char *b = malloc(7000);
    size_t done = 0;
    intptr_t v;
    for (;;) {
        ssize_t n = fut_tls_read(p->t, b, 7000);
        if (n <= 0) {
            v = n < 0 ? n : done == p->total ? 0 : -1001;
            break;
        }
        for (ssize_t i = 0; i < n; i++)
            if (b[i] != pat(done + (size_t)i))
                n = -1;
        if (n < 0) {
            v = -1000;
            break;
        }
        done += (size_t)n;
    }
    free(b);
    return v;
}

/* Drop points tried per loop (each a runtime and a handshake): fewer
 * under the sanitizers, which run them several times slower. */
#if defined(FUT_TEST_TSAN) || defined(FUT_TEST_ASAN)
#define DROP_RUNS 12
#else
#define DROP_RUNS 40
#endif

struct drop_stats {
    long pendings, drops, drops_in_flush;
};

/* A connected Unix socket pair as two fut_io, 4 KiB send buffers (so
 * that sends wait). */
static void small_pair(struct fut_io **a, struct fut_io **b)
{
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    int small = 4096;
    for (int i = 0; i < 2; i++)
        ASSERT_EQ(
            setsockopt(sv[i], SOL_SOCKET, SO_SNDBUF, &small, sizeof small),
            0);
    ASSERT_EQ(fut_io_from_fd(sv[0], a), 0);
    ASSERT_EQ(fut_io_from_fd(sv[1], b), 0);
}

/* Two TLS streams over a small_pair: 'ts' (server, crt/key) on 'a',
 * 'tc' (client, trusting crt, checking "localhost") on 'b'. */
struct tls_pair {
    struct fut_io *a, *b;
    struct fut_tls_ctx *sc, *cc;
    struct fut_tls *ts, *tc;
};

static void pair_open(struct tls_pair *p, const char *crt, const char *key)
{
    small_pair(&p->a, &p->b);
    p->sc = server_ctx(crt, key);
    p->cc = client_ctx(crt);
    ASSERT_EQ(fut_tls_new(p->sc, p->a, NULL, &p->ts), 0);
    ASSERT_EQ(fut_tls_new(p->cc, p->b, "localhost", &p->tc), 0);
}

static void pair_close(struct tls_pair *p)
{
    fut_tls_free(p->ts);
    fut_tls_free(p->tc);
    fut_io_close(p->a);
    fut_io_close(p->b);
    fut_tls_ctx_free(p->sc);
    fut_tls_ctx_free(p->cc);
}

/* One run: a Unix socket pair, streams on both ends (the server's send
 * buffer small, so flushes wait), the dropper on 'mine' ('kind'), the
 * peer fiber on the other. Returns the dropper's result; checks the
 * peer's and the leak count. */
static int drop_run(int kind, long drop_at, size_t total,
                    struct drop_stats *st)
{
    long live0 = fut_alloc_live();
    struct fut_runtime *rt = rt_make(0);
    struct tls_pair pr;
    pair_open(&pr, kind == D_HS ? big_crt : rsa_crt,
              kind == D_HS ? big_key : rsa_key);
    struct fut_tls *ts = pr.ts, *tc = pr.tc;
    /* the dropper is the server in the handshake run (its flight is
     * the big one), the client otherwise */
    int me_server = kind == D_HS;
    struct fut_tls *mine = me_server ? ts : tc;
    struct peer p;
    memset(&p, 0, sizeof p);
    p.t = me_server ? tc : ts;
    p.kind = kind == D_HS ? D_HS : kind == D_READ ? D_WRITE : D_READ;
    p.total = total;
    struct fut_join j;
    ASSERT_EQ(fut_fiber_spawn(rt, peer_fn, &p, big_stack(), &j), 0);
    struct dropper *d = malloc(sizeof *d);
    if (kind != D_HS) {
        struct fut_tls_handshake h;
        fut_tls_handshake_init(&h, mine);
        ASSERT_EQ(fut_block_on(rt, &h.base), 0);
        ASSERT_EQ(h.result, 0);
        fut_drop(&h.base);
    }
    dropper_init(d, mine, kind, drop_at, total);
    struct fut_timeout to;
    fut_timeout_init(&to, &d->base, fut_now_ns() + 20000 * MS);
    ASSERT_EQ(fut_block_on(rt, &to.base), 0);
    ck_assert_msg(to.result == 0, "drop_at %ld: hung", drop_at);
    fut_drop(&to.base);
    int result = d->result;
    if (result == 0 && kind == D_HS) {
        /* the stream still works: one message to the peer */
        struct fut_tls_write w;
        fut_tls_write_init(&w, mine, "ping", 4);
        ASSERT_EQ(fut_block_on(rt, &w.base), 0);
        ASSERT_EQ(w.result, 4);
        fut_drop(&w.base);
    }
    if (result == 0 && kind == D_WRITE) {
        struct fut_tls_shutdown s;
        fut_tls_shutdown_init(&s, mine);
        ASSERT_EQ(fut_block_on(rt, &s.base), 0);
        ASSERT_EQ(s.result, 0);
        fut_drop(&s.base);
    }
    if (result == 0) {
        struct fut_tls_flush f;
        fut_tls_flush_init(&f, mine);
        ASSERT_EQ(fut_block_on(rt, &f.base), 0);
        fut_drop(&f.base);
        ASSERT_EQ(fut_block_on(rt, &j.base), 0);
        ASSERT_EQ(j.result, 0);
        p.result = fut_fiber_value(&j);
        ck_assert_msg(p.result == 0, "drop_at %ld: peer %ld (%s)", drop_at,
                      (long)p.result, fut_tls_error_message(p.t));
    }
    fut_drop(&j.base);
    st->pendings = d->pendings;
    st->drops += d->drops;
    st->drops_in_flush += d->drops_in_flush;
    free(d);
    pair_close(&pr);
    fut_runtime_free(rt);
    ck_assert_msg(fut_alloc_live() == live0, "drop_at %ld: leak (%ld)",
                  drop_at, fut_alloc_live() - live0);
    return result;
}

/* Every PENDING of a run to completion, one run per k, plus a run that
 * drops at every PENDING. */
static void drop_loop(int kind, size_t total, int need_flush_drops)
{
    struct drop_stats st;
    memset(&st, 0, sizeof st);
    int r = drop_run(kind, 0, total, &st);
    ck_assert_msg(r == 0, "run to completion: %d", r);
    long n = st.pendings;
    if (n == 0 && fut_test_rt_is_mt())
        return; /* the peer answered every time before we had to wait */
    ck_assert_msg(n > 0, "no PENDING to drop at");
    long step = n > DROP_RUNS ? n / DROP_RUNS : 1;
    for (long k = 1; k <= n; k += step) {
        r = drop_run(kind, k, total, &st);
        ck_assert_msg(r == 0, "dropped at PENDING %ld of %ld: %d (%s)", k, n,
                      r, fut_strerror(r));
    }
    r = drop_run(kind, -1, total, &st);
    ck_assert_msg(r == 0, "dropped at every PENDING: %d (%s)", r,
                  fut_strerror(r));
    /* On the multi-thread runtime the peer (another worker) may answer
     * every time before this side waits again, in every run after the
     * first (seen under load): a stress run then, as above. */
    ck_assert_msg(st.drops > 0 || fut_test_rt_is_mt(), "nothing dropped");
    /* On the current-thread runtime the peer runs only while this side
     * waits, so a flush must have waited; on the multi-thread one the
     * peer may drain every flight at once (then this is a stress run). */
    if (need_flush_drops && !fut_test_rt_is_mt())
        ck_assert_msg(st.drops_in_flush > 0,
                      "no drop while a flush was pending (%ld drops)",
                      st.drops);
}

START_TEST(tls_drop_read)
{
    drop_loop(D_READ, 200000, 0);
}
END_TEST

START_TEST(tls_drop_write)
{
    drop_loop(D_WRITE, 300000, 1);
}
END_TEST

START_TEST(tls_drop_handshake)
{
    drop_loop(D_HS, 0, 1);
}
END_TEST

/* The stock drop harness (fut/testing.h, as net_tcp's drop_read) on a
 * TLS read: each run a task on the harness's runtime writes message
 * number 'seq' on the server stream after a few yields, and the client's
 * read is dropped at its k-th PENDING; the runtime is freed (on io_uring
 * the bytes already received move to the fd's spill). Then the next read,
 * on a runtime of its own, must get that message whole. */
static struct {
    struct tls_pair pr;
    struct fut_tls_read rd;
    char buf[256];
    int seq;
} HR;

struct delayed_tls_write {
    struct fut_future base;
    struct fut_yield y;
    struct fut_tls_write w;
    struct fut_tls_flush fl;
    int i;
    char msg[100];
};

static int dtw_poll(struct fut_future *f, struct fut_context *cx)
{
    struct delayed_tls_write *d = (struct delayed_tls_write *)f;
    FUT_BEGIN(f);
    for (d->i = 0; d->i < 3; d->i++) {
        fut_yield_init(&d->y);
        FUT_AWAIT(f, &d->y);
    }
    fut_tls_write_init(&d->w, HR.pr.ts, d->msg, sizeof d->msg);
    FUT_AWAIT(f, &d->w);
    ck_assert_int_eq(d->w.result, sizeof d->msg);
    /* sent before the runtime goes: a send in flight on io_uring does not
     * survive fut_runtime_free (docs/tls.md, "Runtimes") */
    fut_tls_flush_init(&d->fl, HR.pr.ts);
    FUT_AWAIT(f, &d->fl);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(dtw_vt, "delayed_tls_write", dtw_poll, NULL);

static void message(int seq, char *m, size_t n)
{
    for (size_t i = 0; i < n; i++)
        m[i] = (char)('a' + (seq * 7 + (int)i) % 26);
}

static struct fut_future *make_tls_read(void *ud, struct fut_runtime *rt)
{
    (void)ud;
    struct delayed_tls_write d;
    fut_future_init(&d.base, &dtw_vt);
    message(++HR.seq, d.msg, sizeof d.msg);
    ASSERT_EQ(fut_spawn(rt, &d, sizeof d, NULL), 0);
    fut_tls_read_init(&HR.rd, HR.pr.tc, HR.buf, sizeof HR.buf);
    return &HR.rd.base;
}

static int check_tls_read(void *ud, int k)
{
    (void)ud;
    char want[100];
    message(HR.seq, want, sizeof want);
    ssize_t got = HR.rd.result;
    if (k != 0) { /* dropped: the message waits for the next read */
        struct fut_runtime *rt = NULL;
        if (fut_runtime_new(NULL, &rt) != 0)
            return 1;
        struct fut_tls_read rd;
        fut_tls_read_init(&rd, HR.pr.tc, HR.buf, sizeof HR.buf);
        struct fut_timeout to;
        fut_timeout_init(&to, &rd.base, fut_now_ns() + 5000 * MS);
        int r = fut_block_on(rt, &to.base);
        fut_drop(&to.base);
        fut_runtime_free(rt);
        if (r != 0 || to.result != 0)
            return 1;
        got = rd.result;
    }
    return got == (ssize_t)sizeof want && !memcmp(HR.buf, want, sizeof want)
               ? 0
               : 1;
}

START_TEST(tls_drop_read_harness)
{
    struct fut_runtime *rt = rt_make(0);
    pair_open(&HR.pr, rsa_crt, rsa_key);
    struct fut_tls_handshake hs, hc;
    fut_tls_handshake_init(&hs, HR.pr.ts);
    fut_tls_handshake_init(&hc, HR.pr.tc);
    struct fut_join2 jh;
    fut_join2_init(&jh, &hs.base, &hc.base);
    ASSERT_EQ(fut_block_on(rt, &jh.base), 0);
    ASSERT_EQ(hs.result + hc.result, 0);
    fut_drop(&jh.base);
    /* One byte across, so that the client has read the session tickets:
     * nothing is left in the socket (or, on io_uring, in the fd's spill
     * when this runtime goes, whose block the first run would free). */
    struct fut_tls_write w;
    struct fut_tls_read rd;
    char c;
    fut_tls_write_init(&w, HR.pr.ts, "x", 1);
    fut_tls_read_init(&rd, HR.pr.tc, &c, 1);
    fut_join2_init(&jh, &w.base, &rd.base);
    ASSERT_EQ(fut_block_on(rt, &jh.base), 0);
    ASSERT_EQ(rd.result, 1);
    fut_drop(&jh.base);
    struct fut_tls_flush fl;
    fut_tls_flush_init(&fl, HR.pr.ts);
    ASSERT_EQ(fut_block_on(rt, &fl.base), 0);
    ASSERT_EQ(fl.result, 0);
    fut_drop(&fl.base);
    fut_runtime_free(rt);
    struct fut_harness h;
    fut_harness_init(&h, make_tls_read, check_tls_read, NULL);
    int r = fut_harness_run(&h);
    ck_assert_msg(r == 0, "%s", h.msg);
    ck_assert_msg(h.pendings > 0, "the read never waited");
    pair_close(&HR.pr);
}
END_TEST

/* Full duplex in one task: each end writes 600 KB and reads the other's
 * 600 KB at the same time (a write-everything and a read-everything
 * future under fut_join2), over a Unix socket pair with 4 KiB send
 * buffers. A read that waited for the stream's queued records to be sent
 * would stall both ends: each waits for the other to read. */
/* ------------------------------------------- key operations off-thread */

static uintptr_t key_jobs(void)
{
    return fut__load(&fut__tls_key_jobs, FUT__RELAXED);
}

/* An RSA server signs on the blocking pool (TLS 1.3 and 1.2): the count
 * of key jobs grows, the last one ran on a thread that is not the
 * runtime's; an ECDSA server signs inline (the count stays). */
START_TEST(tls_key_offload)
{
    struct fut_runtime *rt = rt_make(0);
    for (int round = 0; round < 3; round++) {
        struct side srv, cli;
        const char *crt = round == 2 ? ec_crt : rsa_crt;
        const char *key = round == 2 ? ec_key : rsa_key;
        sides_init(&srv, &cli, crt, key, crt, 1000);
        if (round == 1)
            ASSERT_EQ(
                fut_tls_ctx_set_versions(cli.ctx, FUT_TLS_1_2, FUT_TLS_1_2),
                0);
        fut__store(&fut__tls_key_job_thread, 0, FUT__RELAXED);
        uintptr_t before = key_jobs();
        ASSERT_EQ(run_pair(rt, &srv, &cli), 0);
        ck_assert_msg(cli.hs == 0 && srv.hs == 0, "round %d: %s / %s", round,
                      cli.msg, srv.msg);
        ck_assert_str_eq(cli.version, round == 1 ? "TLSv1.2" : "TLSv1.3");
        uintptr_t jobs = key_jobs() - before;
        if (round < 2) {
            ck_assert_msg(jobs >= 1, "round %d: no key job", round);
            uintptr_t th = fut__load(&fut__tls_key_job_thread, FUT__RELAXED);
            ck_assert_msg(th != 0 && th != (uintptr_t)pthread_self(),
                          "round %d: the key job ran on the runtime's "
                          "thread",
                          round);
        } else {
            ck_assert_msg(jobs == 0, "ECDSA: %lu key jobs",
                          (unsigned long)jobs);
        }
        sides_free(&srv, &cli);
    }
    fut_runtime_free(rt);
}
END_TEST

/* TLS 1.2 with RSA key exchange (s_client offers only
 * AES128-GCM-SHA256): the server signs nothing but decrypts the client's
 * key exchange with its key, a step after the ClientHello - that step
 * runs on the pool too: two key jobs (the ClientHello's step, whose
 * callback cannot know the cipher yet, and the decryption). */
START_TEST(tls_key_offload_rsa_kx)
{
    struct line_server s;
    const char *flags[] = {"-tls1_2", "-cipher", "AES128-GCM-SHA256", NULL};
    char text[16384];
    struct fut_tls_ctx *ctx = server_ctx(rsa_crt, rsa_key);
    uintptr_t before = key_jobs();
    intptr_t v = s_client_round(&s, ctx, rsa_crt, flags, text, sizeof text);
    uintptr_t jobs = key_jobs() - before;
    fut_tls_ctx_free(ctx);
    ck_assert_msg(s.hs == 0 && v == 0, "handshake: %s (%s)",
                  fut_strerror(s.hs), s.msg);
    ck_assert_msg(strstr(text, "AES128-GCM-SHA256") != NULL,
                  "another cipher: %s", text);
    ck_assert_msg(jobs == 2, "RSA key exchange: %lu key jobs, not 2",
                  (unsigned long)jobs);
}
END_TEST

/* The server's handshake future, dropped right after the poll that sent
 * the signing step to the pool (the job queued or running): mode 0 goes
 * on with a new handshake future, which finishes; mode 1 frees the stream
 * at once (fut_tls_free waits for the job: no use after free under ASan,
 * no race under TSan). Output: 'result' = the handshake's, or 0 when
 * freed. */
struct kdrop {
    struct fut_future base;
    struct fut_tls *t;
    int mode;
    struct fut_tls_handshake hs;
    int live, dropped, result;
};

static int kdrop_poll(struct fut_future *fb, struct fut_context *cx)
{
    struct kdrop *d = (struct kdrop *)fb;
    for (;;) {
        if (!d->live) {
            fut_tls_handshake_init(&d->hs, d->t);
            d->live = 1;
        }
        if (fut_poll(&d->hs.base, cx) == FUT_READY) {
            d->result = d->hs.result;
            fut_drop(&d->hs.base);
            d->live = 0;
            return FUT_READY;
        }
        if (d->dropped || !d->t->kj_busy)
            return FUT_PENDING;
        fut_drop(&d->hs.base);
        d->live = 0;
        d->dropped = 1;
        if (d->mode == 1) {
            fut_tls_free(d->t);
            d->t = NULL;
            d->result = 0;
            return FUT_READY;
        }
    }
}

static void kdrop_drop(struct fut_future *fb)
{
    struct kdrop *d = (struct kdrop *)fb;
    if (d->live)
        fut_drop(&d->hs.base);
    d->live = 0;
}

static const struct fut_future_vtable kdrop_vt = {kdrop_poll, kdrop_drop,
                                                  "kdrop", NULL};

static intptr_t hs_fiber(void *arg)
{
    return fut_tls_handshake(arg);
}

START_TEST(tls_key_offload_drop)
{
    int runs = TEST_ITERS(20, 5);
    for (int mode = 0; mode < 2; mode++) {
        for (int k = 0; k < runs; k++) {
            struct fut_runtime *rt = rt_make(0);
            struct tls_pair pr;
            pair_open(&pr, rsa_crt, rsa_key);
            struct fut_join jc;
            ASSERT_EQ(fut_fiber_spawn(rt, hs_fiber, pr.tc, big_stack(), &jc),
                      0);
            struct kdrop d;
            memset(&d, 0, sizeof d);
            fut_future_init(&d.base, &kdrop_vt);
            d.t = pr.ts;
            d.mode = mode;
            ASSERT_EQ(fut_block_on(rt, &d.base), 0);
            fut_drop(&d.base);
            ck_assert_msg(d.dropped, "mode %d: no key job to drop", mode);
            if (mode == 1) {
                pr.ts = NULL; /* freed while its job was in flight */
                fut_io_close(pr.a);
                pr.a = NULL;
            } else {
                ck_assert_msg(d.result == 0, "server: %s (%s)",
                              fut_strerror(d.result),
                              fut_tls_error_message(pr.ts));
            }
            ASSERT_EQ(fut_block_on(rt, &jc.base), 0);
            intptr_t v = fut_fiber_value(&jc);
            fut_drop(&jc.base);
            if (mode == 0)
                ck_assert_msg(v == 0, "client: %s", fut_strerror((int)v));
            else
                ck_assert_msg(v < 0, "client finished a handshake with a "
                                     "freed server");
            pair_close(&pr);
            fut_runtime_free(rt);
        }
    }
}
END_TEST

/* ------------------------------------------------ many handshakes held */

/* 1,000 clients (200 under TSan) connect and handshake to one in-process
 * server at once, and every connection stays open until all of them
 * have completed their handshake: the server holds them all, then says
 * "x" on each and closes with close_notify. Bounded: 120 s for the
 * whole, or the test fails. */
static struct {
    struct fut_tls_ctx *sctx, *cctx;
    struct fut_io *listener;
    int port, n;
    long established, max_open, open, failed, served, clients_ok;
    pthread_mutex_t lock; /* the counters: fibers run on any worker */
} MH;

static void mh_add(long *v, long d)
{
    pthread_mutex_lock(&MH.lock);
    *v += d;
    if (MH.open > MH.max_open)
        MH.max_open = MH.open;
    pthread_mutex_unlock(&MH.lock);
}

static long mh_get(const long *v)
{
    pthread_mutex_lock(&MH.lock);
    long x = *v;
    pthread_mutex_unlock(&MH.lock);
    return x;
}

/* Fiber options with a 256 KiB stack: set by the test before any fiber
 * runs, then only read (fibers on two workers read them at once). */
static struct fut_fiber_opts mid_opts;

static intptr_t mh_conn(void *arg)
{
    struct fut_io *io = arg;
    struct fut_tls *t = NULL;
    ASSERT_EQ(fut_tls_new(MH.sctx, io, NULL, &t), 0);
    mh_add(&MH.open, 1);
    if (fut_tls_handshake(t) == 0) {
        mh_add(&MH.established, 1);
        while (mh_get(&MH.established) < MH.n && mh_get(&MH.failed) == 0)
            fut_sleep(10 * MS);
        if (fut_tls_write_all(t, "x", 1) == 1 && fut_tls_shutdown(t) == 0)
            mh_add(&MH.served, 1);
    } else {
        mh_add(&MH.failed, 1);
    }
    mh_add(&MH.open, -1);
    fut_tls_free(t);
    fut_io_close(io);
    return 0;
}

static intptr_t mh_server(void *arg)
{
    (void)arg;
    struct fut_join *j = calloc((size_t)MH.n, sizeof *j);
    for (int i = 0; i < MH.n; i++) {
        struct fut_io *io = NULL;
        if (fut_accept(MH.listener, &io) != 0)
            return -1;
        ASSERT_EQ(fut_fiber_spawn(NULL, mh_conn, io, &mid_opts, &j[i]), 0);
    }
    for (int i = 0; i < MH.n; i++) {
        fut_await(&j[i]);
        fut_drop(&j[i].base);
    }
    free(j);
    return 0;
}

static intptr_t mh_client(void *arg)
{
    (void)arg;
    struct sockaddr_storage ss;
    socklen_t len;
    fut_addr_parse("127.0.0.1", MH.port, &ss, &len);
    struct fut_io *io = NULL;
    if (fut_connect((struct sockaddr *)&ss, len, -1, &io) != 0)
        return -1;
    struct fut_tls *t = NULL;
    ASSERT_EQ(fut_tls_new(MH.cctx, io, "localhost", &t), 0);
    intptr_t v = -2;
    char c[2];
    if (fut_tls_handshake(t) == 0 && fut_tls_read(t, c, 2) == 1 &&
        c[0] == 'x' && fut_tls_read(t, c, 2) == 0) {
        v = 0;
        mh_add(&MH.clients_ok, 1);
    }
    fut_tls_free(t);
    fut_io_close(io);
    return v;
}

struct mh_all {
    struct fut_future base;
    struct fut_join *j; /* server, then the clients */
    int n, next;
};

static int mh_all_poll(struct fut_future *fb, struct fut_context *cx)
{
    struct mh_all *a = (struct mh_all *)fb;
    while (a->next < a->n) {
        if (fut_poll(&a->j[a->next].base, cx) == FUT_PENDING)
            return FUT_PENDING;
        a->next++;
    }
    return FUT_READY;
}

static const struct fut_future_vtable mh_all_vt = {mh_all_poll, NULL,
                                                   "mh_all", NULL};

START_TEST(tls_many_handshakes)
{
    memset(&MH, 0, sizeof MH);
    pthread_mutex_init(&MH.lock, NULL);
    MH.n = TEST_ITERS(1000, 200);
    fut_fiber_opts_init(&mid_opts);
    mid_opts.stack_size = 256 * 1024;
    MH.sctx = server_ctx(ec_crt, ec_key);
    MH.cctx = client_ctx(ec_crt);
    MH.listener = listen_any(&MH.port);
    struct fut_runtime *rt = rt_make(0);
    struct fut_join *j = calloc((size_t)MH.n + 1, sizeof *j);
    int64_t t0 = fut_now_ns();
    ASSERT_EQ(fut_fiber_spawn(rt, mh_server, NULL, big_stack(), &j[0]), 0);
    for (int i = 0; i < MH.n; i++)
        ASSERT_EQ(fut_fiber_spawn(rt, mh_client, NULL, &mid_opts, &j[i + 1]),
                  0);
    struct mh_all all;
    fut_future_init(&all.base, &mh_all_vt);
    all.j = j;
    all.n = MH.n + 1;
    all.next = 0;
    struct fut_timeout to;
    fut_timeout_init(&to, &all.base, fut_now_ns() + 120000 * MS);
    ASSERT_EQ(fut_block_on(rt, &to.base), 0);
    ck_assert_msg(to.result == 0,
                  "not done in 120 s: %ld established, %ld failed, %ld "
                  "served, %ld clients done",
                  MH.established, MH.failed, MH.served, MH.clients_ok);
    fut_drop(&to.base);
    int64_t ms = (fut_now_ns() - t0) / MS;
    for (int i = 0; i <= MH.n; i++) {
        ck_assert_msg(fut_fiber_value(&j[i]) == 0, "fiber %d: %ld", i,
                      (long)fut_fiber_value(&j[i]));
        fut_drop(&j[i].base);
    }
    free(j);
    ASSERT_EQ(MH.failed, 0);
    ASSERT_EQ(MH.established, MH.n);
    ASSERT_EQ(MH.served, MH.n);
    ASSERT_EQ(MH.clients_ok, MH.n);
    /* every connection was open at once: none was served before all
     * had completed their handshake */
    ASSERT_EQ(MH.max_open, MH.n);
    fprintf(stderr, "tls.many: %d handshakes held at once, %lld ms\n", MH.n,
            (long long)ms);
    fut_runtime_free(rt);
    fut_io_close(MH.listener);
    fut_tls_ctx_free(MH.sctx);
    fut_tls_ctx_free(MH.cctx);
    pthread_mutex_destroy(&MH.lock);
}
END_TEST

START_TEST(tls_full_duplex)
{
    size_t total = 600000;
    struct fut_runtime *rt = rt_make(0);
    struct tls_pair pr;
    pair_open(&pr, rsa_crt, rsa_key);
    struct fut_tls *ts = pr.ts, *tc = pr.tc;
    struct fut_tls_handshake hs, hc;
    fut_tls_handshake_init(&hs, ts);
    fut_tls_handshake_init(&hc, tc);
    struct fut_join2 jh;
    fut_join2_init(&jh, &hs.base, &hc.base);
    ASSERT_EQ(fut_block_on(rt, &jh.base), 0);
    ASSERT_EQ(hs.result, 0);
    ASSERT_EQ(hc.result, 0);
    fut_drop(&jh.base);
    struct dropper *d = calloc(4, sizeof *d);
    dropper_init(&d[0], ts, D_WRITE, 0, total);
    dropper_init(&d[1], ts, D_READ, 0, total);
    dropper_init(&d[2], tc, D_WRITE, 0, total);
    dropper_init(&d[3], tc, D_READ, 0, total);
    d[1].stop_at_total = d[3].stop_at_total = 1;
    struct fut_join2 j[3];
    fut_join2_init(&j[0], &d[0].base, &d[1].base);
    fut_join2_init(&j[1], &d[2].base, &d[3].base);
    fut_join2_init(&j[2], &j[0].base, &j[1].base);
    struct fut_timeout to;
    fut_timeout_init(&to, &j[2].base, fut_now_ns() + 20000 * MS);
    ASSERT_EQ(fut_block_on(rt, &to.base), 0);
    ck_assert_msg(to.result == 0,
                  "stalled: written %zu and %zu, read %zu "
                  "and %zu of %zu",
                  d[0].done, d[2].done, d[1].done, d[3].done, total);
    fut_drop(&to.base);
    ASSERT_EQ(d[0].result, 0);
    ASSERT_EQ(d[2].result, 0);
    ASSERT_EQ(d[1].done, total); /* byte-exact (checked while read) */
    ASSERT_EQ(d[3].done, total);
    free(d);
    pair_close(&pr);
    fut_runtime_free(rt);
}
END_TEST

int main(void)
{
    if (make_certs() != 0) {
        fprintf(stderr, "tls: openssl req failed (is openssl installed?)\n");
        remove_certs();
        return 1;
    }
    Suite *s = suite_create("tls");
    TCase *tc = fut_test_tcase(s, "echo");
    tcase_add_test(tc, tls_echo_rsa);
    tcase_add_test(tc, tls_echo_ecdsa);
    tcase_add_test(tc, tls_cert_pem_memory);
    tc = fut_test_tcase(s, "alpn");
    tcase_add_test(tc, tls_alpn_select);
    tc = fut_test_tcase(s, "close");
    tcase_add_test(tc, tls_close_clean_vs_unclean);
    tc = fut_test_tcase(s, "verify");
    tcase_add_test(tc, tls_verify_refuses);
    tcase_add_test(tc, tls_verify_expired);
    tc = fut_test_tcase(s, "resume");
    tcase_add_test(tc, tls_session_resumption);
    tc = fut_test_tcase(s, "s_client");
    tcase_add_test(tc, tls_server_vs_s_client);
    tcase_add_test(tc, tls_s_client_alpn_resume);
    tc = fut_test_tcase(s, "s_server");
    tcase_add_test(tc, tls_client_vs_s_server);
    tc = fut_test_tcase(s, "bad_input");
    tcase_add_test(tc, tls_bad_input);
    tcase_add_test(tc, tls_bad_input_serves_others);
    tc = fut_test_tcase(s, "cancel");
    tcase_add_test(tc, tls_drop_read);
    tcase_add_test(tc, tls_drop_write);
    tcase_add_test(tc, tls_drop_handshake);
    tcase_add_test(tc, tls_drop_read_harness);
    tc = fut_test_tcase(s, "keyop");
    tcase_add_test(tc, tls_key_offload);
    tcase_add_test(tc, tls_key_offload_rsa_kx);
    tcase_add_test(tc, tls_key_offload_drop);
    tc = fut_test_tcase(s, "many");
    tcase_add_test(tc, tls_many_handshakes);
    tc = fut_test_tcase(s, "duplex");
    tcase_add_test(tc, tls_full_duplex);
    int r = fut_test_run(s);
    remove_certs();
    return r;
}
