/* SPDX-License-Identifier: MIT */
/* The io_uring backend's private state, shared by its files in
 * src/io/uring/:
 *   probe.c     the probe and the ring's setup flags (calls nothing here);
 *   ring.c      the ring's plumbing: the op and buffer pools,
 *               the provided-buffer ring, taking and submitting SQEs, the
 *               inbox (calls nothing above it);
 *   stream.c    the native ops on stream sockets: recv, accept, send and
 *               their CQEs;
 *   wait.c      the wait: the inbox's requests, submitting, reaping and
 *               the CQE dispatch, an fd's state forgotten;
 *   rescue.c    the rings of a multi-thread runtime's set and their
 *               rescue (its head comment has the rules "Rescue"), the
 *               table's wait;
 *   backend.c   the table's other entries, watch, close, the ring's life
 *               (its head comment has the rules, threads included);
 *   faults.c    FUT_URING_FAULTS, fault injection (tests).
 * A ring is touched only by its owner thread - on a multi-thread
 * runtime, by the thread holding its lock (its worker, or a peer that
 * rescues it); what another thread needs from it goes through its inbox
 * (backend.c's rules "Threads", rescue.c's "Rescue").
 */
#ifndef FUT_IO_URING_INTERNAL_H
#define FUT_IO_URING_INTERNAL_H

#include <errno.h>
#include <liburing.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "io/backend.h"
#include "io/uring/uring.h"
#include "io/io_internal.h"

#define SQ_ENTRIES 256
#define CQ_ENTRIES 4096
/* The provided buffers (ring.c's rules): groups of GROUP_BUFS
 * buffers of BUF_SIZE bytes, group 0 from setup, up to GROUPS_MAX while
 * the ring runs dry; a buffer's id names its group (bid / GROUP_BUFS)
 * and its place in the ring's one reserved region (b->bufs + bid *
 * BUF_SIZE). */
#define GROUP_BUFS                                                           \
    128 /* per group (power of two): the kernel takes them round-robin,
           so all of a used group ends up resident: 512 KiB */
#define GROUPS_MAX 16                       /* up to 8 MiB per ring */
#define BUF_COUNT (GROUP_BUFS * GROUPS_MAX) /* buffer ids of a ring */
#define BUF_SIZE 4096                       /* bytes each */
#define FILES_MAX 4096 /* fixed-file slots per ring (RLIMIT_NOFILE caps) */
#define COPY_MAX 65536 /* bytes of a write copied per op */
#define SOLO_MAX 16384 /* bytes of a single-shot recv's own buffer */
#define QUEUE_MAX (8 * BUF_SIZE) /* queued bytes that pause a multishot */
#define SMALL_BUF 2048 /* op buffers up to this come from a free list */
#define ACCEPT_MAX                                                           \
    32 /* accepted fds queued that pause a multishot
                              ACCEPT (the rest wait in the backlog) */
/* The pools' bounds (entries kept per ring; ring.c's rules). */
#define OPS_KEEP 256           /* ops: 256 x 176 B */
#define BUFS_KEEP 64           /* SMALL_BUF buffers: 128 KiB */
#define CHUNKS_KEEP GROUP_BUFS /* chunks */
#define TRIM_NS 250000000      /* a pool's unused entries go after this */

#define OPS_FLUSH 1024 /* ops counted per ring before the global add */

/* user_data of CQEs that are not ops. */
#define UD_WAKE 1u   /* the wake eventfd's multishot poll */
#define UD_IGNORE 2u /* cancels, poll removes */

static inline void count_enter(void)
{
    fut__fetch_add(&fut__uring_enters, 1, FUT__RELAXED);
}

/* U_ACCEPT is a multishot ACCEPT (a listener's, while armed: f->ms). */
enum ukind { U_RECV_MS, U_RECV, U_SEND, U_ACCEPT, U_POLL };

/* A request in a ring's inbox (shared rings: another thread asks the
 * owner to do what only the owner may). */
enum { REQ_OP, REQ_CLOSE, REQ_FORGET };
struct ureq {
    struct ureq *next;
    int type; /* REQ_*: an op to issue or cancel; an fd to close; an fd
                 whose state to free (then the io itself) */
};

struct ufd;

