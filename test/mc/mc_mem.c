/* SPDX-License-Identifier: MIT */
/* The memory model of mc: atomic words (SC, or x86-TSO with per-thread
 * FIFO store buffers), vector-clock happens-before over C11 orderings,
 * race checking of plain-access annotations, and tracked allocation.
 *
 * Values live in the program's own atomic objects ("main memory"); the
 * checker keeps, per location, the clock an acquiring reader of the
 * current value obtains (the release sequence of C++20: a store starts a
 * new one, an RMW continues it) and each thread's last access (to check
 * frees). Everything is reset between executions by bumping a generation.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc_int.h"

/* ------------------------------------------------------------- tables */

#define LOC_BITS 10
#define SHADOW_BITS 12
#define MAX_LABELS 32

struct loc {
    const void *addr;
    unsigned gen;
    int id;
    struct mc_vc rel; /* what an acquire of the current value gets */
    uint32_t acc[MC_MAX_THREADS]; /* each thread's last access (epoch) */
    const char *acc_file[MC_MAX_THREADS];
    int acc_line[MC_MAX_THREADS];
};

/* Shadow of one 8-byte word of plain data (FastTrack-style epochs). */
struct shadow {
    uintptr_t addr;
    unsigned gen;
    int w_tid;
    uint32_t w_clk; /* 0: never written */
    const char *w_file;
    int w_line;
    uint32_t r_clk[MC_MAX_THREADS];
    const char *r_file[MC_MAX_THREADS];
    int r_line[MC_MAX_THREADS];
};

struct block {
    char *p;
    size_t n;
    const char *file, *ffile;
    int line, fline, tid, ftid, freed;
};

struct label {
    const char *p;
    size_t n;
    const char *name;
};

static struct loc locs[1 << LOC_BITS];
static struct loc *loc_list[1 << LOC_BITS];
static int nlocs;
static struct shadow shadows[1 << SHADOW_BITS];
static struct shadow *shadow_list[1 << SHADOW_BITS];
static int nshadows;
static unsigned gen = 1;
static struct block *blocks;
static int nblocks, cap_blocks, nfreed;
static struct label labels[MAX_LABELS];
static int nlabels;

static size_t slot_of(uintptr_t a, int bits)
{
    return (size_t)(((uint64_t)(a >> 3) * 0x9E3779B97F4A7C15ull) >>
                    (64 - bits));
}

static struct loc *loc_get(const void *addr)
{
    size_t mask = (1u << LOC_BITS) - 1;
    for (size_t i = slot_of((uintptr_t)addr, LOC_BITS);; i = (i + 1) & mask) {
        struct loc *l = &locs[i];
        if (l->gen == gen && l->addr == addr)
            return l;
        if (l->gen != gen) {
            if (nlocs == (1 << LOC_BITS) / 2)
                mc__fail(MC_FAIL_USAGE, "too many atomic locations");
            memset(l, 0, sizeof *l);
            l->addr = addr;
            l->gen = gen;
            l->id = nlocs + 1;
            loc_list[nlocs++] = l;
            return l;
        }
    }
}

static struct shadow *shadow_get(uintptr_t w)
{
    size_t mask = (1u << SHADOW_BITS) - 1;
    for (size_t i = slot_of(w, SHADOW_BITS);; i = (i + 1) & mask) {
        struct shadow *s = &shadows[i];
        if (s->gen == gen && s->addr == w)
            return s;
        if (s->gen != gen) {
            if (nshadows == (1 << SHADOW_BITS) / 2)
                mc__fail(MC_FAIL_USAGE, "too many plain-data words");
            memset(s, 0, sizeof *s);
            s->addr = w;
            s->gen = gen;
            shadow_list[nshadows++] = s;
            return s;
        }
    }
}

/* ------------------------------------------------------------ naming */

static struct block *block_of(const void *p)
{
    const char *c = p;
    for (int i = 0; i < nblocks; i++)
        if (c >= blocks[i].p &&
            c < blocks[i].p + (blocks[i].n ? blocks[i].n : 1))
            return &blocks[i];
    return 0;
}

