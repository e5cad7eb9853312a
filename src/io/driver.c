/* SPDX-License-Identifier: MIT */
/* The driver: what a scheduler parks in. One per runtime. It owns the
 * I/O backend (epoll or io_uring, chosen here: see pick_backend), the
 * unpark eventfd, the timer wheel and clock, the list
 * of registered fds and the blocking pool.
 *
 * Rules:
 *   - park() is called by one thread at a time (the current-thread
 *     runtime's thread, or whichever multi-thread worker parks); it alone
 *     touches 'tick' and 'events' and dispatches;
 *   - every other field below 'lock' (wheel, io lists, sleep_tick) is
 *     read and written under 'lock', by any thread: futures arm and
 *     cancel timers and register and close fds from whatever thread polls
 *     or drops them, also while another thread is inside park();
 *   - park() never holds 'lock' while it sleeps or wakes anyone: due
 *     timers are taken out of the wheel under the lock (state FIRED, waker
 *     moved into a local batch) and woken after it is released (two-phase
 *     firing, libuv's uv__run_timers);
 *   - a timer armed from another thread while park() sleeps, with a
 *     deadline before the one the sleep was computed for ('sleep_tick'),
 *     unparks the sleeper so it recomputes its timeout;
 *   - closed fds are not freed at once: an event for them may sit in the
 *     'events' array of a park in progress. They wait on 'release' and
 *     are freed at the start of the next park, when no event array from
 *     before their close can still be dispatched.
 *
 * 'park_state' (unpark without a syscall when nobody sleeps):
 *   IDLE -> PARKED     park, before a blocking wait
 *   PARKED -> NOTIFIED unpark, which then writes the eventfd
 *   IDLE -> NOTIFIED   unpark, no syscall: the next wait does not block
 *   * -> IDLE          park, after its wait
 * An unpark on the parking thread itself never happens (the schedulers
 * wake local tasks through their queues), so a wake found by dispatch
 * costs no eventfd write.
 */
#include <stdlib.h>
#include <string.h>

#include "io/driver.h"
#include "io/io_internal.h"
#include "io/simnet.h"
#include "platform/sys.h"
#ifdef FUT_HAVE_URING
#include "io/uring/uring.h"
#endif

enum { IDLE = 0, PARKED = 1, NOTIFIED = 2 };

#define FIRE_BATCH 64

static struct fut__iodrv *drv_of(struct fut__driver *b)
{
    return (struct fut__iodrv *)b;
}

/* ---------------------------------------------------------------- clock */

int64_t fut__iodrv_now(struct fut__iodrv *d)
{
    if (d->paused)
        return (int64_t)fut__load(&d->vnow, FUT__RELAXED);
    return fut_now_ns();
}

/* The tick that 'now' is in (floor). */
static uint64_t tick_at(struct fut__iodrv *d, int64_t now)
{
    return now <= d->origin ? 0
                            : (uint64_t)((now - d->origin) / FUT__NS_PER_MS);
}

/* The first tick at or after 'deadline' (ceil): never early. */
static uint64_t tick_for(struct fut__iodrv *d, int64_t deadline)
{
    if (deadline <= d->origin)
        return 0;
    return (uint64_t)((deadline - d->origin + FUT__NS_PER_MS - 1) /
                      FUT__NS_PER_MS);
}

int64_t fut_time_now(void)
{
    struct fut__iodrv *d = fut__iodrv_current();
    return d ? fut__iodrv_now(d) : fut_now_ns();
}

int fut_time_advance(int64_t ns)
{
    struct fut__iodrv *d = fut__iodrv_current();
    if (!d || !d->paused || ns < 0)
        return FUT_EINVAL;
    fut__mutex_lock(&d->lock);
    fut__store(&d->vnow, fut__load(&d->vnow, FUT__RELAXED) + (uintptr_t)ns,
               FUT__RELAXED);
    fut__mutex_unlock(&d->lock);
    return 0;
}

/* --------------------------------------------------------------- timers */

void fut__timer_init(struct fut__timer *t)
{
    memset(t, 0, sizeof *t);
    fut__aword_init(&t->state, FUT__TIMER_IDLE);
}

