/* SPDX-License-Identifier: MIT */
/* Test tools: the drop-at-every-PENDING harness and the fail-the-Nth-
 * allocation hook. See fut/testing.h.
 *
 * The harness is a wrapper future run by fut_block_on on a fresh
 * current-thread runtime per run, so that every allocation a run makes
 * (the runtime's own, its task slab, the future's, the tasks it spawns)
 * is inside the window the leak check looks at.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fut/testing.h"
#include "internal.h"

/* -------------------------------------------------------- the wrapper */

enum { PHASE_RUN, PHASE_DRAIN };

/* Drain rounds without task progress after which the tasks left are
 * taken to be idle (waiting on something that will not come); two,
 * because a round that moves remote tasks to the local queue polls none
 * of them yet (block_on polls the main future first). */
#define DRAIN_IDLE_ROUNDS 2
/* Hard bound on drain rounds (tasks that keep each other busy). */
#define DRAIN_MAX_ROUNDS 100000

struct harness_main {
    struct fut_future base;
    struct fut_future *inner; /* the future under test */
    struct fut_runtime *rt;
    long stop_at;  /* drop at this PENDING; 0: run to completion */
    long max;      /* PENDING bound for the run to completion */
    long pendings; /* PENDING returns seen */
    int phase;
    int completed;       /* the inner future returned READY */
    int overrun;         /* more than 'max' PENDING returns */
    uint64_t last_polls; /* task polls at the previous drain round */
    int idle;            /* consecutive drain rounds without progress */
    long rounds;         /* drain rounds so far */
};

/* One drain round: READY when no task is left, none made progress for
 * DRAIN_IDLE_ROUNDS rounds, or the hard bound is hit; else yields. */
static int harness_drain(struct harness_main *m, struct fut_context *cx)
{
    struct fut_rt_stats st;
    fut_runtime_stats(m->rt, &st);
    if (st.alive == 0)
        return FUT_READY;
    if (st.polls == m->last_polls) {
        if (++m->idle >= DRAIN_IDLE_ROUNDS)
            return FUT_READY;
    } else {
        m->idle = 0;
    }
    if (++m->rounds >= DRAIN_MAX_ROUNDS)
        return FUT_READY;
    m->last_polls = st.polls;
    fut_waker_wake_by_ref(&cx->waker); /* let the tasks run, come back */
    return FUT_PENDING;
}

static int harness_main_poll(struct fut_future *f, struct fut_context *cx)
{
    struct harness_main *m = (struct harness_main *)f;
    if (m->phase == PHASE_RUN) {
        if (fut_poll(m->inner, cx) == FUT_READY) {
            m->completed = 1;
        } else {
            m->pendings++;
            if (m->stop_at == 0 && m->pendings > m->max)
                m->overrun = 1;
            else if (m->pendings != m->stop_at)
                return FUT_PENDING;
        }
        /* Cancel where it stands (or release after READY), from inside
         * a poll on the runtime thread, as a parent future would. */
        fut_drop(m->inner);
        m->phase = PHASE_DRAIN;
    }
    return harness_drain(m, cx);
}

static const struct fut_future_vtable harness_main_vt = {
    harness_main_poll, NULL, "drop_harness", NULL};

/* ------------------------------------------------------------ one run */

struct run_result {
    long pendings;
    int completed;
    int overrun;
};

/* Makes, runs and drops one instance ('stop_at' as in harness_main);
 * returns 0 or a negative code (setup failed: nothing was run). The
 * leak verdict is the caller's: it compares fut_alloc_live(). */
static int harness_once(struct fut_harness *h, long stop_at,
                        struct run_result *out)
{
    struct fut_runtime *rt;
    int r = fut_runtime_new(h->cfg, &rt);
    if (r)
        return r;
    struct fut_future *f = h->make(h->ud, rt);
    if (!f) {
        fut_runtime_free(rt);
        return FUT_EINVAL;
    }
    struct harness_main m;
    memset(&m, 0, sizeof m);
    fut_future_init(&m.base, &harness_main_vt);
    m.inner = f;
    m.rt = rt;
    m.stop_at = stop_at;
    m.max = h->max_pending;
    m.last_polls = UINT64_MAX;
    r = fut_block_on(rt, &m.base);
    fut_runtime_free(rt);
    if (r)
        return r;
    out->pendings = m.pendings;
    out->completed = m.completed;
    out->overrun = m.overrun;
    return 0;
}

/* Records a failed run: 'leaked' blocks not freed and/or a nonzero
 * 'check_rc'. Only the first failure is described (and reported). */
static void harness_fail(struct fut_harness *h, long k, long leaked,
                         int check_rc)
{
    h->failed++;
    if (h->first_failure >= 0)
        return;
    h->first_failure = k;
    int n;
    if (k == 0)
        n = snprintf(h->msg, sizeof h->msg, "run to completion (%ld PENDING)",
                     h->pendings);
    else
        n = snprintf(h->msg, sizeof h->msg, "drop at PENDING %ld of %ld", k,
                     h->pendings);
    size_t len = n > 0 && (size_t)n < sizeof h->msg ? (size_t)n : 0;
    if (leaked != 0)
        len += (size_t)snprintf(h->msg + len, sizeof h->msg - len,
                                ": %ld block(s) not freed", leaked);
    if (check_rc != 0 && len < sizeof h->msg)
        snprintf(h->msg + len, sizeof h->msg - len,
                 ": check callback returned %d", check_rc);
    fut__report("drop-harness", "%s", h->msg);
}

