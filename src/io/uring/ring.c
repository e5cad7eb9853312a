/* SPDX-License-Identifier: MIT */
/* The io_uring backend's plumbing (internal.h): the op,
 * buffer and chunk pools, the provided-buffer ring, and taking and
 * submitting SQEs. It calls nothing in the files above it.
 *
 * The pools (struct upool: free ops, SMALL_BUF send/recv buffers, queue
 * chunks), the rules that keep their memory bounded whatever thread
 * issues an op and whatever thread frees it:
 *   - a pool is one thread's: a ring's pools are touched only by the
 *     thread whose ring it is (a current-thread ring's one thread; on a
 *     multi-thread runtime the worker with fut__ur_here == ring), so no
 *     pool takes a lock;
 *   - a block is taken from, and given back to, the pools of the calling
 *     thread (pool_of), not those of the fd's ring: an op a worker issues
 *     on another worker's fd comes from its own pools, and whoever frees
 *     it (the fd's owner at the CQE, or the task's worker at the READY
 *     poll) puts it in its own. Blocks move between threads' pools with
 *     the work; a thread with no ring (a block_on thread of a
 *     multi-thread runtime, a worker after its ring retired) uses the
 *     heap;
 *   - a pool keeps at most its bound (OPS_KEEP, BUFS_KEEP, CHUNKS_KEEP);
 *     a block given back to a full pool goes to the heap. So however
 *     unevenly threads issue and free, the pools hold at most
 *     (OPS_KEEP x 176 B + BUFS_KEEP x 2 KiB + CHUNKS_KEEP x 24 B) per
 *     ring, 175 KiB;
 *   - a pool shrinks when its blocks go unused: it notes the fewest
 *     blocks it held since its last trim ('low'); at most once per
 *     TRIM_NS, when the owner is about to sleep, that many (blocks that
 *     sat unused the whole while) go to the heap. While a pool holds
 *     anything the owner sleeps at most TRIM_NS, so a ring that goes idle
 *     empties its pools within 2 x TRIM_NS and then sleeps as long as it
 *     is asked;
 *   - a listener's accept queue grows past ACCEPT_MAX only for a burst,
 *     and goes back to none when emptied;
 *   - destroy frees what the pools hold (by then no thread uses them).
 *
 * The provided buffers grow with the connections and shrink when they
 * idle (all of it the owner thread's: the CQEs, the arming of a
 * multishot RECV - an SQE another thread made gets its group when the
 * owner issues it - the trim):
 *   - one region of BUF_COUNT x BUF_SIZE is reserved at setup (untouched
 *     pages cost nothing); group g (a buffer ring of its own, bgid g, at
 *     page g of 'brs') owns ids g x GROUP_BUFS .. + GROUP_BUFS - 1, so a
 *     CQE's buffer id says both where the bytes are and whose they are;
 *   - group 0 is registered at setup and stays. A multishot RECV that
 *     ends with -ENOBUFS from a live group means the pool ran dry: when
 *     every group is below half full, group 'ngroups' is registered at
 *     that CQE (up to GROUPS_MAX; one per dry CQE that finds them all
 *     low, so a burst of them adds one). While some group has buffers
 *     the reader re-arms a multishot; only when none has does it read
 *     once into a buffer of its own (the single-shot RECV);
 *   - each arm takes the group with the most buffers in the kernel's
 *     hands ('avail': minus one per CQE that took one, plus one when it is
 *     handed back), so connections spread over the groups;
 *   - a trim (with the pools': at most once per TRIM_NS, when the owner is
 *     about to sleep) unregisters the top group while it is not group 0
 *     and had every buffer in the kernel's hands the whole while since the
 *     last trim ('low'; a new group counts from the first trim after it
 *     came), with no CQE waiting to be reaped; its pages go
 *     back (MADV_DONTNEED). Multishots still armed on it end with
 *     -ENOBUFS at their next bytes, which is not "dry" (their 'bgen' is
 *     not the group's any more): they re-arm on a live group.
 *
 * Fixed files: each ring registers a sparse table of 'nfiles' slots at
 * setup (none when the kernel or RLIMIT_NOFILE refuses: plain fds, as
 * before). The owner, issuing an op of an fd that has no slot, takes one
 * (io_uring_register_files_update: one call per fd) and issues with
 * IOSQE_FIXED_FILE; ops another thread prepared get it when the owner
 * issues them. A full table leaves the fd plain. The slot holds a
 * reference to the file, so it is released (cleared, then free again) by
 * the owner when the fd closes: at the last handle's unwatch after the
 * SQEs naming it went out, at the inbox's CLOSE or FORGET, and never
 * taken again for that fd (fslot -1). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "io/uring/internal.h"
#include "platform/sys.h"

fut__aword fut__uring_enters;
fut__aword fut__uring_nobufs;
fut__aword fut__uring_accept_arms;
fut__aword fut__uring_ops_local;
fut__aword fut__uring_ops_foreign;
fut__aword fut__uring_fixed_ops;
fut__aword fut__uring_files_used;
fut__aword fut__uring_bufs;
_Thread_local struct fut__backend *fut__ur_here;
/* The ring whose lock this thread holds, and how deep in the backend's
 * entries it is (rescue.c's rules "Rescue"; ur_enter). */
