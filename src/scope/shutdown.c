/* SPDX-License-Identifier: MIT */
/* Graceful shutdown of a scope as one future (include/fut/scope.h):
 * wait for a signal / a trigger token / the scope itself; cancel the
 * scope's token; give the children a grace period; drop the rest.
 *
 * Stages ('stage'): -1 not polled yet; 0 waiting for the trigger; 1 token
 * cancelled, grace period running; 2 grace over, scope cancelled, waiting
 * for the drops; 3 done. The children futures (signal receive, token
 * wait, sleep) are set up inside the poll (they point at nothing of ours,
 * but the sleep's timer entry must not move once armed).
 */
#include <string.h>

#include "fut/scope.h"
#include "internal.h"

enum { ST_NEW = -1, ST_WAIT = 0, ST_GRACE = 1, ST_DROP = 2, ST_DONE = 3 };

static int start_grace(struct fut_shutdown *sd)
{
    fut_token_cancel(fut_scope_token(sd->scope));
    sd->stage = ST_GRACE;
    if (sd->grace_ns >= 0)
        fut_sleep_until_init(&sd->sleep, fut_time_now() + sd->grace_ns);
    return 0;
}

static int sd_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_shutdown *sd = (struct fut_shutdown *)f;
    struct fut_future *scope = &sd->scope->base;
    if (sd->stage == ST_NEW) {
        if (sd->sig)
            fut_signal_recv_init(&sd->rx, sd->sig);
        if (sd->trigger)
            fut_token_wait_init(&sd->tw, sd->trigger);
        sd->stage = ST_WAIT;
    }
    if (sd->stage == ST_WAIT) {
        if (fut_poll(scope, cx) == FUT_READY)
            goto done; /* finished on its own: nothing to shut down */
        int fired = 0;
        if (sd->sig && fut_poll(&sd->rx.base, cx) == FUT_READY) {
            sd->signo = sd->rx.result == 0 ? sd->rx.signo : 0;
            fired = 1;
        }
        if (!fired && sd->trigger && fut_poll(&sd->tw.base, cx) == FUT_READY)
            fired = 1;
        if (!fired)
            return FUT_PENDING;
        start_grace(sd);
    }
    if (sd->stage == ST_GRACE) {
        if (fut_poll(scope, cx) == FUT_READY)
            goto done;
        if (sd->grace_ns < 0 || fut_poll(&sd->sleep.base, cx) == FUT_PENDING)
            return FUT_PENDING;
        sd->cancelled0 = sd->scope->cancelled;
        sd->stage = ST_DROP;
        fut_scope_cancel(sd->scope);
    }
    if (fut_poll(scope, cx) == FUT_PENDING)
        return FUT_PENDING; /* drops in flight on other workers */
    sd->dropped = sd->scope->cancelled - sd->cancelled0;
    sd->result = sd->dropped ? FUT_ETIMEDOUT : 0;
    sd->stage = ST_DONE;
    return FUT_READY;
done:
    sd->result = 0;
    sd->stage = ST_DONE;
    return FUT_READY;
}

static void sd_drop(struct fut_future *f)
{
    struct fut_shutdown *sd = (struct fut_shutdown *)f;
    if (sd->stage == ST_NEW)
        return;
    if (sd->sig)
        fut_drop(&sd->rx.base);
    if (sd->trigger)
        fut_drop(&sd->tw.base);
    /* The sleep exists once the grace period started (start_grace); a
     * scope that finished on its own went from ST_WAIT to ST_DONE
     * without it (fut_shutdown_init zeroed it: no vtable). */
    if (sd->grace_ns >= 0 && sd->sleep.base.vt)
        fut_drop(&sd->sleep.base);
}

static size_t sd_children(struct fut_future *f, struct fut_future **out,
                          size_t max)
{
    struct fut_shutdown *sd = (struct fut_shutdown *)f;
    size_t n = 0;
    if (n < max)
        out[n] = &sd->scope->base;
    n++;
    if (sd->stage == ST_WAIT && sd->sig) {
        if (n < max)
            out[n] = &sd->rx.base;
        n++;
    }
    if (sd->stage == ST_GRACE && sd->grace_ns >= 0) {
        if (n < max)
            out[n] = &sd->sleep.base;
        n++;
    }
    return n;
}

static const struct fut_future_vtable sd_vt = {sd_poll, sd_drop, "shutdown",
                                               sd_children};

void fut_shutdown_init(struct fut_shutdown *sd, struct fut_scope *scope,
                       struct fut_token *trigger, struct fut_io *sig,
                       int64_t grace_ns)
{
    FUT_ARG_VOID(sd, "'sd' is NULL");
    FUT_ARG_VOID(scope, "'scope' is NULL");
    memset(sd, 0, sizeof *sd);
    fut_future_init(&sd->base, &sd_vt);
    sd->scope = scope;
    sd->trigger = trigger;
    sd->sig = sig;
    sd->grace_ns = grace_ns;
    sd->stage = ST_NEW;
}