void mc_label(const void *p, size_t n, const char *name)
{
    if (!mc__g.active || nlabels == MAX_LABELS)
        return;
    labels[nlabels++] = (struct label){p, n, name};
}

const char *mc__addr_name(const void *p, char *buf, size_t n)
{
    const char *c = p;
    for (int i = nlabels - 1; i >= 0; i--)
        if (c >= labels[i].p && c < labels[i].p + labels[i].n) {
            snprintf(buf, n, "%s+%zu", labels[i].name,
                     (size_t)(c - labels[i].p));
            return buf;
        }
    struct block *b = block_of(p);
    if (b) {
        snprintf(buf, n, "blk%d+%zu", (int)(b - blocks) + 1,
                 (size_t)(c - b->p));
        return buf;
    }
    snprintf(buf, n, "%p", p);
    return buf;
}

static const char *mo_name(int mo)
{
    static const char *const names[] = {"relaxed", "consume", "acquire",
                                        "release", "acq_rel", "seq_cst"};
    return mo >= 0 && mo <= 5 ? names[mo] : "?";
}

static int is_acq(int mo)
{
    return mo == memory_order_consume || mo == memory_order_acquire ||
           mo == memory_order_acq_rel || mo == memory_order_seq_cst;
}

static int is_rel(int mo)
{
    return mo == memory_order_release || mo == memory_order_acq_rel ||
           mo == memory_order_seq_cst;
}

/* ------------------------------------------------- use-after-free checks */

/* Fails when [p, p+n) touches a freed block. */
static void check_live(const void *p, size_t n, const char *what,
                       const char *file, int line)
{
    if (!nfreed)
        return;
    const char *c = p;
    for (int i = 0; i < nblocks; i++) {
        struct block *b = &blocks[i];
        if (!b->freed || c + n <= b->p || c >= b->p + b->n)
            continue;
        char nb[64];
        mc__fail(MC_FAIL_UAF,
                 "use after free: %s of %s by T%d at %s:%d; the block was "
                 "allocated at %s:%d and freed by T%d at %s:%d",
                 what, mc__addr_name(p, nb, sizeof nb), mc__g.cur,
                 mc__base(file), line, mc__base(b->file), b->line, b->ftid,
                 mc__base(b->ffile), b->fline);
    }
}

int mc_block_live(const void *p)
{
    struct block *b = block_of(p);
    return b && !b->freed;
}

/* ------------------------------------------------------ store buffers */

static struct mc_sb_entry *sb_at(struct mc_thread *t, int i)
{
    return &t->sb[(t->sb_head + i) % MC_SB_MAX];
}

int mc__sb_has(const struct mc_thread *t, const void *addr)
{
    for (int i = 0; i < t->sb_len; i++)
        if (t->sb[(t->sb_head + i) % MC_SB_MAX].addr == addr)
            return 1;
    return 0;
}

/* TSO store forwarding: a load sees its own newest buffered store. */
static int sb_newest(struct mc_thread *t, const void *addr, uintptr_t *v)
{
    for (int i = t->sb_len - 1; i >= 0; i--)
        if (sb_at(t, i)->addr == addr) {
            *v = sb_at(t, i)->val;
            return 1;
        }
    return 0;
}

/* A write reaching main memory: spinning threads may now see a change. */
static void mem_write(_Atomic uintptr_t *p, uintptr_t v)
{
    atomic_store_explicit(p, v, memory_order_relaxed);
    mc__wake_spinners(-1);
}

void mc__sb_flush_one(struct mc_thread *t)
{
    struct mc_sb_entry e = *sb_at(t, 0);
    t->sb_head = (t->sb_head + 1) % MC_SB_MAX;
    t->sb_len--;
    check_live(e.addr, sizeof *e.addr, "buffered store (flushed now)", e.file,
               e.line);
    struct loc *l = loc_get(e.addr);
    l->rel = e.rel; /* a plain store starts a new release sequence */
    mem_write(e.addr, e.val);
    if (mc__g.tracing) {
        char nb[64];
        mc__trace("T%d flush     %s = %#lx (store at %s:%d)",
                  (int)(t - mc__g.th), mc__addr_name(e.addr, nb, sizeof nb),
                  (unsigned long)e.val, mc__base(e.file), e.line);
    }
}

