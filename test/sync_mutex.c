/* SPDX-License-Identifier: MIT */
/* The async mutex and the rwlock (include/fut/sync.h): FIFO fairness,
 * no barging, misuse codes, a dropped lock future hands the lock on,
 * drop-at-every-PENDING, mutual exclusion across threads; the rwlock's
 * readers together, writers alone, writer preference by FIFO, downgrade. */
#include "sync_util.h"

/* ----------------------------------------------------------------- mutex */

START_TEST(mutex_basics)
{
    struct fut_mutex m;
    fut_mutex_init(&m);
    struct fut_mutex_guard g, g2, copy;
    ASSERT_TRUE(!fut_mutex_is_locked(&m));
    ASSERT_EQ(fut_mutex_try_lock(&m, &g), 0);
    ASSERT_TRUE(fut_mutex_is_locked(&m));
    ASSERT_EQ(fut_mutex_try_lock(&m, &g2), FUT_EBUSY);
    ASSERT_TRUE(g2.m == NULL);
    copy = g;
    ASSERT_EQ(fut_mutex_unlock(&g), 0);
    ASSERT_TRUE(g.m == NULL);
    ASSERT_EQ(fut_mutex_unlock(&g), FUT_EINVAL);    /* empty guard */
    ASSERT_EQ(fut_mutex_unlock(&copy), FUT_EINVAL); /* not locked */
    ASSERT_TRUE(!fut_mutex_is_locked(&m));
    ASSERT_EQ(fut_mutex_unlock(&g2), FUT_EINVAL);
    /* The lock future on a free mutex: READY at once. */
    struct twaker w = {0, 0};
    struct fut_mutex_lock l;
    fut_mutex_lock_init(&l, &m);
    ASSERT_EQ(tpoll(&l, &w), FUT_READY);
    ASSERT_TRUE(l.guard.m == &m);
    ASSERT_EQ(tpoll(&l, &w), FUT_READY); /* C8: same guard */
    fut_drop(&l.base); /* after READY: the guard stays ours */
    ASSERT_TRUE(fut_mutex_is_locked(&m));
    ASSERT_EQ(fut_mutex_unlock(&l.guard), 0);
    fut_mutex_fini(&m);
    ASSERT_EQ(w.refs, 0);
}
END_TEST

/* Waiters get the lock in arrival order, one wake per unlock, and a
 * try_lock never barges in while the lock is being handed over. */
START_TEST(mutex_fifo)
{
    enum { N = 8 };
    struct fut_mutex m;
    fut_mutex_init(&m);
    struct fut_mutex_guard g, t;
    ASSERT_EQ(fut_mutex_try_lock(&m, &g), 0);
    struct fut_mutex_lock l[N];
    struct twaker w[N];
    for (int i = 0; i < N; i++) {
        memset(&w[i], 0, sizeof w[i]);
        fut_mutex_lock_init(&l[i], &m);
        ASSERT_EQ(tpoll(&l[i], &w[i]), FUT_PENDING);
    }
    struct fut_mutex_guard cur = g;
    for (int i = 0; i < N; i++) {
        ASSERT_EQ(fut_mutex_unlock(&cur), 0);
        for (int j = 0; j < N; j++)
            ASSERT_EQ(w[j].wakes, j <= i ? 1 : 0);
        ASSERT_EQ(fut_mutex_try_lock(&m, &t), FUT_EBUSY);
        ASSERT_EQ(tpoll(&l[i], &w[i]), FUT_READY);
        cur = l[i].guard;
        fut_drop(&l[i].base);
    }
    ASSERT_EQ(fut_mutex_unlock(&cur), 0);
    ASSERT_TRUE(!fut_mutex_is_locked(&m));
    for (int i = 0; i < N; i++)
        ASSERT_EQ(w[i].refs, 0);
    fut_mutex_fini(&m);
}
END_TEST

/* A lock future that was handed the lock but is dropped before it looked
 * passes the lock on; a queued one that is dropped just leaves. */
