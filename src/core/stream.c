/* SPDX-License-Identifier: MIT */
/* Streams (C15): the array source, the map/filter/take adaptors and the
 * fold/for_each/collect consumers. See fut/stream.h.
 *
 * Like the combinators, nothing here is shared between threads (one
 * poller at a time), so every field is plain. Two rules hold throughout:
 *   - an adaptor only ever reaches its inner stream through
 *     fut_stream_poll_next / fut_stream_drop, so END stays END and a
 *     drop cascades exactly once however the outer stream is used;
 *   - a consumer's poll is idempotent after READY on its own ('done'),
 *     on top of fut_poll's C8 rule.
 */
#include <string.h>

#include "fut/stream.h"
#include "internal.h"

/* The buffer one inner item is pulled into: the caller's scratch, or the
 * inline one (checked at init to be large enough). */
static void *scratch_of(void *scratch, union fut_stream_item_buf *buf)
{
    return scratch ? scratch : (void *)buf->bytes;
}

static void check_scratch(const struct fut_stream *s, const void *scratch)
{
    /* An item larger than the inline buffer needs caller scratch. */
    FUT_CHECK(scratch != NULL || s->item_size <= FUT_STREAM_INLINE_ITEM);
}

/* ----------------------------------------------------------------- array */

static int array_poll_next(struct fut_stream *s, struct fut_context *cx,
                           void *item)
{
    struct fut_stream_array *a = (struct fut_stream_array *)s;
    if (a->next == a->n)
        return FUT_STREAM_END;
    /* A leaf that is ready: spend one unit of the task's budget first. */
    if (!fut_coop_proceed(cx))
        return FUT_PENDING;
    memcpy(item, a->items + a->next * s->item_size, s->item_size);
    a->next++;
    return FUT_STREAM_ITEM;
}

static const struct fut_stream_vtable array_vt = {array_poll_next, NULL,
                                                  "stream_array"};

void fut_stream_array_init(struct fut_stream_array *s, const void *items,
                           size_t n, size_t item_size)
{
    FUT_ARG_VOID(s, "'s' is NULL");
    FUT_CHECK(n == 0 || items != NULL);
    fut_stream_init(&s->base, &array_vt, item_size);
    s->items = items;
    s->n = n;
    s->next = 0;
}

/* ------------------------------------------------------------------- map */

static int map_poll_next(struct fut_stream *s, struct fut_context *cx,
                         void *item)
{
    struct fut_stream_map *m = (struct fut_stream_map *)s;
    void *in = scratch_of(m->scratch, &m->buf);
    int r = fut_stream_poll_next(m->inner, cx, in);
    if (r == FUT_STREAM_ITEM)
        m->fn(in, item, m->ud);
    return r;
}

static void map_drop(struct fut_stream *s)
{
    fut_stream_drop(((struct fut_stream_map *)s)->inner);
}

static const struct fut_stream_vtable map_vt = {map_poll_next, map_drop,
                                                "stream_map"};

void fut_stream_map_init(struct fut_stream_map *m, struct fut_stream *inner,
                         size_t item_size, fut_stream_map_fn fn, void *ud,
                         void *scratch)
{
    FUT_ARG_VOID(m, "'m' is NULL");
    FUT_ARG_VOID(inner, "'inner' is NULL");
    FUT_ARG_VOID(fn, "'fn' is NULL");
    FUT_CHECK(inner != NULL && fn != NULL);
    check_scratch(inner, scratch);
    fut_stream_init(&m->base, &map_vt, item_size);
    m->inner = inner;
    m->fn = fn;
    m->ud = ud;
    m->scratch = scratch;
}

/* ---------------------------------------------------------------- filter */

static int filter_poll_next(struct fut_stream *s, struct fut_context *cx,
                            void *item)
{
    struct fut_stream_filter *fl = (struct fut_stream_filter *)s;
    /* Bounded by the inner stream: it ends, pends, or (a leaf source)
     * runs out of coop budget and pends. */
    for (;;) {
        int r = fut_stream_poll_next(fl->inner, cx, item);
        if (r != FUT_STREAM_ITEM || fl->pred(item, fl->ud))
            return r;
    }
}

