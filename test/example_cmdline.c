/* SPDX-License-Identifier: MIT */
/* The command lines of the example programs and of fut-redis (issue 30):
 * each answers --help and -h with its usage on stdout, exit 0 and nothing
 * on stderr; and a bad argument (an unknown option, a non-numeric or
 * out-of-range number, a missing option value, an extra argument) with
 * its usage on stderr and exit 2, at once - it never starts serving (no
 * "listening on", and it exits by itself within 5 s). One case per
 * program; the binaries' paths come from test/example_servers.cmake. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

struct run {
    int status;     /* waitpid's */
    int timed_out;  /* still running after 5 s: killed */
    char out[8192]; /* its stdout */
    char err[8192]; /* its stderr */
};

/* A temporary file, unlinked at once (read back through its fd). */
static int tmp_fd(void)
{
    char path[] = "/tmp/fut-cmdline-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    unlink(path);
    return fd;
}

static void slurp(int fd, char *buf, size_t cap)
{
    ssize_t n = pread(fd, buf, cap - 1, 0);
    buf[n > 0 ? n : 0] = 0;
    close(fd);
}

/* Waits for 'pid' 5 s at most, then kills it. */
static void reap(pid_t pid, struct run *r)
{
    struct timespec tick = {0, 10 * 1000 * 1000};
    for (int i = 0; i < 500; i++) {
        if (waitpid(pid, &r->status, WNOHANG) == pid)
            return;
        nanosleep(&tick, NULL);
    }
    r->timed_out = 1;
    kill(pid, SIGKILL);
    ck_assert_int_eq(waitpid(pid, &r->status, 0), pid);
}

/* Runs 'bin' with 'args' (split at spaces) to its end. */
static void run(const char *bin, const char *args, struct run *r)
{
    char buf[256], *argv[16];
    int n = 0;
    snprintf(buf, sizeof buf, "%s", args);
    argv[n++] = (char *)bin;
    for (char *t = strtok(buf, " "); t && n < 15; t = strtok(NULL, " "))
        argv[n++] = t;
    argv[n] = NULL;
    int out = tmp_fd(), err = tmp_fd();
    memset(r, 0, sizeof *r);
    fflush(stderr);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(out, 1);
        dup2(err, 2);
        execv(bin, argv);
        _exit(127);
    }
    reap(pid, r);
    slurp(out, r->out, sizeof r->out);
    slurp(err, r->err, sizeof r->err);
}

static int exited(const struct run *r, int code)
{
    return !r->timed_out && WIFEXITED(r->status) &&
           WEXITSTATUS(r->status) == code;
}

/* --help and -h: the usage ("usage: <name>") on stdout, exit 0, nothing
 * on stderr. */
static void check_help(const char *bin, const char *name)
{
    static const char *const helps[] = {"--help", "-h"};
    char want[64];
    snprintf(want, sizeof want, "usage: %s", name);
    for (size_t i = 0; i < 2; i++) {
        struct run r;
        run(bin, helps[i], &r);
        ck_assert_msg(exited(&r, 0) && strstr(r.out, want) && !r.err[0],
                      "%s %s: status %#x%s, stdout [%s], stderr [%s]", name,
                      helps[i], r.status, r.timed_out ? " (killed)" : "",
                      r.out, r.err);
    }
}

/* Each of 'bad' (NULL-terminated): the usage on stderr, exit 2, never
 * serving. */
static void check_bad(const char *bin, const char *name,
                      const char *const *bad)
{
    char want[64];
    snprintf(want, sizeof want, "usage: %s", name);
    for (; *bad; bad++) {
        struct run r;
        run(bin, *bad, &r);
        ck_assert_msg(
            exited(&r, 2) && strstr(r.err, want) && !strstr(r.out, want) &&
                !strstr(r.out, "listening on") &&
                !strstr(r.err, "listening on"),
            "%s %s: status %#x%s, stdout [%s], stderr [%s]", name, *bad,
            r.status, r.timed_out ? " (killed)" : "", r.out, r.err);
    }
}

/* The bad command lines of the servers taking [--workers N] PORT. */
static const char *const server_bad[] = {
    "--nosuch 0",      /* unknown option */
    "abc",             /* non-numeric port */
    "70000",           /* port out of range */
    "12x",             /* trailing garbage */
    "0 --workers",     /* missing option value */
    "--workers x 0",   /* non-numeric number */
    "--workers 999 0", /* number out of range */
    "0 1",             /* extra argument */
    "",                /* no PORT */
    NULL,
};

START_TEST(echo_server)
{
    check_help(ECHO_SERVER_BIN, "echo_server");
    check_bad(ECHO_SERVER_BIN, "echo_server", server_bad);
    static const char *const more[] = {"--idle-timeout x 0",
                                       "0 --idle-timeout", "0 --host", NULL};
    check_bad(ECHO_SERVER_BIN, "echo_server", more);
}
END_TEST

START_TEST(http_hello)
{
    check_help(HTTP_HELLO_BIN, "http_hello");
    check_bad(HTTP_HELLO_BIN, "http_hello", server_bad);
    static const char *const more[] = {"--header-timeout 0 0",
                                       "0 --send-timeout", NULL};
    check_bad(HTTP_HELLO_BIN, "http_hello", more);
}
END_TEST

START_TEST(echo_fiber)
{
    check_help(ECHO_FIBER_BIN, "echo_fiber");
    check_bad(ECHO_FIBER_BIN, "echo_fiber", server_bad);
}
END_TEST

START_TEST(chat_fiber)
{
    check_help(CHAT_FIBER_BIN, "chat_fiber");
    check_bad(CHAT_FIBER_BIN, "chat_fiber", server_bad);
}
END_TEST

START_TEST(tour)
{
    check_help(TOUR_BIN, "tour");
    static const char *const bad[] = {"--nosuch", "extra", "--help extra",
                                      NULL};
    check_bad(TOUR_BIN, "tour", bad);
}
END_TEST

START_TEST(fut_redis)
{
    check_help(FUT_REDIS_BIN, "fut-redis");
    static const char *const bad[] = {
        "--port 0 --nosuch 1", "--port abc",  "--port 70000",  "--port 0 1",
        "--maxmemory",         "config.conf", "--workers 999", NULL,
    };
    check_bad(FUT_REDIS_BIN, "fut-redis", bad);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("example_cmdline");
    tcase_add_test(fut_test_tcase(s, "echo_server"), echo_server);
    tcase_add_test(fut_test_tcase(s, "http_hello"), http_hello);
    tcase_add_test(fut_test_tcase(s, "echo_fiber"), echo_fiber);
    tcase_add_test(fut_test_tcase(s, "chat_fiber"), chat_fiber);
    tcase_add_test(fut_test_tcase(s, "tour"), tour);
    tcase_add_test(fut_test_tcase(s, "fut_redis"), fut_redis);
    return fut_test_run(s);
}
