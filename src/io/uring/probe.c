/* SPDX-License-Identifier: MIT */
/* The io_uring backend's probe and ring setup: which flags a ring gets,
 * whether this kernel has what the backend uses (fut__uring_probe, its
 * answer kept for the process), and the register call that lifts
 * R_DISABLED. Calls nothing in the backend's other files.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "io/uring/internal.h"

/* ------------------------------------------------------------- probe */

static unsigned ring_flags_full(void)
{
    return IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
           IORING_SETUP_TASKRUN_FLAG | IORING_SETUP_R_DISABLED |
           IORING_SETUP_CQSIZE;
}

static unsigned ring_flags_coop(void)
{
    return IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG |
           IORING_SETUP_CQSIZE;
}

static int ring_init(struct io_uring *ring, unsigned flags)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    p.flags = flags;
    p.cq_entries = CQ_ENTRIES;
    int r = io_uring_queue_init_params(SQ_ENTRIES, ring, &p);
    if (r == 0 && !(p.features & IORING_FEAT_EXT_ARG)) {
        io_uring_queue_exit(ring);
        return -ENOSYS; /* needs the timeout argument of 5.11 */
    }
    return r;
}

/* Sets up a ring with the best flags the kernel has. */
int fut__ur_ring_setup(struct io_uring *ring, int *coop)
{
    *coop = 0;
    int r = ring_init(ring, ring_flags_full());
    if (r == -EINVAL) { /* before 6.1: no DEFER_TASKRUN / SINGLE_ISSUER */
        *coop = 1;
        r = ring_init(ring, ring_flags_coop());
    }
    return r;
}

static const char *why_of(int err)
{
    if (err == -EPERM) {
        char c = 0;
        int fd = open("/proc/sys/kernel/io_uring_disabled", O_RDONLY);
        if (fd >= 0) {
            if (read(fd, &c, 1) != 1)
                c = 0;
            close(fd);
        }
        if (c == '2')
            return "io_uring: not permitted: sysctl kernel.io_uring_disabled "
                   "is 2 (set it to 0)";
        if (c == '1')
            return "io_uring: not permitted: sysctl kernel.io_uring_disabled "
                   "is 1 and this process is not in kernel.io_uring_group";
        return "io_uring: not permitted (a seccomp filter, such as a "
               "container runtime's default profile, blocks io_uring_setup)";
    }
    if (err == -ENOSYS)
        return "io_uring: the kernel has no io_uring, or one older than "
               "5.11 (fut needs IORING_FEAT_EXT_ARG)";
    if (err == -ENOMEM)
        return "io_uring: no memory for the ring (RLIMIT_MEMLOCK on kernels "
               "before 5.12)";
    if (err == -EMFILE || err == -ENFILE)
        return "io_uring: no file descriptor left for the ring (EMFILE)";
    return "io_uring: io_uring_setup failed";
}

/* The opcodes the backend submits. */
static int probe_opcodes(struct io_uring *ring)
{
    static const int need[] = {
        IORING_OP_RECV,         IORING_OP_SEND,
        IORING_OP_ACCEPT,       IORING_OP_POLL_ADD,
        IORING_OP_ASYNC_CANCEL, IORING_OP_PROVIDE_BUFFERS};
    struct io_uring_probe *p = io_uring_get_probe_ring(ring);
    int r = p ? 0 : -ENOSYS;
    for (size_t i = 0; p && i < sizeof need / sizeof need[0]; i++)
        if (!io_uring_opcode_supported(p, need[i]))
            r = -ENOSYS;
    io_uring_free_probe(p);
    return r;
}

/* Lifts a ring's R_DISABLED; 0, or -errno (EINVAL: a COOP_TASKRUN
 * ring, which was never disabled). The register call itself: liburing 2.3
 * declares io_uring_enable_rings but its library does not export it. */
int fut__ur_ring_enable_raw(struct io_uring *ring)
{
    if (syscall(__NR_io_uring_register, ring->ring_fd,
                IORING_REGISTER_ENABLE_RINGS, NULL, 0) < 0)
        return -errno;
    return 0;
}

#define PROBE_GROUP 0

/* What the opcode list does not show, tried for real: a provided-buffer
 * ring (5.19) and a multishot RECV that selects from it (6.0; multishot
 * ACCEPT, 5.19, comes with it) on a socketpair with one byte waiting.
 * Older kernels fail the registration or give the RECV -EINVAL. The CQE's
 * result goes through the fault hook (kind U_RECV_MS), so that a test can
 * play an older kernel. 'page' (one page) holds the buffer ring and its
 * buffer; the caller frees it after io_uring_queue_exit, which cancels the
 * RECV and drops the buffer ring. 0, -ENOSYS (missing), or the error of a
 * resource (socketpair). */
