/* SPDX-License-Identifier: MIT */
/* The shared machinery of src/sync: batched waking of waiter lists, and the atomic waker (Tokio's AtomicWaker).
 *
 * Rules of the atomic waker's 'state' (one registrant, many wakers):
 *
 *   WAITING      idle: 'waker' (maybe empty) belongs to whoever moves the
 *                state away from WAITING next
 *   REGISTERING  the registrant owns 'waker' and is replacing it
 *   WAKING       a waker owns 'waker' and is taking it
 *
 *   register: CAS WAITING -> REGISTERING, write the slot, CAS back to
 *             WAITING. If that second CAS fails, a wake arrived while we
 *             wrote (it set WAKING and left the slot to us): we take the
 *             waker back, store WAITING and wake it ourselves. If the first
 *             CAS finds WAKING, a wake is in progress and may have missed
 *             the new waker: we wake the new waker directly.
 *   wake:     fetch_or WAKING; if the old state was WAITING we own the
 *             slot: take the waker, clear WAKING, wake it. Otherwise the
 *             registrant (REGISTERING) or another waker (WAKING) will.
 *
 * Orderings: every transition is an acq_rel RMW on 'state', so each owner
 * of the slot sees the previous owner's writes to it.
 *
 * The mpsc receiver re-checks its condition after registering, and every
 * wake there follows the publication of that condition, so a wake lost by
 * this protocol would be covered there (a mutation that drops the second
 * CAS survives the mpsc models); the protocol is kept whole anyway.
 */
#include "platform/sys.h"
#include "sync/waitq.h"

/* -------------------------------------------------------------- wakeset */

void fut__wakeset_wake(struct fut__wakeset *ws)
{
    for (int i = 0; i < ws->n; i++)
        fut_waker_wake(&ws->w[i]);
    ws->n = 0;
}

void fut__wake_all_locked(struct fut__lock *lock, struct fut__list *list,
                          uintptr_t st)
{
    struct fut__list local;
    struct fut__wakeset ws;
    fut__list_init(&local);
    fut__list_splice(&local, list);
    while (!fut__list_empty(&local)) {
        fut__wakeset_init(&ws);
        struct fut__list *l;
        while (!fut__wakeset_full(&ws) && (l = fut__list_front(&local))) {
            struct fut__wnode *n = fut__wnode_from_link(l);
            fut__list_remove(l);
            fut__wakeset_take(&ws, &n->waker);
            /* Release: the last write to the node; pairs with the
             * poller's acquire load of 'st'. */
            fut__store(&n->st, st, FUT__RELEASE);
        }
        fut__lock_release(lock);
        fut__wakeset_wake(&ws);
        fut__lock_acquire(lock);
    }
}

/* --------------------------------------------------------- atomic waker */

enum { AW_WAITING = 0, AW_REGISTERING = 1, AW_WAKING = 2 };

void fut__awaker_init(struct fut__awaker *a)
{
    fut__aword_init(&a->state, AW_WAITING);
    a->waker.data = 0;
    a->waker.vt = 0;
}

void fut__awaker_register(struct fut__awaker *a, const struct fut_waker *w)
{
    uintptr_t s = AW_WAITING;
    /* Acquire: the slot's last owner (a waker) released it. */
    if (!fut__cas(&a->state, &s, AW_REGISTERING, FUT__ACQUIRE,
                  FUT__ACQUIRE)) {
        /* WAKING: a wake is taking the old waker and may not see ours:
         * wake ourselves (a retry; the waker is a few instructions from
         * done, so this is a spin - say so to the checker). */
        FUT_ASSERT(s == AW_WAKING);
        fut__spin_hint();
        fut_waker_wake_by_ref(w);
        return;
    }
    fut__plain_write(&a->waker, sizeof a->waker);
    struct fut_waker old = {0, 0};
    if (!fut_waker_is_set(&a->waker) || !fut_waker_will_wake(&a->waker, w)) {
        old = a->waker;
        fut__waker_store(&a->waker, fut_waker_clone(w));
    }
    s = AW_REGISTERING;
    /* Release: publishes the slot to the next owner. */
    if (!fut__cas(&a->state, &s, AW_WAITING, FUT__ACQ_REL, FUT__ACQUIRE)) {
        /* A wake came in while we wrote (state REGISTERING|WAKING): it
         * left the slot to us. Take the waker and wake it ourselves. */
        struct fut_waker t = a->waker;
        a->waker.vt = 0;
        a->waker.data = 0;
        fut__swap(&a->state, AW_WAITING, FUT__ACQ_REL);
        fut_waker_wake(&t);
    }
    fut_waker_drop(&old);
}

void fut__awaker_wake(struct fut__awaker *a)
{
    /* Acq_rel: acquire the registrant's slot writes; release ours. */
    uintptr_t prev = fut__fetch_or(&a->state, AW_WAKING, FUT__ACQ_REL);
    if (prev != AW_WAITING)
        return; /* the registrant, or another waker, does the wake */
    fut__plain_write(&a->waker, sizeof a->waker);
    struct fut_waker t = a->waker;
    a->waker.vt = 0;
    a->waker.data = 0;
    /* Release: hands the (now empty) slot back. */
    fut__fetch_and(&a->state, ~(uintptr_t)AW_WAKING, FUT__RELEASE);
    if (fut_waker_is_set(&t))
        fut_waker_wake(&t);
}

void fut__awaker_clear(struct fut__awaker *a)
{
    uintptr_t s = AW_WAITING;
    if (!fut__cas(&a->state, &s, AW_REGISTERING, FUT__ACQUIRE, FUT__ACQUIRE))
        return; /* a waker is taking it */
    fut__plain_write(&a->waker, sizeof a->waker);
    struct fut_waker t = a->waker;
    a->waker.vt = 0;
    a->waker.data = 0;
    /* Back to WAITING whether or not a wake arrived meanwhile: the waker
     * we hold belongs to a registrant that is going away, so it is
     * dropped, not woken. Release: hands the empty slot back. */
    fut__swap(&a->state, AW_WAITING, FUT__ACQ_REL);
    fut_waker_drop(&t);
}
