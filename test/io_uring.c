/* SPDX-License-Identifier: MIT */
/* The io_uring backend's own contracts (src/io/uring/): the
 * kernel never writes into a dropped future's buffer and no byte is lost
 * for the next reader; dropped accepts and opens leak no fd; a multishot
 * recv that ends (pool dry, paused) is re-armed with every byte intact;
 * injected faults (rewritten CQE results, short transfers, a full SQ)
 * break at most the connections they hit while the server keeps serving.
 * Every runtime here asks for io_uring explicitly; the program exits 77
 * (skipped) when this kernel cannot give it. */
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "io/backend.h"
#include "io/io_internal.h"
#include "io/uring/uring.h"
#include "net_echo.h"

static struct fut_runtime *rt_uring(void)
{
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    cfg.io_backend = FUT_IO_URING;
    if (fut_test_rt_is_mt()) { /* .mt: per-worker rings; the test's own
                                  polls (block_on) are another thread's */
        cfg.flavor = FUT_RT_MULTI_THREAD;
        cfg.workers = 2;
    }
    struct fut_runtime *rt = NULL;
    int r = fut_runtime_new(&cfg, &rt);
    ck_assert_msg(r == 0, "io_uring runtime: %s (%s)", fut_strerror(r),
                  fut_io_backend_error());
    ck_assert_str_eq(fut_runtime_backend(rt), "io_uring");
    return rt;
}

static void stream_pair(struct fut_io **a, int *peer)
{
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    ASSERT_EQ(fut_io_from_fd(sv[0], a), 0);
    *peer = sv[1];
}

/* A future that polls its inner future exactly once, then is READY with
 * the inner result in 'step' (the caller drops the inner one). */
struct poll_once {
    struct fut_future base;
    struct fut_future *inner;
    int step;
};

static int po_poll(struct fut_future *f, struct fut_context *cx)
{
    struct poll_once *p = (struct poll_once *)f;
    p->step = fut_poll(p->inner, cx);
    return FUT_READY;
}
FUT_ASYNC_VTABLE(po_vt, "poll_once", po_poll, NULL);

/* Polls 'inner' once on 'rt'; returns FUT_READY or FUT_PENDING. */
static int poll_once(struct fut_runtime *rt, struct fut_future *inner)
{
    struct poll_once p;
    fut_future_init(&p.base, &po_vt);
    p.inner = inner;
    ASSERT_EQ(fut_block_on(rt, &p.base), 0);
    fut_drop(&p.base);
    return p.step;
}

/* Lets the runtime run (CQEs land) for 'ms'. */
static void run_for(struct fut_runtime *rt, int ms)
{
    struct fut_sleep s;
    fut_sleep_init(&s, ms * MS);
    ASSERT_EQ(fut_block_on(rt, &s.base), 0);
    fut_drop(&s.base);
}

/* Reads exactly 'n' bytes of 'io' (several reads), within 5 s. */
static void read_exact(struct fut_runtime *rt, struct fut_io *io, char *out,
                       size_t n)
{
    size_t got = 0;
    while (got < n) {
        struct fut_io_read rd;
        struct fut_timeout to;
        fut_io_read_init(&rd, io, out + got, n - got);
        fut_timeout_init(&to, &rd.base, fut_now_ns() + 5000 * MS);
        ASSERT_EQ(fut_block_on(rt, &to.base), 0);
        ck_assert_msg(to.result == 0, "read timed out at %zu of %zu", got, n);
        ck_assert_msg(rd.result > 0, "read: %zd at %zu of %zu", rd.result,
                      got, n);
        got += (size_t)rd.result;
        fut_drop(&to.base);
    }
}

static void pattern(char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (char)(seed * 131u + i * 7u + (i >> 8));
}

/* ----------------------------------------- dropped read, freed buffer */

/* A write in flight when its runtime is freed: the ring's end waits for
 * its CQE, and the future's next poll - on an epoll runtime, then on a
 * new io_uring one - gets that result instead of sending the bytes again
 * (the peer reads them once); a write dropped after such a free leaves
 * nothing behind for the next write. */
static void write_outlives_on(int second_backend)
{
    struct fut_runtime *rt = rt_uring();
    struct fut_io *io;
    int peer;
    stream_pair(&io, &peer);
    static const char msg[] = "sent exactly once";
    struct fut_io_write wr;
    fut_io_write_init(&wr, io, msg, sizeof msg);
    ASSERT_EQ(poll_once(rt, &wr.base), FUT_PENDING); /* an SQE, no CQE */
    fut_runtime_free(rt);                            /* the CQE lands */
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    cfg.io_backend = second_backend;
    ASSERT_EQ(fut_runtime_new(&cfg, &rt), 0);
    ASSERT_EQ(fut_block_on(rt, &wr.base), 0);
    ck_assert_int_eq(wr.result, (long)sizeof msg);
    fut_drop(&wr.base);
    /* The next write is its own: sent now. */
    fut_io_write_init(&wr, io, "+", 1);
    ASSERT_EQ(fut_block_on(rt, &wr.base), 0);
    ck_assert_int_eq(wr.result, 1);
    fut_drop(&wr.base);
    fut_runtime_free(rt);
    char buf[2 * sizeof msg + 8];
    ssize_t n = read(peer, buf, sizeof buf);
    ck_assert_int_eq(n, (ssize_t)sizeof msg + 1);
    ck_assert(!memcmp(buf, msg, sizeof msg) && buf[sizeof msg] == '+');
    /* Freed again with a write in flight, then dropped: the next write
     * gets no stale result. */
    rt = rt_uring();
    fut_io_write_init(&wr, io, "a", 1);
    ASSERT_EQ(poll_once(rt, &wr.base), FUT_PENDING);
    fut_runtime_free(rt);
    fut_drop(&wr.base);
    rt = rt_uring();
    fut_io_write_init(&wr, io, "bc", 2);
    ASSERT_EQ(fut_block_on(rt, &wr.base), 0);
    ck_assert_int_eq(wr.result, 2);
    fut_drop(&wr.base);
    fut_runtime_free(rt);
    n = read(peer, buf, sizeof buf);
    ck_assert_int_eq(n, 3);
    ck_assert(!memcmp(buf, "abc", 3));
    fut_io_close(io);
    close(peer);
}

START_TEST(write_outlives_runtime)
{
    write_outlives_on(FUT_IO_EPOLL);
    write_outlives_on(FUT_IO_URING);
}
END_TEST

/* A read in flight is dropped, its buffer overwritten and freed; then the
 * data comes. The dropped future's buffer keeps the pattern written after
 * the drop (the kernel never had it), ASan sees no write into freed
 * memory, and the next reader gets every byte in order (read is declared
 * cancel-safe). */
START_TEST(drop_read_then_data)
{
    struct fut_runtime *rt = rt_uring();
    struct fut_io *a;
    int peer;
    stream_pair(&a, &peer);
    for (int round = 0; round < 50; round++) {
        char *buf = malloc(4096);
        struct fut_io_read rd;
        fut_io_read_init(&rd, a, buf, 4096);
        ASSERT_EQ(poll_once(rt, &rd.base), FUT_PENDING);
        run_for(rt, 1); /* the recv is in the kernel now */
        char msg[3000], got[3000];
        pattern(msg, sizeof msg, (unsigned)round);
        /* The bytes arrive; the read is dropped before the runtime saw
         * their CQE (even rounds) or after (odd: the bytes sit in the
         * runtime's queue for the fd, the read never polled again). */
        ASSERT_EQ(write(peer, msg, sizeof msg), (ssize_t)sizeof msg);
        if (round % 2)
            run_for(rt, 2);
        fut_drop(&rd.base);
        memset(buf, 0xAA, 4096);
        run_for(rt, 2); /* the CQEs land with nobody reading */
        for (int i = 0; i < 4096; i++)
            ck_assert_msg((unsigned char)buf[i] == 0xAA,
                          "the dropped read's buffer was written at %d", i);
        free(buf);
        read_exact(rt, a, got, sizeof got);
        ck_assert(memcmp(msg, got, sizeof msg) == 0);
    }
    fut_io_close(a);
    close(peer);
    fut_runtime_free(rt);
}
END_TEST

