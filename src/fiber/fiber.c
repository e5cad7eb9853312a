/* SPDX-License-Identifier: MIT */
/* Fibers: a future whose poll runs a function on a stack of its own
 * (include/fut/fiber.h has the contract, docs/fibers.md the model).
 *
 * Rules of a fiber ('struct fut__fiber', one per fiber, allocated at
 * spawn, freed once fn has returned):
 *
 *   state      NEW        fn has not started; 'sp' is the initial frame
 *              SUSPENDED  switched out inside fut_await ('sp' saved)
 *              RUNNING    on its stack now, on the thread whose poll (or
 *                         drop) switched in; 'caller_sp' is that
 *                         thread's stack pointer
 *              DONE       fn returned; the stack may be given back
 *   Only the thread that owns the task (it polls or drops the fiber
 *   future: the scheduler guarantees one at a time, C10) touches the
 *   fiber, and it does so only inside that poll or drop: every field is
 *   plain. A task moving between workers moves the fiber with it; the
 *   scheduler's hand-off of the task (its queues' release/acquire) is
 *   what orders one poll's writes before the next poll's reads.
 *
 *   Switching in (fiber_resume, the poller's side): 'cx' = the poll's
 *   context (NULL for a drop), this thread's current fiber becomes this
 *   one (nested: a fiber's poll may drop another fiber, whose unwinding
 *   then runs on top of it - the previous one is restored after), then
 *   fut__ctx_switch. Switching out (fiber_suspend, the fiber's side)
 *   comes back to exactly that point, on the same thread: a fiber
 *   never migrates while it runs, only between polls.
 *
 *   fut_await(f): polls f with 'cx' until READY; at each PENDING the
 *   fiber switches out and the poll returns PENDING (f registered the
 *   task's waker: C7 holds for the fiber future because it holds for f).
 *   'cancelled' (set by the drop before it switches in) makes the await
 *   in progress and every later one drop f and return FUT_ECANCELED
 *   without polling.
 *
 *   fut_fiber_yield: the same as fut_await of a struct fut_yield
 *   without the future: it wakes the task through 'cx' (the self-wake
 *   that makes the poll's end re-queue it behind every task ready now),
 *   switches out, and on the next switch in returns 0, or FUT_ECANCELED
 *   when 'cancelled' was set meanwhile. 'yielding' (with the await site)
 *   is what the task dump shows while it is parked there. No budget is
 *   spent, as fut_yield spends none.
 *
 *   The drop of a fiber that is not DONE switches in once with
 *   'cancelled' set: fn runs to its return (every await now returns at
 *   once), then the stack is freed. A NEW fiber is started that way too,
 *   so fn always runs exactly once.
 *
 * Nothing here reads a thread-local after a switch on the fiber's side:
 * the fiber may be on another thread by then, and compilers may keep a
 * thread-local's address in a register across a call.
 *
 * Sanitizers: ASan is told of every switch (start/finish_switch_fiber,
 * with the bounds of the stack we leave saved by the other side), TSan
 * of every switch (one TSan fiber per fiber, created at spawn, destroyed
 * with it; switches synchronise, as the scheduler's hand-off does).
 */
#include <stdio.h>
#include <string.h>

#include "fiber/fiber_internal.h"
#include "rt/rt_internal.h"
#include "rt/watchdog.h"
#include "scope/scope_internal.h"

#ifdef FUT__ASAN
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef FUT__TSAN
#include <sanitizer/tsan_interface.h>
#endif

enum { F_NEW, F_SUSPENDED, F_RUNNING, F_DONE };

/* Awaits after the cancel before a debug build reports the fiber. */
#define IGNORED_CANCEL_REPORT 10000