START_TEST(mutex_drop_hands_on)
{
    struct fut_mutex m;
    fut_mutex_init(&m);
    struct fut_mutex_guard g;
    ASSERT_EQ(fut_mutex_try_lock(&m, &g), 0);
    struct fut_mutex_lock a, b, c;
    struct twaker wa = {0, 0}, wb = {0, 0}, wc = {0, 0};
    fut_mutex_lock_init(&a, &m);
    fut_mutex_lock_init(&b, &m);
    fut_mutex_lock_init(&c, &m);
    ASSERT_EQ(tpoll(&a, &wa), FUT_PENDING);
    ASSERT_EQ(tpoll(&b, &wb), FUT_PENDING);
    ASSERT_EQ(tpoll(&c, &wc), FUT_PENDING);
    fut_drop(&b.base); /* queued: leaves the queue */
    ASSERT_EQ(fut_mutex_unlock(&g), 0);
    ASSERT_EQ(wa.wakes, 1);
    fut_drop(&a.base); /* granted, never observed: to c */
    ASSERT_EQ(wc.wakes, 1);
    ASSERT_EQ(wb.wakes, 0);
    ASSERT_EQ(tpoll(&c, &wc), FUT_READY);
    ASSERT_EQ(fut_mutex_unlock(&c.guard), 0);
    fut_drop(&c.base);
    ASSERT_TRUE(!fut_mutex_is_locked(&m));
    ASSERT_EQ(wa.refs + wb.refs + wc.refs, 0);
    fut_mutex_fini(&m);
}
END_TEST

/* Coop budget: a fresh lock with the budget spent returns PENDING without
 * taking the lock (holding it across the yield would make every other
 * locker queue behind a task that is not running); a lock already handed
 * over from the queue is kept across such a PENDING. */
START_TEST(mutex_coop_budget)
{
    struct fut_mutex m;
    fut_mutex_init(&m);
    struct twaker w = {0, 0}, w2 = {0, 0};
    struct fut_mutex_lock l, l2;
    struct fut_mutex_guard t;
    fut_mutex_lock_init(&l, &m);
    ASSERT_EQ(tpoll_no_budget(&l, &w), FUT_PENDING);
    ASSERT_EQ(w.wakes, 1);
    ASSERT_TRUE(!fut_mutex_is_locked(&m));
    ASSERT_EQ(tpoll(&l, &w), FUT_READY);
    fut_mutex_lock_init(&l2, &m);
    ASSERT_EQ(tpoll(&l2, &w2), FUT_PENDING);
    ASSERT_EQ(fut_mutex_unlock(&l.guard), 0); /* handed to l2 */
    ASSERT_EQ(tpoll_no_budget(&l2, &w2), FUT_PENDING);
    ASSERT_TRUE(fut_mutex_is_locked(&m)); /* kept for l2 */
    ASSERT_EQ(fut_mutex_try_lock(&m, &t), FUT_EBUSY);
    ASSERT_EQ(tpoll(&l2, &w2), FUT_READY);
    ASSERT_EQ(fut_mutex_unlock(&l2.guard), 0);
    fut_drop(&l.base);
    fut_drop(&l2.base);
    ASSERT_EQ(w.refs + w2.refs, 0);
    fut_mutex_fini(&m);
}
END_TEST

/* A guard may be unlocked on another thread than the one that locked. */
static void *unlock_there(void *arg)
{
    ck_assert_int_eq(fut_mutex_unlock(arg), 0);
    return NULL;
}

START_TEST(mutex_guard_moves_thread)
{
    struct fut_mutex m;
    fut_mutex_init(&m);
    struct fut_mutex_guard g;
    ASSERT_EQ(fut_mutex_try_lock(&m, &g), 0);
    struct fut_mutex_lock l;
    fut_mutex_lock_init(&l, &m);
    struct twaker w = {0, 0};
    ASSERT_EQ(tpoll(&l, &w), FUT_PENDING);
    struct tpool p = {.n = 0};
    tpool_start(&p, unlock_there, &g);
    tpool_join(&p);
    ASSERT_EQ(w.wakes, 1);
    ASSERT_EQ(tpoll(&l, &w), FUT_READY);
    ASSERT_EQ(fut_mutex_unlock(&l.guard), 0);
    fut_drop(&l.base);
    fut_mutex_fini(&m);
}
END_TEST

/* ---------------------------------------------- drop at every PENDING */

static struct fut_mutex hm;
static long shared_value; /* protected by hm */
static long other_rounds;
static int overlap; /* two holders at once */
static int holders;

/* Lock, check exclusivity across yields, unlock; 3 rounds. */
struct locker {
    struct fut_future base;
    struct fut_mutex_lock l;
    struct yield_n y;
    int i;
    long *rounds;
};

