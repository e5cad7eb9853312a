/* SPDX-License-Identifier: MIT */
/* Models of Notify (src/sync/notify.c): no notification is lost.
 *
 *   - notify_one racing with a fut_notified's first poll: whether the
 *     permit is stored first or the future queues first, the future
 *     completes (a lost permit leaves it parked: deadlock). This is the
 *     race the thread stress test found (a blind store of WAITING erased
 *     a permit stored by notify_one's lock-free path); the seeded bug
 *     NOTIFY_BLIND_WAITING brings it back;
 *   - a future chosen by notify_one and dropped before it looked forwards
 *     the notification to the next waiter.
 *
 *   model_notify [--expect KIND] [--mem sc|tso] [MODEL...]
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

static struct fut_context my_cx(void)
{
    return task_cx(my_task());
}

/* Futures in mc_alloc'd blocks, not on model stacks (see model_mpsc.c). */
#define NEW(p) mc_alloc(sizeof *(p), L)

static struct fut_notify nt;

static void wait_once(void)
{
    struct fut_notified *f = NEW(f);
    fut_notified_init(f, &nt);
    struct fut_context cx = my_cx();
    while (fut_poll(&f->base, &cx) == FUT_PENDING)
        mc_park();
    fut_drop(&f->base);
    mc_free(f, L);
}

static void notifier(void *arg)
{
    (void)arg;
    fut_notify_one(&nt);
}

/* (1) notify_one || the first poll of a fut_notified. */
static void m_one_vs_wait(void)
{
    for (int i = 0; i < MC_MAX_THREADS; i++)
        tasks[i] = NULL;
    fut_notify_init(&nt);
    int th = mc_spawn(notifier, NULL);
    wait_once();
    mc_join(th);
    tasks_finish();
    fut_notify_fini(&nt);
}

/* (2) A polls once and is dropped wherever it stands; B waits; the main
 * thread notifies once after A queued. B must complete: if the
 * notification went to A, A's drop forwards it. */
static void dropped_waiter(void *arg)
{
    (void)arg;
    struct fut_notified *f = NEW(f);
    fut_notified_init(f, &nt);
    struct fut_context cx = my_cx();
    int r = fut_poll(&f->base, &cx);
    fut_drop(&f->base);
    mc_free(f, L);
    if (r == FUT_READY)
        fut_notify_one(&nt); /* it took the notification: give it back */
}

static void waiter(void *arg)
{
    (void)arg;
    wait_once();
}

static void m_drop_forwards(void)
{
    for (int i = 0; i < MC_MAX_THREADS; i++)
        tasks[i] = NULL;
    fut_notify_init(&nt);
    int a = mc_spawn(dropped_waiter, NULL);
    int b = mc_spawn(waiter, NULL);
    fut_notify_one(&nt);
    mc_join(a);
    mc_join(b);
    tasks_finish();
    fut_notify_fini(&nt);
}

static const struct mc_model models[] = {
    {"one_vs_wait", m_one_vs_wait, -1},
    {"drop_forwards", m_drop_forwards, 3},
};

int main(int argc, char **argv)
{
    return mc_model_main("model_notify", models,
                         sizeof models / sizeof models[0], argc, argv);
}
