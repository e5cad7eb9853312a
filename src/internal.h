/* SPDX-License-Identifier: MIT */
/* Declarations shared inside src/ (never installed). */
#ifndef FUT_INTERNAL_H
#define FUT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
#define FUT_CHECK(e)                                                         \
    ((e) ? (void)0 : fut__assert_fail(#e, __FILE__, __LINE__))
#ifdef FUT_DEBUG
#define FUT_ASSERT(e) FUT_CHECK(e)
#else
#define FUT_ASSERT(e) ((void)0)
#endif

/* Programming errors at a public function's entry (docs/design.md,
 * "Programming errors"):
 *   FUT_ARG_CHECK(cond, what)  a function that can report an error:
 *       returns FUT_EINVAL when 'cond' is false, in every build;
 *   FUT_ARG_VOID(cond, what)   a function that cannot report one: the
 *       debug build aborts with "fut: <function>: <what>" and the caller's
 *       location, the release build returns without doing anything;
 *   FUT_ARG_OR(cond, what, v)  the same for a function whose result is not
 *       an error code (a predicate, a pointer): the release build returns
 *       'v';
 *   FUT_MISUSE(what)           aborts in debug builds (the caller named),
 *       nothing in release builds - for what the release build then
 *       handles as the docs say (a second send refused, ...).
 * The checks test the arguments only: they run before the function
 * touches anything. __builtin_return_address(0) is where the user's call
 * returns to (the public functions are never inlined into a caller). */
#define FUT__CALLER __builtin_return_address(0)
#if defined(FUT_DEBUG) && defined(FUT_MODEL_CHECK)
#define FUT_MISUSE(what) fut__assert_fail((what), __FILE__, __LINE__)
#elif defined(FUT_DEBUG)
#define FUT_MISUSE(what) fut__misuse(__func__, (what), FUT__CALLER)
#else
#define FUT_MISUSE(what) ((void)0)
#endif
#define FUT_ARG_CHECK(cond, what)                                            \
    do {                                                                     \
        if (__builtin_expect(!(cond), 0))                                    \
            return FUT_EINVAL;                                               \
    } while (0)
#define FUT_ARG_VOID(cond, what)                                             \
    do {                                                                     \
        if (__builtin_expect(!(cond), 0)) {                                  \
            FUT_MISUSE(what);                                                \
            return;                                                          \
        }                                                                    \
    } while (0)
#define FUT_ARG_OR(cond, what, v)                                            \
    do {                                                                     \
        if (__builtin_expect(!(cond), 0)) {                                  \
            FUT_MISUSE(what);                                                \
            return (v);                                                      \
        }                                                                    \
    } while (0)

/* Debug builds: the registry of live handles (src/platform/handles.c). A
 * handle's private 'gen' comes from fut__handle_new when it is made;
 * fut__handle_check aborts, naming 'fn' (the public call) and the
 * caller, when it was given up already (a copy used after the original);
 * fut__handle_end does the same and gives it up. gen 0: not registered
 * (release builds). */
#if defined(FUT_DEBUG) && !defined(FUT_MODEL_CHECK)
uint32_t fut__handle_new(const void *obj);
void fut__handle_check(const void *obj, uint32_t gen, const char *fn,
                       const void *caller);
void fut__handle_end(const void *obj, uint32_t gen, const char *fn,
                     const void *caller);
#define FUT_HANDLE_NEW(obj) fut__handle_new(obj)
#define FUT_HANDLE_CHECK(obj, gen, fn)                                       \
    fut__handle_check((obj), (gen), (fn), FUT__CALLER)
#define FUT_HANDLE_END(obj, gen, fn)                                         \
    fut__handle_end((obj), (gen), (fn), FUT__CALLER)
#else
#define FUT_HANDLE_NEW(obj) ((void)(obj), 0u)
#define FUT_HANDLE_CHECK(obj, gen, fn) ((void)(obj), (void)(gen))
#define FUT_HANDLE_END(obj, gen, fn) ((void)(obj), (void)(gen))
#endif

/* Debug builds: the registry of live runtimes (src/platform/handles.c),
 * an O(1) set of the runtimes whose memory is alive: added by
 * fut_runtime_new, forgotten when the memory goes (the schedulers' last
 * release). Every public call given a runtime checks it first with
 * FUT_RT_CHECK (the runtime's memory is alive: fut_spawn and fut_block_on,
 * which answer FUT_ESHUTDOWN on a runtime freed while a join handle
 * keeps it, rt.h) or FUT_RT_LIVE (alive and not freed by
 * fut_runtime_free: every other call); either aborts naming the call
 * (fut__rt_check, src/rt/runtime.c). Release builds keep no registry: a
 * freed runtime is undefined behaviour there (rt.h says so). Why not a
 * release registry for the calls that can return an error (free,
 * block_on, stats): it would be a lock on every block_on and spawn path
 * for a check that cannot be a promise - the next fut_runtime_new may
 * get the freed runtime's address, which then passes as live - so it
 * stays what it is here, debug bookkeeping that catches the common
 * case early. */
struct fut_runtime;
#if defined(FUT_DEBUG) && !defined(FUT_MODEL_CHECK)
void fut__rt_reg_add(const void *rt);
void fut__rt_reg_forget(const void *rt);
int fut__rt_reg_live(const void *rt);
void fut__rt_check(const struct fut_runtime *rt, int freed_ok, const char *fn,
                   const void *caller);
#define FUT_RT_ADD(rt) fut__rt_reg_add(rt)
#define FUT_RT_FORGET(rt) fut__rt_reg_forget(rt)
#define FUT_RT_CHECK(rt) fut__rt_check((rt), 1, __func__, FUT__CALLER)
#define FUT_RT_LIVE(rt) fut__rt_check((rt), 0, __func__, FUT__CALLER)
#else
#define FUT_RT_ADD(rt) ((void)(rt))
#define FUT_RT_FORGET(rt) ((void)(rt))
#define FUT_RT_CHECK(rt) ((void)(rt))
#define FUT_RT_LIVE(rt) ((void)(rt))
#endif

/* Copies a value of 'n' bytes; the common small sizes become inline moves
 * instead of a call (the copy in and out is a measurable part of a local
 * oneshot and of a channel message). */
static inline void fut__copy_value(void *dst, const void *src, size_t n)
{
    switch (n) {
    case 4:
        memcpy(dst, src, 4);
        break;
    case 8:
        memcpy(dst, src, 8);
        break;
    case 16:
        memcpy(dst, src, 16);
        break;
    default:
        memcpy(dst, src, n);
        break;
    }
}

#define FUT_LIKELY(x) __builtin_expect(!!(x), 1)
#define FUT_UNLIKELY(x) __builtin_expect(!!(x), 0)

#define fut__container_of(ptr, type, member)                                 \
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
    void *cache;        /* owner only: freed blocks, linked by word 0 */
    uint32_t cache_n;   /* how many */
    uint32_t cache_cls; /* their class (as 'free' wants it) */
    size_t cache_size;  /* their size */
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
