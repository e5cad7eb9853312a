/* The io_uring backend's private state, shared by its two files:
 *   uring_ring.c      the ring's plumbing: the probe, the op and buffer
 *                     pools, the provided-buffer ring, taking and
 *                     submitting SQEs (calls nothing above it);
 *   backend_uring.c   the operations, completions, wait and the table
 *                     (its head comment has the rules).
 * Everything here runs on the thread that drives the ring.
 */
#ifndef FUT_IO_URING_INTERNAL_H
#define FUT_IO_URING_INTERNAL_H

#include <liburing.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "io/backend.h"
#include "io/io_internal.h"

#define SQ_ENTRIES 256
#define CQ_ENTRIES 4096
#define BUF_COUNT 128      /* provided buffers per ring (power of two):
                              the kernel takes them round-robin, so all
                              of them end up touched (resident): 512 KiB */
#define BUF_SIZE 4096      /* bytes each */
#define BUF_GROUP 0
#define COPY_MAX 65536     /* bytes of a write copied per op */
#define SOLO_MAX 16384     /* bytes of a single-shot recv's own buffer */
#define QUEUE_MAX (8 * BUF_SIZE) /* queued bytes that pause a multishot */
#define SMALL_BUF 2048     /* op buffers up to this come from a free list */

/* user_data of CQEs that are not ops. */
#define UD_WAKE 1u   /* the wake eventfd's multishot poll */
#define UD_IGNORE 2u /* cancels, poll removes */

static inline void count_enter(void)
{
    fut__fetch_add(&fut__uring_enters, 1, FUT__RELAXED);
}

enum ukind { U_RECV_MS, U_RECV, U_SEND, U_ACCEPT, U_POLL };

/* One operation in the kernel's hands. */
struct uop {
    struct uop *next;      /* free list */
    struct fut__io *io;    /* NULL once the fd is forgotten or the op
                              orphaned: retire on the CQE */
    uint8_t kind;          /* enum ukind */
    uint8_t done;          /* single-shot: its CQE came ('res') */
    uint8_t ended;         /* multishot: ended or cancelled by us */
    int term;              /* multishot: a fault ends it with this code */
    uint64_t gen;          /* b->gen at prep: unsubmitted while equal */
    long res;
    size_t len, off;       /* RECV: bytes received / copied out */
    char *buf;             /* RECV, SEND: our buffer (fut__alloc) */
    size_t cap;
    struct sockaddr_storage *addr; /* ACCEPT: the peer (fut__alloc) */
    socklen_t alen;
};

/* A received chunk on an fd's queue: provided buffer 'bid'. */
struct chunk {
    struct chunk *next;
    uint16_t bid;
    uint32_t len, off;
};

/* The backend's state of one fd (io->bstate[0]). */
struct ufd {
    struct uop *rd;        /* RECV or ACCEPT: in flight or done */
    struct uop *ms;        /* the multishot RECV while armed */
    struct uop *wr;        /* SEND of the current writer */
    struct uop *poll;      /* the watch's multishot POLL_ADD */
    struct chunk *head, *tail;
    size_t queued;         /* bytes on the queue */
    long end;              /* 1: not ended; 0: EOF; < 0: error (once) */
    int nobufs;            /* the multishot ran dry: next arm is solo */
    struct fut_waker rw, ww; /* the native reader's and writer's wakers
                              (no lock: the ring's thread only; readiness
                              waits use the fd's own slots) */
};

struct fut__backend {
    struct io_uring ring;
    int wakefd;
    int enabled;           /* R_DISABLED lifted */
    pid_t owner;           /* the thread that enabled it */
    uint64_t gen;          /* io_uring_enter calls that submitted */
    unsigned inflight;     /* ops whose last CQE has not come */
    struct io_uring_buf_ring *br;
    char *bufs;            /* BUF_COUNT * BUF_SIZE, mmap'd */
    struct uop *free_ops;
    struct chunk *free_chunks;
    void *free_bufs;       /* SMALL_BUF buffers, linked through their
                              first word */
    int wake_armed;
};

