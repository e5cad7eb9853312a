/* SPDX-License-Identifier: MIT */
/* The hierarchical timing wheel (Tokio's runtime/time/wheel): 6 levels of
 * 64 slots; a slot of level L spans 64^L ticks of 1 ms, so the wheel
 * covers 64^6 ms (about 2.2 years) and farther deadlines wrap around the
 * top level (they are re-filed, never fired early).
 *
 * Entries are intrusive (a doubly linked list per slot) and live inside
 * the sleeping future: insert and remove never allocate, and remove is
 * O(1). Each level keeps a 64-bit occupancy mask, so finding the next
 * deadline is a few bit operations per level.
 *
 * This is a plain data structure: no locks, no wakers, no clock. The
 * driver (src/io/driver.c) owns one, under its lock.
 */
#ifndef FUT_TIME_WHEEL_H
#define FUT_TIME_WHEEL_H

#include <stddef.h>
#include <stdint.h>

#define FUT__WHEEL_LEVELS 6
#define FUT__WHEEL_SLOTS 64
/* Level value of an entry in the expired list (due, not yet taken). */
#define FUT__WHEEL_EXPIRED 0xffu

struct fut__tentry {
    struct fut__tentry *next, *prev; /* slot list (or the expired list) */
    uint64_t when;                   /* deadline, in ticks */
    uint8_t level;                   /* where it is linked */
    uint8_t slot;
    uint8_t linked; /* 1 while in the wheel */
};

struct fut__wheel {
    uint64_t elapsed; /* ticks processed: every deadline <= it has expired */
    size_t count;     /* entries in the wheel, expired list included */
    uint64_t occupied[FUT__WHEEL_LEVELS];
    struct fut__tentry *slots[FUT__WHEEL_LEVELS][FUT__WHEEL_SLOTS];
    struct fut__tentry *expired; /* due entries, taken by fut__wheel_poll */
};

void fut__wheel_init(struct fut__wheel *w, uint64_t elapsed);
/* Files 'e' (e->when set by the caller). Returns 0, or 1 without filing it
 * when its deadline has already passed (when <= elapsed): fire it now. */
int fut__wheel_insert(struct fut__wheel *w, struct fut__tentry *e);
/* Unlinks a filed entry, wherever it is. O(1). */
void fut__wheel_remove(struct fut__wheel *w, struct fut__tentry *e);
/* Advances the wheel towards 'now' and returns one entry whose deadline is
 * <= now, unlinked, or NULL when none is left; call it until NULL. Entries
 * come out in deadline order up to the slot granularity of the level they
 * were in (entries due in the same millisecond in any order). */
struct fut__tentry *fut__wheel_poll(struct fut__wheel *w, uint64_t now);
/* The tick at which the next entry may be due (a slot boundary, possibly
 * earlier than any entry's own deadline: polling then only re-files), or
 * UINT64_MAX when the wheel is empty. */
uint64_t fut__wheel_next(const struct fut__wheel *w);

#endif /* FUT_TIME_WHEEL_H */