static int locker_poll(struct fut_future *f, struct fut_context *cx)
{
    struct locker *k = (struct locker *)f;
    FUT_BEGIN(f);
    for (k->i = 0; k->i < 3; k->i++) {
        fut_mutex_lock_init(&k->l, &hm);
        FUT_AWAIT(f, &k->l);
        if (holders++)
            overlap = 1;
        yield_n_init(&k->y, 70);
        FUT_AWAIT(f, &k->y);
        holders--;
        shared_value++;
        fut_mutex_unlock(&k->l.guard);
        if (k->rounds)
            (*k->rounds)++;
    }
    FUT_END(f);
}

static void locker_cleanup(struct fut_future *f)
{
    struct locker *k = (struct locker *)f;
    if (k->l.guard.m) {
        holders--;
        fut_mutex_unlock(&k->l.guard);
    }
}

FUT_ASYNC_VTABLE(locker_vt, "locker", locker_poll, locker_cleanup);

static struct locker under_lock;

static struct fut_future *make_locker(void *ud, struct fut_runtime *rt)
{
    (void)ud;
    fut_mutex_init(&hm);
    shared_value = other_rounds = 0;
    overlap = holders = 0;
    struct locker other;
    memset(&other, 0, sizeof other);
    fut_future_init(&other.base, &locker_vt);
    other.rounds = &other_rounds;
    ck_assert_int_eq(fut_spawn(rt, &other, sizeof other, NULL), 0);
    memset(&under_lock, 0, sizeof under_lock);
    fut_future_init(&under_lock.base, &locker_vt);
    return &under_lock.base;
}

static int check_lock(void *ud, int k)
{
    (void)ud;
    (void)k;
    int ok = !overlap && other_rounds == 3 && !fut_mutex_is_locked(&hm);
    fut_mutex_fini(&hm);
    return !ok;
}

START_TEST(drop_mutex_lock)
{
    run_harness(make_locker, check_lock, NULL, 3);
}
END_TEST

/* ------------------------------------------------------ across threads */

static struct fut_mutex tm;
static long tcounter;      /* plain: protected by tm */
static atomic_int tinside; /* holders right now */
static atomic_int tviolations;

struct tlocker {
    struct fut_future base;
    struct fut_mutex_lock l;
    int active;
    uint32_t rng;
    long n, done, drops;
};

static int tlocker_poll(struct fut_future *f, struct fut_context *cx)
{
    struct tlocker *k = (struct tlocker *)f;
    while (k->done < k->n) {
        if (!k->active) {
            fut_mutex_lock_init(&k->l, &tm);
            k->active = 1;
        }
        if (fut_poll(&k->l.base, cx) == FUT_PENDING) {
            if (xrand(&k->rng) & 3)
                return FUT_PENDING;
            fut_drop(&k->l.base); /* give up the place, maybe the lock */
            k->active = 0;
            k->drops++;
            continue;
        }
        if (atomic_fetch_add(&tinside, 1) != 0)
            atomic_fetch_add(&tviolations, 1);
        tcounter++;
        atomic_fetch_sub(&tinside, 1);
        fut_mutex_unlock(&k->l.guard);
        fut_drop(&k->l.base);
        k->active = 0;
        k->done++;
    }
    return FUT_READY;
}

static void tlocker_drop(struct fut_future *f)
{
    struct tlocker *k = (struct tlocker *)f;
    if (k->active)
        fut_drop(&k->l.base);
}

static const struct fut_future_vtable tlocker_vt = {
    tlocker_poll, tlocker_drop, "tlocker", NULL};

START_TEST(mutex_threads)
{
    enum { T = 4 };
    long per = TEST_ITERS(200000, 20000);
    fut_mutex_init(&tm);
    tcounter = 0;
    static struct tlocker k[T];
    struct tpool p = {.n = 0};
    for (int i = 0; i < T; i++) {
        memset(&k[i], 0, sizeof k[i]);
        fut_future_init(&k[i].base, &tlocker_vt);
        k[i].n = per;
        k[i].rng = (uint32_t)(i + 3) * 104729u;
        tpool_start(&p, block_on_thread, &k[i]);
    }
    tpool_join(&p);
    for (int i = 0; i < T; i++)
        fut_drop(&k[i].base);
    ASSERT_EQ(tcounter, T * per); /* no lost increment: exclusion */
    ASSERT_EQ(atomic_load(&tviolations), 0);
    ASSERT_TRUE(!fut_mutex_is_locked(&tm));
    fut_mutex_fini(&tm);
}
END_TEST

/* ---------------------------------------------------------------- rwlock */

