/* SPDX-License-Identifier: MIT */
/* The multi-thread runtime (C10, the cross-thread half of C11): spawn
 * from workers and foreign threads, join, block_on from several threads,
 * the task state word under cross-thread wake / abort, thread-affine
 * tasks, shutdown, metrics, the drop-at-every-PENDING harness and the
 * fail-the-Nth-allocation loop on this runtime. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "test.h"

/* ---------------------------------------------------------- helpers */

static int no_driver; /* park on futexes only (no I/O driver) */

static struct fut_runtime *mt_rt(int workers)
{
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    cfg.flavor = FUT_RT_MULTI_THREAD;
    cfg.workers = workers;
    cfg.no_driver = no_driver;
    cfg.slow_poll_ns = -1; /* some tests poll for long on purpose */
    struct fut_runtime *rt = NULL;
    int r = fut_runtime_new(&cfg, &rt);
    ck_assert_msg(r == 0, "fut_runtime_new: %s", fut_strerror(r));
    return rt;
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* Waits (bounded: 10 s) until '*v' >= 'want'. */
static int wait_ge(atomic_long *v, long want)
{
    for (int i = 0; i < 100000; i++) {
        if (atomic_load(v) >= want)
            return 1;
        sleep_us(100);
    }
    return 0;
}

/* A waker slot shared between a future and other threads. */
struct wslot {
    pthread_mutex_t mu;
    struct fut_waker w;
};

static void wslot_init(struct wslot *s)
{
    pthread_mutex_init(&s->mu, NULL);
    s->w.vt = NULL;
    s->w.data = NULL;
}

static void wslot_set(struct wslot *s, const struct fut_waker *w)
{
    pthread_mutex_lock(&s->mu);
    fut_waker_set(&s->w, w);
    pthread_mutex_unlock(&s->mu);
}

static void wslot_clear(struct wslot *s)
{
    pthread_mutex_lock(&s->mu);
    fut_waker_drop(&s->w);
    pthread_mutex_unlock(&s->mu);
}

static int wslot_has(struct wslot *s)
{
    pthread_mutex_lock(&s->mu);
    int had = fut_waker_is_set(&s->w);
    pthread_mutex_unlock(&s->mu);
    return had;
}

static int wslot_wake(struct wslot *s)
{
    pthread_mutex_lock(&s->mu);
    int had = fut_waker_is_set(&s->w);
    if (had)
        fut_waker_wake_by_ref(&s->w);
    pthread_mutex_unlock(&s->mu);
    return had;
}

/* --------------------------------------------------- a probe future */

/* PENDING (waker in 'slot') until 'ready' is set or 'left' polls are
 * used up; while 'hold' is set, a poll spins (a long synchronous poll).
 * Counts polls and drops, records the threads. */
struct probe_shared {
    struct wslot slot;
    atomic_int hold;    /* spin inside poll while set */
    atomic_int in_poll; /* a poll is running */
    atomic_int ready;   /* complete at the next poll */
    atomic_long polls;
    atomic_long drops;
    atomic_long overlap;    /* polls that found another poll running */
    atomic_long after_drop; /* polls after the drop */
    pthread_t poll_thread, drop_thread;
};

struct probe {
    struct fut_future base;
    struct probe_shared *sh;
    intptr_t value; /* output */
};

static int probe_poll(struct fut_future *f, struct fut_context *cx)
{
    struct probe *p = (struct probe *)f;
    struct probe_shared *sh = p->sh;
    if (atomic_fetch_add(&sh->in_poll, 1) != 0)
        atomic_fetch_add(&sh->overlap, 1);
    if (atomic_load(&sh->drops))
        atomic_fetch_add(&sh->after_drop, 1);
    sh->poll_thread = pthread_self();
    atomic_fetch_add(&sh->polls, 1);
    for (int i = 0; atomic_load(&sh->hold) && i < 1000000; i++)
        sleep_us(10);
    int r = FUT_PENDING;
    if (atomic_load(&sh->ready)) {
        p->value = 42;
        r = FUT_READY;
    } else {
        wslot_set(&sh->slot, &cx->waker);
    }
    atomic_fetch_sub(&sh->in_poll, 1);
    return r;
}

static void probe_drop(struct fut_future *f)
{
    struct probe *p = (struct probe *)f;
    wslot_clear(&p->sh->slot);
    p->sh->drop_thread = pthread_self();
    atomic_fetch_add(&p->sh->drops, 1);
}

static const struct fut_future_vtable probe_vt = {probe_poll, probe_drop,
                                                  "probe", NULL};

static void probe_shared_init(struct probe_shared *sh)
{
    memset(sh, 0, sizeof *sh);
    wslot_init(&sh->slot);
}

static void probe_init(struct probe *p, struct probe_shared *sh)
{
    fut_future_init(&p->base, &probe_vt);
    p->sh = sh;
    p->value = 0;
}

static struct fut_join spawn_probe(struct fut_runtime *rt,
                                   struct probe_shared *sh)
{
    struct probe p;
    probe_init(&p, sh);
    struct fut_join j;
    ASSERT_EQ(fut_spawn(rt, &p, sizeof p, &j), 0);
    return j;
}

/* ----------------------------------------------- spawn from workers */

/* A task that spawns 'n' children from its worker (fut_spawn(NULL)),
 * then awaits them one by one and sums their outputs. */
struct child {
    struct fut_future base;
    intptr_t value;
};

static int slow_children; /* a child's poll takes ~100 us */

static int child_poll(struct fut_future *f, struct fut_context *cx)
{
    (void)f;
    (void)cx;
    if (slow_children)
        sleep_us(100);
    return FUT_READY;
}

static const struct fut_future_vtable child_vt = {child_poll, NULL, "child",
                                                  NULL};

#define FAN 600 /* more than a ring (256): overflows to the global queue */

struct fan {
    struct fut_future base;
    struct fut_join joins[FAN];
    int spawned, next;
    intptr_t sum; /* output */
    int err;      /* first spawn error */
};

static int fan_poll(struct fut_future *f, struct fut_context *cx)
{
    struct fan *fa = (struct fan *)f;
    /* In batches, yielding in between: a poll that runs for a long time
     * (>= 1 ms) lets the other worker take the LIFO slot, and this test
     * wants the owner to run it too. */
    for (int batch = 0; fa->spawned < FAN; batch++) {
        if (batch == 50) {
            fut_waker_wake_by_ref(&cx->waker);
            return FUT_PENDING;
        }
        struct child c;
        fut_future_init(&c.base, &child_vt);
        c.value = fa->spawned;
        int r = fut_spawn(NULL, &c, sizeof c, &fa->joins[fa->spawned]);
        if (r) {
            fa->err = r;
            return FUT_READY;
        }
        fa->spawned++;
    }
    while (fa->next < FAN) {
        struct fut_join *j = &fa->joins[fa->next];
        if (fut_poll(&j->base, cx) == FUT_PENDING)
            return FUT_PENDING;
        if (j->result == 0)
            fa->sum += ((struct child *)fut_join_output(j))->value;
        fut_drop(&j->base);
        fa->next++;
    }
    return FUT_READY;
}

static void fan_drop(struct fut_future *f)
{
    struct fan *fa = (struct fan *)f;
    for (int i = fa->next; i < fa->spawned; i++)
        fut_drop(&fa->joins[i].base);
}

static const struct fut_future_vtable fan_vt = {fan_poll, fan_drop, "fan",
                                                NULL};

/* Worker spawns (LIFO slot, ring, overflow to the global queue, steals
 * by the other worker), joins across workers, outputs. */
static void spawn_from_workers_run(void)
{
    struct fut_runtime *rt = mt_rt(2);
    for (int round = 0; round < 20; round++) {
        struct fan fa;
        memset(&fa, 0, sizeof fa);
        fut_future_init(&fa.base, &fan_vt);
        struct fut_join j;
        ASSERT_EQ(fut_spawn(rt, &fa, sizeof fa, &j), 0);
        ASSERT_EQ(fut_block_on(rt, &j.base), 0);
        ASSERT_EQ(j.result, 0);
        struct fan *out = fut_join_output(&j);
        ASSERT_EQ(out->err, 0);
        ASSERT_EQ(out->sum, (intptr_t)FAN * (FAN - 1) / 2);
        fut_drop(&j.base);
    }
    struct fut_rt_stats st;
    fut_runtime_stats(rt, &st);
    ASSERT_EQ(st.spawned, 20 * (FAN + 1));
    ASSERT_TRUE(st.lifo_hits > 0);      /* children ran from the LIFO slot */
    ASSERT_TRUE(st.global_polls >= 20); /* the fan tasks came from there */
    fut_runtime_free(rt);
}

START_TEST(spawn_from_workers)
{
    spawn_from_workers_run(); /* workers park in the driver or a futex */
    no_driver = 1;
    spawn_from_workers_run(); /* futexes only */
    no_driver = 0;
}
END_TEST

/* --------------------------------------------- wakes and the state word */

/* C10: a wake while the task runs re-schedules it exactly once - 100
 * wakes from another thread during one poll give one more poll. */
START_TEST(wake_while_running)
{
    struct fut_runtime *rt = mt_rt(2);
    struct probe_shared sh;
    probe_shared_init(&sh);
    atomic_store(&sh.hold, 1);
    struct fut_join j = spawn_probe(rt, &sh);
    ASSERT_TRUE(wait_ge(&sh.polls, 1));
    /* Let the first poll end: it registers the waker we wake with. */
    atomic_store(&sh.hold, 0);
    for (int i = 0; i < 1000 && !wslot_has(&sh.slot); i++)
        sleep_us(1000);
    ASSERT_TRUE(wslot_has(&sh.slot));
    /* Second poll: hold it and wake it 100 times while it runs. */
    atomic_store(&sh.hold, 1);
    ASSERT_TRUE(wslot_wake(&sh.slot));
    ASSERT_TRUE(wait_ge(&sh.polls, 2));
    for (int i = 0; i < 100; i++)
        ASSERT_TRUE(wslot_wake(&sh.slot));
    atomic_store(&sh.hold, 0);
    ASSERT_TRUE(wait_ge(&sh.polls, 3));
    sleep_us(50000); /* a wrong fourth poll would come now */
    ASSERT_EQ(atomic_load(&sh.polls), 3);
    ASSERT_EQ(atomic_load(&sh.overlap), 0);
    atomic_store(&sh.ready, 1);
    ASSERT_TRUE(wslot_wake(&sh.slot));
    ASSERT_EQ(fut_block_on(rt, &j.base), 0);
    ASSERT_EQ(j.result, 0);
    ASSERT_EQ(((struct probe *)fut_join_output(&j))->value, 42);
    fut_drop(&j.base);
    ASSERT_EQ(atomic_load(&sh.drops), 1);
    fut_runtime_free(rt);
}
END_TEST

/* C11: abort from another thread drops an idle task at once - on the
 * aborting thread, before fut_join_abort returns. One worker, so that
 * "the worker parked after the poll" proves the task is idle. */
struct parks_probe {
    struct fut_future base;
    struct fut_runtime *rt;
    atomic_long *parks_at_poll;
    atomic_long *drops;
    pthread_t *drop_thread;
};

static int pp_poll(struct fut_future *f, struct fut_context *cx)
{
    struct parks_probe *p = (struct parks_probe *)f;
    struct fut_rt_stats st;
    fut_runtime_stats(p->rt, &st);
    atomic_store(p->parks_at_poll, (long)st.parks);
    (void)cx; /* never woken: only the abort ends it */
    return FUT_PENDING;
}

static void pp_drop(struct fut_future *f)
{
    struct parks_probe *p = (struct parks_probe *)f;
    *p->drop_thread = pthread_self();
    atomic_fetch_add(p->drops, 1);
}

static const struct fut_future_vtable pp_vt = {pp_poll, pp_drop,
                                               "parks_probe", NULL};

START_TEST(abort_idle_at_once)
{
    struct fut_runtime *rt = mt_rt(1);
    for (int round = 0; round < 20; round++) {
        atomic_long parks_at = -1, drops = 0;
        pthread_t dt;
        struct parks_probe p;
        fut_future_init(&p.base, &pp_vt);
        p.rt = rt;
        p.parks_at_poll = &parks_at;
        p.drops = &drops;
        p.drop_thread = &dt;
        struct fut_join j;
        ASSERT_EQ(fut_spawn(rt, &p, sizeof p, &j), 0);
        ASSERT_TRUE(wait_ge(&parks_at, 0));
        struct fut_rt_stats st;
        for (int i = 0; i < 100000; i++) {
            fut_runtime_stats(rt, &st);
            if ((long)st.parks > atomic_load(&parks_at))
                break;
            sleep_us(100);
        }
        ASSERT_TRUE((long)st.parks > atomic_load(&parks_at));
        fut_join_abort(&j);
        ASSERT_EQ(atomic_load(&drops), 1); /* at once */
        ASSERT_TRUE(pthread_equal(dt, pthread_self()));
        ASSERT_TRUE(fut_join_is_finished(&j));
        ASSERT_EQ(fut_block_on(rt, &j.base), 0);
        ASSERT_EQ(j.result, FUT_ECANCELED);
        fut_drop(&j.base);
    }
    fut_runtime_free(rt);
}
END_TEST

/* C11: a running task aborted from another thread is dropped right
 * after its current poll, by the thread polling it, and never polled
 * again. */
START_TEST(abort_running)
{
    struct fut_runtime *rt = mt_rt(2);
    struct probe_shared sh;
    probe_shared_init(&sh);
    atomic_store(&sh.hold, 1);
    struct fut_join j = spawn_probe(rt, &sh);
    ASSERT_TRUE(wait_ge(&sh.polls, 1));
    fut_join_abort(&j);
    sleep_us(20000);
    ASSERT_EQ(atomic_load(&sh.drops), 0); /* not while it runs */
    ASSERT_TRUE(!fut_join_is_finished(&j));
    atomic_store(&sh.hold, 0);
    ASSERT_EQ(fut_block_on(rt, &j.base), 0);
    ASSERT_EQ(j.result, FUT_ECANCELED);
    ASSERT_EQ(atomic_load(&sh.drops), 1);
    ASSERT_EQ(atomic_load(&sh.polls), 1);
    ASSERT_TRUE(pthread_equal(sh.drop_thread, sh.poll_thread));
    ASSERT_TRUE(!pthread_equal(sh.drop_thread, pthread_self()));
    fut_drop(&j.base);
    fut_runtime_free(rt);
}
END_TEST

/* Dropping the join handle of a pending task from a foreign thread
 * aborts it (at once: it is idle), and a detached task runs on. */
START_TEST(join_drop_and_detach)
{
    struct fut_runtime *rt = mt_rt(2);
    struct probe_shared a, b;
    probe_shared_init(&a);
    probe_shared_init(&b);
    struct fut_join ja = spawn_probe(rt, &a);
    struct fut_join jb = spawn_probe(rt, &b);
    ASSERT_TRUE(wait_ge(&a.polls, 1));
    ASSERT_TRUE(wait_ge(&b.polls, 1));
    fut_drop(&ja.base);
    ASSERT_TRUE(wait_ge(&a.drops, 1));
    fut_join_detach(&jb);
    atomic_store(&b.ready, 1);
    for (int i = 0; i < 1000 && !wslot_wake(&b.slot); i++)
        sleep_us(1000);
    ASSERT_TRUE(wait_ge(&b.drops, 1)); /* completed: its future dropped */
    ASSERT_EQ(atomic_load(&b.polls), 2);
    fut_drop(&jb.base); /* empty: nothing */
    fut_runtime_free(rt);
    ASSERT_EQ(atomic_load(&a.drops), 1);
    ASSERT_EQ(atomic_load(&b.drops), 1);
}
END_TEST

/* ----------------------------------------------- thread-affine tasks */

struct local_probe {
    struct fut_future base;
    struct wslot *slot;
    pthread_t *first;   /* thread of the first poll */
    atomic_long *moved; /* polls on another thread */
    atomic_long *polls;
    atomic_long *drops;
    atomic_long *dropped_elsewhere;
    atomic_int *done;
    int started;
};

static int lp_poll(struct fut_future *f, struct fut_context *cx)
{
    struct local_probe *p = (struct local_probe *)f;
    if (!p->started) {
        p->started = 1;
        *p->first = pthread_self();
    } else if (!pthread_equal(*p->first, pthread_self())) {
        atomic_fetch_add(p->moved, 1);
    }
    atomic_fetch_add(p->polls, 1);
    if (atomic_load(p->done))
        return FUT_READY;
    wslot_set(p->slot, &cx->waker);
    return FUT_PENDING;
}

static void lp_drop(struct fut_future *f)
{
    struct local_probe *p = (struct local_probe *)f;
    wslot_clear(p->slot);
    if (p->started && !pthread_equal(*p->first, pthread_self()))
        atomic_fetch_add(p->dropped_elsewhere, 1);
    atomic_fetch_add(p->drops, 1);
}

static const struct fut_future_vtable lp_vt = {lp_poll, lp_drop,
                                               "local_probe", NULL};

#define NLOCAL 8

struct local_env {
    struct fut_join kept[NLOCAL / 2]; /* the odd tasks' handles */
    struct wslot slot[NLOCAL];
    pthread_t first[NLOCAL];
    atomic_long moved, polls, drops, dropped_elsewhere;
    atomic_int done;
    int spawn_err, foreign_err;
};

/* Spawns the thread-affine probes from a worker, plus a busy neighbour
 * so that the other worker has reasons to steal. */
struct local_spawner {
    struct fut_future base;
    struct local_env *env;
    struct fut_join joins[NLOCAL];
    int n;
};

static int ls_poll(struct fut_future *f, struct fut_context *cx)
{
    struct local_spawner *s = (struct local_spawner *)f;
    (void)cx;
    for (; s->n < NLOCAL; s->n++) {
        struct local_probe p;
        fut_future_init(&p.base, &lp_vt);
        p.slot = &s->env->slot[s->n];
        p.first = &s->env->first[s->n];
        p.moved = &s->env->moved;
        p.polls = &s->env->polls;
        p.drops = &s->env->drops;
        p.dropped_elsewhere = &s->env->dropped_elsewhere;
        p.done = &s->env->done;
        p.started = 0;
        int r = fut_spawn_local(&p, sizeof p, &s->joins[s->n]);
        if (r) {
            s->env->spawn_err = r;
            break;
        }
    }
    /* Detach half; hand the others' handles (never polled: they may
     * move) to the test, which drops them from a foreign thread. */
    for (int i = 0; i < s->n; i++) {
        if (i % 2 == 0)
            fut_join_detach(&s->joins[i]);
        else
            s->env->kept[i / 2] = s->joins[i];
    }
    return FUT_READY;
}

static const struct fut_future_vtable ls_vt = {ls_poll, NULL, "local_spawner",
                                               NULL};

static void *wake_locals(void *arg)
{
    struct local_env *env = arg;
    for (int k = 0; k < 2000; k++) {
        for (int i = 0; i < NLOCAL; i++)
            wslot_wake(&env->slot[i]);
        if (k % 100 == 0)
            sleep_us(100);
    }
    return NULL;
}

/* Thread-affine tasks stay on their worker through wakes from foreign
 * threads and a second, busy worker; spawn_local outside a worker is
 * FUT_EINVAL; shutdown drops them on their worker. */
START_TEST(spawn_local_affinity)
{
    struct fut_runtime *rt = mt_rt(2);
    static struct local_env env;
    memset(&env, 0, sizeof env);
    for (int i = 0; i < NLOCAL; i++)
        wslot_init(&env.slot[i]);
    struct counting_future cf;
    counting_future_init(&cf, 0, 0, NULL, NULL, 0);
    struct fut_join j;
    ASSERT_EQ(fut_spawn_local(&cf, sizeof cf, &j), FUT_EINVAL); /* no rt */
    struct local_spawner ls;
    memset(&ls, 0, sizeof ls);
    fut_future_init(&ls.base, &ls_vt);
    ls.env = &env;
    struct fut_join sj;
    ASSERT_EQ(fut_spawn(rt, &ls, sizeof ls, &sj), 0);
    ASSERT_EQ(fut_block_on(rt, &sj.base), 0);
    ASSERT_EQ(env.spawn_err, 0);
    ASSERT_TRUE(wait_ge(&env.polls, NLOCAL));
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, wake_locals, &env);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    ASSERT_TRUE(atomic_load(&env.polls) > NLOCAL);
    ASSERT_EQ(atomic_load(&env.moved), 0);
    fut_drop(&sj.base);
    /* Aborts of thread-affine tasks from this (foreign) thread: their
     * worker drops them. */
    for (int i = 0; i < NLOCAL / 2; i++)
        fut_drop(&env.kept[i].base);
    ASSERT_TRUE(wait_ge(&env.drops, NLOCAL / 2));
    ASSERT_EQ(atomic_load(&env.dropped_elsewhere), 0);
    fut_runtime_free(rt); /* the detached half: dropped on their worker */
    ASSERT_EQ(atomic_load(&env.drops), NLOCAL);
    ASSERT_EQ(atomic_load(&env.dropped_elsewhere), 0);
    ASSERT_EQ(atomic_load(&env.moved), 0);
}
END_TEST

