/* SPDX-License-Identifier: MIT */
/* UDP, Unix stream and datagram sockets, pipes, stdin/stdout, signals,
 * and the accept loop and signals as streams (C15). */
#include <signal.h>
#include <sys/un.h>

#include "io_helpers.h"

START_TEST(udp_send_recv)
{
    struct fut_runtime *rt = rt_make(0);
    struct sockaddr_storage ss;
    socklen_t len;
    fut_addr_parse("127.0.0.1", 0, &ss, &len);
    struct fut_io *a, *b;
    ASSERT_EQ(fut_udp_bind((struct sockaddr *)&ss, len, &a), 0);
    ASSERT_EQ(fut_udp_bind((struct sockaddr *)&ss, len, &b), 0);
    struct sockaddr_storage aa, ba;
    socklen_t al, bl;
    ASSERT_EQ(fut_io_local_addr(a, &aa, &al), 0);
    ASSERT_EQ(fut_io_local_addr(b, &ba, &bl), 0);
    /* recv_from waits (nothing yet), then a send_to arrives. */
    char buf[64];
    struct fut_io_recv_from rf;
    fut_io_recv_from_init(&rf, b, buf, sizeof buf, 0);
    struct fut_io_send_to st;
    fut_io_send_to_init(&st, a, "dgram", 5, 0, (struct sockaddr *)&ba, bl);
    ASSERT_EQ(fut_block_on(rt, &st.base), 0);
    ASSERT_EQ(st.result, 5);
    fut_drop(&st.base);
    ASSERT_EQ(fut_block_on(rt, &rf.base), 0);
    ASSERT_EQ(rf.result, 5);
    ASSERT_EQ(memcmp(buf, "dgram", 5), 0);
    ASSERT_EQ(fut_addr_port(&rf.addr), fut_addr_port(&aa));
    fut_drop(&rf.base);
    /* Connected: send / recv, one datagram each. */
    ASSERT_EQ(fut_udp_connect(a, (struct sockaddr *)&ba, bl), 0);
    ASSERT_EQ(fut_udp_connect(b, (struct sockaddr *)&aa, al), 0);
    struct fut_io_write w;
    fut_io_send_init(&w, a, "one", 3, 0);
    ASSERT_EQ(fut_block_on(rt, &w.base), 0);
    ASSERT_EQ(w.result, 3);
    fut_drop(&w.base);
    fut_io_send_init(&w, a, "two!", 4, 0);
    ASSERT_EQ(fut_block_on(rt, &w.base), 0);
    fut_drop(&w.base);
    struct fut_io_read r;
    fut_io_recv_init(&r, b, buf, sizeof buf, 0);
    ASSERT_EQ(fut_block_on(rt, &r.base), 0);
    ASSERT_EQ(r.result, 3); /* datagram boundaries kept */
    fut_drop(&r.base);
    fut_io_recv_init(&r, b, buf, sizeof buf, 0);
    ASSERT_EQ(fut_block_on(rt, &r.base), 0);
    ASSERT_EQ(r.result, 4);
    fut_drop(&r.base);
    fut_io_close(a);
    fut_io_close(b);
    fut_runtime_free(rt);
}
END_TEST