static inline struct ufd *ufd_of(struct fut__io *io)
{
    return (struct ufd *)io->bstate[0];
}

/* The waker slot of 'dir' in 'f'. */
static inline struct fut_waker *slot(struct ufd *f, unsigned dir)
{
    return dir == FUT__DIR_READ ? &f->rw : &f->ww;
}

static inline void park(struct ufd *f, unsigned dir, struct fut_context *cx)
{
    fut_waker_set(slot(f, dir), &cx->waker);
}

static inline void wake(struct fut__io *io, unsigned dir)
{
    struct fut_waker *w = slot(ufd_of(io), dir);
    if (!fut_waker_is_set(w))
        return;
    struct fut_waker t = *w;
    w->vt = NULL;
    fut_waker_wake(&t);
}

static inline void unpark(struct ufd *f, unsigned dir)
{
    struct fut_waker *w = slot(f, dir);
    if (!fut_waker_is_set(w))
        return;
    struct fut_waker t = *w;
    w->vt = NULL;
    fut_waker_drop(&t);
}

#ifdef FUT_DEBUG
static inline void check_thread(struct fut__backend *b)
{
    if (b->owner && b->owner != (pid_t)syscall(SYS_gettid))
        FUT_MISUSE("an io_uring runtime used from a second thread (a "
                   "current-thread runtime on io_uring is driven by one "
                   "thread: the first that ran it)");
}
#else
#define check_thread(b) ((void)0)
#endif

/* ------------------------------------------------ uring_ring.c */

/* A fresh op on 'io' (a free-list entry or a new allocation), or NULL. */
struct uop *fut__ur_uop_new(struct fut__backend *b, struct fut__io *io,
                            int kind);
/* Returns 'u' and its buffers to the free lists. */
void fut__ur_uop_free(struct fut__backend *b, struct uop *u);
/* Gives 'u' a buffer of at least 'cap' bytes: 0 or FUT_ENOMEM. */
int fut__ur_uop_buffer(struct fut__backend *b, struct uop *u, size_t cap);
/* The backend state of 'io', made on first use; NULL: no memory. */
struct ufd *fut__ur_ufd_get(struct fut__io *io);
/* Hands provided buffer 'bid' back to the kernel. */
void fut__ur_buf_return(struct fut__backend *b, uint16_t bid);
/* Queues 'len' bytes of provided buffer 'bid' on 'f' / pops the head. */
void fut__ur_chunk_push(struct fut__backend *b, struct ufd *f, uint16_t bid,
                        uint32_t len);
void fut__ur_chunk_pop(struct fut__backend *b, struct ufd *f);
/* Sets up the provided-buffer ring: 0 or a negative error. */
int fut__ur_setup_bufs(struct fut__backend *b);
/* Lifts R_DISABLED: the calling thread becomes the ring's issuer. */
void fut__ur_ring_enable(struct fut__backend *b);
/* Submits what is queued now (one io_uring_enter). */
void fut__ur_submit_now(struct fut__backend *b);
/* An SQE (a full SQ is submitted first); never NULL. */
struct io_uring_sqe *fut__ur_sqe_get(struct fut__backend *b);
/* Marks 's' as op 'u''s (in flight from now). */
void fut__ur_sqe_op(struct fut__backend *b, struct io_uring_sqe *s,
                    struct uop *u);
/* Queues an ASYNC_CANCEL of 'u'. */
void fut__ur_cancel_op(struct fut__backend *b, struct uop *u);
/* 'len', or fewer when a fault shortens a transfer of 'kind'. */
size_t fut__ur_shorten(int kind, size_t len);
/* Sets up a ring with the best flags the kernel has ('*coop': the
 * fallback flags, no R_DISABLED). */
int fut__ur_ring_setup(struct io_uring *ring, int *coop);

#endif /* FUT_IO_URING_INTERNAL_H */
