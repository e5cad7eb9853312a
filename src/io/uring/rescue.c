/* SPDX-License-Identifier: MIT */
/* The rings of a multi-thread runtime: one per worker, linked into a set
 * (fut__uring_share), and served by a peer when their worker is stuck in
 * a long poll - the rescue. The table's 'wait' is here: the owner's side
 * of the rescue around wait.c's wait.
 *
 * Rescue (rings of a multi-thread runtime, 'rescue' set): a worker stuck
 * in one long poll must not hold its ring's fds. So "the owner" in
 * backend.c's rules ("Threads") means "whoever holds the ring's lock
 * ('rlock'; ur_mine)":
 *   - the rings are set up without SINGLE_ISSUER | DEFER_TASKRUN: any
 *     thread may enter them, and the kernel posts completions to the CQ
 *     from the submitter's task work, which a spinning thread runs at its
 *     next return from an interrupt (COOP_TASKRUN). The ring fd is not
 *     registered (a registered ring fd is the registering thread's);
 *   - the owner takes its lock in each backend entry with a trylock
 *     (ur_enter; the outermost entry only). Without it the owner is as
 *     any other thread: its ops and cancels go through its own inbox.
 *     Never a blocking lock there: watch runs under the reactor's lock,
 *     which a rescuer holding the ring's lock may take (a dispatch);
 *   - the owner's wait holds the lock throughout, a blocking acquire
 *     (it holds no fd's or reactor's lock), and counts 'turns' and sets
 *     'waiting' (hints, relaxed) for the rescuers;
 *   - a worker, at each of its own waits and holding no ring's lock,
 *     looks at its peers (rescue_peers): a peer not 'waiting' whose
 *     'turns' did not move for RESCUE_NS has its lock tried and its
 *     wait(0) done for it (inbox, submit, reap). What the CQEs wake is
 *     queued on the rescuer's worker; the ops it frees go to the
 *     rescuer's pools (pools are per thread). Lock order: a ring's lock,
 *     then an fd's, then (released the fd's) the reactor's;
 *   - while a peer is outside its wait, a worker sleeps at most
 *     RESCUE_NS; one that went to sleep while every peer waited is woken
 *     by the monitor when it sees a worker stuck in a poll
 *     (rt/multi/monitor.c check_stuck);
 *   - a rescuer that reaps the owner's wake (the wake fd's CQE: an
 *     unpark - new work, a shutdown) sets 'wake_rescued' under the
 *     lock, and the owner's next wait returns at once as woken: the
 *     wake is the owner's to see (without it the owner slept through a
 *     shutdown: a TSan run of create/free loops hung at ~900);
 *   - the ring's retire runs under its lock and marks it 'dead' there;
 *     a rescuer checks 'dead' under the lock.
 */
#include <string.h>

#include "io/uring/internal.h"

/* ------------------------------------------------- rings of a set */

/* A ring of a set, set up again without SINGLE_ISSUER | DEFER_TASKRUN
 * (nothing was issued on it yet): 0; 1 when the kernel refuses the new
 * ring (it keeps the one it had, and the set is not rescuable); or
 * FUT_ENOMEM when its provided buffers and file table cannot be made
 * again (the new ring is kept, without them: the runtime's creation
 * fails and destroys it). */
static int ring_redo(struct fut__backend *b)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    p.flags = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG |
              IORING_SETUP_CQSIZE;
    p.cq_entries = CQ_ENTRIES;
    struct io_uring nr;
    if (io_uring_queue_init_params(SQ_ENTRIES, &nr, &p) < 0)
        return 1;
    io_uring_queue_exit(&b->ring);
    fut__ur_bufs_free(b);
    b->ring = nr;
    b->enabled = 1; /* no R_DISABLED: any thread may enter it */
    return fut__ur_setup_bufs(b) < 0 ? FUT_ENOMEM : 0;
}

int fut__uring_share(struct fut__backend **rings, int n)
{
    /* Rescuable only when every ring of the set is (a peer must be able
     * to enter each one). */
    int rescue = n > 1;
    for (int i = 0; i < n && rescue; i++) {
        rings[i]->seen = fut__alloc(2 * sizeof(uintptr_t) * (size_t)n);
        rings[i]->nset = n; /* the size destroy frees 'seen' with */
        if (!rings[i]->seen)
            return FUT_ENOMEM; /* the caller destroys the rings */
        int r = ring_redo(rings[i]);
        if (r < 0)
            return r;
        if (r > 0)
            rescue = 0;
    }
    for (int i = 0; i < n; i++) {
        struct fut__backend *b = rings[i];
        fut__mutex_init(&b->ilock);
        b->shared = 1;
        b->first = rings[0];
        b->index = i;
        fut__aword_init(&b->parked, 0);
        fut__aword_init(&b->ipending, 0);
        fut__mutex_init(&b->rlock);
        fut__aword_init(&b->turns, 0);
        fut__aword_init(&b->waiting, 0);
        fut__aword_init(&b->wake_rescued, 0);
        b->rescue = rescue;
        b->set = rings;
        b->nset = n;
        if (b->seen)
            memset(b->seen, 0, 2 * sizeof(uintptr_t) * (size_t)n);
    }
    return 0;
}