void mc__sb_drain(struct mc_thread *t)
{
    while (t->sb_len)
        mc__sb_flush_one(t);
}

static void sb_push(struct mc_thread *t, _Atomic uintptr_t *p, uintptr_t v,
                    const struct mc_vc *rel, const char *file, int line)
{
    if (t->sb_len == mc__g.sb_cap)
        mc__sb_flush_one(t); /* a full buffer makes room first */
    struct mc_sb_entry *e = sb_at(t, t->sb_len);
    e->addr = p;
    e->val = v;
    e->rel = *rel;
    e->file = file;
    e->line = line;
    t->sb_len++;
}

static int in_block_of(const void *a, const void *p)
{
    struct block *b = block_of(p);
    return b && (const char *)a >= b->p && (const char *)a < b->p + b->n;
}

/* Would t's pending operation touch main memory at an address that u has
 * buffered? Only then can the order of u's flush and t's step matter: a
 * flush commutes with every other step, so exploring flushes just before
 * the steps they conflict with covers every TSO behaviour. All pending
 * operations count, blocked ones included, so that whether a flush is
 * offered depends only on the threads' next steps. */
int mc__touches(const struct mc_thread *t, const struct mc_thread *u)
{
    const struct mc_pending *p = &t->pend;
    for (int i = 0; i < u->sb_len; i++) {
        const void *a = u->sb[(u->sb_head + i) % MC_SB_MAX].addr;
        int drains = mc__sb_has(t, a);
        switch (p->op) {
        case OP_LOAD:
            if (a == p->addr && !mc__sb_has(t, a))
                return 1;
            break;
        case OP_STORE:
            if (p->mo == memory_order_seq_cst
                    ? a == p->addr || drains
                    : t->sb_len == mc__g.sb_cap &&
                          t->sb[t->sb_head].addr == a)
                return 1;
            break;
        case OP_SWAP:
        case OP_CAS:
        case OP_RMW:
            if (a == p->addr || drains)
                return 1;
            break;
        case OP_FENCE:
            if (p->mo == memory_order_seq_cst && drains)
                return 1;
            break;
        case OP_MEMBARRIER:
            return 1; /* it flushes every buffer, u's included */
        case OP_FREE:
            if (drains || in_block_of(a, p->addr))
                return 1;
            break;
        case OP_SPAWN:
        case OP_JOIN:
        case OP_PARK:
        case OP_UNPARK:
        case OP_LOCK:
        case OP_UNLOCK:
        case OP_EXIT:
            if (drains)
                return 1;
            break;
        default:
            break;
        }
    }
    return 0;
}

/* ------------------------------------------------------------ atomics */

static void note_access(struct loc *l, struct mc_thread *t, const char *file,
                        int line)
{
    int id = (int)(t - mc__g.th);
    l->acc[id] = t->clock.c[id];
    l->acc_file[id] = file;
    l->acc_line[id] = line;
}

/* The reading half of an operation that read the current value. */
static void acquire(struct mc_thread *t, struct loc *l, int mo)
{
    mc__vc_join(is_acq(mo) ? &t->clock : &t->acq_fence, &l->rel);
}

/* The clock a write with order 'mo' releases: the thread's own, or for a
 * relaxed write the one of its last release fence. */
static const struct mc_vc *released(struct mc_thread *t, int mo)
{
    return is_rel(mo) ? &t->clock : &t->rel_fence;
}

static struct loc *atomic_begin(_Atomic uintptr_t *p, const char *what,
                                const char *file, int line)
{
    struct mc_thread *t = mc__self();
    check_live(p, sizeof *p, what, file, line);
    struct loc *l = loc_get(p);
    note_access(l, t, file, line);
    return l;
}

