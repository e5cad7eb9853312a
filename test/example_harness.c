/* SPDX-License-Identifier: MIT */
/* See example_harness.h. */
#include "example_harness.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

extern char **environ;

int64_t ex_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t ex_now_ms(void)
{
    return ex_now_us() / 1000;
}

/* Builds argv: bin, args..., [--workers 2], "0". */
static char **make_argv(const char *bin, const char *const *args)
{
    size_t n = 0;
    while (args && args[n])
        n++;
    char **argv = calloc(n + 5, sizeof *argv);
    ck_assert(argv != NULL);
    size_t k = 0;
    argv[k++] = (char *)bin;
    for (size_t i = 0; i < n; i++)
        argv[k++] = (char *)args[i];
    if (fut_test_rt_is_mt()) {
        argv[k++] = (char *)"--workers";
        argv[k++] = (char *)"2";
    }
    argv[k++] = (char *)"0";
    return argv;
}

/* environ plus 'env'. */
static char **make_env(const char *const *env)
{
    size_t n = 0, m = 0;
    while (environ[n])
        n++;
    while (env && env[m])
        m++;
    char **e = calloc(n + m + 1, sizeof *e);
    ck_assert(e != NULL);
    memcpy(e, environ, n * sizeof *e);
    for (size_t i = 0; i < m; i++)
        e[n + i] = (char *)env[i];
    return e;
}

/* Reads the child's stderr up to its "listening on" line; the port. */
static int read_port(struct ex_server *s)
{
    char line[512];
    size_t len = 0;
    int64_t end = ex_now_ms() + 10000;
    while (ex_now_ms() < end && len < sizeof line - 1) {
        struct pollfd p = {s->err_fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t r = read(s->err_fd, line + len, 1);
        if (r <= 0)
            break;
        if (line[len] == '\n') {
            line[len] = 0;
            fprintf(stderr, "[%s] %s\n", s->name, line);
            const char *at = strstr(line, "listening on ");
            const char *colon = at ? strrchr(at, ':') : NULL;
            if (colon)
                return atoi(colon + 1);
            len = 0;
            continue;
        }
        len++;
    }
    return -1;
}

void ex_start(struct ex_server *s, const char *bin, const char *const *args,
              const char *const *env)
{
    int pfd[2];
    ck_assert(pipe2(pfd, O_CLOEXEC) == 0);
    char **argv = make_argv(bin, args), **envp = make_env(env);
    const char *slash = strrchr(bin, '/');
    s->name = slash ? slash + 1 : bin;
    s->pid = fork();
    ck_assert(s->pid >= 0);
    if (s->pid == 0) {
        dup2(pfd[1], 2);
        execve(bin, argv, envp);
        _exit(127);
    }
    free(argv);
    free(envp);
    close(pfd[1]);
    s->err_fd = pfd[0];
    s->port = read_port(s);
    if (s->port <= 0) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
        ck_abort_msg("%s did not say which port it listens on", bin);
    }
}

/* Copies what the child wrote on stderr to ours (non-blocking). */
static void drain_stderr(struct ex_server *s)
{
    char buf[4096];
    for (;;) {
        struct pollfd p = {s->err_fd, POLLIN, 0};
        if (poll(&p, 1, 0) <= 0)
            return;
        ssize_t r = read(s->err_fd, buf, sizeof buf);
        if (r <= 0)
            return;
        fprintf(stderr, "[%s] %.*s", s->name, (int)r, buf);
    }
}

int ex_stop(struct ex_server *s, int timeout_ms)
{
    kill(s->pid, SIGTERM);
    int64_t end = ex_now_ms() + timeout_ms;
    int st = 0, rc = -1;
    for (;;) {
        drain_stderr(s);
        pid_t w = waitpid(s->pid, &st, WNOHANG);
        if (w == s->pid) {
            rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            break;
        }
        if (ex_now_ms() >= end) {
            kill(s->pid, SIGKILL);
            waitpid(s->pid, &st, 0);
            break;
        }
        usleep(10000);
    }
    drain_stderr(s);
    close(s->err_fd);
    return rc;
}

long ex_rss_kib(const struct ex_server *s)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)s->pid);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    fclose(f);
    ck_assert(kib > 0);
    return kib;
}

int ex_connect(int port, int timeout_ms)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_msg(fd >= 0, "socket: %s", strerror(errno));
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_msg(connect(fd, (struct sockaddr *)&a, sizeof a) == 0,
                  "connect: %s", strerror(errno));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

void ex_send_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        ck_assert_msg(w > 0, "send: %s", strerror(errno));
        p += w;
        n -= (size_t)w;
    }
}

size_t ex_recv_n(int fd, char *buf, size_t n, int timeout_ms, int *eof)
{
    size_t got = 0;
    int64_t end = ex_now_ms() + timeout_ms;
    if (eof)
        *eof = 0;
    while (got < n) {
        int left = (int)(end - ex_now_ms());
        struct pollfd p = {fd, POLLIN, 0};
        if (left <= 0 || poll(&p, 1, left) <= 0)
            break;
        ssize_t r = recv(fd, buf + got, n - got, MSG_DONTWAIT);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r <= 0) {
            if (eof)
                *eof = r == 0 ? 1 : -1;
            break;
        }
        got += (size_t)r;
    }
    return got;
}

