/* SPDX-License-Identifier: MIT */
/* Test wakers shared by the model programs (model_mpsc.c,
 * model_semaphore.c, model_notify.c): one refcounted 'task' per model
 * thread; a wake unparks that thread; a clone leaked or dropped twice, or
 * a waker used after its last drop, fails the run. Functions are static
 * inline so that a model includes only what it uses. Needs mc.h and the
 * model's 'L' (__FILE__, __LINE__). */
#ifndef FUT_TEST_MC_TASKS_H
#define FUT_TEST_MC_TASKS_H

#include "fut/core.h"
#include "mc.h"

struct task {
    int tid;
    int refs;
};

static const struct fut_waker_vtable task_vt;

static inline struct task *task_of(const void *data)
{
    mc_assert(mc_block_live(data), "waker used after its last drop");
    return (struct task *)data;
}

static inline void task_release(struct task *t)
{
    mc_assert(t->refs > 0, "waker dropped more often than cloned");
    if (--t->refs == 0)
        mc_free(t, L);
}

static inline struct fut_waker task_clone(const void *data)
{
    struct task *t = task_of(data);
    t->refs++;
    return (struct fut_waker){t, &task_vt};
}

static inline void task_wake(const void *data)
{
    struct task *t = task_of(data);
    mc_unpark(t->tid);
    task_release(t);
}

static inline void task_wake_by_ref(const void *data)
{
    mc_unpark(task_of(data)->tid);
}

static inline void task_drop(const void *data)
{
    task_release(task_of(data));
}

static const struct fut_waker_vtable task_vt = {task_clone, task_wake,
                                                task_wake_by_ref, task_drop};

static inline struct task *task_new(void)
{
    struct task *t = mc_alloc(sizeof *t, L);
    t->tid = mc_self();
    t->refs = 1;
    return t;
}

static inline void task_finish(struct task *t)
{
    mc_assert(t->refs == 1, "a waker clone was leaked");
    task_release(t);
}

/* One task per model thread, finished by the body after every thread was
 * joined: another thread may legitimately still hold a clone it is about
 * to wake when a future completes (waking a finished task is harmless,
 * C9), so clones are counted only at the very end. */
static struct task *tasks[MC_MAX_THREADS];

static inline struct task *my_task(void)
{
    int id = mc_self();
    if (!tasks[id])
        tasks[id] = task_new();
    return tasks[id];
}

static inline void tasks_reset(void)
{
    for (int i = 0; i < MC_MAX_THREADS; i++)
        tasks[i] = NULL;
}

static inline void tasks_finish(void)
{
    for (int i = 0; i < MC_MAX_THREADS; i++)
        if (tasks[i]) {
            task_finish(tasks[i]);
            tasks[i] = NULL;
        }
}

static inline struct fut_context task_cx(struct task *t)
{
    struct fut_context cx;
    fut_context_init(&cx, (struct fut_waker){t, &task_vt});
    return cx;
}

#endif /* FUT_TEST_MC_TASKS_H */