struct fut__fiber {
    /* What every switch and yield touches, first (one cache line). */
    void *sp;                    /* the fiber's, while it is switched out */
    void *caller_sp;             /* the poller's, while the fiber runs */
    struct fut_context *cx;      /* the poll running it; NULL in a drop */
    struct fut__fiber *prev;     /* this thread's fiber before it (nested) */
    struct fut_future *awaiting; /* what its fut_await polls now */
    const char *await_file;      /* where that fut_await (or yield) is */
    int await_line;
    int state;     /* F_* */
    int cancelled; /* every await returns FUT_ECANCELED */
    int yielding;  /* suspended in fut_fiber_yield */
    /* The rest. */
    struct fut__stack stack;
    fut_fiber_fn fn;
    void *arg;
    intptr_t value;              /* fn's return value (DONE) */
    unsigned long cancel_awaits; /* awaits since the cancel */
    const char *name;
    const char *spawn_file;
    int spawn_line;
#ifdef FUT__ASAN
    void *fake_fiber; /* ASan fake stacks while switched out */
    void *fake_caller;
    const void *caller_bottom; /* the stack we return to */
    size_t caller_size;
#endif
#ifdef FUT__TSAN
    void *tsan_fiber;
    void *tsan_caller;
#endif
};

/* The fiber running on this thread (NULL: none). */
static _Thread_local struct fut__fiber *tls_fiber;

/* Out of line, and out of IPA for gcc: for the readers of thread-locals
 * on the fiber's side (current_fiber, yield_enter). */
#if defined(__GNUC__) && !defined(__clang__)
#define FIBER_TLS_READER __attribute__((noinline, noipa))
#else
#define FIBER_TLS_READER __attribute__((noinline))
#endif

/* Reads tls_fiber on the fiber's side. Out of line (and out of IPA for
 * gcc): a compiler may keep a thread-local's address for the length of
 * a function (gcc bug 26461), and with LTO a caller that awaits twice
 * could inline fut_await_at twice and reuse the first thread's address
 * after a migration. The call computes it afresh. */
FIBER_TLS_READER
static struct fut__fiber *current_fiber(void)
{
    return tls_fiber;
}

#if !defined(FUT__ASAN) && !defined(FUT__TSAN)
/* The guard-page report's lookup (guard.c, which gets it at install). */
static int guard_hit(const void *addr, const char **name, const char **file,
                     int *line, size_t *usable)
{
    const struct fut__fiber *fb = current_fiber(); /* signal-safe */
    if (!fb || (const char *)addr < (const char *)fb->stack.base ||
        (const char *)addr >= fb->stack.lo)
        return 0;
    *name = fb->name;
    *file = fb->spawn_file;
    *line = fb->spawn_line;
    *usable = fb->stack.usable;
    return 1;
}
#endif

/* ------------------------------------------------------------- switches */

/* Poller's side, before and after its switch. */
static inline void san_enter(struct fut__fiber *fb)
{
#ifdef FUT__ASAN
    __sanitizer_start_switch_fiber(&fb->fake_caller, fb->stack.lo,
                                   fb->stack.usable);
#endif
#ifdef FUT__TSAN
    fb->tsan_caller = __tsan_get_current_fiber();
    __tsan_switch_to_fiber(fb->tsan_fiber, 0);
#endif
    (void)fb;
}

static inline void san_back(struct fut__fiber *fb)
{
#ifdef FUT__ASAN
    __sanitizer_finish_switch_fiber(fb->fake_caller, NULL, NULL);
#endif
    (void)fb;
}

/* Fiber's side: arrived on the fiber's stack / about to leave it
 * ('last': for good, its fake stack is destroyed). */
static inline void san_arrived(struct fut__fiber *fb)
{
#ifdef FUT__ASAN
    __sanitizer_finish_switch_fiber(fb->fake_fiber, &fb->caller_bottom,
                                    &fb->caller_size);
#endif
    (void)fb;
}

static inline void san_leave(struct fut__fiber *fb, int last)
{
#ifdef FUT__ASAN
    __sanitizer_start_switch_fiber(last ? NULL : &fb->fake_fiber,
                                   fb->caller_bottom, fb->caller_size);
#endif
#ifdef FUT__TSAN
    __tsan_switch_to_fiber(fb->tsan_caller, 0);
#endif
    (void)fb;
    (void)last;
}

