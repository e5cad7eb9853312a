/* SPDX-License-Identifier: MIT */
/* The fiber examples, run as child processes on an ephemeral port (they
 * print "listening on P"): examples/echo_fiber echoes for 16 clients and
 * exits 0 on SIGTERM with a client still connected (which sees EOF);
 * examples/chat_fiber delivers every line of every client to every other
 * client exactly once, in order, never to its sender, while one client
 * that does not read (8 KiB receive buffer, megabytes queued for it)
 * blocks nobody - then it reads its copy, complete - and exits 0 on
 * SIGTERM. The clients are fibers of this process. The .mt variants run
 * the servers with --workers 2.
 *
 * The 3,000-line hang (issue 20): with 3 clients x 3,000 lines of 1 KB,
 * the slow client's 9 MB took about 250 s to arrive, at 40 KB/s, and
 * the case ran past its timeout. Neither the server nor fut was stuck
 * (every other socket was idle, the server's send queue to the slow
 * client shrank by 8 KiB every ~200 ms, and the case passed after 250
 * s): the test's slow client set SO_RCVBUF 4096 after connect. The
 * handshake had already chosen window scale 10 (1 KiB units) and a 64
 * KiB window for the default buffer (ss -tni: wscale:10,10,
 * rcv_space:65495); with the buffer shrunk to 8 KiB under that scale
 * and the loopback MSS, the kernel's receive-side silly-window
 * avoidance kept the advertised window at 0 after each segment, and the
 * server's kernel sent one 8 KiB segment per persist-timer probe (~200
 * ms). The slow client now sets the buffer before it connects
 * (dial_slow): the handshake picks scale 0 and a 4 KiB window
 * (wscale:10,0, rcv_space:4096), and its 9 MB drain in well under a
 * second with the same small buffer.
 * read_all has an overall deadline so that a trickle fails with
 * a message instead of a CTest timeout. */
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define MS (1000LL * 1000)
#define SEC (1000 * MS)

struct child {
    pid_t pid;
    int port;
};

static struct child start(const char *path)
{
    int out[2];
    ck_assert_int_eq(pipe(out), 0);
    struct child c = {fork(), 0};
    ck_assert(c.pid >= 0);
    if (c.pid == 0) {
        dup2(out[1], 1);
        close(out[0]);
        close(out[1]);
        if (fut_test_rt_is_mt())
            execl(path, path, "--workers", "2", "0", (char *)NULL);
        else
            execl(path, path, "0", (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    char buf[64] = {0};
    size_t got = 0;
    ssize_t n;
    while (got < sizeof buf - 1 && !strchr(buf, '\n') &&
           (n = read(out[0], buf + got, sizeof buf - 1 - got)) > 0)
        got += (size_t)n;
    close(out[0]);
    ck_assert_msg(sscanf(buf, "listening on %d", &c.port) == 1,
                  "%s printed '%s'", path, buf);
    return c;
}

static struct fut_io *dial(int port)
{
    struct sockaddr_storage ss;
    socklen_t len;
    ck_assert_int_eq(fut_addr_parse("127.0.0.1", port, &ss, &len), 0);
    struct fut_io *io = NULL;
    ck_assert_int_eq(fut_connect((struct sockaddr *)&ss, len,
                                 fut_time_now() + 10 * SEC, &io),
                     0);
    return io;
}

/* A client with a small receive buffer that stays fast once it reads:
 * SO_RCVBUF is set before connect (see the top: set after, the client
 * trickles at one segment per ~200 ms). A blocking connect to loopback:
 * the kernel completes it without the server. */
static struct fut_io *dial_slow(int port, int rcvbuf)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert(fd >= 0);
    ck_assert_int_eq(
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf), 0);
    struct sockaddr_storage ss;
    socklen_t len;
    ck_assert_int_eq(fut_addr_parse("127.0.0.1", port, &ss, &len), 0);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&ss, len), 0);
    struct fut_io *io = NULL;
    ck_assert_int_eq(fut_io_from_fd(fd, &io), 0);
    return io;
}

/* ---------------------------------------------------------------- echo */

static int echo_port;

static intptr_t echo_client(void *arg)
{
    intptr_t id = (intptr_t)arg;
    struct fut_io *io = dial(echo_port);
    for (int i = 0; i < 10; i++) {
        char msg[64], back[64];
        int n =
            snprintf(msg, sizeof msg, "client %d message %d\n", (int)id, i);
        ck_assert_int_eq(fut_write_all(io, msg, (size_t)n), n);
        int got = 0;
        while (got < n) {
            ssize_t r = fut_read(io, back + got, sizeof back - (size_t)got);
            ck_assert(r > 0);
            got += (int)r;
        }
        ck_assert(got == n && memcmp(msg, back, (size_t)n) == 0);
    }
    fut_io_close(io);
    return 0;
}