/* Thread-affine tasks woken from another thread run in the order of
 * those wakes: their worker's remote queue is FIFO. The worker is held
 * in a long poll (a thread-affine holder, queued after them) while every
 * wake lands, so that it takes them all at once. */
#define NORDER 16

struct order_env {
    struct wslot slot[NORDER];
    atomic_long taken;       /* ranks handed out (second polls) */
    atomic_long next;        /* ranks written */
    atomic_int rank[NORDER]; /* task i's rank */
    atomic_long holding;
    atomic_int release;
    int spawn_err;
};

struct order_task {
    struct fut_future base;
    struct order_env *env;
    int i;
    int polled;
};

static int ot_poll(struct fut_future *f, struct fut_context *cx)
{
    struct order_task *t = (struct order_task *)f;
    if (!t->polled) {
        t->polled = 1;
        wslot_set(&t->env->slot[t->i], &cx->waker);
        return FUT_PENDING;
    }
    atomic_store(&t->env->rank[t->i],
                 (int)atomic_fetch_add(&t->env->taken, 1));
    atomic_fetch_add(&t->env->next, 1);
    return FUT_READY;
}

static void ot_drop(struct fut_future *f)
{
    struct order_task *t = (struct order_task *)f;
    wslot_clear(&t->env->slot[t->i]);
}

