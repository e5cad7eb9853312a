/* SPDX-License-Identifier: MIT */
/* fut-redis as a server under load and abuse (the program, over sockets):
 *   benchmark        redis-benchmark -t ping,set,get,incr,lpush,lpop,mset
 *                    -q completes with no error line
 *   clients10k       10,000 clients held at once, each answered; the
 *                    10,001st refused with Redis' maxclients error
 *   slow_subscriber  a subscriber that never reads is cut off at the
 *                    pub/sub output limit while other clients are served
 *   soft_limit       ... and after a second over the soft limit
 *   malformed        bad requests get redis-server's exact bytes, then a
 *                    close; other clients go on
 *   timeout          --timeout closes an idle client, not a busy one
 *   maxmemory        --maxmemory: -OOM for writes that grow, reads go on
 *   shutdown         SIGTERM: the replies in flight are written, exit 0
 *   cmdline          unknown option / bad value / --io-backend
 *   multikey         MSET/MGET/DEL/EXISTS over two keys are atomic for
 *                    other clients (the point of the .mt variant)
 *   subscribe_many   SUBSCRIBE of many channels is O(N), others served
 *   unsubscribe_order  no 'message' of a channel after its UNSUBSCRIBE
 *                    reply while a publisher floods it
 * The .mt variants run fut-redis with --workers 2. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "test.h"

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sends 'req' and expects exactly the bytes 'want' back. */
static void expect_reply(int fd, const char *req, const char *want)
{
    char buf[4096];
    size_t n = strlen(want);
    ck_assert_int_eq(client_send(fd, req, strlen(req)), 0);
    ck_assert_uint_le(n, sizeof buf);
    size_t got = client_recv(fd, buf, n);
    ck_assert_msg(got == n && memcmp(buf, want, n) == 0,
                  "'%s': got %zu bytes '%.*s', want '%s'", req, got, (int)got,
                  buf, want);
}

static void ping(const struct srvproc *p)
{
    int fd = client_connect(p);
    ck_assert_int_ge(fd, 0);
    expect_reply(fd, "PING\r\n", "+PONG\r\n");
    close(fd);
}

/* ------------------------------------------------------------ benchmark */

START_TEST(benchmark)
{
    struct srvproc p;
    fut_redis_start(&p, NULL, NULL);
    /* 100,000 requests per test as the issue asks; 20,000 under the
     * sanitizers, which run the server 5-20x slower (a CI time bound). */
    const char *env = getenv("FUT_REDIS_BENCH_N");
    int n = env ? atoi(env) : TEST_ITERS(100000, 20000);
#ifdef __SANITIZE_ADDRESS__
    n = env ? n : 20000;
#endif
    char out[300];
    snprintf(out, sizeof out, "%s/bench.out", harness_dir());
    int st = harness_sh("redis-benchmark -p %d -t ping,set,get,incr,lpush,"
                        "lpop,mset -n %d -q > %s 2>&1",
                        p.port, n, out);
    char *o = harness_slurp(out, NULL);
    ck_assert_msg(st == 0, "redis-benchmark exit %d: %s", st, o);
    /* -q prints one line per test, after progress lines ending in \r */
    static const char *tests[] = {
        "PING_INLINE", "PING_MBULK", "SET:",  "GET:",
        "INCR:",       "LPUSH:",     "LPOP:", "MSET (10 keys):"};
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        const char *t = strstr(o, tests[i]);
        ck_assert_msg(t && strstr(t, "requests per second"),
                      "no result for %s: %s", tests[i], o);
    }
    for (char *line = strtok(o, "\r\n"); line; line = strtok(NULL, "\r\n"))
        ck_assert_msg(!strcasestr(line, "error") &&
                          !strcasestr(line, "warning"),
                      "redis-benchmark: %s", line);
    free(o);
    ck_assert_int_eq(srv_stop(&p), 0);
    harness_cleanup();
}
END_TEST

/* ------------------------------------------------------------ clients10k */

#define NCLIENTS 10000