static volatile int idle_connected;

/* Connects and waits for the server to close the connection: returns
 * 0 for EOF (a graceful close), else the read's result. */
static intptr_t idle_client(void *arg)
{
    (void)arg;
    struct fut_io *io = dial(echo_port);
    __atomic_store_n(&idle_connected, 1, __ATOMIC_RELEASE);
    char b[16];
    struct fut_io_read rd;
    fut_io_read_init(&rd, io, b, sizeof b);
    int r = fut_timeout_await(&rd, 20 * SEC);
    fut_io_close(io);
    return r != 0 ? r : rd.result;
}

/* SIGTERM to 'c' from a fiber (the runtime keeps running meanwhile);
 * its exit status within 'secs' seconds. */
static int stop_async(struct child c, int secs)
{
    kill(c.pid, SIGTERM);
    for (int i = 0; i < secs * 100; i++) {
        int st;
        if (waitpid(c.pid, &st, WNOHANG) == c.pid)
            return st;
        fut_sleep(10 * MS);
    }
    kill(c.pid, SIGKILL);
    waitpid(c.pid, NULL, 0);
    ck_abort_msg("the server did not exit within %d s of SIGTERM", secs);
    return -1;
}

static intptr_t echo_main(void *arg)
{
    struct child *c = arg;
    struct fut_join j[16], idle;
    for (intptr_t i = 0; i < 16; i++)
        ck_assert_int_eq(
            fut_fiber_spawn(NULL, echo_client, (void *)i, NULL, &j[i]), 0);
    for (int i = 0; i < 16; i++)
        ck_assert_int_eq(fut_fiber_join(&j[i], NULL), 0);
    __atomic_store_n(&idle_connected, 0, __ATOMIC_RELEASE);
    ck_assert_int_eq(fut_fiber_spawn(NULL, idle_client, NULL, NULL, &idle),
                     0);
    while (!__atomic_load_n(&idle_connected, __ATOMIC_ACQUIRE))
        fut_sleep(MS);
    fut_sleep(20 * MS); /* accepted by now */
    int st = stop_async(*c, 10);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
    intptr_t r = -1;
    ck_assert_int_eq(fut_fiber_join(&idle, &r), 0);
    ck_assert_int_eq(r, 0); /* EOF: the server closed it */
    return 0;
}

START_TEST(echo)
{
    struct child c = start(FUT_ECHO_FIBER);
    echo_port = c.port;
    struct fut_runtime *rt = fut_test_rt();
    ASSERT_EQ(fut_fiber_run(rt, echo_main, &c, NULL, NULL), 0);
    fut_runtime_free(rt);
}
END_TEST

/* ---------------------------------------------------------------- chat */

#define ACTIVE 3
#define LINES TEST_ITERS(3000, 300)
#define LINE_LEN 1000
/* Bound of each client's whole read (plain: ~1 s at 3,000 lines). */
#define CHAT_SECS 30

static int chat_port;

/* Buffered lines from a socket. */
struct lines {
    struct fut_io *io;
    char buf[8192];
    size_t off, have;
};

/* The next line (without '\n', NUL-terminated) into 'out': its length,
 * or a negative code (EOF: FUT_ECLOSED; FUT_ETIMEDOUT: 'deadline', an
 * absolute fut_time_now time, passed). */
static long next_line(struct lines *l, char *out, size_t cap,
                      int64_t deadline)
{
    size_t n = 0;
    for (;;) {
        while (l->off < l->have) {
            char ch = l->buf[l->off++];
            if (ch == '\n') {
                out[n] = 0;
                return (long)n;
            }
            if (n + 1 >= cap) /* not ck_assert: it writes a pipe per call */
                return -E2BIG;
            out[n++] = ch;
        }
        struct fut_io_read rd;
        fut_io_read_init(&rd, l->io, l->buf, sizeof l->buf);
        int64_t left = deadline - fut_time_now();
        int r = left > 0 ? fut_timeout_await(&rd, left) : FUT_ETIMEDOUT;
        if (r != 0)
            return r;
        if (rd.result <= 0)
            return rd.result == 0 ? FUT_ECLOSED : (long)rd.result;
        l->off = 0;
        l->have = (size_t)rd.result;
    }
}

/* Reads 'count' lines within CHAT_SECS and checks them: from senders
 * other than 'me' (-1: any), each sender's sequence numbers in order
 * from 0, each line whole. Returns the count read. */
