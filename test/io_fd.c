/* SPDX-License-Identifier: MIT */
/* Foreign fds (include/fut/fd.h): readiness of fds fut does not own, on
 * both backends and both flavors - readable after a write, cleared
 * readiness waits for new data, clearing only what poll(2) says would
 * block (clear_if_blocked), writable, hang-up and error reported, a
 * deregistration wakes its waiter with FUT_ECANCELED and leaves the fd
 * open with its flags, a dropped wait loses nothing, a wake from another
 * thread, the fiber wrapper, and the errors of a bad registration. */
#include <errno.h>
#include <pthread.h>
#include <sys/socket.h>

#include "io_helpers.h"

/* A non-blocking socketpair, fut's only through registration. */
static void raw_pair(int sv[2])
{
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
}

/* --------------------------------------------- calls on the runtime */

struct reg_arg {
    int fd;
    struct fut_fd *h;
};

static intptr_t do_register(void *p)
{
    struct reg_arg *a = p;
    return fut_fd_register(a->fd, &a->h);
}

/* fut_fd_register on rt's thread (it needs a runtime there). */
static int reg_on(struct fut_runtime *rt, int fd, struct fut_fd **h)
{
    struct reg_arg a = {fd, NULL};
    struct fut_lazy l;
    fut_lazy_init(&l, do_register, &a);
    ASSERT_EQ(fut_block_on(rt, &l.base), 0);
    fut_drop(&l.base);
    *h = a.h;
    return (int)l.value;
}

/* One wait for 'interest' under a timeout of 'ms': the ready bits (with
 * '*tick'), FUT_ETIMEDOUT, or the future's error. The future is dropped
 * (a timed-out one where it stood). */
static int wait_on(struct fut_runtime *rt, struct fut_fd *h,
                   unsigned interest, int ms, uint32_t *tick)
{
    struct fut_fd_ready f;
    struct fut_timeout to;
    fut_fd_ready_init(&f, h, interest);
    fut_timeout_init(&to, &f.base, fut_now_ns() + ms * MS);
    ASSERT_EQ(fut_block_on(rt, &to.base), 0);
    int r = to.result == 0 ? f.result : to.result;
    if (tick)
        *tick = f.tick;
    fut_drop(&to.base);
    return r;
}

/* Reads everything there is; the count (0 at end of stream). */
static long drain(int fd)
{
    char buf[4096];
    long n = 0, k;
    while ((k = read(fd, buf, sizeof buf)) > 0)
        n += k;
    ck_assert_msg(k == 0 || errno == EAGAIN, "read: %s", strerror(errno));
    return n;
}

/* A thread that sleeps 'ms' and then writes one byte to 'fd', or (fd <
 * 0) deregisters 'h'. */
struct later {
    pthread_t t;
    int fd, ms;
    struct fut_fd *h;
};

static void *later_main(void *p)
{
    struct later *l = p;
    struct timespec ts = {0, l->ms * MS};
    nanosleep(&ts, NULL);
    if (l->fd >= 0)
        ck_assert_int_eq(write(l->fd, "x", 1), 1);
    else
        fut_fd_deregister(l->h);
    return NULL;
}

static void later_start(struct later *l, int fd, int ms, struct fut_fd *h)
{
    l->fd = fd;
    l->ms = ms;
    l->h = h;
    ASSERT_EQ(pthread_create(&l->t, NULL, later_main, l), 0);
}

/* Writes to 'fd' until the kernel buffer is full (EAGAIN). */
static void fill(int fd)
{
    static char block[65536];
    while (write(fd, block, sizeof block) > 0)
        ;
    ASSERT_EQ(errno, EAGAIN);
}

/* What most cases start with: a runtime, a socketpair, sv[0] registered
 * as 'h'. fx_end deregisters 'h' (unless NULL) and closes what is open. */
struct fx {
    struct fut_runtime *rt;
    int sv[2];
    struct fut_fd *h;
};

static void fx_begin(struct fx *x)
{
    x->rt = rt_make(0);
    raw_pair(x->sv);
    ASSERT_EQ(reg_on(x->rt, x->sv[0], &x->h), 0);
}

static void fx_end(struct fx *x)
{
    fut_fd_deregister(x->h);
    for (int i = 0; i < 2; i++)
        if (x->sv[i] >= 0)
            close(x->sv[i]);
    fut_runtime_free(x->rt);
}