/* One operation in the kernel's hands. */
struct uop {
    struct uop *next;   /* free list */
    struct fut__io *io; /* NULL once the fd is forgotten or the op
                              orphaned: retire on the CQE */
    struct ufd *f;      /* the fd's state (alive while this op is:
                              f->nops counts it) */
    uint8_t kind;       /* enum ukind */
    uint8_t done;       /* single-shot: its CQE came ('res') */
    uint8_t ended;      /* multishot: ended or cancelled by us */
    uint8_t bgid;       /* RECV_MS: the buffer group it selects from */
    int term;           /* multishot: a fault ends it with this code */
    uint64_t gen;       /* b->gen at prep: unsubmitted while equal */
    long res;
    size_t len, off; /* RECV: bytes received / copied out */
    char *buf;       /* RECV, SEND: our buffer (fut__alloc) */
    size_t cap;
    /* Shared rings, under f's lock: an op prepared by another thread
     * waits in the owner's inbox ('req') with its SQE in 'sqe'. */
    uint8_t issued;      /* in the owner's SQ (or sent) */
    uint8_t posted;      /* 'req' is in the owner's inbox */
    uint8_t want_cancel; /* the inbox is to cancel it */
    uint8_t zombie;      /* retired while posted: the inbox frees it */
    uint32_t bgen;       /* RECV_MS: its group's 'gen' when armed */
    struct ureq req;
    struct io_uring_sqe *sqe; /* made by another thread: &own, else NULL */
    struct io_uring_sqe own;  /* that SQE, until the owner copies it */
};

/* A pool of free blocks of one size, linked through their first word
 * (rules: ring.c). */
struct upool {
    void *head;
    unsigned n;   /* blocks in it */
    unsigned low; /* the fewest since the last trim: unused that long */
};

/* A received chunk on an fd's queue: provided buffer 'bid'. */
struct chunk {
    struct chunk *next;
    uint16_t bid;
    uint32_t len, off;
};

/* A listener's accepted fds, oldest first (a ring of 'cap'). */
struct acceptq {
    unsigned head, n, cap;
    int fd[];
};

/* The backend's state of one fd (io->bstate[0]). */
struct ufd {
    struct uop *rd;   /* the single-shot RECV: in flight or done */
    struct uop *ms;   /* the multishot RECV or ACCEPT while armed */
    struct uop *wr;   /* SEND of the current writer */
    struct uop *poll; /* the watch's multishot POLL_ADD */
    struct chunk *head, *tail;
    size_t queued;      /* bytes on the queue */
    struct acceptq *aq; /* a listener's fds accepted for nobody yet */
    long end;           /* 1: not ended; 0: EOF; < 0: error (once; a
                           listener's after the fds queued first) */
    int nobufs;         /* the multishot ran dry: next arm is solo */
    int fslot;          /* its fixed-file slot in owner's table + 1; 0:
                           none yet; -1: released (the fd closes). The
                           owner thread's alone */
    /* The fd's record (one per fd: the reactor's): its lock is f's lock
     * and its slots ('rd', 'wr') hold the native reader's and writer's
     * wakers (the rules "One record" below). Set when f is made (under
     * io's lock), valid until 'dead'; NULL from then. */
    struct fut__io *io;
    struct fut__backend *owner; /* the ring its ops go to (fixed) */
    int shared;                 /* owner is one of several rings: a ufd_mt */
    unsigned wake;              /* FUT__DIR_* a CQE made ready: on_cqe
                                   takes those wakers and wakes them after
                                   io's lock (under it) */
    unsigned nops;              /* uops pointing here (u->f) */
    int dead;                   /* the io is gone: freed with the last op.
                                   Written and read by the ring's holder
                                   only (ur_mine) */
};

/* The requests of an fd on a shared ring (its lock is io's). */
struct ufd_mt {
    struct ufd f;
    int close_fd; /* REQ_CLOSE: the fd the owner closes */
    struct ureq close_req, forget_req;
};

static inline struct ufd_mt *ufd_mt(struct ufd *f)
{
    return (struct ufd_mt *)(void *)f;
}

/* A group of provided buffers (the owner's alone). */
struct ugroup {
    unsigned avail; /* its buffers in the kernel's hands */
    unsigned low;   /* the fewest since the last trim */
    uint32_t gen;   /* bumped each time it is registered */
};