START_TEST(clients10k)
{
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    ck_assert_msg(rl.rlim_max >= NCLIENTS + 200, "ulimit -n is %ld",
                  (long)rl.rlim_max);
    rl.rlim_cur = rl.rlim_max; /* the server inherits it */
    setrlimit(RLIMIT_NOFILE, &rl);
    struct srvproc p;
    fut_redis_start(&p, NULL, NULL); /* --maxclients: 10000 (default) */
    static int fd[NCLIENTS];
    for (int i = 0; i < NCLIENTS; i++) {
        fd[i] = client_connect(&p);
        ck_assert_msg(fd[i] >= 0, "client %d: %s", i, strerror(errno));
    }
    for (int i = 0; i < NCLIENTS; i++) /* all at once, then the replies */
        ck_assert_int_eq(client_send(fd[i], "PING\r\n", 6), 0);
    for (int i = 0; i < NCLIENTS; i++) {
        char buf[8];
        ck_assert_msg(client_recv(fd[i], buf, 7) == 7 &&
                          memcmp(buf, "+PONG\r\n", 7) == 0,
                      "client %d got no PONG", i);
    }
    /* one more is refused, as Redis does, and closed */
    int extra = client_connect(&p);
    ck_assert_int_ge(extra, 0);
    char buf[128];
    size_t n;
    ck_assert_int_eq(client_recv_eof(extra, buf, sizeof buf, &n), 0);
    ck_assert_msg(n == 36 && !memcmp(buf,
                                     "-ERR max number of clients "
                                     "reached\r\n",
                                     36),
                  "got '%.*s'", (int)n, buf);
    close(extra);
    /* the held clients still work; one gone makes room for another */
    expect_reply(fd[NCLIENTS / 2], "ECHO hi\r\n", "$2\r\nhi\r\n");
    close(fd[0]);
    int64_t end = now_ms() + HARNESS_WAIT_MS;
    for (;;) {
        int f = client_connect(&p);
        ck_assert_int_ge(f, 0);
        client_send(f, "PING\r\n", 6);
        size_t got = client_recv(f, buf, 7);
        close(f);
        if (got == 7 && !memcmp(buf, "+PONG\r\n", 7))
            break; /* fd[0]'s close was seen */
        ck_assert_msg(now_ms() < end, "no room after a client left");
        usleep(20000);
    }
    for (int i = 1; i < NCLIENTS; i++)
        close(fd[i]);
    ck_assert_int_eq(srv_stop(&p), 0);
    harness_cleanup();
}
END_TEST

/* ------------------------------------------------------- slow subscriber */

#define PAYLOAD (64 * 1024)

START_TEST(slow_subscriber)
{
    const char *args[] = {"--client-output-buffer-limit",
                          "pubsub 1mb 256kb 60", NULL};
    struct srvproc p;
    fut_redis_start(&p, NULL, args);
    int sub = client_connect(&p);
    ck_assert_int_ge(sub, 0);
    expect_reply(sub, "SUBSCRIBE ch\r\n",
                 "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n");
    /* from here 'sub' reads nothing */
    int pub = client_connect(&p), other = client_connect(&p);
    ck_assert_int_ge(pub, 0);
    ck_assert_int_ge(other, 0);
    static char req[PAYLOAD + 64];
    int hdr = snprintf(req, sizeof req,
                       "*3\r\n$7\r\nPUBLISH\r\n$2\r\nch\r\n"
                       "$%d\r\n",
                       PAYLOAD);
    memset(req + hdr, 'x', PAYLOAD);
    memcpy(req + hdr + PAYLOAD, "\r\n", 2);
    size_t reqlen = (size_t)hdr + PAYLOAD + 2;
    /* Published bytes before the cut: the 1 MB limit plus what the
     * kernel's socket buffers took (a few MB on loopback TCP). */
    int i, max = 1024; /* 64 MB */
    for (i = 0; i < max; i++) {
        char r[8];
        ck_assert_int_eq(client_send(pub, req, reqlen), 0);
        ck_assert_uint_eq(client_recv(pub, r, 4), 4);
        if (!memcmp(r, ":0\r\n", 4))
            break; /* no subscriber any more: it was cut off */
        ck_assert_msg(!memcmp(r, ":1\r\n", 4), "PUBLISH: %.4s", r);
        if (i % 16 == 0) /* others are served meanwhile */
            expect_reply(other, "PING\r\n", "+PONG\r\n");
    }
    ck_assert_msg(i < max, "the subscriber was never cut off");
    ck_assert_int_eq(info_field(&p, "client_output_buffer_limit_"
                                    "disconnections"),
                     1);
    expect_reply(other, "PING\r\n", "+PONG\r\n");
    /* the subscriber finds the end of its stream after what was sent */
    static char sink[1 << 16];
    size_t n;
    ck_assert_int_eq(client_recv_eof(sub, sink, sizeof sink, &n), 0);
    close(sub);
    close(pub);
    close(other);
    ck_assert_int_eq(srv_stop(&p), 0);
    harness_cleanup();
}
END_TEST

