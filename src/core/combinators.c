/* SPDX-License-Identifier: MIT */
/* Combinators: join, select, map, then (C14). See fut/combinators.h.
 *
 * Nothing here is shared between threads: a combinator is polled and
 * dropped by one thread at a time, like any future, so its fields are
 * plain. The only per-thread state is the xorshift that picks select's
 * first branch. Each poll function is itself idempotent after READY (it
 * never re-runs a child, a callback or a drop), on top of the C8 rule
 * fut_poll enforces for every future.
 *
 * Join and select keep their children as an array of pointers; the
 * fixed-size variants embed the array, so one set of helpers serves both
 * (and a copy of a join2 before its first poll still works: the helpers
 * are handed the array of the struct being polled, never a pointer into
 * another copy).
 */
#include "fut/combinators.h"
#include "internal.h"
#include "platform/simrng.h"

/* ------------------------------------------------------------ helpers */

/* Lists the children that are not dropped yet (what a task dump should
 * show): fills up to 'max' of them and returns how many there are. */
static size_t list_live(struct fut_future **v, size_t n,
                        struct fut_future **out, size_t max)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] == NULL || (v[i]->flags & FUT_F_DROPPED))
            continue;
        if (k < max)
            out[k] = v[i];
        k++;
    }
    return k;
}

static void drop_all(struct fut_future **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fut_drop(v[i]); /* idempotent: children dropped already are kept */
}

/* ------------------------------------------------------------------ join */

/* Polls every child not READY yet; returns how many are still pending. */
static size_t join_step(struct fut_future **v, size_t n,
                        struct fut_context *cx)
{
    size_t pending = 0;
    for (size_t i = 0; i < n; i++) {
        if (fut_is_ready(v[i]))
            continue;
        if (fut_poll(v[i], cx) == FUT_PENDING)
            pending++;
    }
    return pending;
}

static int join2_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_join2 *j = (struct fut_join2 *)f;
    return join_step(j->child, 2, cx) ? FUT_PENDING : FUT_READY;
}

static void join2_drop(struct fut_future *f)
{
    drop_all(((struct fut_join2 *)f)->child, 2);
}

static size_t join2_children(struct fut_future *f, struct fut_future **out,
                             size_t max)
{
    return list_live(((struct fut_join2 *)f)->child, 2, out, max);
}

static const struct fut_future_vtable join2_vt = {join2_poll, join2_drop,
                                                  "join2", join2_children};

void fut_join2_init(struct fut_join2 *j, struct fut_future *a,
                    struct fut_future *b)
{
    FUT_ARG_VOID(j, "'j' is NULL");
    FUT_ARG_VOID(a, "'a' is NULL");
    FUT_ARG_VOID(b, "'b' is NULL");
    FUT_CHECK(a != NULL && b != NULL);
    fut_future_init(&j->base, &join2_vt);
    j->child[0] = a;
    j->child[1] = b;
}

static int join_all_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_join_all *j = (struct fut_join_all *)f;
    j->pending = join_step(j->children, j->n, cx);
    return j->pending ? FUT_PENDING : FUT_READY;
}

static void join_all_drop(struct fut_future *f)
{
    struct fut_join_all *j = (struct fut_join_all *)f;
    drop_all(j->children, j->n);
}

static size_t join_all_children(struct fut_future *f, struct fut_future **out,
                                size_t max)
{
    struct fut_join_all *j = (struct fut_join_all *)f;
    return list_live(j->children, j->n, out, max);
}

static const struct fut_future_vtable join_all_vt = {
    join_all_poll, join_all_drop, "join_all", join_all_children};

void fut_join_all_init(struct fut_join_all *j, struct fut_future **children,
                       size_t n)
{
    FUT_ARG_VOID(j, "'j' is NULL");
    FUT_CHECK(n == 0 || children != NULL);
    for (size_t i = 0; i < n; i++)
        FUT_CHECK(children[i] != NULL);
    fut_future_init(&j->base, &join_all_vt);
    j->children = children;
    j->n = n;
    j->pending = n;
}

