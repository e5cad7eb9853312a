/* SPDX-License-Identifier: MIT */
/* Models of the FIFO semaphore (src/sync/semaphore.c, src/sync/waitq.c,
 * src/sync/mutex.c) - its permit accounting with one or two permits:
 *
 *   - exclusion and hand-off: holders of the only permit never overlap
 *     (their critical sections write plain-annotated data: an overlap, or a
 *     hand-over without happens-before, is a data race);
 *   - conservation: after everybody released, the permits are all back;
 *   - a waiter granted a permit and dropped before seeing it hands the
 *     permit on (else the next waiter sleeps for ever: deadlock);
 *   - FIFO: while a waiter is queued a try_acquire does not barge in, even
 *     in the instant a release has put permits in the word but not yet
 *     handed them to the queue;
 *   - close wakes a waiter with ECLOSED.
 *
 *   model_semaphore [--expect KIND] [--mem sc|tso] [MODEL...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fut/sync.h"
#include "mc.h"

#define L __FILE__, __LINE__

void fut__assert_fail(const char *expr, const char *file, int line)
{
    mc__assert(0, expr, "library assertion", file, line);
    abort();
}

#include "mc_tasks.h"

static void run(struct fut_future *f)
{
    struct fut_context cx = task_cx(my_task());
    while (fut_poll(f, &cx) == FUT_PENDING)
        mc_park();
}

/* Futures live in mc_alloc'd blocks, not on model-thread stacks: under
 * TSO a relaxed store to a future's state word may still sit in the store
 * buffer when its frame is gone, and the checker flushes it into the
 * reused stack at thread exit; mc_free drains the buffer first. */
#define NEW(p) mc_alloc(sizeof *(p), L)

/* --------------------------------------------------------------- shared */

static struct fut_semaphore sem;
static struct fut_mutex mtx;
static int shared; /* written by permit holders only (plain-annotated) */

static void critical_section(void)
{
    mc_plain_write(&shared, sizeof shared, L);
    shared++;
}

/* (1) two threads, one permit: acquire, critical section, release. */
static void holder(void *arg)
{
    (void)arg;
    struct fut_semaphore_acquire *a = NEW(a);
    fut_semaphore_acquire_init(a, &sem, 1);
    run(&a->base);
    mc_assert(a->result == 0, "acquire failed");
    critical_section();
    mc_assert(fut_semaphore_release(&a->permit) == 0, "release");
    fut_drop(&a->base);
    mc_free(a, L);
}

static void m_exclusion(void)
{
    tasks_reset();
    fut_semaphore_init(&sem, 1);
    shared = 0;
    mc_label(&shared, sizeof shared, "shared");
    int th = mc_spawn(holder, NULL);
    holder(NULL);
    mc_join(th);
    mc_plain_read(&shared, sizeof shared, L);
    mc_assert(shared == 2, "a critical section was lost");
    mc_assert(fut_semaphore_available(&sem) == 1, "the permit was lost");
    tasks_finish();
    fut_semaphore_fini(&sem);
}

/* (1b) the same through the mutex API (try_lock racing with the lock
 * future, and the unlock check). */
static void locker(void *arg)
{
    if (arg) {
        struct fut_mutex_guard g;
        if (fut_mutex_try_lock(&mtx, &g) == 0) {
            critical_section();
            mc_assert(fut_mutex_unlock(&g) == 0, "unlock");
            mc_assert(fut_mutex_unlock(&g) == FUT_EINVAL, "double unlock");
            return;
        }
    }
    struct fut_mutex_lock *l = NEW(l);
    fut_mutex_lock_init(l, &mtx);
    run(&l->base);
    critical_section();
    mc_assert(fut_mutex_unlock(&l->guard) == 0, "unlock");
    fut_drop(&l->base);
    mc_free(l, L);
}

static void m_mutex(void)
{
    tasks_reset();
    fut_mutex_init(&mtx);
    shared = 0;
    int th = mc_spawn(locker, (void *)1);
    locker(NULL);
    mc_join(th);
    mc_plain_read(&shared, sizeof shared, L);
    mc_assert(shared == 2 && !fut_mutex_is_locked(&mtx),
              "a critical section was lost or the lock leaked");
    tasks_finish();
    fut_mutex_fini(&mtx);
}

/* (2) no permit at first. A polls once (queues) and is dropped wherever
 * it stands - perhaps after the permit was handed to it; B waits for the
 * permit; the main thread releases one. B must get it. */
