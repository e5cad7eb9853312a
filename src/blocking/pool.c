/* SPDX-License-Identifier: MIT */
/* The blocking pool: bounded threads, a bounded FIFO queue with
 * backpressure, idle keep-alive, and jobs that are cancelled when their
 * future is dropped before they start (io.h has the user-facing rules).
 *
 * Rules of a job's 'state' (every transition under the pool's lock; the
 * poller's fast path reads DONE with an acquire load):
 *   NEW -> QUEUED      first poll: a thread is idle or may be started,
 *                      or the queue has room
 *   NEW -> ROOM        first poll, queue full: waits for room (FIFO)
 *   ROOM -> QUEUED     a thread took a job off the queue: room for one
 *   QUEUED -> RUNNING  a thread took it
 *   RUNNING -> DONE    fn returned; 'value' written before (release)
 *   RUNNING -> DROPPED the future was dropped while fn runs: the thread
 *                      frees the job (after 'discard') when fn returns
 *   QUEUED/ROOM -> (freed)  the future was dropped: fn never runs
 *   QUEUED/ROOM -> DEAD     the pool shut down first: the future's poll
 *                      reports FUT_ESHUTDOWN, its drop frees the job
 * Ownership: the future owns the job except while RUNNING (shared; the
 * DROPPED bit says who frees) and DONE (the future frees it on READY or
 * drop). The waker slot is under the pool's lock.
 *
 * Threads are detached; the pool counts them, and fut__pool_free waits
 * on 'gone' until the count is 0. A thread never touches the pool after
 * it decremented the count.
 */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "io/io_internal.h"

enum { NEW, QUEUED, ROOM, RUNNING, DONE, DROPPED, DEAD };

struct fut__pool {
    pthread_mutex_t lock;
    pthread_cond_t work;    /* idle threads wait here */
    pthread_cond_t gone;    /* fut__pool_free waits for the last thread */
    struct fut__list queue; /* queued jobs (fut__job.link) */
    struct fut__list room;  /* jobs waiting for room */
    size_t qlen, qcap;
    int threads, idle, max_threads;
    int64_t keepalive_ns;
    int shutdown;
};

/* ---------------------------------------------------------------- lists */

static struct fut__job *job_of(struct fut__list *n)
{
    return fut__container_of(n, struct fut__job, link);
}

static void set_state(struct fut__job *j, uintptr_t s)
{
    fut__store(&j->state, s, FUT__RELAXED); /* under the pool lock */
}

static uintptr_t get_state(struct fut__job *j)
{
    return fut__load(&j->state, FUT__RELAXED);
}

static void inhibit(struct fut__job *j, int delta)
{
    if (delta > 0)
        fut__fetch_add(&j->drv->inhibit, 1, FUT__RELAXED);
    else
        fut__fetch_sub(&j->drv->inhibit, 1, FUT__RELAXED);
}

/* ------------------------------------------------------------- threads */

static void *worker(void *arg);

/* Starts a thread (pool lock held). Returns 0 or a negative errno. The
 * thread starts with every signal blocked (it inherits our mask for the
 * length of pthread_create), so signals go to the application's threads. */
static int start_thread(struct fut__pool *p)
{
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0)
        return -EAGAIN;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t tid;
    int r = pthread_create(&tid, &attr, worker, p);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (r != 0)
        return -r;
    p->threads++;
    return 0;
}

/* Waits for work up to the keep-alive; returns 0 when the thread should
 * exit. Pool lock held. */
static int wait_work(struct fut__pool *p)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t ns = ts.tv_nsec + p->keepalive_ns % 1000000000;
    ts.tv_sec += (time_t)(p->keepalive_ns / 1000000000 + ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    while (fut__list_empty(&p->queue) && !p->shutdown) {
        p->idle++;
        int r = pthread_cond_timedwait(&p->work, &p->lock, &ts);
        p->idle--;
        if (r != 0 && fut__list_empty(&p->queue))
            return 0; /* idle for the keep-alive: exit */
    }
    return !fut__list_empty(&p->queue);
}