/* ---------------------------------------------------------------- select */

/* Per-thread xorshift32 (Marsaglia): three shifts and xors per poll are
 * all the fairness select needs; a shared generator would be a contended
 * cache line. Seeded from the address of a stack variable (distinct per
 * thread) and the clock, through splitmix64's finaliser, never 0. (Not
 * the address of 'rng_state' itself: gcc folds &tls + constant into a
 * 32-bit TLS relocation that fails to link in the shared library.)
 * Under a simulation runtime (fut/sim.h) the simulation's seeded
 * generator is used instead. */
static _Thread_local uint32_t rng_state;

static uint32_t rng_seed(void)
{
    int here;
    uint64_t z = ((uint64_t)(uintptr_t)&here ^ (uint64_t)fut_now_ns()) +
                 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (uint32_t)z | 1u;
}

/* A uniform index in [0, n) (Lemire's multiply-shift, no division). */
static size_t rng_below(size_t n)
{
    if (fut__tls_simrng) /* a simulation runs here: its seed decides */
        return (size_t)fut__simrng_below(fut__tls_simrng, n);
    uint32_t x = rng_state;
    if (FUT_UNLIKELY(x == 0))
        x = rng_seed();
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    rng_state = x;
    return (size_t)(((uint64_t)x * (uint64_t)n) >> 32);
}

/* One select poll over 'v': polls the branches from the start the order
 * picks, stops at the first READY one, records it and drops every other
 * branch before returning (C14). */
static int select_step(struct fut_future **v, size_t n, int order,
                       int *winner, struct fut_context *cx)
{
    if (*winner >= 0 || n == 0)
        return FUT_READY; /* decided already (or nothing to wait for) */
    size_t start = order == FUT_SELECT_BIASED ? 0 : rng_below(n);
    for (size_t i = 0; i < n; i++) {
        size_t k = start + i < n ? start + i : start + i - n;
        if (fut_poll(v[k], cx) == FUT_PENDING)
            continue;
        *winner = (int)k;
        for (size_t j = 0; j < n; j++)
            if (j != k)
                fut_drop(v[j]);
        return FUT_READY;
    }
    return FUT_PENDING;
}

static int select2_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_select2 *s = (struct fut_select2 *)f;
    return select_step(s->branch, 2, s->order, &s->winner, cx);
}

static void select2_drop(struct fut_future *f)
{
    drop_all(((struct fut_select2 *)f)->branch, 2);
}

static size_t select2_children(struct fut_future *f, struct fut_future **out,
                               size_t max)
{
    return list_live(((struct fut_select2 *)f)->branch, 2, out, max);
}

static const struct fut_future_vtable select2_vt = {
    select2_poll, select2_drop, "select2", select2_children};

void fut_select2_init(struct fut_select2 *s, struct fut_future *a,
                      struct fut_future *b, int order)
{
    FUT_ARG_VOID(s, "'s' is NULL");
    FUT_ARG_VOID(a, "'a' is NULL");
    FUT_ARG_VOID(b, "'b' is NULL");
    FUT_CHECK(a != NULL && b != NULL);
    FUT_CHECK(order == FUT_SELECT_FAIR || order == FUT_SELECT_BIASED);
    fut_future_init(&s->base, &select2_vt);
    s->branch[0] = a;
    s->branch[1] = b;
    s->order = order;
    s->winner = -1;
}

static int select_all_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_select_all *s = (struct fut_select_all *)f;
    return select_step(s->branches, s->n, s->order, &s->winner, cx);
}

static void select_all_drop(struct fut_future *f)
{
    struct fut_select_all *s = (struct fut_select_all *)f;
    drop_all(s->branches, s->n);
}

static size_t select_all_children(struct fut_future *f,
                                  struct fut_future **out, size_t max)
{
    struct fut_select_all *s = (struct fut_select_all *)f;
    return list_live(s->branches, s->n, out, max);
}