START_TEST(rwlock_basics)
{
    struct fut_rwlock l;
    fut_rwlock_init(&l);
    struct fut_rwlock_read_guard r1, r2, rbad = {NULL};
    struct fut_rwlock_write_guard w1, wfake;
    ASSERT_EQ(fut_rwlock_try_read(&l, &r1), 0);
    ASSERT_EQ(fut_rwlock_try_read(&l, &r2), 0); /* readers together */
    ASSERT_EQ(fut_rwlock_try_write(&l, &w1), FUT_EBUSY);
    ASSERT_EQ(fut_rwlock_read_unlock(&r1), 0);
    ASSERT_EQ(fut_rwlock_read_unlock(&r1), FUT_EINVAL);
    ASSERT_EQ(fut_rwlock_read_unlock(&r2), 0);
    ASSERT_EQ(fut_rwlock_read_unlock(&rbad), FUT_EINVAL);
    ASSERT_EQ(fut_rwlock_try_write(&l, &w1), 0);
    ASSERT_EQ(fut_rwlock_try_read(&l, &r1), FUT_EBUSY);
    ASSERT_EQ(fut_rwlock_write_unlock(&w1), 0);
    ASSERT_EQ(fut_rwlock_write_unlock(&w1), FUT_EINVAL);
    wfake.l = &l; /* a forged guard of a free lock */
    ASSERT_EQ(fut_rwlock_write_unlock(&wfake), FUT_EINVAL);
    struct fut_rwlock_read_guard rfake = {&l};
    ASSERT_EQ(fut_rwlock_read_unlock(&rfake), FUT_EINVAL);
    /* downgrade: the writer becomes a reader; other readers may join,
     * writers may not. */
    ASSERT_EQ(fut_rwlock_try_write(&l, &w1), 0);
    ASSERT_EQ(fut_rwlock_downgrade(&w1, &r1), 0);
    ASSERT_TRUE(w1.l == NULL && r1.l == &l);
    ASSERT_EQ(fut_rwlock_downgrade(&w1, &r2), FUT_EINVAL);
    ASSERT_EQ(fut_rwlock_try_read(&l, &r2), 0);
    ASSERT_EQ(fut_rwlock_try_write(&l, &w1), FUT_EBUSY);
    ASSERT_EQ(fut_rwlock_read_unlock(&r1), 0);
    ASSERT_EQ(fut_rwlock_read_unlock(&r2), 0);
    fut_rwlock_fini(&l);
}
END_TEST

/* Writer preference by FIFO order: with readers inside and a writer
 * queued, a new reader waits behind the writer; the writer gets the lock
 * when the earlier readers leave, and the queued readers get it together
 * when the writer leaves. */
START_TEST(rwlock_writer_preferring)
{
    struct fut_rwlock l;
    fut_rwlock_init(&l);
    struct fut_rwlock_read_guard r1, r2, rt;
    ASSERT_EQ(fut_rwlock_try_read(&l, &r1), 0);
    ASSERT_EQ(fut_rwlock_try_read(&l, &r2), 0);
    struct twaker ww = {0, 0}, wr1 = {0, 0}, wr2 = {0, 0};
    struct fut_rwlock_write wf;
    fut_rwlock_write_init(&wf, &l);
    ASSERT_EQ(tpoll(&wf, &ww), FUT_PENDING);
    /* A reader arriving now queues behind the writer. */
    ASSERT_EQ(fut_rwlock_try_read(&l, &rt), FUT_EBUSY);
    struct fut_rwlock_read rf1, rf2;
    fut_rwlock_read_init(&rf1, &l);
    fut_rwlock_read_init(&rf2, &l);
    ASSERT_EQ(tpoll(&rf1, &wr1), FUT_PENDING);
    ASSERT_EQ(tpoll(&rf2, &wr2), FUT_PENDING);
    ASSERT_EQ(fut_rwlock_read_unlock(&r1), 0);
    ASSERT_EQ(ww.wakes, 0); /* r2 still inside */
    ASSERT_EQ(fut_rwlock_read_unlock(&r2), 0);
    ASSERT_EQ(ww.wakes, 1);
    ASSERT_EQ(wr1.wakes + wr2.wakes, 0);
    ASSERT_EQ(tpoll(&wf, &ww), FUT_READY);
    ASSERT_EQ(fut_rwlock_write_unlock(&wf.guard), 0);
    ASSERT_EQ(wr1.wakes, 1); /* both readers at once */
    ASSERT_EQ(wr2.wakes, 1);
    ASSERT_EQ(tpoll(&rf1, &wr1), FUT_READY);
    ASSERT_EQ(tpoll(&rf2, &wr2), FUT_READY);
    ASSERT_EQ(fut_rwlock_read_unlock(&rf1.guard), 0);
    ASSERT_EQ(fut_rwlock_read_unlock(&rf2.guard), 0);
    fut_drop(&wf.base);
    fut_drop(&rf1.base);
    fut_drop(&rf2.base);
    ASSERT_EQ(ww.refs + wr1.refs + wr2.refs, 0);
    fut_rwlock_fini(&l);
}
END_TEST