int fut__timer_arm(struct fut__iodrv *d, struct fut__timer *t,
                   int64_t deadline, const struct fut_waker *w)
{
    FUT_ASSERT(fut__load(&t->state, FUT__RELAXED) != FUT__TIMER_ARMED);
    t->drv = d;
    t->e.when = tick_for(d, deadline);
    fut__mutex_lock(&d->lock);
    if (fut__wheel_insert(&d->wheel, &t->e)) {
        fut__mutex_unlock(&d->lock);
        fut__store(&t->state, FUT__TIMER_FIRED, FUT__RELAXED);
        return 1;
    }
    fut__waker_store(&t->waker, fut_waker_clone(w));
    fut__store(&t->state, FUT__TIMER_ARMED, FUT__RELAXED);
    int kick = t->e.when < d->sleep_tick;
    int drive = fut__iodrv_claim_interest(d);
    fut__mutex_unlock(&d->lock);
    if (kick)
        fut__iodrv_unpark(d);
    if (drive)
        fut__iodrv_interest(d);
    return 0;
}

/* fut__timer_poll of an armed timer, under the driver's lock. */
static __attribute__((noinline)) int
timer_poll_locked(struct fut__iodrv *d, struct fut__timer *t,
                  const struct fut_waker *w)
{
    fut__mutex_lock(&d->lock);
    uintptr_t s = fut__load(&t->state, FUT__RELAXED);
    if (s == FUT__TIMER_ARMED)
        fut_waker_set(&t->waker, w);
    fut__mutex_unlock(&d->lock);
    if (s == FUT__TIMER_ARMED)
        return 0;
    return s == FUT__TIMER_DEAD ? FUT_ESHUTDOWN : 1;
}

int fut__timer_poll(struct fut__timer *t, const struct fut_waker *w)
{
    /* Acquire: pairs with the release store of FIRED in fire_timers. */
    uintptr_t s = fut__load(&t->state, FUT__ACQUIRE);
    if (s == FUT__TIMER_ARMED) {
        struct fut__iodrv *d = t->drv;
        /* A current-thread runtime's timers fire only in its block_on's
         * park, on the thread running it: when that is this thread, the
         * driver cannot touch the entry while we look, and a slot that
         * holds this waker already needs nothing (the common re-poll of
         * an armed sleep by its own task). */
        if (d->one_thread && d == fut__iodrv_current() &&
            fut_waker_will_wake(&t->waker, w))
            return 0;
        return timer_poll_locked(d, t, w);
    }
    return s == FUT__TIMER_DEAD ? FUT_ESHUTDOWN : 1;
}

void fut__timer_cancel(struct fut__timer *t)
{
    /* Acquire: see fut__timer_poll. */
    uintptr_t s = fut__load(&t->state, FUT__ACQUIRE);
    if (s == FUT__TIMER_IDLE)
        return;
    struct fut_waker w = FUT_WAKER_NONE;
    if (s == FUT__TIMER_ARMED) {
        struct fut__iodrv *d = t->drv;
        fut__mutex_lock(&d->lock);
        if (fut__load(&t->state, FUT__RELAXED) == FUT__TIMER_ARMED) {
            fut__wheel_remove(&d->wheel, &t->e);
            w = t->waker;
            t->waker.vt = NULL;
        }
        fut__mutex_unlock(&d->lock);
    }
    fut__store(&t->state, FUT__TIMER_IDLE, FUT__RELAXED);
    fut_waker_drop(&w);
}

int fut__timer_fires_after(const struct fut__timer *t, int64_t deadline)
{
    return t->e.when > tick_for(t->drv, deadline);
}

int fut__timer_fires_before(const struct fut__timer *t, int64_t deadline)
{
    return t->e.when < tick_for(t->drv, deadline);
}

