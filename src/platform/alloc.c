/* The allocator hook (the lua_Alloc shape) and the live-block count every
 * test's leak check reads. All allocation in fut goes through here. */
#include <stdlib.h>

#include "internal.h"

static void *default_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud;
    (void)osize;
    if (nsize == 0) {
        free(ptr);
        return NULL;
    }
    return realloc(ptr, nsize);
}

static fut_alloc_fn alloc_fn = default_alloc;
static void *alloc_ud;
/* Statistics only: relaxed. */
static fut__aword live_blocks;
static fut__aword alloc_calls;

void fut_set_allocator(fut_alloc_fn fn, void *ud)
{
    alloc_fn = fn ? fn : default_alloc;
    alloc_ud = fn ? ud : NULL;
}

long fut_alloc_live(void)
{
    return (long)fut__load(&live_blocks, FUT__RELAXED);
}

long fut_alloc_count(void)
{
    return (long)fut__load(&alloc_calls, FUT__RELAXED);
}

void *fut__alloc(size_t size)
{
    fut__fetch_add(&alloc_calls, 1, FUT__RELAXED);
    void *p = alloc_fn(alloc_ud, NULL, 0, size ? size : 1);
    if (p)
        fut__fetch_add(&live_blocks, 1, FUT__RELAXED);
    return p;
}

void fut__free(void *p, size_t size)
{
    if (!p)
        return;
    fut__fetch_sub(&live_blocks, 1, FUT__RELAXED);
    alloc_fn(alloc_ud, p, size, 0);
}