static const struct fut_future_vtable ot_vt = {ot_poll, ot_drop, "order_task",
                                               NULL};

/* Spins in its poll until 'release' (10 s at most). */
static int oh_poll(struct fut_future *f, struct fut_context *cx)
{
    struct order_task *t = (struct order_task *)f;
    (void)cx;
    atomic_store(&t->env->holding, 1);
    for (int k = 0; k < 100000 && !atomic_load(&t->env->release); k++)
        sleep_us(100);
    return FUT_READY;
}

static const struct fut_future_vtable oh_vt = {oh_poll, NULL, "order_holder",
                                               NULL};

static int os_spawn_poll(struct fut_future *f, struct fut_context *cx)
{
    struct order_task *s = (struct order_task *)f;
    (void)cx;
    for (int i = 0; i <= NORDER && !s->env->spawn_err; i++) {
        struct order_task t;
        fut_future_init(&t.base, i < NORDER ? &ot_vt : &oh_vt);
        t.env = s->env;
        t.i = i;
        t.polled = 0;
        s->env->spawn_err = fut_spawn_local(&t, sizeof t, NULL);
    }
    return FUT_READY;
}

static const struct fut_future_vtable os_spawn_vt = {os_spawn_poll, NULL,
                                                     "order_spawner", NULL};

