/* SPDX-License-Identifier: MIT */
/* db: the keyspace (see db.h for the locking rules). Each shard is a
 * chained hash table that doubles when it holds more keys than buckets;
 * the doubling rehashes every key at once (Redis rehashes incrementally:
 * a trade-off taken here for shortness - at 1M keys a doubling takes a
 * few tens of milliseconds, once). */
#include "db.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "resp.h"

#define TAB_MIN 16

void db_account(struct db *db, void *p, int sign)
{
    if (p)
        atomic_fetch_add_explicit(&db->used,
                                  sign * (long long)malloc_usable_size(p),
                                  memory_order_relaxed);
}

static void *db_alloc(struct db *db, size_t n)
{
    void *p = malloc(n);
    db_account(db, p, 1);
    return p;
}

static void db_free(struct db *db, void *p)
{
    db_account(db, p, -1);
    free(p);
}

int db_init(struct db *db, unsigned nshards)
{
    memset(db, 0, sizeof *db);
    db->nshards = nshards;
    db->shards = calloc(nshards, sizeof *db->shards);
    if (!db->shards)
        return -ENOMEM;
    for (unsigned i = 0; i < nshards; i++) {
        struct shard *s = &db->shards[i];
        pthread_mutex_init(&s->mu, NULL);
        s->mask = TAB_MIN - 1;
        s->tab = db_alloc(db, TAB_MIN * sizeof *s->tab);
        if (!s->tab)
            return -ENOMEM; /* db_fini releases what was made */
        memset(s->tab, 0, TAB_MIN * sizeof *s->tab);
    }
    return 0;
}

static void free_entry(struct db *db, struct entry *e)
{
    if (e->type == OBJ_LIST && e->list) {
        struct litem *it;
        while ((it = rlist_pop(db, e->list, 1)) != NULL)
            db_free_item(db, it);
        db_free(db, e->list->ring);
        db_free(db, e->list);
    }
    db_free(db, e);
}

static void shard_clear(struct db *db, struct shard *s)
{
    for (size_t b = 0; b <= s->mask; b++) {
        struct entry *e = s->tab[b], *n;
        for (; e; e = n) {
            n = e->next;
            free_entry(db, e);
        }
        s->tab[b] = NULL;
    }
    s->count = s->expires = 0;
}

void db_fini(struct db *db)
{
    for (unsigned i = 0; db->shards && i < db->nshards; i++) {
        struct shard *s = &db->shards[i];
        if (s->tab) {
            shard_clear(db, s);
            db_free(db, s->tab);
        }
        pthread_mutex_destroy(&s->mu);
    }
    free(db->shards);
    db->shards = NULL;
}

/* FNV-1a, 64 bits, with a final mix so that both ends of the word (the
 * shard takes the top bits, the bucket the bottom ones) are spread. */
uint64_t db_hash(const char *k, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)k[i];
        h *= 1099511628211ULL;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

void db_lock_keys(struct db *db, const struct resp_arg *argv, size_t first,
                  size_t last, size_t step, uint64_t *set)
{
    memset(set, 0, DB_SET_WORDS * sizeof *set);
    for (size_t i = first; i <= last; i += step) {
        unsigned sh = (unsigned)((db_hash(argv[i].p, argv[i].len) >> 48) &
                                 (db->nshards - 1));
        set[sh / 64] |= 1ULL << (sh % 64);
    }
    for (unsigned sh = 0; sh < db->nshards; sh++)
        if (set[sh / 64] & (1ULL << (sh % 64)))
            pthread_mutex_lock(&db->shards[sh].mu);
}

void db_unlock_keys(struct db *db, const uint64_t *set)
{
    for (unsigned sh = 0; sh < db->nshards; sh++)
        if (set[sh / 64] & (1ULL << (sh % 64)))
            pthread_mutex_unlock(&db->shards[sh].mu);
}

void db_lock_all(struct db *db)
{
    for (unsigned i = 0; i < db->nshards; i++)
        pthread_mutex_lock(&db->shards[i].mu);
}

void db_unlock_all(struct db *db)
{
    for (unsigned i = db->nshards; i-- > 0;)
        pthread_mutex_unlock(&db->shards[i].mu);
}

