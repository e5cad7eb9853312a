/* SPDX-License-Identifier: MIT */
/* Graceful shutdown of examples/echo_server (fut_shutdown over a task
 * scope, C16/C17) with 1,000 open loopback connections: the server gets
 * SIGTERM while every connection is open and idle; it must stop
 * accepting, close all 1,000 (each client reads EOF), report the
 * shutdown as graceful, exit 0 (its own leak check passed: 0 blocks, 0
 * connections left) well within its 5 s grace period; no leak here
 * either. The .mt variant runs the server with --workers 2. */
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#include "net_echo.h"

#define N_CONNS 1000
#define GRACE_MS 5000

static int n_done, n_eof, n_errors, n_exchanged;

/* A client: one echo exchange, then waits for the server to close. */
struct sd_client {
    struct fut_future base;
    struct echo_client c;
    struct fut_io_read rd;
    char b[16];
};

static int sd_client_poll(struct fut_future *f, struct fut_context *cx)
{
    struct sd_client *s = (struct sd_client *)f;
    FUT_BEGIN(f);
    FUT_AWAIT(f, &s->c);
    if (s->c.result != 0) {
        n_errors++;
        FUT_RETURN(f);
    }
    n_exchanged++;
    fut_io_read_init(&s->rd, s->c.io, s->b, sizeof s->b);
    FUT_AWAIT(f, &s->rd);
    if (s->rd.result == 0)
        n_eof++; /* closed by the server's shutdown */
    else
        n_errors++;
    FUT_END(f);
}

static void sd_client_cleanup(struct fut_future *f)
{
    struct sd_client *s = (struct sd_client *)f;
    if (s->c.io)
        fut_io_close(s->c.io);
    s->c.io = NULL;
    n_done++;
}
FUT_ASYNC_VTABLE(sd_client_vt, "sd_client", sd_client_poll,
                 sd_client_cleanup);

struct sd_driver {
    struct fut_future base;
    int port, spawned;
    pid_t pid;
    int64_t deadline, t_term, t_closed;
    struct fut_sleep s;
};

static int sd_driver_poll(struct fut_future *f, struct fut_context *cx)
{
    struct sd_driver *d = (struct sd_driver *)f;
    FUT_BEGIN(f);
    /* Waves of 250 connects (the listen backlog never overflows). */
    while (d->spawned < N_CONNS && fut_now_ns() < d->deadline) {
        for (int k = 0; k < 250 && d->spawned < N_CONNS; k++, d->spawned++) {
            struct sd_client c;
            memset(&c, 0, sizeof c);
            fut_future_init(&c.base, &sd_client_vt);
            echo_client_init(&c.c, d->port, 1, 64);
            c.c.keep_open = 1;
            if (fut_spawn(NULL, &c, sizeof c, NULL) != 0)
                n_errors++;
        }
        while (n_exchanged + n_errors < d->spawned &&
               fut_now_ns() < d->deadline) {
            fut_sleep_init(&d->s, 2 * MS);
            FUT_AWAIT(f, &d->s);
        }
    }
    /* All 1,000 open and idle on the server: shut it down. */
    d->t_term = fut_now_ns();
    kill(d->pid, SIGTERM);
    while (n_done < N_CONNS && fut_now_ns() < d->deadline) {
        fut_sleep_init(&d->s, 2 * MS);
        FUT_AWAIT(f, &d->s);
    }
    d->t_closed = fut_now_ns();
    FUT_END(f);
}
FUT_ASYNC_VTABLE(sd_driver_vt, "sd_driver", sd_driver_poll, NULL);

/* Waits until 'port' accepts connections (the server has started). */
static void wait_listening(int port)
{
    for (int i = 0; i < 500; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a;
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_port = htons((uint16_t)port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int r = connect(fd, (struct sockaddr *)&a, sizeof a);
        close(fd);
        if (r == 0)
            return;
        struct timespec ts = {0, 10 * MS};
        nanosleep(&ts, NULL);
    }
    ck_abort_msg("echo_server did not start listening on %d", port);
}

START_TEST(echo1000)
{
    n_done = n_eof = n_errors = n_exchanged = 0;
    int port;
    struct fut_io *l = listen_any(&port);
    fut_io_close(l); /* the server binds it again */
    int errpipe[2];
    ASSERT_EQ(pipe(errpipe), 0);
    /* Room for a debug build's slow-poll warnings under load: the server
     * must not block on stderr while the clients run. */
    (void)fcntl(errpipe[0], F_SETPIPE_SZ, 1 << 20);
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port);
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        dup2(errpipe[1], 2);
        close(errpipe[0]);
        close(errpipe[1]);
        if (fut_test_rt_is_mt())
            execl(FUT_ECHO_SERVER, "echo_server", "--workers", "2", portstr,
                  (char *)NULL);
        else
            execl(FUT_ECHO_SERVER, "echo_server", portstr, (char *)NULL);
        _exit(127);
    }
    close(errpipe[1]);
    wait_listening(port); /* that probe is connection 0: closed again */
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg); /* clients: current-thread */
    struct fut_runtime *rt;
    ASSERT_EQ(fut_runtime_new(&cfg, &rt), 0);
    struct sd_driver d;
    memset(&d, 0, sizeof d);
    fut_future_init(&d.base, &sd_driver_vt);
    d.port = port;
    d.pid = pid;
    d.deadline = fut_now_ns() + 60000 * MS;
    ASSERT_EQ(fut_block_on(rt, &d.base), 0);
    fut_drop(&d.base);
    fut_runtime_free(rt);
    /* All of the server's stderr: under load a debug build's slow-poll
     * warnings can come before the lines looked for. */
    static char log[1 << 20];
    size_t n = 0;
    ssize_t k;
    while (n < sizeof log - 1 &&
           (k = read(errpipe[0], log + n, sizeof log - 1 - n)) > 0)
        n += (size_t)k;
    log[n] = 0;
    close(errpipe[0]);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    int64_t t_exit = fut_now_ns();
    fprintf(stderr, "%s", log);
    ASSERT_EQ(n_errors, 0);
    ASSERT_EQ(n_exchanged, N_CONNS);
    ASSERT_EQ(n_eof, N_CONNS); /* every connection closed by the server */
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "echo_server status %d", status);
    /* The log is on stderr above: Check's messages are short. */
    ck_assert_msg(strstr(log, "(graceful)") != NULL,
                  "not a graceful shutdown (server log above)");
    ck_assert_msg(strstr(log, "1001 connections served") != NULL,
                  "connection count (server log above)");
    int64_t ms = (t_exit - d.t_term) / MS;
    fprintf(stderr,
            "shutdown: all closed after %lld ms, exit after %lld "
            "ms (grace %d ms)\n",
            (long long)((d.t_closed - d.t_term) / MS), (long long)ms,
            GRACE_MS);
    ck_assert_msg(ms < GRACE_MS, "shutdown took %lld ms", (long long)ms);
}
END_TEST

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    Suite *s = suite_create("net_shutdown");
    tcase_add_test(fut_test_tcase(s, "echo1000"), echo1000);
    return fut_test_run(s);
}