/* The soft limit: over 256 KB of unsent output for 1 s is a cut too,
 * while the hard limit (64 MB) is never reached. A Unix socket, whose
 * kernel buffers are small, and a slow publisher (64 KB every 50 ms). */
START_TEST(soft_limit)
{
    const char *args[] = {"--client-output-buffer-limit",
                          "pubsub 64mb 256kb 1", NULL};
    struct srvproc p;
    fut_redis_start(&p, "fut.sock", args);
    int sub = client_connect(&p), pub = client_connect(&p);
    ck_assert_int_ge(sub, 0);
    ck_assert_int_ge(pub, 0);
    expect_reply(sub, "SUBSCRIBE ch\r\n",
                 "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n");
    static char req[PAYLOAD + 64];
    int hdr = snprintf(req, sizeof req,
                       "*3\r\n$7\r\nPUBLISH\r\n$2\r\nch\r\n"
                       "$%d\r\n",
                       PAYLOAD);
    memset(req + hdr, 'x', PAYLOAD);
    memcpy(req + hdr + PAYLOAD, "\r\n", 2);
    int64_t t0 = now_ms();
    int i;
    for (i = 0; i < 200; i++) { /* 10 s, 12.8 MB at most */
        char r[8];
        ck_assert_int_eq(client_send(pub, req, (size_t)hdr + PAYLOAD + 2), 0);
        ck_assert_uint_eq(client_recv(pub, r, 4), 4);
        if (!memcmp(r, ":0\r\n", 4))
            break;
        usleep(50000);
    }
    ck_assert_msg(i < 200, "the soft limit never cut the subscriber");
    ck_assert_int_ge(now_ms() - t0, 1000); /* not before its second */
    ck_assert_int_eq(info_field(&p, "client_output_buffer_limit_"
                                    "disconnections"),
                     1);
    close(sub);
    close(pub);
    ck_assert_int_eq(srv_stop(&p), 0);
    harness_cleanup();
}
END_TEST

/* ------------------------------------------------------------- malformed */

/* Requests that end in a protocol error; each goes to redis-server and
 * to fut-redis on a new connection, and both must send the same bytes
 * and close. */
static const char *const bad[] = {
    "*1\r\n$x\r\n",
    "*x\r\n",
    "*1\r\nfoo\r\n",
    "*1\r\n$-1\r\n",
    "*3000000000\r\n",
    "*1\r\n$600000000\r\n",
    "*1\r\n$1a\r\n",
    "SET \"a\r\n",
    "SET 'a\r\n",
    "SET \"a\"b c\r\n",
    "PING\r\n*1\r\n$x\r\n",
    "*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n*1\r\n:1\r\n",
    "*1\r\n$4\r\nPING\r\n*-5\r\n*1\r\n$4\r\nPING\r\n*1\r\n$\r\n",
};

static void send_bad(const struct srvproc *p, const char *req, size_t len,
                     char *out, size_t cap, size_t *n)
{
    int fd = client_connect(p);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(client_send(fd, req, len), 0);
    ck_assert_msg(client_recv_eof(fd, out, cap, n) == 0,
                  "no close after '%s'", req);
    close(fd);
}

START_TEST(malformed)
{
    struct srvproc redis, fut;
    redis_server_start(&redis, "redis.sock");
    fut_redis_start(&fut, "fut.sock", NULL);
    int idle = client_connect(&fut); /* a client in the middle of a
                                        command meanwhile */
    ck_assert_int_ge(idle, 0);
    ck_assert_int_eq(client_send(idle, "*2\r\n$4\r\nECHO\r\n", 14), 0);
    static char big[70 * 1024]; /* an inline request over 64 KiB */
    memset(big, 'a', sizeof big);
    for (size_t i = 0; i <= sizeof bad / sizeof bad[0]; i++) {
        const char *req = i < sizeof bad / sizeof bad[0] ? bad[i] : big;
        size_t len = req == big ? sizeof big : strlen(req);
        char a[512], b[512];
        size_t na, nb;
        send_bad(&redis, req, len, a, sizeof a, &na);
        send_bad(&fut, req, len, b, sizeof b, &nb);
        ck_assert_msg(na == nb && !memcmp(a, b, na),
                      "request %zu: redis '%.*s' vs fut-redis '%.*s'", i,
                      (int)na, a, (int)nb, b);
        ck_assert_msg(na > 0, "request %zu: no reply", i);
        ping(&fut);
    }
    expect_reply(idle, "$2\r\nok\r\n", "$2\r\nok\r\n");
    close(idle);
    ck_assert_int_eq(srv_stop(&fut), 0);
    srv_stop(&redis);
    harness_cleanup();
}
END_TEST