_Thread_local struct fut__backend *fut__ur_held;
_Thread_local int fut__ur_depth;

/* -------------------------------------------------------------- pools */

/* The pools the calling thread may use for work on ring 'b' (rules
 * above), or NULL: the heap. */
static struct fut__backend *pool_of(struct fut__backend *b)
{
    return b->shared ? fut__ur_here : b;
}

static void *pool_take(struct upool *p)
{
    void *x = p->head;
    if (!x)
        return NULL;
    p->head = *(void **)x;
    if (--p->n < p->low)
        p->low = p->n;
    return x;
}

/* Keeps 'x' in 'p' (1), or leaves it to the caller (0: 'p' is full). */
static int pool_put(struct upool *p, void *x, unsigned keep)
{
    if (p->n >= keep)
        return 0;
    *(void **)x = p->head;
    p->head = x;
    p->n++;
    return 1;
}

/* Frees 'count' blocks of 'size' from 'p'; then 'low' starts again. */
static void pool_drop(struct upool *p, unsigned count, size_t size)
{
    for (; count && p->head; count--) {
        void *x = p->head;
        p->head = *(void **)x;
        p->n--;
        fut__free(x, size);
    }
    p->low = p->n;
}

static void groups_trim(struct fut__backend *b);

void fut__ur_pools_idle(struct fut__backend *b, int64_t *timeout_ns)
{
    if (!(b->ops.n | b->chunks.n | b->sbufs.n) && b->ngroups <= 1)
        return;
    int64_t now = fut_now_ns();
    if (now - b->trim_at >= TRIM_NS) {
        b->trim_at = now;
        pool_drop(&b->ops, b->ops.low, sizeof(struct uop));
        pool_drop(&b->chunks, b->chunks.low, sizeof(struct chunk));
        pool_drop(&b->sbufs, b->sbufs.low, SMALL_BUF);
        groups_trim(b);
    }
    if (((b->ops.n | b->chunks.n | b->sbufs.n) || b->ngroups > 1) &&
        (*timeout_ns < 0 || *timeout_ns > TRIM_NS))
        *timeout_ns = TRIM_NS; /* wake to trim what stays unused */
}

void fut__ur_pools_free(struct fut__backend *b)
{
    pool_drop(&b->ops, b->ops.n, sizeof(struct uop));
    pool_drop(&b->chunks, b->chunks.n, sizeof(struct chunk));
    pool_drop(&b->sbufs, b->sbufs.n, SMALL_BUF);
}

struct uop *fut__ur_uop_new(struct fut__backend *b, struct fut__io *io,
                            int kind)
{
    struct fut__backend *p = pool_of(b);
    struct uop *u = p ? pool_take(&p->ops) : NULL;
    if (!u && !(u = fut__alloc(sizeof *u)))
        return NULL;
    /* Every field, without a memset of the whole (the hot path); another
     * thread's ring: the SQE is made in u->own, posted to the owner. */
    u->sqe = ur_mine(b) ? NULL : &u->own;
    u->next = NULL;
    u->io = io;
    u->f = ufd_of(io);
    u->f->nops++;
    u->kind = (uint8_t)kind;
    u->done = u->ended = 0;
    u->term = 0;
    u->gen = 0;
    u->res = 0;
    u->len = u->off = u->cap = 0;
    u->buf = NULL;
    u->issued = u->posted = u->want_cancel = u->zombie = 0;
    u->req.type = REQ_OP;
    return u;
}