/* ------------------------------------------------------------ cases */

/* Readable after a write (before the wait, and while it waits: a write
 * from another thread wakes it); readiness is cached until cleared. */
START_TEST(readable_after_write)
{
    struct fx x;
    fx_begin(&x);
    ASSERT_EQ(fut_fd_fileno(x.h), x.sv[0]);
    ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_READABLE, 100, NULL), FUT_ETIMEDOUT);
    ck_assert_int_eq(write(x.sv[1], "a", 1), 1);
    uint32_t tick;
    ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_READABLE, 2000, &tick),
              FUT_FD_READABLE);
    /* Not cleared: a second wait returns at once, data or not. */
    ASSERT_EQ(drain(x.sv[0]), 1);
    ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_READABLE, 2000, NULL),
              FUT_FD_READABLE);
    fut_fd_clear_ready(x.h, FUT_FD_READABLE, tick);
    /* While waiting: the write of another thread wakes it. */
    struct later l;
    later_start(&l, x.sv[1], 30, NULL);
    ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_READABLE, 2000, NULL),
              FUT_FD_READABLE);
    pthread_join(l.t, NULL);
    fx_end(&x);
}
END_TEST

/* clear_ready after EAGAIN: the next wait sleeps until new data, and a
 * stale tick does not clear a newer event. */
START_TEST(clear_then_wait)
{
    struct fx x;
    fx_begin(&x);
    for (int i = 0; i < 20; i++) {
        ck_assert_int_eq(write(x.sv[1], "abc", 3), 3);
        uint32_t tick;
        ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_READABLE, 2000, &tick),
                  FUT_FD_READABLE);
        ASSERT_EQ(drain(x.sv[0]), 3); /* ends with EAGAIN */
        fut_fd_clear_ready(x.h, FUT_FD_READABLE, tick);
        ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_READABLE, 30, NULL),
                  FUT_ETIMEDOUT);
    }
    /* An event after the reported one survives a clear with the old
     * tick (the data that came after the caller's EAGAIN). */
    ck_assert_int_eq(write(x.sv[1], "d", 1), 1);
    uint32_t old;
    ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_READABLE, 2000, &old),
              FUT_FD_READABLE);
    ASSERT_EQ(drain(x.sv[0]), 1);
    ck_assert_int_eq(write(x.sv[1], "e", 1), 1);
    struct fut_sleep sl; /* the driver turns and dispatches the edge */
    fut_sleep_init(&sl, 30 * MS);
    ASSERT_EQ(fut_block_on(x.rt, &sl.base), 0);
    fut_drop(&sl.base);
    fut_fd_clear_ready(x.h, FUT_FD_READABLE, old);
    ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_READABLE, 2000, NULL),
              FUT_FD_READABLE);
    ASSERT_EQ(drain(x.sv[0]), 1);
    fx_end(&x);
}
END_TEST

/* clear_if_blocked: a direction with data (or room) keeps its readiness,
 * one that would block loses it - as a library that reads once and stops
 * before EAGAIN needs; a hang-up counts as ready. */
START_TEST(clear_if_blocked)
{
    struct fx x;
    fx_begin(&x);
    const unsigned both = FUT_FD_READABLE | FUT_FD_WRITABLE;
    for (int i = 0; i < 10; i++) {
        ck_assert_int_eq(write(x.sv[1], "abcd", 4), 4);
        uint32_t tick;
        ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_READABLE, 2000, &tick),
                  FUT_FD_READABLE);
        char c;
        ck_assert_int_eq(read(x.sv[0], &c, 1), 1); /* stops early */
        ASSERT_EQ(fut_fd_clear_if_blocked(x.h, both, tick), 0);
        ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_READABLE, 2000, &tick),
                  FUT_FD_READABLE); /* three bytes wait: not cleared */
        ASSERT_EQ(drain(x.sv[0]), 3);
        ASSERT_EQ(fut_fd_clear_if_blocked(x.h, both, tick), FUT_FD_READABLE);
        ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_READABLE, 30, NULL),
                  FUT_ETIMEDOUT);
    }
    /* Writable: kept while there is room, cleared once the socket is
     * full. */
    uint32_t tick;
    ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_WRITABLE, 2000, &tick),
              FUT_FD_WRITABLE);
    ASSERT_EQ(fut_fd_clear_if_blocked(x.h, FUT_FD_WRITABLE, tick), 0);
    fill(x.sv[0]);
    ASSERT_EQ(fut_fd_clear_if_blocked(x.h, FUT_FD_WRITABLE, tick),
              FUT_FD_WRITABLE);
    ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_WRITABLE, 30, NULL), FUT_ETIMEDOUT);
    ASSERT_EQ(fut_fd_clear_if_blocked(x.h, 0, tick), 0);
    /* The peer's close: readable (end of stream) is never cleared. */
    close(x.sv[1]);
    x.sv[1] = -1;
    int ev = wait_on(x.rt, x.h, FUT_FD_READABLE, 2000, &tick);
    ck_assert_int_gt(ev, 0);
    ASSERT_EQ(fut_fd_clear_if_blocked(x.h, FUT_FD_READABLE, tick), 0);
    ASSERT_EQ(fut_fd_clear_if_blocked(NULL, FUT_FD_READABLE, tick),
              FUT_EINVAL);
    fx_end(&x);
}
END_TEST

