/* SPDX-License-Identifier: MIT */
/* A consumer of the installed fut: spawns a task, awaits it. */
#include <fut.h>
#include <stdio.h>

struct twice {
    struct fut_future base;
    int in, out;
};

static int twice_poll(struct fut_future *f, struct fut_context *cx)
{
    struct twice *t = (struct twice *)f;
    (void)cx;
    t->out = 2 * t->in;
    return FUT_READY;
}

static const struct fut_future_vtable twice_vt = {twice_poll, NULL, "twice",
                                                  NULL};

int main(void)
{
    struct fut_runtime *rt;
    if (fut_runtime_new(NULL, &rt) != 0)
        return 1;
    struct twice t;
    fut_future_init(&t.base, &twice_vt);
    t.in = 21;
    struct fut_join j;
    int out = 0;
    if (fut_spawn(rt, &t, sizeof t, &j) != 0)
        return 1;
    FUT_JOIN_OUTPUT(&j, struct twice, out, &out);
    fut_block_on(rt, &j.base);
    fut_drop(&j.base);
    fut_runtime_free(rt);
    printf("consumer: %d\n", out);
    return out == 42 ? 0 : 1;
}