struct fut__backend {
    struct io_uring ring;
    int wakefd;
    int enabled;       /* R_DISABLED lifted */
    pid_t owner;       /* the thread that enabled it */
    uint64_t gen;      /* io_uring_enter calls that submitted */
    unsigned inflight; /* ops whose last CQE has not come */
    char *brs;         /* GROUPS_MAX pages: group g's buffer ring at page g */
    size_t pg;         /* the page size */
    char *bufs;        /* BUF_COUNT * BUF_SIZE reserved, mmap'd */
    struct ugroup grp[GROUPS_MAX];
    unsigned ngroups; /* groups registered: 0 .. ngroups - 1 */
    int grow_err;     /* a group could not be added (until the trim) */
    /* Fixed files (ring.c's rules): a sparse table of 'nfiles'
     * slots (0: none registered); slots below 'fhi' not in use are on
     * the stack 'ffree' ('nffree' of them). The owner's alone. */
    unsigned nfiles, fhi, nffree;
    int *ffree;
    unsigned n_fixed; /* ops issued with a fixed file (count_flush) */
    struct upool ops, chunks, sbufs; /* touched by the thread whose ring
                              this is only (ring.c's rules) */
    int64_t trim_at;                 /* the pools' last trim (fut_now_ns) */
    int wake_armed;
    /* Ops this thread issued (fut__ur_sqe_op) while this was its ring
     * (fut__ur_here): on their own ring / posted to another's inbox.
     * Plain counters of the thread whose ring this is, added to
     * fut__uring_ops_local / _foreign every OPS_FLUSH ops and when the
     * ring retires or is destroyed (count_flush). */
    unsigned n_local, n_foreign;
    /* --- a ring of a multi-thread runtime (one per worker) --- */
    int shared;                 /* 1: one of several rings (locks, inbox) */
    struct fut__backend *first; /* the set's first ring (its id) */
    int index;                  /* worker index */
    int dead;                   /* retired (its worker exited) */
    uint32_t ptick;   /* readiness ticks of its poll CQEs (on_poll) */
    fut__mutex ilock; /* guards the inbox */
    struct ureq *ihead, *itail;
    uint16_t ibids[BUF_COUNT]; /* provided buffers handed back */
    unsigned nbids;
    /* Dekker pair with inbox posters: the owner stores 'parked' then
     * reads 'ipending'; a poster stores 'ipending' then reads 'parked'
     * (seq_cst both): one of them sees the other, so a post to a ring
     * that sleeps writes its wake fd. */
    fut__aword parked, ipending;
    /* --- rescuable rings (a multi-thread runtime's: rescue.c's
     * rules "Rescue") --- */
    int rescue;         /* set up without SINGLE_ISSUER | DEFER_TASKRUN */
    fut__mutex rlock;   /* held by whoever touches the ring (ur_mine) */
    fut__aword turns;   /* waits its owner began (the owner's RMW) */
    fut__aword waiting; /* 1 while its owner is inside a wait */
    /* 1 when a rescuer reaped the owner's wake (the wake fd's CQE): the
     * owner's next wait returns at once as woken. Written under 'rlock'
     * (the rescuer sets, the owner's wait clears); read without it
     * (relaxed) by fut__uring_ready, a hint the owner re-checks under
     * the lock. */
    fut__aword wake_rescued;
    struct fut__backend **set; /* the set's rings (driver.c's array) */
    int nset;
    uintptr_t *seen; /* per peer: its 'turns' at this ring's last look */
};

/* The ring the calling thread owns (a worker of a multi-thread runtime
 * on io_uring), or NULL. */
extern _Thread_local struct fut__backend *fut__ur_here;
/* The ring whose lock ('rlock') the calling thread holds (rescuable
 * rings: rescue.c's rules), or NULL; and how deep it is in the
 * backend's entries (only the outermost takes the lock). */
extern _Thread_local struct fut__backend *fut__ur_held;
extern _Thread_local int fut__ur_depth;

/* Whether the calling thread may touch 'b' itself: a lone ring's thread;
 * on a rescuable ring whoever holds its lock (its owner, or a rescuer);
 * on a shared ring that is not (set up with SINGLE_ISSUER), its owner. */
static inline int ur_mine(const struct fut__backend *b)
{
    if (!b->shared)
        return 1;
    return b->rescue ? fut__ur_held == b : fut__ur_here == b;
}