/* A queued writer that is dropped after collecting part of the reader
 * slots hands them on: the readers queued behind it get in. */
START_TEST(rwlock_writer_drop_hands_on)
{
    struct fut_rwlock l;
    fut_rwlock_init(&l);
    struct fut_rwlock_read_guard r1;
    ASSERT_EQ(fut_rwlock_try_read(&l, &r1), 0);
    struct twaker ww = {0, 0}, wr = {0, 0};
    struct fut_rwlock_write wf;
    fut_rwlock_write_init(&wf, &l);
    ASSERT_EQ(tpoll(&wf, &ww), FUT_PENDING);
    struct fut_rwlock_read rf;
    fut_rwlock_read_init(&rf, &l);
    ASSERT_EQ(tpoll(&rf, &wr), FUT_PENDING);
    fut_drop(&wf.base);
    ASSERT_EQ(wr.wakes, 1);
    ASSERT_EQ(tpoll(&rf, &wr), FUT_READY);
    ASSERT_EQ(fut_rwlock_read_unlock(&rf.guard), 0);
    ASSERT_EQ(fut_rwlock_read_unlock(&r1), 0);
    fut_drop(&rf.base);
    fut_rwlock_fini(&l);
    ASSERT_EQ(ww.refs + wr.refs, 0);
}
END_TEST

/* Drop harness over both futures: a writer task and the reader (or
 * writer) under test; exclusion holds and the lock ends free. */
static struct fut_rwlock hl;
static int readers_in, writers_in, rw_bad;
static long writer_rounds;

struct rw_user {
    struct fut_future base;
    struct fut_rwlock_read rd;
    struct fut_rwlock_write wr;
    struct yield_n y;
    int i;
    int writer;
    long *rounds;
};

static void rw_enter(int writer)
{
    if (writer) {
        if (readers_in || writers_in)
            rw_bad = 1;
        writers_in++;
    } else {
        if (writers_in)
            rw_bad = 1;
        readers_in++;
    }
}

static int rw_user_poll(struct fut_future *f, struct fut_context *cx)
{
    struct rw_user *u = (struct rw_user *)f;
    FUT_BEGIN(f);
    for (u->i = 0; u->i < 3; u->i++) {
        if (u->writer) {
            fut_rwlock_write_init(&u->wr, &hl);
            FUT_AWAIT(f, &u->wr);
        } else {
            fut_rwlock_read_init(&u->rd, &hl);
            FUT_AWAIT(f, &u->rd);
        }
        rw_enter(u->writer);
        yield_n_init(&u->y, 70);
        FUT_AWAIT(f, &u->y);
        if (u->writer) {
            writers_in--;
            fut_rwlock_write_unlock(&u->wr.guard);
        } else {
            readers_in--;
            fut_rwlock_read_unlock(&u->rd.guard);
        }
        if (u->rounds)
            (*u->rounds)++;
    }
    FUT_END(f);
}

static void rw_user_cleanup(struct fut_future *f)
{
    struct rw_user *u = (struct rw_user *)f;
    if (u->wr.guard.l) {
        writers_in--;
        fut_rwlock_write_unlock(&u->wr.guard);
    }
    if (u->rd.guard.l) {
        readers_in--;
        fut_rwlock_read_unlock(&u->rd.guard);
    }
}

FUT_ASYNC_VTABLE(rw_user_vt, "rw_user", rw_user_poll, rw_user_cleanup);

static struct rw_user under_rw;

