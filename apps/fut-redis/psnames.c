/* SPDX-License-Identifier: MIT */
/* psnames: a subscriber's names in order, indexed by name (psnames.h).
 *
 * Rules:
 *   - 'v' keeps subscription order; a removal leaves a hole (NULL) and
 *     marks its index entry PSN_GONE, so the slots of the other names do
 *     not move; 'head' skips the holes at the front (UNSUBSCRIBE without
 *     arguments removes from the front);
 *   - when holes outnumber names (n > 2 * live + 8) the vector is packed
 *     and the index rebuilt; the index is rebuilt too when its used
 *     entries (names and PSN_GONE marks) reach half its size. Both are
 *     O(live) and happen after Omega(live) operations: O(1) amortized;
 *   - the index holds slot + 1 in a uint32_t: at most 2^32 - 2 names.
 */
#include "psnames.h"

#include <stdlib.h>
#include <string.h>

#include "db.h"

#define PSN_GONE UINT32_MAX

static size_t home(const struct ps_names *s, const char *name, size_t len)
{
    return (size_t)db_hash(name, len) & (s->ixcap - 1);
}

long psn_find(const struct ps_names *s, const char *name, size_t len)
{
    if (!s->ixcap)
        return -1;
    for (size_t i = home(s, name, len);; i = (i + 1) & (s->ixcap - 1)) {
        uint32_t e = s->ix[i];
        if (e == 0)
            return -1;
        if (e == PSN_GONE)
            continue;
        const struct ps_name *nm = s->v[e - 1];
        if (nm->len == len && !memcmp(nm->s, name, len))
            return (long)(e - 1);
    }
}

static void ix_put(struct ps_names *s, size_t slot)
{
    const struct ps_name *nm = s->v[slot];
    size_t i = home(s, nm->s, nm->len);
    while (s->ix[i] != 0)
        i = (i + 1) & (s->ixcap - 1);
    s->ix[i] = (uint32_t)slot + 1;
    s->ixused++;
}

/* Packs 'v' (no holes) and rebuilds the index with room for 'want'
 * names at most a quarter full. -1 out of memory: 's' unchanged. */
static int rebuild(struct ps_names *s, size_t want)
{
    size_t cap = 16;
    while (cap < 4 * want)
        cap *= 2;
    uint32_t *ix = calloc(cap, sizeof *ix);
    if (!ix)
        return -1;
    size_t k = 0;
    for (size_t i = s->head; i < s->n; i++)
        if (s->v[i])
            s->v[k++] = s->v[i];
    s->n = k;
    s->head = 0;
    free(s->ix);
    s->ix = ix;
    s->ixcap = cap;
    s->ixused = 0;
    for (size_t i = 0; i < s->n; i++)
        ix_put(s, i);
    return 0;
}

int psn_add(struct ps_names *s, const char *name, size_t len)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 8;
        struct ps_name **nv = realloc(s->v, nc * sizeof *nv);
        if (!nv)
            return -1;
        s->v = nv;
        s->cap = nc;
    }
    if (2 * (s->ixused + 1) > s->ixcap && rebuild(s, s->live + 1) != 0)
        return -1;
    struct ps_name *nm = malloc(sizeof *nm + len);
    if (!nm)
        return -1;
    nm->len = len;
    memcpy(nm->s, name, len);
    s->v[s->n] = nm;
    ix_put(s, s->n++);
    s->live++;
    return 0;
}

void psn_del(struct ps_names *s, long slot)
{
    const struct ps_name *nm = s->v[slot];
    size_t i = home(s, nm->s, nm->len);
    while (s->ix[i] != (uint32_t)slot + 1)
        i = (i + 1) & (s->ixcap - 1);
    s->ix[i] = PSN_GONE;
    free(s->v[slot]);
    s->v[slot] = NULL;
    s->live--;
    while (s->head < s->n && !s->v[s->head])
        s->head++;
    if (s->n > 2 * s->live + 8)
        rebuild(s, s->live); /* out of memory: stays as it is, still right */
}

const struct ps_name *psn_first(const struct ps_names *s)
{
    return s->head < s->n ? s->v[s->head] : NULL;
}

void psn_free(struct ps_names *s)
{
    for (size_t i = s->head; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    free(s->ix);
    memset(s, 0, sizeof *s);
}