static void trace_atomic(const char *op, int mo, const void *p, uintptr_t old,
                         uintptr_t nv, const char *extra, const char *file,
                         int line)
{
    if (!mc__g.tracing)
        return;
    char nb[64];
    mc__trace("T%d %-9s %s = %#lx -> %#lx %s%s  %s:%d", mc__g.cur, op,
              mc__addr_name(p, nb, sizeof nb), (unsigned long)old,
              (unsigned long)nv, mo_name(mo), extra, mc__base(file), line);
}

void mc_init(_Atomic uintptr_t *p, uintptr_t v)
{
    atomic_store_explicit(p, v, memory_order_relaxed);
    if (!mc__g.active)
        return;
    struct loc *l = loc_get(p);
    memset(&l->rel, 0, sizeof l->rel);
}

uintptr_t mc_load(_Atomic uintptr_t *p, int mo, const char *file, int line)
{
    if (!mc__g.active)
        return atomic_load(p);
    mc__point(OP_LOAD, mo, p, 0, file, line);
    struct mc_thread *t = mc__self();
    struct loc *l = atomic_begin(p, "atomic load", file, line);
    uintptr_t v;
    int own = sb_newest(t, p, &v);
    if (!own) {
        v = atomic_load_explicit(p, memory_order_relaxed);
        acquire(t, l, mo);
    }
    if (mc__g.tracing) {
        char nb[64];
        mc__trace("T%d load      %s -> %#lx %s%s  %s:%d", mc__g.cur,
                  mc__addr_name(p, nb, sizeof nb), (unsigned long)v,
                  mo_name(mo), own ? " (from own store buffer)" : "",
                  mc__base(file), line);
    }
    mc__tick(t);
    return v;
}

void mc_store(_Atomic uintptr_t *p, uintptr_t v, int mo, const char *file,
              int line)
{
    if (!mc__g.active) {
        atomic_store(p, v);
        return;
    }
    mc__point(OP_STORE, mo, p, 0, file, line);
    struct mc_thread *t = mc__self();
    struct loc *l = atomic_begin(p, "atomic store", file, line);
    uintptr_t old = atomic_load_explicit(p, memory_order_relaxed);
    if (mc__g.mem == MC_MEM_TSO && mo != memory_order_seq_cst) {
        trace_atomic("store", mo, p, old, v, " (buffered)", file, line);
        sb_push(t, p, v, released(t, mo), file, line);
    } else {
        /* x86: a seq_cst store is mov + mfence (or xchg): it drains. */
        if (mc__g.mem == MC_MEM_TSO)
            mc__sb_drain(t);
        trace_atomic("store", mo, p, old, v, "", file, line);
        l->rel = *released(t, mo);
        mem_write(p, v);
    }
    mc__tick(t);
}

/* Common part of every RMW: drains (x86 locked instructions do), reads
 * the current value and performs the acquire half. */
static struct loc *rmw_begin(_Atomic uintptr_t *p, int op, int mo,
                             uintptr_t arg, uintptr_t *old, const char *file,
                             int line)
{
    mc__point(op, mo, p, (intptr_t)arg, file, line);
    struct mc_thread *t = mc__self();
    if (mc__g.mem == MC_MEM_TSO)
        mc__sb_drain(t);
    struct loc *l = atomic_begin(p, "atomic read-modify-write", file, line);
    *old = atomic_load_explicit(p, memory_order_relaxed);
    return l;
}

/* The writing half of a successful RMW: it continues the release
 * sequence of the value it replaced and adds its own release. */
static void rmw_write(struct loc *l, _Atomic uintptr_t *p, uintptr_t v,
                      int mo)
{
    struct mc_thread *t = mc__self();
    mc__vc_join(&l->rel, released(t, mo));
    mem_write(p, v);
    mc__tick(t);
}

uintptr_t mc_swap(_Atomic uintptr_t *p, uintptr_t v, int mo, const char *file,
                  int line)
{
    if (!mc__g.active)
        return atomic_exchange(p, v);
    uintptr_t old;
    struct loc *l = rmw_begin(p, OP_SWAP, mo, v, &old, file, line);
    acquire(mc__self(), l, mo);
    trace_atomic("swap", mo, p, old, v, "", file, line);
    rmw_write(l, p, v, mo);
    return old;
}

