/* SPDX-License-Identifier: MIT */
/** \file
 * fut core: results, the allocator hook, the clock, wakers, the poll
 * context, the future interface and async functions as state machines.
 *
 * Nothing here knows about threads, sockets or runtimes: a user's own
 * executor can poll fut futures with a waker of its own.
 *
 * Conventions that hold for every call in the library:
 *   - results are int (or ssize_t): >= 0 on success, a negative FUT_E* code
 *     (= -errno, or one of fut's own codes below) on failure; errno is never
 *     used to report;
 *   - a call that fails never invokes the waker or callback it was given and
 *     takes ownership of nothing;
 *   - programming errors (polling a dropped future, foreign-thread misuse)
 *     abort with file:line in debug builds (FUT_ASSERT).
 */
#ifndef FUT_CORE_H
#define FUT_CORE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "fut/export.h"

FUT_BEGIN_DECLS

/* ---------------------------------------------------------------- results */

/** fut's own codes live in a reserved range below every errno value
 * (libuv's UV__EOF trick): -4095 .. -4000. */
#define FUT_ERRNO_MAP(X)                                                     \
    X(ECLOSED, -4095, "the other side of the channel or cell is gone")       \
    X(ELAGGED, -4094, "the receiver lagged and skipped messages")            \
    X(EEMPTY, -4093, "nothing to receive right now")                         \
    X(EFULL, -4092, "no room to send right now")                             \
    X(ELOST, -4091, "another completer won the race")                        \
    X(ETLS, -4090, "TLS error (protocol, alert or configuration)")           \
    X(ETLSCERT, -4089, "the TLS peer's certificate failed verification")     \
    X(ETLSTRUNC, -4088, "the TLS peer closed without close_notify")

/** The result codes of the library: fut's own (FUT_ERRNO_MAP) and the
 * -errno values its calls return. */
enum fut_errno {
#define FUT__ERRNO_ENUM(name, val, msg) FUT_##name = (val),
    FUT_ERRNO_MAP(FUT__ERRNO_ENUM)
#undef FUT__ERRNO_ENUM
        FUT_ECANCELED = -ECANCELED, /**< cancelled (aborted, dropped) */
    FUT_ETIMEDOUT = -ETIMEDOUT,     /**< a deadline or timeout passed */
    FUT_ENOMEM = -ENOMEM,           /**< an allocation failed */
    FUT_EINVAL = -EINVAL,           /**< an invalid argument or state */
    FUT_EAGAIN = -EAGAIN,           /**< try again (would block) */
    FUT_EBUSY = -EBUSY,             /**< busy (e.g. a nested block_on) */
    FUT_ESHUTDOWN = -ESHUTDOWN,     /**< the runtime is shutting down */
    FUT_ENOSYS = -ENOSYS,           /**< not available on this system/build */
    FUT_EPERM = -EPERM              /**< not permitted */
};

/** A static, human-readable description of any fut result code (own codes
 * and -errno values). Thread-safe. Never returns NULL. */
FUT_EXTERN const char *fut_strerror(int err);
/** The symbolic name ("FUT_ECLOSED", "ETIMEDOUT", ...) of a result code. */
FUT_EXTERN const char *fut_err_name(int err);

/* ---------------------------------------------------------- allocator hook */

/** The lua_Alloc shape: allocate when ptr == NULL, free when nsize == 0,
 * resize otherwise. Must return NULL on failure (fut then returns
 * FUT_ENOMEM and leaks nothing). 'osize' is the size of the old block. */
typedef void *(*fut_alloc_fn)(void *ud, void *ptr, size_t osize,
                              size_t nsize);

/** Installs the allocator every allocation of fut goes through. fn == NULL
 * restores the default (malloc/realloc/free). Call it before any runtime
 * exists, from one thread; blocks allocated under one hook must not be
 * freed under another. */
FUT_EXTERN void fut_set_allocator(fut_alloc_fn fn, void *ud);
/** Number of blocks currently allocated through the hook (all threads).
 * Tests assert it is back to its start value: the leak check. */
FUT_EXTERN long fut_alloc_live(void);
/** Total number of allocation calls made so far (successful or not). Tests
 * use it to fail the Nth allocation. */
FUT_EXTERN long fut_alloc_count(void);
/** Allocates 'size' bytes through the hook (counted by fut_alloc_live),
 * for libraries built on fut (libfut-tls) whose blocks the leak check
 * must see. Returns NULL on failure. Thread: any. */