/* Runs instance 'k' and records its verdict; returns a negative code when
 * the run could not be made, else 0. */
static int harness_run_k(struct fut_harness *h, long k,
                         struct run_result *res)
{
    long live0 = fut_alloc_live();
    int r = harness_once(h, k, res);
    if (r)
        return r;
    h->runs++;
    int check_rc = h->check ? h->check(h->ud, (int)k) : 0;
    long leaked = fut_alloc_live() - live0;
    if (leaked != 0 || check_rc != 0)
        harness_fail(h, k, leaked, check_rc);
    return 0;
}

void fut_harness_init(struct fut_harness *h, fut_harness_make_fn make,
                      fut_harness_check_fn check, void *ud)
{
    FUT_ARG_VOID(h, "'h' is NULL");
    FUT_ARG_VOID(make, "'make' is NULL");
    memset(h, 0, sizeof *h);
    h->make = make;
    h->check = check;
    h->ud = ud;
    h->cfg = NULL;
    h->max_pending = 100000;
    h->first_failure = -1;
}

int fut_harness_run(struct fut_harness *h)
{
    FUT_ARG_CHECK(h, "'h' is NULL");
    if (fut_runtime_current() != NULL)
        return FUT_EBUSY; /* block_on inside block_on */
    if (!h->make || h->max_pending <= 0)
        return FUT_EINVAL;
    h->pendings = 0;
    h->runs = 0;
    h->failed = 0;
    h->first_failure = -1;
    h->msg[0] = '\0';
    struct run_result res;
    int r = harness_run_k(h, 0, &res);
    if (r)
        return r;
    if (res.overrun)
        return FUT_ETIMEDOUT;
    h->pendings = res.pendings;
    for (long k = 1; k <= h->pendings; k++) {
        r = harness_run_k(h, k, &res);
        if (r)
            return r;
    }
    return (int)(h->failed < 0x7fffffff ? h->failed : 0x7fffffff);
}

/* ----------------------------------------------------------- failalloc */

/* The hook's state. Relaxed: counters read by the arming thread after the
 * operation it armed for (the hook must not be re-armed concurrently). */
static fut__aword fa_target; /* the allocation to refuse; 0 = none */
static fut__aword fa_seen;   /* allocations attempted since arming */
static fut__aword fa_fired;  /* the refusal happened */

static void *failalloc_hook(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud;
    (void)osize;
    if (nsize == 0) {
        free(ptr);
        return NULL;
    }
    uintptr_t seen = fut__fetch_add(&fa_seen, 1, FUT__RELAXED) + 1;
    if (seen == fut__load(&fa_target, FUT__RELAXED)) {
        fut__store(&fa_fired, 1, FUT__RELAXED);
        return NULL; /* a failed resize leaves the old block intact */
    }
    return realloc(ptr, nsize);
}

void fut_failalloc_arm(long n)
{
    fut__store(&fa_target, n > 0 ? (uintptr_t)n : 0, FUT__RELAXED);
    fut__store(&fa_seen, 0, FUT__RELAXED);
    fut__store(&fa_fired, 0, FUT__RELAXED);
    fut_set_allocator(failalloc_hook, NULL);
}

long fut_failalloc_disarm(void)
{
    fut_set_allocator(NULL, NULL);
    fut__store(&fa_target, 0, FUT__RELAXED);
    return (long)fut__load(&fa_seen, FUT__RELAXED);
}

int fut_failalloc_fired(void)
{
    return fut__load(&fa_fired, FUT__RELAXED) != 0;
}

int fut_failalloc_each(fut_failalloc_op op, void *ud, long max_n, long *tried,
                       char *msg, size_t msglen)
{
    char dummy[1];
    if (!msg || msglen == 0) {
        msg = dummy;
        msglen = sizeof dummy;
    }
    msg[0] = '\0';
    for (long n = 1; n <= max_n; n++) {
        if (tried)
            *tried = n;
        long live0 = fut_alloc_live();
        fut_failalloc_arm(n);
        int r = op(ud);
        int fired = fut_failalloc_fired();
        fut_failalloc_disarm();
        long leaked = fut_alloc_live() - live0;
        if (leaked != 0) {
            snprintf(msg, msglen,
                     "allocation %ld failed%s: %ld block(s) "
                     "leaked (op returned %s)",
                     n, fired ? "" : " (not hit)", leaked, fut_err_name(r));
            return (int)n;
        }
        if (fired && r != FUT_ENOMEM) {
            snprintf(msg, msglen,
                     "allocation %ld failed: op returned %s, "
                     "not FUT_ENOMEM",
                     n, fut_err_name(r));
            return (int)n;
        }
        if (!fired) {
            if (r == 0)
                return 0;
            snprintf(msg, msglen,
                     "no allocation failed at N = %ld, but op "
                     "returned %s",
                     n, fut_err_name(r));
            return (int)n;
        }
    }
    snprintf(msg, msglen, "op still allocating at N = %ld", max_n);
    return FUT_ETIMEDOUT;
}