/* Switches onto 'fb' until it suspends or returns. */
static void fiber_resume(struct fut__fiber *fb, struct fut_context *cx)
{
    FUT_CHECK(fb->state == F_NEW || fb->state == F_SUSPENDED);
#if !defined(FUT__ASAN) && !defined(FUT__TSAN)
    fut__fiber_guard_thread();
#endif
    fb->cx = cx;
    fb->prev = tls_fiber;
    tls_fiber = fb;
    fb->state = F_RUNNING;
    san_enter(fb);
    fut__ctx_switch(&fb->caller_sp, fb->sp, fb);
    san_back(fb);
    tls_fiber = fb->prev;
    fb->cx = NULL;
}

/* The fiber's side of a suspension: back to the poller; returns when a
 * poll (or the drop) switches in again. noinline: no caller may keep a
 * thread-local's address across it. */
static __attribute__((noinline)) void fiber_suspend(struct fut__fiber *fb)
{
    fb->state = F_SUSPENDED;
    san_leave(fb, 0);
    fut__ctx_switch(&fb->sp, fb->caller_sp, NULL);
    san_arrived(fb);
}

/* First code on the fiber's stack (through fut__ctx_entry). */
static void fiber_main(void *p)
{
    struct fut__fiber *fb = p;
    san_arrived(fb);
    fb->value = fb->fn(fb->arg);
    fb->awaiting = NULL;
    fb->state = F_DONE;
    san_leave(fb, 1);
    void *dead;
    fut__ctx_switch(&dead, fb->caller_sp, NULL);
    fut__assert_fail("a finished fiber was resumed", __FILE__, __LINE__);
}

/* The initial frame of a new stack, in the layout fut__ctx_switch
 * restores (switch_*.S): the entry function in a callee-saved register
 * the trampoline calls, fut__ctx_entry as the return address. */
static void *ctx_make(char *top)
{
    uintptr_t t = (uintptr_t)top & ~(uintptr_t)15;
#if defined(__x86_64__)
    uint64_t *w = (uint64_t *)(t - 72);
    memset(w, 0, 72);
    w[0] = 0x1F80u | ((uint64_t)0x037Fu << 32); /* MXCSR, x87 CW defaults */
    w[6] = (uint64_t)(uintptr_t)fiber_main;     /* rbx */
    w[8] = (uint64_t)(uintptr_t)fut__ctx_entry; /* return address */
    return w;
#elif defined(__aarch64__)
    uint64_t *w = (uint64_t *)(t - 160);
    memset(w, 0, 160);
    w[8] = (uint64_t)(uintptr_t)fiber_main;      /* x19 */
    w[19] = (uint64_t)(uintptr_t)fut__ctx_entry; /* x30 */
    return w;
#else
#error "fibers: no context switch for this architecture (switch_*.S)"
#endif
}

/* ---------------------------------------------------------- lifecycle */

static void fiber_free(struct fut__fiber *fb)
{
#ifdef FUT__TSAN
    __tsan_destroy_fiber(fb->tsan_fiber);
#endif
    fut__stack_put(&fb->stack);
    fut__free(fb, sizeof *fb);
}

static const char *fiber_label(struct fut_future *f);
static const struct fut_future_vtable fiber_vt;