/* A backend entry on a worker (fut__ur_here) whose ring is rescuable:
 * the outermost entry tries its ring's lock once. Returns 1 when it took
 * it (pass to ur_leave); without it the ring is the caller's as any
 * other thread's: what it needs goes through the inbox. Never blocks:
 * the entries run under the reactor's lock (watch), which a rescuer
 * holding the ring lock may wait for (a readiness dispatch). */
static inline int ur_enter(void)
{
    struct fut__backend *h = fut__ur_here;
    if (fut__ur_depth++ || !h || !h->rescue || !fut__mutex_trylock(&h->rlock))
        return 0;
    fut__ur_held = h;
    return 1;
}

static inline void ur_leave(int took)
{
    fut__ur_depth--;
    if (took) {
        fut__ur_held = NULL;
        fut__mutex_unlock(&fut__ur_here->rlock);
    }
}

/* One record. An fd has one record, the reactor's struct fut__io; the
 * io_uring state of an fd (struct ufd: its ops, its queue, its fixed-file
 * slot) hangs off it (io->bstate[0]) and has neither a lock nor wakers of
 * its own:
 *   - f's lock is io->lock, taken on a shared ring only (a lone ring's
 *     every touch comes from its one thread: check_thread). So the
 *     reactor's entries that run under io->lock (watch) are under f's
 *     lock already and must not take it again (non-recursive);
 *   - the native reader's and writer's wakers are parked in io's slots
 *     ('rd', 'wr') with 'kept' 0 (fut__io_slot_park): a completion takes
 *     them, and neither a readiness dispatch nor fut__io_ready's kept
 *     fast path treats them as kept. A dispatch that finds one takes
 *     and wakes it (a spurious wake: the op polls again and re-parks);
 *     a CQE that finds a readiness wait's waker takes it (the task's
 *     next readiness wait registers again, by the lock). One waiter per
 *     direction, as on epoll;
 *   - a CQE does not wake under io's lock (the reactor's rule): its
 *     handlers mark the directions in f->wake, and on_cqe takes those
 *     wakers under the lock and wakes them after it. The wakers unwatch and
 *     forget take are dropped after the unlock; a waker a native park
 *     replaces is dropped in place, as the reactor's own parks do (a drop
 *     only releases a reference);
 *   - f outlives its io (late CQEs of ops in flight after the io was
 *     freed): f->io is valid until f->dead, which forget sets under io's
 *     lock on the ring's holder. Only the holder reads 'dead' without the
 *     lock - the CQE path and the inbox, which run there - and from then
 *     on it touches neither io->lock nor io's slots: nobody else reaches
 *     a dead f (io->bstate[0] was cleared, and the ops' u->io are NULL).
 */

/* f's lock (io's), on a shared ring only; f not dead. */
static inline void f_lock(struct ufd *f)
{
    if (f->shared)
        fut__mutex_lock(&f->io->lock);
}

static inline void f_unlock(struct ufd *f)
{
    if (f->shared)
        fut__mutex_unlock(&f->io->lock);
}

static inline struct ufd *ufd_of(struct fut__io *io)
{
    return (struct ufd *)io->bstate[0];
}

/* Parks cx's waker in io's slot of 'dir' for a native op (under f's
 * lock): its CQE takes it (wake). */
static inline void park(struct ufd *f, unsigned dir, struct fut_context *cx)
{
    fut__io_slot_park(f->io, dir, &cx->waker);
}

/* A CQE made 'dir' ready (under f's lock, f not dead): on_cqe wakes its
 * waker once it released the lock. */
static inline void wake(struct ufd *f, unsigned dir)
{
    f->wake |= dir;
}

#ifdef FUT_DEBUG
static inline void check_thread(struct fut__backend *b)
{
    if (!b->shared && b->owner && b->owner != (pid_t)syscall(SYS_gettid))
        FUT_MISUSE("an io_uring runtime used from a second thread (a "
                   "current-thread runtime on io_uring is driven by one "
                   "thread: the first that ran it)");
}
#else
#define check_thread(b) ((void)0)
#endif

/* Whether 'res' says "nothing happened, try again" (not a broken
 * connection). */
static inline int ur_nothing(long res)
{
    return res == -EAGAIN || res == -ECANCELED || res == -ENOBUFS ||
           res == -EINTR;
}

