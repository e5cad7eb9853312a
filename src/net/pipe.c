/* SPDX-License-Identifier: MIT */
/* Pipes, and stdin / stdout as async streams. */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fut/net.h"
#include "io/io_internal.h"
#include "platform/sys.h"

int fut_pipe_open(struct fut_io **rd, struct fut_io **wr)
{
    FUT_ARG_CHECK(rd, "'rd' is NULL");
    FUT_ARG_CHECK(wr, "'wr' is NULL");
    int fds[2];
    int r = fut__sys_pipe(fds);
    if (r < 0)
        return r;
    r = fut__io_new(fds[0], FUT__IO_PIPE, FUT__RD_READ, rd);
    if (r < 0)
        goto fail;
    r = fut__io_new(fds[1], FUT__IO_PIPE, FUT__RD_WRITE, wr);
    if (r < 0) {
        fut_io_close(*rd);
        fut__sys_close(fds[1]);
        return r;
    }
    return 0;
fail:
    fut__sys_close(fds[0]);
    fut__sys_close(fds[1]);
    return r;
}

/* Wraps fd 0 or 1 without taking it: flags are restored and the fd is
 * left open at close. */
static int stdio_open(int fd, unsigned ready, struct fut_io **out)
{
    struct stat st;
    int r = fut__sys_fstat(fd, &st);
    if (r < 0)
        return r;
    int kind;
    if (S_ISFIFO(st.st_mode))
        kind = FUT__IO_PIPE;
    else if (S_ISSOCK(st.st_mode))
        kind = FUT__IO_STREAM;
    else if (S_ISCHR(st.st_mode) && isatty(fd))
        kind = FUT__IO_OTHER;
    else
        return -EPERM; /* epoll cannot wait on it: use fut_fs_read */
    int fl = fut__sys_fcntl_fl(fd, -1);
    if (fl < 0)
        return fl;
    r = fut__io_new(fd, kind, ready, out);
    if (r < 0)
        return r;
    (*out)->core->borrowed = 1;
    if (!(fl & O_NONBLOCK)) {
        r = fut__sys_fcntl_fl(fd, fl | O_NONBLOCK);
        if (r < 0) {
            fut_io_close(*out); /* never registered: freed at once */
            return r;
        }
        (*out)->core->restore_fl = fl;
    }
    return 0;
}

int fut_stdin_open(struct fut_io **out)
{
    FUT_ARG_CHECK(out, "'out' is NULL");
    return stdio_open(0, FUT__RD_READ, out);
}

int fut_stdout_open(struct fut_io **out)
{
    FUT_ARG_CHECK(out, "'out' is NULL");
    return stdio_open(1, FUT__RD_WRITE, out);
}
