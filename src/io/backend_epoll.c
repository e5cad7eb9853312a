/* The epoll backend (see backend.h): registration once per fd, with
 * EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, and a translation of what
 * epoll_wait reports into FUT__RD_* bits. */
#include <string.h>

#include "io/backend.h"
#include "platform/sys.h"

/* Events fetched per epoll_wait: the driver's array size bounds it. */
#define WAIT_MAX 256

struct fut__backend {
    int epfd;
};

int fut__backend_init(struct fut__backend **out)
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
    *out = b;
    return 0;
}

void fut__backend_term(struct fut__backend *b)
{
    if (!b)
        return;
    fut__sys_close(b->epfd);
    fut__free(b, sizeof *b);
}

int fut__backend_update(struct fut__backend *b, int fd, void *token, int on)
{
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.ptr = token;
    return fut__sys_epoll_ctl(b->epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL,
                              fd, &ev);
}

static unsigned translate(uint32_t e)
{
    unsigned r = 0;
    if (e & (EPOLLIN | EPOLLPRI))
        r |= FUT__RD_READ;
    if (e & EPOLLOUT)
        r |= FUT__RD_WRITE;
    if (e & EPOLLRDHUP)
        r |= FUT__RD_READ | FUT__RD_RCLOSED;
    if (e & EPOLLHUP)
        r |= FUT__RD_READ | FUT__RD_WRITE | FUT__RD_RCLOSED |
             FUT__RD_WCLOSED;
    if (e & EPOLLERR)
        r |= FUT__RD_READ | FUT__RD_WRITE | FUT__RD_ERROR;
    return r;
}

int fut__backend_wait(struct fut__backend *b, int64_t timeout_ns,
                      struct fut__bevent *fired, int max)
{
    struct epoll_event evs[WAIT_MAX];
    if (max > WAIT_MAX)
        max = WAIT_MAX;
    int n = fut__sys_epoll_wait(b->epfd, evs, max, timeout_ns);
    if (n == -EINTR)
        return 0;
    if (n < 0)
        return n;
    for (int i = 0; i < n; i++) {
        fired[i].token = evs[i].data.ptr;
        fired[i].ready = translate(evs[i].events);
    }
    return n;
}