/* ---------------------------------------------- stream.c */

/* The native ops (the backend's 'op' on a stream or listening socket),
 * under f's lock (io's, on a shared ring): FUT_READY with '*res' set, or FUT_PENDING (cx's waker
 * parked on f). */
int fut__ur_recv(struct fut__backend *b, struct fut__io *io, struct ufd *f,
                 const struct fut__op *op, struct fut_context *cx, long *res);
int fut__ur_accept(struct fut__backend *b, struct fut__io *io, struct ufd *f,
                   const struct fut__op *op, struct fut_context *cx,
                   long *res);
int fut__ur_send(struct fut__backend *b, struct fut__io *io, struct ufd *f,
                 const struct fut__op *op, struct fut_context *cx, long *res);
/* A CQE of a multishot RECV / ACCEPT ('res': after the fault hook), on
 * the ring's owner under f's lock. */
void fut__ur_on_recv_ms(struct fut__backend *b, struct uop *u,
                        const struct io_uring_cqe *cqe, long res);
void fut__ur_on_accept(struct fut__backend *b, struct uop *u,
                       const struct io_uring_cqe *cqe, long res, int more);

/* ------------------------------------------------ wait.c */

/* Arms op 'u' as io's watch: a multishot POLL_ADD of its fd (again when
 * the last one ended without our cancel). */
void fut__ur_arm_poll(struct fut__backend *b, struct fut__io *io,
                      struct uop *u);
/* 'io' is being freed (or was detached): detaches every op of its state
 * 'f' (they retire on their CQEs), closes the accepted fds nobody took,
 * hands queued buffers back, and frees 'f' now or with its last op. On
 * the ring's owner. */
void fut__ur_forget(struct fut__backend *b, struct fut__io *io,
                    struct ufd *f);
/* Runs what other threads asked of 'b' (its inbox), in the order asked. */
void fut__ur_drain(struct fut__backend *b);
/* The wait of the table (backend.h) without the rescue's locking, by
 * whoever holds 'b' (ur_mine): the inbox, the SQEs out, the CQEs in. */
int fut__ur_wait_in(struct fut__backend *b, int64_t timeout_ns, uint32_t tick,
                    int *woken);

/* ---------------------------------------------- rescue.c */

/* The table's 'wait' (backend.h): on a rescuable ring, the owner's side
 * of the rescue (a look at the peers, the ring's lock, 'turns',
 * 'waiting', 'wake_rescued') around fut__ur_wait_in. */
int fut__ur_wait(struct fut__backend *b, int64_t timeout_ns, uint32_t tick,
                 int *woken);

/* ------------------------------------------------ ring.c */

/* A fresh op on 'io' (state 'f', counted in f->nops; from the calling
 * thread's pool or a new allocation), or NULL. Under f's lock. */
struct uop *fut__ur_uop_new(struct fut__backend *b, struct fut__io *io,
                            int kind);
/* Returns 'u' and its buffer to the calling thread's pools, or to the heap
 * past their bounds (not counted any more in its f->nops: the caller
 * frees f when that made it 0 and f is dead). */
void fut__ur_uop_free(struct fut__backend *b, struct uop *u);
/* Frees 'u' after its last CQE; one posted to the inbox (a cancel asked
 * by another thread) is freed there instead. Under f's lock, or on a
 * dead f by the ring's holder (the rules "One record"). */
void fut__ur_retire(struct fut__backend *b, struct uop *u);
/* Gives 'u' a buffer of at least 'cap' bytes: 0 or FUT_ENOMEM. */
int fut__ur_uop_buffer(struct fut__backend *b, struct uop *u, size_t cap);
/* The backend state of 'io', made on first use with owner 'b' (io's
 * lock or the only thread); NULL: no memory. */
struct ufd *fut__ur_ufd_get(struct fut__backend *b, struct fut__io *io);
/* Frees 'f' (nothing points to it any more). */
void fut__ur_ufd_free(struct ufd *f);
/* Hands provided buffer 'bid' back to the kernel. */
void fut__ur_buf_return(struct fut__backend *b, uint16_t bid);
/* Queues 'len' bytes of provided buffer 'bid' on 'f' / pops the head. */
void fut__ur_chunk_push(struct fut__backend *b, struct ufd *f, uint16_t bid,
                        uint32_t len);