START_TEST(unix_stream_and_datagram)
{
    struct fut_runtime *rt = rt_make(0);
    char path[64];
    snprintf(path, sizeof path, "/tmp/fut-unix-%d", (int)getpid());
    unlink(path);
    struct fut_io *l;
    ASSERT_EQ(fut_unix_listen(path, 16, &l), 0);
    struct fut_connect c;
    fut_unix_connect_init(&c, path, fut_now_ns() + 1000 * MS);
    ASSERT_EQ(fut_block_on(rt, &c.base), 0);
    ASSERT_EQ(c.result, 0);
    struct fut_io *cl = c.conn;
    fut_drop(&c.base);
    struct fut_accept a;
    fut_accept_init(&a, l);
    ASSERT_EQ(fut_block_on(rt, &a.base), 0);
    ASSERT_EQ(a.result, 0);
    struct fut_io *sv = a.conn;
    fut_drop(&a.base);
    char buf[16];
    ASSERT_EQ(io_block_write_all(rt, cl, "unix", 4), 4);
    ASSERT_EQ(io_block_read(rt, sv, buf, sizeof buf, 0), 4);
    fut_io_close(cl);
    ASSERT_EQ(io_block_read(rt, sv, buf, sizeof buf, 0), 0);
    fut_io_close(sv);
    fut_io_close(l);
    unlink(path);
    /* A path too long for sun_path. */
    char longp[200];
    memset(longp, 'x', sizeof longp - 1);
    longp[sizeof longp - 1] = 0;
    fut_unix_connect_init(&c, longp, -1);
    ASSERT_EQ(fut_block_on(rt, &c.base), 0);
    ASSERT_EQ(c.result, FUT_EINVAL);
    fut_drop(&c.base);
    ASSERT_EQ(fut_unix_listen(longp, 1, &l), FUT_EINVAL);
    /* Datagrams between a bound socket and an unbound one. */
    struct fut_io *d1, *d2;
    ASSERT_EQ(fut_unix_datagram_bind(path, &d1), 0);
    ASSERT_EQ(fut_unix_datagram_bind(NULL, &d2), 0);
    struct sockaddr_un sun;
    memset(&sun, 0, sizeof sun);
    sun.sun_family = AF_UNIX;
    strcpy(sun.sun_path, path);
    struct fut_io_send_to st;
    fut_io_send_to_init(&st, d2, "dg", 2, 0, (struct sockaddr *)&sun,
                        sizeof sun);
    ASSERT_EQ(fut_block_on(rt, &st.base), 0);
    ASSERT_EQ(st.result, 2);
    fut_drop(&st.base);
    struct fut_io_recv_from rf;
    fut_io_recv_from_init(&rf, d1, buf, sizeof buf, 0);
    ASSERT_EQ(fut_block_on(rt, &rf.base), 0);
    ASSERT_EQ(rf.result, 2);
    fut_drop(&rf.base);
    fut_io_close(d1);
    fut_io_close(d2);
    unlink(path);
    /* socketpair of datagrams. */
    ASSERT_EQ(fut_unix_pair(SOCK_DGRAM, &d1, &d2), 0);
    ASSERT_EQ(io_block_write_all(rt, d1, "p", 1), 1);
    ASSERT_EQ(io_block_read(rt, d2, buf, sizeof buf, 0), 1);
    fut_io_close(d1);
    fut_io_close(d2);
    ASSERT_EQ(fut_unix_pair(SOCK_SEQPACKET, &d1, &d2), FUT_EINVAL);
    fut_runtime_free(rt);
}
END_TEST

START_TEST(pipes)
{
    struct fut_runtime *rt = rt_make(0);
    struct fut_io *rd, *wr;
    ASSERT_EQ(fut_pipe_open(&rd, &wr), 0);
    /* Fill the pipe beyond its buffer: write_all waits for the reader. */
    enum { N = 1 << 20 };
    char *big = malloc(N), *got = malloc(N);
    for (int i = 0; i < N; i++)
        big[i] = (char)(i * 13);
    struct fut_io_write_all w;
    fut_io_write_all_init(&w, wr, big, N);
    struct fut_join j;
    ASSERT_EQ(fut_spawn(rt, &w, sizeof w, &j), 0);
    size_t n = 0;
    while (n < N) {
        ssize_t r = io_block_read(rt, rd, got + n, N - n, 0);
        ck_assert(r > 0);
        n += (size_t)r;
    }
    ASSERT_EQ(fut_block_on(rt, &j.base), 0);
    ASSERT_EQ(((struct fut_io_write_all *)fut_join_output(&j))->result, N);
    fut_drop(&j.base);
    ASSERT_EQ(memcmp(big, got, N), 0);
    fut_io_close(wr);
    ASSERT_EQ(io_block_read(rt, rd, got, 16, 0), 0); /* EOF */
    fut_io_close(rd);
    free(big);
    free(got);
    fut_runtime_free(rt);
}
END_TEST

