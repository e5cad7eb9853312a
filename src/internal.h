/* Declarations shared inside src/ (never installed). */
#ifndef FUT_INTERNAL_H
#define FUT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "fut/core.h"
#include "util/atomic.h"

/* A hot-path helper the compiler would keep out of line (it has more than
 * one caller), where the call's register saves cost about as much as its
 * body: the multi-thread scheduler's push step (with its run step, since
 * flattened into run_tick: yield_many mt2 285 -> 264 instructions per
 * yield, callgrind). */
#define FUT__HOT_INLINE static inline __attribute__((always_inline))

/* '*slot = w' for a waker just returned by a call (fut_waker_clone): gcc
 * spills the two registers it comes back in and reloads them as one
 * 16-byte value, which store forwarding cannot serve (a stall of some 10
 * cycles per registration: perf put a third of oneshot_recv_poll's
 * samples on that store). Two word stores avoid the round trip. */
static inline void fut__waker_store(struct fut_waker *slot,
                                    struct fut_waker w)
{
    const void *data = w.data;
    const struct fut_waker_vtable *vt = w.vt;
    __asm__("" : "+r"(data), "+r"(vt)); /* keep them two words */
    slot->data = data;
    slot->vt = vt;
}

/* ------------------------------------------------------------ assertions */

/* FUT_ASSERT: programming errors. Aborts with file:line in debug builds
 * (FUT_DEBUG), compiles to nothing otherwise. FUT_CHECK always aborts. */
#define FUT_CHECK(e)                                                          \
    ((e) ? (void)0 : fut__assert_fail(#e, __FILE__, __LINE__))
#ifdef FUT_DEBUG
#define FUT_ASSERT(e) FUT_CHECK(e)
#else
#define FUT_ASSERT(e) ((void)0)
#endif

#define FUT_LIKELY(x) __builtin_expect(!!(x), 1)
#define FUT_UNLIKELY(x) __builtin_expect(!!(x), 0)

#define fut__container_of(ptr, type, member)                                  \
    ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/* ------------------------------------------------------------ allocation */

/* Every allocation of the library goes through these (the hook set by
 * fut_set_allocator; the model checker substitutes its own tracker). */
#ifndef FUT_MODEL_CHECK
void *fut__alloc(size_t size);
void fut__free(void *p, size_t size);
#else
#define fut__alloc(n) mc_alloc((n), __FILE__, __LINE__)
#define fut__free(p, n) ((void)(n), mc_free((p), __FILE__, __LINE__))
#endif

/* Small-block pool of the scheduler running on this thread (the same
 * per-runtime slab tasks come from), so that short-lived blocks such as a
 * oneshot's skip malloc. NULL outside a runtime: use fut__alloc. alloc
 * runs on the pool's thread only; free on any thread, and the pool's
 * memory lives until every block it handed out is freed.
 *
 * The cache in front of it (fut__pool_get / fut__pool_put, inline: no
 * indirect call, no counter): blocks of one size freed by the owner - the
 * thread whose fut__tls_pool it is - wait there for its next allocation
 * of that size. Rules:
 *   - only the owner, while fut__tls_pool points at the pool, touches
 *     'cache', 'cache_n', 'cache_size' and 'cache_cls' (plain fields);
 *   - a cached block stays counted as allocated by the pool (it never
 *     went back), so the scheduler's lifetime counts stay exact;
 *   - the owner calls fut__pool_flush before it stops being the owner
 *     (a worker's exit, the end of a block_on): 'free' then counts the
 *     blocks back as every other free does. */
#define FUT__POOL_CACHE_MAX 64
struct fut__blockpool {
    void *(*alloc)(struct fut__blockpool *p, size_t size, uint32_t *cls);
    void (*free)(struct fut__blockpool *p, void *block, uint32_t cls,
                 size_t size);
    void *cache;         /* owner only: freed blocks, linked by word 0 */
    uint32_t cache_n;    /* how many */
    uint32_t cache_cls;  /* their class (as 'free' wants it) */
    size_t cache_size;   /* their size */
};
extern _Thread_local struct fut__blockpool *fut__tls_pool;

/* Owner thread: a block of 'size' bytes; '*cls' is for fut__pool_put. */
static inline void *fut__pool_get(struct fut__blockpool *p, size_t size,
                                  uint32_t *cls)
{
    void *b = p->cache;
    if (b && size == p->cache_size) {
        p->cache = *(void **)b;
        p->cache_n--;
        *cls = p->cache_cls;
        return b;
    }
    return p->alloc(p, size, cls);
}

/* Any thread: gives back a block 'p' handed out. */
static inline void fut__pool_put(struct fut__blockpool *p, void *b,
                                 uint32_t cls, size_t size)
{
    if (p == fut__tls_pool && cls != 0) {
        if (p->cache_n == 0) {
            p->cache_size = size;
            p->cache_cls = cls;
        }
        if (p->cache_n < FUT__POOL_CACHE_MAX && size == p->cache_size) {
            *(void **)b = p->cache;
            p->cache = b;
            p->cache_n++;
            return;
        }
    }
    p->free(p, b, cls, size);
}

/* Owner thread, still the owner: empties the cache through 'free'. */
void fut__pool_flush(struct fut__blockpool *p);
/* An empty cache for a new pool. */
void fut__pool_init_cache(struct fut__blockpool *p);

/* ------------------------------------------------------------- reporting */

/* Sends a formatted report to the hook (debug checks C6/C7). */
void fut__report(const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif /* FUT_INTERNAL_H */
