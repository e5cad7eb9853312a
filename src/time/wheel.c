/* SPDX-License-Identifier: MIT */
/* The timing wheel (see wheel.h), after Tokio's runtime/time/wheel.
 *
 * Invariants:
 *   - an entry of level L has a deadline that first differs from
 *     'elapsed' (at the time it was filed) in bits [6L, 6L+6): it is in
 *     the current span of level L+1 but not of level L;
 *   - so the earliest occupied slot of the lowest occupied level holds the
 *     next deadline; a slot of level L > 0 is processed when its start is
 *     reached, re-filing its entries one or more levels down;
 *   - deadlines beyond the top level's span are filed in the top level as
 *     if it were a ring; processing such a slot re-files them again. The
 *     search for the next slot therefore starts after the current slot
 *     and ends with it (a deadline in the current top-level slot is a
 *     whole rotation away). Tokio searches from the current slot, which
 *     lets such an entry hide an earlier one in a later slot; the test
 *     time_wheel.far found that.
 */
#include "time/wheel.h"

#define LEVEL_BITS 6
#define SLOT_MASK ((uint64_t)FUT__WHEEL_SLOTS - 1)
#define MAX_SPAN (((uint64_t)1 << (LEVEL_BITS * FUT__WHEEL_LEVELS)) - 1)

static uint64_t slot_range(int level)
{
    return (uint64_t)1 << (LEVEL_BITS * level);
}

static uint64_t level_range(int level)
{
    return (uint64_t)1 << (LEVEL_BITS * (level + 1));
}

/* The level an entry due at 'when' goes to, seen from 'elapsed'. */
static int level_for(uint64_t elapsed, uint64_t when)
{
    uint64_t masked = (elapsed ^ when) | SLOT_MASK;
    if (masked >= MAX_SPAN)
        masked = MAX_SPAN - 1; /* beyond the wheel: the top level */
    int significant = 63 - __builtin_clzll(masked);
    return significant / LEVEL_BITS;
}

static int slot_for(uint64_t when, int level)
{
    return (int)((when >> (LEVEL_BITS * level)) & SLOT_MASK);
}

void fut__wheel_init(struct fut__wheel *w, uint64_t elapsed)
{
    w->elapsed = elapsed;
    w->count = 0;
    w->expired = NULL;
    for (int l = 0; l < FUT__WHEEL_LEVELS; l++) {
        w->occupied[l] = 0;
        for (int s = 0; s < FUT__WHEEL_SLOTS; s++)
            w->slots[l][s] = NULL;
    }
}

static void push(struct fut__tentry **head, struct fut__tentry *e)
{
    e->prev = NULL;
    e->next = *head;
    if (*head)
        (*head)->prev = e;
    *head = e;
}

static void file(struct fut__wheel *w, struct fut__tentry *e, int level)
{
    int slot = slot_for(e->when, level);
    e->level = (uint8_t)level;
    e->slot = (uint8_t)slot;
    push(&w->slots[level][slot], e);
    w->occupied[level] |= (uint64_t)1 << slot;
}

int fut__wheel_insert(struct fut__wheel *w, struct fut__tentry *e)
{
    if (e->when <= w->elapsed)
        return 1;
    file(w, e, level_for(w->elapsed, e->when));
    e->linked = 1;
    w->count++;
    return 0;
}

void fut__wheel_remove(struct fut__wheel *w, struct fut__tentry *e)
{
    if (!e->linked)
        return;
    struct fut__tentry **head = e->level == FUT__WHEEL_EXPIRED
                                    ? &w->expired
                                    : &w->slots[e->level][e->slot];
    if (e->prev)
        e->prev->next = e->next;
    else
        *head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    if (e->level != FUT__WHEEL_EXPIRED && !*head)
        w->occupied[e->level] &= ~((uint64_t)1 << e->slot);
    e->next = e->prev = NULL;
    e->linked = 0;
    w->count--;
}

/* The deadline of the earliest occupied slot of 'level', or UINT64_MAX. */
static uint64_t level_next(const struct fut__wheel *w, int level,
                           int *slot_out)
{
    uint64_t occ = w->occupied[level];
    if (!occ)
        return UINT64_MAX;
    /* Search from the slot after the current one, which comes last: below
     * the top level the current slot is always empty (an entry there would
     * belong to a lower level), and in the top level it holds deadlines a
     * whole rotation away. Rotate so that bit 0 is that first slot. */
    uint64_t first = ((w->elapsed / slot_range(level)) + 1) & SLOT_MASK;
    uint64_t rot = first ? (occ >> first) | (occ << (64 - first)) : occ;
    int slot = (int)((__builtin_ctzll(rot) + first) & SLOT_MASK);
    uint64_t start = w->elapsed & ~(level_range(level) - 1);
    uint64_t deadline = start + (uint64_t)slot * slot_range(level);
    if (deadline <= w->elapsed)
        deadline += level_range(level); /* the top level's ring wrapped */
    *slot_out = slot;
    return deadline;
}

uint64_t fut__wheel_next(const struct fut__wheel *w)
{
    if (w->expired)
        return w->elapsed;
    for (int l = 0; l < FUT__WHEEL_LEVELS; l++) {
        int slot;
        uint64_t d = level_next(w, l, &slot);
        if (d != UINT64_MAX)
            return d; /* nothing in a higher level is due earlier */
    }
    return UINT64_MAX;
}

/* Empties slot (level, slot) whose start 'deadline' has been reached:
 * due entries go to the expired list, the others one level down or more.
 */
static void process(struct fut__wheel *w, int level, int slot,
                    uint64_t deadline)
{
    struct fut__tentry *e = w->slots[level][slot];
    w->slots[level][slot] = NULL;
    w->occupied[level] &= ~((uint64_t)1 << slot);
    while (e) {
        struct fut__tentry *next = e->next;
        if (next)
            __builtin_prefetch(next, 1); /* overlap the next cold miss */
        if (e->when <= deadline) {
            e->level = FUT__WHEEL_EXPIRED;
            push(&w->expired, e);
        } else {
            file(w, e, level_for(deadline, e->when));
        }
        e = next;
    }
}

struct fut__tentry *fut__wheel_poll(struct fut__wheel *w, uint64_t now)
{
    for (;;) {
        struct fut__tentry *e = w->expired;
        if (e) {
            fut__wheel_remove(w, e);
            return e;
        }
        int level = -1, slot = 0;
        uint64_t deadline = UINT64_MAX;
        for (int l = 0; l < FUT__WHEEL_LEVELS && level < 0; l++) {
            deadline = level_next(w, l, &slot);
            if (deadline != UINT64_MAX)
                level = l;
        }
        if (level < 0 || deadline > now) {
            if (now > w->elapsed)
                w->elapsed = now;
            return NULL;
        }
        process(w, level, slot, deadline);
        w->elapsed = deadline;
    }
}
