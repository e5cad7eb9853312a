/* SPDX-License-Identifier: MIT */
/* UDP sockets: bind and connect. Datagrams move through fut_io_send_to /
 * fut_io_recv_from (stream.c), or fut_io_send / fut_io_recv once
 * connected. */
#include "fut/net.h"
#include "io/io_internal.h"
#include "platform/sys.h"

int fut_udp_bind(const struct sockaddr *addr, socklen_t len,
                 struct fut_io **out)
{
    FUT_ARG_CHECK(out, "'out' is NULL");
    if (!addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
        return FUT_EINVAL;
    int fd = fut__sys_socket(addr->sa_family, SOCK_DGRAM, 0);
    if (fd < 0)
        return fd;
    int r = fut__sys_bind(fd, addr, len);
    if (r == 0)
        r = fut__io_new(fd, FUT__IO_DGRAM, FUT__RD_READ | FUT__RD_WRITE, out);
    if (r < 0)
        fut__sys_close(fd);
    return r;
}

int fut_udp_connect(struct fut_io *io, const struct sockaddr *addr,
                    socklen_t len)
{
    FUT_ARG_CHECK(io, "'io' is NULL");
    FUT_ARG_CHECK(addr, "'addr' is NULL");
    /* connect(2) on a datagram socket only records the peer: it never
     * blocks and never reports EINPROGRESS. */
    return fut__sys_connect(fut_io_fd(io), addr, len);
}
