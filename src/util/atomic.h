/* SPDX-License-Identifier: MIT */
/* The one place every atomic operation, fence and shared plain-data access
 * of the library goes through (tokio's crate::loom).
 *
 * Normal builds: zero-cost macros over <stdatomic.h>.
 * FUT_MODEL_CHECK builds (test/mc): every operation becomes a scheduling
 * point of the model checker, which explores interleavings and, in its TSO
 * mode, store-buffer reorderings, and tracks happens-before over the
 * plain-data annotations below.
 *
 * Rules for library code:
 *   - every atomic word is a 'fut__aword' (uintptr_t); pointers are stored
 *     cast to uintptr_t, so one checker type covers everything;
 *   - every ordering other than relaxed carries a comment naming the
 *     operation it pairs with;
 *   - shared non-atomic data that is handed over between threads (a cell's
 *     value slot, a waker slot) is annotated with fut__plain_read/write so
 *     the checker can prove the hand-over is ordered;
 *   - a pointer slot declared plain (void *) that is also read or written
 *     concurrently goes through fut__load_slot/fut__store_slot, which view
 *     it as a fut__aword;
 *   - a futex word (32 bits, the kernel's size) is a 'fut__futex_word',
 *     used only through the fut__futex_* operations; they exist in normal
 *     builds only (the checker's words are uintptr_t and its models park
 *     with mc_park), so a model that reached the futex parker would fail
 *     to build rather than run unchecked.
 * scripts/check-atomics.sh (the CTest test check_atomics) fails on any
 * other file of src/ that names <stdatomic.h>, _Atomic, atomic_*,
 * memory_order_*, __atomic_* or __sync_*.
 */
#ifndef FUT_UTIL_ATOMIC_H
#define FUT_UTIL_ATOMIC_H

#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>

typedef _Atomic uintptr_t fut__aword;
typedef _Atomic uint32_t fut__futex_word;

/* fut__load_slot/fut__store_slot treat a 'void *' as a fut__aword. */
_Static_assert(sizeof(fut__aword) == sizeof(void *) &&
                   _Alignof(fut__aword) == _Alignof(void *),
               "a pointer slot is not the size of an atomic word");
#define fut__load_slot(pp, mo)                                               \
    ((void *)fut__load((fut__aword *)(void *)(pp), (mo)))
#define fut__store_slot(pp, v, mo)                                           \
    fut__store((fut__aword *)(void *)(pp), (uintptr_t)(void *)(v), (mo))

#define FUT__RELAXED memory_order_relaxed
#define FUT__ACQUIRE memory_order_acquire
#define FUT__RELEASE memory_order_release
#define FUT__ACQ_REL memory_order_acq_rel
#define FUT__SEQ_CST memory_order_seq_cst

#ifndef FUT_MODEL_CHECK

#define fut__aword_init(p, v) atomic_init((p), (uintptr_t)(v))
#define fut__load(p, mo) atomic_load_explicit((p), (mo))
#define fut__store(p, v, mo) atomic_store_explicit((p), (uintptr_t)(v), (mo))
#define fut__swap(p, v, mo)                                                  \
    atomic_exchange_explicit((p), (uintptr_t)(v), (mo))
/* Strong CAS; '*expp' is updated with the value seen on failure. */
#define fut__cas(p, expp, v, mos, mof)                                       \
    atomic_compare_exchange_strong_explicit((p), (expp), (uintptr_t)(v),     \
                                            (mos), (mof))
#define fut__cas_weak(p, expp, v, mos, mof)                                  \
    atomic_compare_exchange_weak_explicit((p), (expp), (uintptr_t)(v),       \
                                          (mos), (mof))
#define fut__fetch_add(p, v, mo)                                             \
    atomic_fetch_add_explicit((p), (uintptr_t)(v), (mo))
#define fut__fetch_sub(p, v, mo)                                             \
    atomic_fetch_sub_explicit((p), (uintptr_t)(v), (mo))
#define fut__fetch_or(p, v, mo)                                              \
    atomic_fetch_or_explicit((p), (uintptr_t)(v), (mo))
#define fut__fetch_and(p, v, mo)                                             \
    atomic_fetch_and_explicit((p), (uintptr_t)(v), (mo))
#define fut__fetch_xor(p, v, mo)                                             \
    atomic_fetch_xor_explicit((p), (uintptr_t)(v), (mo))