_Bool mc_cas(_Atomic uintptr_t *p, uintptr_t *expected, uintptr_t desired,
             int mo_succ, int mo_fail, const char *file, int line)
{
    if (!mc__g.active)
        return atomic_compare_exchange_strong(p, expected, desired);
    uintptr_t old;
    struct loc *l = rmw_begin(p, OP_CAS, mo_succ, desired, &old, file, line);
    if (old == *expected) {
        acquire(mc__self(), l, mo_succ);
        trace_atomic("cas ok", mo_succ, p, old, desired, "", file, line);
        rmw_write(l, p, desired, mo_succ);
        return 1;
    }
    acquire(mc__self(), l, mo_fail);
    if (mc__g.tracing) {
        char ex[48];
        snprintf(ex, sizeof ex, " (expected %#lx)", (unsigned long)*expected);
        trace_atomic("cas fail", mo_fail, p, old, old, ex, file, line);
    }
    *expected = old;
    mc__tick(mc__self());
    return 0;
}

uintptr_t mc_rmw(_Atomic uintptr_t *p, int op, uintptr_t v, int mo,
                 const char *file, int line)
{
    static const char *const names[] = {"fetch_add", "fetch_sub", "fetch_or",
                                        "fetch_and", "fetch_xor"};
    if (!mc__g.active) {
        switch (op) {
        case MC_ADD:
            return atomic_fetch_add(p, v);
        case MC_SUB:
            return atomic_fetch_sub(p, v);
        case MC_OR:
            return atomic_fetch_or(p, v);
        case MC_XOR:
            return atomic_fetch_xor(p, v);
        default:
            return atomic_fetch_and(p, v);
        }
    }
    uintptr_t old, nv;
    struct loc *l = rmw_begin(p, OP_RMW, mo, v, &old, file, line);
    switch (op) {
    case MC_ADD:
        nv = old + v;
        break;
    case MC_SUB:
        nv = old - v;
        break;
    case MC_OR:
        nv = old | v;
        break;
    case MC_AND:
        nv = old & v;
        break;
    case MC_XOR:
        nv = old ^ v;
        break;
    default:
        mc__fail(MC_FAIL_USAGE, "mc_rmw: bad op %d", op);
    }
    acquire(mc__self(), l, mo);
    trace_atomic(names[op], mo, p, old, nv, "", file, line);
    rmw_write(l, p, nv, mo);
    return old;
}

void mc_fence(int mo, const char *file, int line)
{
    if (!mc__g.active) {
        atomic_thread_fence(mo);
        return;
    }
    mc__point(OP_FENCE, mo, 0, 0, file, line);
    struct mc_thread *t = mc__self();
    if (mo == memory_order_seq_cst && mc__g.mem == MC_MEM_TSO)
        mc__sb_drain(t); /* mfence */
    if (is_acq(mo))
        mc__vc_join(&t->clock, &t->acq_fence);
    if (is_rel(mo))
        t->rel_fence = t->clock;
    if (mc__g.tracing)
        mc__trace("T%d fence     %s  %s:%d", mc__g.cur, mo_name(mo),
                  mc__base(file), line);
    mc__tick(t);
}

void mc_membarrier(const char *file, int line)
{
    if (!mc__g.active)
        return; /* outside an execution: one thread, nothing to order */
    mc__point(OP_MEMBARRIER, memory_order_seq_cst, 0, 0, file, line);
    if (mc__g.mem == MC_MEM_TSO)
        for (int i = 0; i < mc__g.nthreads; i++)
            mc__sb_drain(&mc__g.th[i]);
    if (mc__g.tracing)
        mc__trace("T%d membarrier  %s:%d", mc__g.cur, mc__base(file), line);
    mc__tick(mc__self());
}

/* --------------------------------------------------------- plain data */

static _Noreturn void race(const char *what, const void *p, size_t n,
                           const char *file, int line, const char *other,
                           int otid, const char *ofile, int oline)
{
    char nb[64];
    mc__fail(MC_FAIL_RACE,
             "data race: plain %s of %s [%zu bytes] by T%d at %s:%d is not "
             "ordered (happens-before) with the plain %s by T%d at %s:%d",
             what, mc__addr_name(p, nb, sizeof nb), n, mc__g.cur,
             mc__base(file), line, other, otid, mc__base(ofile), oline);
}