static void buf_free(struct fut__backend *b, char *buf, size_t cap)
{
    struct fut__backend *p = pool_of(b);
    if (!(cap == SMALL_BUF && p && pool_put(&p->sbufs, buf, BUFS_KEEP)))
        fut__free(buf, cap);
}

void fut__ur_uop_free(struct fut__backend *b, struct uop *u)
{
    if (u->buf)
        buf_free(b, u->buf, u->cap);
    if (u->f)
        u->f->nops--;
    u->sqe = NULL;
    u->buf = NULL;
    u->f = NULL;
    struct fut__backend *p = pool_of(b);
    if (!(p && pool_put(&p->ops, u, OPS_KEEP)))
        fut__free(u, sizeof *u);
}

void fut__ur_retire(struct fut__backend *b, struct uop *u)
{
    if (u->posted) {
        u->zombie = 1;
        u->io = NULL;
        return;
    }
    fut__ur_uop_free(b, u);
}

int fut__ur_uop_buffer(struct fut__backend *b, struct uop *u, size_t cap)
{
    struct fut__backend *p = pool_of(b);
    u->buf = NULL;
    if (cap <= SMALL_BUF) {
        cap = SMALL_BUF;
        if (p)
            u->buf = pool_take(&p->sbufs);
    }
    if (!u->buf && !(u->buf = fut__alloc(cap)))
        return FUT_ENOMEM;
    u->cap = cap;
    return 0;
}

struct ufd *fut__ur_ufd_get(struct fut__backend *b, struct fut__io *io)
{
    struct ufd *f = ufd_of(io);
    if (f)
        return f;
    size_t size = b->shared ? sizeof(struct ufd_mt) : sizeof *f;
    f = fut__alloc(size);
    if (!f)
        return NULL;
    memset(f, 0, size);
    f->end = 1;
    f->io = io; /* valid until 'dead' (internal.h's rules "One record") */
    f->owner = b;
    f->shared = b->shared;
    if (f->shared) {
        struct ufd_mt *m = ufd_mt(f);
        m->close_req.type = REQ_CLOSE;
        m->forget_req.type = REQ_FORGET;
    }
    /* Release: pairs with backend.c's ufd_load (acquire). */
    fut__store_slot(&io->bstate[0], f, FUT__RELEASE);
    return f;
}

int fut__ur_aq_push(struct ufd *f, int fd)
{
    struct acceptq *q = f->aq;
    if (!q || q->n == q->cap) { /* grows past ACCEPT_MAX: CQEs that come
                                   after the pause's cancel */
        unsigned cap = q ? q->cap * 2 : ACCEPT_MAX;
        struct acceptq *nq = fut__alloc(sizeof *nq + cap * sizeof(int));
        if (!nq)
            return FUT_ENOMEM;
        nq->head = 0;
        nq->n = 0;
        nq->cap = cap;
        for (; q && q->n; q->n--, q->head = (q->head + 1) % q->cap)
            nq->fd[nq->n++] = q->fd[q->head];
        if (q)
            fut__free(q, sizeof *q + q->cap * sizeof(int));
        f->aq = q = nq;
    }
    q->fd[(q->head + q->n++) % q->cap] = fd;
    return 0;
}

int fut__ur_aq_pop(struct ufd *f)
{
    struct acceptq *q = f->aq;
    if (!q || q->n == 0)
        return -1;
    int fd = q->fd[q->head];
    q->head = (q->head + 1) % q->cap;
    if (--q->n == 0 && q->cap > ACCEPT_MAX) { /* a burst's: gone */
        fut__free(q, sizeof *q + q->cap * sizeof(int));
        f->aq = NULL;
    }
    return fd;
}