START_TEST(spawn_local_remote_order)
{
    struct fut_runtime *rt = mt_rt(2);
    static struct order_env env;
    memset(&env, 0, sizeof env);
    for (int i = 0; i < NORDER; i++)
        wslot_init(&env.slot[i]);
    struct order_task sp;
    fut_future_init(&sp.base, &os_spawn_vt);
    sp.env = &env;
    struct fut_join j;
    ASSERT_EQ(fut_spawn(rt, &sp, sizeof sp, &j), 0);
    ASSERT_EQ(fut_block_on(rt, &j.base), 0);
    fut_drop(&j.base);
    ASSERT_EQ(env.spawn_err, 0);
    ASSERT_TRUE(wait_ge(&env.holding, 1));
    for (int i = 0; i < NORDER; i++) /* queued before the holder: polled */
        ASSERT_TRUE(wslot_has(&env.slot[i]));
    for (int i = 0; i < NORDER; i++)
        ASSERT_TRUE(wslot_wake(&env.slot[i]));
    atomic_store(&env.release, 1);
    ASSERT_TRUE(wait_ge(&env.next, NORDER));
    for (int i = 0; i < NORDER; i++)
        ck_assert_msg(atomic_load(&env.rank[i]) == i,
                      "task %d ran as number %d", i,
                      atomic_load(&env.rank[i]));
    /* The per-worker count of thread-affine tasks queued from other
     * threads: exactly our wakes. */
    uint64_t remote = 0;
    for (int i = 0; i < 2; i++) {
        struct fut_rt_stats st;
        ASSERT_EQ(fut_runtime_worker_stats(rt, i, &st), 0);
        remote += st.remote_wakes;
    }
    ck_assert_msg(remote == NORDER, "remote_wakes %llu",
                  (unsigned long long)remote);
    fut_runtime_free(rt);
}
END_TEST

