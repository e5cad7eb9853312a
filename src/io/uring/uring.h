/* SPDX-License-Identifier: MIT */
/* The io_uring backend's interface to the rest of fut (src/io/uring/):
 * its backend table for the driver (driver.c, which includes this under
 * FUT_HAVE_URING, as every file that builds without liburing does), the
 * probe, the calls that make and run a multi-thread runtime's rings
 * (share, ready, bind, retire), the fault injection hooks and the
 * counters that the tests and benchmarks read. What the backend's own
 * files share is internal.h. Nothing here needs liburing's headers.
 */
#ifndef FUT_IO_URING_URING_H
#define FUT_IO_URING_URING_H

#include <stddef.h>

#include "io/backend.h"
#include "util/atomic.h"

/* The table (backend.c). */
extern const struct fut__backend_vt fut__backend_uring;
/* Probes io_uring: 0 when a ring with the features backend.c uses
 * can be set up here (the opcodes, and a multishot RECV from a buffer ring
 * tried on a socketpair), else the error (-ENOSYS, -EPERM, ...) with a
 * static sentence naming the likely cause in '*why'. The answer is kept
 * for the process when it is the kernel's (not a lack of fds or memory).
 * Any thread. */
int fut__uring_probe(const char **why);
/* Tests: forgets the kept answer, so that the next probe runs again. */
void fut__uring_probe_forget(void);

/* A multi-thread runtime's rings (driver.c): links 'n' rings made by
 * create into one set, ring i being worker i's (locks, inboxes), set up
 * again for the rescue (rescue.c). 0, or FUT_ENOMEM: the caller
 * destroys the rings. */
int fut__uring_share(struct fut__backend **rings, int n);
/* Whether 'b' has something for its owner now: CQEs, requests in its
 * inbox, a wake a rescuer reaped (a hint; the owner's thread). Not the
 * completion work the kernel holds for the next enter (IORING_SQ_TASKRUN:
 * it may be another thread's; rescue.c says why). */
int fut__uring_ready(struct fut__backend *b);
/* The calling thread (a worker) owns 'b' from now. */
void fut__uring_bind(struct fut__backend *b);
/* Its worker exits and every worker stopped polling: runs what its inbox
 * holds, detaches the state of every fd of the lists 'ios' (registered:
 * bytes nobody read go to their spill) and 'released' (closed, not yet
 * freed) that 'b' owns, then tears the ring down ('destroy' frees what
 * is left, with the driver). On b's owner thread. */
void fut__uring_retire(struct fut__backend *b, struct fut__io *ios,
                       struct fut__io *released);

/* Fault injection for the io_uring backend (tests only; NULL otherwise:
 * set before a runtime starts, read on its thread). 'kind' is the op's
 * kind in backend.c: 0 multishot recv, 1 recv, 2 send, 3 accept. */
struct fut__uring_faults {
    /* May rewrite the result of an op's CQE (-ECONNRESET, -EPIPE,
     * -ENOBUFS, -ECANCELED, -EAGAIN, ...). */
    void (*cqe)(int kind, long *res);
    /* A length in [1, len) shortens a send's submission or a read's
     * copy-out (a short write or read); anything else leaves it. */
    size_t (*shorten)(int kind, size_t len);
    /* 1: the SQ is full now (the batch is submitted early). */
    int (*sq_full)(void);
};
extern struct fut__uring_faults *fut__uring_faults;
/* io_uring_enter calls made by every ring of the process (relaxed; tests
 * and benchmarks count syscalls with it). */
extern fut__aword fut__uring_enters;
/* Multishot recvs that ended with -ENOBUFS (the pool ran dry). */
extern fut__aword fut__uring_nobufs;
/* Ops (SQEs of recv, send, accept, poll) issued on the ring of the
 * thread that made them / prepared on another thread and posted to the
 * fd's ring through its inbox ("foreign": issue 31's measure of I/O away
 * from where the task is). Relaxed; each ring adds its counts every
 * 1,024 ops and when it retires or is destroyed, so they are exact once
 * the runtime is freed (a thread with no ring adds at once). */
extern fut__aword fut__uring_ops_local;
extern fut__aword fut__uring_ops_foreign;
/* Multishot ACCEPTs armed (one SQE each). */
extern fut__aword fut__uring_accept_arms;
/* Ops issued with a fixed file (IOSQE_FIXED_FILE; counted as the ops
 * above), the fixed-file slots in use and the provided buffers registered,
 * over every ring of the process (relaxed; tests and benchmarks). */
extern fut__aword fut__uring_fixed_ops;
/* Waits a worker did on a peer's ring stuck outside its wait (rescues:
 * rescue.c's rules "Rescue"). */
extern fut__aword fut__uring_rescues;
extern fut__aword fut__uring_files_used;
extern fut__aword fut__uring_bufs;
/* Sets fut__uring_faults from FUT_URING_FAULTS (faults.c says the
 * syntax) unless a test set it; once per process. */
void fut__uring_faults_from_env(void);

#endif /* FUT_IO_URING_URING_H */