void fut__ur_ufd_free(struct ufd *f)
{
    if (f->aq)
        fut__free(f->aq, sizeof *f->aq + f->aq->cap * sizeof(int));
    if (f->shared) {
        fut__free(f, sizeof(struct ufd_mt));
        return;
    }
    fut__free(f, sizeof *f);
}

/* ------------------------------------------------------------- inbox */

/* After a post (the inbox lock released): wake the owner if it sleeps.
 * Seq_cst: the Dekker pair of struct fut__backend's 'parked'. */
static void kick(struct fut__backend *b)
{
    fut__store(&b->ipending, 1, FUT__SEQ_CST);
    if (fut__load(&b->parked, FUT__SEQ_CST))
        fut__sys_eventfd_signal(b->wakefd);
}

void fut__ur_post(struct fut__backend *b, struct ureq *r)
{
    fut__mutex_lock(&b->ilock);
    r->next = NULL;
    if (b->itail)
        b->itail->next = r;
    else
        b->ihead = r;
    b->itail = r;
    fut__mutex_unlock(&b->ilock);
    kick(b);
}

/* Hands provided buffer 'bid' back to the kernel. */
void fut__ur_buf_return(struct fut__backend *b, uint16_t bid)
{
    if (!ur_mine(b)) { /* the owner hands it to the kernel (inbox) */
        fut__mutex_lock(&b->ilock);
        b->ibids[b->nbids++] = bid; /* at most BUF_COUNT are out */
        fut__mutex_unlock(&b->ilock);
        kick(b);
        return;
    }
    unsigned g = bid / GROUP_BUFS;
    struct io_uring_buf_ring *br =
        (struct io_uring_buf_ring *)(void *)(b->brs + g * b->pg);
    io_uring_buf_ring_add(br, ur_buf(b, bid), BUF_SIZE, bid,
                          io_uring_buf_ring_mask(GROUP_BUFS), 0);
    io_uring_buf_ring_advance(br, 1);
    b->grp[g].avail++;
}

void fut__ur_buf_taken(struct fut__backend *b, uint16_t bid)
{
    struct ugroup *g = &b->grp[bid / GROUP_BUFS];
    if (--g->avail < g->low)
        g->low = g->avail;
}

void fut__ur_chunk_push(struct fut__backend *b, struct ufd *f, uint16_t bid,
                        uint32_t len)
{
    struct fut__backend *p = pool_of(b);
    struct chunk *c = p ? pool_take(&p->chunks) : NULL;
    if (!c && !(c = fut__alloc(sizeof *c))) {
        /* No memory to queue it: the bytes cannot be kept. Report the
         * stream as failed rather than lose bytes silently. */
        fut__ur_buf_return(b, bid);
        f->end = FUT_ENOMEM;
        return;
    }
    c->next = NULL;
    c->bid = bid;
    c->len = len;
    c->off = 0;
    if (f->tail)
        f->tail->next = c;
    else
        f->head = c;
    f->tail = c;
    f->queued += len;
}

void fut__ur_chunk_pop(struct fut__backend *b, struct ufd *f)
{
    struct chunk *c = f->head;
    f->head = c->next;
    if (!f->head)
        f->tail = NULL;
    fut__ur_buf_return(b, c->bid);
    struct fut__backend *p = pool_of(b);
    if (!(p && pool_put(&p->chunks, c, CHUNKS_KEEP)))
        fut__free(c, sizeof *c);
}

/* --------------------------------------------------------------- SQEs */

/* Lifts R_DISABLED: this thread becomes the ring's single issuer. */
void fut__ur_ring_enable(struct fut__backend *b)
{
    if (b->enabled)
        return;
    b->enabled = 1;
    b->owner = (pid_t)syscall(SYS_gettid);
    int r = fut__ur_ring_enable_raw(&b->ring);
    if (r < 0 && r != -EINVAL)
        FUT_MISUSE("io_uring: enabling the ring failed");
    io_uring_register_ring_fd(&b->ring); /* best effort (5.18) */
}

void fut__ur_submit_now(struct fut__backend *b)
{
    fut__ur_ring_enable(b);
    int r;
    do {
        count_enter();
        r = io_uring_submit(&b->ring);
    } while (r == -EINTR);
    b->gen++;
}