static int fiber_new(struct fut_fiber *ff, fut_fiber_fn fn, void *arg,
                     const struct fut_fiber_opts *opts, const char *file,
                     int line)
{
    if (!fn)
        return FUT_EINVAL;
    struct fut__fiber *fb = fut__alloc(sizeof *fb);
    if (!fb)
        return FUT_ENOMEM;
    memset(fb, 0, sizeof *fb);
    if (fut__stack_get(opts ? opts->stack_size : 0, &fb->stack) != 0) {
        fut__free(fb, sizeof *fb);
        return FUT_ENOMEM;
    }
    fut__store(&fut__dump_describe_hook, (uintptr_t)fut__fiber_describe,
               FUT__RELAXED); /* the task dump shows where fibers park */
    /* Reports and dumps name fibers by theirs (rt/watchdog.h). */
    fut__store(&fut__label_name_vt, (uintptr_t)&fiber_vt, FUT__RELAXED);
    fut__store(&fut__label_name_hook, (uintptr_t)fiber_label, FUT__RELAXED);
#if !defined(FUT__ASAN) && !defined(FUT__TSAN)
    fut__fiber_guard_install(guard_hit);
#endif
    fb->fn = fn;
    fb->arg = arg;
    fb->name = opts && opts->name ? opts->name : "fiber";
    fb->spawn_file = file;
    fb->spawn_line = line;
    fb->state = F_NEW;
    fb->sp = ctx_make(fb->stack.lo + fb->stack.usable);
#ifdef FUT__TSAN
    fb->tsan_fiber = __tsan_create_fiber(0);
    __tsan_set_fiber_name(fb->tsan_fiber, fb->name);
#endif
    fut_future_init(&ff->base, NULL); /* vtable set by the caller */
    ff->fb = fb;
    ff->value = 0;
    ff->result = 0;
    return 0;
}

static int fiber_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_fiber *ff = (struct fut_fiber *)f;
    struct fut__fiber *fb = ff->fb;
    fiber_resume(fb, cx);
    if (fb->state != F_DONE)
        return FUT_PENDING;
    ff->value = fb->value;
    ff->result = fb->value < 0 && fb->value >= INT32_MIN ? (int)fb->value : 0;
    ff->fb = NULL;
    fiber_free(fb);
    return FUT_READY;
}

/* The drop (a cancel): unwinds a fiber that has not returned - see the
 * rules on top. */
static void fiber_drop(struct fut_future *f)
{
    struct fut_fiber *ff = (struct fut_fiber *)f;
    struct fut__fiber *fb = ff->fb;
    if (!fb)
        return;
    FUT_CHECK(fb->state != F_RUNNING); /* a fiber cannot drop itself */
    fb->cancelled = 1;
    if (fb->state != F_DONE)
        fiber_resume(fb, NULL);
    FUT_CHECK(fb->state == F_DONE);
    ff->fb = NULL;
    fiber_free(fb);
}

static size_t fiber_children(struct fut_future *f, struct fut_future **out,
                             size_t max)
{
    struct fut__fiber *fb = ((struct fut_fiber *)f)->fb;
    if (!fb || !fb->awaiting || max == 0)
        return 0;
    out[0] = fb->awaiting;
    return 1;
}

static const struct fut_future_vtable fiber_vt = {fiber_poll, fiber_drop,
                                                  "fiber", fiber_children};

/* The name a fiber's task goes by (rt/watchdog.h's name hook): the
 * spawn's opts->name, "fiber" without one; NULL for other futures and a
 * fiber that returned. Its poller's thread, or a dump that holds every
 * poll still. */
static const char *fiber_label(struct fut_future *f)
{
    if (f->vt != &fiber_vt)
        return NULL;
    struct fut__fiber *fb = ((struct fut_fiber *)f)->fb;
    return fb ? fb->name : NULL;
}

int fut__fiber_describe(struct fut_future *f, char *buf, size_t len)
{
    if (f->vt != &fiber_vt)
        return 0;
    struct fut__fiber *fb = ((struct fut_fiber *)f)->fb;
    if (!fb) {
        snprintf(buf, len, "fiber (returned)");
        return 1;
    }
    const char *c = fb->cancelled ? ", cancelled" : "";
    if (fb->state == F_NEW)
        snprintf(buf, len, "fiber '%s' not started%s", fb->name, c);
    else if (fb->state == F_RUNNING && !fb->awaiting)
        snprintf(buf, len, "fiber '%s' running%s", fb->name, c);
    else if (fb->awaiting)
        snprintf(buf, len, "fiber '%s' parked in fut_await at %s:%d%s",
                 fb->name, fb->await_file, fb->await_line, c);
    else if (fb->yielding)
        snprintf(buf, len, "fiber '%s' parked in fut_fiber_yield at %s:%d%s",
                 fb->name, fb->await_file, fb->await_line, c);
    else
        snprintf(buf, len, "fiber '%s' suspended%s", fb->name, c);
    return 1;
}

