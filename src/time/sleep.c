/* SPDX-License-Identifier: MIT */
/* Sleep, timeout and interval: the futures over the driver's timer wheel
 * (the wheel and the timer entry's rules are in wheel.c and driver.c). */
#include <string.h>

#include "io/io_internal.h"

_Static_assert(sizeof(struct fut__timer) <= sizeof(struct fut_timer_entry),
               "struct fut_timer_entry too small");
_Static_assert(_Alignof(struct fut__timer) <=
                   _Alignof(struct fut_timer_entry),
               "struct fut_timer_entry misaligned");

/* Ticks later than this after their deadline are "late" for an
 * interval's missed-tick rule (Tokio's threshold). */
#define LATE_NS (5 * FUT__NS_PER_MS)

static int64_t clock_now(struct fut__iodrv *d)
{
    return d ? fut__iodrv_now(d) : fut_now_ns();
}

static uintptr_t timer_state(struct fut__timer *t)
{
    return fut__load(&t->state, FUT__RELAXED);
}

/* ----------------------------------------------------------------- sleep */

/* s->duration of a sleep whose deadline a cheap fut_sleep_reset moved
 * later while its timer stayed armed for the old one: when the timer
 * fires, sleep_poll compares and arms it again if the deadline is later
 * (the only reader; any other value: a duration still to count, or -1). */
#define MOVED (-2)

static int sleep_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_sleep *s = (struct fut_sleep *)f;
    struct fut__timer *t = fut__timer_of(&s->timer);
    if (timer_state(t) == FUT__TIMER_IDLE) {
        struct fut__iodrv *d = fut__iodrv_current();
        if (s->duration >= 0) {
            s->deadline = clock_now(d) + s->duration;
            s->duration = -1;
        }
        if (s->deadline == -1)
            return FUT_PENDING; /* forever: nothing can wake it */
        /* With a driver, no clock read here: the wheel says whether the
         * deadline's tick has been processed already (then arm refuses
         * it); one that passed since fires at the driver's next turn. */
        if (d) {
            if (!fut__timer_arm(d, t, s->deadline, &cx->waker))
                return FUT_PENDING;
        } else if (s->deadline > fut_now_ns()) {
            s->result = FUT_EINVAL;
            return FUT_READY;
        }
    } else {
        int r = fut__timer_poll(t, &cx->waker);
        if (r == 0)
            return FUT_PENDING;
        if (r < 0) {
            s->result = r;
            return FUT_READY;
        }
        if (s->duration == MOVED) {
            s->duration = -1;
            if (fut__timer_fires_before(t, s->deadline)) {
                /* Fired for the deadline it was armed with, which a cheap
                 * fut_sleep_reset moved later since: arm it again, now,
                 * for the stored one (once per firing, not per reset). */
                fut__timer_cancel(t); /* FIRED -> IDLE: no lock */
                return sleep_poll(f, cx);
            }
        }
    }
    if (!fut_coop_proceed(cx))
        return FUT_PENDING;
    s->result = 0;
    return FUT_READY;
}

static void sleep_drop(struct fut_future *f)
{
    fut__timer_cancel(fut__timer_of(&((struct fut_sleep *)f)->timer));
}

static const struct fut_future_vtable sleep_vt = {sleep_poll, sleep_drop,
                                                  "sleep", NULL};

void fut_sleep_until_init(struct fut_sleep *s, int64_t deadline)
{
    FUT_ARG_VOID(s, "'s' is NULL");
    fut_future_init(&s->base, &sleep_vt);
    s->deadline = deadline;
    s->duration = -1;
    s->result = 0;
    fut__timer_init(fut__timer_of(&s->timer));
}

void fut_sleep_init(struct fut_sleep *s, int64_t duration_ns)
{
    FUT_ARG_VOID(s, "'s' is NULL");
    fut_sleep_until_init(s, -1);
    s->duration = duration_ns < 0 ? -1 : duration_ns;
}

void fut_sleep_reset(struct fut_sleep *s, int64_t deadline)
{
    FUT_ARG_VOID(s, "'s' is NULL");
    struct fut__timer *t = fut__timer_of(&s->timer);
    /* The cheap path (Tokio's Sleep::reset, hyper's header timer): armed
     * for a tick at or before the new deadline's, the timer stays where
     * it is and only the deadline is stored; when it fires early,
     * sleep_poll arms it again for the stored one. A connection that
     * pushes its idle deadline on every read so costs no wheel operation
     * and no lock per read. The state is read relaxed: the driver may
     * fire the timer meanwhile (ARMED -> FIRED), which sleep_poll handles
     * the same way; only the owner (this thread) arms or cancels it. */
    /* While armed, the stored deadline never rounds to a tick before
     * the timer's, so a deadline at or after the stored one needs no
     * tick arithmetic (the usual push). */
    if (deadline != -1 && timer_state(t) == FUT__TIMER_ARMED &&
        (deadline >= s->deadline || !fut__timer_fires_after(t, deadline))) {
        s->deadline = deadline;
        s->duration = MOVED;
        s->result = 0;
        return; /* ARMED: not READY, nothing else to clear */
    }
    fut__timer_cancel(t);
    s->deadline = deadline;
    s->duration = -1;
    s->result = 0;
    s->base.flags &= ~(uint32_t)FUT_F_READY;
}

/* --------------------------------------------------------------- timeout */

