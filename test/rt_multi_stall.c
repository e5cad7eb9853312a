/* SPDX-License-Identifier: MIT */
/* A busy task stalls nobody else (src/rt/multi/monitor.c): on the
 * multi-thread runtime with 2 workers, one task woken by the driver spins
 * 500 ms inside one poll while
 *   timers: a fiber elsewhere sleeps 5 ms at a time and measures how late
 *           each sleep ends: at most 10 ms plus the wheel's 1 ms tick;
 *   echo:   a client connected before the spin gets its echo, and a new
 *           client connects and gets its echo, within 10 ms each.
 * Without the monitor the worker that left the driver to run the spinner
 * is the only one awake, and every timer and connection waits for its
 * poll to return (~500 ms). Sanitizer builds get a wider bound (TSan
 * slows every wake; the bound is still 20x below the stall).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

#define SPIN_NS (500LL * 1000 * 1000)
#define MS (1000LL * 1000)
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STALL_SANITIZED 1
#endif
#endif
#if defined(FUT_TEST_TSAN) || defined(__SANITIZE_ADDRESS__) ||               \
    defined(STALL_SANITIZED)
#define LATE_MAX (40 * MS)
#else
#define LATE_MAX (11 * MS) /* 10 ms + the wheel's tick */
#endif

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void spin(int64_t ns)
{
    int64_t end = now_ns() + ns;
    while (now_ns() < end)
        ;
}

static struct fut_runtime *mt2(void)
{
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    cfg.flavor = FUT_RT_MULTI_THREAD;
    cfg.workers = 2;
    cfg.slow_poll_ns = -1; /* the spin is on purpose */
    struct fut_runtime *rt = NULL;
    int r = fut_runtime_new(&cfg, &rt);
    ck_assert_msg(r == 0, "fut_runtime_new: %s", fut_strerror(r));
    return rt;
}

/* ---------------------------------------------------------------- timers */

static atomic_llong spin_from, spin_to; /* the spin's window */

static intptr_t spinner(void *arg)
{
    fut_sleep(100 * MS); /* woken by the driver, as a handler would be */
    atomic_store(&spin_from, now_ns());
    spin(SPIN_NS);
    atomic_store(&spin_to, now_ns());
    return 0;
}

#define MAX_TICKS 1024

struct ticks {
    int n;
    int64_t due[MAX_TICKS], end[MAX_TICKS]; /* each sleep's */
};

static intptr_t ticker(void *arg)
{
    struct ticks *t = arg;
    int64_t stop = now_ns() + 800 * MS; /* past the spin's end */
    while (now_ns() < stop && t->n < MAX_TICKS) {
        t->due[t->n] = now_ns() + 5 * MS;
        fut_sleep(5 * MS);
        t->end[t->n++] = now_ns();
    }
    return 0;
}

START_TEST(timers)
{
    struct fut_runtime *rt = mt2();
    atomic_store(&spin_from, 0);
    atomic_store(&spin_to, 0);
    static struct ticks t;
    t.n = 0;
    struct fut_join js, jt;
    ASSERT_EQ(fut_fiber_spawn(rt, ticker, &t, NULL, &jt), 0);
    ASSERT_EQ(fut_fiber_spawn(rt, spinner, NULL, NULL, &js), 0);
    ASSERT_EQ(fut_block_on(rt, &js.base), 0);
    ASSERT_EQ(fut_block_on(rt, &jt.base), 0);
    fut_drop(&js.base);
    fut_drop(&jt.base);
    fut_runtime_free(rt);
    /* The sleeps due while the spin ran (about 80 of 5 ms in 500 ms):
     * how late each ended. */
    int64_t from = atomic_load(&spin_from), to = atomic_load(&spin_to);
    int64_t worst = 0;
    int inside = 0;
    for (int i = 0; i < t.n; i++)
        if (t.due[i] >= from && t.due[i] <= to - 20 * MS) {
            inside++;
            if (t.end[i] - t.due[i] > worst)
                worst = t.end[i] - t.due[i];
        }
    ck_assert_msg(inside >= 1, "no sleep was due during the spin");
    ck_assert_msg(worst <= LATE_MAX,
                  "a timer fired %lld us late behind the spin (bound %lld; "
                  "%d sleeps due during it)",
                  (long long)worst / 1000, (long long)LATE_MAX / 1000,
                  inside);
}
END_TEST