/* -------------------------------------------------------------- spawns */

void fut_fiber_opts_init(struct fut_fiber_opts *o)
{
    FUT_ARG_VOID(o, "'o' is NULL");
    o->stack_size = 0;
    o->name = NULL;
}

int fut_fiber_spawn_at(struct fut_runtime *rt, fut_fiber_fn fn, void *arg,
                       const struct fut_fiber_opts *opts,
                       struct fut_join *join, const char *file, int line)
{
    if (rt)
        FUT_RT_CHECK(rt); /* before the fiber is made */
    struct fut_fiber ff;
    int r = fiber_new(&ff, fn, arg, opts, file, line);
    if (r != 0) {
        if (join)
            fut__join_init(join, NULL);
        return r;
    }
    ff.base.vt = &fiber_vt;
    r = fut_spawn_at(rt, &ff.base, sizeof ff, join, file, line);
    if (r != 0)
        fiber_free(ff.fb); /* never started: fn does not run */
    return r;
}

int fut_scope_fiber_spawn_at(struct fut_scope *s, fut_fiber_fn fn, void *arg,
                             const struct fut_fiber_opts *opts,
                             const char *file, int line)
{
    struct fut_fiber ff;
    int r = fiber_new(&ff, fn, arg, opts, file, line);
    if (r != 0)
        return r;
    ff.base.vt = &fiber_vt;
    struct fut_scope_opts so;
    fut_scope_opts_init(&so);
    FUT_SCOPE_RESULT(&so, struct fut_fiber, result);
    FUT_SCOPE_VALUE(&so, struct fut_fiber, value);
    r = fut_scope_spawn_at(s, &ff.base, sizeof ff, &so, file, line);
    if (r != 0)
        fiber_free(ff.fb);
    return r;
}

int fut_fiber_run_at(struct fut_runtime *rt, fut_fiber_fn fn, void *arg,
                     const struct fut_fiber_opts *opts, intptr_t *value,
                     const char *file, int line)
{
    if (rt)
        FUT_RT_CHECK(rt); /* named here, not in the calls it makes */
    struct fut_join j;
    intptr_t v = 0;
    int r = fut_fiber_spawn_at(rt, fn, arg, opts, &j, file, line);
    if (r != 0)
        return r;
    FUT_JOIN_OUTPUT(&j, struct fut_fiber, value, &v);
    r = fut_block_on(rt, &j.base);
    if (r == 0)
        r = j.result;
    fut_drop(&j.base);
    if (r == 0 && value)
        *value = v;
    return r;
}

intptr_t fut_fiber_value(const struct fut_join *j)
{
    FUT_ARG_OR(j, "'j' is NULL", 0);
    const struct fut_fiber *ff = fut_join_output(j);
    return ff ? ff->value : 0;
}

/* ------------------------------------------------------------- await */

static int misuse(const char *what, const char *file, int line)
{
#ifdef FUT_DEBUG
    fut__assert_fail(what, file, line);
#else
    (void)what;
    (void)file;
    (void)line;
#endif
    return FUT_EINVAL;
}

int fut_in_fiber(void)
{
    struct fut__fiber *fb = current_fiber();
    return fb != NULL && fb->state == F_RUNNING;
}