/* --------------------------------------------------------------- timeout */

START_TEST(timeout)
{
    const char *args[] = {"--timeout", "2", NULL};
    struct srvproc p;
    fut_redis_start(&p, NULL, args);
    int quiet = client_connect(&p), busy = client_connect(&p);
    ck_assert_int_ge(quiet, 0);
    ck_assert_int_ge(busy, 0);
    int64_t t0 = now_ms();
    for (int i = 0; i < 12; i++) { /* 3 s of a command every 250 ms: an
                                      8x margin under the 2 s timeout */
        expect_reply(busy, "PING\r\n", "+PONG\r\n");
        usleep(250000);
    }
    char buf[16];
    size_t n;
    ck_assert_int_eq(client_recv_eof(quiet, buf, sizeof buf, &n), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_ge(now_ms() - t0, 1900);
    ck_assert_int_eq(info_field(&p, "client_timeout_disconnections"), 1);
    expect_reply(busy, "PING\r\n", "+PONG\r\n");
    close(quiet);
    close(busy);
    ck_assert_int_eq(srv_stop(&p), 0);
    harness_cleanup();
}
END_TEST

/* ------------------------------------------------------------- maxmemory */

START_TEST(maxmemory)
{
    const char *args[] = {"--maxmemory", "2mb", NULL};
    struct srvproc p;
    fut_redis_start(&p, NULL, args);
    int fd = client_connect(&p);
    ck_assert_int_ge(fd, 0);
    static char req[100 * 1024 + 64];
    int i, oom = 0;
    for (i = 0; i < 100 && !oom; i++) { /* 100 KB values, 10 MB at most */
        int h = snprintf(req, sizeof req,
                         "*3\r\n$3\r\nSET\r\n$6\r\nk%05d\r\n"
                         "$%d\r\n",
                         i, 100 * 1024);
        memset(req + h, 'v', 100 * 1024);
        memcpy(req + h + 100 * 1024, "\r\n", 2);
        ck_assert_int_eq(client_send(fd, req, (size_t)h + 100 * 1024 + 2), 0);
        char r[128];
        ck_assert_uint_eq(client_recv(fd, r, 5), 5);
        if (!memcmp(r, "-OOM ", 5)) {
            static const char rest[] = "command not allowed when used "
                                       "memory > 'maxmemory'.\r\n";
            ck_assert_uint_eq(client_recv(fd, r, sizeof rest - 1),
                              sizeof rest - 1);
            ck_assert(!memcmp(r, rest, sizeof rest - 1));
            oom = 1;
        } else {
            ck_assert_msg(!memcmp(r, "+OK\r\n", 5), "SET: %.5s", r);
        }
    }
    ck_assert_msg(oom && i > 10 && i < 40, "OOM after %d SETs", i);
    expect_reply(fd, "STRLEN k00000\r\n", ":102400\r\n");
    expect_reply(fd, "INCR n\r\n",
                 "-OOM command not allowed when used "
                 "memory > 'maxmemory'.\r\n");
    expect_reply(fd, "DEL k00000 k00001 k00002 k00003 k00004 k00005\r\n",
                 ":6\r\n");
    expect_reply(fd, "INCR n\r\n", ":1\r\n"); /* below the limit again */
    close(fd);
    ck_assert_int_eq(srv_stop(&p), 0);
    harness_cleanup();
}
END_TEST

/* -------------------------------------------------------------- shutdown */

START_TEST(graceful_shutdown)
{
    struct srvproc p;
    fut_redis_start(&p, NULL, NULL);
    int fd = client_connect(&p);
    ck_assert_int_ge(fd, 0);
    /* a 4 MB value, then 8 GETs of it in one batch: 32 MB of replies,
     * far more than the socket buffers, so the batch is still being
     * written when the signal comes (the client reads nothing yet).
     * TSan builds: 2 MB (16 MB of replies): writing 32 MB through TSan
     * on a loaded machine outlasted the server's 5 s grace once (21.5 of
     * 33.5 MB arrived, redis_server.shutdown.mt) */
    static char req[4 * 1024 * 1024 + 64];
    size_t vlen = (size_t)TEST_ITERS(4, 2) * 1024 * 1024;
    int h = snprintf(req, sizeof req,
                     "*3\r\n$3\r\nSET\r\n$1\r\nv\r\n$%zu\r\n", vlen);
    memset(req + h, 'z', vlen);
    memcpy(req + h + vlen, "\r\n", 2);
    ck_assert_int_eq(client_send(fd, req, (size_t)h + vlen + 2), 0);
    char ok[5];
    ck_assert_uint_eq(client_recv(fd, ok, 5), 5);
    const char gets[] =
        "GET v\r\nGET v\r\nGET v\r\nGET v\r\nGET v\r\nGET v\r\n"
        "GET v\r\nGET v\r\n";
    ck_assert_int_eq(client_send(fd, gets, sizeof gets - 1), 0);
    usleep(200000);
    kill(p.pid, SIGTERM);
    usleep(200000);
    size_t want = 8 * (vlen + 12), got = 0, n; /* "$4194304\r\n" v \r\n */
    static char buf[1 << 20];
    while ((n = client_recv(fd, buf, sizeof buf)) > 0)
        got += n;
    ck_assert_uint_eq(got, want); /* every reply of the batch, then EOF */
    close(fd);
    ck_assert_int_eq(srv_stop(&p), 0);
    harness_cleanup();
}
END_TEST

/* ------------------------------------------------------------ multikey */

/* MSET, MGET, DEL and EXISTS over many keys happen at one instant for
 * the other clients (with --workers: on other workers): a writer sets
 * NKEYS keys to one value again and again, or deletes them all, while a
 * reader checks that it never sees two values, or some keys only. */
#define ROUNDS TEST_ITERS(1000, 200)
#define NKEYS 1000
#define WRITERS 3

/* "<cmd> k0 [v] k1 [v] ..." as an inline request. */
static size_t keys_req(char *req, size_t cap, const char *cmd, int v)
{
    size_t n = (size_t)snprintf(req, cap, "%s", cmd);
    for (int k = 0; k < NKEYS; k++)
        n += v < 0 ? (size_t)snprintf(req + n, cap - n, " k%d", k)
                   : (size_t)snprintf(req + n, cap - n, " k%d %d", k, v);
    return n + (size_t)snprintf(req + n, cap - n, "\r\n");
}

static void writer(const struct srvproc *p)
{
    int fd = client_connect(p);
    if (fd < 0)
        _exit(1);
    static char req[NKEYS * 24];
    char buf[8];
    for (int i = 0; i < ROUNDS; i++) {
        int del = i % 4 == 3;
        size_t n =
            keys_req(req, sizeof req, del ? "DEL" : "MSET", del ? -1 : i);
        if (client_send(fd, req, n) != 0 ||
            client_recv(fd, buf, del ? 4 : 5) == 0) /* ":N\r\n" "+OK\r\n" */
            _exit(1);
        if (del && buf[1] != '0') /* ":1000\r\n": 3 more bytes */
            client_recv(fd, buf, 3);
    }
    _exit(0);
}

/* A buffered reader of reply lines. */
struct lines {
    int fd;
    size_t pos, len;
    char b[1 << 16];
};

/* Reads one reply line (up to LF) into 'buf'. */
static void line(struct lines *r, char *buf, size_t cap)
{
    size_t n = 0;
    while (n + 1 < cap) {
        if (r->pos == r->len) {
            r->pos = 0;
            r->len = client_recv_some(r->fd, r->b, sizeof r->b);
            if (r->len == 0)
                break;
        }
        if ((buf[n++] = r->b[r->pos++]) == '\n')
            break;
    }
    buf[n] = '\0';
}

START_TEST(multikey)
{
    struct srvproc p;
    fut_redis_start(&p, NULL, NULL);
    pid_t w[WRITERS];
    for (int i = 0; i < WRITERS; i++) { /* several: they spread over the
                                           workers */
        w[i] = fork();
        ck_assert_int_ge(w[i], 0);
        if (w[i] == 0)
            writer(&p);
    }
    int fd = client_connect(&p);
    ck_assert_int_ge(fd, 0);
    static struct lines r;
    r.fd = fd;
    static char mget[NKEYS * 16], exists[NKEYS * 16];
    size_t nm = keys_req(mget, sizeof mget, "MGET", -1);
    size_t ne = keys_req(exists, sizeof exists, "EXISTS", -1);
    for (int i = 0; i < ROUNDS; i++) {
        char first[64] = "", l[64];
        ck_assert_int_eq(client_send(fd, mget, nm), 0);
        line(&r, l, sizeof l);
        ck_assert_int_eq(atoi(l + 1), NKEYS);
        for (int k = 0; k < NKEYS; k++) {
            line(&r, l, sizeof l); /* "$-1" or "$<len>", then the value */
            if (l[1] != '-')
                line(&r, l + strlen(l), sizeof l - strlen(l));
            if (k == 0)
                snprintf(first, sizeof first, "%s", l);
            ck_assert_msg(!strcmp(l, first), "MGET saw k0=%s k%d=%s", first,
                          k, l);
        }
        ck_assert_int_eq(client_send(fd, exists, ne), 0);
        line(&r, l, sizeof l);
        ck_assert_msg(atoi(l + 1) == 0 || atoi(l + 1) == NKEYS,
                      "EXISTS saw %s", l);
    }
    for (int i = 0; i < WRITERS; i++) {
        int st;
        waitpid(w[i], &st, 0);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer failed");
    }
    close(fd);
    ck_assert_int_eq(srv_stop(&p), 0);
    harness_cleanup();
}
END_TEST

/* --------------------------------------------------------------- cmdline */

/* Runs fut-redis with 'args' until it exits, or for 3 s (then 'sig':
 * "TERM" or "INT"), and returns its exit status; its stderr is in
 * '*err'. Without FUT_IO_BACKEND: it would override --io-backend, the
 * option tested. */
static int run_cmdline_sig(const char *args, const char *sig, char **err)
{
    char log[300];
    snprintf(log, sizeof log, "%s/cmdline.log", harness_dir());
    int st = harness_sh("env -u FUT_IO_BACKEND timeout --preserve-status "
                        "-s %s 3 %s %s > %s 2>&1",
                        sig, FUT_REDIS_BIN, args, log);
    *err = harness_slurp(log, NULL);
    return st;
}

static int run_cmdline(const char *args, char **err)
{
    return run_cmdline_sig(args, "TERM", err);
}

START_TEST(cmdline)
{
    char *err;
    ck_assert_int_eq(run_cmdline("--port 0 --nosuch 1", &err), 2);
    ck_assert_msg(strstr(err, "unknown option '--nosuch'"), "%s", err);
    free(err);
    ck_assert_int_eq(run_cmdline("--port abc", &err), 2);
    ck_assert_msg(strstr(err, "bad value for '--port': abc"), "%s", err);
    free(err);
    ck_assert_int_eq(run_cmdline("--maxmemory", &err), 2);
    ck_assert_msg(strstr(err, "'--maxmemory' (missing)"), "%s", err);
    free(err);
    ck_assert_int_eq(run_cmdline("--io-backend kqueue", &err), 2);
    ck_assert_msg(strstr(err, "'--io-backend': kqueue"), "%s", err);
    free(err);
    ck_assert_int_eq(run_cmdline("config.conf", &err), 2);
    ck_assert_msg(strstr(err, "'config.conf'"), "%s", err);
    free(err);
    /* --io-backend io_uring: runs on it (until the TERM 'timeout'
     * sends: exit 0), or says why not and exits 1 at once */
    int st = run_cmdline("--port 0 --io-backend io_uring", &err);
    ck_assert_msg((st == 1 && strstr(err, "fut-redis: runtime: ")) ||
                      (st == 0 && strstr(err, "backend: io_uring")),
                  "io_uring: exit %d: %s", st, err);
    free(err);
    /* --io-backend epoll runs on epoll and says so; SIGINT (Ctrl-C) is
     * a graceful shutdown too */
    ck_assert_int_eq(
        run_cmdline_sig("--port 0 --io-backend epoll", "INT", &err), 0);
    ck_assert_msg(strstr(err, "backend: epoll\n"), "%s", err);
    ck_assert_msg(strstr(err, "signal 2: shutting down"), "%s", err);
    free(err);
    harness_cleanup();
}
END_TEST

/* ------------------------------------------------------- subscribe_many */

/* SUBSCRIBE of N channels in one command, then UNSUBSCRIBE of them all:
 * O(N) in fut-redis (a subscriber's names are indexed, psnames.h; a
 * linear scan per name took 26.5 s for 100,000), at most twice
 * redis-server's time in the same run (plain builds: sanitizers slow
 * fut-redis alone); and another client's PING is answered meanwhile
 * within 10 ms on 2 workers (epoll: on io_uring's per-worker rings the
 * PING's connection may sit on the busy worker's ring). */
#define NSUB TEST_ITERS(100000, 20000)
#if defined(__has_feature) /* clang 14 defines no __SANITIZE_ADDRESS__ */
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SUB_SANITIZED
#endif
#endif

static size_t sub_reply_len(const char *kind, size_t n)
{
    size_t total = 0;
    char buf[64];
    for (size_t i = 1; i <= n; i++) /* "*3 $kind ch%06zu :count" */
        total += (size_t)snprintf(
            buf, sizeof buf, "*3\r\n$%zu\r\n%s\r\n$8\r\nch%06zu\r\n:%zu\r\n",
            strlen(kind), kind, i, kind[0] == 's' ? i : n - i);
    return total;
}

/* Sends the whole SUBSCRIBE, then (pinging meanwhile when 'other' >= 0)
 * reads every reply; then UNSUBSCRIBE. Returns the ms both took and the
 * worst PING round trip in '*ping_ms'. */
static int64_t subscribe_many_ms(const struct srvproc *p, int other,
                                 int64_t *ping_ms)
{
    size_t n = NSUB, cap = 32 + n * 16;
    char *req = malloc(cap), *rep = malloc(n * 48);
    ck_assert(req && rep);
    size_t len =
        (size_t)snprintf(req, cap, "*%zu\r\n$9\r\nSUBSCRIBE\r\n", n + 1);
    for (size_t i = 1; i <= n; i++)
        len += (size_t)snprintf(req + len, cap - len, "$8\r\nch%06zu\r\n", i);
    int fd = client_connect(p);
    ck_assert_int_ge(fd, 0);
    *ping_ms = 0;
    int64_t t0 = now_ms();
    ck_assert_int_eq(client_send(fd, req, len), 0);
    if (other >= 0) {
        usleep(5000); /* the server is at it */
        int64_t t = now_ms();
        expect_reply(other, "PING\r\n", "+PONG\r\n");
        *ping_ms = now_ms() - t;
    }
    size_t want = sub_reply_len("subscribe", n);
    ck_assert_uint_eq(client_recv(fd, rep, want), want);
    char last[64];
    snprintf(last, sizeof last, "ch%06zu\r\n:%zu\r\n", n, n);
    ck_assert_msg(!memcmp(rep + want - strlen(last), last, strlen(last)),
                  "last SUBSCRIBE reply: %.30s", rep + want - strlen(last));
    ck_assert_int_eq(client_send(fd, "UNSUBSCRIBE\r\n", 13), 0);
    want = sub_reply_len("unsubscribe", n);
    ck_assert_uint_eq(client_recv(fd, rep, want), want);
    int64_t ms = now_ms() - t0;
    close(fd);
    free(req);
    free(rep);
    return ms;
}

START_TEST(subscribe_many)
{
    struct srvproc f, r;
    fut_redis_start(&f, NULL, NULL);
    int other = client_connect(&f);
    ck_assert_int_ge(other, 0);
    const char *be = getenv("FUT_IO_BACKEND");
    int ping_checked =
        fut_test_rt_is_mt() && !(be && !strcmp(be, "io_uring"));
    int64_t ping_ms;
    int64_t fut = subscribe_many_ms(&f, ping_checked ? other : -1, &ping_ms);
    expect_reply(other, "PING\r\n", "+PONG\r\n");
    close(other);
    ck_assert_int_eq(srv_stop(&f), 0);
    redis_server_start(&r, "redis.sock");
    int64_t unused, red = subscribe_many_ms(&r, -1, &unused);
    ck_assert_int_eq(srv_stop(&r), 0);
    fprintf(stderr,
            "subscribe_many: %d channels: fut-redis %lld ms, "
            "redis-server %lld ms, PING meanwhile %lld ms\n",
            NSUB, (long long)fut, (long long)red, (long long)ping_ms);
#if !defined(FUT_TEST_TSAN) && !defined(SUB_SANITIZED)
    ck_assert_msg(fut <= 2 * red + 50,
                  "fut-redis took %lld ms, redis-server %lld ms",
                  (long long)fut, (long long)red);
#endif
    if (ping_checked)
        ck_assert_msg(ping_ms <= 10 + TEST_ITERS(0, 30),
                      "PING took %lld ms behind the SUBSCRIBE",
                      (long long)ping_ms);
    harness_cleanup();
}
END_TEST

/* ---------------------------------------------------- unsubscribe_order */

/* A publisher floods 'ch' from its own thread while the subscriber
 * unsubscribes: every 'message' of 'ch' must come before the unsubscribe
 * reply, as in Redis (a PUBLISH either found the subscription - and its
 * message is written first - or did not). On two workers a message
 * queued before the removal used to follow the reply. */
struct flood {
    const struct srvproc *p;
    atomic_int stop;
    long long sent;
};

static void *flood_main(void *arg)
{
    struct flood *f = arg;
    int fd = client_connect(f->p);
    ck_assert_int_ge(fd, 0);
    static const char pub[] =
        "*3\r\n$7\r\nPUBLISH\r\n$2\r\nch\r\n$1\r\nx\r\n";
    char req[16 * (sizeof pub - 1)], rep[16 * 4];
    for (int i = 0; i < 16; i++)
        memcpy(req + i * (sizeof pub - 1), pub, sizeof pub - 1);
    while (!atomic_load(&f->stop)) {
        ck_assert_int_eq(client_send(fd, req, sizeof req), 0);
        ck_assert_uint_eq(client_recv(fd, rep, sizeof rep), sizeof rep);
        f->sent += 16;
    }
    close(fd);
    return NULL;
}

static const char unsub_reply[] =
    "*3\r\n$11\r\nunsubscribe\r\n$2\r\nch\r\n:0\r\n";
static const char msg_x[] = "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\nx\r\n";

/* Subscribes, lets messages come, unsubscribes and pings; checks that
 * the stream is messages, the reply, +PONG. Returns the messages read. */
static long long unsubscribe_once(const struct srvproc *p)
{
    int sub = client_connect(p);
    ck_assert_int_ge(sub, 0);
    expect_reply(sub, "SUBSCRIBE ch\r\n",
                 "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n");
    char one[sizeof msg_x - 1];
    ck_assert_uint_eq(client_recv(sub, one, sizeof one), sizeof one);
    ck_assert(!memcmp(one, msg_x, sizeof one));
    ck_assert_int_eq(client_send(sub, "UNSUBSCRIBE ch\r\nPING\r\n", 22), 0);
    static char buf[1 << 22];
    size_t n = 0;
    while (!memmem(buf, n, "+PONG\r\n", 7)) {
        ck_assert_uint_lt(n, sizeof buf);
        size_t got = client_recv_some(sub, buf + n, sizeof buf - n);
        ck_assert_msg(got > 0, "EOF or timeout after %zu bytes", n);
        n += got;
    }
    long long msgs = 1;
    size_t at = 0, m = sizeof msg_x - 1, u = sizeof unsub_reply - 1;
    while (at + m <= n && !memcmp(buf + at, msg_x, m)) {
        at += m;
        msgs++;
    }
    ck_assert_msg(at + u + 7 <= n && !memcmp(buf + at, unsub_reply, u) &&
                      !memcmp(buf + at + u, "+PONG\r\n", 7),
                  "after %lld messages: '%.60s' (%zu bytes left), want "
                  "the unsubscribe reply then +PONG",
                  msgs, buf + at, n - at);
    ck_assert_msg(at + u + 7 == n, "%zu bytes after +PONG: '%.60s'",
                  n - (at + u + 7), buf + at + u + 7);
    close(sub);
    return msgs;
}

START_TEST(unsubscribe_order)
{
    struct srvproc p;
    fut_redis_start(&p, NULL, NULL);
    struct flood f = {.p = &p};
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, flood_main, &f), 0);
    long long msgs = 0;
    for (int i = 0; i < TEST_ITERS(200, 40); i++)
        msgs += unsubscribe_once(&p);
    atomic_store(&f.stop, 1);
    pthread_join(th, NULL);
    ck_assert_int_gt(msgs, 0);
    ck_assert_int_eq(srv_stop(&p), 0);
    harness_cleanup();
}
END_TEST

int main(void)
{
    static const char *const progs[] = {"redis-server", "redis-benchmark",
                                        NULL};
    harness_require(progs);
    Suite *s = suite_create("redis_server");
    tcase_add_test(fut_test_tcase(s, "benchmark"), benchmark);
    tcase_add_test(fut_test_tcase(s, "clients10k"), clients10k);
    tcase_add_test(fut_test_tcase(s, "slow_subscriber"), slow_subscriber);
    tcase_add_test(fut_test_tcase(s, "soft_limit"), soft_limit);
    tcase_add_test(fut_test_tcase(s, "malformed"), malformed);
    tcase_add_test(fut_test_tcase(s, "timeout"), timeout);
    tcase_add_test(fut_test_tcase(s, "maxmemory"), maxmemory);
    tcase_add_test(fut_test_tcase(s, "shutdown"), graceful_shutdown);
    tcase_add_test(fut_test_tcase(s, "cmdline"), cmdline);
    tcase_add_test(fut_test_tcase(s, "multikey"), multikey);
    tcase_add_test(fut_test_tcase(s, "subscribe_many"), subscribe_many);
    tcase_add_test(fut_test_tcase(s, "unsubscribe_order"), unsubscribe_order);
    return fut_test_run(s);
}
