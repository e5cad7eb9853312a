/* SPDX-License-Identifier: MIT */
/* Unix sockets: datagram sockets and connected pairs (listen and connect
 * for Unix stream sockets are with TCP's in tcp.c). */
#include <string.h>
#include <sys/un.h>

#include "fut/net.h"
#include "io/io_internal.h"
#include "platform/sys.h"

int fut_unix_datagram_bind(const char *path, struct fut_io **out)
{
    FUT_ARG_CHECK(out, "'out' is NULL");
    struct sockaddr_un sun;
    memset(&sun, 0, sizeof sun);
    if (path && strlen(path) >= sizeof sun.sun_path)
        return FUT_EINVAL;
    int fd = fut__sys_socket(AF_UNIX, SOCK_DGRAM, 0);
    if (fd < 0)
        return fd;
    int r = 0;
    if (path) {
        sun.sun_family = AF_UNIX;
        strcpy(sun.sun_path, path);
        r = fut__sys_bind(fd, (struct sockaddr *)&sun, sizeof sun);
    }
    if (r == 0)
        r = fut__io_new(fd, FUT__IO_DGRAM, FUT__RD_READ | FUT__RD_WRITE, out);
    if (r < 0)
        fut__sys_close(fd);
    return r;
}

int fut_unix_pair(int type, struct fut_io **a, struct fut_io **b)
{
    FUT_ARG_CHECK(a, "'a' is NULL");
    FUT_ARG_CHECK(b, "'b' is NULL");
    if (type != SOCK_STREAM && type != SOCK_DGRAM)
        return FUT_EINVAL;
    int sv[2];
    int r = fut__sys_socketpair(AF_UNIX, type, 0, sv);
    if (r < 0)
        return r;
    int kind = type == SOCK_STREAM ? FUT__IO_STREAM : FUT__IO_DGRAM;
    unsigned ready = FUT__RD_READ | FUT__RD_WRITE;
    r = fut__io_new(sv[0], kind, ready, a);
    if (r < 0)
        goto fail;
    r = fut__io_new(sv[1], kind, ready, b);
    if (r < 0) {
        fut_io_close(*a); /* closes sv[0] */
        fut__sys_close(sv[1]);
        return r;
    }
    return 0;
fail:
    fut__sys_close(sv[0]);
    fut__sys_close(sv[1]);
    return r;
}
