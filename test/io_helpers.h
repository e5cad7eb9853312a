/* SPDX-License-Identifier: MIT */
/* Helpers shared by the io_*, time_* and net_* tests. */
#ifndef FUT_TEST_IO_HELPERS_H
#define FUT_TEST_IO_HELPERS_H

#include <fcntl.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

#define MS (1000LL * 1000LL)

/* A runtime with the driver; 'paused' = start_paused. */
static inline struct fut_runtime *rt_make(int paused)
{
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    cfg.start_paused = paused;
    if (fut_test_rt_is_mt() && !paused) {
        cfg.flavor = FUT_RT_MULTI_THREAD;
        cfg.workers = 2;
    }
    struct fut_runtime *rt = NULL;
    int r = fut_runtime_new(&cfg, &rt);
    ck_assert_msg(r == 0, "fut_runtime_new: %s", fut_strerror(r));
    return rt;
}

/* One read (peek: fut_io_peek) or one write_all of 'io', blocked on in
 * 'rt'; returns the future's result. */
static inline ssize_t io_block_read(struct fut_runtime *rt, struct fut_io *io,
                                    void *buf, size_t n, int peek)
{
    struct fut_io_read r;
    if (peek)
        fut_io_peek_init(&r, io, buf, n);
    else
        fut_io_read_init(&r, io, buf, n);
    ASSERT_EQ(fut_block_on(rt, &r.base), 0);
    fut_drop(&r.base);
    return r.result;
}

static inline ssize_t io_block_write_all(struct fut_runtime *rt,
                                         struct fut_io *io, const void *buf,
                                         size_t n)
{
    struct fut_io_write_all w;
    fut_io_write_all_init(&w, io, buf, n);
    ASSERT_EQ(fut_block_on(rt, &w.base), 0);
    fut_drop(&w.base);
    return w.result;
}

/* A waker that only counts its wakes (any thread). */
struct count_waker {
    atomic_long wakes;
};
static struct fut_waker cw_clone(const void *d);
static void cw_wake(const void *d)
{
    atomic_fetch_add(&((struct count_waker *)d)->wakes, 1);
}
static void cw_drop(const void *d)
{
    (void)d;
}
static const struct fut_waker_vtable cw_vt = {cw_clone, cw_wake, cw_wake,
                                              cw_drop};
static struct fut_waker cw_clone(const void *d)
{
    struct fut_waker w = {d, &cw_vt};
    return w;
}
static inline struct fut_context cw_context(struct count_waker *c)
{
    struct fut_context cx;
    struct fut_waker w = {c, &cw_vt};
    fut_context_init(&cx, w);
    return cx;
}

/* A future that runs fn(ud) in its first poll and is READY: to run test
 * code on the runtime thread (where the driver is reachable). */
struct run_fn {
    struct fut_future base;
    void (*fn)(void *ud);
    void *ud;
};
static int run_fn_poll(struct fut_future *f, struct fut_context *cx)
{
    struct run_fn *r = (struct run_fn *)f;
    (void)cx;
    r->fn(r->ud);
    return FUT_READY;
}
static const struct fut_future_vtable run_fn_vt = {run_fn_poll, NULL,
                                                   "run_fn", NULL};
static inline void run_on(struct fut_runtime *rt, void (*fn)(void *),
                          void *ud)
{
    struct run_fn r;
    fut_future_init(&r.base, &run_fn_vt);
    r.fn = fn;
    r.ud = ud;
    ASSERT_EQ(fut_block_on(rt, &r.base), 0);
}

/* A loopback TCP listener on a free port; the port in '*port'. */
static inline struct fut_io *listen_any(int *port)
{
    struct sockaddr_storage ss;
    socklen_t len;
    ASSERT_EQ(fut_addr_parse("127.0.0.1", 0, &ss, &len), 0);
    struct fut_io *l = NULL;
    int r = fut_tcp_listen((struct sockaddr *)&ss, len, 4096, &l);
    ck_assert_msg(r == 0, "listen: %s", fut_strerror(r));
    ASSERT_EQ(fut_io_local_addr(l, &ss, &len), 0);
    *port = fut_addr_port(&ss);
    return l;
}

/* A blocking TCP socket connected to 127.0.0.1:'port'. */
static inline int connect_loopback(int port)
{
    struct sockaddr_storage ss;
    socklen_t len;
    ASSERT_EQ(fut_addr_parse("127.0.0.1", port, &ss, &len), 0);
    int c = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(c, 0);
    ASSERT_EQ(connect(c, (struct sockaddr *)&ss, len), 0);
    return c;
}

/* The local port of socket 'fd'. */
static inline int local_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    ASSERT_EQ(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
    return fut_addr_port(&ss);
}

/* User + system CPU of this process from 'a' to 'b' (getrusage), in us. */
static inline long rusage_cpu_us(const struct rusage *a,
                                 const struct rusage *b)
{
    return (b->ru_utime.tv_sec - a->ru_utime.tv_sec) * 1000000 +
           (b->ru_utime.tv_usec - a->ru_utime.tv_usec) +
           (b->ru_stime.tv_sec - a->ru_stime.tv_sec) * 1000000 +
           (b->ru_stime.tv_usec - a->ru_stime.tv_usec);
}

/* Lowers RLIMIT_NOFILE to 256 (the old limit in '*old') and uses up
 * every fd left (dups of fd 0 into 'fds', 256 of room); returns how many.
 * A real EMFILE for whatever opens an fd next. */
static inline int use_up_fds(int fds[256], struct rlimit *old)
{
    getrlimit(RLIMIT_NOFILE, old);
    struct rlimit lim = *old;
    lim.rlim_cur = 256;
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lim), 0);
    int n = 0;
    for (int d; n < 256 && (d = dup(0)) >= 0;)
        fds[n++] = d;
    ck_assert(n > 0);
    return n;
}

/* A task that sleeps 80 ms, then closes 'n' fds of 'fds' (gives back
 * what use_up_fds took). */
struct free_later {
    struct fut_future base;
    struct fut_sleep s;
    int *fds, n;
};

static inline int free_later_poll(struct fut_future *f,
                                  struct fut_context *cx)
{
    struct free_later *fl = (struct free_later *)f;
    FUT_BEGIN(f);
    fut_sleep_init(&fl->s, 80 * MS);
    FUT_AWAIT(f, &fl->s);
    for (int i = 0; i < fl->n; i++)
        close(fl->fds[i]);
    FUT_END(f);
}

static inline void free_later_init(struct free_later *fl, int *fds, int n)
{
    static const struct fut_future_vtable vt = {
        free_later_poll, fut_async_drop, "free_later", 0};
    fut_future_init(&fl->base, &vt);
    fl->fds = fds;
    fl->n = n;
}

/* Open fds of this process. */
static inline int count_fds(void)
{
    int n = 0;
    for (int fd = 0; fd < 4096; fd++)
        if (fcntl(fd, F_GETFD) >= 0)
            n++;
    return n;
}

static inline int64_t wall_ms(void)
{
    return fut_now_ns() / MS;
}

#endif /* FUT_TEST_IO_HELPERS_H */