/* --------------------------------------------------------- block_on */

struct bo_arg {
    struct fut_runtime *rt;
    atomic_long *ok;
};

static void *block_on_thread(void *arg)
{
    struct bo_arg *a = arg;
    for (int k = 0; k < 50; k++) {
        struct counting_future cf;
        counting_future_init(&cf, 3, 1, NULL, NULL, k);
        struct fut_join j;
        if (fut_spawn(a->rt, &cf, sizeof cf, &j) != 0)
            return NULL;
        if (fut_block_on(a->rt, &j.base) == 0 && j.result == 0 &&
            ((struct counting_future *)fut_join_output(&j))->value == k)
            atomic_fetch_add(a->ok, 1);
        fut_drop(&j.base);
    }
    return NULL;
}

/* A block_on inside a task (on a worker) is refused. */
struct nested {
    struct fut_future base;
    int r; /* output */
};

static int nested_poll(struct fut_future *f, struct fut_context *cx)
{
    struct nested *n = (struct nested *)f;
    struct fut_ready rd;
    fut_ready_init(&rd, 1);
    (void)cx;
    n->r = fut_block_on(fut_runtime_current(), &rd.base);
    return FUT_READY;
}

static const struct fut_future_vtable nested_vt = {nested_poll, NULL,
                                                   "nested", NULL};

/* block_on from several non-worker threads at once; from a worker it is
 * FUT_EBUSY. */
START_TEST(block_on_threads)
{
    struct fut_runtime *rt = mt_rt(2);
    atomic_long ok = 0;
    struct bo_arg a = {rt, &ok};
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, block_on_thread, &a);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    ASSERT_EQ(atomic_load(&ok), 200);
    struct nested n;
    fut_future_init(&n.base, &nested_vt);
    n.r = 0;
    struct fut_join j;
    ASSERT_EQ(fut_spawn(rt, &n, sizeof n, &j), 0);
    ASSERT_EQ(fut_block_on(rt, &j.base), 0);
    ASSERT_EQ(((struct nested *)fut_join_output(&j))->r, FUT_EBUSY);
    fut_drop(&j.base);
    fut_runtime_free(rt);
}
END_TEST

/* ---------------------------------------------------------- shutdown */

/* Wakes its partner in its drop: a task woken during shutdown. */
struct waker_on_drop {
    struct fut_future base;
    struct wslot *mine, *partner;
    atomic_long *drops;
};

static int wod_poll(struct fut_future *f, struct fut_context *cx)
{
    struct waker_on_drop *w = (struct waker_on_drop *)f;
    wslot_set(w->mine, &cx->waker);
    return FUT_PENDING;
}

static void wod_drop(struct fut_future *f)
{
    struct waker_on_drop *w = (struct waker_on_drop *)f;
    wslot_clear(w->mine);
    wslot_wake(w->partner);
    atomic_fetch_add(w->drops, 1);
}

static const struct fut_future_vtable wod_vt = {wod_poll, wod_drop,
                                                "waker_on_drop", NULL};

/* Spawns the waker_on_drop tasks, from wherever it is polled. */
struct wod_spawner {
    struct fut_future base;
    struct fut_runtime *rt; /* NULL: the current one (on a worker) */
    struct wslot *slots;
    struct fut_join *joins;
    atomic_long *drops;
    int n, err;
};

static int wod_spawner_poll(struct fut_future *f, struct fut_context *cx)
{
    struct wod_spawner *sp = (struct wod_spawner *)f;
    (void)cx;
    for (int i = 0; i < sp->n && !sp->err; i++) {
        struct waker_on_drop w;
        fut_future_init(&w.base, &wod_vt);
        w.mine = &sp->slots[i];
        w.partner = &sp->slots[(i + 1) % sp->n];
        w.drops = sp->drops;
        sp->err = fut_spawn(sp->rt, &w, sizeof w, &sp->joins[i]);
    }
    return FUT_READY;
}

static const struct fut_future_vtable wod_spawner_vt = {
    wod_spawner_poll, NULL, "wod_spawner", NULL};

struct sd_arg {
    struct fut_runtime *rt;
};

static void *free_thread(void *arg)
{
    fut_runtime_free(((struct sd_arg *)arg)->rt);
    return NULL;
}

/* Shutdown from a foreign thread drops every task: idle ones, running
 * ones (after their poll), queued ones, and tasks woken by those drops;
 * join handles held past the shutdown give FUT_ECANCELED; nothing
 * leaks. */