/* Runs one job taken off the queue (pool lock held on entry and exit). */
static void run_job(struct fut__pool *p, struct fut__job *j)
{
    set_state(j, RUNNING);
    pthread_mutex_unlock(&p->lock);
    intptr_t v = j->fn(j);
    pthread_mutex_lock(&p->lock);
    struct fut_waker w = FUT_WAKER_NONE;
    int dropped = get_state(j) == DROPPED;
    struct fut__iodrv *d = j->drv;
    if (!dropped) {
        j->value = v;
        w = j->waker;
        j->waker.vt = NULL;
        /* Release: 'value' before DONE (the poller's acquire load). */
        fut__store(&j->state, DONE, FUT__RELEASE);
    }
    fut__fetch_sub(&d->inhibit, 1, FUT__RELAXED);
    pthread_mutex_unlock(&p->lock);
    if (dropped) {
        if (j->discard)
            j->discard(j, v);
        fut__free(j, j->size);
    }
    if (fut_waker_is_set(&w))
        fut_waker_wake(&w);
    pthread_mutex_lock(&p->lock);
}

static void *worker(void *arg)
{
    struct fut__pool *p = arg;
    pthread_mutex_lock(&p->lock);
    while (wait_work(p)) {
        struct fut__job *j = job_of(fut__list_front(&p->queue));
        fut__list_remove(&j->link);
        p->qlen--;
        if (!fut__list_empty(&p->room)) {
            /* Room for one more: admit the oldest waiting submitter. */
            struct fut__job *r = job_of(fut__list_front(&p->room));
            fut__list_remove(&r->link);
            fut__list_push_back(&p->queue, &r->link);
            p->qlen++;
            set_state(r, QUEUED);
        }
        run_job(p, j);
    }
    p->threads--;
    if (p->threads == 0)
        pthread_cond_broadcast(&p->gone);
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* ----------------------------------------------------------------- pool */

struct fut__pool *fut__pool_new(const struct fut_rt_config *cfg)
{
    struct fut__pool *p = fut__alloc(sizeof *p);
    if (!p)
        return NULL;
    memset(p, 0, sizeof *p);
    fut__list_init(&p->queue);
    fut__list_init(&p->room);
    if (pthread_mutex_init(&p->lock, NULL) != 0)
        goto fail;
    if (pthread_cond_init(&p->work, NULL) != 0)
        goto fail_lock;
    if (pthread_cond_init(&p->gone, NULL) != 0)
        goto fail_work;
    p->max_threads = cfg->blocking_threads > 0 ? cfg->blocking_threads : 512;
    p->qcap = cfg->blocking_queue > 0 ? (size_t)cfg->blocking_queue : 1024;
    p->keepalive_ns = cfg->blocking_keepalive_ns > 0
                          ? cfg->blocking_keepalive_ns
                          : 10 * 1000 * 1000 * 1000LL; /* Tokio's 10 s */
    return p;
fail_work:
    pthread_cond_destroy(&p->work);
fail_lock:
    pthread_mutex_destroy(&p->lock);
fail:
    fut__free(p, sizeof *p);
    return NULL;
}

/* Marks every job of a list DEAD and empties the list (pool lock held;
 * a waker drop never takes the pool's lock). */
static void orphan(struct fut__list *l)
{
    struct fut__list *n;
    while ((n = fut__list_front(l)) != NULL) {
        struct fut__job *j = job_of(n);
        fut__list_remove(n);
        set_state(j, DEAD);
        inhibit(j, -1);
        fut_waker_drop(&j->waker);
        j->pool = NULL;
    }
}

void fut__pool_free(struct fut__pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->shutdown = 1;
    orphan(&p->queue);
    orphan(&p->room);
    p->qlen = 0;
    pthread_cond_broadcast(&p->work);
    while (p->threads > 0)
        pthread_cond_wait(&p->gone, &p->lock);
    pthread_mutex_unlock(&p->lock);
    pthread_cond_destroy(&p->gone);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->lock);
    fut__free(p, sizeof *p);
}

