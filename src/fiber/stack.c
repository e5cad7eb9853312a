/* SPDX-License-Identifier: MIT */
/* Fiber stacks and their pool.
 *
 * A stack is one anonymous private mapping: a guard page (PROT_NONE) at
 * the bottom, the usable bytes above it. MAP_NORESERVE and no touching:
 * the kernel commits a page only when the fiber first writes it, so a
 * 64 KiB stack of a fiber parked in a read costs the one or two pages
 * its frames reach.
 *
 * The pools (process-wide, one mutex) keep freed stacks for the next
 * spawn of the same size - a spawn + join then costs no syscall - sized
 * by the recent peak of stacks in use, as Go keeps its stack cache until
 * the scavenger runs. There is one pool per stack size, for the first
 * POOL_SIZES sizes the process asks for (a program uses one or two: the
 * default and, say, a TLS server's larger one); a pool's size is kept
 * for the process's life. Rules, per pool:
 *   - 'live' counts its stacks handed out; 'peak' is the most live seen
 *     in the current window of WINDOW_NS, 'prev' the previous window's. A window rolls at the first get or put after it
 *     ends (one coarse clock read per call; nothing runs while no fiber
 *     starts or ends);
 *   - a stack given back is parked while live + parked stays within
 *     max(POOL_HOT, peak, prev) - which a put never raises - so a burst
 *     of N fibers, joined and spawned again, maps nothing the second
 *     time; a stack that does not fit is unmapped;
 *   - when a window rolls, parked stacks beyond that bound are unmapped,
 *     at most TRIM_BATCH per call (outside the lock; the rest at the
 *     next calls): two quiet windows after a burst the pool is back to
 *     POOL_HOT stacks plus what the live fibers may need;
 *   - parked stacks keep their pages (the fibers that used them touched
 *     them; the peak RSS is the burst's own) until they are unmapped;
 *   - it is a LIFO (a spawn takes the stack freed last, the warmest),
 *     linked through a header at the top of each parked stack: no
 *     memory besides the stacks;
 *   - stacks of a size that found no pool (more than POOL_SIZES sizes)
 *     are mapped and unmapped each time.
 * Valgrind: every mapping is registered as a stack (VALGRIND_STACK_*),
 * so that memcheck follows the switches. ASan: a stack handed out is
 * unpoisoned (frames of the fiber that used it before never returned,
 * and their redzones would still be poisoned).
 */
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fiber/fiber_internal.h"
#include "util/mutex.h"

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define FUT__HAVE_VALGRIND 1
#endif
#endif
#ifdef FUT__ASAN
#include <sanitizer/asan_interface.h>
#endif

#if defined(FUT__ASAN) || defined(FUT__TSAN)
#define DEFAULT_STACK (256u * 1024) /* sanitizer frames are larger */
#else
#define DEFAULT_STACK (64u * 1024)
#endif
#define MIN_STACK (16u * 1024)
#define POOL_HOT 16                      /* kept whatever the peak */
#define WINDOW_NS (1000LL * 1000 * 1000) /* a peak is remembered 1-2 s */
#define TRIM_BATCH 32                    /* unmaps per call at most */
#define POOL_SIZES 4                     /* stack sizes with a pool */

/* The header of a parked stack, at the top of its usable bytes. */
struct parked {
    struct parked *next;
    struct fut__stack st;
};

/* One size's pool; every field under pool_lock. */
struct pool {
    size_t usable;       /* the size of its stacks; 0: the slot is free */
    struct parked *head; /* LIFO of parked stacks */
    size_t n;            /* parked stacks */
    size_t live;         /* handed out */
    size_t peak;         /* this window's most live */
    size_t prev;         /* the last window's */
    int64_t window_end;  /* when this window ends */
};

static fut__mutex pool_lock = FUT__MUTEX_INIT;
static struct pool pools[POOL_SIZES];      /* pool_lock */
static int64_t pool_window_ns = WINDOW_NS; /* pool_lock (tests set it) */

static size_t page_size(void)
{
    static size_t ps;
    if (!ps)
        ps = (size_t)sysconf(_SC_PAGESIZE); /* racy but idempotent */
    return ps;
}

size_t fut__stack_size(size_t size)
{
    size_t ps = page_size();
    if (size == 0)
        size = DEFAULT_STACK;
    if (size < MIN_STACK)
        size = MIN_STACK;
    return (size + ps - 1) & ~(ps - 1);
}

