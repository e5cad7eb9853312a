/* SPDX-License-Identifier: MIT */
/* TCP: listener, accept, connect (refused, timeout), read/write/peek/
 * shutdown, split halves on two tasks, options, the accept backoff on
 * EMFILE (injected and real), injected errors on each syscall path, the
 * echo server surviving a failed connection, and drop-at-every-PENDING
 * proofs of the cancel-safety classes (C12). */
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>

#include "io/io_internal.h"
#include "net_echo.h"
#include "platform/sys.h"

/* Runs an echo server task and 'n' clients on one runtime. */
static void run_echo(struct fut_runtime *rt, int n, int rounds, size_t len,
                     struct echo_stats *st, int *results)
{
    int port;
    struct fut_io *l = listen_any(&port);
    struct echo_server srv;
    echo_server_init(&srv, l, st);
    struct fut_join js;
    ASSERT_EQ(fut_spawn(rt, &srv, sizeof srv, &js), 0);
    struct fut_join *jc = calloc((size_t)n, sizeof *jc);
    for (int i = 0; i < n; i++) {
        struct echo_client c;
        echo_client_init(&c, port, rounds, len);
        ASSERT_EQ(fut_spawn(rt, &c, sizeof c, &jc[i]), 0);
    }
    for (int i = 0; i < n; i++) {
        ASSERT_EQ(fut_block_on(rt, &jc[i].base), 0);
        ASSERT_EQ(jc[i].result, 0);
        results[i] = ((struct echo_client *)fut_join_output(&jc[i]))->result;
        fut_drop(&jc[i].base);
    }
    free(jc);
    fut_drop(&js.base); /* aborts the accept loop */
    fut_test_run_pending(rt);
    fut_io_close(l);
}

START_TEST(tcp_echo_roundtrips)
{
    struct fut_runtime *rt = rt_make(0);
    struct echo_stats st;
    memset(&st, 0, sizeof st);
    int res[20];
    run_echo(rt, 20, 50, 200, &st, res);
    for (int i = 0; i < 20; i++)
        ck_assert_msg(res[i] == 0, "client %d: %s", i, fut_strerror(res[i]));
    ASSERT_EQ(atomic_load(&st.accepted), 20);
    ASSERT_EQ(atomic_load(&st.failed), 0);
    ASSERT_EQ(atomic_load(&st.bytes), 20 * 50 * 200);
    fut_runtime_free(rt);
    ASSERT_EQ(atomic_load(&st.live), 0);
}
END_TEST

/* accept gives the peer's address (127.0.0.1 and the client's own
 * port), on either backend; 'peerlen' is an output, 0 on entry. */
