/* Task memory (multi.h's struct tslab): the slow half of a worker's slab
 * of cache-line blocks - chunks, the bump pointer and the blocks other
 * threads freed. The fast half (a free-list pop or push) is inline in
 * tslab.h. */
#include <string.h>

#include "rt/multi/multi.h"

void fut__ts_init(struct tslab *s)
{
    memset(s->free, 0, sizeof s->free);
    fut__aword_init(&s->remote, 0);
    s->chunks = NULL;
    s->bump = NULL;
    s->left = 0;
}

void fut__ts_fini(struct tslab *s)
{
    struct ts_chunk *c = s->chunks;
    while (c) {
        struct ts_chunk *next = c->next;
        fut__free(c->raw, TS_CHUNK + TS_LINE);
        c = next;
    }
    s->chunks = NULL;
}

/* Owner: moves the blocks freed elsewhere to the free lists. */
static void ts_drain(struct tslab *s)
{
    /* Acquire: pairs with ts_free_remote's release CAS. */
    void **b = (void **)fut__swap(&s->remote, 0, FUT__ACQUIRE);
    while (b) {
        void **next = (void **)b[0];
        uint32_t cls = (uint32_t)(uintptr_t)b[1];
        b[0] = s->free[cls];
        s->free[cls] = b;
        b = next;
    }
}

/* Owner: the free list of class 'c' was empty (ts_alloc). */
void *fut__ts_refill(struct tslab *s, uint32_t c)
{
    if (fut__load(&s->remote, FUT__RELAXED)) {
        ts_drain(s);
        void **b = s->free[c];
        if (b) {
            s->free[c] = b[0];
            return b;
        }
    }
    size_t need = (size_t)c * TS_LINE;
    if (s->left < need) {
        void *raw = fut__alloc(TS_CHUNK + TS_LINE);
        if (!raw)
            return NULL;
        struct ts_chunk *ch =
            (struct ts_chunk *)(((uintptr_t)raw + TS_LINE - 1) &
                                ~(uintptr_t)(TS_LINE - 1));
        ch->raw = raw;
        ch->next = s->chunks;
        s->chunks = ch;
        s->bump = (char *)ch + TS_LINE; /* the header takes one line */
        s->left = TS_CHUNK - TS_LINE;
    }
    void *p = s->bump;
    s->bump += need;
    s->left -= need;
    return p;
}
