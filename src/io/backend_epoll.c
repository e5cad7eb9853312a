/* SPDX-License-Identifier: MIT */
/* The epoll backend (backend.h): operations by readiness + syscall.
 *
 * Every fd is registered once, the first time one of its operations
 * would block, for both directions, edge-triggered
 * (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET): no epoll_ctl per
 * operation. An operation is the reactor's readiness step (fut__io_do in
 * reactor.c): try the syscall, and on EAGAIN clear the readiness bit and
 * wait for the next edge. wait() translates what epoll_wait reports into
 * FUT__RD_* bits and hands each event to the reactor; it never decides
 * what an event means (Redis aeApiPoll).
 */
#include <poll.h>
#include <string.h>

#include "io/backend.h"
#include "io/io_internal.h"
#include "platform/sys.h"

/* Events fetched per epoll_wait. */
#define WAIT_MAX 256

struct fut__backend {
    int epfd;
};

static int epoll_create_be(struct fut__backend **out, int wakefd)
{
    struct fut__backend *b = fut__alloc(sizeof *b);
    if (!b)
        return FUT_ENOMEM;
    int fd = fut__sys_epoll_create();
    if (fd < 0) {
        fut__free(b, sizeof *b);
        return fd;
    }
    b->epfd = fd;
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN | EPOLLET;
    ev.data.ptr = NULL; /* the wake fd: token NULL */
    int r = fut__sys_epoll_ctl(fd, EPOLL_CTL_ADD, wakefd, &ev);
    if (r < 0) {
        fut__sys_close(fd);
        fut__free(b, sizeof *b);
        return r;
    }
    *out = b;
    return 0;
}

static void epoll_destroy(struct fut__backend *b)
{
    fut__sys_close(b->epfd);
    fut__free(b, sizeof *b);
}

static int epoll_watch(struct fut__backend *b, struct fut__io *io)
{
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.ptr = io;
    return fut__sys_epoll_ctl(b->epfd, EPOLL_CTL_ADD, io->fd, &ev);
}

/* Explicit, although close() would do it: a forked child may keep the
 * open file description (and so its registration) alive. */
static int epoll_unwatch(struct fut__backend *b, struct fut__io *io)
{
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    fut__sys_epoll_ctl(b->epfd, EPOLL_CTL_DEL, io->fd, &ev);
    return 0;
}

/* epoll's event bits are poll(2)'s (fut__rd_of_poll reads both). */
_Static_assert(EPOLLIN == POLLIN && EPOLLOUT == POLLOUT &&
                   EPOLLRDHUP == POLLRDHUP && EPOLLHUP == POLLHUP &&
                   EPOLLERR == POLLERR && EPOLLPRI == POLLPRI,
               "epoll and poll event bits differ");

static int epoll_wait_be(struct fut__backend *b, int64_t timeout_ns,
                         uint32_t tick, int *woken)
{
    struct epoll_event evs[WAIT_MAX];
    int n = fut__sys_epoll_wait(b->epfd, evs, WAIT_MAX, timeout_ns);
    if (n < 0)
        return 0; /* EINTR; other errors cannot happen on a valid epfd */
    int real = 0;
    for (int i = 0; i < n; i++) {
        if (!evs[i].data.ptr) {
            *woken = 1;
            continue;
        }
        real++;
        fut__io_dispatch(evs[i].data.ptr, fut__rd_of_poll(evs[i].events),
                         tick);
    }
    return real;
}

const struct fut__backend_vt fut__backend_epoll = {
    .name = "epoll",
    .create = epoll_create_be,
    .destroy = epoll_destroy,
    .op = fut__io_do, /* the readiness step (reactor.c) */
    .op_drop = NULL,
    .watch = epoll_watch,
    .unwatch = epoll_unwatch,
    .unwatch_by_number = 1,
    .forget = NULL,
    .wait = epoll_wait_be,
};