/* Writable at once; after a write that filled the socket (EAGAIN) and a
 * clear, a wait sleeps until the peer reads. */
START_TEST(writable)
{
    struct fx x;
    fx_begin(&x);
    uint32_t tick;
    ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_WRITABLE, 2000, &tick),
              FUT_FD_WRITABLE);
    fill(x.sv[0]);
    fut_fd_clear_ready(x.h, FUT_FD_WRITABLE, tick);
    ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_WRITABLE, 50, NULL), FUT_ETIMEDOUT);
    ck_assert(drain(x.sv[1]) > 0);
    ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_WRITABLE, 2000, NULL),
              FUT_FD_WRITABLE);
    fx_end(&x);
}
END_TEST

/* The peer closed: a reader gets READABLE|RDHUP, a writer WRITABLE|HUP,
 * even after a clear (never cleared); a pipe writer waiting on a full
 * pipe is woken with ERROR when the reader closes. */
START_TEST(hup_and_error)
{
    struct fx x;
    fx_begin(&x);
    uint32_t tick;
    ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_READABLE, 50, NULL), FUT_ETIMEDOUT);
    close(x.sv[1]);
    x.sv[1] = -1;
    ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_READABLE, 2000, &tick),
              FUT_FD_READABLE | FUT_FD_RDHUP);
    ASSERT_EQ(drain(x.sv[0]), 0);
    fut_fd_clear_ready(x.h, FUT_FD_READABLE, tick);
    ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_READABLE, 2000, NULL),
              FUT_FD_READABLE | FUT_FD_RDHUP);
    ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_WRITABLE, 2000, NULL),
              FUT_FD_WRITABLE | FUT_FD_HUP);
    fut_fd_deregister(x.h);

    int p[2];
    ASSERT_EQ(pipe2(p, O_NONBLOCK), 0);
    ASSERT_EQ(reg_on(x.rt, p[1], &x.h), 0);
    ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_WRITABLE, 2000, &tick),
              FUT_FD_WRITABLE);
    fill(p[1]);
    fut_fd_clear_ready(x.h, FUT_FD_WRITABLE, tick);
    ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_WRITABLE, 30, NULL), FUT_ETIMEDOUT);
    close(p[0]); /* the reader goes: the writer's wait wakes */
    int r = wait_on(x.rt, x.h, FUT_FD_WRITABLE, 2000, NULL);
    ck_assert_msg(r > 0 && (r & FUT_FD_ERROR) && (r & FUT_FD_WRITABLE),
                  "pipe writer: %d", r);
    fut_fd_deregister(x.h);
    x.h = NULL;
    close(p[1]); /* after the deregistration, as fd.h asks */
    fx_end(&x);
}
END_TEST

/* A task waiting in each direction; the deregistration wakes both with
 * FUT_ECANCELED (from the runtime's thread, and - multi-thread - from a
 * thread of no runtime while the waiter parks on a worker). */
struct waiter {
    struct fut_future base;
    struct fut_fd *h;
    unsigned interest;
    struct fut_fd_ready f;
    int result;
};

static int waiter_poll(struct fut_future *fb, struct fut_context *cx)
{
    struct waiter *w = (struct waiter *)fb;
    FUT_BEGIN(fb);
    FUT_AWAIT(fb, &w->f);
    w->result = w->f.result;
    FUT_END(fb);
}
FUT_ASYNC_VTABLE(waiter_vt, "fd_waiter", waiter_poll, NULL);

