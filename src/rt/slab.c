/* SPDX-License-Identifier: MIT */
/* Task memory cache; see slab.h for the rules. This file has the slow
 * half (chunks, the bump pointer, the drain of the remote stack) and the
 * 8-byte-class entry points. */
#include "rt/slab.h"

#define CHUNK_BYTES (64 * 1024)

/* The first line of a chunk (the chunk is line-aligned inside the
 * allocation 'raw'); blocks follow it. */
struct fut__slab_chunk {
    struct fut__slab_chunk *next;
    void *raw; /* what fut__alloc returned */
};

void fut__slab_init(struct fut__slab *s)
{
    for (int i = 0; i <= FUT__SLAB_CLASSES; i++)
        s->free[i] = NULL;
    fut__aword_init(&s->remote, 0);
    s->chunks = NULL;
    s->bump = NULL;
    s->bump_left = 0;
}

void fut__slab_fini(struct fut__slab *s)
{
    struct fut__slab_chunk *c = s->chunks;
    while (c) {
        struct fut__slab_chunk *next = c->next;
        fut__free(c->raw, CHUNK_BYTES + FUT__SLAB_LINE);
        c = next;
    }
    s->chunks = NULL;
}

/* Moves blocks freed on other threads to the owner's lists. */
static void drain(struct fut__slab *s)
{
    /* Acquire: pairs with fut__slab_push_remote's release CAS. */
    void **b = (void **)fut__swap(&s->remote, 0, FUT__ACQUIRE);
    while (b) {
        void **next = (void **)b[0];
        fut__slab_push(s, b, (uint32_t)(uintptr_t)b[1]);
        b = next;
    }
}

/* A new chunk for the bump pointer: 0, or -1 when out of memory. */
static int new_chunk(struct fut__slab *s)
{
    void *raw = fut__alloc(CHUNK_BYTES + FUT__SLAB_LINE);
    if (!raw)
        return -1;
    struct fut__slab_chunk *c =
        (struct fut__slab_chunk *)(((uintptr_t)raw + FUT__SLAB_LINE - 1) &
                                   ~(uintptr_t)(FUT__SLAB_LINE - 1));
    c->raw = raw;
    c->next = s->chunks;
    s->chunks = c;
    s->bump = (char *)c + FUT__SLAB_LINE; /* the header takes one line */
    s->bump_left = CHUNK_BYTES - FUT__SLAB_LINE;
    return 0;
}

static void *carve(struct fut__slab *s, size_t bytes)
{
    /* Blocks of 16-multiple sizes start 16-aligned (see slab.h); the 8
     * bytes skipped at most are lost until the chunk is freed. */
    if (bytes % 16 == 0 && ((uintptr_t)s->bump & 15) && s->bump_left >= 8) {
        s->bump += 8;
        s->bump_left -= 8;
    }
    if (s->bump_left < bytes && new_chunk(s) != 0)
        return NULL;
    void *p = s->bump;
    s->bump += bytes;
    s->bump_left -= bytes;
    return p;
}

void *fut__slab_refill(struct fut__slab *s, uint32_t c, size_t bytes)
{
    if (fut__load(&s->remote, FUT__RELAXED)) {
        drain(s);
        void **b = s->free[c];
        if (b) {
            s->free[c] = b[0];
            return b;
        }
    }
    return carve(s, bytes);
}

void *fut__slab_alloc(struct fut__slab *s, size_t size, uint32_t *cls)
{
    if (size < 2 * sizeof(void *))
        size = 2 * sizeof(void *); /* room for the remote-free link */
    uint32_t c = (uint32_t)((size + FUT__SLAB_GRAIN - 1) / FUT__SLAB_GRAIN);
    if (c > FUT__SLAB_CLASSES) {
        *cls = 0;
        return fut__alloc(size);
    }
    *cls = c;
    return fut__slab_pop(s, c, (size_t)c * FUT__SLAB_GRAIN);
}

void fut__slab_free_local(struct fut__slab *s, void *p, uint32_t cls,
                          size_t size)
{
    if (cls == 0)
        fut__free(p, size);
    else
        fut__slab_push(s, p, cls);
}

void fut__slab_free_remote(struct fut__slab *s, void *p, uint32_t cls,
                           size_t size)
{
    if (cls == 0)
        fut__free(p, size);
    else
        fut__slab_push_remote(s, p, cls);
}