static int timeout_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_timeout *to = (struct fut_timeout *)f;
    struct fut__timer *t = fut__timer_of(&to->timer);
    if (fut_poll(to->inner, cx) == FUT_READY) {
        fut__timer_cancel(t);
        to->armed = 0;
        to->result = 0;
        return FUT_READY;
    }
    if (to->deadline == -1)
        return FUT_PENDING;
    int r;
    if (!to->armed) {
        struct fut__iodrv *d = fut__iodrv_current();
        r = 1;
        if (d) { /* (no clock read: see sleep_poll) */
            r = fut__timer_arm(d, t, to->deadline, &cx->waker) ? 1 : 0;
            to->armed = 1;
        } else if (to->deadline > fut_now_ns()) {
            r = FUT_EINVAL;
        }
    } else {
        r = fut__timer_poll(t, &cx->waker);
    }
    if (r == 0)
        return FUT_PENDING;
    /* The timer won (or cannot run): drop inner where it stood (C13). No
     * coop check here: a timeout must fire even when inner used up the
     * budget (Tokio does the same). */
    fut_drop(to->inner);
    fut__timer_cancel(t);
    to->armed = 0;
    to->result = r == 1 ? FUT_ETIMEDOUT : r;
    return FUT_READY;
}

static void timeout_drop(struct fut_future *f)
{
    struct fut_timeout *to = (struct fut_timeout *)f;
    fut__timer_cancel(fut__timer_of(&to->timer));
    fut_drop(to->inner);
}

static size_t timeout_children(struct fut_future *f, struct fut_future **out,
                               size_t max)
{
    if (max > 0)
        out[0] = ((struct fut_timeout *)f)->inner;
    return 1;
}

static const struct fut_future_vtable timeout_vt = {
    timeout_poll, timeout_drop, "timeout", timeout_children};

void fut_timeout_init(struct fut_timeout *t, struct fut_future *inner,
                      int64_t deadline)
{
    FUT_ARG_VOID(t, "'t' is NULL");
    FUT_ARG_VOID(inner, "'inner' is NULL");
    fut_future_init(&t->base, &timeout_vt);
    t->inner = inner;
    t->deadline = deadline;
    t->result = 0;
    t->armed = 0;
    fut__timer_init(fut__timer_of(&t->timer));
}

/* -------------------------------------------------------------- interval */

/* The tick after 'tick', taken at 'now'. */
static int64_t next_tick(const struct fut_interval *iv, int64_t tick,
                         int64_t now)
{
    if (now <= tick + LATE_NS)
        return tick + iv->period;
    switch (iv->missed) {
    case FUT_MISSED_DELAY:
        return now + iv->period;
    case FUT_MISSED_SKIP:
        return now + iv->period - (now - tick) % iv->period;
    default: /* FUT_MISSED_BURST */
        return tick + iv->period;
    }
}

static int interval_poll_next(struct fut_stream *sb, struct fut_context *cx,
                              void *item)
{
    struct fut_interval *iv = (struct fut_interval *)sb;
    struct fut__timer *t = fut__timer_of(&iv->timer);
    if (iv->result)
        return FUT_STREAM_END;
    struct fut__iodrv *d = fut__iodrv_current();
    int64_t now = clock_now(d);
    if (iv->next == 0)
        iv->next = now;
    while (now < iv->next) {
        int r;
        if (timer_state(t) == FUT__TIMER_ARMED) {
            r = fut__timer_poll(t, &cx->waker);
        } else if (!d) {
            r = FUT_EINVAL;
        } else {
            r = fut__timer_arm(d, t, iv->next, &cx->waker);
        }
        if (r == 0)
            return FUT_PENDING;
        if (r < 0) {
            iv->result = r;
            return FUT_STREAM_END;
        }
        fut__timer_cancel(t);
        now = clock_now(d);
        if (now < iv->next)
            now = iv->next; /* fired in the deadline's millisecond */
    }
    if (!fut_coop_proceed(cx))
        return FUT_PENDING;
    fut__timer_cancel(t);
    int64_t tick = iv->next;
    iv->next = next_tick(iv, tick, now);
    memcpy(item, &tick, sizeof tick);
    return FUT_STREAM_ITEM;
}

static void interval_drop(struct fut_stream *sb)
{
    fut__timer_cancel(fut__timer_of(&((struct fut_interval *)sb)->timer));
}

static const struct fut_stream_vtable interval_vt = {
    interval_poll_next, interval_drop, "interval"};

int fut_interval_init(struct fut_interval *iv, int64_t start, int64_t period,
                      int missed)
{
    FUT_ARG_CHECK(iv, "'iv' is NULL");
    fut_stream_init(&iv->base, &interval_vt, sizeof(int64_t));
    iv->period = period;
    iv->next = start;
    iv->missed = missed;
    iv->result = 0;
    fut__timer_init(fut__timer_of(&iv->timer));
    if (period <= 0 || missed < FUT_MISSED_BURST ||
        missed > FUT_MISSED_SKIP) {
        iv->result = FUT_EINVAL;
        return FUT_EINVAL;
    }
    return 0;
}

static int tick_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_interval_tick *t = (struct fut_interval_tick *)f;
    int r = fut_stream_poll_next(&t->iv->base, cx, &t->tick);
    if (r == FUT_PENDING)
        return FUT_PENDING;
    t->result = r == FUT_STREAM_ITEM
                    ? 0
                    : (t->iv->result ? t->iv->result : FUT_ECLOSED);
    return FUT_READY;
}

static const struct fut_future_vtable tick_vt = {tick_poll, NULL,
                                                 "interval_tick", NULL};

void fut_interval_tick_init(struct fut_interval_tick *t,
                            struct fut_interval *iv)
{
    FUT_ARG_VOID(t, "'t' is NULL");
    FUT_ARG_VOID(iv, "'iv' is NULL");
    fut_future_init(&t->base, &tick_vt);
    t->iv = iv;
    t->tick = 0;
    t->result = 0;
}