int64_t ex_wait_eof(int fd, int timeout_ms)
{
    int64_t t0 = ex_now_ms();
    char buf[4096];
    for (;;) {
        int eof;
        int left = (int)(t0 + timeout_ms - ex_now_ms());
        if (left <= 0)
            return -1;
        ex_recv_n(fd, buf, sizeof buf, left, &eof);
        if (eof)
            return ex_now_ms() - t0;
    }
}

void ex_reset(int fd)
{
    struct linger l = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close(fd);
}

/* One connection that served once: sends 'req', reads its answer. */
static int probe(int port, const char *req, size_t req_len, size_t resp_len)
{
    char buf[512];
    ck_assert(resp_len <= sizeof buf);
    int fd = ex_connect(port, 5000);
    ex_send_all(fd, req, req_len);
    ASSERT_EQ(ex_recv_n(fd, buf, resp_len, 5000, NULL), resp_len);
    return fd;
}

/* The RSS once it stood still for three 200 ms samples (at most 4 s). */
static long settled_rss(const struct ex_server *s)
{
    long last = -1, now = ex_rss_kib(s);
    for (int still = 0, i = 0; still < 3 && i < 20; i++) {
        usleep(200000);
        last = now;
        now = ex_rss_kib(s);
        still = now == last ? still + 1 : 0;
    }
    return now;
}

long ex_idle_rss_per_conn(struct ex_server *s, int n, const char *req,
                          size_t req_len, size_t resp_len)
{
    enum { WARM = 100 };
    int *fds = calloc((size_t)n + WARM, sizeof *fds);
    ck_assert(fds != NULL);
    /* The first connections pay for caches (task slabs, arenas). */
    for (int i = 0; i < WARM; i++)
        fds[i] = probe(s->port, req, req_len, resp_len);
    long r0 = settled_rss(s);
    for (int i = WARM; i < n + WARM; i++)
        fds[i] = probe(s->port, req, req_len, resp_len);
    long r1 = settled_rss(s);
    long per = (r1 - r0) * 1024 / n;
    fprintf(stderr,
            "[%s] RSS %ld KiB -> %ld KiB with %d more idle "
            "connections: %ld bytes each\n",
            s->name, r0, r1, n, per);
    for (int i = 0; i < n + WARM; i++)
        close(fds[i]);
    free(fds);
    return per;
}

/* 'conns' connections to 'port' (<= 256), 'rounds' lockstep exchanges
 * of 'req' -> 'reply' on each. A connection whose send fails, or whose
 * reply is short, EOF or a reset (what an injected fault does to it),
 * must close within 5 s (else the test fails) and counts in '*broken'.
 * Returns the connections that did every round, or -1 when a reply had
 * the right length and wrong bytes. */
static int fault_clients(int port, int conns, int rounds, const char *req,
                         size_t req_len, const char *reply, size_t reply_len,
                         int *broken)
{
    int fd[256], alive = 0, done = 0;
    char buf[4096];
    ck_assert(conns <= 256 && reply_len <= sizeof buf);
    *broken = 0;
    for (int i = 0; i < conns; i++) {
        fd[i] = ex_connect(port, 5000);
        alive++;
    }
    for (int r = 0; r < rounds && alive > 0; r++) {
        for (int i = 0; i < conns; i++) {
            if (fd[i] < 0)
                continue;
            ssize_t w = send(fd[i], req, req_len, MSG_NOSIGNAL);
            if (w != (ssize_t)req_len) {
                close(fd[i]);
                fd[i] = -1;
                alive--;
                (*broken)++;
            }
        }
        for (int i = 0; i < conns; i++) {
            if (fd[i] < 0)
                continue;
            int eof = 0;
            size_t got = ex_recv_n(fd[i], buf, reply_len, 5000, &eof);
            if (got == reply_len && memcmp(buf, reply, reply_len) != 0)
                return -1; /* wrong bytes: never what a fault may do */
            if (got != reply_len) {
                /* A fault broke this one: it must end (EOF or reset),
                 * never hang with the others served. */
                ck_assert_msg(eof || ex_wait_eof(fd[i], 5000) >= 0,
                              "a broken connection neither answered nor "
                              "closed within 5 s");
                close(fd[i]);
                fd[i] = -1;
                alive--;
                (*broken)++;
            }
        }
    }
    for (int i = 0; i < conns; i++)
        if (fd[i] >= 0) {
            close(fd[i]);
            done++;
        }
    return done;
}

void ex_uring_faults(const char *bin, const char *req, size_t req_len,
                     const char *reply, size_t reply_len)
{
    const char *env[] = {"FUT_URING_FAULTS=recv:ECONNRESET@23,send:EPIPE@29,"
                         "accept:ECONNABORTED@5,recv:short@3,send:short@4,"
                         "sqfull@7",
                         NULL};
    struct ex_server s;
    ex_start(&s, bin, NULL, env);
    int broken;
    int done = fault_clients(s.port, 60, 10, req, req_len, reply, reply_len,
                             &broken);
    ck_assert_msg(done >= 0, "a reply came back with other bytes");
    fprintf(stderr,
            "uring_faults: %d connections served every round, %d "
            "broken by faults\n",
            done, broken);
    ck_assert_int_eq(done + broken, 60);
    ck_assert_msg(broken > 0, "no fault broke a connection");
    ck_assert_msg(done >= 10, "only %d of 60 connections survived", done);
    ASSERT_EQ(ex_stop(&s, 15000), 0);
}