/* An SQE; a full SQ is submitted first (the batch's only early enter). */
struct io_uring_sqe *fut__ur_sqe_raw(struct fut__backend *b)
{
    struct fut__uring_faults *fx = fut__uring_faults;
    struct io_uring_sqe *s = NULL;
    if (!(fx && fx->sq_full && fx->sq_full()))
        s = io_uring_get_sqe(&b->ring);
    if (!s) {
        fut__ur_submit_now(b);
        s = io_uring_get_sqe(&b->ring);
    }
    return s; /* never NULL: an empty SQ has room */
}

struct io_uring_sqe *fut__ur_sqe_get(struct fut__backend *b, struct uop *u)
{
    if (ur_mine(b))
        return fut__ur_sqe_raw(b);
    memset(u->sqe, 0, sizeof *u->sqe); /* u->own (fut__ur_uop_new) */
    return u->sqe;
}

void fut__ur_count_flush(struct fut__backend *b)
{
    if (b->n_local)
        fut__fetch_add(&fut__uring_ops_local, b->n_local, FUT__RELAXED);
    if (b->n_foreign)
        fut__fetch_add(&fut__uring_ops_foreign, b->n_foreign, FUT__RELAXED);
    if (b->n_fixed)
        fut__fetch_add(&fut__uring_fixed_ops, b->n_fixed, FUT__RELAXED);
    b->n_local = b->n_foreign = b->n_fixed = 0;
}

/* Counts an op issued by the calling thread: on its ring's counters
 * (the calling thread's alone), or at once when it has no ring. */
static void count_op(struct fut__backend *b, int foreign)
{
    struct fut__backend *h = b->shared ? fut__ur_here : b;
    if (!h) {
        fut__fetch_add(foreign ? &fut__uring_ops_foreign
                               : &fut__uring_ops_local,
                       1, FUT__RELAXED);
        return;
    }
    if (foreign)
        h->n_foreign++;
    else
        h->n_local++;
    if (h->n_local + h->n_foreign >= OPS_FLUSH)
        fut__ur_count_flush(h);
}

static void fix_file(struct fut__backend *b, struct io_uring_sqe *s,
                     struct uop *u);
static unsigned group_pick(struct fut__backend *b);

void fut__ur_sqe_op(struct fut__backend *b, struct io_uring_sqe *s,
                    struct uop *u)
{
    io_uring_sqe_set_data(s, u);
    if (s == u->sqe) { /* another thread's: the owner issues it */
        count_op(b, 1);
        u->posted = 1;
        fut__ur_post(b, &u->req);
        return;
    }
    /* The owner issues it: its fixed file, its buffer group. */
    if (b->nfiles)
        fix_file(b, s, u);
    if (s->flags & IOSQE_BUFFER_SELECT) {
        unsigned g = group_pick(b);
        s->buf_group = (uint16_t)g;
        u->bgid = (uint8_t)g;
        u->bgen = b->grp[g].gen;
    }
    count_op(b, 0);
    u->issued = 1;
    u->gen = b->gen;
    b->inflight++;
}

void fut__ur_cancel_op(struct fut__backend *b, struct uop *u)
{
    if (!u->issued || !ur_mine(b)) {
        /* Not sent yet (the inbox then drops it), or not our ring. */
        u->want_cancel = 1;
        if (!u->posted) {
            u->posted = 1;
            fut__ur_post(b, &u->req);
        }
        return;
    }
    struct io_uring_sqe *s = fut__ur_sqe_raw(b);
    io_uring_prep_cancel(s, u, 0);
    io_uring_sqe_set_data64(s, UD_IGNORE);
}

size_t fut__ur_shorten(int kind, size_t len)
{
    struct fut__uring_faults *fx = fut__uring_faults;
    if (fx && fx->shorten && len > 1) {
        size_t n = fx->shorten(kind, len);
        if (n >= 1 && n < len)
            return n;
    }
    return len;
}

/* ---------------------------------------------------- buffer groups */

