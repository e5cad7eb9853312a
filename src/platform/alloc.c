/* SPDX-License-Identifier: MIT */
/* The allocator hook (the lua_Alloc shape) and the live-block count every
 * test's leak check reads. All allocation in fut goes through here.
 *
 * The counters are per thread, so counting costs two plain stores and no
 * locked instruction on the allocation path (a shared atomic counter was a
 * third of the cost of a local oneshot). Rules:
 *   - each thread's 'struct counters' is written only by that thread
 *     (relaxed load + store) and read by fut_alloc_live/count (relaxed);
 *   - a thread registers its block on its first allocation, under 'lock';
 *   - at thread exit (the TLS key's destructor) the thread's counts are
 *     folded into 'retired' and its block is unlinked, under 'lock';
 *   - a block freed on another thread than it was allocated on makes one
 *     count negative and the other positive: only the sum means anything.
 */
#include <pthread.h>
#include <stdlib.h>

#include "internal.h"
#include "platform/simfault.h"
#include "util/list.h"

static void *default_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud;
    (void)osize;
    if (nsize == 0) {
        free(ptr);
        return NULL;
    }
    return ptr ? realloc(ptr, nsize) : malloc(nsize);
}

_Thread_local struct fut__blockpool *fut__tls_pool;

void fut__pool_init_cache(struct fut__blockpool *p)
{
    p->cache = NULL;
    p->cache_n = 0;
    p->cache_cls = 0;
    p->cache_size = 0;
}

void fut__pool_flush(struct fut__blockpool *p)
{
    void *b = p->cache;
    p->cache = NULL;
    p->cache_n = 0;
    while (b) {
        void *next = *(void **)b;
        p->free(p, b, p->cache_cls, p->cache_size);
        b = next;
    }
}

static fut_alloc_fn alloc_fn = default_alloc;
static void *alloc_ud;

struct counters {
    fut__aword live;       /* blocks allocated minus freed by this thread */
    fut__aword calls;      /* allocation calls by this thread */
    struct fut__list link; /* on 'threads' */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Registered blocks, by 'link' (under lock). */
static struct fut__list threads = {&threads, &threads};
static long retired_live; /* exited threads' sums (under lock) */
static long retired_calls;
static pthread_key_t key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static _Thread_local struct counters *mine;

static void retire(void *p)
{
    struct counters *c = p;
    pthread_mutex_lock(&lock);
    retired_live += (long)fut__load(&c->live, FUT__RELAXED);
    retired_calls += (long)fut__load(&c->calls, FUT__RELAXED);
    fut__list_remove(&c->link);
    pthread_mutex_unlock(&lock);
    mine = NULL;
    free(c); /* not through the hook: it is the hook's own bookkeeping */
}

static void make_key(void)
{
    pthread_key_create(&key, retire);
}

/* This thread's counters; NULL only if malloc failed (then the counts of
 * this thread go to the retired totals under the lock). */
static struct counters *counters(void)
{
    if (FUT_LIKELY(mine != NULL))
        return mine;
    pthread_once(&key_once, make_key);
    struct counters *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    pthread_mutex_lock(&lock);
    fut__list_push_back(&threads, &c->link);
    pthread_mutex_unlock(&lock);
    pthread_setspecific(key, c);
    mine = c;
    return c;
}

/* Adds 'd' to one of this thread's counters (single writer: no RMW);
 * 'live' selects which. */
static void bump(int live, long d)
{
    struct counters *c = counters();
    if (FUT_UNLIKELY(!c)) {
        pthread_mutex_lock(&lock);
        *(live ? &retired_live : &retired_calls) += d;
        pthread_mutex_unlock(&lock);
        return;
    }
    fut__aword *a = live ? &c->live : &c->calls;
    fut__store(a, fut__load(a, FUT__RELAXED) + (uintptr_t)d, FUT__RELAXED);
}

void fut_set_allocator(fut_alloc_fn fn, void *ud)
{
    alloc_fn = fn ? fn : default_alloc;
    alloc_ud = fn ? ud : NULL;
}

static long sum(int live)
{
    pthread_mutex_lock(&lock);
    long total = live ? retired_live : retired_calls;
    for (struct fut__list *n = threads.next; n != &threads; n = n->next) {
        struct counters *c = fut__container_of(n, struct counters, link);
        total += (long)fut__load(live ? &c->live : &c->calls, FUT__RELAXED);
    }
    pthread_mutex_unlock(&lock);
    return total;
}

long fut_alloc_live(void)
{
    return sum(1);
}

long fut_alloc_count(void)
{
    return sum(0);
}

void *fut__alloc(size_t size)
{
    bump(0, 1);
    /* A simulation's seeded allocation failure (platform/simfault.h). */
    if (FUT_UNLIKELY(fut__load(&fut__simfault_users, FUT__RELAXED)) &&
        fut__simfault_hit(FUT__SIMFAULT_ALLOC))
        return NULL;
    void *p = alloc_fn(alloc_ud, NULL, 0, size ? size : 1);
    if (p)
        bump(1, 1);
    return p;
}

void fut__free(void *p, size_t size)
{
    if (!p)
        return;
    bump(1, -1);
    alloc_fn(alloc_ud, p, size, 0);
}

void *fut_mem_alloc(size_t size)
{
    return fut__alloc(size);
}

void fut_mem_free(void *p, size_t size)
{
    fut__free(p, size);
}
