/* SPDX-License-Identifier: MIT */
/* psnames: one subscriber's channels (or patterns), in the order they
 * were subscribed, each found by name in O(1): a vector in that order
 * with holes where names were removed, and an open-addressing index of
 * name -> slot over it. SUBSCRIBE and UNSUBSCRIBE of N names are O(N)
 * (a linear scan of the vector made them O(N^2): 100,000 channels took
 * 26.5 s). Not thread-safe: writers hold the registry lock (pubsub.h). */
#ifndef FUT_REDIS_PSNAMES_H
#define FUT_REDIS_PSNAMES_H

#include <stddef.h>
#include <stdint.h>

struct ps_name {
    size_t len;
    char s[];
};

struct ps_names {
    struct ps_name **v;   /* subscription order; NULL where removed */
    size_t n, cap;        /* slots of 'v' used, allocated */
    size_t head;          /* every slot before it is a hole */
    size_t live;          /* names held */
    uint32_t *ix;         /* 0 empty, PSN_GONE removed, else slot + 1 */
    size_t ixcap, ixused; /* entries, entries not empty */
};

/* The slot of 'name' (len bytes), or -1. */
long psn_find(const struct ps_names *s, const char *name, size_t len);
/* Appends 'name' (not held yet): 0, or -1 out of memory (nothing
 * changed). */
int psn_add(struct ps_names *s, const char *name, size_t len);
/* Removes the name in 'slot' (from psn_find). */
void psn_del(struct ps_names *s, long slot);
/* The first name held, in subscription order, or NULL. */
const struct ps_name *psn_first(const struct ps_names *s);
/* Frees every name and the index; 's' is then empty. */
void psn_free(struct ps_names *s);

#endif