START_TEST(shutdown_drops_all)
{
    enum { N = 64 };
    for (int round = 0; round < 10; round++) {
        struct fut_runtime *rt = mt_rt(2);
        static struct wslot slots[N];
        atomic_long drops = 0;
        struct fut_join joins[N];
        for (int i = 0; i < N; i++)
            wslot_init(&slots[i]);
        /* Odd rounds: the tasks come from a worker (they live on its
         * list), even rounds from this thread (the foreign list). */
        struct wod_spawner sp;
        fut_future_init(&sp.base, &wod_spawner_vt);
        sp.rt = round % 2 ? NULL : rt;
        sp.slots = slots;
        sp.joins = joins;
        sp.drops = &drops;
        sp.n = N;
        sp.err = 0;
        if (round % 2) {
            struct fut_join sj;
            ASSERT_EQ(fut_spawn(rt, &sp, sizeof sp, &sj), 0);
            ASSERT_EQ(fut_block_on(rt, &sj.base), 0);
            ASSERT_EQ(((struct wod_spawner *)fut_join_output(&sj))->err, 0);
            fut_drop(&sj.base);
        } else {
            wod_spawner_poll(&sp.base, NULL);
            ASSERT_EQ(sp.err, 0);
        }
        /* A running one and some that are queued and never ran. */
        struct probe_shared sh;
        probe_shared_init(&sh);
        atomic_store(&sh.hold, 1);
        struct fut_join jp = spawn_probe(rt, &sh);
        if (round % 2)
            ASSERT_TRUE(wait_ge(&sh.polls, 1));
        struct counting_future cf;
        counting_future_init(&cf, 1000000, 1, NULL, NULL, 0);
        for (int i = 0; i < 8; i++)
            ASSERT_EQ(fut_spawn(rt, &cf, sizeof cf, NULL), 0);
        struct sd_arg a = {rt};
        pthread_t th;
        pthread_create(&th, NULL, free_thread, &a);
        sleep_us(1000);
        atomic_store(&sh.hold, 0);
        pthread_join(th, NULL);
        ASSERT_EQ(atomic_load(&drops), N);
        ASSERT_EQ(atomic_load(&sh.drops), 1);
        for (int i = 0; i < N; i++) {
            ASSERT_TRUE(fut_join_is_finished(&joins[i]));
            ASSERT_EQ(fut_block_on(NULL, &joins[i].base), 0);
            ASSERT_EQ(joins[i].result, FUT_ECANCELED);
            fut_drop(&joins[i].base);
        }
        /* The runtime is gone but handles live: spawn is refused. */
        ASSERT_EQ(fut_spawn(rt, &cf, sizeof cf, NULL), FUT_ESHUTDOWN);
        fut_drop(&jp.base);
    }
}
END_TEST

/* ----------------------------------------------------------- metrics */

struct stats_reader {
    struct fut_runtime *rt;
    atomic_int stop;
    long reads;
    int bad;
};

static void *read_stats(void *arg)
{
    struct stats_reader *r = arg;
    while (!atomic_load(&r->stop)) {
        struct fut_rt_stats tot, w;
        fut_runtime_stats(r->rt, &tot);
        uint64_t polls = 0;
        for (int i = 0; i < fut_runtime_workers(r->rt); i++) {
            fut_runtime_worker_stats(r->rt, i, &w);
            polls += w.polls;
        }
        if (tot.alive > tot.spawned || tot.workers != 2)
            r->bad++;
        (void)polls;
        r->reads++;
    }
    return NULL;
}

/* The counters are readable at any time from any thread, per worker
 * and in total, and they count what happened. */
START_TEST(metrics)
{
    struct fut_runtime *rt = mt_rt(2);
    struct stats_reader rd = {rt, 0, 0, 0};
    pthread_t th;
    pthread_create(&th, NULL, read_stats, &rd);
    for (int round = 0; round < 10; round++) {
        /* Slow children in the last round: the other worker steals. */
        slow_children = round == 9;
        struct fan fa;
        memset(&fa, 0, sizeof fa);
        fut_future_init(&fa.base, &fan_vt);
        struct fut_join j;
        ASSERT_EQ(fut_spawn(rt, &fa, sizeof fa, &j), 0);
        ASSERT_EQ(fut_block_on(rt, &j.base), 0);
        fut_drop(&j.base);
    }
    slow_children = 0;
    sleep_us(20000);
    atomic_store(&rd.stop, 1);
    pthread_join(th, NULL);
    ASSERT_TRUE(rd.reads > 0);
    ASSERT_EQ(rd.bad, 0);
    struct fut_rt_stats tot, sum;
    memset(&sum, 0, sizeof sum);
    ASSERT_EQ(fut_runtime_workers(rt), 2);
    ASSERT_EQ(fut_runtime_worker_stats(rt, 2, &tot), FUT_EINVAL);
    for (int i = 0; i < 2; i++) {
        struct fut_rt_stats w;
        ASSERT_EQ(fut_runtime_worker_stats(rt, i, &w), 0);
        ASSERT_EQ(w.workers, 1);
        sum.spawned += w.spawned;
        sum.polls += w.polls;
        sum.steals += w.steals;
        sum.parks += w.parks;
        sum.unparks += w.unparks;
        sum.lifo_hits += w.lifo_hits;
        sum.global_polls += w.global_polls;
        sum.alive += w.alive;
    }
    /* Tasks completed away from their home worker are freed once that
     * worker has unlinked them (it is woken for it): soon, not at once. */
    for (int i = 0; i < 20000; i++) {
        fut_runtime_stats(rt, &tot);
        if (tot.alive == 0)
            break;
        sleep_us(100);
    }
    ASSERT_EQ(tot.workers, 2);
    ASSERT_EQ(tot.spawned, 10 * (FAN + 1));
    ASSERT_EQ(tot.alive, 0);
    ASSERT_EQ(sum.alive, 0);
    ASSERT_EQ(sum.spawned, 10 * FAN); /* the fans came from this thread */
    ASSERT_EQ(tot.polls, sum.polls);
    ASSERT_TRUE(tot.polls >= 10 * (FAN + 1));
    ASSERT_EQ(tot.lifo_hits, sum.lifo_hits);
    ASSERT_TRUE(tot.lifo_hits > 0);
    ASSERT_TRUE(tot.global_polls >= 10);
    ASSERT_TRUE(tot.remote_wakes >= 10);
    ASSERT_TRUE(tot.parks > 0 && tot.unparks > 0);
    ASSERT_EQ(tot.parks, sum.parks);
    ASSERT_TRUE(tot.steals > 0 && tot.stolen >= tot.steals);
    fut_runtime_free(rt);
}
END_TEST

/* Budget yields are counted: a task that always finds its leaf futures
 * ready is stopped by the budget. */
struct greedy {
    struct fut_future base;
    int rounds;
};

static int greedy_poll(struct fut_future *f, struct fut_context *cx)
{
    struct greedy *g = (struct greedy *)f;
    while (fut_coop_proceed(cx))
        ;
    return --g->rounds > 0 ? FUT_PENDING : FUT_READY;
}

static const struct fut_future_vtable greedy_vt = {greedy_poll, NULL,
                                                   "greedy", NULL};