/* Registers group g (its ring at page g, its buffers handed over). */
static int group_add(struct fut__backend *b, unsigned g)
{
    struct io_uring_buf_ring *br =
        (struct io_uring_buf_ring *)(void *)(b->brs + g * b->pg);
    io_uring_buf_ring_init(br);
    struct io_uring_buf_reg reg;
    memset(&reg, 0, sizeof reg);
    reg.ring_addr = (uintptr_t)br;
    reg.ring_entries = GROUP_BUFS;
    reg.bgid = (uint16_t)g;
    int e = io_uring_register_buf_ring(&b->ring, &reg, 0);
    if (e < 0)
        return e;
    for (unsigned i = 0; i < GROUP_BUFS; i++) {
        unsigned bid = g * GROUP_BUFS + i;
        io_uring_buf_ring_add(br, ur_buf(b, (uint16_t)bid), BUF_SIZE,
                              (unsigned short)bid,
                              io_uring_buf_ring_mask(GROUP_BUFS), (int)i);
    }
    io_uring_buf_ring_advance(br, GROUP_BUFS);
    b->grp[g].avail = GROUP_BUFS;
    b->grp[g].low = 0; /* new: not "unused" before a whole trim period */
    b->grp[g].gen++;
    fut__fetch_add(&fut__uring_bufs, GROUP_BUFS, FUT__RELAXED);
    return 0;
}

/* The group a multishot RECV armed now selects from: the one with the
 * most buffers in the kernel's hands. */
static unsigned group_pick(struct fut__backend *b)
{
    unsigned best = 0;
    for (unsigned g = 1; g < b->ngroups; g++)
        if (b->grp[g].avail > b->grp[best].avail)
            best = g;
    return best;
}

int fut__ur_dry(struct fut__backend *b, struct uop *u)
{
    if (u->bgid >= b->ngroups || b->grp[u->bgid].gen != u->bgen)
        return 0; /* its group was retired: not dry */
    unsigned best = group_pick(b);
    if (b->grp[best].avail < GROUP_BUFS / 2 && b->ngroups < GROUPS_MAX &&
        !b->grow_err) {
        /* Every group is low: one more (a burst of dry CQEs adds one; the
         * others re-arm on it). */
        if (group_add(b, b->ngroups) == 0)
            best = b->ngroups++;
        else
            b->grow_err = 1; /* dry reads go solo until the next trim */
    }
    return b->grp[best].avail > 0 ? 2 : 1;
}

/* Retires the top groups that sat unused since the last trim (rules
 * above); then the low-water marks start again. */
static void groups_trim(struct fut__backend *b)
{
    while (b->ngroups > 1 && io_uring_cq_ready(&b->ring) == 0) {
        unsigned g = b->ngroups - 1;
        struct ugroup *x = &b->grp[g];
        if (x->low < GROUP_BUFS || x->avail < GROUP_BUFS)
            break;
        if (io_uring_unregister_buf_ring(&b->ring, (int)g) < 0)
            break;
        b->ngroups--;
        fut__fetch_sub(&fut__uring_bufs, GROUP_BUFS, FUT__RELAXED);
        (void)madvise(b->bufs + (size_t)g * GROUP_BUFS * BUF_SIZE,
                      (size_t)GROUP_BUFS * BUF_SIZE, MADV_DONTNEED);
        (void)madvise(b->brs + g * b->pg, b->pg, MADV_DONTNEED);
    }
    for (unsigned g = 0; g < b->ngroups; g++)
        b->grp[g].low = b->grp[g].avail;
    b->grow_err = 0;
}

/* ------------------------------------------------------- fixed files */

/* A sparse table of FILES_MAX slots (fewer under RLIMIT_NOFILE), or none
 * (nfiles 0: the kernel has no sparse tables, 5.19, or refused: plain
 * fds, not an error). 0, or FUT_ENOMEM when the free-slot stack cannot
 * be allocated (an allocation failure is the caller's, as every other:
 * the ring is not made, rather than made without its table). */
static int files_setup(struct fut__backend *b)
{
    unsigned n = FILES_MAX;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < n)
        n = (unsigned)rl.rlim_cur;
    if (n < 64)
        return 0;
    b->ffree = fut__alloc(n * sizeof(int));
    if (!b->ffree)
        return FUT_ENOMEM;
    if (io_uring_register_files_sparse(&b->ring, n) < 0) {
        fut__free(b->ffree, n * sizeof(int));
        b->ffree = NULL;
        return 0;
    }
    b->nfiles = n;
    return 0;
}