static int stack_map(size_t usable, struct fut__stack *out)
{
    size_t ps = page_size();
    size_t size = usable + ps;
    void *p =
        mmap(NULL, size, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (p == MAP_FAILED)
        return FUT_ENOMEM;
    if (mprotect(p, ps, PROT_NONE) != 0) {
        munmap(p, size);
        return FUT_ENOMEM;
    }
    out->base = p;
    out->size = size;
    out->lo = (char *)p + ps;
    out->usable = usable;
#ifdef FUT__HAVE_VALGRIND
    out->vg_id = VALGRIND_STACK_REGISTER(out->lo, out->lo + usable);
#else
    out->vg_id = 0;
#endif
    return 0;
}

static void stack_unmap(struct fut__stack *s)
{
#ifdef FUT__HAVE_VALGRIND
    VALGRIND_STACK_DEREGISTER(s->vg_id);
#endif
    munmap(s->base, s->size);
}

/* Coarse monotonic time (ns): a vDSO read of a few ns, tick-grained. */
static int64_t coarse_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Under the lock: the pool of stacks of 'usable' bytes - with 'claim',
 * claiming a free slot for a new size; NULL when there is none. */
static struct pool *pool_find(size_t usable, int claim)
{
    for (int i = 0; i < POOL_SIZES; i++) {
        if (pools[i].usable == usable)
            return &pools[i];
        if (pools[i].usable == 0) {
            if (!claim)
                return NULL;
            pools[i].usable = usable;
            return &pools[i];
        }
    }
    return NULL;
}

static size_t pool_bound(const struct pool *pl)
{
    size_t b = pl->peak > pl->prev ? pl->peak : pl->prev;
    return b > POOL_HOT ? b : POOL_HOT;
}

static struct parked *header_of(const struct fut__stack *s)
{
    return (struct parked *)(void *)(s->lo + s->usable -
                                     sizeof(struct parked));
}

/* Under the lock: rolls the pool's window when it is over, then takes up
 * to TRIM_BATCH parked stacks beyond the bound off the list into '*out'
 * (a chain the caller unmaps after unlocking). */
static void roll_and_trim(struct pool *pl, struct parked **out)
{
    int64_t now = coarse_now();
    if (now >= pl->window_end) {
        pl->prev = pl->peak;
        pl->peak = pl->live;
        pl->window_end = now + pool_window_ns;
    }
    size_t bound = pool_bound(pl);
    for (int i = 0; i < TRIM_BATCH && pl->n && pl->live + pl->n > bound;
         i++) {
        struct parked *p = pl->head;
        pl->head = p->next;
        pl->n--;
        p->next = *out;
        *out = p;
    }
}

static void unmap_chain(struct parked *p)
{
    while (p) {
        struct parked *next = p->next;
        struct fut__stack st = p->st;
        stack_unmap(&st);
        p = next;
    }
}

int fut__stack_get(size_t size, struct fut__stack *out)
{
    size_t usable = fut__stack_size(size);
    int found = 0;
    struct parked *trim = NULL;
    fut__mutex_lock(&pool_lock);
    struct pool *pl = pool_find(usable, 1);
    if (pl) {
        roll_and_trim(pl, &trim);
        if (pl->head) {
            struct parked *p = pl->head;
            pl->head = p->next;
            pl->n--;
            *out = p->st;
            found = 1;
        }
        pl->live++;
        if (pl->live > pl->peak)
            pl->peak = pl->live;
    }
    fut__mutex_unlock(&pool_lock);
    unmap_chain(trim);
    if (!found) {
        int r = stack_map(usable, out);
        if (r != 0) {
            if (pl) {
                fut__mutex_lock(&pool_lock);
                pl->live--;
                fut__mutex_unlock(&pool_lock);
            }
            return r;
        }
    }
#ifdef FUT__ASAN
    ASAN_UNPOISON_MEMORY_REGION(out->lo, out->usable);
#endif
    return 0;
}

void fut__stack_put(struct fut__stack *s)
{
    struct parked *trim = NULL;
    int parked = 0;
    fut__mutex_lock(&pool_lock);
    struct pool *pl = pool_find(s->usable, 0); /* claimed by its get */
    if (pl) {
        pl->live--;
        roll_and_trim(pl, &trim);
        parked = pl->live + pl->n < pool_bound(pl);
    }
    if (parked) {
        struct parked *p = header_of(s);
#ifdef FUT__ASAN
        /* The last fiber's frames may have left redzones poisoned there. */
        ASAN_UNPOISON_MEMORY_REGION(p, sizeof *p);
#endif
        p->st = *s;
        p->next = pl->head;
        pl->head = p;
        pl->n++;
    }
    fut__mutex_unlock(&pool_lock);
    unmap_chain(trim);
    if (!parked)
        stack_unmap(s);
}

void fut__stack_pool_counts(size_t size, size_t *parked, size_t *live)
{
    fut__mutex_lock(&pool_lock);
    struct pool *pl = pool_find(fut__stack_size(size), 0);
    *parked = pl ? pl->n : 0;
    *live = pl ? pl->live : 0;
    fut__mutex_unlock(&pool_lock);
}

void fut__stack_pool_window(int64_t ns)
{
    fut__mutex_lock(&pool_lock);
    pool_window_ns = ns > 0 ? ns : WINDOW_NS;
    for (int i = 0; i < POOL_SIZES; i++)
        pools[i].window_end = 0; /* roll at the next call */
    fut__mutex_unlock(&pool_lock);
}

void fut__stack_pool_drain(void)
{
    struct parked *all = NULL;
    fut__mutex_lock(&pool_lock);
    for (int i = 0; i < POOL_SIZES; i++) {
        struct pool *pl = &pools[i];
        while (pl->head) {
            struct parked *p = pl->head;
            pl->head = p->next;
            p->next = all;
            all = p;
        }
        pl->n = 0;
        pl->peak = pl->prev = pl->live;
    }
    fut__mutex_unlock(&pool_lock);
    unmap_chain(all);
}