static void spawn_waiter(struct fut_runtime *rt, struct fut_fd *h,
                         unsigned interest, struct fut_join *j)
{
    struct waiter w;
    memset(&w, 0, sizeof w);
    fut_future_init(&w.base, &waiter_vt);
    w.h = h;
    w.interest = interest;
    /* Made here, before the task runs: a deregistration that comes
     * before its first poll finds it holding the handle. */
    fut_fd_ready_init(&w.f, h, interest);
    ASSERT_EQ(fut_spawn(rt, &w, sizeof w, j), 0);
}

static int join_result(struct fut_runtime *rt, struct fut_join *j)
{
    ASSERT_EQ(fut_block_on(rt, &j->base), 0);
    int r = ((struct waiter *)fut_join_output(j))->result;
    fut_drop(&j->base);
    return r;
}

START_TEST(deregister_wakes)
{
    struct fx x;
    fx_begin(&x);
    for (int round = 0; round < 2; round++) {
        if (round)
            ASSERT_EQ(reg_on(x.rt, x.sv[0], &x.h), 0);
        uint32_t tick;
        /* Fill the socket so that a writer waits too. */
        ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_WRITABLE, 2000, &tick),
                  FUT_FD_WRITABLE);
        fill(x.sv[0]);
        fut_fd_clear_ready(x.h, FUT_FD_WRITABLE, tick);
        struct fut_join jr, jw;
        spawn_waiter(x.rt, x.h, FUT_FD_READABLE, &jr);
        spawn_waiter(x.rt, x.h, FUT_FD_WRITABLE, &jw);
        fut_test_run_pending(x.rt); /* both park */
        struct timespec ts = {0, 20 * MS};
        nanosleep(&ts, NULL);
        ck_assert(!fut_is_ready(&jr.base));
        if (round == 1 && fut_test_rt_is_mt()) {
            struct later l; /* from a thread of no runtime */
            later_start(&l, -1, 10, x.h);
            pthread_join(l.t, NULL);
        } else {
            fut_fd_deregister(x.h);
        }
        x.h = NULL;
        ASSERT_EQ(join_result(x.rt, &jr), FUT_ECANCELED);
        ASSERT_EQ(join_result(x.rt, &jw), FUT_ECANCELED);
        ck_assert(drain(x.sv[1]) > 0);
    }
    fx_end(&x);
}
END_TEST

/* After the deregistration the fd is open, its flags as they were (a
 * blocking fd stays blocking), it still works, and it can be registered
 * again. */
START_TEST(fd_left_alone)
{
    struct fx x;
    x.rt = rt_make(0);
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, x.sv), 0); /* blocking */
    ASSERT_EQ(fcntl(x.sv[0], F_SETFD, FD_CLOEXEC), 0);
    int fl = fcntl(x.sv[0], F_GETFL), fdfl = fcntl(x.sv[0], F_GETFD);
    ASSERT_EQ(reg_on(x.rt, x.sv[0], &x.h), 0);
    ASSERT_EQ(fcntl(x.sv[0], F_GETFL), fl);
    ck_assert_int_eq(write(x.sv[1], "z", 1), 1);
    ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_READABLE, 2000, NULL),
              FUT_FD_READABLE);
    fut_fd_deregister(x.h);
    fut_test_run_pending(x.rt); /* the driver's turn frees the record */
    ASSERT_EQ(fcntl(x.sv[0], F_GETFL), fl);
    ASSERT_EQ(fcntl(x.sv[0], F_GETFD), fdfl);
    char c;
    ASSERT_EQ(read(x.sv[0], &c, 1), 1); /* fut read nothing */
    ASSERT_EQ(c, 'z');
    ck_assert_int_eq(write(x.sv[0], "y", 1), 1);
    ASSERT_EQ(read(x.sv[1], &c, 1), 1);
    /* Registered again: the old watch is gone (no -EEXIST). */
    ASSERT_EQ(reg_on(x.rt, x.sv[0], &x.h), 0);
    ck_assert_int_eq(write(x.sv[1], "w", 1), 1);
    ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_READABLE, 2000, NULL),
              FUT_FD_READABLE);
    ASSERT_EQ(read(x.sv[0], &c, 1), 1);
    fx_end(&x);
}
END_TEST