static void grow(struct db *db, struct shard *s)
{
    size_t nsize = (s->mask + 1) * 2;
    struct entry **nt = db_alloc(db, nsize * sizeof *nt);
    if (!nt)
        return; /* keep the longer chains; still correct */
    memset(nt, 0, nsize * sizeof *nt);
    for (size_t b = 0; b <= s->mask; b++) {
        struct entry *e = s->tab[b], *n;
        for (; e; e = n) {
            n = e->next;
            size_t nb = e->hash & (nsize - 1);
            e->next = nt[nb];
            nt[nb] = e;
        }
    }
    db_free(db, s->tab);
    s->tab = nt;
    s->mask = nsize - 1;
    s->cursor = 0;
}

static struct entry **lookup(struct shard *s, const char *k, size_t klen,
                             uint64_t h)
{
    struct entry **pp = &s->tab[h & s->mask];
    for (; *pp; pp = &(*pp)->next) {
        struct entry *e = *pp;
        if (e->hash == h && e->klen == klen && !memcmp(e->data, k, klen))
            return pp;
    }
    return NULL;
}

void db_delete(struct db *db, struct shard *s, struct entry **slot)
{
    struct entry *e = *slot;
    *slot = e->next;
    if (e->expire_ms)
        s->expires--;
    s->count--;
    free_entry(db, e);
}

struct entry **db_find(struct db *db, struct shard *s, const char *k,
                       size_t klen, uint64_t h, int64_t now_ms)
{
    struct entry **pp = lookup(s, k, klen, h);
    if (pp && (*pp)->expire_ms && (*pp)->expire_ms <= now_ms) {
        db_delete(db, s, pp);
        atomic_fetch_add_explicit(&db->expired, 1, memory_order_relaxed);
        return NULL;
    }
    return pp;
}

void db_set_expire(struct shard *s, struct entry *e, int64_t expire_ms)
{
    s->expires += (expire_ms != 0) - (e->expire_ms != 0);
    e->expire_ms = expire_ms;
}

static struct entry *new_entry(struct db *db, const char *k, size_t klen,
                               uint64_t h, size_t vroom)
{
    struct entry *e = db_alloc(db, sizeof *e + klen + vroom);
    if (!e)
        return NULL;
    memset(e, 0, sizeof *e);
    e->hash = h;
    e->klen = (uint32_t)klen;
    e->vcap = (uint32_t)vroom;
    memcpy(e->data, k, klen);
    return e;
}

static void link_new(struct db *db, struct shard *s, struct entry *e)
{
    struct entry **b = &s->tab[e->hash & s->mask];
    e->next = *b;
    *b = e;
    if (++s->count > s->mask + 1)
        grow(db, s);
}

struct entry *db_set_string(struct db *db, struct shard *s, const char *k,
                            size_t klen, uint64_t h, const char *v,
                            size_t vlen, int64_t expire_ms, int keep_ttl,
                            int64_t now_ms)
{
    struct entry **pp = db_find(db, s, k, klen, h, now_ms);
    struct entry *old = pp ? *pp : NULL;
    if (old && old->type == OBJ_STRING && old->vcap >= vlen &&
        old->vcap <= 2 * vlen + 16) {
        memcpy(entry_val(old), v, vlen); /* in place */
        old->vlen = (uint32_t)vlen;
        if (!keep_ttl)
            db_set_expire(s, old, expire_ms);
        return old;
    }
    struct entry *e = new_entry(db, k, klen, h, vlen);
    if (!e)
        return NULL;
    memcpy(entry_val(e), v, vlen);
    e->vlen = (uint32_t)vlen;
    e->type = OBJ_STRING;
    int64_t keep = old ? old->expire_ms : 0;
    if (old)
        db_delete(db, s, pp);
    link_new(db, s, e);
    db_set_expire(s, e, keep_ttl ? keep : expire_ms);
    return e;
}