static long read_all(struct fut_io *io, int me, long count)
{
    int64_t deadline = fut_time_now() + CHAT_SECS * SEC;
    struct lines *l = malloc(sizeof *l);
    char *line = malloc(LINE_LEN + 64);
    ck_assert(l != NULL && line != NULL);
    l->io = io;
    l->off = l->have = 0;
    long next[ACTIVE] = {0}, got = 0;
    while (got < count) {
        long n = next_line(l, line, LINE_LEN + 64, deadline);
        ck_assert_msg(n >= 0, "client %d: after %ld of %ld lines: %s", me,
                      got, count, fut_strerror((int)n));
        int from = -1;
        long seq = -1;
        /* Plain tests in the loop (ck_assert costs a write per call). */
        if (sscanf(line, "s%d %ld", &from, &seq) != 2 || from < 0 ||
            from >= ACTIVE || from == me || seq != next[from] ||
            n != LINE_LEN - 1)
            ck_abort_msg("client %d, line %ld: '%.40s' (%ld bytes; want "
                         "from another sender, seq %ld)",
                         me, got, line, n,
                         from >= 0 && from < ACTIVE ? next[from] : -1L);
        next[from]++;
        got++;
    }
    free(line);
    free(l);
    return got;
}

struct chatter {
    int id;
    struct fut_io *rd, *wr;
};

static intptr_t chat_writer(void *arg)
{
    struct chatter *c = arg;
    char *line = malloc(LINE_LEN + 1);
    ck_assert(line != NULL);
    for (long i = 0; i < LINES; i++) {
        int n = snprintf(line, LINE_LEN, "s%d %ld ", c->id, i);
        memset(line + n, 'a' + (int)(i % 26), (size_t)(LINE_LEN - 1 - n));
        line[LINE_LEN - 1] = '\n';
        if (fut_write_all(c->wr, line, LINE_LEN) != LINE_LEN)
            ck_abort_msg("client %d: write %ld failed", c->id, i);
    }
    free(line);
    return 0;
}

static intptr_t chat_reader(void *arg)
{
    struct chatter *c = arg;
    return read_all(c->rd, c->id, (long)(ACTIVE - 1) * LINES);
}

static intptr_t chat_main(void *arg)
{
    struct child *ch = arg;
    struct chatter cs[ACTIVE];
    struct fut_join jw[ACTIVE], jr[ACTIVE];
    struct fut_io *slow = dial_slow(chat_port, 4096);
    for (int i = 0; i < ACTIVE; i++) {
        cs[i].id = i;
        ck_assert_int_eq(fut_io_split(dial(chat_port), &cs[i].rd, &cs[i].wr),
                         0);
    }
    fut_sleep(50 * MS); /* every client has joined the chat */
    for (int i = 0; i < ACTIVE; i++) {
        ck_assert_int_eq(
            fut_fiber_spawn(NULL, chat_reader, &cs[i], NULL, &jr[i]), 0);
        ck_assert_int_eq(
            fut_fiber_spawn(NULL, chat_writer, &cs[i], NULL, &jw[i]), 0);
    }
    /* The active clients get everything while 'slow' reads nothing. */
    for (int i = 0; i < ACTIVE; i++) {
        intptr_t v = 0;
        ck_assert_int_eq(fut_fiber_join(&jw[i], NULL), 0);
        ck_assert_int_eq(fut_fiber_join(&jr[i], &v), 0);
        ck_assert_int_eq(v, (ACTIVE - 1) * LINES);
    }
    /* Now the slow client's copy, complete and in order. */
    ck_assert_int_eq(read_all(slow, -1, (long)ACTIVE * LINES),
                     (long)ACTIVE * LINES);
    /* Nothing more for anyone: no duplicate arrives. */
    char b[16];
    struct fut_io_read rd;
    for (int i = 0; i < ACTIVE; i++) {
        fut_io_read_init(&rd, cs[i].rd, b, sizeof b);
        ck_assert_int_eq(fut_timeout_await(&rd, 50 * MS), FUT_ETIMEDOUT);
    }
    int st = stop_async(*ch, 10);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
    for (int i = 0; i < ACTIVE; i++) { /* closed by the shutdown */
        fut_io_read_init(&rd, cs[i].rd, b, sizeof b);
        ck_assert_int_eq(fut_timeout_await(&rd, 10 * SEC), 0);
        ck_assert_int_eq(rd.result, 0);
        fut_io_close(cs[i].rd);
        fut_io_close(cs[i].wr);
    }
    fut_io_close(slow);
    return 0;
}

START_TEST(chat)
{
    struct child c = start(FUT_CHAT_FIBER);
    chat_port = c.port;
    struct fut_runtime *rt = fut_test_rt();
    ASSERT_EQ(fut_fiber_run(rt, chat_main, &c, NULL, NULL), 0);
    fut_runtime_free(rt);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fiber_examples");
    tcase_add_test(fut_test_tcase(s, "echo"), echo);
    tcase_add_test(fut_test_tcase(s, "chat"), chat);
    return fut_test_run(s);
}