FUT_EXTERN void *fut_mem_alloc(size_t size);
/** Frees a block of fut_mem_alloc ('size' as allocated; NULL: nothing).
 * Thread: any. */
FUT_EXTERN void fut_mem_free(void *p, size_t size);

/* ---------------------------------------------------------------- clock */

/** Monotonic time in nanoseconds (CLOCK_MONOTONIC). Deadlines everywhere in
 * fut are absolute values of this clock: 0 = do not wait, -1 = forever. */
FUT_EXTERN int64_t fut_now_ns(void);

/* --------------------------------------------------------------- wakers */

/** \struct fut_waker
 * A waker is a pointer plus a vtable: waking is one indirect call, cloning
 * is a reference-count increment, neither allocates (C9). Every function
 * may be called from any thread, including threads no runtime knows.
 * Spurious wakes, and wakes of tasks that finished or were dropped, are
 * harmless. */
struct fut_waker;
/** The functions behind a waker; each entry says whether it consumes the
 * waker it is called on. */
struct fut_waker_vtable {
    /** Returns a new waker for the same target; does not consume 'data'. */
    struct fut_waker (*clone)(const void *data);
    /** Wakes the target and consumes this waker (its reference). */
    void (*wake)(const void *data);
    /** Wakes the target; the waker stays valid and owned by the caller. */
    void (*wake_by_ref)(const void *data);
    /** Releases this waker without waking. */
    void (*drop)(const void *data);
};

struct fut_waker {
    const void *data;                  /**< target, opaque to the holder */
    const struct fut_waker_vtable *vt; /**< NULL: no waker (an empty slot) */
};

/** An empty waker slot. */
#define FUT_WAKER_NONE                                                       \
    {                                                                        \
        0, 0                                                                 \
    }

/** 1 when the slot '*w' holds a waker, 0 when it is empty. */
static inline int fut_waker_is_set(const struct fut_waker *w)
{
    return w->vt != 0;
}

/** A new waker for the target of '*w' (its vtable's clone); '*w' stays
 * the caller's. */
static inline struct fut_waker fut_waker_clone(const struct fut_waker *w)
{
    return w->vt->clone(w->data);
}

/** Wakes and consumes '*w'; the slot is left empty. */
static inline void fut_waker_wake(struct fut_waker *w)
{
    const struct fut_waker_vtable *vt = w->vt;
    const void *data = w->data;
    w->vt = 0;
    w->data = 0;
    vt->wake(data);
}

/** Wakes the target of '*w' without consuming it: '*w' stays set. */
static inline void fut_waker_wake_by_ref(const struct fut_waker *w)
{
    w->vt->wake_by_ref(w->data);
}

/** Drops '*w' if the slot holds a waker; the slot is left empty. */
static inline void fut_waker_drop(struct fut_waker *w)
{
    if (w->vt != 0) {
        const struct fut_waker_vtable *vt = w->vt;
        w->vt = 0;
        vt->drop(w->data);
    }
}

/** True when waking 'a' and waking 'b' would wake the same target, so a
 * future that registered 'a' may skip re-cloning 'b'. */
static inline int fut_waker_will_wake(const struct fut_waker *a,
                                      const struct fut_waker *b)
{
    return a->vt == b->vt && a->data == b->data;
}

/** Replaces the waker in '*slot' with a clone of 'w' unless it already
 * holds one that will wake the same target. Not atomic: for slots only the
 * polling side touches. */
static inline void fut_waker_set(struct fut_waker *slot,
                                 const struct fut_waker *w)
{
    if (slot->vt != 0 && fut_waker_will_wake(slot, w))
        return;
    fut_waker_drop(slot);
    {
        /* Field by field: a struct copy of the returned pair compiles to
         * a spill and a 16-byte reload that store forwarding cannot
         * serve (a stall per registration). */
        struct fut_waker n = fut_waker_clone(w);
        slot->data = n.data;
        slot->vt = n.vt;
    }
}

/** A waker that does nothing. Static; cloning and dropping are free. */
FUT_EXTERN struct fut_waker fut_waker_noop(void);

/* -------------------------------------------------------------- context */

/** What poll receives: the waker of the task being polled (borrowed: clone
 * it to keep it) and the cooperative budget of the current task tick.
 * Runtimes fill it in; a user's executor calls fut_context_init. */
struct fut_context {
    /* public */
    struct fut_waker waker; /**< borrowed for the duration of the poll */
    /* private */
    int budget; /**< polls of ready leaf futures left; <0 = no limit */
    void *task; /**< the fut task being polled, or NULL */
};