START_TEST(metrics_budget)
{
    struct fut_runtime *rt = mt_rt(2);
    struct greedy g;
    fut_future_init(&g.base, &greedy_vt);
    g.rounds = 10;
    struct fut_join j;
    ASSERT_EQ(fut_spawn(rt, &g, sizeof g, &j), 0);
    ASSERT_EQ(fut_block_on(rt, &j.base), 0);
    ASSERT_EQ(j.result, 0);
    fut_drop(&j.base);
    struct fut_rt_stats st;
    fut_runtime_stats(rt, &st);
    ASSERT_EQ(st.budget_yields, 9);
    ASSERT_EQ(st.polls, 10);
    fut_runtime_free(rt);
}
END_TEST

/* ------------------------------------------------ config and errors */

START_TEST(config_errors)
{
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    cfg.flavor = FUT_RT_MULTI_THREAD;
    cfg.workers = 257;
    struct fut_runtime *rt = NULL;
    ASSERT_EQ(fut_runtime_new(&cfg, &rt), FUT_EINVAL);
    cfg.workers = -1;
    ASSERT_EQ(fut_runtime_new(&cfg, &rt), FUT_EINVAL);
    cfg.workers = 0; /* online CPUs */
    ASSERT_EQ(fut_runtime_new(&cfg, &rt), 0);
    ASSERT_TRUE(fut_runtime_workers(rt) >= 1);
    struct counting_future cf;
    counting_future_init(&cf, 2, 1, NULL, NULL, 5);
    struct fut_join j;
    ASSERT_EQ(fut_spawn(rt, &cf, sizeof cf, &j), 0);
    ASSERT_EQ(fut_block_on(rt, &j.base), 0);
    ASSERT_EQ(j.result, 0);
    fut_drop(&j.base);
    fut_runtime_free(rt);
    /* A runtime created and freed at once, without a driver. */
    cfg.workers = 3;
    cfg.no_driver = 1;
    ASSERT_EQ(fut_runtime_new(&cfg, &rt), 0);
    fut_runtime_free(rt);
}
END_TEST

/* ---------------------------------- the test tools on this runtime */

/* A future for the harness: spawns a child from a worker, awaits it,
 * spawns a pending one it leaves behind (the shutdown drops it). */
struct hchild {
    struct fut_future base;
    int left;
};

static int hchild_poll(struct fut_future *f, struct fut_context *cx)
{
    struct hchild *c = (struct hchild *)f;
    if (c->left-- > 0) {
        fut_waker_wake_by_ref(&cx->waker);
        return FUT_PENDING;
    }
    return FUT_READY;
}

static const struct fut_future_vtable hchild_vt = {hchild_poll, NULL,
                                                   "hchild", NULL};

/* Idle for ever, holding its own waker (so it is not "never woken"):
 * only a drop ends it - the runtime's shutdown takes it over idle. */
struct parked {
    struct fut_future base;
    struct fut_waker w;
};

static atomic_int parked_polled;
static struct wslot parked_seen; /* woken at the parked task's first poll */

static int parked_poll(struct fut_future *f, struct fut_context *cx)
{
    fut_waker_set(&((struct parked *)f)->w, &cx->waker);
    atomic_store(&parked_polled, 1);
    wslot_wake(&parked_seen);
    return FUT_PENDING;
}

/* READY once the parked task was polled (register, then re-check). */
struct wait_parked {
    struct fut_future base;
};

static int wait_parked_poll(struct fut_future *f, struct fut_context *cx)
{
    (void)f;
    if (atomic_load(&parked_polled))
        return FUT_READY;
    wslot_set(&parked_seen, &cx->waker);
    return atomic_load(&parked_polled) ? FUT_READY : FUT_PENDING;
}

static void wait_parked_drop(struct fut_future *f)
{
    (void)f;
    wslot_clear(&parked_seen);
}

static const struct fut_future_vtable wait_parked_vt = {
    wait_parked_poll, wait_parked_drop, "wait_parked", NULL};

static void parked_drop(struct fut_future *f)
{
    fut_waker_drop(&((struct parked *)f)->w);
}

static const struct fut_future_vtable parked_vt = {parked_poll, parked_drop,
                                                   "parked", NULL};

struct hmain {
    struct fut_future base;
    struct fut_join j;
    struct fut_yield y;
    struct wait_parked wp;
    int i;
    int err;
};

static int hmain_poll(struct fut_future *f, struct fut_context *cx)
{
    struct hmain *h = (struct hmain *)f;
    FUT_BEGIN(f);
    for (h->i = 0; h->i < 3; h->i++) {
        {
            struct hchild c;
            fut_future_init(&c.base, &hchild_vt);
            c.left = h->i + 1;
            h->err = fut_spawn(NULL, &c, sizeof c, &h->j);
            if (h->err)
                FUT_RETURN(f);
        }
        FUT_AWAIT(f, &h->j);
        fut_yield_init(&h->y);
        FUT_AWAIT(f, &h->y);
    }
    {
        struct hchild c;
        fut_future_init(&c.base, &hchild_vt);
        c.left = 1000000000; /* left running: the runtime's free drops it */
        h->err = fut_spawn(NULL, &c, sizeof c, NULL);
        if (h->err)
            FUT_RETURN(f);
        struct parked p; /* left idle: dropped by the runtime's free too */
        fut_future_init(&p.base, &parked_vt);
        p.w.vt = NULL;
        h->err = fut_spawn(NULL, &p, sizeof p, NULL);
        if (h->err)
            FUT_RETURN(f);
    }
    /* Until it has been polled: it is idle, not queued, at the end. */
    fut_future_init(&h->wp.base, &wait_parked_vt);
    FUT_AWAIT(f, &h->wp);
    FUT_END(f);
}

FUT_ASYNC_VTABLE(hmain_vt, "hmain", hmain_poll, NULL);

static struct hmain hm_storage;

static struct fut_future *hmain_make(void *ud, struct fut_runtime *rt)
{
    (void)ud;
    (void)rt;
    memset(&hm_storage, 0, sizeof hm_storage);
    atomic_store(&parked_polled, 0);
    wslot_clear(&parked_seen);
    fut_future_init(&hm_storage.base, &hmain_vt);
    return &hm_storage.base;
}

/* Drop-at-every-PENDING on a multi-thread runtime: the wrapper runs in
 * block_on on this thread, the tasks on the workers. */