/* ------------------------------------------------------------------ echo */

/* One connection: echoes what it reads; a read that starts with 'S'
 * spins SPIN_NS inside the poll first. */
static intptr_t conn(void *io)
{
    char buf[256];
    ssize_t n;
    while ((n = fut_read(io, buf, sizeof buf)) > 0) {
        if (buf[0] == 'S')
            spin(SPIN_NS);
        if (fut_write_all(io, buf, (size_t)n) < 0)
            break;
    }
    fut_io_close(io);
    return 0;
}

#define NCONN 3

struct server {
    struct fut_io *ln;
    struct fut_join conns[NCONN];
};

static intptr_t acceptor(void *arg)
{
    struct server *s = arg;
    for (int i = 0; i < NCONN; i++) {
        struct fut_io *c;
        if (fut_accept(s->ln, &c) != 0)
            return -1;
        fut_tcp_set_nodelay(c, 1);
        if (fut_fiber_spawn(fut_runtime_current(), conn, c, NULL,
                            &s->conns[i]) != 0)
            return -1;
    }
    return 0;
}

static int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct timeval tv = {5, 0}; /* a lost echo fails, not hangs */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

/* Sends one byte and waits for its echo; returns the round trip. */
static int64_t echo(int fd, char c)
{
    int64_t t0 = now_ns();
    ck_assert_int_eq(write(fd, &c, 1), 1);
    char got = 0;
    ck_assert_int_eq(read(fd, &got, 1), 1);
    ck_assert_int_eq(got, c);
    return now_ns() - t0;
}

START_TEST(echo_behind_spin)
{
    struct fut_runtime *rt = mt2();
    struct server s;
    struct sockaddr_storage ss;
    socklen_t len;
    ASSERT_EQ(fut_addr_parse("127.0.0.1", 0, &ss, &len), 0);
    ASSERT_EQ(fut_tcp_listen((struct sockaddr *)&ss, len, 0, &s.ln), 0);
    ASSERT_EQ(fut_io_local_addr(s.ln, &ss, &len), 0);
    int port = fut_addr_port(&ss);
    struct fut_join ja;
    ASSERT_EQ(fut_fiber_spawn(rt, acceptor, &s, NULL, &ja), 0);

    int a = dial(port), b = dial(port);
    echo(a, 'a'); /* both served before the spin */
    echo(b, 'b');
    char S = 'S';
    ASSERT_EQ(write(a, &S, 1), 1);
    struct timespec pause = {0, 50 * MS}; /* the spin has begun */
    nanosleep(&pause, NULL);
    int64_t t_spin = now_ns();
    int64_t lat_b = echo(b, 'B');
    int64_t t0 = now_ns();
    int c = dial(port);
    echo(c, 'C');
    int64_t lat_c = now_ns() - t0; /* the connect and the echo */
    int64_t during = now_ns() - t_spin;
    char got = 0;
    ASSERT_EQ(read(a, &got, 1), 1); /* the spinner's echo, after it */
    ASSERT_EQ(got, 'S');
    close(a);
    close(b);
    close(c);
    ASSERT_EQ(fut_block_on(rt, &ja.base), 0);
    for (int i = 0; i < NCONN; i++) {
        ASSERT_EQ(fut_block_on(rt, &s.conns[i].base), 0);
        fut_drop(&s.conns[i].base);
    }
    fut_drop(&ja.base);
    fut_io_close(s.ln);
    fut_runtime_free(rt);
    /* Measured inside the spin (it lasts 500 ms; these took far less). */
    ck_assert_msg(during < SPIN_NS - 100 * MS,
                  "not measured during the spin");
    ck_assert_msg(lat_b <= LATE_MAX / 11 * 10,
                  "echo behind the spin took %lld us",
                  (long long)lat_b / 1000);
    ck_assert_msg(lat_c <= LATE_MAX / 11 * 10,
                  "connect + echo behind the spin took %lld us",
                  (long long)lat_c / 1000);
    ck_assert_msg(during < SPIN_NS - 100 * MS,
                  "not measured during the spin");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rt_multi_stall");
    TCase *tc = fut_test_tcase(s, "timers");
    tcase_add_test(tc, timers);
    tc = fut_test_tcase(s, "echo");
    tcase_add_test(tc, echo_behind_spin);
    return fut_test_run(s);
}