/* Dropping a pending wait only gives the slot back: the next wait (by
 * another task too) gets the readiness that came meanwhile. */
START_TEST(drop_then_wait)
{
    struct fx x;
    fx_begin(&x);
    for (int i = 0; i < 10; i++) {
        ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_READABLE, 10, NULL),
                  FUT_ETIMEDOUT);
        /* A dropped future that never ran. */
        struct fut_fd_ready f;
        fut_fd_ready_init(&f, x.h, FUT_FD_READABLE);
        fut_drop(&f.base);
        ck_assert_int_eq(write(x.sv[1], "q", 1), 1);
        fut_test_run_pending(x.rt); /* the event lands with no waiter */
        struct fut_join j;
        spawn_waiter(x.rt, x.h, FUT_FD_READABLE, &j);
        ASSERT_EQ(join_result(x.rt, &j), FUT_FD_READABLE);
        uint32_t tick;
        ASSERT_EQ(wait_on(x.rt, x.h, FUT_FD_READABLE, 2000, &tick),
                  FUT_FD_READABLE);
        ASSERT_EQ(drain(x.sv[0]), 1);
        fut_fd_clear_ready(x.h, FUT_FD_READABLE, tick);
    }
    fx_end(&x);
}
END_TEST

/* Release builds (debug builds abort, test/api_misuse.c): the fd closed
 * before its deregistration and its number reused by a new registered
 * fd - the deregistration wakes its waiter and leaves the new fd's
 * registration alone (an EPOLL_CTL_DEL by number would remove it). */
START_TEST(closed_before_deregister)
{
#ifndef FUT_DEBUG
    struct fx x;
    fx_begin(&x);
    struct fut_join j;
    spawn_waiter(x.rt, x.h, FUT_FD_READABLE, &j);
    fut_test_run_pending(x.rt);
    int old = x.sv[0];
    close(old);
    int sv2[2];
    raw_pair(sv2);
    ASSERT_EQ(sv2[0], old); /* the lowest free number: reused */
    struct fut_fd *h2;
    ASSERT_EQ(reg_on(x.rt, sv2[0], &h2), 0);
    fut_fd_deregister(x.h);
    x.h = NULL;
    ASSERT_EQ(join_result(x.rt, &j), FUT_ECANCELED);
    ck_assert_int_eq(write(sv2[1], "n", 1), 1);
    ASSERT_EQ(wait_on(x.rt, h2, FUT_FD_READABLE, 2000, NULL),
              FUT_FD_READABLE);
    fut_fd_deregister(h2);
    x.sv[0] = sv2[0];
    close(sv2[1]);
    fx_end(&x);
#endif
}
END_TEST

/* A fiber reads until the peer closes: wait, read to EAGAIN, clear. */
struct fiber_arg {
    int fd;
    long got;
};

static intptr_t reader_fiber(void *p)
{
    struct fiber_arg *a = p;
    struct fut_fd *h;
    int r = fut_fd_register(a->fd, &h);
    if (r < 0)
        return r;
    for (;;) {
        uint32_t tick;
        int ev = fut_fd_wait(h, FUT_FD_READABLE, &tick);
        if (ev < 0) {
            r = ev;
            break;
        }
        char buf[64];
        ssize_t n;
        while ((n = read(a->fd, buf, sizeof buf)) > 0)
            a->got += n;
        if (n == 0)
            break;
        if (errno != EAGAIN) {
            r = -errno;
            break;
        }
        fut_fd_clear_ready(h, FUT_FD_READABLE, tick);
    }
    fut_fd_deregister(h);
    return r;
}

static void *writer_main(void *p)
{
    int fd = *(int *)p;
    for (int i = 0; i < 50; i++) {
        ck_assert_int_eq(write(fd, "0123456789", 10), 10);
        struct timespec ts = {0, 2 * MS};
        nanosleep(&ts, NULL);
    }
    close(fd);
    return NULL;
}

