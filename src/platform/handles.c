/* SPDX-License-Identifier: MIT */
/* The debug builds' registries of live handles and of live runtimes
 * (docs/design.md, "Programming errors"; the misuse report itself is
 * fut__misuse in report.c; the runtime registry is at the end).
 *
 * A handle that must not be copied (a join handle, a channel end) carries
 * a private 'gen', a number the registry hands out when the handle is
 * made and forgets when it is given up. A copy of a handle carries the
 * same number, so the second of the two to be used after the first gave
 * the handle up finds its number gone - and that check reads only the
 * registry, never the object the handle refers to (which may be freed by
 * then). Rules:
 *   - every entry maps a number (never 0, never reused before 2^32 more
 *     handles) to the object it was made for; the object is only compared,
 *     never dereferenced;
 *   - one mutex guards the table (debug builds only: a handle is made and
 *     given up at most a few times per task or channel).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "internal.h"

/* ------------------------------------------------------- handle registry */

#ifdef FUT_DEBUG
struct handle_slot {
    uint32_t gen; /* 0: empty; UINT32_MAX: deleted */
    const void *obj;
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct handle_slot *reg_tab; /* open addressing, linear probe */
static size_t reg_cap, reg_used;    /* slots, slots not empty */
static uint32_t reg_next = 1;

#define DELETED UINT32_MAX

static size_t slot_of(uint32_t gen, size_t cap)
{
    return (size_t)(gen * 2654435761u) & (cap - 1);
}

static void reg_insert(struct handle_slot *tab, size_t cap, uint32_t gen,
                       const void *obj)
{
    size_t i = slot_of(gen, cap);
    while (tab[i].gen != 0 && tab[i].gen != DELETED)
        i = (i + 1) & (cap - 1);
    tab[i].gen = gen;
    tab[i].obj = obj;
}

/* Under reg_lock: room for one more entry (the table at most half full).
 * The registry's memory is not the library's (it is debug bookkeeping):
 * plain calloc, so the allocator hook's counts stay the user's. */
static int reg_grow(void)
{
    if (reg_used + 1 <= reg_cap / 2)
        return 0;
    /* Rebuild without the deleted slots, a quarter full at most. */
    size_t live = 0, cap = 1024;
    for (size_t i = 0; i < reg_cap; i++)
        live += reg_tab[i].gen != 0 && reg_tab[i].gen != DELETED;
    while (cap < 4 * (live + 1))
        cap *= 2;
    struct handle_slot *tab = calloc(cap, sizeof *tab);
    if (!tab)
        return -1;
    for (size_t i = 0; i < reg_cap; i++)
        if (reg_tab[i].gen != 0 && reg_tab[i].gen != DELETED)
            reg_insert(tab, cap, reg_tab[i].gen, reg_tab[i].obj);
    free(reg_tab);
    reg_tab = tab;
    reg_cap = cap;
    reg_used = live;
    return 0;
}

static struct handle_slot *reg_find(uint32_t gen)
{
    if (!reg_cap)
        return NULL;
    size_t i = slot_of(gen, reg_cap);
    while (reg_tab[i].gen != 0) {
        if (reg_tab[i].gen == gen)
            return &reg_tab[i];
        i = (i + 1) & (reg_cap - 1);
    }
    return NULL;
}

uint32_t fut__handle_new(const void *obj)
{
    pthread_mutex_lock(&reg_lock);
    uint32_t gen = 0;
    if (reg_grow() == 0) {
        do
            gen = reg_next++;
        while (gen == 0 || gen == DELETED || reg_find(gen));
        reg_insert(reg_tab, reg_cap, gen, obj);
        reg_used++;
    }
    pthread_mutex_unlock(&reg_lock);
    return gen; /* 0 (out of memory): the handle is not checked */
}

static int reg_live(const void *obj, uint32_t gen, int forget)
{
    pthread_mutex_lock(&reg_lock);
    struct handle_slot *s = reg_find(gen);
    int live = s && s->obj == obj;
    if (live && forget)
        s->gen = DELETED;
    pthread_mutex_unlock(&reg_lock);
    return live;
}

void fut__handle_check(const void *obj, uint32_t gen, const char *fn,
                       const void *caller)
{
    if (gen != 0 && !reg_live(obj, gen, 0))
        fut__misuse(fn,
                    "this handle was given up already (a copy of a "
                    "handle used after the original was dropped?)",
                    caller);
}

void fut__handle_end(const void *obj, uint32_t gen, const char *fn,
                     const void *caller)
{
    if (gen != 0 && !reg_live(obj, gen, 1))
        fut__misuse(fn,
                    "this handle was given up already (a copy of a "
                    "handle used after the original was dropped?)",
                    caller);
}

/* ------------------------------------------------------ runtime registry */

/* The runtimes whose memory is alive: a set of pointers (open addressing,
 * linear probe) under its own read-write lock, so that the check every
 * fut_spawn on a given runtime makes is one hash probe under a shared
 * lock. A runtime is added by fut_runtime_new and removed when its
 * memory goes (with the scheduler's: after fut_runtime_free, at once or
 * with the last join handle or waker). Like the handle registry the
 * pointers are only compared, and the memory is plain calloc. A runtime
 * that could not be added (out of memory) turns the checks off for good:
 * a false abort would be worse than a missed one. */
#define RT_GONE ((const void *)1) /* a deleted slot */

static pthread_rwlock_t rt_lock = PTHREAD_RWLOCK_INITIALIZER;
static const void **rt_tab;
static size_t rt_cap, rt_used; /* slots, slots not empty */
static int rt_lossy;           /* a runtime is missing: no checks */

static size_t rt_slot(const void *rt, size_t cap)
{
    return (size_t)(((uintptr_t)rt >> 4) * 0x9E3779B97F4A7C15ull) & (cap - 1);
}

static void rt_put(const void **tab, size_t cap, const void *rt)
{
    size_t i = rt_slot(rt, cap);
    while (tab[i] && tab[i] != RT_GONE)
        i = (i + 1) & (cap - 1);
    tab[i] = rt;
}

/* Under rt_lock (write): room for one more (at most half full). */
static int rt_grow(void)
{
    if (rt_used + 1 <= rt_cap / 2)
        return 0;
    size_t live = 0, cap = 16;
    for (size_t i = 0; i < rt_cap; i++)
        live += rt_tab[i] && rt_tab[i] != RT_GONE;
    while (cap < 4 * (live + 1))
        cap *= 2;
    const void **tab = calloc(cap, sizeof *tab);
    if (!tab)
        return -1;
    for (size_t i = 0; i < rt_cap; i++)
        if (rt_tab[i] && rt_tab[i] != RT_GONE)
            rt_put(tab, cap, rt_tab[i]);
    free(rt_tab);
    rt_tab = tab;
    rt_cap = cap;
    rt_used = live;
    return 0;
}

/* Under rt_lock: the slot holding 'rt', or NULL. */
static const void **rt_find(const void *rt)
{
    if (!rt_cap)
        return NULL;
    for (size_t i = rt_slot(rt, rt_cap); rt_tab[i];
         i = (i + 1) & (rt_cap - 1))
        if (rt_tab[i] == rt)
            return &rt_tab[i];
    return NULL;
}

void fut__rt_reg_add(const void *rt)
{
    pthread_rwlock_wrlock(&rt_lock);
    if (rt_grow() == 0) {
        rt_put(rt_tab, rt_cap, rt);
        rt_used++;
    } else {
        rt_lossy = 1;
    }
    pthread_rwlock_unlock(&rt_lock);
}

void fut__rt_reg_forget(const void *rt)
{
    pthread_rwlock_wrlock(&rt_lock);
    const void **s = rt_find(rt);
    if (s) /* absent: a runtime whose start failed, never added */
        *s = RT_GONE;
    pthread_rwlock_unlock(&rt_lock);
}

int fut__rt_reg_live(const void *rt)
{
    pthread_rwlock_rdlock(&rt_lock);
    int live = rt_lossy || rt_find(rt) != NULL;
    pthread_rwlock_unlock(&rt_lock);
    return live;
}
#endif /* FUT_DEBUG */
