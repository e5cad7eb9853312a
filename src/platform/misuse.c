/* Programming errors: the report that names the call and its caller, and
 * the debug builds' registry of live handles (docs/design.md,
 * "Programming errors").
 *
 * fut__misuse prints "fut: <function>: <what was wrong>", then where the
 * call came from - the caller's symbol and, when the caller was built
 * with -g and addr2line is installed, its file:line - and aborts. It runs
 * only on the way to an abort, so it may fork addr2line.
 *
 * The registry (FUT_DEBUG only): a handle that must not be copied (a join
 * handle, a channel end) carries a private 'gen', a number the registry
 * hands out when the handle is made and forgets when it is given up. A
 * copy of a handle carries the same number, so the second of the two to
 * be used after the first gave the handle up finds its number gone - and
 * that check reads only the registry, never the object the handle refers
 * to (which may be freed by then). Rules:
 *   - every entry maps a number (never 0, never reused before 2^32 more
 *     handles) to the object it was made for; the object is only compared,
 *     never dereferenced;
 *   - one mutex guards the table (debug builds only: a handle is made and
 *     given up at most a few times per task or channel).
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Writes the caller's file:line (from addr2line) into 'out'; 0 on success. */
static int caller_line(const char *obj, uintptr_t off, char *out, size_t n)
{
    if (getenv("FUT_NO_ADDR2LINE"))
        return -1;
    char cmd[1200];
    /* 'off' is a return address: the call is the byte before it. */
    snprintf(cmd, sizeof cmd, "addr2line -C -f -i -e '%s' 0x%" PRIxPTR
             " 2>/dev/null", obj, off - 1);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    /* Pairs of lines (function, file:line), innermost inline first: the
     * last pair is the function that was compiled, the caller's line. */
    char fn[256], loc[512], best[800] = "";
    while (fgets(fn, sizeof fn, p) && fgets(loc, sizeof loc, p)) {
        fn[strcspn(fn, "\n")] = 0;
        loc[strcspn(loc, "\n")] = 0;
        if (loc[0] != '?')
            snprintf(best, sizeof best, "%s at %s", fn, loc);
    }
    pclose(p);
    if (!best[0])
        return -1;
    snprintf(out, n, "%s", best);
    return 0;
}

/* "main at app.c:12", or "main+0x1c in ./app" without line info. */
static void describe_caller(const void *caller, char *out, size_t n)
{
    Dl_info info;
    if (!caller || !dladdr(caller, &info) || !info.dli_fname) {
        snprintf(out, n, "%p", caller);
        return;
    }
    /* A shared object or PIE is linked at 0: its addresses are offsets
     * from its load base. */
    uintptr_t off = (uintptr_t)caller - (uintptr_t)info.dli_fbase;
    /* The main program's name may be relative to a directory the
     * process has left: ask its own link for it. */
    if (caller_line(info.dli_fname, off, out, n) == 0 ||
        caller_line("/proc/self/exe", off, out, n) == 0)
        return;
    if (info.dli_sname)
        snprintf(out, n, "%s+0x%" PRIxPTR " in %s", info.dli_sname,
                 (uintptr_t)caller - (uintptr_t)info.dli_saddr,
                 info.dli_fname);
    else
        snprintf(out, n, "0x%" PRIxPTR " in %s", off, info.dli_fname);
}

__attribute__((noinline)) void fut__misuse(const char *fn, const char *what,
                                           const void *caller)
{
    /* Called from a header's inline function: the return address is in
     * the code the user compiled, where the call was made. */
    if (!caller)
        caller = __builtin_return_address(0);
    char where[900];
    describe_caller(caller, where, sizeof where);
    fprintf(stderr, "fut: %s: %s (called from %s)\n", fn, what, where);
    fflush(stderr);
    abort();
}

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
        fut__misuse(fn, "this handle was given up already (a copy of a "
                        "handle used after the original was dropped?)",
                    caller);
}

void fut__handle_end(const void *obj, uint32_t gen, const char *fn,
                     const void *caller)
{
    if (gen != 0 && !reg_live(obj, gen, 1))
        fut__misuse(fn, "this handle was given up already (a copy of a "
                        "handle used after the original was dropped?)",
                    caller);
}

int fut__handle_obj_live(const void *obj)
{
    pthread_mutex_lock(&reg_lock);
    int live = 0;
    for (size_t i = 0; i < reg_cap && !live; i++)
        live = reg_tab[i].gen != 0 && reg_tab[i].gen != DELETED &&
               reg_tab[i].obj == obj;
    pthread_mutex_unlock(&reg_lock);
    return live;
}
#endif /* FUT_DEBUG */