int fut__uring_ready(struct fut__backend *b)
{
    if (fut__load(&b->ipending, FUT__RELAXED) ||
        (b->rescue && fut__load(&b->wake_rescued, FUT__RELAXED)))
        return 1;
    /* A rescuer may advance the head (under the ring's lock): an atomic
     * read (acquire: pairs with liburing's release store of it). */
    unsigned head = b->rescue ? io_uring_smp_load_acquire(b->ring.cq.khead)
                              : *b->ring.cq.khead;
    unsigned tail = io_uring_smp_load_acquire(b->ring.cq.ktail);
    /* Not IORING_SQ_TASKRUN: the flag says the ring has completion work
     * pending for some thread that submitted to it - a rescuer's, or the
     * owner's own while it was busy - which only that thread can run.
     * Taken as "ready" it ended every park spin of an idle worker at
     * once and made its wait a look (timeout 0): a busy loop for as long
     * as the other thread stayed busy (test rt_multi_stall.idle.uring:
     * 45-99% of a core beside a spinning peer). The owner's own pending
     * work runs at its next enter: the wait after the spin. */
    return tail != head;
}

void fut__uring_bind(struct fut__backend *b)
{
    fut__ur_here = b;
}

/* ----------------------------------------------------------- rescue */

fut__aword fut__uring_rescues;

#define RESCUE_NS 1000000 /* a peer's ring unserved this long is served */

/* Serves the rings of peers stuck outside their waits (the rules
 * "Rescue"): a look per peer; one whose 'turns' did not move since a
 * look at least RESCUE_NS ago, and that is not in a wait, has its ring's
 * lock tried, then its inbox run, its SQEs sent and its CQEs reaped here
 * (the tasks they wake run on this worker). Returns the fd events
 * delivered. On worker 'b''s thread, holding no ring's lock. */
static int rescue_peers(struct fut__backend *b)
{
    int n = 0;
    int64_t now = 0;
    uintptr_t *seen = b->seen, *since = b->seen + b->nset;
    for (int i = 0; i < b->nset; i++) {
        struct fut__backend *p = b->set[i];
        if (p == b)
            continue;
        /* Relaxed: hints; the lock orders what the rescue touches. */
        if (fut__load(&p->waiting, FUT__RELAXED))
            continue; /* it serves its ring itself */
        uintptr_t t = fut__load(&p->turns, FUT__RELAXED);
        if (!now)
            now = fut_now_ns();
        if (t != seen[i]) { /* it moved: stuck, if at all, from now */
            seen[i] = t;
            since[i] = (uintptr_t)now;
            continue;
        }
        if (now - (int64_t)since[i] < RESCUE_NS ||
            !fut__mutex_trylock(&p->rlock))
            continue;
        since[i] = (uintptr_t)now; /* the next rescue a period later */
        if (!p->dead) {
            int woken = 0;
            fut__ur_held = p;
            n += fut__ur_wait_in(p, 0, 0, &woken);
            /* The owner's wake (an unpark: new work, a shutdown) reaped
             * here is the owner's to see: its next wait returns at once
             * (fut__ur_wait), or it would sleep through it. */
            if (woken)
                fut__store(&p->wake_rescued, 1, FUT__RELAXED);
            fut__ur_held = NULL;
            fut__fetch_add(&fut__uring_rescues, 1, FUT__RELAXED);
        }
        fut__mutex_unlock(&p->rlock);
    }
    return n;
}

/* Whether a peer of 'b' is outside its wait (it may get stuck there). */
static int peer_awake(const struct fut__backend *b)
{
    for (int i = 0; i < b->nset; i++)
        if (b->set[i] != b && !fut__load(&b->set[i]->waiting, FUT__RELAXED))
            return 1;
    return 0;
}

/* The owner's wait holds its ring's lock throughout (it may block for
 * it: a rescue is short, and nothing here holds a lock a rescuer takes).
 * Before it, a look at the peers: what a rescue woke runs first (no
 * sleep), and while a peer is awake the sleep is at most RESCUE_NS. */
int fut__ur_wait(struct fut__backend *b, int64_t timeout_ns, uint32_t tick,
                 int *woken)
{
    if (!b->rescue || fut__ur_held == b)
        return fut__ur_wait_in(b, timeout_ns, tick, woken);
    int n = 0;
    if (fut__ur_here == b && !fut__ur_held && !fut__ur_depth && !b->dead) {
        n = rescue_peers(b);
        if (n > 0)
            timeout_ns = 0;
        else if (timeout_ns != 0 &&
                 (timeout_ns < 0 || timeout_ns > RESCUE_NS) && peer_awake(b))
            timeout_ns = RESCUE_NS;
    }
    struct fut__backend *prev = fut__ur_held;
    fut__mutex_lock(&b->rlock);
    fut__ur_held = b;
    /* Relaxed: hints for the rescuers' looks (the lock orders the rest). */
    fut__store(&b->waiting, 1, FUT__RELAXED);
    fut__store(&b->turns, fut__load(&b->turns, FUT__RELAXED) + 1,
               FUT__RELAXED);
    if (fut__load(&b->wake_rescued, FUT__RELAXED)) {
        /* A rescuer reaped our wake while we were out (rescue_peers). */
        fut__store(&b->wake_rescued, 0, FUT__RELAXED);
        *woken = 1;
        timeout_ns = 0;
    }
    n += fut__ur_wait_in(b, timeout_ns, tick, woken);
    fut__store(&b->waiting, 0, FUT__RELAXED);
    fut__ur_held = prev;
    fut__mutex_unlock(&b->rlock);
    return n;
}
