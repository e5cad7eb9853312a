/* SPDX-License-Identifier: MIT */
/* The fut-redis tests' harness: starting fut-redis and redis-server as
 * child processes, raw client sockets, redis-cli runs. Every wait is
 * bounded (HARNESS_WAIT_MS); failures abort the test case with a message
 * (Check's ck_assert). */
#ifndef FUT_REDIS_HARNESS_H
#define FUT_REDIS_HARNESS_H

#include <stddef.h>
#include <sys/types.h>

#define HARNESS_WAIT_MS 20000

struct srvproc {
    pid_t pid;
    int port;       /* TCP port (fut-redis: read from its stderr) */
    char sock[256]; /* Unix socket path, or "" */
    char log[256];  /* its stdout + stderr */
};

/* 1 when the Debian packages' programs are on PATH (redis-server,
 * redis-cli, redis-benchmark as asked). */
int harness_have(const char *prog);
/* Exits 77 (CTest's skip) with a message naming what is missing, unless
 * every program in the NULL-terminated list is on PATH. Call in main. */
void harness_require(const char *const *progs);

/* A fresh directory for this test case's files (under $TMPDIR or /tmp);
 * harness_cleanup removes it (call it when the case passed: a failing
 * case leaves its files for a look). */
const char *harness_dir(void);
void harness_cleanup(void);

/* Starts fut-redis with 'args' (NULL-terminated, after argv[0]), on a
 * Unix socket 'name' in harness_dir() when sock_name is set (then with
 * --port 0: no TCP), else on a free TCP port; with --workers 2 when the
 * test runs as its .mt variant (FUT_TEST_RT=mt). Waits until it accepts
 * connections. */
void fut_redis_start(struct srvproc *p, const char *sock_name,
                     const char *const *args);
/* Starts redis-server 7.0 on a Unix socket (no persistence). */
void redis_server_start(struct srvproc *p, const char *sock_name);
/* SIGTERM, then waits for it (bounded); returns its exit status (the
 * value of exit(), or 128 + signal). */
int srv_stop(struct srvproc *p);

/* A blocking client socket to 'p' (TCP when p->port, else its Unix
 * socket), with a receive timeout of HARNESS_WAIT_MS. -1 on failure. */
int client_connect(const struct srvproc *p);
/* Sends all of 'len' bytes; 0 or -1. */
int client_send(int fd, const void *buf, size_t len);
/* Reads until 'len' bytes came, EOF, or the timeout; returns the count. */
size_t client_recv(int fd, char *buf, size_t len);
/* One recv (waits up to the timeout); the count, 0 at EOF or error. */
size_t client_recv_some(int fd, char *buf, size_t len);
/* Reads until EOF (or the timeout: then returns -1); the bytes read are
 * in 'buf' ('*n' of them, at most 'len'). */
int client_recv_eof(int fd, char *buf, size_t len, size_t *n);

/* The value of 'field' in the reply to INFO (over a new connection);
 * fails the test case when INFO has no such field. */
long long info_field(const struct srvproc *p, const char *field);

/* Runs 'cmd' (a shell command line) and returns its exit status. */
int harness_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Reads a whole file (malloc, NUL-terminated); '*len' its size. */
char *harness_slurp(const char *path, size_t *len);

#endif