int fut__pool_threads(struct fut__pool *p)
{
    pthread_mutex_lock(&p->lock);
    int n = p->threads;
    pthread_mutex_unlock(&p->lock);
    return n;
}

/* ----------------------------------------------------------------- jobs */

struct fut__job *fut__job_new(size_t payload, fut__job_fn fn,
                              fut__job_discard discard)
{
    size_t size = ((sizeof(struct fut__job) + 15) & ~(size_t)15) + payload;
    struct fut__job *j = fut__alloc(size);
    if (!j)
        return NULL;
    memset(j, 0, size);
    fut__list_init(&j->link);
    j->fn = fn;
    j->discard = discard;
    j->size = size;
    fut__aword_init(&j->state, NEW);
    return j;
}

/* Submits a NEW job (pool lock held). Returns 0 or a negative code. */
static int submit(struct fut__pool *p, struct fut__job *j)
{
    if (p->shutdown)
        return FUT_ESHUTDOWN;
    int busy = p->idle == 0 && p->threads >= p->max_threads;
    if (busy && p->qlen >= p->qcap) {
        fut__list_push_back(&p->room, &j->link); /* backpressure */
        set_state(j, ROOM);
        return 0;
    }
    fut__list_push_back(&p->queue, &j->link);
    p->qlen++;
    set_state(j, QUEUED);
    if (p->idle > (int)p->qlen - 1) {
        pthread_cond_signal(&p->work);
        return 0;
    }
    if (p->threads < p->max_threads) {
        int r = start_thread(p);
        if (r < 0 && p->threads == 0) {
            fut__list_remove(&j->link);
            p->qlen--;
            set_state(j, NEW);
            return r;
        }
    }
    return 0;
}

static void job_free(struct fut__job *j)
{
    fut_waker_drop(&j->waker);
    fut__free(j, j->size);
}

int fut__job_poll(struct fut__job **jp, struct fut_context *cx,
                  intptr_t *value)
{
    struct fut__job *j = *jp;
    /* Acquire: pairs with run_job's release store of DONE. */
    uintptr_t s = fut__load(&j->state, FUT__ACQUIRE);
    if (s == NEW) {
        struct fut__iodrv *d = fut__iodrv_current();
        if (!d) {
            job_free(j);
            *jp = NULL;
            return FUT_EINVAL;
        }
        struct fut__pool *p = d->pool;
        j->pool = p;
        j->drv = d;
        if (d->sim) {
            /* A simulation runs the job here, inline, at the poll its
             * seeded scheduler chose; the task sees the value at a later
             * poll (it wakes itself), after whichever polls the seed puts
             * in between. No thread, no lock: DONE at once. */
            j->value = j->fn(j);
            fut__store(&j->state, DONE, FUT__RELAXED);
            fut_waker_wake_by_ref(&cx->waker);
            return FUT_PENDING;
        }
        pthread_mutex_lock(&p->lock);
        fut__waker_store(&j->waker, fut_waker_clone(&cx->waker));
        int r = submit(p, j);
        if (r == 0)
            inhibit(j, 1);
        pthread_mutex_unlock(&p->lock);
        if (r < 0) {
            job_free(j);
            *jp = NULL;
            return r;
        }
        return FUT_PENDING;
    }
    if (s != DONE && s != DEAD) {
        struct fut__pool *p = j->pool;
        pthread_mutex_lock(&p->lock);
        s = get_state(j);
        if (s != DONE && s != DEAD)
            fut_waker_set(&j->waker, &cx->waker);
        pthread_mutex_unlock(&p->lock);
        if (s != DONE && s != DEAD)
            return FUT_PENDING; /* else: the lock ordered 'value' for us */
    }
    if (s == DEAD) {
        job_free(j);
        *jp = NULL;
        return FUT_ESHUTDOWN;
    }
    if (!fut_coop_proceed(cx))
        return FUT_PENDING;
    *value = j->value;
    return FUT_READY;
}

