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

/* Test wakers (as model_cell.c): a refcounted task; wake = unpark. */
struct task {
    int tid;
    int refs;
};

static const struct fut_waker_vtable task_vt;

static struct task *task_of(const void *data)
{
    mc_assert(mc_block_live(data), "waker used after its last drop");
    return (struct task *)data;
}

static void task_release(struct task *t)
{
    mc_assert(t->refs > 0, "waker dropped more often than cloned");
    if (--t->refs == 0)
        mc_free(t, L);
}

static struct fut_waker task_clone(const void *data)
{
    struct task *t = task_of(data);
    t->refs++;
    return (struct fut_waker){t, &task_vt};
}

static void task_wake(const void *data)
{
    struct task *t = task_of(data);
    mc_unpark(t->tid);
    task_release(t);
}

static void task_wake_by_ref(const void *data)
{
    mc_unpark(task_of(data)->tid);
}

static void task_drop(const void *data)
{
    task_release(task_of(data));
}

static const struct fut_waker_vtable task_vt = {task_clone, task_wake,
                                                task_wake_by_ref, task_drop};

/* One task per model thread, finished after every thread was joined (see
 * model_mpsc.c). */
static struct task *tasks[MC_MAX_THREADS];

static struct fut_context my_cx(void)
{
    int id = mc_self();
    if (!tasks[id]) {
        tasks[id] = mc_alloc(sizeof *tasks[id], L);
        tasks[id]->tid = id;
        tasks[id]->refs = 1;
    }
    struct fut_context cx;
    fut_context_init(&cx, (struct fut_waker){tasks[id], &task_vt});
    return cx;
}

static void tasks_finish(void)
{
    for (int i = 0; i < MC_MAX_THREADS; i++)
        if (tasks[i]) {
            mc_assert(tasks[i]->refs == 1, "a waker clone was leaked");
            task_release(tasks[i]);
            tasks[i] = NULL;
        }
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