static void trace_plain(const char *op, const void *p, size_t n,
                        const char *file, int line)
{
    if (!mc__g.tracing)
        return;
    char nb[64];
    mc__trace("T%d %-9s %s [%zu bytes]  %s:%d", mc__g.cur, op,
              mc__addr_name(p, nb, sizeof nb), n, mc__base(file), line);
}

#define WORDS(w, p, n)                                                       \
    for (uintptr_t w = (uintptr_t)(p) & ~(uintptr_t)7;                       \
         w < (uintptr_t)(p) + (n); w += 8)

void mc_plain_read(const void *p, size_t n, const char *file, int line)
{
    if (!mc__g.active || !n)
        return;
    mc__point(OP_READ, 0, p, (intptr_t)n, file, line);
    struct mc_thread *t = mc__self();
    int me = mc__g.cur;
    check_live(p, n, "plain read", file, line);
    trace_plain("read", p, n, file, line);
    WORDS(w, p, n)
    {
        struct shadow *s = shadow_get(w);
        if (s->w_clk && s->w_tid != me && s->w_clk > t->clock.c[s->w_tid])
            race("read", p, n, file, line, "write", s->w_tid, s->w_file,
                 s->w_line);
        s->r_clk[me] = t->clock.c[me];
        s->r_file[me] = file;
        s->r_line[me] = line;
    }
}

void mc_plain_write(const void *p, size_t n, const char *file, int line)
{
    if (!mc__g.active || !n)
        return;
    mc__point(OP_WRITE, 0, p, (intptr_t)n, file, line);
    struct mc_thread *t = mc__self();
    int me = mc__g.cur;
    check_live(p, n, "plain write", file, line);
    trace_plain("write", p, n, file, line);
    WORDS(w, p, n)
    {
        struct shadow *s = shadow_get(w);
        if (s->w_clk && s->w_tid != me && s->w_clk > t->clock.c[s->w_tid])
            race("write", p, n, file, line, "write", s->w_tid, s->w_file,
                 s->w_line);
        for (int u = 0; u < MC_MAX_THREADS; u++)
            if (u != me && s->r_clk[u] > t->clock.c[u])
                race("write", p, n, file, line, "read", u, s->r_file[u],
                     s->r_line[u]);
        /* Every earlier access happens before this write, so later ones
         * need only be checked against it. */
        memset(s->r_clk, 0, sizeof s->r_clk);
        s->w_tid = me;
        s->w_clk = t->clock.c[me];
        s->w_file = file;
        s->w_line = line;
    }
}

/* --------------------------------------------------------- allocation */

void *mc_alloc(size_t n, const char *file, int line)
{
    if (!mc__g.active)
        return malloc(n ? n : 1);
    mc__point(OP_ALLOC, 0, 0, (intptr_t)n, file, line);
    if (nblocks == cap_blocks) {
        cap_blocks = cap_blocks ? 2 * cap_blocks : 16;
        blocks = realloc(blocks, (size_t)cap_blocks * sizeof *blocks);
        if (!blocks)
            abort();
    }
    char *p = malloc(n ? n : 1);
    if (!p)
        abort();
    memset(p, 0xa5, n); /* deterministic contents: executions must repeat */
    blocks[nblocks++] =
        (struct block){p, n, file, 0, line, 0, mc__g.cur, -1, 0};
    if (mc__g.tracing)
        mc__trace("T%d alloc     blk%d [%zu bytes]  %s:%d", mc__g.cur,
                  nblocks, n, mc__base(file), line);
    return p;
}

/* A free must happen after every access to the block by other threads;
 * otherwise some schedule (or a weaker machine) uses it after the free. */
