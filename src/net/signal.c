/* SPDX-License-Identifier: MIT */
/* Signals through a signalfd: the receive future and the stream. */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>

#include "fut/net.h"
#include "io/io_internal.h"
#include "platform/sys.h"

int fut_signal_open(const int *sigs, int n, struct fut_io **out)
{
    FUT_ARG_CHECK(out, "'out' is NULL");
    if (!sigs || n <= 0)
        return FUT_EINVAL;
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < n; i++)
        if (sigaddset(&set, sigs[i]) != 0)
            return FUT_EINVAL;
    int r = pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (r != 0)
        return -r;
    int fd = fut__sys_signalfd(&set);
    if (fd < 0)
        return fd;
    r = fut__io_new(fd, FUT__IO_SIGNAL, FUT__RD_READ, out);
    if (r < 0)
        fut__sys_close(fd);
    return r;
}

/* One receive step: FUT_READY with f->result / f->signo set. */
static int signal_step(struct fut_signal_recv *f, struct fut_context *cx)
{
    struct fut__io *io =
        f->io && (f->io->dir & FUT__DIR_READ) ? f->io->core : NULL;
    if (!io) {
        f->result = FUT_EINVAL;
        return FUT_READY;
    }
    /* The record lands in 'si' only inside the call that returns READY
     * (a completion backend reads into its own buffer and copies). */
    struct signalfd_siginfo si;
    struct fut__op op = {.kind = FUT__OP_READ, .buf = &si, .len = sizeof si};
    long res;
    if (fut__io_submit(io, &op, cx, &res) == FUT_PENDING) {
        f->waiting = 1;
        return FUT_PENDING;
    }
    f->waiting = 0;
    if (res == (long)sizeof si)
        f->signo = (int)si.ssi_signo;
    else if (res >= 0)
        res = -EIO; /* a signalfd reads whole records or nothing */
    f->result = res < 0 ? (int)res : 0;
    return FUT_READY;
}

static int signal_poll(struct fut_future *fb, struct fut_context *cx)
{
    return signal_step((struct fut_signal_recv *)fb, cx);
}

static void signal_release(struct fut_signal_recv *f)
{
    if (f->waiting)
        fut__io_unwait(f->io->core, FUT__DIR_READ);
    f->waiting = 0;
}

static void signal_drop(struct fut_future *fb)
{
    signal_release((struct fut_signal_recv *)fb);
}

static const struct fut_future_vtable signal_vt = {signal_poll, signal_drop,
                                                   "signal_recv", NULL};

void fut_signal_recv_init(struct fut_signal_recv *f, struct fut_io *sig)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(sig, "'sig' is NULL");
    fut_future_init(&f->base, &signal_vt);
    f->io = sig;
    f->waiting = 0;
    f->result = 0;
    f->signo = 0;
}

static int signal_next(struct fut_stream *sb, struct fut_context *cx,
                       void *item)
{
    struct fut_signal_stream *s = (struct fut_signal_stream *)sb;
    if (signal_step(&s->rx, cx) == FUT_PENDING)
        return FUT_PENDING;
    if (s->rx.result < 0) {
        s->error = s->rx.result;
        return FUT_STREAM_END;
    }
    memcpy(item, &s->rx.signo, sizeof s->rx.signo);
    return FUT_STREAM_ITEM;
}

static void signal_stream_drop(struct fut_stream *sb)
{
    signal_release(&((struct fut_signal_stream *)sb)->rx);
}

static const struct fut_stream_vtable signal_stream_vt = {
    signal_next, signal_stream_drop, "signal_stream"};

void fut_signal_stream_init(struct fut_signal_stream *s, struct fut_io *sig)
{
    FUT_ARG_VOID(s, "'s' is NULL");
    FUT_ARG_VOID(sig, "'sig' is NULL");
    fut_stream_init(&s->base, &signal_stream_vt, sizeof(int));
    fut_signal_recv_init(&s->rx, sig);
    s->error = 0;
}