/* Fires every timer due at 'now_tick'; returns how many. */
static int fire_timers(struct fut__iodrv *d, uint64_t now_tick)
{
    struct fut_waker batch[FIRE_BATCH];
    int total = 0, n;
    do {
        n = 0;
        fut__mutex_lock(&d->lock);
        struct fut__tentry *e;
        while (n < FIRE_BATCH && (e = fut__wheel_poll(&d->wheel, now_tick))) {
            struct fut__timer *t = fut__container_of(e, struct fut__timer, e);
            batch[n++] = t->waker;
            t->waker.vt = NULL;
            /* Release: the entry's last use by the driver happens before
             * the poller or canceller sees FIRED (their acquire). */
            fut__store(&t->state, FUT__TIMER_FIRED, FUT__RELEASE);
        }
        fut__mutex_unlock(&d->lock);
        /* The woken tasks have slept for a while: their memory is cold.
         * Prefetch a few wakes ahead so the misses overlap (measured:
         * bench_timers spends most of its wheel time on such misses). */
        for (int i = 0; i < n && i < 8; i++)
            __builtin_prefetch(batch[i].data, 1);
        for (int i = 0; i < n; i++) {
            if (i + 8 < n)
                __builtin_prefetch(batch[i + 8].data, 1);
            if (fut_waker_is_set(&batch[i]))
                fut_waker_wake(&batch[i]);
        }
        total += n;
    } while (n == FIRE_BATCH);
    return total;
}

/* --------------------------------------------------------------- unpark */

void fut__iodrv_unpark(struct fut__iodrv *d)
{
    /* Acq_rel: what the caller published (a queued task) before
     * unparking is seen by the parker after its swap (pairs with park's
     * acquire swaps). */
    if (fut__swap(&d->park_state, NOTIFIED, FUT__ACQ_REL) != PARKED)
        return;
    /* Relaxed: ordered by the swaps (see holder_fd). */
    fut__sys_eventfd_signal((int)fut__load(&d->holder_fd, FUT__RELAXED));
}

/* The shared driver's unpark: one park at a time, any worker's. */
static void drv_unpark(struct fut__driver *b, int worker)
{
    (void)worker;
    fut__iodrv_unpark(drv_of(b));
}

/* ----------------------------------------------------------------- park */

/* The wait in ns (< 0: forever) for a park of 'timeout_ns' with the next
 * timer due at tick 'next' (UINT64_MAX: none); 0 when a timer is due
 * already (poll, do not sleep). The backend rounds up where it cannot
 * sleep in nanoseconds: a wake before the deadline would only come back. */
static int64_t wait_ns(struct fut__iodrv *d, int64_t timeout_ns,
                       uint64_t next)
{
    if (timeout_ns == 0)
        return 0;
    int64_t ns = timeout_ns;
    if (next != UINT64_MAX) {
        int64_t due = d->origin + (int64_t)next * FUT__NS_PER_MS;
        int64_t until = due - fut_now_ns();
        if (until < 0)
            until = 0;
        if (ns < 0 || until < ns)
            ns = until;
    }
    return ns;
}

/* Paused clock, nothing else to do: jump to the next deadline, fire what
 * is due; repeat while only re-filing happened. */
static void auto_advance(struct fut__iodrv *d)
{
    for (;;) {
        fut__mutex_lock(&d->lock);
        uint64_t next = fut__wheel_next(&d->wheel);
        if (next != UINT64_MAX) {
            int64_t at = d->origin + (int64_t)next * FUT__NS_PER_MS;
            if (at > (int64_t)fut__load(&d->vnow, FUT__RELAXED))
                fut__store(&d->vnow, at, FUT__RELAXED);
        }
        fut__mutex_unlock(&d->lock);
        if (next == UINT64_MAX || fire_timers(d, next) > 0)
            return;
    }
}

/* A park of the driver's holder on backend 'be' (its tick '*tick', its
 * wake fd 'evfd'): closed fds freed, timers fired, the wait bounded by the
 * next deadline. */