static void filter_drop(struct fut_stream *s)
{
    fut_stream_drop(((struct fut_stream_filter *)s)->inner);
}

static const struct fut_stream_vtable filter_vt = {
    filter_poll_next, filter_drop, "stream_filter"};

void fut_stream_filter_init(struct fut_stream_filter *fl,
                            struct fut_stream *inner, fut_stream_pred_fn pred,
                            void *ud)
{
    FUT_ARG_VOID(fl, "'fl' is NULL");
    FUT_ARG_VOID(inner, "'inner' is NULL");
    FUT_ARG_VOID(pred, "'pred' is NULL");
    FUT_CHECK(inner != NULL && pred != NULL);
    fut_stream_init(&fl->base, &filter_vt, inner->item_size);
    fl->inner = inner;
    fl->pred = pred;
    fl->ud = ud;
}

/* ------------------------------------------------------------------ take */

static int take_poll_next(struct fut_stream *s, struct fut_context *cx,
                          void *item)
{
    struct fut_stream_take *t = (struct fut_stream_take *)s;
    if (t->left == 0)
        return FUT_STREAM_END;
    int r = fut_stream_poll_next(t->inner, cx, item);
    if (r == FUT_STREAM_ITEM)
        t->left--;
    return r;
}

static void take_drop(struct fut_stream *s)
{
    fut_stream_drop(((struct fut_stream_take *)s)->inner);
}

static const struct fut_stream_vtable take_vt = {take_poll_next, take_drop,
                                                 "stream_take"};

void fut_stream_take_init(struct fut_stream_take *t, struct fut_stream *inner,
                          size_t n)
{
    FUT_ARG_VOID(t, "'t' is NULL");
    FUT_ARG_VOID(inner || !n, "'inner' is NULL");
    FUT_CHECK(inner != NULL);
    fut_stream_init(&t->base, &take_vt, inner->item_size);
    t->inner = inner;
    t->left = n;
}

/* ------------------------------------------------------------------ fold */

static int fold_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_stream_fold *fo = (struct fut_stream_fold *)f;
    void *item = scratch_of(fo->scratch, &fo->buf);
    while (!fo->done) {
        int r = fut_stream_poll_next(fo->s, cx, item);
        if (r == FUT_PENDING)
            return FUT_PENDING;
        if (r == FUT_STREAM_END)
            fo->done = 1;
        else
            fo->acc = fo->fn(fo->acc, item, fo->ud);
    }
    return FUT_READY;
}

static void fold_drop(struct fut_future *f)
{
    fut_stream_drop(((struct fut_stream_fold *)f)->s);
}

static const struct fut_future_vtable fold_vt = {fold_poll, fold_drop,
                                                 "stream_fold", NULL};

void fut_stream_fold_init(struct fut_stream_fold *f, struct fut_stream *s,
                          intptr_t init, fut_stream_fold_fn fn, void *ud,
                          void *scratch)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(s, "'s' is NULL");
    FUT_ARG_VOID(fn, "'fn' is NULL");
    FUT_CHECK(s != NULL && fn != NULL);
    check_scratch(s, scratch);
    fut_future_init(&f->base, &fold_vt);
    f->s = s;
    f->fn = fn;
    f->ud = ud;
    f->scratch = scratch;
    f->done = 0;
    f->acc = init;
}

/* -------------------------------------------------------------- for_each */

static int for_each_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_stream_for_each *fe = (struct fut_stream_for_each *)f;
    void *item = scratch_of(fe->scratch, &fe->buf);
    while (!fe->done) {
        int r = fut_stream_poll_next(fe->s, cx, item);
        if (r == FUT_PENDING)
            return FUT_PENDING;
        if (r == FUT_STREAM_END) {
            fe->done = 1;
            break;
        }
        fe->count++;
        int stop = fe->fn(item, fe->ud);
        if (stop) {
            fe->result = stop;
            fe->done = 1;
        }
    }
    return FUT_READY;
}

static void for_each_drop(struct fut_future *f)
{
    fut_stream_drop(((struct fut_stream_for_each *)f)->s);
}

static const struct fut_future_vtable for_each_vt = {
    for_each_poll, for_each_drop, "stream_for_each", NULL};