/** Initialises 'cx' for a user's own executor: 'waker' (borrowed for the
 * polls), no coop budget, no fut task. */
static inline void fut_context_init(struct fut_context *cx,
                                    struct fut_waker waker)
{
    cx->waker = waker;
    cx->budget = -1;
    cx->task = 0;
}

/** Cooperative scheduling (Tokio's coop): every library leaf future that is
 * about to return READY calls this first. When the task has used its
 * budget for this tick, it wakes the task and returns 0: the future must
 * then return FUT_PENDING (having changed nothing), so a task that always
 * finds work ready still yields to its peers. Returns 1 to proceed. */
static inline int fut_coop_proceed(struct fut_context *cx)
{
    if (cx->budget < 0)
        return 1;
    if (cx->budget == 0) {
        fut_waker_wake_by_ref(&cx->waker);
        return 0;
    }
    cx->budget--;
    return 1;
}

/* --------------------------------------------------------------- futures */

/** What a poll returns. */
enum fut_poll_result {
    FUT_PENDING = 0, /**< not ready; cx->waker will be woken on progress */
    FUT_READY = 1    /**< done; the output is stored */
};

struct fut_future;

/** The functions of a future type: poll, drop, a name and, optionally,
 * the children it waits on. */
struct fut_future_vtable {
    /** Non-blocking probe: FUT_READY with the output stored where the
     * future documents, or FUT_PENDING having arranged that cx->waker is
     * woken when progress is possible. Never blocks (C6). Call it through
     * fut_poll, which defines polls after READY (C8). */
    int (*poll)(struct fut_future *f, struct fut_context *cx);
    /** Releases everything the future holds, in any state: unregisters
     * wakers, timers and waiter nodes (C11). Never frees the future's own
     * storage (the caller owns it) and never clears an output already
     * produced. May be NULL when there is nothing to release. */
    void (*drop)(struct fut_future *f);
    /** Name shown in task dumps and debug reports. */
    const char *name;
    /** Optional: fills 'out' with up to 'max' children the future is
     * waiting on (combinators with several children); returns how many it
     * has. NULL: the only child is 'awaiting'. */
    size_t (*children)(struct fut_future *f, struct fut_future **out,
                       size_t max);
};

/** The common header: the first member of every future struct, which is
 * what lets a 'struct my_future *' be used as a 'struct fut_future *'.
 * The caller owns the storage; a future must not move after its first
 * poll (it may be copied before, e.g. into a task by fut_spawn). */
struct fut_future {
    const struct fut_future_vtable *vt; /**< the future's type */
    struct fut_future *awaiting; /**< child awaited now (dropped with us) */
    uint32_t resume;             /**< resume point of an async function */
    uint32_t flags;              /**< FUT_F_* below */
};

#define FUT_F_READY 1u   /**< poll returned FUT_READY; output is final */
#define FUT_F_DROPPED 2u /**< drop ran; the future may not be polled again */

/** Initialises the header of a future; every *_init of a future calls it. */
static inline void fut_future_init(struct fut_future *f,
                                   const struct fut_future_vtable *vt)
{
    f->vt = vt;
    f->awaiting = 0;
    f->resume = 0;
    f->flags = 0;
}

FUT_EXTERN void fut__assert_fail(const char *expr, const char *file,
                                 int line);
/** A programming error in a call to 'fn': prints "fut: <fn>: <what>
 * (called from <caller>)" and aborts. 'caller' NULL: the code that called
 * fut__misuse (an inline function of these headers, inlined into yours). */
FUT_EXTERN void fut__misuse(const char *fn, const char *what,
                            const void *caller) __attribute__((noreturn));

/** Polls 'f'. After it once returned FUT_READY, later polls return FUT_READY
 * again without running the future: the output already stored stays as it
 * was (C8, for every future). Polling a dropped future is a programming
 * error (aborts in debug builds). */
static inline int fut_poll(struct fut_future *f, struct fut_context *cx)
{
    if (f->flags & (FUT_F_READY | FUT_F_DROPPED)) {
        if (f->flags & FUT_F_DROPPED)
            fut__assert_fail("poll after drop", __FILE__, __LINE__);
        return FUT_READY;
    }
    if (f->vt->poll(f, cx) == FUT_PENDING)
        return FUT_PENDING;
    f->flags |= FUT_F_READY;
    return FUT_READY;
}

/** Cancels by dropping: releases what 'f' holds, in whatever state it is.
 * Idempotent; cannot fail or be refused. The storage stays the caller's.
 * 'f' NULL, or a future never initialised (no vtable), is a programming
 * error: it aborts with a message naming the caller, in every build. */