static void park_drive(struct fut__iodrv *d, struct fut__backend *be,
                       uint32_t *tick, int evfd, int64_t timeout_ns)
{
    /* One thread in the driver at a time: a plain increment (the
     * monitor reads it, rt/multi/monitor.c). */
    fut__store(&d->base.turns, fut__load(&d->base.turns, FUT__RELAXED) + 1,
               FUT__RELAXED);
    fut__mutex_lock(&d->lock);
    struct fut__io *dead = d->release;
    d->release = NULL;
    uint64_t next = fut__wheel_next(&d->wheel);
    int may_advance = d->paused && timeout_ns != 0 && next != UINT64_MAX &&
                      fut__load(&d->inhibit, FUT__RELAXED) == 0;
    int64_t ns = may_advance
                     ? 0
                     : wait_ns(d, timeout_ns, d->paused ? UINT64_MAX : next);
    if (d->sim && ns < 0) {
        /* A simulation has no fd and no pool thread: only another
         * thread's unpark could end this wait. Say so instead of
         * sleeping forever (fut__driver.stalled). */
        ns = 0;
        d->base.stalled = 1;
    }
    if (timeout_ns == 0 && !d->ios && !dead && next == UINT64_MAX &&
        !d->paused) {
        /* A look without sleeping (a scheduler's every-N-ticks poll) at
         * a driver with no fd, no timer and nothing to free: epoll has
         * nothing for it (an unpark's eventfd write only comes while a
         * park sleeps), so skip the syscall. */
        fut__mutex_unlock(&d->lock);
        return;
    }
    if (ns != 0) {
        d->sleep_tick = next;
        /* Driven now: no 'interest' calls needed. */
        fut__store(&d->base.undriven, 0, FUT__RELAXED);
    }
    fut__mutex_unlock(&d->lock);
    fut__io_reap(d, dead);

    int notified = 0;
    if (ns != 0) {
        fut__store(&d->holder_fd, (uintptr_t)evfd, FUT__RELAXED);
        /* Acq_rel: pairs with unpark's swap (see its comment). */
        notified =
            fut__swap(&d->park_state, PARKED, FUT__ACQ_REL) == NOTIFIED;
        if (notified)
            ns = 0;
    }
    if (++*tick == 0)
        *tick = 1; /* tick 0 is "never dispatched": an fd's first state */
    /* A simulation that registered no fd never sleeps here (ns is 0)
     * and has nothing for epoll to report: another thread's spawn or wake
     * reaches it through the remote queue and 'park_state', not the
     * eventfd. Skip the syscall (half the time of a timer-heavy
     * simulation: bench/bench_sim.c, sim_time_ratio). */
    int real = d->sim && ns == 0 && !d->ios
                   ? 0
                   : d->bvt->wait(be, ns, *tick, &notified);
    if (ns != 0 || notified) {
        fut__mutex_lock(&d->lock);
        d->sleep_tick = UINT64_MAX;
        fut__mutex_unlock(&d->lock);
    }
    if (ns != 0 || notified || may_advance)
        notified |= fut__swap(&d->park_state, IDLE, FUT__ACQ_REL) == NOTIFIED;

    int fired = fire_timers(d, tick_at(d, fut__iodrv_now(d)));
    if (may_advance && !real && !notified && !fired)
        auto_advance(d);
}

/* The shared driver's park: by its one holder ('drive' is always 1). */
static void drv_park(struct fut__driver *b, int worker, int64_t timeout_ns,
                     int drive)
{
    (void)worker;
    FUT_ASSERT(drive);
    (void)drive;
    struct fut__iodrv *d = drv_of(b);
    park_drive(d, d->be, &d->tick, d->evfd, timeout_ns);
}

/* ------------------------------------------------- per-worker rings */

/* The per-worker driver (fut__driver.per_worker): worker i parks on ring
 * i, and the one with the scheduler's trylock ('drive') also serves the
 * timers and closed fds there. */
#ifdef FUT_HAVE_URING
static void drv_worker_start(struct fut__driver *b, int i)
{
    fut__uring_bind(drv_of(b)->rings[i]);
}

static void drv_park_ring(struct fut__driver *b, int i, int64_t timeout_ns,
                          int drive)
{
    struct fut__iodrv *d = drv_of(b);
    if (drive) {
        park_drive(d, d->rings[i], &d->ring_tick[i], d->ring_evfd[i],
                   timeout_ns);
        return;
    }
    if (++d->ring_tick[i] == 0)
        d->ring_tick[i] = 1;
    int woken = 0;
    d->bvt->wait(d->rings[i], timeout_ns, d->ring_tick[i], &woken);
}