/* ---------------------------------------- dropped accepts and opens */

/* 10,000 accepts dropped while PENDING, a connection arriving after every
 * tenth drop, and 10,000 fs opens dropped mid-flight: every connection is
 * still there for the next accept (cancel-safe), and once the listener
 * and the runtime are gone the process has exactly the fds it started
 * with. */
START_TEST(drop_accepts_and_opens)
{
    int before = count_fds();
    struct fut_runtime *rt = rt_uring();
    int port;
    struct fut_io *l = listen_any(&port);
    struct sockaddr_storage ss;
    socklen_t len;
    fut_addr_parse("127.0.0.1", port, &ss, &len);
    int n = TEST_ITERS(10000, 2000), clients[1001], nc = 0;
    /* Accepted by a poll of the loop (on a multi-thread runtime the
     * worker owning the listener's ring reaps completions meanwhile). */
    int accepted = 0;
    for (int i = 0; i < n; i++) {
        struct fut_accept acc;
        fut_accept_init(&acc, l);
        if (poll_once(rt, &acc.base) == FUT_READY) {
            ck_assert_int_eq(acc.result, 0);
            fut_io_close(acc.conn);
            accepted++;
        }
        fut_drop(&acc.base);
        if (i % 10 == 9 && nc < 1000) {
            int c = socket(AF_INET, SOCK_STREAM, 0);
            ASSERT_EQ(connect(c, (struct sockaddr *)&ss, len), 0);
            clients[nc++] = c;
        }
    }
    /* Every connection waits for an accept: take them all. */
    run_for(rt, 20);
    for (;;) {
        struct fut_accept acc;
        struct fut_timeout to;
        fut_accept_init(&acc, l);
        fut_timeout_init(&to, &acc.base, fut_now_ns() + 300 * MS);
        ASSERT_EQ(fut_block_on(rt, &to.base), 0);
        int got = to.result == 0 && acc.result == 0;
        if (got)
            fut_io_close(acc.conn);
        fut_drop(&to.base);
        if (!got)
            break;
        accepted++;
    }
    /* One accept completes for nobody: its future dropped, the
     * connection accepted by the kernel, then the listener closed. */
    {
        struct fut_accept acc;
        fut_accept_init(&acc, l);
        ASSERT_EQ(poll_once(rt, &acc.base), FUT_PENDING);
        fut_drop(&acc.base);
        int c = socket(AF_INET, SOCK_STREAM, 0);
        ASSERT_EQ(connect(c, (struct sockaddr *)&ss, len), 0);
        clients[nc++] = c;
        run_for(rt, 20); /* the CQE brings the new fd */
    }
    fut_io_close(l);
    for (int i = 0; i < n; i++) {
        struct fut_fs f;
        fut_fs_open_init(&f, "/dev/null", O_RDONLY, 0);
        if (poll_once(rt, &f.base) == FUT_READY && f.result >= 0)
            close((int)f.result);
        fut_drop(&f.base);
    }
    fut_runtime_free(rt);
    for (int i = 0; i < nc; i++)
        close(clients[i]);
    ck_assert_int_eq(accepted, nc - 1);
    ck_assert_int_eq(count_fds(), before);
}
END_TEST

/* --------------------------------------------- multishot accept */

/* Connects a client to 'port' and sends its index (4 bytes). */
static int connect_tagged(int port, int idx)
{
    int c = connect_loopback(port);
    ASSERT_EQ(write(c, &idx, sizeof idx), (ssize_t)sizeof idx);
    return c;
}

/* Accepts one connection within 5 s and returns the index its client
 * sent; checks the peer address is the client's ('ports' by index). */
static int accept_tagged(struct fut_runtime *rt, struct fut_io *l,
                         const int *ports, int n)
{
    struct fut_accept acc;
    struct fut_timeout to;
    fut_accept_init(&acc, l);
    fut_timeout_init(&to, &acc.base, fut_now_ns() + 5000 * MS);
    ASSERT_EQ(fut_block_on(rt, &to.base), 0);
    ck_assert_msg(to.result == 0, "accept timed out");
    ck_assert_msg(acc.result == 0, "accept: %s", fut_strerror(acc.result));
    int idx = -1;
    read_exact(rt, acc.conn, (char *)&idx, sizeof idx);
    ck_assert_msg(idx >= 0 && idx < n, "index %d", idx);
    ck_assert_int_eq(fut_addr_port(&acc.peer), ports[idx]);
    fut_io_close(acc.conn);
    fut_drop(&to.base);
    return idx;
}

/* Polls an accept once (it arms the listener's multishot) and drops it:
 * connections then queue on the listener with nobody accepting. */
static void arm_and_drop_accept(struct fut_runtime *rt, struct fut_io *l)
{
    struct fut_accept acc;
    fut_accept_init(&acc, l);
    ASSERT_EQ(poll_once(rt, &acc.base), FUT_PENDING);
    fut_drop(&acc.base);
}

/* An echo server accepting 200 concurrent clients: one multishot ACCEPT
 * takes many connections (a handful of ACCEPT SQEs, not one per
 * connection), and every client's bytes come back. */