static inline void fut_drop(struct fut_future *f)
{
    if (__builtin_expect(!f || !f->vt, 0))
        fut__misuse(
            "fut_drop",
            f ? "the future was never initialised" : "the future is NULL", 0);
    if (f->flags & FUT_F_DROPPED)
        return;
    f->flags |= FUT_F_DROPPED;
    if (f->vt->drop)
        f->vt->drop(f);
}

/** 1 once 'f' has returned FUT_READY. */
static inline int fut_is_ready(const struct fut_future *f)
{
    return (f->flags & FUT_F_READY) != 0;
}

/** Any future struct whose first member is a struct fut_future. */
#define FUT_AS_FUTURE(p) ((struct fut_future *)(void *)(p))

/* ------------------------------------------------------ async functions */

/** \def FUT_BEGIN(fp)
 * Opens the body of an async function's poll ('fp': its struct
 * fut_future); FUT_END closes it.
 *
 * An async function is a future whose poll is written with these macros;
 * its locals live in its struct, its children are stored inline and the
 * child being awaited is recorded in the header, so that dropping the
 * parent drops the child (fut_async_drop) - the C counterpart of the
 * compiler's desugaring.
 *
 *   struct hello { struct fut_future base; struct fut_yield y; int i; };
 *   static int hello_poll(struct fut_future *f, struct fut_context *cx) {
 *       struct hello *h = (struct hello *)f;
 *       FUT_BEGIN(f);
 *       for (h->i = 0; h->i < 3; h->i++) {
 *           fut_yield_init(&h->y);
 *           FUT_AWAIT(f, &h->y);
 *       }
 *       FUT_END(f);
 *   }
 *   FUT_ASYNC_VTABLE(hello_vt, "hello", hello_poll, NULL);
 *
 * Rules: the poll parameter for the context is named 'cx'; every value
 * live across an await is in the struct (C locals are lost); at most one
 * FUT_AWAIT/FUT_YIELD per source line; no 'switch' may enclose an await.
 * A future may be copied until its first poll (fut_spawn copies it into
 * the task), so it must not hold pointers into itself before then: set up
 * children that point into the struct (an output pointer, a combinator
 * over sibling fields) inside the poll, after FUT_BEGIN. What the struct
 * holds before its first poll (a channel end, say) is released by the
 * cleanup hook when the function is dropped unpolled. */
#if defined(__GNUC__) && __GNUC__ >= 7 || defined(__clang__)
#define FUT__FALLTHROUGH __attribute__((fallthrough))
#else
#define FUT__FALLTHROUGH ((void)0)
#endif

#define FUT_BEGIN(fp)                                                        \
    switch ((fp)->resume) {                                                  \
    case 0:

/** Awaits 'child' (a future pointer): polls it, returning FUT_PENDING from
 * the enclosing poll while it is pending; once it is ready, drops it (its
 * output stays readable in its struct) and continues. */
#define FUT_AWAIT(fp, child)                                                 \
    do {                                                                     \
        (fp)->awaiting = FUT_AS_FUTURE(child);                               \
        (fp)->resume = __LINE__;                                             \
        FUT__FALLTHROUGH;                                                    \
    case __LINE__:                                                           \
        if (fut_poll((fp)->awaiting, cx) == FUT_PENDING)                     \
            return FUT_PENDING;                                              \
        fut_drop((fp)->awaiting);                                            \
        (fp)->awaiting = 0;                                                  \
    } while (0)

/** Awaits 'child' as FUT_AWAIT does, but each poll evaluates 'step' (an
 * expression that polls the child itself, and may look at other things
 * first or when it waits) in place of fut_poll(child): while 'step' is
 * FUT_PENDING the enclosing poll returns FUT_PENDING; any other value is
 * stored in 'r' (an int lvalue; a C local is fine, as it is read before
 * the next await), the child is dropped and the body continues. The
 * child is what a task dump shows and what dropping the function drops.
 * Use it to check a token or a deadline around one child without a
 * future wrapped around it per await (examples/echo_server.c, conn_read):
 *   FUT_AWAIT_STEP(f, &c->rd, r, conn_read(c, cx));
 *   if (r < 0) ... // conn_read's own result: cancelled, timed out */
#define FUT_AWAIT_STEP(fp, child, r, step)                                   \
    do {                                                                     \
        (fp)->awaiting = FUT_AS_FUTURE(child);                               \
        (fp)->resume = __LINE__;                                             \
        FUT__FALLTHROUGH;                                                    \
    case __LINE__:                                                           \
        if (((r) = (step)) == FUT_PENDING)                                   \
            return FUT_PENDING;                                              \
        fut_drop((fp)->awaiting);                                            \
        (fp)->awaiting = 0;                                                  \
    } while (0)

/** Returns FUT_PENDING once, having woken the task: the runtime polls its
 * other ready tasks first (tokio::task::yield_now). */
#define FUT_YIELD(fp)                                                        \
    do {                                                                     \
        (fp)->resume = __LINE__;                                             \
        fut_waker_wake_by_ref(&cx->waker);                                   \
        return FUT_PENDING;                                                  \
    case __LINE__:;                                                          \
    } while (0)

/** Completes the async function (store the output first). */
#define FUT_RETURN(fp)                                                       \
    do {                                                                     \
        (fp)->resume = UINT32_MAX;                                           \
        return FUT_READY;                                                    \
    } while (0)

/** Closes the body of an async function's poll: completes it (store the
 * output first); resuming it after it returned aborts. */
#define FUT_END(fp)                                                          \
    (fp)->resume = UINT32_MAX;                                               \
    return FUT_READY;                                                        \
    default:                                                                 \
        fut__assert_fail("async function resumed after it returned",         \
                         __FILE__, __LINE__);                                \
        return FUT_READY;                                                    \
        }