START_TEST(fiber_wait)
{
    struct fut_runtime *rt = rt_make(0);
    int sv[2];
    raw_pair(sv);
    struct fiber_arg a = {sv[0], 0};
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, writer_main, &sv[1]), 0);
    intptr_t v = -1;
    ASSERT_EQ(fut_fiber_run(rt, reader_fiber, &a, NULL, &v), 0);
    pthread_join(t, NULL);
    ASSERT_EQ(v, 0);
    ASSERT_EQ(a.got, 500);
    /* Outside a fiber the wrapper refuses (release builds; debug builds
     * abort: test/api_misuse.c). */
    close(sv[0]);
    fut_runtime_free(rt);
}
END_TEST

/* Bad registrations: an fd that is not open, a closed one, no runtime
 * on this thread, a regular file (-EPERM on both backends), no
 * interest. */
START_TEST(bad_register)
{
    struct fut_runtime *rt = rt_make(0);
    struct fut_fd *h = NULL;
    ASSERT_EQ(reg_on(rt, -1, &h), -EBADF);
    int sv[2];
    raw_pair(sv);
    close(sv[1]);
    ASSERT_EQ(reg_on(rt, sv[1], &h), -EBADF);
    ASSERT_EQ(fut_fd_register(sv[0], &h), FUT_EINVAL); /* no runtime */
    ASSERT_EQ(h, NULL);
    char path[] = "/tmp/fut_io_fd_XXXXXX";
    int file = mkstemp(path);
    ck_assert_int_ge(file, 0);
    unlink(path);
    ASSERT_EQ(reg_on(rt, file, &h), -EPERM);
    close(file);
    ASSERT_EQ(reg_on(rt, sv[0], &h), 0);
    ASSERT_EQ(wait_on(rt, h, 0, 2000, NULL), FUT_EINVAL);
    ASSERT_EQ(wait_on(rt, h, 0x100, 2000, NULL), FUT_EINVAL);
    fut_fd_deregister(h);
    fut_fd_deregister(NULL);
    close(sv[0]);
    fut_runtime_free(rt);
}
END_TEST

/* Many rounds of a waiter racing a write from another thread and, every
 * other round, a deregistration from another thread: each waiter ends
 * (readable or cancelled), none hangs. */
START_TEST(race_wake_deregister)
{
    struct fx x;
    fx_begin(&x);
    fut_fd_deregister(x.h);
    int iters = TEST_ITERS(300, 60);
    int readable = 0, mt = fut_test_rt_is_mt();
    for (int i = 0; i < iters; i++) {
        ASSERT_EQ(reg_on(x.rt, x.sv[0], &x.h), 0);
        struct fut_join j;
        spawn_waiter(x.rt, x.h, FUT_FD_READABLE, &j);
        struct later l;
        later_start(&l, x.sv[1], i % 3, NULL);
        int early = mt && i % 2; /* on a worker ring, from this thread */
        if (early)
            fut_fd_deregister(x.h);
        int r = join_result(x.rt, &j);
        pthread_join(l.t, NULL);
        ck_assert_msg(r == FUT_FD_READABLE || r == FUT_ECANCELED, "%d", r);
        readable += r == FUT_FD_READABLE;
        if (!early)
            fut_fd_deregister(x.h);
        drain(x.sv[0]);
    }
    ck_assert(readable > 0);
    x.h = NULL;
    fx_end(&x);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("io_fd");
    TCase *tc = fut_test_tcase(s, "readable");
    tcase_add_test(tc, readable_after_write);
    tc = fut_test_tcase(s, "clear");
    tcase_add_test(tc, clear_then_wait);
    tcase_add_test(tc, clear_if_blocked);
    tc = fut_test_tcase(s, "writable");
    tcase_add_test(tc, writable);
    tc = fut_test_tcase(s, "hup");
    tcase_add_test(tc, hup_and_error);
    tc = fut_test_tcase(s, "deregister");
    tcase_add_test(tc, deregister_wakes);
    tc = fut_test_tcase(s, "left_alone");
    tcase_add_test(tc, fd_left_alone);
    tc = fut_test_tcase(s, "drop");
    tcase_add_test(tc, drop_then_wait);
    tc = fut_test_tcase(s, "fiber");
    tcase_add_test(tc, fiber_wait);
    tc = fut_test_tcase(s, "bad");
    tcase_add_test(tc, bad_register);
    tc = fut_test_tcase(s, "closed_before");
    tcase_add_test(tc, closed_before_deregister);
    tc = fut_test_tcase(s, "race");
    tcase_add_test(tc, race_wake_deregister);
    return fut_test_run(s);
}