void fut_stream_for_each_init(struct fut_stream_for_each *f,
                              struct fut_stream *s, fut_stream_each_fn fn,
                              void *ud, void *scratch)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(s, "'s' is NULL");
    FUT_ARG_VOID(fn, "'fn' is NULL");
    FUT_CHECK(s != NULL && fn != NULL);
    check_scratch(s, scratch);
    fut_future_init(&f->base, &for_each_vt);
    f->s = s;
    f->fn = fn;
    f->ud = ud;
    f->scratch = scratch;
    f->done = 0;
    f->result = 0;
    f->count = 0;
}

/* --------------------------------------------------------------- collect */

#define COLLECT_FIRST_CAP 8 /* items; then the capacity doubles */

static void collect_free_items(struct fut_stream_collect *c)
{
    if (c->items)
        fut__free(c->items, c->cap * c->item_size);
    c->items = NULL;
    c->cap = 0;
    c->len = 0;
}

/* Makes room for one more item; 0 or FUT_ENOMEM (the old buffer is then
 * still there: the caller frees it). Allocate-copy-free rather than a
 * resize, because the hook's resize path cannot be failed separately. */
static int collect_reserve(struct fut_stream_collect *c)
{
    if (c->len < c->cap)
        return 0;
    size_t isz = c->item_size;
    size_t ncap = c->cap ? c->cap * 2 : COLLECT_FIRST_CAP;
    if (ncap < c->cap || ncap > SIZE_MAX / isz)
        return FUT_ENOMEM;
    void *n = fut__alloc(ncap * isz);
    if (!n)
        return FUT_ENOMEM;
    if (c->items) {
        memcpy(n, c->items, c->len * isz);
        fut__free(c->items, c->cap * isz);
    }
    c->items = n;
    c->cap = ncap;
    return 0;
}

/* The allocation failed: free everything, complete with FUT_ENOMEM. */
static void collect_fail(struct fut_stream_collect *c)
{
    collect_free_items(c);
    c->result = FUT_ENOMEM;
    c->done = 1;
}

static int collect_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_stream_collect *c = (struct fut_stream_collect *)f;
    size_t isz = c->item_size;
    while (!c->done) {
        /* Pull straight into the buffer when it has room; otherwise into
         * the inline slot, and grow only once an item is really there
         * (items too big for the slot: grow first). */
        if (isz > FUT_STREAM_INLINE_ITEM && collect_reserve(c) != 0) {
            collect_fail(c);
            break;
        }
        int direct = c->len < c->cap;
        void *dst =
            direct ? (char *)c->items + c->len * isz : (void *)c->buf.bytes;
        int r = fut_stream_poll_next(c->s, cx, dst);
        if (r == FUT_PENDING)
            return FUT_PENDING;
        if (r == FUT_STREAM_END) {
            if (c->len == 0)
                collect_free_items(c); /* promised: NULL when empty */
            c->result = 0;
            c->done = 1;
            break;
        }
        if (!direct) {
            if (collect_reserve(c) != 0) {
                collect_fail(c); /* the pulled item goes with the rest */
                break;
            }
            memcpy((char *)c->items + c->len * isz, c->buf.bytes, isz);
        }
        c->len++;
    }
    return FUT_READY;
}

static void collect_drop(struct fut_future *f)
{
    struct fut_stream_collect *c = (struct fut_stream_collect *)f;
    /* Before READY the partial buffer is ours; after, the caller's. */
    if (!c->done)
        collect_free_items(c);
    fut_stream_drop(c->s);
}

static const struct fut_future_vtable collect_vt = {
    collect_poll, collect_drop, "stream_collect", NULL};

void fut_stream_collect_init(struct fut_stream_collect *c,
                             struct fut_stream *s)
{
    FUT_ARG_VOID(c, "'c' is NULL");
    FUT_ARG_VOID(s, "'s' is NULL");
    FUT_CHECK(s != NULL);
    fut_future_init(&c->base, &collect_vt);
    c->s = s;
    c->item_size = s->item_size;
    c->cap = 0;
    c->done = 0;
    c->result = 0;
    c->items = NULL;
    c->len = 0;
}

void fut_stream_collect_release(struct fut_stream_collect *c)
{
    FUT_ARG_VOID(c, "'c' is NULL");
    collect_free_items(c);
}