START_TEST(harness_mt)
{
    wslot_init(&parked_seen);
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    cfg.flavor = FUT_RT_MULTI_THREAD;
    cfg.workers = 2;
    struct fut_harness h;
    fut_harness_init(&h, hmain_make, NULL, NULL);
    h.cfg = &cfg;
    int r = fut_harness_run(&h);
    ck_assert_msg(r == 0, "harness: %d (%s) at k=%ld", r, h.msg,
                  h.first_failure);
    ASSERT_TRUE(h.pendings >= 3); /* the yields, at least */
    ASSERT_EQ(h.runs, h.pendings + 1);
}
END_TEST

/* ------------------------------------------------------ block pool */

/* A worker's oneshots come from its block pool, whose cache keeps the
 * blocks the worker frees for its next allocation of that size (see
 * internal.h). The task makes and finishes oneshots of two sizes on its
 * worker (more than the cache holds, so both the cache and the pool
 * behind it are used) and hands some receivers out, to be dropped on
 * this thread before and after the runtime is freed. A cached block
 * still counts as allocated, so a worker that exits without giving its
 * cache back keeps its scheduler alive: the leak check fails. */
enum { BP_N = 150, BP_OUT = 6 };

struct bpool {
    struct fut_future base;
    struct fut_oneshot_rx out[BP_OUT]; /* dropped by the test thread */
    long sum;
    int err;
};

static int bpool_poll(struct fut_future *f, struct fut_context *cx)
{
    struct bpool *b = (struct bpool *)f;
    (void)cx;
    for (int round = 0; round < 3; round++) {
        static struct fut_oneshot_tx tx[BP_N];
        static struct fut_oneshot_rx rx[BP_N];
        size_t size = round == 1 ? 40 : sizeof(long);
        for (int i = 0; i < BP_N; i++)
            if ((b->err = fut_oneshot_new(size, NULL, &tx[i], &rx[i])))
                return FUT_READY;
        for (int i = 0; i < BP_N; i++) {
            long v[5] = {i, 0, 0, 0, 0};
            if ((b->err = fut_oneshot_send(&tx[i], v)))
                return FUT_READY;
        }
        for (int i = 0; i < BP_N; i++) {
            long v[5];
            if ((b->err = fut_oneshot_try_recv(&rx[i], v)))
                return FUT_READY;
            b->sum += v[0];
        }
    }
    for (int i = 0; i < BP_OUT; i++) {
        struct fut_oneshot_tx tx;
        if ((b->err = fut_oneshot_new(sizeof(long), NULL, &tx, &b->out[i])))
            return FUT_READY;
        long v = i;
        if ((b->err = fut_oneshot_send(&tx, &v)))
            return FUT_READY;
    }
    return FUT_READY;
}

static const struct fut_future_vtable bpool_vt = {bpool_poll, NULL, "bpool",
                                                  NULL};

START_TEST(block_pool)
{
    for (int round = 0; round < 20; round++) {
        struct fut_runtime *rt = mt_rt(2);
        struct bpool b;
        memset(&b, 0, sizeof b);
        fut_future_init(&b.base, &bpool_vt);
        struct fut_join j;
        ASSERT_EQ(fut_spawn(rt, &b, sizeof b, &j), 0);
        ASSERT_EQ(fut_block_on(rt, &j.base), 0);
        ASSERT_EQ(j.result, 0);
        struct bpool *o = fut_join_output(&j);
        ASSERT_EQ(o->err, 0);
        ASSERT_EQ(o->sum, 3L * BP_N * (BP_N - 1) / 2);
        struct fut_oneshot_rx out[BP_OUT];
        memcpy(out, o->out, sizeof out);
        fut_drop(&j.base);
        for (int i = 0; i < BP_OUT / 2; i++)
            fut_oneshot_rx_drop(&out[i]); /* pool alive, not its thread */
        fut_runtime_free(rt);
        for (int i = BP_OUT / 2; i < BP_OUT; i++) {
            long v = -1;
            ASSERT_EQ(fut_oneshot_try_recv(&out[i], &v), 0); /* after */
            ASSERT_EQ(v, i);
        }
    }
}
END_TEST

/* One whole life of a multi-thread runtime: create, spawn from here and
 * from a worker, join, free. Returns the first error. */
static int mt_life(void *ud)
{
    (void)ud;
    struct fut_rt_config cfg;
    fut_rt_config_init(&cfg);
    cfg.flavor = FUT_RT_MULTI_THREAD;
    cfg.workers = 2;
    struct fut_runtime *rt;
    int r = fut_runtime_new(&cfg, &rt);
    if (r)
        return r;
    struct hmain h;
    memset(&h, 0, sizeof h);
    fut_future_init(&h.base, &hmain_vt);
    atomic_store(&parked_polled, 0);
    struct fut_join j;
    r = fut_spawn(rt, &h, sizeof h, &j);
    if (r == 0) {
        r = fut_block_on(rt, &j.base);
        if (r == 0)
            r = j.result ? j.result
                         : ((struct hmain *)fut_join_output(&j))->err;
        fut_drop(&j.base);
    }
    fut_runtime_free(rt);
    return r;
}

/* Fail-the-Nth-allocation over a whole multi-thread runtime's life:
 * every failure surfaces as FUT_ENOMEM and leaks nothing. */
START_TEST(failalloc_mt)
{
    wslot_init(&parked_seen);
    long tried = 0;
    char msg[256] = "";
    int r = fut_failalloc_each(mt_life, NULL, 2000, &tried, msg, sizeof msg);
    ck_assert_msg(r == 0, "failalloc: N=%d: %s", r, msg);
    ASSERT_TRUE(tried > 5);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rt_multi");
    struct {
        const char *name;
        const TTest *test;
    } cases[] = {
        {"spawn_from_workers", spawn_from_workers},
        {"wake_while_running", wake_while_running},
        {"abort_idle_at_once", abort_idle_at_once},
        {"abort_running", abort_running},
        {"join_drop_and_detach", join_drop_and_detach},
        {"spawn_local_affinity", spawn_local_affinity},
        {"spawn_local_remote_order", spawn_local_remote_order},
        {"block_on_threads", block_on_threads},
        {"shutdown_drops_all", shutdown_drops_all},
        {"metrics", metrics},
        {"metrics_budget", metrics_budget},
        {"config_errors", config_errors},
        {"harness_mt", harness_mt},
        {"failalloc_mt", failalloc_mt},
        {"block_pool", block_pool},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TCase *tc = fut_test_tcase(s, cases[i].name);
        tcase_add_test(tc, cases[i].test);
    }
    return fut_test_run(s);
}