static void check_free_order(struct block *b, struct mc_thread *t,
                             const char *file, int line)
{
    int me = mc__g.cur;
    for (int i = 0; i < nlocs; i++) {
        struct loc *l = loc_list[i];
        if (!in_block_of(l->addr, b->p))
            continue;
        for (int u = 0; u < MC_MAX_THREADS; u++)
            if (u != me && l->acc[u] > t->clock.c[u])
                mc__fail(MC_FAIL_UAF,
                         "use after free (race): the free by T%d at %s:%d "
                         "is not ordered after T%d's atomic access at "
                         "%s:%d",
                         me, mc__base(file), line, u,
                         mc__base(l->acc_file[u]), l->acc_line[u]);
    }
    for (int i = 0; i < nshadows; i++) {
        struct shadow *s = shadow_list[i];
        if (!in_block_of((void *)s->addr, b->p))
            continue;
        if (s->w_clk && s->w_tid != me && s->w_clk > t->clock.c[s->w_tid])
            mc__fail(MC_FAIL_UAF,
                     "use after free (race): the free by T%d at %s:%d is "
                     "not ordered after T%d's plain write at %s:%d",
                     me, mc__base(file), line, s->w_tid, mc__base(s->w_file),
                     s->w_line);
        for (int u = 0; u < MC_MAX_THREADS; u++)
            if (u != me && s->r_clk[u] > t->clock.c[u])
                mc__fail(MC_FAIL_UAF,
                         "use after free (race): the free by T%d at %s:%d "
                         "is not ordered after T%d's plain read at %s:%d",
                         me, mc__base(file), line, u, mc__base(s->r_file[u]),
                         s->r_line[u]);
    }
}

void mc_free(void *p, const char *file, int line)
{
    if (!mc__g.active) {
        free(p);
        return;
    }
    if (!p)
        return;
    mc__point(OP_FREE, 0, p, 0, file, line);
    struct mc_thread *t = mc__self();
    struct block *b = block_of(p);
    if (!b || b->p != (char *)p)
        mc__fail(MC_FAIL_BAD_FREE,
                 "free of %p at %s:%d: not a block from "
                 "mc_alloc",
                 p, mc__base(file), line);
    if (b->freed)
        mc__fail(MC_FAIL_DOUBLE_FREE,
                 "double free of blk%d by T%d at %s:%d; allocated at %s:%d, "
                 "first freed by T%d at %s:%d",
                 (int)(b - blocks) + 1, mc__g.cur, mc__base(file), line,
                 mc__base(b->file), b->line, b->ftid, mc__base(b->ffile),
                 b->fline);
    if (mc__g.mem == MC_MEM_TSO)
        mc__sb_drain(t);
    check_free_order(b, t, file, line);
    b->freed = 1;
    b->ftid = mc__g.cur;
    b->ffile = file;
    b->fline = line;
    nfreed++;
    if (mc__g.tracing)
        mc__trace("T%d free      blk%d  %s:%d", mc__g.cur,
                  (int)(b - blocks) + 1, mc__base(file), line);
    mc__tick(t);
    mc__wake_spinners(-1);
}

/* ------------------------------------------------- execution lifecycle */

void mc__mem_begin(void)
{
    gen++;
    nlocs = 0;
    nshadows = 0;
    nlabels = 0;
    nblocks = 0;
    nfreed = 0;
}

/* The leak check at the end of an execution: MC_OK or MC_FAIL_LEAK, with
 * the message in 'msg'. */
int mc__mem_leaks(char *msg, size_t n)
{
    size_t used = 0;
    int leaks = 0;
    msg[0] = 0;
    for (int i = 0; i < nblocks; i++) {
        struct block *b = &blocks[i];
        if (b->freed)
            continue;
        if (used < n)
            used += (size_t)snprintf(msg + used, n - used,
                                     "%sleak: blk%d [%zu bytes] allocated by "
                                     "T%d at %s:%d was never freed",
                                     leaks++ ? "; " : "", i + 1, b->n, b->tid,
                                     mc__base(b->file), b->line);
    }
    return leaks ? MC_FAIL_LEAK : MC_OK;
}

void mc__mem_release(void)
{
    for (int i = 0; i < nblocks; i++)
        free(blocks[i].p);
    nblocks = 0;
    nfreed = 0;
}
