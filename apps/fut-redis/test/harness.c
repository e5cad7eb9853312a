/* SPDX-License-Identifier: MIT */
/* The fut-redis tests' harness (harness.h). */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include "test.h"

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

int harness_have(const char *prog)
{
    return harness_sh("command -v %s >/dev/null 2>&1", prog) == 0;
}

void harness_require(const char *const *progs)
{
    for (; *progs; progs++) {
        if (harness_have(*progs))
            continue;
        printf("SKIP: '%s' is not installed (Debian: apt-get install "
               "redis-server redis-tools; scripts/test-all.sh installs "
               "them)\n",
               *progs);
        exit(77);
    }
}

const char *harness_dir(void)
{
    static char dir[256];
    if (!dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/futredis.XXXXXX", t ? t : "/tmp");
        ck_assert_ptr_nonnull(mkdtemp(dir));
    }
    return dir;
}

void harness_cleanup(void)
{
    harness_sh("rm -rf '%s'", harness_dir());
}

int harness_sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

char *harness_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "open %s: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    size_t r;
    while ((r = fread(b + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (cap - n - 1 == 0)
            b = realloc(b, cap *= 2);
    }
    fclose(f);
    b[n] = '\0';
    if (len)
        *len = n;
    return b;
}

/* The servers started, killed at exit when a failing check ends the
 * test case before srv_stop. */
static pid_t started[16];
static int nstarted;

static void kill_started(void)
{
    for (int i = 0; i < nstarted; i++)
        if (started[i] > 0)
            kill(started[i], SIGKILL);
}

static pid_t spawn(const char *const *argv, const char *log)
{
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ck_assert_msg(fd >= 0, "%s: %s", log, strerror(errno));
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int in = open("/dev/null", O_RDONLY);
        if (in < 0)
            _exit(126);
        dup2(in, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(fd);
    if (nstarted == 0)
        atexit(kill_started);
    if (nstarted < 16)
        started[nstarted++] = pid;
    return pid;
}

/* Waits until the log holds 'line' (or the process died). */
static char *wait_log(struct srvproc *p, const char *line)
{
    for (int ms = 0; ms < HARNESS_WAIT_MS; ms += 10) {
        char *log = harness_slurp(p->log, NULL);
        if (strcasestr(log, line))
            return log;
        int st;
        if (waitpid(p->pid, &st, WNOHANG) == p->pid)
            ck_abort_msg("server exited early (status %d): %s", st, log);
        free(log);
        sleep_ms(10);
    }
    ck_abort_msg("server not ready after %d ms (%s)", HARNESS_WAIT_MS,
                 p->log);
    return NULL;
}

void fut_redis_start(struct srvproc *p, const char *sock_name,
                     const char *const *args)
{
    memset(p, 0, sizeof *p);
    const char *argv[64];
    int n = 0;
    argv[n++] = FUT_REDIS_BIN;
    argv[n++] = "--port";
    argv[n++] = "0";
    if (sock_name) {
        snprintf(p->sock, sizeof p->sock, "%s/%s", harness_dir(), sock_name);
        argv[n++] = "--unixsocket";
        argv[n++] = p->sock;
    }
    if (fut_test_rt_is_mt()) {
        argv[n++] = "--workers";
        argv[n++] = "2";
    }
    for (; args && *args && n < 62; args++)
        argv[n++] = *args;
    argv[n] = NULL;
    snprintf(p->log, sizeof p->log, "%s/fut-redis.%s.log", harness_dir(),
             sock_name ? sock_name : "tcp");
    p->pid = spawn(argv, p->log);
    char *log = wait_log(p, "ready to accept connections");
    const char *at = strstr(log, "listening on 127.0.0.1:");
    if (at)
        p->port = atoi(at + strlen("listening on 127.0.0.1:"));
    free(log);
    ck_assert_msg(sock_name || p->port > 0, "no port in %s", p->log);
}

void redis_server_start(struct srvproc *p, const char *sock_name)
{
    memset(p, 0, sizeof *p);
    snprintf(p->sock, sizeof p->sock, "%s/%s", harness_dir(), sock_name);
    snprintf(p->log, sizeof p->log, "%s/redis-server.%s.log", harness_dir(),
             sock_name);
    const char *argv[] = {"redis-server", "--port",      "0",  "--unixsocket",
                          p->sock,        "--save",      "",   "--appendonly",
                          "no",           "--daemonize", "no", NULL};
    p->pid = spawn(argv, p->log);
    free(wait_log(p, "Ready to accept connections"));
}

int srv_stop(struct srvproc *p)
{
    int st = 0;
    kill(p->pid, SIGTERM);
    for (int ms = 0; ms < HARNESS_WAIT_MS; ms += 5) {
        if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
            for (int i = 0; i < nstarted; i++)
                if (started[i] == p->pid)
                    started[i] = 0;
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
        sleep_ms(5);
    }
    kill(p->pid, SIGKILL);
    waitpid(p->pid, &st, 0);
    return 255; /* did not stop */
}

int client_connect(const struct srvproc *p)
{
    int fd;
    if (p->port) {
        struct sockaddr_in sin = {.sin_family = AF_INET,
                                  .sin_port = htons((uint16_t)p->port)};
        sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof sin) != 0)
            goto fail;
    } else {
        struct sockaddr_un sun = {.sun_family = AF_UNIX};
        size_t sl = strlen(p->sock);
        if (sl >= sizeof sun.sun_path)
            return -1;
        memcpy(sun.sun_path, p->sock, sl + 1);
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof sun) != 0)
            goto fail;
    }
    struct timeval tv = {HARNESS_WAIT_MS / 1000, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
fail:
    if (fd >= 0)
        close(fd);
    return -1;
}

int client_send(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

size_t client_recv(int fd, char *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = recv(fd, buf + got, len - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    return got;
}

size_t client_recv_some(int fd, char *buf, size_t len)
{
    for (;;) {
        ssize_t n = recv(fd, buf, len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        return n > 0 ? (size_t)n : 0;
    }
}

int client_recv_eof(int fd, char *buf, size_t len, size_t *n)
{
    *n = 0;
    for (;;) {
        char scratch[4096];
        char *dst = *n < len ? buf + *n : scratch;
        size_t room = *n < len ? len - *n : sizeof scratch;
        ssize_t r = recv(fd, dst, room, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0 || (r < 0 && errno == ECONNRESET))
            return 0;
        if (r < 0)
            return -1; /* the timeout */
        if (dst != scratch)
            *n += (size_t)r;
    }
}

/* The value of 'field' in INFO's reply (a new connection). */
long long info_field(const struct srvproc *p, const char *field)
{
    int fd = client_connect(p);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(client_send(fd, "INFO\r\n", 6), 0);
    char buf[8192];
    size_t n = 0;
    for (;;) { /* "$<len>\r\n<body>\r\n" */
        ssize_t r = recv(fd, buf + n, sizeof buf - 1 - n, 0);
        ck_assert_int_gt(r, 0);
        n += (size_t)r;
        buf[n] = '\0';
        char *body = strstr(buf, "\r\n");
        if (body && n >= (size_t)(body - buf) + 2 + (size_t)atol(buf + 1) + 2)
            break;
    }
    close(fd);
    char key[128];
    snprintf(key, sizeof key, "\r\n%s:", field);
    const char *at = strstr(buf, key);
    ck_assert_msg(at != NULL, "INFO has no %s", field);
    return atoll(at + strlen(key));
}
