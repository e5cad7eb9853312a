/* SPDX-License-Identifier: MIT */
/* File operations on the blocking pool. Each runs in a job whose payload
 * holds copies of everything the pool thread touches (path, data, the
 * read buffer, the stat), so a dropped future never leaves a thread
 * writing into the caller's memory. */
#include <fcntl.h>
#include <string.h>

#include "io/io_internal.h"
#include "platform/sys.h"

enum { FS_OPEN, FS_READ, FS_WRITE, FS_STAT, FS_FSTAT, FS_FSYNC };

struct fs_job {
    int op, fd, flags, mode;
    int64_t offset;
    size_t len;
    struct stat st;
    char data[]; /* the path (NUL-terminated), or the bytes */
};

static intptr_t fs_run(struct fut__job *j)
{
    struct fs_job *p = fut__job_payload(j);
    int r;
    switch (p->op) {
    case FS_OPEN:
        return fut__sys_open(p->data, p->flags, p->mode);
    case FS_READ:
        for (;;) {
            ssize_t n = fut__sys_pread(p->fd, p->data, p->len, p->offset);
            if (n != -EINTR)
                return n;
        }
    case FS_WRITE:
        for (;;) {
            ssize_t n = fut__sys_pwrite(p->fd, p->data, p->len, p->offset);
            if (n != -EINTR)
                return n;
        }
    case FS_STAT:
        r = fut__sys_open(p->data, O_PATH, 0);
        if (r < 0)
            return r;
        p->fd = r;
        r = fut__sys_fstat(p->fd, &p->st);
        fut__sys_close(p->fd);
        return r;
    case FS_FSTAT:
        return fut__sys_fstat(p->fd, &p->st);
    default:
        return fut__sys_fsync(p->fd);
    }
}

/* An opened fd nobody will take: close it. */
static void fs_discard(struct fut__job *j, intptr_t value)
{
    struct fs_job *p = fut__job_payload(j);
    if (p->op == FS_OPEN && value >= 0)
        fut__sys_close((int)value);
}

/* Builds the job at the first poll; 0 or FUT_ENOMEM. */
static int fs_make(struct fut_fs *f)
{
    size_t extra = 0;
    if (f->op == FS_OPEN || f->op == FS_STAT)
        extra = strlen(f->path) + 1;
    else if (f->op == FS_READ || f->op == FS_WRITE)
        extra = f->len;
    struct fut__job *j =
        fut__job_new(sizeof(struct fs_job) + extra, fs_run, fs_discard);
    if (!j)
        return FUT_ENOMEM;
    struct fs_job *p = fut__job_payload(j);
    p->op = f->op;
    p->fd = f->fd;
    p->flags = f->flags;
    p->mode = f->mode;
    p->offset = f->offset;
    p->len = f->len;
    if (f->op == FS_OPEN || f->op == FS_STAT)
        memcpy(p->data, f->path, extra);
    else if (f->op == FS_WRITE && f->len)
        memcpy(p->data, f->cbuf, f->len);
    f->job = j;
    return 0;
}

static int fs_poll(struct fut_future *fb, struct fut_context *cx)
{
    struct fut_fs *f = (struct fut_fs *)fb;
    if (!f->job) {
        int r = fs_make(f);
        if (r < 0) {
            f->result = r;
            return FUT_READY;
        }
    }
    struct fut__job *j = f->job;
    intptr_t v;
    int r = fut__job_poll(&j, cx, &v);
    f->job = j;
    if (r == FUT_PENDING)
        return FUT_PENDING;
    if (r != FUT_READY) {
        f->result = r;
        return FUT_READY;
    }
    struct fs_job *p = fut__job_payload(j);
    if (f->op == FS_READ && v > 0)
        memcpy(f->buf, p->data, (size_t)v);
    if ((f->op == FS_STAT || f->op == FS_FSTAT) && v == 0)
        *f->st = p->st;
    fut__job_release(&j);
    f->job = NULL;
    f->result = (ssize_t)v;
    return FUT_READY;
}

static void fs_drop(struct fut_future *fb)
{
    struct fut_fs *f = (struct fut_fs *)fb;
    struct fut__job *j = f->job;
    fut__job_drop(&j);
    f->job = NULL;
}

static const struct fut_future_vtable fs_vt = {fs_poll, fs_drop, "fs", NULL};

static void fs_setup(struct fut_fs *f, int op)
{
    memset(f, 0, sizeof *f);
    fut_future_init(&f->base, &fs_vt);
    f->op = op;
    f->fd = -1;
    f->offset = -1;
}

void fut_fs_open_init(struct fut_fs *f, const char *path, int flags, int mode)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(path, "'path' is NULL");
    fs_setup(f, FS_OPEN);
    f->path = path;
    f->flags = flags;
    f->mode = mode;
}

void fut_fs_read_init(struct fut_fs *f, int fd, void *buf, size_t len,
                      int64_t offset)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(buf || !len, "'buf' is NULL");
    fs_setup(f, FS_READ);
    f->fd = fd;
    f->buf = buf;
    f->len = len;
    f->offset = offset < 0 ? -1 : offset;
}

void fut_fs_write_init(struct fut_fs *f, int fd, const void *buf, size_t len,
                       int64_t offset)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(buf || !len, "'buf' is NULL");
    fs_setup(f, FS_WRITE);
    f->fd = fd;
    f->cbuf = buf;
    f->len = len;
    f->offset = offset < 0 ? -1 : offset;
}

void fut_fs_stat_init(struct fut_fs *f, const char *path, struct stat *st)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(path, "'path' is NULL");
    FUT_ARG_VOID(st, "'st' is NULL");
    fs_setup(f, FS_STAT);
    f->path = path;
    f->st = st;
}

void fut_fs_fstat_init(struct fut_fs *f, int fd, struct stat *st)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(st, "'st' is NULL");
    fs_setup(f, FS_FSTAT);
    f->fd = fd;
    f->st = st;
}

void fut_fs_fsync_init(struct fut_fs *f, int fd)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    fs_setup(f, FS_FSYNC);
    f->fd = fd;
}