static void drv_unpark_ring(struct fut__driver *b, int i)
{
    fut__sys_eventfd_signal(drv_of(b)->ring_evfd[i]);
}

static int drv_ring_ready(struct fut__driver *b, int i)
{
    return fut__uring_ready(drv_of(b)->rings[i]);
}

static void drv_worker_exit(struct fut__driver *b, int i)
{
    struct fut__iodrv *d = drv_of(b);
    /* Every worker stopped polling: the lists change no more, and the
     * scheduler retires one ring at a time (a retirement frees the state
     * of its fds while another would walk the same lists). */
    fut__mutex_lock(&d->lock);
    struct fut__io *ios = d->ios, *rel = d->release;
    fut__mutex_unlock(&d->lock);
    fut__uring_retire(d->rings[i], ios, rel);
}
#endif

/* ----------------------------------------------------------------- free */

/* Marks every timer still armed DEAD (its future outlived the runtime). */
static void kill_timers(struct fut__iodrv *d)
{
    struct fut__tentry *e;
    while ((e = fut__wheel_poll(&d->wheel, UINT64_MAX))) {
        struct fut__timer *t = fut__container_of(e, struct fut__timer, e);
        fut_waker_drop(&t->waker);
        fut__store(&t->state, FUT__TIMER_DEAD, FUT__RELEASE);
    }
}

static void drv_shutdown(struct fut__driver *b)
{
    struct fut__iodrv *d = drv_of(b);
    fut__pool_free(d->pool);
    d->pool = NULL;
    fut__io_detach_all(d);
    fut__io_reap(d, d->release);
    d->release = NULL;
    kill_timers(d);
}

static void free_rings(struct fut__iodrv *d)
{
    for (int i = 0; i < d->nrings; i++) {
        if (d->rings[i])
            d->bvt->destroy(d->rings[i]);
        if (d->ring_evfd[i] >= 0)
            fut__sys_close(d->ring_evfd[i]);
    }
    fut__free(d->rings, sizeof *d->rings * (size_t)d->nrings);
    fut__free(d->ring_evfd, sizeof *d->ring_evfd * (size_t)d->nrings);
    fut__free(d->ring_tick, sizeof *d->ring_tick * (size_t)d->nrings);
}

static void drv_free(struct fut__driver *b)
{
    struct fut__iodrv *d = drv_of(b);
    if (d->nrings)
        free_rings(d);
    else
        d->bvt->destroy(d->be);
    fut__sys_close(d->evfd);
    fut__mutex_destroy(&d->lock);
    fut__free(d, sizeof *d);
}

static int drv_idle(struct fut__driver *b)
{
    struct fut__iodrv *d = drv_of(b);
    if (d->nrings)
        return 0; /* every worker parks on its ring: never undriven */
    fut__mutex_lock(&d->lock);
    int idle = !d->paused && !d->ios && !d->release &&
               fut__wheel_next(&d->wheel) == UINT64_MAX;
    if (idle)
        fut__store(&d->base.undriven, 1, FUT__RELAXED);
    fut__mutex_unlock(&d->lock);
    return idle;
}

/* ------------------------------------------------------ backend choice */

/* The backend asked for: FUT_IO_BACKEND (auto|epoll|io_uring) overrides
 * cfg->io_backend. FUT_EINVAL for an unknown name or value. */
static int asked_backend(const struct fut_rt_config *cfg, int *kind)
{
    *kind = cfg->io_backend;
    const char *env = getenv("FUT_IO_BACKEND");
    if (env && *env) {
        if (!strcmp(env, "auto"))
            *kind = FUT_IO_AUTO;
        else if (!strcmp(env, "epoll"))
            *kind = FUT_IO_EPOLL;
        else if (!strcmp(env, "io_uring"))
            *kind = FUT_IO_URING;
        else
            return FUT_EINVAL;
    }
    if (*kind != FUT_IO_AUTO && *kind != FUT_IO_EPOLL &&
        *kind != FUT_IO_URING)
        return FUT_EINVAL;
    return 0;
}

static _Thread_local const char *backend_why;

const char *fut_io_backend_error(void)
{
    return backend_why ? backend_why : "";
}