static int probe_recv_multishot(struct io_uring *ring, char *page, size_t len)
{
    struct io_uring_buf_reg reg;
    memset(&reg, 0, sizeof reg);
    reg.ring_addr = (uintptr_t)page;
    reg.ring_entries = 1;
    reg.bgid = PROBE_GROUP;
    if (io_uring_register_buf_ring(ring, &reg, 0) < 0)
        return -ENOSYS;
    struct io_uring_buf_ring *br = (struct io_uring_buf_ring *)page;
    io_uring_buf_ring_init(br);
    io_uring_buf_ring_add(br, page + len / 2, 64, 0,
                          io_uring_buf_ring_mask(1), 0);
    io_uring_buf_ring_advance(br, 1);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
                   sv) < 0)
        return -errno;
    int r;
    if (write(sv[1], "x", 1) != 1) {
        r = -errno; /* a fresh socketpair's first byte: not expected */
    } else {
        struct io_uring_sqe *s = io_uring_get_sqe(ring);
        io_uring_prep_recv_multishot(s, sv[0], NULL, 0, 0);
        s->flags |= IOSQE_BUFFER_SELECT;
        s->buf_group = PROBE_GROUP;
        io_uring_sqe_set_data64(s, 1);
        struct __kernel_timespec ts = {.tv_sec = 1, .tv_nsec = 0};
        struct io_uring_cqe *cqe = NULL;
        r = -ENOSYS; /* no CQE within 1 s: not the RECV fut relies on */
        if (io_uring_submit_and_wait_timeout(ring, &cqe, 1, &ts, NULL) >= 0 &&
            cqe) {
            long res = cqe->res;
            struct fut__uring_faults *fx = fut__uring_faults;
            if (fx && fx->cqe)
                fx->cqe(U_RECV_MS, &res);
            if (res == 1 && (cqe->flags & IORING_CQE_F_MORE) &&
                (cqe->flags & IORING_CQE_F_BUFFER))
                r = 0;
            io_uring_cqe_seen(ring, cqe);
        }
    }
    close(sv[0]);
    close(sv[1]);
    return r;
}

/* One probe: a ring with the best flags, the opcodes, the multishot RECV
 * from a buffer ring. Sets '*why' for an error. */
static int probe_run(const char **why)
{
    long pg = sysconf(_SC_PAGESIZE);
    size_t len = pg > 0 ? (size_t)pg : 4096;
    char *page = mmap(NULL, len, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) {
        *why = why_of(-ENOMEM);
        return -ENOMEM;
    }
    struct io_uring ring;
    int coop;
    int r = fut__ur_ring_setup(&ring, &coop);
    if (r != 0) {
        munmap(page, len);
        *why = why_of(r);
        return r;
    }
    (void)fut__ur_ring_enable_raw(
        &ring); /* the probe's thread is its issuer */
    r = probe_opcodes(&ring);
    if (r != 0)
        *why = why_of(r);
    else if ((r = probe_recv_multishot(&ring, page, len)) == -ENOSYS)
        *why = "io_uring: the kernel has no multishot RECV from a "
               "provided-buffer ring (6.0), which fut's io_uring backend "
               "uses";
    else if (r != 0)
        *why = "io_uring: the probe could not make a socketpair";
    io_uring_queue_exit(&ring);
    munmap(page, len);
    return r;
}

/* probe_run on a thread of its own: when a ring goes, the kernel sends
 * task work (TWA_SIGNAL) to every thread that submitted to it, which
 * makes a blocking call with a timeout (SO_RCVTIMEO, a futex wait) on
 * that thread return EINTR with no signal delivered - on the probe's
 * ring that thread would be the user's, creating the first runtime (test
 * io_uring.probe, probe_spares_caller: 25 of 25 timed recvs after a probe
 * were interrupted before). A thread that cannot be started (EAGAIN)
 * leaves the probe to the caller's thread, as before: the answer is the
 * same, only that thread may see the EINTR. */
struct probe_job {
    int r;
    const char *why;
};

static void *probe_main(void *arg)
{
    struct probe_job *j = arg;
    j->r = probe_run(&j->why);
    return NULL;
}

static int probe_apart(const char **why)
{
    struct probe_job j = {0, NULL};
    pthread_t th;
    if (pthread_create(&th, NULL, probe_main, &j) != 0)
        return probe_run(why);
    pthread_join(th, NULL); /* orders j's writes before these reads */
    *why = j.why;
    return j.r;
}

/* The probe's answer is kept for the process once it is a property of the
 * kernel (0, -ENOSYS, -EPERM, -EINVAL); a lack of fds or memory is not
 * kept, so a later runtime probes again. */
static pthread_mutex_t probe_mu = PTHREAD_MUTEX_INITIALIZER;
static int probe_known;       /* under probe_mu */
static int probe_err;         /* under probe_mu */
static const char *probe_why; /* under probe_mu */

int fut__uring_probe(const char **why)
{
    pthread_mutex_lock(&probe_mu);
    int r = probe_err;
    const char *w = probe_why;
    if (!probe_known) {
        r = probe_apart(&w);
        if (r == 0 || r == -ENOSYS || r == -EPERM || r == -EINVAL) {
            probe_known = 1;
            probe_err = r;
            probe_why = w;
        }
    }
    pthread_mutex_unlock(&probe_mu);
    if (r)
        *why = w;
    return r;
}

void fut__uring_probe_forget(void)
{
    pthread_mutex_lock(&probe_mu);
    probe_known = 0;
    pthread_mutex_unlock(&probe_mu);
}