/* Gives op u's SQE 's' u's fd's slot, taken now if it has none (rules
 * above); leaves it plain when none can be had. */
static void fix_file(struct fut__backend *b, struct io_uring_sqe *s,
                     struct uop *u)
{
    struct ufd *f = u->f;
    if (!u->io || f->fslot < 0 || f->dead || s->fd != u->io->fd ||
        (s->flags & IOSQE_FIXED_FILE))
        return;
    if (f->fslot == 0) {
        int slot;
        if (b->nffree)
            slot = b->ffree[--b->nffree];
        else if (b->fhi < b->nfiles)
            slot = (int)b->fhi++;
        else
            return; /* full: plain */
        int fd = s->fd;
        if (io_uring_register_files_update(&b->ring, (unsigned)slot, &fd,
                                           1) != 1) {
            b->ffree[b->nffree++] = slot;
            return;
        }
        f->fslot = slot + 1;
        fut__fetch_add(&fut__uring_files_used, 1, FUT__RELAXED);
    }
    s->fd = f->fslot - 1;
    s->flags |= IOSQE_FIXED_FILE;
    /* Counted on the calling thread's ring, as count_op does: a rescuer
     * fills the SQEs of a peer's ring while that peer's own thread may
     * flush its counters without the ring's lock (TSan saw the race). */
    struct fut__backend *h = b->shared ? fut__ur_here : b;
    if (h)
        h->n_fixed++;
    else
        fut__fetch_add(&fut__uring_fixed_ops, 1, FUT__RELAXED);
}

void fut__ur_file_release(struct fut__backend *b, struct ufd *f)
{
    if (f->fslot <= 0 || b->dead) { /* none, or the table went with the
                                        ring (fut__ur_bufs_free counts) */
        f->fslot = -1;
        return;
    }
    if (!ur_mine(b))
        return; /* the owner's CLOSE or FORGET does it */
    int slot = f->fslot - 1;
    f->fslot = -1;
    if (io_uring_sq_ready(&b->ring) > 0)
        fut__ur_submit_now(b); /* no SQE naming the slot outlives it */
    int none = -1;
    if (io_uring_register_files_update(&b->ring, (unsigned)slot, &none, 1) !=
        1)
        return; /* the slot stays taken (never handed out again) */
    b->ffree[b->nffree++] = slot;
    fut__fetch_sub(&fut__uring_files_used, 1, FUT__RELAXED);
}

int fut__ur_setup_bufs(struct fut__backend *b)
{
    long pg = sysconf(_SC_PAGESIZE);
    b->pg = pg > 0 ? (size_t)pg : 4096;
    int e = files_setup(b); /* first: its allocation can fail */
    if (e < 0)
        return e;
    void *r = mmap(NULL, GROUPS_MAX * b->pg, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED) {
        fut__ur_bufs_free(b);
        return FUT_ENOMEM;
    }
    void *m = mmap(NULL, (size_t)BUF_COUNT * BUF_SIZE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        munmap(r, GROUPS_MAX * b->pg);
        fut__ur_bufs_free(b);
        return FUT_ENOMEM;
    }
    b->brs = r;
    b->bufs = m;
    e = group_add(b, 0);
    if (e < 0) {
        fut__ur_bufs_free(b); /* ngroups 0: nothing counted yet */
        return e;
    }
    b->ngroups = 1;
    return 0;
}

void fut__ur_bufs_free(struct fut__backend *b)
{
    if (b->bufs) {
        munmap(b->bufs, (size_t)BUF_COUNT * BUF_SIZE);
        munmap(b->brs, GROUPS_MAX * b->pg);
        fut__fetch_sub(&fut__uring_bufs, (size_t)b->ngroups * GROUP_BUFS,
                       FUT__RELAXED);
        b->bufs = b->brs = NULL;
        b->ngroups = 0;
    }
    if (b->ffree) {
        fut__fetch_sub(&fut__uring_files_used, b->fhi - b->nffree,
                       FUT__RELAXED);
        fut__free(b->ffree, b->nfiles * sizeof(int));
        b->ffree = NULL;
        b->nfiles = 0;
    }
}