void fut__job_release(struct fut__job **jp)
{
    if (*jp)
        job_free(*jp);
    *jp = NULL;
}

void fut__job_drop(struct fut__job **jp)
{
    struct fut__job *j = *jp;
    if (!j)
        return;
    *jp = NULL;
    uintptr_t s = fut__load(&j->state, FUT__ACQUIRE);
    if (s == QUEUED || s == ROOM || s == RUNNING) {
        struct fut__pool *p = j->pool;
        struct fut_waker w = FUT_WAKER_NONE;
        pthread_mutex_lock(&p->lock);
        s = get_state(j);
        if (s == QUEUED) {
            fut__list_remove(&j->link);
            p->qlen--;
            inhibit(j, -1);
        } else if (s == ROOM) {
            fut__list_remove(&j->link);
            inhibit(j, -1);
        } else if (s == RUNNING) {
            set_state(j, DROPPED);
            w = j->waker;
            j->waker.vt = NULL;
        }
        pthread_mutex_unlock(&p->lock);
        if (s == RUNNING) {
            fut_waker_drop(&w);
            return; /* the thread frees it */
        }
    }
    if (s == DONE && j->discard)
        j->discard(j, j->value);
    job_free(j);
}

/* ------------------------------------------------------ spawn_blocking */

struct user_job {
    intptr_t (*fn)(void *arg);
    void *arg;
    void (*discard)(void *arg, intptr_t value);
};

static intptr_t user_run(struct fut__job *j)
{
    struct user_job *u = fut__job_payload(j);
    return u->fn(u->arg);
}

static void user_discard(struct fut__job *j, intptr_t value)
{
    struct user_job *u = fut__job_payload(j);
    if (u->discard)
        u->discard(u->arg, value);
}

static int blocking_poll(struct fut_future *fb, struct fut_context *cx)
{
    struct fut_blocking *f = (struct fut_blocking *)fb;
    if (!f->job) {
        struct fut__job *j =
            fut__job_new(sizeof(struct user_job), user_run, user_discard);
        if (!j) {
            f->result = FUT_ENOMEM;
            return FUT_READY;
        }
        struct user_job *u = fut__job_payload(j);
        u->fn = f->fn;
        u->arg = f->arg;
        u->discard = f->discard;
        f->job = j;
    }
    struct fut__job *j = f->job;
    int r = fut__job_poll(&j, cx, &f->value);
    if (r == FUT_READY)
        fut__job_release(&j);
    f->job = j;
    if (r == FUT_PENDING)
        return FUT_PENDING;
    f->result = r == FUT_READY ? 0 : r;
    return FUT_READY;
}

static void blocking_drop(struct fut_future *fb)
{
    struct fut_blocking *f = (struct fut_blocking *)fb;
    struct fut__job *j = f->job;
    fut__job_drop(&j);
    f->job = NULL;
}

static const struct fut_future_vtable blocking_vt = {
    blocking_poll, blocking_drop, "spawn_blocking", NULL};

void fut_spawn_blocking_init(struct fut_blocking *f,
                             intptr_t (*fn)(void *arg), void *arg)
{
    FUT_ARG_VOID(f, "'f' is NULL");
    FUT_ARG_VOID(fn, "'fn' is NULL");
    fut_future_init(&f->base, &blocking_vt);
    f->fn = fn;
    f->arg = arg;
    f->discard = NULL;
    f->job = NULL;
    f->result = 0;
    f->value = 0;
}

void fut_blocking_set_discard(struct fut_blocking *f,
                              void (*discard)(void *arg, intptr_t value))
{
    FUT_ARG_VOID(f, "'f' is NULL");
    f->discard = discard;
}