void fut__ur_chunk_pop(struct fut__backend *b, struct ufd *f);
/* Queues accepted 'fd' on listener 'f' (0, or FUT_ENOMEM: not queued) /
 * takes the oldest (-1: none). Under f's lock. */
int fut__ur_aq_push(struct ufd *f, int fd);
int fut__ur_aq_pop(struct ufd *f);
/* Before the owner of 'b' sleeps in a wait of '*timeout_ns' (not 0):
 * trims b's pools once per TRIM_NS, and shortens the sleep to TRIM_NS
 * while they hold anything (an idle ring empties them). */
void fut__ur_pools_idle(struct fut__backend *b, int64_t *timeout_ns);
/* Frees every block of b's pools (the ring's destroy). */
void fut__ur_pools_free(struct fut__backend *b);
/* Sets up the provided-buffer ring (group 0) and the fixed-file table
 * (best effort): 0 or a negative error. */
int fut__ur_setup_bufs(struct fut__backend *b);
/* Unmaps the buffers (after io_uring_queue_exit) and frees the slots. */
void fut__ur_bufs_free(struct fut__backend *b);
/* Where provided buffer 'bid' is. */
static inline char *ur_buf(struct fut__backend *b, uint16_t bid)
{
    return b->bufs + (size_t)bid * BUF_SIZE;
}
/* A CQE of a multishot RECV took buffer 'bid' / 'u' ended with
 * -ENOBUFS: the pool ran dry, and grows now when every group is low;
 * then 2 when a group has buffers (the next read re-arms a multishot),
 * 1 when none has (it reads once into a buffer of its own); 0 when u's
 * group was retired meanwhile (re-armed on another; not dry). Owner
 * only. */
void fut__ur_buf_taken(struct fut__backend *b, uint16_t bid);
int fut__ur_dry(struct fut__backend *b, struct uop *u);
/* The fd of 'f' is closing: its fixed-file slot (if any) is cleared and
 * freed, and it gets none again. On b's owner (else, unless the ring is
 * gone, it waits for the owner's call: REQ_CLOSE, FORGET). After the
 * SQEs naming the slot went out. */
void fut__ur_file_release(struct fut__backend *b, struct ufd *f);
/* Lifts R_DISABLED: the calling thread becomes the ring's issuer. */
void fut__ur_ring_enable(struct fut__backend *b);
/* Submits what is queued now (one io_uring_enter). */
void fut__ur_submit_now(struct fut__backend *b);
/* An SQE for op 'u' (a full SQ is submitted first); never NULL. On a
 * ring the caller does not own: u's own copy, which fut__ur_sqe_op posts
 * to the owner's inbox. */
struct io_uring_sqe *fut__ur_sqe_get(struct fut__backend *b, struct uop *u);
/* An SQE for what is not an op (cancels, the wake poll): owner only. */
struct io_uring_sqe *fut__ur_sqe_raw(struct fut__backend *b);
/* Adds b's op counts to fut__uring_ops_local / _foreign (b's thread, or
 * once no thread uses b). */
void fut__ur_count_flush(struct fut__backend *b);
/* Marks 's' as op 'u''s (in flight from now, or posted; counted). */
void fut__ur_sqe_op(struct fut__backend *b, struct io_uring_sqe *s,
                    struct uop *u);
/* Queues an ASYNC_CANCEL of 'u' (posted, on a ring not the caller's). */
void fut__ur_cancel_op(struct fut__backend *b, struct uop *u);
/* Posts 'r' to b's inbox and wakes b's owner if it sleeps. */
void fut__ur_post(struct fut__backend *b, struct ureq *r);
/* 'len', or fewer when a fault shortens a transfer of 'kind'. */
size_t fut__ur_shorten(int kind, size_t len);

/* ----------------------------------------------- probe.c */

/* Sets up a ring with the best flags the kernel has ('*coop': the
 * fallback flags, no R_DISABLED). */
int fut__ur_ring_setup(struct io_uring *ring, int *coop);
/* Lifts a ring's R_DISABLED: 0, or -errno (EINVAL: a COOP_TASKRUN ring,
 * never disabled). */
int fut__ur_ring_enable_raw(struct io_uring *ring);

#endif /* FUT_IO_URING_INTERNAL_H */
