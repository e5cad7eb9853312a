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
 * memory lives until every block it handed out is freed. */
struct fut__blockpool {
    void *(*alloc)(struct fut__blockpool *p, size_t size, uint32_t *cls);
    void (*free)(struct fut__blockpool *p, void *block, uint32_t cls,
                 size_t size);
};
extern _Thread_local struct fut__blockpool *fut__tls_pool;

/* ------------------------------------------------------------- reporting */

/* Sends a formatted report to the hook (debug checks C6/C7). */
void fut__report(const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif /* FUT_INTERNAL_H */