#ifdef FUT_HAVE_URING
/* Valgrind preloads its core library; its io_uring_enter does not let
 * other threads run while one waits in it (3.19: a park that blocks stalls
 * the thread that would wake it). */
static int under_valgrind(void)
{
    const char *p = getenv("LD_PRELOAD");
    return p && strstr(p, "vgpreload") != NULL;
}
#endif

/* AUTO: io_uring when this build has it and a probe ring with the
 * features the io_uring backend (src/io/uring/) uses can be set up (not under valgrind, not
 * on the multi-thread runtime); else epoll. An explicit io_uring that
 * cannot be had fails (never a silent fallback). A multi-thread runtime
 * asked for io_uring gets one ring per worker, whose completions only
 * that worker reaps (DEFER_TASKRUN): while it runs one long poll, the
 * connections of its ring wait - so AUTO does not pick it (docs/io.md,
 * "What a busy task can delay"). */
static int pick_backend(const struct fut_rt_config *cfg,
                        const struct fut__backend_vt **out)
{
    int kind;
    int r = asked_backend(cfg, &kind);
    if (r < 0) {
        backend_why = "FUT_IO_BACKEND or io_backend: unknown backend";
        return r;
    }
    *out = &fut__backend_epoll;
    if (kind == FUT_IO_EPOLL)
        return 0;
#ifdef FUT_HAVE_URING
    if (kind == FUT_IO_AUTO && under_valgrind()) {
        backend_why = "io_uring: not chosen by AUTO under valgrind (it runs "
                      "io_uring_enter holding its thread lock: a blocked "
                      "wait stalls every other thread)";
        return 0;
    }
    if (kind == FUT_IO_AUTO && cfg->flavor == FUT_RT_MULTI_THREAD) {
        backend_why = "io_uring: not chosen by AUTO on the multi-thread "
                      "runtime (a ring per worker is served by its worker "
                      "only: one long poll would stall the connections of "
                      "its ring)";
        return 0;
    }
    const char *why = NULL;
    r = fut__uring_probe(&why);
    if (r == 0) {
        *out = &fut__backend_uring;
        return 0;
    }
    backend_why = why;
    return kind == FUT_IO_URING ? r : 0;
#else
    backend_why = "io_uring: this build of fut has no io_uring backend "
                  "(configured with FUT_URING=OFF or without liburing)";
    return kind == FUT_IO_URING ? FUT_ENOSYS : 0;
#endif
}

static const struct fut__driver_vt drv_vt = {
    drv_park, drv_unpark, drv_shutdown, drv_free, drv_idle, NULL, NULL, NULL};
#ifdef FUT_HAVE_URING
static const struct fut__driver_vt drv_rings_vt = {
    drv_park_ring, drv_unpark_ring,  drv_shutdown,    drv_free,
    drv_idle,      drv_worker_start, drv_worker_exit, drv_ring_ready};

/* One ring per worker, each with its wake eventfd; linked as one set. */
static int make_rings(struct fut__iodrv *d, int n)
{
    d->rings = fut__alloc(sizeof *d->rings * (size_t)n);
    d->ring_evfd = fut__alloc(sizeof *d->ring_evfd * (size_t)n);
    d->ring_tick = fut__alloc(sizeof *d->ring_tick * (size_t)n);
    d->nrings = n;
    if (!d->rings || !d->ring_evfd || !d->ring_tick) {
        fut__free(d->rings, sizeof *d->rings * (size_t)n);
        fut__free(d->ring_evfd, sizeof *d->ring_evfd * (size_t)n);
        fut__free(d->ring_tick, sizeof *d->ring_tick * (size_t)n);
        d->nrings = 0;
        return FUT_ENOMEM;
    }
    for (int i = 0; i < n; i++) {
        d->rings[i] = NULL;
        d->ring_evfd[i] = -1;
        d->ring_tick[i] = 0;
    }
    int r = 0;
    for (int i = 0; i < n && r == 0; i++) {
        r = d->ring_evfd[i] = fut__sys_eventfd();
        if (r >= 0)
            r = d->bvt->create(&d->rings[i], d->ring_evfd[i]);
    }
    if (r == 0)
        r = fut__uring_share(d->rings, n);
    if (r < 0) {
        free_rings(d);
        d->nrings = 0;
        return r;
    }
    d->be = d->rings[0];
    return 0;
}
#endif