/* A yield or an await after the cancel: no poll, no switch. */
static int yield_cancelled(struct fut__fiber *fb, const char *file, int line)
{
    fb->awaiting = NULL;
    fb->yielding = 0;
    fb->await_file = file;
    fb->await_line = line;
#ifdef FUT_DEBUG
    if (++fb->cancel_awaits == IGNORED_CANCEL_REPORT)
        fut__report("fiber-ignores-cancel",
                    "fiber '%s' (spawned at %s:%d) awaited %d times after "
                    "it was cancelled, last at %s:%d: its drop waits for "
                    "fn to return",
                    fb->name, fb->spawn_file, fb->spawn_line,
                    IGNORED_CANCEL_REPORT, file, line);
#endif
    return FUT_ECANCELED;
}

static int await_cancelled(struct fut__fiber *fb, struct fut_future *f,
                           const char *file, int line)
{
    fut_drop(f);
    return yield_cancelled(fb, file, line);
}

int fut_await_at(struct fut_future *f, const char *file, int line)
{
    FUT_ARG_CHECK(f, "'f' is NULL");
    struct fut__fiber *fb = current_fiber();
    if (FUT_UNLIKELY(!fb || fb->state != F_RUNNING))
        return misuse("fut_await outside a fiber", file, line);
    if (!f)
        return misuse("fut_await of NULL", file, line);
    if (fb->cancelled)
        return await_cancelled(fb, f, file, line);
    fb->awaiting = f;
    fb->await_file = file;
    fb->await_line = line;
    while (fut_poll(f, fb->cx) == FUT_PENDING) {
        fiber_suspend(fb);
        if (fb->cancelled)
            return await_cancelled(fb, f, file, line);
    }
    fut_drop(f);
    fb->awaiting = NULL;
    return 0;
}

/* The yield's entry: this thread's fiber (current_fiber's read, for the
 * same reason out of line and out of IPA: it reads thread-locals on the
 * fiber's side), and the yield's prefetch (see the rules on top): when
 * the current-thread scheduler will poll a fiber next, the lines its
 * switch back in loads first - the top of its saved stack: the switch's
 * frame and the yield's - are requested now, about 150 instructions
 * before that switch needs them, and its record and its task are read
 * now. With 200 fibers yielding in turn each fiber's lines have left L1
 * by its next turn: those loads were most of the yield's data misses
 * (callgrind's cache simulation: 3.6 L1 read misses per yield, 3 of
 * them on the fiber's stack). A hint only: nothing is written, and a
 * queue that changes before then (a remote drain, the main future
 * first) costs only the wasted prefetch. */
FIBER_TLS_READER
static struct fut__fiber *yield_enter(void)
{
    struct fut_task *t = fut__ct_peek_next();
    if (t) {
        struct fut_future *f = fut__task_future(t);
        const struct fut__fiber *next =
            f->vt == &fiber_vt ? ((struct fut_fiber *)f)->fb : NULL;
        if (next) {
            const char *sp = next->sp;
            __builtin_prefetch(sp);
            __builtin_prefetch(sp + 64);
            __builtin_prefetch(sp + 128);
        }
    }
    return tls_fiber;
}

/* The yield without a future (see the rules on top): what fut_await of
 * a struct fut_yield did, minus that future's two polls, its drop and
 * the await's bookkeeping. */
int fut_fiber_yield_at(const char *file, int line)
{
    struct fut__fiber *fb = yield_enter();
    if (FUT_UNLIKELY(!fb || fb->state != F_RUNNING))
        return misuse("fut_fiber_yield outside a fiber", file, line);
    if (FUT_UNLIKELY(fb->cancelled))
        return yield_cancelled(fb, file, line);
    fb->await_file = file;
    fb->await_line = line;
    fb->yielding = 1;
    fut_waker_wake_by_ref(&fb->cx->waker); /* re-queued behind the others */
    fiber_suspend(fb);
    fb->yielding = 0;
    if (FUT_UNLIKELY(fb->cancelled))
        return yield_cancelled(fb, file, line);
    return 0;
}