#define fut__fence(mo) atomic_thread_fence(mo)
/* Orders the compiler only (no instruction): for code whose other side is
 * an asymmetric fence (membarrier) that makes this thread's accesses
 * visible in program order. */
#define fut__compiler_fence() atomic_signal_fence(memory_order_seq_cst)

/* The futex word (see the rules above). */
#define fut__futex_init(p, v) atomic_init((p), (uint32_t)(v))
#define fut__futex_store(p, v, mo)                                           \
    atomic_store_explicit((p), (uint32_t)(v), (mo))
#define fut__futex_swap(p, v, mo)                                            \
    atomic_exchange_explicit((p), (uint32_t)(v), (mo))
/* Strong CAS; '*expp' (a uint32_t) is updated with the value seen on
 * failure. */
#define fut__futex_cas(p, expp, v, mos, mof)                                 \
    atomic_compare_exchange_strong_explicit((p), (expp), (uint32_t)(v),      \
                                            (mos), (mof))
/* The address the futex syscall takes. */
#define fut__futex_addr(p) ((uint32_t *)(p))

/* Plain-data hand-over annotations: no code in normal builds. */
#define fut__plain_read(p, n) ((void)0)
#define fut__plain_write(p, n) ((void)0)
/* A spin-wait iteration (lets the checker detect and schedule spin loops). */
#define fut__spin_hint() ((void)0)
/* The CPU's spin-wait hint (x86 pause, arm yield): a busy-wait loop that
 * runs for a bounded time (the multi-thread parker's spin, the lock's
 * spin before its futex, the scope drop's backoff) eases off the sibling
 * hyperthread and the memory bus with it. */
#if defined(__x86_64__) || defined(__i386__)
#define fut__cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__) || defined(__arm__)
#define fut__cpu_relax() __asm__ __volatile__("yield" ::: "memory")
#else
#define fut__cpu_relax() ((void)0)
#endif

#else /* FUT_MODEL_CHECK */

#include "mc.h" /* test/mc/mc.h: the checker's entry points */

#define fut__aword_init(p, v) mc_init((p), (uintptr_t)(v))
#define fut__load(p, mo) mc_load((p), (mo), __FILE__, __LINE__)
#define fut__store(p, v, mo)                                                 \
    mc_store((p), (uintptr_t)(v), (mo), __FILE__, __LINE__)
#define fut__swap(p, v, mo)                                                  \
    mc_swap((p), (uintptr_t)(v), (mo), __FILE__, __LINE__)
#define fut__cas(p, expp, v, mos, mof)                                       \
    mc_cas((p), (expp), (uintptr_t)(v), (mos), (mof), __FILE__, __LINE__)
#define fut__cas_weak(p, expp, v, mos, mof) fut__cas(p, expp, v, mos, mof)
#define fut__fetch_add(p, v, mo)                                             \
    mc_rmw((p), MC_ADD, (uintptr_t)(v), (mo), __FILE__, __LINE__)
#define fut__fetch_sub(p, v, mo)                                             \
    mc_rmw((p), MC_SUB, (uintptr_t)(v), (mo), __FILE__, __LINE__)
#define fut__fetch_or(p, v, mo)                                              \
    mc_rmw((p), MC_OR, (uintptr_t)(v), (mo), __FILE__, __LINE__)
#define fut__fetch_and(p, v, mo)                                             \
    mc_rmw((p), MC_AND, (uintptr_t)(v), (mo), __FILE__, __LINE__)
#define fut__fetch_xor(p, v, mo)                                             \
    mc_rmw((p), MC_XOR, (uintptr_t)(v), (mo), __FILE__, __LINE__)
#define fut__fence(mo) mc_fence((mo), __FILE__, __LINE__)
#define fut__compiler_fence() ((void)0) /* the checker keeps program order */
#define fut__plain_read(p, n) mc_plain_read((p), (n), __FILE__, __LINE__)
#define fut__plain_write(p, n) mc_plain_write((p), (n), __FILE__, __LINE__)
#define fut__spin_hint() mc_yield(__FILE__, __LINE__)
#define fut__cpu_relax() mc_yield(__FILE__, __LINE__)

#endif /* FUT_MODEL_CHECK */

#endif /* FUT_UTIL_ATOMIC_H */