START_TEST(tcp_accept_peer_address)
{
    struct fut_runtime *rt = rt_make(0);
    int port;
    struct fut_io *l = listen_any(&port);
    for (int i = 0; i < 3; i++) {
        int c = connect_loopback(port);
        struct fut_accept a;
        fut_accept_init(&a, l);
        ASSERT_EQ(fut_block_on(rt, &a.base), 0);
        ASSERT_EQ(a.result, 0);
        ck_assert_int_eq(a.peerlen, sizeof(struct sockaddr_in));
        ck_assert_int_eq(a.peer.ss_family, AF_INET);
        ck_assert_int_eq(fut_addr_port(&a.peer), local_port(c));
        struct sockaddr_in *p = (struct sockaddr_in *)&a.peer;
        ck_assert_int_eq(p->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
        fut_io_close(a.conn);
        fut_drop(&a.base);
        close(c);
    }
    fut_io_close(l);
    fut_runtime_free(rt);
}
END_TEST

/* The echo path makes no epoll_ctl per operation: one ADD per fd that
 * ever waits, one DEL at close (syscall shim counters). */
START_TEST(tcp_register_once)
{
    struct fut_runtime *rt = rt_make(0);
    struct echo_stats st;
    memset(&st, 0, sizeof st);
    int res[4];
    fut__sys_reset();
    fut__sys_count_calls(1);
    run_echo(rt, 4, 200, 64, &st, res);
    fut_runtime_free(rt);
    long ctl = fut__sys_calls(FUT__SYS_EPOLL_CTL);
    long rd = fut__sys_calls(FUT__SYS_READ);
    long wr = fut__sys_calls(FUT__SYS_SEND);
    fut__sys_reset();
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(res[i], 0);
    /* 9 fds (listener, 4 + 4 connections) x (ADD + DEL), plus the
     * eventfd's ADD: 2 * 800 round trips would need thousands. */
    ck_assert_msg(ctl <= 20, "%ld epoll_ctl calls", ctl);
    /* Short reads clear readiness: no EAGAIN read per round trip. */
    ck_assert_msg(rd <= 2 * 800 + 40, "%ld reads for 1600 messages", rd);
    ck_assert_msg(wr <= 1600 + 10, "%ld writes", wr);
}
END_TEST

/* ------------------------------------------------ connect, options */

struct connect_one {
    struct fut_future base;
    struct sockaddr_storage ss;
    socklen_t len;
    int64_t deadline;
    struct fut_connect c;
    int result;
};

static int connect_one_poll(struct fut_future *f, struct fut_context *cx)
{
    struct connect_one *c = (struct connect_one *)f;
    FUT_BEGIN(f);
    fut_tcp_connect_init(&c->c, (struct sockaddr *)&c->ss, c->len,
                         c->deadline);
    FUT_AWAIT(f, &c->c);
    c->result = c->c.result;
    if (c->c.conn)
        fut_io_close(c->c.conn);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(connect_one_vt, "connect_one", connect_one_poll, NULL);

static int connect_to(struct fut_runtime *rt, int port, int64_t deadline)
{
    struct connect_one c;
    memset(&c, 0, sizeof c);
    fut_future_init(&c.base, &connect_one_vt);
    fut_addr_parse("127.0.0.1", port, &c.ss, &c.len);
    c.deadline = deadline;
    ASSERT_EQ(fut_block_on(rt, &c.base), 0);
    fut_drop(&c.base);
    return c.result;
}

START_TEST(tcp_connect_refused_and_timeout)
{
    struct fut_runtime *rt = rt_make(0);
    int port;
    struct fut_io *l = listen_any(&port);
    fut_io_close(l); /* nobody listens there now */
    ASSERT_EQ(connect_to(rt, port, -1), -ECONNREFUSED);

    /* A listener that never accepts, with a full backlog: SYNs are
     * dropped, so a connect hangs until its deadline. */
    struct sockaddr_storage ss;
    socklen_t len;
    fut_addr_parse("127.0.0.1", 0, &ss, &len);
    ASSERT_EQ(fut_tcp_listen((struct sockaddr *)&ss, len, 1, &l), 0);
    fut_io_set_option(l, SOL_SOCKET, SO_RCVBUF, 4096);
    ASSERT_EQ(fut_io_local_addr(l, &ss, &len), 0);
    port = fut_addr_port(&ss);
    int filled = 0, r = 0;
    int64_t t0 = fut_now_ns();
    for (int i = 0; i < 8 && filled < 8; i++) {
        t0 = fut_now_ns();
        r = connect_to(rt, port, fut_now_ns() + 60 * MS);
        if (r == FUT_ETIMEDOUT)
            break;
        ASSERT_EQ(r, 0);
        filled++;
    }
    ASSERT_EQ(r, FUT_ETIMEDOUT);
    ck_assert(fut_now_ns() - t0 >= 60 * MS);
    ck_assert(fut_now_ns() - t0 < 2000 * MS);
    fut_io_close(l);
    fut_runtime_free(rt);
}
END_TEST

START_TEST(tcp_options)
{
    int port;
    struct fut_io *l = listen_any(&port);
    struct sockaddr_storage ss;
    socklen_t len;
    fut_addr_parse("127.0.0.1", port, &ss, &len);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_EQ(connect(fd, (struct sockaddr *)&ss, len), 0);
    struct fut_runtime *rt = rt_make(0);
    struct fut_accept a;
    fut_accept_init(&a, l);
    ASSERT_EQ(fut_block_on(rt, &a.base), 0);
    ASSERT_EQ(a.result, 0);
    struct fut_io *s = a.conn;
    fut_drop(&a.base);
    int v = -1;
    ASSERT_EQ(fut_tcp_set_nodelay(s, 1), 0);
    ASSERT_EQ(fut_io_get_option(s, IPPROTO_TCP, TCP_NODELAY, &v), 0);
    ASSERT_TRUE(v != 0);
    ASSERT_EQ(fut_tcp_set_keepalive(s, 1), 0);
    ASSERT_EQ(fut_io_get_option(s, SOL_SOCKET, SO_KEEPALIVE, &v), 0);
    ASSERT_TRUE(v != 0);
    ASSERT_EQ(fut_io_take_error(s), 0);
    ASSERT_EQ(fut_io_peer_addr(s, &ss, &len), 0);
    ASSERT_EQ(ss.ss_family, AF_INET);
    ASSERT_EQ(fut_io_local_addr(s, &ss, &len), 0);
    ASSERT_EQ(fut_addr_port(&ss), port);
    ASSERT_EQ(fut_addr_parse("::1", 80, &ss, &len), 0);
    ASSERT_EQ(ss.ss_family, AF_INET6);
    ASSERT_EQ(fut_addr_port(&ss), 80);
    ASSERT_EQ(fut_addr_parse("nonsense", 1, &ss, &len), FUT_EINVAL);
    ASSERT_EQ(fut_addr_parse(NULL, 70000, &ss, &len), FUT_EINVAL);
    fut_io_close(s);
    fut_io_close(l);
    close(fd);
    fut_runtime_free(rt);
}
END_TEST

/* --------------------------------------------- peek, shutdown, split */

/* A connected pair of fut_io (accepted, connected). */
static void tcp_pair(struct fut_runtime *rt, struct fut_io **a,
                     struct fut_io **b)
{
    int port;
    struct fut_io *l = listen_any(&port);
    struct connect_one c;
    memset(&c, 0, sizeof c);
    struct sockaddr_storage ss;
    socklen_t len;
    fut_addr_parse("127.0.0.1", port, &ss, &len);
    struct fut_connect con;
    fut_tcp_connect_init(&con, (struct sockaddr *)&ss, len, -1);
    ASSERT_EQ(fut_block_on(rt, &con.base), 0);
    ASSERT_EQ(con.result, 0);
    *b = con.conn;
    fut_drop(&con.base);
    struct fut_accept acc;
    fut_accept_init(&acc, l);
    ASSERT_EQ(fut_block_on(rt, &acc.base), 0);
    ASSERT_EQ(acc.result, 0);
    *a = acc.conn;
    fut_drop(&acc.base);
    fut_io_close(l);
}

START_TEST(tcp_peek_shutdown_writev)
{
    struct fut_runtime *rt = rt_make(0);
    struct fut_io *a, *b;
    tcp_pair(rt, &a, &b);
    char buf[64];
    ASSERT_EQ(io_block_write_all(rt, b, "hello", 5), 5);
    ASSERT_EQ(io_block_read(rt, a, buf, 3, 1), 3); /* peek: stays */
    ASSERT_EQ(memcmp(buf, "hel", 3), 0);
    ASSERT_EQ(io_block_read(rt, a, buf, sizeof buf, 0), 5);
    ASSERT_EQ(memcmp(buf, "hello", 5), 0);
    struct iovec iov[3] = {{"ab", 2}, {"", 0}, {"cde", 3}};
    struct fut_io_write w;
    fut_io_writev_init(&w, b, iov, 3);
    ASSERT_EQ(fut_block_on(rt, &w.base), 0);
    ASSERT_EQ(w.result, 5);
    fut_drop(&w.base);
    ASSERT_EQ(io_block_read(rt, a, buf, sizeof buf, 0), 5);
    ASSERT_EQ(memcmp(buf, "abcde", 5), 0);
    ASSERT_EQ(fut_io_shutdown(b, SHUT_WR), 0);
    ASSERT_EQ(io_block_read(rt, a, buf, sizeof buf, 0), 0); /* EOF */
    ASSERT_EQ(io_block_read(rt, a, buf, sizeof buf, 0), 0); /* and stays */
    ASSERT_EQ(io_block_write_all(rt, a, "x", 1), 1);        /* half-open */
    ASSERT_EQ(io_block_read(rt, b, buf, sizeof buf, 0), 1);
    fut_io_close(a);
    /* The peer is gone: writing eventually fails with EPIPE/ECONNRESET,
     * never with SIGPIPE. */
    ssize_t r = 0;
    for (int i = 0; i < 100 && r >= 0; i++)
        r = io_block_write_all(rt, b, buf, sizeof buf);
    ck_assert_msg(r == -EPIPE || r == -ECONNRESET, "%s",
                  fut_strerror((int)r));
    fut_io_close(b);
    fut_runtime_free(rt);
}
END_TEST

/* Split halves used from two tasks at once: one writes a large stream
 * to the echo peer while the other reads it back. */
struct half_task {
    struct fut_future base;
    struct fut_io *io;
    size_t total, done;
    int writer;
    struct fut_io_write_all w;
    struct fut_io_read r;
    unsigned char buf[8192];
    int bad;
};

static int half_poll(struct fut_future *f, struct fut_context *cx)
{
    struct half_task *h = (struct half_task *)f;
    FUT_BEGIN(f);
    while (h->done < h->total) {
        if (h->writer) {
            for (size_t k = 0; k < sizeof h->buf; k++)
                h->buf[k] = (unsigned char)((h->done + k) * 7);
            fut_io_write_all_init(&h->w, h->io, h->buf, sizeof h->buf);
            FUT_AWAIT(f, &h->w);
            if (h->w.result < 0) {
                h->bad = 1;
                break;
            }
            h->done += sizeof h->buf;
        } else {
            fut_io_read_init(&h->r, h->io, h->buf, sizeof h->buf);
            FUT_AWAIT(f, &h->r);
            if (h->r.result <= 0) {
                h->bad = 1;
                break;
            }
            for (ssize_t k = 0; k < h->r.result; k++)
                if (h->buf[k] != (unsigned char)((h->done + (size_t)k) * 7))
                    h->bad = 1;
            h->done += (size_t)h->r.result;
        }
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(half_vt, "half", half_poll, NULL);

START_TEST(tcp_split_halves)
{
    struct fut_runtime *rt = rt_make(0);
    int port;
    struct fut_io *l = listen_any(&port);
    struct echo_stats st;
    memset(&st, 0, sizeof st);
    struct echo_server srv;
    echo_server_init(&srv, l, &st);
    struct fut_join js;
    ASSERT_EQ(fut_spawn(rt, &srv, sizeof srv, &js), 0);
    struct sockaddr_storage ss;
    socklen_t len;
    fut_addr_parse("127.0.0.1", port, &ss, &len);
    struct fut_connect con;
    fut_tcp_connect_init(&con, (struct sockaddr *)&ss, len, -1);
    ASSERT_EQ(fut_block_on(rt, &con.base), 0);
    ASSERT_EQ(con.result, 0);
    struct fut_io *rd, *wr;
    ASSERT_EQ(fut_io_split(con.conn, &rd, &wr), 0);
    ASSERT_EQ(fut_io_split(rd, &rd, &wr), FUT_EINVAL);
    fut_drop(&con.base);
    size_t total = (size_t)TEST_ITERS(4 << 20, 1 << 20);
    struct half_task h;
    memset(&h, 0, sizeof h);
    fut_future_init(&h.base, &half_vt);
    h.total = total;
    h.io = wr;
    h.writer = 1;
    struct fut_join jw, jr;
    ASSERT_EQ(fut_spawn(rt, &h, sizeof h, &jw), 0);
    h.io = rd;
    h.writer = 0;
    ASSERT_EQ(fut_spawn(rt, &h, sizeof h, &jr), 0);
    ASSERT_EQ(fut_block_on(rt, &jw.base), 0);
    ASSERT_EQ(fut_block_on(rt, &jr.base), 0);
    ASSERT_EQ(((struct half_task *)fut_join_output(&jw))->bad, 0);
    ASSERT_EQ(((struct half_task *)fut_join_output(&jr))->bad, 0);
    ASSERT_EQ(((struct half_task *)fut_join_output(&jr))->done, total);
    /* A write half cannot read and a read half cannot write. */
    char c;
    ASSERT_EQ(io_block_read(rt, wr, &c, 1, 0), FUT_EINVAL);
    ASSERT_EQ(io_block_write_all(rt, rd, "x", 1), FUT_EINVAL);
    fut_drop(&jw.base);
    fut_drop(&jr.base);
    fut_io_close(wr); /* shuts down writing: the server sees EOF */
    ASSERT_EQ(io_block_read(rt, rd, &c, 1, 0), 0);
    fut_io_close(rd);
    fut_drop(&js.base);
    fut_io_close(l);
    fut_runtime_free(rt);
}
END_TEST

/* ------------------------------------------------------ accept backoff */

/* Injected EMFILE: the accept future backs off on a timer (1, 2, 4, ...
 * ms) instead of spinning, and accepts once the fault is gone. */
START_TEST(tcp_accept_emfile_injected)
{
    struct fut_runtime *rt = rt_make(0);
    int port;
    struct fut_io *l = listen_any(&port);
    struct sockaddr_storage ss;
    socklen_t len;
    fut_addr_parse("127.0.0.1", port, &ss, &len);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_EQ(connect(fd, (struct sockaddr *)&ss, len), 0);
    fut__sys_reset();
    struct fut__sys_fault f = {FUT__SYS_ACCEPT, -1, 0, 5, -EMFILE, 0};
    ASSERT_EQ(fut__sys_inject(&f), 0);
    fut__sys_count_calls(1);
    struct fut_accept a;
    fut_accept_init(&a, l);
    int64_t t0 = fut_now_ns();
    ASSERT_EQ(fut_block_on(rt, &a.base), 0);
    int64_t took = fut_now_ns() - t0;
    long calls = fut__sys_calls(FUT__SYS_ACCEPT);
    fut__sys_reset();
    ASSERT_EQ(a.result, 0);
    ASSERT_EQ(a.backoffs, 5);
    ASSERT_EQ(calls, 6);
    ck_assert(took >= (1 + 2 + 4 + 8 + 16) * MS);
    fut_io_close(a.conn);
    fut_drop(&a.base);
    fut_io_close(l);
    close(fd);
    fut_runtime_free(rt);
}
END_TEST

/* Real EMFILE: with every fd used, accept backs off (few accept calls,
 * little CPU) and recovers by itself once fds are freed. */
START_TEST(tcp_accept_emfile_real)
{
    struct fut_runtime *rt = rt_make(0);
    int port;
    struct fut_io *l = listen_any(&port);
    int cfd = connect_loopback(port);
    struct rlimit old;
    static int fds[256];
    struct free_later fl;
    free_later_init(&fl, fds, use_up_fds(fds, &old));
    ASSERT_EQ(fut_spawn(rt, &fl, sizeof fl, NULL), 0);
    fut__sys_reset();
    fut__sys_count_calls(1);
    struct fut_accept a;
    fut_accept_init(&a, l);
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    ASSERT_EQ(fut_block_on(rt, &a.base), 0);
    getrusage(RUSAGE_SELF, &r1);
    long calls = fut__sys_calls(FUT__SYS_ACCEPT);
    fut__sys_reset();
    setrlimit(RLIMIT_NOFILE, &old);
    ASSERT_EQ(a.result, 0);
    ck_assert(a.backoffs >= 3);
    ck_assert_msg(calls <= a.backoffs + 2, "%ld accept calls", calls);
    long cpu_us = rusage_cpu_us(&r0, &r1);
    ck_assert_msg(cpu_us < 40000, "%ld us of CPU in 80 ms", cpu_us);
    fut_io_close(a.conn);
    fut_drop(&a.base);
    fut_io_close(l);
    close(cfd);
    fut_runtime_free(rt);
}
END_TEST

/* ----------------------------------------------------- fault injection */

static void inject(int op, int fd, long skip, long count, int err,
                   size_t max_len)
{
    struct fut__sys_fault f = {op, fd, skip, count, err, max_len};
    ASSERT_EQ(fut__sys_inject(&f), 0);
}

struct sleep_write {
    struct fut_future base;
    struct fut_sleep s;
    int fd;
};

static int sleep_write_poll(struct fut_future *f, struct fut_context *cx)
{
    struct sleep_write *w = (struct sleep_write *)f;
    FUT_BEGIN(f);
    fut_sleep_init(&w->s, 20 * MS);
    FUT_AWAIT(f, &w->s);
    ck_assert_int_eq(write(w->fd, "z", 1), 1);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(sleep_write_vt, "sleep_write", sleep_write_poll, NULL);

START_TEST(tcp_faults_read_write)
{
    struct fut_runtime *rt = rt_make(0);
    struct fut_io *a, *b;
    tcp_pair(rt, &a, &b);
    char buf[64];
    fut__sys_reset();
    /* EINTR is retried inside the poll. */
    ASSERT_EQ(io_block_write_all(rt, b, "abcdef", 6), 6);
    inject(FUT__SYS_READ, fut_io_fd(a), 0, 3, -EINTR, 0);
    ASSERT_EQ(io_block_read(rt, a, buf, sizeof buf, 0), 6);
    /* A short read gives what it got; the rest is read next. */
    ASSERT_EQ(io_block_write_all(rt, b, "abcdef", 6), 6);
    inject(FUT__SYS_READ, fut_io_fd(a), 0, 1, 0, 2);
    ASSERT_EQ(io_block_read(rt, a, buf, sizeof buf, 0), 2);
    ASSERT_EQ(io_block_read(rt, a, buf, sizeof buf, 0), 4);
    ASSERT_EQ(memcmp(buf, "cdef", 4), 0);
    /* Short writes: write_all keeps going until everything is out. */
    inject(FUT__SYS_SEND, fut_io_fd(b), 0, 4, 0, 1);
    ASSERT_EQ(io_block_write_all(rt, b, "12345", 5), 5);
    size_t got = 0;
    while (got < 5) {
        ssize_t r = io_block_read(rt, a, buf + got, sizeof buf - got, 0);
        ck_assert(r > 0);
        got += (size_t)r;
    }
    ASSERT_EQ(memcmp(buf, "12345", 5), 0);
    /* An EAGAIN that lies (the data is there): the read waits for the
     * next event and then gets everything. */
    ASSERT_EQ(io_block_write_all(rt, b, "xy", 2), 2);
    inject(FUT__SYS_READ, fut_io_fd(a), 0, 1, -EAGAIN, 0);
    struct fut_io_read rd;
    fut_io_read_init(&rd, a, buf, sizeof buf);
    struct sleep_write sw; /* the next event, 20 ms later */
    fut_future_init(&sw.base, &sleep_write_vt);
    sw.fd = fut_io_fd(b);
    ASSERT_EQ(fut_spawn(rt, &sw, sizeof sw, NULL), 0);
    ASSERT_EQ(fut_block_on(rt, &rd.base), 0);
    ck_assert(rd.result >= 2);
    fut_drop(&rd.base);
    if (rd.result == 2)
        ASSERT_EQ(io_block_read(rt, a, buf, sizeof buf, 0), 1);
    /* ECONNRESET on read, EPIPE on write: reported as the result. */
    inject(FUT__SYS_READ, fut_io_fd(a), 0, 1, -ECONNRESET, 0);
    ASSERT_EQ(io_block_write_all(rt, b, "q", 1), 1);
    ASSERT_EQ(io_block_read(rt, a, buf, sizeof buf, 0), -ECONNRESET);
    ASSERT_EQ(io_block_read(rt, a, buf, sizeof buf, 0),
              1); /* fault was once */
    inject(FUT__SYS_SEND, fut_io_fd(b), 0, 1, -EPIPE, 0);
    struct fut_io_write_all wa;
    fut_io_write_all_init(&wa, b, "hello", 5);
    ASSERT_EQ(fut_block_on(rt, &wa.base), 0);
    ASSERT_EQ(wa.result, -EPIPE);
    ASSERT_EQ(wa.done, 0);
    fut_drop(&wa.base);
    ASSERT_EQ(fut__sys_injected(), 3 + 1 + 4 + 1 + 1 + 1);
    fut__sys_reset();
    fut_io_close(a);
    fut_io_close(b);
    fut_runtime_free(rt);
}
END_TEST

/* ENOMEM from epoll_ctl (registration) and EMFILE/ENOMEM from socket():
 * the future reports it, nothing leaks. */
START_TEST(tcp_faults_setup)
{
    struct fut_runtime *rt = rt_make(0);
    struct fut_io *a, *b;
    tcp_pair(rt, &a, &b);
    fut__sys_reset();
    inject(FUT__SYS_EPOLL_CTL, fut_io_fd(a), 0, 1, -ENOMEM, 0);
    char buf[8];
    /* Nothing to read: it must register, and registration fails. */
    struct fut_io *a2, *b2;
    tcp_pair(rt, &a2, &b2);
    fut__sys_reset();
    inject(FUT__SYS_EPOLL_CTL, fut_io_fd(a2), 0, 1, -ENOMEM, 0);
    ASSERT_EQ(io_block_read(rt, a2, buf, sizeof buf, 0), -ENOMEM);
    /* The next attempt registers fine. */
    ASSERT_EQ(io_block_write_all(rt, b2, "k", 1), 1);
    ASSERT_EQ(io_block_read(rt, a2, buf, sizeof buf, 0), 1);
    inject(FUT__SYS_SOCKET, -1, 0, 1, -EMFILE, 0);
    ASSERT_EQ(connect_to(rt, 1, -1), -EMFILE);
    inject(FUT__SYS_SOCKET, -1, 0, 1, -ENOMEM, 0);
    struct sockaddr_storage ss;
    socklen_t len;
    fut_addr_parse("127.0.0.1", 0, &ss, &len);
    struct fut_io *l;
    ASSERT_EQ(fut_tcp_listen((struct sockaddr *)&ss, len, 0, &l), -ENOMEM);
    inject(FUT__SYS_BIND, -1, 0, 1, -EADDRINUSE, 0);
    ASSERT_EQ(fut_tcp_listen((struct sockaddr *)&ss, len, 0, &l),
              -EADDRINUSE);
    fut__sys_reset();
    fut_io_close(a);
    fut_io_close(b);
    fut_io_close(a2);
    fut_io_close(b2);
    fut_runtime_free(rt);
}
END_TEST

/* Creating a runtime when epoll or eventfd cannot be had fails with that
 * error and leaks nothing. */
START_TEST(tcp_runtime_emfile)
{
    struct fut_runtime *rt = NULL;
    long live = fut_alloc_live();
    int fds0 = count_fds();
    fut__sys_reset();
    inject(FUT__SYS_EPOLL_CREATE, -1, 0, 1, -EMFILE, 0);
    ASSERT_EQ(fut_runtime_new(NULL, &rt), -EMFILE);
    inject(FUT__SYS_EVENTFD, -1, 0, 1, -ENFILE, 0);
    ASSERT_EQ(fut_runtime_new(NULL, &rt), -ENFILE);
    inject(FUT__SYS_EPOLL_CTL, -1, 0, 1, -ENOMEM, 0);
    ASSERT_EQ(fut_runtime_new(NULL, &rt), -ENOMEM);
    fut__sys_reset();
    ASSERT_EQ(fut_alloc_live(), live);
    ASSERT_EQ(count_fds(), fds0);
}
END_TEST

/* One connection of the echo server fails (injected ECONNRESET on its
 * fd): it is closed, the others keep being served. */
struct burst {
    struct fut_future base;
    int port, n, fail_idx, rounds;
    struct echo_stats *st;
    struct echo_client c[5];
    struct fut_join j[5];
    int i, results[5];
};

START_TEST(tcp_echo_survives_failed_connection)
{
    struct fut_runtime *rt = rt_make(0);
    int port;
    struct fut_io *l = listen_any(&port);
    struct echo_stats st;
    memset(&st, 0, sizeof st);
    struct echo_server srv;
    echo_server_init(&srv, l, &st);
    struct fut_join js;
    ASSERT_EQ(fut_spawn(rt, &srv, sizeof srv, &js), 0);
    /* Five connected clients (fd order = accept order). */
    struct fut_io *cl[5];
    for (int i = 0; i < 5; i++) {
        struct sockaddr_storage ss;
        socklen_t len;
        fut_addr_parse("127.0.0.1", port, &ss, &len);
        struct fut_connect con;
        fut_tcp_connect_init(&con, (struct sockaddr *)&ss, len, -1);
        ASSERT_EQ(fut_block_on(rt, &con.base), 0);
        ASSERT_EQ(con.result, 0);
        cl[i] = con.conn;
        fut_drop(&con.base);
        while (atomic_load(&st.accepted) < i + 1)
            fut_test_run_pending(rt);
    }
    fut__sys_reset();
    inject(FUT__SYS_READ, atomic_load(&st.fds[2]), 0, 1, -ECONNRESET, 0);
    char buf[16];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 5; i++) {
            if (i == 2 && round > 0)
                continue;
            ASSERT_EQ(io_block_write_all(rt, cl[i], "ping", 4), 4);
            ssize_t r = io_block_read(rt, cl[i], buf, 4, 0);
            if (i == 2) /* the server closed it (with "ping" unread) */
                ck_assert_msg(r == 0 || r == -ECONNRESET, "%zd", r);
            else
                ASSERT_EQ(r, 4);
        }
    }
    fut__sys_reset();
    ASSERT_EQ(atomic_load(&st.failed), 1);
    ASSERT_EQ(atomic_load(&st.live), 4);
    for (int i = 0; i < 5; i++)
        fut_io_close(cl[i]);
    fut_drop(&js.base);
    fut_runtime_free(rt);
    fut_io_close(l);
    ASSERT_EQ(atomic_load(&st.live), 0);
}
END_TEST

/* -------------------------------------------- drop at every PENDING */

/* read is cancel-safe: dropped at any PENDING, the bytes are still in the
 * socket for the next read. */
static struct {
    struct fut_io *a, *b;
    struct fut_io_read rd;
    char buf[8];
} H;

struct delayed_write {
    struct fut_future base;
    struct fut_yield y[3];
    int i;
    struct fut_io *io;
};

static int dw_poll(struct fut_future *f, struct fut_context *cx)
{
    struct delayed_write *d = (struct delayed_write *)f;
    FUT_BEGIN(f);
    for (d->i = 0; d->i < 3; d->i++) {
        fut_yield_init(&d->y[d->i]);
        FUT_AWAIT(f, &d->y[d->i]);
    }
    ck_assert_int_eq(write(fut_io_fd(d->io), "data", 4), 4);
    FUT_END(f);
}
FUT_ASYNC_VTABLE(dw_vt, "delayed_write", dw_poll, NULL);

static struct fut_future *make_read(void *ud, struct fut_runtime *rt)
{
    (void)ud;
    /* Drain what a previous run left, then arrange a later write. */
    char tmp[64];
    while (read(fut_io_fd(H.a), tmp, sizeof tmp) > 0)
        ;
    struct delayed_write d;
    fut_future_init(&d.base, &dw_vt);
    d.io = H.b;
    ASSERT_EQ(fut_spawn(rt, &d, sizeof d, NULL), 0);
    fut_io_read_init(&H.rd, H.a, H.buf, sizeof H.buf);
    return &H.rd.base;
}

static int check_read(void *ud, int k)
{
    (void)ud;
    /* Completed: it got the 4 bytes. Dropped: the 4 bytes are still
     * readable (nothing consumed and lost). */
    if (k == 0)
        return H.rd.result == 4 ? 0 : 1;
    /* Through fut, outside any runtime: a completion backend may have
     * taken the bytes off the socket, and must have kept them for the
     * next reader (the fd's spill). */
    char tmp[8];
    struct fut_io_read rd;
    fut_io_read_init(&rd, H.a, tmp, sizeof tmp);
    if (fut_block_on(NULL, &rd.base) != 0)
        return 1;
    return rd.result == 4 ? 0 : 1;
}

START_TEST(drop_read_cancel_safe)
{
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    ASSERT_EQ(fut_io_from_fd(sv[0], &H.a), 0);
    ASSERT_EQ(fut_io_from_fd(sv[1], &H.b), 0);
    struct fut_harness h;
    fut_harness_init(&h, make_read, check_read, NULL);
    int r = fut_harness_run(&h);
    ck_assert_msg(r == 0, "%s", h.msg);
    ck_assert(h.pendings >= 1);
    fut_io_close(H.a);
    fut_io_close(H.b);
}
END_TEST

/* accept is cancel-safe: dropped while waiting, the connection that
 * arrives stays in the backlog for the next accept. */
static struct {
    struct fut_io *l;
    int port;
    struct fut_accept acc;
    int client;
} A;

struct delayed_connect {
    struct fut_future base;
    struct fut_yield y[2];
    int i;
};

static int dc_poll(struct fut_future *f, struct fut_context *cx)
{
    struct delayed_connect *d = (struct delayed_connect *)f;
    FUT_BEGIN(f);
    for (d->i = 0; d->i < 2; d->i++) {
        fut_yield_init(&d->y[d->i]);
        FUT_AWAIT(f, &d->y[d->i]);
    }
    {
        struct sockaddr_storage ss;
        socklen_t len;
        fut_addr_parse("127.0.0.1", A.port, &ss, &len);
        A.client = socket(AF_INET, SOCK_STREAM, 0);
        ck_assert_int_eq(connect(A.client, (struct sockaddr *)&ss, len), 0);
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(dc_vt, "delayed_connect", dc_poll, NULL);

static struct fut_future *make_accept(void *ud, struct fut_runtime *rt)
{
    (void)ud;
    struct delayed_connect d;
    fut_future_init(&d.base, &dc_vt);
    ASSERT_EQ(fut_spawn(rt, &d, sizeof d, NULL), 0);
    fut_accept_init(&A.acc, A.l);
    return &A.acc.base;
}

static int check_accept(void *ud, int k)
{
    (void)ud;
    int ok;
    if (k == 0) {
        ok = A.acc.result == 0;
        fut_io_close(A.acc.conn);
    } else {
        /* The connection must still be there, for the next accept (through
         * fut: a completion backend may hold it for the listener). */
        struct fut_accept acc;
        fut_accept_init(&acc, A.l);
        ok = fut_block_on(NULL, &acc.base) == 0 && acc.result == 0;
        if (ok)
            fut_io_close(acc.conn);
    }
    close(A.client);
    return ok ? 0 : 1;
}

START_TEST(drop_accept_cancel_safe)
{
    A.l = listen_any(&A.port);
    struct fut_harness h;
    fut_harness_init(&h, make_accept, check_accept, NULL);
    int r = fut_harness_run(&h);
    ck_assert_msg(r == 0, "%s", h.msg);
    ck_assert(h.pendings >= 1);
    fut_io_close(A.l);
}
END_TEST

/* write_all loses data: dropped midway, exactly 'done' bytes went out
 * (epoll); on io_uring the write in flight at the drop is cancelled, and
 * what the kernel sent of it before the cancel (at most one op's copy,
 * 64 KiB) went out too, uncounted (docs/io.md). */
static struct {
    struct fut_io *a, *b;
    struct fut_io_write_all w;
    unsigned char *data;
    size_t len;
    int uring;
} W;

static size_t drained;
static size_t drain_all(void)
{
    char tmp[65536];
    size_t n = 0;
    ssize_t r;
    while ((r = read(fut_io_fd(W.b), tmp, sizeof tmp)) > 0)
        n += (size_t)r;
    return n;
}

struct drain_later {
    struct fut_future base;
    struct fut_yield y;
    int i;
};

static int drain_poll(struct fut_future *f, struct fut_context *cx)
{
    struct drain_later *d = (struct drain_later *)f;
    FUT_BEGIN(f);
    /* Drain now and then (so the writer makes progress, one PENDING at a
     * time) until the writer finished or was dropped; bounded. */
    for (d->i = 0; d->i < 200000; d->i++) {
        fut_yield_init(&d->y);
        FUT_AWAIT(f, &d->y);
        if (W.w.done == W.len || (W.w.base.flags & FUT_F_DROPPED))
            break;
        if (d->i % 4 == 3)
            drained += drain_all();
    }
    FUT_END(f);
}
FUT_ASYNC_VTABLE(drain_vt, "drain_later", drain_poll, NULL);

static struct fut_future *make_write_all(void *ud, struct fut_runtime *rt)
{
    (void)ud;
    drained = 0;
    drain_all();
    W.uring = strcmp(fut_runtime_backend(rt), "io_uring") == 0;
    struct drain_later d;
    fut_future_init(&d.base, &drain_vt);
    ASSERT_EQ(fut_spawn(rt, &d, sizeof d, NULL), 0);
    fut_io_write_all_init(&W.w, W.a, W.data, W.len);
    return &W.w.base;
}

static int check_write_all(void *ud, int k)
{
    (void)ud;
    /* What the reader got during the run plus what is still in the
     * socket is exactly what write_all says went out ('done'); a drop
     * midway loses the rest (loses-data), and 'done' says how much. */
    size_t got = drained + drain_all();
    if (W.uring && k != 0 ? got < W.w.done || got > W.w.done + 65536
                          : got != W.w.done)
        return 1;
    if (k == 0)
        return W.w.result == (ssize_t)W.len && W.w.done == W.len ? 0 : 1;
    return W.w.done < W.len ? 0 : 1;
}

START_TEST(drop_write_all_loses_data)
{
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    int small = 4096;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    ASSERT_EQ(fut_io_from_fd(sv[0], &W.a), 0);
    ASSERT_EQ(fut_io_from_fd(sv[1], &W.b), 0);
    W.len = 256 * 1024;
    W.data = malloc(W.len);
    memset(W.data, 'w', W.len);
    struct fut_harness h;
    fut_harness_init(&h, make_write_all, check_write_all, NULL);
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    cfg.slow_poll_ns = -1; /* the drainer's polls are slow on purpose */
    h.cfg = &cfg;
    int r = fut_harness_run(&h);
    ck_assert_msg(r == 0, "%s", h.msg);
    ck_assert(h.pendings >= 2);
    free(W.data);
    fut_io_close(W.a);
    fut_io_close(W.b);
}
END_TEST

/* connect is cancel-safe: dropped while connecting, its socket is closed
 * and nothing leaks (the harness checks allocations). */
static struct {
    struct sockaddr_storage ss;
    socklen_t len;
    struct fut_connect c;
} C;

static struct fut_future *make_connect(void *ud, struct fut_runtime *rt)
{
    (void)ud;
    (void)rt;
    fut_tcp_connect_init(&C.c, (struct sockaddr *)&C.ss, C.len, -1);
    return &C.c.base;
}

static int check_connect(void *ud, int k)
{
    (void)ud;
    if (k == 0) {
        int ok = C.c.result == 0;
        fut_io_close(C.c.conn);
        return ok ? 0 : 1;
    }
    return C.c.io == NULL ? 0 : 1;
}

START_TEST(drop_connect_cancel_safe)
{
    int port;
    struct fut_io *l = listen_any(&port);
    fut_addr_parse("127.0.0.1", port, &C.ss, &C.len);
    struct fut_harness h;
    fut_harness_init(&h, make_connect, check_connect, NULL);
    int r = fut_harness_run(&h);
    ck_assert_msg(r == 0, "%s", h.msg);
    fut_io_close(l);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("net_tcp");
    TCase *tc = fut_test_tcase(s, "echo");
    tcase_add_test(tc, tcp_echo_roundtrips);
    tcase_add_test(tc, tcp_register_once);
    tcase_add_test(tc, tcp_accept_peer_address);
    tc = fut_test_tcase(s, "connect");
    tcase_add_test(tc, tcp_connect_refused_and_timeout);
    tcase_add_test(tc, tcp_options);
    tc = fut_test_tcase(s, "stream");
    tcase_add_test(tc, tcp_peek_shutdown_writev);
    tcase_add_test(tc, tcp_split_halves);
    tc = fut_test_tcase(s, "backoff");
    tcase_add_test(tc, tcp_accept_emfile_injected);
    tcase_add_test(tc, tcp_accept_emfile_real);
    tc = fut_test_tcase(s, "faults");
    tcase_add_test(tc, tcp_faults_read_write);
    tcase_add_test(tc, tcp_faults_setup);
    tcase_add_test(tc, tcp_runtime_emfile);
    tcase_add_test(tc, tcp_echo_survives_failed_connection);
    tc = fut_test_tcase(s, "cancel");
    tcase_add_test(tc, drop_read_cancel_safe);
    tcase_add_test(tc, drop_accept_cancel_safe);
    tcase_add_test(tc, drop_write_all_loses_data);
    tcase_add_test(tc, drop_connect_cancel_safe);
    return fut_test_run(s);
}
