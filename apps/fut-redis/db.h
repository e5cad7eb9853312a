/* SPDX-License-Identifier: MIT */
/* db: the keyspace - strings and lists in hash-table shards, expiry
 * (lazy on access plus an active sweep), memory accounting.
 *
 * Rules (shards and threads):
 *   - the keyspace is split into 'nshards' shards by key hash (1 shard on
 *     the current-thread runtime, 16 per worker on the multi-thread one);
 *     each shard is a hash table behind a plain pthread mutex;
 *   - a shard's mutex is held only by code that never awaits: a command
 *     locks the shards of its keys, runs to its end and unlocks, all
 *     inside one poll of its connection's task; so a lock is held for
 *     microseconds and never across a suspension point, and a plain mutex
 *     is cheaper than fut's async one (no waiter node, no wake);
 *   - a command with several keys locks their shards in ascending shard
 *     order (db_lock_keys): no two commands can wait for each other;
 *     commands over the whole keyspace (DBSIZE, FLUSHALL) lock every
 *     shard in order, as does the expiry sweep one shard at a time;
 *   - 'used' (bytes of keyspace allocations) is an atomic counter that
 *     every shard adds to under its own lock; it is read without a lock
 *     (relaxed: a snapshot for --maxmemory and INFO; nothing is ordered
 *     by it).
 *   - entries are only touched with their shard's lock held.
 */
#ifndef FUT_REDIS_DB_H
#define FUT_REDIS_DB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

enum obj_type { OBJ_STRING = 0, OBJ_LIST = 1 };

/* A list element. */
struct litem {
    size_t len;
    char data[];
};

/* A list: a ring of element pointers (O(1) push/pop at both ends, O(1)
 * index for LRANGE). */
struct rlist {
    struct litem **ring;
    size_t head, len, cap; /* cap is a power of two */
};

/* A key and its value, one allocation for strings: the key's bytes, then
 * the value's (Redis' embstr idea, for every size). */
struct entry {
    struct entry *next; /* hash chain */
    int64_t expire_ms;  /* absolute, runtime clock in ms; 0: none */
    uint64_t hash;
    uint32_t klen;
    uint8_t type;        /* enum obj_type */
    uint32_t vlen, vcap; /* string: value length, room after the key */
    struct rlist *list;  /* list: the elements */
    char data[];         /* key bytes, then (strings) value bytes */
};

static inline char *entry_key(struct entry *e)
{
    return e->data;
}
static inline char *entry_val(struct entry *e)
{
    return e->data + e->klen;
}

struct shard {
    pthread_mutex_t mu;
    struct entry **tab; /* buckets; size 'mask + 1' */
    size_t mask;
    size_t count;   /* keys */
    size_t expires; /* keys with an expiry */
    size_t cursor;  /* next bucket of the active sweep */
};

struct db {
    struct shard *shards;
    unsigned nshards;     /* a power of two */
    atomic_llong used;    /* bytes allocated for the keyspace */
    atomic_llong expired; /* keys removed by expiry (lazy + active) */
    atomic_llong hits, misses;
};

int db_init(struct db *db, unsigned nshards);
void db_fini(struct db *db);

uint64_t db_hash(const char *k, size_t n);
static inline struct shard *db_shard(struct db *db, uint64_t h)
{
    return &db->shards[(h >> 48) & (db->nshards - 1)];
}

/* Locks the shards of the keys argv[first], argv[first+step], ... up to
 * argv[last] in ascending order, each once; db_unlock_keys undoes it.
 * 'set' (>= nshards bits, caller storage) records which were locked. */
struct resp_arg;
void db_lock_keys(struct db *db, const struct resp_arg *argv, size_t first,
                  size_t last, size_t step, uint64_t *set);
void db_unlock_keys(struct db *db, const uint64_t *set);
#define DB_SET_WORDS 64 /* up to 4096 shards */
void db_lock_all(struct db *db);
void db_unlock_all(struct db *db);

/* Lookups return the slot (pointer to the chain link) of the key, or NULL
 * when absent; a key whose expiry has passed is deleted on the way (lazy
 * expiry) and reported absent. The shard's lock must be held. */
struct entry **db_find(struct db *db, struct shard *s, const char *k,
                       size_t klen, uint64_t h, int64_t now_ms);

/* Sets 'k' to the string 'v' (replacing any value, clearing the expiry
 * unless 'keep_ttl'), with 'expire_ms' (0: none). Returns the new entry or
 * NULL (no memory: nothing changed). */
struct entry *db_set_string(struct db *db, struct shard *s, const char *k,
                            size_t klen, uint64_t h, const char *v,
                            size_t vlen, int64_t expire_ms, int keep_ttl,
                            int64_t now_ms);
/* Appends to the string at '*slot' (reallocating it). 0 or -ENOMEM. */
int db_append(struct db *db, struct shard *s, struct entry **slot,
              const char *v, size_t vlen);
/* A new empty list at 'k' (absent). NULL: no memory. */
struct entry *db_new_list(struct db *db, struct shard *s, const char *k,
                          size_t klen, uint64_t h);
void db_delete(struct db *db, struct shard *s, struct entry **slot);
void db_set_expire(struct shard *s, struct entry *e, int64_t expire_ms);
size_t db_size(struct db *db);    /* all shards locked by the caller */
size_t db_expires(struct db *db); /* idem */
void db_flush(struct db *db);     /* idem */

/* List operations (the entry is a list; its shard locked). */
int rlist_push(struct db *db, struct rlist *l, int left, const char *p,
               size_t n);
struct litem *rlist_pop(struct db *db, struct rlist *l, int left);
struct litem *rlist_at(const struct rlist *l, size_t i);
void db_free_item(struct db *db, struct litem *it);

/* Active expiry of one shard: deletes expired keys, at most about
 * 'budget' entries looked at. Returns keys deleted. Locks the shard. */
size_t db_sweep(struct db *db, struct shard *s, int64_t now_ms,
                size_t budget);

/* Allocation accounting (usable size of the block). */
void db_account(struct db *db, void *p, int sign);

#endif