/* stdin and stdout as async streams: pipes put on fd 0 and 1. */
START_TEST(stdio_streams)
{
    struct fut_runtime *rt = rt_make(0);
    int in[2], out[2];
    ASSERT_EQ(pipe(in), 0);
    ASSERT_EQ(pipe(out), 0);
    int save0 = dup(0), save1 = dup(1);
    dup2(in[0], 0);
    dup2(out[1], 1);
    struct fut_io *si, *so;
    ASSERT_EQ(fut_stdin_open(&si), 0);
    ASSERT_EQ(fut_stdout_open(&so), 0);
    ck_assert(fcntl(0, F_GETFL) & O_NONBLOCK);
    ck_assert_int_eq(write(in[1], "typed", 5), 5);
    char buf[16];
    ASSERT_EQ(io_block_read(rt, si, buf, sizeof buf, 0), 5);
    ASSERT_EQ(io_block_write_all(rt, so, "shown", 5), 5);
    ck_assert_int_eq(read(out[0], buf, sizeof buf), 5);
    ASSERT_EQ(memcmp(buf, "shown", 5), 0);
    fut_io_close(si);
    fut_io_close(so);
    ck_assert(!(fcntl(0, F_GETFL) & O_NONBLOCK)); /* restored */
    ck_assert(fcntl(0, F_GETFD) >= 0);            /* not closed */
    /* A regular file on stdin cannot be waited on. */
    char path[] = "/tmp/fut-stdin-XXXXXX";
    int f = mkstemp(path);
    dup2(f, 0);
    ASSERT_EQ(fut_stdin_open(&si), -EPERM);
    close(f);
    unlink(path);
    dup2(save0, 0);
    dup2(save1, 1);
    close(save0);
    close(save1);
    close(in[0]);
    close(in[1]);
    close(out[0]);
    close(out[1]);
    fut_runtime_free(rt);
}
END_TEST

START_TEST(signals)
{
    int sigs[2] = {SIGUSR1, SIGUSR2};
    struct fut_io *sig;
    ASSERT_EQ(fut_signal_open(sigs, 2, &sig), 0);
    struct fut_runtime *rt = rt_make(0);
    kill(getpid(), SIGUSR2);
    struct fut_signal_recv r;
    fut_signal_recv_init(&r, sig);
    ASSERT_EQ(fut_block_on(rt, &r.base), 0);
    ASSERT_EQ(r.result, 0);
    ASSERT_EQ(r.signo, SIGUSR2);
    fut_drop(&r.base);
    /* As a stream: two signals, two items. */
    struct fut_signal_stream s;
    fut_signal_stream_init(&s, sig);
    kill(getpid(), SIGUSR1);
    struct fut_stream_take t;
    fut_stream_take_init(&t, &s.base, 1);
    struct fut_stream_collect c;
    fut_stream_collect_init(&c, &t.base);
    ASSERT_EQ(fut_block_on(rt, &c.base), 0);
    ASSERT_EQ(c.result, 0);
    ASSERT_EQ(c.len, 1);
    ASSERT_EQ(((int *)c.items)[0], SIGUSR1);
    fut_stream_collect_release(&c);
    fut_drop(&c.base);
    int bad = 12345;
    ASSERT_EQ(fut_signal_open(&bad, 1, &sig), FUT_EINVAL);
    fut_io_close(s.rx.io);
    fut_runtime_free(rt);
}
END_TEST

/* The accept loop as a stream: N connections, N items, in a fold. */
static intptr_t close_conn(intptr_t acc, const void *item, void *ud)
{
    (void)ud;
    fut_io_close(*(struct fut_io *const *)item);
    return acc + 1;
}

START_TEST(incoming_stream)
{
    struct fut_runtime *rt = rt_make(0);
    int port;
    struct fut_io *l = listen_any(&port);
    struct sockaddr_storage ss;
    socklen_t len;
    fut_addr_parse("127.0.0.1", port, &ss, &len);
    int fds[5];
    for (int i = 0; i < 5; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
        ASSERT_EQ(connect(fds[i], (struct sockaddr *)&ss, len), 0);
    }
    struct fut_incoming inc;
    fut_incoming_init(&inc, l);
    struct fut_stream_take t;
    fut_stream_take_init(&t, &inc.base, 5);
    struct fut_stream_fold f;
    fut_stream_fold_init(&f, &t.base, 0, close_conn, NULL, NULL);
    ASSERT_EQ(fut_block_on(rt, &f.base), 0);
    ASSERT_EQ(f.acc, 5);
    fut_drop(&f.base);
    for (int i = 0; i < 5; i++)
        close(fds[i]);
    fut_io_close(l);
    fut_runtime_free(rt);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("net_misc");
    TCase *tc = fut_test_tcase(s, "udp");
    tcase_add_test(tc, udp_send_recv);
    tc = fut_test_tcase(s, "unix");
    tcase_add_test(tc, unix_stream_and_datagram);
    tc = fut_test_tcase(s, "pipe");
    tcase_add_test(tc, pipes);
    tcase_add_test(tc, stdio_streams);
    tc = fut_test_tcase(s, "signal");
    tcase_add_test(tc, signals);
    tcase_add_test(tc, incoming_stream);
    return fut_test_run(s);
}
