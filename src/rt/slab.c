/* Task memory cache; see slab.h. A freed block stores its free-list link
 * in its first word and, while on the remote stack, its class in the
 * second. */
#include "rt/slab.h"

#define CHUNK_BYTES (64 * 1024)

struct chunk {
    struct chunk *next;
    /* blocks follow, 16-byte aligned */
};
#define CHUNK_HDR ((sizeof(struct chunk) + 15) & ~(size_t)15)

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
    struct chunk *c = s->chunks;
    while (c) {
        struct chunk *next = c->next;
        fut__free(c, CHUNK_BYTES);
        c = next;
    }
    s->chunks = NULL;
}

/* Moves blocks freed on other threads to the owner's lists. */
static void drain_remote(struct fut__slab *s)
{
    /* Acquire: pairs with the pushers' release CAS. */
    void **b = (void **)fut__swap(&s->remote, 0, FUT__ACQUIRE);
    while (b) {
        void **next = (void **)b[0];
        uint32_t cls = (uint32_t)(uintptr_t)b[1];
        b[0] = s->free[cls];
        s->free[cls] = b;
        b = next;
    }
}

static void *carve(struct fut__slab *s, size_t bytes)
{
    /* Blocks of 16-multiple sizes start 16-aligned (see slab.h); the 8
     * bytes skipped at most are lost until the chunk is freed. */
    if (bytes % 16 == 0 && ((uintptr_t)s->bump & 15) && s->bump_left >= 8) {
        s->bump += 8;
        s->bump_left -= 8;
    }
    if (s->bump_left < bytes) {
        struct chunk *c = fut__alloc(CHUNK_BYTES);
        if (!c)
            return NULL;
        c->next = s->chunks;
        s->chunks = c;
        s->bump = (char *)c + CHUNK_HDR;
        s->bump_left = CHUNK_BYTES - CHUNK_HDR;
    }
    void *p = s->bump;
    s->bump += bytes;
    s->bump_left -= bytes;
    return p;
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
    void **b = s->free[c];
    if (FUT_LIKELY(b != NULL)) {
        s->free[c] = b[0];
        return b;
    }
    if (fut__load(&s->remote, FUT__RELAXED)) {
        drain_remote(s);
        if ((b = s->free[c]) != NULL) {
            s->free[c] = b[0];
            return b;
        }
    }
    return carve(s, (size_t)c * FUT__SLAB_GRAIN);
}

void fut__slab_free_local(struct fut__slab *s, void *p, uint32_t cls,
                          size_t size)
{
    if (cls == 0) {
        fut__free(p, size);
        return;
    }
    void **b = p;
    b[0] = s->free[cls];
    s->free[cls] = b;
}

void fut__slab_free_remote(struct fut__slab *s, void *p, uint32_t cls,
                           size_t size)
{
    if (cls == 0) {
        fut__free(p, size);
        return;
    }
    void **b = p;
    b[1] = (void *)(uintptr_t)cls;
    uintptr_t head = fut__load(&s->remote, FUT__RELAXED);
    do {
        b[0] = (void *)head;
        /* Release: the block's link and class before it is visible. The
         * owner takes the whole stack with one swap, so no ABA. */
    } while (!fut__cas_weak(&s->remote, &head, (uintptr_t)b, FUT__RELEASE,
                            FUT__RELAXED));
}