int fut__driver_new(struct fut__sched *s, const struct fut_rt_config *cfg,
                    struct fut__driver **out)
{
    (void)s;
    if (cfg->blocking_threads < 0 || cfg->blocking_queue < 0 ||
        cfg->blocking_keepalive_ns < 0 ||
        (cfg->start_paused && cfg->flavor != FUT_RT_CURRENT_THREAD))
        return FUT_EINVAL;
    struct fut__iodrv *d = fut__alloc(sizeof *d);
    if (!d)
        return FUT_ENOMEM;
    memset(d, 0, sizeof *d);
    d->base.vt = &drv_vt;
    fut__aword_init(&d->base.undriven, 0);
    fut__aword_init(&d->base.turns, 0);
    int r = d->evfd = fut__sys_eventfd();
    if (r < 0)
        goto fail_alloc;
    r = pick_backend(cfg, &d->bvt);
    if (r < 0)
        goto fail_evfd;
#ifdef FUT_HAVE_URING
    if (d->bvt == &fut__backend_uring &&
        cfg->flavor != FUT_RT_CURRENT_THREAD) {
        r = make_rings(d, cfg->workers > 0 ? cfg->workers : 1);
        if (r < 0)
            goto fail_evfd;
        d->base.vt = &drv_rings_vt;
        d->base.per_worker = 1;
    } else
#endif
    {
        r = d->bvt->create(&d->be, d->evfd);
        if (r < 0)
            goto fail_evfd;
    }
    d->base.backend = d->bvt->name;
    d->pool = fut__pool_new(cfg);
    r = FUT_ENOMEM;
    if (!d->pool)
        goto fail_backend;
    fut__mutex_init(&d->lock);
    fut__aword_init(&d->park_state, IDLE);
    fut__aword_init(&d->holder_fd, (uintptr_t)d->evfd);
    d->paused = cfg->start_paused != 0;
    d->one_thread = cfg->flavor == FUT_RT_CURRENT_THREAD;
    d->origin = fut_now_ns();
    fut__aword_init(&d->vnow, (uintptr_t)d->origin);
    fut__aword_init(&d->inhibit, 0);
    fut__wheel_init(&d->wheel, 0);
    d->sleep_tick = UINT64_MAX;
    *out = &d->base;
    return 0;
fail_backend:
    if (d->nrings)
        free_rings(d);
    else
        d->bvt->destroy(d->be);
fail_evfd:
    fut__sys_close(d->evfd);
fail_alloc:
    fut__free(d, sizeof *d);
    return r;
}

int fut__driver_new_sim(struct fut__sched *s, const struct fut_rt_config *cfg,
                        struct fut__driver **out)
{
    struct fut_rt_config c = *cfg;
    c.start_paused = 1;
    c.io_backend = FUT_IO_EPOLL; /* replaced below */
    int r = fut__driver_new(s, &c, out);
    if (r)
        return r;
    struct fut__iodrv *d = drv_of(*out);
    d->sim = 1;
    /* The simulated network in place of epoll (backend_sim.c). */
    struct fut__backend *net;
    r = fut__backend_sim.create(&net, d->evfd);
    if (r) {
        drv_shutdown(*out);
        drv_free(*out);
        *out = NULL;
        return r;
    }
    d->bvt->destroy(d->be);
    d->bvt = &fut__backend_sim;
    d->be = net;
    d->base.backend = d->bvt->name;
    static const struct fut__simnet_clock clock = {
        fut__iodrv_now, fut__timer_arm, fut__timer_cancel};
    fut__simnet_bind(net, d, &clock);
    /* Time starts at 0, not at the real clock: the wheel's ticks and
     * every fut_time_now() are then the same in every run. */
    d->origin = 0;
    fut__store(&d->vnow, 0, FUT__RELAXED);
    return 0;
}

int64_t fut__driver_vnow(struct fut__driver *b)
{
    struct fut__iodrv *d = drv_of(b);
    return (int64_t)fut__load(&d->vnow, FUT__RELAXED) - d->origin;
}