static const struct fut_future_vtable select_all_vt = {
    select_all_poll, select_all_drop, "select_all", select_all_children};

void fut_select_all_init(struct fut_select_all *s,
                         struct fut_future **branches, size_t n, int order)
{
    FUT_ARG_VOID(s, "'s' is NULL");
    FUT_CHECK(n == 0 || branches != NULL);
    FUT_CHECK(n <= (size_t)INT32_MAX);
    FUT_CHECK(order == FUT_SELECT_FAIR || order == FUT_SELECT_BIASED);
    for (size_t i = 0; i < n; i++)
        FUT_CHECK(branches[i] != NULL);
    fut_future_init(&s->base, &select_all_vt);
    s->branches = branches;
    s->n = n;
    s->order = order;
    s->winner = -1;
}

/* ------------------------------------------------------------------- map */

static int map_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_map *m = (struct fut_map *)f;
    if (m->done)
        return FUT_READY;
    if (fut_poll(m->inner, cx) == FUT_PENDING)
        return FUT_PENDING;
    m->value = m->fn(m->inner, m->ud);
    m->done = 1;
    return FUT_READY;
}

static void map_drop(struct fut_future *f)
{
    fut_drop(((struct fut_map *)f)->inner);
}

static size_t map_children(struct fut_future *f, struct fut_future **out,
                           size_t max)
{
    return list_live(&((struct fut_map *)f)->inner, 1, out, max);
}

static const struct fut_future_vtable map_vt = {map_poll, map_drop, "map",
                                                map_children};

void fut_map_init(struct fut_map *m, struct fut_future *inner, fut_map_fn fn,
                  void *ud)
{
    FUT_ARG_VOID(m, "'m' is NULL");
    FUT_ARG_VOID(inner, "'inner' is NULL");
    FUT_ARG_VOID(fn, "'fn' is NULL");
    FUT_CHECK(inner != NULL && fn != NULL);
    fut_future_init(&m->base, &map_vt);
    m->inner = inner;
    m->fn = fn;
    m->ud = ud;
    m->done = 0;
    m->value = 0;
}

/* ------------------------------------------------------------------ then */

enum { THEN_FIRST = 0, THEN_SECOND = 1, THEN_DONE = 2 };

static int then_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fut_then *t = (struct fut_then *)f;
    if (t->stage == THEN_FIRST) {
        if (fut_poll(t->first, cx) == FUT_PENDING)
            return FUT_PENDING;
        /* fn first (it may read what the drop releases, e.g. a join
         * handle's task output), then release the first future. */
        t->second = t->fn(t->first, t->ud);
        fut_drop(t->first);
        t->stage = t->second ? THEN_SECOND : THEN_DONE;
    }
    if (t->stage == THEN_SECOND) {
        if (fut_poll(t->second, cx) == FUT_PENDING)
            return FUT_PENDING;
        t->stage = THEN_DONE;
    }
    return FUT_READY;
}

static void then_drop(struct fut_future *f)
{
    struct fut_then *t = (struct fut_then *)f;
    fut_drop(t->first);
    if (t->second)
        fut_drop(t->second);
}

static size_t then_children(struct fut_future *f, struct fut_future **out,
                            size_t max)
{
    struct fut_then *t = (struct fut_then *)f;
    struct fut_future *v[2] = {t->first, t->second};
    return list_live(v, 2, out, max);
}

static const struct fut_future_vtable then_vt = {then_poll, then_drop, "then",
                                                 then_children};

void fut_then_init(struct fut_then *t, struct fut_future *first,
                   fut_then_fn fn, void *ud)
{
    FUT_ARG_VOID(t, "'t' is NULL");
    FUT_ARG_VOID(first, "'first' is NULL");
    FUT_ARG_VOID(fn, "'fn' is NULL");
    FUT_CHECK(first != NULL && fn != NULL);
    fut_future_init(&t->base, &then_vt);
    t->first = first;
    t->fn = fn;
    t->ud = ud;
    t->second = NULL;
    t->stage = THEN_FIRST;
}