START_TEST(multishot_accept_serves)
{
    struct fut_runtime *rt = rt_uring();
    int port;
    struct fut_io *l;
    struct echo_stats st;
    struct echo_server srv;
    struct fut_join js;
    echo_serve(rt, &srv, &st, &js, &l, &port);
    enum { N = 200 };
    uintptr_t a0 = fut__load(&fut__uring_accept_arms, FUT__RELAXED);
    struct fut_join *jc = calloc(N, sizeof *jc);
    for (int i = 0; i < N; i++) {
        struct echo_client c;
        echo_client_init(&c, port, 3, 64);
        ASSERT_EQ(fut_spawn(rt, &c, sizeof c, &jc[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        struct fut_timeout to;
        fut_timeout_init(&to, &jc[i].base, fut_now_ns() + 10000 * MS);
        ASSERT_EQ(fut_block_on(rt, &to.base), 0);
        ck_assert_msg(to.result == 0, "client %d hung", i);
        struct echo_client *out = fut_join_output(&jc[i]);
        ck_assert_msg(out->result == 0, "client %d: %s", i,
                      fut_strerror(out->result));
        fut_drop(&to.base);
    }
    uintptr_t arms = fut__load(&fut__uring_accept_arms, FUT__RELAXED) - a0;
    fprintf(stderr,
            "io_uring: %lu multishot ACCEPTs armed for %d "
            "connections\n",
            (unsigned long)arms, N);
    ck_assert_int_eq(atomic_load(&st.accepted), N);
    /* Each pause (ACCEPT_MAX queued) and each error costs one re-arm. */
    ck_assert_msg(arms >= 1 && arms <= N / 8,
                  "%lu ACCEPT SQEs for %d "
                  "connections",
                  (unsigned long)arms, N);
    free(jc);
    fut_join_abort(&js);
    fut_drop(&js.base);
    fut_runtime_free(rt);
    fut_io_close(l);
}
END_TEST

/* 200 connections nobody accepts, arriving one at a time: the listener
 * queues at most ACCEPT_MAX (32) of them as fds, then pauses, and the
 * rest wait in the kernel's backlog (the process's fd count stays
 * bounded); then every one is accepted, in order, with its peer's
 * address and its bytes. */
START_TEST(multishot_accept_paused)
{
    int before = count_fds();
    struct fut_runtime *rt = rt_uring();
    int port;
    struct fut_io *l = listen_any(&port);
    enum { N = 200 };
    int clients[N], ports[N];
    arm_and_drop_accept(rt, l);
    int base = count_fds(), most = 0;
    for (int i = 0; i < N; i++) {
        clients[i] = connect_tagged(port, i);
        ports[i] = local_port(clients[i]);
        run_for(rt, 1); /* the CQE of its accept lands */
        int extra = count_fds() - base - (i + 1);
        most = extra > most ? extra : most;
    }
    run_for(rt, 20);
    int extra = count_fds() - base - N;
    most = extra > most ? extra : most;
    fprintf(stderr,
            "io_uring: at most %d connections queued as fds of "
            "%d unaccepted\n",
            most, N);
    ck_assert_msg(most >= 32 && most <= 40,
                  "%d accepted fds held for %d "
                  "unaccepted connections (pause at 32)",
                  most, N);
    uintptr_t a0 = fut__load(&fut__uring_accept_arms, FUT__RELAXED);
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(accept_tagged(rt, l, ports, N), i);
    uintptr_t arms = fut__load(&fut__uring_accept_arms, FUT__RELAXED) - a0;
    ck_assert_msg(arms <= N / 16, "%lu re-arms", (unsigned long)arms);
    fut_io_close(l);
    fut_runtime_free(rt);
    for (int i = 0; i < N; i++)
        close(clients[i]);
    ck_assert_int_eq(count_fds(), before);
}
END_TEST

/* A listener with connections queued on its multishot moves to other
 * runtimes: freeing the runtime keeps them (the listener's spill), an
 * epoll runtime accepts the first half, a second io_uring runtime the
 * rest and a new one; nothing lost, no fd leaked. */
START_TEST(multishot_accept_moves)
{
    int before = count_fds();
    struct fut_runtime *rt = rt_uring();
    int port;
    struct fut_io *l = listen_any(&port);
    enum { N = 10 };
    int clients[N + 1], ports[N + 1];
    arm_and_drop_accept(rt, l);
    for (int i = 0; i < N; i++) {
        clients[i] = connect_tagged(port, i);
        ports[i] = local_port(clients[i]);
    }
    run_for(rt, 20); /* all ten queued on the listener */
    fut_runtime_free(rt);
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    cfg.io_backend = FUT_IO_EPOLL;
    ASSERT_EQ(fut_runtime_new(&cfg, &rt), 0);
    for (int i = 0; i < N / 2; i++)
        ck_assert_int_eq(accept_tagged(rt, l, ports, N + 1), i);
    fut_runtime_free(rt);
    rt = rt_uring();
    for (int i = N / 2; i < N; i++)
        ck_assert_int_eq(accept_tagged(rt, l, ports, N + 1), i);
    clients[N] = connect_tagged(port, N);
    ports[N] = local_port(clients[N]);
    ck_assert_int_eq(accept_tagged(rt, l, ports, N + 1), N);
    fut_io_close(l);
    fut_runtime_free(rt);
    for (int i = 0; i <= N; i++)
        close(clients[i]);
    ck_assert_int_eq(count_fds(), before);
}
END_TEST

/* Real EMFILE on the multishot ACCEPT: it ends with the error, the accept
 * future backs off (few re-arms, little CPU) and accepts once fds are
 * free. */
START_TEST(multishot_accept_emfile)
{
    struct fut_runtime *rt = rt_uring();
    int port;
    struct fut_io *l = listen_any(&port);
    int ports[1];
    int c = connect_tagged(port, 0);
    ports[0] = local_port(c);
    struct rlimit old;
    static int fds[256];
    struct free_later fl;
    free_later_init(&fl, fds, use_up_fds(fds, &old));
    ASSERT_EQ(fut_spawn(rt, &fl, sizeof fl, NULL), 0);
    uintptr_t a0 = fut__load(&fut__uring_accept_arms, FUT__RELAXED);
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    ck_assert_int_eq(accept_tagged(rt, l, ports, 1), 0);
    getrusage(RUSAGE_SELF, &r1);
    setrlimit(RLIMIT_NOFILE, &old);
    uintptr_t arms = fut__load(&fut__uring_accept_arms, FUT__RELAXED) - a0;
    long cpu_us = rusage_cpu_us(&r0, &r1);
    fprintf(stderr, "io_uring: EMFILE: %lu ACCEPTs armed, %ld us CPU\n",
            (unsigned long)arms, cpu_us);
    ck_assert_msg(arms >= 2 && arms <= 12,
                  "%lu ACCEPTs armed in 80 ms of "
                  "EMFILE",
                  (unsigned long)arms);
    ck_assert_msg(cpu_us < 40000, "%ld us of CPU in 80 ms", cpu_us);
    fut_io_close(l);
    close(c);
    fut_runtime_free(rt);
}
END_TEST

/* ------------------------------------- multishot ends, is re-armed */

/* Reads exactly 'len' bytes into 'got' (a task). After its first read
 * it waits (1 ms sleeps) until '*gate' is set: meanwhile its multishot
 * receive goes on filling the pool's buffers, which nobody gives back. */
struct reader {
    struct fut_future base;
    struct fut_io *io;
    char *got;
    size_t len, have;
    _Atomic int *gate;
    struct fut_io_read rd;
    struct fut_sleep nap;
    int result;
};

static int reader_poll(struct fut_future *f, struct fut_context *cx)
{
    struct reader *r = (struct reader *)f;
    FUT_BEGIN(f);
    while (r->have < r->len) {
        fut_io_read_init(&r->rd, r->io, r->got + r->have, r->len - r->have);
        FUT_AWAIT(f, &r->rd);
        if (r->rd.result <= 0) {
            r->result = r->rd.result < 0 ? (int)r->rd.result : -EPIPE;
            FUT_RETURN(f);
        }
        r->have += (size_t)r->rd.result;
        while (!atomic_load(r->gate)) {
            fut_sleep_init(&r->nap, 1 * MS);
            FUT_AWAIT(f, &r->nap);
        }
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(reader_vt, "reader", reader_poll, NULL);

/* Waits (10 s at most) for reader 'i' (joined by 'j') and checks that
 * it got every byte of 'msg' ('len'), in order. */
static void reader_check(struct fut_runtime *rt, struct fut_join *j, int i,
                         const char *msg, size_t len)
{
    struct fut_timeout to;
    fut_timeout_init(&to, &j->base, fut_now_ns() + 10000 * MS);
    ASSERT_EQ(fut_block_on(rt, &to.base), 0);
    ck_assert_msg(to.result == 0, "reader %d hung", i);
    struct reader *out = fut_join_output(j);
    ck_assert_msg(out->result == 0 && out->have == len,
                  "reader %d: %s, %zu of %zu bytes", i,
                  fut_strerror(out->result), out->have, len);
    ck_assert_msg(memcmp(out->got, msg, len) == 0, "reader %d: bytes differ",
                  i);
    fut_drop(&to.base);
}

/* 40 connections, each with a task parked in its read; their peers send
 * 28 KiB each in one burst (7 of the 4 KiB buffers; the kernel runs about
 * 20 connections' receives per enter: 140 buffers of the pool's 128, so
 * multishots end with -ENOBUFS while their readers wait), one more sends
 * 200 KiB (its queue passes the pause bound). Every reader gets every
 * byte, in order. */
START_TEST(multishot_rearm)
{
    struct fut_runtime *rt = rt_uring();
    /* 41 connections: 287 buffers wanted of one pool's 128. The
     * multi-thread runtime splits the fds over its workers' rings, a pool
     * each: twice the connections, so each pool still runs dry. */
    enum { NMAX = 82 };
    const int N = fut_test_rt_is_mt() ? NMAX : NMAX / 2;
    int peer[NMAX];
    size_t len[NMAX];
    char *msg[NMAX];
    struct reader rd[NMAX];
    struct fut_join j[NMAX];
    uintptr_t nb0 = fut__load(&fut__uring_nobufs, FUT__RELAXED);
    /* Closed while the peers write: the readers hold their first buffers
     * and the multishots take more until the pools run dry, however
     * promptly the workers of a multi-thread runtime reap. */
    static _Atomic int gate;
    atomic_store(&gate, 0);
    for (int i = 0; i < N; i++) {
        memset(&rd[i], 0, sizeof rd[i]);
        fut_future_init(&rd[i].base, &reader_vt);
        rd[i].gate = &gate;
        stream_pair(&rd[i].io, &peer[i]);
        int big = 1 << 20;
        setsockopt(peer[i], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
        len[i] = i == N - 1 ? 200 * 1024 : 28 * 1024;
        msg[i] = malloc(len[i]);
        pattern(msg[i], len[i], (unsigned)i);
        rd[i].len = len[i];
        rd[i].got = malloc(len[i]);
        ASSERT_EQ(fut_spawn(rt, &rd[i], sizeof rd[i], &j[i]), 0);
    }
    /* Every reader parked, its multishot armed (the workers of a
     * multi-thread runtime start them meanwhile: more time). */
    run_for(rt, fut_test_rt_is_mt() ? 50 : 2);
    size_t off[NMAX] = {0};
    for (int pass = 0, left = N; left > 0 && pass < 10000; pass++) {
        left = 0;
        for (int i = 0; i < N; i++) {
            if (off[i] == len[i])
                continue;
            ssize_t w = write(peer[i], msg[i] + off[i], len[i] - off[i]);
            if (w > 0)
                off[i] += (size_t)w;
            left += off[i] < len[i];
        }
        if (left)
            run_for(rt, 1);
    }
    run_for(rt, 5); /* what was sent reaches the multishots */
    atomic_store(&gate, 1);
    for (int i = 0; i < N; i++)
        reader_check(rt, &j[i], i, msg[i], len[i]);
    /* On the current-thread runtime the pool runs dry every time (the
     * readers wait at the gate while the runtime does not run). On the
     * multi-thread one the workers start the readers while the peers
     * write: whether a pool runs dry is timing (not once in about one run
     * of eight under load here), so the count is printed, and every byte
     * is checked above either way. */
    uintptr_t dry = fut__load(&fut__uring_nobufs, FUT__RELAXED) - nb0;
    if (fut_test_rt_is_mt())
        fprintf(stderr, "multishot_rearm: the pools ran dry %lu times\n",
                (unsigned long)dry);
    else
        ck_assert_msg(dry > 0, "the pool never ran dry: the test did not "
                               "test re-arming");
    for (int i = 0; i < N; i++) {
        free(msg[i]);
        free(rd[i].got);
        fut_io_close(rd[i].io);
        close(peer[i]);
    }
    fut_runtime_free(rt);
}
END_TEST

/* ------------------------------------- fixed files, the buffer pool */

/* 10,000 connections opened, read from and closed one after the other:
 * their ops go out with fixed files (every one: a slot each, the table
 * never fills - it holds 4,096 - so each close freed its slot), and the
 * slots in use come back to none. Every byte checked. */
START_TEST(fixed_files_freed)
{
    enum { N = 10000, MSG = 64 };
    struct fut_runtime *rt = rt_uring();
    uintptr_t fixed0 = fut__load(&fut__uring_fixed_ops, FUT__RELAXED);
    uintptr_t used0 = fut__load(&fut__uring_files_used, FUT__RELAXED);
    uintptr_t peak = 0;
    for (int i = 0; i < N; i++) {
        struct fut_io *io;
        int peer;
        char msg[MSG], got[MSG];
        stream_pair(&io, &peer);
        pattern(msg, sizeof msg, (unsigned)i);
        ASSERT_EQ(write(peer, msg, sizeof msg), (ssize_t)sizeof msg);
        read_exact(rt, io, got, sizeof got);
        ck_assert_msg(memcmp(got, msg, sizeof msg) == 0,
                      "connection %d: bytes differ", i);
        uintptr_t used = fut__load(&fut__uring_files_used, FUT__RELAXED);
        if (used - used0 > peak)
            peak = used - used0;
        fut_io_close(io);
        close(peer);
    }
    run_for(rt, 20); /* a multi-thread ring's inbox closes the last */
    uintptr_t used = fut__load(&fut__uring_files_used, FUT__RELAXED) - used0;
    fut_runtime_free(rt);
    uintptr_t fixed = fut__load(&fut__uring_fixed_ops, FUT__RELAXED) - fixed0;
    fprintf(stderr,
            "fixed_files_freed: %lu ops with fixed files, peak %lu "
            "slots in use, %lu at the end\n",
            (unsigned long)fixed, (unsigned long)peak, (unsigned long)used);
    ck_assert_msg(peak >= 1, "no fixed-file slot was ever taken");
    ck_assert_msg(fixed >= N,
                  "%lu ops with fixed files for %d connections: "
                  "the table filled",
                  (unsigned long)fixed, N);
    ck_assert_msg(used == 0, "%lu slots still in use after every close",
                  (unsigned long)used);
}
END_TEST

/* 'n' connections open at once, each read once (every byte checked):
 * returns the ops that went out with fixed files meanwhile and the most
 * slots in use. */
static void conns_at_once(int n, uintptr_t *fixed, uintptr_t *peak)
{
    struct fut_runtime *rt = rt_uring();
    uintptr_t fixed0 = fut__load(&fut__uring_fixed_ops, FUT__RELAXED);
    uintptr_t used0 = fut__load(&fut__uring_files_used, FUT__RELAXED);
    struct fut_io **io = calloc((size_t)n, sizeof *io);
    int *peer = calloc((size_t)n, sizeof *peer);
    ck_assert(io && peer);
    *peak = 0;
    for (int i = 0; i < n; i++) {
        char msg[64], got[64];
        stream_pair(&io[i], &peer[i]);
        pattern(msg, sizeof msg, (unsigned)i);
        ASSERT_EQ(write(peer[i], msg, sizeof msg), (ssize_t)sizeof msg);
        read_exact(rt, io[i], got, sizeof got);
        ck_assert_msg(memcmp(got, msg, sizeof msg) == 0,
                      "connection %d: bytes differ", i);
        uintptr_t used = fut__load(&fut__uring_files_used, FUT__RELAXED);
        if (used - used0 > *peak)
            *peak = used - used0;
    }
    for (int i = 0; i < n; i++) {
        fut_io_close(io[i]);
        close(peer[i]);
    }
    fut_runtime_free(rt);
    *fixed = fut__load(&fut__uring_fixed_ops, FUT__RELAXED) - fixed0;
    ck_assert_msg(fut__load(&fut__uring_files_used, FUT__RELAXED) == used0,
                  "slots still in use after the runtime's end");
    free(io);
    free(peer);
}

/* The fallbacks to plain fds: a table that is full (4,200 connections
 * open at once against its 4,096 slots: the rest go plain, every byte
 * still arrives), and no table at all (RLIMIT_NOFILE below 64: none is
 * registered, nothing goes out fixed). */
START_TEST(fixed_files_fallback)
{
    enum { MANY = 4200 };
    struct rlimit old;
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
    uintptr_t fixed, peak;
    struct rlimit rl = old;
    if (old.rlim_max >= 2 * MANY + 200) {
        rl.rlim_cur = 2 * MANY + 200;
        ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
        conns_at_once(MANY, &fixed, &peak);
        fprintf(stderr,
                "fixed_files_fallback: %d connections: %lu fixed "
                "ops, peak %lu slots\n",
                MANY, (unsigned long)fixed, (unsigned long)peak);
        /* A multi-thread runtime has a table per worker ring. */
        uintptr_t slots = fut_test_rt_is_mt() ? 2 * 4096 : 4096;
        ck_assert_msg(peak <= slots && peak >= 4096, "peak %lu slots in use",
                      (unsigned long)peak);
        ck_assert_msg(fixed >= 4096, "%lu fixed ops", (unsigned long)fixed);
    } else {
        fprintf(stderr,
                "fixed_files_fallback: RLIMIT_NOFILE's hard limit "
                "%lu: the full table is not tried\n",
                (unsigned long)old.rlim_max);
    }
    rl.rlim_cur = 48;
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
    conns_at_once(8, &fixed, &peak);
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
    ck_assert_msg(fixed == 0 && peak == 0,
                  "no table, yet %lu fixed ops, %lu slots",
                  (unsigned long)fixed, (unsigned long)peak);
}
END_TEST

/* 1,000 connections, a reader each: the first 512 bytes are read, then
 * the readers wait at a gate while the next 512 come: 1,000 chunks held
 * at once, the pool of 128 runs dry and grows (more buffers registered
 * than the rings had at start). Every reader gets every byte, in order;
 * then, the connections open and idle, the pool shrinks back within
 * a few trims. */
START_TEST(buffer_pool_grows_and_shrinks)
{
    enum { N = 1000, PART = 512 };
    struct fut_runtime *rt = rt_uring();
    int mt = fut_test_rt_is_mt();
    uintptr_t base = fut__load(&fut__uring_bufs, FUT__RELAXED);
    uintptr_t nb0 = fut__load(&fut__uring_nobufs, FUT__RELAXED);
    int *peer = calloc(N, sizeof *peer);
    char(*msg)[2 * PART] = calloc(N, sizeof *msg);
    struct reader *rd = calloc(N, sizeof *rd);
    struct fut_join *j = calloc(N, sizeof *j);
    ck_assert(peer && msg && rd && j);
    static _Atomic int gate;
    atomic_store(&gate, 0);
    for (int i = 0; i < N; i++) {
        fut_future_init(&rd[i].base, &reader_vt);
        rd[i].gate = &gate;
        stream_pair(&rd[i].io, &peer[i]);
        pattern(msg[i], sizeof msg[i], (unsigned)i + 7);
        rd[i].len = sizeof msg[i];
        rd[i].got = malloc(sizeof msg[i]);
        ASSERT_EQ(fut_spawn(rt, &rd[i], sizeof rd[i], &j[i]), 0);
    }
    run_for(rt, mt ? 100 : 5); /* every reader parked, armed */
    uintptr_t grown = base;
    for (int part = 0; part < 2; part++) {
        for (int i = 0; i < N; i++)
            ASSERT_EQ(write(peer[i], msg[i] + part * PART, PART), PART);
        for (int t = 0; t < (mt ? 30 : 10); t++) { /* part 1 read; part 2
                                                      queued */
            run_for(rt, 10);
            uintptr_t n = fut__load(&fut__uring_bufs, FUT__RELAXED);
            if (n > grown)
                grown = n;
        }
    }
    atomic_store(&gate, 1);
    for (int i = 0; i < N; i++)
        reader_check(rt, &j[i], i, msg[i], sizeof msg[i]);
    /* Idle, the connections open: back to the rings' first groups. */
    uintptr_t now = 0;
    for (int t = 0; t < 40; t++) {
        run_for(rt, 100);
        now = fut__load(&fut__uring_bufs, FUT__RELAXED);
        if (now == base)
            break;
    }
    fprintf(
        stderr,
        "buffer_pool_grows_and_shrinks: %lu buffers at start, "
        "%lu under %d connections (dry %lu times), %lu after idling\n",
        (unsigned long)base, (unsigned long)grown, N,
        (unsigned long)(fut__load(&fut__uring_nobufs, FUT__RELAXED) - nb0),
        (unsigned long)now);
    ck_assert_msg(grown > base, "the pool did not grow (%lu buffers)",
                  (unsigned long)grown);
    ck_assert_msg(now == base, "the pool did not shrink back: %lu of %lu",
                  (unsigned long)now, (unsigned long)base);
    /* And it serves again after shrinking: one more round, every byte. */
    for (int i = 0; i < N; i += 37) {
        char got[PART];
        ASSERT_EQ(write(peer[i], msg[i], PART), PART);
        read_exact(rt, rd[i].io, got, PART);
        ck_assert_msg(memcmp(got, msg[i], PART) == 0, "conn %d: differ", i);
    }
    for (int i = 0; i < N; i++) {
        free(rd[i].got);
        fut_io_close(rd[i].io);
        close(peer[i]);
    }
    fut_runtime_free(rt);
    free(peer);
    free(msg);
    free(rd);
    free(j);
}
END_TEST

/* ------------------------------------------------------------ faults */

/* Set while no runtime runs; the counters are atomic and 'hooks_on'
 * turns the hooks off mid-run (a multi-thread runtime's workers call them
 * at once). */
static long fault_res;  /* the result injected */
static int fault_every; /* every Nth CQE of 'fault_kind' */
static int fault_kind;  /* -1: any kind */
static int short_every, sq_every;
static _Atomic int fault_count, fault_hits, sq_count, short_count, hooks_on;

static void f_cqe(int kind, long *res)
{
    if (hooks_on && fault_every && (fault_kind < 0 || kind == fault_kind) &&
        ++fault_count % fault_every == 0) {
        *res = fault_res;
        fault_hits++;
    }
}

static size_t f_short(int kind, size_t n)
{
    (void)kind;
    return hooks_on && short_every && ++short_count % short_every == 0 ? n / 2
                                                                       : n;
}

static int f_sq_full(void)
{
    return hooks_on && sq_every && ++sq_count % sq_every == 0;
}

static struct fut__uring_faults hooks = {f_cqe, f_short, f_sq_full};

/* An echo server with 'clients' clients of 20 rounds each under the
 * faults set; returns how many clients failed. */
static int echo_under_faults(int clients)
{
    struct fut_runtime *rt = rt_uring();
    int port;
    struct fut_io *l;
    struct echo_stats st;
    struct echo_server srv;
    struct fut_join js;
    echo_serve(rt, &srv, &st, &js, &l, &port);
    struct echo_client *c = calloc((size_t)clients, sizeof *c);
    struct fut_join *jc = calloc((size_t)clients, sizeof *jc);
    for (int i = 0; i < clients; i++) {
        echo_client_init(&c[i], port, 20, 200);
        ASSERT_EQ(fut_spawn(rt, &c[i], sizeof c[i], &jc[i]), 0);
    }
    int failed = 0;
    for (int i = 0; i < clients; i++) {
        struct fut_timeout to;
        fut_timeout_init(&to, &jc[i].base, fut_now_ns() + 20000 * MS);
        ASSERT_EQ(fut_block_on(rt, &to.base), 0);
        ck_assert_msg(to.result == 0, "client %d hung (a lost wakeup)", i);
        struct echo_client *out = fut_join_output(&jc[i]);
        failed += out->result != 0;
        fut_drop(&to.base);
    }
    hooks_on = 0;
    /* The server still serves: 20 clean clients after the faults. */
    for (int i = 0; i < 20; i++) {
        struct echo_client k;
        echo_client_init(&k, port, 5, 100);
        ASSERT_EQ(fut_block_on(rt, &k.base), 0);
        ck_assert_msg(k.result == 0, "clean client %d after faults: %s", i,
                      fut_strerror(k.result));
        fut_drop(&k.base);
    }
    fut_join_abort(&js);
    fut_drop(&js.base);
    free(c);
    free(jc);
    fut_runtime_free(rt);
    fut_io_close(l);
    return failed;
}

static void set_fault(int kind, long res, int every)
{
    fault_kind = kind;
    fault_res = res;
    fault_every = every;
    fault_count = fault_hits = 0;
    short_every = sq_every = 0;
    sq_count = short_count = 0;
    hooks_on = 1;
    fut__uring_faults = &hooks;
}

/* Faults that break a connection (-ECONNRESET, -EPIPE, -EIO on recv and
 * send; -ECONNABORTED and -EMFILE on accept, which the accept future
 * retries and backs off from): no more clients fail than faults hit, and the server serves
 * the others and, afterwards, everyone. */
START_TEST(faults_break_only_their_connection)
{
    static const struct {
        int kind;
        long res;
        int every;
    } cases[] = {{2, -ECONNRESET, 37},  {0, -ECONNRESET, 37}, {2, -EPIPE, 41},
                 {3, -ECONNABORTED, 7}, {3, -EMFILE, 5},      {0, -EIO, 97}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        set_fault(cases[i].kind, cases[i].res, cases[i].every);
        int failed = echo_under_faults(50);
        ck_assert_msg(failed <= fault_hits,
                      "case %zu: %d clients failed, %d faults", i, failed,
                      fault_hits);
        ck_assert_msg(fault_hits > 0, "case %zu: no fault fired", i);
    }
}
END_TEST

/* Faults that say "nothing happened" (-EAGAIN, -ECANCELED, -ENOBUFS),
 * short reads and writes, a full SQ: every client succeeds, every byte
 * checked (echo_client compares them). */
START_TEST(benign_faults_lose_nothing)
{
    static const long benign[] = {-EAGAIN, -ECANCELED, -ENOBUFS};
    for (size_t i = 0; i < 3; i++) {
        set_fault(-1, benign[i], 3);
        ck_assert_int_eq(echo_under_faults(30), 0);
        ck_assert(fault_hits > 0);
    }
    set_fault(-1, 0, 0);
    short_every = 2;
    ck_assert_int_eq(echo_under_faults(30), 0);
    ck_assert(short_count > 0);
    set_fault(-1, 0, 0);
    sq_every = 3;
    ck_assert_int_eq(echo_under_faults(30), 0);
    ck_assert(sq_count > 0);
    fut__uring_faults = NULL;
}
END_TEST

/* --------------------------------------------------- syscall batching */

/* 200 connections, each served by an echo task with its read armed; one
 * burst of 200 messages: the replies (200 recv CQEs, 200 sends, 200 new
 * reads) cost a handful of io_uring_enter calls, never one per op
 * (fut__uring_enters counts every enter the backend makes). */
START_TEST(batched_submissions)
{
    struct fut_runtime *rt = rt_uring();
    enum { N = 200 };
    int peer[N];
    struct echo_stats st;
    memset(&st, 0, sizeof st);
    for (int i = 0; i < N; i++) {
        struct echo_conn c;
        fut_future_init(&c.base, &echo_conn_vt);
        stream_pair(&c.io, &peer[i]);
        c.st = &st;
        atomic_fetch_add(&st.live, 1);
        ASSERT_EQ(fut_spawn(rt, &c, sizeof c, NULL), 0);
    }
    run_for(rt, 5); /* every task is parked in its read */
    uintptr_t e0 = fut__load(&fut__uring_enters, FUT__RELAXED);
    for (int i = 0; i < N; i++)
        ASSERT_EQ(write(peer[i], "abcdefgh", 8), 8);
    int done = 0;
    for (int round = 0; round < 500 && done < N; round++) {
        run_for(rt, 1);
        done = 0;
        for (int i = 0; i < N; i++) {
            int q = 0;
            ioctl(peer[i], FIONREAD, &q);
            done += q == 8;
        }
    }
    uintptr_t enters = fut__load(&fut__uring_enters, FUT__RELAXED) - e0;
    ck_assert_int_eq(done, N);
    /* 600 ops; the kernel runs about 20 deferred completions per enter,
     * the 1 ms sleeps add their own: well under one enter per 4 ops. On
     * the multi-thread runtime two rings wait, each on its own, and the
     * park spin's looks enter when the kernel flags task work: 14-146
     * measured in plain and TSan builds, 260 once under ASan (fresh-clone
     * CI), so the bound is one per two ops - still batched, never one
     * enter per op (600 or more). */
    int bound = fut_test_rt_is_mt() ? N * 3 / 2 : N * 3 / 4;
    ck_assert_msg((int)enters < bound,
                  "%lu io_uring_enter calls for %d "
                  "round trips",
                  (unsigned long)enters, N);
    fprintf(stderr,
            "io_uring: %lu io_uring_enter calls for %d round trips "
            "(%d ops)\n",
            (unsigned long)enters, N, 3 * N);
    for (int i = 0; i < N; i++)
        close(peer[i]);
    /* The tasks see EOF and end (bounded: 5 s). */
    for (int i = 0; i < 500 && atomic_load(&st.live) > 0; i++)
        run_for(rt, 10);
    ck_assert_int_eq(atomic_load(&st.live), 0);
    fut_runtime_free(rt);
}
END_TEST

/* ------------------------------------------------------------- probe */

static void probe_old_kernel(int kind, long *res)
{
    if (kind == 0) /* U_RECV_MS: what a kernel before 6.0 answers */
        *res = -EINVAL;
}

/* AUTO picks io_uring only when the kernel has what the backend uses: a
 * kernel whose multishot RECV fails (played by the fault hook on the
 * probe's CQE) gets epoll under AUTO, a clear FUT_ENOSYS when io_uring was
 * asked for, and the answer is kept; the probe leaves no fd behind. */
START_TEST(probe_needs_multishot_recv)
{
    unsetenv("FUT_IO_BACKEND"); /* the .uring variants' override */
    const char *why = NULL;
    int before = count_fds();
    fut__uring_probe_forget();
    ck_assert_int_eq(fut__uring_probe(&why), 0);
    ck_assert_int_eq(count_fds(), before);

    static struct fut__uring_faults fx = {probe_old_kernel, NULL, NULL};
    fut__uring_faults = &fx;
    fut__uring_probe_forget();
    ck_assert_int_eq(fut__uring_probe(&why), FUT_ENOSYS);
    ck_assert_msg(strstr(why, "multishot RECV"), "why: %s", why);
    ck_assert_int_eq(count_fds(), before);

    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    struct fut_runtime *rt = NULL;
    ASSERT_EQ(fut_runtime_new(&cfg, &rt), 0); /* AUTO */
    ck_assert_str_eq(fut_runtime_backend(rt), "epoll");
    ck_assert(strstr(fut_io_backend_error(), "multishot RECV"));
    fut_runtime_free(rt);
    cfg.io_backend = FUT_IO_URING;
    rt = NULL;
    ck_assert_int_eq(fut_runtime_new(&cfg, &rt), FUT_ENOSYS);
    ck_assert_ptr_null(rt);
    ck_assert(strstr(fut_io_backend_error(), "multishot RECV"));

    /* Kept: the kernel's answer does not change with the hook gone. */
    fut__uring_faults = NULL;
    ck_assert_int_eq(fut__uring_probe(&why), FUT_ENOSYS);
    fut__uring_probe_forget();
    ck_assert_int_eq(fut__uring_probe(&why), 0);
    rt = rt_uring();
    fut_runtime_free(rt);
}
END_TEST

/* Running out of fds is not the kernel's answer: it is not kept, and the
 * next runtime probes again and gets io_uring. */
START_TEST(probe_emfile_not_kept)
{
    unsetenv("FUT_IO_BACKEND");
    fut__uring_probe_forget();
    int fds[256];
    struct rlimit old;
    int n = use_up_fds(fds, &old);
    const char *why = NULL;
    ck_assert_int_eq(fut__uring_probe(&why), -EMFILE);
    ck_assert_msg(strstr(why, "EMFILE"), "why: %s", why);
    for (int i = 0; i < n; i++)
        close(fds[i]);
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    struct fut_runtime *rt = NULL;
    ASSERT_EQ(fut_runtime_new(&cfg, &rt), 0); /* AUTO */
    ck_assert_str_eq(fut_runtime_backend(rt), "io_uring");
    fut_runtime_free(rt);
}
END_TEST

/* The probe runs on a thread of its own: the kernel sends task work
 * (TWA_SIGNAL) to every thread that submitted to a ring when the ring
 * goes, which makes a blocking call with a timeout on the caller's thread
 * return EINTR with no signal delivered. After each probe, a blocking
 * recv with SO_RCVTIMEO on this thread must time out (EAGAIN), never be
 * interrupted. */
START_TEST(probe_spares_caller)
{
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    struct timeval tv = {.tv_sec = 0, .tv_usec = 20000};
    ASSERT_EQ(setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
    int eintr = 0;
    for (int i = 0; i < 25; i++) {
        const char *why = NULL;
        fut__uring_probe_forget();
        ck_assert_int_eq(fut__uring_probe(&why), 0);
        char c;
        ssize_t n = recv(sv[0], &c, 1, 0);
        ck_assert_int_eq(n, -1);
        if (errno == EINTR)
            eintr++;
        else
            ck_assert_msg(errno == EAGAIN || errno == EWOULDBLOCK,
                          "recv: errno %d", errno);
    }
    ck_assert_msg(eintr == 0, "%d of 25 timed recvs after a probe: EINTR",
                  eintr);
    close(sv[0]);
    close(sv[1]);
}
END_TEST

/* AUTO on the multi-thread runtime is epoll: a ring per worker is
 * reaped by its worker only, so one long poll there would stall the
 * connections of its ring. io_uring asked for still gets the rings. */
START_TEST(probe_auto_multi_thread_epoll)
{
    unsetenv("FUT_IO_BACKEND");
    fut__uring_probe_forget();
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    cfg.flavor = FUT_RT_MULTI_THREAD;
    cfg.workers = 2;
    struct fut_runtime *rt = NULL;
    ASSERT_EQ(fut_runtime_new(&cfg, &rt), 0); /* AUTO */
    ck_assert_str_eq(fut_runtime_backend(rt), "epoll");
    ck_assert_msg(strstr(fut_io_backend_error(), "multi-thread"), "why: %s",
                  fut_io_backend_error());
    fut_runtime_free(rt);
    cfg.io_backend = FUT_IO_URING;
    rt = NULL;
    ASSERT_EQ(fut_runtime_new(&cfg, &rt), 0);
    ck_assert_str_eq(fut_runtime_backend(rt), "io_uring");
    fut_runtime_free(rt);
}
END_TEST

/* ------------------------------------------------------------ locality */

/* A blocking client on a thread of its own (no ring, so that only the
 * server's ops are counted): 'rounds' round trips of 64 bytes. */
struct lclient {
    pthread_t th;
    int fd, rounds, ok;
    atomic_int *done;
};

static void *lclient_main(void *arg)
{
    struct lclient *c = arg;
    int one = 1, i = 0;
    char msg[64], back[64];
    if (setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
        i = -1;
    for (; i >= 0 && i < c->rounds; i++) {
        memset(msg, 'a' + i % 26, sizeof msg);
        if (write(c->fd, msg, sizeof msg) != (ssize_t)sizeof msg)
            break;
        size_t got = 0;
        while (got < sizeof back) {
            ssize_t n = read(c->fd, back + got, sizeof back - got);
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        if (got != sizeof back || memcmp(msg, back, sizeof msg) != 0)
            break;
    }
    c->ok = i == c->rounds;
    close(c->fd);
    atomic_fetch_add(c->done, 1);
    return NULL;
}

#define LOC_CLIENTS 8
#define LOC_ROUNDS 3000

/* Issue 31's "I/O where the task is": an echo server on 2 workers under
 * 8 connections issues fewer than 1 op in 10 on another worker's ring
 * (posted through its inbox) - the tasks its completions wake stay where
 * their fds are unless a peer is idle long enough to steal
 * (rt/multi/worker.c, may_steal). A count over 24,000 round trips, not a
 * time. On the current-thread runtime (one ring) no op is foreign. */
START_TEST(ops_stay_on_their_ring)
{
    uintptr_t l0 = fut__load(&fut__uring_ops_local, FUT__RELAXED);
    uintptr_t f0 = fut__load(&fut__uring_ops_foreign, FUT__RELAXED);
    struct fut_runtime *rt = rt_uring();
    int port;
    struct fut_io *l;
    struct echo_stats st;
    struct echo_server srv;
    struct fut_join js;
    echo_serve(rt, &srv, &st, &js, &l, &port);
    struct lclient c[LOC_CLIENTS];
    atomic_int done = 0;
    for (int i = 0; i < LOC_CLIENTS; i++) {
        c[i].fd = connect_loopback(port);
        c[i].rounds = LOC_ROUNDS;
        c[i].ok = 0;
        c[i].done = &done;
        ASSERT_EQ(pthread_create(&c[i].th, NULL, lclient_main, &c[i]), 0);
    }
    /* The current-thread runtime runs inside block_on only. */
    for (int ms = 0; atomic_load(&done) < LOC_CLIENTS && ms < 60000; ms += 5)
        run_for(rt, 5);
    for (int i = 0; i < LOC_CLIENTS; i++) {
        ASSERT_EQ(pthread_join(c[i].th, NULL), 0);
        ck_assert_msg(c[i].ok, "client %d did not get its echoes", i);
    }
    fut_join_abort(&js);
    fut_drop(&js.base);
    fut_runtime_free(rt); /* the rings add their last counts */
    fut_io_close(l);
    uintptr_t local = fut__load(&fut__uring_ops_local, FUT__RELAXED) - l0;
    uintptr_t foreign = fut__load(&fut__uring_ops_foreign, FUT__RELAXED) - f0;
    uintptr_t total = local + foreign;
    fprintf(stderr, "locality: %lu ops, %lu foreign (%.1f%%)\n",
            (unsigned long)total, (unsigned long)foreign,
            total ? 100.0 * (double)foreign / (double)total : 0.0);
    /* At least one send per round trip was counted. */
    ck_assert_uint_ge(total, (uintptr_t)LOC_CLIENTS * LOC_ROUNDS);
    if (!fut_test_rt_is_mt())
        ck_assert_uint_eq(foreign, 0);
    else
        ck_assert_msg(foreign * 10 < total,
                      "%lu of %lu ops foreign (bound: under 10%%)",
                      (unsigned long)foreign, (unsigned long)total);
}
END_TEST

/* ----------------------------------------------------------- lifecycle */

/* A multi-thread runtime on io_uring made and freed at once, many times:
 * a worker that has not waited yet is rescued by its peer (its ring
 * unserved for 1 ms), and the rescue may reap the wake of the shutdown's
 * unpark; the owner must still see it (src/io/uring/rescue.c, 'wake_rescued'),
 * or it sleeps through the shutdown and the free never returns. A hang,
 * so the test's timeout is its failure; statistical: without the fix a
 * TSan build hung at the 900th-1,000th cycle in 1 of 3 runs of 3,000. */
START_TEST(create_free_mt)
{
    int cycles = fut_test_rt_is_mt() ? 1500 : 0; /* .mt only */
    for (int i = 0; i < cycles; i++) {
        struct fut_runtime *rt = rt_uring();
        fut_runtime_free(rt);
    }
}
END_TEST

/* ------------------------------------------------ one record per fd */

/* A waker that records whether its fd's lock was held when it was woken
 * (a try of io->lock from the wake: on the multi-thread runtime the CQE
 * runs on the ring's worker, and nobody else holds that fd's lock then). */
struct lock_probe {
    struct fut__io *io;
    atomic_int woken, under_lock, refs;
};

static struct fut_waker lp_clone(const void *d);
static void lp_wake_by_ref(const void *d)
{
    struct lock_probe *p = (struct lock_probe *)d;
    if (fut__mutex_trylock(&p->io->lock))
        fut__mutex_unlock(&p->io->lock);
    else
        atomic_store(&p->under_lock, 1);
    atomic_fetch_add(&p->woken, 1);
}
static void lp_drop(const void *d)
{
    atomic_fetch_sub(&((struct lock_probe *)d)->refs, 1);
}
static void lp_wake(const void *d)
{
    lp_wake_by_ref(d);
    lp_drop(d);
}
static const struct fut_waker_vtable lp_vt = {lp_clone, lp_wake,
                                              lp_wake_by_ref, lp_drop};
static struct fut_waker lp_clone(const void *d)
{
    atomic_fetch_add(&((struct lock_probe *)d)->refs, 1);
    return (struct fut_waker){d, &lp_vt};
}

/* Polls 'inner' once with the probe's waker in place of the task's. */
struct probe_once {
    struct fut_future base;
    struct fut_future *inner;
    struct lock_probe *lp;
    int step;
};

static int pr_poll(struct fut_future *f, struct fut_context *cx)
{
    struct probe_once *p = (struct probe_once *)f;
    struct fut_context c = *cx;
    c.waker = (struct fut_waker){p->lp, &lp_vt};
    p->step = fut_poll(p->inner, &c);
    return FUT_READY;
}
FUT_ASYNC_VTABLE(pr_vt, "probe_once", pr_poll, NULL);

static void probe_wait(struct lock_probe *lp, int n)
{
    for (int i = 0; i < 5000 && atomic_load(&lp->woken) < n; i++)
        usleep(1000);
}

/* The native ops' wakers live in the fd's one record (the reactor's
 * slots) and a completion wakes them after the fd's lock, as the
 * reactor's dispatch does: a read's and a write's completion wake a
 * waker that finds io->lock free (on a multi-thread runtime, the worker
 * reaping the CQE holds it while it handles it). Then the fd is closed
 * with a read and a write in flight and bytes arriving, 100 times: the
 * completions that come after the io was freed touch neither its lock
 * nor its slots (ASan: no use after free), and nothing leaks. */
START_TEST(wakes_after_fd_lock)
{
    struct fut_runtime *rt = rt_uring();
    for (int round = 0; round < 20; round++) {
        struct fut_io *a;
        int peer;
        stream_pair(&a, &peer);
        struct lock_probe lp = {.io = fut__io_core(a)};
        char buf[64];
        struct fut_io_read rd;
        fut_io_read_init(&rd, a, buf, sizeof buf);
        struct probe_once po = {.inner = &rd.base, .lp = &lp};
        fut_future_init(&po.base, &pr_vt);
        ASSERT_EQ(fut_block_on(rt, &po.base), 0);
        ck_assert_int_eq(po.step, FUT_PENDING);
        ck_assert_int_eq(atomic_load(&lp.refs), 1); /* parked: in io->rd */
        ASSERT_EQ(write(peer, "ping", 4), 4);
        if (!fut_test_rt_is_mt())
            run_for(rt, 5); /* a lone ring reaps in its block_on */
        probe_wait(&lp, 1);
        ck_assert_int_eq(atomic_load(&lp.woken), 1);
        ck_assert_msg(!atomic_load(&lp.under_lock),
                      "a read's completion woke under the fd's lock");
        ASSERT_EQ(fut_block_on(rt, &rd.base), 0);
        ck_assert_int_eq(rd.result, 4);
        fut_drop(&rd.base);
        /* A write: its SEND's completion. */
        struct fut_io_write wr;
        fut_io_write_init(&wr, a, "pong", 4);
        fut_drop(&po.base);
        po.inner = &wr.base;
        fut_future_init(&po.base, &pr_vt);
        ASSERT_EQ(fut_block_on(rt, &po.base), 0);
        if (po.step == FUT_PENDING) {
            if (!fut_test_rt_is_mt())
                run_for(rt, 5);
            probe_wait(&lp, 2);
            ck_assert_int_eq(atomic_load(&lp.woken), 2);
            ck_assert_msg(!atomic_load(&lp.under_lock),
                          "a write's completion woke under the fd's lock");
            ASSERT_EQ(fut_block_on(rt, &wr.base), 0);
        }
        ck_assert_int_eq(wr.result, 4);
        fut_drop(&wr.base);
        fut_drop(&po.base);
        ck_assert_int_eq(atomic_load(&lp.refs), 0);
        ck_assert_int_eq(read(peer, buf, sizeof buf), 4);
        fut_io_close(a);
        close(peer);
    }
    /* Closed with ops in flight: their last CQEs come after the io. */
    for (int round = 0; round < 100; round++) {
        struct fut_io *a;
        int peer;
        stream_pair(&a, &peer);
        char buf[64];
        struct fut_io_read rd;
        struct fut_io_write wr;
        fut_io_read_init(&rd, a, buf, sizeof buf);
        fut_io_write_init(&wr, a, "x", 1);
        ASSERT_EQ(poll_once(rt, &rd.base), FUT_PENDING);
        poll_once(rt, &wr.base);
        if (round % 2)
            run_for(rt, 1); /* the ops in the kernel first */
        ASSERT_EQ(write(peer, "late", 4), 4);
        fut_drop(&rd.base);
        fut_drop(&wr.base);
        fut_io_close(a);
        if (round % 3 == 0)
            close(peer); /* and the peer gone */
        run_for(rt, 1);
        if (round % 3)
            close(peer);
    }
    run_for(rt, 20);
    fut_runtime_free(rt);
}
END_TEST

int main(void)
{
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    cfg.io_backend = FUT_IO_URING;
    struct fut_runtime *rt;
    int r = fut_runtime_new(&cfg, &rt);
    if (r != 0) {
        fprintf(stderr, "io_uring: skipped: %s (%s)\n", fut_strerror(r),
                fut_io_backend_error());
        return 77;
    }
    fut_runtime_free(rt);
    Suite *s = suite_create("io_uring");
    TCase *tc = fut_test_tcase(s, "ownership");
    tcase_add_test(tc, drop_read_then_data);
    tcase_add_test(tc, write_outlives_runtime);
    tc = fut_test_tcase(s, "leaks");
    tcase_add_test(tc, drop_accepts_and_opens);
    tc = fut_test_tcase(s, "accept");
    tcase_add_test(tc, multishot_accept_serves);
    tcase_add_test(tc, multishot_accept_paused);
    tcase_add_test(tc, multishot_accept_moves);
    tcase_add_test(tc, multishot_accept_emfile);
    tc = fut_test_tcase(s, "multishot");
    tcase_add_test(tc, multishot_rearm);
    tcase_add_test(tc, batched_submissions);
    tc = fut_test_tcase(s, "pool");
    tcase_add_test(tc, fixed_files_freed);
    tcase_add_test(tc, fixed_files_fallback);
    tcase_add_test(tc, buffer_pool_grows_and_shrinks);
    tc = fut_test_tcase(s, "probe");
    tcase_add_test(tc, probe_needs_multishot_recv);
    tcase_add_test(tc, probe_emfile_not_kept);
    tcase_add_test(tc, probe_auto_multi_thread_epoll);
    tcase_add_test(tc, probe_spares_caller);
    tc = fut_test_tcase(s, "faults");
    tcase_add_test(tc, faults_break_only_their_connection);
    tcase_add_test(tc, benign_faults_lose_nothing);
    tc = fut_test_tcase(s, "locality");
    tcase_add_test(tc, ops_stay_on_their_ring);
    tc = fut_test_tcase(s, "record");
    tcase_add_test(tc, wakes_after_fd_lock);
    tc = fut_test_tcase(s, "lifecycle");
    tcase_add_test(tc, create_free_mt);
    return fut_test_run(s);
}