int db_append(struct db *db, struct shard *s, struct entry **slot,
              const char *v, size_t vlen)
{
    struct entry *e = *slot;
    size_t need = (size_t)e->vlen + vlen;
    if (need > UINT32_MAX)
        return -ENOMEM;
    if (need > e->vcap) {
        size_t room = need < 1024 * 1024 ? need * 2 : need + 1024 * 1024;
        if (room > UINT32_MAX)
            room = need;
        db_account(db, e, -1);
        struct entry *n = realloc(e, sizeof *e + e->klen + room);
        if (!n) {
            db_account(db, e, 1);
            return -ENOMEM;
        }
        db_account(db, n, 1);
        n->vcap = (uint32_t)room;
        *slot = e = n; /* the chain points at the new block */
    }
    memcpy(entry_val(e) + e->vlen, v, vlen);
    e->vlen = (uint32_t)need;
    return 0;
}

struct entry *db_new_list(struct db *db, struct shard *s, const char *k,
                          size_t klen, uint64_t h)
{
    struct entry *e = new_entry(db, k, klen, h, 0);
    struct rlist *l = db_alloc(db, sizeof *l);
    if (!e || !l) {
        db_free(db, e);
        db_free(db, l);
        return NULL;
    }
    memset(l, 0, sizeof *l);
    e->type = OBJ_LIST;
    e->list = l;
    link_new(db, s, e);
    return e;
}

size_t db_size(struct db *db)
{
    size_t n = 0;
    for (unsigned i = 0; i < db->nshards; i++)
        n += db->shards[i].count;
    return n;
}

size_t db_expires(struct db *db)
{
    size_t n = 0;
    for (unsigned i = 0; i < db->nshards; i++)
        n += db->shards[i].expires;
    return n;
}

void db_flush(struct db *db)
{
    for (unsigned i = 0; i < db->nshards; i++)
        shard_clear(db, &db->shards[i]);
}

/* ------------------------------------------------------------------ lists */

static int rlist_grow(struct db *db, struct rlist *l)
{
    size_t ncap = l->cap ? l->cap * 2 : 8;
    struct litem **nr = db_alloc(db, ncap * sizeof *nr);
    if (!nr)
        return -ENOMEM;
    for (size_t i = 0; i < l->len; i++)
        nr[i] = l->ring[(l->head + i) & (l->cap - 1)];
    db_free(db, l->ring);
    l->ring = nr;
    l->head = 0;
    l->cap = ncap;
    return 0;
}

int rlist_push(struct db *db, struct rlist *l, int left, const char *p,
               size_t n)
{
    if (l->len == l->cap && rlist_grow(db, l) != 0)
        return -ENOMEM;
    struct litem *it = db_alloc(db, sizeof *it + n);
    if (!it)
        return -ENOMEM;
    it->len = n;
    memcpy(it->data, p, n);
    if (left) {
        l->head = (l->head - 1) & (l->cap - 1);
        l->ring[l->head] = it;
    } else {
        l->ring[(l->head + l->len) & (l->cap - 1)] = it;
    }
    l->len++;
    return 0;
}

struct litem *rlist_pop(struct db *db, struct rlist *l, int left)
{
    if (l->len == 0)
        return NULL;
    struct litem *it;
    if (left) {
        it = l->ring[l->head];
        l->head = (l->head + 1) & (l->cap - 1);
    } else {
        it = l->ring[(l->head + l->len - 1) & (l->cap - 1)];
    }
    l->len--;
    return it;
}

struct litem *rlist_at(const struct rlist *l, size_t i)
{
    return l->ring[(l->head + i) & (l->cap - 1)];
}

void db_free_item(struct db *db, struct litem *it)
{
    db_free(db, it);
}

/* ----------------------------------------------------------------- expiry */

size_t db_sweep(struct db *db, struct shard *s, int64_t now_ms, size_t budget)
{
    size_t deleted = 0;
    pthread_mutex_lock(&s->mu);
    for (size_t looked = 0; s->expires > 0 && looked < budget;) {
        size_t b = s->cursor & s->mask;
        struct entry **pp = &s->tab[b];
        while (*pp) {
            struct entry *e = *pp;
            looked++;
            if (e->expire_ms && e->expire_ms <= now_ms) {
                db_delete(db, s, pp);
                deleted++;
            } else {
                pp = &e->next;
            }
        }
        looked++; /* empty buckets cost too */
        s->cursor = (b + 1) & s->mask;
    }
    pthread_mutex_unlock(&s->mu);
    if (deleted)
        atomic_fetch_add_explicit(&db->expired, (long long)deleted,
                                  memory_order_relaxed);
    return deleted;
}