static void dropper(void *arg)
{
    (void)arg;
    struct fut_context cx = task_cx(my_task());
    struct fut_semaphore_acquire *a = NEW(a);
    fut_semaphore_acquire_init(a, &sem, 1);
    if (fut_poll(&a->base, &cx) == FUT_READY)
        fut_semaphore_release(&a->permit); /* it got it: give it back */
    fut_drop(&a->base);
    mc_free(a, L);
}

static void m_cancel_granted(void)
{
    tasks_reset();
    fut_semaphore_init(&sem, 0);
    shared = 0;
    int a = mc_spawn(dropper, NULL);
    int b = mc_spawn(holder, NULL);
    struct fut_semaphore_permit p = {&sem, 1};
    fut_semaphore_release(&p); /* one new permit */
    mc_join(a);
    mc_join(b);
    mc_assert(fut_semaphore_available(&sem) == 1, "a permit was lost");
    tasks_finish();
    fut_semaphore_fini(&sem);
}

/* (3) A queues for 2 permits; another thread releases them one at a
 * time; a third thread try_acquires 1 meanwhile and must fail: A was
 * first (FIFO), and the permits go to A even in the instant they sit in
 * the word before the releaser hands them over. */
static int barged;

static void releaser(void *arg)
{
    (void)arg;
    struct fut_semaphore_permit p = {&sem, 1}, q = {&sem, 1};
    fut_semaphore_release(&p);
    fut_semaphore_release(&q);
}

static void barger(void *arg)
{
    (void)arg;
    struct fut_semaphore_permit p;
    if (fut_semaphore_try_acquire(&sem, 1, &p) == 0) {
        barged = 1;
        fut_semaphore_release(&p);
    }
}

static void m_fifo_no_barging(void)
{
    fut_semaphore_init(&sem, 0);
    barged = 0;
    tasks_reset();
    struct fut_context cx = task_cx(my_task());
    struct fut_semaphore_acquire *a = NEW(a);
    fut_semaphore_acquire_init(a, &sem, 2);
    mc_assert(fut_poll(&a->base, &cx) == FUT_PENDING, "queued");
    int r = mc_spawn(releaser, NULL);
    int b = mc_spawn(barger, NULL);
    while (fut_poll(&a->base, &cx) == FUT_PENDING)
        mc_park();
    mc_join(r);
    mc_join(b);
    mc_assert(!barged, "a try_acquire barged past a queued waiter");
    mc_assert(a->result == 0 && a->permit.n == 2, "A's permits");
    fut_semaphore_release(&a->permit);
    fut_drop(&a->base);
    mc_free(a, L);
    mc_assert(fut_semaphore_available(&sem) == 2, "permits lost");
    tasks_finish();
    fut_semaphore_fini(&sem);
}

/* (4) close wakes a waiter, which completes with ECLOSED; a partial
 * grant is returned. */
static int close_ret;

static void waiter2(void *arg)
{
    (void)arg;
    struct fut_semaphore_acquire *a = NEW(a);
    fut_semaphore_acquire_init(a, &sem, 2);
    run(&a->base);
    close_ret = a->result;
    fut_semaphore_release(&a->permit); /* no-op if empty */
    fut_drop(&a->base);
    mc_free(a, L);
}

static void m_close(void)
{
    tasks_reset();
    fut_semaphore_init(&sem, 1);
    close_ret = 1;
    int th = mc_spawn(waiter2, NULL);
    fut_semaphore_close(&sem);
    mc_join(th);
    mc_assert(close_ret == FUT_ECLOSED, "the waiter was not closed out");
    mc_assert(fut_semaphore_available(&sem) == 1,
              "the partial grant was not returned");
    tasks_finish();
    fut_semaphore_fini(&sem);
}

/* ------------------------------------------------------------- driver */

static const struct mc_model models[] = {
    /* Bounds: exhaustive within them, chosen so each run takes about a
     * second or less; all pass unbounded too except that exclusion, mutex
     * and cancel_granted then take minutes (cancel_granted at 5: 8.7e6
     * executions, 65 s, pass; close unbounded: 6.8e5, 5 s, pass). */
    {"exclusion", m_exclusion, 5},
    {"mutex", m_mutex, 5},
    {"cancel_granted", m_cancel_granted, 3},
    {"fifo_no_barging", m_fifo_no_barging, 4},
    {"close", m_close, 8},
};

int main(int argc, char **argv)
{
    return mc_model_main("model_semaphore", models,
                         sizeof models / sizeof models[0], argc, argv);
}