/** The generic drop of an async function: drops the awaited child. */
FUT_EXTERN void fut_async_drop(struct fut_future *f);

/** Defines 'static const struct fut_future_vtable vtname' for an async
 * function. 'cleanup' (void (*)(struct fut_future *), or NULL) runs on drop
 * after the awaited child was dropped: release what the locals own there. */
#define FUT_ASYNC_VTABLE(vtname, name, pollfn, cleanup)                      \
    static void vtname##_drop(struct fut_future *f)                          \
    {                                                                        \
        void (*cl)(struct fut_future *) = (cleanup);                         \
        fut_async_drop(f);                                                   \
        if (cl)                                                              \
            cl(f);                                                           \
    }                                                                        \
    static const struct fut_future_vtable vtname = {(pollfn), vtname##_drop, \
                                                    (name), 0}

/* ---------------------------------------------------------- leaf futures */

/** fut_ready: READY on the first poll. Output: 'value', as given.
 * cancel-safe (holds nothing). */
struct fut_ready {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    intptr_t value;         /**< output */
};
/** Initialises 'f', READY with 'value' on its first poll. */
FUT_EXTERN void fut_ready_init(struct fut_ready *f, intptr_t value);

/** fut_pending: PENDING forever; registers nothing, since nothing can ever
 * wake it (the debug check knows this future: see fut_pending_forever).
 * cancel-safe. */
struct fut_pending {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
};
/** Initialises 'f', PENDING forever. */
FUT_EXTERN void fut_pending_init(struct fut_pending *f);

/** fut_lazy: calls fn(arg) on the first poll and is READY with its result.
 * Output: 'value'. cancel-safe (fn has not run, or has run to its end). */
struct fut_lazy {
    struct fut_future base;    /**< the future header (fut_poll, fut_drop) */
    intptr_t (*fn)(void *arg); /**< called on the first poll */
    void *arg;                 /**< passed to fn */
    intptr_t value;            /**< output */
};
/** Initialises 'f' to call fn(arg) on its first poll. */
FUT_EXTERN void fut_lazy_init(struct fut_lazy *f, intptr_t (*fn)(void *),
                              void *arg);

/** fut_yield: PENDING once (having woken the task), READY on the next poll.
 * cancel-safe. */
struct fut_yield {
    struct fut_future base; /**< the future header (fut_poll, fut_drop) */
    int yielded;            /**< private: 1 once it returned PENDING */
};
/** Initialises 'f': PENDING once, then READY. */
FUT_EXTERN void fut_yield_init(struct fut_yield *f);

/* ------------------------------------------------------ debug reporting */

/** Debug builds report contract violations they detect (C6 slow poll, C7
 * PENDING that can never be woken) through this hook; the default prints
 * the message on stderr. 'kind' is "never-woken", "slow-poll", ... */
typedef void (*fut_report_fn)(void *ud, const char *kind, const char *msg);
/** Installs the report hook, called with 'ud'; fn == NULL restores the
 * default (stderr). */
FUT_EXTERN void fut_set_report_hook(fut_report_fn fn, void *ud);
/** Number of reports made so far (all kinds), for tests. */
FUT_EXTERN long fut_report_count(void);

FUT_END_DECLS

#endif /* FUT_CORE_H */