static struct fut_future *make_rw(void *ud, struct fut_runtime *rt)
{
    fut_rwlock_init(&hl);
    readers_in = writers_in = rw_bad = 0;
    writer_rounds = 0;
    struct rw_user w;
    memset(&w, 0, sizeof w);
    fut_future_init(&w.base, &rw_user_vt);
    w.writer = 1;
    w.rounds = &writer_rounds;
    ck_assert_int_eq(fut_spawn(rt, &w, sizeof w, NULL), 0);
    memset(&under_rw, 0, sizeof under_rw);
    fut_future_init(&under_rw.base, &rw_user_vt);
    under_rw.writer = ud != NULL;
    return &under_rw.base;
}

static int check_rw(void *ud, int k)
{
    (void)ud;
    (void)k;
    struct fut_rwlock_write_guard g;
    int ok = !rw_bad && writer_rounds == 3 &&
             fut_rwlock_try_write(&hl, &g) == 0; /* free at the end */
    if (g.l)
        fut_rwlock_write_unlock(&g);
    fut_rwlock_fini(&hl);
    return !ok;
}

START_TEST(drop_rwlock_read)
{
    run_harness(make_rw, check_rw, NULL, 3);
}
END_TEST

START_TEST(drop_rwlock_write)
{
    static int yes = 1;
    run_harness(make_rw, check_rw, &yes, 3);
}
END_TEST

/* Readers and writers on threads: the invariant holds throughout. */
static struct fut_rwlock trl;
static atomic_long trl_state; /* readers inside; -1000 per writer */
static atomic_int trl_bad;

struct rwthread {
    struct fut_future base;
    struct fut_rwlock_read rd;
    struct fut_rwlock_write wr;
    int active, writer;
    long n, done;
};

static int rwthread_poll(struct fut_future *f, struct fut_context *cx)
{
    struct rwthread *t = (struct rwthread *)f;
    while (t->done < t->n) {
        if (!t->active) {
            if (t->writer)
                fut_rwlock_write_init(&t->wr, &trl);
            else
                fut_rwlock_read_init(&t->rd, &trl);
            t->active = 1;
        }
        struct fut_future *cur = t->writer ? &t->wr.base : &t->rd.base;
        if (fut_poll(cur, cx) == FUT_PENDING)
            return FUT_PENDING;
        if (t->writer) {
            if (atomic_fetch_sub(&trl_state, 1000) != 0)
                atomic_fetch_add(&trl_bad, 1);
            atomic_fetch_add(&trl_state, 1000);
            fut_rwlock_write_unlock(&t->wr.guard);
        } else {
            if (atomic_fetch_add(&trl_state, 1) < 0)
                atomic_fetch_add(&trl_bad, 1);
            atomic_fetch_sub(&trl_state, 1);
            fut_rwlock_read_unlock(&t->rd.guard);
        }
        fut_drop(cur);
        t->active = 0;
        t->done++;
    }
    return FUT_READY;
}

static const struct fut_future_vtable rwthread_vt = {rwthread_poll, NULL,
                                                     "rwthread", NULL};

START_TEST(rwlock_threads)
{
    enum { T = 4 };
    long per = TEST_ITERS(50000, 5000);
    fut_rwlock_init(&trl);
    static struct rwthread t[T];
    struct tpool p = {.n = 0};
    for (int i = 0; i < T; i++) {
        memset(&t[i], 0, sizeof t[i]);
        fut_future_init(&t[i].base, &rwthread_vt);
        t[i].writer = i == 0;
        t[i].n = per;
        tpool_start(&p, block_on_thread, &t[i]);
    }
    tpool_join(&p);
    for (int i = 0; i < T; i++)
        ASSERT_EQ(t[i].done, per);
    ASSERT_EQ(atomic_load(&trl_bad), 0);
    fut_rwlock_fini(&trl);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sync_mutex");
    TCase *tc = fut_test_tcase(s, "mutex");
    tcase_add_test(tc, mutex_basics);
    tcase_add_test(tc, mutex_fifo);
    tcase_add_test(tc, mutex_drop_hands_on);
    tcase_add_test(tc, mutex_coop_budget);
    tcase_add_test(tc, mutex_guard_moves_thread);
    tcase_add_test(tc, drop_mutex_lock);
    tcase_add_test(tc, mutex_threads);
    tc = fut_test_tcase(s, "rwlock");
    tcase_add_test(tc, rwlock_basics);
    tcase_add_test(tc, rwlock_writer_preferring);
    tcase_add_test(tc, rwlock_writer_drop_hands_on);
    tcase_add_test(tc, drop_rwlock_read);
    tcase_add_test(tc, drop_rwlock_write);
    tcase_add_test(tc, rwlock_threads);
    return fut_test_run(s);
}
